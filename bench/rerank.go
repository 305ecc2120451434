package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/hybrank/hybrank/bench/eval"
	"github.com/hybrank/hybrank/bench/measure"
	"github.com/hybrank/hybrank/bench/modeldir"
	"github.com/hybrank/hybrank/bench/report"
	"github.com/hybrank/hybrank/models"
	"github.com/hybrank/hybrank/models/bertgen"
	"github.com/hybrank/hybrank/models/onnxpb"
	"github.com/hybrank/hybrank/models/ort"
	"github.com/hybrank/hybrank/models/wordpiece"
	"github.com/hybrank/hybrank/onnx"
)

// RerankConfig configures one cross-encoder throughput measurement
// (RunRerank). The same fields drive BiEncoder runs (RunEmbed), where a
// "pair" is one text.
type RerankConfig struct {
	// Profile is the model profile (fast, balanced, accurate; embed for
	// RunEmbed).
	Profile string `json:"profile"`
	// ModelDir is the model directory; "" means ModelsRoot/Profile,
	// generated there by bertgen when missing.
	ModelDir string `json:"model_dir,omitempty"`
	// ModelsRoot holds generated model directories; "" means a temporary
	// folder removed by Close.
	ModelsRoot string `json:"models_root,omitempty"`
	// VocabTxt and TokenizerJSON are the assets copied into generated
	// directories.
	VocabTxt      string `json:"-"`
	TokenizerJSON string `json:"-"`

	// Provider, Threads (intra-op), PoolSize, GraphOptimization and
	// DisableArena are passed to the model (see models.Config).
	Provider          string `json:"provider"`
	Threads           int    `json:"threads"`
	PoolSize          int    `json:"pool_size"`
	GraphOptimization string `json:"graph_optimization,omitempty"`
	DisableArena      bool   `json:"disable_arena,omitempty"`
	DisableSpinning   bool   `json:"disable_spinning,omitempty"`

	// BatchTokens is models.Config.MaxBatchTokens.
	BatchTokens int `json:"batch_tokens"`
	// Pairs is the number of documents scored per call.
	Pairs int `json:"pairs"`
	// DocTokens is each document's length in word pieces (no specials).
	DocTokens int `json:"doc_tokens"`
	// QueryTokens is the query's length in word pieces (synthetic text).
	QueryTokens int `json:"query_tokens"`
	// Data is a BEIR dataset folder to take queries and documents from
	// (documents cut to DocTokens); "" samples vocabulary words.
	Data string `json:"data,omitempty"`
	// MinTime and MinCalls bound the measurement: calls repeat until both
	// are reached (after one warm-up call).
	MinTime  time.Duration `json:"min_time_ns"`
	MinCalls int           `json:"min_calls"`
	// PeakN is the MatMul size for the peak measurement (0 skips it).
	PeakN int `json:"peak_n"`
	// Seed makes the synthetic text reproducible.
	Seed uint64 `json:"seed"`
}

// DefaultRerankConfig returns a balanced-profile run: 64 pairs of 128
// document tokens per call, batches of 16,384 tokens, one thread per core.
func DefaultRerankConfig() RerankConfig {
	return RerankConfig{
		Profile: models.ProfileBalanced, Provider: "cpu", Threads: runtime.NumCPU(), PoolSize: 1,
		BatchTokens: models.DefaultMaxBatchTokens, Pairs: 64, DocTokens: 128, QueryTokens: 8,
		MinTime: 3 * time.Second, MinCalls: 2, PeakN: 2048, Seed: 1,
	}
}

// Validate reports the first invalid field.
func (c RerankConfig) Validate() error {
	switch {
	case c.Profile == "" && c.ModelDir == "":
		return fmt.Errorf("rerank bench: need a profile or a model directory")
	case c.Threads < 0 || c.PoolSize < 1:
		return fmt.Errorf("rerank bench: threads %d, pool %d", c.Threads, c.PoolSize)
	case c.Pairs < 1 || c.DocTokens < 1 || c.QueryTokens < 1:
		return fmt.Errorf("rerank bench: pairs %d, doc tokens %d, query tokens %d must be positive", c.Pairs, c.DocTokens, c.QueryTokens)
	case c.QueryTokens+c.DocTokens+3 > models.MaxSupportedLength:
		return fmt.Errorf("rerank bench: query %d + doc %d tokens + 3 specials > %d", c.QueryTokens, c.DocTokens, models.MaxSupportedLength)
	case c.MinCalls < 1 || c.MinTime < 0:
		return fmt.Errorf("rerank bench: min calls %d, min time %v", c.MinCalls, c.MinTime)
	case c.PeakN < 0:
		return fmt.Errorf("rerank bench: peak n %d", c.PeakN)
	}
	return nil
}

