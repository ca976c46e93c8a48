/* compiler/opencl/opencl.h (private to compiler/opencl/): the OpenCL backend's parts and
 * the contract between them.
 *
 * plan.c decides, per kernel, how the kernel IR maps onto OpenCL's work-groups; emit.c
 * writes OpenCL C from the kernel IR under that plan, after prelude.c's functions; run.c
 * loads the ICD loader with dlopen, builds the program and launches it under the same
 * plan. The plan is a deterministic function of the kernel IR, so emit.c and run.c, which
 * compute it separately, always agree.
 *
 * Execution model (what a plan says):
 * - Without lanes, one work-item runs one item of the kernel's grid (kir.h) start to end.
 * - With lanes, one work-group runs one item. Its statements run in one of two contexts.
 *   Uniform: every lane runs the statement with the same values (so control flow stays
 *   uniform and barriers are legal); stores to buffers are made by lane 0 only; a write to
 *   a shared variable is made by lane 0 between two barriers. Lane: inside a distributed
 *   loop nest (SM_NEST), whose iterations are dealt to the lanes (iteration f of the
 *   collapsed nest to lane f mod lanes); everything there is private to the lane, except
 *   shared variables, which each lane touches only at elements no other lane touches
 *   (plan.c proves it from the index expressions), or, for a scalar, only by writing the
 *   one constant every writer writes. A barrier follows a nest that writes shared
 *   variables. SM_SWAP marks a uniform loop whose only statement is a distributed loop
 *   that may run outside it (a split reduction's chunk loop around its partial loop):
 *   each lane then runs its partials' whole sequence of chunks, in order.
 * - Storage of a local variable (VClass): private (an OpenCL private variable or array),
 *   __local (shared, in local memory), or a slice of the scratch buffer (global memory:
 *   arrays too large for private or local memory), per work-item or per work-group.
 */
#ifndef ASSAY_OPENCL_OPENCL_H
#define ASSAY_OPENCL_OPENCL_H

#include "../cemit.h"

enum {
	OCL_PRIV_MAX = 256,        /* elements: larger private arrays live in scratch */
	OCL_LOCAL_BYTES = 16384,   /* __local memory a kernel may use (OpenCL's minimum: 32K) */
	OCL_LANES_MAX = 256,       /* lanes wanted at most */
};

typedef enum { VC_PRIV, VC_LOCAL, VC_SCR_PRIV, VC_SCR_SHARED } VClass;
typedef enum { SM_NONE, SM_NEST, SM_SWAP } SMark;

typedef struct {
	bool lanes;            /* a work-group per item (else a work-item per item) */
	int64_t want;          /* lanes wanted, a power of two (1 without lanes) */
	int64_t scr_shared;    /* scratch bytes per item shared by its lanes */
	int64_t scr_priv;      /* scratch bytes per work-item */
	uint8_t *smark;        /* per statement: SMark */
	uint8_t *sdepth;       /* SM_NEST: the number of perfectly nested loops collapsed */
	uint8_t *sbarrier;     /* SM_NEST: writes shared variables (a barrier follows) */
	uint8_t *shared;       /* per variable: written by more than one lane */
	uint8_t *vclass;       /* per variable: VClass (for the kernel's own variables) */
	int64_t *voff;         /* per variable: scratch offset in bytes (VC_SCR_*) */
} OclPlan;

/* The plan of kernel i of k (plan.c). Free with ocl_plan_free. */
void ocl_plan(const Kernels *k, int i, OclPlan *p);
void ocl_plan_free(OclPlan *p);
/* Bytes of one element of a local variable of type t. */
int ocl_type_bytes(KType t);

/* Writes the functions every program starts with, and the f64 ones if f64 (prelude.c). */
void ocl_prelude(CEmit *e, bool f64);
/* Does the program compute or store anything in f64 (needs cl_khr_fp64)? (emit.c) */
bool ocl_needs_fp64(const Kernels *k);
char *ocl_emit(const Kernels *k, Diag *d);
extern const Backend opencl_backend;   /* run.c */

#endif
