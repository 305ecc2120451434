package safetensors_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/hybrank/hybrank/models/safetensors"
)

// rawFile assembles a file from a header string and a data buffer, with no
// checks, so tests can build broken files.
func rawFile(header string, data []byte) []byte {
	var b bytes.Buffer
	binary.Write(&b, binary.LittleEndian, uint64(len(header)))
	b.WriteString(header)
	b.Write(data)
	return b.Bytes()
}

func open(t *testing.T, file []byte) (*safetensors.File, error) {
	t.Helper()
	return safetensors.NewReader(bytes.NewReader(file), int64(len(file)))
}

func le16(vs ...uint16) []byte {
	b := make([]byte, 2*len(vs))
	for i, v := range vs {
		binary.LittleEndian.PutUint16(b[2*i:], v)
	}
	return b
}

func le32f(vs ...float32) []byte {
	b := make([]byte, 4*len(vs))
	for i, v := range vs {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
	}
	return b
}

func le32u(vs ...uint32) []byte {
	b := make([]byte, 4*len(vs))
	for i, v := range vs {
		binary.LittleEndian.PutUint32(b[4*i:], v)
	}
	return b
}

func le64(vs ...uint64) []byte {
	b := make([]byte, 8*len(vs))
	for i, v := range vs {
		binary.LittleEndian.PutUint64(b[8*i:], v)
	}
	return b
}

// TestDTypes reads one handcrafted tensor of every convertible dtype.
func TestDTypes(t *testing.T) {
	var data []byte
	data = append(data, le32f(1.5, -2, 0.25, 3e-5)...)                            // F32 [2,2] at 0..16
	data = append(data, le16(0x3c00, 0xc000, 0x7bff, 0x0001, 0x8000, 0x3555)...)  // F16 [6] at 16..28
	data = append(data, le16(0x3f80, 0xc040, 0x3e80)...)                          // BF16 [3] at 28..34
	data = append(data, 0, 0)                                                     // U8 [2] at 34..36
	data = append(data, le64(math.Float64bits(0.1), math.Float64bits(-1e300))...) // F64 [2] at 36..52
	data = append(data, le64(0, 511, uint64(math.MaxUint64))...)                  // I64 [3] at 52..76
	data = append(data, le32u(0xffffffff, 7)...)                                  // I32 [2] at 76..84
	hdr := `{"__metadata__":{"format":"pt"},` +
		`"f32":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]},` +
		`"f16":{"dtype":"F16","shape":[6],"data_offsets":[16,28]},` +
		`"bf16":{"dtype":"BF16","shape":[3],"data_offsets":[28,34]},` +
		`"u8":{"dtype":"U8","shape":[2],"data_offsets":[34,36]},` +
		`"f64":{"dtype":"F64","shape":[2],"data_offsets":[36,52]},` +
		`"i64":{"dtype":"I64","shape":[3],"data_offsets":[52,76]},` +
		`"i32":{"dtype":"I32","shape":[1,2],"data_offsets":[76,84]}}   `
	f, err := open(t, rawFile(hdr, data))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if got := f.Names(); !slices.Equal(got, []string{"bf16", "f16", "f32", "f64", "i32", "i64", "u8"}) {
		t.Fatalf("Names = %v", got)
	}
	if m := f.Metadata(); m["format"] != "pt" || len(m) != 1 {
		t.Fatalf("Metadata = %v", m)
	}
	floats := []struct {
		name  string
		want  []float32
		shape []int64
	}{
		{"f32", []float32{1.5, -2, 0.25, 3e-5}, []int64{2, 2}},
		{"f16", []float32{1, -2, 65504, 5.9604645e-08, float32(math.Copysign(0, -1)), 0.33325195}, []int64{6}},
		{"bf16", []float32{1, -3, 0.25}, []int64{3}},
		{"f64", []float32{0.1, float32(math.Inf(-1))}, []int64{2}},
	}
	for _, tc := range floats {
		got, info, err := f.Float32(tc.name)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if !slices.Equal(info.Shape, tc.shape) {
			t.Errorf("%s: shape %v, want %v", tc.name, info.Shape, tc.shape)
		}
		for i := range got {
			if math.Float32bits(got[i]) != math.Float32bits(tc.want[i]) {
				t.Errorf("%s[%d] = %g, want %g", tc.name, i, got[i], tc.want[i])
			}
		}
	}
	ints, _, err := f.Int64("i64")
	if err != nil || !slices.Equal(ints, []int64{0, 511, -1}) {
		t.Fatalf("Int64(i64) = %v, %v", ints, err)
	}
	ints, _, err = f.Int64("i32")
	if err != nil || !slices.Equal(ints, []int64{-1, 7}) {
		t.Fatalf("Int64(i32) = %v, %v", ints, err)
	}
	for _, c := range []struct {
		name string
		fn   func(string) error
	}{
		{"u8", func(n string) error { _, _, err := f.Float32(n); return err }},
		{"i64", func(n string) error { _, _, err := f.Float32(n); return err }},
		{"f32", func(n string) error { _, _, err := f.Int64(n); return err }},
	} {
		if err := c.fn(c.name); !errors.Is(err, safetensors.ErrDType) {
			t.Errorf("converting %s: %v, want ErrDType", c.name, err)
		}
	}
	if _, _, err := f.Float32("nope"); !errors.Is(err, safetensors.ErrNotFound) {
		t.Errorf("missing tensor: %v, want ErrNotFound", err)
	}
}

