package synth

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"strconv"

	"github.com/hybrank/hybrank/bench"
	"github.com/hybrank/hybrank/bench/eval"
)

// CorpusConfig describes a generated corpus. The same config (seed
// included) always yields the same documents, queries and judgments.
type CorpusConfig struct {
	// Docs is the number of documents (≥ 1).
	Docs int `json:"docs"`
	// Vocab is the vocabulary size (≥ 100). Term of rank r (0 = most
	// frequent) is drawn with probability ∝ 1/(r+1)^ZipfS.
	Vocab int `json:"vocab"`
	// ZipfS is the Zipf exponent (> 0); about 1 for English text.
	ZipfS float64 `json:"zipf_s"`
	// MedianLen and LenSigma give the log-normal document length in terms:
	// exp(ln(MedianLen) + LenSigma·N(0,1)), clamped to [MinLen, MaxLen].
	MedianLen float64 `json:"median_len"`
	LenSigma  float64 `json:"len_sigma"`
	MinLen    int     `json:"min_len"`
	MaxLen    int     `json:"max_len"`
	// Queries is the number of queries; each has QueryTerms mid-frequency
	// terms and RelPerQuery planted relevant documents.
	Queries     int `json:"queries"`
	QueryTerms  int `json:"query_terms"`
	RelPerQuery int `json:"rel_per_query"`
	// Seed selects the corpus.
	Seed uint64 `json:"seed"`
}

// DefaultCorpusConfig returns a corpus of n documents shaped roughly
// like an abstract collection (median 120 terms, 200K-term vocabulary).
func DefaultCorpusConfig(n int) CorpusConfig {
	return CorpusConfig{
		Docs: n, Vocab: 200_000, ZipfS: 1.05,
		MedianLen: 120, LenSigma: 0.6, MinLen: 8, MaxLen: 2000,
		Queries: 1000, QueryTerms: 4, RelPerQuery: 3, Seed: 1,
	}
}

// Validate reports whether c can generate a corpus.
func (c CorpusConfig) Validate() error {
	switch {
	case c.Docs < 1:
		return fmt.Errorf("%w: synthetic Docs %d < 1", bench.ErrBadOption, c.Docs)
	case c.Vocab < 100:
		return fmt.Errorf("%w: synthetic Vocab %d < 100", bench.ErrBadOption, c.Vocab)
	case !(c.ZipfS > 0):
		return fmt.Errorf("%w: synthetic ZipfS %v", bench.ErrBadOption, c.ZipfS)
	case !(c.MedianLen >= 1) || c.LenSigma < 0 || c.MinLen < 1 || c.MaxLen < c.MinLen:
		return fmt.Errorf("%w: synthetic length model median=%v sigma=%v min=%d max=%d", bench.ErrBadOption, c.MedianLen, c.LenSigma, c.MinLen, c.MaxLen)
	case c.Queries < 0 || (c.Queries > 0 && (c.QueryTerms < 1 || c.RelPerQuery < 1 || c.RelPerQuery > c.Docs)):
		return fmt.Errorf("%w: synthetic queries=%d terms=%d rel=%d", bench.ErrBadOption, c.Queries, c.QueryTerms, c.RelPerQuery)
	case c.QueryTerms > c.MinLen:
		return fmt.Errorf("%w: synthetic QueryTerms %d > MinLen %d", bench.ErrBadOption, c.QueryTerms, c.MinLen)
	}
	return nil
}

// Query is a generated query: its terms and the text they join to.
type Query struct {
	ID    string
	Terms []string
	Text  string
}

// Corpus is a generated corpus. Documents are produced on demand by
// Each; only the vocabulary, the queries and the judgments are held in
// memory. Safe for concurrent use (Each may run on several goroutines).
type Corpus struct {
	cfg     CorpusConfig
	vocab   []string
	sampler zipfTable
	queries []Query
	qrels   eval.Qrels
	planted map[int][]int // doc index → query indices planted in it
}

