package cpu

import (
	"math"
	"slices"

	"github.com/vkllm/vkllm/kernels"
)

// InvFreq returns the HeadDim/2 rotation frequencies of p, rounded step by
// step in float32 as transformers computes them (modeling_rope_utils.py):
//
//	inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2).float() / dim))
//
// then divided by FreqFactors (llama.cpp's rope_freqs) when set, else
// scaled: linear divides by Factor; llama3 is _compute_llama3_parameters,
// where torch evaluates `c / t` for a tensor t as reciprocal(t) · c.
func InvFreq(p kernels.RoPE) []float32 {
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
	case p.Scaling == kernels.RoPEScaleLinear:
		for i := range f {
			f[i] /= float32(p.Factor)
		}
	case p.Scaling == kernels.RoPEScaleLlama3:
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

// angles fills cos and sin (HeadDim/2) for position pos: the float32
// angle pos·inv_freq, then its cosine and sine rounded to float32, as
// transformers' rotary embedding.
func angles(pos int32, inv, cos, sin []float32) {
	for i, f := range inv {
		a := float32(pos) * f
		cos[i] = float32(math.Cos(float64(a)))
		sin[i] = float32(math.Sin(float64(a)))
	}
}

// rotate rotates one head x (HeadDim) by the angles of cos and sin: each
// pair (x0, x1), adjacent for RoPENormal and half a head apart for
// RoPENeox, becomes (x0·cos − x1·sin, x1·cos + x0·sin), every product
// rounded to float32 as in torch's q·cos + rotate_half(q)·sin.
func rotate(x, cos, sin []float32, style kernels.RoPEStyle) {
	half := len(cos)
	for i := range half {
		a, b := i, i+half
		if style == kernels.RoPENormal {
			a, b = 2*i, 2*i+1
		}
		x0, x1, c, s := x[a], x[b], cos[i], sin[i]
		x[a] = float32(x0*c) - float32(x1*s)
		x[b] = float32(x1*c) + float32(x0*s)
	}
}

func checkRoPE(op string, p kernels.RoPE) {
	if err := p.Check(); err != nil {
		panic("cpu: " + op + ": " + err.Error())
	}
}

// RoPE implements kernels.Backend: every head of row i of x
// (n, heads·HeadDim) is rotated to position pos[i].
func (b *Backend) RoPE(x, pos kernels.Tensor, p kernels.RoPE) {
	const op = "RoPE"
	t, ps := activation(op, x), ints(op, pos)
	checkRoPE(op, p)
	n, dim := t.rows, t.cols
	if !(dim%p.HeadDim == 0 && len(ps.i32) == n) {
		failf("%s: x %v, %d positions, head dim %d", op, t, len(ps.i32), p.HeadDim)
	}
	cos, sin := b.rope.table(b, ps.i32, p)
	half := p.HeadDim / 2
	b.parallel(n, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			c, s := cos[i*half:(i+1)*half], sin[i*half:(i+1)*half]
			row := t.f32[i*dim : (i+1)*dim]
			for h := 0; h < dim; h += p.HeadDim {
				rotate(row[h:h+p.HeadDim], c, s, p.Style)
			}
		}
	})
}

// ropeCache is RoPE's last table: the frequencies of the last RoPE
// parameters and the angles of the last positions.
type ropeCache struct {
	p        kernels.RoPE // FreqFactors copied
	inv      []float32    // InvFreq(p); nil: none yet
	pos      []int32
	cos, sin []float32 // (len(pos), len(inv)) angles' values
	valid    bool      // cos and sin hold pos's angles under inv
}

// table returns the angles of every position of pos (cos and sin,
// len(pos)·HeadDim/2) under p's frequencies, kept from the last call
// when it had the same positions and parameters: every layer's RoPE of
// Q and K in one forward pass rotates to the same positions, and the
// table costs two math calls per value, the frequencies one each.
func (r *ropeCache) table(b *Backend, pos []int32, p kernels.RoPE) (cos, sin []float32) {
	if r.inv == nil || !sameFreqs(r.p, p) {
		r.p, r.inv, r.valid = p, InvFreq(p), false
		r.p.FreqFactors = slices.Clone(p.FreqFactors)
	}
	if r.valid && slices.Equal(r.pos, pos) {
		return r.cos, r.sin
	}
	inv, half := r.inv, len(r.inv)
	r.pos = append(r.pos[:0], pos...)
	r.cos, r.sin = grow(r.cos, len(pos)*half), grow(r.sin, len(pos)*half)
	b.parallel(len(pos), func(lo, hi int) {
		for i := lo; i < hi; i++ {
			angles(pos[i], inv, r.cos[i*half:(i+1)*half], r.sin[i*half:(i+1)*half])
		}
	})
	r.valid = true
	return r.cos, r.sin
}

// sameFreqs reports whether p and q give the same InvFreq: every field
// it reads equal (floats bit for bit).
func sameFreqs(p, q kernels.RoPE) bool {
	f64 := func(a, b float64) bool { return math.Float64bits(a) == math.Float64bits(b) }
	f32 := func(a, b float32) bool { return math.Float32bits(a) == math.Float32bits(b) }
	return p.HeadDim == q.HeadDim && f64(p.Theta, q.Theta) && p.Scaling == q.Scaling && f64(p.Factor, q.Factor) &&
		f64(p.LowFreqFactor, q.LowFreqFactor) && f64(p.HighFreqFactor, q.HighFreqFactor) &&
		p.OriginalMaxPositions == q.OriginalMaxPositions &&
		(p.FreqFactors == nil) == (q.FreqFactors == nil) && slices.EqualFunc(p.FreqFactors, q.FreqFactors, f32)
}

// KVShift implements kernels.Backend: row cells[i] of the K cache
// (cells, kvHeads·HeadDim), F32 or F16, is rotated by delta[i] positions
// with the same float32 steps as RoPE (an F16 row is widened, rotated and
// rounded back).
func (b *Backend) KVShift(k, cells, delta kernels.Tensor, p kernels.RoPE) {
	const op = "KVShift"
	c, cl, dl := cacheOf(op, k), ints(op, cells), ints(op, delta)
	checkRoPE(op, p)
	dim := c.cols
	if !(len(cl.i32) == len(dl.i32)) {
		failf("%s: %d cells, %d deltas", op, len(cl.i32), len(dl.i32))
	}
	if !(dim%p.HeadDim == 0) {
		failf("%s: cache %v, head dim %d", op, c, p.HeadDim)
	}
	inv := InvFreq(p)
	cos, sin := make([]float32, len(inv)), make([]float32, len(inv))
	row := make([]float32, dim) // (kvHeads·HeadDim)
	for i, ci := range cl.i32 {
		if !(ci >= 0 && int(ci) < c.rows) {
			failf("%s: cell %d outside the cache's %d", op, ci, c.rows)
		}
		c.row(int(ci), row)
		angles(dl.i32[i], inv, cos, sin)
		for h := 0; h < dim; h += p.HeadDim {
			rotate(row[h:h+p.HeadDim], cos, sin, p.Style)
		}
		c.setRow(int(ci), row)
	}
}
