#version 450
// The second pass of split attention: for each (token, head), merge the
// segments' (M, l, acc) of attention.comp's SPLIT variant in segment
// order: m = max M_s, w_s = exp(M_s − m), out = Σ w_s·acc_s / Σ w_s·l_s.
// A token that sees no cell gets zeros. One workgroup per (token, head):
// the scratch holds the pc.n tokens of the split dispatch, which are rows
// [row0, row0+n) of dst.
#include "common/base.glsl"

layout(binding = 0) readonly buffer SB { float scratch[]; };
layout(binding = 1) writeonly buffer DB { float dst[]; };

layout(push_constant) uniform PC {
	uint n, heads, hd, segs;
	uint row0; // the dst row of the scratch's first token
} pc;

void main() {
	uint th = groupIndex();
	if (th >= pc.n * pc.heads) return;
	uint tid = gl_LocalInvocationID.x, stride = pc.hd + 2u, so = th * pc.segs * stride;
	const float NEG = uintBitsToFloat(0xFF800000u);
	float m = NEG;
	for (uint s = 0u; s < pc.segs; s++) m = max(m, scratch[so + s * stride]);
	float l = 0.0;
	if (m != NEG) {
		for (uint s = 0u; s < pc.segs; s++) {
			precise float wl = scratch[so + s * stride + 1u] * exp(scratch[so + s * stride] - m);
			l += wl;
		}
	}
	for (uint e = tid; e < pc.hd; e += WG) {
		float a = 0.0;
		if (m != NEG) {
			for (uint s = 0u; s < pc.segs; s++) {
				precise float wa = scratch[so + s * stride + 2u + e] * exp(scratch[so + s * stride] - m);
				a += wa;
			}
		}
		dst[(pc.row0 * pc.heads + th) * pc.hd + e] = l == 0.0 ? 0.0 : a / l;
	}
}
