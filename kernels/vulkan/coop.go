//go:build cgo

package vulkan

/*
#include "vk.h"
*/
import "C"

import (
	"fmt"
	"slices"

	"github.com/vkllm/vkllm/kernels/vulkan/shaders"
	"github.com/vkllm/vkllm/tensor"
)

// The cooperative-matrix MatMul (matmul_coop.comp): products of halves
// summed in float32 cooperative matrices (VK_KHR_cooperative_matrix),
// llama.cpp's arithmetic, in blocks of one shape the device lists
// (coopShape: 16×16×16 where offered, as on NVIDIA, AMD and Intel GPUs;
// lavapipe offers 8×8×8).
//
// Invariance: a dst element is the chain of shape-wide products over k in
// order, whatever the tile (the shape is fixed for the device at Open).
// The matrix cores cannot follow lane.glsl's order, so a crossover that
// ran small batches on matmul.comp would change a token's bits with the
// size of its batch; instead, when the kernel is on it runs every MatMul
// of a CoopTypes weight, decode (n = 1) included, and a token's result is
// the same bits alone, in any batch and in any chunk of a prompt. A
// decode step pads its token to a 16-token tile: 16 multiply-adds per
// weight element read, far below the ridge of a GPU's matrix cores
// (H100: about 990 TFLOP/s of halves over 3.35 TB/s, 295 FLOP a byte;
// Q4_0 reads 0.56 bytes a weight, so 16 tokens are 57 FLOP a byte), so
// decode stays bound by the weights' bandwidth as on matmul.comp.
//
// It is opt-in (Config.CoopMat, VKLLM_VULKAN_COOPMAT=1), like the _fp16
// variants and for the same reason: halves in the products hold the
// fp16-input bound (TestCoopMatMul) but not the models' parity with
// transformers (1e-4 of the largest logit; TestVulkanCoopMat measures
// 1.0e-3 to 1.5e-3 on lavapipe); the default float32 kernels keep it.

// coopTile is one tile configuration (matmul_coop.comp's specialization
// constants 1-5): tm tokens × tn weight rows per workgroup, wm × wn per
// subgroup, bk of k per step through shared memory. All are multiples of
// 16 (so of every shape's sides up to 16), wm divides tm and wn divides
// tn. Any tile gives the same bits.
type coopTile struct{ tm, tn, wm, wn, bk int }

// The tiles in use: coopTileN for calls of at least coopMinTokens tokens,
// coopTile1 for fewer (a decode step, short batches); coopMinTokens is
// the crossover knob, and it picks a tile, never another kernel. Candidates for the
// sweep (tuning per device): tm ∈ {32, 64, 128}, tn ∈ {32, 64, 128},
// wm, wn ∈ {16, 32, 64} (up to 16 accumulators per subgroup), bk ∈ {16,
// 32, 64}; llama.cpp's medium tile on NVIDIA is 64×64 with 32×32 per
// subgroup. The defaults below are that, and a 16-token tile for decode.
var (
	coopTileN     = coopTile{tm: 64, tn: 64, wm: 32, wn: 32, bk: 32}
	coopTile1     = coopTile{tm: 16, tn: 64, wm: 16, wn: 16, bk: 32}
	coopMinTokens = 32
)

func (t coopTile) subgroups() int { return (t.tm / t.wm) * (t.tn / t.wn) }

// coopShape is a cooperative-matrix shape: m × k halves (A) by k × n
// (B) into m × n float32 (C).
type coopShape struct{ m, n, k int }

// shared is the tile's shared memory in bytes: halves of x and w, the
// float32 tile, and base.glsl's reduction array.
func (t coopTile) shared(sg int) int {
	return 2*t.tm*t.bk + 2*t.tn*t.bk + 4*t.tm*t.tn + 4*sg*t.subgroups()
}

func (t coopTile) valid(s coopShape) error {
	for _, v := range []int{t.tm, t.tn, t.wm, t.wn, t.bk} {
		if v <= 0 || v%16 != 0 {
			return fmt.Errorf("vulkan: coop tile %+v: sizes must be positive multiples of 16", t)
		}
	}
	if t.tm%t.wm != 0 || t.tn%t.wn != 0 {
		return fmt.Errorf("vulkan: coop tile %+v: wm must divide tm and wn divide tn", t)
	}
	if s.m <= 0 || s.n <= 0 || s.k <= 0 || t.wm%s.m != 0 || t.wn%s.n != 0 || t.bk%s.k != 0 {
		return fmt.Errorf("vulkan: coop tile %+v: not a multiple of the shape %+v", t, s)
	}
	return nil
}

