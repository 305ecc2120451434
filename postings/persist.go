package postings

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/RoaringBitmap/roaring/v2"

	"github.com/hybrank/hybrank/internal/manifest"
	"github.com/hybrank/hybrank/internal/vfs"
)

// FormatVersion is the snapshot format written by Save. Open reads this
// version and older ones, and refuses newer ones with ErrVersion.
//
// Version 2 names generation files with internal/manifest's shared scheme
// (docs-NNNNNN.bin; version 1 used ten digits); the manifest envelope and
// the data files are otherwise unchanged, and version 1 snapshots open as
// before.
//
// Version 3 stores each document's Ref and no filter bitmaps (the index
// no longer knows tenants or metadata; callers pass an allow-list). Older
// snapshots open with every Ref NoRef and their filter bitmaps skipped.
const FormatVersion = 3

// refsVersion is the first format that stores Refs.
const refsVersion = 3

const (
	docsMagic  = "HBPD"
	postsMagic = "HBPP"
	docsKind   = "docs"
	postsKind  = "postings"
)

// layout is the postings snapshot directory: MANIFEST plus the docs and
// postings files of the current generation.
var layout = manifest.Layout{
	Format:        "hybrank-postings",
	Version:       FormatVersion,
	Kinds:         []string{docsKind, postsKind},
	ErrNoManifest: ErrNoSnapshot,
	ErrCorrupt:    ErrCorrupt,
	ErrVersion:    ErrVersion,
}

// persisted is the postings manifest: the shared header plus the scoring
// parameters and counts the data files are read with.
type persisted struct {
	manifest.Header
	AnalyzerVersion string  `json:"analyzer_version"`
	Variant         Variant `json:"variant"`
	K1              float64 `json:"k1"`
	B               float64 `json:"b"`
	Delta           float64 `json:"delta"`
	AvgDLBuild      float64 `json:"avgdl_build"`
	Docs            uint32  `json:"doc_nums"`
}

// Save writes the current snapshot to dir (created if needed) as a new
// generation (see internal/manifest): data files are written to
// temporaries, fsynced and renamed, the directory is fsynced, then MANIFEST
// (naming the files with sizes and crc32c) replaces the old one the same
// way; files of older generations and stray temporaries are removed last.
// A crash at any point leaves either the previous or the new snapshot
// readable by Open; a failed Save removes what it wrote of its
// generation. Save holds the writer lock (Commit waits; Search does not).
func (ix *Index) Save(dir string) error { return ix.SaveFS(vfs.OS, dir) }

// SaveFS is Save with every filesystem call made through fsys (the
// engine's, which tests replace with an error-injecting one).
func (ix *Index) SaveFS(fsys vfs.FS, dir string) (err error) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	s := ix.cur.Load()
	w, err := layout.Begin(fsys, dir)
	if err != nil {
		return fmt.Errorf("save: %w", err)
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, w.Abort())
		}
	}()
	m := persisted{
		AnalyzerVersion: ix.cfg.AnalyzerVersion, Variant: ix.cfg.Variant,
		K1: ix.cfg.K1, B: ix.cfg.B, Delta: ix.cfg.Delta, AvgDLBuild: s.avgdlBuild, Docs: s.numDocs,
	}
	for _, f := range []struct {
		kind string
		data []byte
	}{{docsKind, encodeDocs(s, FormatVersion)}, {postsKind, encodePostings(s)}} {
		name := w.Name(f.kind, ".bin")
		if _, err := w.WriteBytes(name, f.data); err != nil {
			return fmt.Errorf("save %s: %w", name, err)
		}
	}
	if err := w.Commit(&m); err != nil {
		return fmt.Errorf("save: %w", err)
	}
	return nil
}

// Open loads the snapshot in dir. cfg supplies the scoring parameters (they
// may differ from the saved ones: norms and bounds are then recomputed) and
// must carry the analyzer version the snapshot was built with. Errors:
// ErrNoSnapshot, ErrCorrupt (missing, truncated or altered file),
// ErrVersion (newer format), ErrAnalyzerMismatch, ErrConfig.
func Open(dir string, cfg Config) (*Index, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.normalized()
	var m persisted
	if err := layout.Read(vfs.OS, dir, &m); err != nil {
		return nil, fmt.Errorf("open %s: %w", dir, err)
	}
	if m.AnalyzerVersion != cfg.AnalyzerVersion {
		return nil, fmt.Errorf("open %s: %w: snapshot %q, config %q", dir, ErrAnalyzerMismatch, m.AnalyzerVersion, cfg.AnalyzerVersion)
	}
	if len(m.Files) != 2 {
		return nil, fmt.Errorf("open %s: %w: manifest lists %d files", dir, ErrCorrupt, len(m.Files))
	}
	data, err := layout.ReadFiles(vfs.OS, dir, &m.Header, docsKind, postsKind)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", dir, err)
	}
	ix := &Index{cfg: cfg, byID: make(map[string]uint32), pruneGate: defaultPruneGate}
	s := &snapshot{sc: newScorer(cfg), dict: newTermDict(), avgdlBuild: m.AvgDLBuild}
	if err := decodeDocs(s, data[0], m.Docs); err != nil {
		return nil, fmt.Errorf("open %s: %w: docs: %w", dir, ErrCorrupt, err)
	}
	sameScoring := m.Variant == cfg.Variant && m.K1 == cfg.K1 && m.B == cfg.B && m.Delta == cfg.Delta
	if err := decodePostings(s, data[1], sameScoring); err != nil {
		return nil, fmt.Errorf("open %s: %w: postings: %w", dir, ErrCorrupt, err)
	}
	for d := uint32(0); d < s.numDocs; d++ {
		if !s.isDead(d) {
			if _, dup := ix.byID[s.docIDs[d]]; dup {
				return nil, fmt.Errorf("open %s: %w: duplicate live id %q", dir, ErrCorrupt, s.docIDs[d])
			}
			ix.byID[s.docIDs[d]] = d
		}
	}
	ix.cur.Store(s)
	return ix, nil
}

