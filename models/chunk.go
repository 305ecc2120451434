package models

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/hybrank/hybrank/simd"
)

// Span is a half-open range [Start, End) of positions in a text. Two spans
// of the same text are adjacent when one's End equals the other's Start.
// The zero Span means "no position". The unit is the user's: the windows
// of chunked scoring (Chunking) are byte offsets into the document as
// given; engine.Document.Span (the same type) counts whatever unit the
// caller chose for a document's Source (lines, bytes, pages).
type Span struct {
	Start int `json:"start"`
	End   int `json:"end"`
}

// IsZero reports whether s carries no position.
func (s Span) IsZero() bool { return s.Start == 0 && s.End == 0 }

// Len is End − Start.
func (s Span) Len() int { return s.End - s.Start }

// Aggregations of window scores (Chunking.Aggregate).
const (
	// AggregateMax scores a document by its best window (Cohere's and
	// Elasticsearch's rule for long documents).
	AggregateMax = "max"
	// AggregateMeanTopK scores a document by the mean of its TopK best
	// windows (all of them when it has fewer): a document relevant in
	// several places beats one with a single lucky window.
	AggregateMeanTopK = "mean_top_k"
)

// Chunking defaults and limits.
const (
	// DefaultMaxChunks is the window cap when Chunking.MaxChunks is 0: 32
	// windows of a 512-token cross-encoder at stride 256 cover about 8,000
	// tokens, and cost 32 pairs.
	DefaultMaxChunks = 32
	// MaxChunksLimit bounds Chunking.MaxChunks: one document may not ask
	// for more model calls than this.
	MaxChunksLimit = 1024
	// DefaultTopK is Chunking.TopK when it is 0.
	DefaultTopK = 3
	// maxSnap bounds how far (in tokens) a window's edge moves back to the
	// nearest whitespace between tokens.
	maxSnap = 32
)

// Chunking configures scoring documents longer than the model's window:
// each document is split into overlapping windows of tokens, every window
// is scored (or embedded) as an ordinary input, and the windows' scores are
// aggregated into the document's score. The zero value means off: a long
// document is truncated to the window, as without chunking. A plain value,
// safe to copy and compare.
//
// Windows are as long as the model's window allows (ScoreSpans: the
// window less the query and three special tokens; EmbedSpans: less the
// prefix and two special tokens) and start Stride tokens apart, so
// consecutive windows overlap by window − Stride tokens (none when Stride
// is at least the window, which is then used as the stride). Window edges
// move back to the nearest whitespace between tokens within 32 tokens, so
// that no word is cut and a window's text tokenizes alone to exactly its
// tokens; the stride is thus approximate by up to a word. The last window
// ends at the document's end.
//
// When a document has more windows than MaxChunks, MaxChunks of them are
// kept, evenly spread over the document: the first and the last always,
// the others at equal steps between (window i·(n−1)/(MaxChunks−1),
// rounded). The relevant part of a long document can be anywhere, so
// spreading the budget loses less than keeping the first MaxChunks.
type Chunking struct {
	// Stride is the distance in tokens between the starts of consecutive
	// windows; 0 turns chunking off.
	Stride int `json:"stride"`
	// MaxChunks caps the windows scored per document (0 means
	// DefaultMaxChunks, at most MaxChunksLimit): the cost of a document is
	// at most MaxChunks pairs.
	MaxChunks int `json:"max_chunks_per_doc,omitempty"`
	// Aggregate is how window scores make the document's score:
	// AggregateMax ("" means it) or AggregateMeanTopK.
	Aggregate string `json:"aggregate,omitempty"`
	// TopK is the k of AggregateMeanTopK (0 means DefaultTopK); it must be
	// 0 with AggregateMax.
	TopK int `json:"top_k,omitempty"`
}

// Enabled reports whether c asks for chunking (Stride > 0).
func (c Chunking) Enabled() bool { return c.Stride > 0 }

