package analysis

import (
	"errors"
	"fmt"
	"hash/fnv"
	"sort"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/hybrank/hybrank/analysis/porter2"
)

// Stemmer names accepted by Config.Stemmer.
const (
	// StemmerNone leaves tokens as they are.
	StemmerNone = "none"
	// StemmerSnowballEnglish is the Snowball English (Porter2) stemmer of
	// package porter2, output-identical to kljensen/snowball's english.Stem
	// with which our results match bm25s (PyStemmer "english"); the default.
	StemmerSnowballEnglish = "snowball-en"
)

// ErrInvalidConfig is returned (wrapped) by Config.Validate and New for a
// configuration that cannot be used.
var ErrInvalidConfig = errors.New("analysis: invalid config")

// Config selects the steps of an Analyzer. The zero value is not valid; start
// from DefaultConfig. Every field except StemCacheEntries is part of Version.
type Config struct {
	// Lowercase folds tokens to lower case (Unicode simple mapping, plus
	// U+0130 as Python does). bm25s: true.
	Lowercase bool `json:"lowercase"`
	// MinTokenLen drops tokens shorter than this many code points; at least
	// 1. bm25s's regex \w\w+ means 2.
	MinTokenLen int `json:"min_token_len"`
	// MaxTokenLen drops tokens longer than this many code points (long
	// base64 or hex blobs); 0 means no limit. bm25s: 0.
	MaxTokenLen int `json:"max_token_len"`
	// Stopwords names the stopword list: StopwordsBM25S (default),
	// StopwordsBM25SPlus or StopwordsNone. Stopwords are matched after
	// lowercasing and before stemming, as in bm25s.
	Stopwords string `json:"stopwords"`
	// ExtraStopwords are removed in addition to the named list; compared
	// with the lowercased token.
	ExtraStopwords []string `json:"extra_stopwords,omitempty"`
	// Stemmer is StemmerSnowballEnglish (default) or StemmerNone.
	Stemmer string `json:"stemmer"`
	// CodeAware additionally splits each token at '_', at lower→upper case
	// changes (fooBar → foo, bar; HTTPServer → http, server) and at
	// letter/digit boundaries (utf8 → utf, 8), emitting the whole token
	// first and then its parts. Off by default (bm25s does not do this).
	CodeAware bool `json:"code_aware"`
	// Expansions maps a single lowercased token to text that AnalyzeQuery
	// appends, analyzed with the same settings, after the token's own terms
	// (e.g. "uav" → "unmanned aerial vehicle"). Analyze ignores it. Keys
	// must be one token of word characters. Nil means no expansion.
	Expansions map[string]string `json:"expansions,omitempty"`
	// StemCacheEntries bounds the cache of token → term results shared by
	// all goroutines; once full, new tokens are stemmed on every call.
	// 0 disables the cache. Not part of Version.
	StemCacheEntries int `json:"stem_cache_entries"`
}

// DefaultConfig returns the bm25s-compatible configuration: lowercase,
// tokens of ≥ 2 word characters, bm25s English stopwords, Snowball English.
func DefaultConfig() Config {
	return Config{
		Lowercase:        true,
		MinTokenLen:      2,
		Stopwords:        StopwordsBM25S,
		Stemmer:          StemmerSnowballEnglish,
		StemCacheEntries: 1 << 20,
	}
}

// Validate reports whether c can be used by New.
func (c Config) Validate() error {
	if c.MinTokenLen < 1 {
		return fmt.Errorf("%w: MinTokenLen %d < 1", ErrInvalidConfig, c.MinTokenLen)
	}
	if c.MaxTokenLen < 0 || (c.MaxTokenLen > 0 && c.MaxTokenLen < c.MinTokenLen) {
		return fmt.Errorf("%w: MaxTokenLen %d (MinTokenLen %d)", ErrInvalidConfig, c.MaxTokenLen, c.MinTokenLen)
	}
	switch c.Stopwords {
	case StopwordsNone, StopwordsBM25S, StopwordsBM25SPlus:
	default:
		return fmt.Errorf("%w: unknown stopword list %q", ErrInvalidConfig, c.Stopwords)
	}
	switch c.Stemmer {
	case StemmerNone, StemmerSnowballEnglish:
	default:
		return fmt.Errorf("%w: unknown stemmer %q", ErrInvalidConfig, c.Stemmer)
	}
	if c.StemCacheEntries < 0 {
		return fmt.Errorf("%w: StemCacheEntries %d < 0", ErrInvalidConfig, c.StemCacheEntries)
	}
	for k := range c.Expansions {
		if k == "" {
			return fmt.Errorf("%w: empty expansion key", ErrInvalidConfig)
		}
		for _, r := range k {
			if !isWordRune(r) {
				return fmt.Errorf("%w: expansion key %q is not a single token", ErrInvalidConfig, k)
			}
		}
	}
	return nil
}

