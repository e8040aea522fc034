//go:build amd64 && !purego

#include "textflag.h"
#include "hsum_amd64.h"
#include "packed_amd64.h"

// The packed kernels of packed_amd64.s for CPUs with AVX2 but without
// AVX-512 VNNI (sixteen 256-bit registers, no vpdpbusd), over the same
// packed layout (packed.go) and with the same float steps, so that every
// value is bitwise the VNNI kernels' and packed8Go's.
//
// A block's integer sum per row lane: vpmaddubsw of an unpacked nibble
// vector (unsigned, 0…15) against the activation dword broadcast
// (signed, −127…127) gives two 16-bit sums of two products each (at
// most 2·15·128 = 3840 in magnitude); the eight of a block are added as
// 16-bit words (at most 30720, exact), then vpmaddwd against ones adds
// each lane's two words into its 32-bit sum. Then, as in the VNNI
// kernels, per lane and block after block:
//
//	acc  = fma(float(sum), d_w·d_x, acc)      sum of Q4_0 plus −8·Σx (neg)
//	mins = fma(m_w, s_x, mins)                Q4_1; out = acc + mins
//	Q4_K per sub-block s: acc = fma(float(sum), (d·sc_s)·d_x,s, acc),
//	accm = fma(dmin·m_s, s_x,s, accm), out = acc − accm

