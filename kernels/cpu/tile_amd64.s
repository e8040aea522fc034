//go:build amd64 && !purego

#include "textflag.h"

// Tile kernels (AVX-512 VNNI on 256-bit vectors): four weight rows
// against four activation rows (prefill) or one (decode) per call, so
// that each weight block is loaded and unpacked once for all activation
// rows and each activation block once for all weight rows, with sixteen
// (or four) independent accumulators instead of one dependency chain.
//
// Each (weight row, activation row) pair keeps its own eight float32
// lanes and goes through the one-row kernel's float steps (dot_amd64.s)
// exactly: per block, the integer sums Σ q_w·q_x of lane l (elements
// 4l…4l+3, exact in int32), converted, times (d_w·d_x rounded to
// float32), added by one fused multiply-add; then the same reduction
// (HSUM_Y0_X0). Only the integer sums are formed differently, by
// vpdpbusd (unsigned bytes × signed bytes):
//
//	Q4_0  Σ (q−8)·x = vpdpbusd(q, x) started from −8·Σx (x's block, once per activation row)
//	Q4_1  Σ q·x     = vpdpbusd(q, x)
//	Q8_0  Σ w·x     = vpdpbusd(x+128, w) started from −128·Σw (once per weight row)
//
// so every result is bitwise the one-row kernel's.
//
// Registers: Y16…Y31 accumulators (4x4: weight row r, activation row c
// in Y16+4r+c; 4x1: row r in Y16+r), Y0 0x0f bytes, Y1 8 (Q4_0) or 0x80
// (Q8_0) bytes, Y11 zero, Y12 qword shifts {0, 0, 4, 4}.

#define HSUM_Y0_X0 \
	VEXTRACTF128 $1, Y0, X1 \
	VADDPS       X1, X0, X0 \
	VMOVHLPS     X0, X0, X1 \
	VADDPS       X1, X0, X0 \
	VMOVSHDUP    X0, X1     \
	VADDSS       X1, X0, X0

#define ZERO_ACC16 \
	VPXORD Y16, Y16, Y16 \
	VPXORD Y17, Y17, Y17 \
	VPXORD Y18, Y18, Y18 \
	VPXORD Y19, Y19, Y19 \
	VPXORD Y20, Y20, Y20 \
	VPXORD Y21, Y21, Y21 \
	VPXORD Y22, Y22, Y22 \
	VPXORD Y23, Y23, Y23 \
	VPXORD Y24, Y24, Y24 \
	VPXORD Y25, Y25, Y25 \
	VPXORD Y26, Y26, Y26 \
	VPXORD Y27, Y27, Y27 \
	VPXORD Y28, Y28, Y28 \
	VPXORD Y29, Y29, Y29 \
	VPXORD Y30, Y30, Y30 \
	VPXORD Y31, Y31, Y31

#define CONSTS \
	VPXOR        Y11, Y11, Y11 \
	MOVL         $0x0f0f0f0f, AX \
	VMOVD        AX, X0 \
	VPBROADCASTD X0, Y0 \
	MOVL         $4, AX \
	VMOVQ        AX, X12 \
	VPERMQ       $0x05, Y12, Y12

// OUT(acc, off): out[off/4] = HSUM(acc).
#define OUT(acc, off) \
	VMOVAPS acc, Y0 \
	HSUM_Y0_X0 \
	VMOVSS  X0, off(R8)

// OUTM(acc, mins, lane, off): out[off/4] = HSUM(acc) + mins[lane] (Q4_1).
#define OUTM(acc, mins, lane, off) \
	VMOVAPS acc, Y0 \
	HSUM_Y0_X0 \
	VPSHUFD $lane, mins, X7 \
	VADDSS  X7, X0, X0 \
	VMOVSS  X0, off(R8)

// Rows of the 4x4 kernels: weight rows at SI, R11, R12, BX (advanced per
// block); activation rows at (DI), (DI)(R9*1), (DI)(R9*2), (DI)(R13*1),
// their scales at (DX), (DX)(R10*1), (DX)(R10*2), (DX)(R14*1).

// DX4(base, dst): dst (4 lanes) = the four activation rows' value at base.
#define DX4(base, dst) \
	VMOVSS    (base), dst \
	VINSERTPS $0x10, (base)(R10*1), dst, dst \
	VINSERTPS $0x20, (base)(R10*2), dst, dst \
	VINSERTPS $0x30, (base)(R14*1), dst, dst

