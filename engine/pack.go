package engine

import (
	"sort"
	"strings"

	"github.com/hybrank/hybrank/models"
)

// TokenCounter counts the tokens a text costs in the caller's model context,
// e.g. (*wordpiece.Tokenizer).CountTokens. Implementations must be safe for
// concurrent use.
type TokenCounter interface {
	CountTokens(text string) int
}

// wordCounter is the fallback TokenCounter used when none is configured:
// models.EstimateTokens, the approximate WordPiece count the server uses
// too (one definition of "tokens without a tokenizer").
type wordCounter struct{}

func (wordCounter) CountTokens(text string) int { return models.EstimateTokens(text) }

// pack selects passages from hits (final order) greedily: each hit whose
// text still fits into budget tokens is taken, in order, and a hit that does
// not fit is skipped (a later, shorter one may fit). budget ≤ 0 means no
// limit. The taken hits of one Source whose spans touch or overlap are then
// coalesced into one passage (see coalesce). Passages are ordered by the
// best final rank among their parts; the total token count is returned.
//
// Coalescing never makes a passage cost more than its parts as long as the
// counter is subadditive over concatenation (true for word and wordpiece
// counts), so the budget holds for the coalesced passages too.
func pack(hits []Hit, tc TokenCounter, budget int) ([]Passage, int) {
	var taken []Passage
	used := 0
	for _, h := range hits {
		text := h.Document.Text
		t := tc.CountTokens(text)
		if budget > 0 && used+t > budget {
			continue
		}
		used += t
		taken = append(taken, Passage{
			Source: h.Document.Source,
			Span:   h.Document.Span,
			Text:   text,
			Tokens: t,
			Score:  h.Score,
			Parts:  []PassagePart{{ID: h.Document.ID, Span: h.Document.Span, FinalRank: h.Provenance.FinalRank}},
		})
	}
	out := coalesce(taken, tc)
	total := 0
	for _, p := range out {
		total += p.Tokens
	}
	return out, total
}

// coalesce merges passages of the same non-empty Source whose non-zero spans
// are adjacent (a.End == b.Start) or overlap. The merged passage spans the
// union, keeps the score of its best-ranked part and lists every part. Its
// text is the parts' texts in span order; when a part is line-aligned (its
// text has exactly Span.Len() lines) the lines it shares with the text so far
// are dropped, otherwise texts are joined with a newline as they are.
func coalesce(ps []Passage, tc TokenCounter) []Passage {
	groups := map[string][]int{}
	var out []Passage
	for i, p := range ps {
		if p.Source == "" || p.Span.IsZero() {
			continue
		}
		groups[p.Source] = append(groups[p.Source], i)
	}
	merged := make([]bool, len(ps))
	for _, idx := range groups {
		if len(idx) < 2 {
			continue
		}
		sort.SliceStable(idx, func(a, b int) bool { return ps[idx[a]].Span.Start < ps[idx[b]].Span.Start })
		for i := 0; i < len(idx); {
			j := i + 1
			cur := ps[idx[i]]
			for j < len(idx) && ps[idx[j]].Span.Start <= cur.Span.End {
				cur = mergeTwo(cur, ps[idx[j]])
				j++
			}
			if j-i > 1 {
				cur.Tokens = tc.CountTokens(cur.Text)
				sort.Slice(cur.Parts, func(a, b int) bool { return cur.Parts[a].FinalRank < cur.Parts[b].FinalRank })
				for _, k := range idx[i:j] {
					merged[k] = true
				}
				out = append(out, cur)
			}
			i = j
		}
	}
	for i, p := range ps {
		if !merged[i] {
			out = append(out, p)
		}
	}
	sort.SliceStable(out, func(a, b int) bool { return out[a].Parts[0].FinalRank < out[b].Parts[0].FinalRank })
	return out
}

// mergeTwo appends b (b.Span.Start ≤ a.Span.End, b.Span.Start ≥
// a.Span.Start) to a.
func mergeTwo(a, b Passage) Passage {
	out := a
	out.Parts = append(append([]PassagePart(nil), a.Parts...), b.Parts...)
	// a's parts are in span order while a chain merges, so its best part
	// is not necessarily its first.
	if bestRank(b.Parts) < bestRank(a.Parts) {
		out.Score = b.Score
	}
	if b.Span.End <= a.Span.End { // b lies inside a
		if !lineAligned(b) {
			out.Text = a.Text + "\n" + b.Text
		}
		return out
	}
	out.Span.End = b.Span.End
	overlap := a.Span.End - b.Span.Start
	switch {
	case lineAligned(b) && overlap > 0:
		lines := splitLines(b.Text)
		out.Text = a.Text + "\n" + strings.Join(lines[overlap:], "\n")
	default:
		out.Text = a.Text + "\n" + b.Text
	}
	return out
}

// bestRank is the smallest FinalRank of parts.
func bestRank(parts []PassagePart) int {
	r := parts[0].FinalRank
	for _, p := range parts[1:] {
		r = min(r, p.FinalRank)
	}
	return r
}

func splitLines(text string) []string {
	return strings.Split(strings.TrimSuffix(text, "\n"), "\n")
}

// lineAligned reports whether p's text has exactly one line per span unit.
func lineAligned(p Passage) bool {
	return p.Span.Len() > 0 && len(splitLines(p.Text)) == p.Span.Len()
}
