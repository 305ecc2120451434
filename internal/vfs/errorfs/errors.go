package errorfs

import "errors"

// ErrInjected is wrapped by every error an FS injects.
var ErrInjected = errors.New("errorfs: injected fault")
