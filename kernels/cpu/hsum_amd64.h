// Macros shared by the amd64 kernels: lane reductions and zeroed
// accumulators.

// HREDUCE(ps, ss, y, x, t): x = the eight float32 lanes of y (x its low
// half) combined by ps (packed) and ss (scalar) as ((l0∘l4)∘(l2∘l6)) ∘
// ((l1∘l5)∘(l3∘l7)); t scratch. HSUM adds them (VADDPS, VADDSS), HMAX
// takes their largest (VMAXPS, VMAXSS).
#define HREDUCE(ps, ss, y, x, t) \
	VEXTRACTF128 $1, y, t \
	ps           t, x, x  \
	VMOVHLPS     x, x, t  \
	ps           t, x, x  \
	VMOVSHDUP    x, t     \
	ss           t, x, x

#define HSUM(y, x, t) HREDUCE(VADDPS, VADDSS, y, x, t)
#define HMAX(y, x, t) HREDUCE(VMAXPS, VMAXSS, y, x, t)

// HSUM_Y0_X0: X0 = the sum of Y0's eight float32 lanes, as
// ((l0+l4)+(l2+l6)) + ((l1+l5)+(l3+l7)); X1 scratch. Every kernel whose
// values must equal another's reduces its lanes with this one sequence.
#define HSUM_Y0_X0 HSUM(Y0, X0, X1)

// HSUM_TO(y, m): m (a float32 in memory) = the sum of y's lanes by
// HSUM_Y0_X0 (through Y0; X1 scratch).
#define HSUM_TO(y, m) \
	VMOVAPS y, Y0 \
	HSUM_Y0_X0    \
	VMOVSS  X0, m

// HSUM_TO4(a, b, c, d, o, r): HSUM_TO of a, b, c, d at o, o+4, o+8 and
// o+12 bytes from the register r.
#define HSUM_TO4(a, b, c, d, o, r) \
	HSUM_TO(a, o(r))    \
	HSUM_TO(b, o+4(r))  \
	HSUM_TO(c, o+8(r))  \
	HSUM_TO(d, o+12(r))

// ZERO4(a, b, c, d): four vector registers (accumulators) zeroed.
#define ZERO4(a, b, c, d) \
	VXORPS a, a, a \
	VXORPS b, b, b \
	VXORPS c, c, c \
	VXORPS d, d, d

// ZEROD4(a, b, c, d): as ZERO4 by VPXORD, which (EVEX) reaches
// Y16…Y31; ZERO_Y16_Y31 zeroes those sixteen.
#define ZEROD4(a, b, c, d) \
	VPXORD a, a, a \
	VPXORD b, b, b \
	VPXORD c, c, c \
	VPXORD d, d, d

#define ZERO_Y16_Y31 \
	ZEROD4(Y16, Y17, Y18, Y19) \
	ZEROD4(Y20, Y21, Y22, Y23) \
	ZEROD4(Y24, Y25, Y26, Y27) \
	ZEROD4(Y28, Y29, Y30, Y31)
