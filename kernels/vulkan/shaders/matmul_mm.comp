#version 450
// MatMul for a prefill: dst (n, m) = x (n, k) · wᵀ for the weight rows
// [rowLo, rowLo+rows) of this binding, a tile of BR weight rows × BT
// tokens per workgroup of 4·64 = 256 invocations.
//
// The dot products keep matmul.comp's order exactly (common/lane.glsl):
// k is dealt to 64 lanes, each lane sums its elements in order, and the
// 64 lane sums are reduced as matmul.comp reduces them, so an element of
// dst is bitwise the one the matrix-vector kernel gives (batch
// invariance). Invocation (lane l, slot s) holds the lane-l sums of an
// SR-row × ST-token block of the tile (slot s picks the block): split-K
// over the lanes, register-blocked over rows and tokens.
//
// Over k, in steps of CHUNK elements per lane (LANES·CHUNK of a row), the
// workgroup dequantises the step's weight tile (BR rows) once into shared
// memory, where the two slots of each row block read it for their tokens;
// each invocation reads its tokens' activations for the step into
// registers and uses them for SR rows. Shared memory: BR·LANES·CHUNK
// floats (16 KiB), reused for the final reduction.
#include "common/base.glsl"

layout(binding = 0) readonly buffer WB { uint W[]; };
layout(binding = 0) readonly buffer WB4 { uvec4 W4[]; }; // W, 16 bytes at a time
layout(binding = 1) readonly buffer XB { float x[]; };
layout(binding = 2) writeonly buffer DB { float dst[]; };

layout(push_constant) uniform PC {
	uint k, m, n, rowLo, rows, rowBytes;
} pc;

#include "common/weights.glsl"
#include "common/lane.glsl"

const uint BR = 16u, BT = 16u; // the tile: weight rows × tokens
const uint SR = 8u, ST = 8u;   // one invocation's block
const uint STEP = LANES * CHUNK; // row elements per step
const uint WPI = BR * LANES / 256u; // weight chunks per invocation and step
const uint ROUND = 16u; // sums per invocation per round of the reduction

shared float sh[BR * STEP]; // weights [row][lane][chunk element]; then sums

// col is the row element that lane l takes as its i-th, or k when it has
// fewer than i+1.
uint col(uint l, uint i) {
#if GROUP == 1
	uint c = l + LANES * i;
	return c < pc.k ? c : pc.k;
#else
	uint g = l + LANES * (i / GSIZE);
	return g < pc.k / GSIZE ? g * GSIZE + i % GSIZE : pc.k;
#endif
}