// RerankResult is one measurement; its JSON form is one line of
// `bench rerank --json`.
type RerankResult struct {
	Profile     string `json:"profile"`
	Kind        string `json:"kind"`
	Provider    string `json:"provider"`
	Threads     int    `json:"threads"`
	PoolSize    int    `json:"pool_size"`
	GraphOpt    string `json:"graph_optimization"`
	Arena       bool   `json:"arena"`
	Spinning    bool   `json:"spinning"`
	BatchTokens int    `json:"batch_tokens"`
	// BatchPairs is how many sequences fit one batch (BatchTokens / SeqLen).
	BatchPairs int `json:"batch_pairs"`
	DocTokens  int `json:"doc_tokens"`
	// SeqLen is the mean real sequence length, special tokens included.
	SeqLen     float64 `json:"seq_len"`
	Pairs      int     `json:"pairs"`
	Calls      int     `json:"calls"`
	PairsPerS  float64 `json:"pairs_per_s"`
	TokensPerS float64 `json:"tokens_per_s"`
	P50Ms      float64 `json:"p50_ms"`
	P99Ms      float64 `json:"p99_ms"`
	GFLOPs     float64 `json:"gflops"`
	// GFLOPsBest is the fastest call's rate: less sensitive to other load.
	GFLOPsBest  float64 `json:"gflops_best"`
	PeakGFLOPs  float64 `json:"peak_gflops"`
	Efficiency  float64 `json:"efficiency"` // GFLOPs / PeakGFLOPs
	RealWeights bool    `json:"real_weights"`
	Data        string  `json:"data"`
}

// Row returns r as a report row.
func (r RerankResult) Row() map[string]any {
	return map[string]any{
		"profile": r.Profile, "kind": r.Kind, "provider": r.Provider, "threads": r.Threads, "pool_size": r.PoolSize,
		"graph_optimization": r.GraphOpt, "arena": r.Arena, "spinning": r.Spinning, "batch_tokens": r.BatchTokens, "batch_pairs": r.BatchPairs,
		"doc_tokens": r.DocTokens, "seq_len": measure.Round(r.SeqLen, 1), "pairs": r.Pairs, "calls": r.Calls,
		"pairs_per_s": measure.Round(r.PairsPerS, 2), "tokens_per_s": measure.Round(r.TokensPerS, 0),
		"p50_ms": measure.Round(r.P50Ms, 2), "p99_ms": measure.Round(r.P99Ms, 2),
		"gflops": measure.Round(r.GFLOPs, 2), "gflops_best": measure.Round(r.GFLOPsBest, 2), "peak_gflops": measure.Round(r.PeakGFLOPs, 2), "efficiency": measure.Round(r.Efficiency, 3),
		"real_weights": r.RealWeights, "data": r.Data,
	}
}

// RerankColumns are the report table's columns.
var RerankColumns = []string{"profile", "provider", "threads", "pool_size", "batch_tokens", "batch_pairs", "doc_tokens",
	"seq_len", "pairs_per_s", "tokens_per_s", "p50_ms", "p99_ms", "gflops", "gflops_best", "peak_gflops", "efficiency", "real_weights"}

// ModelBench prepares models and inputs for repeated runs and caches what
// does not change between them (generated directories, vocabulary words).
// It is not safe for concurrent use.
type ModelBench struct {
	tmpRoot string
	words   map[string][]string
}

// NewModelBench returns an empty ModelBench; Close removes what it
// generated in temporary folders.
func NewModelBench() *ModelBench {
	return &ModelBench{words: map[string][]string{}}
}

// Close removes the temporary model folder, if any.
func (mb *ModelBench) Close() error {
	if mb.tmpRoot == "" {
		return nil
	}
	err := os.RemoveAll(mb.tmpRoot)
	mb.tmpRoot = ""
	return err
}

