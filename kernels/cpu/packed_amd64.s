//go:build amd64 && !purego

#include "textflag.h"
#include "hsum_amd64.h"
#include "packed_amd64.h"

// Kernels over weights packed eight rows at a time (packed.go), AVX-512
// VNNI on 256-bit vectors: one float32 lane per weight row. Per block of
// 32 values, the 128 nibble bytes of the eight rows are laid out so that
// the bytes 4k…4k+3 of every row fill one 32-byte vector (k = 0…3); its
// low nibbles are the values 4k…4k+3 and its high nibbles 16+4k…19+4k,
// so vpdpbusd against the activation dword 4k (16+4k), broadcast, adds
// four products to each row's lane. Eight such steps give each lane its
// block's exact integer sum; then, per lane,
//
//	acc = fma(float(sum), d_w·d_x, acc)         block after block
//	Q4_1: mins = fma(m_w, s_x, mins), and out = acc + mins at the end
//
// with Σ (q−8)·x for Q4_0 formed as vpdpbusd(q, x) started from −8·Σx
// (neg, once per activation block). The 8x1 (one activation row) and
// 8x4 (four) kernels do exactly these steps per (row, activation row),
// so every value is the same whichever computes it.
//
// Block layout (packed.go): Q4_0 144 bytes, the eight f16 d_w then the
// 128 nibble bytes; Q4_1 160 bytes, eight d_w, eight m_w, the nibbles.

// UNPACK8(q): Y1…Y8 = the eight unpacked nibble vectors of the block
// whose nibble bytes start at q(SI): Y1 values 0…3 of each row, Y2
// 16…19, Y3 4…7, Y4 20…23, Y5 8…11, Y6 24…27, Y7 12…15, Y8 28…31.
#define UNPACK8(q) \
	VMOVDQU q(SI), Y1 \
	VMOVDQU q+32(SI), Y3 \
	VMOVDQU q+64(SI), Y5 \
	VMOVDQU q+96(SI), Y7 \
	VPSRLW  $4, Y1, Y2 \
	VPSRLW  $4, Y3, Y4 \
	VPSRLW  $4, Y5, Y6 \
	VPSRLW  $4, Y7, Y8 \
	MASK8

// MASK8: Y1…Y8 &= Y0 (the low nibbles); SHIFT8: Y1…Y8 >>= 4 (16-bit
// lanes: the high nibbles moved down).
#define MASK8 \
	VPAND Y0, Y1, Y1 \
	VPAND Y0, Y2, Y2 \
	VPAND Y0, Y3, Y3 \
	VPAND Y0, Y4, Y4 \
	VPAND Y0, Y5, Y5 \
	VPAND Y0, Y6, Y6 \
	VPAND Y0, Y7, Y7 \
	VPAND Y0, Y8, Y8

#define SHIFT8 \
	VPSRLW $4, Y1, Y1 \
	VPSRLW $4, Y2, Y2 \
	VPSRLW $4, Y3, Y3 \
	VPSRLW $4, Y4, Y4 \
	VPSRLW $4, Y5, Y5 \
	VPSRLW $4, Y6, Y6 \
	VPSRLW $4, Y7, Y7 \
	VPSRLW $4, Y8, Y8

// DOT8(x, a, b): a += the low-half products, b += the high-half ones, of
// the activation block at x against Y1…Y8; then a += b (exact).
#define DOT8(x, a, b) \
	VPDPBUSD.BCST 0 x, Y1, a \
	VPDPBUSD.BCST 16 x, Y2, b \
	VPDPBUSD.BCST 4 x, Y3, a \
	VPDPBUSD.BCST 20 x, Y4, b \
	VPDPBUSD.BCST 8 x, Y5, a \
	VPDPBUSD.BCST 24 x, Y6, b \
	VPDPBUSD.BCST 12 x, Y7, a \
	VPDPBUSD.BCST 28 x, Y8, b \
	VPADDD        b, a, a

// FMA8(a, d, s, acc): acc += float(a) · (Y9 · d broadcast); s scratch.
#define FMA8(a, d, s, acc) \
	VCVTDQ2PS     a, a \
	VMULPS.BCST   d, Y9, s \
	VFMADD231PS   s, a, acc

// X4_ARGS: the four-activation-row kernels' arguments (w, qx, xs, dx,
// ds, aux, nb) in SI, DI, R9, DX, R10, R8, CX, with 3·xs in R13 and 3·ds
// in R14; the four rows' accumulators Y10…Y13 zeroed.
#define X4_ARGS \
	PK_ARGS4 \
	ZEROD4(Y10, Y11, Y12, Y13)

// NEG4: the four activation rows' integer sums started, a from −off·Σx
// (neg) and b from zero: Y16/Y17, Y18/Y19, Y20/Y21, Y22/Y23.
#define NEG4 \
	VPBROADCASTD (R8), Y16 \
	VPXORD       Y17, Y17, Y17 \
	VPBROADCASTD (R8)(R10*1), Y18 \
	VPXORD       Y19, Y19, Y19 \
	VPBROADCASTD (R8)(R10*2), Y20 \
	VPXORD       Y21, Y21, Y21 \
	VPBROADCASTD (R8)(R14*1), Y22 \
	VPXORD       Y23, Y23, Y23

// FMA4: the four activation rows' FMA8.
#define FMA4 \
	FMA8(Y16, (DX), Y24, Y10) \
	FMA8(Y18, (DX)(R10*1), Y25, Y11) \
	FMA8(Y20, (DX)(R10*2), Y26, Y12) \
	FMA8(Y22, (DX)(R14*1), Y27, Y13)

#define MASK0F \
	MOVL         $0x0f0f0f0f, AX \
	VMOVD        AX, X0 \
	VPBROADCASTD X0, Y0

// func dotQ4_0p8x1VNNI(w *byte, qx *int8, dx *float32, aux *int32, nb int, out *float32)
TEXT ·dotQ4_0p8x1VNNI(SB), NOSPLIT, $0-48
	PK_ARGS1
	MASK0F
	VPXORD Y16, Y16, Y16

q40p81:
	PREFETCH3
	VPBROADCASTD (R8), Y17
	VPXORD       Y18, Y18, Y18
	UNPACK8(16)
	DOT8((DI), Y17, Y18)
	VCVTPH2PS    (SI), Y9
	FMA8(Y17, (DX), Y19, Y16)
	PK_NEXT(144, q40p81)
	PK_STORE1(Y16)

// func dotQ4_0p8x4VNNI(w *byte, qx *int8, xs int, dx *float32, ds int, aux *int32, nb int, out *float32)
//
// Activation row c at qx + c·xs, its scales at dx + c·ds and its −8·Σx
// (neg) at aux + c·ds; out[8c+r] for weight row r.
TEXT ·dotQ4_0p8x4VNNI(SB), NOSPLIT, $0-64
	X4_ARGS
	MASK0F

q40p84:
	UNPACK8(16)
	VCVTPH2PS (SI), Y9
	NEG4
	DOT8((DI), Y16, Y17)
	DOT8((DI)(R9*1), Y18, Y19)
	DOT8((DI)(R9*2), Y20, Y21)
	DOT8((DI)(R13*1), Y22, Y23)
	FMA4
	PK_NEXT(144, q40p84)
	PK_STORE4(Y10, Y11, Y12, Y13)

// func dotQ4_1p8x1VNNI(w *byte, qx *int8, dx, aux *float32, nb int, out *float32)
TEXT ·dotQ4_1p8x1VNNI(SB), NOSPLIT, $0-48
	PK_ARGS1
	MASK0F
	VPXORD Y16, Y16, Y16
	VPXORD Y20, Y20, Y20

q41p81:
	PREFETCH3
	VPXORD           Y17, Y17, Y17
	VPXORD           Y18, Y18, Y18
	UNPACK8(32)
	DOT8((DI), Y17, Y18)
	VCVTPH2PS        (SI), Y9
	VCVTPH2PS        16(SI), Y21
	VFMADD231PS.BCST (R8), Y21, Y20
	FMA8(Y17, (DX), Y19, Y16)
	PK_NEXT(160, q41p81)
	VADDPS           Y20, Y16, Y16
	PK_STORE1(Y16)

// func dotQ4_1p8x4VNNI(w *byte, qx *int8, xs int, dx *float32, ds int, aux *float32, nb int, out *float32)
//
// As dotQ4_0p8x4VNNI, with s_x (sx) at aux + c·ds instead of neg.
TEXT ·dotQ4_1p8x4VNNI(SB), NOSPLIT, $0-64
	X4_ARGS
	MASK0F
	ZEROD4(Y28, Y29, Y30, Y31)

q41p84:
	UNPACK8(32)
	VCVTPH2PS        (SI), Y9
	VCVTPH2PS        16(SI), Y15
	ZEROD4(Y16, Y17, Y18, Y19)
	ZEROD4(Y20, Y21, Y22, Y23)
	DOT8((DI), Y16, Y17)
	DOT8((DI)(R9*1), Y18, Y19)
	DOT8((DI)(R9*2), Y20, Y21)
	DOT8((DI)(R13*1), Y22, Y23)
	VFMADD231PS.BCST (R8), Y15, Y28
	VFMADD231PS.BCST (R8)(R10*1), Y15, Y29
	VFMADD231PS.BCST (R8)(R10*2), Y15, Y30
	VFMADD231PS.BCST (R8)(R14*1), Y15, Y31
	FMA4
	PK_NEXT(160, q41p84)
	VADDPS           Y28, Y10, Y10
	VADDPS           Y29, Y11, Y11
	VADDPS           Y30, Y12, Y12
	VADDPS           Y31, Y13, Y13
	PK_STORE4(Y10, Y11, Y12, Y13)

// LOAD8(q): Y1…Y8 = the eight weight vectors of a Q8_0 block (bytes
// 4k…4k+3 of each row, offset by 128, in Y(k+1)).
#define LOAD8(q) \
	VMOVDQU q(SI), Y1 \
	VMOVDQU q+32(SI), Y2 \
	VMOVDQU q+64(SI), Y3 \
	VMOVDQU q+96(SI), Y4 \
	VMOVDQU q+128(SI), Y5 \
	VMOVDQU q+160(SI), Y6 \
	VMOVDQU q+192(SI), Y7 \
	VMOVDQU q+224(SI), Y8

// DOTQ8(xo, x, a, b): as DOT8 for Q8_0's layout, the activation dword
// k at xo+4k x (x a base and index: (DI), (DI)(R9*1)) against Y(k+1).
#define DOTQ8(xo, x, a, b) \
	VPDPBUSD.BCST xo+0 x, Y1, a \
	VPDPBUSD.BCST xo+4 x, Y2, b \
	VPDPBUSD.BCST xo+8 x, Y3, a \
	VPDPBUSD.BCST xo+12 x, Y4, b \
	VPDPBUSD.BCST xo+16 x, Y5, a \
	VPDPBUSD.BCST xo+20 x, Y6, b \
	VPDPBUSD.BCST xo+24 x, Y7, a \
	VPDPBUSD.BCST xo+28 x, Y8, b \
	VPADDD        b, a, a

// func dotQ8_0p8x1VNNI(w *byte, qx *int8, dx *float32, aux *int32, nb int, out *float32)
//
// As dotQ4_0p8x1VNNI: Σ w·x = vpdpbusd(w+128, x) started from −128·Σx.
TEXT ·dotQ8_0p8x1VNNI(SB), NOSPLIT, $0-48
	PK_ARGS1
	VPXORD Y16, Y16, Y16

