//go:build amd64 && !purego

#include "textflag.h"
#include "hsum_amd64.h"

// AVX2 + FMA + F16C kernels of the fast path (see dot.go). The one-row
// kernels prefetch the weight 2 KiB ahead (decode streams every weight
// from memory once per token; measured 10-11 → 14-15 GB/s on one core of
// the 2-core EPYC this was tuned on). Lengths are
// whole vectors (n a multiple of 8, nb blocks of 32); the Go wrappers in
// dot_amd64.go handle the rest. Every kernel visits its elements in one
// fixed order, whatever the caller, and reduces its eight lanes the same
// way:
//
//	lanes l and l+4, then the two halves of that, then the two left.


// DOT4ACC(load4, load1, wstep, loop32, loop8, done): the one-row dot
// of the weights at SI (wstep bytes per 32 values) and the float32
// activations at DI, n (CX) a multiple of 8: four accumulators Y0…Y3
// take the 8-chunks of each 32 in turn (load4 leaving the four weight
// chunks in Y4…Y7 as float32), accumulator 0 the 8-chunks past the last
// 32 (load1 into Y4); then (a0+a1)+(a2+a3), reduced by HSUM_Y0_X0 into
// ret.
#define DOT4ACC(load4, load1, wstep, loop32, loop8, done) \
	ZERO4(Y0, Y1, Y2, Y3)         \
loop32: \
	CMPQ        CX, $32           \
	JLT         loop8             \
	PREFETCHT0  2048(SI)          \
	load4                         \
	VFMADD231PS (DI), Y4, Y0      \
	VFMADD231PS 32(DI), Y5, Y1    \
	VFMADD231PS 64(DI), Y6, Y2    \
	VFMADD231PS 96(DI), Y7, Y3    \
	ADDQ        $wstep, SI        \
	ADDQ        $128, DI          \
	SUBQ        $32, CX           \
	JMP         loop32            \
loop8: \
	CMPQ        CX, $8            \
	JLT         done              \
	load1                         \
	VFMADD231PS (DI), Y4, Y0      \
	ADDQ        $wstep/4, SI      \
	ADDQ        $32, DI           \
	SUBQ        $8, CX            \
	JMP         loop8             \
done: \
	VADDPS Y1, Y0, Y0             \
	VADDPS Y3, Y2, Y2             \
	VADDPS Y2, Y0, Y0             \
	HSUM_Y0_X0                    \
	VZEROUPPER                    \
	MOVSS  X0, ret+24(FP)         \
	RET

// The weight loads: float32 as they are, float16 converted (VCVTPH2PS),
// bfloat16 widened and shifted into float32's top half.
#define LOAD4_F32 \
	VMOVUPS (SI), Y4   \
	VMOVUPS 32(SI), Y5 \
	VMOVUPS 64(SI), Y6 \
	VMOVUPS 96(SI), Y7

#define LOAD1_F32 VMOVUPS (SI), Y4

#define LOAD4_F16 \
	VCVTPH2PS (SI), Y4   \
	VCVTPH2PS 16(SI), Y5 \
	VCVTPH2PS 32(SI), Y6 \
	VCVTPH2PS 48(SI), Y7

#define LOAD1_F16 VCVTPH2PS (SI), Y4

#define LOAD4_BF16 \
	VPMOVZXWD (SI), Y4   \
	VPMOVZXWD 16(SI), Y5 \
	VPMOVZXWD 32(SI), Y6 \
	VPMOVZXWD 48(SI), Y7 \
	VPSLLD    $16, Y4, Y4 \
	VPSLLD    $16, Y5, Y5 \
	VPSLLD    $16, Y6, Y6 \
	VPSLLD    $16, Y7, Y7

#define LOAD1_BF16 \
	VPMOVZXWD (SI), Y4 \
	VPSLLD    $16, Y4, Y4

// func dotF32AVX2(a, b *float32, n int) float32
TEXT ·dotF32AVX2(SB), NOSPLIT, $0-28
	MOVQ a+0(FP), SI
	MOVQ b+8(FP), DI
	MOVQ n+16(FP), CX
	DOT4ACC(LOAD4_F32, LOAD1_F32, 128, f32loop32, f32loop8, f32done)

