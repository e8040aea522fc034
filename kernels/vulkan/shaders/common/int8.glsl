// The int8 MatMul's per-group arithmetic (matmul.comp's INT8 variants),
// included after weights.glsl, for the types of shaders.Int8Types.
//
// A quant group's weights (GSIZE: 32, or 16 for Q6_K) are packed as
// signed bytes four to a word (groupQ): Q8_0's q, Q4_0's q − 8, Q4_1's
// and Q4_K's 4-bit q, Q5_K's 5-bit q, Q6_K's q − 32. Against the group's
// activations quantised by quantize_q8.comp (q8, one scale dx per block of
// 32 and the block's Σq8) the integer dot isum = Σ w·q8 is exact in int32
// (|isum| ≤ 32·128·127), from dotPacked4x8AccSatEXT where the device has
// integer dot products (INTDOT) or from plain int arithmetic: the same
// integer, so the same bits. int8Block turns it into the group's float
// contribution by one expression for every kernel: (s.x·dx)·isum, with
// Q4_1's + (s.y·dx)·Σq8 and the K-quants' − (s.y·dx)·Σq8 (s is
// groupScales'); Q6_K's groups of 16 take the dx of their block of 32.
//
// groupQ reads W through weights.glsl's readers: a shader reading a second
// matrix includes this file again with them and groupQ renamed
// (matmul.comp's GATEUP); the rest is defined once.
#ifndef INT8_GLSL
#define INT8_GLSL
#ifdef INTDOT
#extension GL_EXT_integer_dot_product : require
#endif

// dot4 is acc plus the dot of the four signed bytes of a and b.
int dot4(uint a, uint b, int acc) {
#ifdef INTDOT
	return dotPacked4x8AccSatEXT(int(a), int(b), acc); // never saturates here
#else
	for (uint e = 0u; e < 32u; e += 8u) acc += (int(a << (24u - e)) >> 24) * (int(b << (24u - e)) >> 24);
	return acc;
#endif
}

// sub8 subtracts c's bytes from v's (each of v's below 128, c's at most
// 0x20), bytewise modulo 256: signed bytes v − c.
uint sub8(uint v, uint c) { return ((v | 0x80808080u) - c) ^ 0x80808080u; }

const uint GW = GSIZE / 4u; // words of a group

// int8Block is a group's contribution to its lane's sum: s the group's
// scales (groupScales), dx its activation block's scale, isum the integer
// dot and xsum the activation block's Σq8.
float int8Block(vec2 s, float dx, int isum, int xsum) {
	precise float a = s.x * dx;
	precise float p = a * float(isum);
#if defined(TYPE_Q4_1) || defined(TYPE_Q4_K) || defined(TYPE_Q5_K)
	precise float c = s.y * dx;
	precise float o = c * float(xsum);
#if defined(TYPE_Q4_1)
	precise float r = p + o;
#else
	precise float r = p - o;
#endif
	return r;
#else
	return p;
#endif
}
#endif // INT8_GLSL

// groupQ packs the weights of the group starting at element c0 of the row
// at byte rb.
void groupQ(uint rb, uint c0, out uint q[GW]) {
#if defined(TYPE_Q8_0)
	uint bo = rb + 34u * (c0 >> 5) + 2u;
	for (uint i = 0u; i < 8u; i++) q[i] = u32At(bo + 4u * i);
#elif defined(TYPE_Q4_0) || defined(TYPE_Q4_1)
#if defined(TYPE_Q4_0)
	uint qo = rb + 18u * (c0 >> 5) + 2u;
#else
	uint qo = rb + 20u * (c0 >> 5) + 4u;
#endif
	for (uint i = 0u; i < 4u; i++) {
		uint u = u32At(qo + 4u * i);
#if defined(TYPE_Q4_0)
		q[i] = sub8(u & 0x0F0F0F0Fu, 0x08080808u);
		q[4u + i] = sub8((u >> 4) & 0x0F0F0F0Fu, 0x08080808u);
#else
		q[i] = u & 0x0F0F0F0Fu;
		q[4u + i] = (u >> 4) & 0x0F0F0F0Fu;
#endif
	}
#elif defined(TYPE_Q4_K)
	uint bo = rb + 144u * (c0 >> 8), sb = (c0 & 255u) >> 5;
	for (uint i = 0u; i < 8u; i++) q[i] = (u32At(bo + 16u + 32u * (sb >> 1) + 4u * i) >> (4u * (sb & 1u))) & 0x0F0F0F0Fu;
#elif defined(TYPE_Q5_K)
	uint bo = rb + 176u * (c0 >> 8), sb = (c0 & 255u) >> 5;
	for (uint i = 0u; i < 8u; i++) {
		uint ql = (W[(bo + 48u + 32u * (sb >> 1) + 4u * i) >> 2] >> (4u * (sb & 1u))) & 0x0F0F0F0Fu;
		uint qh = (W[(bo + 16u + 4u * i) >> 2] >> sb) & 0x01010101u;
		q[i] = ql | (qh << 4);
	}
#elif defined(TYPE_Q6_K)
	uint bo = rb + 210u * (c0 >> 8), j0 = c0 & 255u;
	uint h = j0 >> 7, gg = (j0 >> 5) & 3u, l0 = j0 & 31u;
	for (uint i = 0u; i < 4u; i++) {
		uint ql = (u32At(bo + 64u * h + 32u * (gg & 1u) + l0 + 4u * i) >> (4u * (gg >> 1))) & 0x0F0F0F0Fu;
		uint qh = (u32At(bo + 128u + 32u * h + l0 + 4u * i) >> (2u * gg)) & 0x03030303u;
		q[i] = sub8(ql | (qh << 4), 0x20202020u);
	}
#else
#error "no int8 weights for this TYPE_"
#endif
}
