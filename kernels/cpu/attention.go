package cpu

import (
	"github.com/vkllm/vkllm/kernels"
	"github.com/vkllm/vkllm/kernels/internal/cpubase"
)

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
	d, qs, ks, vs, ls := cpubase.Activation(op, dst), cpubase.Activation(op, q), cpubase.CacheOf(op, k), cpubase.CacheOf(op, v), cpubase.Ints(op, vis)
	if !(heads > 0 && kvHeads > 0 && heads%kvHeads == 0 && qs.Cols%heads == 0) {
		cpubase.Failf("%s: q %v with %d heads and %d KV heads", op, qs, heads, kvHeads)
	}
	n, hd, cells := qs.Rows, qs.Cols/heads, ks.Rows
	if !(ks.Cols == kvHeads*hd && vs.Rows == cells && vs.Cols == kvHeads*hd && ls.Rows == n && d.Rows == n && d.Cols == qs.Cols) {
		cpubase.Failf("%s: dst %v, q %v, k %v, v %v, vis %v, %d heads, %d KV heads: want dst and q (n, heads·hd), k and v (cells, kvHeads·hd), vis (n, w)", op, d, qs, ks, vs, ls, heads, kvHeads)
	}
	b.attentionFast(d, qs, ks, vs, cpubase.VisibleLists(op, ls, cells), heads, kvHeads, scale)
}
