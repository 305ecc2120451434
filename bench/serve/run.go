package serve

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hybrank/hybrank/bench/loadgen"
	"github.com/hybrank/hybrank/bench/measure"
	"github.com/hybrank/hybrank/bench/modeldir"
	"github.com/hybrank/hybrank/bench/report"
	"github.com/hybrank/hybrank/bench/throughput"
	"github.com/hybrank/hybrank/models"
	"github.com/hybrank/hybrank/models/ort"
	"github.com/hybrank/hybrank/models/queue"
	"github.com/hybrank/hybrank/server"
)

// Run loads cfg's cross-encoder once, measures a server over it for each
// batching mode, the library's curve, and the overload run when asked,
// then checks the targets.
func Run(ctx context.Context, cfg Config) (Result, error) {
	var res Result
	if err := cfg.Validate(); err != nil {
		return res, err
	}
	r := modeldir.NewResolver(cfg.Model.Models)
	defer r.Close()
	clients := cfg.Clients
	if cfg.Overload != nil {
		clients = max(clients, cfg.Overload.Clients)
	}
	m, err := openModel(r, cfg, clients)
	if err != nil {
		return res, err
	}
	defer m.ce.Close()
	for _, on := range cfg.Batching {
		row, err := runServe(ctx, cfg, m, on)
		if err != nil {
			return res, err
		}
		res.Serve = append(res.Serve, row)
		report.Log(cfg.Log, row)
	}
	if len(cfg.CurveSizes) > 0 {
		if res.Curve, err = runCurve(ctx, cfg, m); err != nil {
			return res, err
		}
		for _, p := range res.Curve {
			report.Log(cfg.Log, p)
		}
	}
	res.Checks = cfg.Targets.Check(res, cfg.Docs)
	if cfg.Search != nil {
		rows, checks, err := runSearch(ctx, cfg, *cfg.Search, m)
		res.Search = rows
		if err != nil {
			return res, fmt.Errorf("search run: %w", err)
		}
		res.Checks = append(res.Checks, checks...)
	}
	if cfg.Overload != nil {
		row, err := runOverload(ctx, cfg, *cfg.Overload, m)
		if err != nil {
			return res, err
		}
		res.Overload = &row
		res.Checks = append(res.Checks, row.Checks...)
		report.Log(cfg.Log, row)
	}
	return res, nil
}

// model is the loaded cross-encoder and the text the runs send to it:
// clients × Docs distinct documents (so no request repeats another's text)
// and a few queries.
type model struct {
	ce   *ort.CrossEncoder
	text throughput.Text
	mc   models.Config
	real bool
}

// openModel loads cfg's model and makes clients × cfg.Docs documents. The
// caller closes m.ce.
func openModel(r *modeldir.Resolver, cfg Config, clients int) (*model, error) {
	s := cfg.Model
	dir, err := r.Dir(s.Profile, s.ModelDir)
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
	s.Pairs = cfg.Docs * clients
	text, err := throughput.MakeText(s, tok)
	if err != nil {
		return nil, err
	}
	mc := s.ModelConfig(dir, models.KindCrossEncoder)
	mc.MaxDocs = max(mc.MaxDocs, cfg.Docs, cfg.Batch.MaxItems, s.Pairs)
	ce, err := ort.NewCrossEncoder(mc)
	if err != nil {
		return nil, err
	}
	if err := ce.Load(); err != nil {
		return nil, joinClose(err, ce)
	}
	return &model{ce: ce, text: text, mc: mc, real: modeldir.RealWeights(dir)}, nil
}

func joinClose(err error, ce *ort.CrossEncoder) error {
	if cerr := ce.Close(); cerr != nil {
		return fmt.Errorf("%w (close: %v)", err, cerr)
	}
	return err
}

// body returns request seq of client c: a Cohere rerank body over that
// client's own docs documents, cycling through the queries.
func (m *model) body(docs int) func(c, seq int) []byte {
	bodies := make([][][]byte, len(m.text.Docs)/docs)
	for c := range bodies {
		d := m.text.Docs[c*docs : (c+1)*docs]
		for _, q := range m.text.Queries {
			b, _ := json.Marshal(map[string]any{"query": q, "documents": d, "return_documents": false})
			bodies[c] = append(bodies[c], b)
		}
	}
	return func(c, seq int) []byte { return bodies[c][seq%len(bodies[c])] }
}

