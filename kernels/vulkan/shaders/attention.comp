#version 450
// Decode attention: one workgroup per (token, KV head, group of up to
// GMAX of its query heads, segment). The token's list of L cells (its
// row of vis) is cut by common/attention.glsl's rule (chunks of CHUNK =
// 64 entries, at most pc.segs segments, the cut a function of L alone):
// workgroup z takes segment z. For each chunk the workgroup loads the
// chunk's K rows of its KV head into shared memory (consecutive
// invocations read consecutive elements: whole cache lines), and
// invocation c scores cell c against every query head of the group, so
// one K load serves the GQA group; then the group's V rows, the same
// way, and each invocation accumulates its (head, element) outputs.
// Chunks go by rank in the list, never by cell index, so the result does
// not depend on where the cells sit. The per-query arithmetic is
// attention_prefill.comp's, operation for operation.
//
// With SPLIT each workgroup writes its segment's unnormalised state
// (M, l, acc) to dst as scratch, (n·heads, pc.zs, 2+hd), and
// attention_combine.comp merges the segments in order; a workgroup past
// its token's last segment writes M = −Inf (skipped by the merge).
// Without SPLIT (lists of at most one chunk: one segment) it writes
// acc / l, which is what the merge of one segment gives.
//
// The dispatch covers the pc.n tokens from row0 of q, vis and (unsplit)
// dst: a batch may run in chunks of tokens (the scratch of SPLIT is
// indexed from the chunk's first token).
//
// Why this shape (an H100/H200: 132 SMs, 3.35–4.8 TB/s, ~1 µs to DRAM):
// a decode step reads L·kvHeads·hd·2 (K and V) cache elements once. The
// 8B at 256 cells reads 256·8·128·2·2 B = 1 MiB, 0.2 µs of bandwidth: the
// step is latency-bound, and what counts is how many dependent trips to
// memory a workgroup makes (one per chunk for K, one for V, all of a
// chunk's loads in flight at once) and that the chunks run side by side:
// 4 segments × 8 KV heads × 4 query heads = 128 workgroups of one chunk
// each (the host gives a workgroup fewer query heads of its KV head, down
// to one, until a step has AttentionTuning.Workgroups = 128 of them),
// against the old kernel's 32 workgroups (one per query head) walking 4
// chunks with 128 scalar loads of a scattered row per cell. At 32k cells the step reads 128 MiB
// (27 µs at 4.8 TB/s): pc.segs = 32 segments × 8 KV heads = 256
// workgroups of 16 chunks, about 2 per SM; with KVT = 4096 floats a K or
// V tile of 32 cells × 128 is 64 independent 2-byte loads per invocation,
// 8 KiB per workgroup, ≈ 2 MiB in flight over the card: about half of
// what 4.8 TB/s × ~1 µs asks, so the sweep should try pc.segs 64 and
// 128 and KVT 8192 there. GMAX (query heads per workgroup) trades K/V
// reuse for workgroups on small models (the 0.5B has 2 KV heads of 7
// query heads: 2 × 4 segments = 8 workgroups at 256 cells with GMAX 8,
// 56 with the host's choice of 1): a knob like pc.segs and KVT, and
// none changes a result except
// pc.segs, which moves the cut (the same in decode and prefill, so
// invariance holds for any value).
#include "common/base.glsl"

layout(constant_id = 1) const uint GMAX = 8; // query heads per workgroup, ≤ 8
layout(constant_id = 2) const uint KVT = 4096; // floats of the K/V tile, ≥ hd

layout(binding = 0) readonly buffer QB { float q[]; };
#include "common/cache.glsl"
layout(binding = 3) readonly buffer VB3 { int vis[]; };
layout(binding = 4) writeonly buffer DB { float dst[]; };

layout(push_constant) uniform PC {
	uint n, heads, kvHeads, hd, width; // width: entries per row of vis
	float scale;
	uint segs; // the most segments a list is cut into
	uint row0; // the first token of the dispatch
	uint zs; // SPLIT: segments a token has room for in the scratch
} pc;

#include "common/attention.glsl"
#define CID(x) cid[x]

// Accumulators an invocation holds: GMAX·hd ≤ 8·256 outputs over WG = 64.
#define NACC 32

shared float qs[8 * 256];
shared float tile[KVT];
shared float pb[8 * CHUNK]; // the chunk's weights, by head
shared int cid[CHUNK];
shared float al[8]; // the chunk's alpha, by head

