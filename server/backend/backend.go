package backend

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"github.com/hybrank/hybrank/analysis"
	"io"
	"log/slog"
	"math"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/hybrank/hybrank/engine"
	"github.com/hybrank/hybrank/models"
	"github.com/hybrank/hybrank/models/cache"
	"github.com/hybrank/hybrank/models/queue"
	"github.com/hybrank/hybrank/server"
)

// ErrConfig wraps every problem Config.Validate finds.
var ErrConfig = errors.New("backend: invalid config")

// Config is what one server process serves: the HTTP server's
// configuration, the models and the index. It is plain data, safe to copy.
// LoadConfig reads it from cmd/serve's config file.
type Config struct {
	// Server configures the HTTP server (limits, batching, API keys) and
	// names the rerankers (Server.Rerankers): each is loaded from its
	// RerankerConfig's Profile and Dir. Open sets Server.RerankModels to
	// the rerankers as served (each one's window, from the loaded model,
	// and its aliases: its profile and its directory's base name), fills
	// in Server.Provider, lowers Server.MaxInputTokens to what the
	// embedder's window holds, and adds the embedder's names.
	Server server.Config
	// RerankProfile and RerankDir load the one reranker when
	// Server.RerankModels is empty (with it, set each entry's Profile and
	// Dir instead): its profile (fast, balanced, accurate; empty: as
	// RerankerConfig.Profile) and its model directory (empty:
	// $HYBRANK_MODELS/<profile>).
	RerankProfile string
	RerankDir     string
	// Embed loads the bi-encoder, for /embed, /v1/embeddings and dense
	// search. Without it only reranking, /tokenize and BM25 search run.
	Embed bool
	// EmbedDir is the bi-encoder's model directory; empty means
	// $HYBRANK_MODELS/embed.
	EmbedDir string
	// Provider is the execution provider of both models: auto, cpu or cuda.
	Provider string
	// Threads is the intra-op threads per model (0: the runtime's default).
	Threads int
	// Pool is the runtime sessions per model.
	Pool int
	// CacheMB > 0 puts each model behind an LRU cache of that many MiB
	// (models/cache): rerank scores by (query, document), query and raw
	// text embeddings; hits and misses are in /metrics. 0: no cache.
	CacheMB int
	// Quantize "int8" loads both models with int8 weights (for the CPU),
	// "fp16" as float16 models (for the CUDA provider)
	// (models.Config.Quantize: converted once into the user cache unless
	// the directories already are); "" loads them as they are.
	Quantize string
	// Int8ActivationBits is models.Config.Int8ActivationBits for int8
	// models (0: 16-bit per-token codes where the CPU has AMX-INT8).
	Int8ActivationBits int
	// IndexDir serves /search and /documents from an engine stored there
	// (created if missing); Close writes a snapshot to it.
	IndexDir string
	// MemoryIndex serves them from an in-memory engine instead, lost on
	// exit. With neither, the index routes answer 503.
	MemoryIndex bool
	// Engine configures the engine of IndexDir or MemoryIndex (the
	// config file's "engine" object): durability and snapshots,
	// maintenance, the rerank budget's margins, retrieval defaults.
	// Validate checks it with engine.Config.Validate. Its index-shaping
	// parts (analysis, postings, dense) apply to a new index only: an
	// existing snapshot's replace them (engine.Open).
	Engine engine.Config
}

// LoadConfig reads cmd/serve's JSON config file over DefaultConfig: the
// server.Config keys at the top level and the engine's under "engine"
// (engine.Config's keys; durations in nanoseconds). Missing keys keep
// their defaults; unknown ones are an error (server.LoadJSON). The model
// and index settings come from flags only. It does not call Validate.
func LoadConfig(path string) (Config, error) {
	cfg := DefaultConfig()
	file := struct {
		server.Config
		Engine *engine.Config `json:"engine"`
	}{cfg.Server, &cfg.Engine}
	err := server.LoadJSON(path, &file)
	cfg.Server = file.Config
	return cfg, err
}

// DefaultConfig returns the configuration cmd/serve starts from: the
// balanced cross-encoder and the default embedder, no index.
func DefaultConfig() Config {
	return Config{
		Server:   server.DefaultConfig(),
		Embed:    true,
		Provider: "auto",
		Pool:     1,
		Engine:   engine.DefaultConfig(),
	}
}

