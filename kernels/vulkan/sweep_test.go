//go:build cgo

package vulkan

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"
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
// are within kerneltest's LimitQuant of float64 sums; the batch family
// runs 5 tokens, so every toks leaves a partial tile. It runs Sweep end
// to end, as `vkllm bench --sweep` does, so its tuning must load.
// VKLLM_SWEEP_QUICK=1 limits it to 4 candidates a family.
func TestSweepCandidates(t *testing.T) {
	b := openTest(t, Config{})
	o := SweepOptions{Shapes: sweepShapes, Batch: 5, Reps: 1}
	if os.Getenv("VKLLM_SWEEP_QUICK") == "1" {
		o.Candidates = 4
	}
	t0 := time.Now()
	res, err := b.Sweep(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d rows in %v, %d pipelines", len(res.Rows), time.Since(t0), b.Pipelines())
	keys := map[string]int{}
	for _, r := range res.Rows {
		keys[r.Key]++
		if r.Wrong != "" {
			t.Errorf("%s %v: %s", r.Key, r.Knobs, r.Wrong)
		}
	}
	for _, dt := range WeightDTypes() {
		for _, fam := range sweepFamilies {
			key := fam + "/" + typeName(dt)
			want := len(Families[fam].Candidates())
			if o.Candidates > 0 {
				want = min(want, o.Candidates)
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
	checkClean(t, b)
}

// TestSweepNoSubgroups runs the candidates of the Q4_0 and F16 kernels with
// the shared-memory reductions.
func TestSweepNoSubgroups(t *testing.T) {
	b := openTest(t, Config{NoSubgroups: true})
	res, err := b.Sweep(SweepOptions{Shapes: sweepShapes, Batch: 5, Reps: 1, DTypes: WeightDTypes()[1:5]})
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
