// Shared helpers of every shader: the workgroup size (specialization
// constant 0), 1-D indices over a 2-D grid, and reductions over the
// workgroup (subgroup operations when SUBGROUP is defined, else a
// shared-memory tree; WG must be a power of two).
#extension GL_KHR_shader_subgroup_basic : enable
#extension GL_KHR_shader_subgroup_arithmetic : enable

layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 64;

// A workgroup's linear index: x + y·(groups in x), so counts above the
// 65535 limit of one dimension are spread over y.
uint groupIndex() { return gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x; }
uint globalIndex() { return groupIndex() * WG + gl_LocalInvocationID.x; }

shared float red[WG];

// sumWG returns the sum of v over the workgroup to every invocation. The
// order of additions is fixed by the workgroup size alone.
float sumWG(float v) {
	uint tid = gl_LocalInvocationID.x;
#ifdef SUBGROUP
	v = subgroupAdd(v);
	if (gl_SubgroupInvocationID == 0) red[gl_SubgroupID] = v;
	barrier();
	float s = 0;
	for (uint i = 0; i < gl_NumSubgroups; i++) s += red[i];
	barrier();
	return s;
#else
	red[tid] = v;
	barrier();
	for (uint s = WG / 2; s > 0; s >>= 1) {
		if (tid < s) red[tid] += red[tid + s];
		barrier();
	}
	float r = red[0];
	barrier();
	return r;
#endif
}

// maxWG returns the maximum of v over the workgroup.
float maxWG(float v) {
	uint tid = gl_LocalInvocationID.x;
#ifdef SUBGROUP
	v = subgroupMax(v);
	if (gl_SubgroupInvocationID == 0) red[gl_SubgroupID] = v;
	barrier();
	float s = red[0];
	for (uint i = 1; i < gl_NumSubgroups; i++) s = max(s, red[i]);
	barrier();
	return s;
#else
	red[tid] = v;
	barrier();
	for (uint s = WG / 2; s > 0; s >>= 1) {
		if (tid < s) red[tid] = max(red[tid], red[tid + s]);
		barrier();
	}
	float r = red[0];
	barrier();
	return r;
#endif
}

// f32ToF16 rounds to the nearest binary16, ties to even, overflow to ±Inf,
// NaN kept (a conversion instruction's rounding is implementation-defined).
uint f32ToF16(float f) {
	uint x = floatBitsToUint(f);
	uint sign = (x >> 16) & 0x8000u;
	uint e = (x >> 23) & 0xFFu;
	uint m = x & 0x7FFFFFu;
	if (e == 0xFFu) return sign | 0x7C00u | (m != 0u ? 0x200u : 0u);
	int ue = int(e) - 127 + 15;
	if (ue >= 31) return sign | 0x7C00u;
	if (ue <= 0) {
		if (ue < -10) return sign;
		m |= 0x800000u;
		uint shift = uint(14 - ue);
		uint h = m >> shift;
		uint rem = m & ((1u << shift) - 1u);
		uint halfway = 1u << (shift - 1u);
		if (rem > halfway || (rem == halfway && (h & 1u) != 0u)) h++;
		return sign | h;
	}
	uint h = (uint(ue) << 10) | (m >> 13);
	uint rem = m & 0x1FFFu;
	if (rem > 0x1000u || (rem == 0x1000u && (h & 1u) != 0u)) h++;
	return sign | h; // a carry into the exponent is still right (up to Inf)
}

float f16ToF32(uint h) { return unpackHalf2x16(h).x; }
