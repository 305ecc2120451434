package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hybrank/hybrank/bench/measure"
	"github.com/hybrank/hybrank/bench/modeldir"
	"github.com/hybrank/hybrank/models"
	"github.com/hybrank/hybrank/models/ort"
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
		"run": "serve", "route": r.Route, "profile": r.Profile, "provider": r.Provider, "threads": r.Threads, "clients": r.Clients,
		"batching": r.Batching, "docs": r.Docs, "doc_tokens": r.DocTokens, "requests": r.Requests,
		"rps": measure.Round(r.RPS, 2), "pairs_per_s": measure.Round(r.PairsPerS, 1), "p50_ms": measure.Round(r.P50Ms, 2), "p99_ms": measure.Round(r.P99Ms, 2),
		"errors": string(errs), "model_calls": r.ModelCalls, "pairs_per_call": measure.Round(r.PairsPerCall, 1),
		"library_pairs_per_s": measure.Round(r.LibraryPairsPerS, 1), "real_weights": r.RealWeights,
	}
}

// ServeColumns are the report table's columns.
// Rows of every kind share them: "run" says which (serve, library,
// overload) and a column a kind lacks prints as "–".
var ServeColumns = []string{"run", "profile", "threads", "clients", "batching", "docs", "doc_tokens",
	"batch_size", "requests", "rps", "pairs_per_s", "p50_ms", "p99_ms", "errors", "pairs_per_call", "library_pairs_per_s",
	"rss_start_mib", "rss_peak_mib", "rss_end_mib", "verdict", "real_weights"}

// countingScorer adapts a CrossEncoder to server.PairScorer and counts calls.
type countingScorer struct {
	ce    *ort.CrossEncoder
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

// serveModel is a loaded cross-encoder and the text the serve runs send
// to it: Clients × Docs distinct documents and a few queries.
type serveModel struct {
	ce  *ort.CrossEncoder
	bt  benchText
	rc  RerankConfig
	mc  models.Config
	dir string
}

// openServeModel loads cfg's model and makes clients × cfg.Docs documents.
// The caller closes ce.
func (mb *ModelBench) openServeModel(cfg ServeConfig, clients int) (*serveModel, error) {
	rc := cfg.Model
	rc.Pairs = cfg.Docs
	dir, err := mb.modelDir(rc)
	if err != nil {
		return nil, err
	}
	md, err := models.OpenModelDir(dir)
	if err != nil {
		return nil, err
	}
	tok, err := md.Tokenizer()
	if err != nil {
		return nil, err
	}
	// Distinct documents per client so no request repeats another's text.
	rc.Pairs = cfg.Docs * clients
	bt, err := mb.makeText(rc, dir, tok)
	if err != nil {
		return nil, err
	}
	mc := rc.modelConfig(dir, models.KindCrossEncoder)
	mc.MaxDocs = max(mc.MaxDocs, cfg.Docs, cfg.Batch.MaxItems, rc.Pairs)
	ce, err := ort.NewCrossEncoder(mc)
	if err != nil {
		return nil, err
	}
	if err := ce.Load(); err != nil {
		ce.Close()
		return nil, err
	}
	return &serveModel{ce: ce, bt: bt, rc: rc, mc: mc, dir: dir}, nil
}

// bodies returns, per client, one Cohere rerank body per query over that
// client's own documents.
func (m *serveModel) bodies(clients, docs int) [][][]byte {
	out := make([][][]byte, clients)
	for c := range out {
		d := m.bt.docs[c*docs : (c+1)*docs]
		for _, q := range m.bt.queries {
			b, _ := json.Marshal(map[string]any{"query": q, "documents": d, "return_documents": false})
			out[c] = append(out[c], b)
		}
	}
	return out
}

// startServer serves scfg over sc on a fresh 127.0.0.1 port and returns
// its base URL and a stop function that shuts it down gracefully.
func startServer(scfg server.Config, sc server.PairScorer) (string, func() error, error) {
	scfg.Addr = "127.0.0.1:0"
	srv, err := server.New(scfg, server.Backends{Scorer: sc})
	if err != nil {
		return "", nil, err
	}
	ln, err := net.Listen("tcp", scfg.Addr)
	if err != nil {
		srv.Close()
		return "", nil, err
	}
	sctx, stop := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(sctx, ln) }()
	return "http://" + ln.Addr().String(), func() error { stop(); return <-served }, nil
}

