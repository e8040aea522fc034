//go:build amd64 && !purego

#include "textflag.h"
#include "hsum_amd64.h"


// Attention over an F32 cache, one query head at a time (AVX2 + FMA).

// AH_LOAD(r0, r1, r2, r3, o, b): four accumulator registers from the
// 32 values at o(b) (b a register); AH_STORE the reverse.
#define AH_LOAD(r0, r1, r2, r3, o, b) \
	VMOVUPS o(b), r0    \
	VMOVUPS o+32(b), r1 \
	VMOVUPS o+64(b), r2 \
	VMOVUPS o+96(b), r3

#define AH_STORE(r0, r1, r2, r3, o, b) \
	VMOVUPS r0, o(b)    \
	VMOVUPS r1, o+32(b) \
	VMOVUPS r2, o+64(b) \
	VMOVUPS r3, o+96(b)

// CELL_ROW: R10 = the row of the cell whose index is at (R8): SI plus
// the index times the row stride in bytes (R9).
#define CELL_ROW \
	MOVLQSX (R8), AX \
	IMULQ   R9, AX   \
	LEAQ    (SI)(AX*1), R10

// CVT4FMA(m0, m1, m2, m3, a, b, c, d): the four 8-chunks of half floats
// at m0…m3 converted into Y10…Y13, then a…d += each times Y8.
#define CVT4FMA(m0, m1, m2, m3, a, b, c, d) \
	VCVTPH2PS   m0, Y10 \
	VCVTPH2PS   m1, Y11 \
	VCVTPH2PS   m2, Y12 \
	VCVTPH2PS   m3, Y13 \
	VFMADD231PS Y10, Y8, a \
	VFMADD231PS Y11, Y8, b \
	VFMADD231PS Y12, Y8, c \
	VFMADD231PS Y13, Y8, d

// ACC_LOAD: 64 values of acc (DX) into Y0…Y7, and the cell loop's
// registers: R8 idx, R11 p, BX cells (flags set for a JZ on none).
#define ACC_LOAD \
	AH_LOAD(Y0, Y1, Y2, Y3, 0, DX) \
	AH_LOAD(Y4, Y5, Y6, Y7, 128, DX) \
	MOVQ    idx+8(FP), R8 \
	MOVQ    p+16(FP), R11 \
	MOVQ    nv+24(FP), BX \
	TESTQ   BX, BX

// ACC_STORE: Y0…Y7 back into acc (DX).
#define ACC_STORE \
	AH_STORE(Y0, Y1, Y2, Y3, 0, DX) \
	AH_STORE(Y4, Y5, Y6, Y7, 128, DX)

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

// CELL_OFF(o, r): r = the row offset in bytes (from k) of the cell whose
// index is at o(R14), the row stride in bytes at 8(SP).
#define CELL_OFF(o, r) \
	MOVLQSX o(R14), r \
	IMULQ   8(SP), r

// SC8_CELLS: the group's eight row offsets (bytes from k) in AX, BX,
// R8…R13; SI = k, DI = q; the accumulators Y0…Y7 zeroed.
#define SC8_CELLS \
	CELL_OFF(0, AX) \
	CELL_OFF(4, BX) \
	CELL_OFF(8, R8) \
	CELL_OFF(12, R9) \
	CELL_OFF(16, R10) \
	CELL_OFF(20, R11) \
	CELL_OFF(24, R12) \
	CELL_OFF(28, R13) \
	MOVQ    k+8(FP), SI \
	MOVQ    q+0(FP), DI \
	ZERO4(Y0, Y1, Y2, Y3) \
	ZERO4(Y4, Y5, Y6, Y7)

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

