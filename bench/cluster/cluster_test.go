package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/hybrank/hybrank/engine"
	"math"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hybrank/hybrank/bench/eval"
	"github.com/hybrank/hybrank/bench/internal/configtest"
	"github.com/hybrank/hybrank/bench/report"
)

func TestUUID5(t *testing.T) {
	// Python: uuid.uuid5(uuid.NAMESPACE_DNS, "python.org").
	if got, want := uuid5("python.org"), "886313e1-3b8a-5372-9b90-0c9aee199e5d"; got != want {
		t.Fatalf("uuid5 = %s, want %s", got, want)
	}
}

func TestGraphQL(t *testing.T) {
	q := "say \"hi\"\\ now\nok <b> é"
	tests := []struct {
		name string
		s    Search
		want []string
	}{
		{"bm25", Search{Class: "C", Query: q, BM25: true, Limit: 100, Consistency: "QUORUM"},
			[]string{`{ Get { C(bm25: {query: `, `, properties: ["text"]}, limit: 100, consistencyLevel: QUORUM) { _additional { id score } } } }`}},
		{"hybrid", Search{Class: "C", Query: q, Alpha: 0.5, Fusion: "relativeScoreFusion", Limit: 10},
			[]string{`C(hybrid: {query: `, `alpha: 0.5, fusionType: relativeScoreFusion, properties: ["text"]}, limit: 10)`}},
		{"rerank", Search{Class: "C", Query: q, Alpha: 0.7, Fusion: "rankedFusion", Limit: 20, Rerank: true, Consistency: "ONE"},
			[]string{`_additional { id score rerank(property: "text", query: `, `) { score } }`, "consistencyLevel: ONE"}},
		// On hybrank's terms: BM25 reads the terms property with the
		// query's terms; the vector side and the reranker read the query.
		{"analyzed bm25", Search{Class: "C", Query: q, Terms: "cat run", Analyzed: true, BM25: true, Limit: 5},
			[]string{`C(bm25: {query: "cat run", properties: ["terms"]}, limit: 5)`}},
		{"analyzed rerank", Search{Class: "C", Query: q, Terms: "cat run", Analyzed: true, Alpha: 0.5, Fusion: "relativeScoreFusion", Limit: 20, Rerank: true,
			Vector: []float32{0.5, -0.25, 1e-7}},
			[]string{`C(hybrid: {query: "cat run", alpha: 0.5, fusionType: relativeScoreFusion, properties: ["terms"], vector: [0.5, -0.25, 1e-07]}, limit: 20)`,
				`rerank(property: "text", query: `}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := tt.s.GraphQL()
			for _, w := range tt.want {
				if !strings.Contains(g, w) {
					t.Errorf("%s\nlacks %s", g, w)
				}
			}
			// Every string literal but the terms decodes back to the
			// query.
			for _, m := range reString.FindAllString(g, -1) {
				var back string
				if err := json.Unmarshal([]byte(m), &back); err != nil || back != q && back != tt.s.Terms && !slices.Contains([]string{"text", "terms"}, back) {
					t.Errorf("literal %s decodes to %q, %v", m, back, err)
				}
			}
			if strings.Contains(g, "\n") {
				t.Errorf("raw newline in %s", g)
			}
		})
	}
}

// reString matches a GraphQL string literal.
var reString = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)

