package dense

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"

	"github.com/hybrank/hybrank/bench/eval"
)

func TestSentences(t *testing.T) {
	cases := []struct {
		in   string
		want []string
	}{
		{"One two three. Four five six! Seven eight nine? Ten", []string{"One two three.", "Four five six!", "Seven eight nine?"}},
		{"p = 0.05 was the bound. e.g. two.", []string{"p = 0.05 was the bound."}},
		{"  A\nb c.\tDé jà vu here.", []string{"A\nb c.", "Dé jà vu here."}},
		{"", nil},
	}
	for _, c := range cases {
		if got := Sentences(c.in, 3); !slices.Equal(got, c.want) {
			t.Errorf("Sentences(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// TestPassageVectors embeds the sentences of a tiny generated collection
// with a generated embedder and runs the sweep on them.
func TestPassageVectors(t *testing.T) {
	mdir, small := tinyEmbedder(t)
	var docs []eval.Doc
	for i := range 20 {
		docs = append(docs, eval.Doc{ID: fmt.Sprint(i), Text: fmt.Sprintf("First sentence about topic %d. Second sentence number %d here. ok", i, i)})
	}
	ds := filepath.Join(t.TempDir(), "tiny")
	if err := eval.WriteBEIR(ds, docs, []eval.Query{{ID: "q", Text: "topic 3"}, {ID: "r", Text: "number 7"}}, eval.Qrels{"q": {"3": 1}, "r": {"7": 1}}); err != nil {
		t.Fatal(err)
	}
	pc := DefaultPassageConfig()
	pc.Model, pc.Datasets, pc.CacheDir, pc.Provider, pc.Threads, pc.MaxPassages = mdir, []string{ds}, t.TempDir(), "cpu", 1, 35
	v, err := PassageVectors(context.Background(), pc)
	if err != nil {
		t.Fatal(err)
	}
	if len(v.Base) != 35 || len(v.Queries) != 2 || len(v.Base[0]) != small.Hidden {
		t.Fatalf("%d base, %d queries of dim %d", len(v.Base), len(v.Queries), len(v.Base[0]))
	}
	cfg := DefaultConfig()
	cfg.Vectors, cfg.Ms, cfg.Efs, cfg.K = v, []int{8}, []int{16}, 5
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Rows) != 2 || res.Rows[1].RecallAtK < 0.99 {
		t.Fatalf("rows %+v: 35 vectors fit the beam, recall must be exact", res.Rows)
	}
	pc.MinWords = 0
	if _, err := PassageVectors(context.Background(), pc); err == nil {
		t.Error("min_words 0 accepted")
	}
}
