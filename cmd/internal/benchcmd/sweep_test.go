//go:build cgo

package benchcmd

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vkllm/vkllm/kernels/vulkan"
)

// TestSweep runs `vkllm bench --sweep` end to end on the Vulkan device at
// a tiny scale: the table, the JSON result with every candidate right and
// one chosen per kernel, and a tuning file that the backend loads
// (through VKLLM_VULKAN_TUNING, as tools/gpu/check.sh passes it on).
func TestSweep(t *testing.T) {
	out := filepath.Join(t.TempDir(), "tuning.json")
	args := []string{"--sweep", "--sweep-models", "qwen2.5-0.5b-tiny", "--sweep-dtypes", "Q4_0,F16", "--sweep-reps", "1",
		"--sweep-candidates", "3", "--sweep-out", out}
	var stdout, stderr bytes.Buffer
	rc := Run(t.Context(), append(args, "--json"), &stdout, &stderr)
	needVulkan(t, "vulkan", stderr.String())
	if rc != 0 {
		t.Fatalf("exit %d: %s", rc, stderr.String())
	}
	var res vulkan.SweepResult
	if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
		t.Fatalf("%v:\n%s", err, stdout.String())
	}
	// two weight types × two families × three candidates, Q4_0's two
	// int8 families × three, Q4_0's two layouts (its rows of 4864 can be
	// repacked), attention's three over its 4 decode calls and
	// attention_prefill's three over its 3 prompts (on a device without
	// the cooperative-matrix kernel: no coop families)
	if len(res.Rows) != 26 || len(res.Shapes) != 6 || len(res.Attention) != 7 {
		t.Errorf("%d rows over %d shapes and %d attention calls, want 26 over 6 and 7", len(res.Rows), len(res.Shapes), len(res.Attention))
	}
	for _, r := range res.Rows {
		if r.Wrong != "" || r.Score <= 0 {
			t.Errorf("%s %v: score %v, %s", r.Key, r.Knobs, r.Score, r.Wrong)
		}
	}
	for _, key := range []string{"matvec/q4_0", "matvec_batch/q4_0", "matvec_int8/q4_0", "matvec_int8_batch/q4_0", "matvec/f16", "matvec_batch/f16", "layout/q4_0", "attention", "attention_prefill"} {
		if _, ok := res.Tuning.Kernels[key]; !ok {
			t.Errorf("no tuning chosen for %s: %v", key, res.Tuning.Kernels)
		}
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := vulkan.ParseDeviceTuning(b); err != nil {
		t.Fatalf("--sweep-out: %v\n%s", err, b)
	}
	t.Setenv("VKLLM_VULKAN_TUNING", out)
	cfg, err := vulkan.FromEnv(vulkan.Config{})
	if err != nil || len(cfg.Tuning) != 9 {
		t.Errorf("VKLLM_VULKAN_TUNING: %v, tuning %v", err, cfg.Tuning)
	}
	stdout.Reset()
	if rc := Run(t.Context(), args, &stdout, &stderr); rc != 0 || !strings.Contains(stdout.String(), "chosen") {
		t.Errorf("the table (exit %d):\n%s", rc, stdout.String())
	}
	// A budget spent before the first family: every family is cut, not
	// started, and named; the tuning file holds no kernel.
	stdout.Reset()
	if rc := Run(t.Context(), append(args, "--json", "--sweep-budget", "1ns"), &stdout, &stderr); rc != 0 {
		t.Fatalf("--sweep-budget 1ns: exit %d: %s", rc, stderr.String())
	}
	var cut vulkan.SweepResult
	if err := json.Unmarshal(stdout.Bytes(), &cut); err != nil {
		t.Fatal(err)
	}
	want := []string{"matvec/q4_0", "matvec_batch/q4_0", "matvec_int8/q4_0", "matvec_int8_batch/q4_0", "layout/q4_0",
		"matvec/f16", "matvec_batch/f16", "attention", "attention_prefill"}
	if len(cut.Rows) != 0 || len(cut.Cut) != len(want) {
		t.Errorf("--sweep-budget 1ns: %d rows, cut %q; want none and %q not started", len(cut.Rows), cut.Cut, want)
	}
	for i, k := range want {
		if i < len(cut.Cut) && cut.Cut[i] != k+": not started (budget spent)" {
			t.Errorf("cut[%d] = %q, want %s not started", i, cut.Cut[i], k)
		}
	}
	if b, err := os.ReadFile(out); err != nil || strings.Contains(string(b), "matvec") {
		t.Errorf("--sweep-out after a spent budget: %v\n%s", err, b)
	}
	for _, bad := range [][]string{{"--sweep", "--sweep-models", "gpt-9"}, {"--sweep", "--sweep-dtypes", "Q9_9"}, {"--sweep", "--sweep-batch", "1"}, {"--sweep", "--sweep-budget", "-1s"}} {
		if rc := Run(t.Context(), bad, &stdout, &stderr); rc != 2 {
			t.Errorf("%q: exit %d, want 2", bad, rc)
		}
	}
}
