package safetensors

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"sort"
	"sync"
)

// Errors returned by this package.
var (
	// ErrFormat: the file breaks the safetensors format (see the package
	// documentation for the rules checked).
	ErrFormat = errors.New("safetensors: bad file")
	// ErrDType: a tensor's dtype cannot be converted to the type asked for,
	// or is not a safetensors dtype at all.
	ErrDType = errors.New("safetensors: unsupported dtype")
	// ErrNotFound: no tensor has the name asked for.
	ErrNotFound = errors.New("safetensors: no such tensor")
	// ErrClosed: the File was closed.
	ErrClosed = errors.New("safetensors: file closed")
)

// MaxHeaderSize bounds the JSON header, as the reference implementation
// does (100 MB), so a corrupt length cannot make Open allocate gigabytes.
const MaxHeaderSize = 100_000_000

// metadataKey is the header key holding free-form string metadata.
const metadataKey = "__metadata__"

// DType is a safetensors element type name (a plain string value).
type DType string

// The dtypes of the format. Float32 and Int64 convert the ones noted.
const (
	BOOL   DType = "BOOL"
	U8     DType = "U8"
	I8     DType = "I8"
	F8E5M2 DType = "F8_E5M2"
	F8E4M3 DType = "F8_E4M3"
	I16    DType = "I16"
	U16    DType = "U16"
	F16    DType = "F16"  // Float32
	BF16   DType = "BF16" // Float32
	I32    DType = "I32"  // Int64
	U32    DType = "U32"  // Int64
	F32    DType = "F32"  // Float32
	F64    DType = "F64"  // Float32 (rounded)
	I64    DType = "I64"  // Int64
	U64    DType = "U64"
)

// Size is the element size in bytes, 0 for an unknown dtype.
func (d DType) Size() int {
	switch d {
	case BOOL, U8, I8, F8E5M2, F8E4M3:
		return 1
	case I16, U16, F16, BF16:
		return 2
	case I32, U32, F32:
		return 4
	case F64, I64, U64:
		return 8
	}
	return 0
}

// TensorInfo describes one tensor of a file. A plain value, safe to copy.
type TensorInfo struct {
	Name  string
	DType DType
	Shape []int64
	// Begin and End are the byte offsets of the data, relative to the start
	// of the data buffer (as in the header's data_offsets).
	Begin, End int64
}

// Len is the number of elements (the product of Shape; 1 for a scalar).
func (t TensorInfo) Len() int64 {
	n := int64(1)
	for _, d := range t.Shape {
		n *= d
	}
	return n
}

// File is an open safetensors file. See the package documentation for
// concurrency.
type File struct {
	r         io.ReaderAt
	closer    io.Closer // nil when the caller owns r
	dataStart int64
	tensors   map[string]TensorInfo
	names     []string // sorted
	metadata  map[string]string

	// mu guards closed; reads hold it shared so Close waits for them.
	mu     sync.RWMutex
	closed bool
}

// Open opens and checks the safetensors file at path.
func Open(path string) (*File, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("safetensors: %w", err)
	}
	st, err := fh.Stat()
	if err != nil {
		fh.Close()
		return nil, fmt.Errorf("safetensors: %w", err)
	}
	f, err := NewReader(fh, st.Size())
	if err != nil {
		fh.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	f.closer = fh
	return f, nil
}

// NewReader checks the safetensors content of r, which holds size bytes.
// The File reads from r until closed; closing it does not close r.
func NewReader(r io.ReaderAt, size int64) (*File, error) {
	var lenBuf [8]byte
	if size < 8 {
		return nil, fmt.Errorf("%w: %d bytes, shorter than the 8-byte header length", ErrFormat, size)
	}
	if _, err := r.ReadAt(lenBuf[:], 0); err != nil {
		return nil, fmt.Errorf("safetensors: read header length: %w", err)
	}
	n := binary.LittleEndian.Uint64(lenBuf[:])
	if n > MaxHeaderSize {
		return nil, fmt.Errorf("%w: header length %d exceeds %d", ErrFormat, n, MaxHeaderSize)
	}
	if int64(n) > size-8 {
		return nil, fmt.Errorf("%w: header length %d exceeds the file (%d bytes)", ErrFormat, n, size)
	}
	hdr := make([]byte, n)
	if _, err := r.ReadAt(hdr, 8); err != nil {
		return nil, fmt.Errorf("safetensors: read header: %w", err)
	}
	f := &File{r: r, dataStart: 8 + int64(n)}
	if err := f.parseHeader(hdr, size-f.dataStart); err != nil {
		return nil, err
	}
	return f, nil
}

