package kerneltest

import (
	"encoding/binary"
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/vkllm/vkllm/kernels"
	"github.com/vkllm/vkllm/tensor"
	"github.com/x448/float16"
)

// weightTypes are the weight dtypes MatMul and GetRows sweep: every one a
// GGUF or safetensors model may hold that tensor.Dequantize knows.
var weightTypes = []tensor.DType{
	tensor.F32, tensor.F16, tensor.BF16,
	tensor.Q8_0, tensor.Q4_0, tensor.Q4_1, tensor.Q5_0, tensor.Q5_1,
	tensor.Q2_K, tensor.Q3_K, tensor.Q4_K, tensor.Q5_K, tensor.Q6_K,
	tensor.IQ4_NL, tensor.IQ4_XS,
}

// kScales are the byte offsets of the f16 super-block scales (d, and dmin
// where there is one) inside a block of each K-quant (ggml's layouts).
var kScales = map[tensor.DType][]int{
	tensor.Q2_K: {80, 82}, // scales[16] qs[64] d dmin
	tensor.Q3_K: {108},    // hmask[32] qs[64] scales[12] d
	tensor.Q4_K: {0, 2},   // d dmin scales[12] qs[128]
	tensor.Q5_K: {0, 2},   // d dmin scales[12] qh[32] qs[128]
	tensor.Q6_K: {208},    // ql[128] qh[64] scales[16] d
	// IQ4_NL and IQ4_XS (not K-quants, but tensor.Quantize lacks them
	// too): random indices and sub-scales, the f16 scale d set
	tensor.IQ4_NL: {0}, // d qs[16]
	tensor.IQ4_XS: {0}, // d scales_h scales_l[4] qs[128]
}

// weight makes a random weight (rows, cols) of dtype dt, uploads it, and
// returns it with its exactly dequantised values (rows·cols), which the
// reference uses. It skips the test if dt cannot be made or uploaded yet.
func weight(t *testing.T, b kernels.Backend, r *rand.Rand, dt tensor.DType, rows, cols int) (kernels.Tensor, []float32) {
	t.Helper()
	n := rows * cols
	size, err := dt.Bytes(int64(n))
	if err != nil {
		t.Fatal(err)
	}
	data := make([]byte, size)
	if offs, ok := kScales[dt]; ok {
		// Random quants, sub-scales and mins; small positive super-block
		// scales so every value is finite and of order 1.
		for i := range data {
			data[i] = byte(r.Uint32())
		}
		for blk := 0; blk < len(data); blk += dt.BlockBytes() {
			for _, o := range offs {
				s := float16.Fromfloat32(float32((0.5 + r.Float64()) / 1024))
				binary.LittleEndian.PutUint16(data[blk+o:], s.Bits())
			}
		}
	} else if err := tensor.Quantize(dt, randn(r, n, 1), data); err != nil {
		if unsupported(err) {
			t.Skipf("tensor.Quantize does not support %v yet: %v", dt, err)
		}
		t.Fatal(err)
	}
	deq := make([]float32, n)
	if err := tensor.Dequantize(dt, data, deq); err != nil {
		if unsupported(err) {
			t.Skipf("tensor.Dequantize does not support %v yet: %v", dt, err)
		}
		t.Fatal(err)
	}
	for i, v := range deq {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			t.Fatalf("random %v weight has %v at %d", dt, v, i)
		}
	}
	w, err := b.Upload(tensor.Tensor{Name: "w", DType: dt, Shape: []int64{int64(rows), int64(cols)}, Data: data})
	if err != nil {
		if unsupported(err) {
			t.Skipf("%s does not take %v weights: %v", b.Name(), dt, err)
		}
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Free(w) })
	return w, deq
}

func unsupported(err error) bool {
	var u *tensor.UnsupportedDTypeError
	return errors.As(err, &u)
}

// rowLengths are the row lengths (k) tried for dt: odd ones where the
// block size allows.
func rowLengths(dt tensor.DType) []int {
	switch dt.BlockSize() {
	case 1:
		return []int{7, 96, 263}
	case 32:
		return []int{32, 96, 288}
	default:
		return []int{256, 768}
	}
}

// half rounds to float16 and back (round to nearest even).
func half(x []float32) []float32 {
	out := make([]float32, len(x))
	for i, v := range x {
		out[i] = float16.Fromfloat32(v).Float32()
	}
	return out
}

// RandomWeight uploads a (rows, cols) weight of dt to b, quantised from
// normal random values (K-quants: random bytes with small scales), and
// returns it with the bytes it was made from (a backend may keep a view
// of them).
func RandomWeight(t testing.TB, b kernels.Backend, dt tensor.DType, rows, cols int) (kernels.Tensor, []byte) {
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
			for _, o := range map[tensor.DType][]int{tensor.Q4_K: {0, 2}, tensor.Q5_K: {0, 2}, tensor.Q6_K: {208}}[dt] {
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
