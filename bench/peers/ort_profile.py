"""Per-operator time of one ONNX model in ONNX Runtime's CPU provider.

A diagnostic, run by hand (no Go driver calls it): it feeds a batch of
random token ids (B sequences of S tokens, no padding), runs it twice to
warm up and --runs times with ONNX Runtime's profiler on, and prints the
wall time per timed run and each operator type's kernel time per timed
run (warm-up runs left out), largest first. Graph optimisation "all" and the thread counts hybrank uses.

  PYTHONPATH=.deps/peers python3 bench/peers/ort_profile.py \\
      ~/.cache/hybrank/int8/balanced-*/onnx/model.onnx --batch 8 --seq 384
"""
import argparse
import collections
import json
import os
import tempfile
import time

import numpy as np
import onnxruntime as ort


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model", help="ONNX file")
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--seq", type=int, default=384)
    ap.add_argument("--threads", type=int, default=2, help="intra-op threads")
    ap.add_argument("--runs", type=int, default=4)
    ap.add_argument("--top", type=int, default=12, help="operator types to print")
    a = ap.parse_args()

    so = ort.SessionOptions()
    so.intra_op_num_threads, so.inter_op_num_threads = a.threads, 1
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    so.enable_profiling = True
    so.profile_file_prefix = os.path.join(tempfile.mkdtemp(), "ort")
    s = ort.InferenceSession(a.model, so, providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(0)
    feed = {
        "input_ids": rng.integers(1000, 20000, (a.batch, a.seq)).astype(np.int64),
        "attention_mask": np.ones((a.batch, a.seq), np.int64),
    }
    if any(i.name == "token_type_ids" for i in s.get_inputs()):
        feed["token_type_ids"] = np.zeros((a.batch, a.seq), np.int64)
    warm = 2
    for _ in range(warm):
        s.run(None, feed)
    t = time.perf_counter()
    for _ in range(a.runs):
        s.run(None, feed)
    wall = (time.perf_counter() - t) / a.runs
    path = s.end_profiling()
    with open(path) as f:
        events = json.load(f)
    os.remove(path)
    # Only the timed runs: kernels that start after the last warm-up run ends.
    runs = sorted((e["ts"], e["ts"] + e["dur"]) for e in events if e.get("cat") == "Session" and e["name"] == "model_run")
    if len(runs) != warm + a.runs:
        raise SystemExit(f"profile holds {len(runs)} model runs, want {warm + a.runs}")
    after = runs[warm - 1][1]
    per_op = collections.Counter()
    for e in events:
        if e.get("cat") == "Node" and e["name"].endswith("_kernel_time") and e["ts"] >= after:
            per_op[e["args"].get("op_name")] += e["dur"]  # microseconds
    n = a.runs
    total = sum(per_op.values())
    print(f"{a.model}: batch {a.batch} x {a.seq} tokens, {a.threads} threads: wall {wall * 1e3:.1f} ms per run, kernels {total / 1e3 / n:.1f} ms")
    for op, d in per_op.most_common(a.top):
        print(f"  {op:26s} {d / 1e3 / n:8.1f} ms  {100 * d / total:5.1f} %")


if __name__ == "__main__":
    main()