// SCALES(row, doff, soff): soff(SP)[c] = d_w·d_x[c] for the weight row
// whose f16 d_w is at doff(row); X10 = d_x of the four activation rows.
#define SCALES(row, doff, soff) \
	VPBROADCASTW doff(row), X9 \
	VCVTPH2PS    X9, X9 \
	VMULPS       X10, X9, X9 \
	VMOVUPS      X9, soff(SP)

// UNPACK4(row, qoff): Y6 = the 32 nibbles at qoff(row), low ones (elements
// 0…15) in the low half, high ones (16…31) in the high half.
#define UNPACK4(row, qoff) \
	VBROADCASTI128 qoff(row), Y6 \
	VPSRLVQ        Y12, Y6, Y6 \
	VPAND          Y0, Y6, Y6

// PAIR_C(init, x, s, acc): acc += float(init + vpdpbusd(Y6, x)) · s(SP)
// broadcast.
#define PAIR_C(init, x, s, acc) \
	VMOVDQA          init, Y8 \
	VPDPBUSD         x, Y6, Y8 \
	VCVTDQ2PS        Y8, Y8 \
	VFMADD231PS.BCST s(SP), Y8, acc

// PAIR_Z: the same from zero.
#define PAIR_Z(x, s, acc) \
	VPXOR            Y8, Y8, Y8 \
	VPDPBUSD         x, Y6, Y8 \
	VCVTDQ2PS        Y8, Y8 \
	VFMADD231PS.BCST s(SP), Y8, acc

// NEGSUM(src, y, dst): dst = −(vpdpbusd(y, src) from zero).
#define NEGSUM(src, y, dst) \
	VPXOR    dst, dst, dst \
	VPDPBUSD src, y, dst \
	VPSUBD   dst, Y11, dst

#define ROWS_SETUP \
	MOVQ w+0(FP), SI \
	MOVQ rb+8(FP), R11 \
	MOVQ qx+16(FP), DI \
	MOVQ xs+24(FP), R9 \
	MOVQ dx+32(FP), DX \
	MOVQ ds+40(FP), R10 \
	MOVQ nb+56(FP), CX \
	LEAQ (SI)(R11*2), R12 \
	LEAQ (R12)(R11*1), BX \
	ADDQ SI, R11 \
	LEAQ (R9)(R9*2), R13 \
	LEAQ (R10)(R10*2), R14

#define ONE_SETUP \
	MOVQ w+0(FP), SI \
	MOVQ rb+8(FP), R11 \
	MOVQ qx+16(FP), DI \
	MOVQ dx+24(FP), DX \
	MOVQ nb+40(FP), CX \
	LEAQ (SI)(R11*2), R12 \
	LEAQ (R12)(R11*1), BX \
	ADDQ SI, R11 \
	VPXORD Y16, Y16, Y16 \
	VPXORD Y17, Y17, Y17 \
	VPXORD Y18, Y18, Y18 \
	VPXORD Y19, Y19, Y19

// Q4_0 row r: the activation rows' −8·Σx in Y2…Y5.
#define ROW4x4_Q4_0(row, s, a0, a1, a2, a3) \
	UNPACK4(row, 2) \
	SCALES(row, 0, s) \
	PAIR_C(Y2, (DI), s, a0) \
	PAIR_C(Y3, (DI)(R9*1), s+4, a1) \
	PAIR_C(Y4, (DI)(R9*2), s+8, a2) \
	PAIR_C(Y5, (DI)(R13*1), s+12, a3)

// ROW4x4_Q4_0R: ROW4x4_Q4_0 with the activation blocks in Y13, Y14,
// Y15, Y7 (loaded once per block instead of once per weight row).
#define ROW4x4_Q4_0R(row, s, a0, a1, a2, a3) \
	UNPACK4(row, 2) \
	SCALES(row, 0, s) \
	PAIR_C(Y2, Y13, s, a0) \
	PAIR_C(Y3, Y14, s+4, a1) \
	PAIR_C(Y4, Y15, s+8, a2) \
	PAIR_C(Y5, Y7, s+12, a3)

// func dotQ4_0t4x4VNNI(w *byte, rb int, qx *int8, xs int, dx *float32, ds int, sx *float32, nb int, out *float32)
TEXT ·dotQ4_0t4x4VNNI(SB), NOSPLIT, $64-72
	ROWS_SETUP
	CONSTS
	MOVL         $0x08080808, AX
	VMOVD        AX, X1
	VPBROADCASTD X1, Y1
	ZERO_ACC16

