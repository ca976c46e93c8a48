/* compiler/vulkan/run.c: the Vulkan backend's runtime: compile each kernel's GLSL to SPIR-V
 * with libshaderc (cached by hash), build compute pipelines, hold the program's buffers in
 * one host-visible coherent allocation with guard regions, and run the kernels in order in
 * one command buffer (a dispatch per kernel, a memory barrier between kernels, one fence).
 *
 * Shader symbols (vulkan.h): defined per device, as libshaderc macros, so one emitted text
 * serves every device; they are part of the SPIR-V cache key.
 *
 * Environment: ASSAY_VULKAN_DEVICE (vkrt.h: the device whose name contains it),
 * ASSAY_SHADERC (vkrt.c: the libshaderc to load), and, for tests and diagnosis,
 * ASSAY_VULKAN_PACKED16=1 (f16/bf16 buffers packed two per uint even where 16-bit storage
 * exists), ASSAY_VULKAN_NO_FC=1 (no float-controls execution modes), ASSAY_VULKAN_SYSMEM=1
 * (host memory that is not device-local). The SPIR-V target is Vulkan
 * 1.2 (SPIR-V 1.5, float controls in core) on a 1.2 device, else Vulkan 1.0. Float-controls
 * modes are asked for when the device supports them for the widths the shader uses and the
 * device lets 32-bit controls be set alone (denormBehaviorIndependence or
 * roundingModeIndependence not NONE); then f32 denormals are preserved, signed zeros,
 * infinities and NaN kept, and rounding is to nearest even, as the emulator assumes. Where a
 * device cannot promise denormals, vkrt_describe says so.
 *
 * Cache: DIR/vk-<hash>.spv per shader (DIR as for the c backend: BeOpts.cache_dir, else
 * $XDG_CACHE_HOME/assay, else $HOME/.cache/assay) and the driver's pipeline cache in
 * DIR/vk-<pipelineCacheUUID>.pcache; files are written under a temporary name and renamed.
 *
 * Memory layout: [guard][buffer 0][guard]...[guard][error words][guard][scratch][guard],
 * each data region aligned to max(256, minStorageBufferOffsetAlignment); guards are
 * BE_GUARD bytes of BE_GUARD_BYTE (berun.h). f16/bf16 regions are rounded up to whole
 * 32-bit words (the packed form's last word): stores there touch only their own 16 bits,
 * so the guard check still sees the rest.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "vkrt.h"
#include "../emit/berun.h"

/* LeakSanitizer's switches, present only in sanitized builds: glslang (inside libshaderc)
 * leaks a little on a shader it rejects, which is not ours to report. */
void __lsan_disable(void) __attribute__((weak));
void __lsan_enable(void) __attribute__((weak));

struct BeModule {
	const Kernels *k;
	VkRt r;
	int nk;
	VkShaderModule *sm;
	VkPipeline *pipe;
	int64_t *chunk, *scratch;   /* per kernel: items per dispatch, scratch bytes of one */
	int *wg, *group;
	VkDescriptorSetLayout dsl;
	VkPipelineLayout pll;
	VkPipelineCache pc;
	VkDescriptorPool pool;
	VkDescriptorSet ds;
	VkCommandPool cp;
	VkCommandBuffer cb;
	VkFence fence;
	VkBuffer buf;
	VkDeviceMemory mem;
	unsigned char *map;
	VkDeviceSize total;
	VkDeviceSize *off, *bytes, *range;   /* per region: nbufs buffers, error words, scratch */
	bool recorded;
};

/* ------------------------------------------------------------ compile */

/* A kernel's shader text and its plan (the program's record: map_plan; the mark line
 * only documents it). */
typedef struct {
	const char *text;
	size_t len;
	int64_t scratch;
	int group, wg, f64;
} KSrc;

/* Cuts the program text at its kernel marks and takes each kernel's launch from its plan;
 * -1 if the text does not hold one shader per kernel. */
static int split(const Kernels *k, const char *src, KSrc *ks)
{
	const MapPlan *mp = map_plan(k, &vk_target);
	const char *p = strstr(src, VK_MARK);
	for (int i = 0; i < k->nk; i += mp->k[i].nfused) {   /* a shader per launch */
		if (!p)
			return -1;
		const char *q = strchr(p, '\n'), *next = strstr(p + 1, VK_MARK);
		if (!q)
			return -1;
		const MapKernel *pl = &mp->k[i];
		ks[i].group = pl->mode == MAP_GROUP;
		ks[i].wg = pl->wg;
		ks[i].f64 = pl->f64;
		ks[i].scratch = pl->scratch;
		ks[i].text = q + 1;
		ks[i].len = next ? (size_t)(next - (q + 1)) : strlen(q + 1);
		p = next;
	}
	return p ? -1 : 0;
}

/* The shader symbols, in vulkan.h's order (the emitted #if's). */
enum { SY_16BIT, SY_FC, SY_DENORM32, SY_SZINP32, SY_RTE32, SY_DENORM64, SY_SZINP64, SY_RTE64,
       SY__COUNT };

/* Which symbols this device gets (for a shader using f64 or not): float-controls modes
 * only where the shader's `#if ASSAY_FC` block is compiled in. */
