package manifest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/hybrank/hybrank/internal/atomicfile"
	"github.com/hybrank/hybrank/internal/vfs"
)

// Name is the file name of a manifest inside its snapshot directory.
const Name = "MANIFEST"

// PreviousName is the file name of the previous generation's manifest,
// kept by a Layout with KeepPrevious (see Writer.Commit).
const PreviousName = "MANIFEST.prev"

// checksumPrefix starts the line after the JSON body that carries the
// body's crc32c in hex.
const checksumPrefix = "\ncrc32c:"

// castagnoli is the one checksum this package writes and verifies (crc32c:
// hardware-accelerated on amd64 and arm64).
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Errors returned by this package. The owning format's Layout can add its
// own sentinels to the chain (Layout.ErrCorrupt, Layout.ErrVersion).
var (
	// ErrNoManifest is returned by Read when the directory holds no
	// manifest; it wraps the fs.ErrNotExist of the read.
	ErrNoManifest = errors.New("manifest: no snapshot")
	// ErrCorrupt is returned when a manifest or a file it names cannot be
	// trusted: bad checksum, undecodable, wrong format, missing, truncated
	// or altered file.
	ErrCorrupt = errors.New("manifest: corrupt snapshot")
	// ErrVersion is returned by Read for a manifest written by a newer
	// format version than the Layout reads.
	ErrVersion = errors.New("manifest: unsupported snapshot version")
)

// File records one file named by a manifest: its name relative to the
// snapshot directory (slash separated, never leaving the directory), size
// and crc32c.
type File struct {
	Name   string `json:"name"`
	Size   int64  `json:"size"`
	CRC32C uint32 `json:"crc32c"`
}

// Header is the part of every manifest that this package owns. A format's
// manifest struct embeds it and adds its own fields (which JSON flattens
// beside these).
type Header struct {
	Format     string `json:"format"`
	Version    int    `json:"version"`
	Generation uint64 `json:"generation"`
	Files      []File `json:"files"`
}

// ManifestHeader returns h; through embedding it makes every format's
// manifest a Manifest.
func (h *Header) ManifestHeader() *Header { return h }

// Manifest is a format's manifest: a struct embedding Header.
type Manifest interface {
	ManifestHeader() *Header
}

// Find returns the file of kind in the manifest's generation: one named
// kind-N[.ext] or lying inside the directory kind-N, where N is the
// manifest's generation (any number of digits, so names written with
// another width still match).
func (h *Header) Find(kind string) (File, bool) {
	for _, f := range h.Files {
		first, _, _ := strings.Cut(f.Name, "/")
		if k, g, _, ok := ParseName(first); ok && k == kind && g == h.Generation {
			return f, true
		}
	}
	return File{}, false
}

// Layout describes one snapshot format: the manifest's format name and
// newest version, and the kinds of generation entries it writes. A Layout
// is a plain value, read-only after construction, safe for concurrent use.
type Layout struct {
	// Format is written into Header.Format; Read refuses another.
	Format string
	// Version is the version Writer.Commit writes and the newest Read
	// accepts (versions 1..Version are read).
	Version int
	// Kinds are the name prefixes of the generation entries (files or
	// directories named kind-N[.ext]) the format writes. Cleanup removes
	// those of other generations.
	Kinds []string
	// LegacyName, when set, is the manifest file name of an older layout:
	// Read falls back to it when Name is missing, and Commit removes it
	// once the new manifest is durable.
	LegacyName string
	// Legacy, when set, decodes a manifest of an older layout (one read
	// from LegacyName, or one with no checksum line) into m. It must fill
	// m's Header; Read then validates it like any other. Without it such
	// a manifest is corrupt.
	Legacy func(raw []byte, m Manifest) error
	// KeepPrevious makes Commit keep the generation the current manifest
	// names, and a copy of that manifest as PreviousName, beside the new
	// one: a reader whose current generation fails its checksums can
	// fall back to it (ReadPrevious, Restore).
	KeepPrevious bool
	// ErrNoManifest, ErrCorrupt and ErrVersion, when set, are added to the
	// chain of the corresponding errors of this package, so callers test
	// the owning package's sentinels with errors.Is.
	ErrNoManifest, ErrCorrupt, ErrVersion error
}

// corrupt returns an error wrapping ErrCorrupt and l.ErrCorrupt.
func (l *Layout) corrupt(format string, args ...any) error {
	return l.wrap(ErrCorrupt, l.ErrCorrupt, fmt.Errorf(format, args...))
}

