//go:build amd64 && !purego

#include "textflag.h"
#include "hsum_amd64.h"

// The prefill tiles of dotmoretile.go: one unpacked weight row (64 bytes
// per block of 32: int8 values, then 16 int16 scales; d_b float32 apart)
// against four activation rows. Per block and activation row they do
// what dotmore_amd64.s does per block: Σ = vpmaddwd(vpmaddubsw(|w|,
// x·sign w), scales) (or vpmaddubsw(w, x) where no value is negative:
// the same int16 sums), acc += float(Σ)·(d_b·d_x) lane by lane, HSUM at
// the end, so each value is bitwise the one-row kernel's.
//
// Registers: SI the row, DX its d_b, CX blocks left, DI the activations
// of row 0 (R8 = xs, R11 = 3·xs bytes on), R9 their scales (R10, R12 =
// ds, 3·ds bytes on); Y0, Y8, Y9, Y10 the four rows' sums; Y1 the block's
// values, Y3 = |Y1|, Y6 its scales. The blocks go by eights, the
// products d_b·d_x of the eight blocks and four rows first formed by
// vmulps into 0…127(SP); then one by one.

// TOKS(x, m, acc): one row's step, signed values: its 32 values at x,
// its d_b·d_x broadcast from m.
#define TOKS(x, m, acc) \
	VMOVDQU      x, Y2         \
	VPSIGNB      Y1, Y2, Y4    \
	VPMADDUBSW   Y4, Y3, Y4    \
	VPMADDWD     Y6, Y4, Y4    \
	VCVTDQ2PS    Y4, Y4        \
	VBROADCASTSS m, Y5         \
	VFMADD231PS  Y5, Y4, acc

// TOKU(x, m, acc): the same for values ≥ 0 (Y1 read as unsigned).
#define TOKU(x, m, acc) \
	VPMADDUBSW   x, Y1, Y4     \
	VPMADDWD     Y6, Y4, Y4    \
	VCVTDQ2PS    Y4, Y4        \
	VBROADCASTSS m, Y5         \
	VFMADD231PS  Y5, Y4, acc

// TOKSV(x, m, acc), TOKUV(x, m, acc): TOKS and TOKU for rows whose
// scales are all 1, by AVX-512 VNNI: vpdpbusd's int32 lanes (four
// products each, exact) are vpmaddwd(vpmaddubsw(·), 1)'s.
#define TOKSV(x, m, acc) \
	VMOVDQU      x, Y2         \
	VPSIGNB      Y1, Y2, Y2    \
	VPXOR        Y4, Y4, Y4    \
	VPDPBUSD     Y2, Y3, Y4    \
	VCVTDQ2PS    Y4, Y4        \
	VBROADCASTSS m, Y5         \
	VFMADD231PS  Y5, Y4, acc

#define TOKUV(x, m, acc) \
	VPXOR        Y4, Y4, Y4    \
	VPDPBUSD     x, Y1, Y4     \
	VCVTDQ2PS    Y4, Y4        \
	VBROADCASTSS m, Y5         \
	VFMADD231PS  Y5, Y4, acc

// BLKS(TOK, b), BLKU(TOK, b): block b of a group of eight (signed
// values, or ≥ 0), its products at 4b(SP), 32+4b(SP), 64+4b(SP) and
// 96+4b(SP).
#define BLKS(TOK, b) \
	VMOVDQU 64*b(SI), Y1   \
	VPSIGNB Y1, Y1, Y3     \
	BLKROWS(TOK, b)

#define BLKU(TOK, b) \
	VMOVDQU 64*b(SI), Y1   \
	BLKROWS(TOK, b)

// BLKM(TOK, b): BLKU and Q5_1's minima, as dotQ5_1AVX2 sums them: lane
// c of X11 += m_b·s_x,b of row c (vmulps, vaddps: each lane as vmulss,
// vaddss), m_b at 4b(R14), the four rows' s_x,b at 16b(AX)(R13*4).
#define BLKM(TOK, b) \
	BLKU(TOK, b)                        \
	VBROADCASTSS 4*b(R14), X15          \
	VMULPS       16*b(AX)(R13*4), X15, X2 \
	VADDPS       X2, X11, X11