q80p81:
	PREFETCH5
	VPBROADCASTD (R8), Y17
	VPXORD       Y18, Y18, Y18
	LOAD8(16)
	DOTQ8(0, (DI), Y17, Y18)
	VCVTPH2PS    (SI), Y9
	FMA8(Y17, (DX), Y19, Y16)
	PK_NEXT(272, q80p81)
	PK_STORE1(Y16)

// func dotQ8_0p8x4VNNI(w *byte, qx *int8, xs int, dx *float32, ds int, aux *int32, nb int, out *float32)
TEXT ·dotQ8_0p8x4VNNI(SB), NOSPLIT, $0-64
	X4_ARGS

q80p84:
	LOAD8(16)
	VCVTPH2PS (SI), Y9
	NEG4
	DOTQ8(0, (DI), Y16, Y17)
	DOTQ8(0, (DI)(R9*1), Y18, Y19)
	DOTQ8(0, (DI)(R9*2), Y20, Y21)
	DOTQ8(0, (DI)(R13*1), Y22, Y23)
	FMA4
	PK_NEXT(272, q80p84)
	PK_STORE4(Y10, Y11, Y12, Y13)

// Q4_K, eight rows a group, 1184 bytes a super-block of 256 values
// (packed.go): d (f16 ×8) at 0, dmin at 16, the sub-block scales sc at
// 32+8s+r and mins m at 96+8s+r (bytes), then per sub-block pair p the
// nibble vectors at 160+256p+32k (low nibbles sub-block 2p, high 2p+1).
// Per (row, activation row) and sub-block s, in order:
//
//	acc  = fma(float(Σ q·x), (d·sc_s)·d_x,s, acc)    d·sc_s exact
//	accm = fma(dmin·m_s, s_x,s, accm)                dmin·m_s exact
//
// and out = acc − accm; the 8x1 and 8x4 kernels do the same steps.

// K4LO(off), K4HI(off): Y1…Y8 = the low (high) nibbles of the eight
// vectors at off(SI), vector k in Y(k+1).
#define K4LO(off) \
	VPAND off(SI), Y0, Y1 \
	VPAND off+32(SI), Y0, Y2 \
	VPAND off+64(SI), Y0, Y3 \
	VPAND off+96(SI), Y0, Y4 \
	VPAND off+128(SI), Y0, Y5 \
	VPAND off+160(SI), Y0, Y6 \
	VPAND off+192(SI), Y0, Y7 \
	VPAND off+224(SI), Y0, Y8

#define K4HI(off) \
	LOAD8(off) \
	SHIFT8     \
	MASK8

// K4SCALE(s): Y11 = d·sc_s, Y12 = dmin·m_s (eight rows).
#define K4SCALE(s) \
	VPMOVZXBD 32+8*s(SI), Y11 \
	VPMOVZXBD 96+8*s(SI), Y12 \
	VCVTDQ2PS Y11, Y11 \
	VCVTDQ2PS Y12, Y12 \
	VMULPS    Y9, Y11, Y11 \
	VMULPS    Y10, Y12, Y12

// K4PAIR(xo, xi, do, di, a, b, acc, accm): one activation row's
// sub-block (its 32 values at xo(DI)xi, d_x at do(DX)di, s_x at
// do(R8)di) against Y1…Y8.
#define K4PAIR(xo, xi, do, di, a, b, acc, accm) \
	VPXORD           a, a, a \
	VPXORD           b, b, b \
	DOTQ8(xo, (DI)xi, a, b) \
	VCVTDQ2PS        a, a \
	VMULPS.BCST      do(DX)di, Y11, Y13 \
	VFMADD231PS      Y13, a, acc \
	VFMADD231PS.BCST do(R8)di, Y12, accm

// K4SUB1(s, unpack, qoff): sub-block s for one activation row (BX = 0).
#define K4SUB1(s, unpack, qoff) \
	unpack(qoff) \
	K4SCALE(s) \
	K4PAIR(32*s, (BX*1), 4*s, (BX*1), Y16, Y17, Y24, Y28)

// K4SUB4(s, unpack, qoff): sub-block s for four activation rows.
#define K4SUB4(s, unpack, qoff) \
	unpack(qoff) \
	K4SCALE(s) \
	K4PAIR(32*s, (BX*1), 4*s, (BX*1), Y16, Y17, Y24, Y28) \
	K4PAIR(32*s, (R9*1), 4*s, (R10*1), Y18, Y19, Y25, Y29) \
	K4PAIR(32*s, (R9*2), 4*s, (R10*2), Y20, Y21, Y26, Y30) \
	K4PAIR(32*s, (R13*1), 4*s, (R14*1), Y22, Y23, Y27, Y31)

// func dotQ4_Kp8x1VNNI(w *byte, qx *int8, dx, aux *float32, nb int, out *float32)
//
// aux is s_x; nb counts super-blocks.
TEXT ·dotQ4_Kp8x1VNNI(SB), NOSPLIT, $0-48
	PK_ARGS1
	MASK0F
	XORQ   BX, BX
	VPXORD Y24, Y24, Y24
	VPXORD Y28, Y28, Y28

q4kp81:
	PREFETCH19
	VCVTPH2PS (SI), Y9
	VCVTPH2PS 16(SI), Y10
	K4EACH(K4SUB1, K4LO, K4HI)
	PK_KNEXT(q4kp81)
	VSUBPS  Y28, Y24, Y16
	PK_STORE1(Y16)

// func dotQ4_Kp8x4VNNI(w *byte, qx *int8, xs int, dx *float32, ds int, aux *float32, nb int, out *float32)
TEXT ·dotQ4_Kp8x4VNNI(SB), NOSPLIT, $0-64
	X4_ARGS
	MASK0F
	XORQ   BX, BX
	ZEROD4(Y24, Y25, Y26, Y27)
	ZEROD4(Y28, Y29, Y30, Y31)

q4kp84:
	VCVTPH2PS (SI), Y9
	VCVTPH2PS 16(SI), Y10
	K4EACH(K4SUB4, K4LO, K4HI)
	PK_KNEXT(q4kp84)
	VSUBPS Y28, Y24, Y10
	VSUBPS Y29, Y25, Y11
	VSUBPS Y30, Y26, Y12
	VSUBPS Y31, Y27, Y13
	PK_STORE4(Y10, Y11, Y12, Y13)

// Sixteen weight rows at a time on 512-bit vectors (prefill): two
// packed groups side by side, group g in the low 256 bits of each vector
// and group g+1 (gb bytes on) in the high ones, every lane doing the 8x4
// kernel's steps on its row, so each value is bitwise the 8x1 and 8x4
// kernels'. On a CPU with full-width AVX-512 (AMD Zen 5) a 512-bit
// vpdpbusd costs what a 256-bit one does, so the integer dots of a block
// take half the instructions and issue slots.

// UNPACK16(q): Z1…Z8 = UNPACK8(q)'s vectors of both groups (R11 = gb).
#define UNPACK16(q) \
	VMOVDQU      q(SI), Y1 \
	VINSERTI64X4 $1, q(SI)(R11*1), Z1, Z1 \
	VMOVDQU      q+32(SI), Y3 \
	VINSERTI64X4 $1, q+32(SI)(R11*1), Z3, Z3 \
	VMOVDQU      q+64(SI), Y5 \
	VINSERTI64X4 $1, q+64(SI)(R11*1), Z5, Z5 \
	VMOVDQU      q+96(SI), Y7 \
	VINSERTI64X4 $1, q+96(SI)(R11*1), Z7, Z7 \
	VPSRLW       $4, Z1, Z2 \
	VPSRLW       $4, Z3, Z4 \
	VPSRLW       $4, Z5, Z6 \
	VPSRLW       $4, Z7, Z8 \
	VPANDD       Z0, Z1, Z1 \
	VPANDD       Z0, Z2, Z2 \
	VPANDD       Z0, Z3, Z3 \
	VPANDD       Z0, Z4, Z4 \
	VPANDD       Z0, Z5, Z5 \
	VPANDD       Z0, Z6, Z6 \
	VPANDD       Z0, Z7, Z7 \
	VPANDD       Z0, Z8, Z8

// DOT16(x, a, b): DOT8 on Z1…Z8.
#define DOT16(x, a, b) \
	VPDPBUSD.BCST 0 x, Z1, a \
	VPDPBUSD.BCST 16 x, Z2, b \
	VPDPBUSD.BCST 4 x, Z3, a \
	VPDPBUSD.BCST 20 x, Z4, b \
	VPDPBUSD.BCST 8 x, Z5, a \
	VPDPBUSD.BCST 24 x, Z6, b \
	VPDPBUSD.BCST 12 x, Z7, a \
	VPDPBUSD.BCST 28 x, Z8, b \
	VPADDD        b, a, a

// FMA16Z(a, d, s, acc): FMA8 on Z9 and 512-bit a, s, acc.
#define FMA16Z(a, d, s, acc) \
	VCVTDQ2PS   a, a \
	VMULPS.BCST d, Z9, s \
	VFMADD231PS s, a, acc

// DW16: Z9 = the sixteen rows' d_w (the eight f16 at (SI), then the
// eight at gb(SI)) as float32.
#define DW16 \
	VMOVDQU     (SI), X9 \
	VINSERTI128 $1, (SI)(R11*1), Y9, Y9 \
	VCVTPH2PS   Y9, Z9

// STORE16X4(a, b, c, d): out (R12), out+os, +2os, +3os (R15 = os) = a,
// b, c, d.
#define STORE16X4(a, b, c, d) \
	VMOVUPS a, (R12) \
	VMOVUPS b, (R12)(R15*1) \
	VMOVUPS c, (R12)(R15*2) \
	LEAQ    (R12)(R15*2), R12 \
	VMOVUPS d, (R12)(R15*1) \
	VZEROUPPER \
	RET

// func dotQ4_0p16x4VNNI(w *byte, qx *int8, xs int, dx *float32, ds int, aux *int32, nb int, out *float32, gb int, os int)
//
// dotQ4_0p8x4VNNI for the groups at w and w+gb: out[c·os/4 + r] for
// weight row r < 16 (os in bytes).
TEXT ·dotQ4_0p16x4VNNI(SB), NOSPLIT, $0-80
	PK_ARGS4
	MOVQ gb+64(FP), R11
	VPXORD Z10, Z10, Z10
	VPXORD Z11, Z11, Z11
	VPXORD Z12, Z12, Z12
	VPXORD Z13, Z13, Z13
	MOVL         $0x0f0f0f0f, AX
	VPBROADCASTD AX, Z0

q40p164:
	UNPACK16(16)
	DW16
	VPBROADCASTD (R8), Z16
	VPXORD       Z17, Z17, Z17
	VPBROADCASTD (R8)(R10*1), Z18
	VPXORD       Z19, Z19, Z19
	VPBROADCASTD (R8)(R10*2), Z20
	VPXORD       Z21, Z21, Z21
	VPBROADCASTD (R8)(R14*1), Z22
	VPXORD       Z23, Z23, Z23
	DOT16((DI), Z16, Z17)
	DOT16((DI)(R9*1), Z18, Z19)
	DOT16((DI)(R9*2), Z20, Z21)
	DOT16((DI)(R13*1), Z22, Z23)
	FMA16Z(Z16, (DX), Z24, Z10)
	FMA16Z(Z18, (DX)(R10*1), Z25, Z11)
	FMA16Z(Z20, (DX)(R10*2), Z26, Z12)
	FMA16Z(Z22, (DX)(R14*1), Z27, Z13)
	PK_NEXT(144, q40p164)
	MOVQ out+56(FP), R12
	MOVQ os+72(FP), R15
	STORE16X4(Z10, Z11, Z12, Z13)

