//go:build amd64 && !purego

#include "textflag.h"

// func dotAVX2(a, b []float32) float32
//
// Implements, with four 8-wide FMA accumulators:
//
//	var s float32
//	for i := range a {
//		s += a[i] * b[i]
//	}
//	return s
TEXT ·dotAVX2(SB), NOSPLIT, $0-52
	MOVQ   a_base+0(FP), SI
	MOVQ   a_len+8(FP), CX
	MOVQ   b_base+24(FP), DI
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3

dot2_loop32:
	CMPQ        CX, $32
	JL          dot2_loop8
	VMOVUPS     (SI), Y4
	VMOVUPS     32(SI), Y5
	VMOVUPS     64(SI), Y6
	VMOVUPS     96(SI), Y7
	VFMADD231PS (DI), Y4, Y0
	VFMADD231PS 32(DI), Y5, Y1
	VFMADD231PS 64(DI), Y6, Y2
	VFMADD231PS 96(DI), Y7, Y3
	ADDQ        $128, SI
	ADDQ        $128, DI
	SUBQ        $32, CX
	JMP         dot2_loop32

dot2_loop8:
	CMPQ        CX, $8
	JL          dot2_reduce
	VMOVUPS     (SI), Y4
	VFMADD231PS (DI), Y4, Y0
	ADDQ        $32, SI
	ADDQ        $32, DI
	SUBQ        $8, CX
	JMP         dot2_loop8

dot2_reduce:
	VADDPS       Y1, Y0, Y0
	VADDPS       Y3, Y2, Y2
	VADDPS       Y2, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS       X1, X0, X0
	VHADDPS      X0, X0, X0
	VHADDPS      X0, X0, X0

dot2_tail:
	TESTQ       CX, CX
	JE          dot2_done
	VMOVSS      (SI), X1
	VFMADD231SS (DI), X1, X0
	ADDQ        $4, SI
	ADDQ        $4, DI
	DECQ        CX
	JMP         dot2_tail

dot2_done:
	VZEROUPPER
	MOVSS X0, ret+48(FP)
	RET

// func axpyAVX2(dst []float32, alpha float32, x []float32)
//
// Implements (with fused multiply-add):
//
//	for i := range dst {
//		dst[i] += alpha * x[i]
//	}
TEXT ·axpyAVX2(SB), NOSPLIT, $0-56
	MOVQ         dst_base+0(FP), DI
	MOVQ         dst_len+8(FP), CX
	MOVQ         x_base+32(FP), SI
	VBROADCASTSS alpha+24(FP), Y0

axpy2_loop32:
	CMPQ        CX, $32
	JL          axpy2_loop8
	VMOVUPS     (DI), Y1
	VMOVUPS     32(DI), Y2
	VMOVUPS     64(DI), Y3
	VMOVUPS     96(DI), Y4
	VFMADD231PS (SI), Y0, Y1
	VFMADD231PS 32(SI), Y0, Y2
	VFMADD231PS 64(SI), Y0, Y3
	VFMADD231PS 96(SI), Y0, Y4
	VMOVUPS     Y1, (DI)
	VMOVUPS     Y2, 32(DI)
	VMOVUPS     Y3, 64(DI)
	VMOVUPS     Y4, 96(DI)
	ADDQ        $128, SI
	ADDQ        $128, DI
	SUBQ        $32, CX
	JMP         axpy2_loop32

axpy2_loop8:
	CMPQ        CX, $8
	JL          axpy2_tail
	VMOVUPS     (DI), Y1
	VFMADD231PS (SI), Y0, Y1
	VMOVUPS     Y1, (DI)
	ADDQ        $32, SI
	ADDQ        $32, DI
	SUBQ        $8, CX
	JMP         axpy2_loop8

axpy2_tail:
	TESTQ       CX, CX
	JE          axpy2_done
	VMOVSS      (DI), X1
	VFMADD231SS (SI), X0, X1
	VMOVSS      X1, (DI)
	ADDQ        $4, SI
	ADDQ        $4, DI
	DECQ        CX
	JMP         axpy2_tail

