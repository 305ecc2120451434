package models

import "context"

// RerankFunc adapts a function that scores one query's documents to a
// Reranker, as http.HandlerFunc adapts a function to a Handler: ScorePairs
// calls it once per run of consecutive pairs that share a query; it cannot
// chunk (ScoreSpans returns ErrNoChunking), predicts nothing and has
// nothing to load. For stand-ins and simple scorers; a model implements
// Reranker itself.
type RerankFunc func(ctx context.Context, query string, docs []string) ([]float32, error)

// ScorePairs implements Reranker.
func (f RerankFunc) ScorePairs(ctx context.Context, pairs []Pair) ([]float32, Usage, error) {
	out := make([]float32, 0, len(pairs))
	for i := 0; i < len(pairs); {
		j := i + 1
		for j < len(pairs) && pairs[j].Query == pairs[i].Query {
			j++
		}
		docs := make([]string, j-i)
		for k := range docs {
			docs[k] = pairs[i+k].Doc
		}
		s, err := f(ctx, pairs[i].Query, docs)
		if err != nil {
			return nil, Usage{}, err
		}
		out = append(out, s...)
		i = j
	}
	return out, Usage{Pairs: len(pairs), Batches: 1}, nil
}

// ScoreSpans implements Reranker: an error wrapping ErrNoChunking.
func (RerankFunc) ScoreSpans(context.Context, string, []string, Chunking) ([]SpanScore, Usage, error) {
	return nil, Usage{}, ErrNoChunking
}

// Capabilities implements Reranker: none.
func (RerankFunc) Capabilities() Capabilities { return Capabilities{} }

// Load implements Reranker: nothing to load.
func (RerankFunc) Load() error { return nil }

// EmbedFunc adapts a function returning one vector of dim floats per text
// to an Embedder, as RerankFunc does for rerankers: its vectors are taken
// as they are (no Normalize), it cannot chunk and has nothing to load.
type EmbedFunc struct {
	F   func(ctx context.Context, in Input, texts []string) ([][]float32, error)
	Len int // the vectors' length (Dim)
}

// EmbedPooled implements Embedder.
func (e EmbedFunc) EmbedPooled(ctx context.Context, in Input, texts []string) ([][]float32, Usage, error) {
	v, err := e.F(ctx, in, texts)
	return v, Usage{Pairs: len(texts), Batches: 1}, err
}

// EmbedSpans implements Embedder: an error wrapping ErrNoChunking.
func (EmbedFunc) EmbedSpans(context.Context, Input, []string, Chunking) ([]SpanVectors, Usage, error) {
	return nil, Usage{}, ErrNoChunking
}

// Dim implements Embedder.
func (e EmbedFunc) Dim() int { return e.Len }

// Capabilities implements Embedder: none.
func (EmbedFunc) Capabilities() Capabilities { return Capabilities{} }

// Load implements Embedder: nothing to load.
func (EmbedFunc) Load() error { return nil }
