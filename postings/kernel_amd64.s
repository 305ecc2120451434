//go:build amd64 && !purego

#include "textflag.h"

// func addTabledAVX512(acc []float32, docs []uint32, tf []uint8, docLen []uint32, tab []float64, idf, nonOcc float64, w float32) int
//
// For j in steps of 8 while a whole group remains, and only while every
// posting of the group has d < min(len(acc), len(docLen)), tf < 16 and
// docLen[d] < len(tab)/16 (len(tab) is a multiple of 16):
//
//	i := docLen[d]<<4 | tf[j]
//	acc[d] += float32(w * float32(idf*tab[i]-nonOcc))
//
// Doc nums of one list are distinct, so the scatter has no conflicts.
// Returns the number of postings added. Requires len(tf) >= len(docs).
TEXT ·addTabledAVX512(SB), NOSPLIT, $0-152
	MOVQ acc_base+0(FP), AX
	MOVQ acc_len+8(FP), R10
	MOVQ docs_base+24(FP), DI
	MOVQ docs_len+32(FP), CX
	MOVQ tf_base+48(FP), SI
	MOVQ docLen_base+72(FP), R8
	MOVQ docLen_len+80(FP), R11
	MOVQ tab_base+96(FP), R9
	MOVQ tab_len+104(FP), R12

	// Doc limit: min(len(acc), len(docLen), 2^32-1); length limit:
	// len(tab)/16 (clamped alike).
	CMPQ    R11, R10
	CMOVQLT R11, R10
	MOVQ    $0xFFFFFFFF, R13
	CMPQ    R10, R13
	CMOVQGT R13, R10
	SHRQ    $4, R12
	CMPQ    R12, R13
	CMOVQGT R13, R12

	VPBROADCASTD R10, Y7
	VPBROADCASTD R12, Y8
	MOVL         $16, R13
	VPBROADCASTD R13, Y9
	VBROADCASTSD idf+120(FP), Z10
	VBROADCASTSD nonOcc+128(FP), Z11
	VBROADCASTSS w+136(FP), Y12
	XORQ         BX, BX

loop:
	LEAQ 8(BX), DX
	CMPQ DX, CX
	JGT  done

	VMOVDQU32 (DI)(BX*4), Y1
	VPCMPUD   $1, Y7, Y1, K1
	KMOVB     K1, R13
	CMPB      R13, $0xff
	JNE       done
	VPMOVZXBD (SI)(BX*1), Y2
	VPCMPUD   $1, Y9, Y2, K2

	KXNORB      K3, K3, K3
	VPXORD      Y3, Y3, Y3
	VPGATHERDD  (R8)(Y1*4), K3, Y3
	VPCMPUD     $1, Y8, Y3, K4
	KANDB       K2, K4, K4
	KMOVB       K4, R13
	CMPB        R13, $0xff
	JNE         done

	VPSLLD $4, Y3, Y3
	VPORD  Y2, Y3, Y3

	KXNORB     K5, K5, K5
	VXORPD     Z4, Z4, Z4
	VGATHERDPD (R9)(Y3*8), K5, Z4
	VMULPD     Z10, Z4, Z4
	VSUBPD     Z11, Z4, Z4
	VCVTPD2PS  Z4, Y5
	VMULPS     Y12, Y5, Y5

	KXNORB      K6, K6, K6
	VXORPS      Y6, Y6, Y6
	VGATHERDPS  (AX)(Y1*4), K6, Y6
	VADDPS      Y5, Y6, Y6
	KXNORB      K6, K6, K6
	VSCATTERDPS Y6, K6, (AX)(Y1*4)

	MOVQ DX, BX
	JMP  loop

done:
	VZEROUPPER
	MOVQ BX, ret+144(FP)
	RET
