package cpubase

import (
	"errors"
	"fmt"

	"github.com/x448/float16"

	"github.com/vkllm/vkllm/kernels"
	"github.com/vkllm/vkllm/tensor"
)

// Errors of SetF32, SetI32, GetF32 and GetI32; they wrap one of these.
var (
	// ErrMismatch: the host slice's length or the tensor's dtype does not
	// fit the call.
	ErrMismatch = errors.New("cpu: tensor dtype or length mismatch")
	// ErrForeign: the tensor was not made by a CPU backend, or was freed.
	ErrForeign = errors.New("cpu: not a live cpu tensor")
)

// Tensor is a CPU tensor. Exactly one of its slices is set, by dtype:
//
//	F32 activations                 F32 (numel)
//	I32 ids, positions, cells       I32 (numel)
//	F16 KV caches                   F16 (numel), IEEE half bits
//	uploaded weights (any dtype)    Raw (Rows·RowBytes), the file's bytes
//
// Rows × Cols is the 2-D view every op uses: Cols is the last dimension,
// Rows the product of the others.
type Tensor struct {
	DT   tensor.DType
	Dims []int
	Rows int
	Cols int

	F32 []float32
	I32 []int32
	F16 []uint16
	Raw []byte
	// Weight marks an uploaded weight (Raw set); RowBytes is the byte
	// size of one of its rows.
	Weight   bool
	RowBytes int
	// Packed is a copy of the weight in a backend's own layout (the fast
	// path's groups of eight rows), or nil; PackedFree releases its
	// memory (once, by Free or when the Tensor is collected).
	Packed     []byte
	PackedFree func() error
	Freed      bool
	// Parent is the tensor a view (View) shares memory with, else nil.
	Parent *Tensor
}

// DType implements kernels.Tensor.
func (t *Tensor) DType() tensor.DType { return t.DT }

// Shape implements kernels.Tensor.
func (t *Tensor) Shape() []int { return t.Dims }

func (t *Tensor) String() string { return fmt.Sprintf("%v%v", t.DT, t.Dims) }

// Dims2 checks a shape and returns its 2-D view (rows, cols) and element
// count. A 1-D shape (n) is one row of n.
func Dims2(shape []int) (rows, cols, n int, err error) {
	if len(shape) == 0 {
		return 0, 0, 0, errors.New("no dimensions")
	}
	s64 := make([]int64, len(shape))
	for i, d := range shape {
		s64[i] = int64(d)
	}
	n64, err := tensor.NumElements(s64)
	if err != nil {
		return 0, 0, 0, err
	}
	if n64 > int64(^uint(0)>>1) {
		return 0, 0, 0, fmt.Errorf("%d elements overflow int", n64)
	}
	lead, err := tensor.NumElements(s64[:len(s64)-1])
	if err != nil || lead > int64(^uint(0)>>1) {
		return 0, 0, 0, fmt.Errorf("shape %v overflows int", shape)
	}
	return int(lead), shape[len(shape)-1], int(n64), nil
}

// Live returns t as a usable *Tensor, or ErrForeign.
func Live(t kernels.Tensor) (*Tensor, error) {
	c, ok := t.(*Tensor)
	if !ok || c == nil || c.Freed || c.Parent != nil && c.Parent.Freed {
		return nil, fmt.Errorf("%w: %T", ErrForeign, t)
	}
	return c, nil
}

// Failf is how the ops' shape and dtype checks fail: a failure is the
// caller's bug (kernels' contract), so it panics naming the op and the
// shapes. The checks call it only when they fail (if !ok { Failf(…) }),
// so a passing check boxes no arguments: an op's checks allocate
// nothing, and those per cell or id in a loop cost a comparison.
func Failf(format string, args ...any) {
	panic(fmt.Sprintf("cpu: "+format, args...))
}

// TensorOf returns t as a live *Tensor or panics.
func TensorOf(op string, t kernels.Tensor) *Tensor {
	c, err := Live(t)
	if err != nil {
		panic(fmt.Sprintf("cpu: %s: %v", op, err))
	}
	return c
}

