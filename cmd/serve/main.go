// Command serve runs hybrank's HTTP inference endpoint (package server):
// Cohere/Jina/TEI rerank, TEI and OpenAI embeddings, /metrics. It parses
// flags and an optional JSON config file (flags override the file), loads
// the models and hands them to server; SIGTERM or SIGINT drains requests in
// flight and exits.
//
// Usage:
//
//	serve --rerank-model DIR [--embed-model DIR] [--config FILE] [--addr 127.0.0.1:8080]
//	      [--batching=true] [--batch-max-wait 2ms] [--batch-max-tokens 16384] [--api-key KEY=TENANT]
//	      [--provider auto|cpu|cuda] [--threads N] [--index DIR | --memory-index]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/hybrank/hybrank/engine"
	"github.com/hybrank/hybrank/models"
	"github.com/hybrank/hybrank/models/ort"
	"github.com/hybrank/hybrank/server"
)

// keyFlags collects repeated --api-key KEY=TENANT.
type keyFlags []server.APIKey

func (k *keyFlags) String() string { return fmt.Sprint(len(*k), " keys") }

func (k *keyFlags) Set(v string) error {
	key, tenant, ok := strings.Cut(v, "=")
	if !ok {
		return errors.New("want KEY=TENANT")
	}
	*k = append(*k, server.APIKey{Key: key, Tenant: tenant})
	return nil
}

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "serve:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	var (
		configPath  = fs.String("config", "", "JSON config file (server.Config); flags given explicitly override it")
		addr        = fs.String("addr", "", "listen address (default 127.0.0.1:8080)")
		rerankDir   = fs.String("rerank-model", "", "cross-encoder model directory (HF ONNX layout); empty: $HYBRANK_MODELS/<profile>")
		rerankProf  = fs.String("rerank-profile", models.ProfileBalanced, "cross-encoder profile (fast, balanced, accurate)")
		embedDir    = fs.String("embed-model", "", "bi-encoder model directory; empty with --embed=false serves no embeddings")
		embedOn     = fs.Bool("embed", true, "load the embedding model")
		provider    = fs.String("provider", "auto", "execution provider: auto, cpu or cuda")
		threads     = fs.Int("threads", 0, "intra-op threads per model (0: runtime default)")
		pool        = fs.Int("pool", 1, "runtime sessions per model (also the server's concurrent model calls when given)")
		batching    = fs.Bool("batching", true, "merge concurrent requests into shared model calls")
		maxWait     = fs.Duration("batch-max-wait", 0, "longest wait for a batch to fill (default 2ms)")
		maxTokens   = fs.Int("batch-max-tokens", 0, "token cap of one merged batch (default 16384)")
		maxItems    = fs.Int("batch-max-items", 0, "item cap of one merged batch (default 64)")
		maxDocs     = fs.Int("max-documents", 0, "documents per rerank request (default 10000)")
		maxInflight = fs.Int("max-concurrent-requests", 0, "requests in flight before 429 (default 512)")
		timeout     = fs.Duration("request-timeout", 0, "per-request deadline, 504 past it (default 30s)")
		indexDir    = fs.String("index", "", "engine directory for /search and /documents (created if missing; snapshot written on shutdown)")
		memIndex    = fs.Bool("memory-index", false, "serve /search and /documents from an in-memory engine (lost on exit)")
		keys        keyFlags
	)
	fs.Var(&keys, "api-key", "KEY=TENANT; repeatable; turns bearer authentication on")
	if err := fs.Parse(args); err != nil {
		return err
	}
	cfg := server.DefaultConfig()
	if *configPath != "" {
		var err error
		if cfg, err = server.LoadConfig(*configPath); err != nil {
			return err
		}
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if set["addr"] {
		cfg.Addr = *addr
	}
	if set["batching"] {
		cfg.Rerank.Enabled, cfg.Embed.Enabled = *batching, *batching
	}
	if set["batch-max-wait"] {
		cfg.Rerank.MaxWait, cfg.Embed.MaxWait = server.Duration(*maxWait), server.Duration(*maxWait)
	}
	if set["batch-max-tokens"] {
		cfg.Rerank.MaxTokens, cfg.Embed.MaxTokens = *maxTokens, *maxTokens
	}
	if set["batch-max-items"] {
		cfg.Rerank.MaxItems, cfg.Embed.MaxItems = *maxItems, *maxItems
	}
	if set["max-documents"] {
		cfg.MaxDocuments = *maxDocs
	}
	if set["max-concurrent-requests"] {
		cfg.MaxConcurrentRequests = *maxInflight
	}
	if set["request-timeout"] {
		cfg.RequestTimeout = server.Duration(*timeout)
	}
	if len(keys) > 0 {
		cfg.APIKeys = keys
	}
	if set["pool"] {
		cfg.Rerank.Workers, cfg.Embed.Workers = *pool, *pool
	}
	if err := cfg.Validate(); err != nil {
		return err
	}

	modelCfg := func(c models.Config, dir string, maxDocs int) models.Config {
		c.Dir, c.Provider, c.IntraOpThreads, c.PoolSize = dir, *provider, *threads, *pool
		c.MaxDocs = maxDocs
		c.Sigmoid = false // the server applies the sigmoid (TEI raw_scores needs logits)
		return c
	}
	var b server.Backends
	rc, err := models.ProfileConfig(*rerankProf)
	if err != nil {
		return err
	}
	ce, err := ort.NewCrossEncoder(modelCfg(rc, *rerankDir, max(cfg.MaxDocuments, cfg.Rerank.MaxItems)))
	if err != nil {
		return err
	}
	defer ce.Close()
	if err := ce.Load(); err != nil {
		return fmt.Errorf("load cross-encoder: %w", err)
	}
	b.Scorer = scorer{ce}
	md, _, err := ce.Info()
	if err != nil {
		return err
	}
	tok, err := md.Tokenizer()
	if err != nil {
		return err
	}
	b.Tokenizer = tokenizer{tok}
	cfg.Provider = ce.Provider()
	var be *ort.BiEncoder
	if *embedOn {
		be, err = ort.NewBiEncoder(modelCfg(models.DefaultEmbedderConfig(), *embedDir, max(cfg.MaxInputs, cfg.Embed.MaxItems)))
		if err != nil {
			return err
		}
		defer be.Close()
		if err := be.Load(); err != nil {
			return fmt.Errorf("load embedder (--embed=false to serve reranking only): %w", err)
		}
		b.Embedder = embedder{be}
	}
	var eng *engine.Engine
	if *indexDir != "" || *memIndex {
		opts := []engine.Option{engine.WithReranker(*rerankProf, ce), engine.WithTokenCounter(tok)}
		if be != nil {
			opts = append(opts, engine.WithEmbedder(be))
		}
		if eng, err = engine.Open(*indexDir, engine.DefaultConfig(), opts...); err != nil {
			return err
		}
		defer eng.Close()
		ix := &index{e: eng}
		b.Searcher, b.Documents = ix, ix
	}
	s, err := server.New(cfg, b)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	slog.Info("serving", "addr", cfg.Addr, "provider", cfg.Provider, "batching", cfg.Rerank.Enabled,
		"batch_max_wait", time.Duration(cfg.Rerank.MaxWait), "auth", len(cfg.APIKeys) > 0)
	err = s.ListenAndServe(ctx)
	if eng != nil && *indexDir != "" {
		if serr := eng.Snapshot(); serr != nil {
			err = errors.Join(err, fmt.Errorf("snapshot %s: %w", *indexDir, serr))
		}
	}
	return err
}
