// HSUM_Y0_X0: X0 = the sum of Y0's eight float32 lanes, as
// ((l0+l4)+(l2+l6)) + ((l1+l5)+(l3+l7)); X1 scratch. Every kernel whose
// values must equal another's reduces its lanes with this one sequence.
#define HSUM_Y0_X0 \
	VEXTRACTF128 $1, Y0, X1 \
	VADDPS       X1, X0, X0 \
	VMOVHLPS     X0, X0, X1 \
	VADDPS       X1, X0, X0 \
	VMOVSHDUP    X0, X1     \
	VADDSS       X1, X0, X0

// ZERO4(a, b, c, d): four vector registers (accumulators) zeroed.
#define ZERO4(a, b, c, d) \
	VXORPS a, a, a \
	VXORPS b, b, b \
	VXORPS c, c, c \
	VXORPS d, d, d