static void modes(const VkRt *r, bool f64, bool *on)
{
	const VkPhysicalDeviceFloatControlsProperties *f = &r->fcp;
	bool dn = f->denormBehaviorIndependence != VK_SHADER_FLOAT_CONTROLS_INDEPENDENCE_NONE;
	bool rn = f->roundingModeIndependence != VK_SHADER_FLOAT_CONTROLS_INDEPENDENCE_NONE;
	on[SY_16BIT] = r->s16 && !getenv("ASSAY_VULKAN_PACKED16");
	on[SY_FC] = r->fc && !getenv("ASSAY_VULKAN_NO_FC");
	on[SY_DENORM32] = r->fc && dn && f->shaderDenormPreserveFloat32;
	on[SY_SZINP32] = r->fc && f->shaderSignedZeroInfNanPreserveFloat32;
	on[SY_RTE32] = r->fc && rn && f->shaderRoundingModeRTEFloat32;
	on[SY_DENORM64] = r->fc && dn && f64 && f->shaderDenormPreserveFloat64 &&
		f->denormBehaviorIndependence == VK_SHADER_FLOAT_CONTROLS_INDEPENDENCE_ALL;
	on[SY_SZINP64] = r->fc && f64 && f->shaderSignedZeroInfNanPreserveFloat64;
	on[SY_RTE64] = r->fc && rn && f64 && f->shaderRoundingModeRTEFloat64 &&
		f->roundingModeIndependence == VK_SHADER_FLOAT_CONTROLS_INDEPENDENCE_ALL;
}

/* The shader symbols this device gets, as "NAME NAME ..." */
static void symbols(const VkRt *r, bool f64, char *out, size_t n)
{
	static const char *const names[SY__COUNT] = {
		VK_SYM_16BIT, VK_SYM_FC, VK_SYM_DENORM32, VK_SYM_SZINP32, VK_SYM_RTE32,
		VK_SYM_DENORM64, VK_SYM_SZINP64, VK_SYM_RTE64,
	};
	bool on[SY__COUNT];
	modes(r, f64, on);
	out[0] = 0;
	for (size_t i = 0; i < SY__COUNT; i++)
		if (on[i])
			snprintf(out + strlen(out), n - strlen(out), "%s%s", out[0] ? " " : "", names[i]);
}

/* libshaderc, opened once per process and kept, with one compiler: its first compile in a
 * process builds glslang's built-in symbol tables (most of a small program's compile time;
 * releasing the last compiler drops them), so a process
 * that forks workers opens it and compiles once first (vk_warm), and the workers inherit
 * both. The wrapper (vkrt.c) is built once per machine, in the user's cache, not in
 * o->cache_dir: a campaign empties its jobs' caches after every case. */
static Shaderc shaderc;
static void *shaderc_cc;   /* kept: releasing the last compiler finalizes glslang, tables and all */

static int shaderc_once(const char *dir, char *why, size_t n)
{
	char home[4096];
	if (shaderc.lib)
		return 0;
	return shaderc_open(&shaderc, be_cache_dir(NULL, home, sizeof home) ? dir : home, why, n);
}

/* Compiles src for target env `env` into *res (released by the caller); 0 when it compiled. */
static int shaderc_run(const char *src, size_t len, const char *name, uint32_t env, const char *syms,
		       void **res)
{
	Shaderc *sc = &shaderc;
	if (__lsan_disable)
		__lsan_disable();
	if (!shaderc_cc)
		shaderc_cc = sc->compiler_initialize();
	void *opt = sc->options_initialize();
	sc->set_target_env(opt, 0 /* shaderc_target_env_vulkan */, env);
	for (const char *p = syms, *e; *p; p = *e ? e + 1 : e) {
		e = strchr(p, ' ');
		if (!e)
			e = p + strlen(p);
		sc->add_macro(opt, p, (size_t)(e - p), "1", 1);
	}
	*res = sc->compile(shaderc_cc, src, len, 2 /* shaderc_compute_shader */, name, "main", opt);
	sc->options_release(opt);
	if (__lsan_enable)
		__lsan_enable();
	return *res && sc->status(*res) == 0 ? 0 : -1;
}

static void vk_warm(void)
{
	static const char tiny[] = "#version 450\n#extension GL_ARB_gpu_shader_int64 : require\n"
				   "layout(local_size_x = 32) in;\nvoid main() {}\n";
	char why[512];
	void *res = NULL;
	if (shaderc_once(NULL, why, sizeof why))
		return;   /* compile says why, in the worker */
	const uint32_t envs[] = {VK_API_VERSION_1_0, VK_API_VERSION_1_2};
	for (size_t i = 0; i < ARRAY_LEN(envs); i++) {
		shaderc_run(tiny, sizeof tiny - 1, "warm.comp", envs[i], "", &res);
		if (res)
			shaderc.result_release(res);
	}
}

/* SPIR-V of one kernel: from the cache, else compiled (and cached). */
static uint32_t *spirv(BeModule *m, const KSrc *ks, int i, const char *dir, bool *hit,
		       size_t *words, Diag *d)
{
	char syms[256], path[4200], why[256];
	symbols(&m->r, ks->f64, syms, sizeof syms);
	uint32_t env = m->r.api >= VK_API_VERSION_1_2 ? VK_API_VERSION_1_2 : VK_API_VERSION_1_0;
	uint64_t h1 = 0xcbf29ce484222325ull, h2 = 0x84222325cbf29ce4ull;
	h1 = be_fnv(be_fnv(be_fnv(h1, ks->text, ks->len), syms, strlen(syms) + 1), &env, sizeof env);
	h2 = be_fnv(be_fnv(be_fnv(h2 ^ 7, ks->text, ks->len), syms, strlen(syms) + 1), &env,
		    sizeof env);
	snprintf(path, sizeof path, "%s/vk-%016llx%016llx.spv", dir, (unsigned long long)h1,
		 (unsigned long long)h2);
	size_t n;
	uint32_t *code = be_cache_get(path, &n);
	if (code && n % 4 == 0 && n >= 20 && code[0] == 0x07230203u) {
		*words = n / 4;
		return code;
	}
	free(code);
	*hit = false;
	if (shaderc_once(dir, why, sizeof why)) {
		diag_set(d, 3, "vulkan backend: %s", why);
		return NULL;
	}
	char name[64];
	void *res = NULL;
	snprintf(name, sizeof name, "kernel%d.comp", i);
	code = NULL;
	if (shaderc_run(ks->text, ks->len, name, env, syms, &res)) {
		diag_set(d, 3, "vulkan backend: libshaderc rejected kernel %d:\n%s", i,
			 res ? shaderc.error(res) : "(no result)");
	} else {
		n = shaderc.length(res);
		code = malloc(n);
		IR_ASSERT(code);
		memcpy(code, shaderc.bytes(res), n);
		*words = n / 4;
		be_cache_put(path, code, n);
	}
	if (res)
		shaderc.result_release(res);
	return code;
}

