package hybrid

import (
	"fmt"
	"io"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/hybrank/hybrank/bench"
	"github.com/hybrank/hybrank/bench/eval"
	"github.com/hybrank/hybrank/bench/modeldir"
	"github.com/hybrank/hybrank/engine"
	"github.com/hybrank/hybrank/models"
)

// Setup is one retrieval configuration of the matrix: a row of hybrid.md.
type Setup struct {
	// Name identifies the setup ("bm25", "weighted-0.5", "rrf+balanced",
	// "rrf+mmr-0.7", …).
	Name string `json:"name"`
	// Dense says whether the dense retriever takes part. Without it the
	// setup runs on a BM25-only engine (no embedder attached).
	Dense bool `json:"dense"`
	// Fusion and Alpha are the request's fusion method and dense weight.
	Fusion engine.Fusion `json:"fusion"`
	Alpha  float64       `json:"alpha"`
	// Rerank is the reranker profile ("" = none).
	Rerank string `json:"rerank,omitempty"`
	// MMRLambda enables MMR when > 0.
	MMRLambda float64 `json:"mmr_lambda,omitempty"`
}

// Matrix returns the benchmark's setups: bm25, dense (weighted α = 1),
// rrf, weighted-0.3/0.5/0.7, relative; each fused one followed by each
// rerank profile (name "FUSED+PROFILE"); and rrf+mmr-0.7.
func Matrix(profiles []string) []Setup {
	fused := []Setup{
		{Name: "rrf", Dense: true, Fusion: engine.FusionRRF},
		{Name: "weighted-0.3", Dense: true, Fusion: engine.FusionWeighted, Alpha: 0.3},
		{Name: "weighted-0.5", Dense: true, Fusion: engine.FusionWeighted, Alpha: 0.5},
		{Name: "weighted-0.7", Dense: true, Fusion: engine.FusionWeighted, Alpha: 0.7},
		{Name: "relative", Dense: true, Fusion: engine.FusionRelative},
	}
	out := []Setup{
		{Name: "bm25", Fusion: engine.FusionRRF},
		{Name: "dense", Dense: true, Fusion: engine.FusionWeighted, Alpha: 1},
	}
	out = append(out, fused...)
	for _, f := range fused {
		for _, p := range profiles {
			c := f
			c.Name, c.Rerank = f.Name+"+"+p, p
			out = append(out, c)
		}
	}
	return append(out, Setup{Name: "rrf+mmr-0.7", Dense: true, Fusion: engine.FusionRRF, MMRLambda: 0.7})
}

// Select keeps the setups whose name matches one of the patterns
// (path.Match syntax: "rrf*", "*+balanced"), in matrix order; no patterns
// keep all. A pattern that matches nothing is an error.
func Select(all []Setup, patterns []string) ([]Setup, error) {
	if len(patterns) == 0 {
		return all, nil
	}
	keep := map[string]bool{}
	for _, p := range patterns {
		n := 0
		for _, c := range all {
			ok, err := path.Match(p, c.Name)
			if err != nil {
				return nil, fmt.Errorf("%w: hybrid: setup pattern %q: %w", bench.ErrBadOption, p, err)
			}
			if ok {
				keep[c.Name] = true
				n++
			}
		}
		if n == 0 {
			return nil, fmt.Errorf("%w: hybrid: setup %q matches none of the matrix", bench.ErrBadOption, p)
		}
	}
	var out []Setup
	for _, c := range all {
		if keep[c.Name] {
			out = append(out, c)
		}
	}
	return out, nil
}

