//go:build amd64 && !purego

#include "textflag.h"
#include "hsum_amd64.h"

// AVX2 one-row kernels of dotmore.go's types against activations
// quantised per 32 (qx int8, dx scales, sx scaled sums). Each block of 32
// weights becomes 32 bytes in element order (Y1); its integer dot with
// the activations is exact (vpmaddubsw, then vpmaddwd by ones or by the
// sub-block's integer scale), and acc += float(Σ)·(d_w·d_x) by lanes in
// Y0, reduced by HSUM at the end; minima go to their own accumulator,
// added (or subtracted) after. The weight is prefetched 2 KiB ahead, as
// in dot_amd64.s.

// kvaluesIQ4 (−127, −104, … 113) as bytes, in both 128-bit lanes.
DATA iq4kv<>+0(SB)/8, $0xf6eaddcfbfad9881
DATA iq4kv<>+8(SB)/8, $0x7159453526190d01
DATA iq4kv<>+16(SB)/8, $0xf6eaddcfbfad9881
DATA iq4kv<>+24(SB)/8, $0x7159453526190d01
GLOBL iq4kv<>(SB), RODATA|NOPTR, $32

// q5shuf: byte j takes byte j/8 of a broadcast qh dword; q5bits: byte j
// is 1 << (j mod 8). Together bit j of qh becomes byte j.
DATA q5shuf<>+0(SB)/8, $0x0000000000000000
DATA q5shuf<>+8(SB)/8, $0x0101010101010101
DATA q5shuf<>+16(SB)/8, $0x0202020202020202
DATA q5shuf<>+24(SB)/8, $0x0303030303030303
GLOBL q5shuf<>(SB), RODATA|NOPTR, $32
DATA q5bits<>+0(SB)/8, $0x8040201008040201
DATA q5bits<>+8(SB)/8, $0x8040201008040201
DATA q5bits<>+16(SB)/8, $0x8040201008040201
DATA q5bits<>+24(SB)/8, $0x8040201008040201
GLOBL q5bits<>(SB), RODATA|NOPTR, $32

// BCASTD(v, x, y): every dword of y = the constant v (AX scratch).
#define BCASTD(v, x, y) \
	MOVL         v, AX \
	VMOVD        AX, x \
	VPBROADCASTD x, y

// NIB(off): Y1 = the 32 nibbles of the 16 bytes at off(SI), in element
// order (low nibbles, then high), as bytes 0…15 (Y14 = 0x0f bytes).
#define NIB(off) \
	VMOVDQU     off(SI), X1     \
	VPSRLW      $4, X1, X2      \
	VINSERTI128 $1, X2, Y1, Y1  \
	VPAND       Y14, Y1, Y1

// SDOT(xoff): Y4 = the int16 pair sums of the signed bytes Y1 times the
// activations at xoff(DI) (the sign trick: |w|·(x·sign w)).
#define SDOT(xoff) \
	VMOVDQU    xoff(DI), Y2 \
	VPSIGNB    Y1, Y1, Y3   \
	VPSIGNB    Y1, Y2, Y4   \
	VPMADDUBSW Y4, Y3, Y4

// HALFSCALE(off, dx): X5 = f16 at off(SI) times the float32 at dx, as
// float32, broadcast to Y5.
#define HALFSCALE(off, dx) \
	MOVWLZX      off(SI), AX \
	VMOVD        AX, X5      \
	VCVTPH2PS    X5, X5      \
	VMULSS       dx, X5, X5  \
	VBROADCASTSS X5, Y5

// HALFB(off, x, y): the f16 at off(SI) as float32, broadcast to y (x
// its low half; AX scratch).
#define HALFB(off, x, y) \
	MOVWLZX      off(SI), AX \
	VMOVD        AX, x       \
	VCVTPH2PS    x, x        \
	VBROADCASTSS x, y

// DDX(off): 0…28(SP) = the f16 at off(SI) times the eight sub-block
// scales d_x at (DX) (Y8 scratch).
#define DDX(off) \
	HALFB(off, X8, Y8)    \
	VMULPS  (DX), Y8, Y8  \
	VMOVUPS Y8, 0(SP)

