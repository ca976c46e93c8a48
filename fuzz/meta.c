/* fuzz/meta.c: metamorphic variants (EMI-style): graphs equivalent to a generated one, each
 * judged by its own budgets, and bit-identical to it where the emulation says they are.
 *
 * A variant is made by editing a fresh parse of the graph's canonical text (edit.c) at one
 * site, chosen by a seed among the sites of one kind; its text is parsed again, so the
 * checker judges it, and a site whose edit does not check is passed over for the next.
 * Every kind keeps the exact value of every output identical (so the correctly rounded
 * oracle of a variant must equal its original's, element for element), each for the
 * reason given at its maker below. A variant claims one of two things:
 *   bit-identical  its emulation (interp/emul.c: every operation rounded in its definition's
 *                  formats, reductions in their order) equals the original's bit for bit,
 *                  so a backend whose arithmetic is a function of its operands' values must
 *                  deliver the same bits for both (NaN compared as a category);
 *   within budget  only the exact value is the same: the rounding differs, and the
 *                  variant's own budgets judge it.
 * A kind's proof of bit-identity assumes every definition of the original keeps its
 * formats (op, accumulation, storage: compiler/sched.c) and that new definitions compute
 * and store in formats that hold the values they replace; fz_variant_make checks that on
 * the two schedules and claims "within budget" where it does not hold (an f64 cast in an
 * f32 definition makes it an f64 definition: graph-format.md section 7).
 * fz_variant_verify holds a claim to the emulator on given inputs.
 * Determinism: a variant is a function of (the graph's canonical text, kind, seed).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "gen.h"
#include "../oracles/oracles.h"

enum { MAXTRY = 8, MAXSITES = 4096, MAXROUNDS = 4 };

static const char *const kind_names[FZ_VK__COUNT] = {
	[FZ_VK_SWAP] = "swap", [FZ_VK_VIEW] = "view", [FZ_VK_COPY] = "copy",
	[FZ_VK_SPLIT] = "split", [FZ_VK_INLINE] = "inline", [FZ_VK_REVERSE] = "reverse",
	[FZ_VK_CAST] = "cast",
};
_Static_assert(ARRAY_LEN(kind_names) == FZ_VK__COUNT, "one name per variant kind");

const char *fz_variant_kind_name(FzVariantKind k)
{
	return k >= 0 && k < FZ_VK__COUNT ? kind_names[k] : "?";
}

int fz_variant_kind_parse(const char *s)
{
	for (int k = 0; k < FZ_VK__COUNT; k++)
		if (strcmp(kind_names[k], s) == 0)
			return k;
	return -1;
}

static uint64_t mix(uint64_t z)
{
	z += 0x9e3779b97f4a7c15ull;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static Graph *parse(const char *text, const char *file)
{
	Diag d = {0};
	Graph *g = ir_parse(text, strlen(text), file ? file : "variant.tg", NULL, 0, &d);
	diag_clear(&d);
	return g;
}

/* Format f holds every value of format x (f32 holds f16 and bf16; i32 only i32). */
static bool holds(Dtype f, Dtype x)
{
	if (f == DT_I32 || x == DT_I32)
		return f == x;
	const DtypeInfo *F = dt_info(f), *X = dt_info(x);
	return F->prec >= X->prec && F->emin <= X->emin && F->emax >= X->emax;
}

/* The format of tensor t's values as a reader loads them under s. */
static Dtype value_format(const Graph *g, const Schedule *s, int t)
{
	const Tensor *T = &g->tensors[t];
	if (T->kind == TK_INPUT || T->dtype == DT_I32)
		return (Dtype)T->dtype;
	const DefSched *x = &s->defs[T->def];
	return x->inlined ? x->op : x->store;
}

static bool name_used(const Graph *g, const char *s)
{
	if (ir_find_tensor(g, s) >= 0 || ir_find_size(g, s) >= 0)
		return true;
	for (int d = 0; d < g->ndefs; d++) {
		for (int k = 0; k < g->defs[d].nlhs; k++)
			if (strcmp(g->defs[d].lhs[k].name, s) == 0)
				return true;
		for (int k = 0; k < g->defs[d].nred; k++)
			if (strcmp(g->defs[d].red[k].name, s) == 0)
				return true;
	}
	return false;
}

/* A name used nowhere in g (tensors, sizes, index names), arena-owned. */
static char *fresh(Graph *g, const char *prefix)
{
	char buf[32];
	for (int k = 0;; k++) {
		snprintf(buf, sizeof buf, "%s%d", prefix, k);
		if (!name_used(g, buf))
			return ir_strdup(g, buf, strlen(buf));
	}
}

/* ------------------------------------------------------------------ sites */

typedef struct {
	int d;       /* the definition edited */
	Ref r;       /* its node (or 0) */
	int aux;     /* kind-specific: a dimension, a view, a reduction index */
} Site;

typedef struct {
	Site s[MAXSITES];
	int n;
} Sites;

static void add_site(Sites *S, int d, Ref r, int aux)
{
	if (S->n < MAXSITES)
		S->s[S->n++] = (Site){d, r, aux};
}

