package cpu

import (
	"testing"

	"github.com/vkllm/vkllm/kernels"
	"github.com/vkllm/vkllm/kernels/kerneltest"
	"github.com/vkllm/vkllm/tensor"
)

func TestRegistered(t *testing.T) {
	b, err := kernels.Open("cpu", kernels.Options{Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	if b.Name() != "cpu" || b.(*Backend).Threads != 2 {
		t.Fatalf("Open(cpu) = %s with %d threads", b.Name(), b.(*Backend).Threads)
	}
}

// upload makes a (rows, cols) weight of dt from random values.
var upload = kerneltest.RandomWeight

// The dtypes of the models vkllm runs must never be skipped by the suite.
func TestUploadTakesModelDTypes(t *testing.T) {
	b := New(1)
	for _, dt := range []tensor.DType{tensor.F32, tensor.F16, tensor.BF16, tensor.Q8_0, tensor.Q4_0, tensor.Q4_1, tensor.Q4_K, tensor.Q6_K} {
		upload(t, b, dt, 2, 256)
	}
}
