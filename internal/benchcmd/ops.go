package benchcmd

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/vkllm/vkllm/kernels"
)

// OpStat is one kind of op's share of the decode phase (--ops): the op,
// with its weight's shape for a MatMul (e.g. "MatMul[896 4864]", a
// (rows, cols) weight) or a MatMuls (e.g. "MatMuls×2[4864 896]", two
// weights of that shape), how often it ran, its mean time, its share of
// the decode time and, for matmuls, the rate its weights were read at.
type OpStat struct {
	Op     string  `json:"op"`
	Calls  int     `json:"calls"`
	US     float64 `json:"us_per_call"`
	Frac   float64 `json:"frac"`
	GBs    float64 `json:"weight_gbs,omitempty"`
	bytes  int64
	totalT time.Duration
}

// opTimer is a kernels.Backend that times the ops a model calls on the
// backend it wraps, while on: each op, then a Sync (a no-op on the CPU
// backends, whose ops return when done; on a GPU backend the Sync makes
// each time the op's own, at the cost of the overlap between ops).
type opTimer struct {
	kernels.Backend
	on    bool
	stats map[string]*OpStat
	names map[matMulKey]string // the matmuls' op names, made once
}

type matMulKey struct {
	w     kernels.Tensor // the first weight
	multi int            // MatMuls: how many weights; MatMul: 0
}

func newOpTimer(b kernels.Backend) *opTimer {
	return &opTimer{Backend: b, stats: map[string]*OpStat{}, names: map[matMulKey]string{}}
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
	start := time.Now()
	op()
	t.Backend.Sync()
	s := t.stats[name]
	if s == nil {
		s = &OpStat{Op: name}
		t.stats[name] = s
	}
	s.Calls++
	s.totalT += time.Since(start)
	s.bytes += bytes
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
func (t *opTimer) RoPE(x, pos kernels.Tensor, p kernels.RoPE) {
	t.timed("RoPE", 0, func() { t.Backend.RoPE(x, pos, p) })
}
func (t *opTimer) SwiGLU(dst, gate, up kernels.Tensor) {
	t.timed("SwiGLU", 0, func() { t.Backend.SwiGLU(dst, gate, up) })
}
func (t *opTimer) KVWrite(cache, src, cells kernels.Tensor) {
	t.timed("KVWrite", 0, func() { t.Backend.KVWrite(cache, src, cells) })
}
func (t *opTimer) Attention(dst, q, k, v, vis kernels.Tensor, heads, kvHeads int, scale float32) {
	t.timed("Attention", 0, func() { t.Backend.Attention(dst, q, k, v, vis, heads, kvHeads, scale) })
}

// report returns the ops timed, the most time first, as shares of total
// (the decode phase's wall time); the rest of total (between ops: the
// model's bookkeeping, uploads and reading the logits) is the caller's to
// report.
func (t *opTimer) report(total time.Duration) []OpStat {
	var out []OpStat
	for _, s := range t.stats {
		s.US = float64(s.totalT.Nanoseconds()) / float64(s.Calls) / 1e3
		s.Frac = float64(s.totalT) / float64(total)
		if s.bytes > 0 {
			s.GBs = float64(s.bytes) / s.totalT.Seconds() / 1e9
		}
		out = append(out, *s)
	}
	slices.SortFunc(out, func(a, b OpStat) int { return cmp.Compare(b.totalT, a.totalT) })
	return out
}

// printOps writes the --ops table.
func printOps(w io.Writer, ops []OpStat, tg int) {
	if len(ops) == 0 {
		return
	}
	fmt.Fprintf(w, "decode by op (%d steps):\n", tg)
	var in float64
	for _, s := range ops {
		gbs := ""
		if s.GBs > 0 {
			gbs = fmt.Sprintf("  %6.2f GB/s", s.GBs)
		}
		fmt.Fprintf(w, "  %-26s %6d calls %9.1f µs %5.1f%%%s\n", s.Op, s.Calls, s.US, 100*s.Frac, gbs)
		in += s.Frac
	}
	fmt.Fprintf(w, "  %-26s %35.1f%%\n", "between ops", 100*(1-in))
}
