package porter2_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/kljensen/snowball/english"

	"github.com/hybrank/hybrank/analysis/porter2"
)

// edgeCases are inputs where implementations of the description tend to
// differ: short words, apostrophes, y handling, region prefixes, case and
// space, non-ASCII code points and invalid UTF-8.
var edgeCases = []string{
	"", "a", "ab", "é", "éa", "abc", "'", "''", "'''", "''s", "'s'", "x's", "dog's'", "dogs'",
	"'tis", "''''cats", "o'neill's", "cat\u2019s", "\u2018cats", "\u201Bdog\u2019s\u2019",
	"yes", "ayy", "yyy", "sayyid", "toy", "toys", "cry", "by", "say", "boy", "flying", "yearly",
	"generate", "generously", "general", "communism", "communication", "arsenic", "arsenal",
	"gener", "commun", "arsen",
	"inning", "innings", "inning's", "'innings", "proceedings", "skies", "sky's", "news's",
	"hoped", "hoping", "hopped", "ownedly", "bled", "agreed", "feed", "eed", "ed", "ing", "sing",
	"ties", "cries", "ied", "ies", "us", "ss", "gas", "this", "kiwis", "caress", "caresses",
	"happy", "happily", "conditional", "rational", "valenci", "hesitanci", "digitizer",
	"conformabli", "radicalli", "differentli", "vileli", "analogousli", "vietnamization",
	"predication", "operator", "feudalism", "decisiveness", "hopefulness", "callousness",
	"formaliti", "sensitiviti", "sensibiliti", "fluentli", "hopelessli", "analogi", "archaeologi",
	"electrical", "electriciti", "formative", "goodness", "hopeful", "triplicate", "formalize",
	"revival", "allowance", "inference", "airliner", "gyroscopic", "adjustable", "defensible",
	"irritant", "replacement", "adjustment", "dependent", "adoption", "communism", "activate",
	"angulariti", "homologous", "effective", "bowdlerize", "adhesion", "controll", "roll",
	"rate", "cease", "abate", "Running", "  Dogs\t", "RUNNING", "ÉTUDES", "\u212Aisses",
	"naïvely", "cafés", "москва", "東京", "straße", "ab\xffcd", "\xff\xfe\xfd", "x\xffies",
	"éies", "aéed", "éing", "\u00a0cats\u00a0", "\u0085ran", "covid_19", "2020s", "a1b2c3",
}

func TestParityEdgeCases(t *testing.T) {
	for _, w := range edgeCases {
		if got, want := porter2.Stem(w), english.Stem(w, true); got != want {
			t.Errorf("Stem(%q) = %q, snowball %q", w, got, want)
		}
	}
}

// TestParityGeneratedWords compares with snowball on words built to reach
// every step: random stems over the letters the rules test, followed by
// one to three suffixes from the rules. Random fuzzing rarely spells
// "izational", so this covers the rule interplay that fuzzing misses.
func TestParityGeneratedWords(t *testing.T) {
	const letters = "aeiouyYbcdfghklmnprstwxz'’é"
	suffixes := []string{
		"'s'", "'s", "'", "sses", "ied", "ies", "us", "ss", "s", "eedly", "ingly", "edly", "ing", "eed", "ed",
		"at", "bl", "iz", "bb", "dd", "tt", "y", "ational", "tional", "enci", "anci", "abli", "entli", "izer",
		"ization", "ation", "ator", "alism", "aliti", "alli", "fulness", "ousli", "ousness", "iveness", "iviti",
		"biliti", "bli", "ogi", "fulli", "lessli", "li", "alize", "icate", "iciti", "ical", "ful", "ness",
		"ative", "al", "ance", "ence", "er", "ic", "able", "ible", "ant", "ement", "ment", "ent", "ism",
		"ate", "iti", "ous", "ive", "ize", "ion", "sion", "tion", "e", "l", "ll", "gener", "commun", "arsen",
	}
	rng := rand.New(rand.NewPCG(1, 2))
	n := 300000
	if testing.Short() {
		n = 30000
	}
	runes := []rune(letters)
	var sb strings.Builder
	bad := 0
	for range n {
		sb.Reset()
		for range rng.IntN(6) {
			sb.WriteRune(runes[rng.IntN(len(runes))])
		}
		for range 1 + rng.IntN(3) {
			sb.WriteString(suffixes[rng.IntN(len(suffixes))])
		}
		w := sb.String()
		if got, want := porter2.Stem(w), english.Stem(w, true); got != want {
			if bad++; bad <= 20 {
				t.Errorf("Stem(%q) = %q, snowball %q", w, got, want)
			}
		}
	}
	if bad > 0 {
		t.Errorf("%d of %d generated words differ", bad, n)
	}
}

