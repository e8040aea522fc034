#version 450
// Add and SwiGLU: dst (n, m) = a OP b, b of n·m elements or one row of m
// broadcast. One invocation per element.
#include "common/base.glsl"
#include "common/swiglu.glsl"

layout(binding = 0) readonly buffer AB { float a[]; };
layout(binding = 1) readonly buffer BB { float b[]; };
layout(binding = 2) writeonly buffer DB { float dst[]; };

layout(push_constant) uniform PC {
	uint total, m, bn;
} pc;

void main() {
	uint idx = globalIndex();
	if (idx >= pc.total) return;
	float y = pc.bn == pc.total ? b[idx] : b[idx % pc.m];
#if defined(OP_ADD)
	dst[idx] = a[idx] + y;
#elif defined(OP_SWIGLU)
	dst[idx] = swiglu(a[idx], y);
#endif
}
