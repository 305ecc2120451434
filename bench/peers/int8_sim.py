"""What finer int8 activation scales would buy: a numpy simulation.

A diagnostic, run by hand (no Go driver calls it). It runs a BERT
checkpoint's encoder (model.safetensors, the layout bertgen imports) under a
seeded random cross-encoder head (a pooler and a one-logit classifier drawn
N(0, 0.02²), as bench models --random-head does, though not the same draw),
in float32 numpy, on the BM25 top-k candidates (bm25s) of a BEIR dataset's
first judged queries, and again with every encoder dense layer computed
from quantized operands in one of these modes:

  tensor/B   activations per tensor (asymmetric uint8, range widened to
             include 0: what ONNX Runtime's DynamicQuantizeMatMul does; here
             the tensor is one sequence, while hybrank's batches hold
             several, so this is a little kinder than the real kernel),
             weights per output channel, symmetric, B bits (7 or 8)
  token/B    the same with one activation scale per token (row): what a
             kernel with per-row scales would give (ONNX Runtime's CPU
             provider has none that is fast; see onnx/quantize's doc)
  none/B     weights only, activations float32
  tensor/f, token/f   activations only, weights float32
  smooth/B   per token after SmoothQuant's migration: each input channel j
             divided by s_j = amax(x_j)^a / amax(w_j)^(1-a) (a = --alpha,
             amax(x_j) over --calib-queries other queries' pairs in
             float32) and the weights' column j multiplied by it
  lnsmooth/B smooth/B with amax(x_j) estimated from the weights alone where
             a LayerNorm feeds the layer (|gamma_j|·--ln-c + |beta_j|),
             s_j = 1 elsewhere: no calibration data
  bf16       both operands rounded to bfloat16 (round to nearest even)
  M+bf16:P   mode M, but the layers of kind P (q, k, v, o: attention's
             query, key, value, output; f1, f2: the feed-forward's first and
             second products; several joined by '.') in bf16, or with
             M+fp32:P in float32: where the error of M comes from;
             M+a16:P: activations quantized per token to 16 bits (uint16)
             and M's 8-bit weights (smoothed as M smooths them),
             M+a16n:P the same with unsmoothed 8-bit weights

and prints per query the float32 score range and each mode's Spearman
correlation with float32, then each mode's worst and mean. Rounding is
simulated in float32/float64 (quantize, dequantize, multiply), not with
integer kernels: it measures the information the codes keep.

  PYTHONPATH=.deps/peers python3 bench/peers/int8_sim.py \\
      --checkpoint DIR_WITH_model.safetensors --tokenizer tokenizer.json \\
      --data ../shared/datasets/scifact --queries 10 --top-k 32 \\
      --modes tensor/7,token/7
"""

import argparse
import json
import struct

import numpy as np


def load_safetensors(path):
    raw = open(path, "rb").read()
    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8:8 + n])
    base = 8 + n
    w = {}
    for k, v in header.items():
        if k == "__metadata__" or v["dtype"] != "F32":
            continue
        a, b = v["data_offsets"]
        w[k.removeprefix("bert.")] = np.frombuffer(raw[base + a:base + b], dtype=np.float32).reshape(v["shape"])
    return w


def quant_weight(w, bits):
    """Per output channel (torch layout [out, in]) symmetric, dequantized."""
    m = 2 ** (bits - 1) - 1
    s = np.abs(w).max(axis=1, keepdims=True) / m
    s[s == 0] = 1
    return np.round(w / s) * s


def bf16(x):
    """Round float32 to bfloat16 (nearest even) and back."""
    u = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32)
    u = (u + 0x7FFF + ((u >> 16) & 1)) & 0xFFFF0000
    return u.astype(np.uint32).view(np.float32)


def quant_act(x, mode, top=255):
    """Asymmetric uint8 (uint16: top 65535) with the range widened to include 0, dequantized."""
    if mode in ("none", "fp32"):
        return x
    axis = None if mode == "tensor" else -1  # token, smooth
    lo = np.minimum(x.min(axis=axis, keepdims=True), 0)
    hi = np.maximum(x.max(axis=axis, keepdims=True), 0)
    s = (hi - lo) / top
    s[s == 0] = 1
    zp = np.round(-lo / s)
    return (np.clip(np.round(x / s) + zp, 0, top) - zp) * s


