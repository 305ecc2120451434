package analysis_test

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/hybrank/hybrank/analysis"
)

func cfgWith(f func(*analysis.Config)) analysis.Config {
	c := analysis.DefaultConfig()
	if f != nil {
		f(&c)
	}
	return c
}

func TestAnalyze(t *testing.T) {
	noStem := func(c *analysis.Config) { c.Stemmer = analysis.StemmerNone }
	tests := []struct {
		name string
		cfg  analysis.Config
		in   string
		want []string
	}{
		{"empty", cfgWith(nil), "", nil},
		{"only punctuation", cfgWith(nil), " ,.;- ", nil},
		// Expected stems checked against libstemmer 2.2 (PyStemmer's C core).
		{"bm25s default", cfgWith(nil), "The Running dogs are generously caressed!",
			[]string{"run", "dog", "generous", "caress"}},
		{"single chars dropped", cfgWith(nil), "a b c x-ray 3 d",
			[]string{"ray"}},
		{"digits and underscores are word chars", cfgWith(noStem), "covid_19 in 2020, IL-6",
			[]string{"covid_19", "2020", "il"}},
		{"apostrophe splits", cfgWith(noStem), "don't it's",
			[]string{"don"}},
		{"unicode letters", cfgWith(noStem), "Ünïcödé ÉTUDE naïve café Москва 東京",
			[]string{"ünïcödé", "étude", "naïve", "café", "москва", "東京"}},
		{"combining mark splits like python", cfgWith(noStem), "cafe\u0301s", []string{"cafe"}},
		{"dotted capital I", cfgWith(noStem), "İstanbul xİy", []string{"stanbul", "xi"}},
		// Expected values from Python: re.findall(r"(?u)\b\w\w+\b", s.lower()).
		{"final sigma", cfgWith(noStem), "ΟΔΟΣ ΣΑΣ Σ1 ΑΣ'Β ⓡΣΣ", []string{"οδος", "σας", "σ1", "ασ", "σς"}},
		{"sigma before cased letter", cfgWith(noStem), "ΑΣ\u0301Β", []string{"ασ"}},
		{"unicode number", cfgWith(noStem), "Ⅻv ²³", []string{"ⅻv", "²³"}},
		{"invalid utf8 is a separator", cfgWith(noStem), "ab\xffcd", []string{"ab", "cd"}},
		{"stopwords off", cfgWith(func(c *analysis.Config) { c.Stopwords = analysis.StopwordsNone; c.Stemmer = analysis.StemmerNone }),
			"the cat is on the mat", []string{"the", "cat", "is", "on", "the", "mat"}},
		{"stopwords plus", cfgWith(func(c *analysis.Config) { c.Stopwords = analysis.StopwordsBM25SPlus; c.Stemmer = analysis.StemmerNone }),
			"what about the cat", []string{"cat"}},
		{"extra stopwords", cfgWith(func(c *analysis.Config) { c.ExtraStopwords = []string{"Cat"}; c.Stemmer = analysis.StemmerNone }),
			"the cat sat", []string{"sat"}},
		{"stopword checked before stemming", cfgWith(nil), "thing things", []string{"thing", "thing"}},
		{"no lowercase", cfgWith(func(c *analysis.Config) { c.Lowercase = false; c.Stemmer = analysis.StemmerNone }),
			"The Cat", []string{"The", "Cat"}},
		{"min len 1", cfgWith(func(c *analysis.Config) { c.MinTokenLen = 1; c.Stemmer = analysis.StemmerNone }),
			"x y zz", []string{"x", "y", "zz"}},
		{"max len", cfgWith(func(c *analysis.Config) { c.MaxTokenLen = 4; c.Stemmer = analysis.StemmerNone }),
			"tiny enormous", []string{"tiny"}},
		{"snowball specials", cfgWith(nil), "skies dying news proceeding",
			[]string{"sky", "die", "news", "proceed"}},
		{"code aware camel", cfgWith(func(c *analysis.Config) { c.CodeAware = true; c.Stemmer = analysis.StemmerNone }),
			"parseHTTPServer", []string{"parsehttpserver", "parse", "http", "server"}},
		{"code aware snake and digits", cfgWith(func(c *analysis.Config) { c.CodeAware = true; c.Stemmer = analysis.StemmerNone }),
			"max_retry_count utf8 sha256sum", []string{"max_retry_count", "max", "retry", "count", "utf8", "utf", "sha256sum", "sha", "256", "sum"}},
		{"code aware single part", cfgWith(func(c *analysis.Config) { c.CodeAware = true }),
			"Running", []string{"run"}},
		{"code aware stems parts", cfgWith(func(c *analysis.Config) { c.CodeAware = true }),
			"runningDogs", []string{"runningdog", "run", "dog"}},
		{"expansion ignored by Analyze", cfgWith(func(c *analysis.Config) { c.Expansions = map[string]string{"uav": "unmanned aerial vehicle"} }),
			"UAV flights", []string{"uav", "flight"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := analysis.New(tt.cfg)
			if err != nil {
				t.Fatal(err)
			}
			got := a.Analyze(tt.in)
			if len(got) == 0 && len(tt.want) == 0 {
				return
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Analyze(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestAnalyzeQueryExpansion(t *testing.T) {
	cfg := analysis.DefaultConfig()
	cfg.Expansions = map[string]string{"UAV": "unmanned aerial vehicles", "loop": "loop cycle"}
	a := analysis.MustNew(cfg)
	tests := []struct {
		name, in string
		want     []string
	}{
		{"expands", "uav flights", []string{"uav", "unman", "aerial", "vehicl", "flight"}},
		{"key case folded", "UAV", []string{"uav", "unman", "aerial", "vehicl"}},
		{"no recursion", "loop", []string{"loop", "loop", "cycl"}},
		{"no match", "drones", []string{"drone"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := a.AnalyzeQuery(tt.in); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("AnalyzeQuery(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name string
		cfg  analysis.Config
		ok   bool
	}{
		{"default", analysis.DefaultConfig(), true},
		{"zero value", analysis.Config{}, false},
		{"min 0", cfgWith(func(c *analysis.Config) { c.MinTokenLen = 0 }), false},
		{"max below min", cfgWith(func(c *analysis.Config) { c.MaxTokenLen = 1 }), false},
		{"bad stopwords", cfgWith(func(c *analysis.Config) { c.Stopwords = "klingon" }), false},
		{"bad stemmer", cfgWith(func(c *analysis.Config) { c.Stemmer = "porter1" }), false},
		{"negative cache", cfgWith(func(c *analysis.Config) { c.StemCacheEntries = -1 }), false},
		{"multi-word key", cfgWith(func(c *analysis.Config) { c.Expansions = map[string]string{"a b": "c"} }), false},
		{"no cache ok", cfgWith(func(c *analysis.Config) { c.StemCacheEntries = 0 }), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			if (err == nil) != tt.ok {
				t.Fatalf("Validate() = %v, want ok=%v", err, tt.ok)
			}
			if err != nil && !errors.Is(err, analysis.ErrInvalidConfig) {
				t.Errorf("error %v does not wrap ErrInvalidConfig", err)
			}
			if _, nerr := analysis.New(tt.cfg); (nerr == nil) != tt.ok {
				t.Errorf("New() = %v, want ok=%v", nerr, tt.ok)
			}
		})
	}
}

func TestVersion(t *testing.T) {
	base := analysis.DefaultConfig()
	if got, want := base.Version(), "v1;lower=1;min=2;max=0;stop=en-bm25s;stem=snowball-en;code=0;exp=none"; got != want {
		t.Errorf("default Version = %q, want %q", got, want)
	}
	variants := map[string]analysis.Config{
		"lower":  cfgWith(func(c *analysis.Config) { c.Lowercase = false }),
		"min":    cfgWith(func(c *analysis.Config) { c.MinTokenLen = 3 }),
		"max":    cfgWith(func(c *analysis.Config) { c.MaxTokenLen = 40 }),
		"stop":   cfgWith(func(c *analysis.Config) { c.Stopwords = analysis.StopwordsNone }),
		"extra":  cfgWith(func(c *analysis.Config) { c.ExtraStopwords = []string{"foo"} }),
		"stem":   cfgWith(func(c *analysis.Config) { c.Stemmer = analysis.StemmerNone }),
		"code":   cfgWith(func(c *analysis.Config) { c.CodeAware = true }),
		"exp":    cfgWith(func(c *analysis.Config) { c.Expansions = map[string]string{"uav": "drone"} }),
		"exp2":   cfgWith(func(c *analysis.Config) { c.Expansions = map[string]string{"uav": "drones"} }),
		"extra2": cfgWith(func(c *analysis.Config) { c.ExtraStopwords = []string{"bar"} }),
	}
	seen := map[string]string{base.Version(): "default"}
	for name, c := range variants {
		v := c.Version()
		if other, dup := seen[v]; dup {
			t.Errorf("%s and %s share version %q", name, other, v)
		}
		seen[v] = name
	}
	cached := cfgWith(func(c *analysis.Config) { c.StemCacheEntries = 7 })
	if cached.Version() != base.Version() {
		t.Errorf("cache size changed the version")
	}
	if got := analysis.MustNew(base).Version(); got != base.Version() {
		t.Errorf("Analyzer.Version = %q, want %q", got, base.Version())
	}
}

func TestStopwordListsAreBM25SCopies(t *testing.T) {
	if n := len(analysis.Stopwords(analysis.StopwordsBM25S)); n != 33 {
		t.Errorf("STOPWORDS_EN has %d entries, want 33", n)
	}
	if n := len(analysis.Stopwords(analysis.StopwordsBM25SPlus)); n != 179 {
		t.Errorf("STOPWORDS_EN_PLUS has %d entries, want 179", n)
	}
	if analysis.Stopwords(analysis.StopwordsNone) != nil {
		t.Errorf("none list is not empty")
	}
}

// TestCacheConsistency checks that a cached analyzer, an uncached one and a
// tiny cache that overflows agree, also under concurrent use.
func TestCacheConsistency(t *testing.T) {
	text := strings.Repeat("Generously caressed running dogs dying in skies of Москва; ", 3)
	ref := analysis.MustNew(cfgWith(func(c *analysis.Config) { c.StemCacheEntries = 0 })).Analyze(text)
	for _, entries := range []int{1, 64, 1 << 20} {
		a := analysis.MustNew(cfgWith(func(c *analysis.Config) { c.StemCacheEntries = entries }))
		var wg sync.WaitGroup
		for g := 0; g < 4; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < 20; i++ {
					if got := a.Analyze(text); !reflect.DeepEqual(got, ref) {
						t.Errorf("entries=%d: got %q, want %q", entries, got, ref)
						return
					}
				}
			}()
		}
		wg.Wait()
	}
}

func TestAppendAnalyzeReusesDst(t *testing.T) {
	a := analysis.MustNew(analysis.DefaultConfig())
	dst := make([]string, 0, 16)
	dst = a.AppendAnalyze(dst, "running dogs")
	dst = a.AppendAnalyze(dst, "flying cats")
	want := []string{"run", "dog", "fli", "cat"}
	if !reflect.DeepEqual(dst, want) {
		t.Errorf("got %q, want %q", dst, want)
	}
}

func ExampleAnalyzer_Analyze() {
	a := analysis.MustNew(analysis.DefaultConfig())
	fmt.Println(a.Analyze("The effects of running on cardiovascular health"))
	// Output: [effect run cardiovascular health]
}

// TestConfiguredWordsLowercasedAsTokens: extra stopwords and expansion keys
// are lowercased by the tokens' rules, so an upper-case Greek word ending
// in Σ (ς at the end of a word) matches its tokens (Go's ToLower gives σ).
func TestConfiguredWordsLowercasedAsTokens(t *testing.T) {
	cfg := analysis.DefaultConfig()
	cfg.ExtraStopwords = []string{"ΟΔΟΣ"}
	a, err := analysis.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if got := a.Analyze("ΟΔΟΣ οδος"); len(got) != 0 {
		t.Errorf("extra stopword ΟΔΟΣ kept: %q", got)
	}
	cfg = analysis.DefaultConfig()
	cfg.Expansions = map[string]string{"ΟΔΟΣ": "street"}
	if a, err = analysis.New(cfg); err != nil {
		t.Fatal(err)
	}
	if got := a.AnalyzeQuery("ΟΔΟΣ"); !reflect.DeepEqual(got, []string{"οδος", "street"}) {
		t.Errorf("AnalyzeQuery(ΟΔΟΣ) = %q, want the expansion", got)
	}
}
