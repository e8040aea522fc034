#version 450
// Attention in the flash style: one workgroup per (token, query head)
// walks token t's list of cells, vis[t] (its cells by position, then -1),
// in chunks of WG entries with an online softmax (running max M, running
// sum l, output accumulator rescaled by exp(M_old − M_new)), so no score
// matrix is stored. Chunks go by rank in the list, never by cell index,
// so the result does not depend on where the cells sit. A token that sees
// no cell gets zeros. Query head h reads KV head h / (heads / kvHeads).
// Head dimensions up to 4·WG.
//
// With SPLIT (flash decoding, for long lists) workgroup z takes only the
// entries [z·seg, (z+1)·seg) of the list and writes its unnormalised state
// (M, l, acc) to dst as scratch, (n·heads, segments, 2+hd);
// attention_combine.comp then merges the segments in order. A list that
// fits one segment merges to the unsplit result bit for bit (the other
// segments are empty: weight exp(−Inf) = 0).
//
// The dispatch covers the pc.n tokens from row0 of q, vis and (unsplit)
// dst, so a batch may run in chunks of tokens: the scratch of SPLIT is
// indexed from the chunk's first token. A token's result does not depend
// on the chunk it runs in.
#include "common/base.glsl"

layout(binding = 0) readonly buffer QB { float q[]; };
#ifdef CACHE_F16
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
layout(binding = 3) readonly buffer VB3 { int vis[]; };
layout(binding = 4) writeonly buffer DB { float dst[]; };

layout(push_constant) uniform PC {
	uint n, heads, kvHeads, hd, width; // width: entries per row of vis
	float scale;
	uint seg; // entries per segment (SPLIT); else width
	uint row0; // the first token of the dispatch
} pc;

shared float p[WG];
shared int cid[WG]; // the chunk's cells

void main() {
	uint th = groupIndex();
	if (th >= pc.n * pc.heads) return;
	uint t = pc.row0 + th / pc.heads, h = th % pc.heads; // t: row of q, vis, dst
	uint tid = gl_LocalInvocationID.x;
	uint qDim = pc.heads * pc.hd, kvDim = pc.kvHeads * pc.hd;
	uint qo = t * qDim + h * pc.hd;
	uint ko = (h / (pc.heads / pc.kvHeads)) * pc.hd;
	const float NEG = uintBitsToFloat(0xFF800000u);

	float acc[4] = float[4](0, 0, 0, 0);
	float M = NEG, l = 0;
	uint lo = gl_WorkGroupID.z * pc.seg, hi = min(pc.width, lo + pc.seg);
	for (uint base = lo; base < hi; base += WG) {
		uint r = base + tid;
		int j = r < hi ? vis[t * pc.width + r] : -1;
		float s = NEG;
		if (j >= 0) {
			float d = 0;
			for (uint e = 0; e < pc.hd; e++) {
				precise float pr = q[qo + e] * ldk(uint(j) * kvDim + ko + e);
				d += pr;
			}
			s = d * pc.scale;
		}
		float cm = maxWG(s);
		if (cm == NEG) break; // the list has ended (uniform)
		cid[tid] = j;
		float Mn = max(M, cm);
		float alpha = exp(M - Mn); // 0 while M is −Inf
		float pj = s == NEG ? 0.0 : exp(s - Mn);
		p[tid] = pj;
		barrier();
		// The invocations with an output element sum the chunk's weights
		// in list order while they accumulate (skipping an ended list's
		// exact 0), so the sum depends only on the listed cells and their
		// order, not on where they sit. Others never use l.
		uint last = min(WG, hi - base);
		float ps = 0;
		for (uint r = 0; r < 4; r++) {
			uint e = tid + r * WG;
			if (e >= pc.hd) break;
			float a = acc[r] * alpha;
			for (uint c = 0; c < last; c++) {
				float w = p[c];
				if (w != 0.0) {
					precise float pv = w * ldv(uint(cid[c]) * kvDim + ko + e);
					a += pv;
					if (r == 0) ps += w;
				}
			}
			acc[r] = a;
		}
		l = l * alpha + ps;
		M = Mn;
		barrier(); // p is rewritten by the next chunk
	}
#ifdef SPLIT
	uint so = (th * gl_NumWorkGroups.z + gl_WorkGroupID.z) * (pc.hd + 2u);
	if (tid == 0u) {
		dst[so] = M;
		dst[so + 1u] = l;
	}
	for (uint r = 0; r < 4; r++) {
		uint e = tid + r * WG;
		if (e >= pc.hd) break;
		dst[so + 2u + e] = acc[r];
	}
#else
	for (uint r = 0; r < 4; r++) {
		uint e = tid + r * WG;
		if (e >= pc.hd) break;
		dst[qo + e] = l == 0.0 ? 0.0 : acc[r] / l;
	}
#endif
}
