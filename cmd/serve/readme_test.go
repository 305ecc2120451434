package main

import (
	"bufio"
	"context"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hybrank/hybrank/internal/artifacts"
	"github.com/hybrank/hybrank/internal/testenv"
	"github.com/hybrank/hybrank/models"
	"github.com/hybrank/hybrank/models/bertgen"
	"github.com/hybrank/hybrank/models/ort"
	"github.com/hybrank/hybrank/server"
	"github.com/hybrank/hybrank/server/backend"
)

// readmeCurls returns the curl lines of the README's HTTP endpoint
// section, in order.
func readmeCurls(t *testing.T) []string {
	t.Helper()
	f, err := os.Open(filepath.Join(artifacts.ModuleRoot(), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "## "):
			in = line == "## HTTP endpoint"
		case in && strings.HasPrefix(line, "curl "):
			out = append(out, line)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(out) < 5 {
		t.Fatalf("found %d curl examples in the README's HTTP endpoint section", len(out))
	}
	return out
}

// TestReadmeExamples serves what the README's serve line serves (the
// balanced and fast rerankers, balanced the default, an embedder, an
// in-memory index; generated cross-encoder weights, the real embedder when
// make models has run) and
// runs every curl example of the README against it through sh: each must
// exit 0 and answer 200 with a JSON body that is not an error (the
// /metrics line: its text).
func TestReadmeExamples(t *testing.T) {
	testenv.NeedORT(t)
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("no curl on PATH")
	}
	vocab, tok := testenv.NeedVocabTxt(t), testenv.NeedTokenizerJSON(t)
	root := t.TempDir()
	cfg := backend.DefaultConfig()
	cfg.MemoryIndex, cfg.Provider, cfg.Threads = true, "cpu", 1
	for _, m := range []struct {
		profile string
		arch    bertgen.Config
	}{{models.ProfileBalanced, bertgen.MiniLML6CrossEncoder()}, {models.ProfileFast, bertgen.TinyBERTL2CrossEncoder()}} {
		dir := filepath.Join(root, m.profile)
		if err := bertgen.Write(dir, m.arch, vocab, tok); err != nil {
			t.Fatal(err)
		}
		cfg.Server.RerankModels = append(cfg.Server.RerankModels, server.RerankerConfig{Name: m.profile, Dir: dir})
	}
	cfg.EmbedDir = filepath.Join(artifacts.RealModels(), "all-minilm-l6-v2")
	if _, err := os.Stat(cfg.EmbedDir); err != nil {
		cfg.EmbedDir = filepath.Join(root, "embed")
		if err := bertgen.Write(cfg.EmbedDir, bertgen.MiniLML6Embedder(), vocab, tok); err != nil {
			t.Fatal(err)
		}
	}
	b, err := backend.Open(cfg, ort.NewCrossEncoder, ort.NewBiEncoder)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx, cancel := context.WithCancel(context.Background())
	if err := b.Warm(ctx); err != nil {
		t.Fatal(err)
	}
	s, err := server.New(b.ServerConfig(), b.Services())
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	addr := ln.Addr().String()
	for _, line := range readmeCurls(t) {
		cmdline := strings.ReplaceAll(line, "localhost:8080", addr)
		piped := strings.Contains(cmdline, " | ")
		if !piped {
			// The status code follows the body on a line of its own.
			cmdline = strings.Replace(cmdline, "curl -s", `curl -s -w '\n%{http_code}'`, 1)
		}
		cctx, ccancel := context.WithTimeout(ctx, 60*time.Second)
		out, err := exec.CommandContext(cctx, "sh", "-c", cmdline).Output()
		ccancel()
		if err != nil {
			t.Fatalf("%s: %v\n%s", line, err, out)
		}
		if piped {
			if len(strings.TrimSpace(string(out))) == 0 {
				t.Fatalf("%s: no output", line)
			}
			continue
		}
		text := strings.TrimRight(string(out), "\n")
		i := strings.LastIndexByte(text, '\n')
		body, code := text[:max(i, 0)], text[i+1:]
		if n, _ := strconv.Atoi(code); n != 200 {
			t.Fatalf("%s: status %s: %s", line, code, body)
		}
		var v any
		if err := json.Unmarshal([]byte(body), &v); err != nil {
			t.Fatalf("%s: not JSON (%v): %s", line, err, body)
		}
		if m, ok := v.(map[string]any); ok && m["error"] != nil {
			t.Fatalf("%s: error body %s", line, body)
		}
	}
}
