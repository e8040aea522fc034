package cpu

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/vkllm/vkllm/kernels"
	"github.com/vkllm/vkllm/tensor"
)

// BenchmarkMatMul multiplies (n, 896) activations by a (4864, 896) weight,
// Qwen2-0.5B's FFN up projection, for each weight dtype the models use,
// on the reference path and the fast path. GFLOP/s counts 2·n·m·k; GB/s
// is the weight's bytes read per call.
//
//	go test -run '^$' -bench MatMul ./kernels/cpu/
func BenchmarkMatMul(b *testing.B) {
	const m, k = 4864, 896
	for _, dt := range []tensor.DType{tensor.F32, tensor.F16, tensor.BF16, tensor.Q8_0, tensor.Q4_0, tensor.Q4_1, tensor.Q4_K, tensor.Q6_K} {
		for _, cfg := range []struct {
			name string
			n    int
		}{{"n=1", 1}, {"n=16", 16}, {"n=64", 64}} {
			n := cfg.n
			b.Run(fmt.Sprintf("%v/%s", dt, cfg.name), func(b *testing.B) {
				be := New(0)
				defer be.Close()
				kk := k
				if dt.BlockSize() == 256 {
					kk = 1024 // K-quant rows are whole 256-blocks; 896 is not
				}
				w, data := upload(b, be, dt, m, kk)
				x, _ := be.NewTensor(tensor.F32, n, kk)
				d, _ := be.NewTensor(tensor.F32, n, m)
				for b.Loop() {
					be.MatMul(d, x, w)
				}
				sec := b.Elapsed().Seconds() / float64(b.N)
				b.ReportMetric(2*float64(n*m*kk)/sec/1e9, "GFLOP/s")
				b.ReportMetric(float64(len(data))/sec/1e9, "GB/s")
			})
		}
	}
}

