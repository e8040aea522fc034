//go:build cgo

package vulkan

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vkllm/vkllm/tensor"
)

// TestSweepBudget: a deadline that passes inside a family cuts it there:
// the candidates timed on every shape are chosen from, the one whose run
// was in flight and the rest are marked cut, the next family is not
// started, and both are listed in Cut. The deadline is moved to "now"
// from the test hook during the third candidate's first timed run (a
// budget of exactly two and a half candidates, on any machine).
func TestSweepBudget(t *testing.T) {
	b := openTest(t, Config{})
	calls := 0
	b.sweepHook = func(k Knobs, d time.Duration) time.Duration {
		if calls++; calls == 3 {
			b.sweep.deadline = time.Now()
		}
		return d
	}
	var progress bytes.Buffer
	res, err := b.Sweep(t.Context(), SweepOptions{Shapes: sweepShapes, DTypes: []tensor.DType{tensor.Q4_0},
		Families: []string{"matvec", "matvec_batch"}, Reps: 2, Candidates: 6, Deadline: time.Now().Add(time.Hour), Progress: &progress})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Rows) != 6 { // Q4_0 runs on the one shape whose K is whole blocks
		t.Fatalf("%d rows, want matvec/q4_0's 6", len(res.Rows))
	}
	for i, r := range res.Rows {
		if timed := i < 2; timed != (r.Cut == "") || timed && (r.Wrong != "" || r.Score <= 0) || !timed && r.Cut != "budget spent" {
			t.Errorf("row %d %v: cut %q, wrong %q, score %v", i, r.Knobs, r.Cut, r.Wrong, r.Score)
		}
		if r.Chosen && i >= 2 {
			t.Errorf("row %d chosen though cut", i)
		}
	}
	if _, ok := res.Tuning.Kernels["matvec/q4_0"]; !ok || len(res.Tuning.Kernels) != 1 {
		t.Errorf("tuning %v, want matvec/q4_0 alone", res.Tuning.Kernels)
	}
	want := []string{"matvec/q4_0: 2 of 6 candidates timed (budget spent)", "matvec_batch/q4_0: not started (budget spent)"}
	if !slices.Equal(res.Cut, want) {
		t.Errorf("Cut %q, want %q", res.Cut, want)
	}
	for _, line := range []string{"sweep matvec/q4_0: started", "sweep matvec/q4_0: 6 candidates, 4 cut (budget spent), chose", "sweep matvec_batch/q4_0: not started"} {
		if !strings.Contains(progress.String(), line) {
			t.Errorf("progress lacks %q:\n%s", line, progress.String())
		}
	}
	checkClean(t, b)
}

// TestSweepSlow: a candidate whose first timed run passes SlowFactor ×
// the default's (made so by the test hook) is marked slow, timed on no
// other shape and never chosen; the others are timed as usual. A default
// past the absolute bound (Slow) leaves its key untuned, its other
// candidates not timed.
func TestSweepSlow(t *testing.T) {
	b := openTest(t, Config{})
	o := SweepOptions{Shapes: sweepShapes, DTypes: []tensor.DType{tensor.F16}, Families: []string{"matvec"}, Reps: 3, Candidates: 4}
	slow := o.sweepRows("matvec", "matvec/f16", 1)[1].Knobs
	slowCalls := 0
	b.sweepHook = func(k Knobs, d time.Duration) time.Duration {
		if sameKnobs(k, slow) {
			slowCalls++
			return 1000*d + slowFloor
		}
		return d
	}
	res, err := b.Sweep(t.Context(), o)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Rows) != 4 {
		t.Fatalf("%d rows, want 4", len(res.Rows))
	}
	for i, r := range res.Rows {
		switch {
		case i == 1 && (r.Slow == "" || r.Chosen || r.Times[1] != 0 || slowCalls != 1):
			t.Errorf("the slow candidate %v: slow %q, chosen %v, times %v, %d first runs (want 1)", r.Knobs, r.Slow, r.Chosen, r.Times, slowCalls)
		case i != 1 && (r.Slow != "" || r.Cut != "" || r.Wrong != "" || r.Score <= 0):
			t.Errorf("row %d %v: slow %q, cut %q, wrong %q, score %v", i, r.Knobs, r.Slow, r.Cut, r.Wrong, r.Score)
		}
	}
	if _, ok := res.Tuning.Kernels["matvec/f16"]; !ok {
		t.Errorf("no tuning for matvec/f16: %v", res.Tuning.Kernels)
	}

	b.sweepHook = nil
	o.Slow = time.Nanosecond
	res, err = b.Sweep(t.Context(), o)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Tuning.Kernels) != 0 || len(res.Rows) != 4 || res.Rows[0].Slow == "" || res.Rows[0].Times[1] != 0 {
		t.Fatalf("a default past Slow: tuning %v, rows %+v", res.Tuning.Kernels, res.Rows)
	}
	for _, r := range res.Rows[1:] {
		if r.Slow != "not timed: the default is slow" || slices.ContainsFunc(r.Times, func(d time.Duration) bool { return d != 0 }) {
			t.Errorf("%v after a slow default: slow %q, times %v", r.Knobs, r.Slow, r.Times)
		}
	}
	checkClean(t, b)
}

// TestSweepCancel: a context cancelled during a family (as vkllm's
// SIGTERM does) stops the sweep at the next run, like a spent budget,
// and Sweep returns what it timed with the context's error.
func TestSweepCancel(t *testing.T) {
	b := openTest(t, Config{})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	calls := 0
	b.sweepHook = func(k Knobs, d time.Duration) time.Duration {
		if calls++; calls == 2 {
			cancel()
		}
		return d
	}
	res, err := b.Sweep(ctx, SweepOptions{Shapes: sweepShapes, DTypes: []tensor.DType{tensor.Q4_0}, Families: []string{"matvec", "matvec_batch"}, Reps: 2, Candidates: 4})
	if !errors.Is(err, context.Canceled) || res == nil {
		t.Fatalf("Sweep after a cancel: %v, %v", res, err)
	}
	want := []string{"matvec/q4_0: 1 of 4 candidates timed (interrupted)", "matvec_batch/q4_0: not started (interrupted)"}
	if !slices.Equal(res.Cut, want) || calls != 2 {
		t.Errorf("Cut %q after %d first runs, want %q after 2", res.Cut, calls, want)
	}
	checkClean(t, b)
}
