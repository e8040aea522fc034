package cpuref

import (
	"fmt"
	"math"

	"github.com/vkllm/vkllm/kernels"
	"github.com/vkllm/vkllm/kernels/internal/cpubase"
)

// Name is the name this backend registers with kernels.Register.
const Name = kernels.CPURef

func init() {
	kernels.Register(Name, func(o kernels.Options) (kernels.Backend, error) { return New(o.Threads), nil })
}

// Errors of SetF32, SetI32, GetF32 and GetI32 wrap one of these.
var (
	ErrMismatch = cpubase.ErrMismatch // the host slice's length or the tensor's dtype does not fit
	ErrForeign  = cpubase.ErrForeign  // not a live tensor of a CPU backend
)

// Backend is the exact reference backend. Like every Backend it is used
// from one goroutine at a time; each op splits its own work across the
// goroutines of its pool.
type Backend struct {
	*cpubase.Base
}

// New returns the reference backend running each op on up to threads
// goroutines (0 or less: GOMAXPROCS). Its helper goroutines stop on
// Close, or when the Backend is garbage collected.
func New(threads int) *Backend { return &Backend{cpubase.NewBase(Name, threads)} }

// Describe implements kernels.Describer.
func (b *Backend) Describe() string { return fmt.Sprintf("exact reference, %d threads", b.Threads) }

// dot is the reference dot product, cpubase.Dot (its order of
// additions is part of the reference).
func dot(a, b []float32) float32 { return cpubase.Dot(a, b) }

// MatMul implements kernels.Backend: dst (n, m) = x (n, k) · wᵀ with
// w (m, k) of any dtype Upload takes (or an F32/F16 tensor). The m weight
// rows are split across goroutines; each dequantises one row at a time
// into its own scratch (k) and dots it with all n activation rows, so the
// weight is read once per call and never expanded as a whole.
func (b *Backend) MatMul(dst, x, w kernels.Tensor) {
	d, xs, wt := cpubase.MatMulOperands("MatMul", dst, x, w)
	n, k, m := xs.Rows, xs.Cols, wt.Rows
	b.Parallel(m, func(lo, hi int) {
		wrow := make([]float32, k) // (k) one dequantised weight row
		for j := lo; j < hi; j++ {
			wt.Row(j, wrow)
			for i := range n {
				d.F32[i*m+j] = dot(xs.F32[i*k:(i+1)*k], wrow)
			}
		}
	})
}

// RMSNorm implements kernels.Backend (cpubase.Base.RMSNormWith) with the
// sum of squares in float64 in index order, rounded once (torch's cascade
// sum is as good to within an ulp).
func (b *Backend) RMSNorm(dst, x, w kernels.Tensor, eps float32) {
	b.RMSNormWith(dst, x, w, eps, func(row []float32) float64 {
		var ss float64
		for _, v := range row {
			ss += float64(v) * float64(v)
		}
		return ss
	})
}

// SwiGLU implements kernels.Backend: silu(g)·u with silu(g) = g/(1+e^−g)
// in float32, as torch's SiLU.
func (b *Backend) SwiGLU(dst, gate, up kernels.Tensor) {
	d, g, u := cpubase.SwiGLUOperands("SwiGLU", dst, gate, up)
	b.Parallel((len(g.F32)+1023)/1024, func(lo, hi int) {
		for i := lo * 1024; i < min(hi*1024, len(g.F32)); i++ {
			x := g.F32[i]
			silu := x / (1 + float32(math.Exp(float64(-x))))
			d.F32[i] = silu * u.F32[i]
		}
	})
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
	d, qs, ks, vs, lists, hd := b.AttentionOperands("Attention", dst, q, k, v, vis, heads, kvHeads)
	n, cells := qs.Rows, ks.Rows
	group := heads / kvHeads
	b.Parallel(n*heads, func(lo, hi int) {
		scores := make([]float32, cells) // (cells) s_j of one head, in list order
		acc := make([]float64, hd)       // (hd) Σ p_j·v_j
		kbuf, vbuf := make([]float32, hd), make([]float32, hd)
		for th := lo; th < hi; th++ {
			t, h := th/heads, th%heads
			off := (h / group) * hd // the KV head's columns
			qv := qs.F32[t*qs.Cols+h*hd : t*qs.Cols+(h+1)*hd]
			out := d.F32[t*d.Cols+h*hd : t*d.Cols+(h+1)*hd]
			list := lists[t]
			if len(list) == 0 {
				clear(out)
				continue
			}
			mx := float32(math.Inf(-1))
			for i, j := range list {
				scores[i] = dot(qv, ks.Span(int(j), off, hd, kbuf)) * scale
				mx = max(mx, scores[i])
			}
			clear(acc)
			var sum float64
			for i, j := range list {
				p := math.Exp(float64(scores[i]) - float64(mx))
				sum += p
				for e, x := range vs.Span(int(j), off, hd, vbuf) {
					acc[e] += float64(p * float64(x)) // no fused multiply-add: the same on every machine
				}
			}
			for e := range out {
				out[e] = float32(acc[e] / sum)
			}
		}
	})
}
