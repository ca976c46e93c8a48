/* compiler/cuda/cuda.h (private to compiler/cuda/): the CUDA backend's parts and what they
 * share: the launch plan of each kernel (plan.c), the emitter (emit.c), the runtime
 * libraries loaded with dlopen (lib.c) and the Backend struct (run.c).
 *
 * Execution model (plan.c states the analysis, emit.c the text). Each kernel of the kernel
 * IR runs in one of two modes:
 * - CM_THREAD: one CUDA thread per item of the kernel's grid (kir.h), every local private;
 *   a grid-stride loop over items, so any grid size is correct.
 * - CM_BLOCK: one thread block (CuPlan.threads threads) per item. Statements run by every
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

#include "../kir.h"

typedef enum { CM_THREAD, CM_BLOCK } CuMode;

/* Where a local variable lives. */
typedef enum {
	SC_REG,        /* private scalar */
	SC_LOCAL,      /* private array on the thread's stack */
	SC_SCRATCH_T,  /* private array in global scratch, interleaved by thread */
	SC_SHARED,     /* block-shared scalar or array (__shared__) */
	SC_SCRATCH_B,  /* block-shared array in global scratch, one slice per block */
} CuStore;

/* Statement marks: the distributed constructs of a CM_BLOCK kernel. */
enum {
	CD_NONE,
	CD_NEST,        /* head of a par-loop nest dealt to the threads (depth in CuPlan.depth) */
	CD_SPLIT,       /* the chunk loop of a split reduction: for c { for s in [0, S) {..} } */
	CD_SPLIT_TAIL,  /* the tail loop that follows it: for s2 in [0, rem) {..} */
};

enum {
	CU_THREAD_BLOCK = 128,     /* block size of CM_THREAD kernels */
	CU_MAX_BLOCK = 256,        /* largest block of a CM_BLOCK kernel */
	CU_LOCAL_MAX = 2048,       /* bytes: larger private arrays go to scratch */
	CU_SHARED_MAX = 40960,     /* bytes of __shared__ locals per block */
};

typedef struct {
	CuMode mode;
	int threads;              /* threads per block */
	int64_t thread_bytes;     /* scratch bytes per thread (SC_SCRATCH_T locals) */
	int64_t block_bytes;      /* scratch bytes per block (SC_SCRATCH_B locals) */
	int64_t shared_bytes;     /* static __shared__ bytes */
	uint8_t *store;           /* per variable (nvars + 1): CuStore */
	int64_t *off;             /* per variable: byte offset within its scratch slot */
	uint8_t *mark;            /* per statement (ns + 1): CD_* */
	uint8_t *depth;           /* per statement: depth of a CD_NEST */
	int64_t split;            /* CD_SPLIT: the number of partials S */
} CuPlan;

/* The plan of kernel ki of k: deterministic, so the emitter and the runtime agree.
 * Environment: ASSAY_CUDA_MODE=block makes every kernel with a distributable construct a
 * CM_BLOCK kernel (tests use it to exercise both modes); =thread makes all CM_THREAD. */
void cuda_plan(const Kernels *k, int ki, CuPlan *p);
void cuda_plan_free(CuPlan *p);

/* emit.c: the CUDA C++ source of the program (one __global__ function k<i> per kernel). */
char *cuda_emit(const Kernels *k, Diag *d);
/* The size of one element of a local of type t in the generated code. */
int cuda_type_bytes(KType t);

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
