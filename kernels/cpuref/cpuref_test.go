package cpuref

import (
	"errors"
	"runtime"
	"testing"

	"github.com/vkllm/vkllm/kernels"
	"github.com/vkllm/vkllm/kernels/kerneltest"
	"github.com/vkllm/vkllm/tensor"
)

func TestConformance(t *testing.T) {
	for _, threads := range []int{0, 1, 3} { // the split must not matter
		t.Run("threads="+string(rune('0'+threads)), func(t *testing.T) {
			b := New(threads)
			kerneltest.All(t, b)
			t.Run("MatMulStrict", func(t *testing.T) { kerneltest.MatMulStrict(t, b) })
			t.Run("AttentionStrict", func(t *testing.T) { kerneltest.AttentionStrict(t, b) })
			t.Run("AttentionInvariance", func(t *testing.T) { kerneltest.AttentionInvariance(t, b) })
		})
	}
}

func TestRegistered(t *testing.T) {
	b, err := kernels.Open("cpu-ref", kernels.Options{Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	if b.Name() != "cpu-ref" || b.(*Backend).Threads != 2 {
		t.Fatalf("Open(cpu-ref) = %s with %d threads", b.Name(), b.(*Backend).Threads)
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

func TestUploadKeepsView(t *testing.T) {
	b := New(1)
	w, data := upload(t, b, tensor.F32, 2, 4)
	data[0], data[1], data[2], data[3] = 0, 0, 0x80, 0x3f // element 0 = 1.0
	got := make([]float32, 8)
	if err := b.GetF32(w, got); err != nil {
		t.Fatal(err)
	}
	if got[0] != 1 {
		t.Fatalf("element 0 = %v after writing 1.0 into the uploaded bytes: Upload copied", got[0])
	}
}

func TestUploadErrors(t *testing.T) {
	b := New(1)
	for _, c := range []struct {
		name string
		w    tensor.Tensor
		typ  bool // wraps *tensor.UnsupportedDTypeError
	}{
		{"I8", tensor.Tensor{DType: tensor.I8, Shape: []int64{2, 2}, Data: make([]byte, 4)}, true},
		{"Invalid", tensor.Tensor{DType: tensor.DType(200), Shape: []int64{2}, Data: make([]byte, 8)}, true},
		{"short", tensor.Tensor{DType: tensor.F32, Shape: []int64{2, 2}, Data: make([]byte, 15)}, false},
		{"partial block", tensor.Tensor{DType: tensor.Q8_0, Shape: []int64{1, 33}, Data: make([]byte, 68)}, false},
		{"negative", tensor.Tensor{DType: tensor.F32, Shape: []int64{-1, 4}, Data: nil}, false},
		{"scalar", tensor.Tensor{DType: tensor.F32, Shape: nil, Data: make([]byte, 4)}, false},
		{"overflow", tensor.Tensor{DType: tensor.F32, Shape: []int64{1 << 40, 1 << 40}, Data: nil}, false},
	} {
		_, err := b.Upload(c.w)
		var u *tensor.UnsupportedDTypeError
		if err == nil || errors.As(err, &u) != c.typ {
			t.Errorf("%s: Upload error %v; want one wrapping *UnsupportedDTypeError: %v", c.name, err, c.typ)
		}
	}
}

func TestHostCopyErrors(t *testing.T) {
	b := New(1)
	f, _ := b.NewTensor(tensor.F32, 2, 3)
	i, _ := b.NewTensor(tensor.I32, 4)
	other := New(1)
	g, _ := other.NewTensor(tensor.F32, 1)
	other.Free(g)
	for _, c := range []struct {
		name string
		err  error
		want error
	}{
		{"SetF32 short", b.SetF32(f, make([]float32, 5)), ErrMismatch},
		{"SetF32 into I32", b.SetF32(i, make([]float32, 4)), ErrMismatch},
		{"SetI32 into F32", b.SetI32(f, make([]int32, 6)), ErrMismatch},
		{"GetF32 long", b.GetF32(f, make([]float32, 7)), ErrMismatch},
		{"GetI32 short", b.GetI32(i, make([]int32, 3)), ErrMismatch},
		{"GetI32 of F32", b.GetI32(f, make([]int32, 6)), ErrMismatch},
		{"freed", b.GetF32(g, make([]float32, 1)), ErrForeign},
		{"nil", b.SetI32(nil, nil), ErrForeign},
	} {
		if !errors.Is(c.err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, c.err, c.want)
		}
	}
	if _, err := b.NewTensor(tensor.Q8_0, 32); !errors.As(err, new(*tensor.UnsupportedDTypeError)) {
		t.Errorf("NewTensor(Q8_0): %v", err)
	}
	if _, err := b.NewTensor(tensor.F32, 2, -1); err == nil {
		t.Error("NewTensor with a negative dimension succeeded")
	}
}

// MatMul dequantises a row at a time: it must not allocate anything near
// the size of the weight in float32.
func TestMatMulDoesNotExpandWeight(t *testing.T) {
	b := New(2)
	const m, k = 1024, 896 // 3.5 MiB as float32
	w, _ := upload(t, b, tensor.Q8_0, m, k)
	x, _ := b.NewTensor(tensor.F32, 1, k)
	d, _ := b.NewTensor(tensor.F32, 1, m)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	b.MatMul(d, x, w)
	runtime.ReadMemStats(&after)
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 64<<10 {
		t.Fatalf("MatMul allocated %d bytes for a %d×%d weight", grew, m, k)
	}
}
