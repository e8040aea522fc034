package benchcmd

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/vkllm/vkllm/kernels"
)

// OpStat is one kind of op's share of a phase (--ops): the op, with its
// weight's shape for a MatMul (e.g. "MatMul[896 4864]", a (rows, cols)
// weight) or a MatMuls (e.g. "MatMuls×2[4864 896]", two weights of that
// shape), how often it ran, its mean time, its share of the phase's time
// and, for matmuls, the rate its weights were read at. With device
// timestamps (Result.OpsClock "gpu") the times are the device's and the
// share is of the phase's device time (the ops add up to all of it); the
// transfers of the phase appear as SetI32, SetF32 and GetF32 rows. With
// the host clock ("host") they are wall times of each op and a Sync, and
// the share is of the phase's wall time.
type OpStat struct {
	Op     string  `json:"op"`
	Calls  int     `json:"calls"`
	US     float64 `json:"us_per_call"`
	Frac   float64 `json:"frac"`
	GBs    float64 `json:"weight_gbs,omitempty"`
	bytes  int64
	totalT time.Duration
}

// Clocks of the op tables (Result.OpsClock).
const (
	clockGPU  = "gpu"  // the backend's device timestamps (kernels.OpProfiler)
	clockHost = "host" // wall time of each op followed by a Sync
)

// opTimer is a kernels.Backend that times the ops a model calls on the
// backend it wraps, during a phase (start to stop). Where that backend is
// a kernels.OpProfiler, each op is a label of its profile: the device's
// own time, with no Sync and no submit added. Elsewhere each op is timed
// on the host, then a Sync (a no-op on the CPU backends, whose ops return
// when done; on a GPU backend the Sync makes each time the op's own, at
// the cost of a round trip and the overlap between ops).
type opTimer struct {
	kernels.Backend
	prof  kernels.OpProfiler // nil: the host clock
	on    bool
	stats map[string]*OpStat
	names map[matMulKey]string // the matmuls' op names, made once
}

type matMulKey struct {
	w     kernels.Tensor // the first weight
	multi int            // MatMuls: how many weights; MatMul: 0
}

func newOpTimer(b kernels.Backend) *opTimer {
	t := &opTimer{Backend: b, names: map[matMulKey]string{}}
	t.prof, _ = b.(kernels.OpProfiler)
	return t
}

// clock is the table's clock, clockGPU or clockHost.
func (t *opTimer) clock() string {
	if t.prof != nil {
		return clockGPU
	}
	return clockHost
}

// start starts timing a phase.
func (t *opTimer) start() error {
	t.stats = map[string]*OpStat{}
	if t.prof != nil {
		if err := t.prof.StartProfile(); err != nil {
			return err
		}
	}
	t.on = true
	return nil
}

// stop ends the phase and returns its ops, the most time first, as
// shares of its time: with the host clock, of wall (the rest, between
// ops, is the caller's to report); with device timestamps, of the
// profile's span, which it returns.
func (t *opTimer) stop(wall time.Duration) ([]OpStat, *kernels.Profile, error) {
	t.on = false
	if t.prof == nil {
		return report(t.stats, wall), nil, nil
	}
	p, err := t.prof.StopProfile()
	if err != nil {
		return nil, nil, err
	}
	gpu := map[string]*OpStat{}
	for _, op := range p.Ops {
		name := op.Label
		if name == "" {
			name = "(unlabelled)"
		}
		s := &OpStat{Op: name, Calls: op.Calls, totalT: op.Time}
		if h := t.stats[op.Label]; h != nil {
			s.bytes = h.bytes
		}
		gpu[name] = s
	}
	return report(gpu, p.Span), p, nil
}

// matMulName names a MatMul (multi 0) or MatMuls of multi weights by the
// (first) weight's shape.
func (t *opTimer) matMulName(w kernels.Tensor, multi int) string {
	k := matMulKey{w, multi}
	if n, ok := t.names[k]; ok {
		return n
	}
	n := fmt.Sprintf("MatMul%v", w.Shape())
	if multi > 0 {
		n = fmt.Sprintf("MatMuls×%d%v", multi, w.Shape())
	}
	t.names[k] = n
	return n
}

