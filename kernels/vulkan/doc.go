// Package vulkan is the Vulkan compute backend of vkllm, registered as
// "vulkan" with kernels.Register.
//
// Layout: every tensor is row-major in device-local memory, sub-allocated
// from large blocks; an F32 or I32 tensor holds 4-byte elements, an F16 one
// (a KV cache) 2-byte IEEE halves, and an uploaded weight keeps the bytes
// of its file (ggml's block layouts for quantised types), split by rows
// into several parts when it exceeds maxStorageBufferRange. Ops are
// recorded into one command buffer, each followed by a memory barrier,
// and submitted only when the host needs data (GetF32, GetI32, Sync).
//
// The loader (libvulkan.so.1) is opened at run time, so a binary without a
// Vulkan driver starts and kernels.Open("vulkan") returns a *NoDriverError;
// without cgo the package only registers a backend that fails with
// ErrNeedsCgo. The shaders live in the shaders subpackage.
//
// Files: vk.c/vk.h are the C layer (instance, device, buffers, pipelines,
// recording, submit); backend.go opens a device and caches pipelines;
// memory.go holds blocks, tensors and the staging arena; hazard.go places
// barriers; ops.go records the ops; push.go mirrors the push constants.
// Adding an op touches four places: its .comp in shaders/, an entry in
// shaders.Variants, its method in ops.go (with a push struct in push.go),
// and a kerneltest case.
//
// Environment: VKLLM_DEVICE picks a device by index or name substring;
// VKLLM_VULKAN_LIB names the loader library; VKLLM_VULKAN_VALIDATION=1
// turns on VK_LAYER_KHRONOS_validation (when installed) and makes Sync
// fail on any validation message.
package vulkan
