package backend

import (
	"errors"
	"flag"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/hybrank/hybrank/server"
)

// RegisterFlags binds cmd/serve's command line to c's fields. Each flag
// defaults to the field's current value, so register after loading a
// config file; flags that set both batchers (batch-*, batching) or the
// model pool and both batchers' workers (pool) touch only what they set
// when given. The first --api-key replaces c's keys, later ones add; so
// does --rerank with the rerankers (Server.RerankModels).
func (c *Config) RegisterFlags(fs *flag.FlagSet) {
	s := &c.Server
	fs.StringVar(&s.Addr, "addr", s.Addr, "listen address")
	fs.StringVar(&c.RerankDir, "rerank-model", c.RerankDir, "the one cross-encoder's model directory (HF ONNX layout); empty: $HYBRANK_MODELS/<profile>")
	fs.StringVar(&c.RerankProfile, "rerank-profile", c.RerankProfile, "the one cross-encoder's profile: fast, balanced (the default) or accurate")
	replacedRerank := false
	fs.Func("rerank", "cross-encoders to serve at once, NAME or NAME=DIR, comma-separated (e.g. fast,balanced,accurate); "+
		"NAME is a profile or, with DIR, any name; the first is the default unless rerank_model names another; repeatable", func(v string) error {
		if !replacedRerank {
			s.RerankModels, replacedRerank = nil, true
		}
		for item := range strings.SplitSeq(v, ",") {
			name, dir, _ := strings.Cut(strings.TrimSpace(item), "=")
			if name == "" {
				return fmt.Errorf("empty model name in %q; want NAME or NAME=DIR, comma-separated", v)
			}
			s.RerankModels = append(s.RerankModels, server.RerankerConfig{Name: name, Dir: dir})
		}
		return nil
	})
	fs.StringVar(&c.EmbedDir, "embed-model", c.EmbedDir, "bi-encoder model directory; empty: $HYBRANK_MODELS/embed")
	fs.BoolVar(&c.Embed, "embed", c.Embed, "load the embedding model (false: serve reranking only)")
	fs.StringVar(&c.Provider, "provider", c.Provider, "execution provider: auto, cpu or cuda")
	fs.IntVar(&c.Threads, "threads", c.Threads, "intra-op threads per model (0: runtime default)")
	fs.IntVar(&c.CacheMB, "cache-mb", c.CacheMB, "LRU cache of rerank scores and query embeddings, MiB per model (0: none)")
	fs.StringVar(&c.Quantize, "quantize", c.Quantize, `"int8": load both models with int8 weights (for the CPU), "fp16": as float16 models (for --provider cuda); converted once into the user cache unless the model directories already are`)
	fs.IntVar(&c.Int8ActivationBits, "int8-activation-bits", c.Int8ActivationBits, "int8 models on a CPU with AMX-INT8: per-token activation codes, 16 (0: the default) or 8 (faster, smoothed copies, a little further from float32)")
	fs.StringVar(&c.IndexDir, "index", c.IndexDir, "engine directory for /search and /documents (created if missing; snapshot written on shutdown)")
	fs.BoolVar(&c.MemoryIndex, "memory-index", c.MemoryIndex, "serve /search and /documents from an in-memory engine (lost on exit)")
	fs.IntVar(&s.MaxDocuments, "max-documents", s.MaxDocuments, "documents per rerank request")
	fs.IntVar(&s.MaxConcurrentRequests, "max-concurrent-requests", s.MaxConcurrentRequests, "requests in flight before 429")
	fs.DurationVar((*time.Duration)(&s.RequestTimeout), "request-timeout", time.Duration(s.RequestTimeout), "per-request deadline, 504 past it")
	fs.StringVar(&s.Weaviate.Prefix, "weaviate-prefix", s.Weaviate.Prefix, `path of Weaviate's text2vec-transformers and reranker-transformers protocols (give Weaviate http://HOST:PORT<prefix> as TRANSFORMERS_INFERENCE_API and RERANKER_INFERENCE_API); "" turns them off`)
	fs.BoolVar(&s.Weaviate.Public, "weaviate-public", s.Weaviate.Public, "serve the Weaviate protocols without an API key when --api-key is set (those modules send none)")
	fs.DurationVar((*time.Duration)(&s.Weaviate.RerankBudget), "weaviate-rerank-budget", time.Duration(s.Weaviate.RerankBudget), "longest a Weaviate rerank call waits for scores; past it the documents are answered in the order sent, scored -1, -2, ... (0: nine tenths of --request-timeout)")
	setAll(fs, "pool", "runtime sessions per model, also the server's concurrent model calls (default 1)", strconv.Atoi, &c.Pool, &s.Rerank.Workers, &s.Embed.Workers)
	fs.BoolFunc("batching", "merge concurrent requests into shared model calls (default true)", func(v string) (err error) {
		s.Rerank.Enabled, err = strconv.ParseBool(v)
		s.Embed.Enabled = s.Rerank.Enabled
		return err
	})
	duration := func(v string) (server.Duration, error) {
		d, err := time.ParseDuration(v)
		return server.Duration(d), err
	}
	setAll(fs, "batch-max-wait", "longest wait for a batch to fill (default 2ms)", duration, &s.Rerank.MaxWait, &s.Embed.MaxWait)
	setAll(fs, "batch-max-tokens", "token cap of one merged batch (default 16384)", strconv.Atoi, &s.Rerank.MaxTokens, &s.Embed.MaxTokens)
	setAll(fs, "batch-max-items", "item cap of one merged batch (default 64)", strconv.Atoi, &s.Rerank.MaxItems, &s.Embed.MaxItems)
	replaced := false
	fs.Func("api-key", "KEY=TENANT, split at the last = (a key may end in base64's = padding); repeatable; turns bearer authentication on", func(v string) error {
		i := strings.LastIndex(v, "=")
		if i < 0 {
			return errors.New("want KEY=TENANT")
		}
		key, tenant := v[:i], v[i+1:]
		if !replaced {
			s.APIKeys, replaced = nil, true
		}
		s.APIKeys = append(s.APIKeys, server.APIKey{Key: key, Tenant: tenant})
		return nil
	})
}

// setAll registers a flag that parses its value once and sets every field
// given to it.
func setAll[T any](fs *flag.FlagSet, name, usage string, parse func(string) (T, error), fields ...*T) {
	fs.Func(name, usage, func(v string) error {
		x, err := parse(v)
		if err != nil {
			return err
		}
		for _, f := range fields {
			*f = x
		}
		return nil
	})
}