q40t44loop:
	DX4(DX, X10)
	VMOVDQU (DI), Y13
	VMOVDQU (DI)(R9*1), Y14
	VMOVDQU (DI)(R9*2), Y15
	VMOVDQU (DI)(R13*1), Y7
	NEGSUM(Y13, Y1, Y2)
	NEGSUM(Y14, Y1, Y3)
	NEGSUM(Y15, Y1, Y4)
	NEGSUM(Y7, Y1, Y5)
	ROW4x4_Q4_0R(SI, 0, Y16, Y17, Y18, Y19)
	ROW4x4_Q4_0R(R11, 16, Y20, Y21, Y22, Y23)
	ROW4x4_Q4_0R(R12, 32, Y24, Y25, Y26, Y27)
	ROW4x4_Q4_0R(BX, 48, Y28, Y29, Y30, Y31)
	ADDQ $18, SI
	ADDQ $18, R11
	ADDQ $18, R12
	ADDQ $18, BX
	ADDQ $32, DI
	ADDQ $4, DX
	DECQ CX
	JNZ  q40t44loop

	MOVQ out+64(FP), R8
	OUT(Y16, 0)
	OUT(Y17, 4)
	OUT(Y18, 8)
	OUT(Y19, 12)
	OUT(Y20, 16)
	OUT(Y21, 20)
	OUT(Y22, 24)
	OUT(Y23, 28)
	OUT(Y24, 32)
	OUT(Y25, 36)
	OUT(Y26, 40)
	OUT(Y27, 44)
	OUT(Y28, 48)
	OUT(Y29, 52)
	OUT(Y30, 56)
	OUT(Y31, 60)
	VZEROUPPER
	RET

// Q4_1 row r: its minimum m_w times the activation rows' s_x (X13) into
// mins (four lanes, one per activation row), one fused multiply-add each;
// the activation blocks in Y1, Y11, Y14, Y15 (loaded once per block).
#define ROW4x4_Q4_1(row, s, mins, a0, a1, a2, a3) \
	UNPACK4(row, 4) \
	SCALES(row, 0, s) \
	VPBROADCASTW 2(row), X7 \
	VCVTPH2PS    X7, X7 \
	VFMADD231PS  X13, X7, mins \
	PAIR_Z(Y1, s, a0) \
	PAIR_Z(Y11, s+4, a1) \
	PAIR_Z(Y14, s+8, a2) \
	PAIR_Z(Y15, s+12, a3)

// func dotQ4_1t4x4VNNI(w *byte, rb int, qx *int8, xs int, dx *float32, ds int, sx *float32, nb int, out *float32)
TEXT ·dotQ4_1t4x4VNNI(SB), NOSPLIT, $64-72
	ROWS_SETUP
	MOVQ sx+48(FP), R8
	CONSTS
	VXORPS X2, X2, X2
	VXORPS X3, X3, X3
	VXORPS X4, X4, X4
	VXORPS X5, X5, X5
	ZERO_ACC16

q41t44loop:
	DX4(DX, X10)
	DX4(R8, X13)
	VMOVDQU (DI), Y1
	VMOVDQU (DI)(R9*1), Y11
	VMOVDQU (DI)(R9*2), Y14
	VMOVDQU (DI)(R13*1), Y15
	ROW4x4_Q4_1(SI, 0, X2, Y16, Y17, Y18, Y19)
	ROW4x4_Q4_1(R11, 16, X3, Y20, Y21, Y22, Y23)
	ROW4x4_Q4_1(R12, 32, X4, Y24, Y25, Y26, Y27)
	ROW4x4_Q4_1(BX, 48, X5, Y28, Y29, Y30, Y31)
	ADDQ $20, SI
	ADDQ $20, R11
	ADDQ $20, R12
	ADDQ $20, BX
	ADDQ $32, DI
	ADDQ $4, DX
	ADDQ $4, R8
	DECQ CX
	JNZ  q41t44loop

	MOVQ out+64(FP), R8
	OUTM(Y16, X2, 0, 0)
	OUTM(Y17, X2, 1, 4)
	OUTM(Y18, X2, 2, 8)
	OUTM(Y19, X2, 3, 12)
	OUTM(Y20, X3, 0, 16)
	OUTM(Y21, X3, 1, 20)
	OUTM(Y22, X3, 2, 24)
	OUTM(Y23, X3, 3, 28)
	OUTM(Y24, X4, 0, 32)
	OUTM(Y25, X4, 1, 36)
	OUTM(Y26, X4, 2, 40)
	OUTM(Y27, X4, 3, 44)
	OUTM(Y28, X5, 0, 48)
	OUTM(Y29, X5, 1, 52)
	OUTM(Y30, X5, 2, 56)
	OUTM(Y31, X5, 3, 60)
	VZEROUPPER
	RET

