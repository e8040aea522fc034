//go:build cgo

package benchcmd

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/vkllm/vkllm/kernels/vulkan"
)

// TestProbe runs `vkllm bench --probe --probe-small` on the Vulkan
// device: a progress line per row on stderr, the JSON result on stdout
// with every row right, the table without --json, and bad flags refused.
func TestProbe(t *testing.T) {
	var stdout, stderr bytes.Buffer
	rc := Run(t.Context(), []string{"--probe", "--probe-small", "--json"}, &stdout, &stderr)
	needVulkan(t, "vulkan", stderr.String())
	if rc != 0 {
		t.Fatalf("exit %d: %s", rc, stderr.String())
	}
	var res vulkan.ProbeResult
	if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
		t.Fatalf("%v:\n%s", err, stdout.String())
	}
	if len(res.Rows) == 0 || len(res.Memory) != 3 {
		t.Fatalf("%d rows, memory %+v", len(res.Rows), res.Memory)
	}
	for _, r := range res.Rows {
		if r.Wrong != "" {
			t.Errorf("%s %s %s: %s", r.Section, r.Name, r.Shape, r.Wrong)
		}
	}
	if n := strings.Count(stderr.String(), "\nprobe "); n < len(res.Rows) {
		t.Errorf("%d progress lines for %d rows:\n%s", n, len(res.Rows), stderr.String())
	}
	stdout.Reset()
	if rc := Run(t.Context(), []string{"--probe", "--probe-budget", "1ns"}, &stdout, &stderr); rc != 0 || !strings.Contains(stdout.String(), "SKIPPED: budget") {
		t.Errorf("--probe-budget 1ns: exit %d, table:\n%s", rc, stdout.String())
	}
	if rc := Run(t.Context(), []string{"--probe", "--probe-budget", "0s"}, &stdout, &stderr); rc != 2 {
		t.Errorf("--probe-budget 0s: exit %d, want 2", rc)
	}
}
