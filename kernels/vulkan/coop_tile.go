package vulkan

import "fmt"

// coopTile is one tile configuration of the cooperative-matrix MatMul
// (matmul_coop.comp's specialization constants 1-5): tm tokens × tn
// weight rows per workgroup, wm × wn per subgroup, bk of k per step
// through shared memory. All are multiples of 16 (so of every shape's
// sides up to 16), wm divides tm and wn divides tn. sg is the least
// number of subgroups a workgroup has: those past the (tm/wm)·(tn/wn)
// that multiply only load and round the next step's halves (a decode
// tile has one block to multiply and 16 × bk weights to load). Any tile
// gives the same bits. The tiles in use are the device's tuning
// (Families "coopmat" and "coopmat_small").
type coopTile struct{ tm, tn, wm, wn, bk, sg int }

// tileOf is the tile of a coop family's knobs.
func tileOf(k Knobs) coopTile {
	return coopTile{tm: k["tm"], tn: k["tn"], wm: k["wm"], wn: k["wn"], bk: k["bk"], sg: k["sg"]}
}

// subgroups is the workgroup's: the blocks' subgroups, or sg if more.
func (t coopTile) subgroups() int { return max((t.tm/t.wm)*(t.tn/t.wn), t.sg) }

// coopShape is a cooperative-matrix shape: m × k halves (A) by k × n
// (B) into m × n float32 (C).
type coopShape struct{ m, n, k int }

// shared is the tile's shared memory in bytes: halves of x and w, the
// float32 tile, and base.glsl's reduction array.
func (t coopTile) shared(sg int) int {
	return 2*t.tm*t.bk + 2*t.tn*t.bk + 4*t.tm*t.tn + 4*sg*t.subgroups()
}

// static reports whether t is a tile on any device: sides multiples of
// 16, wm dividing tm and wn dividing tn, at most 16 subgroups and 16
// accumulators of 16×16 a subgroup, and within 48 KiB of shared memory
// with subgroups of 32 (NVIDIA's limit, the least of the GPUs with the
// extension) (the coop families' Valid).
func (t coopTile) static() bool {
	return t.valid(coopShape{16, 16, 16}) == nil && t.subgroups() <= 16 && (t.wm/16)*(t.wn/16) <= 16 && t.shared(32) <= 48<<10
}

func (t coopTile) valid(s coopShape) error {
	for _, v := range []int{t.tm, t.tn, t.wm, t.wn, t.bk} {
		if v <= 0 || v%16 != 0 {
			return fmt.Errorf("vulkan: coop tile %+v: sizes must be positive multiples of 16", t)
		}
	}
	if t.sg < 0 {
		return fmt.Errorf("vulkan: coop tile %+v: a negative subgroup count", t)
	}
	if t.tm%t.wm != 0 || t.tn%t.wn != 0 {
		return fmt.Errorf("vulkan: coop tile %+v: wm must divide tm and wn divide tn", t)
	}
	if s.m <= 0 || s.n <= 0 || s.k <= 0 || t.wm%s.m != 0 || t.wn%s.n != 0 || t.bk%s.k != 0 {
		return fmt.Errorf("vulkan: coop tile %+v: not a multiple of the shape %+v", t, s)
	}
	return nil
}
