//go:build cgo

package vulkan

/*
#include "vk.h"
*/
import "C"

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"unsafe"

	"github.com/vkllm/vkllm/kernels"
	"github.com/vkllm/vkllm/tensor"
	"github.com/x448/float16"
)

// block is one device-local buffer and its memory; tensors are carved
// out of it first-fit.
type block struct {
	buf, mem C.uint64_t
	size     int64
	free     []span // sorted by offset, coalesced
}

type span struct{ off, size int64 }

// part is a piece of a tensor: rows [rowLo, rowLo+rows) at off in blk.
type part struct {
	blk         *block
	off, size   int64
	rowLo, rows int
	// bind, when set, is the range a dispatch binds and the hazards
	// track, from off: a view's is its tensor's whole range (size is
	// the view's bytes), so that the views of every batch size share a
	// descriptor set. 0: size.
	bind int64
}

// binding is the range p is bound over: bind, else size.
func (p part) binding() int64 {
	if p.bind > 0 {
		return p.bind
	}
	return p.size
}

// Tensor is a Vulkan tensor: one part, or several row ranges of a weight
// larger than one binding may cover.
type Tensor struct {
	b        *Backend
	dt       tensor.DType
	shape    []int
	rows     int
	cols     int
	weight   bool
	rowBytes int
	bytes    int64
	parts    []part
	freed    bool
	parent   *Tensor // the tensor a view (View) shares memory with, else nil
	repacked bool    // a weight in the repacked layout (layout.go)
}

// DType implements kernels.Tensor.
func (t *Tensor) DType() tensor.DType { return t.dt }

// Shape implements kernels.Tensor.
func (t *Tensor) Shape() []int { return t.shape }

func (t *Tensor) String() string { return fmt.Sprintf("%v%v", t.dt, t.shape) }

func roundUp(n, a int64) int64 { return (n + a - 1) / a * a }

// alloc carves size bytes (rounded to 4) out of a block, making a new
// block when none has room.
func (b *Backend) alloc(size int64) (part, error) {
	b.allocs++
	size = roundUp(max(size, 4), 4)
	need := roundUp(size, b.align)
	for _, blk := range b.blocks {
		for i, s := range blk.free {
			if s.size >= need {
				p := part{blk: blk, off: s.off, size: size}
				blk.free[i] = span{s.off + need, s.size - need}
				if blk.free[i].size == 0 {
					blk.free = slices.Delete(blk.free, i, i+1)
				}
				return p, nil
			}
		}
	}
	bs := max(need, b.blockSize)
	if b.used+bs > b.budget {
		bs = need // a smaller block may still fit
	}
	if b.used+bs > b.budget {
		return part{}, &OOMError{Need: need, Used: b.used, Budget: b.budget}
	}
	var buf, mem C.uint64_t
	var mapped unsafe.Pointer
	r := C.vkl_buffer(b.ctx, C.uint64_t(bs), 0, &buf, &mem, &mapped)
	if (r == -1 || r == -2) && bs > need { // no room for a whole block: try just this tensor
		bs = need
		r = C.vkl_buffer(b.ctx, C.uint64_t(bs), 0, &buf, &mem, &mapped)
	}
	if r != C.VK_SUCCESS {
		err := &Error{Op: "vkAllocateMemory", Result: int32(r)}
		if r == -1 || r == -2 {
			return part{}, &OOMError{Need: need, Used: b.used, Budget: b.budget, Err: err}
		}
		return part{}, err
	}
	blk := &block{buf: buf, mem: mem, size: bs}
	if bs > need {
		blk.free = []span{{need, bs - need}}
	}
	b.blocks = append(b.blocks, blk)
	b.used += bs
	return part{blk: blk, off: 0, size: size}, nil
}

// release returns a part to its block, and an empty block to the device.
func (b *Backend) release(p part) {
	b.dropGraphs() // they may bind p
	blk := p.blk
	s := span{p.off, roundUp(p.size, b.align)}
	i, _ := slices.BinarySearchFunc(blk.free, s.off, func(x span, off int64) int { return int(x.off - off) })
	blk.free = slices.Insert(blk.free, i, s)
	// coalesce with the neighbours
	if i+1 < len(blk.free) && blk.free[i].off+blk.free[i].size == blk.free[i+1].off {
		blk.free[i].size += blk.free[i+1].size
		blk.free = slices.Delete(blk.free, i+1, i+2)
	}
	if i > 0 && blk.free[i-1].off+blk.free[i-1].size == blk.free[i].off {
		blk.free[i-1].size += blk.free[i].size
		blk.free = slices.Delete(blk.free, i, i+1)
	}
	if len(blk.free) == 1 && blk.free[0].size == blk.size {
		b.flush()    // the block may still be read by recorded work
		b.dropSets() // and cached descriptor sets name it
		C.vkl_buffer_free(b.ctx, blk.buf, blk.mem)
		b.blocks = slices.DeleteFunc(b.blocks, func(x *block) bool { return x == blk })
		b.used -= blk.size
	}
}

