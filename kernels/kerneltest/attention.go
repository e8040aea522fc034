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

// Attention checks softmax(q·kᵀ·scale)·v over each token's list of
// cells with grouped KV heads, F32 and F16 caches: random lists with
// holes in a random order, causal lists, a token that sees no cell
// (zeros) and a sharp softmax (scale 1): LimitF32Dot with an F32 cache,
// LimitQuant with an F16 one. It then checks placement and batch
// invariance bitwise (attentionPlacement).
func Attention(t *testing.T, b kernels.Backend) { attention(t, b, false) }

// AttentionStrict is Attention with LimitF32Dot for F16 caches too, for
// backends that compute in float32 from the stored halves.
func AttentionStrict(t *testing.T, b kernels.Backend) { attention(t, b, true) }

func attention(t *testing.T, b kernels.Backend, strict bool) {
	r := rng(51)
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
				lists := make([][]int32, c.n)
				for i := range c.n {
					for _, j := range r.Perm(c.cells) {
						if causal && j <= c.cells-c.n+i || !causal && r.IntN(3) != 0 {
							lists[i] = append(lists[i], int32(j))
						}
					}
				}
				if !causal && c.n > 2 {
					lists[2] = nil // token 2 sees nothing
				}
				scale := float32(1 / math.Sqrt(float64(c.hd)))
				if c.n == 5 {
					scale = 1 // scores of order 5: a sharp softmax
				}
				d := newF32(t, b, nil, c.n, qDim)
				b.Attention(d, newF32(t, b, q, c.n, qDim), newCache(t, b, dt, kv, c.cells, kvDim),
					newCache(t, b, dt, vv, c.cells, kvDim), newVis(t, b, lists, c.cells), c.heads, c.kvHeads, scale)
				if dt == tensor.F16 {
					kv, vv = half(kv), half(vv)
				}
				what := "Attention " + dt.String() + " " + shapeName(c.n, c.heads, c.kvHeads, c.hd, c.cells)
				if causal {
					what += " causal"
				}
				check(t, what, read(t, b, d, c.n*qDim), refAttention(c, q, kv, vv, lists, scale), limit)
			}
		}
		attentionPlacement(t, b, dt)
	}
}

// newVis makes the I32 (len(lists), width) tensor of Attention's cell
// lists, each padded with -1.
func newVis(t *testing.T, b kernels.Backend, lists [][]int32, width int) kernels.Tensor {
	t.Helper()
	vis := make([]int32, len(lists)*width)
	for i := range vis {
		vis[i] = -1
	}
	for i, l := range lists {
		copy(vis[i*width:], l)
	}
	x, err := b.NewTensor(tensor.I32, len(lists), width)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Free(x) })
	if err := b.SetI32(x, vis); err != nil {
		t.Fatal(err)
	}
	return x
}

