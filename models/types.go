package models

// Usage counts the work of one call, for usage reporting and metrics. A
// plain value; Add is not synchronised.
type Usage struct {
	Tokens       int // real tokens fed to the model, special tokens included
	PaddedTokens int // tokens including padding (what the model computed)
	Pairs        int // sequences scored or embedded
	Batches      int // runtime calls
}

// Add accumulates o into u.
func (u *Usage) Add(o Usage) {
	u.Tokens += o.Tokens
	u.PaddedTokens += o.PaddedTokens
	u.Pairs += o.Pairs
	u.Batches += o.Batches
}

// Pair is one (query, document) pair for CrossEncoder.ScorePairs.
type Pair struct {
	Query string
	Doc   string
}
