package cpu

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/vkllm/vkllm/kernels/kerneltest"
)

// The BF16 kernels (tilebf16_amd64.s): the 4x4 and 4x1 tiles against the
// one-pair kernel, bitwise, at k with and without a tail past the last 16
// values and padded row strides; and the one-pair kernel against the
// float64 dot of the bfloat16 values.
func TestBF16KernelsBitwise(t *testing.T) {
	if bf16Act == nil {
		t.Skipf("kernels %s: no AVX512_BF16 kernels", SIMD())
	}
	r := rand.New(rand.NewPCG(13, 14))
	for _, k := range []int{1, 15, 16, 17, 48, 100, 1024, 2063} {
		for _, pad := range []int{0, 9} {
			ws := k + pad
			w, x := make([]uint16, 4*ws), make([]uint16, 4*ws)
			for i := range w {
				w[i] = roundBF16(float32(r.NormFloat64()))
				x[i] = roundBF16(float32(r.NormFloat64()))
			}
			one := func(row, col int) float32 { return bf16Act.one(w[row*ws:row*ws+k], x[col*ws:col*ws+k]) }
			var out [16]float32
			bf16Act.t4x4(w, ws, x, ws, k, &out)
			for row := range 4 {
				for col := range 4 {
					if got, want := out[4*row+col], one(row, col); math.Float32bits(got) != math.Float32bits(want) {
						t.Errorf("k=%d pad=%d 4x4 (%d, %d): %v, one pair %v", k, pad, row, col, got, want)
					}
				}
			}
			for col := range 4 {
				bf16Act.t4x1(w, ws, x[col*ws:], k, &out)
				for row := range 4 {
					if got, want := out[row], one(row, col); math.Float32bits(got) != math.Float32bits(want) {
						t.Errorf("k=%d pad=%d 4x1 (%d, %d): %v, one pair %v", k, pad, row, col, got, want)
					}
				}
			}
			var want, mag float64
			for e := range k {
				p := float64(bf16f(w[e])) * float64(bf16f(x[e]))
				want += p
				mag += math.Abs(p)
			}
			if got := one(0, 0); math.Abs(float64(got)-want) > 1e-6*mag {
				t.Errorf("k=%d: %v, float64 %v (Σ|p| %g)", k, got, want, mag)
			}
		}
	}
}

// roundBF16 (the backend's) is kerneltest.RoundBF16 (the suite's rule),
// at random values, halfway cases, the largest finite values, infinities
// and NaN.
func TestRoundBF16(t *testing.T) {
	r := rand.New(rand.NewPCG(15, 16))
	vals := []float32{0, float32(math.Copysign(0, -1)), 1, -1, math.MaxFloat32, -math.MaxFloat32,
		float32(math.Inf(1)), float32(math.Inf(-1)), math.SmallestNonzeroFloat32,
		math.Float32frombits(0x3f808000), math.Float32frombits(0x3f818000), math.Float32frombits(0x3f80c000)}
	for range 100000 {
		vals = append(vals, math.Float32frombits(r.Uint32()))
	}
	for _, v := range vals {
		got, want := bf16f(roundBF16(v)), kerneltest.RoundBF16(v)
		if v != v {
			if got == got {
				t.Errorf("%v (%#x): %v, want a NaN", v, math.Float32bits(v), got)
			}
			continue
		}
		if math.Float32bits(got) != math.Float32bits(want) {
			t.Errorf("%v (%#x): %v, kerneltest %v", v, math.Float32bits(v), got, want)
		}
	}
}
