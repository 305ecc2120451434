package longdoc

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/hybrank/hybrank/bench"
	"github.com/hybrank/hybrank/bench/eval"
	"github.com/hybrank/hybrank/models"
)

// BuildConfig says how the long-document collection is made from a BEIR
// dataset. A plain value.
type BuildConfig struct {
	// Queries is how many judged queries, in file order (0 = all).
	Queries int `json:"queries"`
	// Distractors is the number of distractor long documents (filler only,
	// no relevant text), shared by every query's candidates.
	Distractors int `json:"distractors"`
	// MinTokens and MaxTokens bound every long document's length in tokens
	// of the counting tokenizer; each document's length is drawn
	// uniformly from the range.
	MinTokens int `json:"min_tokens"`
	MaxTokens int `json:"max_tokens"`
	// Seed drives every random choice (lengths, filler, positions).
	Seed uint64 `json:"seed"`
}

// DefaultBuildConfig is 100 queries, 30 distractors, 2,000–4,000 tokens,
// seed 1.
func DefaultBuildConfig() BuildConfig {
	return BuildConfig{Queries: 100, Distractors: 30, MinTokens: 2000, MaxTokens: 4000, Seed: 1}
}

// Validate reports the first unusable option.
func (c BuildConfig) Validate() error {
	switch {
	case c.Queries < 0:
		return fmt.Errorf("%w: longdoc: queries %d", bench.ErrBadOption, c.Queries)
	case c.Distractors < 0:
		return fmt.Errorf("%w: longdoc: distractors %d", bench.ErrBadOption, c.Distractors)
	case c.MinTokens < 1 || c.MaxTokens < c.MinTokens:
		return fmt.Errorf("%w: longdoc: tokens [%d, %d] (want 1 ≤ min ≤ max)", bench.ErrBadOption, c.MinTokens, c.MaxTokens)
	}
	return nil
}

// Doc is one long document.
type Doc struct {
	ID   string `json:"id"`
	Text string `json:"-"`
	// Tokens is the length of Text in tokens of the counting tokenizer.
	Tokens int `json:"tokens"`
	// Source is the id of the relevant document buried in Text, "" for a
	// distractor; Span its bytes in Text (its title, a space, its text).
	Source string      `json:"source,omitempty"`
	Span   models.Span `json:"span"`
}

// Set is a long-document collection: every judged query's relevant
// documents buried each in its own long document, and distractors. It is
// read-only once built.
type Set struct {
	Queries []eval.Query
	Docs    []Doc
	// Qrels maps query id → long document id → the buried document's grade.
	Qrels eval.Qrels
	// Candidates holds, per query (Queries order), the indices into Docs
	// of its candidates: its relevant long documents, then every
	// distractor.
	Candidates [][]int
}

