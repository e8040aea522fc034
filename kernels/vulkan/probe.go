//go:build cgo

package vulkan

/*
#include "vk.h"
*/
import "C"

import (
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"time"
	"unsafe"

	"github.com/vkllm/vkllm/kernels"
	"github.com/vkllm/vkllm/kernels/vulkan/shaders"
	"github.com/vkllm/vkllm/tensor"
)

// Probe is a one-call diagnostic of the device for a short GPU lease
// (`vkllm bench --probe`): what the framework's memory and kernels reach,
// each measurement labelled and checked, within a time budget. It times
// with GPU timestamps (a few runs after an untimed one, the median):
//
//   - "read": a streaming read (probe_read.comp, 16-byte loads in a
//     grid-stride loop) of a large device-local buffer, and of a weight
//     made by Upload (its parts and bindings); "read chain": dependent
//     loads, the latency of one access.
//   - "matvec": MatMul itself on one token (whatever kernel it picks,
//     named in the row) and the matrix-vector kernel (matmul.comp) at a
//     handful of knob points, on 8B and 0.5B decode shapes, Q4_0 and F16.
//   - "ablation": matmul.comp for Q4_0 at the family's default knobs with
//     one construct taken out (shaders.ProbeAblations), and the kernel of
//     commit 173338e.
//   - "prefill": the tiled and cooperative-matrix MatMul on 512 tokens,
//     Q4_0 and F16 (no dequantisation), in TFLOP/s.
//
// Results: the default knobs' against float64 sums (sweepLimit), every
// other knob point and ablation bitwise against the default's (the same
// arithmetic), but the "noprecise" ablation, which is held to sweepLimit.
// A row that is wrong says why in Wrong. The header (ProbeResult) names
// the memory types of weights, activations and staging and how the
// pipelines were created.

// ProbeOptions configures Probe. Zero values take the defaults.
type ProbeOptions struct {
	// Small runs shapes a CPU implementation finishes in seconds; it is
	// implied on a software device.
	Small bool
	// Budget bounds the run (default 60 s): a measurement starts only
	// while the time left exceeds twice the longest so far; the rest are
	// rows with Skipped set.
	Budget time.Duration
	// Reps is the timed runs of each measurement (default 5).
	Reps int
	// Progress gets each measurement's line as it runs (its start, so
	// that a hang shows where, and its result).
	Progress io.Writer
}

// ProbeRow is one measurement.
type ProbeRow struct {
	Section string          `json:"section"` // read, matvec, ablation, prefill
	Name    string          `json:"name"`
	DType   string          `json:"dtype,omitempty"`
	Shape   string          `json:"shape"`  // "[rows × k]", "[rows × k] × n", or a size
	Kernel  string          `json:"kernel"` // the variants dispatched, "+"-joined
	Knobs   Knobs           `json:"knobs,omitempty"`
	Time    time.Duration   `json:"time_ns"` // the median of Times: one call's GPU time
	Times   []time.Duration `json:"times_ns,omitempty"`
	Bytes   int64           `json:"bytes"` // weight (buffer) bytes a call reads
	GBs     float64         `json:"gbs"`   // Bytes over Time
	TFLOPs  float64         `json:"tflops,omitempty"`
	Check   string          `json:"check"` // how the result was checked
	Note    string          `json:"note,omitempty"`
	Wrong   string          `json:"wrong,omitempty"`
	Skipped string          `json:"skipped,omitempty"`
}

// ProbeMemory is the memory type vkl_buffer takes for one use.
type ProbeMemory struct {
	Use       string `json:"use"`  // weights, activations, staging
	Kind      int    `json:"kind"` // vkl_buffer's kind
	Type      int    `json:"type"` // memory type index
	TypeBits  uint32 `json:"type_bits"`
	Props     string `json:"props"` // VkMemoryPropertyFlags
	Heap      int    `json:"heap"`
	HeapFlags string `json:"heap_flags"`
	HeapSize  int64  `json:"heap_size"`
}

