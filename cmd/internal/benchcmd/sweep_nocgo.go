//go:build !cgo

package benchcmd

import (
	"context"
	"io"
	"time"

	"github.com/vkllm/vkllm/internal/synth"
	"github.com/vkllm/vkllm/kernels/vulkan"
	"github.com/vkllm/vkllm/tensor"
)

func runSweep(context.Context, []synth.Shape, []tensor.DType, sweepConfig, io.Writer, io.Writer) error {
	return vulkan.ErrNeedsCgo
}

func runProbe(bool, time.Duration, bool, io.Writer, io.Writer) error {
	return vulkan.ErrNeedsCgo
}