// RunServe starts a server on 127.0.0.1 over a real cross-encoder and
// measures it with cfg.Clients concurrent clients, batching on or off, then
// measures the library in-process on the same documents.
func (mb *ModelBench) RunServe(ctx context.Context, cfg ServeConfig, batching bool) (ServeResult, error) {
	if err := cfg.Validate(); err != nil {
		return ServeResult{}, err
	}
	m, err := mb.openServeModel(cfg, cfg.Clients)
	if err != nil {
		return ServeResult{}, err
	}
	ce, bt, rc, mc, dir := m.ce, m.bt, m.rc, m.mc, m.dir
	defer ce.Close()
	sc := &countingScorer{ce: ce}

	scfg := server.DefaultConfig()
	scfg.Rerank = cfg.Batch
	scfg.Rerank.Enabled = batching
	scfg.MaxInputTokens = mc.MaxLength
	base, stopServer, err := startServer(scfg, sc)
	if err != nil {
		return ServeResult{}, err
	}
	defer stopServer()
	url := base + "/v1/rerank"
	bodies := m.bodies(cfg.Clients, cfg.Docs)

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
				// Counted: requests that finished in the window, wherever they
				// started. (Counting only those that also started in it would
				// drop most requests when latency is a sizeable part of the
				// window, as with batching off on a slow profile.)
				if done.Before(warmed) || done.After(end) {
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
	ls := measure.LatencyStats(lat)
	res := ServeResult{
		Route: "/v1/rerank", Profile: rc.Profile, Provider: ce.Provider(), Threads: rc.Threads,
		Clients: cfg.Clients, Batching: batching, Docs: cfg.Docs, DocTokens: rc.DocTokens,
		Requests: ok, RPS: float64(ok) / elapsed, PairsPerS: float64(ok*cfg.Docs) / elapsed,
		P50Ms: measure.Ms(ls.P50), P99Ms: measure.Ms(ls.P99), Errors: errs, ModelCalls: calls,
		RealWeights: modeldir.RealWeights(dir),
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

// CurvePoint is the library's throughput at one batch size: calls of
// CrossEncoder.ScorePairs with BatchSize pairs, one at a time, in process.
type CurvePoint struct {
	BatchSize int     `json:"batch_size"`
	Calls     int     `json:"calls"`
	PairsPerS float64 `json:"pairs_per_s"`
	MsPerCall float64 `json:"ms_per_call"`
}

// Row returns p as a report row of the serve report.
func (p CurvePoint) Row(profile string, threads, docTokens int, real bool) map[string]any {
	return map[string]any{
		"run": "library", "profile": profile, "threads": threads, "doc_tokens": docTokens, "batch_size": p.BatchSize,
		"requests": p.Calls, "pairs_per_s": measure.Round(p.PairsPerS, 1), "p50_ms": measure.Round(p.MsPerCall, 1), "real_weights": real,
	}
}

// DefaultCurveSizes are the batch sizes of RunServeCurve.
var DefaultCurveSizes = []int{1, 2, 4, 8, 16, 32, 64}

// RunServeCurve measures the library's pairs/s at each batch size on the
// documents the serve runs send (cfg.Clients × cfg.Docs of them): after one
// warm-up call per size, calls repeat until minTime has passed and at least
// two were made. This is what dynamic batching can gain at most: the server
// with batching on turns 8-pair requests into calls of up to
// cfg.Batch.MaxItems pairs; with batching off every call has cfg.Docs.
func (mb *ModelBench) RunServeCurve(ctx context.Context, cfg ServeConfig, sizes []int, minTime time.Duration) ([]CurvePoint, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if len(sizes) == 0 || minTime <= 0 {
		return nil, fmt.Errorf("serve curve: need batch sizes and a positive min time")
	}
	m, err := mb.openServeModel(cfg, cfg.Clients)
	if err != nil {
		return nil, err
	}
	defer m.ce.Close()
	docs := m.bt.docs
	var out []CurvePoint
	for _, n := range sizes {
		if n < 1 {
			return nil, fmt.Errorf("serve curve: batch size %d", n)
		}
		pairs := make([]models.Pair, n)
		call := func(k int) error {
			q := m.bt.queries[k%len(m.bt.queries)]
			for i := range pairs {
				pairs[i] = models.Pair{Query: q, Doc: docs[(k*n+i)%len(docs)]}
			}
			_, _, err := m.ce.ScorePairs(ctx, pairs)
			return err
		}
		if err := call(0); err != nil { // warm-up: shapes, arena
			return nil, err
		}
		start, calls := time.Now(), 0
		for calls < 2 || time.Since(start) < minTime {
			if err := call(calls + 1); err != nil {
				return nil, err
			}
			calls++
		}
		el := time.Since(start)
		out = append(out, CurvePoint{BatchSize: n, Calls: calls,
			PairsPerS: float64(calls*n) / el.Seconds(), MsPerCall: measure.Ms(el) / float64(calls)})
	}
	return out, nil
}

// BestCurve returns the point with the most pairs/s (zero if none).
func BestCurve(pts []CurvePoint) CurvePoint {
	var best CurvePoint
	for _, p := range pts {
		if p.PairsPerS > best.PairsPerS {
			best = p
		}
	}
	return best
}

// OverloadConfig configures RunOverload: many clients against a server
// with deliberately small limits, so most requests are refused.
type OverloadConfig struct {
	// Serve gives the model, documents per request and batcher; its Clients
	// and Duration are replaced by the fields below.
	Serve ServeConfig `json:"serve"`
	// Clients is the number of concurrent clients.
	Clients int `json:"clients"`
	// Duration bounds the run; each client also stops after
	// MaxRequestsPerClient requests.
	Duration             time.Duration `json:"duration_ns"`
	MaxRequestsPerClient int           `json:"max_requests_per_client"`
	// MaxConcurrentRequests and QueueItems are the server's small limits
	// (server.Config.MaxConcurrentRequests, Rerank.MaxQueueItems).
	MaxConcurrentRequests int `json:"max_concurrent_requests"`
	QueueItems            int `json:"queue_items"`
	// Backoff is a client's pause after a 429 (shorter than Retry-After on
	// purpose, to keep the pressure on).
	Backoff time.Duration `json:"backoff_ns"`
	// SampleEvery is the resident-memory sampling period.
	SampleEvery time.Duration `json:"sample_every_ns"`
}

// DefaultOverloadConfig is 64 clients for 60 s against 16 requests in
// flight and 32 queued pairs.
func DefaultOverloadConfig() OverloadConfig {
	return OverloadConfig{
		Serve: DefaultServeConfig(), Clients: 64, Duration: 60 * time.Second, MaxRequestsPerClient: 100000,
		MaxConcurrentRequests: 16, QueueItems: 32, Backoff: 10 * time.Millisecond, SampleEvery: 100 * time.Millisecond,
	}
}

// Validate reports the first invalid field.
func (c OverloadConfig) Validate() error {
	s := c.Serve
	s.Clients, s.Duration = max(c.Clients, 1), max(c.Duration, 1)
	if err := s.Validate(); err != nil {
		return err
	}
	switch {
	case c.Clients < 1 || c.Duration <= 0 || c.MaxRequestsPerClient < 1:
		return fmt.Errorf("overload bench: clients %d, duration %v, max requests %d must be positive", c.Clients, c.Duration, c.MaxRequestsPerClient)
	case c.MaxConcurrentRequests < 1 || c.QueueItems < 1:
		return fmt.Errorf("overload bench: max concurrent %d, queue items %d must be positive", c.MaxConcurrentRequests, c.QueueItems)
	case c.Backoff < 0 || c.SampleEvery <= 0:
		return fmt.Errorf("overload bench: backoff %v, sample period %v", c.Backoff, c.SampleEvery)
	}
	return nil
}

// OverloadResult is one overload run.
type OverloadResult struct {
	Profile  string `json:"profile"`
	Threads  int    `json:"threads"`
	Clients  int    `json:"clients"`
	Batching bool   `json:"batching"`
	Docs     int    `json:"docs"`
	// Statuses counts answers by HTTP status ("transport" for connection
	// errors); only 200 and 429 pass.
	Statuses map[string]int `json:"statuses"`
	// NoRetryAfter counts 429s without a Retry-After header.
	NoRetryAfter int     `json:"no_retry_after"`
	Seconds      float64 `json:"seconds"`
	// OKPerS is 200s per second; P50Ms and P99Ms are over the 200s,
	// RejectP99Ms over the 429s.
	OKPerS      float64 `json:"ok_per_s"`
	P50Ms       float64 `json:"p50_ms"`
	P99Ms       float64 `json:"p99_ms"`
	RejectP99Ms float64 `json:"reject_p99_ms"`
	// Resident memory of this process (which hosts the server, the model
	// and the clients) in MiB: before the clients start, the peak over the
	// first and second halves of the run, and after it.
	RSSStartMiB         float64 `json:"rss_start_mib"`
	RSSPeakFirstHalfMiB float64 `json:"rss_peak_first_half_mib"`
	RSSPeakMiB          float64 `json:"rss_peak_mib"`
	RSSEndMiB           float64 `json:"rss_end_mib"`
	// Healthy is true when /healthz and /readyz answered 200 and a normal
	// rerank succeeded after the run; HealthDetail says what failed.
	Healthy      bool   `json:"healthy"`
	HealthDetail string `json:"health_detail,omitempty"`
	// Failures lists every failed check; empty means PASS.
	Failures    []string `json:"failures"`
	RealWeights bool     `json:"real_weights"`
}

// Pass reports whether every check held.
func (r OverloadResult) Pass() bool { return len(r.Failures) == 0 }

// Row returns r as a report row of the serve report.
func (r OverloadResult) Row() map[string]any {
	st, _ := json.Marshal(r.Statuses)
	verdict := "PASS"
	if !r.Pass() {
		verdict = "FAIL: " + strings.Join(r.Failures, "; ")
	}
	return map[string]any{
		"run": "overload", "profile": r.Profile, "threads": r.Threads, "clients": r.Clients, "batching": r.Batching,
		"docs": r.Docs, "requests": r.Statuses["200"], "rps": measure.Round(r.OKPerS, 2), "pairs_per_s": measure.Round(r.OKPerS*float64(r.Docs), 1),
		"p50_ms": measure.Round(r.P50Ms, 1), "p99_ms": measure.Round(r.P99Ms, 1), "errors": string(st),
		"rss_start_mib": measure.Round(r.RSSStartMiB, 1), "rss_peak_mib": measure.Round(r.RSSPeakMiB, 1), "rss_end_mib": measure.Round(r.RSSEndMiB, 1),
		"verdict": verdict, "real_weights": r.RealWeights,
	}
}

// residentMiB is this process's resident set in MiB: /proc/self/statm on
// Linux, else the Go runtime's obtained memory (which misses native
// allocations such as the runtime's).
func residentMiB() float64 {
	if b, err := os.ReadFile("/proc/self/statm"); err == nil {
		if f := strings.Fields(string(b)); len(f) > 1 {
			if pages, err := strconv.ParseInt(f[1], 10, 64); err == nil {
				return float64(pages*int64(os.Getpagesize())) / (1 << 20)
			}
		}
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return float64(ms.Sys) / (1 << 20)
}

// RunOverload runs cfg.Clients clients for cfg.Duration against a server on
// 127.0.0.1 with small limits, batching on or off, sampling resident memory,
// then checks the server is healthy. Checks (Failures): only 200 and 429,
// every 429 with Retry-After, some 200s, healthy afterwards, and memory
// bounded: the second half's peak at most 10 % + 32 MiB over the first
// half's (no growth once the queues are full).
func (mb *ModelBench) RunOverload(ctx context.Context, cfg OverloadConfig, batching bool) (OverloadResult, error) {
	if err := cfg.Validate(); err != nil {
		return OverloadResult{}, err
	}
	m, err := mb.openServeModel(cfg.Serve, cfg.Clients)
	if err != nil {
		return OverloadResult{}, err
	}
	defer m.ce.Close()
	docs := cfg.Serve.Docs
	scfg := server.DefaultConfig()
	scfg.Rerank = cfg.Serve.Batch
	scfg.Rerank.Enabled = batching
	scfg.Rerank.MaxQueueItems = cfg.QueueItems
	scfg.MaxConcurrentRequests = cfg.MaxConcurrentRequests
	scfg.MaxInputTokens = m.mc.MaxLength
	base, stopServer, err := startServer(scfg, &countingScorer{ce: m.ce})
	if err != nil {
		return OverloadResult{}, err
	}
	defer stopServer()
	bodies := m.bodies(cfg.Clients, docs)
	tr := &http.Transport{MaxIdleConnsPerHost: cfg.Clients, MaxConnsPerHost: cfg.Clients}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 2 * time.Duration(scfg.RequestTimeout)}

	res := OverloadResult{Profile: m.rc.Profile, Threads: m.rc.Threads, Clients: cfg.Clients, Batching: batching,
		Docs: docs, Statuses: map[string]int{}, RealWeights: modeldir.RealWeights(m.dir)}
	runtime.GC()
	res.RSSStartMiB = residentMiB()
	t0 := time.Now()
	end := t0.Add(cfg.Duration)
	half := t0.Add(cfg.Duration / 2)

	// Memory sampler.
	samplerDone := make(chan struct{})
	stopSampler := make(chan struct{})
	go func() {
		defer close(samplerDone)
		tick := time.NewTicker(cfg.SampleEvery)
		defer tick.Stop()
		for {
			select {
			case <-stopSampler:
				return
			case now := <-tick.C:
				r := residentMiB()
				if now.Before(half) {
					res.RSSPeakFirstHalfMiB = max(res.RSSPeakFirstHalfMiB, r)
				}
				res.RSSPeakMiB = max(res.RSSPeakMiB, r)
			}
		}
	}()

	var (
		mu      sync.Mutex
		okLat   []time.Duration
		rejLat  []time.Duration
		noRetry int
		wg      sync.WaitGroup
	)
	for c := range cfg.Clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < cfg.MaxRequestsPerClient && time.Now().Before(end) && ctx.Err() == nil; i++ {
				start := time.Now()
				resp, err := client.Post(base+"/v1/rerank", "application/json", bytes.NewReader(bodies[c][i%len(bodies[c])]))
				status, retry := "transport", ""
				if err == nil {
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					status, retry = strconv.Itoa(resp.StatusCode), resp.Header.Get("Retry-After")
				}
				d := time.Since(start)
				mu.Lock()
				res.Statuses[status]++
				switch status {
				case "200":
					okLat = append(okLat, d)
				case "429":
					rejLat = append(rejLat, d)
					if retry == "" {
						noRetry++
					}
				}
				mu.Unlock()
				if status != "200" && cfg.Backoff > 0 {
					time.Sleep(cfg.Backoff)
				}
			}
		}()
	}
	wg.Wait()
	res.Seconds = time.Since(t0).Seconds()
	close(stopSampler)
	<-samplerDone
	if err := ctx.Err(); err != nil {
		return res, err
	}
	res.NoRetryAfter = noRetry
	ls, rs := measure.LatencyStats(okLat), measure.LatencyStats(rejLat)
	res.OKPerS = float64(len(okLat)) / res.Seconds
	res.P50Ms, res.P99Ms, res.RejectP99Ms = measure.Ms(ls.P50), measure.Ms(ls.P99), measure.Ms(rs.P99)

	// Healthy afterwards.
	var bad []string
	for _, path := range []string{"/healthz", "/readyz"} {
		resp, err := client.Get(base + path)
		if err != nil {
			bad = append(bad, path+": "+err.Error())
			continue
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			bad = append(bad, fmt.Sprintf("%s: %d", path, resp.StatusCode))
		}
	}
	resp, err := client.Post(base+"/v1/rerank", "application/json", bytes.NewReader(bodies[0][0]))
	if err != nil {
		bad = append(bad, "rerank: "+err.Error())
	} else {
		var rr struct {
			Results []struct {
				Index int `json:"index"`
			} `json:"results"`
		}
		derr := json.NewDecoder(resp.Body).Decode(&rr)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || derr != nil || len(rr.Results) != docs {
			bad = append(bad, fmt.Sprintf("rerank: status %d, %d results, decode %v", resp.StatusCode, len(rr.Results), derr))
		}
	}
	res.Healthy = len(bad) == 0
	res.HealthDetail = strings.Join(bad, "; ")
	runtime.GC()
	res.RSSEndMiB = residentMiB()

	for st, n := range res.Statuses {
		if st != "200" && st != "429" {
			res.Failures = append(res.Failures, fmt.Sprintf("%d answers with status %s", n, st))
		}
	}
	if res.Statuses["200"] == 0 {
		res.Failures = append(res.Failures, "no request succeeded")
	}
	if noRetry > 0 {
		res.Failures = append(res.Failures, fmt.Sprintf("%d 429s without Retry-After", noRetry))
	}
	if !res.Healthy {
		res.Failures = append(res.Failures, "unhealthy afterwards: "+res.HealthDetail)
	}
	if lim := res.RSSPeakFirstHalfMiB*1.1 + 32; res.RSSPeakMiB > lim {
		res.Failures = append(res.Failures, fmt.Sprintf("resident memory still growing: peak %.0f MiB > %.0f MiB (first half's peak + 10%% + 32 MiB)", res.RSSPeakMiB, lim))
	}
	sort.Strings(res.Failures)
	return res, nil
}

// ServeNotes are the report's notes.
var ServeNotes = []string{
	"Rows by `run`. **serve**: `clients` concurrent HTTP clients on loopback send Cohere-shape `POST /v1/rerank` " +
		"requests of `docs` documents of `doc_tokens` tokens to a real in-process server for the run's duration, with the " +
		"server's dynamic batcher on or off. `pairs_per_call` is pairs per model call (how much batching merged). " +
		"`library_pairs_per_s` is measured in the same run on the same documents: `clients` goroutines calling " +
		"`CrossEncoder.Score` with `docs` documents each (no HTTP, no cross-request batching). " +
		"**library**: the per-batch-size curve, one `CrossEncoder.ScorePairs` call of `batch_size` pairs at a time " +
		"on the same documents (`requests` = calls, `p50_ms` = mean ms per call); its best `pairs_per_s` is the " +
		"reference of the 85 % check. Batching off runs calls of `docs` pairs, batching on calls of up to " +
		"`batch.max_items`, so the curve's best over its value at `docs` bounds what batching can gain. " +
		"**overload**: many clients against a server with small limits (see `overload` in the config); `errors` " +
		"counts every status, `requests`/`rps`/`p50_ms`/`p99_ms` are over the 200s, `rss_*_mib` is the resident " +
		"memory of the whole process (server, model and clients) before, at peak during, and after the run; " +
		"`verdict` is PASS when only 200 and 429 (with Retry-After) were answered, /healthz, /readyz and a normal " +
		"rerank succeed afterwards, and the second half's RSS peak is within 10 % + 32 MiB of the first half's.",
	"Models generated by bertgen have random weights (`real_weights` false): speed is representative of the " +
		"architecture, scores are not.",
	"The server runs at most `batch.workers` model calls at once (both modes; default 1) on a model with " +
		"`threads` intra-op threads (default one per core) and one runtime session: one call already uses every " +
		"core, so a second concurrent call only adds contention (and, with spinning intra-op threads, busy-waiting). " +
		"The library figures use the same single session. On a machine shared with other work every figure here " +
		"is noisy; compare on a quiet machine.",
	"GOMAXPROCS at run time: " + strconv.Itoa(runtime.GOMAXPROCS(0)) + ".",
}
