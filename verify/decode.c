/* verify/decode.c: a model's greedy decode on a backend, every token judged by the oracle
 * (`assay decode`, docs/decode.md).
 *
 * A model is a directory holding two graphs with fixed conventions (docs/decode.md):
 * prefill.tg (input `tokens : i32[T]`; T is the prompt's length) and decode.tg (inputs
 * `tok : i32[1]`, `pos : i32[1]`, `pages : i32[NB]` and, for each cache entry X, a cache
 * `cache_X` of shape [NP, BS, ...]); both deliver `logits` (the last position's) and each
 * cache entry X (prefill: [T, ...] for every prompt position; decode: [...] for the new
 * position). Every other input is a weight, the same in both graphs, read from
 * MODEL/weights/NAME.npy when that file exists, else generated from the seed: normal
 * values for the embedding (the table read through `tok`), normal values times
 * 1/sqrt(the last extent, the fan-in) for every other matrix, 1 + normal/10 for a vector
 * (the norms' scales), each rounded to its format.
 *
 * A history is one (backend, schedule): the prefill on the prompt, then decode steps, each
 * fed the token the backend chose and the cache the backend wrote (pages[n] holds logical
 * block n: a permutation of the pool, from the seed). At every step the oracle decides the
 * token exactly along that history: the step's graph on the step's inputs (the backend's
 * own cache included, as a deployed engine would read it), so that the budget of every
 * logit is the budget of this one evaluation:
 * - the backend's token b is the first largest of its logits y;
 * - the candidates are the tokens v whose computed logit may exceed b's within the
 *   budgets (y_v + beta_v >= y_b - beta_b), b included; the oracle evaluates their logits
 *   z exactly (point evaluation: never the whole vocabulary where the margin settles it),
 *   and the exact token e is the first largest z among them;
 * - agree: e == b; licensed: e != b and the two exact logits lie within their budgets of
 *   each other (z_e - z_b <= beta_e + beta_b), a flip the numerics allow; defect: any other
 *   flip, or a step whose checked logits break their budgets (a wrong kernel may put a
 *   logit outside every candidate's range, so the candidates are only trusted when the
 *   logits checked are within budget);
 * - the logits are also checked at --check-logits sampled other tokens, and every cache
 *   entry at all its elements, as records of `assay check` (results.jsonl): the step's
 *   graph name with "@step N".
 * A step whose kernel did not run (crash, timeout, compile error) ends the history with a
 * step of class `failed`; one the backend cannot run (unsupported: a format it lacks) ends
 * it without a step, the reason in the summary.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <sys/stat.h>
#include <unistd.h>
#include "verify.h"

/* ------------------------------------------------------------------ the model */

/* Whether input k of g is one of the decode conventions' non-weights. */
static bool is_special(const char *name)
{
	return strcmp(name, "tok") == 0 || strcmp(name, "pos") == 0 ||
	       strcmp(name, "pages") == 0 || strcmp(name, "tokens") == 0 ||
	       strncmp(name, "cache_", 6) == 0;
}

static int output_index(const Graph *g, const char *name)
{
	for (int k = 0; k < g->noutputs; k++)
		if (strcmp(g->tensors[g->outputs[k].tensor].name, name) == 0)
			return k;
	return -1;
}

static int input_index(const Graph *g, const char *name)
{
	for (int k = 0; k < ir_ninputs(g); k++)
		if (strcmp(g->tensors[ir_input_tensor(g, k)].name, name) == 0)
			return k;
	return -1;
}

static const Tensor *input_tensor(const Graph *g, int k)
{
	return &g->tensors[ir_input_tensor(g, k)];
}

/* The input's declaration must be dt[dims...] (rank n; dims[i] < 0: any). */
static int expect_input(const Graph *g, const char *name, Dtype dt, int rank, const int64_t *dims,
			Diag *d)
{
	int k = input_index(g, name);
	if (k < 0) {
		diag_set(d, 2, "%s: the model's graph has no input '%s' (docs/decode.md)", g->file, name);
		return -1;
	}
	const Tensor *t = input_tensor(g, k);
	bool ok = t->dtype == (int8_t)dt && t->rank == rank;
	for (int i = 0; ok && i < rank; i++)
		ok = dims[i] < 0 || t->dims[i].value == dims[i];
	if (!ok) {
		diag_at(d, t->pos, g->src, g->srclen, "input '%s' must be %s with %d dimension%s "
			"(docs/decode.md)", name, dt_name(dt), rank, rank == 1 ? "" : "s");
		d->code = 2;
		return -1;
	}
	return k;
}

