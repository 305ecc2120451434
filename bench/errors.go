package bench

import "errors"

var (
	// ErrMalformed is wrapped by loaders for a line or field that cannot be
	// parsed; the message names the file and line.
	ErrMalformed = errors.New("bench: malformed input")
	// ErrNoQueries means a dataset has no query with relevance judgments.
	ErrNoQueries = errors.New("bench: no judged queries")
	// ErrBadOption is wrapped for an invalid benchmark option.
	ErrBadOption = errors.New("bench: invalid option")
)
