/* compiler/vulkan/vkrt.c: the Vulkan loader, the instance, the choice of device and the
 * logical device, and libshaderc, all reached through dlopen (vkrt.h says why and how the
 * device is chosen). Nothing here is global: each caller owns its VkRt.
 *
 * Features enabled: shaderInt64 (required: the kernel IR's integers are int64),
 * shaderFloat64 when present (f64 kernels are refused without it), and
 * storageBuffer16BitAccess when present (f16/bf16 buffers as uint16_t; without it they are
 * packed two per uint). Float-controls properties (Vulkan 1.2) say which execution modes
 * (denormals preserved, signed zero/inf/NaN preserved, round to nearest even) shaders may ask
 * for; run.c turns them into the shader symbols of vulkan.h.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "vkrt.h"
#include "../emit/berun.h"

static const char *const loader_names[] = {"libvulkan.so.1", "libvulkan.so"};
/* Debian's libshaderc1 installs libshaderc.so.1; upstream builds call it libshaderc_shared */
static const char *const shaderc_names[] = {"libshaderc.so.1", "libshaderc_shared.so.1",
					    "libshaderc.so", "libshaderc_shared.so"};

static void *open_any(const char *const *names, size_t n, char *err, size_t en)
{
	for (size_t i = 0; i < n; i++) {
		void *h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
		if (h)
			return h;
		if (i == 0)
			snprintf(err, en, "%s", dlerror());
	}
	return NULL;
}

static int instance(VkRt *r, char *why, size_t n)
{
	PFN_vkEnumerateInstanceVersion ver =
		(PFN_vkEnumerateInstanceVersion)r->gipa(NULL, "vkEnumerateInstanceVersion");
	PFN_vkCreateInstance create = (PFN_vkCreateInstance)r->gipa(NULL, "vkCreateInstance");
	uint32_t api = VK_API_VERSION_1_0;
	if (ver && ver(&api) != VK_SUCCESS)
		api = VK_API_VERSION_1_0;
	if (api > VK_API_VERSION_1_3)
		api = VK_API_VERSION_1_3;
	VkApplicationInfo app = {.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO, .pApplicationName = "assay",
				 .pEngineName = "assay", .apiVersion = api};
	VkInstanceCreateInfo ci = {.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO, .pApplicationInfo = &app};
	VkResult rc = create ? create(&ci, NULL, &r->inst) : VK_ERROR_INITIALIZATION_FAILED;
	if (rc != VK_SUCCESS) {
		snprintf(why, n, "the Vulkan loader refused to create an instance (VkResult %d)", (int)rc);
		return -1;
	}
	r->api = api;
#define LOAD(name) r->name = (PFN_vk##name)r->gipa(r->inst, "vk" #name);
	VKRT_INSTANCE_FNS(LOAD)
#undef LOAD
#define CHECK(name) if (!r->name) { snprintf(why, n, "the Vulkan loader lacks vk" #name); return -1; }
	VKRT_INSTANCE_FNS(CHECK)
#undef CHECK
	if (api >= VK_API_VERSION_1_1) {
		r->GetPhysicalDeviceProperties2 = (PFN_vkGetPhysicalDeviceProperties2)r->gipa(
			r->inst, "vkGetPhysicalDeviceProperties2");
		r->GetPhysicalDeviceFeatures2 = (PFN_vkGetPhysicalDeviceFeatures2)r->gipa(
			r->inst, "vkGetPhysicalDeviceFeatures2");
	}
	return 0;
}

static int has_compute(const VkRt *r, VkPhysicalDevice pd, uint32_t *fam)
{
	uint32_t nq = 0;
	r->GetPhysicalDeviceQueueFamilyProperties(pd, &nq, NULL);
	VkQueueFamilyProperties *q = calloc(nq + 1, sizeof *q);
	IR_ASSERT(q);
	r->GetPhysicalDeviceQueueFamilyProperties(pd, &nq, q);
	int ok = 0;
	for (uint32_t i = 0; i < nq && !ok; i++)
		if (q[i].queueFlags & VK_QUEUE_COMPUTE_BIT) {
			*fam = i;
			ok = 1;
		}
	free(q);
	return ok;
}

