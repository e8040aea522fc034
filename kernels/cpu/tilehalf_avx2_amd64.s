//go:build amd64 && !purego

#include "textflag.h"
#include "hsum_amd64.h"

// Prefill tiles of F16 and BF16 weights on AVX2 (sixteen registers): two
// weight rows against four activation rows, each pair bitwise what
// dotF16AVX2 (dotBF16AVX2) gives. Those keep four accumulators, the
// eight-value chunk 4i+a of the vectors going into accumulator a and the
// chunks past the last whole 32 into accumulator 0, then add
// (a0+a1)+(a2+a3) and reduce the lanes with HSUM_Y0_X0. Eight pairs times
// four accumulators do not fit the registers, so the tile makes one pass
// over the vectors per accumulator (by blocks, see HTILE): pass a takes
// chunks 4i+a (and pass 0 the tail chunks), for the eight pairs in
// Y0…Y7, kept in the frame; then each pair's four are added and reduced as in the one-row
// kernel. Each converted weight chunk serves four activation rows, each
// activation chunk (loaded once into a register) two weight rows.
//
// w: weight row 0, row 1 at w+ws (bytes); x: activation row 0, row c at
// x + c·xs (bytes); n values (a multiple of 8); out[4r+c] for weight row
// r and activation row c.

// HFMA8(o): the eight pairs' accumulators += Y8 (row 0's converted
// chunk) and Y9 (row 1's) times the four activation chunks at o(R12),
// loaded once into Y10…Y13.
#define HFMA8(o) \
	VMOVUPS     o(R12), Y10 \
	VMOVUPS     o(R12)(R9*1), Y11 \
	VMOVUPS     o(R12)(R9*2), Y12 \
	VMOVUPS     o(R12)(R10*1), Y13 \
	VFMADD231PS Y10, Y8, Y0 \
	VFMADD231PS Y11, Y8, Y1 \
	VFMADD231PS Y12, Y8, Y2 \
	VFMADD231PS Y13, Y8, Y3 \
	VFMADD231PS Y10, Y9, Y4 \
	VFMADD231PS Y11, Y9, Y5 \
	VFMADD231PS Y12, Y9, Y6 \
	VFMADD231PS Y13, Y9, Y7

// CONVF16(o), CONVBF16(o): Y8 and Y9 = the two weight rows' chunks at
// o(R11), as float32.
#define CONVF16(o) \
	VCVTPH2PS o(R11), Y8 \
	VCVTPH2PS o(R11)(R8*1), Y9

#define CONVBF16(o) \
	VPMOVZXWD o(R11), Y8 \
	VPMOVZXWD o(R11)(R8*1), Y9 \
	VPSLLD    $16, Y8, Y8 \
	VPSLLD    $16, Y9, Y9

// HPAIR(p): out[p] = (a0+a1)+(a2+a3) of pair p, reduced.
#define HPAIR(p) \
	VMOVUPS 32*p(SP), Y0 \
	VADDPS  256+32*p(SP), Y0, Y0 \
	VMOVUPS 512+32*p(SP), Y2 \
	VADDPS  768+32*p(SP), Y2, Y2 \
	VADDPS  Y2, Y0, Y0 \
	HSUM_Y0_X0 \
	MOVSS   X0, 4*p(R11)

// HLOADACC, HSTOREACC: load (store) pass BX's eight
// accumulators Y0…Y7 in the frame (256 bytes a pass; AX scratch).
#define HLOADACC \
	MOVQ    BX, AX \
	SHLQ    $8, AX \
	VMOVUPS (SP)(AX*1), Y0 \
	VMOVUPS 32(SP)(AX*1), Y1 \
	VMOVUPS 64(SP)(AX*1), Y2 \
	VMOVUPS 96(SP)(AX*1), Y3 \
	VMOVUPS 128(SP)(AX*1), Y4 \
	VMOVUPS 160(SP)(AX*1), Y5 \
	VMOVUPS 192(SP)(AX*1), Y6 \
	VMOVUPS 224(SP)(AX*1), Y7

#define HSTOREACC \
	MOVQ    BX, AX \
	SHLQ    $8, AX \
	VMOVUPS Y0, (SP)(AX*1) \
	VMOVUPS Y1, 32(SP)(AX*1) \
	VMOVUPS Y2, 64(SP)(AX*1) \
	VMOVUPS Y3, 96(SP)(AX*1) \
	VMOVUPS Y4, 128(SP)(AX*1) \
	VMOVUPS Y5, 160(SP)(AX*1) \
	VMOVUPS Y6, 192(SP)(AX*1) \
	VMOVUPS Y7, 224(SP)(AX*1)

