package cpu

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/vkllm/vkllm/kernels"
	"github.com/vkllm/vkllm/kernels/kerneltest"
	"github.com/vkllm/vkllm/tensor"
)

// The fast path passes every op of the conformance suite; MatMul as
// kerneltest.MatMulQ8 (Q8_0, Q4_0, Q4_1, …: the emulated Q8-activation
// arithmetic at LimitF32Dot) and kerneltest.MatMulNotQ8 (every other
// dtype at LimitF32Dot), both with bitwise batch invariance.
func TestFastConformance(t *testing.T) {
	t.Logf("kernels: %s", SIMD())
	for _, threads := range []int{1, 3} {
		t.Run("threads="+string(rune('0'+threads)), func(t *testing.T) {
			b := NewWith(Options{Threads: threads})
			defer b.Close()
			for _, c := range []struct {
				name string
				fn   func(*testing.T, kernels.Backend)
			}{
				{"GetRows", kerneltest.GetRows},
				{"MatMulQ8", kerneltest.MatMulQ8},
				{"MatMulNotQ8", matMulNotQ8},
				{"MatMulBF16", matMulBF16},
				{"Add", kerneltest.Add},
				{"RMSNorm", kerneltest.RMSNorm},
				{"RoPE", kerneltest.RoPE},
				{"SwiGLU", kerneltest.SwiGLU},
				{"GateUpSwiGLU", kerneltest.GateUpSwiGLU},
				{"KVWrite", kerneltest.KVWrite},
				{"KVShift", kerneltest.KVShift},
				{"Attention", kerneltest.Attention},
				{"View", kerneltest.View},
			} {
				t.Run(c.name, func(t *testing.T) { c.fn(t, b) })
			}
			t.Run("AttentionStrict", func(t *testing.T) { kerneltest.AttentionStrict(t, b) })
			t.Run("AttentionInvariance", func(t *testing.T) { kerneltest.AttentionInvariance(t, b) })
			t.Run("MatMulFloatStrict", func(t *testing.T) { floatStrict(t, b) })
		})
	}
}

// matMulNotQ8 and matMulBF16: with AVX512_BF16 the fast path rounds
// activations to bfloat16 against BF16 weights (bf16act.go), whose truth
// is then kerneltest.MatMulBF16Act; without, BF16 is held to float32
// accuracy like F16.
func matMulNotQ8(t *testing.T, b kernels.Backend) {
	if BF16Activations() {
		kerneltest.MatMulNotQ8BF16(t, b)
	} else {
		kerneltest.MatMulNotQ8(t, b)
	}
}

func matMulBF16(t *testing.T, b kernels.Backend) {
	if !BF16Activations() {
		t.Skipf("kernels %s: BF16 weights meet float32 activations (checked by MatMulNotQ8)", SIMD())
	}
	kerneltest.MatMulBF16Act(t, b)
}

// floatStrict: F32, F16 and BF16 weights within LimitF32Dot of float64
// (BF16: of the activations rounded to bfloat16 where the fast path
// rounds them).
func floatStrict(t *testing.T, b *Backend) {
	for _, dt := range []tensor.DType{tensor.F32, tensor.F16, tensor.BF16} {
		for _, k := range []int{7, 96, 263, 1031} {
			w, _ := upload(t, b, dt, 19, k)
			deq := make([]float32, 19*k)
			if err := b.GetF32(w, deq); err != nil {
				t.Fatal(err)
			}
			for _, n := range []int{1, 5} {
				xs := make([]float32, n*k)
				for i := range xs {
					xs[i] = float32(math.Sin(float64(i)*0.37 + 1))
				}
				x, _ := b.NewTensor(tensor.F32, n, k)
				_ = b.SetF32(x, xs)
				d, _ := b.NewTensor(tensor.F32, n, 19)
				b.MatMul(d, x, w)
				got := make([]float32, n*19)
				_ = b.GetF32(d, got)
				var num, den float64
				for i := range n {
					for j := range 19 {
						var s float64
						for e := range k {
							xv := xs[i*k+e]
							if dt == tensor.BF16 && BF16Activations() {
								xv = kerneltest.RoundBF16(xv)
							}
							s += float64(xv) * float64(deq[j*k+e])
						}
						num += (float64(got[i*19+j]) - s) * (float64(got[i*19+j]) - s)
						den += s * s
					}
				}
				if e := num / den; !(e <= kerneltest.LimitF32Dot) {
					t.Errorf("%v n=%d k=%d: NMSE %.3g > %.3g", dt, n, k, e, kerneltest.LimitF32Dot)
				}
			}
		}
	}
}

// sumSquaresF64 (the fast RMSNorm's sum) at every length of the four
// partial sums' tail: integers, whose sums are exact in any order, give
// the exact value; random values are within float64 rounding of the
// one-running-sum order.
func TestSumSquaresF64(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for n := range 13 {
		ints, xs := make([]float32, n), make([]float32, n)
		var want, seq float64
		for i := range n {
			ints[i] = float32(i - 5)
			want += float64(i-5) * float64(i-5)
			xs[i] = float32(r.NormFloat64())
			seq += float64(xs[i]) * float64(xs[i])
		}
		if got := sumSquaresF64(ints); got != want {
			t.Errorf("n=%d integers: %v, want %v", n, got, want)
		}
		if got := sumSquaresF64(xs); math.Abs(got-seq) > 1e-15*seq {
			t.Errorf("n=%d: %v, one running sum %v", n, got, seq)
		}
	}
}

// TestExpSubSum: the fused softmax step (the assembly on AVX2) against
// its three steps (subtract, expF32, sumF64), bitwise for every weight
// and the sum, at every tail length around the eights and fours, with
// scores far below the maximum (the exp's underflow clamp) and m not
// the maximum (results above 1).
func TestExpSubSum(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for _, n := range []int{0, 1, 3, 4, 5, 7, 8, 9, 11, 12, 13, 15, 16, 17, 20, 23, 24, 31, 40, 63, 640, 1001} {
		for _, spread := range []float64{1, 8, 200} {
			x := make([]float32, n)
			for i := range x {
				x[i] = float32(r.NormFloat64() * spread)
			}
			for _, m := range []float32{maxF32(x), 0.5, -3} {
				got, want := slices.Clone(x), slices.Clone(x)
				gs := expSubSum(got, m)
				for i := range want {
					want[i] -= m
				}
				expF32(want)
				ws := sumF64(want)
				if math.Float64bits(gs) != math.Float64bits(ws) {
					t.Errorf("n=%d spread %v m %v: sum %v, want %v", n, spread, m, gs, ws)
				}
				for i := range want {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
						t.Errorf("n=%d spread %v m %v: x[%d] = %v, want %v", n, spread, m, i, got[i], want[i])
						break
					}
				}
			}
		}
	}
}
