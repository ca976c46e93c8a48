/* compiler/opencl/opencl.h (private to compiler/opencl/): the OpenCL backend's parts and
 * the contract between them.
 *
 * The mapping stage (compiler/map/map.h, rules MAP_RULES_LANES in compiler/map/lanes.c) decides,
 * per kernel, how the kernel IR maps onto OpenCL's work-groups, and records the plan with
 * the program; emit.c writes OpenCL C from the kernel IR under that plan, after
 * lib.c's functions; run.c loads the ICD loader with dlopen, builds the program and
 * launches it from the same record.
 *
 * Execution model (what a plan says):
 * - Without lanes (MAP_ITEM), one work-item runs one item of the kernel's grid (kir.h)
 *   start to end.
 * - With lanes (MAP_GROUP), one work-group runs one item. Its statements run in one of two
 *   contexts. Uniform: every lane runs the statement with the same values (so control
 *   flow stays uniform and barriers are legal); stores to buffers are made by lane 0 only;
 *   a write to a shared variable is made by lane 0 between two barriers. Lane: inside a
 *   distributed loop nest (MAP_S_NEST), whose iterations are dealt to the lanes (iteration
 *   f of the collapsed nest to lane f mod lanes); everything there is private to the lane,
 *   except shared variables (MAP_V_SHARED), which each lane touches only at elements no
 *   other lane touches (map/lanes.c proves it from the index expressions), or, for a
 *   scalar, only by writing the one constant every writer writes. A barrier follows a nest
 *   that writes shared variables. MAP_S_SWAP marks a uniform loop whose only statement is
 *   a distributed loop that may run outside it (a split reduction's chunk loop around its
 *   partial loop): each lane then runs its partials' whole sequence of chunks, in order.
 * - Storage of a local variable (MapKernel.vplace): private (an OpenCL private variable or
 *   array), __local (shared, in local memory), or a slice of the scratch buffer (global
 *   memory: arrays too large for private or local memory), per work-item or per
 *   work-group.
 */
#ifndef ASSAY_OPENCL_OPENCL_H
#define ASSAY_OPENCL_OPENCL_H

#include "../emit/cemit.h"
#include "../map/map.h"

/* The opencl target's limits (run.c; its plans: compiler/map/lanes.c). */
extern const MapTarget ocl_target;

/* Writes the functions every program starts with, and the f64 ones if f64 (lib.c). */
void ocl_prelude(CEmit *e, bool f64);
/* Does the program compute or store anything in f64 (needs cl_khr_fp64)? (emit.c) */
bool ocl_needs_fp64(const Kernels *k);
char *ocl_emit(const Kernels *k, Diag *d);
extern const Backend opencl_backend;   /* run.c */

#endif
