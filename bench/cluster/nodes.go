package cluster

import (
	"context"
	"crypto/sha1"
	"debug/buildinfo"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/hybrank/hybrank/bench"
	"github.com/hybrank/hybrank/internal/artifacts"
	"github.com/hybrank/hybrank/internal/atomicfile"
	"github.com/hybrank/hybrank/internal/dirlock"
	"github.com/hybrank/hybrank/internal/vfs"
	"github.com/hybrank/hybrank/models"
)

// Errors of the node lifecycle.
var (
	// ErrRunning is returned when a process to start is already running.
	ErrRunning = errors.New("cluster: already running")
	// ErrNoState is returned by ReadState (and Down) when there is no
	// state file: no cluster was started there, or it was stopped.
	ErrNoState = errors.New("cluster: no state file")
	// ErrNotReady is wrapped when a process did not become ready: it
	// exited, answered an error, or the wait timed out.
	ErrNotReady = errors.New("cluster: not ready")
)

// StateFile is the state file's name in Options.Dir.
const StateFile = "cluster.json"

// StateVersion is the state file's format version.
const StateVersion = 1

// DefaultModules are the Weaviate modules every node enables: hybrank
// serves the transformers protocols beside each node (TRANSFORMERS_ and
// RERANKER_INFERENCE_API) and the OpenAI and Cohere APIs that a
// collection reaches by its baseURL.
var DefaultModules = []string{"text2vec-transformers", "reranker-transformers", "text2vec-openai", "reranker-cohere"}

// TiktokenEncodings are the tokenizer files text2vec-openai may ask its
// tokenizer (tiktoken) for: it counts tokens with the encoding of the
// collection's model name (cl100k_base for the embedding models and any
// name it does not know, r50k_base for ada/babbage/curie/davinci, p50k_base
// for text-davinci-00x, o200k_base for gpt-4o/gpt-5) and, offline, panics on
// import when the file is missing. `make cluster` puts all four there.
var TiktokenEncodings = []string{"cl100k_base", "r50k_base", "p50k_base", "o200k_base"}

// TiktokenFile is the name tiktoken's cache (TIKTOKEN_CACHE_DIR) gives the
// file of encoding: the hex sha1 of the URL it would download it from.
func TiktokenFile(encoding string) string {
	url := "https://openaipublic.blob.core.windows.net/encodings/" + encoding + ".tiktoken"
	return fmt.Sprintf("%x", sha1.Sum([]byte(url)))
}

// SidecarOptions configure the default sidecar, one hybrank serve per
// node.
type SidecarOptions struct {
	// EmbedModel is the embedder's model directory (the real
	// all-MiniLM-L6-v2 by default).
	EmbedModel string `json:"embed_model"`
	// RerankModel is the cross-encoder's model directory (the generated
	// balanced profile by default).
	RerankModel string `json:"rerank_model"`
	// ORTLib is the ONNX Runtime library (HYBRANK_ORT_LIB).
	ORTLib string `json:"ort_lib"`
	// CacheMB is serve's --cache-mb (rerank scores and query embeddings;
	// Weaviate's hybrid search with rerank scores the same documents
	// twice, one call after the other: the cache answers the second).
	CacheMB int `json:"cache_mb"`
	// Threads is serve's --threads (intra-op threads per model call).
	Threads int `json:"threads"`
	// Pool is serve's --pool (runtime sessions per model, the model calls
	// a sidecar runs at once). Threads × Pool is a sidecar's thread
	// budget, which the peer gets too (as torch's intra-op threads): the
	// default, one thread per call and one call per core, lets either use
	// every core of the machine.
	Pool int `json:"pool"`
	// Args are appended to serve's flags.
	Args []string `json:"args,omitempty"`
}

