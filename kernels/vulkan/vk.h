// The thin C layer of kernels/vulkan: every Vulkan call goes through here.
// The loader is opened with dlopen and every entry point comes from
// vkGetInstanceProcAddr/vkGetDeviceProcAddr, so the Go binary does not
// link libvulkan. Go passes only integers, C strings and pointers to C
// memory or to Go memory without Go pointers.
#ifndef VKLLM_VK_H
#define VKLLM_VK_H

#include <stddef.h>
#include <stdint.h>

// The Vulkan headers are vendored in include/ (backend.go puts it on the
// include path), so the build never depends on the system's headers.
#define VK_NO_PROTOTYPES
#include <vulkan/vulkan.h>

// Result codes of our own, below Vulkan's (all negative VkResult values are
// above -1000100000 except extension ones, which we never return).
#define VKL_ERR_NO_LOADER (-2000000001)
#define VKL_ERR_NO_SYMBOL (-2000000002)
#define VKL_ERR_NO_DEVICE (-2000000003)
#define VKL_ERR_NO_QUEUE (-2000000004)
#define VKL_ERR_NO_TIMESTAMPS (-2000000005)

// Tags of the profiling log (vkl_prof_*): a label's tag as given to
// vkl_prof_label, with VKL_TS_CONT where the timestamp only continues
// the call in a new command buffer; VKL_TS_END ends a command buffer.
#define VKL_TS_CONT 0x80000000u
#define VKL_TS_END 0xffffffffu

typedef struct vkl_devinfo {
	char name[256];
	int32_t type;  // VkPhysicalDeviceType
	uint32_t vendor, device;
	uint32_t api;
} vkl_devinfo;

#define VKL_MAX_COOP 32

typedef struct vkl_props {
	uint64_t max_storage_range;   // maxStorageBufferRange
	uint64_t max_alloc;           // maxMemoryAllocationSize
	uint64_t min_storage_align;   // minStorageBufferOffsetAlignment
	uint32_t max_wg_count[3];
	uint32_t max_wg_size;
	uint32_t max_shared;
	uint32_t subgroup_size;
	uint32_t subgroup_ops;        // VkSubgroupFeatureFlags in compute
	uint32_t storage16, storage8, float16, int8, float64, int16;
	uint32_t intdot;              // shaderIntegerDotProduct (Vulkan 1.3), enabled
	uint32_t size_control;        // subgroupSizeControl feature
	uint32_t min_subgroup, max_subgroup;
	uint32_t size_control_compute; // requiredSubgroupSizeStages has compute
	uint32_t memory_budget_ext;   // VK_EXT_memory_budget enabled
	uint64_t device_local_heap;   // size of the largest device-local heap
	uint32_t validation;          // the validation layer is on
	uint32_t timestamp_bits;      // the queue's timestampValidBits (0: none)
	float timestamp_period;       // limits.timestampPeriod, ns a tick
	// VK_KHR_cooperative_matrix: enabled (the extension, its feature, the
	// compute stage and vulkanMemoryModel), and the device's shapes
	// (the first VKL_MAX_COOP of vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR).
	uint32_t coopmat;
	uint32_t ncoop;
	struct { uint32_t m, n, k, a, b, c, r, scope; } coop[VKL_MAX_COOP];
} vkl_props;

typedef struct vkl_ctx vkl_ctx;
typedef struct vkl_pipe vkl_pipe;

int vkl_open(const char *lib, int validation, vkl_ctx **out);
int vkl_device_count(vkl_ctx *c);
void vkl_device_info(vkl_ctx *c, int i, vkl_devinfo *info);
int vkl_device_create(vkl_ctx *c, int i, vkl_props *props);
void vkl_close(vkl_ctx *c);
// How long a fence wait may take (default 120 s) before it fails with
// VK_TIMEOUT and the device is taken for hung.
void vkl_set_fence_timeout(vkl_ctx *c, uint64_t ns);
// Whether a fence wait timed out (the device is taken for hung).
int vkl_hung(vkl_ctx *c);

// Messages of the validation layer (errors and warnings) seen so far:
// vkl_messages returns how many, and sets *ndistinct to how many distinct
// ones (by message ID and text, the first VKL_MAX_MSGS) are kept;
// vkl_message copies the i-th of those (its text truncated to n bytes)
// and its message ID, and returns how often it came.
#define VKL_MAX_MSGS 16
int vkl_messages(vkl_ctx *c, int *ndistinct);
int vkl_message(vkl_ctx *c, int i, char *text, int n, int32_t *id);

void vkl_memory_budget(vkl_ctx *c, uint64_t *used, uint64_t *budget);
// Device i's memory before it is opened: its largest device-local heap,
// and VK_EXT_memory_budget's usage and budget summed over those heaps
// (0 where the device lacks the extension).
void vkl_device_memory(vkl_ctx *c, int i, uint64_t *heap, uint64_t *used, uint64_t *budget);

