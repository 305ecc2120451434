package bertgen_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/hybrank/hybrank/internal/testenv"
	"github.com/hybrank/hybrank/models/bertgen"
	"github.com/hybrank/hybrank/models/safetensors"
	"github.com/hybrank/hybrank/onnx"
)

// hfTranspose turns a graph MatMul weight [in, out] back into torch's
// nn.Linear layout [out, in].
func hfTranspose(m []float32, in, out int) []float32 {
	t := make([]float32, len(m))
	for i := range in {
		for o := range out {
			t[o*in+i] = m[i*out+o]
		}
	}
	return t
}

// checkpoint is a Hugging Face state dict built from Weights, editable by
// tests before it is written.
type checkpoint map[string]safetensors.Tensor

// hfCheckpoint returns w under Hugging Face names: prefix ("" or "bert.")
// on the encoder, nn.Linear weights [out, in], floats stored as dtype, the
// position_ids buffer, and the pooler for both kinds (BertModel carries it).
func hfCheckpoint(t *testing.T, w *bertgen.Weights, prefix string, dtype safetensors.DType) checkpoint {
	t.Helper()
	cfg := w.Config
	h, in := int64(cfg.Hidden), int64(cfg.Intermediate)
	ck := checkpoint{}
	add := func(name string, shape []int64, v []float32) {
		tt, err := safetensors.EncodeFloat32(name, dtype, shape, v)
		if err != nil {
			t.Fatal(err)
		}
		ck[name] = tt
	}
	lin := func(name string, wt, b []float32, din, dout int64) {
		add(name+".weight", []int64{dout, din}, hfTranspose(wt, int(din), int(dout)))
		add(name+".bias", []int64{dout}, b)
	}
	p := prefix + "embeddings."
	add(p+"word_embeddings.weight", []int64{int64(cfg.VocabSize), h}, w.WordEmb)
	add(p+"position_embeddings.weight", []int64{int64(cfg.MaxPositions), h}, w.PosEmb)
	add(p+"token_type_embeddings.weight", []int64{int64(cfg.TypeVocab), h}, w.TypeEmb)
	add(p+"LayerNorm.weight", []int64{h}, w.EmbLNG)
	add(p+"LayerNorm.bias", []int64{h}, w.EmbLNB)
	pos := make([]byte, 8*cfg.MaxPositions)
	for k := range cfg.MaxPositions {
		binary.LittleEndian.PutUint64(pos[8*k:], uint64(k))
	}
	ck[p+"position_ids"] = safetensors.Tensor{Name: p + "position_ids", DType: safetensors.I64, Shape: []int64{1, int64(cfg.MaxPositions)}, Data: pos}
	for l, L := range w.Layers {
		p := prefix + "encoder.layer." + strconv.Itoa(l) + "."
		lin(p+"attention.self.query", L.QueryW, L.QueryB, h, h)
		lin(p+"attention.self.key", L.KeyW, L.KeyB, h, h)
		lin(p+"attention.self.value", L.ValueW, L.ValueB, h, h)
		lin(p+"attention.output.dense", L.AttnOutW, L.AttnOutB, h, h)
		add(p+"attention.output.LayerNorm.weight", []int64{h}, L.AttnLNG)
		add(p+"attention.output.LayerNorm.bias", []int64{h}, L.AttnLNB)
		lin(p+"intermediate.dense", L.InterW, L.InterB, h, in)
		lin(p+"output.dense", L.OutW, L.OutB, in, h)
		add(p+"output.LayerNorm.weight", []int64{h}, L.OutLNG)
		add(p+"output.LayerNorm.bias", []int64{h}, L.OutLNB)
	}
	if w.PoolerW != nil {
		lin(prefix+"pooler.dense", w.PoolerW, w.PoolerB, h, h)
	} else {
		// A BertModel's pooler, unused by the embedder graph.
		add(prefix+"pooler.dense.weight", []int64{h, h}, make([]float32, h*h))
		add(prefix+"pooler.dense.bias", []int64{h}, make([]float32, h))
	}
	if w.ClsW != nil {
		lin("classifier", w.ClsW, w.ClsB, h, 1)
	}
	return ck
}

