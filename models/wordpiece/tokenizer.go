package wordpiece

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"sort"
	"strings"
	"sync"
	"unicode"
)

// Tokenizer is a BERT WordPiece tokenizer. It is immutable after
// construction and safe for concurrent use.
type Tokenizer struct {
	cfg          Config
	stripAccents bool
	vocab        map[string]int32
	inv          []string // id -> token, "" for holes
	maxTokBytes  int      // longest vocabulary entry, bytes
	unkID        int32
	padID        int32
	padTypeID    int32
	maxLength    int // truncation max_length from tokenizer.json, 0 if none

	added      []addedToken // sorted by content, longest first within a prefix
	addedFirst [256]bool    // first bytes of added tokens

	single, pair     []tmplPiece
	nSingle, nPair   int // special tokens added by each template
	asciiNorm        [128]byte
	asciiDrop        [128]bool
	asciiSplit       [128]uint8 // 0 word char, 1 whitespace, 2 punctuation
	prefix           string
	cache            *wordCache
	scratch          sync.Pool // *state
	hasSpecialTokens bool
}

type addedToken struct {
	content string
	id      int32
}

// tmplPiece is one element of a post-processing template: either special
// token ids or a sequence (0 = A, 1 = B), with its type id.
type tmplPiece struct {
	ids    []int32
	seq    int8 // -1 for special tokens
	typeID int32
}

// LoadVocab reads a vocab.txt (one token a line, id = line number) and
// builds a tokenizer with cfg.
func LoadVocab(path string, cfg Config) (*Tokenizer, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("wordpiece: open vocab: %w", err)
	}
	defer f.Close()
	t, err := NewFromVocab(f, cfg)
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", path, err)
	}
	return t, nil
}

// NewFromVocab builds a tokenizer from vocab.txt content read from r.
func NewFromVocab(r io.Reader, cfg Config) (*Tokenizer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	vocab := make(map[string]int32, 32768)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	n := 0
	for sc.Scan() {
		// HF's WordPiece::read_file trims trailing whitespace/newlines
		// (line.trim_end()) and keeps duplicates as later-wins.
		tok := strings.TrimRightFunc(sc.Text(), unicode.IsSpace)
		if n >= math.MaxInt32 {
			return nil, fmt.Errorf("%w: too many entries", ErrVocab)
		}
		vocab[tok] = int32(n)
		n++
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%w: read: %v", ErrVocab, err)
	}
	t := &Tokenizer{cfg: cfg, vocab: vocab}
	var special []addedToken
	for _, s := range cfg.SpecialTokens {
		if id, ok := vocab[s]; ok {
			special = append(special, addedToken{content: s, id: id})
		}
	}
	cls, ok1 := vocab[cfg.ClsToken]
	sep, ok2 := vocab[cfg.SepToken]
	if !ok1 || !ok2 {
		return nil, fmt.Errorf("%w: %q or %q not in vocabulary", ErrVocab, cfg.ClsToken, cfg.SepToken)
	}
	t.single, t.pair = bertTemplates(cls, sep)
	if cfg.PadToken != "" {
		if id, ok := vocab[cfg.PadToken]; ok {
			t.padID = id
		}
	}
	if err := t.init(special); err != nil {
		return nil, err
	}
	return t, nil
}

func bertTemplates(cls, sep int32) (single, pair []tmplPiece) {
	single = []tmplPiece{{ids: []int32{cls}, seq: -1}, {seq: 0}, {ids: []int32{sep}, seq: -1}}
	pair = []tmplPiece{
		{ids: []int32{cls}, seq: -1}, {seq: 0}, {ids: []int32{sep}, seq: -1},
		{seq: 1, typeID: 1}, {ids: []int32{sep}, seq: -1, typeID: 1},
	}
	return single, pair
}

