#version 450
// Probe (kernels/vulkan/probe.go): a streaming read of binding 0, the
// bandwidth floor every weight-reading kernel sits on. Each invocation
// adds the 32-bit words of the 16-byte elements i, i+T, i+2T, … (T the
// invocations of the grid) to a uint sum; each workgroup writes the sum
// of its invocations' sums (mod 2³²) to o[group], so the host checks
// every word was read. CHAIN: each invocation instead follows a chain of
// steps dependent loads, element i then (i + stride + (v.x & zero)) mod
// n (zero is 0 at run time, unknown to the compiler): the latency of one
// access, as time / steps.
#include "common/base.glsl"

layout(binding = 0) readonly buffer SB { uvec4 S[]; };
layout(binding = 1) writeonly buffer OB { uint o[]; };

layout(push_constant) uniform PC {
	uint n, steps, stride, zero;
} pc;

shared uint sums[WG];

void main() {
	uint tid = gl_LocalInvocationID.x;
	uvec4 acc = uvec4(0u);
#ifdef CHAIN
	uint i = (globalIndex() * 4099u) % pc.n;
	for (uint s = 0u; s < pc.steps; s++) {
		uvec4 v = S[i];
		acc += v;
		i = (i + pc.stride + (v.x & pc.zero)) % pc.n;
	}
#else
	uint total = gl_NumWorkGroups.x * gl_NumWorkGroups.y * WG;
	for (uint i = globalIndex(); i < pc.n; i += total) acc += S[i];
#endif
	sums[tid] = acc.x + acc.y + acc.z + acc.w;
	barrier();
	for (uint h = WG / 2u; h > 0u; h >>= 1) {
		if (tid < h) sums[tid] += sums[tid + h];
		barrier();
	}
	if (tid == 0u) o[groupIndex()] = sums[0];
}
