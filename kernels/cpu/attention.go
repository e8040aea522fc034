package cpu

import "github.com/vkllm/vkllm/kernels"

// Attention implements kernels.Backend with attentionFast, visiting each
// token's cells in the order of its row of vis (fast.go).
func (b *Backend) Attention(dst, q, k, v, vis kernels.Tensor, heads, kvHeads int, scale float32) {
	d, qs, ks, vs, lists, _ := b.AttentionOperands("Attention", dst, q, k, v, vis, heads, kvHeads)
	b.attentionFast(d, qs, ks, vs, lists, heads, kvHeads, scale)
}