// Config configures `bench hybrid`: the setup matrix and a rerank budget
// sweep over BEIR datasets. Safe to copy.
type Config struct {
	// Datasets are BEIR dataset folders; each is committed once (title
	// and text, one batch) and every setup runs on it.
	Datasets []string `json:"datasets"`
	// Profiles are the rerank profiles of the matrix.
	Profiles []string `json:"profiles"`
	// Setups select from Matrix(Profiles) by name pattern (see Select);
	// empty runs all. SkipMatrix runs none (only the sweep).
	Setups     []string `json:"setups,omitempty"`
	SkipMatrix bool     `json:"skip_matrix,omitempty"`
	// NoDense runs without an embedder: setups with Dense are skipped and
	// the sweep reranks BM25 candidates.
	NoDense bool `json:"no_dense,omitempty"`
	// Engine is the engine configuration (analysis, postings, dense,
	// rerank batching).
	Engine engine.Config `json:"engine"`
	// Budget is the per-query latency budget of the rerank setups (0 =
	// none: every candidate is reranked).
	Budget time.Duration `json:"budget_ns"`
	// Candidates per retriever and hits per query (100 by default so
	// recall@100 is meaningful).
	Candidates int `json:"candidates"`
	K          int `json:"k"`
	// Queries caps the judged queries run per setup (0 = all, in file
	// order; more than there are cycles through them).
	Queries int `json:"queries"`
	// Warmup searches run before each setup's measured queries and each
	// budget (not recorded): they load the models and seed the rerank cost
	// estimate.
	Warmup int `json:"warmup"`
	// Models says where the profiles' model directories are; EmbedDir and
	// RerankDir override them for the embedder and for every reranker
	// (real exports of one model).
	Models    modeldir.Source `json:"models"`
	EmbedDir  string          `json:"embed_dir,omitempty"`
	RerankDir string          `json:"rerank_dir,omitempty"`
	// Provider is the ONNX Runtime provider of every model (auto, cpu,
	// cuda) and Threads their intra-op threads (0 = the models' default).
	Provider string `json:"provider"`
	Threads  int    `json:"threads,omitempty"`
	// Quantize loads the rerankers as "int8" (for the CPU) or "fp16" (for
	// the CUDA provider) copies (models.Config.Quantize); "" as they are.
	// The embedder stays as it is: its vectors are cached per model.
	Quantize string `json:"quantize,omitempty"`
	// MaxDocTokens is the embedder's truncation (0 = the model's maximum).
	MaxDocTokens int `json:"max_doc_tokens"`
	// CacheDir keeps the corpus's document vectors (bench/vcache, shared
	// with bench dense), so a corpus is embedded once per model; queries
	// are always embedded, inside the timed search ("" = no cache).
	CacheDir string `json:"cache_dir,omitempty"`
	// Eval selects evaluation conventions.
	Eval eval.Options `json:"eval"`
	// TuneOn names the dataset (a Datasets folder's base name) on which the
	// best fusion is chosen; FusionChoice checks it unchanged on the others
	// ("" = no choice).
	TuneOn string `json:"tune_on,omitempty"`
	// Sweep is the rerank budget sweep (no Budgets: none).
	Sweep Sweep `json:"sweep"`
	// Replay replays a query log with repeats behind model caches (no
	// Searches: none).
	Replay Replay `json:"replay"`
	// Targets are checked against the sweep.
	Targets Targets `json:"targets"`
	// Progress forces progress bars; Log receives a line per row.
	Progress bool      `json:"-"`
	Log      io.Writer `json:"-"`
}

// Sweep runs Searches searches (rrf over both retrievers when an embedder
// is loaded, BM25 only otherwise; judged queries cycled) reranked by each
// profile under each budget.
//
// A profile "FIRST>SECOND" is a cascade (engine.Cascade): FIRST scores
// every candidate, SECOND rescores FIRST's best CascadeKeep.
type Sweep struct {
	Budgets     []time.Duration `json:"budgets_ns,omitempty"`
	Profiles    []string        `json:"profiles,omitempty"`
	Searches    int             `json:"searches"`
	CascadeKeep int             `json:"cascade_keep,omitempty"`
}

// stages splits a sweep profile into its cascade's first stage ("" for a
// single profile) and the final reranker.
func stages(profile string) (first, final string) {
	if a, b, ok := strings.Cut(profile, ">"); ok {
		return a, b
	}
	return "", profile
}

// rerankProfiles lists the single profiles that profiles name (both
// stages of a cascade).
func rerankProfiles(profiles []string) []string {
	var out []string
	for _, p := range profiles {
		if a, b := stages(p); a != "" {
			out = append(out, a, b)
		} else {
			out = append(out, b)
		}
	}
	return out
}

// Targets are what the budgeted reranker must hold: at Budget, with
// Profile, p99 latency at most MaxP99 (the budget plus scheduling slack),
// every cut-short search marked Degraded and no retrieval timeout.
type Targets struct {
	Profile string        `json:"profile"`
	Budget  time.Duration `json:"budget_ns"`
	MaxP99  time.Duration `json:"max_p99_ns"`
}

