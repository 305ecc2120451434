package dense

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"

	"github.com/hybrank/hybrank/internal/manifest"
	"github.com/hybrank/hybrank/internal/vfs"
)

// FormatVersion is the snapshot format written by Save. Open accepts
// versions up to it and reports ErrVersion for newer ones.
//
// Version 2 moved the manifest to internal/manifest's shared envelope (a
// files list and a checksum line of its own); the data files are those of
// version 1, whose plain-JSON manifest Open still reads.
//
// Version 3 stores each live item's Ref in place of its tenant and
// metadata (the index no longer knows either; callers pass an
// allow-list). Older items files open with every Ref NoRef and their
// tenants and metadata skipped.
const FormatVersion = 3

// refsVersion is the first format whose items carry Refs.
const refsVersion = 3

const (
	itemsMagic   = "HRDENSE1"
	itemsKind    = "items"
	vectorsKind  = "vectors"
	graphKind    = "graph"
	legacyFormat = 1 // the last version without the shared envelope
)

// layout is the dense snapshot directory.
var layout = manifest.Layout{
	Format:     "hybrank-dense",
	Version:    FormatVersion,
	Kinds:      []string{itemsKind, vectorsKind, graphKind},
	Legacy:     readLegacyManifest,
	ErrCorrupt: ErrCorrupt,
	ErrVersion: ErrVersion,
}

// persisted is the dense manifest: the shared header plus the index
// configuration and the number of nums allocated.
type persisted struct {
	manifest.Header
	Config Config `json:"config"`
	Next   uint32 `json:"next"`
}

// readLegacyManifest decodes a version-1 manifest (plain JSON, one record
// per file) into m, a *persisted.
func readLegacyManifest(raw []byte, m manifest.Manifest) error {
	var old struct {
		Version    int           `json:"version"`
		Generation uint64        `json:"generation"`
		Config     Config        `json:"config"`
		Next       uint32        `json:"next"`
		Items      manifest.File `json:"items"`
		Vectors    manifest.File `json:"vectors"`
		Graph      manifest.File `json:"graph"`
	}
	if err := json.Unmarshal(raw, &old); err != nil {
		return err
	}
	if old.Version != legacyFormat {
		return fmt.Errorf("plain manifest of version %d", old.Version)
	}
	p, ok := m.(*persisted)
	if !ok {
		return fmt.Errorf("legacy manifest into %T", m)
	}
	*p = persisted{Config: old.Config, Next: old.Next}
	p.Version, p.Generation = old.Version, old.Generation
	p.Files = []manifest.File{old.Items, old.Vectors, old.Graph}
	return nil
}

// Save writes a crash-safe snapshot of the index into dir (created if
// needed) as a new generation (see internal/manifest). Searches may run
// meanwhile; writers wait. A crash at any point leaves either the previous
// snapshot or the new one readable by Open; a failed Save removes what
// it wrote of its generation.
func (ix *Index) Save(dir string) error { return ix.SaveFS(vfs.OS, dir) }

// SaveFS is Save with every filesystem call made through fsys (the
// engine's, which tests replace with an error-injecting one).
func (ix *Index) SaveFS(fsys vfs.FS, dir string) (err error) {
	// The writer lock keeps the graph's links still while they are written.
	ix.mu.Lock()
	defer ix.mu.Unlock()
	v := ix.cur.Load()
	if v.closed {
		return ErrClosed
	}
	w, err := layout.Begin(fsys, dir)
	if err != nil {
		return fmt.Errorf("dense save: %w", err)
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, w.Abort())
		}
	}()
	for _, f := range []struct {
		kind  string
		write func(io.Writer) error
	}{{itemsKind, v.writeItems}, {vectorsKind, v.writeVectors}, {graphKind, v.g.writeTo}} {
		if _, err := w.WriteFile(w.Name(f.kind, ".bin"), f.write); err != nil {
			return fmt.Errorf("dense save %s: %w", f.kind, err)
		}
	}
	if err := w.Commit(&persisted{Config: v.cfg, Next: uint32(v.g.n)}); err != nil {
		return fmt.Errorf("dense save: %w", err)
	}
	return nil
}

// writeItems encodes the live records:
//
//	magic "HRDENSE1" | u32 count | count × (u32 num | str id | u32 ref)
//
// with str = u32 length | bytes, little endian. Formats before
// refsVersion had, in place of the ref, str tenant | u32 nmeta |
// nmeta × (str key | str value).
func (v *View) writeItems(w io.Writer) error {
	var b []byte
	b = append(b, itemsMagic...)
	b = binary.LittleEndian.AppendUint32(b, uint32(v.live.GetCardinality()))
	str := func(s string) {
		b = binary.LittleEndian.AppendUint32(b, uint32(len(s)))
		b = append(b, s...)
	}
	it := v.live.Iterator()
	for it.HasNext() {
		num := it.Next()
		rec := v.recs[num]
		b = binary.LittleEndian.AppendUint32(b, num)
		str(rec.id)
		b = binary.LittleEndian.AppendUint32(b, rec.ref)
		if len(b) > 1<<16 {
			if _, err := w.Write(b); err != nil {
				return err
			}
			b = b[:0]
		}
	}
	_, err := w.Write(b)
	return err
}

