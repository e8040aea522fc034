//go:build cgo

package vulkan

/*
#include "vk.h"
*/
import "C"

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unsafe"

	"github.com/vkllm/vkllm/kernels"
	"github.com/vkllm/vkllm/kernels/vulkan/shaders"
	"github.com/vkllm/vkllm/tensor"
)

// wg is the workgroup size of every pipeline (specialization constant 0):
// a power of two, a multiple of every subgroup size we use.
const wg = 64

// dispatch records one dispatch of the named variant over gx·gy·gz
// workgroups, checking the binding count and push-constant size against
// the shader's SPIR-V.
func (b *Backend) dispatch(name string, binds []part, pc any, gx, gy, gz uint32) {
	b.dispatchSpec(name, []uint32{wg}, binds, pc, gx, gy, gz)
}

// dispatchSpec is dispatch with specialization constants (spec[0] is the
// workgroup size).
func (b *Backend) dispatchSpec(name string, spec []uint32, binds []part, pc any, gx, gy, gz uint32) {
	must(!b.closed, "%s after Close", name)
	p := b.pipeline(name, spec)
	if p == nil {
		return // b.err says why
	}
	push, err := binary.Append(nil, binary.LittleEndian, pc)
	if err != nil || len(push) != p.layout.PushSize || len(binds) != p.layout.Bindings {
		panic(fmt.Sprintf("vulkan: %s: %d bindings and %d push bytes, want %d and %d", name, len(binds), len(push), p.layout.Bindings, p.layout.PushSize))
	}
	var writes []part
	for i, q := range binds {
		if p.layout.Writable[i] {
			writes = append(writes, q)
		}
	}
	b.order(binds, writes)
	var bufs, offs, ranges [8]C.uint64_t
	for i, q := range binds {
		bufs[i], offs[i], ranges[i] = q.blk.buf, C.uint64_t(q.off), C.uint64_t(q.size)
	}
	if r := C.vkl_dispatch(b.ctx, p.p, &bufs[0], &offs[0], &ranges[0], unsafe.Pointer(&push[0]),
		C.uint32_t(gx), C.uint32_t(gy), C.uint32_t(gz)); r != C.VK_SUCCESS {
		b.fail(&Error{Op: "dispatch " + name, Result: int32(r)})
	}
}

// grid spreads n workgroups over x and y (each at most 65535).
func grid(n int) (gx, gy uint32) {
	const lim = 65535
	if n <= lim {
		return uint32(n), 1
	}
	return lim, uint32((n + lim - 1) / lim)
}

// reduceVariant picks the subgroup variant of a reducing shader when the
// device has subgroup arithmetic.
func (b *Backend) reduceVariant(name string) string {
	if b.info.Subgroups {
		return name + "_subgroup"
	}
	return name
}

func must(cond bool, format string, args ...any) {
	if !cond {
		panic(fmt.Sprintf("vulkan: "+format, args...))
	}
}

func tensorOf(op string, x kernels.Tensor) *Tensor {
	t, err := live(x)
	if err != nil {
		panic(fmt.Sprintf("vulkan: %s: %v", op, err))
	}
	return t
}

func activation(op string, x kernels.Tensor) *Tensor {
	t := tensorOf(op, x)
	must(t.dt == tensor.F32 && !t.weight, "%s: want an F32 activation, got %v", op, t)
	return t
}

func ints(op string, x kernels.Tensor) *Tensor {
	t := tensorOf(op, x)
	must(t.dt == tensor.I32, "%s: want an I32 tensor, got %v", op, t)
	return t
}

func cacheOf(op string, x kernels.Tensor) *Tensor {
	t := tensorOf(op, x)
	must((t.dt == tensor.F32 || t.dt == tensor.F16) && !t.weight, "%s: want an F32 or F16 cache, got %v", op, t)
	return t
}

func numel(t *Tensor) int { return t.rows * t.cols }

// typeName is a weight dtype's shader suffix.
func typeName(dt tensor.DType) string { return strings.ToLower(dt.String()) }

