package porter2

import (
	"strings"
	"unicode/utf8"
)

// Stem returns the Snowball English (Porter2) stem of word. The word is
// trimmed of surrounding white space and lowercased first; words of at most
// two bytes after that are returned as they are. Stop words are stemmed
// like any other word.
//
// Stem allocates nothing when the stem is word itself or a prefix of it
// (most stems: suffix removal only) and word is lowercase ASCII; it then
// returns a substring of word. It is safe for concurrent use.
func Stem(word string) string {
	w := word
	ascii, plain := scan(w)
	if !plain {
		w = strings.ToLower(strings.TrimSpace(w))
		ascii, _ = scan(w) // lowercasing can map non-ASCII to ASCII (K, U+212A)
	}
	if len(w) <= 2 {
		return w
	}
	if s, ok := exceptional(w); ok {
		return s
	}
	var arr [64]byte // no heap buffer for words up to 64 bytes
	buf := arr[:0]
	if ascii {
		buf = append(buf, w...)
	} else {
		buf = appendMapped(buf, w)
	}
	trim, out := stem(buf)
	if !ascii {
		return restore(w, trim, out)
	}
	if trim == 0 && string(out) == w[:len(out)] {
		return w[:len(out)]
	}
	return string(out)
}

// scan reports whether w is all ASCII, and whether it is plain: ASCII, no
// upper-case letter and no white space at either end, so that lowercasing
// and trimming would leave it unchanged.
func scan(w string) (ascii, plain bool) {
	upper := false
	for i := 0; i < len(w); i++ {
		c := w[i]
		if c >= utf8.RuneSelf {
			return false, false
		}
		upper = upper || ('A' <= c && c <= 'Z')
	}
	if upper || (len(w) > 0 && (asciiSpace[w[0]] || asciiSpace[w[len(w)-1]])) {
		return true, false
	}
	return true, true
}

var asciiSpace = [utf8.RuneSelf]bool{'\t': true, '\n': true, '\v': true, '\f': true, '\r': true, ' ': true}

// other stands in the working buffer for every non-ASCII code point other
// than the apostrophe variants. No step reads such a character except as a
// non-vowel, and no step moves one, so restore can put the originals back.
const other = 0x80

// appendMapped appends w to dst one byte per code point: ASCII as is, the
// apostrophe variants U+2018, U+2019 and U+201B as the ASCII apostrophe,
// anything else (invalid bytes included) as other.
func appendMapped(dst []byte, w string) []byte {
	for _, r := range w {
		switch {
		case r < utf8.RuneSelf:
			dst = append(dst, byte(r))
		case r == '\u2018' || r == '\u2019' || r == '\u201B':
			dst = append(dst, '\'')
		default:
			dst = append(dst, other)
		}
	}
	return dst
}

// restore turns out, the stem of appendMapped(w) with its first trim code
// points removed, back into a string: out[i] stands for code point trim+i
// of w whenever it is other. Invalid bytes come back as U+FFFD, as they do
// from a []rune conversion.
func restore(w string, trim int, out []byte) string {
	var sb strings.Builder
	sb.Grow(len(w))
	pos := 0
	for range trim {
		_, sz := utf8.DecodeRuneInString(w[pos:])
		pos += sz
	}
	for _, c := range out {
		r, sz := utf8.DecodeRuneInString(w[pos:])
		pos += sz
		if c == other {
			sb.WriteRune(r)
		} else {
			sb.WriteByte(c)
		}
	}
	return sb.String()
}

// exceptional returns the fixed stem of the words the algorithm lists as
// exceptions. The forms that the published algorithm only recognises
// after Step 1a (innings, proceeded, ...) are listed whole, as the
// reference implementation we match does; "inning's" is stemmed normally.
func exceptional(w string) (string, bool) {
	switch w {
	case "skis":
		return "ski", true
	case "skies", "sky":
		return "sky", true
	case "dying":
		return "die", true
	case "lying":
		return "lie", true
	case "tying":
		return "tie", true
	case "idly":
		return "idl", true
	case "gently":
		return "gentl", true
	case "ugly":
		return "ugli", true
	case "early":
		return "earli", true
	case "only":
		return "onli", true
	case "singly":
		return "singl", true
	case "news", "howe", "atlas", "cosmos", "bias", "andes",
		"inning", "outing", "canning", "herring", "earring",
		"proceed", "exceed", "succeed":
		return w, true
	case "innings", "outings", "cannings", "herrings", "earrings":
		return w[:len(w)-1], true
	case "proceeds", "exceeds", "succeeds":
		return w[:len(w)-1], true
	case "proceeded", "exceeded", "succeeded":
		return w[:len(w)-2], true
	case "proceeding", "exceeding", "succeeding":
		return w[:len(w)-3], true
	}
	return "", false
}

