//go:build amd64 && !purego

#include "textflag.h"

// Q4_K tile kernels (AVX-512 VNNI on 256-bit vectors): one weight row
// against four activation rows (prefill) or four weight rows against one
// (decode) per call, so that each weight super-block is unpacked once for
// all activation rows, with four independent accumulators instead of one
// dependency chain. Each (weight row, activation row) pair keeps the
// one-row kernel's (dotQ4_KAVX2's) float lanes and float steps; only the
// exact integer sums are formed differently (vpdpbusd), so every result
// is bitwise the one-row kernel's. (Q8_0, Q4_0 and Q4_1 weights are
// packed on this path, packed_amd64.s.)

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
