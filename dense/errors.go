package dense

import "errors"

var (
	// ErrConfig reports an invalid Config.
	ErrConfig = errors.New("dense: invalid config")
	// ErrDim reports a vector whose length differs from Config.Dim.
	ErrDim = errors.New("dense: vector dimension mismatch")
	// ErrVector reports a vector that cannot be normalised: all zero, NaN or infinite.
	ErrVector = errors.New("dense: zero or non-finite vector")
	// ErrEmptyID reports an Item without an ID.
	ErrEmptyID = errors.New("dense: empty item ID")
	// ErrRef reports an Item whose Ref another live item holds, or a
	// SetRefs that leaves a live item without a Ref or gives two one.
	ErrRef = errors.New("dense: Ref held by another item")
	// ErrK reports a non-positive k.
	ErrK = errors.New("dense: k must be positive")
	// ErrFull reports that the index ran out of internal numbers (2^32-1
	// vectors including tombstones; numbers are never reused, not even by
	// Compact).
	ErrFull = errors.New("dense: index full")
	// ErrClosed reports use of a closed Index.
	ErrClosed = errors.New("dense: index closed")
	// ErrCorrupt reports a snapshot whose files are missing, truncated or
	// fail their checksum.
	ErrCorrupt = errors.New("dense: corrupt snapshot")
	// ErrVersion reports a snapshot written by a newer format version.
	ErrVersion = errors.New("dense: unsupported snapshot version")
)