/* The bytes a scratch buffer may have: the device's storage buffer range, at most 256 MiB. */
static VkDeviceSize scratch_budget(const BeModule *m)
{
	VkDeviceSize r = m->r.props.limits.maxStorageBufferRange;
	return r < (256u << 20) ? r : (256u << 20);
}

/* The scratch bytes one item needs. */
static int64_t per_item(const KSrc *ks)
{
	return ks->scratch * (ks->group ? ks->wg : 1);
}

/* Items per dispatch of kernel i: all, or as many as the scratch budget holds (whole
 * work-groups of a serial plan). */
static void chunking(BeModule *m, const KSrc *ks, int i)
{
	const VkPhysicalDeviceLimits *L = &m->r.props.limits;
	int64_t n = m->k->k[i].nitems, c = n, pi = per_item(ks);
	int64_t most = (int64_t)L->maxComputeWorkGroupCount[0] * L->maxComputeWorkGroupCount[1];
	if (c > most * (ks->group ? 1 : ks->wg))
		c = most * (ks->group ? 1 : ks->wg);
	if (pi > 0 && c > (int64_t)scratch_budget(m) / pi)
		c = (int64_t)scratch_budget(m) / pi;
	if (!ks->group && c < n)
		c = c / ks->wg * ks->wg;
	m->chunk[i] = c > 0 ? c : 1;
	m->scratch[i] = pi * m->chunk[i];
	m->wg[i] = ks->wg;
	m->group[i] = ks->group;
}

/* Refuses, with the reason, what this device cannot run. */
static int fits(BeModule *m, const KSrc *ks, int i, Diag *d)
{
	const VkPhysicalDeviceLimits *L = &m->r.props.limits;
	const char *dev = m->r.props.deviceName;
	if (ks->f64 && !m->r.f64) {
		diag_set(d, 2, "vulkan backend: unsupported: kernel %d computes in f64 and %s lacks "
			 "shaderFloat64", i, dev);
		return -1;
	}
	if ((uint32_t)ks->wg > L->maxComputeWorkGroupSize[0] ||
	    (uint32_t)ks->wg > L->maxComputeWorkGroupInvocations) {
		diag_set(d, 2, "vulkan backend: unsupported: kernel %d asks for work-groups of %d, more "
			 "than %s allows", i, ks->wg, dev);
		return -1;
	}
	int64_t pi = per_item(ks) * (ks->group ? 1 : ks->wg);
	if (pi > (int64_t)scratch_budget(m)) {
		diag_set(d, 2, "vulkan backend: unsupported: kernel %d needs %lld bytes of scratch per "
			 "work-group, more than the %llu the backend gives it on %s", i, (long long)pi,
			 (unsigned long long)scratch_budget(m), dev);
		return -1;
	}
	return 0;
}