// DefaultConfig returns the engine defaults, the fast, balanced and
// accurate rerankers under a 100 ms budget, 100 candidates and hits, all
// queries, 3 warm-up searches, documents embedded up to 128 tokens, and
// the target balanced at 100 ms → p99 ≤ 110 ms. No dataset, no sweep.
func DefaultConfig() Config {
	return Config{
		Profiles:     []string{models.ProfileFast, models.ProfileBalanced, models.ProfileAccurate},
		Engine:       engine.DefaultConfig(),
		Budget:       100 * time.Millisecond,
		Candidates:   100,
		K:            100,
		Warmup:       3,
		Models:       modeldir.DefaultSource(),
		Provider:     "auto",
		MaxDocTokens: 128,
		CacheDir:     filepath.Join("out", "cache"),
		Sweep:        Sweep{Profiles: []string{models.ProfileBalanced}, Searches: 200, CascadeKeep: 20},
		Replay:       DefaultReplay(),
		Targets:      Targets{Profile: models.ProfileBalanced, Budget: 100 * time.Millisecond, MaxP99: 110 * time.Millisecond},
	}
}

// Validate reports the first unusable option.
func (c Config) Validate() error {
	if err := c.Engine.Validate(); err != nil {
		return fmt.Errorf("%w: hybrid: %w", bench.ErrBadOption, err)
	}
	switch {
	case len(c.Datasets) == 0:
		return fmt.Errorf("%w: hybrid: no dataset", bench.ErrBadOption)
	case c.K <= 0 || c.Candidates <= 0 || c.Budget < 0 || c.Queries < 0 || c.Warmup < 0:
		return fmt.Errorf("%w: hybrid: need K > 0, candidates > 0, budget ≥ 0, queries ≥ 0, warmup ≥ 0", bench.ErrBadOption)
	case !models.ValidQuantize(c.Quantize):
		return fmt.Errorf("%w: hybrid: quantize %q (want \"\", %s or %s)", bench.ErrBadOption, c.Quantize, models.QuantizeInt8, models.QuantizeFP16)
	case c.Threads < 0 || c.MaxDocTokens < 0:
		return fmt.Errorf("%w: hybrid: threads %d, max doc tokens %d", bench.ErrBadOption, c.Threads, c.MaxDocTokens)
	case len(c.Sweep.Budgets) > 0 && (c.Sweep.Searches <= 0 || len(c.Sweep.Profiles) == 0):
		return fmt.Errorf("%w: hybrid: a budget sweep needs searches > 0 and profiles", bench.ErrBadOption)
	case c.Targets.Budget < 0 || c.Targets.MaxP99 < 0:
		return fmt.Errorf("%w: hybrid: targets %+v", bench.ErrBadOption, c.Targets)
	}
	if c.TuneOn != "" && !slices.ContainsFunc(c.Datasets, func(d string) bool { return datasetName(d) == c.TuneOn }) {
		return fmt.Errorf("%w: hybrid: tune_on %q is none of the datasets", bench.ErrBadOption, c.TuneOn)
	}
	for _, b := range c.Sweep.Budgets {
		if b <= 0 {
			return fmt.Errorf("%w: hybrid: budget %v must be positive", bench.ErrBadOption, b)
		}
	}
	if slices.ContainsFunc(c.Sweep.Profiles, func(p string) bool { return strings.Contains(p, ">") }) && c.Sweep.CascadeKeep < 1 {
		return fmt.Errorf("%w: hybrid: a cascade in the sweep needs cascade_keep ≥ 1", bench.ErrBadOption)
	}
	for _, p := range append(append([]string(nil), c.Profiles...), rerankProfiles(c.Sweep.Profiles)...) {
		if prof, err := models.LookupProfile(p); err != nil || prof.Kind != models.KindCrossEncoder {
			return fmt.Errorf("%w: hybrid: %q is not a reranker profile", bench.ErrBadOption, p)
		}
	}
	if err := c.Replay.validate(Matrix(c.Profiles)); err != nil {
		return err
	}
	_, err := c.setups()
	return err
}

// setups are the setups Run measures.
func (c Config) setups() ([]Setup, error) {
	if c.SkipMatrix {
		return nil, nil
	}
	sel, err := Select(Matrix(c.Profiles), c.Setups)
	if err != nil || !c.NoDense {
		return sel, err
	}
	var out []Setup
	for _, s := range sel {
		if !s.Dense {
			out = append(out, s)
		}
	}
	return out, nil
}