// TestBadFiles covers every format rule Open enforces.
func TestBadFiles(t *testing.T) {
	eight := make([]byte, 8)
	one := `{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}`
	huge := make([]byte, 8)
	binary.LittleEndian.PutUint64(huge, 1<<62)
	tests := []struct {
		name string
		file []byte
		want error
	}{
		{"empty file", nil, safetensors.ErrFormat},
		{"short length", []byte{1, 2, 3}, safetensors.ErrFormat},
		{"header length past end", append(le64(100), []byte("{}")...), safetensors.ErrFormat},
		{"header length huge", huge, safetensors.ErrFormat},
		{"header not an object", rawFile(`[1,2]`, nil), safetensors.ErrFormat},
		{"header not json", rawFile(`{"a":`, nil), safetensors.ErrFormat},
		{"trailing garbage", rawFile(one+`x`, eight), safetensors.ErrFormat},
		{"unknown field", rawFile(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8],"x":1}}`, eight), safetensors.ErrFormat},
		{"no shape", rawFile(`{"a":{"dtype":"F32","data_offsets":[0,8]}}`, eight), safetensors.ErrFormat},
		{"negative dim", rawFile(`{"a":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}}`, eight), safetensors.ErrFormat},
		{"one offset", rawFile(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[8]}}`, eight), safetensors.ErrFormat},
		{"end before begin", rawFile(`{"a":{"dtype":"F32","shape":[0],"data_offsets":[8,0]}}`, eight), safetensors.ErrFormat},
		{"size mismatch", rawFile(`{"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}}`, eight), safetensors.ErrFormat},
		{"overflowing shape", rawFile(`{"a":{"dtype":"F32","shape":[4611686018427387904,4],"data_offsets":[0,8]}}`, eight), safetensors.ErrFormat},
		{"offsets out of range", rawFile(`{"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}}`, eight), safetensors.ErrFormat},
		{"data left over", rawFile(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}`, eight), safetensors.ErrFormat},
		{"hole", rawFile(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}`, eight), safetensors.ErrFormat},
		{"overlap", rawFile(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}`, eight), safetensors.ErrFormat},
		{"same range twice", rawFile(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}`, eight), safetensors.ErrFormat},
		{"metadata not strings", rawFile(`{"__metadata__":{"a":1}}`, nil), safetensors.ErrFormat},
		{"unknown dtype", rawFile(`{"a":{"dtype":"F128","shape":[1],"data_offsets":[0,8]}}`, eight), safetensors.ErrDType},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, err := open(t, tc.file)
			if !errors.Is(err, tc.want) {
				t.Fatalf("NewReader = %v, want %v", err, tc.want)
			}
			if f != nil {
				t.Fatal("got a File with an error")
			}
		})
	}
}

// TestEmptyAndScalar: a header with no tensors is valid, and so is a scalar
// (shape []) and an empty tensor (a zero dimension, zero bytes).
func TestEmptyAndScalar(t *testing.T) {
	f, err := open(t, rawFile(`{}`, nil))
	if err != nil || len(f.Names()) != 0 {
		t.Fatalf("empty: %v %v", f, err)
	}
	f, err = open(t, rawFile(`{"s":{"dtype":"F32","shape":[],"data_offsets":[0,4]},"z":{"dtype":"F32","shape":[0,3],"data_offsets":[4,4]}}`, le32f(7)))
	if err != nil {
		t.Fatal(err)
	}
	s, _, err := f.Float32("s")
	if err != nil || !slices.Equal(s, []float32{7}) {
		t.Fatalf("scalar = %v, %v", s, err)
	}
	z, _, err := f.Float32("z")
	if err != nil || len(z) != 0 {
		t.Fatalf("empty tensor = %v, %v", z, err)
	}
}

func TestF16RoundTrip(t *testing.T) {
	for h := range 1 << 16 {
		v := safetensors.F16ToFloat32(uint16(h))
		if v != v { // NaN: any NaN back is fine
			if g := safetensors.F16ToFloat32(safetensors.Float32ToF16(v)); g == g {
				t.Fatalf("NaN %#04x came back as %g", h, g)
			}
			continue
		}
		if back := safetensors.Float32ToF16(v); back != uint16(h) {
			t.Fatalf("half %#04x -> %g -> %#04x", h, v, back)
		}
	}
	tie := float32(0x1p-25)
	tests := []struct {
		in   float32
		want uint16
	}{
		{65520, 0x7c00},                    // rounds up past the largest half
		{65519, 0x7bff},                    // rounds down to 65504
		{1 + 1.0/2048, 0x3c00},             // tie between 1 and next: even (1)
		{1 + 3.0/2048, 0x3c02},             // tie: even (up)
		{tie, 0x0000},                      // 2⁻²⁵, tie between 0 and the smallest subnormal: even (0)
		{math.Nextafter32(tie, 1), 0x0001}, // just above the tie
		{math.Nextafter32(tie, 0), 0x0000}, // just below the tie
		{1023 * 0x1p-24, 0x03ff},           // largest subnormal
		{0x1p-14, 0x0400},                  // smallest normal
		{0x1p-14 - 0x1p-26, 0x0400},        // halfway below it: rounds up into the normals
		{-1e-10, 0x8000},                   // underflow keeps the sign
		{float32(math.Inf(1)), 0x7c00},     // Inf
	}
	for _, tc := range tests {
		if got := safetensors.Float32ToF16(tc.in); got != tc.want {
			t.Errorf("Float32ToF16(%g) = %#04x, want %#04x", tc.in, got, tc.want)
		}
	}
}