// Activation returns t, which must be a live F32 tensor made by NewTensor.
func Activation(op string, t kernels.Tensor) *Tensor {
	c := TensorOf(op, t)
	if !(c.DT == tensor.F32 && !c.Weight) {
		Failf("%s: want an F32 activation, got %v", op, c)
	}
	return c
}

// Ints returns t, which must be a live I32 tensor.
func Ints(op string, t kernels.Tensor) *Tensor {
	c := TensorOf(op, t)
	if !(c.DT == tensor.I32) {
		Failf("%s: want an I32 tensor, got %v", op, c)
	}
	return c
}

// CacheOf returns t, which must be a live F32 or F16 tensor made by
// NewTensor (a KV cache).
func CacheOf(op string, t kernels.Tensor) *Tensor {
	c := TensorOf(op, t)
	if !((c.DT == tensor.F32 || c.DT == tensor.F16) && !c.Weight) {
		Failf("%s: want an F32 or F16 cache, got %v", op, c)
	}
	return c
}

// FloatRows reports whether Row can read t.
func (t *Tensor) FloatRows() bool { return t.Weight || t.DT == tensor.F32 || t.DT == tensor.F16 }

// Row writes row r of t (an uploaded weight of any dtype, or an F32 or
// F16 tensor) into dst (t.Cols) as float32.
func (t *Tensor) Row(r int, dst []float32) {
	c := t.Cols
	switch {
	case t.Weight:
		if err := tensor.Dequantize(t.DT, t.Raw[r*t.RowBytes:(r+1)*t.RowBytes], dst[:c]); err != nil {
			panic("cpu: " + err.Error()) // Upload checked the dtype and the sizes
		}
	case t.DT == tensor.F32:
		copy(dst[:c], t.F32[r*c:(r+1)*c])
	case t.DT == tensor.F16:
		for i, h := range t.F16[r*c : (r+1)*c] {
			dst[i] = float16.Frombits(h).Float32()
		}
	default:
		panic(fmt.Sprintf("cpu: %v has no float rows", t))
	}
}

// Span returns elements [off, off+n) of row r of an F32 or F16 tensor
// as float32: a view for F32, converted into scratch (n) for F16.
func (t *Tensor) Span(r, off, n int, scratch []float32) []float32 {
	at := r*t.Cols + off
	if t.DT == tensor.F32 {
		return t.F32[at : at+n]
	}
	for i, h := range t.F16[at : at+n] {
		scratch[i] = float16.Frombits(h).Float32()
	}
	return scratch[:n]
}

// SetRow stores v (t.Cols) as row r of an F32 or F16 tensor (F16 rounds
// to nearest even).
func (t *Tensor) SetRow(r int, v []float32) {
	c := t.Cols
	if t.DT == tensor.F32 {
		copy(t.F32[r*c:(r+1)*c], v)
		return
	}
	ToF16(t.F16[r*c:(r+1)*c], v)
}

// ToF16 stores src rounded to float16 (nearest even) in dst (as long).
func ToF16(dst []uint16, src []float32) {
	for i, v := range src[:len(dst)] {
		dst[i] = float16.Fromfloat32(v).Bits()
	}
}

// visibleLists returns each row of vis (n, w) up to its first -1 (the
// cells Attention visits, in order), in buf's memory when it is long
// enough, checking that every cell is in [0, cells) and that a row lists
// at most cells of them (a cell twice is the caller's bug; it is not
// looked for).
func visibleLists(op string, vis *Tensor, cells int, buf [][]int32) [][]int32 {
	lists := Grow(buf, vis.Rows)
	for t := range lists {
		row := vis.I32[t*vis.Cols : (t+1)*vis.Cols]
		nv := 0
		for nv < len(row) && row[nv] >= 0 {
			if int(row[nv]) >= cells {
				Failf("%s: token %d attends to cell %d of %d", op, t, row[nv], cells)
			}
			nv++
		}
		if nv > cells {
			Failf("%s: token %d attends to %d cells of %d", op, t, nv, cells)
		}
		lists[t] = row[:nv]
	}
	return lists
}
