//go:build cgo

package vulkan

/*
#include "vk.h"
*/
import "C"

import (
	"fmt"
	"reflect"
	"strings"
	"unsafe"

	"github.com/vkllm/vkllm/kernels"
	"github.com/vkllm/vkllm/tensor"
)

// wg is the workgroup size of every pipeline (specialization constant 0):
// a power of two, a multiple of every subgroup size we use.
const wg = 64

// dispatch records one dispatch of the named variant over gx·gy·gz
// workgroups, checking the binding count and push-constant size against
// the shader's SPIR-V.
func (b *Backend) dispatch(name string, binds []part, pc any, gx, gy, gz uint32) {
	b.dispatchSpec(name, []uint32{wg}, binds, pc, gx, gy, gz)
}

// dispatchSpec is dispatch with specialization constants (spec[0] is the
// workgroup size). Its host cost is one cgo call and no Go allocation
// once the pipeline and the descriptor set exist (TestDispatchAllocs).
func (b *Backend) dispatchSpec(name string, spec []uint32, binds []part, pc any, gx, gy, gz uint32) {
	if b.closed {
		panic(bad("%s after Close", name))
	}
	p := b.pipeline(name, spec)
	if p == nil {
		return // b.err says why
	}
	if b.trace != nil {
		b.trace(name)
	}
	push := pushOf(&b.push, pc)
	if push != p.layout.PushSize || len(binds) != p.layout.Bindings {
		panic(fmt.Sprintf("vulkan: %s: %d bindings and %d push bytes, want %d and %d", name, len(binds), push, p.layout.Bindings, p.layout.PushSize))
	}
	set := b.set(p, binds)
	if set == 0 {
		return // b.err says why
	}
	var writes [maxBind]part
	nw := 0
	for i, q := range binds {
		if p.layout.Writable[i] {
			writes[nw] = q
			nw++
		}
	}
	barrier := b.hazard(binds, writes[:nw])
	if b.dry != 0 {
		b.dryDispatch(p, set, barrier, gx, gy, gz)
	} else if r := C.vkl_dispatch(b.ctx, p.p, set, boolInt(barrier), unsafe.Pointer(&b.push[0]),
		C.uint32_t(gx), C.uint32_t(gy), C.uint32_t(gz)); r != C.VK_SUCCESS {
		b.fail(&Error{Op: "dispatch " + name, Result: int32(r)})
	}
	b.recorded++
	if f := b.pieceFirst; f > 0 && (b.recorded == f || b.recorded > f && (b.recorded-f)%pieceEvery == 0) {
		if r := C.vkl_piece(b.ctx); r != C.VK_SUCCESS {
			b.fail(submitError("vkQueueSubmit", r))
		}
	}
}

// A step is submitted in pieces, without waiting, so that the device
// starts on it while the host still records: the first after pieceFirst
// dispatches (small, to start the device early), then every pieceEvery
// (each submit costs the host some microseconds). Backend.pieceFirst is
// pieceFirst; 0 (benchmarks of the recording alone) turns pieces off.
const (
	pieceFirst = 32
	pieceEvery = 128
)

// maxBind is the most bindings a shader may have (vk.c's MAX_BIND).
const maxBind = 8

// setKey names a cached descriptor set: a pipeline and its bound ranges.
type setKey struct {
	p *C.vkl_pipe
	r [maxBind]bufRange
}

// maxSets bounds the descriptor set cache (Backend.maxSets; tests lower
// it); past it the cache starts over. A step binds the same ranges every
// time (a Context's tensors are allocated at NewContext, and a view binds
// its whole tensor), so steps of every batch size and width hit it.
const maxSets = 1 << 14

// set returns the descriptor set binding binds to p's layout, written
// once and kept across submits (0 on failure, recorded in b.err).
func (b *Backend) set(p *pipeline, binds []part) C.uint64_t {
	k := setKey{p: p.p}
	for i, q := range binds {
		k.r[i] = spanOf(q)
	}
	if s, ok := b.sets[k]; ok {
		return s
	}
	if len(b.sets) >= b.maxSets {
		b.dropSets()
	}
	var bufs, offs, ranges [maxBind]C.uint64_t
	for i, q := range binds {
		bufs[i], offs[i], ranges[i] = q.blk.buf, C.uint64_t(q.off), C.uint64_t(q.binding())
	}
	var s C.uint64_t
	if r := C.vkl_set(b.ctx, p.p, &bufs[0], &offs[0], &ranges[0], &s); r != C.VK_SUCCESS {
		b.fail(&Error{Op: "vkAllocateDescriptorSets", Result: int32(r)})
		return 0
	}
	b.sets[k] = s
	b.setWrites++
	return s
}

