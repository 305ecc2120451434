package vcache

import (
	"context"
	"hash/fnv"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hybrank/hybrank/models"
	"github.com/hybrank/hybrank/models/ort"
)

// fake is a models.Embedder that embeds a text as a vector derived from
// its hash and kind (Embed, which the tests call for the vectors they
// expect), and records the batches it was given.
type fake struct {
	dim     int
	batches [][]string
}

func (f *fake) Dim() int { return f.dim }

func (f *fake) Embed(_ context.Context, in models.Input, texts []string) ([][]float32, error) {
	f.batches = append(f.batches, append([]string(nil), texts...))
	out := make([][]float32, len(texts))
	for i, t := range texts {
		h := fnv.New64a()
		h.Write([]byte(string(in) + "|" + t))
		x := h.Sum64()
		v := make([]float32, f.dim)
		for j := range v {
			v[j] = float32((x>>(j%60))&1023) + float32(j)
		}
		out[i] = v
	}
	return out, nil
}

// EmbedPooled implements models.Embedder with Embed.
func (f *fake) EmbedPooled(ctx context.Context, in models.Input, texts []string) ([][]float32, models.Usage, error) {
	v, err := f.Embed(ctx, in, texts)
	return v, models.Usage{Pairs: len(texts), Batches: 1}, err
}

func (f *fake) EmbedSpans(context.Context, models.Input, []string, models.Chunking) ([]models.SpanVectors, models.Usage, error) {
	return nil, models.Usage{}, models.ErrNoChunking
}

// Capabilities implements models.Embedder: Embed's vectors are taken as
// they are (no Normalize).
func (f *fake) Capabilities() models.Capabilities { return models.Capabilities{} }
func (f *fake) Load() error                       { return nil }

func (f *fake) embedded() int {
	n := 0
	for _, b := range f.batches {
		n += len(b)
	}
	return n
}

func mustEqual(t *testing.T, got, want [][]float32) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d vectors, want %d", len(got), len(want))
	}
	for i := range got {
		for j := range got[i] {
			if got[i][j] != want[i][j] {
				t.Fatalf("vector %d differs at %d: %v vs %v", i, j, got[i][j], want[i][j])
			}
		}
	}
}

func TestCacheHitsAcrossOpens(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	texts := []string{"a much longer text here", "b", "ccc", "dd dd", "b"}
	ref := &fake{dim: 5}
	want, _ := ref.Embed(ctx, models.InputDocument, texts)

	f1 := &fake{dim: 5}
	e1, err := New(f1, dir, "m", "0123456789abcdef0123", WithBatch(2))
	if err != nil {
		t.Fatal(err)
	}
	got, err := e1.Embed(ctx, models.InputDocument, texts)
	if err != nil {
		t.Fatal(err)
	}
	mustEqual(t, got, want)
	// Batches come in order of length.
	for _, b := range f1.batches {
		for k := 1; k < len(b); k++ {
			if len(b[k]) < len(b[k-1]) {
				t.Errorf("batch %q not in order of length", b)
			}
		}
	}
	if st := e1.Stats(); st.Misses != 5 || st.Hits != 0 {
		t.Errorf("stats %+v", st)
	}
	// The same texts as queries are other vectors.
	if _, err := e1.Embed(ctx, models.InputQuery, texts[:1]); err != nil {
		t.Fatal(err)
	}
	if err := e1.Close(); err != nil {
		t.Fatal(err)
	}

	f2 := &fake{dim: 5}
	e2, _ := New(f2, dir, "m", "0123456789abcdef0123")
	got, err = e2.Embed(ctx, models.InputDocument, append(texts, "new"))
	if err != nil {
		t.Fatal(err)
	}
	want2, _ := ref.Embed(ctx, models.InputDocument, append(texts, "new"))
	mustEqual(t, got, want2)
	if f2.embedded() != 1 {
		t.Errorf("reopened cache embedded %d texts, want only the new one", f2.embedded())
	}
	if st := e2.Stats(); st.Hits != 5 || st.Misses != 1 {
		t.Errorf("stats %+v", st)
	}
	e2.Close()

	// Another key misses.
	f3 := &fake{dim: 5}
	e3, _ := New(f3, dir, "m", "fffffffffffffffff")
	if _, err := e3.Embed(ctx, models.InputDocument, texts[:2]); err != nil {
		t.Fatal(err)
	}
	if f3.embedded() != 2 {
		t.Errorf("other key embedded %d, want 2", f3.embedded())
	}
	e3.Close()
}

