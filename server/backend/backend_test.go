package backend_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hybrank/hybrank/engine"
	"github.com/hybrank/hybrank/models"
	"github.com/hybrank/hybrank/server"
	"github.com/hybrank/hybrank/server/backend"
)

// events records the models' lifecycle in order.
type events []string

func (e *events) add(s string) { *e = append(*e, s) }

// fakeCE stands in for *ort.CrossEncoder: it scores a pair by the query
// words found in the document.
type fakeCE struct {
	cfg     models.Config
	vocab   string
	loadErr error
	ev      *events
	scored  atomic.Int64 // documents scored
}

func (f *fakeCE) ScorePairs(_ context.Context, pairs []models.Pair) ([]float32, models.Usage, error) {
	f.scored.Add(int64(len(pairs)))
	out := make([]float32, len(pairs))
	for i, p := range pairs {
		for _, w := range strings.Fields(p.Query) {
			if strings.Contains(p.Doc, w) {
				out[i]++
			}
		}
	}
	return out, models.Usage{Pairs: len(pairs), Batches: 1}, nil
}

func (f *fakeCE) ScoreSpans(context.Context, string, []string, models.Chunking) ([]models.SpanScore, models.Usage, error) {
	return nil, models.Usage{}, models.ErrNoChunking
}

func (f *fakeCE) Capabilities() models.Capabilities { return models.Capabilities{Window: f.window()} }

func (f *fakeCE) Load() error { f.ev.add("load ce " + f.cfg.Profile); return f.loadErr }
func (f *fakeCE) Info() (models.ModelDir, int, error) {
	return models.ModelDir{Dir: loadedDir(f.cfg), VocabTxt: f.vocab, LowerCase: true}, f.window(), nil
}

// window is what a model of fakeWindow positions resolves
// (models.ModelDir.SequenceLength), cut to the configured MaxLength.
func (f *fakeCE) window() int {
	if f.cfg.MaxLength > 0 {
		return min(fakeWindow, f.cfg.MaxLength)
	}
	return fakeWindow
}

// loadedDir is where a stand-in says its model loaded from: as with
// models/ort, a quantized model loads from a copy in the user cache.
func loadedDir(cfg models.Config) string {
	if cfg.Quantize == "" {
		return cfg.Dir
	}
	return filepath.Join("/cache", cfg.Quantize, filepath.Base(cfg.Dir)+"-0123456789abcdef")
}
func (f *fakeCE) Provider() string { return "cpu" }
func (f *fakeCE) Close() error     { f.ev.add("close ce " + f.cfg.Profile); return nil }

// fakeWindow is the sequence length fakeCE reports (not the server's
// default, so that tests see Open copy it).
const fakeWindow = 384

// fakeBE stands in for *ort.BiEncoder: two dimensions, cats and the rest.
type fakeBE struct {
	cfg models.Config
	ev  *events
}

func (f *fakeBE) EmbedPooled(_ context.Context, _ models.Input, texts []string) ([][]float32, models.Usage, error) {
	out := make([][]float32, len(texts))
	for i, t := range texts {
		out[i] = []float32{0, 1}
		if strings.Contains(t, "cat") {
			out[i] = []float32{1, 0}
		}
	}
	return out, models.Usage{Pairs: len(texts), Batches: 1}, nil
}

func (f *fakeBE) EmbedSpans(context.Context, models.Input, []string, models.Chunking) ([]models.SpanVectors, models.Usage, error) {
	return nil, models.Usage{}, models.ErrNoChunking
}

func (f *fakeBE) Capabilities() models.Capabilities {
	return models.Capabilities{Window: fakeEmbedWindow}
}

func (f *fakeBE) Info() (models.ModelDir, int, error) {
	return models.ModelDir{Dir: loadedDir(f.cfg)}, fakeEmbedWindow, nil
}

// fakeEmbedWindow is the sequence length fakeBE reports, shorter than the
// server's default input limit (as all-MiniLM-L6-v2's 256).
const fakeEmbedWindow = 256

func (f *fakeBE) Dim() int     { return 2 }
func (f *fakeBE) Load() error  { f.ev.add("load be"); return nil }
func (f *fakeBE) Close() error { f.ev.add("close be"); return nil }

