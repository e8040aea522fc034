//go:build amd64 && !purego

#include "textflag.h"
#include "hsum_amd64.h"

// F16 and BF16 tile kernels (AVX-512 F/VL/BW: EVEX encodings for
// registers Y16…Y23; F16 on 512-bit vectors, below): four weight rows
// against four activation rows per call, each weight chunk converted once
// for the four activation rows and each activation chunk loaded once for
// the four weight rows. What follows describes the BF16 tile; the F16
// one (dotF16t4x4Z) does the same with two accumulators per vector.
//
// Each (weight row r, activation row c) pair goes through dotF16AVX2's
// (dotBF16AVX2's) float steps exactly. The one-row kernel keeps four
// accumulators: accumulator a takes elements 32j+8a…32j+8a+7 of every
// whole 32-chunk j, in order, and accumulator 0 then the 8-chunks past
// the last whole 32-chunk; at the end (a0+a1)+(a2+a3), then HSUM_Y0_X0.
// Sixteen pairs times four accumulators do not fit in registers, so the
// tile goes by blocks of KBLOCK bytes of weight row (whole 32-chunks; the
// block's four activation and four weight rows, 24 KiB, stay in L1), and
// over each block makes one pass per accumulator, sixteen accumulators
// each (Y(4r+c)), loaded from and stored to the stack:
//
//	a·512(SP) accumulator a of the sixteen pairs
//
// then accumulator 0 takes the 8-chunks past the last 32-chunk, and
// a0+a1, a2+a3 and their sum are formed as the one-row kernel does.
//
// Every FMA is a_{r,c} += w_r·x_c with the one-row kernel's operands and
// every add the one-row kernel's (first operand first), so each value is
// bitwise dotF16AVX2's (dotBF16AVX2's).
//
// Registers: SI, R10, R11, R12 weight rows; DI, R13, R14, BX activation
// rows; AX the weight byte offset (the activation one is twice it); R8
// bytes of whole 32-chunks, R9 bytes of all n values (weight side); CX
// and R15 the block's start and end.

#define KBLOCK 2048


#define ZERO16 \
	ZERO4(Y0, Y1, Y2, Y3) \
	ZERO4(Y4, Y5, Y6, Y7) \
	ZERO4(Y8, Y9, Y10, Y11) \
	ZERO4(Y12, Y13, Y14, Y15)

#define LOAD16(off) \
	VMOVUPS off+0(SP), Y0 \
	VMOVUPS off+32(SP), Y1 \
	VMOVUPS off+64(SP), Y2 \
	VMOVUPS off+96(SP), Y3 \
	VMOVUPS off+128(SP), Y4 \
	VMOVUPS off+160(SP), Y5 \
	VMOVUPS off+192(SP), Y6 \
	VMOVUPS off+224(SP), Y7 \
	VMOVUPS off+256(SP), Y8 \
	VMOVUPS off+288(SP), Y9 \
	VMOVUPS off+320(SP), Y10 \
	VMOVUPS off+352(SP), Y11 \
	VMOVUPS off+384(SP), Y12 \
	VMOVUPS off+416(SP), Y13 \
	VMOVUPS off+448(SP), Y14 \
	VMOVUPS off+480(SP), Y15

#define STORE16(off) \
	VMOVUPS Y0, off+0(SP) \
	VMOVUPS Y1, off+32(SP) \
	VMOVUPS Y2, off+64(SP) \
	VMOVUPS Y3, off+96(SP) \
	VMOVUPS Y4, off+128(SP) \
	VMOVUPS Y5, off+160(SP) \
	VMOVUPS Y6, off+192(SP) \
	VMOVUPS Y7, off+224(SP) \
	VMOVUPS Y8, off+256(SP) \
	VMOVUPS Y9, off+288(SP) \
	VMOVUPS Y10, off+320(SP) \
	VMOVUPS Y11, off+352(SP) \
	VMOVUPS Y12, off+384(SP) \
	VMOVUPS Y13, off+416(SP) \
	VMOVUPS Y14, off+448(SP) \
	VMOVUPS Y15, off+480(SP)

