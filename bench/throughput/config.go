package throughput

import (
	"fmt"
	"io"
	"runtime"
	"time"

	"github.com/hybrank/hybrank/bench"
	"github.com/hybrank/hybrank/bench/modeldir"
	"github.com/hybrank/hybrank/models"
)

// Spec is one measurement: a model, how it runs, and the text it gets.
// For a bi-encoder a "pair" is one text and QueryTokens is unused.
type Spec struct {
	// Profile is the model profile (fast, balanced, accurate; embed).
	Profile string `json:"profile"`
	// ModelDir is the model directory; "" resolves Profile through Models.
	ModelDir string `json:"model_dir,omitempty"`
	// Models says where profiles' directories live (and how missing ones
	// are generated).
	Models modeldir.Source `json:"models"`

	// Provider, Threads (intra-op), PoolSize, GraphOptimization,
	// DisableFusion, DisableArena, DisableSpinning, Int8PerTensor and
	// Int8ActivationBits are passed to the model (see models.Config).
	Provider           string `json:"provider"`
	Threads            int    `json:"threads"`
	PoolSize           int    `json:"pool_size"`
	GraphOptimization  string `json:"graph_optimization,omitempty"`
	DisableFusion      bool   `json:"disable_fusion,omitempty"`
	DisableArena       bool   `json:"disable_arena,omitempty"`
	DisableSpinning    bool   `json:"disable_spinning,omitempty"`
	Int8PerTensor      bool   `json:"int8_per_tensor,omitempty"`
	Int8ActivationBits int    `json:"int8_activation_bits,omitempty"`

	// BatchTokens is models.Config.MaxBatchTokens and Batching its
	// Batching ("" = the default, cost-model planning; "tokens" = batches
	// filled up to BatchTokens).
	BatchTokens int    `json:"batch_tokens"`
	Batching    string `json:"batching,omitempty"`
	// Pairs is the number of documents scored (texts embedded) per call.
	Pairs int `json:"pairs"`
	// DocTokens is each document's length in word pieces (no specials).
	DocTokens int `json:"doc_tokens"`
	// QueryTokens is the query's length in word pieces (synthetic text).
	QueryTokens int `json:"query_tokens"`
	// Data is a BEIR dataset folder to take queries and documents from
	// (documents cut to DocTokens); "" samples vocabulary words.
	Data string `json:"data,omitempty"`
	// Quantize is models.Config.Quantize ("" = the directory's weights as
	// they are, "int8", "fp16"); the copies are kept in QuantizeCache (""
	// = the user cache, see models.Config.QuantizeCache).
	Quantize      string `json:"quantize,omitempty"`
	QuantizeCache string `json:"quantize_cache,omitempty"`
	// MaxLength, when set, is the model's sequence cap (special tokens
	// included, at most models.MaxSupportedLength) instead of one sized to
	// the prepared text: real-length text prepared by the caller.
	MaxLength int `json:"max_length,omitempty"`
	// MinTime and MinCalls bound the measurement: calls repeat until both
	// are reached (after one warm-up call).
	MinTime  time.Duration `json:"min_time_ns"`
	MinCalls int           `json:"min_calls"`
	// PeakN is the MatMul size for the peak measurement (0 skips it; rows
	// on the CUDA provider skip it too).
	PeakN int `json:"peak_n"`
	// Seed makes the synthetic text reproducible.
	Seed uint64 `json:"seed"`
}

// DefaultSpec returns a balanced-profile run: 64 pairs of 128 document
// tokens per call, batches of 16,384 tokens, one thread per core.
func DefaultSpec() Spec {
	return Spec{
		Profile: models.ProfileBalanced, Models: modeldir.DefaultSource(),
		Provider: "cpu", Threads: runtime.NumCPU(), PoolSize: 1,
		BatchTokens: models.DefaultMaxBatchTokens, Pairs: 64, DocTokens: 128, QueryTokens: 8,
		MinTime: 3 * time.Second, MinCalls: 2, PeakN: 2048, Seed: 1,
	}
}

