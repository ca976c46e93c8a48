/* compiler/sched.c: schedules: the default one, the one a graph's directives ask for
 * (checked for applicability), a sampler of random legal ones, and their text.
 *
 * What each choice means (graph-format.md section 7; lower.c implements it):
 * - store e : F      e's values are rounded to F (f64 f32 f16 bf16) when stored.
 * - accum s : F      s's arithmetic (its terms and accumulators) is done in F (f64, f32,
 *                    f16, bf16; f16 and bf16 as f32 operations each rounded to F).
 *                    A plain definition computes in f64 when it reads an f64 value or is
 *                    stored in f64, else in f32.
 * - inline e         e has no buffer: each read of e computes e's body at the read's
 *                    indices, in e's own format (f64 when e reads an f64 value, else f32),
 *                    with no rounding to a store format.
 * - tile y : i=T     left-hand index i runs in tiles of T (the last one partial when T
 *                    does not divide the extent); tiles are the unit of parallel work.
 * - split s : j=S    the terms of s are dealt into S partial reductions by (j - lo) mod S
 *                    (lo: the start of j's range), each reduced in the order of s, and the
 *                    S partial results are combined in that order (linear: p0, p1, ...;
 *                    pairwise: the tree below over the S partials).
 * - order s : O      linear: ((t0 op t1) op t2) ...; pairwise: left half = the first
 *                    floor(n/2) terms, recursively; any (a claim of an --external
 *                    kernel, section 7a): any tree, budgeted as the worst one; assay's
 *                    own kernels compute it linearly. Only sum, prod and logsumexp's sum
 *                    depend on it; max and min are exact in any order.
 * Default formats (section 7, version 2): a format no directive names is f64 when the
 * definition reads an f64 value, else f32 (its computation, accumulation and storage alike).
 * A definition reads an f64 value when its body (operands, `?:` conditions, `??` defaults,
 * index lists and range bounds alike) reads
 *   - an input declared f64,
 *   - a definition's real result stored in f64, whether by default or by `store d : f64`
 *     (so the default is transitive, and `store d : f32`, f16 or bf16 stops it: d is then
 *     an f32 / 16-bit value for its readers),
 *   - an inlined definition computed in f64 (an inlined value has its op format),
 * or contains an f64(...) cast. Not f64 values: literals (a literal denotes its exact
 * value, rounded into the reader's format), index variables and sizes used as values, and
 * every integer result (i32 inputs and definitions, argmax/argmin and topk indices) even
 * when its body reads f64. A real read counts wherever it stands, even under an f32(...)
 * cast or only in a condition. 16-bit inputs read nothing f64, so they compute in f32.
 * Each definition's default depends only on the definitions above it, so settle_all
 * fixes them in file order; sched_text compares each definition with the default it has
 * under the schedule's own choices above it, so that the text reads back to the same
 * schedule.
 * Applicability: a directive naming something that is not there, a split/order of a
 * non-reduction or of a selection (argmax, argmin, topk: they have no order to choose),
 * store of an integer definition, accum of a plain or integer definition, inline of an
 * output, a reduction or a topk, any other directive on an inlined definition, a tile of a
 * topk's last index, a second split index, and a repeated directive are errors.
 *
 * Invariant: a Schedule's defs array has g->ndefs entries and every choice in it is legal
 * for g (sched_build rejects, sched_sample only draws legal ones).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../compiler.h"

static const char *const kind_names[SD__COUNT] = {
	[SD_STORE] = "store", [SD_ACCUM] = "accum", [SD_INLINE] = "inline",
	[SD_TILE] = "tile", [SD_SPLIT] = "split", [SD_ORDER] = "order", [SD_ONLINE] = "online", [SD_MMA] = "mma",
};

static const char *dname(const Graph *g, int d)
{
	return g->tensors[g->defs[d].out[0]].name;
}

static bool int_result(const Graph *g, int d)
{
	return g->tensors[g->defs[d].out[0]].dtype == DT_I32;
}

static bool real_body(const Graph *g, int d)
{
	return ir_node(g, g->defs[d].body)->ty == TY_REAL;
}

static bool is_selection(Monoid m)
{
	return m == MO_ARGMAX || m == MO_ARGMIN || m == MO_TOPK;
}

static bool is_output(const Graph *g, int d)
{
	for (int i = 0; i < g->noutputs; i++)
		for (int k = 0; k < g->defs[d].nout; k++)
			if (g->outputs[i].tensor == g->defs[d].out[k])
				return true;
	return false;
}

/* ------------------------------------------------------------ default formats */

