/* fuzz/cover.c: coverage feedback: what a campaign's cases reached of the compiler's
 * coverage points (compiler/cov.def), the bias that follows for later cases, and the
 * directed pass over a case's schedule that some of the bias acts through.
 *
 * Coverage. Every record of a case names the points its run reached ("cov"); a case
 * reaches the union of its records' points (fz_cov_line reads the log in case order).
 *
 * Epochs and determinism. A campaign with feedback (FzCampaign.feedback_epoch = E) cuts
 * its cases into epochs of E. The bias of epoch e is a function of the coverage of the
 * cases of epochs 0 .. e-2 only (none for epochs 0 and 1), which are all in the log before
 * any case of epoch e is needed, whatever the number of jobs: the parent dispatches a case
 * of epoch e only once epoch e-2 is logged, and a resume, a replay (fz_case_bias) and the
 * reducer compute or receive the same bias from the same log. So case n stays a pure
 * function of (seed, n), the settings and the log before it, which is itself such a
 * function: a campaign with --jobs 1 and --jobs 2 writes the same log, timings aside.
 *
 * The bias (the thin layer). Each point that the campaign's backends can reach, that has
 * generator levers in its cov.def hints and that its cases have not reached has a demand
 * of 64 (a point reached by fewer than 1% of the cases, 16), halved for every DECAY cases
 * aimed at it without reaching it, down to 1 for an unreached point and 0 for a rare one:
 * a point the generator cannot reach (a size no graph has) stops crowding out the others
 * and the bias moves on, as a fuzzer's energy schedule does. A case of a biased epoch is
 * left alone with probability 1/2 (so the campaign keeps its undirected distribution, and
 * the bugs it finds there); the other half aims at a point drawn in proportion to the
 * demand and gets all the levers its hints name at once (a point hinted "inline accum16"
 * needs both in one graph). A lever only changes knobs of GenOpts (weights,
 * probabilities, sizes, and GenOpts.p_dir for the directed pass).
 *
 * The directed pass (fz_direct_schedule) gives definitions the directives of FzDirected
 * (a partial tile in one or two dimensions, a split, pairwise order, 16-bit storage, a
 * 16-bit or f64 accumulation, an inline) with the chances of GenOpts.p_dir, in a stream of
 * its own; all chances 0 (the default) leaves the graph as fz_gen made it before the pass
 * existed, so a campaign without feedback generates what it always did.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "gen.h"

enum { DECAY = 8 };

/* ------------------------------------------------------------ levers */

typedef enum {
	LV_TILE, LV_TILE2, LV_SPLIT, LV_PAIRWISE, LV_STORE16, LV_ACCUM16, LV_ACCUM64, LV_INLINE,
	LV_EXTENT, LV_PAD, LV_VIEW, LV_GATHER, LV_TRI, LV_MULTIRED, LV_INT, LV_SELECT, LV_LSE,
	LV_PROD, LV_MAXMIN, LV_IDENT, LV_CAST, LV_F64, LV_F16IO, LV_RANK, LV_DEEP, LV__COUNT
} Lever;
_Static_assert(LV__COUNT <= 32, "a mask of levers is an unsigned");

static const char *const lever_names[LV__COUNT] = {
	[LV_TILE] = "tile", [LV_TILE2] = "tile2", [LV_SPLIT] = "split", [LV_PAIRWISE] = "pairwise",
	[LV_STORE16] = "store16", [LV_ACCUM16] = "accum16", [LV_ACCUM64] = "accum64",
	[LV_INLINE] = "inline", [LV_EXTENT] = "extent", [LV_PAD] = "pad", [LV_VIEW] = "view",
	[LV_GATHER] = "gather", [LV_TRI] = "tri", [LV_MULTIRED] = "multired", [LV_INT] = "int",
	[LV_SELECT] = "select", [LV_LSE] = "lse", [LV_PROD] = "prod", [LV_MAXMIN] = "maxmin",
	[LV_IDENT] = "ident", [LV_CAST] = "cast", [LV_F64] = "f64", [LV_F16IO] = "f16io",
	[LV_RANK] = "rank", [LV_DEEP] = "deep",
};

