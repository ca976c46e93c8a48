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
 * Limits (limit.h): each public call (and each MpSession) has one Limits, shared by its
 * threads; mp_exact checks its footprint against the cap before it allocates anything
 * (mp_check_memory), every unit of work polls the deadline and reports progress, and a
 * call that fails with a limit hit returns -2 with the limit's message, whatever error the
 * threads stopped with.
 *
 * Invariants: MPFR's exponent range is the widest on every thread that evaluates (saved and
 * restored around the public calls); a session's level L exists only once level 0 does.
 */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "exact_eval.h"
#include "mpfmt.h"

enum {
	DEFAULT_CAP = 10000,
	MAX_THREADS = 256,
	MAX_LEVELS = 64,
	DEFAULT_BLOCK = 4096,   /* terms a reduction holds before it streams them */
	PAGE_ELEMS = 4096,      /* exact_eval.c's table page, for footprints */
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
	Limits *lim;                /* the evaluation's */
	Limits *own_lim;            /* mp_session_new's, freed with the session */
};

typedef struct {
	int threads;
	mpfr_prec_t p0, cap;
	size_t block;
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
	Opts r = {1, 0, DEFAULT_CAP, DEFAULT_BLOCK};
	if (o) {
		r.threads = o->threads;
		r.p0 = o->prec0;
		r.cap = o->prec_cap > 0 ? o->prec_cap : DEFAULT_CAP;
		r.block = o->red_block > 0 ? (size_t)o->red_block : DEFAULT_BLOCK;
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
			   const mpfr_prec_t *prec, int nlev, Limits *lim)
{
	MpSession *s = ex_calloc(1, sizeof *s);
	s->g = g;
	s->sh = sh;
	s->own = own;
	s->lim = lim;
	s->base = base;
	s->nlev = nlev;
	memcpy(s->prec, prec, (size_t)nlev * sizeof *prec);
	return s;
}

static Ctx *sess_ctx(MpSession *s, int L, Diag *d)
{
	if (!s->cx[L]) {
		const Level *base = s->base ? s->base : L > 0 ? s->lv[0] : NULL;
		Level *l = ex_level_new(s->g, s->prec[L], base, s->lim, d);
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

/* The reduction terms s evaluated since the last call (for progress). */
static int64_t sess_work(MpSession *s)
{
	int64_t work = 0;
	for (int L = 0; L < s->nlev; L++)
		if (s->cx[L]) {
			work += s->cx[L]->pend;
			s->cx[L]->pend = 0;
		}
	return work;
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
	if (s->own_lim) {
		lim_free(s->own_lim);
		free(s->own_lim);
	}
	free(s);
}

/* Evaluates element flat of tensor t at the session's precisions in turn until it
 * settles in format f. 0 (with *val and *status) or -1. */
static int point(MpSession *s, int t, int64_t flat, Dtype f, double *val, MpStatus *status,
		 Diag *d)
{
	for (int L = 0; L < s->nlev; L++) {
		if (lim_poll(s->lim, 0, 0)) {
			diag_set(d, 2, "the evaluation stopped at a limit");
			return -1;
		}
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

/* A session of its own Shared under lim (borrowed). */
static MpSession *sess_open(const Graph *g, const HostTensor *inputs, const Opts *op,
			    Limits *lim, Diag *d)
{
	Shared *sh = ex_shared_new(g, inputs, lim, op->block, d);
	if (!sh)
		return NULL;
	mpfr_prec_t prec[MAX_LEVELS];
	int n = plan_levels(prec, op->p0, op->cap);
	return sess_new(g, sh, true, NULL, prec, n, lim);
}

MpSession *mp_session_new(const Graph *g, const HostTensor *inputs, const MpOpts *o, Diag *d)
{
	Opts op = opts(g, o, DT_NONE);
	Limits *lim = ex_calloc(1, sizeof *lim);
	lim_init(lim, g, o, "the exact oracle");
	MpSession *s = sess_open(g, inputs, &op, lim, d);
	if (!s) {
		lim_free(lim);
		free(lim);
		return NULL;
	}
	s->own_lim = lim;
	return s;
}

void mp_session_free(MpSession *s)
{
	sess_free(s);
}

/* mp_point without the translation of a limit into -2 (mp_points does it once, at the end). */
static int point_at(MpSession *s, int output, const int64_t *coords, Dtype fmt, double *value,
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

int mp_point(MpSession *s, int output, const int64_t *coords, Dtype fmt, double *value,
	     MpStatus *status, Diag *d)
{
	int rc = point_at(s, output, coords, fmt, value, status, d);
	if (rc < 0 && lim_hit(s->lim)) {
		lim_diag(s->lim, d);
		rc = -2;
	}
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

/* ------------------------------------------------------------ footprints */

/* One part of a footprint: a tensor and what it costs. */
typedef struct {
	int t;
	int64_t n, each, bytes;
	const char *as;
} Cost;

static int64_t add_sat(int64_t a, int64_t b)
{
	int64_t r;
	return __builtin_add_overflow(a, b, &r) ? INT64_MAX : r;
}

static int64_t mul_sat(int64_t a, int64_t b)
{
	int64_t r;
	return __builtin_mul_overflow(a, b, &r) ? INT64_MAX : r;
}

/* Bytes per element of a table of MPFR intervals at prec. */
static int64_t iv_each(mpfr_prec_t prec)
{
	return (int64_t)((iv_block_bytes(PAGE_ELEMS, prec) + PAGE_ELEMS - 1) / PAGE_ELEMS);
}

/* The memory mp_exact (emulate: mp_emulate) needs for g at first precision p0, the largest
 * tensor's share in *big. */
static int64_t footprint(const Graph *g, mpfr_prec_t p0, bool emulate, Cost *big)
{
	int64_t total = 0;
	memset(big, 0, sizeof *big);
	big->t = -1;
	for (int t = 0; t < g->ntensors; t++) {
		const Tensor *T = &g->tensors[t];
		int64_t n = ir_tensor_count(g, t), each = 0;
		const char *as;
		bool isint = T->dtype == DT_I32;
		if (T->kind == TK_INPUT) {
			each = dt_info((Dtype)T->dtype)->bytes;
			if (emulate)
				each += 8;   /* loaded as doubles (int64 for i32) */
			else if (!isint)
				each += iv_each(dt_info((Dtype)T->dtype)->prec);
			as = emulate ? "as given and as doubles" : "as given and as MPFR values";
		} else {
			each = emulate ? 8 : isint ? 16 : iv_each(p0);
			as = emulate ? "as doubles" : isint ? "as integer slots" : "as MPFR intervals";
		}
		for (int k = 0; k < g->noutputs; k++)
			if (g->outputs[k].tensor == t)   /* the output, and mp_exact's per-element state */
				each += dt_info(g->outputs[k].dtype)->bytes + (emulate ? 0 : 10);
		int64_t bytes = mul_sat(n, each);
		total = add_sat(total, bytes);
		if (bytes > big->bytes)
			*big = (Cost){t, n, each, bytes, as};
	}
	return total;
}

/* The footprint check: 0, or -1 with why (malloc'ed) when over cap. */
static int check_footprint(const Graph *g, mpfr_prec_t p0, bool emulate, int64_t cap,
			   char **why)
{
	Cost big;
	int64_t need = footprint(g, p0, emulate, &big);
	if (cap < 0 || need <= cap)
		return 0;
	char a[32], b[32], c[32], shape[160];
	lim_shape(g, big.t, shape, sizeof shape);
	const Tensor *T = &g->tensors[big.t];
	if (asprintf(why, "%s: %s would need about %s for this graph, over its memory cap of %s; "
		     "the largest part is %s '%s' (%s): %lld elements at %lld bytes each %s = %s. "
		     "Evaluate a smaller --size, sample large outputs (check's --max-exact), or "
		     "raise the cap (--oracle-mem MB)", g->file ? g->file : "<graph>",
		     emulate ? "the emulating interpreter" : "the exact oracle",
		     lim_bytes(a, sizeof a, need), lim_bytes(b, sizeof b, cap),
		     T->kind == TK_INPUT ? "input" : "tensor", T->name, shape, (long long)big.n,
		     (long long)big.each, big.as, lim_bytes(c, sizeof c, big.bytes)) < 0)
		mp_oom_exit(256);
	return -1;
}

int mp_check_memory(const Graph *g, const MpOpts *o, bool emulate, Diag *d)
{
	Opts op = opts(g, o, DT_NONE);
	int64_t cap = o && o->mem_cap ? o->mem_cap : mp_default_mem_cap();
	char *why = NULL;
	if (check_footprint(g, op.p0, emulate, cap, &why) == 0)
		return 0;
	diag_set(d, 2, "%s", why);
	free(why);
	return -2;
}

/* ------------------------------------------------------------ mp_exact */

typedef struct {
	const Graph *g;
	Limits lim;
	MpSession *main;     /* its level 0 is the table every worker fills and reads */
	Ctx **cx;            /* per worker, at level 0 */
	MpSession **priv;    /* per worker: escalations */
	int nthreads;
	int def;
	bool plain;          /* the definition being evaluated has no reduction */
	mpfr_prec_t p0, cap;
	HostTensor *outs;
	uint8_t **status;
	int64_t *first;      /* global index of each output's first element; [noutputs] = total */
	uint8_t *todo;       /* per global element: not settled at the first precision */
	int64_t *list;       /* the unsettled global elements */
} Run;

static int stop(Diag *d)
{
	diag_set(d, 2, "the evaluation stopped at a limit");
	return -1;
}

/* Counts one unit of work of c (and work: its terms, or 1) and polls the limits every 64
 * units or POLL_WORK work (shared counters, so not at every cheap element): 0, or -1 with
 * d when a limit stops the evaluation. */
enum { POLL_UNITS = 64, POLL_WORK = 1024 };

static int count_unit(Limits *lim, Ctx *c, int64_t work, Diag *d)
{
	c->pend_units++;
	c->pend += work;
	if (c->pend_units < POLL_UNITS && c->pend < POLL_WORK)
		return 0;
	bool halt = lim_poll(lim, c->pend_units, c->pend);
	c->pend_units = c->pend = 0;
	return halt ? stop(d) : 0;
}

static int work_def(void *arg, int w, int64_t unit, Diag *d)
{
	Run *r = arg;
	Ctx *c = r->cx[w];
	c->d = d;
	int rc = ex_elem(c, r->def, unit);
	return rc ? rc : count_unit(&r->lim, c, r->plain, d);
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
	return count_unit(&r->lim, c, 1, d);
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
		r->priv[w] = sess_new(r->g, r->main->sh, false, r->main->lv[0], prec, n, &r->lim);
	}
	MpSession *s = r->priv[w];
	if (s->nlev > 0)
		s->st.escalations++;
	if (point(s, r->g->outputs[k].tensor, flat, r->g->outputs[k].dtype, &v, &st, d) < 0)
		return -1;
	ht_set(&r->outs[k], flat, v);
	if (st != MP_EXACT_OK && r->status)
		r->status[k][flat] = (uint8_t)st;
	int64_t work = sess_work(s);
	return lim_poll(&r->lim, 1, work) ? stop(d) : 0;
}

static int eval_defs(Run *r, Diag *d)
{
	const Graph *g = r->g;
	Level *l0 = r->main->lv[0];
	lim_phase_defs(&r->lim, "evaluating");
	for (int di = 0; di < g->ndefs; di++) {
		lim_tensor(&r->lim, g->tensors[g->defs[di].out[0]].name);
		int64_t units = ex_prepare(l0, g, di, d);   /* workers must not allocate pages */
		if (units < 0)
			return -1;
		r->def = di;
		r->plain = g->defs[di].monoid == MO_NONE;
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
			char what[300];
			snprintf(what, sizeof what, "output '%s'", t->name);
			return lim_oom(&r->lim, d, r->outs[k].n * dt_info(g->outputs[k].dtype)->bytes,
				       what);
		}
		if (r->status && !(r->status[k] = calloc((size_t)r->outs[k].n + 1, 1)))
			return lim_oom(&r->lim, d, r->outs[k].n, "the status of an output");
		r->first[k + 1] = r->first[k] + r->outs[k].n;
	}
	return 0;
}

static int round_outputs(Run *r, Diag *d)
{
	int64_t total = r->first[r->g->noutputs], n = 0;
	if (!(r->todo = calloc((size_t)total + 1, 1)))
		return lim_oom(&r->lim, d, total, "the outputs' settling");
	lim_phase(&r->lim, "rounding", total, 0);
	lim_tensor(&r->lim, NULL);
	if (par_run(work_settle, r, total, r->nthreads, d) < 0)
		return -1;
	for (int64_t i = 0; i < total; i++)
		n += r->todo[i];
	if (!(r->list = malloc((size_t)(n + 1) * sizeof *r->list)))
		return lim_oom(&r->lim, d, n * 8, "the unsettled elements");
	n = 0;
	for (int64_t i = 0; i < total; i++)
		if (r->todo[i])
			r->list[n++] = i;
	r->priv = ex_calloc((size_t)r->nthreads, sizeof *r->priv);
	lim_phase(&r->lim, "escalating", n, 0);
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
	lim_init(&r.lim, g, o, "the exact oracle");
	Range rg = range_enter();
	int rc = -1;
	Shared *sh = NULL;
	char *why = NULL;
	if (check_footprint(g, op.p0, false, r.lim.cap, &why)) {
		lim_set(&r.lim, LIM_MEMORY, why);
		free(why);
		goto done;
	}
	int64_t nin = 0;
	for (int k = 0; k < ir_ninputs(g); k++)
		if (g->tensors[ir_input_tensor(g, k)].dtype != DT_I32)
			nin += ir_tensor_count(g, ir_input_tensor(g, k));
	lim_phase(&r.lim, "converting", nin, 0);
	sh = ex_shared_new(g, inputs, &r.lim, op.block, d);
	if (!sh)
		goto done;
	r.main = sess_new(g, sh, true, NULL, &r.p0, 1, &r.lim);
	Ctx *c0 = sess_ctx(r.main, 0, d);
	if (!c0)
		goto done;
	c0->d = d;
	if (ex_shared_fill(sh, c0) < 0)
		goto done;
	r.cx = ex_calloc((size_t)r.nthreads, sizeof *r.cx);
	r.cx[0] = c0;
	for (int w = 1; w < r.nthreads; w++)
		r.cx[w] = ex_ctx_new(g, sh, r.main->lv[0]);
	if (eval_defs(&r, d) < 0 || alloc_outputs(&r, d) < 0 || round_outputs(&r, d) < 0)
		goto done;
	rc = 0;
done:
	if (rc < 0 && lim_hit(&r.lim)) {
		lim_diag(&r.lim, d);
		rc = -2;
	}
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
	lim_free(&r.lim);
	range_leave(rg);
	return rc;
}

/* ------------------------------------------------------------ mp_points */

typedef struct {
	const Graph *g;
	const HostTensor *inputs;
	Opts op;
	Limits lim;
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
	if (!p->sess[w] && !(p->sess[w] = sess_open(p->g, p->inputs, &p->op, &p->lim, d)))
		return -1;
	MpStatus st;
	MpSession *s = p->sess[w];
	if (point_at(s, p->output, p->coords + i * p->rank, p->fmt, &p->values[i], &st, d) < 0)
		return -1;
	if (p->status)
		p->status[i] = (uint8_t)st;
	int64_t work = sess_work(s);
	return lim_poll(&p->lim, 1, work) ? stop(d) : 0;
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
	Points p = {g, inputs, opts(g, o, f), {0}, output,
		    g->tensors[g->outputs[output].tensor].rank, coords, fmt, values, status, NULL};
	lim_init(&p.lim, g, o, "the exact oracle");
	lim_phase(&p.lim, "sampling", n, 0);
	lim_tensor(&p.lim, g->tensors[g->outputs[output].tensor].name);
	p.sess = ex_calloc((size_t)p.op.threads, sizeof *p.sess);
	Range rg = range_enter();
	int rc = par_run(work_point, &p, n, p.op.threads, d);
	if (rc < 0 && lim_hit(&p.lim)) {
		lim_diag(&p.lim, d);
		rc = -2;
	}
	if (st)
		memset(st, 0, sizeof *st);
	for (int w = 0; w < p.op.threads; w++) {
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
	lim_free(&p.lim);
	range_leave(rg);
	return rc;
}
