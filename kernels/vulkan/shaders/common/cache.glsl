// The K and V caches (bindings 1 and 2) of the attention kernels: F32 or,
// with CACHE_F16, F16. ldk/ldv read one element; with VEC4 (head dims
// that are multiples of 4) the caches are read as 16-byte (F32) or
// 8-byte (F16) words, ldk4/ldv4 reading 4 elements at an index that is a
// multiple of 4. Every path gives the same float32 values.
#ifdef VEC4
#ifdef CACHE_F16
layout(binding = 1) readonly buffer KB { uvec2 k[]; };
layout(binding = 2) readonly buffer VB { uvec2 v[]; };
vec4 unpack4(uvec2 w) { return vec4(unpackHalf2x16(w.x), unpackHalf2x16(w.y)); }
vec4 ldk4(uint i) { return unpack4(k[i >> 2]); }
vec4 ldv4(uint i) { return unpack4(v[i >> 2]); }
#else
layout(binding = 1) readonly buffer KB { vec4 k[]; };
layout(binding = 2) readonly buffer VB { vec4 v[]; };
vec4 ldk4(uint i) { return k[i >> 2]; }
vec4 ldv4(uint i) { return v[i >> 2]; }
#endif
float ldk(uint i) { return ldk4(i & ~3u)[i & 3u]; }
float ldv(uint i) { return ldv4(i & ~3u)[i & 3u]; }
#elif defined(CACHE_F16)
#extension GL_EXT_shader_16bit_storage : require
layout(binding = 1) readonly buffer KB { uint16_t k[]; };
layout(binding = 2) readonly buffer VB { uint16_t v[]; };
float ldk(uint i) { return f16ToF32(uint(k[i])); }
float ldv(uint i) { return f16ToF32(uint(v[i])); }
#else
layout(binding = 1) readonly buffer KB { float k[]; };
layout(binding = 2) readonly buffer VB { float v[]; };
float ldk(uint i) { return k[i]; }
float ldv(uint i) { return v[i]; }
#endif

// loadTile puts rows cells cid[c0 + r] (r < rn) of K (isV false) or V,
// elements [ko, ko + hd) of rows of kvDim, into tile[r·hd + e]: the
// workgroup's invocations on consecutive elements (or 4-element words).
#define LOAD_TILE(LD, LD4)                                                          \
	{                                                                               \
		LOAD_TILE_BODY(LD, LD4)                                                     \
	}
#ifdef VEC4
#define LOAD_TILE_BODY(LD, LD4)                                                     \
	for (uint i = tid; i < rn * hd / 4u; i += WG) {                                 \
		uint j = i * 4u;                                                            \
		vec4 x = LD4(uint(CID(c0 + j / hd)) * kvDim + ko + j % hd);                 \
		tile[j] = x.x;                                                              \
		tile[j + 1u] = x.y;                                                         \
		tile[j + 2u] = x.z;                                                         \
		tile[j + 3u] = x.w;                                                         \
	}
#else
#define LOAD_TILE_BODY(LD, LD4)                                                     \
	for (uint i = tid; i < rn * hd; i += WG) tile[i] = LD(uint(CID(c0 + i / hd)) * kvDim + ko + i % hd);
#endif
