//go:build cgo

package vulkan

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/vkllm/vkllm/kernels"
	"github.com/vkllm/vkllm/kernels/kerneltest"
	"github.com/vkllm/vkllm/tensor"
)

// attnBatch is a batch for Attention: n tokens of heads×hd queries over a
// cache of cells rows of kvHeads×hd, each token's list of cells padded
// with -1 to width.
type attnBatch struct {
	n, heads, kvHeads, hd, cells, width int
	q, k, v                             []float32
	vis                                 []int32 // (n, width)
}

// newAttnBatch draws a batch whose lists have every length from 0 to
// width, in a random order of the cells.
func newAttnBatch(r *rand.Rand, n, heads, kvHeads, hd, cells, width int) attnBatch {
	a := attnBatch{n: n, heads: heads, kvHeads: kvHeads, hd: hd, cells: cells, width: width}
	randn := func(m int) []float32 {
		x := make([]float32, m)
		for i := range x {
			x[i] = float32(r.NormFloat64())
		}
		return x
	}
	a.q, a.k, a.v = randn(n*heads*hd), randn(cells*kvHeads*hd), randn(cells*kvHeads*hd)
	a.vis = make([]int32, n*width)
	for i := range n {
		row := a.vis[i*width : (i+1)*width]
		l := (i * width) / max(n-1, 1) // 0 for the first token, width for the last
		for j, c := range r.Perm(cells)[:l] {
			row[j] = int32(c)
		}
		for j := l; j < width; j++ {
			row[j] = -1
		}
	}
	return a
}

// attnTensors are a batch's tensors on one backend.
type attnTensors struct {
	dst, q, k, v, vis kernels.Tensor
}

func newAttnTensors(t *testing.T, b *Backend, a attnBatch, dt tensor.DType) attnTensors {
	t.Helper()
	mk := func(dt tensor.DType, rows, cols int) kernels.Tensor {
		x, err := b.NewTensor(dt, rows, cols)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Free(x) })
		return x
	}
	qDim, kvDim := a.heads*a.hd, a.kvHeads*a.hd
	at := attnTensors{mk(tensor.F32, a.n, qDim), mk(tensor.F32, a.n, qDim), mk(dt, a.cells, kvDim), mk(dt, a.cells, kvDim), mk(tensor.I32, a.n, a.width)}
	for _, err := range []error{b.SetF32(at.q, a.q), b.SetF32(at.k, a.k), b.SetF32(at.v, a.v), b.SetI32(at.vis, a.vis)} {
		if err != nil {
			t.Fatal(err)
		}
	}
	return at
}

// attend runs Attention over the batch on b and returns dst.
func attend(t *testing.T, b *Backend, a attnBatch, dt tensor.DType) []float32 {
	t.Helper()
	at := newAttnTensors(t, b, a, dt)
	b.Attention(at.dst, at.q, at.k, at.v, at.vis, a.heads, a.kvHeads, 0.25)
	out := make([]float32, a.n*a.heads*a.hd)
	if err := b.GetF32(at.dst, out); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestAttentionChunks: split attention whose scratch holds fewer tokens
// than the batch runs it in chunks of tokens; every token's result is
// bitwise the one of the whole batch in one dispatch.
func TestAttentionChunks(t *testing.T) {
	const segs, n, heads, kvHeads, hd, cells = 4, 7, 4, 2, 32, 300
	tune := AttentionTuning{Segments: segs, PrefillMin: n + 1}
	perToken := int64(heads * segs * (hd + 2) * 4) // scratch bytes a token
	whole := openTest(t, Config{Attention: tune})
	chunked := map[int64]*Backend{} // by the scratch's room in tokens, one for both dtypes
	for _, tokens := range []int64{1, 3} {
		chunked[tokens] = openTest(t, Config{Attention: tune, AttentionScratch: tokens * perToken})
	}
	for _, dt := range []tensor.DType{tensor.F32, tensor.F16} {
		if dt == tensor.F16 && !whole.Device().Storage16 {
			continue
		}
		a := newAttnBatch(rand.New(rand.NewPCG(1, uint64(dt))), n, heads, kvHeads, hd, cells, cells)
		want := attend(t, whole, a, dt)
		if got := int64(numel(whole.scr) * 4); got < n*perToken {
			t.Fatalf("default scratch of %d bytes holds fewer than the batch's %d tokens", got, n)
		}
		for _, tokens := range []int64{1, 3} { // the scratch's room in tokens
			b := chunked[tokens]
			got := attend(t, b, a, dt)
			if room := int64(numel(b.scr) * 4); room != tokens*perToken {
				t.Fatalf("%v, %d tokens: scratch of %d bytes, want %d (the chunks do not run)", dt, tokens, room, tokens*perToken)
			}
			for i := range want {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Fatalf("%v, chunks of %d tokens: token %d element %d = %v, want %v (one chunk)",
						dt, tokens, i/(heads*hd), i%(heads*hd), got[i], want[i])
				}
			}
			checkClean(t, b)
		}
	}
	checkClean(t, whole)
}