// Options configure Up. DefaultOptions fills them; Validate checks them.
type Options struct {
	// Dir holds the state file (StateFile), node<i>/ data folders, logs/
	// and tiktoken/ (unless TiktokenDir is set).
	Dir string `json:"dir"`
	// WeaviateBin is the weaviate-server binary.
	WeaviateBin string `json:"weaviate_bin"`
	// ServeBin is hybrank's serve binary, the default sidecar.
	ServeBin string `json:"serve_bin"`
	// Nodes is the number of Weaviate nodes (and sidecars).
	Nodes int `json:"nodes"`
	// Ports are node i's ports (missing entries and zero fields: free
	// ones; a stale state's ports are reused where free).
	Ports []Ports `json:"ports,omitempty"`
	// Sidecar configures the default sidecar (hybrank serve).
	Sidecar SidecarOptions `json:"sidecar"`
	// SidecarCommand, when set, runs instead of serve on every node; its
	// Path, Args and Env may hold {port}, {addr} (127.0.0.1:port), {url}
	// (http://addr), {node} (the index) and {dir} (Dir), expanded per node.
	SidecarCommand *Command `json:"sidecar_command,omitempty"`
	// InferencePath is the path prefix under a sidecar's URL where it
	// serves Weaviate's transformers protocols: each node's
	// TRANSFORMERS_INFERENCE_API and RERANKER_INFERENCE_API are its own
	// sidecar's URL + InferencePath.
	InferencePath string `json:"inference_path"`
	// SidecarReadyPath is what Up waits on under a sidecar's URL (the
	// default: InferencePath + "/.well-known/ready", what Weaviate's
	// modules check). Ignored with SidecarCommand (its ReadyPath counts).
	SidecarReadyPath string `json:"sidecar_ready_path"`
	// TiktokenDir holds text2vec-openai's tokenizer files (TiktokenFile);
	// empty: Dir/tiktoken.
	TiktokenDir string `json:"tiktoken_dir"`
	// Modules are Weaviate's ENABLE_MODULES.
	Modules []string `json:"modules"`
	// ModuleKey is the API key every node's OpenAI and Cohere modules send
	// (OPENAI_APIKEY, COHERE_APIKEY, as "Authorization: Bearer"): they
	// refuse to call a baseURL without one. hybrank ignores it unless serve
	// runs with --api-key (then give one of its keys here); a request's
	// X-Openai-Api-Key or X-Cohere-Api-Key header overrides it.
	ModuleKey string `json:"-"`
	// Env is added to every node's environment after the cluster's own
	// variables (so it may override them), e.g. ASYNC_REPLICATION_FREQUENCY=5s.
	Env []string `json:"env,omitempty"`
	// SidecarTimeout bounds the wait for the sidecars to load their models;
	// NodeTimeout the wait for the nodes' readiness; StopTimeout the grace
	// between SIGTERM and SIGKILL.
	SidecarTimeout time.Duration `json:"sidecar_timeout_ns"`
	NodeTimeout    time.Duration `json:"node_timeout_ns"`
	StopTimeout    time.Duration `json:"stop_timeout_ns"`
	// Log receives progress lines (nil: none).
	Log io.Writer `json:"-"`
}

// DefaultOptions are three nodes under .deps/cluster with free ports, the
// binaries `make cluster` builds, and per node one serve with the real
// all-MiniLM-L6-v2 embedder and the generated balanced cross-encoder, a
// 64 MiB cache per model and one thread per model.
func DefaultOptions() Options {
	root := artifacts.ModuleRoot()
	modelsDir := os.Getenv(models.ModelsEnv)
	if modelsDir == "" && root != "" {
		modelsDir = filepath.Join(root, ".deps", "models")
	}
	serve := ""
	if root != "" {
		serve = filepath.Join(root, "bin", "serve")
	}
	return Options{
		Dir:         artifacts.Cluster(),
		WeaviateBin: artifacts.Weaviate(),
		ServeBin:    serve,
		Nodes:       3,
		Sidecar: SidecarOptions{
			EmbedModel:  filepath.Join(artifacts.RealModels(), "all-minilm-l6-v2"),
			RerankModel: filepath.Join(modelsDir, "balanced"),
			ORTLib:      artifacts.ORTLib(),
			CacheMB:     64,
			Threads:     1,
			Pool:        runtime.NumCPU(),
		},
		InferencePath:  "/weaviate",
		Modules:        slices.Clone(DefaultModules),
		ModuleKey:      "hybrank-local",
		SidecarTimeout: 5 * time.Minute,
		NodeTimeout:    3 * time.Minute,
		StopTimeout:    30 * time.Second,
	}
}

// Validate reports the first unusable option (wrapping bench.ErrBadOption);
// it does not look at the file system (Up does, naming what builds what
// is missing).
func (o Options) Validate() error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: cluster: "+format, append([]any{bench.ErrBadOption}, a...)...)
	}
	switch {
	case o.Dir == "":
		return bad("dir is empty")
	case o.WeaviateBin == "":
		return bad("weaviate binary is empty")
	case o.SidecarCommand == nil && o.ServeBin == "":
		return bad("serve binary is empty (and no sidecar command)")
	case o.SidecarCommand != nil && o.SidecarCommand.Path == "":
		return bad("sidecar command has no path")
	case o.Nodes < 1 || o.Nodes > 64:
		return bad("nodes %d: want 1-64", o.Nodes)
	case len(o.Ports) > o.Nodes:
		return bad("ports given for %d nodes, cluster has %d", len(o.Ports), o.Nodes)
	case o.InferencePath != "" && (!strings.HasPrefix(o.InferencePath, "/") || strings.HasSuffix(o.InferencePath, "/")):
		return bad("inference path %q: want empty or /PREFIX without a trailing slash", o.InferencePath)
	case o.SidecarReadyPath != "" && !strings.HasPrefix(o.SidecarReadyPath, "/"):
		return bad("sidecar ready path %q: want /PATH", o.SidecarReadyPath)
	case o.SidecarCommand == nil && (o.Sidecar.CacheMB < 0 || o.Sidecar.Threads < 0 || o.Sidecar.Pool < 0):
		return bad("sidecar cache %d MiB, threads %d, pool %d: want ≥ 0", o.Sidecar.CacheMB, o.Sidecar.Threads, o.Sidecar.Pool)
	case o.SidecarTimeout <= 0 || o.NodeTimeout <= 0 || o.StopTimeout < 0:
		return bad("timeouts: sidecar %v, node %v, stop %v", o.SidecarTimeout, o.NodeTimeout, o.StopTimeout)
	}
	for _, kv := range o.Env {
		if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
			return bad("env %q: want KEY=VALUE", kv)
		}
	}
	if err := validatePorts(o.Ports); err != nil {
		return bad("%v", err)
	}
	return nil
}

