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
			fast bool
		}{{"exact/n=1", 1, false}, {"exact/n=16", 16, false}, {"fast/n=1", 1, true}, {"fast/n=16", 16, true}, {"fast/n=64", 64, true}} {
			n := cfg.n
			b.Run(fmt.Sprintf("%v/%s", dt, cfg.name), func(b *testing.B) {
				be := NewWith(Options{Fast: cfg.fast})
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
// (4864, 896) weights in turn (Qwen2-0.5B's FFN up projection), 128 MiB
// of them (four times the L3 cache of this project's CPU), so that the
// weights stream from memory as in decode. GB/s is the weights' bytes
// read per second.
//
//	go test -run '^$' -bench MatMulDecode -cpu 1,2 ./kernels/cpu/
func BenchmarkMatMulDecode(b *testing.B) {
	const m, k = 4864, 896
	for _, dt := range []tensor.DType{tensor.F16, tensor.BF16, tensor.Q8_0, tensor.Q4_0, tensor.Q4_1} {
		b.Run(dt.String(), func(b *testing.B) {
			be := NewWith(Options{Fast: true})
			defer be.Close()
			w0, data := upload(b, be, dt, m, k)
			copies := (128<<20 + len(data) - 1) / len(data)
			ws := []kernels.Tensor{w0}
			for range copies - 1 {
				w, err := be.Upload(tensor.Tensor{Name: "w", DType: dt, Shape: []int64{m, k}, Data: bytes.Clone(data)})
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
// attnAccF16Heads), over 512 cells (in L2) and 8192 (2 MiB of K, past
// it). Mpairs/s counts (cell, head) pairs.
//
//	go test -run '^$' -bench AttnF16 -cpu 1 ./kernels/cpu/
func BenchmarkAttnF16(b *testing.B) {
	const hd, heads, stride = 64, 2, 128
	for _, cells := range []int{512, 8192} {
		k := make([]uint16, cells*stride)
		for i := range k {
			k[i] = f16bits(float32(i%13) * 0.01)
		}
		idx := make([]int32, cells)
		for i := range idx {
			idx[i] = int32(i)
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
			b.Run(fmt.Sprintf("%s/cells=%d", c.name, cells), func(b *testing.B) {
				for b.Loop() {
					c.fn()
				}
				b.ReportMetric(float64(b.N*heads*cells)/b.Elapsed().Seconds()/1e6, "Mpairs/s")
			})
		}
	}
}