const char *fz_lever_name(int lever)
{
	return lever >= 0 && lever < LV__COUNT ? lever_names[lever] : NULL;
}

int fz_lever_find(const char *name, size_t len)
{
	for (int l = 0; l < LV__COUNT; l++)
		if (strlen(lever_names[l]) == len && memcmp(lever_names[l], name, len) == 0)
			return l;
	return -1;
}

static void times(unsigned *w, int k, unsigned f)
{
	w[k] = w[k] ? w[k] * f : f;
}

static double at_least(double p, double q)
{
	return p > q ? p : q;
}

/* What lever l changes in o. */
static void apply(Lever l, GenOpts *o)
{
	switch (l) {
	case LV_TILE: o->p_dir[FZ_SD_TILE] = at_least(o->p_dir[FZ_SD_TILE], 0.7); break;
	case LV_TILE2: o->p_dir[FZ_SD_TILE2] = at_least(o->p_dir[FZ_SD_TILE2], 0.7); break;
	case LV_SPLIT: o->p_dir[FZ_SD_SPLIT] = at_least(o->p_dir[FZ_SD_SPLIT], 0.6); break;
	case LV_PAIRWISE: o->p_dir[FZ_SD_PAIRWISE] = at_least(o->p_dir[FZ_SD_PAIRWISE], 0.6); break;
	case LV_STORE16: o->p_dir[FZ_SD_STORE16] = at_least(o->p_dir[FZ_SD_STORE16], 0.6); break;
	case LV_ACCUM16: o->p_dir[FZ_SD_ACCUM16] = at_least(o->p_dir[FZ_SD_ACCUM16], 0.6); break;
	case LV_ACCUM64: o->p_dir[FZ_SD_ACCUM64] = at_least(o->p_dir[FZ_SD_ACCUM64], 0.6); break;
	case LV_INLINE:
		o->p_dir[FZ_SD_INLINE] = at_least(o->p_dir[FZ_SD_INLINE], 0.7);
		o->max_defs += 2;
		break;
	case LV_EXTENT:
		o->max_extent = o->max_extent * 3 > 40 ? o->max_extent * 3 : 40;
		o->max_elems *= 4;
		o->max_work = o->max_work / 2 * 3;
		break;
	case LV_PAD:
		o->p_oob = at_least(o->p_oob * 2.5, 0.3);
		o->p_pad = at_least(o->p_pad * 4, 0.12);
		times(o->ix_w, FZ_IX_WINDOW, 3);
		break;
	case LV_VIEW: {
		static const FzIxKind v[] = {FZ_IX_REVERSE, FZ_IX_STRIDE, FZ_IX_DIV, FZ_IX_MOD,
					     FZ_IX_RESHAPE, FZ_IX_FLAT};
		for (size_t i = 0; i < ARRAY_LEN(v); i++)
			times(o->ix_w, v[i], 3);
		break;
	}
	case LV_GATHER: times(o->ix_w, FZ_IX_INDIRECT, 4); break;
	case LV_TRI:
		times(o->range_w, FZ_RANGE_TRI, 4);
		times(o->range_w, FZ_RANGE_TAIL, 4);
		times(o->range_w, FZ_RANGE_SLIDE, 4);
		break;
	case LV_MULTIRED: o->max_red = FZ_MAXRED; times(o->monoid_w, MO_SUM, 2); break;
	case LV_INT:
		o->p_int_def = at_least(o->p_int_def * 3, 0.4);
		times(o->in_dtype_w, DT_I32, 4);
		times(o->op_w, OP_IDIV, 2);
		times(o->op_w, OP_MOD, 2);
		break;
	case LV_SELECT:
		times(o->monoid_w, MO_ARGMAX, 4);
		times(o->monoid_w, MO_ARGMIN, 4);
		times(o->monoid_w, MO_TOPK, 4);
		break;
	case LV_LSE: times(o->monoid_w, MO_LOGSUMEXP, 5); break;
	case LV_PROD: times(o->monoid_w, MO_PROD, 5); break;
	case LV_MAXMIN: {
		static const Op f[] = {OP_MAX, OP_MIN, OP_ABS, OP_FLOOR, OP_CEIL};
		times(o->monoid_w, MO_MAX, 3);
		times(o->monoid_w, MO_MIN, 3);
		for (size_t i = 0; i < ARRAY_LEN(f); i++)
			times(o->op_w, f[i], 3);
		break;
	}
	case LV_IDENT: o->p_ident = at_least(o->p_ident * 5, 0.25); break;
	case LV_CAST:
		for (int op = 0; op < OP__COUNT; op++)
			if (op_info((Op)op)->flags & OPF_CAST)
				times(o->op_w, op, 4);
		break;
	case LV_F64: times(o->in_dtype_w, DT_F64, 4); times(o->out_dtype_w, DT_F64, 4); break;
	case LV_F16IO:
		times(o->in_dtype_w, DT_F16, 3);
		times(o->in_dtype_w, DT_BF16, 3);
		times(o->out_dtype_w, DT_F16, 3);
		times(o->out_dtype_w, DT_BF16, 3);
		break;
	case LV_RANK:
		o->max_rank = o->max_rank < FZ_MAXRANK ? o->max_rank + 1 : FZ_MAXRANK;
		o->max_elems *= 2;
		break;
	case LV_DEEP: o->max_depth += 2; o->max_defs += 2; break;
	default: break;
	}
	if (o->max_defs > FZ_MAX_DEFS)
		o->max_defs = FZ_MAX_DEFS;
}

