#version 450
// MatMul, matrix-vector (decode and batched decode of up to a few tens of
// tokens): dst (n, m) = x (n, k) · wᵀ for the weight rows [rowLo,
// rowLo+rows) of this binding.
//
// Layout. A workgroup is WG/64 slots of 64 lanes (WG, constant 0, a
// multiple of 64); a slot takes ROWS weight rows (constant 1) and the
// workgroup TOKS tokens (constant 2), so one workgroup covers
// (WG/64)·ROWS rows × TOKS tokens. Lane l of a slot takes the elements
// (GROUP 1) or quant groups l, l+64, l+128, … of its rows, in order, BPI
// of them (constant 3) per unrolled step of its loop.
//
// Order (batch invariance, common/lane.glsl). Each lane adds its
// elements' products in order to one float32 sum per (row, token), and the
// 64 lane sums of a slot are reduced exactly as matmul_mm.comp reduces
// them: a dot's result depends on k alone, never on n, WG, ROWS, TOKS, BPI
// or where the row sits, and is bitwise the tiled kernel's.
//
// Roofline. A decode step must stream every weight byte once; the
// activations (k floats a token) are tiny and stay in L1/L2. The kernel is
// therefore arranged so that weight bytes are the only traffic that
// scales with m·k:
//   - blocks outer, rows and tokens inner: per quant group a lane loads its
//     activation chunk once per token (vec4 loads, GROUP/4 of them) and
//     uses it for ROWS rows; it dequantises each group of a row once and
//     uses it for TOKS tokens. The old kernel re-read the activations once
//     per row, as 32 scalar loads per 18-byte Q4_0 block: 128 bytes of
//     activation traffic per 18 bytes of weight.
//   - bytes per invocation per step: ROWS × BPI groups (Q4_0: 18 bytes a
//     group; ROWS 2, BPI 2: 72 bytes) plus TOKS·BPI·GROUP·4 bytes of
//     activations (cache hits after the first slot). By Little's law a
//     card reading 4.8 TB/s at ~0.6 µs latency needs ~2.9 MB in flight:
//     the 8B's k=4096 matvecs run 4096·64 = 262k lanes, ~11 bytes each, so
//     filling the card needs all rows resident at once and each lane's
//     ROWS·BPI loads independent of one another, which the unrolled loops
//     (constant trip counts after specialisation) and the per-(row, token)
//     accumulators give the compiler: acc, the scales and the dequantised
//     chunks are arrays indexed only by unrolled loop counters, so they
//     live in registers (no dynamically indexed local arrays).
//   - rows past the binding's last and tokens past n are clamped to the
//     last valid one (read, computed, not written): no branch in the loop.
//   - the reduction: subgroup adds, then the nsg = 64/subgroup partials of
//     each (row, token) summed in order; without subgroups a shared-memory
//     tree over the 64 lanes, in rounds of four sums.
// A 0.5B matvec (k=896 Q4_0: 28 groups a row) leaves 36 of 64 lanes idle
// whatever the layout (the lane order fixes it); its rows are few too, so
// there more ROWS per slot and smaller workgroups help less than launch
// overhead does. The sweep (tuning.go) picks WG, ROWS, TOKS and BPI per
// device and weight type by measurement.
//
// GATEUP: the gate and up matrices of an FFN (bindings 0 and 3, the same
// dtype, shape and parts) against the same x, and dst = silu(x·Wgᵀ) ·
// (x·Wuᵀ) as an epilogue: each lane keeps a gate and an up sum per (row,
// token), reduced as above, then swiglu (common/swiglu.glsl, binary.comp's
// steps) of the two: bitwise MatMul, MatMul, SwiGLU, with one dispatch
// and no gate/up round trip through memory.
//
// INT8 (shaders.Int8Types): the activations come quantised to 8 bits in
// blocks of 32 (quantize_q8.comp) and each group's contribution is an
// integer dot turned into float by common/int8.glsl's int8Block, added to
// the lane's sum in the same order; INTDOT takes the integer dots from
// GL_EXT_integer_dot_product (the same integers).
//
// FP16 (shaderFloat16): the dequantised weights and the activations are
// rounded to halves and multiplied in half precision, four at a time
// (one f16vec4 dot per four elements of a quant group, one product per
// element for the float types), each result added to the float32 sum.
//
// PROBE_* (probe.go's ablations, never run by MatMul): each takes one
// construct out. PROBE_SCALAR_X reads the activations as floats, four
// loads a chunk, instead of the vec4 alias; PROBE_NO_W4 drops the uvec4
// alias of binding 0 and compiles REPACK out (file-layout weights only);
// PROBE_NO_PRECISE drops every precise; PROBE_CONST makes ROWS, TOKS and
// BPI constants (2, 1, 2) instead of specialization constants;
// PROBE_NO_UNROLL drops every [[unroll]] of this file (an attribute
// glslang ignores, with a warning).
#extension GL_EXT_control_flow_attributes : require
#ifdef PROBE_NO_PRECISE
#define precise
#endif
#ifdef PROBE_NO_UNROLL
#define unroll probe_none
#endif
#include "common/base.glsl"