// ADD16(off): Y(i) = Y(i) + off(SP)[i], Y(i) the first operand.
#define ADD16(off) \
	VADDPS off+0(SP), Y0, Y0 \
	VADDPS off+32(SP), Y1, Y1 \
	VADDPS off+64(SP), Y2, Y2 \
	VADDPS off+96(SP), Y3, Y3 \
	VADDPS off+128(SP), Y4, Y4 \
	VADDPS off+160(SP), Y5, Y5 \
	VADDPS off+192(SP), Y6, Y6 \
	VADDPS off+224(SP), Y7, Y7 \
	VADDPS off+256(SP), Y8, Y8 \
	VADDPS off+288(SP), Y9, Y9 \
	VADDPS off+320(SP), Y10, Y10 \
	VADDPS off+352(SP), Y11, Y11 \
	VADDPS off+384(SP), Y12, Y12 \
	VADDPS off+416(SP), Y13, Y13 \
	VADDPS off+448(SP), Y14, Y14 \
	VADDPS off+480(SP), Y15, Y15

// W_F16(off), W_BF16(off): the four weight rows' 8 values at off(row)(AX*1) as float32 in Y16…Y19.
#define W_F16(off) \
	VCVTPH2PS off(SI)(AX*1), Y16 \
	VCVTPH2PS off(R10)(AX*1), Y17 \
	VCVTPH2PS off(R11)(AX*1), Y18 \
	VCVTPH2PS off(R12)(AX*1), Y19

#define W_BF16(off) \
	VPMOVZXWD off(SI)(AX*1), Y16 \
	VPMOVZXWD off(R10)(AX*1), Y17 \
	VPMOVZXWD off(R11)(AX*1), Y18 \
	VPMOVZXWD off(R12)(AX*1), Y19 \
	VPSLLD $16, Y16, Y16 \
	VPSLLD $16, Y17, Y17 \
	VPSLLD $16, Y18, Y18 \
	VPSLLD $16, Y19, Y19

// FMA16(off): the four activation rows' 8 values at off(row)(AX*2) into Y20…Y23, then Y(4r+c) += Y(16+r)·Y(20+c).
#define FMA16(off) \
	VMOVUPS off(DI)(AX*2), Y20 \
	VMOVUPS off(R13)(AX*2), Y21 \
	VMOVUPS off(R14)(AX*2), Y22 \
	VMOVUPS off(BX)(AX*2), Y23 \
	VFMADD231PS Y20, Y16, Y0 \
	VFMADD231PS Y21, Y16, Y1 \
	VFMADD231PS Y22, Y16, Y2 \
	VFMADD231PS Y23, Y16, Y3 \
	VFMADD231PS Y20, Y17, Y4 \
	VFMADD231PS Y21, Y17, Y5 \
	VFMADD231PS Y22, Y17, Y6 \
	VFMADD231PS Y23, Y17, Y7 \
	VFMADD231PS Y20, Y18, Y8 \
	VFMADD231PS Y21, Y18, Y9 \
	VFMADD231PS Y22, Y18, Y10 \
	VFMADD231PS Y23, Y18, Y11 \
	VFMADD231PS Y20, Y19, Y12 \
	VFMADD231PS Y21, Y19, Y13 \
	VFMADD231PS Y22, Y19, Y14 \
	VFMADD231PS Y23, Y19, Y15