// NewCorpus builds the vocabulary, queries and judgments for cfg.
func NewCorpus(cfg CorpusConfig) (*Corpus, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &Corpus{cfg: cfg, qrels: make(eval.Qrels), planted: make(map[int][]int)}
	s.vocab = make([]string, cfg.Vocab)
	for r := range s.vocab {
		s.vocab[r] = termName(r)
	}
	s.sampler = newZipfTable(cfg.Vocab, cfg.ZipfS)
	// The first query term is a frequent one (ranks 10–99: long posting
	// lists, as real queries have), the others come from the mid-frequency
	// band (ranks 100–49,999): common enough to occur in unrelated
	// documents, so ranking has work to do, rare enough to discriminate.
	rng := rand.New(rand.NewPCG(cfg.Seed, 1<<62))
	for q := 0; q < cfg.Queries; q++ {
		sq := Query{ID: "q" + strconv.Itoa(q)}
		used := map[int]bool{}
		for len(sq.Terms) < cfg.QueryTerms {
			lo, hi := 100, min(cfg.Vocab, 50_000)
			if len(sq.Terms) == 0 {
				lo, hi = 10, 100
			}
			r := lo + rng.IntN(hi-lo)
			if !used[r] {
				used[r] = true
				sq.Terms = append(sq.Terms, s.vocab[r])
			}
		}
		for i, t := range sq.Terms {
			if i > 0 {
				sq.Text += " "
			}
			sq.Text += t
		}
		rel := make(map[string]int, cfg.RelPerQuery)
		for len(rel) < cfg.RelPerQuery {
			d := rng.IntN(cfg.Docs)
			id := DocID(d)
			if _, dup := rel[id]; dup {
				continue
			}
			// The first planted document gets every query term (grade
			// 2), the others about half of them (grade 1).
			grade := 1
			if len(rel) == 0 {
				grade = 2
			}
			rel[id] = grade
			s.planted[d] = append(s.planted[d], q<<1|(grade-1))
		}
		s.qrels[sq.ID] = rel
		s.queries = append(s.queries, sq)
	}
	return s, nil
}

// DocID is the id of generated document i.
func DocID(i int) string { return "d" + strconv.Itoa(i) }

// termName spells rank r in letters only ("wa", "wb", …), so analyzers
// without stemming or stopwords keep it as it is.
func termName(r int) string {
	b := []byte{'w'}
	for {
		b = append(b, byte('a'+r%26))
		r /= 26
		if r == 0 {
			break
		}
	}
	return string(b)
}

// Config returns the configuration.
func (s *Corpus) Config() CorpusConfig { return s.cfg }

// Queries returns the generated queries (shared; do not modify).
func (s *Corpus) Queries() []Query { return s.queries }

// Qrels returns the planted judgments (shared; do not modify).
func (s *Corpus) Qrels() eval.Qrels { return s.qrels }

// Vocab returns the vocabulary, most frequent first (shared; do not modify).
func (s *Corpus) Vocab() []string { return s.vocab }

// Each calls fn for documents [from, to) in order with the document's index
// and terms. terms is reused after fn returns; copy it to keep it. Each
// stops at the first error from fn or when ctx is done (polled every 1024
// documents).
func (s *Corpus) Each(ctx context.Context, from, to int, fn func(i int, terms []string) error) error {
	if from < 0 || to > s.cfg.Docs || from > to {
		return fmt.Errorf("%w: synthetic range [%d,%d) of %d docs", bench.ErrBadOption, from, to, s.cfg.Docs)
	}
	var pcg rand.PCG
	rng := rand.New(&pcg)
	var terms []string
	mu := math.Log(s.cfg.MedianLen)
	for i := from; i < to; i++ {
		if (i-from)&1023 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		pcg.Seed(s.cfg.Seed, uint64(i))
		n := int(math.Exp(mu + s.cfg.LenSigma*rng.NormFloat64()))
		n = max(s.cfg.MinLen, min(s.cfg.MaxLen, n))
		terms = terms[:0]
		for j := 0; j < n; j++ {
			terms = append(terms, s.vocab[s.sampler.sample(rng.Float64())])
		}
		for _, pq := range s.planted[i] {
			q := s.queries[pq>>1]
			all := pq&1 == 1
			for k, t := range q.Terms {
				if !all && k%2 == 1 {
					continue
				}
				// 1–3 occurrences at random positions.
				for c := 1 + rng.IntN(3); c > 0; c-- {
					terms[rng.IntN(len(terms))] = t
				}
			}
		}
		if err := fn(i, terms); err != nil {
			return err
		}
	}
	return nil
}

// zipfTable samples ranks from a truncated Zipf distribution by inverting
// its CDF: a bucket table narrows the search to a few entries, so a sample
// costs O(1) on average.
type zipfTable struct {
	cdf    []float64
	bucket []int32 // bucket[b] = first rank with cdf > b/len(bucket)
}

func newZipfTable(n int, s float64) zipfTable {
	cdf := make([]float64, n)
	var sum float64
	for r := 0; r < n; r++ {
		sum += math.Pow(float64(r+1), -s)
		cdf[r] = sum
	}
	for r := range cdf {
		cdf[r] /= sum
	}
	cdf[n-1] = 1
	const buckets = 1 << 16
	t := zipfTable{cdf: cdf, bucket: make([]int32, buckets+1)}
	for b := 0; b <= buckets; b++ {
		u := float64(b) / buckets
		t.bucket[b] = int32(sort.Search(n, func(i int) bool { return cdf[i] > u }))
	}
	return t
}

// sample maps u ∈ [0,1) to a rank.
func (t *zipfTable) sample(u float64) int {
	b := int(u * float64(len(t.bucket)-1))
	lo, hi := int(t.bucket[b]), int(t.bucket[b+1])
	if hi >= len(t.cdf) {
		hi = len(t.cdf) - 1
	}
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if t.cdf[m] > u {
			hi = m
		} else {
			lo = m + 1
		}
	}
	return lo
}
