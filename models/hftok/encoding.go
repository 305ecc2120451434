package hftok

import (
	"unicode/utf8"
)

// Encoding is one encoded text or pair. Its slices are owned by the caller.
type Encoding struct {
	// IDs are the token ids.
	IDs []int32
	// TypeIDs are the token type (segment) ids, same length as IDs.
	TypeIDs []int32
	// AttentionMask is 1 for every token (no padding is added).
	AttentionMask []int32
	// Offsets are [start, end) byte offsets into the text each token came
	// from (Tokenize only; nil otherwise). Special tokens have [0, 0).
	Offsets [][2]int
}

// Len is the number of tokens.
func (e Encoding) Len() int { return len(e.IDs) }

// validText returns s with each invalid UTF-8 byte replaced by U+FFFD, as
// Go's range loop decodes it (strings.ToValidUTF8 would merge runs, which
// differs from what package wordpiece and encoding/json see).
func validText(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	return string([]rune(s))
}