// OUT16: HSUM of each 0(SP)[i] into out[i] (DX).
#define OUT16 \
	VMOVUPS 0(SP), Y0 \
	HSUM_Y0_X0 \
	VMOVSS X0, 0(DX) \
	VMOVUPS 32(SP), Y0 \
	HSUM_Y0_X0 \
	VMOVSS X0, 4(DX) \
	VMOVUPS 64(SP), Y0 \
	HSUM_Y0_X0 \
	VMOVSS X0, 8(DX) \
	VMOVUPS 96(SP), Y0 \
	HSUM_Y0_X0 \
	VMOVSS X0, 12(DX) \
	VMOVUPS 128(SP), Y0 \
	HSUM_Y0_X0 \
	VMOVSS X0, 16(DX) \
	VMOVUPS 160(SP), Y0 \
	HSUM_Y0_X0 \
	VMOVSS X0, 20(DX) \
	VMOVUPS 192(SP), Y0 \
	HSUM_Y0_X0 \
	VMOVSS X0, 24(DX) \
	VMOVUPS 224(SP), Y0 \
	HSUM_Y0_X0 \
	VMOVSS X0, 28(DX) \
	VMOVUPS 256(SP), Y0 \
	HSUM_Y0_X0 \
	VMOVSS X0, 32(DX) \
	VMOVUPS 288(SP), Y0 \
	HSUM_Y0_X0 \
	VMOVSS X0, 36(DX) \
	VMOVUPS 320(SP), Y0 \
	HSUM_Y0_X0 \
	VMOVSS X0, 40(DX) \
	VMOVUPS 352(SP), Y0 \
	HSUM_Y0_X0 \
	VMOVSS X0, 44(DX) \
	VMOVUPS 384(SP), Y0 \
	HSUM_Y0_X0 \
	VMOVSS X0, 48(DX) \
	VMOVUPS 416(SP), Y0 \
	HSUM_Y0_X0 \
	VMOVSS X0, 52(DX) \
	VMOVUPS 448(SP), Y0 \
	HSUM_Y0_X0 \
	VMOVSS X0, 56(DX) \
	VMOVUPS 480(SP), Y0 \
	HSUM_Y0_X0 \
	VMOVSS X0, 60(DX)

// F16 4x4 tile on 512-bit vectors (AVX-512 F): the one-row kernel's
// accumulators 0 and 1 take the values 32j…32j+15 of each whole 32-chunk
// j, which a 512-bit accumulator holding both (0 in its low half, 1 in
// its high half) takes in one fused multiply-add of 16 contiguous values,
// lane for lane the same operations; likewise 2 and 3 with 32j+16…31.
// So the tile makes two passes over each KBLOCK block instead of four,
// with half the instructions per multiply-add: pair p = 4r+c keeps
// accumulators 0|1 at 64p(SP) and 2|3 at 1024+64p(SP). The 8-chunks past
// the last 32-chunk then go to accumulator 0 alone (256-bit, the low
// halves), and each pair's (a0+a1)+(a2+a3) is reduced as dotF16AVX2's.

#define LOADZ16(off) \
	VMOVUPS off+0(SP), Z0 \
	VMOVUPS off+64(SP), Z1 \
	VMOVUPS off+128(SP), Z2 \
	VMOVUPS off+192(SP), Z3 \
	VMOVUPS off+256(SP), Z4 \
	VMOVUPS off+320(SP), Z5 \
	VMOVUPS off+384(SP), Z6 \
	VMOVUPS off+448(SP), Z7 \
	VMOVUPS off+512(SP), Z8 \
	VMOVUPS off+576(SP), Z9 \
	VMOVUPS off+640(SP), Z10 \
	VMOVUPS off+704(SP), Z11 \
	VMOVUPS off+768(SP), Z12 \
	VMOVUPS off+832(SP), Z13 \
	VMOVUPS off+896(SP), Z14 \
	VMOVUPS off+960(SP), Z15

