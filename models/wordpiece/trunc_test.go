package wordpiece_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hybrank/hybrank/internal/testenv"
	"github.com/hybrank/hybrank/models/wordpiece"
)

// TestTruncationGridHF checks LongestFirst pair truncation against HF for
// every (n1, n2) up to 15 words and several max lengths, ties included, with
// one-token and three-token words (HF stops tokenizing at the first word
// boundary at or past max_length, which decides ties).
func TestTruncationGridHF(t *testing.T) {
	tj := testenv.NeedTokenizerJSON(t)
	addon, err := filepath.Abs(filepath.Dir(testenv.NeedHFTokenizers(t)))
	if err != nil {
		t.Fatal(err)
	}
	node := needNodeBin(t)
	out := runNodeScript(t, node, "hf_trunc.js", addon, tj)
	var rows [][6]int
	if err := json.Unmarshal(out, &rows); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	tk, err := wordpiece.LoadTokenizerJSON(tj, 0)
	if err != nil {
		t.Fatal(err)
	}
	bad := 0
	for _, r := range rows {
		maxLen, n1, n2 := r[0], r[2], r[3]
		word := "a "
		if r[1] == 1 {
			word = "xxxxxx " // three pieces: xx ##xx ##xx
		}
		q, d := strings.Repeat(word, n1), strings.Repeat("b ", n2)
		e, err := tk.EncodePair(q, d, maxLen, wordpiece.LongestFirst)
		if err != nil {
			t.Fatal(err)
		}
		batch, err := tk.EncodePairs(context.Background(), q, []string{d}, maxLen, wordpiece.LongestFirst)
		if err != nil {
			t.Fatal(err)
		}
		k1 := 0
		for _, ty := range e.TypeIDs {
			if ty == 0 {
				k1++
			}
		}
		k1 -= 2
		k2 := len(e.TypeIDs) - k1 - 3
		if k1 != r[4] || k2 != r[5] || len(batch[0].IDs) != len(e.IDs) {
			bad++
			if bad < 10 {
				t.Errorf("max %d q %q d %q: kept (%d,%d), HF (%d,%d)", maxLen, q, d, k1, k2, r[4], r[5])
			}
		}
	}
	t.Logf("%d cases, %d differ", len(rows), bad)
}
