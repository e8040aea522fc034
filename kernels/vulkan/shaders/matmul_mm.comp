#version 450
// MatMul for a prefill: dst (n, m) = x (n, k) · wᵀ for the weight rows
// [rowLo, rowLo+rows) of this binding, a tile of BR weight rows × BT
// tokens per workgroup of 4·64 invocations.
//
// The dot products keep matmul.comp's order exactly (common/lane.glsl):
// k is dealt to 64 lanes, each lane sums its elements in order, and the
// 64 lane sums are reduced as matmul.comp reduces them, so an element of
// dst is bitwise the one the matrix-vector kernel gives (batch
// invariance). Invocation (lane l, slot s) holds the lane-l sums of a
// 4-row × 8-token block of the tile (slot s picks the block): split-K
// over the lanes, register-blocked over rows and tokens.
//
// Over k, in steps of CHUNK elements per lane (LANES·CHUNK of the row),
// the workgroup loads the step's weight tile (dequantised, BR rows) and
// activation tile (BT tokens) into shared memory; each weight value is
// then used for 8 tokens and each activation for 4 rows from there.
// Shared memory: (BR + BT)·LANES·CHUNK floats = 24 KiB (lavapipe allows 32).
#include "common/base.glsl"

layout(binding = 0) readonly buffer WB { uint W[]; };
layout(binding = 1) readonly buffer XB { float x[]; };
layout(binding = 2) writeonly buffer DB { float dst[]; };

layout(push_constant) uniform PC {
	uint k, m, n, rowLo, rows, rowBytes;
} pc;

#include "common/weights.glsl"
#include "common/lane.glsl"

const uint BR = 8u, BT = 16u;  // the tile: weight rows × tokens
const uint SR = 4u, ST = 8u;   // one invocation's block
const uint STEP = LANES * CHUNK; // row elements per step

shared float ws[BR * STEP]; // [row][lane][chunk element]
shared float xs[BT * STEP]; // [token][lane][chunk element]; reused to reduce

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
	uint rb = (slot & 1u) * SR, tb = (slot >> 1) * ST; // this block in the tile
	float acc[SR * ST];
	for (uint q = 0u; q < SR * ST; q++) acc[q] = 0.0;
	// Steps: lane 0 has the most elements.
#if GROUP == 1
	uint most = (pc.k + LANES - 1u) / LANES;
#else
	uint most = (pc.k / GSIZE + LANES - 1u) / LANES * GSIZE;
#endif
	for (uint i = 0u; i < most; i += CHUNK) {
		for (uint u = tid; u < BR * STEP; u += WG) {
			uint r = u / STEP, l = (u / CHUNK) % LANES, c = col(l, i + u % CHUNK);
			float w = 0.0;
			if (j0 + r < pc.rows && c < pc.k) w = weightAt((j0 + r) * pc.rowBytes, c);
			ws[u] = w;
		}
		for (uint u = tid; u < BT * STEP; u += WG) {
			uint t = u / STEP, l = (u / CHUNK) % LANES, c = col(l, i + u % CHUNK);
			float v = 0.0;
			if (i0 + t < pc.n && c < pc.k) v = x[(i0 + t) * pc.k + c];
			xs[u] = v;
		}
		barrier();
		// A lane past its last element adds 0·0 = +0, which leaves its sum
		// as it is (the sum is never −0).
		uint o = lane * CHUNK;
		for (uint r = 0u; r < SR; r++) {
			uint wo = (rb + r) * STEP + o;
			vec4 w = vec4(ws[wo], ws[wo + 1u], ws[wo + 2u], ws[wo + 3u]);
			for (uint t = 0u; t < ST; t++) {
				uint xo = (tb + t) * STEP + o;
				vec4 xv = vec4(xs[xo], xs[xo + 1u], xs[xo + 2u], xs[xo + 3u]);
#if GROUP == 1
				float s = acc[r * ST + t];
				for (uint e = 0u; e < CHUNK; e++) s = lanePut(s, xv[e], w[e]);
				acc[r * ST + t] = s;
#else
				acc[r * ST + t] = laneChunk(acc[r * ST + t], xv, w);
#endif
			}
		}
		barrier();
	}
	// Reduce the 64 lane sums of each of the BR·BT elements as matmul.comp
	// does, in xs.
#ifdef SUBGROUP
	uint nsg = LANES / gl_SubgroupSize, sg = lane / gl_SubgroupSize;
	for (uint q = 0u; q < SR * ST; q++) {
		float s = subgroupAdd(acc[q]);
		if (gl_SubgroupInvocationID == 0u) xs[(slot * SR * ST + q) * nsg + sg] = s;
	}
	barrier();
	if (tid < BR * BT) {
		float s = 0.0;
		for (uint i = 0u; i < nsg; i++) s += xs[tid * nsg + i];
		uint sl = tid / (SR * ST), q = tid % (SR * ST);
		uint j = j0 + (sl & 1u) * SR + q / ST, t = i0 + (sl >> 1) * ST + q % ST;
		if (j < pc.rows && t < pc.n) dst[t * pc.m + pc.rowLo + j] = s;
	}
#else
	// In two rounds of half the elements (64 sums of 64 lanes each).
	const uint HALF = SR * ST / 2u;
	for (uint h0 = 0u; h0 < SR * ST; h0 += HALF) {
		for (uint q = 0u; q < HALF; q++) xs[(slot * HALF + q) * LANES + lane] = acc[h0 + q];
		barrier();
		for (uint h = LANES / 2u; h > 0u; h >>= 1) {
			if (lane < h) {
				for (uint q = 0u; q < HALF; q++) xs[(slot * HALF + q) * LANES + lane] += xs[(slot * HALF + q) * LANES + lane + h];
			}
			barrier();
		}
		if (lane < HALF) {
			uint q = h0 + lane;
			uint j = j0 + rb + q / ST, t = i0 + tb + q % ST;
			if (j < pc.rows && t < pc.n) dst[t * pc.m + pc.rowLo + j] = xs[(slot * HALF + lane) * LANES];
		}
		barrier();
	}
#endif
}