// TestStem pins stems from the published algorithm's examples, so that a
// change shows here even where the reference would change along with it.
func TestStem(t *testing.T) {
	tests := []struct{ in, want string }{
		{"consign", "consign"}, {"consigned", "consign"}, {"consigning", "consign"},
		{"consignment", "consign"}, {"consist", "consist"}, {"consisted", "consist"},
		{"consistency", "consist"}, {"consistent", "consist"}, {"consistently", "consist"},
		{"consolation", "consol"}, {"consolations", "consol"}, {"consolatory", "consolatori"},
		{"knack", "knack"}, {"knackeries", "knackeri"}, {"knaves", "knave"},
		{"knavish", "knavish"}, {"kneel", "kneel"}, {"knelt", "knelt"},
		{"generously", "generous"}, {"running", "run"}, {"caressed", "caress"},
		{"skies", "sky"}, {"dying", "die"}, {"news", "news"}, {"proceeding", "proceed"},
		{"happy", "happi"}, {"hoped", "hope"}, {"hopping", "hop"}, {"agreed", "agre"},
		{"ab", "ab"}, {"", ""}, {"'", "'"}, {"'''", ""}, {"Running", "run"}, {"ayy", "ayi"},
		{"cafés", "café"}, {"dog\u2019s", "dog"}, {"ab\xffies", "ab\uFFFDi"},
	}
	for _, tt := range tests {
		if got := porter2.Stem(tt.in); got != tt.want {
			t.Errorf("Stem(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// snowballDir returns the module folder of kljensen/snowball, which holds
// the official vocabulary, or skips the test.
func snowballDir(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/kljensen/snowball").Output()
	dir := strings.TrimSpace(string(out))
	if err != nil || dir == "" {
		t.Skipf("module folder of github.com/kljensen/snowball not found (go list -m: %v); run `go mod download`", err)
	}
	return dir
}

// loadVocabulary reads the official Snowball English vocabulary (voc.txt
// with its output.txt) as kljensen/snowball ships it: the testCases table
// of english_vocab/vocab_test.go, {"word", "stem"} pairs.
func loadVocabulary(t *testing.T, path string) [][2]string {
	t.Helper()
	src, err := os.ReadFile(path)
	if err != nil {
		t.Skipf("official vocabulary not found: %v", err)
	}
	f, err := parser.ParseFile(token.NewFileSet(), path, src, 0)
	if err != nil {
		t.Fatalf("parse %s: %v", path, err)
	}
	var pairs [][2]string
	ast.Inspect(f, func(n ast.Node) bool {
		lit, ok := n.(*ast.CompositeLit)
		if !ok || len(lit.Elts) != 2 {
			return true
		}
		var p [2]string
		for i, e := range lit.Elts {
			bl, ok := e.(*ast.BasicLit)
			if !ok || bl.Kind != token.STRING {
				return true
			}
			if p[i], err = strconv.Unquote(bl.Value); err != nil {
				t.Fatalf("%s: %v", bl.Value, err)
			}
		}
		pairs = append(pairs, p)
		return false
	})
	return pairs
}

func TestOfficialVocabulary(t *testing.T) {
	pairs := loadVocabulary(t, filepath.Join(snowballDir(t), "english_vocab", "vocab_test.go"))
	// kljensen/snowball v0.10.0 ships 29,414 pairs; fewer means the file changed
	// shape and the test would silently check little.
	if len(pairs) < 29000 {
		t.Fatalf("read %d vocabulary pairs, want the full official list (29,414)", len(pairs))
	}
	bad := 0
	for _, p := range pairs {
		if got := porter2.Stem(p[0]); got != p[1] {
			if bad++; bad <= 20 {
				t.Errorf("Stem(%q) = %q, want %q", p[0], got, p[1])
			}
		}
	}
	if bad > 0 {
		t.Errorf("%d of %d vocabulary words stem differently", bad, len(pairs))
	}
	t.Logf("%d vocabulary words", len(pairs))
}

// TestStemAllocs checks the promise of the doc: a lowercase ASCII word
// whose stem is itself or a prefix of itself costs no allocation.
func TestStemAllocs(t *testing.T) {
	for _, w := range []string{"cat", "running", "generously", "consignment", "dogs", "knack", "adjustable"} {
		if n := testing.AllocsPerRun(100, func() { porter2.Stem(w) }); n != 0 {
			t.Errorf("Stem(%q): %.0f allocations, want 0", w, n)
		}
	}
}

func FuzzPorter2(f *testing.F) {
	for _, w := range edgeCases {
		f.Add(w)
	}
	f.Fuzz(func(t *testing.T, w string) {
		if got, want := porter2.Stem(w), english.Stem(w, true); got != want {
			t.Errorf("Stem(%q) = %q, snowball %q", w, got, want)
		}
	})
}
