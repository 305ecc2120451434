package cluster

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// The fakes are this test binary re-executed (TestFakeProcess) as a
// stand-in Weaviate node or inference sidecar, so that Up, Down and the
// fault methods run real detached processes without Weaviate or models.

const fakeEnv = "HYBRANK_CLUSTER_FAKE"

// fakeSidecar is the sidecar command of the tests: this binary serving
// Weaviate's transformers protocol under /weaviate on {addr}; with
// noRoutes it answers 404 there (a serve without the protocol).
func fakeSidecar(noRoutes bool) *Command {
	env := []string{fakeEnv + "=1", "FAKE_DIR={dir}"}
	if noRoutes {
		env = append(env, "FAKE_NO_ROUTES=1")
	}
	return &Command{
		Path:      os.Args[0],
		Args:      []string{"-test.run=^TestFakeProcess$", "--", "sidecar", "{addr}"},
		Env:       env,
		ReadyPath: "/weaviate/.well-known/ready",
	}
}

// fakeWeaviate writes an executable script into dir that runs this binary
// as a fake node (Weaviate's command line is fixed, so the script puts the
// test flags in front); exitAt once makes it exit at start.
func fakeWeaviate(t *testing.T, dir string) string {
	t.Helper()
	p := filepath.Join(dir, "fake-weaviate")
	script := fmt.Sprintf("#!/bin/sh\nexec %q -test.run='^TestFakeProcess$' -- weaviate \"$@\"\n", os.Args[0])
	if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestFakeProcess is not a test: re-executed with HYBRANK_CLUSTER_FAKE set
// it serves as a fake node or sidecar until SIGTERM (or 3 minutes, so a
// test that dies leaves nothing running for long).
func TestFakeProcess(t *testing.T) {
	if os.Getenv(fakeEnv) == "" {
		t.Skip("re-executed by the lifecycle tests only")
	}
	args := flag.Args()
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, "fake: no mode")
		os.Exit(2)
	}
	var addr string
	mux := http.NewServeMux()
	switch args[0] {
	case "weaviate":
		if os.Getenv("FAKE_EXIT") != "" {
			fmt.Fprintln(os.Stderr, "fake weaviate: exiting at start as asked")
			os.Exit(3)
		}
		for i, a := range args {
			if a == "--port" && i+1 < len(args) {
				addr = "127.0.0.1:" + args[i+1]
			}
		}
		mux.HandleFunc("GET /v1/.well-known/ready", func(w http.ResponseWriter, r *http.Request) {})
		// The ports Up checks beside readiness (FAKE_NO_DATA: a node
		// whose data port bind failed, as Weaviate runs on then).
		for _, env := range []string{"CLUSTER_DATA_BIND_PORT", "GRPC_PORT"} {
			if env == "CLUSTER_DATA_BIND_PORT" && os.Getenv("FAKE_NO_DATA") != "" {
				continue
			}
			l, err := net.Listen("tcp", ":"+os.Getenv(env))
			if err != nil {
				fmt.Fprintln(os.Stderr, "fake:", err)
				os.Exit(1)
			}
			go http.Serve(l, http.NotFoundHandler())
		}
	case "sidecar":
		addr = args[1]
		if os.Getenv("FAKE_NO_ROUTES") == "" {
			mux.HandleFunc("GET /weaviate/.well-known/ready", func(w http.ResponseWriter, r *http.Request) {})
			mux.HandleFunc("GET /weaviate/.well-known/live", func(w http.ResponseWriter, r *http.Request) {})
			mux.HandleFunc("GET /weaviate/meta", func(w http.ResponseWriter, r *http.Request) {
				w.Write([]byte(`{"model":{"name":"fake-hash-embedder"}}`))
			})
			mux.HandleFunc("POST /weaviate/vectors", fakeVectors)
			mux.HandleFunc("POST /weaviate/vectors/", fakeVectors)
			mux.HandleFunc("GET /stats", func(w http.ResponseWriter, r *http.Request) {
				json.NewEncoder(w).Encode(map[string]int64{"passage": fakeCalls[0].Load(), "query": fakeCalls[1].Load()})
			})
		}
	default:
		fmt.Fprintln(os.Stderr, "fake: unknown mode", args[0])
		os.Exit(2)
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "fake:", err)
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "fake %s listening on %s\n", args[0], addr)
	srv := &http.Server{Handler: mux}
	go srv.Serve(l)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	select {
	case <-sig:
	case <-time.After(3 * time.Minute):
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	srv.Shutdown(ctx)
	cancel()
	os.Exit(0)
}

// fakeCalls counts /vectors calls by task type (passage, query): GET
// /stats tells the tests which node's modules called this sidecar.
var fakeCalls [2]atomic.Int64

// fakeVectors answers text2vec-transformers' POST /vectors with a
// deterministic 16-dimensional bag of hashed words (unit length), so
// objects sharing words are near each other.
func fakeVectors(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Text   string `json:"text"`
		Config struct {
			TaskType string `json:"task_type"`
		} `json:"config"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		w.WriteHeader(http.StatusBadRequest)
		json.NewEncoder(w).Encode(map[string]string{"error": err.Error()})
		return
	}
	if req.Config.TaskType == "query" {
		fakeCalls[1].Add(1)
	} else {
		fakeCalls[0].Add(1)
	}
	v := fakeEmbed(req.Text)
	json.NewEncoder(w).Encode(map[string]any{"text": req.Text, "vector": v, "dim": len(v)})
}

func fakeEmbed(text string) []float32 {
	v := make([]float32, 16)
	for _, w := range strings.Fields(strings.ToLower(text)) {
		h := sha256.Sum256([]byte(w))
		v[binary.LittleEndian.Uint32(h[:4])%16] += 1
	}
	var n float64
	for _, x := range v {
		n += float64(x * x)
	}
	if n == 0 {
		v[0], n = 1, 1
	}
	for i := range v {
		v[i] /= float32(math.Sqrt(n))
	}
	return v
}