// Build makes the collection from ds: for each of the first Queries judged
// queries, each relevant document (title + " " + text) is buried at a
// random document boundary inside filler, whole documents of ds that are
// relevant to no judged query (in a seeded random order), added until the
// long document reaches a length drawn from the token range (one that
// would pass MaxTokens is skipped); Distractors more documents are filler
// only. count is the tokenizer's token count (no special tokens).
// Documents are joined by a blank line, so a long document's count is the
// sum of its parts'.
func Build(ds *eval.Dataset, cfg BuildConfig, count func(string) int) (*Set, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	judged := map[string]bool{}
	for _, rels := range ds.Qrels {
		for id := range rels {
			judged[id] = true
		}
	}
	byID := make(map[string]eval.Doc, len(ds.Docs))
	var pool []eval.Doc
	for _, d := range ds.Docs {
		byID[d.ID] = d
		if !judged[d.ID] && strings.TrimSpace(d.IndexText()) != "" {
			pool = append(pool, d)
		}
	}
	if len(pool) == 0 {
		return nil, fmt.Errorf("%w: longdoc: %s has no unjudged documents to use as filler", bench.ErrBadOption, ds.Name)
	}
	r := rand.New(rand.NewPCG(cfg.Seed, 0x10ad0c))
	f := &filler{pool: pool, r: r, count: count}
	f.shuffle()
	length := func() int { return cfg.MinTokens + r.IntN(cfg.MaxTokens-cfg.MinTokens+1) }

	queries := ds.Queries
	if cfg.Queries > 0 && cfg.Queries < len(queries) {
		queries = queries[:cfg.Queries]
	}
	s := &Set{Queries: queries, Qrels: eval.Qrels{}, Candidates: make([][]int, len(queries))}
	for qi, q := range queries {
		rels := ds.Qrels[q.ID]
		ids := make([]string, 0, len(rels))
		for id, grade := range rels {
			if grade > 0 {
				ids = append(ids, id)
			}
		}
		slices.Sort(ids) // map order is random; the build must not be
		s.Qrels[q.ID] = map[string]int{}
		for _, id := range ids {
			d, ok := byID[id]
			if !ok {
				continue // judged but not in the corpus
			}
			ld, err := f.doc(fmt.Sprintf("%s/%s", q.ID, id), d, length(), cfg.MinTokens, cfg.MaxTokens)
			if err != nil {
				return nil, err
			}
			s.Qrels[q.ID][ld.ID] = rels[id]
			s.Candidates[qi] = append(s.Candidates[qi], len(s.Docs))
			s.Docs = append(s.Docs, ld)
		}
	}
	var distractors []int
	for i := range cfg.Distractors {
		ld, err := f.doc(fmt.Sprintf("distractor/%d", i), eval.Doc{}, length(), cfg.MinTokens, cfg.MaxTokens)
		if err != nil {
			return nil, err
		}
		distractors = append(distractors, len(s.Docs))
		s.Docs = append(s.Docs, ld)
	}
	for qi := range s.Candidates {
		s.Candidates[qi] = append(s.Candidates[qi], distractors...)
	}
	return s, nil
}

// filler hands out unjudged documents in a seeded random order, reshuffled
// after each pass.
type filler struct {
	pool  []eval.Doc
	next  int
	r     *rand.Rand
	count func(string) int
}

func (f *filler) shuffle() {
	f.r.Shuffle(len(f.pool), func(i, j int) { f.pool[i], f.pool[j] = f.pool[j], f.pool[i] })
	f.next = 0
}

func (f *filler) take() string {
	if f.next == len(f.pool) {
		f.shuffle()
	}
	f.next++
	return f.pool[f.next-1].IndexText()
}

// doc builds one long document of minTokens to maxTokens tokens: rel
// (none when its ID is "") at a random boundary between whole filler
// documents, added until the length reaches target (≥ minTokens); a
// filler document that would pass maxTokens is skipped for the next one,
// and after maxSkips in a row a document of at least minTokens is done.
func (f *filler) doc(id string, rel eval.Doc, target, minTokens, maxTokens int) (Doc, error) {
	var relText string
	total := 0
	if rel.ID != "" {
		relText = rel.IndexText()
		total = f.count(relText)
	}
	if total > maxTokens {
		return Doc{}, fmt.Errorf("%w: longdoc: document %s has %d tokens, more than the %d of a long document", bench.ErrBadOption, rel.ID, total, maxTokens)
	}
	var parts []string
	for skipped := 0; total < target; {
		p := f.take()
		n := f.count(p) // documents joined by a blank line add their counts
		if total+n > maxTokens {
			// Near max no document may fit: past min, stop short of
			// target rather than search the whole pool.
			if skipped++; skipped == maxSkips && total >= minTokens {
				break
			} else if skipped > len(f.pool) {
				return Doc{}, fmt.Errorf("%w: longdoc: no filler document fits %d more tokens", bench.ErrBadOption, maxTokens-total)
			}
			continue
		}
		parts = append(parts, p)
		total += n
		skipped = 0
	}
	d := Doc{ID: id, Source: rel.ID}
	if rel.ID != "" {
		at := f.r.IntN(len(parts) + 1)
		parts = slices.Insert(parts, at, relText)
		start := 0
		for _, p := range parts[:at] {
			start += len(p) + len(sep)
		}
		d.Span = models.Span{Start: start, End: start + len(relText)}
	}
	d.Text = strings.Join(parts, sep)
	d.Tokens = f.count(d.Text)
	return d, nil
}

// maxSkips is how many filler documents in a row may be too long before a
// long document stops short of its target length.
const maxSkips = 64

// sep joins the documents of a long document.
const sep = "\n\n"