// modelDir returns cfg's model directory, generating it when needed.
func (mb *ModelBench) modelDir(cfg RerankConfig) (string, error) {
	if cfg.ModelDir != "" {
		return cfg.ModelDir, nil
	}
	root := cfg.ModelsRoot
	if root == "" {
		if env := os.Getenv(models.ModelsEnv); env != "" {
			root = env
		} else {
			if mb.tmpRoot == "" {
				d, err := os.MkdirTemp("", "hybrank-bench-models-")
				if err != nil {
					return "", err
				}
				mb.tmpRoot = d
			}
			root = mb.tmpRoot
		}
	}
	if cfg.VocabTxt == "" || cfg.TokenizerJSON == "" {
		if _, err := models.OpenModelDir(filepath.Join(root, cfg.Profile)); err == nil {
			return filepath.Join(root, cfg.Profile), nil
		}
		return "", fmt.Errorf("no model directory for %s under %s and no vocab/tokenizer assets to generate one (run `make assets`)", cfg.Profile, root)
	}
	return modeldir.Write(root, cfg.Profile, cfg.VocabTxt, cfg.TokenizerJSON, false)
}

// vocabWords returns the whole-word entries of the tokenizer's vocabulary
// (3+ lowercase letters): each one is a single word piece, so n words make
// exactly n tokens.
func (mb *ModelBench) vocabWords(dir string, tok *wordpiece.Tokenizer) []string {
	if w, ok := mb.words[dir]; ok {
		return w
	}
	var words []string
	for id := range tok.VocabSize() {
		s := tok.IDToToken(int32(id))
		if len(s) < 3 {
			continue
		}
		ok := true
		for _, r := range s {
			if r < 'a' || r > 'z' {
				ok = false
				break
			}
		}
		if ok && tok.CountTokens(s) == 1 {
			words = append(words, s)
		}
	}
	mb.words[dir] = words
	return words
}

// benchText is the input of one run: queries and documents.
type benchText struct {
	queries []string
	docs    []string
}

// makeText builds cfg.Pairs documents of cfg.DocTokens tokens and a few
// queries of about cfg.QueryTokens tokens.
func (mb *ModelBench) makeText(cfg RerankConfig, dir string, tok *wordpiece.Tokenizer) (benchText, error) {
	r := rand.New(rand.NewPCG(cfg.Seed, 0x72657261))
	var bt benchText
	if cfg.Data != "" {
		ds, err := eval.LoadBEIR(cfg.Data)
		if err != nil {
			return bt, err
		}
		for _, q := range ds.Queries {
			bt.queries = append(bt.queries, q.Text)
		}
		for _, d := range ds.Docs {
			ids := tok.Tokens(d.IndexText())
			if len(ids) < cfg.DocTokens {
				continue
			}
			bt.docs = append(bt.docs, joinPieces(ids[:cfg.DocTokens]))
			if len(bt.docs) == cfg.Pairs {
				break
			}
		}
		if len(bt.docs) == 0 || len(bt.queries) == 0 {
			return bt, fmt.Errorf("%s: no documents with %d tokens", cfg.Data, cfg.DocTokens)
		}
		for i := 0; len(bt.docs) < cfg.Pairs; i++ {
			bt.docs = append(bt.docs, bt.docs[i])
		}
		return bt, nil
	}
	words := mb.vocabWords(dir, tok)
	if len(words) < 100 {
		return bt, fmt.Errorf("vocabulary of %s has only %d whole words", dir, len(words))
	}
	text := func(n int) string {
		var b strings.Builder
		for i := range n {
			if i > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(words[r.IntN(len(words))])
		}
		return b.String()
	}
	for range 8 {
		bt.queries = append(bt.queries, text(cfg.QueryTokens))
	}
	for range cfg.Pairs {
		bt.docs = append(bt.docs, text(cfg.DocTokens))
	}
	return bt, nil
}

// joinPieces turns word pieces back into text that tokenizes to them.
func joinPieces(pieces []string) string {
	var b strings.Builder
	for i, p := range pieces {
		if rest, ok := strings.CutPrefix(p, "##"); ok {
			b.WriteString(rest)
			continue
		}
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(p)
	}
	return b.String()
}

