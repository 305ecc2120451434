package tokenize

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/hybrank/hybrank/models/hftok"
	"github.com/hybrank/hybrank/models/wordpiece"
)

// hfRustImpl names the in-process HF rows.
const hfRustImpl = "HF tokenizers 0.23.2 (Rust, in process)"

// tokenizeHFRust times Hugging Face tokenizers linked in process (package
// models/hftok, build tag hftokenizers) on pairs, one goroutine calling
// EncodePair per pair as our EncodePair row does (the cgo call and the copy
// of ids into Go memory are included: that is what a Go caller pays), best
// of cfg.Rounds after a warm-up round. It returns the row and how many pairs
// have the same ids and type ids as ours (ours[i] encodes pairs[i]). skip
// is non-empty, and the rest zero, when HF cannot be measured here.
func tokenizeHFRust(ctx context.Context, cfg Config, strat wordpiece.Truncation, pairs [][2]string, ours []wordpiece.Encoding) (row Row, equal int, skip string, err error) {
	if !hftok.Available {
		return row, 0, "built without -tags hftokenizers (run `make hftokenizers-rs`, then build with the tag)", nil
	}
	if !strings.HasSuffix(cfg.Tokenizer, ".json") {
		return row, 0, "HF in process needs a tokenizer.json, not a vocab.txt", nil
	}
	tk, err := hftok.Load(cfg.Tokenizer)
	if err != nil {
		return row, 0, "", err
	}
	defer tk.Close()
	best, tokens := time.Duration(1<<62), 0
	for r := 0; r < cfg.Rounds+1; r++ { // round 0 warms up and checks parity
		tokens = 0
		start := time.Now()
		for i, p := range pairs {
			if i&1023 == 0 {
				if err := ctx.Err(); err != nil {
					return row, 0, "", err
				}
			}
			e, err := tk.EncodePair(p[0], p[1], cfg.MaxLen, strat)
			if err != nil {
				return row, 0, "", fmt.Errorf("tokenize: HF pair %d: %w", i, err)
			}
			tokens += e.Len()
			if r == 0 && same(ours[i], e.IDs, e.TypeIDs) {
				equal++
			}
		}
		if el := time.Since(start); r > 0 && el < best {
			best = el
		}
	}
	return newRow(hfRustImpl, "EncodePair", len(pairs), tokens, best, "cgo call per pair, ids copied to Go"), equal, "", nil
}
