//go:build cgo

package vulkan

import (
	"slices"

	"github.com/vkllm/vkllm/kernels"
	"github.com/vkllm/vkllm/kernels/vulkan/shaders"
	"github.com/vkllm/vkllm/tensor"
)

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
	name := b.rowsName(tb.dt)
	gy, gz := grid(n)
	for _, p := range tb.parts {
		pc := pcRows{Cols: uint32(cols), N: uint32(n), RowLo: uint32(p.rowLo), Rows: uint32(p.rows), RowBytes: uint32(tb.rowBytes)}
		b.dispatchSpec(name, tb.layoutSpec([]uint32{wg}), []part{p, id.parts[0], d.parts[0]}, pc, uint32((cols+wg-1)/wg), gy, gz)
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
	key := matmulKey{dt, tiled}
	if name, ok := b.names.matmul[key]; ok {
		return name, tiled
	}
	name = "matmul_" + typeName(dt) + "_f32"
	if tiled {
		name = "matmul_mm_" + typeName(dt) + "_f32"
	}
	if b.info.FP16 && slices.Contains(shaders.FP16Types, t) {
		name += "_fp16"
	}
	name = b.reduceVariant(name)
	if b.names.matmul == nil {
		b.names.matmul = map[matmulKey]string{}
	}
	b.names.matmul[key] = name
	return name, tiled
}

// MatMul implements kernels.Backend, one dispatch per part of the weight:
// the int8 kernel for every call where it is on (int8.go; a quantising
// dispatch first), the cooperative-matrix kernel for every call where it
// is on (coop.go),
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
	if name, ok := b.int8Variant(wt.dt); ok {
		b.int8MatMul(name, d, xs, wt)
		return
	}
	if name, ok := b.coopVariant(wt.dt); ok {
		b.coopMatMul(name, d, xs, wt)
		return
	}
	name, tiled := b.matmulVariant(wt.dt, n, k)
	if tiled {
		b.matmulDispatch(name, []uint32{mmWG}, mmRows, mmToks, d, xs, wt)
		return
	}
	p := b.matvecPlan(wt.dt, n > 1)
	b.matmulDispatch(name, p.spec, p.rows, p.toks, d, xs, wt)
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
	spec = wt.layoutSpec(spec)
	for _, p := range wt.parts {
		pc := pcMatMul{K: uint32(k), M: uint32(m), N: uint32(n), RowLo: uint32(p.rowLo), Rows: uint32(p.rows), RowBytes: uint32(wt.rowBytes)}
		gx, gy := grid((p.rows + rows - 1) / rows)
		b.dispatchSpec(name, spec, []part{p, xs.parts[0], d.parts[0]}, pc, gx, gy, uint32((n+toks-1)/toks))
	}
}

// GateUpSwiGLU implements kernels.GateUpSwiGLUer on the matrix-vector
// kernel's GATEUP variant (matmul.comp), with the tuning MatMul uses for
// the gate's dtype: one dispatch per part of the weights. It declines
// (false) where MatMul would take the cooperative-matrix or tiled kernel
// (prefill keeps MatMul, MatMul, SwiGLU there), where the two weights
// differ in dtype, layout or parts, and where the tuning's rows·toks
// would give a lane more than maxSums gate and up sums. In the int8 mode
// it runs the int8 kernel's _swiglu variant for those dtypes at every n
// (int8GateUp).
func (b *Backend) GateUpSwiGLU(dst, x, wGate, wUp kernels.Tensor) bool {
	const op = "GateUpSwiGLU"
	d, xs, g, u := activation(op, dst), activation(op, x), tensorOf(op, wGate), tensorOf(op, wUp)
	n, k, m := xs.rows, xs.cols, g.rows
	for _, w := range []*Tensor{g, u} {
		must(w.weight || w.dt == tensor.F32 || w.dt == tensor.F16, "%s: weight %v has no float rows", op, w)
		must(w.rows == m && w.cols == k && d.rows == n && d.cols == m, "%s: dst %v, x %v, gate %v, up %v: want dst (n, m), x (n, k), gate and up (m, k)", op, d, xs, g, u)
	}
	must(n <= 65535, "%s: %d tokens in one call (at most 65535)", op, n)
	if _, coop := b.coopVariant(g.dt); coop || u.dt != g.dt || u.rowBytes != g.rowBytes || u.repacked != g.repacked || len(u.parts) != len(g.parts) {
		return false
	}
	for i, p := range g.parts {
		if q := u.parts[i]; q.rowLo != p.rowLo || q.rows != p.rows {
			return false
		}
	}
	if name, ok := b.int8Variant(g.dt); ok {
		return b.int8GateUp(name, d, xs, g, u)
	}
	name, tiled := b.matmulVariant(g.dt, n, k)
	if tiled {
		return false
	}
	if n == 0 || m == 0 {
		return true
	}
	plan := b.matvecPlan(g.dt, n > 1)
	if 2*plan.knobs["rows"]*plan.knobs["toks"] > maxSums {
		return false
	}
	rows, toks := plan.rows, plan.toks
	name = b.swigluName(name)
	spec := g.layoutSpec(plan.spec)
	for i, p := range g.parts {
		pc := pcMatMul{K: uint32(k), M: uint32(m), N: uint32(n), RowLo: uint32(p.rowLo), Rows: uint32(p.rows), RowBytes: uint32(g.rowBytes)}
		gx, gy := grid((p.rows + rows - 1) / rows)
		b.dispatchSpec(name, spec, []part{p, xs.parts[0], d.parts[0], u.parts[i]}, pc, gx, gy, uint32((n+toks-1)/toks))
	}
	return true
}
