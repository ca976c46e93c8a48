/* interp/exact.c: exact mode of the MPFR interpreter, the driver: correctly rounded
 * outputs by the interval-and-escalation method of numerics.md section 2 over the evaluator
 * of exact_eval.c; sessions for point evaluation; the threads.
 *
 * mp_exact evaluates every definition in file order at the first precision, each one's
 * elements spread over the threads (an element reads only earlier, finished definitions, so
 * the shared tables need no locks), rounds the outputs, then re-evaluates the elements that
 * did not settle by point evaluation at doubled precisions, one private session per thread
 * (reusing the first precision's exact values). Every element's result is its unique
 * correctly rounded value, or unsamplable when no precision up to the cap settles it, so
 * results are identical for any thread count; an error is reported for the smallest failing
 * unit of work, whatever the threads did.
 *
 * Invariants: MPFR's exponent range is the widest on every thread that evaluates (saved and
 * restored around the public calls); a session's level L exists only once level 0 does.
 */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include "exact_eval.h"
#include "mpfmt.h"

enum {
	DEFAULT_CAP = 10000,
	MAX_THREADS = 256,
	MAX_LEVELS = 64,
};

/* ------------------------------------------------------------ options, sessions */

struct MpSession {
	const Graph *g;
	Shared *sh;
	bool own;                   /* sh belongs to this session */
	const Level *base;          /* borrowed base of every level, or NULL */
	int nlev;
	mpfr_prec_t prec[MAX_LEVELS];
	Level *lv[MAX_LEVELS];
	Ctx *cx[MAX_LEVELS];
	MpStats st;
};

typedef struct {
	int threads;
	mpfr_prec_t p0, cap;
} Opts;

/* 64 bits when every format involved has at most f32's precision, else 128. */
static mpfr_prec_t default_prec(const Graph *g, Dtype f)
{
	int need = 0;
	if (f != DT_NONE)
		need = dt_info(f)->prec;
	for (int k = 0; f == DT_NONE && k < g->noutputs; k++)
		if (dt_info(g->outputs[k].dtype)->prec > need)
			need = dt_info(g->outputs[k].dtype)->prec;
	return need > 24 ? 128 : 64;
}

static Opts opts(const Graph *g, const MpOpts *o, Dtype f)
{
	Opts r = {1, 0, DEFAULT_CAP};
	if (o) {
		r.threads = o->threads;
		r.p0 = o->prec0;
		r.cap = o->prec_cap > 0 ? o->prec_cap : DEFAULT_CAP;
	}
	r.threads = r.threads < 1 ? 1 : r.threads > MAX_THREADS ? MAX_THREADS : r.threads;
	if (r.p0 <= 0)
		r.p0 = default_prec(g, f);
	if (r.p0 < MIN_PREC)
		r.p0 = MIN_PREC;
	if (r.cap < r.p0)
		r.cap = r.p0;
	return r;
}

/* Precisions p, 2p, 4p, ... ending with cap. */
static int plan_levels(mpfr_prec_t *out, mpfr_prec_t p, mpfr_prec_t cap)
{
	int n = 0;
	for (;;) {
		out[n++] = p;
		if (p >= cap || n == MAX_LEVELS)
			return n;
		p = p > cap / 2 ? cap : 2 * p;
	}
}

typedef struct {
	mpfr_exp_t emin, emax;
} Range;

static Range range_enter(void)
{
	Range r = {mpfr_get_emin(), mpfr_get_emax()};
	mpf_widest_range();
	return r;
}

static void range_leave(Range r)
{
	mpfr_set_emin(r.emin);
	mpfr_set_emax(r.emax);
}

static MpSession *sess_new(const Graph *g, Shared *sh, bool own, const Level *base,
			   const mpfr_prec_t *prec, int nlev)
{
	MpSession *s = ex_calloc(1, sizeof *s);
	s->g = g;
	s->sh = sh;
	s->own = own;
	s->base = base;
	s->nlev = nlev;
	memcpy(s->prec, prec, (size_t)nlev * sizeof *prec);
	return s;
}