// startServer serves scfg over sc, behind its queue (scfg.Rerank), on a
// fresh 127.0.0.1 port and returns its base URL and a stop function that
// shuts it down gracefully.
func startServer(scfg server.Config, sc models.Reranker) (string, func() error, error) {
	scfg.Addr = "127.0.0.1:0"
	q, err := queue.NewReranker(sc, scfg.Rerank)
	if err != nil {
		return "", nil, err
	}
	srv, err := server.New(scfg, server.Services{
		Rerankers: map[string]models.Reranker{scfg.RerankModel: q},
		Queues:    map[string]server.QueueStats{scfg.RerankModel: q},
	})
	if err != nil {
		q.Close()
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
	return "http://" + ln.Addr().String(), func() error { stop(); err := <-served; q.Close(); return err }, nil
}

// runServe measures cfg.Clients clients against a server with batching on
// or off, then the library in process on the same documents.
func runServe(ctx context.Context, cfg Config, m *model, batching bool) (ServeRow, error) {
	sc := &countingScorer{CrossEncoder: m.ce}
	scfg := server.DefaultConfig()
	scfg.Rerank = cfg.Batch
	scfg.Rerank.Enabled = batching
	scfg.MaxInputTokens, scfg.MaxPairTokens = m.mc.MaxLength, m.mc.MaxLength // batch costs cap at the window
	base, stopServer, err := startServer(scfg, sc)
	if err != nil {
		return ServeRow{}, err
	}
	defer stopServer()
	// Model calls in the window: snapshots as it opens and closes.
	var calls [2]int64
	lg, err := loadgen.Run(ctx, loadgen.Config{
		URL: base + "/v1/rerank", Clients: cfg.Clients, Warmup: cfg.Warmup, Duration: cfg.Duration,
		Body: m.body(cfg.Docs),
		OnWindow: func(open bool) {
			if open {
				calls[0] = sc.calls.Load()
			} else {
				calls[1] = sc.calls.Load()
			}
		},
	})
	if err != nil {
		return ServeRow{}, err
	}
	ok, elapsed := lg.Count(http.StatusOK), cfg.Duration.Seconds()
	ls := measure.LatencyStats(lg.Latency(http.StatusOK))
	errs := failures(lg)
	s := cfg.Model
	row := ServeRow{
		Run: "serve", Route: "/v1/rerank", Profile: s.Profile, Provider: m.ce.Provider(), Threads: s.Threads,
		Clients: cfg.Clients, Batching: batching, Docs: cfg.Docs, DocTokens: s.DocTokens,
		Requests: ok, RPS: measure.Round(float64(ok)/elapsed, 2), PairsPerS: measure.Round(float64(ok*cfg.Docs)/elapsed, 1),
		P50Ms: measure.Round(measure.Ms(ls.P50), 2), P99Ms: measure.Round(measure.Ms(ls.P99), 2), Errors: errs,
		ModelCalls: int(calls[1] - calls[0]), RealWeights: m.real,
	}
	if row.ModelCalls > 0 {
		row.PairsPerCall = measure.Round(float64(ok*cfg.Docs)/float64(row.ModelCalls), 1)
	}
	lib, err := libraryRate(ctx, m, cfg.Clients, cfg.Docs, min(cfg.Duration, 5*time.Second))
	if err != nil {
		return row, fmt.Errorf("library run: %w", err)
	}
	row.LibraryPairsPerS = measure.Round(lib, 1)
	return row, nil
}

// failures counts lg's answers other than 200 by status.
func failures(lg loadgen.Result) map[string]int {
	errs := map[string]int{}
	for st, n := range lg.Statuses {
		if st != "200" {
			errs[st] = n
		}
	}
	return errs
}

// libraryRate is the library's pairs/s on the same documents at the same
// concurrency, without HTTP: clients goroutines calling Score with their
// docs documents for d.
func libraryRate(ctx context.Context, m *model, clients, docs int, d time.Duration) (float64, error) {
	var (
		pairs atomic.Int64
		wg    sync.WaitGroup
		once  sync.Once
		lerr  error
	)
	start := time.Now()
	end := start.Add(d)
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			mine := m.text.Docs[c*docs : (c+1)*docs]
			for i := 0; time.Now().Before(end) && ctx.Err() == nil; i++ {
				if _, err := m.ce.Score(ctx, m.text.Queries[i%len(m.text.Queries)], mine); err != nil {
					once.Do(func() { lerr = err })
					return
				}
				pairs.Add(int64(len(mine)))
			}
		}()
	}
	wg.Wait()
	if lerr != nil {
		return 0, lerr
	}
	return float64(pairs.Load()) / time.Since(start).Seconds(), ctx.Err()
}

// runCurve measures the library's pairs/s at each batch size on the
// documents the serve runs send (cfg.Clients × cfg.Docs of them): after
// one warm-up call per size, calls repeat until CurveMinTime has passed
// and at least two were made. This is what dynamic batching can gain at
// most: the server with batching on turns Docs-pair requests into calls of
// up to Batch.MaxItems pairs; with batching off every call has Docs.
func runCurve(ctx context.Context, cfg Config, m *model) ([]CurvePoint, error) {
	docs := m.text.Docs[:cfg.Clients*cfg.Docs]
	var out []CurvePoint
	for _, n := range cfg.CurveSizes {
		pairs := make([]models.Pair, n)
		call := func(k int) error {
			q := m.text.Queries[k%len(m.text.Queries)]
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
		for calls < 2 || time.Since(start) < cfg.CurveMinTime {
			if err := call(calls + 1); err != nil {
				return nil, err
			}
			calls++
		}
		el := time.Since(start)
		out = append(out, CurvePoint{Run: "library", Profile: cfg.Model.Profile, Threads: cfg.Model.Threads, DocTokens: cfg.Model.DocTokens,
			BatchSize: n, Calls: calls, PairsPerS: measure.Round(float64(calls*n)/el.Seconds(), 1),
			MsPerCall: measure.Round(measure.Ms(el)/float64(calls), 1), RealWeights: m.real})
	}
	return out, nil
}
