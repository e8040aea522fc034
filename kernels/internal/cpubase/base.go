package cpubase

import (
	"fmt"
	"math"
	"runtime"
	"slices"
	"sync/atomic"

	"github.com/x448/float16"

	"github.com/vkllm/vkllm/kernels"
	"github.com/vkllm/vkllm/tensor"
)

// Base is a CPU backend without MatMul, Attention, RMSNorm and SwiGLU:
// storage, the pool, and the ops both CPU paths share. kernels/cpu and
// kernels/cpuref embed it and add those four. Like every Backend it is
// used from one goroutine at a time; each op splits its own work across
// the goroutines of its pool.
type Base struct {
	name    string
	Threads int
	Pool    *Pool
	rope    ropeCache // RoPE's angles of the last positions
	lists   [][]int32 // AttentionOperands' lists, reused
}

// NewBase returns a Base named name whose ops run on up to threads
// goroutines (0 or less: GOMAXPROCS). Its helper goroutines stop on
// Close, or when the Base is garbage collected.
func NewBase(name string, threads int) *Base {
	threads = ThreadsOr(threads)
	b := &Base{name: name, Threads: threads, Pool: NewPool(threads)}
	runtime.AddCleanup(b, func(p *Pool) { p.Close() }, b.Pool)
	return b
}

// Name implements kernels.Backend.
func (b *Base) Name() string { return b.name }

// Close implements kernels.Backend: it stops the helper goroutines. The
// backend must not run ops afterwards.
func (b *Base) Close() error {
	b.Pool.Close()
	return nil
}

// Sync implements kernels.Backend; ops run at once, so there is no work
// to wait for.
func (b *Base) Sync() error { return nil }

// Free drops the tensor's memory (for the garbage collector) and releases
// its packed copy. Using it, or a view of it, afterwards panics in an op
// and fails in Set*/Get*. Freeing a view does nothing.
func (b *Base) Free(t kernels.Tensor) {
	c, ok := t.(*Tensor)
	if !ok || c == nil || c.Parent != nil {
		return
	}
	if c.PackedFree != nil {
		_ = c.PackedFree()
	}
	c.F32, c.I32, c.F16, c.Raw, c.Packed = nil, nil, nil, nil, nil
	c.Freed = true
}

// NewTensor implements kernels.Backend: a zeroed F32, F16 or I32 tensor.
func (b *Base) NewTensor(dt tensor.DType, shape ...int) (kernels.Tensor, error) {
	rows, cols, n, err := Dims2(shape)
	if err != nil {
		return nil, fmt.Errorf("cpu: new tensor %v: %w", shape, err)
	}
	t := &Tensor{DT: dt, Dims: append([]int(nil), shape...), Rows: rows, Cols: cols}
	switch dt {
	case tensor.F32:
		t.F32 = make([]float32, n)
	case tensor.I32:
		t.I32 = make([]int32, n)
	case tensor.F16:
		t.F16 = make([]uint16, n)
	default:
		return nil, fmt.Errorf("cpu: new tensor: %w", &tensor.UnsupportedDTypeError{Format: "cpu", DType: dt.String()})
	}
	return t, nil
}

// View implements kernels.Backend: a Tensor whose slice is a prefix of
// t's (no copy) and whose Parent is the tensor that owns the memory.
func (b *Base) View(t kernels.Tensor, shape ...int) kernels.Tensor {
	c := TensorOf("View", t)
	if c.Weight {
		Failf("View: %v is an uploaded weight", c)
	}
	rows, cols, n, err := Dims2(shape)
	if err != nil {
		Failf("View: shape %v: %v", shape, err)
	}
	if n > c.Rows*c.Cols {
		Failf("View: shape %v has %d elements, %v has %d", shape, n, c, c.Rows*c.Cols)
	}
	v := &Tensor{DT: c.DT, Dims: slices.Clone(shape), Rows: rows, Cols: cols, Parent: c}
	if c.Parent != nil {
		v.Parent = c.Parent
	}
	switch c.DT {
	case tensor.F32:
		v.F32 = c.F32[:n:n]
	case tensor.I32:
		v.I32 = c.I32[:n:n]
	case tensor.F16:
		v.F16 = c.F16[:n:n]
	}
	return v
}

// Upload implements kernels.Backend: Weight, then Touch. The tensor keeps
// w.Data, a view of the weight file's mapping, so the caller must keep
// the file open (models.Model keeps its Source open) and unmodified for
// as long as the backend tensor is used.
func (b *Base) Upload(w tensor.Tensor) (kernels.Tensor, error) {
	t, err := Weight(w)
	if err != nil {
		return nil, err
	}
	b.Touch(t)
	return t, nil
}

