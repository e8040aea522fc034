// Reading weights of every dtype from a buffer of 32-bit words, by byte
// offset (blocks of Q8_0 and Q6_K are not word-aligned). Exactly one TYPE_*
// is defined; weightAt(rowByte, c) is element c of the row starting at
// byte rowByte, computed with the float32 steps of tensor.Dequantize.

uint byteAt(uint o) { return (W[o >> 2] >> ((o & 3u) * 8u)) & 0xFFu; }
uint u16At(uint o) { return (W[o >> 2] >> ((o & 2u) * 8u)) & 0xFFFFu; } // o even
float halfAt(uint o) { return unpackHalf2x16(u16At(o)).x; }
int i8(uint b) { return int(b << 24) >> 24; }

float weightAt(uint rb, uint c) {
#if defined(TYPE_F32)
	return uintBitsToFloat(W[(rb >> 2) + c]);
#elif defined(TYPE_F16)
	return halfAt(rb + 2u * c);
#elif defined(TYPE_BF16)
	return uintBitsToFloat(u16At(rb + 2u * c) << 16);
#elif defined(TYPE_Q8_0)
	uint bo = rb + 34u * (c >> 5);
	return halfAt(bo) * float(i8(byteAt(bo + 2u + (c & 31u))));
#elif defined(TYPE_Q4_0)
	uint bo = rb + 18u * (c >> 5), j = c & 31u;
	uint q = (byteAt(bo + 2u + (j & 15u)) >> ((j >> 4) * 4u)) & 0xFu;
	return halfAt(bo) * float(int(q) - 8);
#elif defined(TYPE_Q4_1)
	uint bo = rb + 20u * (c >> 5), j = c & 31u;
	uint q = (byteAt(bo + 4u + (j & 15u)) >> ((j >> 4) * 4u)) & 0xFu;
	precise float p = halfAt(bo) * float(q);
	precise float r = p + halfAt(bo + 2u);
	return r;
#elif defined(TYPE_Q4_K)
	uint bo = rb + 144u * (c >> 8), j = c & 255u;
	uint sb = j >> 5, l = j & 31u;
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
	uint q = (byteAt(bo + 16u + 32u * (sb >> 1) + l) >> (4u * (sb & 1u))) & 0xFu;
	precise float p = dl * float(q);
	precise float r = p - ml;
	return r;
#elif defined(TYPE_Q6_K)
	uint bo = rb + 210u * (c >> 8), j = c & 255u;
	uint h = j >> 7, g = (j >> 5) & 3u, l = j & 31u;
	uint lo = (byteAt(bo + 64u * h + 32u * (g & 1u) + l) >> (4u * (g >> 1))) & 0xFu;
	uint hi = (byteAt(bo + 128u + 32u * h + l) >> (2u * g)) & 3u;
	int q = int(lo | (hi << 4)) - 32;
	precise float dl = halfAt(bo + 208u) * float(i8(byteAt(bo + 192u + 8u * h + (l >> 4) + 2u * g)));
	return dl * float(q);
#else
#error "no TYPE_ defined"
#endif
}
