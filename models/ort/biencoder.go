package ort

import (
	"context"
	"fmt"
	"math"

	"github.com/hybrank/hybrank/models"
	"github.com/hybrank/hybrank/simd"
)

// BiEncoder embeds texts with a BERT bi-encoder (sentence-transformers
// style) run by ONNX Runtime. It implements Embedder.
//
// When the model has a `sentence_embedding` output it is used as is;
// otherwise the token output (`last_hidden_state` or `token_embeddings`)
// is pooled over the attention mask as the directory's sentence-transformers
// Pooling module says (mean, CLS, max, mean-sqrt-len; mean when the
// directory has none) or Config.Pooling overrides. Vectors are L2-normalised
// when Config.Normalize is set or the directory has a Normalize module.
// Queries and documents are embedded with the model's prompts (e5's
// "query: " / "passage: ", bge's query instruction); raw input as given.
//
// A BiEncoder is safe for concurrent use; see CrossEncoder for loading and
// pool behaviour, which are the same.
type BiEncoder struct {
	c *core
}

var _ models.Embedder = (*BiEncoder)(nil)

// Capabilities implements models.Embedder: it embeds in windows
// (EmbedSpans) and, once loaded, knows its window and its pooling,
// normalisation and prompts (Embedding).
func (be *BiEncoder) Capabilities() models.Capabilities {
	c := models.Capabilities{Chunking: true}
	if m := be.c.peek(); m != nil {
		c.Window, c.Embedding = m.maxLen, m.embedding
	}
	return c
}

// NewBiEncoder validates cfg and returns an embedder that loads its model
// directory on first use (or Load).
func NewBiEncoder(cfg models.Config) (*BiEncoder, error) {
	c, err := newCore(cfg, models.KindEmbedder, loadORT)
	if err != nil {
		return nil, err
	}
	return &BiEncoder{c: c}, nil
}

// Load loads the model now instead of on first use. A failed Load may be
// retried.
func (be *BiEncoder) Load() error { return be.c.load() }

// Config returns the configuration the embedder was built with.
func (be *BiEncoder) Config() models.Config { return be.c.cfg }

// Provider returns the execution provider in use, or "" before load.
func (be *BiEncoder) Provider() string { return be.c.provider() }

// Plan is the loaded model's acceleration plan (CrossEncoder.Plan); its
// Loaded.Rewrites.FirstToken is zero unless the graph outputs a
// [CLS]-pooled embedding.
func (be *BiEncoder) Plan() Plan { return be.c.plan() }

// Info returns the loaded model directory and the effective maximum
// sequence length (special tokens included), loading the model if needed.
func (be *BiEncoder) Info() (models.ModelDir, int, error) { return be.c.info() }

// Batching reports how the embedder plans its batches: the mode in effect
// and, in cost mode, where its cost model came from. It loads the model if
// needed (which may calibrate).
func (be *BiEncoder) Batching() (BatchingInfo, error) { return be.c.batchingInfo() }

// Close waits for in-flight calls, writes what the batch planner learned
// from them to the calibration cache (see the package documentation) and
// frees the runtime sessions. It is idempotent; later calls return
// ErrClosed.
func (be *BiEncoder) Close() error { return be.c.close() }

// Dim returns the vector length (hidden_size from config.json). It loads
// the model if needed and returns 0 when loading fails (Load reports why).
func (be *BiEncoder) Dim() int {
	m, err := be.c.acquire()
	if err != nil {
		return 0
	}
	defer be.c.release()
	return m.dir.Config.HiddenSize
}

// Embed returns one vector per text, in input order. Texts of kind
// models.InputQuery and models.InputDocument get the model's query or
// document prefix (models.Embedding.Prefix) before tokenizing, as
// sentence-transformers' encode(prompt_name=...) does; models.InputRaw texts
// are embedded as given. No texts give an empty slice; more than
// Config.MaxDocs texts is an error wrapping ErrTooManyDocs. Texts are cleaned
// and cut as in CrossEncoder.Score; an empty text embeds [CLS] [SEP].
func (be *BiEncoder) Embed(ctx context.Context, in models.Input, texts []string) ([][]float32, error) {
	v, _, err := be.EmbedWithUsage(ctx, in, texts)
	return v, err
}

