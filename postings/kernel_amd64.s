//go:build amd64 && !purego

#include "textflag.h"

// func addTabledAVX512(acc []float32, docs []uint32, tf []uint8, docLen []uint32, tab []float64, idf, nonOcc float64, w float32) int
//
// For j in steps of 8 while a whole group remains, and only while every
// posting of the group has d < min(len(acc), len(docLen), 2^31), tf < 16
// and docLen[d] < min(len(tab)/16, 2^27) (len(tab) is a multiple of 16):
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

	// Doc limit: min(len(acc), len(docLen), 2^31-1): the gathers and the
	// scatter take their dword indices as signed, so a doc num of 2^31 or
	// more would address before acc and docLen (the Go loop takes such
	// groups). Length limit: len(tab)/16, at most 2^27, so that the table
	// index docLen<<4 | tf stays below 2^31 too.
	CMPQ    R11, R10
	CMOVQLT R11, R10
	MOVQ    $0x7FFFFFFF, R13
	CMPQ    R10, R13
	CMOVQGT R13, R10
	SHRQ    $4, R12
	MOVQ    $0x08000000, R13
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

// func groupMaxAVX512(acc []float32, maxima []uint32)
//
// For each group g of 256 entries (16 rows of 16), maxima[16g+j] =
// max(0, max over rows r of int32 bits of acc[256g+16r+j]): the maxima of
// 16 strided blocks per group. Requires len(acc) a multiple of 256 and
// len(maxima) >= len(acc)/16.
TEXT ·groupMaxAVX512(SB), NOSPLIT, $0-48
	MOVQ   acc_base+0(FP), SI
	MOVQ   acc_len+8(FP), CX
	MOVQ   maxima_base+24(FP), DI
	SHRQ   $8, CX
	VPXORD Z8, Z8, Z8

gm_loop:
	TESTQ     CX, CX
	JZ        gm_done
	VMOVDQU32 (SI), Z0
	VMOVDQU32 64(SI), Z1
	VPMAXSD   128(SI), Z0, Z0
	VPMAXSD   192(SI), Z1, Z1
	VPMAXSD   256(SI), Z0, Z0
	VPMAXSD   320(SI), Z1, Z1
	VPMAXSD   384(SI), Z0, Z0
	VPMAXSD   448(SI), Z1, Z1
	VPMAXSD   512(SI), Z0, Z0
	VPMAXSD   576(SI), Z1, Z1
	VPMAXSD   640(SI), Z0, Z0
	VPMAXSD   704(SI), Z1, Z1
	VPMAXSD   768(SI), Z0, Z0
	VPMAXSD   832(SI), Z1, Z1
	VPMAXSD   896(SI), Z0, Z0
	VPMAXSD   960(SI), Z1, Z1
	VPMAXSD   Z1, Z0, Z0
	VPMAXSD   Z8, Z0, Z0
	VMOVDQU32 Z0, (DI)
	ADDQ      $1024, SI
	ADDQ      $64, DI
	DECQ      CX
	JMP       gm_loop

gm_done:
	VZEROUPPER
	RET

DATA iota16<>+0(SB)/4, $0
DATA iota16<>+4(SB)/4, $1
DATA iota16<>+8(SB)/4, $2
DATA iota16<>+12(SB)/4, $3
DATA iota16<>+16(SB)/4, $4
DATA iota16<>+20(SB)/4, $5
DATA iota16<>+24(SB)/4, $6
DATA iota16<>+28(SB)/4, $7
DATA iota16<>+32(SB)/4, $8
DATA iota16<>+36(SB)/4, $9
DATA iota16<>+40(SB)/4, $10
DATA iota16<>+44(SB)/4, $11
DATA iota16<>+48(SB)/4, $12
DATA iota16<>+52(SB)/4, $13
DATA iota16<>+56(SB)/4, $14
DATA iota16<>+60(SB)/4, $15
GLOBL iota16<>(SB), RODATA|NOPTR, $64

// func gatherAtLeastAVX512(acc []float32, t int32, vals, docs []uint32) int
//
// Writes the int32 bits v >= t of acc (and their indexes) to vals and
// docs, in order, and returns how many. Each row of 16 stores a whole
// vector: requires len(acc) a multiple of 16 and len(vals), len(docs) >=
// len(acc)+16.
TEXT ·gatherAtLeastAVX512(SB), NOSPLIT, $0-88
	MOVQ         acc_base+0(FP), SI
	MOVQ         acc_len+8(FP), CX
	MOVL         t+24(FP), AX
	MOVQ         vals_base+32(FP), R8
	MOVQ         docs_base+56(FP), DI
	SHRQ         $4, CX
	VPBROADCASTD AX, Z7
	MOVL         $16, AX
	VPBROADCASTD AX, Z5
	VMOVDQU32    iota16<>(SB), Z6
	XORQ         BX, BX

ga_loop:
	TESTQ       CX, CX
	JZ          ga_done
	VMOVDQU32   (SI), Z0
	VPCMPD      $5, Z7, Z0, K1
	VPCOMPRESSD Z0, K1, Z1
	VPCOMPRESSD Z6, K1, Z2
	VMOVDQU32   Z1, (R8)(BX*4)
	VMOVDQU32   Z2, (DI)(BX*4)
	KMOVW       K1, AX
	POPCNTL     AX, AX
	ADDQ        AX, BX
	VPADDD      Z5, Z6, Z6
	ADDQ        $64, SI
	DECQ        CX
	JMP         ga_loop

ga_done:
	VZEROUPPER
	MOVQ BX, ret+80(FP)
	RET