static Ctx *sess_ctx(MpSession *s, int L, Diag *d)
{
	if (!s->cx[L]) {
		const Level *base = s->base ? s->base : L > 0 ? s->lv[0] : NULL;
		Level *l = ex_level_new(s->g, s->prec[L], base, d);
		if (!l)
			return NULL;
		s->lv[L] = l;
		s->cx[L] = ex_ctx_new(s->g, s->sh, l);
	}
	return s->cx[L];
}

static uint64_t sess_ops(const MpSession *s)
{
	uint64_t n = 0;
	for (int L = 0; s && L < s->nlev; L++)
		n += s->cx[L] ? s->cx[L]->iv.ops : 0;
	return n;
}

static void sess_free(MpSession *s)
{
	if (!s)
		return;
	for (int L = 0; L < s->nlev; L++) {
		ex_ctx_free(s->cx[L]);
		ex_level_free(s->lv[L], s->g);
	}
	if (s->own)
		ex_shared_free(s->sh);
	free(s);
}

/* Evaluates element flat of tensor t at the session's precisions in turn until it
 * settles in format f. 0 (with *val and *status) or -1. */
static int point(MpSession *s, int t, int64_t flat, Dtype f, double *val, MpStatus *status,
		 Diag *d)
{
	for (int L = 0; L < s->nlev; L++) {
		Ctx *c = sess_ctx(s, L, d);
		if (!c)
			return -1;
		c->d = d;
		if (s->prec[L] > s->st.max_prec)
			s->st.max_prec = s->prec[L];
		int k = ex_settle(c, t, flat, f, val);
		if (k < 0)
			return -1;
		if (k) {
			*status = MP_EXACT_OK;
			return 0;
		}
		if (L + 1 < s->nlev)
			s->st.escalations++;
	}
	*val = f == DT_I32 ? 0 : NAN;
	*status = MP_UNSAMPLABLE;
	s->st.unsamplable++;
	return 0;
}

MpSession *mp_session_new(const Graph *g, const HostTensor *inputs, const MpOpts *o, Diag *d)
{
	Opts op = opts(g, o, DT_NONE);
	Shared *sh = ex_shared_new(g, inputs, d);
	if (!sh)
		return NULL;
	mpfr_prec_t prec[MAX_LEVELS];
	int n = plan_levels(prec, op.p0, op.cap);
	return sess_new(g, sh, true, NULL, prec, n);
}

void mp_session_free(MpSession *s)
{
	sess_free(s);
}

int mp_point(MpSession *s, int output, const int64_t *coords, Dtype fmt, double *value,
	     MpStatus *status, Diag *d)
{
	const Graph *g = s->g;
	if (output < 0 || output >= g->noutputs) {
		diag_set(d, 2, "there is no output %d", output);
		return -1;
	}
	int t = g->outputs[output].tensor;
	const Tensor *tt = &g->tensors[t];
	int64_t flat = 0;
	for (int k = 0; k < tt->rank; k++) {
		if (coords[k] < 0 || coords[k] >= tt->dims[k].value) {
			diag_set(d, 2, "coordinate %d of output %s is %lld, outside 0..%lld", k + 1,
				 tt->name, (long long)coords[k], (long long)tt->dims[k].value - 1);
			return -1;
		}
		flat = flat * tt->dims[k].value + coords[k];
	}
	Range r = range_enter();
	int rc = point(s, t, flat, fmt == DT_NONE ? g->outputs[output].dtype : fmt, value, status, d);
	s->st.elements++;
	range_leave(r);
	return rc;
}

/* ------------------------------------------------------------ threads */

/* One unit of parallel work: 0, or -1 with *d filled. */
typedef int (*WorkFn)(void *arg, int w, int64_t i, Diag *d);

typedef struct {
	WorkFn fn;
	void *arg;
	int64_t n, chunk;
	_Atomic int64_t next, stop;   /* next unit to hand out; smallest failed unit */
	Diag *diag;                   /* per worker */
	int64_t *errat;               /* per worker: its failed unit, or n */
} Par;

typedef struct {
	Par *p;
	int w;
} ParArg;

static void atomic_min(_Atomic int64_t *x, int64_t v)
{
	int64_t cur = atomic_load(x);
	while (v < cur && !atomic_compare_exchange_weak(x, &cur, v))
		;
}

