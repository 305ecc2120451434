"""ONNX Runtime's Python package with Hugging Face tokenizers, scoring the
same (query, document) pairs with the same ONNX file as hybrank's rerank
driver — the way sentence-transformers' ONNX backend runs a CrossEncoder:
pairs in input order, batches of a fixed size padded to their longest pair,
longest_first truncation to max_length.

Reads a JSONL file of {"query": ..., "doc": ...} and a model directory
(tokenizer.json, onnx/model.onnx or model.onnx). For every batch size,
scores all pairs (best of --rounds) on a session with the given intra-op
threads and writes the logits (float32 LE) to OUT.b<size>.f32. Timings go to
stdout as one JSON object; tokenization is inside the timing, as in hybrank.
"""
import json
import sys

import numpy as np
import onnxruntime as ort

from rerank_common import arguments, model_path, read_pairs, timed_batches, tokenizer


def main():
    ap = arguments(__doc__)
    args = ap.parse_args()

    pairs = read_pairs(args.pairs)
    tok = tokenizer(args.model, args.max_length)

    so = ort.SessionOptions()
    so.intra_op_num_threads = args.threads
    so.inter_op_num_threads = 1
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    sess = ort.InferenceSession(model_path(args.model), so, providers=["CPUExecutionProvider"])
    names = {i.name for i in sess.get_inputs()}

    def score(batch):
        enc = tok.encode_batch([(p["query"], p["doc"]) for p in batch])
        feed = {
            "input_ids": np.array([e.ids for e in enc], dtype=np.int64),
            "attention_mask": np.array([e.attention_mask for e in enc], dtype=np.int64),
        }
        if "token_type_ids" in names:
            feed["token_type_ids"] = np.array([e.type_ids for e in enc], dtype=np.int64)
        out = sess.run(None, feed)[0]
        return out.reshape(len(batch), -1)[:, 0], int(feed["input_ids"].size), sum(sum(e.attention_mask) for e in enc)

    score(pairs[: min(8, len(pairs))])  # warm-up: session init, arena
    rows = timed_batches(pairs, [int(x) for x in args.batch.split(",") if x], args.rounds, score, args.out)
    json.dump({
        "peer": "onnxruntime-python", "version": ort.__version__, "threads": args.threads,
        "pairs": len(pairs), "max_length": args.max_length, "rows": rows,
    }, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
