package kerneltest

import (
	"math"
	"testing"

	"github.com/vkllm/vkllm/kernels"
	"github.com/vkllm/vkllm/tensor"
)

// refInvFreq is the frequency formula of transformers, in float64:
// θᵢ = theta^(−2i/d), then divided by FreqFactors, or scaled linearly, or
// by _compute_llama3_parameters.
func refInvFreq(p kernels.RoPE) []float64 {
	f := make([]float64, p.HeadDim/2)
	for i := range f {
		f[i] = 1 / math.Pow(p.Theta, float64(2*i)/float64(p.HeadDim))
		switch {
		case p.FreqFactors != nil:
			f[i] /= float64(p.FreqFactors[i])
		case p.Scaling == kernels.RoPEScaleLinear:
			f[i] /= p.Factor
		case p.Scaling == kernels.RoPEScaleLlama3:
			old := float64(p.OriginalMaxPositions)
			wavelen := 2 * math.Pi / f[i]
			switch {
			case wavelen < old/p.HighFreqFactor: // high frequencies: kept
			case wavelen > old/p.LowFreqFactor: // low: divided by factor
				f[i] /= p.Factor
			default: // between: interpolated
				s := (old/wavelen - p.LowFreqFactor) / (p.HighFreqFactor - p.LowFreqFactor)
				f[i] = (1-s)*f[i]/p.Factor + s*f[i]
			}
		}
	}
	return f
}

// refRotate rotates one head x (HeadDim) to position pos.
func refRotate(x []float64, pos float64, p kernels.RoPE) {
	inv := refInvFreq(p)
	half := len(inv)
	for i, f := range inv {
		c, s := math.Cos(pos*f), math.Sin(pos*f)
		a, b := i, i+half // Neox: halves
		if p.Style == kernels.RoPENormal {
			a, b = 2*i, 2*i+1 // Normal: adjacent pairs
		}
		x0, x1 := x[a], x[b]
		x[a], x[b] = x0*c-x1*s, x1*c+x0*s
	}
}

// ropeCases covers both layouts, three thetas, linear and llama3 scaling
// (an original context of 64 puts frequencies in all three llama3 bands)
// and llama.cpp's freq factors.
func ropeCases() []kernels.RoPE {
	factors := make([]float32, 32)
	for i := range factors {
		factors[i] = 1 + float32(i)/8
	}
	return []kernels.RoPE{
		{Style: kernels.RoPENeox, HeadDim: 64, Theta: 1e6},
		{Style: kernels.RoPENormal, HeadDim: 64, Theta: 10000},
		{Style: kernels.RoPENeox, HeadDim: 32, Theta: 10000, Scaling: kernels.RoPEScaleLinear, Factor: 4},
		{Style: kernels.RoPENormal, HeadDim: 128, Theta: 500000, Scaling: kernels.RoPEScaleLlama3, Factor: 8,
			LowFreqFactor: 1, HighFreqFactor: 4, OriginalMaxPositions: 64},
		{Style: kernels.RoPENeox, HeadDim: 64, Theta: 500000, Scaling: kernels.RoPEScaleLlama3, Factor: 32,
			LowFreqFactor: 1, HighFreqFactor: 4, OriginalMaxPositions: 64},
		{Style: kernels.RoPENormal, HeadDim: 64, Theta: 500000, FreqFactors: factors},
	}
}

func ropeName(p kernels.RoPE) string {
	s := "neox"
	if p.Style == kernels.RoPENormal {
		s = "normal"
	}
	s += " d" + shapeName(p.HeadDim)
	switch {
	case p.FreqFactors != nil:
		s += " freq factors"
	case p.Scaling == kernels.RoPEScaleLinear:
		s += " linear"
	case p.Scaling == kernels.RoPEScaleLlama3:
		s += " llama3"
	}
	return s
}