/* Units are handed out in increasing chunks and a worker stops at its first failure, so
 * every unit below the smallest failure is done, whatever the timing. */
static void par_work(Par *p, int w)
{
	for (;;) {
		int64_t i = atomic_fetch_add(&p->next, p->chunk);
		int64_t e = i + p->chunk < p->n ? i + p->chunk : p->n;
		if (i >= e)
			return;
		for (; i < e && i < atomic_load(&p->stop); i++)
			if (p->fn(p->arg, w, i, &p->diag[w]) < 0) {
				p->errat[w] = i;
				atomic_min(&p->stop, i);
				return;
			}
		if (i < e)
			return;
	}
}

static void *par_main(void *x)
{
	ParArg *a = x;
	mpf_widest_range();   /* MPFR's exponent range is per thread */
	par_work(a->p, a->w);
	mpfr_free_cache2(MPFR_FREE_LOCAL_CACHE);
	return NULL;
}

/* Runs fn over units 0..n-1 on up to `threads` workers (worker 0 is the caller). On
 * failure, d gets the message of the smallest failed unit. */
static int par_run(WorkFn fn, void *arg, int64_t n, int threads, Diag *d)
{
	if (n <= 0)
		return 0;
	if (threads > n)
		threads = (int)n;
	Par p = {.fn = fn, .arg = arg, .n = n};
	p.chunk = n / (threads * 16);
	p.chunk = p.chunk < 1 ? 1 : p.chunk > 64 ? 64 : p.chunk;
	atomic_init(&p.next, 0);
	atomic_init(&p.stop, n);
	p.diag = ex_calloc((size_t)threads, sizeof *p.diag);
	p.errat = ex_calloc((size_t)threads, sizeof *p.errat);
	pthread_t *th = ex_calloc((size_t)threads, sizeof *th);
	ParArg *args = ex_calloc((size_t)threads, sizeof *args);
	int started = 1;
	for (int w = 0; w < threads; w++) {
		p.errat[w] = n;
		args[w] = (ParArg){&p, w};
	}
	for (int w = 1; w < threads; w++, started++)
		if (pthread_create(&th[w], NULL, par_main, &args[w]) != 0)
			break;
	par_work(&p, 0);
	for (int w = 1; w < started; w++)
		pthread_join(th[w], NULL);
	int best = -1;
	for (int w = 0; w < threads; w++)
		if (p.errat[w] < n && (best < 0 || p.errat[w] < p.errat[best]))
			best = w;
	if (best >= 0 && d && !d->msg) {
		*d = p.diag[best];
		p.diag[best].msg = NULL;
	}
	for (int w = 0; w < threads; w++)
		diag_clear(&p.diag[w]);
	free(p.diag);
	free(p.errat);
	free(th);
	free(args);
	return best >= 0 ? -1 : 0;
}

/* ------------------------------------------------------------ mp_exact */

typedef struct {
	const Graph *g;
	MpSession *main;     /* its level 0 is the table every worker fills and reads */
	Ctx **cx;            /* per worker, at level 0 */
	MpSession **priv;    /* per worker: escalations */
	int nthreads;
	int def;
	mpfr_prec_t p0, cap;
	HostTensor *outs;
	uint8_t **status;
	int64_t *first;      /* global index of each output's first element; [noutputs] = total */
	uint8_t *todo;       /* per global element: not settled at the first precision */
	int64_t *list;       /* the unsettled global elements */
} Run;

static int work_def(void *arg, int w, int64_t unit, Diag *d)
{
	Run *r = arg;
	r->cx[w]->d = d;
	return ex_elem(r->cx[w], r->def, unit);
}

static void locate(const Run *r, int64_t i, int *k, int64_t *flat)
{
	int o = 0;
	while (r->first[o + 1] <= i)
		o++;
	*k = o;
	*flat = i - r->first[o];
}