func TestImportBatch(t *testing.T) {
	var got struct {
		Objects []struct {
			Class      string            `json:"class"`
			ID         string            `json:"id"`
			Properties map[string]string `json:"properties"`
		} `json:"objects"`
	}
	var cl string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/batch/objects" || r.Method != http.MethodPost {
			writeJSON(w, 404, apiErr("no"))
			return
		}
		cl = r.URL.Query().Get("consistency_level")
		json.NewDecoder(r.Body).Decode(&got)
		// Weaviate's answer: one entry per object, errors inside result.
		writeJSON(w, 200, []map[string]any{
			{"class": "C", "id": got.Objects[0].ID, "result": map[string]any{}},
			{"class": "C", "id": strings.ToUpper(got.Objects[1].ID), "result": map[string]any{"errors": map[string]any{"error": []map[string]string{{"message": "vectorize: boom"}}}}},
		})
	}))
	defer srv.Close()
	w := &weaviate{hc: srv.Client()}
	objs := []Object{{ID: uuid5("a"), DocID: "a", Title: "T", Text: "T a text"}, {ID: uuid5("b"), DocID: "b", Text: "b"}, {ID: uuid5("c"), DocID: "c", Text: "c"}}
	out, err := w.importBatch(context.Background(), srv.URL, "C", "QUORUM", objs)
	if err != nil {
		t.Fatal(err)
	}
	if cl != "QUORUM" || len(got.Objects) != 3 || got.Objects[0].Class != "C" || got.Objects[0].Properties["text"] != "T a text" ||
		got.Objects[0].Properties["title"] != "T" || got.Objects[0].Properties["docId"] != "a" {
		t.Fatalf("sent %s %+v", cl, got)
	}
	if len(out.Acked) != 1 || out.Acked[0] != objs[0].ID || out.Failed[objs[1].ID] != "vectorize: boom" || out.Failed[objs[2].ID] != "missing from the batch answer" {
		t.Fatalf("outcome %+v", out)
	}

	bad := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 500, apiErr("shard down"))
	}))
	defer bad.Close()
	out, err = w.importBatch(context.Background(), bad.URL, "C", "QUORUM", objs)
	if !errors.Is(err, ErrWeaviate) || !strings.Contains(err.Error(), "shard down") || len(out.Failed) != 3 || len(out.Acked) != 0 {
		t.Fatalf("500: %v, %+v", err, out)
	}
}

func TestSearchDecode(t *testing.T) {
	answer := `{"data":{"Get":{"C":[{"_additional":{"id":"AB","score":"0.75","rerank":[{"score":0.9}]}},{"_additional":{"id":"cd","score":0.5,"rerank":[{"score":0.1}]}}]}}}`
	var a gqlAnswer
	if err := json.Unmarshal([]byte(answer), &a); err != nil {
		t.Fatal(err)
	}
	hits, err := a.hits(Search{Class: "C", Rerank: true})
	if err != nil || len(hits) != 2 || hits[0] != (Hit{ID: "ab", Score: 0.75, Rerank: 0.9}) || hits[1].Score != 0.5 {
		t.Fatalf("%+v %v", hits, err)
	}
	if _, err := a.hits(Search{Class: "D"}); !errors.Is(err, ErrWeaviate) {
		t.Errorf("missing class: %v", err)
	}
	var e gqlAnswer
	json.Unmarshal([]byte(`{"data":{"Get":{"C":null}},"errors":[{"message":"vectorize: connection refused"}]}`), &e)
	if _, err := e.hits(Search{Class: "C"}); !errors.Is(err, ErrWeaviate) || !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("graphql error: %v", err)
	}
	var nr gqlAnswer
	json.Unmarshal([]byte(`{"data":{"Get":{"C":[{"_additional":{"id":"x","score":"1"}}]}}}`), &nr)
	if _, err := nr.hits(Search{Class: "C", Rerank: true}); err == nil {
		t.Error("a reranked hit without a rerank score passed")
	}
}