// RoPE rotates x (5, 3·HeadDim) at positions 0…3000 for every case of
// ropeCases.
func RoPE(t *testing.T, b kernels.Backend) {
	r := rng(40)
	pos := []int32{0, 1, 7, 100, 3000}
	for _, p := range ropeCases() {
		n, heads := len(pos), 3
		dim := heads * p.HeadDim
		x := randn(r, n*dim, 1)
		xt := newF32(t, b, x, n, dim)
		b.RoPE(xt, newI32(t, b, pos), p)
		want := wide(x)
		for i := range n {
			for h := range heads {
				refRotate(want[i*dim+h*p.HeadDim:i*dim+(h+1)*p.HeadDim], float64(pos[i]), p)
			}
		}
		check(t, "RoPE "+ropeName(p), read(t, b, xt, n*dim), want, LimitRoPE)
	}
}

// KVShift rotates some rows of F32 and F16 K caches by positive and
// negative deltas; the other rows must stay as they were.
func KVShift(t *testing.T, b kernels.Backend) {
	r := rng(41)
	for _, dt := range []tensor.DType{tensor.F32, tensor.F16} {
		for _, p := range ropeCases() {
			cells, kvHeads := 7, 2
			dim := kvHeads * p.HeadDim
			init := randn(r, cells*dim, 1)
			k := newCache(t, b, dt, init, cells, dim)
			which, delta := []int32{1, 4, 6, 5}, []int32{10, -3, 2900, 0}
			b.KVShift(k, newI32(t, b, which), newI32(t, b, delta), p)
			stored := init
			if dt == tensor.F16 {
				stored = half(init)
			}
			want := wide(stored)
			for i, c := range which {
				for h := range kvHeads {
					at := int(c)*dim + h*p.HeadDim
					refRotate(want[at:at+p.HeadDim], float64(delta[i]), p)
				}
			}
			check(t, "KVShift "+dt.String()+" "+ropeName(p), read(t, b, k, cells*dim), want, LimitRoPE)
		}
	}
}

// RoPEKVWrite checks kernels.RoPEKVWrite (the backend's fused op where it
// is a kernels.RoPEKVWriter) against RoPE, RoPE, KVWrite, KVWrite on the
// same backend, bitwise: q, k and both caches (F32 and F16), for every
// RoPE case, with grouped KV heads.
func RoPEKVWrite(t *testing.T, b kernels.Backend) {
	r := rng(42)
	pos, where := []int32{0, 7, 3000}, []int32{5, 0, 3}
	const cells, heads, kvHeads = 6, 4, 2
	for _, dt := range []tensor.DType{tensor.F32, tensor.F16} {
		for _, p := range ropeCases() {
			n, dim, kdim := len(pos), heads*p.HeadDim, kvHeads*p.HeadDim
			q, k, v := randn(r, n*dim, 1), randn(r, n*kdim, 1), randn(r, n*kdim, 1)
			kInit, vInit := randn(r, cells*kdim, 1), randn(r, cells*kdim, 1)
			run := func(fused bool) [4][]float32 {
				qt, kt, vt := newF32(t, b, q, n, dim), newF32(t, b, k, n, kdim), newF32(t, b, v, n, kdim)
				kc, vc := newCache(t, b, dt, kInit, cells, kdim), newCache(t, b, dt, vInit, cells, kdim)
				pt, ct := newI32(t, b, pos), newI32(t, b, where)
				if fused {
					kernels.RoPEKVWrite(b, qt, kt, vt, pt, kc, vc, ct, p)
				} else {
					b.RoPE(qt, pt, p)
					b.RoPE(kt, pt, p)
					b.KVWrite(kc, kt, ct)
					b.KVWrite(vc, vt, ct)
				}
				return [4][]float32{read(t, b, qt, n*dim), read(t, b, kt, n*kdim), read(t, b, kc, cells*kdim), read(t, b, vc, cells*kdim)}
			}
			got, want := run(true), run(false)
			for j, name := range []string{"q", "k", "k cache", "v cache"} {
				for i := range want[j] {
					if math.Float32bits(got[j][i]) != math.Float32bits(want[j][i]) {
						t.Fatalf("RoPEKVWrite %v %s: %s[%d] = %v, the four ops give %v", dt, ropeName(p), name, i, got[j][i], want[j][i])
					}
				}
			}
		}
	}
}