/* Is a read of tensor t an f64 value under s (whose entry for t's definition is settled)?
 * An f64 input; a definition's real result stored in f64 (by default or by a directive);
 * an inlined definition computed in f64. Integer results (i32 definitions, argmax, argmin,
 * topk indices) never are, whatever their bodies read. */
static bool f64_value(const Graph *g, const Schedule *s, int t)
{
	const Tensor *T = &g->tensors[t];
	if (T->kind == TK_INPUT || T->dtype == DT_I32)
		return T->dtype == DT_F64;
	const DefSched *x = &s->defs[T->def];
	return x->inlined ? x->op == DT_F64 : x->store == DT_F64;
}

/* Does the expression r read an f64 value (anywhere: operands, conditions, index lists,
 * `??` defaults) or contain an f64(...) cast? memo (one byte per node of g: 0 not yet
 * known, 1 no, 2 yes) is valid across definitions, because a node reads only tensors
 * defined above every definition that contains it, which are settled first. */
static bool reads_f64(const Graph *g, const Schedule *s, Ref r, uint8_t *memo)
{
	if (r == REF_NONE)
		return false;
	if (memo[r])
		return memo[r] == 2;
	const Node *n = ir_node(g, r);
	bool y = false;
	if (n->kind == NK_READ) {
		y = f64_value(g, s, (int)n->u.read.tensor) || reads_f64(g, s, n->u.read.pad, memo);
		const Ref *ix = ir_read_idx(g, n);
		for (uint32_t i = 0; !y && i < n->u.read.n; i++)
			y = reads_f64(g, s, ix[i], memo);
	} else if (n->kind == NK_OP) {
		y = n->op == OP_CAST_F64;
		for (int i = 0; !y && i < op_info((Op)n->op)->arity; i++)
			y = reads_f64(g, s, n->a[i], memo);
	}
	memo[r] = y ? 2 : 1;
	return y;
}

/* The default format of definition d under s (entries before d settled): f64 when its
 * body or a range bound reads an f64 value, else f32. */
static Dtype default_format(const Graph *g, const Schedule *s, int d, uint8_t *memo)
{
	const Def *D = &g->defs[d];
	bool y = reads_f64(g, s, D->body, memo);
	for (int r = 0; !y && r < D->nred; r++)
		y = reads_f64(g, s, D->red[r].lo, memo) || reads_f64(g, s, D->red[r].hi, memo);
	return y ? DT_F64 : DT_F32;
}

/* Fills the formats no directive chose (DT_NONE) with dflt and recomputes the formats that
 * follow from the others. */
static void settle(const Graph *g, int d, DefSched *s, Dtype dflt)
{
	const Def *D = &g->defs[d];
	if (s->store == DT_NONE)
		s->store = dflt;
	if (s->accum == DT_NONE)
		s->accum = dflt;
	if (!real_body(g, d)) {
		s->op = DT_F64;
		s->accum = DT_I32;
	} else if (D->monoid == MO_NONE) {
		bool wide = dflt == DT_F64 || (!s->inlined && s->store == DT_F64);
		s->op = s->accum = wide ? DT_F64 : DT_F32;
	} else {
		s->op = s->accum;
	}
	if (int_result(g, d) && D->monoid != MO_TOPK)
		s->store = DT_I32;
	else if (D->monoid == MO_TOPK && !real_body(g, d))
		s->store = DT_I32;
	if (s->inlined)
		s->store = s->op;
}

/* Settles every definition of s in file order: each one's default depends on the formats
 * of the definitions it reads, which come before it. */
static void settle_all(const Graph *g, Schedule *s)
{
	uint8_t *memo = calloc((size_t)g->nnodes + 1, 1);
	IR_ASSERT(memo);
	for (int d = 0; d < g->ndefs; d++)
		settle(g, d, &s->defs[d], default_format(g, s, d, memo));
	free(memo);
}

