#version 450
// MatMul on the matrix cores (VK_KHR_cooperative_matrix): dst (n, m) =
// x (n, k) · wᵀ for the weight rows [rowLo, rowLo+rows) of this binding,
// with llama.cpp's arithmetic: halves in, float32 sums. A workgroup
// computes a tile of TM tokens × TN weight rows; each of its
// (TM/WM)·(TN/WN) subgroups a WM × WN part of it, as MM × MN blocks
// accumulated in float32 cooperative matrices (MM × MN × MK: a shape the
// device lists, 16 × 16 × 16 on most GPUs, 8 × 8 × 8 on lavapipe).
//
// Over k, in steps of BK: the workgroup rounds the step's activations to
// halves (x, TM × BK) and dequantises its weights (float32, as every
// kernel does: common/weights.glsl) and rounds them to halves (TN × BK)
// into shared memory, then each subgroup multiplies its blocks with
// coopMatMulAdd, MK of k at a time. Both roundings are to nearest, ties
// to even (f32ToF16), whatever the device's conversion does. Elements
// past k and tokens past n are zeros; rows past the binding's are not
// written. Shared memory: 2·(TM + TN)·BK + 4·TM·TN bytes (24 KiB for the
// 64 × 64 tile with BK 32).
//
// Batch invariance: an element of dst is the chain acc = A·B + acc over
// the MK-wide blocks of k in order, from zero; neither the tile sizes
// nor the token's place in the tile nor n change that chain, so a token
// gets the same bits alone, in any batch and any tile shape (on a device
// whose coopMatMulAdd computes an element from its row and column alone,
// which the tests check).
//
// Specialization constants: 0 the workgroup size (subgroups · subgroup
// size, set by the host), 1 TM, 2 TN, 3 WM, 4 WN, 5 BK (MM | WM | TM,
// MN | WN | TN, MK | BK), 6-8 the shape MM, MN, MK.
#extension GL_KHR_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#include "common/base.glsl"

layout(binding = 0) readonly buffer WB { uint W[]; };
layout(binding = 0) readonly buffer WB4 { uvec4 W4[]; }; // W, 16 bytes at a time
layout(binding = 1) readonly buffer XB { float x[]; };
layout(binding = 2) writeonly buffer DB { float dst[]; };

layout(push_constant) uniform PC {
	uint k, m, n, rowLo, rows, rowBytes;
} pc;

#include "common/weights.glsl"

layout(constant_id = 1) const uint TM = 64;
layout(constant_id = 2) const uint TN = 64;
layout(constant_id = 3) const uint WM = 32;
layout(constant_id = 4) const uint WN = 32;
layout(constant_id = 5) const uint BK = 32;
layout(constant_id = 6) const uint MM = 16;
layout(constant_id = 7) const uint MN = 16;
layout(constant_id = 8) const uint MK = 16;

const uint CM = WM / MM, CN = WN / MN; // blocks per subgroup
const uint SGN = TN / WN;                // subgroups along the rows
const uint NSG = (TM / WM) * SGN;        // subgroups per workgroup

shared float16_t xs[TM * BK]; // [token][k], row-major A
shared float16_t ws[TN * BK]; // [weight row][k]: column-major B
shared float cs[TM * TN];      // the tile's results, at an edge of dst

float16_t toHalf(float v) { return float16_t(f16ToF32(f32ToF16(v))); }

void main() {
	uint tid = gl_LocalInvocationID.x, sg = gl_SubgroupID;
	uint j0 = groupIndex() * TN, i0 = gl_WorkGroupID.z * TM;
	uint wm0 = (sg / SGN) * WM, wn0 = (sg % SGN) * WN; // this subgroup's part
	coopmat<float, gl_ScopeSubgroup, MM, MN, gl_MatrixUseAccumulator> acc[CM * CN];
	for (uint q = 0u; q < CM * CN; q++) acc[q] = coopmat<float, gl_ScopeSubgroup, MM, MN, gl_MatrixUseAccumulator>(0.0);

	for (uint k0 = 0u; k0 < pc.k; k0 += BK) {
		for (uint u = tid; u < TM * BK; u += WG) {
			uint t = i0 + u / BK, c = k0 + u % BK;
			xs[u] = t < pc.n && c < pc.k ? toHalf(x[t * pc.k + c]) : float16_t(0.0);
		}
		// The weights, four consecutive elements at a time (one group's).
		for (uint u = tid; u < TN * BK / 4u; u += WG) {
			uint r = (u * 4u) / BK, c = k0 + (u * 4u) % BK;
			vec4 w = vec4(0.0);
			if (j0 + r < pc.rows) {
				uint rb = (j0 + r) * pc.rowBytes;
#if GROUP == 1
				for (uint e = 0u; e < 4u; e++) {
					if (c + e < pc.k) w[e] = weightAt(rb, c + e);
				}
#else
				if (c < pc.k) w = chunkAt(rb, c, groupScales(rb, c));
#endif
			}
			for (uint e = 0u; e < 4u; e++) ws[u * 4u + e] = toHalf(w[e]);
		}
		barrier();
		for (uint kk = 0u; kk < BK; kk += MK) {
			coopmat<float16_t, gl_ScopeSubgroup, MM, MK, gl_MatrixUseA> a[CM];
			for (uint i = 0u; i < CM; i++) coopMatLoad(a[i], xs, (wm0 + MM * i) * BK + kk, BK, gl_CooperativeMatrixLayoutRowMajor);
			for (uint j = 0u; j < CN; j++) {
				coopmat<float16_t, gl_ScopeSubgroup, MK, MN, gl_MatrixUseB> b;
				coopMatLoad(b, ws, (wn0 + MN * j) * BK + kk, BK, gl_CooperativeMatrixLayoutColumnMajor);
				for (uint i = 0u; i < CM; i++) acc[i * CN + j] = coopMatMulAdd(a[i], b, acc[i * CN + j]);
			}
		}
		barrier();
	}

	// dst[t][rowLo + r]: a whole tile straight from the accumulators, a
	// tile at an edge of dst through cs, with a workgroup barrier (the
	// choice is uniform in the workgroup, as barriers must be).
	if (i0 + TM <= pc.n && j0 + TN <= pc.rows) {
		for (uint i = 0u; i < CM; i++) {
			for (uint j = 0u; j < CN; j++) {
				uint t = i0 + wm0 + MM * i, r = j0 + wn0 + MN * j;
				coopMatStore(acc[i * CN + j], dst, t * pc.m + pc.rowLo + r, pc.m, gl_CooperativeMatrixLayoutRowMajor);
			}
		}
		return;
	}
	for (uint i = 0u; i < CM; i++) {
		for (uint j = 0u; j < CN; j++) {
			coopMatStore(acc[i * CN + j], cs, (wm0 + MM * i) * TN + wn0 + MN * j, TN, gl_CooperativeMatrixLayoutRowMajor);
		}
	}
	barrier();
	for (uint u = tid; u < TM * TN; u += WG) {
		uint t = i0 + u / TN, r = j0 + u % TN;
		if (t < pc.n && r < pc.rows) dst[t * pc.m + pc.rowLo + r] = cs[u];
	}
}