/* The distinct nodes of definition d (range bounds, then the body), root first. */
static FzNodes nodes_of(const Graph *g, int d)
{
	FzNodes ns = {0};
	fz_walk_def(g, d, fz_collect, &ns);
	return ns;
}

static bool is_indirect(const Graph *g, Ref ix)
{
	return ir_node(g, ix)->kind == NK_READ;
}

/* The operation with a's and b's roles exchanged: the same op where it is commutative
 * (or fma's product), the mirrored comparison, else -1. */
static int swapped_op(Op op)
{
	switch (op) {
	case OP_ADD: case OP_MUL: case OP_MIN: case OP_MAX: case OP_EQ: case OP_NE:
	case OP_AND: case OP_OR: case OP_FMA:
		return op;
	case OP_LT: return OP_GT;
	case OP_GT: return OP_LT;
	case OP_LE: return OP_GE;
	case OP_GE: return OP_LE;
	default: return -1;
	}
}

static bool monoid_reversible(Monoid m)
{
	return m == MO_SUM || m == MO_PROD || m == MO_MAX || m == MO_MIN || m == MO_LOGSUMEXP;
}

/* Whether every variable of e is a left-hand index of d or a reduction index whose range
 * ends at a constant; vars[v] set for each one e uses. */
static bool hoistable_vars(const Graph *g, int d, Ref e, bool *vars)
{
	FzNodes ns = {0};
	fz_walk(g, e, fz_collect, &ns);
	const Def *D = &g->defs[d];
	bool ok = true;
	for (int k = 0; k < ns.n && ok; k++) {
		const Node *n = ir_node(g, ns.r[k]);
		if (n->kind != NK_VAR)
			continue;
		uint32_t v = n->u.var;
		vars[v] = true;
		if ((int)v >= D->nlhs) {
			const Node *hi = ir_node(g, D->red[v - (uint32_t)D->nlhs].hi);
			ok = hi->kind == NK_INT || hi->kind == NK_SIZE;
		}
	}
	free(ns.r);
	return ok;
}

static void find_sites(const Graph *g, const Schedule *s, FzVariantKind kind, Sites *S)
{
	S->n = 0;
	for (int d = 0; d < g->ndefs; d++) {
		const Def *D = &g->defs[d];
		if (kind == FZ_VK_INLINE) {
			bool out = false;
			for (int k = 0; k < g->noutputs; k++)
				out |= g->outputs[k].tensor == D->out[0];
			if (D->monoid == MO_NONE && !out && !s->defs[d].inlined)
				add_site(S, d, 0, 0);
			continue;
		}
		if (kind == FZ_VK_REVERSE) {
			for (int r = 0; monoid_reversible(D->monoid) && r < D->nred; r++)
				add_site(S, d, 0, r);
			continue;
		}
		FzNodes ns = nodes_of(g, d);
		for (int k = 0; k < ns.n; k++) {
			Ref r = ns.r[k];
			const Node *n = ir_node(g, r);
			switch (kind) {
			case FZ_VK_SWAP:
				if (n->kind == NK_OP && swapped_op((Op)n->op) >= 0 && n->a[0] != n->a[1])
					add_site(S, d, r, 0);
				break;
			case FZ_VK_VIEW:
				for (uint32_t i = 0; n->kind == NK_READ && i < n->u.read.n; i++) {
					if (is_indirect(g, ir_read_idx(g, n)[i]))
						continue;
					add_site(S, d, r, 2 * (int)i);
					if (!n->u.read.pad)
						add_site(S, d, r, 2 * (int)i + 1);
				}
				break;
			case FZ_VK_COPY: {
				if (n->kind != NK_READ || n->ty != TY_REAL)
					break;
				const Tensor *T = &g->tensors[n->u.read.tensor];
				if (T->kind == TK_DEF && s->defs[T->def].inlined)
					break;
				/* views: 0 the identity, 1 + k reversing dimension k, then transposes */
				int R = T->rank;
				add_site(S, d, r, 0);
				for (int k = 0; k < R; k++)
					if (!is_indirect(g, ir_read_idx(g, n)[k]))
						add_site(S, d, r, 1 + k);
				for (int a = 0, v = 1 + R; a < R; a++)
					for (int b = a + 1; b < R; b++, v++)
						add_site(S, d, r, v);
				break;
			}
			case FZ_VK_SPLIT: {
				if (n->kind != NK_OP || n->ty != TY_REAL)
					break;
				bool vars[IR_MAXVARS] = {false};
				int nv = 0;
				if (!hoistable_vars(g, d, r, vars))
					break;
				for (int v = 0; v < IR_MAXVARS; v++)
					nv += vars[v];
				if (nv <= IR_MAXRANK)
					add_site(S, d, r, 0);
				break;
			}
			case FZ_VK_CAST:
				/* an input holds exactly the values of its format; a definition's exact
				 * value is any real, whatever format the schedule stores it in */
				if (n->kind == NK_READ && n->ty == TY_REAL && !n->u.read.pad &&
				    g->tensors[n->u.read.tensor].kind == TK_INPUT)
					add_site(S, d, r, 0);
				break;
			default:
				break;
			}
		}
		free(ns.r);
	}
}

/* ------------------------------------------------------------------ one edit */

