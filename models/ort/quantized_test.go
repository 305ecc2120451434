package ort_test

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/hybrank/hybrank/models"
	"github.com/hybrank/hybrank/models/bertgen"
	"github.com/hybrank/hybrank/models/ort"
	"github.com/hybrank/hybrank/onnx/quantize"
)

// TestQuantizeInt8Option loads a generated cross-encoder with Quantize
// "int8": the first load writes one quantized copy into the cache, a
// second load reuses it, the scores stay close to float32's, and a
// directory that is already int8 loads as it is.
func TestQuantizeInt8Option(t *testing.T) {
	dir := generated(t, smallConfig(bertgen.CrossEncoder)).dir
	cache := t.TempDir()
	score := func(q string) []float32 { return quantizedScores(t, dir, q, cache) }
	fp, q1 := score(""), score(models.QuantizeInt8)
	copies, _ := filepath.Glob(filepath.Join(cache, "*"))
	if len(copies) != 1 {
		t.Fatalf("cache holds %v, want one quantized copy", copies)
	}
	if mk, ok, err := quantize.ReadMarker(copies[0]); err != nil || !ok {
		t.Fatalf("copy %s has no quantize marker (%v)", copies[0], err)
	} else if c := mk.Report.Config; c.WeightBits != int8Plan(t, models.Config{}).WeightBits || (c.Smooth != nil) != (int8Plan(t, models.Config{}).Smooth != 0) ||
		c.Smooth != nil && (c.Smooth.Source == "" || mk.Report.Smoothed == 0) {
		t.Errorf("copy made with %d-bit weights (want %d), smoothing %+v (want it: %v), %d activations smoothed",
			c.WeightBits, int8Plan(t, models.Config{}).WeightBits, c.Smooth, (int8Plan(t, models.Config{}).Smooth != 0), mk.Report.Smoothed)
	}
	// The marker is written last by a quantization (the directory itself
	// changes: the cost cache beside the model is rewritten at Close).
	marker := filepath.Join(copies[0], quantize.MarkerFile)
	st, _ := os.Stat(marker)
	q2 := score(models.QuantizeInt8)
	if st2, _ := os.Stat(marker); !st2.ModTime().Equal(st.ModTime()) {
		t.Error("second load rewrote the quantized copy")
	}
	for i := range fp {
		if q1[i] != q2[i] {
			t.Errorf("doc %d: int8 scores differ between loads: %v vs %v", i, q1[i], q2[i])
		}
		if d := math.Abs(float64(q1[i] - fp[i])); d > 0.05*max(1, math.Abs(float64(fp[i]))) || math.IsNaN(d) {
			t.Errorf("doc %d: int8 %v vs float32 %v", i, q1[i], fp[i])
		}
	}
	// A copy written by an older layout (Layout 0: module folders were not
	// copied) is replaced by the next load.
	mk, _, _ := quantize.ReadMarker(copies[0])
	mk.Layout = 0
	raw, err := json.Marshal(mk)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(copies[0], quantize.MarkerFile), raw, 0o644); err != nil {
		t.Fatal(err)
	}
	score(models.QuantizeInt8)
	if mk, ok, err := quantize.ReadMarker(copies[0]); err != nil || !ok || mk.Layout != quantize.MarkerLayout {
		t.Fatalf("old-layout copy not replaced: %+v %v %v", mk, ok, err)
	}
	if again, _ := filepath.Glob(filepath.Join(cache, "*")); len(again) != 1 {
		t.Fatalf("cache holds %v after replacing the copy", again)
	}
	// The quantized copy itself, named as Dir with Quantize int8, loads as it is.
	cfg := cpuConfig(copies[0], models.ProfileFast)
	cfg.Quantize, cfg.QuantizeCache = models.QuantizeInt8, t.TempDir()
	defer loaded(t, cfg).Close()
	if again, _ := filepath.Glob(filepath.Join(cfg.QuantizeCache, "*")); len(again) != 0 {
		t.Fatalf("an int8 directory was quantized again: %v", again)
	}
	bad := cpuConfig(dir, models.ProfileFast)
	bad.Quantize = "int4"
	if _, err := ort.NewCrossEncoder(bad); err == nil {
		t.Fatal("quantize int4 accepted")
	}
}

