//go:build cgo

package vulkan

import (
	"context"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/vkllm/vkllm/kernels"
	"github.com/vkllm/vkllm/tensor"
)

// SweepShape is one matrix of a model for the sweep: Rows weight rows of
// K elements, Count of them read per token (e.g. the layers).
type SweepShape struct {
	Name    string
	K, Rows int
	Count   int
	Model   string // the model it comes from, for the table
}

// SweepOptions configures Sweep. Zero values take the defaults.
type SweepOptions struct {
	// DTypes are the weight types tried (default: every weight type).
	DTypes []tensor.DType
	// Shapes are the matrices timed; each candidate's score is the sum
	// over them of Count × its time.
	Shapes []SweepShape
	// Families are the kernel families swept (default: every one Sweep
	// knows: "matvec", "matvec_batch", "matvec_int8",
	// "matvec_int8_batch", "layout", "coopmat", "coopmat_small",
	// "attention", "attention_prefill"). The coop families are skipped
	// on a device whose MatMul does not run the cooperative-matrix
	// kernel (DeviceInfo.CoopMat).
	Families []string
	// Attention are the attention calls the "attention" family (its
	// calls without Causal) and the "attention_prefill" family (those
	// with) are timed on (a candidate's score is the sum of their times);
	// none: attention is not swept (AttentionSweepShapes are a model's).
	Attention []SweepAttention
	// Batch is the tokens of the matvec_batch and matvec_int8_batch
	// timings (default 8).
	Batch int
	// Prefill is the tokens of the "coopmat" timings (default 512);
	// "coopmat_small" is timed on 1, 16 and 48 tokens (both sides of
	// each candidate crossover).
	Prefill int
	// Reps is the timed dispatches per candidate and shape (default 20),
	// after one untimed.
	Reps int
	// Candidates, if set, limits each family to its first candidates
	// (the default first), for quick runs.
	Candidates int
	// Only, if set, keeps the candidates it accepts (and the default).
	Only func(Knobs) bool
	// Progress receives a line when each family of each weight type
	// starts and one when it ends, written at once; with Verbose also
	// one per candidate and timing.
	Progress io.Writer
	Verbose  bool
	// Deadline, if set, is when the sweep stops starting work: no family
	// and no candidate's run starts past it (nor once the context of
	// Sweep is done). What was not timed is marked cut (SweepRow.Cut,
	// SweepResult.Cut) and keeps its default; what finished is chosen
	// from as usual.
	Deadline time.Time
	// Slow bounds a candidate's first timed run (default 10 s), and
	// SlowFactor (default 20) bounds it at that many times the default's
	// on the same timing (never below 50 ms): past either the candidate
	// is marked slow (SweepRow.Slow), not repeated and not timed further.
	Slow       time.Duration
	SlowFactor int
}

// SweepRow is one candidate of one key: its score and whether its
// results were right.
type SweepRow struct {
	Key    string          `json:"key"` // "matvec/q4_0"
	Knobs  Knobs           `json:"knobs"`
	Times  []time.Duration `json:"times_ns"`         // per shape (attention: per call of Attention), one dispatch (call)
	Score  time.Duration   `json:"score_ns"`         // Σ Count × time (attention: Σ time)
	GBs    float64         `json:"weight_gbs"`       // weight bytes (attention: K/V bytes) a second
	TFLOPs float64         `json:"tflops,omitempty"` // coop families: multiply-adds ×2 a second, in 10¹²
	Chosen bool            `json:"chosen,omitempty"`
	// Wrong says why the candidate may not be chosen: results not
	// bitwise the default's, or the default's away from the reference.
	Wrong string `json:"wrong,omitempty"`
	// Slow: its first timed run passed SweepOptions.Slow's bounds; it
	// was not repeated, nor timed further (Times holds that run).
	Slow string `json:"slow,omitempty"`
	// Cut: the sweep stopped (its deadline, or its context) before the
	// candidate was timed everywhere; it is not chosen.
	Cut string `json:"cut,omitempty"`
}

// open reports whether the row may be chosen: right, not slow, not cut.
func (r SweepRow) open() bool { return r.Wrong == "" && r.Slow == "" && r.Cut == "" }

