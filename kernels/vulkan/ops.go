//go:build cgo

package vulkan

import (
	"fmt"
	"slices"

	"github.com/vkllm/vkllm/kernels"
	"github.com/vkllm/vkllm/tensor"
)

// binary records dst = a OP b (b of a's shape or one row).
func (b *Backend) binary(name, op string, dst, a, c kernels.Tensor) {
	d, x, y := activation(op, dst), activation(op, a), activation(op, c)
	if d.rows != x.rows || d.cols != x.cols {
		panic(bad("%s: dst %v, a %v", op, d, x))
	}
	if y.cols != x.cols || y.rows != x.rows && y.rows != 1 {
		panic(bad("%s: b %v is neither a's shape %v nor one of its rows", op, y, x))
	}
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
	if d.rows != g.rows || d.cols != g.cols || u.rows != g.rows || u.cols != g.cols {
		panic(bad("%s: dst %v, gate %v, up %v", op, d, g, u))
	}
	b.binary("swiglu_f32", op, dst, gate, up)
}

// RMSNorm implements kernels.Backend: one workgroup per row, vec4 loads
// where the row length is a multiple of 4.
func (b *Backend) RMSNorm(dst, x, w kernels.Tensor, eps float32) {
	const op = "RMSNorm"
	d, xs, ws := activation(op, dst), activation(op, x), activation(op, w)
	n, dim := xs.rows, xs.cols
	if ws.rows != 1 || ws.cols != dim || d.rows != n || d.cols != dim {
		panic(bad("%s: dst %v, x %v, w %v: want (n, d), (n, d), (d)", op, d, xs, ws))
	}
	if n == 0 || dim == 0 {
		return
	}
	name := "rms_norm_f32"
	if dim%4 == 0 {
		name = "rms_norm_f32_vec4"
	}
	gx, gy := grid(n)
	b.dispatchSpec(b.reduceVariant(name), []uint32{b.normWG(dim)}, []part{xs.parts[0], ws.parts[0], d.parts[0]},
		pcNorm{N: uint32(n), D: uint32(dim), Eps: eps}, gx, gy, 1)
}

// AddRMSNorm implements kernels.AddRMSNormer: RMSNorm's kernel with the
// residual add in its first pass, bitwise Add then RMSNorm.
func (b *Backend) AddRMSNorm(sum, dst, a, c, w kernels.Tensor, eps float32) {
	const op = "AddRMSNorm"
	s, d, xs, ys, ws := activation(op, sum), activation(op, dst), activation(op, a), activation(op, c), activation(op, w)
	n, dim := xs.rows, xs.cols
	if ys.rows != n || ys.cols != dim || s.rows != n || s.cols != dim || ws.rows != 1 || ws.cols != dim || d.rows != n || d.cols != dim {
		panic(bad("%s: sum %v, dst %v, a %v, b %v, w %v: want (n, d) but w (d)", op, s, d, xs, ys, ws))
	}
	if n == 0 || dim == 0 {
		return
	}
	name := "add_rms_norm_f32"
	if dim%4 == 0 {
		name = "add_rms_norm_f32_vec4"
	}
	gx, gy := grid(n)
	b.dispatchSpec(b.reduceVariant(name), []uint32{b.normWG(dim)}, []part{xs.parts[0], ys.parts[0], ws.parts[0], s.parts[0], d.parts[0]},
		pcNorm{N: uint32(n), D: uint32(dim), Eps: eps}, gx, gy, 1)
}

// normWG is the workgroup size of RMSNorm over rows of dim elements: 64
// invocations, 256 from 2048 elements where the device allows it (a
// decode step's one row then has more loads in flight). Its summation
// order depends on dim and the device alone.
func (b *Backend) normWG(dim int) uint32 {
	if dim >= 2048 && b.props.max_wg_size >= 4*wg {
		return 4 * wg
	}
	return wg
}