// Q4_K, sixteen rows (two groups, as dotQ4_0p16x4VNNI) against four
// activation rows: dotQ4_Kp8x4VNNI's steps in every lane.

// K4V16(k, off): Z(k+1) = vector k at off(SI), both groups (R11 = gb).
#define K4V16(z, y, off) \
	VMOVDQU      off(SI), y \
	VINSERTI64X4 $1, off(SI)(R11*1), z, z

#define K4LOAD16(off) \
	K4V16(Z1, Y1, off) \
	K4V16(Z2, Y2, off+32) \
	K4V16(Z3, Y3, off+64) \
	K4V16(Z4, Y4, off+96) \
	K4V16(Z5, Y5, off+128) \
	K4V16(Z6, Y6, off+160) \
	K4V16(Z7, Y7, off+192) \
	K4V16(Z8, Y8, off+224)

#define K4MASK16 \
	VPANDD Z0, Z1, Z1 \
	VPANDD Z0, Z2, Z2 \
	VPANDD Z0, Z3, Z3 \
	VPANDD Z0, Z4, Z4 \
	VPANDD Z0, Z5, Z5 \
	VPANDD Z0, Z6, Z6 \
	VPANDD Z0, Z7, Z7 \
	VPANDD Z0, Z8, Z8

#define K4SHIFT16 \
	VPSRLW $4, Z1, Z1 \
	VPSRLW $4, Z2, Z2 \
	VPSRLW $4, Z3, Z3 \
	VPSRLW $4, Z4, Z4 \
	VPSRLW $4, Z5, Z5 \
	VPSRLW $4, Z6, Z6 \
	VPSRLW $4, Z7, Z7 \
	VPSRLW $4, Z8, Z8

// K4LO16(off), K4HI16(off): K4LO, K4HI on both groups.
#define K4LO16(off) \
	K4LOAD16(off) \
	K4MASK16

#define K4HI16(off) \
	K4LOAD16(off) \
	K4SHIFT16     \
	K4MASK16

// K4BYTES16(off, x, z): z = the eight bytes at off(SI) and the eight at
// off(SI)(gb), zero-extended to dwords (x its 128-bit register).
#define K4BYTES16(off, x, z) \
	VMOVQ     off(SI), x \
	VPINSRQ   $1, off(SI)(R11*1), x, x \
	VPMOVZXBD x, z

// K4SCALE16(s): Z11 = d·sc_s, Z12 = dmin·m_s (sixteen rows).
#define K4SCALE16(s) \
	K4BYTES16(32+8*s, X11, Z11) \
	K4BYTES16(96+8*s, X12, Z12) \
	VCVTDQ2PS Z11, Z11 \
	VCVTDQ2PS Z12, Z12 \
	VMULPS    Z9, Z11, Z11 \
	VMULPS    Z10, Z12, Z12

// DOTQ8Z(xo, x, a, b): DOTQ8 on Z1…Z8.
#define DOTQ8Z(xo, x, a, b) \
	VPDPBUSD.BCST xo+0 x, Z1, a \
	VPDPBUSD.BCST xo+4 x, Z2, b \
	VPDPBUSD.BCST xo+8 x, Z3, a \
	VPDPBUSD.BCST xo+12 x, Z4, b \
	VPDPBUSD.BCST xo+16 x, Z5, a \
	VPDPBUSD.BCST xo+20 x, Z6, b \
	VPDPBUSD.BCST xo+24 x, Z7, a \
	VPDPBUSD.BCST xo+28 x, Z8, b \
	VPADDD        b, a, a

// K4PAIR16: K4PAIR on 512-bit vectors.
#define K4PAIR16(xo, xi, do, di, a, b, acc, accm) \
	VPXORD           a, a, a \
	VPXORD           b, b, b \
	DOTQ8Z(xo, (DI)xi, a, b) \
	VCVTDQ2PS        a, a \
	VMULPS.BCST      do(DX)di, Z11, Z13 \
	VFMADD231PS      Z13, a, acc \
	VFMADD231PS.BCST do(R8)di, Z12, accm

#define K4SUB16(s, unpack, qoff) \
	unpack(qoff) \
	K4SCALE16(s) \
	K4PAIR16(32*s, (BX*1), 4*s, (BX*1), Z16, Z17, Z24, Z28) \
	K4PAIR16(32*s, (R9*1), 4*s, (R10*1), Z18, Z19, Z25, Z29) \
	K4PAIR16(32*s, (R9*2), 4*s, (R10*2), Z20, Z21, Z26, Z30) \
	K4PAIR16(32*s, (R13*1), 4*s, (R14*1), Z22, Z23, Z27, Z31)

// K4HALF16(off, x, z): z = the sixteen rows' f16 at off(SI) and
// off(SI)(gb) as float32.
#define K4HALF16(off, x, y, z) \
	VMOVDQU     off(SI), x \
	VINSERTI128 $1, off(SI)(R11*1), y, y \
	VCVTPH2PS   y, z

// func dotQ4_Kp16x4VNNI(w *byte, qx *int8, xs int, dx *float32, ds int, aux *float32, nb int, out *float32, gb int, os int)
TEXT ·dotQ4_Kp16x4VNNI(SB), NOSPLIT, $0-80
	PK_ARGS4
	MOVQ         gb+64(FP), R11
	MOVL         $0x0f0f0f0f, AX
	VPBROADCASTD AX, Z0
	XORQ         BX, BX
	VPXORD       Z24, Z24, Z24
	VPXORD       Z25, Z25, Z25
	VPXORD       Z26, Z26, Z26
	VPXORD       Z27, Z27, Z27
	VPXORD       Z28, Z28, Z28
	VPXORD       Z29, Z29, Z29
	VPXORD       Z30, Z30, Z30
	VPXORD       Z31, Z31, Z31

q4kp164:
	K4HALF16(0, X9, Y9, Z9)
	K4HALF16(16, X10, Y10, Z10)
	K4EACH(K4SUB16, K4LO16, K4HI16)
	PK_KNEXT(q4kp164)
	VSUBPS Z28, Z24, Z10
	VSUBPS Z29, Z25, Z11
	VSUBPS Z30, Z26, Z12
	VSUBPS Z31, Z27, Z13
	MOVQ   out+56(FP), R12
	MOVQ   os+72(FP), R15
	STORE16X4(Z10, Z11, Z12, Z13)

// Q4_0, sixteen rows against eight activation rows: each activation
// row's block sum in one register (from −8·Σx, the eight vpdpbusd in
// turn: integer sums, exact in any order, so the same as the 8x4
// kernel's two halves added), then the 8x4 kernel's float steps. The
// unpacked nibbles serve twice as many vpdpbusd as in dotQ4_0p16x4VNNI.
//
// Activation rows 0…3 at DI, DX, R8 (+ c·xs, c·ds as there), rows 4…7
// at AX, BX, R12 (the same + 4·xs, 4·ds).

// DOT16S(x, a): a += the block's products of the activation block at x
// against Z1…Z8.
#define DOT16S(x, a) \
	VPDPBUSD.BCST 0 x, Z1, a \
	VPDPBUSD.BCST 16 x, Z2, a \
	VPDPBUSD.BCST 4 x, Z3, a \
	VPDPBUSD.BCST 20 x, Z4, a \
	VPDPBUSD.BCST 8 x, Z5, a \
	VPDPBUSD.BCST 24 x, Z6, a \
	VPDPBUSD.BCST 12 x, Z7, a \
	VPDPBUSD.BCST 28 x, Z8, a

// ROW8(x, d, n, a, acc): one activation row's block (qx at x, d_x at d,
// neg at n) into its accumulator acc, a its integer sum.
#define ROW8(x, d, n, a, acc) \
	VPBROADCASTD n, a \
	DOT16S(x, a) \
	FMA16Z(a, d, Z28, acc)

// func dotQ4_0p16x8VNNI(w *byte, qx *int8, xs int, dx *float32, ds int, aux *int32, nb int, out *float32, gb int, os int)
//
// dotQ4_0p16x4VNNI for eight activation rows: out[c·os/4 + r], c < 8.
TEXT ·dotQ4_0p16x8VNNI(SB), NOSPLIT, $0-80
	PK_ARGS4
	MOVQ gb+64(FP), R11
	LEAQ (DI)(R9*4), AX
	LEAQ (DX)(R10*4), BX
	LEAQ (R8)(R10*4), R12
	VPXORD Z10, Z10, Z10
	VPXORD Z11, Z11, Z11
	VPXORD Z12, Z12, Z12
	VPXORD Z13, Z13, Z13
	VPXORD Z24, Z24, Z24
	VPXORD Z25, Z25, Z25
	VPXORD Z26, Z26, Z26
	VPXORD Z27, Z27, Z27
	MOVL         $0x0f0f0f0f, R15
	VPBROADCASTD R15, Z0

q40p168:
	UNPACK16(16)
	DW16
	ROW8((DI), (DX), (R8), Z16, Z10)
	ROW8((DI)(R9*1), (DX)(R10*1), (R8)(R10*1), Z17, Z11)
	ROW8((DI)(R9*2), (DX)(R10*2), (R8)(R10*2), Z18, Z12)
	ROW8((DI)(R13*1), (DX)(R14*1), (R8)(R14*1), Z19, Z13)
	ROW8((AX), (BX), (R12), Z20, Z24)
	ROW8((AX)(R9*1), (BX)(R10*1), (R12)(R10*1), Z21, Z25)
	ROW8((AX)(R9*2), (BX)(R10*2), (R12)(R10*2), Z22, Z26)
	ROW8((AX)(R13*1), (BX)(R14*1), (R12)(R14*1), Z23, Z27)
	ADDQ $32, AX
	ADDQ $4, BX
	ADDQ $4, R12
	PK_NEXT(144, q40p168)
	MOVQ    out+56(FP), R12
	MOVQ    os+72(FP), R15
	VMOVUPS Z10, (R12)
	VMOVUPS Z11, (R12)(R15*1)
	VMOVUPS Z12, (R12)(R15*2)
	LEAQ    (R12)(R15*2), R12
	VMOVUPS Z13, (R12)(R15*1)
	LEAQ    (R12)(R15*2), R12
	STORE16X4(Z24, Z25, Z26, Z27)

// IQ4_NL and IQ4_XS (packed.go): the Q4_0 kernels' steps with each
// unpacked nibble q looked up (vpshufb) as kvaluesIQ4[q]+128, an
// unsigned byte, and the block's sum started from −128·Σx (neg), so the
// sum is Σ kvaluesIQ4[q]·x, exact. IQ4_NL blocks are Q4_0's; an IQ4_XS
// super-block is d (f16 ×8) at 0, the signed scales ls_s at 16+8s+r
// (bytes) and eight Q4_0-like nibble blocks at 80+128s, its sub-block s
// scaled by d·ls_s (exact) where Q4_0 scales by d_w. Every kernel does
// the same steps per (row, activation row), so the values do not depend
// on which computes them.

// iq4lut: kvaluesIQ4[q]+128 for q = 0…15.
DATA iq4lut<>+0(SB)/8, $0x766a5d4f3f2d1801
DATA iq4lut<>+8(SB)/8, $0xf1d9c5b5a6998d81
GLOBL iq4lut<>(SB), RODATA|NOPTR, $16

