package serve

import (
	"context"
	"sync/atomic"

	"github.com/hybrank/hybrank/models"
	"github.com/hybrank/hybrank/models/ort"
)

// countingScorer is the cross-encoder as the server sees it
// (server.PairScorer) and counts its calls, which says how much the server's
// batcher merged.
type countingScorer struct {
	ce    *ort.CrossEncoder
	calls atomic.Int64
}

func (s *countingScorer) ScorePairs(ctx context.Context, pairs []models.Pair) ([]float32, models.Usage, error) {
	s.calls.Add(1)
	return s.ce.ScorePairs(ctx, pairs)
}
