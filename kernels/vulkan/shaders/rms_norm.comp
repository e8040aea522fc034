#version 450
// RMSNorm: dst (n, d) = x / sqrt(mean(x²) + eps) · w, one workgroup per
// row. With ADD (add_rms_norm) it first sets sum = x + y (the residual
// add) and normalises sum: the same floats as add then rms_norm. With
// VEC4 (d a multiple of 4) every buffer is read and written as vec4 and
// invocation j sums the squares of elements 4j…4j+3, then 4(j+WG)…, in
// order; without it elements j, j+WG, …: the order depends on d and WG
// (which the backend picks from d) alone. dst may alias x, and sum x or
// y: each invocation writes only its own elements, after reading them,
// and the sum is complete before any write to dst.
#include "common/base.glsl"

#ifdef VEC4
#define T vec4
#else
#define T float
#endif

layout(binding = 0) readonly buffer XB { T x[]; };
#ifdef ADD
layout(binding = 1) readonly buffer YB { T y[]; };
layout(binding = 2) readonly buffer WB { T w[]; };
layout(binding = 3) buffer SB { T sum[]; };
layout(binding = 4) buffer DB { T dst[]; };
#else
layout(binding = 1) readonly buffer WB { T w[]; };
layout(binding = 2) buffer DB { T dst[]; };
#endif

layout(push_constant) uniform PC {
	uint n, d;
	float eps;
} pc;

void main() {
	uint i = groupIndex();
	if (i >= pc.n) return;
#ifdef VEC4
	uint m = pc.d / 4;
#else
	uint m = pc.d;
#endif
	uint o = i * m;
	float ss = 0;
	for (uint j = gl_LocalInvocationID.x; j < m; j += WG) {
#ifdef ADD
		precise T v = x[o + j] + y[o + j];
		sum[o + j] = v;
#else
		T v = x[o + j];
#endif
#ifdef VEC4
		precise float s0 = v.x * v.x;
		ss += s0;
		precise float s1 = v.y * v.y;
		ss += s1;
		precise float s2 = v.z * v.z;
		ss += s2;
		precise float s3 = v.w * v.w;
		ss += s3;
#else
		precise float sq = v * v;
		ss += sq;
#endif
	}
	ss = sumWG(ss);
	float variance = ss / float(pc.d);
	float inv = 1.0 / sqrt(variance + pc.eps);
	for (uint j = gl_LocalInvocationID.x; j < m; j += WG) {
#ifdef ADD
		precise T v = sum[o + j] * inv;
#else
		precise T v = x[o + j] * inv;
#endif
		dst[o + j] = w[j] * v;
	}
}
