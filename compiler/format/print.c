/* compiler/format/print.c: the canonical text of a graph, and structural equality of graphs.
 *
 * The canonical form is fully determined by the graph: `graph`, then one `size` statement
 * with every size, a blank line, the inputs and definitions in tensor order (one per line),
 * a blank line and one `output` statement with every output and its format, then the
 * schedule block if there is one. Spacing is fixed (`a + b`, `x[i, j]`, `i:N`, `j: 0..i + 1`,
 * `c ? a : b`, `x[i] ?? 0`); parentheses are the minimum the precedence of graph-format.md
 * section 5 needs, plus two for readability that the parser reads back to the same tree:
 * around a `*` `/` `%` operand of a different one of `%` and `* /` (`(2 * d) % D`), and
 * around a unary operand of a unary operator (`-(-x)`). Literals print as written.
 *
 * Invariants: parse(print(g)) is ir_graph_equal to g for every graph that passes ir_check,
 * and print(parse(print(g))) == print(g).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "lex.h"

typedef struct {
	char *s;
	size_t n, cap;
} Buf;

static void put(Buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(Buf *b, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int k = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	IR_ASSERT(k >= 0);
	if (b->n + (size_t)k + 1 > b->cap) {
		size_t c = b->cap ? b->cap : 256;
		while (b->n + (size_t)k + 1 > c)
			c *= 2;
		char *s = realloc(b->s, c);
		IR_ASSERT(s);
		b->s = s;
		b->cap = c;
	}
	va_start(ap, fmt);
	vsnprintf(b->s + b->n, (size_t)k + 1, fmt, ap);
	va_end(ap);
	b->n += (size_t)k;
}

static char *finish(Buf *b)
{
	if (!b->s)
		put(b, "%s", "");
	return b->s;
}

static const char *const dir_names[SD__COUNT] = {
	[SD_STORE] = "store", [SD_ACCUM] = "accum", [SD_INLINE] = "inline",
	[SD_TILE] = "tile", [SD_SPLIT] = "split", [SD_ORDER] = "order", [SD_ONLINE] = "online", [SD_MMA] = "mma",
};

const char *fe_dir_name(DirKind k)
{
	return k < SD__COUNT ? dir_names[k] : "?";
}

/* ------------------------------------------------------------ expressions */

typedef struct {
	const Graph *g;
	int def;
	Buf *b;
} Pr;

/* Binding strength: 1 ?:, 2 ||, 3 &&, 4 comparisons, 5 + -, 6 * / %, 7 unary, 8 primary. */
static int prec(const Graph *g, Ref r)
{
	const Node *n = &g->nodes[r];
	if (n->kind == NK_INT)
		return n->u.ival < 0 ? 7 : 8;
	if (n->kind != NK_OP)
		return 8;
	switch (n->op) {
	case OP_SELECT: return 1;
	case OP_OR: return 2;
	case OP_AND: return 3;
	case OP_EQ: case OP_NE: case OP_LT: case OP_LE: case OP_GT: case OP_GE: return 4;
	case OP_ADD: case OP_SUB: return 5;
	case OP_MUL: case OP_DIV: case OP_IDIV: case OP_MOD: return 6;
	case OP_NEG: case OP_NOT: return 7;
	default: return 8;
	}
}

static bool is_op(const Graph *g, Ref r, Op op)
{
	return g->nodes[r].kind == NK_OP && g->nodes[r].op == op;
}

static void pexpr(Pr *p, Ref r);

static void psub(Pr *p, Ref r, bool paren)
{
	if (paren)
		put(p->b, "(");
	pexpr(p, r);
	if (paren)
		put(p->b, ")");
}

static const char *var_name(const Pr *p, uint32_t v)
{
	if (p->def < 0 || p->def >= p->g->ndefs)
		return NULL;
	const Def *D = &p->g->defs[p->def];
	if ((int)v < D->nlhs)
		return D->lhs[v].name;
	if ((int)v < D->nlhs + D->nred)
		return D->red[v - (uint32_t)D->nlhs].name;
	return NULL;
}

/* `?? DEFAULT`: one primary, or a literal with a leading minus. */
static void ppad(Pr *p, Ref r)
{
	const Node *n = &p->g->nodes[r];
	bool lit_neg = n->kind == NK_OP && n->op == OP_NEG && p->g->nodes[n->a[0]].kind == NK_NUM;
	psub(p, r, prec(p->g, r) < 8 && !lit_neg && n->kind != NK_INT);
}

