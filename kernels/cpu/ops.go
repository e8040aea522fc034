package cpu

import (
	"math"

	"github.com/vkllm/vkllm/kernels"
)

// elementwise sets dst = op(a, b) for a (n, m) and b (n, m) or (m), the
// latter broadcast over the rows of a. dst (n, m) may alias a.
func elementwise(name string, dst, a, bt kernels.Tensor, mul bool) {
	d, x, y := activation(name, dst), activation(name, a), activation(name, bt)
	if !(d.rows == x.rows && d.cols == x.cols) {
		failf("%s: dst %v, a %v", name, d, x)
	}
	m := x.cols
	if !(y.rows == x.rows && y.cols == m || y.rows == 1 && y.cols == m) {
		failf("%s: b %v is neither a's shape %v nor one of its rows", name, y, x)
	}
	// Row by row, b's row the same one when broadcast; the loops are
	// written out (no function value per element: a decode step adds
	// a few hundred rows).
	for r := range x.rows {
		xr, dr := x.f32[r*m:(r+1)*m], d.f32[r*m:(r+1)*m]
		yr := y.f32[:m]
		if y.rows > 1 {
			yr = y.f32[r*m : (r+1)*m]
		}
		if mul {
			for i, v := range xr {
				dr[i] = v * yr[i]
			}
		} else {
			for i, v := range xr {
				dr[i] = v + yr[i]
			}
		}
	}
}

// Add implements kernels.Backend.
func (b *Backend) Add(dst, a, c kernels.Tensor) {
	elementwise("Add", dst, a, c, false)
}

// Mul implements kernels.Backend.
func (b *Backend) Mul(dst, a, c kernels.Tensor) {
	elementwise("Mul", dst, a, c, true)
}

// RMSNorm implements kernels.Backend with transformers' rounding steps:
//
//	variance = x.pow(2).mean(-1)          # float32 sum, then / d
//	x = x * torch.rsqrt(variance + eps)   # float32
//	return weight * x
//
// The sum of squares is taken in float64 and rounded once (torch's
// cascade sum is as good to within an ulp); every later step rounds to
// float32 where torch does.
func (b *Backend) RMSNorm(dst, x, w kernels.Tensor, eps float32) {
	const op = "RMSNorm"
	d, xs, ws := activation(op, dst), activation(op, x), activation(op, w)
	n, dim := xs.rows, xs.cols
	if !(ws.rows == 1 && ws.cols == dim && d.rows == n && d.cols == dim) {
		failf("%s: dst %v, x %v, w %v: want (n, d), (n, d), (d)", op, d, xs, ws)
	}
	b.parallel(n, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			row := xs.f32[i*dim : (i+1)*dim] // (d)
			var ss float64
			if b.fast {
				ss = sumSquaresF64(row)
			} else {
				for _, v := range row {
					ss += float64(v) * float64(v)
				}
			}
			variance := float32(ss) / float32(dim)
			inv := 1 / float32(math.Sqrt(float64(variance+eps)))
			out := d.f32[i*dim : (i+1)*dim] // may be row itself
			for j, v := range row {
				out[j] = ws.f32[j] * (v * inv)
			}
		}
	})
}

// SwiGLU implements kernels.Backend: silu(g)·u with silu(g) = g/(1+e^−g)
// in float32, as torch's SiLU.
func (b *Backend) SwiGLU(dst, gate, up kernels.Tensor) {
	const op = "SwiGLU"
	d, g, u := activation(op, dst), activation(op, gate), activation(op, up)
	if !(d.rows == g.rows && d.cols == g.cols && u.rows == g.rows && u.cols == g.cols) {
		failf("%s: dst %v, gate %v, up %v", op, d, g, u)
	}
	if b.fast { // silu·u with the vector exp (dot.go's siluMul)
		b.parallel((len(g.f32)+1023)/1024, func(lo, hi int) {
			lo, hi = lo*1024, min(hi*1024, len(g.f32))
			siluMul(g.f32[lo:hi], u.f32[lo:hi], d.f32[lo:hi])
		})
		return
	}
	b.parallel((len(g.f32)+1023)/1024, func(lo, hi int) {
		for i := lo * 1024; i < min(hi*1024, len(g.f32)); i++ {
			x := g.f32[i]
			silu := x / (1 + float32(math.Exp(float64(-x))))
			d.f32[i] = silu * u.f32[i]
		}
	})
}

// Softmax implements kernels.Backend: each row of x (n, m) becomes
// exp(x − max) / Σ exp(x − max), with the exponentials and their sum in
// float64. A row of only −Inf becomes zeros.
func (b *Backend) Softmax(x kernels.Tensor) {
	t := activation("Softmax", x)
	m := t.cols
	b.parallel(t.rows, func(lo, hi int) {
		e := make([]float64, m) // (m) exponentials of one row
		for i := lo; i < hi; i++ {
			softmaxRow(t.f32[i*m:(i+1)*m], e)
		}
	})
}

func softmaxRow(row []float32, e []float64) {
	mx := math.Inf(-1)
	for _, v := range row {
		mx = max(mx, float64(v))
	}
	if math.IsInf(mx, -1) {
		clear(row)
		return
	}
	var sum float64
	for j, v := range row {
		e[j] = math.Exp(float64(v) - mx)
		sum += e[j]
	}
	for j := range row {
		row[j] = float32(e[j] / sum)
	}
}

// Argmax implements kernels.Backend: the first index of each row's
// largest value (a NaN is never chosen unless first in its row).
func (b *Backend) Argmax(dst, x kernels.Tensor) {
	const op = "Argmax"
	d, t := ints(op, dst), activation(op, x)
	n, m := t.rows, t.cols
	if !(len(d.i32) == n && m > 0) {
		failf("%s: dst %v, x %v: want dst (n), x (n, m>0)", op, d, t)
	}
	for i := range n {
		row := t.f32[i*m : (i+1)*m]
		best := 0
		for j, v := range row {
			if v > row[best] {
				best = j
			}
		}
		d.i32[i] = int32(best)
	}
}
