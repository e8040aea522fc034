package cpu

import (
	"github.com/vkllm/vkllm/kernels"
	"github.com/vkllm/vkllm/kernels/internal/cpubase"
)

// MatMul implements kernels.Backend: dst (n, m) = x (n, k) · wᵀ with
// w (m, k) of any dtype Upload takes (or an F32/F16 tensor). The m weight
// rows are split across goroutines; each dequantises one row at a time
// into its own scratch (k) and dots it with all n activation rows, so the
// weight is read once per call and never expanded as a whole.
func (b *Backend) MatMul(dst, x, w kernels.Tensor) {
	b.matMulFast(cpubase.MatMulOperands("MatMul", dst, x, w))
}

// MatMuls (kernels.MultiMatMul) sets dst[i] = x·w[i]ᵀ for every i, each
// value exactly MatMul's. On the fast path, weights packed alike (one
// dtype, the same row length) go as one op: x quantised once, one pool
// job over all their row groups. Anything else is one MatMul each.
func (b *Backend) MatMuls(dst []kernels.Tensor, x kernels.Tensor, w []kernels.Tensor) {
	const op = "MatMuls"
	if !(len(dst) == len(w)) {
		cpubase.Failf("%s: %d outputs for %d weights", op, len(dst), len(w))
	}
	s := &b.scratch // the operands, kept for the next call (no allocation per op)
	s.mds, s.mws = s.mds[:0], s.mws[:0]
	var xs *Tensor
	alike := len(w) > 1
	for i := range w {
		var d, wt *Tensor
		d, xs, wt = cpubase.MatMulOperands(op, dst[i], x, w[i])
		s.mds, s.mws = append(s.mds, d), append(s.mws, wt)
		alike = alike && wt.Packed != nil && wt.DT == s.mws[0].DT && xs.Rows > 0
	}
	if alike {
		b.matMulPackedMulti(s.mds, xs, s.mws)
	} else {
		for i := range s.mds {
			b.matMulFast(s.mds[i], xs, s.mws[i])
		}
	}
	clear(s.mds) // hold no tensor past the call
	clear(s.mws)
}
