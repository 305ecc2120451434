//go:build !(linux && amd64)

package onnx

import (
	"errors"

	ort "github.com/yalue/onnxruntime_go"
)

// hybrank's custom operators (customop.go, hybrank_ops.c) are built for
// Linux on x86-64 only: the kernel uses AVX-512 and AMX and asks Linux for
// the tile state. Elsewhere CPU sessions run without them, and
// onnx/fuse's AttentionBF16 and QuantMatMulAMX are not applied
// (AttentionBF16 and QuantMatMulAMX are false).

var errNoCustomOps = errors.New("onnx: custom operators: built for linux/amd64 only")

func initCustomOps(string) {}

func registerCustomOps(*ort.SessionOptions) error { return errNoCustomOps }

// CustomOps reports why CPU sessions cannot run the ai.hybrank operators
// here.
func CustomOps() error { return errNoCustomOps }

// AttentionBF16 is false: no custom operators on this platform.
func AttentionBF16() bool { return false }

func attentionDirect(q, k, v, mask, out []float32, batch, sq, sk, hidden, heads int, scale float32, bf16 bool) error {
	return errNoCustomOps
}

// QuantMatMulAMX is false: no custom operators on this platform.
func QuantMatMulAMX() bool { return false }
