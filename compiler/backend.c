/* compiler/backend.c: the list of backends and the one shared driver over them. Shared code
 * reaches a backend only through its Backend struct (architecture.md "Backends"); adding a
 * backend adds one row to the table below. */
#include <stdlib.h>
#include <string.h>
#include "compiler.h"
#include "berun.h"
#include "c/c.h"
#include "opencl/opencl.h"
#include "cuda/cuda.h"
#include "vulkan/vulkan.h"
#include "wgsl/wgsl.h"

static const Backend *const backends[] = {
	&c_backend,
	&opencl_backend,
	&cuda_backend,
	&vulkan_backend,
	&wgsl_backend,
};

const Backend *be_at(int k)
{
	return k >= 0 && k < (int)ARRAY_LEN(backends) ? backends[k] : NULL;
}

const Backend *be_find(const char *name)
{
	for (size_t i = 0; i < ARRAY_LEN(backends); i++)
		if (strcmp(backends[i]->name, name) == 0)
			return backends[i];
	return NULL;
}

int be_run(const Backend *b, const Kernels *k, const BeOpts *o, const HostTensor *inputs,
	   HostTensor *outs, BeStats *st, Diag *d)
{
	const Graph *g = k->g;
	int rc = -1, got = 0;
	char *src = b->emit(k, d);
	if (!src)
		return -1;
	BeModule *m = b->compile(k, src, o, st, d);
	free(src);
	if (!m)
		return -1;
	if (b->alloc(m, d))
		goto out;
	for (int i = 0; i < ir_ninputs(g); i++)
		if (b->upload(m, ir_input_tensor(g, i), &inputs[i], d))
			goto out;
	double t0 = be_now();
	if (b->launch(m, d))
		goto out;
	if (st)
		st->launch_s = be_now() - t0;
	if (b->guards(m, d))
		goto out;
	for (; got < g->noutputs; got++)
		if (b->download(m, g->outputs[got].tensor, g->outputs[got].dtype, &outs[got], d))
			goto out;
	rc = 0;
out:
	if (rc)
		for (int i = 0; i < got; i++)
			ht_free(&outs[i]);
	b->free(m);
	return rc;
}