/* What an edit did: the mask to print it with, the definitions it added (printed before
 * definition `before`), and what its proof of bit-identity requires of the formats. */
typedef struct {
	Graph *g;
	FzMask m;
	char extra[512];       /* directive lines added */
	int before;            /* new tensors are printed before this definition's results */
	int newt[2], nnew;     /* new tensors, in print order */
	Dtype need_op[2];      /* a new definition's op format must be this (DT_NONE: any) */
	Dtype need_hold[2];    /* ... and its op and store formats must hold this */
	int focus;             /* inline: the definition inlined (its formats may change) */
	bool bit;              /* the kind's proof of bit-identity applies */
	char what[400];
} Edit;

static void expr_text(const Graph *g, int d, Ref r, char *buf, size_t n)
{
	char *s = ir_print_expr(g, d, r);
	snprintf(buf, n, "%s", s);
	free(s);
}

static const char *dname(const Graph *g, int d)
{
	return g->tensors[g->defs[d].out[0]].name;
}

/* Replaces node `from` by `to` throughout definition d. */
static void replace(Graph *g, int d, Ref from, Ref to)
{
	FzSub s = {g, from, to, {0}, -1, false};
	fz_rebuild_def(&s, d);
}

static void describe(Edit *e, int d, Ref from, Ref to, const char *how)
{
	char a[160], b[160];
	expr_text(e->g, d, from, a, sizeof a);
	expr_text(e->g, d, to, b, sizeof b);
	snprintf(e->what, sizeof e->what, "%s in %s: %s -> %s", how, dname(e->g, d), a, b);
}

/* Adds a plain definition NAME[lhs] = body of type ty, its tensor shaped by dims. */
static int add_def(Graph *g, const char *name, int rank, const Extent *dims, char *const *lhs,
		   Ref body, Ty ty)
{
	Tensor T = {0};
	T.name = (char *)name;
	T.kind = TK_DEF;
	T.dtype = ty == TY_INT ? DT_I32 : DT_F64;
	T.rank = rank;
	for (int k = 0; k < rank; k++)
		T.dims[k] = dims[k];
	T.def = g->ndefs;
	T.result = 0;
	Def D = {0};
	D.out[0] = ir_add_tensor(g, &T);
	D.nout = 1;
	D.nlhs = rank;
	for (int k = 0; k < rank; k++) {
		D.lhs[k].name = lhs[k];
		D.lhs[k].ext = dims[k];
	}
	D.monoid = MO_NONE;
	D.body = body;
	D.ty = ty;
	ir_add_def(g, &D);
	return D.out[0];
}

static Ref extent_node(Graph *g, const Extent *e)
{
	return e->size >= 0 ? ir_size(g, (uint32_t)e->size) : ir_int(g, e->value);
}

/* E - 1 - v (v an integer expression) */
static Ref reversed(Graph *g, const Extent *E, Ref v)
{
	Ref top = E->size >= 0 ? ir_op(g, OP_SUB, TY_INT, ir_size(g, (uint32_t)E->size), ir_int(g, 1), 0)
			       : ir_int(g, E->value - 1);
	return ir_op(g, OP_SUB, TY_INT, top, v, 0);
}

/* swap: a op b -> b op a for + * min max == != && || (and fma's product), a < b -> b > a,
 * a <= b -> b >= a. Exact: these are commutative as real (and integer, and boolean)
 * functions, IEEE 754-2019 maximum and minimum included (NaN if either is NaN, -0 below
 * +0 either way); a comparison with a NaN is false either way round. Bit-identical: each
 * operation rounds the same real value in the same format (only a NaN's payload could
 * depend on the order, and outputs compare NaN as a category). */
static bool edit_swap(Edit *e, const Site *st, uint64_t seed)
{
	Graph *g = e->g;
	Node n = *ir_node(g, st->r);
	Ref to = ir_op(g, (Op)swapped_op((Op)n.op), (Ty)n.ty, n.a[1], n.a[0], n.a[2]);
	describe(e, st->d, st->r, to, "operands swapped");
	replace(g, st->d, st->r, to);
	e->bit = true;
	return true;
}

/* view: one index expression e of a read written (C*e + k) / C (0 <= k < C: floor
 * division gives e back for every integer e, negative ones included, so a padded read is
 * padded at the same points), or, where the read needs no padding (0 <= e < E at every
 * point, as the checker proved), (e - E) % E (the non-negative remainder of a negative
 * dividend). Bit-identical: the same elements are read. */
