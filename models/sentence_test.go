package models_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hybrank/hybrank/models"
)

// writeDir writes a minimal model directory plus the given extra files.
func writeDir(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	base := map[string]string{
		"config.json":     `{"hidden_size": 384, "max_position_embeddings": 512}`,
		"vocab.txt":       "[PAD]\n[UNK]\n[CLS]\n[SEP]\n",
		"onnx/model.onnx": "not parsed by OpenModelDir",
	}
	for k, v := range files {
		base[k] = v
	}
	for name, body := range base {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

const stModules = `[
 {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
 {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
 {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"}]`

func TestSentenceConfig(t *testing.T) {
	tests := []struct {
		name    string
		files   map[string]string
		want    models.SentenceConfig
		wantErr error
	}{
		{"bare export", nil, models.SentenceConfig{}, nil},
		{"all-MiniLM-L6-v2", map[string]string{
			"modules.json":              stModules,
			"1_Pooling/config.json":     `{"word_embedding_dimension": 384, "pooling_mode_cls_token": false, "pooling_mode_mean_tokens": true, "pooling_mode_max_tokens": false, "pooling_mode_mean_sqrt_len_tokens": false}`,
			"sentence_bert_config.json": `{"max_seq_length": 256, "do_lower_case": false}`,
		}, models.SentenceConfig{Present: true, Pooling: models.PoolingMean, Normalize: true, MaxSeqLength: 256}, nil},
		{"e5 prompts (passage)", map[string]string{
			"modules.json":                      stModules,
			"1_Pooling/config.json":             `{"pooling_mode_mean_tokens": true}`,
			"config_sentence_transformers.json": `{"prompts": {"query": "query: ", "passage": "passage: "}, "default_prompt_name": null}`,
		}, models.SentenceConfig{Present: true, Pooling: models.PoolingMean, Normalize: true, QueryPrompt: "query: ", DocumentPrompt: "passage: "}, nil},
		{"bge cls, document prompt", map[string]string{
			"modules.json":                      stModules,
			"1_Pooling/config.json":             `{"pooling_mode_cls_token": true, "pooling_mode_mean_tokens": false}`,
			"config_sentence_transformers.json": `{"prompts": {"query": "Represent this sentence for searching relevant passages: ", "document": ""}}`,
		}, models.SentenceConfig{Present: true, Pooling: models.PoolingCLS, Normalize: true, QueryPrompt: "Represent this sentence for searching relevant passages: "}, nil},
		{"max and mean-sqrt-len", map[string]string{
			"modules.json":  `[{"path": "p", "type": "sentence_transformers.models.Pooling"}]`,
			"p/config.json": `{"pooling_mode_max_tokens": true}`,
		}, models.SentenceConfig{Present: true, Pooling: models.PoolingMax}, nil},
		{"two modes", map[string]string{
			"modules.json":          stModules,
			"1_Pooling/config.json": `{"pooling_mode_cls_token": true, "pooling_mode_mean_tokens": true}`,
		}, models.SentenceConfig{}, models.ErrUnsupportedModel},
		{"weighted mean", map[string]string{
			"modules.json":          stModules,
			"1_Pooling/config.json": `{"pooling_mode_weightedmean_tokens": true}`,
		}, models.SentenceConfig{}, models.ErrUnsupportedModel},
		{"dense module", map[string]string{
			"modules.json": `[{"path": "2_Dense", "type": "sentence_transformers.models.Dense"}]`,
		}, models.SentenceConfig{}, models.ErrUnsupportedModel},
		{"pooling dir missing", map[string]string{"modules.json": stModules}, models.SentenceConfig{}, models.ErrModelDir},
		{"broken modules.json", map[string]string{"modules.json": `{`}, models.SentenceConfig{}, models.ErrModelDir},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			md, err := models.OpenModelDir(writeDir(t, tt.files))
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("err %v, want %v", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if md.Sentence != tt.want {
				t.Fatalf("Sentence = %+v, want %+v", md.Sentence, tt.want)
			}
		})
	}
}

func TestEmbeddingResolution(t *testing.T) {
	md, err := models.OpenModelDir(writeDir(t, map[string]string{
		"modules.json":                      stModules,
		"1_Pooling/config.json":             `{"pooling_mode_cls_token": true}`,
		"sentence_bert_config.json":         `{"max_seq_length": 256}`,
		"config_sentence_transformers.json": `{"prompts": {"query": "q: ", "document": "d: "}}`,
	}))
	if err != nil {
		t.Fatal(err)
	}
	cfg := models.DefaultEmbedderConfig()
	cfg.Normalize = false
	if got, want := md.Embedding(cfg), (models.Embedding{Pooling: models.PoolingCLS, Normalize: true, QueryPrefix: "q: ", DocumentPrefix: "d: "}); got != want {
		t.Fatalf("directory settings: %+v, want %+v", got, want)
	}
	if got := md.SequenceLength(cfg); got != 256 {
		t.Fatalf("SequenceLength = %d, want max_seq_length 256", got)
	}
	cfg.MaxLength = 128
	if got := md.SequenceLength(cfg); got != 128 {
		t.Fatalf("SequenceLength with MaxLength 128 = %d", got)
	}
	cfg.Pooling, cfg.QueryPrefix, cfg.NoDirPrompts = models.PoolingMean, "query: ", true
	if got, want := md.Embedding(cfg), (models.Embedding{Pooling: models.PoolingMean, Normalize: true, QueryPrefix: "query: "}); got != want {
		t.Fatalf("overrides: %+v, want %+v", got, want)
	}
	if p := (models.Embedding{QueryPrefix: "a", DocumentPrefix: "b"}); p.Prefix(models.InputQuery) != "a" || p.Prefix(models.InputDocument) != "b" || p.Prefix(models.InputRaw) != "" {
		t.Fatalf("Prefix: %q %q %q", p.Prefix(models.InputQuery), p.Prefix(models.InputDocument), p.Prefix(models.InputRaw))
	}
	bad := models.DefaultEmbedderConfig()
	bad.Pooling = "weighted"
	if err := bad.Validate(); !errors.Is(err, models.ErrInvalidConfig) {
		t.Fatalf("Validate with pooling %q: %v", bad.Pooling, err)
	}
}

// TestModulePathAndSeqLength: a Pooling module outside the model
// directory, and a max_seq_length that cannot hold [CLS] x [SEP], are
// ErrModelDir (the first had read another directory's config, the second
// had been used as the window).
func TestModulePathAndSeqLength(t *testing.T) {
	for _, p := range []string{"../outside", "/abs", `a\b`, "x/../../y"} {
		if _, err := models.ModulePath(p); err == nil {
			t.Errorf("ModulePath(%q) accepted", p)
		}
	}
	if got, err := models.ModulePath("1_Pooling/"); err != nil || got != "1_Pooling" {
		t.Errorf("ModulePath(1_Pooling/) = %q, %v", got, err)
	}
	pooling := `[{"path": "", "type": "sentence_transformers.models.Transformer"}, {"path": "P", "type": "sentence_transformers.models.Pooling"}]`
	good := writeDir(t, map[string]string{"modules.json": strings.Replace(pooling, `"P"`, `"1_Pooling"`, 1),
		"1_Pooling/config.json": `{"pooling_mode_cls_token": true}`, "sentence_bert_config.json": `{"max_seq_length": 3}`})
	if _, err := models.OpenModelDir(good); err != nil {
		t.Fatalf("the good directory: %v", err)
	}
	outside := writeDir(t, map[string]string{"modules.json": strings.Replace(pooling, `"P"`, `"../outside"`, 1)})
	if err := os.MkdirAll(filepath.Join(outside, "../outside"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(outside, "../outside/config.json"), []byte(`{"pooling_mode_cls_token": true}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := models.OpenModelDir(outside); !errors.Is(err, models.ErrModelDir) || !strings.Contains(err.Error(), "leaves the model directory") {
		t.Errorf("a Pooling module outside the directory: %v, want ErrModelDir", err)
	}
	short := writeDir(t, map[string]string{"modules.json": strings.Replace(pooling, `"P"`, `"1_Pooling"`, 1),
		"1_Pooling/config.json": `{"pooling_mode_cls_token": true}`, "sentence_bert_config.json": `{"max_seq_length": -5}`})
	if _, err := models.OpenModelDir(short); !errors.Is(err, models.ErrModelDir) || !strings.Contains(err.Error(), "max_seq_length -5") {
		t.Errorf("max_seq_length -5: %v, want ErrModelDir", err)
	}
}