// wrap returns cause wrapped by ours and, when set, theirs.
func (l *Layout) wrap(ours, theirs, cause error) error {
	if theirs == nil {
		return fmt.Errorf("%w: %w", ours, cause)
	}
	return fmt.Errorf("%w: %w: %w", theirs, ours, cause)
}

// GenName is the name of the generation entry of kind: kind-NNNNNN followed
// by ext (which may be empty, e.g. for a directory). At least six digits;
// more once gen passes 999999.
func GenName(kind string, gen uint64, ext string) string {
	return fmt.Sprintf("%s-%06d%s", kind, gen, ext)
}

// ParseName splits a generation entry's name kind-N[.ext][.tmp] into its
// kind, generation and whether it is a temporary; ok is false for names of
// another shape.
func ParseName(name string) (kind string, gen uint64, tmp bool, ok bool) {
	base, tmp := strings.CutSuffix(name, atomicfile.TempSuffix)
	kind, rest, found := strings.Cut(base, "-")
	if !found || kind == "" {
		return "", 0, false, false
	}
	digits := rest
	if i := strings.IndexByte(rest, '.'); i >= 0 {
		digits = rest[:i]
	}
	g, err := strconv.ParseUint(digits, 10, 64)
	if err != nil {
		return "", 0, false, false
	}
	return kind, g, tmp, true
}

// NextGeneration is one above the generation of dir's manifest and of every
// generation entry of l's kinds in dir (temporaries included), so a new
// generation never overwrites a file that a manifest, or a crashed attempt,
// points to. It is 1 for a missing or empty directory.
func (l *Layout) NextGeneration(fsys vfs.FS, dir string) uint64 {
	g, _ := l.nextGeneration(fsys, dir)
	return g
}

// nextGeneration is NextGeneration, with the error of listing dir (a
// missing dir is none): without the listing, a crashed attempt's entries
// could be written over.
func (l *Layout) nextGeneration(fsys vfs.FS, dir string) (uint64, error) {
	var top uint64
	for _, name := range []string{Name, PreviousName, l.LegacyName} {
		if name == "" {
			continue
		}
		if raw, err := fsys.ReadFile(filepath.Join(dir, name)); err == nil {
			if i := bytes.LastIndex(raw, []byte(checksumPrefix)); i >= 0 {
				raw = raw[:i]
			}
			// Best effort: a damaged manifest cannot name a generation.
			var h struct {
				Generation uint64 `json:"generation"`
			}
			if json.Unmarshal(raw, &h) == nil {
				top = max(top, h.Generation)
			}
		}
	}
	entries, err := fsys.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		err = nil
	}
	for _, e := range entries {
		if k, g, _, ok := ParseName(e.Name()); ok && slices.Contains(l.Kinds, k) {
			top = max(top, g)
		}
	}
	return top + 1, err
}

// Seal appends the checksum line to a manifest's JSON body: the bytes a
// manifest file holds.
func Seal(body []byte) []byte {
	return fmt.Appendf(body, "%s%08x\n", checksumPrefix, crc32.Checksum(body, castagnoli))
}