func (o Options) tiktokenDir() string {
	if o.TiktokenDir != "" {
		return o.TiktokenDir
	}
	return filepath.Join(o.Dir, "tiktoken")
}

func (o Options) statePath() string { return filepath.Join(o.Dir, StateFile) }

// checkFiles reports a missing binary, model or tokenizer file with what
// makes it.
func (o Options) checkFiles() error {
	need := func(path, what, fix string) error {
		if _, err := os.Stat(path); err != nil {
			return fmt.Errorf("%s not found at %s: %s", what, path, fix)
		}
		return nil
	}
	errs := []error{need(o.WeaviateBin, "weaviate-server", "run `make cluster` (it builds the pinned version)")}
	if o.SidecarCommand == nil {
		errs = append(errs,
			need(o.ServeBin, "hybrank serve", "run `make build`"),
			need(filepath.Join(o.Sidecar.EmbedModel, "config.json"), "embedding model", "run `make models` (the real all-MiniLM-L6-v2)"),
			need(filepath.Join(o.Sidecar.RerankModel, "config.json"), "cross-encoder", "run `bench models --out "+filepath.Dir(o.Sidecar.RerankModel)+" --profiles balanced`"),
			need(o.Sidecar.ORTLib, "ONNX Runtime", "run `make runtime`"))
	}
	if slices.Contains(o.Modules, "text2vec-openai") {
		for _, e := range TiktokenEncodings {
			errs = append(errs, need(filepath.Join(o.tiktokenDir(), TiktokenFile(e)), "text2vec-openai's "+e+" tokenizer file", "run `make cluster` (it copies it from the Go module github.com/pkoukk/tiktoken-go-loader)"))
		}
	}
	return errors.Join(errs...)
}

// State is a running cluster as its state file records it: enough to
// find every endpoint, stop exactly the processes started, and start any
// of them again as it was. Addresses and commands do not change after Up;
// the processes' PIDs change with the methods that kill and start them,
// which save the file. The methods are safe for concurrent use; read a
// node's Weaviate or Sidecar Process fields only while no method runs on
// that node.
type State struct {
	Version int `json:"version"`
	// Weaviate is the binary's module version and sum (its build info).
	Weaviate    string    `json:"weaviate"`
	WeaviateSum string    `json:"weaviate_sum"`
	Dir         string    `json:"dir"`
	Created     time.Time `json:"created"`
	Nodes       []Node    `json:"nodes"`
	// Resumed is set by Up when it found every process of the state file
	// running and started nothing.
	Resumed bool `json:"-"`

	path        string        // the state file
	stopTimeout time.Duration // grace before SIGKILL
	mu          sync.Mutex    // guards the Process fields of Nodes and the file
}

// Node is one Weaviate node and its sidecar.
type Node struct {
	Name string `json:"name"`
	// HTTP is the REST API's address (host:port; http://HTTP/v1/...),
	// GRPC the gRPC API's.
	HTTP    string  `json:"http"`
	GRPC    string  `json:"grpc"`
	Ports   Ports   `json:"ports"`
	DataDir string  `json:"data_dir"`
	Process Process `json:"process"`
	Sidecar Sidecar `json:"sidecar"`
}

// URL is the node's REST base URL.
func (n *Node) URL() string { return "http://" + n.HTTP }

// Sidecar is one node's inference sidecar.
type Sidecar struct {
	// URL is its base URL (http://127.0.0.1:PORT): /v1/embeddings,
	// /v1/rerank for text2vec-openai's and reranker-cohere's baseURL.
	URL string `json:"url"`
	// InferenceURL is what the node's transformers modules call
	// (URL + Options.InferencePath).
	InferenceURL string  `json:"inference_url"`
	Process      Process `json:"process"`
}

// ReadState reads the state file at path (ErrNoState if there is none).
// The State's methods save changes back to path.
func ReadState(path string) (*State, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%w at %s", ErrNoState, path)
	}
	if err != nil {
		return nil, fmt.Errorf("read cluster state: %w", err)
	}
	var s State
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("read cluster state %s: %w", path, err)
	}
	if s.Version != StateVersion {
		return nil, fmt.Errorf("read cluster state %s: version %d, want %d", path, s.Version, StateVersion)
	}
	s.path, s.stopTimeout = path, DefaultOptions().StopTimeout
	return &s, nil
}

// Path is the state file.
func (s *State) Path() string { return s.path }

// save writes the state file atomically; callers hold s.mu.
func (s *State) save() error {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	if err := atomicfile.WriteBytes(vfs.OS, filepath.Dir(s.path), filepath.Base(s.path), append(b, '\n')); err != nil {
		return fmt.Errorf("save cluster state: %w", err)
	}
	return nil
}

