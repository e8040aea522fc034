//go:build cgo

#include "vk.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// Descriptor sets per pool of the set cache (vkl_set); a full pool adds one.
#define POOL_SETS 1024
// Timestamps per command buffer when profiling; one more would submit.
#define POOL_QUERIES 4096
#define MAX_BIND 8
// Command buffers in flight at once (vkl_piece).
#define NSLOT 4

struct vkl_pipe {
	VkDescriptorSetLayout dsl;
	VkPipelineLayout layout;
	VkPipeline pipe;
	int nbind, pcsize;
};

// A kept recording (vkl_capture_begin): its own command buffer, submitted
// again by vkl_replay; pending until its fence is waited on.
struct vkl_graph {
	VkCommandPool pool;
	VkCommandBuffer cb;
	VkFence fence;
	int pending;
};

struct vkl_ctx {
	void *lib;
	PFN_vkGetInstanceProcAddr gipa;
	VkInstance inst;
	VkDebugUtilsMessengerEXT messenger;
	int validation;
	uint32_t api;
	// The layer's messages (errors and warnings): nmsg in all, the first
	// VKL_MAX_MSGS distinct ones (by ID and text) with their counts.
	int nmsg, ndistinct;
	struct vkl_msg {
		int32_t id;
		uint32_t count;
		char text[1024];
	} msgs[VKL_MAX_MSGS];

	uint32_t nphys;
	VkPhysicalDevice *phys;
	VkPhysicalDevice pd;
	VkDevice dev;
	VkQueue queue;
	uint32_t qfam;
	// Command buffers: NSLOT of each; cb, cpool and fence are those of the
	// slot being recorded. vkl_piece submits a slot without waiting
	// (busy until its fence is waited on) and moves to the next.
	VkCommandPool cpools[NSLOT];
	VkCommandBuffer cbs[NSLOT];
	VkFence fences[NSLOT];
	int busy[NSLOT];
	int slot;
	VkCommandPool cpool;
	VkCommandBuffer cb;
	VkFence fence;
	uint64_t pieces;
	// A fence wait gives up after fence_timeout ns (vkl_set_fence_timeout)
	// with VK_TIMEOUT; the device is then taken for hung: no wait is tried
	// again, and vkl_close leaves its objects to the process's exit.
	uint64_t fence_timeout;
	int hung;
	// The set cache's pools: sets live until vkl_sets_reset, across
	// submits; pools[0..npools) exist, cur is the one allocated from.
	VkDescriptorPool *pools;
	int npools, cur;
	int recording;
	// The pipeline and descriptor set bound last in the command buffer
	// being recorded (vkl_dispatch binds only what changed; begin clears
	// them).
	vkl_pipe *bound_pipe;
	uint64_t bound_set;
	uint64_t binds_skipped;
	// The recording being captured (its command buffer is cb meanwhile),
	// and the last one submitted (vkl_submit waits for it).
	vkl_graph *capturing, *inflight;
	uint64_t submits;
	int budget_ext;
	VkPhysicalDeviceMemoryProperties memprops;

	// Timestamp profiling (vkl_prof_*): off unless prof is set; the pool
	// is created by the first vkl_prof_start.
	uint32_t ts_bits;     // the queue family's timestampValidBits
	VkQueryPool qpool;
	int prof;             // timestamps are being written
	int armed;            // the next command starts a new call of tag
	uint32_t tag;         // the label of the commands recorded now
	uint32_t nq;          // queries written in the command buffer
	uint32_t *qtags;      // (POOL_QUERIES) their tags
	uint32_t *ltags;      // results of submitted command buffers:
	uint64_t *lvals;      // tags and raw timestamps, nlog of cap
	size_t nlog, caplog;
	uint64_t written;     // timestamps written so far (for tests)

	// instance-level
	PFN_vkDestroyInstance DestroyInstance;
	PFN_vkEnumeratePhysicalDevices EnumeratePhysicalDevices;
	PFN_vkGetPhysicalDeviceProperties GetPhysicalDeviceProperties;
	PFN_vkGetPhysicalDeviceProperties2 GetPhysicalDeviceProperties2;
	PFN_vkGetPhysicalDeviceFeatures2 GetPhysicalDeviceFeatures2;
	PFN_vkGetPhysicalDeviceQueueFamilyProperties GetPhysicalDeviceQueueFamilyProperties;
	PFN_vkGetPhysicalDeviceMemoryProperties GetPhysicalDeviceMemoryProperties;
	PFN_vkGetPhysicalDeviceMemoryProperties2 GetPhysicalDeviceMemoryProperties2;
	PFN_vkEnumerateDeviceExtensionProperties EnumerateDeviceExtensionProperties;
	PFN_vkCreateDevice CreateDevice;
	PFN_vkGetDeviceProcAddr GetDeviceProcAddr;
	PFN_vkDestroyDebugUtilsMessengerEXT DestroyDebugUtilsMessengerEXT;

	// device-level
	PFN_vkDestroyDevice DestroyDevice;
	PFN_vkGetDeviceQueue GetDeviceQueue;
	PFN_vkDeviceWaitIdle DeviceWaitIdle;
	PFN_vkCreateBuffer CreateBuffer;
	PFN_vkDestroyBuffer DestroyBuffer;
	PFN_vkGetBufferMemoryRequirements GetBufferMemoryRequirements;
	PFN_vkAllocateMemory AllocateMemory;
	PFN_vkFreeMemory FreeMemory;
	PFN_vkBindBufferMemory BindBufferMemory;
	PFN_vkMapMemory MapMemory;
	PFN_vkCreateShaderModule CreateShaderModule;
	PFN_vkDestroyShaderModule DestroyShaderModule;
	PFN_vkCreateDescriptorSetLayout CreateDescriptorSetLayout;
	PFN_vkDestroyDescriptorSetLayout DestroyDescriptorSetLayout;
	PFN_vkCreatePipelineLayout CreatePipelineLayout;
	PFN_vkDestroyPipelineLayout DestroyPipelineLayout;
	PFN_vkCreateComputePipelines CreateComputePipelines;
	PFN_vkDestroyPipeline DestroyPipeline;
	PFN_vkCreateDescriptorPool CreateDescriptorPool;
	PFN_vkDestroyDescriptorPool DestroyDescriptorPool;
	PFN_vkResetDescriptorPool ResetDescriptorPool;
	PFN_vkAllocateDescriptorSets AllocateDescriptorSets;
	PFN_vkUpdateDescriptorSets UpdateDescriptorSets;
	PFN_vkCreateCommandPool CreateCommandPool;
	PFN_vkDestroyCommandPool DestroyCommandPool;
	PFN_vkResetCommandPool ResetCommandPool;
	PFN_vkAllocateCommandBuffers AllocateCommandBuffers;
	PFN_vkBeginCommandBuffer BeginCommandBuffer;
	PFN_vkEndCommandBuffer EndCommandBuffer;
	PFN_vkCmdBindPipeline CmdBindPipeline;
	PFN_vkCmdBindDescriptorSets CmdBindDescriptorSets;
	PFN_vkCmdPushConstants CmdPushConstants;
	PFN_vkCmdDispatch CmdDispatch;
	PFN_vkCmdPipelineBarrier CmdPipelineBarrier;
	PFN_vkCmdCopyBuffer CmdCopyBuffer;
	PFN_vkCmdFillBuffer CmdFillBuffer;
	PFN_vkCreateFence CreateFence;
	PFN_vkDestroyFence DestroyFence;
	PFN_vkResetFences ResetFences;
	PFN_vkWaitForFences WaitForFences;
	PFN_vkQueueSubmit QueueSubmit;
	PFN_vkCreateQueryPool CreateQueryPool;
	PFN_vkDestroyQueryPool DestroyQueryPool;
	PFN_vkCmdResetQueryPool CmdResetQueryPool;
	PFN_vkCmdWriteTimestamp CmdWriteTimestamp;
	PFN_vkGetQueryPoolResults GetQueryPoolResults;
};