// freqTable returns the device copy of p.InvFreq(), made once per
// distinct p: the same float32 frequencies as the CPU backend.
func (b *Backend) freqTable(p kernels.RoPE) *Tensor {
	if f := b.lastFreqs; f != nil && sameRoPE(b.lastRoPE, p) { // every layer's, without a key's allocation
		return f
	}
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
	b.lastRoPE, b.lastFreqs = p, t
	return t
}

// sameRoPE reports whether p and q have the same frequencies (all but
// Style, which freqTable does not use).
func sameRoPE(p, q kernels.RoPE) bool {
	return p.HeadDim == q.HeadDim && p.Theta == q.Theta && p.Scaling == q.Scaling && p.Factor == q.Factor &&
		p.LowFreqFactor == q.LowFreqFactor && p.HighFreqFactor == q.HighFreqFactor &&
		p.OriginalMaxPositions == q.OriginalMaxPositions && slices.Equal(p.FreqFactors, q.FreqFactors)
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
	if dim%p.HeadDim != 0 || numel(ps) != n {
		panic(bad("%s: x %v, %d positions, head dim %d", op, t, numel(ps), p.HeadDim))
	}
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

// RoPEKVWrite implements kernels.RoPEKVWriter: one dispatch of
// rope.comp's ROPE_KV variant, one invocation per pair of q, of k and of
// v. Caches of two dtypes take the four ops.
func (b *Backend) RoPEKVWrite(q, k, v, pos, kCache, vCache, cells kernels.Tensor, p kernels.RoPE) {
	const op = "RoPEKVWrite"
	qs, ks, vs, ps := activation(op, q), activation(op, k), activation(op, v), ints(op, pos)
	kc, vc, cl := cacheOf(op, kCache), cacheOf(op, vCache), ints(op, cells)
	if kc.dt != vc.dt {
		kernels.RoPEKVWrite(struct{ kernels.Backend }{b}, q, k, v, pos, kCache, vCache, cells, p)
		return
	}
	checkRoPE(op, p)
	n, dim, kdim := qs.rows, qs.cols, ks.cols
	if dim%p.HeadDim != 0 || kdim%p.HeadDim != 0 || ks.rows != n || vs.rows != n || vs.cols != kdim ||
		numel(ps) != n || numel(cl) != n || kc.cols != kdim || vc.cols != kdim || vc.rows != kc.rows {
		panic(bad("%s: q %v, k %v, v %v, %d positions, caches %v and %v, %d cells, head dim %d", op, qs, ks, vs, numel(ps), kc, vc, numel(cl), p.HeadDim))
	}
	if n == 0 || dim+kdim == 0 {
		return
	}
	f := b.freqTable(p)
	if f == nil {
		return
	}
	gx, gy := grid((n*(dim/2+kdim) + wg - 1) / wg)
	b.dispatch(cacheName(kc, "rope_kv_f16", "rope_kv_f32"),
		[]part{qs.parts[0], ps.parts[0], f.parts[0], ks.parts[0], vs.parts[0], kc.parts[0], vc.parts[0], cl.parts[0]},
		pcRoPEKV{N: uint32(n), Dim: uint32(dim), HeadDim: uint32(p.HeadDim), Neox: neox(p), Rows: uint32(kc.rows), KDim: uint32(kdim)}, gx, gy, 1)
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
	if c.cols != dim || numel(cl) != s.rows {
		panic(bad("%s: cache %v, src %v, %d cells", op, c, s, numel(cl)))
	}
	if s.rows == 0 || dim == 0 {
		return
	}
	gx, gy := grid((numel(s) + wg - 1) / wg)
	b.dispatch(cacheName(c, "kv_write_f16", "kv_write_f32"), []part{c.parts[0], s.parts[0], cl.parts[0]},
		pcKVWrite{N: uint32(s.rows), Dim: uint32(dim), Rows: uint32(c.rows)}, gx, gy, 1)
}