// ProbeResult is Probe's report.
type ProbeResult struct {
	Device    DeviceInfo    `json:"device"`
	Memory    []ProbeMemory `json:"memory"`
	Pipelines string        `json:"pipelines"` // how vkl_pipeline creates them
	Small     bool          `json:"small"`
	Rows      []ProbeRow    `json:"rows"`
	Time      time.Duration `json:"time_ns"`
}

// probeShape is one decode matrix: rows weight rows of k.
type probeShape struct {
	name    string
	rows, k int
}

// probeKnobs are the matrix-vector knob points timed besides the
// device's tuning (the family default first).
var probeKnobs = []Knobs{
	{"wg": 128, "rows": 2, "toks": 1, "bpi": 2},
	{"wg": 64, "rows": 1, "toks": 1, "bpi": 1},
	{"wg": 64, "rows": 2, "toks": 1, "bpi": 2},
	{"wg": 256, "rows": 2, "toks": 1, "bpi": 2},
	{"wg": 128, "rows": 1, "toks": 1, "bpi": 2},
	{"wg": 128, "rows": 4, "toks": 1, "bpi": 2},
	{"wg": 128, "rows": 2, "toks": 1, "bpi": 1},
	{"wg": 128, "rows": 2, "toks": 1, "bpi": 4},
}

// probeSizes are the probe's shapes: the full ones (a GPU) or the small.
type probeSizes struct {
	read        int64 // bytes of the device-local buffer
	weightRows  int   // rows of 4096 F16 elements of the Upload weight
	chainSteps  int
	chainStride uint32 // 16-byte elements
	shapes      []probeShape
	prefill     probeShape
	prefillN    int
}

var probeFull = probeSizes{
	read: 1 << 30, weightRows: 32768, chainSteps: 512, chainStride: 1<<16 + 1,
	shapes: []probeShape{
		{"8B o", 4096, 4096}, {"8B down", 4096, 14336}, {"8B gate", 14336, 4096},
		{"0.5B o", 896, 896}, {"0.5B down", 896, 4864},
	},
	prefill: probeShape{"8B o", 4096, 4096}, prefillN: 512,
}

var probeSmall = probeSizes{
	read: 8 << 20, weightRows: 256, chainSteps: 64, chainStride: 4099,
	shapes: []probeShape{
		{"8B o", 128, 256}, {"8B down", 128, 512}, {"8B gate", 384, 256},
		{"0.5B o", 64, 224}, {"0.5B down", 64, 608},
	},
	prefill: probeShape{"8B o", 128, 256}, prefillN: 32,
}

// prober is one Probe run.
type prober struct {
	b       *Backend
	o       ProbeOptions
	sz      probeSizes
	t0      time.Time
	longest time.Duration
	res     *ProbeResult
}

// Probe runs the measurements of ProbeOptions on the device. It fails
// only where the device fails (an allocation, a submit); a wrong result
// or a skipped measurement is a row's Wrong or Skipped.
func (b *Backend) Probe(o ProbeOptions) (*ProbeResult, error) {
	if o.Budget <= 0 {
		o.Budget = 60 * time.Second
	}
	if o.Reps <= 0 {
		o.Reps = 5
	}
	if o.Progress == nil {
		o.Progress = io.Discard
	}
	o.Small = o.Small || b.info.Software
	p := &prober{b: b, o: o, sz: probeFull, t0: time.Now()}
	if o.Small {
		p.sz = probeSmall
	}
	p.res = &ProbeResult{Device: b.info, Small: o.Small, Pipelines: b.pipelineFlags()}
	for _, u := range []struct {
		use  string
		kind int
	}{{"weights", 0}, {"activations", 0}, {"staging", 1}} {
		var mk C.vkl_memkind
		if r := C.vkl_memory_kind(b.ctx, C.int(u.kind), &mk); r != C.VK_SUCCESS {
			return nil, &Error{Op: "probe memory kind", Result: int32(r)}
		}
		p.res.Memory = append(p.res.Memory, ProbeMemory{Use: u.use, Kind: u.kind, Type: int(mk._type), TypeBits: uint32(mk.type_bits),
			Props: flagNames(uint32(mk.props), memPropNames), Heap: int(mk.heap), HeapFlags: flagNames(uint32(mk.heap_flags), heapFlagNames), HeapSize: int64(mk.heap_size)})
	}
	for _, m := range p.res.Memory {
		fmt.Fprintf(o.Progress, "probe memory %s: kind %d, type %d (%s), heap %d (%s, %s)\n", m.Use, m.Kind, m.Type, m.Props, m.Heap, m.HeapFlags, gib(m.HeapSize))
	}
	fmt.Fprintf(o.Progress, "probe pipelines: %s\n", p.res.Pipelines)
	steps := []func() error{p.matvecs, p.reads, p.ablations, p.prefills}
	for _, f := range steps {
		if err := f(); err != nil {
			return nil, err
		}
	}
	p.res.Time = time.Since(p.t0)
	return p.res, b.Sync()
}

