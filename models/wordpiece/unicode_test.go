package wordpiece

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/hybrank/hybrank/internal/testenv"
)

type probe struct {
	A, B, C map[string]string
	Punct   []rune `json:"punct"`
	Space   []rune `json:"space"`
}

func tinyTokenizer(t testing.TB, cfg Config) *Tokenizer {
	t.Helper()
	tok, err := NewFromVocab(strings.NewReader("[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\n"), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// TestUnicodeParityHF runs HF's BertNormalizer (three settings) and
// BertPreTokenizer on every code point and compares with ours.
func TestUnicodeParityHF(t *testing.T) {
	if testing.Short() {
		t.Skip("exhaustive code point probe is slow; skipped with -short")
	}
	addon, err := filepath.Abs(filepath.Dir(testenv.NeedHFTokenizers(t)))
	if err != nil {
		t.Fatal(err)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		if testenv.CI() {
			t.Fatalf("node not found: %v", err)
		}
		t.Skipf("node not found (needed to run the HF tokenizers addon): %v", err)
	}
	out := filepath.Join(t.TempDir(), "probe.json")
	if msg, err := exec.Command(node, filepath.Join("testdata", "hf_probe.js"), addon, out).CombinedOutput(); err != nil {
		t.Fatalf("hf_probe.js: %v\n%s", err, msg)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var p probe
	if err := json.Unmarshal(data, &p); err != nil {
		t.Fatal(err)
	}
	if *updateTables {
		writeHFTables(t, &p)
		return
	}
	no := false
	yes := true
	cfgA := DefaultConfig()
	cfgA.StripAccents = &yes
	cfgB := DefaultConfig()
	cfgB.Lowercase, cfgB.StripAccents = false, &no
	cfgC := DefaultConfig()
	cfgC.CleanText, cfgC.HandleChineseChars, cfgC.StripAccents = false, false, &no
	for _, c := range []struct {
		name string
		cfg  Config
		want map[string]string
	}{{"A", cfgA, p.A}, {"B", cfgB, p.B}, {"C", cfgC, p.C}} {
		t.Run("normalizer"+c.name, func(t *testing.T) {
			tok := tinyTokenizer(t, c.cfg)
			st := tok.getState()
			bad := 0
			for cp := rune(0); cp <= utf8.MaxRune; cp++ {
				if cp >= 0xD800 && cp <= 0xDFFF {
					continue
				}
				s := string(cp)
				want, ok := c.want[strconv.Itoa(int(cp))]
				if !ok {
					want = s
				}
				got := string(tok.normalize(st, s))
				if got != want {
					bad++
					if bad <= 40 {
						t.Errorf("U+%04X %q: got %q want %q", cp, s, got, want)
					}
				}
			}
			if bad > 0 {
				t.Errorf("%d code points differ", bad)
			}
		})
	}
	t.Run("pretokenizer", func(t *testing.T) {
		initClasses()
		punct := map[rune]bool{}
		for _, r := range p.Punct {
			punct[r] = true
		}
		space := map[rune]bool{}
		for _, r := range p.Space {
			space[r] = true
		}
		bad := 0
		for cp := rune(0); cp <= utf8.MaxRune; cp++ {
			if cp >= 0xD800 && cp <= 0xDFFF {
				continue
			}
			c := classOf(cp)
			gotP, gotS := c&clsPunct != 0 && c&clsSpace == 0, c&clsSpace != 0
			if c != computeClass(cp) {
				t.Fatalf("U+%04X: class table %b, computed %b", cp, c, computeClass(cp))
			}
			if gotP != punct[cp] || gotS != space[cp] {
				bad++
				if bad <= 40 {
					t.Errorf("U+%04X: punct %v/%v space %v/%v (ours/HF)", cp, gotP, punct[cp], gotS, space[cp])
				}
			}
		}
		if bad > 0 {
			t.Errorf("%s code points differ", fmt.Sprint(bad))
		}
	})
}