// SCALE6(a, as, b, bs, off): four 6-bit scales (K-quant packing) to the
// bytes at off(SP): (a >> as) & 0x0f… | ((b >> bs) & 0x03…) << 4.
#define SCALE6(a, as, b, bs, off) \
	MOVL a, AX                 \
	SHRL $as, AX               \
	ANDL $0x0f0f0f0f, AX       \
	MOVL b, BX                 \
	SHRL $bs, BX               \
	ANDL $0x03030303, BX       \
	SHLL $4, BX                \
	ORL  BX, AX                \
	MOVL AX, off(SP)

// NEXTSB(bb, loop): on to the next super-block (bb bytes; 256
// activations, eight scales), back to loop while CX counts down.
#define NEXTSB(bb, loop) \
	ADDQ $bb, SI  \
	ADDQ $256, DI \
	ADDQ $32, DX  \
	DECQ CX       \
	JNZ  loop

// RETSUM(ret): return the sum of Y0's lanes (HSUM).
#define RETSUM(ret) \
	HSUM(Y0, X0, X8) \
	VZEROUPPER       \
	MOVSS X0, ret    \
	RET

// func dotIQ4_NLAVX2(w *byte, qx *int8, dx *float32, nb int) float32
TEXT ·dotIQ4_NLAVX2(SB), NOSPLIT, $0-36
	MOVQ    w+0(FP), SI
	MOVQ    qx+8(FP), DI
	MOVQ    dx+16(FP), DX
	MOVQ    nb+24(FP), CX
	VXORPS  Y0, Y0, Y0
	BCASTD($0x0f0f0f0f, X14, Y14)
	BCASTD($0x00010001, X15, Y15)
	VMOVDQU iq4kv<>(SB), Y13

iq4nlloop:
	PREFETCHT0  2048(SI)
	NIB(2)
	VPSHUFB     Y1, Y13, Y1
	SDOT(0)
	VPMADDWD    Y15, Y4, Y4
	VCVTDQ2PS   Y4, Y4
	HALFSCALE(0, (DX))
	VFMADD231PS Y5, Y4, Y0
	ADDQ        $18, SI
	ADDQ        $32, DI
	ADDQ        $4, DX
	DECQ        CX
	JNZ         iq4nlloop
	RETSUM(ret+32(FP))

// IQ4XSSUB(j, qoff, loff, lshift, xoff, soff): sub-block j of an IQ4_XS
// block (nibbles at qoff, low scale bits nibble lshift/4 of the byte at
// loff, high bits from R8 = scales_h): Y0 += float(scale·Σ)·(d·d_x,j),
// d·d_x,j at soff(SP).
#define IQ4XSSUB(j, qoff, loff, lshift, xoff, soff) \
	NIB(qoff)                   \
	VPSHUFB      Y1, Y13, Y1    \
	SDOT(xoff)                  \
	MOVBLZX      loff(SI), AX   \
	SHRL         $lshift, AX    \
	ANDL         $15, AX        \
	MOVL         R8, BX         \
	SHRL         $(2*j), BX     \
	ANDL         $3, BX         \
	SHLL         $4, BX         \
	ORL          BX, AX         \
	SUBL         $32, AX        \
	VMOVD        AX, X6         \
	VPBROADCASTW X6, Y6         \
	VPMADDWD     Y6, Y4, Y4     \
	VCVTDQ2PS    Y4, Y4         \
	VBROADCASTSS soff(SP), Y6   \
	VFMADD231PS  Y6, Y4, Y0

// func dotIQ4_XSAVX2(w *byte, qx *int8, dx *float32, nsb int) float32
TEXT ·dotIQ4_XSAVX2(SB), NOSPLIT, $32-36
	MOVQ    w+0(FP), SI
	MOVQ    qx+8(FP), DI
	MOVQ    dx+16(FP), DX
	MOVQ    nsb+24(FP), CX
	VXORPS  Y0, Y0, Y0
	BCASTD($0x0f0f0f0f, X14, Y14)
	VMOVDQU iq4kv<>(SB), Y13