void main() {
	uint tid = gl_LocalInvocationID.x;
	uint G = pc.heads / pc.kvHeads, gsz = min(G, GMAX), groups = (G + gsz - 1u) / gsz;
	uint w = groupIndex();
	uint tl = w / (pc.kvHeads * groups);
	if (tl >= pc.n) return; // uniform
	uint kh = (w / groups) % pc.kvHeads, gr = w % groups;
	uint t = pc.row0 + tl, h0 = kh * G + gr * gsz, ng = min(gsz, G - gr * gsz);
	uint hd = pc.hd, qDim = pc.heads * hd, kvDim = pc.kvHeads * hd, ko = kh * hd;
	uint L = listLen(t), seg = segCells(L), z = gl_WorkGroupID.z;
	uint lo = z * seg, hi = min(L, lo + seg);
	uint R = min(CHUNK, KVT / hd); // cells a tile holds

	for (uint i = tid; i < ng * hd; i += WG) qs[i] = q[t * qDim + h0 * hd + i];
	float M[8], l[8], acc[NACC];
	for (uint g = 0u; g < 8u; g++) {
		M[g] = NEG;
		l[g] = 0.0;
	}
	for (uint r = 0u; r < NACC; r++) acc[r] = 0.0;
	barrier();

	for (uint base = lo; base < hi; base += CHUNK) {
		uint last = min(CHUNK, hi - base);
		cid[tid] = tid < last ? vis[t * pc.width + base + tid] : -1;
		barrier();
		float s[8];
		for (uint g = 0u; g < 8u; g++) s[g] = NEG;
		for (uint c0 = 0u; c0 < last; c0 += R) {
			uint rn = min(R, last - c0);
			LOAD_TILE(ldk, ldk4)
			barrier();
			if (tid >= c0 && tid < c0 + rn) {
				for (uint g = 0u; g < 8u; g++) {
					if (g >= ng) break;
					float d = 0.0;
					for (uint e = 0u; e < hd; e++) {
						precise float pr = qs[g * hd + e] * tile[(tid - c0) * hd + e];
						precise float ds = d + pr;
						d = ds;
					}
					precise float sc = d * pc.scale;
					s[g] = sc;
				}
			}
			barrier();
		}
		for (uint g = 0u; g < 8u; g++) {
			if (g >= ng) break;
			float cm = maxWG(s[g]);
			float Mn = max(M[g], cm);
			precise float da = M[g] - Mn;
			precise float alpha = exp(da); // 0 while M is −Inf
			precise float ds = s[g] - Mn;
			precise float pe = exp(ds);
			pb[g * CHUNK + tid] = tid < last ? pe : 0.0;
			if (tid == 0u) al[g] = alpha;
			M[g] = Mn;
		}
		barrier();
		for (uint g = 0u; g < 8u; g++) {
			if (g >= ng) break;
			float ps = 0.0;
			for (uint c = 0u; c < last; c++) {
				precise float x = ps + pb[g * CHUNK + c];
				ps = x;
			}
			precise float la = l[g] * al[g];
			precise float ln = la + ps;
			l[g] = ln;
		}
		for (uint r = 0u; r < NACC; r++) {
			uint it = tid + r * WG;
			if (it >= ng * hd) break;
			precise float a = acc[r] * al[it / hd];
			acc[r] = a;
		}
		for (uint c0 = 0u; c0 < last; c0 += R) {
			uint rn = min(R, last - c0);
			LOAD_TILE(ldv, ldv4)
			barrier();
			for (uint r = 0u; r < NACC; r++) {
				uint it = tid + r * WG;
				if (it >= ng * hd) break;
				uint g = it / hd, e = it % hd;
				float a = acc[r];
				for (uint c = 0u; c < rn; c++) {
					precise float pv = pb[g * CHUNK + c0 + c] * tile[c * hd + e];
					precise float x = a + pv;
					a = x;
				}
				acc[r] = a;
			}
			barrier();
		}
	}
#ifdef SPLIT
	uint nseg = L == 0u ? 0u : (L + seg - 1u) / seg;
	for (uint g = 0u; g < 8u; g++) {
		if (g >= ng) break;
		uint so = ((tl * pc.heads + h0 + g) * pc.zs + z) * (hd + 2u);
		if (tid == 0u) {
			dst[so] = z < nseg ? M[g] : NEG;
			dst[so + 1u] = l[g];
		}
	}
	if (z < nseg) {
		for (uint r = 0u; r < NACC; r++) {
			uint it = tid + r * WG;
			if (it >= ng * hd) break;
			uint g = it / hd, e = it % hd;
			dst[((tl * pc.heads + h0 + g) * pc.zs + z) * (hd + 2u) + 2u + e] = acc[r];
		}
	}
#else
	for (uint r = 0u; r < NACC; r++) {
		uint it = tid + r * WG;
		if (it >= ng * hd) break;
		uint g = it / hd, e = it % hd;
		float lg = 0.0;
		for (uint x = 0u; x < 8u; x++) if (x == g) lg = l[x];
		dst[t * qDim + (h0 + g) * hd + e] = lg == 0.0 ? 0.0 : acc[r] / lg;
	}
#endif
}