// pipelineFlags says how vkl_pipeline creates the pipelines.
func (b *Backend) pipelineFlags() string {
	s := "VkPipelineCreateFlags 0, no pipeline cache; "
	if b.info.PinnedSubgroup > 0 {
		s += fmt.Sprintf("_subgroup variants: stage flags REQUIRE_FULL_SUBGROUPS, requiredSubgroupSize %d; ", b.info.PinnedSubgroup)
	} else {
		s += fmt.Sprintf("_subgroup variants: stage flags 0 (the device's subgroup size %d; subgroups in use: %v); ", b.info.SubgroupSize, b.info.Subgroups)
	}
	if b.coopPin > 0 {
		s += fmt.Sprintf("matmul_coop: REQUIRE_FULL_SUBGROUPS, requiredSubgroupSize %d; ", b.coopPin)
	}
	return s + "others: stage flags 0"
}

var memPropNames = []string{"DEVICE_LOCAL", "HOST_VISIBLE", "HOST_COHERENT", "HOST_CACHED", "LAZILY_ALLOCATED", "PROTECTED", "DEVICE_COHERENT_AMD", "DEVICE_UNCACHED_AMD", "RDMA_CAPABLE_NV"}
var heapFlagNames = []string{"DEVICE_LOCAL", "MULTI_INSTANCE"}

// flagNames spells the set bits of f with names (bit i: names[i]).
func flagNames(f uint32, names []string) string {
	var out []string
	for i := range 32 {
		if f&(1<<i) == 0 {
			continue
		}
		if i < len(names) {
			out = append(out, names[i])
		} else {
			out = append(out, fmt.Sprintf("0x%x", 1<<i))
		}
	}
	if len(out) == 0 {
		return "0"
	}
	return strings.Join(out, "|")
}

// measure runs one measurement as row r: it is skipped past the budget,
// else f fills its times and checks, its line printed before and after.
func (p *prober) measure(r ProbeRow, f func(r *ProbeRow) error) error {
	left := p.o.Budget - time.Since(p.t0)
	if left < 2*p.longest || left <= 0 {
		p.skip(r, fmt.Sprintf("budget: %.1f s left, the longest measurement took %.1f s", left.Seconds(), p.longest.Seconds()))
		return nil
	}
	fmt.Fprintf(p.o.Progress, "probe %s %s %s %s %v: ", r.Section, r.Name, r.DType, r.Shape, r.Knobs)
	t := time.Now()
	err := f(&r)
	p.longest = max(p.longest, time.Since(t))
	if err != nil {
		fmt.Fprintf(p.o.Progress, "error: %v\n", err)
		return err
	}
	if len(r.Times) > 0 {
		r.Time = median(r.Times)
		if r.Time > 0 {
			r.GBs = float64(r.Bytes) / r.Time.Seconds() / 1e9
		}
	}
	verdict := "ok (" + r.Check + ")"
	if r.Wrong != "" {
		verdict = "WRONG: " + r.Wrong
	}
	fmt.Fprintf(p.o.Progress, "%s, %.1f µs, %.1f GB/s%s %s %s\n", r.Kernel, us(r.Time), r.GBs, tflopsNote(r.TFLOPs), r.Note, verdict)
	p.res.Rows = append(p.res.Rows, r)
	return nil
}