// running lists "node i" and "sidecar i" by whether each process runs.
func (s *State) running() (up, down []string) {
	for i := range s.Nodes {
		n := &s.Nodes[i]
		for _, p := range []struct {
			what string
			p    *Process
		}{{"sidecar", &n.Sidecar.Process}, {"node", &n.Process}} {
			name := fmt.Sprintf("%s %d", p.what, i)
			if p.p.Running() {
				up = append(up, name)
			} else {
				down = append(down, name)
			}
		}
	}
	return up, down
}

// Up starts the cluster of o, or finds it running: with a state file
// whose processes all run it starts nothing and returns that state
// (Resumed); with a stale one (some process gone) it stops the rest and
// starts afresh on the same data, reusing its ports where free. It starts
// one sidecar per node and waits until each is ready, then every node,
// and waits for every node's /v1/.well-known/ready. If anything fails it
// stops what it started (the logs stay) and says which log to read.
func Up(ctx context.Context, o Options) (*State, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if err := o.checkFiles(); err != nil {
		return nil, err
	}
	logf := func(format string, a ...any) {
		if o.Log != nil {
			fmt.Fprintf(o.Log, format+"\n", a...)
		}
	}
	dir, err := filepath.Abs(o.Dir)
	if err != nil {
		return nil, err
	}
	o.Dir = dir
	if err := os.MkdirAll(filepath.Join(dir, "logs"), 0o755); err != nil {
		return nil, err
	}
	lock, err := dirlock.Acquire(dir)
	if err != nil {
		return nil, err
	}
	defer lock.Release()

	var prefer []Ports
	if old, err := ReadState(o.statePath()); err == nil {
		up, down := old.running()
		if len(down) == 0 {
			old.Resumed, old.stopTimeout = true, o.StopTimeout
			logf("cluster already running (%d nodes, state %s)", len(old.Nodes), old.path)
			return old, nil
		}
		logf("stale cluster state %s: %s not running; stopping %v and starting afresh", old.path, strings.Join(down, ", "), up)
		if err := old.stopAll(o.StopTimeout); err != nil {
			return nil, err
		}
		for _, n := range old.Nodes {
			prefer = append(prefer, n.Ports)
		}
	} else if !errors.Is(err, ErrNoState) {
		return nil, err
	}

	want := make([]Ports, o.Nodes)
	copy(want, o.Ports)
	ports, err := pickPorts(want, prefer)
	if err != nil {
		return nil, fmt.Errorf("cluster ports: %w", err)
	}
	s, err := newState(o, ports)
	if err != nil {
		return nil, err
	}
	for i := range s.Nodes {
		if err := os.MkdirAll(s.Nodes[i].DataDir, 0o755); err != nil {
			return nil, err
		}
	}

	ok := false
	defer func() {
		if !ok {
			s.mu.Lock()
			s.stopAll(o.StopTimeout)
			os.Remove(s.path)
			s.mu.Unlock()
		}
	}()
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.save(); err != nil {
		return nil, err
	}

	t0 := time.Now()
	for i := range s.Nodes {
		if err := s.Nodes[i].Sidecar.Process.start(); err != nil {
			return nil, fmt.Errorf("sidecar %d: %w", i, err)
		}
		if err := s.save(); err != nil {
			return nil, err
		}
	}
	logf("started %d sidecars; waiting for them to load their models", len(s.Nodes))
	sctx, cancel := context.WithTimeout(ctx, o.SidecarTimeout)
	err = s.waitAll(sctx, s.sidecarReady)
	cancel()
	if err != nil {
		return nil, err
	}
	logf("sidecars ready in %.1fs", time.Since(t0).Seconds())

	t1 := time.Now()
	for i := range s.Nodes {
		if err := s.Nodes[i].Process.start(); err != nil {
			return nil, fmt.Errorf("node %d: %w", i, err)
		}
		if err := s.save(); err != nil {
			return nil, err
		}
	}
	logf("started %d Weaviate nodes; waiting for /v1/.well-known/ready", len(s.Nodes))
	nctx, cancel := context.WithTimeout(ctx, o.NodeTimeout)
	err = s.waitAll(nctx, s.nodeReady)
	cancel()
	if err != nil {
		return nil, err
	}
	logf("nodes ready in %.1fs (%.1fs in all)", time.Since(t1).Seconds(), time.Since(t0).Seconds())
	ok = true
	return s, nil
}