// --- encoding ---

type enc struct{ b []byte }

func (e *enc) uv(x uint64)    { e.b = binary.AppendUvarint(e.b, x) }
func (e *enc) str(s string)   { e.uv(uint64(len(s))); e.b = append(e.b, s...) }
func (e *enc) bytes(p []byte) { e.uv(uint64(len(p))); e.b = append(e.b, p...) }
func (e *enc) u64(x uint64)   { e.b = binary.LittleEndian.AppendUint64(e.b, x) }
func (e *enc) bitmap(bm *roaring.Bitmap) {
	p, _ := bm.ToBytes() // writes to a bytes.Buffer: cannot fail
	e.bytes(p)
}

func header(magic string) enc {
	e := enc{b: append([]byte(magic), 0, 0, 0, 0)}
	binary.LittleEndian.PutUint32(e.b[len(magic):], FormatVersion)
	return e
}

// encodeDocs writes the docs file in the layout of version: Save's
// FormatVersion, or, for tests of the readers of older files, a version
// before refsVersion (no Refs, an empty set of filter bitmaps).
func encodeDocs(s *snapshot, version uint32) []byte {
	e := header(docsMagic)
	binary.LittleEndian.PutUint32(e.b[len(docsMagic):], version)
	e.uv(uint64(s.numDocs))
	for d := uint32(0); d < s.numDocs; d++ {
		e.str(s.docIDs[d])
		if version >= refsVersion {
			e.uv(uint64(s.refs[d]))
		}
		e.uv(uint64(s.docLen[d]))
		e.b = append(e.b, s.hashes[d][:]...)
	}
	dead := s.deadBM
	if dead == nil {
		dead = roaring.New()
	}
	e.bitmap(dead)
	if version < refsVersion {
		e.uv(0) // filter bitmaps
	}
	return e.b
}

func encodePostings(s *snapshot) []byte {
	e := header(postsMagic)
	e.uv(uint64(s.numTerms))
	for tid, tp := range s.terms.all {
		if tp == nil || len(tp.tf) == 0 {
			continue
		}
		e.str(s.dict.name(uint32(tid)))
		e.u64(math.Float64bits(tp.maxTfc))
		e.bytes(tp.tf)
		e.uv(uint64(len(tp.big)))
		for _, bt := range tp.big {
			e.uv(uint64(bt.pos))
			e.uv(uint64(bt.tf))
		}
		e.bitmap(tp.bitmap())
	}
	return e.b
}

var errShort = errors.New("truncated")

type dec struct {
	b   []byte
	err error
}

func (d *dec) uv() uint64 {
	if d.err != nil {
		return 0
	}
	x, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.err = errShort
		return 0
	}
	d.b = d.b[n:]
	return x
}

func (d *dec) take(n uint64) []byte {
	if d.err != nil {
		return nil
	}
	if n > uint64(len(d.b)) {
		d.err = errShort
		return nil
	}
	p := d.b[:n:n]
	d.b = d.b[n:]
	return p
}

func (d *dec) bytes() []byte { return d.take(d.uv()) }
func (d *dec) str() string   { return string(d.bytes()) }
func (d *dec) u64() uint64 {
	p := d.take(8)
	if p == nil {
		return 0
	}
	return binary.LittleEndian.Uint64(p)
}

func (d *dec) bitmap() *roaring.Bitmap {
	p := d.bytes()
	if d.err != nil {
		return nil
	}
	bm := roaring.New()
	if err := bm.UnmarshalBinary(p); err != nil {
		d.err = fmt.Errorf("bitmap: %w", err)
		return nil
	}
	return bm
}

// header checks the file's magic and returns its format version.
func (d *dec) header(magic string) uint32 {
	p := d.take(uint64(len(magic) + 4))
	if d.err != nil {
		return 0
	}
	if string(p[:len(magic)]) != magic {
		d.err = fmt.Errorf("bad magic %q", p[:len(magic)])
		return 0
	}
	v := binary.LittleEndian.Uint32(p[len(magic):])
	if v == 0 || v > FormatVersion {
		d.err = fmt.Errorf("file version %d", v)
	}
	return v
}

