// Macros shared by the packed kernels of packed_amd64.s (AVX-512 VNNI)
// and packed_avx2_amd64.s (AVX2): argument loading, stepping to the next
// block, prefetching and storing the results.

// PK_ARGS1: the one-activation-row kernels' arguments (w, qx, dx, aux,
// nb) in SI, DI, DX, R8, CX; aux is neg (Q8_0, Q4_0) or s_x (Q4_1, Q4_K).
#define PK_ARGS1 \
	MOVQ w+0(FP), SI \
	PK_REARGS1

// PK_ARGS4: the four-activation-row kernels' arguments (w, qx, xs, dx,
// ds, aux, nb) in SI, DI, R9, DX, R10, R8, CX, with 3·xs in R13 and 3·ds
// in R14.
#define PK_ARGS4 \
	MOVQ w+0(FP), SI \
	MOVQ qx+8(FP), DI \
	MOVQ xs+16(FP), R9 \
	MOVQ dx+24(FP), DX \
	MOVQ ds+32(FP), R10 \
	MOVQ aux+40(FP), R8 \
	MOVQ nb+48(FP), CX \
	LEAQ (R9)(R9*2), R13 \
	LEAQ (R10)(R10*2), R14

// PK_NEXT(size, loop): on to the next block of 32 values (size bytes of
// weight), looping to loop while blocks are left.
#define PK_NEXT(size, loop) \
	ADDQ $size, SI \
	ADDQ $32, DI \
	ADDQ $4, DX \
	ADDQ $4, R8 \
	DECQ CX \
	JNZ  loop

// PK_KNEXT(loop): on to the next Q4_K super-block (1184 bytes, 256
// values).
#define PK_KNEXT(loop) \
	ADDQ $1184, SI \
	ADDQ $256, DI \
	ADDQ $32, DX \
	ADDQ $32, R8 \
	DECQ CX \
	JNZ  loop

// PREFETCH3: the three cache lines 2 KiB ahead (a block of the decode
// kernels spans 2.25 to 4.25 lines, and one prefetch per block would
// leave the hardware prefetcher the others): Q4_0 decode of the
// Qwen2.5-0.5B shape at two threads 110 → 117 tok/s over one at 2 KiB
// (three alternating runs each, VNNI), itself 4–6% over one at 1 KiB.
// PREFETCH5 covers a Q8_0 block (272 bytes), PREFETCH19 a Q4_K
// super-block (1184 bytes).
#define PREFETCH3 \
	PREFETCHT0 2048(SI) \
	PREFETCHT0 2112(SI) \
	PREFETCHT0 2176(SI)

#define PREFETCH5 \
	PREFETCH3 \
	PREFETCHT0 2240(SI) \
	PREFETCHT0 2304(SI)

#define PREFETCH19 \
	PREFETCH5 \
	PREFETCHT0 2368(SI) \
	PREFETCHT0 2432(SI) \
	PREFETCHT0 2496(SI) \
	PREFETCHT0 2560(SI) \
	PREFETCHT0 2624(SI) \
	PREFETCHT0 2688(SI) \
	PREFETCHT0 2752(SI) \
	PREFETCHT0 2816(SI) \
	PREFETCHT0 2880(SI) \
	PREFETCHT0 2944(SI) \
	PREFETCHT0 3008(SI) \
	PREFETCHT0 3072(SI) \
	PREFETCHT0 3136(SI) \
	PREFETCHT0 3200(SI)

// PK_GARGS: the AVX2 one-row kernels' further arguments out and ng in
// R11 and AX.
#define PK_GARGS \
	MOVQ out+40(FP), R11 \
	MOVQ ng+48(FP), AX

// PK_REARGS1: the one-row kernels' activation row (qx, dx, aux) and
// block count back in DI, DX, R8 and CX, for the next group.
#define PK_REARGS1 \
	MOVQ qx+8(FP), DI \
	MOVQ dx+16(FP), DX \
	MOVQ aux+24(FP), R8 \
	MOVQ nb+32(FP), CX

// PK_GSTORE1(y, group): y at R11, then on to the next group (its weights
// follow the last block, where SI is), from the activation row's start;
// looping to group while groups are left, else return.
#define PK_GSTORE1(y, group) \
	VMOVUPS y, (R11) \
	ADDQ    $32, R11 \
	PK_REARGS1 \
	DECQ    AX \
	JNZ     group \
	VZEROUPPER \
	RET

// PK_STORE1(y): out (argument at 40) = y, and return.
#define PK_STORE1(y) \
	MOVQ    out+40(FP), R9 \
	VMOVUPS y, (R9) \
	VZEROUPPER \
	RET

// PK_QARGS: the quad kernels' (AVX2) further arguments out, os and nq in
// R11, R12 and AX.
#define PK_QARGS \
	MOVQ out+56(FP), R11 \
	MOVQ os+64(FP), R12 \
	MOVQ nq+72(FP), AX

// PK_QSTORE4(a, b, c, d, quad): a, b, c, d at R11 + c·os (activation
// rows c = 0…3 of the quad), then on to the next quad: its rows 4·xs
// (R9) on, their scales and aux 4·ds (R10) on (the block loop has
// stepped DI by xs and DX and R8 by ds: xs is the whole row), the
// weight group (SI) and block count (CX) from the start; looping to quad
// while quads are left, else return.
#define PK_QSTORE4(a, b, c, d, quad) \
	VMOVUPS a, (R11) \
	VMOVUPS b, (R11)(R12*1) \
	VMOVUPS c, (R11)(R12*2) \
	LEAQ    (R11)(R12*2), BX \
	VMOVUPS d, (BX)(R12*1) \
	LEAQ    (R11)(R12*4), R11 \
	MOVQ    w+0(FP), SI \
	MOVQ    nb+48(FP), CX \
	ADDQ    R13, DI \
	ADDQ    R14, DX \
	ADDQ    R14, R8 \
	DECQ    AX \
	JNZ     quad \
	VZEROUPPER \
	RET

// PK_STORE4(a, b, c, d): out (argument at 56) = a, b, c, d, and return.
#define PK_STORE4(a, b, c, d) \
	MOVQ    out+56(FP), R11 \
	VMOVUPS a, (R11) \
	VMOVUPS b, 32(R11) \
	VMOVUPS c, 64(R11) \
	VMOVUPS d, 96(R11) \
	VZEROUPPER \
	RET

// K4EACH(sub, lo, hi): sub(s, unpack, q) for the eight sub-blocks s of a
// Q4_K super-block, unpack lo (low nibbles) for even s and hi for odd,
// q the offset of the pair's nibble vectors.
#define K4EACH(sub, lo, hi) \
	sub(0, lo, 160) \
	sub(1, hi, 160) \
	sub(2, lo, 416) \
	sub(3, hi, 416) \
	sub(4, lo, 672) \
	sub(5, hi, 672) \
	sub(6, lo, 928) \
	sub(7, hi, 928)
