package cpubase_test

import (
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
		{"Softmax", func() { b.Softmax(mk(tensor.I32, 2)) }},
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