class Model:
    def __init__(self, w, layers, heads, seed=0):
        from scipy.special import erf
        self.erf = erf
        self.w, self.layers, self.heads = w, layers, heads
        self.hidden = w["embeddings.word_embeddings.weight"].shape[1]
        rng = np.random.default_rng(seed)
        h = self.hidden
        self.pooler_w = rng.normal(0, 0.02, (h, h)).astype(np.float32)
        self.pooler_b = rng.normal(0, 0.01, h).astype(np.float32)
        self.cls_w = rng.normal(0, 0.02, h).astype(np.float32)
        self.qw = {}
        self.calib = None   # name -> per input channel amax, while calibrating
        self.smooth = {}    # name -> s
        self.alpha = 0.5
        self.ln_c = 3.0

    KINDS = {"q": "attention.self.query", "k": "attention.self.key", "v": "attention.self.value",
             "o": "attention.output.dense", "f1": "intermediate.dense", "f2": "output.dense"}

    def linear(self, x, name, mode):
        w, b = self.w[name + ".weight"], self.w[name + ".bias"]
        if "+" in mode:
            mode, over = mode.split("+")
            form, kinds = over.split(":")
            if any(name.split(".", 3)[3] == self.KINDS[k] for k in kinds.split(".")):
                if form.startswith("a16"):
                    key = (name, form, mode)
                    if key not in self.qw:
                        s = self.smooth[name] if form == "a16" and mode.startswith("smooth/") else np.ones(w.shape[1], np.float32)
                        self.qw[key] = (1 / s, quant_weight(w * s, 8))
                    inv, wq = self.qw[key]
                    return quant_act(x * inv, "token", 65535) @ wq.T + b
                mode = form
        if self.calib is not None:
            a = np.abs(x).max(axis=0)
            self.calib[name] = np.maximum(self.calib.get(name, a), a)
        if mode == "bf16":
            return bf16(x) @ bf16(w).T + b
        if mode.startswith("smooth/") or mode.startswith("lnsmooth/"):
            key = (name, mode)
            if key not in self.qw:
                s = self.smooth[name] if mode.startswith("smooth/") else self.ln_smooth(name)
                self.qw[key] = (1 / s, quant_weight(w * s, int(mode.split("/")[1])))
            inv, wq = self.qw[key]
            return quant_act(x * inv, "token") @ wq.T + b
        if mode != "fp32":
            act, bits = mode.split("/")
            if bits != "f":
                key = (name, bits)
                if key not in self.qw:
                    self.qw[key] = quant_weight(w, int(bits))
                w = self.qw[key]
            x = quant_act(x, act)
        return x @ w.T + b

    def ln_smooth(self, name):
        """s from the feeding LayerNorm's gamma and beta (1 where none feeds)."""
        w = self.w[name + ".weight"]
        l = int(name.split(".")[2])
        if ".attention.self." in name:
            ln = "embeddings.LayerNorm" if l == 0 else f"encoder.layer.{l - 1}.output.LayerNorm"
        elif name.endswith("intermediate.dense"):
            ln = f"encoder.layer.{l}.attention.output.LayerNorm"
        else:
            return np.ones(w.shape[1], dtype=np.float32)
        amax = np.abs(self.w[ln + ".weight"]) * self.ln_c + np.abs(self.w[ln + ".bias"])
        wmax = np.abs(w).max(axis=0)
        return np.maximum(amax, 1e-5) ** self.alpha / np.maximum(wmax, 1e-5) ** (1 - self.alpha)

    @staticmethod
    def layer_norm(x, g, b, eps=1e-12):
        m = x.mean(-1, keepdims=True)
        v = ((x - m) ** 2).mean(-1, keepdims=True)
        return (x - m) / np.sqrt(v + eps) * g + b

    def score(self, ids, types, mode):
        w, s, h, nh = self.w, len(ids), self.hidden, self.heads
        dh = h // nh
        x = w["embeddings.word_embeddings.weight"][ids] + w["embeddings.position_embeddings.weight"][:s] + \
            w["embeddings.token_type_embeddings.weight"][types]
        x = self.layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"])
        for l in range(self.layers):
            p = f"encoder.layer.{l}."

            def heads(name):
                return self.linear(x, p + "attention.self." + name, mode).reshape(s, nh, dh).transpose(1, 0, 2)
            q, k, v = heads("query"), heads("key"), heads("value")
            a = q @ k.transpose(0, 2, 1) / np.sqrt(dh)
            a = np.exp(a - a.max(-1, keepdims=True))
            a /= a.sum(-1, keepdims=True)
            c = (a @ v).transpose(1, 0, 2).reshape(s, h)
            x = self.layer_norm(self.linear(c, p + "attention.output.dense", mode) + x,
                                w[p + "attention.output.LayerNorm.weight"], w[p + "attention.output.LayerNorm.bias"])
            f = self.linear(x, p + "intermediate.dense", mode)
            f = f * 0.5 * (1 + self.erf(f / np.sqrt(2)))
            x = self.layer_norm(self.linear(f, p + "output.dense", mode) + x,
                                w[p + "output.LayerNorm.weight"], w[p + "output.LayerNorm.bias"])
        pooled = np.tanh(x[0] @ self.pooler_w + self.pooler_b)
        return float(pooled @ self.cls_w)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--checkpoint", required=True, help="folder with model.safetensors and config.json")
    ap.add_argument("--tokenizer", required=True, help="tokenizer.json")
    ap.add_argument("--data", required=True, help="BEIR dataset folder")
    ap.add_argument("--queries", type=int, default=10)
    ap.add_argument("--top-k", type=int, default=32)
    ap.add_argument("--modes", default="tensor/7,token/7")
    ap.add_argument("--alpha", type=float, default=0.5, help="SmoothQuant migration strength")
    ap.add_argument("--ln-c", type=float, default=3.0, help="lnsmooth/B: amax_j = |gamma_j|·c + |beta_j|")
    ap.add_argument("--calib-queries", type=int, default=3, help="queries after the measured ones that calibrate smooth/B")
    args = ap.parse_args()

    import bm25s
    from scipy.stats import spearmanr
    from tokenizers import Tokenizer

    cfg = json.load(open(args.checkpoint + "/config.json"))
    model = Model(load_safetensors(args.checkpoint + "/model.safetensors"), cfg["num_hidden_layers"], cfg["num_attention_heads"])
    corpus = [json.loads(l) for l in open(args.data + "/corpus.jsonl")]
    texts = [(d.get("title", "") + " " + d["text"]).strip() for d in corpus]
    queries = {}
    for l in open(args.data + "/queries.jsonl"):
        q = json.loads(l)
        queries[q["_id"]] = q["text"]
    qids = []
    for i, l in enumerate(open(args.data + "/qrels/test.tsv")):
        q = l.split("\t")[0]
        if i > 0 and q not in qids:
            qids.append(q)
    retriever = bm25s.BM25()
    retriever.index(bm25s.tokenize(texts, stopwords="en", show_progress=False), show_progress=False)
    tok = Tokenizer.from_file(args.tokenizer)
    tok.enable_truncation(512)
    modes = args.modes.split(",")
    model.alpha, model.ln_c = args.alpha, args.ln_c
    if any(m.startswith("smooth/") for m in modes):
        model.calib, model.alpha = {}, args.alpha
        for q in qids[args.queries:args.queries + args.calib_queries]:
            docs, _ = retriever.retrieve(bm25s.tokenize([queries[q]], stopwords="en", show_progress=False), k=args.top_k, show_progress=False)
            for d in docs[0]:
                e = tok.encode(queries[q], texts[d])
                model.score(np.array(e.ids), np.array(e.type_ids), "fp32")
        for name, amax in model.calib.items():
            wmax = np.abs(model.w[name + ".weight"]).max(axis=0)
            model.smooth[name] = np.maximum(amax, 1e-5) ** args.alpha / np.maximum(wmax, 1e-5) ** (1 - args.alpha)
        model.calib = None
    res = {m: [] for m in modes}
    for q in qids[:args.queries]:
        docs, _ = retriever.retrieve(bm25s.tokenize([queries[q]], stopwords="en", show_progress=False), k=args.top_k, show_progress=False)
        scores = {m: [] for m in ["fp32"] + modes}
        for d in docs[0]:
            e = tok.encode(queries[q], texts[d])
            for m in scores:
                scores[m].append(model.score(np.array(e.ids), np.array(e.type_ids), m))
        for m in modes:
            res[m].append(spearmanr(scores["fp32"], scores[m]).statistic)
        print(f"query {q}: float32 range {max(scores['fp32']) - min(scores['fp32']):.4f} " +
              " ".join(f"{m} {res[m][-1]:.4f}" for m in modes), flush=True)
    for m in modes:
        print(f"{m}: worst {min(res[m]):.4f} mean {np.mean(res[m]):.4f} over {len(res[m])} queries")


if __name__ == "__main__":
    main()