// Open loads a snapshot written by Save. It returns ErrVersion for a newer
// format, ErrCorrupt for missing, truncated or altered files, and wraps
// fs.ErrNotExist when dir holds no snapshot.
func Open(dir string) (*Index, error) {
	var m persisted
	if err := layout.Read(vfs.OS, dir, &m); err != nil {
		return nil, fmt.Errorf("dense open %s: %w", dir, err)
	}
	if err := m.Config.Validate(); err != nil {
		return nil, fmt.Errorf("dense open %s: %w: %v", dir, ErrCorrupt, err)
	}
	data, err := layout.ReadFiles(vfs.OS, dir, &m.Header, itemsKind, vectorsKind, graphKind)
	if err != nil {
		return nil, fmt.Errorf("dense open %s: %w", dir, err)
	}
	items, vectors, graph := data[0], data[1], data[2]
	ix, err := New(m.Config)
	if err != nil {
		return nil, fmt.Errorf("dense open %s: %w", dir, err)
	}
	slabs, err := readVectors(vectors, m.Config.Dim, m.Next)
	if err != nil {
		return nil, fmt.Errorf("dense open %s: %w: vectors: %v", dir, ErrCorrupt, err)
	}
	g, err := readGraph(graph, m.Config, slabs)
	if err != nil {
		return nil, fmt.Errorf("dense open %s: %w: %v", dir, ErrCorrupt, err)
	}
	if g.n > int(m.Next) {
		return nil, fmt.Errorf("dense open %s: %w: graph has %d nums, manifest %d", dir, ErrCorrupt, g.n, m.Next)
	}
	g.grow(int(m.Next))
	ix.g = g
	t := ix.begin()
	if err := t.readItems(items, m.Next, m.Version); err != nil {
		return nil, fmt.Errorf("dense open %s: %w: items: %v", dir, ErrCorrupt, err)
	}
	it := t.v.live.Iterator()
	for it.HasNext() {
		if num := it.Next(); g.level[num] < 0 {
			return nil, fmt.Errorf("dense open %s: %w: live item %d not in graph", dir, ErrCorrupt, num)
		}
	}
	t.publish()
	return ix, nil
}

// readItems decodes writeItems' format (of the given version) into the
// records and bitmaps of the index t builds.
func (t *txn) readItems(b []byte, next uint32, version int) error {
	ix := t.ix
	if len(b) < len(itemsMagic)+4 || string(b[:len(itemsMagic)]) != itemsMagic {
		return errors.New("bad magic")
	}
	b = b[len(itemsMagic):]
	u32 := func() (uint32, error) {
		if len(b) < 4 {
			return 0, io.ErrUnexpectedEOF
		}
		v := binary.LittleEndian.Uint32(b)
		b = b[4:]
		return v, nil
	}
	str := func() (string, error) {
		n, err := u32()
		if err != nil {
			return "", err
		}
		if uint64(n) > uint64(len(b)) {
			return "", io.ErrUnexpectedEOF
		}
		s := string(b[:n])
		b = b[n:]
		return s, nil
	}
	count, err := u32()
	if err != nil {
		return err
	}
	ix.recs = make([]record, next)
	for i := uint32(0); i < count; i++ {
		num, err := u32()
		if err != nil {
			return err
		}
		if num >= next || t.v.live.Contains(num) {
			return fmt.Errorf("bad num %d", num)
		}
		var rec record
		if rec.id, err = str(); err != nil {
			return err
		}
		if version >= refsVersion {
			if rec.ref, err = u32(); err != nil {
				return err
			}
			if rec.ref != NoRef && t.v.refs.Contains(rec.ref) {
				return fmt.Errorf("duplicate ref %d", rec.ref)
			}
		} else if err := skipTenantMeta(str, u32); err != nil {
			return err
		} else {
			rec.ref = NoRef
		}
		if _, dup := ix.byID[rec.id]; dup || rec.id == "" {
			return fmt.Errorf("bad or duplicate id %q", rec.id)
		}
		t.index(num, rec)
	}
	if len(b) != 0 {
		return fmt.Errorf("%d trailing bytes", len(b))
	}
	return nil
}

// skipTenantMeta reads past the tenant and metadata of an item of a
// format before refsVersion.
func skipTenantMeta(str func() (string, error), u32 func() (uint32, error)) error {
	if _, err := str(); err != nil {
		return err
	}
	nm, err := u32()
	if err != nil {
		return err
	}
	for j := uint32(0); j < 2*nm; j++ {
		if _, err := str(); err != nil {
			return err
		}
	}
	return nil
}

// writeVectors writes the rows of nums [0, n) as little-endian float32.
func (v *View) writeVectors(w io.Writer) error {
	b := make([]byte, 0, 1<<16)
	for num := 0; num < v.g.n; num++ {
		for _, x := range v.g.vec(uint32(num)) {
			b = binary.LittleEndian.AppendUint32(b, math.Float32bits(x))
		}
		if len(b) >= 1<<16-4*v.cfg.Dim {
			if _, err := w.Write(b); err != nil {
				return err
			}
			b = b[:0]
		}
	}
	_, err := w.Write(b)
	return err
}

// readVectors decodes writeVectors' format into slabs.
func readVectors(b []byte, dim int, next uint32) ([][]float32, error) {
	if len(b) != int(next)*dim*4 {
		return nil, fmt.Errorf("%d bytes for %d rows of %d", len(b), next, dim)
	}
	slabs := make([][]float32, (int(next)+slabRows-1)/slabRows)
	for i := range slabs {
		slabs[i] = make([]float32, slabRows*dim)
	}
	for num := 0; num < int(next); num++ {
		row := slabs[num/slabRows][num%slabRows*dim:][:dim]
		for i := range row {
			x := math.Float32frombits(binary.LittleEndian.Uint32(b))
			if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
				return nil, fmt.Errorf("row %d is not finite", num)
			}
			row[i] = x
			b = b[4:]
		}
	}
	return slabs, nil
}
