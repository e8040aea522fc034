// One lane's share of a dot product, the same arithmetic for the
// matrix-vector kernel (matmul.comp) and the tiled one (matmul_mm.comp),
// so that a dst element is bitwise the same whichever computes it.
//
// The k elements of a row are dealt to 64 lanes: element e to lane e mod
// 64 for the float types (GROUP 1), quant group g (GSIZE elements) to lane
// g mod 64 for the others. A lane adds its elements' products in order to
// one float32 sum; the 64 sums are then reduced in a fixed order.
//
// Without FP16 each product is a float32 x·w (exact dequantisation). With
// FP16 the operands are rounded to halves and multiplied in half
// precision: one product per element for GROUP 1, one f16vec4 dot per
// CHUNK (four) elements of a group otherwise; each result is added to the
// float32 sum.
#ifdef FP16
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#endif

const uint LANES = 64u;
const uint CHUNK = 4u; // elements of a group per laneChunk (GSIZE is a multiple)

// lanePut adds x·w (one element) to the lane sum s.
float lanePut(float s, float x, float w) {
#ifdef FP16
	precise float16_t p = float16_t(x) * float16_t(w);
	precise float r = s + float(p);
#else
	precise float p = x * w;
	precise float r = s + p;
#endif
	return r;
}

// laneChunk adds the four products x·w of consecutive group elements to s.
float laneChunk(float s, vec4 x, vec4 w) {
#ifdef FP16
	precise float16_t p = dot(f16vec4(x), f16vec4(w));
	precise float r = s + float(p);
	return r;
#else
	for (uint e = 0u; e < 4u; e++) {
		precise float p = x[e] * w[e];
		s += p;
	}
	return s;
#endif
}
