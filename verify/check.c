/* verify/check.c: the pipeline of `assay check` over one graph: the oracle once, then for
 * every (backend, schedule) a worker process, the budgets, the metrics of every output
 * and one record each.
 *
 * The oracle: when every output has at most max_exact elements, mp_exact gives every
 * element correctly rounded ("exact: all"). Otherwise each larger output is checked on
 * nsample elements drawn by stratified sampling (one per stratum, deterministic from the
 * seed and the output; its first and last elements always in) through point evaluation,
 * and all its elements against an f64 evaluation of the graph with the budget widened by
 * one unit in the last place of the output's format at the f64 value (that evaluation's
 * own final rounding; for an f64 output this second check is correspondingly weaker)
 * ("exact: sampled N, all vs f64"). The f64 evaluation is the c backend's program for the
 * all-f64 schedule (every definition stored and computed in f64, no tile, no split,
 * linear order), run in a worker like any case, because the interpreter's f64 emulation
 * costs more than the exact oracle itself (measured: 13 s against 4 s for a 1024x384x128
 * matmul); where the c backend is unavailable or fails, the emulation (mp_emulate, every
 * operation in f64) is used instead. The record's f64.by names which.
 *
 * The oracle runs under VfOpts' limits (one deadline for all of its calls, the memory cap);
 * one that stops at a limit makes vf_check return -2 before any worker runs.
 *
 * Budgets come from orc_budget_facts (per element, per backend and schedule) after the
 * worker has run, with the facts of the device it ran on (infinities are claimed where
 * they keep them): a crash costs no budget computation. A verdict is never an error: only a
 * failure of the oracle or of the budgets (the toolkit's own) stops the run, with -1.
 *
 * Integer (i32) outputs must match the oracle exactly, except at the elements
 * orc_budget_ties flags as near ties (numerics.md 4a): a disagreement there is counted
 * (n_tie_disagree) and named in the reason, not failed. With a substitute budget function
 * (VfOpts.budget, for tests) there are no tie flags.
 *
 * The emulation check (emucheck.c) then holds every output of a finished run whose
 * arithmetic (over the definitions it depends on) is fully specified on its device to the
 * emulation of its schedule, bit for bit (each schedule emulated once, when a backend first
 * needs it): a result within every budget that differs is an emulation-mismatch, its reason
 * naming the first differing output element and the first differing stored definition the
 * output depends on. Verdicts rank special-mismatch, over-budget,
 * emulation-mismatch, pass: a budget's finding is reported as before.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "verify.h"
#include "ext.h"

typedef struct {
	HostTensor *want;     /* per output: its compared elements, densely */
	uint8_t **status;     /* per output, dense like want (entries may be NULL) */
	int64_t **idx;        /* per output: the sampled flat indices, or NULL for all */
	int64_t *n;           /* compared elements per output */
	HostTensor *ref64;    /* the f64 evaluation of every output when any is sampled */
	const char *ref64_by; /* "c backend" or "interpreter" */
	double secs;
} Oracle;

