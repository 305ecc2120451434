package bertgen

import (
	"hash/fnv"
	"math/rand/v2"
	"runtime"
	"strconv"
	"sync"
)

// Layer holds one encoder layer's weights. Dense weights are stored
// [in, out] row-major, the layout of the MatMul initializers in a Hugging
// Face ONNX export (the transpose of torch's nn.Linear.weight).
type Layer struct {
	QueryW, QueryB   []float32 // [H,H], [H]
	KeyW, KeyB       []float32 // [H,H], [H]
	ValueW, ValueB   []float32 // [H,H], [H]
	AttnOutW         []float32 // [H,H]
	AttnOutB         []float32 // [H]
	AttnLNG, AttnLNB []float32 // [H]
	InterW, InterB   []float32 // [H,I], [I]
	OutW, OutB       []float32 // [I,H], [H]
	OutLNG, OutLNB   []float32 // [H]
}

// Weights are all parameters of a model, generated (GenerateWeights) or
// read from a checkpoint (WeightsFromSafetensors). BuildModel encodes them
// into the ONNX file and Reference computes with them, so both see
// identical numbers. Weights are read-only once built, and then safe for
// concurrent use; tests may edit them before writing a model.
type Weights struct {
	Config Config
	// Source says where real weights came from (Import sets the checkpoint
	// and its sha256); "" means GenerateWeights drew them at random. It
	// goes into the ONNX model's doc string.
	Source string

	WordEmb, PosEmb, TypeEmb []float32 // [V,H], [P,H], [T,H]
	EmbLNG, EmbLNB           []float32 // [H]
	Layers                   []Layer

	// Cross-encoder head (nil for bi-encoders).
	PoolerW, PoolerB []float32 // [H,H], [H]
	ClsW, ClsB       []float32 // [H,1], [1]
}

// tensorSpec is one parameter to generate.
type tensorSpec struct {
	name string
	dst  *[]float32
	n    int
	kind int // fill kind below
}

const (
	fillNormal = iota // N(0, InitStd²): dense weights and embeddings
	fillBias          // N(0, (InitStd/2)²): small non-zero biases
	fillOne           // layer-norm gamma
	fillZero          // layer-norm beta
)

// GenerateWeights draws seeded random weights for cfg. Every tensor has its
// own generator seeded from (cfg.Seed, tensor name), so the result does not
// depend on generation order and tensors are drawn in parallel.
func GenerateWeights(cfg Config) (*Weights, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	h, i := cfg.Hidden, cfg.Intermediate
	w := &Weights{Config: cfg, Layers: make([]Layer, cfg.Layers)}
	specs := []tensorSpec{
		{"embeddings.word_embeddings.weight", &w.WordEmb, cfg.VocabSize * h, fillNormal},
		{"embeddings.position_embeddings.weight", &w.PosEmb, cfg.MaxPositions * h, fillNormal},
		{"embeddings.token_type_embeddings.weight", &w.TypeEmb, cfg.TypeVocab * h, fillNormal},
		{"embeddings.LayerNorm.weight", &w.EmbLNG, h, fillOne},
		{"embeddings.LayerNorm.bias", &w.EmbLNB, h, fillZero},
	}
	for l := range w.Layers {
		L := &w.Layers[l]
		p := "encoder.layer." + strconv.Itoa(l) + "."
		specs = append(specs,
			tensorSpec{p + "attention.self.query.weight", &L.QueryW, h * h, fillNormal},
			tensorSpec{p + "attention.self.query.bias", &L.QueryB, h, fillBias},
			tensorSpec{p + "attention.self.key.weight", &L.KeyW, h * h, fillNormal},
			tensorSpec{p + "attention.self.key.bias", &L.KeyB, h, fillBias},
			tensorSpec{p + "attention.self.value.weight", &L.ValueW, h * h, fillNormal},
			tensorSpec{p + "attention.self.value.bias", &L.ValueB, h, fillBias},
			tensorSpec{p + "attention.output.dense.weight", &L.AttnOutW, h * h, fillNormal},
			tensorSpec{p + "attention.output.dense.bias", &L.AttnOutB, h, fillBias},
			tensorSpec{p + "attention.output.LayerNorm.weight", &L.AttnLNG, h, fillOne},
			tensorSpec{p + "attention.output.LayerNorm.bias", &L.AttnLNB, h, fillZero},
			tensorSpec{p + "intermediate.dense.weight", &L.InterW, h * i, fillNormal},
			tensorSpec{p + "intermediate.dense.bias", &L.InterB, i, fillBias},
			tensorSpec{p + "output.dense.weight", &L.OutW, i * h, fillNormal},
			tensorSpec{p + "output.dense.bias", &L.OutB, h, fillBias},
			tensorSpec{p + "output.LayerNorm.weight", &L.OutLNG, h, fillOne},
			tensorSpec{p + "output.LayerNorm.bias", &L.OutLNB, h, fillZero},
		)
	}
	if cfg.Kind == CrossEncoder {
		specs = append(specs, headSpecs(w)...)
	}
	work := make(chan *tensorSpec)
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(specs)) {
		wg.Go(func() {
			for s := range work {
				*s.dst = fill(cfg, s)
			}
		})
	}
	for k := range specs {
		work <- &specs[k]
	}
	close(work)
	wg.Wait()
	return w, nil
}

// headSpecs are a cross-encoder head's parameters: the pooler and the
// one-logit classifier.
func headSpecs(w *Weights) []tensorSpec {
	h := w.Config.Hidden
	return []tensorSpec{
		{"pooler.dense.weight", &w.PoolerW, h * h, fillNormal},
		{"pooler.dense.bias", &w.PoolerB, h, fillBias},
		{"classifier.weight", &w.ClsW, h, fillNormal},
		{"classifier.bias", &w.ClsB, 1, fillBias},
	}
}

// AddRandomHead makes w a cross-encoder: w.Config.Kind becomes
// CrossEncoder and the pooler and classifier are drawn as GenerateWeights
// draws them (from w.Config.Seed), replacing any head w had. On a trained
// encoder's weights the result is a model whose activations are real (their
// ranges and outliers, which decide int8 fidelity, come from training) and
// whose scores rank nothing: see ImportRandomHead.
func AddRandomHead(w *Weights) {
	w.Config.Kind = CrossEncoder
	specs := headSpecs(w)
	for k := range specs {
		*specs[k].dst = fill(w.Config, &specs[k])
	}
}

func fill(cfg Config, s *tensorSpec) []float32 {
	out := make([]float32, s.n)
	switch s.kind {
	case fillOne:
		for k := range out {
			out[k] = 1
		}
		return out
	case fillZero:
		return out
	}
	std := cfg.InitStd
	if s.kind == fillBias {
		std /= 2
	}
	hs := fnv.New64a()
	hs.Write([]byte(s.name))
	r := rand.New(rand.NewPCG(uint64(cfg.Seed), hs.Sum64()))
	for k := range out {
		out[k] = float32(r.NormFloat64() * std)
	}
	return out
}
