//go:build cgo

package vulkan

/*
#include "vk.h"
*/
import "C"

import (
	"unsafe"

	"github.com/vkllm/vkllm/tensor"
)

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

// names memoises what an op works out from its operands' dtypes on
// every call (variant names, the matrix-vector tuning), so that
// recording a warmed-up step allocates nothing on the Go heap
// (TestStepAllocs): a name is built by concatenation and a tuning by
// copying maps, once per Backend and key.
type names struct {
	rows   map[tensor.DType]string    // GetRows
	matmul map[matmulKey]string       // matmulVariant
	matvec map[matvecKey]matvecPlan   // MatMul and GateUpSwiGLU's knobs
	attn   map[attnKey]attentionNames // Attention
	swiglu map[string]string          // GateUpSwiGLU: name + "_swiglu"
}

type matmulKey struct {
	dt    tensor.DType
	tiled bool
}

type matvecKey struct {
	dt    tensor.DType
	batch bool
}

// matvecPlan is the matrix-vector kernel's tuning for a weight dtype:
// its knobs, as specialization constants, and the weight rows and
// tokens a workgroup takes.
type matvecPlan struct {
	knobs      Knobs
	spec       []uint32
	rows, toks int
}

type attnKey struct {
	dt tensor.DType
	v4 bool
}

type attentionNames struct{ prefill, single, split string }

// matvecPlan returns the tuning of "matvec/<dt>" (one token) or
// "matvec_batch/<dt>" (batch).
func (b *Backend) matvecPlan(dt tensor.DType, batch bool) matvecPlan {
	k := matvecKey{dt, batch}
	if p, ok := b.names.matvec[k]; ok {
		return p
	}
	key := "matvec/" + typeName(dt)
	if batch {
		key = "matvec_batch/" + typeName(dt)
	}
	kn := b.tune.knobs(key)
	p := matvecPlan{knobs: kn, spec: Families["matvec"].spec(kn), rows: kn["wg"] / wg * kn["rows"], toks: kn["toks"]}
	if b.names.matvec == nil {
		b.names.matvec = map[matvecKey]matvecPlan{}
	}
	b.names.matvec[k] = p
	return p
}

// setTuning replaces the tuning (tests), forgetting the plans made from
// the old one.
func (b *Backend) setTuning(t Tuning) {
	b.tune = t
	b.names.matvec = nil
}

// rowsName is GetRows' variant for a table of dtype dt.
func (b *Backend) rowsName(dt tensor.DType) string {
	if s, ok := b.names.rows[dt]; ok {
		return s
	}
	s := "get_rows_" + typeName(dt) + "_f32"
	if b.names.rows == nil {
		b.names.rows = map[tensor.DType]string{}
	}
	b.names.rows[dt] = s
	return s
}

// attentionNames returns the attention kernels' variants for a cache of
// dtype dt (v4: 4-element loads).
func (b *Backend) attentionNames(dt tensor.DType, v4 bool) attentionNames {
	k := attnKey{dt, v4}
	if n, ok := b.names.attn[k]; ok {
		return n
	}
	cache := typeName(dt)
	if v4 {
		cache += "_v4"
	}
	n := attentionNames{prefill: "attention_prefill_" + cache, single: b.reduceVariant("attention_" + cache), split: b.reduceVariant("attention_split_" + cache)}
	if b.names.attn == nil {
		b.names.attn = map[attnKey]attentionNames{}
	}
	b.names.attn[k] = n
	return n
}

// swigluName is GateUpSwiGLU's variant of the matrix-vector kernel name.
func (b *Backend) swigluName(name string) string {
	if s, ok := b.names.swiglu[name]; ok {
		return s
	}
	s := name + "_swiglu"
	if b.names.swiglu == nil {
		b.names.swiglu = map[string]string{}
	}
	b.names.swiglu[name] = s
	return s
}

// bindsSkipped counts the pipeline and descriptor set binds left out so
// far because the command buffer had them bound already.
func (b *Backend) bindsSkipped() uint64 { return uint64(C.vkl_binds_skipped(b.ctx)) }
