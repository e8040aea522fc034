//go:build amd64 && !purego

#include "textflag.h"

// AVX2 + FMA + F16C kernels of the fast path (see dot.go). Lengths are
// whole vectors (n a multiple of 8, nb blocks of 32); the Go wrappers in
// dot_amd64.go handle the rest. Every kernel visits its elements in one
// fixed order, whatever the caller, and reduces its eight lanes the same
// way:
//
//	lanes l and l+4, then the two halves of that, then the two left.

#define HSUM_Y0_X0 \
	VEXTRACTF128 $1, Y0, X1 \
	VADDPS       X1, X0, X0 \
	VMOVHLPS     X0, X0, X1 \
	VADDPS       X1, X0, X0 \
	VMOVSHDUP    X0, X1     \
	VADDSS       X1, X0, X0

// func dotF32AVX2(a, b *float32, n int) float32
TEXT ·dotF32AVX2(SB), NOSPLIT, $0-28
	MOVQ   a+0(FP), SI
	MOVQ   b+8(FP), DI
	MOVQ   n+16(FP), CX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3

f32loop32:
	CMPQ        CX, $32
	JLT         f32loop8
	VMOVUPS     (SI), Y4
	VMOVUPS     32(SI), Y5
	VMOVUPS     64(SI), Y6
	VMOVUPS     96(SI), Y7
	VFMADD231PS (DI), Y4, Y0
	VFMADD231PS 32(DI), Y5, Y1
	VFMADD231PS 64(DI), Y6, Y2
	VFMADD231PS 96(DI), Y7, Y3
	ADDQ        $128, SI
	ADDQ        $128, DI
	SUBQ        $32, CX
	JMP         f32loop32

f32loop8:
	CMPQ        CX, $8
	JLT         f32done
	VMOVUPS     (SI), Y4
	VFMADD231PS (DI), Y4, Y0
	ADDQ        $32, SI
	ADDQ        $32, DI
	SUBQ        $8, CX
	JMP         f32loop8

f32done:
	VADDPS Y1, Y0, Y0
	VADDPS Y3, Y2, Y2
	VADDPS Y2, Y0, Y0
	HSUM_Y0_X0
	VZEROUPPER
	MOVSS  X0, ret+24(FP)
	RET

// func dotF16AVX2(w *uint16, x *float32, n int) float32
TEXT ·dotF16AVX2(SB), NOSPLIT, $0-28
	MOVQ   w+0(FP), SI
	MOVQ   x+8(FP), DI
	MOVQ   n+16(FP), CX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3

f16loop32:
	CMPQ        CX, $32
	JLT         f16loop8
	VCVTPH2PS   (SI), Y4
	VCVTPH2PS   16(SI), Y5
	VCVTPH2PS   32(SI), Y6
	VCVTPH2PS   48(SI), Y7
	VFMADD231PS (DI), Y4, Y0
	VFMADD231PS 32(DI), Y5, Y1
	VFMADD231PS 64(DI), Y6, Y2
	VFMADD231PS 96(DI), Y7, Y3
	ADDQ        $64, SI
	ADDQ        $128, DI
	SUBQ        $32, CX
	JMP         f16loop32

f16loop8:
	CMPQ        CX, $8
	JLT         f16done
	VCVTPH2PS   (SI), Y4
	VFMADD231PS (DI), Y4, Y0
	ADDQ        $16, SI
	ADDQ        $32, DI
	SUBQ        $8, CX
	JMP         f16loop8

f16done:
	VADDPS Y1, Y0, Y0
	VADDPS Y3, Y2, Y2
	VADDPS Y2, Y0, Y0
	HSUM_Y0_X0
	VZEROUPPER
	MOVSS  X0, ret+24(FP)
	RET

// func dotBF16AVX2(w *uint16, x *float32, n int) float32
TEXT ·dotBF16AVX2(SB), NOSPLIT, $0-28
	MOVQ   w+0(FP), SI
	MOVQ   x+8(FP), DI
	MOVQ   n+16(FP), CX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3

bf16loop32:
	CMPQ        CX, $32
	JLT         bf16loop8
	VPMOVZXWD   (SI), Y4
	VPMOVZXWD   16(SI), Y5
	VPMOVZXWD   32(SI), Y6
	VPMOVZXWD   48(SI), Y7
	VPSLLD      $16, Y4, Y4
	VPSLLD      $16, Y5, Y5
	VPSLLD      $16, Y6, Y6
	VPSLLD      $16, Y7, Y7
	VFMADD231PS (DI), Y4, Y0
	VFMADD231PS 32(DI), Y5, Y1
	VFMADD231PS 64(DI), Y6, Y2
	VFMADD231PS 96(DI), Y7, Y3
	ADDQ        $64, SI
	ADDQ        $128, DI
	SUBQ        $32, CX
	JMP         bf16loop32

