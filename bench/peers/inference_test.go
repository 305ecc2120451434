package peers_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hybrank/hybrank/bench"
	"github.com/hybrank/hybrank/bench/peers"
	"github.com/hybrank/hybrank/internal/testenv"
	"github.com/hybrank/hybrank/models"
	"github.com/hybrank/hybrank/models/ort"
)

func TestInferenceArgsValidate(t *testing.T) {
	tests := []struct {
		name string
		a    peers.InferenceArgs
		ok   bool
	}{
		{"both models", peers.InferenceArgs{EmbedDir: "e", RerankDir: "r", Prefix: "/weaviate", Port: 8080}, true},
		{"embedder only, root", peers.InferenceArgs{EmbedDir: "e"}, true},
		{"transformers path", peers.InferenceArgs{EmbedDir: "e", Vectorizer: peers.VectorizerHF}, true},
		{"no model", peers.InferenceArgs{Prefix: "/weaviate"}, false},
		{"prefix without slash", peers.InferenceArgs{EmbedDir: "e", Prefix: "weaviate"}, false},
		{"prefix with trailing slash", peers.InferenceArgs{EmbedDir: "e", Prefix: "/weaviate/"}, false},
		{"port", peers.InferenceArgs{EmbedDir: "e", Port: 70000}, false},
		{"threads", peers.InferenceArgs{EmbedDir: "e", Threads: -1}, false},
		{"vectorizer", peers.InferenceArgs{EmbedDir: "e", Vectorizer: "onnx"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.a.Validate()
			if tt.ok != (err == nil) || err != nil && !errors.Is(err, bench.ErrBadOption) {
				t.Fatalf("Validate: %v, want ok %v", err, tt.ok)
			}
		})
	}
}

// TestInferenceCmd: the command runs the embedded script from its folder,
// beside the modules it imports, with absolute model directories, the
// pinned packages on PYTHONPATH and the hub off.
func TestInferenceCmd(t *testing.T) {
	pkgs := installed(t)
	r, err := peers.New(peers.Config{Enabled: true, Python: "python3", Dir: pkgs, Target: "peers-weaviate"})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cmd, err := r.InferenceCmd(dir, peers.InferenceArgs{Port: 4711, Prefix: "/weaviate", EmbedDir: "emb", RerankDir: "/abs/rr", Threads: 2, Sigmoid: true})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"python3", filepath.Join(dir, peers.InferenceScript), "--host", "127.0.0.1", "--port", "4711", "--prefix", "/weaviate",
		"--threads", "2", "--device", "cpu", "--vectorizer", peers.VectorizerST, "--embed-dir", mustAbs(t, "emb"), "--rerank-dir", "/abs/rr", "--activation", "sigmoid"}
	if !slices.Equal(cmd.Args, want) || cmd.Dir != dir {
		t.Errorf("command %q in %s\nwant    %q", cmd.Args, cmd.Dir, want)
	}
	for _, f := range []string{peers.InferenceScript, "bert_weights.py", "rerank_common.py"} {
		got, err := os.ReadFile(filepath.Join(dir, f))
		src, err2 := os.ReadFile(f)
		if err != nil || err2 != nil || !bytes.Equal(got, src) {
			t.Errorf("%s not written beside the script (%v, %v)", f, err, err2)
		}
	}
	for _, e := range []string{"PYTHONPATH=" + pkgs, "PYTHONNOUSERSITE=1", "HF_HUB_OFFLINE=1"} {
		if !slices.Contains(cmd.Env, e) {
			t.Errorf("environment lacks %s", e)
		}
	}
	if _, err := r.InferenceCmd(dir, peers.InferenceArgs{}); !errors.Is(err, bench.ErrBadOption) {
		t.Errorf("no model: %v", err)
	}
	if err := (peers.Config{Dir: t.TempDir(), Target: "peers-weaviate"}).Installed(); !errors.Is(err, peers.ErrNotInstalled) ||
		!strings.Contains(err.Error(), "make peers-weaviate") || !strings.Contains(err.Error(), "HYBRANK_PEERS_WEAVIATE") {
		t.Errorf("Installed names the wrong target: %v", err)
	}
}

