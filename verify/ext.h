/* verify/ext.h (private to verify/): the worker's side of external kernels (external.c).
 */
#ifndef ASSAY_VERIFY_EXT_H
#define ASSAY_VERIFY_EXT_H

#include "verify.h"

/* One run of external backend b (vf_is_external) in the calling worker: the request
 * directory made, the command run there, its outputs read into outs[k] (allocated here,
 * in each output's dtype, on WK_OK only). *source gets the request's text (malloc'ed; the
 * record's kernel source); msg the reason of any other outcome: WK_CRASH (the command
 * died or exited non-zero, or the directory could not be written: the caller's
 * environment probe tells that apart), WK_UNSUPPORTED (it declined) or WK_BAD_OUTPUT. */
WorkerStatus vf_ext_serve(const Backend *b, const Graph *g, const Schedule *s,
			  const HostTensor *in, uint64_t seed, HostTensor *outs, char **source,
			  char *msg, size_t n);
/* Whether external backend b was given capabilities (vf_ext_set_caps) that g under s
 * needs more than: true with why; false for any other backend. */
bool vf_ext_lacks(const Backend *b, const Graph *g, const Schedule *s, char *why, size_t n);
/* The allowance rows of allowances.def the budgets of b use: "opencl" for an external
 * kernel (docs/external.md "What is claimed"), b->name for the others. */
const char *vf_ext_rows(const Backend *b);

#endif