// func dotF16AVX2(w *uint16, x *float32, n int) float32
TEXT ·dotF16AVX2(SB), NOSPLIT, $0-28
	MOVQ w+0(FP), SI
	MOVQ x+8(FP), DI
	MOVQ n+16(FP), CX
	DOT4ACC(LOAD4_F16, LOAD1_F16, 64, f16loop32, f16loop8, f16done)

// func dotBF16AVX2(w *uint16, x *float32, n int) float32
TEXT ·dotBF16AVX2(SB), NOSPLIT, $0-28
	MOVQ w+0(FP), SI
	MOVQ x+8(FP), DI
	MOVQ n+16(FP), CX
	DOT4ACC(LOAD4_BF16, LOAD1_BF16, 64, bf16loop32, bf16loop8, bf16done)

// func axpyF32AVX2(a float32, x, y *float32, n int)
TEXT ·axpyF32AVX2(SB), NOSPLIT, $0-32
	VBROADCASTSS a+0(FP), Y0
	MOVQ         x+8(FP), SI
	MOVQ         y+16(FP), DI
	MOVQ         n+24(FP), CX

axf32loop:
	CMPQ        CX, $8
	JLT         axf32done
	VMOVUPS     (DI), Y1
	VFMADD231PS (SI), Y0, Y1
	VMOVUPS     Y1, (DI)
	ADDQ        $32, SI
	ADDQ        $32, DI
	SUBQ        $8, CX
	JMP         axf32loop

axf32done:
	VZEROUPPER
	RET

// func axpyF16AVX2(a float32, x *uint16, y *float32, n int)
TEXT ·axpyF16AVX2(SB), NOSPLIT, $0-32
	VBROADCASTSS a+0(FP), Y0
	MOVQ         x+8(FP), SI
	MOVQ         y+16(FP), DI
	MOVQ         n+24(FP), CX

axf16loop:
	CMPQ        CX, $8
	JLT         axf16done
	VCVTPH2PS   (SI), Y2
	VMOVUPS     (DI), Y1
	VFMADD231PS Y2, Y0, Y1
	VMOVUPS     Y1, (DI)
	ADDQ        $16, SI
	ADDQ        $32, DI
	SUBQ        $8, CX
	JMP         axf16loop

axf16done:
	VZEROUPPER
	RET

// F32X8(sym, off, v): the eight float32 lanes at sym<>+off all v (its
// bits).
#define F32X8(sym, off, v) \
	DATA sym<>+off(SB)/4, $v    \
	DATA sym<>+off+4(SB)/4, $v  \
	DATA sym<>+off+8(SB)/4, $v  \
	DATA sym<>+off+12(SB)/4, $v \
	DATA sym<>+off+16(SB)/4, $v \
	DATA sym<>+off+20(SB)/4, $v \
	DATA sym<>+off+24(SB)/4, $v \
	DATA sym<>+off+28(SB)/4, $v

// exp in float32, eight lanes: ggml's ggml_v_expf (AVX2), its fast path
// only, with the input first clamped to [−87, 88] so that the exponent
// n stays in [−126, 127] (below −87 the result is ~1e−38 instead of
// smaller: an absolute error under 1e−37). About 1.5 ulp.
//
// Constants, eight lanes each: r = 0x1.8p23, log2(e), ln2 high and low
// parts, 1.0, the polynomial p0…p4, the clamp bounds.

F32X8(expc, 0, 0x4b400000) // r = 0x1.8p23
F32X8(expc, 32, 0x3fb8aa3b) // log2(e)
F32X8(expc, 64, 0x3f317200) // ln2, high part
F32X8(expc, 96, 0x35bfbe8e) // ln2, low part
F32X8(expc, 128, 0x3f800000) // 1.0
F32X8(expc, 160, 0x3c072010) // p0
F32X8(expc, 192, 0x3d2b9f17) // p1
F32X8(expc, 224, 0x3e2aaf33) // p2
F32X8(expc, 256, 0x3efffedb) // p3
F32X8(expc, 288, 0x3f7ffff6) // p4
F32X8(expc, 320, 0xc2ae0000) // −87, the lower clamp
F32X8(expc, 352, 0x42b00000) // 88, the upper clamp
GLOBL expc<>(SB), RODATA|NOPTR, $384

