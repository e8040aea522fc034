#version 450
// The second pass of split attention: for each (token, head), merge the
// segments' (M, l, acc) of attention.comp's SPLIT variant in segment
// order with common/attention.glsl's merge (the first copied, each next
// weighted by exp(M_old − M_new) and exp(M_s − M_new)), skipping the
// segments a token does not have (M = −Inf), then acc / l: operation
// for operation what attention_prefill.comp does in its registers. A
// token that sees no cell gets zeros. One workgroup per (token, head):
// the scratch holds the pc.n tokens of the split dispatch, which are rows
// [row0, row0+n) of dst.
#include "common/base.glsl"

layout(binding = 0) readonly buffer SB { float scratch[]; };
layout(binding = 1) writeonly buffer DB { float dst[]; };

layout(push_constant) uniform PC {
	uint n, heads, hd, segs;
	uint row0; // the dst row of the scratch's first token
} pc;

#include "common/merge.glsl"

void main() {
	uint th = groupIndex();
	if (th >= pc.n * pc.heads) return;
	uint tid = gl_LocalInvocationID.x, stride = pc.hd + 2u, so = th * pc.segs * stride;
	for (uint e = tid; e < pc.hd; e += WG) {
		float m = NEG, l = 0.0, a = 0.0;
		for (uint s = 0u; s < pc.segs; s++) {
			uint o = so + s * stride;
			float ms = scratch[o];
			if (ms == NEG) continue;
			if (m == NEG) {
				m = ms;
				l = scratch[o + 1u];
				a = scratch[o + 2u + e];
				continue;
			}
			float wa, wb, mn;
			mergeWeights(m, ms, wa, wb, mn);
			l = mergeAdd(l, wa, scratch[o + 1u], wb);
			a = mergeAdd(a, wa, scratch[o + 2u + e], wb);
			m = mn;
		}
		dst[(pc.row0 * pc.heads + th) * pc.hd + e] = l == 0.0 ? 0.0 : a / l;
	}
}
