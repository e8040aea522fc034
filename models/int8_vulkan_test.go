//go:build cgo

package models

import (
	"context"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vkllm/vkllm/kernels"
	"github.com/vkllm/vkllm/kernels/cpu"
	"github.com/vkllm/vkllm/kernels/vulkan"
)

// TestVulkanInt8: with the int8 MatMul on (vulkan.Config.Int8: every
// MatMul of a Q8_0, Q4_0, Q4_1, Q4_K, Q5_K or Q6_K weight as integer dots
// against 8-bit activations, decode steps and prefill alike), a token's
// logits are bitwise the same in a batch of four prompts as alone, in
// decode steps of four sequences as alone, and with a prompt decoded in
// chunks of 1, 4 and 6 tokens as at once, on the quantised tiny models
// (the only ones whose MatMuls the mode changes). It measures the
// distance from the transformers goldens of every quantised GGUF, beside
// the default (float) kernels' and the CPU fast path's (kernels/cpu, which
// quantises activations by the same rule) on the same file. The 8-bit
// activations are not held to TestVulkanParity's 1e-4 of the largest
// logit (the mode is off by default): on these tiny random models both
// int8 paths measure 2.4e-2 to 3.4e-2, as llama.cpp does on the same
// files (up to 3e-2, testdata/README.md); the test fails where the
// mode is more than 1.25 times the CPU fast path's distance.
func TestVulkanInt8(t *testing.T) {
	b := openVulkanConfig(t, vulkan.Config{Int8: true})
	if d := b.Device(); !d.Int8MatMul {
		t.Fatalf("Int8 asked for, Int8MatMul off: %+v", d)
	}
	t.Logf("integer dot products: %v", b.Device().IntegerDot)
	for _, model := range []string{"qwen2-tiny-Q4_0.gguf", "llama-tiny-Q4_1.gguf", "qwen2-tiny-Q8_0.gguf"} {
		t.Run(model, func(t *testing.T) {
			bitwiseInvariant(t, openOn(t, filepath.Join(testdata, model), b))
		})
	}
	float := openVulkanConfig(t, vulkan.Config{})
	for _, c := range parityCases {
		if !strings.Contains(c.path, "-Q") {
			continue // no weight the mode changes
		}
		t.Run("parity "+c.path, func(t *testing.T) {
			g := loadGolden(t, c.golden)
			dist := func(m *Model) float64 {
				worst := 0.0
				for _, p := range g.Prompts {
					got := decodeAlone(t, m, p.Tokens, 0)
					for i := range p.Tokens {
						var scale, d float64
						for j, v := range p.Logits[i] {
							scale = math.Max(scale, math.Abs(float64(v)))
							d = math.Max(d, math.Abs(float64(got[i][j]-v)))
						}
						worst = math.Max(worst, d/scale)
					}
				}
				return worst
			}
			path := filepath.Join(testdata, c.path)
			cpuFast, err := Open(context.Background(), path, WithBackendName(cpu.Name, kernels.Options{}))
			if err != nil {
				t.Fatal(err)
			}
			defer cpuFast.Close()
			worst, base, fast := dist(openOn(t, path, b)), dist(openOn(t, path, float)), dist(cpuFast)
			t.Logf("%s: largest |logit − golden| / largest |golden logit| = %.3g int8, %.3g float kernels, %.3g on the CPU fast path (Q8 activations by the same rule)",
				c.path, worst, base, fast)
			if worst > 1.25*fast {
				t.Errorf("%s: %.3g of the largest logit from the golden, the CPU fast path's same arithmetic %.3g", c.path, worst, fast)
			}
		})
	}
}