bf16loop8:
	CMPQ        CX, $8
	JLT         bf16done
	VPMOVZXWD   (SI), Y4
	VPSLLD      $16, Y4, Y4
	VFMADD231PS (DI), Y4, Y0
	ADDQ        $16, SI
	ADDQ        $32, DI
	SUBQ        $8, CX
	JMP         bf16loop8

bf16done:
	VADDPS Y1, Y0, Y0
	VADDPS Y3, Y2, Y2
	VADDPS Y2, Y0, Y0
	HSUM_Y0_X0
	VZEROUPPER
	MOVSS  X0, ret+24(FP)
	RET

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

// Quantised blocks against Q8 activations. Per block:
//
//	Σ = Σ q_w·q_x in eight int32 lanes (lane l: elements 4l…4l+3),
//	    by vpmaddubsw (|w| as unsigned × x with w's sign) and vpmaddwd;
//	acc += float(Σ) · (d_w·d_x)   (one fused multiply-add per lane)

// func dotQ8_0AVX2(w *byte, qx *int8, dx *float32, nb int) float32
TEXT ·dotQ8_0AVX2(SB), NOSPLIT, $0-36
	MOVQ      w+0(FP), SI
	MOVQ      qx+8(FP), DI
	MOVQ      dx+16(FP), DX
	MOVQ      nb+24(FP), CX
	VXORPS    Y0, Y0, Y0
	VPCMPEQW  Y15, Y15, Y15
	VPSRLW    $15, Y15, Y15   // int16 ones
	TESTQ     CX, CX
	JZ        q80done

q80loop:
	VMOVDQU     2(SI), Y1
	VMOVDQU     (DI), Y2
	VPSIGNB     Y1, Y1, Y3    // |w|
	VPSIGNB     Y1, Y2, Y4    // x·sign(w)
	VPMADDUBSW  Y4, Y3, Y5
	VPMADDWD    Y15, Y5, Y5
	VCVTDQ2PS   Y5, Y5
	MOVWLZX     (SI), AX
	VMOVD       AX, X6
	VCVTPH2PS   X6, X6
	VMULSS      (DX), X6, X6
	VBROADCASTSS X6, Y6
	VFMADD231PS Y6, Y5, Y0
	ADDQ        $34, SI
	ADDQ        $32, DI
	ADDQ        $4, DX
	DECQ        CX
	JNZ         q80loop

q80done:
	HSUM_Y0_X0
	VZEROUPPER
	MOVSS X0, ret+32(FP)
	RET

// func dotQ4_0AVX2(w *byte, qx *int8, dx *float32, nb int) float32
TEXT ·dotQ4_0AVX2(SB), NOSPLIT, $0-36
	MOVQ         w+0(FP), SI
	MOVQ         qx+8(FP), DI
	MOVQ         dx+16(FP), DX
	MOVQ         nb+24(FP), CX
	VXORPS       Y0, Y0, Y0
	VPCMPEQW     Y15, Y15, Y15
	VPSRLW       $15, Y15, Y15   // int16 ones
	MOVL         $0x0f0f0f0f, AX
	VMOVD        AX, X14
	VPBROADCASTD X14, Y14        // bytes 0x0f
	MOVL         $0x08080808, AX
	VMOVD        AX, X13
	VPBROADCASTD X13, Y13        // bytes 8
	TESTQ        CX, CX
	JZ           q40done

q40loop:
	VMOVDQU     2(SI), X1
	VPSRLW      $4, X1, X2
	VINSERTI128 $1, X2, Y1, Y1
	VPAND       Y14, Y1, Y1
	VPSUBB      Y13, Y1, Y1    // q−8 in [−8, 7]
	VMOVDQU     (DI), Y2
	VPSIGNB     Y1, Y1, Y3
	VPSIGNB     Y1, Y2, Y4
	VPMADDUBSW  Y4, Y3, Y5
	VPMADDWD    Y15, Y5, Y5
	VCVTDQ2PS   Y5, Y5
	MOVWLZX     (SI), AX
	VMOVD       AX, X6
	VCVTPH2PS   X6, X6
	VMULSS      (DX), X6, X6
	VBROADCASTSS X6, Y6
	VFMADD231PS Y6, Y5, Y0
	ADDQ        $18, SI
	ADDQ        $32, DI
	ADDQ        $4, DX
	DECQ        CX
	JNZ         q40loop

