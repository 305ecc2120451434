package analysis_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/kljensen/snowball/english"

	"github.com/hybrank/hybrank/analysis"
	"github.com/hybrank/hybrank/analysis/porter2"
	"github.com/hybrank/hybrank/internal/beir"
	"github.com/hybrank/hybrank/internal/testenv"
)

// TestStemParityCorpora checks that porter2 stems every distinct token of
// the BEIR corpora (and their queries) exactly as kljensen/snowball does,
// the stemmer our bm25s parity figures were measured with. Tokens are the
// analyzer's own: lowercased and split as Analyze does, before stopwords
// and stemming, and handed to both stemmers under the analyzer's rule (only
// tokens of more than two code points are stemmed).
func TestStemParityCorpora(t *testing.T) {
	cfg := analysis.DefaultConfig()
	cfg.MinTokenLen = 1
	cfg.Stopwords = analysis.StopwordsNone
	cfg.Stemmer = analysis.StemmerNone
	cfg.StemCacheEntries = 0
	tok := analysis.MustNew(cfg)
	for _, name := range []string{"scifact", "cisi", "cran"} {
		t.Run(name, func(t *testing.T) {
			dir := testenv.NeedDataset(t, name)
			seen := make(map[string]struct{})
			readTokens(t, dir, tok, seen)
			if len(seen) < 1000 {
				t.Fatalf("only %d distinct tokens: corpus not read", len(seen))
			}
			bad := 0
			for w := range seen {
				if len([]rune(w)) <= 2 {
					continue
				}
				if got, want := porter2.Stem(w), english.Stem(w, true); got != want {
					if bad++; bad <= 20 {
						t.Errorf("Stem(%q) = %q, snowball %q", w, got, want)
					}
				}
			}
			if bad > 0 {
				t.Errorf("%d of %d distinct tokens stem differently", bad, len(seen))
			}
			t.Logf("%s: %d distinct tokens", name, len(seen))
		})
	}
}

// readTokens adds the tokens of the title and text of every document of
// the BEIR folder dir, and of the text of every query, to seen.
func readTokens(t *testing.T, dir string, tok *analysis.Analyzer, seen map[string]struct{}) {
	t.Helper()
	docs, err := beir.ReadCorpus(dir)
	if err != nil {
		t.Fatal(err)
	}
	queries, err := beir.ReadQueries(dir)
	if err != nil {
		t.Fatal(err)
	}
	var terms []string
	add := func(title, text string) {
		terms = tok.AppendAnalyze(terms[:0], title)
		terms = tok.AppendAnalyze(terms, text)
		for _, w := range terms {
			seen[w] = struct{}{}
		}
	}
	for _, d := range docs {
		add(d.Title, d.Text)
	}
	for _, q := range queries {
		add("", q.Text)
	}
}

// TestNoSnowballOrTestingDependency keeps kljensen/snowball a test-only
// dependency: its romance package imports testing, which programs using
// this package (cmd/bench, cmd/serve) must not link.
func TestNoSnowballOrTestingDependency(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go command not on PATH: the dependency check needs the toolchain")
	}
	out, err := exec.Command(gobin, "list", "-deps", "-test=false", "github.com/hybrank/hybrank/analysis").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, p := range strings.Fields(string(out)) {
		if p == "testing" || strings.HasPrefix(p, "github.com/kljensen/snowball") {
			t.Errorf("package analysis depends on %s", p)
		}
	}
}
