package kerneltest

import (
	"math"
	"slices"
	"testing"

	"github.com/vkllm/vkllm/kernels"
	"github.com/vkllm/vkllm/tensor"
)

// MatMulQ8 is MatMul for a backend that multiplies Q8_0, Q4_0, Q4_1, Q4_K,
// Q6_K, IQ4_NL, IQ4_XS, Q5_0, Q5_1, Q5_K, Q3_K and Q2_K weights by
// activations quantised to 8 bits per block of 32, as
// llama.cpp's vec_dot_q8_0_q8_0 / q4_0_q8_0 / q4_1_q8_1 do (llama.cpp
// quantises per 256 for the K-quants; this suite's rule is per 32 for
// all). Its
// truth is not the float32 product but the quantised arithmetic: the
// exactly dequantised weight times the dequantised activations
// (d·q per element), summed in float64 (refMatMulQ8), held to
// LimitF32Dot: only the backend's float32 rounding of block sums is
// allowed, never a different quantisation. n in {1, 3, 17} (batch
// invariance is checked bitwise too), m in {1, 19}, odd k.
//
// The activation rule (the backend's must match it exactly):
//
//	d = max|x| / 127 in float32, id = 1/d (0 when d = 0),
//	q = round(x·id) with halves away from zero (x·id rounded to float32 first).
func MatMulQ8(t *testing.T, b kernels.Backend) { MatMulQ8Types(t, b, q8Types) }

// MatMulQ8Types is MatMulQ8 for the weight dtypes types only, for a
// backend that quantises activations against those (and computes in
// float32 against the rest: MatMulNotQ8's complement does not apply).
func MatMulQ8Types(t *testing.T, b kernels.Backend, types []tensor.DType) {
	for _, dt := range types {
		t.Run(dt.String(), func(t *testing.T) {
			r := rng(70 + uint64(dt))
			ks := []int{32, 96, 288, 1056}
			if dt.BlockSize() == 256 {
				ks = []int{256, 768}
			}
			for _, k := range ks {
				for _, m := range []int{1, 19} {
					w, deq := weight(t, b, r, dt, m, k)
					for _, n := range []int{1, 3, 17} {
						x := randn(r, n*k, 1)
						if n == 3 {
							clear(x[k : k+32]) // a block of zeros: d = 0
						}
						d := newF32(t, b, nil, n, m)
						b.MatMul(d, newF32(t, b, x, n, k), w)
						check(t, "MatMulQ8 "+shapeName(n, k, m), read(t, b, d, n*m), refMatMulQ8(x, deq, n, k, m), LimitF32Dot)
					}
				}
			}
			batchInvariance(t, b, r, dt, decodeSizes.invN, decodeSizes.invMs[0], decodeSizes.parts)
		})
	}
}

// QuantizeQ8 quantises x (a multiple of 32 long) by the rule above:
// q (len(x)) and the block scales d (len(x)/32).
func QuantizeQ8(x []float32) (q []int8, d []float32) {
	q, d = make([]int8, len(x)), make([]float32, len(x)/32)
	for b := range d {
		var amax float32
		for _, v := range x[b*32 : b*32+32] {
			amax = max(amax, float32(math.Abs(float64(v))))
		}
		d[b] = amax / 127
		var id float32
		if d[b] != 0 {
			id = 1 / d[b]
		}
		for i, v := range x[b*32 : b*32+32] {
			p := v * id
			q[b*32+i] = int8(math.Round(float64(p)))
		}
	}
	return q, d
}

// refMatMulQ8 is x̂ (n, k) · wᵀ, w (m, k) the dequantised weight and x̂
// the activations quantised by QuantizeQ8 and dequantised (d·q), summed
// in float64.
func refMatMulQ8(x, w []float32, n, k, m int) []float64 {
	out := make([]float64, n*m)
	for i := range n {
		q, d := QuantizeQ8(x[i*k : (i+1)*k])
		for j := range m {
			var s float64
			for e := range k {
				s += float64(d[e/32]) * float64(q[e]) * float64(w[j*k+e]) // d·q exact in float64
			}
			out[i*m+j] = s
		}
	}
	return out
}

