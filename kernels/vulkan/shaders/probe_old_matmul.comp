#version 450
// Probe (kernels/vulkan/probe.go): the matrix-vector kernel as it was at
// commit 173338e (WG lanes, rows the outer loop), with its weights.glsl of
// then (common/probe_old_weights.glsl); only that include path differs.
// Never run by MatMul.
// MatMul: dst (n, m) = x (n, k) · wᵀ for the weight rows [rowLo,
// rowLo+rows) of this binding. A workgroup takes ROWS weight rows and TOKS
// tokens (specialization constants 1 and 2): each weight value is
// dequantised once and used for TOKS tokens. Within a dot, invocation t
// takes the elements (or quant groups) t, t+WG, … in order, and the WG
// partial sums are reduced in a fixed order; so a dot's summation order
// depends only on k and WG, never on n, ROWS or TOKS (batch invariance).
// matmul_mm.comp (prefill) keeps this order exactly: see common/lane.glsl.
//
// FP16 (shaderFloat16): the dequantised weights and the activations are
// rounded to halves and multiplied in half precision, four at a time
// (one f16vec4 dot per four elements of a quant group, one product per
// element for F16 weights), each result added to the float32 sum.
#include "common/base.glsl"

layout(constant_id = 1) const uint ROWS = 4;
layout(constant_id = 2) const uint TOKS = 1;

layout(binding = 0) readonly buffer WB { uint W[]; };
layout(binding = 1) readonly buffer XB { float x[]; };
layout(binding = 2) writeonly buffer DB { float dst[]; };

layout(push_constant) uniform PC {
	uint k, m, n, rowLo, rows, rowBytes;
} pc;

#include "common/probe_old_weights.glsl"
#include "common/lane.glsl"

shared float part[ROWS * TOKS * WG];

void main() {
	uint j0 = groupIndex() * ROWS, i0 = gl_WorkGroupID.z * TOKS;
	uint tid = gl_LocalInvocationID.x;
	float acc[ROWS * TOKS];
	for (uint q = 0u; q < ROWS * TOKS; q++) acc[q] = 0.0;
	for (uint r = 0u; r < ROWS; r++) {
		uint j = j0 + r;
		if (j >= pc.rows) break; // uniform in the workgroup
		uint rb = j * pc.rowBytes;
#if GROUP == 1
		for (uint e = tid; e < pc.k; e += WG) {
			float w = weightAt(rb, e);
			for (uint t = 0u; t < TOKS; t++) {
				if (i0 + t >= pc.n) break;
				acc[r * TOKS + t] = lanePut(acc[r * TOKS + t], x[(i0 + t) * pc.k + e], w);
			}
		}
#else
		vec4 v[GROUP / 4];
		for (uint g = tid; g < pc.k / GSIZE; g += WG) {
			uint c0 = g * GSIZE;
			groupAt(rb, c0, v);
			for (uint t = 0u; t < TOKS; t++) {
				if (i0 + t >= pc.n) break;
				uint xo = (i0 + t) * pc.k + c0;
				float s = acc[r * TOKS + t];
				for (uint e = 0u; e < GSIZE; e += CHUNK) {
					s = laneChunk(s, vec4(x[xo + e], x[xo + e + 1u], x[xo + e + 2u], x[xo + e + 3u]), v[e / CHUNK]);
				}
				acc[r * TOKS + t] = s;
			}
		}
#endif
	}
#ifdef SUBGROUP
	for (uint q = 0u; q < ROWS * TOKS; q++) {
		float s = subgroupAdd(acc[q]);
		if (gl_SubgroupInvocationID == 0u) part[q * WG + gl_SubgroupID] = s;
	}
	barrier();
	if (tid < ROWS * TOKS) {
		float s = 0.0;
		for (uint i = 0u; i < gl_NumSubgroups; i++) s += part[tid * WG + i];
		part[tid * WG] = s;
	}
#else
	for (uint q = 0u; q < ROWS * TOKS; q++) part[q * WG + tid] = acc[q];
	barrier();
	for (uint h = WG / 2u; h > 0u; h >>= 1) {
		if (tid < h) {
			for (uint q = 0u; q < ROWS * TOKS; q++) part[q * WG + tid] += part[q * WG + tid + h];
		}
		barrier();
	}
#endif
	if (tid < ROWS * TOKS) {
		uint j = j0 + tid / TOKS, i = i0 + tid % TOKS;
		if (j < pc.rows && i < pc.n) dst[i * pc.m + pc.rowLo + j] = part[tid * WG];
	}
}
