package serve

import (
	"context"
	"sync/atomic"

	"github.com/hybrank/hybrank/models"
	"github.com/hybrank/hybrank/models/ort"
	"github.com/hybrank/hybrank/server"
)

// countingScorer adapts a CrossEncoder to server.PairScorer and counts its
// calls (how much the server's batcher merged).
//
// TODO(merge): use server backend adapter. cmd/serve/wire.go has the same
// Pair/Usage conversion; the server's backend package is getting the one
// exported adapter, and this type should wrap it to count calls.
type countingScorer struct {
	ce    *ort.CrossEncoder
	calls atomic.Int64
}

func (s *countingScorer) ScorePairs(ctx context.Context, pairs []server.Pair) ([]float32, server.Usage, error) {
	s.calls.Add(1)
	mp := make([]models.Pair, len(pairs))
	for i, p := range pairs {
		mp[i] = models.Pair{Query: p.Query, Doc: p.Doc}
	}
	scores, u, err := s.ce.ScorePairs(ctx, mp)
	return scores, server.Usage{Tokens: u.Tokens, Pairs: u.Pairs, Batches: u.Batches}, err
}