static int pipelines(BeModule *m, const char *dir, Diag *d)
{
	VkRt *r = &m->r;
	int nb = m->k->nbufs + 4;
	VkDescriptorSetLayoutBinding *bind = calloc((size_t)nb, sizeof *bind);
	IR_ASSERT(bind);
	for (int b = 0; b < nb; b++)
		bind[b] = (VkDescriptorSetLayoutBinding){(uint32_t)b, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1,
							 VK_SHADER_STAGE_COMPUTE_BIT, NULL};
	VkDescriptorSetLayoutCreateInfo dl = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO,
					      .bindingCount = (uint32_t)nb, .pBindings = bind};
	VkResult rc = r->CreateDescriptorSetLayout(r->dev, &dl, NULL, &m->dsl);
	free(bind);
	VkPushConstantRange pcr = {VK_SHADER_STAGE_COMPUTE_BIT, 0, 8};
	VkPipelineLayoutCreateInfo pl = {.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO,
					 .setLayoutCount = 1, .pSetLayouts = &m->dsl,
					 .pushConstantRangeCount = 1, .pPushConstantRanges = &pcr};
	if (rc == VK_SUCCESS)
		rc = r->CreatePipelineLayout(r->dev, &pl, NULL, &m->pll);
	char path[4200], uuid[2 * VK_UUID_SIZE + 1];
	for (int i = 0; i < (int)VK_UUID_SIZE; i++)
		snprintf(uuid + 2 * i, 3, "%02x", r->props.pipelineCacheUUID[i]);
	snprintf(path, sizeof path, "%s/vk-%s.pcache", dir, uuid);
	size_t n0 = 0;
	void *data = be_read_file(path, &n0);
	VkPipelineCacheCreateInfo pc = {.sType = VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO,
					.initialDataSize = n0, .pInitialData = data};
	if (rc == VK_SUCCESS && r->CreatePipelineCache(r->dev, &pc, NULL, &m->pc) != VK_SUCCESS) {
		pc.initialDataSize = 0;   /* a stale or foreign cache: start empty */
		rc = r->CreatePipelineCache(r->dev, &pc, NULL, &m->pc);
	}
	free(data);
	/* a pipeline per launch: the shaders of the kernels that lead one (map/fuse.c) */
	VkComputePipelineCreateInfo *ci = calloc((size_t)m->nk + 1, sizeof *ci);
	VkPipeline *pipes = calloc((size_t)m->nk + 1, sizeof *pipes);
	int *lead = calloc((size_t)m->nk + 1, sizeof *lead), nl = 0;
	IR_ASSERT(ci && pipes && lead);
	for (int i = 0; i < m->nk; i += map_plan(m->k, &vk_target)->k[i].nfused) {
		lead[nl] = i;
		ci[nl++] = (VkComputePipelineCreateInfo){
			.sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
			.stage = {.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,
				  .stage = VK_SHADER_STAGE_COMPUTE_BIT, .module = m->sm[i], .pName = "main"},
			.layout = m->pll};
	}
	if (rc == VK_SUCCESS && nl > 0)
		rc = r->CreateComputePipelines(r->dev, m->pc, (uint32_t)nl, ci, NULL, pipes);
	for (int l = 0; rc == VK_SUCCESS && l < nl; l++)
		m->pipe[lead[l]] = pipes[l];
	free(ci);
	free(pipes);
	free(lead);
	if (rc != VK_SUCCESS) {
		diag_set(d, 3, "vulkan backend: the driver refused the compute pipelines (VkResult %d)",
			 (int)rc);
		return -1;
	}
	size_t n1 = 0;
	if (r->GetPipelineCacheData(r->dev, m->pc, &n1, NULL) == VK_SUCCESS && n1 != n0 && n1 > 0) {
		void *buf = malloc(n1);
		IR_ASSERT(buf);
		if (r->GetPipelineCacheData(r->dev, m->pc, &n1, buf) == VK_SUCCESS)
			be_write_atomic(path, buf, n1);
		free(buf);
	}
	return 0;
}

static void vk_free(BeModule *m);

/* The process's Vulkan session: the loader, an instance and the logical device, made at
 * the first compile and kept for the life of the process, so that a persistent worker
 * (verify/worker.c) makes them once; each module copies the handles and frees only its
 * own objects. A process made by fork() finds its parent's session and makes its own. */
static struct {
	pid_t owner;
	VkRt r;
} vsess;

static int session(VkRt *out, char *why, size_t n)
{
	if (vsess.owner != getpid()) {
		memset(&vsess, 0, sizeof vsess);   /* a parent's: not ours to destroy */
		if (vkrt_open(&vsess.r, why, n) || vkrt_device(&vsess.r, why, n)) {
			vkrt_close(&vsess.r);
			return -1;
		}
		vsess.owner = getpid();
	}
	*out = vsess.r;
	return 0;
}

static BeModule *vk_compile(const Kernels *k, const char *src, const BeOpts *o, BeStats *st,
			    Diag *d)
{
	double t0 = be_now();
	char dir[4096], why[512];
	if (be_cache_dir(o, dir, sizeof dir)) {
		diag_set(d, 3, "vulkan backend: cannot create the cache directory %s: %s", dir,
			 strerror(errno));
		return NULL;
	}
	BeModule *m = calloc(1, sizeof *m);
	IR_ASSERT(m);
	m->k = k;
	m->nk = k->nk;
	if (session(&m->r, why, sizeof why)) {
		diag_set(d, 3, "vulkan backend: %s", why);
		vk_free(m);
		return NULL;
	}
	KSrc *ks = calloc((size_t)k->nk + 1, sizeof *ks);
	m->sm = calloc((size_t)k->nk + 1, sizeof *m->sm);
	m->pipe = calloc((size_t)k->nk + 1, sizeof *m->pipe);
	m->chunk = calloc((size_t)k->nk + 1, sizeof *m->chunk);
	m->scratch = calloc((size_t)k->nk + 1, sizeof *m->scratch);
	m->wg = calloc((size_t)k->nk + 1, sizeof *m->wg);
	m->group = calloc((size_t)k->nk + 1, sizeof *m->group);
	IR_ASSERT(ks && m->sm && m->pipe && m->chunk && m->scratch && m->wg && m->group);
	bool hit = true;
	int rc = 0;
	if (split(k, src, ks)) {
		diag_set(d, 3, "vulkan backend: the source is not a program of these kernels");
		rc = -1;
	}
	for (int i = 0; i < k->nk && rc == 0; i += map_plan(k, &vk_target)->k[i].nfused) {
		size_t words = 0;
		if (fits(m, &ks[i], i, d)) {
			rc = -1;
			break;
		}
		chunking(m, &ks[i], i);
		uint32_t *code = spirv(m, &ks[i], i, dir, &hit, &words, d);
		if (!code) {
			rc = -1;
			break;
		}
		VkShaderModuleCreateInfo ci = {.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO,
					       .codeSize = words * 4, .pCode = code};
		VkResult vr = m->r.CreateShaderModule(m->r.dev, &ci, NULL, &m->sm[i]);
		free(code);
		if (vr != VK_SUCCESS) {
			diag_set(d, 3, "vulkan backend: the driver refused kernel %d's SPIR-V (VkResult %d)",
				 i, (int)vr);
			rc = -1;
		}
	}
	free(ks);
	if (rc == 0)
		rc = pipelines(m, dir, d);
	if (rc) {
		vk_free(m);
		return NULL;
	}
	be_stats(st, hit, t0);
	return m;
}