// newTensor allocates t's parts: a weight's rows are split so that each
// part fits one binding. On failure nothing stays allocated.
func (b *Backend) newTensor(t *Tensor) error {
	limit := b.maxRange
	if t.weight {
		limit = b.maxPart
	}
	if t.bytes <= limit {
		p, err := b.alloc(t.bytes)
		if err != nil {
			return err
		}
		p.rows = t.rows
		t.parts = []part{p}
		return nil
	}
	rb := int64(t.rowBytes)
	if !t.weight || rb > limit {
		return fmt.Errorf("vulkan: %v of %d bytes exceeds the %d bytes one binding may cover", t, t.bytes, limit)
	}
	per := int(limit / rb)
	for lo := 0; lo < t.rows; lo += per {
		n := min(per, t.rows-lo)
		p, err := b.alloc(int64(n) * rb)
		if err != nil {
			for _, q := range t.parts {
				b.release(q)
			}
			t.parts = nil
			return err
		}
		p.rowLo, p.rows = lo, n
		t.parts = append(t.parts, p)
	}
	return nil
}

// dims returns the 2-D view (rows, cols) of a shape.
func dims(shape []int) (rows, cols int, err error) {
	if len(shape) == 0 {
		return 0, 0, errors.New("no dimensions")
	}
	rows = 1
	for _, d := range shape[:len(shape)-1] {
		if d < 0 || rows != 0 && d > math.MaxInt32/rows {
			return 0, 0, fmt.Errorf("shape %v", shape)
		}
		rows *= d
	}
	cols = shape[len(shape)-1]
	if cols < 0 || rows != 0 && cols > math.MaxInt32/rows {
		return 0, 0, fmt.Errorf("shape %v", shape)
	}
	return rows, cols, nil
}

// NewTensor implements kernels.Backend: a zeroed F32, F16 or I32 tensor.
// F16 needs 16-bit storage buffers.
func (b *Backend) NewTensor(dt tensor.DType, shape ...int) (kernels.Tensor, error) {
	rows, cols, err := dims(shape)
	if err != nil {
		return nil, fmt.Errorf("vulkan: new tensor: %w", err)
	}
	es := 4
	switch {
	case dt == tensor.F32 || dt == tensor.I32:
	case dt == tensor.F16 && b.info.Storage16:
		es = 2
	default:
		return nil, fmt.Errorf("vulkan: new tensor: %w", &tensor.UnsupportedDTypeError{Format: "vulkan", DType: dt.String()})
	}
	t := &Tensor{b: b, dt: dt, shape: slices.Clone(shape), rows: rows, cols: cols, rowBytes: cols * es, bytes: int64(rows) * int64(cols) * int64(es)}
	if err := b.newTensor(t); err != nil {
		return nil, err
	}
	b.zero(t.parts[0])
	return t, nil
}

// zero records the zeroing of p.
func (b *Backend) zero(p part) {
	b.order(nil, []part{p})
	if r := C.vkl_fill(b.ctx, p.blk.buf, C.uint64_t(p.off), C.uint64_t(p.size)); r != C.VK_SUCCESS {
		b.fail(&Error{Op: "vkCmdFillBuffer", Result: int32(r)})
	}
}

// weightDTypes are the dtypes Upload takes (the shaders' TYPE_ list).
var weightDTypes = []tensor.DType{
	tensor.F32, tensor.F16, tensor.BF16, tensor.Q8_0, tensor.Q4_0, tensor.Q4_1, tensor.Q5_0, tensor.Q5_1,
	tensor.Q2_K, tensor.Q3_K, tensor.Q4_K, tensor.Q5_K, tensor.Q6_K,
}

// WeightDTypes lists the weight dtypes Upload accepts.
func WeightDTypes() []tensor.DType { return slices.Clone(weightDTypes) }

// Upload implements kernels.Backend: the weight's bytes are copied to
// device-local memory through a staging buffer, one submit per part,
// repacked on the way where DeviceInfo.Repacked lists the dtype
// (layout.go).
func (b *Backend) Upload(w tensor.Tensor) (kernels.Tensor, error) {
	return b.upload(w, slices.Contains(b.info.Repacked, w.DType.String()))
}