void main() {
	uint tid = gl_LocalInvocationID.x, lane = tid % LANES, slot = tid / LANES;
	uint j0 = groupIndex() * BR, i0 = gl_WorkGroupID.z * BT;
	uint r0 = (slot & 1u) * SR, t0 = (slot >> 1) * ST; // this block in the tile
	float acc[SR * ST];
	for (uint q = 0u; q < SR * ST; q++) acc[q] = 0.0;
	// Steps: lane 0 has the most elements.
#if GROUP == 1
	uint most = (pc.k + LANES - 1u) / LANES;
#else
	uint most = (pc.k / GSIZE + LANES - 1u) / LANES * GSIZE;
	vec2 scales[WPI];
#endif
	for (uint i = 0u; i < most; i += CHUNK) {
		// Chunks of CHUNK elements: a lane's consecutive elements, in one
		// quant group (GROUP > 1) or LANES apart (GROUP 1). Each invocation
		// loads the same (row, lane) chunks at every step, so it keeps
		// their groups' scales from step to step.
		for (uint p = 0u; p < WPI; p++) {
			uint u = tid + p * WG, r = u / LANES, l = u % LANES;
			vec4 w = vec4(0.0);
			if (j0 + r < pc.rows) {
				uint rb = (j0 + r) * pc.rowBytes;
#if GROUP == 1
				for (uint e = 0u; e < CHUNK; e++) {
					uint c = col(l, i + e);
					if (c < pc.k) w[e] = weightAt(rb, c);
				}
#else
				uint c = col(l, i);
				if (c < pc.k) {
					if (i % GSIZE == 0u) scales[p] = groupScales(rb, c);
					w = chunkAt(rb, c, scales[p]);
				}
#endif
			}
			for (uint e = 0u; e < CHUNK; e++) sh[u * CHUNK + e] = w[e];
		}
		vec4 xv[ST];
		for (uint t = 0u; t < ST; t++) {
			xv[t] = vec4(0.0);
			uint ti = i0 + t0 + t;
			if (ti >= pc.n) continue;
#if GROUP == 1
			for (uint e = 0u; e < CHUNK; e++) {
				uint c = col(lane, i + e);
				if (c < pc.k) xv[t][e] = x[ti * pc.k + c];
			}
#else
			uint c = col(lane, i), o = ti * pc.k + c;
			if (c < pc.k) xv[t] = vec4(x[o], x[o + 1u], x[o + 2u], x[o + 3u]);
#endif
		}
		barrier();
		// A lane with no element in this step skips it (with quant groups
		// of 32, k = 896 leaves 36 of the 64 lanes idle); one past its
		// last element within the step adds 0·0 = +0, which leaves its
		// sum as it is (the sum is never −0).
		if (col(lane, i) < pc.k) for (uint r = 0u; r < SR; r++) {
			uint wo = (r0 + r) * STEP + lane * CHUNK;
			vec4 w = vec4(sh[wo], sh[wo + 1u], sh[wo + 2u], sh[wo + 3u]);
			for (uint t = 0u; t < ST; t++) {
#if GROUP == 1
				float s = acc[r * ST + t];
				for (uint e = 0u; e < CHUNK; e++) s = lanePut(s, xv[t][e], w[e]);
				acc[r * ST + t] = s;
#else
				acc[r * ST + t] = laneChunk(acc[r * ST + t], xv[t], w);
#endif
			}
		}
		barrier();
	}
	// Reduce the 64 lane sums of each element of the tile as matmul.comp
	// does, in sh.
#ifdef SUBGROUP
	uint nsg = LANES / gl_SubgroupSize, sg = lane / gl_SubgroupSize;
	for (uint q = 0u; q < SR * ST; q++) {
		float s = subgroupAdd(acc[q]);
		if (gl_SubgroupInvocationID == 0u) sh[(slot * SR * ST + q) * nsg + sg] = s;
	}
	barrier();
	for (uint o = tid; o < BR * BT; o += WG) {
		float s = 0.0;
		for (uint i = 0u; i < nsg; i++) s += sh[o * nsg + i];
		uint sl = o / (SR * ST), q = o % (SR * ST);
		uint j = j0 + (sl & 1u) * SR + q / ST, t = i0 + (sl >> 1) * ST + q % ST;
		if (j < pc.rows && t < pc.n) dst[t * pc.m + pc.rowLo + j] = s;
	}
#else
	// In rounds of ROUND sums per invocation (64 lanes each).
	for (uint h0 = 0u; h0 < SR * ST; h0 += ROUND) {
		for (uint q = 0u; q < ROUND; q++) sh[(slot * ROUND + q) * LANES + lane] = acc[h0 + q];
		barrier();
		for (uint h = LANES / 2u; h > 0u; h >>= 1) {
			if (lane < h) {
				for (uint q = 0u; q < ROUND; q++) sh[(slot * ROUND + q) * LANES + lane] += sh[(slot * ROUND + q) * LANES + lane + h];
			}
			barrier();
		}
		if (lane < ROUND) {
			uint q = h0 + lane;
			uint j = j0 + r0 + q / ST, t = i0 + t0 + q % ST;
			if (j < pc.rows && t < pc.n) dst[t * pc.m + pc.rowLo + j] = sh[(slot * ROUND + lane) * LANES];
		}
		barrier();
	}
#endif
}
