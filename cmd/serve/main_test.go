package main

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hybrank/hybrank/server"
)

// Flags given explicitly override the config file; the others keep the
// file's values, not the defaults.
func TestParseConfigFileThenFlags(t *testing.T) {
	path := filepath.Join(t.TempDir(), "serve.json")
	file := `{"addr": "127.0.0.1:7000", "max_documents": 50, "rerank": {"max_items": 5}, "api_keys": [{"key": "f", "tenant": "file"}]}`
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
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	if _, err := parse([]string{"--config", filepath.Join(t.TempDir(), "missing.json")}); err == nil {
		t.Fatal("missing config file: no error")
	}
}