q40done:
	HSUM_Y0_X0
	VZEROUPPER
	MOVSS X0, ret+32(FP)
	RET

// func dotQ4_1AVX2(w *byte, qx *int8, dx, sx *float32, nb int) float32
TEXT ·dotQ4_1AVX2(SB), NOSPLIT, $0-44
	MOVQ         w+0(FP), SI
	MOVQ         qx+8(FP), DI
	MOVQ         dx+16(FP), DX
	MOVQ         sx+24(FP), R8
	MOVQ         nb+32(FP), CX
	VXORPS       Y0, Y0, Y0
	VXORPS       X7, X7, X7      // Σ m_w·s_x
	VPCMPEQW     Y15, Y15, Y15
	VPSRLW       $15, Y15, Y15
	MOVL         $0x0f0f0f0f, AX
	VMOVD        AX, X14
	VPBROADCASTD X14, Y14
	TESTQ        CX, CX
	JZ           q41done

q41loop:
	VMOVDQU     4(SI), X1
	VPSRLW      $4, X1, X2
	VINSERTI128 $1, X2, Y1, Y1
	VPAND       Y14, Y1, Y1    // q in [0, 15]
	VMOVDQU     (DI), Y2
	VPMADDUBSW  Y2, Y1, Y5
	VPMADDWD    Y15, Y5, Y5
	VCVTDQ2PS   Y5, Y5
	MOVL        (SI), AX       // d, m
	VMOVD       AX, X6
	VCVTPH2PS   X6, X6
	VMOVSHDUP   X6, X8         // m
	VMULSS      (DX), X6, X6
	VBROADCASTSS X6, Y6
	VFMADD231PS Y6, Y5, Y0
	VFMADD231SS (R8), X8, X7
	ADDQ        $20, SI
	ADDQ        $32, DI
	ADDQ        $4, DX
	ADDQ        $4, R8
	DECQ        CX
	JNZ         q41loop

q41done:
	HSUM_Y0_X0
	VADDSS X7, X0, X0
	VZEROUPPER
	MOVSS  X0, ret+40(FP)
	RET

// Four activation rows at a time (prefill): the weight block is loaded
// and unpacked once and its scale converted once; each row then goes
// through exactly the instructions of the one-row kernel above (the
// block scale d_w·d_x rounded to float32, one fused multiply-add per
// lane, the same reduction), so a row's result is bitwise what the
// one-row kernel gives for it.
//
// qx rows are xs bytes apart, dx rows ds bytes apart; out gets 4 sums.

#define HSUM(Y, X) \
	VEXTRACTF128 $1, Y, X8 \
	VADDPS       X8, X, X  \
	VMOVHLPS     X, X, X8  \
	VADDPS       X8, X, X  \
	VMOVSHDUP    X, X8     \
	VADDSS       X8, X, X

// ROWQ(qoff, doff, acc): acc += float(Σ |w|·(x·sign w)) · (d_w·d_x) for
// the row whose quants are at qoff and scale at doff. Y4 = |w| (or the
// unsigned weight for Q4_1, with NOSIGN), Y5 = w, Y10 = d_w broadcast.
#define ROWQ(qoff, doff, acc) \
	VMOVDQU      qoff, Y6        \
	VPSIGNB      Y5, Y6, Y6      \
	VPMADDUBSW   Y6, Y4, Y6      \
	VPMADDWD     Y15, Y6, Y6     \
	VCVTDQ2PS    Y6, Y6          \
	VBROADCASTSS doff, Y7        \
	VMULPS       Y7, Y10, Y7     \
	VFMADD231PS  Y7, Y6, acc

#define ROWU(qoff, doff, acc) \
	VMOVDQU      qoff, Y6        \
	VPMADDUBSW   Y6, Y4, Y6      \
	VPMADDWD     Y15, Y6, Y6     \
	VCVTDQ2PS    Y6, Y6          \
	VBROADCASTSS doff, Y7        \
	VMULPS       Y7, Y10, Y7     \
	VFMADD231PS  Y7, Y6, acc

