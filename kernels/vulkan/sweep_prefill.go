//go:build cgo

package vulkan

import (
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/vkllm/vkllm/tensor"
)

// coopSmallTokens are the calls "coopmat_small" is timed on: a decode
// step and batches on both sides of every candidate crossover.
var coopSmallTokens = []int{1, 16, 48}

// sweepCoop times every candidate of a coop family ("coopmat": the tile
// of o.Prefill-token calls; "coopmat_small": the small tile and the
// crossover, on coopSmallTokens calls, the large tile the device's) for
// dtype dt on shapes. Candidates whose tile does not fit the device are
// left out. The default's results are checked against float64 sums
// (sweepLimit) and every other candidate's bitwise against the
// default's: a tile never changes a bit. The first row is the default.
func (b *Backend) sweepCoop(o SweepOptions, fam string, dt tensor.DType, shapes []SweepShape) ([]SweepRow, error) {
	name, ok := b.coopVariant(dt)
	if !ok {
		return nil, fmt.Errorf("vulkan: sweep %s: no cooperative-matrix kernel for %v", fam, dt)
	}
	ns := []int{o.Prefill}
	if fam == "coopmat_small" {
		ns = coopSmallTokens
	}
	rows := o.sweepRows(fam, fam+"/"+typeName(dt), len(shapes)*len(ns))
	rows = slices.DeleteFunc(rows, func(r SweepRow) bool { return b.coopFits(tileOf(r.Knobs)) != nil })
	if len(rows) == 0 || !sameKnobs(rows[0].Knobs, Families[fam].Default) {
		return nil, fmt.Errorf("vulkan: sweep %s: the default tile does not fit the device", fam)
	}
	big, _, _ := b.coopTiles(dt)
	r := rand.New(rand.NewPCG(uint64(dt), 13))
	var flops float64 // multiply-adds ×2 of one pass over the shapes
	for si, s := range shapes {
		w, data, err := b.sweepWeight(r, dt, s.Rows, s.K, true)
		if err != nil {
			return nil, err
		}
		for ni, n := range ns {
			flops += float64(s.Count) * 2 * float64(n) * float64(s.K) * float64(s.Rows)
			x := make([]float32, n*s.K)
			for i := range x {
				x[i] = float32(r.NormFloat64())
			}
			xt, d, err := b.sweepPair(x, n, s.K, s.Rows)
			if err != nil {
				b.Free(w)
				return nil, err
			}
			var want []float32
			for ci := range rows {
				row := &rows[ci]
				t := tileOf(row.Knobs)
				if fam == "coopmat_small" && n >= row.Knobs["min"] {
					t = big
				}
				slot := si*len(ns) + ni
				if !b.sweepOpen(rows, ci, slot) {
					continue
				}
				got, dur, err := b.sweepRun(d, o.Reps, func() { b.coopDispatch(name, t, d, xt, w.(*Tensor)) })
				if b.sweepSkip(row, slot, dur, err) {
					continue
				}
				if err != nil {
					row.Wrong = err.Error()
					continue
				}
				row.Times[slot] = dur
				if ci == 0 {
					want = got
					if si == 0 && ni == 0 { // the default against float64 sums, once per key
						if e := sweepRef(dt, data, x, got, n, s.K, s.Rows); e > sweepLimit {
							row.Wrong = fmt.Sprintf("%s n=%d: NMSE %.3g against float64 sums, above %g", s.Name, n, e, sweepLimit)
						}
					}
				} else if i := firstDiff(got, want); i >= 0 {
					row.Wrong = fmt.Sprintf("%s n=%d: element %d is %v, the default's %v", s.Name, n, i, got[i], want[i])
				}
			}
			b.Free(xt)
			b.Free(d)
		}
		b.Free(w)
	}
	inheritWrong(rows)
	tflop := flops / 1e12
	score(rows, shapeCounts(shapes, len(ns)), 0, &tflop)
	return rows, nil
}

// sweepPair uploads x (n, k) and makes its product's (n, m) tensor.
func (b *Backend) sweepPair(x []float32, n, k, m int) (xt, d *Tensor, err error) {
	xk, err := b.NewTensor(tensor.F32, n, k)
	if err != nil {
		return nil, nil, err
	}
	if err := b.SetF32(xk, x); err != nil {
		b.Free(xk)
		return nil, nil, err
	}
	dk, err := b.NewTensor(tensor.F32, n, m)
	if err != nil {
		b.Free(xk)
		return nil, nil, err
	}
	return xk.(*Tensor), dk.(*Tensor), nil
}

// sweepAttnPrefill times every candidate of "attention_prefill" (query
// rows a tile, workgroup size, and the batch from which the prefill
// kernel runs) on the Causal shapes with GPU timestamps. Every candidate
// is checked against a float64 reference and bitwise against the
// default (no knob of the family changes a bit: both kernels give a
// token the same bits). The first row is the default; b.attn is
// restored after.
func (b *Backend) sweepAttnPrefill(o SweepOptions, shapes []SweepAttention) ([]SweepRow, error) {
	return b.sweepAttnFamily(o, "attention_prefill", shapes, 17, func(t *AttentionTuning, c Knobs) {
		t.QueryRows, t.PrefillWG, t.PrefillMin = c["rows"], c["wg"], c["min"]
	}, func(Knobs, Knobs) bool { return true })
}
