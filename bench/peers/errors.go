package peers

import "errors"

var (
	// ErrNotInstalled means the peers' Python packages are missing: the
	// message says to run `make peers`.
	ErrNotInstalled = errors.New("peers: not installed")
	// ErrNoPython means the interpreter of Config.Python was not found.
	ErrNoPython = errors.New("peers: python interpreter not found")
	// ErrOutput means a script's output could not be read: no JSON line,
	// a malformed one, or raw output files that disagree with it.
	ErrOutput = errors.New("peers: unreadable output")
)