static void pread(Pr *p, const Node *n)
{
	const Graph *g = p->g;
	put(p->b, "%s[", n->u.read.tensor < (uint32_t)g->ntensors ? g->tensors[n->u.read.tensor].name : "?");
	for (uint32_t k = 0; k < n->u.read.n; k++) {
		put(p->b, k ? ", " : "");
		pexpr(p, ir_read_idx(g, n)[k]);
	}
	put(p->b, "]");
	if (n->u.read.pad) {
		put(p->b, " ?\? ");
		ppad(p, n->u.read.pad);
	}
}

static bool mulmod_clash(const Graph *g, Ref parent, Ref child)
{
	return prec(g, parent) == 6 && prec(g, child) == 6 &&
	       is_op(g, child, OP_MOD) != is_op(g, parent, OP_MOD);
}

static void pop(Pr *p, Ref r)
{
	const Graph *g = p->g;
	const Node *n = &g->nodes[r];
	const OpInfo *oi = op_info((Op)n->op);
	if (n->op == OP_SELECT) {
		psub(p, n->a[0], prec(g, n->a[0]) <= 1);
		put(p->b, " ? ");
		psub(p, n->a[1], prec(g, n->a[1]) <= 1);
		put(p->b, " : ");
		pexpr(p, n->a[2]);
	} else if (oi->flags & OPF_PREFIX) {
		Ref a = n->a[0];
		put(p->b, "%s", oi->spelling);
		/* -(5) stays the negation of 5; -5 would read back as the literal -5 */
		psub(p, a, prec(g, a) <= 7 || (n->op == OP_NEG && g->nodes[a].kind == NK_INT));
	} else if (oi->flags & OPF_INFIX) {
		int pr = prec(g, r);
		psub(p, n->a[0], prec(g, n->a[0]) < pr || mulmod_clash(g, r, n->a[0]));
		put(p->b, " %s ", oi->spelling);
		psub(p, n->a[1], prec(g, n->a[1]) <= pr || mulmod_clash(g, r, n->a[1]));
	} else {
		put(p->b, "%s(", oi->spelling);
		for (int k = 0; k < oi->arity; k++) {
			put(p->b, k ? ", " : "");
			pexpr(p, n->a[k]);
		}
		put(p->b, ")");
	}
}

static void pexpr(Pr *p, Ref r)
{
	const Graph *g = p->g;
	if (r == REF_NONE || r >= g->nnodes) {
		put(p->b, "?");
		return;
	}
	const Node *n = &g->nodes[r];
	switch (n->kind) {
	case NK_NUM:
		put(p->b, "%s", n->u.lit < g->nlits ? g->lits[n->u.lit].text : "?");
		break;
	case NK_INT:
		put(p->b, "%lld", (long long)n->u.ival);
		break;
	case NK_VAR: {
		const char *s = var_name(p, n->u.var);
		if (s)
			put(p->b, "%s", s);
		else
			put(p->b, "$%u", n->u.var);
		break;
	}
	case NK_SIZE:
		put(p->b, "%s", n->u.size < (uint32_t)g->nsizes ? g->sizes[n->u.size].name : "?");
		break;
	case NK_READ:
		pread(p, n);
		break;
	case NK_OP:
		if (n->op < OP__COUNT)
			pop(p, r);
		else
			put(p->b, "?");
		break;
	default:
		put(p->b, "?");
	}
}

char *ir_print_expr(const Graph *g, int def, Ref r)
{
	Buf b = {0};
	Pr p = {g, def, &b};
	pexpr(&p, r);
	return finish(&b);
}

/* ------------------------------------------------------------ statements */

static void pextent(Buf *b, const Graph *g, const Extent *e)
{
	if (e->size >= 0 && e->size < g->nsizes)
		put(b, "%s", g->sizes[e->size].name);
	else
		put(b, "%lld", (long long)e->value);
}

static void plhs(Buf *b, const Graph *g, const Def *D, const Tensor *T)
{
	put(b, "%s[", T->name);
	for (int k = 0; k < D->nlhs; k++) {
		put(b, "%s%s:", k ? ", " : "", D->lhs[k].name);
		pextent(b, g, &T->dims[k]);
	}
	put(b, "]");
}