static VKAPI_ATTR VkBool32 VKAPI_CALL debug_cb(VkDebugUtilsMessageSeverityFlagBitsEXT sev,
	VkDebugUtilsMessageTypeFlagsEXT type, const VkDebugUtilsMessengerCallbackDataEXT *data, void *user) {
	(void)type;
	vkl_ctx *c = user;
	if (!(sev & (VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT))) return VK_FALSE;
	c->nmsg++;
	const char *text = data && data->pMessage ? data->pMessage : "(no message)";
	int32_t id = data ? data->messageIdNumber : 0;
	for (int i = 0; i < c->ndistinct; i++)
		if (c->msgs[i].id == id && !strncmp(c->msgs[i].text, text, sizeof c->msgs[i].text - 1)) {
			c->msgs[i].count++;
			return VK_FALSE;
		}
	if (c->ndistinct < VKL_MAX_MSGS) {
		struct vkl_msg *m = &c->msgs[c->ndistinct++];
		m->id = id;
		m->count = 1;
		snprintf(m->text, sizeof m->text, "%s", text);
	}
	return VK_FALSE;
}

#define IPROC(name) (c->name = (PFN_vk##name)c->gipa(c->inst, "vk" #name))

int vkl_open(const char *lib, int validation, vkl_ctx **out) {
	*out = NULL;
	void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
	if (!h) return VKL_ERR_NO_LOADER;
	vkl_ctx *c = calloc(1, sizeof *c);
	c->lib = h;
	c->gipa = (PFN_vkGetInstanceProcAddr)dlsym(h, "vkGetInstanceProcAddr");
	if (!c->gipa) {
		dlclose(h);
		free(c);
		return VKL_ERR_NO_SYMBOL;
	}
	PFN_vkCreateInstance CreateInstance = (PFN_vkCreateInstance)c->gipa(NULL, "vkCreateInstance");
	PFN_vkEnumerateInstanceLayerProperties EnumLayers =
		(PFN_vkEnumerateInstanceLayerProperties)c->gipa(NULL, "vkEnumerateInstanceLayerProperties");
	PFN_vkEnumerateInstanceExtensionProperties EnumExts =
		(PFN_vkEnumerateInstanceExtensionProperties)c->gipa(NULL, "vkEnumerateInstanceExtensionProperties");
	if (!CreateInstance || !EnumLayers || !EnumExts) {
		dlclose(h);
		free(c);
		return VKL_ERR_NO_SYMBOL;
	}

	const char *layers[1];
	const char *exts[1];
	uint32_t nl = 0, ne = 0;
	if (validation) {
		uint32_t n = 0;
		EnumLayers(&n, NULL);
		VkLayerProperties *lp = calloc(n + 1, sizeof *lp);
		EnumLayers(&n, lp);
		for (uint32_t i = 0; i < n; i++)
			if (!strcmp(lp[i].layerName, "VK_LAYER_KHRONOS_validation")) layers[nl++] = "VK_LAYER_KHRONOS_validation";
		free(lp);
		n = 0;
		EnumExts(NULL, &n, NULL);
		VkExtensionProperties *ep = calloc(n + 1, sizeof *ep);
		EnumExts(NULL, &n, ep);
		for (uint32_t i = 0; i < n; i++)
			if (!strcmp(ep[i].extensionName, VK_EXT_DEBUG_UTILS_EXTENSION_NAME)) exts[ne++] = VK_EXT_DEBUG_UTILS_EXTENSION_NAME;
		free(ep);
	}
	c->validation = nl > 0 && ne > 0;

	VkApplicationInfo app = {VK_STRUCTURE_TYPE_APPLICATION_INFO};
	app.pApplicationName = "vkllm";
	app.pEngineName = "vkllm";
	PFN_vkEnumerateInstanceVersion EnumVersion = (PFN_vkEnumerateInstanceVersion)c->gipa(NULL, "vkEnumerateInstanceVersion");
	uint32_t iv = VK_API_VERSION_1_0;
	if (EnumVersion) EnumVersion(&iv);
	c->api = iv >= VK_API_VERSION_1_3 ? VK_API_VERSION_1_3 : VK_API_VERSION_1_2;
	app.apiVersion = c->api;
	VkDebugUtilsMessengerCreateInfoEXT dci = {VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT};
	dci.messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
	dci.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
		VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT;
	dci.pfnUserCallback = debug_cb;
	dci.pUserData = c;
	VkInstanceCreateInfo ici = {VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
	ici.pApplicationInfo = &app;
	// Synchronization validation checks the barriers between dispatches.
	VkValidationFeatureEnableEXT vfe[] = {VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT};
	VkValidationFeaturesEXT vf = {VK_STRUCTURE_TYPE_VALIDATION_FEATURES_EXT};
	vf.enabledValidationFeatureCount = 1;
	vf.pEnabledValidationFeatures = vfe;
	if (c->validation) {
		vf.pNext = &dci;
		ici.enabledLayerCount = nl;
		ici.ppEnabledLayerNames = layers;
		ici.enabledExtensionCount = ne;
		ici.ppEnabledExtensionNames = exts;
		ici.pNext = &vf;
	}
	VkResult r = CreateInstance(&ici, NULL, &c->inst);
	if (r != VK_SUCCESS) {
		dlclose(h);
		free(c);
		return r;
	}
	IPROC(DestroyInstance);
	IPROC(EnumeratePhysicalDevices);
	IPROC(GetPhysicalDeviceProperties);
	IPROC(GetPhysicalDeviceProperties2);
	IPROC(GetPhysicalDeviceFeatures2);
	IPROC(GetPhysicalDeviceQueueFamilyProperties);
	IPROC(GetPhysicalDeviceMemoryProperties);
	IPROC(GetPhysicalDeviceMemoryProperties2);
	IPROC(EnumerateDeviceExtensionProperties);
	IPROC(CreateDevice);
	IPROC(GetDeviceProcAddr);
	if (c->validation) {
		PFN_vkCreateDebugUtilsMessengerEXT create =
			(PFN_vkCreateDebugUtilsMessengerEXT)c->gipa(c->inst, "vkCreateDebugUtilsMessengerEXT");
		IPROC(DestroyDebugUtilsMessengerEXT);
		if (create) create(c->inst, &dci, NULL, &c->messenger);
	}
	c->EnumeratePhysicalDevices(c->inst, &c->nphys, NULL);
	c->phys = calloc(c->nphys + 1, sizeof *c->phys);
	c->EnumeratePhysicalDevices(c->inst, &c->nphys, c->phys);
	*out = c;
	return VK_SUCCESS;
}

int vkl_device_count(vkl_ctx *c) { return (int)c->nphys; }

void vkl_device_info(vkl_ctx *c, int i, vkl_devinfo *info) {
	VkPhysicalDeviceProperties p;
	c->GetPhysicalDeviceProperties(c->phys[i], &p);
	snprintf(info->name, sizeof info->name, "%s", p.deviceName);
	info->type = p.deviceType;
	info->vendor = p.vendorID;
	info->device = p.deviceID;
	info->api = p.apiVersion;
}

// VK_KHR_cooperative_matrix, which the vendored headers (1.3.239) predate:
// its structures under our own names.
#define VKL_COOP_EXT "VK_KHR_cooperative_matrix"
#define VKL_STYPE_COOP_FEATURES ((VkStructureType)1000506000)
#define VKL_STYPE_COOP_PROPS ((VkStructureType)1000506001)
#define VKL_STYPE_COOP_DEV_PROPS ((VkStructureType)1000506002)
typedef struct {
	VkStructureType sType;
	void *pNext;
	uint32_t MSize, NSize, KSize;
	int32_t AType, BType, CType, ResultType; // VkComponentTypeKHR
	VkBool32 saturatingAccumulation;
	int32_t scope; // VkScopeKHR
} vkl_coop_props;
typedef struct {
	VkStructureType sType;
	void *pNext;
	VkBool32 cooperativeMatrix, cooperativeMatrixRobustBufferAccess;
} vkl_coop_features;
typedef struct {
	VkStructureType sType;
	void *pNext;
	VkShaderStageFlags cooperativeMatrixSupportedStages;
} vkl_coop_dev_props;
typedef VkResult(VKAPI_PTR *vkl_PFN_coop_props)(VkPhysicalDevice, uint32_t *, vkl_coop_props *);

#define DPROC(name) (c->name = (PFN_vk##name)c->GetDeviceProcAddr(c->dev, "vk" #name))

static int has_ext(VkExtensionProperties *e, uint32_t n, const char *name) {
	for (uint32_t i = 0; i < n; i++)
		if (!strcmp(e[i].extensionName, name)) return 1;
	return 0;
}

int vkl_device_create(vkl_ctx *c, int i, vkl_props *props) {
	if (i < 0 || (uint32_t)i >= c->nphys) return VKL_ERR_NO_DEVICE;
	VkPhysicalDevice pd = c->phys[i];
	c->pd = pd;

	// Properties: limits, subgroups, maintenance3.
	VkPhysicalDeviceSubgroupSizeControlProperties sscp = {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_PROPERTIES};
	VkPhysicalDeviceSubgroupProperties sgp = {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES};
	VkPhysicalDeviceMaintenance3Properties m3 = {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_3_PROPERTIES};
	VkPhysicalDeviceProperties2 p2 = {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
	p2.pNext = &sgp;
	sgp.pNext = &m3;
	VkPhysicalDeviceProperties base;
	c->GetPhysicalDeviceProperties(pd, &base);
	int v13 = base.apiVersion >= VK_API_VERSION_1_3 && c->api >= VK_API_VERSION_1_3;
	if (v13) m3.pNext = &sscp;
	c->GetPhysicalDeviceProperties2(pd, &p2);
	VkPhysicalDeviceLimits *l = &p2.properties.limits;
	memset(props, 0, sizeof *props);
	props->max_storage_range = l->maxStorageBufferRange;
	props->max_alloc = m3.maxMemoryAllocationSize;
	props->min_storage_align = l->minStorageBufferOffsetAlignment;
	for (int k = 0; k < 3; k++) props->max_wg_count[k] = l->maxComputeWorkGroupCount[k];
	props->max_wg_size = l->maxComputeWorkGroupInvocations;
	props->max_shared = l->maxComputeSharedMemorySize;
	props->subgroup_size = sgp.subgroupSize;
	props->subgroup_ops = (sgp.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) ? sgp.supportedOperations : 0;
	if (v13) {
		props->min_subgroup = sscp.minSubgroupSize;
		props->max_subgroup = sscp.maxSubgroupSize;
		props->size_control_compute = (sscp.requiredSubgroupSizeStages & VK_SHADER_STAGE_COMPUTE_BIT) != 0;
	}

	// Features: query the chain, then enable what is there.
	VkPhysicalDeviceVulkan13Features f13 = {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES};
	VkPhysicalDeviceVulkan12Features f12 = {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
	VkPhysicalDeviceVulkan11Features f11 = {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES};
	VkPhysicalDeviceFeatures2 f2 = {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
	f2.pNext = &f11;
	f11.pNext = &f12;
	if (v13) f12.pNext = &f13;
	c->GetPhysicalDeviceFeatures2(pd, &f2);
	VkPhysicalDeviceVulkan13Features e13 = {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES};
	VkPhysicalDeviceVulkan12Features e12 = {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
	VkPhysicalDeviceVulkan11Features e11 = {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES};
	VkPhysicalDeviceFeatures2 e2 = {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
	e2.pNext = &e11;
	e11.pNext = &e12;
	if (v13) e12.pNext = &e13;
	e11.storageBuffer16BitAccess = f11.storageBuffer16BitAccess;
	e12.storageBuffer8BitAccess = f12.storageBuffer8BitAccess;
	e12.shaderFloat16 = f12.shaderFloat16;
	e12.shaderInt8 = f12.shaderInt8;
	e2.features.shaderInt16 = f2.features.shaderInt16;
	e2.features.shaderFloat64 = f2.features.shaderFloat64;
	if (v13) {
		e13.subgroupSizeControl = f13.subgroupSizeControl;
		e13.computeFullSubgroups = f13.computeFullSubgroups;
		e13.shaderIntegerDotProduct = f13.shaderIntegerDotProduct; // the int8 MatMul's _int8dot variants
		props->intdot = f13.shaderIntegerDotProduct;
	}
	props->storage16 = f11.storageBuffer16BitAccess;
	props->storage8 = f12.storageBuffer8BitAccess;
	props->float16 = f12.shaderFloat16;
	props->int8 = f12.shaderInt8;
	props->int16 = f2.features.shaderInt16;
	props->float64 = f2.features.shaderFloat64;
	props->size_control = v13 && f13.subgroupSizeControl && f13.computeFullSubgroups;
	e12.vulkanMemoryModel = f12.vulkanMemoryModel; // cooperative matrices need it

	// Queue: the first family with compute.
	uint32_t nq = 0;
	c->GetPhysicalDeviceQueueFamilyProperties(pd, &nq, NULL);
	VkQueueFamilyProperties *qf = calloc(nq + 1, sizeof *qf);
	c->GetPhysicalDeviceQueueFamilyProperties(pd, &nq, qf);
	int fam = -1;
	for (uint32_t k = 0; k < nq && fam < 0; k++)
		if ((qf[k].queueFlags & VK_QUEUE_COMPUTE_BIT) && !(qf[k].queueFlags & VK_QUEUE_GRAPHICS_BIT)) fam = (int)k;
	for (uint32_t k = 0; k < nq && fam < 0; k++)
		if (qf[k].queueFlags & VK_QUEUE_COMPUTE_BIT) fam = (int)k;
	if (fam >= 0) c->ts_bits = qf[fam].timestampValidBits;
	free(qf);
	if (fam < 0) return VKL_ERR_NO_QUEUE;
	c->qfam = (uint32_t)fam;
	props->timestamp_bits = c->ts_bits;
	props->timestamp_period = l->timestampPeriod;

	uint32_t next = 0;
	c->EnumerateDeviceExtensionProperties(pd, NULL, &next, NULL);
	VkExtensionProperties *ep = calloc(next + 1, sizeof *ep);
	c->EnumerateDeviceExtensionProperties(pd, NULL, &next, ep);
	const char *dexts[3];
	uint32_t nde = 0;
	if (has_ext(ep, next, VK_EXT_MEMORY_BUDGET_EXTENSION_NAME)) {
		dexts[nde++] = VK_EXT_MEMORY_BUDGET_EXTENSION_NAME;
		c->budget_ext = 1;
	}
	// Cooperative matrices: the extension, its feature in compute shaders
	// and the Vulkan memory model their shaders declare; then the shapes.
	vkl_coop_features cf = {VKL_STYPE_COOP_FEATURES};
	if (has_ext(ep, next, VKL_COOP_EXT) && f12.vulkanMemoryModel && f12.shaderFloat16) {
		vkl_coop_dev_props cp = {VKL_STYPE_COOP_DEV_PROPS};
		VkPhysicalDeviceProperties2 cp2 = {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
		cp2.pNext = &cp;
		c->GetPhysicalDeviceProperties2(pd, &cp2);
		vkl_coop_features qf2 = {VKL_STYPE_COOP_FEATURES};
		VkPhysicalDeviceFeatures2 qf1 = {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
		qf1.pNext = &qf2;
		c->GetPhysicalDeviceFeatures2(pd, &qf1);
		vkl_PFN_coop_props get = (vkl_PFN_coop_props)c->gipa(c->inst, "vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR");
		if (qf2.cooperativeMatrix && (cp.cooperativeMatrixSupportedStages & VK_SHADER_STAGE_COMPUTE_BIT) && get) {
			uint32_t n = 0;
			get(pd, &n, NULL);
			vkl_coop_props *cm = calloc(n + 1, sizeof *cm);
			for (uint32_t k = 0; k < n; k++) cm[k].sType = VKL_STYPE_COOP_PROPS;
			if (get(pd, &n, cm) >= 0) {
				for (uint32_t k = 0; k < n && props->ncoop < VKL_MAX_COOP; k++, props->ncoop++) {
					props->coop[props->ncoop].m = cm[k].MSize;
					props->coop[props->ncoop].n = cm[k].NSize;
					props->coop[props->ncoop].k = cm[k].KSize;
					props->coop[props->ncoop].a = (uint32_t)cm[k].AType;
					props->coop[props->ncoop].b = (uint32_t)cm[k].BType;
					props->coop[props->ncoop].c = (uint32_t)cm[k].CType;
					props->coop[props->ncoop].r = (uint32_t)cm[k].ResultType;
					props->coop[props->ncoop].scope = (uint32_t)cm[k].scope;
				}
				dexts[nde++] = VKL_COOP_EXT;
				cf.cooperativeMatrix = VK_TRUE;
				cf.pNext = e2.pNext;
				e2.pNext = &cf;
				props->coopmat = 1;
			}
			free(cm);
		}
	}
	free(ep);
	props->memory_budget_ext = c->budget_ext;

	float prio = 1;
	VkDeviceQueueCreateInfo qci = {VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
	qci.queueFamilyIndex = c->qfam;
	qci.queueCount = 1;
	qci.pQueuePriorities = &prio;
	VkDeviceCreateInfo dci = {VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
	dci.pNext = &e2;
	dci.queueCreateInfoCount = 1;
	dci.pQueueCreateInfos = &qci;
	dci.enabledExtensionCount = nde;
	dci.ppEnabledExtensionNames = dexts;
	VkResult r = c->CreateDevice(pd, &dci, NULL, &c->dev);
	if (r != VK_SUCCESS) return r;

	DPROC(DestroyDevice);
	DPROC(GetDeviceQueue);
	DPROC(DeviceWaitIdle);
	DPROC(CreateBuffer);
	DPROC(DestroyBuffer);
	DPROC(GetBufferMemoryRequirements);
	DPROC(AllocateMemory);
	DPROC(FreeMemory);
	DPROC(BindBufferMemory);
	DPROC(MapMemory);
	DPROC(CreateShaderModule);
	DPROC(DestroyShaderModule);
	DPROC(CreateDescriptorSetLayout);
	DPROC(DestroyDescriptorSetLayout);
	DPROC(CreatePipelineLayout);
	DPROC(DestroyPipelineLayout);
	DPROC(CreateComputePipelines);
	DPROC(DestroyPipeline);
	DPROC(CreateDescriptorPool);
	DPROC(DestroyDescriptorPool);
	DPROC(ResetDescriptorPool);
	DPROC(AllocateDescriptorSets);
	DPROC(UpdateDescriptorSets);
	DPROC(CreateCommandPool);
	DPROC(DestroyCommandPool);
	DPROC(ResetCommandPool);
	DPROC(AllocateCommandBuffers);
	DPROC(BeginCommandBuffer);
	DPROC(EndCommandBuffer);
	DPROC(CmdBindPipeline);
	DPROC(CmdBindDescriptorSets);
	DPROC(CmdPushConstants);
	DPROC(CmdDispatch);
	DPROC(CmdPipelineBarrier);
	DPROC(CmdCopyBuffer);
	DPROC(CmdFillBuffer);
	DPROC(CreateFence);
	DPROC(DestroyFence);
	DPROC(ResetFences);
	DPROC(WaitForFences);
	DPROC(QueueSubmit);
	DPROC(CreateQueryPool);
	DPROC(DestroyQueryPool);
	DPROC(CmdResetQueryPool);
	DPROC(CmdWriteTimestamp);
	DPROC(GetQueryPoolResults);

	c->GetDeviceQueue(c->dev, c->qfam, 0, &c->queue);
	c->GetPhysicalDeviceMemoryProperties(pd, &c->memprops);
	for (uint32_t k = 0; k < c->memprops.memoryHeapCount; k++)
		if ((c->memprops.memoryHeaps[k].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT) &&
			c->memprops.memoryHeaps[k].size > props->device_local_heap)
			props->device_local_heap = c->memprops.memoryHeaps[k].size;

	for (int k = 0; k < NSLOT; k++) {
		VkCommandPoolCreateInfo cpi = {VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
		cpi.queueFamilyIndex = c->qfam;
		if ((r = c->CreateCommandPool(c->dev, &cpi, NULL, &c->cpools[k])) != VK_SUCCESS) return r;
		VkCommandBufferAllocateInfo cbi = {VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
		cbi.commandPool = c->cpools[k];
		cbi.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
		cbi.commandBufferCount = 1;
		if ((r = c->AllocateCommandBuffers(c->dev, &cbi, &c->cbs[k])) != VK_SUCCESS) return r;
		VkFenceCreateInfo fci = {VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
		if ((r = c->CreateFence(c->dev, &fci, NULL, &c->fences[k])) != VK_SUCCESS) return r;
	}
	c->fence_timeout = 120ull * 1000000000ull;
	c->slot = 0;
	c->cpool = c->cpools[0];
	c->cb = c->cbs[0];
	c->fence = c->fences[0];
	props->validation = c->validation;
	return VK_SUCCESS;
}

void vkl_set_fence_timeout(vkl_ctx *c, uint64_t ns) { c->fence_timeout = ns; }

int vkl_hung(vkl_ctx *c) { return c->hung; }

void vkl_close(vkl_ctx *c) {
	if (!c) return;
	if (c->hung) {
		// The device did not finish a submit: waiting for it again (as
		// vkDeviceWaitIdle would) could block forever, and destroying what
		// it may still use is not allowed; the process's exit frees both.
		free(c->phys);
		free(c);
		return;
	}
	if (c->dev) {
		c->DeviceWaitIdle(c->dev);
		for (int k = 0; k < c->npools; k++) c->DestroyDescriptorPool(c->dev, c->pools[k], NULL);
		if (c->qpool) c->DestroyQueryPool(c->dev, c->qpool, NULL);
		for (int k = 0; k < NSLOT; k++) {
			if (c->fences[k]) c->DestroyFence(c->dev, c->fences[k], NULL);
			if (c->cpools[k]) c->DestroyCommandPool(c->dev, c->cpools[k], NULL);
		}
		c->DestroyDevice(c->dev, NULL);
	}
	if (c->messenger) c->DestroyDebugUtilsMessengerEXT(c->inst, c->messenger, NULL);
	if (c->inst) c->DestroyInstance(c->inst, NULL);
	free(c->phys);
	free(c->pools);
	free(c->qtags);
	free(c->ltags);
	free(c->lvals);
	// The loader stays loaded: unloading it under the validation layer's
	// threads is not safe, and a process opens it once or twice.
	free(c);
}

int vkl_messages(vkl_ctx *c, int *ndistinct) {
	*ndistinct = c->ndistinct;
	return c->nmsg;
}

int vkl_message(vkl_ctx *c, int i, char *text, int n, int32_t *id) {
	if (i < 0 || i >= c->ndistinct) return 0;
	if (n > 0) snprintf(text, (size_t)n, "%s", c->msgs[i].text);
	*id = c->msgs[i].id;
	return (int)c->msgs[i].count;
}

void vkl_memory_budget(vkl_ctx *c, uint64_t *used, uint64_t *budget) {
	*used = 0;
	*budget = 0;
	if (!c->budget_ext || !c->GetPhysicalDeviceMemoryProperties2) return;
	VkPhysicalDeviceMemoryBudgetPropertiesEXT b = {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_BUDGET_PROPERTIES_EXT};
	VkPhysicalDeviceMemoryProperties2 p = {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_PROPERTIES_2};
	p.pNext = &b;
	c->GetPhysicalDeviceMemoryProperties2(c->pd, &p);
	for (uint32_t k = 0; k < p.memoryProperties.memoryHeapCount; k++)
		if (p.memoryProperties.memoryHeaps[k].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT) {
			*used += b.heapUsage[k];
			*budget += b.heapBudget[k];
		}
}

void vkl_device_memory(vkl_ctx *c, int i, uint64_t *heap, uint64_t *used, uint64_t *budget) {
	*heap = *used = *budget = 0;
	if (i < 0 || (uint32_t)i >= c->nphys) return;
	VkPhysicalDevice pd = c->phys[i];
	uint32_t n = 0;
	c->EnumerateDeviceExtensionProperties(pd, NULL, &n, NULL);
	VkExtensionProperties *ep = calloc(n + 1, sizeof *ep);
	if (!ep) return;
	c->EnumerateDeviceExtensionProperties(pd, NULL, &n, ep);
	int ext = has_ext(ep, n, VK_EXT_MEMORY_BUDGET_EXTENSION_NAME) && c->GetPhysicalDeviceMemoryProperties2;
	free(ep);
	VkPhysicalDeviceMemoryBudgetPropertiesEXT b = {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_BUDGET_PROPERTIES_EXT};
	VkPhysicalDeviceMemoryProperties2 p = {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_PROPERTIES_2};
	if (ext) {
		p.pNext = &b;
		c->GetPhysicalDeviceMemoryProperties2(pd, &p);
	} else {
		c->GetPhysicalDeviceMemoryProperties(pd, &p.memoryProperties);
	}
	for (uint32_t k = 0; k < p.memoryProperties.memoryHeapCount; k++) {
		if (!(p.memoryProperties.memoryHeaps[k].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT)) continue;
		if (p.memoryProperties.memoryHeaps[k].size > *heap) *heap = p.memoryProperties.memoryHeaps[k].size;
		if (ext) {
			*used += b.heapUsage[k];
			*budget += b.heapBudget[k];
		}
	}
}

static int find_type(vkl_ctx *c, uint32_t bits, VkMemoryPropertyFlags want) {
	for (uint32_t k = 0; k < c->memprops.memoryTypeCount; k++)
		if ((bits & (1u << k)) && (c->memprops.memoryTypes[k].propertyFlags & want) == want) return (int)k;
	return -1;
}

// kind_type is the memory type of a buffer of the given kind (vkl_buffer)
// among the types bits allows, -1 if none.
static int kind_type(vkl_ctx *c, uint32_t bits, int kind) {
	int t;
	if (kind == 0) {
		t = find_type(c, bits, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT);
		if (t < 0) t = find_type(c, bits, 0);
	} else {
		t = find_type(c, bits,
			VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT | VK_MEMORY_PROPERTY_HOST_CACHED_BIT);
		if (t < 0) t = find_type(c, bits, VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT);
	}
	return t;
}

static VkResult new_buffer(vkl_ctx *c, uint64_t size, VkBuffer *b) {
	VkBufferCreateInfo bci = {VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
	bci.size = size;
	bci.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
	bci.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
	return c->CreateBuffer(c->dev, &bci, NULL, b);
}

int vkl_memory_kind(vkl_ctx *c, int kind, vkl_memkind *out) {
	memset(out, 0, sizeof *out);
	VkBuffer b;
	VkResult r = new_buffer(c, 256, &b);
	if (r != VK_SUCCESS) return r;
	VkMemoryRequirements req;
	c->GetBufferMemoryRequirements(c->dev, b, &req);
	c->DestroyBuffer(c->dev, b, NULL);
	int t = kind_type(c, req.memoryTypeBits, kind);
	if (t < 0) return VK_ERROR_OUT_OF_DEVICE_MEMORY;
	uint32_t h = c->memprops.memoryTypes[t].heapIndex;
	out->type = (uint32_t)t;
	out->type_bits = req.memoryTypeBits;
	out->props = c->memprops.memoryTypes[t].propertyFlags;
	out->heap = h;
	out->heap_flags = c->memprops.memoryHeaps[h].flags;
	out->heap_size = c->memprops.memoryHeaps[h].size;
	return VK_SUCCESS;
}

int vkl_buffer(vkl_ctx *c, uint64_t size, int kind, uint64_t *buf, uint64_t *mem, void **mapped) {
	*buf = 0;
	*mem = 0;
	*mapped = NULL;
	VkBuffer b;
	VkResult r = new_buffer(c, size, &b);
	if (r != VK_SUCCESS) return r;
	VkMemoryRequirements req;
	c->GetBufferMemoryRequirements(c->dev, b, &req);
	int t = kind_type(c, req.memoryTypeBits, kind);
	if (t < 0) {
		c->DestroyBuffer(c->dev, b, NULL);
		return VK_ERROR_OUT_OF_DEVICE_MEMORY;
	}
	VkMemoryAllocateInfo mai = {VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
	mai.allocationSize = req.size;
	mai.memoryTypeIndex = (uint32_t)t;
	VkDeviceMemory m;
	if ((r = c->AllocateMemory(c->dev, &mai, NULL, &m)) != VK_SUCCESS) {
		c->DestroyBuffer(c->dev, b, NULL);
		return r;
	}
	if ((r = c->BindBufferMemory(c->dev, b, m, 0)) != VK_SUCCESS) {
		c->DestroyBuffer(c->dev, b, NULL);
		c->FreeMemory(c->dev, m, NULL);
		return r;
	}
	if (kind != 0) {
		if ((r = c->MapMemory(c->dev, m, 0, VK_WHOLE_SIZE, 0, mapped)) != VK_SUCCESS) {
			c->DestroyBuffer(c->dev, b, NULL);
			c->FreeMemory(c->dev, m, NULL);
			return r;
		}
	}
	*buf = (uint64_t)(uintptr_t)b;
	*mem = (uint64_t)(uintptr_t)m;
	return VK_SUCCESS;
}

void vkl_buffer_free(vkl_ctx *c, uint64_t buf, uint64_t mem) {
	if (buf) c->DestroyBuffer(c->dev, (VkBuffer)(uintptr_t)buf, NULL);
	if (mem) c->FreeMemory(c->dev, (VkDeviceMemory)(uintptr_t)mem, NULL);
}

int vkl_pipeline(vkl_ctx *c, const uint32_t *code, uint64_t size, int nbind, int pcsize,
	const uint32_t *spec, int nspec, uint32_t subgroup_size, vkl_pipe **out) {
	*out = NULL;
	if (nbind > MAX_BIND) return VK_ERROR_INITIALIZATION_FAILED;
	vkl_pipe *p = calloc(1, sizeof *p);
	p->nbind = nbind;
	p->pcsize = pcsize;
	VkDescriptorSetLayoutBinding b[MAX_BIND];
	for (int k = 0; k < nbind; k++) {
		b[k] = (VkDescriptorSetLayoutBinding){(uint32_t)k, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1, VK_SHADER_STAGE_COMPUTE_BIT, NULL};
	}
	VkDescriptorSetLayoutCreateInfo dl = {VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
	dl.bindingCount = (uint32_t)nbind;
	dl.pBindings = b;
	VkResult r = c->CreateDescriptorSetLayout(c->dev, &dl, NULL, &p->dsl);
	if (r != VK_SUCCESS) goto fail;
	VkPushConstantRange pcr = {VK_SHADER_STAGE_COMPUTE_BIT, 0, (uint32_t)pcsize};
	VkPipelineLayoutCreateInfo pl = {VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
	pl.setLayoutCount = 1;
	pl.pSetLayouts = &p->dsl;
	if (pcsize > 0) {
		pl.pushConstantRangeCount = 1;
		pl.pPushConstantRanges = &pcr;
	}
	if ((r = c->CreatePipelineLayout(c->dev, &pl, NULL, &p->layout)) != VK_SUCCESS) goto fail;
	VkShaderModuleCreateInfo smi = {VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
	smi.codeSize = size;
	smi.pCode = code;
	VkShaderModule sm;
	if ((r = c->CreateShaderModule(c->dev, &smi, NULL, &sm)) != VK_SUCCESS) goto fail;
	VkSpecializationMapEntry me[16];
	for (int k = 0; k < nspec && k < 16; k++) me[k] = (VkSpecializationMapEntry){(uint32_t)k, (uint32_t)(4 * k), 4};
	VkSpecializationInfo si = {(uint32_t)(nspec < 16 ? nspec : 16), me, (size_t)(4 * (nspec < 16 ? nspec : 16)), spec};
	VkPipelineShaderStageRequiredSubgroupSizeCreateInfo rss = {
		VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_REQUIRED_SUBGROUP_SIZE_CREATE_INFO};
	rss.requiredSubgroupSize = subgroup_size;
	VkComputePipelineCreateInfo ci = {VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
	ci.stage.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
	ci.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
	ci.stage.module = sm;
	ci.stage.pName = "main";
	ci.stage.pSpecializationInfo = nspec > 0 ? &si : NULL;
	if (subgroup_size) {
		ci.stage.pNext = &rss;
		ci.stage.flags = VK_PIPELINE_SHADER_STAGE_CREATE_REQUIRE_FULL_SUBGROUPS_BIT;
	}
	ci.layout = p->layout;
	r = c->CreateComputePipelines(c->dev, VK_NULL_HANDLE, 1, &ci, NULL, &p->pipe);
	c->DestroyShaderModule(c->dev, sm, NULL);
	if (r != VK_SUCCESS) goto fail;
	*out = p;
	return VK_SUCCESS;
fail:
	vkl_pipeline_free(c, p);
	return r;
}

void vkl_pipeline_free(vkl_ctx *c, vkl_pipe *p) {
	if (!p) return;
	if (p->pipe) c->DestroyPipeline(c->dev, p->pipe, NULL);
	if (p->layout) c->DestroyPipelineLayout(c->dev, p->layout, NULL);
	if (p->dsl) c->DestroyDescriptorSetLayout(c->dev, p->dsl, NULL);
	free(p);
}

static int begin(vkl_ctx *c) {
	if (c->recording) return VK_SUCCESS;
	VkCommandBufferBeginInfo bi = {VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
	bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
	VkResult r = c->BeginCommandBuffer(c->cb, &bi);
	if (r == VK_SUCCESS) c->recording = 1;
	c->bound_pipe = NULL;
	c->bound_set = 0;
	if (r == VK_SUCCESS && c->prof) c->CmdResetQueryPool(c->cb, c->qpool, 0, POOL_QUERIES);
	return r;
}

static void stamp(vkl_ctx *c, uint32_t tag) {
	c->CmdWriteTimestamp(c->cb, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, c->qpool, c->nq);
	c->qtags[c->nq++] = tag;
	c->written++;
}

// prof_before runs before every recorded command: while profiling, the
// first command of a call (after vkl_prof_label) or of a command buffer
// gets a timestamp first, after all earlier work. Off, it does nothing.
static VkResult prof_before(vkl_ctx *c) {
	if (!c->prof || (!c->armed && c->nq > 0)) return VK_SUCCESS;
	VkResult r;
	if (c->nq + 2 > POOL_QUERIES) { // room for this one and the end
		if ((r = vkl_submit(c)) != VK_SUCCESS) return r;
	}
	if ((r = begin(c)) != VK_SUCCESS) return r;
	stamp(c, c->armed || c->nq > 0 ? c->tag : c->tag | VKL_TS_CONT);
	c->armed = 0;
	return VK_SUCCESS;
}

// prof_collect appends the timestamps of the command buffer just
// completed to the log.
static VkResult prof_collect(vkl_ctx *c) {
	uint32_t n = c->nq;
	c->nq = 0;
	if (n == 0) return VK_SUCCESS;
	if (c->nlog + n > c->caplog) {
		size_t cap = c->caplog * 2;
		if (cap < c->nlog + n) cap = c->nlog + n + 1024;
		uint32_t *t = realloc(c->ltags, cap * sizeof *t);
		if (t) c->ltags = t;
		uint64_t *v = realloc(c->lvals, cap * sizeof *v);
		if (v) c->lvals = v;
		if (!t || !v) return VK_ERROR_OUT_OF_HOST_MEMORY;
		c->caplog = cap;
	}
	VkResult r = c->GetQueryPoolResults(c->dev, c->qpool, 0, n, n * sizeof(uint64_t), c->lvals + c->nlog,
		sizeof(uint64_t), VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT);
	if (r != VK_SUCCESS) return r;
	memcpy(c->ltags + c->nlog, c->qtags, n * sizeof *c->qtags);
	c->nlog += n;
	return VK_SUCCESS;
}

int vkl_prof_start(vkl_ctx *c) {
	if (c->ts_bits == 0) return VKL_ERR_NO_TIMESTAMPS;
	if (!c->qpool) {
		VkQueryPoolCreateInfo qi = {VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO};
		qi.queryType = VK_QUERY_TYPE_TIMESTAMP;
		qi.queryCount = POOL_QUERIES;
		VkResult r = c->CreateQueryPool(c->dev, &qi, NULL, &c->qpool);
		if (r != VK_SUCCESS) return r;
		c->qtags = calloc(POOL_QUERIES, sizeof *c->qtags);
		if (!c->qtags) return VK_ERROR_OUT_OF_HOST_MEMORY;
	}
	// Work recorded before the start is not profiled: the pool is reset
	// here for the rest of the command buffer, and at each begin after.
	if (c->recording) c->CmdResetQueryPool(c->cb, c->qpool, 0, POOL_QUERIES);
	c->prof = 1;
	c->armed = 1;
	c->tag = 0;
	c->nq = 0;
	c->nlog = 0;
	return VK_SUCCESS;
}

void vkl_prof_label(vkl_ctx *c, uint32_t tag) {
	c->tag = tag;
	c->armed = 1;
}

void vkl_prof_stop(vkl_ctx *c) {
	c->prof = 0;
	c->armed = 0;
}

size_t vkl_prof_log(vkl_ctx *c, const uint32_t **tags, const uint64_t **vals) {
	*tags = c->ltags;
	*vals = c->lvals;
	return c->nlog;
}

uint64_t vkl_prof_written(vkl_ctx *c) { return c->written; }

int vkl_prof_pool(vkl_ctx *c) { return c->qpool != VK_NULL_HANDLE; }

static void barrier(vkl_ctx *c) {
	VkMemoryBarrier mb = {VK_STRUCTURE_TYPE_MEMORY_BARRIER};
	mb.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
	mb.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_READ_BIT |
		VK_ACCESS_TRANSFER_WRITE_BIT;
	VkPipelineStageFlags st = VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT;
	c->CmdPipelineBarrier(c->cb, st, st, 0, 1, &mb, 0, NULL, 0, NULL);
}

// end_submit ends the command buffer being recorded (with a barrier
// making its writes visible to the host) and submits it with its fence.
static VkResult end_submit(vkl_ctx *c) {
	c->recording = 0;
	VkMemoryBarrier mb = {VK_STRUCTURE_TYPE_MEMORY_BARRIER};
	mb.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
	mb.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
	c->CmdPipelineBarrier(c->cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
		VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &mb, 0, NULL, 0, NULL);
	VkResult r = c->EndCommandBuffer(c->cb);
	if (r == VK_SUCCESS) {
		VkSubmitInfo si = {VK_STRUCTURE_TYPE_SUBMIT_INFO};
		si.commandBufferCount = 1;
		si.pCommandBuffers = &c->cb;
		r = c->QueueSubmit(c->queue, 1, &si, c->fence);
	}
	if (r == VK_SUCCESS) c->busy[c->slot] = 1;
	else c->ResetCommandPool(c->dev, c->cpool, 0); // the work is lost; the slot is free
	return r;
}

// wait_fence waits for f at most fence_timeout; a timeout marks the
// device hung, and every later wait fails at once.
static VkResult wait_fence(vkl_ctx *c, VkFence *f) {
	if (c->hung) return VK_TIMEOUT;
	VkResult r = c->WaitForFences(c->dev, 1, f, VK_TRUE, c->fence_timeout);
	if (r == VK_TIMEOUT) c->hung = 1;
	return r;
}

// settle waits for slot k's submitted work and makes the slot free (not
// when the wait timed out: the work may still run).
static VkResult settle(vkl_ctx *c, int k) {
	if (!c->busy[k]) return VK_SUCCESS;
	VkResult r = wait_fence(c, &c->fences[k]);
	if (r == VK_TIMEOUT) return r;
	c->ResetFences(c->dev, 1, &c->fences[k]);
	c->ResetCommandPool(c->dev, c->cpools[k], 0);
	c->busy[k] = 0;
	return r;
}

static void use_slot(vkl_ctx *c, int k) {
	c->slot = k;
	c->cpool = c->cpools[k];
	c->cb = c->cbs[k];
	c->fence = c->fences[k];
}

int vkl_piece(vkl_ctx *c) {
	if (!c->recording || c->prof || c->capturing) return VK_SUCCESS; // profiling keeps one command buffer in flight
	VkResult r = end_submit(c);
	c->pieces++;
	int next = (c->slot + 1) % NSLOT;
	VkResult w = settle(c, next); // at most NSLOT pieces in flight
	use_slot(c, next);
	return r != VK_SUCCESS ? r : w;
}

static VkResult graph_settle(vkl_ctx *c, vkl_graph *g) {
	if (!g->pending) return VK_SUCCESS;
	VkResult r = wait_fence(c, &g->fence);
	if (r == VK_TIMEOUT) return r;
	c->ResetFences(c->dev, 1, &g->fence);
	g->pending = 0;
	if (c->inflight == g) c->inflight = NULL;
	return r;
}

int vkl_submit(vkl_ctx *c) {
	VkResult r = VK_SUCCESS;
	if (c->capturing) return VK_ERROR_UNKNOWN; // the caller ends the capture first
	if (c->recording) {
		if (c->nq > 0) stamp(c, VKL_TS_END); // the end of the last call
		r = end_submit(c);
		c->submits++;
	} else {
		int any = c->inflight != NULL;
		for (int k = 0; k < NSLOT; k++) any |= c->busy[k];
		if (!any) return VK_SUCCESS;
	}
	// Wait for every slot, the pieces submitted before first, and the
	// last graph.
	for (int i = 1; i <= NSLOT; i++) {
		VkResult w = settle(c, (c->slot + i) % NSLOT);
		if (r == VK_SUCCESS) r = w;
	}
	if (c->inflight) {
		VkResult w = graph_settle(c, c->inflight);
		if (r == VK_SUCCESS) r = w;
	}
	if (r == VK_SUCCESS) r = prof_collect(c);
	c->nq = 0;
	use_slot(c, 0);
	return r;
}

int vkl_discard(vkl_ctx *c) {
	VkResult r = VK_SUCCESS;
	if (c->recording) {
		c->recording = 0;
		r = c->EndCommandBuffer(c->cb);
		VkResult w = c->ResetCommandPool(c->dev, c->cpool, 0);
		if (r == VK_SUCCESS) r = w;
	}
	c->nq = 0;
	return r;
}

uint64_t vkl_pieces(vkl_ctx *c) { return c->pieces; }

// flush_piece submits what was recorded so far as a piece (vkl_piece
// without the profiling check).
static VkResult flush_piece(vkl_ctx *c) {
	if (!c->recording) return VK_SUCCESS;
	VkResult r = end_submit(c);
	c->pieces++;
	int next = (c->slot + 1) % NSLOT;
	VkResult w = settle(c, next);
	use_slot(c, next);
	return r != VK_SUCCESS ? r : w;
}

static VkResult graph_submit(vkl_ctx *c, vkl_graph *g) {
	VkSubmitInfo si = {VK_STRUCTURE_TYPE_SUBMIT_INFO};
	si.commandBufferCount = 1;
	si.pCommandBuffers = &g->cb;
	VkResult r = c->QueueSubmit(c->queue, 1, &si, g->fence);
	if (r == VK_SUCCESS) {
		g->pending = 1;
		c->inflight = g;
	}
	return r;
}

int vkl_capture_begin(vkl_ctx *c, vkl_graph **out) {
	*out = NULL;
	if (c->capturing || c->prof) return VK_ERROR_UNKNOWN;
	VkResult r = flush_piece(c); // what was recorded before runs first
	if (r != VK_SUCCESS) return r;
	vkl_graph *g = calloc(1, sizeof *g);
	if (!g) return VK_ERROR_OUT_OF_HOST_MEMORY;
	VkCommandPoolCreateInfo cpi = {VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
	cpi.queueFamilyIndex = c->qfam;
	if ((r = c->CreateCommandPool(c->dev, &cpi, NULL, &g->pool)) != VK_SUCCESS) goto fail;
	VkCommandBufferAllocateInfo cbi = {VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
	cbi.commandPool = g->pool;
	cbi.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
	cbi.commandBufferCount = 1;
	if ((r = c->AllocateCommandBuffers(c->dev, &cbi, &g->cb)) != VK_SUCCESS) goto fail;
	VkFenceCreateInfo fci = {VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
	if ((r = c->CreateFence(c->dev, &fci, NULL, &g->fence)) != VK_SUCCESS) goto fail;
	VkCommandBufferBeginInfo bi = {VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO}; // not one-time: submitted again
	if ((r = c->BeginCommandBuffer(g->cb, &bi)) != VK_SUCCESS) goto fail;
	c->capturing = g;
	c->cb = g->cb;
	c->recording = 1;
	c->bound_pipe = NULL;
	c->bound_set = 0;
	barrier(c); // after everything submitted earlier (the step's inputs)
	*out = g;
	return VK_SUCCESS;
fail:
	vkl_graph_free(c, g);
	return r;
}

int vkl_capture_end(vkl_ctx *c) {
	vkl_graph *g = c->capturing;
	if (!g) return VK_ERROR_UNKNOWN;
	c->capturing = NULL;
	c->recording = 0;
	use_slot(c, c->slot);
	VkResult r = c->EndCommandBuffer(g->cb);
	if (r == VK_SUCCESS) r = graph_submit(c, g);
	return r;
}

int vkl_replay(vkl_ctx *c, vkl_graph *g) {
	if (c->capturing) return VK_ERROR_UNKNOWN;
	VkResult r = flush_piece(c); // the step's inputs go first
	if (r == VK_SUCCESS) r = graph_settle(c, g);
	if (r == VK_SUCCESS) r = graph_submit(c, g);
	return r;
}

void vkl_graph_free(vkl_ctx *c, vkl_graph *g) {
	if (!g) return;
	if (c->hung) { // its objects stay (vkl_close)
		if (c->inflight == g) c->inflight = NULL;
		free(g);
		return;
	}
	if (g->pending) graph_settle(c, g);
	if (c->inflight == g) c->inflight = NULL;
	if (g->fence) c->DestroyFence(c->dev, g->fence, NULL);
	if (g->pool) c->DestroyCommandPool(c->dev, g->pool, NULL);
	free(g);
}

uint64_t vkl_binds_skipped(vkl_ctx *c) { return c->binds_skipped; }

uint64_t vkl_submits(vkl_ctx *c) { return c->submits; }

static VkResult new_pool(vkl_ctx *c) {
	VkDescriptorPool *ps = realloc(c->pools, (size_t)(c->npools + 1) * sizeof *ps);
	if (!ps) return VK_ERROR_OUT_OF_HOST_MEMORY;
	c->pools = ps;
	VkDescriptorPoolSize sz = {VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, POOL_SETS * MAX_BIND};
	VkDescriptorPoolCreateInfo dpi = {VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
	dpi.maxSets = POOL_SETS;
	dpi.poolSizeCount = 1;
	dpi.pPoolSizes = &sz;
	VkResult r = c->CreateDescriptorPool(c->dev, &dpi, NULL, &c->pools[c->npools]);
	if (r == VK_SUCCESS) c->npools++;
	return r;
}

int vkl_set(vkl_ctx *c, vkl_pipe *p, const uint64_t *bufs, const uint64_t *offs, const uint64_t *ranges, uint64_t *out) {
	*out = 0;
	VkDescriptorSetAllocateInfo ai = {VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
	ai.descriptorSetCount = 1;
	ai.pSetLayouts = &p->dsl;
	VkDescriptorSet set = VK_NULL_HANDLE;
	VkResult r = VK_ERROR_OUT_OF_POOL_MEMORY;
	while (c->cur < c->npools) {
		ai.descriptorPool = c->pools[c->cur];
		if ((r = c->AllocateDescriptorSets(c->dev, &ai, &set)) == VK_SUCCESS) break;
		if (r != VK_ERROR_OUT_OF_POOL_MEMORY && r != VK_ERROR_FRAGMENTED_POOL) return r;
		c->cur++;
	}
	if (r != VK_SUCCESS) {
		if ((r = new_pool(c)) != VK_SUCCESS) return r;
		c->cur = c->npools - 1;
		ai.descriptorPool = c->pools[c->cur];
		if ((r = c->AllocateDescriptorSets(c->dev, &ai, &set)) != VK_SUCCESS) return r;
	}
	VkDescriptorBufferInfo bi[MAX_BIND];
	VkWriteDescriptorSet w[MAX_BIND];
	for (int k = 0; k < p->nbind; k++) {
		bi[k] = (VkDescriptorBufferInfo){(VkBuffer)(uintptr_t)bufs[k], offs[k], ranges[k]};
		w[k] = (VkWriteDescriptorSet){VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
		w[k].dstSet = set;
		w[k].dstBinding = (uint32_t)k;
		w[k].descriptorCount = 1;
		w[k].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
		w[k].pBufferInfo = &bi[k];
	}
	c->UpdateDescriptorSets(c->dev, (uint32_t)p->nbind, w, 0, NULL);
	*out = (uint64_t)(uintptr_t)set;
	return VK_SUCCESS;
}

void vkl_sets_reset(vkl_ctx *c) {
	for (int k = 0; k < c->npools; k++) c->ResetDescriptorPool(c->dev, c->pools[k], 0);
	c->cur = 0;
}

int vkl_dispatch(vkl_ctx *c, vkl_pipe *p, uint64_t set, int with_barrier, const void *push,
	uint32_t gx, uint32_t gy, uint32_t gz) {
	VkResult r;
	if ((r = prof_before(c)) != VK_SUCCESS) return r;
	if ((r = begin(c)) != VK_SUCCESS) return r;
	if (with_barrier) barrier(c);
	// A command buffer keeps its bindings across dispatches and
	// barriers: bind only what changed (a set belongs to one pipeline,
	// so the same set was bound with this layout).
	if (p != c->bound_pipe) {
		c->CmdBindPipeline(c->cb, VK_PIPELINE_BIND_POINT_COMPUTE, p->pipe);
		c->bound_pipe = p;
	} else c->binds_skipped++;
	if (set != c->bound_set) {
		VkDescriptorSet ds = (VkDescriptorSet)(uintptr_t)set;
		c->CmdBindDescriptorSets(c->cb, VK_PIPELINE_BIND_POINT_COMPUTE, p->layout, 0, 1, &ds, 0, NULL);
		c->bound_set = set;
	} else c->binds_skipped++;
	if (p->pcsize > 0) c->CmdPushConstants(c->cb, p->layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, (uint32_t)p->pcsize, push);
	c->CmdDispatch(c->cb, gx, gy, gz);
	return VK_SUCCESS;
}

int vkl_dispatch_nop(vkl_ctx *c, vkl_pipe *p, uint64_t set, int with_barrier, const void *push,
	uint32_t gx, uint32_t gy, uint32_t gz) {
	(void)c; (void)p; (void)set; (void)with_barrier; (void)push; (void)gx; (void)gy; (void)gz;
	return VK_SUCCESS;
}

int vkl_copy(vkl_ctx *c, uint64_t src, uint64_t srcoff, uint64_t dst, uint64_t dstoff, uint64_t size) {
	VkResult r = prof_before(c);
	if (r == VK_SUCCESS) r = begin(c);
	if (r != VK_SUCCESS) return r;
	VkBufferCopy bc = {srcoff, dstoff, size};
	c->CmdCopyBuffer(c->cb, (VkBuffer)(uintptr_t)src, (VkBuffer)(uintptr_t)dst, 1, &bc);
	return VK_SUCCESS;
}

int vkl_fill(vkl_ctx *c, uint64_t dst, uint64_t off, uint64_t size) {
	VkResult r = prof_before(c);
	if (r == VK_SUCCESS) r = begin(c);
	if (r != VK_SUCCESS) return r;
	c->CmdFillBuffer(c->cb, (VkBuffer)(uintptr_t)dst, off, size, 0);
	return VK_SUCCESS;
}

int vkl_barrier(vkl_ctx *c) {
	VkResult r = prof_before(c);
	if (r == VK_SUCCESS) r = begin(c);
	if (r != VK_SUCCESS) return r;
	barrier(c);
	return VK_SUCCESS;
}
