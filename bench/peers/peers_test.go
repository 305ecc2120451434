package peers_test

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/hybrank/hybrank/bench"
	"github.com/hybrank/hybrank/bench/eval"
	"github.com/hybrank/hybrank/bench/peers"
	"github.com/hybrank/hybrank/internal/artifacts"
	"github.com/hybrank/hybrank/internal/testenv"
	"github.com/hybrank/hybrank/models"
)

// installed returns a packages folder with the install marker.
func installed(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, artifacts.PeersMarker), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// call is what a fake interpreter was asked to run.
type call struct {
	dir, script string
	env         []string
	flags       map[string]string
}

// fake returns a Runner whose interpreter is script: it gets the call
// (flags parsed as --name value pairs) and returns stdout, stderr, error.
func fake(t *testing.T, script func(c call) (string, string, error)) (*peers.Runner, *[]call) {
	return fakeWith(t, peers.New, script)
}

// fakeWith is fake with the Runner built by newRunner (peers.New or
// peers.NewSystem).
func fakeWith(t *testing.T, newRunner func(peers.Config) (*peers.Runner, error), script func(c call) (string, string, error)) (*peers.Runner, *[]call) {
	t.Helper()
	var calls []call
	cfg := peers.Config{Enabled: true, Python: "python3", Dir: installed(t),
		Exec: func(ctx context.Context, dir string, env []string, name string, args ...string) ([]byte, []byte, error) {
			if name != "python3" || len(args) == 0 || len(args)%2 != 1 {
				t.Fatalf("exec %s %v", name, args)
			}
			c := call{dir: dir, script: args[0], env: env, flags: map[string]string{}}
			for i := 1; i < len(args); i += 2 {
				c.flags[strings.TrimPrefix(args[i], "--")] = args[i+1]
			}
			calls = append(calls, c)
			o, e, err := script(c)
			return []byte(o), []byte(e), err
		}}
	r, err := newRunner(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return r, &calls
}

func TestNewNeedsInstall(t *testing.T) {
	tests := []struct {
		name string
		cfg  peers.Config
		want error
	}{
		{"no marker", peers.Config{Enabled: true, Python: "python3", Dir: t.TempDir()}, peers.ErrNotInstalled},
		{"missing folder", peers.Config{Enabled: true, Python: "python3", Dir: filepath.Join(t.TempDir(), "nope")}, peers.ErrNotInstalled},
		{"no folder", peers.Config{Python: "python3"}, peers.ErrNotInstalled},
		{"no python", peers.Config{Enabled: true, Dir: installed(t)}, bench.ErrBadOption},
		{"installed", peers.Config{Enabled: true, Python: "python3", Dir: installed(t)}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := peers.New(tt.cfg)
			if !errors.Is(err, tt.want) || tt.want == nil && err != nil {
				t.Fatalf("New: %v, want %v", err, tt.want)
			}
			if errors.Is(err, peers.ErrNotInstalled) && !strings.Contains(err.Error(), "make peers") {
				t.Errorf("error does not say how to install: %v", err)
			}
		})
	}
	if c := (peers.Config{Dir: t.TempDir()}); c.Installed() == nil {
		t.Error("Installed without the marker")
	}
}

func TestRunDecodesTheLastJSONLine(t *testing.T) {
	r, calls := fake(t, func(c call) (string, string, error) {
		return "a library's banner\n{\"qps\": 12.5, \"peer\": \"x\"}\n{not json\n\n", "progress…", nil
	})
	var out struct {
		QPS  float64 `json:"qps"`
		Peer string  `json:"peer"`
	}
	dir := t.TempDir()
	if err := r.Run(context.Background(), dir, "bm25s_run.py", []string{"--k", "3"}, &out); err != nil {
		t.Fatal(err)
	}
	if out.QPS != 12.5 || out.Peer != "x" {
		t.Errorf("decoded %+v", out)
	}
	c := (*calls)[0]
	if c.dir != dir || c.script != filepath.Join(dir, "bm25s_run.py") || c.flags["k"] != "3" {
		t.Errorf("call %+v", c)
	}
	// The embedded script is the one in this folder.
	got, err := os.ReadFile(c.script)
	want, err2 := os.ReadFile("bm25s_run.py")
	if err != nil || err2 != nil || string(got) != string(want) {
		t.Errorf("script written differs from bm25s_run.py (%v, %v)", err, err2)
	}
	if i := slices.IndexFunc(c.env, func(s string) bool { return strings.HasPrefix(s, "PYTHONPATH=") }); i < 0 ||
		slices.ContainsFunc(c.env[i+1:], func(s string) bool { return strings.HasPrefix(s, "PYTHONPATH=") }) {
		t.Errorf("PYTHONPATH is not set last: %v", c.env)
	}
}

