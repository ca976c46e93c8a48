/* compiler/sched/rewrite.c: algebraic simplification, as a table of rules applied while copying
 * a graph.
 *
 * Each rule states its domain (style.md):
 *   exact    bit-identical for every input: NaN, +-0, +-inf and subnormals included;
 *   real     an identity over the reals only (x*0 -> 0 is wrong for inf and NaN, x+0 -> x
 *            for -0): the caller enables these only where a budget accounts for them;
 *   integer  on exact integer values (index arithmetic, i32 definitions).
 * A rule is a matcher: given a freshly built node whose operands are already simplified,
 * it returns a replacement or REF_NONE. Rules are tried bottom-up, and again on each
 * replacement until none fires. Every rule counts the nodes it was tried on and its
 * firings, so a report can list the rules a fuzz campaign never fired.
 *
 * Invariants: rw_simplify never modifies its input; the copy owns everything it points to;
 * it has the sizes, tensors, definitions, outputs and directives of its input in the same
 * order (only expressions are rewritten), so a schedule of the input is one of the copy.
 * rw_compile is the compiler's own use: exact and integer rules, before lowering.
 */
#include <math.h>
#include <mpfr.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <limits.h>
#include "../compiler.h"

/* faults: KF_* (a matcher with a seeded fault tests it, marked "fault:") */
typedef Ref (*Match)(Graph *g, const Node *n, unsigned faults);

/* ------------------------------------------------------------ matchers */

static const Node *arg(const Graph *g, const Node *n, int i)
{
	return ir_node(g, n->a[i]);
}

/* Does real literal n denote exactly v (not -0 for v = 0)? */
static bool lit_is(const Graph *g, const Node *n, double v)
{
	const char *text = g->lits[n->u.lit].text;
	if (g->lits[n->u.lit].approx != v)
		return false;
	mpfr_t x;
	mpfr_init2(x, 1024);
	char *end;
	int t = mpfr_strtofr(x, text, &end, 0, MPFR_RNDN);
	bool ok = t == 0 && *end == 0 && mpfr_cmp_d(x, v) == 0 && !mpfr_signbit(x);
	mpfr_clear(x);
	return ok;
}

/* Is node r exactly the number v (an integer literal, or a real literal denoting v)? */
static bool is_num(const Graph *g, Ref r, long v)
{
	const Node *n = ir_node(g, r);
	if (n->kind == NK_INT)
		return n->u.ival == v;
	return n->kind == NK_NUM && lit_is(g, n, (double)v);
}

static bool is_op(const Node *n, Op op)
{
	return n->kind == NK_OP && n->op == op;
}

/* exact: x * 1 -> x, 1 * x -> x (real x) */
static Ref mul_one(Graph *g, const Node *n, unsigned faults)
{
	if (!is_op(n, OP_MUL) || n->ty != TY_REAL)
		return REF_NONE;
	if (is_num(g, n->a[1], 1) && arg(g, n, 0)->ty == TY_REAL)
		return n->a[0];
	if (is_num(g, n->a[0], 1) && arg(g, n, 1)->ty == TY_REAL)
		return n->a[1];
	return REF_NONE;
}

/* exact: x / 1 -> x */
static Ref div_one(Graph *g, const Node *n, unsigned faults)
{
	return is_op(n, OP_DIV) && is_num(g, n->a[1], 1) && arg(g, n, 0)->ty == TY_REAL
		? n->a[0] : REF_NONE;
}

/* Is node r the constant 2^k, |k| <= 14 (an integer literal, a size or a real literal)?
 * Both 2^k and 2^-k are then normal numbers of every format, f16 included. */
