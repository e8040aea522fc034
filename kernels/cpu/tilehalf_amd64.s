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

// XROWS_ADD, LOADY16H, STOREY16H, SUMZH: dotF16t4x8Z's (below; here,
// before any TEXT, as go vet reads a macro as part of the function above
// it).
#define XROWS_ADD(op) \
	op 4096(SP), DI  \
	op 4096(SP), R13 \
	op 4096(SP), R14 \
	op 4096(SP), BX

#define LOADY16H(off) LOADY16(off+2048)
#define STOREY16H(off) STOREY16(off+2048)

// SUMZH(p): out[16+p] = SUMZ(p) of rows 4…7 (accumulators 2048 on).
#define SUMZH(p) \
	VMOVUPS 2048+64*p(SP), Y0 \
	VADDPS  2048+64*p+32(SP), Y0, Y0 \
	VMOVUPS 3072+64*p(SP), Y2 \
	VADDPS  3072+64*p+32(SP), Y2, Y2 \
	VADDPS  Y2, Y0, Y0 \
	HSUM_Y0_X0 \
	VMOVSS  X0, 64+4*p(DX)


// EACH16Y(m, off, step): m(mem, Y(i)) for i = 0…15, mem = off+step·i(SP);
// EACH16Z the same over Z0…Z15. With m one of MEM_LOAD (Y(i) = mem),
// MEM_STORE (mem = Y(i)) and MEM_ADD (Y(i) = Y(i) + mem, Y(i) the first
// operand), they move the sixteen accumulators between registers and
// the stack.
#define EACH16Y(m, off, step) \
	EACH4(m, off, step, Y0, Y1, Y2, Y3)          \
	EACH4(m, off+4*step, step, Y4, Y5, Y6, Y7)   \
	EACH4(m, off+8*step, step, Y8, Y9, Y10, Y11) \
	EACH4(m, off+12*step, step, Y12, Y13, Y14, Y15)

#define EACH16Z(m, off, step) \
	EACH4(m, off, step, Z0, Z1, Z2, Z3)          \
	EACH4(m, off+4*step, step, Z4, Z5, Z6, Z7)   \
	EACH4(m, off+8*step, step, Z8, Z9, Z10, Z11) \
	EACH4(m, off+12*step, step, Z12, Z13, Z14, Z15)

#define EACH4(m, off, step, a, b, c, d) \
	m(off(SP), a)        \
	m(off+step(SP), b)   \
	m(off+2*step(SP), c) \
	m(off+3*step(SP), d)

#define MEM_LOAD(mem, y) VMOVUPS mem, y
#define MEM_STORE(mem, y) VMOVUPS y, mem
#define MEM_ADD(mem, y) VADDPS mem, y, y

// EACH16P(m): m(p) for the sixteen pairs p = 0…15.
#define EACH16P(m) \
	m(0)  \
	m(1)  \
	m(2)  \
	m(3)  \
	m(4)  \
	m(5)  \
	m(6)  \
	m(7)  \
	m(8)  \
	m(9)  \
	m(10) \
	m(11) \
	m(12) \
	m(13) \
	m(14) \
	m(15)

// LOAD16(off), STORE16(off), ADD16(off): Y0…Y15 and the sixteen
// accumulators at off(SP), 32 bytes apart.
#define LOAD16(off) EACH16Y(MEM_LOAD, off, 32)
#define STORE16(off) EACH16Y(MEM_STORE, off, 32)
#define ADD16(off) EACH16Y(MEM_ADD, off, 32)

// TILE_ARGS: the 4x4 tiles' arguments in the registers above, and
// out in DX.
#define TILE_ARGS \
	MOVQ w+0(FP), SI      \
	MOVQ ws+8(FP), R8     \
	MOVQ x+16(FP), DI     \
	MOVQ xs+24(FP), R9    \
	MOVQ n+32(FP), CX     \
	MOVQ out+40(FP), DX   \
	LEAQ (SI)(R8*1), R10  \
	LEAQ (SI)(R8*2), R11  \
	LEAQ (R10)(R8*2), R12 \
	LEAQ (DI)(R9*1), R13  \
	LEAQ (DI)(R9*2), R14  \
	LEAQ (R13)(R9*2), BX  \
	MOVQ CX, R8           \
	ANDQ $-32, R8         \
	SHLQ $1, R8           \
	LEAQ (CX)(CX*1), R9

// TILE_BLOCK(done): CX at the next block's start, R15 = its end; to
// done when the whole 32-chunks are done.
#define TILE_BLOCK(done) \
	CMPQ    CX, R8        \
	JGE     done          \
	LEAQ    KBLOCK(CX), R15 \
	CMPQ    R15, R8       \
	CMOVQGT R8, R15