static bool edit_view(Edit *e, const Site *st, uint64_t seed)
{
	Graph *g = e->g;
	Node n = *ir_node(g, st->r);
	int dim = st->aux / 2;
	Ref idx[IR_MAXRANK];
	memcpy(idx, ir_read_idx(g, &n), n.u.read.n * sizeof *idx);
	Ref ex = idx[dim];
	if (st->aux % 2 == 0) {
		int64_t c = 2 + (int64_t)((seed >> 8) % 3), k = (int64_t)((seed >> 16) % (uint64_t)c);
		Ref t = ir_op(g, OP_MUL, TY_INT, ir_int(g, c), ex, 0);
		if (k)
			t = ir_op(g, OP_ADD, TY_INT, t, ir_int(g, k), 0);
		idx[dim] = ir_op(g, OP_IDIV, TY_INT, t, ir_int(g, c), 0);
	} else {
		const Extent *E = &g->tensors[n.u.read.tensor].dims[dim];
		Ref en = extent_node(g, E);
		idx[dim] = ir_op(g, OP_MOD, TY_INT, ir_op(g, OP_SUB, TY_INT, ex, en, 0), en, 0);
	}
	Ref to = ir_read(g, n.u.read.tensor, idx, n.u.read.n, n.u.read.pad, (Ty)n.ty);
	describe(e, st->d, st->r, to, "index rewritten");
	replace(g, st->d, st->r, to);
	e->bit = true;
	return true;
}

/* copy: a read x[e] ?? D written t[f] ?? D through a new definition t[v] = x[w(v)], w a
 * view (the identity, one dimension reversed: w_k = E_k - 1 - v_k, or two dimensions
 * transposed), f its inverse applied to e, so that w(f) = e: t[f] = x[e], and f is in t's
 * bounds exactly where e is in x's (the padding applies at the same points). Bit-identical
 * when t computes and stores in formats that hold x's values (its default does: f64 for an
 * f64 x, else f32, which holds f16, bf16 and f32). */
static bool edit_copy(Edit *e, const Site *st, const Schedule *s0, uint64_t seed)
{
	Graph *g = e->g;
	Node n = *ir_node(g, st->r);
	int x = (int)n.u.read.tensor;
	const Tensor *X = &g->tensors[x];
	int R = X->rank, ra = -1, rb = -1, rev = -1;
	if (st->aux >= 1 && st->aux <= R) {
		rev = st->aux - 1;
	} else if (st->aux > R) {
		for (int a = 0, v = 1 + R; a < R && ra < 0; a++)
			for (int b = a + 1; b < R; b++, v++)
				if (v == st->aux) {
					ra = a;
					rb = b;
					break;
				}
	}
	Extent dims[IR_MAXRANK];
	char *lhs[IR_MAXRANK];
	Ref w[IR_MAXRANK], f[IR_MAXRANK], ex[IR_MAXRANK];
	memcpy(ex, ir_read_idx(g, &n), (size_t)R * sizeof *ex);
	for (int k = 0; k < R; k++) {
		int src = k == ra ? rb : k == rb ? ra : k;
		dims[k] = X->dims[src];
	}
	char *tname = fresh(g, "mv");
	for (int k = 0; k < R; k++) {
		char pre[8];
		snprintf(pre, sizeof pre, "%c", 'a' + k);
		lhs[k] = fresh(g, pre);
	}
	for (int k = 0; k < R; k++) {
		/* w: x's index k from t's variables; f: t's index k from the read's indices */
		int src = k == ra ? rb : k == rb ? ra : k;
		Ref v = ir_var(g, (uint32_t)src, TY_INT);
		w[k] = k == rev ? reversed(g, &X->dims[k], v) : v;
		f[k] = k == rev ? reversed(g, &X->dims[k], ex[k]) : ex[src];
	}
	Ref body = ir_read(g, (uint32_t)x, w, (uint32_t)R, 0, TY_REAL);
	int t = add_def(g, tname, R, dims, lhs, body, TY_REAL);
	Ref to = ir_read(g, (uint32_t)t, f, (uint32_t)R, n.u.read.pad, TY_REAL);
	describe(e, st->d, st->r, to, "read through a copy");
	char view[200];
	expr_text(g, g->tensors[t].def, body, view, sizeof view);
	size_t len = strlen(e->what);
	snprintf(e->what + len, sizeof e->what - len, ", %s = %s", tname, view);
	replace(g, st->d, st->r, to);
	e->before = st->d;
	e->newt[e->nnew] = t;
	e->need_op[e->nnew] = DT_NONE;
	e->need_hold[e->nnew++] = value_format(g, s0, x);
	e->bit = true;
	return true;
}

/* split: a subexpression e of definition d hoisted into a new definition h[vars of e] = e,
 * read back in d as h[those vars] (a reduction index among them ranges over 0 .. its
 * constant end, so h is defined wherever d reads it; the checker rejects an h whose reads
 * the wider box would take out of bounds). Exact: h's element is e's value there.
 * Bit-identical when h computes in d's op format F (each of e's operations then rounds as
 * in d; a plain definition computes in f32 or f64, so F must be one of them: `store h :
 * f64` makes it f64) and stores in F, which holds the value d then loads. */
