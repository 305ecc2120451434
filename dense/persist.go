package dense

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/hybrank/hybrank/internal/atomicfile"
)

// FormatVersion is the snapshot format written by Save. Open accepts
// versions up to it and reports ErrVersion for newer ones.
const FormatVersion = 1

const (
	manifestName = "MANIFEST"
	itemsMagic   = "HRDENSE1"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

type fileEntry struct {
	Name   string `json:"name"`
	Size   int64  `json:"size"`
	CRC32C uint32 `json:"crc32c"`
}

type manifest struct {
	Version    int       `json:"version"`
	Generation uint64    `json:"generation"`
	Config     Config    `json:"config"`
	Next       uint32    `json:"next"`
	Items      fileEntry `json:"items"`
	Vectors    fileEntry `json:"vectors"`
	Graph      fileEntry `json:"graph"`
}

// Save writes a crash-safe snapshot of the index into dir (created if
// needed). Searches may run meanwhile; writers wait. A crash at any point
// leaves either the previous snapshot or the new one readable by Open.
func (ix *Index) Save(dir string) (err error) {
	ix.saveMu.Lock()
	defer ix.saveMu.Unlock()
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	if ix.closed {
		return ErrClosed
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("dense save: %w", err)
	}
	var gen uint64 = 1
	if old, err := readManifest(dir); err == nil {
		gen = old.Generation + 1
	}
	m := manifest{Version: FormatVersion, Generation: gen, Config: ix.cfg, Next: ix.next}
	m.Items, err = writeAtomic(dir, fmt.Sprintf("items-%06d.bin", gen), ix.writeItems)
	if err != nil {
		return fmt.Errorf("dense save items: %w", err)
	}
	m.Vectors, err = writeAtomic(dir, fmt.Sprintf("vectors-%06d.bin", gen), ix.writeVectors)
	if err != nil {
		return fmt.Errorf("dense save vectors: %w", err)
	}
	m.Graph, err = writeAtomic(dir, fmt.Sprintf("graph-%06d.bin", gen), ix.g.writeTo)
	if err != nil {
		return fmt.Errorf("dense save graph: %w", err)
	}
	js, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return fmt.Errorf("dense save manifest: %w", err)
	}
	if _, err := writeAtomic(dir, manifestName, func(w io.Writer) error { _, err := w.Write(js); return err }); err != nil {
		return fmt.Errorf("dense save manifest: %w", err)
	}
	// The new manifest is durable: older generations and stray temp files go.
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		n := e.Name()
		ours := strings.HasPrefix(n, "items-") || strings.HasPrefix(n, "vectors-") || strings.HasPrefix(n, "graph-")
		current := n == m.Items.Name || n == m.Vectors.Name || n == m.Graph.Name
		stale := strings.HasSuffix(n, ".tmp") || (ours && !current)
		if stale {
			os.Remove(filepath.Join(dir, n))
		}
	}
	return nil
}

// writeAtomic writes name in dir crash-safely (atomicfile.Write: temp file,
// fsync, rename, directory fsync) and returns its size and crc32c.
func writeAtomic(dir, name string, write func(io.Writer) error) (fileEntry, error) {
	h := crc32.New(castagnoli)
	n, err := atomicfile.Write(dir, name, func(w io.Writer) error { return write(io.MultiWriter(w, h)) })
	if err != nil {
		return fileEntry{}, err
	}
	return fileEntry{Name: name, Size: n, CRC32C: h.Sum32()}, nil
}