/* ------------------------------------------------------------ coverage of a log */

void fz_cov_init(FzCov *c, const FzCampaign *camp)
{
	memset(c, 0, sizeof *c);
	FzRun r;
	Diag d = {0};
	if (fz_run_backends(&r, camp->backends, &d))
		r.nbackends = 0;
	diag_clear(&d);
	for (int p = 0; p < COV__COUNT; p++)
		for (int k = 0; k < r.nbackends; k++)
			c->reachable[p] |= cov_reaches((CovPoint)p, r.backends[k]->name);
}

/* Calls f(ctx, name, len) for each string of the JSON array text of member key of line. */
static void each_name(const char *line, const char *key, void (*f)(void *, const char *, size_t),
		      void *ctx)
{
	char buf[8192];
	if (!fz_json_get(line, key, buf, sizeof buf))
		return;
	for (char *q = strchr(buf, '"'); q; q = strchr(q, '"')) {
		char *e = strchr(q + 1, '"');
		if (!e)
			break;
		f(ctx, q + 1, (size_t)(e - q - 1));
		q = e + 1;
	}
}

static void point_seen(void *ctx, const char *name, size_t len)
{
	int p = cov_find(name, len);
	if (p >= 0)
		((FzCov *)ctx)->in_case[p] = true;
}


void fz_cov_line(FzCov *c, const char *line)
{
	if (strncmp(line, "{\"done\":", 8) == 0) {
		for (int p = 0; p < COV__COUNT; p++) {
			c->hits[p] += c->in_case[p];
			c->in_case[p] = false;
		}
		c->cases++;
		char aim[64];
		int p = fz_json_get(line, "aim", aim, sizeof aim) ? cov_find(aim, strlen(aim)) : -1;
		if (p >= 0)
			c->aimed[p]++;
		return;
	}
	each_name(line, "cov", point_seen, c);
}

/* ------------------------------------------------------------ the bias */

/* The levers point p's hints name, as a mask. */
static unsigned hinted(CovPoint p)
{
	unsigned m = 0;
	for (const char *h = cov_hints(p); *h;) {
		h += strspn(h, " ");
		size_t len = strcspn(h, " ");
		int l = fz_lever_find(h, len);
		if (l >= 0)
			m |= 1u << l;
		h += len;
	}
	return m;
}

