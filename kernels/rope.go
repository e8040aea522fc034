package kernels

import "math"

// InvFreq returns the HeadDim/2 rotation frequencies of p, rounded step by
// step in float32 as transformers computes them (modeling_rope_utils.py):
//
//	inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2).float() / dim))
//
// then divided by FreqFactors (llama.cpp's rope_freqs) when set, else
// scaled: linear divides by Factor; llama3 is _compute_llama3_parameters,
// where torch evaluates `c / t` for a tensor t as reciprocal(t) · c.
func (p RoPE) InvFreq() []float32 {
	half := p.HeadDim / 2
	base := float32(p.Theta)
	f := make([]float32, half)
	for i := range f {
		exp := float32(2*i) / float32(p.HeadDim)
		f[i] = 1 / float32(math.Pow(float64(base), float64(exp)))
	}
	switch {
	case p.FreqFactors != nil:
		for i := range f {
			f[i] /= p.FreqFactors[i]
		}
	case p.Scaling == RoPEScaleLinear:
		for i := range f {
			f[i] /= float32(p.Factor)
		}
	case p.Scaling == RoPEScaleLlama3:
		factor := float32(p.Factor)
		old := float32(p.OriginalMaxPositions)
		lowWavelen := float32(float64(p.OriginalMaxPositions) / p.LowFreqFactor)
		highWavelen := float32(float64(p.OriginalMaxPositions) / p.HighFreqFactor)
		low, span := float32(p.LowFreqFactor), float32(p.HighFreqFactor-p.LowFreqFactor)
		for i, inv := range f {
			wavelen := (1 / inv) * float32(2*math.Pi) // 2π / inv_freq
			llama := inv
			if wavelen > lowWavelen { // low frequencies: divided by factor
				llama = inv / factor
			}
			if !(wavelen < highWavelen) && !(wavelen > lowWavelen) { // medium: interpolated
				smooth := ((1/wavelen)*old - low) / span
				llama = float32(float32((1-smooth)*llama)/factor) + float32(smooth*llama)
			}
			f[i] = llama
		}
	}
	return f
}
