//go:build amd64 && !purego

#include "textflag.h"
#include "hsum_amd64.h"

// F16 and BF16 kernels for CPUs with AVX2 but not AVX-512 (sixteen
// 256-bit registers), all with one float32 accumulator of eight lanes
// per (weight row, activation row): value chunk c (values 8c…8c+7) is
// multiplied and added into it (one FMA) chunk after chunk, and the
// lanes are reduced at the end by HSUM_Y0_X0. The one-row kernels
// (dotF16x1AVX2, dotBF16x1AVX2: the fast path's dotF16 and dotBF16
// there), the decode tiles (four weight rows, one activation row) and
// the prefill tiles (three weight rows, four activation rows) do exactly
// these steps, so every value is the same whichever computes it. (With
// AVX-512 the kernels keep four accumulators per pair, dot_amd64.s and
// tilehalf_amd64.s: their prefill tile fits them in 32 registers; here
// a tile with four per pair ran at half the speed.)
//
// n, the values per row, is a multiple of 8 (the Go wrappers add the
// rest).

// CONVF16(m, y), CONVBF16(m, y): y = the eight halves at m as float32.
#define CONVF16(m, y) \
	VCVTPH2PS m, y

#define CONVBF16(m, y) \
	VPMOVZXWD m, y \
	VPSLLD    $16, y, y

// X1BODY(conv, loop4, loop1, done): the one-row kernel (w SI, x DI, n CX;
// the result in X0), by four chunks, then chunk by chunk.
#define X1BODY(conv, loop4, loop1, done) \
	MOVQ   w+0(FP), SI \
	MOVQ   x+8(FP), DI \
	MOVQ   n+16(FP), CX \
	VXORPS Y0, Y0, Y0 \
	CMPQ   CX, $32 \
	JLT    loop1 \
loop4: \
	PREFETCHT0  1024(SI) \
	conv((SI), Y4) \
	conv(16(SI), Y5) \
	conv(32(SI), Y6) \
	conv(48(SI), Y7) \
	VFMADD231PS (DI), Y4, Y0 \
	VFMADD231PS 32(DI), Y5, Y0 \
	VFMADD231PS 64(DI), Y6, Y0 \
	VFMADD231PS 96(DI), Y7, Y0 \
	ADDQ   $64, SI \
	ADDQ   $128, DI \
	SUBQ   $32, CX \
	CMPQ   CX, $32 \
	JGE    loop4 \
loop1: \
	TESTQ  CX, CX \
	JZ     done \
	conv((SI), Y4) \
	VFMADD231PS (DI), Y4, Y0 \
	ADDQ   $16, SI \
	ADDQ   $32, DI \
	SUBQ   $8, CX \
	JMP    loop1 \
done: \
	HSUM_Y0_X0 \
	VZEROUPPER \
	MOVSS  X0, ret+24(FP) \
	RET

// T41BODY(conv, loop, done): four weight rows (w SI, ws R8 bytes apart)
// against one activation row (x DI): row r's accumulator in Y(r), out
// = four sums. Each row is read as its own stream.
#define T41BODY(conv, loop, done) \
	MOVQ   w+0(FP), SI \
	MOVQ   ws+8(FP), R8 \
	MOVQ   x+16(FP), DI \
	MOVQ   n+24(FP), CX \
	LEAQ   (R8)(R8*2), R9 \
	ZERO4(Y0, Y1, Y2, Y3) \
	SHRQ   $3, CX \
	JZ     done \
loop: \
	PREFETCHT0  1024(SI) \
	PREFETCHT0  1024(SI)(R8*1) \
	PREFETCHT0  1024(SI)(R8*2) \
	PREFETCHT0  1024(SI)(R9*1) \
	VMOVUPS     (DI), Y8 \
	conv((SI), Y4) \
	conv((SI)(R8*1), Y5) \
	conv((SI)(R8*2), Y6) \
	conv((SI)(R9*1), Y7) \
	VFMADD231PS Y8, Y4, Y0 \
	VFMADD231PS Y8, Y5, Y1 \
	VFMADD231PS Y8, Y6, Y2 \
	VFMADD231PS Y8, Y7, Y3 \
	ADDQ   $16, SI \
	ADDQ   $32, DI \
	DECQ   CX \
	JNZ    loop \
done: \
	MOVQ   out+32(FP), R11 \
	VMOVAPS Y1, Y9 \
	VMOVAPS Y2, Y10 \
	VMOVAPS Y3, Y11 \
	HSUM_Y0_X0 \
	MOVSS  X0, (R11) \
	VMOVAPS Y9, Y0 \
	HSUM_Y0_X0 \
	MOVSS  X0, 4(R11) \
	VMOVAPS Y10, Y0 \
	HSUM_Y0_X0 \
	MOVSS  X0, 8(R11) \
	VMOVAPS Y11, Y0 \
	HSUM_Y0_X0 \
	MOVSS  X0, 12(R11) \
	VZEROUPPER \
	RET

// HOUT(y, p): out[p] (R11) = y's lanes reduced (through Y0; X1
// scratch, so Y1 is moved away first).
#define HOUT(y, p) \
	VMOVAPS y, Y0 \
	HSUM_Y0_X0 \
	MOVSS   X0, 4*p(R11)

