package kerneltest

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/vkllm/vkllm/kernels"
	"github.com/vkllm/vkllm/tensor"
)

// GetRows gathers rows, repeated and out of order, from tables of every
// weight dtype and from an F32 tensor.
func GetRows(t *testing.T, b kernels.Backend) {
	ids := []int32{6, 0, 3, 3, 1}
	gather := func(t *testing.T, table kernels.Tensor, vals []float32, cols int) {
		d := newF32(t, b, nil, len(ids), cols)
		b.GetRows(d, table, newI32(t, b, ids))
		var want []float64
		for _, id := range ids {
			want = append(want, wide(vals[int(id)*cols:(int(id)+1)*cols])...)
		}
		check(t, "GetRows", read(t, b, d, len(want)), want, LimitExact)
	}
	for _, dt := range weightTypes {
		t.Run(dt.String(), func(t *testing.T) {
			r := rng(10 + uint64(dt))
			for _, cols := range rowLengths(dt) {
				w, deq := weight(t, b, r, dt, 7, cols)
				gather(t, w, deq, cols)
			}
		})
	}
	t.Run("F32 tensor", func(t *testing.T) {
		vals := randn(rng(11), 7*33, 1)
		gather(t, newF32(t, b, vals, 7, 33), vals, 33)
	})
}

// MatMul checks dst (n, m) = x (n, k) · wᵀ for every weight dtype, n in
// {1, 3, 17}, m in {1, 19} and odd k, against float64 sums over the
// dequantised weight: LimitF32Dot for F32 weights, LimitQuant for the
// others. It then checks batch invariance bitwise: rows 0, 7 and 16 of a
// 17-row product, and rows 5…7 as a batch of 3, equal the same rows
// multiplied alone.
func MatMul(t *testing.T, b kernels.Backend) { matMul(t, b, false, decodeSizes) }

// MatMulStrict is MatMul with LimitF32Dot for every dtype, for backends
// that neither round activations nor approximate dequantisation. It does
// not check batch invariance.
func MatMulStrict(t *testing.T, b kernels.Backend) { matMul(t, b, true, decodeSizes) }

// matMulSizes are the shapes a matMul run covers and its batch-invariance
// check: an invN-row product, for each m of invMs, against the row ranges
// of parts multiplied alone (also under strict when invStrict).
type matMulSizes struct {
	seed      uint64
	ns, ms    []int
	invN      int
	invMs     []int
	parts     [][2]int
	invStrict bool
}

var decodeSizes = matMulSizes{seed: 20, ns: []int{1, 3, 17}, ms: []int{1, 19},
	invN: 17, invMs: []int{19}, parts: [][2]int{{0, 1}, {7, 8}, {16, 17}, {5, 8}}}

func matMul(t *testing.T, b kernels.Backend, strict bool, sz matMulSizes) {
	for _, dt := range weightTypes {
		t.Run(dt.String(), func(t *testing.T) {
			limit := LimitQuant
			if strict || dt == tensor.F32 {
				limit = LimitF32Dot
			}
			r := rng(sz.seed + uint64(dt))
			for _, k := range rowLengths(dt) {
				for _, m := range sz.ms {
					w, deq := weight(t, b, r, dt, m, k)
					for _, n := range sz.ns {
						x := randn(r, n*k, 1)
						d := newF32(t, b, nil, n, m)
						b.MatMul(d, newF32(t, b, x, n, k), w)
						check(t, "MatMul "+shapeName(n, k, m), read(t, b, d, n*m), refMatMul(x, deq, n, k, m), limit)
					}
				}
			}
			if !strict || sz.invStrict {
				for _, m := range sz.invMs {
					batchInvariance(t, b, r, dt, sz.invN, m, sz.parts)
				}
			}
		})
	}
}

// refMatMul is x (n, k) · wᵀ, w (m, k), summed in float64.
func refMatMul(x, w []float32, n, k, m int) []float64 {
	out := make([]float64, n*m)
	for i := range n {
		for j := range m {
			var s float64
			for e := range k {
				s += float64(x[i*k+e]) * float64(w[j*k+e])
			}
			out[i*m+j] = s
		}
	}
	return out
}

// batchInvariance: the row ranges parts of an n-row MatMul with the
// longest row length, each multiplied alone, equal the same rows inside
// the batch bitwise.
func batchInvariance(t *testing.T, b kernels.Backend, r *rand.Rand, dt tensor.DType, n, m int, parts [][2]int) {
	t.Helper()
	ks := rowLengths(dt)
	k := ks[len(ks)-1]
	w, _ := weight(t, b, r, dt, m, k)
	x := randn(r, n*k, 1)
	mul := func(lo, hi int) []float32 {
		d := newF32(t, b, nil, hi-lo, m)
		b.MatMul(d, newF32(t, b, x[lo*k:hi*k], hi-lo, k), w)
		return read(t, b, d, (hi-lo)*m)
	}
	all := mul(0, n)
	for _, part := range parts {
		got := mul(part[0], part[1])
		for i, v := range got {
			if want := all[part[0]*m+i]; math.Float32bits(v) != math.Float32bits(want) {
				t.Fatalf("%v %s: rows %d…%d alone give element %d = %v, inside the batch of %d %v",
					dt, shapeName(n, k, m), part[0], part[1]-1, i, v, n, want)
			}
		}
	}
}
