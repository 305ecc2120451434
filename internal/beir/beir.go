// Package beir reads and writes collections in the BEIR layout
// (corpus.jsonl, queries.jsonl, qrels/test.tsv): the one reader of the
// datasets for the benchmarks (bench/eval re-exports it) and for tests and
// testing.B benchmarks below bench that need real texts.
package beir

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// Doc is one corpus document.
type Doc struct {
	ID    string
	Title string
	Text  string
}

// IndexText is the text a lexical index sees: title + " " + text, as in
// BEIR's and bm25s's BM25 runs.
func (d Doc) IndexText() string {
	if d.Title == "" {
		return d.Text
	}
	return d.Title + " " + d.Text
}

// Query is one judged query.
type Query struct {
	ID   string
	Text string
}

// Qrels maps query id → document id → graded relevance.
type Qrels map[string]map[string]int

// Dataset is a BEIR-layout collection restricted to judged queries. It is
// read-only after loading and safe for concurrent use.
type Dataset struct {
	Name    string
	Docs    []Doc
	Queries []Query // only queries with at least one qrels line, file order
	Qrels   Qrels
}

var (
	// ErrMalformed is wrapped by loaders for a line or field that cannot be
	// parsed; the message names the file and line.
	ErrMalformed = errors.New("beir: malformed input")
	// ErrNoQueries means a dataset has no query with relevance judgments.
	ErrNoQueries = errors.New("beir: no judged queries")
)

// ReadCorpus reads dir/corpus.jsonl in file order.
func ReadCorpus(dir string) ([]Doc, error) { return ReadCorpusN(dir, -1) }

// ReadCorpusN reads the first n documents of dir/corpus.jsonl in file order
// (every document when n < 0 or the file holds fewer), parsing no line past
// the n-th: tests and benchmarks that need a few real texts.
func ReadCorpusN(dir string, n int) ([]Doc, error) {
	var docs []Doc
	err := readJSONL(filepath.Join(dir, "corpus.jsonl"), n, func(line int, raw []byte) error {
		d, err := parseRecord(raw)
		docs = append(docs, d)
		return err
	})
	return docs, err
}

// ReadQueries reads every query of dir/queries.jsonl (judged or not) in
// file order.
func ReadQueries(dir string) ([]Query, error) { return ReadQueriesN(dir, -1) }

// ReadQueriesN reads the first n queries of dir/queries.jsonl (judged or
// not) in file order, every query when n < 0 or the file holds fewer.
func ReadQueriesN(dir string, n int) ([]Query, error) {
	var qs []Query
	err := readJSONL(filepath.Join(dir, "queries.jsonl"), n, func(line int, raw []byte) error {
		q, err := parseRecord(raw)
		qs = append(qs, Query{ID: q.ID, Text: q.Text})
		return err
	})
	return qs, err
}

// Load reads dir/corpus.jsonl, dir/queries.jsonl and dir/qrels/test.tsv.
// Queries without judgments are dropped; judgments for unknown queries are
// kept in Qrels but have no Query. Dataset.Name is the folder's base name.
func Load(dir string) (*Dataset, error) {
	ds := &Dataset{Name: filepath.Base(filepath.Clean(dir))}
	var err error
	if ds.Qrels, err = loadQrels(filepath.Join(dir, "qrels", "test.tsv")); err != nil {
		return nil, err
	}
	if ds.Docs, err = ReadCorpus(dir); err != nil {
		return nil, err
	}
	if err = readJSONL(filepath.Join(dir, "queries.jsonl"), -1, func(line int, raw []byte) error {
		q, err := parseRecord(raw)
		if _, judged := ds.Qrels[q.ID]; judged && err == nil {
			ds.Queries = append(ds.Queries, Query{ID: q.ID, Text: q.Text})
		}
		return err
	}); err != nil {
		return nil, err
	}
	if len(ds.Queries) == 0 {
		return nil, fmt.Errorf("load %s: %w", dir, ErrNoQueries)
	}
	return ds, nil
}

