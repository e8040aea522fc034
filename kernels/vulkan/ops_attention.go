//go:build cgo

package vulkan

/*
#include "vk.h"
*/
import "C"

import (
	"errors"
	"fmt"

	"github.com/vkllm/vkllm/kernels"
	"github.com/vkllm/vkllm/tensor"
)

// Attention implements kernels.Backend. A batch of at least
// AttentionTuning.PrefillMin tokens runs the prefill kernel
// (attention_prefill.comp: tiles of queries against chunks of keys, no
// scratch; on llvmpipe only where it stays within its loop limit:
// prefillFits); a smaller one the decode kernel (attention.comp: one
// workgroup per token, KV head, group of query heads and segment of the
// list), whose segments then merge (attention_combine.comp). Each token
// gets the same bits from either (shaders/common/attention.glsl).
func (b *Backend) Attention(dst, q, k, v, vis kernels.Tensor, heads, kvHeads int, scale float32) {
	const op = "Attention"
	d, qs, ks, vs, ls := activation(op, dst), activation(op, q), cacheOf(op, k), cacheOf(op, v), ints(op, vis)
	must(heads > 0 && kvHeads > 0 && heads%kvHeads == 0 && qs.cols%heads == 0,
		"%s: q %v with %d heads and %d KV heads", op, qs, heads, kvHeads)
	n, hd, cells, width := qs.rows, qs.cols/heads, ks.rows, ls.cols
	must(ks.cols == kvHeads*hd && vs.rows == cells && vs.cols == kvHeads*hd && ls.rows == n &&
		d.rows == n && d.cols == qs.cols && ks.dt == vs.dt,
		"%s: dst %v, q %v, k %v, v %v, vis %v, %d heads, %d KV heads", op, d, qs, ks, vs, ls, heads, kvHeads)
	must(hd <= attnMaxHD, "%s: head dim %d above %d", op, hd, attnMaxHD)
	if n == 0 || hd == 0 {
		return
	}
	if cells == 0 || width == 0 {
		z := d.parts[0] // no cell: zeros
		b.order(nil, []part{z})
		if r := C.vkl_fill(b.ctx, z.blk.buf, C.uint64_t(z.off), C.uint64_t(z.size)); r != C.VK_SUCCESS {
			b.fail(&Error{Op: "vkCmdFillBuffer", Result: int32(r)})
		}
		return
	}
	t := b.attn
	g := heads / kvHeads
	gsz := min(g, t.HeadsPerGroup) // query heads per workgroup
	groups := (g + gsz - 1) / gsz
	binds := []part{qs.parts[0], ks.parts[0], vs.parts[0], ls.parts[0], d.parts[0]}
	names := b.attentionNames(ks.dt, hd%4 == 0) // _v4: 4-element loads of the cache
	rows := max(gsz, min(t.QueryRows, 32*t.PrefillWG/hd))
	if n >= t.PrefillMin && b.prefillFits(width, rows, hd) {
		tq := rows / gsz
		pc := pcPrefill{N: uint32(n), Heads: uint32(heads), KVHeads: uint32(kvHeads), HD: uint32(hd), Width: uint32(width),
			Scale: scale, Segs: uint32(t.Segments), TQ: uint32(tq)}
		gx, gy := grid((n + tq - 1) / tq * kvHeads * groups)
		spec := []uint32{uint32(t.PrefillWG), uint32(tq * gsz), uint32(t.TileFloats), uint32(gsz)}
		b.dispatchSpec(names.prefill, spec, binds, pc, gx, gy, 1)
		return
	}
	zs := attnSegs(width, t.Segments)
	// Fewer query heads per workgroup until the step has
	// AttentionTuning.Workgroups of them (a short list on a model with few
	// KV heads): K/V reuse traded for parallelism, the same bits.
	for gsz > 1 && n*kvHeads*groups*zs < t.Workgroups {
		gsz = (gsz + 1) / 2
		groups = (g + gsz - 1) / gsz
	}
	spec := []uint32{wg, uint32(gsz), uint32(t.TileFloats)}
	pc := pcAttention{N: uint32(n), Heads: uint32(heads), KVHeads: uint32(kvHeads), HD: uint32(hd), Width: uint32(width),
		Scale: scale, Segs: uint32(t.Segments)}
	if zs <= 1 { // one segment: the decode kernel writes the result
		gx, gy := grid(n * kvHeads * groups)
		b.dispatchSpec(names.single, spec, binds, pc, gx, gy, 1)
		return
	}
	// The scratch holds the segments of m tokens at a time: a batch
	// larger than that runs in chunks of m tokens, each token's result
	// the same in any chunk.
	per := heads * zs * (hd + 2) // scratch floats a token
	if err := b.growScratch(b.attnScratchFloats(n, per)); err != nil {
		b.fail(err)
		return
	}
	m := min(n, numel(b.scr)/per)
	pc.Zs = uint32(zs)
	sp := b.scr.parts[0]
	split := names.split
	for lo := 0; lo < n; lo += m {
		c := min(m, n-lo)
		pc.N, pc.Row0 = uint32(c), uint32(lo)
		gx, gy := grid(c * kvHeads * groups)
		b.dispatchSpec(split, spec, []part{qs.parts[0], ks.parts[0], vs.parts[0], ls.parts[0], sp}, pc, gx, gy, uint32(zs))
		gx, gy = grid(c * heads)
		b.dispatch("attention_combine_f32", []part{sp, d.parts[0]},
			pcCombine{N: uint32(c), Heads: uint32(heads), HD: uint32(hd), Segs: uint32(zs), Row0: uint32(lo)}, gx, gy, 1)
	}
}

