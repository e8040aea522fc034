//go:build !cgo

package vulkan

import (
	"errors"
	"testing"

	"github.com/vkllm/vkllm/kernels"
	_ "github.com/vkllm/vkllm/kernels/cpu"
)

// TestNeedsCgo: without cgo, "vulkan" is a typed error and "auto" the CPU.
func TestNeedsCgo(t *testing.T) {
	if _, err := kernels.Open("vulkan", kernels.Options{}); !errors.Is(err, ErrNeedsCgo) {
		t.Fatalf("got %v, want ErrNeedsCgo", err)
	}
	b, err := kernels.Open("auto", kernels.Options{})
	if err != nil || b.Name() != "cpu" {
		t.Fatalf("auto: %v, %v", b, err)
	}
}
