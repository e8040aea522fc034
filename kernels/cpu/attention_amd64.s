//go:build amd64 && !purego

#include "textflag.h"
#include "hsum_amd64.h"


// Attention over an F32 cache, one query head at a time (AVX2 + FMA).

// ACC_LOAD: 64 values of acc (DX) into Y0…Y7, and the cell loop's
// registers: R8 idx, R11 p, BX cells (flags set for a JZ on none).
#define ACC_LOAD \
	VMOVUPS (DX), Y0 \
	VMOVUPS 32(DX), Y1 \
	VMOVUPS 64(DX), Y2 \
	VMOVUPS 96(DX), Y3 \
	VMOVUPS 128(DX), Y4 \
	VMOVUPS 160(DX), Y5 \
	VMOVUPS 192(DX), Y6 \
	VMOVUPS 224(DX), Y7 \
	MOVQ    idx+8(FP), R8 \
	MOVQ    p+16(FP), R11 \
	MOVQ    nv+24(FP), BX \
	TESTQ   BX, BX

// ACC_STORE: Y0…Y7 back into acc (DX).
#define ACC_STORE \
	VMOVUPS Y0, (DX) \
	VMOVUPS Y1, 32(DX) \
	VMOVUPS Y2, 64(DX) \
	VMOVUPS Y3, 96(DX) \
	VMOVUPS Y4, 128(DX) \
	VMOVUPS Y5, 160(DX) \
	VMOVUPS Y6, 192(DX) \
	VMOVUPS Y7, 224(DX)

// SC8_ARGS(shift): the eight-cell score kernels' arguments: R14 idx, CX
// groups, 8(SP) the row stride in bytes (stride << shift), 0(SP) the end
// of q, Y9 scale, DX out.
#define SC8_ARGS(shift) \
	MOVQ         idx+16(FP), R14 \
	MOVQ         groups+24(FP), CX \
	MOVQ         stride+32(FP), AX \
	SHLQ         $shift, AX \
	MOVQ         AX, 8(SP) \
	MOVQ         hd+40(FP), AX \
	SHLQ         $2, AX \
	ADDQ         q+0(FP), AX \
	MOVQ         AX, 0(SP) \
	VBROADCASTSS scale+48(FP), Y9 \
	MOVQ         out+56(FP), DX

// SC8_CELLS: the group's eight row offsets (bytes from k) in AX, BX,
// R8…R13; SI = k, DI = q; the accumulators Y0…Y7 zeroed.
#define SC8_CELLS \
	MOVLQSX 0(R14), AX \
	IMULQ   8(SP), AX \
	MOVLQSX 4(R14), BX \
	IMULQ   8(SP), BX \
	MOVLQSX 8(R14), R8 \
	IMULQ   8(SP), R8 \
	MOVLQSX 12(R14), R9 \
	IMULQ   8(SP), R9 \
	MOVLQSX 16(R14), R10 \
	IMULQ   8(SP), R10 \
	MOVLQSX 20(R14), R11 \
	IMULQ   8(SP), R11 \
	MOVLQSX 24(R14), R12 \
	IMULQ   8(SP), R12 \
	MOVLQSX 28(R14), R13 \
	IMULQ   8(SP), R13 \
	MOVQ    k+8(FP), SI \
	MOVQ    q+0(FP), DI \
	VXORPS  Y0, Y0, Y0 \
	VXORPS  Y1, Y1, Y1 \
	VXORPS  Y2, Y2, Y2 \
	VXORPS  Y3, Y3, Y3 \
	VXORPS  Y4, Y4, Y4 \
	VXORPS  Y5, Y5, Y5 \
	VXORPS  Y6, Y6, Y6 \
	VXORPS  Y7, Y7, Y7

// SC8_OUT: lanes (l0+l1), (l2+l3) of cells 0, 1 in Y0, of 2, 3 in Y2, …;
// then ((l0+l1)+(l2+l3)) of cells 0…3 in Y0 and 4…7 in Y4, per half;
// then the halves (l0…l3 and l4…l7) added, scaled and stored; on to the
// next group.
#define SC8_OUT \
	VHADDPS    Y1, Y0, Y0 \
	VHADDPS    Y3, Y2, Y2 \
	VHADDPS    Y5, Y4, Y4 \
	VHADDPS    Y7, Y6, Y6 \
	VHADDPS    Y2, Y0, Y0 \
	VHADDPS    Y6, Y4, Y4 \
	VPERM2F128 $0x20, Y4, Y0, Y1 \
	VPERM2F128 $0x31, Y4, Y0, Y2 \
	VADDPS     Y2, Y1, Y1 \
	VMULPS     Y9, Y1, Y1 \
	VMOVUPS    Y1, (DX) \
	ADDQ       $32, R14 \
	ADDQ       $32, DX

// func attnScoresF32x8(q, k *float32, idx *int32, groups, stride, hd int, scale float32, out *float32)
//
// Eight cells at a time: out[c] = (q·k row idx[c])·scale for c <
// 8·groups, each cell's dot in eight lanes (lane l takes elements
// 8j+l, one fused multiply-add per 8-chunk j, in order), then the lanes
// summed as ((l0+l1)+(l2+l3)) + ((l4+l5)+(l6+l7)) by a transposing
// reduction of the eight cells' accumulators (VHADDPS, VHADDPS, the two
// halves added), so a cell's value does not depend on its place among the
// eight. hd a multiple of 8; stride in floats.
//
// Registers: AX, BX, R8…R13 the eight cells' row offsets (bytes from k);
// SI k plus the chunk offset, DI q plus it; Y8 the q chunk; Y0…Y7 the
// accumulators; R14 idx, DX out, CX groups left; 0(SP) the end of q,
// 8(SP) the row stride in bytes.
TEXT ·attnScoresF32x8(SB), NOSPLIT, $16-64
	SC8_ARGS(2)