/* The input an expression reads through `tok` (the embedding), or -1. */
static int embed_of(const Graph *g, Ref r)
{
	const Node *n = ir_node(g, r);
	if (n->kind == NK_READ) {
		const Ref *ix = ir_read_idx(g, n);
		for (uint32_t i = 0; i < n->u.read.n; i++) {
			const Node *x = ir_node(g, ix[i]);
			if (x->kind == NK_READ && strcmp(g->tensors[x->u.read.tensor].name, "tok") == 0)
				return input_index(g, g->tensors[n->u.read.tensor].name);
		}
	}
	return -1;
}

static Graph *load(const char *dir, const char *file, const SizeOverride *ov, int nov, Diag *d)
{
	char path[4096];
	snprintf(path, sizeof path, "%s/%s", dir, file);
	return ir_parse_file(path, ov, nov, d);
}

static void free_model(VfModel *m)
{
	if (m->weights)
		for (int k = 0; k < ir_ninputs(m->decode); k++)
			ht_free(&m->weights[k]);
	free(m->weights);
	free(m->cache_in);
	free(m->cache_dec);
	free(m->cache_pre);
	ir_free(m->prefill);
	ir_free(m->decode);
	memset(m, 0, sizeof *m);
}

void vf_model_free(VfModel *m)
{
	free_model(m);
}

/* Weight k of the decode graph: MODEL/weights/NAME.npy, or generated into m->weights[k]
 * from gen (normal values of the seed) scaled as the header says. */
static int weight(VfModel *m, const char *dir, int k, const HostTensor *gen, Diag *d)
{
	const Graph *g = m->decode;
	const Tensor *t = input_tensor(g, k);
	char path[4096];
	snprintf(path, sizeof path, "%s/weights/%s.npy", dir, t->name);
	struct stat st;
	if (stat(path, &st) == 0) {
		if (npy_read(path, (Dtype)t->dtype, &m->weights[k], d) ||
		    npy_check(g, ir_input_tensor(g, k), &m->weights[k], path, d))
			return -1;
		m->nloaded++;
		return 0;
	}
	int64_t dims[IR_MAXRANK];
	for (int i = 0; i < t->rank; i++)
		dims[i] = t->dims[i].value;
	if (ht_alloc(&m->weights[k], (Dtype)t->dtype, t->rank, dims)) {
		diag_set(d, 3, "out of memory for weight '%s'", t->name);
		return -1;
	}
	double scale = t->rank >= 2 && k != m->embed ? 1 / sqrt((double)dims[t->rank - 1]) :
		t->rank >= 2 ? 1 : 0.1;
	double shift = t->rank >= 2 ? 0 : 1;
	for (int64_t i = 0; i < gen->n; i++)
		ht_set(&m->weights[k], i, shift + scale * ht_get(gen, i));
	return 0;
}

