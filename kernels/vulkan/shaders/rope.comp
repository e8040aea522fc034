#version 450
// RoPE and KVShift. One invocation per (row, pair): the pair (x0, x1),
// adjacent for the normal layout and half a head apart for neox, is
// rotated by the angle pos·freq[i], freq the host's InvFreq table. With
// KVSHIFT, row r of the list is cache row cells[r] and pos is delta[r].
// With CACHE_F16 the rows are binary16 (rounded to nearest even on write).
//
// With ROPE_KV (rope_kv: RoPE of q and k, then KVWrite of k and v, as one
// dispatch) invocation idx rotates pair idx of q (n, dim), else the next
// of k (n, kdim), writing it to k and to its cache row cells[r], else
// copies the next pair of v to its cache row: bitwise the four ops.
#include "common/base.glsl"

#ifdef ROPE_KV
layout(binding = 0) buffer QB { float q[]; };
layout(binding = 3) buffer KB { float k[]; };
layout(binding = 4) readonly buffer VB { float v[]; };
#ifdef CACHE_F16
#extension GL_EXT_shader_16bit_storage : require
layout(binding = 5) writeonly buffer KCB { uint16_t kc[]; };
layout(binding = 6) writeonly buffer VCB { uint16_t vc[]; };
void stk(uint i, float x) { kc[i] = uint16_t(f32ToF16(x)); }
void stv(uint i, float x) { vc[i] = uint16_t(f32ToF16(x)); }
#else
layout(binding = 5) writeonly buffer KCB { float kc[]; };
layout(binding = 6) writeonly buffer VCB { float vc[]; };
void stk(uint i, float x) { kc[i] = x; }
void stv(uint i, float x) { vc[i] = x; }
#endif
layout(binding = 7) readonly buffer CB { int cells[]; };
#elif defined(CACHE_F16)
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
	uint rows; // KVSHIFT, ROPE_KV: the cache's cells; others are skipped
#ifdef ROPE_KV
	uint kdim;
#endif
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

#ifdef ROPE_KV
void main() {
	uint half_ = pc.headDim / 2u;
	uint qp = pc.dim / 2u, kp = pc.kdim / 2u;
	uint nq = pc.n * qp, nk = pc.n * kp;
	uint idx = globalIndex();
	if (idx >= nq + 2u * nk) return;
	if (idx >= nq + nk) { // a pair of v to its cache row
		uint j = idx - nq - nk;
		uint r = j / kp, e = 2u * (j % kp);
		uint cell = uint(cells[r]);
		if (cell >= pc.rows) return; // never write outside the cache
		stv(cell * pc.kdim + e, v[r * pc.kdim + e]);
		stv(cell * pc.kdim + e + 1u, v[r * pc.kdim + e + 1u]);
		return;
	}
	bool isK = idx >= nq;
	uint j = isK ? idx - nq : idx;
	uint pairs = isK ? kp : qp;
	uint dim = isK ? pc.kdim : pc.dim;
	uint r = j / pairs, p = j % pairs;
	uint h = p / half_, i = p % half_;
	uint base = r * dim + h * pc.headDim;
	uint ia = base + i, ib = base + i + half_;
	if (pc.neox == 0u) {
		ia = base + 2u * i;
		ib = ia + 1u;
	}
	precise float ang = float(pos[r]) * freq[i];
	float sn, cs;
	sincos32(ang, sn, cs);
	float x0 = isK ? k[ia] : q[ia], x1 = isK ? k[ib] : q[ib];
	precise float a0 = x0 * cs, a1 = x1 * sn, b0 = x1 * cs, b1 = x0 * sn;
	precise float o0 = a0 - a1, o1 = b0 + b1;
	if (!isK) {
		q[ia] = o0;
		q[ib] = o1;
		return;
	}
	k[ia] = o0;
	k[ib] = o1;
	uint cell = uint(cells[r]);
	if (cell >= pc.rows) return;
	stk(cell * pc.kdim + (ia - r * dim), o0);
	stk(cell * pc.kdim + (ib - r * dim), o1);
}
#else
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
#endif
