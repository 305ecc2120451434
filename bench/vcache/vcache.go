package vcache

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"github.com/hybrank/hybrank/models"
	"github.com/hybrank/hybrank/models/ort"
)

// Key is what decides a model's vectors: the ONNX file's bytes, the
// tokenizer's files (tokenizer.json and vocab.txt, as present) and its
// lowercasing, the resolved pooling, normalisation and prompts
// (models.ModelDir.Embedding), the sequence length, the character cap and
// how models/ort computes, its plan for mc (ort.Plan.Key: the
// quantization, the weight and activation codes, the rewrites, the
// attention, and ort.PlanVersion, the arithmetic's generation, so that
// vectors made by an older hybrank miss). Two configurations with the
// same Key embed every text identically.
func Key(md models.ModelDir, mc models.Config, plan ort.Plan) (string, error) {
	h := sha256.New()
	for _, p := range []string{md.ONNXPath, md.TokenizerJSON, md.VocabTxt} {
		if p == "" {
			h.Write([]byte{0})
			continue
		}
		sum := sha256.New()
		f, err := os.Open(p)
		if err != nil {
			return "", err
		}
		_, err = io.Copy(sum, f)
		f.Close()
		if err != nil {
			return "", err
		}
		h.Write(sum.Sum(nil))
	}
	st, err := json.Marshal(md.Embedding(mc))
	if err != nil {
		return "", err
	}
	fmt.Fprintf(h, "\x00%s\x00%d\x00%d\x00%t\x00%s", st, md.SequenceLength(mc), mc.MaxChars, md.LowerCase, plan.Key())
	return hex.EncodeToString(h.Sum(nil)), nil
}

// Stats counts what an Embedder served from the cache (Hits) and what it
// computed (Misses), in texts.
type Stats struct {
	Hits, Misses int
}

// Embedder wraps a models.Embedder with the on-disk cache of Dir.
type Embedder struct {
	inner models.Embedder
	dir   string
	name  string // file name prefix: the model's name and key
	// Batch is the texts per call to the wrapped embedder (default 32).
	batch int
	// Progress, when set, is told how many texts each inner call embedded.
	progress func(n int)
	// only, when set, lists the input kinds cached; others pass through.
	only []models.Input

	mu    sync.Mutex
	kinds map[models.Input]*store
	stats Stats
}

// Option tunes an Embedder.
type Option func(*Embedder)

// WithBatch sets the texts per call to the wrapped embedder.
func WithBatch(n int) Option { return func(e *Embedder) { e.batch = max(n, 1) } }

// WithProgress calls f with the number of texts of each embedded batch.
func WithProgress(f func(n int)) Option { return func(e *Embedder) { e.progress = f } }

// WithOnly caches texts of these input kinds only; the others go straight
// to the wrapped embedder every time (a benchmark that times query
// embedding caches documents alone).
func WithOnly(kinds ...models.Input) Option { return func(e *Embedder) { e.only = kinds } }

// New returns inner behind the cache in dir for the model named name
// whose Key is key. dir "" caches in memory only.
func New(inner models.Embedder, dir, name, key string, opts ...Option) (*Embedder, error) {
	if inner == nil || key == "" || name == "" {
		return nil, errors.New("vcache: need an embedder, a model name and a key")
	}
	if filepath.Base(name) != name {
		return nil, fmt.Errorf("vcache: model name %q is not a plain file name", name)
	}
	e := &Embedder{inner: inner, dir: dir, name: name + "-" + key[:min(16, len(key))], batch: 32, kinds: map[models.Input]*store{}}
	for _, o := range opts {
		o(e)
	}
	return e, nil
}

// Wrap puts be, the embedder of model directory mc.Dir under mc, behind
// the cache in dir: New with the folder's base name and Key.
func Wrap(be models.Embedder, mc models.Config, dir string, opts ...Option) (*Embedder, error) {
	md, err := models.OpenModelDir(mc.Dir)
	if err != nil {
		return nil, err
	}
	plan, err := ort.PlanFor(mc)
	if err != nil {
		return nil, err
	}
	key, err := Key(md, mc, plan)
	if err != nil {
		return nil, err
	}
	return New(be, dir, filepath.Base(filepath.Clean(mc.Dir)), key, opts...)
}

// Dim is the wrapped embedder's dimension.
func (e *Embedder) Dim() int { return e.inner.Dim() }

// Stats returns the hits and misses so far.
func (e *Embedder) Stats() Stats {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.stats
}

