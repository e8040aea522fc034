//go:build cgo

package models

import (
	"path/filepath"
	"testing"

	"github.com/vkllm/vkllm/kernels/vulkan"
)

// TestVulkanStepsReuseDescriptorSets: once every batch size has run,
// decode steps of those sizes write no descriptor set, however wide the
// cache has grown (a view binds its whole tensor), so a step's host cost
// is its dispatches' recording alone.
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
	sizes := []int{8, 1, 3, 1, 5, 2}
	for _, n := range sizes {
		step(n)
	}
	base := b.DescriptorSets()
	for range 5 {
		for _, n := range sizes {
			step(n)
		}
	}
	if got := b.DescriptorSets() - base; got != 0 {
		t.Errorf("%d descriptor sets written by warmed-up steps (cache at %d cells)", got, pos)
	}
}