func TestRunErrors(t *testing.T) {
	exitErr := exec.Command("false").Run()
	if exitErr == nil {
		t.Skip("no `false` to make an exit error with")
	}
	tests := []struct {
		name           string
		stdout, stderr string
		err            error
		want           error
		mention        string
	}{
		{"no json line", "done\n", "", nil, peers.ErrOutput, "no JSON line"},
		{"missing module", "", "Traceback …\nModuleNotFoundError: No module named 'bm25s'\n", exitErr, peers.ErrNotInstalled, "make peers"},
		{"script failure", "", "Traceback …\nValueError: bad k\n", exitErr, exitErr, "ValueError: bad k"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, _ := fake(t, func(call) (string, string, error) { return tt.stdout, tt.stderr, tt.err })
			var out map[string]any
			err := r.Run(context.Background(), t.TempDir(), "bm25s_run.py", nil, &out)
			if !errors.Is(err, tt.want) || !strings.Contains(err.Error(), tt.mention) {
				t.Fatalf("Run: %v, want %v mentioning %q", err, tt.want, tt.mention)
			}
		})
	}
	r, _ := fake(t, func(call) (string, string, error) { return "{}", "", nil })
	if err := r.Run(context.Background(), t.TempDir(), "nope.py", nil, new(map[string]any)); err == nil {
		t.Error("unknown script ran")
	}
	// No interpreter: os/exec's own lookup, no Python needed.
	cfg := peers.Config{Enabled: true, Python: filepath.Join(t.TempDir(), "python3"), Dir: installed(t)}
	pr, err := peers.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := pr.Run(context.Background(), t.TempDir(), "bm25s_run.py", nil, new(map[string]any)); !errors.Is(err, peers.ErrNoPython) {
		t.Errorf("missing interpreter: %v", err)
	}
}

// TestBM25sReadsTheRunInTrecOrder: the run file's ties are ordered by id
// descending, as trec_eval reads them, whatever order the peer wrote.
func TestBM25sReadsTheRunInTrecOrder(t *testing.T) {
	r, calls := fake(t, func(c call) (string, string, error) {
		run := "q1\td1\t1\t2.5\nq1\td3\t2\t1.25\nq1\td9\t3\t1.25\nq2\td2\t1\t0.5\n"
		if err := os.WriteFile(c.flags["run"], []byte(run), 0o644); err != nil {
			return "", "", err
		}
		return `{"peer":"bm25s","version":"0.3.16","method":"lucene","k1":1.2,"b":0.75,"delta":0.5,"k":3,"docs":9,"queries":2,"index_s":0.5,"retrieve_s":0.01,"qps":200,"threads":1}` + "\n", "", nil
	})
	res, err := r.BM25s(context.Background(), peers.BM25sArgs{Data: "data", K: 3, Method: "lucene", K1: 1.2, B: 0.75, Delta: 0.5, Rounds: 1})
	if err != nil {
		t.Fatal(err)
	}
	want := eval.Run{"q1": {"d1", "d9", "d3"}, "q2": {"d2"}}
	if !reflect.DeepEqual(res.Run, want) || res.QPS != 200 || res.Version != "0.3.16" || res.Docs != 9 {
		t.Errorf("result %+v", res)
	}
	f := (*calls)[0].flags
	if f["method"] != "lucene" || f["k1"] != "1.2" || f["b"] != "0.75" || f["k"] != "3" || !filepath.IsAbs(f["data"]) {
		t.Errorf("flags %v", f)
	}
	if _, err := os.Stat((*calls)[0].dir); !os.IsNotExist(err) {
		t.Errorf("work folder left behind: %v", err)
	}
	for _, bad := range []string{"q1\td1\t1\n", "q1\td1\t1\tx\n"} {
		path := filepath.Join(t.TempDir(), "run.tsv")
		os.WriteFile(path, []byte(bad), 0o644)
		if _, err := peers.ReadRun(path); !errors.Is(err, peers.ErrOutput) {
			t.Errorf("ReadRun(%q): %v", bad, err)
		}
	}
}

