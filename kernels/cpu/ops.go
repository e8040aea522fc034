package cpu

import (
	"github.com/vkllm/vkllm/kernels"
	"github.com/vkllm/vkllm/kernels/internal/cpubase"
)

// RMSNorm implements kernels.Backend as kernels/cpuref does, with the sum
// of squares by four partial sums (sumSquaresF64).
func (b *Backend) RMSNorm(dst, x, w kernels.Tensor, eps float32) {
	b.RMSNormWith(dst, x, w, eps, sumSquaresF64)
}

// SwiGLU implements kernels.Backend: silu(g)·u with the vector exp
// (dot.go's siluMul).
func (b *Backend) SwiGLU(dst, gate, up kernels.Tensor) {
	d, g, u := cpubase.SwiGLUOperands("SwiGLU", dst, gate, up)
	b.Parallel((len(g.F32)+1023)/1024, func(lo, hi int) {
		lo, hi = lo*1024, min(hi*1024, len(g.F32))
		siluMul(g.F32[lo:hi], u.F32[lo:hi], d.F32[lo:hi])
	})
}
