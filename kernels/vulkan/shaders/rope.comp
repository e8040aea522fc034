#version 450
// RoPE and KVShift. One invocation per (row, pair): the pair (x0, x1),
// adjacent for the normal layout and half a head apart for neox, is
// rotated by the angle pos·freq[i], freq the host's InvFreq table. With
// KVSHIFT, row r of the list is cache row cells[r] and pos is delta[r].
// With CACHE_F16 the rows are binary16 (rounded to nearest even on write).
#include "common/base.glsl"

#ifdef CACHE_F16
#extension GL_EXT_shader_16bit_storage : require
layout(binding = 0) buffer XB { uint16_t x[]; };
float ld(uint i) { return f16ToF32(uint(x[i])); }
void st(uint i, float v) { x[i] = uint16_t(f32ToF16(v)); }
#else
layout(binding = 0) buffer XB { float x[]; };
float ld(uint i) { return x[i]; }
void st(uint i, float v) { x[i] = v; }
#endif
layout(binding = 1) readonly buffer PB { int pos[]; };
layout(binding = 2) readonly buffer FB { float freq[]; };
#ifdef KVSHIFT
layout(binding = 3) readonly buffer CB { int cells[]; };
#endif

layout(push_constant) uniform PC {
	uint n, dim, headDim, neox;
	uint rows; // KVSHIFT: the cache's cells; others are skipped
} pc;

// sincos32 is Cephes' sinf/cosf: reduction by π/4 in three exact steps
// (exact for |a| < 51471) and minimax polynomials, within 2 ulp: the
// accuracy of a GPU's sin and cos is unspecified outside [−π, π].
void sincos32(float a, out float s, out float c) {
	float sign = 1.0, csign = 1.0;
	float xa = abs(a);
	if (a < 0.0) sign = -1.0;
	uint j = uint(xa * 1.27323954473516);
	float y = float(j);
	if ((j & 1u) != 0u) { j++; y += 1.0; }
	j &= 7u;
	if (j > 3u) { sign = -sign; csign = -csign; j -= 4u; }
	if (j > 1u) csign = -csign;
	precise float r = ((xa - y * 0.78515625) - y * 2.4187564849853515625e-4) - y * 3.77489497744594108e-8;
	precise float z = r * r;
	precise float cp = ((2.443315711809948e-5 * z - 1.388731625493765e-3) * z + 4.166664568298827e-2) * z * z - 0.5 * z + 1.0;
	precise float sp = ((-1.9515295891e-4 * z + 8.3321608736e-3) * z - 1.6666654611e-1) * z * r + r;
	if (j == 1u || j == 2u) {
		s = sign * cp;
		c = csign * sp;
	} else {
		s = sign * sp;
		c = csign * cp;
	}
}

void main() {
	uint half_ = pc.headDim / 2u;
	uint pairs = pc.dim / 2u;
	uint idx = globalIndex();
	if (idx >= pc.n * pairs) return;
	uint r = idx / pairs, p = idx % pairs;
	uint h = p / half_, i = p % half_;
#ifdef KVSHIFT
	uint row = uint(cells[r]);
	if (row >= pc.rows) return; // never write outside the cache
#else
	uint row = r;
#endif
	uint base = row * pc.dim + h * pc.headDim;
	uint ia = base + i, ib = base + i + half_;
	if (pc.neox == 0u) {
		ia = base + 2u * i;
		ib = ia + 1u;
	}
	precise float ang = float(pos[r]) * freq[i];
	float sn, cs;
	sincos32(ang, sn, cs);
	float x0 = ld(ia), x1 = ld(ib);
	precise float a0 = x0 * cs, a1 = x1 * sn, b0 = x1 * cs, b1 = x0 * sn;
	precise float o0 = a0 - a1, o1 = b0 + b1;
	st(ia, o0);
	st(ib, o1);
}
