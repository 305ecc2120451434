package wordpiece

import (
	"hash/maphash"
	"math"
	"strings"
	"sync"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// state is per-call scratch memory, pooled so that a warm tokenizer does not
// allocate per token.
type state struct {
	norm  []byte    // normalised segment
	tmp   []byte    // intermediate normalisation stage
	tmp2  []byte    // second intermediate stage
	piece []byte    // "##" + candidate piece
	a, b  []int32   // ids of the sequences
	offs  []int     // per-document boundaries in b (EncodePairs)
	it    norm.Iter // NFD iterator; norm.Form.Append allocates per call
}

func (t *Tokenizer) getState() *state   { return t.scratch.Get().(*state) }
func (t *Tokenizer) putState(st *state) { t.scratch.Put(st) }

func appendRune(dst []byte, r rune) []byte {
	if r < utf8.RuneSelf {
		return append(dst, byte(r))
	}
	return utf8.AppendRune(dst, r)
}

// appendIDs tokenizes text (no special tokens from the template) and appends
// the ids to dst. Added (special) tokens are matched verbatim in the raw
// text first, leftmost-longest, as HF's AddedVocabulary does for tokens with
// normalized=false; the rest goes through normaliser, pre-tokenizer and
// WordPiece.
//
// With limit > 0, tokenization stops after the first pre-token that brings
// the number of appended ids to limit or more, as HF tokenizers 0.23 does
// when truncation is on (limit = max_length). The truncation rule then sees
// these shortened lengths, which decides ties between two long sequences.
func (t *Tokenizer) appendIDs(st *state, dst []int32, text string, limit int) []int32 {
	base := len(dst)
	if limit <= 0 {
		limit = math.MaxInt
	}
	limit += base
	if !t.hasSpecialTokens {
		dst, _ = t.appendSegment(st, dst, text, limit)
		return dst
	}
	start := 0
	for i := 0; i < len(text); i++ {
		if !t.addedFirst[text[i]] {
			continue
		}
		for _, a := range t.added {
			if len(text)-i >= len(a.content) && text[i:i+len(a.content)] == a.content {
				var done bool
				if dst, done = t.appendSegment(st, dst, text[start:i], limit); done {
					return dst
				}
				// No stop on a special token: Hugging Face checks the limit
				// only after tokenizing an ordinary word, so the count it
				// reports (LongestFirst splits a pair by it) runs on to
				// the next word.
				dst = append(dst, a.id)
				i += len(a.content) - 1
				start = i + 1
				break
			}
		}
	}
	dst, _ = t.appendSegment(st, dst, text[start:], limit)
	return dst
}

// appendSegment normalises, pre-tokenizes and WordPiece-encodes s, stopping
// once len(dst) >= limit at a pre-token boundary (done reports that).
func (t *Tokenizer) appendSegment(st *state, dst []int32, s string, limit int) ([]int32, bool) {
	// Long texts are processed in chunks cut just after an ASCII space, so
	// that a truncated long document is not normalised to its end. The cut
	// changes nothing: ' ' is a starter for NFD, a single character for
	// every normaliser step and a word boundary for the pre-tokenizer.
	for len(s) > chunkBytes {
		cut := strings.LastIndexByte(s[:chunkBytes], ' ')
		if cut < 0 {
			break
		}
		var done bool
		if dst, done = t.split(st, dst, t.normalize(st, s[:cut+1]), limit); done {
			return dst, true
		}
		s = s[cut+1:]
	}
	if len(s) == 0 {
		return dst, false
	}
	return t.split(st, dst, t.normalize(st, s), limit)
}

// chunkBytes is the size of the pieces appendSegment works on.
const chunkBytes = 4096

// normalize runs BertNormalizer on s into st.norm.
func (t *Tokenizer) normalize(st *state, s string) []byte {
	// ASCII bytes are normalised with byte tables; each maximal run of
	// non-ASCII bytes goes through the general path. Cutting there is exact:
	// every step is per character except NFD's canonical reordering, which
	// only moves non-starters, and ASCII characters are all starters.
	buf := st.norm[:0]
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= utf8.RuneSelf {
			j := i + 1
			for j < len(s) && s[j] >= utf8.RuneSelf {
				j++
			}
			buf = t.normalizeSlow(st, buf, s[i:j])
			i = j - 1
			continue
		}
		if t.asciiDrop[c] {
			continue
		}
		buf = append(buf, t.asciiNorm[c])
	}
	st.norm = buf
	return buf
}

