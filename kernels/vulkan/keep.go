//go:build required

package vulkan

// The C headers in include/ live in folders without Go packages, which
// `go mod vendor` leaves out. These imports, under a build tag no build
// sets, make each folder a package that vendoring keeps; nothing is
// compiled or linked.
import (
	_ "github.com/vkllm/vkllm/kernels/vulkan/include"
	_ "github.com/vkllm/vkllm/kernels/vulkan/include/vk_video"
	_ "github.com/vkllm/vkllm/kernels/vulkan/include/vulkan"
)