// TestReserveAttention: once the scratch is reserved for rows tokens and
// lists of maxWidth cells, Attention over any batch of at most rows tokens
// and lists of at most maxWidth cells allocates no device memory, with the
// default scratch bound and with one that holds a single token. A smaller
// reserve keeps the larger scratch.
func TestReserveAttention(t *testing.T) {
	const rows, heads, kvHeads, hd, cells = 6, 4, 2, 32, 300
	for _, limit := range []int64{0, 1} {
		b := openTest(t, Config{Attention: AttentionTuning{Segments: 3, PrefillMin: rows + 1}, AttentionScratch: limit})
		a := newAttnBatch(rand.New(rand.NewPCG(2, 2)), rows, heads, kvHeads, hd, cells, cells)
		at := newAttnTensors(t, b, a, tensor.F32)
		if err := b.ReserveAttention(rows, heads, hd, cells); err != nil {
			t.Fatal(err)
		}
		base := b.Allocations()
		if err := b.ReserveAttention(1, heads, hd, cells/2); err != nil {
			t.Fatal(err)
		}
		qDim := heads * hd
		vis := make([]int32, rows*cells)
		for n := 1; n <= rows; n++ {
			for _, w := range []int{1, attnChunk, attnChunk + 1, 3*attnChunk + 5, cells} {
				for i := range n * w { // each token's first w entries of a's lists
					vis[i] = a.vis[(i/w)*cells+i%w]
				}
				vw := b.View(at.vis, n, w)
				if err := b.SetI32(vw, vis[:n*w]); err != nil {
					t.Fatal(err)
				}
				b.Attention(b.View(at.dst, n, qDim), b.View(at.q, n, qDim), at.k, at.v, vw, heads, kvHeads, 0.25)
				if err := b.Sync(); err != nil {
					t.Fatal(err)
				}
				if got := b.Allocations() - base; got != 0 {
					t.Fatalf("scratch limit %d: %d tokens, lists of %d: %d allocations after ReserveAttention", limit, n, w, got)
				}
			}
		}
		checkClean(t, b)
	}
}

// TestReserveAttentionErrors: bad shapes and a scratch no binding can
// hold are errors, not panics.
func TestReserveAttentionErrors(t *testing.T) {
	b := openTest(t, Config{})
	if err := b.ReserveAttention(-1, 4, 32, 64); err == nil {
		t.Error("ReserveAttention(-1 rows): no error")
	}
	// One token of 1<<20 heads over 1<<22 cells (32 segments) needs 34 GB.
	if err := b.ReserveAttention(1, 1<<20, 256, 1<<22); !errors.Is(err, ErrTooLarge) {
		t.Errorf("ReserveAttention of a huge token: %v, want ErrTooLarge", err)
	}
	var _ kernels.AttentionReserver = b
}

