//go:build cgo

package vulkan

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/vkllm/vkllm/kernels/vulkan/shaders"
)

// TestProbe runs the probe end to end on its small shapes, with each
// arithmetic and layout matmul.comp's ablations are compiled for, and
// checks that every row is present, ran and is right: an ablation or old
// kernel whose results differ from the production kernel's (bitwise; the
// noprecise one within sweepLimit of float64 sums), a read whose sum is
// off, or a missing measurement fails it.
func TestProbe(t *testing.T) {
	for _, c := range []struct {
		name string
		cfg  Config
	}{
		{"default", Config{}},
		{"nosubgroups", Config{NoSubgroups: true}},
		{"fp16", Config{FP16: true}},
		{"repacked", Config{Tuning: repackAll()}},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := openTest(t, c.cfg)
			var progress bytes.Buffer
			res, err := b.Probe(ProbeOptions{Small: true, Reps: 2, Budget: 5 * time.Minute, Progress: &progress})
			if err != nil {
				t.Fatal(err)
			}
			checkClean(t, b)
			checkProbe(t, b, res)
			if t.Failed() {
				t.Logf("progress:\n%s", progress.String())
			}
			if n := strings.Count(progress.String(), "\n"); n < len(res.Rows) {
				t.Errorf("%d progress lines for %d rows", n, len(res.Rows))
			}
			var table bytes.Buffer
			res.Table(&table)
			if _, err := json.Marshal(res); err != nil {
				t.Error(err)
			}
			if c.name == "default" {
				t.Logf("table:\n%s", table.String())
			}
		})
	}
}

// checkProbe fails t unless res has every row Probe should make on b,
// each run and right (the coop rows skipped where b has no coop kernel).
func checkProbe(t *testing.T, b *Backend, res *ProbeResult) {
	t.Helper()
	want := map[string]int{"read": 3, "prefill": 4}
	for _, dt := range []string{"Q4_0", "F16"} {
		n := len(probeKnobs) + 1 // and MatMul
		if tuned := b.tune.knobs("matvec/" + strings.ToLower(dt)); !sameKnobs(tuned, probeKnobs[0]) {
			n++
		}
		want["matvec"] += n * len(probeSmall.shapes)
	}
	want["ablation"] = (1 + len(shaders.ProbeAblations)) * len(probeSmall.shapes)
	got := map[string]int{}
	for _, r := range res.Rows {
		got[r.Section]++
		if r.Section == "prefill" && r.Name == "coopmat" && !b.info.CoopMat && r.Skipped != "" {
			continue
		}
		if r.Wrong != "" || r.Skipped != "" || r.Time <= 0 || len(r.Times) == 0 || r.Bytes <= 0 || r.Kernel == "" {
			t.Errorf("%s %s %s %s %v: time %v, bytes %d, kernel %q, wrong %q, skipped %q", r.Section, r.Name, r.DType, r.Shape, r.Knobs, r.Time, r.Bytes, r.Kernel, r.Wrong, r.Skipped)
		}
		if r.Section == "ablation" && r.Name != "production" && !strings.HasPrefix(r.Kernel, "probe_"+r.Name+"_matmul_q4_0_f32") {
			t.Errorf("ablation %s ran %q", r.Name, r.Kernel)
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("rows by section %v, want %v", got, want)
	}
	if len(res.Memory) != 3 || !strings.Contains(res.Memory[0].Props, "DEVICE_LOCAL") && !b.info.Software {
		t.Errorf("memory %+v", res.Memory)
	}
}

// TestProbeBudget: past its budget the probe skips what is left, and
// says so in the rows.
func TestProbeBudget(t *testing.T) {
	b := openTest(t, Config{})
	res, err := b.Probe(ProbeOptions{Small: true, Reps: 1, Budget: time.Nanosecond})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Rows) == 0 {
		t.Fatal("no rows")
	}
	for _, r := range res.Rows {
		if r.Skipped == "" {
			t.Errorf("%s %s %s ran past the budget", r.Section, r.Name, r.Shape)
		}
	}
}

// TestCoopProbe: on a device with the cooperative-matrix kernel the probe
// times it on the prefill and, as MatMul's kernel, on one token, each
// held to float64 sums (make test-coopmat runs it).
func TestCoopProbe(t *testing.T) {
	b := openCoop(t, Config{})
	res, err := b.Probe(ProbeOptions{Small: true, Reps: 1, Budget: 5 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	checkProbe(t, b, res)
	coop := 0
	for _, r := range res.Rows {
		if strings.HasPrefix(r.Kernel, "matmul_coop_") {
			coop++
		}
	}
	if want := 2 + 2*len(probeSmall.shapes); coop != want { // prefill, and MatMul's rows
		t.Errorf("%d rows ran the coop kernel, want %d", coop, want)
	}
}
