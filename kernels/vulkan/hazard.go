//go:build cgo

package vulkan

/*
#include "vk.h"
*/
import "C"

// hazards tracks the buffer ranges read and written since the last
// barrier, so that a command gets a barrier before it only when it reads
// or writes what an earlier one wrote, or writes what an earlier one read
// (independent dispatches, such as the Q, K and V projections, then run
// without one between them).
type hazards struct {
	read, written []bufRange
	barriers      int // recorded so far (for tests)
}

type bufRange struct {
	buf      C.uint64_t
	off, end int64
}

// spanOf is the range p is bound over: a view's tracks its whole tensor
// (a superset of the view's bytes, so no barrier is ever missed; views
// start at their tensor's first byte, so one overlapping another's tensor
// overlaps it anyway), as the validation layer sees the binding.
func spanOf(p part) bufRange { return bufRange{p.blk.buf, p.off, p.off + p.binding()} }

func touches(list []bufRange, s bufRange) bool {
	for _, x := range list {
		if x.buf == s.buf && x.off < s.end && s.off < x.end {
			return true
		}
	}
	return false
}

// order records a barrier if a command reading reads and writing writes
// depends on one recorded since the last barrier, then notes its ranges.
func (b *Backend) order(reads, writes []part) {
	if b.hazard(reads, writes) {
		if r := C.vkl_barrier(b.ctx); r != C.VK_SUCCESS {
			b.fail(&Error{Op: "vkCmdPipelineBarrier", Result: int32(r)})
		}
	}
}

// hazard reports whether a command reading reads and writing writes
// needs a barrier before it (the caller records it) and notes its ranges.
func (b *Backend) hazard(reads, writes []part) bool {
	h := &b.hz
	need := false
	for _, p := range reads {
		need = need || touches(h.written, spanOf(p))
	}
	for _, p := range writes {
		s := spanOf(p)
		need = need || touches(h.written, s) || touches(h.read, s)
		b.q8Written(s)
	}
	if need {
		h.read, h.written = h.read[:0], h.written[:0]
		h.barriers++
	}
	for _, p := range reads {
		h.read = append(h.read, spanOf(p))
	}
	for _, p := range writes {
		h.written = append(h.written, spanOf(p))
	}
	return need
}

// submit submits the recorded work and waits; nothing is pending after.
func (b *Backend) submit() C.int {
	b.hz.read, b.hz.written = b.hz.read[:0], b.hz.written[:0]
	b.recorded = 0
	return C.vkl_submit(b.ctx)
}