// headerEntry is one tensor in the JSON header.
type headerEntry struct {
	DType       DType   `json:"dtype"`
	Shape       []int64 `json:"shape"`
	DataOffsets []int64 `json:"data_offsets"`
}

func (f *File) parseHeader(hdr []byte, dataLen int64) error {
	// The format requires the header to start with '{'; trailing spaces
	// (alignment padding) are allowed and skipped by the JSON decoder.
	if len(hdr) == 0 || hdr[0] != '{' {
		return fmt.Errorf("%w: header does not start with '{'", ErrFormat)
	}
	var raw map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(hdr))
	if err := dec.Decode(&raw); err != nil {
		return fmt.Errorf("%w: header JSON: %v", ErrFormat, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return fmt.Errorf("%w: trailing bytes after the header JSON", ErrFormat)
	}
	f.tensors = make(map[string]TensorInfo, len(raw))
	for name, msg := range raw {
		if name == metadataKey {
			if err := json.Unmarshal(msg, &f.metadata); err != nil {
				return fmt.Errorf("%w: %s is not a map of strings: %v", ErrFormat, metadataKey, err)
			}
			continue
		}
		var e headerEntry
		dec := json.NewDecoder(bytes.NewReader(msg))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&e); err != nil {
			return fmt.Errorf("%w: tensor %q: %v", ErrFormat, name, err)
		}
		info, err := checkEntry(name, e)
		if err != nil {
			return err
		}
		f.tensors[name] = info
		f.names = append(f.names, name)
	}
	sort.Strings(f.names)
	// The tensors must tile [0, dataLen) exactly.
	byOffset := slices.Clone(f.names)
	slices.SortFunc(byOffset, func(a, b string) int {
		ta, tb := f.tensors[a], f.tensors[b]
		if ta.Begin != tb.Begin {
			return cmpInt64(ta.Begin, tb.Begin)
		}
		return cmpInt64(ta.End, tb.End)
	})
	var at int64
	for _, name := range byOffset {
		t := f.tensors[name]
		switch {
		case t.Begin < at:
			return fmt.Errorf("%w: tensor %q at [%d, %d) overlaps the previous tensor (ending at %d)", ErrFormat, name, t.Begin, t.End, at)
		case t.Begin > at:
			return fmt.Errorf("%w: hole in the data buffer at [%d, %d) before tensor %q", ErrFormat, at, t.Begin, name)
		}
		at = t.End
	}
	if at != dataLen {
		return fmt.Errorf("%w: tensors end at byte %d of a %d-byte data buffer", ErrFormat, at, dataLen)
	}
	return nil
}

func cmpInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func checkEntry(name string, e headerEntry) (TensorInfo, error) {
	bad := func(format string, args ...any) (TensorInfo, error) {
		return TensorInfo{}, fmt.Errorf("%w: tensor %q: "+format, append([]any{ErrFormat, name}, args...)...)
	}
	size := e.DType.Size()
	if size == 0 {
		return TensorInfo{}, fmt.Errorf("%w: tensor %q has dtype %q", ErrDType, name, e.DType)
	}
	if e.Shape == nil {
		return bad("no shape")
	}
	if len(e.DataOffsets) != 2 {
		return bad("data_offsets %v (want [begin, end])", e.DataOffsets)
	}
	begin, end := e.DataOffsets[0], e.DataOffsets[1]
	if begin < 0 || end < begin {
		return bad("data_offsets [%d, %d]", begin, end)
	}
	n := int64(1)
	for _, d := range e.Shape {
		if d < 0 {
			return bad("negative dimension in shape %v", e.Shape)
		}
		if d > 0 && n > math.MaxInt64/int64(size)/d {
			return bad("shape %v overflows", e.Shape)
		}
		n *= d
	}
	if n*int64(size) != end-begin {
		return bad("shape %v of %s needs %d bytes, data_offsets [%d, %d] hold %d", e.Shape, e.DType, n*int64(size), begin, end, end-begin)
	}
	return TensorInfo{Name: name, DType: e.DType, Shape: e.Shape, Begin: begin, End: end}, nil
}

