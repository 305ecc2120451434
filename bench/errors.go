package bench

import "errors"

// ErrBadOption is wrapped by every benchmark's Config.Validate (and by the
// generators' and the load generator's configs) for an option that cannot
// be used; the message names the option and its value. cmd/bench exits 2
// on it.
var ErrBadOption = errors.New("bench: invalid option")