// EXP8(x, out) sets out = exp(x) for Y registers x (clobbered) and out,
// using Y2…Y5 as temporaries (x and out may not be among them):
//
//	z = x·log2e + r, n = z − r, b = x − n·ln2hi − n·ln2lo, k = 2^n
//	(z's bits shifted into the exponent), u = b²,
//	out = ((p0·b + p1)·u + (p2·b + p3))·u + p4·b, then out·k + k.
#define EXP8(x, out) \
	VMAXPS       expc<>+320(SB), x, x   \
	VMINPS       expc<>+352(SB), x, x   \
	VMOVUPS      expc<>+0(SB), Y2       \
	VFMADD231PS  expc<>+32(SB), x, Y2   \
	VSUBPS       expc<>+0(SB), Y2, Y3   \
	VFNMADD231PS expc<>+64(SB), Y3, x   \
	VFNMADD231PS expc<>+96(SB), Y3, x   \
	VPSLLD       $23, Y2, Y2            \
	VPADDD       expc<>+128(SB), Y2, Y2 \
	VMULPS       x, x, Y3               \
	VMOVUPS      expc<>+192(SB), out    \
	VFMADD231PS  expc<>+160(SB), x, out \
	VMOVUPS      expc<>+256(SB), Y4     \
	VFMADD231PS  expc<>+224(SB), x, Y4  \
	VFMADD213PS  Y4, Y3, out            \
	VMULPS       expc<>+288(SB), x, Y5  \
	VFMADD213PS  Y5, Y3, out            \
	VFMADD213PS  Y2, Y2, out

// func expF32AVX2(x *float32, n int)
TEXT ·expF32AVX2(SB), NOSPLIT, $0-16
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX

exploop:
	CMPQ    CX, $8
	JLT     expdone
	VMOVUPS (SI), Y1
	EXP8(Y1, Y7)
	VMOVUPS Y7, (SI)
	ADDQ    $32, SI
	SUBQ    $8, CX
	JMP     exploop

expdone:
	VZEROUPPER
	RET

// func expSubSumAVX2(x *float32, n int, m float32, lanes *[4]float64)
// x[i] = exp(x[i] − m) by EXP8, eight at a time; the results widened to
// float64 and added into Y9's four lanes (elements 0…3 of each eight,
// then 4…7: lane j takes the elements ≡ j mod 4 in order).
TEXT ·expSubSumAVX2(SB), NOSPLIT, $0-32
	MOVQ         x+0(FP), SI
	MOVQ         n+8(FP), CX
	VBROADCASTSS m+16(FP), Y8
	VXORPD       Y9, Y9, Y9

esloop:
	CMPQ         CX, $8
	JLT          esdone
	VMOVUPS      (SI), Y1
	VSUBPS       Y8, Y1, Y1
	EXP8(Y1, Y7)
	VMOVUPS      Y7, (SI)
	VCVTPS2PD    X7, Y10
	VEXTRACTF128 $1, Y7, X11
	VCVTPS2PD    X11, Y11
	VADDPD       Y10, Y9, Y9
	VADDPD       Y11, Y9, Y9
	ADDQ         $32, SI
	SUBQ         $8, CX
	JMP          esloop

esdone:
	MOVQ    lanes+24(FP), DI
	VMOVUPD Y9, (DI)
	VZEROUPPER
	RET

// func siluMulAVX2(gate, u, dst *float32, n int)
// dst = g / (1 + exp(−g)) · u
TEXT ·siluMulAVX2(SB), NOSPLIT, $0-32
	MOVQ   gate+0(FP), SI
	MOVQ   u+8(FP), DI
	MOVQ   dst+16(FP), DX
	MOVQ   n+24(FP), CX
	VXORPS Y10, Y10, Y10

