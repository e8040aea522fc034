//go:build amd64 && !purego

#include "textflag.h"
#include "hsum_amd64.h"

// BF16 dot kernels (AVX512_BF16, 256-bit vectors): weights and
// activations both bfloat16 (the activations rounded once per MatMul,
// to nearest even), VDPBF16PS adding the products of 16 pairs into eight
// float32 lanes per instruction. Every (weight row, activation row) pair
// has one accumulator, advanced 16 values at a time in order, then
// reduced as HSUM_Y0_X0 does; the 4x4, 4x1 and 1x1 kernels do exactly
// these steps per pair, so every value is the same whichever computes
// it. k is a multiple of 16 here (n16 = k/16 > 0); the wrappers add the
// rest.
//
// Registers: SI, R11, R12, BX the weight rows (their 16 values in
// Y0…Y3), DI the activation row (Y4; the 4x4 tile's rows c at DI + c·R9
// in Y(4+c)), CX the 16-value steps left, accumulators from Y16.

// VDPBF16PS(s2, s1, d): Yd.fp32[i] += Ys1.bf16[2i+1]·Ys2.bf16[2i+1] +
// Ys1.bf16[2i]·Ys2.bf16[2i], i = 0…7, the operands in the Go assembler's
// order (VDPBF16PS Ys2, Ys1, Yd) by register number. The Go assembler
// (1.26) has no AVX512_BF16 mnemonics, so the instruction is spelled as
// its EVEX bytes (EVEX.256.F3.0F38.W0 52 /r, register operands only):
// 62, then P0 = R X B R' 0 0 1 0 (map 0F38), P1 = W0 vvvv 1 pp=10 (F3),
// P2 = z L'L=01 b V' aaa, the opcode 52 and ModRM (mod 11, reg d, rm
// s2), the R, X, B, R', vvvv and V' bits inverted. Check an encoding
// with GNU as and objdump:
//
//	printf '.byte 0x62,0xe2,0x7e,0x28,0x52,0xc4\n' | as -o /tmp/t.o && objdump -d /tmp/t.o
//	# vdpbf16ps %ymm4,%ymm0,%ymm16, that is VDPBF16PS(4, 0, 16)
#define VDPBF16PS(s2, s1, d) \
	BYTE $0x62 \
	BYTE $(((((d)>>3)&1)^1)<<7 | ((((s2)>>4)&1)^1)<<6 | ((((s2)>>3)&1)^1)<<5 | ((((d)>>4)&1)^1)<<4 | 2) \
	BYTE $((((s1)&15)^15)<<3 | 6) \
	BYTE $(0x20 | ((((s1)>>4)&1)^1)<<3) \
	BYTE $0x52 \
	BYTE $(0xc0 | ((d)&7)<<3 | ((s2)&7))

// BF_ARGS: w in SI, ws in bytes in R11, x in DI.
#define BF_ARGS \
	MOVQ w+0(FP), SI   \
	MOVQ ws+8(FP), R11 \
	SHLQ $1, R11       \
	MOVQ x+16(FP), DI

// BF_W4: the four weight rows' 16 values in Y0…Y3.
#define BF_W4 \
	VMOVDQU (SI), Y0 \
	VMOVDQU (R11), Y1 \
	VMOVDQU (R12), Y2 \
	VMOVDQU (BX), Y3

// BF_NEXT(loop): on to the next 16 values of the four weight rows and
// the activation rows, looping while CX has steps left.
#define BF_NEXT(loop) \
	ADDQ $32, SI  \
	ADDQ $32, R11 \
	ADDQ $32, R12 \
	ADDQ $32, BX  \
	ADDQ $32, DI  \
	DECQ CX       \
	JNZ  loop

// BF_DP4(r): weight row r (Y(r)) against the four activation rows
// (Y4…Y7) into Y(16+4r)…Y(19+4r).
#define BF_DP4(r) \
	VDPBF16PS(4, r, 16+4*(r)) \
	VDPBF16PS(5, r, 17+4*(r)) \
	VDPBF16PS(6, r, 18+4*(r)) \
	VDPBF16PS(7, r, 19+4*(r))

// func dotBF16t4x4DP(w *uint16, ws int, x *uint16, xs int, n16 int, out *float32)
//
// out[4r+c] for weight row r (w + r·ws values) and activation row c
// (x + c·xs values): pair (r, c) in Y(16+4r+c).
TEXT ·dotBF16t4x4DP(SB), NOSPLIT, $0-48
	BF_ARGS
	MOVQ xs+24(FP), R9
	SHLQ $1, R9
	MOVQ n16+32(FP), CX
	LEAQ (SI)(R11*2), R12
	LEAQ (R12)(R11*1), BX
	ADDQ SI, R11
	LEAQ (R9)(R9*2), R13
	ZERO_Y16_Y31

bf44loop:
	BF_W4
	VMOVDQU (DI), Y4
	VMOVDQU (DI)(R9*1), Y5
	VMOVDQU (DI)(R9*2), Y6
	VMOVDQU (DI)(R13*1), Y7
	BF_DP4(0)
	BF_DP4(1)
	BF_DP4(2)
	BF_DP4(3)
	BF_NEXT(bf44loop)

	MOVQ out+40(FP), R8
	HSUM_TO4(Y16, Y17, Y18, Y19, 0, R8)
	HSUM_TO4(Y20, Y21, Y22, Y23, 16, R8)
	HSUM_TO4(Y24, Y25, Y26, Y27, 32, R8)
	HSUM_TO4(Y28, Y29, Y30, Y31, 48, R8)
	VZEROUPPER
	RET

// func dotBF16t4x1DP(w *uint16, ws int, x *uint16, n16 int, out *float32)
//
// Four weight rows against one activation row: row r in Y(16+r).
TEXT ·dotBF16t4x1DP(SB), NOSPLIT, $0-40
	BF_ARGS
	MOVQ n16+24(FP), CX
	LEAQ (SI)(R11*2), R12
	LEAQ (R12)(R11*1), BX
	ADDQ SI, R11
	ZEROD4(Y16, Y17, Y18, Y19)

bf41loop:
	BF_W4
	VMOVDQU (DI), Y4
	VDPBF16PS(4, 0, 16)
	VDPBF16PS(4, 1, 17)
	VDPBF16PS(4, 2, 18)
	VDPBF16PS(4, 3, 19)
	BF_NEXT(bf41loop)

	MOVQ out+32(FP), R8
	HSUM_TO4(Y16, Y17, Y18, Y19, 0, R8)
	VZEROUPPER
	RET

// func dotBF16DP(w, x *uint16, n16 int) float32
TEXT ·dotBF16DP(SB), NOSPLIT, $0-28
	MOVQ w+0(FP), SI
	MOVQ x+8(FP), DI
	MOVQ n16+16(FP), CX
	VPXORD Y16, Y16, Y16

bf11loop:
	VMOVDQU (SI), Y0
	VMOVDQU (DI), Y4
	VDPBF16PS(4, 0, 16)
	ADDQ $32, SI
	ADDQ $32, DI
	DECQ CX
	JNZ  bf11loop

	VMOVAPS Y16, Y0
	HSUM_Y0_X0
	VZEROUPPER
	MOVSS X0, ret+24(FP)
	RET