#define BLKROWS(TOK, b) \
	VMOVDQU 64*b+32(SI), Y6 \
	TOK(32*b(DI), 4*b(SP), Y0)          \
	TOK(32*b(DI)(R8*1), 32+4*b(SP), Y8)  \
	TOK(32*b(DI)(R8*2), 64+4*b(SP), Y9)  \
	TOK(32*b(DI)(R11*1), 96+4*b(SP), Y10)

// MULS(m, off): off(SP) = the eight d_b (Y7) times the eight d_x at m.
#define MULS(m, off) \
	VMULPS  m, Y7, Y5 \
	VMOVUPS Y5, off(SP)

// TILE4(BLK, TOK, labels…): a kernel's body.
#define TILE4(BLK, TOK, FIN, group, one, done) \
	MOVQ u+0(FP), SI              \
	MOVQ ud+8(FP), DX             \
	MOVQ nb+16(FP), CX            \
	MOVQ qx+24(FP), DI            \
	MOVQ xs+32(FP), R8            \
	MOVQ dx+40(FP), R9            \
	MOVQ ds+48(FP), R10           \
	SHLQ $2, R10                  \
	LEAQ (R8)(R8*2), R11          \
	LEAQ (R10)(R10*2), R12        \
	ZERO4(Y0, Y8, Y9, Y10)        \
	CMPQ CX, $8                   \
	JLT  one                      \
group:                            \
	VMOVUPS (DX), Y7              \
	MULS((R9), 0)                 \
	MULS((R9)(R10*1), 32)         \
	MULS((R9)(R10*2), 64)         \
	MULS((R9)(R12*1), 96)         \
	BLK(TOK, 0)                   \
	BLK(TOK, 1)                   \
	BLK(TOK, 2)                   \
	BLK(TOK, 3)                   \
	BLK(TOK, 4)                   \
	BLK(TOK, 5)                   \
	BLK(TOK, 6)                   \
	BLK(TOK, 7)                   \
	ADDQ $512, SI                 \
	ADDQ $32, DX                  \
	ADDQ $256, DI                 \
	ADDQ $32, R9                  \
	ADDQ $32, R13                 \
	ADDQ $32, R14                 \
	SUBQ $8, CX                   \
	CMPQ CX, $8                   \
	JGE  group                    \
one:                              \
	TESTQ CX, CX                  \
	JZ    done                    \
	VBROADCASTSS (DX), Y7         \
	VMULSS (R9), X7, X5           \
	VMOVSS X5, 0(SP)              \
	VMULSS (R9)(R10*1), X7, X5    \
	VMOVSS X5, 32(SP)             \
	VMULSS (R9)(R10*2), X7, X5    \
	VMOVSS X5, 64(SP)             \
	VMULSS (R9)(R12*1), X7, X5    \
	VMOVSS X5, 96(SP)             \
	BLK(TOK, 0)                   \
	ADDQ $64, SI                  \
	ADDQ $4, DX                   \
	ADDQ $32, DI                  \
	ADDQ $4, R9                   \
	ADDQ $4, R13                  \
	ADDQ $4, R14                  \
	DECQ CX                       \
	JMP  one                      \
done:                             \
	MOVQ out+56(FP), BX           \
	HSUM(Y0, X0, X1)              \
	HSUM(Y8, X8, X1)              \
	HSUM(Y9, X9, X1)              \
	HSUM(Y10, X10, X1)            \
	FIN                           \
	MOVSS X0, 0(BX)               \
	MOVSS X8, 4(BX)               \
	MOVSS X9, 8(BX)               \
	MOVSS X10, 12(BX)             \
	VZEROUPPER                    \
	RET

// NOFIN: the sums are the values. FINM: Q5_1's, plus the minima (lane
// c of X11 for row c).
#define NOFIN NOP
#define FINM \
	VADDSS    X11, X0, X0     \
	VMOVSHDUP X11, X12        \
	VADDSS    X12, X8, X8     \
	VMOVHLPS  X11, X11, X12   \
	VADDSS    X12, X9, X9     \
	VSHUFPS   $3, X11, X11, X12 \
	VADDSS    X12, X10, X10