static bool edit_split(Edit *e, const Site *st, const Schedule *s0, uint64_t seed)
{
	Graph *g = e->g;
	int d = st->d;
	bool vars[IR_MAXVARS] = {false};
	if (!hoistable_vars(g, d, st->r, vars))
		return false;
	const Def *D = &g->defs[d];
	const Tensor *T = &g->tensors[D->out[0]];
	Extent dims[IR_MAXRANK];
	char *lhs[IR_MAXRANK];
	Ref at[IR_MAXRANK];
	FzSub sub = {g, 0, 0, {0}, -1, false};
	int R = 0;
	for (int v = 0; v < IR_MAXVARS; v++) {
		if (!vars[v])
			continue;
		if (v < D->nlhs) {
			dims[R] = T->dims[v];
			lhs[R] = D->lhs[v].name;
		} else {
			const RedIndex *X = &D->red[v - D->nlhs];
			const Node *hi = ir_node(g, X->hi);
			dims[R] = hi->kind == NK_SIZE ? (Extent){(int32_t)hi->u.size, g->sizes[hi->u.size].value}
						      : (Extent){-1, hi->u.ival};
			if (dims[R].value < 1)
				return false;
			lhs[R] = X->name;
		}
		at[R] = ir_var(g, (uint32_t)v, TY_INT);
		sub.vmap[v] = ir_var(g, (uint32_t)R, TY_INT);
		R++;
	}
	char *hname = fresh(g, "mh");
	Ref body = fz_rebuild(&sub, st->r);
	Dtype F = s0->defs[d].op;
	int h = add_def(g, hname, R, dims, lhs, body, TY_REAL);
	Ref to = ir_read(g, (uint32_t)h, at, (uint32_t)R, 0, TY_REAL);
	describe(e, d, st->r, to, "subexpression hoisted");
	replace(g, d, st->r, to);
	if (F == DT_F64)
		snprintf(e->extra, sizeof e->extra, "store %s : f64\n", hname);
	e->before = d;
	e->newt[e->nnew] = h;
	e->need_op[e->nnew] = F;
	e->need_hold[e->nnew++] = F;
	e->bit = F == DT_F64 || F == DT_F32;
	return true;
}

/* inline: `inline e` for a plain definition e (its other directives dropped: an inlined
 * definition takes none). A schedule changes rounding only, so the exact value stays.
 * Bit-identical when e's store format held its op values (an inlined value is used as
 * computed, in e's op format) and no format changes (compiler/sched.c: inlined, e reads
 * an f64 value exactly when its stored default was f64). */
static bool edit_inline(Edit *e, const Site *st, const Schedule *s0, uint64_t seed)
{
	Graph *g = e->g;
	for (int k = 0; k < g->ndirs; k++)
		e->m.drop_dir[k] |= g->dirs[k].def == st->d;
	snprintf(e->extra, sizeof e->extra, "inline %s\n", dname(g, st->d));
	snprintf(e->what, sizeof e->what, "inline %s (its directives dropped)", dname(g, st->d));
	e->focus = st->d;
	e->bit = holds(s0->defs[st->d].store, s0->defs[st->d].op);
	return true;
}

/* reverse: reduction index j of d, ranging over lo..hi, replaced by lo + hi - 1 - j in the
 * body and in the later indices' bounds: the same terms (j -> lo + hi - 1 - j is a
 * bijection of the range onto itself), taken in the reverse order. Bit-identical for max
 * and min (exact in any order: IEEE 754-2019 maximum and minimum are associative and
 * commutative, NaN and signed zeros included) and for integer sums and products (exact
 * integers; a 32-bit overflow of a partial sum would wrap back, but the generator keeps
 * every partial within 2^24); within budget for real sum, prod and logsumexp. Never for
 * argmax, argmin and topk: the reversed range's first index among tied terms is the
 * original's last, so they agree only where no two terms tie, which nothing promises. */
static bool edit_reverse(Edit *e, const Site *st, uint64_t seed)
{
	Graph *g = e->g;
	Def *D = &g->defs[st->d];
	RedIndex *X = &D->red[st->aux];
	uint32_t var = (uint32_t)(D->nlhs + st->aux);
	Ref v = ir_var(g, var, TY_INT), lo = X->lo, hi = X->hi;
	const Node *l = ir_node(g, lo), *h = ir_node(g, hi);
	bool lo0 = l->kind == NK_INT && l->u.ival == 0;
	Ref last;   /* lo + hi - 1, folded where both are literals */
	if (l->kind == NK_INT && h->kind == NK_INT)
		last = ir_int(g, l->u.ival + h->u.ival - 1);
	else
		last = ir_op(g, OP_SUB, TY_INT, lo0 ? hi : ir_op(g, OP_ADD, TY_INT, lo, hi, 0),
			     ir_int(g, 1), 0);
	Ref rv = ir_op(g, OP_SUB, TY_INT, last, v, 0);
	FzSub s = {g, 0, 0, {0}, -1, false};
	s.vmap[var] = rv;
	char a[160];
	expr_text(g, st->d, rv, a, sizeof a);
	snprintf(e->what, sizeof e->what, "range of %s in %s reversed: %s -> %s", X->name,
		 dname(g, st->d), X->name, a);
	/* the range itself does not mention its own index: only the body and later ranges */
	Ref keep_lo = X->lo, keep_hi = X->hi;
	fz_rebuild_def(&s, st->d);
	D = &g->defs[st->d];
	D->red[st->aux].lo = keep_lo;
	D->red[st->aux].hi = keep_hi;
	bool integer = D->ty == TY_INT;
	e->bit = D->monoid == MO_MAX || D->monoid == MO_MIN ||
		 (integer && (D->monoid == MO_SUM || D->monoid == MO_PROD));
	return true;
}

