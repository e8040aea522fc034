//go:build cgo

package vulkan

/*
#include "vk.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"reflect"
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
// workgroup size). Its host cost is one cgo call and no Go allocation
// once the pipeline and the descriptor set exist (TestDispatchAllocs).
func (b *Backend) dispatchSpec(name string, spec []uint32, binds []part, pc any, gx, gy, gz uint32) {
	if b.closed {
		panic(bad("%s after Close", name))
	}
	p := b.pipeline(name, spec)
	if p == nil {
		return // b.err says why
	}
	push := pushOf(&b.push, pc)
	if push != p.layout.PushSize || len(binds) != p.layout.Bindings {
		panic(fmt.Sprintf("vulkan: %s: %d bindings and %d push bytes, want %d and %d", name, len(binds), push, p.layout.Bindings, p.layout.PushSize))
	}
	set := b.set(p, binds)
	if set == 0 {
		return // b.err says why
	}
	var writes [maxBind]part
	nw := 0
	for i, q := range binds {
		if p.layout.Writable[i] {
			writes[nw] = q
			nw++
		}
	}
	barrier := b.hazard(binds, writes[:nw])
	if b.dry != 0 {
		b.dryDispatch(p, set, barrier, gx, gy, gz)
	} else if r := C.vkl_dispatch(b.ctx, p.p, set, boolInt(barrier), unsafe.Pointer(&b.push[0]),
		C.uint32_t(gx), C.uint32_t(gy), C.uint32_t(gz)); r != C.VK_SUCCESS {
		b.fail(&Error{Op: "dispatch " + name, Result: int32(r)})
	}
	b.recorded++
	if f := b.pieceFirst; f > 0 && (b.recorded == f || b.recorded > f && (b.recorded-f)%pieceEvery == 0) {
		if r := C.vkl_piece(b.ctx); r != C.VK_SUCCESS {
			b.fail(&Error{Op: "vkQueueSubmit", Result: int32(r)})
		}
	}
}

// A step is submitted in pieces, without waiting, so that the device
// starts on it while the host still records: the first after pieceFirst
// dispatches (small, to start the device early), then every pieceEvery
// (each submit costs the host some microseconds). Backend.pieceFirst is
// pieceFirst; 0 (benchmarks of the recording alone) turns pieces off.
const (
	pieceFirst = 32
	pieceEvery = 128
)

// maxBind is the most bindings a shader may have (vk.c's MAX_BIND).
const maxBind = 8

// setKey names a cached descriptor set: a pipeline and its bound ranges.
type setKey struct {
	p *C.vkl_pipe
	r [maxBind]bufRange
}

// maxSets bounds the descriptor set cache (Backend.maxSets; tests lower
// it); past it the cache starts over. A step binds the same ranges every
// time (a Context's tensors are allocated at NewContext, and a view binds
// its whole tensor), so steps of every batch size and width hit it.
const maxSets = 1 << 14

// set returns the descriptor set binding binds to p's layout, written
// once and kept across submits (0 on failure, recorded in b.err).
func (b *Backend) set(p *pipeline, binds []part) C.uint64_t {
	k := setKey{p: p.p}
	for i, q := range binds {
		k.r[i] = spanOf(q)
	}
	if s, ok := b.sets[k]; ok {
		return s
	}
	if len(b.sets) >= b.maxSets {
		b.dropSets()
	}
	var bufs, offs, ranges [maxBind]C.uint64_t
	for i, q := range binds {
		bufs[i], offs[i], ranges[i] = q.blk.buf, C.uint64_t(q.off), C.uint64_t(q.binding())
	}
	var s C.uint64_t
	if r := C.vkl_set(b.ctx, p.p, &bufs[0], &offs[0], &ranges[0], &s); r != C.VK_SUCCESS {
		b.fail(&Error{Op: "vkAllocateDescriptorSets", Result: int32(r)})
		return 0
	}
	b.sets[k] = s
	b.setWrites++
	return s
}

// dropSets empties the descriptor set cache, submitting and waiting for
// the work recorded so far (which may use its sets) first. Freeing a
// buffer drops the cache, whose sets may name it.
func (b *Backend) dropSets() {
	b.dropGraphs() // recordings bind the sets
	if len(b.sets) == 0 {
		return
	}
	if r := b.submit(); r != C.VK_SUCCESS {
		b.fail(&Error{Op: "vkQueueSubmit", Result: int32(r)})
	}
	C.vkl_sets_reset(b.ctx)
	clear(b.sets)
}

// pushWords bounds a push-constant block (32-bit words): Vulkan
// guarantees 128 bytes.
const pushWords = 32

// pushOf copies the push-constant block pc, a struct of 32-bit scalars
// (push.go), into dst in the host's byte order (as vkCmdPushConstants
// takes it) and returns its size in bytes, -1 if it does not fit. It
// reads pc's boxed value directly so that pc does not escape: the
// callers' structs stay on the stack.
func pushOf(dst *[pushWords]uint32, pc any) int {
	t := reflect.TypeOf(pc)
	if t == nil || t.Kind() != reflect.Struct || t.Size()%4 != 0 || t.Size() > 4*pushWords {
		return -1
	}
	n := int(t.Size())
	if n == 0 {
		return 0
	}
	data := (*[2]unsafe.Pointer)(unsafe.Pointer(&pc))[1] // an interface's value word
	copy(dst[:], unsafe.Slice((*uint32)(data), n/4))
	return n
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
	if !b.info.Subgroups {
		return name
	}
	s, ok := b.subgroupNames[name]
	if !ok {
		s = name + "_subgroup"
		b.subgroupNames[name] = s
	}
	return s
}

func must(cond bool, format string, args ...any) {
	if !cond {
		panic(bad(format, args...))
	}
}

// bad is must's message. The ops recorded every step check with
// `if !cond { panic(bad(…)) }` instead of must, whose arguments would be
// boxed on the heap at every call (TestDispatchAllocs).
func bad(format string, args ...any) string { return fmt.Sprintf("vulkan: "+format, args...) }

func tensorOf(op string, x kernels.Tensor) *Tensor {
	t, err := live(x)
	if err != nil {
		panic(fmt.Sprintf("vulkan: %s: %v", op, err))
	}
	return t
}

func activation(op string, x kernels.Tensor) *Tensor {
	t := tensorOf(op, x)
	if t.dt != tensor.F32 || t.weight {
		panic(bad("%s: want an F32 activation, got %v", op, t))
	}
	return t
}

func ints(op string, x kernels.Tensor) *Tensor {
	t := tensorOf(op, x)
	if t.dt != tensor.I32 {
		panic(bad("%s: want an I32 tensor, got %v", op, t))
	}
	return t
}

func cacheOf(op string, x kernels.Tensor) *Tensor {
	t := tensorOf(op, x)
	if t.dt != tensor.F32 && t.dt != tensor.F16 || t.weight {
		panic(bad("%s: want an F32 or F16 cache, got %v", op, t))
	}
	return t
}

// cacheName is name_f16 or name_f32 for a cache of c's dtype.
func cacheName(c *Tensor, f16, f32 string) string {
	if c.dt == tensor.F16 {
		return f16
	}
	return f32
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