axpy2_done:
	VZEROUPPER
	RET

// func scaleAVX2(x []float32, s float32)
//
// Implements:
//
//	for i := range x {
//		x[i] *= s
//	}
TEXT ·scaleAVX2(SB), NOSPLIT, $0-28
	MOVQ         x_base+0(FP), DI
	MOVQ         x_len+8(FP), CX
	VBROADCASTSS s+24(FP), Y0

scale2_loop32:
	CMPQ    CX, $32
	JL      scale2_loop8
	VMULPS  (DI), Y0, Y1
	VMULPS  32(DI), Y0, Y2
	VMULPS  64(DI), Y0, Y3
	VMULPS  96(DI), Y0, Y4
	VMOVUPS Y1, (DI)
	VMOVUPS Y2, 32(DI)
	VMOVUPS Y3, 64(DI)
	VMOVUPS Y4, 96(DI)
	ADDQ    $128, DI
	SUBQ    $32, CX
	JMP     scale2_loop32

scale2_loop8:
	CMPQ    CX, $8
	JL      scale2_tail
	VMULPS  (DI), Y0, Y1
	VMOVUPS Y1, (DI)
	ADDQ    $32, DI
	SUBQ    $8, CX
	JMP     scale2_loop8

scale2_tail:
	TESTQ  CX, CX
	JE     scale2_done
	VMULSS (DI), X0, X1
	VMOVSS X1, (DI)
	ADDQ   $4, DI
	DECQ   CX
	JMP    scale2_tail

scale2_done:
	VZEROUPPER
	RET

// func dotAVX512(a, b []float32) float32
//
// Implements, with four 16-wide FMA accumulators and a masked tail:
//
//	var s float32
//	for i := range a {
//		s += a[i] * b[i]
//	}
//	return s
TEXT ·dotAVX512(SB), NOSPLIT, $0-52
	MOVQ   a_base+0(FP), SI
	MOVQ   a_len+8(FP), CX
	MOVQ   b_base+24(FP), DI
	VXORPS Z0, Z0, Z0
	VXORPS Z1, Z1, Z1
	VXORPS Z2, Z2, Z2
	VXORPS Z3, Z3, Z3

dot5_loop64:
	CMPQ        CX, $64
	JL          dot5_loop16
	VMOVUPS     (SI), Z4
	VMOVUPS     64(SI), Z5
	VMOVUPS     128(SI), Z6
	VMOVUPS     192(SI), Z7
	VFMADD231PS (DI), Z4, Z0
	VFMADD231PS 64(DI), Z5, Z1
	VFMADD231PS 128(DI), Z6, Z2
	VFMADD231PS 192(DI), Z7, Z3
	ADDQ        $256, SI
	ADDQ        $256, DI
	SUBQ        $64, CX
	JMP         dot5_loop64

dot5_loop16:
	CMPQ        CX, $16
	JL          dot5_tail
	VMOVUPS     (SI), Z4
	VFMADD231PS (DI), Z4, Z0
	ADDQ        $64, SI
	ADDQ        $64, DI
	SUBQ        $16, CX
	JMP         dot5_loop16

dot5_tail:
	TESTQ       CX, CX
	JE          dot5_reduce
	MOVL        $1, AX
	SHLL        CX, AX
	DECL        AX
	KMOVW       AX, K1
	VMOVUPS.Z   (SI), K1, Z4
	VMOVUPS.Z   (DI), K1, Z5
	VFMADD231PS Z5, Z4, Z1

dot5_reduce:
	VADDPS        Z1, Z0, Z0
	VADDPS        Z3, Z2, Z2
	VADDPS        Z2, Z0, Z0
	VEXTRACTF64X4 $1, Z0, Y1
	VADDPS        Y1, Y0, Y0
	VEXTRACTF128  $1, Y0, X1
	VADDPS        X1, X0, X0
	VHADDPS       X0, X0, X0
	VHADDPS       X0, X0, X0
	VZEROUPPER
	MOVSS         X0, ret+48(FP)
	RET