func (cfg RerankConfig) modelConfig(dir string, kind models.Kind) models.Config {
	mc, err := models.ProfileConfig(cfg.Profile)
	if err != nil {
		mc = models.DefaultConfig()
		if kind == models.KindEmbedder {
			mc = models.DefaultEmbedderConfig()
		}
		mc.Profile = ""
	}
	mc.Dir = dir
	mc.Provider = cfg.Provider
	mc.IntraOpThreads = cfg.Threads
	mc.PoolSize = cfg.PoolSize
	mc.GraphOptimization = cfg.GraphOptimization
	mc.DisableArena = cfg.DisableArena
	mc.DisableSpinning = cfg.DisableSpinning
	mc.MaxBatchTokens = cfg.BatchTokens
	mc.MaxDocs = max(cfg.Pairs, models.DefaultMaxDocs)
	// The cap fits the prepared text exactly, so batch-size sweeps are
	// not bent by a larger MaxLength (MaxBatchTokens must hold one).
	need := cfg.QueryTokens + cfg.DocTokens + 3
	switch {
	case kind == models.KindEmbedder:
		need = cfg.DocTokens + 2
	case cfg.Data != "":
		need = cfg.DocTokens + 3 + 64 // real queries vary; up to 64 tokens kept whole
	}
	mc.MaxLength = min(need, models.MaxSupportedLength)
	mc.MaxBatchTokens = max(mc.MaxBatchTokens, mc.MaxLength)
	return mc
}

// RunRerank measures cross-encoder throughput and latency for cfg, plus
// the machine's peak GFLOP/s through the same runtime and thread count.
func (mb *ModelBench) RunRerank(ctx context.Context, cfg RerankConfig) (RerankResult, error) {
	return mb.run(ctx, cfg, models.KindCrossEncoder)
}

// scorer is one call of a model on the prepared text.
type scorer func(ctx context.Context, call int) (models.Usage, error)

func (mb *ModelBench) run(ctx context.Context, cfg RerankConfig, kind models.Kind) (RerankResult, error) {
	if err := cfg.Validate(); err != nil {
		return RerankResult{}, err
	}
	dir, err := mb.modelDir(cfg)
	if err != nil {
		return RerankResult{}, err
	}
	md, err := models.OpenModelDir(dir)
	if err != nil {
		return RerankResult{}, err
	}
	tok, err := md.Tokenizer()
	if err != nil {
		return RerankResult{}, err
	}
	bt, err := mb.makeText(cfg, dir, tok)
	if err != nil {
		return RerankResult{}, err
	}
	mc := cfg.modelConfig(dir, kind)
	var call scorer
	var provider func() string
	var closeFn func() error
	if kind == models.KindCrossEncoder {
		ce, err := ort.NewCrossEncoder(mc)
		if err != nil {
			return RerankResult{}, err
		}
		call = func(ctx context.Context, i int) (models.Usage, error) {
			_, u, err := ce.ScoreWithUsage(ctx, bt.queries[i%len(bt.queries)], bt.docs)
			return u, err
		}
		provider, closeFn = ce.Provider, ce.Close
	} else {
		be, err := ort.NewBiEncoder(mc)
		if err != nil {
			return RerankResult{}, err
		}
		call = func(ctx context.Context, i int) (models.Usage, error) {
			_, u, err := be.EmbedWithUsage(ctx, bt.docs)
			return u, err
		}
		provider, closeFn = be.Provider, be.Close
	}
	defer closeFn()

	// Warm-up: loads the model and lets the runtime plan its memory.
	if _, err := call(ctx, 0); err != nil {
		return RerankResult{}, err
	}
	var lat []time.Duration
	var usage models.Usage
	start := time.Now()
	for i := 0; i < cfg.MinCalls || time.Since(start) < cfg.MinTime; i++ {
		t0 := time.Now()
		u, err := call(ctx, i)
		if err != nil {
			return RerankResult{}, err
		}
		lat = append(lat, time.Since(t0))
		usage.Add(u)
	}
	elapsed := time.Since(start).Seconds()

	shape := modeldir.Shape(md, kind)
	if m, ok, err := bertgen.ReadMarker(dir); err == nil && ok {
		shape = m.Config
	}
	seqLen := float64(usage.Tokens) / float64(usage.Pairs)
	// FLOPs of the real (unpadded) tokens: what the model must compute.
	flops := float64(usage.Pairs) * bertgen.FLOPs(shape, int(seqLen+0.5))
	ls := measure.LatencyStats(lat)
	res := RerankResult{
		Profile: cfg.Profile, Kind: string(kind), Provider: provider(), Threads: cfg.Threads, PoolSize: cfg.PoolSize,
		GraphOpt: orDefault(cfg.GraphOptimization, "all"), Arena: !cfg.DisableArena, Spinning: !cfg.DisableSpinning,
		BatchTokens: mc.MaxBatchTokens, BatchPairs: int(float64(mc.MaxBatchTokens) / seqLen),
		DocTokens: cfg.DocTokens, SeqLen: seqLen, Pairs: cfg.Pairs, Calls: len(lat),
		PairsPerS: float64(usage.Pairs) / elapsed, TokensPerS: float64(usage.Tokens) / elapsed,
		P50Ms: measure.Ms(ls.P50), P99Ms: measure.Ms(ls.P99), GFLOPs: flops / elapsed / 1e9,
		GFLOPsBest:  flops / float64(len(lat)) / slices.Min(lat).Seconds() / 1e9,
		RealWeights: modeldir.RealWeights(dir), Data: orDefault(filepath.Base(cfg.Data), "synthetic"),
	}
	if cfg.Data == "" {
		res.Data = "synthetic"
	}
	if res.BatchPairs == 0 {
		res.BatchPairs = 1
	}
	if cfg.PeakN > 0 {
		// Measured right after the model, under the same conditions (other
		// load on the machine lowers both).
		peak, err := MatMulPeakGFLOPs(ctx, cfg.PeakN, cfg.Threads, cfg.Provider, 5)
		if err != nil {
			return res, err
		}
		res.PeakGFLOPs = peak
		if peak > 0 {
			res.Efficiency = res.GFLOPs / peak
		}
	}
	return res, nil
}