// timed runs op as name, adding bytes of weights read.
func (t *opTimer) timed(name string, bytes int64, op func()) {
	if !t.on {
		op()
		return
	}
	s := t.stats[name]
	if s == nil {
		s = &OpStat{Op: name}
		t.stats[name] = s
	}
	s.Calls++
	s.bytes += bytes
	if t.prof != nil {
		t.prof.ProfileOp(name)
		op()
		return
	}
	start := time.Now()
	op()
	t.Backend.Sync()
	s.totalT += time.Since(start)
}

// transfer labels a transfer with device timestamps; the host clock
// leaves transfers between ops.
func (t *opTimer) transfer(name string) {
	if t.on && t.prof != nil {
		t.prof.ProfileOp(name)
	}
}

// weightBytes is the size of w's data (0 where its dtype has no size).
func weightBytes(w kernels.Tensor) int64 {
	n := int64(1)
	for _, d := range w.Shape() {
		n *= int64(d)
	}
	b, err := w.DType().Bytes(n)
	if err != nil {
		return 0
	}
	return b
}

func (t *opTimer) MatMul(dst, x, w kernels.Tensor) {
	t.timed(t.matMulName(w, 0), weightBytes(w), func() { t.Backend.MatMul(dst, x, w) })
}

// MatMuls runs as the decoder would on the wrapped backend
// (kernels.MatMuls), timed as one op.
func (t *opTimer) MatMuls(dst []kernels.Tensor, x kernels.Tensor, w []kernels.Tensor) {
	var bytes int64
	for _, wi := range w {
		bytes += weightBytes(wi)
	}
	t.timed(t.matMulName(w[0], len(w)), bytes, func() { kernels.MatMuls(t.Backend, dst, x, w) })
}

func (t *opTimer) GetRows(dst, table, ids kernels.Tensor) {
	t.timed("GetRows", 0, func() { t.Backend.GetRows(dst, table, ids) })
}
func (t *opTimer) Add(dst, a, b kernels.Tensor) {
	t.timed("Add", 0, func() { t.Backend.Add(dst, a, b) })
}
func (t *opTimer) RMSNorm(dst, x, w kernels.Tensor, eps float32) {
	t.timed("RMSNorm", 0, func() { t.Backend.RMSNorm(dst, x, w, eps) })
}

// RoPEKVWrite runs as the decoder would on the wrapped backend
// (kernels.RoPEKVWrite), timed as one op.
func (t *opTimer) RoPEKVWrite(q, k, v, pos, kCache, vCache, cells kernels.Tensor, p kernels.RoPE) {
	t.timed("RoPEKVWrite", 0, func() { kernels.RoPEKVWrite(t.Backend, q, k, v, pos, kCache, vCache, cells, p) })
}

// AddRMSNorm runs as the decoder would on the wrapped backend
// (kernels.AddRMSNorm), timed as one op.
func (t *opTimer) AddRMSNorm(sum, dst, a, b, w kernels.Tensor, eps float32) {
	t.timed("AddRMSNorm", 0, func() { kernels.AddRMSNorm(t.Backend, sum, dst, a, b, w, eps) })
}
func (t *opTimer) RoPE(x, pos kernels.Tensor, p kernels.RoPE) {
	t.timed("RoPE", 0, func() { t.Backend.RoPE(x, pos, p) })
}
func (t *opTimer) SwiGLU(dst, gate, up kernels.Tensor) {
	t.timed("SwiGLU", 0, func() { t.Backend.SwiGLU(dst, gate, up) })
}
func (t *opTimer) KVWrite(cache, src, cells kernels.Tensor) {
	t.timed("KVWrite", 0, func() { t.Backend.KVWrite(cache, src, cells) })
}
func (t *opTimer) KVShift(cache, cells, delta kernels.Tensor, p kernels.RoPE) {
	t.timed("KVShift", 0, func() { t.Backend.KVShift(cache, cells, delta, p) })
}
func (t *opTimer) Attention(dst, q, k, v, vis kernels.Tensor, heads, kvHeads int, scale float32) {
	t.timed("Attention", 0, func() { t.Backend.Attention(dst, q, k, v, vis, heads, kvHeads, scale) })
}

