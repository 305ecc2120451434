package cluster

import (
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hybrank/hybrank/bench"
)

func TestValidatePorts(t *testing.T) {
	for _, tc := range []struct {
		name  string
		ports []Ports
		want  string // substring of the error; "" = valid
	}{
		{"none", nil, ""},
		{"zeros", []Ports{{}, {}, {}}, ""},
		{"given", []Ports{{HTTP: 8080, Raft: 8300, RaftRPC: 8301}, {HTTP: 8081}}, ""},
		{"low", []Ports{{HTTP: 80}}, "1024-65535"},
		{"high", []Ports{{GRPC: 70000}}, "1024-65535"},
		{"twice in a node", []Ports{{HTTP: 9000, GRPC: 9000}}, "is also node 0 http"},
		{"twice across nodes", []Ports{{HTTP: 9000}, {Sidecar: 9000}}, "node 1 sidecar port 9000 is also node 0 http"},
		{"raft rpc not raft+1", []Ports{{Raft: 8300, RaftRPC: 8305}}, "Raft port + 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := validatePorts(tc.ports)
			if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Fatalf("validatePorts = %v, want %q", err, tc.want)
			}
		})
	}
}

func allPorts(p Ports) []int {
	var out []int
	for _, f := range portFields {
		out = append(out, *f.ptr(&p))
	}
	return out
}