// func q8Tile4AVX2(u *byte, ud *float32, nb int, qx *int8, xs int, dx *float32, ds int, out *[4]float32)
TEXT ·q8Tile4AVX2(SB), NOSPLIT, $128-64
	TILE4(BLKS, TOKS, NOFIN, sgroup, sone, sdone)

// func q8Tile4UAVX2(u *byte, ud *float32, nb int, qx *int8, xs int, dx *float32, ds int, out *[4]float32)
//
// q8Tile4AVX2 for rows whose values are all ≥ 0.
TEXT ·q8Tile4UAVX2(SB), NOSPLIT, $128-64
	TILE4(BLKU, TOKU, NOFIN, ugroup, uone, udone)

// func q8Tile4SVNNI(u *byte, ud *float32, nb int, qx *int8, xs int, dx *float32, ds int, out *[4]float32)
//
// q8Tile4AVX2 for rows whose scales are all 1 (AVX-512 VNNI).
TEXT ·q8Tile4SVNNI(SB), NOSPLIT, $128-64
	TILE4(BLKS, TOKSV, NOFIN, svgroup, svone, svdone)

// func q8Tile4MAVX2(u *byte, ud *float32, nb int, qx *int8, xs int, dx *float32, ds int, out *[4]float32, m, sx4 *float32)
//
// q8Tile4UAVX2 plus Q5_1's minima (m per block at m, the four rows'
// scaled sums at sx4, block by block: s_x,b of row c at sx4[4b+c]).
TEXT ·q8Tile4MAVX2(SB), NOSPLIT, $128-80
	MOVQ   m+64(FP), R14
	MOVQ   sx4+72(FP), AX
	XORQ   R13, R13
	VXORPS X11, X11, X11
	TILE4(BLKM, TOKU, FINM, mgroup, mone, mdone)

// func minsK8x4AVX2(m, dmin, sx *float32, nsb, ds int, out *[4]float32)
//
// Q5_K's minima of four activation rows (scaled sums ds floats apart)
// as dotQ5_KAVX2 sums them: lane s += (m_s·s_x,s)·dmin (fused),
// super-block after super-block, then HSUM.
TEXT ·minsK8x4AVX2(SB), NOSPLIT, $0-48
	MOVQ m+0(FP), SI
	MOVQ dmin+8(FP), DX
	MOVQ sx+16(FP), R9
	MOVQ nsb+24(FP), CX
	MOVQ ds+32(FP), R10
	MOVQ out+40(FP), BX
	SHLQ $2, R10
	LEAQ (R10)(R10*2), R12
	ZERO4(Y0, Y8, Y9, Y10)

minsloop:
	VMOVUPS      (SI), Y6
	VBROADCASTSS (DX), Y7
	VMULPS       (R9), Y6, Y5
	VFMADD231PS  Y7, Y5, Y0
	VMULPS       (R9)(R10*1), Y6, Y5
	VFMADD231PS  Y7, Y5, Y8
	VMULPS       (R9)(R10*2), Y6, Y5
	VFMADD231PS  Y7, Y5, Y9
	VMULPS       (R9)(R12*1), Y6, Y5
	VFMADD231PS  Y7, Y5, Y10
	ADDQ         $32, SI
	ADDQ         $4, DX
	ADDQ         $32, R9
	DECQ         CX
	JNZ          minsloop
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

// func q8Tile4MVNNI(u *byte, ud *float32, nb int, qx *int8, xs int, dx *float32, ds int, out *[4]float32, m, sx4 *float32)
//
// q8Tile4MAVX2 by AVX-512 VNNI (Q5_1's scales are all 1).
TEXT ·q8Tile4MVNNI(SB), NOSPLIT, $128-80
	MOVQ   m+64(FP), R14
	MOVQ   sx4+72(FP), AX
	XORQ   R13, R13
	VXORPS X11, X11, X11
	TILE4(BLKM, TOKUV, FINM, mvgroup, mvone, mvdone)