// newState lays out the cluster of o on ports: names, addresses, data
// folders, logs and every process's command.
func newState(o Options, ports []Ports) (*State, error) {
	s := &State{
		Version: StateVersion, Dir: o.Dir, Created: time.Now().UTC(),
		path: o.statePath(), stopTimeout: o.StopTimeout,
	}
	if bi, err := buildinfo.ReadFile(o.WeaviateBin); err == nil {
		s.Weaviate, s.WeaviateSum = bi.Main.Version, bi.Main.Sum
	}
	bin, err := filepath.Abs(o.WeaviateBin)
	if err != nil {
		return nil, err
	}
	tiktoken, err := filepath.Abs(o.tiktokenDir())
	if err != nil {
		return nil, err
	}
	s.Nodes = make([]Node, len(ports))
	for i, p := range ports {
		n := &s.Nodes[i]
		n.Name = "weaviate-" + strconv.Itoa(i)
		n.Ports = p
		n.HTTP = addr(p.HTTP)
		n.GRPC = addr(p.GRPC)
		n.DataDir = filepath.Join(o.Dir, "node"+strconv.Itoa(i))
		n.Sidecar.URL = "http://" + addr(p.Sidecar)
		n.Sidecar.InferenceURL = n.Sidecar.URL + o.InferencePath
		n.Sidecar.Process.Log = filepath.Join(o.Dir, "logs", "sidecar-"+strconv.Itoa(i)+".log")
		n.Process.Log = filepath.Join(o.Dir, "logs", n.Name+".log")
	}
	for i := range s.Nodes {
		n := &s.Nodes[i]
		n.Process.Command = Command{
			Path: bin,
			Args: []string{"--scheme", "http", "--host", "127.0.0.1", "--port", strconv.Itoa(n.Ports.HTTP),
				"--read-timeout=600s", "--write-timeout=600s"},
			Env:       append(nodeEnv(s.Nodes, i, o.Modules, tiktoken, o.ModuleKey), o.Env...),
			Dir:       n.DataDir,
			ReadyPath: "/v1/.well-known/ready",
		}
		cmd, err := sidecarCommand(o, i, n.Ports.Sidecar)
		if err != nil {
			return nil, err
		}
		n.Sidecar.Process.Command = cmd
	}
	return s, nil
}

func addr(port int) string { return "127.0.0.1:" + strconv.Itoa(port) }

// nodeEnv is node i's environment: Weaviate's tools/dev/run_dev_server.sh
// layout of a cluster on one host, with what that layout lacks for a
// cluster that survives restarts: bind and advertise on 127.0.0.1 (else
// memberlist advertises an address Weaviate cannot parse), every node in
// CLUSTER_JOIN (else a restarted first node waits alone), a profiling
// port per node, async replication not disabled, the modules' sidecar
// wait off (a node restarted while its sidecar is down would block in
// module init; Up waits on the sidecars itself), tiktoken's files offline,
// and the key the OpenAI and Cohere modules send (moduleKey; "" sets none).
func nodeEnv(nodes []Node, i int, modules []string, tiktokenDir, moduleKey string) []string {
	n := &nodes[i]
	var join, raftJoin []string
	for _, m := range nodes {
		join = append(join, addr(m.Ports.Gossip))
		raftJoin = append(raftJoin, m.Name+":"+strconv.Itoa(m.Ports.Raft))
	}
	p := n.Ports
	var keys []string
	if moduleKey != "" {
		keys = []string{"OPENAI_APIKEY=" + moduleKey, "COHERE_APIKEY=" + moduleKey}
	}
	return append([]string{
		"CLUSTER_HOSTNAME=" + n.Name,
		"CLUSTER_IN_LOCALHOST=true",
		"CLUSTER_BIND_ADDR=127.0.0.1",
		"CLUSTER_ADVERTISE_ADDR=127.0.0.1",
		"CLUSTER_GOSSIP_BIND_PORT=" + strconv.Itoa(p.Gossip),
		"CLUSTER_DATA_BIND_PORT=" + strconv.Itoa(p.Data),
		"CLUSTER_JOIN=" + strings.Join(join, ","),
		"RAFT_PORT=" + strconv.Itoa(p.Raft),
		"RAFT_INTERNAL_RPC_PORT=" + strconv.Itoa(p.RaftRPC),
		"RAFT_JOIN=" + strings.Join(raftJoin, ","),
		"RAFT_BOOTSTRAP_EXPECT=" + strconv.Itoa(len(nodes)),
		"GRPC_PORT=" + strconv.Itoa(p.GRPC),
		"PROMETHEUS_MONITORING_ENABLED=true",
		"PROMETHEUS_MONITORING_PORT=" + strconv.Itoa(p.Metrics),
		"GO_PROFILING_PORT=" + strconv.Itoa(p.Profiling),
		"PERSISTENCE_DATA_PATH=" + n.DataDir,
		"AUTHENTICATION_ANONYMOUS_ACCESS_ENABLED=true",
		"DEFAULT_VECTORIZER_MODULE=none",
		"ENABLE_MODULES=" + strings.Join(modules, ","),
		"TRANSFORMERS_INFERENCE_API=" + n.Sidecar.InferenceURL,
		"RERANKER_INFERENCE_API=" + n.Sidecar.InferenceURL,
		"TRANSFORMERS_WAIT_FOR_STARTUP=false",
		"RERANKER_WAIT_FOR_STARTUP=false",
		"TIKTOKEN_CACHE_DIR=" + tiktokenDir,
		// Per collection replicationConfig.asyncEnabled turns it on;
		// this keeps the server from vetoing it.
		"ASYNC_REPLICATION_DISABLED=false",
		// BM25 by classic WAND. v1.35.2 forces every new collection
		// to BlockMax WAND (usingBlockMaxWAND, not settable per
		// collection), which until its segments are compacted prunes
		// true top-k documents: memtable blocks carry max impact 0
		// (weaviate/weaviate#11780) and flushed segments are scored
		// with k1 and b transposed (#12022). On a fresh one-shard
		// collection of scifact documents its BM25 top 10 shared 0.31
		// of the engine's; with classic WAND 0.93, from the first
		// query on.
		"USE_INVERTED_SEARCHABLE=false",
		"DISABLE_TELEMETRY=true",
		"LOG_LEVEL=info",
		"LOG_FORMAT=text",
		"QUERY_DEFAULTS_LIMIT=20",
		"QUERY_MAXIMUM_RESULTS=10000",
	}, keys...)
}