// writeItems encodes the live records:
//
//	magic "HRDENSE1" | u32 count | count × (u32 num | str id | str tenant |
//	u32 nmeta | nmeta × (str key | str value))
//
// with str = u32 length | bytes, little endian, meta keys sorted.
func (ix *Index) writeItems(w io.Writer) error {
	var b []byte
	b = append(b, itemsMagic...)
	b = binary.LittleEndian.AppendUint32(b, uint32(ix.live.GetCardinality()))
	str := func(s string) {
		b = binary.LittleEndian.AppendUint32(b, uint32(len(s)))
		b = append(b, s...)
	}
	it := ix.live.Iterator()
	for it.HasNext() {
		num := it.Next()
		rec := ix.recs[num]
		b = binary.LittleEndian.AppendUint32(b, num)
		str(rec.id)
		str(rec.tenant)
		keys := make([]string, 0, len(rec.meta))
		for k := range rec.meta {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		b = binary.LittleEndian.AppendUint32(b, uint32(len(keys)))
		for _, k := range keys {
			str(k)
			str(rec.meta[k])
		}
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

func readManifest(dir string) (manifest, error) {
	var m manifest
	js, err := os.ReadFile(filepath.Join(dir, manifestName))
	if err != nil {
		return m, err
	}
	if err := json.Unmarshal(js, &m); err != nil {
		return m, fmt.Errorf("%w: manifest: %v", ErrCorrupt, err)
	}
	return m, nil
}

// readChecked reads a file named by the manifest and verifies its size and
// checksum.
func readChecked(dir string, e fileEntry) ([]byte, error) {
	if e.Name == "" || filepath.Base(e.Name) != e.Name {
		return nil, fmt.Errorf("%w: bad file name %q", ErrCorrupt, e.Name)
	}
	b, err := os.ReadFile(filepath.Join(dir, e.Name))
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s missing", ErrCorrupt, e.Name)
	}
	if err != nil {
		return nil, err
	}
	if int64(len(b)) != e.Size {
		return nil, fmt.Errorf("%w: %s is %d bytes, manifest says %d", ErrCorrupt, e.Name, len(b), e.Size)
	}
	if c := crc32.Checksum(b, castagnoli); c != e.CRC32C {
		return nil, fmt.Errorf("%w: %s checksum %08x, manifest says %08x", ErrCorrupt, e.Name, c, e.CRC32C)
	}
	return b, nil
}

// Open loads a snapshot written by Save. It returns ErrVersion for a newer
// format, ErrCorrupt for missing, truncated or altered files, and wraps
// fs.ErrNotExist when dir holds no snapshot.
func Open(dir string) (*Index, error) {
	m, err := readManifest(dir)
	if err != nil {
		return nil, fmt.Errorf("dense open %s: %w", dir, err)
	}
	if m.Version > FormatVersion {
		return nil, fmt.Errorf("dense open %s: %w: version %d, this build reads up to %d", dir, ErrVersion, m.Version, FormatVersion)
	}
	if m.Version < 1 {
		return nil, fmt.Errorf("dense open %s: %w: version %d", dir, ErrCorrupt, m.Version)
	}
	if err := m.Config.Validate(); err != nil {
		return nil, fmt.Errorf("dense open %s: %w: %v", dir, ErrCorrupt, err)
	}
	items, err := readChecked(dir, m.Items)
	if err != nil {
		return nil, fmt.Errorf("dense open %s: %w", dir, err)
	}
	vectors, err := readChecked(dir, m.Vectors)
	if err != nil {
		return nil, fmt.Errorf("dense open %s: %w", dir, err)
	}
	graph, err := readChecked(dir, m.Graph)
	if err != nil {
		return nil, fmt.Errorf("dense open %s: %w", dir, err)
	}
	ix, err := New(m.Config)
	if err != nil {
		return nil, fmt.Errorf("dense open %s: %w", dir, err)
	}
	if err := ix.readItems(items, m.Next); err != nil {
		return nil, fmt.Errorf("dense open %s: %w: items: %v", dir, ErrCorrupt, err)
	}
	if err := ix.readVectors(vectors, m.Next); err != nil {
		return nil, fmt.Errorf("dense open %s: %w: vectors: %v", dir, ErrCorrupt, err)
	}
	g, err := readGraph(graph, m.Config, ix.rowAt)
	if err != nil {
		return nil, fmt.Errorf("dense open %s: %w: %v", dir, ErrCorrupt, err)
	}
	if len(g.level) > int(m.Next) {
		return nil, fmt.Errorf("dense open %s: %w: graph has %d nums, manifest %d", dir, ErrCorrupt, len(g.level), m.Next)
	}
	g.grow(int(m.Next))
	it := ix.live.Iterator()
	for it.HasNext() {
		if num := it.Next(); g.level[num] < 0 {
			return nil, fmt.Errorf("dense open %s: %w: live item %d not in graph", dir, ErrCorrupt, num)
		}
	}
	ix.g = g
	return ix, nil
}

// readItems decodes writeItems' format into the index's records and bitmaps.
func (ix *Index) readItems(b []byte, next uint32) error {
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
	ix.next = next
	ix.recs = make([]record, next)
	for i := uint32(0); i < count; i++ {
		num, err := u32()
		if err != nil {
			return err
		}
		if num >= next || ix.live.Contains(num) {
			return fmt.Errorf("bad num %d", num)
		}
		var rec record
		if rec.id, err = str(); err != nil {
			return err
		}
		if rec.tenant, err = str(); err != nil {
			return err
		}
		nm, err := u32()
		if err != nil {
			return err
		}
		if nm > 0 {
			rec.meta = make(map[string]string, min(nm, 64))
		}
		for j := uint32(0); j < nm; j++ {
			k, err := str()
			if err != nil {
				return err
			}
			v, err := str()
			if err != nil {
				return err
			}
			rec.meta[k] = v
		}
		if _, dup := ix.byID[rec.id]; dup || rec.id == "" {
			return fmt.Errorf("bad or duplicate id %q", rec.id)
		}
		ix.index(num, rec)
	}
	if len(b) != 0 {
		return fmt.Errorf("%d trailing bytes", len(b))
	}
	return nil
}

// writeVectors writes the rows of nums [0, next) as little-endian float32.
func (ix *Index) writeVectors(w io.Writer) error {
	b := make([]byte, 0, 1<<16)
	for num := uint32(0); num < ix.next; num++ {
		for _, x := range ix.rowAt(num) {
			b = binary.LittleEndian.AppendUint32(b, math.Float32bits(x))
		}
		if len(b) >= 1<<16-4*ix.cfg.Dim {
			if _, err := w.Write(b); err != nil {
				return err
			}
			b = b[:0]
		}
	}
	_, err := w.Write(b)
	return err
}

// readVectors fills the slabs from writeVectors' format.
func (ix *Index) readVectors(b []byte, next uint32) error {
	d := ix.cfg.Dim
	if len(b) != int(next)*d*4 {
		return fmt.Errorf("%d bytes for %d rows of %d", len(b), next, d)
	}
	for num := uint32(0); num < next; num++ {
		row := ix.row(num)
		for i := range row {
			x := math.Float32frombits(binary.LittleEndian.Uint32(b))
			if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
				return fmt.Errorf("row %d is not finite", num)
			}
			row[i] = x
			b = b[4:]
		}
	}
	return nil
}
