/* compiler/c/c.h (private to compiler/c/): the C backend's two halves, and the binary
 * interface between the runtime (run.c) and a generated program.
 *
 * A generated program exports one object, `assay_program`: its kernels in order, each a
 * function run over a range of items [t0, t1) of its parallel grid (kir.h), with the
 * buffers in program order and an error slot err[2] (err[0] = error site + 1, set once by
 * compare-and-swap; err[1] = the offending value). The declarations below are emitted
 * verbatim into every program (C_ABI), so the two sides cannot drift apart.
 */
#ifndef ASSAY_C_C_H
#define ASSAY_C_C_H

#include "../kir/kir.h"

#define C_ABI(X) \
	X(typedef void AssayKernelFn(void *const *buf, int64_t *err, int64_t t0, int64_t t1);) \
	X(typedef struct { AssayKernelFn *fn; int64_t nitems; const char *name; } AssayKernel;) \
	X(typedef struct { int abi; int nkernels; const AssayKernel *kernels; } AssayProgram;)
#define C_DECL(...) __VA_ARGS__
#define C_TEXT(...) #__VA_ARGS__ "\n"
C_ABI(C_DECL)

enum { C_ABI_VERSION = 1, C_HEAP_LOCAL = 4096 };

/* The compiler command (flags documented in run.c); its text is part of the cache key. */
#define C_CFLAGS "-std=c11 -O3 -march=native -fPIC -shared -ffp-contract=off -fno-math-errno"

char *c_emit(const Kernels *k, Diag *d);
extern const Backend c_backend;   /* run.c */

#endif
