//go:build cgo

package vulkan

import (
	"bytes"
	"encoding/json"
	"errors"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vkllm/vkllm/kernels/kerneltest"
	"github.com/vkllm/vkllm/tensor"
)

// sweepShapes are small shapes that reach every path of the matrix-vector
// kernel: k = 263 (float types only: a lane's last step partial at every
// bpi), k = 4608 (144 groups of 32, 288 of 16, 18 K-quant blocks: several
// steps of every bpi, the last partial), and 19 rows (a partial last
// workgroup at every wg and rows).
var sweepShapes = []SweepShape{
	{Name: "odd", K: 263, Rows: 19, Count: 1},
	{Name: "long", K: 4608, Rows: 19, Count: 2},
}

// TestSweepCandidates is kerneltest over every variant: each candidate of
// each tuned family (every combination of its specialization constants),
// for every weight type, gives bitwise the default's results (batch
// invariance: the knobs never change a sum's order), and the default's
// are within kerneltest's LimitQuant of float64 sums. It runs Sweep end
// to end, as `vkllm bench --sweep` does, so its tuning must load.
//
//   - matvec: the matrix-vector families (the int8 ones: every Int8Types
//     weight type) and "layout"; the batch families run 5
//     tokens, so every toks leaves a partial tile. Every combination for
//     every weight type is 1638 candidates, minutes on lavapipe: by
//     default each weight type runs a covering set (every value of every
//     knob at least once, and the largest workgroup with the most rows
//     and groups a step); VKLLM_SWEEP_FULL=1 runs every combination, and
//     VKLLM_SWEEP_TYPES (e.g. Q4_0,F16) limits the weight types.
//   - coop: the cooperative-matrix tiles (coopmat, coopmat_small) on a
//     device that runs the kernel (make test-coopmat runs it on
//     tools/lavapipe-coopmat.sh's lavapipe: go test -exec
//     "$VKLLM_COOP_EXEC" -run TestSweepCandidates/coop), a covering set
//     for F16, Q4_0 and Q4_K (VKLLM_SWEEP_TYPES: others); on a device
//     without it, Sweep skips the families (no rows, no error).
//   - attention_prefill: a covering set on causal prompts of 12 and 40
//     tokens after 20 cells of context (both sides of every "min").
func TestSweepCandidates(t *testing.T) {
	t.Run("matvec", func(t *testing.T) { sweepCandidates(t, openTest(t, Config{}), WeightDTypes()) })
	t.Run("coop", testSweepCoop)
	t.Run("attention_prefill", testSweepAttnPrefill)
}

// sweepTypes are VKLLM_SWEEP_TYPES's weight types, else def.
func sweepTypes(t *testing.T, def []tensor.DType) []tensor.DType {
	s := os.Getenv("VKLLM_SWEEP_TYPES")
	if s == "" {
		return def
	}
	var types []tensor.DType
	for _, name := range strings.Split(s, ",") {
		dt, ok := tensor.ParseDType(name)
		if !ok {
			t.Fatalf("VKLLM_SWEEP_TYPES: %q", name)
		}
		types = append(types, dt)
	}
	return types
}

// checkCovering fails t where the candidates only accepts (with the
// family's default) miss a value of a knob of family name, but for the
// knob values in untested.
func checkCovering(t *testing.T, name string, only func(Knobs) bool, untested ...Knobs) {
	t.Helper()
	f := Families[name]
	for knob, vals := range f.Space {
		for _, v := range vals {
			covered := f.Default[knob] == v
			for _, u := range untested {
				if w, ok := u[knob]; ok && w == v {
					covered = true
				}
			}
			for _, c := range f.Candidates() {
				covered = covered || only(c) && c[knob] == v
			}
			if !covered {
				t.Errorf("%s: the covering set never takes %s=%d", name, knob, v)
			}
		}
	}
}

// TestSweepCandidatesRepacked is TestSweepCandidates for the dtypes with a
// repacked layout, repacked (the "long" shape's rows are).
func TestSweepCandidatesRepacked(t *testing.T) {
	b := openTest(t, Config{Tuning: repackAll()})
	if len(b.Device().Repacked) == 0 {
		t.Fatal("nothing repacked")
	}
	sweepCandidates(t, b, RepackDTypes())
}

