//go:build cgo

package vulkan

/*
#include "vk.h"
*/
import "C"

import "unsafe"

// discard drops the commands recorded since the last submit without
// executing them, and the staging memory they used: benchmarks of the
// host's recording (BenchmarkRecordStep) run a step's ops but not its
// work. It must follow a Sync (no piece in flight) and precede none.
func (b *Backend) discard() {
	b.hz.read, b.hz.written = b.hz.read[:0], b.hz.written[:0]
	b.recorded = 0
	if r := C.vkl_discard(b.ctx); r != C.VK_SUCCESS {
		b.fail(&Error{Op: "vkResetCommandPool", Result: int32(r)})
	}
	b.staging.reset(b)
}

// dryRun tells dispatchSpec how much of a dispatch to skip, so that a
// benchmark can split a dispatch's host cost: dryGo stops after the Go
// side (checks, variant, pipeline, descriptor set, barrier, push
// constants), dryCgo adds a cgo call to a C function that does nothing.
// 0, the only value outside benchmarks, records.
type dryRun int

const (
	dryGo dryRun = 1 + iota
	dryCgo
)

func (b *Backend) dryDispatch(p *pipeline, set C.uint64_t, barrier bool, gx, gy, gz uint32) {
	if b.dry == dryCgo {
		C.vkl_dispatch_nop(b.ctx, p.p, set, boolInt(barrier), unsafe.Pointer(&b.push[0]), C.uint32_t(gx), C.uint32_t(gy), C.uint32_t(gz))
	}
}