siluloop:
	CMPQ    CX, $8
	JLT     siludone
	VMOVUPS (SI), Y8
	VSUBPS  Y8, Y10, Y1             // −g
	EXP8(Y1, Y7)
	VADDPS  expc<>+128(SB), Y7, Y7  // 1 + exp(−g)
	VDIVPS  Y7, Y8, Y8              // g / (1 + exp(−g))
	VMULPS  (DI), Y8, Y8
	VMOVUPS Y8, (DX)
	ADDQ    $32, SI
	ADDQ    $32, DI
	ADDQ    $32, DX
	SUBQ    $8, CX
	JMP     siluloop

siludone:
	VZEROUPPER
	RET

// Activation quantisation (quantizeQ8 in dot.go), a block of 32 floats at
// a time, with the same float32 steps: amax = max|x|, d = amax/127,
// id = 1/d (0 when d = 0), q = round(x·id) halves away from zero (the
// truncation plus ±1 where the dropped fraction is ≥ 0.5), s = d·Σq.
F32X8(qabs, 0, 0x7fffffff)
GLOBL qabs<>(SB), RODATA|NOPTR, $32
F32X8(qhalf, 0, 0x3f000000)
GLOBL qhalf<>(SB), RODATA|NOPTR, $32
F32X8(qone, 0, 0x3f800000)
GLOBL qone<>(SB), RODATA|NOPTR, $32
DATA qperm<>+0(SB)/4, $0x00000000
DATA qperm<>+4(SB)/4, $0x00000004
DATA qperm<>+8(SB)/4, $0x00000001
DATA qperm<>+12(SB)/4, $0x00000005
DATA qperm<>+16(SB)/4, $0x00000002
DATA qperm<>+20(SB)/4, $0x00000006
DATA qperm<>+24(SB)/4, $0x00000003
DATA qperm<>+28(SB)/4, $0x00000007
GLOBL qperm<>(SB), RODATA|NOPTR, $32
DATA q127<>+0(SB)/4, $0x42fe0000
GLOBL q127<>(SB), RODATA|NOPTR, $4

// QROUND(y, acc) rounds y (= x·id) half away from zero in place and adds
// it to acc; uses Y8…Y10. Y15 = abs mask, Y13 = 0.5, Y12 = 1.0.
#define QROUND(y, acc) \
	VROUNDPS $3, y, Y8       \
	VSUBPS   Y8, y, Y9       \
	VANDPS   Y15, Y9, Y9     \
	VCMPPS   $0x1d, Y13, Y9, Y9 \
	VANDNPS  y, Y15, Y10     \
	VORPS    Y12, Y10, Y10   \
	VANDPS   Y9, Y10, Y10    \
	VADDPS   Y10, Y8, y      \
	VADDPS   y, acc, acc

// func quantizeQ8AVX2(x *float32, qx *int8, dx, sx *float32, nb int)
TEXT ·quantizeQ8AVX2(SB), NOSPLIT, $0-40
	MOVQ    x+0(FP), SI
	MOVQ    qx+8(FP), DI
	MOVQ    dx+16(FP), DX
	MOVQ    sx+24(FP), R8
	MOVQ    nb+32(FP), CX
	VMOVUPS qabs<>(SB), Y15
	VMOVUPS qhalf<>(SB), Y13
	VMOVUPS qone<>(SB), Y12
	VMOVUPS qperm<>(SB), Y14
	TESTQ   CX, CX
	JZ      qdone

qloop:
	VMOVUPS      (SI), Y0
	VMOVUPS      32(SI), Y1
	VMOVUPS      64(SI), Y2
	VMOVUPS      96(SI), Y3
	VANDPS       Y15, Y0, Y4
	VANDPS       Y15, Y1, Y5
	VANDPS       Y15, Y2, Y6
	VANDPS       Y15, Y3, Y7
	VMAXPS       Y5, Y4, Y4
	VMAXPS       Y7, Y6, Y6
	VMAXPS       Y6, Y4, Y4
	HMAX(Y4, X4, X5)             // amax
	VDIVSS       q127<>(SB), X4, X4 // d
	VMOVSS       X4, (DX)
	VXORPS       Y6, Y6, Y6
	VXORPS       X5, X5, X5
	VUCOMISS     X5, X4
	JEQ          qscaled         // d = 0: id = 0
	VMOVSS       qone<>(SB), X6
	VDIVSS       X4, X6, X6      // id = 1/d
	VBROADCASTSS X6, Y6