DATA nib0f<>+0(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA nib0f<>+8(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA nib0f<>+16(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA nib0f<>+24(SB)/8, $0x0f0f0f0f0f0f0f0f
GLOBL nib0f<>(SB), RODATA|NOPTR, $32

DATA ones16<>+0(SB)/8, $0x0001000100010001
DATA ones16<>+8(SB)/8, $0x0001000100010001
DATA ones16<>+16(SB)/8, $0x0001000100010001
DATA ones16<>+24(SB)/8, $0x0001000100010001
GLOBL ones16<>(SB), RODATA|NOPTR, $32

// NIB1(q, ix, xlo, xhi): the nibble vector at q(SI)ix (ix an index term:
// (R12*1) and so on; mask Y0) against the activation dwords xlo(DI) (low
// nibbles) and xhi(DI) (high): the 16-bit sums added into Y5 (low) and
// Y6 (high). SUM1(q, ix): a Q4_0/Q4_1 block's eight 16-bit sums per lane
// in Y5, the nibble bytes at q(SI)ix. SCALE1(ix, acc): acc =
// fma(float(Y5), d_w·d_x, acc), Y5 the 32-bit sums, d_x broadcast in Y10.
#define NIB1(q, ix, xlo, xhi) \
	VMOVDQU      q(SI)ix, Y1 \
	VPSRLW       $4, Y1, Y2 \
	VPAND        Y0, Y1, Y1 \
	VPAND        Y0, Y2, Y2 \
	VPBROADCASTD xlo(DI), Y3 \
	VPBROADCASTD xhi(DI), Y4 \
	VPMADDUBSW   Y3, Y1, Y1 \
	VPMADDUBSW   Y4, Y2, Y2 \
	VPADDW       Y1, Y5, Y5 \
	VPADDW       Y2, Y6, Y6

#define SUM1(q, ix) \
	VPXOR Y5, Y5, Y5 \
	VPXOR Y6, Y6, Y6 \
	NIB1(q, ix, 0, 16) \
	NIB1(q+32, ix, 4, 20) \
	NIB1(q+64, ix, 8, 24) \
	NIB1(q+96, ix, 12, 28) \
	VPADDW Y6, Y5, Y5

#define SCALE1(ix, acc) \
	VCVTDQ2PS   Y5, Y5 \
	VCVTPH2PS   (SI)ix, Y9 \
	VMULPS      Y10, Y9, Y9 \
	VFMADD231PS Y9, Y5, acc

// Q40S(ix, acc): one block of the Q4_0 group ix bytes after SI into acc
// (Y7 the block's −8·Σx broadcast).
#define Q40S(ix, acc) \
	SUM1(16, ix) \
	VPMADDWD Y15, Y5, Y5 \
	VPADDD   Y7, Y5, Y5 \
	SCALE1(ix, acc)

// The one-row kernels read ng groups as four streams far apart: with
// q = ng/4, groups g, q+g, 2q+g and 3q+g are computed together, block by
// block, so that one core has four sequential streams in flight instead
// of one (it had the memory deliver about 15 GB/s to one stream and
// 22–25 to four). Each group's steps are those of the one-group loop,
// where the last ng%4 groups go. X1S4SETUP(size, one) sets BX = q (to
// one if it is 0), R12 and R13 to q and 3q groups' bytes (size bytes a
// block, CX blocks), R14 to 0 (stream 0's index term), R9 and R10 to q
// and 3q groups' outputs' bytes; X1S4NEXT(grp, one), after the four
// groups' outputs are stored, steps to the next four (to grp), and after
// the last to the groups left (to one) or returns.
#define X1S4SETUP(size, one) \
	XORQ  R14, R14 \
	MOVQ  AX, BX \
	SHRQ  $2, BX \
	JZ    one \
	MOVQ  CX, R12 \
	IMULQ $size, R12 \
	IMULQ BX, R12 \
	LEAQ  (R12)(R12*2), R13 \
	MOVQ  BX, R9 \
	SHLQ  $5, R9 \
	LEAQ  (R9)(R9*2), R10

#define X1S4NEXT(grp, one) \
	ADDQ $32, R11 \
	PK_REARGS1 \
	DECQ BX \
	JNZ  grp \
	ADDQ R13, SI \
	ADDQ R10, R11 \
	ANDQ $3, AX \
	JNZ  one \
	VZEROUPPER \
	RET

// X1S4(size, pre, body, grp, blk, one): the four streams with their
// accumulators in Y11…Y14: per block pre, then body(ix, acc) for each
// stream (ix its index term from SI). Y7 and Y10 are left to pre.
#define X1S4(size, pre, body, grp, blk, one) \
	X1S4SETUP(size, one) \
grp: \
	VXORPS Y11, Y11, Y11 \
	VXORPS Y12, Y12, Y12 \
	VXORPS Y13, Y13, Y13 \
	VXORPS Y14, Y14, Y14 \
blk: \
	pre \
	body((R14*1), Y11) \
	body((R12*1), Y12) \
	body((R12*2), Y13) \
	body((R13*1), Y14) \
	PK_NEXT(size, blk) \
	VMOVUPS Y11, (R11) \
	VMOVUPS Y12, (R11)(R9*1) \
	VMOVUPS Y13, (R11)(R9*2) \
	VMOVUPS Y14, (R11)(R10*1) \
	X1S4NEXT(grp, one)

// X1(size, prefetch, pre, body, one, blk): at one, a group by itself,
// X1S4's steps for one stream (Y14), block after block from blk (with
// prefetch), then the next group, until none is left.
#define X1(size, prefetch, pre, body, one, blk) \
one: \
	VXORPS Y14, Y14, Y14 \
blk: \
	prefetch \
	pre \
	body((R14*1), Y14) \
	PK_NEXT(size, blk) \
	PK_GSTORE1(Y14, one)

// X1S4M(size, body, next, fin, grp, blk, one): the four streams for
// kernels with two accumulators a row (Q4_1, Q4_K), kept in the frame:
// stream i's at 64i(SP) and 64i+32(SP), body(ix, o) loading and storing
// them at o(SP); next(blk) steps to the next block; fin(o) leaves the
// stream's outputs in Y1.
#define X1S4M(size, body, next, fin, grp, blk, one) \
	X1S4SETUP(size, one) \
grp: \
	VXORPS  Y1, Y1, Y1 \
	VMOVUPS Y1, 0(SP) \
	VMOVUPS Y1, 32(SP) \
	VMOVUPS Y1, 64(SP) \
	VMOVUPS Y1, 96(SP) \
	VMOVUPS Y1, 128(SP) \
	VMOVUPS Y1, 160(SP) \
	VMOVUPS Y1, 192(SP) \
	VMOVUPS Y1, 224(SP) \
blk: \
	body((R14*1), 0) \
	body((R12*1), 64) \
	body((R12*2), 128) \
	body((R13*1), 192) \
	next(blk) \
	fin(0) \
	VMOVUPS Y1, (R11) \
	fin(64) \
	VMOVUPS Y1, (R11)(R9*1) \
	fin(128) \
	VMOVUPS Y1, (R11)(R9*2) \
	fin(192) \
	VMOVUPS Y1, (R11)(R10*1) \
	X1S4NEXT(grp, one)

// Q40PRE: a block's −8·Σx (Y7) and d_x (Y10) broadcast.
#define Q40PRE \
	VPBROADCASTD (R8), Y7 \
	VBROADCASTSS (DX), Y10

// func dotQ4_0p8x1AVX2(w *byte, qx *int8, dx *float32, aux *int32, nb int, out *float32, ng int)
//
// ng groups one after the other at w against one activation row:
// out[8g+r] for group g's row r.
TEXT ·dotQ4_0p8x1AVX2(SB), NOSPLIT, $0-56
	PK_ARGS1
	PK_GARGS
	VMOVDQU nib0f<>(SB), Y0
	VMOVDQU ones16<>(SB), Y15
	X1S4(144, Q40PRE, Q40S, q40a81s, q40a81sb, q40a81g)

	X1(144, PREFETCH3, Q40PRE, Q40S, q40a81g, q40a81)

// Q41S(ix, o), Q41NEXT, ADDFIN: X1S4M's body, next and fin for Q4_1
// (out = acc + mins).
#define Q41S(ix, o) \
	VMOVUPS      o(SP), Y14 \
	VMOVUPS      o+32(SP), Y13 \
	SUM1(32, ix) \
	VPMADDWD     Y15, Y5, Y5 \
	VCVTPH2PS    16(SI)ix, Y10 \
	VBROADCASTSS (R8), Y11 \
	VFMADD231PS  Y11, Y10, Y13 \
	VBROADCASTSS (DX), Y10 \
	SCALE1(ix, Y14) \
	VMOVUPS      Y14, o(SP) \
	VMOVUPS      Y13, o+32(SP)

#define Q41NEXT(l) PK_NEXT(160, l)

#define ADDFIN(o) \
	VMOVUPS o(SP), Y1 \
	VADDPS  o+32(SP), Y1, Y1

// func dotQ4_1p8x1AVX2(w *byte, qx *int8, dx, aux *float32, nb int, out *float32, ng int)
TEXT ·dotQ4_1p8x1AVX2(SB), NOSPLIT, $256-56
	PK_ARGS1
	PK_GARGS
	VMOVDQU nib0f<>(SB), Y0
	VMOVDQU ones16<>(SB), Y15
	X1S4M(160, Q41S, Q41NEXT, ADDFIN, q41a81s, q41a81sb, q41a81g)

q41a81g:
	VXORPS  Y14, Y14, Y14
	VXORPS  Y13, Y13, Y13

q41a81:
	PREFETCH3
	SUM1(32, (R14*1))
	VPMADDWD     Y15, Y5, Y5
	VCVTPH2PS    16(SI), Y10
	VBROADCASTSS (R8), Y11
	VFMADD231PS  Y11, Y10, Y13
	VBROADCASTSS (DX), Y10
	SCALE1((R14*1), Y14)
	PK_NEXT(160, q41a81)
	VADDPS       Y13, Y14, Y14
	PK_GSTORE1(Y14, q41a81g)

// Four activation rows (Q4_0, Q4_1): Y0 and Y1 a weight vector's low and
// high nibbles, Y2 scratch, Y3…Y6 the rows' 16-bit sums, Y7…Y10 their
// acc, Y11…Y14 their mins (Q4_1), Y15 the nibble mask; ones from memory.

// NIB4C(xo, xi, s): row xi's activation dwords xo(DI) and xo+16(DI)
// against Y0 and Y1, into s.
#define NIB4C(xo, xi, s) \
	VPBROADCASTD xo(DI)xi, Y2 \
	VPMADDUBSW   Y2, Y0, Y2 \
	VPADDW       Y2, s, s \
	VPBROADCASTD xo+16(DI)xi, Y2 \
	VPMADDUBSW   Y2, Y1, Y2 \
	VPADDW       Y2, s, s

// NIB4(q, xo): the nibble vector at q(SI) against the four rows'
// activation dwords at xo and xo+16.
#define NIB4(q, xo) \
	VMOVDQU q(SI), Y0 \
	VPSRLW  $4, Y0, Y1 \
	VPAND   Y15, Y0, Y0 \
	VPAND   Y15, Y1, Y1 \
	NIB4C(xo, (BX*1), Y3) \
	NIB4C(xo, (R9*1), Y4) \
	NIB4C(xo, (R9*2), Y5) \
	NIB4C(xo, (R13*1), Y6)

// SUM4(q): the block's 32-bit sums of the four rows in Y3…Y6.
#define SUM4(q) \
	VPXOR    Y3, Y3, Y3 \
	VPXOR    Y4, Y4, Y4 \
	VPXOR    Y5, Y5, Y5 \
	VPXOR    Y6, Y6, Y6 \
	NIB4(q, 0) \
	NIB4(q+32, 4) \
	NIB4(q+64, 8) \
	NIB4(q+96, 12) \
	VPMADDWD ones16<>(SB), Y3, Y3 \
	VPMADDWD ones16<>(SB), Y4, Y4 \
	VPMADDWD ones16<>(SB), Y5, Y5 \
	VPMADDWD ones16<>(SB), Y6, Y6

// NEG4C(di, s): s += row di's −8·Σx (neg at (R8)di).
#define NEG4C(di, s) \
	VPBROADCASTD (R8)di, Y2 \
	VPADDD       Y2, s, s

// SCALE4C(di, s, acc): acc = fma(float(s), d_w·d_x, acc), d_w in Y0,
// d_x at (DX)di.
#define SCALE4C(di, s, acc) \
	VCVTDQ2PS    s, s \
	VBROADCASTSS (DX)di, Y2 \
	VMULPS       Y2, Y0, Y2 \
	VFMADD231PS  Y2, s, acc

// SCALE4: the four rows' SCALE4C.
#define SCALE4 \
	VCVTPH2PS (SI), Y0 \
	SCALE4C((BX*1), Y3, Y7) \
	SCALE4C((R10*1), Y4, Y8) \
	SCALE4C((R10*2), Y5, Y9) \
	SCALE4C((R14*1), Y6, Y10)

// MINS4C(di, mins): mins = fma(m_w, s_x, mins), m_w in Y0, s_x at (R8)di.
#define MINS4C(di, mins) \
	VBROADCASTSS (R8)di, Y2 \
	VFMADD231PS  Y2, Y0, mins

// func dotQ4_0p8x4AVX2(w *byte, qx *int8, xs int, dx *float32, ds int, aux *int32, nb int, out *float32, os, nq int)
//
// nq quads of activation rows: row c at qx + c·xs, its scales at
// dx + c·ds and its −8·Σx (neg) at aux + c·ds; out[c·os/4 + r] for weight
// row r (os in bytes).
TEXT ·dotQ4_0p8x4AVX2(SB), NOSPLIT, $0-80
	PK_ARGS4
	PK_QARGS
	VMOVDQU nib0f<>(SB), Y15

q40a84q:
	XORQ BX, BX
	ZERO4(Y7, Y8, Y9, Y10)

q40a84:
	SUM4(16)
	NEG4C((BX*1), Y3)
	NEG4C((R10*1), Y4)
	NEG4C((R10*2), Y5)
	NEG4C((R14*1), Y6)
	SCALE4
	PK_NEXT(144, q40a84)
	PK_QSTORE4(Y7, Y8, Y9, Y10, q40a84q)

// func dotQ4_1p8x4AVX2(w *byte, qx *int8, xs int, dx *float32, ds int, aux *float32, nb int, out *float32, os, nq int)
//
// As dotQ4_0p8x4AVX2, with s_x (sx) at aux + c·ds instead of neg.
TEXT ·dotQ4_1p8x4AVX2(SB), NOSPLIT, $0-80
	PK_ARGS4
	PK_QARGS
	VMOVDQU nib0f<>(SB), Y15

q41a84q:
	XORQ BX, BX
	ZERO4(Y7, Y8, Y9, Y10)
	ZERO4(Y11, Y12, Y13, Y14)

q41a84:
	VCVTPH2PS 16(SI), Y0
	MINS4C((BX*1), Y11)
	MINS4C((R10*1), Y12)
	MINS4C((R10*2), Y13)
	MINS4C((R14*1), Y14)
	SUM4(32)
	SCALE4
	PK_NEXT(160, q41a84)
	VADDPS    Y11, Y7, Y7
	VADDPS    Y12, Y8, Y8
	VADDPS    Y13, Y9, Y9
	VADDPS    Y14, Y10, Y10
	PK_QSTORE4(Y7, Y8, Y9, Y10, q41a84q)

// Q4_K (packed.go: d at 0, dmin at 16, sc at 32+8s+r, m at 96+8s+r, the
// nibble vectors of sub-block pair p at 160+256p+32k, low nibbles
// sub-block 2p, high 2p+1). A sub-block's eight nibble vectors are
// unpacked one at a time into Y0 (mask Y14).

// KLO(off), KHI(off): Y0 = the low (high) nibbles of the vector off(SI).
#define KLO(off) \
	VPAND off(SI), Y14, Y0

#define KHI(off) \
	VMOVDQU off(SI), Y0 \
	VPSRLW  $4, Y0, Y0 \
	VPAND   Y14, Y0, Y0

// One activation row (Q4_K): a sub-block pair at a time, each nibble
// vector loaded once for both of its sub-blocks: Y0 and Y1 its low and
// high nibbles, Y2 scratch, Y5 and Y6 the low sub-block's 16-bit sums,
// Y3 and Y4 the high one's, Y8 and Y9 the super-block's d and dmin (the
// eight rows), Y10 acc, Y11 accm, Y12 and Y13 the sub-block's scales,
// Y14 the nibble mask, Y15 ones.

// KPSTEP1(off, ix, xo, lo0, hi0): the vector off(SI)ix: its low nibbles
// against the dword xo(DI) (the low sub-block's activations) into lo0,
// its high ones against xo+32(DI) into hi0.
#define KPSTEP1(off, ix, xo, lo0, hi0) \
	VMOVDQU      off(SI)ix, Y0 \
	VPSRLW       $4, Y0, Y1 \
	VPAND        Y14, Y0, Y0 \
	VPAND        Y14, Y1, Y1 \
	VPBROADCASTD xo(DI), Y2 \
	VPMADDUBSW   Y2, Y0, Y0 \
	VPADDW       Y0, lo0, lo0 \
	VPBROADCASTD xo+32(DI), Y2 \
	VPMADDUBSW   Y2, Y1, Y1 \
	VPADDW       Y1, hi0, hi0

// KFMA1(s, ix, sa, sb): sub-block s's 16-bit sums sa + sb into acc =
// fma(float(sum), (d·sc_s)·d_x, acc) and accm = fma(dmin·m_s, s_x,
// accm), as KSUB1 did one sub-block at a time.
#define KFMA1(s, ix, sa, sb) \
	VPADDW       sb, sa, sa \
	VPMADDWD     Y15, sa, sa \
	VCVTDQ2PS    sa, sa \
	VPMOVZXBD    32+8*s(SI)ix, Y12 \
	VCVTDQ2PS    Y12, Y12 \
	VMULPS       Y8, Y12, Y12 \
	VPMOVZXBD    96+8*s(SI)ix, Y13 \
	VCVTDQ2PS    Y13, Y13 \
	VMULPS       Y9, Y13, Y13 \
	VBROADCASTSS 4*s(DX), Y1 \
	VMULPS       Y1, Y12, Y1 \
	VFMADD231PS  Y1, sa, Y10 \
	VBROADCASTSS 4*s(R8), Y1 \
	VFMADD231PS  Y1, Y13, Y11

// KPAIR1(s, t, q, ix): sub-blocks s (low nibbles) and t = s+1 (high) of
// the vectors at q(SI)ix.
#define KPAIR1(s, t, q, ix) \
	VPXOR   Y3, Y3, Y3 \
	VPXOR   Y4, Y4, Y4 \
	VPXOR   Y5, Y5, Y5 \
	VPXOR   Y6, Y6, Y6 \
	KPSTEP1(q, ix, 32*s, Y5, Y3) \
	KPSTEP1(q+32, ix, 32*s+4, Y6, Y4) \
	KPSTEP1(q+64, ix, 32*s+8, Y5, Y3) \
	KPSTEP1(q+96, ix, 32*s+12, Y6, Y4) \
	KPSTEP1(q+128, ix, 32*s+16, Y5, Y3) \
	KPSTEP1(q+160, ix, 32*s+20, Y6, Y4) \
	KPSTEP1(q+192, ix, 32*s+24, Y5, Y3) \
	KPSTEP1(q+224, ix, 32*s+28, Y6, Y4) \
	KFMA1(s, ix, Y5, Y6) \
	KFMA1(t, ix, Y3, Y4)

// Q4KS(ix, o), KFIN: X1S4M's body and fin for Q4_K (out = acc − accm).
#define Q4KS(ix, o) \
	VMOVUPS   o(SP), Y10 \
	VMOVUPS   o+32(SP), Y11 \
	VCVTPH2PS (SI)ix, Y8 \
	VCVTPH2PS 16(SI)ix, Y9 \
	KPAIR1(0, 1, 160, ix) \
	KPAIR1(2, 3, 416, ix) \
	KPAIR1(4, 5, 672, ix) \
	KPAIR1(6, 7, 928, ix) \
	VMOVUPS   Y10, o(SP) \
	VMOVUPS   Y11, o+32(SP)

#define KFIN(o) \
	VMOVUPS o(SP), Y1 \
	VSUBPS  o+32(SP), Y1, Y1

// func dotQ4_Kp8x1AVX2(w *byte, qx *int8, dx, aux *float32, nb int, out *float32, ng int)
//
// aux is s_x; nb counts super-blocks.
TEXT ·dotQ4_Kp8x1AVX2(SB), NOSPLIT, $256-56
	PK_ARGS1
	PK_GARGS
	VMOVDQU nib0f<>(SB), Y14
	VMOVDQU ones16<>(SB), Y15
	X1S4M(1184, Q4KS, PK_KNEXT, KFIN, q4ka81s, q4ka81sb, q4ka81g)

q4ka81g:
	VXORPS  Y10, Y10, Y10
	VXORPS  Y11, Y11, Y11

q4ka81:
	PREFETCH19
	VCVTPH2PS (SI), Y8
	VCVTPH2PS 16(SI), Y9
	KPAIR1(0, 1, 160, (R14*1))
	KPAIR1(2, 3, 416, (R14*1))
	KPAIR1(4, 5, 672, (R14*1))
	KPAIR1(6, 7, 928, (R14*1))
	PK_KNEXT(q4ka81)
	VSUBPS  Y11, Y10, Y10
	PK_GSTORE1(Y10, q4ka81g)

// Four activation rows (Q4_K): Y0 the unpacked vector, Y1 scratch, Y2…Y5
// the rows' 16-bit sums, Y6…Y9 their acc, Y10…Y13 their accm, Y14 the
// nibble mask (the scales' scratch between sub-blocks), Y15 ones.

// KSTEP4(unpack, off, xo): the vector off(SI) against the four rows'
// dwords at xo.
#define KSTEP4(unpack, off, xo) \
	unpack(off) \
	VPBROADCASTD xo(DI)(BX*1), Y1 \
	VPMADDUBSW   Y1, Y0, Y1 \
	VPADDW       Y1, Y2, Y2 \
	VPBROADCASTD xo(DI)(R9*1), Y1 \
	VPMADDUBSW   Y1, Y0, Y1 \
	VPADDW       Y1, Y3, Y3 \
	VPBROADCASTD xo(DI)(R9*2), Y1 \
	VPMADDUBSW   Y1, Y0, Y1 \
	VPADDW       Y1, Y4, Y4 \
	VPBROADCASTD xo(DI)(R13*1), Y1 \
	VPMADDUBSW   Y1, Y0, Y1 \
	VPADDW       Y1, Y5, Y5

// KFMA4C(s, di, sum, acc, accm): one row's sub-block s: acc =
// fma(float(sum), (d·sc_s)·d_x, acc), accm = fma(dmin·m_s, s_x, accm),
// d·sc_s in Y0, dmin·m_s in Y1.
#define KFMA4C(s, di, sum, acc, accm) \
	VPMADDWD     Y15, sum, sum \
	VCVTDQ2PS    sum, sum \
	VBROADCASTSS 4*s(DX)di, Y14 \
	VMULPS       Y14, Y0, Y14 \
	VFMADD231PS  Y14, sum, acc \
	VBROADCASTSS 4*s(R8)di, Y14 \
	VFMADD231PS  Y14, Y1, accm

// KSUB4(s, unpack, q): sub-block s for four activation rows.
#define KSUB4(s, unpack, q) \
	VPXOR     Y2, Y2, Y2 \
	VPXOR     Y3, Y3, Y3 \
	VPXOR     Y4, Y4, Y4 \
	VPXOR     Y5, Y5, Y5 \
	KSTEP4(unpack, q, 32*s) \
	KSTEP4(unpack, q+32, 32*s+4) \
	KSTEP4(unpack, q+64, 32*s+8) \
	KSTEP4(unpack, q+96, 32*s+12) \
	KSTEP4(unpack, q+128, 32*s+16) \
	KSTEP4(unpack, q+160, 32*s+20) \
	KSTEP4(unpack, q+192, 32*s+24) \
	KSTEP4(unpack, q+224, 32*s+28) \
	VPMOVZXBD 32+8*s(SI), Y0 \
	VCVTDQ2PS Y0, Y0 \
	VCVTPH2PS (SI), Y14 \
	VMULPS    Y14, Y0, Y0 \
	VPMOVZXBD 96+8*s(SI), Y1 \
	VCVTDQ2PS Y1, Y1 \
	VCVTPH2PS 16(SI), Y14 \
	VMULPS    Y14, Y1, Y1 \
	KFMA4C(s, (BX*1), Y2, Y6, Y10) \
	KFMA4C(s, (R10*1), Y3, Y7, Y11) \
	KFMA4C(s, (R10*2), Y4, Y8, Y12) \
	KFMA4C(s, (R14*1), Y5, Y9, Y13) \
	VMOVDQU   nib0f<>(SB), Y14

// func dotQ4_Kp8x4AVX2(w *byte, qx *int8, xs int, dx *float32, ds int, aux *float32, nb int, out *float32, os, nq int)
TEXT ·dotQ4_Kp8x4AVX2(SB), NOSPLIT, $0-80
	PK_ARGS4
	PK_QARGS
	VMOVDQU nib0f<>(SB), Y14
	VMOVDQU ones16<>(SB), Y15

q4ka84q:
	XORQ BX, BX
	ZERO4(Y6, Y7, Y8, Y9)
	ZERO4(Y10, Y11, Y12, Y13)

q4ka84:
	K4EACH(KSUB4, KLO, KHI)
	PK_KNEXT(q4ka84)
	VSUBPS  Y10, Y6, Y6
	VSUBPS  Y11, Y7, Y7
	VSUBPS  Y12, Y8, Y8
	VSUBPS  Y13, Y9, Y9
	PK_QSTORE4(Y6, Y7, Y8, Y9, q4ka84q)

// Q8_0 (packed.go: eight d_w, then the value bytes w+128, bytes 4k…4k+3
// of each row in vector k). vpmaddubsw would saturate on w+128 against
// x, so each vector is turned back into w (xor 0x80) and multiplied as
// |w| (unsigned, at most 128) against x with w's sign (vpsignb; at most
// 127): two products a word, at most 2·128·127 = 32512, exact; vpmaddwd
// against ones then makes each vector's 32-bit sums. The integer sum is
// Σ w·x itself, so these kernels take no neg (aux, s_x, is not read).

DATA bias80<>+0(SB)/8, $0x8080808080808080
DATA bias80<>+8(SB)/8, $0x8080808080808080
DATA bias80<>+16(SB)/8, $0x8080808080808080
DATA bias80<>+24(SB)/8, $0x8080808080808080
GLOBL bias80<>(SB), RODATA|NOPTR, $32

// Q8STEP1(q, ix, xo, s): s += the 32-bit sums of the vector q(SI)ix
// against the activation dword xo(DI) (Y0 = 0x80 bytes, Y15 = ones).
#define Q8STEP1(q, ix, xo, s) \
	VPXOR        q(SI)ix, Y0, Y1 \
	VPABSB       Y1, Y2 \
	VPBROADCASTD xo(DI), Y3 \
	VPSIGNB      Y1, Y3, Y3 \
	VPMADDUBSW   Y3, Y2, Y3 \
	VPMADDWD     Y15, Y3, Y3 \
	VPADDD       Y3, s, s

// Q8SUM1(ix): a Q8_0 block's 32-bit sums for the group ix bytes after SI
// in Y5.
#define Q8SUM1(ix) \
	VPXOR   Y5, Y5, Y5 \
	VPXOR   Y6, Y6, Y6 \
	Q8STEP1(16, ix, 0, Y5) \
	Q8STEP1(48, ix, 4, Y6) \
	Q8STEP1(80, ix, 8, Y5) \
	Q8STEP1(112, ix, 12, Y6) \
	Q8STEP1(144, ix, 16, Y5) \
	Q8STEP1(176, ix, 20, Y6) \
	Q8STEP1(208, ix, 24, Y5) \
	Q8STEP1(240, ix, 28, Y6) \
	VPADDD  Y6, Y5, Y5

// Q80S(ix, acc), Q80PRE: X1S4's body and pre for Q8_0.
#define Q80S(ix, acc) \
	Q8SUM1(ix) \
	SCALE1(ix, acc)

#define Q80PRE \
	VBROADCASTSS (DX), Y10

// func dotQ8_0p8x1AVX2(w *byte, qx *int8, dx, aux *float32, nb int, out *float32, ng int)
TEXT ·dotQ8_0p8x1AVX2(SB), NOSPLIT, $0-56
	PK_ARGS1
	PK_GARGS
	VMOVDQU bias80<>(SB), Y0
	VMOVDQU ones16<>(SB), Y15
	X1S4(272, Q80PRE, Q80S, q80a81s, q80a81sb, q80a81g)

	X1(272, PREFETCH5, Q80PRE, Q80S, q80a81g, q80a81)

// Four activation rows: Y0 = w, Y1 = |w|, Y2 scratch, Y3…Y6 the rows'
// 32-bit sums, Y7…Y10 their acc, Y13 0x80 bytes, Y15 ones.

// Q8STEP4C(xo, xi, s): row xi's dword xo(DI)xi against Y0 and Y1, into s.
#define Q8STEP4C(xo, xi, s) \
	VPBROADCASTD xo(DI)xi, Y2 \
	VPSIGNB      Y0, Y2, Y2 \
	VPMADDUBSW   Y2, Y1, Y2 \
	VPMADDWD     Y15, Y2, Y2 \
	VPADDD       Y2, s, s

#define Q8STEP4(q, xo) \
	VPXOR  q(SI), Y13, Y0 \
	VPABSB Y0, Y1 \
	Q8STEP4C(xo, (BX*1), Y3) \
	Q8STEP4C(xo, (R9*1), Y4) \
	Q8STEP4C(xo, (R9*2), Y5) \
	Q8STEP4C(xo, (R13*1), Y6)

// func dotQ8_0p8x4AVX2(w *byte, qx *int8, xs int, dx *float32, ds int, aux *float32, nb int, out *float32, os, nq int)
TEXT ·dotQ8_0p8x4AVX2(SB), NOSPLIT, $0-80
	PK_ARGS4
	PK_QARGS
	VMOVDQU bias80<>(SB), Y13
	VMOVDQU ones16<>(SB), Y15

q80a84q:
	XORQ BX, BX
	ZERO4(Y7, Y8, Y9, Y10)

q80a84:
	VPXOR   Y3, Y3, Y3
	VPXOR   Y4, Y4, Y4
	VPXOR   Y5, Y5, Y5
	VPXOR   Y6, Y6, Y6
	Q8STEP4(16, 0)
	Q8STEP4(48, 4)
	Q8STEP4(80, 8)
	Q8STEP4(112, 12)
	Q8STEP4(144, 16)
	Q8STEP4(176, 20)
	Q8STEP4(208, 24)
	Q8STEP4(240, 28)
	SCALE4
	PK_NEXT(272, q80a84)
	PK_QSTORE4(Y7, Y8, Y9, Y10, q80a84q)
