package bench

import "errors"

// ErrBadOption is wrapped by every benchmark's Config.Validate (and by the
// generators' configs) for an option that cannot be used; the message names
// the option and its value.
var ErrBadOption = errors.New("bench: invalid option")

// anyRows converts report rows while the drivers move to struct rows.
func anyRows[T any](rows []T) []any {
	out := make([]any, len(rows))
	for i, r := range rows {
		out[i] = r
	}
	return out
}