func (ck checkpoint) bytes(t *testing.T) []byte {
	t.Helper()
	var ts []safetensors.Tensor
	for _, v := range ck {
		ts = append(ts, v)
	}
	var b bytes.Buffer
	if err := safetensors.Write(&b, ts, map[string]string{"format": "pt"}); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func (ck checkpoint) open(t *testing.T) *safetensors.File {
	t.Helper()
	b := ck.bytes(t)
	f, err := safetensors.NewReader(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func (ck checkpoint) rename(from, to string) {
	v := ck[from]
	delete(ck, from)
	v.Name = to
	ck[to] = v
}

func smallWeights(t *testing.T, kind bertgen.Kind) *bertgen.Weights {
	t.Helper()
	w, err := bertgen.GenerateWeights(smallConfig(kind))
	if err != nil {
		t.Fatal(err)
	}
	perturb(w)
	return w
}

// sameWeights compares every tensor of two Weights; round maps a value
// through the checkpoint's dtype.
func sameWeights(t *testing.T, got, want *bertgen.Weights, round func(float32) float32) {
	t.Helper()
	pairs := map[string][2][]float32{
		"word": {got.WordEmb, want.WordEmb}, "pos": {got.PosEmb, want.PosEmb}, "type": {got.TypeEmb, want.TypeEmb},
		"embLNG": {got.EmbLNG, want.EmbLNG}, "embLNB": {got.EmbLNB, want.EmbLNB},
		"poolerW": {got.PoolerW, want.PoolerW}, "poolerB": {got.PoolerB, want.PoolerB},
		"clsW": {got.ClsW, want.ClsW}, "clsB": {got.ClsB, want.ClsB},
	}
	for l := range want.Layers {
		g, w := &got.Layers[l], &want.Layers[l]
		for name, p := range map[string][2][]float32{
			"q": {g.QueryW, w.QueryW}, "qb": {g.QueryB, w.QueryB}, "k": {g.KeyW, w.KeyW}, "kb": {g.KeyB, w.KeyB},
			"v": {g.ValueW, w.ValueW}, "vb": {g.ValueB, w.ValueB}, "ao": {g.AttnOutW, w.AttnOutW}, "aob": {g.AttnOutB, w.AttnOutB},
			"alng": {g.AttnLNG, w.AttnLNG}, "alnb": {g.AttnLNB, w.AttnLNB}, "i": {g.InterW, w.InterW}, "ib": {g.InterB, w.InterB},
			"o": {g.OutW, w.OutW}, "ob": {g.OutB, w.OutB}, "olng": {g.OutLNG, w.OutLNG}, "olnb": {g.OutLNB, w.OutLNB},
		} {
			pairs[fmt.Sprintf("layer%d.%s", l, name)] = p
		}
	}
	for name, p := range pairs {
		if len(p[0]) != len(p[1]) {
			t.Fatalf("%s: %d values, want %d", name, len(p[0]), len(p[1]))
		}
		for k := range p[1] {
			if want := round(p[1][k]); math.Float32bits(p[0][k]) != math.Float32bits(want) {
				t.Fatalf("%s[%d] = %g, want %g", name, k, p[0][k], want)
			}
		}
	}
}

// TestWeightsFromSafetensors maps every parameter back exactly, for both
// kinds, with and without the "bert." prefix, in every float dtype.
func TestWeightsFromSafetensors(t *testing.T) {
	rounds := map[safetensors.DType]func(float32) float32{
		safetensors.F32:  func(x float32) float32 { return x },
		safetensors.F16:  func(x float32) float32 { return safetensors.F16ToFloat32(safetensors.Float32ToF16(x)) },
		safetensors.BF16: func(x float32) float32 { return safetensors.BF16ToFloat32(safetensors.Float32ToBF16(x)) },
	}
	for _, kind := range []bertgen.Kind{bertgen.BiEncoder, bertgen.CrossEncoder} {
		for _, prefix := range []string{"", "bert."} {
			for dt, round := range rounds {
				t.Run(fmt.Sprintf("%s/prefix=%q/%s", kind, prefix, dt), func(t *testing.T) {
					w := smallWeights(t, kind)
					got, err := bertgen.WeightsFromSafetensors(hfCheckpoint(t, w, prefix, dt).open(t), w.Config)
					if err != nil {
						t.Fatal(err)
					}
					sameWeights(t, got, w, round)
				})
			}
		}
	}
}

func TestWeightsFromSafetensorsGammaBeta(t *testing.T) {
	w := smallWeights(t, bertgen.BiEncoder)
	ck := hfCheckpoint(t, w, "", safetensors.F32)
	ck.rename("embeddings.LayerNorm.weight", "embeddings.LayerNorm.gamma")
	ck.rename("encoder.layer.1.output.LayerNorm.bias", "encoder.layer.1.output.LayerNorm.beta")
	got, err := bertgen.WeightsFromSafetensors(ck.open(t), w.Config)
	if err != nil {
		t.Fatal(err)
	}
	sameWeights(t, got, w, func(x float32) float32 { return x })
}

func TestWeightsFromSafetensorsErrors(t *testing.T) {
	bad := func(name string, dtype safetensors.DType, shape []int64) safetensors.Tensor {
		n := int64(1)
		for _, d := range shape {
			n *= d
		}
		return safetensors.Tensor{Name: name, DType: dtype, Shape: shape, Data: make([]byte, n*int64(dtype.Size()))}
	}
	tests := []struct {
		name    string
		kind    bertgen.Kind
		edit    func(checkpoint)
		want    error
		mention string
	}{
		{"missing", bertgen.BiEncoder, func(c checkpoint) { delete(c, "encoder.layer.1.attention.self.key.bias") },
			bertgen.ErrCheckpoint, "missing: encoder.layer.1.attention.self.key.bias"},
		{"missing classifier", bertgen.CrossEncoder, func(c checkpoint) { delete(c, "classifier.weight") },
			bertgen.ErrCheckpoint, "classifier.weight"},
		{"extra", bertgen.BiEncoder, func(c checkpoint) {
			c["cls.predictions.bias"] = bad("cls.predictions.bias", safetensors.F32, []int64{4})
		},
			bertgen.ErrCheckpoint, "unexpected: cls.predictions.bias"},
		{"extra layer", bertgen.BiEncoder, func(c checkpoint) {
			c["encoder.layer.2.output.dense.bias"] = bad("encoder.layer.2.output.dense.bias", safetensors.F32, []int64{32})
		}, bertgen.ErrCheckpoint, "encoder.layer.2.output.dense.bias"},
		{"mixed prefixes", bertgen.BiEncoder, func(c checkpoint) {
			c.rename("encoder.layer.0.output.dense.bias", "bert.encoder.layer.0.output.dense.bias")
		},
			bertgen.ErrCheckpoint, "unexpected: bert.encoder.layer.0.output.dense.bias"},
		{"shape", bertgen.BiEncoder, func(c checkpoint) {
			c["encoder.layer.0.intermediate.dense.weight"] = bad("encoder.layer.0.intermediate.dense.weight", safetensors.F32, []int64{32, 64})
		}, bertgen.ErrCheckpoint, "shape [32 64], want [64 32]"},
		{"two labels", bertgen.CrossEncoder, func(c checkpoint) { c["classifier.weight"] = bad("classifier.weight", safetensors.F32, []int64{2, 32}) },
			bertgen.ErrCheckpoint, "classifier.weight has shape [2 32]"},
		{"int weights", bertgen.BiEncoder, func(c checkpoint) {
			c["embeddings.LayerNorm.bias"] = bad("embeddings.LayerNorm.bias", safetensors.I64, []int64{32})
		},
			safetensors.ErrDType, "embeddings.LayerNorm.bias"},
		{"position ids shifted", bertgen.BiEncoder, func(c checkpoint) {
			p := c["embeddings.position_ids"]
			binary.LittleEndian.PutUint64(p.Data[8*3:], 4)
		}, bertgen.ErrCheckpoint, "position_ids[3] = 4"},
		{"position ids float", bertgen.BiEncoder, func(c checkpoint) {
			c["embeddings.position_ids"] = bad("embeddings.position_ids", safetensors.F32, []int64{1, 64})
		}, safetensors.ErrDType, "position_ids"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := smallWeights(t, tc.kind)
			ck := hfCheckpoint(t, w, "", safetensors.F32)
			tc.edit(ck)
			_, err := bertgen.WeightsFromSafetensors(ck.open(t), w.Config)
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			if !errors.Is(err, bertgen.ErrCheckpoint) {
				t.Fatalf("%v does not wrap ErrCheckpoint", err)
			}
			if !strings.Contains(err.Error(), tc.mention) {
				t.Fatalf("error %q does not mention %q", err, tc.mention)
			}
		})
	}
}

func TestConfigFromHF(t *testing.T) {
	const base = `"model_type":"bert","hidden_act":"gelu","hidden_size":32,"num_hidden_layers":2,"num_attention_heads":4,` +
		`"intermediate_size":64,"vocab_size":100,"max_position_embeddings":64`
	tests := []struct {
		name string
		json string
		kind bertgen.Kind
		want error
	}{
		{"bert model", `{"architectures":["BertModel"],` + base + `}`, bertgen.BiEncoder, nil},
		{"cross-encoder num_labels", `{"architectures":["BertForSequenceClassification"],"num_labels":1,` + base + `}`, bertgen.CrossEncoder, nil},
		{"cross-encoder id2label", `{"architectures":["BertForSequenceClassification"],"id2label":{"0":"LABEL_0"},` + base + `}`, bertgen.CrossEncoder, nil},
		{"two labels", `{"architectures":["BertForSequenceClassification"],"id2label":{"0":"a","1":"b"},` + base + `}`, "", bertgen.ErrUnsupported},
		{"default labels", `{"architectures":["BertForSequenceClassification"],` + base + `}`, "", bertgen.ErrUnsupported},
		{"masked lm", `{"architectures":["BertForMaskedLM"],` + base + `}`, "", bertgen.ErrUnsupported},
		{"no architectures", `{` + base + `}`, "", bertgen.ErrUnsupported},
		{"roberta", `{"architectures":["BertModel"],` + strings.Replace(base, `"bert"`, `"roberta"`, 1) + `}`, "", bertgen.ErrUnsupported},
		{"tanh gelu", `{"architectures":["BertModel"],` + strings.Replace(base, `"gelu"`, `"gelu_new"`, 1) + `}`, "", bertgen.ErrUnsupported},
		{"relative positions", `{"architectures":["BertModel"],"position_embedding_type":"relative_key",` + base + `}`, "", bertgen.ErrUnsupported},
		{"decoder", `{"architectures":["BertModel"],"is_decoder":true,` + base + `}`, "", bertgen.ErrUnsupported},
		{"heads do not divide", `{"architectures":["BertModel"],` + strings.Replace(base, `"num_attention_heads":4`, `"num_attention_heads":5`, 1) + `}`, "", bertgen.ErrBadConfig},
		{"no hidden size", `{"architectures":["BertModel"],` + strings.Replace(base, `"hidden_size":32,`, ``, 1) + `}`, "", bertgen.ErrBadConfig},
		{"not json", `{"architectures":`, "", bertgen.ErrBadConfig},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := bertgen.ConfigFromHF([]byte(tc.json))
			if !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			if err != nil {
				return
			}
			want := bertgen.Config{Kind: tc.kind, Layers: 2, Hidden: 32, Heads: 4, Intermediate: 64, VocabSize: 100,
				MaxPositions: 64, TypeVocab: 2, LayerNormEps: 1e-12, InitStd: 0.02}
			if c != want {
				t.Fatalf("config = %+v, want %+v", c, want)
			}
		})
	}
}

