package cpu

import "github.com/vkllm/vkllm/kernels"

// GetRows implements kernels.Backend: dst (n, cols) = rows ids[i] of
// table (rows, cols). Only the rows asked for are dequantised.
func (b *Backend) GetRows(dst, table, ids kernels.Tensor) {
	const op = "GetRows"
	d, tb, id := activation(op, dst), tensorOf(op, table), ints(op, ids)
	n, cols := len(id.i32), tb.cols
	if !(tb.floatRows()) {
		failf("%s: table %v has no float rows", op, tb)
	}
	if !(d.rows == n && d.cols == cols) {
		failf("%s: dst %v, table %v, %d ids", op, d, tb, n)
	}
	for i, r := range id.i32 {
		if !(r >= 0 && int(r) < tb.rows) {
			failf("%s: id %d outside the table's %d rows", op, r, tb.rows)
		}
		tb.row(int(r), d.f32[i*cols:(i+1)*cols])
	}
}

// dot is the one dot product of MatMul and Attention: eight float32
// partial sums, lane l taking the elements i ≡ l (mod 8), then added
// pairwise. Each product is rounded to float32 before it is added (the
// conversion stops the compiler from fusing a multiply-add on arm64 or
// GOAMD64=v3), so a result depends only on a and b: not on the batch,
// the thread count or the machine. It is also the order an 8-wide SIMD
// loop without FMA produces.
func dot(a, b []float32) float32 {
	b = b[:len(a)]
	var s [8]float32
	n := len(a) &^ 7
	for i := 0; i < n; i += 8 {
		s[0] += float32(a[i] * b[i])
		s[1] += float32(a[i+1] * b[i+1])
		s[2] += float32(a[i+2] * b[i+2])
		s[3] += float32(a[i+3] * b[i+3])
		s[4] += float32(a[i+4] * b[i+4])
		s[5] += float32(a[i+5] * b[i+5])
		s[6] += float32(a[i+6] * b[i+6])
		s[7] += float32(a[i+7] * b[i+7])
	}
	for i := n; i < len(a); i++ {
		s[i-n] += float32(a[i] * b[i])
	}
	return ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]))
}

// MatMul implements kernels.Backend: dst (n, m) = x (n, k) · wᵀ with
// w (m, k) of any dtype Upload takes (or an F32/F16 tensor). The m weight
// rows are split across goroutines; each dequantises one row at a time
// into its own scratch (k) and dots it with all n activation rows, so the
// weight is read once per call and never expanded as a whole.
func (b *Backend) MatMul(dst, x, w kernels.Tensor) {
	b.matMul(matMulOperands("MatMul", dst, x, w))
}

// matMulOperands checks op's operands (dst (n, m), x (n, k), w (m, k))
// and returns them as this package's tensors.
func matMulOperands(op string, dst, x, w kernels.Tensor) (d, xs, wt *Tensor) {
	d, xs, wt = activation(op, dst), activation(op, x), tensorOf(op, w)
	if !(wt.floatRows()) {
		failf("%s: weight %v has no float rows", op, wt)
	}
	if !(wt.cols == xs.cols && d.rows == xs.rows && d.cols == wt.rows) {
		failf("%s: dst %v, x %v, w %v: want dst (n, m), x (n, k), w (m, k)", op, d, xs, wt)
	}
	return d, xs, wt
}

// matMul is MatMul on checked operands.
func (b *Backend) matMul(d, xs, wt *Tensor) {
	n, k, m := xs.rows, xs.cols, wt.rows
	if b.fast {
		b.matMulFast(d, xs, wt)
		return
	}
	b.parallel(m, func(lo, hi int) {
		wrow := make([]float32, k) // (k) one dequantised weight row
		for j := lo; j < hi; j++ {
			wt.row(j, wrow)
			for i := range n {
				d.f32[i*m+j] = dot(xs.f32[i*k:(i+1)*k], wrow)
			}
		}
	})
}

// MatMuls (kernels.MultiMatMul) sets dst[i] = x·w[i]ᵀ for every i, each
// value exactly MatMul's. On the fast path, weights packed alike (one
// dtype, the same row length) go as one op: x quantised once, one pool
// job over all their row groups. Anything else is one MatMul each.
func (b *Backend) MatMuls(dst []kernels.Tensor, x kernels.Tensor, w []kernels.Tensor) {
	const op = "MatMuls"
	if !(len(dst) == len(w)) {
		failf("%s: %d outputs for %d weights", op, len(dst), len(w))
	}
	s := &b.scratch // the operands, kept for the next call (no allocation per op)
	s.mds, s.mws = s.mds[:0], s.mws[:0]
	var xs *Tensor
	alike := b.fast && len(w) > 1
	for i := range w {
		var d, wt *Tensor
		d, xs, wt = matMulOperands(op, dst[i], x, w[i])
		s.mds, s.mws = append(s.mds, d), append(s.mws, wt)
		alike = alike && wt.pk != nil && wt.dt == s.mws[0].dt && xs.rows > 0
	}
	if alike {
		b.matMulPackedMulti(s.mds, xs, s.mws)
	} else {
		for i := range s.mds {
			b.matMul(s.mds[i], xs, s.mws[i])
		}
	}
	clear(s.mds) // hold no tensor past the call
	clear(s.mws)
}
