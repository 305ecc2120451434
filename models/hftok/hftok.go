//go:build hftokenizers && cgo

package hftok

/*
#cgo CFLAGS: -O2
#cgo LDFLAGS: -L${SRCDIR}/../../.deps/hftok -lhftok -lm -ldl -lpthread -lrt -lutil -lgcc_s
#include <stdlib.h>
#include "hftok.h"
*/
import "C"

import (
	"fmt"
	"strings"
	"sync"
	"unsafe"

	"github.com/hybrank/hybrank/models/wordpiece"
)

// Available reports whether the Rust library is linked (build tag
// hftokenizers with cgo).
const Available = true

// Tokenizer is a Hugging Face tokenizer loaded from a tokenizer.json. It is
// safe for concurrent use; see the package doc for lifetime rules.
type Tokenizer struct {
	mu     sync.RWMutex // guards h: read-held by every call, write-held by Close
	h      *C.hftok_handle
	padID  int32
	vocab  int
	added1 int // special tokens added to a single text
	added2 int // special tokens added to a pair
}

// Load reads a tokenizer.json file (any model type the library knows:
// WordPiece, BPE, Unigram, WordLevel). Errors wrap ErrLoad.
func Load(path string) (*Tokenizer, error) {
	if strings.IndexByte(path, 0) >= 0 {
		return nil, fmt.Errorf("%w: %q: path holds a NUL byte", ErrLoad, path)
	}
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	var cerr *C.char
	h := C.hftok_from_file(cpath, &cerr)
	if h == nil {
		return nil, fmt.Errorf("%w: %s: %s", ErrLoad, path, takeErr(cerr))
	}
	return &Tokenizer{
		h:      h,
		padID:  int32(C.hftok_pad_id(h)),
		vocab:  int(C.hftok_vocab_size(h)),
		added1: int(C.hftok_added_tokens(h, false)),
		added2: int(C.hftok_added_tokens(h, true)),
	}, nil
}

// takeErr copies and frees an error string from the library.
func takeErr(cerr *C.char) string {
	if cerr == nil {
		return "unknown error"
	}
	defer C.hftok_string_free(cerr)
	return C.GoString(cerr)
}

// Close frees the native tokenizer after in-flight calls return. It is
// idempotent.
func (t *Tokenizer) Close() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.h != nil {
		C.hftok_free(t.h)
		t.h = nil
	}
	return nil
}

// PadID is the padding id (tokenizer.json's padding block, else [PAD],
// <pad>, <PAD> or <|padding|>), or -1 when the tokenizer has none.
func (t *Tokenizer) PadID() int32 { return t.padID }

// VocabSize is the vocabulary size, added tokens included.
func (t *Tokenizer) VocabSize() int { return t.vocab }

// AddedTokens is the number of special tokens added to a single text
// (pair false) or to a pair by the post-processor.
func (t *Tokenizer) AddedTokens(pair bool) int {
	if pair {
		return t.added2
	}
	return t.added1
}

// Encode encodes text with the special tokens, truncated to maxLen tokens
// (0 = no truncation).
func (t *Tokenizer) Encode(text string, maxLen int) (Encoding, error) {
	return t.encode(text, "", false, maxLen, wordpiece.LongestFirst, true, false)
}

// EncodePair encodes the pair (a, b) with the special tokens, truncated to
// maxLen tokens (0 = no truncation) with strategy strat.
func (t *Tokenizer) EncodePair(a, b string, maxLen int, strat wordpiece.Truncation) (Encoding, error) {
	return t.encode(a, b, true, maxLen, strat, true, false)
}

// Tokenize returns the tokens of text without special tokens and without
// truncation, with byte offsets into text (for valid UTF-8 text).
func (t *Tokenizer) Tokenize(text string) (Encoding, error) {
	return t.encode(text, "", false, 0, wordpiece.LongestFirst, false, true)
}