// Validate reports every invalid field at once, wrapped in ErrConfig.
func (c Config) Validate() error {
	errs := []error{c.Server.Validate()}
	if len(c.Server.RerankModels) > 0 && (c.RerankProfile != "" || c.RerankDir != "") {
		errs = append(errs, errors.New("RerankProfile and RerankDir (--rerank-profile, --rerank-model) configure the one reranker; with rerank_models (--rerank) give each entry its profile and dir"))
	}
	if p, err := models.LookupProfile(c.Server.RerankModel); err == nil && len(c.Server.RerankModels) > 0 && !slices.ContainsFunc(c.Server.RerankModels, func(r server.RerankerConfig) bool {
		return slices.Contains(r.Names(), p.Name)
	}) {
		// Otherwise the first entry would answer to a profile's name that
		// it may not be (Server.Rerankers).
		errs = append(errs, fmt.Errorf("rerank_model %q names a profile that no entry of rerank_models is named (or aliased) by; name the default reranker", p.Name))
	}
	if p, err := models.LookupProfile(c.Server.RerankModel); err == nil && p.Kind == models.KindCrossEncoder && len(c.Server.RerankModels) == 0 &&
		c.RerankProfile != "" && c.RerankProfile != p.Name {
		// The one reranker would answer to the name of another profile.
		errs = append(errs, fmt.Errorf("rerank_model %q names a profile, and the reranker loads profile %q (--rerank-profile); name it %q or something that is not a profile", p.Name, c.RerankProfile, c.RerankProfile))
	}
	loads := map[string]string{} // what a model loads -> the reranker loading it
	for _, r := range c.rerankers() {
		mc, err := c.rerankConfig(r)
		if err != nil {
			errs = append(errs, fmt.Errorf("cross-encoder %q: %w", r.Name, err))
			continue
		}
		// The directory as it will load, however it is spelled.
		key := "$" + models.ModelsEnv + "/" + mc.Profile
		if d, err := mc.ResolveDir(); err == nil {
			key = filepath.Clean(d)
		}
		if other, dup := loads[key]; dup {
			errs = append(errs, fmt.Errorf("rerankers %q and %q both load %s; serve it once and give it both names (aliases)", other, r.Name, key))
		}
		loads[key] = r.Name
	}
	if c.Embed {
		if err := c.embedConfig().Validate(); err != nil {
			errs = append(errs, fmt.Errorf("embedder: %w", err))
		}
	}
	if c.IndexDir != "" && c.MemoryIndex {
		errs = append(errs, errors.New("set IndexDir or MemoryIndex, not both"))
	}
	if err := c.Engine.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("engine: %w", err))
	}
	if c.CacheMB < 0 || c.CacheMB > math.MaxInt64>>20 {
		errs = append(errs, fmt.Errorf("cache size %d MB out of range (0 to %d)", c.CacheMB, math.MaxInt64>>20))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	return nil
}

// rerankers are the rerankers to load, the default first
// (Server.Rerankers), the one of RerankProfile and RerankDir when
// Server.RerankModels is empty. The default's aliases leave out the
// client defaults (ClientRerankAliases): Server.Rerankers adds them after
// the names Open adds, so a model's own names come first.
func (c Config) rerankers() []server.RerankerConfig {
	sc := c.Server
	sc.ClientRerankAliases = nil
	rs := sc.Rerankers()
	if len(c.Server.RerankModels) == 0 {
		rs[0].Profile, rs[0].Dir = c.RerankProfile, c.RerankDir
	}
	return rs
}

// rerankProfile is the profile r is loaded with: its own, else its name
// when that is a cross-encoder profile, else balanced.
func rerankProfile(r server.RerankerConfig) string {
	if r.Profile != "" {
		return r.Profile
	}
	if p, err := models.LookupProfile(r.Name); err == nil && p.Kind == models.KindCrossEncoder {
		return p.Name
	}
	return models.ProfileBalanced
}