static int rank(VkPhysicalDeviceType t)
{
	switch (t) {
	case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return 5;
	case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return 4;
	case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return 3;
	case VK_PHYSICAL_DEVICE_TYPE_CPU: return 2;
	default: return 1;
	}
}

/* What the chosen device supports. */
static void capabilities(VkRt *r)
{
	VkPhysicalDeviceFeatures f;
	r->GetPhysicalDeviceFeatures(r->pd, &f);
	r->f64 = f.shaderFloat64;
	r->i64 = f.shaderInt64;
	uint32_t api = r->props.apiVersion < r->api ? r->props.apiVersion : r->api;
	r->api = api;
	if (api < VK_API_VERSION_1_1 || !r->GetPhysicalDeviceFeatures2)
		return;
	VkPhysicalDevice16BitStorageFeatures s16 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES};
	VkPhysicalDeviceFeatures2 f2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, .pNext = &s16};
	r->GetPhysicalDeviceFeatures2(r->pd, &f2);
	r->s16 = s16.storageBuffer16BitAccess;
	if (api < VK_API_VERSION_1_2)
		return;
	VkPhysicalDeviceDriverProperties drv = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES};
	r->fcp = (VkPhysicalDeviceFloatControlsProperties){
		.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FLOAT_CONTROLS_PROPERTIES, .pNext = &drv};
	VkPhysicalDeviceProperties2 p2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2,
					  .pNext = &r->fcp};
	r->GetPhysicalDeviceProperties2(r->pd, &p2);
	r->fcp.pNext = NULL;
	r->fc = true;
	snprintf(r->driver, sizeof r->driver, "%s %s", drv.driverName, drv.driverInfo);
}

static int pick(VkRt *r, char *why, size_t n)
{
	uint32_t nd = 0;
	if (r->EnumeratePhysicalDevices(r->inst, &nd, NULL) != VK_SUCCESS || nd == 0) {
		snprintf(why, n, "no Vulkan device (no driver found by the loader; on a GPU machine set "
			 "VK_DRIVER_FILES to its ICD json)");
		return -1;
	}
	VkPhysicalDevice *pd = calloc(nd, sizeof *pd);
	IR_ASSERT(pd);
	r->EnumeratePhysicalDevices(r->inst, &nd, pd);
	const char *want = getenv("ASSAY_VULKAN_DEVICE");
	int best = -1, best_rank = 0;
	for (uint32_t i = 0; i < nd; i++) {
		VkPhysicalDeviceProperties p;
		uint32_t fam;
		r->GetPhysicalDeviceProperties(pd[i], &p);
		if (!has_compute(r, pd[i], &fam))
			continue;
		int rk = want && *want ? (strcasestr(p.deviceName, want) ? 1 : 0) : rank(p.deviceType);
		if (rk > best_rank) {
			best = (int)i;
			best_rank = rk;
		}
	}
	if (best < 0) {
		if (want && *want)
			snprintf(why, n, "no Vulkan device with a compute queue matches ASSAY_VULKAN_DEVICE='%s'", want);
		else
			snprintf(why, n, "no Vulkan device has a compute queue");
		free(pd);
		return -1;
	}
	r->pd = pd[best];
	free(pd);
	r->GetPhysicalDeviceProperties(r->pd, &r->props);
	has_compute(r, r->pd, &r->qfam);
	capabilities(r);
	if (!r->i64) {
		snprintf(why, n, "the Vulkan device %s lacks shaderInt64 (the kernels' index arithmetic is "
			 "int64)", r->props.deviceName);
		return -1;
	}
	return 0;
}

int vkrt_open(VkRt *r, char *why, size_t n)
{
	memset(r, 0, sizeof *r);
	char err[256] = "";
	r->lib = open_any(loader_names, ARRAY_LEN(loader_names), err, sizeof err);
	if (!r->lib) {
		snprintf(why, n, "no Vulkan loader (libvulkan.so.1: %s)", err);
		return -1;
	}
	*(void **)&r->gipa = dlsym(r->lib, "vkGetInstanceProcAddr");
	if (!r->gipa) {
		snprintf(why, n, "libvulkan.so.1 has no vkGetInstanceProcAddr");
		return -1;
	}
	if (instance(r, why, n) || pick(r, why, n))
		return -1;
	return 0;
}

