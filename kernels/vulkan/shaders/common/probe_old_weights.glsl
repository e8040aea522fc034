// probe_old_matmul.comp's weights.glsl: commit 173338e's, unchanged.
// Reading weights of every dtype from a buffer of 32-bit words, by byte
// offset (blocks of Q8_0 and Q6_K are not word-aligned). Exactly one TYPE_*
// is defined; weightAt(rowByte, c) is element c of the row starting at
// byte rowByte, computed with the float32 steps of tensor.Dequantize.

uint byteAt(uint o) { return (W[o >> 2] >> ((o & 3u) * 8u)) & 0xFFu; }
uint u16At(uint o) { return (W[o >> 2] >> ((o & 2u) * 8u)) & 0xFFFFu; } // o even
float halfAt(uint o) { return unpackHalf2x16(u16At(o)).x; }
int i8(uint b) { return int(b << 24) >> 24; }

// u32At reads 4 bytes at an even offset o.
uint u32At(uint o) {
	uint w = o >> 2;
	return (o & 2u) == 0u ? W[w] : (W[w] >> 16) | (W[w + 1u] << 16);
}

// GROUP is the number of consecutive elements sharing one scale, read
// once per group by groupScales; 1 for the plain float types and the
// quants read an element at a time.
#if defined(TYPE_Q8_0) || defined(TYPE_Q4_0) || defined(TYPE_Q4_1) || defined(TYPE_Q4_K)
#define GROUP 32
#elif defined(TYPE_Q6_K)
#define GROUP 16
#else
#define GROUP 1
#endif
const uint GSIZE = GROUP;

// kScales returns (d·sc, dmin·m) of sub-block sb of the Q4_K or Q5_K
// block at byte bo (6-bit scales and mins packed in 12 bytes at bo+4).
vec2 kScales(uint bo, uint sb) {
	uint sc, m;
	if (sb < 4u) {
		sc = byteAt(bo + 4u + sb) & 63u;
		m = byteAt(bo + 8u + sb) & 63u;
	} else {
		sc = (byteAt(bo + 8u + sb) & 0xFu) | ((byteAt(bo + sb) >> 6) << 4);
		m = (byteAt(bo + 8u + sb) >> 4) | ((byteAt(bo + 4u + sb) >> 6) << 4);
	}
	precise float dl = halfAt(bo) * float(sc);
	precise float ml = halfAt(bo + 2u) * float(m);
	return vec2(dl, ml);
}

#if GROUP > 1
// groupScales returns what element c's group of the row at byte rb
// scales by: (d, m) of Q4_1, (d·sc, dmin·m) of Q4_K, (d·sc, 0) of Q6_K,
// (d, 0) of Q8_0 and Q4_0; chunkAt(rb, c, s) then gives elements c…c+3
// (c a multiple of 4, the four in that group). weightAt is built on them,
// so every kernel dequantises to the same float32 values.
vec2 groupScales(uint rb, uint c) {
#if defined(TYPE_Q8_0)
	return vec2(halfAt(rb + 34u * (c >> 5)), 0.0);
#elif defined(TYPE_Q4_0)
	return vec2(halfAt(rb + 18u * (c >> 5)), 0.0);
#elif defined(TYPE_Q4_1)
	uint bo = rb + 20u * (c >> 5);
	return vec2(halfAt(bo), halfAt(bo + 2u));
#elif defined(TYPE_Q4_K)
	return kScales(rb + 144u * (c >> 8), (c & 255u) >> 5);
#elif defined(TYPE_Q6_K)
	uint bo = rb + 210u * (c >> 8), j0 = c & 255u;
	uint h = j0 >> 7, gg = (j0 >> 5) & 3u, l0 = j0 & 31u;
	precise float dl = halfAt(bo + 208u) * float(i8(byteAt(bo + 192u + 8u * h + (l0 >> 4) + 2u * gg)));
	return vec2(dl, 0.0);
#endif
}

vec4 chunkAt(uint rb, uint c, vec2 s) {
	vec4 v;
#if defined(TYPE_Q8_0)
	uint u = u32At(rb + 34u * (c >> 5) + 2u + (c & 31u));
	for (uint b = 0u; b < 4u; b++) {
		precise float y = s.x * float(i8((u >> (8u * b)) & 0xFFu));
		v[b] = y;
	}
#elif defined(TYPE_Q4_0) || defined(TYPE_Q4_1)
	uint j = c & 31u;
#if defined(TYPE_Q4_0)
	uint qo = rb + 18u * (c >> 5) + 2u;
#else
	uint qo = rb + 20u * (c >> 5) + 4u;
#endif
	uint u = u32At(qo + (j & 15u)), shift = (j >> 4) * 4u;
	for (uint b = 0u; b < 4u; b++) {
		uint q = (u >> (8u * b + shift)) & 0xFu;
#if defined(TYPE_Q4_0)
		precise float y = s.x * float(int(q) - 8);
#else
		precise float dq = s.x * float(q);
		precise float y = dq + s.y;
#endif
		v[b] = y;
	}
#elif defined(TYPE_Q4_K)
	uint bo = rb + 144u * (c >> 8), sb = (c & 255u) >> 5;
	uint u = u32At(bo + 16u + 32u * (sb >> 1) + (c & 31u)), shift = 4u * (sb & 1u);
	for (uint b = 0u; b < 4u; b++) {
		uint q = (u >> (8u * b + shift)) & 0xFu;
		precise float dq = s.x * float(q);
		precise float y = dq - s.y;
		v[b] = y;
	}
#elif defined(TYPE_Q6_K)
	uint bo = rb + 210u * (c >> 8), j0 = c & 255u;
	uint h = j0 >> 7, gg = (j0 >> 5) & 3u, l0 = j0 & 31u;
	uint ul = u32At(bo + 64u * h + 32u * (gg & 1u) + l0), uh = u32At(bo + 128u + 32u * h + l0);
	for (uint b = 0u; b < 4u; b++) {
		uint ql = (ul >> (8u * b + 4u * (gg >> 1))) & 0xFu;
		uint qh = (uh >> (8u * b + 2u * gg)) & 3u;
		precise float y = s.x * float(int(ql | (qh << 4)) - 32);
		v[b] = y;
	}
#endif
	return v;
}

