//go:build cgo

package vulkan

import "strings"

// AttentionTuning holds the attention kernels' knobs. A zero field takes
// the device's tuning (the "attention" and "attention_prefill" keys of
// its tuning file, Config.Tuning or VKLLM_VULKAN_TUNING; see Families),
// else its default: a non-zero field wins over the tuning. Only Segments changes results (it moves the cut of a list
// into segments, identically in decode and prefill, so batch, chunk and
// placement invariance hold for any value); the others change only
// which invocations do the same arithmetic, and how fast. Sweep tries
// the decode fields' candidates (Families "attention") on decode calls
// and the prefill fields' ("attention_prefill") on prompts
// (SweepAttention.Causal).
type AttentionTuning struct {
	// Segments is the most segments a list of cells is cut into: whole
	// chunks of 64 entries, the fewest per segment that give at most
	// Segments (default 32; candidates 8, 16, 32, 64, 128). A decode step
	// runs one workgroup per segment, then merges them.
	Segments int
	// HeadsPerGroup is the most query heads of one KV head a workgroup
	// serves with each K/V load (default 8, at most 8; candidates 1, 2,
	// 4, 8: fewer make more workgroups on models with few KV heads).
	HeadsPerGroup int
	// Workgroups is the decode kernel's target: where a step has fewer
	// workgroups, it gives each fewer query heads (halving from
	// HeadsPerGroup down to 1) until it has as many (default 128, about a
	// large GPU's SMs; candidates 1 (off), 64, 128, 256, 512).
	Workgroups int
	// QueryRows is the prefill kernel's tile: query rows (tokens × heads
	// of a group) that share each K/V load (default 16; candidates 8,
	// 16, 32), capped so that rows × head dim ≤ 32 × PrefillWG.
	QueryRows int
	// PrefillWG is the prefill kernel's workgroup size (default 128;
	// candidates 64, 128, 256).
	PrefillWG int
	// PrefillMin is the batch size from which Attention runs the prefill
	// kernel instead of decode's split one (default 32, so that batched
	// decode of up to 31 sequences, whose lists share no cells, keeps the
	// split's parallelism; candidates 8, 16, 32, 64). Both give every
	// token the same bits.
	PrefillMin int
	// TileFloats is the K/V tile in shared memory, in floats (default
	// 4096, less where the device's shared memory is smaller; candidates
	// 2048, 4096, 8192). It must hold a row: Attention wants head dims of
	// at most 256.
	TileFloats int
}

// attnChunk is the chunk of a list the kernels step by (CHUNK in
// shaders/common/attention.glsl); attnMaxHD the largest head dim.
const (
	attnChunk = 64
	attnMaxHD = 256
)

// withTuning fills t's zero fields from tune's "attention" and
// "attention_prefill" knobs (their defaults where tune has none).
func (t AttentionTuning) withTuning(tune Tuning) AttentionTuning {
	d, p := tune.knobs("attention"), tune.knobs("attention_prefill")
	set := func(x *int, v int) {
		if *x <= 0 {
			*x = v
		}
	}
	set(&t.Segments, d["segs"])
	set(&t.HeadsPerGroup, d["heads"])
	set(&t.Workgroups, d["wgs"])
	set(&t.TileFloats, d["tile"])
	set(&t.QueryRows, p["rows"])
	set(&t.PrefillWG, p["wg"])
	set(&t.PrefillMin, p["min"])
	return t
}

// resolve fills the defaults and fits the tile to maxShared bytes of
// shared memory per workgroup.
func (t AttentionTuning) resolve(maxShared int) AttentionTuning {
	def := func(x *int, d, lo, hi int) {
		if *x <= 0 {
			*x = d
		}
		*x = min(max(*x, lo), hi)
	}
	def(&t.Segments, 32, 1, 1<<16)
	def(&t.HeadsPerGroup, 8, 1, 8)
	def(&t.PrefillWG, 128, 64, 1024)
	def(&t.Workgroups, 128, 1, 1<<20)
	def(&t.QueryRows, 16, 1, 256)
	def(&t.PrefillMin, 32, 1, 1<<30)
	def(&t.TileFloats, 4096, attnMaxHD, 1<<16)
	for t.TileFloats > attnMaxHD && max(t.decodeShared(), t.prefillShared(t.QueryRows)) > maxShared {
		t.TileFloats /= 2
	}
	return t
}

// decodeShared and prefillShared are the shared-memory bytes of
// attention.comp and attention_prefill.comp (their shared arrays and
// base.glsl's red).
func (t AttentionTuning) decodeShared() int {
	return 4 * (8*attnMaxHD + t.TileFloats + 8*attnChunk + attnChunk + 8 + wg)
}

func (t AttentionTuning) prefillShared(rows int) int {
	return 4 * (t.TileFloats + 2*rows*attnChunk + attnChunk + 11*rows + 2 + t.PrefillWG)
}

// attnSegs is the most segments a list of at most width cells is cut
// into (the grid's z of a split decode).
func attnSegs(width, segs int) int {
	return min(segs, (width+attnChunk-1)/attnChunk)
}

// llvmpipeLoops is the loop iterations llvmpipe (lavapipe) runs in one
// shader invocation, all loops together, before it silently leaves them
// (gallivm's LP_MAX_TGSI_LOOP_ITERATIONS, 65535), with a margin.
const llvmpipeLoops = 60000

// prefillFits reports whether the prefill kernel may walk lists of width
// entries with rows query rows of hd per workgroup on this device. On
// llvmpipe one workgroup walks a row's whole list, and past the loop
// limit it would leave its loops and write garbage (a 13000-cell list
// with 16 rows of 8 did): there the decode kernel, whose workgroups walk
// one segment each, takes such batches. The count is an upper bound of
// the back-edges one invocation takes per chunk.
func (b *Backend) prefillFits(width, rows, hd int) bool {
	if !strings.Contains(b.info.Name, "llvmpipe") {
		return true
	}
	wgp := b.attn.PrefillWG
	per := func(n int) int { return (n+wgp-1)/wgp + 1 } // a loop over n items
	items := per(rows * hd)
	chunk := 1 + items + per(attnChunk) + per(rows*attnChunk) + // merges, lists
		per(attnChunk*hd) + per(rows*attnChunk)*(hd+1) + // K tile, scores
		2*attnChunk + per(rows*attnChunk) + items + // softmax
		per(attnChunk*hd) + items*(attnChunk+1) // V tile, sums
	return (width+attnChunk-1)/attnChunk*chunk <= llvmpipeLoops
}
