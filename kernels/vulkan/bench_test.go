//go:build cgo

package vulkan

import (
	"math/rand/v2"
	"testing"

	"github.com/vkllm/vkllm/tensor"
)

// BenchmarkMatVec: one token times a 896×896 weight (Qwen2.5-0.5B's
// attention projection), per dtype.
func BenchmarkMatVec(bm *testing.B) {
	b, err := Open(Config{})
	if err != nil {
		bm.Skip(err)
	}
	defer b.Close()
	const k, m = 1024, 1024
	r := rand.New(rand.NewPCG(1, 2))
	vals := make([]float32, k*m)
	for i := range vals {
		vals[i] = float32(r.NormFloat64())
	}
	for _, dt := range []tensor.DType{tensor.F16, tensor.Q8_0, tensor.Q4_0, tensor.Q4_K, tensor.Q6_K} {
		bm.Run(dt.String(), func(bm *testing.B) {
			size, _ := dt.Bytes(k * m)
			data := make([]byte, size)
			if err := tensor.Quantize(dt, vals, data); err != nil {
				for i := range data {
					data[i] = byte(r.Uint32() & 0x3F) // K-quants: random bytes, small scales
				}
			}
			w, err := b.Upload(tensor.Tensor{Name: "w", DType: dt, Shape: []int64{m, k}, Data: data})
			if err != nil {
				bm.Fatal(err)
			}
			defer b.Free(w)
			x, _ := b.NewTensor(tensor.F32, 1, k)
			d, _ := b.NewTensor(tensor.F32, 1, m)
			defer b.Free(x)
			defer b.Free(d)
			for bm.Loop() {
				for range 10 {
					b.MatMul(d, x, w)
				}
				if err := b.Sync(); err != nil {
					bm.Fatal(err)
				}
			}
			bm.ReportMetric(float64(10*bm.N*k*m*2)/bm.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}
