//go:build cgo

package models

import (
	"path/filepath"
	"testing"
)

// TestVulkanLoRA is TestLoRAParity's adapters on the Vulkan backend (the
// same goldens and bounds; the adapter's gather, scatter and low-rank
// MatMuls run there), and TestLoRABatchInvariance's bitwise equality of a
// batch of mixed adapters with each sequence alone.
func TestVulkanLoRA(t *testing.T) {
	b := openVulkan(t)
	for _, c := range []struct{ model, adapter, golden string }{
		{"qwen2-tiny", "qwen2-tiny-lora-a", "qwen2-tiny-lora-a"},
		{"llama-tiny", "llama-tiny-lora-b", "llama-tiny-lora-b"},
		{"llama-tiny-F32.gguf", "llama-tiny-lora-a-F16.gguf", "llama-tiny-lora-a"},
		{"llama-tiny-Q4_0.gguf", "llama-tiny-lora-a", "llama-tiny-Q4_0-lora-a"},
	} {
		t.Run(c.model+"+"+c.adapter, func(t *testing.T) {
			m := openOn(t, filepath.Join(testdata, c.model), b)
			checkParityAdapter(t, m, loadGolden(t, "../lora/"+c.golden), loadAdapter(t, m, c.adapter))
		})
	}
	t.Run("mixed batch", func(t *testing.T) {
		m := openOn(t, filepath.Join(testdata, "qwen2-tiny"), b)
		mixedAdapterBatch(t, m, loadAdapter(t, m, "qwen2-tiny-lora-a"), loadAdapter(t, m, "qwen2-tiny-lora-b"))
	})
}
