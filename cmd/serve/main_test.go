package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hybrank/hybrank/engine"
	"github.com/hybrank/hybrank/server"
)

// Flags given explicitly override the config file; the others keep the
// file's values, not the defaults. The file's "engine" object is the
// index's engine.Config.
func TestParseConfigFileThenFlags(t *testing.T) {
	path := filepath.Join(t.TempDir(), "serve.json")
	file := `{"addr": "127.0.0.1:7000", "max_documents": 50, "rerank": {"max_items": 5}, "api_keys": [{"key": "f", "tenant": "file"}],
		"engine": {"durability": {"sync": "interval", "snapshot_log_bytes": 4096}}}`
	if err := os.WriteFile(path, []byte(file), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := parse([]string{"--config", path, "--max-documents", "60", "--batch-max-wait", "1ms", "--memory-index"})
	if err != nil {
		t.Fatal(err)
	}
	s := cfg.Server
	if s.Addr != "127.0.0.1:7000" || s.MaxDocuments != 60 || s.Rerank.MaxItems != 5 || s.Embed.MaxItems != server.DefaultConfig().Embed.MaxItems ||
		time.Duration(s.Rerank.MaxWait) != time.Millisecond || len(s.APIKeys) != 1 || s.APIKeys[0].Tenant != "file" || !cfg.MemoryIndex {
		t.Fatalf("config %+v", cfg)
	}
	if d := cfg.Engine.Durability; d.Sync != engine.SyncInterval || d.SnapshotLogBytes != 4096 || d.SyncInterval != engine.DefaultConfig().Durability.SyncInterval {
		t.Fatalf("engine durability %+v", d)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	if _, err := parse([]string{"--config", filepath.Join(t.TempDir(), "missing.json")}); err == nil {
		t.Fatal("missing config file: no error")
	}
}

// TestParseRefusesStrayArguments: the flag package stops at the first
// argument that is not a flag; what follows it must not be dropped
// silently ("--memory-index false --index DIR" set the in-memory index
// and never read --index). A config file may not set the provider in use
// (a report of the models, not a setting: --provider chooses).
func TestParseRefusesStrayArguments(t *testing.T) {
	dir := t.TempDir()
	for _, args := range [][]string{
		{"--memory-index", "false", "--index", dir},
		{"--embed", "false", "--addr", "0.0.0.0:9000"},
		{"--index", dir, "x", "--api-key", "k=t"},
	} {
		if _, err := parse(args); err == nil || !strings.Contains(err.Error(), "unexpected argument") {
			t.Errorf("%q: %v, want an unexpected-argument error", args, err)
		}
	}
	if cfg, err := parse([]string{"--memory-index=false", "--index", dir}); err != nil || cfg.MemoryIndex || cfg.IndexDir != dir {
		t.Errorf("--memory-index=false --index: %+v, %v", cfg, err)
	}
	path := filepath.Join(dir, "serve.json")
	if err := os.WriteFile(path, []byte(`{"provider": "cuda"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := parse([]string{"--config", path}); err == nil {
		t.Error(`a config file with "provider" was accepted (and would be ignored)`)
	}
}

// A config file lists the rerankers (rerank_models); a --rerank flag
// replaces the list.
func TestParseRerankModels(t *testing.T) {
	path := filepath.Join(t.TempDir(), "serve.json")
	file := `{"rerank_model": "balanced", "rerank_models": [{"name": "fast"}, {"name": "balanced"}, {"name": "mine", "profile": "accurate", "dir": "/models/x", "aliases": ["x"]}]}`
	if err := os.WriteFile(path, []byte(file), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := parse([]string{"--config", path})
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	rs := cfg.Server.Rerankers()
	if len(rs) != 3 || rs[0].Name != "balanced" || rs[2].Name != "mine" || rs[2].Dir != "/models/x" || rs[2].Names()[1] != "x" {
		t.Fatalf("rerankers %+v, want balanced (the default) first", rs)
	}
	cfg, err = parse([]string{"--config", path, "--rerank", "fast,balanced"})
	if err != nil {
		t.Fatal(err)
	}
	if rs := cfg.Server.Rerankers(); len(rs) != 2 || rs[0].Name != "balanced" || rs[1].Name != "fast" {
		t.Fatalf("rerankers after --rerank %+v, want balanced (rerank_model) first", rs)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	// The file's default is not in the flag's list: refused, not
	// silently given to another model.
	cfg, err = parse([]string{"--config", path, "--rerank", "accurate,fast"})
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), `rerank_model "balanced"`) {
		t.Fatalf("Validate = %v, want the stale default refused", err)
	}
}
