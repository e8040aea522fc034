package cpu

import (
	"testing"

	"github.com/vkllm/vkllm/kernels/kerneltest"
)

func TestConformance(t *testing.T) {
	kerneltest.All(t, New(0))
	kerneltest.All(t, New(1)) // single-threaded must agree too
}
