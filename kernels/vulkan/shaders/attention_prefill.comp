#version 450
// Prefill attention in the flash style: one workgroup per (tile of pc.tq
// tokens, KV head, group of up to GMAX of its query heads); the tile's
// query rows (token, head) walk their lists chunk by chunk (CHUNK = 64
// entries by rank, common/attention.glsl) with an online softmax, each
// row cutting its own list into segments by the decode kernel's rule and
// merging them in order in registers, so that no score matrix and no
// scratch exists (memory O(tile), whatever the prompt's length) and each
// row's result is bitwise attention.comp's + attention_combine.comp's:
// the same scores, chunk maxima, exp, sums in the same order, the same
// merge. Only the loads are shared: each chunk's K rows, then its V rows,
// of the tile's reference row (the longest list) go to shared memory
// once, in tiles of KVT floats read with consecutive invocations on
// consecutive elements, and every row whose list names the same cell at
// that rank reads them there (the causal prefill of one sequence: every
// row's list is a prefix of the reference's); a row whose list differs
// there (another sequence, a sliding window's shifted start) reads that
// cell from the cache itself, with the same value and the same result.
//
// Work: a prompt of n tokens over lists of up to W cells computes
// n·W·hd·2 products per query head, reading each K/V row once per tile
// of pc.tq tokens instead of once per token: with pc.tq·G rows of 16
// (QROWS) a chunk of 64 cells × 128 elements (16 KiB of F16) serves 16
// rows, 2 products per element loaded per row. Knobs (none changes a
// result): QROWS (rows per tile, spec 1), KVT (tile floats, spec 2), GMAX
// (query heads per workgroup, spec 3), WG (spec 0).
#include "common/base.glsl"

layout(constant_id = 1) const uint QROWS = 16; // rows (tokens × heads) per tile
layout(constant_id = 2) const uint KVT = 4096; // floats of the K/V tile, ≥ hd
layout(constant_id = 3) const uint GMAX = 8; // query heads per workgroup, ≤ QROWS

layout(binding = 0) readonly buffer QB { float q[]; };
#include "common/cache.glsl"
layout(binding = 3) readonly buffer VB3 { int vis[]; };
layout(binding = 4) writeonly buffer DB { float dst[]; };

layout(push_constant) uniform PC {
	uint n, heads, kvHeads, hd, width; // width: entries per row of vis
	float scale;
	uint segs; // the most segments a list is cut into
	uint tq; // tokens per tile: tq·(heads per workgroup) ≤ QROWS
} pc;

#include "common/attention.glsl"
#define CID(x) cref[x]

// Accumulators an invocation holds: QROWS·hd outputs over WG ≤ NACC·WG.
#define NACC 32

shared float tile[KVT];
shared float sc[QROWS * CHUNK]; // scores, then weights, of the chunk by row
shared int rc[QROWS * CHUNK]; // the rows' cells of the chunk (-1: none)
shared int cref[CHUNK]; // the reference row's
shared uint rt[QROWS], rL[QROWS], rSeg[QROWS], rMode[QROWS]; // token, list length, segment; merge mode
shared float rM[QROWS], rl[QROWS], rAl[QROWS]; // the segment's online softmax
shared float cM[QROWS], cl[QROWS], cWa[QROWS], cWb[QROWS]; // the merge of the finished segments
shared uint refT, maxL;

// mergeRow merges row r's finished segment into its merge state (the
// scalars; mode 1: copied, 2: weighted) and starts the next.
void mergeRow(uint r) {
	if (cM[r] == NEG) {
		cM[r] = rM[r];
		cl[r] = rl[r];
		rMode[r] = 1u;
	} else {
		float wa, wb, mn;
		mergeWeights(cM[r], rM[r], wa, wb, mn);
		cl[r] = mergeAdd(cl[r], wa, rl[r], wb);
		cM[r] = mn;
		cWa[r] = wa;
		cWb[r] = wb;
		rMode[r] = 2u;
	}
	rM[r] = NEG;
	rl[r] = 0.0;
}