func TestPickPorts(t *testing.T) {
	// A port given explicitly is kept; every other one is picked, none
	// twice; the pairs follow Weaviate's rules.
	given := freePort(t)
	got, err := pickPorts([]Ports{{HTTP: given}, {}, {}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got[0].HTTP != given {
		t.Errorf("node 0 http = %d, want the given %d", got[0].HTTP, given)
	}
	seen := map[int]string{}
	for i, p := range got {
		for j, v := range allPorts(p) {
			what := strconv.Itoa(i) + " " + portFields[j].name
			if v < 1024 || v > 65535 {
				t.Errorf("node %s port %d", what, v)
			}
			if prev, dup := seen[v]; dup {
				t.Errorf("port %d picked for %s and %s", v, prev, what)
			}
			seen[v] = what
		}
		if p.RaftRPC != p.Raft+1 || p.Data != p.Gossip+1 {
			t.Errorf("node %d: raft %d rpc %d, gossip %d data %d: want rpc = raft+1, data = gossip+1", i, p.Raft, p.RaftRPC, p.Gossip, p.Data)
		}
	}

	// The ports of a previous run are reused where free.
	again, err := pickPorts(make([]Ports, 3), got)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(again, got) {
		t.Errorf("preferred ports not reused:\n got %+v\nwant %+v", again, got)
	}

	// A busy given port fails, naming it; a busy preferred one is replaced.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	busy := l.Addr().(*net.TCPAddr).Port
	if _, err := pickPorts([]Ports{{Sidecar: busy}}, nil); err == nil || !strings.Contains(err.Error(), "node 0 sidecar port "+strconv.Itoa(busy)+" is not free") {
		t.Errorf("busy given port: err = %v", err)
	}
	p, err := pickPorts([]Ports{{}}, []Ports{{Metrics: busy}})
	if err != nil {
		t.Fatal(err)
	}
	if p[0].Metrics == busy || p[0].Metrics == 0 {
		t.Errorf("busy preferred port %d: got metrics %d", busy, p[0].Metrics)
	}

	// A raft port given alone brings its RPC port, gossip its data port.
	r := freePort(t)
	p, err = pickPorts([]Ports{{Raft: r}}, nil)
	if err != nil && !strings.Contains(err.Error(), "not free") { // r+1 may be taken by chance
		t.Fatal(err)
	}
	if err == nil && p[0].RaftRPC != r+1 {
		t.Errorf("raft %d given: rpc %d", r, p[0].RaftRPC)
	}
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", ":0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func TestOptionsValidate(t *testing.T) {
	ok := DefaultOptions()
	for _, tc := range []struct {
		name string
		edit func(o *Options)
		want string
	}{
		{"default", func(o *Options) {}, ""},
		{"no dir", func(o *Options) { o.Dir = "" }, "dir is empty"},
		{"no weaviate", func(o *Options) { o.WeaviateBin = "" }, "weaviate binary"},
		{"no serve", func(o *Options) { o.ServeBin = "" }, "serve binary"},
		{"command instead of serve", func(o *Options) { o.ServeBin, o.SidecarCommand = "", &Command{Path: "python3"} }, ""},
		{"command without path", func(o *Options) { o.SidecarCommand = &Command{} }, "no path"},
		{"no nodes", func(o *Options) { o.Nodes = 0 }, "nodes 0"},
		{"ports for more nodes", func(o *Options) { o.Ports = make([]Ports, 4) }, "ports given for 4 nodes"},
		{"bad port", func(o *Options) { o.Ports = []Ports{{HTTP: 1}} }, "1024-65535"},
		{"inference path slash", func(o *Options) { o.InferencePath = "/weaviate/" }, "inference path"},
		{"inference path relative", func(o *Options) { o.InferencePath = "weaviate" }, "inference path"},
		{"no inference path", func(o *Options) { o.InferencePath = "" }, ""},
		{"ready path", func(o *Options) { o.SidecarReadyPath = "readyz" }, "ready path"},
		{"threads", func(o *Options) { o.Sidecar.Threads = -1 }, "threads -1"},
		{"timeout", func(o *Options) { o.NodeTimeout = 0 }, "timeouts"},
		{"env", func(o *Options) { o.Env = []string{"NOEQUALS"} }, "KEY=VALUE"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := ok
			tc.edit(&o)
			err := o.Validate()
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, bench.ErrBadOption) {
				t.Fatalf("Validate = %v, want %q wrapping bench.ErrBadOption", err, tc.want)
			}
		})
	}
}

func TestTiktokenFile(t *testing.T) {
	// tiktoken's cache key of cl100k_base (sha1 of its URL), as the
	// Makefile's sha1sum names the file.
	if got, want := TiktokenFile("cl100k_base"), "9b5ad71b2ce5302211f9c61530b329a4922fc6a4"; got != want {
		t.Errorf("TiktokenFile(cl100k_base) = %s, want %s", got, want)
	}
}

// testState lays out a 3-node state under a temporary folder with picked
// ports (nothing started).
func testState(t *testing.T) (*State, Options) {
	t.Helper()
	o := DefaultOptions()
	o.Dir = t.TempDir()
	o.WeaviateBin = "/opt/weaviate/weaviate-server"
	o.ServeBin = "/opt/hybrank/serve"
	ports, err := pickPorts(make([]Ports, 3), nil)
	if err != nil {
		t.Fatal(err)
	}
	s, err := newState(o, ports)
	if err != nil {
		t.Fatal(err)
	}
	return s, o
}

func envMap(env []string) map[string]string {
	m := map[string]string{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		m[k] = v
	}
	return m
}

func TestNodeEnv(t *testing.T) {
	s, o := testState(t)
	var gossip, raft []string
	for _, n := range s.Nodes {
		gossip = append(gossip, "127.0.0.1:"+strconv.Itoa(n.Ports.Gossip))
		raft = append(raft, n.Name+":"+strconv.Itoa(n.Ports.Raft))
	}
	profiling := map[string]bool{}
	for i, n := range s.Nodes {
		env := envMap(n.Process.Command.Env)
		p := n.Ports
		want := map[string]string{
			"CLUSTER_HOSTNAME":           "weaviate-" + strconv.Itoa(i),
			"CLUSTER_IN_LOCALHOST":       "true",
			"CLUSTER_BIND_ADDR":          "127.0.0.1",
			"CLUSTER_ADVERTISE_ADDR":     "127.0.0.1",
			"CLUSTER_JOIN":               strings.Join(gossip, ","), // every node, on every node
			"CLUSTER_GOSSIP_BIND_PORT":   strconv.Itoa(p.Gossip),
			"CLUSTER_DATA_BIND_PORT":     strconv.Itoa(p.Data),
			"RAFT_JOIN":                  strings.Join(raft, ","),
			"RAFT_BOOTSTRAP_EXPECT":      "3",
			"RAFT_PORT":                  strconv.Itoa(p.Raft),
			"RAFT_INTERNAL_RPC_PORT":     strconv.Itoa(p.Raft + 1),
			"GRPC_PORT":                  strconv.Itoa(p.GRPC),
			"GO_PROFILING_PORT":          strconv.Itoa(p.Profiling),
			"PROMETHEUS_MONITORING_PORT": strconv.Itoa(p.Metrics),
			"PERSISTENCE_DATA_PATH":      filepath.Join(o.Dir, "node"+strconv.Itoa(i)),
			// Each node's transformers modules reach its own sidecar.
			"TRANSFORMERS_INFERENCE_API":              "http://127.0.0.1:" + strconv.Itoa(p.Sidecar) + "/weaviate",
			"RERANKER_INFERENCE_API":                  "http://127.0.0.1:" + strconv.Itoa(p.Sidecar) + "/weaviate",
			"TRANSFORMERS_WAIT_FOR_STARTUP":           "false",
			"RERANKER_WAIT_FOR_STARTUP":               "false",
			"AUTHENTICATION_ANONYMOUS_ACCESS_ENABLED": "true",
			"DEFAULT_VECTORIZER_MODULE":               "none",
			"ENABLE_MODULES":                          "text2vec-transformers,reranker-transformers,text2vec-openai,reranker-cohere",
			"ASYNC_REPLICATION_DISABLED":              "false",
			"USE_INVERTED_SEARCHABLE":                 "false", // classic WAND: BlockMax prunes before compaction
			"TIKTOKEN_CACHE_DIR":                      filepath.Join(o.Dir, "tiktoken"),
			"DISABLE_TELEMETRY":                       "true",
			"OPENAI_APIKEY":                           "hybrank-local",
			"COHERE_APIKEY":                           "hybrank-local",
		}
		for k, v := range want {
			if env[k] != v {
				t.Errorf("node %d %s = %q, want %q", i, k, env[k], v)
			}
		}
		if profiling[env["GO_PROFILING_PORT"]] {
			t.Errorf("node %d shares its profiling port", i)
		}
		profiling[env["GO_PROFILING_PORT"]] = true
		args := strings.Join(n.Process.Command.Args, " ")
		if !strings.Contains(args, "--host 127.0.0.1 --port "+strconv.Itoa(p.HTTP)) {
			t.Errorf("node %d args %q: want REST on 127.0.0.1:%d", i, args, p.HTTP)
		}
		if n.HTTP != "127.0.0.1:"+strconv.Itoa(p.HTTP) || n.Sidecar.URL != "http://127.0.0.1:"+strconv.Itoa(p.Sidecar) {
			t.Errorf("node %d addresses %s, %s", i, n.HTTP, n.Sidecar.URL)
		}
		// The default sidecar: serve on its port with the two models,
		// cache on, one thread per call, a call per core, no index.
		sc := n.Sidecar.Process.Command
		want2 := []string{"--addr", "127.0.0.1:" + strconv.Itoa(p.Sidecar), "--embed-model", o.Sidecar.EmbedModel,
			"--rerank-model", o.Sidecar.RerankModel, "--cache-mb", "64", "--threads", "1", "--pool", strconv.Itoa(runtime.NumCPU())}
		if sc.Path != o.ServeBin || !slices.Equal(sc.Args, want2) || sc.ReadyPath != "/weaviate/.well-known/ready" {
			t.Errorf("sidecar %d command %+v, want %s %v waiting on /weaviate/.well-known/ready", i, sc, o.ServeBin, want2)
		}
		if slices.Contains(sc.Args, "--index") || slices.Contains(sc.Args, "--memory-index") {
			t.Errorf("sidecar %d has an index: %v", i, sc.Args)
		}
	}
}

func TestNodeEnvOverrides(t *testing.T) {
	o := DefaultOptions()
	o.Dir, o.WeaviateBin, o.ServeBin = t.TempDir(), "/w", "/s"
	o.Env = []string{"ASYNC_REPLICATION_FREQUENCY=5s", "LOG_LEVEL=debug"}
	o.SidecarCommand = &Command{Path: "/usr/bin/python3", Args: []string{"peer.py", "--port", "{port}", "--node", "{node}"},
		Env: []string{"DIR={dir}"}, ReadyPath: "/weaviate/.well-known/ready"}
	ports, err := pickPorts(make([]Ports, 3), nil)
	if err != nil {
		t.Fatal(err)
	}
	s, err := newState(o, ports)
	if err != nil {
		t.Fatal(err)
	}
	env := s.Nodes[1].Process.Command.Env
	// Options.Env comes last, so it wins (exec keeps a key's last value).
	if env[len(env)-1] != "LOG_LEVEL=debug" || !slices.Contains(env, "ASYNC_REPLICATION_FREQUENCY=5s") {
		t.Errorf("extra env not last: %v", env[len(env)-2:])
	}
	sc := s.Nodes[1].Sidecar.Process.Command
	if want := []string{"peer.py", "--port", strconv.Itoa(ports[1].Sidecar), "--node", "1"}; !slices.Equal(sc.Args, want) {
		t.Errorf("expanded args %v, want %v", sc.Args, want)
	}
	if sc.Env[0] != "DIR="+o.Dir {
		t.Errorf("expanded env %v", sc.Env)
	}
}

func TestStateRoundTrip(t *testing.T) {
	s, _ := testState(t)
	s.Weaviate, s.WeaviateSum = "v1.35.2", "h1:x"
	s.Nodes[1].Process.PID, s.Nodes[1].Process.StartTicks = 4242, 99
	s.Nodes[1].Process.StartedAt = time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	s.mu.Lock()
	if err := s.save(); err != nil {
		t.Fatal(err)
	}
	s.mu.Unlock()
	got, err := ReadState(s.path)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Nodes, s.Nodes) || got.Weaviate != s.Weaviate || got.WeaviateSum != s.WeaviateSum ||
		got.Dir != s.Dir || !got.Created.Equal(s.Created) || got.Path() != s.path {
		t.Errorf("round trip:\n got %+v\nwant %+v", got, s)
	}
	if _, err := ReadState(filepath.Join(t.TempDir(), StateFile)); !errors.Is(err, ErrNoState) {
		t.Errorf("missing state file: %v, want ErrNoState", err)
	}
	os.WriteFile(s.path, []byte(`{"version": 99}`), 0o644)
	if _, err := ReadState(s.path); err == nil || !strings.Contains(err.Error(), "version 99") {
		t.Errorf("future version: %v", err)
	}
}