func TestFaissRoundTripsTheFiles(t *testing.T) {
	base := [][]float32{{1, 0}, {0, 1}, {3, 4}} // normalised to 0.6, 0.8 on the way
	queries := [][]float32{{1, 0}, {0, -1}}
	r, _ := fake(t, func(c call) (string, string, error) {
		b, err := os.ReadFile(c.flags["base"])
		if err != nil || len(b) != 3*2*4 || math.Float32frombits(binary.LittleEndian.Uint32(b[16:])) != 0.6 || c.flags["dim"] != "2" {
			return "", "", fmt.Errorf("base file %v %d bytes, flags %v", err, len(b), c.flags)
		}
		var rows []string
		for i, ef := range strings.Split(c.flags["ef"], ",") {
			ids := make([]byte, 0, 2*2*8)
			for _, id := range []int64{0, 2, 1, int64(-1 - i)} {
				ids = binary.LittleEndian.AppendUint64(ids, uint64(id))
			}
			path := c.flags["out"] + ".ef" + ef + ".i64"
			if err := os.WriteFile(path, ids, 0o644); err != nil {
				return "", "", err
			}
			rows = append(rows, fmt.Sprintf(`{"ef":%s,"search_s":0.5,"qps":4,"ids":%q}`, ef, path))
		}
		return `{"version":"1.15.1","m":` + c.flags["m"] + `,"n":3,"queries":2,"dim":2,"build_s":0.1,"rows":[` + strings.Join(rows, ",") + "]}\n", "", nil
	})
	res, err := r.FaissHNSW(context.Background(), peers.FaissArgs{Base: base, Queries: queries, Normalize: true, M: 8, EfConstruction: 40, Efs: []int{16, 32}, K: 2, Rounds: 1})
	if err != nil {
		t.Fatal(err)
	}
	if res.M != 8 || res.BuildS != 0.1 || len(res.Rows) != 2 || res.Rows[1].Ef != 32 || res.Rows[1].QPS != 4 {
		t.Fatalf("result %+v", res)
	}
	if want := [][]int64{{0, 2}, {1, -2}}; !reflect.DeepEqual(res.Rows[1].IDs, want) {
		t.Errorf("ids %v, want %v", res.Rows[1].IDs, want)
	}
	if base[2][0] != 3 {
		t.Errorf("the caller's vectors were normalised: %v", base[2])
	}
	if _, err := r.FaissHNSW(context.Background(), peers.FaissArgs{Base: [][]float32{{1, 0}, {1}}, Queries: queries, Efs: []int{1}, K: 1}); err == nil {
		t.Error("ragged vectors written")
	}
}

func TestRerankRoundTripsTheFiles(t *testing.T) {
	pairs := []models.Pair{{Query: "q one", Doc: "d \"quoted\""}, {Query: "q one", Doc: "d2"}, {Query: "q two", Doc: "d3"}}
	short := false
	r, _ := fake(t, func(c call) (string, string, error) {
		b, err := os.ReadFile(c.flags["pairs"])
		if err != nil {
			return "", "", err
		}
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		var p struct{ Query, Doc string }
		if len(lines) != 3 || json.Unmarshal([]byte(lines[0]), &p) != nil || p.Doc != `d "quoted"` {
			return "", "", fmt.Errorf("pairs file %q", b)
		}
		var rows []string
		for _, bs := range strings.Split(c.flags["batch"], ",") {
			n := 3
			if short {
				n = 2
			}
			var s []byte
			for i := range n {
				s = binary.LittleEndian.AppendUint32(s, math.Float32bits(float32(i)+0.5))
			}
			path := c.flags["out"] + ".b" + bs + ".f32"
			os.WriteFile(path, s, 0o644)
			rows = append(rows, fmt.Sprintf(`{"batch":%s,"seconds":0.2,"pairs_per_s":15,"tokens":30,"padded_tokens":36,"scores":%q}`, bs, path))
		}
		return `{"peer":"onnxruntime-python","version":"1.29.0","threads":` + c.flags["threads"] + `,"pairs":3,"max_length":512,"rows":[` + strings.Join(rows, ",") + "]}\n", "", nil
	})
	a := peers.RerankArgs{ModelDir: "m", Pairs: pairs, Batches: []int{16, 32}, Threads: 2, MaxLength: 512, Rounds: 1}
	res, err := r.Rerank(context.Background(), a)
	if err != nil {
		t.Fatal(err)
	}
	if res.Version != "1.29.0" || res.Peer != peers.PeerORT || res.Threads != 2 || len(res.Rows) != 2 || res.Rows[0].PaddedTokens != 36 || !slices.Equal(res.Rows[1].Scores, []float32{0.5, 1.5, 2.5}) {
		t.Fatalf("result %+v", res)
	}
	short = true
	if _, err := r.Rerank(context.Background(), a); !errors.Is(err, peers.ErrOutput) {
		t.Errorf("short scores file: %v", err)
	}
}