// vowel is the algorithm's vowel set: a e i o u y. A 'Y' (a y marked as a
// consonant) is not a vowel.
var vowel = [256]bool{'a': true, 'e': true, 'i': true, 'o': true, 'u': true, 'y': true}

// stem runs the algorithm on b (lowercase, one byte per code point) in
// place. It returns how many leading apostrophes it dropped and the stem,
// which shares b's array and is never longer than b.
func stem(b []byte) (trim int, out []byte) {
	// Leading apostrophes go, all of them (the description says one).
	for trim < len(b) && b[trim] == '\'' {
		trim++
	}
	b = b[trim:]
	// A y at the start or after a vowel is a consonant: mark it 'Y'. The
	// test sees the marks already made, so "ayy" is "aYy".
	for i, c := range b {
		if c == 'y' && (i == 0 || vowel[b[i-1]]) {
			b[i] = 'Y'
		}
	}
	p1, p2 := regions(b)
	b = step0(b)
	b = step1a(b)
	b = step1b(b, p1)
	step1c(b)
	b = step2(b, p1)
	b = step3(b, p1, p2)
	b = step4(b, p2)
	b = step5(b, p1, p2)
	for i, c := range b {
		if c == 'Y' {
			b[i] = 'y'
		}
	}
	return trim, b
}

// regions returns the starts of R1 and R2. R1 starts after the first
// non-vowel that follows a vowel, except after the prefixes gener, commun
// and arsen; R2 is the same rule applied again inside R1. An empty region
// starts at len(b). The starts stay fixed while the word shrinks: a suffix
// is "in R1" when it starts at or after p1.
func regions(b []byte) (p1, p2 int) {
	switch {
	case hasPrefix(b, "gener"), hasPrefix(b, "arsen"):
		p1 = 5
	case hasPrefix(b, "commun"):
		p1 = 6
	default:
		p1 = afterVowelConsonant(b, 0)
	}
	return p1, afterVowelConsonant(b, p1)
}

// afterVowelConsonant returns the index just past the first non-vowel
// that follows a vowel in b[from:], or len(b).
func afterVowelConsonant(b []byte, from int) int {
	for j := from + 1; j < len(b); j++ {
		if vowel[b[j-1]] && !vowel[b[j]] {
			return j + 1
		}
	}
	return len(b)
}

func hasPrefix(b []byte, p string) bool {
	return len(b) >= len(p) && string(b[:len(p)]) == p
}

func hasSuffix(b []byte, s string) bool {
	return len(b) >= len(s) && string(b[len(b)-len(s):]) == s
}

// replace swaps the last n bytes of b for repl, which is never longer than
// n, so b's array is reused.
func replace(b []byte, n int, repl string) []byte {
	return append(b[:len(b)-n], repl...)
}

func hasVowel(b []byte) bool {
	for _, c := range b {
		if vowel[c] {
			return true
		}
	}
	return false
}

// endsShort reports whether b ends in a short syllable: a non-vowel other
// than w, x or Y after a vowel after a non-vowel, or, for a two-letter b,
// a vowel then a non-vowel.
func endsShort(b []byte) bool {
	n := len(b)
	switch {
	case n == 2:
		return vowel[b[0]] && !vowel[b[1]]
	case n >= 3:
		c := b[n-1]
		return !vowel[c] && c != 'w' && c != 'x' && c != 'Y' && vowel[b[n-2]] && !vowel[b[n-3]]
	}
	return false
}

// step0 removes the longest of the possessive suffixes 's' 's '.
func step0(b []byte) []byte {
	if len(b) == 0 || (b[len(b)-1] != '\'' && b[len(b)-1] != 's') {
		return b
	}
	switch {
	case hasSuffix(b, "'s'"):
		return b[:len(b)-3]
	case hasSuffix(b, "'s"):
		return b[:len(b)-2]
	case hasSuffix(b, "'"):
		return b[:len(b)-1]
	}
	return b
}

// step1a handles plural -s forms: sses → ss; ied, ies → i after two or
// more letters, else ie; us and ss stay; s goes when a vowel comes before
// the letter preceding it.
func step1a(b []byte) []byte {
	n := len(b)
	if n == 0 || (b[n-1] != 's' && b[n-1] != 'd') {
		return b
	}
	switch {
	case hasSuffix(b, "sses"):
		return b[:n-2]
	case hasSuffix(b, "ied"), hasSuffix(b, "ies"):
		if n > 4 {
			return b[:n-2]
		}
		return b[:n-1]
	case hasSuffix(b, "us"), hasSuffix(b, "ss"):
		return b
	case b[n-1] == 's':
		if n >= 3 && hasVowel(b[:n-2]) {
			return b[:n-1]
		}
	}
	return b
}