// Q8_0 row r: w in Y6, −128·Σw in Y7; the activation rows' x+128 in Y2…Y5.
#define ROW4x4_Q8_0(row, s, a0, a1, a2, a3) \
	VMOVDQU 2(row), Y6 \
	NEGSUM(Y6, Y1, Y7) \
	SCALES(row, 0, s) \
	PAIR8(Y2, s, a0) \
	PAIR8(Y3, s+4, a1) \
	PAIR8(Y4, s+8, a2) \
	PAIR8(Y5, s+12, a3)

// PAIR8(xu, s, acc): acc += float(−128·Σw + vpdpbusd(xu, w)) · s(SP).
#define PAIR8(xu, s, acc) \
	VMOVDQA          Y7, Y8 \
	VPDPBUSD         Y6, xu, Y8 \
	VCVTDQ2PS        Y8, Y8 \
	VFMADD231PS.BCST s(SP), Y8, acc

// func dotQ8_0t4x4VNNI(w *byte, rb int, qx *int8, xs int, dx *float32, ds int, sx *float32, nb int, out *float32)
TEXT ·dotQ8_0t4x4VNNI(SB), NOSPLIT, $64-72
	ROWS_SETUP
	CONSTS
	MOVL         $0x80808080, AX
	VMOVD        AX, X1
	VPBROADCASTD X1, Y1
	ZERO_ACC16

q80t44loop:
	DX4(DX, X10)
	VPXOR (DI), Y1, Y2
	VPXOR (DI)(R9*1), Y1, Y3
	VPXOR (DI)(R9*2), Y1, Y4
	VPXOR (DI)(R13*1), Y1, Y5
	ROW4x4_Q8_0(SI, 0, Y16, Y17, Y18, Y19)
	ROW4x4_Q8_0(R11, 16, Y20, Y21, Y22, Y23)
	ROW4x4_Q8_0(R12, 32, Y24, Y25, Y26, Y27)
	ROW4x4_Q8_0(BX, 48, Y28, Y29, Y30, Y31)
	ADDQ $34, SI
	ADDQ $34, R11
	ADDQ $34, R12
	ADDQ $34, BX
	ADDQ $32, DI
	ADDQ $4, DX
	DECQ CX
	JNZ  q80t44loop

	MOVQ out+64(FP), R8
	OUT(Y16, 0)
	OUT(Y17, 4)
	OUT(Y18, 8)
	OUT(Y19, 12)
	OUT(Y20, 16)
	OUT(Y21, 20)
	OUT(Y22, 24)
	OUT(Y23, 28)
	OUT(Y24, 32)
	OUT(Y25, 36)
	OUT(Y26, 40)
	OUT(Y27, 44)
	OUT(Y28, 48)
	OUT(Y29, 52)
	OUT(Y30, 56)
	OUT(Y31, 60)
	VZEROUPPER
	RET

// The 4x1 kernels (decode): one activation row (x at DI, d_x broadcast in
// Y10), four weight rows; Y9 = d_w·d_x broadcast per row. Decode streams
// the weight from memory: matMulFast gives the four rows of a tile from
// four far-apart runs of rows (rb the run's length), so that each row
// is a stream of its own and prefetches ahead in it: Q4_1 and Q8_0 2 KiB,
// as the one-row kernels do; Q4_0 512 bytes (decoded 3% faster than at
// 2 KiB on both the Llama-3.2-1B and the Qwen2.5-0.5B shape at two
// threads, paired runs; 4 and 8 KiB were slower, no prefetch too).

// SCALE1(row): Y9 = d_w·d_x (eight lanes) for the row's f16 d_w at (row).
#define SCALE1(row) \
	VPBROADCASTW (row), X9 \
	VCVTPH2PS    X9, Y9 \
	VMULPS       Y10, Y9, Y9

#define ROW4x1_Q4_0(row, acc) \
	PREFETCHT0   512(row) \
	UNPACK4(row, 2) \
	SCALE1(row) \
	VMOVDQA      Y2, Y8 \
	VPDPBUSD     (DI), Y6, Y8 \
	VCVTDQ2PS    Y8, Y8 \
	VFMADD231PS  Y9, Y8, acc

// func dotQ4_0t4x1VNNI(w *byte, rb int, qx *int8, dx, sx *float32, nb int, out *float32)
TEXT ·dotQ4_0t4x1VNNI(SB), NOSPLIT, $0-56
	ONE_SETUP
	CONSTS
	MOVL         $0x08080808, AX
	VMOVD        AX, X1
	VPBROADCASTD X1, Y1

