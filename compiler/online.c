/* compiler/online.c: recognising the one-pass forms of `online d1, d2, ...` (graph-format.md
 * section 7a; docs/format-notes.md "online").
 *
 * The members are taken in file order; each gets a role from the structure of its body,
 * read through the plain definitions between (those that read a member: the softmax's
 * `e`, attention's `p`), and the roles must spell one of the rules below. Variables are
 * compared by a canonical id: the base member's left-hand index k is k, the reduction
 * index is CANON_RED, a member's own left-hand index k (a contraction's head dimension)
 * CANON_OWN + k; a member's map to the base comes from its reads of earlier members.
 *
 * Roles (the body of a member over its one reduction index j):
 *   max         max(j) T, T reading no member
 *   sum of exp  sum(j) E, E of degree one in exp(A - m) or exp((A - m) * c) for the max
 *               member m and a positive constant c (a literal or size): E is that exp,
 *               F * E, E * F, E / F, -E, or C ? E : 0 with F, C reading no member
 *   contraction sum(j) N / l with N a degree-one term as above and l a read of the sum of
 *               exp member at the member's mapped indices (not depending on j)
 *   mean        sum(j) X / N with X reading no member, N a constant equal to the range's
 *               length
 *   M2          sum(j) (X - mu) * (X - mu) / N with X the mean's X and mu the mean member
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "compiler.h"

enum { CANON_RED = 100, CANON_OWN = 200, CANON_NONE = -1 };

/* The rules, as data: each the roles it needs (in file order), its state and its domain
 * (these are identities over the reals, not bit-exact ones: the budget of the pass is
 * derived for its own order, docs/oracle.md "One-pass forms"). */
typedef struct {
	OnKind kind;
	const char *name;
	int n;
	OnRole roles[ON_MAXDEFS];
	const char *state;
	const char *domain;
} OnRule;

static const OnRule rules[] = {
	{ON_SOFTMAX, "online softmax", 2, {OR_MAX, OR_EXPSUM}, "(m, l)",
	 "real: l' = l * exp((m - m') * c) + exp((x - m') * c), from exp(a) * exp(b) = exp(a + b); "
	 "the running max is exact"},
	{ON_FLASH, "flash attention", 3, {OR_MAX, OR_EXPSUM, OR_CONTRACT}, "(m, l, acc[d])",
	 "real: acc' = acc * exp((m - m') * c) + n(x, m'), o = acc / l once at the end "
	 "(a divisor independent of j: sum(t / l) = sum(t) / l)"},
	{ON_WELFORD, "Welford", 2, {OR_MEAN, OR_M2}, "(n, mean, M2)",
	 "real: mean' = mean + (x - mean) / n', M2' = M2 + (x - mean) * (x - mean'), var = M2 / N "
	 "(Chan, Golub, LeVeque 1983)"},
};

const char *on_kind_name(OnKind k)
{
	for (size_t i = 0; i < ARRAY_LEN(rules); i++)
		if (rules[i].kind == k)
			return rules[i].name;
	return "none";
}

const char *on_role_name(OnRole r)
{
	static const char *const n[OR__COUNT] = {
		[OR_MAX] = "max", [OR_EXPSUM] = "sum of exp(x - m)", [OR_CONTRACT] = "contraction",
		[OR_MEAN] = "mean", [OR_M2] = "sum of (x - mean)^2",
	};
	return r < OR__COUNT ? n[r] : "?";
}

typedef struct {
	const Graph *g;
	OnGroup *G;
	const bool *member;      /* per tensor */
	const bool *reads_mem;   /* per definition: a plain definition that reads a member */
	char *msg;
	size_t cap;
	SrcPos *pos;
	int cur;                 /* the member being classified */
} Rc;

/* A frame: the canonical id of each variable of the definition being read through. */
typedef struct {
	int def;
	int canon[IR_MAXVARS];
} Frame;