// Names returns the tensor names, sorted. The slice is a copy.
func (f *File) Names() []string { return slices.Clone(f.names) }

// Info returns the description of the named tensor.
func (f *File) Info(name string) (TensorInfo, bool) {
	t, ok := f.tensors[name]
	if ok {
		t.Shape = slices.Clone(t.Shape)
	}
	return t, ok
}

// Metadata returns a copy of the header's __metadata__ (nil when absent).
func (f *File) Metadata() map[string]string {
	if f.metadata == nil {
		return nil
	}
	m := make(map[string]string, len(f.metadata))
	for k, v := range f.metadata {
		m[k] = v
	}
	return m
}

// Raw returns the named tensor's bytes as stored (little-endian).
func (f *File) Raw(name string) ([]byte, TensorInfo, error) {
	t, ok := f.Info(name)
	if !ok {
		return nil, TensorInfo{}, fmt.Errorf("%w: %q", ErrNotFound, name)
	}
	f.mu.RLock()
	defer f.mu.RUnlock()
	if f.closed {
		return nil, t, ErrClosed
	}
	buf := make([]byte, t.End-t.Begin)
	if len(buf) == 0 {
		return buf, t, nil // a zero-size read at the end of a file reports EOF
	}
	if _, err := f.r.ReadAt(buf, f.dataStart+t.Begin); err != nil {
		return nil, t, fmt.Errorf("safetensors: read tensor %q: %w", name, err)
	}
	return buf, t, nil
}

// Float32 returns the named tensor converted to float32 (row-major). F32,
// F16, BF16 and F64 convert; other dtypes are an error wrapping ErrDType.
func (f *File) Float32(name string) ([]float32, TensorInfo, error) {
	t, ok := f.Info(name)
	if !ok {
		return nil, TensorInfo{}, fmt.Errorf("%w: %q", ErrNotFound, name)
	}
	switch t.DType {
	case F32, F16, BF16, F64:
	default:
		return nil, t, fmt.Errorf("%w: tensor %q is %s, not a float type (F32, F16, BF16, F64)", ErrDType, name, t.DType)
	}
	raw, t, err := f.Raw(name)
	if err != nil {
		return nil, t, err
	}
	out := make([]float32, t.Len())
	le := binary.LittleEndian
	switch t.DType {
	case F32:
		for i := range out {
			out[i] = math.Float32frombits(le.Uint32(raw[4*i:]))
		}
	case F16:
		for i := range out {
			out[i] = F16ToFloat32(le.Uint16(raw[2*i:]))
		}
	case BF16:
		for i := range out {
			out[i] = BF16ToFloat32(le.Uint16(raw[2*i:]))
		}
	case F64:
		for i := range out {
			out[i] = float32(math.Float64frombits(le.Uint64(raw[8*i:])))
		}
	}
	return out, t, nil
}

// Int64 returns the named tensor converted to int64. I64, I32 and U32
// convert; other dtypes are an error wrapping ErrDType.
func (f *File) Int64(name string) ([]int64, TensorInfo, error) {
	t, ok := f.Info(name)
	if !ok {
		return nil, TensorInfo{}, fmt.Errorf("%w: %q", ErrNotFound, name)
	}
	switch t.DType {
	case I64, I32, U32:
	default:
		return nil, t, fmt.Errorf("%w: tensor %q is %s, not I64, I32 or U32", ErrDType, name, t.DType)
	}
	raw, t, err := f.Raw(name)
	if err != nil {
		return nil, t, err
	}
	out := make([]int64, t.Len())
	le := binary.LittleEndian
	for i := range out {
		switch t.DType {
		case I64:
			out[i] = int64(le.Uint64(raw[8*i:]))
		case I32:
			out[i] = int64(int32(le.Uint32(raw[4*i:])))
		case U32:
			out[i] = int64(le.Uint32(raw[4*i:]))
		}
	}
	return out, t, nil
}

// Close releases the file. It waits for reads in flight, is idempotent, and
// does not close a reader given to NewReader.
func (f *File) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return nil
	}
	f.closed = true
	if f.closer != nil {
		return f.closer.Close()
	}
	return nil
}