// init finishes construction: derived tables, unk id, caches.
func (t *Tokenizer) init(special []addedToken) error {
	initClasses()
	cfg := t.cfg
	t.stripAccents = cfg.stripAccents()
	t.prefix = cfg.ContinuingSubwordPrefix
	unk, ok := t.vocab[cfg.UnkToken]
	if !ok {
		return fmt.Errorf("%w: unk token %q not in vocabulary", ErrVocab, cfg.UnkToken)
	}
	t.unkID = unk
	// Ids index the inverse table: negative ones, or ones far past the
	// number of tokens (a hostile file: MaxInt32 would size it at 16 GiB),
	// are refused. Real vocabularies number their tokens densely.
	limit := int64(len(t.vocab)+len(special)) + 1024
	for tok, id := range t.vocab {
		if id < 0 || int64(id) >= limit {
			return fmt.Errorf("%w: token %q has id %d (want 0 to %d)", ErrVocab, tok, id, limit-1)
		}
	}
	for _, a := range special {
		if a.id < 0 || int64(a.id) >= limit {
			return fmt.Errorf("%w: added token %q has id %d (want 0 to %d)", ErrVocab, a.content, a.id, limit-1)
		}
	}
	maxID := int32(-1)
	for tok, id := range t.vocab {
		if len(tok) > t.maxTokBytes {
			t.maxTokBytes = len(tok)
		}
		if id > maxID {
			maxID = id
		}
	}
	for _, a := range special {
		if a.id > maxID {
			maxID = a.id
		}
	}
	t.inv = make([]string, maxID+1)
	for tok, id := range t.vocab {
		if id >= 0 {
			t.inv[id] = tok
		}
	}
	for _, a := range special {
		if t.inv[a.id] == "" {
			t.inv[a.id] = a.content
		}
	}
	// Leftmost-longest matching: at one position, try longer tokens first.
	sort.Slice(special, func(i, j int) bool {
		if len(special[i].content) != len(special[j].content) {
			return len(special[i].content) > len(special[j].content)
		}
		return special[i].content < special[j].content
	})
	t.added = special
	for _, a := range special {
		t.addedFirst[a.content[0]] = true
	}
	t.hasSpecialTokens = len(special) > 0
	t.nSingle, t.nPair = countSpecial(t.single), countSpecial(t.pair)
	for b := 0; b < 128; b++ {
		r := rune(b)
		t.asciiNorm[b] = byte(b)
		if cfg.CleanText {
			if r == 0 || isControl(r) {
				t.asciiDrop[b] = true
			} else if isWhitespace(r) {
				t.asciiNorm[b] = ' '
			}
		}
		if cfg.Lowercase && r >= 'A' && r <= 'Z' {
			t.asciiNorm[b] = byte(r + 'a' - 'A')
		}
		switch {
		case isWhitespace(r):
			t.asciiSplit[b] = 1
		case isPunct(r):
			t.asciiSplit[b] = 2
		}
	}
	if cfg.WordCacheSize > 0 {
		t.cache = newWordCache(cfg.WordCacheSize)
	}
	t.scratch.New = func() any { return new(state) }
	return nil
}

func countSpecial(p []tmplPiece) int {
	n := 0
	for _, x := range p {
		n += len(x.ids)
	}
	return n
}

// hfFile is the subset of tokenizer.json this package reads.
type hfFile struct {
	Truncation *struct {
		MaxLength int    `json:"max_length"`
		Strategy  string `json:"strategy"`
		Direction string `json:"direction"`
		Stride    int    `json:"stride"`
	} `json:"truncation"`
	Padding *struct {
		Direction       string `json:"direction"`
		PadToMultipleOf *int   `json:"pad_to_multiple_of"`
		PadID           int32  `json:"pad_id"`
		PadTypeID       int32  `json:"pad_type_id"`
		PadToken        string `json:"pad_token"`
	} `json:"padding"`
	AddedTokens []struct {
		ID         int32  `json:"id"`
		Content    string `json:"content"`
		SingleWord bool   `json:"single_word"`
		Lstrip     bool   `json:"lstrip"`
		Rstrip     bool   `json:"rstrip"`
		Normalized bool   `json:"normalized"`
		Special    bool   `json:"special"`
	} `json:"added_tokens"`
	Normalizer *struct {
		Type               string `json:"type"`
		CleanText          *bool  `json:"clean_text"`
		HandleChineseChars *bool  `json:"handle_chinese_chars"`
		StripAccents       *bool  `json:"strip_accents"`
		Lowercase          *bool  `json:"lowercase"`
	} `json:"normalizer"`
	PreTokenizer *struct {
		Type string `json:"type"`
	} `json:"pre_tokenizer"`
	PostProcessor json.RawMessage `json:"post_processor"`
	Model         struct {
		Type                    string  `json:"type"`
		UnkToken                string  `json:"unk_token"`
		ContinuingSubwordPrefix *string `json:"continuing_subword_prefix"`
		MaxInputCharsPerWord    *int    `json:"max_input_chars_per_word"`
		// Vocab is decoded after the type check: other models' vocabularies
		// (Unigram's is an array) must fail as ErrUnsupported, not ErrVocab.
		Vocab json.RawMessage `json:"vocab"`
	} `json:"model"`
}