// TILE_PASS(load, store, acc, w, fma, wo, xo, loop): one pass over the
// block, the accumulators loaded by load(acc) and stored by store(acc),
// per 32-chunk w(wo) (the weight values) and fma(xo) (the activations,
// the products).
#define TILE_PASS(load, store, acc, w, fma, wo, xo, loop) \
	load(acc)     \
	MOVQ CX, AX   \
loop: \
	w(wo)         \
	fma(xo)       \
	ADDQ $64, AX  \
	CMPQ AX, R15  \
	JLT  loop     \
	store(acc)

// TILE_TAIL(load, store, w, done, loop): accumulator 0 (load(0),
// store(0)) takes the 8-chunks past the last 32-chunk, weight values by
// w; to done at once if there are none.
#define TILE_TAIL(load, store, w, done, loop) \
	MOVQ R8, AX  \
	CMPQ AX, R9  \
	JGE  done    \
	load(0)      \
loop: \
	w(0)         \
	FMA16(0)     \
	ADDQ $16, AX \
	CMPQ AX, R9  \
	JLT  loop    \
	store(0)

// W_F16(off), W_BF16(off): the four weight rows' 8 values at
// off(row)(AX*1) as float32 in Y16…Y19; WZ_F16(off) their 16 values in
// Z16…Z19. W4(op, off, a, b, c, d): op of each row's values into a…d.
#define W4(op, off, a, b, c, d) \
	op off(SI)(AX*1), a  \
	op off(R10)(AX*1), b \
	op off(R11)(AX*1), c \
	op off(R12)(AX*1), d

#define W_F16(off) W4(VCVTPH2PS, off, Y16, Y17, Y18, Y19)
#define WZ_F16(off) W4(VCVTPH2PS, off, Z16, Z17, Z18, Z19)

#define W_BF16(off) \
	W4(VPMOVZXWD, off, Y16, Y17, Y18, Y19) \
	VPSLLD $16, Y16, Y16 \
	VPSLLD $16, Y17, Y17 \
	VPSLLD $16, Y18, Y18 \
	VPSLLD $16, Y19, Y19

// FMA4(w, x0, x1, x2, x3, a, b, c, d): a += w·x0, b += w·x1, c += w·x2,
// d += w·x3 (one weight row against the four activation rows).
#define FMA4(w, x0, x1, x2, x3, a, b, c, d) \
	VFMADD231PS x0, w, a \
	VFMADD231PS x1, w, b \
	VFMADD231PS x2, w, c \
	VFMADD231PS x3, w, d

// X4(off, a, b, c, d): the four activation rows' values at
// off(row)(AX*2) in a…d.
#define X4(off, a, b, c, d) \
	VMOVUPS off(DI)(AX*2), a  \
	VMOVUPS off(R13)(AX*2), b \
	VMOVUPS off(R14)(AX*2), c \
	VMOVUPS off(BX)(AX*2), d

// FMA16(off): the four activation rows' 8 values at off(row)(AX*2) into
// Y20…Y23, then Y(4r+c) += Y(16+r)·Y(20+c).
#define FMA16(off) \
	X4(off, Y20, Y21, Y22, Y23) \
	FMA4(Y16, Y20, Y21, Y22, Y23, Y0, Y1, Y2, Y3) \
	FMA4(Y17, Y20, Y21, Y22, Y23, Y4, Y5, Y6, Y7) \
	FMA4(Y18, Y20, Y21, Y22, Y23, Y8, Y9, Y10, Y11) \
	FMA4(Y19, Y20, Y21, Y22, Y23, Y12, Y13, Y14, Y15)

// OUT1(p): out[p] (DX) = HSUM of the accumulator at 32p(SP).
#define OUT1(p) \
	VMOVUPS 32*p(SP), Y0 \
	HSUM_Y0_X0 \
	VMOVSS X0, 4*p(DX)

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

#define LOADZ16(off) EACH16Z(MEM_LOAD, off, 64)
#define STOREZ16(off) EACH16Z(MEM_STORE, off, 64)

// LOADY16(0), STOREY16(0): the low halves (accumulator 0 of each pair).
#define LOADY16(off) EACH16Y(MEM_LOAD, off, 64)
#define STOREY16(off) EACH16Y(MEM_STORE, off, 64)