func sweepCandidates(t *testing.T, b *Backend, types []tensor.DType) {
	o := SweepOptions{Shapes: sweepShapes, Batch: 5, Reps: 1}
	full := os.Getenv("VKLLM_SWEEP_FULL") == "1"
	o.Only = func(k Knobs) bool { return full || coveringSet(k) }
	for _, name := range sweepFamilies {
		f := Families[name]
		for knob, vals := range f.Space {
			for _, v := range vals {
				covered := f.Default[knob] == v
				for _, c := range f.Candidates() {
					covered = covered || coveringSet(c) && c[knob] == v
				}
				if !covered {
					t.Errorf("%s: the covering set never takes %s=%d", name, knob, v)
				}
			}
		}
	}
	if s := os.Getenv("VKLLM_SWEEP_TYPES"); s != "" {
		types = nil
		for _, name := range strings.Split(s, ",") {
			dt, ok := tensor.ParseDType(name)
			if !ok {
				t.Fatalf("VKLLM_SWEEP_TYPES: %q", name)
			}
			types = append(types, dt)
		}
	}
	t0 := time.Now()
	res := &SweepResult{Tuning: DeviceTuning{Kernels: Tuning{}}}
	for _, dt := range types {
		o.DTypes = []tensor.DType{dt}
		r, err := b.Sweep(t.Context(), o)
		if err != nil {
			t.Fatal(err)
		}
		res.Rows = append(res.Rows, r.Rows...)
		maps.Copy(res.Tuning.Kernels, r.Tuning.Kernels)
		res.Tuning.Vendor, res.Tuning.Device = r.Tuning.Vendor, r.Tuning.Device
	}
	t.Logf("%d rows in %v, %d pipelines", len(res.Rows), time.Since(t0), b.Pipelines())
	checkSweep(t, b, res, types, sweepFamilies, o.Only)
	checkClean(t, b)
}

// checkSweep checks res, the sweep of families over types with the
// candidates only accepts: each key ran them all and chose one (an int8
// family none for a type without int8 kernels), the table marks it, and
// the tuning loads for b's device.
func checkSweep(t *testing.T, b *Backend, res *SweepResult, types []tensor.DType, families []string, only func(Knobs) bool) {
	t.Helper()
	keys := map[string]int{}
	for _, r := range res.Rows {
		keys[r.Key]++
		if r.Wrong != "" {
			t.Errorf("%s %v: %s", r.Key, r.Knobs, r.Wrong)
		}
	}
	for _, dt := range types {
		for _, fam := range families {
			key := fam
			if !Families[fam].Whole {
				key += "/" + typeName(dt)
			}
			if _, ok := b.int8Name(dt); int8Family(fam) && !ok {
				if keys[key] != 0 {
					t.Errorf("%s: %d candidates run for a type without int8 kernels", key, keys[key])
				}
				continue
			}
			want := 0
			for _, k := range Families[fam].Candidates() {
				if only(k) || sameKnobs(k, Families[fam].Default) {
					want++
				}
			}
			if keys[key] != want {
				t.Errorf("%s: %d candidates run, want %d", key, keys[key], want)
			}
			if _, ok := res.Tuning.Kernels[key]; !ok && !t.Failed() {
				t.Errorf("%s: nothing chosen", key)
			}
		}
	}
	var buf bytes.Buffer
	res.Table(&buf)
	if !strings.Contains(buf.String(), "chosen") {
		t.Errorf("table without a choice:\n%s", buf.String())
	}
	js, err := json.Marshal(res.Tuning)
	if err != nil {
		t.Fatal(err)
	}
	d, err := ParseDeviceTuning(js)
	if err != nil {
		t.Fatalf("the sweep's tuning does not load: %v\n%s", err, js)
	}
	if d.Device != b.Device().Name || d.Vendor != b.Device().Vendor {
		t.Errorf("tuning for %q (%#x), device %q (%#x)", d.Device, d.Vendor, b.Device().Name, b.Device().Vendor)
	}
}

