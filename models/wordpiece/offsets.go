package wordpiece

import (
	"bytes"
	"unicode/utf8"
)

// TokenSpan is one token of TokenSpans: its id and the bytes
// text[Start:End] of the original text it was made from.
type TokenSpan struct {
	ID         int32
	Start, End int
}

// TokenSpans appends to dst the tokens of text (no special tokens from the
// template, no truncation) with their byte offsets in text, as Hugging
// Face tokenizers' Encoding offsets. The ids are exactly those of IDs.
//
// A word piece spans the original bytes its normalised characters came
// from: "Café" gives "cafe" over all five bytes, "unaffable" gives "un",
// "##aff" and "##able" over 0:2, 2:5 and 5:9 (the "##" prefix is not in the
// text). Characters that normalisation turns into several (lowercase 'İ' is
// "i̇") give every piece made from them the character's whole span; an
// [UNK] spans its whole word. Added tokens span their verbatim match.
//
// This is the slow path: it allocates, and /tokenize-style callers use it;
// CountTokens, IDs and Encode do not track offsets.
func (t *Tokenizer) TokenSpans(dst []TokenSpan, text string) []TokenSpan {
	st := t.getState()
	defer t.putState(st)
	if !t.hasSpecialTokens {
		return t.spanSegment(st, dst, text, 0)
	}
	// Added tokens are matched in the raw text as appendIDs does.
	start := 0
	for i := 0; i < len(text); i++ {
		if !t.addedFirst[text[i]] {
			continue
		}
		for _, a := range t.added {
			if len(text)-i >= len(a.content) && text[i:i+len(a.content)] == a.content {
				dst = t.spanSegment(st, dst, text[start:i], start)
				dst = append(dst, TokenSpan{ID: a.id, Start: i, End: i + len(a.content)})
				i += len(a.content) - 1
				start = i + 1
				break
			}
		}
	}
	return t.spanSegment(st, dst, text[start:], start)
}

// span is the original bytes [start, end) one normalised byte came from.
type span struct{ start, end int }

// spanSegment is appendSegment with offsets: s is text[base:] up to the
// next added token. The whole segment is normalised at once (appendSegment
// cuts it into chunks at ASCII spaces, which changes nothing).
func (t *Tokenizer) spanSegment(st *state, dst []TokenSpan, s string, base int) []TokenSpan {
	if len(s) == 0 {
		return dst
	}
	norm, spans := t.normalizeSpans(st, s)
	// BertPreTokenizer, as split: whitespace separates, punctuation is a
	// word of its own.
	word := func(ws, we int) {
		dst = t.spanWord(st, dst, norm[ws:we], spans[ws:we], base)
	}
	start := -1
	for i := 0; i < len(norm); {
		c := norm[i]
		var cls uint8
		n := 1
		if c < utf8.RuneSelf {
			cls = t.asciiSplit[c]
		} else {
			var r rune
			r, n = utf8.DecodeRune(norm[i:])
			if c := classOf(r); c&clsSpace != 0 {
				cls = 1
			} else if c&clsPunct != 0 {
				cls = 2
			}
		}
		if cls != 0 {
			if start >= 0 {
				word(start, i)
				start = -1
			}
			if cls == 2 {
				word(i, i+n)
			}
		} else if start < 0 {
			start = i
		}
		i += n
	}
	if start >= 0 {
		word(start, len(norm))
	}
	return dst
}

// spanWord runs the WordPiece model on one normalised word w (whose bytes
// came from spans) and appends its pieces with their original offsets. A
// piece's length in w is its vocabulary entry's, less the continuation
// prefix after the first piece.
func (t *Tokenizer) spanWord(st *state, dst []TokenSpan, w []byte, spans []span, base int) []TokenSpan {
	st.a = t.word(st, st.a[:0], w)
	ids := st.a
	whole := func() []TokenSpan {
		for _, id := range ids {
			dst = append(dst, TokenSpan{ID: id, Start: base + spans[0].start, End: base + spans[len(spans)-1].end})
		}
		return dst
	}
	if len(ids) == 1 {
		return whole()
	}
	mark := len(dst)
	pos := 0
	for k, id := range ids {
		n := len(t.IDToToken(id))
		if k > 0 {
			n -= len(t.prefix)
		}
		if n <= 0 || pos+n > len(w) {
			// Cannot happen for pieces of this vocabulary; stay correct
			// (if coarse) rather than slice out of range.
			dst = dst[:mark]
			return whole()
		}
		dst = append(dst, TokenSpan{ID: id, Start: base + spans[pos].start, End: base + spans[pos+n-1].end})
		pos += n
	}
	if pos != len(w) {
		dst = dst[:mark]
		return whole()
	}
	return dst
}

// normalizeSpans is normalize that also returns, for each normalised byte,
// the bytes of s it came from. ASCII bytes map one to one. A run of
// non-ASCII bytes is normalised as normalize does (normalizeSlow on the
// whole run), and each character's output is credited to that character
// when normalising character by character gives the same bytes, which it
// does unless NFD reorders combining marks; otherwise every byte of the
// run's output spans the whole run. The bytes are thus exactly normalize's,
// so the ids are exactly IDs'.
func (t *Tokenizer) normalizeSpans(st *state, s string) ([]byte, []span) {
	var out []byte
	var spans []span
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= utf8.RuneSelf {
			j := i + 1
			for j < len(s) && s[j] >= utf8.RuneSelf {
				j++
			}
			out, spans = t.normalizeRunSpans(st, out, spans, s[i:j], i)
			i = j - 1
			continue
		}
		if t.asciiDrop[c] {
			continue
		}
		out = append(out, t.asciiNorm[c])
		spans = append(spans, span{i, i + 1})
	}
	return out, spans
}

// normalizeRunSpans appends the normalised run (which starts at byte base
// of the segment) and its spans.
func (t *Tokenizer) normalizeRunSpans(st *state, out []byte, spans []span, run string, base int) ([]byte, []span) {
	whole := t.normalizeSlow(st, nil, run)
	mark := len(out)
	for k := 0; k < len(run); {
		_, n := utf8.DecodeRuneInString(run[k:])
		before := len(out)
		out = t.normalizeSlow(st, out, run[k:k+n])
		for range len(out) - before {
			spans = append(spans, span{base + k, base + k + n})
		}
		k += n
	}
	if bytes.Equal(out[mark:], whole) {
		return out, spans
	}
	out, spans = append(out[:mark], whole...), spans[:mark]
	for range whole {
		spans = append(spans, span{base, base + len(run)})
	}
	return out, spans
}
