package vulkan

// Push-constant blocks, field for field the `layout(push_constant)` blocks
// of the shaders (32-bit scalars only, std430 offsets = 4·index).
// TestPushSizes compares each with the SPIR-V of its variants.

type pcRows struct { // get_rows.comp
	Cols, N, RowLo, Rows, RowBytes uint32
}

type pcMatMul struct { // matmul.comp
	K, M, N, RowLo, Rows, RowBytes uint32
}

type pcBinary struct { // binary.comp (add, swiglu)
	Total, M, BN uint32
}

type pcNorm struct { // rms_norm.comp (rms_norm, add_rms_norm)
	N, D uint32
	Eps  float32
}

type pcRoPE struct { // rope.comp (rope, kv_shift)
	N, Dim, HeadDim, Neox uint32
	Rows                  uint32 // kv_shift: cache rows
}

type pcRoPEKV struct { // rope.comp (rope_kv)
	N, Dim, HeadDim, Neox uint32
	Rows                  uint32 // the caches' cells
	KDim                  uint32
}

type pcKVWrite struct { // kv_write.comp
	N, Dim, Rows uint32
}

type pcAttention struct { // attention.comp
	N, Heads, KVHeads, HD, Width uint32
	Scale                        float32
	Segs                         uint32 // the most segments a list is cut into
	Row0                         uint32 // the first token of the dispatch
	Zs                           uint32 // split: segments a token has in the scratch
}

type pcPrefill struct { // attention_prefill.comp
	N, Heads, KVHeads, HD, Width uint32
	Scale                        float32
	Segs                         uint32 // the most segments a list is cut into
	TQ                           uint32 // tokens per tile
}

type pcCombine struct { // attention_combine.comp
	N, Heads, HD, Segs uint32
	Row0               uint32 // the dst row of the scratch's first token
}

type pcQ8 struct { // quantize_q8.comp
	Blocks uint32
}

type pcProbeRead struct { // probe_read.comp
	N      uint32 // 16-byte elements of the binding
	Steps  uint32 // CHAIN: dependent loads an invocation
	Stride uint32 // CHAIN: elements between them
	Zero   uint32 // CHAIN: 0 (the dependence the compiler cannot see through)
}