static int work_settle(void *arg, int w, int64_t i, Diag *d)
{
	Run *r = arg;
	int k;
	int64_t flat;
	double v;
	locate(r, i, &k, &flat);
	Ctx *c = r->cx[w];
	c->d = d;
	int s = ex_settle(c, r->g->outputs[k].tensor, flat, r->g->outputs[k].dtype, &v);
	if (s < 0)
		return -1;
	if (s)
		ht_set(&r->outs[k], flat, v);
	else
		r->todo[i] = 1;
	return 0;
}

static int work_escalate(void *arg, int w, int64_t i, Diag *d)
{
	Run *r = arg;
	int k;
	int64_t flat;
	double v;
	MpStatus st;
	locate(r, r->list[i], &k, &flat);
	if (!r->priv[w]) {
		mpfr_prec_t prec[MAX_LEVELS];
		int n = r->p0 < r->cap ? plan_levels(prec, r->p0 > r->cap / 2 ? r->cap : 2 * r->p0, r->cap) : 0;
		r->priv[w] = sess_new(r->g, r->main->sh, false, r->main->lv[0], prec, n);
	}
	MpSession *s = r->priv[w];
	if (s->nlev > 0)
		s->st.escalations++;
	if (point(s, r->g->outputs[k].tensor, flat, r->g->outputs[k].dtype, &v, &st, d) < 0)
		return -1;
	ht_set(&r->outs[k], flat, v);
	if (st != MP_EXACT_OK && r->status)
		r->status[k][flat] = (uint8_t)st;
	return 0;
}

static int eval_defs(Run *r, Diag *d)
{
	const Graph *g = r->g;
	Level *l0 = r->main->lv[0];
	for (int di = 0; di < g->ndefs; di++) {
		int64_t units = ex_prepare(l0, g, di);   /* workers must not allocate pages */
		r->def = di;
		if (par_run(work_def, r, units, r->nthreads, d) < 0)
			return -1;
	}
	return 0;
}

static int alloc_outputs(Run *r, Diag *d)
{
	const Graph *g = r->g;
	r->first = ex_calloc((size_t)g->noutputs + 1, sizeof *r->first);
	for (int k = 0; k < g->noutputs; k++) {
		const Tensor *t = &g->tensors[g->outputs[k].tensor];
		int64_t dims[IR_MAXRANK];
		for (int i = 0; i < t->rank; i++)
			dims[i] = t->dims[i].value;
		if (ht_alloc(&r->outs[k], g->outputs[k].dtype, t->rank, dims) < 0) {
			diag_set(d, 3, "out of memory for output %s", t->name);
			return -1;
		}
		if (r->status)
			r->status[k] = ex_calloc((size_t)r->outs[k].n, 1);
		r->first[k + 1] = r->first[k] + r->outs[k].n;
	}
	return 0;
}

static int round_outputs(Run *r, Diag *d)
{
	int64_t total = r->first[r->g->noutputs], n = 0;
	r->todo = ex_calloc((size_t)total, 1);
	if (par_run(work_settle, r, total, r->nthreads, d) < 0)
		return -1;
	r->list = ex_calloc((size_t)total, sizeof *r->list);
	for (int64_t i = 0; i < total; i++)
		if (r->todo[i])
			r->list[n++] = i;
	r->priv = ex_calloc((size_t)r->nthreads, sizeof *r->priv);
	return par_run(work_escalate, r, n, r->nthreads, d);
}

static void run_stats(const Run *r, MpStats *st)
{
	memset(st, 0, sizeof *st);
	st->elements = r->first ? r->first[r->g->noutputs] : 0;
	st->max_prec = r->p0;
	for (int w = 0; w < r->nthreads; w++) {
		if (r->cx && r->cx[w])
			st->mpfr_ops += r->cx[w]->iv.ops;
		const MpSession *s = r->priv ? r->priv[w] : NULL;
		if (!s)
			continue;
		st->mpfr_ops += sess_ops(s);
		st->escalations += s->st.escalations;
		st->unsamplable += s->st.unsamplable;
		if (s->st.max_prec > st->max_prec)
			st->max_prec = s->st.max_prec;
	}
}