q40t41loop:
	VBROADCASTSS (DX), Y10
	NEGSUM((DI), Y1, Y2)
	ROW4x1_Q4_0(SI, Y16)
	ROW4x1_Q4_0(R11, Y17)
	ROW4x1_Q4_0(R12, Y18)
	ROW4x1_Q4_0(BX, Y19)
	ADDQ $18, SI
	ADDQ $18, R11
	ADDQ $18, R12
	ADDQ $18, BX
	ADDQ $32, DI
	ADDQ $4, DX
	DECQ CX
	JNZ  q40t41loop

	MOVQ out+48(FP), R8
	OUT(Y16, 0)
	OUT(Y17, 4)
	OUT(Y18, 8)
	OUT(Y19, 12)
	VZEROUPPER
	RET

// Q4_1: mins of row r in X(2+r) lane 0, one scalar fused multiply-add
// per block as in dotQ4_1AVX2.
#define ROW4x1_Q4_1(row, mins, acc) \
	PREFETCHT0   2048(row) \
	UNPACK4(row, 4) \
	SCALE1(row) \
	VPBROADCASTW 2(row), X7 \
	VCVTPH2PS    X7, X7 \
	VFMADD231SS  (R8), X7, mins \
	VPXOR        Y8, Y8, Y8 \
	VPDPBUSD     (DI), Y6, Y8 \
	VCVTDQ2PS    Y8, Y8 \
	VFMADD231PS  Y9, Y8, acc

// func dotQ4_1t4x1VNNI(w *byte, rb int, qx *int8, dx, sx *float32, nb int, out *float32)
TEXT ·dotQ4_1t4x1VNNI(SB), NOSPLIT, $0-56
	ONE_SETUP
	MOVQ sx+32(FP), R8
	CONSTS
	VXORPS X2, X2, X2
	VXORPS X3, X3, X3
	VXORPS X4, X4, X4
	VXORPS X5, X5, X5

q41t41loop:
	VBROADCASTSS (DX), Y10
	ROW4x1_Q4_1(SI, X2, Y16)
	ROW4x1_Q4_1(R11, X3, Y17)
	ROW4x1_Q4_1(R12, X4, Y18)
	ROW4x1_Q4_1(BX, X5, Y19)
	ADDQ $20, SI
	ADDQ $20, R11
	ADDQ $20, R12
	ADDQ $20, BX
	ADDQ $32, DI
	ADDQ $4, DX
	ADDQ $4, R8
	DECQ CX
	JNZ  q41t41loop

	MOVQ out+48(FP), R8
	OUTM(Y16, X2, 0, 0)
	OUTM(Y17, X3, 0, 4)
	OUTM(Y18, X4, 0, 8)
	OUTM(Y19, X5, 0, 12)
	VZEROUPPER
	RET

#define ROW4x1_Q8_0(row, acc) \
	PREFETCHT0   2048(row) \
	VMOVDQU      2(row), Y6 \
	NEGSUM(Y6, Y1, Y7) \
	SCALE1(row) \
	VPDPBUSD     Y6, Y2, Y7 \
	VCVTDQ2PS    Y7, Y7 \
	VFMADD231PS  Y9, Y7, acc

// func dotQ8_0t4x1VNNI(w *byte, rb int, qx *int8, dx, sx *float32, nb int, out *float32)
TEXT ·dotQ8_0t4x1VNNI(SB), NOSPLIT, $0-56
	ONE_SETUP
	CONSTS
	MOVL         $0x80808080, AX
	VMOVD        AX, X1
	VPBROADCASTD X1, Y1

q80t41loop:
	VBROADCASTSS (DX), Y10
	VPXOR        (DI), Y1, Y2
	ROW4x1_Q8_0(SI, Y16)
	ROW4x1_Q8_0(R11, Y17)
	ROW4x1_Q8_0(R12, Y18)
	ROW4x1_Q8_0(BX, Y19)
	ADDQ $34, SI
	ADDQ $34, R11
	ADDQ $34, R12
	ADDQ $34, BX
	ADDQ $32, DI
	ADDQ $4, DX
	DECQ CX
	JNZ  q80t41loop

	MOVQ out+48(FP), R8
	OUT(Y16, 0)
	OUT(Y17, 4)
	OUT(Y18, 8)
	OUT(Y19, 12)
	VZEROUPPER
	RET


