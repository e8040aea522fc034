package kerneltest

import (
	"math"
	"testing"

	"github.com/vkllm/vkllm/kernels"
)

// GateUpSwiGLU checks kernels.GateUpSwiGLU (the backend's fused op where
// it is a kernels.GateUpSwiGLUer) on every weight type: gate =
// silu(x·Wgᵀ)·(x·Wuᵀ) bitwise what MatMul, MatMul, SwiGLU give on the same
// backend, for decode and batched-decode sizes and one prefill size (which
// a backend may leave to the composition).
func GateUpSwiGLU(t *testing.T, b kernels.Backend) {
	for _, dt := range weightTypes {
		t.Run(dt.String(), func(t *testing.T) {
			r := rng(36 + uint64(dt))
			for _, k := range rowLengths(dt) {
				for _, m := range []int{1, 19} {
					wg, _ := weight(t, b, r, dt, m, k)
					wu, _ := weight(t, b, r, dt, m, k)
					for _, n := range []int{1, 3, 17} {
						x := randn(r, n*k, 1)
						xt := newF32(t, b, x, n, k)
						gate, up := newF32(t, b, nil, n, m), newF32(t, b, nil, n, m)
						kernels.GateUpSwiGLU(b, gate, up, xt, wg, wu)
						got := read(t, b, gate, n*m)

						g2, u2 := newF32(t, b, nil, n, m), newF32(t, b, nil, n, m)
						b.MatMul(g2, xt, wg)
						b.MatMul(u2, xt, wu)
						b.SwiGLU(g2, g2, u2)
						want := read(t, b, g2, n*m)
						for i := range want {
							if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
								t.Fatalf("GateUpSwiGLU %v %s: element %d = %v, MatMul, MatMul, SwiGLU give %v", dt, shapeName(n, k, m), i, got[i], want[i])
							}
						}
					}
				}
			}
		})
	}
}
