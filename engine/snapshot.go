package engine

import (
	"bytes"
	"encoding/gob"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"

	"lukechampine.com/blake3"

	"github.com/hybrank/hybrank/analysis"
	"github.com/hybrank/hybrank/dense"
	"github.com/hybrank/hybrank/internal/manifest"
	"github.com/hybrank/hybrank/internal/wal"
	"github.com/hybrank/hybrank/postings"
)

// FormatVersion is the version of the engine's snapshot layout. Open refuses
// a manifest with a newer version.
//
// Version 2 moved the root manifest to internal/manifest's shared envelope
// (MANIFEST with a checksum line; the document file checked by crc32c);
// version 1 directories (MANIFEST.json, BLAKE3) still open, and the next
// Snapshot replaces their manifest.
//
// Version 3 scopes document IDs by tenant: the postings and dense indexes
// know a document by indexKey(tenant, ID), and the document file may hold
// one ID in several tenants. Versions 1 and 2 (one document per ID, known
// to the indexes by its ID) open as they are: Open renames every document
// in both indexes to its key (no index is rebuilt), and the next Snapshot
// writes the current version.
//
// Version 4 numbers the documents: the document file holds each one's
// number, and the postings and dense indexes (their formats 3) know it as
// the document's Ref, the key of the engine's filter index (tenants and
// metadata), which is rebuilt from the documents on Open. Older
// snapshots, whose indexes held tenant and metadata bitmaps of their own,
// open as they are: Open numbers the documents in file order and gives
// both indexes those numbers (SetRefs; no index is rebuilt), and the next
// Snapshot writes version 4.
const FormatVersion = 4

// tenantKeysVersion is the first format whose indexes use indexKey.
const tenantKeysVersion = 3

// docNumsVersion is the first format that stores document numbers.
const docNumsVersion = 4

const (
	snapKind   = "snap" // generation directories snap-NNNNNN
	docsName   = "docs.gob"
	lexicalDir = "lexical"
	denseDir   = "dense"
)

// layout is the engine's directory: MANIFEST naming one generation
// directory that holds lexical/, dense/ and docs.gob.
var layout = manifest.Layout{
	Format:       "hybrank-engine",
	Version:      FormatVersion,
	Kinds:        []string{snapKind},
	LegacyName:   "MANIFEST.json",
	Legacy:       readLegacyManifest,
	KeepPrevious: true,
	ErrCorrupt:   ErrCorrupt,
	ErrVersion:   ErrCorrupt,
}

// persisted is the engine's root manifest; it is written last, so the
// snapshot it names is complete whenever the manifest exists.
type persisted struct {
	manifest.Header
	Config   Config `json:"config"`
	DocCount int    `json:"doc_count"`
	HasDense bool   `json:"has_dense"`
	// LogPosition is the first write-ahead log record the snapshot does
	// not hold: Open replays the log from there.
	LogPosition uint64 `json:"log_position"`

	// snapDir is the generation directory, and legacyDocs the document
	// file's record with its BLAKE3, when read from a version-1 manifest.
	snapDir    string
	legacyDocs *legacyDocs
}

// legacyDocs is a version-1 manifest's record of the document file.
type legacyDocs struct {
	Name   string `json:"name"`
	Size   int64  `json:"size"`
	Blake3 string `json:"blake3"`
	Count  int    `json:"count"`
}

