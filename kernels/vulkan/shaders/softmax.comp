#version 450
// Softmax over each row of x (n, m), in place; one workgroup per row. A
// row of only −Inf gives zeros.
#include "common/base.glsl"

layout(binding = 0) buffer XB { float x[]; };

layout(push_constant) uniform PC {
	uint n, m;
} pc;

void main() {
	uint i = groupIndex();
	if (i >= pc.n) return;
	uint o = i * pc.m;
	float mx = uintBitsToFloat(0xFF800000u); // −Inf
	for (uint j = gl_LocalInvocationID.x; j < pc.m; j += WG) mx = max(mx, x[o + j]);
	mx = maxWG(mx);
	if (isinf(mx) && mx < 0.0) {
		for (uint j = gl_LocalInvocationID.x; j < pc.m; j += WG) x[o + j] = 0.0;
		return;
	}
	float s = 0;
	for (uint j = gl_LocalInvocationID.x; j < pc.m; j += WG) s += exp(x[o + j] - mx);
	s = sumWG(s);
	for (uint j = gl_LocalInvocationID.x; j < pc.m; j += WG) x[o + j] = exp(x[o + j] - mx) / s;
}
