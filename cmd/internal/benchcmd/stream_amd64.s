//go:build amd64 && !purego

#include "textflag.h"

// FOLD: the four accumulators Y0…Y3 XORed into one word, in AX.
#define FOLD \
	VPXOR        Y1, Y0, Y0 \
	VPXOR        Y3, Y2, Y2 \
	VPXOR        Y2, Y0, Y0 \
	VEXTRACTI128 $1, Y0, X1 \
	VPXOR        X1, X0, X0 \
	VPSRLDQ      $8, X0, X1 \
	VPXOR        X1, X0, X0 \
	VMOVQ        X0, AX \
	VZEROUPPER

// func streamRead(p *byte, n int) uint64
//
// XORs the n bytes at p (n a multiple of 256) into four 256-bit
// accumulators, 256 bytes an iteration, every cache line prefetched 2 KiB
// ahead: the access the decode kernels make of a weight (packed_amd64.s),
// with nothing else to do.
TEXT ·streamRead(SB), NOSPLIT, $0-24
	MOVQ   p+0(FP), SI
	MOVQ   n+8(FP), CX
	SHRQ   $8, CX
	VPXOR  Y0, Y0, Y0
	VPXOR  Y1, Y1, Y1
	VPXOR  Y2, Y2, Y2
	VPXOR  Y3, Y3, Y3
	TESTQ  CX, CX
	JZ     done

loop:
	PREFETCHT0 2048(SI)
	PREFETCHT0 2112(SI)
	PREFETCHT0 2176(SI)
	PREFETCHT0 2240(SI)
	VPXOR      (SI), Y0, Y0
	VPXOR      32(SI), Y1, Y1
	VPXOR      64(SI), Y2, Y2
	VPXOR      96(SI), Y3, Y3
	VPXOR      128(SI), Y0, Y0
	VPXOR      160(SI), Y1, Y1
	VPXOR      192(SI), Y2, Y2
	VPXOR      224(SI), Y3, Y3
	ADDQ       $256, SI
	DECQ       CX
	JNZ        loop

done:
	FOLD
	MOVQ AX, ret+16(FP)
	RET

// func streamRead4(p *byte, n int) uint64
//
// As streamRead, but the n bytes (n a multiple of 256) as four quarters
// read side by side, a cache line of each an iteration, with no software
// prefetch: the access the one-row packed decode kernels make of a
// weight (packed_avx2_amd64.s, X1S4). Which of the two a core streams
// faster depends on the host (four streams on some of this project's
// VMs, one prefetched stream on others), so the probe takes the best.
TEXT ·streamRead4(SB), NOSPLIT, $0-24
	MOVQ   p+0(FP), SI
	MOVQ   n+8(FP), CX
	SHRQ   $2, CX
	MOVQ   CX, R8                 // a quarter's bytes
	LEAQ   (R8)(R8*2), R9
	SHRQ   $6, CX                 // lines a quarter
	VPXOR  Y0, Y0, Y0
	VPXOR  Y1, Y1, Y1
	VPXOR  Y2, Y2, Y2
	VPXOR  Y3, Y3, Y3
	TESTQ  CX, CX
	JZ     done4

loop4:
	VPXOR (SI), Y0, Y0
	VPXOR 32(SI), Y1, Y1
	VPXOR (SI)(R8*1), Y2, Y2
	VPXOR 32(SI)(R8*1), Y3, Y3
	VPXOR (SI)(R8*2), Y0, Y0
	VPXOR 32(SI)(R8*2), Y1, Y1
	VPXOR (SI)(R9*1), Y2, Y2
	VPXOR 32(SI)(R9*1), Y3, Y3
	ADDQ  $64, SI
	DECQ  CX
	JNZ   loop4

done4:
	FOLD
	MOVQ AX, ret+16(FP)
	RET
