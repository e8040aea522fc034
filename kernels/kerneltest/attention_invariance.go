package kerneltest

import (
	"fmt"
	"math"
	"testing"

	"github.com/vkllm/vkllm/kernels"
	"github.com/vkllm/vkllm/tensor"
)

// invCase is one shape of AttentionInvariance: a sequence of seqLen
// tokens (a causal prefill) with heads query heads over kvHeads KV heads
// of hd, each token seeing the sequence's cells up to its own (the last
// window of them with window > 0), the cells scattered over a cache of
// cells rows.
type invCase struct {
	heads, kvHeads, hd, seqLen, cells, window int
}

var invCases = []invCase{
	{4, 4, 32, 200, 260, 0},  // MHA; lists of 1 to 200 (several chunks)
	{14, 2, 16, 150, 150, 0}, // GQA 7 (Qwen2.5-0.5B's ratio), a full cache
	{6, 2, 7, 140, 300, 0},   // an odd head dim
	{8, 1, 24, 140, 200, 70}, // MQA with a sliding window across chunks
	{9, 3, 40, 70, 100, 0},   // lists across the first chunk boundary (64)
}

// AttentionInvariance checks the batch, chunk and placement invariance
// of Attention bitwise, over lists that cross a backend's chunks and
// segments: each token of a causal prefill computed in the whole batch
// (a backend's prefill kernel), in batches of other sizes (a prompt
// chunked), and alone (a decode step), with its sequence in another
// placement of the cache, must give the same bits; and the whole batch
// must match the float64 reference on the stored values (LimitF32Dot:
// for backends that compute in float32 from an F16 cache's halves).
func AttentionInvariance(t *testing.T, b kernels.Backend) {
	r := rng(53)
	for _, dt := range []tensor.DType{tensor.F32, tensor.F16} {
		for _, c := range invCases {
			name := fmt.Sprintf("%v %s window %d", dt, shapeName(c.seqLen, c.heads, c.kvHeads, c.hd, c.cells), c.window)
			qDim, kvDim := c.heads*c.hd, c.kvHeads*c.hd
			q := randn(r, c.seqLen*qDim, 1)
			rows := randn(r, 2*c.seqLen*kvDim, 1) // the sequence's K rows, then its V rows
			// place puts the sequence at cells where[i] of a cache of
			// noise and returns the caches and each token's list.
			place := func(where []int32) (k, v kernels.Tensor, kf, vf []float32, lists [][]int32) {
				kf, vf = randn(r, c.cells*kvDim, 1), randn(r, c.cells*kvDim, 1)
				for i, cell := range where {
					copy(kf[int(cell)*kvDim:][:kvDim], rows[i*kvDim:])
					copy(vf[int(cell)*kvDim:][:kvDim], rows[(c.seqLen+i)*kvDim:])
				}
				lists = make([][]int32, c.seqLen)
				for i := range lists {
					lo := 0
					if c.window > 0 {
						lo = max(0, i-c.window+1)
					}
					lists[i] = where[lo : i+1]
				}
				k, v = newCache(t, b, dt, kf, c.cells, kvDim), newCache(t, b, dt, vf, c.cells, kvDim)
				return k, v, kf, vf, lists
			}
			run := func(k, v kernels.Tensor, lists [][]int32, toks []int) []float32 {
				t.Helper()
				qs := make([]float32, 0, len(toks)*qDim)
				ls := make([][]int32, len(toks))
				for j, i := range toks {
					qs = append(qs, q[i*qDim:(i+1)*qDim]...)
					ls[j] = lists[i]
				}
				width := 1
				for _, l := range ls {
					width = max(width, len(l))
				}
				d := newF32(t, b, nil, len(toks), qDim)
				b.Attention(d, newF32(t, b, qs, len(toks), qDim), k, v, newVis(t, b, ls, width), c.heads, c.kvHeads, 0.3)
				return read(t, b, d, len(toks)*qDim)
			}
			perm := r.Perm(c.cells)
			where := make([]int32, c.seqLen)
			for i := range where {
				where[i] = int32(perm[i])
			}
			k, v, kf, vf, lists := place(where)
			all := make([]int, c.seqLen)
			for i := range all {
				all[i] = i
			}
			want := run(k, v, lists, all)
			if dt == tensor.F16 {
				kf, vf = half(kf), half(vf)
			}
			check(t, "AttentionInvariance "+name, want, refAttention(attnCase{c.seqLen, c.heads, c.kvHeads, c.hd, c.cells}, q, kf, vf, lists, 0.3), LimitF32Dot)
			same := func(how string, toks []int, got []float32) {
				t.Helper()
				for j, i := range toks {
					for e := range qDim {
						g, w := got[j*qDim+e], want[i*qDim+e]
						if math.Float32bits(g) != math.Float32bits(w) {
							t.Errorf("AttentionInvariance %s: token %d (list of %d) %s: element %d = %v, want %v (the whole batch): not invariant",
								name, i, len(lists[i]), how, e, g, w)
							return
						}
					}
				}
			}
			// Alone (a decode step): tokens at and around the chunk
			// boundaries, the first and the last.
			for _, i := range []int{0, 1, 62, 63, 64, 65, 66, 127, 128, 129, 130, c.seqLen - 1} {
				if i < c.seqLen {
					same("alone", []int{i}, run(k, v, lists, []int{i}))
				}
			}
			// In chunks of a prompt: batches of 3 and 37 tokens.
			for _, size := range []int{3, 37} {
				for lo := 0; lo < c.seqLen; lo += size * 2 { // every other chunk
					toks := all[lo:min(c.seqLen, lo+size)]
					same(fmt.Sprintf("in a batch of %d", len(toks)), toks, run(k, v, lists, toks))
				}
			}
			// Another placement: the sequence reversed over the cache's
			// last cells, alone and in the whole batch.
			moved := make([]int32, c.seqLen)
			for i := range moved {
				moved[i] = int32(c.cells - 1 - i)
			}
			k2, v2, _, _, lists2 := place(moved)
			same("moved", all, run(k2, v2, lists2, all))
			same("moved, alone", []int{c.seqLen - 1}, run(k2, v2, lists2, []int{c.seqLen - 1}))
		}
	}
}