int vf_model_load(const char *dir, int nprompt, uint64_t seed, VfModel *m, Diag *d)
{
	memset(m, 0, sizeof *m);
	SizeOverride ov = {"T", nprompt};
	m->prefill = load(dir, "prefill.tg", nprompt > 0 ? &ov : NULL, nprompt > 0, d);
	if (!m->prefill)
		return -1;
	m->decode = load(dir, "decode.tg", NULL, 0, d);
	if (!m->decode)
		goto fail;
	const Graph *P = m->prefill, *G = m->decode;
	int64_t one = 1, any = -1;
	int kt = input_index(P, "tokens");
	if (kt < 0 || input_tensor(P, kt)->rank != 1 || input_tensor(P, kt)->dtype != DT_I32) {
		diag_set(d, 2, "%s: the prefill graph needs the input 'tokens : i32[T]' (docs/decode.md)",
			 P->file);
		goto fail;
	}
	m->nprompt = input_tensor(P, kt)->dims[0].value;
	if (expect_input(G, "tok", DT_I32, 1, &one, d) < 0 ||
	    expect_input(G, "pos", DT_I32, 1, &one, d) < 0 || expect_input(G, "pages", DT_I32, 1, &any, d) < 0)
		goto fail;
	m->nblocks = input_tensor(G, input_index(G, "pages"))->dims[0].value;
	m->embed = -1;   /* the table the token indexes: read through tok */
	for (int k = 0; k < G->ndefs && m->embed < 0; k++)
		m->embed = embed_of(G, G->defs[k].body);
	m->logits_dec = output_index(G, "logits");
	m->logits_pre = output_index(P, "logits");
	if (m->logits_dec < 0 || m->logits_pre < 0) {
		diag_set(d, 2, "%s: both graphs must deliver 'logits' (docs/decode.md)",
			 m->logits_dec < 0 ? G->file : P->file);
		goto fail;
	}
	const Tensor *lt = &G->tensors[G->outputs[m->logits_dec].tensor];
	if (lt->rank != 1 || lt->dtype == DT_I32) {
		diag_at(d, G->outputs[m->logits_dec].pos, G->src, G->srclen,
			"'logits' must be a real vector over the vocabulary");
		d->code = 2;
		goto fail;
	}
	m->vocab = lt->dims[0].value;
	/* the caches: every other output X of decode, with cache_X and prefill's X */
	int no = G->noutputs;
	m->cache_in = calloc((size_t)no, sizeof *m->cache_in);
	m->cache_dec = calloc((size_t)no, sizeof *m->cache_dec);
	m->cache_pre = calloc((size_t)no, sizeof *m->cache_pre);
	IR_ASSERT(m->cache_in && m->cache_dec && m->cache_pre);
	for (int k = 0; k < no; k++) {
		if (k == m->logits_dec)
			continue;
		const Tensor *x = &G->tensors[G->outputs[k].tensor];
		char name[256];
		snprintf(name, sizeof name, "cache_%s", x->name);
		int ci = input_index(G, name), pi = output_index(P, x->name);
		const Tensor *c = ci >= 0 ? input_tensor(G, ci) : NULL;
		const Tensor *p = pi >= 0 ? &P->tensors[P->outputs[pi].tensor] : NULL;
		bool ok = c && p && c->rank == x->rank + 2 && p->rank == x->rank + 1 &&
			  c->dtype == (int8_t)G->outputs[k].dtype &&
			  P->outputs[pi].dtype == G->outputs[k].dtype &&
			  p->dims[0].value == m->nprompt;
		for (int i = 0; ok && i < x->rank; i++)
			ok = c->dims[i + 2].value == x->dims[i].value && p->dims[i + 1].value == x->dims[i].value;
		if (ok && m->ncache == 0) {
			m->npages = c->dims[0].value;
			m->block = c->dims[1].value;
		}
		ok = ok && c->dims[0].value == m->npages && c->dims[1].value == m->block;
		if (!ok) {
			diag_at(d, G->outputs[k].pos, G->src, G->srclen,
				"cache entry '%s' needs an input 'cache_%s' of shape [NP, BS, ...its shape] "
				"in its format and a prefill output '%s' of shape [T, ...its shape] "
				"(docs/decode.md)", x->name, x->name, x->name);
			d->code = 2;
			goto fail;
		}
		m->cache_in[m->ncache] = ci;
		m->cache_dec[m->ncache] = k;
		m->cache_pre[m->ncache] = pi;
		m->ncache++;
	}
	if (m->npages < m->nblocks) {
		diag_set(d, 2, "%s: the cache pool has %lld pages for %lld blocks", G->file,
			 (long long)m->npages, (long long)m->nblocks);
		goto fail;
	}
	/* the weights: decode's other inputs, each declared alike in prefill */
	int ni = ir_ninputs(G);
	m->weights = calloc((size_t)ni, sizeof *m->weights);
	IR_ASSERT(m->weights);
	HostTensor *gen = calloc((size_t)ni, sizeof *gen);
	IR_ASSERT(gen);
	InputSpec spec = {DIST_NORMAL, seed, false};
	int rc = mp_make_inputs(G, &spec, NULL, gen, d);
	for (int k = 0; rc == 0 && k < ni; k++) {
		const Tensor *t = input_tensor(G, k);
		if (is_special(t->name))
			continue;
		int pk = input_index(P, t->name);
		const Tensor *pt = pk >= 0 ? input_tensor(P, pk) : NULL;
		bool same = pt && pt->dtype == t->dtype && pt->rank == t->rank;
		for (int i = 0; same && i < t->rank; i++)
			same = pt->dims[i].value == t->dims[i].value;
		if (!same) {
			diag_at(d, t->pos, G->src, G->srclen, "weight '%s' must be declared alike in "
				"the prefill graph", t->name);
			d->code = 2;
			rc = -1;
			break;
		}
		m->nweights++;
		rc = weight(m, dir, k, &gen[k], d);
	}
	for (int k = 0; k < ni; k++)
		ht_free(&gen[k]);
	free(gen);
	if (rc)
		goto fail;
	for (int k = 0; k < ir_ninputs(P); k++) {
		const char *name = input_tensor(P, k)->name;
		if (!is_special(name) && input_index(G, name) < 0) {
			diag_at(d, input_tensor(P, k)->pos, P->src, P->srclen, "weight '%s' of the "
				"prefill graph is not an input of the decode graph", name);
			d->code = 2;
			goto fail;
		}
	}
	return 0;
fail:
	free_model(m);
	return -1;
}

