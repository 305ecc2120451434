package dense

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"unicode"

	"github.com/hybrank/hybrank/bench"
	"github.com/hybrank/hybrank/bench/eval"
	"github.com/hybrank/hybrank/bench/measure"
	"github.com/hybrank/hybrank/bench/modeldir"
	"github.com/hybrank/hybrank/bench/vcache"
	"github.com/hybrank/hybrank/models"
	"github.com/hybrank/hybrank/models/ort"
)

// PassageConfig makes real vectors for the HNSW sweep (Config.Vectors):
// the sentences of BEIR corpora embedded as documents by a real embedder,
// and the datasets' queries embedded as queries, through the vector cache.
// Sentences give many real vectors from small corpora (scifact's 5,183
// abstracts hold about 50,000). Safe to copy.
type PassageConfig struct {
	// Model is the embedder's model directory.
	Model string `json:"model"`
	// Datasets are BEIR folders; their corpora are split into sentences.
	Datasets []string `json:"datasets"`
	// MaxPassages caps the indexed sentences, taken in corpus order (0 =
	// all).
	MaxPassages int `json:"max_passages,omitempty"`
	// MinWords drops shorter sentences (headings, fragments).
	MinWords int `json:"min_words"`
	// CacheDir, Batch, Provider and Threads are as in QualityConfig.
	CacheDir string `json:"cache_dir"`
	Batch    int    `json:"batch"`
	Provider string `json:"provider"`
	Threads  int    `json:"threads,omitempty"`
	Progress bool   `json:"-"`
}

// DefaultPassageConfig keeps sentences of at least 3 words and caches
// under out/cache, batches of 32, the auto provider.
func DefaultPassageConfig() PassageConfig {
	q := DefaultQualityConfig()
	return PassageConfig{MinWords: 3, CacheDir: q.CacheDir, Batch: q.Batch, Provider: q.Provider}
}

// Validate reports the first unusable option.
func (c PassageConfig) Validate() error {
	switch {
	case c.Model == "" || len(c.Datasets) == 0:
		return fmt.Errorf("%w: dense: passages need a model and at least one dataset", bench.ErrBadOption)
	case c.MaxPassages < 0 || c.MinWords < 1:
		return fmt.Errorf("%w: dense: max_passages %d, min_words %d", bench.ErrBadOption, c.MaxPassages, c.MinWords)
	case c.Batch < 1 || c.Batch > models.DefaultMaxDocs:
		return fmt.Errorf("%w: dense: batch %d outside 1..%d", bench.ErrBadOption, c.Batch, models.DefaultMaxDocs)
	case c.Threads < 0:
		return fmt.Errorf("%w: dense: threads %d", bench.ErrBadOption, c.Threads)
	}
	return nil
}

// Sentences splits text after '.', '!' or '?' followed by white space,
// and keeps the trimmed pieces of at least minWords words.
func Sentences(text string, minWords int) []string {
	var out []string
	keep := func(s string) {
		s = strings.TrimSpace(s)
		if len(strings.Fields(s)) >= minWords {
			out = append(out, s)
		}
	}
	start := 0
	rs := []rune(text)
	for i := 0; i+1 < len(rs); i++ {
		if (rs[i] == '.' || rs[i] == '!' || rs[i] == '?') && unicode.IsSpace(rs[i+1]) {
			keep(string(rs[start : i+1]))
			start = i + 1
		}
	}
	keep(string(rs[start:]))
	return out
}

// PassageVectors embeds c's sentences and queries (cached vectors are
// read, not recomputed) and returns them as the sweep's data.
func PassageVectors(ctx context.Context, c PassageConfig) (_ *Vectors, err error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	var texts, queries, names []string
	for _, d := range c.Datasets {
		ds, err := eval.LoadBEIR(d)
		if err != nil {
			return nil, err
		}
		names = append(names, ds.Name)
		for _, doc := range ds.Docs {
			texts = append(texts, Sentences(doc.IndexText(), c.MinWords)...)
		}
		for _, q := range ds.Queries {
			queries = append(queries, q.Text)
		}
	}
	if c.MaxPassages > 0 && len(texts) > c.MaxPassages {
		texts = texts[:c.MaxPassages]
	}
	mc := models.DefaultEmbedderConfig()
	mc.Dir, mc.Provider = c.Model, c.Provider
	if c.Threads > 0 {
		mc.IntraOpThreads = c.Threads
	}
	be, err := ort.NewBiEncoder(mc)
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, be.Close()) }()
	var bar *measure.Progress
	ce, err := vcache.Wrap(be, mc, c.CacheDir, vcache.WithBatch(c.Batch), vcache.WithProgress(func(n int) { bar.Add(n) }))
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, ce.Close()) }()
	model := filepath.Base(filepath.Clean(c.Model))
	bar = measure.NewProgress("embed sentences "+model, len(texts)+len(queries), c.Progress)
	base, err := ce.Embed(ctx, models.InputDocument, texts)
	if err != nil {
		return nil, err
	}
	qv, err := ce.Embed(ctx, models.InputQuery, queries)
	if err != nil {
		return nil, err
	}
	bar.Done()
	return &Vectors{
		Name:    fmt.Sprintf("%s sentences + queries, %s (real weights: %v)", strings.Join(names, "+"), model, modeldir.RealWeights(c.Model)),
		Base:    base,
		Queries: qv,
	}, nil
}