// fakes returns constructors of the stand-ins that record into ev and keep
// the model configurations they were given.
func fakes(t *testing.T, ev *events, loadErr error) (func(models.Config) (*fakeCE, error), func(models.Config) (*fakeBE, error), *[]models.Config) {
	vocab := writeVocab(t)
	var got []models.Config
	return func(c models.Config) (*fakeCE, error) {
			got = append(got, c)
			return &fakeCE{cfg: c, vocab: vocab, loadErr: loadErr, ev: ev}, nil
		}, func(c models.Config) (*fakeBE, error) {
			got = append(got, c)
			return &fakeBE{cfg: c, ev: ev}, nil
		}, &got
}

func TestConfigValidate(t *testing.T) {
	if err := backend.DefaultConfig().Validate(); err != nil {
		t.Fatalf("default config: %v", err)
	}
	for _, tc := range []struct {
		name string
		mut  func(*backend.Config)
		want error
	}{
		{"unknown profile", func(c *backend.Config) { c.RerankProfile = "huge" }, models.ErrUnknownProfile},
		{"bad provider", func(c *backend.Config) { c.Provider = "tpu" }, models.ErrInvalidConfig},
		{"cache beyond int64 bytes", func(c *backend.Config) { c.CacheMB = 1 << 44 }, backend.ErrConfig},
		{"bad pool", func(c *backend.Config) { c.Pool = 0 }, models.ErrInvalidConfig},
		{"bad quantize", func(c *backend.Config) { c.Quantize = "int4" }, models.ErrInvalidConfig},
		{"two indexes", func(c *backend.Config) { c.IndexDir, c.MemoryIndex = t.TempDir(), true }, backend.ErrConfig},
		{"bad server", func(c *backend.Config) { c.Server.MaxDocuments = 0 }, server.ErrConfig},
		{"bad engine", func(c *backend.Config) { c.Engine.Durability.SnapshotLogBytes = -1 }, engine.ErrInvalidConfig},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := backend.DefaultConfig()
			tc.mut(&c)
			err := c.Validate()
			if !errors.Is(err, backend.ErrConfig) || !errors.Is(err, tc.want) {
				t.Fatalf("Validate = %v, want ErrConfig wrapping %v", err, tc.want)
			}
		})
	}
}

