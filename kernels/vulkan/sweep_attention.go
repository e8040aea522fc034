//go:build cgo

package vulkan

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/x448/float16"

	"github.com/vkllm/vkllm/tensor"
)

// SweepAttention is one attention call the sweep times: N tokens of
// Heads query heads sharing KVHeads KV heads of HD over a cache of Width
// rows. Each token's list is every cell (decode: the "attention"
// family's calls) or, with Causal, a prompt's: token i of N sees the
// first Width−N+1+i positions (the "attention_prefill" family's calls).
type SweepAttention struct {
	Name               string
	Heads, KVHeads, HD int
	N, Width           int
	Causal             bool `json:",omitempty"`
}

// AttentionSweepShapes are the attention calls the sweep times for a
// model of heads query heads sharing kvHeads KV heads of hd: decode, one
// token and a batch of 4 with lists of 256 and 4096 cells; prefill,
// prompts of 16, 48 and 512 tokens (the first two on both sides of
// every candidate of "attention_prefill"'s min). `vkllm bench --sweep`
// passes those of Qwen2.5-0.5B, 14/2/64, and Llama-3.1-8B, 32/8/128.
func AttentionSweepShapes(model string, heads, kvHeads, hd int) []SweepAttention {
	var out []SweepAttention
	for _, n := range []int{1, 4} {
		for _, w := range []int{256, 4096} {
			out = append(out, SweepAttention{Name: fmt.Sprintf("%s attention n=%d w=%d", model, n, w),
				Heads: heads, KVHeads: kvHeads, HD: hd, N: n, Width: w})
		}
	}
	for _, n := range []int{16, 48, 512} {
		out = append(out, SweepAttention{Name: fmt.Sprintf("%s attention prefill n=%d", model, n),
			Heads: heads, KVHeads: kvHeads, HD: hd, N: n, Width: n, Causal: true})
	}
	return out
}

// sweepAttnLimit is the normalized MSE every attention candidate may have
// against float64 sums over the cache's values (kerneltest.LimitF32Dot,
// which AttentionStrict holds the kernels to): a candidate whose segs is
// not the default's gives other bits, so each is checked on its own.
const sweepAttnLimit = 1e-9

// sweepAttention times every candidate of the "attention" family (decode:
// the split kernel and its merge) on shapes with GPU timestamps. Every
// candidate is checked against a float64 reference, and one with the
// default's segs must also give bitwise the default's results (its other
// knobs only move work). The first row is the default; b.attn is restored
// after.
func (b *Backend) sweepAttention(o SweepOptions, shapes []SweepAttention) ([]SweepRow, error) {
	return b.sweepAttnFamily(o, "attention", shapes, 11, func(t *AttentionTuning, c Knobs) {
		t.Segments, t.HeadsPerGroup, t.Workgroups, t.TileFloats = c["segs"], c["heads"], c["wgs"], c["tile"]
		t.PrefillMin = 1 << 30 // decode's kernel at any batch
	}, func(c, def Knobs) bool { return c["segs"] == def["segs"] })
}

// sweepAttnFamily times every candidate of the attention family key on
// shapes with GPU timestamps, each applied to the saved tuning by apply:
// every candidate is checked against a float64 reference (seeded by seed),
// and one for which sameBits(its knobs, the default's) holds must also
// give bitwise the default's results. The first row is the default;
// b.attn is restored after.
func (b *Backend) sweepAttnFamily(o SweepOptions, key string, shapes []SweepAttention, seed uint64,
	apply func(t *AttentionTuning, c Knobs), sameBits func(c, def Knobs) bool) ([]SweepRow, error) {
	rows := o.sweepRows(key, key, len(shapes))
	saved := b.attn
	defer func() { b.attn = saved }()
	dt := tensor.F32
	if b.info.Storage16 {
		dt = tensor.F16 // the cache type models use where the device has it
	}
	r := rand.New(rand.NewPCG(uint64(dt), seed))
	var bytes float64 // K and V bytes a pass over the shapes reads
	for si, s := range shapes {
		at, ref, err := b.sweepAttnData(r, dt, s)
		if err != nil {
			return nil, err
		}
		bytes += attnBytes(dt, s)
		var want []float32
		for ci := range rows {
			row := &rows[ci]
			if row.Wrong != "" {
				continue
			}
			t := saved
			apply(&t, row.Knobs)
			b.attn = t.resolve(b.maxShared)
			if !b.sweepOpen(rows, ci, si) {
				continue
			}
			got, d, err := b.sweepAttnTime(at, s, o.Reps)
			if b.sweepSkip(row, si, d, err) {
				continue
			}
			if err != nil {
				at.free(b)
				return nil, err
			}
			row.Times[si] = d
			if e := nmse64(got, ref); !(e <= sweepAttnLimit) {
				row.Wrong = fmt.Sprintf("%s: NMSE %.3g against float64 sums, above %g", s.Name, e, sweepAttnLimit)
				continue
			}
			if ci == 0 {
				want = got
			} else if sameBits(row.Knobs, rows[0].Knobs) { // rows[0] is the default
				if i := firstDiff(got, want); i >= 0 {
					row.Wrong = fmt.Sprintf("%s: element %d is %v, the default's %v", s.Name, i, got[i], want[i])
				}
			}
		}
		at.free(b)
	}
	score(rows, nil, bytes/1e9, nil)
	return rows, nil
}