// GetRows implements kernels.Backend, one dispatch per part of the table.
func (b *Backend) GetRows(dst, table, ids kernels.Tensor) {
	const op = "GetRows"
	d, tb, id := activation(op, dst), tensorOf(op, table), ints(op, ids)
	n, cols := numel(id), tb.cols
	must(tb.weight || tb.dt == tensor.F32 || tb.dt == tensor.F16, "%s: table %v has no float rows", op, tb)
	must(d.rows == n && d.cols == cols, "%s: dst %v, table %v, %d ids", op, d, tb, n)
	if n == 0 || cols == 0 {
		return
	}
	name := "get_rows_" + typeName(tb.dt) + "_f32"
	gy, gz := grid(n)
	for _, p := range tb.parts {
		pc := pcRows{Cols: uint32(cols), N: uint32(n), RowLo: uint32(p.rowLo), Rows: uint32(p.rows), RowBytes: uint32(tb.rowBytes)}
		b.dispatch(name, []part{p, id.parts[0], d.parts[0]}, pc, uint32((cols+wg-1)/wg), gy, gz)
	}
}

// The tiled kernel (matmul_mm.comp): mmRows weight rows × mmToks tokens
// per workgroup of mmWG invocations using mmShared bytes of shared memory,
// for calls of at least mmMinTokens tokens and rows of at least mmMinK
// elements (one step of its 64 lanes; below that the tile is mostly its
// fixed costs: on lavapipe, qwen2-tiny's prefill (k 64 and 128) took
// 1.8 times as long on it). Its dots are bitwise the matrix-vector
// kernel's.
const (
	mmRows      = 16
	mmToks      = 16
	mmWG        = 4 * wg
	mmShared    = mmRows*wg*4*4 + mmWG*4 // its tile, and base.glsl's red
	mmMinTokens = mmToks
	mmMinK      = 4 * wg
)

// matmulVariant names the MatMul kernel for a weight of dtype dt, n
// tokens and rows of k: tiled from mmMinTokens tokens and mmMinK
// elements where the dtype has a tiled kernel, _fp16 where the device computes in half precision and the
// dtype has such a variant, _subgroup where it has subgroup arithmetic.
func (b *Backend) matmulVariant(dt tensor.DType, n, k int) (name string, tiled bool) {
	t := dt.String()
	tiled = n >= mmMinTokens && k >= mmMinK && b.info.Tiled && slices.Contains(shaders.TiledTypes, t)
	name = "matmul_" + typeName(dt) + "_f32"
	if tiled {
		name = "matmul_mm_" + typeName(dt) + "_f32"
	}
	if b.info.FP16 && slices.Contains(shaders.FP16Types, t) {
		name += "_fp16"
	}
	return b.reduceVariant(name), tiled
}

// MatMul implements kernels.Backend, one dispatch per part of the weight:
// the cooperative-matrix kernel for every call where it is on (coop.go),
// else the tiled kernel for a prefill of at least mmMinTokens tokens, else
// the matrix-vector kernel with the device's tuning of "matvec" (one
// token) or "matvec_batch" (more) for the weight type.
func (b *Backend) MatMul(dst, x, w kernels.Tensor) {
	const op = "MatMul"
	d, xs, wt := activation(op, dst), activation(op, x), tensorOf(op, w)
	n, k, m := xs.rows, xs.cols, wt.rows
	must(wt.weight || wt.dt == tensor.F32 || wt.dt == tensor.F16, "%s: weight %v has no float rows", op, wt)
	must(wt.cols == k && d.rows == n && d.cols == m, "%s: dst %v, x %v, w %v: want dst (n, m), x (n, k), w (m, k)", op, d, xs, wt)
	must(n <= 65535, "%s: %d tokens in one call (at most 65535)", op, n)
	if n == 0 || m == 0 {
		return
	}
	if name, ok := b.coopVariant(wt.dt); ok {
		b.coopMatMul(name, d, xs, wt, n, k, m)
		return
	}
	name, tiled := b.matmulVariant(wt.dt, n, k)
	if tiled {
		b.matmulDispatch(name, []uint32{mmWG}, mmRows, mmToks, d, xs, wt)
		return
	}
	key := "matvec/" + typeName(wt.dt)
	if n > 1 {
		key = "matvec_batch/" + typeName(wt.dt)
	}
	b.matvec(name, b.tune.knobs(key), d, xs, wt)
}