// Embed returns the vectors of texts as kind in: cached ones from the
// cache, the others from the wrapped embedder (in order of length, in
// batches), which are then appended to the cache. Returned vectors must
// not be modified.
func (e *Embedder) Embed(ctx context.Context, in models.Input, texts []string) ([][]float32, error) {
	if e.only != nil && !slices.Contains(e.only, in) {
		v, _, err := models.Embed(ctx, e.inner, in, texts)
		return v, err
	}
	s, err := e.store(in)
	if err != nil {
		return nil, err
	}
	out := make([][]float32, len(texts))
	var miss []int
	keys := make([][sha256.Size]byte, len(texts))
	s.mu.Lock()
	for i, t := range texts {
		keys[i] = sha256.Sum256([]byte(t))
		if v, ok := s.vecs[keys[i]]; ok {
			out[i] = v
		} else {
			miss = append(miss, i)
		}
	}
	s.mu.Unlock()
	e.mu.Lock()
	e.stats.Hits += len(texts) - len(miss)
	e.stats.Misses += len(miss)
	e.mu.Unlock()
	// Similar lengths in one batch pad little: characters stand in for tokens.
	slices.SortStableFunc(miss, func(a, b int) int { return len(texts[a]) - len(texts[b]) })
	batch := make([]string, 0, e.batch)
	for start := 0; start < len(miss); start += e.batch {
		idx := miss[start:min(start+e.batch, len(miss))]
		batch = batch[:0]
		for _, i := range idx {
			batch = append(batch, texts[i])
		}
		v, _, err := models.Embed(ctx, e.inner, in, batch)
		if err != nil {
			return nil, err
		}
		if len(v) != len(idx) {
			return nil, fmt.Errorf("vcache: embedder returned %d vectors for %d texts", len(v), len(idx))
		}
		for k, i := range idx {
			out[i] = v[k]
		}
		if err := s.put(keys, idx, v); err != nil {
			return nil, err
		}
		if e.progress != nil {
			e.progress(len(idx))
		}
	}
	return out, nil
}

// EmbedPooled implements models.Embedder with Embed: its vectors are the
// wrapped model's final ones (normalised as the model says), which is why
// Capabilities says no Normalize is left to do.
func (e *Embedder) EmbedPooled(ctx context.Context, in models.Input, texts []string) ([][]float32, models.Usage, error) {
	v, err := e.Embed(ctx, in, texts)
	return v, models.Usage{Pairs: len(texts)}, err
}

// EmbedSpans implements models.Embedder: the wrapped model's, uncached.
func (e *Embedder) EmbedSpans(ctx context.Context, in models.Input, texts []string, ch models.Chunking) ([]models.SpanVectors, models.Usage, error) {
	return e.inner.EmbedSpans(ctx, in, texts, ch)
}

// Capabilities implements models.Embedder: the wrapped model's, without
// Normalize (Embed's vectors are final).
func (e *Embedder) Capabilities() models.Capabilities {
	c := e.inner.Capabilities()
	c.Embedding.Normalize = false
	return c
}

// Load implements models.Embedder: the wrapped model's Load.
func (e *Embedder) Load() error { return e.inner.Load() }

// Close flushes and closes the cache files (not the wrapped embedder).
func (e *Embedder) Close() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	var errs []error
	for _, s := range e.kinds {
		errs = append(errs, s.close())
	}
	e.kinds = map[models.Input]*store{}
	return errors.Join(errs...)
}

// store returns the open cache of kind in, loading its file on first use.
func (e *Embedder) store(in models.Input) (*store, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if s, ok := e.kinds[in]; ok {
		return s, nil
	}
	kind := string(in)
	if kind == "" {
		kind = "raw"
	}
	s := &store{dim: e.inner.Dim(), vecs: map[[sha256.Size]byte][]float32{}}
	if e.dir != "" {
		if err := s.open(filepath.Join(e.dir, e.name+"-"+kind+".vec")); err != nil {
			return nil, err
		}
	}
	e.kinds[in] = s
	return s, nil
}

// store is one (model, kind) cache: the vectors in memory and the file
// that records are appended to (nil in memory-only mode).
type store struct {
	dim  int
	mu   sync.Mutex
	vecs map[[sha256.Size]byte][]float32
	f    *os.File
	w    *bufio.Writer
}

// recordSize is the bytes of one record: the text hash and the vector.
func (s *store) recordSize() int { return sha256.Size + 4*s.dim }

// open reads path's whole records and positions the file after them, so
// a torn tail is overwritten by the next append.
func (s *store) open(path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	raw, err := io.ReadAll(f)
	if err != nil {
		f.Close()
		return err
	}
	rs := s.recordSize()
	whole := len(raw) / rs * rs
	for off := 0; off < whole; off += rs {
		var k [sha256.Size]byte
		copy(k[:], raw[off:])
		v := make([]float32, s.dim)
		for j := range v {
			v[j] = math.Float32frombits(binary.LittleEndian.Uint32(raw[off+sha256.Size+4*j:]))
		}
		s.vecs[k] = v
	}
	if err := f.Truncate(int64(whole)); err != nil {
		f.Close()
		return err
	}
	if _, err := f.Seek(int64(whole), io.SeekStart); err != nil {
		f.Close()
		return err
	}
	s.f, s.w = f, bufio.NewWriterSize(f, 1<<20)
	return nil
}

// put records the vectors v of the texts idx (whose hashes are in keys)
// and writes them through to the file.
func (s *store) put(keys [][sha256.Size]byte, idx []int, v [][]float32) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, i := range idx {
		if len(v[k]) != s.dim {
			return fmt.Errorf("vcache: vector of dimension %d, want %d", len(v[k]), s.dim)
		}
		s.vecs[keys[i]] = v[k]
		if s.w == nil {
			continue
		}
		s.w.Write(keys[i][:])
		var b [4]byte
		for _, x := range v[k] {
			binary.LittleEndian.PutUint32(b[:], math.Float32bits(x))
			s.w.Write(b[:])
		}
	}
	if s.w == nil {
		return nil
	}
	return s.w.Flush()
}

// close flushes and closes the file.
func (s *store) close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f == nil {
		return nil
	}
	err := errors.Join(s.w.Flush(), s.f.Close())
	s.f, s.w = nil, nil
	return err
}