// upload is Upload with the layout chosen: repacked where pack is set
// and the rows allow it.
func (b *Backend) upload(w tensor.Tensor, pack bool) (kernels.Tensor, error) {
	if !slices.Contains(weightDTypes, w.DType) {
		return nil, fmt.Errorf("vulkan: upload %q: %w", w.Name, &tensor.UnsupportedDTypeError{Format: "vulkan", DType: w.DType.String(), Tensor: w.Name})
	}
	shape := make([]int, len(w.Shape))
	for i, d := range w.Shape {
		if d < 0 || d > math.MaxInt32 {
			return nil, fmt.Errorf("vulkan: upload %q: bad shape %v", w.Name, w.Shape)
		}
		shape[i] = int(d)
	}
	rows, cols, err := dims(shape)
	if err != nil {
		return nil, fmt.Errorf("vulkan: upload %q: %w", w.Name, err)
	}
	rb, err := w.DType.Bytes(int64(cols))
	if err != nil {
		return nil, fmt.Errorf("vulkan: upload %q: %w", w.Name, err)
	}
	if int64(len(w.Data)) != rb*int64(rows) {
		return nil, fmt.Errorf("vulkan: upload %q: %d bytes for %v %v", w.Name, len(w.Data), w.DType, w.Shape)
	}
	t := &Tensor{b: b, dt: w.DType, shape: shape, rows: rows, cols: cols, weight: true, rowBytes: int(rb), bytes: int64(len(w.Data)),
		repacked: pack && repackable(w.DType, cols)}
	if err := b.newTensor(t); err != nil {
		return nil, fmt.Errorf("vulkan: upload %q: %w", w.Name, err)
	}
	for _, p := range t.parts {
		lo := int64(p.rowLo) * rb
		src := w.Data[lo : lo+int64(p.rows)*rb]
		if t.repacked {
			b.writeWith(p, len(src), func(dst []byte) { repack(t.dt, dst, src) })
		} else {
			b.write(p, src)
		}
		if err := b.Sync(); err != nil {
			b.Free(t)
			return nil, fmt.Errorf("vulkan: upload %q: %w", w.Name, err)
		}
	}
	return t, nil
}

// View implements kernels.Backend: a Tensor whose one part is the first
// bytes of t's, so ops bind the same buffer and range (t's whole range:
// the descriptor set of every view is t's) and dispatch over the view's
// rows.
func (b *Backend) View(x kernels.Tensor, shape ...int) kernels.Tensor {
	t := tensorOf("View", x)
	must(!t.weight, "View: %v is an uploaded weight", t)
	rows, cols, err := dims(shape)
	must(err == nil, "View: %v", err)
	es := int64(4)
	if t.dt == tensor.F16 {
		es = 2
	}
	bytes := int64(rows) * int64(cols) * es
	must(bytes <= t.bytes, "View: shape %v has %d elements, %v has %d", shape, int64(rows)*int64(cols), t, numel(t))
	p := t.parts[0]
	p.bind = p.binding()
	p.size, p.rows = roundUp(max(bytes, 4), 4), rows
	v := &Tensor{b: b, dt: t.dt, shape: slices.Clone(shape), rows: rows, cols: cols, rowBytes: cols * int(es), bytes: bytes, parts: []part{p}, parent: t}
	if t.parent != nil {
		v.parent = t.parent
	}
	return v
}

// Free implements kernels.Backend. Freeing a view does nothing.
func (b *Backend) Free(x kernels.Tensor) {
	t, ok := x.(*Tensor)
	if !ok || t == nil || t.freed || b.closed || t.parent != nil {
		return
	}
	t.freed = true
	for _, p := range t.parts {
		b.release(p)
	}
	t.parts = nil
}

// live returns x as a usable *Tensor.
func live(x kernels.Tensor) (*Tensor, error) {
	t, ok := x.(*Tensor)
	if !ok || t == nil || t.freed || t.b.closed || t.parent != nil && t.parent.freed {
		return nil, fmt.Errorf("vulkan: not a live vulkan tensor: %T", x)
	}
	return t, nil
}

// arena is host-visible staging memory for one submit: SetF32 copies
// through it in recording order, GetF32 reads back from it.
type arena struct {
	chunks []hostBuf
	cur    int   // chunk being filled
	off    int64 // offset in it
	keep   int64 // ReserveStaging's bytes: a chunk this large is kept
}

type hostBuf struct {
	buf, mem C.uint64_t
	ptr      unsafe.Pointer
	size     int64
}

