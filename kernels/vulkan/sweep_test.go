//go:build cgo

package vulkan

import (
	"bytes"
	"encoding/json"
	"maps"
	"os"
	"strings"
	"testing"
	"time"

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
// are within kerneltest's LimitQuant of float64 sums; the batch family
// runs 5 tokens, so every toks leaves a partial tile. It runs Sweep end
// to end, as `vkllm bench --sweep` does, so its tuning must load.
//
// Every combination of every weight type is 1638 candidates, too long on
// lavapipe for every run: by default the test runs, for each weight type,
// the candidates that differ from the default in one knob (every value of
// every knob), and every combination for Q4_0; VKLLM_SWEEP_FULL=1 runs
// every combination of every type.
func TestSweepCandidates(t *testing.T) {
	b := openTest(t, Config{})
	o := SweepOptions{Shapes: sweepShapes, Batch: 5, Reps: 1}
	full := os.Getenv("VKLLM_SWEEP_FULL") == "1"
	var dt tensor.DType // the type being swept, for Only
	o.Only = func(k Knobs) bool {
		if full || dt == tensor.Q4_0 {
			return true
		}
		fam := "matvec"
		if k["toks"] > 1 {
			fam = "matvec_batch"
		}
		diff := 0
		for name, v := range Families[fam].Default {
			if k[name] != v {
				diff++
			}
		}
		return diff <= 1
	}
	t0 := time.Now()
	res := &SweepResult{Tuning: DeviceTuning{Kernels: Tuning{}}}
	for _, dt = range WeightDTypes() {
		o.DTypes = []tensor.DType{dt}
		r, err := b.Sweep(o)
		if err != nil {
			t.Fatal(err)
		}
		res.Rows = append(res.Rows, r.Rows...)
		maps.Copy(res.Tuning.Kernels, r.Tuning.Kernels)
		res.Tuning.Vendor, res.Tuning.Device = r.Tuning.Vendor, r.Tuning.Device
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
			want := 0
			for _, k := range Families[fam].Candidates() {
				if o.Only(k) || sameKnobs(k, Families[fam].Default) {
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
