//go:build cgo

package benchcmd

import (
	"io"
	"testing"

	"github.com/vkllm/vkllm/internal/synth"
	"github.com/vkllm/vkllm/kernels/vulkan"
	"github.com/vkllm/vkllm/models"
	"github.com/vkllm/vkllm/tensor"
)

// TestWarmUp: on Vulkan, the timed prefill and decode, and each timed
// batched decode, make no pipeline: the warm-ups made them all. (The
// synthetic model's rows of 256 and more take the tiled MatMul for the
// 16-token prefill and the 32-token prompts, so a batch of 3 tokens is
// the first to run the matrix-vector kernel on a tile of tokens.)
func TestWarmUp(t *testing.T) {
	shape, dt, err := synth.ParseSpec("qwen2.5-0.5b-tiny:Q8_0")
	if err != nil {
		t.Fatal(err)
	}
	pipes := map[string]int{}
	phaseDone = func(phase string, m *models.Model) {
		if b, ok := m.Backend().(*vulkan.Backend); ok {
			pipes[phase] = b.Pipelines()
		}
	}
	defer func() { phaseDone = func(string, *models.Model) {} }()
	src := source{name: "qwen2.5-0.5b-tiny:Q8_0", shape: &shape, dtype: dt, seed: 1}
	if _, err := bench(src, "vulkan", 16, 4, 2, tensor.F32, []int{3}, false, false, io.Discard); err != nil {
		needVulkan(t, "vulkan", err.Error())
		t.Fatal(err)
	}
	if pipes["warm-up"] == 0 || pipes["decode"] != pipes["warm-up"] || pipes["batch warm-up"] <= pipes["decode"] || pipes["batch"] != pipes["batch warm-up"] {
		t.Errorf("pipelines after each phase: %v", pipes)
	}
}