// LUT8: Y1…Y8 = the table Y31 at Y1…Y8 (nibbles); LUT16 on Z1…Z8, Z31.
#define LUT8 \
	VPSHUFB Y1, Y31, Y1 \
	VPSHUFB Y2, Y31, Y2 \
	VPSHUFB Y3, Y31, Y3 \
	VPSHUFB Y4, Y31, Y4 \
	VPSHUFB Y5, Y31, Y5 \
	VPSHUFB Y6, Y31, Y6 \
	VPSHUFB Y7, Y31, Y7 \
	VPSHUFB Y8, Y31, Y8

#define LUT16 \
	VPSHUFB Z1, Z31, Z1 \
	VPSHUFB Z2, Z31, Z2 \
	VPSHUFB Z3, Z31, Z3 \
	VPSHUFB Z4, Z31, Z4 \
	VPSHUFB Z5, Z31, Z5 \
	VPSHUFB Z6, Z31, Z6 \
	VPSHUFB Z7, Z31, Z7 \
	VPSHUFB Z8, Z31, Z8

// PK_INIT16: the two-group kernels' start: gb in R11, the four
// accumulators Z10…Z13 zeroed, the nibble mask in Z0 and the table in
// Z31.
#define PK_INIT16 \
	PK_ARGS4 \
	MOVQ            gb+64(FP), R11 \
	VPXORD          Z10, Z10, Z10 \
	VPXORD          Z11, Z11, Z11 \
	VPXORD          Z12, Z12, Z12 \
	VPXORD          Z13, Z13, Z13 \
	MOVL            $0x0f0f0f0f, R15 \
	VPBROADCASTD    R15, Z0 \
	VBROADCASTI32X4 iq4lut<>(SB), Z31

// PK_INIT16X8: PK_INIT16 and the eight-row kernels' rows 4…7 (AX, BX,
// R12, as dotQ4_0p16x8VNNI) and their accumulators Z24…Z27.
#define PK_INIT16X8 \
	PK_INIT16 \
	LEAQ   (DI)(R9*4), AX \
	LEAQ   (DX)(R10*4), BX \
	LEAQ   (R8)(R10*4), R12 \
	VPXORD Z24, Z24, Z24 \
	VPXORD Z25, Z25, Z25 \
	VPXORD Z26, Z26, Z26 \
	VPXORD Z27, Z27, Z27

// PK_STORE16X8: dotQ4_0p16x8VNNI's outputs (Z10…Z13, Z24…Z27), and
// return.
#define PK_STORE16X8 \
	MOVQ    out+56(FP), R12 \
	MOVQ    os+72(FP), R15 \
	VMOVUPS Z10, (R12) \
	VMOVUPS Z11, (R12)(R15*1) \
	VMOVUPS Z12, (R12)(R15*2) \
	LEAQ    (R12)(R15*2), R12 \
	VMOVUPS Z13, (R12)(R15*1) \
	LEAQ    (R12)(R15*2), R12 \
	STORE16X4(Z24, Z25, Z26, Z27)

// func dotIQ4_NLp8x1VNNI(w *byte, qx *int8, dx *float32, aux *int32, nb int, out *float32)
TEXT ·dotIQ4_NLp8x1VNNI(SB), NOSPLIT, $0-48
	PK_ARGS1
	MASK0F
	VBROADCASTI32X4 iq4lut<>(SB), Y31
	VPXORD          Y16, Y16, Y16

iq4np81:
	PREFETCH3
	VPBROADCASTD (R8), Y17
	VPXORD       Y18, Y18, Y18
	UNPACK8(16)
	LUT8
	DOT8((DI), Y17, Y18)
	VCVTPH2PS    (SI), Y9
	FMA8(Y17, (DX), Y19, Y16)
	PK_NEXT(144, iq4np81)
	PK_STORE1(Y16)

// func dotIQ4_NLp8x4VNNI(w *byte, qx *int8, xs int, dx *float32, ds int, aux *int32, nb int, out *float32)
TEXT ·dotIQ4_NLp8x4VNNI(SB), NOSPLIT, $0-64
	X4_ARGS
	MASK0F
	VBROADCASTI32X4 iq4lut<>(SB), Y31

iq4np84:
	UNPACK8(16)
	LUT8
	VCVTPH2PS (SI), Y9
	NEG4
	DOT8((DI), Y16, Y17)
	DOT8((DI)(R9*1), Y18, Y19)
	DOT8((DI)(R9*2), Y20, Y21)
	DOT8((DI)(R13*1), Y22, Y23)
	FMA4
	PK_NEXT(144, iq4np84)
	PK_STORE4(Y10, Y11, Y12, Y13)

// func dotIQ4_NLp16x4VNNI(w *byte, qx *int8, xs int, dx *float32, ds int, aux *int32, nb int, out *float32, gb int, os int)
TEXT ·dotIQ4_NLp16x4VNNI(SB), NOSPLIT, $0-80
	PK_INIT16

iq4np164:
	UNPACK16(16)
	LUT16
	DW16
	ROW8((DI), (DX), (R8), Z16, Z10)
	ROW8((DI)(R9*1), (DX)(R10*1), (R8)(R10*1), Z17, Z11)
	ROW8((DI)(R9*2), (DX)(R10*2), (R8)(R10*2), Z18, Z12)
	ROW8((DI)(R13*1), (DX)(R14*1), (R8)(R14*1), Z19, Z13)
	PK_NEXT(144, iq4np164)
	MOVQ out+56(FP), R12
	MOVQ os+72(FP), R15
	STORE16X4(Z10, Z11, Z12, Z13)

// func dotIQ4_NLp16x8VNNI(w *byte, qx *int8, xs int, dx *float32, ds int, aux *int32, nb int, out *float32, gb int, os int)
TEXT ·dotIQ4_NLp16x8VNNI(SB), NOSPLIT, $0-80
	PK_INIT16X8

iq4np168:
	UNPACK16(16)
	LUT16
	DW16
	ROW8((DI), (DX), (R8), Z16, Z10)
	ROW8((DI)(R9*1), (DX)(R10*1), (R8)(R10*1), Z17, Z11)
	ROW8((DI)(R9*2), (DX)(R10*2), (R8)(R10*2), Z18, Z12)
	ROW8((DI)(R13*1), (DX)(R14*1), (R8)(R14*1), Z19, Z13)
	ROW8((AX), (BX), (R12), Z20, Z24)
	ROW8((AX)(R9*1), (BX)(R10*1), (R12)(R10*1), Z21, Z25)
	ROW8((AX)(R9*2), (BX)(R10*2), (R12)(R10*2), Z22, Z26)
	ROW8((AX)(R13*1), (BX)(R14*1), (R12)(R14*1), Z23, Z27)
	ADDQ $32, AX
	ADDQ $4, BX
	ADDQ $4, R12
	PK_NEXT(144, iq4np168)
	PK_STORE16X8

// IQ4_XS: per sub-block s, its nibble block unpacked and looked up
// (XSNIB8, XSNIB16), the scale d·ls_s (XSSC8: Y14, XSSC16: Z14, from
// the rows' d in Y9/Z9), then per activation row the Q4_0 steps with
// Y14/Z14 for d_w, its values at 32s, d_x and neg at 4s on.

#define XSNIB8(s) \
	UNPACK8(80+128*s) \
	LUT8

#define XSNIB16(s) \
	UNPACK16(80+128*s) \
	LUT16

#define XSSC8(s) \
	VPMOVSXBD 16+8*s(SI), Y14 \
	VCVTDQ2PS Y14, Y14 \
	VMULPS    Y9, Y14, Y14

#define XSSC16(s) \
	VMOVQ     16+8*s(SI), X14 \
	VPINSRQ   $1, 16+8*s(SI)(R11*1), X14, X14 \
	VPMOVSXBD X14, Z14 \
	VCVTDQ2PS Z14, Z14 \
	VMULPS    Z9, Z14, Z14

// XSDOT8(xo, x, a, b): DOT8 on the activation block at xo x.
#define XSDOT8(xo, x, a, b) \
	VPDPBUSD.BCST xo+0 x, Y1, a \
	VPDPBUSD.BCST xo+16 x, Y2, b \
	VPDPBUSD.BCST xo+4 x, Y3, a \
	VPDPBUSD.BCST xo+20 x, Y4, b \
	VPDPBUSD.BCST xo+8 x, Y5, a \
	VPDPBUSD.BCST xo+24 x, Y6, b \
	VPDPBUSD.BCST xo+12 x, Y7, a \
	VPDPBUSD.BCST xo+28 x, Y8, b \
	VPADDD        b, a, a

// XSROW8(s, xi, di, a, b, t, acc): sub-block s of one activation row
// (its values at 32s(DI)xi, d_x at 4s(DX)di, neg at 4s(R8)di) into
// acc; a, b its integer sums, t scratch.
#define XSROW8(s, xi, di, a, b, t, acc) \
	VPBROADCASTD 4*s(R8)di, a \
	VPXORD       b, b, b \
	XSDOT8(32*s, (DI)xi, a, b) \
	VCVTDQ2PS    a, a \
	VMULPS.BCST  4*s(DX)di, Y14, t \
	VFMADD231PS  t, a, acc

#define XSSUB1(s) \
	XSNIB8(s) \
	XSSC8(s) \
	XSROW8(s, (BX*1), (BX*1), Y17, Y18, Y19, Y16)

#define XSSUB4(s) \
	XSNIB8(s) \
	XSSC8(s) \
	XSROW8(s, (BX*1), (BX*1), Y16, Y17, Y24, Y10) \
	XSROW8(s, (R9*1), (R10*1), Y18, Y19, Y25, Y11) \
	XSROW8(s, (R9*2), (R10*2), Y20, Y21, Y26, Y12) \
	XSROW8(s, (R13*1), (R14*1), Y22, Y23, Y27, Y13)

// XSEACH(sub): sub(s) for the eight sub-blocks.
#define XSEACH(sub) \
	sub(0) \
	sub(1) \
	sub(2) \
	sub(3) \
	sub(4) \
	sub(5) \
	sub(6) \
	sub(7)

// XSNEXT(loop): on to the next super-block (1104 bytes, 256 values).
#define XSNEXT(loop) \
	ADDQ $1104, SI \
	ADDQ $256, DI \
	ADDQ $32, DX \
	ADDQ $32, R8 \
	DECQ CX \
	JNZ  loop

// func dotIQ4_XSp8x1VNNI(w *byte, qx *int8, dx *float32, aux *int32, nb int, out *float32)
//
// nb counts super-blocks; aux is neg, one per 32 values.
TEXT ·dotIQ4_XSp8x1VNNI(SB), NOSPLIT, $0-48
	PK_ARGS1
	MASK0F
	VBROADCASTI32X4 iq4lut<>(SB), Y31
	XORQ            BX, BX
	VPXORD          Y16, Y16, Y16

iq4xp81:
	PREFETCH19
	VCVTPH2PS (SI), Y9
	XSEACH(XSSUB1)
	XSNEXT(iq4xp81)
	PK_STORE1(Y16)

// func dotIQ4_XSp8x4VNNI(w *byte, qx *int8, xs int, dx *float32, ds int, aux *int32, nb int, out *float32)
TEXT ·dotIQ4_XSp8x4VNNI(SB), NOSPLIT, $0-64
	X4_ARGS
	MASK0F
	VBROADCASTI32X4 iq4lut<>(SB), Y31
	XORQ            BX, BX

iq4xp84:
	VCVTPH2PS (SI), Y9
	XSEACH(XSSUB4)
	XSNEXT(iq4xp84)
	PK_STORE4(Y10, Y11, Y12, Y13)