static bool is_pow2(const Graph *g, Ref r, int *k)
{
	const Node *n = ir_node(g, r);
	double v;
	if (n->kind == NK_INT)
		v = (double)n->u.ival;
	else if (n->kind == NK_SIZE)
		v = (double)g->sizes[n->u.size].value;
	else if (n->kind == NK_NUM)
		v = g->lits[n->u.lit].approx;
	else
		return false;
	int e;
	if (!(v > 0) || frexp(v, &e) != 0.5 || e - 1 < -14 || e - 1 > 14)
		return false;
	*k = e - 1;
	return n->kind != NK_NUM || lit_is(g, n, v);
}

/* exact: x / 2^k -> x * 2^-k (|k| <= 14: both sides round the same real once, in every
 * format; inf, NaN and +-0 alike). fault: KF_RW_DIV_POW2 takes frexp's exponent (k + 1)
 * for k, so the quotient comes out halved. */
static Ref div_pow2(Graph *g, const Node *n, unsigned faults)
{
	int k;
	if (!is_op(n, OP_DIV) || n->ty != TY_REAL || arg(g, n, 0)->ty != TY_REAL ||
	    !is_pow2(g, n->a[1], &k) || k == 0)
		return REF_NONE;
	if (ir_node(g, n->a[1])->kind == NK_SIZE)
		COV(rw_div_pow2_size);
	if (faults & KF_RW_DIV_POW2)
		k++;
	char text[16];
	int len = snprintf(text, sizeof text, "0x1p%d", -k);
	return ir_op(g, OP_MUL, TY_REAL, n->a[0], ir_num(g, text, (size_t)len), REF_NONE);
}

/* exact: x - 0 -> x (x - (+0) is x for every x, -0 included) */
static Ref sub_zero(Graph *g, const Node *n, unsigned faults)
{
	return is_op(n, OP_SUB) && n->ty == TY_REAL && is_num(g, n->a[1], 0) &&
		arg(g, n, 0)->ty == TY_REAL ? n->a[0] : REF_NONE;
}

/* exact: -(-x) -> x, !!c -> c */
static Ref double_neg(Graph *g, const Node *n, unsigned faults)
{
	if ((is_op(n, OP_NEG) || is_op(n, OP_NOT)) && is_op(arg(g, n, 0), (Op)n->op))
		return arg(g, n, 0)->a[0];
	return REF_NONE;
}

/* Does format a hold every value of format b? */
static bool holds(Dtype a, Dtype b)
{
	if (a == b || a == DT_F64)
		return true;
	return a == DT_F32 && (b == DT_F16 || b == DT_BF16);
}

/* exact: A(B(x)) -> B(x) when A holds every value of B */
static Ref cast_cast(Graph *g, const Node *n, unsigned faults)
{
	Dtype a = n->kind == NK_OP ? op_cast_dtype((Op)n->op) : DT_NONE;
	if (a == DT_NONE)
		return REF_NONE;
	const Node *in = arg(g, n, 0);
	Dtype b = in->kind == NK_OP ? op_cast_dtype((Op)in->op) : DT_NONE;
	if (b != DT_NONE && !holds(a, b))
		COV(rw_cast_narrowing);
	return b != DT_NONE && holds(a, b) ? n->a[0] : REF_NONE;
}

/* exact: c ? x : x -> x */
static Ref same_arms(Graph *g, const Node *n, unsigned faults)
{
	(void)g;
	return is_op(n, OP_SELECT) && n->a[1] == n->a[2] ? n->a[1] : REF_NONE;
}

/* real: x * 0 -> 0, 0 * x -> 0 */
static Ref mul_zero(Graph *g, const Node *n, unsigned faults)
{
	if (!is_op(n, OP_MUL) || n->ty != TY_REAL)
		return REF_NONE;
	return is_num(g, n->a[0], 0) || is_num(g, n->a[1], 0) ? ir_num(g, "0", 1) : REF_NONE;
}