// Embedding returns the pooling, normalisation and prompts in use (it loads
// the model if needed).
func (be *BiEncoder) Embedding() (models.Embedding, error) {
	m, err := be.c.acquire()
	if err != nil {
		return models.Embedding{}, err
	}
	defer be.c.release()
	return m.embedding, nil
}

// EmbedWithUsage is Embed that also reports the work done.
func (be *BiEncoder) EmbedWithUsage(ctx context.Context, in models.Input, texts []string) ([][]float32, models.Usage, error) {
	return be.embed(ctx, in, texts, true)
}

// EmbedPooled is EmbedWithUsage without the L2 normalisation that
// Config.Normalize or the directory's Normalize module asks for: the
// pooled vectors as the model gives them, for callers that normalise
// themselves or serve raw vectors (TEI's normalize=false). A model with a
// sentence_embedding output returns that output as is (normalised when the
// graph normalises).
func (be *BiEncoder) EmbedPooled(ctx context.Context, in models.Input, texts []string) ([][]float32, models.Usage, error) {
	return be.embed(ctx, in, texts, false)
}

// EmbedSpans embeds texts longer than the model's window in overlapping
// windows (models.Embedder): each text is split by its tokens' byte
// offsets (the model's own tokenizer) into windows of as many tokens as
// fit beside in's prefix and the two special tokens, as ch says; the
// windows of all texts are embedded in one call (batched together), each
// exactly as Embed embeds its text; and every text gets its windows'
// vectors with their byte spans, not an average (see models.Embedder).
// Usage counts the windows.
//
// ch must be enabled and valid (else an error wrapping ErrInvalidConfig);
// MaxDocs counts texts, not windows. Config.MaxChars does not cut the
// texts, and spans index them, as in CrossEncoder.ScoreSpans.
func (be *BiEncoder) EmbedSpans(ctx context.Context, in models.Input, texts []string, ch models.Chunking) ([]models.SpanVectors, models.Usage, error) {
	if err := checkChunking(ch); err != nil {
		return nil, models.Usage{}, err
	}
	if len(texts) > be.c.cfg.MaxDocs {
		return nil, models.Usage{}, errTooMany(len(texts), be.c.cfg.MaxDocs)
	}
	if len(texts) == 0 {
		return []models.SpanVectors{}, models.Usage{}, nil
	}
	m, err := be.c.acquire()
	if err != nil {
		return nil, models.Usage{}, err
	}
	defer be.c.release()
	prefix := m.embedding.Prefix(in)
	size := m.maxLen - 2 - m.enc.countTokens(prefix)
	if size < 1 {
		return nil, models.Usage{}, fmt.Errorf("%w: the %q prefix leaves no room in a window of %d tokens", models.ErrInvalidConfig, prefix, m.maxLen)
	}
	plan, err := ch.Plan(texts, size, m.enc.offsets)
	if err != nil {
		return nil, models.Usage{}, err
	}
	// Windows are bounded in tokens already: MaxChars does not cut them.
	vecs, usage, err := be.embedOn(ctx, m, prefix, plan.Texts(), math.MaxInt, true)
	if err != nil {
		return nil, models.Usage{}, err
	}
	out, err := plan.Vectors(vecs)
	return out, usage, err
}

// embed is EmbedWithUsage, normalising as configured when normalize is
// set, not at all otherwise.
func (be *BiEncoder) embed(ctx context.Context, in models.Input, texts []string, normalize bool) ([][]float32, models.Usage, error) {
	cfg := be.c.cfg
	if len(texts) > cfg.MaxDocs {
		return nil, models.Usage{}, errTooMany(len(texts), cfg.MaxDocs)
	}
	if len(texts) == 0 {
		return [][]float32{}, models.Usage{}, nil
	}
	m, err := be.c.acquire()
	if err != nil {
		return nil, models.Usage{}, err
	}
	defer be.c.release()
	return be.embedOn(ctx, m, m.embedding.Prefix(in), texts, cfg.MaxChars, normalize)
}

