package cpu

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/vkllm/vkllm/kernels"
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

func upload(t testing.TB, b *Backend, dt tensor.DType, rows, cols int) (kernels.Tensor, []byte) {
	t.Helper()
	size, err := dt.Bytes(int64(rows * cols))
	if err != nil {
		t.Fatal(err)
	}
	data := make([]byte, size)
	r := rand.New(rand.NewPCG(1, 2))
	src := make([]float32, rows*cols)
	for i := range src {
		src[i] = float32(r.NormFloat64())
	}
	if err := tensor.Quantize(dt, src, data); err != nil {
		// K-quants: random bytes with f16 scales of 2^-10 (bits 0x1400).
		for i := range data {
			data[i] = byte(r.Uint32())
		}
		for blk := 0; blk < len(data); blk += dt.BlockBytes() {
			for _, o := range map[tensor.DType][]int{tensor.Q4_K: {0, 2}, tensor.Q6_K: {208}}[dt] {
				data[blk+o], data[blk+o+1] = 0x00, 0x14
			}
		}
	}
	w, err := b.Upload(tensor.Tensor{Name: "w", DType: dt, Shape: []int64{int64(rows), int64(cols)}, Data: data})
	if err != nil {
		t.Fatal(err)
	}
	return w, data
}

func TestUploadTakesModelDTypes(t *testing.T) {
	b := New(1)
	for _, dt := range []tensor.DType{tensor.F32, tensor.F16, tensor.BF16, tensor.Q8_0, tensor.Q4_0, tensor.Q4_1, tensor.Q4_K, tensor.Q6_K} {
		upload(t, b, dt, 2, 256)
	}
}

func TestShapeMismatchPanics(t *testing.T) {
	b := New(1)
	mk := func(dt tensor.DType, shape ...int) kernels.Tensor {
		x, err := b.NewTensor(dt, shape...)
		if err != nil {
			t.Fatal(err)
		}
		return x
	}
	w, _ := upload(t, b, tensor.Q8_0, 4, 32)
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