// Weight checks w and returns it as a weight tensor viewing w.Data. Any
// dtype tensor.Dequantize knows is accepted; shapes of more than two
// dimensions are viewed as (product of the leading ones, last).
func Weight(w tensor.Tensor) (*Tensor, error) {
	if !tensor.Dequantizable(w.DType) {
		return nil, fmt.Errorf("cpu: upload %q: %w", w.Name, &tensor.UnsupportedDTypeError{Format: "cpu", DType: w.DType.String(), Tensor: w.Name})
	}
	shape := make([]int, len(w.Shape))
	for i, d := range w.Shape {
		if d < 0 || d > int64(^uint(0)>>1) {
			return nil, fmt.Errorf("cpu: upload %q: bad shape %v", w.Name, w.Shape)
		}
		shape[i] = int(d)
	}
	rows, cols, _, err := Dims2(shape)
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
	return &Tensor{DT: w.DType, Dims: shape, Rows: rows, Cols: cols, Raw: w.Data, Weight: true, RowBytes: int(rb)}, nil
}

// Touch reads every page of a weight used in place (usually a mapped
// file) once, so that loading brings the weight into memory instead of
// the first forward pass faulting it in (from disk where the page cache
// let it go): an F16 Llama-1B's first prefill ran at 40–57 tok/s that way
// against 67–71 warm.
func (b *Base) Touch(t *Tensor) {
	data := t.Raw
	b.Parallel((len(data)+pageBytes-1)/pageBytes, func(p0, p1 int) {
		var s byte
		for p := p0; p < p1; p++ {
			s ^= data[p*pageBytes]
		}
		touchSink.Add(uint32(s))
	})
}

// pageBytes is the stride at which Touch reads a weight (the smallest
// page size of the platforms here).
const pageBytes = 4096

// touchSink keeps Touch's page reads from being optimised away.
var touchSink atomic.Uint32

// SetF32 implements kernels.Backend for F32 tensors, and for F16 ones
// (rounding to nearest even).
func (b *Base) SetF32(dst kernels.Tensor, src []float32) error {
	t, err := Live(dst)
	if err != nil {
		return err
	}
	switch {
	case t.DT == tensor.F32 && !t.Weight && len(src) == len(t.F32):
		copy(t.F32, src)
	case t.DT == tensor.F16 && !t.Weight && len(src) == len(t.F16):
		ToF16(t.F16, src)
	default:
		return fmt.Errorf("%w: SetF32 of %d values into %v", ErrMismatch, len(src), t)
	}
	return nil
}

// SetI32 implements kernels.Backend.
func (b *Base) SetI32(dst kernels.Tensor, src []int32) error {
	t, err := Live(dst)
	if err != nil {
		return err
	}
	if t.DT != tensor.I32 || len(src) != len(t.I32) {
		return fmt.Errorf("%w: SetI32 of %d values into %v", ErrMismatch, len(src), t)
	}
	copy(t.I32, src)
	return nil
}

// GetF32 implements kernels.Backend for F32 and F16 tensors, and also
// dequantises an uploaded weight.
func (b *Base) GetF32(src kernels.Tensor, dst []float32) error {
	t, err := Live(src)
	if err != nil {
		return err
	}
	switch {
	case t.DT == tensor.F32 && !t.Weight && len(dst) == len(t.F32):
		copy(dst, t.F32)
	case t.DT == tensor.F16 && !t.Weight && len(dst) == len(t.F16):
		for i, h := range t.F16 {
			dst[i] = float16.Frombits(h).Float32()
		}
	case t.Weight && len(dst) == t.Rows*t.Cols:
		if err := tensor.Dequantize(t.DT, t.Raw, dst); err != nil {
			return fmt.Errorf("cpu: GetF32 of %v: %w", t, err)
		}
	default:
		return fmt.Errorf("%w: GetF32 of %v into %d values", ErrMismatch, t, len(dst))
	}
	return nil
}

// GetI32 implements kernels.Backend.
func (b *Base) GetI32(src kernels.Tensor, dst []int32) error {
	t, err := Live(src)
	if err != nil {
		return err
	}
	if t.DT != tensor.I32 || len(dst) != len(t.I32) {
		return fmt.Errorf("%w: GetI32 of %v into %d values", ErrMismatch, t, len(dst))
	}
	copy(dst, t.I32)
	return nil
}

