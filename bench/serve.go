package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hybrank/hybrank/models"
	"github.com/hybrank/hybrank/server"
)

// ServeConfig configures one `bench serve` run: Clients concurrent HTTP
// clients over loopback, each sending rerank requests of Docs documents of
// DocTokens tokens to a real server for Duration.
type ServeConfig struct {
	// Model holds the model, thread and text settings (Profile, ModelDir,
	// ModelsRoot, Provider, Threads, PoolSize, BatchTokens, DocTokens,
	// QueryTokens, Seed); its Pairs field is ignored (Docs is used).
	Model RerankConfig `json:"model"`
	// Clients is the number of concurrent clients.
	Clients int `json:"clients"`
	// Docs is the number of documents per rerank request.
	Docs int `json:"docs"`
	// Duration is how long requests are sent, after Warmup.
	Duration time.Duration `json:"duration_ns"`
	Warmup   time.Duration `json:"warmup_ns"`
	// Batch configures the server's rerank batcher (Enabled is set per run;
	// Workers bounds concurrent model calls in both modes).
	Batch server.BatchConfig `json:"batch"`
}

// DefaultServeConfig is the target shape: 16 clients × 8 documents of
// ~100 tokens on the balanced profile.
func DefaultServeConfig() ServeConfig {
	m := DefaultRerankConfig()
	m.DocTokens, m.QueryTokens, m.PeakN = 100, 8, 0
	return ServeConfig{
		Model: m, Clients: 16, Docs: 8, Duration: 10 * time.Second, Warmup: time.Second,
		Batch: server.DefaultConfig().Rerank,
	}
}

// Validate reports the first invalid field.
func (c ServeConfig) Validate() error {
	m := c.Model
	m.Pairs = max(c.Docs, 1)
	if err := m.Validate(); err != nil {
		return err
	}
	switch {
	case c.Clients < 1 || c.Docs < 1:
		return fmt.Errorf("serve bench: clients %d, docs %d must be positive", c.Clients, c.Docs)
	case c.Duration <= 0 || c.Warmup < 0:
		return fmt.Errorf("serve bench: duration %v, warmup %v", c.Duration, c.Warmup)
	}
	return nil
}

// ServeResult is one run; its JSON form is one line of `bench serve`.
type ServeResult struct {
	Route     string  `json:"route"`
	Profile   string  `json:"profile"`
	Provider  string  `json:"provider"`
	Threads   int     `json:"threads"`
	Clients   int     `json:"clients"`
	Batching  bool    `json:"batching"`
	Docs      int     `json:"docs"`
	DocTokens int     `json:"doc_tokens"`
	Requests  int     `json:"requests"`
	RPS       float64 `json:"rps"`
	PairsPerS float64 `json:"pairs_per_s"`
	P50Ms     float64 `json:"p50_ms"`
	P99Ms     float64 `json:"p99_ms"`
	// Errors counts failed requests by HTTP status ("transport" for
	// connection errors).
	Errors map[string]int `json:"errors"`
	// ModelCalls is how many ScorePairs calls the server made, and
	// PairsPerCall their mean size (how much batching merged).
	ModelCalls   int     `json:"model_calls"`
	PairsPerCall float64 `json:"pairs_per_call"`
	// LibraryPairsPerS is the in-process figure on the same model and
	// documents: Clients goroutines calling CrossEncoder.Score with Docs
	// documents each, no HTTP, no server batching.
	LibraryPairsPerS float64 `json:"library_pairs_per_s"`
	RealWeights      bool    `json:"real_weights"`
}

// Row returns r as a report row.
func (r ServeResult) Row() map[string]any {
	errs, _ := json.Marshal(r.Errors)
	return map[string]any{
		"route": r.Route, "profile": r.Profile, "provider": r.Provider, "threads": r.Threads, "clients": r.Clients,
		"batching": r.Batching, "docs": r.Docs, "doc_tokens": r.DocTokens, "requests": r.Requests,
		"rps": Round(r.RPS, 2), "pairs_per_s": Round(r.PairsPerS, 1), "p50_ms": Round(r.P50Ms, 2), "p99_ms": Round(r.P99Ms, 2),
		"errors": string(errs), "model_calls": r.ModelCalls, "pairs_per_call": Round(r.PairsPerCall, 1),
		"library_pairs_per_s": Round(r.LibraryPairsPerS, 1), "real_weights": r.RealWeights,
	}
}