// dropSets empties the descriptor set cache, submitting and waiting for
// the work recorded so far (which may use its sets) first. Freeing a
// buffer drops the cache, whose sets may name it.
func (b *Backend) dropSets() {
	b.dropGraphs() // recordings bind the sets
	if len(b.sets) == 0 {
		return
	}
	if r := b.submit(); r != C.VK_SUCCESS {
		b.fail(submitError("vkQueueSubmit", r))
	}
	C.vkl_sets_reset(b.ctx)
	clear(b.sets)
}

// pushWords bounds a push-constant block (32-bit words): Vulkan
// guarantees 128 bytes.
const pushWords = 32

// pushOf copies the push-constant block pc, a struct of 32-bit scalars
// (push.go), into dst in the host's byte order (as vkCmdPushConstants
// takes it) and returns its size in bytes, -1 if it does not fit. It
// reads pc's boxed value directly so that pc does not escape: the
// callers' structs stay on the stack.
func pushOf(dst *[pushWords]uint32, pc any) int {
	t := reflect.TypeOf(pc)
	if t == nil || t.Kind() != reflect.Struct || t.Size()%4 != 0 || t.Size() > 4*pushWords {
		return -1
	}
	n := int(t.Size())
	if n == 0 {
		return 0
	}
	data := (*[2]unsafe.Pointer)(unsafe.Pointer(&pc))[1] // an interface's value word
	copy(dst[:], unsafe.Slice((*uint32)(data), n/4))
	return n
}

// grid spreads n workgroups over x and y (each at most 65535).
func grid(n int) (gx, gy uint32) {
	const lim = 65535
	if n <= lim {
		return uint32(n), 1
	}
	return lim, uint32((n + lim - 1) / lim)
}

// reduceVariant picks the subgroup variant of a reducing shader when the
// device has subgroup arithmetic.
func (b *Backend) reduceVariant(name string) string {
	if !b.info.Subgroups {
		return name
	}
	s, ok := b.subgroupNames[name]
	if !ok {
		s = name + "_subgroup"
		b.subgroupNames[name] = s
	}
	return s
}

func must(cond bool, format string, args ...any) {
	if !cond {
		panic(bad(format, args...))
	}
}

// bad is must's message. The ops recorded every step check with
// `if !cond { panic(bad(…)) }` instead of must, whose arguments would be
// boxed on the heap at every call (TestDispatchAllocs).
func bad(format string, args ...any) string { return fmt.Sprintf("vulkan: "+format, args...) }

func tensorOf(op string, x kernels.Tensor) *Tensor {
	t, err := live(x)
	if err != nil {
		panic(fmt.Sprintf("vulkan: %s: %v", op, err))
	}
	return t
}

func activation(op string, x kernels.Tensor) *Tensor {
	t := tensorOf(op, x)
	if t.dt != tensor.F32 || t.weight {
		panic(bad("%s: want an F32 activation, got %v", op, t))
	}
	return t
}

func ints(op string, x kernels.Tensor) *Tensor {
	t := tensorOf(op, x)
	if t.dt != tensor.I32 {
		panic(bad("%s: want an I32 tensor, got %v", op, t))
	}
	return t
}

func cacheOf(op string, x kernels.Tensor) *Tensor {
	t := tensorOf(op, x)
	if t.dt != tensor.F32 && t.dt != tensor.F16 || t.weight {
		panic(bad("%s: want an F32 or F16 cache, got %v", op, t))
	}
	return t
}

// cacheName is name_f16 or name_f32 for a cache of c's dtype.
func cacheName(c *Tensor, f16, f32 string) string {
	if c.dt == tensor.F16 {
		return f16
	}
	return f32
}

func numel(t *Tensor) int { return t.rows * t.cols }

// typeName is a weight dtype's shader suffix.
func typeName(dt tensor.DType) string { return strings.ToLower(dt.String()) }

// submitError is the *Error of a failed submit (op) with result r; a
// fence wait that timed out is named as one.
func submitError(op string, r C.int) *Error {
	if r == C.VK_TIMEOUT {
		op = "vkWaitForFences after " + op
	}
	return &Error{Op: op, Result: int32(r)}
}