/* cast: a read x[e] (no padding) of an input of format X wrapped in casts to formats
 * that each hold X: f32(f64(x)), f16(f32(x)), bf16(f32(x)), f64(f32(x)), f32(x)... Exact:
 * an input holds values of X, and each cast rounds such a value to itself (a definition's
 * exact value is any real, whatever its store format, so its reads are never wrapped). Bit-identical when d loads x exactly
 * (its op format holds X: the emulator then casts the value itself) and no format changes;
 * an f64 cast in a definition that computed in f32 makes it compute in f64
 * (graph-format.md section 7): within budget only. */
static bool edit_cast(Edit *e, const Site *st, const Schedule *s0, uint64_t seed)
{
	Graph *g = e->g;
	Node n = *ir_node(g, st->r);
	Dtype X = value_format(g, s0, (int)n.u.read.tensor);
	static const Dtype casts[] = {DT_F64, DT_F32, DT_F16, DT_BF16};
	Dtype ok[4];
	int nok = 0;
	for (size_t i = 0; i < ARRAY_LEN(casts); i++)
		if (holds(casts[i], X))
			ok[nok++] = casts[i];
	if (nok == 0)
		return false;
	/* one or two casts, innermost first; the outer one is X itself when X has a cast */
	Dtype inner = ok[(seed >> 8) % (uint64_t)nok], outer = DT_NONE;
	if ((seed >> 12) & 1) {
		outer = op_cast_to(X) >= 0 ? X : ok[(seed >> 16) % (uint64_t)nok];
		if (outer == inner)
			outer = DT_NONE;
	}
	Ref to = ir_op(g, (Op)op_cast_to(inner), TY_REAL, st->r, 0, 0);
	if (outer != DT_NONE)
		to = ir_op(g, (Op)op_cast_to(outer), TY_REAL, to, 0, 0);
	describe(e, st->d, st->r, to, "identity casts");
	replace(g, st->d, st->r, to);
	e->bit = holds(s0->defs[st->d].op, X);
	return true;
}

/* ------------------------------------------------------------------ checking an edit */

/* Whether v's schedule keeps every format of g's definitions (the inlined one aside:
 * its op format only, and its store must have held its op values) and gives each new
 * definition what the edit's proof needs. */
static bool formats_kept(const Graph *g, const Schedule *s, const Graph *v, const Schedule *sv,
			 const Edit *e)
{
	for (int d = 0; d < g->ndefs; d++) {
		int dv = ir_find_def(v, dname(g, d));
		if (dv < 0)
			return false;
		const DefSched *a = &s->defs[d], *b = &sv->defs[dv];
		if (d == e->focus) {
			if (a->op != b->op)
				return false;
			continue;
		}
		if (a->op != b->op || a->accum != b->accum || a->store != b->store ||
		    a->inlined != b->inlined)
			return false;
	}
	for (int k = 0; k < e->nnew; k++) {
		int dv = ir_find_def(v, e->g->tensors[e->newt[k]].name);
		if (dv < 0)
			return false;
		const DefSched *b = &sv->defs[dv];
		if ((e->need_op[k] != DT_NONE && b->op != e->need_op[k]) ||
		    !holds(b->op, e->need_hold[k]) || !holds(b->store, e->need_hold[k]))
			return false;
	}
	return true;
}

/* The text of edit e (its new definitions printed before their reader). */
static char *edit_text(Edit *e)
{
	Graph *g = e->g;
	FzMask *m = &e->m;
	free(m->order);
	m->order = malloc(((size_t)g->ntensors + 1) * sizeof *m->order);
	IR_ASSERT(m->order);
	m->norder = 0;
	int first = e->before >= 0 ? g->defs[e->before].out[0] : -1;
	for (int t = 0; t < g->ntensors; t++) {
		bool added = false;
		for (int k = 0; k < e->nnew; k++)
			added |= e->newt[k] == t;
		if (added)
			continue;
		if (t == first)
			for (int k = 0; k < e->nnew; k++)
				m->order[m->norder++] = e->newt[k];
		m->order[m->norder++] = t;
	}
	m->extra_dirs = e->extra;
	return fz_print_masked(g, m);
}

/* The definition d of g (from its text) with no store directive, or -1. */
static bool has_dir(const Graph *g, int d, DirKind kind)
{
	for (int k = 0; k < g->ndirs; k++)
		if (g->dirs[k].def == d && g->dirs[k].kind == kind)
			return true;
	return false;
}

/* Applies the edit of kind at site st to a fresh parse of text; 1 with the variant in v,
 * 0 when the edit does not make a graph that checks. */
