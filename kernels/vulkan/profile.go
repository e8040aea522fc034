//go:build cgo

package vulkan

/*
#include "vk.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"math"
	"time"
	"unsafe"

	"github.com/vkllm/vkllm/kernels"
)

// profiler is the state of a profile (kernels.OpProfiler): the labels
// given so far, each one's tag its index.
type profiler struct {
	on     bool
	ids    map[string]uint32
	labels []string
}

// maxLabels bounds the distinct labels of a profile: the tags below
// VKL_TS_CONT. Later labels are folded into the last one.
const maxLabels = C.VKL_TS_CONT - 1

// StartProfile implements kernels.OpProfiler with GPU timestamps: while
// on, the first command of each ProfileOp's work and the end of each
// command buffer get a timestamp (vkCmdWriteTimestamp, bottom of pipe),
// read back after the submission's fence. It fails with ErrNoTimestamps
// where the compute queue has none.
func (b *Backend) StartProfile() error {
	switch {
	case b.closed:
		return errors.New("vulkan: start profile: backend closed")
	case b.prof.on:
		return fmt.Errorf("vulkan: start profile: %w", kernels.ErrProfiling)
	case b.props.timestamp_bits == 0:
		return ErrNoTimestamps
	}
	b.interrupt() // a capture's command buffer gets no timestamps
	if r := C.vkl_prof_start(b.ctx); r != C.VK_SUCCESS {
		return &Error{Op: "vkCreateQueryPool", Result: int32(r)}
	}
	b.prof = profiler{on: true, ids: map[string]uint32{"": 0}, labels: []string{""}}
	return nil
}

// ProfileOp implements kernels.OpProfiler.
func (b *Backend) ProfileOp(label string) {
	p := &b.prof
	if !p.on {
		return
	}
	id, ok := p.ids[label]
	if !ok {
		id = uint32(min(len(p.labels), maxLabels))
		if id == uint32(len(p.labels)) {
			p.ids[label] = id
			p.labels = append(p.labels, label)
		}
	}
	C.vkl_prof_label(b.ctx, C.uint32_t(id))
}

// StopProfile implements kernels.OpProfiler.
func (b *Backend) StopProfile() (*kernels.Profile, error) {
	if b.closed {
		return nil, errors.New("vulkan: stop profile: backend closed")
	}
	if !b.prof.on {
		return nil, fmt.Errorf("vulkan: stop profile: %w", kernels.ErrNotProfiling)
	}
	err := b.Sync() // the end timestamps are written and read
	C.vkl_prof_stop(b.ctx)
	labels := b.prof.labels
	b.prof = profiler{}
	if err != nil {
		return nil, err
	}
	tags, vals := b.profileLog()
	return attribute(tags, vals, labels, uint32(b.props.timestamp_bits), float64(b.props.timestamp_period))
}

// profileLog is the timestamps of the profile's submissions: tags (a
// label's index, maybe with VKL_TS_CONT, or VKL_TS_END) and raw ticks.
func (b *Backend) profileLog() ([]uint32, []uint64) {
	var tp *C.uint32_t
	var vp *C.uint64_t
	n := int(C.vkl_prof_log(b.ctx, &tp, &vp))
	if n == 0 {
		return nil, nil
	}
	tags := append([]uint32(nil), unsafe.Slice((*uint32)(unsafe.Pointer(tp)), n)...)
	vals := append([]uint64(nil), unsafe.Slice((*uint64)(unsafe.Pointer(vp)), n)...)
	return tags, vals
}

// timestamps counts the timestamps written so far (for tests).
func (b *Backend) timestamps() uint64 { return uint64(C.vkl_prof_written(b.ctx)) }

// queryPool reports that the query pool exists (for tests).
func (b *Backend) queryPool() bool { return C.vkl_prof_pool(b.ctx) != 0 }

// errProfileLog: the timestamps read back do not make a profile.
var errProfileLog = errors.New("vulkan: profile: bad timestamp log")

// attribute turns a timestamp log into a profile: the ticks between a
// timestamp and the next in the same submission go to the first one's
// label; validBits and period (ns a tick) are the queue's.
func attribute(tags []uint32, vals []uint64, labels []string, validBits uint32, period float64) (*kernels.Profile, error) {
	const cont, end = uint32(C.VKL_TS_CONT), uint32(C.VKL_TS_END)
	mask := ^uint64(0)
	if validBits < 64 {
		mask = 1<<validBits - 1
	}
	// ticks from a to b: the counter wraps at validBits
	delta := func(a, b uint64) (uint64, error) {
		a, b = a&mask, b&mask
		if validBits >= 64 && b < a {
			return 0, fmt.Errorf("%w: timestamp %d after %d", errProfileLog, b, a)
		}
		return (b - a) & mask, nil
	}
	ticks := make([]uint64, len(labels))
	calls := make([]int, len(labels))
	var order []int // labels by first work
	seen := make([]bool, len(labels))
	var span float64 // ticks, first to end of each submission
	p := &kernels.Profile{}
	first, prev := -1, -1 // this submission's first and latest timestamps
	for i, tag := range tags {
		if prev >= 0 {
			d, err := delta(vals[prev], vals[i])
			if err != nil {
				return nil, err
			}
			ticks[tags[prev]&^cont] += d
		}
		if tag == end {
			if first < 0 {
				return nil, fmt.Errorf("%w: an end with no start", errProfileLog)
			}
			d, err := delta(vals[first], vals[i])
			if err != nil {
				return nil, err
			}
			span += float64(d)
			p.Submits++
			first, prev = -1, -1
			continue
		}
		id := tag &^ cont
		if int(id) >= len(labels) {
			return nil, fmt.Errorf("%w: tag %#x of %d labels", errProfileLog, tag, len(labels))
		}
		if tag&cont == 0 {
			calls[id]++
		}
		if !seen[id] {
			seen[id] = true
			order = append(order, int(id))
		}
		if first < 0 {
			first = i
		}
		prev = i
	}
	if prev >= 0 {
		return nil, fmt.Errorf("%w: a submission with no end", errProfileLog)
	}
	ns := func(t float64) time.Duration { return time.Duration(math.Round(t * period)) }
	for _, id := range order {
		p.Ops = append(p.Ops, kernels.OpTime{Label: labels[id], Calls: calls[id], Time: ns(float64(ticks[id]))})
	}
	p.Span = ns(span)
	return p, nil
}
