//go:build amd64 && !purego

package cpu

import "golang.org/x/sys/cpu"

// Implemented in tilebf16_amd64.s.

//go:noescape
func dotBF16t4x4DP(w *uint16, ws int, x *uint16, xs int, n16 int, out *float32)

//go:noescape
func dotBF16t4x1DP(w *uint16, ws int, x *uint16, n16 int, out *float32)

//go:noescape
func dotBF16DP(w, x *uint16, n16 int) float32

// hasBF16 reports whether the BF16 kernels (tilebf16_amd64.s: VDPBF16PS,
// EVEX registers Y16…Y31) can run.
var hasBF16 = hasAVX512 && cpu.X86.HasAVX512BF16

func useBF16() {
	simd += "+avx512bf16"
	bf16Act = &bf16Kernels{
		t4x4: func(w []uint16, ws int, x []uint16, xs, k int, out *[16]float32) {
			_, _ = w[3*ws+k-1], x[3*xs+k-1]
			k16 := k &^ 15
			*out = [16]float32{}
			if k16 > 0 {
				dotBF16t4x4DP(&w[0], ws, &x[0], xs, k16/16, &out[0])
			}
			if k16 < k {
				for r := range 4 {
					for c := range 4 {
						out[4*r+c] = bf16Tail(w[r*ws:r*ws+k], x[c*xs:c*xs+k], k16, out[4*r+c])
					}
				}
			}
		},
		t4x1: func(w []uint16, ws int, x []uint16, k int, out *[16]float32) {
			_, _ = w[3*ws+k-1], x[k-1]
			k16 := k &^ 15
			*out = [16]float32{}
			if k16 > 0 {
				dotBF16t4x1DP(&w[0], ws, &x[0], k16/16, &out[0])
			}
			if k16 < k {
				for r := range 4 {
					out[r] = bf16Tail(w[r*ws:r*ws+k], x[:k], k16, out[r])
				}
			}
		},
		one: func(w, x []uint16) float32 {
			k := len(x)
			_ = w[k-1]
			k16 := k &^ 15
			var s float32
			if k16 > 0 {
				s = dotBF16DP(&w[0], &x[0], k16/16)
			}
			return bf16Tail(w[:k], x, k16, s)
		},
	}
}