// TestSearchQueryVector: an analyzed hybrid search asks the node's own
// sidecar for the query's vector (task_type query) and gives it to
// Weaviate as hybrid's vector; BM25 and plain searches ask for none; a
// dead sidecar is a vectorize failure, counted as inference's.
func TestSearchQueryVector(t *testing.T) {
	var asked []string
	sidecar := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var b struct {
			Text   string `json:"text"`
			Config struct {
				TaskType string `json:"task_type"`
			} `json:"config"`
		}
		json.NewDecoder(r.Body).Decode(&b)
		asked = append(asked, r.URL.Path+" "+b.Config.TaskType+" "+b.Text)
		writeJSON(w, 200, map[string]any{"text": b.Text, "vector": []float32{0.25, -0.5}, "dim": 2})
	}))
	defer sidecar.Close()
	var sent []string
	node := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var q struct {
			Query string `json:"query"`
		}
		json.NewDecoder(r.Body).Decode(&q)
		sent = append(sent, q.Query)
		writeJSON(w, 200, map[string]any{"data": map[string]any{"Get": map[string]any{"C": []any{}}}})
	}))
	defer node.Close()
	w := &weaviate{hc: http.DefaultClient}
	ep := Endpoint{HTTP: node.URL, Sidecar: sidecar.URL, Inference: sidecar.URL + "/weaviate"}
	ctx := context.Background()
	hybrid := Search{Class: "C", Query: "Cats running", Terms: "cat run", Analyzed: true, Alpha: 0.5, Fusion: "relativeScoreFusion", Limit: 5}
	for _, s := range []Search{hybrid, {Class: "C", Query: "Cats running", Terms: "cat run", Analyzed: true, BM25: true, Limit: 5},
		{Class: "C", Query: "Cats running", Alpha: 0.5, Fusion: "relativeScoreFusion", Limit: 5}} {
		if _, err := w.search(ctx, ep, s); err != nil {
			t.Fatal(err)
		}
	}
	if want := []string{"/weaviate/vectors query Cats running"}; !slices.Equal(asked, want) {
		t.Errorf("sidecar asked %q, want %q", asked, want)
	}
	if len(sent) != 3 || !strings.Contains(sent[0], `properties: ["terms"], vector: [0.25, -0.5]}`) || strings.Contains(sent[1]+sent[2], "vector:") {
		t.Errorf("sent %q", sent)
	}
	sidecar.Close()
	_, err := w.search(ctx, ep, hybrid)
	if err == nil || !inferenceFailure(err.Error()) {
		t.Errorf("dead sidecar: %v, want a vectorize failure", err)
	}
}

// TestUnreranked: a reranked search whose sidecar ran out of its rerank
// budget (scores −1, −2, …) counts as degraded, in a search row and in a
// fault phase, and not as failed.
func TestUnreranked(t *testing.T) {
	if unreranked([]Hit{{Rerank: 0.9}, {Rerank: 0}}) || !unreranked([]Hit{{Rerank: 0.9}, {Rerank: -1}}) {
		t.Fatal("unreranked misreads the scores")
	}
	row := FaultRow{Faulty: 2}
	row.add(sample{node: 0, kind: kindRerank, ok: true, degraded: true})
	row.add(sample{node: 1, kind: kindRerank, ok: true})
	if row.Reranks != 2 || row.RerankDegraded != 1 || row.ReadFails != 0 {
		t.Fatalf("%+v", row)
	}
}

func TestParseRequestCounts(t *testing.T) {
	text := `# HELP hybrank_http_requests_total HTTP requests by route and status code.
# TYPE hybrank_http_requests_total counter
hybrank_http_requests_total{code="200",route="/weaviate/vectors"} 10
hybrank_http_requests_total{code="400",route="/weaviate/vectors"} 2
hybrank_http_requests_total{code="200",route="/weaviate/rerank"} 3e+00
hybrank_http_request_duration_seconds_bucket{code="200",route="/weaviate/rerank",le="0.1"} 99
hybrank_cache_hits_total{cache="rerank",model="hybrank-rerank"} 30
hybrank_cache_misses_total{cache="rerank",model="hybrank-rerank"} 20
hybrank_cache_shared_total{cache="rerank",model="hybrank-rerank"} 15
hybrank_cache_shared_total{cache="embed",model="hybrank-embed"} 7
`
	got := parseRequestCounts(text)
	if got["/weaviate/vectors"] != 12 || got["/weaviate/rerank"] != 3 || got[rerankHits] != 30 || got[rerankMisses] != 20 || got[rerankShared] != 15 || len(got) != 5 {
		t.Fatalf("%v", got)
	}
	if s := cacheShare(map[string]float64{}, got); s != "; of 50 pairs, 60% from the cache, 30% shared with a concurrent call, 10% scored by the model" {
		t.Errorf("cache share %q", s)
	}
	n := Endpoint{Sidecar: "http://h:1", Inference: "http://h:1/weaviate"}
	if r := route(n, "/rerank"); r != "/weaviate/rerank" {
		t.Errorf("route %q", r)
	}
	if d, ok := delta(map[string]float64{"/weaviate/rerank": 1}, got, "/weaviate/rerank").Value(); !ok || d != 2 {
		t.Errorf("delta %v", d)
	}
	if d := delta(nil, map[string]float64{}, "/weaviate/rerank"); d.String() != "–" {
		t.Errorf("delta without counters: %v", d)
	}
	if j, _ := json.Marshal(struct{ A, B Optional }{Some(1.5), Optional{}}); string(j) != `{"A":1.5,"B":null}` {
		t.Errorf("optional JSON %s", j)
	}
}

