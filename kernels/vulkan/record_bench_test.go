//go:build cgo

package vulkan

import (
	"testing"

	"github.com/vkllm/vkllm/kernels"
	"github.com/vkllm/vkllm/tensor"
)

// BenchmarkRecord: the host cost of recording a decode step's small ops
// (ns/op is per op; the device's work runs at the Sync, off the clock,
// and the step is not submitted in pieces). On lavapipe it measures this
// package's and the driver's recording only:
//
//	go test ./kernels/vulkan/ -run '^$' -bench Record -benchmem
func BenchmarkRecord(bm *testing.B) {
	b, err := Open(Config{})
	if err != nil {
		bm.Skip(err)
	}
	defer b.Close()
	b.pieceFirst = 0
	x, _ := b.NewTensor(tensor.F32, 1, 896)
	y, _ := b.NewTensor(tensor.F32, 1, 896)
	w, _ := b.NewTensor(tensor.F32, 896)
	pos, _ := b.NewTensor(tensor.I32, 1)
	cache, _ := b.NewTensor(tensor.F32, 64, 896)
	cells, _ := b.NewTensor(tensor.I32, 1)
	rope := kernels.RoPE{Style: kernels.RoPENeox, HeadDim: 64, Theta: 10000}
	const ops = 5
	step := func() {
		b.Add(y, y, x)
		b.RMSNorm(x, y, w, 1e-6)
		b.SwiGLU(y, y, x)
		b.RoPE(x, pos, rope)
		b.KVWrite(cache, x, cells)
	}
	step()
	if err := b.Sync(); err != nil {
		bm.Fatal(err)
	}
	bm.ReportAllocs()
	bm.ResetTimer()
	for i := 0; i < bm.N; i += ops {
		step()
		if i%(200*ops) == 0 {
			bm.StopTimer()
			if err := b.Sync(); err != nil {
				bm.Fatal(err)
			}
			bm.StartTimer()
		}
	}
	bm.StopTimer()
	if err := b.Sync(); err != nil {
		bm.Fatal(err)
	}
}