// Validate reports the first problem with c, wrapping ErrInvalidConfig.
// The zero value is valid (off); settings without a Stride are an error,
// so that a request that meant to chunk is not silently truncated.
func (c Chunking) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: chunking: "+format, append([]any{ErrInvalidConfig}, args...)...)
	}
	switch {
	case c.Stride < 0:
		return bad("stride %d < 0", c.Stride)
	case c.MaxChunks < 0 || c.MaxChunks > MaxChunksLimit:
		return bad("max_chunks_per_doc %d outside [0, %d]", c.MaxChunks, MaxChunksLimit)
	case c.Aggregate != "" && c.Aggregate != AggregateMax && c.Aggregate != AggregateMeanTopK:
		return bad("aggregate %q (want %q or %q)", c.Aggregate, AggregateMax, AggregateMeanTopK)
	case c.TopK < 0 || c.TopK > MaxChunksLimit:
		return bad("top_k %d outside [0, %d]", c.TopK, MaxChunksLimit)
	case c.TopK > 0 && c.Aggregate != AggregateMeanTopK:
		return bad("top_k %d is only used with aggregate %q", c.TopK, AggregateMeanTopK)
	case c.Stride == 0 && c != Chunking{}:
		return bad("stride is required (0 means no chunking)")
	}
	return nil
}

// Cap returns the windows kept per document: MaxChunks, or
// DefaultMaxChunks when it is 0.
func (c Chunking) Cap() int {
	if c.MaxChunks == 0 {
		return DefaultMaxChunks
	}
	return c.MaxChunks
}

// K returns the k of AggregateMeanTopK: TopK, or DefaultTopK when it is 0.
func (c Chunking) K() int {
	if c.TopK == 0 {
		return DefaultTopK
	}
	return c.TopK
}

// String prints c for reports: "off", or its settings with the defaults
// filled in.
func (c Chunking) String() string {
	if !c.Enabled() {
		return "off"
	}
	s := fmt.Sprintf("stride=%d max_chunks=%d aggregate=", c.Stride, c.Cap())
	if c.Aggregate == AggregateMeanTopK {
		return s + fmt.Sprintf("%s k=%d", AggregateMeanTopK, c.K())
	}
	return s + AggregateMax
}

// MaxQueryTokens is the most word pieces a cross-encoder of window maxLen
// keeps of a query: half the budget beside the three special tokens, the
// same prefix for every document of a ranking (package models/ort).
func MaxQueryTokens(maxLen int) int { return (maxLen - 3) / 2 }

// MaxQueryTokens and PairWindow count BERT's three special tokens of a
// pair ([CLS] q [SEP] d [SEP]). A RoBERTa-style tokenizer (loaded through
// Hugging Face's library, build tag hftokenizers) adds four (<s> q </s></s>
// d </s>), so its full windows lose their last token to the pair's
// truncation.
//
// PairWindow is how many document tokens a cross-encoder of window maxLen
// holds beside a query of queryTokens word pieces ([CLS] q [SEP] d [SEP],
// the query cut to MaxQueryTokens): the window size of chunked reranking.
func PairWindow(maxLen, queryTokens int) int {
	return maxLen - 3 - min(queryTokens, MaxQueryTokens(maxLen))
}

// Windows splits a document into windows of at most size tokens, as the
// type's comment says. tokens are the document's tokens as byte spans of
// text, in order (the model tokenizer's offsets, no special tokens). It
// returns the byte spans of the windows kept under the cap, in document
// order, and how many windows the document had before the cap. A document
// without tokens is one window, the zero Span. size must be at least 1.
func (c Chunking) Windows(text string, tokens []Span, size int) (kept []Span, total int) {
	n := len(tokens)
	if n == 0 {
		return []Span{{}}, 1
	}
	size = max(size, 1)
	stride := min(max(c.Stride, 1), size)
	// gap reports whether whitespace separates token i-1 from token i:
	// a window may start at i (and one may end before it) without cutting
	// a word.
	gap := func(i int) bool {
		a, b := tokens[i-1].End, tokens[i].Start
		// Pieces of one character share its span (a ≥ b): no gap.
		return 0 <= a && a < b && b <= len(text) && strings.ContainsFunc(text[a:b], unicode.IsSpace)
	}
	// snap moves position p (start + step) back to a gap, by at most
	// min(maxSnap, step/2) tokens; without one it stays (the cut is then
	// inside a word).
	snap := func(start, step int) int {
		lim := max(start+1, start+step-min(maxSnap, step/2))
		for q := start + step; q >= lim; q-- {
			if gap(q) {
				return q
			}
		}
		return start + step
	}
	type win struct{ from, to int }
	var wins []win
	for start := 0; ; {
		if start+size >= n {
			wins = append(wins, win{start, n})
			break
		}
		end := snap(start, size)
		wins = append(wins, win{start, end})
		// The next window starts at most where this one ended: no token
		// is skipped.
		start = min(snap(start, stride), end)
	}
	total = len(wins)
	keep := c.Cap()
	if total > keep {
		spread := make([]win, keep)
		for k := range spread {
			i := 0
			if keep > 1 {
				i = (k*(total-1) + (keep-1)/2) / (keep - 1)
			}
			spread[k] = wins[i]
		}
		wins = spread
	}
	kept = make([]Span, len(wins))
	for i, w := range wins {
		// Clamped, so that a tokenizer's odd offsets cannot make a span
		// that does not slice text.
		start := min(max(tokens[w.from].Start, 0), len(text))
		kept[i] = Span{Start: start, End: min(max(tokens[w.to-1].End, start), len(text))}
	}
	return kept, total
}