void fz_bias_of(const FzCov *c, int64_t epoch, FzBias *b)
{
	memset(b, 0, sizeof *b);
	b->epoch = epoch;
	for (int p = 0; p < COV__COUNT; p++) {
		unsigned w = c->hits[p] == 0 ? 64 : c->hits[p] * 100 < c->cases ? 16 : 0;
		if (!c->reachable[p] || !hinted((CovPoint)p) || !w)
			continue;
		int64_t halvings = c->aimed[p] / DECAY;
		w = halvings >= 7 ? 0 : w >> halvings;
		b->want[p] = (uint16_t)(w || c->hits[p] ? w : 1);
	}
}

GenOpts fz_bias_opts(const GenOpts *o, const FzBias *b, uint64_t seed, uint64_t case_no,
		     int *aim, unsigned *levers)
{
	GenOpts r = *o;
	unsigned mask = 0, w[COV__COUNT];
	uint64_t total = 0;
	int p = -1;
	for (int k = 0; b && k < COV__COUNT; k++)
		total += w[k] = b->want[k];
	Rng rng = {fz_seed(seed, case_no, FZ_STREAM_GRAPH) ^ 0xb1a5edull, 0};
	if (b && b->epoch >= 0 && total && rng_chance(&rng, 0.5)) {
		p = rng_pick(&rng, w, COV__COUNT);
		mask = hinted((CovPoint)p);
		for (int l = 0; l < LV__COUNT; l++)
			if (mask >> l & 1)
				apply((Lever)l, &r);
	}
	if (aim)
		*aim = p;
	if (levers)
		*levers = mask;
	return r;
}

int fz_case_bias(const char *dir, const FzCampaign *c, uint64_t case_no, FzBias *b, Diag *d)
{
	memset(b, 0, sizeof *b);
	b->epoch = -1;
	if (c->feedback_epoch <= 0)
		return 0;
	int64_t E = c->feedback_epoch, e = (int64_t)(case_no / (uint64_t)E);
	b->epoch = e;
	if (e < 2)
		return 0;
	int64_t need = (e - 1) * E;
	char *path = NULL;
	IR_ASSERT(asprintf(&path, "%s/results.jsonl", dir) >= 0);
	FILE *f = fopen(path, "r");
	FzCov *cov = malloc(sizeof *cov);
	IR_ASSERT(cov);
	fz_cov_init(cov, c);
	char *line = NULL;
	size_t cap = 0;
	while (f && cov->cases < need && getline(&line, &cap, f) > 0)
		fz_cov_line(cov, line);
	int rc = 0;
	if (cov->cases < need) {
		diag_set(d, 2, "%s: %s%lld cases, and case %llu (epoch %lld of %lld cases) is biased "
			 "by the coverage of the first %lld", path, f ? "holds " : "cannot be read: ",
			 (long long)cov->cases, (unsigned long long)case_no, (long long)e, (long long)E,
			 (long long)need);
		rc = -1;
	} else {
		fz_bias_of(cov, e, b);
	}
	free(line);
	free(cov);
	if (f)
		fclose(f);
	free(path);
	return rc;
}

/* ------------------------------------------------------------ the directed pass */

static bool output_of(const Graph *g, int d)
{
	for (int i = 0; i < g->noutputs; i++)
		for (int k = 0; k < g->defs[d].nout; k++)
			if (g->outputs[i].tensor == g->defs[d].out[k])
				return true;
	return false;
}

/* A tile for extent n that leaves a partial tile, the larger the likelier (0 if n < 3). */
static int64_t partial_tile(Rng *r, int64_t n)
{
	int64_t c[64];
	int k = 0;
	for (int64_t t = n - 1; t >= 2 && k < 64; t--)
		if (n % t)
			c[k++] = t;
	if (!k)
		return 0;
	return c[rng_below(r, (k + 1) / 2)];   /* from the larger half */
}

/* Partial tiles in up to `dims` dimensions of d (those of extent 3 or more); for one
 * dimension, now and then a tile larger than its extent instead (clamped to it). */