static int try_site(const Graph *g0, const Schedule *s0, const char *text, FzVariantKind kind,
		    const Site *st, uint64_t seed, FzVariant *v)
{
	Edit e;
	memset(&e, 0, sizeof e);
	e.g = parse(text, g0->file);
	IR_ASSERT(e.g);
	fz_mask_init(e.g, &e.m);
	e.before = -1;
	e.focus = -1;
	char base[64], vname[96];
	vf_graph_name(g0, base, sizeof base);
	snprintf(vname, sizeof vname, "%s_%s", base, kind_names[kind]);
	e.g->name = ir_strdup(e.g, vname, strlen(vname));
	bool made = false;
	switch (kind) {
	case FZ_VK_SWAP: made = edit_swap(&e, st, seed); break;
	case FZ_VK_VIEW: made = edit_view(&e, st, seed); break;
	case FZ_VK_COPY: made = edit_copy(&e, st, s0, seed); break;
	case FZ_VK_SPLIT: made = edit_split(&e, st, s0, seed); break;
	case FZ_VK_INLINE: made = edit_inline(&e, st, s0, seed); break;
	case FZ_VK_REVERSE: made = edit_reverse(&e, st, seed); break;
	case FZ_VK_CAST: made = edit_cast(&e, st, s0, seed); break;
	default: break;
	}
	int rc = 0;
	Graph *vg = NULL;
	Schedule sv = {0};
	Diag dd = {0};
	for (int attempt = 0; made && attempt < 2; attempt++) {
		char *vt = edit_text(&e);
		ir_free(vg);
		vg = parse(vt, g0->file);
		free(vt);
		if (!vg || sched_build(vg, &sv, &dd)) {
			diag_clear(&dd);
			break;
		}
		bool kept = formats_kept(g0, s0, vg, &sv, &e);
		sched_free(&sv);
		if (kept || !e.bit || attempt == 1 || kind != FZ_VK_SPLIT || e.before < 0 ||
		    has_dir(g0, e.before, SD_STORE) || s0->defs[e.before].inlined ||
		    g0->defs[e.before].ty != TY_REAL) {
			e.bit = e.bit && kept;
			rc = 1;
			break;
		}
		/* the split definition may now read an f64 value (h, stored in f64) where it read
		 * none: its default store would become f64; its own format, pinned, keeps it */
		size_t len = strlen(e.extra);
		snprintf(e.extra + len, sizeof e.extra - len, "store %s : %s\n", dname(g0, e.before),
			 dt_name(s0->defs[e.before].store));
	}
	if (rc) {
		memset(v, 0, sizeof *v);
		v->kind = kind;
		v->seed = seed;
		v->bit = e.bit;
		snprintf(v->name, sizeof v->name, "%s", kind_names[kind]);
		snprintf(v->what, sizeof v->what, "%s", e.what);
		v->text = ir_print(vg);
		v->g = vg;
		vg = NULL;
	}
	ir_free(vg);
	fz_mask_free(&e.m);
	ir_free(e.g);
	return rc;
}

int fz_variant_make(const Graph *g, FzVariantKind kind, uint64_t seed, FzVariant *v)
{
	memset(v, 0, sizeof *v);
	if (kind < 0 || kind >= FZ_VK__COUNT)
		return 0;
	char *text = ir_print(g);
	Graph *g0 = parse(text, g->file);
	Schedule s0 = {0};
	Diag d = {0};
	int rc = 0;
	if (!g0 || sched_build(g0, &s0, &d)) {
		diag_clear(&d);
		goto out;
	}
	Sites *S = malloc(sizeof *S);
	IR_ASSERT(S);
	find_sites(g0, &s0, kind, S);
	uint64_t z = mix(seed ^ (0x51ed5eedull * (uint64_t)(kind + 1)));
	int start = S->n ? (int)(z % (uint64_t)S->n) : 0;
	for (int a = 0; a < S->n && a < MAXTRY && !rc; a++)
		rc = try_site(g0, &s0, text, kind, &S->s[(start + a) % S->n], mix(z + (uint64_t)a), v);
	free(S);
	sched_free(&s0);
out:
	ir_free(g0);
	free(text);
	if (rc)
		v->seed = seed;
	return rc;
}

int fz_variants(const Graph *g, uint64_t seed, int max, FzVariant *out)
{
	int n = 0;
	Rng r = {mix(seed ^ 0x7a1a47ull), 0};
	/* a kind the first round could not make is not tried again: with another seed it may
	 * find a site (fz_variant_make tries MAXTRY of them) and come after kinds made twice;
	 * so every kind made comes once before any comes twice */
	bool none[FZ_VK__COUNT] = {false};
	for (int round = 0; round < MAXROUNDS && n < max; round++) {
		int perm[FZ_VK__COUNT], made = 0;
		for (int k = 0; k < FZ_VK__COUNT; k++)
			perm[k] = k;
		for (int k = FZ_VK__COUNT - 1; k > 0; k--) {
			int j = (int)rng_below(&r, k + 1), t = perm[k];
			perm[k] = perm[j];
			perm[j] = t;
		}
		for (int k = 0; k < FZ_VK__COUNT && n < max; k++) {
			uint64_t vs = rng_next(&r);
			if (none[perm[k]])
				continue;
			if (!fz_variant_make(g, (FzVariantKind)perm[k], vs, &out[n])) {
				none[perm[k]] |= round == 0;
				continue;
			}
			snprintf(out[n].name, sizeof out[n].name, "v%d.%s", n + 1, kind_names[perm[k]]);
			n++;
			made++;
		}
		if (!made)
			break;
	}
	return n;
}

void fz_variant_free(FzVariant *v)
{
	free(v->text);
	ir_free(v->g);
	memset(v, 0, sizeof *v);
}

