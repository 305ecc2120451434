package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hybrank/hybrank/internal/testenv"
)

// wv sends one JSON request and decodes the JSON answer into out (nil:
// discard); it returns the status.
func wv(t *testing.T, method, url string, body, out any) int {
	t.Helper()
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, url, r)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if out != nil && resp.StatusCode == http.StatusOK {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s %s: %v in %s", method, url, err, b)
		}
	}
	if resp.StatusCode != http.StatusOK {
		t.Logf("%s %s: %d %s", method, url, resp.StatusCode, b)
	}
	return resp.StatusCode
}

func sidecarStats(t *testing.T, s *State) []map[string]int64 {
	t.Helper()
	var out []map[string]int64
	for _, n := range s.Nodes {
		var m map[string]int64
		if wv(t, "GET", n.Sidecar.URL+"/stats", nil, &m) != http.StatusOK {
			t.Fatalf("sidecar stats of %s", n.Name)
		}
		out = append(out, m)
	}
	return out
}

// TestWeaviateCluster runs the real weaviate-server (make cluster builds
// it) as a 3-node cluster with stand-in sidecars that speak the
// text2vec-transformers protocol (fake_test.go, so no models are needed):
// every node ready, a collection of 3 shards × 3 replicas vectorized
// through each node's own sidecar, reads at QUORUM with a node SIGKILLed,
// a follower SIGKILLed, the node back after a restart, nothing left running after Down.
func TestWeaviateCluster(t *testing.T) {
	bin := testenv.NeedWeaviate(t)
	if testing.Short() {
		t.Skip("starts a Weaviate cluster: skipped in -short")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	o := fakeOptions(t)
	o.WeaviateBin = bin
	o.Env = nil
	t0 := time.Now()
	s, err := Up(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { Down(s.Path(), DownOptions{StopTimeout: 10 * time.Second}) })
	t.Logf("Weaviate %s: 3 nodes ready in %.1fs", s.Weaviate, time.Since(t0).Seconds())
	var b strings.Builder
	s.Describe(&b)
	t.Log("\n" + b.String())

	var nodes struct {
		Nodes []struct{ Name, Status string }
	}
	if wv(t, "GET", s.Nodes[0].URL()+"/v1/nodes", nil, &nodes) != http.StatusOK {
		t.Fatal("GET /v1/nodes")
	}
	healthy := 0
	for _, n := range nodes.Nodes {
		if n.Status == "HEALTHY" {
			healthy++
		}
	}
	if healthy != 3 {
		t.Fatalf("/v1/nodes: %+v, want 3 healthy", nodes.Nodes)
	}

	class := map[string]any{
		"class":             "ClusterDoc",
		"vectorizer":        "text2vec-transformers",
		"properties":        []map[string]any{{"name": "text", "dataType": []string{"text"}}},
		"shardingConfig":    map[string]any{"desiredCount": 3},
		"replicationConfig": map[string]any{"factor": 3, "asyncEnabled": true},
	}
	if wv(t, "POST", s.Nodes[0].URL()+"/v1/schema", class, nil) != http.StatusOK {
		t.Fatal("create collection")
	}
	texts := []string{"raft elects a leader", "memberlist gossips membership", "hnsw graph search",
		"bm25 ranks terms", "replicas repair asynchronously", "shards split a collection",
		"sidecars embed text", "cross encoders rerank pairs", "quorum reads survive one node", "gossip ports bind loopback"}
	var objs []map[string]any
	for i, tx := range texts {
		objs = append(objs, map[string]any{"class": "ClusterDoc", "id": fmt.Sprintf("00000000-0000-0000-0000-%012d", i+1), "properties": map[string]any{"text": tx}})
	}
	// Imported through node 0: node 0's module vectorizes, through its
	// own sidecar only. At ALL, so that every replica holds every object
	// when the searches below read one replica (at QUORUM the third one
	// may still lack some, and a nearest-neighbour answer differ).
	before := sidecarStats(t, s)
	var res []struct {
		Result struct {
			Errors any `json:"errors"`
		} `json:"result"`
	}
	if wv(t, "POST", s.Nodes[0].URL()+"/v1/batch/objects?consistency_level=ALL", map[string]any{"objects": objs}, &res) != http.StatusOK {
		t.Fatal("batch import")
	}
	for i, r := range res {
		if r.Result.Errors != nil {
			t.Fatalf("object %d: %v", i, r.Result.Errors)
		}
	}
	after := sidecarStats(t, s)
	if after[0]["passage"]-before[0]["passage"] < int64(len(texts)) || after[1]["passage"] != before[1]["passage"] || after[2]["passage"] != before[2]["passage"] {
		t.Errorf("passage calls by sidecar: before %v, after %v; want node 0's sidecar to embed all %d", before, after, len(texts))
	}
	// A query through node 1 is embedded by sidecar 1.
	q := map[string]string{"query": `{Get{ClusterDoc(nearText:{concepts:["raft leader"]}, limit:1){text}}}`}
	var gql struct {
		Data struct {
			Get map[string][]struct{ Text string }
		}
		Errors any
	}
	if wv(t, "POST", s.Nodes[1].URL()+"/v1/graphql", q, &gql) != http.StatusOK || gql.Errors != nil {
		t.Fatalf("nearText: %v", gql.Errors)
	}
	if got := gql.Data.Get["ClusterDoc"]; len(got) != 1 || got[0].Text != "raft elects a leader" {
		t.Errorf("nearText raft leader: %+v", got)
	}
	if st := sidecarStats(t, s); st[1]["query"] != after[1]["query"]+1 || st[0]["query"] != after[0]["query"] {
		t.Errorf("query calls by sidecar %v (before %v): want one on sidecar 1", st, after)
	}

	// SIGKILL a follower (a write waiting on a killed leader hangs in
	// Weaviate for minutes: RaftLeader's doc): every object still reads at
	// QUORUM, and a write at QUORUM is acknowledged.
	leader, err := s.RaftLeader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	victim, via := (leader+1)%3, (leader+2)%3
	t.Logf("raft leader %s; killing %s", s.Nodes[leader].Name, s.Nodes[victim].Name)
	if err := s.KillNode(victim); err != nil {
		t.Fatal(err)
	}
	for _, obj := range objs {
		if c := wv(t, "GET", s.Nodes[via].URL()+"/v1/objects/ClusterDoc/"+obj["id"].(string)+"?consistency_level=QUORUM", nil, nil); c != http.StatusOK {
			t.Errorf("read %s at QUORUM with %s down: %d", obj["id"], s.Nodes[victim].Name, c)
		}
	}
	extra := map[string]any{"class": "ClusterDoc", "id": "00000000-0000-0000-0000-000000000099", "properties": map[string]any{"text": "written while a node was down"}}
	if c := wv(t, "POST", s.Nodes[leader].URL()+"/v1/objects?consistency_level=QUORUM", extra, nil); c != http.StatusOK {
		t.Errorf("write at QUORUM with %s down: %d", s.Nodes[victim].Name, c)
	}

	// Restart it: ready again, and the cluster sees 3 healthy nodes.
	t1 := time.Now()
	if err := s.StartNode(victim); err != nil {
		t.Fatal(err)
	}
	if err := s.WaitNodeReady(ctx, victim); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s restarted and ready in %.1fs", s.Nodes[victim].Name, time.Since(t1).Seconds())
	for {
		healthy = 0
		if wv(t, "GET", s.Nodes[victim].URL()+"/v1/nodes", nil, &nodes) == http.StatusOK {
			for _, n := range nodes.Nodes {
				if n.Status == "HEALTHY" {
					healthy++
				}
			}
		}
		if healthy == 3 {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("after the restart /v1/nodes: %+v", nodes.Nodes)
		}
		time.Sleep(250 * time.Millisecond)
	}
	if c := wv(t, "GET", s.Nodes[victim].URL()+"/v1/objects/ClusterDoc/"+extra["id"].(string)+"?consistency_level=ALL", nil, nil); c != http.StatusOK {
		t.Errorf("object written while %s was down, read at ALL after its restart: %d", s.Nodes[victim].Name, c)
	}

	all := pids(s)
	t2 := time.Now()
	if err := Down(s.Path(), DownOptions{StopTimeout: 20 * time.Second}); err != nil {
		t.Fatal(err)
	}
	t.Logf("Down in %.1fs", time.Since(t2).Seconds())
	for _, pid := range all {
		if alive(pid) {
			t.Errorf("pid %d alive after Down", pid)
		}
	}
}