func TestProcessIdentity(t *testing.T) {
	dir := t.TempDir()
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep command")
	}
	p := Process{Command: Command{Path: sleep, Args: []string{"60"}}, Log: filepath.Join(dir, "sleep.log")}
	if err := p.start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.stop(0) })
	if !p.Running() {
		t.Fatal("started process not running")
	}
	if err := p.start(); !errors.Is(err, ErrRunning) {
		t.Errorf("second start: %v, want ErrRunning", err)
	}
	// The same PID with another start time is another process: not
	// running as far as the state goes, and never signalled.
	other := p
	other.StartTicks++
	if other.Running() {
		t.Error("a PID with another start time counts as running")
	}
	if err := other.stop(0); err != nil || other.PID != 0 {
		t.Errorf("stop of a reused PID: %v, pid %d", err, other.PID)
	}
	if !p.Running() {
		t.Fatal("stop of a reused PID signalled the process")
	}
	if err := p.stop(time.Second); err != nil {
		t.Fatal(err)
	}
	if p.PID != 0 || p.Running() {
		t.Errorf("after stop: pid %d running %v", p.PID, p.Running())
	}
	if b, _ := os.ReadFile(p.Log); !strings.Contains(string(b), "start: "+sleep+" 60") {
		t.Errorf("log lacks the start line: %q", b)
	}
}