// Decode turns ids back into text, skipping special tokens when asked
// (the tokenizer.json's decoder; NUL bytes are dropped).
func (t *Tokenizer) Decode(ids []int32, skipSpecial bool) (string, error) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	if t.h == nil {
		return "", ErrClosed
	}
	u := make([]C.uint32_t, len(ids))
	for i, id := range ids {
		if id < 0 || int(id) >= t.vocab {
			return "", fmt.Errorf("%w: id %d out of range [0, %d)", ErrEncode, id, t.vocab)
		}
		u[i] = C.uint32_t(id)
	}
	var p *C.uint32_t
	if len(u) > 0 {
		p = &u[0]
	}
	var cerr *C.char
	s := C.hftok_decode(t.h, p, C.size_t(len(u)), C.bool(skipSpecial), &cerr)
	if s == nil {
		return "", fmt.Errorf("%w: decode: %s", ErrEncode, takeErr(cerr))
	}
	defer C.hftok_string_free(s)
	return C.GoString(s), nil
}

// strategyCode maps our strategies to lib.rs's codes.
func strategyCode(s wordpiece.Truncation) (C.uint8_t, error) {
	switch s {
	case wordpiece.LongestFirst:
		return 0, nil
	case wordpiece.OnlyFirst:
		return 1, nil
	case wordpiece.OnlySecond:
		return 2, nil
	}
	return 0, fmt.Errorf("%w: unknown truncation %v", ErrEncode, s)
}

// cstr returns the (pointer, length) of s for a call that does not keep it.
func cstr(s string) (*C.uint8_t, C.size_t) {
	if s == "" {
		return nil, 0
	}
	return (*C.uint8_t)(unsafe.Pointer(unsafe.StringData(s))), C.size_t(len(s))
}

func (t *Tokenizer) encode(a, b string, pair bool, maxLen int, strat wordpiece.Truncation, special, offsets bool) (Encoding, error) {
	if maxLen < 0 {
		return Encoding{}, fmt.Errorf("%w: %d", ErrMaxLen, maxLen)
	}
	code, err := strategyCode(strat)
	if err != nil {
		return Encoding{}, err
	}
	a, b = validText(a), validText(b)
	ap, an := cstr(a)
	bp, bn := cstr(b)
	t.mu.RLock()
	defer t.mu.RUnlock()
	if t.h == nil {
		return Encoding{}, ErrClosed
	}
	var out C.hftok_encoding
	var cerr *C.char
	rc := C.hftok_encode(t.h, ap, an, bp, bn, C.bool(pair), C.size_t(maxLen), code, C.bool(special), C.bool(offsets), &out, &cerr)
	switch rc {
	case C.HFTOK_OK:
	case C.HFTOK_ERR_TOO_SHORT:
		return Encoding{}, fmt.Errorf("%w: %s", ErrSequenceTooShort, takeErr(cerr))
	case C.HFTOK_ERR_MAX_LEN:
		return Encoding{}, fmt.Errorf("%w: %s", ErrMaxLen, takeErr(cerr))
	default:
		return Encoding{}, fmt.Errorf("%w: %s", ErrEncode, takeErr(cerr))
	}
	defer C.hftok_encoding_free(&out)
	n := int(out.len)
	buf := make([]int32, 3*n) // one allocation for the three columns
	e := Encoding{IDs: buf[:n:n], TypeIDs: buf[n : 2*n : 2*n], AttentionMask: buf[2*n:]}
	if n == 0 {
		return e, nil
	}
	ids := unsafe.Slice(out.ids, n)
	types := unsafe.Slice(out.type_ids, n)
	mask := unsafe.Slice(out.attention_mask, n)
	for i := range n {
		e.IDs[i], e.TypeIDs[i], e.AttentionMask[i] = int32(ids[i]), int32(types[i]), int32(mask[i])
	}
	if offsets && out.offsets != nil {
		offs := unsafe.Slice(out.offsets, 2*n)
		e.Offsets = make([][2]int, n)
		for i := range e.Offsets {
			e.Offsets[i] = [2]int{int(offs[2*i]), int(offs[2*i+1])}
		}
	}
	return e, nil
}
