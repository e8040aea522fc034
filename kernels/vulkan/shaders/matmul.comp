#version 450
// MatMul: dst (n, m) = x (n, k) · wᵀ for the weight rows [rowLo,
// rowLo+rows) of this binding. One workgroup per (weight row, token): the
// invocations stride over k and then reduce, so a dot's summation order
// depends only on k and WG, never on n (batch invariance).
#include "common/base.glsl"

layout(binding = 0) readonly buffer WB { uint W[]; };
layout(binding = 1) readonly buffer XB { float x[]; };
layout(binding = 2) writeonly buffer DB { float dst[]; };

layout(push_constant) uniform PC {
	uint k, m, n, rowLo, rows, rowBytes;
} pc;

#define WEIGHT_DOT
#include "common/weights.glsl"

void main() {
	uint j = groupIndex(); // weight row within the chunk
	uint i = gl_WorkGroupID.z;
	if (j >= pc.rows) return; // whole workgroup: uniform
	uint rb = j * pc.rowBytes;
	uint xo = i * pc.k;
	float s = 0;
#if GROUP == 1
	for (uint e = gl_LocalInvocationID.x; e < pc.k; e += WG) {
		precise float p = x[xo + e] * weightAt(rb, e);
		s += p;
	}
#else
	// Quantised rows: each invocation takes whole groups (one scale).
	for (uint g = gl_LocalInvocationID.x; g < pc.k / GSIZE; g += WG) s = dotGroup(rb, g, xo + g * GSIZE, s);
#endif
	s = sumWG(s);
	if (gl_LocalInvocationID.x == 0) dst[i * pc.m + pc.rowLo + j] = s;
}
