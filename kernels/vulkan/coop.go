//go:build cgo

package vulkan

/*
#include "vk.h"
*/
import "C"

import (
	"fmt"
	"maps"
	"slices"
	"strings"

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
// Q4_0 reads 0.56 bytes a weight, so 16 tokens are 57 FLOP a byte). As
// a dst element is one chain over k, a decode MatMul takes k/bk steps
// in sequence, each a round trip to memory: its small tile (Families
// "coopmat_small") is long in k and narrow in rows, so that many
// workgroups each keep a step's weights in flight at once.
//
// It is the default where the device has it (Config.NoCoopMat,
// VKLLM_VULKAN_DISABLE=coopmat: the exact float32 kernels): halves in
// the products hold the fp16-input bound (TestCoopMatMul) but not the
// exact kernels' parity with transformers (1e-4 of the largest logit;
// on the tiny models 0.8e-3 to 1.5e-3), and within the parity
// llama.cpp itself has on the same weights, which is the bound
// models.TestVulkanCoopMat holds it to per file
// (testdata/models/llamacpp-distance.json, tools/coopmat_distance.py).
// F32 weights are not in the mode (shaders.CoopTypes): llama.cpp keeps
// them in float32 (1e-6 from transformers), so they stay on the exact
// kernels, as on a device without the extension.

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
// the device lists, and CoopMat when the kernel runs (not disabled, an
// f16·f16+f32 shape in subgroup scope is there whose sides divide 16,
// the subgroup size is fixed or pinned, the default tiles fit the
// workgroup limits). A tuning's tiles that do not fit are an ErrTuning.
// Of the shapes, 16×16×16 is taken where listed, else the largest.
func (b *Backend) coopDetect(cfg Config) error {
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
	if !b.info.CoopMatDevice || cfg.NoCoopMat {
		return nil
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
		return nil
	}
	b.coopSG, b.coopShape = sg, best
	for _, fam := range []string{"coopmat", "coopmat_small"} {
		if b.coopFits(tileOf(Families[fam].Default)) != nil {
			return nil // the default tiles do not fit: the exact kernels
		}
	}
	// A tuning's tiles (a device file, Config.Tuning) must fit too.
	for _, key := range slices.Sorted(maps.Keys(b.tune)) {
		if fam, _, _ := strings.Cut(key, "/"); fam == "coopmat" || fam == "coopmat_small" {
			if err := b.coopFits(tileOf(b.tune.knobs(key))); err != nil {
				return fmt.Errorf("%w %q: %w", ErrTuning, key, err)
			}
		}
	}
	b.info.CoopMat = true
	b.info.CoopShape = fmt.Sprintf("%dx%dx%d", best.m, best.n, best.k)
	return nil
}

// coopFits reports why tile t cannot run on the device (nil if it can):
// a multiple of the shape, its subgroups within the workgroup size and
// its shared memory within the device's.
func (b *Backend) coopFits(t coopTile) error {
	if err := t.valid(b.coopShape); err != nil {
		return err
	}
	if wg, sh := t.subgroups()*b.coopSG, t.shared(b.coopSG); wg > int(b.props.max_wg_size) || sh > int(b.props.max_shared) {
		return fmt.Errorf("vulkan: coop tile %+v: %d invocations and %d bytes of shared memory, the device allows %d and %d",
			t, wg, sh, b.props.max_wg_size, b.props.max_shared)
	}
	return nil
}

// coopVariant reports the cooperative-matrix kernel's name for a weight
// of dtype dt, and whether it runs it.
func (b *Backend) coopVariant(dt tensor.DType) (string, bool) {
	if !b.info.CoopMat || !slices.Contains(shaders.CoopTypes, dt.String()) {
		return "", false
	}
	return "matmul_coop_" + typeName(dt) + "_f32", true
}

// coopTiles are the tiles of dt's MatMul under the device's tuning
// (Families "coopmat" and "coopmat_small"): big for calls of at least
// minTokens tokens, small for fewer.
func (b *Backend) coopTiles(dt tensor.DType) (big, small coopTile, minTokens int) {
	ks := b.tune.knobs("coopmat_small/" + typeName(dt))
	return tileOf(b.tune.knobs("coopmat/" + typeName(dt))), tileOf(ks), ks["min"]
}

// coopMatMul records dst = x·wᵀ on the cooperative-matrix kernel with
// the device's tiles.
func (b *Backend) coopMatMul(name string, d, xs, wt *Tensor) {
	big, small, minTokens := b.coopTiles(wt.dt)
	t := big
	if xs.rows < minTokens {
		t = small
	}
	b.coopDispatch(name, t, d, xs, wt)
}

// coopDispatch records dst = x·wᵀ on the cooperative-matrix kernel with
// tile t, one dispatch per part of the weight.
func (b *Backend) coopDispatch(name string, t coopTile, d, xs, wt *Tensor) {
	n, k, m := xs.rows, xs.cols, wt.rows
	s := b.coopShape
	spec := wt.layoutSpec([]uint32{uint32(t.subgroups() * b.coopSG), uint32(t.tm), uint32(t.tn), uint32(t.wm), uint32(t.wn), uint32(t.bk), uint32(s.m), uint32(s.n), uint32(s.k)})
	for _, p := range wt.parts {
		pc := pcMatMul{K: uint32(k), M: uint32(m), N: uint32(n), RowLo: uint32(p.rowLo), Rows: uint32(p.rows), RowBytes: uint32(wt.rowBytes)}
		gx, gy := grid((p.rows + t.tn - 1) / t.tn)
		b.dispatchSpec(name, spec, []part{p, xs.parts[0], d.parts[0]}, pc, gx, gy, uint32((n+t.tm-1)/t.tm))
	}
}
