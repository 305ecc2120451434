"""Hugging Face transformers' BertForSequenceClassification with the weights
of a hybrank cross-encoder directory's ONNX file: what the PyTorch peers
(torch_rerank.py, weaviate_inference.py) run, so that they score with
exactly the model hybrank runs.

The ONNX file's initializers carry the Hugging Face parameter names of a
hybrank bertgen model (generated or imported), dense weights stored
[in, out] as MatMul operands, so every 2-D weight outside the embeddings is
transposed into torch's [out, in]. A name or shape that does not match
stops the script. The Go runner writes this file beside the script it
runs."""
import json
import os

import numpy as np
import onnx
import torch
from onnx import numpy_helper
from transformers import BertConfig, BertForSequenceClassification

from rerank_common import model_path


def hf_config(d):
    """The directory's config.json as a dict, without hybrank's own keys
    (hybrank_note and the like), which transformers would keep."""
    with open(os.path.join(d, "config.json"), encoding="utf-8") as f:
        raw = json.load(f)
    return {k: v for k, v in raw.items() if not k.startswith("hybrank")}


def load_cross_encoder(d, dtype=torch.float32, device="cpu"):
    """BertForSequenceClassification (one label, SDPA attention) of the
    directory's config.json with the ONNX file's weights, in eval mode on
    device in dtype."""
    cfg = BertConfig(**hf_config(d))
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
        state[key] = torch.from_numpy(np.array(arr))  # a writable copy: to_array may hand out a read-only view
    missing, unexpected = model.load_state_dict(state, strict=False)
    missing = [m for m in missing if not (m.endswith("position_ids") or m.endswith("token_type_ids"))]
    if missing or unexpected:
        raise SystemExit(f"{d}: weights missing {missing}, unexpected {unexpected}")
    return model.to(device=device, dtype=dtype).eval()