/* ------------------------------------------------------------------ one step */

typedef struct {
	const VfModel *m;
	const VfDecodeOpts *o;
	const Backend *b;
	const VfSched *sp, *sd;   /* the prefill's and the decode step's schedules */
	int32_t *pages;
	int32_t *prompt;
	HostTensor *cache;        /* m->ncache caches, the backend's */
	int64_t pos;              /* the position the next step computes */
	int32_t last;             /* the last token chosen */
} History;

static const char *class_name(VfStepClass c)
{
	static const char *const n[] = {"agree", "licensed", "defect", "failed"};
	return n[c];
}

const char *vf_step_class_name(VfStepClass c)
{
	return class_name(c);
}

/* A record of `assay check` for output k of the step's graph (metrics m over the checked
 * elements), to results.jsonl and the caller's sink. */
static int step_record(History *h, const Graph *g, const VfSched *s, int step, int k,
		       const VfMetrics *m, Verdict v, const char *reason, bool sampled,
		       const WorkerResult *w, Diag *d)
{
	char gname[256], base[200];
	snprintf(gname, sizeof gname, "%s@step%d", vf_graph_name(g, base, sizeof base), step);
	VfRecord r = {0};
	r.graph = gname;
	r.file = g->file;
	r.backend = h->b->name;
	r.sched = s->name;
	r.sched_text = s->text ? s->text : "";
	r.sched_seed = s->seed;
	r.output = k >= 0 ? g->tensors[g->outputs[k].tensor].name : "";
	r.dtype = k >= 0 ? g->outputs[k].dtype : DT_F32;
	r.verdict = v;
	r.reason = reason ? reason : "";
	if (m)
		r.m = *m;
	else
		vf_metrics_init(&r.m);
	vf_metrics_init(&r.m64);
	r.sampled = sampled;
	r.n_elements = k >= 0 ? ir_tensor_count(g, g->outputs[k].tensor) : 0;
	r.seed = h->o->seed;
	r.dist = "model";
	r.faults = h->o->w.faults;
	r.case_dir = "";
	if (w) {
		r.compile_s = w->compile_s;
		r.launch_s = w->launch_s;
		r.worker_s = w->wall_s;
		r.cache_hit = w->cache_hit;
		r.rules = w->rewritten ? &w->rules : NULL;
		r.cov = w->covered ? w->cov : NULL;
	}
	r.emu_why = "a decode step is not emulated";
	if (h->o->sink)
		h->o->sink(h->o->ctx, &r);
	return h->o->out_dir ? vf_append_record(h->o->out_dir, &r, d) : 0;
}