iq4xsloop:
	PREFETCHT0   2048(SI)
	DDX(0)                    // d·d_x,j for j = 0…7
	MOVWLZX      2(SI), R8    // scales_h
	IQ4XSSUB(0, 8, 4, 0, 0, 0)
	IQ4XSSUB(1, 24, 4, 4, 32, 4)
	IQ4XSSUB(2, 40, 5, 0, 64, 8)
	IQ4XSSUB(3, 56, 5, 4, 96, 12)
	IQ4XSSUB(4, 72, 6, 0, 128, 16)
	IQ4XSSUB(5, 88, 6, 4, 160, 20)
	IQ4XSSUB(6, 104, 7, 0, 192, 24)
	IQ4XSSUB(7, 120, 7, 4, 224, 28)
	NEXTSB(136, iq4xsloop)
	RETSUM(ret+32(FP))

// QH5(off): Y6 = 16 in byte j where bit j of the u32 at off(SI) is set,
// else 0 (Y11 = q5shuf, Y10 = q5bits, Y12 = 0x10 bytes).
#define QH5(off) \
	VPBROADCASTD off(SI), Y6 \
	VPSHUFB      Y11, Y6, Y6 \
	VPAND        Y10, Y6, Y6 \
	VPCMPEQB     Y10, Y6, Y6 \
	VPAND        Y12, Y6, Y6

// func dotQ5_0AVX2(w *byte, qx *int8, dx *float32, nb int) float32
//
// q − 16 (signed) by the sign trick, as IQ4_NL.
TEXT ·dotQ5_0AVX2(SB), NOSPLIT, $0-36
	MOVQ    w+0(FP), SI
	MOVQ    qx+8(FP), DI
	MOVQ    dx+16(FP), DX
	MOVQ    nb+24(FP), CX
	VXORPS  Y0, Y0, Y0
	BCASTD($0x0f0f0f0f, X14, Y14)
	BCASTD($0x00010001, X15, Y15)
	BCASTD($0x10101010, X12, Y12)
	VMOVDQU q5shuf<>(SB), Y11
	VMOVDQU q5bits<>(SB), Y10

q50loop:
	PREFETCHT0  2048(SI)
	NIB(6)
	QH5(2)
	VPOR        Y6, Y1, Y1
	VPSUBB      Y12, Y1, Y1
	SDOT(0)
	VPMADDWD    Y15, Y4, Y4
	VCVTDQ2PS   Y4, Y4
	HALFSCALE(0, (DX))
	VFMADD231PS Y5, Y4, Y0
	ADDQ        $22, SI
	ADDQ        $32, DI
	ADDQ        $4, DX
	DECQ        CX
	JNZ         q50loop
	RETSUM(ret+32(FP))

// func dotQ5_1AVX2(w *byte, qx *int8, dx, sx *float32, nb int) float32
//
// q (0…31, unsigned) times the signed activations directly; the
// minimum's m·s_x is summed in X9 in block order, added at the end.
TEXT ·dotQ5_1AVX2(SB), NOSPLIT, $0-44
	MOVQ    w+0(FP), SI
	MOVQ    qx+8(FP), DI
	MOVQ    dx+16(FP), DX
	MOVQ    sx+24(FP), R9
	MOVQ    nb+32(FP), CX
	VXORPS  Y0, Y0, Y0
	VXORPS  X9, X9, X9
	BCASTD($0x0f0f0f0f, X14, Y14)
	BCASTD($0x00010001, X15, Y15)
	BCASTD($0x10101010, X12, Y12)
	VMOVDQU q5shuf<>(SB), Y11
	VMOVDQU q5bits<>(SB), Y10

q51loop:
	PREFETCHT0  2048(SI)
	NIB(8)
	QH5(4)
	VPOR        Y6, Y1, Y1
	VMOVDQU     (DI), Y2
	VPMADDUBSW  Y2, Y1, Y4
	VPMADDWD    Y15, Y4, Y4
	VCVTDQ2PS   Y4, Y4
	HALFSCALE(0, (DX))
	VFMADD231PS Y5, Y4, Y0
	MOVWLZX     2(SI), AX
	VMOVD       AX, X7
	VCVTPH2PS   X7, X7
	VMULSS      (R9), X7, X7
	VADDSS      X7, X9, X9
	ADDQ        $24, SI
	ADDQ        $32, DI
	ADDQ        $4, DX
	ADDQ        $4, R9
	DECQ        CX
	JNZ         q51loop
	HSUM(Y0, X0, X8)
	VADDSS      X9, X0, X0
	VZEROUPPER
	MOVSS       X0, ret+40(FP)
	RET