int vkrt_device(VkRt *r, char *why, size_t n)
{
	float prio = 1.0f;
	VkDeviceQueueCreateInfo q = {.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
				     .queueFamilyIndex = r->qfam, .queueCount = 1, .pQueuePriorities = &prio};
	VkPhysicalDevice16BitStorageFeatures s16 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES,
						    .storageBuffer16BitAccess = r->s16};
	VkPhysicalDeviceFeatures2 f2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, .pNext = &s16};
	f2.features.shaderFloat64 = r->f64;
	f2.features.shaderInt64 = r->i64;
	VkDeviceCreateInfo ci = {.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO, .queueCreateInfoCount = 1,
				 .pQueueCreateInfos = &q};
	if (r->api >= VK_API_VERSION_1_1)
		ci.pNext = &f2;
	else
		ci.pEnabledFeatures = &f2.features;
	VkResult rc = r->CreateDevice(r->pd, &ci, NULL, &r->dev);
	if (rc != VK_SUCCESS) {
		snprintf(why, n, "the Vulkan driver refused to create a device on %s (VkResult %d)",
			 r->props.deviceName, (int)rc);
		return -1;
	}
#define LOAD(name) r->name = (PFN_vk##name)r->GetDeviceProcAddr(r->dev, "vk" #name);
	VKRT_DEVICE_FNS(LOAD)
#undef LOAD
#define CHECK(name) if (!r->name) { snprintf(why, n, "the Vulkan driver lacks vk" #name); return -1; }
	VKRT_DEVICE_FNS(CHECK)
#undef CHECK
	r->GetDeviceQueue(r->dev, r->qfam, 0, &r->queue);
	return 0;
}

void vkrt_close(VkRt *r)
{
	if (r->dev && r->DestroyDevice)
		r->DestroyDevice(r->dev, NULL);
	if (r->inst && r->DestroyInstance)
		r->DestroyInstance(r->inst, NULL);
	if (r->lib)
		dlclose(r->lib);
	memset(r, 0, sizeof *r);
}

static const char *dtype_name(VkPhysicalDeviceType t)
{
	switch (t) {
	case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return "discrete GPU";
	case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return "integrated GPU";
	case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return "virtual GPU";
	case VK_PHYSICAL_DEVICE_TYPE_CPU: return "CPU";
	default: return "device";
	}
}

char *vkrt_describe(const VkRt *r)
{
	char *out = malloc(1024);
	IR_ASSERT(out);
	uint32_t v = r->props.apiVersion;
	bool dn = r->fc && r->fcp.shaderDenormPreserveFloat32;
	snprintf(out, 1024, "%s (%s%s%s, Vulkan %u.%u.%u; f64 %s, 16-bit storage %s, f32 denormals %s)",
		 r->props.deviceName, dtype_name(r->props.deviceType), r->driver[0] ? ", " : "",
		 r->driver, VK_API_VERSION_MAJOR(v), VK_API_VERSION_MINOR(v), VK_API_VERSION_PATCH(v),
		 r->f64 ? "yes" : "no", r->s16 ? "yes" : "packed", dn ? "preserved" : "not guaranteed");
	return out;
}

/* Debian 12's libshaderc.so.1 (2023.2-1) is unusable: it leaves glslang and SPIRV-Tools
 * symbols undefined without naming a library that has them. The same release's static
 * archives (libshaderc-dev, glslang-dev, spirv-tools) are complete and position
 * independent, so the backend links them into DIR/vk-shaderc-<hash>.so once, with the
 * system C++ compiler, and loads that instead. The archives hide their symbols, so the
 * object also gets exported wrappers (assay_shaderc_*), written here. $ASSAY_SHADERC, when
 * set, names the library to use before any of these (a machine without the archives can be
 * given one built elsewhere). */
