package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/hybrank/hybrank/engine"
	"hash/fnv"
	"math"
	"net/http"
	"net/http/httptest"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeCluster is an in-process stand-in for a running cluster: one
// httptest server per node speaking the part of Weaviate's REST and
// GraphQL API the driver uses, and one per sidecar speaking the
// transformers protocols under /weaviate. Objects written while a node is
// down reach it catchUp after it restarts (async replication); a node
// whose sidecar is dead fails vectorizing and reranking as Weaviate does.
type fakeCluster struct {
	t       *testing.T
	catchUp time.Duration

	mu       sync.Mutex // guards everything below
	down     []bool
	carDown  []bool
	peer     []bool
	classes  map[string]bool
	objects  map[string]map[string]map[string]string // class → id → properties (acknowledged)
	replicas []map[string]bool                       // node → class/id present
	pending  []map[string]bool                       // node → class/id to catch up
	requests map[string]int                          // node HTTP → requests
	vectors  map[string]int                          // sidecar → vectors requests (hybrank only)
	reranks  map[string]int

	nodes []*httptest.Server
	cars  []*httptest.Server
}

func newFakeCluster(t *testing.T, n int) *fakeCluster {
	f := &fakeCluster{t: t, catchUp: 300 * time.Millisecond, down: make([]bool, n), carDown: make([]bool, n), peer: make([]bool, n),
		classes: map[string]bool{}, objects: map[string]map[string]map[string]string{},
		requests: map[string]int{}, vectors: map[string]int{}, reranks: map[string]int{}}
	for i := range n {
		f.replicas = append(f.replicas, map[string]bool{})
		f.pending = append(f.pending, map[string]bool{})
		f.cars = append(f.cars, httptest.NewServer(f.sidecar(i)))
		f.nodes = append(f.nodes, httptest.NewServer(f.node(i)))
	}
	t.Cleanup(func() {
		for _, s := range append(f.nodes, f.cars...) {
			s.CloseClientConnections()
			s.Close()
		}
	})
	return f
}

func (f *fakeCluster) Nodes() []Endpoint {
	out := make([]Endpoint, len(f.nodes))
	for i := range f.nodes {
		out[i] = Endpoint{Name: fmt.Sprintf("node%d", i), HTTP: f.nodes[i].URL, Sidecar: f.cars[i].URL, Inference: f.cars[i].URL + "/weaviate"}
	}
	return out
}

func (f *fakeCluster) KillNode(i int) error {
	f.mu.Lock()
	f.down[i] = true
	f.mu.Unlock()
	f.nodes[i].CloseClientConnections()
	return nil
}

func (f *fakeCluster) StartNode(_ context.Context, i int) error {
	f.mu.Lock()
	f.down[i] = false
	f.mu.Unlock()
	time.AfterFunc(f.catchUp, func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		for k := range f.pending[i] {
			f.replicas[i][k] = true
		}
		f.pending[i] = map[string]bool{}
	})
	return nil
}

func (f *fakeCluster) KillSidecar(i int) error {
	f.mu.Lock()
	f.carDown[i] = true
	f.mu.Unlock()
	return nil
}

func (f *fakeCluster) StartSidecar(_ context.Context, i int, s SidecarKind) error {
	f.mu.Lock()
	f.carDown[i], f.peer[i] = false, s == SidecarPeer
	f.mu.Unlock()
	return nil
}

// refuse drops the connection: what a killed process gives a client.
func refuse(w http.ResponseWriter) {
	if hj, ok := w.(http.Hijacker); ok {
		if c, _, err := hj.Hijack(); err == nil {
			c.Close()
			return
		}
	}
	w.WriteHeader(http.StatusServiceUnavailable)
}

var (
	reGet    = regexp.MustCompile(`Get \{ (\w+)\((bm25|hybrid): \{query: ("(?:[^"\\]|\\.)*")(?:, alpha: ([0-9.]+))?`)
	reLimit  = regexp.MustCompile(`limit: (\d+)`)
	reAggr   = regexp.MustCompile(`Aggregate \{ (\w+) \{`)
	reObject = regexp.MustCompile(`^/v1/objects/(\w+)/([0-9a-f-]+)$`)
)

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