// rerankConfig is the validated configuration of reranker r.
func (c Config) rerankConfig(r server.RerankerConfig) (models.Config, error) {
	p, err := models.LookupProfile(rerankProfile(r))
	if err != nil {
		return models.Config{}, err
	}
	if p.Kind != models.KindCrossEncoder {
		return models.Config{}, fmt.Errorf("%w: profile %q is not a cross-encoder (want fast, balanced or accurate)", models.ErrInvalidConfig, p.Name)
	}
	mc, err := models.ProfileConfig(p.Name)
	if err != nil {
		return mc, err
	}
	mc = c.modelConfig(mc, r.Dir, max(c.Server.MaxDocuments, c.Server.Rerank.MaxItems))
	// A window configured for this reranker, or globally other than the
	// default, is the model's: it cuts pairs there (at most at its own
	// positions), so the server's 413 check, batch costs and usage mean
	// what the model reads. The default leaves the model's own window.
	if r.MaxPairTokens > 0 || c.Server.MaxPairTokens != server.DefaultConfig().MaxPairTokens {
		mc.MaxLength = min(cmp.Or(r.MaxPairTokens, c.Server.MaxPairTokens), models.MaxSupportedLength)
	}
	return mc, mc.Validate()
}

func (c Config) embedConfig() models.Config {
	return c.modelConfig(models.DefaultEmbedderConfig(), c.EmbedDir, max(c.Server.MaxInputs, c.Server.Embed.MaxItems))
}

// modelConfig applies c's runtime settings to a model's defaults. maxDocs
// is the largest call the server makes (a request or a merged batch).
func (c Config) modelConfig(mc models.Config, dir string, maxDocs int) models.Config {
	mc.Dir, mc.Provider, mc.IntraOpThreads, mc.PoolSize, mc.MaxDocs = dir, c.Provider, c.Threads, c.Pool, maxDocs
	mc.Quantize, mc.Int8ActivationBits = c.Quantize, c.Int8ActivationBits
	mc.Sigmoid = false // the server applies the sigmoid (TEI raw_scores needs logits)
	return mc
}

// CrossEncoder is what Open needs of a runtime-backed cross-encoder: the
// reranker contract, its tokenizer (from Info's model directory), the
// provider it runs on and Close. *ort.CrossEncoder satisfies it.
type CrossEncoder interface {
	models.Reranker
	Info() (models.ModelDir, int, error)
	Provider() string
	io.Closer
}

// BiEncoder is what Open needs of a runtime-backed bi-encoder: the
// embedder contract, its directory and sequence length (Info), and Close.
// *ort.BiEncoder satisfies it.
type BiEncoder interface {
	models.Embedder
	Info() (models.ModelDir, int, error)
	io.Closer
}

// Resources are what Open loaded and opened for one server process: the
// models and, when configured, the engine, and the server.Services they
// make (Services). Resources own them: they are safe for concurrent use;
// Close them once the server using them has stopped.
type Resources struct {
	cfg      Config
	services server.Services
	engine   *engine.Engine // nil without an index
	closers  []io.Closer    // the models, in load order

	closeOnce sync.Once
	closeErr  error
}

