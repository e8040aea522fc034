#version 450
// Argmax: dst (n) = the first index of each row's largest value of x
// (n, m); a NaN is never chosen unless it is the row's first element (the
// CPU loop's `v > row[best]`). One workgroup per row.
#include "common/base.glsl"

layout(binding = 0) readonly buffer XB { float x[]; };
layout(binding = 1) writeonly buffer DB { int dst[]; };

layout(push_constant) uniform PC {
	uint n, m;
} pc;

shared float bv[WG];
shared uint bi[WG];

const uint NONE = 0xFFFFFFFFu;

void main() {
	uint i = groupIndex();
	if (i >= pc.n) return;
	uint tid = gl_LocalInvocationID.x, o = i * pc.m;
	float v = 0;
	uint at = NONE;
	for (uint j = tid; j < pc.m; j += WG) {
		float y = x[o + j];
		if (isnan(y)) continue;
		if (at == NONE || y > v) {
			v = y;
			at = j;
		}
	}
	bv[tid] = v;
	bi[tid] = at;
	barrier();
	for (uint s = WG / 2; s > 0; s >>= 1) {
		if (tid < s) {
			float ov = bv[tid + s];
			uint oi = bi[tid + s];
			if (oi != NONE && (bi[tid] == NONE || ov > bv[tid] || (ov == bv[tid] && oi < bi[tid]))) {
				bv[tid] = ov;
				bi[tid] = oi;
			}
		}
		barrier();
	}
	if (tid == 0) {
		uint r = bi[0];
		if (r == NONE || isnan(x[o])) r = 0u;
		dst[i] = int(r);
	}
}
