package cpu

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/x448/float16"

	"github.com/vkllm/vkllm/internal/mmap"
	"github.com/vkllm/vkllm/kernels"
	"github.com/vkllm/vkllm/tensor"
)

func init() {
	kernels.Register("cpu", func(o kernels.Options) (kernels.Backend, error) {
		b := NewWith(Options{Threads: o.Threads, Fast: defaultFast})
		b.name = "cpu"
		return b, nil
	})
	kernels.Register("cpu-fast", func(o kernels.Options) (kernels.Backend, error) {
		return NewWith(Options{Threads: o.Threads, Fast: true}), nil
	})
}

// Errors of SetF32, SetI32, GetF32 and GetI32; they wrap one of these.
var (
	// ErrMismatch: the host slice's length or the tensor's dtype does not
	// fit the call.
	ErrMismatch = errors.New("cpu: tensor dtype or length mismatch")
	// ErrForeign: the tensor was not made by a cpu Backend, or was freed.
	ErrForeign = errors.New("cpu: not a live cpu tensor")
)

// Tensor is a CPU tensor. Exactly one of its slices is set, by dtype:
//
//	F32 activations                 f32 (numel)
//	I32 ids, positions, cells       i32 (numel)
//	F16 KV caches                   f16 (numel), IEEE half bits
//	uploaded weights (any dtype)    raw (rows·rowBytes), the file's bytes
//
// rows × cols is the 2-D view every op uses: cols is the last dimension,
// rows the product of the others.
type Tensor struct {
	dt    tensor.DType
	shape []int
	rows  int
	cols  int

	f32 []float32
	i32 []int32
	f16 []uint16
	raw []byte
	// weight marks an uploaded weight (raw set); rowBytes is the byte
	// size of one of its rows.
	weight   bool
	rowBytes int
	// pk is the weight packed by eight rows (packed.go) on the fast path
	// where it has packed kernels for the dtype, else nil; pkFree releases
	// its memory (once, by Free or when the Tensor is collected).
	pk     []byte
	pkFree func() error
	freed  bool
}

// DType implements kernels.Tensor.
func (t *Tensor) DType() tensor.DType { return t.dt }

// Shape implements kernels.Tensor.
func (t *Tensor) Shape() []int { return t.shape }

func (t *Tensor) String() string { return fmt.Sprintf("%v%v", t.dt, t.shape) }

// Backend is the CPU backend. Like every Backend it is used from one
// goroutine at a time; each op splits its own work across the goroutines
// of its pool.
type Backend struct {
	name    string
	threads int
	fast    bool
	pool    *pool
	scratch fastScratch // the fast path's buffers, reused across ops
	rope    ropeCache   // RoPE's angles of the last positions
	packed  *mmap.Arena // the packed weights' memory (fast path)
}

// packedRegionBytes is the size of the packed weights' shared mappings:
// a few per model, each filled by the weights uploaded one after another.
const packedRegionBytes = 64 << 20

// Options configure New With.
type Options struct {
	// Threads bounds the parallelism (0 or less: GOMAXPROCS).
	Threads int
	// Fast selects the fast kernels (see the package documentation,
	// "Fast path"): SIMD dots with fused multiply-adds and, for Q8_0,
	// Q4_0 and Q4_1 weights, activations quantised to 8 bits per block
	// of 32. Results stay independent of the batch size and the thread
	// count, but are no longer the reference's.
	Fast bool
}

// New returns the reference CPU backend (exact path) running each op on
// up to threads goroutines (0 or less: GOMAXPROCS). Built with the
// cpufast tag it returns the fast path instead, so that the model parity
// tests (which call New) can be run against it:
//
//	go test -tags cpufast ./models/
func New(threads int) *Backend { return NewWith(Options{Threads: threads, Fast: defaultFast}) }

// NewWith returns a CPU backend configured by o. Its helper goroutines
// stop on Close, or when the Backend is garbage collected.
func NewWith(o Options) *Backend {
	threads := threadsOr(o.Threads)
	b := &Backend{name: "cpu", threads: threads, fast: o.Fast, pool: newPool(threads)}
	if o.Fast {
		b.name = "cpu-fast"
		b.packed = mmap.NewArena(packedRegionBytes)
	}
	runtime.AddCleanup(b, func(p *pool) { p.close() }, b.pool)
	return b
}

