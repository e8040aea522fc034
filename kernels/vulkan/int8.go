//go:build cgo

package vulkan

import (
	"fmt"
	"slices"

	"github.com/vkllm/vkllm/kernels/vulkan/shaders"
	"github.com/vkllm/vkllm/tensor"
)

// The int8 MatMul: integer dot products of a weight's 4/5/6/8-bit values
// against activations quantised to 8 bits, llama.cpp's mul_mat_vecq
// arithmetic, as a mode (Config.Int8, VKLLM_VULKAN_INT8=1) that runs every
// MatMul of a shaders.Int8Types weight (Q8_0, Q4_0, Q4_1, Q4_K, Q5_K,
// Q6_K), decode, batched decode and prefill alike.
//
// Each MatMul first quantises its input (quantize_q8.comp: blocks of 32
// elements, d = max|x|/127, q = x·(1/d) rounded halves away from zero, and the
// block's Σq, kerneltest.QuantizeQ8's rule) into a scratch buffer of the
// backend's, unless the scratch holds it already (quantizeQ8), then runs
// matmul.comp's INT8 variant: lane l of a slot takes
// the quant groups l, l+64, … as the float kernel does (common/lane.glsl),
// adds each group's int8Block (common/int8.glsl: the integer dot times
// the scales, one expression) to its float32 sum in order, and the 64
// lane sums are reduced as every matrix-vector kernel reduces them. So a
// dst element depends on k alone, never on the batch, the tuning's knobs
// or the row's place: batch and chunk invariance hold bitwise within the
// mode (TestInt8Invariance, models.TestVulkanInt8). The integer dots come
// from GL_EXT_integer_dot_product where the device has
// shaderIntegerDotProduct (_int8dot variants) and from plain int
// arithmetic otherwise (_int8): the same integers, so the same bits
// (TestInt8Invariance). GateUpSwiGLU runs the kernel's GATEUP variant,
// gate and up against one quantisation (int8GateUp). For its dtypes the
// mode takes precedence over Config.CoopMat.
//
// Prefill runs the same matrix-vector kernel (tuning "matvec_int8_batch"):
// there is no tiled int8 kernel yet, so the mode's prefill reads the
// weights once per toks tokens (8 by default, at most 16) instead of once
// per 16-token tile, with no shared-memory staging.
//
// Roofline: a decode step streams the weights once as the float kernel
// does (Q4_0: 18 bytes a group of 32) and reads 40 bytes of activation
// blocks a group instead of 128 of floats, with 8 integer dot
// instructions a group and row in place of 32 float multiply-adds and 32
// dequantisations. Whether that wins is the device's: the sweep times the
// "matvec_int8" families beside the float ones, and the mode is off by
// default until a GPU measurement decides.

// int8Detect fills b.info's int8 fields at Open.
func (b *Backend) int8Detect(cfg Config) {
	b.info.IntegerDot = b.props.intdot != 0
	b.info.Int8MatMul = cfg.Int8 && !cfg.NoInt8
}

// int8Name reports the int8 matrix-vector kernel of a weight of dtype dt
// (whether or not the mode is on), and whether dt has one.
func (b *Backend) int8Name(dt tensor.DType) (string, bool) {
	if !slices.Contains(shaders.Int8Types, dt.String()) {
		return "", false
	}
	name := "matmul_" + typeName(dt) + "_f32_int8"
	if b.info.IntegerDot && !b.cfg.NoIntegerDot {
		name += "dot"
	}
	return b.reduceVariant(name), true
}

// int8Variant reports the int8 kernel of dt and whether MatMul runs it.
func (b *Backend) int8Variant(dt tensor.DType) (string, bool) {
	if !b.info.Int8MatMul {
		return "", false
	}
	return b.int8Name(dt)
}

// int8MatMul records dst = x·wᵀ in the int8 mode, with the device's
// tuning of "matvec_int8" (one token) or "matvec_int8_batch" (more).
func (b *Backend) int8MatMul(name string, d, xs, wt *Tensor) {
	key := "matvec_int8/" + typeName(wt.dt)
	if xs.rows > 1 {
		key = "matvec_int8_batch/" + typeName(wt.dt)
	}
	b.int8Matvec(name, b.tune.knobs(key), d, xs, wt)
}

// int8Matvec quantises x into the scratch and records the int8 kernel
// with knobs k: (wg/64)·rows weight rows × toks tokens a workgroup.
func (b *Backend) int8Matvec(name string, k Knobs, d, xs, wt *Tensor) {
	n, kk, m := xs.rows, xs.cols, wt.rows
	must(!wt.repacked, "int8 MatMul: %v is repacked (int8.glsl reads the file layout)", wt)
	q, err := b.quantizeQ8(xs)
	if err != nil {
		b.fail(err)
		return
	}
	rows, toks := k["wg"]/wg*k["rows"], k["toks"]
	spec := Families["matvec"].spec(k)
	for _, p := range wt.parts {
		pc := pcMatMul{K: uint32(kk), M: uint32(m), N: uint32(n), RowLo: uint32(p.rowLo), Rows: uint32(p.rows), RowBytes: uint32(wt.rowBytes)}
		gx, gy := grid((p.rows + rows - 1) / rows)
		b.dispatchSpec(name, spec, []part{p, q, d.parts[0]}, pc, gx, gy, uint32((n+toks-1)/toks))
	}
}