static void pdef(Buf *b, const Graph *g, int d)
{
	const Def *D = &g->defs[d];
	Pr p = {g, d, b};
	plhs(b, g, D, &g->tensors[D->out[0]]);
	if (D->nout == 2) {
		put(b, ", ");
		plhs(b, g, D, &g->tensors[D->out[1]]);
	}
	put(b, " = ");
	if (D->monoid != MO_NONE) {
		put(b, "%s(", monoid_name(D->monoid));
		for (int r = 0; r < D->nred; r++) {
			put(b, "%s%s:", r ? ", " : "", D->red[r].name);
			if (D->red[r].full) {
				pexpr(&p, D->red[r].hi);
			} else {
				put(b, " ");
				pexpr(&p, D->red[r].lo);
				put(b, "..");
				pexpr(&p, D->red[r].hi);
			}
		}
		put(b, ") ");
	}
	pexpr(&p, D->body);
	put(b, "\n");
}

static void pdirective(Buf *b, const Directive *X)
{
	put(b, "%s %s", fe_dir_name((DirKind)X->kind), X->target);
	switch (X->kind) {
	case SD_ONLINE:
		for (int a = 1; a < X->nargs; a++)
			put(b, ", %s", X->args[a].name);
		break;
	case SD_STORE: case SD_ACCUM:
		put(b, " : %s", dt_name(X->fmt));
		break;
	case SD_TILE: case SD_SPLIT: case SD_MMA:
		for (int a = 0; a < X->nargs; a++)
			put(b, "%s%s=%lld", a ? ", " : " : ", X->args[a].name, (long long)X->args[a].value);
		break;
	case SD_ORDER:
		put(b, " : %s", order_name(X->order));
		break;
	default:
		break;
	}
	put(b, "\n");
}

char *ir_print(const Graph *g)
{
	Buf b = {0};
	bool head = false;
	if (g->name) {
		put(&b, "graph %s\n", g->name);
		head = true;
	}
	for (int s = 0; s < g->nsizes; s++)
		put(&b, "%s%s = %lld%s", s ? ", " : "size ", g->sizes[s].name,
		    (long long)g->sizes[s].value, s == g->nsizes - 1 ? "\n" : "");
	head |= g->nsizes > 0;
	if (head && g->ntensors)
		put(&b, "\n");
	for (int t = 0; t < g->ntensors; t++) {
		const Tensor *T = &g->tensors[t];
		if (T->kind == TK_INPUT) {
			put(&b, "input %s : %s[", T->name, dt_name((Dtype)T->dtype));
			for (int k = 0; k < T->rank; k++) {
				put(&b, k ? ", " : "");
				pextent(&b, g, &T->dims[k]);
			}
			put(&b, "]\n");
		} else if (T->result == 0 && T->def >= 0 && T->def < g->ndefs) {
			pdef(&b, g, T->def);
		}
	}
	for (int k = 0; k < g->noutputs; k++)
		put(&b, "%s%s : %s%s", k ? ", " : "\noutput ", g->tensors[g->outputs[k].tensor].name,
		    dt_name(g->outputs[k].dtype), k == g->noutputs - 1 ? "\n" : "");
	if (g->has_schedule || g->ndirs) {
		put(&b, "\nschedule\n");
		for (int k = 0; k < g->ndirs; k++)
			pdirective(&b, &g->dirs[k]);
	}
	return finish(&b);
}

/* ---------------------------------------------------------------- equality */

typedef struct {
	const Graph *a, *b;
	Ref *memo;   /* memo[x] == y: x of a is proven equal to y of b */
} Eq;

static bool streq(const char *x, const char *y)
{
	return x == y || (x && y && strcmp(x, y) == 0);
}