static int err(Rc *c, SrcPos pos, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int err(Rc *c, SrcPos pos, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(c->msg, c->cap, fmt, ap);
	va_end(ap);
	if (pos.line)
		*c->pos = pos;
	return -1;
}

static const char *tname(const Graph *g, int t)
{
	return g->tensors[t].name;
}

static const char *dname(const Graph *g, int d)
{
	return g->tensors[g->defs[d].out[0]].name;
}

/* Does r read a member (directly or through a plain definition that does)? */
static bool mentions(Rc *c, Ref r)
{
	if (r == REF_NONE)
		return false;
	const Node *n = ir_node(c->g, r);
	if (n->kind == NK_READ) {
		int t = (int)n->u.read.tensor;
		if (c->member[t])
			return true;
		const Tensor *T = &c->g->tensors[t];
		if (T->kind == TK_DEF && c->reads_mem[T->def])
			return true;
		const Ref *ix = ir_read_idx(c->g, n);
		for (uint32_t i = 0; i < n->u.read.n; i++)
			if (mentions(c, ix[i]))
				return true;
		return mentions(c, n->u.read.pad);
	}
	if (n->kind == NK_OP)
		for (int i = 0; i < op_info((Op)n->op)->arity; i++)
			if (mentions(c, n->a[i]))
				return true;
	return false;
}

/* The frame of a read of tensor t's definition at the read's indices, each of which must be
 * a plain variable of f. */
static int sub_frame(Rc *c, const Frame *f, const Node *n, Frame *out)
{
	const Graph *g = c->g;
	int t = (int)n->u.read.tensor;
	const Ref *ix = ir_read_idx(g, n);
	out->def = g->tensors[t].def;
	for (int i = 0; i < IR_MAXVARS; i++)
		out->canon[i] = CANON_NONE;
	for (uint32_t i = 0; i < n->u.read.n; i++) {
		const Node *x = ir_node(g, ix[i]);
		if (x->kind != NK_VAR || f->canon[x->u.var] == CANON_NONE)
			return err(c, n->pos, "online: the read of '%s' inside the pass must be at plain "
				   "indices (a view of a definition that reads a member has no one-pass "
				   "form here)", tname(g, t));
		out->canon[i] = f->canon[x->u.var];
	}
	if (n->u.read.pad != REF_NONE)
		return err(c, n->pos, "online: the read of '%s' has a padding default", tname(g, t));
	return 0;
}

/* A read of member tensor t in frame f: t's base indices must be the frame's. */
static bool member_read_ok(Rc *c, const Frame *f, const Node *n, int role_def)
{
	Frame s;
	if (sub_frame(c, f, n, &s))
		return false;
	const Def *D = &c->g->defs[role_def];
	const OnGroup *G = c->G;
	int mi = -1;
	for (int i = 0; i < G->n; i++)
		if (G->def[i] == role_def)
			mi = i;
	for (int k = 0; k < D->nlhs; k++)
		if (mi < 0 || s.canon[k] != G->map[mi][k]) {
			err(c, n->pos, "online: '%s' reads '%s' at indices that are not its own in the "
			    "pass (each member must read the earlier ones at the same row)",
			    dname(c->g, G->def[c->cur]), tname(c->g, (int)n->u.read.tensor));
			return false;
		}
	return true;
}

static bool is_member_read(Rc *c, Ref r, OnRole role, int *def)
{
	const Node *n = ir_node(c->g, r);
	if (n->kind != NK_READ || !c->member[n->u.read.tensor])
		return false;
	int d = c->g->tensors[n->u.read.tensor].def;
	for (int i = 0; i < c->cur; i++)
		if (c->G->def[i] == d && c->G->role[i] == role) {
			*def = d;
			return true;
		}
	return false;
}

static bool positive_const(const Graph *g, Ref r)
{
	const Node *n = ir_node(g, r);
	if (n->kind == NK_INT)
		return n->u.ival > 0;
	if (n->kind == NK_SIZE)
		return g->sizes[n->u.size].value > 0;
	if (n->kind == NK_OP && (n->op == OP_RSQRT || n->op == OP_SQRT || n->op == OP_EXP))
		return positive_const(g, n->a[0]);
	if (n->kind == NK_OP && (n->op == OP_MUL || n->op == OP_DIV))
		return positive_const(g, n->a[0]) && positive_const(g, n->a[1]);
	return n->kind == NK_NUM && g->lits[n->u.lit].approx > 0;
}

/* exp's argument A - m or (A - m) * c with m the max member at f's row */
static int shift_arg(Rc *c, const Frame *f, Ref r)
{
	const Graph *g = c->g;
	const Node *n = ir_node(g, r);
	Ref scale = REF_NONE;
	if (n->kind == NK_OP && n->op == OP_MUL && positive_const(g, n->a[1]) &&
	    ir_node(g, n->a[0])->kind == NK_OP && ir_node(g, n->a[0])->op == OP_SUB) {
		scale = n->a[1];
		n = ir_node(g, n->a[0]);
	}
	int md;
	if (n->kind != NK_OP || n->op != OP_SUB || mentions(c, n->a[0]) ||
	    !is_member_read(c, n->a[1], OR_MAX, &md))
		return err(c, n->pos, "online: exp's argument must be x - m or (x - m) * c (c a "
			   "positive constant) with m the max of the pass");
	if (!member_read_ok(c, f, ir_node(g, n->a[1]), md))
		return -1;
	if (c->G->scale != REF_NONE && scale != c->G->scale)
		return err(c, n->pos, "online: the scale c of exp((x - m) * c) differs between members");
	c->G->scale = scale;
	return 0;
}

/* The degree of r in exp(x - m): 0 (reads no member), 1, or -1 with the error. */
static int degree(Rc *c, const Frame *f, Ref r)
{
	const Graph *g = c->g;
	if (!mentions(c, r))
		return 0;
	const Node *n = ir_node(g, r);
	if (n->kind == NK_READ) {
		int t = (int)n->u.read.tensor;
		if (c->member[t])
			return err(c, n->pos, "online: '%s' is read outside exp(x - %s)",
				   tname(g, t), tname(g, t));
		Frame s;
		if (sub_frame(c, f, n, &s))
			return -1;
		const Def *D = &g->defs[s.def];
		for (int r2 = 0; r2 < D->nred; r2++)
			s.canon[D->nlhs + r2] = CANON_NONE;
		return degree(c, &s, D->body);
	}
	if (n->kind != NK_OP)
		return err(c, n->pos, "online: no one-pass form for this term");
	int da, db;
	switch (n->op) {
	case OP_EXP:
		return shift_arg(c, f, n->a[0]) ? -1 : 1;
	case OP_NEG:
		return degree(c, f, n->a[0]);
	case OP_MUL:
		if ((da = degree(c, f, n->a[0])) < 0 || (db = degree(c, f, n->a[1])) < 0)
			return -1;
		if (da + db == 1)
			return 1;
		break;
	case OP_DIV:
		if ((da = degree(c, f, n->a[0])) < 0 || (db = degree(c, f, n->a[1])) < 0)
			return -1;
		if (da == 1 && db == 0)
			return 1;
		break;
	case OP_SELECT: {
		const Node *z = ir_node(g, n->a[2]);
		bool zero = (z->kind == NK_INT && z->u.ival == 0) ||
			    (z->kind == NK_NUM && g->lits[z->u.lit].approx == 0);
		if (mentions(c, n->a[0]))
			break;
		if ((da = degree(c, f, n->a[1])) < 0)
			return -1;
		if (da == 1 && zero)
			return 1;
		break;
	}
	default:
		break;
	}
	return err(c, n->pos, "online: a term must be of degree one in exp(x - m) (exp, times or "
		   "divided by what reads no member, c ? term : 0)");
}

/* Structural equality of a (frame fa) and b (frame fb), reading through no definition. */
static bool same(const Graph *g, Ref a, const Frame *fa, Ref b, const Frame *fb)
{
	if (a == REF_NONE || b == REF_NONE)
		return a == b;
	const Node *x = ir_node(g, a), *y = ir_node(g, b);
	if (x->kind != y->kind || x->op != y->op)
		return false;
	switch (x->kind) {
	case NK_VAR:
		return fa->canon[x->u.var] != CANON_NONE && fa->canon[x->u.var] == fb->canon[y->u.var];
	case NK_INT: return x->u.ival == y->u.ival;
	case NK_NUM: return x->u.lit == y->u.lit;
	case NK_SIZE: return x->u.size == y->u.size;
	case NK_READ: {
		if (x->u.read.tensor != y->u.read.tensor || !same(g, x->u.read.pad, fa, y->u.read.pad, fb))
			return false;
		const Ref *ia = ir_read_idx(g, x), *ib = ir_read_idx(g, y);
		for (uint32_t i = 0; i < x->u.read.n; i++)
			if (!same(g, ia[i], fa, ib[i], fb))
				return false;
		return true;
	}
	case NK_OP:
		for (int i = 0; i < op_info((Op)x->op)->arity; i++)
			if (!same(g, x->a[i], fa, y->a[i], fb))
				return false;
		return true;
	}
	return false;
}

/* Finds the first read of an earlier member in r (through plain definitions), giving the
 * member's canonical ids to the variables it is read at. */
static int find_map(Rc *c, Frame *f, const Frame *top, Ref r, bool *found)
{
	const Graph *g = c->g;
	if (r == REF_NONE || *found)
		return 0;
	const Node *n = ir_node(g, r);
	if (n->kind == NK_OP) {
		for (int i = 0; i < op_info((Op)n->op)->arity; i++)
			if (find_map(c, f, top, n->a[i], found))
				return -1;
		return 0;
	}
	if (n->kind != NK_READ)
		return 0;
	int t = (int)n->u.read.tensor;
	const Tensor *T = &g->tensors[t];
	if (T->kind != TK_DEF)
		return 0;
	const Ref *ix = ir_read_idx(g, n);
	if (c->member[t]) {
		int mi = -1;
		for (int i = 0; i < c->cur; i++)
			if (c->G->def[i] == T->def)
				mi = i;
		if (mi < 0)
			return 0;
		/* the variables of f read at member mi's index k stand for mi's canon of k */
		for (uint32_t i = 0; i < n->u.read.n; i++) {
			const Node *x = ir_node(g, ix[i]);
			if (x->kind != NK_VAR)
				return err(c, n->pos, "online: '%s' reads '%s' at an index that is not a "
					   "plain variable", dname(g, c->G->def[c->cur]), tname(g, t));
			f->canon[x->u.var] = c->G->map[mi][i];
		}
		*found = true;
		return 0;
	}
	if (!c->reads_mem[T->def])
		return 0;
	/* through a plain definition: its variable k is the read's index k of ours */
	const Def *D = &g->defs[T->def];
	Frame s = {T->def, {0}};
	for (int i = 0; i < IR_MAXVARS; i++)
		s.canon[i] = CANON_NONE;
	int back[IR_MAXVARS];
	for (uint32_t i = 0; i < n->u.read.n; i++) {
		const Node *x = ir_node(g, ix[i]);
		back[i] = x->kind == NK_VAR ? (int)x->u.var : -1;
		s.canon[i] = 1000 + (int)i;   /* placeholders */
	}
	if (find_map(c, &s, top, D->body, found))
		return -1;
	if (*found)
		for (int i = 0; i < D->nlhs; i++)
			if (back[i] >= 0 && s.canon[i] != 1000 + i && s.canon[i] != CANON_NONE)
				f->canon[back[i]] = s.canon[i];
	return 0;
}

/* Member i's map: its left-hand indices' base ids (from its reads of earlier members). */
static int member_map(Rc *c, int i)
{
	const Graph *g = c->g;
	int d = c->G->def[i];
	const Def *D = &g->defs[d];
	if (i == 0) {
		for (int k = 0; k < D->nlhs; k++)
			c->G->map[0][k] = (int8_t)k;
		return 0;
	}
	Frame f = {d, {0}};
	for (int k = 0; k < IR_MAXVARS; k++)
		f.canon[k] = 1000 + k;
	c->cur = i;
	bool found = false;
	if (find_map(c, &f, &f, D->body, &found))
		return -1;
	if (!found)
		return err(c, D->pos, "online: '%s' reads no earlier member of the pass (%s): it has "
			   "no one-pass form with them", dname(g, d), dname(g, c->G->def[0]));
	const Def *B = &g->defs[c->G->def[0]];
	bool used[IR_MAXRANK] = {0};
	for (int k = 0; k < D->nlhs; k++) {
		int cv = f.canon[k];
		if (cv >= 1000 || cv == CANON_NONE) {
			c->G->map[i][k] = -1;
			continue;
		}
		if (cv < 0 || cv >= B->nlhs || used[cv] || D->lhs[k].ext.value != B->lhs[cv].ext.value)
			return err(c, D->lhs[k].pos, "online: '%s''s index '%s' does not match an index "
				   "of '%s'", dname(g, d), D->lhs[k].name, dname(g, c->G->def[0]));
		used[cv] = true;
		c->G->map[i][k] = (int8_t)cv;
	}
	for (int k = 0; k < B->nlhs; k++)
		if (!used[k])
			return err(c, D->pos, "online: '%s' does not run over '%s''s index '%s'",
				   dname(g, d), dname(g, c->G->def[0]), B->lhs[k].name);
	return 0;
}

static void top_frame(const OnGroup *G, int i, const Def *D, Frame *f)
{
	f->def = G->def[i];
	for (int k = 0; k < IR_MAXVARS; k++)
		f->canon[k] = CANON_NONE;
	for (int k = 0; k < D->nlhs; k++)
		f->canon[k] = G->map[i][k] >= 0 ? G->map[i][k] : CANON_OWN + k;
	f->canon[D->nlhs] = CANON_RED;
}

/* A constant count: N of x / N, equal to the number of terms of D's range. */
static bool count_of(const Graph *g, const Def *D, Ref r)
{
	const Node *n = ir_node(g, r), *lo = ir_node(g, D->red[0].lo), *hi = ir_node(g, D->red[0].hi);
	int64_t v, a, b;
	if (n->kind == NK_INT)
		v = n->u.ival;
	else if (n->kind == NK_SIZE)
		v = g->sizes[n->u.size].value;
	else
		return false;
	if (lo->kind == NK_INT) a = lo->u.ival; else if (lo->kind == NK_SIZE) a = g->sizes[lo->u.size].value; else return false;
	if (hi->kind == NK_INT) b = hi->u.ival; else if (hi->kind == NK_SIZE) b = g->sizes[hi->u.size].value; else return false;
	return b - a == v && v > 0;
}

/* The role of member i. */
static int classify(Rc *c, int i)
{
	const Graph *g = c->g;
	OnGroup *G = c->G;
	int d = G->def[i];
	const Def *D = &g->defs[d];
	Frame f;
	top_frame(G, i, D, &f);
	c->cur = i;
	if (D->monoid == MO_MAX) {
		if (mentions(c, D->body))
			return err(c, D->pos, "online: the max '%s' reads another member", dname(g, d));
		G->role[i] = OR_MAX;
		return 0;
	}
	const Node *b = ir_node(g, D->body);
	bool has_max = false, has_sum = false, has_mean = false;
	for (int k = 0; k < i; k++) {
		has_max |= G->role[k] == OR_MAX;
		has_sum |= G->role[k] == OR_EXPSUM;
		has_mean |= G->role[k] == OR_MEAN;
	}
	if (!mentions(c, D->body)) {
		if (b->kind == NK_OP && b->op == OP_DIV && count_of(g, D, b->a[1])) {
			G->role[i] = OR_MEAN;
			G->x = b->a[0];
			return 0;
		}
		return err(c, D->pos, "online: '%s' reads no member and is not a mean x / N (N the "
			   "number of terms): no one-pass form (the forms: max then sum of exp(x - m) "
			   "[then sum p * v / l]; mean then sum of (x - mean)^2 / N)", dname(g, d));
	}
	if (has_mean) {
		/* (X - mu) * (X - mu) / N */
		int mu;
		const Node *p = b->kind == NK_OP && b->op == OP_DIV ? ir_node(g, b->a[0]) : NULL;
		const Node *s0 = p && p->kind == NK_OP && p->op == OP_MUL ? ir_node(g, p->a[0]) : NULL;
		const Node *s1 = s0 ? ir_node(g, p->a[1]) : NULL;
		int mi = 0;
		for (int k = 0; k < i; k++)
			if (G->role[k] == OR_MEAN)
				mi = k;
		Frame fm;
		top_frame(G, mi, &g->defs[G->def[mi]], &fm);
		if (!s0 || !count_of(g, D, b->a[1]) || p->a[0] != p->a[1] || s0->kind != NK_OP ||
		    s0->op != OP_SUB || !is_member_read(c, s0->a[1], OR_MEAN, &mu) ||
		    !same(g, s0->a[0], &f, G->x, &fm) || s1 != s0)
			return err(c, D->pos, "online: '%s' is not (x - mu) * (x - mu) / N over the mean's x "
				   "and N the number of terms: Welford needs that form", dname(g, d));
		if (!member_read_ok(c, &f, ir_node(g, s0->a[1]), mu))
			return -1;
		G->role[i] = OR_M2;
		return 0;
	}
	if (!has_max)
		return err(c, D->pos, "online: '%s' reads a member but the pass has no max or mean it "
			   "could rescale by (online softmax needs the max m in the set)", dname(g, d));
	int ld;
	if (b->kind == NK_OP && b->op == OP_DIV && is_member_read(c, b->a[1], OR_EXPSUM, &ld)) {
		if (!member_read_ok(c, &f, ir_node(g, b->a[1]), ld))
			return -1;
		int dg = degree(c, &f, b->a[0]);
		if (dg < 0)
			return -1;
		if (dg != 1)
			return err(c, D->pos, "online: the contraction '%s' does not read exp(x - m)",
				   dname(g, d));
		G->role[i] = OR_CONTRACT;
		G->num = b->a[0];
		return 0;
	}
	if (b->kind == NK_OP && b->op == OP_DIV && !has_sum && ir_node(g, b->a[1])->kind == NK_READ &&
	    mentions(c, b->a[1]))
		return err(c, D->pos, "online: '%s' divides by '%s', which is not the sum of exp in "
			   "this pass: flash attention needs max, sum of exp(x - m) and the "
			   "contraction together (online m, l, o)", dname(g, d),
			   tname(g, (int)ir_node(g, b->a[1])->u.read.tensor));
	int dg = degree(c, &f, D->body);
	if (dg < 0)
		return -1;
	if (dg != 1)
		return err(c, D->pos, "online: '%s' is not of degree one in exp(x - m)", dname(g, d));
	G->role[i] = has_sum ? OR_CONTRACT : OR_EXPSUM;
	if (has_sum)
		return err(c, D->pos, "online: '%s' is a second sum of exp; a contraction must be "
			   "num / l with l the sum of exp", dname(g, d));
	return 0;
}

/* Same reduction range as the base (canonical variables). */
static int same_range(Rc *c, int i)
{
	const Graph *g = c->g;
	const OnGroup *G = c->G;
	const Def *B = &g->defs[G->def[0]], *D = &g->defs[G->def[i]];
	Frame fb, fd;
	top_frame(G, 0, B, &fb);
	top_frame(G, i, D, &fd);
	if (!same(g, B->red[0].lo, &fb, D->red[0].lo, &fd) || !same(g, B->red[0].hi, &fb, D->red[0].hi, &fd))
		return err(c, D->red[0].pos, "online: '%s' reduces over another range than '%s' (one "
			   "pass runs over one index range)", dname(g, G->def[i]), dname(g, G->def[0]));
	return 0;
}

static const OnRule *match(const OnGroup *G)
{
	for (size_t r = 0; r < ARRAY_LEN(rules); r++) {
		if (rules[r].n != G->n)
			continue;
		bool ok = true;
		for (int i = 0; i < G->n; i++)
			ok &= rules[r].roles[i] == G->role[i];
		if (ok)
			return &rules[r];
	}
	return NULL;
}

/* What the roles lack, for the error of a set with no rule. */
static void missing(const OnGroup *G, char *buf, size_t cap)
{
	bool has[OR__COUNT] = {0};
	for (int i = 0; i < G->n; i++)
		has[G->role[i]] = true;
	if (has[OR_MAX] && !has[OR_EXPSUM])
		snprintf(buf, cap, "a max alone: online softmax needs the sum of exp(x - m) over the "
			 "same range in the set");
	else if (has[OR_MEAN] && !has[OR_M2])
		snprintf(buf, cap, "a mean alone: Welford needs the sum of (x - mean)^2 / N in the set");
	else
		snprintf(buf, cap, "the forms are: max, sum of exp (online softmax); max, sum of exp, "
			 "contraction (flash attention); mean, sum of squares (Welford)");
}

int on_recognise(const Graph *g, const Directive *x, OnGroup *G, SrcPos *pos, char *msg,
		 size_t cap)
{
	memset(G, 0, sizeof *G);
	*pos = x->pos;
	bool *member = calloc((size_t)g->ntensors + 1, sizeof *member);
	bool *rm = calloc((size_t)g->ndefs + 1, sizeof *rm);
	IR_ASSERT(member && rm);
	Rc c = {g, G, member, rm, msg, cap, pos, 0};
	int rc = -1;
	/* members in file order */
	for (int d = 0; d < g->ndefs; d++)
		for (int a = 0; a < x->nargs; a++)
			if (ir_find_def(g, x->args[a].name) == d)
				G->def[G->n++] = d;
	for (int i = 0; i < G->n; i++) {
		const Def *D = &g->defs[G->def[i]];
		*pos = x->args[0].pos;
		for (int a = 0; a < x->nargs; a++)
			if (ir_find_def(g, x->args[a].name) == G->def[i])
				*pos = x->args[a].pos;
		if ((D->monoid != MO_MAX && D->monoid != MO_SUM) || D->ty != TY_REAL) {
			err(&c, (SrcPos){0}, "online: '%s' is %s; a one-pass member is a real max or sum",
			    dname(g, G->def[i]), D->monoid == MO_NONE ? "not a reduction" : "another reduction");
			goto out;
		}
		if (D->nred != 1) {
			err(&c, (SrcPos){0}, "online: '%s' has %d reduction indices; a pass runs over one",
			    dname(g, G->def[i]), D->nred);
			goto out;
		}
		member[D->out[0]] = true;
	}
	*pos = x->pos;
	if (G->n < 2) {
		const Def *D = &g->defs[G->def[0]];
		err(&c, x->pos, "online: one reduction alone has no one-pass form (%s)",
		    D->monoid == MO_MAX ? "a max alone: online softmax needs the sum of exp(x - m) "
		    "over the same range in the set" : "a sum alone: it is one pass already; Welford "
		    "needs a mean and the sum of (x - mean)^2 / N, online softmax a max and a sum of exp");
		goto out;
	}
	/* plain definitions that read a member (directly or not), in file order */
	for (int d = 0; d < g->ndefs; d++) {
		if (member[g->defs[d].out[0]] || g->defs[d].monoid != MO_NONE)
			continue;
		rm[d] = mentions(&c, g->defs[d].body);
	}
	for (int i = 0; i < G->n; i++)
		if (member_map(&c, i) || same_range(&c, i) || classify(&c, i))
			goto out;
	const OnRule *r = match(G);
	if (!r) {
		char why[256];
		missing(G, why, sizeof why);
		err(&c, (SrcPos){0}, "online: no one-pass form for this set (%s)", why);
		goto out;
	}
	G->kind = (uint8_t)r->kind;
	rc = 0;
out:
	free(member);
	free(rm);
	return rc;
}
