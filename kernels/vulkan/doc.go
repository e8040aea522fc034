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
// Building needs cgo and a C compiler, nothing else: the Vulkan headers
// (Khronos Vulkan-Headers 1.3.239) are vendored in include/, so the build
// never depends on the system's (no libvulkan-dev). Running needs only a
// Vulkan loader and driver.
//
// Files: vk.c/vk.h are the C layer (instance, device, buffers, pipelines,
// recording, submit), compiled against include/; backend.go opens a
// device and caches pipelines; memory.go holds blocks, tensors and the
// staging arena; hazard.go places barriers; ops.go records the ops;
// push.go mirrors the push constants; profile.go reads GPU timestamps;
// tuning.go holds the kernels' tuning and sweep.go the sweep that makes it;
// coop.go picks the cooperative-matrix shape and tiles.
// Adding an op touches four places: its .comp in shaders/, an entry in
// shaders.Variants, its method in ops.go (with a push struct in push.go),
// and a kerneltest case.
//
// Profiling (kernels.OpProfiler: StartProfile, ProfileOp, StopProfile)
// writes GPU timestamps into the same command buffers, at the first
// command of each labelled op and at the end of each command buffer, and
// reads them after the submission's fence: no submit or wait is added
// (a command buffer that fills the 4096-query pool is submitted early,
// as one that fills the descriptor pool is). Off, nothing is written and
// no query pool exists.
//
// Attention over lists longer than Config.AttentionSegment cells is split
// into segments (flash decoding) whose partial results go to a scratch
// buffer of the backend's: ReserveAttention (called by models.NewContext)
// allocates it once, at most Config.AttentionScratch bytes (64 MiB) or
// one token's segments, and a batch that does not fit runs in chunks of
// tokens, so that Attention allocates nothing once it is reserved.
//
// # Kernel variants
//
// Pipelines are created from the variant of each shader that the device's
// features (queried through the VkPhysicalDeviceFeatures2 chain and
// enabled at device creation) and the Config allow, falling back where a
// feature is absent:
//
//   - _subgroup (reductions with subgroup arithmetic) where the device has
//     subgroup arithmetic in compute shaders and one subgroup size (or
//     subgroup size control to pin it); else shared-memory trees. Off with
//     Config.NoSubgroups or VKLLM_VULKAN_DISABLE=subgroup.
//
//   - MatMul, matrix-vector (matmul.comp): a decode step, batched decode
//     and prefills of fewer than 16 tokens or rows shorter than 256.
//     Workgroups of slots of 64 lanes; each lane walks its quant groups
//     (or elements) once, loading each activation chunk once for all the
//     rows of its slot and dequantising each group once for all the
//     tokens of the workgroup; its shape (workgroup size, rows a slot,
//     tokens a workgroup, groups a step) is the device's tuning (below).
//     Tiled (matmul_mm.comp) for 16 tokens or more and rows of 256 or
//     more with F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q4_K or Q6_K
//     weights, where the device allows 256 invocations and 17 KiB of
//     shared memory per workgroup: 16 rows × 16 tokens per workgroup, the
//     weight tile dequantised once into shared memory, 8×8 register blocks.
//     Both kernels deal k to 64 lanes and reduce the lane sums in the same
//     order (common/lane.glsl), so a result is bitwise the same from
//     either (batch invariance; kerneltest checks it). Other dtypes
//     (Q5_0, Q5_1, Q2_K, Q3_K, Q5_K) prefill on the matrix-vector kernel.
//     Off with Config.NoTiled or VKLLM_VULKAN_DISABLE=tiled.
//
//   - MatMul _fp16 (half-precision products, float32 sums) for F16, Q8_0,
//     Q4_0, Q4_1, Q4_K and Q6_K weights, matrix-vector and tiled, only
//     when asked for (Config.FP16 or VKLLM_VULKAN_FP16=1) and the device
//     has shaderFloat16; VKLLM_VULKAN_DISABLE=fp16 overrides. They pass
//     kerneltest.MatMul (NMSE ≤ 5e-4; about 1e-6 measured) but not the
//     models' parity tests (1e-4 of the largest logit: on the tiny test
//     models they miss it by up to 12 times), which the default float32
//     variants keep.
//
//   - MatMul on the matrix cores (matmul_coop.comp, coop.go) for F32, F16,
//     BF16, Q8_0, Q4_0, Q4_1, Q4_K and Q6_K weights, only when asked for
//     (Config.CoopMat or VKLLM_VULKAN_COOPMAT=1) and the device has
//     VK_KHR_cooperative_matrix with an f16·f16+f32 shape (16×16×16 on
//     GPUs, 8×8×8 on lavapipe; DeviceInfo.CoopShapes lists what it
//     offers); VKLLM_VULKAN_DISABLE=coopmat overrides. Activations and
//     dequantised weights are rounded to halves into shared memory and
//     multiplied into float32 accumulators, llama.cpp's arithmetic: per
//     element |Δ| ≤ (2^-10 + γ(k))·Σ|xw| from the exact product. Tiles
//     are specialization constants (defaults and sweep candidates in
//     coop.go). When on it runs every MatMul of those dtypes, decode
//     included (a 16-token tile, still bound by the weights' bandwidth),
//     because its sums cannot follow lane.glsl's order: a dst element is
//     the chain of shape-wide products over k in order whatever the tile
//     and the batch, so batch and chunk invariance hold bitwise within
//     the mode (TestCoopInvariance, models.TestVulkanCoopMat). Off by
//     default because the halves miss the models' 1e-4 parity bound
//     (1.0e-3 to 1.5e-3 of the largest logit measured on the tiny
//     models). Its tests need a device with the extension: make
//     test-coopmat runs them on a Mesa 26.1 lavapipe
//     (tools/lavapipe-coopmat.sh); its SPIR-V needs Debian 13's glslc
//     (shaders.Glslc).
//
// On lavapipe the default is the float32, subgroup and tiled variants;
// DeviceInfo says which are in use (Subgroups, Tiled, FP16, CoopMat). There are no
// int8 (shaderInt8) variants yet: shaderInt8 is enabled but unused.
//
// # Tuning
//
// A kernel's speed knobs are specialization constants, never a rebuild:
// tuning.go lists each tuned family (Families: "matvec" for one token,
// "matvec_batch" for more) with its knobs' defaults and the values a
// sweep tries. A tuning key is a family and a weight type
// ("matvec/q4_0"). The knobs in use are the family's defaults, overridden
// by the committed file of the device (kernels/vulkan/tuning/*.json,
// embedded, matched by PCI vendor ID and device name), overridden by
// Config.Tuning (FromEnv: the file VKLLM_VULKAN_TUNING names). Backend.Sweep
// (`vkllm bench --sweep`) times every candidate with GPU timestamps on a
// model's matrices, refuses any whose results are not bitwise the
// default's, and writes the device file. Another kernel gets tuned by
// adding its family to Families and reading b.tune.knobs(key) where it
// dispatches; no knob may change a result (TestSweepCandidates checks
// every candidate bitwise).
//
// Environment: VKLLM_DEVICE picks a device by index or name substring;
// VKLLM_VULKAN_LIB names the loader library; VKLLM_VULKAN_VALIDATION=1
// turns on VK_LAYER_KHRONOS_validation (when installed) and makes Sync
// fail on any validation message; VKLLM_VULKAN_FP16=1,
// VKLLM_VULKAN_COOPMAT=1 and VKLLM_VULKAN_DISABLE (above) choose
// variants; VKLLM_VULKAN_TUNING names a tuning file (a sweep's
// --sweep-out) to use instead of the committed one. They apply where the
// backend is opened by name (kernels.Open("vulkan") or "auto", through
// FromEnv); Open(Config) reads none, so a program that configures the
// backend itself gets exactly what it passes.
package vulkan
