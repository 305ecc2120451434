"""PyTorch (Hugging Face transformers' BertForSequenceClassification with
scaled-dot-product attention) scoring the same (query, document) pairs with
the same weights as hybrank's rerank driver, the way sentence-transformers'
CrossEncoder runs on a GPU: pairs in input order, batches of a fixed size
padded to their longest pair, longest_first truncation to max_length, the
model in --dtype (float16 by default) on --device.

The weights are read from the model directory's ONNX file (onnx package):
its initializers carry the Hugging Face parameter names of a hybrank
bertgen model (generated or imported), dense weights stored [in, out] as
MatMul operands, so every 2-D weight outside the embeddings is transposed
into torch's [out, in]. A name or shape that does not match stops the
script: the peer must run exactly the model hybrank runs.

Writes the logits (float32 LE) of each batch size to OUT.b<size>.f32 and
the timings as one JSON object on stdout, like ort_rerank.py; tokenization
is inside the timing, as in hybrank.
"""
import json
import os
import sys

import numpy as np
import onnx
import torch
from onnx import numpy_helper
from transformers import BertConfig, BertForSequenceClassification

from rerank_common import arguments, model_path, read_pairs, timed_batches, tokenizer


def load_model(d, dtype, device):
    with open(os.path.join(d, "config.json"), encoding="utf-8") as f:
        raw = json.load(f)
    raw = {k: v for k, v in raw.items() if not k.startswith("hybrank")}
    cfg = BertConfig(**raw)
    cfg.num_labels = 1
    try:
        model = BertForSequenceClassification._from_config(cfg, attn_implementation="sdpa")
    except TypeError:  # a transformers without the keyword
        cfg._attn_implementation = "sdpa"
        model = BertForSequenceClassification(cfg)
    inits = {t.name: t for t in onnx.load(model_path(d)).graph.initializer}
    state = {}
    for key, want in model.state_dict().items():
        name = key.removeprefix("bert.")
        if name not in inits:
            if name.endswith("position_ids") or name.endswith("token_type_ids"):
                continue  # buffers the model builds itself
            raise SystemExit(f"{d}: the ONNX file has no initializer {name!r} for {key}")
        arr = numpy_helper.to_array(inits[name])
        if arr.ndim == 2 and name.endswith(".weight") and not name.startswith("embeddings."):
            arr = arr.T
        if tuple(arr.shape) != tuple(want.shape):
            raise SystemExit(f"{d}: {name}: shape {arr.shape}, the model wants {tuple(want.shape)}")
        state[key] = torch.from_numpy(np.ascontiguousarray(arr))
    missing, unexpected = model.load_state_dict(state, strict=False)
    missing = [m for m in missing if not (m.endswith("position_ids") or m.endswith("token_type_ids"))]
    if missing or unexpected:
        raise SystemExit(f"{d}: weights missing {missing}, unexpected {unexpected}")
    return model.to(device=device, dtype=dtype).eval()


def main():
    ap = arguments(__doc__)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--dtype", default="float16", choices=["float16", "bfloat16", "float32"])
    args = ap.parse_args()

    torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    dtype = getattr(torch, args.dtype)
    pairs = read_pairs(args.pairs)
    tok = tokenizer(args.model, args.max_length)
    model = load_model(args.model, dtype, device)

    @torch.inference_mode()
    def score(batch):
        enc = tok.encode_batch([(p["query"], p["doc"]) for p in batch])
        ids = torch.tensor([e.ids for e in enc], dtype=torch.long)
        mask = torch.tensor([e.attention_mask for e in enc], dtype=torch.long)
        types = torch.tensor([e.type_ids for e in enc], dtype=torch.long)
        out = model(input_ids=ids.to(device), attention_mask=mask.to(device), token_type_ids=types.to(device)).logits
        return out.float().cpu().numpy()[:, 0], int(ids.numel()), int(mask.sum())

    batches = [int(x) for x in args.batch.split(",") if x]
    for bs in batches:  # warm-up: kernels, allocator, autotuning
        for i in range(0, min(len(pairs), 4 * bs), bs):
            score(pairs[i : i + bs])
    rows = timed_batches(pairs, batches, args.rounds, score, args.out)
    json.dump({
        "peer": "torch", "version": torch.__version__, "device": str(device), "dtype": args.dtype,
        "gpu": torch.cuda.get_device_name(device) if device.type == "cuda" else "",
        "threads": args.threads, "pairs": len(pairs), "max_length": args.max_length, "rows": rows,
    }, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