/* ------------------------------------------------------------ buffers */

static VkDeviceSize align_up(VkDeviceSize x, VkDeviceSize a)
{
	return (x + a - 1) / a * a;
}

/* A memory type for the buffer: host-visible and coherent, device-local if possible. */
static int memory_type(const VkRt *r, uint32_t bits, bool local)
{
	VkPhysicalDeviceMemoryProperties mp;
	r->GetPhysicalDeviceMemoryProperties(r->pd, &mp);
	VkMemoryPropertyFlags want = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT |
				     VK_MEMORY_PROPERTY_HOST_COHERENT_BIT |
				     (local ? VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT : 0);
	for (uint32_t i = 0; i < mp.memoryTypeCount; i++)
		if ((bits >> i & 1) && (mp.memoryTypes[i].propertyFlags & want) == want)
			return (int)i;
	return -1;
}

static const char *region_name(const BeModule *m, int b)
{
	const Kernels *k = m->k;
	return b < k->nbufs ? k->g->tensors[k->bufs[b].tensor].name : b == k->nbufs ? "(error words)"
		: "(scratch)";
}

/* Regions: the program's buffers, the error words, the scratch buffer (vulkan.h). */
static int layout(BeModule *m, Diag *d)
{
	const Kernels *k = m->k;
	const VkPhysicalDeviceLimits *L = &m->r.props.limits;
	VkDeviceSize a = L->minStorageBufferOffsetAlignment > 256 ? L->minStorageBufferOffsetAlignment : 256;
	size_t n = (size_t)k->nbufs + 2;
	m->off = calloc(n, sizeof *m->off);
	m->bytes = calloc(n, sizeof *m->bytes);
	m->range = calloc(n, sizeof *m->range);
	IR_ASSERT(m->off && m->bytes && m->range);
	VkDeviceSize at = 0, scratch = 16;
	for (int i = 0; i < m->nk; i++)
		if ((VkDeviceSize)m->scratch[i] > scratch)
			scratch = (VkDeviceSize)m->scratch[i];
	for (int b = 0; b < k->nbufs + 2; b++) {
		m->bytes[b] = b < k->nbufs ? be_buf_bytes(&k->bufs[b])
			: b == k->nbufs ? (VkDeviceSize)(k->nk ? k->nk : 1) * VK_ERR_WORDS * 4 : scratch;
		m->range[b] = align_up(m->bytes[b], 4);
		m->off[b] = align_up(at + BE_GUARD, a);
		at = m->off[b] + m->range[b];
		if (m->range[b] > L->maxStorageBufferRange) {
			diag_set(d, 2, "vulkan backend: unsupported: buffer %s is %llu bytes, more than "
				 "%s's maxStorageBufferRange (%u)", region_name(m, b),
				 (unsigned long long)m->range[b], m->r.props.deviceName, L->maxStorageBufferRange);
			return -1;
		}
	}
	m->total = align_up(at + BE_GUARD, a);
	return 0;
}

static int vk_alloc(BeModule *m, Diag *d)
{
	VkRt *r = &m->r;
	if (layout(m, d))
		return -1;
	VkBufferCreateInfo bi = {.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO, .size = m->total,
				 .usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT,
				 .sharingMode = VK_SHARING_MODE_EXCLUSIVE};
	VkResult rc = r->CreateBuffer(r->dev, &bi, NULL, &m->buf);
	VkMemoryRequirements req = {0};
	if (rc == VK_SUCCESS)
		r->GetBufferMemoryRequirements(r->dev, m->buf, &req);
	rc = rc == VK_SUCCESS ? VK_ERROR_OUT_OF_DEVICE_MEMORY : rc;
	for (int local = getenv("ASSAY_VULKAN_SYSMEM") ? 0 : 1; local >= 0 && rc == VK_ERROR_OUT_OF_DEVICE_MEMORY;
	     local--) {
		int t = memory_type(r, req.memoryTypeBits, local);
		VkMemoryAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
					   .allocationSize = req.size, .memoryTypeIndex = (uint32_t)t};
		if (t >= 0)
			rc = r->AllocateMemory(r->dev, &ai, NULL, &m->mem);
		if (t >= 0 && rc != VK_SUCCESS)
			rc = VK_ERROR_OUT_OF_DEVICE_MEMORY;
	}
	void *map = NULL;
	if (rc == VK_SUCCESS)
		rc = r->BindBufferMemory(r->dev, m->buf, m->mem, 0);
	if (rc == VK_SUCCESS)
		rc = r->MapMemory(r->dev, m->mem, 0, VK_WHOLE_SIZE, 0, &map);
	if (rc != VK_SUCCESS) {
		diag_set(d, 3, "vulkan backend: cannot allocate %llu bytes of host-visible memory on %s "
			 "(VkResult %d)", (unsigned long long)m->total, r->props.deviceName, (int)rc);
		return -1;
	}
	m->map = map;
	memset(m->map, BE_GUARD_BYTE, m->total);
	for (int b = 0; b < m->k->nbufs + 2; b++)
		memset(m->map + m->off[b], 0, m->bytes[b]);
	VkDescriptorPoolSize ps = {VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, (uint32_t)m->k->nbufs + 4};
	VkDescriptorPoolCreateInfo pi = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO,
					 .maxSets = 1, .poolSizeCount = 1, .pPoolSizes = &ps};
	VkDescriptorSetAllocateInfo si = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO,
					  .descriptorSetCount = 1, .pSetLayouts = &m->dsl};
	rc = r->CreateDescriptorPool(r->dev, &pi, NULL, &m->pool);
	si.descriptorPool = m->pool;
	if (rc == VK_SUCCESS)
		rc = r->AllocateDescriptorSets(r->dev, &si, &m->ds);
	if (rc != VK_SUCCESS) {
		diag_set(d, 3, "vulkan backend: cannot allocate the descriptor set (VkResult %d)", (int)rc);
		return -1;
	}
	int nb = m->k->nbufs + 4;
	VkDescriptorBufferInfo *info = calloc((size_t)nb, sizeof *info);
	VkWriteDescriptorSet *w = calloc((size_t)nb, sizeof *w);
	IR_ASSERT(info && w);
	for (int b = 0; b < nb; b++) {
		int r = b <= m->k->nbufs ? b : m->k->nbufs + 1;   /* three views of the scratch */
		info[b] = (VkDescriptorBufferInfo){m->buf, m->off[r], m->range[r]};
		w[b] = (VkWriteDescriptorSet){.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
					      .dstSet = m->ds, .dstBinding = (uint32_t)b,
					      .descriptorCount = 1,
					      .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
					      .pBufferInfo = &info[b]};
	}
	r->UpdateDescriptorSets(r->dev, (uint32_t)nb, w, 0, NULL);
	free(info);
	free(w);
	return 0;
}