// matvec records the matrix-vector kernel with knobs k (Families'
// "matvec"): (wg/64)·rows weight rows × toks tokens a workgroup.
func (b *Backend) matvec(name string, k Knobs, d, xs, wt *Tensor) {
	b.matmulDispatch(name, Families["matvec"].spec(k), k["wg"]/wg*k["rows"], k["toks"], d, xs, wt)
}

// matmulDispatch records one dispatch per part of the weight, each
// workgroup taking rows weight rows and toks tokens.
func (b *Backend) matmulDispatch(name string, spec []uint32, rows, toks int, d, xs, wt *Tensor) {
	n, k, m := xs.rows, xs.cols, wt.rows
	for _, p := range wt.parts {
		pc := pcMatMul{K: uint32(k), M: uint32(m), N: uint32(n), RowLo: uint32(p.rowLo), Rows: uint32(p.rows), RowBytes: uint32(wt.rowBytes)}
		gx, gy := grid((p.rows + rows - 1) / rows)
		b.dispatchSpec(name, spec, []part{p, xs.parts[0], d.parts[0]}, pc, gx, gy, uint32((n+toks-1)/toks))
	}
}

// binary records dst = a OP b (b of a's shape or one row).
func (b *Backend) binary(name, op string, dst, a, c kernels.Tensor) {
	d, x, y := activation(op, dst), activation(op, a), activation(op, c)
	must(d.rows == x.rows && d.cols == x.cols, "%s: dst %v, a %v", op, d, x)
	must(y.cols == x.cols && (y.rows == x.rows || y.rows == 1), "%s: b %v is neither a's shape %v nor one of its rows", op, y, x)
	total := numel(x)
	if total == 0 {
		return
	}
	gx, gy := grid((total + wg - 1) / wg)
	b.dispatch(name, []part{x.parts[0], y.parts[0], d.parts[0]}, pcBinary{Total: uint32(total), M: uint32(x.cols), BN: uint32(numel(y))}, gx, gy, 1)
}

// Add implements kernels.Backend.
func (b *Backend) Add(dst, a, c kernels.Tensor) { b.binary("add_f32", "Add", dst, a, c) }

// SwiGLU implements kernels.Backend.
func (b *Backend) SwiGLU(dst, gate, up kernels.Tensor) {
	const op = "SwiGLU"
	d, g, u := activation(op, dst), activation(op, gate), activation(op, up)
	must(d.rows == g.rows && d.cols == g.cols && u.rows == g.rows && u.cols == g.cols, "%s: dst %v, gate %v, up %v", op, d, g, u)
	b.binary("swiglu_f32", op, dst, gate, up)
}

// RMSNorm implements kernels.Backend: one workgroup per row.
func (b *Backend) RMSNorm(dst, x, w kernels.Tensor, eps float32) {
	const op = "RMSNorm"
	d, xs, ws := activation(op, dst), activation(op, x), activation(op, w)
	n, dim := xs.rows, xs.cols
	must(ws.rows == 1 && ws.cols == dim && d.rows == n && d.cols == dim, "%s: dst %v, x %v, w %v: want (n, d), (n, d), (d)", op, d, xs, ws)
	if n == 0 || dim == 0 {
		return
	}
	gx, gy := grid(n)
	b.dispatch(b.reduceVariant("rms_norm_f32"), []part{xs.parts[0], ws.parts[0], d.parts[0]}, pcNorm{N: uint32(n), D: uint32(dim), Eps: eps}, gx, gy, 1)
}

