package eval

import "errors"

var (
	// ErrMalformed is wrapped by loaders for a line or field that cannot be
	// parsed; the message names the file and line.
	ErrMalformed = errors.New("eval: malformed input")
	// ErrNoQueries means a dataset has no query with relevance judgments.
	ErrNoQueries = errors.New("eval: no judged queries")
)