// fakeOptions are Options for a cluster of fakes (fake_test.go) in a
// temporary folder.
func fakeOptions(t *testing.T) Options {
	t.Helper()
	o := DefaultOptions()
	o.Dir = t.TempDir()
	o.WeaviateBin = fakeWeaviate(t, o.Dir)
	o.SidecarCommand = fakeSidecar(false)
	o.Modules = []string{"text2vec-transformers"} // no tiktoken files needed
	o.Env = []string{fakeEnv + "=1"}
	o.SidecarTimeout, o.NodeTimeout, o.StopTimeout = time.Minute, time.Minute, 5*time.Second
	return o
}

func pids(s *State) []int {
	var out []int
	for _, n := range s.Nodes {
		out = append(out, n.Process.PID, n.Sidecar.Process.PID)
	}
	return out
}

func alive(pid int) bool {
	st, err := readStat(pid)
	return err == nil && st.state != 'Z'
}

func TestLifecycleWithFakes(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes: skipped in -short")
	}
	ctx := context.Background()
	o := fakeOptions(t)
	s, err := Up(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { Down(s.Path(), DownOptions{StopTimeout: time.Second}) })
	first := pids(s)
	for i, pid := range first {
		if pid == 0 || !alive(pid) {
			t.Fatalf("process %d (pid %d) not running after Up", i, pid)
		}
	}

	// A second Up starts nothing.
	again, err := Up(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	if !again.Resumed || !slices.Equal(pids(again), first) {
		t.Errorf("second Up: resumed %v, pids %v, want %v", again.Resumed, pids(again), first)
	}

	// Kill and restart a node and a sidecar; the state file follows.
	if err := s.KillNode(1); err != nil {
		t.Fatal(err)
	}
	if alive(first[2]) || s.Nodes[1].Process.PID != 0 {
		t.Fatalf("node 1 (pid %d) alive after KillNode", first[2])
	}
	// A port of the node taken while it was down: StartNode refuses.
	l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(s.Nodes[1].Ports.Data))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.StartNode(1); err == nil || !strings.Contains(err.Error(), "data port") {
		t.Errorf("StartNode with its data port taken: %v", err)
	}
	l.Close()
	if err := s.StartNode(1); err != nil {
		t.Fatal(err)
	}
	if err := s.WaitNodeReady(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if err := s.KillSidecar(0); err != nil {
		t.Fatal(err)
	}
	if err := s.StartSidecar(0); err != nil {
		t.Fatal(err)
	}
	if err := s.WaitSidecarReady(ctx, 0); err != nil {
		t.Fatal(err)
	}
	if err := s.StartSidecar(0); !errors.Is(err, ErrRunning) {
		t.Errorf("StartSidecar on a running sidecar: %v, want ErrRunning", err)
	}
	// Another program in sidecar 2's place, on its port.
	repl := *fakeSidecar(false)
	repl.Env = append(repl.Env, "REPLACED=1")
	if err := s.ReplaceSidecar(2, repl); err != nil {
		t.Fatal(err)
	}
	if err := s.WaitSidecarReady(ctx, 2); err != nil {
		t.Fatal(err)
	}
	saved, err := ReadState(s.Path())
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(pids(saved), pids(s)) || !slices.Contains(saved.Nodes[2].Sidecar.Process.Command.Env, "REPLACED=1") {
		t.Errorf("state file not updated: pids %v, want %v; sidecar 2 env %v", pids(saved), pids(s), saved.Nodes[2].Sidecar.Process.Command.Env)
	}
	if !strings.Contains(saved.Nodes[2].Sidecar.Process.Command.Args[3], strconv.Itoa(saved.Nodes[2].Ports.Sidecar)) {
		t.Errorf("replacement not expanded: %v", saved.Nodes[2].Sidecar.Process.Command.Args)
	}
	if err := s.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}

	// Stale: a process gone (killed behind the state's back) makes Up
	// stop the rest and start afresh, on the same ports.
	if err := s.KillNode(2); err != nil {
		t.Fatal(err)
	}
	before := pids(s)
	fresh, err := Up(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	if fresh.Resumed {
		t.Error("stale state resumed")
	}
	for _, pid := range before {
		if pid != 0 && alive(pid) {
			t.Errorf("pid %d of the stale state still running", pid)
		}
	}
	for i := range fresh.Nodes {
		if fresh.Nodes[i].Ports != s.Nodes[i].Ports {
			t.Errorf("node %d ports %+v, want the previous %+v", i, fresh.Nodes[i].Ports, s.Nodes[i].Ports)
		}
	}

	// Down stops exactly those processes and removes the state file;
	// the data stays unless wiped.
	last := pids(fresh)
	if err := Down(fresh.Path(), DownOptions{StopTimeout: 5 * time.Second}); err != nil {
		t.Fatal(err)
	}
	for _, pid := range last {
		if alive(pid) {
			t.Errorf("pid %d alive after Down", pid)
		}
	}
	if _, err := os.Stat(fresh.Path()); !os.IsNotExist(err) {
		t.Errorf("state file after Down: %v", err)
	}
	if _, err := os.Stat(fresh.Nodes[0].DataDir); err != nil {
		t.Errorf("data folder removed without Wipe: %v", err)
	}
	if err := Down(fresh.Path(), DownOptions{}); !errors.Is(err, ErrNoState) {
		t.Errorf("second Down: %v, want ErrNoState", err)
	}
}