// Validate reports the first unusable field.
func (s Spec) Validate() error {
	switch {
	case s.Profile == "" && s.ModelDir == "":
		return fmt.Errorf("%w: need a profile or a model directory", bench.ErrBadOption)
	case s.Threads < 0 || s.PoolSize < 1:
		return fmt.Errorf("%w: threads %d, pool %d", bench.ErrBadOption, s.Threads, s.PoolSize)
	case s.Pairs < 1 || s.DocTokens < 1 || s.QueryTokens < 1:
		return fmt.Errorf("%w: pairs %d, doc tokens %d, query tokens %d must be positive", bench.ErrBadOption, s.Pairs, s.DocTokens, s.QueryTokens)
	case s.QueryTokens+s.DocTokens+3 > models.MaxSupportedLength:
		return fmt.Errorf("%w: query %d + doc %d tokens + 3 specials > %d", bench.ErrBadOption, s.QueryTokens, s.DocTokens, models.MaxSupportedLength)
	case s.MinCalls < 1 || s.MinTime < 0:
		return fmt.Errorf("%w: min calls %d, min time %v", bench.ErrBadOption, s.MinCalls, s.MinTime)
	case s.PeakN < 0:
		return fmt.Errorf("%w: peak n %d", bench.ErrBadOption, s.PeakN)
	case s.BatchTokens < 0:
		return fmt.Errorf("%w: batch tokens %d", bench.ErrBadOption, s.BatchTokens)
	case s.MaxLength < 0 || s.MaxLength > models.MaxSupportedLength:
		return fmt.Errorf("%w: max length %d (0 or up to %d)", bench.ErrBadOption, s.MaxLength, models.MaxSupportedLength)
	}
	return nil
}

// ModelConfig is the models.Config that s runs a model of kind in dir with.
func (s Spec) ModelConfig(dir string, kind models.Kind) models.Config {
	mc, err := models.ProfileConfig(s.Profile)
	if err != nil {
		mc = models.DefaultConfig()
		if kind == models.KindEmbedder {
			mc = models.DefaultEmbedderConfig()
		}
		mc.Profile = ""
	}
	mc.Dir = dir
	mc.Provider = s.Provider
	mc.IntraOpThreads = s.Threads
	mc.PoolSize = s.PoolSize
	mc.GraphOptimization = s.GraphOptimization
	mc.DisableFusion = s.DisableFusion
	mc.DisableArena = s.DisableArena
	mc.DisableSpinning = s.DisableSpinning
	mc.Int8PerTensor = s.Int8PerTensor
	mc.Int8ActivationBits = s.Int8ActivationBits
	mc.MaxBatchTokens = s.BatchTokens
	mc.Batching = s.Batching
	mc.Quantize, mc.QuantizeCache = s.Quantize, s.QuantizeCache
	mc.MaxDocs = max(s.Pairs, models.DefaultMaxDocs)
	// The cap fits the prepared text exactly, so batch-size sweeps are
	// not bent by a larger MaxLength (MaxBatchTokens must hold one).
	mc.MaxLength = min(s.seqCap(kind), models.MaxSupportedLength)
	if s.MaxLength > 0 {
		mc.MaxLength = s.MaxLength
	}
	mc.MaxBatchTokens = max(mc.MaxBatchTokens, mc.MaxLength)
	return mc
}

// seqCap is the longest sequence of the prepared text, specials included.
func (s Spec) seqCap(kind models.Kind) int {
	switch {
	case kind == models.KindEmbedder:
		return s.DocTokens + 2
	case s.Data != "":
		return s.DocTokens + 3 + 64 // real queries vary; up to 64 tokens kept whole
	default:
		return s.QueryTokens + s.DocTokens + 3
	}
}

// seqLen is the length of one synthetic sequence, specials included: what
// a batch of BatchPairs sequences is sized by.
func (s Spec) seqLen(kind models.Kind) int {
	if kind == models.KindEmbedder {
		return s.DocTokens + 2
	}
	return s.QueryTokens + s.DocTokens + 3
}

