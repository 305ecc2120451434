package peers

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hybrank/hybrank/bench"
	"github.com/hybrank/hybrank/internal/artifacts"
)

// InferenceScript is the Weaviate inference peer: Weaviate's
// text2vec-transformers and reranker-transformers containers reproduced
// (FastAPI, sentence-transformers), served by uvicorn until stopped.
const InferenceScript = "weaviate_inference.py"

// Vectorizers of weaviate_inference.py: the containers' two code paths.
const (
	// VectorizerST is SentenceTransformer.encode_query/encode_document
	// with the model's own pooling, normalised.
	VectorizerST = "sentence-transformers"
	// VectorizerHF is AutoModel with masked-mean or CLS pooling per
	// request (direct tokenisation, at most 500 tokens), not normalised.
	VectorizerHF = "transformers"
)

// InferenceArgs is the command line of weaviate_inference.py. At least one
// of EmbedDir and RerankDir is needed.
type InferenceArgs struct {
	// Host and Port are where it listens: "" is 127.0.0.1, 0 a free port
	// (Inference.Info.Port says which).
	Host string
	Port int
	// Prefix is the path prefix of every route, e.g. "/weaviate" (a
	// leading slash, none trailing); "" serves them at the root.
	Prefix string
	// EmbedDir is a sentence-transformers model directory (config.json,
	// model.safetensors, modules.json, tokenizer): /vectors.
	EmbedDir string
	// RerankDir is a hybrank cross-encoder directory (config.json,
	// tokenizer, onnx/model.onnx with Hugging Face parameter names): its
	// weights in sentence-transformers' CrossEncoder answer /rerank.
	RerankDir string
	// Threads is torch's intra-op thread count (0: torch's default).
	Threads int
	// Device is torch's device, "" cpu ("cuda" on a GPU machine).
	Device string
	// Vectorizer is VectorizerST ("" too) or VectorizerHF.
	Vectorizer string
	// QueryPassagePrefixes prepends "query: " or "passage: " to each text,
	// as the container's USE_QUERY_PASSAGE_PREFIXES does (e5 models).
	QueryPassagePrefixes bool
	// Sigmoid answers sigmoid(logit) per document instead of the logit
	// (the container's model, ms-marco-MiniLM-L-6-v2, answers logits).
	Sigmoid bool
}

// Validate checks the arguments without looking at the file system.
func (a InferenceArgs) Validate() error {
	bad := func(format string, v ...any) error {
		return fmt.Errorf("%w: peers: inference: %s", bench.ErrBadOption, fmt.Sprintf(format, v...))
	}
	switch {
	case a.EmbedDir == "" && a.RerankDir == "":
		return bad("need an embedding model directory, a cross-encoder directory or both")
	case a.Port < 0 || a.Port > 65535:
		return bad("port %d", a.Port)
	case a.Prefix != "" && (!strings.HasPrefix(a.Prefix, "/") || strings.HasSuffix(a.Prefix, "/")):
		return bad("prefix %q (want a path like /weaviate: a leading slash, none trailing)", a.Prefix)
	case a.Threads < 0:
		return bad("threads %d", a.Threads)
	case a.Vectorizer != "" && a.Vectorizer != VectorizerST && a.Vectorizer != VectorizerHF:
		return bad("vectorizer %q (want %s or %s)", a.Vectorizer, VectorizerST, VectorizerHF)
	}
	return nil
}

// args is the script's command line; directories are made absolute, as
// the script runs from another folder.
func (a InferenceArgs) args() ([]string, error) { return a.argsOn(strconv.Itoa(a.Port)) }

// argsOn is args with the port as given: a number, or a placeholder that
// the caller substitutes (InferenceCommand).
func (a InferenceArgs) argsOn(port string) ([]string, error) {
	args := []string{"--host", cmp.Or(a.Host, "127.0.0.1"), "--port", port, "--prefix", a.Prefix,
		"--threads", strconv.Itoa(a.Threads), "--device", cmp.Or(a.Device, "cpu"), "--vectorizer", cmp.Or(a.Vectorizer, VectorizerST)}
	for _, d := range []struct{ flag, dir string }{{"--embed-dir", a.EmbedDir}, {"--rerank-dir", a.RerankDir}} {
		if d.dir == "" {
			continue
		}
		abs, err := filepath.Abs(d.dir)
		if err != nil {
			return nil, fmt.Errorf("peers: inference: %w", err)
		}
		args = append(args, d.flag, abs)
	}
	if a.QueryPassagePrefixes {
		args = append(args, "--query-passage-prefixes")
	}
	if a.Sigmoid {
		args = append(args, "--activation", "sigmoid")
	}
	return args, nil
}

