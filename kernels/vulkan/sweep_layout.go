//go:build cgo

package vulkan

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/vkllm/vkllm/kernels"
	"github.com/vkllm/vkllm/tensor"
)

// sweepLayout times the two layouts of dtype dt (key "layout/<dt>",
// candidates repack=0, the default, and repack=1) on each of shapes
// whose rows can be repacked: per shape the same random weight uploaded
// in each layout, the time of one matrix-vector call of one token (with
// the matvec knobs chosen by this sweep, else the device's) plus, where
// the device runs the tiled kernel, one tiled call of mmToks tokens (a
// prefill tile: every weight byte read once). A shape's time counts
// Count times. The repacked results must be bitwise the file layout's,
// and the file layout's within sweepLimit of float64 sums. No shape
// repackable: no rows.
func (b *Backend) sweepLayout(o SweepOptions, dt tensor.DType, shapes []SweepShape, chosen Knobs) ([]SweepRow, error) {
	var fit []SweepShape
	for _, s := range shapes {
		if repackable(dt, s.K) {
			fit = append(fit, s)
		}
	}
	if len(fit) == 0 {
		return nil, nil
	}
	key := "layout/" + typeName(dt)
	mv := b.tune.knobs("matvec/" + typeName(dt))
	if chosen != nil {
		mv = Families["matvec"].knobs(chosen)
	}
	rows := []SweepRow{{Key: key, Knobs: Knobs{"repack": 0}}, {Key: key, Knobs: Knobs{"repack": 1}}}
	for i := range rows {
		rows[i].Times = make([]time.Duration, len(fit))
	}
	r := rand.New(rand.NewPCG(uint64(dt), 11))
	var bytesPerToken float64
	for si, s := range fit {
		data, err := sweepData(r, dt, s.Rows, s.K)
		if err != nil {
			return nil, err
		}
		bytesPerToken += float64(s.Count) * float64(len(data))
		n := 1
		tiledName, tiled := b.matmulVariant(dt, mmToks, s.K)
		if tiled {
			n = mmToks
		}
		x := make([]float32, n*s.K)
		for i := range x {
			x[i] = float32(r.NormFloat64())
		}
		var want [2][]float32 // the file layout's matvec and tiled results
		for ci := range rows {
			row := &rows[ci]
			if !b.sweepOpen(rows, ci, si) {
				continue
			}
			got, d, err := b.sweepLayoutTime(dt, data, row.Knobs["repack"] == 1, s, x, n, mv, tiledName, tiled, o.Reps)
			if b.sweepSkip(row, si, d, err) {
				continue
			}
			if err != nil {
				row.Wrong = err.Error()
				continue
			}
			row.Times[si] = d
			if ci == 0 {
				want = got
				if e := sweepRef(dt, data, x[:s.K], got[0], 1, s.K, s.Rows); e > sweepLimit {
					row.Wrong = fmt.Sprintf("%s: NMSE %.3g against float64 sums, above %g", s.Name, e, sweepLimit)
				}
				continue
			}
			for j, what := range []string{"matvec", "tiled"} {
				if i := firstDiff(got[j], want[j]); i >= 0 {
					row.Wrong = fmt.Sprintf("%s %s: element %d is %v, the file layout's %v", s.Name, what, i, got[j][i], want[j][i])
					break
				}
			}
		}
	}
	inheritWrong(rows)
	score(rows, shapeCounts(fit, 1), bytesPerToken/1e9, nil) // both calls read the weight once
	return rows, nil
}

// sweepLayoutTime uploads data in one layout and times one matrix-vector
// call of x's first token (knobs mv) and, if tiled, one tiled call of
// its n tokens; it returns their results and the sum of their times.
func (b *Backend) sweepLayoutTime(dt tensor.DType, data []byte, pack bool, s SweepShape, x []float32, n int, mv Knobs, tiledName string, tiled bool, reps int) ([2][]float32, time.Duration, error) {
	var got [2][]float32
	var ts []kernels.Tensor
	defer func() {
		for _, t := range ts {
			b.Free(t)
		}
	}()
	w, err := b.upload(tensor.Tensor{Name: "sweep", DType: dt, Shape: []int64{int64(s.Rows), int64(s.K)}, Data: data}, pack)
	if err != nil {
		return got, 0, err
	}
	ts = append(ts, w)
	if w.(*Tensor).repacked != pack {
		return got, 0, fmt.Errorf("%s: repacked %v, asked %v", s.Name, w.(*Tensor).repacked, pack)
	}
	tensors := func(rows int, x []float32) (xt, d *Tensor, err error) {
		a, err := b.NewTensor(tensor.F32, rows, s.K)
		if err == nil {
			ts = append(ts, a)
			err = b.SetF32(a, x)
		}
		if err != nil {
			return nil, nil, err
		}
		c, err := b.NewTensor(tensor.F32, rows, s.Rows)
		if err != nil {
			return nil, nil, err
		}
		ts = append(ts, c)
		return a.(*Tensor), c.(*Tensor), nil
	}
	x1, d1, err := tensors(1, x[:s.K])
	if err != nil {
		return got, 0, err
	}
	name, _ := b.matmulVariant(dt, 1, s.K)
	var total time.Duration
	got[0], total, err = b.sweepTime(b.matvec, name, mv, d1, x1, w.(*Tensor), reps)
	if err != nil || !tiled {
		return got, total, err
	}
	xn, dn, err := tensors(n, x)
	if err != nil {
		return got, 0, err
	}
	var t time.Duration
	got[1], t, err = b.sweepRun(dn, reps, func() { b.matmulDispatch(tiledName, []uint32{mmWG}, mmRows, mmToks, dn, xn, w.(*Tensor)) })
	return got, total + t, err
}