// skip adds r as skipped, for why.
func (p *prober) skip(r ProbeRow, why string) {
	r.Skipped = why
	fmt.Fprintf(p.o.Progress, "probe %s %s %s %s: skipped (%s)\n", r.Section, r.Name, r.DType, r.Shape, why)
	p.res.Rows = append(p.res.Rows, r)
}

func tflopsNote(t float64) string {
	if t <= 0 {
		return ""
	}
	return fmt.Sprintf(", %.2f TFLOP/s", t)
}

func median(ts []time.Duration) time.Duration {
	s := slices.Clone(ts)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	return s[len(s)/2]
}

// times records run once untimed and reps times timed, each in a profile
// label of its own, and returns each timed run's GPU time and the
// variants run dispatched.
func (b *Backend) probeTimes(reps int, run func()) ([]time.Duration, string, error) {
	if err := b.Sync(); err != nil {
		return nil, "", err
	}
	var names []string
	b.trace = func(v string) {
		if !slices.Contains(names, v) {
			names = append(names, v)
		}
	}
	defer func() { b.trace = nil }()
	if err := b.StartProfile(); err != nil {
		return nil, "", err
	}
	b.ProfileOp("warm")
	run()
	for i := range reps {
		b.ProfileOp(fmt.Sprintf("rep %d", i))
		run()
	}
	prof, err := b.StopProfile()
	if err != nil {
		return nil, "", err
	}
	ts := make([]time.Duration, reps)
	for _, op := range prof.Ops {
		var i int
		if _, err := fmt.Sscanf(op.Label, "rep %d", &i); err == nil && i < reps {
			ts[i] = op.Time
		}
	}
	return ts, strings.Join(names, "+"), nil
}

// reads times probe_read.comp: over a device-local buffer, over an
// uploaded weight's parts, and as a chain of dependent loads.
func (p *prober) reads() error {
	b := p.b
	size := min(p.sz.read, b.maxRange&^4095, b.budget/4&^4095)
	words := int(size / 4)
	buf, err := b.NewTensor(tensor.I32, words/1024, 1024)
	if err != nil {
		return err
	}
	defer b.Free(buf)
	data := make([]int32, words)
	for i := range data {
		data[i] = int32(probeWord(uint32(i)))
	}
	if err := b.SetI32(buf, data); err != nil {
		return err
	}
	bt := buf.(*Tensor)
	if err := p.measure(ProbeRow{Section: "read", Name: "device-local buffer", Shape: mib(size)}, func(r *ProbeRow) error {
		return p.readParts(r, bt.parts, func(int) []byte { return i32Bytes(data) })
	}); err != nil {
		return err
	}
	// The chain: one workgroup of 64 lanes, each following its own chain.
	n := uint32(size / 16)
	steps := p.sz.chainSteps
	out, err := b.NewTensor(tensor.I32, 1)
	if err != nil {
		return err
	}
	defer b.Free(out)
	pc := pcProbeRead{N: n, Steps: uint32(steps), Stride: p.sz.chainStride % n}
	if err := p.measure(ProbeRow{Section: "read", Name: "chain of dependent loads", Shape: fmt.Sprintf("64 lanes × %d steps over %s", steps, mib(size))}, func(r *ProbeRow) error {
		o := out.(*Tensor)
		ts, k, err := b.probeTimes(p.o.Reps, func() {
			b.dispatchSpec("probe_read_chain", []uint32{64}, []part{bt.parts[0], o.parts[0]}, pc, 1, 1, 1)
		})
		if err != nil {
			return err
		}
		r.Times, r.Kernel, r.Bytes, r.Check = ts, k, int64(64*steps*16), "sum of every word read"
		r.Note = fmt.Sprintf("%.3f µs an access", us(median(ts))/float64(steps))
		got := make([]int32, 1)
		if err := b.GetI32(out, got); err != nil {
			return err
		}
		var want uint32
		for lane := range uint32(64) {
			i := lane * 4099 % n
			for range steps {
				for w := range uint32(4) {
					want += probeWord(4*i + w)
				}
				i = (i + pc.Stride) % n
			}
		}
		if uint32(got[0]) != want {
			r.Wrong = fmt.Sprintf("sum %#x, want %#x", uint32(got[0]), want)
		}
		return nil
	}); err != nil {
		return err
	}
	// An F16 weight made by Upload: the real allocation path, its parts.
	cols := 4096
	if p.o.Small {
		cols = 1024
	}
	wdata := make([]byte, p.sz.weightRows*cols*2)
	for i := 0; i < len(wdata); i += 4 {
		v := probeWord(uint32(i / 4))
		wdata[i], wdata[i+1], wdata[i+2], wdata[i+3] = byte(v), byte(v>>8), byte(v>>16), byte(v>>24)
	}
	w, err := b.Upload(tensor.Tensor{Name: "probe", DType: tensor.F16, Shape: []int64{int64(p.sz.weightRows), int64(cols)}, Data: wdata})
	if err != nil {
		return err
	}
	defer b.Free(w)
	wt := w.(*Tensor)
	rb := int64(wt.rowBytes)
	return p.measure(ProbeRow{Section: "read", Name: fmt.Sprintf("Upload weight, %d parts", len(wt.parts)), DType: "F16", Shape: fmt.Sprintf("[%d × %d] %s", p.sz.weightRows, cols, mib(int64(len(wdata))))}, func(r *ProbeRow) error {
		return p.readParts(r, wt.parts, func(i int) []byte {
			q := wt.parts[i]
			return wdata[int64(q.rowLo)*rb : int64(q.rowLo+q.rows)*rb]
		})
	})
}

