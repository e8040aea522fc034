#version 450
// RMSNorm: dst (n, d) = x / sqrt(mean(x²) + eps) · w. One workgroup per
// row. dst may alias x: each invocation reads its elements before writing
// them, and the sum is complete before any write.
#include "common/base.glsl"

layout(binding = 0) readonly buffer XB { float x[]; };
layout(binding = 1) readonly buffer WB { float w[]; };
layout(binding = 2) buffer DB { float dst[]; };

layout(push_constant) uniform PC {
	uint n, d;
	float eps;
} pc;

void main() {
	uint i = groupIndex();
	if (i >= pc.n) return;
	uint o = i * pc.d;
	float ss = 0;
	for (uint j = gl_LocalInvocationID.x; j < pc.d; j += WG) {
		precise float sq = x[o + j] * x[o + j];
		ss += sq;
	}
	ss = sumWG(ss);
	float variance = ss / float(pc.d);
	float inv = 1.0 / sqrt(variance + pc.eps);
	for (uint j = gl_LocalInvocationID.x; j < pc.d; j += WG) {
		precise float v = x[o + j] * inv;
		dst[o + j] = w[j] * v;
	}
}