// func dotQ8_0x4AVX2(w *byte, qx *int8, dx *float32, nb, xs, ds int, out *float32)
TEXT ·dotQ8_0x4AVX2(SB), NOSPLIT, $0-56
	MOVQ     w+0(FP), SI
	MOVQ     qx+8(FP), DI
	MOVQ     dx+16(FP), DX
	MOVQ     nb+24(FP), CX
	MOVQ     xs+32(FP), R9
	MOVQ     ds+40(FP), R10
	LEAQ     (R9)(R9*2), R12
	LEAQ     (R10)(R10*2), R13
	VXORPS   Y0, Y0, Y0
	VXORPS   Y1, Y1, Y1
	VXORPS   Y2, Y2, Y2
	VXORPS   Y3, Y3, Y3
	VPCMPEQW Y15, Y15, Y15
	VPSRLW   $15, Y15, Y15
	TESTQ    CX, CX
	JZ       q80x4done

q80x4loop:
	VMOVDQU      2(SI), Y5
	VPSIGNB      Y5, Y5, Y4
	MOVWLZX      (SI), AX
	VMOVD        AX, X10
	VCVTPH2PS    X10, X10
	VBROADCASTSS X10, Y10
	ROWQ((DI), (DX), Y0)
	ROWQ((DI)(R9*1), (DX)(R10*1), Y1)
	ROWQ((DI)(R9*2), (DX)(R10*2), Y2)
	ROWQ((DI)(R12*1), (DX)(R13*1), Y3)
	ADDQ         $34, SI
	ADDQ         $32, DI
	ADDQ         $4, DX
	DECQ         CX
	JNZ          q80x4loop

q80x4done:
	MOVQ out+48(FP), R8
	HSUM(Y0, X0)
	HSUM(Y1, X1)
	HSUM(Y2, X2)
	HSUM(Y3, X3)
	VZEROUPPER
	MOVSS X0, (R8)
	MOVSS X1, 4(R8)
	MOVSS X2, 8(R8)
	MOVSS X3, 12(R8)
	RET

// func dotQ4_0x4AVX2(w *byte, qx *int8, dx *float32, nb, xs, ds int, out *float32)
TEXT ·dotQ4_0x4AVX2(SB), NOSPLIT, $0-56
	MOVQ         w+0(FP), SI
	MOVQ         qx+8(FP), DI
	MOVQ         dx+16(FP), DX
	MOVQ         nb+24(FP), CX
	MOVQ         xs+32(FP), R9
	MOVQ         ds+40(FP), R10
	LEAQ         (R9)(R9*2), R12
	LEAQ         (R10)(R10*2), R13
	VXORPS       Y0, Y0, Y0
	VXORPS       Y1, Y1, Y1
	VXORPS       Y2, Y2, Y2
	VXORPS       Y3, Y3, Y3
	VPCMPEQW     Y15, Y15, Y15
	VPSRLW       $15, Y15, Y15
	MOVL         $0x0f0f0f0f, AX
	VMOVD        AX, X14
	VPBROADCASTD X14, Y14
	MOVL         $0x08080808, AX
	VMOVD        AX, X13
	VPBROADCASTD X13, Y13
	TESTQ        CX, CX
	JZ           q40x4done

q40x4loop:
	VMOVDQU      2(SI), X5
	VPSRLW       $4, X5, X9
	VINSERTI128  $1, X9, Y5, Y5
	VPAND        Y14, Y5, Y5
	VPSUBB       Y13, Y5, Y5
	VPSIGNB      Y5, Y5, Y4
	MOVWLZX      (SI), AX
	VMOVD        AX, X10
	VCVTPH2PS    X10, X10
	VBROADCASTSS X10, Y10
	ROWQ((DI), (DX), Y0)
	ROWQ((DI)(R9*1), (DX)(R10*1), Y1)
	ROWQ((DI)(R9*2), (DX)(R10*2), Y2)
	ROWQ((DI)(R12*1), (DX)(R13*1), Y3)
	ADDQ         $18, SI
	ADDQ         $32, DI
	ADDQ         $4, DX
	DECQ         CX
	JNZ          q40x4loop

q40x4done:
	MOVQ out+48(FP), R8
	HSUM(Y0, X0)
	HSUM(Y1, X1)
	HSUM(Y2, X2)
	HSUM(Y3, X3)
	VZEROUPPER
	MOVSS X0, (R8)
	MOVSS X1, 4(R8)
	MOVSS X2, 8(R8)
	MOVSS X3, 12(R8)
	RET