static void tile_partial(Rng *r, const Def *D, DefSched *s, int npar, int dims)
{
	if (dims == 1 && npar > 0 && rng_chance(r, 0.2)) {
		static const int64_t big[] = {16, 32, 64};
		int k = (int)rng_below(r, npar);
		int64_t t = big[rng_below(r, ARRAY_LEN(big))];
		s->tile[k] = t > D->lhs[k].ext.value ? t : 2 * D->lhs[k].ext.value;
		return;
	}
	int cand[IR_MAXRANK], n = 0;
	for (int k = 0; k < npar; k++)
		if (D->lhs[k].ext.value >= 3)
			cand[n++] = k;
	for (int i = 0; i < dims && n > 0; i++) {
		int j = (int)rng_below(r, n);
		int k = cand[j];
		cand[j] = cand[--n];
		s->tile[k] = partial_tile(r, D->lhs[k].ext.value);
	}
}

static void direct_def(const Graph *g, int d, const GenOpts *o, Rng *r, DefSched *s)
{
	const Def *D = &g->defs[d];
	bool plain = D->monoid == MO_NONE;
	bool sel = D->monoid == MO_ARGMAX || D->monoid == MO_ARGMIN || D->monoid == MO_TOPK;
	bool real = ir_node(g, D->body)->ty == TY_REAL;
	bool ints = g->tensors[D->out[0]].dtype == DT_I32;
	int npar = D->monoid == MO_TOPK ? D->nlhs - 1 : D->nlhs;
	const double *p = o->p_dir;
	if (s->inlined)
		return;
	if (plain && !output_of(g, d) && rng_chance(r, p[FZ_SD_INLINE])) {
		s->inlined = true;   /* sched_text then writes its inline alone */
		return;
	}
	if (rng_chance(r, p[FZ_SD_TILE2]))
		tile_partial(r, D, s, npar, 2);
	else if (rng_chance(r, p[FZ_SD_TILE]))
		tile_partial(r, D, s, npar, 1);
	if (!plain && !sel && rng_chance(r, p[FZ_SD_SPLIT])) {
		static const int64_t f[] = {2, 3, 4, 8};
		memset(s->split, 0, sizeof s->split);
		s->split[rng_below(r, D->nred)] = f[rng_below(r, ARRAY_LEN(f))];
	}
	if (!plain && !sel && rng_chance(r, p[FZ_SD_PAIRWISE]))
		s->order = ORDER_PAIRWISE;
	if (!ints && rng_chance(r, p[FZ_SD_STORE16]))
		s->store = rng_chance(r, 0.5) ? DT_F16 : DT_BF16;
	if (!plain && real && rng_chance(r, p[FZ_SD_ACCUM16]))
		s->accum = rng_chance(r, 0.5) ? DT_F16 : DT_BF16;
	else if (!plain && real && rng_chance(r, p[FZ_SD_ACCUM64]))
		s->accum = DT_F64;
}

void fz_direct_schedule(Graph *g, const GenOpts *o, uint64_t seed, uint64_t case_no)
{
	bool any = false;
	for (int k = 0; k < FZ_SD__COUNT; k++)
		any |= o->p_dir[k] > 0;
	Schedule s;
	Diag d = {0};
	if (!any || sched_build(g, &s, &d)) {
		diag_clear(&d);
		return;
	}
	Rng r = {fz_seed(seed, case_no, FZ_STREAM_SCHEDULE) ^ 0xd12ec7edull, 0};
	char *was = sched_text(g, &s);
	for (int k = 0; k < g->ndefs; k++)
		direct_def(g, k, o, &r, &s.defs[k]);
	char *text = sched_text(g, &s);
	sched_free(&s);
	/* the parser judges it; a schedule it refuses leaves g's own (ir_parse_schedule
	 * changes nothing then) */
	if (strcmp(was, text) && ir_parse_schedule(g, text, strlen(text), "<schedule>", &d))
		diag_clear(&d);
	free(was);
	free(text);
}