// coopUntested are the coop knob values no tile within lavapipe's 32 KiB
// of shared memory takes: coopmat_small's bk 512 (33 KiB at tn 16). A
// GPU's sweep checks those candidates bitwise against the default.
var coopUntested = Knobs{"bk": 512}

// coopCovering holds the coop families' candidates the coop subtest
// runs (with each default): every value of every knob, each tile within
// lavapipe's 32 KiB of shared memory (Sweep leaves out a candidate that
// does not fit the device, and the subtest would miss it) and with few
// weight pieces an invocation (lavapipe's subgroups are of 8: a tile of
// one subgroup unrolls tn·bk/128 of them, slow for lavapipe to compile).
func coopCovering(k Knobs) bool {
	for _, c := range []Knobs{
		{"tm": 128, "tn": 32, "wm": 32, "wn": 32, "bk": 32, "sg": 1}, {"tm": 32, "tn": 128, "wm": 32, "wn": 32, "bk": 32, "sg": 8},
		{"tm": 32, "tn": 32, "wm": 32, "wn": 32, "bk": 128, "sg": 8}, {"tm": 32, "tn": 64, "wm": 32, "wn": 32, "bk": 64, "sg": 8},
		{"tm": 16, "tn": 32, "wm": 16, "wn": 16, "bk": 64, "sg": 1, "min": 16}, {"tm": 16, "tn": 32, "wm": 16, "wn": 16, "bk": 128, "sg": 8, "min": 64},
	} {
		if sameKnobs(k, c) {
			return true
		}
	}
	return false
}