// TestTorchRerankArgs runs the torch peer through NewSystem: its script
// with the device and dtype, the interpreter's own packages (no
// PYTHONPATH), and its result's device and dtype read back.
func TestTorchRerankArgs(t *testing.T) {
	t.Setenv("PYTHONPATH", "") // restored after the test
	os.Unsetenv("PYTHONPATH")
	r, calls := fakeWith(t, peers.NewSystem, func(c call) (string, string, error) {
		path := c.flags["out"] + ".b8.f32"
		var s []byte
		for range 2 {
			s = binary.LittleEndian.AppendUint32(s, math.Float32bits(1))
		}
		os.WriteFile(path, s, 0o644)
		return `{"peer":"torch","version":"2.11.0","device":"cuda","dtype":"float16","gpu":"H100","threads":1,"pairs":2,"max_length":512,"rows":[{"batch":8,"seconds":0.1,"pairs_per_s":20,"tokens":9,"padded_tokens":10,"scores":"` + path + `"}]}` + "\n", "", nil
	})
	pairs := []models.Pair{{Query: "q", Doc: "a"}, {Query: "q", Doc: "b"}}
	res, err := r.Rerank(context.Background(), peers.RerankArgs{Peer: peers.PeerTorch, ModelDir: "m", Pairs: pairs, Batches: []int{8}, Threads: 1, MaxLength: 512, Rounds: 1})
	if err != nil {
		t.Fatal(err)
	}
	c := (*calls)[0]
	if filepath.Base(c.script) != "torch_rerank.py" || c.flags["device"] != "cuda" || c.flags["dtype"] != "float16" {
		t.Errorf("call %+v", c)
	}
	if slices.ContainsFunc(c.env, func(e string) bool { return strings.HasPrefix(e, "PYTHONPATH=") }) {
		t.Error("the system interpreter got a PYTHONPATH")
	}
	if res.Peer != peers.PeerTorch || res.DType != "float16" || res.Device != "cuda" || len(res.Rows) != 1 || res.Rows[0].Scores[1] != 1 {
		t.Errorf("result %+v", res)
	}
	if _, err := r.Rerank(context.Background(), peers.RerankArgs{Peer: "jax", Pairs: pairs, Batches: []int{8}}); !errors.Is(err, bench.ErrBadOption) {
		t.Errorf("unknown peer: %v", err)
	}
}

// TestScriptsRun runs the real bm25s and faiss scripts on tiny inputs when
// `make peers` has installed them: the output formats the readers expect.
func TestScriptsRun(t *testing.T) {
	dir := testenv.NeedPeers(t)
	if testing.Short() {
		t.Skip("starts Python twice")
	}
	r, err := peers.New(peers.Config{Enabled: true, Python: "python3", Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	data := t.TempDir()
	docs := []eval.Doc{{ID: "a", Text: "the quick brown fox"}, {ID: "b", Text: "lazy dogs sleep"}, {ID: "c", Title: "Foxes", Text: "a fox jumps over dogs"}}
	qs := []eval.Query{{ID: "1", Text: "fox"}, {ID: "2", Text: "sleeping dog"}}
	if err := eval.WriteBEIR(data, docs, qs, eval.Qrels{"1": {"a": 1}, "2": {"b": 1}}); err != nil {
		t.Fatal(err)
	}
	bm, err := r.BM25s(ctx, peers.BM25sArgs{Data: data, K: 3, Method: "lucene", K1: 1.2, B: 0.75, Delta: 0.5, Rounds: 1})
	if err != nil {
		t.Fatal(err)
	}
	if bm.Docs != 3 || bm.Queries != 2 || len(bm.Run["1"]) == 0 || bm.Run["2"][0] != "b" || bm.QPS <= 0 {
		t.Errorf("bm25s %+v", bm)
	}
	base := [][]float32{{1, 0, 0}, {0, 1, 0}, {0, 0, 1}, {0.6, 0.8, 0}}
	fr, err := r.FaissHNSW(ctx, peers.FaissArgs{Base: base, Queries: [][]float32{{0, 0.1, 1}}, M: 4, EfConstruction: 8, Efs: []int{4}, K: 2, Rounds: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(fr.Rows) != 1 || !slices.Equal(fr.Rows[0].IDs[0], []int64{2, 1}) {
		t.Errorf("faiss %+v", fr)
	}
}
