//go:build cgo

package models

import (
	"path/filepath"
	"testing"

	"github.com/vkllm/vkllm/kernels/vulkan"
)

// TestVulkanStepsReuseDescriptorSets: once every batch size has run,
// decode steps of those sizes write no descriptor set while the cache
// grows (a view binds its whole tensor), so a step's host cost is its
// dispatches' recording alone.
func TestVulkanStepsReuseDescriptorSets(t *testing.T) {
	b := openVulkanConfig(t, vulkan.Config{})
	m := openOn(t, filepath.Join(testdata, "qwen2-tiny"), b)
	ctx := newCtx(t, m, ContextParams{ContextLen: 256, MaxSeqs: 1, BatchSize: 8})
	vocab := int32(m.Config.VocabSize)
	var pos int32
	step := func(n int) {
		t.Helper()
		var bt Batch
		for i := range n {
			bt.Add((pos*7+int32(i))%vocab, pos, i == n-1, 0)
			pos++
		}
		if err := ctx.Decode(bt); err != nil {
			t.Fatalf("%d tokens at %d: %v", n, pos, err)
		}
	}
	// Decode attention picks its kernel's constants by the number of
	// 64-cell chunks of a token's list (up to the segment limit), so a new
	// chunk count may bring a new pipeline and with it new sets. Warm up
	// to 193 cells, run every batch size once with lists of 193-213 cells,
	// then measure steps whose lists stay in the same chunk count (up to
	// 256 cells): there, nothing about the bindings changes but the width.
	sizes := []int{8, 1, 3, 1, 5, 2} // 20 tokens a round
	for range 9 {
		for _, n := range sizes {
			step(n)
		}
	}
	step(8)
	step(5) // pos 193
	for _, n := range sizes {
		step(n)
	}
	base := b.DescriptorSets()
	for range 2 {
		for _, n := range sizes {
			step(n)
		}
	}
	if got := b.DescriptorSets() - base; got != 0 {
		t.Errorf("%d descriptor sets written by warmed-up steps (cache at %d cells)", got, pos)
	}
}
