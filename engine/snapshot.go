package engine

import (
	"bytes"
	"encoding/gob"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"lukechampine.com/blake3"

	"github.com/hybrank/hybrank/analysis"
	"github.com/hybrank/hybrank/dense"
	"github.com/hybrank/hybrank/internal/atomicfile"
	"github.com/hybrank/hybrank/postings"
)

// FormatVersion is the version of the engine's snapshot layout. Open refuses
// a manifest with a newer version.
const FormatVersion = 1

const (
	manifestName = "MANIFEST.json"
	snapPrefix   = "snap-"
	docsName     = "docs.gob"
	lexicalDir   = "lexical"
	denseDir     = "dense"
)

// manifest is the engine's root file; it is written last, so the snapshot it
// names is complete whenever the manifest exists.
type manifest struct {
	Version    int    `json:"version"`
	Generation uint64 `json:"generation"`
	Snapshot   string `json:"snapshot"`
	Config     Config `json:"config"`
	Docs       struct {
		Name   string `json:"name"`
		Size   int64  `json:"size"`
		Blake3 string `json:"blake3"`
		Count  int    `json:"count"`
	} `json:"docs"`
	HasDense bool `json:"has_dense"`
}

// storedRecord is the on-disk form of a record (terms are re-derived).
type storedRecord struct {
	Doc Document
	Vec []float32
}

// Snapshot writes the whole engine (lexical index, dense index, document
// store and index configuration) into a new generation directory under the
// engine's dir, then the manifest that names it, each file through a temp
// file, fsync, rename and a directory fsync. A crash at any point leaves the
// previous snapshot or the new one readable by Open; older generations are
// removed only after the new manifest is durable. Searches keep running;
// Commits wait.
func (e *Engine) Snapshot() (err error) {
	if e.dir == "" {
		return ErrNoDir
	}
	e.commitMu.Lock()
	defer e.commitMu.Unlock()
	e.mu.RLock()
	defer e.mu.RUnlock()
	if e.closed {
		return ErrClosed
	}
	if e.broken != nil {
		return fmt.Errorf("snapshot: %w", e.broken)
	}
	if err := os.MkdirAll(e.dir, 0o755); err != nil {
		return fmt.Errorf("snapshot: %w", err)
	}
	var m manifest
	m.Version = FormatVersion
	m.Generation = 1
	if old, err := readManifest(e.dir); err == nil {
		m.Generation = old.Generation + 1
	}
	m.Snapshot = fmt.Sprintf("%s%06d", snapPrefix, m.Generation)
	m.Config = e.cfg
	snap := filepath.Join(e.dir, m.Snapshot)
	// A directory of this name can only be a leftover of a crashed attempt
	// (the manifest names an older one).
	if err := os.RemoveAll(snap); err != nil {
		return fmt.Errorf("snapshot: %w", err)
	}
	if err := os.MkdirAll(snap, 0o755); err != nil {
		return fmt.Errorf("snapshot: %w", err)
	}
	if err := e.lex.Save(filepath.Join(snap, lexicalDir)); err != nil {
		return fmt.Errorf("snapshot: lexical: %w", err)
	}
	if e.vec != nil {
		m.HasDense = true
		if err := e.vec.Save(filepath.Join(snap, denseDir)); err != nil {
			return fmt.Errorf("snapshot: dense: %w", err)
		}
	}
	m.Docs.Name, m.Docs.Count = docsName, len(e.docs)
	size, sum, err := writeAtomic(snap, docsName, e.writeDocs)
	if err != nil {
		return fmt.Errorf("snapshot: documents: %w", err)
	}
	m.Docs.Size, m.Docs.Blake3 = size, sum
	if err := atomicfile.SyncDir(snap); err != nil {
		return fmt.Errorf("snapshot: %w", err)
	}
	js, err := json.MarshalIndent(&m, "", "  ")
	if err != nil {
		return fmt.Errorf("snapshot: manifest: %w", err)
	}
	if _, _, err := writeAtomic(e.dir, manifestName, func(w io.Writer) error { _, err := w.Write(js); return err }); err != nil {
		return fmt.Errorf("snapshot: manifest: %w", err)
	}
	removeStale(e.dir, m.Snapshot)
	return nil
}

// writeDocs gob-encodes the store in ID order (so equal stores give equal
// files).
func (e *Engine) writeDocs(w io.Writer) error {
	ids := make([]string, 0, len(e.docs))
	for id := range e.docs {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	enc := gob.NewEncoder(w)
	if err := enc.Encode(len(ids)); err != nil {
		return err
	}
	for _, id := range ids {
		r := e.docs[id]
		if err := enc.Encode(storedRecord{Doc: r.doc, Vec: r.vec}); err != nil {
			return err
		}
	}
	return nil
}

// removeStale deletes generation directories other than keep and temp files.
func removeStale(dir, keep string) {
	ents, _ := os.ReadDir(dir)
	for _, ent := range ents {
		n := ent.Name()
		if (strings.HasPrefix(n, snapPrefix) && n != keep) || strings.HasSuffix(n, ".tmp") {
			os.RemoveAll(filepath.Join(dir, n))
		}
	}
}

func readManifest(dir string) (*manifest, error) {
	b, err := os.ReadFile(filepath.Join(dir, manifestName))
	if err != nil {
		return nil, err
	}
	var m manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("%w: manifest: %v", ErrCorrupt, err)
	}
	return &m, nil
}

