package wordpiece

import (
	"sync"
	"unicode"
)

// Character classes exactly as Hugging Face tokenizers (Rust) defines them in
// normalizers/bert.rs and pre_tokenizers/bert.rs. HF takes general
// categories from the unicode_categories crate and lowercase mappings from
// Rust's std, whose Unicode versions differ from Go's. The code points where
// they disagree with Go's tables are listed in hftables.go, generated from
// the real library by
//
//	go test ./models/wordpiece -run TestUnicodeParityHF -args -update-tables
//
// and TestUnicodeParityHF checks every code point against it.

// isControl is HF's is_control: Cc, Cf or Co in HF's tables, except \t \n \r
// (which count as whitespace).
func isControl(r rune) bool {
	switch r {
	case '\t', '\n', '\r':
		return false
	}
	if r < 0x80 {
		return r < 0x20 || r == 0x7F
	}
	if hfOtherExtra[r] {
		return true
	}
	if unicode.In(r, unicode.Cc, unicode.Cf, unicode.Co) {
		return !hfNotOther[r]
	}
	return false
}

// isWhitespace is HF's is_whitespace: \t \n \r or Rust's char::is_whitespace
// (the Unicode White_Space property).
func isWhitespace(r rune) bool {
	if r < 0x80 {
		return r == ' ' || (r >= '\t' && r <= '\r')
	}
	return unicode.Is(unicode.White_Space, r)
}

// isChinese is HF's is_chinese_char: the CJK ideograph blocks, assigned or not.
func isChinese(r rune) bool {
	switch {
	case r >= 0x4E00 && r <= 0x9FFF,
		r >= 0x3400 && r <= 0x4DBF,
		r >= 0x20000 && r <= 0x2A6DF,
		r >= 0x2A700 && r <= 0x2B73F,
		r >= 0x2B740 && r <= 0x2B81F,
		r >= 0x2B920 && r <= 0x2CEAF,
		r >= 0xF900 && r <= 0xFAFF,
		r >= 0x2F800 && r <= 0x2FA1F:
		return true
	}
	return false
}

// isPunct is HF's is_bert_punc: ASCII punctuation (33-47, 58-64, 91-96,
// 123-126, which includes symbols such as $ + < = > ^ ` | ~) or a Unicode
// P* category.
func isPunct(r rune) bool {
	if r < 0x80 {
		return (r >= 33 && r <= 47) || (r >= 58 && r <= 64) || (r >= 91 && r <= 96) || (r >= 123 && r <= 126)
	}
	if hfPunctExtra[r] {
		return true
	}
	return unicode.IsPunct(r) && !hfNotPunct[r]
}

// isMn is HF's is_mark_nonspacing, used by strip_accents after NFD.
func isMn(r rune) bool {
	if r < 0x300 {
		return false
	}
	if hfMnExtra[r] {
		return true
	}
	return unicode.Is(unicode.Mn, r) && !hfNotMn[r]
}

// appendLower appends the HF lowercase form of r to dst.
func appendLower(dst []byte, r rune) []byte {
	if r < 0x80 {
		if r >= 'A' && r <= 'Z' {
			r += 'a' - 'A'
		}
		return append(dst, byte(r))
	}
	if classOf(r)&clsLower != 0 {
		return append(dst, hfLower[r]...)
	}
	return appendRune(dst, unicode.ToLower(r))
}

// Character class bits, precomputed for the Basic Multilingual Plane so the
// hot loops do one table load per character instead of several Unicode
// table searches and exception-map lookups.
const (
	clsControl uint8 = 1 << iota // isControl
	clsSpace                     // isWhitespace
	clsPunct                     // isPunct
	clsMn                        // isMn
	clsCJK                       // isChinese
	clsLower                     // has an hfLower entry
)

var (
	bmpOnce  sync.Once
	bmpClass *[0x10000]uint8
)

func computeClass(r rune) uint8 {
	var c uint8
	if isControl(r) {
		c |= clsControl
	}
	if isWhitespace(r) {
		c |= clsSpace
	}
	if isPunct(r) {
		c |= clsPunct
	}
	if isMn(r) {
		c |= clsMn
	}
	if isChinese(r) {
		c |= clsCJK
	}
	if _, ok := hfLower[r]; ok {
		c |= clsLower
	}
	return c
}

// initClasses fills bmpClass once (a few milliseconds, on the first
// tokenizer built).
func initClasses() {
	bmpOnce.Do(func() {
		t := new([0x10000]uint8)
		for r := rune(0); r < 0x10000; r++ {
			t[r] = computeClass(r)
		}
		bmpClass = t
	})
}

// classOf returns the class bits of r. initClasses must have run.
func classOf(r rune) uint8 {
	if r < 0x10000 {
		return bmpClass[r]
	}
	return computeClass(r)
}
