package cpu

import (
	"math"

	"github.com/vkllm/vkllm/kernels"
	"github.com/vkllm/vkllm/kernels/internal/cpubase"
)

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
	d, xs, ws := cpubase.Activation(op, dst), cpubase.Activation(op, x), cpubase.Activation(op, w)
	n, dim := xs.Rows, xs.Cols
	if !(ws.Rows == 1 && ws.Cols == dim && d.Rows == n && d.Cols == dim) {
		cpubase.Failf("%s: dst %v, x %v, w %v: want (n, d), (n, d), (d)", op, d, xs, ws)
	}
	b.Parallel(n, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			row := xs.F32[i*dim : (i+1)*dim] // (d)
			ss := sumSquaresF64(row)
			variance := float32(ss) / float32(dim)
			inv := 1 / float32(math.Sqrt(float64(variance+eps)))
			out := d.F32[i*dim : (i+1)*dim] // may be row itself
			for j, v := range row {
				out[j] = ws.F32[j] * (v * inv)
			}
		}
	})
}

// SwiGLU implements kernels.Backend: silu(g)·u with silu(g) = g/(1+e^−g)
// in float32, as torch's SiLU.
func (b *Backend) SwiGLU(dst, gate, up kernels.Tensor) {
	const op = "SwiGLU"
	d, g, u := cpubase.Activation(op, dst), cpubase.Activation(op, gate), cpubase.Activation(op, up)
	if !(d.Rows == g.Rows && d.Cols == g.Cols && u.Rows == g.Rows && u.Cols == g.Cols) {
		cpubase.Failf("%s: dst %v, gate %v, up %v", op, d, g, u)
	}
	// silu·u with the vector exp (dot.go's siluMul)
	b.Parallel((len(g.F32)+1023)/1024, func(lo, hi int) {
		lo, hi = lo*1024, min(hi*1024, len(g.F32))
		siluMul(g.F32[lo:hi], u.F32[lo:hi], d.F32[lo:hi])
	})
}
