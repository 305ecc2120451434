package engine_test

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"lukechampine.com/blake3"

	"github.com/hybrank/hybrank/engine"
	"github.com/hybrank/hybrank/engine/enginetest"
	"github.com/hybrank/hybrank/internal/manifest"
)

// TestOpenVersion1 opens an engine directory whose root manifest is in the
// version-1 layout (MANIFEST.json, plain JSON, the document file checked by
// BLAKE3), as written before the shared manifest package, and checks that
// the next Snapshot moves it to the current layout.
func TestOpenVersion1(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "idx")
	emb := enginetest.NewHashEmbedder(8)
	e := open(t, dir, engine.WithEmbedder(emb))
	commit(t, e, corpus...)
	if err := e.Snapshot(); err != nil {
		t.Fatal(err)
	}
	e.Close()

	raw, err := os.ReadFile(filepath.Join(dir, manifest.Name))
	if err != nil {
		t.Fatal(err)
	}
	body, err := manifest.Unseal(raw)
	if err != nil {
		t.Fatal(err)
	}
	var cur map[string]any
	if err := json.Unmarshal(body, &cur); err != nil {
		t.Fatal(err)
	}
	docs, err := os.ReadFile(filepath.Join(dir, "snap-000001", "docs.gob"))
	if err != nil {
		t.Fatal(err)
	}
	sum := blake3.Sum256(docs)
	old := map[string]any{
		"version": 1, "generation": 1, "snapshot": "snap-000001", "config": cur["config"], "has_dense": true,
		"docs": map[string]any{"name": "docs.gob", "size": len(docs), "blake3": hex.EncodeToString(sum[:]), "count": len(corpus)},
	}
	js, _ := json.MarshalIndent(old, "", "  ")
	os.WriteFile(filepath.Join(dir, "MANIFEST.json"), js, 0o644)
	os.Remove(filepath.Join(dir, manifest.Name))
	os.RemoveAll(filepath.Join(dir, "wal")) // version 1 had no log

	e2 := open(t, dir, engine.WithEmbedder(emb))
	if e2.Len() != len(corpus) {
		t.Fatalf("version-1 reopen: %d documents", e2.Len())
	}
	if d, ok := e2.Get("go1"); !ok || d.Text != corpus[0].Text {
		t.Fatalf("go1 = %+v, %v", d, ok)
	}
	if err := e2.Snapshot(); err != nil {
		t.Fatal(err)
	}
	e2.Close()
	if _, err := os.Stat(filepath.Join(dir, "MANIFEST.json")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("MANIFEST.json after a new snapshot: %v", err)
	}
	if e3 := open(t, dir, engine.WithEmbedder(emb)); e3.Len() != len(corpus) {
		t.Fatalf("after migration: %d documents", e3.Len())
	}

	// A version-1 document file that fails its BLAKE3 is corrupt.
	dir2 := filepath.Join(t.TempDir(), "idx")
	e4 := open(t, dir2)
	commit(t, e4, corpus...)
	if err := e4.Snapshot(); err != nil {
		t.Fatal(err)
	}
	e4.Close()
	os.Remove(filepath.Join(dir2, manifest.Name))
	os.RemoveAll(filepath.Join(dir2, "wal"))
	old["has_dense"] = false
	docs2, err := os.ReadFile(filepath.Join(dir2, "snap-000001", "docs.gob"))
	if err != nil {
		t.Fatal(err)
	}
	old["docs"].(map[string]any)["size"] = len(docs2) // right size, wrong digest
	old["docs"].(map[string]any)["blake3"] = hex.EncodeToString(make([]byte, 32))
	js, _ = json.Marshal(old)
	os.WriteFile(filepath.Join(dir2, "MANIFEST.json"), js, 0o644)
	if _, err := engine.Open(dir2, engine.DefaultConfig()); !errors.Is(err, engine.ErrCorrupt) {
		t.Fatalf("open with a bad BLAKE3: %v", err)
	}
}