/* Appends one step to DIR/decode.jsonl (flushed and fsync'ed like results.jsonl). */
static int write_step(const VfDecodeOpts *o, const VfStep *st, Diag *d)
{
	if (!o->out_dir)
		return 0;
	char path[4096];
	snprintf(path, sizeof path, "%s/decode.jsonl", o->out_dir);
	FILE *f = fopen(path, "a");
	if (!f) {
		diag_io(d, errno, "%s", path);
		return -1;
	}
	fprintf(f, "{\"model\":");
	vf_json_str(f, st->model);
	fprintf(f, ",\"backend\":");
	vf_json_str(f, st->backend);
	fprintf(f, ",\"schedule\":");
	vf_json_str(f, st->sched);
	fprintf(f, ",\"step\":%d,\"pos\":%lld,\"token\":%d,\"exact_token\":%d,\"class\":\"%s\","
		"\"margin\":%.17g,\"budget\":%.17g,\"candidates\":%d,\"logits_verdict\":\"%s\","
		"\"max_ratio\":%.17g,\"gap\":%.17g,\"gap_budget\":%.17g,\"gap_exact\":%s,"
		"\"reason\":", st->step, (long long)st->pos, st->token,
		st->exact_token, class_name(st->cls), isfinite(st->margin) ? st->margin : -1,
		isfinite(st->budget) ? st->budget : -1, st->ncand,
		vf_verdict_name(st->logits_verdict), isfinite(st->max_ratio) ? st->max_ratio : -1,
		isfinite(st->gap) ? st->gap : -1, isfinite(st->gap_budget) ? st->gap_budget : -1,
		st->gap_exact ? "true" : "false");
	vf_json_str(f, st->reason);
	fprintf(f, ",\"budget_finite\":%s}\n", isfinite(st->budget) ? "true" : "false");
	int bad = fflush(f) || fsync(fileno(f));
	bad |= fclose(f) != 0;
	if (bad) {
		diag_env(d, "%s: could not be written", path);
		return -1;
	}
	return 0;
}