// HTILE(conv, labels…): the kernel's body. The vectors go by blocks of
// up to 16 groups of 32 values (w 2 KiB, x 8 KiB: the four passes over
// a block read it from L1), each pass's accumulators kept in the frame
// between blocks; the tail chunks after all blocks, in pass 0.
#define HTILE(conv, block, pass, pdone, grp2, blocksdone, tail, done) \
	MOVQ   w+0(FP), SI \
	MOVQ   ws+8(FP), R8 \
	MOVQ   x+16(FP), DI \
	MOVQ   xs+24(FP), R9 \
	MOVQ   n+32(FP), CX \
	LEAQ   (R9)(R9*2), R10 \
	MOVQ   CX, DX \
	SHRQ   $5, CX \
	ANDQ   $31, DX \
	SHRQ   $3, DX \
	VXORPS Y0, Y0, Y0 \
	VMOVUPS Y0, (SP) \
	VMOVUPS Y0, 32(SP) \
	VMOVUPS Y0, 64(SP) \
	VMOVUPS Y0, 96(SP) \
	VMOVUPS Y0, 128(SP) \
	VMOVUPS Y0, 160(SP) \
	VMOVUPS Y0, 192(SP) \
	VMOVUPS Y0, 224(SP) \
	VMOVUPS Y0, 256(SP) \
	VMOVUPS Y0, 288(SP) \
	VMOVUPS Y0, 320(SP) \
	VMOVUPS Y0, 352(SP) \
	VMOVUPS Y0, 384(SP) \
	VMOVUPS Y0, 416(SP) \
	VMOVUPS Y0, 448(SP) \
	VMOVUPS Y0, 480(SP) \
	VMOVUPS Y0, 512(SP) \
	VMOVUPS Y0, 544(SP) \
	VMOVUPS Y0, 576(SP) \
	VMOVUPS Y0, 608(SP) \
	VMOVUPS Y0, 640(SP) \
	VMOVUPS Y0, 672(SP) \
	VMOVUPS Y0, 704(SP) \
	VMOVUPS Y0, 736(SP) \
	VMOVUPS Y0, 768(SP) \
	VMOVUPS Y0, 800(SP) \
	VMOVUPS Y0, 832(SP) \
	VMOVUPS Y0, 864(SP) \
	VMOVUPS Y0, 896(SP) \
	VMOVUPS Y0, 928(SP) \
	VMOVUPS Y0, 960(SP) \
	VMOVUPS Y0, 992(SP) \
	XORQ   R14, R14 \
block: \
	MOVQ   CX, R15 \
	SUBQ   R14, R15 \
	JLE    blocksdone \
	MOVQ   $16, AX \
	CMPQ   R15, AX \
	CMOVQGT AX, R15 \
	XORQ   BX, BX \
pass: \
	HLOADACC \
	MOVQ   R14, AX \
	SHLQ   $6, AX \
	MOVQ   BX, R13 \
	SHLQ   $4, R13 \
	ADDQ   R13, AX \
	LEAQ   (SI)(AX*1), R11 \
	LEAQ   (DI)(AX*2), R12 \
	MOVQ   R15, R13 \
	TESTQ  $1, R13 \
	JZ     grp2 \
	conv(0) \
	HFMA8(0) \
	ADDQ   $64, R11 \
	ADDQ   $128, R12 \
	DECQ   R13 \
	JZ     pdone \
grp2: \
	conv(0) \
	HFMA8(0) \
	conv(64) \
	HFMA8(128) \
	ADDQ   $128, R11 \
	ADDQ   $256, R12 \
	SUBQ   $2, R13 \
	JNZ    grp2 \
pdone: \
	HSTOREACC \
	INCQ   BX \
	CMPQ   BX, $4 \
	JLT    pass \
	ADDQ   R15, R14 \
	JMP    block \
blocksdone: \
	TESTQ  DX, DX \
	JZ     done \
	XORQ   BX, BX \
	HLOADACC \
	MOVQ   CX, AX \
	SHLQ   $6, AX \
	LEAQ   (SI)(AX*1), R11 \
	LEAQ   (DI)(AX*2), R12 \
tail: \
	conv(0) \
	HFMA8(0) \
	ADDQ   $16, R11 \
	ADDQ   $32, R12 \
	DECQ   DX \
	JNZ    tail \
	HSTOREACC \
done: \
	MOVQ   out+40(FP), R11 \
	HPAIR(0) \
	HPAIR(1) \
	HPAIR(2) \
	HPAIR(3) \
	HPAIR(4) \
	HPAIR(5) \
	HPAIR(6) \
	HPAIR(7) \
	VZEROUPPER \
	RET

// func dotF16t2x4AVX2(w *uint16, ws int, x *float32, xs int, n int, out *float32)
TEXT ·dotF16t2x4AVX2(SB), 0, $1024-48
	HTILE(CONVF16, f16block, f16pass, f16pdone, f16grp2, f16blocksdone, f16tail, f16done)

// func dotBF16t2x4AVX2(w *uint16, ws int, x *float32, xs int, n int, out *float32)
TEXT ·dotBF16t2x4AVX2(SB), 0, $1024-48
	HTILE(CONVBF16, bf16block, bf16pass, bf16pdone, bf16grp2, bf16blocksdone, bf16tail, bf16done)
