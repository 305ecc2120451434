package wordpiece

import (
	"context"
	"fmt"
)

// Encoding is one encoded sequence or pair, special tokens included, not
// padded: its attention mask is all ones (PadBatch writes masks).
type Encoding struct {
	// IDs are the token ids.
	IDs []int32
	// TypeIDs are the token type (segment) ids, same length as IDs.
	TypeIDs []int32
}

// Len is the number of tokens.
func (e Encoding) Len() int { return len(e.IDs) }

// CountTokens returns how many tokens text has, without special tokens and
// without truncation. It does not allocate once the tokenizer is warm.
func (t *Tokenizer) CountTokens(text string) int {
	st := t.getState()
	st.a = t.appendIDs(st, st.a[:0], text, 0)
	n := len(st.a)
	t.putState(st)
	return n
}

// IDs appends the ids of text (no special tokens, no truncation) to dst.
func (t *Tokenizer) IDs(dst []int32, text string) []int32 {
	st := t.getState()
	dst = t.appendIDs(st, dst, text, 0)
	t.putState(st)
	return dst
}

// Tokens returns the token strings of text (no special tokens), for
// debugging and tests.
func (t *Tokenizer) Tokens(text string) []string {
	ids := t.IDs(nil, text)
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = t.IDToToken(id)
	}
	return out
}

// Encode encodes one text with the single-sequence template ([CLS] A [SEP])
// and truncates it to maxLen tokens, special tokens included (maxLen <= 0:
// no truncation).
func (t *Tokenizer) Encode(text string, maxLen int) (Encoding, error) {
	st := t.getState()
	defer t.putState(st)
	st.a = t.appendIDs(st, st.a[:0], text, maxLen)
	a := st.a
	if maxLen > 0 {
		budget := maxLen - t.nSingle
		if budget < 0 {
			return Encoding{}, fmt.Errorf("%w: %d < %d", ErrMaxLen, maxLen, t.nSingle)
		}
		a = a[:min(len(a), budget)]
	}
	n := len(a) + t.nSingle
	e := Encoding{IDs: make([]int32, 0, n), TypeIDs: make([]int32, 0, n)}
	e.IDs, e.TypeIDs = t.build(t.single, a, nil, e.IDs, e.TypeIDs)
	return e, nil
}

// EncodePair encodes (q, d) with the pair template ([CLS] q [SEP] d [SEP],
// type ids 0 up to the first [SEP] and 1 after) truncated to maxLen tokens
// including special tokens (maxLen <= 0: no truncation) with HF's
// algorithm for strat.
func (t *Tokenizer) EncodePair(q, d string, maxLen int, strat Truncation) (Encoding, error) {
	st := t.getState()
	defer t.putState(st)
	st.a = t.appendIDs(st, st.a[:0], q, maxLen)
	st.b = t.appendIDs(st, st.b[:0], d, maxLen)
	n1, n2, err := t.pairLens(len(st.a), len(st.b), maxLen, strat)
	if err != nil {
		return Encoding{}, err
	}
	n := n1 + n2 + t.nPair
	e := Encoding{IDs: make([]int32, 0, n), TypeIDs: make([]int32, 0, n)}
	e.IDs, e.TypeIDs = t.build(t.pair, st.a[:n1], st.b[:n2], e.IDs, e.TypeIDs)
	return e, nil
}