// srcDir writes a Hugging Face checkpoint directory for w: the generated
// directory's config.json and tokenizer files plus model.safetensors.
func srcDir(t *testing.T, w *bertgen.Weights, ck checkpoint) string {
	t.Helper()
	dir := writeDir(t, w)
	os.Remove(filepath.Join(dir, bertgen.MarkerFile))
	os.RemoveAll(filepath.Join(dir, "onnx"))
	if err := os.WriteFile(filepath.Join(dir, bertgen.SafetensorsFile), ck.bytes(t), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestImportMatchesReference imports a small random BERT written as a
// Hugging Face safetensors checkpoint and runs the result in ONNX Runtime
// against the pure-Go reference forward pass on the original weights.
func TestImportMatchesReference(t *testing.T) {
	lib := testenv.NeedORT(t)
	if err := onnx.Init(onnx.RuntimeConfig{LibraryPath: lib}); err != nil {
		t.Fatal(err)
	}
	for _, kind := range []bertgen.Kind{bertgen.CrossEncoder, bertgen.BiEncoder} {
		t.Run(string(kind), func(t *testing.T) {
			w := smallWeights(t, kind)
			src := srcDir(t, w, hfCheckpoint(t, w, "bert.", safetensors.F32))
			// Sentence-transformers files travel along.
			if err := os.WriteFile(filepath.Join(src, "modules.json"), []byte(`[{"idx":0,"name":"0","path":"","type":"sentence_transformers.models.Transformer"},`+
				`{"idx":1,"name":"1","path":"1_Pooling","type":"sentence_transformers.models.Pooling"},`+
				`{"idx":2,"name":"2","path":"2_Normalize","type":"sentence_transformers.models.Normalize"}]`), 0o644); err != nil {
				t.Fatal(err)
			}
			os.Mkdir(filepath.Join(src, "1_Pooling"), 0o755)
			if err := os.WriteFile(filepath.Join(src, "1_Pooling", "config.json"), []byte(`{"pooling_mode_cls_token":true}`), 0o644); err != nil {
				t.Fatal(err)
			}
			dst := filepath.Join(t.TempDir(), "imported")
			info, err := bertgen.Import(context.Background(), src, dst)
			if err != nil {
				t.Fatal(err)
			}
			if info.Config.Kind != kind || info.Params != w.Config.Params() || len(info.SafetensorsSHA256) != 64 {
				t.Fatalf("info = %+v", info)
			}
			for _, f := range []string{"config.json", "tokenizer.json", "vocab.txt", "modules.json", "1_Pooling/config.json", bertgen.ImportFile, bertgen.ModelFile} {
				if _, err := os.Stat(filepath.Join(dst, f)); err != nil {
					t.Fatalf("missing %s: %v", f, err)
				}
			}
			if _, generated, err := bertgen.ReadMarker(dst); generated || err != nil {
				t.Fatalf("imported directory reads as generated (%v)", err)
			}
			srcCfg, _ := os.ReadFile(filepath.Join(src, "config.json"))
			dstCfg, _ := os.ReadFile(filepath.Join(dst, "config.json"))
			if !bytes.Equal(srcCfg, dstCfg) {
				t.Fatal("config.json not copied unchanged")
			}
			runAgainstReference(t, w, filepath.Join(dst, bertgen.ModelFile))
		})
	}
}

// runAgainstReference runs the model file on the test batch and compares
// every output value (unpadded positions) with Reference on w.
func runAgainstReference(t *testing.T, w *bertgen.Weights, modelPath string) {
	t.Helper()
	res, ids, mask, types := runBatch(t, modelPath, w.Config, "all")
	ref, err := bertgen.Reference(context.Background(), w, ids, mask, types)
	if err != nil {
		t.Fatal(err)
	}
	var want []float64
	var keep []bool
	if w.Config.Kind == bertgen.CrossEncoder {
		want = ref.Logits
		keep = slices.Repeat([]bool{true}, len(want))
	} else {
		for b := range ref.LastHiddenState {
			for tk, row := range ref.LastHiddenState[b] {
				want = append(want, row...)
				keep = append(keep, slices.Repeat([]bool{mask[b][tk] == 1}, len(row))...)
			}
		}
	}
	got := res.Float32
	if len(got) != len(want) {
		t.Fatalf("%d outputs, want %d", len(got), len(want))
	}
	bad := 0
	for k := range want {
		if keep[k] && !closeEnough(got[k], want[k]) {
			if bad++; bad <= 5 {
				t.Errorf("output %d: onnx %.7g, reference %.7g", k, got[k], want[k])
			}
		}
	}
}

func TestImportErrors(t *testing.T) {
	w := smallWeights(t, bertgen.BiEncoder)
	ck := hfCheckpoint(t, w, "", safetensors.F32)
	tests := []struct {
		name string
		edit func(dir string)
		want error
	}{
		{"dense module", func(dir string) {
			os.WriteFile(filepath.Join(dir, "modules.json"), []byte(`[{"path":"","type":"sentence_transformers.models.Transformer"},{"path":"2_Dense","type":"sentence_transformers.models.Dense"}]`), 0o644)
		}, bertgen.ErrUnsupported},
		{"module path escapes", func(dir string) {
			os.WriteFile(filepath.Join(dir, "modules.json"), []byte(`[{"path":"../x","type":"sentence_transformers.models.Pooling"}]`), 0o644)
		}, bertgen.ErrUnsupported},
		{"no tokenizer", func(dir string) {
			os.Remove(filepath.Join(dir, "tokenizer.json"))
			os.Remove(filepath.Join(dir, "vocab.txt"))
		}, bertgen.ErrAssets},
		{"bad checkpoint", func(dir string) {
			os.WriteFile(filepath.Join(dir, bertgen.SafetensorsFile), []byte("not a checkpoint"), 0o644)
		}, safetensors.ErrFormat},
		{"missing checkpoint", func(dir string) { os.Remove(filepath.Join(dir, bertgen.SafetensorsFile)) }, os.ErrNotExist},
		{"config of a cross-encoder", func(dir string) {
			b, _ := os.ReadFile(filepath.Join(dir, "config.json"))
			b = bytes.Replace(b, []byte(`"BertModel"`), []byte(`"BertForSequenceClassification"`), 1)
			b = bytes.Replace(b, []byte(`"model_type"`), []byte(`"num_labels": 1, "model_type"`), 1)
			os.WriteFile(filepath.Join(dir, "config.json"), b, 0o644)
		}, bertgen.ErrCheckpoint},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			src := srcDir(t, w, ck)
			tc.edit(src)
			dst := filepath.Join(t.TempDir(), "out")
			if _, err := bertgen.Import(context.Background(), src, dst); !errors.Is(err, tc.want) {
				t.Fatalf("Import = %v, want %v", err, tc.want)
			}
			if _, err := os.Stat(filepath.Join(dst, "config.json")); err == nil {
				t.Fatal("a failed import left a config.json")
			}
		})
	}
}

