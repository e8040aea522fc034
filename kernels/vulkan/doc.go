// Package vulkan is the Vulkan compute backend of vkllm, registered as
// "vulkan" with kernels.Register.
//
// Layout: every tensor is row-major in device-local memory, sub-allocated
// from large blocks; an F32 or I32 tensor holds 4-byte elements, an F16 one
// (a KV cache) 2-byte IEEE halves, and an uploaded weight keeps the bytes
// of its file (ggml's block layouts for quantised types), or for Q8_0,
// Q4_0, Q4_1 and Q6_K where the device's tuning repacks them (below) the
// same bytes moved within each run of 8 blocks of a row, the 8 quant
// arrays (16-byte aligned) before the 8 d's (layout.go); either is split by
// rows into several parts when it exceeds maxStorageBufferRange. Ops are
// recorded into command buffers with a barrier only before a command that
// depends on an earlier one (hazard.go). A step is submitted in pieces
// without waiting (after 32 dispatches, then every 128) so that the
// device starts while the host records, and the host waits only when it
// needs data (GetF32, GetI32, Sync).
//
// Device choice: Config.Device (VKLLM_DEVICE) names a device by index or
// name; otherwise Open takes, of the best type present (discrete, then
// integrated, virtual, CPU), the device with the most free memory
// (VK_EXT_memory_budget's budget less usage, else the heap size) that has
// Config.Need bytes free (kernels.Options.Need: models pass their
// weights' size), and fails with a *FitError (errcode OOM_VRAM) saying
// what each device has free when none has.
//
// Host cost of a dispatch: one cgo call and no Go allocation once its
// pipeline and descriptor set exist, and a whole decode step records
// without one (variant names and matrix-vector tunings are worked out
// once per dtype: TestStepAllocs). Descriptor sets are cached by
// pipeline and bound (buffer, offset, range), across submits: a
// Context's tensors are allocated once and a view binds its whole tensor,
// so every step reuses the same sets whatever its batch size or width
// (the cache starts over past 16384 sets, and when a block of memory is
// freed). vkl_dispatch binds only the pipeline or set that differs from
// the last one bound in its command buffer (a layer's q, k and v
// MatMuls, and their bias Adds, bind one pipeline each).
//
// What that costs: BenchmarkRecordStep records a decode step of a 0.5B
// (Qwen2.5, 340 dispatches) and an 8B (Llama 3.1, 360) shape without
// executing it, and splits a dispatch into the Go side (op checks,
// variant, pipeline and set lookups, hazards, push constants), the cgo
// call, and the driver. On lavapipe the Go side is about a third, the
// cgo call under a tenth and lavapipe (which copies each command into a
// list of its own) the rest: about 450 ns a dispatch, 150-170 µs a step
// (benchmarks/README.md has the numbers). A GPU driver records faster
// than lavapipe, but the Go side alone, about 50 µs a step, is most of
// the 75 µs that 5 % of a 1.5 ms 0.5B step allows (0.25 µs a
// dispatch): recording every dispatch every step cannot get there, and
// pieces hide it only while the device has work queued. Hence replay.
//
// Record once, replay (kernels.Replayer, replay.go): the decoder writes
// a step's inputs (token ids, positions, cells, visible lists, the rows
// of logits) into its tensors, then either replays the recording of an
// earlier step with the same key (tokens, list widths, rows of logits:
// everything the ops' shapes, push constants and grids follow from) or
// records the ops between BeginCapture and EndCapture into a command
// buffer of their own, kept (at most 32; the oldest goes). A replay is
// one submit of that buffer after the piece holding the inputs' copies;
// it starts with a barrier, and the next command recorded after it gets
// one. Only what is in tensors changes between replays, so the decoder
// lays the lists out at a width rounded up to 64 entries (at most the
// Context's length): the kernels find each list's length from its -1s
// and cut it into chunks and segments by that length alone, and the
// segment count of the padded width is the same, so a list's results
// are the same bits at either width, while a decode step's key repeats
// for 64 steps (models.TestVulkanReplay checks every logit with replay
// on and off). A capture ends unkept (its ops still run) at anything but
// a dispatch or fill (a copy to or from the host, a submit, a profile
// started); any Free and the descriptor set cache starting over drop
// every recording. Steps with LoRA adapters or embeddings asked for are
// recorded as usual. Off with Config.NoReplay or
// VKLLM_VULKAN_DISABLE=replay (DeviceInfo.Replay), and while profiling
// (so the profile's "not GPU time" is that of recorded steps). A
// replayed step costs the host its inputs' copies and two submits
// (BenchmarkReplayStep: about a tenth of recording it, on lavapipe).
// llama.cpp's Vulkan prototype of graph reuse (ggml-org/llama.cpp#24720)
// found little gain where submits in pieces already overlap; vLLM
// captures CUDA graphs per padded batch size over static input buffers,
// the same shape.
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
// staging arena; hazard.go places barriers; dispatch.go records a
// dispatch (pipeline, descriptor set, push constants); ops.go records the
// small ops, ops_matmul.go GetRows, MatMul and GateUpSwiGLU,
// ops_attention.go Attention and its scratch; record.go memoises what they work out per dtype and holds the
// recording benchmarks' hooks; replay.go keeps and replays recordings;
// push.go mirrors the push constants; profile.go reads GPU timestamps;
// tuning.go holds the kernels' tuning and sweep.go the sweep that makes it;
// coop.go picks the cooperative-matrix shape and tiles; int8.go records
// the int8 mode's MatMul; layout.go repacks weights.
// Adding an op touches four places: its .comp in shaders/, an entry in
// shaders.Variants, its method in ops*.go (with a push struct in push.go),
// and a kerneltest case.
//
// Profiling (kernels.OpProfiler: StartProfile, ProfileOp, StopProfile)
// writes GPU timestamps into the same command buffers, at the first
// command of each labelled op and at the end of each command buffer, and
// reads them after the submission's fence: no submit or wait is added
// (a command buffer that fills the 4096-query pool is submitted early,
// as one is when the descriptor set cache starts over), and a step is
// not submitted in pieces while profiling. Off, nothing is written and
// no query pool exists.
//
// Attention has two kernels that give a token the same bits. A batch of
// fewer than AttentionTuning.PrefillMin (32) tokens runs the decode kernel
// (shaders/attention.comp): one workgroup per token, KV head, group of
// its query heads (one K/V load serves the group) and segment of the
// token's list. The list is cut into chunks of 64 entries by rank and the
// chunks into at most AttentionTuning.Segments (32) segments, a cut that
// depends on the list's length alone, never on the batch or on where the
// cells sit; the segments' partial softmax states go to a scratch buffer
// of the backend's and attention_combine.comp merges them in order.
// ReserveAttention (called by models.NewContext) allocates the scratch
// once, at most Config.AttentionScratch bytes (64 MiB) or one token's
// segments, and a batch that does not fit runs in chunks of tokens, so
// that Attention allocates nothing once it is reserved. A larger batch
// runs the prefill kernel (attention_prefill.comp, flash attention):
// tiles of query rows against chunks of keys with an online softmax,
// each row cutting and merging its segments in registers, with no score
// matrix and no scratch (memory independent of the prompt's length);
// only the loads of K and V are shared across the tile, through shared
// memory. Every operation of a query's arithmetic is the same in both
// (shaders/common/attention.glsl), so a token's result does not depend on
// the batch, the chunking of a prompt or the placement of its cells
// (kerneltest.AttentionInvariance). AttentionTuning's other knobs (heads
// per workgroup, query rows per tile, tile sizes, workgroup size) move
// work between invocations without changing a bit. Both kernels read K
// and V a chunk at a time into shared memory, with 4-element loads (the
// _v4 variants) where the head dim is a multiple of 4. On llvmpipe, which
// leaves a shader's loops after 65535 iterations in all, a batch whose
// walk would pass that runs the decode kernel instead.
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
//   - RMSNorm: one workgroup per row (256 invocations from rows of 2048,
//     else 64), vec4 loads where the row length is a multiple of 4; its
//     summation order depends on the row length and the device only.
//     AddRMSNorm (kernels.AddRMSNormer, the decoder's residual add and
//     the next norm) is the same kernel with the add in its first pass:
//     bitwise Add then RMSNorm.
//
//   - RoPEKVWrite (kernels.RoPEKVWriter: a layer's RoPE of q and k and
//     the KV writes of k and v) is one dispatch of rope.comp, bitwise
//     the four ops.
//
//   - GateUpSwiGLU (kernels.GateUpSwiGLUer: an FFN's gate and up MatMuls
//     and their SwiGLU) is one dispatch of the matrix-vector kernel's
//     _swiglu variants (matmul.comp's GATEUP: both matrices' sums per
//     lane, reduced as MatMul's, then common/swiglu.glsl's steps, which
//     binary.comp's SwiGLU shares): bitwise the three ops, with the
//     matvec tuning of the gate's dtype and no gate/up round trip through
//     memory. Prefill on the tiled or cooperative-matrix kernel, gate and
//     up of different dtypes or parts, and tunings past maxSums sums a
//     lane keep the three ops (the decoder's fallback); so do LoRA
//     adapters, which add to gate and up before the SwiGLU.
//
//   - MatMul on the matrix cores (matmul_coop.comp, coop.go) for F16,
//     BF16, Q8_0, Q4_0, Q4_1, Q4_K and Q6_K weights: the default where
//     the device has VK_KHR_cooperative_matrix with an f16·f16+f32 shape
//     (16×16×16 on GPUs, 8×8×8 on lavapipe; DeviceInfo.CoopShapes lists
//     what it offers), the exact float32 kernels above with
//     Config.NoCoopMat or VKLLM_VULKAN_DISABLE=coopmat. Activations and
//     dequantised weights are rounded to halves into shared memory and
//     multiplied into float32 accumulators, llama.cpp's arithmetic: per
//     element |Δ| ≤ (2^-10 + γ(k))·Σ|xw| from the exact product. Tiles
//     are the device's tuning (Families "coopmat", "coopmat_small").
//     When on it runs every MatMul of those dtypes, decode included (a
//     16-token tile, still bound by the weights' bandwidth), because its
//     sums cannot follow lane.glsl's order: a dst element is the chain
//     of shape-wide products over k in order whatever the tile and the
//     batch, so batch and chunk invariance hold bitwise within the mode
//     (TestCoopInvariance, models.TestVulkanCoopMat). The halves miss
//     the exact kernels' 1e-4 parity bound (0.8e-3 to 1.5e-3 of the
//     largest logit on the tiny models) but stay within llama.cpp's own
//     distance from transformers on the same weights, which is what
//     models.TestVulkanCoopMat holds them to (tools/coopmat_distance.py
//     measures both). F32 weights stay on the exact kernels (llama.cpp
//     keeps them in float32). Its tests need a device with the
//     extension: make test-coopmat runs them on a Mesa 26.1 lavapipe
//     (tools/lavapipe-coopmat.sh); its SPIR-V needs Debian 13's glslc
//     (shaders.Glslc).
//
//   - MatMul _int8 (int8.go, matmul.comp's INT8, common/int8.glsl) for
//     Q8_0, Q4_0, Q4_1, Q4_K, Q5_K and Q6_K weights, only when asked for
//     (Config.Int8 or VKLLM_VULKAN_INT8=1; VKLLM_VULKAN_DISABLE=int8
//     overrides): each MatMul's input is quantised by quantize_q8.comp
//     (blocks of 32, d = max|x|/127, halves away from zero, and the
//     block's Σq: kerneltest.QuantizeQ8's rule, the CPU fast path's) into
//     a scratch of the backend's, and the weights' 4/5/6/8-bit values
//     are multiplied with it by integer dots (dotPacked4x8AccSatEXT in the
//     _int8dot variants where the device has shaderIntegerDotProduct,
//     plain int arithmetic in _int8: the same integers), each group's
//     integer sum made float by one expression and added to its lane's
//     sum in lane.glsl's order. Like the cooperative-matrix kernel it is a
//     mode: it runs every MatMul of those dtypes, decode and prefill
//     alike (prefill on the same matrix-vector kernel, tuning
//     "matvec_int8_batch": there is no tiled int8 kernel yet), so batch
//     and chunk invariance hold bitwise within it (TestInt8Invariance,
//     models.TestVulkanInt8); GateUpSwiGLU declines those dtypes (MatMul,
//     MatMul, SwiGLU run). It holds kerneltest.MatMulQ8's quantised
//     arithmetic at LimitF32Dot (TestInt8MatMul) but not the models'
//     parity (2.4e-2 to 3.4e-2 of the largest logit on the tiny quantised
//     models, the CPU fast path's distance to three digits, llama.cpp's
//     magnitude on the same files), and is off by default until a GPU
//     measurement (the sweep's matvec_int8 families) decides.
//
//   - Repacked weights (layout.go, shaders/common/weights.glsl's REPACK,
//     specialization constant 15 of every kernel that reads weights:
//     MatMul's three kernels, GateUpSwiGLU, GetRows) for Q8_0, Q4_0,
//     Q4_1 and Q6_K weights whose rows are whole runs (a multiple of 256
//     elements, 2048 for Q6_K), where the device's tuning says so (key
//     "layout/<dtype>", knob "repack"; 0, the file layout, until a
//     device's sweep measures both): a lane loads a group's quants with
//     16-byte loads (one a Q4 group, two a Q8_0 one, one of ql and one
//     of qh a Q6_K group of 16) and its scales with one aligned word
//     instead of 2-byte aligned words and shifts. Results are bitwise
//     the file layout's (TestRepack, models.TestVulkanRepack); GetF32 of
//     a weight unpacks it. The int8 mode keeps the file layout for its
//     dtypes (int8.glsl reads it). Off with Config.NoRepack or
//     VKLLM_VULKAN_DISABLE=repack; DeviceInfo.Repacked lists the dtypes
//     repacked.
//
// On lavapipe the default is the float32, subgroup and tiled variants
// (Debian 12's Mesa has no cooperative matrices); DeviceInfo says which
// are in use (Subgroups, Tiled, FP16, CoopMat,
// Int8MatMul, and IntegerDot for the device's integer dot products).
// shaderInt8 is enabled but unused: the int8 kernels pack bytes in
// 32-bit words.
//
// # Tuning
//
// A kernel's speed knobs are specialization constants, never a rebuild:
// tuning.go lists each tuned family (Families: "matvec" for one token,
// "matvec_batch" for more, "matvec_int8" and "matvec_int8_batch" the
// same for the int8 mode's kernel, "layout" for the weights' layout)
// with its knobs' defaults and the values a sweep tries. A tuning key is
// a family and a weight type ("matvec/q4_0"). The knobs in use are the
// family's defaults, overridden
// by the committed file of the device (kernels/vulkan/tuning/*.json,
// embedded, matched by PCI vendor ID and device name), overridden by
// Config.Tuning (FromEnv: the file VKLLM_VULKAN_TUNING names). Backend.Sweep
// (`vkllm bench --sweep`) times every candidate with GPU timestamps on a
// model's matrices, refuses any whose results are not bitwise its
// family's default's, and writes the device file; the int8 families are
// timed (their quantising dispatch included) for the Int8Types whether or
// not the mode is on, so one run on a GPU prints both arithmetics side by
// side and records the best of each, and each repackable dtype's matvec
// and tiled prefill are timed in both layouts ("layout", the repacked
// results bitwise the file layout's). Another kernel gets tuned by
// adding its family to Families and reading b.tune.knobs(key) where it
// dispatches; no knob may change a result (TestSweepCandidates checks
// every candidate bitwise). The exception is attention: AttentionTuning's
// fields come from the keys "attention" (decode: segs, heads, wgs, tile)
// and "attention_prefill" (rows, wg, min) of the same tuning, under
// Config.Attention's non-zero fields (which win); "segs" moves the cut of
// a list into segments and so changes results (identically in decode and
// prefill; every value keeps the invariances above). Sweep times the
// "attention" candidates on decode calls (SweepOptions.Attention: one
// token and 4, lists of 256 and 4096 cells, a model's GQA shape), checks
// each against float64 sums (kerneltest.LimitF32Dot) and those with the
// default's segs bitwise against the default, and chooses by time; the
// "attention_prefill" ones likewise on prompts of 16, 48 and 512 tokens,
// each bitwise against the default. The cooperative-matrix MatMul's
// tiles are the families "coopmat" (calls of at least coopmat_small's
// "min" tokens, timed on 512-token calls of the model's matrices) and
// "coopmat_small" (fewer tokens, and "min" itself, timed on calls of 1,
// 16 and 48 tokens), per weight type, every candidate bitwise against
// the default and left out where its tile does not fit the device; on a
// device whose MatMul does not run that kernel Sweep skips them. A
// sweep on a lent GPU must end in time: Sweep checks its context and
// SweepOptions.Deadline before every family and every candidate's run,
// marks what it cut (SweepRow.Cut, SweepResult.Cut) and chooses among
// what finished; a candidate whose first timed run is past
// SweepOptions.Slow (or SlowFactor × the default's) is marked slow and not
// repeated; every wait for the device gives up after Config.FenceTimeout.
//
// Backend.Probe (`vkllm bench --probe`, probe.go) is a diagnostic for a
// short GPU lease, no tuning: streaming reads of device memory and of an
// uploaded weight, MatMul and matmul.comp at a few knob points on decode
// shapes, matmul.comp's ablations (shaders.ProbeAblations, variants no op
// runs) and the tiled and cooperative-matrix prefill, each checked, within
// a time budget; benchmarks/gpu/README.md reads its rows.
//
// Environment: VKLLM_DEVICE picks a device by index or name substring;
// VKLLM_VULKAN_LIB names the loader library; VKLLM_VULKAN_VALIDATION=1
// turns on VK_LAYER_KHRONOS_validation (when installed) and makes Sync
// fail on any validation message but the layer's notes on its own
// coverage (Backend.ValidationNotes); VKLLM_VULKAN_FP16=1,
// VKLLM_VULKAN_INT8=1 and VKLLM_VULKAN_DISABLE (above; also "replay")
// choose variants; VKLLM_VULKAN_TUNING names a tuning file (a sweep's
// --sweep-out) to use instead of the committed one. They apply where the
// backend is opened by name (kernels.Open("vulkan") or "auto", through
// FromEnv); Open(Config) reads none, so a program that configures the
// backend itself gets exactly what it passes.
package vulkan