#define STOREZ16(off) \
	VMOVUPS Z0, off+0(SP) \
	VMOVUPS Z1, off+64(SP) \
	VMOVUPS Z2, off+128(SP) \
	VMOVUPS Z3, off+192(SP) \
	VMOVUPS Z4, off+256(SP) \
	VMOVUPS Z5, off+320(SP) \
	VMOVUPS Z6, off+384(SP) \
	VMOVUPS Z7, off+448(SP) \
	VMOVUPS Z8, off+512(SP) \
	VMOVUPS Z9, off+576(SP) \
	VMOVUPS Z10, off+640(SP) \
	VMOVUPS Z11, off+704(SP) \
	VMOVUPS Z12, off+768(SP) \
	VMOVUPS Z13, off+832(SP) \
	VMOVUPS Z14, off+896(SP) \
	VMOVUPS Z15, off+960(SP)

// LOADY16, STOREY16: the low halves (accumulator 0 of each pair).
#define LOADY16 \
	VMOVUPS 0(SP), Y0 \
	VMOVUPS 64(SP), Y1 \
	VMOVUPS 128(SP), Y2 \
	VMOVUPS 192(SP), Y3 \
	VMOVUPS 256(SP), Y4 \
	VMOVUPS 320(SP), Y5 \
	VMOVUPS 384(SP), Y6 \
	VMOVUPS 448(SP), Y7 \
	VMOVUPS 512(SP), Y8 \
	VMOVUPS 576(SP), Y9 \
	VMOVUPS 640(SP), Y10 \
	VMOVUPS 704(SP), Y11 \
	VMOVUPS 768(SP), Y12 \
	VMOVUPS 832(SP), Y13 \
	VMOVUPS 896(SP), Y14 \
	VMOVUPS 960(SP), Y15

#define STOREY16 \
	VMOVUPS Y0, 0(SP) \
	VMOVUPS Y1, 64(SP) \
	VMOVUPS Y2, 128(SP) \
	VMOVUPS Y3, 192(SP) \
	VMOVUPS Y4, 256(SP) \
	VMOVUPS Y5, 320(SP) \
	VMOVUPS Y6, 384(SP) \
	VMOVUPS Y7, 448(SP) \
	VMOVUPS Y8, 512(SP) \
	VMOVUPS Y9, 576(SP) \
	VMOVUPS Y10, 640(SP) \
	VMOVUPS Y11, 704(SP) \
	VMOVUPS Y12, 768(SP) \
	VMOVUPS Y13, 832(SP) \
	VMOVUPS Y14, 896(SP) \
	VMOVUPS Y15, 960(SP)

// WZ_F16(off): the four weight rows' 16 values at off(row)(AX*1) as
// float32 in Z16…Z19.
#define WZ_F16(off) \
	VCVTPH2PS off(SI)(AX*1), Z16 \
	VCVTPH2PS off(R10)(AX*1), Z17 \
	VCVTPH2PS off(R11)(AX*1), Z18 \
	VCVTPH2PS off(R12)(AX*1), Z19

// FMAZ16(off): the four activation rows' 16 values at off(row)(AX*2) in
// Z20…Z23, then Z(4r+c) += Z(16+r)·Z(20+c).
#define FMAZ16(off) \
	VMOVUPS off(DI)(AX*2), Z20 \
	VMOVUPS off(R13)(AX*2), Z21 \
	VMOVUPS off(R14)(AX*2), Z22 \
	VMOVUPS off(BX)(AX*2), Z23 \
	VFMADD231PS Z20, Z16, Z0 \
	VFMADD231PS Z21, Z16, Z1 \
	VFMADD231PS Z22, Z16, Z2 \
	VFMADD231PS Z23, Z16, Z3 \
	VFMADD231PS Z20, Z17, Z4 \
	VFMADD231PS Z21, Z17, Z5 \
	VFMADD231PS Z22, Z17, Z6 \
	VFMADD231PS Z23, Z17, Z7 \
	VFMADD231PS Z20, Z18, Z8 \
	VFMADD231PS Z21, Z18, Z9 \
	VFMADD231PS Z22, Z18, Z10 \
	VFMADD231PS Z23, Z18, Z11 \
	VFMADD231PS Z20, Z19, Z12 \
	VFMADD231PS Z21, Z19, Z13 \
	VFMADD231PS Z22, Z19, Z14 \
	VFMADD231PS Z23, Z19, Z15

