package serve

import (
	"context"
	"sync/atomic"

	"github.com/hybrank/hybrank/models"
	"github.com/hybrank/hybrank/models/ort"
)

// countingScorer is the cross-encoder that counts its ScorePairs calls,
// which says how much the model's queue merged.
type countingScorer struct {
	*ort.CrossEncoder
	calls, pairs atomic.Int64
}

// ScorePairs implements models.Reranker and counts the call.
func (s *countingScorer) ScorePairs(ctx context.Context, pairs []models.Pair) ([]float32, models.Usage, error) {
	s.calls.Add(1)
	s.pairs.Add(int64(len(pairs)))
	return s.CrossEncoder.ScorePairs(ctx, pairs)
}