func (t *opTimer) SetF32(dst kernels.Tensor, src []float32) error {
	t.transfer("SetF32")
	return t.Backend.SetF32(dst, src)
}
func (t *opTimer) SetI32(dst kernels.Tensor, src []int32) error {
	t.transfer("SetI32")
	return t.Backend.SetI32(dst, src)
}
func (t *opTimer) GetF32(src kernels.Tensor, dst []float32) error {
	t.transfer("GetF32")
	return t.Backend.GetF32(src, dst)
}
func (t *opTimer) GetI32(src kernels.Tensor, dst []int32) error {
	t.transfer("GetI32")
	return t.Backend.GetI32(src, dst)
}

// ReserveAttention and ReserveStaging pass the models' reservations on
// to the wrapped backend (kernels.AttentionReserver, StagingReserver), so
// that a Context allocates what it would without the timer.
func (t *opTimer) ReserveAttention(rows, heads, headDim, maxWidth int) error {
	return kernels.ReserveAttention(t.Backend, rows, heads, headDim, maxWidth)
}
func (t *opTimer) ReserveStaging(bytes int64) error { return kernels.ReserveStaging(t.Backend, bytes) }

// report returns stats, the most time first, with their mean times,
// shares of total and read rates.
func report(stats map[string]*OpStat, total time.Duration) []OpStat {
	var out []OpStat
	for _, s := range stats {
		if s.Calls == 0 {
			continue
		}
		s.US = float64(s.totalT.Nanoseconds()) / float64(s.Calls) / 1e3
		if total > 0 {
			s.Frac = float64(s.totalT) / float64(total)
		}
		if s.bytes > 0 && s.totalT > 0 {
			s.GBs = float64(s.bytes) / s.totalT.Seconds() / 1e9
		}
		out = append(out, *s)
	}
	slices.SortFunc(out, func(a, b OpStat) int { return cmp.Or(cmp.Compare(b.totalT, a.totalT), cmp.Compare(a.Op, b.Op)) })
	return out
}

// printOps writes the --ops tables of r: the prefill's and the decode's,
// and with device timestamps the decode step's device time against its
// wall time.
func printOps(w io.Writer, r *Result) {
	if len(r.Ops) == 0 && len(r.PrefillOps) == 0 {
		return
	}
	gpu := r.OpsClock == clockGPU
	if gpu {
		fmt.Fprintf(w, "prefill by op (%d tokens, GPU timestamps: %.3f ms of GPU time):\n", r.PP, 1e3*r.PrefillGPUS)
	} else {
		fmt.Fprintf(w, "prefill by op (%d tokens):\n", r.PP)
	}
	printTable(w, r.PrefillOps, !gpu)
	if gpu {
		fmt.Fprintf(w, "decode by op (%d steps, GPU timestamps: %.1f µs of GPU time a step):\n", r.TG, r.DecodeGPUUS)
	} else {
		fmt.Fprintf(w, "decode by op (%d steps):\n", r.TG)
	}
	printTable(w, r.Ops, !gpu)
	if gpu && r.DecodeWallUS > 0 {
		fmt.Fprintf(w, "decode step: GPU %.1f µs, wall %.1f µs, %.2f submits: %.1f µs (%.1f%%) of the step is not GPU time (host work, submit, wait)\n",
			r.DecodeGPUUS, r.DecodeWallUS, r.DecodeSubmits, r.DecodeWallUS-r.DecodeGPUUS, 100*(1-r.DecodeGPUUS/r.DecodeWallUS))
	}
}

// printTable writes one phase's ops; between, the host clock's share of
// the phase outside the ops.
func printTable(w io.Writer, ops []OpStat, between bool) {
	var in float64
	for _, s := range ops {
		gbs := ""
		if s.GBs > 0 {
			gbs = fmt.Sprintf("  %6.2f GB/s", s.GBs)
		}
		fmt.Fprintf(w, "  %-26s %6d calls %9.1f µs %5.1f%%%s\n", s.Op, s.Calls, s.US, 100*s.Frac, gbs)
		in += s.Frac
	}
	if between {
		fmt.Fprintf(w, "  %-26s %35.1f%%\n", "between ops", 100*(1-in))
	}
}