// Sweep lists the values a sweep tries; every combination runs (profiles ×
// doc tokens × threads × batch sizes). An empty list keeps the Spec's
// value, so the zero Sweep is one run.
type Sweep struct {
	// Profiles are the models to measure.
	Profiles []string `json:"profiles,omitempty"`
	// BatchPairs are batch sizes in sequences; each becomes BatchTokens =
	// pairs × sequence length.
	BatchPairs []int `json:"batch_pairs,omitempty"`
	Threads    []int `json:"threads,omitempty"`
	DocTokens  []int `json:"doc_tokens,omitempty"`
	// CallPerBatch makes every call one batch: Pairs = the batch size,
	// fixed (tokens) batching, so latency percentiles are per batch (a
	// GPU's batch-size curve). Otherwise each call scores Pairs pairs in
	// batches of at most the batch size.
	CallPerBatch bool `json:"call_per_batch,omitempty"`
}

// DefaultSweep is the sweep of `bench rerank --sweep` (kind cross-encoder:
// fast, balanced, accurate) or `bench embed --sweep` (embed): batches of
// 1, 4, 16, 64, one and two threads, 128 and 256 document tokens.
func DefaultSweep(kind models.Kind) Sweep {
	s := Sweep{BatchPairs: []int{1, 4, 16, 64}, Threads: []int{1, 2}, DocTokens: []int{128, 256}}
	for _, p := range models.Profiles() {
		if p.Kind == kind {
			s.Profiles = append(s.Profiles, p.Name)
		}
	}
	return s
}

// Config configures a throughput run of one kind of model: Spec once, or
// once per combination of Sweep.
type Config struct {
	Spec
	// Kind is the kind of model measured; every profile must be of it.
	Kind models.Kind `json:"kind"`
	// Sweep lists the values to combine (zero: one run of Spec).
	Sweep Sweep `json:"sweep"`
	// Log receives one line per measurement (nil = none).
	Log io.Writer `json:"-"`
}

// DefaultConfig is DefaultSpec run once for a model of kind: the balanced
// profile for cross-encoders, embed for bi-encoders.
func DefaultConfig(kind models.Kind) Config {
	c := Config{Spec: DefaultSpec(), Kind: kind}
	if kind == models.KindEmbedder {
		c.Profile = models.ProfileEmbed
	}
	return c
}

// Validate reports the first unusable field.
func (c Config) Validate() error {
	if c.Kind != models.KindCrossEncoder && c.Kind != models.KindEmbedder {
		return fmt.Errorf("%w: model kind %q", bench.ErrBadOption, c.Kind)
	}
	if err := c.Spec.Validate(); err != nil {
		return err
	}
	for _, p := range orList(c.Sweep.Profiles, c.Profile) {
		if err := c.checkProfile(p); err != nil {
			return err
		}
	}
	for _, list := range [][]int{c.Sweep.BatchPairs, c.Sweep.Threads, c.Sweep.DocTokens} {
		for _, n := range list {
			if n < 1 {
				return fmt.Errorf("%w: sweep value %d must be positive", bench.ErrBadOption, n)
			}
		}
	}
	if c.Sweep.CallPerBatch && len(c.Sweep.BatchPairs) == 0 {
		return fmt.Errorf("%w: sweep: one batch per call needs the batch sizes to sweep", bench.ErrBadOption)
	}
	for _, dt := range c.Sweep.DocTokens {
		s := c.Spec
		s.DocTokens = dt
		if err := s.Validate(); err != nil {
			return err
		}
	}
	return nil
}

// checkProfile reports a profile of the wrong kind, or an unknown one that
// no explicit directory backs.
func (c Config) checkProfile(p string) error {
	if p == "" {
		return nil // Spec.Validate wants ModelDir then
	}
	prof, err := models.LookupProfile(p)
	switch {
	case err != nil && c.ModelDir == "":
		return fmt.Errorf("%w: %w", bench.ErrBadOption, err)
	case err == nil && prof.Kind != c.Kind:
		return fmt.Errorf("%w: profile %s is a %s model, not a %s", bench.ErrBadOption, p, prof.Kind, c.Kind)
	}
	return nil
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