typedef struct {
	const Graph *g;
	const HostTensor *inputs;
	const VfOpts *o;
	MpOpts mo;            /* the oracle's options: threads and limits */
	Oracle orc;
	char gname[256];
	char *gdir;           /* -o: DIR/GRAPH, or NULL */
	int failed;
	const VfSched *scheds;
	VfEmu *emu;           /* the schedules' emulations */
} Ctx;

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static uint64_t mix(uint64_t z)
{
	z += 0x9e3779b97f4a7c15ull;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* ------------------------------------------------------------ names, seeds, faults */

const char *vf_graph_name(const Graph *g, char *buf, size_t n)
{
	if (g->name) {
		snprintf(buf, n, "%s", g->name);
		return buf;
	}
	const char *f = g->file ? g->file : "graph";
	const char *slash = strrchr(f, '/');
	snprintf(buf, n, "%s", slash ? slash + 1 : f);
	size_t len = strlen(buf);
	if (len > 3 && strcmp(buf + len - 3, ".tg") == 0)
		buf[len - 3] = 0;
	return buf;
}

uint64_t vf_sched_seed(const Graph *g, uint64_t seed, int k)
{
	char name[256];
	uint64_t h = 0xcbf29ce484222325ull;
	for (const char *p = vf_graph_name(g, name, sizeof name); *p; p++)
		h = (h ^ (unsigned char)*p) * 0x100000001b3ull;
	return mix(mix(seed) ^ h ^ mix((uint64_t)k * 0x9e3779b97f4a7c15ull));
}

/* The seeded faults by name (compiler.h KF_*; fuzz/ measures the fuzzer with them). */
static const struct { const char *name; uint64_t bit; } fault_names[] = {
	{"drop_tail", KF_DROP_TAIL}, {"skip_last", KF_SKIP_LAST},
	{"pad_zero", KF_PAD_ZERO}, {"no_combine", KF_NO_COMBINE},
	{"max_identity", KF_MAX_IDENTITY}, {"pairwise_odd", KF_PAIRWISE_ODD},
	{"view_offset", KF_VIEW_OFFSET}, {"view_stride", KF_VIEW_STRIDE},
	{"trunc_div", KF_TRUNC_DIV}, {"neg_mod", KF_NEG_MOD},
	{"tri_bound", KF_TRI_BOUND}, {"inline_pad", KF_INLINE_PAD},
	{"accum_ignored", KF_ACCUM_IGNORED}, {"store_trunc", KF_STORE_TRUNC},
	{"max_nan", KF_MAX_NAN}, {"zero_sign", KF_ZERO_SIGN},
	{"argmax_tie", KF_ARGMAX_TIE}, {"topk_order", KF_TOPK_ORDER},
	{"gather_bounds", KF_GATHER_BOUNDS}, {"rw_div_pow2", KF_RW_DIV_POW2},
	{"tie_away", KF_TIE_AWAY},
	{"grad_max_both", KF_GRAD_MAX_BOTH}, {"grad_bcast_nosum", KF_GRAD_BCAST_NOSUM},
	{"grad_view_transpose", KF_GRAD_VIEW_TRANSPOSE},
	{"grad_scatter_one", KF_GRAD_SCATTER_ONE}, {"grad_div_denom", KF_GRAD_DIV_DENOM},
	{"online_no_rescale", KF_ONLINE_NO_RESCALE},
	{"online_flip", KF_ONLINE_FLIP},
	{"welford_weight", KF_WELFORD_WEIGHT},
	{"lse_no_shift", KF_LSE_NO_SHIFT},
	{"online_split_max", KF_ONLINE_SPLIT_MAX},
	{"online_causal_tile", KF_ONLINE_CAUSAL_TILE},
	{"online_last_l", KF_ONLINE_LAST_L},
};
_Static_assert(ARRAY_LEN(fault_names) == KF__COUNT, "one name per seeded fault");

int vf_faults_parse(const char *list, uint64_t *faults, Diag *d)
{
	*faults = 0;
	for (const char *p = list; *p;) {
		size_t len = strcspn(p, ",");
		size_t i = 0;
		while (i < ARRAY_LEN(fault_names) &&
		       (strlen(fault_names[i].name) != len || strncmp(fault_names[i].name, p, len)))
			i++;
		if (i == ARRAY_LEN(fault_names)) {
			if (len) {
				char known[512];
				diag_set(d, 2, "unknown fault '%.*s' (known: %s)", (int)len, p,
					 vf_faults_name(~UINT64_C(0), known, sizeof known));
				return -1;
			}
		} else {
			*faults |= fault_names[i].bit;
		}
		p += len + (p[len] == ',');
	}
	return 0;
}

const char *vf_faults_name(uint64_t faults, char *buf, size_t n)
{
	size_t len = 0;
	buf[0] = 0;
	for (size_t i = 0; i < ARRAY_LEN(fault_names) && len < n; i++)
		if (faults & fault_names[i].bit)
			len += (size_t)snprintf(buf + len, n - len, "%s%s", len ? "," : "",
						fault_names[i].name);
	return buf;
}

static bool env_on(const char *name)
{
	const char *v = getenv(name);
	return v && *v && strcmp(v, "0") != 0;
}

int vf_opts_env(VfOpts *o, Diag *d)
{
	const char *f = getenv("ASSAY_FAULT");
	if (f && vf_faults_parse(f, &o->w.faults, d)) {
		char *m = d->msg;
		d->msg = NULL;
		diag_set(d, 2, "ASSAY_FAULT: %s", m ? m : "");
		free(m);
		return -1;
	}
	static const struct { const char *env; unsigned bit; } hooks[] = {
		{"ASSAY_TEST_CRASH", VF_HOOK_CRASH}, {"ASSAY_TEST_HANG", VF_HOOK_HANG},
		{"ASSAY_TEST_OOB", VF_HOOK_OOB}, {"ASSAY_TEST_NAN", VF_HOOK_NAN},
		{"ASSAY_NO_REWRITE", VF_HOOK_NO_REWRITE},
	};
	for (size_t i = 0; i < ARRAY_LEN(hooks); i++)
		if (env_on(hooks[i].env))
			o->w.hooks |= hooks[i].bit;
	return 0;
}

int vf_sched_list(const Graph *g, const char *first_name, uint64_t seed, int nsampled,
		  VfSched **out, int *n, Diag *d)
{
	VfSched *s = calloc((size_t)nsampled + 2, sizeof *s);
	IR_ASSERT(s);
	if (sched_build(g, &s[0].s, d)) {
		free(s);
		return -1;
	}
	snprintf(s[0].name, sizeof s[0].name, "%s", first_name);
	s[0].text = sched_text(g, &s[0].s);
	int extra = 0;
	for (int k = 0; k < g->ndirs && !extra; k++)
		extra = g->dirs[k].kind == SD_ONLINE;
	if (extra) {
		snprintf(s[1].name, sizeof s[1].name, "default");
		sched_default(g, &s[1].s);
		s[1].text = sched_text(g, &s[1].s);
	}
	for (int k = 1; k <= nsampled; k++) {
		VfSched *x = &s[k + extra];
		snprintf(x->name, sizeof x->name, "s%d", k);
		x->seed = vf_sched_seed(g, seed, k);
		sched_sample(g, x->seed, &x->s);
		x->text = sched_text(g, &x->s);
	}
	*out = s;
	*n = nsampled + 1 + extra;
	return 0;
}

void vf_sched_list_free(VfSched *s, int n)
{
	for (int k = 0; s && k < n; k++) {
		sched_free(&s[k].s);
		free(s[k].text);
	}
	free(s);
}

/* ------------------------------------------------------------------ oracle */

static void oracle_free(const Graph *g, Oracle *orc)
{
	for (int k = 0; k < g->noutputs; k++) {
		if (orc->want)
			ht_free(&orc->want[k]);
		if (orc->ref64)
			ht_free(&orc->ref64[k]);
		if (orc->status)
			free(orc->status[k]);
		if (orc->idx)
			free(orc->idx[k]);
	}
	free(orc->want);
	free(orc->ref64);
	free(orc->status);
	free(orc->idx);
	free(orc->n);
	memset(orc, 0, sizeof *orc);
}

/* n distinct flat indices of [0, count), one per stratum, first and last included. */
static int64_t *sample_idx(int64_t count, int64_t n, uint64_t seed)
{
	int64_t *idx = malloc((size_t)n * sizeof *idx);
	IR_ASSERT(idx && n >= 2 && n < count);
	for (int64_t i = 0; i < n; i++) {
		int64_t lo = count * i / n, hi = count * (i + 1) / n;
		idx[i] = lo + (int64_t)(mix(seed ^ (uint64_t)i) % (uint64_t)(hi - lo));
	}
	idx[0] = 0;
	idx[n - 1] = count - 1;
	return idx;
}

/* Point evaluation of output k at n flat indices (idx NULL: all count elements). */
static int points(Ctx *c, int k, const int64_t *idx, int64_t n, Diag *d)
{
	const Graph *g = c->g;
	const Tensor *T = &g->tensors[g->outputs[k].tensor];
	int64_t *coords = malloc((size_t)(n * T->rank + 1) * sizeof *coords);
	double *vals = malloc((size_t)n * sizeof *vals);
	c->orc.status[k] = malloc((size_t)n + 1);
	IR_ASSERT(coords && vals && c->orc.status[k]);
	for (int64_t i = 0; i < n; i++) {
		int64_t flat = idx ? idx[i] : i;
		for (int r = T->rank - 1; r >= 0; r--) {
			coords[i * T->rank + r] = flat % T->dims[r].value;
			flat /= T->dims[r].value;
		}
	}
	int rc = mp_points(g, c->inputs, &c->mo, k, coords, n, DT_NONE, vals, c->orc.status[k],
			   NULL, d);
	int64_t dims[1] = {n};
	IR_ASSERT(ht_alloc(&c->orc.want[k], g->outputs[k].dtype, 1, dims) == 0);
	for (int64_t i = 0; rc == 0 && i < n; i++)
		ht_set(&c->orc.want[k], i, vals[i]);
	free(coords);
	free(vals);
	return rc;
}

/* The f64 evaluation by the c backend's program for the all-f64 schedule; -1 when that
 * backend is missing or its run fails (the caller falls back to the interpreter). */
static int ref64_compiled(Ctx *c)
{
	const Graph *g = c->g;
	const Backend *b = be_find("c");
	char why[256];
	if (!b || vf_available(c->o->w.pool, b, why, sizeof why))
		return -1;
	Schedule s;
	sched_default(g, &s);
	for (int k = 0; k < s.ndefs; k++)
		if (s.defs[k].store != DT_I32)
			s.defs[k].op = s.defs[k].accum = s.defs[k].store = DT_F64;
	WorkerOpts wo = c->o->w;
	wo.faults = 0;
	wo.hooks = VF_HOOK_NO_REWRITE;   /* the reference is the graph as written */
	WorkerResult w;
	Diag d = {0};
	int rc = vf_worker_run(b, g, &s, c->inputs, &wo, &w, &d);
	sched_free(&s);
	diag_clear(&d);
	if (rc || w.status != WK_OK) {
		if (rc == 0)
			vf_worker_free(g, &w);
		return -1;
	}
	c->orc.ref64 = w.outs;   /* taken over */
	c->orc.ref64_by = "c backend";
	w.outs = NULL;
	vf_worker_free(g, &w);
	return 0;
}

static int oracle(Ctx *c, Diag *d)
{
	const Graph *g = c->g;
	const VfOpts *o = c->o;
	Oracle *orc = &c->orc;
	size_t no = (size_t)g->noutputs + 1;
	int64_t max_exact = o->max_exact > 0 ? o->max_exact : (int64_t)1 << 20;
	int64_t nsample = o->nsample > 0 ? o->nsample : 4096;
	orc->want = calloc(no, sizeof *orc->want);
	orc->status = calloc(no, sizeof *orc->status);
	orc->idx = calloc(no, sizeof *orc->idx);
	orc->n = calloc(no, sizeof *orc->n);
	IR_ASSERT(orc->want && orc->status && orc->idx && orc->n);
	double t0 = now();
	bool any = false;
	for (int k = 0; k < g->noutputs; k++) {
		orc->n[k] = ir_tensor_count(g, g->outputs[k].tensor);
		any |= orc->n[k] > max_exact && orc->n[k] > nsample && nsample >= 2;
	}
	c->mo = (MpOpts){.threads = o->threads, .mem_cap = o->oracle_mem,
			 .deadline = o->oracle_timeout_s > 0 ? mp_now() + o->oracle_timeout_s : 0};
	int rc;
	if (!any) {
		if ((rc = mp_exact(g, c->inputs, &c->mo, orc->want, orc->status, NULL, d)))
			return rc;
		orc->secs = now() - t0;
		return 0;
	}
	for (int k = 0; k < g->noutputs; k++) {
		if (orc->n[k] > max_exact && orc->n[k] > nsample && nsample >= 2) {
			orc->idx[k] = sample_idx(orc->n[k], nsample, mix(o->seed) ^ (uint64_t)k);
			orc->n[k] = nsample;
		}
		if ((rc = points(c, k, orc->idx[k], orc->n[k], d)))
			return rc;
	}
	if (ref64_compiled(c) == 0) {
		orc->secs = now() - t0;
		return 0;
	}
	orc->ref64 = calloc(no, sizeof *orc->ref64);
	IR_ASSERT(orc->ref64);
	orc->ref64_by = "interpreter";
	EmuConfig cfg = {.dflt = DT_F64};
	if ((rc = mp_emulate(g, c->inputs, &cfg, &c->mo, orc->ref64, NULL, d)))
		return rc;
	orc->secs = now() - t0;
	return 0;
}

/* ------------------------------------------------------------------ files */

/* A heap string "a/b..." (the caller frees). */
static char *path_of(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static char *path_of(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *s = NULL;
	if (vasprintf(&s, fmt, ap) < 0)
		s = NULL;
	va_end(ap);
	IR_ASSERT(s);
	return s;
}

static int save_npy(const char *dir, const char *name, const char *suffix, const HostTensor *t,
		    Diag *d)
{
	char *path = path_of("%s/%s%s.npy", dir, name, suffix);
	int rc = npy_write(path, t, d);
	free(path);
	return rc;
}

/* Keeps the inputs and the oracle's values under DIR/GRAPH. */
static int save_graph(Ctx *c, Diag *d)
{
	const Graph *g = c->g;
	char *in = path_of("%s/inputs", c->gdir), *orc = path_of("%s/oracle", c->gdir);
	int rc = -1;
	if (vf_mkdirs(in, d) || vf_mkdirs(orc, d))
		goto out;
	for (int i = 0; i < ir_ninputs(g); i++)
		if (save_npy(in, g->tensors[ir_input_tensor(g, i)].name, "", &c->inputs[i], d))
			goto out;
	for (int k = 0; k < g->noutputs; k++) {
		const char *name = g->tensors[g->outputs[k].tensor].name;
		const int64_t *idx = c->orc.idx[k];
		if (!idx) {
			if (save_npy(orc, name, "", &c->orc.want[k], d))
				goto out;
			continue;
		}
		HostTensor ix = {0};
		int64_t dims[1] = {c->orc.n[k]};
		IR_ASSERT(ht_alloc(&ix, DT_F64, 1, dims) == 0);
		for (int64_t i = 0; i < ix.n; i++)
			ht_set(&ix, i, (double)idx[i]);
		int bad = save_npy(orc, name, ".sampled", &c->orc.want[k], d) ||
			  save_npy(orc, name, ".sampled_idx", &ix, d) ||
			  save_npy(orc, name, ".f64", &c->orc.ref64[k], d);
		ht_free(&ix);
		if (bad)
			goto out;
	}
	rc = 0;
out:
	free(in);
	free(orc);
	return rc;
}

/* Keeps one case: its kernel source, schedule, outputs and budgets. */
static int save_case(Ctx *c, const Backend *b, const VfSched *vs, const WorkerResult *w,
		     const HostTensor *budgets, const char *rel, Diag *d)
{
	const Graph *g = c->g;
	char *dir = path_of("%s/%s", c->o->out_dir, rel);
	char *src = path_of("%s/kernel.%s", dir, b->name), *sch = path_of("%s/schedule.txt", dir);
	int rc = -1;
	if (vf_mkdirs(dir, d) || (w->source && vf_write_text(src, w->source, d)) ||
	    vf_write_text(sch, vs->text ? vs->text : "", d))
		goto out;
	for (int k = 0; w->outs && k < g->noutputs; k++) {
		const char *name = g->tensors[g->outputs[k].tensor].name;
		if (save_npy(dir, name, "", &w->outs[k], d) ||
		    (budgets && save_npy(dir, name, ".budget", &budgets[k], d)))
			goto out;
	}
	rc = 0;
out:
	free(dir);
	free(src);
	free(sch);
	return rc;
}

/* ------------------------------------------------------------------ judging */

/* One unit in the last place of format f at x (x finite). */
static double ulp_at(Dtype f, double x)
{
	if (f == DT_I32 || !isfinite(x))
		return 0;
	const DtypeInfo *in = dt_info(f);
	int e;
	frexp(x, &e);
	long q = x == 0 ? in->emin - 1 : (long)e - in->prec;
	return ldexp(1, (int)(q > in->emin - 1 ? q : in->emin - 1));
}

static void coords_text(const Graph *g, int k, int64_t flat, char *buf, size_t n)
{
	vf_coords_text(g, g->outputs[k].tensor, flat, buf, n);
}

/* The reason of a numeric verdict: the worst element, explained. */
static void explain(const Graph *g, int k, const VfMetrics *m, const char *against, char *buf,
		    size_t n)
{
	char at[256];
	coords_text(g, k, m->worst, at, sizeof at);
	Dtype f = g->outputs[k].dtype;
	if (m->n_special && m->n_zero_sign == m->n_special)
		snprintf(buf, n, "%s: %g against %s %g where the budget is 0: a zero of the wrong "
			 "sign (%lld elements)", at, m->worst_got, against, m->worst_want,
			 (long long)m->n_special);
	else if (m->n_special && m->n_special == m->n_special_unbounded)
		snprintf(buf, n, "%s: %g against %s %g (%lld special-value mismatches, all where the "
			 "budget is +inf, no claim: a possible overflow, a divisor or log argument that "
			 "may be 0)", at, m->worst_got, against, m->worst_want, (long long)m->n_special);
	else if (m->n_special)
		snprintf(buf, n, "%s: %g against %s %g (%lld special-value mismatches)", at,
			 m->worst_got, against, m->worst_want, (long long)m->n_special);
	else if (f == DT_I32)
		snprintf(buf, n, "%s: %.0f against %s %.0f (%lld elements differ where the oracle "
			 "sees no near tie)", at, m->worst_got, against, m->worst_want,
			 (long long)m->n_over);
	else
		snprintf(buf, n, "%s: %.9g against %s %.9g, error %.3g > budget %.3g (%lld of %lld "
			 "elements over)", at, m->worst_got, against, m->worst_want,
			 fabs(m->worst_got - m->worst_want), m->worst_budget, (long long)m->n_over,
			 (long long)m->n_checked);
}

static Verdict worse(Verdict a, Verdict b)
{
	/* special-mismatch > over-budget > pass */
	return a == V_SPECIAL_MISMATCH || b == V_SPECIAL_MISMATCH ? V_SPECIAL_MISMATCH :
	       a == V_OVER_BUDGET || b == V_OVER_BUDGET ? V_OVER_BUDGET : V_PASS;
}

/* Judges output k of a finished worker into r (reason written to buf). */
static void judge(Ctx *c, int k, const HostTensor *got, const HostTensor *budget,
		  const uint8_t *ties, VfRecord *r, char *buf, size_t n)
{
	const Graph *g = c->g;
	const Oracle *orc = &c->orc;
	vf_metrics_init(&r->m);
	vf_compare(got, &orc->want[k], budget, ties, orc->status[k], orc->idx[k], orc->n[k], &r->m);
	vf_metrics_done(&r->m);
	Verdict v = vf_metrics_verdict(&r->m), v64 = V_PASS;
	vf_metrics_init(&r->m64);
	if (orc->idx[k]) {
		r->sampled = true;
		HostTensor wide = {0};
		IR_ASSERT(ht_alloc(&wide, DT_F64, budget->rank, budget->dims) == 0);
		for (int64_t i = 0; i < wide.n; i++)
			ht_set(&wide, i, ht_get(budget, i) +
				    ulp_at(g->outputs[k].dtype, ht_get(&orc->ref64[k], i)));
		vf_compare(got, &orc->ref64[k], &wide, ties, NULL, NULL, got->n, &r->m64);
		vf_metrics_done(&r->m64);
		ht_free(&wide);
		v64 = vf_metrics_verdict(&r->m64);
	}
	r->verdict = worse(v, v64);
	/* choices against the oracle's, or against the f64 evaluation when it is sampled */
	vf_agree(got, orc->idx[k] ? &orc->ref64[k] : &orc->want[k],
		 c->o->agree_axis_set ? c->o->agree_axis : -1, c->o->agree_k,
		 orc->idx[k] ? "f64" : "oracle", &r->agree);
	buf[0] = 0;
	if (v != V_PASS)
		explain(g, k, &r->m, "the oracle's", buf, n);
	else if (v64 != V_PASS)
		explain(g, k, &r->m64, "the f64 evaluation's", buf, n);
	size_t len = strlen(buf);
	if (r->m.n_unsamplable && len < n)
		len += (size_t)snprintf(buf + len, n - len, "%s%lld oracle elements unsamplable "
					"(skipped)", len ? "; " : "", (long long)r->m.n_unsamplable);
	int64_t nt = r->m.n_tie_disagree > r->m64.n_tie_disagree ? r->m.n_tie_disagree :
								    r->m64.n_tie_disagree;
	if (nt && len < n)
		snprintf(buf + len, n - len, "%s%lld near-tie disagreements (numerics.md 4a: "
			 "counted, not failed)", len ? "; " : "", (long long)nt);
}

/* A crash or timeout of the first run that its confirming re-run did not repeat: the
 * reason of a record judged on the re-run's outputs. */
static void rerun_note(const WorkerResult *w, char *buf, size_t n)
{
	size_t len = strlen(buf);
	if (!w->rerun || len >= n)
		return;
	const char *what = w->first_status == WK_TIMEOUT ? "timed out" : "crashed";
	if (w->status == w->first_status)
		snprintf(buf + len, n - len, " (confirmed: a re-run alone with %gx the limits did the "
			 "same; the first run: %.300s)", w->confirm_factor,
			 w->first_reason ? w->first_reason : "");
	else
		snprintf(buf + len, n - len, "%sthe first run %s (%.300s), a re-run alone with %gx the "
			 "limits finished in %.3g s", len ? "; " : "", what,
			 w->first_reason ? w->first_reason : "", w->confirm_factor, w->wall_s);
}

/* The reason of an emulation-mismatch of output k: its first differing element, then
 * what located the first differing stored definition (locate, may be NULL). */
static void explain_emu(const Graph *g, int k, const VfEmuDiff *df, const char *locate,
			char *buf, size_t n)
{
	char at[256];
	coords_text(g, k, df->first, at, sizeof at);
	snprintf(buf, n, "%s: %.9g against the emulation's %.9g (%.0f ulp%s; %lld of %lld elements "
		 "differ bit for bit, every budget holds)%s%s", at, df->got, df->want, df->ulps,
		 df->ulps == 0 ? ": the sign of a zero" : "", (long long)df->n_diff,
		 (long long)ir_tensor_count(g, g->outputs[k].tensor), locate ? "; " : "",
		 locate ? locate : "");
}

/* Sends one record per output; w is NULL for a backend that is not available (why). er is
 * the emulation check of the run (NULL with w). */
static int emit_records(Ctx *c, const Backend *b, const VfSched *vs, int si,
			const WorkerResult *w, VfEmuResult *er, const HostTensor *budgets,
			uint8_t *const *ties, double budget_s, const char *why, const char *rel,
			Diag *d)
{
	bool located = false;
	const Graph *g = c->g;
	for (int k = 0; k < g->noutputs; k++) {
		char reason[2048];
		VfRecord r = {
			.graph = c->gname, .file = g->file, .backend = b->name, .sched = vs->name,
			.sched_text = vs->text ? vs->text : "", .sched_seed = vs->seed,
			.output = g->tensors[g->outputs[k].tensor].name, .dtype = g->outputs[k].dtype,
			.n_elements = ir_tensor_count(g, g->outputs[k].tensor), .seed = c->o->seed,
			.dist = c->o->dist ? c->o->dist : "", .faults = c->o->w.faults,
			.case_dir = rel, .oracle_s = c->orc.secs, .budget_s = budget_s,
			.ref64_by = c->orc.ref64_by ? c->orc.ref64_by : "",
			.reason = reason, .agree = {.axis = -1, .ref = ""},
			.red_len = vf_red_len(g, k), .rules = w && w->rewritten ? &w->rules : NULL,
			.emulated = er && er->out[k].applies,
			.emu_why = er ? er->out[k].why : "no outputs to compare",
			.emu_diff = er && er->out[k].applies ? er->out[k].diff.n_diff : 0,
			.cov = w && w->covered ? w->cov : NULL,
			.got = w && w->status == WK_OK ? &w->outs[k] : NULL, .want = &c->orc.want[k],
			.want_status = c->orc.status[k], .want_idx = c->orc.idx[k],
		};
		vf_metrics_init(&r.m);
		vf_metrics_init(&r.m64);
		r.m.frac_within = 0;
		if (w) {
			r.compile_s = w->compile_s;
			r.launch_s = w->launch_s;
			r.worker_s = w->wall_s;
			r.cache_hit = w->cache_hit;
		}
		if (w && w->status == WK_OK) {
			judge(c, k, &w->outs[k], &budgets[k], ties[k], &r, reason, sizeof reason);
			if (r.verdict == V_PASS && r.emu_diff > 0) {
				/* within every budget, but not the emulation's bits */
				if (!located && vf_emu_locate(c->emu, b, si, &c->o->w, er, d))
					return -1;
				located = true;
				r.verdict = V_EMULATION_MISMATCH;
				explain_emu(g, k, &er->out[k].diff, er->out[k].locate, reason,
					    sizeof reason);
			}
			/* the first run crashed or timed out, the re-run alone passed */
			if (w->rerun && r.verdict == V_PASS)
				r.verdict = V_FLAKY;
		} else {
			r.verdict = w ? vf_worker_verdict(w->status) : V_UNSUPPORTED;
			snprintf(reason, sizeof reason, "%s", w ? (w->reason ? w->reason : "") : why);
			r.sampled = c->orc.idx[k] != NULL;
		}
		if (w)
			rerun_note(w, reason, sizeof reason);
		/* an unclaimed special value where the device keeps no infinities: say so */
		if (w && w->status == WK_OK && !w->facts.specials && r.m.n_special > 0 &&
		    r.m.n_special == r.m.n_special_unbounded) {
			size_t len = strlen(reason);
			snprintf(reason + len, sizeof reason - len, "; %s's facts keep no infinities "
				 "or NaNs on this device (BeFacts.specials), so none is claimed", b->name);
		}
		c->failed += vf_verdict_fails(r.verdict);
		if (c->o->sink)
			c->o->sink(c->o->ctx, &r);
		if (c->o->out_dir && vf_append_record(c->o->out_dir, &r, d))
			return -1;
	}
	return 0;
}

/* The budgets judge infinities by the facts of the device the kernel ran on (w->facts). */
static int budgets_of(Ctx *c, const Backend *b, const VfSched *vs, const WorkerResult *w,
		      HostTensor *budgets, uint8_t **ties, Diag *d)
{
	const Graph *g = c->g;
	const char *rows = vf_ext_rows(b);   /* an external kernel's: ext.h */
	int rc = c->o->budget ? c->o->budget(g, &vs->s, rows, c->inputs, budgets, d) :
				orc_budget_facts(g, &vs->s, rows, &w->facts, c->inputs, budgets,
						 ties, d);
	if (rc)
		return -1;
	for (int k = 0; k < g->noutputs; k++)
		if (budgets[k].dtype != DT_F64 ||
		    budgets[k].n != ir_tensor_count(g, g->outputs[k].tensor)) {
			diag_set(d, 3, "verify: the budget of output %s is not an f64 tensor of its "
				 "shape", g->tensors[g->outputs[k].tensor].name);
			return -1;
		}
	return 0;
}

/* Runs b under schedule vs, scheds[si] (an external kernel's claim: si < 0). */
static int run_case(Ctx *c, const Backend *b, const VfSched *vs, int si, Diag *d)
{
	const Graph *g = c->g;
	WorkerResult w;
	VfEmuResult er = {0};
	HostTensor *budgets = calloc((size_t)g->noutputs + 1, sizeof *budgets);
	uint8_t **ties = calloc((size_t)g->noutputs + 1, sizeof *ties);
	IR_ASSERT(budgets && ties);
	double budget_s = 0;
	char rel[600] = "";
	int rc = -1;
	WorkerOpts wo = c->o->w;
	wo.seed = c->o->seed;   /* an external kernel's request states it */
	if (vf_worker_run(b, g, &vs->s, c->inputs, &wo, &w, d))
		goto out_budgets;
	if (w.status == WK_OK) {
		double t0 = now();
		if (budgets_of(c, b, vs, &w, budgets, ties, d))
			goto out_worker;
		budget_s = now() - t0;
	}
	bool sampled = false;
	for (int k = 0; k < g->noutputs; k++)
		sampled |= c->orc.idx[k] != NULL;
	if (si >= 0)
		vf_emu_judge(c->emu, b, si, &w, sampled, &er);
	else {
		er.n = g->noutputs;
		er.out = calloc((size_t)er.n + 1, sizeof *er.out);
		IR_ASSERT(er.out);
		for (int k = 0; k < er.n; k++)
			snprintf(er.out[k].why, sizeof er.out[k].why,
				 "an external kernel promises nothing bit for bit");
	}
	if (c->o->out_dir) {
		snprintf(rel, sizeof rel, "%s/%s-%s", c->gname, b->name, vs->name);
		if (save_case(c, b, vs, &w, w.status == WK_OK ? budgets : NULL, rel, d))
			goto out_worker;
	}
	rc = emit_records(c, b, vs, si, &w, &er, budgets, ties, budget_s, NULL, rel, d);
out_worker:
	vf_emu_result_free(&er);
	vf_worker_free(g, &w);
out_budgets:
	for (int k = 0; k < g->noutputs; k++) {
		ht_free(&budgets[k]);
		free(ties[k]);
	}
	free(budgets);
	free(ties);
	return rc;
}

int vf_check(const Graph *g, const HostTensor *inputs, const Backend *const *backends,
	     int nbackends, const VfSched *scheds, int nscheds, const VfOpts *o,
	     int *failed, Diag *d)
{
	Ctx c = {.g = g, .inputs = inputs, .o = o, .scheds = scheds};
	VfSched claim = {.name = "claim"};
	vf_graph_name(g, c.gname, sizeof c.gname);
	int rc = oracle(&c, d);
	if (rc)
		goto out;
	c.emu = vf_emu_new(g, inputs, scheds, nscheds, &c.mo, o->oracle_timeout_s);
	rc = -1;
	if (o->out_dir) {
		c.gdir = path_of("%s/%s", o->out_dir, c.gname);
		if (save_graph(&c, d))
			goto out;
	}
	if (!o->claim) {
		sched_default(g, &claim.s);
		vf_ext_claim(g, &claim.s, false);
		claim.text = sched_text(g, &claim.s);
	}
	for (int i = 0; i < nbackends; i++) {
		const Backend *b = backends[i];
		char why[512] = "";
		bool avail = vf_available(o->w.pool, b, why, sizeof why) == 0;
		bool ext = vf_is_external(b);
		const VfSched *list = ext ? (o->claim ? o->claim : &claim) : scheds;
		for (int s = 0; s < (ext ? 1 : nscheds); s++) {
			/* a graph the external command declares it cannot take is never sent */
			bool lacks = ext && avail && vf_ext_lacks(b, g, &list[s].s, why, sizeof why);
			if (avail && !lacks ? run_case(&c, b, &list[s], ext ? -1 : s, d) :
				    emit_records(&c, b, &list[s], s, NULL, NULL, NULL, NULL, 0, why, "",
						 d))
				goto out;
		}
	}
	rc = 0;
out:
	sched_free(&claim.s);
	free(claim.text);
	*failed = c.failed;
	vf_emu_free(c.emu);
	free(c.gdir);
	oracle_free(g, &c.orc);
	return rc;
}
