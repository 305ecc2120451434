"""faiss HNSW on the same vectors as hybrank's dense driver.

Reads base and query vectors (raw little-endian float32, row-major, the
dimension given), builds faiss.IndexHNSWFlat with inner-product metric (the
vectors are L2-normalised, so this is cosine, as hybrank's dense index) and
the given M and efConstruction on one thread, then for every efSearch
searches all queries (one thread) and writes their top-k ids (int64 LE,
row-major) to OUT.ef<ef>.i64. Timings go to stdout as one JSON object.

Recall is not computed here: the Go driver compares the ids with its exact
neighbours, the same ground truth as for hybrank's HNSW.
"""
import argparse
import json
import sys
import time

import faiss
import numpy as np


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--base", required=True)
    ap.add_argument("--queries", required=True)
    ap.add_argument("--dim", type=int, required=True)
    ap.add_argument("--out", required=True, help="prefix of the id files")
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--m", type=int, default=16)
    ap.add_argument("--ef-construction", type=int, default=200)
    ap.add_argument("--ef", default="16,32,64,128")
    ap.add_argument("--rounds", type=int, default=3, help="timed search rounds per ef; the best is reported")
    args = ap.parse_args()
    faiss.omp_set_num_threads(1)

    base = np.fromfile(args.base, dtype="<f4").reshape(-1, args.dim)
    queries = np.fromfile(args.queries, dtype="<f4").reshape(-1, args.dim)
    index = faiss.IndexHNSWFlat(args.dim, args.m, faiss.METRIC_INNER_PRODUCT)
    index.hnsw.efConstruction = args.ef_construction
    t0 = time.perf_counter()
    index.add(base)
    build_s = time.perf_counter() - t0

    rows = []
    for ef in [int(x) for x in args.ef.split(",") if x]:
        index.hnsw.efSearch = ef
        best = None
        for _ in range(args.rounds):
            t0 = time.perf_counter()
            _, ids = index.search(queries, args.k)
            dt = time.perf_counter() - t0
            best = dt if best is None or dt < best else best
        path = f"{args.out}.ef{ef}.i64"
        ids.astype("<i8").tofile(path)
        rows.append({"ef": ef, "search_s": best, "qps": len(queries) / best, "ids": path})
    json.dump({
        "peer": "faiss", "version": faiss.__version__, "index": "IndexHNSWFlat", "metric": "inner_product",
        "m": args.m, "ef_construction": args.ef_construction, "k": args.k,
        "n": int(base.shape[0]), "queries": int(queries.shape[0]), "dim": args.dim,
        "build_s": build_s, "threads": 1, "rows": rows,
    }, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