// SweepResult is Sweep's table and the chosen tuning.
type SweepResult struct {
	Shapes    []SweepShape     `json:"shapes"`
	Attention []SweepAttention `json:"attention_shapes,omitempty"`
	Rows      []SweepRow       `json:"rows"`
	Tuning    DeviceTuning     `json:"tuning"`
	Time      time.Duration    `json:"time_ns"`
	// Cut lists the kernels the sweep's deadline or context cut, each
	// with how far it got ("matvec/q4_0: 12 of 40 candidates timed
	// (budget spent)", "layout/q4_0: not started (interrupted)"); their
	// defaults stand unless a finished candidate was chosen.
	Cut []string `json:"cut,omitempty"`
}

// sweepFamilies are the matrix-vector families Sweep times per weight
// type, in order; then "layout" (sweep_layout.go), the coop families
// (sweep_prefill.go), then "attention" (sweep_attention.go) and
// "attention_prefill". The int8 ones (int8.go) run for the weight types
// with int8 kernels, whether or not the mode is on, so that one run
// times both arithmetics.
var sweepFamilies = []string{"matvec", "matvec_batch", "matvec_int8", "matvec_int8_batch"}

// int8Family reports whether fam is one of the int8 mode's families.
func int8Family(fam string) bool { return strings.HasPrefix(fam, "matvec_int8") }

// allSweepFamilies are every family Sweep knows, in order.
var allSweepFamilies = append(slices.Clone(sweepFamilies), "layout", "coopmat", "coopmat_small", "attention", "attention_prefill")

// sweepLimit is the normalized MSE the default candidate may have against
// a float64 reference (kerneltest.LimitQuant): it catches a broken
// kernel; the other candidates must then be bitwise the default.
const sweepLimit = 5e-4