// groupAt writes the GROUP elements of the group starting at element c0
// to v, chunkAt's values; Q4_0 and Q4_1 read each word of nibbles once
// for its low (first half) and high (second half) elements.
void groupAt(uint rb, uint c0, out vec4 v[GROUP / 4]) {
	vec2 s = groupScales(rb, c0);
#if defined(TYPE_Q4_0) || defined(TYPE_Q4_1)
#if defined(TYPE_Q4_0)
	uint qo = rb + 18u * (c0 >> 5) + 2u;
#else
	uint qo = rb + 20u * (c0 >> 5) + 4u;
#endif
	for (uint j = 0u; j < 16u; j += 4u) {
		uint u = u32At(qo + j);
		for (uint b = 0u; b < 4u; b++) {
			uint lo = (u >> (8u * b)) & 0xFu, hi = (u >> (8u * b + 4u)) & 0xFu;
#if defined(TYPE_Q4_0)
			precise float yl = s.x * float(int(lo) - 8);
			precise float yh = s.x * float(int(hi) - 8);
#else
			precise float dl = s.x * float(lo);
			precise float dh = s.x * float(hi);
			precise float yl = dl + s.y;
			precise float yh = dh + s.y;
#endif
			v[j / 4u][b] = yl;
			v[4u + j / 4u][b] = yh;
		}
	}
#else
	for (uint e = 0u; e < GSIZE; e += 4u) v[e / 4u] = chunkAt(rb, c0 + e, s);
#endif
}
#endif

float weightAt(uint rb, uint c) {
#if GROUP > 1
	uint c0 = c & ~3u;
	return chunkAt(rb, c0, groupScales(rb, c0))[c & 3u];
#elif defined(TYPE_F32)
	return uintBitsToFloat(W[(rb >> 2) + c]);
#elif defined(TYPE_F16)
	return halfAt(rb + 2u * c);
#elif defined(TYPE_BF16)
	return uintBitsToFloat(u16At(rb + 2u * c) << 16);
#elif defined(TYPE_Q5_0) || defined(TYPE_Q5_1)
#if defined(TYPE_Q5_0)
	uint bo = rb + 22u * (c >> 5), qo = bo + 6u, ho = bo + 2u;
#else
	uint bo = rb + 24u * (c >> 5), qo = bo + 8u, ho = bo + 4u;
#endif
	uint j = c & 31u;
	uint q = ((byteAt(qo + (j & 15u)) >> ((j >> 4) * 4u)) & 0xFu) | (((u32At(ho) >> j) & 1u) << 4);
#if defined(TYPE_Q5_0)
	return halfAt(bo) * float(int(q) - 16);
#else
	precise float p = halfAt(bo) * float(q);
	precise float r = p + halfAt(bo + 2u);
	return r;
#endif
#elif defined(TYPE_Q5_K)
	uint bo = rb + 176u * (c >> 8), j = c & 255u;
	uint sb = j >> 5, l = j & 31u;
	vec2 s = kScales(bo, sb);
	precise float dl = s.x, ml = s.y;
	uint q = ((byteAt(bo + 48u + 32u * (sb >> 1) + l) >> (4u * (sb & 1u))) & 0xFu) | (((byteAt(bo + 16u + l) >> sb) & 1u) << 4);
	precise float p = dl * float(q);
	precise float r = p - ml;
	return r;
#elif defined(TYPE_Q2_K)
	uint bo = rb + 84u * (c >> 8), j = c & 255u;
	uint h = j >> 7, s = (j >> 5) & 3u, k = (j >> 4) & 1u, l = j & 15u;
	uint sc = byteAt(bo + 8u * h + 2u * s + k);
	precise float dl = halfAt(bo + 80u) * float(sc & 0xFu);
	precise float ml = halfAt(bo + 82u) * float(sc >> 4);
	uint q = (byteAt(bo + 16u + 32u * h + 16u * k + l) >> (2u * s)) & 3u;
	precise float p = dl * float(q);
	precise float r = p - ml;
	return r;
#elif defined(TYPE_Q3_K)
	uint bo = rb + 110u * (c >> 8), j = c & 255u;
	uint h = j >> 7, s = (j >> 5) & 3u, l = j & 31u;
	uint i = 8u * h + 2u * s + (l >> 4);
	uint lo = (byteAt(bo + 96u + (i & 7u)) >> (4u * (i >> 3))) & 0xFu;
	uint hi = (byteAt(bo + 104u + (i & 3u)) >> (2u * (i >> 2))) & 3u;
	precise float dl = halfAt(bo + 108u) * float(int(lo | (hi << 4)) - 32);
	int lv = int((byteAt(bo + 32u + 32u * h + l) >> (2u * s)) & 3u);
	if (((byteAt(bo + l) >> (4u * h + s)) & 1u) == 0u) lv -= 4;
	return dl * float(lv);
#else
#error "no TYPE_ defined"
#endif
}
