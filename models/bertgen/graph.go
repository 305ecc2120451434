package bertgen

import (
	"fmt"
	"math"
	"strconv"

	"github.com/hybrank/hybrank/onnx/onnxpb"
)

// Graph input and output names, as in Hugging Face ONNX exports.
const (
	InputIDs        = "input_ids"
	AttentionMask   = "attention_mask"
	TokenTypeIDs    = "token_type_ids"
	Logits          = "logits"
	LastHiddenState = "last_hidden_state"
)

// maskValue is the additive mask for padded keys: torch.finfo(float32).min,
// which current transformers versions use (older ones used -10000).
const maskValue = -math.MaxFloat32

// BuildModel returns the ONNX model for w (generated or imported weights),
// with the operator structure of a Hugging Face BERT export (see the
// package documentation). The model retains w's slices until it is written.
func BuildModel(w *Weights) (*onnxpb.Model, error) {
	cfg := w.Config
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	h, nh, dh := int64(cfg.Hidden), int64(cfg.Heads), int64(cfg.HeadDim())
	g := onnxpb.NewGraph("main_graph")
	batch, seq := onnxpb.Symbolic("batch_size"), onnxpb.Symbolic("sequence_length")
	g.AddInput(InputIDs, onnxpb.Int64, batch, seq)
	g.AddInput(AttentionMask, onnxpb.Int64, batch, seq)
	g.AddInput(TokenTypeIDs, onnxpb.Int64, batch, seq)

	// Shared constants.
	one := g.AddFloat32("const_one", nil, []float32{1})
	half := g.AddFloat32("const_half", nil, []float32{0.5})
	sqrt2 := g.AddFloat32("const_sqrt2", nil, []float32{float32(math.Sqrt2)})
	minVal := g.AddFloat32("const_mask_value", nil, []float32{maskValue})
	scale := g.AddFloat32("const_sqrt_head_dim", nil, []float32{float32(math.Sqrt(float64(dh)))})
	headsShape := g.AddInt64("const_heads_shape", []int64{4}, []int64{0, 0, nh, dh})
	mergedShape := g.AddInt64("const_merged_shape", []int64{3}, []int64{0, 0, h})
	maskAxes := g.AddInt64("const_mask_axes", []int64{2}, []int64{1, 2})
	idxOne := g.AddInt64("const_index_1", []int64{1}, []int64{1})
	zero1 := g.AddInt64("const_zero_1d", []int64{1}, []int64{0})
	positions := make([]int64, cfg.MaxPositions)
	for k := range positions {
		positions[k] = int64(k)
	}
	posIDs := g.AddInt64("embeddings.position_ids", []int64{1, int64(cfg.MaxPositions)}, positions)

	// Embeddings: word + token type + position, then LayerNorm.
	wordEmb := g.AddFloat32("embeddings.word_embeddings.weight", []int64{int64(cfg.VocabSize), h}, w.WordEmb)
	posEmb := g.AddFloat32("embeddings.position_embeddings.weight", []int64{int64(cfg.MaxPositions), h}, w.PosEmb)
	typeEmb := g.AddFloat32("embeddings.token_type_embeddings.weight", []int64{int64(cfg.TypeVocab), h}, w.TypeEmb)
	words := g.AddNode("/embeddings/word_embeddings/Gather", "Gather", []string{wordEmb, InputIDs})
	types := g.AddNode("/embeddings/token_type_embeddings/Gather", "Gather", []string{typeEmb, TokenTypeIDs})
	shape := g.AddNode("/embeddings/Shape", "Shape", []string{InputIDs})
	seqLen := g.AddNode("/embeddings/Gather_seq_len", "Gather", []string{shape, idxOne}, onnxpb.AttrInt("axis", 0))
	pos := g.AddNode("/embeddings/Slice", "Slice", []string{posIDs, zero1, seqLen, idxOne})
	posVec := g.AddNode("/embeddings/position_embeddings/Gather", "Gather", []string{posEmb, pos})
	sum := g.AddNode("/embeddings/Add", "Add", []string{words, types})
	sum = g.AddNode("/embeddings/Add_1", "Add", []string{sum, posVec})
	x := layerNorm(g, "/embeddings/LayerNorm", "embeddings.LayerNorm", sum, w.EmbLNG, w.EmbLNB, cfg.LayerNormEps)

	// Extended attention mask: (1 - mask[:, None, None, :]) * finfo.min.
	m := g.AddNode("/Unsqueeze", "Unsqueeze", []string{AttentionMask, maskAxes})
	mf := g.AddNode("/Cast", "Cast", []string{m}, onnxpb.AttrInt("to", int64(onnxpb.Float32)))
	inv := g.AddNode("/Sub", "Sub", []string{one, mf})
	ext := g.AddNode("/Mul", "Mul", []string{inv, minVal})

	dense := func(node, param, in string, wt, b []float32, din, dout int64) string {
		wn := g.AddFloat32(param+".weight", []int64{din, dout}, wt)
		bn := g.AddFloat32(param+".bias", []int64{dout}, b)
		mm := g.AddNode(node+"/MatMul", "MatMul", []string{in, wn})
		return g.AddNode(node+"/Add", "Add", []string{bn, mm})
	}
	for l := range w.Layers {
		L := &w.Layers[l]
		n := "/encoder/layer." + strconv.Itoa(l)
		p := "encoder.layer." + strconv.Itoa(l)
		q := dense(n+"/attention/self/query", p+".attention.self.query", x, L.QueryW, L.QueryB, h, h)
		k := dense(n+"/attention/self/key", p+".attention.self.key", x, L.KeyW, L.KeyB, h, h)
		v := dense(n+"/attention/self/value", p+".attention.self.value", x, L.ValueW, L.ValueB, h, h)
		heads := func(name, t string, perm ...int64) string {
			r := g.AddNode(n+"/attention/self/Reshape_"+name, "Reshape", []string{t, headsShape})
			return g.AddNode(n+"/attention/self/Transpose_"+name, "Transpose", []string{r}, onnxpb.AttrInts("perm", perm...))
		}
		qh := heads("q", q, 0, 2, 1, 3) // [b, nh, s, dh]
		kh := heads("k", k, 0, 2, 3, 1) // [b, nh, dh, s]
		vh := heads("v", v, 0, 2, 1, 3) // [b, nh, s, dh]
		scores := g.AddNode(n+"/attention/self/MatMul", "MatMul", []string{qh, kh})
		scores = g.AddNode(n+"/attention/self/Div", "Div", []string{scores, scale})
		scores = g.AddNode(n+"/attention/self/Add", "Add", []string{scores, ext})
		probs := g.AddNode(n+"/attention/self/Softmax", "Softmax", []string{scores}, onnxpb.AttrInt("axis", -1))
		ctx := g.AddNode(n+"/attention/self/MatMul_1", "MatMul", []string{probs, vh})
		ctx = g.AddNode(n+"/attention/self/Transpose_ctx", "Transpose", []string{ctx}, onnxpb.AttrInts("perm", 0, 2, 1, 3))
		ctx = g.AddNode(n+"/attention/self/Reshape_ctx", "Reshape", []string{ctx, mergedShape})
		ao := dense(n+"/attention/output/dense", p+".attention.output.dense", ctx, L.AttnOutW, L.AttnOutB, h, h)
		ao = g.AddNode(n+"/attention/output/Add", "Add", []string{ao, x})
		x1 := layerNorm(g, n+"/attention/output/LayerNorm", p+".attention.output.LayerNorm", ao, L.AttnLNG, L.AttnLNB, cfg.LayerNormEps)

		ff := dense(n+"/intermediate/dense", p+".intermediate.dense", x1, L.InterW, L.InterB, h, int64(cfg.Intermediate))
		// Erf GELU as exported: x * 0.5 * (1 + erf(x / sqrt(2))).
		ge := g.AddNode(n+"/intermediate/intermediate_act_fn/Div", "Div", []string{ff, sqrt2})
		ge = g.AddNode(n+"/intermediate/intermediate_act_fn/Erf", "Erf", []string{ge})
		ge = g.AddNode(n+"/intermediate/intermediate_act_fn/Add", "Add", []string{ge, one})
		ge = g.AddNode(n+"/intermediate/intermediate_act_fn/Mul", "Mul", []string{ff, ge})
		ge = g.AddNode(n+"/intermediate/intermediate_act_fn/Mul_1", "Mul", []string{ge, half})
		o := dense(n+"/output/dense", p+".output.dense", ge, L.OutW, L.OutB, int64(cfg.Intermediate), h)
		o = g.AddNode(n+"/output/Add", "Add", []string{o, x1})
		x = layerNorm(g, n+"/output/LayerNorm", p+".output.LayerNorm", o, L.OutLNG, L.OutLNB, cfg.LayerNormEps)
	}

	switch cfg.Kind {
	case BiEncoder:
		g.AddNode(LastHiddenState, "Identity", []string{x})
		g.AddOutput(LastHiddenState, onnxpb.Float32, batch, seq, onnxpb.Fixed(h))
	case CrossEncoder:
		idx0 := g.AddInt64("const_index_0", nil, []int64{0})
		first := g.AddNode("/pooler/Gather", "Gather", []string{x, idx0}, onnxpb.AttrInt("axis", 1)) // [b, H]
		pooled := dense("/pooler/dense", "pooler.dense", first, w.PoolerW, w.PoolerB, h, h)
		pooled = g.AddNode("/pooler/activation/Tanh", "Tanh", []string{pooled})
		cw := g.AddFloat32("classifier.weight", []int64{h, 1}, w.ClsW)
		cb := g.AddFloat32("classifier.bias", []int64{1}, w.ClsB)
		mm := g.AddNode("/classifier/MatMul", "MatMul", []string{pooled, cw})
		g.AddNode(Logits, "Add", []string{cb, mm})
		g.AddOutput(Logits, onnxpb.Float32, batch, onnxpb.Fixed(1))
	default:
		return nil, fmt.Errorf("%w: kind %q", ErrBadConfig, cfg.Kind)
	}
	model := onnxpb.NewModel(g)
	model.ProducerName = "hybrank-bertgen"
	if w.Source == "" {
		model.DocString = "BERT " + string(cfg.Kind) + " with seeded random weights (" + cfg.Name + "); structure of a Hugging Face ONNX export"
	} else {
		model.DocString = "BERT " + string(cfg.Kind) + " " + cfg.Name + " with weights imported from " + w.Source + "; structure of a Hugging Face ONNX export"
	}
	return model, nil
}

func layerNorm(g *onnxpb.Graph, node, param, in string, gamma, beta []float32, eps float64) string {
	gn := g.AddFloat32(param+".weight", []int64{int64(len(gamma))}, gamma)
	bn := g.AddFloat32(param+".bias", []int64{int64(len(beta))}, beta)
	return g.AddNode(node+"/LayerNormalization", "LayerNormalization", []string{in, gn, bn},
		onnxpb.AttrInt("axis", -1), onnxpb.AttrFloat("epsilon", float32(eps)))
}
