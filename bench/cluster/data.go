package cluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/hybrank/hybrank/bench/eval"
)

// corpus is the dataset a run loads and searches, its objects and the map
// back from Weaviate's ids to the BEIR ids.
type corpus struct {
	ds *eval.Dataset
	// dir is a BEIR folder holding exactly ds (the dataset's own folder,
	// or a temporary one for a subset), for the engine.
	dir     string
	objects []Object
	docID   map[string]string // UUID → BEIR id
	// tmp is a temporary folder to remove ("" = none).
	tmp string
	// queryTerms is hybrank's analysis of each query text, joined by
	// spaces, and analyzer the analysis's version (analyze; empty
	// before).
	queryTerms map[string]string
	analyzer   string
}

// loadCorpus reads the dataset and cuts it to queries judged queries and
// docs documents (0 = all): the documents judged for the queries kept come
// first, then the corpus in file order. A cut dataset is written to a
// temporary BEIR folder (same base name), so the engine reads the same
// documents.
func loadCorpus(dir string, docs, queries int) (*corpus, error) {
	ds, err := eval.LoadBEIR(dir)
	if err != nil {
		return nil, err
	}
	c := &corpus{ds: ds, dir: dir}
	if cut := subset(ds, docs, queries); cut != ds {
		tmp, err := os.MkdirTemp("", "bench-cluster-")
		if err != nil {
			return nil, err
		}
		c.tmp, c.dir, c.ds = tmp, filepath.Join(tmp, ds.Name), cut
		qrels := eval.Qrels{}
		for _, q := range cut.Queries {
			qrels[q.ID] = cut.Qrels[q.ID]
		}
		if err := eval.WriteBEIR(c.dir, cut.Docs, cut.Queries, qrels); err != nil {
			os.RemoveAll(tmp)
			return nil, fmt.Errorf("cluster: write the cut dataset: %w", err)
		}
		if c.ds, err = eval.LoadBEIR(c.dir); err != nil {
			os.RemoveAll(tmp)
			return nil, err
		}
	}
	c.objects, c.docID = objects(c.ds)
	return c, nil
}

// close removes the temporary folder.
func (c *corpus) close() error {
	if c.tmp == "" {
		return nil
	}
	err := os.RemoveAll(c.tmp)
	c.tmp = ""
	return err
}

// subset returns ds cut to the first queries judged queries and docs
// documents (judged ones first), or ds itself when nothing is cut.
func subset(ds *eval.Dataset, docs, queries int) *eval.Dataset {
	qs := ds.Queries
	if queries > 0 && queries < len(qs) {
		qs = qs[:queries]
	}
	if len(qs) == len(ds.Queries) && (docs <= 0 || docs >= len(ds.Docs)) {
		return ds
	}
	judged := map[string]bool{}
	for _, q := range qs {
		for id := range ds.Qrels[q.ID] {
			judged[id] = true
		}
	}
	out := &eval.Dataset{Name: ds.Name, Queries: qs, Qrels: ds.Qrels}
	if docs <= 0 || docs >= len(ds.Docs) {
		out.Docs = ds.Docs
		return out
	}
	var rest []eval.Doc
	for _, d := range ds.Docs {
		if judged[d.ID] {
			out.Docs = append(out.Docs, d)
		} else if len(rest) < docs {
			rest = append(rest, d)
		}
	}
	if n := docs - len(out.Docs); n > 0 {
		out.Docs = append(out.Docs, rest[:min(n, len(rest))]...)
	}
	return out
}

// objects are the dataset's documents as Weaviate objects (ids derived
// from the dataset and document ids) and the map back to BEIR ids.
func objects(ds *eval.Dataset) ([]Object, map[string]string) {
	out := make([]Object, len(ds.Docs))
	back := make(map[string]string, len(ds.Docs))
	for i, d := range ds.Docs {
		id := uuid5(ds.Name + "/" + d.ID)
		out[i] = Object{ID: id, DocID: d.ID, Title: d.Title, Text: d.IndexText()}
		back[id] = d.ID
	}
	return out, back
}

// analyzeBatch is how many texts one /analyze request carries (the
// server's default max_inputs is 2048).
const analyzeBatch = 256

// analyze fills the objects' Terms and the queries' terms with hybrank's
// analysis, asked of the sidecar at base (its POST /analyze): what a
// client of Weaviate does to have BM25 rank by the engine's terms.
func (c *corpus) analyze(ctx context.Context, w *weaviate, base string) error {
	docs := make([]string, len(c.objects))
	for i, o := range c.objects {
		docs[i] = o.Text
	}
	terms, version, err := w.analyze(ctx, base, docs, "document")
	if err != nil {
		return err
	}
	for i := range c.objects {
		c.objects[i].Terms = terms[i]
	}
	qs := make([]string, len(c.ds.Queries))
	for i, q := range c.ds.Queries {
		qs[i] = q.Text
	}
	qterms, _, err := w.analyze(ctx, base, qs, "query")
	if err != nil {
		return err
	}
	c.queryTerms = make(map[string]string, len(qs))
	for i, q := range qs {
		c.queryTerms[q] = qterms[i]
	}
	c.analyzer = version
	return nil
}

// terms is hybrank's analysis of query text q (analyze), joined by
// spaces.
func (c *corpus) terms(q string) string { return c.queryTerms[q] }