// Open loads the models cfg names (now, so a bad directory or runtime is
// reported at start-up) and opens the index, and adapts them to the
// server's Services.
//
// The models are built by the constructors passed in: cmd/serve passes
// models/ort's NewCrossEncoder and NewBiEncoder. They are parameters so this
// package, like the server, builds without cgo (internal/layering), and so
// tests can pass stand-ins. newBiEncoder is called only when cfg.Embed is set.
func Open[C CrossEncoder, B BiEncoder](cfg Config, newCrossEncoder func(models.Config) (C, error), newBiEncoder func(models.Config) (B, error)) (_ *Resources, err error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	b := &Resources{cfg: cfg}
	defer func() {
		if err != nil {
			err = errors.Join(err, b.Close())
		}
	}()
	srv := &b.cfg.Server
	b.services = server.Services{Rerankers: map[string]models.Reranker{}, Caches: map[string]server.CacheStats{}, Queues: map[string]server.QueueStats{}}
	var opts []engine.Option
	rerankers := cfg.rerankers()
	taken := append(srv.RerankNames(), srv.EmbedNames()...)
	for i := range rerankers {
		r := &rerankers[i]
		rc, _ := cfg.rerankConfig(*r) // valid: Validate passed
		ce, err := newCrossEncoder(rc)
		if err != nil {
			return nil, fmt.Errorf("cross-encoder %q: %w", r.Name, err)
		}
		b.closers = append(b.closers, ce)
		if err := ce.Load(); err != nil {
			return nil, fmt.Errorf("load cross-encoder %q: %w", r.Name, err)
		}
		md, window, err := ce.Info()
		if err != nil {
			return nil, fmt.Errorf("cross-encoder %q: %w", r.Name, err)
		}
		if i == 0 {
			// The default reranker's tokenizer serves /tokenize, the
			// server's token counts and the engine's packing; its
			// provider is the one reported.
			tok, err := md.Tokenizer()
			if err != nil {
				return nil, fmt.Errorf("cross-encoder %q tokenizer: %w", r.Name, err)
			}
			b.services.Tokenizer = NewTokenizer(tok)
			opts = append(opts, engine.WithTokenCounter(tok))
			srv.Provider = ce.Provider()
		}
		if window > 0 {
			r.MaxPairTokens = window // the model's, which a configured one capped (rerankConfig)
		}
		r.Profile, r.Dir = rc.Profile, sourceDir(rc, md.Dir)
		r.Aliases, taken = addAliases(r.Aliases, taken, r.Profile, r.Dir)
		// One model, one queue, shared: the rerank routes and the engine's
		// /search (under the served name) submit to the same queue, behind
		// the same cache, so concurrent requests and searches share model
		// calls and a search's budget sees the queue's wait.
		q, err := queue.NewReranker(ce, srv.Rerank)
		if err != nil {
			return nil, fmt.Errorf("cross-encoder %q queue: %w", r.Name, err)
		}
		b.closers = append(b.closers, q)
		b.services.Queues[r.Name] = q
		var reranker models.Reranker = q
		if cfg.CacheMB > 0 {
			rc, err := cache.NewReranker(q, int64(cfg.CacheMB)<<20)
			if err != nil {
				return nil, err
			}
			reranker, b.services.Caches[r.Name] = rc, rc
		}
		b.services.Rerankers[r.Name] = reranker
		opts = append(opts, engine.WithReranker(r.Name, reranker))
	}
	srv.RerankModels, srv.RerankAliases = rerankers, nil
	if cfg.Embed {
		be, err := newBiEncoder(cfg.embedConfig())
		if err != nil {
			return nil, fmt.Errorf("embedder: %w", err)
		}
		b.closers = append(b.closers, be)
		if err := be.Load(); err != nil {
			return nil, fmt.Errorf("load embedder (or serve without one, Embed false): %w", err)
		}
		emd, ewindow, err := be.Info()
		if err != nil {
			return nil, fmt.Errorf("embedder: %w", err)
		}
		if ewindow > 2 {
			// Texts longer than the window less [CLS] and [SEP] would be
			// cut by the model: the server refuses or truncates them first.
			srv.MaxInputTokens = min(srv.MaxInputTokens, ewindow-2)
		}
		q, err := queue.NewEmbedder(be, srv.Embed)
		if err != nil {
			return nil, fmt.Errorf("embedder queue: %w", err)
		}
		b.closers = append(b.closers, q)
		b.services.Queues[srv.EmbedModel] = q
		var embedder models.Embedder = q
		if cfg.CacheMB > 0 {
			ec, err := cache.NewEmbedder(q, int64(cfg.CacheMB)<<20)
			if err != nil {
				return nil, err
			}
			embedder, b.services.Caches[srv.EmbedModel] = ec, ec
		}
		b.services.Embedder = embedder
		srv.EmbedAliases, _ = addAliases(srv.EmbedAliases, taken, models.ProfileEmbed, sourceDir(cfg.embedConfig(), emd.Dir))
		opts = append(opts, engine.WithEmbedder(embedder))
	}
	if cfg.IndexDir != "" || cfg.MemoryIndex {
		if b.engine, err = engine.Open(cfg.IndexDir, cfg.Engine, opts...); err != nil {
			return nil, err
		}
		if fb := b.engine.Durability().Recovery.FellBack; fb != "" {
			slog.Warn("index opened from the previous snapshot generation", "dir", cfg.IndexDir, "why", fb)
		}
		ix := NewIndex(b.engine)
		b.services.Searcher, b.services.Documents, b.services.Stats = ix, ix, ix
		b.services.Analyzer = b.engine.Analyzer()
	} else if b.services.Analyzer, err = analysis.New(cfg.Engine.Analysis); err != nil {
		return nil, fmt.Errorf("engine analysis: %w", err)
	}
	return b, nil
}