// step1b handles -ed and -ing forms.
func step1b(b []byte, p1 int) []byte {
	n := len(b)
	if n < 2 {
		return b
	}
	var suffix int
	eed := false
	switch b[n-1] {
	case 'y':
		switch {
		case hasSuffix(b, "eedly"):
			suffix, eed = 5, true
		case hasSuffix(b, "ingly"):
			suffix = 5
		case hasSuffix(b, "edly"):
			suffix = 4
		}
	case 'g':
		if hasSuffix(b, "ing") {
			suffix = 3
		}
	case 'd':
		switch {
		case hasSuffix(b, "eed"):
			suffix, eed = 3, true
		case hasSuffix(b, "ed"):
			suffix = 2
		}
	}
	if suffix == 0 {
		return b
	}
	if eed {
		// eed, eedly → ee in R1; out of R1 the word stays as it is.
		if n-suffix >= p1 {
			return replace(b, suffix, "ee")
		}
		return b
	}
	if !hasVowel(b[:n-suffix]) {
		return b
	}
	b = b[:n-suffix]
	m := len(b)
	switch {
	case hasSuffix(b, "at"), hasSuffix(b, "bl"), hasSuffix(b, "iz"):
		return append(b, 'e')
	case m >= 2 && b[m-1] == b[m-2] && doubleLetter(b[m-1]):
		return b[:m-1]
	case p1 >= m && endsShort(b):
		// A short word: R1 is empty and it ends in a short syllable.
		return append(b, 'e')
	}
	return b
}

// doubleLetter reports whether cc is one of the doubles that step 1b
// undoubles: bb dd ff gg mm nn pp rr tt.
func doubleLetter(c byte) bool {
	switch c {
	case 'b', 'd', 'f', 'g', 'm', 'n', 'p', 'r', 't':
		return true
	}
	return false
}

// step1c replaces a final y or Y by i after a non-vowel that is not the
// first letter.
func step1c(b []byte) {
	n := len(b)
	if n > 2 && (b[n-1] == 'y' || b[n-1] == 'Y') && !vowel[b[n-2]] {
		b[n-1] = 'i'
	}
}

// step2 maps derivational suffixes in R1 to shorter ones. Only the
// longest matching suffix is considered.
func step2(b []byte, p1 int) []byte {
	n := len(b)
	if n < 2 {
		return b
	}
	var (
		suffix int
		repl   string
	)
	switch b[n-1] {
	case 'l':
		switch {
		case hasSuffix(b, "ational"):
			suffix, repl = 7, "ate"
		case hasSuffix(b, "tional"):
			suffix, repl = 6, "tion"
		}
	case 's':
		switch {
		case hasSuffix(b, "fulness"):
			suffix, repl = 7, "ful"
		case hasSuffix(b, "iveness"):
			suffix, repl = 7, "ive"
		case hasSuffix(b, "ousness"):
			suffix, repl = 7, "ous"
		}
	case 'n':
		switch {
		case hasSuffix(b, "ization"):
			suffix, repl = 7, "ize"
		case hasSuffix(b, "ation"):
			suffix, repl = 5, "ate"
		}
	case 'm':
		if hasSuffix(b, "alism") {
			suffix, repl = 5, "al"
		}
	case 'r':
		switch {
		case hasSuffix(b, "ator"):
			suffix, repl = 4, "ate"
		case hasSuffix(b, "izer"):
			suffix, repl = 4, "ize"
		}
	case 'i':
		return step2i(b, p1)
	}
	if suffix == 0 || n-suffix < p1 {
		return b
	}
	return replace(b, suffix, repl)
}