// sidecarCommand is node i's sidecar: o.SidecarCommand expanded for it,
// or hybrank serve on port with the models of o.Sidecar.
func sidecarCommand(o Options, i, port int) (Command, error) {
	if o.SidecarCommand != nil {
		return expand(*o.SidecarCommand, i, port, o.Dir), nil
	}
	serve, err := filepath.Abs(o.ServeBin)
	if err != nil {
		return Command{}, err
	}
	sc := o.Sidecar
	args := []string{
		"--addr", addr(port),
		"--embed-model", sc.EmbedModel,
		"--rerank-model", sc.RerankModel,
		"--cache-mb", strconv.Itoa(sc.CacheMB),
		"--threads", strconv.Itoa(sc.Threads),
	}
	if sc.Pool > 0 {
		args = append(args, "--pool", strconv.Itoa(sc.Pool))
	}
	ready := o.SidecarReadyPath
	if ready == "" {
		ready = o.InferencePath + "/.well-known/ready"
	}
	return Command{
		Path:      serve,
		Args:      append(args, sc.Args...),
		Env:       []string{"HYBRANK_ORT_LIB=" + sc.ORTLib},
		ReadyPath: ready,
	}, nil
}

// expand fills a sidecar command template for node i on port.
func expand(c Command, i, port int, dir string) Command {
	r := strings.NewReplacer("{port}", strconv.Itoa(port), "{addr}", addr(port),
		"{url}", "http://"+addr(port), "{node}", strconv.Itoa(i), "{dir}", dir)
	each := func(v []string) []string {
		out := make([]string, len(v))
		for j, s := range v {
			out[j] = r.Replace(s)
		}
		return out
	}
	c.Path, c.Dir, c.ReadyPath = r.Replace(c.Path), r.Replace(c.Dir), r.Replace(c.ReadyPath)
	c.Args, c.Env = each(c.Args), each(c.Env)
	return c
}

// stopAll stops every process (nodes first, then sidecars; each group at
// once) and clears their PIDs; callers hold s.mu or own s.
func (s *State) stopAll(grace time.Duration) error {
	var errs []error
	for _, group := range []func(n *Node) *Process{
		func(n *Node) *Process { return &n.Process },
		func(n *Node) *Process { return &n.Sidecar.Process },
	} {
		var wg sync.WaitGroup
		errc := make([]error, len(s.Nodes))
		for i := range s.Nodes {
			wg.Go(func() { errc[i] = group(&s.Nodes[i]).stop(grace) })
		}
		wg.Wait()
		errs = append(errs, errc...)
	}
	return errors.Join(errs...)
}

// DownOptions configure Down.
type DownOptions struct {
	// Wipe removes the nodes' data folders too (logs stay).
	Wipe bool
	// StopTimeout is the grace between SIGTERM and SIGKILL (0: 30s).
	StopTimeout time.Duration
	// Log receives one line per process stopped (nil: none).
	Log io.Writer
}

// Down stops exactly the processes the state file at path records
// (SIGTERM, SIGKILL after the grace; a PID that is no longer the process
// started is left alone), then removes the state file, and with Wipe the
// data folders. ErrNoState when there is no state file.
func Down(path string, o DownOptions) error {
	if o.StopTimeout <= 0 {
		o.StopTimeout = DefaultOptions().StopTimeout
	}
	s, err := ReadState(path)
	if err != nil {
		return err
	}
	lock, err := dirlock.Acquire(filepath.Dir(path))
	if err != nil {
		return err
	}
	defer lock.Release()
	s.mu.Lock()
	defer s.mu.Unlock()
	if o.Log != nil {
		for i, n := range s.Nodes {
			for _, p := range []struct {
				what string
				p    *Process
			}{{n.Name, &n.Process}, {"sidecar " + strconv.Itoa(i), &n.Sidecar.Process}} {
				if p.p.Running() {
					fmt.Fprintf(o.Log, "stopping %s (pid %d)\n", p.what, p.p.PID)
				} else if p.p.PID != 0 {
					fmt.Fprintf(o.Log, "%s (pid %d) is not running\n", p.what, p.p.PID)
				}
			}
		}
	}
	if err := s.stopAll(o.StopTimeout); err != nil {
		s.save()
		return err
	}
	if o.Wipe {
		for _, n := range s.Nodes {
			if err := os.RemoveAll(n.DataDir); err != nil {
				return err
			}
		}
	}
	return os.Remove(path)
}