static bool eeq(Eq *q, Ref x, Ref y)
{
	if (!x || !y)
		return x == y;
	if (x >= q->a->nnodes || y >= q->b->nnodes)
		return false;
	if (q->memo[x] == y)
		return true;
	const Node *m = &q->a->nodes[x], *n = &q->b->nodes[y];
	if (m->kind != n->kind || m->ty != n->ty || m->op != n->op)
		return false;
	switch (m->kind) {
	case NK_NUM:
		if (!streq(q->a->lits[m->u.lit].text, q->b->lits[n->u.lit].text))
			return false;
		break;
	case NK_INT: if (m->u.ival != n->u.ival) return false; break;
	case NK_VAR: if (m->u.var != n->u.var) return false; break;
	case NK_SIZE: if (m->u.size != n->u.size) return false; break;
	case NK_READ:
		if (m->u.read.tensor != n->u.read.tensor || m->u.read.n != n->u.read.n ||
		    !eeq(q, m->u.read.pad, n->u.read.pad))
			return false;
		for (uint32_t k = 0; k < m->u.read.n; k++)
			if (!eeq(q, ir_read_idx(q->a, m)[k], ir_read_idx(q->b, n)[k]))
				return false;
		break;
	case NK_OP:
		for (int k = 0; k < 3; k++)
			if (!eeq(q, m->a[k], n->a[k]))
				return false;
		break;
	}
	q->memo[x] = y;
	return true;
}

static bool extent_eq(const Extent *x, const Extent *y)
{
	return x->size == y->size && x->value == y->value;
}

static bool tensors_eq(const Graph *a, const Graph *b)
{
	if (a->ntensors != b->ntensors)
		return false;
	for (int t = 0; t < a->ntensors; t++) {
		const Tensor *x = &a->tensors[t], *y = &b->tensors[t];
		if (!streq(x->name, y->name) || x->kind != y->kind || x->dtype != y->dtype ||
		    x->rank != y->rank || x->def != y->def || x->result != y->result)
			return false;
		for (int k = 0; k < x->rank; k++)
			if (!extent_eq(&x->dims[k], &y->dims[k]))
				return false;
	}
	return true;
}

static bool def_eq(Eq *q, const Def *x, const Def *y)
{
	if (x->nout != y->nout || x->out[0] != y->out[0] || (x->nout == 2 && x->out[1] != y->out[1]) ||
	    x->nlhs != y->nlhs || x->monoid != y->monoid || x->nred != y->nred || x->ty != y->ty ||
	    !eeq(q, x->body, y->body))
		return false;
	for (int k = 0; k < x->nlhs; k++)
		if (!streq(x->lhs[k].name, y->lhs[k].name) || !extent_eq(&x->lhs[k].ext, &y->lhs[k].ext))
			return false;
	for (int r = 0; r < x->nred; r++)
		if (!streq(x->red[r].name, y->red[r].name) || x->red[r].full != y->red[r].full ||
		    !eeq(q, x->red[r].lo, y->red[r].lo) || !eeq(q, x->red[r].hi, y->red[r].hi))
			return false;
	return true;
}

static bool dirs_eq(const Graph *a, const Graph *b)
{
	if (a->has_schedule != b->has_schedule || a->ndirs != b->ndirs)
		return false;
	for (int k = 0; k < a->ndirs; k++) {
		const Directive *x = &a->dirs[k], *y = &b->dirs[k];
		if (x->kind != y->kind || !streq(x->target, y->target) || x->nargs != y->nargs ||
		    ((x->kind == SD_STORE || x->kind == SD_ACCUM) && x->fmt != y->fmt) ||
		    (x->kind == SD_ORDER && x->order != y->order))
			return false;
		for (int i = 0; i < x->nargs; i++)
			if (!streq(x->args[i].name, y->args[i].name) || x->args[i].value != y->args[i].value)
				return false;
	}
	return true;
}

bool ir_graph_equal(const Graph *a, const Graph *b)
{
	if (!streq(a->name, b->name) || a->nsizes != b->nsizes || a->ndefs != b->ndefs ||
	    a->noutputs != b->noutputs || !tensors_eq(a, b) || !dirs_eq(a, b))
		return false;
	for (int s = 0; s < a->nsizes; s++)
		if (!streq(a->sizes[s].name, b->sizes[s].name) || a->sizes[s].value != b->sizes[s].value)
			return false;
	for (int k = 0; k < a->noutputs; k++)
		if (a->outputs[k].tensor != b->outputs[k].tensor || a->outputs[k].dtype != b->outputs[k].dtype)
			return false;
	Eq q = {a, b, calloc(a->nnodes + 1, sizeof(Ref))};
	IR_ASSERT(q.memo);
	bool eq = true;
	for (int d = 0; d < a->ndefs && eq; d++)
		eq = def_eq(&q, &a->defs[d], &b->defs[d]);
	free(q.memo);
	return eq;
}