// Sweep times every candidate of the tuned kernel families on the given
// shapes and weight types with GPU timestamps, checks each candidate's
// results against the default's (bitwise: invariance) and the default's
// against a float64 reference, and returns the table with the fastest
// right candidate of each key chosen: the device file to commit under
// kernels/vulkan/tuning. Synthetic weights (random blocks with bounded
// scales) are made per shape and freed after. The "attention" family is
// timed on o.Attention instead (sweepAttention: each candidate against a
// float64 reference, bitwise only where its segs is the default's).
//
// Sweep stops starting work once ctx is done or o.Deadline has passed
// (each run in flight finishes) and returns what it timed, the rest
// marked cut; it returns ctx's error only with that result.
func (b *Backend) Sweep(ctx context.Context, o SweepOptions) (*SweepResult, error) {
	t0 := time.Now()
	if len(o.DTypes) == 0 {
		o.DTypes = WeightDTypes()
	}
	if len(o.Families) == 0 {
		o.Families = allSweepFamilies
	}
	if o.Prefill <= 0 {
		o.Prefill = 512
	}
	if o.Batch <= 0 {
		o.Batch = 8
	}
	if o.Reps <= 0 {
		o.Reps = 20
	}
	if o.Progress == nil {
		o.Progress = io.Discard
	}
	if o.Slow <= 0 {
		o.Slow = 10 * time.Second
	}
	if o.SlowFactor <= 0 {
		o.SlowFactor = 20
	}
	if len(o.Shapes) == 0 && len(o.Attention) == 0 {
		return nil, fmt.Errorf("vulkan: sweep: no shapes")
	}
	for _, f := range o.Families {
		if !slices.Contains(allSweepFamilies, f) {
			return nil, fmt.Errorf("vulkan: sweep: no family %q (have %v)", f, allSweepFamilies)
		}
	}
	if !b.info.CoopMat && (slices.Contains(o.Families, "coopmat") || slices.Contains(o.Families, "coopmat_small")) {
		fmt.Fprintf(o.Progress, "sweep coopmat, coopmat_small: skipped (MatMul does not run the cooperative-matrix kernel on %s)\n", b.info.Name)
	}
	for _, s := range o.Shapes {
		if s.K <= 0 || s.Rows <= 0 || s.Count <= 0 {
			return nil, fmt.Errorf("vulkan: sweep: shape %+v", s)
		}
	}
	res := &SweepResult{Shapes: o.Shapes, Attention: o.Attention, Tuning: DeviceTuning{Vendor: b.info.Vendor, Device: b.info.Name,
		Date: time.Now().UTC().Format("2006-01-02"), Kernels: Tuning{}}}
	c := &sweepCtl{ctx: ctx, deadline: o.Deadline, slow: o.Slow, factor: time.Duration(o.SlowFactor),
		progress: o.Progress, verbose: o.Verbose}
	b.sweep = c
	defer func() { b.sweep = nil }()
	// started reports whether key's family may start, and says so; one
	// that may not is listed as cut.
	started := func(key string) bool {
		if why := c.stopped(); why != "" {
			res.Cut = append(res.Cut, fmt.Sprintf("%s: not started (%s)", key, why))
			c.say("sweep %s: not started (%s)", key, why)
			return false
		}
		c.say("sweep %s: started", key)
		return true
	}
	for _, dt := range o.DTypes {
		if !slices.Contains(weightDTypes, dt) {
			return nil, fmt.Errorf("vulkan: sweep: %w", &tensor.UnsupportedDTypeError{Format: "vulkan", DType: dt.String()})
		}
		var shapes []SweepShape
		for _, s := range o.Shapes {
			if s.K%dt.BlockSize() == 0 {
				shapes = append(shapes, s)
			}
		}
		if len(shapes) == 0 {
			continue
		}
		for _, fam := range o.Families {
			var rows []SweepRow
			var err error
			_, int8ok := b.int8Name(dt)
			switch {
			case fam == "attention" || fam == "attention_prefill" || fam == "layout" || int8Family(fam) && !int8ok:
				continue
			case fam == "coopmat" || fam == "coopmat_small":
				if _, ok := b.coopVariant(dt); !ok || !started(fam+"/"+typeName(dt)) {
					continue
				}
				rows, err = b.sweepCoop(o, fam, dt, shapes)
			default:
				if !started(fam + "/" + typeName(dt)) {
					continue
				}
				rows, err = b.sweepKey(o, fam, dt, shapes)
			}
			if err != nil {
				return nil, err
			}
			res.choose(c, rows)
		}
		if slices.Contains(o.Families, "layout") && repackable(dt, repackRun*dt.BlockSize()) && started("layout/"+typeName(dt)) {
			rows, err := b.sweepLayout(o, dt, shapes, res.Tuning.Kernels["matvec/"+typeName(dt)])
			if err != nil {
				return nil, err
			}
			if len(rows) > 0 {
				res.choose(c, rows)
			}
		}
	}
	var decode, prefill []SweepAttention
	for _, a := range o.Attention {
		if a.Causal {
			prefill = append(prefill, a)
		} else {
			decode = append(decode, a)
		}
	}
	if slices.Contains(o.Families, "attention") && len(decode) > 0 && started("attention") {
		rows, err := b.sweepAttention(o, decode)
		if err != nil {
			return nil, err
		}
		res.choose(c, rows)
	}
	if slices.Contains(o.Families, "attention_prefill") && len(prefill) > 0 && started("attention_prefill") {
		rows, err := b.sweepAttnPrefill(o, prefill)
		if err != nil {
			return nil, err
		}
		res.choose(c, rows)
	}
	res.Time = time.Since(t0)
	if err := b.Sync(); err != nil {
		return nil, err
	}
	return res, ctx.Err()
}

// choose marks the fastest right candidate of one key's rows (the
// default first) that is neither slow nor cut, puts it in the tuning,
// appends the rows, and lists the key in Cut when rows were cut.
func (res *SweepResult) choose(c *sweepCtl, rows []SweepRow) {
	best := -1
	var slow, cut int
	why := ""
	for i, r := range rows {
		if !r.open() && r.Wrong == "" { // no score for a time not taken everywhere
			rows[i].Score, rows[i].GBs, rows[i].TFLOPs = 0, 0, 0
		}
		if r.Slow != "" {
			slow++
		}
		if r.Cut != "" {
			cut++
			if why == "" {
				why = r.Cut
			}
		}
		if r.open() && (best < 0 || r.Score < rows[best].Score) {
			best = i
		}
	}
	key := rows[0].Key
	note := ""
	if slow > 0 {
		note += fmt.Sprintf(", %d slow", slow)
	}
	if cut > 0 {
		note += fmt.Sprintf(", %d cut (%s)", cut, why)
		res.Cut = append(res.Cut, fmt.Sprintf("%s: %d of %d candidates timed (%s)", key, len(rows)-cut, len(rows), why))
	}
	switch {
	case best >= 0:
		rows[best].Chosen = true
		res.Tuning.Kernels[key] = rows[best].Knobs
		c.say("sweep %s: %d candidates%s, chose %v (%.1f µs, default %.1f)", key, len(rows), note, rows[best].Knobs, us(rows[best].Score), us(rows[0].Score))
	case rows[0].Cut != "" || rows[0].Slow != "":
		c.say("sweep %s: %d candidates%s: the default was not timed, it stands", key, len(rows), note)
	default:
		c.say("sweep %s: no right candidate (%s)", key, rows[0].Wrong)
	}
	res.Rows = append(res.Rows, rows...)
}