// normalizeSlow is BertNormalizer for arbitrary text: clean_text, CJK
// padding, NFD + Mn removal, lowercase, in HF's order. Invalid UTF-8 decodes
// to U+FFFD, which clean_text removes. The result is appended to out, which
// must not alias st.tmp or st.tmp2.
func (t *Tokenizer) normalizeSlow(st *state, out []byte, s string) []byte {
	cfg := &t.cfg
	b := st.tmp[:0]
	for _, r := range s {
		cls := classOf(r)
		if cfg.CleanText {
			if r == 0 || r == utf8.RuneError || cls&clsControl != 0 {
				continue
			}
			if cls&clsSpace != 0 {
				r = ' '
			}
		}
		if cfg.HandleChineseChars && cls&clsCJK != 0 {
			b = append(b, ' ')
			b = appendRune(b, r)
			b = append(b, ' ')
			continue
		}
		b = appendRune(b, r)
	}
	st.tmp = b
	if t.stripAccents {
		d := t.nfd(st, st.tmp2[:0], b)
		st.tmp2 = d
		b = b[:0]
		for i := 0; i < len(d); {
			c := d[i]
			if c < utf8.RuneSelf {
				b = append(b, c)
				i++
				continue
			}
			r, n := utf8.DecodeRune(d[i:])
			if classOf(r)&clsMn == 0 {
				b = append(b, d[i:i+n]...)
			}
			i += n
		}
		st.tmp = b
	}
	if cfg.Lowercase {
		for i := 0; i < len(b); {
			c := b[i]
			if c < utf8.RuneSelf {
				if c >= 'A' && c <= 'Z' {
					c += 'a' - 'A'
				}
				out = append(out, c)
				i++
				continue
			}
			r, n := utf8.DecodeRune(b[i:])
			out = appendLower(out, r)
			i += n
		}
	} else {
		out = append(out, b...)
	}
	return out
}

// nfd appends the NFD form of b to dst, leaving the code points of
// hfNoDecompose whole as HF's older tables do. Those are all starters
// (canonical combining class 0), so cutting the text at them does not change
// canonical ordering.
func (t *Tokenizer) nfd(st *state, dst, b []byte) []byte {
	start := 0
	for i := 0; i < len(b); {
		if b[i] < utf8.RuneSelf {
			i++
			continue
		}
		r, n := utf8.DecodeRune(b[i:])
		if hfNoDecompose[r] {
			dst = appendNFD(st, dst, b[start:i])
			dst = append(dst, b[i:i+n]...)
			start = i + n
		}
		i += n
	}
	return appendNFD(st, dst, b[start:])
}

// appendNFD appends the NFD form of b to dst using the state's iterator.
func appendNFD(st *state, dst, b []byte) []byte {
	if len(b) == 0 {
		return dst
	}
	st.it.Init(norm.NFD, b)
	for !st.it.Done() {
		dst = append(dst, st.it.Next()...)
	}
	return dst
}