// InferenceCmd writes the scripts into dir and returns the command that
// runs the peer from there with the Runner's interpreter and packages, not
// started: for a caller that owns the process (make cluster starts it
// detached and keeps its PID). dir must outlive the process.
func (r *Runner) InferenceCmd(dir string, a InferenceArgs) (*exec.Cmd, error) {
	if err := a.Validate(); err != nil {
		return nil, err
	}
	args, err := a.args()
	if err != nil {
		return nil, err
	}
	if err := writeScripts(dir); err != nil {
		return nil, err
	}
	cmd := exec.Command(r.cfg.Python, append([]string{filepath.Join(dir, InferenceScript)}, args...)...)
	cmd.Dir = dir
	cmd.Env, _ = r.env()
	// Models come from the directories given, never from a hub.
	cmd.Env = append(cmd.Env, "HF_HUB_OFFLINE=1", "TRANSFORMERS_OFFLINE=1")
	return cmd, nil
}

// InferenceCommand is the peer's command line run from the module's own
// copy of the script (bench/peers/weaviate_inference.py), with port as
// given (a number, or a placeholder the caller substitutes, as the
// cluster's sidecar commands do), and the variables its packages need (to
// add to the caller's environment): for a caller that starts and restarts
// it itself; it checks no install (Runner does). a.Port is ignored.
func (c Config) InferenceCommand(a InferenceArgs, port string) (path string, args, env []string, err error) {
	a.Port = 0
	if err := a.Validate(); err != nil {
		return "", nil, nil, err
	}
	args, err = a.argsOn(port)
	if err != nil {
		return "", nil, nil, err
	}
	script := filepath.Join(artifacts.ModuleRoot(), "bench", "peers", InferenceScript)
	env = []string{"PYTHONDONTWRITEBYTECODE=1", "HF_HUB_OFFLINE=1", "TRANSFORMERS_OFFLINE=1"}
	if c.Dir != "" {
		env = append(env, "PYTHONPATH="+c.Dir, "PYTHONNOUSERSITE=1")
	}
	return c.Python, append([]string{script}, args...), env, nil
}

// InferenceInfo is the JSON line weaviate_inference.py prints once its
// models are loaded and its socket is bound.
type InferenceInfo struct {
	// Listening is the base URL, prefix included.
	Listening            string `json:"listening"`
	Port                 int    `json:"port"`
	Prefix               string `json:"prefix"`
	Vectorizer           string `json:"vectorizer"`
	Activation           string `json:"activation"`
	Threads              int    `json:"threads"`
	Device               string `json:"device"`
	Torch                string `json:"torch"`
	SentenceTransformers string `json:"sentence_transformers"`
	Transformers         string `json:"transformers"`
	FastAPI              string `json:"fastapi"`
	Uvicorn              string `json:"uvicorn"`
}

// Inference is a running weaviate_inference.py started by StartInference.
// Its methods are safe for concurrent use.
type Inference struct {
	// Info is the peer's JSON line; Info.Listening its base URL.
	Info InferenceInfo

	cmd    *exec.Cmd
	dir    string
	stderr *tailBuffer
	done   chan struct{} // closed once the process has exited
	// waitErr is cmd.Wait's result, set before done is closed.
	waitErr error

	closeOnce sync.Once
	closeErr  error
}

