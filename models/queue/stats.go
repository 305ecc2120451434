package queue

import (
	"sync"
	"sync/atomic"
)

// Bucket upper bounds of Stats' histograms: items and estimated tokens per
// model call.
var (
	ItemBuckets  = exponential(1, 12)  // 1 … 2048
	TokenBuckets = exponential(16, 14) // 16 … 131072
)

func exponential(start float64, n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = start
		start *= 2
	}
	return out
}

// Stats is a snapshot of a queue's counters, for metrics.
type Stats struct {
	// Queued is the items waiting now.
	Queued int
	// Items and Tokens are histograms of the model calls so far: Counts[i]
	// calls had at most Buckets[i] (and more than Buckets[i-1]); the last
	// count is of calls above the last bucket.
	Items, Tokens Histogram
}

// Histogram is a snapshot of one histogram.
type Histogram struct {
	Buckets []float64
	Counts  []uint64 // len(Buckets)+1
	Sum     float64
	Count   uint64
}

// stats accumulates a queue's Stats; safe for concurrent use.
type stats struct {
	queued        atomic.Int64
	mu            sync.Mutex
	items, tokens Histogram
}

func newStats() *stats {
	return &stats{
		items:  Histogram{Buckets: ItemBuckets, Counts: make([]uint64, len(ItemBuckets)+1)},
		tokens: Histogram{Buckets: TokenBuckets, Counts: make([]uint64, len(TokenBuckets)+1)},
	}
}

func (s *stats) queue(n int) { s.queued.Store(int64(n)) }

func (s *stats) batch(items, tokens int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.items.observe(float64(items))
	s.tokens.observe(float64(tokens))
}

func (h *Histogram) observe(v float64) {
	i := 0
	for i < len(h.Buckets) && v > h.Buckets[i] {
		i++
	}
	h.Counts[i]++
	h.Sum += v
	h.Count++
}

func (s *stats) snapshot() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	cp := func(h Histogram) Histogram {
		h.Counts = append([]uint64(nil), h.Counts...)
		return h
	}
	return Stats{Queued: int(s.queued.Load()), Items: cp(s.items), Tokens: cp(s.tokens)}
}