/* real: x + 0 -> x, 0 + x -> x (wrong for x = -0) */
static Ref add_zero(Graph *g, const Node *n, unsigned faults)
{
	if (!is_op(n, OP_ADD) || n->ty != TY_REAL)
		return REF_NONE;
	if (is_num(g, n->a[1], 0) && arg(g, n, 0)->ty == TY_REAL)
		return n->a[0];
	if (is_num(g, n->a[0], 0) && arg(g, n, 1)->ty == TY_REAL)
		return n->a[1];
	return REF_NONE;
}

/* real: x - x -> 0, x / x -> 1 */
static Ref self_cancel(Graph *g, const Node *n, unsigned faults)
{
	if (n->ty != TY_REAL || n->kind != NK_OP || n->a[0] != n->a[1])
		return REF_NONE;
	if (n->op == OP_SUB)
		return ir_num(g, "0", 1);
	if (n->op == OP_DIV)
		return ir_num(g, "1", 1);
	return REF_NONE;
}

/* integer: constant folding of + - * neg abs max min, and / % by a positive constant */
static Ref int_fold(Graph *g, const Node *n, unsigned faults)
{
	if (n->kind != NK_OP || n->ty != TY_INT || n->op == OP_SELECT)
		return REF_NONE;
	int arity = op_info((Op)n->op)->arity;
	int64_t v[2] = {0, 0}, r;
	for (int i = 0; i < arity; i++) {
		const Node *a = arg(g, n, i);
		if (a->kind != NK_INT)
			return REF_NONE;
		v[i] = a->u.ival;
	}
	bool over = false;
	switch (n->op) {
	case OP_NEG: over = __builtin_sub_overflow((int64_t)0, v[0], &r); break;
	case OP_ABS: over = v[0] == INT64_MIN; r = over ? 0 : v[0] < 0 ? -v[0] : v[0]; break;
	case OP_ADD: over = __builtin_add_overflow(v[0], v[1], &r); break;
	case OP_SUB: over = __builtin_sub_overflow(v[0], v[1], &r); break;
	case OP_MUL: over = __builtin_mul_overflow(v[0], v[1], &r); break;
	case OP_MAX: r = v[0] > v[1] ? v[0] : v[1]; break;
	case OP_MIN: r = v[0] < v[1] ? v[0] : v[1]; break;
	case OP_IDIV: case OP_MOD:
		if (v[1] <= 0)
			return REF_NONE;
		COV(rw_fold_divmod);
		r = v[0] % v[1];
		if (r < 0)
			r += v[1];
		if (n->op == OP_IDIV)
			r = (v[0] - r) / v[1];
		break;
	default: return REF_NONE;
	}
	if (over || r < INT32_MIN || r > INT32_MAX) {
		COV(rw_fold_overflow);
		return REF_NONE;
	}
	return ir_int(g, r);
}

/* integer: i + 0 -> i, i - 0 -> i, i * 1 -> i, i * 0 -> 0, i - i -> 0 */
static Ref int_ident(Graph *g, const Node *n, unsigned faults)
{
	if (n->kind != NK_OP || n->ty != TY_INT)
		return REF_NONE;
	const Node *a = arg(g, n, 0), *b = n->a[1] ? arg(g, n, 1) : NULL;
	bool a0 = a->kind == NK_INT && a->u.ival == 0, a1 = a->kind == NK_INT && a->u.ival == 1;
	bool b0 = b && b->kind == NK_INT && b->u.ival == 0, b1 = b && b->kind == NK_INT && b->u.ival == 1;
	switch (n->op) {
	case OP_ADD: return b0 ? n->a[0] : a0 ? n->a[1] : REF_NONE;
	case OP_SUB: return b0 ? n->a[0] : n->a[0] == n->a[1] ? ir_int(g, 0) : REF_NONE;
	case OP_MUL:
		if (a0 || b0)
			return ir_int(g, 0);
		return b1 ? n->a[0] : a1 ? n->a[1] : REF_NONE;
	default: return REF_NONE;
	}
}