// Stop is Down for s: it stops every process and removes the state file
// (the data folders stay).
func (s *State) Stop() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.stopAll(s.stopTimeout); err != nil {
		s.save()
		return err
	}
	return os.Remove(s.path)
}

func (s *State) node(i int) (*Node, error) {
	if i < 0 || i >= len(s.Nodes) {
		return nil, fmt.Errorf("cluster: node %d of %d", i, len(s.Nodes))
	}
	return &s.Nodes[i], nil
}

// change runs f on node i's process (node or sidecar) under s.mu and
// saves the state file.
func (s *State) change(i int, sidecar bool, f func(p *Process) error) error {
	n, err := s.node(i)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	p := &n.Process
	if sidecar {
		p = &n.Sidecar.Process
	}
	err = f(p)
	return errors.Join(err, s.save())
}

// KillNode SIGKILLs Weaviate node i and returns once it has exited.
func (s *State) KillNode(i int) error {
	return s.change(i, false, func(p *Process) error { return p.stop(0) })
}

// StopNode stops node i gracefully (SIGTERM, SIGKILL after the grace).
func (s *State) StopNode(i int) error {
	return s.change(i, false, func(p *Process) error { return p.stop(s.stopTimeout) })
}

// StartNode starts node i again with the command, environment, ports
// and data it had (ErrRunning if it runs; an error naming the port if
// another process holds one of them); WaitNodeReady waits for it.
func (s *State) StartNode(i int) error {
	return s.change(i, false, func(p *Process) error {
		if p.Running() {
			return fmt.Errorf("%s: %w (pid %d)", s.Nodes[i].Name, ErrRunning, p.PID)
		}
		if err := s.Nodes[i].checkFree(); err != nil {
			return err
		}
		return p.start()
	})
}

// KillSidecar SIGKILLs node i's sidecar and returns once it has exited.
func (s *State) KillSidecar(i int) error {
	return s.change(i, true, func(p *Process) error { return p.stop(0) })
}

// StartSidecar starts node i's sidecar again with the command it had
// (ErrRunning if it runs); WaitSidecarReady waits for it.
func (s *State) StartSidecar(i int) error {
	return s.change(i, true, func(p *Process) error { return p.start() })
}