// split is BertPreTokenizer (split on whitespace, isolate punctuation) fused
// with the WordPiece model.
func (t *Tokenizer) split(st *state, dst []int32, s []byte, limit int) ([]int32, bool) {
	start := -1
	for i := 0; i < len(s); {
		c := s[i]
		var cls uint8
		n := 1
		if c < utf8.RuneSelf {
			cls = t.asciiSplit[c]
		} else {
			var r rune
			r, n = utf8.DecodeRune(s[i:])
			if c := classOf(r); c&clsSpace != 0 {
				cls = 1
			} else if c&clsPunct != 0 {
				cls = 2
			}
		}
		if cls != 0 {
			if start >= 0 {
				if dst = t.word(st, dst, s[start:i]); len(dst) >= limit {
					return dst, true
				}
				start = -1
			}
			if cls == 2 {
				if dst = t.word(st, dst, s[i:i+n]); len(dst) >= limit {
					return dst, true
				}
			}
		} else if start < 0 {
			start = i
		}
		i += n
	}
	if start >= 0 {
		dst = t.word(st, dst, s[start:])
		return dst, len(dst) >= limit
	}
	// No word here (only spaces or nothing): no check, as Hugging Face
	// makes none without tokenizing a word.
	return dst, false
}

// word is the WordPiece model on one pre-token: greedy longest match first,
// continuation pieces prefixed; an unmatched piece or a word longer than
// MaxInputCharsPerWord characters makes the whole word [UNK].
func (t *Tokenizer) word(st *state, dst []int32, w []byte) []int32 {
	if lim := t.cfg.MaxInputCharsPerWord; len(w) > lim && utf8.RuneCount(w) > lim {
		return append(dst, t.unkID)
	}
	if id, ok := t.vocab[string(w)]; ok {
		return append(dst, id)
	}
	if t.cache != nil {
		if ids, ok := t.cache.get(w); ok {
			return append(dst, ids...)
		}
	}
	mark := len(dst)
	for start := 0; start < len(w); {
		end := len(w)
		if end-start > t.maxTokBytes {
			// No vocabulary entry is longer than maxTokBytes, so longer
			// candidates cannot match; start at the last rune boundary that
			// fits.
			end = start + t.maxTokBytes
			for end > start && !utf8.RuneStart(w[end]) {
				end--
			}
		}
		found := false
		for end > start {
			var id int32
			var ok bool
			if start == 0 {
				id, ok = t.vocab[string(w[:end])]
			} else {
				st.piece = append(append(st.piece[:0], t.prefix...), w[start:end]...)
				id, ok = t.vocab[string(st.piece)]
			}
			if ok {
				dst = append(dst, id)
				found = true
				break
			}
			end--
			for end > start && !utf8.RuneStart(w[end]) {
				end--
			}
		}
		if !found {
			dst = append(dst[:mark], t.unkID)
			break
		}
		start = end
	}
	if t.cache != nil {
		t.cache.put(w, dst[mark:])
	}
	return dst
}

// wordCache maps words that need several pieces to their ids. It is sharded
// to limit lock contention, and a full shard is cleared (cheap, bounded,
// good enough for Zipfian text). Safe for concurrent use.
type wordCache struct {
	seed     maphash.Seed
	perShard int
	shards   [cacheShards]cacheShard
}

const cacheShards = 32

type cacheShard struct {
	mu sync.RWMutex // guards m
	m  map[string][]int32
	_  [40]byte // keep shards on separate cache lines
}

func newWordCache(size int) *wordCache {
	c := &wordCache{seed: maphash.MakeSeed(), perShard: (size + cacheShards - 1) / cacheShards}
	for i := range c.shards {
		c.shards[i].m = make(map[string][]int32)
	}
	return c
}

func (c *wordCache) shard(w []byte) *cacheShard {
	return &c.shards[maphash.Bytes(c.seed, w)%cacheShards]
}

func (c *wordCache) get(w []byte) ([]int32, bool) {
	s := c.shard(w)
	s.mu.RLock()
	ids, ok := s.m[string(w)]
	s.mu.RUnlock()
	return ids, ok
}

func (c *wordCache) put(w []byte, ids []int32) {
	v := make([]int32, len(ids))
	copy(v, ids)
	s := c.shard(w)
	s.mu.Lock()
	if len(s.m) >= c.perShard {
		clear(s.m)
	}
	s.m[string(w)] = v
	s.mu.Unlock()
}