// H3CHUNK(conv, wo, xo): the chunk at wo(R11) of the three weight rows
// (converted into Y12…Y14) against the four activation rows' chunks at
// xo(R12), one activation chunk at a time in Y15; pair (r, c) in
// Y(4r+c).
#define H3CHUNK(conv, wo, xo) \
	conv(wo(R11), Y12) \
	conv(wo(R11)(R8*1), Y13) \
	conv(wo(R11)(R8*2), Y14) \
	VMOVUPS     xo(R12), Y15 \
	VFMADD231PS Y15, Y12, Y0 \
	VFMADD231PS Y15, Y13, Y4 \
	VFMADD231PS Y15, Y14, Y8 \
	VMOVUPS     xo(R12)(R9*1), Y15 \
	VFMADD231PS Y15, Y12, Y1 \
	VFMADD231PS Y15, Y13, Y5 \
	VFMADD231PS Y15, Y14, Y9 \
	VMOVUPS     xo(R12)(R9*2), Y15 \
	VFMADD231PS Y15, Y12, Y2 \
	VFMADD231PS Y15, Y13, Y6 \
	VFMADD231PS Y15, Y14, Y10 \
	VMOVUPS     xo(R12)(R10*1), Y15 \
	VFMADD231PS Y15, Y12, Y3 \
	VFMADD231PS Y15, Y13, Y7 \
	VFMADD231PS Y15, Y14, Y11

// T34BODY(conv, loop4, loop1, done): three weight rows (w, ws bytes
// apart) against four activation rows (x, xs bytes apart): pair (r, c)
// in Y(4r+c); out[4r+c], r < 3. Per chunk three conversions, four
// activation loads and twelve FMAs (the 2x4 tile: two, four and eight).
#define T34BODY(conv, loop4, loop1, done) \
	MOVQ   w+0(FP), R11 \
	MOVQ   ws+8(FP), R8 \
	MOVQ   x+16(FP), R12 \
	MOVQ   xs+24(FP), R9 \
	MOVQ   n+32(FP), CX \
	LEAQ   (R9)(R9*2), R10 \
	ZERO4(Y0, Y1, Y2, Y3) \
	ZERO4(Y4, Y5, Y6, Y7) \
	ZERO4(Y8, Y9, Y10, Y11) \
	CMPQ   CX, $32 \
	JLT    loop1 \
loop4: \
	H3CHUNK(conv, 0, 0) \
	H3CHUNK(conv, 16, 32) \
	H3CHUNK(conv, 32, 64) \
	H3CHUNK(conv, 48, 96) \
	ADDQ   $64, R11 \
	ADDQ   $128, R12 \
	SUBQ   $32, CX \
	CMPQ   CX, $32 \
	JGE    loop4 \
loop1: \
	TESTQ  CX, CX \
	JZ     done \
	H3CHUNK(conv, 0, 0) \
	ADDQ   $16, R11 \
	ADDQ   $32, R12 \
	SUBQ   $8, CX \
	JMP    loop1 \
done: \
	MOVQ   out+40(FP), R11 \
	VMOVAPS Y1, Y12 \
	HOUT(Y0, 0) \
	HOUT(Y12, 1) \
	HOUT(Y2, 2) \
	HOUT(Y3, 3) \
	HOUT(Y4, 4) \
	HOUT(Y5, 5) \
	HOUT(Y6, 6) \
	HOUT(Y7, 7) \
	HOUT(Y8, 8) \
	HOUT(Y9, 9) \
	HOUT(Y10, 10) \
	HOUT(Y11, 11) \
	VZEROUPPER \
	RET

// func dotF16x1AVX2(w *uint16, x *float32, n int) float32
TEXT ·dotF16x1AVX2(SB), NOSPLIT, $0-28
	X1BODY(CONVF16, f16x1l4, f16x1l1, f16x1done)

// func dotBF16x1AVX2(w *uint16, x *float32, n int) float32
TEXT ·dotBF16x1AVX2(SB), NOSPLIT, $0-28
	X1BODY(CONVBF16, bf16x1l4, bf16x1l1, bf16x1done)

// func dotF16t4x1AVX2(w *uint16, ws int, x *float32, n int, out *float32)
TEXT ·dotF16t4x1AVX2(SB), NOSPLIT, $0-40
	T41BODY(CONVF16, f16t41l, f16t41done)

// func dotBF16t4x1AVX2(w *uint16, ws int, x *float32, n int, out *float32)
TEXT ·dotBF16t4x1AVX2(SB), NOSPLIT, $0-40
	T41BODY(CONVBF16, bf16t41l, bf16t41done)

// func dotF16t3x4AVX2(w *uint16, ws int, x *float32, xs int, n int, out *float32)
TEXT ·dotF16t3x4AVX2(SB), NOSPLIT, $0-48
	T34BODY(CONVF16, f16t34l4, f16t34l1, f16t34done)

// func dotBF16t3x4AVX2(w *uint16, ws int, x *float32, xs int, n int, out *float32)
TEXT ·dotBF16t3x4AVX2(SB), NOSPLIT, $0-48
	T34BODY(CONVBF16, bf16t34l4, bf16t34l1, bf16t34done)