// SUMZ(p): out[p] = HSUM((a0+a1)+(a2+a3)) of pair p.
#define SUMZ(p) \
	VMOVUPS 64*p(SP), Y0 \
	VADDPS  64*p+32(SP), Y0, Y0 \
	VMOVUPS 1024+64*p(SP), Y2 \
	VADDPS  1024+64*p+32(SP), Y2, Y2 \
	VADDPS  Y2, Y0, Y0 \
	HSUM_Y0_X0 \
	VMOVSS  X0, 4*p(DX)

// func dotF16t4x4Z(w *uint16, ws int, x *float32, xs int, n int, out *float32)
// ws and xs in bytes, n a multiple of 8.
TEXT ·dotF16t4x4Z(SB), 0, $2048-48
	MOVQ w+0(FP), SI
	MOVQ ws+8(FP), R8
	MOVQ x+16(FP), DI
	MOVQ xs+24(FP), R9
	MOVQ n+32(FP), CX
	MOVQ out+40(FP), DX
	LEAQ (SI)(R8*1), R10
	LEAQ (SI)(R8*2), R11
	LEAQ (R10)(R8*2), R12
	LEAQ (DI)(R9*1), R13
	LEAQ (DI)(R9*2), R14
	LEAQ (R13)(R9*2), BX
	MOVQ CX, R8
	ANDQ $-32, R8
	SHLQ $1, R8
	LEAQ (CX)(CX*1), R9
	VPXORD Z0, Z0, Z0
	VMOVUPS Z0, Z1
	VMOVUPS Z0, Z2
	VMOVUPS Z0, Z3
	VMOVUPS Z0, Z4
	VMOVUPS Z0, Z5
	VMOVUPS Z0, Z6
	VMOVUPS Z0, Z7
	VMOVUPS Z0, Z8
	VMOVUPS Z0, Z9
	VMOVUPS Z0, Z10
	VMOVUPS Z0, Z11
	VMOVUPS Z0, Z12
	VMOVUPS Z0, Z13
	VMOVUPS Z0, Z14
	VMOVUPS Z0, Z15
	STOREZ16(0)
	STOREZ16(1024)
	XORQ CX, CX

f16zblock:
	CMPQ    CX, R8
	JGE     f16ztail
	LEAQ    KBLOCK(CX), R15
	CMPQ    R15, R8
	CMOVQGT R8, R15

	LOADZ16(1024)
	MOVQ CX, AX

f16zb:
	WZ_F16(32)
	FMAZ16(64)
	ADDQ $64, AX
	CMPQ AX, R15
	JLT  f16zb
	STOREZ16(1024)

	LOADZ16(0)
	MOVQ CX, AX

f16za:
	WZ_F16(0)
	FMAZ16(0)
	ADDQ $64, AX
	CMPQ AX, R15
	JLT  f16za
	STOREZ16(0)
	MOVQ R15, CX
	JMP  f16zblock

f16ztail:
	MOVQ R8, AX
	CMPQ AX, R9
	JGE  f16zsum
	LOADY16

f16za0tail:
	W_F16(0)
	FMA16(0)
	ADDQ $16, AX
	CMPQ AX, R9
	JLT  f16za0tail
	STOREY16

f16zsum:
	SUMZ(0)
	SUMZ(1)
	SUMZ(2)
	SUMZ(3)
	SUMZ(4)
	SUMZ(5)
	SUMZ(6)
	SUMZ(7)
	SUMZ(8)
	SUMZ(9)
	SUMZ(10)
	SUMZ(11)
	SUMZ(12)
	SUMZ(13)
	SUMZ(14)
	SUMZ(15)
	VZEROUPPER
	RET

