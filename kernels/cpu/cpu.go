package cpu

import (
	"fmt"
	"runtime"
	"sync"

	"github.com/vkllm/vkllm/kernels"
	"github.com/vkllm/vkllm/tensor"
	"github.com/x448/float16"
)

func init() {
	kernels.Register("cpu", func(o kernels.Options) (kernels.Backend, error) { return New(o.Threads), nil })
}

// Tensor is a CPU tensor.
type Tensor struct {
	dt    tensor.DType
	shape []int
	f32   []float32
	i32   []int32
	f16   []uint16
	raw   []byte // weights as stored
	// rowBytes is the byte size of one row of raw.
	rowBytes int
}

func (t *Tensor) DType() tensor.DType { return t.dt }
func (t *Tensor) Shape() []int        { return t.shape }

func (t *Tensor) rows() int { return t.shape[0] }
func (t *Tensor) cols() int {
	if len(t.shape) == 1 {
		return t.shape[0]
	}
	return t.shape[len(t.shape)-1]
}
func (t *Tensor) numel() int {
	n := 1
	for _, d := range t.shape {
		n *= d
	}
	return n
}

// Backend is the CPU backend.
type Backend struct {
	threads int
}

// New returns a CPU backend using threads goroutines (0: GOMAXPROCS).
func New(threads int) *Backend {
	if threads <= 0 {
		threads = runtime.GOMAXPROCS(0)
	}
	return &Backend{threads: threads}
}

func (b *Backend) Name() string        { return "cpu" }
func (b *Backend) Close() error        { return nil }
func (b *Backend) Sync() error         { return nil }
func (b *Backend) Free(kernels.Tensor) {}

func (b *Backend) NewTensor(dt tensor.DType, shape ...int) (kernels.Tensor, error) {
	n := 1
	for _, d := range shape {
		if d < 0 {
			return nil, fmt.Errorf("cpu: negative dimension in %v", shape)
		}
		n *= d
	}
	if len(shape) == 0 {
		return nil, fmt.Errorf("cpu: tensor without dimensions")
	}
	t := &Tensor{dt: dt, shape: append([]int(nil), shape...)}
	switch dt {
	case tensor.F32:
		t.f32 = make([]float32, n)
	case tensor.I32:
		t.i32 = make([]int32, n)
	case tensor.F16:
		t.f16 = make([]uint16, n)
	default:
		return nil, &tensor.UnsupportedDTypeError{Format: "cpu", DType: dt.String()}
	}
	return t, nil
}

// Upload keeps a view of the weight's bytes (no copy). Shapes of one or
// two dimensions are accepted; more are flattened to (rows, last).
func (b *Backend) Upload(w tensor.Tensor) (kernels.Tensor, error) {
	if !w.DType.Valid() || w.DType.BlockSize() == 0 {
		return nil, &tensor.UnsupportedDTypeError{Format: "cpu", DType: w.DType.String(), Tensor: w.Name}
	}
	if !canDequantize(w.DType) {
		return nil, &tensor.UnsupportedDTypeError{Format: "cpu", DType: w.DType.String(), Tensor: w.Name}
	}
	if len(w.Shape) == 0 {
		return nil, fmt.Errorf("cpu: upload %q: scalar weight", w.Name)
	}
	cols := int(w.Shape[len(w.Shape)-1])
	rows := 1
	for _, d := range w.Shape[:len(w.Shape)-1] {
		rows *= int(d)
	}
	rb, err := w.DType.Bytes(int64(cols))
	if err != nil {
		return nil, fmt.Errorf("cpu: upload %q: %w", w.Name, err)
	}
	if int64(len(w.Data)) != rb*int64(rows) {
		return nil, fmt.Errorf("cpu: upload %q: %d bytes for %d×%d %v", w.Name, len(w.Data), rows, cols, w.DType)
	}
	return &Tensor{dt: w.DType, shape: []int{rows, cols}, raw: w.Data, rowBytes: int(rb)}, nil
}

func canDequantize(dt tensor.DType) bool {
	var one [1 << 9]byte
	dst := make([]float32, dt.BlockSize())
	return tensor.Dequantize(dt, one[:dt.BlockBytes()], dst) == nil
}

func (b *Backend) SetF32(dst kernels.Tensor, src []float32) error {
	t := dst.(*Tensor)
	switch {
	case t.dt == tensor.F32 && len(src) == len(t.f32):
		copy(t.f32, src)
	case t.dt == tensor.F16 && len(src) == len(t.f16):
		for i, v := range src {
			t.f16[i] = float16.Fromfloat32(v).Bits()
		}
	default:
		return fmt.Errorf("cpu: SetF32 of %d values into %v %v", len(src), t.dt, t.shape)
	}
	return nil
}

func (b *Backend) SetI32(dst kernels.Tensor, src []int32) error {
	t := dst.(*Tensor)
	if t.dt != tensor.I32 || len(src) != len(t.i32) {
		return fmt.Errorf("cpu: SetI32 of %d values into %v %v", len(src), t.dt, t.shape)
	}
	copy(t.i32, src)
	return nil
}

func (b *Backend) GetF32(src kernels.Tensor, dst []float32) error {
	t := src.(*Tensor)
	switch {
	case t.dt == tensor.F32 && len(dst) == len(t.f32):
		copy(dst, t.f32)
	case t.dt == tensor.F16 && len(dst) == len(t.f16):
		for i, h := range t.f16 {
			dst[i] = float16.Frombits(h).Float32()
		}
	case t.raw != nil && len(dst) == t.numel():
		return tensor.Dequantize(t.dt, t.raw, dst)
	default:
		return fmt.Errorf("cpu: GetF32 of %v %v into %d values", t.dt, t.shape, len(dst))
	}
	return nil
}

func (b *Backend) GetI32(src kernels.Tensor, dst []int32) error {
	t := src.(*Tensor)
	if t.dt != tensor.I32 || len(dst) != len(t.i32) {
		return fmt.Errorf("cpu: GetI32 of %v %v into %d values", t.dt, t.shape, len(dst))
	}
	copy(dst, t.i32)
	return nil
}

// parallel runs fn over [0, n) split into at most b.threads chunks.
func (b *Backend) parallel(n int, fn func(lo, hi int)) {
	workers := min(b.threads, n)
	if workers <= 1 {
		fn(0, n)
		return
	}
	var wg sync.WaitGroup
	chunk := (n + workers - 1) / workers
	for lo := 0; lo < n; lo += chunk {
		hi := min(lo+chunk, n)
		wg.Add(1)
		go func() {
			defer wg.Done()
			fn(lo, hi)
		}()
	}
	wg.Wait()
}

func must(cond bool, format string, args ...any) {
	if !cond {
		panic(fmt.Sprintf("cpu: "+format, args...))
	}
}

func f32(t kernels.Tensor) *Tensor {
	c := t.(*Tensor)
	must(c.dt == tensor.F32, "want an F32 tensor, got %v %v", c.dt, c.shape)
	return c
}

func i32(t kernels.Tensor) *Tensor {
	c := t.(*Tensor)
	must(c.dt == tensor.I32, "want an I32 tensor, got %v %v", c.dt, c.shape)
	return c
}