// ServeColumns are the report table's columns.
var ServeColumns = []string{"route", "profile", "provider", "threads", "clients", "batching", "docs", "doc_tokens",
	"requests", "rps", "pairs_per_s", "p50_ms", "p99_ms", "errors", "pairs_per_call", "library_pairs_per_s", "real_weights"}

// countingScorer adapts a CrossEncoder to server.PairScorer and counts calls.
type countingScorer struct {
	ce    *models.CrossEncoder
	calls atomic.Int64
}

func (s *countingScorer) ScorePairs(ctx context.Context, pairs []server.Pair) ([]float32, server.Usage, error) {
	s.calls.Add(1)
	mp := make([]models.Pair, len(pairs))
	for i, p := range pairs {
		mp[i] = models.Pair{Query: p.Query, Doc: p.Doc}
	}
	scores, u, err := s.ce.ScorePairs(ctx, mp)
	return scores, server.Usage{Tokens: u.Tokens, Pairs: u.Pairs, Batches: u.Batches}, err
}

// RunServe starts a server on 127.0.0.1 over a real cross-encoder and
// measures it with cfg.Clients concurrent clients, batching on or off, then
// measures the library in-process on the same documents.
func (mb *ModelBench) RunServe(ctx context.Context, cfg ServeConfig, batching bool) (ServeResult, error) {
	if err := cfg.Validate(); err != nil {
		return ServeResult{}, err
	}
	rc := cfg.Model
	rc.Pairs = cfg.Docs
	dir, err := mb.modelDir(rc)
	if err != nil {
		return ServeResult{}, err
	}
	md, err := models.OpenModelDir(dir)
	if err != nil {
		return ServeResult{}, err
	}
	tok, err := md.Tokenizer()
	if err != nil {
		return ServeResult{}, err
	}
	// Distinct documents per client so no request repeats another's text.
	rc.Pairs = cfg.Docs * cfg.Clients
	bt, err := mb.makeText(rc, dir, tok)
	if err != nil {
		return ServeResult{}, err
	}
	mc := rc.modelConfig(dir, models.KindCrossEncoder)
	mc.MaxDocs = max(mc.MaxDocs, cfg.Docs, cfg.Batch.MaxItems)
	ce, err := models.NewCrossEncoder(mc)
	if err != nil {
		return ServeResult{}, err
	}
	defer ce.Close()
	if err := ce.Load(); err != nil {
		return ServeResult{}, err
	}
	sc := &countingScorer{ce: ce}

	scfg := server.DefaultConfig()
	scfg.Addr = "127.0.0.1:0"
	scfg.Rerank = cfg.Batch
	scfg.Rerank.Enabled = batching
	scfg.MaxInputTokens = mc.MaxLength
	srv, err := server.New(scfg, server.Backends{Scorer: sc})
	if err != nil {
		return ServeResult{}, err
	}
	ln, err := net.Listen("tcp", scfg.Addr)
	if err != nil {
		return ServeResult{}, err
	}
	sctx, stop := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(sctx, ln) }()
	defer func() { stop(); <-served }()
	url := "http://" + ln.Addr().String() + "/v1/rerank"

	bodies := make([][][]byte, cfg.Clients)
	for c := range bodies {
		docs := bt.docs[c*cfg.Docs : (c+1)*cfg.Docs]
		for _, q := range bt.queries {
			b, _ := json.Marshal(map[string]any{"query": q, "documents": docs, "return_documents": false})
			bodies[c] = append(bodies[c], b)
		}
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: cfg.Clients, MaxConnsPerHost: cfg.Clients}}
	defer client.CloseIdleConnections()

	var (
		mu     sync.Mutex
		lat    []time.Duration
		errs   = map[string]int{}
		ok     int
		wg     sync.WaitGroup
		t0     = time.Now()
		warmed = t0.Add(cfg.Warmup)
		end    = warmed.Add(cfg.Duration)
	)
	// Model calls in the window: snapshots at its start and end.
	var calls0, calls1 atomic.Int64
	go func() {
		select {
		case <-time.After(time.Until(warmed)):
			calls0.Store(sc.calls.Load())
		case <-ctx.Done():
			return
		}
		select {
		case <-time.After(time.Until(end)):
			calls1.Store(sc.calls.Load())
		case <-ctx.Done():
		}
	}()
	for c := range cfg.Clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				now := time.Now()
				if now.After(end) || ctx.Err() != nil {
					return
				}
				body := bodies[c][i%len(bodies[c])]
				start := time.Now()
				resp, err := client.Post(url, "application/json", bytes.NewReader(body))
				status := "transport"
				if err == nil {
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					status = strconv.Itoa(resp.StatusCode)
				}
				done := time.Now()
				d := done.Sub(start)
				// Counted: requests started after warm-up and finished in the window.
				if start.Before(warmed) || done.After(end) {
					continue
				}
				mu.Lock()
				if status == "200" {
					ok++
					lat = append(lat, d)
				} else {
					errs[status]++
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	elapsed := cfg.Duration.Seconds()
	if err := ctx.Err(); err != nil {
		return ServeResult{}, err
	}
	calls := int(calls1.Load() - calls0.Load())
	ls := LatencyStats(lat)
	res := ServeResult{
		Route: "/v1/rerank", Profile: rc.Profile, Provider: ce.Provider(), Threads: rc.Threads,
		Clients: cfg.Clients, Batching: batching, Docs: cfg.Docs, DocTokens: rc.DocTokens,
		Requests: ok, RPS: float64(ok) / elapsed, PairsPerS: float64(ok*cfg.Docs) / elapsed,
		P50Ms: Ms(ls.P50), P99Ms: Ms(ls.P99), Errors: errs, ModelCalls: calls,
		RealWeights: RealWeights(dir),
	}
	if calls > 0 {
		res.PairsPerCall = float64(ok*cfg.Docs) / float64(calls)
	}

	// The library on the same documents, same concurrency, no HTTP.
	var pairs atomic.Int64
	lend := time.Now().Add(min(cfg.Duration, 5*time.Second))
	lstart := time.Now()
	var lerr error
	var lerrOnce sync.Once
	for c := range cfg.Clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			docs := bt.docs[c*cfg.Docs : (c+1)*cfg.Docs]
			for i := 0; time.Now().Before(lend) && ctx.Err() == nil; i++ {
				if _, err := ce.Score(ctx, bt.queries[i%len(bt.queries)], docs); err != nil {
					lerrOnce.Do(func() { lerr = err })
					return
				}
				pairs.Add(int64(len(docs)))
			}
		}()
	}
	wg.Wait()
	if lerr != nil {
		return res, fmt.Errorf("library run: %w", lerr)
	}
	res.LibraryPairsPerS = float64(pairs.Load()) / time.Since(lstart).Seconds()
	return res, nil
}

// ServeNotes are the report's notes.
var ServeNotes = []string{
	"Each row is one run: `clients` concurrent HTTP clients on loopback send Cohere-shape `POST /v1/rerank` " +
		"requests of `docs` documents of `doc_tokens` tokens to a real server for the run's duration, with the " +
		"server's dynamic batcher on or off. `pairs_per_call` is pairs per model call (how much batching merged). " +
		"`library_pairs_per_s` is measured in the same run on the same model and documents: the same number of " +
		"goroutines calling `CrossEncoder.Score` in process (no HTTP, no cross-request batching).",
	"Models generated by bertgen have random weights (`real_weights` false): speed is representative of the " +
		"architecture, scores are not.",
	"The server runs at most `batch.workers` model calls at once (both modes); the library figure has `clients` " +
		"calls in flight. On a machine shared with other work, more runtime threads win a larger share of the CPU, " +
		"which favours the library figure; compare on a quiet machine.",
	"GOMAXPROCS at run time: " + strconv.Itoa(runtime.GOMAXPROCS(0)) + ".",
}