// func axpyAVX512(dst []float32, alpha float32, x []float32)
//
// Implements (with fused multiply-add and a masked tail):
//
//	for i := range dst {
//		dst[i] += alpha * x[i]
//	}
TEXT ·axpyAVX512(SB), NOSPLIT, $0-56
	MOVQ         dst_base+0(FP), DI
	MOVQ         dst_len+8(FP), CX
	MOVQ         x_base+32(FP), SI
	VBROADCASTSS alpha+24(FP), Z0

axpy5_loop64:
	CMPQ        CX, $64
	JL          axpy5_loop16
	VMOVUPS     (DI), Z1
	VMOVUPS     64(DI), Z2
	VMOVUPS     128(DI), Z3
	VMOVUPS     192(DI), Z4
	VFMADD231PS (SI), Z0, Z1
	VFMADD231PS 64(SI), Z0, Z2
	VFMADD231PS 128(SI), Z0, Z3
	VFMADD231PS 192(SI), Z0, Z4
	VMOVUPS     Z1, (DI)
	VMOVUPS     Z2, 64(DI)
	VMOVUPS     Z3, 128(DI)
	VMOVUPS     Z4, 192(DI)
	ADDQ        $256, SI
	ADDQ        $256, DI
	SUBQ        $64, CX
	JMP         axpy5_loop64

axpy5_loop16:
	CMPQ        CX, $16
	JL          axpy5_tail
	VMOVUPS     (DI), Z1
	VFMADD231PS (SI), Z0, Z1
	VMOVUPS     Z1, (DI)
	ADDQ        $64, SI
	ADDQ        $64, DI
	SUBQ        $16, CX
	JMP         axpy5_loop16

axpy5_tail:
	TESTQ       CX, CX
	JE          axpy5_done
	MOVL        $1, AX
	SHLL        CX, AX
	DECL        AX
	KMOVW       AX, K1
	VMOVUPS.Z   (DI), K1, Z1
	VMOVUPS.Z   (SI), K1, Z2
	VFMADD231PS Z2, Z0, Z1
	VMOVUPS     Z1, K1, (DI)

axpy5_done:
	VZEROUPPER
	RET

// func scaleAVX512(x []float32, s float32)
//
// Implements (with a masked tail):
//
//	for i := range x {
//		x[i] *= s
//	}
TEXT ·scaleAVX512(SB), NOSPLIT, $0-28
	MOVQ         x_base+0(FP), DI
	MOVQ         x_len+8(FP), CX
	VBROADCASTSS s+24(FP), Z0

scale5_loop64:
	CMPQ    CX, $64
	JL      scale5_loop16
	VMULPS  (DI), Z0, Z1
	VMULPS  64(DI), Z0, Z2
	VMULPS  128(DI), Z0, Z3
	VMULPS  192(DI), Z0, Z4
	VMOVUPS Z1, (DI)
	VMOVUPS Z2, 64(DI)
	VMOVUPS Z3, 128(DI)
	VMOVUPS Z4, 192(DI)
	ADDQ    $256, DI
	SUBQ    $64, CX
	JMP     scale5_loop64

scale5_loop16:
	CMPQ    CX, $16
	JL      scale5_tail
	VMULPS  (DI), Z0, Z1
	VMOVUPS Z1, (DI)
	ADDQ    $64, DI
	SUBQ    $16, CX
	JMP     scale5_loop16

scale5_tail:
	TESTQ     CX, CX
	JE        scale5_done
	MOVL      $1, AX
	SHLL      CX, AX
	DECL      AX
	KMOVW     AX, K1
	VMOVUPS.Z (DI), K1, Z1
	VMULPS    Z1, Z0, Z1
	VMOVUPS   Z1, K1, (DI)

scale5_done:
	VZEROUPPER
	RET