#ifdef PROBE_CONST
const uint ROWS = 2u;
const uint TOKS = 1u;
const uint BPI = 2u;
#else
layout(constant_id = 1) const uint ROWS = 2;
layout(constant_id = 2) const uint TOKS = 1;
layout(constant_id = 3) const uint BPI = 2;
#endif

layout(binding = 0) readonly buffer WB { uint W[]; };
#ifdef PROBE_NO_W4
uvec4 W4[1]; // never read: REPACK is the constant false
#else
layout(binding = 0) readonly buffer WB4 { uvec4 W4[]; }; // W, 16 bytes at a time
#endif
#include "common/weights.glsl"
#ifdef INT8
#include "common/int8.glsl"
#endif
#if defined(INT8)
// The activations quantised by quantize_q8.comp (its layout).
layout(binding = 1) readonly buffer QB { uint Q[]; };
#elif GROUP == 1
layout(binding = 1) readonly buffer XB { float x[]; };
#elif defined(PROBE_SCALAR_X)
layout(binding = 1) readonly buffer XB { float x[]; };
#else
layout(binding = 1) readonly buffer XB { vec4 x4[]; }; // k is a multiple of GSIZE
#endif
layout(binding = 2) writeonly buffer DB { float dst[]; };
#ifdef GATEUP
// weights.glsl's readers again, over the up matrix U.
layout(binding = 3) readonly buffer UB { uint U[]; };
layout(binding = 3) readonly buffer UB4 { uvec4 U4[]; };
#define W U
#define W4 U4
#define byteAt byteAtU
#define u16At u16AtU
#define halfAt halfAtU
#define i8 i8U
#define u32At u32AtU
#define kScales kScalesU
#define groupScales groupScalesU
#define chunkAt chunkAtU
#define groupAt groupAtU
#define weightAt weightAtU
#define groupQ groupQU
#include "common/weights.glsl"
#ifdef INT8
#include "common/int8.glsl"
#endif
#undef W
#undef W4
#undef byteAt
#undef u16At
#undef halfAt
#undef i8
#undef u32At
#undef kScales
#undef groupScales
#undef chunkAt
#undef groupAt
#undef weightAt
#undef groupQ
#include "common/swiglu.glsl"
const uint NW = 2u; // matrices: gate, up
#else
const uint NW = 1u;
#endif

layout(push_constant) uniform PC {
	uint k, m, n, rowLo, rows, rowBytes;
} pc;

#include "common/lane.glsl"

const uint SLOTS = WG / LANES;
const uint RT = ROWS * TOKS; // (row, token) pairs per slot
const uint NS = NW * RT;      // sums per lane: gate's then up's
#ifdef SUBGROUP
shared float part[SLOTS * NS * 16u]; // per (slot, sum): nsg ≤ 16 partials
#else
const uint ROUND = 4u;
shared float part[SLOTS * ROUND * LANES];
#endif
#ifdef GATEUP
shared float sums[SLOTS * NS]; // the reduced gate and up dots
#endif