// TestQuantizeFP16Option loads a cross-encoder with Quantize "fp16": a
// float16 copy is written once into the cache beside the int8 one (told
// apart by name and marker), its scores follow float32's within float16's
// precision (1e-4 on logits near −0.0073) (ONNX Runtime's CPU provider runs this graph in float16 too),
// and an int8 copy is refused as the source of a float16 load.
func TestQuantizeFP16Option(t *testing.T) {
	dir := generated(t, smallConfig(bertgen.CrossEncoder)).dir
	cache := t.TempDir()
	score := func(q string) []float32 { return quantizedScores(t, dir, q, cache) }
	fp, half := score(""), score(models.QuantizeFP16)
	score(models.QuantizeInt8)
	copies, _ := filepath.Glob(filepath.Join(cache, "*-fp16"))
	all, _ := filepath.Glob(filepath.Join(cache, "*"))
	if len(copies) != 1 || len(all) != 2 {
		t.Fatalf("cache holds %v, want one int8 and one fp16 copy", all)
	}
	if m, ok, err := quantize.ReadMarker(copies[0]); err != nil || !ok || m.Of() != quantize.TypeFP16 {
		t.Fatalf("fp16 copy marker %+v %v %v", m, ok, err)
	}
	// The logits are about −0.0073 (float16 spacing there: 7.6e-6); the
	// conversion's error through two layers is about 2e-5.
	for i := range fp {
		if d := math.Abs(float64(half[i] - fp[i])); d > 1e-4 || math.IsNaN(d) {
			t.Errorf("doc %d: fp16 %v vs float32 %v", i, half[i], fp[i])
		}
	}
	int8Copy := ""
	for _, c := range all {
		if c != copies[0] {
			int8Copy = c
		}
	}
	ce, err := ort.NewCrossEncoder(quantizedConfig(int8Copy, models.QuantizeFP16, cache))
	if err == nil {
		err = ce.Load()
		ce.Close()
	}
	if !errors.Is(err, models.ErrInvalidConfig) {
		t.Errorf("fp16 load of an int8 copy: %v", err)
	}
}

// TestQuantizeNamesAgree ties models' Config.Quantize values to
// onnx/quantize's types: the loader converts one into the other by name.
func TestQuantizeNamesAgree(t *testing.T) {
	for q, want := range map[string]quantize.Type{models.QuantizeInt8: quantize.TypeInt8, models.QuantizeFP16: quantize.TypeFP16} {
		cfg, err := quantize.ConfigFor(quantize.Type(q))
		if err != nil || cfg.Type != want || !models.ValidQuantize(q) {
			t.Errorf("%q: config %+v, %v; valid %v", q, cfg, err, models.ValidQuantize(q))
		}
	}
	if _, err := quantize.ConfigFor("int4"); err == nil || models.ValidQuantize("int4") {
		t.Error("int4 accepted")
	}
}

// quantizedConfig is the fast profile on dir, loaded as q with copies in
// cache. Fixed batches: an int8 score depends on its batch mates (the
// activation scale is per tensor), and cost batching plans from what
// earlier loads learned and saved.
func quantizedConfig(dir, q, cache string) models.Config {
	cfg := cpuConfig(dir, models.ProfileFast)
	cfg.Quantize, cfg.QuantizeCache, cfg.Batching = q, cache, models.BatchingTokens
	return cfg
}