func apiErr(msg string) map[string]any {
	return map[string]any{"error": []map[string]string{{"message": msg}}}
}

// node is node i's Weaviate.
func (f *fakeCluster) node(i int) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		down := f.down[i]
		f.requests[fmt.Sprint(i)]++
		f.mu.Unlock()
		if down {
			refuse(w)
			return
		}
		switch p := r.URL.Path; {
		case p == "/v1/.well-known/ready":
			w.WriteHeader(http.StatusOK)
		case p == "/v1/meta":
			writeJSON(w, 200, map[string]any{"version": "1.35.2", "modules": map[string]any{"text2vec-transformers": map[string]any{}}})
		case p == "/v1/schema" && r.Method == http.MethodPost:
			var cls map[string]any
			json.NewDecoder(r.Body).Decode(&cls)
			name, _ := cls["class"].(string)
			f.mu.Lock()
			f.classes[name] = true
			f.objects[name] = map[string]map[string]string{}
			f.mu.Unlock()
			writeJSON(w, 200, cls)
		case strings.HasPrefix(p, "/v1/schema/"):
			name := strings.TrimPrefix(p, "/v1/schema/")
			f.mu.Lock()
			ok := f.classes[name]
			if r.Method == http.MethodDelete {
				delete(f.classes, name)
				delete(f.objects, name)
			}
			f.mu.Unlock()
			switch {
			case !ok:
				writeJSON(w, 404, apiErr("no class "+name))
			case r.Method == http.MethodDelete:
				w.WriteHeader(200)
			default:
				writeJSON(w, 200, map[string]any{"class": name,
					"invertedIndexConfig": map[string]any{"bm25": map[string]any{"k1": 1.2, "b": 0.75}, "stopwords": map[string]any{"preset": "en"}},
					"properties":          []map[string]any{{"name": "text", "tokenization": "word"}},
					"shardingConfig":      map[string]any{"desiredCount": 3}, "replicationConfig": map[string]any{"factor": 3, "asyncEnabled": true},
					"vectorIndexConfig": map[string]any{"distance": "cosine"}})
			}
		case p == "/v1/batch/objects":
			f.batch(w, r, i)
		case p == "/v1/graphql":
			f.graphql(w, r, i)
		case reObject.MatchString(p):
			m := reObject.FindStringSubmatch(p)
			node := r.URL.Query().Get("node_name")
			f.mu.Lock()
			_, acked := f.objects[m[1]][m[2]]
			present := acked
			if node != "" {
				k, _ := strconv.Atoi(strings.TrimPrefix(node, "node"))
				present = f.replicas[k][m[1]+"/"+m[2]]
			}
			props := f.objects[m[1]][m[2]]
			f.mu.Unlock()
			if !present {
				writeJSON(w, 404, apiErr("not found"))
				return
			}
			writeJSON(w, 200, map[string]any{"id": m[2], "vector": fakeVector(props["text"])})
		case strings.HasPrefix(p, "/v1/nodes"):
			class := strings.TrimPrefix(strings.TrimPrefix(p, "/v1/nodes"), "/")
			var ns []map[string]any
			f.mu.Lock()
			for k := range f.nodes {
				n := 0
				for key := range f.replicas[k] {
					if strings.HasPrefix(key, class+"/") {
						n++
					}
				}
				ns = append(ns, map[string]any{"name": fmt.Sprintf("node%d", k), "status": "HEALTHY", "version": "1.35.2",
					"shards": []map[string]any{{"name": "s0", "class": class, "objectCount": n}}})
			}
			f.mu.Unlock()
			writeJSON(w, 200, map[string]any{"nodes": ns})
		default:
			writeJSON(w, 404, apiErr("no route "+p))
		}
	})
}