void main() {
	uint tid = gl_LocalInvocationID.x;
	uint G = pc.heads / pc.kvHeads, gsz = min(G, GMAX), groups = (G + gsz - 1u) / gsz;
	uint w = groupIndex();
	uint t0 = (w / (pc.kvHeads * groups)) * pc.tq;
	if (t0 >= pc.n) return; // uniform
	uint kh = (w / groups) % pc.kvHeads, gr = w % groups;
	uint h0 = kh * G + gr * gsz, ng = min(gsz, G - gr * gsz), nrows = pc.tq * ng;
	uint hd = pc.hd, qDim = pc.heads * hd, kvDim = pc.kvHeads * hd, ko = kh * hd;
	uint R = min(CHUNK, KVT / hd); // cells a tile holds

	if (tid < nrows) {
		uint t = t0 + tid / ng;
		uint L = t < pc.n ? listLen(t) : 0u;
		rt[tid] = t < pc.n ? t : 0u;
		rL[tid] = L;
		rSeg[tid] = segCells(L);
		rM[tid] = NEG;
		rl[tid] = 0.0;
		cM[tid] = NEG;
		cl[tid] = 0.0;
		rMode[tid] = 0u;
	}
	barrier();
	if (tid == 0u) {
		uint m = 0u, rr = 0u;
		for (uint r = 0u; r < nrows; r++) {
			if (rL[r] > m) {
				m = rL[r];
				rr = r;
			}
		}
		maxL = m;
		refT = rt[rr];
	}
	barrier();
	uint ML = maxL, RT = refT;
	float acc[NACC], ca[NACC];
	for (uint r = 0u; r < NACC; r++) {
		acc[r] = 0.0;
		ca[r] = 0.0;
	}

	for (uint base = 0u; base < ML; base += CHUNK) {
		if (base > 0u) { // rows whose next segment starts here merge the last
			if (tid < nrows) {
				rMode[tid] = 0u;
				if (base < rL[tid] && base % rSeg[tid] == 0u) mergeRow(tid);
			}
			barrier();
			for (uint r = 0u; r < NACC; r++) {
				uint it = tid + r * WG;
				if (it >= nrows * hd) break;
				uint row = it / hd, mode = rMode[row];
				if (mode == 1u) ca[r] = acc[r];
				if (mode == 2u) ca[r] = mergeAdd(ca[r], cWa[row], acc[r], cWb[row]);
				if (mode != 0u) acc[r] = 0.0;
			}
		}
		uint span = min(CHUNK, ML - base); // the reference's entries here
		for (uint i = tid; i < CHUNK; i += WG) cref[i] = i < span ? vis[RT * pc.width + base + i] : -1;
		for (uint i = tid; i < nrows * CHUNK; i += WG) {
			uint r = i / CHUNK, c = i % CHUNK;
			rc[i] = base + c < rL[r] ? vis[rt[r] * pc.width + base + c] : -1;
		}
		barrier();
		for (uint c0 = 0u; c0 < span; c0 += R) {
			uint rn = min(R, span - c0);
			LOAD_TILE(ldk, ldk4)
			barrier();
			for (uint i = tid; i < nrows * rn; i += WG) {
				uint r = i / rn, c = c0 + i % rn;
				int cell = rc[r * CHUNK + c];
				float s = NEG;
				if (cell >= 0) {
					uint qo = rt[r] * qDim + (h0 + r % ng) * hd;
					float d = 0.0;
					if (cell == cref[c]) {
						for (uint e = 0u; e < hd; e++) {
							precise float pr = q[qo + e] * tile[(c - c0) * hd + e];
							precise float ds = d + pr;
							d = ds;
						}
					} else {
						for (uint e = 0u; e < hd; e++) {
							precise float pr = q[qo + e] * ldk(uint(cell) * kvDim + ko + e);
							precise float ds = d + pr;
							d = ds;
						}
					}
					precise float scl = d * pc.scale;
					s = scl;
				}
				sc[r * CHUNK + c] = s;
			}
			barrier();
		}
		if (tid < nrows && base < rL[tid]) {
			uint last = min(CHUNK, rL[tid] - base);
			float cm = NEG;
			for (uint c = 0u; c < last; c++) cm = max(cm, sc[tid * CHUNK + c]);
			float Mn = max(rM[tid], cm);
			precise float da = rM[tid] - Mn;
			precise float alpha = exp(da);
			rAl[tid] = alpha;
			rM[tid] = Mn;
		}
		barrier();
		for (uint i = tid; i < nrows * CHUNK; i += WG) {
			uint r = i / CHUNK, c = i % CHUNK;
			if (base < rL[r]) {
				precise float ds = sc[i] - rM[r];
				precise float pe = exp(ds);
				sc[i] = c < rL[r] - base ? pe : 0.0;
			}
		}
		barrier();
		if (tid < nrows && base < rL[tid]) {
			uint last = min(CHUNK, rL[tid] - base);
			float ps = 0.0;
			for (uint c = 0u; c < last; c++) {
				precise float x = ps + sc[tid * CHUNK + c];
				ps = x;
			}
			precise float la = rl[tid] * rAl[tid];
			precise float ln = la + ps;
			rl[tid] = ln;
		}
		for (uint r = 0u; r < NACC; r++) {
			uint it = tid + r * WG;
			if (it >= nrows * hd) break;
			uint row = it / hd;
			if (base < rL[row]) {
				precise float a = acc[r] * rAl[row];
				acc[r] = a;
			}
		}
		for (uint c0 = 0u; c0 < span; c0 += R) {
			uint rn = min(R, span - c0);
			LOAD_TILE(ldv, ldv4)
			barrier();
			for (uint r = 0u; r < NACC; r++) {
				uint it = tid + r * WG;
				if (it >= nrows * hd) break;
				uint row = it / hd, e = it % hd;
				if (base >= rL[row]) continue;
				uint last = min(CHUNK, rL[row] - base);
				float a = acc[r];
				for (uint c = c0; c < min(c0 + rn, last); c++) {
					int cell = rc[row * CHUNK + c];
					float x = cell == cref[c] ? tile[(c - c0) * hd + e] : ldv(uint(cell) * kvDim + ko + e);
					precise float pv = sc[row * CHUNK + c] * x;
					precise float y = a + pv;
					a = y;
				}
				acc[r] = a;
			}
			barrier();
		}
	}
	if (tid < nrows) {
		rMode[tid] = 0u;
		if (rL[tid] > 0u) mergeRow(tid);
	}
	barrier();
	for (uint r = 0u; r < NACC; r++) {
		uint it = tid + r * WG;
		if (it >= nrows * hd) break;
		uint row = it / hd, e = it % hd, mode = rMode[row];
		if (mode == 1u) ca[r] = acc[r];
		if (mode == 2u) ca[r] = mergeAdd(ca[r], cWa[row], acc[r], cWb[row]);
		if (t0 + row / ng < pc.n) dst[rt[row] * qDim + (h0 + row % ng) * hd + e] = cl[row] == 0.0 ? 0.0 : ca[r] / cl[row];
	}
}