// freqTable returns the device copy of p.InvFreq(), made once per
// distinct p: the same float32 frequencies as the CPU backend.
func (b *Backend) freqTable(p kernels.RoPE) *Tensor {
	key := fmt.Sprint(p.HeadDim, p.Theta, p.Scaling, p.Factor, p.LowFreqFactor, p.HighFreqFactor, p.OriginalMaxPositions, p.FreqFactors)
	if t, ok := b.freqs[key]; ok {
		return t
	}
	inv := p.InvFreq()
	x, err := b.NewTensor(tensor.F32, len(inv))
	if err != nil {
		b.fail(err)
		return nil
	}
	t := x.(*Tensor)
	if err := b.SetF32(t, inv); err != nil {
		b.fail(err)
		return nil
	}
	b.freqs[key] = t
	return t
}

func checkRoPE(op string, p kernels.RoPE) {
	if err := p.Check(); err != nil {
		panic("vulkan: " + op + ": " + err.Error())
	}
}

func neox(p kernels.RoPE) uint32 {
	if p.Style == kernels.RoPENeox {
		return 1
	}
	return 0
}

// RoPE implements kernels.Backend: one invocation per rotated pair.
func (b *Backend) RoPE(x, pos kernels.Tensor, p kernels.RoPE) {
	const op = "RoPE"
	t, ps := activation(op, x), ints(op, pos)
	checkRoPE(op, p)
	n, dim := t.rows, t.cols
	must(dim%p.HeadDim == 0 && numel(ps) == n, "%s: x %v, %d positions, head dim %d", op, t, numel(ps), p.HeadDim)
	if n == 0 || dim == 0 {
		return
	}
	f := b.freqTable(p)
	if f == nil {
		return
	}
	gx, gy := grid((n*dim/2 + wg - 1) / wg)
	b.dispatch("rope_f32", []part{t.parts[0], ps.parts[0], f.parts[0]},
		pcRoPE{N: uint32(n), Dim: uint32(dim), HeadDim: uint32(p.HeadDim), Neox: neox(p), Rows: uint32(n)}, gx, gy, 1)
}

// KVShift implements kernels.Backend with rope.comp over the listed rows.
// The cells must be distinct (as the models' shifts are); cells outside
// the cache are skipped (the CPU backend panics: the ids are on the device).
func (b *Backend) KVShift(k, cells, delta kernels.Tensor, p kernels.RoPE) {
	const op = "KVShift"
	c, cl, dl := cacheOf(op, k), ints(op, cells), ints(op, delta)
	checkRoPE(op, p)
	dim := c.cols
	must(numel(cl) == numel(dl), "%s: %d cells, %d deltas", op, numel(cl), numel(dl))
	must(dim%p.HeadDim == 0, "%s: cache %v, head dim %d", op, c, p.HeadDim)
	n := numel(cl)
	if n == 0 || dim == 0 {
		return
	}
	f := b.freqTable(p)
	if f == nil {
		return
	}
	gx, gy := grid((n*dim/2 + wg - 1) / wg)
	b.dispatch("kv_shift_"+typeName(c.dt), []part{c.parts[0], dl.parts[0], f.parts[0], cl.parts[0]},
		pcRoPE{N: uint32(n), Dim: uint32(dim), HeadDim: uint32(p.HeadDim), Neox: neox(p), Rows: uint32(c.rows)}, gx, gy, 1)
}

// KVWrite implements kernels.Backend: one invocation per element. A cell
// outside the cache is skipped rather than written out of bounds.
func (b *Backend) KVWrite(k, src, cells kernels.Tensor) {
	const op = "KVWrite"
	c, s, cl := cacheOf(op, k), activation(op, src), ints(op, cells)
	dim := s.cols
	must(c.cols == dim && numel(cl) == s.rows, "%s: cache %v, src %v, %d cells", op, c, s, numel(cl))
	if s.rows == 0 || dim == 0 {
		return
	}
	gx, gy := grid((numel(s) + wg - 1) / wg)
	b.dispatch("kv_write_"+typeName(c.dt), []part{c.parts[0], s.parts[0], cl.parts[0]},
		pcKVWrite{N: uint32(s.rows), Dim: uint32(dim), Rows: uint32(c.rows)}, gx, gy, 1)
}