static const char wrappers[] =
	"#include <stddef.h>\n"
	"#include <stdint.h>\n"
	"#define W __attribute__((visibility(\"default\")))\n"
	"void *shaderc_compiler_initialize(void);\n"
	"void shaderc_compiler_release(void *);\n"
	"void *shaderc_compile_options_initialize(void);\n"
	"void shaderc_compile_options_release(void *);\n"
	"void shaderc_compile_options_add_macro_definition(void *, const char *, size_t, const char *, size_t);\n"
	"void shaderc_compile_options_set_target_env(void *, int, uint32_t);\n"
	"void *shaderc_compile_into_spv(void *, const char *, size_t, int, const char *, const char *, void *);\n"
	"int shaderc_result_get_compilation_status(void *);\n"
	"size_t shaderc_result_get_length(void *);\n"
	"const char *shaderc_result_get_bytes(void *);\n"
	"const char *shaderc_result_get_error_message(void *);\n"
	"void shaderc_result_release(void *);\n"
	"W void *assay_shaderc_compiler_initialize(void) { return shaderc_compiler_initialize(); }\n"
	"W void assay_shaderc_compiler_release(void *c) { shaderc_compiler_release(c); }\n"
	"W void *assay_shaderc_compile_options_initialize(void) { return shaderc_compile_options_initialize(); }\n"
	"W void assay_shaderc_compile_options_release(void *o) { shaderc_compile_options_release(o); }\n"
	"W void assay_shaderc_compile_options_add_macro_definition(void *o, const char *n, size_t nl, const char *v, size_t vl)"
	" { shaderc_compile_options_add_macro_definition(o, n, nl, v, vl); }\n"
	"W void assay_shaderc_compile_options_set_target_env(void *o, int t, uint32_t v)"
	" { shaderc_compile_options_set_target_env(o, t, v); }\n"
	"W void *assay_shaderc_compile_into_spv(void *c, const char *s, size_t n, int k, const char *f, const char *e, void *o)"
	" { return shaderc_compile_into_spv(c, s, n, k, f, e, o); }\n"
	"W int assay_shaderc_result_get_compilation_status(void *r) { return shaderc_result_get_compilation_status(r); }\n"
	"W size_t assay_shaderc_result_get_length(void *r) { return shaderc_result_get_length(r); }\n"
	"W const char *assay_shaderc_result_get_bytes(void *r) { return shaderc_result_get_bytes(r); }\n"
	"W const char *assay_shaderc_result_get_error_message(void *r) { return shaderc_result_get_error_message(r); }\n"
	"W void assay_shaderc_result_release(void *r) { shaderc_result_release(r); }\n";
static void *build_shaderc(const char *dir, char *err, size_t en)
{
	static const char *const libdirs[] = {"/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu",
					      "/usr/lib64", "/usr/lib", "/usr/local/lib"};
	static const char *const parts[] = {"libglslang.a", "libMachineIndependent.a", "libGenericCodeGen.a",
					    "libOSDependent.a", "libOGLCompiler.a", "libSPIRV.a",
					    "libglslang-default-resource-limits.a", "libSPIRV-Tools-opt.a",
					    "libSPIRV-Tools.a"};
	char comb[512] = "", so[4200], tmp[4300], src[4300], paths[ARRAY_LEN(parts)][512];
	const char *ld = NULL;
	for (size_t i = 0; i < ARRAY_LEN(libdirs) && !ld; i++) {
		snprintf(comb, sizeof comb, "%s/libshaderc_combined.a", libdirs[i]);
		if (access(comb, R_OK) == 0)
			ld = libdirs[i];
	}
	if (!ld || !dir) {
		snprintf(err + strlen(err), en - strlen(err), "; no libshaderc_combined.a to build one from");
		return NULL;
	}
	uint64_t h = 0xcbf29ce484222325ull;
	for (const char *p = ld; *p; p++)
		h = (h ^ (unsigned char)*p) * 0x100000001b3ull;
	for (const char *p = wrappers; *p; p++)
		h = (h ^ (unsigned char)*p) * 0x100000001b3ull;
	snprintf(so, sizeof so, "%s/vk-shaderc-%016llx.so", dir, (unsigned long long)h);
	void *lib = dlopen(so, RTLD_NOW | RTLD_LOCAL);
	if (lib)
		return lib;
	snprintf(tmp, sizeof tmp, "%s.%ld.tmp", so, (long)getpid());
	snprintf(src, sizeof src, "%s.%ld.c", so, (long)getpid());
	FILE *f = fopen(src, "w");
	if (!f || fputs(wrappers, f) < 0) {
		if (f)
			fclose(f);
		snprintf(err + strlen(err), en - strlen(err), "; cannot write %s", src);
		return NULL;
	}
	fclose(f);
	const char *cxx = getenv("CXX");
	char *argv[32];
	int n = 0;
	argv[n++] = (char *)(cxx && *cxx ? cxx : "c++");
	argv[n++] = "-shared";
	argv[n++] = "-o";
	argv[n++] = tmp;
	argv[n++] = "-x";
	argv[n++] = "c";
	argv[n++] = src;
	argv[n++] = "-x";
	argv[n++] = "none";
	argv[n++] = "-Wl,--whole-archive";
	argv[n++] = comb;
	argv[n++] = "-Wl,--no-whole-archive";
	for (size_t i = 0; i < ARRAY_LEN(parts); i++) {
		snprintf(paths[i], sizeof paths[i], "%s/%s", ld, parts[i]);
		if (access(paths[i], R_OK) == 0)
			argv[n++] = paths[i];
	}
	argv[n++] = "-lpthread";
	argv[n] = NULL;
	int rc = be_run_cmd(argv, NULL);
	unlink(src);
	if (rc != 0 || rename(tmp, so)) {
		unlink(tmp);
		snprintf(err + strlen(err), en - strlen(err), "; building one from %s with %s failed (%d)",
			 comb, argv[0], rc);
		return NULL;
	}
	lib = dlopen(so, RTLD_NOW | RTLD_LOCAL);
	if (!lib)
		snprintf(err + strlen(err), en - strlen(err), "; the one built from %s: %s", comb, dlerror());
	return lib;
}

