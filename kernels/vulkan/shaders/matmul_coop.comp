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
// to even (toHalf, f32ToF16's values), whatever the device's conversion
// does; an F16 weight is a half already and is copied. Elements past k
// and tokens past n are zeros; rows past the binding's are not written.
// Shared memory: 2·(TM + TN)·BK + 4·TM·TN bytes (24 KiB for the 64 × 64
// tile with BK 32).
//
// The loads are built for decode, which waits on memory: an invocation
// takes whole pieces of 16 weights of a row (a group's scales read once
// for them, not per four elements) in an unrolled loop, so its loads of a
// step are independent and in flight together; the workgroup may have
// more subgroups than blocks to multiply (the host's workgroup size,
// coopTile.sg), the others only load and round; the activations of
// tokens past n are zeroed once, not loaded each step.
//
// Batch invariance: an element of dst is the chain acc = A·B + acc over
// the MK-wide blocks of k in order, from zero; neither the tile sizes
// (nor the workgroup's subgroups) nor the token's place in the tile nor
// n change that chain, so a token gets the same bits alone, in any batch
// and any tile shape (on a device whose coopMatMulAdd computes an element
// from its row and column alone, which the tests check).
//
// Specialization constants: 0 the workgroup size (subgroups · subgroup
// size, set by the host: at least the NSG subgroups that multiply), 1 TM,
// 2 TN, 3 WM, 4 WN, 5 BK (MM | WM | TM, MN | WN | TN, MK | BK), 6-8 the
// shape MM, MN, MK.
#extension GL_KHR_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_EXT_control_flow_attributes : require
#include "common/base.glsl"

layout(binding = 0) readonly buffer WB { uint W[]; };
layout(binding = 0) readonly buffer WB4 { uvec4 W4[]; }; // W, 16 bytes at a time
layout(binding = 1) readonly buffer XB { float x[]; };
layout(binding = 1) readonly buffer XB4 { vec4 x4[]; }; // x, 16 bytes at a time
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

const uint PIECE = 16u;              // weights of a row an invocation takes at once
const uint PR = BK / PIECE;           // pieces a row a step
const uint WPI = (TN * PR + WG - 1u) / WG; // pieces an invocation a step
const uint XC = TM * BK / 4u;              // activations a step, in fours
const uint XPI = (XC + WG - 1u) / WG;      // fours an invocation a step

// toHalf is v rounded to the nearest half, ties to even (f32ToF16's
// bits): inline where the half is normal, f32ToF16 for the rest.
float16_t toHalf(float v) {
	uint x = floatBitsToUint(v), a = x & 0x7FFFFFFFu, h;
	if (a - 0x38800000u < 0x0F000000u) { // 2^-14 ≤ |v| < 2^16
		h = (a >> 13) - 0x1C000u;          // rebias the exponent (127 → 15)
		h += uint((a & 0x1FFFu) + (h & 1u) > 0x1000u); // a carry to Inf is right
		h |= (x >> 16) & 0x8000u;
	} else {
		h = f32ToF16(v);
	}
	return unpackFloat2x16(h).x;
}

// piece writes the 16 weights of row r (at byte rb) from element c (a
// multiple of 16) to ws at o, as halves.
void piece(uint rb, uint c, uint o) {
#if GROUP == 1
	if ((pc.rowBytes & 15u) == 0u && c + PIECE <= pc.k) {
		uint q = (rb + 2u * c) >> 4; // 16-byte aligned: two words of 8 halves
		[[unroll]] for (uint i = 0u; i < 2u; i++) {
			uvec4 u = W4[q + i];
			[[unroll]] for (uint e = 0u; e < 4u; e++) {
#if defined(TYPE_F16)
				f16vec2 v = unpackFloat2x16(u[e]);
				ws[o + 8u * i + 2u * e] = v.x;
				ws[o + 8u * i + 2u * e + 1u] = v.y;
#else
				ws[o + 8u * i + 2u * e] = toHalf(weightAt(rb, c + 8u * i + 2u * e));
				ws[o + 8u * i + 2u * e + 1u] = toHalf(weightAt(rb, c + 8u * i + 2u * e + 1u));
#endif
			}
		}
		return;
	}
	[[unroll]] for (uint e = 0u; e < PIECE; e++) {
#if defined(TYPE_F16)
		ws[o + e] = c + e < pc.k ? unpackFloat2x16(u16At(rb + 2u * (c + e))).x : float16_t(0.0);
#else
		ws[o + e] = c + e < pc.k ? toHalf(weightAt(rb, c + e)) : float16_t(0.0);
#endif
	}
#else
	// A piece lies in one group (GROUP is 16 or 32) and k is a multiple
	// of GROUP: the piece is in k or past it.
	vec4 w[4];
	if (c < pc.k) {
		vec2 s = groupScales(rb, c);
		[[unroll]] for (uint e = 0u; e < 4u; e++) w[e] = chunkAt(rb, c + 4u * e, s);
	} else {
		[[unroll]] for (uint e = 0u; e < 4u; e++) w[e] = vec4(0.0);
	}
	[[unroll]] for (uint e = 0u; e < PIECE; e++) ws[o + e] = toHalf(w[e / 4u][e % 4u]);
#endif
}

