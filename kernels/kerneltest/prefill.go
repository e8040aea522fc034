package kerneltest

import (
	"math"
	"testing"

	"github.com/vkllm/vkllm/kernels"
	"github.com/vkllm/vkllm/tensor"
)

// MatMulPrefill is MatMul at prefill sizes: n in {16, 37} tokens (a
// backend's tiled kernel takes many tokens at once, and 37 is no multiple
// of a tile), m in {24, 45} (odd multiples of 8 rows and not) and the odd
// row lengths of MatMul, for every weight dtype, with MatMul's limits. It
// then checks batch invariance bitwise: every row of the 37-token product
// equals the same row multiplied alone.
func MatMulPrefill(t *testing.T, b kernels.Backend) { matMulPrefill(t, b, false) }

// MatMulPrefillStrict is MatMulPrefill with LimitF32Dot for every dtype
// (see MatMulStrict).
func MatMulPrefillStrict(t *testing.T, b kernels.Backend) { matMulPrefill(t, b, true) }

func matMulPrefill(t *testing.T, b kernels.Backend, strict bool) {
	for _, dt := range weightTypes {
		t.Run(dt.String(), func(t *testing.T) {
			limit := LimitQuant
			if strict || dt == tensor.F32 {
				limit = LimitF32Dot
			}
			r := rng(80 + uint64(dt))
			for _, k := range rowLengths(dt) {
				for _, m := range []int{24, 45} {
					w, deq := weight(t, b, r, dt, m, k)
					for _, n := range []int{16, 37} {
						x := randn(r, n*k, 1)
						d := newF32(t, b, nil, n, m)
						b.MatMul(d, newF32(t, b, x, n, k), w)
						got := read(t, b, d, n*m)
						check(t, "MatMul "+shapeName(n, k, m), got, refMatMul(x, deq, n, k, m), limit)
						if n != 37 || k != rowLengths(dt)[len(rowLengths(dt))-1] {
							continue
						}
						for i := range n {
							one := newF32(t, b, nil, 1, m)
							b.MatMul(one, newF32(t, b, x[i*k:(i+1)*k], 1, k), w)
							for j, v := range read(t, b, one, m) {
								if want := got[i*m+j]; math.Float32bits(v) != math.Float32bits(want) {
									t.Fatalf("%v %s: row %d alone gives element %d = %v, inside the batch %v",
										dt, shapeName(n, k, m), i, j, v, want)
								}
							}
						}
					}
				}
			}
		})
	}
}