// Q4_K: one weight row against four activation rows (a 4x4 tile is four
// calls). Per super-block the row's scales and mins are unpacked once, as
// dotQ4_KAVX2 does, and serve the four activation rows; per pair
//
//	acc  += float(Σ q_w·q_x) · ((d·sc_s)·d_x,s)   per sub-block s, in order
//	accm += (dmin·m) · s_x                        eight lanes, one FMA
//
// out = hsum(acc) − hsum(accm), bitwise dotQ4_KAVX2's. Activation row c's
// quants are at DI + c·8·ds (k = 32·nb bytes, ds = 4·nb): (DI),
// (DI)(R10*8), (R9), (R9)(R10*8); its scales at (DX), (DX)(R10*1),
// (DX)(R10*2), (DX)(R14*1), sums likewise from R8. acc Y16…Y19, accm
// Y20…Y23, the scales (d·sc_s)·d_x,s of row c at 32c(SP).

#define HSUM(Y, X) \
	VEXTRACTF128 $1, Y, X8 \
	VADDPS       X8, X, X  \
	VMOVHLPS     X, X, X8  \
	VADDPS       X8, X, X  \
	VMOVSHDUP    X, X8     \
	VADDSS       X8, X, X

// Q4KPAIR(q, x, s, acc): acc += float(vpdpbusd(q, x)) · s(SP) broadcast.
#define Q4KPAIR(q, x, s, acc) \
	VPXOR            Y10, Y10, Y10 \
	VPDPBUSD         x, q, Y10 \
	VCVTDQ2PS        Y10, Y10 \
	VFMADD231PS.BCST s(SP), Y10, acc

// Q4KCHUNK4(qoff, xoff, s0): sub-blocks s0/4 (low nibbles) and s0/4+1
// (high) for the four activation rows.
#define Q4KCHUNK4(qoff, xoff, s0) \
	VMOVDQU qoff(SI), Y7 \
	VPAND   Y14, Y7, Y11 \
	VPSRLW  $4, Y7, Y7 \
	VPAND   Y14, Y7, Y12 \
	Q4KPAIR(Y11, xoff(DI), s0, Y16) \
	Q4KPAIR(Y12, xoff+32(DI), s0+4, Y16) \
	Q4KPAIR(Y11, xoff(DI)(R10*8), s0+32, Y17) \
	Q4KPAIR(Y12, xoff+32(DI)(R10*8), s0+36, Y17) \
	Q4KPAIR(Y11, xoff(R9), s0+64, Y18) \
	Q4KPAIR(Y12, xoff+32(R9), s0+68, Y18) \
	Q4KPAIR(Y11, xoff(R9)(R10*8), s0+96, Y19) \
	Q4KPAIR(Y12, xoff+32(R9)(R10*8), s0+100, Y19)

#define Q4KOUT(acc, accm, off) \
	VMOVAPS acc, Y0 \
	VMOVAPS accm, Y1 \
	HSUM(Y0, X0) \
	HSUM(Y1, X1) \
	VSUBSS  X1, X0, X0 \
	VMOVSS  X0, off(R8)

// func dotQ4_Kt1x4VNNI(w *byte, qx *int8, dx, sx *float32, ds, nsb int, out *float32)
TEXT ·dotQ4_Kt1x4VNNI(SB), NOSPLIT, $136-56
	MOVQ         w+0(FP), SI
	MOVQ         qx+8(FP), DI
	MOVQ         dx+16(FP), DX
	MOVQ         sx+24(FP), R8
	MOVQ         ds+32(FP), R10
	MOVQ         nsb+40(FP), AX
	MOVQ         AX, 128(SP)
	LEAQ         (R10)(R10*2), R14
	LEAQ         (DI)(R10*8), R9
	LEAQ         (R9)(R10*8), R9
	VPXORD       Y16, Y16, Y16
	VPXORD       Y17, Y17, Y17
	VPXORD       Y18, Y18, Y18
	VPXORD       Y19, Y19, Y19
	VPXORD       Y20, Y20, Y20
	VPXORD       Y21, Y21, Y21
	VPXORD       Y22, Y22, Y22
	VPXORD       Y23, Y23, Y23
	MOVL         $0x0f0f0f0f, AX
	VMOVD        AX, X14
	VPBROADCASTD X14, Y14

