//go:build !cgo

package benchcmd

import (
	"io"
	"time"

	"github.com/vkllm/vkllm/internal/synth"
	"github.com/vkllm/vkllm/kernels/vulkan"
	"github.com/vkllm/vkllm/tensor"
)

func runSweep([]synth.Shape, []tensor.DType, int, int, int, time.Duration, string, bool, io.Writer, io.Writer) error {
	return vulkan.ErrNeedsCgo
}

func runProbe(bool, time.Duration, bool, io.Writer, io.Writer) error {
	return vulkan.ErrNeedsCgo
}
