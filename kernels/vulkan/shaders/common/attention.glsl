// The per-query arithmetic that attention.comp (decode) and
// attention_prefill.comp (prefill) share, so that a query's result is
// bitwise the same from either kernel, in any batch and any chunking.
//
// A query's list of L cells (its row of vis: cells, then -1) is cut into
// chunks of CHUNK entries by rank, and the chunks into segments of
// segChunks(L) chunks each: at most pc.segs segments, the cut depending
// on L alone. Within a segment, chunk by chunk, an online softmax: the
// scores s_c = (Σ_e q_e·k_ce, e ascending)·scale, the chunk's max cm,
// Mn = max(M, cm), alpha = exp(M − Mn), p_c = exp(s_c − Mn), l = l·alpha
// + Σ_c p_c (c ascending), acc_e = acc_e·alpha + Σ_c p_c·v_ce (c
// ascending). The segments' (M, l, acc) then merge in segment order
// (merge below). Every operation is precise (no contraction into fused
// multiply-adds, which a compiler could do in one kernel and not the
// other).

// CHUNK entries of a list per step: the decode kernel's workgroup (one
// invocation per cell) and the prefill kernel's key tile. It fixes the
// arithmetic, so it is a constant, not a tuning knob.
#define CHUNK 64u

// listLen returns the count of cells in row t of vis (width entries:
// cells, then -1 to the end) by bisection.
uint listLen(uint t) {
	uint lo = 0u, hi = pc.width;
	while (lo < hi) {
		uint mid = (lo + hi) / 2u;
		if (vis[t * pc.width + mid] >= 0) lo = mid + 1u;
		else hi = mid;
	}
	return lo;
}

// segCells is the segment of a list of L cells, in entries: the fewest
// whole chunks that cut the list into at most pc.segs segments.
uint segCells(uint L) {
	uint chunks = (L + CHUNK - 1u) / CHUNK;
	return max(1u, (chunks + pc.segs - 1u) / pc.segs) * CHUNK;
}

#include "merge.glsl"