// func dotBF16t4x4AVX512(w *uint16, ws int, x *float32, xs int, n int, out *float32)
// ws and xs in bytes, n a multiple of 8.
TEXT ·dotBF16t4x4AVX512(SB), 0, $2048-48
	MOVQ w+0(FP), SI
	MOVQ ws+8(FP), R8
	MOVQ x+16(FP), DI
	MOVQ xs+24(FP), R9
	MOVQ n+32(FP), CX
	MOVQ out+40(FP), DX
	LEAQ (SI)(R8*1), R10
	LEAQ (SI)(R8*2), R11
	LEAQ (R10)(R8*2), R12
	LEAQ (DI)(R9*1), R13
	LEAQ (DI)(R9*2), R14
	LEAQ (R13)(R9*2), BX
	MOVQ CX, R8
	ANDQ $-32, R8
	SHLQ $1, R8
	LEAQ (CX)(CX*1), R9
	ZERO16
	STORE16(0)
	STORE16(512)
	STORE16(1024)
	STORE16(1536)
	XORQ CX, CX

dotBF16t4x4AVX512block:
	CMPQ    CX, R8
	JGE     dotBF16t4x4AVX512tail
	LEAQ    KBLOCK(CX), R15
	CMPQ    R15, R8
	CMOVQGT R8, R15

	LOAD16(1536)
	MOVQ CX, AX

dotBF16t4x4AVX512a3:
	W_BF16(48)
	FMA16(96)
	ADDQ $64, AX
	CMPQ AX, R15
	JLT  dotBF16t4x4AVX512a3
	STORE16(1536)

	LOAD16(1024)
	MOVQ CX, AX

dotBF16t4x4AVX512a2:
	W_BF16(32)
	FMA16(64)
	ADDQ $64, AX
	CMPQ AX, R15
	JLT  dotBF16t4x4AVX512a2
	STORE16(1024)

	LOAD16(512)
	MOVQ CX, AX

dotBF16t4x4AVX512a1:
	W_BF16(16)
	FMA16(32)
	ADDQ $64, AX
	CMPQ AX, R15
	JLT  dotBF16t4x4AVX512a1
	STORE16(512)

	LOAD16(0)
	MOVQ CX, AX

dotBF16t4x4AVX512a0:
	W_BF16(0)
	FMA16(0)
	ADDQ $64, AX
	CMPQ AX, R15
	JLT  dotBF16t4x4AVX512a0
	STORE16(0)
	MOVQ R15, CX
	JMP  dotBF16t4x4AVX512block

dotBF16t4x4AVX512tail:
	MOVQ R8, AX
	CMPQ AX, R9
	JGE  dotBF16t4x4AVX512sum
	LOAD16(0)

dotBF16t4x4AVX512a0tail:
	W_BF16(0)
	FMA16(0)
	ADDQ $16, AX
	CMPQ AX, R9
	JLT  dotBF16t4x4AVX512a0tail
	STORE16(0)

dotBF16t4x4AVX512sum:
	LOAD16(1024)
	ADD16(1536)
	STORE16(1536)
	LOAD16(0)
	ADD16(512)
	ADD16(1536)
	STORE16(0)
	OUT16
	VZEROUPPER
	RET

// F16 decode: four weight rows (ws bytes apart) against one activation
// row, each row with dotF16AVX2's four accumulators (row r's accumulator
// a in Y(16+4r+a)), the same FMAs per element and the same additions at
// the end, so each value is bitwise dotF16AVX2's; four independent
// streams instead of one.

// F16ROW32(row, a0): the four accumulators from a0 take the 32 values at
// (row) against the activations in Y0…Y3.
#define F16ROW32(row, a0, a1, a2, a3) \
	VCVTPH2PS   (row), Y4 \
	VCVTPH2PS   16(row), Y5 \
	VCVTPH2PS   32(row), Y6 \
	VCVTPH2PS   48(row), Y7 \
	VFMADD231PS Y0, Y4, a0 \
	VFMADD231PS Y1, Y5, a1 \
	VFMADD231PS Y2, Y6, a2 \
	VFMADD231PS Y3, Y7, a3

