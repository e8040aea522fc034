package cpu

import (
	"math"

	"github.com/vkllm/vkllm/kernels"
	"github.com/vkllm/vkllm/tensor"
	"github.com/x448/float16"
)

// InvFreq returns the HeadDim/2 rotation frequencies of p, computed as
// transformers does in float32 (inv_freq = 1 / theta^(2i/d)), then scaled
// (linear, llama3) or divided by FreqFactors (llama.cpp's rope_freqs).
func InvFreq(p kernels.RoPE) []float32 {
	half := p.HeadDim / 2
	f := make([]float32, half)
	for i := range f {
		exp := float32(2*i) / float32(p.HeadDim)
		f[i] = 1 / float32(math.Pow(p.Theta, float64(exp)))
	}
	switch {
	case p.FreqFactors != nil:
		for i := range f {
			f[i] /= p.FreqFactors[i]
		}
	case p.Scaling == kernels.RoPEScaleLinear:
		for i := range f {
			f[i] /= float32(p.Factor)
		}
	case p.Scaling == kernels.RoPEScaleLlama3:
		// transformers' _compute_llama3_parameters.
		old := float64(p.OriginalMaxPositions)
		lowWave, highWave := old/p.LowFreqFactor, old/p.HighFreqFactor
		for i, inv := range f {
			wave := 2 * math.Pi / float64(inv)
			llama := float64(inv)
			if wave > lowWave {
				llama = float64(inv) / p.Factor
			}
			if !(wave < highWave) && !(wave > lowWave) { // medium frequencies: smooth
				smooth := (old/wave - p.LowFreqFactor) / (p.HighFreqFactor - p.LowFreqFactor)
				llama = (1-smooth)*llama/p.Factor + smooth*llama
			}
			f[i] = float32(llama)
		}
	}
	return f
}

// rotate rotates one head vector x (HeadDim) to position pos.
func rotate(x []float32, pos float32, inv []float32, style kernels.RoPEStyle) {
	half := len(inv)
	for i, f := range inv {
		angle := pos * f // float32, as transformers
		c, s := float32(math.Cos(float64(angle))), float32(math.Sin(float64(angle)))
		var a, b *float32
		if style == kernels.RoPENeox {
			a, b = &x[i], &x[i+half]
		} else {
			a, b = &x[2*i], &x[2*i+1]
		}
		x0, x1 := *a, *b
		*a = x0*c - x1*s
		*b = x1*c + x0*s
	}
}

func (b *Backend) RoPE(x, pos kernels.Tensor, p kernels.RoPE) {
	t, ps := f32(x), i32(pos)
	n, dim := t.rows(), t.cols()
	must(p.HeadDim > 0 && p.HeadDim%2 == 0 && dim%p.HeadDim == 0 && len(ps.i32) == n, "RoPE: x %v, %d positions, head dim %d", t.shape, len(ps.i32), p.HeadDim)
	must(p.FreqFactors == nil || len(p.FreqFactors) == p.HeadDim/2, "RoPE: %d freq factors for head dim %d", len(p.FreqFactors), p.HeadDim)
	inv := InvFreq(p)
	for i := 0; i < n; i++ {
		row := t.f32[i*dim : (i+1)*dim]
		for h := 0; h < dim; h += p.HeadDim {
			rotate(row[h:h+p.HeadDim], float32(ps.i32[i]), inv, p.Style)
		}
	}
}

func (b *Backend) KVShift(cache, cells, delta kernels.Tensor, p kernels.RoPE) {
	c, cl, dl := cache.(*Tensor), i32(cells), i32(delta)
	must(len(cl.i32) == len(dl.i32), "KVShift: %d cells, %d deltas", len(cl.i32), len(dl.i32))
	dim := c.cols()
	must(dim%p.HeadDim == 0, "KVShift: cache %v, head dim %d", c.shape, p.HeadDim)
	inv := InvFreq(p)
	row := make([]float32, dim)
	for i, ci := range cl.i32 {
		must(ci >= 0 && int(ci) < c.rows(), "KVShift: cell %d outside %d", ci, c.rows())
		c.row(int(ci), row)
		for h := 0; h < dim; h += p.HeadDim {
			rotate(row[h:h+p.HeadDim], float32(dl.i32[i]), inv, p.Style)
		}
		switch c.dt {
		case tensor.F32:
			copy(c.f32[int(ci)*dim:], row)
		case tensor.F16:
			for j, v := range row {
				c.f16[int(ci)*dim+j] = float16.Fromfloat32(v).Bits()
			}
		}
	}
}