func TestBF16(t *testing.T) {
	for h := range 1 << 16 {
		v := safetensors.BF16ToFloat32(uint16(h))
		if v != v {
			continue
		}
		if back := safetensors.Float32ToBF16(v); back != uint16(h) {
			t.Fatalf("bf16 %#04x -> %g -> %#04x", h, v, back)
		}
	}
	// 1 + 2⁻⁸ is a tie between 1 (0x3f80) and 1+2⁻⁷ (0x3f81): even.
	if got := safetensors.Float32ToBF16(1 + 1.0/256); got != 0x3f80 {
		t.Errorf("tie rounds to %#04x", got)
	}
	if got := safetensors.Float32ToBF16(1 + 3.0/256); got != 0x3f82 {
		t.Errorf("tie rounds to %#04x", got)
	}
	if got := safetensors.BF16ToFloat32(safetensors.Float32ToBF16(float32(math.NaN()))); got == got {
		t.Error("NaN lost")
	}
}

// TestWriteRead writes every float encoding and reads it back through a
// real file.
func TestWriteRead(t *testing.T) {
	v := []float32{0, 1, -1.5, 0.1, 1e-3, 300, -65504, 1e-6}
	var tensors []safetensors.Tensor
	for _, dt := range []safetensors.DType{safetensors.F32, safetensors.F16, safetensors.BF16} {
		tt, err := safetensors.EncodeFloat32("t."+string(dt), dt, []int64{2, 4}, v)
		if err != nil {
			t.Fatal(err)
		}
		tensors = append(tensors, tt)
	}
	tensors = append(tensors, safetensors.Tensor{Name: "ids", DType: safetensors.I64, Shape: []int64{3}, Data: le64(0, 1, 2)})
	path := filepath.Join(t.TempDir(), "m.safetensors")
	var buf bytes.Buffer
	if err := safetensors.Write(&buf, tensors, map[string]string{"format": "pt"}); err != nil {
		t.Fatal(err)
	}
	if n := binary.LittleEndian.Uint64(buf.Bytes()); n%8 != 0 {
		t.Fatalf("header length %d is not 8-aligned", n)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := safetensors.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	// Relative tolerance (half an ulp) and, for F16's subnormals, absolute.
	tol := map[string][2]float64{"t.F32": {0, 0}, "t.F16": {1.0 / 2048, 0x1p-25}, "t.BF16": {1.0 / 256, 0}}
	for name, tl := range tol {
		got, info, err := f.Float32(name)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(info.Shape, []int64{2, 4}) {
			t.Fatalf("%s shape %v", name, info.Shape)
		}
		for i := range v {
			if d := math.Abs(float64(got[i]) - float64(v[i])); d > tl[0]*math.Abs(float64(v[i]))+tl[1] {
				t.Errorf("%s[%d] = %g, want %g (tolerance %v)", name, i, got[i], v[i], tl)
			}
		}
	}
	// Concurrent reads, then Close twice, then reads fail.
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			if _, _, err := f.Int64("ids"); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, _, err := f.Float32("t.F32"); !errors.Is(err, safetensors.ErrClosed) {
		t.Fatalf("read after Close: %v", err)
	}
}

func TestWriteErrors(t *testing.T) {
	good := safetensors.Tensor{Name: "a", DType: safetensors.F32, Shape: []int64{1}, Data: le32f(1)}
	tests := []struct {
		name    string
		tensors []safetensors.Tensor
	}{
		{"duplicate", []safetensors.Tensor{good, good}},
		{"metadata name", []safetensors.Tensor{{Name: "__metadata__", DType: safetensors.F32, Shape: []int64{1}, Data: le32f(1)}}},
		{"short data", []safetensors.Tensor{{Name: "a", DType: safetensors.F32, Shape: []int64{2}, Data: le32f(1)}}},
		{"bad dtype", []safetensors.Tensor{{Name: "a", DType: "X", Shape: []int64{1}, Data: le32f(1)}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := safetensors.Write(&bytes.Buffer{}, tc.tensors, nil); err == nil {
				t.Fatal("Write succeeded")
			}
		})
	}
	if _, err := safetensors.EncodeFloat32("a", safetensors.I64, []int64{1}, []float32{1}); !errors.Is(err, safetensors.ErrDType) {
		t.Fatalf("EncodeFloat32(I64) = %v", err)
	}
}
