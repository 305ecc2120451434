package beir

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func writeBEIR(t *testing.T, corpus, queries, qrels string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "qrels"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, s := range map[string]string{"corpus.jsonl": corpus, "queries.jsonl": queries, "qrels/test.tsv": qrels} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestLoad(t *testing.T) {
	dir := writeBEIR(t,
		`{"_id":"d1","title":"T1","text":"one"}`+"\n\n"+`{"_id":"d2","text":"two"}`+"\n"+`{"_id":42,"text":"numeric"}`,
		`{"_id":"q1","text":"first"}`+"\n"+`{"_id":"q2","text":"unjudged"}`+"\n"+`{"_id":"q3","text":"third"}`,
		"query-id\tcorpus-id\tscore\nq1\td1\t1\nq3\td2\t2\nq3\td1\t0\n")
	ds, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(ds.Docs) != 3 || ds.Docs[2].ID != "42" || ds.Docs[0].IndexText() != "T1 one" || ds.Docs[1].IndexText() != "two" {
		t.Errorf("docs: %+v", ds.Docs)
	}
	if len(ds.Queries) != 2 || ds.Queries[0].ID != "q1" || ds.Queries[1].ID != "q3" {
		t.Errorf("queries: %+v", ds.Queries)
	}
	if ds.Qrels["q3"]["d2"] != 2 || len(ds.Qrels["q3"]) != 2 {
		t.Errorf("qrels: %+v", ds.Qrels)
	}
}

func TestLoadBEIRErrors(t *testing.T) {
	good := `{"_id":"d1","text":"x"}` + "\n"
	goodQ := `{"_id":"q1","text":"x"}` + "\n"
	goodR := "query-id\tcorpus-id\tscore\nq1\td1\t1\n"
	tests := []struct {
		name                  string
		corpus, queries, qrel string
		wantIn                string
		wantErr               error
	}{
		{"bad json line 2", good + "{oops\n", goodQ, goodR, "corpus.jsonl:2", ErrMalformed},
		{"missing id", `{"text":"x"}`, goodQ, goodR, "corpus.jsonl:1", ErrMalformed},
		{"empty id", `{"_id":"","text":"x"}`, goodQ, goodR, "corpus.jsonl:1", ErrMalformed},
		{"object id", `{"_id":{},"text":"x"}`, goodQ, goodR, "corpus.jsonl:1", ErrMalformed},
		{"query missing id", good, goodQ + `{"text":"x"}`, goodR, "queries.jsonl:2", ErrMalformed},
		{"qrels field count", good, goodQ, "query-id\tcorpus-id\tscore\nq1 d1 1\n", "test.tsv:2", ErrMalformed},
		{"qrels bad score", good, goodQ, "query-id\tcorpus-id\tscore\nq1\td1\thigh\n", "test.tsv:2", ErrMalformed},
		{"no judged query", good, `{"_id":"q9","text":"x"}`, goodR, "", ErrNoQueries},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Load(writeBEIR(t, tt.corpus, tt.queries, tt.qrel))
			if !errors.Is(err, tt.wantErr) || !strings.Contains(err.Error(), tt.wantIn) {
				t.Fatalf("err = %v, want %v containing %q", err, tt.wantErr, tt.wantIn)
			}
		})
	}
	if _, err := Load(t.TempDir()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing files: %v", err)
	}
}

func TestWriteBEIRRoundTrip(t *testing.T) {
	docs := []Doc{{ID: "d1", Title: "T", Text: "one \"quoted\"\nline"}, {ID: "d2", Text: "two"}}
	queries := []Query{{ID: "q1", Text: "first"}, {ID: "q2", Text: "unjudged"}}
	qrels := Qrels{"q1": {"d2": 2, "d1": 0}}
	dir := filepath.Join(t.TempDir(), "set")
	if err := Write(dir, docs, queries, qrels); err != nil {
		t.Fatal(err)
	}
	ds, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if ds.Name != "set" || len(ds.Docs) != 2 || ds.Docs[0] != docs[0] || ds.Docs[1] != docs[1] {
		t.Errorf("docs %+v", ds.Docs)
	}
	if len(ds.Queries) != 1 || ds.Queries[0] != queries[0] || ds.Qrels["q1"]["d2"] != 2 || len(ds.Qrels["q1"]) != 2 {
		t.Errorf("queries %+v qrels %+v", ds.Queries, ds.Qrels)
	}
	if err := Write(t.TempDir(), nil, nil, Qrels{"q\t1": {"d": 1}}); !errors.Is(err, ErrMalformed) {
		t.Errorf("tab in id: %v", err)
	}
}

func TestReadN(t *testing.T) {
	// The third document is malformed: reading the first two never parses it.
	dir := writeBEIR(t,
		`{"_id":"d1","title":"T1","text":"one"}`+"\n\n"+`{"_id":"d2","text":"two"}`+"\n"+`{oops`+"\n",
		`{"_id":"q1","text":"first"}`+"\n"+`{"_id":"q2","text":"second"}`+"\n",
		"")
	for _, tt := range []struct {
		n    int
		want []Doc
	}{
		{0, nil},
		{1, []Doc{{ID: "d1", Title: "T1", Text: "one"}}},
		{2, []Doc{{ID: "d1", Title: "T1", Text: "one"}, {ID: "d2", Text: "two"}}},
	} {
		docs, err := ReadCorpusN(dir, tt.n)
		if err != nil || !slices.Equal(docs, tt.want) {
			t.Errorf("ReadCorpusN(%d) = %+v, %v; want %+v", tt.n, docs, err, tt.want)
		}
	}
	for _, n := range []int{3, -1} {
		if _, err := ReadCorpusN(dir, n); !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), "corpus.jsonl:4") {
			t.Errorf("ReadCorpusN(%d): err = %v, want malformed line 4", n, err)
		}
	}
	for _, tt := range []struct {
		n    int
		want []Query
	}{
		{1, []Query{{ID: "q1", Text: "first"}}},
		{5, []Query{{ID: "q1", Text: "first"}, {ID: "q2", Text: "second"}}},
		{-1, []Query{{ID: "q1", Text: "first"}, {ID: "q2", Text: "second"}}},
	} {
		qs, err := ReadQueriesN(dir, tt.n)
		if err != nil || !slices.Equal(qs, tt.want) {
			t.Errorf("ReadQueriesN(%d) = %+v, %v; want %+v", tt.n, qs, err, tt.want)
		}
	}
	if qs, err := ReadQueries(dir); err != nil || len(qs) != 2 {
		t.Errorf("ReadQueries = %+v, %v", qs, err)
	}
	if _, err := ReadCorpusN(t.TempDir(), 1); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing corpus: %v", err)
	}
}