q4kt14loop:
	MOVL         4(SI), AX      // utmp0
	MOVL         8(SI), BX      // utmp1
	MOVL         12(SI), CX     // utmp2
	MOVL         CX, R11
	SHRL         $4, R11
	ANDL         $0x0f0f0f0f, R11
	MOVL         BX, R12
	SHRL         $6, R12
	ANDL         $0x03030303, R12
	SHLL         $4, R12
	ORL          R12, R11       // mins 4…7
	MOVL         BX, R13
	ANDL         $0x3f3f3f3f, R13 // mins 0…3
	MOVL         CX, R12
	ANDL         $0x0f0f0f0f, R12
	MOVL         AX, BX
	SHRL         $6, BX
	ANDL         $0x03030303, BX
	SHLL         $4, BX
	ORL          BX, R12        // scales 4…7
	ANDL         $0x3f3f3f3f, AX // scales 0…3
	SHLQ         $32, R12
	ORQ          R12, AX
	SHLQ         $32, R11
	ORQ          R11, R13
	VMOVQ        AX, X2
	VPMOVZXBD    X2, Y2
	VCVTDQ2PS    Y2, Y2         // sc
	VMOVQ        R13, X3
	VPMOVZXBD    X3, Y3
	VCVTDQ2PS    Y3, Y3         // m
	MOVL         (SI), BX
	VMOVD        BX, X4
	VCVTPH2PS    X4, X4         // d, dmin
	VBROADCASTSS X4, Y5
	VMOVSHDUP    X4, X6
	VBROADCASTSS X6, Y6
	VMULPS       Y5, Y2, Y2     // d·sc
	VMULPS       Y6, Y3, Y3     // dmin·m
	VMULPS       (DX), Y2, Y9
	VMOVUPS      Y9, 0(SP)
	VFMADD231PS  (R8), Y3, Y20
	VMULPS       (DX)(R10*1), Y2, Y9
	VMOVUPS      Y9, 32(SP)
	VFMADD231PS  (R8)(R10*1), Y3, Y21
	VMULPS       (DX)(R10*2), Y2, Y9
	VMOVUPS      Y9, 64(SP)
	VFMADD231PS  (R8)(R10*2), Y3, Y22
	VMULPS       (DX)(R14*1), Y2, Y9
	VMOVUPS      Y9, 96(SP)
	VFMADD231PS  (R8)(R14*1), Y3, Y23
	Q4KCHUNK4(16, 0, 0)
	Q4KCHUNK4(48, 64, 8)
	Q4KCHUNK4(80, 128, 16)
	Q4KCHUNK4(112, 192, 24)
	ADDQ         $144, SI
	ADDQ         $256, DI
	ADDQ         $256, R9
	ADDQ         $32, DX
	ADDQ         $32, R8
	DECQ         128(SP)
	JNZ          q4kt14loop

	MOVQ out+48(FP), R8
	Q4KOUT(Y16, Y20, 0)
	Q4KOUT(Y17, Y21, 4)
	Q4KOUT(Y18, Y22, 8)
	Q4KOUT(Y19, Y23, 12)
	VZEROUPPER
	RET

// The Q4_K 4x1 kernel (decode): four weight rows at SI, CX, R9, R14 (rb
// apart, as the other 4x1 kernels), one activation row; per pair the
// arithmetic of dotQ4_Kt1x4VNNI (so bitwise dotQ4_KAVX2's), acc Y16…Y19,
// accm Y20…Y23, row r's scales (d·sc_s)·d_x,s at 32r(SP), the activation
// row's two blocks of a chunk in Y12, Y13 (loaded once for the four rows).
// It prefetches 8 KiB ahead in each row (Llama-3.2-1B Q4_K decoded 11%
// faster than with 2 KiB, at one thread and two; Q4_0's 4x1 kernel was
// fastest at 2 KiB).

// Q4KSC(row, soff, accm): unpack row's super-block scales and mins;
// soff(SP) = (d·sc)·d_x, accm += (dmin·m)·s_x.
#define Q4KSC(row, soff, accm) \
	MOVL         4(row), AX \
	MOVL         8(row), BX \
	MOVL         12(row), R10 \
	MOVL         R10, R11 \
	SHRL         $4, R11 \
	ANDL         $0x0f0f0f0f, R11 \
	MOVL         BX, R12 \
	SHRL         $6, R12 \
	ANDL         $0x03030303, R12 \
	SHLL         $4, R12 \
	ORL          R12, R11 \
	MOVL         BX, R13 \
	ANDL         $0x3f3f3f3f, R13 \
	MOVL         R10, R12 \
	ANDL         $0x0f0f0f0f, R12 \
	MOVL         AX, BX \
	SHRL         $6, BX \
	ANDL         $0x03030303, BX \
	SHLL         $4, BX \
	ORL          BX, R12 \
	ANDL         $0x3f3f3f3f, AX \
	SHLQ         $32, R12 \
	ORQ          R12, AX \
	SHLQ         $32, R11 \
	ORQ          R11, R13 \
	VMOVQ        AX, X2 \
	VPMOVZXBD    X2, Y2 \
	VCVTDQ2PS    Y2, Y2 \
	VMOVQ        R13, X3 \
	VPMOVZXBD    X3, Y3 \
	VCVTDQ2PS    Y3, Y3 \
	MOVL         (row), BX \
	VMOVD        BX, X4 \
	VCVTPH2PS    X4, X4 \
	VBROADCASTSS X4, Y5 \
	VMOVSHDUP    X4, X6 \
	VBROADCASTSS X6, Y6 \
	VMULPS       Y5, Y2, Y2 \
	VMULPS       (DX), Y2, Y2 \
	VMULPS       Y6, Y3, Y3 \
	VFMADD231PS  (R8), Y3, accm \
	VMOVUPS      Y2, soff(SP)

