package models_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/hybrank/hybrank/models"
)

func TestConfigValidate(t *testing.T) {
	ok := models.DefaultConfig()
	tests := []struct {
		name string
		mod  func(*models.Config)
		want error
	}{
		{"default", func(*models.Config) {}, nil},
		{"embedder default", func(c *models.Config) { *c = models.DefaultEmbedderConfig() }, nil},
		{"dir without profile", func(c *models.Config) { c.Profile, c.Dir = "", "/x" }, nil},
		{"neither dir nor profile", func(c *models.Config) { c.Profile = "" }, models.ErrInvalidConfig},
		{"unknown profile", func(c *models.Config) { c.Profile = "huge" }, models.ErrUnknownProfile},
		{"bad provider", func(c *models.Config) { c.Provider = "tpu" }, models.ErrInvalidConfig},
		{"bad graph opt", func(c *models.Config) { c.GraphOptimization = "max" }, models.ErrInvalidConfig},
		{"negative threads", func(c *models.Config) { c.IntraOpThreads = -1 }, models.ErrInvalidConfig},
		{"zero pool", func(c *models.Config) { c.PoolSize = 0 }, models.ErrInvalidConfig},
		{"zero max docs", func(c *models.Config) { c.MaxDocs = 0 }, models.ErrInvalidConfig},
		{"zero max chars", func(c *models.Config) { c.MaxChars = 0 }, models.ErrInvalidConfig},
		{"max length 2", func(c *models.Config) { c.MaxLength = 2 }, models.ErrInvalidConfig},
		{"max length 513", func(c *models.Config) { c.MaxLength = 513 }, models.ErrInvalidConfig},
		{"batch below length", func(c *models.Config) { c.MaxLength = 256; c.MaxBatchTokens = 255 }, models.ErrInvalidConfig},
		{"batch below 512 with auto length", func(c *models.Config) { c.MaxBatchTokens = 500 }, models.ErrInvalidConfig},
		{"small batch with small length", func(c *models.Config) { c.MaxLength = 64; c.MaxBatchTokens = 64 }, nil},
		{"tokens batching", func(c *models.Config) { c.Batching = models.BatchingTokens }, nil},
		{"empty batching means cost", func(c *models.Config) { c.Batching = "" }, nil},
		{"bad batching", func(c *models.Config) { c.Batching = "greedy" }, models.ErrInvalidConfig},
		{"negative batch bytes", func(c *models.Config) { c.MaxBatchBytes = -1 }, models.ErrInvalidConfig},
		{"no byte cap", func(c *models.Config) { c.MaxBatchBytes = 0 }, nil},
		{"negative calibration", func(c *models.Config) { c.CalibrationMillis = -1 }, models.ErrInvalidConfig},
		{"hour-long calibration", func(c *models.Config) { c.CalibrationMillis = 3_600_000 }, models.ErrInvalidConfig},
		{"default calibration", func(c *models.Config) { c.CalibrationMillis = 0 }, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := ok
			tt.mod(&c)
			err := c.Validate()
			if !errors.Is(err, tt.want) || (tt.want == nil) != (err == nil) {
				t.Fatalf("Validate() = %v, want %v", err, tt.want)
			}
		})
	}
}

func TestProfiles(t *testing.T) {
	want := map[string][4]int{
		"fast":     {2, 128, 2, 512},
		"balanced": {6, 384, 12, 1536},
		"accurate": {12, 384, 12, 1536},
		"embed":    {6, 384, 12, 1536},
	}
	ps := models.Profiles()
	if len(ps) != len(want) {
		t.Fatalf("%d profiles", len(ps))
	}
	for _, p := range ps {
		w, ok := want[p.Name]
		if !ok || [4]int{p.Layers, p.Hidden, p.Heads, p.Intermediate} != w {
			t.Errorf("profile %+v, want shape %v", p, w)
		}
		c, err := models.ProfileConfig(p.Name)
		if err != nil || c.Validate() != nil {
			t.Errorf("ProfileConfig(%s) = %+v, %v", p.Name, c, err)
		}
		if c.Normalize != (p.Kind == models.KindEmbedder) {
			t.Errorf("%s: Normalize %v", p.Name, c.Normalize)
		}
	}
	if _, err := models.LookupProfile("nope"); !errors.Is(err, models.ErrUnknownProfile) {
		t.Fatalf("LookupProfile(nope) = %v", err)
	}
}