// Parallel calls fn on contiguous chunks [lo, hi) covering [0, n), on at
// most b.Threads goroutines of the pool, and returns when all are done.
// Every op computes each output element wholly inside one fn call, so the
// split never changes a value.
func (b *Base) Parallel(n int, fn func(lo, hi int)) {
	workers := min(b.Threads, n)
	if workers <= 1 {
		fn(0, n)
		return
	}
	chunk := (n + workers - 1) / workers
	b.Pool.Run((n+chunk-1)/chunk, func(_, t int) { fn(t*chunk, min((t+1)*chunk, n)) })
}

// Grow returns s with length n, reallocated only when its capacity is
// short (the contents are then lost).
func Grow[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

// Add implements kernels.Backend: dst = a + b for a (n, m) and b (n, m)
// or (m), the latter broadcast over the rows of a. dst (n, m) may alias a.
func (b *Base) Add(dst, a, c kernels.Tensor) {
	const op = "Add"
	d, x, y := Activation(op, dst), Activation(op, a), Activation(op, c)
	if !(d.Rows == x.Rows && d.Cols == x.Cols) {
		Failf("%s: dst %v, a %v", op, d, x)
	}
	m := x.Cols
	if !(y.Rows == x.Rows && y.Cols == m || y.Rows == 1 && y.Cols == m) {
		Failf("%s: b %v is neither a's shape %v nor one of its rows", op, y, x)
	}
	// Row by row, b's row the same one when broadcast.
	for r := range x.Rows {
		xr, dr := x.F32[r*m:(r+1)*m], d.F32[r*m:(r+1)*m]
		yr := y.F32[:m]
		if y.Rows > 1 {
			yr = y.F32[r*m : (r+1)*m]
		}
		for i, v := range xr {
			dr[i] = v + yr[i]
		}
	}
}

// GetRows implements kernels.Backend: dst (n, cols) = rows ids[i] of
// table (rows, cols). Only the rows asked for are dequantised.
func (b *Base) GetRows(dst, table, ids kernels.Tensor) {
	const op = "GetRows"
	d, tb, id := Activation(op, dst), TensorOf(op, table), Ints(op, ids)
	n, cols := len(id.I32), tb.Cols
	if !(tb.FloatRows()) {
		Failf("%s: table %v has no float rows", op, tb)
	}
	if !(d.Rows == n && d.Cols == cols) {
		Failf("%s: dst %v, table %v, %d ids", op, d, tb, n)
	}
	for i, r := range id.I32 {
		if !(r >= 0 && int(r) < tb.Rows) {
			Failf("%s: id %d outside the table's %d rows", op, r, tb.Rows)
		}
		tb.Row(int(r), d.F32[i*cols:(i+1)*cols])
	}
}

// KVWrite implements kernels.Backend: row i of src (n, kvDim) is stored
// in row cells[i] of the cache (cells, kvDim), rounded to nearest even
// for an F16 cache.
func (b *Base) KVWrite(k, src, cells kernels.Tensor) {
	const op = "KVWrite"
	c, s, cl := CacheOf(op, k), Activation(op, src), Ints(op, cells)
	dim := s.Cols
	if !(c.Cols == dim && len(cl.I32) == s.Rows) {
		Failf("%s: cache %v, src %v, %d cells", op, c, s, len(cl.I32))
	}
	for i, ci := range cl.I32 {
		if !(ci >= 0 && int(ci) < c.Rows) {
			Failf("%s: cell %d outside the cache's %d", op, ci, c.Rows)
		}
		c.SetRow(int(ci), s.F32[i*dim:(i+1)*dim])
	}
}

// angles fills cos and sin (HeadDim/2) for position pos: the float32
// angle pos·inv_freq, then its cosine and sine rounded to float32, as
// transformers' rotary embedding.
func angles(pos int32, inv, cos, sin []float32) {
	for i, f := range inv {
		a := float32(pos) * f
		cos[i] = float32(math.Cos(float64(a)))
		sin[i] = float32(math.Sin(float64(a)))
	}
}

// rotate rotates one head x (HeadDim) by the angles of cos and sin: each
// pair (x0, x1), adjacent for RoPENormal and half a head apart for
// RoPENeox, becomes (x0·cos − x1·sin, x1·cos + x0·sin), every product
// rounded to float32 as in torch's q·cos + rotate_half(q)·sin.
func rotate(x, cos, sin []float32, style kernels.RoPEStyle) {
	half := len(cos)
	for i := range half {
		a, b := i, i+half
		if style == kernels.RoPENormal {
			a, b = 2*i, 2*i+1
		}
		x0, x1, c, s := x[a], x[b], cos[i], sin[i]
		x[a] = float32(x0*c) - float32(x1*s)
		x[b] = float32(x1*c) + float32(x0*s)
	}
}

func checkRoPE(op string, p kernels.RoPE) {
	if err := p.Check(); err != nil {
		panic("cpu: " + op + ": " + err.Error())
	}
}

// RoPE implements kernels.Backend: every head of row i of x
// (n, heads·HeadDim) is rotated to position pos[i].
func (b *Base) RoPE(x, pos kernels.Tensor, p kernels.RoPE) {
	const op = "RoPE"
	t, ps := Activation(op, x), Ints(op, pos)
	checkRoPE(op, p)
	n, dim := t.Rows, t.Cols
	if !(dim%p.HeadDim == 0 && len(ps.I32) == n) {
		Failf("%s: x %v, %d positions, head dim %d", op, t, len(ps.I32), p.HeadDim)
	}
	cos, sin := b.rope.table(b, ps.I32, p)
	half := p.HeadDim / 2
	b.Parallel(n, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			c, s := cos[i*half:(i+1)*half], sin[i*half:(i+1)*half]
			row := t.F32[i*dim : (i+1)*dim]
			for h := 0; h < dim; h += p.HeadDim {
				rotate(row[h:h+p.HeadDim], c, s, p.Style)
			}
		}
	})
}