// readParts times a streaming read of every part (one dispatch each) and
// checks each part's sum against its host bytes (host(i)).
func (p *prober) readParts(r *ProbeRow, parts []part, host func(i int) []byte) error {
	b := p.b
	const rwg = 256
	var outs []kernels.Tensor
	defer func() {
		for _, o := range outs {
			b.Free(o)
		}
	}()
	type disp struct {
		q      part
		o      part
		pc     pcProbeRead
		groups uint32
	}
	var ds []disp
	for _, q := range parts {
		n := q.size / 16
		groups := uint32(min((n+rwg-1)/rwg, 4096))
		o, err := b.NewTensor(tensor.I32, int(groups))
		if err != nil {
			return err
		}
		outs = append(outs, o)
		ds = append(ds, disp{q, o.(*Tensor).parts[0], pcProbeRead{N: uint32(n)}, groups})
		r.Bytes += n * 16
	}
	ts, k, err := b.probeTimes(p.o.Reps, func() {
		for _, d := range ds {
			b.dispatchSpec("probe_read", []uint32{rwg}, []part{d.q, d.o}, d.pc, d.groups, 1, 1)
		}
	})
	if err != nil {
		return err
	}
	r.Times, r.Kernel, r.Check = ts, k, "sum of every word read"
	for i, d := range ds {
		got := make([]int32, d.groups)
		if err := b.GetI32(outs[i], got); err != nil {
			return err
		}
		var sum, want uint32
		for _, v := range got {
			sum += uint32(v)
		}
		h := host(i)
		for j := int64(0); j+4 <= d.q.size/16*16; j += 4 {
			want += uint32(h[j]) | uint32(h[j+1])<<8 | uint32(h[j+2])<<16 | uint32(h[j+3])<<24
		}
		if sum != want {
			r.Wrong = fmt.Sprintf("part %d: sum %#x, want %#x", i, sum, want)
		}
	}
	return nil
}

func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }

// probeWord is word i of the read buffers.
func probeWord(i uint32) uint32 { return i*2654435761 + 12345 }