// XSDOT16(xo, x, a): DOT16S on the activation block at xo x.
#define XSDOT16(xo, x, a) \
	VPDPBUSD.BCST xo+0 x, Z1, a \
	VPDPBUSD.BCST xo+16 x, Z2, a \
	VPDPBUSD.BCST xo+4 x, Z3, a \
	VPDPBUSD.BCST xo+20 x, Z4, a \
	VPDPBUSD.BCST xo+8 x, Z5, a \
	VPDPBUSD.BCST xo+24 x, Z6, a \
	VPDPBUSD.BCST xo+12 x, Z7, a \
	VPDPBUSD.BCST xo+28 x, Z8, a

// XSROW16(s, x, d, n, xi, di, a, acc): sub-block s of one activation row
// (values at 32s x xi, d_x at 4s d di, neg at 4s n di) into acc, a its
// integer sum.
#define XSROW16(s, x, d, n, xi, di, a, acc) \
	VPBROADCASTD 4*s n di, a \
	XSDOT16(32*s, x xi, a) \
	VCVTDQ2PS    a, a \
	VMULPS.BCST  4*s d di, Z14, Z28 \
	VFMADD231PS  Z28, a, acc

#define XSSUB16X4(s) \
	XSNIB16(s) \
	XSSC16(s) \
	XSROW16(s, (DI), (DX), (R8), (R15*1), (R15*1), Z16, Z10) \
	XSROW16(s, (DI), (DX), (R8), (R9*1), (R10*1), Z17, Z11) \
	XSROW16(s, (DI), (DX), (R8), (R9*2), (R10*2), Z18, Z12) \
	XSROW16(s, (DI), (DX), (R8), (R13*1), (R14*1), Z19, Z13)

#define XSSUB16X8(s) \
	XSSUB16X4(s) \
	XSROW16(s, (AX), (BX), (R12), (R15*1), (R15*1), Z20, Z24) \
	XSROW16(s, (AX), (BX), (R12), (R9*1), (R10*1), Z21, Z25) \
	XSROW16(s, (AX), (BX), (R12), (R9*2), (R10*2), Z22, Z26) \
	XSROW16(s, (AX), (BX), (R12), (R13*1), (R14*1), Z23, Z27)

// func dotIQ4_XSp16x4VNNI(w *byte, qx *int8, xs int, dx *float32, ds int, aux *int32, nb int, out *float32, gb int, os int)
TEXT ·dotIQ4_XSp16x4VNNI(SB), NOSPLIT, $0-80
	PK_INIT16
	XORQ R15, R15

iq4xp164:
	DW16
	XSEACH(XSSUB16X4)
	XSNEXT(iq4xp164)
	MOVQ out+56(FP), R12
	MOVQ os+72(FP), R15
	STORE16X4(Z10, Z11, Z12, Z13)

// func dotIQ4_XSp16x8VNNI(w *byte, qx *int8, xs int, dx *float32, ds int, aux *int32, nb int, out *float32, gb int, os int)
TEXT ·dotIQ4_XSp16x8VNNI(SB), NOSPLIT, $0-80
	PK_INIT16X8
	XORQ R15, R15

iq4xp168:
	DW16
	XSEACH(XSSUB16X8)
	ADDQ $256, AX
	ADDQ $32, BX
	ADDQ $32, R12
	XSNEXT(iq4xp168)
	PK_STORE16X8

// Q5_0 (packed.go: 176 bytes a block of eight rows, the d_w at 0, the
// fifth bits h at 16, the nibble bytes at 48): the Q4_0 kernels' steps,
// each unpacked nibble vector v = 1…8 (UNPACK8's order) given its fifth
// bit, bit v−1 of h's bytes moved to bit 4 (16-bit shifts: no bit
// crosses into the other byte's bit 4), by vpternlogd (v |= t & 0x10),
// and the sum started from −16·Σx (neg).

// Q5BITS(h, t, c, r1, …, r8): r1…r8 |= the fifth bits of h (t scratch,
// c 0x10 in every byte).
#define Q5BITS(h, t, c, r1, r2, r3, r4, r5, r6, r7, r8) \
	VPSLLW     $4, h, t \
	VPTERNLOGD $0xf8, c, t, r1 \
	VPSLLW     $3, h, t \
	VPTERNLOGD $0xf8, c, t, r2 \
	VPSLLW     $2, h, t \
	VPTERNLOGD $0xf8, c, t, r3 \
	VPSLLW     $1, h, t \
	VPTERNLOGD $0xf8, c, t, r4 \
	VPTERNLOGD $0xf8, c, h, r5 \
	VPSRLW     $1, h, t \
	VPTERNLOGD $0xf8, c, t, r6 \
	VPSRLW     $2, h, t \
	VPTERNLOGD $0xf8, c, t, r7 \
	VPSRLW     $3, h, t \
	VPTERNLOGD $0xf8, c, t, r8

// Q5UNPACK8: Y1…Y8 = the block's five-bit values (Y14, Y15 scratch, Y30
// the 0x10 bytes).
#define Q5UNPACK8 \
	UNPACK8(48) \
	VMOVDQU 16(SI), Y14 \
	Q5BITS(Y14, Y15, Y30, Y1, Y2, Y3, Y4, Y5, Y6, Y7, Y8)

// Q5UNPACK16: Z1…Z8 = both groups' five-bit values (R11 = gb).
#define Q5UNPACK16 \
	UNPACK16(48) \
	VMOVDQU      16(SI), Y14 \
	VINSERTI64X4 $1, 16(SI)(R11*1), Z14, Z14 \
	Q5BITS(Z14, Z15, Z30, Z1, Z2, Z3, Z4, Z5, Z6, Z7, Z8)

#define MASK10 \
	MOVL         $0x10101010, AX \
	VPBROADCASTD AX, Z30

// func dotQ5_0p8x1VNNI(w *byte, qx *int8, dx *float32, aux *int32, nb int, out *float32)
TEXT ·dotQ5_0p8x1VNNI(SB), NOSPLIT, $0-48
	PK_ARGS1
	MASK10
	MASK0F
	VPXORD Y16, Y16, Y16

q50p81:
	PREFETCH3
	VPBROADCASTD (R8), Y17
	VPXORD       Y18, Y18, Y18
	Q5UNPACK8
	DOT8((DI), Y17, Y18)
	VCVTPH2PS    (SI), Y9
	FMA8(Y17, (DX), Y19, Y16)
	PK_NEXT(176, q50p81)
	PK_STORE1(Y16)

// func dotQ5_0p8x4VNNI(w *byte, qx *int8, xs int, dx *float32, ds int, aux *int32, nb int, out *float32)
TEXT ·dotQ5_0p8x4VNNI(SB), NOSPLIT, $0-64
	X4_ARGS
	MASK10
	MASK0F

q50p84:
	Q5UNPACK8
	VCVTPH2PS (SI), Y9
	NEG4
	DOT8((DI), Y16, Y17)
	DOT8((DI)(R9*1), Y18, Y19)
	DOT8((DI)(R9*2), Y20, Y21)
	DOT8((DI)(R13*1), Y22, Y23)
	FMA4
	PK_NEXT(176, q50p84)
	PK_STORE4(Y10, Y11, Y12, Y13)

// func dotQ5_0p16x4VNNI(w *byte, qx *int8, xs int, dx *float32, ds int, aux *int32, nb int, out *float32, gb int, os int)
TEXT ·dotQ5_0p16x4VNNI(SB), NOSPLIT, $0-80
	PK_INIT16
	MASK10

q50p164:
	Q5UNPACK16
	DW16
	ROW8((DI), (DX), (R8), Z16, Z10)
	ROW8((DI)(R9*1), (DX)(R10*1), (R8)(R10*1), Z17, Z11)
	ROW8((DI)(R9*2), (DX)(R10*2), (R8)(R10*2), Z18, Z12)
	ROW8((DI)(R13*1), (DX)(R14*1), (R8)(R14*1), Z19, Z13)
	PK_NEXT(176, q50p164)
	MOVQ out+56(FP), R12
	MOVQ os+72(FP), R15
	STORE16X4(Z10, Z11, Z12, Z13)

// func dotQ5_0p16x8VNNI(w *byte, qx *int8, xs int, dx *float32, ds int, aux *int32, nb int, out *float32, gb int, os int)
TEXT ·dotQ5_0p16x8VNNI(SB), NOSPLIT, $0-80
	PK_INIT16X8
	MOVL         $0x10101010, R15
	VPBROADCASTD R15, Z30

q50p168:
	Q5UNPACK16
	DW16
	ROW8((DI), (DX), (R8), Z16, Z10)
	ROW8((DI)(R9*1), (DX)(R10*1), (R8)(R10*1), Z17, Z11)
	ROW8((DI)(R9*2), (DX)(R10*2), (R8)(R10*2), Z18, Z12)
	ROW8((DI)(R13*1), (DX)(R14*1), (R8)(R14*1), Z19, Z13)
	ROW8((AX), (BX), (R12), Z20, Z24)
	ROW8((AX)(R9*1), (BX)(R10*1), (R12)(R10*1), Z21, Z25)
	ROW8((AX)(R9*2), (BX)(R10*2), (R12)(R10*2), Z22, Z26)
	ROW8((AX)(R13*1), (BX)(R14*1), (R12)(R14*1), Z23, Z27)
	ADDQ $32, AX
	ADDQ $4, BX
	ADDQ $4, R12
	PK_NEXT(176, q50p168)
	PK_STORE16X8

// Q6_K (packed.go: 1680 bytes a super-block of eight rows). Group g of
// 32 values (h = g/4, c = g%4): vector k (values 4k…4k+3 of each row) is
// the ql chunk 2h+c%2's vector k, shifted right by 4 for c ≥ 2, masked
// to its nibble, with bits 2c, 2c+1 of the qh chunk h's vector k moved to
// bits 4, 5 by a dword rotation (left by 4−2c mod 32: no other bit lands
// there) and masked, or'ed in by vpternlogd. Per activation row, a sums
// vectors 0…3 from −32·Σx of the group's first 16 values, b vectors 4…7
// from the last 16's (neg, one per 16 values: rows at twice dx's stride),
// and acc = fma(float(a·sc_2g + b·sc_2g+1), d·d_x, acc).

// Q6EACH(sub): sub(g, ql chunk, qh chunk, ql shift, qh rotation) for the
// eight groups in order.
#define Q6EACH(sub) \
	sub(0, 144, 1168, 0, 4) \
	sub(1, 400, 1168, 0, 2) \
	sub(2, 144, 1168, 4, 0) \
	sub(3, 400, 1168, 4, 30) \
	sub(4, 656, 1424, 0, 4) \
	sub(5, 912, 1424, 0, 2) \
	sub(6, 656, 1424, 4, 0) \
	sub(7, 912, 1424, 4, 30)

// Q6V8(y, qo, ho, qs, hr): y = vector values at chunk offsets qo (ql)
// and ho (qh), eight rows (Y0 0x0f, Y30 0x30 in every byte, Y31 scratch).
#define Q6V8(y, qo, ho, qs, hr) \
	VMOVDQU    qo(SI), y \
	VPSRLW     $qs, y, y \
	VPROLD     $hr, ho(SI), Y31 \
	VPANDD     Y30, Y31, Y31 \
	VPTERNLOGD $0xec, Y0, Y31, y