// Version returns a string naming every setting that changes the terms
// produced, e.g. "v1;lower=1;min=2;max=0;stop=en-bm25s;stem=snowball-en;code=0;exp=none".
// Two analyzers with equal versions produce equal terms.
func (c Config) Version() string {
	var sb strings.Builder
	sb.WriteString("v1;lower=")
	sb.WriteString(boolDigit(c.Lowercase))
	fmt.Fprintf(&sb, ";min=%d;max=%d;stop=%s", c.MinTokenLen, c.MaxTokenLen, c.Stopwords)
	if len(c.ExtraStopwords) > 0 {
		extra := append([]string(nil), c.ExtraStopwords...)
		sort.Strings(extra)
		fmt.Fprintf(&sb, "+%s", hashStrings(extra))
	}
	fmt.Fprintf(&sb, ";stem=%s;code=%s;exp=", c.Stemmer, boolDigit(c.CodeAware))
	if len(c.Expansions) == 0 {
		sb.WriteString("none")
	} else {
		kv := make([]string, 0, 2*len(c.Expansions))
		keys := make([]string, 0, len(c.Expansions))
		for k := range c.Expansions {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			kv = append(kv, k, c.Expansions[k])
		}
		sb.WriteString(hashStrings(kv))
	}
	return sb.String()
}

