/* compiler/cuda/cuda.h (private to compiler/cuda/): the CUDA backend's parts and what they
 * share: the emitter (emit.c), the runtime libraries loaded with dlopen (lib.c) and the
 * Backend struct (run.c). Each kernel's launch plan comes from the mapping stage
 * (compiler/map/map.h, rules MAP_RULES_BLOCK in compiler/map/block.c), recorded with the
 * program: emit.c spells it and run.c launches from it.
 *
 * Execution model (map/block.c states the analysis, emit.c the text). Each kernel of the
 * kernel IR runs in one of two modes:
 * - MAP_ITEM: one CUDA thread per item of the kernel's grid (kir.h), every local private;
 *   a grid-stride loop over items, so any grid size is correct.
 * - MAP_GROUP: one thread block (MapKernel.wg threads) per item. Statements run by every
 *   thread of the block alike ("uniform": values agree in every thread, so branch and loop
 *   conditions are the same everywhere and barriers are legal), except the *distributed*
 *   constructs: a nest of `par` loops (its iterations dealt to the threads) and the strided
 *   partial accumulators of a split reduction (partial s computed by thread s mod W, then
 *   combined by the uniform code in the kernel IR's own order). Locals written inside a
 *   distributed construct and declared outside it live in shared memory (or, when large,
 *   in per-block global scratch); barriers surround each distributed construct and each
 *   uniform write of such a local (done by thread 0); stores in uniform code are done by
 *   thread 0 alone.
 * Private locals too large for the thread's own stack live in per-thread global scratch,
 * interleaved (element i of thread t at i * nthreads + t).
 */
#ifndef ASSAY_CUDA_CUDA_H
#define ASSAY_CUDA_CUDA_H

#include "../map/map.h"

/* Where a local variable lives, in the emitter's terms (from its plan's vshare and vplace). */
typedef enum {
	SC_REG,        /* private scalar */
	SC_LOCAL,      /* private array on the thread's stack */
	SC_SCRATCH_T,  /* private array in global scratch, interleaved by thread */
	SC_SHARED,     /* block-shared scalar or array (__shared__) */
	SC_SCRATCH_B,  /* block-shared array in global scratch, one slice per block */
} CuStore;

/* The cuda target's limits (run.c; its plans: compiler/map/block.c). Environment:
 * ASSAY_CUDA_MODE=block makes every kernel with a distributable construct a block per item
 * (tests use it to exercise both modes); =thread makes every one a thread per item. */
extern const MapTarget cuda_target;

/* emit.c: the CUDA C++ source of the program (one __global__ function k<i> per kernel). */
char *cuda_emit(const Kernels *k, Diag *d);

/* NVRTC options (the numerics they fix: run.c's header comment). */
#define CU_NVRTC_OPTS(X) X("--fmad=false") X("--prec-div=true") X("--prec-sqrt=true") \
	X("--ftz=false") X("-default-device") X("-std=c++17")

/* lib.c: NVRTC and the driver API through dlopen; a table of entry points per use (no
 * global state: dlopen is reference-counted and cheap when the library is loaded). */
typedef int CUresult;
typedef int CUdevice;
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef unsigned long long CUdeviceptr;

typedef struct {
	void *dl;
	CUresult (*Init)(unsigned);
	CUresult (*DriverGetVersion)(int *);
	CUresult (*DeviceGetCount)(int *);
	CUresult (*DeviceGet)(CUdevice *, int);
	CUresult (*DeviceGetName)(char *, int, CUdevice);
	CUresult (*DeviceGetAttribute)(int *, int, CUdevice);
	CUresult (*DeviceTotalMem)(size_t *, CUdevice);
	CUresult (*DevicePrimaryCtxRetain)(CUcontext *, CUdevice);
	CUresult (*DevicePrimaryCtxRelease)(CUdevice);
	CUresult (*CtxSetCurrent)(CUcontext);
	CUresult (*CtxSynchronize)(void);
	CUresult (*ModuleLoadData)(CUmodule *, const void *);
	CUresult (*ModuleUnload)(CUmodule);
	CUresult (*ModuleGetFunction)(CUfunction *, CUmodule, const char *);
	CUresult (*MemAlloc)(CUdeviceptr *, size_t);
	CUresult (*MemFree)(CUdeviceptr);
	CUresult (*MemcpyHtoD)(CUdeviceptr, const void *, size_t);
	CUresult (*MemcpyDtoH)(void *, CUdeviceptr, size_t);
	CUresult (*MemsetD8)(CUdeviceptr, unsigned char, size_t);
	CUresult (*LaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
				 unsigned, unsigned, void *, void **, void **);
	CUresult (*GetErrorString)(CUresult, const char **);
} CuDriver;

typedef struct {
	void *dl;
	char path[256];
	int (*Version)(int *, int *);
	int (*CreateProgram)(void **, const char *, const char *, int, const char *const *,
			     const char *const *);
	int (*DestroyProgram)(void **);
	int (*CompileProgram)(void *, int, const char *const *);
	int (*GetProgramLogSize)(void *, size_t *);
	int (*GetProgramLog)(void *, char *);
	int (*GetPTXSize)(void *, size_t *);
	int (*GetPTX)(void *, char *);
	int (*GetCUBINSize)(void *, size_t *);
	int (*GetCUBIN)(void *, char *);
	const char *(*GetErrorString)(int);
} CuNvrtc;

enum {   /* CUdevice_attribute values used here (the driver API's cuda.h) */
	CU_ATTR_MULTIPROCESSOR_COUNT = 16,
	CU_ATTR_CC_MAJOR = 75,
	CU_ATTR_CC_MINOR = 76,
};

/* 0, or -1 with why (the library not found, a symbol missing). */
int cu_driver_load(CuDriver *cu, char *why, size_t n);
int cu_nvrtc_load(CuNvrtc *nv, char *why, size_t n);
void cu_driver_close(CuDriver *cu);
void cu_nvrtc_close(CuNvrtc *nv);
/* The driver's name and message for an error code, into buf. */
const char *cu_errstr(const CuDriver *cu, CUresult r, char *buf, size_t n);
/* Compiles src for arch ("compute_90": PTX; "sm_90": a cubin). Returns the image
 * (malloc'ed, *len bytes; PTX NUL-terminated) or NULL with d (the compiler's log). */
char *cu_nvrtc_compile(const CuNvrtc *nv, const char *src, const char *arch, size_t *len,
		       Diag *d);

extern const Backend cuda_backend;   /* run.c */

#endif