// Q6V16: Q6V8 for both groups (R11 = gb).
#define Q6V16(z, y, qo, ho, qs, hr) \
	VMOVDQU      qo(SI), y \
	VINSERTI64X4 $1, qo(SI)(R11*1), z, z \
	VPSRLW       $qs, z, z \
	VMOVDQU64    ho(SI), Y31 \
	VINSERTI64X4 $1, ho(SI)(R11*1), Z31, Z31 \
	VPROLD       $hr, Z31, Z31 \
	VPANDD       Z30, Z31, Z31 \
	VPTERNLOGD   $0xec, Z0, Z31, z

#define Q6UNPACK8(qo, ho, qs, hr) \
	Q6V8(Y1, qo, ho, qs, hr) \
	Q6V8(Y2, qo+32, ho+32, qs, hr) \
	Q6V8(Y3, qo+64, ho+64, qs, hr) \
	Q6V8(Y4, qo+96, ho+96, qs, hr) \
	Q6V8(Y5, qo+128, ho+128, qs, hr) \
	Q6V8(Y6, qo+160, ho+160, qs, hr) \
	Q6V8(Y7, qo+192, ho+192, qs, hr) \
	Q6V8(Y8, qo+224, ho+224, qs, hr)

#define Q6UNPACK16(qo, ho, qs, hr) \
	Q6V16(Z1, Y1, qo, ho, qs, hr) \
	Q6V16(Z2, Y2, qo+32, ho+32, qs, hr) \
	Q6V16(Z3, Y3, qo+64, ho+64, qs, hr) \
	Q6V16(Z4, Y4, qo+96, ho+96, qs, hr) \
	Q6V16(Z5, Y5, qo+128, ho+128, qs, hr) \
	Q6V16(Z6, Y6, qo+160, ho+160, qs, hr) \
	Q6V16(Z7, Y7, qo+192, ho+192, qs, hr) \
	Q6V16(Z8, Y8, qo+224, ho+224, qs, hr)

// Q6SC8(g): Y14, Y15 = the scales sc_2g, sc_2g+1 (int32, eight rows);
// Q6SC16(g) for sixteen, in Z14, Z15.
#define Q6SC8(g) \
	VPMOVSXBD 16+16*g(SI), Y14 \
	VPMOVSXBD 24+16*g(SI), Y15

#define Q6SC16(g) \
	VMOVQ     16+16*g(SI), X14 \
	VPINSRQ   $1, 16+16*g(SI)(R11*1), X14, X14 \
	VPMOVSXBD X14, Z14 \
	VMOVQ     24+16*g(SI), X15 \
	VPINSRQ   $1, 24+16*g(SI)(R11*1), X15, X15 \
	VPMOVSXBD X15, Z15

// Q6ROW8(g, xi, di, ni, a, acc): group g of one activation row (values
// at 32g(DI)xi, d_x at 4g(DX)di, neg at 8g(R8)ni) into acc, eight rows;
// a, Y28 its sums, Y29 scratch.
#define Q6ROW8(g, xi, di, ni, a, acc) \
	VPBROADCASTD  8*g(R8)ni, a \
	VPDPBUSD.BCST 32*g(DI)xi, Y1, a \
	VPDPBUSD.BCST 32*g+4(DI)xi, Y2, a \
	VPDPBUSD.BCST 32*g+8(DI)xi, Y3, a \
	VPDPBUSD.BCST 32*g+12(DI)xi, Y4, a \
	VPBROADCASTD  8*g+4(R8)ni, Y28 \
	VPDPBUSD.BCST 32*g+16(DI)xi, Y5, Y28 \
	VPDPBUSD.BCST 32*g+20(DI)xi, Y6, Y28 \
	VPDPBUSD.BCST 32*g+24(DI)xi, Y7, Y28 \
	VPDPBUSD.BCST 32*g+28(DI)xi, Y8, Y28 \
	VPMULLD       Y14, a, a \
	VPMULLD       Y15, Y28, Y28 \
	VPADDD        Y28, a, a \
	VCVTDQ2PS     a, a \
	VMULPS.BCST   4*g(DX)di, Y9, Y29 \
	VFMADD231PS   Y29, a, acc

// Q6ROW16(g, x, d, n, xi, di, ni, a, acc): Q6ROW8 on sixteen rows, the
// activation row at x, d, n (bases) and xi, di, ni (indices).
#define Q6ROW16(g, x, d, n, xi, di, ni, a, acc) \
	VPBROADCASTD  8*g n ni, a \
	VPDPBUSD.BCST 32*g x xi, Z1, a \
	VPDPBUSD.BCST 32*g+4 x xi, Z2, a \
	VPDPBUSD.BCST 32*g+8 x xi, Z3, a \
	VPDPBUSD.BCST 32*g+12 x xi, Z4, a \
	VPBROADCASTD  8*g+4 n ni, Z28 \
	VPDPBUSD.BCST 32*g+16 x xi, Z5, Z28 \
	VPDPBUSD.BCST 32*g+20 x xi, Z6, Z28 \
	VPDPBUSD.BCST 32*g+24 x xi, Z7, Z28 \
	VPDPBUSD.BCST 32*g+28 x xi, Z8, Z28 \
	VPMULLD       Z14, a, a \
	VPMULLD       Z15, Z28, Z28 \
	VPADDD        Z28, a, a \
	VCVTDQ2PS     a, a \
	VMULPS.BCST   4*g d di, Z9, Z29 \
	VFMADD231PS   Z29, a, acc

#define Q6SUB1(g, qo, ho, qs, hr) \
	Q6UNPACK8(qo, ho, qs, hr) \
	Q6SC8(g) \
	Q6ROW8(g, (BX*1), (BX*1), (BX*1), Y16, Y10)

#define Q6SUB4(g, qo, ho, qs, hr) \
	Q6UNPACK8(qo, ho, qs, hr) \
	Q6SC8(g) \
	Q6ROW8(g, (BX*1), (BX*1), (BX*1), Y16, Y10) \
	Q6ROW8(g, (R9*1), (R10*1), (R10*2), Y17, Y11) \
	Q6ROW8(g, (R9*2), (R10*2), (R10*4), Y18, Y12) \
	Q6ROW8(g, (R13*1), (R14*1), (R14*2), Y19, Y13)

#define Q6SUB16X4(g, qo, ho, qs, hr) \
	Q6UNPACK16(qo, ho, qs, hr) \
	Q6SC16(g) \
	Q6ROW16(g, (DI), (DX), (R8), (R15*1), (R15*1), (R15*1), Z16, Z10) \
	Q6ROW16(g, (DI), (DX), (R8), (R9*1), (R10*1), (R10*2), Z17, Z11) \
	Q6ROW16(g, (DI), (DX), (R8), (R9*2), (R10*2), (R10*4), Z18, Z12) \
	Q6ROW16(g, (DI), (DX), (R8), (R13*1), (R14*1), (R14*2), Z19, Z13)

#define Q6SUB16X8(g, qo, ho, qs, hr) \
	Q6SUB16X4(g, qo, ho, qs, hr) \
	Q6ROW16(g, (AX), (BX), (R12), (R15*1), (R15*1), (R15*1), Z20, Z24) \
	Q6ROW16(g, (AX), (BX), (R12), (R9*1), (R10*1), (R10*2), Z21, Z25) \
	Q6ROW16(g, (AX), (BX), (R12), (R9*2), (R10*2), (R10*4), Z22, Z26) \
	Q6ROW16(g, (AX), (BX), (R12), (R13*1), (R14*1), (R14*2), Z23, Z27)

// Q6NEXT(loop): on to the next super-block (1680 bytes, 256 values, 16
// neg).
#define Q6NEXT(loop) \
	ADDQ $1680, SI \
	ADDQ $256, DI \
	ADDQ $32, DX \
	ADDQ $64, R8 \
	DECQ CX \
	JNZ  loop

#define MASK30 \
	MOVL         $0x30303030, AX \
	VPBROADCASTD AX, Z30

// func dotQ6_Kp8x1VNNI(w *byte, qx *int8, dx *float32, aux *int32, nb int, out *float32)
TEXT ·dotQ6_Kp8x1VNNI(SB), NOSPLIT, $0-48
	PK_ARGS1
	MASK30
	MASK0F
	XORQ   BX, BX
	VPXORD Y10, Y10, Y10

q6kp81:
	PREFETCH19
	PREFETCHT0 3264(SI)
	PREFETCHT0 3328(SI)
	PREFETCHT0 3392(SI)
	PREFETCHT0 3456(SI)
	PREFETCHT0 3520(SI)
	PREFETCHT0 3584(SI)
	PREFETCHT0 3648(SI)
	PREFETCHT0 3712(SI)
	VCVTPH2PS  (SI), Y9
	Q6EACH(Q6SUB1)
	Q6NEXT(q6kp81)
	PK_STORE1(Y10)

// func dotQ6_Kp8x4VNNI(w *byte, qx *int8, xs int, dx *float32, ds int, aux *int32, nb int, out *float32)
TEXT ·dotQ6_Kp8x4VNNI(SB), NOSPLIT, $0-64
	X4_ARGS
	MASK30
	MASK0F
	XORQ BX, BX

q6kp84:
	VCVTPH2PS (SI), Y9
	Q6EACH(Q6SUB4)
	Q6NEXT(q6kp84)
	PK_STORE4(Y10, Y11, Y12, Y13)

// func dotQ6_Kp16x4VNNI(w *byte, qx *int8, xs int, dx *float32, ds int, aux *int32, nb int, out *float32, gb int, os int)
TEXT ·dotQ6_Kp16x4VNNI(SB), NOSPLIT, $0-80
	PK_INIT16
	MASK30
	XORQ R15, R15

q6kp164:
	DW16
	Q6EACH(Q6SUB16X4)
	Q6NEXT(q6kp164)
	MOVQ out+56(FP), R12
	MOVQ os+72(FP), R15
	STORE16X4(Z10, Z11, Z12, Z13)

// func dotQ6_Kp16x8VNNI(w *byte, qx *int8, xs int, dx *float32, ds int, aux *int32, nb int, out *float32, gb int, os int)
//
// Activation rows 4…7 at AX, BX (as dotQ4_0p16x8VNNI) and their neg at
// R12 = aux + 8·ds.
TEXT ·dotQ6_Kp16x8VNNI(SB), NOSPLIT, $0-80
	PK_INIT16X8
	LEAQ         (R8)(R10*8), R12
	MOVL         $0x30303030, R15
	VPBROADCASTD R15, Z30
	XORQ         R15, R15

q6kp168:
	DW16
	Q6EACH(Q6SUB16X8)
	ADDQ $256, AX
	ADDQ $32, BX
	ADDQ $64, R12
	Q6NEXT(q6kp168)
	PK_STORE16X8

// Q5_K (packed.go: 1440 bytes a super-block of eight rows): the Q4_K
// kernels' steps, each sub-block s's unpacked nibble vector k given its
// fifth bit, bit s of the qh vector k at 1184+32k, moved to bit 4 by a
// dword rotation (left by 4−s mod 32: no other bit lands there) and or'ed
// in by vpternlogd (Y14/Z14 0x10 in every byte, Y15/Z15 scratch).

// K5EACH(sub, lo, hi): K4EACH with the rotation of each sub-block.
#define K5EACH(sub, lo, hi) \
	sub(0, lo, 160, 4) \
	sub(1, hi, 160, 3) \
	sub(2, lo, 416, 2) \
	sub(3, hi, 416, 1) \
	sub(4, lo, 672, 0) \
	sub(5, hi, 672, 31) \
	sub(6, lo, 928, 30) \
	sub(7, hi, 928, 29)

