"""Weaviate's reference inference containers, reproduced: the HTTP service
of its text2vec-transformers image (t2v-transformers-models) and of its
reranker-transformers image, in one FastAPI app under uvicorn, with the
same libraries (PyTorch, sentence-transformers, transformers) and the same
calls, so that bench cluster can put it in place of a hybrank sidecar (same
port, same path prefix) and compare requests per second and vectors.

Routes, under --prefix (e.g. /weaviate, given to Weaviate as
TRANSFORMERS_INFERENCE_API and RERANKER_INFERENCE_API):
  GET  /.well-known/live, /.well-known/ready  204 (uvicorn accepts
       connections only once the models are loaded)
  GET  /meta      {"model": <embedder config>, "model_path": DIR} as the
       t2v image answers; with a cross-encoder also "reranker": {"model":
       <its config>} (the reranker image answers {"model": <config>}; one
       process answers one /meta for both modules)
  POST /vectors, /vectors/  {"text", "config": {"pooling_strategy",
       "task_type", "dimensions"}} -> {"text", "vector", "dim"}
  POST /rerank    {"query", "documents"} -> {"query", "scores":
       [{"document", "score"}] in input order, "property": null, "score":
       null}; {"query", "property"} -> {"query", "property", "score",
       "scores": null}
Errors are the images' own: 500 {"error": "..."}; a body that does not
validate is FastAPI's 422 {"detail": [...]}.

What the images do, and so this app:
- Vectors, --vectorizer sentence-transformers (the image's
  SentenceTransformerVectorizer, USE_SENTENCE_TRANSFORMERS_VECTORIZER):
  SentenceTransformer(dir) with the pooling and normalisation its modules
  declare; task_type "query" calls encode_query, anything else
  encode_document, one text per call, normalize_embeddings=True,
  truncate_dim=config.dimensions. --query-passage-prefixes
  (USE_QUERY_PASSAGE_PREFIXES) prepends "<task_type>: " to the text.
  pooling_strategy is not read on this path (the model's own pooling).
- Vectors, --vectorizer transformers (the image's HuggingFaceVectorizer
  with T2V_TRANSFORMERS_DIRECT_TOKENIZE=true): AutoModel and AutoTokenizer,
  truncation at 500 tokens, pooling_strategy "masked_mean" (the default)
  or "cls", no normalisation, dimensions ignored. The image built for
  sentence-transformers/all-MiniLM-L6-v2 takes this path, without direct
  tokenisation: it splits the text into sentences with nltk's punkt model
  and averages the sentences' vectors; punkt is downloaded from nltk's own
  server, not a package registry, so that mode is not reproduced here (a
  second image of that model runs a dynamically quantized ONNX export).
- No response cache (the image's ENABLE_CACHE is off by default) and no
  bearer tokens (AUTHENTICATION_ALLOWED_TOKENS, unset by default). --threads
  sets torch's intra-op threads, which the images leave at torch's default
  (one per core).
- Each /vectors call runs on a thread pool (ThreadPoolExecutor() as in the
  image: concurrent requests run concurrently); each /rerank call holds one
  lock, so reranking is one request at a time, as in the image.
- Rerank: sentence-transformers' CrossEncoder(dir).predict of the (query,
  document) pairs. The image ships cross-encoder/ms-marco-MiniLM-L-6-v2,
  whose config.json sets sbert_ce_default_activation_function to Identity:
  it answers raw logits. No real cross-encoder weights are reachable here,
  so --rerank-dir is a hybrank model directory (e.g. a generated profile):
  bert_weights.py loads its ONNX file's weights into
  BertForSequenceClassification, which is saved with its tokenizer and
  that config key (--activation identity, the default; sigmoid leaves it
  out, CrossEncoder's default for one label) into a temporary folder and
  loaded from there by CrossEncoder, the image's own call.

Models load from local folders only (HF_HUB_OFFLINE). Once both are loaded
and the socket is bound, one JSON line goes to stdout: {"listening": URL,
"port": P, versions...}; --port 0 picks a free port.
"""
import argparse
import asyncio
import json
import os
import shutil
import socket
import sys
import tempfile
import threading
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from typing import Optional

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import torch  # noqa: E402
import uvicorn  # noqa: E402
from fastapi import APIRouter, FastAPI, Response, status  # noqa: E402
from pydantic import BaseModel  # noqa: E402

# The images' limit for the transformers path (HuggingFaceVectorizer.tokenize).
TRANSFORMERS_MAX_LENGTH = 500
DEFAULT_POOL_METHOD = "masked_mean"
IDENTITY = "torch.nn.modules.linear.Identity"


class VectorInputConfig(BaseModel):
    pooling_strategy: Optional[str] = None
    task_type: Optional[str] = None
    dimensions: Optional[int] = None