func us(d time.Duration) float64 { return float64(d) / 1e3 }

// sweepRows are the rows of family fam's candidates under key, each with
// room for the times of n shapes: the default first, then the others o
// allows, at most o.Candidates in all.
func (o SweepOptions) sweepRows(fam, key string, n int) []SweepRow {
	f := Families[fam]
	def := f.knobs(nil)
	cands := []Knobs{def}
	for _, c := range f.Candidates() {
		if !sameKnobs(c, def) && (o.Only == nil || o.Only(c)) {
			cands = append(cands, c)
		}
	}
	if o.Candidates > 0 && len(cands) > o.Candidates {
		cands = cands[:o.Candidates]
	}
	rows := make([]SweepRow, len(cands))
	for i, c := range cands {
		rows[i] = SweepRow{Key: key, Knobs: c, Times: make([]time.Duration, n)}
	}
	return rows
}

// sweepKey times every candidate of family fam for dtype dt on shapes,
// a candidate on every shape before the next (so that a sweep cut short
// has whole candidates to choose from). The first row is the default.
func (b *Backend) sweepKey(o SweepOptions, fam string, dt tensor.DType, shapes []SweepShape) ([]SweepRow, error) {
	rows := o.sweepRows(fam, fam+"/"+typeName(dt), len(shapes))
	n := 1
	if strings.HasSuffix(fam, "_batch") {
		n = o.Batch
	}
	r := rand.New(rand.NewPCG(uint64(dt), 7))
	type operands struct {
		w, x, d *Tensor
		data    []byte
		xs      []float32
		want    []float32 // the default's result
	}
	ops := make([]operands, 0, len(shapes))
	defer func() {
		for _, op := range ops {
			for _, t := range []*Tensor{op.w, op.x, op.d} {
				if t != nil {
					b.Free(t)
				}
			}
		}
	}()
	var bytesPerToken float64
	for _, s := range shapes {
		w, data, err := b.sweepWeight(r, dt, s.Rows, s.K, !int8Family(fam)) // int8.glsl reads the file layout
		if err != nil {
			return nil, err
		}
		ops = append(ops, operands{w: w.(*Tensor), data: data})
		op := &ops[len(ops)-1]
		bytesPerToken += float64(s.Count) * float64(len(data))
		op.xs = make([]float32, n*s.K)
		for i := range op.xs {
			op.xs[i] = float32(r.NormFloat64())
		}
		xt, err := b.NewTensor(tensor.F32, n, s.K)
		if err != nil {
			return nil, err
		}
		op.x = xt.(*Tensor)
		if err := b.SetF32(xt, op.xs); err != nil {
			return nil, err
		}
		dt32, err := b.NewTensor(tensor.F32, n, s.Rows)
		if err != nil {
			return nil, err
		}
		op.d = dt32.(*Tensor)
	}
	run := b.matvec
	if int8Family(fam) {
		run = func(name string, k Knobs, d, x, w *Tensor) {
			b.q8src = q8Source{} // its quantising dispatch timed with it
			b.int8Matvec(name, k, d, x, w)
		}
	}
	for ci := range rows {
		row := &rows[ci]
		for si, s := range shapes {
			if !b.sweepOpen(rows, ci, si) {
				continue
			}
			op := &ops[si]
			name, _ := b.matmulVariant(dt, 1, s.K) // the matrix-vector kernel at any n
			if int8Family(fam) {
				name, _ = b.int8Name(dt)
			}
			got, d, err := b.sweepTime(run, name, row.Knobs, op.d, op.x, op.w, o.Reps)
			if b.sweepSkip(row, si, d, err) {
				break
			}
			if err != nil {
				row.Wrong = err.Error()
				continue
			}
			row.Times[si] = d
			if ci == 0 {
				op.want = got
				if si == 0 { // the default against float64 sums, once per key
					if e := sweepRef(dt, op.data, op.xs, got, n, s.K, s.Rows); e > sweepLimit {
						row.Wrong = fmt.Sprintf("%s: NMSE %.3g against float64 sums, above %g", s.Name, e, sweepLimit)
					}
				}
				continue
			}
			if op.want == nil {
				row.Wrong = fmt.Sprintf("%s: the default has no result to compare with", s.Name)
			} else if i := firstDiff(got, op.want); i >= 0 {
				row.Wrong = fmt.Sprintf("%s: element %d is %v, the default's %v", s.Name, i, got[i], op.want[i])
			}
		}
	}
	inheritWrong(rows)
	score(rows, shapeCounts(shapes, 1), bytesPerToken/1e9, nil)
	return rows, nil
}