/* A schedule of g with nothing chosen: formats DT_NONE (to be settled), linear order. */
static void sched_blank(const Graph *g, Schedule *s)
{
	s->ndefs = g->ndefs;
	s->defs = calloc((size_t)g->ndefs + 1, sizeof *s->defs);
	IR_ASSERT(s->defs);
	for (int d = 0; d < g->ndefs; d++) {
		DefSched *x = &s->defs[d];
		x->op = x->store = x->accum = DT_NONE;
		x->order = ORDER_LINEAR;
	}
}

void sched_default(const Graph *g, Schedule *s)
{
	sched_blank(g, s);
	settle_all(g, s);
}

void sched_free(Schedule *s)
{
	if (!s)
		return;
	free(s->defs);
	s->defs = NULL;
	s->ndefs = 0;
}

void sched_formats(const Graph *g, const Schedule *s, Dtype *op, Dtype *accum, Dtype *store,
		   Order *order)
{
	for (int d = 0; d < g->ndefs; d++) {
		const DefSched *x = &s->defs[d];
		if (op)
			op[d] = x->op == DT_I32 ? DT_F64 : x->op;
		if (accum)
			accum[d] = x->accum == DT_I32 ? DT_F64 : x->accum;
		if (store)
			store[d] = x->store == DT_I32 ? DT_F64 : x->store;
		if (order)
			order[d] = x->order;
	}
}

void sched_splits(const Graph *g, const Schedule *s, int64_t *split, int *split_red)
{
	for (int d = 0; d < g->ndefs; d++) {
		split[d] = 1;
		split_red[d] = 0;
		for (int r = 0; r < g->defs[d].nred; r++)
			if (s->defs[d].split[r] > 1) {
				split[d] = s->defs[d].split[r];
				split_red[d] = r;
			}
	}
}

/* ------------------------------------------------------------ checking */

typedef struct {
	const Graph *g;
	Diag *d;
	const Directive *dir;
} Ck;

