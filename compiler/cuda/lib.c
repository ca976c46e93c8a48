/* compiler/cuda/lib.c: the CUDA libraries, loaded with dlopen when first used (never
 * linked), so the one binary runs where they are missing and says why.
 *
 * - The driver API: libcuda.so.1 (the driver's own library, installed with the kernel
 *   module). Entry points are taken by their current ABI names (cuMemAlloc_v2, ...), the
 *   names cuda.h maps the plain ones to.
 * - NVRTC: libnvrtc.so, then libnvrtc.so.13 and libnvrtc.so.12, on the loader's path and
 *   then in the toolkit's folders ($CUDA_HOME, $CUDA_PATH, /usr/local/cuda; lib64 and lib).
 *
 * There is no global state: each user fills its own table; dlopen counts references, so a
 * second load of a loaded library costs a lookup. Neither library is ever unloaded: NVRTC
 * carries its own C++ runtime, whose static allocations would be lost (and reported as
 * leaks by LeakSanitizer) at each unload, and unloading the driver is not supported.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cuda.h"

#define SYM(tab, field, name)                                                       \
	do {                                                                        \
		*(void **)&(tab)->field = dlsym((tab)->dl, name);                   \
		if (!(tab)->field) {                                                \
			snprintf(why, n, "%s has no symbol %s", lib, name);         \
			goto fail;                                                  \
		}                                                                   \
	} while (0)

int cu_driver_load(CuDriver *cu, char *why, size_t n)
{
	const char *lib = "libcuda.so.1";
	memset(cu, 0, sizeof *cu);
	cu->dl = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
	if (!cu->dl) {
		const char *e = dlerror();
		snprintf(why, n, "no CUDA driver (libcuda.so.1 not found: %s)", e ? e : "?");
		return -1;
	}
	SYM(cu, Init, "cuInit");
	SYM(cu, DriverGetVersion, "cuDriverGetVersion");
	SYM(cu, DeviceGetCount, "cuDeviceGetCount");
	SYM(cu, DeviceGet, "cuDeviceGet");
	SYM(cu, DeviceGetName, "cuDeviceGetName");
	SYM(cu, DeviceGetAttribute, "cuDeviceGetAttribute");
	SYM(cu, DeviceTotalMem, "cuDeviceTotalMem_v2");
	SYM(cu, DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
	SYM(cu, DevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2");
	SYM(cu, CtxSetCurrent, "cuCtxSetCurrent");
	SYM(cu, CtxSynchronize, "cuCtxSynchronize");
	SYM(cu, ModuleLoadData, "cuModuleLoadData");
	SYM(cu, ModuleUnload, "cuModuleUnload");
	SYM(cu, ModuleGetFunction, "cuModuleGetFunction");
	SYM(cu, MemAlloc, "cuMemAlloc_v2");
	SYM(cu, MemFree, "cuMemFree_v2");
	SYM(cu, MemcpyHtoD, "cuMemcpyHtoD_v2");
	SYM(cu, MemcpyDtoH, "cuMemcpyDtoH_v2");
	SYM(cu, MemsetD8, "cuMemsetD8_v2");
	SYM(cu, LaunchKernel, "cuLaunchKernel");
	SYM(cu, GetErrorString, "cuGetErrorString");
	return 0;
fail:
	dlclose(cu->dl);
	cu->dl = NULL;
	return -1;
}

void cu_driver_close(CuDriver *cu)
{
	cu->dl = NULL;   /* stays loaded (file comment) */
}

const char *cu_errstr(const CuDriver *cu, CUresult r, char *buf, size_t n)
{
	const char *s = NULL;
	if (!cu->GetErrorString || cu->GetErrorString(r, &s) != 0 || !s)
		s = "unknown error";
	snprintf(buf, n, "CUDA error %d: %s", r, s);
	return buf;
}

