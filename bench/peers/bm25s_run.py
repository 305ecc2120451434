"""bm25s on a BEIR dataset, for cmd/bench's lexical driver.

Reads corpus.jsonl and queries.jsonl of a BEIR folder, indexes with bm25s
(k1, b, method as given; English stopwords and the Snowball English stemmer
of PyStemmer, as bm25s's BEIR examples), retrieves the top k of every query
judged in qrels/test.tsv (the queries hybrank's driver times: a BEIR
queries.jsonl may also hold train queries) on one thread, and writes a run file (TSV: query-id, doc-id, rank, score).
Timings go to stdout as one JSON object. Query tokenization is inside the
timed retrieval, as hybrank's lexical QPS includes analysis.

Metrics are not computed here: the Go driver scores the run file with the
same evaluation code as hybrank's own run.
"""
import argparse
import json
import os
import sys
import time

import bm25s
import Stemmer


def read_jsonl(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def judged_ids(path):
    """Query ids with a judgment in a BEIR qrels TSV (header line skipped)."""
    ids = set()
    with open(path, encoding="utf-8") as f:
        for i, line in enumerate(f):
            fields = line.strip().split("\t")
            if len(fields) < 3 or (i == 0 and fields[2] == "score"):
                continue
            ids.add(fields[0].strip())
    return ids


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--data", required=True, help="BEIR dataset folder")
    ap.add_argument("--run", required=True, help="output run file (TSV)")
    ap.add_argument("--k", type=int, default=100)
    ap.add_argument("--k1", type=float, default=1.2)
    ap.add_argument("--b", type=float, default=0.75)
    ap.add_argument("--method", default="lucene")
    ap.add_argument("--delta", type=float, default=0.5, help="delta of bm25l and bm25+")
    ap.add_argument("--rounds", type=int, default=3, help="timed retrieval rounds; the best is reported")
    args = ap.parse_args()

    corpus = read_jsonl(os.path.join(args.data, "corpus.jsonl"))
    judged = judged_ids(os.path.join(args.data, "qrels", "test.tsv"))
    queries = [q for q in read_jsonl(os.path.join(args.data, "queries.jsonl")) if q["_id"] in judged]
    ids = [d["_id"] for d in corpus]
    texts = [(d.get("title", "") + " " + d.get("text", "")).strip() for d in corpus]
    stemmer = Stemmer.Stemmer("english")

    t0 = time.perf_counter()
    tokens = bm25s.tokenize(texts, stopwords="en", stemmer=stemmer, show_progress=False)
    model = bm25s.BM25(k1=args.k1, b=args.b, delta=args.delta, method=args.method)
    model.index(tokens, show_progress=False)
    index_s = time.perf_counter() - t0

    qtexts = [q["text"] for q in queries]
    k = min(args.k, len(ids))
    best = None
    for _ in range(args.rounds):
        t0 = time.perf_counter()
        qtok = bm25s.tokenize(qtexts, stopwords="en", stemmer=stemmer, show_progress=False)
        docs, scores = model.retrieve(qtok, k=k, show_progress=False, n_threads=1)
        dt = time.perf_counter() - t0
        if best is None or dt < best:
            best = dt
    with open(args.run, "w", encoding="utf-8") as f:
        for qi, q in enumerate(queries):
            for rank, (di, s) in enumerate(zip(docs[qi], scores[qi])):
                # Every bit of the float32 score (repr), so ties are the
                # index's own ties when the run is read in trec_eval order.
                f.write(f"{q['_id']}\t{ids[int(di)]}\t{rank + 1}\t{float(s)!r}\n")
    json.dump({
        "peer": "bm25s", "version": bm25s.__version__, "method": args.method,
        "k1": args.k1, "b": args.b, "delta": args.delta, "k": k, "docs": len(ids), "queries": len(queries),
        "index_s": index_s, "retrieve_s": best, "qps": len(queries) / best, "threads": 1,
    }, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