// kind 0: device-local; 1: host-visible, coherent, mapped.
int vkl_buffer(vkl_ctx *c, uint64_t size, int kind, uint64_t *buf, uint64_t *mem, void **mapped);
void vkl_buffer_free(vkl_ctx *c, uint64_t buf, uint64_t mem);
// The memory type vkl_buffer takes for a buffer of the given kind, and
// its heap (the probe's report).
typedef struct vkl_memkind {
	uint32_t type, type_bits, props; // index, memoryTypeBits of a buffer, VkMemoryPropertyFlags
	uint32_t heap, heap_flags;       // index, VkMemoryHeapFlags
	uint64_t heap_size;
} vkl_memkind;
int vkl_memory_kind(vkl_ctx *c, int kind, vkl_memkind *out);

int vkl_pipeline(vkl_ctx *c, const uint32_t *code, uint64_t size, int nbind, int pcsize,
	const uint32_t *spec, int nspec, uint32_t subgroup_size, vkl_pipe **out);
void vkl_pipeline_free(vkl_ctx *c, vkl_pipe *p);

// Descriptor sets. vkl_set writes a set for p's layout binding bufs[k]
// (offs[k], ranges[k]) at binding k; it stays valid across submits until
// vkl_sets_reset, which the caller runs only when no recorded or
// submitted work uses a set (after vkl_submit).
int vkl_set(vkl_ctx *c, vkl_pipe *p, const uint64_t *bufs, const uint64_t *offs, const uint64_t *ranges, uint64_t *set);
void vkl_sets_reset(vkl_ctx *c);

// Recording. The caller orders commands with vkl_barrier (a full
// compute/transfer memory barrier) where one depends on another, or with
// vkl_dispatch's with_barrier (the same barrier before the dispatch, in
// the same call).
int vkl_dispatch(vkl_ctx *c, vkl_pipe *p, uint64_t set, int with_barrier, const void *push,
	uint32_t gx, uint32_t gy, uint32_t gz);
// vkl_dispatch's arguments, nothing done (benchmarks: the cost of the call).
int vkl_dispatch_nop(vkl_ctx *c, vkl_pipe *p, uint64_t set, int with_barrier, const void *push,
	uint32_t gx, uint32_t gy, uint32_t gz);
int vkl_copy(vkl_ctx *c, uint64_t src, uint64_t srcoff, uint64_t dst, uint64_t dstoff, uint64_t size);
int vkl_fill(vkl_ctx *c, uint64_t dst, uint64_t off, uint64_t size);
int vkl_barrier(vkl_ctx *c);
// Submit what was recorded and wait (for the pieces too); returns the
// first failure.
int vkl_submit(vkl_ctx *c);
// Submit what was recorded so far without waiting, so the device starts
// on it while the host records the rest; the next command starts a new
// command buffer (of NSLOT, waiting for the oldest when all are in
// flight). Commands after it are ordered against those before by
// vkl_barrier as within one command buffer (a barrier's first scope is
// every command submitted earlier to the queue). Does nothing while
// profiling.
int vkl_piece(vkl_ctx *c);
uint64_t vkl_pieces(vkl_ctx *c);
// Drop what was recorded since the last submit or piece, unexecuted
// (benchmarks of recording alone; nothing may be pending before it).
int vkl_discard(vkl_ctx *c);
// Pipeline and descriptor set binds vkl_dispatch left out so far (the
// same as the last one in the command buffer; for tests).
uint64_t vkl_binds_skipped(vkl_ctx *c);

// Kept recordings (record once, replay). vkl_capture_begin submits what
// was recorded so far as a piece and records what follows into a
// command buffer of its own, after a barrier, until vkl_capture_end,
// which submits it without waiting; no piece, submit or copy may come
// in between. vkl_replay submits what was recorded since, then the
// graph again (waiting for its previous run first). vkl_submit waits
// for the last graph submitted too. vkl_graph_free waits for a graph and
// frees it; the caller frees every graph before the descriptor sets or
// buffers it binds go, and before vkl_close.
typedef struct vkl_graph vkl_graph;
int vkl_capture_begin(vkl_ctx *c, vkl_graph **out);
int vkl_capture_end(vkl_ctx *c);
int vkl_replay(vkl_ctx *c, vkl_graph *g);
void vkl_graph_free(vkl_ctx *c, vkl_graph *g);
// How many submits happened (for tests).
uint64_t vkl_submits(vkl_ctx *c);

// Timestamp profiling. While on (vkl_prof_start to vkl_prof_stop), the
// first command recorded after vkl_prof_label(tag), and the first of each
// command buffer, is preceded by a timestamp tagged tag (bottom of pipe:
// written once all earlier work is done), and the end of each command
// buffer by one tagged VKL_TS_END; after the fence, vkl_submit appends
// them to a log, which vkl_prof_log reads (valid until the next call).
// A command buffer that fills the query pool is submitted early. Off,
// nothing is written and no query pool exists.
int vkl_prof_start(vkl_ctx *c);
void vkl_prof_label(vkl_ctx *c, uint32_t tag);
void vkl_prof_stop(vkl_ctx *c);
size_t vkl_prof_log(vkl_ctx *c, const uint32_t **tags, const uint64_t **vals);
uint64_t vkl_prof_written(vkl_ctx *c);
int vkl_prof_pool(vkl_ctx *c); // the query pool exists

#endif
