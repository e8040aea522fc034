package cpubase_test

import (
	"math"
	"strings"
	"testing"

	"github.com/vkllm/vkllm/kernels"
	"github.com/vkllm/vkllm/kernels/cpu"
	"github.com/vkllm/vkllm/kernels/cpuref"
	"github.com/vkllm/vkllm/kernels/kerneltest"
	"github.com/vkllm/vkllm/tensor"
)

// Shape mismatches are programmer errors: on both CPU backends they panic
// naming the op.
func TestShapeMismatchPanics(t *testing.T) {
	for _, b := range []kernels.Backend{cpu.New(1), cpuref.New(1)} {
		t.Run(b.Name(), func(t *testing.T) { shapeMismatchPanics(t, b) })
	}
}

func shapeMismatchPanics(t *testing.T, b kernels.Backend) {
	mk := func(dt tensor.DType, shape ...int) kernels.Tensor {
		x, err := b.NewTensor(dt, shape...)
		if err != nil {
			t.Fatal(err)
		}
		return x
	}
	w, _ := kerneltest.RandomWeight(t, b, tensor.Q8_0, 4, 32)
	for _, c := range []struct {
		op string
		fn func()
	}{
		{"MatMul", func() { b.MatMul(mk(tensor.F32, 1, 4), mk(tensor.F32, 1, 64), w) }},
		{"MatMul", func() { b.MatMul(mk(tensor.F32, 1, 3), mk(tensor.F32, 1, 32), w) }},
		{"Add", func() { b.Add(mk(tensor.F32, 2, 3), mk(tensor.F32, 2, 3), mk(tensor.F32, 2)) }},
		{"RMSNorm", func() { b.RMSNorm(mk(tensor.F32, 2, 3), mk(tensor.F32, 2, 3), mk(tensor.F32, 4), 1e-6) }},
		{"GetRows", func() { b.GetRows(mk(tensor.F32, 1, 32), w, mk(tensor.I32, 2)) }},
		{"Attention", func() {
			b.Attention(mk(tensor.F32, 1, 8), mk(tensor.F32, 1, 8), mk(tensor.F32, 3, 4), mk(tensor.F32, 3, 4), mk(tensor.I32, 2, 2), 2, 1, 1)
		}},
		{"KVWrite", func() { b.KVWrite(mk(tensor.F32, 2, 4), mk(tensor.F32, 1, 4), mk(tensor.I32, 2)) }},
		{"SwiGLU", func() { b.SwiGLU(mk(tensor.I32, 2), mk(tensor.I32, 2), mk(tensor.I32, 2)) }},
	} {
		func() {
			defer func() {
				msg, _ := recover().(string)
				if !strings.HasPrefix(msg, "cpu: "+c.op) {
					t.Errorf("%s: panic %q, want one naming the op", c.op, msg)
				}
			}()
			c.fn()
		}()
	}
	// An id outside the table is the caller's bug too.
	ids := mk(tensor.I32, 1)
	_ = b.SetI32(ids, []int32{4})
	func() {
		defer func() {
			if msg, _ := recover().(string); !strings.Contains(msg, "outside") {
				t.Errorf("GetRows with id 4 of 4 rows: panic %q", msg)
			}
		}()
		b.GetRows(mk(tensor.F32, 1, 32), w, ids)
	}()
}

// Results do not depend on how many goroutines split the work, on either
// CPU backend, for every weight dtype of the models.
func TestThreadsBitwiseEqual(t *testing.T) {
	for _, newBackend := range []func(int) kernels.Backend{
		func(n int) kernels.Backend { return cpu.New(n) },
		func(n int) kernels.Backend { return cpuref.New(n) },
	} {
		one, many := newBackend(1), newBackend(7)
		t.Run(one.Name(), func(t *testing.T) {
			defer one.Close()
			defer many.Close()
			for _, dt := range []tensor.DType{tensor.F32, tensor.F16, tensor.BF16, tensor.Q8_0, tensor.Q4_0, tensor.Q4_1, tensor.Q4_K, tensor.Q6_K} {
				var outs [2][]float32
				for bi, b := range []kernels.Backend{one, many} {
					w, _ := kerneltest.RandomWeight(t, b, dt, 37, 256)
					x, _ := b.NewTensor(tensor.F32, 70, 256)
					xs := make([]float32, 70*256)
					for i := range xs {
						xs[i] = float32(math.Sin(float64(i)))
					}
					_ = b.SetF32(x, xs)
					d, _ := b.NewTensor(tensor.F32, 70, 37)
					b.MatMul(d, x, w)
					outs[bi] = make([]float32, 70*37)
					_ = b.GetF32(d, outs[bi])
				}
				for i := range outs[0] {
					if math.Float32bits(outs[0][i]) != math.Float32bits(outs[1][i]) {
						t.Fatalf("%v element %d: 1 thread %v, 7 threads %v", dt, i, outs[0][i], outs[1][i])
					}
				}
			}
		})
	}
}
