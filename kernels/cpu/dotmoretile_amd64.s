//go:build amd64 && !purego

#include "textflag.h"
#include "hsum_amd64.h"

// The prefill tile of dotmoretile.go: one unpacked weight row (64 bytes
// per block of 32: int8 values, then 16 int16 scales; d_b float32 apart)
// against four activation rows. Per block and activation row it does
// what dotmore_amd64.s does per block: Σ = vpmaddwd(vpmaddubsw(|w|,
// x·sign w), scales), acc += float(Σ)·(d_b·d_x) lane by lane, HSUM at
// the end, so each value is bitwise the one-row kernel's.

// QTOK(x, dxa, acc): one activation row's step: its 32 values at x, its
// block scale at dxa (Y1 the values, Y3 = |Y1|, Y6 the scales, Y7 = d_b).
#define QTOK(x, dxa, acc) \
	VMOVDQU      x, Y2         \
	VPSIGNB      Y1, Y2, Y4    \
	VPMADDUBSW   Y4, Y3, Y4    \
	VPMADDWD     Y6, Y4, Y4    \
	VCVTDQ2PS    Y4, Y4        \
	VBROADCASTSS dxa, Y5       \
	VMULPS       Y7, Y5, Y5    \
	VFMADD231PS  Y5, Y4, acc

// func q8Tile4AVX2(u *byte, ud *float32, nb int, qx *int8, xs int, dx *float32, ds int, out *[4]float32)
TEXT ·q8Tile4AVX2(SB), NOSPLIT, $0-64
	MOVQ u+0(FP), SI
	MOVQ ud+8(FP), DX
	MOVQ nb+16(FP), CX
	MOVQ qx+24(FP), DI
	MOVQ xs+32(FP), R8
	MOVQ dx+40(FP), R9
	MOVQ ds+48(FP), R10
	MOVQ out+56(FP), BX
	SHLQ $2, R10                 // ds in bytes
	LEAQ (R8)(R8*2), R11         // 3·xs
	LEAQ (R10)(R10*2), R12       // 3·ds bytes
	ZERO4(Y0, Y8, Y9, Y10)

tileloop:
	VMOVDQU      (SI), Y1
	VPSIGNB      Y1, Y1, Y3
	VMOVDQU      32(SI), Y6
	VBROADCASTSS (DX), Y7
	QTOK((DI), (R9), Y0)
	QTOK((DI)(R8*1), (R9)(R10*1), Y8)
	QTOK((DI)(R8*2), (R9)(R10*2), Y9)
	QTOK((DI)(R11*1), (R9)(R12*1), Y10)
	ADDQ         $64, SI
	ADDQ         $4, DX
	ADDQ         $32, DI
	ADDQ         $4, R9
	DECQ         CX
	JNZ          tileloop
	HSUM(Y0, X0, X1)
	MOVSS        X0, 0(BX)
	HSUM(Y8, X8, X1)
	MOVSS        X8, 4(BX)
	HSUM(Y9, X9, X1)
	MOVSS        X9, 8(BX)
	HSUM(Y10, X10, X1)
	MOVSS        X10, 12(BX)
	VZEROUPPER
	RET

// func minsK8AVX2(m, dmin, sx *float32, nsb int) float32
//
// Q5_K's minima as dotQ5_KAVX2 sums them: lane s += (m_s·s_x,s)·dmin
// (fused), super-block after super-block, then HSUM.
TEXT ·minsK8AVX2(SB), NOSPLIT, $0-36
	MOVQ   m+0(FP), SI
	MOVQ   dmin+8(FP), DX
	MOVQ   sx+16(FP), R9
	MOVQ   nsb+24(FP), CX
	VXORPS Y10, Y10, Y10

minsloop:
	VMOVUPS      (SI), Y6
	VMULPS       (R9), Y6, Y6
	VBROADCASTSS (DX), Y7
	VFMADD231PS  Y7, Y6, Y10
	ADDQ         $32, SI
	ADDQ         $4, DX
	ADDQ         $32, R9
	DECQ         CX
	JNZ          minsloop
	HSUM(Y10, X10, X8)
	VZEROUPPER
	MOVSS        X10, ret+32(FP)
	RET