// load opens the snapshot in dir; it reports false when there is none.
func (e *Engine) load(dir string) (bool, error) {
	m, err := readManifest(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if m.Version > FormatVersion || m.Version < 1 {
		return false, fmt.Errorf("%w: format version %d, this build reads 1..%d", ErrCorrupt, m.Version, FormatVersion)
	}
	if strings.ContainsAny(m.Snapshot, `/\`) || !strings.HasPrefix(m.Snapshot, snapPrefix) {
		return false, fmt.Errorf("%w: manifest names snapshot %q", ErrCorrupt, m.Snapshot)
	}
	e.cfg.Analysis, e.cfg.Postings, e.cfg.Dense = m.Config.Analysis, m.Config.Postings, m.Config.Dense
	if err := e.cfg.Validate(); err != nil {
		return false, fmt.Errorf("%w: stored config: %w", ErrCorrupt, err)
	}
	a, err := analysis.New(e.cfg.Analysis)
	if err != nil {
		return false, fmt.Errorf("%w: stored analysis config: %w", ErrCorrupt, err)
	}
	if a.Version() != e.cfg.Postings.AnalyzerVersion {
		return false, fmt.Errorf("%w: analyzer version %q, index built with %q", ErrCorrupt, a.Version(), e.cfg.Postings.AnalyzerVersion)
	}
	e.analyzer = a
	snap := filepath.Join(dir, m.Snapshot)
	lex, err := postings.Open(filepath.Join(snap, lexicalDir), e.cfg.Postings)
	if err != nil {
		return false, fmt.Errorf("lexical: %w", err)
	}
	e.lex = lex
	if m.HasDense {
		v, err := dense.Open(filepath.Join(snap, denseDir))
		if err != nil {
			return false, fmt.Errorf("dense: %w", err)
		}
		e.vec = v
		e.cfg.Dense = v.Config()
		if e.embedder != nil && e.embedder.Dim() != e.cfg.Dense.Dim {
			v.Close()
			return false, fmt.Errorf("%w: snapshot vectors have dim %d, embedder %d", ErrInvalidConfig, e.cfg.Dense.Dim, e.embedder.Dim())
		}
	} else if e.embedder != nil {
		e.cfg.Dense.Dim = e.embedder.Dim()
		v, err := dense.New(e.cfg.Dense)
		if err != nil {
			return false, fmt.Errorf("%w: dense: %w", ErrInvalidConfig, err)
		}
		e.vec = v
	}
	if err := e.readDocs(snap, m); err != nil {
		if e.vec != nil {
			e.vec.Close()
		}
		return false, err
	}
	return true, nil
}

func (e *Engine) readDocs(snap string, m *manifest) error {
	name := filepath.Join(snap, m.Docs.Name)
	if m.Docs.Name != docsName {
		return fmt.Errorf("%w: documents file %q", ErrCorrupt, m.Docs.Name)
	}
	b, err := os.ReadFile(name)
	if err != nil {
		return fmt.Errorf("%w: documents: %w", ErrCorrupt, err)
	}
	sum := blake3.Sum256(b)
	if int64(len(b)) != m.Docs.Size || hex.EncodeToString(sum[:]) != m.Docs.Blake3 {
		return fmt.Errorf("%w: documents: size or checksum mismatch", ErrCorrupt)
	}
	dec := gob.NewDecoder(bytes.NewReader(b))
	var n int
	if err := dec.Decode(&n); err != nil || n != m.Docs.Count {
		return fmt.Errorf("%w: documents: count %d, manifest %d (%v)", ErrCorrupt, n, m.Docs.Count, err)
	}
	for i := 0; i < n; i++ {
		var s storedRecord
		if err := dec.Decode(&s); err != nil {
			return fmt.Errorf("%w: documents: record %d: %v", ErrCorrupt, i, err)
		}
		r := &record{doc: s.Doc, vec: s.Vec, termSet: termSet(e.analyzer.Analyze(docText(&s.Doc)))}
		if r.vec != nil {
			e.nvec++
		}
		e.docs[s.Doc.ID] = r
	}
	return nil
}

// writeAtomic writes name in dir crash-safely (atomicfile.Write: temp file,
// fsync, rename, directory fsync). It returns the size and BLAKE3 hex digest.
func writeAtomic(dir, name string, write func(io.Writer) error) (size int64, sum string, err error) {
	h := blake3.New(32, nil)
	size, err = atomicfile.Write(dir, name, func(w io.Writer) error { return write(io.MultiWriter(w, h)) })
	if err != nil {
		return 0, "", err
	}
	return size, hex.EncodeToString(h.Sum(nil)), nil
}