// addAliases appends to aliases the model's profile name and its
// directory's base name, so that requests may name the model as the
// README's examples and the model files do; a name in taken (already
// meaning a model) is skipped. It returns the aliases, and taken with the
// names it added.
// sourceDir is the model directory mc names, or loaded (where the model
// loaded from) when it names none: with --quantize the model loads from a
// copy in the user cache, whose name is not the model's.
func sourceDir(mc models.Config, loaded string) string {
	if d, err := mc.ResolveDir(); err == nil {
		return filepath.Clean(d)
	}
	return loaded
}

func addAliases(aliases, taken []string, profile, dir string) ([]string, []string) {
	for _, n := range []string{profile, filepath.Base(dir)} {
		if n == "" || n == "." || n == string(filepath.Separator) || slices.Contains(taken, n) {
			continue
		}
		aliases = append(aliases, n)
		taken = append(taken, n)
	}
	return aliases, taken
}

// Warm runs one inference through every model, the engine's Warm when an
// index is served, else the scorer and embedder directly, so that the
// first request does not pay ONNX Runtime's first-run allocations.
func (b *Resources) Warm(ctx context.Context) error {
	if b.engine != nil {
		return b.engine.Warm(ctx)
	}
	const text = "warm up"
	for _, r := range b.cfg.Server.RerankModels {
		if _, _, err := b.services.Rerankers[r.Name].ScorePairs(ctx, []models.Pair{{Query: text, Doc: text}}); err != nil {
			return fmt.Errorf("warm cross-encoder %q: %w", r.Name, err)
		}
	}
	if b.services.Embedder != nil {
		if _, _, err := b.services.Embedder.EmbedPooled(ctx, models.InputRaw, []string{text}); err != nil {
			return fmt.Errorf("warm embedder: %w", err)
		}
	}
	return nil
}

// Services returns what the server serves: the models and the engine
// adapted to the server's interfaces.
func (b *Resources) Services() server.Services { return b.services }

// EngineConfig returns the effective configuration of the engine Open
// opened (engine.Engine.Config: an existing snapshot's index-shaping
// settings in place of Config.Engine's), or the zero Config without an
// index.
func (b *Resources) EngineConfig() engine.Config {
	if b.engine == nil {
		return engine.Config{}
	}
	return b.engine.Config()
}

// ServerConfig returns the server configuration as Open completed it: the
// rerankers as served (RerankModels), the models' aliases and windows, and
// Provider set to what the default cross-encoder runs on.
func (b *Resources) ServerConfig() server.Config { return b.cfg.Server }

// Close writes the index snapshot (IndexDir only), then closes the engine
// and the models, joining their errors. It is idempotent.
func (b *Resources) Close() error {
	b.closeOnce.Do(func() {
		var errs []error
		if b.engine != nil {
			if b.cfg.IndexDir != "" {
				if err := b.engine.Snapshot(); err != nil {
					errs = append(errs, fmt.Errorf("snapshot %s: %w", b.cfg.IndexDir, err))
				}
			}
			errs = append(errs, b.engine.Close())
		}
		for _, c := range slices.Backward(b.closers) {
			errs = append(errs, c.Close())
		}
		b.closeErr = errors.Join(errs...)
	})
	return b.closeErr
}

// Run opens cfg's backends, serves them until ctx is done, then drains the
// server and closes the backends (see Close). The constructors are Open's.
func Run[C CrossEncoder, B BiEncoder](ctx context.Context, cfg Config, newCrossEncoder func(models.Config) (C, error), newBiEncoder func(models.Config) (B, error)) (err error) {
	b, err := Open(cfg, newCrossEncoder, newBiEncoder)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, b.Close()) }()
	start := time.Now()
	if err := b.Warm(ctx); err != nil {
		if ctx.Err() != nil {
			return nil // stopped while warming: a clean shutdown
		}
		return err
	}
	slog.Info("models warmed", "took", time.Since(start).Round(time.Millisecond))
	scfg := b.ServerConfig()
	s, err := server.New(scfg, b.Services())
	if err != nil {
		return err
	}
	slog.Info("serving", "addr", scfg.Addr, "provider", scfg.Provider, "rerank", scfg.RerankNames(), "batching", scfg.Rerank.Enabled,
		"batch_max_wait", time.Duration(scfg.Rerank.MaxWait), "auth", len(scfg.APIKeys) > 0,
		"embed", cfg.Embed, "index", cfg.IndexDir != "" || cfg.MemoryIndex)
	return s.ListenAndServe(ctx)
}