static const struct {
	const char *name;
	unsigned domain;
	Match match;
} rules[] = {
	{"x*1 -> x", RW_EXACT, mul_one},
	{"x/1 -> x", RW_EXACT, div_one},
	{"x/2^k -> x*2^-k", RW_EXACT, div_pow2},
	{"x-0 -> x", RW_EXACT, sub_zero},
	{"--x -> x, !!c -> c", RW_EXACT, double_neg},
	{"A(B(x)) -> B(x) when A holds B", RW_EXACT, cast_cast},
	{"c ? x : x -> x", RW_EXACT, same_arms},
	{"x*0 -> 0", RW_REAL, mul_zero},
	{"x+0 -> x", RW_REAL, add_zero},
	{"x-x -> 0, x/x -> 1", RW_REAL, self_cancel},
	{"integer constant folding", RW_INT, int_fold},
	{"i+0, i*1, i*0, i-i", RW_INT, int_ident},
};
_Static_assert(ARRAY_LEN(rules) <= RW_MAXRULES, "RwStats holds every rule");

/* ------------------------------------------------------------ copying */

typedef struct {
	const Graph *g;
	Graph *h;
	Ref *memo;
	unsigned domains;
	unsigned faults;   /* KF_* */
	RwStats *st;
} Cp;

static SrcPos pos(Cp *c, SrcPos p)
{
	if (p.file && c->g->file && strcmp(p.file, c->g->file) == 0)
		p.file = c->h->file;
	else if (p.file)
		p.file = ir_strdup(c->h, p.file, strlen(p.file));
	return p;
}

static Ref simplify(Cp *c, Ref r)
{
	for (int round = 0; round < 16; round++) {
		Ref to = REF_NONE;
		for (size_t i = 0; i < ARRAY_LEN(rules) && !to; i++) {
			if (!(rules[i].domain & c->domains))
				continue;
			c->st->tried[i]++;
			to = rules[i].match(c->h, ir_node(c->h, r), c->faults);
			if (to)
				c->st->fired[i]++;
			if (to && round > 0)
				COV(rw_resimplify);
		}
		if (!to)
			return r;
		r = to;
	}
	return r;
}

static Ref copy(Cp *c, Ref r)
{
	if (!r)
		return REF_NONE;
	if (c->memo[r])
		return c->memo[r];
	const Node *n = ir_node(c->g, r);
	Node m = *n;
	Ref out = REF_NONE;
	switch (n->kind) {
	case NK_NUM: {
		const char *t = c->g->lits[n->u.lit].text;
		out = ir_num(c->h, t, strlen(t));
		break;
	}
	case NK_INT: out = ir_int(c->h, n->u.ival); break;
	case NK_VAR: out = ir_var(c->h, n->u.var, (Ty)n->ty); break;
	case NK_SIZE: out = ir_size(c->h, n->u.size); break;
	case NK_READ: {
		Ref idx[IR_MAXRANK];
		const Ref *ix = ir_read_idx(c->g, n);
		for (uint32_t i = 0; i < n->u.read.n; i++)
			idx[i] = copy(c, ix[i]);
		Ref pad = copy(c, n->u.read.pad);
		out = ir_read(c->h, n->u.read.tensor, idx, n->u.read.n, pad, (Ty)n->ty);
		break;
	}
	case NK_OP:
		for (int i = 0; i < 3; i++)
			m.a[i] = copy(c, n->a[i]);
		out = ir_op(c->h, (Op)n->op, (Ty)n->ty, m.a[0], m.a[1], m.a[2]);
		ir_setpos(c->h, out, pos(c, n->pos));
		out = simplify(c, out);
		break;
	}
	ir_setpos(c->h, out, pos(c, n->pos));
	c->memo[r] = out;
	return out;
}

