"""What the cross-encoder peer scripts (ort_rerank.py, torch_rerank.py)
share: the model file, the pairs, the tokenizer set up as hybrank's rerank
driver compares against, and the timed passes over every pair per batch
size. The Go runner writes it beside the script it runs."""
import argparse
import json
import os
import time

import numpy as np
from tokenizers import Tokenizer


def arguments(description):
    """The command line both scripts take (torch_rerank.py adds its own)."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--model", required=True, help="model directory")
    ap.add_argument("--pairs", required=True, help="JSONL of {query, doc}")
    ap.add_argument("--out", required=True, help="prefix of the score files")
    ap.add_argument("--batch", default="16,32")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--max-length", type=int, default=512)
    ap.add_argument("--rounds", type=int, default=2)
    return ap


def model_path(d):
    for p in (os.path.join(d, "onnx", "model.onnx"), os.path.join(d, "model.onnx")):
        if os.path.exists(p):
            return p
    raise SystemExit(f"no onnx/model.onnx or model.onnx in {d}")


def read_pairs(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def tokenizer(model_dir, max_length):
    """The directory's tokenizer.json: pairs cut longest_first to max_length,
    a batch padded to its longest."""
    tok = Tokenizer.from_file(os.path.join(model_dir, "tokenizer.json"))
    tok.enable_truncation(max_length=max_length, strategy="longest_first")
    tok.enable_padding(pad_id=tok.token_to_id("[PAD]") or 0, pad_token="[PAD]")
    return tok


def timed_batches(pairs, batches, rounds, score, out):
    """For each batch size, scores every pair in input order with score(batch)
    -> (scores, padded tokens, real tokens), rounds times; keeps the fastest
    pass, writes its scores (float32 LE) to OUT.b<size>.f32 and returns one
    row per size."""
    rows = []
    for bs in batches:
        best, scores, padded, real = None, None, 0, 0
        for _ in range(rounds):
            t0 = time.perf_counter()
            got, padded, real = [], 0, 0
            for i in range(0, len(pairs), bs):
                s, p, r = score(pairs[i : i + bs])
                got.append(s)
                padded += p
                real += r
            dt = time.perf_counter() - t0
            if best is None or dt < best:
                best, scores = dt, np.concatenate(got)
        path = f"{out}.b{bs}.f32"
        scores.astype("<f4").tofile(path)
        rows.append({"batch": bs, "seconds": best, "pairs_per_s": len(pairs) / best,
                     "tokens": real, "padded_tokens": padded, "scores": path})
    return rows