// attnBytes are the K and V bytes the tokens of s read, each its list.
func attnBytes(dt tensor.DType, s SweepAttention) float64 {
	cells := s.N * s.Width
	if s.Causal {
		cells = s.N*(s.Width-s.N) + s.N*(s.N+1)/2
	}
	return float64(cells) * float64(2*s.KVHeads*s.HD*dt.BlockBytes()/dt.BlockSize())
}

// sweepAttnTensors are one shape's tensors.
type sweepAttnTensors struct{ d, q, k, v, vis *Tensor }

func (a sweepAttnTensors) free(b *Backend) {
	for _, x := range []*Tensor{a.d, a.q, a.k, a.v, a.vis} {
		if x != nil {
			b.Free(x)
		}
	}
}

// sweepAttnData uploads a shape's random queries and cache (each token's
// list every cell, in its own random order) and returns them with the
// float64 reference over the cache's values as stored.
func (b *Backend) sweepAttnData(r *rand.Rand, dt tensor.DType, s SweepAttention) (sweepAttnTensors, []float64, error) {
	var at sweepAttnTensors
	if s.N <= 0 || s.Heads <= 0 || s.KVHeads <= 0 || s.Heads%s.KVHeads != 0 || s.HD <= 0 || s.HD > attnMaxHD || s.Width <= 0 || s.Causal && s.Width < s.N {
		return at, nil, fmt.Errorf("vulkan: sweep: attention shape %+v", s)
	}
	qDim, kvDim := s.Heads*s.HD, s.KVHeads*s.HD
	randn := func(m int) []float32 {
		x := make([]float32, m)
		for i := range x {
			x[i] = float32(r.NormFloat64())
			if dt == tensor.F16 {
				x[i] = float16.Fromfloat32(x[i]).Float32()
			}
		}
		return x
	}
	q := randn(s.N * qDim)
	k, v := randn(s.Width*kvDim), randn(s.Width*kvDim)
	vis := make([]int32, s.N*s.Width)
	cells := r.Perm(s.Width) // Causal: position p in cell cells[p]
	for i := range s.N {
		if !s.Causal {
			cells = r.Perm(s.Width)
		}
		for j, c := range cells {
			vis[i*s.Width+j] = int32(c)
			if s.Causal && j > s.Width-s.N+i {
				vis[i*s.Width+j] = -1
			}
		}
	}
	mk := func(dt tensor.DType, rows, cols int) *Tensor {
		x, err := b.NewTensor(dt, rows, cols)
		if err != nil {
			return nil
		}
		return x.(*Tensor)
	}
	at = sweepAttnTensors{mk(tensor.F32, s.N, qDim), mk(tensor.F32, s.N, qDim), mk(dt, s.Width, kvDim), mk(dt, s.Width, kvDim), mk(tensor.I32, s.N, s.Width)}
	if at.d == nil || at.q == nil || at.k == nil || at.v == nil || at.vis == nil {
		at.free(b)
		return at, nil, fmt.Errorf("vulkan: sweep: attention %s: tensors do not fit", s.Name)
	}
	for _, err := range []error{b.SetF32(at.q, q), b.SetF32(at.k, k), b.SetF32(at.v, v), b.SetI32(at.vis, vis)} {
		if err != nil {
			at.free(b)
			return at, nil, err
		}
	}
	scale := 1 / math.Sqrt(float64(s.HD))
	ref := make([]float64, s.N*qDim)
	sc := make([]float64, s.Width)
	g := s.Heads / s.KVHeads
	for i := range s.N {
		l := vis[i*s.Width : (i+1)*s.Width]
		if s.Causal {
			l = l[:s.Width-s.N+1+i]
		}
		sc := sc[:len(l)]
		for h := range s.Heads {
			kh := h / g
			mx := math.Inf(-1)
			for x, j := range l {
				var dot float64
				for e := range s.HD {
					dot += float64(q[i*qDim+h*s.HD+e]) * float64(k[int(j)*kvDim+kh*s.HD+e])
				}
				sc[x] = dot * scale
				mx = math.Max(mx, sc[x])
			}
			var sum float64
			for x := range sc {
				sc[x] = math.Exp(sc[x] - mx)
				sum += sc[x]
			}
			out := ref[i*qDim+h*s.HD : i*qDim+(h+1)*s.HD]
			for x, j := range l {
				for e := range out {
					out[e] += sc[x] * float64(v[int(j)*kvDim+kh*s.HD+e])
				}
			}
			for e := range out {
				out[e] /= sum
			}
		}
	}
	return at, ref, nil
}

// sweepAttnTime runs Attention under b.attn once untimed and reps times
// timed, and returns its result and one call's mean GPU time.
func (b *Backend) sweepAttnTime(at sweepAttnTensors, s SweepAttention, reps int) ([]float32, time.Duration, error) {
	scale := float32(1 / math.Sqrt(float64(s.HD)))
	return b.sweepRun(at.d, reps, func() { b.Attention(at.d, at.q, at.k, at.v, at.vis, s.Heads, s.KVHeads, scale) })
}

// nmse64 is Σ(got−want)² / Σwant² (0 for an all-zero want that got
// matches).
func nmse64(got []float32, want []float64) float64 {
	var num, den float64
	for i, w := range want {
		d := float64(got[i]) - w
		num += d * d
		den += w * w
	}
	if den == 0 {
		if num == 0 {
			return 0
		}
		return math.Inf(1)
	}
	return num / den
}