// inheritWrong marks every row wrong when the default (rows[0]) is: the
// others were checked bitwise against it.
func inheritWrong(rows []SweepRow) {
	for i := range rows {
		if rows[0].Wrong != "" && rows[i].Wrong == "" {
			rows[i].Wrong = "the default is wrong: " + rows[0].Wrong
		}
	}
}

// score sets each row's Score, the sum of its Times with Times[j] counted
// counts[j] times (once each when counts is nil), and its GBs (gb
// gigabytes over the Score) or, with tflop, its TFLOPs (*tflop over it).
func score(rows []SweepRow, counts []int, gb float64, tflop *float64) {
	for i := range rows {
		r := &rows[i]
		for j, t := range r.Times {
			if counts != nil {
				t *= time.Duration(counts[j])
			}
			r.Score += t
		}
		if r.Score <= 0 {
			continue
		}
		if tflop != nil {
			r.TFLOPs = *tflop / r.Score.Seconds()
		} else {
			r.GBs = gb / r.Score.Seconds()
		}
	}
}

// shapeCounts are the weights of score for times taken per shape, each
// shape's times in per consecutive slots (Times[si*per+k]).
func shapeCounts(shapes []SweepShape, per int) []int {
	counts := make([]int, 0, len(shapes)*per)
	for _, s := range shapes {
		for range per {
			counts = append(counts, s.Count)
		}
	}
	return counts
}

func sameKnobs(a, b Knobs) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// sweepTime runs a matrix-vector kernel (run: matvec or int8Matvec) with
// knobs k once untimed and reps times timed, and returns its result and
// one call's mean GPU time.
func (b *Backend) sweepTime(run func(string, Knobs, *Tensor, *Tensor, *Tensor), name string, k Knobs, d, x, w *Tensor, reps int) ([]float32, time.Duration, error) {
	return b.sweepRun(d, reps, func() { run(name, k, d, x, w) })
}

// sweepRun records run once untimed and reps times timed, and returns d
// after and one run's mean GPU time. d is zeroed first, so that a
// candidate that leaves an element unwritten cannot pass with an earlier
// candidate's value. The first timed run is timed alone: past the bound
// sweepOpen set (within Sweep) it ends the candidate with a *slowError
// before any repetition.
func (b *Backend) sweepRun(d *Tensor, reps int, run func()) ([]float32, time.Duration, error) {
	if err := b.Sync(); err != nil {
		return nil, 0, err
	}
	if err := b.StartProfile(); err != nil {
		return nil, 0, err
	}
	for _, p := range d.parts {
		b.zero(p)
	}
	first, err := b.sweepTimed(1, true, run)
	if err != nil {
		return nil, 0, err
	}
	if c := b.sweep; c != nil {
		if b.sweepHook != nil {
			first = b.sweepHook(c.knobs, first)
		}
		if c.limit > 0 && first > c.limit {
			return nil, first, &slowError{took: first, limit: c.limit}
		}
		if why := c.stopped(); why != "" { // no repetitions past the deadline
			return nil, 0, &cutError{why}
		}
	}
	total := first
	if reps > 1 {
		if err := b.StartProfile(); err != nil {
			return nil, 0, err
		}
		t, err := b.sweepTimed(reps-1, false, run)
		if err != nil {
			return nil, 0, err
		}
		total += t * time.Duration(reps-1)
	}
	got := make([]float32, numel(d))
	if err := b.GetF32(d, got); err != nil {
		return nil, 0, err
	}
	return got, total / time.Duration(reps), nil
}

func firstDiff(a, b []float32) int {
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return i
		}
	}
	return -1
}