/* ------------------------------------------------------------------ verifying a claim */

/* The same value as a category for NaN, else the same bits. */
static bool same_value(const HostTensor *a, const HostTensor *b, int64_t k)
{
	double x = ht_get(a, k), y = ht_get(b, k);
	if (isnan(x) || isnan(y))
		return isnan(x) && isnan(y);
	int bytes = dt_info(a->dtype)->bytes;
	return memcmp((const char *)a->data + k * bytes, (const char *)b->data + k * bytes,
		      (size_t)bytes) == 0;
}

int64_t fz_first_difference(const HostTensor *a, const HostTensor *b, const uint8_t *skip_a,
			    const uint8_t *skip_b)
{
	if (a->dtype != b->dtype || a->n != b->n)
		return 0;
	for (int64_t k = 0; k < a->n; k++)
		if (!(skip_a && skip_a[k]) && !(skip_b && skip_b[k]) && !same_value(a, b, k))
			return k;
	return -1;
}

/* Emulates g under its own schedule into outs (g->noutputs). 0, or -1/-2 with d. */
static int emulate(const Graph *g, const HostTensor *inputs, const MpOpts *o, HostTensor *outs,
		   Diag *d)
{
	Schedule s;
	if (sched_build(g, &s, d))
		return -1;
	OrcEmu e;
	orc_emu_config(g, &s, &e);
	MpStats st;
	int rc = mp_emulate(g, inputs, &e.cfg, o, outs, &st, d);
	orc_emu_free(&e);
	sched_free(&s);
	return rc;
}

static void free_all(HostTensor *t, int n)
{
	for (int k = 0; t && k < n; k++)
		ht_free(&t[k]);
	free(t);
}

int fz_variant_verify(const Graph *g, const FzVariant *v, const InputSpec *spec, const MpOpts *o,
		      bool *same, char *why, size_t n, Diag *d)
{
	*same = true;
	if (why && n)
		why[0] = 0;
	int ni = ir_ninputs(g), rc = -1;
	HostTensor *in = calloc((size_t)ni + 1, sizeof *in), *vin = NULL;
	HostTensor *a = calloc((size_t)g->noutputs + 1, sizeof *a), *b = NULL;
	IR_ASSERT(in && a);
	if ((rc = mp_make_inputs(g, spec, NULL, in, d)))
		goto out;
	/* the variant must see the same inputs: generated from its own text, as a check of it
	 * generates them */
	if (ir_ninputs(v->g) != ni || v->g->noutputs != g->noutputs) {
		diag_set(d, 3, "variant %s: its inputs or outputs are not its original's", v->name);
		rc = -1;
		goto out;
	}
	vin = calloc((size_t)ni + 1, sizeof *vin);
	IR_ASSERT(vin);
	if ((rc = mp_make_inputs(v->g, spec, NULL, vin, d)))
		goto out;
	for (int k = 0; k < ni; k++)
		if (in[k].n != vin[k].n || in[k].dtype != vin[k].dtype ||
		    memcmp(in[k].data, vin[k].data, (size_t)(in[k].n * dt_info(in[k].dtype)->bytes))) {
			*same = false;
			snprintf(why, n, "input %s is generated differently for the variant",
				 g->tensors[ir_input_tensor(g, k)].name);
			rc = 0;
			goto out;
		}
	if (!v->bit) {
		rc = 0;
		goto out;
	}
	b = calloc((size_t)g->noutputs + 1, sizeof *b);
	IR_ASSERT(b);
	if ((rc = emulate(g, in, o, a, d)) || (rc = emulate(v->g, vin, o, b, d)))
		goto out;
	for (int k = 0; k < g->noutputs && *same; k++) {
		int64_t at = fz_first_difference(&a[k], &b[k], NULL, NULL);
		if (at < 0)
			continue;
		*same = false;
		const char *name = g->tensors[g->outputs[k].tensor].name;
		snprintf(why, n, "output %s, element %lld: the variant's emulation gives %.17g, the "
			 "original's %.17g", name, (long long)at, ht_get(&b[k], at), ht_get(&a[k], at));
	}
	rc = 0;
out:
	free_all(in, ni);
	free_all(vin, ni);
	free_all(a, g->noutputs);
	free_all(b, g->noutputs);
	return rc;
}

/* ------------------------------------------------------------------ checking a pair */

int fz_check_pair(const Graph *g, const FzRun *r, FzResult *res, Diag *d)
{
	FzRun one = *r;
	one.pair = false;
	FzVariant v;
	if (!fz_variant_make(g, (FzVariantKind)r->pair_kind, r->pair_seed, &v))
		return 0;
	int rc = 0;
	if (!v.bit)
		goto out;
	FzResult orig = {0};
	orig.keep = true;
	rc = fz_check(g, &one, &orig, d);
	if (rc == 0) {
		char name[64];
		snprintf(name, sizeof name, "%s (bit-identical)", v.name);
		res->against = &orig;
		res->against_bit = true;
		res->variant = name;
		rc = fz_check(v.g, &one, res, d);
		res->against = NULL;
		res->variant = NULL;
	}
	fz_result_free(&orig);
out:
	fz_variant_free(&v);
	return rc;
}