// Q5KSUB(s, nib, xoff, boff, soff): sub-block s of a Q5_K super-block,
// its low nibbles in nib, its 5th bits bit s of the qh bytes in Y7:
// Y0 += float(sc_s·Σ q·q_x)·(d·d_x,s), sc_s at boff(SP), d·d_x,s at
// soff(SP).
#define Q5KSUB(s, nib, xoff, boff, soff) \
	VPBROADCASTB q5bits<>+s(SB), Y5 \
	VPAND        Y5, Y7, Y6     \
	VPCMPEQB     Y5, Y6, Y6     \
	VPAND        Y12, Y6, Y6    \
	VPOR         nib, Y6, Y1    \
	VMOVDQU      xoff(DI), Y2   \
	VPMADDUBSW   Y2, Y1, Y4     \
	MOVBLZX      boff(SP), AX   \
	VMOVD        AX, X6         \
	VPBROADCASTW X6, Y6         \
	VPMADDWD     Y6, Y4, Y4     \
	VCVTDQ2PS    Y4, Y4         \
	VBROADCASTSS soff(SP), Y6   \
	VFMADD231PS  Y6, Y4, Y0

// Q5KPAIR(c): sub-blocks 2c and 2c+1 (the low and high nibbles of the
// 32 bytes at 48+32c).
#define Q5KPAIR(qoff, s0, s1, x0, x1, b0, b1, o0, o1) \
	VMOVDQU qoff(SI), Y9 \
	VPAND   Y14, Y9, Y8  \
	VPSRLW  $4, Y9, Y9   \
	VPAND   Y14, Y9, Y9  \
	Q5KSUB(s0, Y8, x0, b0, o0) \
	Q5KSUB(s1, Y9, x1, b1, o1)

// func dotQ5_KAVX2(w *byte, qx *int8, dx, sx *float32, nsb int) float32
//
// The 12 scale bytes are unpacked as llama.cpp does (kmask1…3 on three
// dwords) into sc_0…7 at 32(SP) and m_0…7 at 40(SP); the minima
// dmin·m_s·s_x,s add up by lanes in Y10 (the eight sub-blocks in the
// eight lanes), subtracted at the end.
TEXT ·dotQ5_KAVX2(SB), NOSPLIT, $48-44
	MOVQ    w+0(FP), SI
	MOVQ    qx+8(FP), DI
	MOVQ    dx+16(FP), DX
	MOVQ    sx+24(FP), R9
	MOVQ    nsb+32(FP), CX
	VXORPS  Y0, Y0, Y0
	VXORPS  Y10, Y10, Y10
	BCASTD($0x0f0f0f0f, X14, Y14)
	BCASTD($0x10101010, X12, Y12)

q5kloop:
	PREFETCHT0   2048(SI)
	DDX(0)                        // d·d_x,s for s = 0…7
	// scales: u0, u1, u2 = the three dwords at 4(SI)
	MOVL         4(SI), R10
	MOVL         8(SI), R11
	MOVL         12(SI), R12
	SCALE6(R12, 4, R11, 6, 44)    // m_4…7
	MOVL         R11, AX          // m_0…3 = u1 & 0x3f…
	ANDL         $0x3f3f3f3f, AX
	MOVL         AX, 40(SP)
	SCALE6(R12, 0, R10, 6, 36)    // sc_4…7
	ANDL         $0x3f3f3f3f, R10 // sc_0…3 = u0 & 0x3f…
	MOVL         R10, 32(SP)
	// minima: Y10 += (m_s·s_x,s)·dmin
	VPMOVZXBD    40(SP), Y6
	VCVTDQ2PS    Y6, Y6
	VMULPS       (R9), Y6, Y6
	HALFB(2, X7, Y7)
	VFMADD231PS  Y7, Y6, Y10
	VMOVDQU      16(SI), Y7   // qh
	Q5KPAIR(48, 0, 1, 0, 32, 32, 33, 0, 4)
	Q5KPAIR(80, 2, 3, 64, 96, 34, 35, 8, 12)
	Q5KPAIR(112, 4, 5, 128, 160, 36, 37, 16, 20)
	Q5KPAIR(144, 6, 7, 192, 224, 38, 39, 24, 28)
	ADDQ         $32, R9
	NEXTSB(176, q5kloop)
	HSUM(Y0, X0, X8)
	HSUM(Y10, X10, X8)
	VSUBSS       X10, X0, X0
	VZEROUPPER
	MOVSS        X0, ret+40(FP)
	RET