qscaled:
	VMULPS  Y6, Y0, Y0
	VMULPS  Y6, Y1, Y1
	VMULPS  Y6, Y2, Y2
	VMULPS  Y6, Y3, Y3
	VXORPS  Y11, Y11, Y11       // Σq (exact: |Σq| ≤ 4064)
	QROUND(Y0, Y11)
	QROUND(Y1, Y11)
	QROUND(Y2, Y11)
	QROUND(Y3, Y11)
	VCVTPS2DQ Y0, Y0
	VCVTPS2DQ Y1, Y1
	VCVTPS2DQ Y2, Y2
	VCVTPS2DQ Y3, Y3
	VPACKSSDW Y1, Y0, Y0
	VPACKSSDW Y3, Y2, Y2
	VPACKSSWB Y2, Y0, Y0
	VPERMD    Y0, Y14, Y0
	VMOVDQU   Y0, (DI)
	HSUM(Y11, X11, X5)
	VMULSS       X11, X4, X4     // s = d·Σq
	VMOVSS       X4, (R8)
	ADDQ    $128, SI
	ADDQ    $32, DI
	ADDQ    $4, DX
	ADDQ    $4, R8
	DECQ    CX
	JNZ     qloop

qdone:
	VZEROUPPER
	RET

// func dotQ6_KAVX2(w *byte, qx *int8, dx *float32, nsb int) float32
//
// Q6_K super-blocks (210 bytes: ql [128], qh [64], scales [16]int8, d f16;
// w = d·sc_g·(q − 32), q six bits, one scale per 16 values) against
// activations quantised per 32. Per group g of 32 values (activation
// block g): the signed 6-bit values by the sign trick and vpmaddubsw,
// then vpmaddwd with the two int16 scales of the group (exact in int32),
// then acc += float(Σ) · (d·d_x,g) by lanes.
// Q6KMASK4(a, b, c, d): bytes 8g…8g+7 of q6kmask all g, for g = a…d.
#define Q6KMASK4(a, b, c, d) \
	DATA q6kmask<>+8*a(SB)/8, $(a*0x0101010101010101) \
	DATA q6kmask<>+8*b(SB)/8, $(b*0x0101010101010101) \
	DATA q6kmask<>+8*c(SB)/8, $(c*0x0101010101010101) \
	DATA q6kmask<>+8*d(SB)/8, $(d*0x0101010101010101)

Q6KMASK4(0, 1, 2, 3)
Q6KMASK4(4, 5, 6, 7)
Q6KMASK4(8, 9, 10, 11)
Q6KMASK4(12, 13, 14, 15)
GLOBL q6kmask<>(SB), RODATA|NOPTR, $128

// Q6GROUP(moff, soff, xoff) for group g (moff = 16g, soff = 4g, xoff =
// 32g): Y5 = the group's low four bits (0…15), Y6 = qh shifted so that
// bits 4…5 are its two high bits; builds q − 32 in Y5, dots it with the
// activations at xoff(DI), weights the halves by the group's two int16
// scales (vpshufb of the 16 scales in X11) and adds float(Σ)·(d·d_x,g)
// (from soff(SP)) to Y0.
#define Q6GROUP(moff, soff, xoff) \
	VPAND        Y13, Y6, Y6        \
	VPOR         Y6, Y5, Y5         \
	VPSUBB       Y12, Y5, Y5        \
	VMOVDQU      xoff(DI), Y2       \
	VPSIGNB      Y5, Y5, Y3         \
	VPSIGNB      Y5, Y2, Y4         \
	VPMADDUBSW   Y4, Y3, Y4         \
	VPSHUFB      q6kmask<>+moff(SB), X11, X7 \
	VPMOVSXBW    X7, Y7             \
	VPMADDWD     Y7, Y4, Y4         \
	VCVTDQ2PS    Y4, Y4             \
	VBROADCASTSS soff(SP), Y7       \
	VFMADD231PS  Y7, Y4, Y0