// take returns size bytes of staging memory valid until the next submit.
func (a *arena) take(b *Backend, size int64) (hostBuf, int64, error) {
	size = roundUp(max(size, 4), 256)
	for a.cur < len(a.chunks) {
		c := a.chunks[a.cur]
		if a.off+size <= c.size {
			off := a.off
			a.off += size
			return c, off, nil
		}
		a.cur++
		a.off = 0
	}
	cs := max(size, 4<<20, a.keep)
	b.allocs++
	var h hostBuf
	if r := C.vkl_buffer(b.ctx, C.uint64_t(cs), 1, &h.buf, &h.mem, &h.ptr); r != C.VK_SUCCESS {
		return hostBuf{}, 0, &Error{Op: "vkAllocateMemory (staging)", Result: int32(r)}
	}
	h.size = cs
	a.chunks = append(a.chunks, h)
	a.cur = len(a.chunks) - 1
	a.off = size
	return h, 0, nil
}

// maxKeptStaging bounds the staging memory kept between submits.
const maxKeptStaging = 64 << 20

// reset makes the arena empty after a submit, keeping its largest chunk
// (so a Decode's inputs reuse it instead of allocating every step).
func (a *arena) reset(b *Backend) {
	if len(a.chunks) > 1 {
		big := 0
		for i, c := range a.chunks {
			if c.size > a.chunks[big].size {
				big = i
			}
		}
		for i, c := range a.chunks {
			if i != big {
				C.vkl_buffer_free(b.ctx, c.buf, c.mem)
			}
		}
		a.chunks = append(a.chunks[:0], a.chunks[big])
	}
	if len(a.chunks) == 1 && a.chunks[0].size > max(maxKeptStaging, a.keep) { // a weight's upload
		C.vkl_buffer_free(b.ctx, a.chunks[0].buf, a.chunks[0].mem)
		a.chunks = a.chunks[:0]
	}
	a.cur, a.off = 0, 0
}

// reserve makes the arena hold a chunk of at least size bytes, kept by
// every reset from then on. It allocates only when no chunk is as large;
// while work is recorded the new chunk waits for the next reset to be
// the only one.
func (a *arena) reserve(b *Backend, size int64) error {
	size = roundUp(max(size, 4), 256)
	a.keep = max(a.keep, size)
	for _, c := range a.chunks {
		if c.size >= size {
			return nil
		}
	}
	var h hostBuf
	b.allocs++
	if r := C.vkl_buffer(b.ctx, C.uint64_t(size), 1, &h.buf, &h.mem, &h.ptr); r != C.VK_SUCCESS {
		return &Error{Op: "vkAllocateMemory (staging)", Result: int32(r)}
	}
	h.size = size
	if a.cur == 0 && a.off == 0 { // nothing recorded: the smaller chunks go
		for _, c := range a.chunks {
			C.vkl_buffer_free(b.ctx, c.buf, c.mem)
		}
		a.chunks = a.chunks[:0]
	}
	a.chunks = append(a.chunks, h)
	return nil
}

func (a *arena) free(b *Backend) {
	for _, c := range a.chunks {
		C.vkl_buffer_free(b.ctx, c.buf, c.mem)
	}
	a.chunks = nil
}

// ReserveStaging implements kernels.StagingReserver: the host-visible
// staging memory for bytes of inputs and reads between two syncs is
// allocated now and kept, so that steps moving no more allocate nothing.
func (b *Backend) ReserveStaging(bytes int64) error {
	if bytes < 0 {
		return fmt.Errorf("vulkan: reserve staging: %d bytes", bytes)
	}
	if b.closed {
		return errors.New("vulkan: reserve staging: backend closed")
	}
	if bytes == 0 {
		return nil
	}
	return b.staging.reserve(b, bytes)
}

// write records a copy of data into part p at offset 0.
func (b *Backend) write(p part, data []byte) {
	b.writeWith(p, len(data), func(dst []byte) { copy(dst, data) })
}

// writeWith records a copy of n bytes into part p at offset 0, which fill
// writes into the staging memory.
func (b *Backend) writeWith(p part, n int, fill func(dst []byte)) {
	b.interrupt() // a copy from the host is not replayed
	h, off, err := b.staging.take(b, int64(n))
	if err != nil {
		b.fail(err)
		return
	}
	fill(unsafe.Slice((*byte)(unsafe.Add(h.ptr, off)), n))
	b.order(nil, []part{p})
	if r := C.vkl_copy(b.ctx, h.buf, C.uint64_t(off), p.blk.buf, C.uint64_t(p.off), C.uint64_t(n)); r != C.VK_SUCCESS {
		b.fail(&Error{Op: "vkCmdCopyBuffer", Result: int32(r)})
	}
}

