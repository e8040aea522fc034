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
// (KV head h/(heads/kvHeads)), over the cells j of t's row of vis, in the
// row's order:
//
//	s_j = dot(q_t,h, k_j) · scale              float32, MatMul's dot
//	p_j = exp(s_j − max s)                      float64
//	out = Σ p_j·v_j / Σ p_j                     float64, rounded once
//
// A token whose row starts with -1 gets zeros. The (token, head) pairs
// are split across goroutines.
func (b *Backend) Attention(dst, q, k, v, vis kernels.Tensor, heads, kvHeads int, scale float32) {
	const op = "Attention"
	d, qs, ks, vs, ls := activation(op, dst), activation(op, q), cacheOf(op, k), cacheOf(op, v), ints(op, vis)
	if !(heads > 0 && kvHeads > 0 && heads%kvHeads == 0 && qs.cols%heads == 0) {
		failf("%s: q %v with %d heads and %d KV heads", op, qs, heads, kvHeads)
	}
	n, hd, cells := qs.rows, qs.cols/heads, ks.rows
	if !(ks.cols == kvHeads*hd && vs.rows == cells && vs.cols == kvHeads*hd && ls.rows == n && d.rows == n && d.cols == qs.cols) {
		failf("%s: dst %v, q %v, k %v, v %v, vis %v, %d heads, %d KV heads: want dst and q (n, heads·hd), k and v (cells, kvHeads·hd), vis (n, w)", op, d, qs, ks, vs, ls, heads, kvHeads)
	}
	lists := visibleLists(op, ls, cells)
	if b.fast {
		b.attentionFast(d, qs, ks, vs, lists, heads, kvHeads, scale)
		return
	}
	group := heads / kvHeads
	b.parallel(n*heads, func(lo, hi int) {
		scores := make([]float32, cells) // (cells) s_j of one head, in list order
		acc := make([]float64, hd)       // (hd) Σ p_j·v_j
		kbuf, vbuf := make([]float32, hd), make([]float32, hd)
		for th := lo; th < hi; th++ {
			t, h := th/heads, th%heads
			off := (h / group) * hd // the KV head's columns
			qv := qs.f32[t*qs.cols+h*hd : t*qs.cols+(h+1)*hd]
			out := d.f32[t*d.cols+h*hd : t*d.cols+(h+1)*hd]
			list := lists[t]
			if len(list) == 0 {
				clear(out)
				continue
			}
			mx := float32(math.Inf(-1))
			for i, j := range list {
				scores[i] = dot(qv, ks.span(int(j), off, hd, kbuf)) * scale
				mx = max(mx, scores[i])
			}
			clear(acc)
			var sum float64
			for i, j := range list {
				p := math.Exp(float64(scores[i]) - float64(mx))
				sum += p
				for e, x := range vs.span(int(j), off, hd, vbuf) {
					acc[e] += float64(p * float64(x)) // no fused multiply-add: the same on every machine
				}
			}
			for e := range out {
				out[e] = float32(acc[e] / sum)
			}
		}
	})
}

// visibleLists returns each row of vis (n, w) up to its first -1,
// checking that every cell is in [0, cells) and that a row lists at most
// cells of them (a cell twice is the caller's bug; it is not looked for).
func visibleLists(op string, vis *Tensor, cells int) [][]int32 {
	lists := make([][]int32, vis.rows)
	for t := range lists {
		row := vis.i32[t*vis.cols : (t+1)*vis.cols]
		nv := 0
		for nv < len(row) && row[nv] >= 0 {
			if int(row[nv]) >= cells {
				failf("%s: token %d attends to cell %d of %d", op, t, row[nv], cells)
			}
			nv++
		}
		if nv > cells {
			failf("%s: token %d attends to %d cells of %d", op, t, nv, cells)
		}
		lists[t] = row[:nv]
	}
	return lists
}