func i32Bytes(x []int32) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(x))), 4*len(x))
}

// matvecs times MatMul and the matrix-vector kernel on the decode shapes.
func (p *prober) matvecs() error {
	for _, dt := range []tensor.DType{tensor.Q4_0, tensor.F16} {
		for _, s := range p.sz.shapes {
			if err := p.matvecShape(dt, s); err != nil {
				return err
			}
		}
	}
	return nil
}

// probeCase is one shape's weight (in the layout Upload picks, and in
// the file's), activations, output and reference.
type probeCase struct {
	dt       tensor.DType
	s        probeShape
	n        int
	data     []byte
	x        []float32
	w, wf    *Tensor // wf: the file layout (w itself unless w is repacked)
	xt, d    *Tensor
	want     []float32 // the default knobs' result
	defKnobs Knobs
}

func (p *prober) newCase(dt tensor.DType, s probeShape, n int) (*probeCase, error) {
	b := p.b
	r := rand.New(rand.NewPCG(uint64(dt), uint64(s.rows*s.k)))
	c := &probeCase{dt: dt, s: s, n: n, defKnobs: Families["matvec"].knobs(nil)}
	w, data, err := b.sweepWeight(r, dt, s.rows, s.k, true)
	if err != nil {
		return nil, err
	}
	c.data, c.w, c.wf = data, w.(*Tensor), w.(*Tensor)
	if c.w.repacked {
		wf, err := b.upload(tensor.Tensor{Name: "probe", DType: dt, Shape: []int64{int64(s.rows), int64(s.k)}, Data: data}, false)
		if err != nil {
			c.free()
			return nil, err
		}
		c.wf = wf.(*Tensor)
	}
	c.x = make([]float32, n*s.k)
	for i := range c.x {
		c.x[i] = float32(r.NormFloat64())
	}
	if c.xt, c.d, err = b.sweepPair(c.x, n, s.k, s.rows); err != nil {
		c.free()
		return nil, err
	}
	return c, nil
}

func (c *probeCase) free() {
	b := c.w.b
	if c.wf != c.w {
		b.Free(c.wf)
	}
	b.Free(c.w)
	if c.xt != nil {
		b.Free(c.xt)
		b.Free(c.d)
	}
}

func (c *probeCase) shape() string {
	if c.n > 1 {
		return fmt.Sprintf("%s [%d × %d] × %d", c.s.name, c.s.rows, c.s.k, c.n)
	}
	return fmt.Sprintf("%s [%d × %d]", c.s.name, c.s.rows, c.s.k)
}

// run times run on the case into r, and checks its result: against
// float64 sums when want is nil (and keeps it as want when ref is set),
// else bitwise against want, or, with close, within sweepLimit of
// float64 sums.
func (p *prober) run(c *probeCase, r *ProbeRow, check string, run func()) error {
	b := p.b
	b.zero(c.d.parts[0])
	ts, k, err := b.probeTimes(p.o.Reps, run)
	if err != nil {
		return err
	}
	if check == "bitwise" && c.want == nil { // the reference row was skipped
		check = "float64 sums"
	}
	r.Times, r.Kernel, r.Check = ts, k, check
	r.Bytes = int64(len(c.data))
	got := make([]float32, c.n*c.s.rows)
	if err := b.GetF32(c.d, got); err != nil {
		return err
	}
	switch check {
	case "bitwise":
		if i := firstDiff(got, c.want); i >= 0 {
			r.Wrong = fmt.Sprintf("element %d is %v, the default knobs' %v", i, got[i], c.want[i])
		}
	default: // "float64 sums"
		if e := sweepRef(c.dt, c.data, c.x, got, c.n, c.s.k, c.s.rows); !(e <= sweepLimit) {
			r.Wrong = fmt.Sprintf("NMSE %.3g against float64 sums, above %g", e, sweepLimit)
		} else {
			r.Note = fmt.Sprintf("NMSE %.2g", e)
		}
		if c.want == nil {
			c.want = got
		}
	}
	return nil
}

