/* compiler/vulkan/vkrt.h (private to compiler/vulkan/): the Vulkan runtime's view of the
 * driver: the loader and libshaderc opened with dlopen, every Vulkan entry point fetched
 * through vkGetInstanceProcAddr / vkGetDeviceProcAddr into one table, and the chosen
 * device with what it supports. <vulkan/vulkan.h> (libvulkan-dev) gives the types only:
 * nothing links against libvulkan or libshaderc, so one binary runs where they are absent.
 *
 * Device choice: the first whose name contains $ASSAY_VULKAN_DEVICE (case-insensitive)
 * when set, else a discrete GPU, an integrated one, a virtual one, a CPU (lavapipe), in that
 * order of preference; it must have a compute queue and shaderInt64.
 */
#ifndef ASSAY_VULKAN_VKRT_H
#define ASSAY_VULKAN_VKRT_H

#define VK_NO_PROTOTYPES
#include <vulkan/vulkan.h>
#include "vulkan.h"

#define VKRT_INSTANCE_FNS(X) \
	X(DestroyInstance) X(EnumeratePhysicalDevices) X(GetPhysicalDeviceProperties) \
	X(GetPhysicalDeviceFeatures) X(GetPhysicalDeviceQueueFamilyProperties) \
	X(GetPhysicalDeviceMemoryProperties) X(CreateDevice) X(GetDeviceProcAddr)

#define VKRT_DEVICE_FNS(X) \
	X(DestroyDevice) X(GetDeviceQueue) X(CreateBuffer) X(DestroyBuffer) \
	X(GetBufferMemoryRequirements) X(AllocateMemory) X(FreeMemory) X(BindBufferMemory) \
	X(MapMemory) X(UnmapMemory) X(CreateShaderModule) X(DestroyShaderModule) \
	X(CreateDescriptorSetLayout) X(DestroyDescriptorSetLayout) X(CreatePipelineLayout) \
	X(DestroyPipelineLayout) X(CreateComputePipelines) X(DestroyPipeline) \
	X(CreatePipelineCache) X(GetPipelineCacheData) X(DestroyPipelineCache) \
	X(CreateDescriptorPool) X(DestroyDescriptorPool) X(AllocateDescriptorSets) \
	X(UpdateDescriptorSets) X(CreateCommandPool) X(DestroyCommandPool) \
	X(AllocateCommandBuffers) X(BeginCommandBuffer) X(EndCommandBuffer) \
	X(CmdBindPipeline) X(CmdBindDescriptorSets) X(CmdDispatch) X(CmdPipelineBarrier) \
	X(CmdPushConstants) \
	X(QueueSubmit) X(CreateFence) X(DestroyFence) X(WaitForFences) X(ResetFences)

#define VKRT_MEMBER(name) PFN_vk##name name;

typedef struct {
	void *lib;                      /* libvulkan */
	PFN_vkGetInstanceProcAddr gipa;
	VkInstance inst;
	VKRT_INSTANCE_FNS(VKRT_MEMBER)
	PFN_vkGetPhysicalDeviceProperties2 GetPhysicalDeviceProperties2;   /* NULL before 1.1 */
	PFN_vkGetPhysicalDeviceFeatures2 GetPhysicalDeviceFeatures2;
	/* the chosen device */
	VkPhysicalDevice pd;
	VkPhysicalDeviceProperties props;
	uint32_t api;                   /* min(instance, device) API version */
	uint32_t qfam;
	bool f64, i64, s16;             /* shaderFloat64, shaderInt64, storageBuffer16BitAccess */
	bool fc;                        /* float controls (Vulkan 1.2) */
	VkPhysicalDeviceFloatControlsProperties fcp;
	char driver[VK_MAX_DRIVER_INFO_SIZE + VK_MAX_DRIVER_NAME_SIZE + 4];
	/* the logical device (vkrt_device) */
	VkDevice dev;
	VkQueue queue;
	VKRT_DEVICE_FNS(VKRT_MEMBER)
} VkRt;

/* Opens the loader, an instance and picks the device; 0, or -1 with why. */
int vkrt_open(VkRt *r, char *why, size_t n);
/* Creates the logical device with the features the backend uses; 0, or -1 with why. */
int vkrt_device(VkRt *r, char *why, size_t n);
void vkrt_close(VkRt *r);
/* "NAME (DRIVER, Vulkan X.Y.Z; ...)" (malloc'ed). */
char *vkrt_describe(const VkRt *r);

/* libshaderc, opened on demand. */
typedef struct {
	void *lib;
	void *(*compiler_initialize)(void);
	void (*compiler_release)(void *);
	void *(*options_initialize)(void);
	void (*options_release)(void *);
	void (*add_macro)(void *, const char *, size_t, const char *, size_t);
	void (*set_target_env)(void *, int, uint32_t);
	void *(*compile)(void *, const char *, size_t, int, const char *, const char *, void *);
	int (*status)(void *);
	size_t (*length)(void *);
	const char *(*bytes)(void *);
	const char *(*error)(void *);
	void (*result_release)(void *);
} Shaderc;

/* The system's libshaderc, else one built into dir from its static archives (vkrt.c). */
int shaderc_open(Shaderc *s, const char *dir, char *why, size_t n);
void shaderc_close(Shaderc *s);

#endif
