//go:build amd64 && !purego

#include "textflag.h"

#define HSUM_Y0_X0 \
	VEXTRACTF128 $1, Y0, X1 \
	VADDPS       X1, X0, X0 \
	VMOVHLPS     X0, X0, X1 \
	VADDPS       X1, X0, X0 \
	VMOVSHDUP    X0, X1     \
	VADDSS       X1, X0, X0

// Attention over an F32 cache, one query head at a time (AVX2 + FMA).

// func attnScoresF32AVX2(q, k *float32, idx *int32, nv, stride, hd int, scale float32, out *float32)
//
// out[c] = dotF32(k[idx[c]·stride:][:hd], q)·scale for c < nv: per cell
// exactly dotF32AVX2's steps (four accumulators over 32 elements at a
// time, (Y0+Y1)+(Y2+Y3), HSUM_Y0_X0), hd a multiple of 32.
TEXT ·attnScoresF32AVX2(SB), NOSPLIT, $0-64
	MOVQ         q+0(FP), DI
	MOVQ         k+8(FP), SI
	MOVQ         idx+16(FP), R8
	MOVQ         nv+24(FP), BX
	MOVQ         stride+32(FP), R9
	SHLQ         $2, R9
	MOVQ         hd+40(FP), R12
	VBROADCASTSS scale+48(FP), X9
	MOVQ         out+56(FP), DX
	TESTQ        BX, BX
	JZ           scdone

sccell:
	MOVLQSX     (R8), AX
	IMULQ       R9, AX
	LEAQ        (SI)(AX*1), R10
	MOVQ        DI, R11
	MOVQ        R12, CX
	VXORPS      Y0, Y0, Y0
	VXORPS      Y1, Y1, Y1
	VXORPS      Y2, Y2, Y2
	VXORPS      Y3, Y3, Y3

scloop:
	VMOVUPS     (R10), Y4
	VMOVUPS     32(R10), Y5
	VMOVUPS     64(R10), Y6
	VMOVUPS     96(R10), Y7
	VFMADD231PS (R11), Y4, Y0
	VFMADD231PS 32(R11), Y5, Y1
	VFMADD231PS 64(R11), Y6, Y2
	VFMADD231PS 96(R11), Y7, Y3
	ADDQ        $128, R10
	ADDQ        $128, R11
	SUBQ        $32, CX
	JNZ         scloop

	VADDPS Y1, Y0, Y0
	VADDPS Y3, Y2, Y2
	VADDPS Y2, Y0, Y0
	HSUM_Y0_X0
	VMULSS X9, X0, X0
	VMOVSS X0, (DX)
	ADDQ   $4, R8
	ADDQ   $4, DX
	DECQ   BX
	JNZ    sccell

scdone:
	VZEROUPPER
	RET

// func attnAccF32AVX2(v *float32, idx *int32, p *float32, nv, stride, hd int, acc *float32)
//
// acc[e] += p[c]·v[idx[c]·stride+e] for c = 0…nv−1 in order, each a fused
// multiply-add as axpyF32AVX2 does, with acc kept in registers 64
// elements at a time; hd a multiple of 64.
TEXT ·attnAccF32AVX2(SB), NOSPLIT, $0-56
	MOVQ v+0(FP), SI
	MOVQ stride+32(FP), R9
	SHLQ $2, R9
	MOVQ hd+40(FP), R12
	MOVQ acc+48(FP), DX

acchunk:
	VMOVUPS (DX), Y0
	VMOVUPS 32(DX), Y1
	VMOVUPS 64(DX), Y2
	VMOVUPS 96(DX), Y3
	VMOVUPS 128(DX), Y4
	VMOVUPS 160(DX), Y5
	VMOVUPS 192(DX), Y6
	VMOVUPS 224(DX), Y7
	MOVQ    idx+8(FP), R8
	MOVQ    p+16(FP), R11
	MOVQ    nv+24(FP), BX
	TESTQ   BX, BX
	JZ      acstore

accell:
	MOVLQSX      (R8), AX
	IMULQ        R9, AX
	LEAQ         (SI)(AX*1), R10
	VBROADCASTSS (R11), Y8
	VFMADD231PS  (R10), Y8, Y0
	VFMADD231PS  32(R10), Y8, Y1
	VFMADD231PS  64(R10), Y8, Y2
	VFMADD231PS  96(R10), Y8, Y3
	VFMADD231PS  128(R10), Y8, Y4
	VFMADD231PS  160(R10), Y8, Y5
	VFMADD231PS  192(R10), Y8, Y6
	VFMADD231PS  224(R10), Y8, Y7
	ADDQ         $4, R8
	ADDQ         $4, R11
	DECQ         BX
	JNZ          accell

acstore:
	VMOVUPS Y0, (DX)
	VMOVUPS Y1, 32(DX)
	VMOVUPS Y2, 64(DX)
	VMOVUPS Y3, 96(DX)
	VMOVUPS Y4, 128(DX)
	VMOVUPS Y5, 160(DX)
	VMOVUPS Y6, 192(DX)
	VMOVUPS Y7, 224(DX)
	ADDQ    $256, SI
	ADDQ    $256, DX
	SUBQ    $64, R12
	JNZ     acchunk
	VZEROUPPER
	RET