func boolDigit(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

// hashStrings is a short, stable digest of a list of strings.
func hashStrings(ss []string) string {
	h := fnv.New64a()
	for _, s := range ss {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	return fmt.Sprintf("%016x", h.Sum64())
}

// Analyzer turns text into terms according to a Config. It is safe for
// concurrent use by multiple goroutines.
type Analyzer struct {
	cfg     Config
	version string
	stop    map[string]struct{}
	exp     map[string]string // lowercased key → expansion text
	stem    bool
	cache   *termCache // nil when disabled
}

// New returns an Analyzer for cfg.
func New(cfg Config) (*Analyzer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	a := &Analyzer{
		cfg:     cfg,
		version: cfg.Version(),
		stop:    make(map[string]struct{}),
		stem:    cfg.Stemmer == StemmerSnowballEnglish,
	}
	for _, w := range Stopwords(cfg.Stopwords) {
		a.stop[w] = struct{}{}
	}
	// Configured words are lowercased as tokens are (appendLower: Python's
	// rules, a word-final Σ becomes ς), so that they match.
	lower := func(w string) string {
		if !cfg.Lowercase {
			return w
		}
		return string(appendLower(nil, w, 0, len(w)))
	}
	for _, w := range cfg.ExtraStopwords {
		a.stop[lower(w)] = struct{}{}
	}
	if len(cfg.Expansions) > 0 {
		a.exp = make(map[string]string, len(cfg.Expansions))
		for k, v := range cfg.Expansions {
			a.exp[lower(k)] = v
		}
	}
	if cfg.StemCacheEntries > 0 {
		a.cache = newTermCache(cfg.StemCacheEntries)
	}
	return a, nil
}

// MustNew is New for configurations known to be valid (tests, package
// defaults); it panics on an invalid one.
func MustNew(cfg Config) *Analyzer {
	a, err := New(cfg)
	if err != nil {
		panic(err)
	}
	return a
}

// Config returns the configuration the Analyzer was built with.
func (a *Analyzer) Config() Config { return a.cfg }

// Version returns Config().Version(), computed once.
func (a *Analyzer) Version() string { return a.version }

// Analyze returns the terms of text, in order, duplicates kept.
func (a *Analyzer) Analyze(text string) []string {
	return a.AppendAnalyze(nil, text)
}

// AppendAnalyze appends the terms of text to dst and returns the extended
// slice; pass dst[:0] of a reused slice to avoid allocating.
func (a *Analyzer) AppendAnalyze(dst []string, text string) []string {
	return a.run(dst, text, false)
}

// AnalyzeQuery is Analyze plus query expansion: after the terms of a token
// that has an entry in Config.Expansions come the terms of its expansion.
func (a *Analyzer) AnalyzeQuery(text string) []string {
	return a.AppendAnalyzeQuery(nil, text)
}

// AppendAnalyzeQuery is the appending form of AnalyzeQuery.
func (a *Analyzer) AppendAnalyzeQuery(dst []string, text string) []string {
	return a.run(dst, text, a.exp != nil)
}

// isWordRune reports whether r is a \w character of Python's re module
// for str patterns: a letter, a number, or '_'.
func isWordRune(r rune) bool {
	if r < utf8.RuneSelf {
		return asciiWord[r]
	}
	return unicode.IsLetter(r) || unicode.IsNumber(r)
}

var asciiWord = func() (t [utf8.RuneSelf]bool) {
	for c := '0'; c <= '9'; c++ {
		t[c] = true
	}
	for c := 'a'; c <= 'z'; c++ {
		t[c] = true
		t[c-'a'+'A'] = true
	}
	t['_'] = true
	return t
}()

// capitalIWithDot (İ) lowercases in Python to "i" + U+0307 COMBINING DOT
// ABOVE, which is not a word character: the token ends after the "i".
const capitalIWithDot = '\u0130'

// run scans text for maximal runs of word characters and feeds each to
// token. It allocates nothing itself beyond growing dst.
func (a *Analyzer) run(dst []string, text string, expand bool) []string {
	var scratch [64]byte
	buf := scratch[:0]
	start := -1 // byte offset of the current run, -1 outside a run
	n := 0      // code points in the current run
	for i := 0; i < len(text); {
		c := text[i]
		var (
			word     bool
			size     = 1
			breakNow bool
		)
		if c < utf8.RuneSelf {
			word = asciiWord[c]
		} else {
			r, sz := utf8.DecodeRuneInString(text[i:])
			size = sz
			if r != utf8.RuneError || sz > 1 {
				word = unicode.IsLetter(r) || unicode.IsNumber(r)
				breakNow = r == capitalIWithDot && a.cfg.Lowercase
			}
		}
		if word {
			if start < 0 {
				start = i
				n = 0
			}
			n++
			i += size
			if breakNow {
				dst = a.token(dst, buf, text, start, i, n, expand)
				start = -1
			}
			continue
		}
		if start >= 0 {
			dst = a.token(dst, buf, text, start, i, n, expand)
			start = -1
		}
		i += size
	}
	if start >= 0 {
		dst = a.token(dst, buf, text, start, len(text), n, expand)
	}
	return dst
}

// token handles one maximal run of word characters (n code points). buf is
// scratch space of the caller; tokens longer than its capacity allocate.
func (a *Analyzer) token(dst []string, buf []byte, text string, start, end, n int, expand bool) []string {
	if a.cfg.CodeAware {
		return a.codeToken(dst, buf, text, start, end, n, expand)
	}
	return a.emit(dst, buf, text, start, end, n, expand)
}

// emit applies length limits, lowercasing, expansion, stopwords and
// stemming to one token and appends its term, if any.
func (a *Analyzer) emit(dst []string, buf []byte, text string, start, end, n int, expand bool) []string {
	if n < a.cfg.MinTokenLen || (a.cfg.MaxTokenLen > 0 && n > a.cfg.MaxTokenLen) {
		return dst
	}
	buf = buf[:0]
	if a.cfg.Lowercase {
		buf = appendLower(buf, text, start, end)
	} else {
		buf = append(buf, text[start:end]...)
	}
	if _, stop := a.stop[string(buf)]; !stop {
		dst = append(dst, a.term(buf, n))
	}
	if expand {
		if e, ok := a.exp[string(buf)]; ok {
			// Expansions are analyzed without further expansion, so a
			// dictionary with cycles cannot loop.
			dst = a.run(dst, e, false)
		}
	}
	return dst
}

// term returns the index term for the lowercased token w (n code points),
// from the cache when possible. The result never aliases w.
func (a *Analyzer) term(w []byte, n int) string {
	if a.cache != nil {
		if t, ok := a.cache.get(w); ok {
			return t
		}
	}
	s := string(w)
	t := s
	if a.stem && n > 2 {
		t = porter2.Stem(s)
	}
	if a.cache != nil {
		a.cache.put(s, t)
	}
	return t
}

// appendLower appends the lowercase form of text[start:end] to dst. The
// whole text is passed because Python's str.lower picks the final form of
// capital sigma from its neighbours, which may lie outside the token.
func appendLower(dst []byte, text string, start, end int) []byte {
	for i := start; i < end; i++ {
		c := text[i]
		if c >= utf8.RuneSelf {
			for off, r := range text[i:end] {
				switch r {
				case capitalIWithDot:
					r = 'i'
				case capitalSigma:
					r = sigmaForm(text, i+off)
				default:
					r = unicode.ToLower(r)
				}
				dst = utf8.AppendRune(dst, r)
			}
			return dst
		}
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		dst = append(dst, c)
	}
	return dst
}

const (
	capitalSigma = '\u03A3'
	smallSigma   = '\u03C3'
	finalSigma   = '\u03C2'
)

// sigmaForm lowercases the capital sigma at byte offset p of text as
// Python does (Unicode SpecialCasing Final_Sigma): ς when a cased letter
// precedes it and none follows it, skipping case-ignorable characters on
// both sides; σ otherwise.
func sigmaForm(text string, p int) rune {
	var r rune
	j := p
	for j > 0 {
		var sz int
		r, sz = utf8.DecodeLastRuneInString(text[:j])
		j -= sz
		if !isCaseIgnorable(r) {
			break
		}
		r = -1
	}
	if j == p || r < 0 || !isCased(r) {
		return smallSigma
	}
	for _, r := range text[p+len(string(capitalSigma)):] {
		if isCaseIgnorable(r) {
			continue
		}
		if isCased(r) {
			return smallSigma
		}
		break
	}
	return finalSigma
}

// isCased is Unicode's Cased property: Lu, Ll, Lt, Other_Lowercase,
// Other_Uppercase.
func isCased(r rune) bool {
	return unicode.In(r, unicode.Lu, unicode.Ll, unicode.Lt, unicode.Other_Lowercase, unicode.Other_Uppercase)
}

// isCaseIgnorable is Unicode's Case_Ignorable property: Mn, Me, Cf, Lm, Sk
// and the Word_Break MidLetter / MidNumLet / Single_Quote characters.
func isCaseIgnorable(r rune) bool {
	switch r {
	case '\'', '.', ':', '\u00B7', '\u0387', '\u055F', '\u05F4', '\u2018', '\u2019', '\u2024',
		'\u2027', '\uFE13', '\uFE52', '\uFE55', '\uFF07', '\uFF0E', '\uFF1A':
		return true
	}
	return unicode.In(r, unicode.Mn, unicode.Me, unicode.Cf, unicode.Lm, unicode.Sk)
}

// codeToken emits the whole token and, when it has more than one part, its
// camelCase / snake_case / letter-digit parts.
func (a *Analyzer) codeToken(dst []string, buf []byte, text string, start, end, n int, expand bool) []string {
	dst = a.emit(dst, buf, text, start, end, n, expand)
	tok := text[start:end]
	type part struct{ start, end, n int }
	var partsArr [16]part
	parts := partsArr[:0]
	const (
		kNone = iota
		kLower
		kUpper
		kDigit
		kOther
	)
	kind := func(r rune) int {
		switch {
		case r == '_':
			return kNone
		case unicode.IsUpper(r):
			return kUpper
		case unicode.IsLower(r):
			return kLower
		case unicode.IsNumber(r):
			return kDigit
		default:
			return kOther
		}
	}
	ps, pn := -1, 0
	prev := kNone
	for i, r := range tok {
		k := kind(r)
		split := false
		switch {
		case k == kNone:
			if ps >= 0 {
				parts = append(parts, part{ps, i, pn})
				ps = -1
			}
			prev = k
			continue
		case ps < 0:
		case k == kUpper && prev == kLower:
			split = true // fooBar
		case k == kLower && prev == kUpper && pn > 1:
			// HTTPServer: the last capital starts the next part.
			_, sz := utf8.DecodeLastRuneInString(tok[:i])
			parts = append(parts, part{ps, i - sz, pn - 1})
			ps, pn = i-sz, 1
		case (k == kDigit) != (prev == kDigit):
			split = true // utf8, 3d
		}
		if split {
			parts = append(parts, part{ps, i, pn})
			ps = -1
		}
		if ps < 0 {
			ps, pn = i, 0
		}
		pn++
		prev = k
	}
	if ps >= 0 {
		parts = append(parts, part{ps, len(tok), pn})
	}
	if len(parts) < 2 {
		return dst
	}
	for _, p := range parts {
		dst = a.emit(dst, buf, text, start+p.start, start+p.end, p.n, false)
	}
	return dst
}

// termCache maps lowercased tokens to terms. Sharded so that concurrent
// analyzers (index builds on many goroutines, concurrent queries) do not
// contend on one lock.
type termCache struct {
	perShard int
	shards   [cacheShards]cacheShard
}

const cacheShards = 64

type cacheShard struct {
	mu sync.RWMutex // guards m
	m  map[string]string
	_  [40]byte // keep shards on separate cache lines
}

func newTermCache(entries int) *termCache {
	c := &termCache{perShard: max(1, entries/cacheShards)}
	for i := range c.shards {
		c.shards[i].m = make(map[string]string)
	}
	return c
}

// shardOf is a cheap hash; the map hashes the key again, so this only has
// to spread tokens over the shards.
func shardOf(w []byte) int {
	if len(w) == 0 {
		return 0
	}
	h := uint(len(w))*0x9e3779b1 ^ uint(w[0])*31 ^ uint(w[len(w)-1])*131 ^ uint(w[len(w)/2])*7
	return int(h % cacheShards)
}

func (c *termCache) get(w []byte) (string, bool) {
	s := &c.shards[shardOf(w)]
	s.mu.RLock()
	t, ok := s.m[string(w)]
	s.mu.RUnlock()
	return t, ok
}

func (c *termCache) put(w, t string) {
	s := &c.shards[shardOf([]byte(w))]
	s.mu.Lock()
	if len(s.m) < c.perShard {
		s.m[w] = t
	}
	s.mu.Unlock()
}