void main() {
	uint tid = gl_LocalInvocationID.x, sg = gl_SubgroupID;
	uint j0 = groupIndex() * TN, i0 = gl_WorkGroupID.z * TM;
	uint wm0 = (sg / SGN) * WM, wn0 = (sg % SGN) * WN; // this subgroup's part
	uint nt = min(TM, pc.n - i0);                       // tokens of the tile that exist
	coopmat<float, gl_ScopeSubgroup, MM, MN, gl_MatrixUseAccumulator> acc[CM * CN];
	for (uint q = 0u; q < CM * CN; q++) acc[q] = coopmat<float, gl_ScopeSubgroup, MM, MN, gl_MatrixUseAccumulator>(0.0);
	for (uint u = nt * BK + tid; u < TM * BK; u += WG) xs[u] = float16_t(0.0);

	for (uint k0 = 0u; k0 < pc.k; k0 += BK) {
		if ((pc.k & 3u) == 0u) { // four at a time
			for (uint i = 0u; i < XPI; i++) {
				uint u = tid + i * WG, t = u / (BK / 4u), c = k0 + 4u * (u % (BK / 4u));
				if (u < XC && t < nt) {
					vec4 v = c < pc.k ? x4[((i0 + t) * pc.k + c) >> 2] : vec4(0.0);
					[[unroll]] for (uint e = 0u; e < 4u; e++) xs[4u * u + e] = toHalf(v[e]);
				}
			}
		} else {
			for (uint u = tid; u < nt * BK; u += WG) {
				uint t = i0 + u / BK, c = k0 + u % BK;
				xs[u] = c < pc.k ? toHalf(x[t * pc.k + c]) : float16_t(0.0);
			}
		}
		[[unroll]] for (uint i = 0u; i < WPI; i++) { // all of a step's loads at once
			uint p = tid + i * WG, r = p / PR;
			if (p >= TN * PR) continue;
			if (j0 + r < pc.rows) {
				piece((j0 + r) * pc.rowBytes, k0 + (p % PR) * PIECE, p * PIECE);
			} else {
				[[unroll]] for (uint e = 0u; e < PIECE; e++) ws[p * PIECE + e] = float16_t(0.0);
			}
		}
		barrier();
		if (sg < NSG) {
			for (uint kk = 0u; kk < BK; kk += MK) {
				coopmat<float16_t, gl_ScopeSubgroup, MM, MK, gl_MatrixUseA> a[CM];
				for (uint i = 0u; i < CM; i++) coopMatLoad(a[i], xs, (wm0 + MM * i) * BK + kk, BK, gl_CooperativeMatrixLayoutRowMajor);
				for (uint j = 0u; j < CN; j++) {
					coopmat<float16_t, gl_ScopeSubgroup, MK, MN, gl_MatrixUseB> b;
					coopMatLoad(b, ws, (wn0 + MN * j) * BK + kk, BK, gl_CooperativeMatrixLayoutColumnMajor);
					for (uint i = 0u; i < CM; i++) acc[i * CN + j] = coopMatMulAdd(a[i], b, acc[i * CN + j]);
				}
			}
		}
		barrier();
	}

	// dst[t][rowLo + r]: a whole tile straight from the accumulators, a
	// tile at an edge of dst through cs, with a workgroup barrier (the
	// choice is uniform in the workgroup, as barriers must be).
	if (i0 + TM <= pc.n && j0 + TN <= pc.rows) {
		if (sg >= NSG) return;
		for (uint i = 0u; i < CM; i++) {
			for (uint j = 0u; j < CN; j++) {
				uint t = i0 + wm0 + MM * i, r = j0 + wn0 + MN * j;
				coopMatStore(acc[i * CN + j], dst, t * pc.m + pc.rowLo + r, pc.m, gl_CooperativeMatrixLayoutRowMajor);
			}
		}
		return;
	}
	for (uint i = 0u; i < CM && sg < NSG; i++) {
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