// Combine aggregates the scores of one document's windows as c.Aggregate
// says and returns the document's score and the index of its best window
// (the first of equal best). NaN scores are skipped; no scores (or only
// NaN) give NaN and -1.
func (c Chunking) Combine(scores []float32) (score float32, best int) {
	best = -1
	for i, s := range scores {
		if s != s {
			continue
		}
		if best < 0 || s > scores[best] {
			best = i
		}
	}
	if best < 0 {
		return float32(math.NaN()), -1
	}
	if c.Aggregate != AggregateMeanTopK {
		return scores[best], best
	}
	top := make([]float32, 0, len(scores))
	for _, s := range scores {
		if s == s {
			top = append(top, s)
		}
	}
	slices.SortFunc(top, func(a, b float32) int {
		switch {
		case a > b:
			return -1
		case a < b:
			return 1
		}
		return 0
	})
	top = top[:min(c.K(), len(top))]
	var sum float64
	for _, s := range top {
		sum += float64(s)
	}
	return float32(sum / float64(len(top))), best
}

// ChunkPlan is the windows of a call's documents laid out for one scoring
// call: all windows of all documents go to the model together, so they
// share batches with each other (and, in the server, with other requests'
// pairs). Build it with Chunking.Plan. A plain value; its slices are
// owned by the caller.
type ChunkPlan struct {
	// Docs are the documents the spans index (valid UTF-8).
	Docs []string
	// Windows are every document's kept windows, document after document.
	Windows []Span
	// Starts holds, per document, the index of its first window:
	// document i's windows are Windows[Starts[i]:Starts[i+1]].
	Starts []int
	// Totals are the documents' window counts before the cap.
	Totals []int
}

// Plan splits every document into windows (Windows) of at most size
// tokens. offsets returns a text's tokens as byte spans (the model
// tokenizer's). Documents that are not valid UTF-8 are made so first
// (each run of invalid bytes becomes one U+FFFD, as models/ort does):
// spans index ChunkPlan.Docs.
func (c Chunking) Plan(docs []string, size int, offsets func(text string) ([]Span, error)) (ChunkPlan, error) {
	p := ChunkPlan{Docs: make([]string, len(docs)), Starts: make([]int, len(docs)+1), Totals: make([]int, len(docs))}
	for i, d := range docs {
		if !utf8.ValidString(d) {
			d = strings.ToValidUTF8(d, "\uFFFD")
		}
		p.Docs[i] = d
		toks, err := offsets(d)
		if err != nil {
			return ChunkPlan{}, fmt.Errorf("document %d: %w", i, err)
		}
		w, total := c.Windows(d, toks, size)
		for k := range w {
			if w[k], err = fitWindow(d, w[k], size, offsets); err != nil {
				return ChunkPlan{}, fmt.Errorf("document %d: %w", i, err)
			}
		}
		p.Starts[i] = len(p.Windows)
		p.Windows = append(p.Windows, w...)
		p.Totals[i] = total
	}
	p.Starts[len(docs)] = len(p.Windows)
	return p, nil
}

// fitWindow returns w, shortened at its end until its text tokenizes alone
// to at most size tokens. A window cut inside a word (a run without
// whitespace longer than the snap allows: a URL, minified code) may
// tokenize alone to more pieces than it covered in the document ("##ab"
// becomes "a", "##b"); the model would then cut the excess off the end
// while the span claimed it. Windows bounded by whitespace (or the text's
// ends) on both sides tokenize as they did in the document and are not
// tokenized again.
func fitWindow(text string, w Span, size int, offsets func(string) ([]Span, error)) (Span, error) {
	inWord := func(i int) bool { // whether byte offset i cuts between two non-space runes
		if i <= 0 || i >= len(text) {
			return false
		}
		a, _ := utf8.DecodeLastRuneInString(text[:i])
		b, _ := utf8.DecodeRuneInString(text[i:])
		return !unicode.IsSpace(a) && !unicode.IsSpace(b)
	}
	if !inWord(w.Start) && !inWord(w.End) {
		return w, nil
	}
	for {
		toks, err := offsets(text[w.Start:w.End])
		if err != nil {
			return w, err
		}
		if len(toks) <= size || size < 1 {
			return w, nil
		}
		end := w.Start + min(max(toks[size-1].End, 0), w.End-w.Start)
		if end >= w.End { // offsets that do not shrink it: leave it to the model's cut
			return w, nil
		}
		w.End = end
	}
}