// EncodePairs encodes (q, docs[i]) for every document like EncodePair,
// tokenizing the query once. All encodings share two backing arrays (one
// allocation each for the whole batch). ctx is polled every 1024 documents.
// A document that OnlySecond cannot cut enough fails the whole call, as HF's
// encodeBatch does.
func (t *Tokenizer) EncodePairs(ctx context.Context, q string, docs []string, maxLen int, strat Truncation) ([]Encoding, error) {
	st := t.getState()
	defer t.putState(st)
	st.a = t.appendIDs(st, st.a[:0], q, maxLen)
	b := st.b[:0]
	offs := append(st.offs[:0], 0)
	total := 0
	for i, d := range docs {
		if i&1023 == 1023 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		b = t.appendIDs(st, b, d, maxLen)
		offs = append(offs, len(b))
		n1, n2, err := t.pairLens(len(st.a), len(b)-offs[i], maxLen, strat)
		if err != nil {
			st.b, st.offs = b, offs
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		total += n1 + n2 + t.nPair
	}
	st.b, st.offs = b, offs
	ids := make([]int32, total)
	types := make([]int32, total)
	out := make([]Encoding, len(docs))
	pos := 0
	for i := range docs {
		db := b[offs[i]:offs[i+1]]
		n1, n2, _ := t.pairLens(len(st.a), len(db), maxLen, strat)
		n := n1 + n2 + t.nPair
		ei, et := t.build(t.pair, st.a[:n1], db[:n2], ids[pos:pos:pos+n], types[pos:pos:pos+n])
		out[i] = Encoding{IDs: ei, TypeIDs: et}
		pos += n
	}
	return out, nil
}

// build lays out a template with sequences a and b into ids and types.
func (t *Tokenizer) build(tmpl []tmplPiece, a, b []int32, ids, types []int32) ([]int32, []int32) {
	for _, p := range tmpl {
		var src []int32
		switch p.seq {
		case -1:
			src = p.ids
		case 0:
			src = a
		default:
			src = b
		}
		ids = append(ids, src...)
		for range src {
			types = append(types, p.typeID)
		}
	}
	return ids, types
}

// pairLens applies HF's truncate_encodings to sequence lengths n1, n2 for a
// pair with maxLen tokens in all.
func (t *Tokenizer) pairLens(n1, n2, maxLen int, strat Truncation) (int, int, error) {
	if maxLen <= 0 {
		return n1, n2, nil
	}
	budget := maxLen - t.nPair
	if budget < 0 {
		return 0, 0, fmt.Errorf("%w: %d < %d", ErrMaxLen, maxLen, t.nPair)
	}
	// n1 and n2 come from appendIDs with limit maxLen: like HF 0.23, each
	// sequence stops at the first pre-token boundary at or past maxLen
	// tokens, which decides which sequence gets the larger half when both are
	// long (checked against the library by TestTruncationGridHF and
	// TestParityHF).
	return truncateLens(n1, n2, budget, strat)
}

// truncateLens is HF's truncate_encodings (tokenizers/src/utils/truncation.rs)
// on lengths. For LongestFirst: if both sequences are longer than half the
// budget, the first gets floor(budget/2) and the second the rest, except that
// a strictly longer first sequence gets the larger half; otherwise the
// shorter one is kept whole and the longer one gets what is left.
func truncateLens(n1, n2, budget int, strat Truncation) (int, int, error) {
	if budget == 0 {
		return 0, 0, nil
	}
	total := n1 + n2
	if total <= budget {
		return n1, n2, nil
	}
	toRemove := total - budget
	switch strat {
	case LongestFirst:
		a, b := n1, n2
		swap := a > b
		if swap {
			a, b = b, a
		}
		if a > budget {
			b = a
		} else {
			b = max(a, budget-a)
		}
		if a+b > budget {
			a = budget / 2
			b = a + budget%2
		}
		if swap {
			a, b = b, a
		}
		return min(n1, a), min(n2, b), nil
	case OnlySecond:
		if n2 > toRemove {
			return n1, n2 - toRemove, nil
		}
		return 0, 0, ErrSequenceTooShort
	case OnlyFirst:
		if n1 > toRemove {
			return n1 - toRemove, n2, nil
		}
		return 0, 0, ErrSequenceTooShort
	}
	return 0, 0, fmt.Errorf("%w: %v", ErrConfig, strat)
}

// PadBatch lays encodings out as a row-major [len(encs), seqLen] batch for a
// model: ids (padded with the pad id), token type ids (pad type id) and the
// attention mask (1 for tokens, 0 for padding). seqLen is the longest
// encoding, rounded up to Config.PadToMultipleOf. The slices passed in are
// reused when large enough (pass nil to allocate), so a caller that keeps
// them across batches does not allocate.
func (t *Tokenizer) PadBatch(encs []Encoding, ids, types, mask []int64) (outIDs, outTypes, outMask []int64, seqLen int) {
	for _, e := range encs {
		seqLen = max(seqLen, len(e.IDs))
	}
	if m := t.cfg.PadToMultipleOf; m > 1 && seqLen%m != 0 {
		seqLen += m - seqLen%m
	}
	n := len(encs) * seqLen
	ids, types, mask = grow64(ids, n), grow64(types, n), grow64(mask, n)
	pad, padType := int64(t.padID), int64(t.padTypeID)
	for i, e := range encs {
		row := i * seqLen
		for j, id := range e.IDs {
			ids[row+j] = int64(id)
			types[row+j] = int64(e.TypeIDs[j])
			mask[row+j] = 1
		}
		for j := row + len(e.IDs); j < row+seqLen; j++ {
			ids[j], types[j], mask[j] = pad, padType, 0
		}
	}
	return ids, types, mask, seqLen
}

func grow64(s []int64, n int) []int64 {
	if cap(s) >= n {
		return s[:n]
	}
	return make([]int64, n)
}