// SH4_ARGS: the four-cell, multi-head score kernels' arguments: R10 the
// bytes between two heads' q, R14 idx, CX groups, 8(SP) the row stride
// in bytes, 0(SP) the end of head 0's q, DX out, R15 the bytes between
// two heads' outputs.
#define SH4_ARGS \
	MOVQ qs+8(FP), R10 \
	MOVQ idx+24(FP), R14 \
	MOVQ groups+32(FP), CX \
	MOVQ stride+40(FP), AX \
	SHLQ $1, AX \
	MOVQ AX, 8(SP) \
	MOVQ hd+48(FP), AX \
	SHLQ $2, AX \
	ADDQ q+0(FP), AX \
	MOVQ AX, 0(SP) \
	MOVQ out+64(FP), DX \
	MOVQ os+72(FP), R15 \
	MOVQ 8(SP), R11 \
	SHLQ $4, R11

// SH4_CELLS: the group's four row offsets (bytes from k) in AX, BX, R8,
// R9; SI = k, DI = q.
#define SH4_CELLS \
	CELL_OFF(0, AX) \
	CELL_OFF(4, BX) \
	CELL_OFF(8, R8) \
	CELL_OFF(12, R9) \
	MOVQ    k+16(FP), SI \
	MOVQ    q+0(FP), DI \
	SH4_PREFETCH(AX) \
	SH4_PREFETCH(BX) \
	SH4_PREFETCH(R8) \
	SH4_PREFETCH(R9)

// SH4_PREFETCH(off): the first 128 bytes of the row 16 rows past the
// cell's (R11 = 16 row strides), into cache before its turn when the
// cells run in order (a prefetch past the cache is harmless).
#define SH4_PREFETCH(off) \
	LEAQ       (SI)(off*1), R12 \
	PREFETCHT0 (R12)(R11*1) \
	PREFETCHT0 64(R12)(R11*1)

// SH4_OUT(a, b, c, d, xa, xb, dst): the four cells' accumulators a…d of
// one head reduced as SC8_OUT reduces a cell, ((l0+l1)+(l2+l3)) +
// ((l4+l5)+(l6+l7)), scaled by X15 and stored at dst (xa, xb: a's and
// b's low halves).
#define SH4_OUT(a, b, c, d, xa, xb, dst) \
	VHADDPS      b, a, a \
	VHADDPS      d, c, c \
	VHADDPS      c, a, a \
	VEXTRACTF128 $1, a, xb \
	VADDPS       xb, xa, xa \
	VMULPS       X15, xa, xa \
	VMOVUPS      xa, dst

// SH4_CELL3(off, a0, a1, a2), SH4_CELL2(off, a0, a1): one cell's K
// chunk converted into Y15, multiplied by each head's q chunk (Y12, Y13,
// Y14) into its accumulator.
#define SH4_CELL3(off, a0, a1, a2) \
	VCVTPH2PS   (SI)(off*1), Y15 \
	VFMADD231PS Y15, Y12, a0 \
	VFMADD231PS Y15, Y13, a1 \
	VFMADD231PS Y15, Y14, a2

#define SH4_CELL2(off, a0, a1) \
	VCVTPH2PS   (SI)(off*1), Y15 \
	VFMADD231PS Y15, Y12, a0 \
	VFMADD231PS Y15, Y13, a1

// SH4_CHUNK_NEXT(loop): on to the next 8-chunk of the cells' rows and of
// q, looping while q has chunks left; SH4_GROUP_NEXT(loop): on to the
// next four cells and their outputs, looping while groups are left.
#define SH4_CHUNK_NEXT(loop) \
	ADDQ $16, SI \
	ADDQ $32, DI \
	CMPQ DI, 0(SP) \
	JNE  loop

#define SH4_GROUP_NEXT(loop) \
	ADDQ $16, R14 \
	ADDQ $16, DX \
	DECQ CX \
	JNZ  loop

// AH_CHUNK3(o, a0, a1, a2), AH_CHUNK2(o, a0, a1): the eight values at
// o(R10) converted into Y15 and multiplied by each head's broadcast
// weight (Y12, Y13, Y14) into its accumulator.
#define AH_CHUNK3(o, a0, a1, a2) \
	VCVTPH2PS   o(R10), Y15 \
	VFMADD231PS Y15, Y12, a0 \
	VFMADD231PS Y15, Y13, a1 \
	VFMADD231PS Y15, Y14, a2