static uint64_t xorshift(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* Judges one step's logits (the backend's outputs w on g's inputs in): the token, the
 * candidates and their exact logits, the sampled others; cache entries at every element.
 * st gets the step; records go out. 0, or -1 with d (the oracle or the budget failed). */
static int judge(History *h, const Graph *g, const VfSched *s, const HostTensor *in,
		 const WorkerResult *w, int logits, const int *cache_out, int step, VfStep *st,
		 Diag *d)
{
	const VfDecodeOpts *o = h->o;
	HostTensor *bud = calloc((size_t)g->noutputs, sizeof *bud);
	IR_ASSERT(bud);
	int rc = -1;
	MpSession *ss = NULL;
	MpOpts mo = {.threads = 1, .mem_cap = o->oracle_mem};
	if (orc_budget_facts(g, &s->s, h->b->name, &w->facts, in, bud, NULL, d))
		goto out;
	ss = mp_session_new(g, in, &mo, d);
	if (!ss)
		goto out;
	const HostTensor *y = &w->outs[logits], *beta = &bud[logits];
	int64_t V = y->n;
	int64_t b = 0;
	for (int64_t v = 1; v < V; v++)
		if (ht_get(y, v) > ht_get(y, b) || (isnan(ht_get(y, v)) && !isnan(ht_get(y, b))))
			b = v;
	double yb = ht_get(y, b), bb = ht_get(beta, b);
	/* candidates first, then sampled others (each token once) */
	int64_t *idx = malloc((size_t)V * sizeof *idx);
	uint8_t *cand = calloc((size_t)V, 1);
	double *zc = calloc((size_t)V + 1, sizeof *zc);   /* the candidates' exact logits */
	IR_ASSERT(idx && cand && zc);
	int64_t n = 0;
	for (int64_t v = 0; v < V; v++) {
		double yv = ht_get(y, v), bv = ht_get(beta, v);
		if (v == b || isnan(yv) || !(yv + bv < yb - bb)) {
			cand[v] = 1;
			idx[n++] = v;
		}
	}
	int64_t ncand = n;
	uint64_t rs = o->seed * 0x9E3779B97F4A7C15ull + (uint64_t)step * 2 + 1;
	for (int64_t i = 0; i < o->check_logits && n < V; i++) {
		int64_t v = (int64_t)(xorshift(&rs) % (uint64_t)V);
		while (cand[v])
			v = (v + 1) % V;
		cand[v] = 2;
		idx[n++] = v;
	}
	VfMetrics ml;
	vf_metrics_init(&ml);
	int64_t e = -1;
	double ze = 0, zb = 0;

	bool settled = true;
	for (int64_t i = 0; i < n; i++) {
		double z;
		MpStatus stt;
		if (mp_point(ss, logits, &idx[i], DT_NONE, &z, &stt, d))
			goto out2;
		settled &= stt == MP_EXACT_OK;
		vf_metrics_add(&ml, g->outputs[logits].dtype, idx[i], ht_get(y, idx[i]), z,
			       ht_get(beta, idx[i]), false);
		if (i < ncand)
			zc[i] = z;
		if (i < ncand && (e < 0 || z > ze)) {
			e = idx[i];
			ze = z;
		}
		if (idx[i] == b)
			zb = z;
	}
	vf_metrics_done(&ml);
	/* the runner-up: the best other candidate, exactly; with none, the rest's bound */
	int64_t ru = -1;
	for (int64_t i = 0; i < ncand; i++)
		if (idx[i] != e && (ru < 0 || zc[i] > zc[ru]))
			ru = i;
	st->gap_exact = ru >= 0;
	if (ru >= 0) {
		st->gap = ze - zc[ru];
		st->gap_budget = ht_get(beta, e) + ht_get(beta, idx[ru]);
	} else {
		double ub = -INFINITY;
		for (int64_t v = 0; v < V; v++)
			if (!cand[v] || cand[v] == 2) {
				double u = ht_get(y, v) + ht_get(beta, v);
				ub = u > ub ? u : ub;
			}
		st->gap = ze - ub;
		st->gap_budget = 0;
	}
	Verdict lv = vf_metrics_verdict(&ml);
	st->token = (int)b;
	st->exact_token = (int)e;
	st->ncand = (int)ncand;
	st->margin = ze - zb;
	st->budget = ht_get(beta, e) + bb;
	st->logits_verdict = lv;
	st->max_ratio = ml.max_ratio;
	if (lv != V_PASS)
		st->cls = VD_DEFECT;
	else if (e == b)
		st->cls = VD_AGREE;
	else
		st->cls = st->margin <= st->budget ? VD_LICENSED : VD_DEFECT;
	snprintf(st->reason, sizeof st->reason, "%s", lv != V_PASS ? "the logits break their "
		 "budgets" : !settled ? "a logit did not settle" : "");
	char why[200];
	snprintf(why, sizeof why, "%lld candidates and %lld sampled logits checked exactly",
		 (long long)ncand, (long long)(n - ncand));
	if (step_record(h, g, s, step, logits, &ml, lv, why, true, w, d))
		goto out2;
	/* the cache entries, every element */
	for (int c = 0; c < h->m->ncache; c++) {
		int k = cache_out[c];
		const HostTensor *got = &w->outs[k];
		VfMetrics mc;
		vf_metrics_init(&mc);
		const Tensor *t = &g->tensors[g->outputs[k].tensor];
		int64_t co[IR_MAXRANK] = {0};
		for (int64_t i = 0; i < got->n; i++) {
			int64_t r = i;
			for (int a = t->rank - 1; a >= 0; a--) {
				co[a] = r % t->dims[a].value;
				r /= t->dims[a].value;
			}
			double z;
			MpStatus stt;
			if (mp_point(ss, k, co, DT_NONE, &z, &stt, d))
				goto out2;
			vf_metrics_add(&mc, g->outputs[k].dtype, i, ht_get(got, i), z,
				       ht_get(&bud[k], i), false);
		}
		vf_metrics_done(&mc);
		Verdict cv = vf_metrics_verdict(&mc);
		if (cv != V_PASS && st->cls != VD_DEFECT) {
			st->cls = VD_DEFECT;
			snprintf(st->reason, sizeof st->reason, "cache entry %s breaks its budget",
				 t->name);
		}
		if (step_record(h, g, s, step, k, &mc, cv, "", false, w, d))
			goto out2;
	}
	rc = 0;
out2:
	free(idx);
	free(cand);
	free(zc);
out:
	if (ss)
		mp_session_free(ss);
	for (int k = 0; k < g->noutputs; k++)
		ht_free(&bud[k]);
	free(bud);
	return rc;
}

/* The inputs of g: the weights by name, then the specials from the history. */
static void bind_inputs(const History *h, const Graph *g, HostTensor *in, HostTensor *tmp)
{
	const VfModel *m = h->m;
	for (int k = 0; k < ir_ninputs(g); k++) {
		const Tensor *t = input_tensor(g, k);
		int wk = input_index(m->decode, t->name);
		if (!is_special(t->name)) {
			in[k] = m->weights[wk];   /* shallow: owned by the model */
			continue;
		}
		int64_t one = 1;
		if (strcmp(t->name, "tokens") == 0) {
			int64_t n = m->nprompt;
			ht_alloc(&tmp[k], DT_I32, 1, &n);
			for (int64_t i = 0; i < n; i++)
				ht_set(&tmp[k], i, h->prompt[i]);
		} else if (strcmp(t->name, "tok") == 0 || strcmp(t->name, "pos") == 0) {
			ht_alloc(&tmp[k], DT_I32, 1, &one);
			ht_set(&tmp[k], 0, t->name[1] == 'o' ? (double)h->last : (double)h->pos);
		} else if (strcmp(t->name, "pages") == 0) {
			int64_t n = m->nblocks;
			ht_alloc(&tmp[k], DT_I32, 1, &n);
			for (int64_t i = 0; i < n; i++)
				ht_set(&tmp[k], i, h->pages[i]);
		} else {
			for (int c = 0; c < m->ncache; c++)
				if (m->cache_in[c] == k)
					in[k] = h->cache[c];   /* shallow: the history's */
			continue;
		}
		in[k] = tmp[k];
	}
}

/* Writes rows [0, n) of src (row i: position p0 + i) into the cache c. */
static void cache_write(History *h, int c, const HostTensor *src, int64_t p0, int64_t n)
{
	HostTensor *dst = &h->cache[c];
	int64_t row = src->n / n, bs = h->m->block;
	for (int64_t i = 0; i < n; i++) {
		int64_t p = p0 + i;
		int64_t slot = (int64_t)h->pages[p / bs] * bs + p % bs;
		for (int64_t j = 0; j < row; j++)
			ht_set(dst, slot * row + j, ht_get(src, i * row + j));
	}
}

/* One step (0: the prefill) of history h: run, judge, feed the cache. 1 when the history
 * ends (the kernel did not run), 2 when the backend cannot run it (unsupported: st->reason
 * says why, no step), 0 to go on, -1 with d. */
static int step(History *h, int k, VfStep *st, Diag *d)
{
	const VfModel *m = h->m;
	const Graph *g = k == 0 ? m->prefill : m->decode;
	const VfSched *s = k == 0 ? h->sp : h->sd;
	int ni = ir_ninputs(g);
	HostTensor *in = calloc((size_t)ni, sizeof *in), *tmp = calloc((size_t)ni, sizeof *tmp);
	IR_ASSERT(in && tmp);
	bind_inputs(h, g, in, tmp);
	st->step = k;
	st->pos = k == 0 ? m->nprompt - 1 : h->pos;
	WorkerResult w;
	int rc = vf_worker_run(h->b, g, &s->s, in, &h->o->w, &w, d);
	if (rc == 0 && w.status == WK_UNSUPPORTED) {
		/* the backend cannot run this schedule: no step, the history is not run */
		snprintf(st->reason, sizeof st->reason, "%.400s", w.reason ? w.reason : "");
		rc = step_record(h, g, s, k, -1, NULL, V_UNSUPPORTED, st->reason, false, &w, d);
		vf_worker_free(g, &w);
		rc = rc ? -1 : 2;
	} else if (rc == 0 && w.status != WK_OK) {
		st->cls = VD_FAILED;
		st->logits_verdict = vf_worker_verdict(w.status);
		snprintf(st->reason, sizeof st->reason, "%.400s", w.reason ? w.reason : "");
		rc = step_record(h, g, s, k, -1, NULL, st->logits_verdict, st->reason, false, &w, d);
		vf_worker_free(g, &w);
		rc = rc ? -1 : 1;
	} else if (rc == 0) {
		int logits = k == 0 ? m->logits_pre : m->logits_dec;
		rc = judge(h, g, s, in, &w, logits, k == 0 ? m->cache_pre : m->cache_dec, k, st, d);
		if (rc == 0) {
			for (int c = 0; c < m->ncache; c++) {
				int o = k == 0 ? m->cache_pre[c] : m->cache_dec[c];
				cache_write(h, c, &w.outs[o], k == 0 ? 0 : h->pos, k == 0 ? m->nprompt : 1);
			}
			h->last = st->token;
			h->pos = k == 0 ? m->nprompt : h->pos + 1;
		}
		vf_worker_free(g, &w);
	}
	for (int i = 0; i < ni; i++)
		ht_free(&tmp[i]);
	free(in);
	free(tmp);
	return rc;
}

int vf_decode(const VfModel *m, const Backend *b, const VfSched *sp, const VfSched *sd,
	      const VfDecodeOpts *o, VfDecodeSummary *sum, Diag *d)
{
	memset(sum, 0, sizeof *sum);
	if (m->nprompt + o->steps - 1 > m->nblocks * m->block) {
		diag_set(d, 2, "%d steps after a prompt of %lld tokens need %lld cache positions; "
			 "the cache holds %lld (NB * BS)", o->steps, (long long)m->nprompt,
			 (long long)(m->nprompt + o->steps - 1), (long long)(m->nblocks * m->block));
		return -1;
	}
	History h = {.m = m, .o = o, .b = b, .sp = sp, .sd = sd};
	h.pages = malloc((size_t)m->npages * sizeof *h.pages);
	h.prompt = malloc((size_t)m->nprompt * sizeof *h.prompt);
	h.cache = calloc((size_t)m->ncache, sizeof *h.cache);
	IR_ASSERT(h.pages && h.prompt && h.cache);
	uint64_t rs = o->seed * 0xD1B54A32D192ED03ull + 0x2545F4914F6CDD1Dull;
	for (int64_t i = 0; i < m->npages; i++)
		h.pages[i] = (int32_t)i;
	for (int64_t i = m->npages - 1; i > 0; i--) {
		int64_t j = (int64_t)(xorshift(&rs) % (uint64_t)(i + 1));
		int32_t t = h.pages[i];
		h.pages[i] = h.pages[j];
		h.pages[j] = t;
	}
	for (int64_t i = 0; i < m->nprompt; i++)
		h.prompt[i] = o->prompt && i < o->nprompt_given ? o->prompt[i] :
			(int32_t)(xorshift(&rs) % (uint64_t)m->vocab);
	int rc = 0;
	for (int c = 0; c < m->ncache && rc == 0; c++) {
		const Tensor *t = input_tensor(m->decode, m->cache_in[c]);
		int64_t dims[IR_MAXRANK];
		for (int i = 0; i < t->rank; i++)
			dims[i] = t->dims[i].value;
		if (ht_alloc(&h.cache[c], (Dtype)t->dtype, t->rank, dims)) {
			diag_set(d, 3, "out of memory for the cache %s", t->name);
			rc = -1;
		}
	}
	char mname[256];
	vf_graph_name(m->decode, mname, sizeof mname);
	for (int k = 0; rc == 0 && k < o->steps; k++) {
		VfStep st = {0};
		st.model = mname;
		st.backend = b->name;
		st.sched = sd->name;
		rc = step(&h, k, &st, d);
		if (rc < 0)
			break;
		if (rc == 2) {
			snprintf(sum->unsupported, sizeof sum->unsupported, "%s", st.reason);
			rc = 0;
			break;
		}
		sum->steps++;
		sum->n[st.cls]++;
		if (o->on_step)
			o->on_step(o->ctx, &st);
		if (write_step(o, &st, d))
			rc = -1;
		else if (rc == 1) {
			rc = 0;
			break;
		}
	}
	for (int c = 0; c < m->ncache; c++)
		ht_free(&h.cache[c]);
	free(h.cache);
	free(h.pages);
	free(h.prompt);
	return rc;
}