// FMAZ16(off): the four activation rows' 16 values at off(row)(AX*2) in
// Z20…Z23, then Z(4r+c) += Z(16+r)·Z(20+c).
#define FMAZ16(off) \
	X4(off, Z20, Z21, Z22, Z23) \
	FMA4(Z16, Z20, Z21, Z22, Z23, Z0, Z1, Z2, Z3) \
	FMA4(Z17, Z20, Z21, Z22, Z23, Z4, Z5, Z6, Z7) \
	FMA4(Z18, Z20, Z21, Z22, Z23, Z8, Z9, Z10, Z11) \
	FMA4(Z19, Z20, Z21, Z22, Z23, Z12, Z13, Z14, Z15)

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
	TILE_ARGS
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
	TILE_BLOCK(f16ztail)
	TILE_PASS(LOADZ16, STOREZ16, 1024, WZ_F16, FMAZ16, 32, 64, f16zb)
	TILE_PASS(LOADZ16, STOREZ16, 0, WZ_F16, FMAZ16, 0, 0, f16za)
	MOVQ R15, CX
	JMP  f16zblock

f16ztail:
	TILE_TAIL(LOADY16, STOREY16, W_F16, f16zsum, f16za0tail)

f16zsum:
	EACH16P(SUMZ)
	VZEROUPPER
	RET

// func dotBF16t4x4AVX512(w *uint16, ws int, x *float32, xs int, n int, out *float32)
// ws and xs in bytes, n a multiple of 8.
TEXT ·dotBF16t4x4AVX512(SB), 0, $2048-48
	TILE_ARGS
	ZERO4(Y0, Y1, Y2, Y3)
	ZERO4(Y4, Y5, Y6, Y7)
	ZERO4(Y8, Y9, Y10, Y11)
	ZERO4(Y12, Y13, Y14, Y15)
	STORE16(0)
	STORE16(512)
	STORE16(1024)
	STORE16(1536)
	XORQ CX, CX

bf16tblock:
	TILE_BLOCK(bf16ttail)
	TILE_PASS(LOAD16, STORE16, 1536, W_BF16, FMA16, 48, 96, bf16ta3)
	TILE_PASS(LOAD16, STORE16, 1024, W_BF16, FMA16, 32, 64, bf16ta2)
	TILE_PASS(LOAD16, STORE16, 512, W_BF16, FMA16, 16, 32, bf16ta1)
	TILE_PASS(LOAD16, STORE16, 0, W_BF16, FMA16, 0, 0, bf16ta0)
	MOVQ R15, CX
	JMP  bf16tblock

bf16ttail:
	TILE_TAIL(LOAD16, STORE16, W_BF16, bf16tsum, bf16ta0tail)

bf16tsum:
	LOAD16(1024)
	ADD16(1536)
	STORE16(1536)
	LOAD16(0)
	ADD16(512)
	ADD16(1536)
	STORE16(0)
	EACH16P(OUT1)
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
	HSUM_TO(a0, off(R8))

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
	ZERO_Y16_Y31

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

// F16 4x8 tile on 512-bit vectors: dotF16t4x4Z for activation rows
// 0…3 and then 4…7 (4·xs bytes on, kept at 4096(SP)) over each KBLOCK
// block of the four weight rows, which stay in L1 for both, so a weight
// row is read from L2 once per eight activation rows instead of four.
// Rows 4…7 keep their accumulators at 2048 and 3072(SP) as rows 0…3 do
// at 0 and 1024; each pair's steps are dotF16t4x4Z's (so dotF16AVX2's).

// func dotF16t4x8Z(w *uint16, ws int, x *float32, xs int, n int, out *float32)
// ws and xs in bytes, n a multiple of 8; out[4r+c] for activation rows
// c < 4, out[16+4r+c] for rows 4+c.
TEXT ·dotF16t4x8Z(SB), 0, $4104-48
	MOVQ xs+24(FP), AX
	SHLQ $2, AX
	MOVQ AX, 4096(SP)
	TILE_ARGS
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
	STOREZ16(2048)
	STOREZ16(3072)
	XORQ CX, CX

f16z8block:
	TILE_BLOCK(f16z8tail)
	TILE_PASS(LOADZ16, STOREZ16, 1024, WZ_F16, FMAZ16, 32, 64, f16z8b)
	TILE_PASS(LOADZ16, STOREZ16, 0, WZ_F16, FMAZ16, 0, 0, f16z8a)
	XROWS_ADD(ADDQ)
	TILE_PASS(LOADZ16, STOREZ16, 3072, WZ_F16, FMAZ16, 32, 64, f16z8d)
	TILE_PASS(LOADZ16, STOREZ16, 2048, WZ_F16, FMAZ16, 0, 0, f16z8c)
	XROWS_ADD(SUBQ)
	MOVQ R15, CX
	JMP  f16z8block

f16z8tail:
	TILE_TAIL(LOADY16, STOREY16, W_F16, f16z8tail2, f16z8t0)

f16z8tail2:
	XROWS_ADD(ADDQ)
	TILE_TAIL(LOADY16H, STOREY16H, W_F16, f16z8sum, f16z8t1)

f16z8sum:
	EACH16P(SUMZ)
	EACH16P(SUMZH)
	VZEROUPPER
	RET
