package kerneltest

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/vkllm/vkllm/kernels"
	"github.com/vkllm/vkllm/tensor"
)

// newCache makes a KV cache (cells, dim) of dtype dt holding vals, written
// with KVWrite in a scrambled cell order (SetF32 is only for F32).
func newCache(t *testing.T, b kernels.Backend, dt tensor.DType, vals []float32, cells, dim int) kernels.Tensor {
	t.Helper()
	c, err := b.NewTensor(dt, cells, dim)
	if err != nil {
		if unsupported(err) {
			t.Skipf("%s has no %v cache: %v", b.Name(), dt, err)
		}
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Free(c) })
	where := make([]int32, cells) // row i of src goes to cell where[i]
	src := make([]float32, len(vals))
	for i, c := range rand.New(rand.NewPCG(uint64(cells), 1)).Perm(cells) {
		where[i] = int32(c)
		copy(src[i*dim:(i+1)*dim], vals[c*dim:(c+1)*dim])
	}
	b.KVWrite(c, newF32(t, b, src, cells, dim), newI32(t, b, where))
	return c
}

// KVWrite writes rows into F32 and F16 caches, overwriting one, and
// checks that the rows not written stay zero.
func KVWrite(t *testing.T, b kernels.Backend) {
	r := rng(50)
	for _, dt := range []tensor.DType{tensor.F32, tensor.F16} {
		cells, dim := 9, 48
		c, err := b.NewTensor(dt, cells, dim)
		if err != nil {
			if unsupported(err) {
				t.Skipf("%s has no %v cache: %v", b.Name(), dt, err)
			}
			t.Fatal(err)
		}
		want := make([]float64, cells*dim)
		for _, where := range [][]int32{{8, 0, 4}, {4, 2}} {
			src := randn(r, len(where)*dim, 1)
			b.KVWrite(c, newF32(t, b, src, len(where), dim), newI32(t, b, where))
			for i, cell := range where {
				copy(want[int(cell)*dim:], wide(src[i*dim:(i+1)*dim]))
			}
		}
		limit := LimitExact
		if dt == tensor.F16 {
			limit = LimitF16
		}
		check(t, "KVWrite "+dt.String(), read(t, b, c, cells*dim), want, limit)
		b.Free(c)
	}
}

// attnCase is one Attention shape: n tokens, heads query heads over
// kvHeads KV heads of hd, a cache of cells.
type attnCase struct{ n, heads, kvHeads, hd, cells int }

var attnCases = []attnCase{
	{1, 4, 4, 32, 5},
	{3, 6, 2, 64, 11},
	{5, 8, 1, 24, 17},
	{17, 4, 2, 128, 33},
}

// Attention checks softmax(q·kᵀ·scale + mask)·v with grouped KV heads,
// F32 and F16 caches, a random mask with holes, a causal mask, a token
// that sees no cell (zeros) and a sharp softmax (scale 1): LimitF32Dot
// with an F32 cache, LimitQuant with an F16 one.
func Attention(t *testing.T, b kernels.Backend) { attention(t, b, false) }

// AttentionStrict is Attention with LimitF32Dot for F16 caches too, for
// backends that compute in float32 from the stored halves.
func AttentionStrict(t *testing.T, b kernels.Backend) { attention(t, b, true) }

func attention(t *testing.T, b kernels.Backend, strict bool) {
	r := rng(51)
	inf := float32(math.Inf(-1))
	for _, dt := range []tensor.DType{tensor.F32, tensor.F16} {
		limit := LimitQuant
		if strict || dt == tensor.F32 {
			limit = LimitF32Dot
		}
		for _, c := range attnCases {
			for _, causal := range []bool{false, true} {
				qDim, kvDim := c.heads*c.hd, c.kvHeads*c.hd
				q := randn(r, c.n*qDim, 1)
				kv, vv := randn(r, c.cells*kvDim, 1), randn(r, c.cells*kvDim, 1)
				mask := make([]float32, c.n*c.cells) // (n, cells)
				for i := range c.n {
					for j := range c.cells {
						if causal && j > c.cells-c.n+i || !causal && r.IntN(3) == 0 {
							mask[i*c.cells+j] = inf
						}
					}
				}
				if !causal && c.n > 2 {
					for j := range c.cells { // token 2 sees nothing
						mask[2*c.cells+j] = inf
					}
				}
				scale := float32(1 / math.Sqrt(float64(c.hd)))
				if c.n == 5 {
					scale = 1 // scores of order 5: a sharp softmax
				}
				d := newF32(t, b, nil, c.n, qDim)
				b.Attention(d, newF32(t, b, q, c.n, qDim), newCache(t, b, dt, kv, c.cells, kvDim),
					newCache(t, b, dt, vv, c.cells, kvDim), newF32(t, b, mask, c.n, c.cells), c.heads, c.kvHeads, scale)
				if dt == tensor.F16 {
					kv, vv = half(kv), half(vv)
				}
				what := "Attention " + dt.String() + " " + shapeName(c.n, c.heads, c.kvHeads, c.hd, c.cells)
				if causal {
					what += " causal"
				}
				check(t, what, read(t, b, d, c.n*qDim), refAttention(c, q, kv, vv, mask, scale), limit)
			}
		}
	}
}

// refAttention computes Attention in float64: for each token i and head
// h, the cells j with mask 0 get weights exp(s_j − max s), s_j the scaled
// dot product with KV head h/(heads/kvHeads).
func refAttention(c attnCase, q, k, v, mask []float32, scale float32) []float64 {
	qDim, kvDim := c.heads*c.hd, c.kvHeads*c.hd
	out := make([]float64, c.n*qDim)
	s := make([]float64, c.cells)
	for i := range c.n {
		for h := range c.heads {
			kh := h / (c.heads / c.kvHeads)
			mx := math.Inf(-1)
			for j := range c.cells {
				s[j] = math.Inf(-1)
				if mask[i*c.cells+j] != 0 {
					continue
				}
				var dot float64
				for e := range c.hd {
					dot += float64(q[i*qDim+h*c.hd+e]) * float64(k[j*kvDim+kh*c.hd+e])
				}
				s[j] = dot * float64(scale)
				mx = math.Max(mx, s[j])
			}
			if math.IsInf(mx, -1) {
				continue // no visible cell: zeros
			}
			var sum float64
			for j := range s {
				s[j] = math.Exp(s[j] - mx) // 0 for masked cells
				sum += s[j]
			}
			for e := range c.hd {
				var acc float64
				for j := range s {
					acc += s[j] * float64(v[j*kvDim+kh*c.hd+e])
				}
				out[i*qDim+h*c.hd+e] = acc / sum
			}
		}
	}
	return out
}