// testSweepCoop: Sweep's coop families (see TestSweepCandidates).
func testSweepCoop(t *testing.T) {
	fams := []string{"coopmat", "coopmat_small"}
	for _, f := range fams {
		checkCovering(t, f, coopCovering, coopUntested)
	}
	b := openDevice(t, Config{})
	types := sweepTypes(t, []tensor.DType{tensor.F16, tensor.Q4_0, tensor.Q4_K})
	var progress bytes.Buffer
	o := SweepOptions{Shapes: sweepShapes, Prefill: 37, Reps: 1, Families: fams, DTypes: types, Only: coopCovering, Progress: &progress}
	if !b.Device().CoopMat {
		res, err := b.Sweep(t.Context(), o)
		if err != nil || len(res.Rows) != 0 || !strings.Contains(progress.String(), "skipped") {
			t.Errorf("a device without the cooperative-matrix kernel: %v, %d rows, progress %q; want a clean skip", err, len(res.Rows), progress.String())
		}
		if os.Getenv("VKLLM_REQUIRE_COOPMAT") == "1" {
			t.Fatalf("VKLLM_REQUIRE_COOPMAT=1 on a device without the cooperative-matrix kernel: %+v", b.Device())
		}
		return
	}
	t0 := time.Now()
	res, err := b.Sweep(t.Context(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d rows in %v, %d pipelines", len(res.Rows), time.Since(t0), b.Pipelines())
	for _, dt := range types {
		if _, ok := b.coopVariant(dt); !ok {
			t.Fatalf("%v: no cooperative-matrix kernel", dt)
		}
	}
	checkSweep(t, b, res, types, fams, coopCovering)
	checkClean(t, b)
}

// testSweepAttnPrefill: Sweep's attention_prefill family (see
// TestSweepCandidates).
func testSweepAttnPrefill(t *testing.T) {
	b := openTest(t, Config{})
	saved := b.attn
	shapes := []SweepAttention{
		{Name: "short", Heads: 4, KVHeads: 2, HD: 16, N: 12, Width: 32, Causal: true},
		{Name: "long", Heads: 6, KVHeads: 1, HD: 12, N: 40, Width: 60, Causal: true},
	}
	// Every value of every knob (all 36 candidates take minutes on a
	// loaded lavapipe).
	cover := []Knobs{{"rows": 8, "wg": 64, "min": 8}, {"rows": 32, "wg": 256, "min": 16}, {"rows": 8, "wg": 256, "min": 64}}
	only := func(k Knobs) bool { return slices.ContainsFunc(cover, func(c Knobs) bool { return sameKnobs(c, k) }) }
	checkCovering(t, "attention_prefill", only)
	res, err := b.Sweep(t.Context(), SweepOptions{Families: []string{"attention_prefill"}, Attention: shapes, Reps: 1, Only: only})
	if err != nil {
		t.Fatal(err)
	}
	checkSweep(t, b, res, []tensor.DType{tensor.F32}, []string{"attention_prefill"}, only)
	if b.attn != saved {
		t.Errorf("attention tuning after the sweep %+v, before %+v", b.attn, saved)
	}
	if _, err := b.Sweep(t.Context(), SweepOptions{Families: []string{"attention_prefill"}, Attention: []SweepAttention{{Name: "bad", Heads: 2, KVHeads: 2, HD: 8, N: 9, Width: 8, Causal: true}}}); err == nil {
		t.Error("a causal prompt of 9 tokens over 8 cells: no error")
	}
	checkClean(t, b)
}

// TestSweepNoSubgroups runs TestSweepCandidates' covering set of the Q4_0
// and F16 kernels with the shared-memory reductions.
func TestSweepNoSubgroups(t *testing.T) {
	b := openTest(t, Config{NoSubgroups: true})
	res, err := b.Sweep(t.Context(), SweepOptions{Shapes: sweepShapes, Batch: 5, Reps: 1, DTypes: []tensor.DType{tensor.Q4_0, tensor.F16}, Only: coveringSet})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res.Rows {
		if r.Wrong != "" {
			t.Errorf("%s %v: %s", r.Key, r.Knobs, r.Wrong)
		}
	}
	checkClean(t, b)
}

// coveringSet holds the candidates TestSweepCandidates runs by default
// (with each family's default): together they take every value of every
// knob of Families' spaces, each with small unrolled loops (lavapipe
// compiles the largest combinations slowly).
func coveringSet(k Knobs) bool {
	for _, c := range []Knobs{
		{"wg": 64, "rows": 4, "toks": 1, "bpi": 1}, {"wg": 256, "rows": 1, "toks": 1, "bpi": 4},
		{"wg": 64, "rows": 4, "toks": 2, "bpi": 1}, {"wg": 256, "rows": 1, "toks": 16, "bpi": 1}, {"wg": 64, "rows": 1, "toks": 4, "bpi": 4},
	} {
		if sameKnobs(k, c) {
			return true
		}
	}
	return false
}

// TestConfigTuning: Config.Tuning picks the matrix-vector kernel's
// constants (the pipeline made has them), and a bad one fails Open with
// ErrTuning.
func TestConfigTuning(t *testing.T) {
	b := openTest(t, Config{Tuning: Tuning{"matvec/q4_0": {"wg": 256, "rows": 4, "bpi": 1}}})
	w, _ := kerneltest.RandomWeight(t, b, tensor.Q4_0, 19, 64)
	x, _ := b.NewTensor(tensor.F32, 1, 64)
	d, _ := b.NewTensor(tensor.F32, 1, 19)
	b.MatMul(d, x, w)
	if err := b.Sync(); err != nil {
		t.Fatal(err)
	}
	name, _ := b.matmulVariant(tensor.Q4_0, 1, 64)
	key := pipeKey{name: name, n: 4}
	copy(key.spec[:], []uint32{256, 4, 1, 1})
	if b.pipes[key] == nil {
		t.Errorf("no pipeline %v among %v", key, slices.Collect(maps.Keys(b.pipes)))
	}
	_, err := Open(Config{Tuning: Tuning{"matvec/q4_0": {"wg": 96}}})
	if !errors.Is(err, ErrTuning) {
		t.Errorf("Open with wg=96: %v, want ErrTuning", err)
	}
}

// TestSweepAttention runs the "attention" family of Sweep end to end on
// tiny GQA shapes: every value of every knob at least once (and ones
// with the default's segs, which must be bitwise the default), each
// candidate right against float64 sums, one chosen, its tuning loads and
// the backend's own attention tuning is back after. With lists of 1000
// cells (16 chunks) 8 segments cut them differently from 32: those
// candidates give other bits and must pass on the reference alone.
func TestSweepAttention(t *testing.T) {
	b := openTest(t, Config{})
	saved := b.attn
	shapes := []SweepAttention{
		{Name: "one", Heads: 4, KVHeads: 2, HD: 16, N: 1, Width: 1000},
		{Name: "batch", Heads: 6, KVHeads: 1, HD: 12, N: 3, Width: 300},
	}
	cover := []Knobs{
		{"segs": 8, "heads": 1, "wgs": 1, "tile": 2048}, {"segs": 16, "heads": 2, "wgs": 64, "tile": 8192},
		{"segs": 64, "heads": 4, "wgs": 256, "tile": 4096}, {"segs": 128, "heads": 8, "wgs": 512, "tile": 2048},
		{"segs": 32, "heads": 1, "wgs": 512, "tile": 2048}, {"segs": 32, "heads": 2, "wgs": 1, "tile": 8192},
	}
	only := func(k Knobs) bool { return slices.ContainsFunc(cover, func(c Knobs) bool { return sameKnobs(c, k) }) }
	res, err := b.Sweep(t.Context(), SweepOptions{Families: []string{"attention"}, Attention: shapes, Reps: 1, Only: only})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Rows) != len(cover)+1 || !sameKnobs(res.Rows[0].Knobs, Families["attention"].Default) {
		t.Fatalf("%d rows (first %v), want the default and %d", len(res.Rows), res.Rows[0].Knobs, len(cover))
	}
	for _, r := range res.Rows {
		if r.Key != "attention" || r.Wrong != "" || r.Score <= 0 {
			t.Errorf("%s %v: score %v, %s", r.Key, r.Knobs, r.Score, r.Wrong)
		}
	}
	if _, ok := res.Tuning.Kernels["attention"]; !ok {
		t.Errorf("nothing chosen: %v", res.Tuning.Kernels)
	}
	if b.attn != saved {
		t.Errorf("attention tuning after the sweep %+v, before %+v", b.attn, saved)
	}
	js, _ := json.Marshal(res.Tuning)
	if _, err := ParseDeviceTuning(js); err != nil {
		t.Errorf("the sweep's tuning does not load: %v\n%s", err, js)
	}
	var buf bytes.Buffer
	res.Table(&buf)
	if !strings.Contains(buf.String(), "attention") {
		t.Errorf("table without attention:\n%s", buf.String())
	}
	if _, err := b.Sweep(t.Context(), SweepOptions{Families: []string{"attention"}, Attention: []SweepAttention{{Name: "bad", Heads: 3, KVHeads: 2, HD: 8, N: 1, Width: 64}}}); err == nil {
		t.Error("3 query heads over 2 KV heads: no error")
	}
	checkClean(t, b)
}

// TestSweepLayout runs the "layout" family of Sweep: per dtype with a
// repacked layout, both layouts timed on the repackable shapes, the
// repacked one bitwise the file layout's, one chosen, the tuning loads.
func TestSweepLayout(t *testing.T) {
	b := openTest(t, Config{})
	shapes := append(slices.Clone(sweepShapes), SweepShape{Name: "wide", K: 2048, Rows: 19, Count: 1}) // Q6_K's runs
	res, err := b.Sweep(t.Context(), SweepOptions{Families: []string{"layout"}, Shapes: shapes, Reps: 1, DTypes: WeightDTypes()})
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, r := range res.Rows {
		if !slices.Contains(keys, r.Key) {
			keys = append(keys, r.Key)
		}
		if r.Wrong != "" || r.Score <= 0 || len(r.Times) == 0 || slices.Contains(r.Times, 0) {
			t.Errorf("%s %v: score %v over %d shapes, %s", r.Key, r.Knobs, r.Score, len(r.Times), r.Wrong)
		}
	}
	if want := []string{"layout/q8_0", "layout/q4_0", "layout/q4_1", "layout/q6_k"}; !slices.Equal(keys, want) || len(res.Rows) != 2*len(want) {
		t.Errorf("%d rows of keys %v, want 2 of each of %v", len(res.Rows), keys, want)
	}
	for _, k := range keys {
		if _, ok := res.Tuning.Kernels[k]; !ok {
			t.Errorf("%s: nothing chosen", k)
		}
	}
	js, _ := json.Marshal(res.Tuning)
	if _, err := ParseDeviceTuning(js); err != nil {
		t.Errorf("the sweep's tuning does not load: %v\n%s", err, js)
	}
	checkClean(t, b)
}