func mustAbs(t *testing.T, p string) string {
	t.Helper()
	a, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// TestStartInferenceFailures: a missing interpreter, and packages that
// are not there, fail the start with the errors that say so.
func TestStartInferenceFailures(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	a := peers.InferenceArgs{EmbedDir: t.TempDir()}
	r, err := peers.New(peers.Config{Enabled: true, Python: filepath.Join(t.TempDir(), "python3"), Dir: installed(t)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.StartInference(ctx, a); !errors.Is(err, peers.ErrNoPython) {
		t.Errorf("missing interpreter: %v", err)
	}
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("no python3 for the missing-package case")
	}
	r, err = peers.New(peers.Config{Enabled: true, Python: "python3", Dir: installed(t), Target: "peers-weaviate"})
	if err != nil {
		t.Fatal(err)
	}
	// An empty packages folder: torch is missing, unless the interpreter
	// has one of its own, and then the folder without config.json stops it.
	_, err = r.StartInference(ctx, a)
	if err == nil || !errors.Is(err, peers.ErrNotInstalled) && !strings.Contains(err.Error(), "no config.json") {
		t.Errorf("empty packages folder: %v", err)
	}
	if errors.Is(err, peers.ErrNotInstalled) && !strings.Contains(err.Error(), "make peers-weaviate") {
		t.Errorf("the error does not say how to install: %v", err)
	}
}

// TestInferenceServesWeaviateProtocols starts the real peer (make
// peers-weaviate) and talks to it as Weaviate's text2vec-transformers and
// reranker-transformers clients do: bodies without a Content-Type, the
// JSON they send and read. Its vectors must be hybrank's (cosine 1e-5:
// the checkpoint against hybrank's default embedder, the ONNX export of
// the same all-MiniLM-L6-v2, a text longer than the 256-token window
// included) and its rerank logits hybrank's on the balanced
// profile's weights (the least of 1e-3 and 1 % of the score range, the bar
// of bench rerank's peers). It starts PyTorch, so it runs only where
// HYBRANK_PEERS_WEAVIATE is set (make test-peers-weaviate).
func TestInferenceServesWeaviateProtocols(t *testing.T) {
	pkgs := testenv.NeedPeersWeaviate(t)
	lib := testenv.NeedORT(t)
	embedDir := testenv.NeedRealModel(t, "all-minilm-l6-v2-st")  // the checkpoint, and hybrank's import of it
	hybrankEmbed := testenv.NeedRealModel(t, "all-minilm-l6-v2") // hybrank's default: the ONNX export
	if _, err := os.Stat(filepath.Join(embedDir, "model.safetensors")); err != nil {
		t.Skipf("%s has no model.safetensors: run `make peers-weaviate`", embedDir)
	}
	rrCfg, err := models.ProfileConfig(models.ProfileBalanced)
	if err != nil {
		t.Fatal(err)
	}
	rrDir, err := rrCfg.ResolveDir()
	if err == nil {
		_, err = os.Stat(filepath.Join(rrDir, "config.json"))
	}
	if err != nil {
		t.Skipf("no balanced cross-encoder: %v", err)
	}
	rrCfg.Dir = rrDir
	r, err := peers.New(peers.Config{Enabled: true, Python: "python3", Dir: pkgs, Target: "peers-weaviate"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	p, err := r.StartInference(ctx, peers.InferenceArgs{Prefix: "/weaviate", EmbedDir: embedDir, RerankDir: rrCfg.Dir, Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := p.Close(); err != nil {
			t.Error(err)
		}
	}()
	if !strings.HasSuffix(p.URL(), "/weaviate") || p.Info.Port == 0 || p.Info.Torch == "" || p.Info.Activation != "identity" {
		t.Fatalf("info %+v", p.Info)
	}
	t.Logf("peer %+v", p.Info)
	call := func(method, path string, body any) (int, []byte) {
		t.Helper()
		var rd io.Reader
		if body != nil {
			b, _ := json.Marshal(body)
			rd = bytes.NewReader(b)
		}
		req, err := http.NewRequestWithContext(ctx, method, p.URL()+path, rd) // no Content-Type, as Weaviate's clients send
		if err != nil {
			t.Fatal(err)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, b
	}
	for _, path := range []string{"/.well-known/live", "/.well-known/ready"} {
		if code, _ := call("GET", path, nil); code != http.StatusNoContent {
			t.Errorf("GET %s: %d, want 204", path, code)
		}
	}
	code, b := call("GET", "/meta", nil)
	var meta struct {
		Model     map[string]any `json:"model"`
		ModelPath string         `json:"model_path"`
		Reranker  struct {
			Model map[string]any `json:"model"`
		} `json:"reranker"`
	}
	if code != 200 || json.Unmarshal(b, &meta) != nil || meta.ModelPath == "" || meta.Model["model_type"] != "bert" || meta.Reranker.Model["num_labels"] == nil {
		t.Errorf("meta %d %s", code, b)
	}

	// Vectors: the texts, hybrank's bi-encoder on the same weights.
	long := strings.Repeat("Cross-encoders rescore candidate passages; methylation alters expression. ", 40)
	texts := []string{"What is BM25?", "A fox jumps over the lazy dog. Then it sleeps.", "Ünïcödé — naïve café", long}
	embCfg, err := models.ProfileConfig(models.ProfileEmbed)
	if err != nil {
		t.Fatal(err)
	}
	embCfg.Dir, embCfg.Provider, embCfg.IntraOpThreads, embCfg.LibraryPath = hybrankEmbed, "cpu", 1, lib
	embCfg.CalibrationCache = models.CalibrationCacheOff // nothing written into the shared model folders
	be, err := ort.NewBiEncoder(embCfg)
	if err != nil {
		t.Fatal(err)
	}
	defer be.Close()
	want, err := be.Embed(ctx, models.InputDocument, texts)
	if err != nil {
		t.Fatal(err)
	}
	type vecResponse struct {
		Text   string    `json:"text"`
		Vector []float32 `json:"vector"`
		Dim    int       `json:"dim"`
		Error  string    `json:"error"`
	}
	for i, text := range texts {
		for _, path := range []string{"/vectors", "/vectors/"} {
			code, b := call("POST", path, map[string]any{"text": text, "config": map[string]any{"pooling_strategy": "masked_mean", "task_type": "passage"}})
			var v vecResponse
			if code != 200 || json.Unmarshal(b, &v) != nil || v.Text != text || v.Dim != len(v.Vector) || v.Dim != be.Dim() {
				t.Fatalf("POST %s %q: %d %.300s", path, text[:min(len(text), 40)], code, b)
			}
			if c := cosine(v.Vector, want[i]); c < 1-1e-5 {
				t.Errorf("text %d: cosine %.8f with hybrank's vector, want >= 1 - 1e-5", i, c)
			}
			if math.Abs(norm(v.Vector)-1) > 1e-5 {
				t.Errorf("text %d: norm %v, want a unit vector", i, norm(v.Vector))
			}
		}
	}
	code, b = call("POST", "/vectors", map[string]any{"text": texts[0], "config": map[string]any{"task_type": "query", "dimensions": 8}})
	var q vecResponse
	if code != 200 || json.Unmarshal(b, &q) != nil || q.Dim != 8 || math.Abs(norm(q.Vector)-1) > 1e-5 {
		t.Errorf("query with dimensions 8: %d %s", code, b)
	}
	if code, b := call("POST", "/vectors", map[string]any{"txt": "x"}); code != http.StatusUnprocessableEntity || !bytes.Contains(b, []byte(`"detail"`)) {
		t.Errorf("body without text: %d %s", code, b)
	}

	// Rerank: documents in input order, hybrank's logits.
	query := "how do cross-encoders score passages"
	docs := []string{"A cross-encoder reads the query and the passage together.", "HNSW is a graph index.", long, "BM25 ranks by term frequency."}
	code, b = call("POST", "/rerank", map[string]any{"query": query, "documents": docs})
	var rr struct {
		Query  string `json:"query"`
		Scores []struct {
			Document string  `json:"document"`
			Score    float64 `json:"score"`
		} `json:"scores"`
		Property *string  `json:"property"`
		Score    *float64 `json:"score"`
	}
	if code != 200 || json.Unmarshal(b, &rr) != nil || rr.Query != query || len(rr.Scores) != len(docs) || rr.Property != nil || rr.Score != nil {
		t.Fatalf("rerank: %d %.500s", code, b)
	}
	rrCfg.Provider, rrCfg.IntraOpThreads, rrCfg.LibraryPath = "cpu", 1, lib
	rrCfg.CalibrationCache = models.CalibrationCacheOff
	ce, err := ort.NewCrossEncoder(rrCfg)
	if err != nil {
		t.Fatal(err)
	}
	defer ce.Close()
	logits, err := ce.Score(ctx, query, docs)
	if err != nil {
		t.Fatal(err)
	}
	lo, hi := slices.Min(logits), slices.Max(logits)
	bar := min(1e-3, 0.01*float64(hi-lo))
	for i, s := range rr.Scores {
		if s.Document != docs[i] {
			t.Errorf("score %d is for %q, want %q", i, s.Document, docs[i])
		}
		if d := math.Abs(s.Score - float64(logits[i])); d > bar {
			t.Errorf("document %d: peer %v, hybrank %v: |Δ| %.2g > %.2g", i, s.Score, logits[i], d, bar)
		}
	}
	code, b = call("POST", "/rerank", map[string]any{"query": query, "property": docs[0]})
	var one struct {
		Property string          `json:"property"`
		Score    float64         `json:"score"`
		Scores   json.RawMessage `json:"scores"`
	}
	if code != 200 || json.Unmarshal(b, &one) != nil || one.Property != docs[0] || string(one.Scores) != "null" || math.Abs(one.Score-rr.Scores[0].Score) > 1e-5 {
		t.Errorf("rerank of one property: %d %s", code, b)
	}
}

func cosine(a, b []float32) float64 {
	var ab, aa, bb float64
	for i := range a {
		ab += float64(a[i]) * float64(b[i])
		aa += float64(a[i]) * float64(a[i])
		bb += float64(b[i]) * float64(b[i])
	}
	return ab / math.Sqrt(aa*bb)
}

func norm(a []float32) float64 {
	var s float64
	for _, x := range a {
		s += float64(x) * float64(x)
	}
	return math.Sqrt(s)
}