// TestImportRandomHead puts a seeded random head on a BertModel checkpoint:
// the encoder's weights are the checkpoint's, the head is AddRandomHead's,
// the directory is a cross-encoder that reads as generated (its scores rank
// nothing), and ONNX Runtime agrees with the reference on those weights.
func TestImportRandomHead(t *testing.T) {
	lib := testenv.NeedORT(t)
	if err := onnx.Init(onnx.RuntimeConfig{LibraryPath: lib}); err != nil {
		t.Fatal(err)
	}
	w := smallWeights(t, bertgen.BiEncoder)
	src := srcDir(t, w, hfCheckpoint(t, w, "", safetensors.F32))
	if err := os.WriteFile(filepath.Join(src, "modules.json"), []byte(`[{"idx":0,"name":"0","path":"","type":"sentence_transformers.models.Transformer"},`+
		`{"idx":1,"name":"1","path":"1_Pooling","type":"sentence_transformers.models.Pooling"}]`), 0o644); err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(t.TempDir(), "xe")
	info, err := bertgen.ImportRandomHead(context.Background(), src, dst)
	if err != nil {
		t.Fatal(err)
	}
	want := *w // the checkpoint's encoder, under the head drawn from the imported config (its seed and init std)
	want.Config = info.Config
	bertgen.AddRandomHead(&want)
	if info.Config.Kind != bertgen.CrossEncoder || info.Params != want.Config.Params() || info.Params <= w.Config.Params() {
		t.Fatalf("info = %+v", info)
	}
	if len(want.ClsW) != w.Config.Hidden || len(want.PoolerW) != w.Config.Hidden*w.Config.Hidden || want.ClsW[0] == 0 {
		t.Fatalf("AddRandomHead left the head empty: %d classifier, %d pooler weights", len(want.ClsW), len(want.PoolerW))
	}
	if _, err := os.Stat(filepath.Join(dst, "modules.json")); err == nil {
		t.Error("a cross-encoder got the embedder's modules.json")
	}
	m, generated, err := bertgen.ReadMarker(dst)
	if err != nil || !generated || m.RealWeights || !strings.Contains(m.Note, info.SafetensorsSHA256) {
		t.Fatalf("marker = %+v, %v, %v: want one naming the checkpoint with real_weights false", m, generated, err)
	}
	raw, err := os.ReadFile(filepath.Join(dst, "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	if c, err := bertgen.ConfigFromHF(raw); err != nil || c.Kind != bertgen.CrossEncoder {
		t.Fatalf("config.json reads as %+v, %v; want a cross-encoder", c, err)
	}
	runAgainstReference(t, &want, filepath.Join(dst, bertgen.ModelFile))

	// A cross-encoder checkpoint has a head already.
	xsrc := srcDir(t, smallWeights(t, bertgen.CrossEncoder), hfCheckpoint(t, smallWeights(t, bertgen.CrossEncoder), "", safetensors.F32))
	if _, err := bertgen.ImportRandomHead(context.Background(), xsrc, filepath.Join(t.TempDir(), "x")); !errors.Is(err, bertgen.ErrUnsupported) {
		t.Fatalf("ImportRandomHead on a cross-encoder = %v, want ErrUnsupported", err)
	}
}