// ropeCache is RoPE's last table: the frequencies of the last RoPE
// parameters and the angles of the last positions.
type ropeCache struct {
	p        kernels.RoPE // FreqFactors copied
	inv      []float32    // p.InvFreq(); nil: none yet
	pos      []int32
	cos, sin []float32 // (len(pos), len(inv)) angles' values
	valid    bool      // cos and sin hold pos's angles under inv
}

// table returns the angles of every position of pos (cos and sin,
// len(pos)·HeadDim/2) under p's frequencies, kept from the last call
// when it had the same positions and parameters: every layer's RoPE of
// Q and K in one forward pass rotates to the same positions, and the
// table costs two math calls per value, the frequencies one each.
func (r *ropeCache) table(b *Base, pos []int32, p kernels.RoPE) (cos, sin []float32) {
	if r.inv == nil || !sameFreqs(r.p, p) {
		r.p, r.inv, r.valid = p, p.InvFreq(), false
		r.p.FreqFactors = slices.Clone(p.FreqFactors)
	}
	if r.valid && slices.Equal(r.pos, pos) {
		return r.cos, r.sin
	}
	inv, half := r.inv, len(r.inv)
	r.pos = append(r.pos[:0], pos...)
	r.cos, r.sin = Grow(r.cos, len(pos)*half), Grow(r.sin, len(pos)*half)
	b.Parallel(len(pos), func(lo, hi int) {
		for i := lo; i < hi; i++ {
			angles(pos[i], inv, r.cos[i*half:(i+1)*half], r.sin[i*half:(i+1)*half])
		}
	})
	r.valid = true
	return r.cos, r.sin
}

// sameFreqs reports whether p and q give the same InvFreq: every field
// it reads equal (floats bit for bit).
func sameFreqs(p, q kernels.RoPE) bool {
	f64 := func(a, b float64) bool { return math.Float64bits(a) == math.Float64bits(b) }
	f32 := func(a, b float32) bool { return math.Float32bits(a) == math.Float32bits(b) }
	return p.HeadDim == q.HeadDim && f64(p.Theta, q.Theta) && p.Scaling == q.Scaling && f64(p.Factor, q.Factor) &&
		f64(p.LowFreqFactor, q.LowFreqFactor) && f64(p.HighFreqFactor, q.HighFreqFactor) &&
		p.OriginalMaxPositions == q.OriginalMaxPositions &&
		(p.FreqFactors == nil) == (q.FreqFactors == nil) && slices.EqualFunc(p.FreqFactors, q.FreqFactors, f32)
}

// KVShift implements kernels.Backend: row cells[i] of the K cache
// (cells, kvHeads·HeadDim), F32 or F16, is rotated by delta[i] positions
// with the same float32 steps as RoPE (an F16 row is widened, rotated and
// rounded back).
func (b *Base) KVShift(k, cells, delta kernels.Tensor, p kernels.RoPE) {
	const op = "KVShift"
	c, cl, dl := CacheOf(op, k), Ints(op, cells), Ints(op, delta)
	checkRoPE(op, p)
	dim := c.Cols
	if !(len(cl.I32) == len(dl.I32)) {
		Failf("%s: %d cells, %d deltas", op, len(cl.I32), len(dl.I32))
	}
	if !(dim%p.HeadDim == 0) {
		Failf("%s: cache %v, head dim %d", op, c, p.HeadDim)
	}
	inv := p.InvFreq()
	cos, sin := make([]float32, len(inv)), make([]float32, len(inv))
	row := make([]float32, dim) // (kvHeads·HeadDim)
	for i, ci := range cl.I32 {
		if !(ci >= 0 && int(ci) < c.Rows) {
			Failf("%s: cell %d outside the cache's %d", op, ci, c.Rows)
		}
		c.Row(int(ci), row)
		angles(dl.I32[i], inv, cos, sin)
		for h := 0; h < dim; h += p.HeadDim {
			rotate(row[h:h+p.HeadDim], cos, sin, p.Style)
		}
		c.SetRow(int(ci), row)
	}
}

