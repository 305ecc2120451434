package cluster

import (
	"bytes"
	"context"
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Weaviate's REST and GraphQL API as the driver uses it, over plain
// net/http: collections, batch import, hybrid and BM25 search, object reads
// from one replica, node status and meta. Safe for concurrent use (the
// http.Client is).
type weaviate struct {
	hc *http.Client
}

// ErrWeaviate is wrapped by every error Weaviate answered (an HTTP status
// other than 2xx, a GraphQL error, an object a batch did not take), as
// opposed to a transport error (no answer).
var ErrWeaviate = errors.New("weaviate answered an error")

// apiError is Weaviate's error body ({"error": [{"message": …}]}).
type apiError struct {
	Error []struct {
		Message string `json:"message"`
	} `json:"error"`
}

func (e apiError) text() string {
	var ms []string
	for _, m := range e.Error {
		ms = append(ms, m.Message)
	}
	return strings.Join(ms, "; ")
}

// do sends method path (relative to base) with body in (JSON, nil for none)
// and decodes a 2xx answer's JSON into out (nil: discarded). A non-2xx
// answer is an error wrapping ErrWeaviate with its status and message;
// status is the HTTP status, 0 without an answer.
func (w *weaviate) do(ctx context.Context, method, base, path string, in, out any) (status int, err error) {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return 0, fmt.Errorf("%s %s: encode: %w", method, path, err)
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, base+path, body)
	if err != nil {
		return 0, err
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := w.hc.Do(req)
	if err != nil {
		return 0, fmt.Errorf("%s %s%s: %w", method, base, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return resp.StatusCode, fmt.Errorf("%s %s%s: read answer: %w", method, base, path, err)
	}
	if resp.StatusCode/100 != 2 {
		var ae apiError
		msg := strings.TrimSpace(string(data))
		if json.Unmarshal(data, &ae) == nil && len(ae.Error) > 0 {
			msg = ae.text()
		}
		return resp.StatusCode, fmt.Errorf("%w: %s %s%s: %d %s", ErrWeaviate, method, base, path, resp.StatusCode, clip(msg, 300))
	}
	if out != nil && len(data) > 0 {
		if err := json.Unmarshal(data, out); err != nil {
			return resp.StatusCode, fmt.Errorf("%s %s%s: decode answer: %w (%s)", method, base, path, err, clip(string(data), 200))
		}
	}
	return resp.StatusCode, nil
}

// clip shortens s to n bytes for an error message.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// Collection is the shape of the collection the driver creates: one
// searchable, vectorized and reranked text property holding the
// document's IndexText ("title text", as hybrank's engine sees a
// document), the title and the BEIR id stored beside it.
type Collection struct {
	// Name is the Weaviate class name (an upper-case first letter).
	Name string `json:"name"`
	// Shards and Replicas are the sharding and replication factors.
	Shards   int `json:"shards"`
	Replicas int `json:"replicas"`
	// AsyncReplication turns on Weaviate's async replication (the
	// background repair of replicas that missed writes).
	AsyncReplication bool `json:"async_replication"`
	// Rerank configures the reranker-transformers module on the class.
	Rerank bool `json:"rerank"`
	// Analyzed adds the property propTerms: hybrank's analysis of the
	// text (the sidecar's /analyze), its terms joined by spaces, of
	// tokenization "whitespace", so that BM25F ranks by the terms the
	// engine indexes (stemmed) rather than by Weaviate's word tokens.
	Analyzed bool `json:"analyzed"`
}

// Property names of the collection.
const (
	propText  = "text"  // IndexText: searched, vectorized, reranked
	propTitle = "title" // stored only
	propDocID = "docId" // stored only: the BEIR id
	propTerms = "terms" // hybrank's analysis of text (Collection.Analyzed): BM25 only
)

// classJSON is the collection's definition for POST /v1/schema.
func (c Collection) classJSON() map[string]any {
	skip := map[string]any{"text2vec-transformers": map[string]any{"skip": true, "vectorizePropertyName": false}}
	f := false
	modules := map[string]any{
		"text2vec-transformers": map[string]any{"vectorizeClassName": false, "poolingStrategy": "masked_mean"},
	}
	if c.Rerank {
		modules["reranker-transformers"] = map[string]any{}
	}
	props := []map[string]any{
		{"name": propText, "dataType": []string{"text"}, "tokenization": "word",
			"moduleConfig": map[string]any{"text2vec-transformers": map[string]any{"skip": false, "vectorizePropertyName": false}}},
		{"name": propTitle, "dataType": []string{"text"}, "indexSearchable": &f, "indexFilterable": &f, "moduleConfig": skip},
		{"name": propDocID, "dataType": []string{"text"}, "tokenization": "field", "indexSearchable": &f, "moduleConfig": skip},
	}
	if c.Analyzed {
		// Whitespace tokenization keeps the terms as they are; Weaviate
		// applies its stopwords to "word" properties only, and the
		// analysis has removed the engine's.
		props = append(props, map[string]any{"name": propTerms, "dataType": []string{"text"}, "tokenization": "whitespace",
			"indexFilterable": &f, "moduleConfig": skip})
	}
	return map[string]any{
		"class":             c.Name,
		"description":       "bench cluster: a BEIR corpus",
		"vectorizer":        "text2vec-transformers",
		"moduleConfig":      modules,
		"properties":        props,
		"shardingConfig":    map[string]any{"desiredCount": c.Shards},
		"replicationConfig": map[string]any{"factor": c.Replicas, "asyncEnabled": c.AsyncReplication},
	}
}

// createCollection drops the class if it exists and creates it afresh, so
// every run measures an empty collection.
func (w *weaviate) createCollection(ctx context.Context, base string, c Collection) error {
	if err := w.dropCollection(ctx, base, c.Name); err != nil {
		return err
	}
	if _, err := w.do(ctx, http.MethodPost, base, "/v1/schema", c.classJSON(), nil); err != nil {
		return fmt.Errorf("create collection %s: %w", c.Name, err)
	}
	return nil
}

// dropCollection deletes the class; one that does not exist is fine.
func (w *weaviate) dropCollection(ctx context.Context, base, name string) error {
	status, err := w.do(ctx, http.MethodDelete, base, "/v1/schema/"+url.PathEscape(name), nil, nil)
	if err != nil && status != http.StatusNotFound {
		return fmt.Errorf("drop collection %s: %w", name, err)
	}
	return nil
}

// ClassSettings is what Weaviate reports of a class's lexical and
// replication settings (GET /v1/schema/NAME), for the report's BM25
// comparison.
type ClassSettings struct {
	BM25      BM25Settings     `json:"bm25"`
	Stopwords StopwordSettings `json:"stopwords"`
	// Tokenization is the text property's tokenization ("word").
	Tokenization string `json:"tokenization"`
	Shards       int    `json:"shards"`
	Replicas     int    `json:"replicas"`
	Async        bool   `json:"async_replication"`
	Distance     string `json:"distance"`
}

// BM25Settings are a class's BM25 parameters, as Weaviate's schema has them.
type BM25Settings struct {
	K1 float64 `json:"k1"`
	B  float64 `json:"b"`
}

// StopwordSettings are a class's stopwords, as Weaviate's schema has them.
type StopwordSettings struct {
	Preset    string   `json:"preset"`
	Additions []string `json:"additions"`
	Removals  []string `json:"removals"`
}

// classSettings reads the class's settings back as Weaviate holds them.
func (w *weaviate) classSettings(ctx context.Context, base, name string) (ClassSettings, error) {
	var cls struct {
		InvertedIndexConfig struct {
			BM25      BM25Settings     `json:"bm25"`
			Stopwords StopwordSettings `json:"stopwords"`
		} `json:"invertedIndexConfig"`
		Properties []struct {
			Name         string `json:"name"`
			Tokenization string `json:"tokenization"`
		} `json:"properties"`
		ShardingConfig struct {
			DesiredCount int `json:"desiredCount"`
		} `json:"shardingConfig"`
		ReplicationConfig struct {
			Factor       int  `json:"factor"`
			AsyncEnabled bool `json:"asyncEnabled"`
		} `json:"replicationConfig"`
		VectorIndexConfig struct {
			Distance string `json:"distance"`
		} `json:"vectorIndexConfig"`
	}
	if _, err := w.do(ctx, http.MethodGet, base, "/v1/schema/"+url.PathEscape(name), nil, &cls); err != nil {
		return ClassSettings{}, err
	}
	var s ClassSettings
	s.BM25 = cls.InvertedIndexConfig.BM25
	s.Stopwords = cls.InvertedIndexConfig.Stopwords
	for _, p := range cls.Properties {
		if p.Name == propText {
			s.Tokenization = p.Tokenization
		}
	}
	s.Shards, s.Replicas = cls.ShardingConfig.DesiredCount, cls.ReplicationConfig.Factor
	s.Async, s.Distance = cls.ReplicationConfig.AsyncEnabled, cls.VectorIndexConfig.Distance
	return s, nil
}

// Object is one document as imported.
type Object struct {
	ID    string // UUID
	DocID string // BEIR id
	Title string
	Text  string // IndexText
	// Terms is hybrank's analysis of Text, joined by spaces (stored in
	// propTerms when not empty).
	Terms string
}

// batchResult is one object's entry in a batch answer.
type batchResult struct {
	ID     string `json:"id"`
	Result *struct {
		Status string    `json:"status"`
		Errors *apiError `json:"errors"`
	} `json:"result"`
}

// BatchOutcome is what a batch import answered: the ids Weaviate
// acknowledged and, per refused object, its message.
type BatchOutcome struct {
	Acked  []string
	Failed map[string]string
}

// importBatch sends objs to POST /v1/batch/objects at consistency level
// cl. An answer other than 2xx, or no answer, fails every object (err set);
// otherwise each object is acknowledged unless its result carries errors.
func (w *weaviate) importBatch(ctx context.Context, base, class, cl string, objs []Object) (BatchOutcome, error) {
	type obj struct {
		Class      string            `json:"class"`
		ID         string            `json:"id"`
		Properties map[string]string `json:"properties"`
	}
	body := struct {
		Objects []obj `json:"objects"`
	}{make([]obj, len(objs))}
	for i, o := range objs {
		body.Objects[i] = obj{Class: class, ID: o.ID, Properties: map[string]string{propText: o.Text, propTitle: o.Title, propDocID: o.DocID}}
		if o.Terms != "" {
			body.Objects[i].Properties[propTerms] = o.Terms
		}
	}
	var ans []batchResult
	out := BatchOutcome{Failed: map[string]string{}}
	_, err := w.do(ctx, http.MethodPost, base, "/v1/batch/objects?consistency_level="+cl, body, &ans)
	if err != nil {
		for _, o := range objs {
			out.Failed[o.ID] = err.Error()
		}
		return out, err
	}
	seen := make(map[string]bool, len(ans))
	for _, r := range ans {
		id := strings.ToLower(r.ID)
		seen[id] = true
		if r.Result != nil && r.Result.Errors != nil && len(r.Result.Errors.Error) > 0 {
			out.Failed[id] = r.Result.Errors.text()
			continue
		}
		if r.Result != nil && r.Result.Status == "FAILED" {
			out.Failed[id] = "status FAILED"
			continue
		}
		out.Acked = append(out.Acked, id)
	}
	for _, o := range objs {
		if !seen[o.ID] {
			out.Failed[o.ID] = "missing from the batch answer"
		}
	}
	return out, nil
}

// Search is one GraphQL Get of the collection: BM25 alone, or hybrid
// (Alpha 0 = BM25 only, 1 = vector only) with Fusion "rankedFusion" or
// "relativeScoreFusion", optionally reranked by the reranker module on
// RerankProperty.
type Search struct {
	Class  string
	Query  string
	BM25   bool // bm25: {query} instead of hybrid
	Alpha  float64
	Fusion string
	Limit  int
	// Rerank asks for _additional { rerank(property, query) { score } }:
	// Weaviate reranks the Limit hits and returns them in rerank order.
	Rerank bool
	// Consistency is the read's consistency level (ONE, QUORUM, ALL).
	Consistency string
	// Analyzed searches the collection's propTerms (Collection.Analyzed)
	// with Terms, hybrank's analysis of Query joined by spaces; the
	// reranker still scores Query against the text, and a hybrid search's
	// vector side is Vector, Query's own vector (search asks the node's
	// sidecar for it when nil), not one Weaviate would make of the terms.
	//
	// Vector is given instead of searches: [{nearText: …}] because
	// v1.35.2 computes the Get's _additional properties on a nearText
	// subsearch's candidates too (explorer_hybrid.go nearTextSubSearch):
	// a reranked search then reranks the 100 candidates besides its hits,
	// 6 rerank requests instead of 2 and about 5× the time.
	Analyzed bool
	Terms    string
	Vector   []float32
}

// gqlString quotes s as a GraphQL string literal (JSON's escapes are
// GraphQL's: \" \\ \n \uXXXX …).
func gqlString(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return strings.TrimSuffix(b.String(), "\n")
}

// GraphQL is the query text of s.
func (s Search) GraphQL() string {
	var arg string
	q, prop, vec := s.Query, propText, ""
	if s.Analyzed {
		q, prop = s.Terms, propTerms
	}
	if len(s.Vector) > 0 {
		vs := make([]string, len(s.Vector))
		for i, x := range s.Vector {
			vs[i] = strconv.FormatFloat(float64(x), 'g', -1, 32)
		}
		vec = ", vector: [" + strings.Join(vs, ", ") + "]"
	}
	if s.BM25 {
		arg = fmt.Sprintf("bm25: {query: %s, properties: [%q]}", gqlString(q), prop)
	} else {
		arg = fmt.Sprintf("hybrid: {query: %s, alpha: %s, fusionType: %s, properties: [%q]%s}", gqlString(q),
			strconv.FormatFloat(s.Alpha, 'g', -1, 64), s.Fusion, prop, vec)
	}
	add := "id score"
	if s.Rerank {
		add += fmt.Sprintf(" rerank(property: %q, query: %s) { score }", propText, gqlString(s.Query))
	}
	cl := ""
	if s.Consistency != "" {
		cl = ", consistencyLevel: " + s.Consistency
	}
	return fmt.Sprintf("{ Get { %s(%s, limit: %d%s) { _additional { %s } } } }", s.Class, arg, s.Limit, cl, add)
}

// Hit is one search result: its UUID, the fused (or BM25) score and,
// reranked, the rerank score.
type Hit struct {
	ID     string
	Score  float64
	Rerank float64
}

// gqlAnswer is a GraphQL answer of a Get.
type gqlAnswer struct {
	Data struct {
		Get map[string][]struct {
			Additional struct {
				ID     string          `json:"id"`
				Score  json.RawMessage `json:"score"`
				Rerank []struct {
					Score *float64 `json:"score"`
				} `json:"rerank"`
			} `json:"_additional"`
		} `json:"Get"`
	} `json:"data"`
	Errors []struct {
		Message string `json:"message"`
	} `json:"errors"`
}

// search runs s against node: the hits in Weaviate's order. An analyzed
// hybrid search without its Vector first asks the node's sidecar for the
// query's (task_type query), as a client of such a collection does, and
// within the search's time; a failure there is a "vectorize" error, as
// Weaviate reports its own. A GraphQL error (Weaviate answers those with
// status 200) is an error wrapping ErrWeaviate with the messages.
func (w *weaviate) search(ctx context.Context, node Endpoint, s Search) ([]Hit, error) {
	if s.Analyzed && !s.BM25 && s.Vector == nil {
		v, err := w.embed(ctx, node.Inference, s.Query, "query")
		if err != nil {
			return nil, fmt.Errorf("cluster: vectorize the query at %s: %w", node.Inference, err)
		}
		s.Vector = v
	}
	var ans gqlAnswer
	if _, err := w.do(ctx, http.MethodPost, node.HTTP, "/v1/graphql", map[string]string{"query": s.GraphQL()}, &ans); err != nil {
		return nil, err
	}
	return ans.hits(s)
}

// hits decodes the answer of s.
func (a gqlAnswer) hits(s Search) ([]Hit, error) {
	if len(a.Errors) > 0 {
		var ms []string
		for _, e := range a.Errors {
			ms = append(ms, e.Message)
		}
		return nil, fmt.Errorf("%w: graphql: %s", ErrWeaviate, clip(strings.Join(ms, "; "), 300))
	}
	rows, ok := a.Data.Get[s.Class]
	if !ok {
		return nil, fmt.Errorf("%w: graphql: no Get.%s in the answer", ErrWeaviate, s.Class)
	}
	out := make([]Hit, len(rows))
	for i, r := range rows {
		h := Hit{ID: strings.ToLower(r.Additional.ID)}
		// Weaviate writes _additional.score as a string ("0.5").
		var v any
		if len(r.Additional.Score) > 0 && json.Unmarshal(r.Additional.Score, &v) == nil {
			switch x := v.(type) {
			case string:
				h.Score, _ = strconv.ParseFloat(x, 64)
			case float64:
				h.Score = x
			}
		}
		if s.Rerank {
			if len(r.Additional.Rerank) == 0 || r.Additional.Rerank[0].Score == nil {
				return nil, fmt.Errorf("%w: graphql: hit %d has no rerank score", ErrWeaviate, i)
			}
			h.Rerank = *r.Additional.Rerank[0].Score
		}
		out[i] = h
	}
	return out, nil
}

// analyze asks the hybrank server at base for the terms of texts
// (POST /analyze, input_type kind), analyzeBatch a request, and returns
// each text's terms joined by spaces and the analysis's version.
func (w *weaviate) analyze(ctx context.Context, base string, texts []string, kind string) ([]string, string, error) {
	out := make([]string, 0, len(texts))
	version := ""
	for from := 0; from < len(texts); from += analyzeBatch {
		batch := texts[from:min(from+analyzeBatch, len(texts))]
		var ans struct {
			Analyzer string     `json:"analyzer"`
			Terms    [][]string `json:"terms"`
		}
		if _, err := w.do(ctx, http.MethodPost, base, "/analyze", map[string]any{"inputs": batch, "input_type": kind}, &ans); err != nil {
			return nil, "", fmt.Errorf("cluster: hybrank's analysis: %w", err)
		}
		if len(ans.Terms) != len(batch) {
			return nil, "", fmt.Errorf("cluster: hybrank's analysis: %d term lists for %d texts", len(ans.Terms), len(batch))
		}
		for _, t := range ans.Terms {
			out = append(out, strings.Join(t, " "))
		}
		version = ans.Analyzer
	}
	return out, version, nil
}

// count is the number of objects of the class (Aggregate meta count; it
// takes no consistency level: each shard counts on one replica).
func (w *weaviate) count(ctx context.Context, base, class string) (int, error) {
	q := fmt.Sprintf("{ Aggregate { %s { meta { count } } } }", class)
	var ans struct {
		Data struct {
			Aggregate map[string][]struct {
				Meta struct {
					Count int `json:"count"`
				} `json:"meta"`
			} `json:"Aggregate"`
		} `json:"data"`
		Errors []struct {
			Message string `json:"message"`
		} `json:"errors"`
	}
	if _, err := w.do(ctx, http.MethodPost, base, "/v1/graphql", map[string]string{"query": q}, &ans); err != nil {
		return 0, err
	}
	if len(ans.Errors) > 0 {
		return 0, fmt.Errorf("%w: aggregate: %s", ErrWeaviate, ans.Errors[0].Message)
	}
	rows := ans.Data.Aggregate[class]
	if len(rows) != 1 {
		return 0, fmt.Errorf("%w: aggregate: %d rows for %s", ErrWeaviate, len(rows), class)
	}
	return rows[0].Meta.Count, nil
}

// onReplica reports whether the object is stored on node (GET with
// node_name, which the node named answers from its own shard; Weaviate
// refuses a consistency_level beside it). A 404 is false with no error.
func (w *weaviate) onReplica(ctx context.Context, base, class, id, node string) (bool, error) {
	path := fmt.Sprintf("/v1/objects/%s/%s?node_name=%s", url.PathEscape(class), url.PathEscape(id), url.QueryEscape(node))
	status, err := w.do(ctx, http.MethodGet, base, path, nil, nil)
	if status == http.StatusNotFound {
		return false, nil
	}
	return err == nil, err
}

// vector is the object's stored vector.
func (w *weaviate) vector(ctx context.Context, base, class, id string) ([]float32, error) {
	var o struct {
		Vector []float32 `json:"vector"`
	}
	path := fmt.Sprintf("/v1/objects/%s/%s?include=vector", url.PathEscape(class), url.PathEscape(id))
	if _, err := w.do(ctx, http.MethodGet, base, path, nil, &o); err != nil {
		return nil, err
	}
	if len(o.Vector) == 0 {
		return nil, fmt.Errorf("%w: object %s has no vector", ErrWeaviate, id)
	}
	return o.Vector, nil
}

// NodeStatus is one node of GET /v1/nodes?output=verbose: its name,
// status, version and, per shard of the class asked for, the objects it
// holds.
type NodeStatus struct {
	Name    string         `json:"name"`
	Status  string         `json:"status"`
	Version string         `json:"version"`
	GitHash string         `json:"gitHash"`
	Shards  map[string]int `json:"shards"` // shard name → object count
}

// nodes reads the cluster's nodes as the node at base sees them, with the
// shards of class.
func (w *weaviate) nodes(ctx context.Context, base, class string) ([]NodeStatus, error) {
	var ans struct {
		Nodes []struct {
			Name    string `json:"name"`
			Status  string `json:"status"`
			Version string `json:"version"`
			GitHash string `json:"gitHash"`
			Shards  []struct {
				Name        string `json:"name"`
				Class       string `json:"class"`
				ObjectCount int    `json:"objectCount"`
			} `json:"shards"`
		} `json:"nodes"`
	}
	path := "/v1/nodes?output=verbose"
	if class != "" {
		path = "/v1/nodes/" + url.PathEscape(class) + "?output=verbose"
	}
	if _, err := w.do(ctx, http.MethodGet, base, path, nil, &ans); err != nil {
		return nil, err
	}
	out := make([]NodeStatus, len(ans.Nodes))
	for i, n := range ans.Nodes {
		out[i] = NodeStatus{Name: n.Name, Status: n.Status, Version: n.Version, GitHash: n.GitHash, Shards: map[string]int{}}
		for _, s := range n.Shards {
			if class == "" || s.Class == class {
				out[i].Shards[s.Name] = s.ObjectCount
			}
		}
	}
	return out, nil
}

// meta is GET /v1/meta: Weaviate's version and its modules' meta (the
// inference containers' /meta answers among them).
func (w *weaviate) meta(ctx context.Context, base string) (version string, modules map[string]any, err error) {
	var m struct {
		Version string         `json:"version"`
		Modules map[string]any `json:"modules"`
	}
	if _, err := w.do(ctx, http.MethodGet, base, "/v1/meta", nil, &m); err != nil {
		return "", nil, err
	}
	return m.Version, m.Modules, nil
}

// ready reports whether the node at base answers /v1/.well-known/ready
// with 2xx within timeout.
func (w *weaviate) ready(ctx context.Context, base string, timeout time.Duration) bool {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	_, err := w.do(ctx, http.MethodGet, base, "/v1/.well-known/ready", nil, nil)
	return err == nil
}

// uuidNamespaceDNS is RFC 4122's DNS namespace, as the Weaviate clients'
// generate_uuid5 uses it.
var uuidNamespaceDNS = [16]byte{0x6b, 0xa7, 0xb8, 0x10, 0x9d, 0xad, 0x11, 0xd1, 0x80, 0xb4, 0x00, 0xc0, 0x4f, 0xd4, 0x30, 0xc8}

// uuid5 is the name-based (SHA-1) UUID of name in the DNS namespace,
// lower-case and hyphenated as Weaviate writes ids: a document keeps its
// id across runs, so a re-import overwrites it.
func uuid5(name string) string {
	h := sha1.New()
	h.Write(uuidNamespaceDNS[:])
	h.Write([]byte(name))
	var u [16]byte
	copy(u[:], h.Sum(nil))
	u[6] = u[6]&0x0f | 0x50
	u[8] = u[8]&0x3f | 0x80
	s := hex.EncodeToString(u[:])
	return s[:8] + "-" + s[8:12] + "-" + s[12:16] + "-" + s[16:20] + "-" + s[20:]
}
