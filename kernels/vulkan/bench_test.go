//go:build cgo

package vulkan

import (
	"fmt"
	"math/rand/v2"
	"syscall"
	"testing"
	"time"

	"github.com/vkllm/vkllm/tensor"
)

// benchDTypes are the weight dtypes the MatMul benchmarks sweep.
var benchDTypes = []tensor.DType{tensor.F16, tensor.Q8_0, tensor.Q4_0, tensor.Q4_K, tensor.Q6_K}

// benchWeight uploads a random (m, k) weight of dtype dt.
func benchWeight(bm *testing.B, b *Backend, dt tensor.DType, m, k int) *Tensor {
	r := rand.New(rand.NewPCG(1, 2))
	vals := make([]float32, k*m)
	for i := range vals {
		vals[i] = float32(r.NormFloat64())
	}
	size, _ := dt.Bytes(int64(k * m))
	data := make([]byte, size)
	if err := tensor.Quantize(dt, vals, data); err != nil {
		for i := range data {
			data[i] = byte(r.Uint32() & 0x3F) // K-quants: random bytes, small scales
		}
	}
	w, err := b.Upload(tensor.Tensor{Name: "w", DType: dt, Shape: []int64{int64(m), int64(k)}, Data: data})
	if err != nil {
		bm.Fatal(err)
	}
	return w.(*Tensor)
}

// benchMatMul times calls MatMuls of n tokens by w per Sync.
func benchMatMul(bm *testing.B, b *Backend, w *Tensor, n, calls int) {
	k, m := w.cols, w.rows
	x, _ := b.NewTensor(tensor.F32, n, k)
	d, _ := b.NewTensor(tensor.F32, n, m)
	defer b.Free(x)
	defer b.Free(d)
	b.MatMul(d, x, w) // creates the pipeline (lavapipe compiles it) before the timing
	if err := b.Sync(); err != nil {
		bm.Fatal(err)
	}
	cpu0 := cpuTime()
	for bm.Loop() {
		for range calls {
			b.MatMul(d, x, w)
		}
		if err := b.Sync(); err != nil {
			bm.Fatal(err)
		}
	}
	bm.ReportMetric(float64(calls*bm.N*n*k*m*2)/bm.Elapsed().Seconds()/1e9, "GFLOP/s")
	// On lavapipe the device is this process's threads: their CPU time
	// is steadier than wall time on a shared machine.
	bm.ReportMetric((cpuTime()-cpu0).Seconds()*1e3/float64(bm.N), "cpu-ms/op")
}

// BenchmarkMatVec: one token times a 1024×1024 weight, per dtype.
func BenchmarkMatVec(bm *testing.B) {
	b, err := Open(Config{})
	if err != nil {
		bm.Skip(err)
	}
	defer b.Close()
	for _, dt := range benchDTypes {
		bm.Run(dt.String(), func(bm *testing.B) {
			w := benchWeight(bm, b, dt, 1024, 1024)
			defer b.Free(w)
			benchMatMul(bm, b, w, 1, 10)
		})
	}
}

// BenchmarkPrefill: 64 tokens times a 1024×1024 and a 512×4096 weight
// (k = 1024 leaves half the 64 lanes idle with 32-element quant groups,
// k = 4096 none), per dtype, on the matrix-vector kernel in tiles of 8
// tokens (kernel=matvec, what a prefill ran before the tiled kernel) and
// on the tiled one (kernel=tiled), each with float32 and fp16 dots. On
// lavapipe compare cpu-ms/op:
//
//	go test ./kernels/vulkan/ -run '^$' -bench Prefill -benchtime 5x -count 3
func BenchmarkPrefill(bm *testing.B) {
	for _, c := range []struct {
		name string
		cfg  Config
	}{
		{"kernel=matvec", Config{NoTiled: true}},
		{"kernel=tiled", Config{}},
		{"kernel=matvec/fp16", Config{NoTiled: true, FP16: true}},
		{"kernel=tiled/fp16", Config{FP16: true}},
	} {
		b, err := Open(c.cfg)
		if err != nil {
			bm.Skip(err)
		}
		for _, dt := range benchDTypes {
			for _, mk := range [][2]int{{1024, 1024}, {512, 4096}} {
				bm.Run(fmt.Sprintf("%s/%v/k=%d", c.name, dt, mk[1]), func(bm *testing.B) {
					w := benchWeight(bm, b, dt, mk[0], mk[1])
					defer b.Free(w)
					benchMatMul(bm, b, w, 64, 1)
					bm.ReportMetric(float64(64*bm.N)/bm.Elapsed().Seconds(), "tok/s")
				})
			}
		}
		b.Close()
	}
}

// cpuTime is the user and system time of this process so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