// Texts returns the text of every window, in Windows order.
func (p ChunkPlan) Texts() []string {
	out := make([]string, len(p.Windows))
	for d := range p.Docs {
		for w := p.Starts[d]; w < p.Starts[d+1]; w++ {
			out[w] = p.Docs[d][p.Windows[w].Start:p.Windows[w].End]
		}
	}
	return out
}

// Pairs returns the (query, window text) pair of every window, in Windows
// order.
func (p ChunkPlan) Pairs(query string) []Pair {
	texts := p.Texts()
	out := make([]Pair, len(texts))
	for i, t := range texts {
		out[i] = Pair{Query: query, Doc: t}
	}
	return out
}

// SpanScore is one document's chunked score.
type SpanScore struct {
	// Score is the aggregate of the window scores (Chunking.Aggregate).
	Score float32 `json:"score"`
	// Span is the best window's bytes in the document.
	Span Span `json:"span"`
	// Windows are the windows scored (at most Chunking.Cap), in document
	// order, and Scores their scores.
	Windows []Span    `json:"windows"`
	Scores  []float32 `json:"scores"`
	// Total is the document's window count before the cap.
	Total int `json:"total"`
}

// Scores aggregates the window scores of a scoring call (one per window,
// in Windows order) into one SpanScore per document, with c.Combine. It
// reports an error when scores does not match the plan.
func (p ChunkPlan) Scores(c Chunking, scores []float32) ([]SpanScore, error) {
	if len(scores) != len(p.Windows) {
		return nil, fmt.Errorf("chunking: %d scores for %d windows", len(scores), len(p.Windows))
	}
	out := make([]SpanScore, len(p.Docs))
	for d := range out {
		w := p.Windows[p.Starts[d]:p.Starts[d+1]:p.Starts[d+1]]
		s := scores[p.Starts[d]:p.Starts[d+1]:p.Starts[d+1]]
		score, best := c.Combine(s)
		out[d] = SpanScore{Score: score, Windows: w, Scores: s, Total: p.Totals[d]}
		if best >= 0 {
			out[d].Span = w[best]
		}
	}
	return out, nil
}

// SpanVectors is one text's chunked embedding: one vector per window.
type SpanVectors struct {
	// Windows are the windows embedded (at most Chunking.Cap), in text
	// order, and Vectors their vectors (as Embed returns them).
	Windows []Span      `json:"windows"`
	Vectors [][]float32 `json:"vectors"`
	// Total is the text's window count before the cap.
	Total int `json:"total"`
}

// Vectors groups the window vectors of an embedding call (one per window,
// in Windows order) by document. It reports an error when vecs does not
// match the plan.
func (p ChunkPlan) Vectors(vecs [][]float32) ([]SpanVectors, error) {
	if len(vecs) != len(p.Windows) {
		return nil, fmt.Errorf("chunking: %d vectors for %d windows", len(vecs), len(p.Windows))
	}
	out := make([]SpanVectors, len(p.Docs))
	for d := range out {
		a, b := p.Starts[d], p.Starts[d+1]
		out[d] = SpanVectors{Windows: p.Windows[a:b:b], Vectors: vecs[a:b:b], Total: p.Totals[d]}
	}
	return out, nil
}

// Best scores the windows of v against a query vector q by dot product
// (cosine for normalised vectors), aggregates them with c.Combine and
// returns the score with the best window's span; the zero Span and NaN
// when v has no windows (or none of q's length).
func (v SpanVectors) Best(c Chunking, q []float32) (float32, Span) {
	scores := make([]float32, len(v.Vectors))
	for i, w := range v.Vectors {
		scores[i] = float32(math.NaN())
		if len(w) == len(q) {
			scores[i] = simd.Dot(w, q)
		}
	}
	score, best := c.Combine(scores)
	if best < 0 {
		return score, Span{}
	}
	return score, v.Windows[best]
}
