//go:build !cgo

package vulkan

import "github.com/vkllm/vkllm/kernels"

func init() {
	kernels.Register(kernels.Vulkan, func(kernels.Options) (kernels.Backend, error) { return nil, ErrNeedsCgo })
}