// LoadTokenizerJSON reads a Hugging Face tokenizer.json with a BertNormalizer,
// a BertPreTokenizer, a WordPiece model and a TemplateProcessing or
// BertProcessing post-processor. wordCacheSize bounds the word cache (see
// Config.WordCacheSize); pass -1 for the default.
func LoadTokenizerJSON(path string, wordCacheSize int) (*Tokenizer, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("wordpiece: read tokenizer.json: %w", err)
	}
	t, err := ParseTokenizerJSON(data, wordCacheSize)
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", path, err)
	}
	return t, nil
}

// ParseTokenizerJSON is LoadTokenizerJSON on the file's content.
func ParseTokenizerJSON(data []byte, wordCacheSize int) (*Tokenizer, error) {
	var f hfFile
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("%w: parse tokenizer.json: %v", ErrVocab, err)
	}
	cfg := DefaultConfig()
	cfg.SpecialTokens = nil
	if wordCacheSize >= 0 {
		cfg.WordCacheSize = wordCacheSize
	}
	if f.Model.Type != "WordPiece" {
		return nil, fmt.Errorf("%w: model type %q", ErrUnsupported, f.Model.Type)
	}
	var vocab map[string]int32
	if err := json.Unmarshal(f.Model.Vocab, &vocab); err != nil {
		return nil, fmt.Errorf("%w: parse tokenizer.json model.vocab: %v", ErrVocab, err)
	}
	if f.Model.UnkToken != "" {
		cfg.UnkToken = f.Model.UnkToken
	}
	if f.Model.ContinuingSubwordPrefix != nil {
		cfg.ContinuingSubwordPrefix = *f.Model.ContinuingSubwordPrefix
	}
	if f.Model.MaxInputCharsPerWord != nil {
		cfg.MaxInputCharsPerWord = *f.Model.MaxInputCharsPerWord
	}
	if f.Normalizer == nil {
		cfg.CleanText, cfg.HandleChineseChars, cfg.Lowercase = false, false, false
		no := false
		cfg.StripAccents = &no
	} else {
		n := f.Normalizer
		if n.Type != "BertNormalizer" {
			return nil, fmt.Errorf("%w: normalizer %q", ErrUnsupported, n.Type)
		}
		// HF's serde defaults: all true except strip_accents (None).
		setBool := func(dst *bool, v *bool) {
			if v != nil {
				*dst = *v
			}
		}
		setBool(&cfg.CleanText, n.CleanText)
		setBool(&cfg.HandleChineseChars, n.HandleChineseChars)
		setBool(&cfg.Lowercase, n.Lowercase)
		cfg.StripAccents = n.StripAccents
	}
	if f.PreTokenizer == nil || f.PreTokenizer.Type != "BertPreTokenizer" {
		typ := "null"
		if f.PreTokenizer != nil {
			typ = f.PreTokenizer.Type
		}
		return nil, fmt.Errorf("%w: pre_tokenizer %q", ErrUnsupported, typ)
	}
	var special []addedToken
	for _, a := range f.AddedTokens {
		if a.Content == "" {
			return nil, fmt.Errorf("%w: empty added token", ErrVocab)
		}
		if a.Normalized || a.Lstrip || a.Rstrip || a.SingleWord {
			return nil, fmt.Errorf("%w: added token %q with normalized/lstrip/rstrip/single_word", ErrUnsupported, a.Content)
		}
		special = append(special, addedToken{content: a.Content, id: a.ID})
	}
	t := &Tokenizer{vocab: vocab}
	if t.vocab == nil {
		return nil, fmt.Errorf("%w: model has no vocab", ErrVocab)
	}
	idOf := func(tok string) (int32, bool) {
		for _, a := range special {
			if a.content == tok {
				return a.id, true
			}
		}
		id, ok := t.vocab[tok]
		return id, ok
	}
	if f.Truncation != nil {
		if f.Truncation.Direction == "Left" {
			return nil, fmt.Errorf("%w: left truncation", ErrUnsupported)
		}
		t.maxLength = f.Truncation.MaxLength
	}
	if f.Padding != nil {
		if f.Padding.Direction == "Left" {
			return nil, fmt.Errorf("%w: left padding", ErrUnsupported)
		}
		t.padID, t.padTypeID = f.Padding.PadID, f.Padding.PadTypeID
		cfg.PadToken = f.Padding.PadToken
		if f.Padding.PadToMultipleOf != nil {
			cfg.PadToMultipleOf = *f.Padding.PadToMultipleOf
		}
	} else if id, ok := idOf(cfg.PadToken); ok {
		t.padID = id
	}
	if err := parsePostProcessor(f.PostProcessor, idOf, t); err != nil {
		return nil, err
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	t.cfg = cfg
	if err := t.init(special); err != nil {
		return nil, err
	}
	return t, nil
}