static int vk_upload(BeModule *m, int tensor, const HostTensor *t, Diag *d)
{
	int b = be_input_buffer(m->k, tensor, m->map != NULL, t, "vulkan", d);
	if (b < 0)
		return -1;
	const KBuf *B = &m->k->bufs[b];
	memcpy(m->map + m->off[b], t->data, (size_t)B->n * (size_t)dt_info(B->fmt)->bytes);
	return 0;
}

static int vk_download(BeModule *m, int tensor, Dtype dt, HostTensor *t, Diag *d)
{
	int b = be_buffer_of(m->k, tensor, m->map != NULL, "vulkan", d);
	if (b < 0 || be_out_alloc(m->k, tensor, dt, t, "vulkan", d))
		return -1;
	be_out_fill(t, m->map + m->off[b], &m->k->bufs[b]);
	return 0;
}

/* ------------------------------------------------------------ launch */

static void barrier(const BeModule *m, VkPipelineStageFlags dst, VkAccessFlags dacc)
{
	VkMemoryBarrier mb = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
			      .srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT, .dstAccessMask = dacc};
	m->r.CmdPipelineBarrier(m->cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, dst, 0, 1, &mb, 0, NULL,
				0, NULL);
}

/* One command buffer: each kernel's dispatch (groups over x, then y), barriers between. */
static int record(BeModule *m, Diag *d)
{
	VkRt *r = &m->r;
	VkCommandPoolCreateInfo pi = {.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
				      .queueFamilyIndex = r->qfam};
	VkCommandBufferAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
					  .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY, .commandBufferCount = 1};
	VkFenceCreateInfo fi = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
	/* simultaneous use: a launch of n runs submits the one command buffer n times */
	VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
				       .flags = VK_COMMAND_BUFFER_USAGE_SIMULTANEOUS_USE_BIT};
	VkResult rc = r->CreateCommandPool(r->dev, &pi, NULL, &m->cp);
	ai.commandPool = m->cp;
	if (rc == VK_SUCCESS)
		rc = r->AllocateCommandBuffers(r->dev, &ai, &m->cb);
	if (rc == VK_SUCCESS)
		rc = r->CreateFence(r->dev, &fi, NULL, &m->fence);
	if (rc == VK_SUCCESS)
		rc = r->BeginCommandBuffer(m->cb, &bi);
	if (rc != VK_SUCCESS) {
		diag_set(d, 3, "vulkan backend: cannot record the commands (VkResult %d)", (int)rc);
		return -1;
	}
	uint32_t gx_max = r->props.limits.maxComputeWorkGroupCount[0];
	for (int i = 0; i < m->nk; i += map_plan(m->k, &vk_target)->k[i].nfused) {   /* launches */
		int64_t n = m->k->k[i].nitems;
		r->CmdBindPipeline(m->cb, VK_PIPELINE_BIND_POINT_COMPUTE, m->pipe[i]);
		r->CmdBindDescriptorSets(m->cb, VK_PIPELINE_BIND_POINT_COMPUTE, m->pll, 0, 1, &m->ds, 0, NULL);
		for (int64_t base = 0; base < n; base += m->chunk[i]) {
			int64_t items = n - base < m->chunk[i] ? n - base : m->chunk[i];
			int64_t groups = m->group[i] ? items : (items + m->wg[i] - 1) / m->wg[i];
			uint32_t gx = groups < gx_max ? (uint32_t)groups : gx_max;
			uint32_t gy = (uint32_t)((groups + gx - 1) / gx);
			r->CmdPushConstants(m->cb, m->pll, VK_SHADER_STAGE_COMPUTE_BIT, 0, 8, &base);
			r->CmdDispatch(m->cb, gx, gy, 1);
			barrier(m, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
				VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT);
		}
	}
	barrier(m, VK_PIPELINE_STAGE_HOST_BIT, VK_ACCESS_HOST_READ_BIT);
	rc = r->EndCommandBuffer(m->cb);
	if (rc != VK_SUCCESS) {
		diag_set(d, 3, "vulkan backend: cannot record the commands (VkResult %d)", (int)rc);
		return -1;
	}
	m->recorded = true;
	return 0;
}