// Unseal verifies raw's checksum line and returns the JSON body before it.
func Unseal(raw []byte) ([]byte, error) {
	body, legacy, err := splitChecksum(raw)
	if err == nil && legacy {
		err = errors.New("no checksum line")
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	return body, nil
}

// splitChecksum returns the JSON body of raw after verifying its checksum
// line; legacy is true when raw has no checksum line at all.
func splitChecksum(raw []byte) (body []byte, legacy bool, err error) {
	i := bytes.LastIndex(raw, []byte(checksumPrefix))
	if i < 0 {
		return raw, true, nil
	}
	body, tail := raw[:i], bytes.TrimSpace(raw[i+len(checksumPrefix):])
	want, perr := strconv.ParseUint(string(tail), 16, 32)
	if perr != nil || uint32(want) != crc32.Checksum(body, castagnoli) {
		return nil, false, errors.New("checksum mismatch")
	}
	return body, false, nil
}

// Read reads dir's manifest into m and validates it: checksum, format,
// version in 1..l.Version, generation ≥ 1 and file names inside dir. A
// manifest of an older layout (LegacyName, or no checksum line) goes
// through l.Legacy. Errors wrap ErrNoManifest (with fs.ErrNotExist),
// ErrCorrupt or ErrVersion; a corrupt manifest's error names its file.
func (l *Layout) Read(fsys vfs.FS, dir string, m Manifest) error {
	raw, err := fsys.ReadFile(filepath.Join(dir, Name))
	legacy := false
	if errors.Is(err, fs.ErrNotExist) && l.LegacyName != "" {
		if raw, err = fsys.ReadFile(filepath.Join(dir, l.LegacyName)); err == nil {
			legacy = true
		}
	}
	if errors.Is(err, fs.ErrNotExist) {
		return l.wrap(ErrNoManifest, l.ErrNoManifest, fmt.Errorf("%s: %w", dir, err))
	}
	if err != nil {
		return fmt.Errorf("read manifest: %w", err)
	}
	name := Name
	if legacy {
		name = l.LegacyName
	}
	return l.decode(filepath.Join(dir, name), raw, legacy, m)
}

// ReadPrevious reads and validates, as Read does, the previous generation's
// manifest (PreviousName) that a Layout with KeepPrevious keeps. Errors
// wrap ErrNoManifest when there is none.
func (l *Layout) ReadPrevious(fsys vfs.FS, dir string, m Manifest) error {
	p := filepath.Join(dir, PreviousName)
	raw, err := fsys.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return l.wrap(ErrNoManifest, l.ErrNoManifest, fmt.Errorf("%s: %w", p, err))
	}
	if err != nil {
		return fmt.Errorf("read previous manifest: %w", err)
	}
	return l.decode(p, raw, false, m)
}

// Restore makes the previous generation current again: it replaces
// MANIFEST with PreviousName's content (atomically, directory fsynced),
// after the current generation failed verification, so that the next
// Commit keeps the generation that was read, not the damaged one, as its
// previous. The previous manifest must verify.
func (l *Layout) Restore(fsys vfs.FS, dir string) error {
	raw, err := fsys.ReadFile(filepath.Join(dir, PreviousName))
	if err != nil {
		return fmt.Errorf("restore previous manifest: %w", err)
	}
	if _, legacy, err := splitChecksum(raw); err != nil || legacy {
		return l.corrupt("restore %s: checksum line missing or wrong", PreviousName)
	}
	if err := atomicfile.WriteBytes(fsys, dir, Name, raw); err != nil {
		return fmt.Errorf("restore previous manifest: %w", err)
	}
	return nil
}

// decode verifies and decodes the manifest raw read from path into m.
func (l *Layout) decode(path string, raw []byte, legacy bool, m Manifest) error {
	body := raw
	var err error
	if !legacy {
		if body, legacy, err = splitChecksum(raw); err != nil {
			return l.corrupt("manifest %s: %w", path, err)
		}
	}
	h := m.ManifestHeader()
	switch {
	case legacy && l.Legacy == nil:
		return l.corrupt("manifest %s has no checksum line", path)
	case legacy:
		if err := l.Legacy(raw, m); err != nil {
			return l.corrupt("manifest %s of an older layout: %w", path, err)
		}
	default:
		if err := json.Unmarshal(body, m); err != nil {
			return l.corrupt("manifest %s does not decode: %w", path, err)
		}
		if h.Format != l.Format {
			return l.corrupt("manifest %s format %q, want %q", path, h.Format, l.Format)
		}
	}
	if h.Version > l.Version {
		return l.wrap(ErrVersion, l.ErrVersion, fmt.Errorf("snapshot version %d, this build reads up to %d", h.Version, l.Version))
	}
	if h.Version < 1 || h.Generation < 1 {
		return l.corrupt("manifest %s: bad version %d or generation %d", path, h.Version, h.Generation)
	}
	for _, f := range h.Files {
		if !localName(f.Name) || f.Size < 0 {
			return l.corrupt("manifest %s names file %q", path, f.Name)
		}
	}
	return nil
}