func TestUpFailures(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes: skipped in -short")
	}
	ctx := context.Background()

	t.Run("node exits", func(t *testing.T) {
		o := fakeOptions(t)
		o.Env = append(o.Env, "FAKE_EXIT=1")
		s, err := Up(ctx, o)
		if err == nil {
			Down(s.Path(), DownOptions{})
			t.Fatal("Up succeeded with nodes that exit")
		}
		if !errors.Is(err, ErrNotReady) || !strings.Contains(err.Error(), "exiting at start as asked") {
			t.Errorf("error %v: want ErrNotReady with the node's log", err)
		}
		if _, err := os.Stat(filepath.Join(o.Dir, StateFile)); !os.IsNotExist(err) {
			t.Errorf("state file left after a failed Up: %v", err)
		}
		assertNoFakes(t, o.Dir)
	})

	t.Run("data port not bound", func(t *testing.T) {
		o := fakeOptions(t)
		o.Env = append(o.Env, "FAKE_NO_DATA=1")
		_, err := Up(ctx, o)
		if err == nil || !errors.Is(err, ErrNotReady) || !strings.Contains(err.Error(), "data port") {
			t.Fatalf("Up = %v, want the data port named", err)
		}
		assertNoFakes(t, o.Dir)
	})

	t.Run("sidecar without the protocol", func(t *testing.T) {
		o := fakeOptions(t)
		o.SidecarCommand = fakeSidecar(true)
		_, err := Up(ctx, o)
		if err == nil || !strings.Contains(err.Error(), "does not serve Weaviate's inference protocols") {
			t.Fatalf("Up = %v, want the missing-protocol error", err)
		}
		assertNoFakes(t, o.Dir)
	})

	t.Run("missing files", func(t *testing.T) {
		o := DefaultOptions()
		o.Dir = t.TempDir()
		o.WeaviateBin = filepath.Join(o.Dir, "nope")
		_, err := Up(ctx, o)
		if err == nil || !strings.Contains(err.Error(), "make cluster") {
			t.Fatalf("Up = %v, want the fix named", err)
		}
	})
}

// assertNoFakes fails if a process whose command line names dir (the
// fakes' logs and data live there) or this test binary as a fake still
// runs.
func assertNoFakes(t *testing.T, dir string) {
	t.Helper()
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() || !alive(pid) {
			continue
		}
		env, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err != nil {
			continue
		}
		if strings.Contains(string(env), fakeEnv+"=1") && strings.Contains(string(env), dir) {
			t.Errorf("fake process %d still running", pid)
		}
	}
}