static void copy_lists(Cp *c)
{
	const Graph *g = c->g;
	Graph *h = c->h;
	for (int i = 0; i < g->nsizes; i++)
		ir_add_size(h, g->sizes[i].name, g->sizes[i].value, pos(c, g->sizes[i].pos));
	for (int i = 0; i < g->ntensors; i++) {
		Tensor t = g->tensors[i];
		t.name = ir_strdup(h, t.name, strlen(t.name));
		t.pos = pos(c, t.pos);
		ir_add_tensor(h, &t);
	}
	for (int i = 0; i < g->ndefs; i++) {
		Def d = g->defs[i];
		for (int k = 0; k < d.nlhs; k++) {
			d.lhs[k].name = ir_strdup(h, d.lhs[k].name, strlen(d.lhs[k].name));
			d.lhs[k].pos = pos(c, d.lhs[k].pos);
		}
		for (int k = 0; k < d.nred; k++) {
			d.red[k].name = ir_strdup(h, d.red[k].name, strlen(d.red[k].name));
			d.red[k].pos = pos(c, d.red[k].pos);
			d.red[k].lo = copy(c, d.red[k].lo);
			d.red[k].hi = copy(c, d.red[k].hi);
		}
		d.body = copy(c, d.body);
		d.pos = pos(c, d.pos);
		ir_add_def(h, &d);
	}
	for (int i = 0; i < g->noutputs; i++)
		ir_add_output(h, g->outputs[i].tensor, g->outputs[i].dtype, pos(c, g->outputs[i].pos));
	h->ndirs = g->ndirs;
	h->has_schedule = g->has_schedule;
	h->dirs = calloc((size_t)g->ndirs + 1, sizeof *h->dirs);
	IR_ASSERT(h->dirs);
	for (int i = 0; i < g->ndirs; i++) {
		Directive x = g->dirs[i];
		x.target = ir_strdup(h, x.target, strlen(x.target));
		x.pos = pos(c, x.pos);
		if (x.nargs) {
			x.args = ir_alloc(h, (size_t)x.nargs * sizeof *x.args);
			for (int k = 0; k < x.nargs; k++) {
				x.args[k] = g->dirs[i].args[k];
				x.args[k].name = ir_strdup(h, x.args[k].name, strlen(x.args[k].name));
				x.args[k].pos = pos(c, x.args[k].pos);
			}
		}
		h->dirs[i] = x;
	}
}

static void names(RwStats *st)
{
	st->nrules = (int)ARRAY_LEN(rules);
	for (size_t i = 0; i < ARRAY_LEN(rules); i++) {
		st->name[i] = rules[i].name;
		st->domain[i] = rules[i].domain;
	}
}

void rw_rules(RwStats *st)
{
	memset(st, 0, sizeof *st);
	names(st);
}

static Graph *simplify_graph(const Graph *g, unsigned domains, unsigned faults, RwStats *st)
{
	RwStats local;
	if (!st) {
		memset(&local, 0, sizeof local);
		st = &local;
	}
	names(st);
	Graph *h = ir_new(g->file);
	if (g->name)
		h->name = ir_strdup(h, g->name, strlen(g->name));
	if (g->src) {
		h->src = malloc(g->srclen + 1);
		IR_ASSERT(h->src);
		memcpy(h->src, g->src, g->srclen);
		h->src[g->srclen] = 0;
		h->srclen = g->srclen;
	}
	Cp c = {g, h, calloc(g->nnodes + 1, sizeof(Ref)), domains, faults, st};
	IR_ASSERT(c.memo);
	copy_lists(&c);
	free(c.memo);
	return h;
}

Graph *rw_simplify(const Graph *g, unsigned domains, RwStats *st)
{
	return simplify_graph(g, domains, 0, st);
}

/* The matchers read only the rewrite's own faults (KF_REWRITE), which fit an unsigned. */
_Static_assert(KF_REWRITE <= UINT_MAX, "the rewrite's faults fit the matchers' unsigned");

Graph *rw_compile(const Graph *g, uint64_t faults, RwStats *st)
{
	return simplify_graph(g, RW_EXACT | RW_INT, (unsigned)(faults & KF_REWRITE), st);
}