// localName reports whether name is a clean slash-separated path inside
// the snapshot directory.
func localName(name string) bool {
	return name != "" && filepath.IsLocal(filepath.FromSlash(name)) && path.Clean(name) == name && !strings.Contains(name, `\`)
}

// ReadFile reads the file f of the snapshot in dir and verifies its size and
// checksum against the manifest's record; a mismatch names the file.
func (l *Layout) ReadFile(fsys vfs.FS, dir string, f File) ([]byte, error) {
	if !localName(f.Name) {
		return nil, l.corrupt("bad file name %q", f.Name)
	}
	p := filepath.Join(dir, filepath.FromSlash(f.Name))
	b, err := fsys.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, l.corrupt("%s missing", p)
	}
	if err != nil {
		return nil, err
	}
	if int64(len(b)) != f.Size {
		return nil, l.corrupt("%s is %d bytes, manifest says %d", p, len(b), f.Size)
	}
	if c := crc32.Checksum(b, castagnoli); c != f.CRC32C {
		return nil, l.corrupt("%s checksum %08x, manifest says %08x", p, c, f.CRC32C)
	}
	return b, nil
}

// ReadFiles reads, with ReadFile, the file of each kind (Header.Find) in the
// generation h names, in the order of kinds.
func (l *Layout) ReadFiles(fsys vfs.FS, dir string, h *Header, kinds ...string) ([][]byte, error) {
	out := make([][]byte, len(kinds))
	for i, kind := range kinds {
		f, ok := h.Find(kind)
		if !ok {
			return nil, l.corrupt("manifest names no %s file of generation %d", kind, h.Generation)
		}
		b, err := l.ReadFile(fsys, dir, f)
		if err != nil {
			return nil, err
		}
		out[i] = b
	}
	return out, nil
}

// Writer writes one new generation of a snapshot: files (WriteFile,
// WriteBytes, Mkdir), then the manifest that names them (Commit). Until
// Commit the previous generation stays the one Read sees; an abandoned
// Writer leaves only entries that the next Commit's cleanup removes. A
// Writer is not safe for concurrent use.
type Writer struct {
	l     *Layout
	fs    vfs.FS
	dir   string
	gen   uint64
	files []File
	dirs  []string // subdirectories to fsync before the manifest
	// committed is set once Commit wrote the manifest.
	committed bool
}

// Begin creates dir if needed (durably, atomicfile.MkdirAll) and starts
// generation l.NextGeneration(dir); it fails if dir cannot be listed. Every filesystem call of the Writer
// goes through fsys.
func (l *Layout) Begin(fsys vfs.FS, dir string) (*Writer, error) {
	if err := atomicfile.MkdirAll(fsys, dir); err != nil {
		return nil, err
	}
	gen, err := l.nextGeneration(fsys, dir)
	if err != nil {
		return nil, fmt.Errorf("number the next generation: %w", err)
	}
	return &Writer{l: l, fs: fsys, dir: dir, gen: gen}, nil
}

// Generation is the generation being written.
func (w *Writer) Generation() uint64 { return w.gen }

// Name is GenName(kind, w.Generation(), ext).
func (w *Writer) Name(kind, ext string) string { return GenName(kind, w.gen, ext) }

// Mkdir creates the generation directory kind-N (Name(kind, "")) and returns
// its path; Commit fsyncs it, so entries created in it directly (files,
// further directories) are durable before the manifest.
func (w *Writer) Mkdir(kind string) (string, error) {
	name := w.Name(kind, "")
	p := filepath.Join(w.dir, name)
	if err := w.fs.MkdirAll(p); err != nil {
		return "", err
	}
	w.dirs = append(w.dirs, p)
	return p, nil
}

// WriteFile writes the file name (a local slash-separated path inside the
// snapshot directory, in an existing directory) through write, crash-safely
// (atomicfile: temp file, fsync, rename; the directory is fsynced by
// Commit), and records its size and crc32c for the manifest.
func (w *Writer) WriteFile(name string, write func(io.Writer) error) (File, error) {
	if !localName(name) {
		return File{}, fmt.Errorf("manifest: file name %q leaves the snapshot directory", name)
	}
	h := crc32.New(castagnoli)
	parent, base := path.Split(name)
	n, err := atomicfile.WriteNoSyncDir(w.fs, filepath.Join(w.dir, filepath.FromSlash(parent)), base,
		func(out io.Writer) error { return write(io.MultiWriter(out, h)) })
	if err != nil {
		return File{}, err
	}
	f := File{Name: name, Size: n, CRC32C: h.Sum32()}
	w.files = append(w.files, f)
	return f, nil
}

// WriteBytes is WriteFile for content already in memory.
func (w *Writer) WriteBytes(name string, data []byte) (File, error) {
	return w.WriteFile(name, func(out io.Writer) error {
		_, err := out.Write(data)
		return err
	})
}

// Commit makes the generation current: it fsyncs the directories written
// to, fills m's Header (format, version, generation, the files written),
// with KeepPrevious copies the current manifest, when it verifies, to
// PreviousName (atomicfile), writes the manifest atomically (atomicfile:
// temp, fsync, rename, directory fsync) and then removes what neither the
// new manifest nor, with KeepPrevious, the previous one needs (Cleanup).
// A crash before the manifest's rename leaves the previous generation
// current. On an error the generation is not current (unless only the
// manifest's final directory fsync failed: then it may be) and Abort
// removes its entries.
func (w *Writer) Commit(m Manifest) error {
	for _, d := range append(slices.Clone(w.dirs), w.dir) {
		if err := w.fs.SyncDir(d); err != nil {
			return fmt.Errorf("sync %s: %w", d, err)
		}
	}
	h := m.ManifestHeader()
	h.Format, h.Version, h.Generation, h.Files = w.l.Format, w.l.Version, w.gen, slices.Clone(w.files)
	body, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("encode manifest: %w", err)
	}
	keep := []uint64{w.gen}
	if w.l.KeepPrevious {
		prev, err := w.keepPrevious()
		if err != nil {
			return err
		}
		if prev > 0 {
			keep = append(keep, prev)
		}
	}
	if err := atomicfile.WriteBytes(w.fs, w.dir, Name, Seal(body)); err != nil {
		return fmt.Errorf("write manifest: %w", err)
	}
	w.committed = true
	w.l.Cleanup(w.fs, w.dir, keep...)
	return nil
}

// keepPrevious copies the current manifest to PreviousName when it
// verifies and returns the generation PreviousName names then (0: none).
// A current manifest that is missing or damaged leaves PreviousName as it
// is: it still names the last generation known good.
func (w *Writer) keepPrevious() (uint64, error) {
	gen := func(raw []byte) uint64 {
		body, legacy, err := splitChecksum(raw)
		if err != nil || legacy {
			return 0
		}
		var h struct {
			Generation uint64 `json:"generation"`
		}
		if json.Unmarshal(body, &h) != nil {
			return 0
		}
		return h.Generation
	}
	raw, err := w.fs.ReadFile(filepath.Join(w.dir, Name))
	if err == nil {
		if g := gen(raw); g > 0 {
			if err := atomicfile.WriteBytes(w.fs, w.dir, PreviousName, raw); err != nil {
				return 0, fmt.Errorf("keep previous manifest: %w", err)
			}
			return g, nil
		}
	}
	if raw, err := w.fs.ReadFile(filepath.Join(w.dir, PreviousName)); err == nil {
		return gen(raw), nil
	}
	return 0, nil
}

// Abort removes, best effort, what the Writer wrote for its generation
// (files, directories, temporaries), after a failed write or Commit, so
// that a full disk gets its space back at once rather than at the next
// Commit. It does nothing once Commit succeeded, nor when the manifest
// on disk names the Writer's generation (a Commit whose last directory
// fsync failed after the rename). It returns the first removal error.
func (w *Writer) Abort() error {
	if w.committed {
		return nil
	}
	if raw, err := w.fs.ReadFile(filepath.Join(w.dir, Name)); err == nil {
		if body, _, err := splitChecksum(raw); err == nil {
			var h struct {
				Generation uint64 `json:"generation"`
			}
			if json.Unmarshal(body, &h) == nil && h.Generation == w.gen {
				return nil
			}
		}
	}
	entries, err := w.fs.ReadDir(w.dir)
	if err != nil {
		return fmt.Errorf("abort generation %d: %w", w.gen, err)
	}
	var first error
	for _, e := range entries {
		k, g, _, ok := ParseName(e.Name())
		if ok && g == w.gen && slices.Contains(w.l.Kinds, k) {
			if err := w.fs.RemoveAll(filepath.Join(w.dir, e.Name())); err != nil && first == nil {
				first = err
			}
		}
	}
	return first
}

// Cleanup removes, best effort, what the manifests of the generations in
// keep do not need: generation entries of l's kinds of other generations
// (files or whole directories), temporaries (*.tmp, of any name) and the
// legacy manifest. Call it only once keep's manifests are durable.
func (l *Layout) Cleanup(fsys vfs.FS, dir string, keep ...uint64) {
	entries, _ := fsys.ReadDir(dir)
	for _, e := range entries {
		n := e.Name()
		k, g, tmp, ok := ParseName(n)
		stale := strings.HasSuffix(n, atomicfile.TempSuffix) ||
			(ok && slices.Contains(l.Kinds, k) && (!slices.Contains(keep, g) || tmp)) ||
			(l.LegacyName != "" && n == l.LegacyName)
		if stale {
			fsys.RemoveAll(filepath.Join(dir, n))
		}
	}
}