// Q4KROW1(row, qoff, s, acc): sub-blocks s/4 (low nibbles, x in Y12) and
// s/4+1 (high, x in Y13) of one weight row.
#define Q4KROW1(row, qoff, s, acc) \
	VMOVDQU          qoff(row), Y7 \
	VPAND            Y14, Y7, Y8 \
	VPSRLW           $4, Y7, Y7 \
	VPAND            Y14, Y7, Y7 \
	VPXOR            Y10, Y10, Y10 \
	VPDPBUSD         Y12, Y8, Y10 \
	VCVTDQ2PS        Y10, Y10 \
	VFMADD231PS.BCST s(SP), Y10, acc \
	VPXOR            Y11, Y11, Y11 \
	VPDPBUSD         Y13, Y7, Y11 \
	VCVTDQ2PS        Y11, Y11 \
	VFMADD231PS.BCST s+4(SP), Y11, acc

#define Q4KCHUNK4x1(qoff, xoff, s0) \
	VMOVDQU xoff(DI), Y12 \
	VMOVDQU xoff+32(DI), Y13 \
	Q4KROW1(SI, qoff, s0, Y16) \
	Q4KROW1(CX, qoff, s0+32, Y17) \
	Q4KROW1(R9, qoff, s0+64, Y18) \
	Q4KROW1(R14, qoff, s0+96, Y19)

// func dotQ4_Kt4x1VNNI(w *byte, rb int, qx *int8, dx, sx *float32, nsb int, out *float32)
TEXT ·dotQ4_Kt4x1VNNI(SB), NOSPLIT, $136-56
	MOVQ         w+0(FP), SI
	MOVQ         rb+8(FP), CX
	MOVQ         qx+16(FP), DI
	MOVQ         dx+24(FP), DX
	MOVQ         sx+32(FP), R8
	MOVQ         nsb+40(FP), AX
	MOVQ         AX, 128(SP)
	LEAQ         (SI)(CX*2), R9
	LEAQ         (R9)(CX*1), R14
	ADDQ         SI, CX
	VPXORD       Y16, Y16, Y16
	VPXORD       Y17, Y17, Y17
	VPXORD       Y18, Y18, Y18
	VPXORD       Y19, Y19, Y19
	VPXORD       Y20, Y20, Y20
	VPXORD       Y21, Y21, Y21
	VPXORD       Y22, Y22, Y22
	VPXORD       Y23, Y23, Y23
	MOVL         $0x0f0f0f0f, AX
	VMOVD        AX, X14
	VPBROADCASTD X14, Y14

q4kt41loop:
	PREFETCHT0 8192(SI)
	PREFETCHT0 8192(CX)
	PREFETCHT0 8192(R9)
	PREFETCHT0 8192(R14)
	Q4KSC(SI, 0, Y20)
	Q4KSC(CX, 32, Y21)
	Q4KSC(R9, 64, Y22)
	Q4KSC(R14, 96, Y23)
	Q4KCHUNK4x1(16, 0, 0)
	Q4KCHUNK4x1(48, 64, 8)
	Q4KCHUNK4x1(80, 128, 16)
	Q4KCHUNK4x1(112, 192, 24)
	ADDQ $144, SI
	ADDQ $144, CX
	ADDQ $144, R9
	ADDQ $144, R14
	ADDQ $256, DI
	ADDQ $32, DX
	ADDQ $32, R8
	DECQ 128(SP)
	JNZ  q4kt41loop

	MOVQ out+48(FP), R8
	Q4KOUT(Y16, Y20, 0)
	Q4KOUT(Y17, Y21, 4)
	Q4KOUT(Y18, Y22, 8)
	Q4KOUT(Y19, Y23, 12)
	VZEROUPPER
	RET