// TestAttentionInvariance runs kerneltest.AttentionInvariance (a token's
// bits the same in a prefill batch, any chunk of it, alone and in
// another placement) under tunings that move every boundary: the
// defaults; 2 segments (several chunks a segment, merged) with every
// decode workgroup serving all its KV head's query heads; one query
// head per workgroup and small prefill tiles and K/V tiles (every
// sub-tile path); prefill from 2 tokens; and the decode kernel alone.
func TestAttentionInvariance(t *testing.T) {
	for name, tune := range map[string]AttentionTuning{
		"default":    {},
		"segments 2": {Segments: 2, Workgroups: 1},
		"small":      {HeadsPerGroup: 1, QueryRows: 3, TileFloats: 256, PrefillWG: 64, Segments: 3},
		"prefill 2":  {PrefillMin: 2, HeadsPerGroup: 3, QueryRows: 8},
		"decode":     {PrefillMin: 1 << 20, Segments: 5},
	} {
		t.Run(name, func(t *testing.T) {
			b := openTest(t, Config{Attention: tune})
			kerneltest.AttentionInvariance(t, b)
			checkClean(t, b)
		})
	}
}

// TestAttentionLongPrompt: the last prefill chunk of a long prompt (256
// tokens at positions up to 8191, and without -short 32 tokens, the
// default PrefillMin, at positions up to 32767) over a cache of the
// whole prompt, two query heads of 8 over one KV head,
// makes no device allocation once reserved (the prefill kernel has no
// score matrix and no scratch: its memory does not grow with the
// prompt), matches the float64 reference, and gives the last token the
// bits of a decode step over the same list (the decode kernel, split
// into 32 segments). On llvmpipe 8192 cells run the prefill kernel and
// 32768 the decode kernel (prefillFits: its loop limit).
func TestAttentionLongPrompt(t *testing.T) {
	for _, cells := range []int{8192, 32768} {
		if cells > 8192 && testing.Short() {
			t.Skip("32k cells under -short")
		}
		const heads, kvHeads, hd = 2, 1, 8
		n := 256
		if cells > 8192 {
			n = 32 // the decode kernel's work on llvmpipe grows with n×cells
		}
		b := openTest(t, Config{})
		if cells == 8192 && !b.prefillFits(cells, 16, hd) {
			t.Fatalf("%d cells of %d rows of %d do not run the prefill kernel", cells, 16, hd)
		}
		r := rand.New(rand.NewPCG(3, uint64(cells)))
		a := attnBatch{n: n, heads: heads, kvHeads: kvHeads, hd: hd, cells: cells, width: cells}
		randn := func(m int) []float32 {
			x := make([]float32, m)
			for i := range x {
				x[i] = float32(r.NormFloat64())
			}
			return x
		}
		a.q, a.k, a.v = randn(n*heads*hd), randn(cells*kvHeads*hd), randn(cells*kvHeads*hd)
		a.vis = make([]int32, n*cells)
		for i := range n { // token i at position cells−n+i sees cells 0..its position
			for j := range cells {
				a.vis[i*cells+j] = -1
				if j <= cells-n+i {
					a.vis[i*cells+j] = int32(j)
				}
			}
		}
		at := newAttnTensors(t, b, a, tensor.F32)
		if err := b.ReserveAttention(n, heads, hd, cells); err != nil {
			t.Fatal(err)
		}
		base := b.Allocations()
		b.Attention(at.dst, at.q, at.k, at.v, at.vis, heads, kvHeads, 0.25)
		if err := b.Sync(); err != nil {
			t.Fatal(err)
		}
		if d := b.Allocations() - base; d != 0 {
			t.Errorf("%d cells: the prefill of %d tokens made %d device allocations", cells, n, d)
		}
		got := make([]float32, n*heads*hd)
		if err := b.GetF32(at.dst, got); err != nil {
			t.Fatal(err)
		}
		// The float64 reference for every token.
		var num, den float64
		for i := range n {
			l := cells - n + i + 1
			for h := range heads {
				s := make([]float64, l)
				mx := math.Inf(-1)
				for j := range l {
					var dot float64
					for e := range hd {
						dot += float64(a.q[(i*heads+h)*hd+e]) * float64(a.k[j*hd+e])
					}
					s[j] = dot * 0.25
					mx = math.Max(mx, s[j])
				}
				var sum float64
				for j := range s {
					s[j] = math.Exp(s[j] - mx)
					sum += s[j]
				}
				for e := range hd {
					var acc float64
					for j := range l {
						acc += s[j] * float64(a.v[j*hd+e])
					}
					w := acc / sum
					d := float64(got[(i*heads+h)*hd+e]) - w
					num, den = num+d*d, den+w*w
				}
			}
		}
		if num/den > 1e-9 {
			t.Errorf("%d cells: NMSE %.3g against float64, want ≤ 1e-9", cells, num/den)
		}
		// The last token alone: a decode step.
		last := attnBatch{n: 1, heads: heads, kvHeads: kvHeads, hd: hd, cells: cells, width: cells,
			q: a.q[(n-1)*heads*hd:], k: a.k, v: a.v, vis: a.vis[(n-1)*cells:]}
		one := attend(t, b, last, tensor.F32)
		for e := range one {
			if g, w := one[e], got[(n-1)*heads*hd+e]; math.Float32bits(g) != math.Float32bits(w) {
				t.Fatalf("%d cells: the last token alone: element %d = %v, in the prefill %v", cells, e, g, w)
			}
		}
		checkClean(t, b)
	}
}