func decodeDocs(s *snapshot, b []byte, want uint32) error {
	d := dec{b: b}
	version := d.header(docsMagic)
	n := d.uv()
	if d.err == nil && (n != uint64(want) || n > uint64(len(b))) {
		return fmt.Errorf("doc count %d, manifest %d", n, want)
	}
	s.numDocs = uint32(n)
	s.docIDs = make([]string, 0, n)
	s.refs = make([]uint32, 0, n)
	s.docLen = make([]uint32, 0, n)
	s.hashes = make([][16]byte, 0, n)
	for i := uint64(0); i < n && d.err == nil; i++ {
		s.docIDs = append(s.docIDs, d.str())
		ref := uint64(NoRef)
		if version >= refsVersion {
			ref = d.uv()
		}
		if ref > math.MaxUint32 {
			return fmt.Errorf("doc ref %d", ref)
		}
		s.refs = append(s.refs, uint32(ref))
		dl := d.uv()
		if dl > math.MaxUint32 {
			return fmt.Errorf("doc length %d", dl)
		}
		s.docLen = append(s.docLen, uint32(dl))
		var h [16]byte
		copy(h[:], d.take(16))
		s.hashes = append(s.hashes, h)
	}
	dead := d.bitmap()
	if version < refsVersion {
		// The tenant and metadata bitmaps of older formats: skipped.
		nf := d.uv()
		for i := uint64(0); i < nf && d.err == nil; i++ {
			d.str()
			d.bytes()
		}
	}
	if d.err == nil {
		s.extendNorms(s.maxDocLen())
	}
	if d.err != nil {
		return d.err
	}
	if !dead.IsEmpty() {
		if dead.Maximum() >= s.numDocs {
			return fmt.Errorf("dead doc %d beyond %d docs", dead.Maximum(), s.numDocs)
		}
		s.deadBM = dead
		s.dead = make([]uint64, (s.numDocs+63)/64)
		dead.Iterate(func(x uint32) bool { s.dead[x>>6] |= 1 << (x & 63); return true })
		s.numDead = int(dead.GetCardinality())
	}
	for i := uint32(0); i < s.numDocs; i++ {
		if !s.isDead(i) {
			s.liveDocs++
			s.liveLen += uint64(s.docLen[i])
		}
	}
	if d.err == nil && len(d.b) != 0 {
		return fmt.Errorf("%d trailing bytes", len(d.b))
	}
	return d.err
}

func decodePostings(s *snapshot, b []byte, sameScoring bool) error {
	d := dec{b: b}
	d.header(postsMagic)
	n := d.uv()
	if d.err == nil && n > uint64(len(b)) {
		return fmt.Errorf("term count %d", n)
	}
	s.terms = termTable{}
	for i := uint64(0); i < n && d.err == nil; i++ {
		name := d.str()
		tp := &termPostings{maxTfc: math.Float64frombits(d.u64())}
		tp.tf = bytes.Clone(d.bytes())
		nb := d.uv()
		if d.err == nil && nb > uint64(len(tp.tf)) {
			return fmt.Errorf("term %q: %d overflow tfs", name, nb)
		}
		for j := uint64(0); j < nb && d.err == nil; j++ {
			tp.big = append(tp.big, bigTF{pos: uint32(d.uv()), tf: uint32(d.uv())})
		}
		tp.docs = d.bitmap()
		if d.err != nil {
			break
		}
		if tp.docs.GetCardinality() != uint64(len(tp.tf)) || tp.docs.IsEmpty() {
			return fmt.Errorf("term %q: %d docs, %d tfs", name, tp.docs.GetCardinality(), len(tp.tf))
		}
		if tp.docs.Maximum() >= s.numDocs {
			return fmt.Errorf("term %q: doc %d beyond %d docs", name, tp.docs.Maximum(), s.numDocs)
		}
		if id := s.dict.getOrAdd(name); int(id) != s.terms.len() {
			return fmt.Errorf("duplicate term %q", name)
		}
		if !sameScoring {
			tp.maxTfc = 0
			var it roaring.ManyIntIterator
			it.Initialize(tp.docs)
			buf := make([]uint32, 1024)
			pos := 0
			for m := it.NextMany(buf); m > 0; m = it.NextMany(buf) {
				for _, doc := range buf[:m] {
					if c := s.sc.tfc(float64(tp.tfAt(pos)), s.norm(doc)); c > tp.maxTfc {
						tp.maxTfc = c
					}
					pos++
				}
			}
		}
		s.terms.append(tp)
		s.postings += int64(len(tp.tf))
		s.numTerms++
	}
	if d.err == nil && len(d.b) != 0 {
		return fmt.Errorf("%d trailing bytes", len(d.b))
	}
	return d.err
}
