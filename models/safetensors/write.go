package safetensors

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"sort"
)

// F16ToFloat32 converts an IEEE 754 half-precision value (exactly: every
// half is a float32).
func F16ToFloat32(h uint16) float32 {
	sign := uint32(h>>15) << 31
	exp := uint32(h>>10) & 0x1f
	mant := uint32(h) & 0x3ff
	switch {
	case exp == 0:
		// Zero or subnormal: mant × 2⁻²⁴, exact in float32.
		v := float32(mant) / (1 << 24)
		if sign != 0 {
			v = -v
		}
		return v
	case exp == 0x1f:
		return math.Float32frombits(sign | 0x7f800000 | mant<<13) // Inf or NaN
	}
	return math.Float32frombits(sign | (exp+127-15)<<23 | mant<<13)
}

// Float32ToF16 rounds f to the nearest half-precision value (ties to even);
// values beyond the half range become ±Inf, NaN stays NaN.
func Float32ToF16(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp := int32(b>>23) & 0xff
	mant := b & 0x7fffff
	if exp == 0xff {
		if mant != 0 {
			return sign | 0x7e00
		}
		return sign | 0x7c00
	}
	e := exp - 127 + 15
	if e >= 0x1f {
		return sign | 0x7c00
	}
	if e <= 0 {
		// Half subnormal: value / 2⁻²⁴ = (1.mant) × 2^(e-14+24-24).
		if e < -10 {
			return sign
		}
		m := mant | 0x800000
		shift := uint32(14 - e)
		hm := m >> shift
		rem, half := m&(1<<shift-1), uint32(1)<<(shift-1)
		if rem > half || (rem == half && hm&1 == 1) {
			hm++ // may carry into the smallest normal, which is right
		}
		return sign | uint16(hm)
	}
	out := uint32(e)<<10 | mant>>13
	rem := mant & 0x1fff
	if rem > 0x1000 || (rem == 0x1000 && out&1 == 1) {
		out++ // may carry into the exponent, up to Inf, which is right
	}
	return sign | uint16(out)
}

// BF16ToFloat32 converts a bfloat16 value (the top half of a float32).
func BF16ToFloat32(h uint16) float32 { return math.Float32frombits(uint32(h) << 16) }

// Float32ToBF16 rounds f to the nearest bfloat16 (ties to even); NaN stays
// NaN.
func Float32ToBF16(f float32) uint16 {
	b := math.Float32bits(f)
	if b&0x7fffffff > 0x7f800000 {
		return uint16(b>>16) | 0x40 // quiet NaN
	}
	return uint16((b + 0x7fff + (b>>16)&1) >> 16)
}

// Tensor is one tensor to write. A plain value; Write only reads it.
type Tensor struct {
	Name  string
	DType DType
	Shape []int64
	// Data is the row-major little-endian content: len(Data) must equal the
	// element count times DType.Size().
	Data []byte
}

// EncodeFloat32 returns a tensor of dtype F32, F16 or BF16 holding v
// (rounded to nearest even for the 16-bit types).
func EncodeFloat32(name string, dtype DType, shape []int64, v []float32) (Tensor, error) {
	t := Tensor{Name: name, DType: dtype, Shape: shape, Data: make([]byte, len(v)*dtype.Size())}
	le := binary.LittleEndian
	switch dtype {
	case F32:
		for i, x := range v {
			le.PutUint32(t.Data[4*i:], math.Float32bits(x))
		}
	case F16:
		for i, x := range v {
			le.PutUint16(t.Data[2*i:], Float32ToF16(x))
		}
	case BF16:
		for i, x := range v {
			le.PutUint16(t.Data[2*i:], Float32ToBF16(x))
		}
	default:
		return Tensor{}, fmt.Errorf("%w: cannot encode float32 as %q", ErrDType, dtype)
	}
	return t, nil
}

// Write writes tensors (in name order) and metadata as a safetensors file.
// The header is padded with spaces to a multiple of 8 bytes, as the
// reference implementation does, so data stays aligned. Names must be
// unique and not "__metadata__", and each Data must fit its shape.
func Write(w io.Writer, tensors []Tensor, metadata map[string]string) error {
	sorted := append([]Tensor(nil), tensors...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	hdr := make(map[string]any, len(sorted)+1)
	if metadata != nil {
		hdr[metadataKey] = metadata
	}
	var off int64
	for i, t := range sorted {
		if t.Name == metadataKey || (i > 0 && sorted[i-1].Name == t.Name) {
			return fmt.Errorf("safetensors: write: bad or duplicate tensor name %q", t.Name)
		}
		info := TensorInfo{DType: t.DType, Shape: t.Shape}
		if t.DType.Size() == 0 {
			return fmt.Errorf("%w: write %q: dtype %q", ErrDType, t.Name, t.DType)
		}
		if want := info.Len() * int64(t.DType.Size()); want != int64(len(t.Data)) {
			return fmt.Errorf("safetensors: write %q: shape %v of %s needs %d bytes, have %d", t.Name, t.Shape, t.DType, want, len(t.Data))
		}
		shape := t.Shape
		if shape == nil {
			shape = []int64{}
		}
		end := off + int64(len(t.Data))
		hdr[t.Name] = headerEntry{DType: t.DType, Shape: shape, DataOffsets: []int64{off, end}}
		off = end
	}
	js, err := json.Marshal(hdr)
	if err != nil {
		return fmt.Errorf("safetensors: write header: %w", err)
	}
	if pad := (8 - len(js)%8) % 8; pad > 0 {
		js = append(js, bytes.Repeat([]byte{' '}, pad)...)
	}
	var lenBuf [8]byte
	binary.LittleEndian.PutUint64(lenBuf[:], uint64(len(js)))
	if _, err := w.Write(lenBuf[:]); err != nil {
		return err
	}
	if _, err := w.Write(js); err != nil {
		return err
	}
	for _, t := range sorted {
		if _, err := w.Write(t.Data); err != nil {
			return err
		}
	}
	return nil
}