// ReadModelResults reads JSON lines written by `bench rerank --json` (or
// embed), for re-rendering a report without re-running it.
func ReadModelResults(path string) ([]RerankResult, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []RerankResult
	dec := json.NewDecoder(f)
	for {
		var r RerankResult
		if err := dec.Decode(&r); err == io.EOF {
			return out, nil
		} else if err != nil {
			return out, fmt.Errorf("%s: result %d: %w", path, len(out)+1, err)
		}
		out = append(out, r)
	}
}

func orDefault(s, d string) string {
	if s == "" || s == "." {
		return d
	}
	return s
}

// MatMulPeakGFLOPs writes a random n×n MatMul model (onnxpb.MatMulModel) to
// a temporary file, runs it runs times on an n×n input after one warm-up
// and returns the best GFLOP/s: the ceiling, which other load on the
// machine can only lower.
func MatMulPeakGFLOPs(ctx context.Context, n, threads int, provider string, runs int) (float64, error) {
	if err := onnx.Init(onnx.RuntimeConfig{}); err != nil {
		return 0, err
	}
	m, err := onnxpb.MatMulModel(n, 1)
	if err != nil {
		return 0, err
	}
	tmp, err := os.MkdirTemp("", "hybrank-peak-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(tmp)
	path := filepath.Join(tmp, "matmul.onnx")
	if err := m.WriteFile(path); err != nil {
		return 0, err
	}
	sc := onnx.DefaultSessionConfig()
	sc.Provider = onnx.Provider(orDefault(provider, "cpu"))
	sc.IntraOpThreads = threads
	sess, err := onnx.NewSession(path, []string{"x"}, []string{"y"}, sc)
	if err != nil {
		return 0, err
	}
	defer sess.Close()
	x := make([]float32, n*n)
	r := rand.New(rand.NewPCG(2, 3))
	for i := range x {
		x[i] = r.Float32() - 0.5
	}
	in := []onnx.Input{{Name: "x", Shape: []int64{int64(n), int64(n)}, Float32: x}}
	if _, err := sess.Run(ctx, in); err != nil {
		return 0, err
	}
	rates := make([]float64, 0, runs)
	for range max(runs, 1) {
		t0 := time.Now()
		if _, err := sess.Run(ctx, in); err != nil {
			return 0, err
		}
		rates = append(rates, 2*float64(n)*float64(n)*float64(n)/time.Since(t0).Seconds()/1e9)
	}
	return slices.Max(rates), nil
}

// SweepConfig lists the values a sweep tries; every combination runs.
type SweepConfig struct {
	Profiles []string
	// BatchPairs are batch sizes in sequences; each becomes BatchTokens =
	// pairs × (QueryTokens + DocTokens + 3).
	BatchPairs []int
	Threads    []int
	DocTokens  []int
}

// RerankSweep runs base once per combination in sc (profiles × doc tokens
// × threads × batch sizes) and calls emit after each run.
func (mb *ModelBench) RerankSweep(ctx context.Context, base RerankConfig, sc SweepConfig, kind models.Kind, emit func(RerankResult)) ([]RerankResult, error) {
	var out []RerankResult
	for _, p := range orList(sc.Profiles, base.Profile) {
		for _, dt := range orInts(sc.DocTokens, base.DocTokens) {
			for _, th := range orInts(sc.Threads, base.Threads) {
				for _, bp := range orInts(sc.BatchPairs, 0) {
					cfg := base
					cfg.Profile, cfg.DocTokens, cfg.Threads = p, dt, th
					if bp > 0 {
						seq := cfg.QueryTokens + dt + 3
						if kind == models.KindEmbedder {
							seq = dt + 2
						}
						cfg.BatchTokens = bp * seq
					}
					res, err := mb.run(ctx, cfg, kind)
					if err != nil {
						return out, fmt.Errorf("%s doc_tokens=%d threads=%d batch=%d: %w", p, dt, th, bp, err)
					}
					out = append(out, res)
					if emit != nil {
						emit(res)
					}
				}
			}
		}
	}
	return out, nil
}

func orList(l []string, d string) []string {
	if len(l) == 0 {
		return []string{d}
	}
	return l
}

func orInts(l []int, d int) []int {
	if len(l) == 0 {
		return []int{d}
	}
	return l
}

// WriteModelReport writes results as dir/name.md with an SVG plot
// (dir/name.svg) of pairs/s against batch size: one line per profile,
// doc-token length and thread count. kind names the unit in the titles.
func WriteModelReport(dir, name, command string, results []RerankResult, notes []string) (string, error) {
	rows := make([]map[string]any, len(results))
	for i, r := range results {
		rows[i] = r.Row()
	}
	unit := "pairs"
	title := "Cross-encoder reranking throughput"
	if len(results) > 0 && results[0].Kind == string(models.KindEmbedder) {
		unit, title = "texts", "Bi-encoder embedding throughput"
	}
	svgName := name + ".svg"
	notes = append(notes,
		fmt.Sprintf("![%s/s against batch size](%s)", unit, svgName),
		"gflops is effective: pairs × bertgen.FLOPs(shape, real sequence length) / time (padding not counted); "+
			"gflops_best uses the fastest call; peak_gflops is the best of 5 runs of an n×n float32 MatMul through the same runtime and thread count, measured right after each row's model runs; efficiency = gflops / peak_gflops.",
		"real_weights=false: generated models with seeded random weights (bertgen) — the shape and ONNX operators of the "+
			"Hugging Face exports, so speed is representative and scores are meaningless.")
	path, err := report.Write(dir, name, report.Report{
		Title: title, Command: command, Notes: notes, Columns: RerankColumns, Rows: anyRows(rows),
	})
	if err != nil {
		return "", err
	}
	// One panel per profile, one line per (doc tokens, threads, pool).
	var panels []report.Plot
	panelOf := map[string]int{}
	seriesOf := map[string]int{}
	for _, r := range results {
		pi, ok := panelOf[r.Profile]
		if !ok {
			pi = len(panels)
			panelOf[r.Profile] = pi
			panels = append(panels, report.Plot{Title: title + ": " + r.Profile, XLabel: "batch size (" + unit + " per runtime call)",
				YLabel: unit + "/s", LogX: true, LogY: true})
		}
		name := fmt.Sprintf("%d tokens, %d threads", r.DocTokens, r.Threads)
		if r.PoolSize > 1 {
			name += fmt.Sprintf(", pool %d", r.PoolSize)
		}
		k := r.Profile + "\x00" + name
		si, ok := seriesOf[k]
		if !ok {
			si = len(panels[pi].Series)
			seriesOf[k] = si
			panels[pi].Series = append(panels[pi].Series, report.Series{Name: name})
		}
		s := &panels[pi].Series[si]
		s.X = append(s.X, float64(r.BatchPairs))
		s.Y = append(s.Y, r.PairsPerS)
	}
	if err := report.WriteSVGFile(filepath.Join(dir, svgName), panels...); err != nil {
		return path, err
	}
	return path, nil
}
