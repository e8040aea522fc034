package cpu

import (
	"fmt"
	"testing"

	"github.com/vkllm/vkllm/tensor"
)

// BenchmarkMatMul multiplies (n, 896) activations by a (4864, 896) weight,
// Qwen2-0.5B's FFN up projection, for each weight dtype the models use.
// GFLOP/s counts 2·n·m·k; GB/s is the weight's bytes read per call.
//
//	go test -run '^$' -bench MatMul ./kernels/cpu/
func BenchmarkMatMul(b *testing.B) {
	const m, k = 4864, 896
	for _, dt := range []tensor.DType{tensor.F32, tensor.F16, tensor.BF16, tensor.Q8_0, tensor.Q4_0, tensor.Q4_1, tensor.Q4_K, tensor.Q6_K} {
		for _, n := range []int{1, 16} {
			b.Run(fmt.Sprintf("%v/n=%d", dt, n), func(b *testing.B) {
				be := New(0)
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