// embedOn embeds prefix + text for every text on the loaded model m
// (acquired by the caller), texts cut to maxChars characters first.
func (be *BiEncoder) embedOn(ctx context.Context, m *loaded, prefix string, texts []string, maxChars int, normalize bool) ([][]float32, models.Usage, error) {
	if err := ctx.Err(); err != nil {
		return nil, models.Usage{}, err
	}
	cfg := be.c.cfg
	seqs, lens, err := tokenize(ctx, len(texts), func(i int) (seq, error) {
		return m.enc.single(prefix+cleanText(texts[i], maxChars), m.maxLen)
	})
	if err != nil {
		return nil, models.Usage{}, err
	}
	dim := m.dir.Config.HiddenSize
	batches := m.plan(lens, cfg.MaxBatchTokens)
	vecs := make([][]float32, len(texts))
	// One backing array for all vectors: one allocation, contiguous.
	backing := make([]float32, len(texts)*dim)
	for i := range vecs {
		vecs[i] = backing[i*dim : (i+1)*dim : (i+1)*dim]
	}
	padded := make([]int, len(batches))
	err = runBatches(ctx, cfg.PoolSize, batches, func(ctx context.Context, bi int) error {
		idx := batches[bi]
		b := pad(seqs, idx, m.enc.padID())
		out, shape, err := m.runBatch(ctx, &b)
		if err != nil {
			return err
		}
		if m.pooled {
			if len(shape) != 2 || shape[0] != int64(b.n) || shape[1] != int64(dim) {
				return fmt.Errorf("%w: output %s has shape %v (want [%d, %d])", models.ErrUnsupportedModel, m.output, shape, b.n, dim)
			}
			for r, i := range idx {
				copy(vecs[i], out[r*dim:(r+1)*dim])
			}
		} else {
			if len(shape) != 3 || shape[0] != int64(b.n) || shape[1] != int64(b.seqLen) || shape[2] != int64(dim) {
				return fmt.Errorf("%w: output %s has shape %v (want [%d, %d, %d])", models.ErrUnsupportedModel, m.output, shape, b.n, b.seqLen, dim)
			}
			rowSize := b.seqLen * dim
			for r, i := range idx {
				pool(m.embedding.Pooling, vecs[i], out[r*rowSize:(r+1)*rowSize], b.mask[r*b.seqLen:(r+1)*b.seqLen])
			}
		}
		if normalize && m.embedding.Normalize {
			for _, i := range idx {
				simd.L2Normalize(vecs[i])
			}
		}
		padded[bi] = b.n * b.seqLen
		return nil
	})
	if err != nil {
		return nil, models.Usage{}, err
	}
	usage := models.Usage{Pairs: len(texts), Batches: len(batches)}
	for _, l := range lens {
		usage.Tokens += l
	}
	for _, p := range padded {
		usage.PaddedTokens += p
	}
	return vecs, usage, nil
}

// pool writes into dst the sentence vector of one sequence's token vectors
// h (row-major, len(mask) rows of len(dst)) under mode, counting only rows
// whose mask is set. Padding rows are never read as tokens.
func pool(mode models.Pooling, dst, h []float32, mask []int64) {
	dim := len(dst)
	switch mode {
	case models.PoolingCLS:
		copy(dst, h[:dim])
	case models.PoolingMax:
		first := true
		for r, m := range mask {
			if m == 0 {
				continue
			}
			row := h[r*dim : (r+1)*dim]
			if first {
				copy(dst, row)
				first = false
				continue
			}
			for j, v := range row {
				dst[j] = max(dst[j], v)
			}
		}
		if first {
			clear(dst)
		}
	case models.PoolingMeanSqrtLen:
		simd.MaskedMeanPool(dst, h, mask)
		n := 0
		for _, m := range mask {
			if m != 0 {
				n++
			}
		}
		simd.Scale(dst, float32(math.Sqrt(float64(n))))
	default:
		simd.MaskedMeanPool(dst, h, mask)
	}
}
