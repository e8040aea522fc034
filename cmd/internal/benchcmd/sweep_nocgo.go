//go:build !cgo

package benchcmd

import (
	"io"

	"github.com/vkllm/vkllm/internal/synth"
	"github.com/vkllm/vkllm/kernels/vulkan"
	"github.com/vkllm/vkllm/tensor"
)

func runSweep([]synth.Shape, []tensor.DType, int, int, int, string, bool, io.Writer, io.Writer) error {
	return vulkan.ErrNeedsCgo
}