func parsePostProcessor(raw json.RawMessage, idOf func(string) (int32, bool), t *Tokenizer) error {
	if len(raw) == 0 || string(raw) == "null" {
		t.single = []tmplPiece{{seq: 0}}
		t.pair = []tmplPiece{{seq: 0}, {seq: 1, typeID: 1}}
		return nil
	}
	var head struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal(raw, &head); err != nil {
		return fmt.Errorf("%w: post_processor: %v", ErrVocab, err)
	}
	switch head.Type {
	case "BertProcessing":
		var p struct {
			Sep [2]json.RawMessage `json:"sep"`
			Cls [2]json.RawMessage `json:"cls"`
		}
		if err := json.Unmarshal(raw, &p); err != nil {
			return fmt.Errorf("%w: BertProcessing: %v", ErrVocab, err)
		}
		var sep, cls int32
		if err := json.Unmarshal(p.Sep[1], &sep); err != nil {
			return fmt.Errorf("%w: BertProcessing sep: %v", ErrVocab, err)
		}
		if err := json.Unmarshal(p.Cls[1], &cls); err != nil {
			return fmt.Errorf("%w: BertProcessing cls: %v", ErrVocab, err)
		}
		t.single, t.pair = bertTemplates(cls, sep)
		return nil
	case "TemplateProcessing":
		type item struct {
			SpecialToken *struct {
				ID     string `json:"id"`
				TypeID int32  `json:"type_id"`
			} `json:"SpecialToken"`
			Sequence *struct {
				ID     string `json:"id"`
				TypeID int32  `json:"type_id"`
			} `json:"Sequence"`
		}
		var p struct {
			Single        []item `json:"single"`
			Pair          []item `json:"pair"`
			SpecialTokens map[string]struct {
				IDs []int32 `json:"ids"`
			} `json:"special_tokens"`
		}
		if err := json.Unmarshal(raw, &p); err != nil {
			return fmt.Errorf("%w: TemplateProcessing: %v", ErrVocab, err)
		}
		conv := func(items []item) ([]tmplPiece, error) {
			var out []tmplPiece
			for _, it := range items {
				switch {
				case it.SpecialToken != nil:
					st, ok := p.SpecialTokens[it.SpecialToken.ID]
					if !ok {
						id, ok2 := idOf(it.SpecialToken.ID)
						if !ok2 {
							return nil, fmt.Errorf("%w: template token %q unknown", ErrVocab, it.SpecialToken.ID)
						}
						st.IDs = []int32{id}
					}
					out = append(out, tmplPiece{ids: st.IDs, seq: -1, typeID: it.SpecialToken.TypeID})
				case it.Sequence != nil:
					seq := int8(0)
					if it.Sequence.ID == "B" {
						seq = 1
					}
					out = append(out, tmplPiece{seq: seq, typeID: it.Sequence.TypeID})
				}
			}
			return out, nil
		}
		var err error
		if t.single, err = conv(p.Single); err != nil {
			return err
		}
		if t.pair, err = conv(p.Pair); err != nil {
			return err
		}
		return nil
	}
	return fmt.Errorf("%w: post_processor %q", ErrUnsupported, head.Type)
}

// Config returns the tokenizer's settings.
func (t *Tokenizer) Config() Config { return t.cfg }

// MaxLength is the truncation max_length from tokenizer.json, or 0.
func (t *Tokenizer) MaxLength() int { return t.maxLength }

// VocabSize is the number of ids (one more than the largest id).
func (t *Tokenizer) VocabSize() int { return len(t.inv) }

// IDToToken returns the token for id, or "" when id is not in the vocabulary.
func (t *Tokenizer) IDToToken(id int32) string {
	if id < 0 || int(id) >= len(t.inv) {
		return ""
	}
	return t.inv[id]
}

// TokenToID returns the id of tok and whether it is in the vocabulary.
func (t *Tokenizer) TokenToID(tok string) (int32, bool) {
	for _, a := range t.added {
		if a.content == tok {
			return a.id, true
		}
	}
	id, ok := t.vocab[tok]
	return id, ok
}

// PadID is the id that pads batches.
func (t *Tokenizer) PadID() int32 { return t.padID }