int shaderc_open(Shaderc *s, const char *dir, char *why, size_t n)
{
	memset(s, 0, sizeof *s);
	char err[1024] = "";
	const char *own = getenv("ASSAY_SHADERC");
	if (own && *own) {
		s->lib = dlopen(own, RTLD_NOW | RTLD_LOCAL);
		if (!s->lib) {
			snprintf(why, n, "ASSAY_SHADERC=%s: %s", own, dlerror());
			return -1;
		}
	}
	if (!s->lib)
		s->lib = open_any(shaderc_names, ARRAY_LEN(shaderc_names), err, sizeof err);
	if (!s->lib)
		s->lib = build_shaderc(dir, err, sizeof err);
	if (!s->lib) {
		snprintf(why, n, "no usable libshaderc (%s)", err);
		return -1;
	}
	struct {
		void **slot;
		const char *name;
	} fns[] = {
		{(void **)&s->compiler_initialize, "shaderc_compiler_initialize"},
		{(void **)&s->compiler_release, "shaderc_compiler_release"},
		{(void **)&s->options_initialize, "shaderc_compile_options_initialize"},
		{(void **)&s->options_release, "shaderc_compile_options_release"},
		{(void **)&s->add_macro, "shaderc_compile_options_add_macro_definition"},
		{(void **)&s->set_target_env, "shaderc_compile_options_set_target_env"},
		{(void **)&s->compile, "shaderc_compile_into_spv"},
		{(void **)&s->status, "shaderc_result_get_compilation_status"},
		{(void **)&s->length, "shaderc_result_get_length"},
		{(void **)&s->bytes, "shaderc_result_get_bytes"},
		{(void **)&s->error, "shaderc_result_get_error_message"},
		{(void **)&s->result_release, "shaderc_result_release"},
	};
	for (size_t i = 0; i < ARRAY_LEN(fns); i++) {
		char wrapped[128];
		snprintf(wrapped, sizeof wrapped, "assay_%s", fns[i].name);
		*fns[i].slot = dlsym(s->lib, wrapped);
		if (!*fns[i].slot)
			*fns[i].slot = dlsym(s->lib, fns[i].name);
		if (!*fns[i].slot) {
			snprintf(why, n, "libshaderc lacks %s", fns[i].name);
			dlclose(s->lib);
			s->lib = NULL;
			return -1;
		}
	}
	return 0;
}

void shaderc_close(Shaderc *s)
{
	if (s->lib)
		dlclose(s->lib);
	memset(s, 0, sizeof *s);
}