// matvecShape times MatMul and each knob point on one shape.
func (p *prober) matvecShape(dt tensor.DType, s probeShape) error {
	b := p.b
	c, err := p.newCase(dt, s, 1)
	if err != nil {
		return err
	}
	defer c.free()
	name, _ := b.matmulVariant(dt, 1, s.k)
	knobs := slices.Clone(probeKnobs)
	if tuned := b.tune.knobs("matvec/" + typeName(dt)); !slices.ContainsFunc(knobs, func(k Knobs) bool { return sameKnobs(k, tuned) }) {
		knobs = append(knobs, tuned)
	}
	for i, k := range knobs {
		check := "bitwise"
		if i == 0 {
			check = "float64 sums"
		}
		if err := p.measure(ProbeRow{Section: "matvec", Name: "matmul.comp", DType: dt.String(), Shape: c.shape(), Knobs: k}, func(r *ProbeRow) error {
			return p.run(c, r, check, func() { b.matvec(name, k, c.d, c.xt, c.w) })
		}); err != nil {
			return err
		}
	}
	// MatMul itself: its results are the default knobs' where it runs
	// matmul.comp; another kernel (the coop or int8 one) is held to
	// float64 sums.
	return p.measure(ProbeRow{Section: "matvec", Name: "MatMul", DType: dt.String(), Shape: c.shape()}, func(r *ProbeRow) error {
		check := "bitwise"
		if _, coop := b.coopVariant(dt); coop {
			check = "float64 sums"
		}
		if _, i8 := b.int8Variant(dt); i8 {
			check = "float64 sums"
		}
		return p.run(c, r, check, func() { b.MatMul(c.d, c.xt, c.w) })
	})
}

// ablations times matmul.comp's ablations and the old kernel for Q4_0.
func (p *prober) ablations() error {
	b := p.b
	dt := tensor.Q4_0
	for _, s := range p.sz.shapes {
		c, err := p.newCase(dt, s, 1)
		if err != nil {
			return err
		}
		name, _ := b.matmulVariant(dt, 1, s.k)
		k := c.defKnobs
		err = p.measure(ProbeRow{Section: "ablation", Name: "production", DType: "Q4_0", Shape: c.shape(), Knobs: k}, func(r *ProbeRow) error {
			return p.run(c, r, "float64 sums", func() { b.matvec(name, k, c.d, c.xt, c.w) })
		})
		for _, a := range shaders.ProbeAblations {
			if err != nil {
				break
			}
			v := "probe_" + a.Name + "_" + name
			row := ProbeRow{Section: "ablation", Name: a.Name, DType: "Q4_0", Shape: c.shape(), Knobs: k}
			check, w, run := "bitwise", c.w, func() { b.matvec(v, k, c.d, c.xt, c.w) }
			switch a.Name {
			case "noprecise":
				check = "float64 sums"
			case "now4":
				w = c.wf
				run = func() { b.matvec(v, k, c.d, c.xt, w) }
			case "old": // 173338e: 64 lanes, 4 rows a workgroup, one token
				row.Knobs = Knobs{"wg": 64, "rows": 4, "toks": 1}
				run = func() { b.matmulDispatch(v, []uint32{64, 4, 1}, 4, 1, c.d, c.xt, c.wf) }
			}
			want := c.want
			err = p.measure(row, func(r *ProbeRow) error {
				err := p.run(c, r, check, run)
				c.want = want // a "float64 sums" row must not become the reference
				return err
			})
		}
		c.free()
		if err != nil {
			return err
		}
	}
	return nil
}