// step2i is step2 for the suffixes ending in i.
func step2i(b []byte, p1 int) []byte {
	n := len(b)
	var (
		suffix int
		repl   string
	)
	switch {
	case hasSuffix(b, "biliti"):
		suffix, repl = 6, "ble"
	case hasSuffix(b, "lessli"):
		suffix, repl = 6, "less"
	case hasSuffix(b, "aliti"):
		suffix, repl = 5, "al"
	case hasSuffix(b, "entli"):
		suffix, repl = 5, "ent"
	case hasSuffix(b, "fulli"):
		suffix, repl = 5, "ful"
	case hasSuffix(b, "iviti"):
		suffix, repl = 5, "ive"
	case hasSuffix(b, "ousli"):
		suffix, repl = 5, "ous"
	case hasSuffix(b, "anci"):
		suffix, repl = 4, "ance"
	case hasSuffix(b, "abli"):
		suffix, repl = 4, "able"
	case hasSuffix(b, "alli"):
		suffix, repl = 4, "al"
	case hasSuffix(b, "enci"):
		suffix, repl = 4, "ence"
	case hasSuffix(b, "bli"):
		suffix, repl = 3, "ble"
	case hasSuffix(b, "ogi"):
		// ogi → og after l only.
		if n-3 < p1 || n < 4 || b[n-4] != 'l' {
			return b
		}
		return replace(b, 3, "og")
	case hasSuffix(b, "li"):
		// li goes after a valid li-ending: c d e g h k m n r t.
		if n-2 < p1 || n < 3 || !liEnding(b[n-3]) {
			return b
		}
		return b[:n-2]
	default:
		return b
	}
	if n-suffix < p1 {
		return b
	}
	return replace(b, suffix, repl)
}

func liEnding(c byte) bool {
	switch c {
	case 'c', 'd', 'e', 'g', 'h', 'k', 'm', 'n', 'r', 't':
		return true
	}
	return false
}

// step3 maps more derivational suffixes in R1; ative goes only in R2.
func step3(b []byte, p1, p2 int) []byte {
	n := len(b)
	var (
		suffix int
		repl   string
	)
	if n == 0 {
		return b
	}
	switch b[n-1] {
	case 'l':
		switch {
		case hasSuffix(b, "ational"):
			suffix, repl = 7, "ate"
		case hasSuffix(b, "tional"):
			suffix, repl = 6, "tion"
		case hasSuffix(b, "ical"):
			suffix, repl = 4, "ic"
		case hasSuffix(b, "ful"):
			suffix = 3
		}
	case 'e':
		switch {
		case hasSuffix(b, "alize"):
			suffix, repl = 5, "al"
		case hasSuffix(b, "icate"):
			suffix, repl = 5, "ic"
		case hasSuffix(b, "ative"):
			if n-5 >= p1 && n-5 >= p2 {
				return b[:n-5]
			}
			return b
		}
	case 'i':
		if hasSuffix(b, "iciti") {
			suffix, repl = 5, "ic"
		}
	case 's':
		if hasSuffix(b, "ness") {
			suffix = 4
		}
	}
	if suffix == 0 || n-suffix < p1 {
		return b
	}
	return replace(b, suffix, repl)
}

// step4 deletes the longest of the residual suffixes when it lies in R2;
// ion only after s or t.
func step4(b []byte, p2 int) []byte {
	n := len(b)
	if n < 2 || n-2 < p2 {
		return b // every suffix is two letters or more
	}
	suffix := 0
	switch b[n-1] {
	case 't':
		switch {
		case hasSuffix(b, "ement"):
			suffix = 5
		case hasSuffix(b, "ment"):
			suffix = 4
		case hasSuffix(b, "ent"), hasSuffix(b, "ant"):
			suffix = 3
		}
	case 'e':
		switch {
		case hasSuffix(b, "ance"), hasSuffix(b, "ence"), hasSuffix(b, "able"), hasSuffix(b, "ible"):
			suffix = 4
		case hasSuffix(b, "ate"), hasSuffix(b, "ive"), hasSuffix(b, "ize"):
			suffix = 3
		}
	case 'n':
		// ion only after s or t.
		if hasSuffix(b, "ion") && n >= 4 && (b[n-4] == 's' || b[n-4] == 't') {
			suffix = 3
		}
	case 'm':
		if hasSuffix(b, "ism") {
			suffix = 3
		}
	case 'i':
		if hasSuffix(b, "iti") {
			suffix = 3
		}
	case 's':
		if hasSuffix(b, "ous") {
			suffix = 3
		}
	case 'l':
		if hasSuffix(b, "al") {
			suffix = 2
		}
	case 'r':
		if hasSuffix(b, "er") {
			suffix = 2
		}
	case 'c':
		if hasSuffix(b, "ic") {
			suffix = 2
		}
	}
	if suffix == 0 || n-suffix < p2 {
		return b
	}
	return b[:n-suffix]
}

// step5 deletes a final e in R2, or in R1 when not after a short
// syllable, and the second l of a final ll in R2.
func step5(b []byte, p1, p2 int) []byte {
	last := len(b) - 1
	if last < 0 || last < p1 {
		return b
	}
	switch b[last] {
	case 'e':
		if last >= p2 || !endsShort(b[:last]) {
			return b[:last]
		}
	case 'l':
		if last >= p2 && last >= 1 && b[last-1] == 'l' {
			return b[:last]
		}
	}
	return b
}