static int fail(Ck *c, SrcPos pos, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(Ck *c, SrcPos pos, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	const Graph *g = c->g;
	bool own = pos.file && g->file && strcmp(pos.file, g->file) == 0;
	diag_at(c->d, pos, own ? g->src : NULL, own ? g->srclen : 0, "%s", msg);
	return -1;
}

static int find_lhs(const Def *D, const char *name)
{
	for (int i = 0; i < D->nlhs; i++)
		if (strcmp(D->lhs[i].name, name) == 0)
			return i;
	return -1;
}

static int find_red(const Def *D, const char *name)
{
	for (int i = 0; i < D->nred; i++)
		if (strcmp(D->red[i].name, name) == 0)
			return i;
	return -1;
}

static int apply_tile(Ck *c, int d, DefSched *s)
{
	const Def *D = &c->g->defs[d];
	const Directive *x = c->dir;
	for (int i = 0; i < x->nargs; i++) {
		const DirArg *a = &x->args[i];
		int k = find_lhs(D, a->name);
		if (k < 0 && find_red(D, a->name) >= 0)
			return fail(c, a->pos, "tile of '%s': '%s' is a reduction index; tile applies "
				    "to left-hand indices (split cuts a reduction)", dname(c->g, d), a->name);
		if (k < 0)
			return fail(c, a->pos, "tile of '%s': '%s' is not a left-hand index of '%s'",
				    dname(c->g, d), a->name, dname(c->g, d));
		if (D->monoid == MO_TOPK && k == D->nlhs - 1)
			return fail(c, a->pos, "tile of '%s': '%s' is the topk's selection index "
				    "(its K results come from one selection)", dname(c->g, d), a->name);
		if (a->value < 1)
			return fail(c, a->pos, "a tile size must be positive");
		if (s->tile[k])
			return fail(c, a->pos, "tile of '%s': index '%s' is tiled twice",
				    dname(c->g, d), a->name);
		s->tile[k] = a->value;
	}
	return 0;
}

static int apply_split(Ck *c, int d, DefSched *s)
{
	const Def *D = &c->g->defs[d];
	const Directive *x = c->dir;
	if (x->nargs != 1)
		return fail(c, x->nargs > 1 ? x->args[1].pos : x->pos,
			    "split of '%s': one reduction index at a time can be split", dname(c->g, d));
	const DirArg *a = &x->args[0];
	int r = find_red(D, a->name);
	if (r < 0 && find_lhs(D, a->name) >= 0)
		return fail(c, a->pos, "split of '%s': '%s' is a left-hand index; split applies to "
			    "reduction indices (tile cuts left-hand ones)", dname(c->g, d), a->name);
	if (r < 0)
		return fail(c, a->pos, "split of '%s': '%s' is not a reduction index of '%s'",
			    dname(c->g, d), a->name, dname(c->g, d));
	if (a->value < 1)
		return fail(c, a->pos, "a split factor must be positive");
	s->split[r] = a->value;
	return 0;
}

/* Checks that directive x applies to definition d and records it in s. */
static int apply(Ck *c, int d, DefSched *s)
{
	const Graph *g = c->g;
	const Def *D = &g->defs[d];
	const Directive *x = c->dir;
	const char *n = dname(g, d);
	bool red = D->monoid != MO_NONE;
	switch (x->kind) {
	case SD_STORE: {
		int t = ir_find_tensor(g, x->target);
		if (t >= 0 && g->tensors[t].dtype == DT_I32) {
			if (x->fmt == DT_I32)
				return 0;   /* what it is anyway */
			return fail(c, x->pos, "store of '%s' does not apply: its values are integers "
				    "(i32)", x->target);
		}
		if (x->fmt != DT_F64 && x->fmt != DT_F32 && x->fmt != DT_F16 && x->fmt != DT_BF16)
			return fail(c, x->pos, "store of '%s': the format must be f64, f32, f16 or bf16",
				    n);
		s->store = x->fmt;
		return 0;
	}
	case SD_ACCUM:
		if (!red)
			return fail(c, x->pos, "accum of '%s' does not apply: '%s' is not a reduction",
				    n, n);
		if (!real_body(g, d) && x->fmt == DT_I32)
			return 0;   /* integer reductions are exact */
		if (!real_body(g, d))
			return fail(c, x->pos, "accum of '%s' does not apply: its terms are integers "
				    "(exact)", n);
		if (x->fmt != DT_F64 && x->fmt != DT_F32 && x->fmt != DT_F16 && x->fmt != DT_BF16)
			return fail(c, x->pos, "accum of '%s': the format must be f64, f32, f16 or bf16",
				    n);
		s->accum = x->fmt;
		return 0;
	case SD_INLINE:
		if (D->monoid == MO_TOPK)
			return fail(c, x->pos, "inline of '%s' does not apply: a topk is always stored", n);
		if (is_output(g, d))
			return fail(c, x->pos, "inline of '%s' does not apply: it is an output", n);
		if (red)
			return fail(c, x->pos, "inline of '%s' does not apply: it is a reduction (a "
				    "reduction stays stored)", n);
		s->inlined = true;
		return 0;
	case SD_TILE:
		return apply_tile(c, d, s);
	case SD_SPLIT:
	case SD_ORDER:
		if (!red)
			return fail(c, x->pos, "%s of '%s' does not apply: '%s' is not a reduction",
				    kind_names[x->kind], n, n);
		if (is_selection(D->monoid))
			return fail(c, x->pos, "%s of '%s' does not apply: %s selects, it has no order "
				    "or partial results to choose", kind_names[x->kind], n,
				    monoid_name(D->monoid));
		if (x->kind == SD_ORDER) {
			s->order = x->order;
			return 0;
		}
		return apply_split(c, d, s);
	case SD_MMA:
		if (!red || D->monoid != MO_SUM || !real_body(g, d))
			return fail(c, x->pos, "mma of '%s' does not apply: the matrix unit computes a "
				    "real sum of products (sum(k) a * b), and '%s' is %s", n, n,
				    !red ? "not a reduction" : !real_body(g, d) ? "an integer reduction"
				    : monoid_name(D->monoid));
		s->mma = true;
		s->mma_m = 16, s->mma_n = 8, s->mma_k = 16;
		for (int a = 0; a < x->nargs; a++) {
			int v = x->args[a].value > 4096 ? 4097 : (int)x->args[a].value;
			switch (x->args[a].name[0]) {
			case 'm': s->mma_m = v; break;
			case 'n': s->mma_n = v; break;
			default: s->mma_k = v; break;
			}
		}
		return 0;
	}
	return fail(c, x->pos, "unknown directive");
}

/* `online d1, ...`: every member found, in no other set, and the set one of online.c's
 * rules; the members are marked with the set's first definition. */
static int apply_online(Ck *c, Schedule *s)
{
	const Graph *g = c->g;
	const Directive *x = c->dir;
	int defs[IR_MAXVARS], n = 0, lead = g->ndefs;
	for (int a = 0; a < x->nargs; a++) {
		int d = ir_find_def(g, x->args[a].name);
		if (d < 0)
			return fail(c, x->args[a].pos, "online: no definition named '%s'", x->args[a].name);
		if (s->defs[d].online)
			return fail(c, x->args[a].pos, "online: '%s' is already in an online set",
				    x->args[a].name);
		for (int b = 0; b < n; b++)
			if (defs[b] == d)
				return fail(c, x->args[a].pos, "online: '%s' appears twice", x->args[a].name);
		defs[n++] = d;
		lead = d < lead ? d : lead;
	}
	OnPlan p;
	char why[400];
	if (n == 0)
		return fail(c, x->pos, "online: no definitions");
	if (on_match(g, defs, n, &p, why, sizeof why))
		return fail(c, x->pos, "online %s%s: %s", x->target, n > 1 ? ", ..." : "", why);
	for (int k = 0; k < n; k++) {
		s->defs[defs[k]].online = lead + 1;
		s->defs[defs[k]].orule = (int8_t)p.rule;
	}
	return 0;
}

/* The factors of a read or cast: the format of its value (DT_NONE: not a 16-bit one). */
static Dtype factor_format(const Graph *g, const Schedule *s, Ref r)
{
	const Node *n = ir_node(g, r);
	if (n->kind == NK_OP && (n->op == OP_CAST_BF16 || n->op == OP_CAST_F16))
		return n->op == OP_CAST_BF16 ? DT_BF16 : DT_F16;
	if (n->kind != NK_READ || n->ty != TY_REAL)
		return DT_NONE;
	const Tensor *T = &g->tensors[n->u.read.tensor];
	Dtype f = T->kind == TK_INPUT ? T->dtype
		: s->defs[T->def].inlined ? s->defs[T->def].op : s->defs[T->def].store;
	if (n->u.read.pad != REF_NONE) {   /* a padded read: its default 0 (a value of f) */
		const Node *p = ir_node(g, n->u.read.pad);
		if (p->kind != NK_NUM || !g->lits[p->u.lit].exact || g->lits[p->u.lit].approx != 0)
			return DT_NONE;
	}
	return f == DT_BF16 || f == DT_F16 ? f : DT_NONE;
}

bool sched_mma_factors(const Graph *g, const Schedule *s, int d, Ref *a, Ref *b, Dtype *ab,
		       char *why, size_t nwhy)
{
	const Def *D = &g->defs[d];
	const Node *n = ir_node(g, D->body);
	if (n->kind != NK_OP || n->op != OP_MUL) {
		snprintf(why, nwhy, "its terms are not a product a * b");
		return false;
	}
	Dtype fa = factor_format(g, s, n->a[0]), fb = factor_format(g, s, n->a[1]);
	if (fa == DT_NONE || fb == DT_NONE) {
		snprintf(why, nwhy, "the %s factor of its terms is not a bf16 or f16 value (a read "
			 "of a tensor stored so, or a bf16(...) or f16(...) cast): the unit takes its "
			 "operands in their storage format", fa == DT_NONE ? "first" : "second");
		return false;
	}
	if (fa != fb) {
		snprintf(why, nwhy, "its factors are %s and %s: the unit takes two operands of one "
			 "format", dt_name(fa), dt_name(fb));
		return false;
	}
	if (a)
		*a = n->a[0];
	if (b)
		*b = n->a[1];
	if (ab)
		*ab = fa;
	return true;
}

/* mma definitions (after settle_all: the factors' formats are known): a product of two
 * bf16 or f16 factors, accumulated in f32, in linear order, unsplit, in no online set, with
 * a tile the unit has. */
static int mma_consistent(Ck *c, Schedule *s, const int *seen)
{
	const Graph *g = c->g;
	for (int d = 0; d < g->ndefs; d++) {
		DefSched *x = &s->defs[d];
		if (!x->mma)
			continue;
		c->dir = &g->dirs[seen[(d * SD__COUNT + SD_MMA) * 2] - 1];
		const char *n = dname(g, d);
		char why[300];
		if (!sched_mma_factors(g, s, d, NULL, NULL, &x->mma_ab, why, sizeof why))
			return fail(c, c->dir->pos, "mma of '%s' does not apply: %s", n, why);
		if (x->accum != DT_F32)
			return fail(c, c->dir->pos, "mma of '%s': the unit accumulates in f32 here, and "
				    "'%s' is accumulated in %s", n, n, dt_name(x->accum));
		if (x->order != ORDER_LINEAR)
			return fail(c, c->dir->pos, "mma of '%s': the unit has its own order (blocks of "
				    "k products in a row); order %s does not apply", n,
				    order_name(x->order));
		for (int r = 0; r < g->defs[d].nred; r++)
			if (x->split[r] > 1)
				return fail(c, c->dir->pos, "mma of '%s' with a split: not supported yet "
					    "(the pieces' sums would be combined outside the unit)", n);
		if (x->online)
			return fail(c, c->dir->pos, "mma of '%s', a member of an online set: not "
				    "supported yet", n);
		if (x->mma_k != 16)
			return fail(c, c->dir->pos, "mma of '%s': k=%d; the unit's %s instructions take "
				    "k=16", n, x->mma_k, dt_name(x->mma_ab));
		bool sync = x->mma_m == 16 && x->mma_n == 8;
		bool wg = x->mma_m == 64 && x->mma_n >= 8 && x->mma_n <= 256 && x->mma_n % 8 == 0;
		if (!sync && !wg)
			return fail(c, c->dir->pos, "mma of '%s': no instruction has the tile m=%d, "
				    "n=%d (m=16, n=8: mma.sync; m=64, n=8..256 in steps of 8: wgmma)", n,
				    x->mma_m, x->mma_n);
	}
	return 0;
}

/* The members of one online set are computed in one pass: linear order, and one split
 * factor for all (or none). */
static int online_consistent(Ck *c, const Schedule *s, const int *seen)
{
	const Graph *g = c->g;
	for (int d = 0; d < g->ndefs; d++) {
		const DefSched *x = &s->defs[d];
		if (!x->online)
			continue;
		int j = seen[(d * SD__COUNT + SD_ORDER) * 2];
		if (x->order != ORDER_LINEAR && j) {
			c->dir = &g->dirs[j - 1];
			return fail(c, c->dir->pos, "order of '%s' does not apply: '%s' is in an online "
				    "set (one pass, in index order)", dname(g, d), dname(g, d));
		}
		const DefSched *y = &s->defs[x->online - 1];
		if (x->split[0] != y->split[0] && !(x->split[0] <= 1 && y->split[0] <= 1)) {
			j = seen[(d * SD__COUNT + SD_SPLIT) * 2];
			if (!j)
				j = seen[((x->online - 1) * SD__COUNT + SD_SPLIT) * 2];
			c->dir = &g->dirs[j - 1];
			return fail(c, c->dir->pos, "split: the members of an online set are split "
				    "alike ('%s' and '%s' differ)", dname(g, x->online - 1), dname(g, d));
		}
	}
	return 0;
}

int sched_build(const Graph *g, Schedule *s, Diag *d)
{
	sched_blank(g, s);
	/* the first directive of each (definition, kind, result): store may name either
	 * result of a topk */
	int *seen = calloc((size_t)g->ndefs * SD__COUNT * 2 + 1, sizeof *seen);
	IR_ASSERT(seen);
	Ck c = {g, d, NULL};
	for (int i = 0; i < g->ndirs; i++) {
		const Directive *x = &g->dirs[i];
		c.dir = x;
		if (x->kind == SD_ONLINE) {
			if (apply_online(&c, s) < 0)
				goto fail;
			continue;
		}
		int def = x->def >= 0 ? x->def : ir_find_def(g, x->target);
		if (def < 0) {
			fail(&c, x->pos, "%s: no definition named '%s'", kind_names[x->kind], x->target);
			goto fail;
		}
		int t = ir_find_tensor(g, x->target);
		int res = x->kind == SD_STORE && t >= 0 ? g->tensors[t].result : 0;
		int *prev = &seen[(def * SD__COUNT + x->kind) * 2 + res];
		if (*prev) {
			fail(&c, x->pos, "a second '%s' directive for '%s' (the first is at line %d)",
			     kind_names[x->kind], dname(g, def), g->dirs[*prev - 1].pos.line);
			goto fail;
		}
		*prev = i + 1;
		if (apply(&c, def, &s->defs[def]) < 0)
			goto fail;
	}
	for (int def = 0; def < g->ndefs; def++) {
		if (!s->defs[def].inlined)
			continue;
		for (int k = 0; k < SD__COUNT; k++) {
			int j = seen[(def * SD__COUNT + k) * 2];
			if (k != SD_INLINE && j) {
				c.dir = &g->dirs[j - 1];
				fail(&c, c.dir->pos, "%s of '%s' does not apply: '%s' is inlined (no "
				     "storage or loops of its own)", kind_names[k], dname(g, def),
				     dname(g, def));
				goto fail;
			}
		}
	}
	if (online_consistent(&c, s, seen) < 0)
		goto fail;
	settle_all(g, s);
	if (mma_consistent(&c, s, seen) < 0)
		goto fail;
	free(seen);
	return 0;
fail:
	free(seen);
	sched_free(s);
	return -1;
}

/* ------------------------------------------------------------ sampling */

typedef struct {
	uint64_t s;
} Rng;

static uint64_t rnd(Rng *r)
{
	uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* true with probability num/den */
static bool chance(Rng *r, unsigned num, unsigned den)
{
	return rnd(r) % den < num;
}

static int64_t pick_size(Rng *r, int64_t extent)
{
	static const int64_t sizes[] = {1, 2, 3, 4, 5, 7, 8, 16, 32, 64};
	int64_t v = sizes[rnd(r) % ARRAY_LEN(sizes)];
	return v > extent && extent > 0 ? extent : v;
}

/* The choices for definition d, whose default format is dflt. The formats drawn are the
 * ones other than f32, version 1's default; where the default is f64 a drawn f64 becomes
 * f32, so that a drawn format is never the default (a directive that changes nothing)
 * and f64 graphs see f32 stores and accumulations. The draws themselves do not depend on
 * dflt: a graph whose defaults are f32 samples what it did before version 2. */
static void sample_def(const Graph *g, int d, Rng *r, DefSched *s, Dtype dflt)
{
	const Def *D = &g->defs[d];
	bool red = D->monoid != MO_NONE;
	if (!red && D->monoid != MO_TOPK && !is_output(g, d) && chance(r, 3, 10)) {
		s->inlined = true;
		return;
	}
	if (!int_result(g, d) && chance(r, 2, 5)) {
		static const Dtype st[] = {DT_F16, DT_BF16, DT_F64};
		s->store = st[rnd(r) % ARRAY_LEN(st)];
		if (s->store == dflt)
			s->store = DT_F32;
	}
	if (red && real_body(g, d) && chance(r, 1, 3)) {
		static const Dtype ac[] = {DT_F64, DT_F64, DT_F64, DT_F16, DT_BF16};
		s->accum = ac[rnd(r) % ARRAY_LEN(ac)];
		if (s->accum == dflt)
			s->accum = DT_F32;
	}
	if (chance(r, 1, 2)) {
		int n = D->monoid == MO_TOPK ? D->nlhs - 1 : D->nlhs;
		for (int k = 0; k < n; k++)
			if (chance(r, 2, 3))
				s->tile[k] = pick_size(r, D->lhs[k].ext.value);
	}
	if (red && !is_selection(D->monoid)) {
		if (chance(r, 2, 5)) {
			static const int64_t f[] = {2, 3, 4, 8};
			s->split[rnd(r) % (uint64_t)D->nred] = f[rnd(r) % ARRAY_LEN(f)];
		}
		if (chance(r, 2, 5))
			s->order = ORDER_PAIRWISE;
	}
}

void sched_sample(const Graph *g, uint64_t seed, Schedule *s)
{
	Rng r = {seed * 0x2545f4914f6cdd1dull + 0x853c49e6748fea9bull};
	sched_blank(g, s);
	uint8_t *memo = calloc((size_t)g->nnodes + 1, 1);
	IR_ASSERT(memo);
	for (int d = 0; d < g->ndefs; d++) {
		Dtype dflt = default_format(g, s, d, memo);
		sample_def(g, d, &r, &s->defs[d], dflt);
		settle(g, d, &s->defs[d], dflt);
	}
	free(memo);
}

/* ------------------------------------------------------------ text */

typedef struct {
	char *buf;
	size_t len, cap;
} Str;

static void put(Str *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(Str *s, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (s->len + (size_t)n + 1 > s->cap) {
		s->cap = (s->len + (size_t)n + 1) * 2;
		s->buf = realloc(s->buf, s->cap);
		IR_ASSERT(s->buf);
	}
	va_start(ap, fmt);
	vsnprintf(s->buf + s->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	s->len += (size_t)n;
}

/* "i=16, j=64" for the entries of v that are at least min */
static void put_args(Str *o, const int64_t *v, int nv, int64_t min,
		     const char *(*name)(const Def *, int), const Def *D)
{
	bool any = false;
	for (int i = 0; i < nv; i++) {
		if (v[i] < min)
			continue;
		put(o, "%s%s=%lld", any ? ", " : "", name(D, i), (long long)v[i]);
		any = true;
	}
}

static const char *lhs_name(const Def *D, int i) { return D->lhs[i].name; }
static const char *red_name(const Def *D, int i) { return D->red[i].name; }

static bool has_args(const int64_t *v, int n, int64_t min)
{
	for (int i = 0; i < n; i++)
		if (v[i] >= min)
			return true;
	return false;
}

char *sched_text(const Graph *g, const Schedule *s)
{
	Str o = {0};
	put(&o, "%s", "");
	uint8_t *memo = calloc((size_t)g->nnodes + 1, 1);
	IR_ASSERT(memo);
	for (int d = 0; d < g->ndefs; d++) {
		const DefSched *x = &s->defs[d];
		const Def *D = &g->defs[d];
		const char *n = dname(g, d);
		if (x->inlined) {
			put(&o, "inline %s\n", n);
			continue;
		}
		/* what d would be with no format directive, the definitions above it as in s
		 * (so that the text read back settles to s again) */
		DefSched z = *x;
		z.store = z.accum = DT_NONE;
		settle(g, d, &z, default_format(g, s, d, memo));
		if (x->store != z.store)
			put(&o, "store %s : %s\n", n, dt_name(x->store));
		if (D->monoid != MO_NONE && x->accum != z.accum)
			put(&o, "accum %s : %s\n", n, dt_name(x->accum));
		if (has_args(x->tile, D->nlhs, 1)) {
			put(&o, "tile %s : ", n);
			put_args(&o, x->tile, D->nlhs, 1, lhs_name, D);
			put(&o, "\n");
		}
		if (has_args(x->split, D->nred, 2)) {
			put(&o, "split %s : ", n);
			put_args(&o, x->split, D->nred, 2, red_name, D);
			put(&o, "\n");
		}
		if (x->order != ORDER_LINEAR)
			put(&o, "order %s : %s\n", n, order_name(x->order));
		if (x->mma) {
			put(&o, "mma %s", n);
			if (x->mma_m != 16 || x->mma_n != 8 || x->mma_k != 16)
				put(&o, " : m=%d, n=%d, k=%d", x->mma_m, x->mma_n, x->mma_k);
			put(&o, "\n");
		}
		if (x->online == d + 1) {
			put(&o, "online %s", n);
			for (int k = d + 1; k < g->ndefs; k++)
				if (s->defs[k].online == d + 1)
					put(&o, ", %s", dname(g, k));
			put(&o, "\n");
		}
	}
	free(memo);
	return o.buf;
}
