#version 450
// KVWrite: cache[cells[i]] = src[i] for the rows of src (n, dim). One
// invocation per element. CACHE_F16 rounds to nearest even.
#include "common/base.glsl"

#ifdef CACHE_F16
#extension GL_EXT_shader_16bit_storage : require
layout(binding = 0) writeonly buffer CB { uint16_t cache[]; };
#else
layout(binding = 0) writeonly buffer CB { float cache[]; };
#endif
layout(binding = 1) readonly buffer SB { float src[]; };
layout(binding = 2) readonly buffer IB { int cells[]; };

layout(push_constant) uniform PC {
	uint n, dim, rows; // rows: the cache's cells; others are skipped
} pc;

void main() {
	uint idx = globalIndex();
	if (idx >= pc.n * pc.dim) return;
	uint i = idx / pc.dim, e = idx % pc.dim;
	if (uint(cells[i]) >= pc.rows) return; // never write outside the cache
	uint at = uint(cells[i]) * pc.dim + e;
#ifdef CACHE_F16
	cache[at] = uint16_t(f32ToF16(src[idx]));
#else
	cache[at] = src[idx];
#endif
}
