//go:build linux && amd64

package onnx

/*
#cgo CFLAGS: -O3
#cgo LDFLAGS: -ldl -lm
#include <stdlib.h>
#include "hybrank_ops.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"reflect"
	"sync"
	"unsafe"

	"github.com/hybrank/hybrank/internal/cpu"
	ort "github.com/yalue/onnxruntime_go"
)

// hybrank's custom operators, in the domain onnx/ops.Domain
// ("ai.hybrank"), which every CPU session of this package registers
// (hybrank_ops.c):
//
//	ai.hybrank.Attention(q [B,Sq,H], k [B,Sk,H], v [B,Sk,H], mask: B×Sk additive) → [B,Sq,H]
//	  attributes num_heads (int), scale (float), bf16 (int, 0 or 1)
//
// a BERT layer's self-attention after its Q, K and V projections in one
// kernel (package onnx/fuse writes it). bf16 = 1 computes its two
// products in bfloat16 on AMX tiles, for CPUs with AMX-BF16 (AttentionBF16).
//
//	ai.hybrank.QuantMatMul(a [...,K], b int8 [K,N], b_scale [N], bias [N]?, a_mul [K]?) → [...,N]
//	  attributes amx, gelu (int, 0 or 1), a_bits (8 or 16), split (ints); b, b_scale, bias, a_mul initializers
//
// com.microsoft.DynamicQuantizeMatMul with one activation scale per row (a
// token) instead of one per tensor, a_mul an optional per-channel factor
// applied to a first (a smoothing of outlier channels, onnx/quantize's
// Config.Smooth). amx = 1 runs the integer products on AMX-INT8 tiles
// (QuantMatMulAMX); 0 is the plain reference, equal to the bit. gelu = 1
// applies GELU (erf form) to the result in the same pass. a_bits = 16
// quantizes each row to 16 bits (two integer products). split = [N0, N1,
// N2] hands the columns out as up to three outputs (one product for a
// layer's Q, K and V).

// opsMu guards the custom operators' state: set once by initCustomOps,
// read by every CPU session's registration.
var (
	opsMu   sync.Mutex
	opsErr  error // why the custom operators are unavailable; nil once ready
	opsInit bool  // initCustomOps has run
	opsBF16 bool  // Attention's bfloat16 tile path may run
	opsInt8 bool  // QuantMatMul's int8 tile path may run
)

// initCustomOps finds the runtime's C API in the library at path and
// builds the operator domain; once per process, after the runtime loaded.
func initCustomOps(path string) {
	opsMu.Lock()
	defer opsMu.Unlock()
	if opsInit {
		return
	}
	opsInit = true
	if !sessionOptionsLayoutKnown() {
		opsErr = errors.New("onnx: custom operators: onnxruntime_go's SessionOptions layout changed")
		return
	}
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	if msg := C.hybrank_ops_init(cpath); msg != nil {
		opsErr = fmt.Errorf("onnx: custom operators: %s", C.GoString(msg))
		return
	}
	bf16, int8 := cpu.Detect().AMXBF16Attention(), cpu.Detect().AMXInt8()
	if (bf16 || int8) && C.hybrank_ops_amx(cbool(bf16), cbool(int8)) == nil {
		opsBF16, opsInt8 = bf16, int8
	}
}

// sessionOptionsLayoutKnown reports whether ort.SessionOptions is still the
// one pointer to the runtime's OrtSessionOptions that registerCustomOps
// reads (onnxruntime_go has no call to add an operator domain).
func sessionOptionsLayoutKnown() bool {
	t := reflect.TypeFor[ort.SessionOptions]()
	return t.NumField() == 1 && t.Field(0).Type.Kind() == reflect.Pointer && t.Size() == unsafe.Sizeof(uintptr(0)) &&
		t.Field(0).Type.Elem().Name() == "_Ctype_struct_OrtSessionOptions"
}

// registerCustomOps adds the ai.hybrank domain to opts.
func registerCustomOps(opts *ort.SessionOptions) error {
	opsMu.Lock()
	defer opsMu.Unlock()
	if opsErr != nil || !opsInit {
		return cmpErr(opsErr, errors.New("onnx: custom operators: runtime not initialised"))
	}
	p := *(*unsafe.Pointer)(unsafe.Pointer(opts))
	if msg := C.hybrank_ops_register(p); msg != nil {
		return fmt.Errorf("onnx: custom operators: %s", C.GoString(msg))
	}
	return nil
}

func cmpErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// CustomOps reports whether CPU sessions can run the ai.hybrank operators
// (after Init), and if not, why.
func CustomOps() error {
	opsMu.Lock()
	defer opsMu.Unlock()
	if !opsInit {
		return ErrNotInitialized
	}
	return opsErr
}

// AttentionBF16 reports whether ai.hybrank.Attention can run with bf16 = 1
// here: a CPU with AMX-BF16 and AVX512-BF16, and a kernel that grants the
// tile state.
func AttentionBF16() bool {
	opsMu.Lock()
	defer opsMu.Unlock()
	return opsErr == nil && opsInit && opsBF16
}

// QuantMatMulAMX reports whether ai.hybrank.QuantMatMul can run with amx =
// 1 here: a CPU with AMX-INT8 and AVX-512 BW, and a kernel that grants the
// tile state.
func QuantMatMulAMX() bool {
	opsMu.Lock()
	defer opsMu.Unlock()
	return opsErr == nil && opsInit && opsInt8
}

func cbool(b bool) C.int {
	if b {
		return 1
	}
	return 0
}

// attentionDirect runs the Attention kernel outside ONNX Runtime on
// [batch, seq, hidden] slices, one (batch, head) after the other: for
// tests comparing the float32 and bfloat16 paths.
func attentionDirect(q, k, v, mask, out []float32, batch, sq, sk, hidden, heads int, scale float32, bf16 bool) error {
	if len(q) != batch*sq*hidden || len(k) != batch*sk*hidden || len(v) != len(k) || len(mask) != batch*sk || len(out) != len(q) {
		return fmt.Errorf("onnx: attention: slice lengths do not match the shape")
	}
	if bf16 && !AttentionBF16() {
		return errors.New("onnx: attention: no AMX-BF16 here")
	}
	msg := C.hybrank_attention((*C.float)(&q[0]), (*C.float)(&k[0]), (*C.float)(&v[0]), (*C.float)(&mask[0]), (*C.float)(&out[0]),
		C.long(batch), C.long(sq), C.long(sk), C.long(hidden), C.long(heads), C.float(scale), cbool(bf16))
	if msg != nil {
		return errors.New(C.GoString(msg))
	}
	return nil
}

// quantMatMulDirect runs the QuantMatMul kernel outside ONNX Runtime, on
// one thread: a [m, k], b [k, n], bScale [n], bias [n] or nil, aMul [k] or
// nil, y [m, n], activations quantized to aBits (8 or 16) bits, GELU after
// if gelu; the weights packed once, the product run reps times. For the
// tests comparing its two paths, and the kernel's benchmark.
func quantMatMulDirect(a []float32, b []int8, bScale, bias, aMul, y []float32, m, k, n int, amx, gelu bool, aBits, reps int) error {
	if m < 1 || len(a) != m*k || len(b) != k*n || len(bScale) != n || (bias != nil && len(bias) != n) ||
		(aMul != nil && len(aMul) != k) || len(y) != m*n {
		return fmt.Errorf("onnx: quant matmul: slice lengths do not match the shape")
	}
	if reps < 1 || aBits != 8 && aBits != 16 {
		return fmt.Errorf("onnx: quant matmul: reps %d, a_bits %d (want ≥ 1, and 8 or 16)", reps, aBits)
	}
	if amx && !QuantMatMulAMX() {
		return errors.New("onnx: quant matmul: no AMX-INT8 here")
	}
	var pBias, pMul *C.float
	if bias != nil {
		pBias = (*C.float)(&bias[0])
	}
	if aMul != nil {
		pMul = (*C.float)(&aMul[0])
	}
	msg := C.hybrank_quant_matmul((*C.float)(&a[0]), (*C.int8_t)(&b[0]), (*C.float)(&bScale[0]), pBias, pMul, (*C.float)(&y[0]),
		C.long(m), C.long(k), C.long(n), cbool(amx), cbool(gelu), C.int(aBits), C.long(reps))
	if msg != nil {
		return errors.New(C.GoString(msg))
	}
	return nil
}