/* dlopens the first NVRTC found; its path into nv->path. */
static void *open_nvrtc(CuNvrtc *nv)
{
	static const char *const names[] = {"libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12"};
	const char *dirs[] = {getenv("CUDA_HOME"), getenv("CUDA_PATH"), "/usr/local/cuda"};
	static const char *const subs[] = {"lib64", "lib", "targets/x86_64-linux/lib"};
	for (size_t i = 0; i < ARRAY_LEN(names); i++) {
		void *dl = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
		if (dl) {
			snprintf(nv->path, sizeof nv->path, "%s", names[i]);
			return dl;
		}
	}
	for (size_t d = 0; d < ARRAY_LEN(dirs); d++) {
		if (!dirs[d] || !*dirs[d])
			continue;
		for (size_t s = 0; s < ARRAY_LEN(subs); s++)
			for (size_t i = 0; i < ARRAY_LEN(names); i++) {
				snprintf(nv->path, sizeof nv->path, "%s/%s/%s", dirs[d], subs[s], names[i]);
				void *dl = dlopen(nv->path, RTLD_NOW | RTLD_LOCAL);
				if (dl)
					return dl;
			}
	}
	nv->path[0] = 0;
	return NULL;
}

int cu_nvrtc_load(CuNvrtc *nv, char *why, size_t n)
{
	const char *lib = "libnvrtc";
	memset(nv, 0, sizeof *nv);
	nv->dl = open_nvrtc(nv);
	if (!nv->dl) {
		snprintf(why, n, "no NVRTC (libnvrtc.so, .so.13, .so.12 not found on the loader's path "
			 "nor under $CUDA_HOME, $CUDA_PATH, /usr/local/cuda)");
		return -1;
	}
	lib = nv->path;
	SYM(nv, Version, "nvrtcVersion");
	SYM(nv, CreateProgram, "nvrtcCreateProgram");
	SYM(nv, DestroyProgram, "nvrtcDestroyProgram");
	SYM(nv, CompileProgram, "nvrtcCompileProgram");
	SYM(nv, GetProgramLogSize, "nvrtcGetProgramLogSize");
	SYM(nv, GetProgramLog, "nvrtcGetProgramLog");
	SYM(nv, GetPTXSize, "nvrtcGetPTXSize");
	SYM(nv, GetPTX, "nvrtcGetPTX");
	SYM(nv, GetCUBINSize, "nvrtcGetCUBINSize");
	SYM(nv, GetCUBIN, "nvrtcGetCUBIN");
	SYM(nv, GetErrorString, "nvrtcGetErrorString");
	return 0;
fail:
	dlclose(nv->dl);
	nv->dl = NULL;
	return -1;
}

void cu_nvrtc_close(CuNvrtc *nv)
{
	nv->dl = NULL;   /* stays loaded (file comment) */
}

#define OPT_STR(s) s,

char *cu_nvrtc_compile(const CuNvrtc *nv, const char *src, const char *arch, size_t *len,
		       Diag *d)
{
	char archopt[64];
	snprintf(archopt, sizeof archopt, "--gpu-architecture=%s", arch);
	const char *opts[] = {archopt, CU_NVRTC_OPTS(OPT_STR)};
	bool cubin = strncmp(arch, "sm_", 3) == 0;
	void *prog = NULL;
	char *out = NULL;
	int r = nv->CreateProgram(&prog, src, "assay.cu", 0, NULL, NULL);
	if (r) {
		diag_set(d, 3, "cuda backend: nvrtcCreateProgram: %s", nv->GetErrorString(r));
		return NULL;
	}
	r = nv->CompileProgram(prog, (int)ARRAY_LEN(opts), opts);
	if (r) {
		size_t n = 0;
		nv->GetProgramLogSize(prog, &n);
		char *log = calloc(1, n + 1);
		IR_ASSERT(log);
		nv->GetProgramLog(prog, log);
		size_t keep = n > 4000 ? n - 4000 : 0;   /* the tail of a long log */
		diag_set(d, 3, "cuda backend: NVRTC (%s) failed for %s: %s\n%s", nv->path, arch,
			 nv->GetErrorString(r), log + keep);
		free(log);
		goto out;
	}
	size_t n = 0;
	r = cubin ? nv->GetCUBINSize(prog, &n) : nv->GetPTXSize(prog, &n);
	if (r == 0) {
		out = calloc(1, n + 1);
		IR_ASSERT(out);
		r = cubin ? nv->GetCUBIN(prog, out) : nv->GetPTX(prog, out);
	}
	if (r) {
		diag_set(d, 3, "cuda backend: NVRTC gave no %s: %s", cubin ? "cubin" : "PTX",
			 nv->GetErrorString(r));
		free(out);
		out = NULL;
		goto out;
	}
	*len = n;
out:
	nv->DestroyProgram(&prog);
	return out;
}
