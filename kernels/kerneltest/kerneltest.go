package kerneltest

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/vkllm/vkllm/kernels"
	"github.com/vkllm/vkllm/tensor"
)

// NMSE limits; the package documentation says why each is what it is.
const (
	LimitExact  = 1e-12
	LimitF16    = 0x1p-22
	LimitMath   = 1e-10
	LimitRoPE   = 1e-6
	LimitF32Dot = 1e-9
	LimitQuant  = 5e-4
)

// All runs every op's test as a subtest.
func All(t *testing.T, b kernels.Backend) {
	for _, c := range []struct {
		name string
		fn   func(*testing.T, kernels.Backend)
	}{
		{"GetRows", GetRows},
		{"MatMul", MatMul},
		{"Add", Add},
		{"RMSNorm", RMSNorm},
		{"AddRMSNorm", AddRMSNorm},
		{"RoPE", RoPE},
		{"RoPEKVWrite", RoPEKVWrite},
		{"SwiGLU", SwiGLU},
		{"GateUpSwiGLU", GateUpSwiGLU},
		{"KVWrite", KVWrite},
		{"KVShift", KVShift},
		{"Attention", Attention},
		{"View", View},
	} {
		t.Run(c.name, func(t *testing.T) { c.fn(t, b) })
	}
}

// NMSE is Σ(got − want)² / Σ want², or Σ(got − want)² when want is all
// zeros. len(got) must equal len(want).
func NMSE(got []float32, want []float64) float64 {
	var num, den float64
	for i, w := range want {
		d := float64(got[i]) - w
		num += d * d
		den += w * w
	}
	if den == 0 {
		return num
	}
	return num / den
}

// check fails t unless got matches want within limit (NMSE) and has NaNs
// exactly where want has them.
func check(t *testing.T, what string, got []float32, want []float64, limit float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	for i, v := range got {
		if math.IsNaN(float64(v)) != math.IsNaN(want[i]) || math.IsInf(float64(v), 0) != math.IsInf(want[i], 0) {
			t.Fatalf("%s: element %d = %v, want %v", what, i, v, want[i])
		}
	}
	e := NMSE(got, want)
	t.Logf("%s: NMSE %.3g (limit %.3g)", what, e, limit)
	if !(e <= limit) {
		t.Errorf("%s: NMSE %.3g > %.3g", what, e, limit)
	}
}

// rng is the suite's source of randomness: fixed seeds, so a failure
// reproduces.
func rng(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 0x6b65726e656c)) }

// randn returns n normal values of standard deviation sd.
func randn(r *rand.Rand, n int, sd float64) []float32 {
	out := make([]float32, n)
	for i := range out {
		out[i] = float32(r.NormFloat64() * sd)
	}
	return out
}

// wide converts to float64 (the reference's precision).
func wide(x []float32) []float64 {
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = float64(v)
	}
	return out
}

// newF32 makes an F32 tensor of the shape, filled with data unless nil.
func newF32(t *testing.T, b kernels.Backend, data []float32, shape ...int) kernels.Tensor {
	t.Helper()
	x, err := b.NewTensor(tensor.F32, shape...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Free(x) })
	if data != nil {
		if err := b.SetF32(x, data); err != nil {
			t.Fatal(err)
		}
	}
	return x
}

// newI32 makes an I32 vector holding data.
func newI32(t *testing.T, b kernels.Backend, data []int32) kernels.Tensor {
	t.Helper()
	x, err := b.NewTensor(tensor.I32, len(data))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Free(x) })
	if err := b.SetI32(x, data); err != nil {
		t.Fatal(err)
	}
	return x
}

// read returns the n values of x as float32.
func read(t *testing.T, b kernels.Backend, x kernels.Tensor, n int) []float32 {
	t.Helper()
	out := make([]float32, n)
	if err := b.GetF32(x, out); err != nil {
		t.Fatal(err)
	}
	return out
}

func shapeName(dims ...int) string {
	s := ""
	for i, d := range dims {
		if i > 0 {
			s += "x"
		}
		s += fmt.Sprint(d)
	}
	return s
}