func TestOpen(t *testing.T) {
	var ev events
	newCE, newBE, cfgs := fakes(t, &ev, nil)
	cfg := backend.DefaultConfig()
	cfg.MemoryIndex, cfg.Threads, cfg.Pool, cfg.Provider, cfg.Quantize = true, 3, 2, "cpu", models.QuantizeInt8
	b, err := backend.Open(cfg, newCE, newBE)
	if err != nil {
		t.Fatal(err)
	}
	// The models get the runtime settings and the server's largest call,
	// and return logits: the server applies the sigmoid itself.
	for _, mc := range *cfgs {
		if mc.Provider != "cpu" || mc.IntraOpThreads != 3 || mc.PoolSize != 2 || mc.Sigmoid || mc.Quantize != models.QuantizeInt8 {
			t.Errorf("model config %+v", mc)
		}
	}
	if rc := (*cfgs)[0]; rc.Profile != models.ProfileBalanced || rc.MaxDocs != max(cfg.Server.MaxDocuments, cfg.Server.Rerank.MaxItems) {
		t.Errorf("cross-encoder config %+v", rc)
	}
	bs := b.Services()
	if bs.Rerankers["hybrank-rerank"] == nil || bs.Embedder == nil || bs.Tokenizer == nil || bs.Searcher == nil || bs.Documents == nil || bs.Analyzer == nil {
		t.Fatalf("backends %+v", bs)
	}
	sc := b.ServerConfig()
	if rr := sc.Rerankers(); sc.Provider != "cpu" || len(rr) != 1 || rr[0].MaxPairTokens != fakeWindow || sc.MaxInputTokens != fakeEmbedWindow-2 {
		t.Fatalf("server provider %q, rerankers %+v (want one with the cross-encoder's window %d), max_input_tokens %d (want the embedder's window less 2 special tokens, %d)",
			sc.Provider, rr, fakeWindow, sc.MaxInputTokens, fakeEmbedWindow-2)
	}
	ctx := context.Background()
	if _, err := bs.Documents.Apply(ctx, server.DocumentBatch{Upserts: []engine.Document{{ID: "1", Text: "cats sat"}, {ID: "2", Text: "a dog ran"}}}); err != nil {
		t.Fatal(err)
	}
	// The engine reranks with the cross-encoder under its served name,
	// embeds with the bi-encoder and packs with the tokenizer: "cats sat"
	// is 3 word pieces (2 estimated), so it alone fills a budget of 3.
	res, err := bs.Searcher.Search(ctx, engine.Request{Query: "cats", Rerank: "hybrank-rerank", TokenBudget: 3})
	if err != nil {
		t.Fatal(err)
	}
	if res.Reranked == 0 || len(res.Fallbacks) != 0 || res.Hits[0].Document.ID != "1" || res.Hits[0].Provenance.DenseRank != 1 || res.Tokens != 3 {
		t.Fatalf("search %+v", res)
	}
	if d, ok, err := bs.Documents.Get(ctx, "", "2"); err != nil || !ok || d.Text != "a dog ran" {
		t.Fatalf("Get = %+v %v %v", d, ok, err)
	}
	if _, ok, _ := bs.Documents.Get(ctx, "other", "2"); ok {
		t.Fatal("Get found a document in another tenant")
	}
	if st := bs.Stats.Stats(); st.Documents != 2 || st.Vectors != 2 {
		t.Fatalf("stats %+v", st)
	}
	if err := b.Warm(ctx); err != nil {
		t.Fatal(err)
	}
	if len(bs.Caches) != 0 {
		t.Fatalf("caches without CacheMB: %v", bs.Caches)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	// Open loads each model itself (a bad directory fails at start-up), and
	// engine.Open loads them again (Load), a no-op on a loaded model.
	if want := (events{"load ce balanced", "load be", "load be", "load ce balanced", "close be", "close ce balanced"}); !reflect.DeepEqual(ev, want) {
		t.Fatalf("lifecycle %v, want %v", ev, want)
	}
}

func TestOpenWithoutEmbedderOrIndex(t *testing.T) {
	var ev events
	newCE, _, _ := fakes(t, &ev, nil)
	cfg := backend.DefaultConfig()
	cfg.Embed = false
	noBE := func(models.Config) (*fakeBE, error) { t.Fatal("bi-encoder built with Embed false"); return nil, nil }
	b, err := backend.Open(cfg, newCE, noBE)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	// Without an index, /analyze still analyzes as engine.analysis says.
	if bs := b.Services(); len(bs.Rerankers) != 1 || bs.Tokenizer == nil || bs.Embedder != nil || bs.Searcher != nil || bs.Documents != nil || bs.Stats != nil ||
		bs.Analyzer == nil || bs.Analyzer.Version() != cfg.Engine.Analysis.Version() {
		t.Fatalf("backends %+v", bs)
	}
	if err := b.Warm(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestOpenLoadFailureCloses(t *testing.T) {
	var ev events
	boom := errors.New("no such model")
	newCE, newBE, _ := fakes(t, &ev, boom)
	if _, err := backend.Open(backend.DefaultConfig(), newCE, newBE); !errors.Is(err, boom) {
		t.Fatalf("Open = %v, want %v", err, boom)
	}
	if want := (events{"load ce balanced", "close ce balanced"}); !reflect.DeepEqual(ev, want) {
		t.Fatalf("lifecycle %v, want %v", ev, want)
	}
}

func TestCloseSnapshotsIndexDir(t *testing.T) {
	var ev events
	newCE, newBE, _ := fakes(t, &ev, nil)
	cfg := backend.DefaultConfig()
	cfg.IndexDir = t.TempDir()
	b, err := backend.Open(cfg, newCE, newBE)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Services().Documents.Apply(context.Background(), server.DocumentBatch{Upserts: []engine.Document{{ID: "kept", Text: "survives a restart"}}}); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	e, err := engine.Open(cfg.IndexDir, engine.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if _, ok := e.GetIn("", "kept"); !ok {
		t.Fatal("document lost: Close wrote no snapshot")
	}
}

// Run shuts down cleanly when its context ends and closes the models.
func TestRunStopsWithContext(t *testing.T) {
	var ev events
	newCE, newBE, _ := fakes(t, &ev, nil)
	cfg := backend.DefaultConfig()
	cfg.Server.Addr = "127.0.0.1:0"
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := backend.Run(ctx, cfg, newCE, newBE); err != nil {
		t.Fatalf("Run = %v", err)
	}
	if want := (events{"load ce balanced", "load be", "close be", "close ce balanced"}); !reflect.DeepEqual(ev, want) {
		t.Fatalf("lifecycle %v, want %v", ev, want)
	}
}

// Open adds the names the README and the model files use: the profile and
// the model directory's base name of each model, beside the served names.
// TestOpenModelAliases: a model answers to its profile and to its
// directory's base name, also when it is quantized and so loads from a
// copy in the user cache (whose name it had taken).
func TestOpenModelAliases(t *testing.T) {
	for _, q := range []string{"", models.QuantizeInt8} {
		t.Run("quantize="+q, func(t *testing.T) {
			var ev events
			newCE, newBE, _ := fakes(t, &ev, nil)
			cfg := backend.DefaultConfig()
			cfg.RerankProfile = models.ProfileAccurate
			cfg.RerankDir = "/models/ms-marco-MiniLM-L-12-v2"
			cfg.EmbedDir = "/models/all-minilm-l6-v2/"
			cfg.Server.EmbedAliases = []string{"mine"}
			cfg.Quantize = q
			b, err := backend.Open(cfg, newCE, newBE)
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			sc := b.ServerConfig()
			// The clients' default names (server.Config.ClientRerankAliases
			// and ClientEmbedAliases) come after the models' own.
			wantRerank := append([]string{"hybrank-rerank", "accurate", "ms-marco-MiniLM-L-12-v2"}, cfg.Server.ClientRerankAliases...)
			if got := sc.RerankNames(); !reflect.DeepEqual(got, wantRerank) {
				t.Errorf("rerank names %v, want %v", got, wantRerank)
			}
			if got, want := sc.EmbedNames(), append([]string{"hybrank-embed", "mine", "embed", "all-minilm-l6-v2"}, cfg.Server.ClientEmbedAliases...); !reflect.DeepEqual(got, want) {
				t.Errorf("embed names %v, want %v", got, want)
			}
			if got := sc.RerankModels[0].Dir; got != "/models/ms-marco-MiniLM-L-12-v2" {
				t.Errorf("reranker dir %q, want the model's directory", got)
			}
			if err := sc.Validate(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestOpenWithCaches(t *testing.T) {
	var ev events
	newCE, newBE, _ := fakes(t, &ev, nil)
	cfg := backend.DefaultConfig()
	cfg.MemoryIndex, cfg.CacheMB = true, 1
	b, err := backend.Open(cfg, newCE, newBE)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	bs := b.Services()
	if len(bs.Caches) != 2 || bs.Caches["hybrank-rerank"] == nil || bs.Caches["hybrank-embed"] == nil {
		t.Fatalf("caches %v", bs.Caches)
	}
	ctx := context.Background()
	pairs := []models.Pair{{Query: "cats", Doc: "cats sat"}}
	for range 2 {
		if _, _, err := bs.Rerankers["hybrank-rerank"].ScorePairs(ctx, pairs); err != nil {
			t.Fatal(err)
		}
	}
	if st := bs.Caches["hybrank-rerank"].Stats(); st.Hits != 1 || st.Misses != 1 {
		t.Fatalf("rerank cache %+v", st)
	}
	if _, err := bs.Documents.Apply(ctx, server.DocumentBatch{Upserts: []engine.Document{{ID: "1", Text: "cats sat"}}}); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := bs.Searcher.Search(ctx, engine.Request{Query: "cats"}); err != nil {
			t.Fatal(err)
		}
	}
	if st := bs.Caches["hybrank-embed"].Stats(); st.Hits != 1 {
		t.Fatalf("embed cache after two identical searches %+v", st)
	}
	bad := backend.DefaultConfig()
	bad.CacheMB = -1
	if err := bad.Validate(); err == nil {
		t.Fatal("negative cache size accepted")
	}
}

// Open serves several rerankers at once: each is built and loaded once,
// and the one object serves both its rerank routes (Services.Rerankers) and
// /search (the engine's reranker of the same name); the default comes
// first and answers to rerank_model.
func TestOpenSeveralRerankers(t *testing.T) {
	var ev events
	newCE, newBE, cfgs := fakes(t, &ev, nil)
	var ces []*fakeCE // in the order built: that of RerankModels
	buildCE := func(c models.Config) (*fakeCE, error) {
		ce, err := newCE(c)
		ces = append(ces, ce)
		return ce, err
	}
	cfg := backend.DefaultConfig()
	cfg.MemoryIndex = true
	cfg.Server.RerankModels = []server.RerankerConfig{
		{Name: "fast"},
		{Name: "balanced"},
		{Name: "large", Profile: models.ProfileAccurate, Dir: "/models/ms-marco-MiniLM-L-12-v2"},
	}
	b, err := backend.Open(cfg, buildCE, newBE)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	var built []string
	for _, mc := range *cfgs {
		built = append(built, mc.Profile+":"+mc.Dir)
	}
	if want := []string{"fast:", "balanced:", "accurate:/models/ms-marco-MiniLM-L-12-v2", "embed:"}; !reflect.DeepEqual(built, want) {
		t.Fatalf("models built %v, want each once: %v", built, want)
	}
	sc := b.ServerConfig()
	if err := sc.Validate(); err != nil {
		t.Fatal(err)
	}
	var names [][]string
	for _, r := range sc.Rerankers() {
		names = append(names, r.Names())
		if r.MaxPairTokens != fakeWindow {
			t.Errorf("reranker %q window %d, want the model's %d", r.Name, r.MaxPairTokens, fakeWindow)
		}
	}
	if want := [][]string{append([]string{"fast", "hybrank-rerank"}, cfg.Server.ClientRerankAliases...), {"balanced"}, {"large", "accurate", "ms-marco-MiniLM-L-12-v2"}}; !reflect.DeepEqual(names, want) {
		t.Fatalf("rerankers' names %v, want %v", names, want)
	}
	bs := b.Services()
	ctx := context.Background()
	if _, err := bs.Documents.Apply(ctx, server.DocumentBatch{Upserts: []engine.Document{{ID: "1", Text: "cats sat"}, {ID: "2", Text: "a dog ran"}}}); err != nil {
		t.Fatal(err)
	}
	// The Services serve each model (behind its queue) under its name.
	if len(bs.Rerankers) != len(ces) || len(bs.Queues) != len(ces)+1 {
		t.Fatalf("rerankers %v, queues %v; want one of each per model built (%d), and the embedder's queue", bs.Rerankers, bs.Queues, len(ces))
	}
	scored := func() map[string]int64 {
		out := map[string]int64{}
		for i, rc := range cfg.Server.RerankModels {
			if bs.Rerankers[rc.Name] == nil {
				t.Fatalf("no reranker served as %q", rc.Name)
			}
			out[rc.Name] = ces[i].scored.Load()
		}
		return out
	}
	for _, name := range []string{"fast", "balanced", "large"} {
		before := scored()
		res, err := bs.Searcher.Search(ctx, engine.Request{Query: "cats", Rerank: name})
		if err != nil || res.Reranked == 0 || len(res.Fallbacks) != 0 {
			t.Fatalf("search reranked by %q: %+v %v", name, res, err)
		}
		after := scored()
		for n := range after {
			if moved := after[n] != before[n]; moved != (n == name) {
				t.Fatalf("search reranked by %q: scorer %q scored %d documents", name, n, after[n]-before[n])
			}
		}
	}
	// The server accepts the completed configuration and the backends
	// together, and each model's name reaches that model.
	s, err := server.New(sc, bs)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ts := httptest.NewServer(s.Handler())
	defer ts.Close()
	for _, tc := range []struct{ model, want string }{{"", "fast"}, {"hybrank-rerank", "fast"}, {"balanced", "balanced"}, {"accurate", "large"}} {
		before := scored()[tc.want]
		resp, err := ts.Client().Post(ts.URL+"/v1/rerank", "application/json", strings.NewReader(`{"model": "`+tc.model+`", "query": "cats", "documents": ["cats sat"]}`))
		if err != nil {
			t.Fatal(err)
		}
		var out struct{ Model string }
		err = json.NewDecoder(resp.Body).Decode(&out)
		resp.Body.Close()
		if err != nil || resp.StatusCode != 200 || out.Model != tc.want || scored()[tc.want] != before+1 {
			t.Fatalf("model %q: %d %+v %v, want it served by %q", tc.model, resp.StatusCode, out, err, tc.want)
		}
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	// Open loads each model once; engine.Open's Load is a no-op on a
	// loaded model. The models close in reverse order.
	want := events{"load ce fast", "load ce balanced", "load ce accurate", "load be",
		"load be", "load ce balanced", "load ce fast", "load ce accurate", // engine.Open: by name
		"close be", "close ce accurate", "close ce balanced", "close ce fast"}
	if !reflect.DeepEqual(ev, want) {
		t.Fatalf("lifecycle %v, want %v", ev, want)
	}
}

func TestConfigValidateRerankers(t *testing.T) {
	// Directories as named, not as this machine's environment resolves
	// them (make test sets $HYBRANK_MODELS).
	t.Setenv(models.ModelsEnv, "")
	t.Setenv(models.RealModelsEnv, "")
	for _, tc := range []struct {
		name string
		mut  func(*backend.Config)
		msg  string
	}{
		{"list and single", func(c *backend.Config) {
			c.Server.RerankModels, c.RerankDir = []server.RerankerConfig{{Name: "fast"}}, "/models/x"
		}, "configure the one reranker"},
		{"one model twice", func(c *backend.Config) {
			c.Server.RerankModels = []server.RerankerConfig{{Name: "fast"}, {Name: "quick", Profile: "fast"}}
		}, `rerankers "fast" and "quick" both load $HYBRANK_MODELS/fast`},
		{"one directory twice", func(c *backend.Config) {
			c.Server.RerankModels = []server.RerankerConfig{{Name: "a", Dir: "/m/x"}, {Name: "b", Dir: "/m/x/"}}
		}, `both load /m/x`},
		{"embedder as reranker", func(c *backend.Config) {
			c.Server.RerankModels = []server.RerankerConfig{{Name: "e", Profile: models.ProfileEmbed}}
		}, "not a cross-encoder"},
		{"unknown profile", func(c *backend.Config) {
			c.Server.RerankModels = []server.RerankerConfig{{Name: "x", Profile: "huge"}}
		}, `cross-encoder "x"`},
		{"default names a profile not served", func(c *backend.Config) {
			c.Server.RerankModel = "balanced"
			c.Server.RerankModels = []server.RerankerConfig{{Name: "fast"}, {Name: "accurate"}}
		}, `rerank_model "balanced" names a profile`},
		{"one reranker named as another profile", func(c *backend.Config) {
			c.Server.RerankModel, c.RerankProfile = models.ProfileFast, models.ProfileAccurate
		}, `rerank_model "fast" names a profile, and the reranker loads profile "accurate"`},
		{"ambiguous alias", func(c *backend.Config) {
			c.Server.RerankModels = []server.RerankerConfig{{Name: "fast", Aliases: []string{"m"}}, {Name: "balanced", Aliases: []string{"m"}}}
		}, `"m" names both reranker "fast" and reranker "balanced"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := backend.DefaultConfig()
			tc.mut(&c)
			err := c.Validate()
			if !errors.Is(err, backend.ErrConfig) || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("Validate = %v, want ErrConfig containing %q", err, tc.msg)
			}
		})
	}
	c := backend.DefaultConfig()
	c.Server.RerankModels = []server.RerankerConfig{{Name: "fast"}, {Name: "balanced"}, {Name: "mine", Dir: "/m/mine"}}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	// One directory spelled as a profile under $HYBRANK_MODELS and as a
	// path: both would load it.
	root := t.TempDir()
	t.Setenv(models.ModelsEnv, root)
	c.Server.RerankModels = []server.RerankerConfig{{Name: "balanced"}, {Name: "mine", Dir: filepath.Join(root, "balanced")}}
	if err := c.Validate(); !errors.Is(err, backend.ErrConfig) || !strings.Contains(err.Error(), "both load") {
		t.Fatalf("one directory, two spellings: Validate = %v", err)
	}
}

// TestOpenKeepsSmallerPairWindow: a configured max_pair_tokens is the
// model's window (models.Config.MaxLength: the model cuts pairs there, so
// batch costs, usage and the 413 check all mean what it reads) when it is
// smaller than the model's; a larger one is cut to the model's; the
// server's default leaves the model's own.
func TestOpenKeepsSmallerPairWindow(t *testing.T) {
	for _, tc := range []struct{ configured, want, maxLength int }{{128, 128, 128}, {1024, fakeWindow, models.MaxSupportedLength}, {server.DefaultConfig().MaxPairTokens, fakeWindow, 0}} {
		var ev events
		newCE, newBE, cfgs := fakes(t, &ev, nil)
		cfg := backend.DefaultConfig()
		cfg.MemoryIndex, cfg.Server.MaxPairTokens = true, tc.configured
		b, err := backend.Open(cfg, newCE, newBE)
		if err != nil {
			t.Fatal(err)
		}
		if rr := b.ServerConfig().Rerankers(); len(rr) != 1 || rr[0].MaxPairTokens != tc.want {
			t.Errorf("max_pair_tokens %d on a %d-token model: served %+v, want %d", tc.configured, fakeWindow, rr, tc.want)
		}
		if got := (*cfgs)[0].MaxLength; got != tc.maxLength {
			t.Errorf("max_pair_tokens %d: the model was configured with MaxLength %d, want %d", tc.configured, got, tc.maxLength)
		}
		b.Close()
	}
}

// TestConfigFileReachesEngine: the config file's "engine" object is the
// engine.Config the index opens with (durability, snapshots, rerank
// margins), over the engine's defaults; unknown engine keys are refused.
func TestConfigFileReachesEngine(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "serve.json")
	file := `{"max_documents": 40, "engine": {"durability": {"sync": "interval", "snapshot_log_bytes": 12345}, "rerank": {"margin": 7000000}, "top_k": 7}}`
	if err := os.WriteFile(path, []byte(file), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := backend.LoadConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Server.MaxDocuments != 40 || cfg.Server.MaxInputs != server.DefaultConfig().MaxInputs {
		t.Fatalf("server config %+v", cfg.Server)
	}
	var ev events
	newCE, newBE, _ := fakes(t, &ev, nil)
	cfg.IndexDir = filepath.Join(dir, "idx")
	b, err := backend.Open(cfg, newCE, newBE)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ec, def := b.EngineConfig(), engine.DefaultConfig()
	if ec.Durability.Sync != engine.SyncInterval || ec.Durability.SnapshotLogBytes != 12345 || ec.Rerank.Margin != 7*time.Millisecond || ec.TopK != 7 {
		t.Fatalf("engine opened with %+v", ec)
	}
	if ec.Durability.SyncInterval != def.Durability.SyncInterval || ec.Candidates != def.Candidates || ec.Maintenance != def.Maintenance {
		t.Fatalf("keys missing from the file lost their defaults: %+v", ec)
	}
	for name, body := range map[string]string{
		"unknown engine key": `{"engine": {"durability": {"fsync": "always"}}}`,
		"engine not object":  `{"engine": 3}`,
	} {
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := backend.LoadConfig(path); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if err := os.WriteFile(path, []byte(`{"engine": {"durability": {"sync": "sometimes"}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if cfg, err := backend.LoadConfig(path); err != nil || !errors.Is(cfg.Validate(), engine.ErrInvalidConfig) {
		t.Fatalf("bad sync policy: load %v, Validate %v", err, cfg.Validate())
	}
}