func writeFile(t *testing.T, path, body string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestOpenModelDir(t *testing.T) {
	const cfgJSON = `{"architectures":["BertForSequenceClassification"],"hidden_size":128,"max_position_embeddings":512,"num_hidden_layers":2}`
	tests := []struct {
		name    string
		files   map[string]string
		wantErr bool
		check   func(t *testing.T, md models.ModelDir)
	}{
		{"missing dir", nil, true, nil},
		{"no config", map[string]string{"vocab.txt": "x", "model.onnx": "x"}, true, nil},
		{"bad config json", map[string]string{"config.json": "{", "vocab.txt": "x", "model.onnx": "x"}, true, nil},
		{"config without sizes", map[string]string{"config.json": "{}", "vocab.txt": "x", "model.onnx": "x"}, true, nil},
		{"no onnx", map[string]string{"config.json": cfgJSON, "vocab.txt": "x"}, true, nil},
		{"no tokenizer", map[string]string{"config.json": cfgJSON, "onnx/model.onnx": "x"}, true, nil},
		{"root model and vocab", map[string]string{"config.json": cfgJSON, "vocab.txt": "x", "model.onnx": "x"}, false,
			func(t *testing.T, md models.ModelDir) {
				if filepath.Base(md.ONNXPath) != "model.onnx" || md.VocabTxt == "" || md.TokenizerJSON != "" || !md.LowerCase {
					t.Fatalf("%+v", md)
				}
				if md.Config.HiddenSize != 128 || md.Config.Architectures[0] != "BertForSequenceClassification" {
					t.Fatalf("config %+v", md.Config)
				}
			}},
		{"onnx dir preferred, tokenizer.json, cased", map[string]string{
			"config.json": cfgJSON, "vocab.txt": "x", "tokenizer.json": "{}", "model.onnx": "x", "onnx/model.onnx": "x",
			"tokenizer_config.json": `{"do_lower_case": false}`}, false,
			func(t *testing.T, md models.ModelDir) {
				if filepath.Base(filepath.Dir(md.ONNXPath)) != "onnx" || md.TokenizerJSON == "" || md.LowerCase {
					t.Fatalf("%+v", md)
				}
			}},
		{"bad tokenizer_config", map[string]string{"config.json": cfgJSON, "vocab.txt": "x", "model.onnx": "x", "tokenizer_config.json": "["}, true, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "m")
			for name, body := range tt.files {
				writeFile(t, filepath.Join(dir, name), body)
			}
			md, err := models.OpenModelDir(dir)
			if tt.wantErr {
				if !errors.Is(err, models.ErrModelDir) {
					t.Fatalf("err %v, want ErrModelDir", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, md)
		})
	}
}

func TestBatchingDefaults(t *testing.T) {
	c := models.DefaultConfig()
	if c.BatchingMode() != models.BatchingCost || c.MaxBatchBytes != models.DefaultMaxBatchBytes ||
		c.CalibrationBudget() != models.DefaultCalibrationMillis {
		t.Fatalf("default config batching: %s", c)
	}
	c.Batching, c.CalibrationMillis = "", 0
	if c.BatchingMode() != models.BatchingCost || c.CalibrationBudget() != models.DefaultCalibrationMillis {
		t.Fatalf("zero values do not mean the defaults: %q %d", c.BatchingMode(), c.CalibrationBudget())
	}
}

func TestResolveDirPrefersRealModel(t *testing.T) {
	real, gen := t.TempDir(), t.TempDir()
	t.Setenv(models.ModelsEnv, gen)
	t.Setenv(models.RealModelsEnv, real)
	embed := models.DefaultEmbedderConfig()
	if d, err := embed.ResolveDir(); err != nil || d != filepath.Join(gen, models.ProfileEmbed) {
		t.Fatalf("no real model yet: %q %v, want the generated dir", d, err)
	}
	dir := filepath.Join(real, "all-minilm-l6-v2")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	if d, err := embed.ResolveDir(); err != nil || d != dir {
		t.Fatalf("with the real model: %q %v, want %q", d, err, dir)
	}
	if d, _ := models.DefaultConfig().ResolveDir(); d != filepath.Join(gen, models.ProfileBalanced) {
		t.Fatalf("balanced has no real model: %q", d)
	}
	embed.Dir = "/explicit"
	if d, _ := embed.ResolveDir(); d != "/explicit" {
		t.Fatalf("explicit Dir: %q", d)
	}
}

func TestActivationBytes(t *testing.T) {
	p, _ := models.LookupProfile(models.ProfileBalanced)
	c := models.HFConfig{HiddenSize: p.Hidden, NumAttentionHeads: p.Heads, IntermediateSize: p.Intermediate}
	// 4 × (b·L·(7·384 + 2·1536) + 2·b·12·L²)
	if got, want := c.ActivationBytes(1, 512), int64(4*(512*5760+24*512*512)); got != want {
		t.Fatalf("ActivationBytes(1, 512) = %d, want %d", got, want)
	}
	if c.ActivationBytes(8, 512) > models.DefaultMaxBatchBytes || c.ActivationBytes(43, 375) <= models.DefaultMaxBatchBytes {
		t.Fatal("DefaultMaxBatchBytes no longer separates 8×512 from 43×375 for balanced (its doc says it does)")
	}
	// Doubling the length more than doubles the bytes (the L² term).
	if c.ActivationBytes(4, 256) <= 2*c.ActivationBytes(4, 128) {
		t.Fatal("no quadratic term")
	}
	// Unknown heads and FFN width fall back to BERT's ratios.
	bare := models.HFConfig{HiddenSize: 384}
	if got := bare.ActivationBytes(2, 64); got != 4*(2*64*(7*384+2*1536)+2*2*6*64*64) {
		t.Fatalf("bare config: %d", got)
	}
}