// Attention implements kernels.Backend: one workgroup per (token, head)
// with an online softmax over chunks of the token's list of cells.
func (b *Backend) Attention(dst, q, k, v, vis kernels.Tensor, heads, kvHeads int, scale float32) {
	const op = "Attention"
	d, qs, ks, vs, ls := activation(op, dst), activation(op, q), cacheOf(op, k), cacheOf(op, v), ints(op, vis)
	must(heads > 0 && kvHeads > 0 && heads%kvHeads == 0 && qs.cols%heads == 0,
		"%s: q %v with %d heads and %d KV heads", op, qs, heads, kvHeads)
	n, hd, cells, width := qs.rows, qs.cols/heads, ks.rows, ls.cols
	must(ks.cols == kvHeads*hd && vs.rows == cells && vs.cols == kvHeads*hd && ls.rows == n &&
		d.rows == n && d.cols == qs.cols && ks.dt == vs.dt,
		"%s: dst %v, q %v, k %v, v %v, vis %v, %d heads, %d KV heads", op, d, qs, ks, vs, ls, heads, kvHeads)
	must(hd <= 4*wg, "%s: head dim %d above %d", op, hd, 4*wg)
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
	pc := pcAttention{N: uint32(n), Heads: uint32(heads), KVHeads: uint32(kvHeads), HD: uint32(hd), Width: uint32(width), Scale: scale, Seg: uint32(width)}
	seg := b.attnSegment
	if width <= seg {
		gx, gy := grid(n * heads)
		b.dispatch(b.reduceVariant("attention_"+typeName(ks.dt)), []part{qs.parts[0], ks.parts[0], vs.parts[0], ls.parts[0], d.parts[0]}, pc, gx, gy, 1)
		return
	}
	// Flash decoding: segments of seg list entries in parallel, then a
	// merge. The split depends on the lists' width only, never on n, and
	// a list that fits one segment merges to the unsplit result exactly.
	// The scratch holds the segments of m tokens at a time: a batch
	// larger than that runs in chunks of m tokens, each token's result
	// the same in any chunk.
	segs := (width + seg - 1) / seg
	per := heads * segs * (hd + 2) // scratch floats a token
	if err := b.growScratch(b.attnScratchFloats(n, per)); err != nil {
		b.fail(err)
		return
	}
	m := min(n, numel(b.scr)/per)
	pc.Seg = uint32(seg)
	sp := b.scr.parts[0]
	split := b.reduceVariant("attention_split_" + typeName(ks.dt))
	for lo := 0; lo < n; lo += m {
		c := min(m, n-lo)
		gx, gy := grid(c * heads)
		pc.N, pc.Row0 = uint32(c), uint32(lo)
		b.dispatch(split, []part{qs.parts[0], ks.parts[0], vs.parts[0], ls.parts[0], sp}, pc, gx, gy, uint32(segs))
		b.dispatch("attention_combine_f32", []part{sp, d.parts[0]},
			pcCombine{N: uint32(c), Heads: uint32(heads), HD: uint32(hd), Segs: uint32(segs), Row0: uint32(lo)}, gx, gy, 1)
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
// the scratch of split attention for up to rows tokens of heads query
// heads of headDim with lists of up to maxWidth cells, so that such
// Attention calls allocate no device memory. The scratch only grows: it
// serves the largest of the calls so far. Its bytes are bounded
// (Config.AttentionScratch): a larger batch then runs in chunks.
func (b *Backend) ReserveAttention(rows, heads, headDim, maxWidth int) error {
	if rows < 0 || heads < 0 || headDim < 0 || maxWidth < 0 {
		return fmt.Errorf("vulkan: reserve attention: rows %d, heads %d, head dim %d, width %d", rows, heads, headDim, maxWidth)
	}
	if b.closed {
		return errors.New("vulkan: reserve attention: backend closed")
	}
	if rows == 0 || heads == 0 || headDim == 0 || maxWidth <= b.attnSegment {
		return nil // no split: Attention needs no scratch
	}
	segs := (maxWidth + b.attnSegment - 1) / b.attnSegment
	return b.growScratch(b.attnScratchFloats(rows, heads*segs*(headDim+2)))
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