// loaded returns a cross-encoder for cfg, loaded (the caller closes it).
func loaded(t testing.TB, cfg models.Config) *ort.CrossEncoder {
	t.Helper()
	ce, err := ort.NewCrossEncoder(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := ce.Load(); err != nil {
		ce.Close()
		t.Fatal(err)
	}
	return ce
}

// quantizedScores loads dir as q and scores four documents for one query.
func quantizedScores(t *testing.T, dir, q, cache string) []float32 {
	t.Helper()
	ce, err := ort.NewCrossEncoder(quantizedConfig(dir, q, cache))
	if err != nil {
		t.Fatal(err)
	}
	defer ce.Close()
	s, err := ce.Score(context.Background(), "where is the cat", []string{"a cat sat on the mat", "dogs bark at night", "the stock market fell", "cats and dogs"})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestQuantizedCopyKey: the cached copy is named by the model file and by
// the files copied with it: an edited config.json makes a new copy (the
// old one served the stale config before), a calibration table written
// beside the model does not.
func TestQuantizedCopyKey(t *testing.T) {
	src := t.TempDir()
	if err := os.CopyFS(src, os.DirFS(generated(t, smallConfig(bertgen.CrossEncoder)).dir)); err != nil {
		t.Fatal(err)
	}
	cache := t.TempDir()
	copies := func() []string {
		quantizedScores(t, src, models.QuantizeInt8, cache)
		c, _ := filepath.Glob(filepath.Join(cache, "*"))
		return c
	}
	first := copies()
	if err := os.WriteFile(filepath.Join(src, "hybrank_cost_0123456789abcdef.json"), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	if again := copies(); len(again) != 1 || again[0] != first[0] {
		t.Fatalf("a calibration table beside the model made a new copy: %v, was %v", again, first)
	}
	cfgPath := filepath.Join(src, "config.json")
	raw, err := os.ReadFile(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	m["max_position_embeddings"] = 128
	if raw, err = json.Marshal(m); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfgPath, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	after := copies()
	if len(after) != 2 {
		t.Fatalf("an edited config.json reused the copy: %v", after)
	}
	for _, c := range after {
		if c == first[0] {
			continue
		}
		got, _ := os.ReadFile(filepath.Join(c, "config.json"))
		if string(got) != string(raw) {
			t.Fatalf("the new copy's config.json is not the edited one: %s", got)
		}
	}
}

// TestQuantizedCopyConcurrentLoads: loads started together on an empty
// cache each quantize, and none deletes the copy another one returned and
// is loading (every load succeeds and scores alike).
func TestQuantizedCopyConcurrentLoads(t *testing.T) {
	dir := generated(t, smallConfig(bertgen.CrossEncoder)).dir
	cache := t.TempDir()
	const n = 4
	errs := make(chan error, n)
	for range n {
		go func() {
			ce, err := ort.NewCrossEncoder(quantizedConfig(dir, models.QuantizeInt8, cache))
			if err == nil {
				_, err = ce.Score(context.Background(), "where is the cat", []string{"a cat sat on the mat", "dogs bark"})
				ce.Close()
			}
			errs <- err
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Errorf("concurrent load: %v", err)
		}
	}
	if all, _ := filepath.Glob(filepath.Join(cache, "*")); len(all) != 1 {
		t.Errorf("cache holds %v, want one copy", all)
	}
	if tmp, _ := filepath.Glob(filepath.Join(cache, ".tmp-*")); len(tmp) != 0 {
		t.Errorf("temporary folders left: %v", tmp)
	}
}

// TestQuantizedCopyCacheInsideModel: a cache folder inside the model
// folder is not part of what names the copy (each load had hashed the
// earlier copies and made one more).
func TestQuantizedCopyCacheInsideModel(t *testing.T) {
	src := t.TempDir()
	if err := os.CopyFS(src, os.DirFS(generated(t, smallConfig(bertgen.CrossEncoder)).dir)); err != nil {
		t.Fatal(err)
	}
	cache := filepath.Join(src, "int8-cache")
	for range 3 {
		quantizedScores(t, src, models.QuantizeInt8, cache)
	}
	if copies, _ := filepath.Glob(filepath.Join(cache, "*")); len(copies) != 1 {
		t.Fatalf("three loads left %v, want one copy", copies)
	}
}

// TestQuantizedCopyPerConfig: a load with 8-bit activation codes wants a
// smoothed copy where the default one (16-bit codes, or per tensor) is
// not (AMX-INT8); it gets a folder of its own, and the default copy stays
// where another load may be reading it. Where neither is smoothed every
// load shares one copy.
func TestQuantizedCopyPerConfig(t *testing.T) {
	dir := generated(t, smallConfig(bertgen.CrossEncoder)).dir
	cache := t.TempDir()
	a8 := func(c *models.Config) { c.Int8ActivationBits = 8 }
	load := func(opt func(*models.Config)) {
		cfg := quantizedConfig(dir, models.QuantizeInt8, cache)
		opt(&cfg)
		loaded(t, cfg).Close()
	}
	load(func(*models.Config) {})
	first, _ := filepath.Glob(filepath.Join(cache, "*"))
	load(a8)
	load(func(c *models.Config) { c.Int8PerTensor = true })
	load(func(*models.Config) {})
	all, _ := filepath.Glob(filepath.Join(cache, "*"))
	smoothA8 := (int8Plan(t, models.Config{Int8ActivationBits: 8}).Smooth != 0)
	want := 1
	if smoothA8 {
		want = 2
	}
	if len(first) != 1 || len(all) != want || (int8Plan(t, models.Config{}).Smooth != 0) {
		t.Fatalf("copies %v after the default load, %v after all (want %d)", first, all, want)
	}
	for _, c := range all {
		mk, ok, err := quantize.ReadMarker(c)
		if err != nil || !ok {
			t.Fatalf("%s: marker %v %v", c, ok, err)
		}
		if smoothed := mk.Report.Config.Smooth != nil; smoothed != (c != first[0] && smoothA8) {
			t.Errorf("%s: smoothed %v", c, smoothed)
		}
	}
}

// int8Plan is the plan of an int8 copy loaded with cfg here (cfg.Quantize
// set to int8).
func int8Plan(t *testing.T, cfg models.Config) ort.Plan {
	t.Helper()
	cfg.Quantize = models.QuantizeInt8
	p, err := ort.PlanFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p
}