// callSidecar posts body to node i's sidecar (as the modules do) and
// reports whether it answered 200.
func (f *fakeCluster) callSidecar(i int, path string, body any) bool {
	b, _ := json.Marshal(body)
	resp, err := http.Post(f.cars[i].URL+"/weaviate"+path, "application/json", strings.NewReader(string(b)))
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// batch stores the objects on every live replica (the down ones catch up
// after their restart) unless the coordinator's sidecar is dead.
func (f *fakeCluster) batch(w http.ResponseWriter, r *http.Request, i int) {
	if r.URL.Query().Get("consistency_level") == "" {
		writeJSON(w, 422, apiErr("want a consistency level"))
		return
	}
	var body struct {
		Objects []struct {
			Class      string            `json:"class"`
			ID         string            `json:"id"`
			Properties map[string]string `json:"properties"`
		} `json:"objects"`
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		writeJSON(w, 400, apiErr(err.Error()))
		return
	}
	vectorized := make([]bool, len(body.Objects))
	for k, o := range body.Objects {
		vectorized[k] = f.callSidecar(i, "/vectors", vectorsBody(o.Properties["text"], "passage"))
	}
	var out []map[string]any
	f.mu.Lock()
	for k, o := range body.Objects {
		res := map[string]any{}
		switch {
		case !vectorized[k]:
			res["errors"] = map[string]any{"error": []map[string]string{{"message": "update vector: send POST request: connection refused"}}}
		case f.objects[o.Class] == nil:
			res["errors"] = map[string]any{"error": []map[string]string{{"message": "no class " + o.Class}}}
		default:
			f.objects[o.Class][o.ID] = o.Properties
			for k := range f.nodes {
				if f.down[k] {
					f.pending[k][o.Class+"/"+o.ID] = true
				} else {
					f.replicas[k][o.Class+"/"+o.ID] = true
				}
			}
		}
		out = append(out, map[string]any{"class": o.Class, "id": o.ID, "result": res})
	}
	f.mu.Unlock()
	writeJSON(w, 200, out)
}

// graphql answers Get (documents ranked by the query words they hold,
// ties by id) and Aggregate.
func (f *fakeCluster) graphql(w http.ResponseWriter, r *http.Request, i int) {
	var q struct {
		Query string `json:"query"`
	}
	json.NewDecoder(r.Body).Decode(&q)
	if m := reAggr.FindStringSubmatch(q.Query); m != nil {
		f.mu.Lock()
		n := len(f.objects[m[1]])
		f.mu.Unlock()
		writeJSON(w, 200, map[string]any{"data": map[string]any{"Aggregate": map[string]any{m[1]: []map[string]any{{"meta": map[string]any{"count": n}}}}}})
		return
	}
	m := reGet.FindStringSubmatch(q.Query)
	if m == nil {
		writeJSON(w, 200, map[string]any{"errors": []map[string]string{{"message": "fake: cannot parse " + q.Query}}})
		return
	}
	var text string
	if err := json.Unmarshal([]byte(m[3]), &text); err != nil {
		writeJSON(w, 200, map[string]any{"errors": []map[string]string{{"message": "fake: bad string " + m[3]}}})
		return
	}
	rerank := strings.Contains(q.Query, "rerank(")
	alpha, _ := strconv.ParseFloat(m[4], 64)
	limit, _ := strconv.Atoi(reLimit.FindStringSubmatch(q.Query)[1])
	ok := true
	if m[2] == "hybrid" && alpha > 0 && !strings.Contains(q.Query, "vector: [") {
		ok = f.callSidecar(i, "/vectors", vectorsBody(text, "query")) // Weaviate vectorizes the query
	}
	for k := 0; ok && rerank && k < searchRerankRequests(limit); k++ {
		ok = f.callSidecar(i, "/rerank", rerankBody(text, []string{"a", "b"}))
	}
	if !ok {
		writeJSON(w, 200, map[string]any{"data": map[string]any{"Get": map[string]any{m[1]: nil}},
			"errors": []map[string]string{{"message": "explorer: get class: vectorize search vector: remote client vectorize: send POST request: connection refused"}}})
		return
	}
	type hit struct {
		id    string
		score float64
	}
	var hits []hit
	f.mu.Lock()
	for id, p := range f.objects[m[1]] {
		s := 0.0
		for _, word := range strings.Fields(strings.ToLower(text)) {
			if strings.Contains(strings.ToLower(p["text"]), word) {
				s++
			}
		}
		hits = append(hits, hit{id, s})
	}
	f.mu.Unlock()
	sort.Slice(hits, func(a, b int) bool {
		if hits[a].score != hits[b].score {
			return hits[a].score > hits[b].score
		}
		return hits[a].id < hits[b].id
	})
	hits = hits[:min(limit, len(hits))]
	rows := make([]map[string]any, len(hits))
	for k, h := range hits {
		add := map[string]any{"id": h.id, "score": strconv.FormatFloat(h.score, 'g', -1, 64)}
		if rerank {
			add["rerank"] = []map[string]any{{"score": h.score}}
		}
		rows[k] = map[string]any{"_additional": add}
	}
	writeJSON(w, 200, map[string]any{"data": map[string]any{"Get": map[string]any{m[1]: rows}}})
}

// fakeVector is a deterministic unit vector of text.
func fakeVector(text string) []float32 {
	v := make([]float32, 8)
	var n float64
	for i := range v {
		h := fnv.New32a()
		fmt.Fprintf(h, "%d/%s", i, text)
		v[i] = float32(h.Sum32()%1000) - 500
		n += float64(v[i]) * float64(v[i])
	}
	for i := range v {
		v[i] /= float32(math.Sqrt(n))
	}
	return v
}

// sidecar is node i's sidecar (hybrank, or the peer once swapped in).
func (f *fakeCluster) sidecar(i int) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		down, peer := f.carDown[i], f.peer[i]
		f.mu.Unlock()
		if down {
			refuse(w)
			return
		}
		count := func(m map[string]int) {
			if !peer {
				f.mu.Lock()
				m[fmt.Sprint(i)]++
				f.mu.Unlock()
			}
		}
		if peer {
			time.Sleep(5 * time.Millisecond) // the slower one
		}
		switch r.URL.Path {
		case "/weaviate/.well-known/ready":
			w.WriteHeader(http.StatusNoContent)
		case "/weaviate/meta":
			writeJSON(w, 200, map[string]any{"model": map[string]any{"peer": peer}})
		case "/weaviate/vectors":
			count(f.vectors)
			var b struct {
				Text string `json:"text"`
			}
			json.NewDecoder(r.Body).Decode(&b)
			writeJSON(w, 200, map[string]any{"text": b.Text, "vector": fakeVector(b.Text), "dim": 8})
		case "/analyze":
			// hybrank's analysis, as far as the fake has one: lower-cased
			// words, a plural's s cut.
			var b struct {
				Inputs []string `json:"inputs"`
			}
			json.NewDecoder(r.Body).Decode(&b)
			terms := make([][]string, len(b.Inputs))
			for k, in := range b.Inputs {
				terms[k] = []string{}
				for _, w := range strings.Fields(strings.ToLower(in)) {
					terms[k] = append(terms[k], strings.TrimSuffix(w, "s"))
				}
			}
			writeJSON(w, 200, map[string]any{"analyzer": engine.DefaultConfig().Analysis.Version(), "terms": terms})
		case "/weaviate/rerank":
			count(f.reranks)
			var b struct {
				Query     string   `json:"query"`
				Documents []string `json:"documents"`
			}
			json.NewDecoder(r.Body).Decode(&b)
			var s []map[string]any
			for _, d := range b.Documents {
				s = append(s, map[string]any{"document": d, "score": float64(len(d)%17) / 17})
			}
			writeJSON(w, 200, map[string]any{"query": b.Query, "scores": s})
		case "/metrics":
			if peer {
				writeJSON(w, 404, map[string]string{"detail": "Not Found"})
				return
			}
			f.mu.Lock()
			fmt.Fprintf(w, "# HELP hybrank_http_requests_total x\nhybrank_http_requests_total{code=\"200\",route=\"/weaviate/vectors\"} %d\nhybrank_http_requests_total{code=\"200\",route=\"/weaviate/rerank\"} %d\n",
				f.vectors[fmt.Sprint(i)], f.reranks[fmt.Sprint(i)])
			f.mu.Unlock()
		default:
			writeJSON(w, 404, map[string]string{"error": "no route"})
		}
	})
}