func TestTornTailIsIgnored(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	f := &fake{dim: 3}
	e, _ := New(f, dir, "m", "k0k0k0k0k0k0k0k0k0")
	if _, err := e.Embed(ctx, models.InputRaw, []string{"x", "y"}); err != nil {
		t.Fatal(err)
	}
	e.Close()
	files, _ := filepath.Glob(filepath.Join(dir, "m-*-raw.vec"))
	if len(files) != 1 {
		t.Fatalf("cache files %v", files)
	}
	st, _ := os.Stat(files[0])
	if err := os.Truncate(files[0], st.Size()-5); err != nil { // a kill mid-record
		t.Fatal(err)
	}
	f2 := &fake{dim: 3}
	e2, _ := New(f2, dir, "m", "k0k0k0k0k0k0k0k0k0")
	got, err := e2.Embed(ctx, models.InputRaw, []string{"x", "y"})
	if err != nil {
		t.Fatal(err)
	}
	want, _ := (&fake{dim: 3}).Embed(ctx, models.InputRaw, []string{"x", "y"})
	mustEqual(t, got, want)
	if f2.embedded() != 1 {
		t.Errorf("embedded %d after a torn tail, want 1", f2.embedded())
	}
	e2.Close()
	st2, _ := os.Stat(files[0])
	if st2.Size() != st.Size() {
		t.Errorf("file size %d after repair, want %d", st2.Size(), st.Size())
	}
}

func TestMemoryOnlyAndBadArgs(t *testing.T) {
	f := &fake{dim: 2}
	e, err := New(f, "", "m", "key")
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := e.Embed(context.Background(), models.InputQuery, []string{strings.Repeat("z", 3)}); err != nil {
			t.Fatal(err)
		}
	}
	if f.embedded() != 1 || e.Dim() != 2 {
		t.Errorf("embedded %d, dim %d", f.embedded(), e.Dim())
	}
	q, _ := New(f, "", "m", "key", WithOnly(models.InputDocument))
	for range 2 {
		if _, err := q.Embed(context.Background(), models.InputQuery, []string{"q"}); err != nil {
			t.Fatal(err)
		}
	}
	if f.embedded() != 3 || q.Stats() != (Stats{}) {
		t.Errorf("WithOnly(document): queries embedded %d times in all, stats %+v", f.embedded()-1, q.Stats())
	}
	if _, err := New(f, "", "a/b", "key"); err == nil {
		t.Error("a model name with a slash was accepted")
	}
	if _, err := New(nil, "", "m", "key"); err == nil {
		t.Error("a nil embedder was accepted")
	}
}

// TestKeyCoversTokenizer: the key changes with the tokenizer's files and
// its lowercasing (they decide the token ids, so the vectors), and stays
// for the same files.
func TestKeyCoversTokenizer(t *testing.T) {
	dir := t.TempDir()
	write := func(name, s string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	md := models.ModelDir{Dir: dir, ONNXPath: write("model.onnx", "graph"), VocabTxt: write("vocab.txt", "[PAD]\na\nb\n"), LowerCase: true}
	key := func(md models.ModelDir) string {
		k, err := Key(md, models.Config{}, ort.NewPlan(models.Config{}, ort.Machine{}))
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	base := key(md)
	if key(md) != base {
		t.Fatal("the same files give another key")
	}
	cased := md
	cased.LowerCase = false
	if key(cased) == base {
		t.Error("lowercasing is not in the key")
	}
	write("vocab.txt", "[PAD]\nb\na\n")
	if key(md) == base {
		t.Error("an edited vocab.txt keeps the key")
	}
	md.TokenizerJSON = write("tokenizer.json", "{}")
	if key(md) == base {
		t.Error("tokenizer.json is not in the key")
	}
}

// TestKeyCoversInt8Arithmetic: how an int8 model computes (per tensor, the
// activation codes, the fusion switch) is in the key, the default codes
// named or not alike; for a float32 model those switches change nothing
// and leave it. The plans are made for a CPU without AMX operators, where
// the int8-only rewrites that an int8 export loaded as it is would get are
// off.
func TestKeyCoversInt8Arithmetic(t *testing.T) {
	dir := t.TempDir()
	onnxPath := filepath.Join(dir, "model.onnx")
	if err := os.WriteFile(onnxPath, []byte("graph"), 0o644); err != nil {
		t.Fatal(err)
	}
	md := models.ModelDir{Dir: dir, ONNXPath: onnxPath}
	key := func(mc models.Config) string {
		k, err := Key(md, mc, ort.NewPlan(mc, ort.Machine{}))
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	int8 := models.Config{Quantize: models.QuantizeInt8}
	if key(int8) == key(models.Config{}) {
		t.Fatal("int8 and float32 share a key")
	}
	if key(int8) != key(models.Config{Quantize: models.QuantizeInt8, Int8ActivationBits: 16}) {
		t.Error("16-bit codes, the default, named explicitly, moved the key")
	}
	seen := map[string]string{key(models.Config{}): "float32", key(int8): "int8"}
	for name, mc := range map[string]models.Config{
		"per tensor":  {Quantize: models.QuantizeInt8, Int8PerTensor: true},
		"8-bit codes": {Quantize: models.QuantizeInt8, Int8ActivationBits: 8},
		"no fusion":   {Quantize: models.QuantizeInt8, DisableFusion: true},
	} {
		k := key(mc)
		if other, ok := seen[k]; ok {
			t.Errorf("%s: same key as %s", name, other)
		}
		seen[k] = name
	}
	if key(models.Config{Int8ActivationBits: 8}) != key(models.Config{}) {
		t.Error("a float32 model's key moved with an int8-only setting")
	}
}