// read submits the recorded work with a copy of part p (n bytes) and
// returns the bytes.
func (b *Backend) read(p part, n int64) ([]byte, error) {
	b.interrupt()
	h, off, err := b.staging.take(b, n)
	if err != nil {
		return nil, err
	}
	b.order([]part{p}, nil)
	if r := C.vkl_copy(b.ctx, p.blk.buf, C.uint64_t(p.off), h.buf, C.uint64_t(off), C.uint64_t(n)); r != C.VK_SUCCESS {
		b.fail(&Error{Op: "vkCmdCopyBuffer", Result: int32(r)})
	}
	out := make([]byte, n)
	r := b.submit()
	copy(out, unsafe.Slice((*byte)(unsafe.Add(h.ptr, off)), n))
	b.staging.reset(b)
	if r != C.VK_SUCCESS {
		b.fail(submitError("vkQueueSubmit", r))
	}
	if err := b.Sync(); err != nil {
		return nil, err
	}
	return out, nil
}

// ErrMismatch: a host slice's length or a tensor's dtype does not fit.
var ErrMismatch = errors.New("vulkan: tensor dtype or length mismatch")

// SetF32 implements kernels.Backend for F32 tensors, and F16 ones
// (rounded to nearest even on the host).
func (b *Backend) SetF32(dst kernels.Tensor, src []float32) error {
	t, err := live(dst)
	if err != nil {
		return err
	}
	n := t.rows * t.cols
	switch {
	case t.weight || len(src) != n:
	case t.dt == tensor.F32:
		b.write(t.parts[0], f32Bytes(src))
		return nil
	case t.dt == tensor.F16:
		buf := make([]byte, 2*n)
		for i, v := range src {
			binary.LittleEndian.PutUint16(buf[2*i:], float16.Fromfloat32(v).Bits())
		}
		b.write(t.parts[0], buf)
		return nil
	}
	return fmt.Errorf("%w: SetF32 of %d values into %v", ErrMismatch, len(src), t)
}

// SetI32 implements kernels.Backend.
func (b *Backend) SetI32(dst kernels.Tensor, src []int32) error {
	t, err := live(dst)
	if err != nil {
		return err
	}
	if t.dt != tensor.I32 || len(src) != t.rows*t.cols {
		return fmt.Errorf("%w: SetI32 of %d values into %v", ErrMismatch, len(src), t)
	}
	b.write(t.parts[0], unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(src))), 4*len(src)))
	return nil
}

func f32Bytes(x []float32) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(x))), 4*len(x))
}

// GetF32 implements kernels.Backend: waits for the recorded work and
// copies an F32 or F16 tensor (or a weight, dequantised) to dst.
func (b *Backend) GetF32(src kernels.Tensor, dst []float32) error {
	t, err := live(src)
	if err != nil {
		return err
	}
	n := t.rows * t.cols
	if len(dst) != n || !(t.weight || t.dt == tensor.F32 || t.dt == tensor.F16) {
		return fmt.Errorf("%w: GetF32 of %v into %d values", ErrMismatch, t, len(dst))
	}
	var raw []byte
	for _, p := range t.parts {
		size := t.bytes
		if t.weight {
			size = int64(p.rows) * int64(t.rowBytes)
		}
		data, err := b.read(p, size)
		if err != nil {
			return err
		}
		raw = append(raw, data...)
	}
	if t.repacked {
		file := make([]byte, len(raw))
		unpack(t.dt, file, raw)
		raw = file
	}
	switch {
	case t.dt == tensor.F32:
		copy(dst, unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(raw))), n))
	case t.dt == tensor.F16 && !t.weight:
		for i := range dst {
			dst[i] = float16.Frombits(binary.LittleEndian.Uint16(raw[2*i:])).Float32()
		}
	default:
		if err := tensor.Dequantize(t.dt, raw, dst); err != nil {
			return fmt.Errorf("vulkan: GetF32 of %v: %w", t, err)
		}
	}
	return nil
}

// GetI32 implements kernels.Backend.
func (b *Backend) GetI32(src kernels.Tensor, dst []int32) error {
	t, err := live(src)
	if err != nil {
		return err
	}
	if t.dt != tensor.I32 || len(dst) != t.rows*t.cols {
		return fmt.Errorf("%w: GetI32 of %v into %d values", ErrMismatch, t, len(dst))
	}
	raw, err := b.read(t.parts[0], t.bytes)
	if err != nil {
		return err
	}
	copy(dst, unsafe.Slice((*int32)(unsafe.Pointer(unsafe.SliceData(raw))), len(dst)))
	return nil
}