// SidecarCPU is the CPU time node i's running sidecar has used.
func (s *State) SidecarCPU(i int) (time.Duration, error) {
	n, err := s.node(i)
	if err != nil {
		return 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return n.Sidecar.Process.CPU()
}

// ReplaceSidecar stops node i's sidecar (gracefully) and starts cmd in
// its place on the same port, so the node's inference URLs reach it
// unchanged; cmd may use the placeholders of Options.SidecarCommand, and
// its ReadyPath is what WaitSidecarReady then waits on. The state file
// records cmd: StartSidecar and a later Up's restart run it.
func (s *State) ReplaceSidecar(i int, cmd Command) error {
	if cmd.Path == "" {
		return fmt.Errorf("%w: cluster: sidecar command has no path", bench.ErrBadOption)
	}
	return s.change(i, true, func(p *Process) error {
		if err := p.stop(s.stopTimeout); err != nil {
			return err
		}
		p.Command = expand(cmd, i, s.Nodes[i].Ports.Sidecar, s.Dir)
		return p.start()
	})
}

// WaitNodeReady waits until node i answers /v1/.well-known/ready with
// 2xx (and its data and gRPC ports accept connections), or fails (ErrNotReady) when it exits or ctx ends.
func (s *State) WaitNodeReady(ctx context.Context, i int) error {
	if _, err := s.node(i); err != nil {
		return err
	}
	return s.nodeReady(ctx, i)
}

// WaitSidecarReady waits until node i's sidecar answers its ready path
// with 2xx, or fails (ErrNotReady) when it exits or ctx ends.
func (s *State) WaitSidecarReady(ctx context.Context, i int) error {
	if _, err := s.node(i); err != nil {
		return err
	}
	return s.sidecarReady(ctx, i)
}

// WaitReady waits until every node is ready.
func (s *State) WaitReady(ctx context.Context) error {
	return s.waitAll(ctx, s.nodeReady)
}

func (s *State) waitAll(ctx context.Context, wait func(context.Context, int) error) error {
	errs := make([]error, len(s.Nodes))
	var wg sync.WaitGroup
	for i := range s.Nodes {
		wg.Go(func() { errs[i] = wait(ctx, i) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

func (s *State) nodeReady(ctx context.Context, i int) error {
	n := &s.Nodes[i]
	if err := waitReady(ctx, s.Nodes[i].Name, n.URL()+n.Process.Command.ReadyPath, &n.Process); err != nil {
		return err
	}
	if err := n.checkListening(); err != nil {
		return fmt.Errorf("%w: %w", ErrNotReady, err)
	}
	return nil
}

func (s *State) sidecarReady(ctx context.Context, i int) error {
	n := &s.Nodes[i]
	err := waitReady(ctx, "sidecar "+strconv.Itoa(i), n.Sidecar.URL+n.Sidecar.Process.Command.ReadyPath, &n.Sidecar.Process)
	var nf *notFoundError
	if errors.As(err, &nf) {
		return fmt.Errorf("%w: this sidecar does not serve Weaviate's inference protocols under %q "+
			"(the node's TRANSFORMERS_INFERENCE_API %s would fail); serve a build that does, or wait on another path (SidecarReadyPath, --sidecar-ready-path)", err, strings.TrimSuffix(n.Sidecar.Process.Command.ReadyPath, "/.well-known/ready"), n.Sidecar.InferenceURL)
	}
	return err
}

type notFoundError struct{ url string }

func (e *notFoundError) Error() string { return "GET " + e.url + ": 404 Not Found" }

var readyClient = &http.Client{Timeout: 2 * time.Second}

// waitReady polls url every 200ms until it answers 2xx. It fails at once
// on 404 (a server that lacks the route will not grow it) and when p has
// exited (with the end of its log).
func waitReady(ctx context.Context, what, url string, p *Process) error {
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	var last error
	for {
		// Read p's fields once per poll: the caller may hold s.mu (Up) or
		// not (WaitNodeReady); they change only by a start or stop, which
		// the caller does not run at the same time.
		if !p.Running() {
			return fmt.Errorf("%w: %s exited; the end of %s:\n%s", ErrNotReady, what, p.Log, p.logTail(15))
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		resp, err := readyClient.Do(req)
		if err == nil {
			io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
			resp.Body.Close()
			switch {
			case resp.StatusCode >= 200 && resp.StatusCode < 300: // as Weaviate's modules check it
				return nil
			case resp.StatusCode == http.StatusNotFound:
				return fmt.Errorf("%w: %s: %w", ErrNotReady, what, &notFoundError{url})
			}
			err = fmt.Errorf("GET %s: %s", url, resp.Status)
		}
		last = err
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w: %s: %w (last: %v; log %s)", ErrNotReady, what, ctx.Err(), last, p.Log)
		case <-tick.C:
		}
	}
}

// RaftLeader returns the index of the node that leads Weaviate's Raft
// cluster, as the first node that answers /v1/cluster/statistics names it
// (which fails while any node is unreachable). SIGKILLing the leader
// costs more than a follower: a write already waiting on the old leader
// hangs until Weaviate's own RPC to it gives up (about two minutes here).
func (s *State) RaftLeader(ctx context.Context) (int, error) {
	var errs []error
	for i := range s.Nodes {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.Nodes[i].URL()+"/v1/cluster/statistics", nil)
		if err != nil {
			return -1, err
		}
		resp, err := readyClient.Do(req)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		var st struct {
			Statistics []struct {
				Name     string `json:"name"`
				LeaderID string `json:"leaderId"`
			} `json:"statistics"`
		}
		err = json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&st)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			errs = append(errs, fmt.Errorf("%s /v1/cluster/statistics: %s %v", s.Nodes[i].Name, resp.Status, err))
			continue
		}
		for _, n := range st.Statistics {
			if n.LeaderID == "" {
				continue
			}
			for j := range s.Nodes {
				if s.Nodes[j].Name == n.LeaderID {
					return j, nil
				}
			}
			return -1, fmt.Errorf("cluster: raft leader %q is not a node of the state", n.LeaderID)
		}
		errs = append(errs, fmt.Errorf("%s /v1/cluster/statistics names no leader", s.Nodes[i].Name))
	}
	return -1, fmt.Errorf("cluster: raft leader: %w", errors.Join(errs...))
}

// Describe writes where everything listens, one row per node, and which
// of Weaviate's ports it binds on every interface (it offers no setting
// for them).
func (s *State) Describe(w io.Writer) {
	fmt.Fprintf(w, "Weaviate %s, %d nodes, state %s\n", s.Weaviate, len(s.Nodes), s.path)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "node\trest\tgrpc*\tgossip\tdata*\traft\traft-rpc\tmetrics*\tprofiling*\tpid\tsidecar\tsidecar pid")
	for _, n := range s.Nodes {
		p := n.Ports
		fmt.Fprintf(tw, "%s\thttp://%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%s\t%d\n", n.Name, n.HTTP, p.GRPC, p.Gossip, p.Data, p.Raft, p.RaftRPC,
			p.Metrics, p.Profiling, n.Process.PID, n.Sidecar.URL, n.Sidecar.Process.PID)
	}
	tw.Flush()
	fmt.Fprintln(w, "* listens on every interface (Weaviate binds it on \":port\"); the others listen on 127.0.0.1 only")
	if len(s.Nodes) > 0 {
		n := s.Nodes[0]
		fmt.Fprintf(w, "inference: each node's TRANSFORMERS_INFERENCE_API and RERANKER_INFERENCE_API = its sidecar + %s (node 0: %s)\n",
			strings.TrimPrefix(n.Sidecar.InferenceURL, n.Sidecar.URL), n.Sidecar.InferenceURL)
		fmt.Fprintf(w, "data %s, logs %s\n", filepath.Dir(n.DataDir), filepath.Dir(n.Process.Log))
	}
}