func TestFusedSetup(t *testing.T) {
	for _, tt := range []struct {
		name, typ string
		alpha     float64
	}{{"weighted-0.5", "relativeScoreFusion", 0.5}, {"weighted-0.3", "relativeScoreFusion", 0.3}, {"relative", "relativeScoreFusion", 0.5}, {"rrf", "rankedFusion", 0.5}} {
		f, err := fusedSetup(tt.name, "balanced")
		if err != nil || f.Type != tt.typ || f.Alpha != tt.alpha || f.Rerank.Name != tt.name+"+balanced" {
			t.Errorf("%s: %+v %v", tt.name, f, err)
		}
	}
	for _, bad := range []string{"bm25", "dense", "rrf+balanced", "rrf+mmr-0.7", "nope"} {
		if _, err := fusedSetup(bad, "balanced"); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}

func TestConfigValidate(t *testing.T) {
	base := DefaultConfig()
	configtest.Check(t, base,
		configtest.OK("default", func(c *Config) {}),
		configtest.OK("quick", func(c *Config) { *c = c.Quick() }),
		configtest.OK("rrf", func(c *Config) { c.Fused = "rrf" }),
		configtest.OK("weaviate's analysis", func(c *Config) { c.Analysis = AnalysisWeaviate }),
		configtest.Bad("analysis", func(c *Config) { c.Analysis = "lucene" }),
		configtest.OK("no engine, bad engine config ignored", func(c *Config) { c.Engine.Enabled, c.Engine.Threads = false, -1 }),
		configtest.Bad("no state", func(c *Config) { c.StatePath = "" }),
		configtest.Bad("no dataset", func(c *Config) { c.Dataset = "" }),
		configtest.Bad("lower-case class", func(c *Config) { c.Collection = "bench" }),
		configtest.Bad("consistency", func(c *Config) { c.Consistency = "TWO" }),
		configtest.Bad("no clients", func(c *Config) { c.Clients = nil }),
		configtest.Bad("zero clients", func(c *Config) { c.Clients = []int{1, 0} }),
		configtest.Bad("fusion", func(c *Config) { c.Fused = "bm25" }),
		configtest.Bad("profile", func(c *Config) { c.Profile = "embed" }),
		configtest.Bad("limit", func(c *Config) { c.Limit = 0 }),
		configtest.Bad("peer sample", func(c *Config) { c.Peer.Sample = 0 }),
		configtest.Bad("fault steady", func(c *Config) { c.Faults.Steady = 0 }),
		configtest.Bad("fault node", func(c *Config) { c.Faults.Node = -1 }),
		configtest.Bad("target", func(c *Config) { c.Targets.MaxRecovery = 0 }),
	)
	if got := (Config{Dataset: "/x/sci-fact_v2/"}).collection(); got != "BenchSciFactV2" {
		t.Errorf("collection %q", got)
	}
}

// testData writes a small BEIR dataset: 40 documents, 6 judged queries,
// each query's words in its two relevant documents.
func testData(t *testing.T) string {
	t.Helper()
	var docs []eval.Doc
	var qs []eval.Query
	qrels := eval.Qrels{}
	for i := range 40 {
		docs = append(docs, eval.Doc{ID: fmt.Sprintf("d%02d", i), Title: fmt.Sprintf("title %d", i), Text: fmt.Sprintf("filler text number%d", i)})
	}
	for q := range 6 {
		word := fmt.Sprintf("topic%d", q)
		for _, d := range []int{q * 5, q*5 + 1} {
			docs[d].Text += " " + word
		}
		qs = append(qs, eval.Query{ID: fmt.Sprintf("q%d", q), Text: word + " \"quoted\""})
		qrels[qs[q].ID] = map[string]int{docs[q*5].ID: 1, docs[q*5+1].ID: 2}
	}
	dir := filepath.Join(t.TempDir(), "tiny")
	if err := eval.WriteBEIR(dir, docs, qs, qrels); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestSubset(t *testing.T) {
	c, err := loadCorpus(testData(t), 5, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer c.close()
	// The judged documents of q0 and q1 (d00, d01, d05, d06) first, then
	// one more in corpus order.
	var ids []string
	for _, d := range c.ds.Docs {
		ids = append(ids, d.ID)
	}
	if got := strings.Join(ids, ","); got != "d00,d01,d05,d06,d02" || len(c.ds.Queries) != 2 || c.ds.Name != "tiny" {
		t.Fatalf("docs %s, %d queries, name %s", got, len(c.ds.Queries), c.ds.Name)
	}
	if c.docID[uuid5("tiny/d05")] != "d05" || c.objects[0].Text != "title 0 filler text number0 topic0" {
		t.Fatalf("objects %+v", c.objects[0])
	}
}

// fakeConfig is a run of every phase but the engine on the fake cluster,
// in about two seconds.
func fakeConfig(t *testing.T) Config {
	cfg := DefaultConfig()
	cfg.StatePath, cfg.Dataset = "unused", testData(t)
	cfg.Engine.Enabled = false
	cfg.Warmup, cfg.BatchSize, cfg.Limit, cfg.RerankLimit = 1, 7, 10, 5
	cfg.Peer.Docs, cfg.Peer.Queries, cfg.Peer.Sample, cfg.Peer.Direct, cfg.Peer.Ready = 20, 6, 5, 200*time.Millisecond, 2*time.Second
	cfg.Faults.Queriers, cfg.Faults.BatchSize = 4, 3
	cfg.Faults.Steady, cfg.Faults.Down, cfg.Faults.CatchUp = 250*time.Millisecond, 300*time.Millisecond, 5*time.Second
	return cfg
}

func TestRunOnFake(t *testing.T) {
	f := newFakeCluster(t, 3)
	cfg := fakeConfig(t)
	res, err := Run(context.Background(), cfg, f)
	if err != nil {
		t.Fatal(err)
	}
	// Load: every object acknowledged and counted.
	if im := res.Imports[0]; im.Acked != 40 || im.Failed != 0 || im.Counted != 40 || im.Batches != 6 {
		t.Errorf("load %+v", im)
	}
	// Searches: bm25 and dense at 1 client, the fusion and its rerank at
	// 1 and 16, on hybrank's terms; bm25 and the fusion on Weaviate's own
	// analysis at 1 client; each query's two relevant documents hold its
	// word.
	if len(res.Searches) != 8 {
		t.Fatalf("%d search rows", len(res.Searches))
	}
	for _, r := range res.Searches {
		if r.Queries != 6 || r.Errors != 0 || r.NDCG10 < 0.9 || r.Recall100 != 1 {
			t.Errorf("row %+v", r)
		}
		if _, plain := strings.CutSuffix(r.Setup, plainSuffix); plain != (r.Analysis == AnalysisWeaviate) {
			t.Errorf("row %s on analysis %q", r.Setup, r.Analysis)
		}
	}
	if res.Versions.Analyzer != engine.DefaultConfig().Analysis.Version() {
		t.Errorf("analyzer %q", res.Versions.Analyzer)
	}
	// Queries were spread over the nodes.
	for i := range 3 {
		if f.requests[fmt.Sprint(i)] < 10 {
			t.Errorf("node %d got %d requests", i, f.requests[fmt.Sprint(i)])
		}
	}
	p := res.Peer
	// Five rows for each of hybrank and the peer, three (direct) for
	// hybrank's int8 sidecar.
	if p == nil || p.Compared != 5 || p.MinCosine < 1-1e-9 || math.IsNaN(p.RerankRho) || len(p.Rows) != 13 {
		t.Fatalf("peer %+v", p)
	}
	if c, ok := p.Int8MinCosine.Value(); !ok || c < 1-1e-9 {
		t.Errorf("int8 cosine %v (the fake's int8 sidecar answers the same vectors)", p.Int8MinCosine)
	}
	for _, r := range p.Rows {
		if r.Requests == 0 || r.ReqPerS <= 0 || r.Errors != 0 {
			t.Errorf("peer row %+v", r)
		}
		if n, ok := r.Counted.Value(); r.What == "embed via import" && r.Sidecars == string(SidecarHybrank) && (!ok || n != 20) {
			t.Errorf("hybrank's counters: %+v", r)
		}
		if _, ok := r.Counted.Value(); r.Sidecars == string(SidecarPeer) && ok {
			t.Errorf("peer counted %+v", r)
		}
	}
	if f.peer[0] || f.peer[1] || f.peer[2] {
		t.Error("the peer was not swapped back")
	}
	fr := res.Faults
	if fr == nil {
		t.Fatal("no fault result")
	}
	byPhase := map[string]FaultRow{}
	for _, r := range fr.Rows {
		byPhase[r.Phase] = r
	}
	nd, sd := byPhase["node 1 down"], byPhase["sidecar 2 down"]
	// Only requests in flight at the killed node fail (a batch each of the
	// importers at most).
	if nd.Reads == 0 || nd.ReadFails != 0 || nd.WriteFails > cfg.Faults.Importers*cfg.Faults.BatchSize || nd.Acked == 0 {
		t.Errorf("node down %+v", nd)
	}
	if sd.FaultyReads == 0 || sd.FaultyFails == 0 || !strings.Contains(sd.FaultyError, "vectorize") /* the query's vector, from the dead sidecar */ || sd.ReadFails != 0 || sd.WriteFails == 0 {
		t.Errorf("sidecar down %+v", sd)
	}
	if fr.Missing != 0 || fr.Acked == 0 || fr.MissingAtEnd["node1"] != 0 && fr.CatchUpS <= 0 {
		t.Errorf("catch-up: %+v", fr)
	}
	if fr.NodeRecoveryS < 0 || fr.SidecarRecoveryS < 0 || len(fr.Timeline) < 10 {
		t.Errorf("recovery %v %v, timeline %v", fr.NodeRecoveryS, fr.SidecarRecoveryS, fr.Timeline)
	}
	speed := 0
	for _, c := range res.Checks {
		if strings.Contains(c.Name, "req/s ÷ peer") {
			speed++ // timing on a loaded test machine: not checked here
			continue
		}
		if !c.Passed() {
			t.Errorf("check failed on the fake: %s", c)
		}
	}
	if speed != 8 { // 5 measurements of hybrank, 3 of its int8 sidecar
		t.Errorf("%d peer speed checks, want 8", speed)
	}
	rep := Report(cfg, res, "bench cluster --test")
	var b strings.Builder
	for _, n := range rep.Notes {
		b.WriteString(n)
	}
	for _, want := range []string{"Fault timeline", "| phase |", "Peer comparison", "BM25F", "\"timeline\""} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("report lacks %q", want)
		}
	}
	if _, err := report.Write(t.TempDir(), "cluster", rep); err != nil {
		t.Fatal(err)
	}
}

// TestRunReportsDeadNode: a node that does not answer ready fails the run
// at once, naming make cluster.
func TestRunReportsDeadNode(t *testing.T) {
	f := newFakeCluster(t, 3)
	f.KillNode(2)
	_, err := Run(context.Background(), fakeConfig(t), f)
	if err == nil || !strings.Contains(err.Error(), "make cluster") {
		t.Fatalf("err %v", err)
	}
}

func TestMissingState(t *testing.T) {
	cfg := fakeConfig(t)
	cfg.StatePath = filepath.Join(t.TempDir(), "cluster.json")
	_, err := Run(context.Background(), cfg, nil)
	if err == nil || !strings.Contains(err.Error(), "make cluster") {
		t.Fatalf("err %v", err)
	}
}
