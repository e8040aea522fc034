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