// attnScratchFloats is the scratch that split attention over n tokens of
// per floats each wants: all n tokens, up to b.attnScratch bytes
// (Config.AttentionScratch), but at least one token. It grows with n and
// per, so a scratch reserved for the largest call is never too small for
// a smaller one: a larger batch runs in chunks of tokens.
func (b *Backend) attnScratchFloats(n, per int) int {
	return min(n*per, max(int(b.attnScratch/4), per))
}

// ReserveAttention implements kernels.AttentionReserver: it allocates
// the scratch of split attention (decode batches of fewer than
// AttentionTuning.PrefillMin tokens; the prefill kernel needs none) for
// up to rows tokens of heads query heads of headDim with lists of up to
// maxWidth cells, so that such Attention calls allocate no device
// memory. The scratch only grows: it serves the largest of the calls so
// far. Its bytes are bounded by Config.AttentionScratch (a larger batch
// then runs in chunks) and, per token, by AttentionTuning.Segments
// whatever the width.
func (b *Backend) ReserveAttention(rows, heads, headDim, maxWidth int) error {
	if rows < 0 || heads < 0 || headDim < 0 || maxWidth < 0 {
		return fmt.Errorf("vulkan: reserve attention: rows %d, heads %d, head dim %d, width %d", rows, heads, headDim, maxWidth)
	}
	if b.closed {
		return errors.New("vulkan: reserve attention: backend closed")
	}
	t := b.attn
	if b.prefillFits(maxWidth, max(8, min(t.QueryRows, 32*t.PrefillWG/max(headDim, 1))), headDim) {
		rows = min(rows, t.PrefillMin-1) // larger batches run the prefill kernel
	}
	zs := attnSegs(maxWidth, t.Segments)
	if rows == 0 || heads == 0 || headDim == 0 || zs <= 1 {
		return nil // no split: Attention needs no scratch
	}
	return b.growScratch(b.attnScratchFloats(rows, heads*zs*(headDim+2)))
}

// growScratch makes b.scr, split attention's F32 scratch, hold at least n
// elements, replacing a smaller one (the barriers order its reuse).
func (b *Backend) growScratch(n int) error {
	if b.scr != nil && numel(b.scr) >= n {
		return nil
	}
	if int64(n)*4 > b.maxRange {
		return fmt.Errorf("%w: attention scratch of %d bytes, one binding covers %d", ErrTooLarge, int64(n)*4, b.maxRange)
	}
	x, err := b.NewTensor(tensor.F32, n)
	if err != nil {
		return err
	}
	if b.scr != nil {
		b.Free(b.scr)
	}
	b.scr = x.(*Tensor)
	return nil
}