// TestAttentionTuningKeys: AttentionTuning's fields come from the tuning's
// "attention" and "attention_prefill" keys (a device file, Config.Tuning
// or VKLLM_VULKAN_TUNING), Config.Attention's non-zero fields win over
// them, and a tuning's segs gives bitwise what Config.Attention's
// Segments gives, unlike the default's.
func TestAttentionTuningKeys(t *testing.T) {
	tune := Tuning{"attention": {"segs": 8, "heads": 2, "wgs": 64, "tile": 2048}, "attention_prefill": {"rows": 8, "wg": 256, "min": 16}}
	if err := tune.Check(); err != nil {
		t.Fatal(err)
	}
	want := AttentionTuning{Segments: 8, HeadsPerGroup: 2, Workgroups: 64, TileFloats: 2048, QueryRows: 8, PrefillWG: 256, PrefillMin: 16}
	if got := (AttentionTuning{}).withTuning(tune); got != want {
		t.Errorf("tuning %v: %+v, want %+v", tune, got, want)
	}
	want.Segments, want.PrefillMin = 16, 64
	if got := (AttentionTuning{Segments: 16, PrefillMin: 64}).withTuning(tune); got != want {
		t.Errorf("Config.Attention over tuning: %+v, want %+v", got, want)
	}
	def := AttentionTuning{Segments: 32, HeadsPerGroup: 8, Workgroups: 128, TileFloats: 4096, QueryRows: 16, PrefillWG: 128, PrefillMin: 32}
	if got := (AttentionTuning{}).withTuning(nil); got != def {
		t.Errorf("no tuning: %+v, want the defaults %+v", got, def)
	}

	const n, heads, kvHeads, hd, cells = 3, 4, 2, 16, 1024 // 16 chunks: 8 and 32 segments cut them differently
	a := newAttnBatch(rand.New(rand.NewPCG(7, 1)), n, heads, kvHeads, hd, cells, cells)
	byTuning := openTest(t, Config{Tuning: Tuning{"attention": {"segs": 8}}})
	if byTuning.attn.Segments != 8 {
		t.Fatalf("Config.Tuning segs=8: backend has Segments %d", byTuning.attn.Segments)
	}
	got := attend(t, byTuning, a, tensor.F32)
	ref := attend(t, openTest(t, Config{Attention: AttentionTuning{Segments: 8}}), a, tensor.F32)
	other := attend(t, openTest(t, Config{}), a, tensor.F32)
	same := true
	for i := range ref {
		if math.Float32bits(got[i]) != math.Float32bits(ref[i]) {
			t.Fatalf("element %d = %v by the tuning, %v by Config.Attention", i, got[i], ref[i])
		}
		same = same && math.Float32bits(other[i]) == math.Float32bits(ref[i])
	}
	if same {
		t.Error("8 and 32 segments give the same bits: the test does not see the tuning")
	}
	if b := openTest(t, Config{Tuning: Tuning{"attention": {"segs": 8}}, Attention: AttentionTuning{Segments: 16}}); b.attn.Segments != 16 {
		t.Errorf("Config.Attention Segments 16 under tuning segs=8: %d", b.attn.Segments)
	}
}