#define AH_CHUNK2(o, a0, a1) \
	VCVTPH2PS   o(R10), Y15 \
	VFMADD231PS Y15, Y12, a0 \
	VFMADD231PS Y15, Y13, a1

// AH_ARGS: SI v, R13 the bytes between two heads' weights, R9 the row
// stride in bytes, R12 hd, DX head 0's accumulator, R14 head 1's (DX +
// as), R15 head 2's (DX + 2as).
#define AH_ARGS \
	MOVQ v+0(FP), SI \
	MOVQ ps+24(FP), R13 \
	MOVQ stride+40(FP), R9 \
	SHLQ $1, R9 \
	MOVQ hd+48(FP), R12 \
	MOVQ acc+56(FP), DX \
	MOVQ as+64(FP), R14 \
	LEAQ (DX)(R14*2), R15 \
	ADDQ DX, R14 \
	MOVQ R9, CX \
	SHLQ $4, CX

// AH_CELLS: R8 idx, R11 p, BX cells (flags set for a JZ on none).
#define AH_CELLS \
	MOVQ  idx+8(FP), R8 \
	MOVQ  p+16(FP), R11 \
	MOVQ  nv+32(FP), BX \
	TESTQ BX, BX

// AH_ROW: R10 = the cell's V row plus the pass's offset (SI); the row
// 16 cells on (CX = 16 row strides) prefetched, as SH4_PREFETCH.
#define AH_ROW \
	CELL_ROW \
	PREFETCHT0 (R10)(CX*1)

// AH_PASS_NEXT(loop): on to the next 32 values of the rows and of the
// heads' accumulators (R15, head 2's, moves too where there are two),
// looping while values are left.
#define AH_PASS_NEXT(loop) \
	ADDQ $64, SI \
	ADDQ $128, DX \
	ADDQ $128, R14 \
	ADDQ $128, R15 \
	SUBQ $32, R12 \
	JNZ  loop

// AH_NEXT: on to the next cell (flags set for a JNZ while cells are left).
#define AH_NEXT \
	ADDQ $4, R8 \
	ADDQ $4, R11 \
	DECQ BX

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
	CELL_ROW
	VBROADCASTSS (R11), Y8
	VFMADD231PS  (R10), Y8, Y0
	VFMADD231PS  32(R10), Y8, Y1
	VFMADD231PS  64(R10), Y8, Y2
	VFMADD231PS  96(R10), Y8, Y3
	VFMADD231PS  128(R10), Y8, Y4
	VFMADD231PS  160(R10), Y8, Y5
	VFMADD231PS  192(R10), Y8, Y6
	VFMADD231PS  224(R10), Y8, Y7
	AH_NEXT
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
	CVT4FMA((SI)(AX*1), (SI)(BX*1), (SI)(R8*1), (SI)(R9*1), Y0, Y1, Y2, Y3)
	CVT4FMA((SI)(R10*1), (SI)(R11*1), (SI)(R12*1), (SI)(R13*1), Y4, Y5, Y6, Y7)
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
	CELL_ROW
	VBROADCASTSS (R11), Y8
	CVT4FMA((R10), 16(R10), 32(R10), 48(R10), Y0, Y1, Y2, Y3)
	CVT4FMA(64(R10), 80(R10), 96(R10), 112(R10), Y4, Y5, Y6, Y7)
	AH_NEXT
	JNZ          ah16cell

ah16store:
	ACC_STORE
	ADDQ    $128, SI
	ADDQ    $256, DX
	SUBQ    $64, R12
	JNZ     ah16chunk
	VZEROUPPER
	RET

// Attention over an F16 cache for several query heads that share a KV
// head (grouped-query attention): each K or V chunk is converted once
// for two or three heads. A (cell, head) value is bitwise the one-head
// kernels' (attnScoresF16x8, attnAccF16AVX2): the same fused
// multiply-adds in the same order per value, and the same lane
// reduction.