// StartInference starts weaviate_inference.py and returns once its models
// are loaded and /.well-known/ready answers 204, or ctx ends (then the
// process is killed). ctx bounds the start only; the peer runs until
// Close or Kill. A missing interpreter wraps ErrNoPython, a missing
// package ErrNotInstalled; a peer that exits during start fails with the
// end of its stderr.
func (r *Runner) StartInference(ctx context.Context, a InferenceArgs) (*Inference, error) {
	dir, err := workDir()
	if err != nil {
		return nil, err
	}
	cmd, err := r.InferenceCmd(dir, a)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("peers: inference: %w", err)
	}
	p := &Inference{cmd: cmd, dir: dir, stderr: &tailBuffer{}, done: make(chan struct{})}
	cmd.Stderr = p.stderr
	if err := cmd.Start(); err != nil {
		os.RemoveAll(dir)
		if notStarted(err) {
			return nil, fmt.Errorf("%w: %q (install python3, or set the peers' Python): %v", ErrNoPython, r.cfg.Python, err)
		}
		return nil, fmt.Errorf("peers: inference: %w", err)
	}
	info := make(chan InferenceInfo, 1)
	go func() {
		// The first JSON line with a URL is the peer's; the rest of stdout
		// is drained so that the peer never blocks on a full pipe.
		sc := bufio.NewScanner(stdout)
		sent := false
		for sc.Scan() {
			var in InferenceInfo
			if l := bytes.TrimSpace(sc.Bytes()); !sent && len(l) > 0 && l[0] == '{' && json.Unmarshal(l, &in) == nil && in.Listening != "" {
				info <- in
				sent = true
			}
		}
	}()
	go func() {
		p.waitErr = cmd.Wait()
		close(p.done)
	}()
	fail := func(err error) (*Inference, error) {
		p.Close()
		return nil, err
	}
	select {
	case p.Info = <-info:
	case <-p.done:
		return fail(p.exitError(r))
	case <-ctx.Done():
		return fail(fmt.Errorf("peers: inference: start: %w", ctx.Err()))
	}
	ready := p.Info.Listening + "/.well-known/ready"
	for {
		if err := probe(ctx, ready); err == nil {
			return p, nil
		}
		select {
		case <-p.done:
			return fail(p.exitError(r))
		case <-ctx.Done():
			return fail(fmt.Errorf("peers: inference: %s not ready: %w", ready, ctx.Err()))
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// probe is one readiness check: nil for a 2xx answer.
func probe(ctx context.Context, url string) error {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	res.Body.Close()
	if res.StatusCode/100 != 2 {
		return fmt.Errorf("status %d", res.StatusCode)
	}
	return nil
}

// exitError describes a peer that exited during start.
func (p *Inference) exitError(r *Runner) error {
	_, where := r.env()
	msg := p.stderr.String()
	if strings.Contains(msg, "ModuleNotFoundError") || strings.Contains(msg, "No module named") {
		return fmt.Errorf("%w: %s: a package is missing from %s\n%s", ErrNotInstalled, InferenceScript, where, msg)
	}
	return fmt.Errorf("peer %s exited during start: %v\n%s", InferenceScript, p.waitErr, msg)
}

// URL is the peer's base URL, prefix included (Info.Listening).
func (p *Inference) URL() string { return p.Info.Listening }

// Pid is the peer's process id.
func (p *Inference) Pid() int { return p.cmd.Process.Pid }

// Stderr is the end of what the peer wrote on stderr (its logs and
// tracebacks).
func (p *Inference) Stderr() string { return p.stderr.String() }

// Kill sends SIGKILL, as a crash would, and waits for the process to
// exit; Close still removes its folder.
func (p *Inference) Kill() error {
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("peers: inference: kill: %w", err)
	}
	<-p.done
	return nil
}

// Close stops the peer (SIGTERM: uvicorn's graceful shutdown; SIGKILL
// after 10 s), waits for it and removes its folder. It is safe to call
// more than once; an exit caused by the signal is not an error.
func (p *Inference) Close() error {
	p.closeOnce.Do(func() {
		if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
			p.closeErr = fmt.Errorf("peers: inference: stop: %w", err)
		}
		select {
		case <-p.done:
		case <-time.After(10 * time.Second):
			p.cmd.Process.Kill()
			<-p.done
		}
		var exit *exec.ExitError
		if p.waitErr != nil && !errors.As(p.waitErr, &exit) {
			p.closeErr = errors.Join(p.closeErr, fmt.Errorf("peers: inference: %w", p.waitErr))
		}
		if err := os.RemoveAll(p.dir); err != nil {
			p.closeErr = errors.Join(p.closeErr, fmt.Errorf("peers: inference: %w", err))
		}
	})
	return p.closeErr
}

// tailBuffer keeps the last 16 KiB written to it.
type tailBuffer struct {
	mu sync.Mutex // guards b
	b  []byte
}

const tailMax = 16 << 10

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > tailMax {
		t.b = append(t.b[:0], t.b[len(t.b)-tailMax:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return tail(t.b)
}