#define K5BIT8(y, off, rot) \
	VPROLD     $rot, off(SI), Y15 \
	VPTERNLOGD $0xf8, Y14, Y15, y

#define K5BITS8(rot) \
	K5BIT8(Y1, 1184, rot) \
	K5BIT8(Y2, 1216, rot) \
	K5BIT8(Y3, 1248, rot) \
	K5BIT8(Y4, 1280, rot) \
	K5BIT8(Y5, 1312, rot) \
	K5BIT8(Y6, 1344, rot) \
	K5BIT8(Y7, 1376, rot) \
	K5BIT8(Y8, 1408, rot)

#define K5BIT16(z, off, rot) \
	VMOVDQU64    off(SI), Y15 \
	VINSERTI64X4 $1, off(SI)(R11*1), Z15, Z15 \
	VPROLD       $rot, Z15, Z15 \
	VPTERNLOGD   $0xf8, Z14, Z15, z

#define K5BITS16(rot) \
	K5BIT16(Z1, 1184, rot) \
	K5BIT16(Z2, 1216, rot) \
	K5BIT16(Z3, 1248, rot) \
	K5BIT16(Z4, 1280, rot) \
	K5BIT16(Z5, 1312, rot) \
	K5BIT16(Z6, 1344, rot) \
	K5BIT16(Z7, 1376, rot) \
	K5BIT16(Z8, 1408, rot)

#define K5SUB1(s, unpack, qoff, rot) \
	unpack(qoff) \
	K5BITS8(rot) \
	K4SCALE(s) \
	K4PAIR(32*s, (BX*1), 4*s, (BX*1), Y16, Y17, Y24, Y28)

#define K5SUB4(s, unpack, qoff, rot) \
	unpack(qoff) \
	K5BITS8(rot) \
	K4SCALE(s) \
	K4PAIR(32*s, (BX*1), 4*s, (BX*1), Y16, Y17, Y24, Y28) \
	K4PAIR(32*s, (R9*1), 4*s, (R10*1), Y18, Y19, Y25, Y29) \
	K4PAIR(32*s, (R9*2), 4*s, (R10*2), Y20, Y21, Y26, Y30) \
	K4PAIR(32*s, (R13*1), 4*s, (R14*1), Y22, Y23, Y27, Y31)

#define K5SUB16(s, unpack, qoff, rot) \
	unpack(qoff) \
	K5BITS16(rot) \
	K4SCALE16(s) \
	K4PAIR16(32*s, (BX*1), 4*s, (BX*1), Z16, Z17, Z24, Z28) \
	K4PAIR16(32*s, (R9*1), 4*s, (R10*1), Z18, Z19, Z25, Z29) \
	K4PAIR16(32*s, (R9*2), 4*s, (R10*2), Z20, Z21, Z26, Z30) \
	K4PAIR16(32*s, (R13*1), 4*s, (R14*1), Z22, Z23, Z27, Z31)

// K5NEXT(loop): on to the next Q5_K super-block (1440 bytes, 256 values).
#define K5NEXT(loop) \
	ADDQ $1440, SI \
	ADDQ $256, DI \
	ADDQ $32, DX \
	ADDQ $32, R8 \
	DECQ CX \
	JNZ  loop

#define MASK10Y14 \
	MOVL         $0x10101010, AX \
	VPBROADCASTD AX, Z14

// func dotQ5_Kp8x1VNNI(w *byte, qx *int8, dx, aux *float32, nb int, out *float32)
TEXT ·dotQ5_Kp8x1VNNI(SB), NOSPLIT, $0-48
	PK_ARGS1
	MASK10Y14
	MASK0F
	XORQ   BX, BX
	VPXORD Y24, Y24, Y24
	VPXORD Y28, Y28, Y28

q5kp81:
	PREFETCH19
	PREFETCHT0 3264(SI)
	PREFETCHT0 3328(SI)
	PREFETCHT0 3392(SI)
	PREFETCHT0 3456(SI)
	VCVTPH2PS  (SI), Y9
	VCVTPH2PS  16(SI), Y10
	K5EACH(K5SUB1, K4LO, K4HI)
	K5NEXT(q5kp81)
	VSUBPS     Y28, Y24, Y16
	PK_STORE1(Y16)

// func dotQ5_Kp8x4VNNI(w *byte, qx *int8, xs int, dx *float32, ds int, aux *float32, nb int, out *float32)
TEXT ·dotQ5_Kp8x4VNNI(SB), NOSPLIT, $0-64
	X4_ARGS
	MASK10Y14
	MASK0F
	XORQ   BX, BX
	ZEROD4(Y24, Y25, Y26, Y27)
	ZEROD4(Y28, Y29, Y30, Y31)

q5kp84:
	VCVTPH2PS (SI), Y9
	VCVTPH2PS 16(SI), Y10
	K5EACH(K5SUB4, K4LO, K4HI)
	K5NEXT(q5kp84)
	VSUBPS Y28, Y24, Y10
	VSUBPS Y29, Y25, Y11
	VSUBPS Y30, Y26, Y12
	VSUBPS Y31, Y27, Y13
	PK_STORE4(Y10, Y11, Y12, Y13)

// func dotQ5_Kp16x4VNNI(w *byte, qx *int8, xs int, dx *float32, ds int, aux *float32, nb int, out *float32, gb int, os int)
TEXT ·dotQ5_Kp16x4VNNI(SB), NOSPLIT, $0-80
	PK_ARGS4
	MOVQ         gb+64(FP), R11
	MOVL         $0x0f0f0f0f, AX
	VPBROADCASTD AX, Z0
	MASK10Y14
	XORQ         BX, BX
	VPXORD       Z24, Z24, Z24
	VPXORD       Z25, Z25, Z25
	VPXORD       Z26, Z26, Z26
	VPXORD       Z27, Z27, Z27
	VPXORD       Z28, Z28, Z28
	VPXORD       Z29, Z29, Z29
	VPXORD       Z30, Z30, Z30
	VPXORD       Z31, Z31, Z31

q5kp164:
	K4HALF16(0, X9, Y9, Z9)
	K4HALF16(16, X10, Y10, Z10)
	K5EACH(K5SUB16, K4LO16, K4HI16)
	K5NEXT(q5kp164)
	VSUBPS Z28, Z24, Z10
	VSUBPS Z29, Z25, Z11
	VSUBPS Z30, Z26, Z12
	VSUBPS Z31, Z27, Z13
	MOVQ   out+56(FP), R12
	MOVQ   os+72(FP), R15
	STORE16X4(Z10, Z11, Z12, Z13)

// Q4_K and Q5_K, sixteen rows against eight activation rows: each
// activation row's sub-block sum in one register (Z14, Z15 in turn: the
// integer sum is exact in any order), then the 16x4 kernels' float
// steps, so the unpacked values serve twice as many vpdpbusd. Activation
// rows 0…3 at DI, DX, R8 (+ c·xs, c·ds), rows 4…7 at AX, BX, R12 (the
// same + 4·xs, 4·ds); R15 = 0 the index of row 0. The Q5_K kernel takes
// its 0x10 bytes in Z28 instead of Z14 (K5BITS16X8).

// K4ROW16(s, x, d, n, xi, di, a, acc, accm): sub-block s of one
// activation row (values at 32s x xi, d_x at 4s d di, s_x at 4s n di).
#define K4ROW16(s, x, d, n, xi, di, a, acc, accm) \
	VPXORD           a, a, a \
	VPDPBUSD.BCST    32*s x xi, Z1, a \
	VPDPBUSD.BCST    32*s+4 x xi, Z2, a \
	VPDPBUSD.BCST    32*s+8 x xi, Z3, a \
	VPDPBUSD.BCST    32*s+12 x xi, Z4, a \
	VPDPBUSD.BCST    32*s+16 x xi, Z5, a \
	VPDPBUSD.BCST    32*s+20 x xi, Z6, a \
	VPDPBUSD.BCST    32*s+24 x xi, Z7, a \
	VPDPBUSD.BCST    32*s+28 x xi, Z8, a \
	VCVTDQ2PS        a, a \
	VMULPS.BCST      4*s d di, Z11, Z13 \
	VFMADD231PS      Z13, a, acc \
	VFMADD231PS.BCST 4*s n di, Z12, accm

#define K4ROWS16X8(s) \
	K4ROW16(s, (DI), (DX), (R8), (R15*1), (R15*1), Z14, Z16, Z24) \
	K4ROW16(s, (DI), (DX), (R8), (R9*1), (R10*1), Z15, Z17, Z25) \
	K4ROW16(s, (DI), (DX), (R8), (R9*2), (R10*2), Z14, Z18, Z26) \
	K4ROW16(s, (DI), (DX), (R8), (R13*1), (R14*1), Z15, Z19, Z27) \
	K4ROW16(s, (AX), (BX), (R12), (R15*1), (R15*1), Z14, Z20, Z28) \
	K4ROW16(s, (AX), (BX), (R12), (R9*1), (R10*1), Z15, Z21, Z29) \
	K4ROW16(s, (AX), (BX), (R12), (R9*2), (R10*2), Z14, Z22, Z30) \
	K4ROW16(s, (AX), (BX), (R12), (R13*1), (R14*1), Z15, Z23, Z31)

#define K4SUB16X8(s, unpack, qoff) \
	unpack(qoff) \
	K4SCALE16(s) \
	K4ROWS16X8(s)

// K5BITS16X8(rot): K5BITS16 with Z10 for the 0x10 bytes (Z14, Z15 are
// the sums here) and Z13 scratch: the rows' dmin (Z10's in the 16x4
// kernel) is folded into Z12 by K4SCALE16X8.
#define K5BIT16X8(z, off, rot) \
	VMOVDQU64    off(SI), Y13 \
	VINSERTI64X4 $1, off(SI)(R11*1), Z13, Z13 \
	VPROLD       $rot, Z13, Z13 \
	VPTERNLOGD   $0xf8, Z10, Z13, z

#define K5SUB16X8(s, unpack, qoff, rot) \
	unpack(qoff) \
	K5BIT16X8(Z1, 1184, rot) \
	K5BIT16X8(Z2, 1216, rot) \
	K5BIT16X8(Z3, 1248, rot) \
	K5BIT16X8(Z4, 1280, rot) \
	K5BIT16X8(Z5, 1312, rot) \
	K5BIT16X8(Z6, 1344, rot) \
	K5BIT16X8(Z7, 1376, rot) \
	K5BIT16X8(Z8, 1408, rot) \
	K4SCALE16X8(s) \
	K4ROWS16X8(s)

// K4SCALE16X8(s): Z11 = d·sc_s, Z12 = dmin·m_s with dmin read from the
// block (16(SI), gb on) instead of Z10.
#define K4SCALE16X8(s) \
	K4BYTES16(32+8*s, X11, Z11) \
	K4BYTES16(96+8*s, X12, Z12) \
	VCVTDQ2PS   Z11, Z11 \
	VCVTDQ2PS   Z12, Z12 \
	VMULPS      Z9, Z11, Z11 \
	VMOVDQU     16(SI), X13 \
	VINSERTI128 $1, 16(SI)(R11*1), Y13, Y13 \
	VCVTPH2PS   Y13, Z13 \
	VMULPS      Z13, Z12, Z12

