package wordpiece

import (
	"reflect"
	"strings"
	"testing"

	"github.com/hybrank/hybrank/internal/testenv"
)

// TestChunkedEqualsWhole checks that cutting long texts into chunks gives
// the same ids as normalising and splitting the whole text at once.
func TestChunkedEqualsWhole(t *testing.T) {
	tk, err := LoadVocab(testenv.NeedVocabTxt(t), DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	base := "Ünïcödé téxt wïth áccents e\u0301\u0301, 中文 and   spaces\u00a0\u3000 plus words-with-punct! "
	for _, n := range []int{1, 50, 100, 200} {
		text := strings.Repeat(base, n) + strings.Repeat("x", 5000) + " tail " + strings.Repeat("ab cd ", 1000)
		st := tk.getState()
		whole, _ := tk.split(st, nil, tk.normalize(st, text), 1<<62)
		whole = append([]int32(nil), whole...)
		tk.putState(st)
		got := tk.IDs(nil, text)
		if !reflect.DeepEqual(got, whole) {
			t.Fatalf("n=%d: chunked ids differ from whole-text ids (%d vs %d)", n, len(got), len(whole))
		}
	}
}
