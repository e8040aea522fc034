//go:build cgo

package models

import (
	"path/filepath"
	"testing"
)

// TestVulkanEmbeddingParity is TestEmbeddingParity on the Vulkan
// backend: the same goldens, the same bound.
func TestVulkanEmbeddingParity(t *testing.T) {
	b := openVulkan(t)
	for _, c := range embedCases {
		t.Run(c.path, func(t *testing.T) {
			checkEmbeddingParity(t, openOn(t, filepath.Join(testdata, c.path), b), loadEmbedGolden(t, c.golden))
		})
	}
}