// readLegacyManifest decodes a version-1 MANIFEST.json into m, a
// *persisted.
func readLegacyManifest(raw []byte, m manifest.Manifest) error {
	var old struct {
		Version    int        `json:"version"`
		Generation uint64     `json:"generation"`
		Snapshot   string     `json:"snapshot"`
		Config     Config     `json:"config"`
		Docs       legacyDocs `json:"docs"`
		HasDense   bool       `json:"has_dense"`
	}
	if err := json.Unmarshal(raw, &old); err != nil {
		return err
	}
	if old.Version != 1 {
		return fmt.Errorf("MANIFEST.json of version %d", old.Version)
	}
	if kind, _, tmp, ok := manifest.ParseName(old.Snapshot); !ok || kind != snapKind || tmp || strings.ContainsAny(old.Snapshot, `/\`) {
		return fmt.Errorf("manifest names snapshot %q", old.Snapshot)
	}
	if old.Docs.Name != docsName {
		return fmt.Errorf("documents file %q", old.Docs.Name)
	}
	p, ok := m.(*persisted)
	if !ok {
		return fmt.Errorf("legacy manifest into %T", m)
	}
	*p = persisted{Config: old.Config, DocCount: old.Docs.Count, HasDense: old.HasDense, snapDir: old.Snapshot, legacyDocs: &old.Docs}
	p.Version, p.Generation = old.Version, old.Generation
	return nil
}

// storedRecord is the on-disk form of a record (terms are re-derived).
// Num is the record's number in snapshots (0 in log records and in
// snapshots before docNumsVersion, which Open numbers itself).
type storedRecord struct {
	Doc Document
	Vec []float32
	Num uint32
}

// Snapshot writes the whole engine (lexical index, dense index, document
// store and index configuration) into a new generation directory under the
// engine's dir, then the manifest that names it, each file through a temp
// file, fsync, rename and a directory fsync (see internal/manifest). A
// crash at any point leaves the previous snapshot or the new one readable
// by Open; older generations are removed only after the new manifest is
// durable. The manifest records the write-ahead log's position. The
// previous generation is kept, with its manifest as MANIFEST.prev, as the
// fallback Open uses when this one fails its checksums, so the log
// segments deleted afterwards are those the previous snapshot covers.
// Searches keep running; Commits wait. The engine also snapshots by itself
// (see DurabilityConfig).
//
// A Snapshot that fails (a full disk) removes what it wrote of its
// generation and leaves the previous snapshots and the log as they were;
// the engine stays writable and the background snapshot is retried at its
// next trigger. A read-only engine (ErrReadOnly) does not snapshot.
func (e *Engine) Snapshot() (err error) {
	if e.dir == "" {
		return ErrNoDir
	}
	e.commitMu.Lock()
	defer e.commitMu.Unlock()
	if e.closed.Load() {
		return ErrClosed
	}
	if e.broken != nil {
		return fmt.Errorf("snapshot: %w", e.broken)
	}
	if err := e.ReadOnly(); err != nil {
		return fmt.Errorf("snapshot: %w", err)
	}
	w, err := layout.Begin(e.fs, e.dir)
	if err != nil {
		return fmt.Errorf("snapshot: %w", err)
	}
	defer func() {
		if err != nil {
			if aerr := w.Abort(); aerr != nil {
				err = errors.Join(err, fmt.Errorf("snapshot: remove the partial generation %d: %w", w.Generation(), aerr))
			}
		}
	}()
	// commitMu is held: the indexes are at the published state.
	st := e.cur.Load()
	m := persisted{Config: e.cfg, DocCount: st.docs.n, HasDense: e.vec != nil}
	if e.log != nil {
		// commitMu is held: every record below Next is applied.
		m.LogPosition = e.log.Next()
	}
	snap, err := w.Mkdir(snapKind)
	if err != nil {
		return fmt.Errorf("snapshot: %w", err)
	}
	if err := e.lex.SaveFS(e.fs, filepath.Join(snap, lexicalDir)); err != nil {
		return fmt.Errorf("snapshot: lexical: %w", err)
	}
	if e.vec != nil {
		if err := e.vec.SaveFS(e.fs, filepath.Join(snap, denseDir)); err != nil {
			return fmt.Errorf("snapshot: dense: %w", err)
		}
	}
	writeDocs := func(w io.Writer) error { return st.docs.write(w) }
	if _, err := w.WriteFile(path.Join(w.Name(snapKind, ""), docsName), writeDocs); err != nil {
		return fmt.Errorf("snapshot: documents: %w", err)
	}
	if err := w.Commit(&m); err != nil {
		return fmt.Errorf("snapshot: %w", err)
	}
	// The previous generation is now the one before this: keep the log
	// from its position on (Open's fallback replays it from there).
	prevPos := e.snapPos.Load()
	e.snapGen.Store(m.Generation)
	if e.log != nil {
		e.snapPos.Store(m.LogPosition)
		if err := e.log.TruncateBefore(prevPos); err != nil {
			err = fmt.Errorf("truncate write-ahead log: %w", err)
			if errors.Is(err, wal.ErrFailed) {
				err = e.turnReadOnly(err)
			}
			return fmt.Errorf("snapshot: %w", err)
		}
		e.bg.snapshotted(e.log)
	}
	return nil
}

// write gob-encodes the store in (ID, tenant) order (so equal stores give
// equal files).
func (s *store) write(w io.Writer) error {
	enc := gob.NewEncoder(w)
	if err := enc.Encode(s.n); err != nil {
		return err
	}
	return s.each(func(r *record) error { return enc.Encode(storedRecord{Doc: r.doc, Vec: r.vec, Num: r.num}) })
}

// loadNewest opens the newest valid snapshot in e.dir and sets snapPos to
// its log position; it reports false when there is none. When the current
// generation fails verification (its manifest or a file it names fails
// its checksum, is missing or does not decode), it falls back to the
// previous one (MANIFEST.prev), makes that current again
// (manifest.Restore) and says so in Recovery.FellBack; the log, kept from
// the previous generation's position, brings it up to date. Without a
// valid previous generation it fails, naming what was wrong with both:
// never an empty engine over a directory that had a snapshot.
func (e *Engine) loadNewest() (bool, error) {
	cfg := e.cfg
	var m persisted
	err := layout.Read(e.fs, e.dir, &m)
	if err == nil {
		if err = e.load(&m); err == nil {
			return true, nil
		}
	}
	missing := errors.Is(err, manifest.ErrNoManifest)
	if !missing && !corruptSnapshot(err) {
		return false, err
	}
	// Back to what Open started from before trying the other generation.
	if e.vec != nil {
		e.vec.Close()
	}
	e.cfg, e.lex, e.vec, e.analyzer = cfg, nil, nil, nil
	var prev persisted
	perr := layout.ReadPrevious(e.fs, e.dir, &prev)
	switch {
	case missing && errors.Is(perr, manifest.ErrNoManifest):
		return false, nil // no snapshot at all: the log holds everything
	case missing && perr == nil:
		err = fmt.Errorf("%w: %s is missing but %s exists", ErrCorrupt, manifest.Name, manifest.PreviousName)
	case errors.Is(perr, manifest.ErrNoManifest):
		return false, fmt.Errorf("%w (no previous generation to fall back to)", err)
	}
	if perr == nil {
		perr = e.load(&prev)
	}
	if perr != nil {
		return false, fmt.Errorf("%w; the previous generation cannot be used either: %w", err, perr)
	}
	if rerr := layout.Restore(e.fs, e.dir); rerr != nil {
		return false, fmt.Errorf("%w; fall back to the previous generation %d: %w", err, prev.Generation, rerr)
	}
	e.recovery.FellBack = fmt.Sprintf("%v: opened the previous generation %d (%s) and replayed the log from record %d",
		err, prev.Generation, manifest.PreviousName, prev.LogPosition)
	return true, nil
}

// corruptSnapshot reports whether err says a snapshot's data cannot be
// trusted (a checksum, size or decoding failure, a missing file), the
// failures Open falls back from; not an I/O error, a newer format version
// or a configuration mismatch.
func corruptSnapshot(err error) bool {
	if errors.Is(err, manifest.ErrVersion) {
		return false
	}
	for _, target := range []error{ErrCorrupt, manifest.ErrCorrupt, postings.ErrCorrupt, dense.ErrCorrupt} {
		if errors.Is(err, target) {
			return true
		}
	}
	return false
}

// load opens the snapshot m names in e.dir and sets snapPos to its log
// position.
func (e *Engine) load(m *persisted) error {
	dir := e.dir
	e.snapPos.Store(m.LogPosition)
	e.snapGen.Store(m.Generation)
	if m.snapDir == "" {
		m.snapDir = manifest.GenName(snapKind, m.Generation, "")
	}
	e.cfg.Analysis, e.cfg.Postings, e.cfg.Dense = m.Config.Analysis, m.Config.Postings, m.Config.Dense
	if err := e.cfg.Validate(); err != nil {
		return fmt.Errorf("%w: stored config: %w", ErrCorrupt, err)
	}
	a, err := analysis.New(e.cfg.Analysis)
	if err != nil {
		return fmt.Errorf("%w: stored analysis config: %w", ErrCorrupt, err)
	}
	if a.Version() != e.cfg.Postings.AnalyzerVersion {
		return fmt.Errorf("%w: analyzer version %q, index built with %q", ErrCorrupt, a.Version(), e.cfg.Postings.AnalyzerVersion)
	}
	e.analyzer = a
	snap := filepath.Join(dir, m.snapDir)
	lex, err := postings.Open(filepath.Join(snap, lexicalDir), e.cfg.Postings)
	if err != nil {
		return fmt.Errorf("lexical: %w", err)
	}
	e.lex = lex
	if m.HasDense {
		v, err := dense.Open(filepath.Join(snap, denseDir))
		if err != nil {
			return fmt.Errorf("dense: %w", err)
		}
		e.vec = v
		e.cfg.Dense = v.Config()
		if e.embedder != nil && e.embedder.Dim() != e.cfg.Dense.Dim {
			v.Close()
			return fmt.Errorf("%w: snapshot vectors have dim %d, embedder %d", ErrInvalidConfig, e.cfg.Dense.Dim, e.embedder.Dim())
		}
	} else if e.embedder != nil {
		e.cfg.Dense.Dim = e.embedder.Dim()
		v, err := dense.New(e.cfg.Dense)
		if err != nil {
			return fmt.Errorf("%w: dense: %w", ErrInvalidConfig, err)
		}
		e.vec = v
	}
	if err := e.readDocs(dir, m); err != nil {
		if e.vec != nil {
			e.vec.Close()
		}
		return err
	}
	if m.Version < docNumsVersion {
		if err := e.migrate(m.Version); err != nil {
			if e.vec != nil {
				e.vec.Close()
			}
			return fmt.Errorf("%w: migrate version %d snapshot: %w", ErrCorrupt, m.Version, err)
		}
	}
	return nil
}

// readDocs loads the document store of the snapshot m names in dir.
func (e *Engine) readDocs(dir string, m *persisted) error {
	var b []byte
	if ld := m.legacyDocs; ld != nil {
		var err error
		if b, err = os.ReadFile(filepath.Join(dir, m.snapDir, ld.Name)); err != nil {
			return fmt.Errorf("%w: documents: %w", ErrCorrupt, err)
		}
		sum := blake3.Sum256(b)
		if int64(len(b)) != ld.Size || hex.EncodeToString(sum[:]) != ld.Blake3 {
			return fmt.Errorf("%w: documents: size or checksum mismatch", ErrCorrupt)
		}
	} else {
		data, err := layout.ReadFiles(e.fs, dir, &m.Header, snapKind)
		if err != nil {
			return fmt.Errorf("documents: %w", err)
		}
		b = data[0]
	}
	dec := gob.NewDecoder(bytes.NewReader(b))
	var n int
	if err := dec.Decode(&n); err != nil || n != m.DocCount {
		return fmt.Errorf("%w: documents: count %d, manifest %d (%v)", ErrCorrupt, n, m.DocCount, err)
	}
	docs, nvec := store{}.writer(), 0
	nums := make(map[uint32]bool, n)
	for i := 0; i < n; i++ {
		var s storedRecord
		if err := dec.Decode(&s); err != nil {
			return fmt.Errorf("%w: documents: record %d: %v", ErrCorrupt, i, err)
		}
		if m.Version < docNumsVersion {
			s.Num = uint32(i + 1) // migrateNums gives the indexes these
		}
		if s.Num == 0 || s.Num == maxDocNum || nums[s.Num] {
			return fmt.Errorf("%w: documents: record %d: number %d is zero, too large or taken", ErrCorrupt, i, s.Num)
		}
		nums[s.Num] = true
		r := &record{doc: s.Doc, vec: s.Vec, num: s.Num, termSet: termSet(e.analyzer.Analyze(docText(&s.Doc)))}
		if r.vec != nil {
			nvec++
		}
		docs.put(r)
	}
	st := docs.done()
	e.nums.Store(uint64(st.maxNum))
	e.publish(st, nvec)
	return nil
}

// migrate brings the indexes of a snapshot of an older format (version)
// to the current one without rebuilding either, and publishes the result.
// Before tenantKeysVersion, a document (one per ID, known to the indexes
// by its ID) is renamed to its index key; before docNumsVersion, it is
// given its number (readDocs assigned them in file order) as its Ref.
// Called during Open.
func (e *Engine) migrate(version int) error {
	st := e.cur.Load()
	var rename map[string]string
	if version < tenantKeysVersion {
		rename = make(map[string]string, st.docs.n)
	}
	refs := make(map[string]uint32, st.docs.n)
	err := st.docs.each(func(r *record) error {
		key := indexKey(r.doc.Tenant, r.doc.ID)
		if rename != nil {
			if _, dup := rename[r.doc.ID]; dup {
				return fmt.Errorf("document ID %q in two tenants", r.doc.ID)
			}
			rename[r.doc.ID] = key
		}
		refs[key] = r.num
		return nil
	})
	if err != nil {
		return err
	}
	type migrating interface {
		RenameIDs(map[string]string) error
		SetRefs(map[string]uint32) error
	}
	type index struct {
		name string
		ix   migrating
	}
	ixs := []index{{"lexical", e.lex}}
	if e.vec != nil {
		ixs = append(ixs, index{"dense", e.vec})
	}
	for _, x := range ixs {
		if rename != nil {
			if err := x.ix.RenameIDs(rename); err != nil {
				return fmt.Errorf("%s: to tenant-scoped IDs: %w", x.name, err)
			}
		}
		if err := x.ix.SetRefs(refs); err != nil {
			return fmt.Errorf("%s: to document numbers: %w", x.name, err)
		}
	}
	e.publish(st.docs, st.nvec)
	return nil
}