sc8group:
	SC8_CELLS

sc8chunk:
	VMOVUPS     (DI), Y8
	VFMADD231PS (SI)(AX*1), Y8, Y0
	VFMADD231PS (SI)(BX*1), Y8, Y1
	VFMADD231PS (SI)(R8*1), Y8, Y2
	VFMADD231PS (SI)(R9*1), Y8, Y3
	VFMADD231PS (SI)(R10*1), Y8, Y4
	VFMADD231PS (SI)(R11*1), Y8, Y5
	VFMADD231PS (SI)(R12*1), Y8, Y6
	VFMADD231PS (SI)(R13*1), Y8, Y7
	ADDQ        $32, SI
	ADDQ        $32, DI
	CMPQ        DI, 0(SP)
	JNE         sc8chunk
	SC8_OUT
	DECQ        CX
	JNZ         sc8group
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
	ACC_LOAD
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
	ACC_STORE
	ADDQ    $256, SI
	ADDQ    $256, DX
	SUBQ    $64, R12
	JNZ     acchunk
	VZEROUPPER
	RET

// The same over an F16 cache: K and V rows of half floats, converted
// (exactly) as they are used.

// func attnScoresF16x8(q *float32, k *uint16, idx *int32, groups, stride, hd int, scale float32, out *float32)
//
// attnScoresF32x8 with each 8-chunk of K converted before its fused
// multiply-add: the same operations on the same (exact) values, so a
// cell's score is the one attnScoresF32x8 gives its row as float32.
TEXT ·attnScoresF16x8(SB), NOSPLIT, $16-64
	SC8_ARGS(1)

sh8group:
	SC8_CELLS

sh8chunk:
	VMOVUPS     (DI), Y8
	VCVTPH2PS   (SI)(AX*1), Y10
	VCVTPH2PS   (SI)(BX*1), Y11
	VCVTPH2PS   (SI)(R8*1), Y12
	VCVTPH2PS   (SI)(R9*1), Y13
	VFMADD231PS Y10, Y8, Y0
	VFMADD231PS Y11, Y8, Y1
	VFMADD231PS Y12, Y8, Y2
	VFMADD231PS Y13, Y8, Y3
	VCVTPH2PS   (SI)(R10*1), Y10
	VCVTPH2PS   (SI)(R11*1), Y11
	VCVTPH2PS   (SI)(R12*1), Y12
	VCVTPH2PS   (SI)(R13*1), Y13
	VFMADD231PS Y10, Y8, Y4
	VFMADD231PS Y11, Y8, Y5
	VFMADD231PS Y12, Y8, Y6
	VFMADD231PS Y13, Y8, Y7
	ADDQ        $16, SI
	ADDQ        $32, DI
	CMPQ        DI, 0(SP)
	JNE         sh8chunk
	SC8_OUT
	DECQ        CX
	JNZ         sh8group
	VZEROUPPER
	RET

// func attnAccF16AVX2(v *uint16, idx *int32, p *float32, nv, stride, hd int, acc *float32)
//
// attnAccF32AVX2 over half floats: acc[e] += p[c]·v[idx[c]·stride+e],
// each a fused multiply-add as axpyF16AVX2 does, cell after cell.
TEXT ·attnAccF16AVX2(SB), NOSPLIT, $0-56
	MOVQ v+0(FP), SI
	MOVQ stride+32(FP), R9
	SHLQ $1, R9
	MOVQ hd+40(FP), R12
	MOVQ acc+48(FP), DX

ah16chunk:
	ACC_LOAD
	JZ      ah16store

ah16cell:
	MOVLQSX      (R8), AX
	IMULQ        R9, AX
	LEAQ         (SI)(AX*1), R10
	VBROADCASTSS (R11), Y8
	VCVTPH2PS    (R10), Y10
	VCVTPH2PS    16(R10), Y11
	VCVTPH2PS    32(R10), Y12
	VCVTPH2PS    48(R10), Y13
	VFMADD231PS  Y10, Y8, Y0
	VFMADD231PS  Y11, Y8, Y1
	VFMADD231PS  Y12, Y8, Y2
	VFMADD231PS  Y13, Y8, Y3
	VCVTPH2PS    64(R10), Y10
	VCVTPH2PS    80(R10), Y11
	VCVTPH2PS    96(R10), Y12
	VCVTPH2PS    112(R10), Y13
	VFMADD231PS  Y10, Y8, Y4
	VFMADD231PS  Y11, Y8, Y5
	VFMADD231PS  Y12, Y8, Y6
	VFMADD231PS  Y13, Y8, Y7
	ADDQ         $4, R8
	ADDQ         $4, R11
	DECQ         BX
	JNZ          ah16cell

ah16store:
	ACC_STORE
	ADDQ    $128, SI
	ADDQ    $256, DX
	SUBQ    $64, R12
	JNZ     ah16chunk
	VZEROUPPER
	RET