// Component types and scope of VK_KHR_cooperative_matrix.
const (
	coopF16      = 0 // VK_COMPONENT_TYPE_FLOAT16_KHR
	coopF32      = 1 // VK_COMPONENT_TYPE_FLOAT32_KHR
	coopSubgroup = 3 // VK_SCOPE_SUBGROUP_KHR
)

var coopTypeNames = map[uint32]string{0: "f16", 1: "f32", 2: "f64", 3: "s8", 4: "s16", 5: "s32", 6: "s64", 7: "u8", 8: "u16", 9: "u32", 10: "u64"}

func coopTypeName(t uint32) string {
	if s, ok := coopTypeNames[t]; ok {
		return s
	}
	return fmt.Sprint("type", t)
}

// coopDetect fills b.info's cooperative-matrix fields at Open: the shapes
// the device lists, and CoopMat when the kernel runs (asked for, an
// f16·f16+f32 shape in subgroup scope is there whose sides divide 16,
// the subgroup size is fixed or pinned, both tiles fit the workgroup
// limits). Of the shapes, 16×16×16 is taken where listed, else the
// largest.
func (b *Backend) coopDetect(cfg Config) {
	p := &b.props
	var best coopShape
	for i := 0; i < int(p.ncoop) && i < C.VKL_MAX_COOP; i++ {
		s := p.coop[i]
		sc := ""
		if s.scope != coopSubgroup {
			sc = fmt.Sprint(" scope", s.scope)
		}
		b.info.CoopShapes = append(b.info.CoopShapes, fmt.Sprintf("%dx%dx%d %s*%s+%s=%s%s",
			s.m, s.n, s.k, coopTypeName(uint32(s.a)), coopTypeName(uint32(s.b)), coopTypeName(uint32(s.c)), coopTypeName(uint32(s.r)), sc))
		sh := coopShape{int(s.m), int(s.n), int(s.k)}
		if s.a == coopF16 && s.b == coopF16 && s.c == coopF32 && s.r == coopF32 && s.scope == coopSubgroup &&
			sh.m > 0 && sh.n > 0 && sh.k > 0 && 16%sh.m == 0 && 16%sh.n == 0 && 16%sh.k == 0 && sh.m*sh.n*sh.k > best.m*best.n*best.k {
			best = sh
		}
	}
	b.info.CoopMatDevice = p.coopmat != 0 && best.m > 0
	if !b.info.CoopMatDevice || !cfg.CoopMat || cfg.NoCoopMat {
		return
	}
	// The tile's subgroup count needs the subgroup size known when the
	// pipeline is made: the device's only one, or pinned.
	sg := int(p.subgroup_size)
	switch {
	case p.size_control != 0 && p.size_control_compute != 0 && p.min_subgroup <= p.subgroup_size && p.subgroup_size <= p.max_subgroup:
		if p.min_subgroup != p.max_subgroup {
			b.coopPin = sg
		}
	case p.min_subgroup != 0 && p.min_subgroup == p.max_subgroup:
	default:
		return
	}
	for _, t := range []coopTile{coopTileN, coopTile1} {
		if t.valid(best) != nil || t.subgroups()*sg > int(p.max_wg_size) || t.shared(sg) > int(p.max_shared) {
			return
		}
	}
	b.coopSG, b.coopShape = sg, best
	b.info.CoopMat = true
	b.info.CoopShape = fmt.Sprintf("%dx%dx%d", best.m, best.n, best.k)
}

// coopVariant reports the cooperative-matrix kernel's name for a weight
// of dtype dt, and whether it runs it.
func (b *Backend) coopVariant(dt tensor.DType) (string, bool) {
	if !b.info.CoopMat || !slices.Contains(shaders.CoopTypes, dt.String()) {
		return "", false
	}
	return "matmul_coop_" + typeName(dt) + "_f32", true
}

// coopMatMul records dst = x·wᵀ on the cooperative-matrix kernel, one
// dispatch per part of the weight.
func (b *Backend) coopMatMul(name string, d, xs, wt *Tensor, n, k, m int) {
	t := coopTileN
	if n < coopMinTokens {
		t = coopTile1
	}
	s := b.coopShape
	spec := wt.layoutSpec([]uint32{uint32(t.subgroups() * b.coopSG), uint32(t.tm), uint32(t.tn), uint32(t.wm), uint32(t.wn), uint32(t.bk), uint32(s.m), uint32(s.n), uint32(s.k)})
	for _, p := range wt.parts {
		pc := pcMatMul{K: uint32(k), M: uint32(m), N: uint32(n), RowLo: uint32(p.rowLo), Rows: uint32(p.rows), RowBytes: uint32(wt.rowBytes)}
		gx, gy := grid((p.rows + t.tn - 1) / t.tn)
		b.dispatchSpec(name, spec, []part{p, xs.parts[0], d.parts[0]}, pc, gx, gy, uint32((n+t.tm-1)/t.tm))
	}
}