// parseRecord decodes one corpus or queries line (a query has no title).
func parseRecord(raw []byte) (Doc, error) {
	var r struct {
		ID    json.RawMessage `json:"_id"`
		Title string          `json:"title"`
		Text  string          `json:"text"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		return Doc{}, err
	}
	id, err := parseID(r.ID)
	return Doc{ID: id, Title: r.Title, Text: r.Text}, err
}

// parseID accepts a JSON string or number (some BEIR exports write numeric
// ids) and returns its text; a missing or empty id is an error.
func parseID(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", fmt.Errorf("missing _id")
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		var n json.Number
		if nerr := json.Unmarshal(raw, &n); nerr != nil {
			return "", fmt.Errorf("_id %s is neither a string nor a number", raw)
		}
		s = n.String()
	}
	if s == "" {
		return "", fmt.Errorf("empty _id")
	}
	return s, nil
}

// readJSONL calls fn for each non-blank line, for the first limit of them
// when limit ≥ 0; errors carry file and line.
func readJSONL(path string, limit int, fn func(line int, raw []byte) error) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("open %s: %w", path, err)
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 1<<20)
	for line, records := 1, 0; limit < 0 || records < limit; line++ {
		raw, err := r.ReadBytes('\n')
		if len(strings.TrimSpace(string(raw))) > 0 {
			if ferr := fn(line, raw); ferr != nil {
				return fmt.Errorf("%s:%d: %w: %v", path, line, ErrMalformed, ferr)
			}
			records++
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read %s: %w", path, err)
		}
	}
	return nil
}

func loadQrels(path string) (Qrels, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	defer f.Close()
	q := make(Qrels)
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	line := 0
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		if text == "" {
			continue
		}
		fields := strings.Split(text, "\t")
		if line == 1 && len(fields) >= 3 && fields[2] == "score" {
			continue // header
		}
		if len(fields) != 3 {
			return nil, fmt.Errorf("%s:%d: %w: want 3 tab-separated fields, got %d", path, line, ErrMalformed, len(fields))
		}
		score, err := strconv.Atoi(strings.TrimSpace(fields[2]))
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w: score %q: %v", path, line, ErrMalformed, fields[2], err)
		}
		qid, did := strings.TrimSpace(fields[0]), strings.TrimSpace(fields[1])
		if qid == "" || did == "" {
			return nil, fmt.Errorf("%s:%d: %w: empty id", path, line, ErrMalformed)
		}
		m := q[qid]
		if m == nil {
			m = make(map[string]int)
			q[qid] = m
		}
		m[did] = score
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return q, nil
}

// QueryIDs returns the ids of the judged queries in sorted order.
func (ds *Dataset) QueryIDs() []string {
	ids := make([]string, len(ds.Queries))
	for i, q := range ds.Queries {
		ids[i] = q.ID
	}
	sort.Strings(ids)
	return ids
}

// Write writes docs, queries and qrels to dir in the layout Load
// reads (dir/corpus.jsonl, dir/queries.jsonl, dir/qrels/test.tsv),
// creating dir: small fixtures and subsets of a collection.
func Write(dir string, docs []Doc, queries []Query, qrels Qrels) error {
	if err := os.MkdirAll(filepath.Join(dir, "qrels"), 0o755); err != nil {
		return fmt.Errorf("write beir %s: %w", dir, err)
	}
	var corpus, qs, rel bytes.Buffer
	enc := json.NewEncoder(&corpus)
	for _, d := range docs {
		if err := enc.Encode(map[string]string{"_id": d.ID, "title": d.Title, "text": d.Text}); err != nil {
			return err
		}
	}
	enc = json.NewEncoder(&qs)
	for _, q := range queries {
		if err := enc.Encode(map[string]string{"_id": q.ID, "text": q.Text}); err != nil {
			return err
		}
	}
	rel.WriteString("query-id\tcorpus-id\tscore\n")
	qids := make([]string, 0, len(qrels))
	for q := range qrels {
		qids = append(qids, q)
	}
	sort.Strings(qids)
	for _, q := range qids {
		if strings.ContainsAny(q, "\t\n") {
			return fmt.Errorf("write beir: %w: query id %q", ErrMalformed, q)
		}
		dids := make([]string, 0, len(qrels[q]))
		for d := range qrels[q] {
			dids = append(dids, d)
		}
		sort.Strings(dids)
		for _, d := range dids {
			if strings.ContainsAny(d, "\t\n") {
				return fmt.Errorf("write beir: %w: document id %q", ErrMalformed, d)
			}
			fmt.Fprintf(&rel, "%s\t%s\t%d\n", q, d, qrels[q][d])
		}
	}
	for name, b := range map[string][]byte{"corpus.jsonl": corpus.Bytes(), "queries.jsonl": qs.Bytes(), "qrels/test.tsv": rel.Bytes()} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			return fmt.Errorf("write beir: %w", err)
		}
	}
	return nil
}