/* The error slots are cleared once, the command buffer is submitted once per run (one
 * submission: each run's last barrier orders it before the next run's dispatches), then
 * one fence wait and one read of the slots: each kernel's first error since the clear. */
static int vk_launch(BeModule *m, int n, Diag *d)
{
	VkRt *r = &m->r;
	if (!m->map) {
		diag_set(d, 3, "vulkan backend: launch before alloc");
		return -1;
	}
	if (!m->recorded && record(m, d))
		return -1;
	uint32_t *err = (uint32_t *)(m->map + m->off[m->k->nbufs]);
	memset(err, 0, m->bytes[m->k->nbufs]);
	VkCommandBuffer *cbs = malloc((size_t)n * sizeof *cbs);
	IR_ASSERT(cbs);
	for (int i = 0; i < n; i++)
		cbs[i] = m->cb;
	VkSubmitInfo si = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO, .commandBufferCount = (uint32_t)n,
			   .pCommandBuffers = cbs};
	VkResult rc = r->ResetFences(r->dev, 1, &m->fence);
	if (rc == VK_SUCCESS)
		rc = r->QueueSubmit(r->queue, 1, &si, m->fence);
	if (rc == VK_SUCCESS)
		rc = r->WaitForFences(r->dev, 1, &m->fence, VK_TRUE, UINT64_MAX);
	free(cbs);
	if (rc != VK_SUCCESS) {
		diag_set(d, 3, "vulkan backend: the kernels failed on %s (VkResult %d%s)",
			 r->props.deviceName, (int)rc, rc == VK_ERROR_DEVICE_LOST ? ": device lost" : "");
		return -1;
	}
	for (int i = 0; i < m->nk; i++) {
		const uint32_t *e = err + (size_t)i * VK_ERR_WORDS;
		if (e[0] && e[0] <= (uint32_t)m->k->nsites) {
			be_runtime_error(m->k, (int64_t)e[0] - 1, (int64_t)((uint64_t)e[2] << 32 | e[1]), d);
			return -1;
		}
		if (e[0] == (uint32_t)m->k->nsites + (uint32_t)i + 1u) {   /* a checked op (emit.c) */
			const Graph *g = m->k->g;
			diag_set(d, 2, "integer value %lld of '%s' does not fit in 32 bits",
				 (long long)((uint64_t)e[2] << 32 | e[1]),
				 g->tensors[g->defs[m->k->k[i].def].out[0]].name);
			return -1;
		}
		if (e[0]) {
			diag_set(d, 3, "vulkan backend: kernel %d's error slot holds a site %u the program "
				 "does not have", i, e[0] - 1u);
			return -1;
		}
	}
	return 0;
}

/* Every byte outside the data regions must still be BE_GUARD_BYTE. */
static int vk_guards(BeModule *m, Diag *d)
{
	int R = m->k->nbufs + 2;
	VkDeviceSize i = 0;
	for (int b = 0; m->map && b <= R; b++) {
		VkDeviceSize end = b < R ? m->off[b] : m->total;
		for (; i < end; i++) {
			if (m->map[i] == BE_GUARD_BYTE)
				continue;
			/* the nearer of the region before (b - 1) and the one after (b) */
			VkDeviceSize past = b > 0 ? i - (m->off[b - 1] + m->bytes[b - 1]) : ~(VkDeviceSize)0;
			VkDeviceSize before = b < R ? m->off[b] - i : ~(VkDeviceSize)0;
			bool bef = before <= past;
			diag_set(d, 1, "a write outside buffer %s (%s %llu bytes from its %s)",
				 region_name(m, bef ? b : b - 1), bef ? "before it," : "past its end,",
				 (unsigned long long)(bef ? before : past), bef ? "start" : "end");
			return -1;
		}
		if (b < R)
			i = m->off[b] + m->bytes[b];
	}
	return 0;
}

static void vk_free(BeModule *m)
{
	if (!m)
		return;
	VkRt *r = &m->r;
	if (r->dev) {
		if (m->fence)
			r->DestroyFence(r->dev, m->fence, NULL);
		if (m->cp)
			r->DestroyCommandPool(r->dev, m->cp, NULL);
		if (m->pool)
			r->DestroyDescriptorPool(r->dev, m->pool, NULL);
		if (m->map)
			r->UnmapMemory(r->dev, m->mem);
		if (m->buf)
			r->DestroyBuffer(r->dev, m->buf, NULL);
		if (m->mem)
			r->FreeMemory(r->dev, m->mem, NULL);
		for (int i = 0; i < m->nk; i++) {
			if (m->pipe && m->pipe[i])
				r->DestroyPipeline(r->dev, m->pipe[i], NULL);
			if (m->sm && m->sm[i])
				r->DestroyShaderModule(r->dev, m->sm[i], NULL);
		}
		if (m->pc)
			r->DestroyPipelineCache(r->dev, m->pc, NULL);
		if (m->pll)
			r->DestroyPipelineLayout(r->dev, m->pll, NULL);
		if (m->dsl)
			r->DestroyDescriptorSetLayout(r->dev, m->dsl, NULL);
	}
	/* the device and the instance are the process's session's */
	free(m->sm);
	free(m->pipe);
	free(m->chunk);
	free(m->scratch);
	free(m->wg);
	free(m->group);
	free(m->off);
	free(m->bytes);
	free(m->range);
	free(m);
}

static int vk_available(char *why, size_t n)
{
	VkRt r;
	int rc = vkrt_open(&r, why, n);
	vkrt_close(&r);
	if (rc)
		return -1;
	return shaderc_once(NULL, why, n);
}