// F16OUT(a0, a1, a2, a3, off): out[off/4] = HSUM((a0+a1)+(a2+a3)).
#define F16OUT(a0, a1, a2, a3, off) \
	VADDPS  a1, a0, a0 \
	VADDPS  a3, a2, a2 \
	VADDPS  a2, a0, a0 \
	VMOVAPS a0, Y0 \
	HSUM_Y0_X0 \
	VMOVSS  X0, off(R8)

// func dotF16t4x1AVX512(w *uint16, ws int, x *float32, n int, out *float32)
//
// n a multiple of 8; ws in bytes.
TEXT ·dotF16t4x1AVX512(SB), NOSPLIT, $0-40
	MOVQ w+0(FP), SI
	MOVQ ws+8(FP), R9
	MOVQ x+16(FP), DI
	MOVQ n+24(FP), CX
	MOVQ out+32(FP), R8
	LEAQ (SI)(R9*1), R10
	LEAQ (R10)(R9*1), R11
	LEAQ (R11)(R9*1), R12
	VPXORD Y16, Y16, Y16
	VPXORD Y17, Y17, Y17
	VPXORD Y18, Y18, Y18
	VPXORD Y19, Y19, Y19
	VPXORD Y20, Y20, Y20
	VPXORD Y21, Y21, Y21
	VPXORD Y22, Y22, Y22
	VPXORD Y23, Y23, Y23
	VPXORD Y24, Y24, Y24
	VPXORD Y25, Y25, Y25
	VPXORD Y26, Y26, Y26
	VPXORD Y27, Y27, Y27
	VPXORD Y28, Y28, Y28
	VPXORD Y29, Y29, Y29
	VPXORD Y30, Y30, Y30
	VPXORD Y31, Y31, Y31

f16t41loop32:
	CMPQ       CX, $32
	JLT        f16t41loop8
	PREFETCHT0 1024(SI)
	PREFETCHT0 1024(R10)
	PREFETCHT0 1024(R11)
	PREFETCHT0 1024(R12)
	VMOVUPS    (DI), Y0
	VMOVUPS    32(DI), Y1
	VMOVUPS    64(DI), Y2
	VMOVUPS    96(DI), Y3
	F16ROW32(SI, Y16, Y17, Y18, Y19)
	F16ROW32(R10, Y20, Y21, Y22, Y23)
	F16ROW32(R11, Y24, Y25, Y26, Y27)
	F16ROW32(R12, Y28, Y29, Y30, Y31)
	ADDQ       $64, SI
	ADDQ       $64, R10
	ADDQ       $64, R11
	ADDQ       $64, R12
	ADDQ       $128, DI
	SUBQ       $32, CX
	JMP        f16t41loop32

f16t41loop8:
	CMPQ        CX, $8
	JLT         f16t41done
	VMOVUPS     (DI), Y0
	VCVTPH2PS   (SI), Y4
	VCVTPH2PS   (R10), Y5
	VCVTPH2PS   (R11), Y6
	VCVTPH2PS   (R12), Y7
	VFMADD231PS Y0, Y4, Y16
	VFMADD231PS Y0, Y5, Y20
	VFMADD231PS Y0, Y6, Y24
	VFMADD231PS Y0, Y7, Y28
	ADDQ        $16, SI
	ADDQ        $16, R10
	ADDQ        $16, R11
	ADDQ        $16, R12
	ADDQ        $32, DI
	SUBQ        $8, CX
	JMP         f16t41loop8

f16t41done:
	F16OUT(Y16, Y17, Y18, Y19, 0)
	F16OUT(Y20, Y21, Y22, Y23, 4)
	F16OUT(Y24, Y25, Y26, Y27, 8)
	F16OUT(Y28, Y29, Y30, Y31, 12)
	VZEROUPPER
	RET
