//go:build cgo

package vulkan

/*
#cgo CFLAGS: -I${SRCDIR}/include
#cgo LDFLAGS: -ldl
#include <stdlib.h>
#include "vk.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"github.com/vkllm/vkllm/kernels"
	"github.com/vkllm/vkllm/kernels/vulkan/shaders"
)

func init() {
	kernels.Register(kernels.Vulkan, func(o kernels.Options) (kernels.Backend, error) {
		cfg, err := FromEnv(Config{Device: o.Device, Need: o.Need})
		if err != nil {
			return nil, err
		}
		return Open(cfg)
	})
}

// Config configures Open. Zero values take the defaults. Open reads no
// environment variable; FromEnv applies those of the package
// documentation, as the backend registered as "vulkan" does (so
// kernels.Open, models.WithBackendName and the commands honour them).
type Config struct {
	// Device picks a device by index ("1") or name substring; "" takes
	// the best device: of the best type present (discrete, integrated,
	// virtual, then CPU), the one with the most free memory
	// (VK_EXT_memory_budget, else the heap size) that has Need bytes free.
	Device string
	// Need is the device memory the caller will place (the model's
	// weights; 0: unknown). With Device "", Open fails with a *FitError
	// (errcode OOM_VRAM) when no device has that much free.
	Need int64
	// Library is the loader to dlopen; "" takes libvulkan.so.1.
	Library string
	// Validation enables VK_LAYER_KHRONOS_validation when it is installed
	// (also VKLLM_VULKAN_VALIDATION=1); Sync, GetF32 and GetI32 then fail
	// with a *ValidationError once the layer reports a message other than
	// a note that it does not cover an enabled extension (ValidationNotes).
	Validation bool
	// Budget caps the device memory the backend allocates (bytes, 0: the
	// budget VK_EXT_memory_budget reports at Open, else the device-local
	// heap); allocations past it fail with *OOMError.
	Budget int64
	// MaxWeightPart lowers the size of the parts a weight is split into
	// (0: the device's maxStorageBufferRange, the most one binding may
	// cover); tests use it to exercise splitting.
	MaxWeightPart int64
	// BlockSize is the size of the memory blocks tensors are carved from
	// (0: 64 MiB, at most maxStorageBufferRange).
	BlockSize int64
	// NoSubgroups uses the shared-memory reductions even where subgroup
	// arithmetic is available (also VKLLM_VULKAN_DISABLE=subgroup).
	NoSubgroups bool
	// FP16 runs MatMul's half-precision variants (_fp16: dot products of
	// halves, summed in float32) where the device has shaderFloat16, and
	// the float32 ones where it has not (also VKLLM_VULKAN_FP16=1). They
	// hold kerneltest's LimitQuant but not the models' parity with
	// transformers (1e-4 of the largest logit), so they are opt-in.
	FP16 bool
	// NoTiled runs a prefill's MatMul on the matrix-vector kernel (tiles
	// of 8 tokens) instead of the tiled one (also VKLLM_VULKAN_DISABLE=tiled);
	// benchmarks use it to compare the two.
	NoTiled bool
	// Attention tunes the attention kernels (zero fields: the device's
	// tuning, see Tuning, else the defaults; see AttentionTuning).
	Attention AttentionTuning
	// AttentionScratch caps the bytes of split attention's scratch (0:
	// 64 MiB, and never more than one binding covers), which holds every
	// segment of as many tokens as fit, one at least: a larger batch runs
	// in chunks of tokens, with the same results. Tests lower it to run
	// the chunks.
	AttentionScratch int64
	// NoCoopMat runs the exact float32 kernels where the device has
	// VK_KHR_cooperative_matrix, on which every MatMul of an F16, BF16,
	// Q8_0, Q4_0, Q4_1, Q4_K or Q6_K weight otherwise runs on the matrix
	// cores (matmul_coop.comp: halves in, float32 sums, llama.cpp's
	// arithmetic; coop.go). Also VKLLM_VULKAN_DISABLE=coopmat.
	NoCoopMat bool
	// Int8 runs every MatMul of a Q8_0, Q4_0, Q4_1, Q4_K, Q5_K or Q6_K
	// weight as integer dot products against activations quantised to 8
	// bits in blocks of 32 (int8.go; also VKLLM_VULKAN_INT8=1), decode
	// and prefill alike (for those dtypes it wins over the
	// cooperative-matrix kernel). Off by default until a GPU measurement
	// decides.
	Int8 bool
	// NoInt8 forces the float kernels where Int8 asks for the int8 ones
	// (also VKLLM_VULKAN_DISABLE=int8).
	NoInt8 bool
	// NoIntegerDot makes the int8 kernels multiply with plain int
	// arithmetic even where the device has integer dot products (the
	// same bits; tests use it to run that path).
	NoIntegerDot bool
	// PinSubgroups creates the subgroup variants with a required subgroup
	// size even where the device has only one (tests use it to run that
	// path); it has no effect without subgroup size control.
	PinSubgroups bool
	// NoReplay records every step's ops, never submitting a kept
	// recording again (kernels.Replayer; also VKLLM_VULKAN_DISABLE=replay).
	NoReplay bool
	// FenceTimeout bounds every wait for the device to finish a submit
	// (0: 2 minutes); past it the wait fails with an *Error whose Result
	// is VK_TIMEOUT (DeviceLost reports it) and the backend is unusable,
	// so that a hung device ends a program with an error, not a hang.
	FenceTimeout time.Duration
	// NoRepack keeps every uploaded weight in its file's layout where
	// the device's tuning repacks it (layout.go; also
	// VKLLM_VULKAN_DISABLE=repack).
	NoRepack bool
	// Tuning overrides kernels' tuning constants (specialization
	// constants: workgroup size, rows per workgroup, …) by key and knob,
	// over the committed file of the device (tuning.go). A knob changes
	// speed, never a result, except attention's "segs" (Attention's
	// non-zero fields win over its knobs).
	Tuning Tuning
}

// DeviceInfo describes the opened device.
type DeviceInfo struct {
	Index          int
	Name           string
	Vendor         uint32 // PCI vendor ID
	Type           string // "discrete", "integrated", "virtual", "cpu", "other"
	Software       bool
	MaxBufferRange int64
	SubgroupSize   int
	Subgroups      bool // subgroup arithmetic in compute shaders (and in use)
	// PinnedSubgroup is the subgroup size the subgroup variants are
	// created with (subgroup size control), 0 when the device has one size.
	PinnedSubgroup int
	Storage16      bool // 16-bit storage buffers (F16 KV caches need it)
	Float16, Int8  bool // shaderFloat16, shaderInt8 (enabled when present)
	// Tiled reports that prefills of 16 tokens or more run the tiled
	// MatMul kernel: the device allows its 256 invocations and 17 KiB of
	// shared memory, and Config.NoTiled is not set.
	Tiled bool
	// FP16 reports that MatMul runs its _fp16 variants: Config.FP16 and
	// the device has Float16.
	FP16 bool
	// CoopMatDevice reports that the device has VK_KHR_cooperative_matrix
	// in compute shaders (enabled) with an f16·f16+f32 shape the kernel
	// can use; CoopShapes lists every shape it offers, as "MxNxK A*B+C=R".
	CoopMatDevice bool
	CoopShapes    []string
	// CoopMat reports that MatMul runs the cooperative-matrix kernel:
	// CoopMatDevice, not Config.NoCoopMat, a subgroup size known at
	// pipeline creation, and the tiles within the device's workgroup
	// limits; CoopShape is the shape it multiplies in ("16x16x16").
	CoopMat      bool
	CoopShape    string
	MemoryBudget bool // VK_EXT_memory_budget
	Validation   bool // the validation layer is on
	// ValidationLacks lists the enabled device extensions the validation
	// layer says it does not cover (a layer older than the driver):
	// what they do goes unvalidated or is misreported (the cooperative-
	// matrix shaders under Debian 12's layer fail its SPIR-V checks).
	// Backend.ValidationNotes has the layer's words.
	ValidationLacks []string
	// Replay reports that recordings of steps are kept and submitted
	// again (kernels.Replayer): Config.NoReplay is not set.
	Replay bool
	// IntegerDot reports shaderIntegerDotProduct (Vulkan 1.3, enabled):
	// the int8 MatMul takes its products from dotPacked4x8 there.
	IntegerDot bool
	// Int8MatMul reports that MatMul runs the int8 kernels (Config.Int8).
	Int8MatMul bool
	// Repacked lists the dtypes whose weights Upload repacks for aligned
	// 16-byte loads (layout.go: the tuning's "layout" keys, unless
	// Config.NoRepack, and none of the int8 kernels' dtypes in the int8
	// mode, whose readers take the file layout), e.g. ["Q4_0"]; a weight
	// whose rows are not whole runs of 8 blocks keeps its file layout.
	Repacked []string
}

var typeNames = map[int32]string{0: "other", 1: "integrated", 2: "discrete", 3: "virtual", 4: "cpu"}

// Backend is the Vulkan backend. Like every kernels.Backend it is used
// from one goroutine at a time.
type Backend struct {
	ctx   *C.vkl_ctx
	props C.vkl_props
	info  DeviceInfo
	cfg   Config
	tune  Tuning // the device's tuning file under Config.Tuning

	maxRange  int64 // bytes one binding may cover
	maxPart   int64 // bytes of one part of a split weight
	align     int64 // sub-allocation alignment
	blockSize int64
	budget    int64

	blocks []*block
	used   int64 // device memory held in blocks

	// The host side of recording (ops.go): descriptor sets by pipeline
	// and bound ranges, at most maxSets (maxSets), setWrites written so
	// far; dispatches recorded since the last submit that waited, and
	// the first piece's (pieceFirst, 0: no pieces); the push constants
	// of the dispatch being recorded; the last RoPE table freqTable
	// returned and its parameters; the _subgroup names of reducing
	// shaders.
	sets          map[setKey]C.uint64_t
	maxSets       int
	setWrites     uint64
	recorded      int
	pieceFirst    int
	push          [pushWords]uint32
	lastRoPE      kernels.RoPE
	lastFreqs     *Tensor
	subgroupNames map[string]string

	pipes   map[pipeKey]*pipeline
	staging arena
	freqs   map[string]*Tensor // RoPE frequency tables by parameters
	hz      hazards
	scr     *Tensor // attention scratch
	// attn: the attention kernels' tuning (defaults resolved);
	// attnScratch: the bytes split attention's scratch may take (more
	// where one token needs more).
	attn        AttentionTuning
	attnScratch int64
	maxShared   int                  // shared memory bytes a workgroup may use
	allocs      uint64               // tensor allocations and staging buffers made
	prof        profiler             // the profile started, if any (StartProfile)
	dry         dryRun               // benchmarks: how much of a dispatch to skip (record.go)
	trace       func(variant string) // the probe: told each dispatch's variant (probe.go)
	names       names                // variant names and tunings by dtype (record.go)
	rp          graphs               // kept recordings (replay.go)
	replays     uint64               // steps replayed
	err         error                // the first failure while recording
	closed      bool
	notes       []string  // the validation layer's notes on its coverage (ValidationNotes)
	sweep       *sweepCtl // the Sweep running, if one is (sweep_budget.go)
	// sweepHook, set by tests, rewrites a sweep candidate's first timed
	// run's time (a fake slow candidate).
	sweepHook func(Knobs, time.Duration) time.Duration

	// coopSG: the subgroup size the cooperative-matrix kernel runs with;
	// coopPin: the same when it must be required at pipeline creation;
	// coopShape: the shape it multiplies in.
	coopSG, coopPin int
	coopShape       coopShape

	// q8: the int8 MatMul's quantised activations; q8src: what it holds
	// (int8.go); q8runs: quantising dispatches recorded (for tests).
	q8     *Tensor
	q8src  q8Source
	q8runs int
}

// pipeKey names a pipeline: its variant and specialization constants.
type pipeKey struct {
	name string
	n    int
	spec [16]uint32
}

type pipeline struct {
	p      *C.vkl_pipe
	layout shaders.Layout
}

// FromEnv returns cfg with the environment's settings: VKLLM_DEVICE and
// VKLLM_VULKAN_LIB where Device and Library are empty,
// VKLLM_VULKAN_VALIDATION=1, VKLLM_VULKAN_FP16=1 and
// VKLLM_VULKAN_INT8=1 turning Validation, FP16 and Int8 on,
// VKLLM_VULKAN_DISABLE's features off (an unknown one is an error), and
// VKLLM_VULKAN_TUNING's file (a sweep's tuning) as Tuning where Tuning
// is nil.
func FromEnv(cfg Config) (Config, error) {
	if cfg.Library == "" {
		cfg.Library = os.Getenv("VKLLM_VULKAN_LIB")
	}
	if cfg.Device == "" {
		cfg.Device = os.Getenv("VKLLM_DEVICE")
	}
	if os.Getenv("VKLLM_VULKAN_VALIDATION") == "1" {
		cfg.Validation = true
	}
	if os.Getenv("VKLLM_VULKAN_FP16") == "1" {
		cfg.FP16 = true
	}
	if os.Getenv("VKLLM_VULKAN_INT8") == "1" {
		cfg.Int8 = true
	}
	if err := disable(&cfg, os.Getenv("VKLLM_VULKAN_DISABLE")); err != nil {
		return cfg, err
	}
	if path := os.Getenv("VKLLM_VULKAN_TUNING"); path != "" && cfg.Tuning == nil {
		b, err := os.ReadFile(path)
		if err != nil {
			return cfg, fmt.Errorf("vulkan: VKLLM_VULKAN_TUNING: %w", err)
		}
		d, err := ParseDeviceTuning(b)
		if err != nil {
			return cfg, fmt.Errorf("vulkan: VKLLM_VULKAN_TUNING=%s: %w", path, err)
		}
		cfg.Tuning = d.Kernels
	}
	return cfg, nil
}

// Open opens a Vulkan device configured by cfg alone (see FromEnv).
func Open(cfg Config) (*Backend, error) {
	lib := cfg.Library
	if lib == "" {
		lib = "libvulkan.so.1"
	}
	clib := C.CString(lib)
	defer C.free(unsafe.Pointer(clib))
	var ctx *C.vkl_ctx
	switch r := C.vkl_open(clib, boolInt(cfg.Validation), &ctx); r {
	case C.VK_SUCCESS:
	case C.VKL_ERR_NO_LOADER, C.VKL_ERR_NO_SYMBOL:
		return nil, &NoDriverError{Library: lib}
	case resIncompatibleDriver:
		return nil, &NoDriverError{Library: lib, Err: &Error{Op: "vkCreateInstance", Result: int32(r)}}
	default:
		return nil, &Error{Op: "vkCreateInstance", Result: int32(r)}
	}
	b := &Backend{ctx: ctx, cfg: cfg, pipes: map[pipeKey]*pipeline{}, sets: map[setKey]C.uint64_t{}, maxSets: maxSets, pieceFirst: pieceFirst, subgroupNames: map[string]string{}, freqs: map[string]*Tensor{}}
	idx, err := b.pick(cfg.Device, cfg.Need)
	if err != nil {
		C.vkl_close(ctx)
		return nil, err
	}
	if r := C.vkl_device_create(ctx, C.int(idx), &b.props); r != C.VK_SUCCESS {
		C.vkl_close(ctx)
		if r == C.VKL_ERR_NO_QUEUE {
			return nil, fmt.Errorf("%w: device %d has no compute queue", ErrNoDevice, idx)
		}
		return nil, &Error{Op: "vkCreateDevice", Result: int32(r)}
	}
	if cfg.FenceTimeout > 0 {
		C.vkl_set_fence_timeout(ctx, C.uint64_t(cfg.FenceTimeout))
	}
	p := &b.props
	var di C.vkl_devinfo
	C.vkl_device_info(ctx, C.int(idx), &di)
	b.info = DeviceInfo{
		Index: idx, Name: C.GoString(&di.name[0]), Vendor: uint32(di.vendor), Type: typeNames[int32(di._type)], Software: di._type == 4,
		MaxBufferRange: int64(p.max_storage_range), SubgroupSize: int(p.subgroup_size),
		Subgroups: !cfg.NoSubgroups && p.subgroup_ops&0x5 == 0x5 && p.subgroup_size >= 4 && p.subgroup_size <= wg,
		Storage16: p.storage16 != 0, Float16: p.float16 != 0, Int8: p.int8 != 0,
		MemoryBudget: p.memory_budget_ext != 0, Validation: p.validation != 0, Replay: !cfg.NoReplay,
	}
	b.info.FP16 = b.info.Float16 && cfg.FP16
	if err := cfg.Tuning.Check(); err != nil {
		C.vkl_close(ctx)
		return nil, err
	}
	b.tune = tuningFor(b.info.Vendor, b.info.Name, cfg.Tuning)
	b.info.Tiled = !cfg.NoTiled && p.max_wg_size >= mmWG && p.max_shared >= mmShared
	// A dot's summation order must not change between pipelines (batch
	// invariance), so the subgroup variants need one subgroup size: pinned
	// with subgroup size control, or the device's only one; otherwise the
	// shared-memory reductions are used.
	switch {
	case !b.info.Subgroups:
	case p.size_control != 0 && p.size_control_compute != 0 && p.min_subgroup <= p.subgroup_size && p.subgroup_size <= p.max_subgroup:
		if p.min_subgroup != p.max_subgroup || cfg.PinSubgroups {
			b.info.PinnedSubgroup = int(p.subgroup_size)
		}
	case p.min_subgroup != 0 && p.min_subgroup == p.max_subgroup:
	default:
		b.info.Subgroups = false
	}
	if err := b.coopDetect(cfg); err != nil {
		C.vkl_close(ctx)
		return nil, err
	}
	b.int8Detect(cfg)
	b.info.Repacked = b.repackDetect(cfg)
	b.maxRange = int64(p.max_storage_range) &^ 255
	if a := int64(p.max_alloc); a > 0 && a < b.maxRange {
		b.maxRange = a &^ 255
	}
	b.maxPart = b.maxRange
	if cfg.MaxWeightPart > 0 && cfg.MaxWeightPart < b.maxPart {
		b.maxPart = cfg.MaxWeightPart
	}
	b.align = max(256, int64(p.min_storage_align))
	b.blockSize = cfg.BlockSize
	if b.blockSize <= 0 {
		b.blockSize = 64 << 20
	}
	b.blockSize = min(b.blockSize, b.maxRange)
	b.maxShared = int(p.max_shared)
	b.attn = cfg.Attention.withTuning(b.tune).resolve(b.maxShared)
	b.attnScratch = cfg.AttentionScratch
	if b.attnScratch <= 0 {
		b.attnScratch = 64 << 20
	}
	b.attnScratch = min(b.attnScratch, b.maxRange)
	b.budget = cfg.Budget
	if b.budget <= 0 {
		b.budget = int64(p.device_local_heap)
		var u, bg C.uint64_t
		if C.vkl_memory_budget(ctx, &u, &bg); bg > 0 { // VK_EXT_memory_budget: what this process may use
			b.budget = int64(bg)
		}
	}
	if b.info.Validation {
		b.validation() // sorts the layer's notes at vkCreateDevice from its errors
		for _, n := range b.notes {
			if m := unknownExt.FindStringSubmatch(n); m != nil && !slices.Contains(b.info.ValidationLacks, m[1]) {
				b.info.ValidationLacks = append(b.info.ValidationLacks, m[1])
			}
		}
	}
	return b, nil
}

// disable applies VKLLM_VULKAN_DISABLE, a comma-separated list of the
// features whose fallbacks to force: fp16, subgroup, tiled, coopmat, int8,
// repack, replay.
func disable(cfg *Config, list string) error {
	for f := range strings.SplitSeq(list, ",") {
		switch strings.TrimSpace(f) {
		case "":
		case "fp16":
			cfg.FP16 = false
		case "subgroup":
			cfg.NoSubgroups = true
		case "tiled":
			cfg.NoTiled = true
		case "coopmat":
			cfg.NoCoopMat = true
		case "int8":
			cfg.NoInt8 = true
		case "repack":
			cfg.NoRepack = true
		case "replay":
			cfg.NoReplay = true
		default:
			return fmt.Errorf("vulkan: VKLLM_VULKAN_DISABLE=%q: unknown feature %q (want fp16, subgroup, tiled, coopmat, int8, repack, replay)", list, f)
		}
	}
	return nil
}

func boolInt(v bool) C.int {
	if v {
		return 1
	}
	return 0
}

// pick chooses a device with chooseDevice from what the driver lists.
func (b *Backend) pick(want string, need int64) (int, error) {
	devs := make([]candidate, int(C.vkl_device_count(b.ctx)))
	for i := range devs {
		var di C.vkl_devinfo
		C.vkl_device_info(b.ctx, C.int(i), &di)
		var heap, used, budget C.uint64_t
		C.vkl_device_memory(b.ctx, C.int(i), &heap, &used, &budget)
		free := int64(heap)
		if budget > 0 {
			free = max(int64(budget)-int64(used), 0)
		}
		devs[i] = candidate{Name: C.GoString(&di.name[0]), Type: typeNames[int32(di._type)], Free: free}
	}
	return chooseDevice(devs, want, need)
}

// Name implements kernels.Backend.
func (b *Backend) Name() string { return "vulkan" }

// Device describes the opened device.
func (b *Backend) Device() DeviceInfo { return b.info }

// Describe implements kernels.Describer: the device and its kind.
func (b *Backend) Describe() string {
	d := b.info
	s := d.Name + ", " + d.Type
	if d.Software {
		s += ", software"
	}
	return s
}

// Software reports a CPU implementation of Vulkan (lavapipe, SwiftShader):
// kernels.Open("auto") prefers the CPU backend to one.
func (b *Backend) Software() bool { return b.info.Software }

// Memory reports the device memory the backend holds and its budget: the
// configured one, else VK_EXT_memory_budget's, else the heap size.
func (b *Backend) Memory() (used, budget int64) {
	budget = b.budget
	if b.cfg.Budget <= 0 && b.info.MemoryBudget {
		var u, bg C.uint64_t
		C.vkl_memory_budget(b.ctx, &u, &bg)
		if bg > 0 {
			budget = int64(bg)
		}
	}
	return b.used, budget
}

// Submits counts the submits that waited so far (one per Sync or read
// of results, plus one per uploaded weight part); Pieces counts those
// that did not (a long step's first parts).
func (b *Backend) Submits() uint64 { return uint64(C.vkl_submits(b.ctx)) }

// Pieces counts the parts of steps submitted without waiting so far.
func (b *Backend) Pieces() uint64 { return uint64(C.vkl_pieces(b.ctx)) }

// Pipelines counts the pipelines created so far (one per variant and
// specialization constants used); tests use it to check that a warmed-up
// run creates none.
func (b *Backend) Pipelines() int { return len(b.pipes) }

// DescriptorSets counts the descriptor sets written so far (each is
// cached: tests use it to check that warmed-up steps write none).
func (b *Backend) DescriptorSets() uint64 { return b.setWrites }

// Allocations counts the device memory allocations made so far: every
// tensor's memory carved out of the blocks (NewTensor, Upload and the
// backend's own tensors, such as attention's scratch) and every staging
// buffer. Tests use it to check that work after setup allocates nothing.
func (b *Backend) Allocations() uint64 { return b.allocs }

// Close implements kernels.Backend.
func (b *Backend) Close() error {
	if b.closed {
		return nil
	}
	err := b.Sync()
	b.dropGraphs()
	b.closed = true
	b.prof = profiler{}         // a profile started ends unread
	if C.vkl_hung(b.ctx) != 0 { // what the device may still use stays (vkl_close)
		b.blocks, b.used = nil, 0
		C.vkl_close(b.ctx)
		b.ctx = nil
		return err
	}
	for _, p := range b.pipes {
		C.vkl_pipeline_free(b.ctx, p.p)
	}
	b.staging.free(b)
	for _, blk := range b.blocks {
		C.vkl_buffer_free(b.ctx, blk.buf, blk.mem)
	}
	b.blocks, b.used = nil, 0
	C.vkl_close(b.ctx)
	b.ctx = nil
	return err
}

// fail records the first error of a recorded op; Sync returns it.
func (b *Backend) fail(err error) {
	if b.err == nil {
		b.err = err
	}
}

// Sync implements kernels.Backend: submits what was recorded and waits.
func (b *Backend) Sync() error {
	if b.closed {
		return errors.New("vulkan: backend closed")
	}
	b.flush()
	if err := b.validation(); err != nil {
		b.fail(err)
	}
	if err := b.err; err != nil {
		if e, ok := err.(*Error); !ok || !e.DeviceLost() {
			b.err = nil // a lost device stays lost
		}
		return err
	}
	return nil
}

// flush submits what was recorded, waits, and empties the staging arena.
func (b *Backend) flush() {
	if r := b.submit(); r != C.VK_SUCCESS {
		b.fail(submitError("vkQueueSubmit", r))
	}
	b.staging.reset(b)
}

// validation returns a *ValidationError when the layer reported a
// message other than a note on its own coverage (layerNote), which goes
// to ValidationNotes instead.
func (b *Backend) validation() error {
	var nd C.int
	n := int(C.vkl_messages(b.ctx, &nd))
	if n == 0 {
		return nil
	}
	e := &ValidationError{Count: n}
	var buf [1024]C.char
	for i := range int(nd) {
		var id C.int32_t
		count := int(C.vkl_message(b.ctx, C.int(i), &buf[0], C.int(len(buf)), &id))
		text := C.GoString(&buf[0])
		if layerNote(text) {
			e.Count -= count
			if !slices.Contains(b.notes, text) {
				b.notes = append(b.notes, text)
			}
			continue
		}
		e.Messages = append(e.Messages, ValidationMessage{Text: text, Count: count})
	}
	if e.Count == 0 {
		return nil
	}
	return e
}

// layerNote reports whether a validation message is about the layer's
// own coverage rather than a misuse: a layer older than the driver (Debian
// 12's 1.3.239 under a driver with VK_KHR_cooperative_matrix) warns that
// it does not support an extension the device enabled, and reports the
// structures of that extension that the backend chains (its features at
// vkCreateDevice, its properties at vkGetPhysicalDeviceProperties2) as
// "unknown VkStructureType". Such notes do not fail a run; they are kept
// in ValidationNotes. Only the extensions of layerExts qualify: any other
// unknown structure is ours to fix.
func layerNote(text string) bool {
	if unknownExt.MatchString(text) {
		return true
	}
	m := unknownSType.FindStringSubmatch(text)
	if m == nil {
		return false
	}
	st, err := strconv.ParseInt(m[1], 10, 64)
	if err != nil || st < 1000000000 {
		return false
	}
	_, ok := layerExts[int(st-1000000000)/1000+1]
	return ok
}

// layerExts: the device extensions the backend may enable that are newer
// than a validation layer it may meet, by extension number (extension n's
// structures have sType 1000000000 + (n-1)*1000 + k).
var layerExts = map[int]string{507: "VK_KHR_cooperative_matrix"}

var (
	unknownSType = regexp.MustCompile(`unknown VkStructureType \((\d+)\)`)
	unknownExt   = regexp.MustCompile(`Extension (\S+) is not supported by this layer`)
)

// ValidationNotes returns the validation layer's notes on its own
// coverage (an enabled extension it does not know), distinct, first
// seen first; they do not fail Sync. Empty without Config.Validation.
func (b *Backend) ValidationNotes() []string {
	if !b.closed {
		b.validation()
	}
	return slices.Clone(b.notes)
}

// pipeline returns the compiled variant with the specialization
// constants spec (constant_id i = spec[i]; 0 is the workgroup size),
// creating it on first use.
func (b *Backend) pipeline(name string, spec []uint32) *pipeline {
	if len(spec) > len(pipeKey{}.spec) {
		panic(bad("%s: %d specialization constants", name, len(spec)))
	}
	key := pipeKey{name: name, n: len(spec)}
	copy(key.spec[:], spec)
	if p, ok := b.pipes[key]; ok {
		return p
	}
	code, err := shaders.SPIRV(name)
	if err != nil {
		panic("vulkan: " + err.Error()) // a name in our own tables
	}
	layout, err := shaders.Reflect(name)
	if err != nil {
		panic("vulkan: " + err.Error())
	}
	ccode := C.CBytes(code)
	defer C.free(ccode)
	sp := key.spec
	pinned := 0
	if strings.HasSuffix(name, "_subgroup") {
		pinned = b.info.PinnedSubgroup
	}
	if strings.HasPrefix(name, "matmul_coop_") {
		pinned = b.coopPin
	}
	var p *C.vkl_pipe
	if r := C.vkl_pipeline(b.ctx, (*C.uint32_t)(ccode), C.uint64_t(len(code)), C.int(layout.Bindings), C.int(layout.PushSize),
		(*C.uint32_t)(unsafe.Pointer(&sp[0])), C.int(min(len(spec), len(sp))), C.uint32_t(pinned), &p); r != C.VK_SUCCESS {
		b.fail(&Error{Op: "create pipeline " + name, Result: int32(r)})
		return nil
	}
	pl := &pipeline{p: p, layout: layout}
	b.pipes[key] = pl
	return pl
}