// q3kmask: bytes 8g…8g+7 all g (g < 16); at 16g it picks, by vpshufb,
// eight copies of byte 2g then eight of byte 2g+1: the two scales of
// group g, one per 16 values.
#define Q3KMASK4(a, b, c, d) \
	DATA q3kmask<>+8*a(SB)/8, $(a*0x0101010101010101) \
	DATA q3kmask<>+8*b(SB)/8, $(b*0x0101010101010101) \
	DATA q3kmask<>+8*c(SB)/8, $(c*0x0101010101010101) \
	DATA q3kmask<>+8*d(SB)/8, $(d*0x0101010101010101)

Q3KMASK4(0, 1, 2, 3)
Q3KMASK4(4, 5, 6, 7)
Q3KMASK4(8, 9, 10, 11)
Q3KMASK4(12, 13, 14, 15)
GLOBL q3kmask<>(SB), RODATA|NOPTR, $128

// Q3KGRP(g, shift, xoff, moff, soff): group g (32 values) of a Q3_K
// super-block, its low bits (Y9 >> shift) & 3, its high bits bit g of the
// hmask bytes in Y7: q = low | 4·high − 4 (−4…3) by the sign trick, the
// two halves weighted by their int8 scales (X11, picked by q3kmask at
// moff = 16g), Y0 += float(Σ)·(d·d_x,g) from soff(SP).
#define Q3KGRP(g, shift, xoff, moff, soff) \
	VPSRLW       $shift, Y9, Y1  \
	VPAND        Y13, Y1, Y1     \
	VPBROADCASTB q5bits<>+g(SB), Y5 \
	VPAND        Y5, Y7, Y6      \
	VPCMPEQB     Y5, Y6, Y6      \
	VPAND        Y12, Y6, Y6     \
	VPOR         Y6, Y1, Y1      \
	VPSUBB       Y12, Y1, Y1     \
	SDOT(xoff)                   \
	VPSHUFB      q3kmask<>+moff(SB), X11, X6 \
	VPMOVSXBW    X6, Y6          \
	VPMADDWD     Y6, Y4, Y4      \
	VCVTDQ2PS    Y4, Y4          \
	VBROADCASTSS soff(SP), Y6    \
	VFMADD231PS  Y6, Y4, Y0

// func dotQ3_KAVX2(w *byte, qx *int8, dx *float32, nsb int) float32
//
// The 16 6-bit scales are unpacked as llama.cpp does (kmask1, kmask2 on
// the three dwords of scales) into 16 bytes at 32(SP), less 32 in X11.
TEXT ·dotQ3_KAVX2(SB), NOSPLIT, $48-36
	MOVQ    w+0(FP), SI
	MOVQ    qx+8(FP), DI
	MOVQ    dx+16(FP), DX
	MOVQ    nsb+24(FP), CX
	VXORPS  Y0, Y0, Y0
	BCASTD($0x03030303, X13, Y13)
	BCASTD($0x04040404, X12, Y12)
	BCASTD($0x20202020, X10, Y10)

q3kloop:
	PREFETCHT0   2048(SI)
	DDX(108)                  // d·d_x,g for g = 0…7
	MOVL         96(SI), R10  // a0
	MOVL         100(SI), R11 // a1
	MOVL         104(SI), R12 // a2
	SCALE6(R10, 0, R12, 0, 32) // s0…3
	SCALE6(R11, 0, R12, 2, 36) // s4…7
	SCALE6(R10, 4, R12, 4, 40) // s8…11
	SCALE6(R11, 4, R12, 6, 44) // s12…15
	VMOVDQU      32(SP), X11
	VPSUBB       X10, X11, X11 // the 16 scales, −32…31
	VMOVDQU      0(SI), Y7     // hmask
	VMOVDQU      32(SI), Y9    // qs[0:32]: groups 0…3
	Q3KGRP(0, 0, 0, 0, 0)
	Q3KGRP(1, 2, 32, 16, 4)
	Q3KGRP(2, 4, 64, 32, 8)
	Q3KGRP(3, 6, 96, 48, 12)
	VMOVDQU      64(SI), Y9    // qs[32:64]: groups 4…7
	Q3KGRP(4, 0, 128, 64, 16)
	Q3KGRP(5, 2, 160, 80, 20)
	Q3KGRP(6, 4, 192, 96, 24)
	Q3KGRP(7, 6, 224, 112, 28)
	NEXTSB(110, q3kloop)
	RETSUM(ret+32(FP))