class VectorInput(BaseModel):
    text: str
    config: Optional[VectorInputConfig] = None


class CrossEncoderInput(BaseModel):
    query: str
    property: Optional[str] = None
    documents: Optional[list[str]] = None


class DocumentScore(BaseModel):
    document: str
    score: float


class CrossEncoderResponse(BaseModel):
    query: str
    scores: Optional[list[DocumentScore]] = None
    property: Optional[str] = None
    score: Optional[float] = None


class STVectorizer:
    """The image's SentenceTransformerVectorizer (one device, no cache)."""

    def __init__(self, d, device, prefixes):
        from sentence_transformers import SentenceTransformer

        self.model = SentenceTransformer(d, device=device, local_files_only=True)
        self.model.eval()
        self.prefixes = prefixes

    def vectorize(self, text, config):
        if self.prefixes and config is not None and config.task_type is not None:
            text = f"{config.task_type}: {text}"
        dims = config.dimensions if config is not None else None
        encode = self.model.encode_query if config is not None and config.task_type == "query" else self.model.encode_document
        return encode([text], convert_to_tensor=False, convert_to_numpy=True,
                      normalize_embeddings=True, truncate_dim=dims)[0]


class HFVectorizer:
    """The image's HuggingFaceVectorizer with direct tokenisation."""

    def __init__(self, d, device, prefixes):
        from transformers import AutoModel, AutoTokenizer

        self.device = device
        self.model = AutoModel.from_pretrained(d, local_files_only=True).to(device).eval()
        self.tokenizer = AutoTokenizer.from_pretrained(d, local_files_only=True)
        self.prefixes = prefixes

    def vectorize(self, text, config):
        if self.prefixes and config is not None and config.task_type is not None:
            text = f"{config.task_type}: {text}"
        pooling = (config.pooling_strategy if config is not None else None) or DEFAULT_POOL_METHOD
        with torch.no_grad():
            tokens = self.tokenizer(text, padding=True, truncation=True, max_length=TRANSFORMERS_MAX_LENGTH,
                                    add_special_tokens=True, return_tensors="pt").to(self.device)
            emb = self.model(**tokens)[0]
            if pooling == "cls":
                vec = emb[:, 0, :].sum(0)
            elif pooling == "masked_mean":
                mask = tokens["attention_mask"].unsqueeze(-1).expand(emb.size()).float()
                vec = (torch.sum(emb * mask, 1) / torch.clamp(mask.sum(1), min=1e-9)).sum(0)
            else:
                raise ValueError(f"invalid pooling method '{pooling}'")
        return vec.detach().float().cpu().numpy()


class Reranker:
    """The reranker image's CrossEncoderRanker over a hybrank model
    directory's weights."""

    def __init__(self, d, device, activation):
        from sentence_transformers import CrossEncoder
        from transformers import AutoTokenizer

        from bert_weights import hf_config, load_cross_encoder

        model = load_cross_encoder(d)
        if activation == "identity":
            model.config.sbert_ce_default_activation_function = IDENTITY
        tmp = tempfile.mkdtemp(prefix="hybrank-weaviate-ce-")
        try:
            model.save_pretrained(tmp)
            AutoTokenizer.from_pretrained(d, local_files_only=True).save_pretrained(tmp)
            self.model = CrossEncoder(tmp, device=device, local_files_only=True)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        self.config = hf_config(d)
        if activation == "identity":
            self.config["sbert_ce_default_activation_function"] = IDENTITY
        self.lock = threading.Lock()

    def _rerank(self, item):
        with self.lock:
            if item.documents is not None:
                scores = self.model.predict([[item.query, doc] for doc in item.documents], show_progress_bar=False)
                return CrossEncoderResponse(query=item.query, scores=[
                    DocumentScore(document=doc, score=float(s)) for doc, s in zip(item.documents, scores)])
            score = self.model.predict([item.query, item.property or ""], show_progress_bar=False)
            return CrossEncoderResponse(query=item.query, property=item.property, score=float(score))


