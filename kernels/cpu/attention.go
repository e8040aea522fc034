package cpu

import (
	"math"

	"github.com/vkllm/vkllm/kernels"
)

// KVWrite implements kernels.Backend: row i of src (n, kvDim) is stored
// in row cells[i] of the cache (cells, kvDim), rounded to nearest even
// for an F16 cache.
func (b *Backend) KVWrite(k, src, cells kernels.Tensor) {
	const op = "KVWrite"
	c, s, cl := cacheOf(op, k), activation(op, src), ints(op, cells)
	dim := s.cols
	if !(c.cols == dim && len(cl.i32) == s.rows) {
		failf("%s: cache %v, src %v, %d cells", op, c, s, len(cl.i32))
	}
	for i, ci := range cl.i32 {
		if !(ci >= 0 && int(ci) < c.rows) {
			failf("%s: cell %d outside the cache's %d", op, ci, c.rows)
		}
		c.setRow(int(ci), s.f32[i*dim:(i+1)*dim])
	}
}

// Attention implements kernels.Backend. For each token t and query head h
// (KV head h/(heads/kvHeads)), over the cells j visible to t (mask 0) in
// index order:
//
//	s_j = dot(q_t,h, k_j) · scale              float32, MatMul's dot
//	p_j = exp(s_j − max s)                      float64
//	out = Σ p_j·v_j / Σ p_j                     float64, rounded once
//
// Masked cells (any mask value but 0) are skipped, not added as −Inf; a
// token that sees no cell gets zeros. The (token, head) pairs are split
// across goroutines.
func (b *Backend) Attention(dst, q, k, v, mask kernels.Tensor, heads, kvHeads int, scale float32) {
	const op = "Attention"
	d, qs, ks, vs, ms := activation(op, dst), activation(op, q), cacheOf(op, k), cacheOf(op, v), activation(op, mask)
	if !(heads > 0 && kvHeads > 0 && heads%kvHeads == 0 && qs.cols%heads == 0) {
		failf("%s: q %v with %d heads and %d KV heads", op, qs, heads, kvHeads)
	}
	n, hd, cells := qs.rows, qs.cols/heads, ks.rows
	if !(ks.cols == kvHeads*hd && vs.rows == cells && vs.cols == kvHeads*hd && ms.rows == n && ms.cols == cells && d.rows == n && d.cols == qs.cols) {
		failf("%s: dst %v, q %v, k %v, v %v, mask %v, %d heads, %d KV heads: want dst and q (n, heads·hd), k and v (cells, kvHeads·hd), mask (n, cells)", op, d, qs, ks, vs, ms, heads, kvHeads)
	}
	if b.fast {
		b.attentionFast(d, qs, ks, vs, ms, heads, kvHeads, scale)
		return
	}
	group := heads / kvHeads
	b.parallel(n*heads, func(lo, hi int) {
		scores := make([]float32, cells) // (cells) s_j of one head
		acc := make([]float64, hd)       // (hd) Σ p_j·v_j
		kbuf, vbuf := make([]float32, hd), make([]float32, hd)
		for th := lo; th < hi; th++ {
			t, h := th/heads, th%heads
			off := (h / group) * hd // the KV head's columns
			qv := qs.f32[t*qs.cols+h*hd : t*qs.cols+(h+1)*hd]
			out := d.f32[t*d.cols+h*hd : t*d.cols+(h+1)*hd]
			visible := ms.f32[t*cells : (t+1)*cells]

			mx := float32(math.Inf(-1))
			seen := false
			for j, m := range visible {
				if m != 0 {
					continue
				}
				scores[j] = dot(qv, ks.span(j, off, hd, kbuf)) * scale
				mx = max(mx, scores[j])
				seen = true
			}
			if !seen {
				clear(out)
				continue
			}
			clear(acc)
			var sum float64
			for j, m := range visible {
				if m != 0 {
					continue
				}
				p := math.Exp(float64(scores[j]) - float64(mx))
				sum += p
				for e, x := range vs.span(j, off, hd, vbuf) {
					acc[e] += float64(p * float64(x)) // no fused multiply-add: the same on every machine
				}
			}
			for e := range out {
				out[e] = float32(acc[e] / sum)
			}
		}
	})
}