// prefills times the tiled and cooperative-matrix kernels on a prefill,
// Q4_0 and F16.
func (p *prober) prefills() error {
	b := p.b
	s, n := p.sz.prefill, p.sz.prefillN
	for _, dt := range []tensor.DType{tensor.Q4_0, tensor.F16} {
		c, err := p.newCase(dt, s, n)
		if err != nil {
			return err
		}
		flop := 2 * float64(n) * float64(s.k) * float64(s.rows)
		name, tiled := b.matmulVariant(dt, n, s.k)
		row := ProbeRow{Section: "prefill", Name: "tiled", DType: dt.String(), Shape: c.shape()}
		if !tiled {
			p.skip(row, "the device runs no tiled kernel (DeviceInfo.Tiled)")
		} else {
			err = p.measure(row, func(r *ProbeRow) error {
				err := p.run(c, r, "float64 sums", func() { b.matmulDispatch(name, []uint32{mmWG}, mmRows, mmToks, c.d, c.xt, c.w) })
				r.TFLOPs = flop / median(r.Times).Seconds() / 1e12
				return err
			})
		}
		row = ProbeRow{Section: "prefill", Name: "coopmat", DType: dt.String(), Shape: c.shape()}
		if cn, ok := b.coopVariant(dt); !ok {
			p.skip(row, "the device runs no cooperative-matrix kernel (DeviceInfo.CoopMat)")
		} else if err == nil {
			err = p.measure(row, func(r *ProbeRow) error {
				err := p.run(c, r, "float64 sums", func() { b.coopMatMul(cn, c.d, c.xt, c.w) })
				r.TFLOPs = flop / median(r.Times).Seconds() / 1e12
				return err
			})
		}
		c.free()
		if err != nil {
			return err
		}
	}
	return nil
}

// Table writes the probe's header and table.
func (r *ProbeResult) Table(w io.Writer) {
	d := r.Device
	fmt.Fprintf(w, "device: %s (%s), subgroup %d (pinned %d, in use %v), fp16 %v, tiled %v, coopmat %v %s, int8 %v, repacked %v\n",
		d.Name, d.Type, d.SubgroupSize, d.PinnedSubgroup, d.Subgroups, d.FP16, d.Tiled, d.CoopMat, d.CoopShape, d.Int8MatMul, d.Repacked)
	for _, m := range r.Memory {
		fmt.Fprintf(w, "memory %-11s kind %d: type %d (%s) of bits %#x, heap %d (%s, %s)\n", m.Use, m.Kind, m.Type, m.Props, m.TypeBits, m.Heap, m.HeapFlags, gib(m.HeapSize))
	}
	fmt.Fprintf(w, "pipelines: %s\n", r.Pipelines)
	fmt.Fprintf(w, "%-9s %-26s %-5s %-34s %-34s %10s %9s %7s  %s\n", "section", "name", "dtype", "shape", "knobs", "µs", "GB/s", "TFLOP/s", "check")
	for _, row := range r.Rows {
		verdict := "ok: " + row.Check
		switch {
		case row.Skipped != "":
			verdict = "SKIPPED: " + row.Skipped
		case row.Wrong != "":
			verdict = "WRONG: " + row.Wrong
		}
		if row.Note != "" {
			verdict += "; " + row.Note
		}
		knobs := ""
		if row.Knobs != nil {
			knobs = fmt.Sprint(row.Knobs)
		}
		tf := ""
		if row.TFLOPs > 0 {
			tf = fmt.Sprintf("%.2f", row.TFLOPs)
		}
		fmt.Fprintf(w, "%-9s %-26s %-5s %-34s %-34s %10.1f %9.1f %7s  %s [%s]\n", row.Section, row.Name, row.DType, row.Shape, knobs, us(row.Time), row.GBs, tf, verdict, row.Kernel)
	}
	fmt.Fprintf(w, "probe took %.1f s\n", r.Time.Seconds())
}

// problems lists the rows that did not run or were wrong (tests).
func (r *ProbeResult) problems() []string {
	var out []string
	for _, row := range r.Rows {
		if row.Wrong != "" || row.Skipped != "" || row.Time <= 0 {
			out = append(out, fmt.Sprintf("%s %s %s %s %v: time %v, wrong %q, skipped %q", row.Section, row.Name, row.DType, row.Shape, row.Knobs, row.Time, row.Wrong, row.Skipped))
		}
	}
	return out
}
