package server

import (
	"fmt"

	"github.com/hybrank/hybrank/models"
)

// windows are the windows of a chunked rerank request (models.ChunkPlan):
// the request's documents were replaced by their windows before the
// model's queue, so the windows share batches with every other request's pairs
// (and go through the score cache, --cache-mb, like any pair).
type windows struct {
	ch   models.Chunking
	plan models.ChunkPlan
}

// chunkPairs returns, when req chunks, the (query, window) pairs of pairs'
// documents and their plan; otherwise pairs and a nil plan. Windows are
// cut from the Tokenizer's byte offsets and hold models.PairWindow tokens
// of the chosen reranker's window (max_pair_tokens) beside the query, so
// no window is truncated. A
// request may make at most max_documents × models.DefaultMaxChunks
// windows (413 beyond): the cap per document alone would let one request
// ask for a thousand times its documents' pairs. q is the query's token
// count.
func (s *Server) chunkPairs(req rerankRequest, pairs []models.Pair, q int) ([]models.Pair, *windows, error) {
	if !req.Chunking.Enabled() {
		return pairs, nil, nil
	}
	if s.b.Tokenizer == nil {
		return nil, nil, badRequest("field \"chunking\": this server has no tokenizer to cut windows with")
	}
	docs := make([]string, len(pairs))
	for i, p := range pairs {
		docs[i] = p.Doc
	}
	size := models.PairWindow(req.served.window, q)
	plan, err := req.Chunking.Plan(docs, size, s.offsets)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: chunking: %w", ErrBackend, err)
	}
	if limit := s.lim.maxDocuments * models.DefaultMaxChunks; len(plan.Windows) > limit {
		return nil, nil, tooLarge("chunking makes %d windows of %d documents; the limit is %d (max_documents × %d): raise the stride or lower max_chunks_per_doc", len(plan.Windows), len(docs), limit, models.DefaultMaxChunks)
	}
	return plan.Pairs(req.Query), &windows{ch: req.Chunking, plan: plan}, nil
}

// scores aggregates window scores into one score per document with its
// best window's byte span (models.ChunkPlan.Scores); on a nil plan it
// returns scores as they are and no spans.
func (w *windows) scores(scores []float32) ([]float32, []models.Span, error) {
	if w == nil {
		return scores, nil, nil
	}
	res, err := w.plan.Scores(w.ch, scores)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %w", ErrBackend, err)
	}
	out, spans := make([]float32, len(res)), make([]models.Span, len(res))
	for i, r := range res {
		out[i], spans[i] = r.Score, r.Span
	}
	return out, spans, nil
}

// offsets returns text's tokens as byte spans (the Tokenizer's, special
// tokens left out).
func (s *Server) offsets(text string) ([]models.Span, error) {
	toks, err := s.b.Tokenizer.Tokenize(text, false)
	if err != nil {
		return nil, err
	}
	out := make([]models.Span, 0, len(toks))
	for _, t := range toks {
		if !t.Special {
			out = append(out, models.Span{Start: t.Start, End: t.Stop})
		}
	}
	return out, nil
}