int mp_exact(const Graph *g, const HostTensor *inputs, const MpOpts *o,
	     HostTensor *outs, uint8_t **status, MpStats *st, Diag *d)
{
	Opts op = opts(g, o, DT_NONE);
	Run r = {.g = g, .nthreads = op.threads, .p0 = op.p0, .cap = op.cap, .outs = outs,
		 .status = status};
	memset(outs, 0, (size_t)g->noutputs * sizeof *outs);
	if (status)
		memset(status, 0, (size_t)g->noutputs * sizeof *status);
	Range rg = range_enter();
	int rc = -1;
	Shared *sh = ex_shared_new(g, inputs, d);
	if (!sh)
		goto done;
	r.main = sess_new(g, sh, true, NULL, &r.p0, 1);
	Ctx *c0 = sess_ctx(r.main, 0, d);
	if (!c0)
		goto done;
	ex_shared_fill(sh, c0);
	r.cx = ex_calloc((size_t)r.nthreads, sizeof *r.cx);
	r.cx[0] = c0;
	for (int w = 1; w < r.nthreads; w++)
		r.cx[w] = ex_ctx_new(g, sh, r.main->lv[0]);
	if (eval_defs(&r, d) < 0 || alloc_outputs(&r, d) < 0 || round_outputs(&r, d) < 0)
		goto done;
	rc = 0;
done:
	if (st)
		run_stats(&r, st);
	for (int w = 0; r.priv && w < r.nthreads; w++)
		sess_free(r.priv[w]);
	for (int w = 1; r.cx && w < r.nthreads; w++)
		ex_ctx_free(r.cx[w]);
	sess_free(r.main);
	if (!r.main)
		ex_shared_free(sh);
	free(r.cx);
	free(r.priv);
	free(r.first);
	free(r.todo);
	free(r.list);
	for (int k = 0; rc < 0 && k < g->noutputs; k++) {
		ht_free(&outs[k]);
		if (status) {
			free(status[k]);
			status[k] = NULL;
		}
	}
	range_leave(rg);
	return rc;
}

/* ------------------------------------------------------------ mp_points */

typedef struct {
	const Graph *g;
	const HostTensor *inputs;
	const MpOpts *o;
	int output, rank;
	const int64_t *coords;
	Dtype fmt;
	double *values;
	uint8_t *status;
	MpSession **sess;   /* per worker, each with its own input cache */
} Points;

static int work_point(void *arg, int w, int64_t i, Diag *d)
{
	Points *p = arg;
	if (!p->sess[w] && !(p->sess[w] = mp_session_new(p->g, p->inputs, p->o, d)))
		return -1;
	MpStatus st;
	if (mp_point(p->sess[w], p->output, p->coords + i * p->rank, p->fmt, &p->values[i], &st,
		     d) < 0)
		return -1;
	if (p->status)
		p->status[i] = (uint8_t)st;
	return 0;
}

int mp_points(const Graph *g, const HostTensor *inputs, const MpOpts *o, int output,
	      const int64_t *coords, int64_t n, Dtype fmt, double *values, uint8_t *status,
	      MpStats *st, Diag *d)
{
	if (output < 0 || output >= g->noutputs) {
		diag_set(d, 2, "there is no output %d", output);
		return -1;
	}
	Dtype f = fmt == DT_NONE ? g->outputs[output].dtype : fmt;
	Opts op = opts(g, o, f);
	MpOpts mo = {1, op.p0, op.cap};
	Points p = {g, inputs, &mo, output, g->tensors[g->outputs[output].tensor].rank, coords,
		    fmt, values, status, NULL};
	p.sess = ex_calloc((size_t)op.threads, sizeof *p.sess);
	Range rg = range_enter();
	int rc = par_run(work_point, &p, n, op.threads, d);
	if (st)
		memset(st, 0, sizeof *st);
	for (int w = 0; w < op.threads; w++) {
		MpSession *s = p.sess[w];
		if (s && st) {
			st->elements += s->st.elements;
			st->unsamplable += s->st.unsamplable;
			st->escalations += s->st.escalations;
			st->mpfr_ops += sess_ops(s);
			if (s->st.max_prec > st->max_prec)
				st->max_prec = s->st.max_prec;
		}
		sess_free(s);
	}
	free(p.sess);
	range_leave(rg);
	return rc;
}