// q8Types are the weight dtypes MatMulQ8 covers.
var q8Types = []tensor.DType{tensor.Q8_0, tensor.Q4_0, tensor.Q4_1, tensor.Q4_K, tensor.Q6_K,
	tensor.IQ4_NL, tensor.IQ4_XS, tensor.Q5_0, tensor.Q5_1, tensor.Q5_K, tensor.Q3_K, tensor.Q2_K}

func q8Type(dt tensor.DType) bool { return slices.Contains(q8Types, dt) }

// MatMulNotQ8 is MatMulStrict (LimitF32Dot against float64 sums over the
// exactly dequantised weight, and bitwise batch invariance) for every
// weight dtype but those of MatMulQ8: the complement that a backend
// quantising activations only for those must still hold to float32
// accuracy.
//
// kerneltest.MatMul's LimitQuant is not used for such a backend: with
// m = 1 it averages over as few as 3 dot products, and the 8-bit
// activations' error (NMSE ≈ 3e-5 on average) exceeds 5e-4 on some of
// those draws. MatMulQ8 holds the quantised dtypes to their own
// arithmetic at LimitF32Dot instead.
func MatMulNotQ8(t *testing.T, b kernels.Backend) { matMulNot(t, b, q8Type) }

// MatMulNotQ8BF16 is MatMulNotQ8 without BF16 weights, for a backend that
// also rounds activations to bfloat16 against those (MatMulBF16Act).
func MatMulNotQ8BF16(t *testing.T, b kernels.Backend) {
	matMulNot(t, b, func(dt tensor.DType) bool { return q8Type(dt) || dt == tensor.BF16 })
}

// MatMulBF16Act is MatMul for a backend that multiplies BF16 weights by
// activations rounded to bfloat16 (to nearest even), as llama.cpp does
// with VDPBF16PS: its truth is the weight times the rounded activations
// summed in float64, held to LimitF32Dot (a product of two bfloat16s is
// exact in float32, so only the sums' rounding is allowed), with bitwise
// batch invariance. n in {1, 3, 17}, m in {1, 19}, odd k.
func MatMulBF16Act(t *testing.T, b kernels.Backend) {
	r := rng(90)
	for _, k := range append(rowLengths(tensor.BF16), 1031) {
		for _, m := range []int{1, 19} {
			w, deq := weight(t, b, r, tensor.BF16, m, k)
			for _, n := range []int{1, 3, 17} {
				x := randn(r, n*k, 1)
				xr := make([]float32, len(x))
				for i, v := range x {
					xr[i] = RoundBF16(v)
				}
				d := newF32(t, b, nil, n, m)
				b.MatMul(d, newF32(t, b, x, n, k), w)
				check(t, "MatMulBF16Act "+shapeName(n, k, m), read(t, b, d, n*m), refMatMul(xr, deq, n, k, m), LimitF32Dot)
			}
		}
	}
	batchInvariance(t, b, r, tensor.BF16, decodeSizes.invN, decodeSizes.invMs[0], decodeSizes.parts)
}

// RoundBF16 is v rounded to bfloat16 (nearest even), as a float32.
func RoundBF16(v float32) float32 {
	u := math.Float32bits(v)
	if u&0x7fffffff > 0x7f800000 {
		return v
	}
	u += 0x7fff + (u>>16)&1
	return math.Float32frombits(u &^ 0xffff)
}

func matMulNot(t *testing.T, b kernels.Backend, skip func(tensor.DType) bool) {
	for _, dt := range weightTypes {
		if skip(dt) {
			continue
		}
		t.Run(dt.String(), func(t *testing.T) {
			r := rng(20 + uint64(dt))
			for _, k := range rowLengths(dt) {
				for _, m := range []int{1, 19} {
					w, deq := weight(t, b, r, dt, m, k)
					for _, n := range []int{1, 3, 17} {
						x := randn(r, n*k, 1)
						d := newF32(t, b, nil, n, m)
						b.MatMul(d, newF32(t, b, x, n, k), w)
						check(t, "MatMul "+shapeName(n, k, m), read(t, b, d, n*m), refMatMul(x, deq, n, k, m), LimitF32Dot)
					}
				}
			}
			batchInvariance(t, b, r, dt, decodeSizes.invN, decodeSizes.invMs[0], decodeSizes.parts)
		})
	}
}