// func attnScoresF16x4h3(q *float32, qs int, k *uint16, idx *int32, groups, stride, hd int, scale float32, out *float32, os int)
//
// Three heads (q, q+qs, q+2qs bytes; outputs out, out+os, out+2os
// bytes) by four cells at a time: head h's accumulator for cell c in
// Y(4h+c), the heads' q chunks in Y12…Y14.
TEXT ·attnScoresF16x4h3(SB), NOSPLIT, $16-80
	SH4_ARGS

sh43group:
	SH4_CELLS
	ZERO4(Y0, Y1, Y2, Y3)
	ZERO4(Y4, Y5, Y6, Y7)
	ZERO4(Y8, Y9, Y10, Y11)

sh43chunk:
	VMOVUPS (DI), Y12
	VMOVUPS (DI)(R10*1), Y13
	VMOVUPS (DI)(R10*2), Y14
	SH4_CELL3(AX, Y0, Y4, Y8)
	SH4_CELL3(BX, Y1, Y5, Y9)
	SH4_CELL3(R8, Y2, Y6, Y10)
	SH4_CELL3(R9, Y3, Y7, Y11)
	SH4_CHUNK_NEXT(sh43chunk)
	VBROADCASTSS scale+56(FP), Y15
	SH4_OUT(Y0, Y1, Y2, Y3, X0, X1, (DX))
	SH4_OUT(Y4, Y5, Y6, Y7, X4, X5, (DX)(R15*1))
	SH4_OUT(Y8, Y9, Y10, Y11, X8, X9, (DX)(R15*2))
	SH4_GROUP_NEXT(sh43group)
	VZEROUPPER
	RET

// func attnScoresF16x4h2(q *float32, qs int, k *uint16, idx *int32, groups, stride, hd int, scale float32, out *float32, os int)
//
// attnScoresF16x4h3 for two heads.
TEXT ·attnScoresF16x4h2(SB), NOSPLIT, $16-80
	SH4_ARGS

sh42group:
	SH4_CELLS
	ZERO4(Y0, Y1, Y2, Y3)
	ZERO4(Y4, Y5, Y6, Y7)

sh42chunk:
	VMOVUPS (DI), Y12
	VMOVUPS (DI)(R10*1), Y13
	SH4_CELL2(AX, Y0, Y4)
	SH4_CELL2(BX, Y1, Y5)
	SH4_CELL2(R8, Y2, Y6)
	SH4_CELL2(R9, Y3, Y7)
	SH4_CHUNK_NEXT(sh42chunk)
	VBROADCASTSS scale+56(FP), Y15
	SH4_OUT(Y0, Y1, Y2, Y3, X0, X1, (DX))
	SH4_OUT(Y4, Y5, Y6, Y7, X4, X5, (DX)(R15*1))
	SH4_GROUP_NEXT(sh42group)
	VZEROUPPER
	RET

// func attnAccF16h3(v *uint16, idx *int32, p *float32, ps int, nv, stride, hd int, acc *float32, as int)
//
// Three heads (weights p, p+ps, p+2ps bytes; accumulators acc, acc+as,
// acc+2as bytes): acc_h[e] += p_h[c]·v[idx[c]·stride+e] for c in order,
// 32 values of each head's accumulator in registers at a time (head h
// in Y(4h)…Y(4h+3)), each V chunk converted once for the three. hd a
// multiple of 32.
TEXT ·attnAccF16h3(SB), NOSPLIT, $0-72
	AH_ARGS

ah3pass:
	AH_LOAD(Y0, Y1, Y2, Y3, 0, DX)
	AH_LOAD(Y4, Y5, Y6, Y7, 0, R14)
	AH_LOAD(Y8, Y9, Y10, Y11, 0, R15)
	AH_CELLS
	JZ ah3store

ah3cell:
	AH_ROW
	VBROADCASTSS (R11), Y12
	VBROADCASTSS (R11)(R13*1), Y13
	VBROADCASTSS (R11)(R13*2), Y14
	AH_CHUNK3(0, Y0, Y4, Y8)
	AH_CHUNK3(16, Y1, Y5, Y9)
	AH_CHUNK3(32, Y2, Y6, Y10)
	AH_CHUNK3(48, Y3, Y7, Y11)
	AH_NEXT
	JNZ ah3cell