// sweepRef is the normalized MSE of got (n, m) against x (n, k) · wᵀ
// summed in float64 over the dequantised weight, on at most 64 rows.
func sweepRef(dt tensor.DType, data []byte, x, got []float32, n, k, m int) float64 {
	rb := len(data) / m
	rows := min(m, 64)
	w := make([]float32, rows*k)
	if err := tensor.Dequantize(dt, data[:rows*rb], w); err != nil {
		return math.Inf(1)
	}
	var num, den float64
	for i := range n {
		for j := range rows {
			var s float64
			for e := range k {
				s += float64(x[i*k+e]) * float64(w[j*k+e])
			}
			diff := float64(got[i*m+j]) - s
			num += diff * diff
			den += s * s
		}
	}
	if den == 0 {
		return num
	}
	return num / den
}

// sweepWeight uploads a random (rows, k) weight of dt (sweepData) in
// the layout Upload chooses, or the file's unless mayPack.
func (b *Backend) sweepWeight(r *rand.Rand, dt tensor.DType, rows, k int, mayPack bool) (kernels.Tensor, []byte, error) {
	data, err := sweepData(r, dt, rows, k)
	if err != nil {
		return nil, nil, err
	}
	w, err := b.upload(tensor.Tensor{Name: "sweep", DType: dt, Shape: []int64{int64(rows), int64(k)}, Data: data},
		mayPack && slices.Contains(b.info.Repacked, dt.String()))
	return w, data, err
}

// sweepData is a random (rows, k) weight of dt: random bits with every
// float and every scale of a block made finite and of moderate size, so
// no dot overflows.
func sweepData(r *rand.Rand, dt tensor.DType, rows, k int) ([]byte, error) {
	size, err := dt.Bytes(int64(rows) * int64(k))
	if err != nil {
		return nil, err
	}
	data := make([]byte, size)
	for i := 0; i+8 <= len(data); i += 8 {
		u := r.Uint64()
		for j := range 8 {
			data[i+j] = byte(u >> (8 * j))
		}
	}
	set16 := func(o int, mask, bits uint16) {
		v := (uint16(data[o]) | uint16(data[o+1])<<8) & mask
		v |= bits
		data[o], data[o+1] = byte(v), byte(v>>8)
	}
	switch dt {
	case tensor.F32:
		for o := 0; o < len(data); o += 4 {
			set16(o+2, 0x807F, 0x3F00) // exponent of [0.5, 1)
		}
	case tensor.F16:
		for o := 0; o < len(data); o += 2 {
			set16(o, 0x83FF, 0x3800)
		}
	case tensor.BF16:
		for o := 0; o < len(data); o += 2 {
			set16(o, 0x807F, 0x3F00)
		}
	default:
		// The f16 scales of each block: d (and m, dmin) at these offsets,
		// set to small positive halves.
		offs := map[tensor.DType][]int{
			tensor.Q8_0: {0}, tensor.Q4_0: {0}, tensor.Q4_1: {0, 2}, tensor.Q5_0: {0}, tensor.Q5_1: {0, 2},
			tensor.Q2_K: {80, 82}, tensor.Q3_K: {108}, tensor.Q4_K: {0, 2}, tensor.Q5_K: {0, 2}, tensor.Q6_K: {208},
		}[dt]
		if offs == nil {
			return nil, fmt.Errorf("vulkan: sweep: no synthetic %v weights", dt)
		}
		bb := dt.BlockBytes()
		for blk := 0; blk < len(data); blk += bb {
			for _, o := range offs {
				set16(blk+o, 0x03FF, 0x1400) // [2^-10, 2^-9)
			}
		}
	}
	return data, nil
}

// Table writes the sweep's table: per key, each candidate's time a token
// (Σ Count × time), weight read rate and verdict, the chosen one marked.
func (r *SweepResult) Table(w io.Writer) {
	fmt.Fprintf(w, "%-22s %-30s %12s %10s  %s\n", "kernel", "knobs", "µs/token", "GB/s", "")
	for _, row := range r.Rows {
		mark := ""
		switch {
		case row.Chosen:
			mark = "chosen"
		case row.Wrong != "":
			mark = "WRONG: " + row.Wrong
		case row.Slow != "":
			mark = "SLOW: " + row.Slow
		case row.Cut != "":
			mark = "CUT: " + row.Cut
		}
		rate := fmt.Sprintf("%10.1f", row.GBs)
		if row.TFLOPs > 0 {
			rate = fmt.Sprintf("%6.2f TF/s", row.TFLOPs)
		}
		fmt.Fprintf(w, "%-22s %-30s %12.1f %10s  %s\n", row.Key, row.Knobs, us(row.Score), rate, strings.TrimSpace(mark))
	}
}