// attentionPlacement checks that a token's result depends only on its
// query and the K/V rows its list names, in order: the same rows moved to
// other cells of a larger cache (the cells of other tokens' sequences
// in between and around them), the token computed in a batch with others
// or alone, must give bitwise the same output. This is what keeps a
// sequence's logits the same whichever cells it occupies. With an F32
// cache two rows cancel, so that a sum in any other order than the
// list's shows, however wide its accumulator.
func attentionPlacement(t *testing.T, b kernels.Backend, dt tensor.DType) {
	r := rng(52)
	// A model-like shape (SmolLM2: 9 heads over 3 KV heads of 64) and a
	// sequence long enough to span several of a backend's chunks.
	const heads, kvHeads, hd, seqLen = 9, 3, 64, 300
	qDim, kvDim := heads*hd, kvHeads*hd
	q := randn(r, qDim, 1)
	rows := randn(r, 2*seqLen*kvDim, 1) // the sequence's K rows, then its V rows
	if dt == tensor.F32 {
		// Positions 0 and 1 get the same key and values ±1e20 in V's first
		// column: summed in position order they cancel exactly before the
		// rest is added; in another order the terms summed before them
		// vanish into 1e20, even in float64.
		copy(rows[kvDim:2*kvDim], rows[:kvDim])
		rows[seqLen*kvDim], rows[(seqLen+1)*kvDim] = 1e20, -1e20
	}
	run := func(cells int, where []int32, others int) []float32 {
		t.Helper()
		// The sequence's rows at cells where[i]; every other cell and
		// token holds noise.
		kv, vv := randn(r, cells*kvDim, 1), randn(r, cells*kvDim, 1)
		for i, c := range where {
			copy(kv[int(c)*kvDim:][:kvDim], rows[i*kvDim:])
			copy(vv[int(c)*kvDim:][:kvDim], rows[(seqLen+i)*kvDim:])
		}
		qs := append([]float32(nil), q...)
		lists := [][]int32{where}
		for range others {
			qs = append(qs, randn(r, qDim, 1)...)
			var l []int32
			for _, j := range r.Perm(cells)[:cells/2] {
				l = append(l, int32(j))
			}
			lists = append(lists, l)
		}
		d := newF32(t, b, nil, len(lists), qDim)
		b.Attention(d, newF32(t, b, qs, len(lists), qDim), newCache(t, b, dt, kv, cells, kvDim),
			newCache(t, b, dt, vv, cells, kvDim), newVis(t, b, lists, cells), heads, kvHeads, 0.125)
		return read(t, b, d, len(lists)*qDim)[:qDim]
	}
	contiguous := make([]int32, seqLen)
	for i := range contiguous {
		contiguous[i] = int32(i)
	}
	want := run(seqLen, contiguous, 0)
	const big = 1000
	for name, where := range map[string][]int32{
		"shuffled": func() []int32 { // anywhere in a larger cache
			w := make([]int32, seqLen)
			for i, c := range r.Perm(big)[:seqLen] {
				w[i] = int32(c)
			}
			return w
		}(),
		"refilled": func() []int32 { // the tail went into freed cells before the head
			w := make([]int32, seqLen)
			for i := range w {
				w[i] = int32(big - seqLen + i)
				if i >= seqLen/3 {
					w[i] = int32(i - seqLen/3)
				}
			}
			return w
		}(),
	} {
		for _, others := range []int{0, 5} {
			got := run(big, where, others)
			for e := range want {
				if math.Float32bits(got[e]) != math.Float32bits(want[e]) {
					t.Errorf("Attention %v placement %s with %d other tokens: element %d = %v, want %v (contiguous cells, alone): not placement invariant",
						dt, name, others, e, got[e], want[e])
					break
				}
			}
		}
	}
}

// refAttention computes Attention in float64: for each token i and head
// h, the cells j of its list get weights exp(s_j − max s), s_j the scaled
// dot product with KV head h/(heads/kvHeads).
func refAttention(c attnCase, q, k, v []float32, lists [][]int32, scale float32) []float64 {
	qDim, kvDim := c.heads*c.hd, c.kvHeads*c.hd
	out := make([]float64, c.n*qDim)
	for i := range c.n {
		l := lists[i]
		if len(l) == 0 {
			continue // no visible cell: zeros
		}
		s := make([]float64, len(l))
		for h := range c.heads {
			kh := h / (c.heads / c.kvHeads)
			mx := math.Inf(-1)
			for x, j := range l {
				var dot float64
				for e := range c.hd {
					dot += float64(q[i*qDim+h*c.hd+e]) * float64(k[int(j)*kvDim+kh*c.hd+e])
				}
				s[x] = dot * float64(scale)
				mx = math.Max(mx, s[x])
			}
			var sum float64
			for x := range s {
				s[x] = math.Exp(s[x] - mx)
				sum += s[x]
			}
			for e := range c.hd {
				var acc float64
				for x, j := range l {
					acc += s[x] * float64(v[int(j)*kvDim+kh*c.hd+e])
				}
				out[i*qDim+h*c.hd+e] = acc / sum
			}
		}
	}
	return out
}
