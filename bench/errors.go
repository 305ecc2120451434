package bench

import "errors"

// ErrBadOption is wrapped by every benchmark's Config.Validate (and by the
// generators' configs) for an option that cannot be used; the message names
// the option and its value.
var ErrBadOption = errors.New("bench: invalid option")