def build_app(args, sock):
    state = {}
    executor = ThreadPoolExecutor()

    @asynccontextmanager
    async def lifespan(app):
        device = args.device
        if args.embed_dir:
            cls = STVectorizer if args.vectorizer == "sentence-transformers" else HFVectorizer
            state["vec"] = cls(args.embed_dir, device, args.query_passage_prefixes)
            with open(os.path.join(args.embed_dir, "config.json"), encoding="utf-8") as f:
                cfg = json.load(f)
            # The t2v image's Meta: the model name and type it downloaded
            # (sentence-transformers path) or the AutoConfig (transformers).
            model_meta = cfg if args.vectorizer == "transformers" else {
                "model_name": os.path.abspath(args.embed_dir), "model_type": cfg.get("model_type")}
            state["meta"] = {"model": model_meta, "model_path": os.path.abspath(args.embed_dir)}
        if args.rerank_dir:
            state["rerank"] = Reranker(args.rerank_dir, device, args.activation)
            state.setdefault("meta", {})["reranker"] = {"model": state["rerank"].config}
        port = sock.getsockname()[1]
        import fastapi
        import sentence_transformers
        import transformers
        print(json.dumps({
            "listening": f"http://{args.host}:{port}{args.prefix}", "port": port, "prefix": args.prefix,
            "vectorizer": args.vectorizer if args.embed_dir else "", "activation": args.activation if args.rerank_dir else "",
            "threads": torch.get_num_threads(), "device": device,
            "torch": torch.__version__, "sentence_transformers": sentence_transformers.__version__,
            "transformers": transformers.__version__, "fastapi": fastapi.__version__, "uvicorn": uvicorn.__version__,
        }), flush=True)
        yield
        executor.shutdown(wait=False, cancel_futures=True)

    # Weaviate's module clients send their JSON bodies without a
    # Content-Type. The images' FastAPI (0.116, 0.112) parsed such a body as
    # JSON; FastAPI's strict_content_type (on by default in later releases)
    # would answer 422 to every one of them.
    app = FastAPI(lifespan=lifespan, strict_content_type=False)
    r = APIRouter()

    @r.get("/.well-known/live", response_class=Response)
    @r.get("/.well-known/ready", response_class=Response)
    async def live_and_ready(response: Response):
        response.status_code = status.HTTP_204_NO_CONTENT

    @r.get("/meta")
    def meta():
        return state.get("meta", {})

    @r.post("/vectors")
    @r.post("/vectors/")
    async def vectorize(item: VectorInput, response: Response):
        vec = state.get("vec")
        if vec is None:
            response.status_code = status.HTTP_500_INTERNAL_SERVER_ERROR
            return {"error": "no embedding model loaded (--embed-dir)"}
        try:
            v = await asyncio.wrap_future(executor.submit(vec.vectorize, item.text, item.config))
            return {"text": item.text, "vector": v.tolist(), "dim": len(v)}
        except Exception as e:  # the image answers every failure this way
            response.status_code = status.HTTP_500_INTERNAL_SERVER_ERROR
            return {"error": str(e)}

    @r.post("/rerank")
    async def rerank(item: CrossEncoderInput, response: Response):
        rr = state.get("rerank")
        if rr is None:
            response.status_code = status.HTTP_500_INTERNAL_SERVER_ERROR
            return {"error": "no cross-encoder loaded (--rerank-dir)"}
        try:
            return await asyncio.wrap_future(executor.submit(rr._rerank, item))
        except Exception as e:
            response.status_code = status.HTTP_500_INTERNAL_SERVER_ERROR
            return {"error": str(e)}

    app.include_router(r, prefix=args.prefix)
    return app


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=0, help="0: a free port (printed)")
    ap.add_argument("--prefix", default="", help="path prefix of every route, e.g. /weaviate")
    ap.add_argument("--embed-dir", default="", help="sentence-transformers model directory")
    ap.add_argument("--rerank-dir", default="", help="hybrank cross-encoder directory (ONNX weights)")
    ap.add_argument("--threads", type=int, default=0, help="torch intra-op threads (0: torch's default)")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--vectorizer", default="sentence-transformers", choices=["sentence-transformers", "transformers"])
    ap.add_argument("--query-passage-prefixes", action="store_true")
    ap.add_argument("--activation", default="identity", choices=["identity", "sigmoid"])
    args = ap.parse_args()
    if not args.embed_dir and not args.rerank_dir:
        ap.error("give --embed-dir, --rerank-dir or both")
    if args.prefix and (not args.prefix.startswith("/") or args.prefix.endswith("/")):
        ap.error(f"--prefix {args.prefix!r}: want a path like /weaviate (leading slash, no trailing one)")
    for d in (args.embed_dir, args.rerank_dir):
        if d and not os.path.isfile(os.path.join(d, "config.json")):
            ap.error(f"{d}: no config.json (not a model directory)")
    if args.threads > 0:
        torch.set_num_threads(args.threads)

    # Bound before the models load, so the port is taken; uvicorn listens
    # on it once the lifespan (the loading) is done.
    sock = socket.socket(socket.AF_INET6 if ":" in args.host else socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((args.host, args.port))
    except OSError as e:
        sys.exit(f"bind {args.host}:{args.port}: {e}")
    app = build_app(args, sock)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False, timeout_graceful_shutdown=5))
    server.run(sockets=[sock])


if __name__ == "__main__":
    main()