// q8Source names the activation the scratch holds quantised: its bound
// range and shape (a view binds its whole tensor from its first byte, so
// the range and the shape name the data); zero when none.
type q8Source struct {
	span bufRange
	n, k int
}

// q8Written forgets the scratch's source when a command writes over it
// (hazard sees every write recorded: dispatches, copies, fills).
func (b *Backend) q8Written(s bufRange) {
	if x := b.q8src.span; b.q8src.n > 0 && x.buf == s.buf && x.off < s.end && s.off < x.end {
		b.q8src = q8Source{}
	}
}

// q8Words is the scratch an activation of n×k takes (quantize_q8.comp's
// layout): per block of 32, 8 words of q, its d and its Σq.
func q8Words(n, k int) int { return n * k / 32 * 10 }

// quantizeQ8 records quantize_q8.comp over x (k a multiple of 32) into
// b.q8, grown as needed (a larger scratch replaces a smaller one; the
// barriers order its reuse), and returns the part to bind. When the
// scratch already holds x, unwritten since, it records nothing: the
// MatMuls of one input (a layer's Q, K and V projections) share one
// quantisation, and its dispatch and barriers.
func (b *Backend) quantizeQ8(x *Tensor) (part, error) {
	src := q8Source{span: spanOf(x.parts[0]), n: x.rows, k: x.cols}
	if b.q8 != nil && b.q8src == src {
		return b.q8.parts[0], nil
	}
	blocks := x.rows * x.cols / 32
	if x.cols%32 != 0 {
		return part{}, fmt.Errorf("vulkan: int8 MatMul: rows of %d elements, not a multiple of 32", x.cols)
	}
	words := q8Words(x.rows, x.cols)
	if b.q8 == nil || numel(b.q8) < words {
		if int64(words)*4 > b.maxRange {
			return part{}, fmt.Errorf("%w: int8 MatMul: %d tokens of %d quantised take %d bytes, one binding covers %d",
				ErrTooLarge, x.rows, x.cols, int64(words)*4, b.maxRange)
		}
		t, err := b.NewTensor(tensor.F32, words)
		if err != nil {
			return part{}, err
		}
		if b.q8 != nil {
			b.Free(b.q8)
		}
		b.q8 = t.(*Tensor)
	}
	q := b.q8.parts[0]
	gx, gy := grid((blocks + wg - 1) / wg)
	b.dispatch("quantize_q8_f32", []part{x.parts[0], q}, pcQ8{Blocks: uint32(blocks)}, gx, gy, 1)
	b.q8src = src
	b.q8runs++
	return q, nil
}

// int8GateUp records GateUpSwiGLU in the int8 mode: x quantised once and
// matmul.comp's INT8 GATEUP variant (bitwise MatMul, MatMul, SwiGLU of
// the mode), with the tuning of the gate's dtype; false where the
// tuning's rows·toks would give a lane more than maxSums sums.
func (b *Backend) int8GateUp(name string, d, xs, g, u *Tensor) bool {
	n, k, m := xs.rows, xs.cols, g.rows
	if n == 0 || m == 0 {
		return true
	}
	key := "matvec_int8/" + typeName(g.dt)
	if n > 1 {
		key = "matvec_int8_batch/" + typeName(g.dt)
	}
	kn := b.tune.knobs(key)
	if 2*kn["rows"]*kn["toks"] > maxSums {
		return false
	}
	q, err := b.quantizeQ8(xs)
	if err != nil {
		b.fail(err)
		return true
	}
	must(!g.repacked && !u.repacked, "int8 GateUpSwiGLU: %v or %v is repacked (int8.glsl reads the file layout)", g, u)
	rows, toks := kn["wg"]/wg*kn["rows"], kn["toks"]
	for i, p := range g.parts {
		pc := pcMatMul{K: uint32(k), M: uint32(m), N: uint32(n), RowLo: uint32(p.rowLo), Rows: uint32(p.rows), RowBytes: uint32(g.rowBytes)}
		gx, gy := grid((p.rows + rows - 1) / rows)
		b.dispatchSpec(name+"_swiglu", Families["matvec"].spec(kn), []part{p, q, d.parts[0], u.parts[i]}, pc, gx, gy, uint32((n+toks-1)/toks))
	}
	return true
}