// Name implements kernels.Backend: "cpu", or "cpu-fast" for a backend
// made by NewWith with Fast set.
func (b *Backend) Name() string { return b.name }

// Close implements kernels.Backend: it stops the helper goroutines. The
// backend must not run ops afterwards.
func (b *Backend) Close() error {
	b.pool.close()
	return nil
}

// Sync implements kernels.Backend; ops run at once, so there is no work
// to wait for.
func (b *Backend) Sync() error { return nil }

// Free drops the tensor's memory (for the garbage collector). Using it
// afterwards panics in an op and fails in Set*/Get*.
func (b *Backend) Free(t kernels.Tensor) {
	c, ok := t.(*Tensor)
	if !ok || c == nil {
		return
	}
	if c.pkFree != nil {
		_ = c.pkFree()
	}
	c.f32, c.i32, c.f16, c.raw, c.pk = nil, nil, nil, nil, nil
	c.freed = true
}

// dims checks a shape and returns its 2-D view (rows, cols) and element
// count. A 1-D shape (n) is one row of n.
func dims(shape []int) (rows, cols, n int, err error) {
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

// NewTensor implements kernels.Backend: a zeroed F32, F16 or I32 tensor.
func (b *Backend) NewTensor(dt tensor.DType, shape ...int) (kernels.Tensor, error) {
	rows, cols, n, err := dims(shape)
	if err != nil {
		return nil, fmt.Errorf("cpu: new tensor %v: %w", shape, err)
	}
	t := &Tensor{dt: dt, shape: append([]int(nil), shape...), rows: rows, cols: cols}
	switch dt {
	case tensor.F32:
		t.f32 = make([]float32, n)
	case tensor.I32:
		t.i32 = make([]int32, n)
	case tensor.F16:
		t.f16 = make([]uint16, n)
	default:
		return nil, fmt.Errorf("cpu: new tensor: %w", &tensor.UnsupportedDTypeError{Format: "cpu", DType: dt.String()})
	}
	return t, nil
}

// Upload implements kernels.Backend. The tensor keeps w.Data, a view of
// the weight file's mapping, so the caller must keep the file open
// (models.Model keeps its Source open) and unmodified for as long as the
// backend tensor is used. The fast path also copies Q8_0, Q4_0, Q4_1
// and Q4_K weights into its packed layout where it has packed kernels
// (see the package documentation), which costs their size in memory. Any
// dtype tensor.Dequantize knows is accepted. Shapes of more than two dimensions are viewed as
// (product of the leading ones, last).
func (b *Backend) Upload(w tensor.Tensor) (kernels.Tensor, error) {
	if !w.DType.Valid() || !canDequantize(w.DType) {
		return nil, fmt.Errorf("cpu: upload %q: %w", w.Name, &tensor.UnsupportedDTypeError{Format: "cpu", DType: w.DType.String(), Tensor: w.Name})
	}
	shape := make([]int, len(w.Shape))
	for i, d := range w.Shape {
		if d < 0 || d > int64(^uint(0)>>1) {
			return nil, fmt.Errorf("cpu: upload %q: bad shape %v", w.Name, w.Shape)
		}
		shape[i] = int(d)
	}
	rows, cols, _, err := dims(shape)
	if err != nil {
		return nil, fmt.Errorf("cpu: upload %q: shape %v: %w", w.Name, w.Shape, err)
	}
	rb, err := w.DType.Bytes(int64(cols)) // fails unless cols is a whole number of blocks
	if err != nil {
		return nil, fmt.Errorf("cpu: upload %q: %w", w.Name, err)
	}
	if rows != 0 && rb > int64(len(w.Data))/int64(rows) || int64(len(w.Data)) != rb*int64(rows) {
		return nil, fmt.Errorf("cpu: upload %q: %d bytes for %v %v", w.Name, len(w.Data), w.DType, w.Shape)
	}
	t := &Tensor{dt: w.DType, shape: shape, rows: rows, cols: cols, raw: w.Data, weight: true, rowBytes: int(rb)}
	if x1, _ := packedKernels(w.DType); b.fast && x1 != nil && rows > 0 && cols > 0 {
		nb := cols / packValues(w.DType)
		groups := (rows + 7) / 8
		// Outside the Go heap, on transparent huge pages where the kernel
		// gives them: decode streams the packed weight once per token,
		// and 2 MiB pages made that 20–30 % faster (Llama-1B Q4_0 at two
		// threads, 47–54 → 60–62 tok/s in alternating runs). The weights
		// share a few mappings (mmap.Arena), so that those under 2 MiB
		// and the tails of the others are on 2 MiB pages too.
		pk, release := b.packed.Alloc(groups * nb * packBlockBytes(w.DType))
		t.pk, t.pkFree = pk, sync.OnceValue(release)
		runtime.AddCleanup(t, func(f func() error) { _ = f() }, t.pkFree)
		b.parallel(groups, func(g0, g1 int) { pack8(w.DType, w.Data, rows, int(rb), nb, t.pk, g0, g1) })
	} else {
		// Used in place (usually a mapped file): every page read once
		// now, so that loading brings the weight into memory as packing
		// does, instead of the first forward pass faulting it in (from
		// disk where the page cache let it go): an F16 Llama-1B's first
		// prefill ran at 40–57 tok/s that way against 67–71 warm.
		b.parallel((len(w.Data)+pageBytes-1)/pageBytes, func(p0, p1 int) {
			var s byte
			for p := p0; p < p1; p++ {
				s ^= w.Data[p*pageBytes]
			}
			touchSink.Add(uint32(s))
		})
	}
	return t, nil
}

// pageBytes is the stride at which Upload touches a weight used in place
// (the smallest page size of the platforms here).
const pageBytes = 4096

// touchSink keeps Upload's page reads from being optimised away.
var touchSink atomic.Uint32

// canDequantize reports whether tensor.Dequantize knows dt.
func canDequantize(dt tensor.DType) bool {
	bs, bb := dt.BlockSize(), dt.BlockBytes()
	if bs <= 0 || bb <= 0 {
		return false
	}
	return tensor.Dequantize(dt, make([]byte, bb), make([]float32, bs)) == nil
}

// live returns t as a usable *Tensor, or ErrForeign.
func live(t kernels.Tensor) (*Tensor, error) {
	c, ok := t.(*Tensor)
	if !ok || c == nil || c.freed {
		return nil, fmt.Errorf("%w: %T", ErrForeign, t)
	}
	return c, nil
}

// SetF32 implements kernels.Backend for F32 tensors, and for F16 ones
// (rounding to nearest even).
func (b *Backend) SetF32(dst kernels.Tensor, src []float32) error {
	t, err := live(dst)
	if err != nil {
		return err
	}
	switch {
	case t.dt == tensor.F32 && !t.weight && len(src) == len(t.f32):
		copy(t.f32, src)
	case t.dt == tensor.F16 && !t.weight && len(src) == len(t.f16):
		toF16(t.f16, src)
	default:
		return fmt.Errorf("%w: SetF32 of %d values into %v", ErrMismatch, len(src), t)
	}
	return nil
}

// SetI32 implements kernels.Backend.
func (b *Backend) SetI32(dst kernels.Tensor, src []int32) error {
	t, err := live(dst)
	if err != nil {
		return err
	}
	if t.dt != tensor.I32 || len(src) != len(t.i32) {
		return fmt.Errorf("%w: SetI32 of %d values into %v", ErrMismatch, len(src), t)
	}
	copy(t.i32, src)
	return nil
}

// GetF32 implements kernels.Backend for F32 and F16 tensors, and also
// dequantises an uploaded weight.
func (b *Backend) GetF32(src kernels.Tensor, dst []float32) error {
	t, err := live(src)
	if err != nil {
		return err
	}
	switch {
	case t.dt == tensor.F32 && !t.weight && len(dst) == len(t.f32):
		copy(dst, t.f32)
	case t.dt == tensor.F16 && !t.weight && len(dst) == len(t.f16):
		for i, h := range t.f16 {
			dst[i] = float16.Frombits(h).Float32()
		}
	case t.weight && len(dst) == t.rows*t.cols:
		if err := tensor.Dequantize(t.dt, t.raw, dst); err != nil {
			return fmt.Errorf("cpu: GetF32 of %v: %w", t, err)
		}
	default:
		return fmt.Errorf("%w: GetF32 of %v into %d values", ErrMismatch, t, len(dst))
	}
	return nil
}

// GetI32 implements kernels.Backend.
func (b *Backend) GetI32(src kernels.Tensor, dst []int32) error {
	t, err := live(src)
	if err != nil {
		return err
	}
	if t.dt != tensor.I32 || len(dst) != len(t.i32) {
		return fmt.Errorf("%w: GetI32 of %v into %d values", ErrMismatch, t, len(dst))
	}
	copy(dst, t.i32)
	return nil
}

// parallel calls fn on contiguous chunks [lo, hi) covering [0, n), on at
// most b.threads goroutines of the pool, and returns when all are done.
// Every op computes each output element wholly inside one fn call, so the
// split never changes a value.
func (b *Backend) parallel(n int, fn func(lo, hi int)) {
	workers := min(b.threads, n)
	if workers <= 1 {
		fn(0, n)
		return
	}
	chunk := (n + workers - 1) / workers
	b.pool.run((n+chunk-1)/chunk, func(_, t int) { fn(t*chunk, min((t+1)*chunk, n)) })
}

// failf is how the ops' shape and dtype checks fail: a failure is the
// caller's bug (kernels' contract), so it panics naming the op and the
// shapes. The checks call it only when they fail (if !ok { failf(…) }),
// so a passing check boxes no arguments: an op's checks allocate
// nothing, and those per cell or id in a loop cost a comparison.
func failf(format string, args ...any) {
	panic(fmt.Sprintf("cpu: "+format, args...))
}

// tensorOf returns t as a live *Tensor or panics.
func tensorOf(op string, t kernels.Tensor) *Tensor {
	c, err := live(t)
	if err != nil {
		panic(fmt.Sprintf("cpu: %s: %v", op, err))
	}
	return c
}

// activation returns t, which must be a live F32 tensor made by NewTensor.
func activation(op string, t kernels.Tensor) *Tensor {
	c := tensorOf(op, t)
	if !(c.dt == tensor.F32 && !c.weight) {
		failf("%s: want an F32 activation, got %v", op, c)
	}
	return c
}

// ints returns t, which must be a live I32 tensor.
func ints(op string, t kernels.Tensor) *Tensor {
	c := tensorOf(op, t)
	if !(c.dt == tensor.I32) {
		failf("%s: want an I32 tensor, got %v", op, c)
	}
	return c
}

// cacheOf returns t, which must be a live F32 or F16 tensor made by
// NewTensor (a KV cache).
func cacheOf(op string, t kernels.Tensor) *Tensor {
	c := tensorOf(op, t)
	if !((c.dt == tensor.F32 || c.dt == tensor.F16) && !c.weight) {
		failf("%s: want an F32 or F16 cache, got %v", op, c)
	}
	return c
}

// floatRows reports whether row can read t.
func (t *Tensor) floatRows() bool { return t.weight || t.dt == tensor.F32 || t.dt == tensor.F16 }

// row writes row r of t (an uploaded weight of any dtype, or an F32 or
// F16 tensor) into dst (t.cols) as float32.
func (t *Tensor) row(r int, dst []float32) {
	c := t.cols
	switch {
	case t.weight:
		if err := tensor.Dequantize(t.dt, t.raw[r*t.rowBytes:(r+1)*t.rowBytes], dst[:c]); err != nil {
			panic("cpu: " + err.Error()) // Upload checked the dtype and the sizes
		}
	case t.dt == tensor.F32:
		copy(dst[:c], t.f32[r*c:(r+1)*c])
	case t.dt == tensor.F16:
		for i, h := range t.f16[r*c : (r+1)*c] {
			dst[i] = float16.Frombits(h).Float32()
		}
	default:
		panic(fmt.Sprintf("cpu: %v has no float rows", t))
	}
}

// span returns elements [off, off+n) of row r of an F32 or F16 tensor
// as float32: a view for F32, converted into scratch (n) for F16.
func (t *Tensor) span(r, off, n int, scratch []float32) []float32 {
	at := r*t.cols + off
	if t.dt == tensor.F32 {
		return t.f32[at : at+n]
	}
	for i, h := range t.f16[at : at+n] {
		scratch[i] = float16.Frombits(h).Float32()
	}
	return scratch[:n]
}

// setRow stores v (t.cols) as row r of an F32 or F16 tensor (F16 rounds
// to nearest even).
func (t *Tensor) setRow(r int, v []float32) {
	c := t.cols
	if t.dt == tensor.F32 {
		copy(t.f32[r*c:(r+1)*c], v)
		return
	}
	toF16(t.f16[r*c:(r+1)*c], v)
}