// BenchmarkMatMulDecode multiplies one activation row by distinct
// (4864, 896) weights in turn (Qwen2-0.5B's FFN up projection; Q4_K
// (4864, 1024), whole super-blocks), 128 MiB of them (four times the L3
// cache of this project's CPU), so that the
// weights stream from memory as in decode. GB/s is the weights' bytes
// read per second.
//
//	go test -run '^$' -bench MatMulDecode -cpu 1,2 ./kernels/cpu/
func BenchmarkMatMulDecode(b *testing.B) {
	const m, k = 4864, 896
	for _, dt := range []tensor.DType{tensor.F16, tensor.BF16, tensor.Q8_0, tensor.Q4_0, tensor.Q4_1, tensor.Q4_K} {
		b.Run(dt.String(), func(b *testing.B) {
			be := New(0)
			defer be.Close()
			k := k
			if dt.BlockSize() == 256 {
				k = 1024 // K-quant rows are whole 256-blocks; 896 is not
			}
			w0, data := upload(b, be, dt, m, k)
			copies := (128<<20 + len(data) - 1) / len(data)
			ws := []kernels.Tensor{w0}
			for range copies - 1 {
				w, err := be.Upload(tensor.Tensor{Name: "w", DType: dt, Shape: []int64{m, int64(k)}, Data: bytes.Clone(data)})
				if err != nil {
					b.Fatal(err)
				}
				ws = append(ws, w)
			}
			x, _ := be.NewTensor(tensor.F32, 1, k)
			d, _ := be.NewTensor(tensor.F32, 1, m)
			for b.Loop() {
				for _, w := range ws {
					be.MatMul(d, x, w)
				}
			}
			b.ReportMetric(float64(copies*len(data))*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
		})
	}
}

// BenchmarkAttnF16 runs the F16-cache attention kernels for the two query
// heads of one KV head (head size 64, cache rows of two KV heads, as
// Qwen2.5-0.5B): scores and weighted sums, one head at a time
// (attnScoresF16, attnAccF16) and both at once (attnScoresF16Heads,
// attnAccF16Heads), over 512 cells (in L2), 8192 (2 MiB of K, past it)
// and 8192 16 rows apart (32 MiB of K, the L3 cache's size: one of 16
// sequences decoding together in a unified cache). Mpairs/s counts
// (cell, head) pairs.
//
//	go test -run '^$' -bench AttnF16 -cpu 1 ./kernels/cpu/
func BenchmarkAttnF16(b *testing.B) {
	const hd, heads, stride = 64, 2, 128
	for _, cfg := range []struct{ cells, apart int }{{512, 1}, {8192, 1}, {8192, 16}} {
		cells := cfg.cells
		k := make([]uint16, cells*cfg.apart*stride)
		for i := range k {
			k[i] = f16bits(float32(i%13) * 0.01)
		}
		idx := make([]int32, cells)
		for i := range idx {
			idx[i] = int32(i * cfg.apart)
		}
		q, out, acc := make([]float32, heads*hd), make([]float32, heads*cells), make([]float32, heads*hd)
		for _, c := range []struct {
			name string
			fn   func()
		}{
			{"scores/one", func() {
				for h := range heads {
					attnScoresF16(q[h*hd:(h+1)*hd], k, idx, stride, 0.1, out[h*cells:(h+1)*cells])
				}
			}},
			{"scores/heads", func() { attnScoresF16Heads(heads, q, hd, k, idx, stride, 0.1, out, cells) }},
			{"acc/one", func() {
				for h := range heads {
					attnAccF16(k, idx, out[h*cells:(h+1)*cells], stride, acc[h*hd:(h+1)*hd])
				}
			}},
			{"acc/heads", func() { attnAccF16Heads(heads, k, idx, out, cells, stride, acc, hd, hd) }},
		} {
			name := fmt.Sprintf("%s/cells=%d", c.name, cells)
			if cfg.apart > 1 {
				name += fmt.Sprintf("/apart=%d", cfg.apart)
			}
			b.Run(name, func(b *testing.B) {
				for b.Loop() {
					c.fn()
				}
				b.ReportMetric(float64(b.N*heads*cells)/b.Elapsed().Seconds()/1e6, "Mpairs/s")
			})
		}
	}
}

// BenchmarkAttentionDecode is Backend.Attention on the fast path for one
// token over an F16 cache of `cells` visible cells, with the head layouts
// of Qwen2.5-0.5B (14 query heads on 2 KV heads) and SmolLM2-135M (9 on
// 3), head size 64: one layer of a batch-1 decode step. The K and V
// tensors are copied to fill 24 MiB and visited in turn, so that they
// come from beyond L2 as in decode (where the weights read between two
// layers push them out of the caches).
//
//	go test -run '^$' -bench AttentionDecode -cpu 2 ./kernels/cpu/
func BenchmarkAttentionDecode(b *testing.B) {
	const hd = 64
	for _, m := range []struct {
		name           string
		heads, kvHeads int
	}{{"qwen0.5b", 14, 2}, {"smollm2", 9, 3}} {
		for _, cells := range []int{128, 640} {
			b.Run(fmt.Sprintf("%s/cells=%d", m.name, cells), func(b *testing.B) {
				be := New(0)
				defer be.Close()
				kvDim := m.kvHeads * hd
				layers := max(1, (24<<20)/(2*cells*kvDim*2))
				vals := make([]float32, cells*kvDim)
				for i := range vals {
					vals[i] = float32(i%29)*0.01 - 0.14
				}
				var ks, vs []kernels.Tensor
				for range layers {
					k, _ := be.NewTensor(tensor.F16, cells, kvDim)
					v, _ := be.NewTensor(tensor.F16, cells, kvDim)
					if err := be.SetF32(k, vals); err != nil {
						b.Fatal(err)
					}
					if err := be.SetF32(v, vals); err != nil {
						b.Fatal(err)
					}
					ks, vs = append(ks, k), append(vs, v)
				}
				q, _ := be.NewTensor(tensor.F32, 1, m.heads*hd)
				qv := make([]float32, m.heads*hd)
				for i := range qv {
					qv[i] = float32(i%7) * 0.05
				}
				if err := be.SetF32(q, qv); err != nil {
					b.Fatal(err)
				}
				vis, _ := be.NewTensor(tensor.I32, 1, cells) // every cell, in order
				all := make([]int32, cells)
				for i := range all {
					all[i] = int32(i)
				}
				if err := be.SetI32(vis, all); err != nil {
					b.Fatal(err)
				}
				d, _ := be.NewTensor(tensor.F32, 1, m.heads*hd)
				l := 0
				for b.Loop() {
					be.Attention(d, q, ks[l], vs[l], vis, m.heads, m.kvHeads, 0.125)
					l = (l + 1) % layers
				}
				b.ReportMetric(float64(b.N*m.heads*cells)/b.Elapsed().Seconds()/1e6, "Mpairs/s")
			})
		}
	}
}