// Q2KGRP(shift, xoff, moff, soff, noff): group g (moff = 16g) of a Q2_K
// super-block, q = (Y8 >> shift) & 3 (unsigned): Y0 +=
// float(Σ_halves sc·Σ q·q_x)·(d·d_x,g) (soff(SP)) and Y10 +=
// float(Σ_halves m·Σ q_x)·(dmin·d_x,g) (noff(SP)); the scales' low
// nibbles in X11, high (the mins) in X9.
#define Q2KGRP(shift, xoff, moff, soff, noff) \
	VPSRLW       $shift, Y8, Y1  \
	VPAND        Y13, Y1, Y1     \
	VMOVDQU      xoff(DI), Y2    \
	VPMADDUBSW   Y2, Y1, Y4      \
	VPSHUFB      q3kmask<>+moff(SB), X11, X6 \
	VPMOVZXBW    X6, Y6          \
	VPMADDWD     Y6, Y4, Y4      \
	VCVTDQ2PS    Y4, Y4          \
	VBROADCASTSS soff(SP), Y6    \
	VFMADD231PS  Y6, Y4, Y0      \
	VPMADDUBSW   Y2, Y12, Y4     \
	VPSHUFB      q3kmask<>+moff(SB), X9, X6 \
	VPMOVZXBW    X6, Y6          \
	VPMADDWD     Y6, Y4, Y4      \
	VCVTDQ2PS    Y4, Y4          \
	VBROADCASTSS noff(SP), Y6    \
	VFMADD231PS  Y6, Y4, Y10

// func dotQ2_KAVX2(w *byte, qx *int8, dx *float32, nsb int) float32
TEXT ·dotQ2_KAVX2(SB), NOSPLIT, $64-36
	MOVQ    w+0(FP), SI
	MOVQ    qx+8(FP), DI
	MOVQ    dx+16(FP), DX
	MOVQ    nsb+24(FP), CX
	VXORPS  Y0, Y0, Y0
	VXORPS  Y10, Y10, Y10
	BCASTD($0x03030303, X13, Y13)
	BCASTD($0x01010101, X12, Y12)
	BCASTD($0x0f0f0f0f, X14, Y14)

q2kloop:
	PREFETCHT0   2048(SI)
	DDX(80)                    // d·d_x,g
	HALFB(82, X8, Y8)
	VMULPS       (DX), Y8, Y8  // dmin·d_x,g
	VMOVUPS      Y8, 32(SP)
	VMOVDQU      0(SI), X11
	VPSRLW       $4, X11, X9
	VPAND        X14, X9, X9   // mins
	VPAND        X14, X11, X11 // scales
	VMOVDQU      16(SI), Y8    // qs[0:32]: groups 0…3
	Q2KGRP(0, 0, 0, 0, 32)
	Q2KGRP(2, 32, 16, 4, 36)
	Q2KGRP(4, 64, 32, 8, 40)
	Q2KGRP(6, 96, 48, 12, 44)
	VMOVDQU      48(SI), Y8    // qs[32:64]: groups 4…7
	Q2KGRP(0, 128, 64, 16, 48)
	Q2KGRP(2, 160, 80, 20, 52)
	Q2KGRP(4, 192, 96, 24, 56)
	Q2KGRP(6, 224, 112, 28, 60)
	NEXTSB(84, q2kloop)
	HSUM(Y0, X0, X8)
	HSUM(Y10, X10, X8)
	VSUBSS       X10, X0, X0
	VZEROUPPER
	MOVSS        X0, ret+32(FP)
	RET
