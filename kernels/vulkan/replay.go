//go:build cgo

package vulkan

/*
#include "vk.h"
*/
import "C"

// Record once, replay (kernels.Replayer). A step's ops between
// BeginCapture and EndCapture are recorded into a command buffer of
// their own, which is kept under an id; Replay(id) submits it again
// instead of recording the ops. The recording binds tensors by their
// descriptor sets and carries every push constant and grid, so the
// caller replays only steps whose ops, shapes and tensors are the same
// (the tensors' contents may differ: they are written before, by SetI32
// and the like, outside the capture). Anything but a dispatch while
// capturing (a copy to or from the host, a submit, a profile) ends the
// capture unkept, the ops still run. Any Free, and the descriptor set
// cache starting over, drop every recording (they may bind what went).

// maxGraphs bounds the recordings kept; past it the oldest goes.
const maxGraphs = 32

type graphs struct {
	byID      map[int]*C.vkl_graph
	order     []int // ids, oldest first
	next      int   // the last id given
	capturing bool  // a capture is on (vk.c records into its buffer)
}

// Replays implements kernels.Replayer: recordings are kept unless
// Config.NoReplay (VKLLM_VULKAN_DISABLE=replay) or a profile is on.
func (b *Backend) Replays() bool { return b.info.Replay && !b.prof.on && !b.closed }

// BeginCapture implements kernels.Replayer: the ops from here to
// EndCapture are recorded, run, and kept.
func (b *Backend) BeginCapture() {
	if !b.Replays() || b.rp.capturing || b.err != nil {
		return
	}
	var g *C.vkl_graph
	if r := C.vkl_capture_begin(b.ctx, &g); r != C.VK_SUCCESS {
		b.fail(&Error{Op: "capture", Result: int32(r)})
		return
	}
	b.hz.read, b.hz.written = b.hz.read[:0], b.hz.written[:0] // the graph starts with a barrier
	b.rp.capturing = true
	if b.rp.byID == nil {
		b.rp.byID = map[int]*C.vkl_graph{}
	}
	b.rp.next++
	b.rp.byID[b.rp.next] = g
}

// EndCapture implements kernels.Replayer: it submits the ops recorded
// since BeginCapture, without waiting, and returns the recording's id
// for Replay, or 0 when none was kept.
func (b *Backend) EndCapture() int {
	if !b.rp.capturing {
		return 0
	}
	id := b.rp.next
	b.endCapture()
	if b.err != nil {
		b.dropGraph(id)
		return 0
	}
	b.rp.order = append(b.rp.order, id)
	if len(b.rp.order) > maxGraphs {
		b.dropGraph(b.rp.order[0])
	}
	return id
}

// endCapture ends the capture and submits its commands; work recorded
// after is ordered after them by a barrier.
func (b *Backend) endCapture() {
	b.rp.capturing = false
	if r := C.vkl_capture_end(b.ctx); r != C.VK_SUCCESS {
		b.fail(submitError("vkQueueSubmit (capture)", r))
	}
	b.hz.after = true
}

// interrupt ends a capture unkept before a command that may not be
// recorded into it (a copy to or from the host, a submit); the ops
// recorded so far still run, first.
func (b *Backend) interrupt() {
	if b.rp.capturing {
		b.endCapture()
		b.dropGraph(b.rp.next)
	}
}

// Replay implements kernels.Replayer: it submits the recording id again,
// after the work recorded since the last submit (the step's inputs),
// and reports true; false if there is no such recording (dropped, or
// replay off), and the caller runs the ops.
func (b *Backend) Replay(id int) bool {
	g, ok := b.rp.byID[id]
	if !ok || !b.Replays() || b.rp.capturing || b.err != nil {
		return false
	}
	if r := C.vkl_replay(b.ctx, g); r != C.VK_SUCCESS {
		b.fail(submitError("vkQueueSubmit (replay)", r))
		return true // Sync reports it
	}
	b.hz.read, b.hz.written = b.hz.read[:0], b.hz.written[:0]
	b.hz.after = true
	b.replays++
	return true
}

// Replayed counts the steps submitted from a recording so far: how often
// replay spared the host its recording (DeviceInfo.Replay says whether it
// is on).
func (b *Backend) Replayed() uint64 { return b.replays }

func (b *Backend) dropGraph(id int) {
	g, ok := b.rp.byID[id]
	if !ok {
		return
	}
	C.vkl_graph_free(b.ctx, g)
	delete(b.rp.byID, id)
	for i, x := range b.rp.order {
		if x == id {
			b.rp.order = append(b.rp.order[:i], b.rp.order[i+1:]...)
			break
		}
	}
}

// dropGraphs frees every recording (ending a capture first): they may
// bind a tensor being freed or a descriptor set about to be reset.
func (b *Backend) dropGraphs() {
	b.interrupt()
	for id := range b.rp.byID {
		C.vkl_graph_free(b.ctx, b.rp.byID[id])
	}
	clear(b.rp.byID)
	b.rp.order = b.rp.order[:0]
}