// put stores the reduced sum q of slot (its (row, token) is q mod RT,
// counted from row j0 and token i0).
void put(uint slot, uint j0, uint i0, uint q, float v) {
#ifdef GATEUP
	sums[slot * NS + q] = v;
#else
	uint j = j0 + q / TOKS, t = i0 + q % TOKS;
	if (j < pc.rows && t < pc.n) dst[t * pc.m + pc.rowLo + j] = v;
#endif
}

void main() {
	uint tid = gl_LocalInvocationID.x, lane = tid % LANES, slot = tid / LANES;
	uint j0 = (groupIndex() * SLOTS + slot) * ROWS, i0 = gl_WorkGroupID.z * TOKS;
	uint rb[ROWS], xi[TOKS];
	[[unroll]] for (uint r = 0u; r < ROWS; r++) rb[r] = min(j0 + r, pc.rows - 1u) * pc.rowBytes;
	[[unroll]] for (uint t = 0u; t < TOKS; t++) xi[t] = min(i0 + t, pc.n - 1u) * pc.k;
	float acc[NS];
	[[unroll]] for (uint q = 0u; q < NS; q++) acc[q] = 0.0;
#if GROUP == 1
	for (uint e0 = lane; e0 < pc.k; e0 += LANES * BPI) {
		[[unroll]] for (uint b = 0u; b < BPI; b++) {
			uint e = e0 + LANES * b;
			if (e >= pc.k) break;
			float w[ROWS];
			[[unroll]] for (uint r = 0u; r < ROWS; r++) w[r] = weightAt(rb[r], e);
#ifdef GATEUP
			float wu[ROWS];
			[[unroll]] for (uint r = 0u; r < ROWS; r++) wu[r] = weightAtU(rb[r], e);
#endif
			[[unroll]] for (uint t = 0u; t < TOKS; t++) {
				float xv = x[xi[t] + e];
				[[unroll]] for (uint r = 0u; r < ROWS; r++) acc[r * TOKS + t] = lanePut(acc[r * TOKS + t], xv, w[r]);
#ifdef GATEUP
				[[unroll]] for (uint r = 0u; r < ROWS; r++) acc[RT + r * TOKS + t] = lanePut(acc[RT + r * TOKS + t], xv, wu[r]);
#endif
			}
		}
	}
#elif defined(INT8)
	// Per group: its packed weights and scales once for every token, the
	// token's block of q8 once for every row; one int8Block a (row,
	// token), added to the lane's sum in order.
	uint ng = pc.k / GSIZE, nb = pc.n * (pc.k >> 5);
	for (uint g0 = lane; g0 < ng; g0 += LANES * BPI) {
		[[unroll]] for (uint b = 0u; b < BPI; b++) {
			uint g = g0 + LANES * b;
			if (g >= ng) break;
			uint c0 = g * GSIZE;
			vec2 s[ROWS];
			uint wq[ROWS][GW];
			[[unroll]] for (uint r = 0u; r < ROWS; r++) {
				s[r] = groupScales(rb[r], c0);
				groupQ(rb[r], c0, wq[r]);
			}
#ifdef GATEUP
			vec2 su[ROWS];
			uint wqu[ROWS][GW];
			[[unroll]] for (uint r = 0u; r < ROWS; r++) {
				su[r] = groupScalesU(rb[r], c0);
				groupQU(rb[r], c0, wqu[r]);
			}
#endif
			[[unroll]] for (uint t = 0u; t < TOKS; t++) {
				uint xo = xi[t] + c0, xb = xo >> 5;
				float dx = uintBitsToFloat(Q[8u * nb + xb]);
				int xsum = int(Q[9u * nb + xb]);
				uint xq[GW];
				[[unroll]] for (uint i = 0u; i < GW; i++) xq[i] = Q[(xo >> 2) + i];
				[[unroll]] for (uint r = 0u; r < ROWS; r++) {
					int isum = 0;
					[[unroll]] for (uint i = 0u; i < GW; i++) isum = dot4(wq[r][i], xq[i], isum);
					precise float v = acc[r * TOKS + t] + int8Block(s[r], dx, isum, xsum);
					acc[r * TOKS + t] = v;
#ifdef GATEUP
					int isumu = 0;
					[[unroll]] for (uint i = 0u; i < GW; i++) isumu = dot4(wqu[r][i], xq[i], isumu);
					precise float vu = acc[RT + r * TOKS + t] + int8Block(su[r], dx, isumu, xsum);
					acc[RT + r * TOKS + t] = vu;
#endif
				}
			}
		}
	}
#else
	uint ng = pc.k / GSIZE;
	for (uint g0 = lane; g0 < ng; g0 += LANES * BPI) {
		[[unroll]] for (uint b = 0u; b < BPI; b++) {
			uint g = g0 + LANES * b;
			if (g >= ng) break;
			uint c0 = g * GSIZE;
			vec2 s[ROWS];
			[[unroll]] for (uint r = 0u; r < ROWS; r++) s[r] = groupScales(rb[r], c0);
#ifdef GATEUP
			vec2 su[ROWS];
			[[unroll]] for (uint r = 0u; r < ROWS; r++) su[r] = groupScalesU(rb[r], c0);
#endif
			[[unroll]] for (uint e = 0u; e < GSIZE; e += CHUNK) {
				vec4 w[ROWS];
				[[unroll]] for (uint r = 0u; r < ROWS; r++) w[r] = chunkAt(rb[r], c0 + e, s[r]);
#ifdef GATEUP
				vec4 wu[ROWS];
				[[unroll]] for (uint r = 0u; r < ROWS; r++) wu[r] = chunkAtU(rb[r], c0 + e, su[r]);
#endif
				[[unroll]] for (uint t = 0u; t < TOKS; t++) {
#ifdef PROBE_SCALAR_X
					uint xo = xi[t] + c0 + e;
					vec4 xv = vec4(x[xo], x[xo + 1u], x[xo + 2u], x[xo + 3u]);
#else
					vec4 xv = x4[(xi[t] + c0 + e) >> 2];
#endif
					[[unroll]] for (uint r = 0u; r < ROWS; r++) acc[r * TOKS + t] = laneChunk(acc[r * TOKS + t], xv, w[r]);
#ifdef GATEUP
					[[unroll]] for (uint r = 0u; r < ROWS; r++) acc[RT + r * TOKS + t] = laneChunk(acc[RT + r * TOKS + t], xv, wu[r]);
#endif
				}
			}
		}
	}
#endif
	// Reduce each sum's 64 lane sums in the order of matmul_mm.comp; the
	// first NS invocations of a slot hold them. Without GATEUP they write
	// dst; with it they keep them in sums, and after a barrier the first
	// RT write swiglu(gate, up).
#ifdef SUBGROUP
	uint nsg = LANES / gl_SubgroupSize, sg = lane / gl_SubgroupSize;
	[[unroll]] for (uint q = 0u; q < NS; q++) {
		float v = subgroupAdd(acc[q]);
		if (gl_SubgroupInvocationID == 0u) part[(slot * NS + q) * nsg + sg] = v;
	}
	barrier();
	for (uint q = lane; q < NS; q += LANES) {
		float v = 0.0;
		for (uint i = 0u; i < nsg; i++) v += part[(slot * NS + q) * nsg + i];
		put(slot, j0, i0, q, v);
	}
#else
	[[unroll]] for (uint h0 = 0u; h0 < NS; h0 += ROUND) {
		[[unroll]] for (uint q = 0u; q < ROUND; q++) {
			if (h0 + q < NS) part[(slot * ROUND + q) * LANES + lane] = acc[h0 + q];
		}
		barrier();
		for (uint h = LANES / 2u; h > 0u; h >>= 1) {
			if (lane < h) {
				for (uint q = 0u; q < ROUND; q++) part[(slot * ROUND + q) * LANES + lane] += part[(slot * ROUND + q) * LANES + lane + h];
			}
			barrier();
		}
		uint q = h0 + lane;
		if (lane < ROUND && q < NS) put(slot, j0, i0, q, part[(slot * ROUND + lane) * LANES]);
		barrier();
	}
#endif
#ifdef GATEUP
	barrier();
	for (uint q = lane; q < RT; q += LANES) {
		uint j = j0 + q / TOKS, t = i0 + q % TOKS;
		if (j < pc.rows && t < pc.n) dst[t * pc.m + pc.rowLo + j] = swiglu(sums[slot * NS + q], sums[slot * NS + RT + q]);
	}
#endif
}