static char *vk_device(void)
{
	VkRt r;
	char why[512];
	char *out;
	if (vkrt_open(&r, why, sizeof why) == 0) {
		out = vkrt_describe(&r);
	} else {
		out = malloc(strlen(why) + 16);
		IR_ASSERT(out);
		sprintf(out, "none: %s", why);
	}
	vkrt_close(&r);
	return out;
}

/* The facts of the session's device (Backend.device_facts): with the float-controls modes
 * the shaders declare (symbols()) for 32 bits, SignedZeroInfNanPreserve and RoundingModeRTE,
 * + - * of f32 are correctly rounded to nearest even with NaN, infinities and zero signs
 * kept (Vulkan spec, 'Precision and Operation of SPIR-V Instructions': OpFAdd, OpFSub,
 * OpFMul "correctly rounded", the rounding mode "not specified, unless the entry point is
 * declared with the RoundingModeRTE or the RoundingModeRTZ execution mode"; comparisons
 * "correct result"; fabs, floor, ceil, fmin, fmax "correctly rounded", i.e. exact), and
 * f16/bf16 through f32 with them; DenormPreserve for 32 bits takes the f32 flush away. f64
 * stays unpromised (the precision of double-precision instructions is only "at least that
 * of single precision"), and so do / (2.5 ulp), sqrt (inherited from 1 / inversesqrt) and
 * fma (inherited from OpFMul followed by OpFAdd). Every conversion the kernels make is
 * lib.c's integer code or an exact float operation. */
static void vk_device_facts(BeFacts *f)
{
	if (vsess.owner != getpid())
		return;
	bool on[SY__COUNT];
	modes(&vsess.r, false, on);
	if (!on[SY_FC])
		return;
	if (on[SY_SZINP32] && on[SY_RTE32]) {
		f->specials = true;
		f->minmax = BE_MINMAX_IEEE;
		f->exact[DT_F32] |= BE_OPS_SELECTING | BE_OPS_ROUNDED | BE_OP(OP_CAST_F32);
		f->exact[DT_F16] |= BE_OPS_SELECTING | BE_OPS_ROUNDED | BE_OP(OP_CAST_F16);
		f->exact[DT_BF16] |= BE_OPS_SELECTING | BE_OPS_ROUNDED | BE_OP(OP_CAST_BF16);
	}
	if (on[SY_DENORM32])
		f->flush &= ~(1u << DT_F32);
	/* Mesa's llvmpipe (lavapipe, 25.0.7 here) declares SignedZeroInfNanPreserve for 32 and
	 * 64 bits and still folds x + 0.0 to x and x * 0 to 0 (the SPIR-V has OpFAdd with
	 * NoContraction under the execution mode; -0 + 0.0 comes back -0): two clean-tree
	 * emulation mismatches of a 600-case campaign, tests/regress/vk_lavapipe_zero_sign.tg */
	if (strstr(vsess.r.props.deviceName, "llvmpipe"))
		f->nsz = true;
}

/* Facts (BeFacts) every Vulkan device promises: none bit for bit but integer arithmetic
 * (without float controls the rounding mode of + - * is unspecified, a device may ignore
 * zero signs and assume no NaN, and flush subnormals of f32 and f64); every float
 * operation is `precise` (emit.c), so nothing is contracted. vk_device_facts adds what the
 * device's float controls promise. */
const MapTarget vk_target = {
	.rules = MAP_RULES_REPLICATE,
	.item_wg = 64,            /* items per work-group under a serial plan */
	.wg_min = 32,             /* whole subgroups (map/replicate.c: NVIDIA lost a 5-invocation group's stores) */
	.wg_max = VK_WG_MAX,
	.shared_max = 16384,      /* bytes of shared memory a plan may use for merges */
	.private_elems = 128,     /* longer local arrays live in the scratch buffer */
	.merge_max = MAP_MERGE_SLOTS,
	.fuse_rows = true,        /* row kernels share a launch (map/fuse.c) */
	.fuse_alike = true,       /* a shader states its work-group, integer form and f64 once */
	/* spelled checked in a kernel of 32-bit ints (emit.c's checked[]), so that an integer
	 * op that may leave i32 does not send its kernel to int64_t */
	.int_checked = BE_OP(OP_NEG) | BE_OP(OP_ADD) | BE_OP(OP_SUB) | BE_OP(OP_MUL) |
		       BE_OP(OP_IDIV) | BE_OP(OP_ABS),
};

const Backend vulkan_backend = {
	.name = "vulkan",
	.facts = {.flush = (1u << DT_F32) | (1u << DT_F64), .specials = false,
		  .minmax = BE_MINMAX_ANY, .no_contract = true, .exact = {[DT_I32] = BE_OPS_INT}},
	.flush_source = "Vulkan spec, 'Precision and Operation of SPIR-V Instructions': any "
		"denormalized value input into a shader or potentially generated by any instruction "
		"in it may be flushed to zero, unless the shader declares the DenormPreserve "
		"execution mode for its width (VkPhysicalDeviceFloatControlsProperties::"
		"shaderDenormPreserveFloat32, 64)",
	.map = &vk_target,
	.device_facts = vk_device_facts,
	.available = vk_available,
	.device = vk_device,
	.emit = vk_emit,
	.compile = vk_compile,
	.warm = vk_warm,
	.alloc = vk_alloc,
	.upload = vk_upload,
	.launch = vk_launch,
	.download = vk_download,
	.guards = vk_guards,
	.free = vk_free,
};
