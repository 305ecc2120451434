package eval

import "github.com/hybrank/hybrank/internal/beir"

var (
	// ErrMalformed is wrapped by loaders (the BEIR and TREC readers) for a
	// line or field that cannot be parsed; the message names the file and
	// line.
	ErrMalformed = beir.ErrMalformed
	// ErrNoQueries means a dataset has no query with relevance judgments.
	ErrNoQueries = beir.ErrNoQueries
)