// K4INIT16X8: the arguments, the rows 4…7 and the sixteen accumulators.
#define K4INIT16X8 \
	PK_ARGS4 \
	MOVQ         gb+64(FP), R11 \
	LEAQ         (DI)(R9*4), AX \
	LEAQ         (DX)(R10*4), BX \
	LEAQ         (R8)(R10*4), R12 \
	MOVL         $0x0f0f0f0f, R15 \
	VPBROADCASTD R15, Z0 \
	XORQ         R15, R15 \
	VPXORD       Z16, Z16, Z16 \
	VPXORD       Z17, Z17, Z17 \
	VPXORD       Z18, Z18, Z18 \
	VPXORD       Z19, Z19, Z19 \
	VPXORD       Z20, Z20, Z20 \
	VPXORD       Z21, Z21, Z21 \
	VPXORD       Z22, Z22, Z22 \
	VPXORD       Z23, Z23, Z23 \
	VPXORD       Z24, Z24, Z24 \
	VPXORD       Z25, Z25, Z25 \
	VPXORD       Z26, Z26, Z26 \
	VPXORD       Z27, Z27, Z27 \
	VPXORD       Z28, Z28, Z28 \
	VPXORD       Z29, Z29, Z29 \
	VPXORD       Z30, Z30, Z30 \
	VPXORD       Z31, Z31, Z31

// K4STORE16X8: out rows c = 0…7 (R12 = out, R15 = os) = acc − accm,
// and return.
#define K4STORE16X8 \
	VSUBPS  Z24, Z16, Z16 \
	VSUBPS  Z25, Z17, Z17 \
	VSUBPS  Z26, Z18, Z18 \
	VSUBPS  Z27, Z19, Z19 \
	VSUBPS  Z28, Z20, Z20 \
	VSUBPS  Z29, Z21, Z21 \
	VSUBPS  Z30, Z22, Z22 \
	VSUBPS  Z31, Z23, Z23 \
	MOVQ    out+56(FP), R12 \
	MOVQ    os+72(FP), R15 \
	VMOVUPS Z16, (R12) \
	VMOVUPS Z17, (R12)(R15*1) \
	VMOVUPS Z18, (R12)(R15*2) \
	LEAQ    (R12)(R15*2), R12 \
	VMOVUPS Z19, (R12)(R15*1) \
	LEAQ    (R12)(R15*2), R12 \
	STORE16X4(Z20, Z21, Z22, Z23)

// func dotQ4_Kp16x8VNNI(w *byte, qx *int8, xs int, dx *float32, ds int, aux *float32, nb int, out *float32, gb int, os int)
TEXT ·dotQ4_Kp16x8VNNI(SB), NOSPLIT, $0-80
	K4INIT16X8

q4kp168:
	K4HALF16(0, X9, Y9, Z9)
	K4HALF16(16, X10, Y10, Z10)
	K4EACH(K4SUB16X8, K4LO16, K4HI16)
	ADDQ $256, AX
	ADDQ $32, BX
	ADDQ $32, R12
	PK_KNEXT(q4kp168)
	K4STORE16X8

// func dotQ5_Kp16x8VNNI(w *byte, qx *int8, xs int, dx *float32, ds int, aux *float32, nb int, out *float32, gb int, os int)
TEXT ·dotQ5_Kp16x8VNNI(SB), NOSPLIT, $0-80
	K4INIT16X8
	MOVL         $0x10101010, R15
	VPBROADCASTD R15, Z10
	XORQ         R15, R15

q5kp168:
	K4HALF16(0, X9, Y9, Z9)
	K5EACH(K5SUB16X8, K4LO16, K4HI16)
	ADDQ $256, AX
	ADDQ $32, BX
	ADDQ $32, R12
	K5NEXT(q5kp168)
	K4STORE16X8

// Q5_1 (packed.go: 192 bytes a block of eight rows, the d_w at 0, the
// m_w at 16, the fifth bits h at 32, the nibble bytes at 64): the Q4_1
// kernels' steps on Q5_0's five-bit values (q5bits: the 0x10 bytes, from
// memory, as the four-row kernel has no register left for them).

DATA q5bits<>+0(SB)/8, $0x1010101010101010
DATA q5bits<>+8(SB)/8, $0x1010101010101010
DATA q5bits<>+16(SB)/8, $0x1010101010101010
DATA q5bits<>+24(SB)/8, $0x1010101010101010
DATA q5bits<>+32(SB)/8, $0x1010101010101010
DATA q5bits<>+40(SB)/8, $0x1010101010101010
DATA q5bits<>+48(SB)/8, $0x1010101010101010
DATA q5bits<>+56(SB)/8, $0x1010101010101010
GLOBL q5bits<>(SB), RODATA|NOPTR, $64

// Q51UNPACK8(t): Y1…Y8 = the block's five-bit values (Y14, t scratch).
#define Q51UNPACK8(t) \
	UNPACK8(64) \
	VMOVDQU 32(SI), Y14 \
	Q5BITS(Y14, t, q5bits<>(SB), Y1, Y2, Y3, Y4, Y5, Y6, Y7, Y8)

// func dotQ5_1p8x1VNNI(w *byte, qx *int8, dx, aux *float32, nb int, out *float32)
TEXT ·dotQ5_1p8x1VNNI(SB), NOSPLIT, $0-48
	PK_ARGS1
	MASK0F
	VPXORD Y16, Y16, Y16
	VPXORD Y20, Y20, Y20

q51p81:
	PREFETCH3
	VPXORD           Y17, Y17, Y17
	VPXORD           Y18, Y18, Y18
	Q51UNPACK8(Y15)
	DOT8((DI), Y17, Y18)
	VCVTPH2PS        (SI), Y9
	VCVTPH2PS        16(SI), Y21
	VFMADD231PS.BCST (R8), Y21, Y20
	FMA8(Y17, (DX), Y19, Y16)
	PK_NEXT(192, q51p81)
	VADDPS           Y20, Y16, Y16
	PK_STORE1(Y16)

// func dotQ5_1p8x4VNNI(w *byte, qx *int8, xs int, dx *float32, ds int, aux *float32, nb int, out *float32)
TEXT ·dotQ5_1p8x4VNNI(SB), NOSPLIT, $0-64
	X4_ARGS
	MASK0F
	ZEROD4(Y28, Y29, Y30, Y31)

q51p84:
	Q51UNPACK8(Y24)
	VCVTPH2PS        (SI), Y9
	VCVTPH2PS        16(SI), Y15
	ZEROD4(Y16, Y17, Y18, Y19)
	ZEROD4(Y20, Y21, Y22, Y23)
	DOT8((DI), Y16, Y17)
	DOT8((DI)(R9*1), Y18, Y19)
	DOT8((DI)(R9*2), Y20, Y21)
	DOT8((DI)(R13*1), Y22, Y23)
	VFMADD231PS.BCST (R8), Y15, Y28
	VFMADD231PS.BCST (R8)(R10*1), Y15, Y29
	VFMADD231PS.BCST (R8)(R10*2), Y15, Y30
	VFMADD231PS.BCST (R8)(R14*1), Y15, Y31
	FMA4
	PK_NEXT(192, q51p84)
	VADDPS           Y28, Y10, Y10
	VADDPS           Y29, Y11, Y11
	VADDPS           Y30, Y12, Y12
	VADDPS           Y31, Y13, Y13
	PK_STORE4(Y10, Y11, Y12, Y13)

// Q5_1, sixteen rows (two groups, gb apart) against four or eight
// activation rows: the 8x4 kernel's steps in every lane, each row's block
// sum in one register (Z14, Z15 in turn; exact in any order). Rows 0…3
// at DI, DX, R8 (+ c·xs, c·ds), rows 4…7 at AX, BX, R12; R15 = 0 the
// index of row 0. Z9 d_w, Z10 m_w, Z11, Z12 the fifth bits, Z13 scratch,
// Z16…Z23 acc and Z24…Z31 mins of rows 0…7.

// Q51ROW16(x, d, n, xi, di, a, acc, mins): one activation row's block
// (values at x xi, d_x at d di, s_x at n di).
#define Q51ROW16(x, d, n, xi, di, a, acc, mins) \
	VPXORD           a, a, a \
	XSDOT16(0, x xi, a) \
	VCVTDQ2PS        a, a \
	VMULPS.BCST      d di, Z9, Z13 \
	VFMADD231PS      Z13, a, acc \
	VFMADD231PS.BCST n di, Z10, mins

#define Q51BLOCK16 \
	UNPACK16(64) \
	VMOVDQU      32(SI), Y11 \
	VINSERTI64X4 $1, 32(SI)(R11*1), Z11, Z11 \
	Q5BITS(Z11, Z12, q5bits<>(SB), Z1, Z2, Z3, Z4, Z5, Z6, Z7, Z8) \
	DW16 \
	K4HALF16(16, X10, Y10, Z10)

#define Q51ROWS16X4 \
	Q51ROW16((DI), (DX), (R8), (R15*1), (R15*1), Z14, Z16, Z24) \
	Q51ROW16((DI), (DX), (R8), (R9*1), (R10*1), Z15, Z17, Z25) \
	Q51ROW16((DI), (DX), (R8), (R9*2), (R10*2), Z14, Z18, Z26) \
	Q51ROW16((DI), (DX), (R8), (R13*1), (R14*1), Z15, Z19, Z27)

// func dotQ5_1p16x4VNNI(w *byte, qx *int8, xs int, dx *float32, ds int, aux *float32, nb int, out *float32, gb int, os int)
TEXT ·dotQ5_1p16x4VNNI(SB), NOSPLIT, $0-80
	K4INIT16X8

q51p164:
	Q51BLOCK16
	Q51ROWS16X4
	PK_NEXT(192, q51p164)
	VADDPS Z24, Z16, Z16
	VADDPS Z25, Z17, Z17
	VADDPS Z26, Z18, Z18
	VADDPS Z27, Z19, Z19
	MOVQ   out+56(FP), R12
	MOVQ   os+72(FP), R15
	STORE16X4(Z16, Z17, Z18, Z19)

// func dotQ5_1p16x8VNNI(w *byte, qx *int8, xs int, dx *float32, ds int, aux *float32, nb int, out *float32, gb int, os int)
TEXT ·dotQ5_1p16x8VNNI(SB), NOSPLIT, $0-80
	K4INIT16X8

q51p168:
	Q51BLOCK16
	Q51ROWS16X4
	Q51ROW16((AX), (BX), (R12), (R15*1), (R15*1), Z14, Z20, Z28)
	Q51ROW16((AX), (BX), (R12), (R9*1), (R10*1), Z15, Z21, Z29)
	Q51ROW16((AX), (BX), (R12), (R9*2), (R10*2), Z14, Z22, Z30)
	Q51ROW16((AX), (BX), (R12), (R13*1), (R14*1), Z15, Z23, Z31)
	ADDQ $32, AX
	ADDQ $4, BX
	ADDQ $4, R12
	PK_NEXT(192, q51p168)
	VADDPS  Z24, Z16, Z16
	VADDPS  Z25, Z17, Z17
	VADDPS  Z26, Z18, Z18
	VADDPS  Z27, Z19, Z19
	VADDPS  Z28, Z20, Z20
	VADDPS  Z29, Z21, Z21
	VADDPS  Z30, Z22, Z22
	VADDPS  Z31, Z23, Z23
	MOVQ    out+56(FP), R12
	MOVQ    os+72(FP), R15
	VMOVUPS Z16, (R12)
	VMOVUPS Z17, (R12)(R15*1)
	VMOVUPS Z18, (R12)(R15*2)
	LEAQ    (R12)(R15*2), R12
	VMOVUPS Z19, (R12)(R15*1)
	LEAQ    (R12)(R15*2), R12
	STORE16X4(Z20, Z21, Z22, Z23)