// MatMulOperands checks op's operands (dst (n, m), x (n, k), w (m, k), w
// any weight or an F32/F16 tensor) and returns them.
func MatMulOperands(op string, dst, x, w kernels.Tensor) (d, xs, wt *Tensor) {
	d, xs, wt = Activation(op, dst), Activation(op, x), TensorOf(op, w)
	if !(wt.FloatRows()) {
		Failf("%s: weight %v has no float rows", op, wt)
	}
	if !(wt.Cols == xs.Cols && d.Rows == xs.Rows && d.Cols == wt.Rows) {
		Failf("%s: dst %v, x %v, w %v: want dst (n, m), x (n, k), w (m, k)", op, d, xs, wt)
	}
	return d, xs, wt
}

// SwiGLUOperands checks op's operands (dst, gate and up of one shape) and
// returns them.
func SwiGLUOperands(op string, dst, gate, up kernels.Tensor) (d, g, u *Tensor) {
	d, g, u = Activation(op, dst), Activation(op, gate), Activation(op, up)
	if !(d.Rows == g.Rows && d.Cols == g.Cols && u.Rows == g.Rows && u.Cols == g.Cols) {
		Failf("%s: dst %v, gate %v, up %v", op, d, g, u)
	}
	return d, g, u
}

// AttentionOperands checks Attention's operands (kernels.Backend's shapes)
// and returns them with each token's list of cells (VisibleLists) and
// the head dimension. The lists' slice is b's, reused by the next call.
func (b *Base) AttentionOperands(op string, dst, q, k, v, vis kernels.Tensor, heads, kvHeads int) (d, qs, ks, vs *Tensor, lists [][]int32, hd int) {
	d, qs, ks, vs = Activation(op, dst), Activation(op, q), CacheOf(op, k), CacheOf(op, v)
	ls := Ints(op, vis)
	if !(heads > 0 && kvHeads > 0 && heads%kvHeads == 0 && qs.Cols%heads == 0) {
		Failf("%s: q %v with %d heads and %d KV heads", op, qs, heads, kvHeads)
	}
	n, cells := qs.Rows, ks.Rows
	hd = qs.Cols / heads
	if !(ks.Cols == kvHeads*hd && vs.Rows == cells && vs.Cols == kvHeads*hd && ls.Rows == n && d.Rows == n && d.Cols == qs.Cols) {
		Failf("%s: dst %v, q %v, k %v, v %v, vis %v, %d heads, %d KV heads: want dst and q (n, heads·hd), k and v (cells, kvHeads·hd), vis (n, w)", op, d, qs, ks, vs, ls, heads, kvHeads)
	}
	b.lists = visibleLists(op, ls, cells, b.lists)
	return d, qs, ks, vs, b.lists, hd
}

// RMSNormWith is kernels.Backend's RMSNorm with transformers' rounding steps:
//
//	variance = x.pow(2).mean(-1)          # float32 sum, then / d
//	x = x * torch.rsqrt(variance + eps)   # float32
//	return weight * x
//
// with the sum of squares of a row given by sumSquares (in float64,
// rounded once: the backends differ only in its order), every later step
// rounded to float32 where torch does.
func (b *Base) RMSNormWith(dst, x, w kernels.Tensor, eps float32, sumSquares func([]float32) float64) {
	const op = "RMSNorm"
	d, xs, ws := Activation(op, dst), Activation(op, x), Activation(op, w)
	n, dim := xs.Rows, xs.Cols
	if !(ws.Rows == 1 && ws.Cols == dim && d.Rows == n && d.Cols == dim) {
		Failf("%s: dst %v, x %v, w %v: want (n, d), (n, d), (d)", op, d, xs, ws)
	}
	b.Parallel(n, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			row := xs.F32[i*dim : (i+1)*dim] // (d)
			variance := float32(sumSquares(row)) / float32(dim)
			inv := 1 / float32(math.Sqrt(float64(variance+eps)))
			out := d.F32[i*dim : (i+1)*dim] // may be row itself
			for j, v := range row {
				out[j] = ws.F32[j] * (v * inv)
			}
		}
	})
}