// Q6HALF(ql, qh, g): groups g…g+3 of the super-block (half of it): the
// 64 bytes of low bits at ql(SI) (L0 in Y9, L1 in Y10: groups g and g+1
// the low nibbles of L0 and L1, g+2 and g+3 their high ones), the 32
// bytes of high bits at qh(SI) (Y15: bits 0…1, 2…3, 4…5, 6…7 for
// g…g+3).
#define Q6HALF(ql, qh, g) \
	VMOVDQU      ql(SI), Y9        \
	VMOVDQU      ql+32(SI), Y10    \
	VMOVDQU      qh(SI), Y15       \
	VPAND        Y14, Y9, Y5       \
	VPSLLW       $4, Y15, Y6       \
	Q6GROUP(16*g, 4*g, 32*g)       \
	VPAND        Y14, Y10, Y5      \
	VPSLLW       $2, Y15, Y6       \
	Q6GROUP(16*g+16, 4*g+4, 32*g+32) \
	VPSRLW       $4, Y9, Y5        \
	VPAND        Y14, Y5, Y5       \
	VMOVDQU      Y15, Y6           \
	Q6GROUP(16*g+32, 4*g+8, 32*g+64) \
	VPSRLW       $4, Y10, Y5       \
	VPAND        Y14, Y5, Y5       \
	VPSRLW       $2, Y15, Y6       \
	Q6GROUP(16*g+48, 4*g+12, 32*g+96)

TEXT ·dotQ6_KAVX2(SB), NOSPLIT, $32-36
	MOVQ         w+0(FP), SI
	MOVQ         qx+8(FP), DI
	MOVQ         dx+16(FP), DX
	MOVQ         nsb+24(FP), CX
	VXORPS       Y0, Y0, Y0
	MOVL         $0x0f0f0f0f, AX
	VMOVD        AX, X14
	VPBROADCASTD X14, Y14      // 0x0f
	MOVL         $0x30303030, AX
	VMOVD        AX, X13
	VPBROADCASTD X13, Y13      // 0x30
	MOVL         $0x20202020, AX
	VMOVD        AX, X12
	VPBROADCASTD X12, Y12      // 32
	TESTQ        CX, CX
	JZ           q6kdone

q6kloop:
	PREFETCHT0   2048(SI)
	MOVWLZX      208(SI), AX
	VMOVD        AX, X8
	VCVTPH2PS    X8, X8
	VBROADCASTSS X8, Y8
	VMULPS       (DX), Y8, Y8  // d·d_x,g for g = 0…7
	VMOVUPS      Y8, 0(SP)
	VMOVDQU      192(SI), X11  // the 16 scales

	Q6HALF(0, 128, 0)   // ql[0:64], qh[0:32], activation blocks 0…3
	Q6HALF(64, 160, 4)  // ql[64:128], qh[32:64], activation blocks 4…7

	ADDQ $210, SI
	ADDQ $256, DI
	ADDQ $32, DX
	DECQ CX
	JNZ  q6kloop

q6kdone:
	HSUM(Y0, X0, X8)
	VZEROUPPER
	MOVSS X0, ret+32(FP)
	RET

// func toF16AVX2(dst *uint16, src *float32, n int)
//
// dst[i] = src[i] rounded to float16, nearest even (vcvtps2ph, imm 0;
// quiet NaNs keep their payload's top bits, signalling ones are quieted,
// as float16.Fromfloat32), n a multiple of 8, ≥ 8.
TEXT ·toF16AVX2(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	SHRQ $3, CX

tof16loop:
	VMOVUPS    (SI), Y0
	VCVTPS2PH  $0, Y0, X0
	VMOVDQU    X0, (DI)
	ADDQ       $32, SI
	ADDQ       $16, DI
	DECQ       CX
	JNZ        tof16loop
	VZEROUPPER
	RET
