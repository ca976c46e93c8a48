/* compiler/backend.c: the list of backends and the one run driver over them (compiler.h,
 * "The run driver"): the sequence emit, compile, alloc, upload, launch, guards, download
 * written once, with the stage each failure came from, the timing of back-to-back runs
 * the benchmarks report and the classification of failures verify's verdicts use. Shared
 * code reaches a backend only through its Backend struct (architecture.md "Backends");
 * adding a backend adds one row to the table below. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "compiler.h"
#include "emit/berun.h"
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

/* ------------------------------------------------------------ the run driver */

void be_run_open(BeRun *r, const Backend *b, const Kernels *k)
{
	*r = (BeRun){.b = b, .k = k, .stage = BE_ST_OPEN};
}

/* Enters stage s, which needs stage `need` done: 0, or -1 with d (code 3) when the run
 * already failed, s comes too early, or s makes something (emit, compile, alloc, upload)
 * and was done already. */
static int enter(BeRun *r, BeStage s, BeStage need, Diag *d)
{
	bool again = s >= BE_ST_LAUNCH;
	if (r->failed || r->stage < need || (!again && r->stage >= s)) {
		diag_set(d, 3, "%s backend: the run driver was asked for a stage %s", r->b->name,
			 r->failed ? "after a failure" : r->stage < need ? "before the one it needs" :
			 "a second time");
		return -1;
	}
	r->stage = s;
	if (r->at)
		r->at(r->ctx, s);
	return 0;
}

static int failed(BeRun *r)
{
	r->failed = true;
	return -1;
}

int be_run_emit(BeRun *r, Diag *d)
{
	if (enter(r, BE_ST_EMIT, BE_ST_OPEN, d))
		return -1;
	free(r->src);
	return (r->src = r->b->emit(r->k, d)) ? 0 : failed(r);
}

int be_run_compile(BeRun *r, const BeOpts *o, Diag *d)
{
	if (enter(r, BE_ST_COMPILE, BE_ST_EMIT, d))
		return -1;
	if (!r->src) {
		diag_set(d, 3, "%s backend: no source to compile", r->b->name);
		return failed(r);
	}
	return (r->m = r->b->compile(r->k, r->src, o, &r->st, d)) ? 0 : failed(r);
}

int be_run_bind(BeRun *r, const HostTensor *inputs, Diag *d)
{
	const Graph *g = r->k->g;
	if (enter(r, BE_ST_ALLOC, BE_ST_COMPILE, d))
		return -1;
	if (r->b->alloc(r->m, d))
		return failed(r);
	if (enter(r, BE_ST_UPLOAD, BE_ST_ALLOC, d))
		return -1;
	for (int i = 0; i < ir_ninputs(g); i++)
		if (r->b->upload(r->m, ir_input_tensor(g, i), &inputs[i], d))
			return failed(r);
	return 0;
}

int be_run_ready(BeRun *r, const BeOpts *o, const HostTensor *inputs, Diag *d)
{
	return be_run_emit(r, d) || be_run_compile(r, o, d) || be_run_bind(r, inputs, d) ? -1 : 0;
}

int be_run_launch(BeRun *r, int n, Diag *d)
{
	if (enter(r, BE_ST_LAUNCH, BE_ST_UPLOAD, d))
		return -1;
	if (n < 1)
		n = 1;
	double t0 = be_now();
	if (r->b->launch(r->m, n, d))
		return failed(r);
	r->st.launch_s = be_now() - t0;
	r->st.runs = n;
	return 0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

int be_run_time(BeRun *r, const BeTimeOpts *o, BeTimes *t, Diag *d)
{
	int batches = o->batches > 0 ? o->batches : 1, first = 0, n = 1;
	memset(t, 0, sizeof *t);
	if (be_run_launch(r, 1, d))
		return -1;
	t->warm_s = r->st.launch_s;
	if (be_run_launch(r, 1, d))
		return -1;
	double one = t->one_s = r->st.launch_s;
	double *v = calloc((size_t)batches, sizeof *v);
	IR_ASSERT(v);
	if (o->long_s > 0 && one > o->long_s) {
		batches = one > 10 * o->long_s ? 1 : batches < 3 ? batches : 3;
		v[first++] = one;
	} else if (o->batch_s > 0) {
		double want = o->batch_s / (one > 1e-9 ? one : 1e-9);
		n = want >= BE_MAX_RUNS ? BE_MAX_RUNS : want > 1 ? (int)ceil(want) : 1;
	}
	for (int i = first; i < batches; i++) {
		if (be_run_launch(r, n, d)) {
			free(v);
			return -1;
		}
		v[i] = r->st.launch_s / n;
	}
	qsort(v, (size_t)batches, sizeof *v, cmp_double);
	t->run_s = v[batches / 2];
	t->batches = batches;
	t->runs = n;
	free(v);
	return 0;
}

int be_run_guards(BeRun *r, Diag *d)
{
	if (enter(r, BE_ST_GUARDS, BE_ST_LAUNCH, d))
		return -1;
	return r->b->guards(r->m, d) ? failed(r) : 0;
}

int be_run_download(BeRun *r, int k, HostTensor *t, Diag *d)
{
	const Graph *g = r->k->g;
	if (enter(r, BE_ST_DOWNLOAD, BE_ST_LAUNCH, d))
		return -1;
	IR_ASSERT(k >= 0 && k < g->noutputs);
	if (r->b->download(r->m, g->outputs[k].tensor, g->outputs[k].dtype, t, d))
		return failed(r);
	if (++r->downloaded >= g->noutputs)
		enter(r, BE_ST_DONE, BE_ST_DOWNLOAD, d);
	return 0;
}

int be_run_outputs(BeRun *r, HostTensor *outs, Diag *d)
{
	int got = 0;
	for (; got < r->k->g->noutputs; got++)
		if (be_run_download(r, got, &outs[got], d)) {
			while (got > 0)
				ht_free(&outs[--got]);
			return -1;
		}
	return 0;
}

BeFail be_run_fail(const BeRun *r, const Diag *d)
{
	if (!r->failed)
		return BE_FAIL_NONE;
	if (d->env)
		return BE_FAIL_ENV;
	switch (r->stage) {
	case BE_ST_EMIT:
	case BE_ST_COMPILE: return d->code == 2 ? BE_FAIL_UNSUPPORTED : BE_FAIL_COMPILE;
	case BE_ST_ALLOC: return d->code == 2 ? BE_FAIL_UNSUPPORTED : BE_FAIL_BACKEND;
	case BE_ST_LAUNCH: return d->code == 2 ? BE_FAIL_RUNTIME : BE_FAIL_BACKEND;
	case BE_ST_GUARDS: return d->code == 1 ? BE_FAIL_OOB : BE_FAIL_BACKEND;
	default: return BE_FAIL_BACKEND;
	}
}

void be_run_close(BeRun *r)
{
	if (r->m)
		r->b->free(r->m);
	free(r->src);
	r->m = NULL;
	r->src = NULL;
}

int be_run(const Backend *b, const Kernels *k, const BeOpts *o, const HostTensor *inputs,
	   HostTensor *outs, BeStats *st, Diag *d)
{
	BeRun r;
	be_run_open(&r, b, k);
	int rc = be_run_ready(&r, o, inputs, d) || be_run_launch(&r, 1, d) ||
		 be_run_guards(&r, d) || be_run_outputs(&r, outs, d) ? -1 : 0;
	if (st)
		*st = r.st;
	be_run_close(&r);
	return rc;
}
