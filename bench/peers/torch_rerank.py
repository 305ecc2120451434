"""PyTorch (Hugging Face transformers' BertForSequenceClassification with
scaled-dot-product attention) scoring the same (query, document) pairs with
the same weights as hybrank's rerank driver, the way sentence-transformers'
CrossEncoder runs on a GPU: pairs in input order, batches of a fixed size
padded to their longest pair, longest_first truncation to max_length, the
model in --dtype (float16 by default) on --device.

The weights are read from the model directory's ONNX file (bert_weights.py:
the Hugging Face parameter names of a hybrank bertgen model; a name or shape
that does not match stops the script): the peer runs exactly the model
hybrank runs.

Writes the logits (float32 LE) of each batch size to OUT.b<size>.f32 and
the timings as one JSON object on stdout, like ort_rerank.py; tokenization
is inside the timing, as in hybrank.
"""
import json
import sys

import torch

from bert_weights import load_cross_encoder
from rerank_common import arguments, read_pairs, timed_batches, tokenizer


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
    model = load_cross_encoder(args.model, dtype, device)

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