ah3store:
	AH_STORE(Y0, Y1, Y2, Y3, 0, DX)
	AH_STORE(Y4, Y5, Y6, Y7, 0, R14)
	AH_STORE(Y8, Y9, Y10, Y11, 0, R15)
	AH_PASS_NEXT(ah3pass)
	VZEROUPPER
	RET

// func attnAccF16h2(v *uint16, idx *int32, p *float32, ps int, nv, stride, hd int, acc *float32, as int)
//
// attnAccF16h3 for two heads.
TEXT ·attnAccF16h2(SB), NOSPLIT, $0-72
	AH_ARGS

ah2pass:
	AH_LOAD(Y0, Y1, Y2, Y3, 0, DX)
	AH_LOAD(Y4, Y5, Y6, Y7, 0, R14)
	AH_CELLS
	JZ ah2store

ah2cell:
	AH_ROW
	VBROADCASTSS (R11), Y12
	VBROADCASTSS (R11)(R13*1), Y13
	AH_CHUNK2(0, Y0, Y4)
	AH_CHUNK2(16, Y1, Y5)
	AH_CHUNK2(32, Y2, Y6)
	AH_CHUNK2(48, Y3, Y7)
	AH_NEXT
	JNZ ah2cell

ah2store:
	AH_STORE(Y0, Y1, Y2, Y3, 0, DX)
	AH_STORE(Y4, Y5, Y6, Y7, 0, R14)
	AH_PASS_NEXT(ah2pass)
	VZEROUPPER
	RET

// func maxF32AVX2(x *float32, n int) float32
//
// The largest of x[0:n] (n a multiple of 8, ≥ 8), by eight running
// maxima (VMAXPS), then the lanes' largest; −Inf where all are −Inf.
TEXT ·maxF32AVX2(SB), NOSPLIT, $0-20
	MOVQ      x+0(FP), SI
	MOVQ      n+8(FP), CX
	VPCMPEQD  Y0, Y0, Y0
	VPSLLD    $23, Y0, Y0 // 0xff800000: −Inf in every lane
	SHRQ      $3, CX

maxloop:
	VMAXPS    (SI), Y0, Y0
	ADDQ      $32, SI
	DECQ      CX
	JNZ       maxloop
	HMAX(Y0, X0, X1)
	VZEROUPPER
	MOVSS     X0, ret+16(FP)
	RET

// func minMaxI32AVX2(x *int32, n int) (lo, hi int32)
//
// The least and the largest of x[0:n] (n a multiple of 8, ≥ 8), by eight
// running minima and maxima, then the lanes'.
TEXT ·minMaxI32AVX2(SB), NOSPLIT, $0-24
	MOVQ    x+0(FP), SI
	MOVQ    n+8(FP), CX
	VMOVDQU (SI), Y0
	VMOVDQU Y0, Y1
	ADDQ    $32, SI
	SUBQ    $8, CX
	JZ      mmreduce

mmloop:
	VMOVDQU (SI), Y2
	VPMINSD Y2, Y0, Y0
	VPMAXSD Y2, Y1, Y1
	ADDQ    $32, SI
	SUBQ    $8, CX
	JNZ     mmloop

mmreduce:
	VEXTRACTI128 $1, Y0, X2
	VPMINSD      X2, X0, X0
	VPSHUFD      $0x4e, X0, X2
	VPMINSD      X2, X0, X0
	VPSHUFD      $0xb1, X0, X2
	VPMINSD      X2, X0, X0
	VEXTRACTI128 $1, Y1, X3
	VPMAXSD      X3, X1, X1
	VPSHUFD      $0x4e, X1, X3
	VPMAXSD      X3, X1, X1
	VPSHUFD      $0xb1, X1, X3
	VPMAXSD      X3, X1, X1
	VMOVD        X0, AX
	VMOVD        X1, BX
	VZEROUPPER
	MOVL         AX, lo+16(FP)
	MOVL         BX, hi+20(FP)
	RET
