/* compiler/sched/grad.c: derived gradients, reverse mode over comprehensions as graph rewriting
 * (docs/grad.md; spec/cli.md v2 "Gradient graphs").
 *
 * gr_derive builds a graph that computes the vector-Jacobian product of a graph G: G's
 * inputs plus a cotangent `d_y` for each real output y, G's definitions (those the
 * gradient reads), and for each definition, in reverse file order, its adjoint: the sum of
 * one contribution per (consumer, read). A contribution is itself a comprehension over the
 * read tensor's shape. For the read x[e_0, ..., e_n-1] of a consumer Y[lhs] = M(red) body,
 *
 *   contribution[u_0, ..., u_n-1] = sum(free) guard ? W * d body / d x[e] : 0
 *
 * where W is the monoid's weight (the cotangent of Y; masked for max and min, softmax
 * weights for logsumexp, the chosen index for topk), and the equations e_p = u_p are
 * solved where an index has a variable with coefficient +-1 (transposes, offsets, windows,
 * and reshapes once v / c and v % c are split into v = c*q + s). What is not solved is a
 * condition in the guard (strides, indirect reads: the scatter-add over an index table), and
 * the variables left (free) are summed over their bounding box; the guard also holds every
 * range of the consumer. Reads that may fall outside the box get `?? 0`: they are only ever
 * used where the guard holds. A padded read contributes only inside the tensor, which is all
 * the contribution's left-hand side ranges over.
 *
 * The partial derivatives of the op table are ops.def's grad column, .tg text parsed once per
 * derivation into a template graph. Structural zeros are never built (a constant term has
 * no derivative, whatever its value: the convention docs/grad.md states); the result is then
 * simplified by the exact and integer rules of rewrite.c, printed and parsed back, so it is
 * an ordinary checked graph.
 *
 * Ownership: gr_derive and gr_dirgraph return a graph the caller frees; they never modify
 * their input. Failure: NULL with d (code 2 for a graph whose gradient this derivation does
 * not support, code 3 for its own bugs: a derived graph that does not parse back).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../compiler.h"
#include "../format/lex.h"

enum { UVAR = 64, MAXW = 40, MAXREADS = 64 };

/* 2/sqrt(pi) (erf's derivative), to 100 significant digits */
static const char two_sqrtpi[] =
	"1.128379167095512573896158903121545171688101258657997713688171443421284936882986828973487320404214727";

/* -------------------------------------------------------------- copying */

/* One expression copied from src into dst: tensors through tmap, variables through vmap,
 * reads of a template's operand tensors replaced by targ, casts dropped when strip, and
 * `v / c`, `v % c` replaced by the split variables of dm. */
typedef struct {
	const Graph *src;
	Graph *dst;
	int *tmap;              /* src tensor -> dst tensor, or NULL: the same id */
	const Ref *vmap;        /* src var -> dst expression (REF_NONE: the same var), or NULL */
	const Ref *targ;        /* template: a read of src tensor k is targ[k], or NULL */
	bool strip;
	int ndm;
	struct { uint32_t var; Ref c; Ref q, s; } dm[IR_MAXVARS];
	Ref *memo;
} Xl;

static Ref xl_rec(Xl *x, Ref r)
{
	if (!r)
		return REF_NONE;
	if (x->memo[r])
		return x->memo[r];
	Node n = *ir_node(x->src, r);   /* by value: dst may be src, and grow */
	Graph *h = x->dst;
	Ref out = REF_NONE;
	switch (n.kind) {
	case NK_NUM: {
		const char *t = x->src->lits[n.u.lit].text;
		out = ir_num(h, t, strlen(t));
		break;
	}
	case NK_INT: out = ir_int(h, n.u.ival); break;
	case NK_SIZE: out = ir_size(h, n.u.size); break;
	case NK_VAR:
		out = x->vmap && x->vmap[n.u.var] ? x->vmap[n.u.var] : ir_var(h, n.u.var, (Ty)n.ty);
		break;
	case NK_READ: {
		if (x->targ) {
			out = x->targ[n.u.read.tensor];
			break;
		}
		Ref idx[IR_MAXRANK];
		const Ref *ix = &x->src->refs[n.u.read.first];
		Ref ixv[IR_MAXRANK];
		memcpy(ixv, ix, n.u.read.n * sizeof *ix);
		for (uint32_t i = 0; i < n.u.read.n; i++)
			idx[i] = xl_rec(x, ixv[i]);
		Ref pad = xl_rec(x, n.u.read.pad);
		int t = x->tmap ? x->tmap[n.u.read.tensor] : (int)n.u.read.tensor;
		IR_ASSERT(t >= 0);
		out = ir_read(h, (uint32_t)t, idx, n.u.read.n, pad, (Ty)n.ty);
		break;
	}
	case NK_OP: {
		/* a cast of an integer stays: it is what makes the value a real (stripped, an
		 * integer product could overflow 32 bits where the real one is exact) */
		if (x->strip && (op_info((Op)n.op)->flags & OPF_CAST) &&
		    ir_node(x->src, n.a[0])->ty != TY_INT) {
			out = xl_rec(x, n.a[0]);
			break;
		}
		if ((n.op == OP_IDIV || n.op == OP_MOD) && ir_node(x->src, n.a[0])->kind == NK_VAR) {
			uint32_t v = ir_node(x->src, n.a[0])->u.var;
			for (int k = 0; k < x->ndm && !out; k++)
				if (x->dm[k].var == v && x->dm[k].c == n.a[1])
					out = n.op == OP_IDIV ? x->dm[k].q : x->dm[k].s;
			if (out)
				break;
		}
		Ref a[3];
		for (int i = 0; i < 3; i++)
			a[i] = xl_rec(x, n.a[i]);
		out = ir_op(h, (Op)n.op, (Ty)n.ty, a[0], a[1], a[2]);
		break;
	}
	}
	x->memo[r] = out;
	return out;
}

static Ref xl(Xl *x, Ref r)
{
	x->memo = calloc(x->src->nnodes + 1, sizeof(Ref));
	IR_ASSERT(x->memo);
	Ref out = xl_rec(x, r);
	free(x->memo);
	x->memo = NULL;
	return out;
}

/* r in h with variables replaced by vmap (and dm's splits, when x is given). */
static Ref subst(Graph *h, Ref r, const Ref *vmap, const Xl *dm)
{
	Xl x = {0};
	if (dm)
		x = *dm;
	x.src = h;
	x.dst = h;
	x.vmap = vmap;
	x.tmap = NULL;
	x.targ = NULL;
	return xl(&x, r);
}

/* ------------------------------------------------------------ builders */

static bool is_int(const Graph *h, Ref r, int64_t v)
{
	const Node *n = ir_node(h, r);
	if (n->kind == NK_INT)
		return n->u.ival == v;
	if (n->kind != NK_NUM)
		return false;
	const char *t = h->lits[n->u.lit].text;
	return (v == 0 && strcmp(t, "0") == 0) || (v == 1 && strcmp(t, "1") == 0);
}

static Ref mkop(Graph *h, Op op, Ref a, Ref b, Ref c)
{
	return ir_op(h, op, ck_op_type(h, op, a, b, c), a, b, c);
}

static Ref zero(Graph *h);

/* a * b, REF_NONE standing for a structural zero. A factor `c ? e : 0` (a mask: max's
 * chosen terms, a select's arm) is distributed, c ? a * e : 0, so that the masked-out
 * terms are exactly 0 even where the other factor is infinite (never 0 * inf). */
static Ref mul(Graph *h, Ref a, Ref b)
{
	if (!a || !b || is_int(h, a, 0) || is_int(h, b, 0))
		return REF_NONE;
	for (int k = 0; k < 2; k++) {
		Ref m = k ? b : a, o = k ? a : b;
		const Node *n = ir_node(h, m);
		if (n->kind == NK_OP && n->op == OP_SELECT &&
		    (is_int(h, n->a[1], 0) || is_int(h, n->a[2], 0))) {
			Node s = *n;
			Ref x = mul(h, o, s.a[1]), y = mul(h, o, s.a[2]);
			if (!x && !y)
				return REF_NONE;
			return mkop(h, OP_SELECT, s.a[0], x ? x : zero(h), y ? y : zero(h));
		}
	}
	if (is_int(h, a, 1))
		return b;
	if (is_int(h, b, 1))
		return a;
	if (is_int(h, a, -1))
		return mkop(h, OP_NEG, b, 0, 0);
	if (is_int(h, b, -1))
		return mkop(h, OP_NEG, a, 0, 0);
	return mkop(h, OP_MUL, a, b, 0);
}

static Ref add(Graph *h, Ref a, Ref b)
{
	if (!a)
		return b;
	if (!b)
		return a;
	return mkop(h, OP_ADD, a, b, 0);
}

static Ref zero(Graph *h)
{
	return ir_int(h, 0);
}

static Ref select3(Graph *h, Ref c, Ref a, Ref b)
{
	return mkop(h, OP_SELECT, c, a ? a : zero(h), b ? b : zero(h));
}

static Ref read_at(Graph *h, int t, const Ref *idx, int n)
{
	return ir_read(h, (uint32_t)t, idx, (uint32_t)n, REF_NONE, ck_read_type(h, t, REF_NONE));
}

/* ------------------------------------------------------------ the context */

typedef struct {
	int *t;
	int n, cap;
} IdList;

typedef struct {
	const Graph *g;        /* the graph derived */
	Graph *h;              /* the gradient being built */
	GradOpts o;
	Diag *d;
	int *tmap;             /* g tensor -> h tensor */
	int *htog;             /* h tensor -> g tensor, -1 for the gradient's own */
	int nhtog;
	IdList *contrib;       /* per g tensor: the h tensors whose sum is its adjoint */
	Graph *tg;             /* templates: one graph of every op's partials, parsed lazily */
	Ref tmpl[OP__COUNT][3];
	bool have_tmpl[OP__COUNT];
	int failed;
} Gx;

static void push(IdList *l, int t)
{
	if (l->n == l->cap) {
		l->cap = l->cap ? 2 * l->cap : 4;
		l->t = realloc(l->t, (size_t)l->cap * sizeof *l->t);
		IR_ASSERT(l->t);
	}
	l->t[l->n++] = t;
}

static void note_tensor(Gx *x, int ht, int gt)
{
	if (ht >= x->nhtog) {
		int n = 2 * ht + 16;
		x->htog = realloc(x->htog, (size_t)n * sizeof *x->htog);
		IR_ASSERT(x->htog);
		for (int i = x->nhtog; i < n; i++)
			x->htog[i] = -1;
		x->nhtog = n;
	}
	x->htog[ht] = gt;
}

static bool name_taken(const Graph *h, const char *s)
{
	return ir_find_tensor(h, s) >= 0 || ir_find_size(h, s) >= 0;
}

/* base, or base_2, base_3, ...: a name no tensor or size of h has (arena-owned) */
static char *fresh(Graph *h, const char *base)
{
	char buf[256];
	snprintf(buf, sizeof buf, "%s", base);
	for (int k = 2; name_taken(h, buf); k++)
		snprintf(buf, sizeof buf, "%s_%d", base, k);
	return ir_strdup(h, buf, strlen(buf));
}

/* An index name for a new definition: base unless a size, a tensor or one of the names
 * before it has it. */
static char *fresh_index(Graph *h, const char *base, char *const *taken, int ntaken)
{
	char buf[64];
	snprintf(buf, sizeof buf, "%s", base);
	for (int k = 2;; k++) {
		bool clash = name_taken(h, buf);
		for (int i = 0; i < ntaken && !clash; i++)
			clash = strcmp(taken[i], buf) == 0;
		if (!clash)
			break;
		snprintf(buf, sizeof buf, "%s%d", base, k);
	}
	return ir_strdup(h, buf, strlen(buf));
}

/* Adds definition D (its out[0] filled here) with result `name` of shape dims[0..rank). */
static int new_def(Gx *x, char *name, const Extent *dims, Def *D)
{
	Graph *h = x->h;
	D->ty = ck_def_type(h, D);
	D->nout = 1;
	Tensor T = {0};
	T.name = name;
	T.kind = TK_DEF;
	T.dtype = D->ty == TY_INT ? DT_I32 : DT_F64;
	T.rank = D->nlhs;
	for (int k = 0; k < D->nlhs; k++)
		T.dims[k] = dims[k];
	T.def = h->ndefs;
	D->out[0] = ir_add_tensor(h, &T);
	ir_add_def(h, D);
	note_tensor(x, D->out[0], -1);
	return D->out[0];
}

static Ref extent_ref(Graph *h, Extent e)
{
	return e.size >= 0 ? ir_size(h, (uint32_t)e.size) : ir_int(h, e.value);
}

/* D's left-hand side shaped like dims[0..rank): indices named i0, i1, ... (fresh), their
 * variables in idx. */
static void lhs_like(Graph *h, Def *D, const Extent *dims, int rank, Ref *idx)
{
	char *names[IR_MAXRANK];
	D->nlhs = rank;
	for (int p = 0; p < rank; p++) {
		char b[16];
		snprintf(b, sizeof b, "i%d", p);
		names[p] = D->lhs[p].name = fresh_index(h, b, names, p);
		D->lhs[p].ext = dims[p];
		idx[p] = ir_var(h, (uint32_t)p, TY_INT);
	}
}

/* ------------------------------------------------------------ templates */

/* The partials of op (ops.def's grad column) parsed into x->tg. */
static int load_template(Gx *x, Op op)
{
	static const char *const grads[] = {
#define X(name, spelling, arity, flags, c, helper, mpfr, grad) [OP_##name] = grad,
#include "../ops.def"
#undef X
	};
	_Static_assert(ARRAY_LEN(grads) == OP__COUNT, "every op has a grad column");
	if (x->have_tmpl[op])
		return 0;
	const char *s = grads[op];
	if (s[0] == '-' && !s[1]) {
		diag_set(x->d, 3, "internal error: %s has no derivative (ops.def)", op_info(op)->name);
		return -1;
	}
	int arity = op_info(op)->arity;
	/* the text: the operands as scalar inputs, one definition per partial */
	size_t cap = 4096 + 4 * strlen(s) + 4 * sizeof two_sqrtpi, len = 0;
	char *src = malloc(cap);
	IR_ASSERT(src);
	len += (size_t)snprintf(src + len, cap - len,
				"input x : f64[]\ninput y : f64[]\ninput z : f64[]\n");
	int np = 0;
	const char *p = s;
	while (*p) {
		len += (size_t)snprintf(src + len, cap - len, "p%d[] = ", np);
		for (; *p && *p != ';'; p++) {
			if ((*p == 'x' || *p == 'y' || *p == 'z') &&
			    (p == s || !(p[-1] == '_' || (p[-1] >= 'a' && p[-1] <= 'z'))) &&
			    !(p[1] == '_' || (p[1] >= 'a' && p[1] <= 'z') || (p[1] >= '0' && p[1] <= '9'))) {
				len += (size_t)snprintf(src + len, cap - len, "%c[]", *p);
			} else if (strncmp(p, "GR_2_SQRTPI", 11) == 0) {
				len += (size_t)snprintf(src + len, cap - len, "%s", two_sqrtpi);
				p += 10;
			} else {
				src[len++] = *p;
			}
		}
		len += (size_t)snprintf(src + len, cap - len, "\n");
		np++;
		if (*p == ';')
			p++;
	}
	len += (size_t)snprintf(src + len, cap - len, "output");
	for (int k = 0; k < np; k++)
		len += (size_t)snprintf(src + len, cap - len, "%s p%d : f64", k ? "," : "", k);
	len += (size_t)snprintf(src + len, cap - len, "\n");
	IR_ASSERT(np == arity);
	Diag d = {0};
	Graph *t = ir_parse(src, len, op_info(op)->name, NULL, 0, &d);
	if (!t) {
		diag_set(x->d, 3, "ops.def: the grad column of %s does not parse: %s",
			 op_info(op)->name, d.msg ? d.msg : "");
		diag_clear(&d);
		free(src);
		return -1;
	}
	free(src);
	/* moved into x->tg: parse each op's text into its own graph, then copy */
	if (!x->tg)
		x->tg = ir_new("ops.def");
	for (int k = 0; k < np; k++) {
		Xl c = {.src = t, .dst = x->tg};
		x->tmpl[op][k] = xl(&c, t->defs[k].body);
	}
	ir_free(t);
	x->have_tmpl[op] = true;
	return 0;
}

/* ------------------------------------------------------------ derivatives */

typedef struct {
	Gx *x;
	Ref wrt;       /* the read differentiated against */
	Ref *memo;     /* REF_NONE: not computed; done[] tells a computed zero */
	uint8_t *done;
	uint32_t n;    /* nodes when the derivation began (the only ones it is asked about) */
} Dv;

/* d e / d wrt in h, REF_NONE for a structural zero. */
static Ref deriv(Dv *v, Ref e)
{
	if (e == v->wrt)
		return ir_int(v->x->h, 1);
	IR_ASSERT(e < v->n);
	if (v->done[e])
		return v->memo[e];
	Graph *h = v->x->h;
	Node n = *ir_node(h, e);
	Ref out = REF_NONE;
	if (n.kind == NK_OP && n.ty == TY_REAL) {
		Op op = (Op)n.op;
		if (op == OP_SELECT) {
			Ref da = deriv(v, n.a[1]), db = deriv(v, n.a[2]);
			if (da || db)
				out = select3(h, n.a[0], da, db);
		} else {
			if (load_template(v->x, op) < 0) {
				v->x->failed = 1;
				return REF_NONE;
			}
			for (int k = 0; k < op_info(op)->arity; k++) {
				if ((v->x->o.faults & GF_DIV_DENOM) && op == OP_DIV && k == 1 &&
				    ir_node(h, n.a[1])->kind == NK_READ)
					continue;   /* fault: the denominator's term dropped */
				Ref dk = deriv(v, n.a[k]);
				if (!dk)
					continue;
				Xl c = {.src = v->x->tg, .dst = h, .targ = n.a};
				Ref p = xl(&c, v->x->tmpl[op][k]);
				out = add(h, out, mul(h, p, dk));
			}
		}
	}
	v->memo[e] = out;
	v->done[e] = 1;
	return out;
}

static Ref deriv_wrt(Gx *x, Ref body, Ref wrt)
{
	uint32_t n = x->h->nnodes + 1;
	Dv v = {x, wrt, calloc(n, sizeof(Ref)), calloc(n, 1), n};
	IR_ASSERT(v.memo && v.done);
	Ref out = deriv(&v, body);
	free(v.memo);
	free(v.done);
	return out;
}

/* ------------------------------------------------------------ index arithmetic */

/* A box: each variable's range lo[v] .. hi[v] (inclusive). */
typedef struct {
	int64_t lo[UVAR + IR_MAXRANK], hi[UVAR + IR_MAXRANK];
} Box;

typedef struct {
	int64_t lo, hi;
	bool ok;       /* false: unknown (an indirect read, a real value) */
} Iv;

static int64_t fdiv64(int64_t a, int64_t b)
{
	int64_t q = a / b;
	return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

/* The range of integer expression r over box b (unknown where int64 would overflow). The
 * checker's own (check.c qivl) is private to a Checker and saturates; this one needs only
 * the graph. */
static Iv iv(const Graph *h, Ref r, const Box *b)
{
	const Node *n = ir_node(h, r);
	Iv bad = {0, 0, false};
	switch (n->kind) {
	case NK_INT: return (Iv){n->u.ival, n->u.ival, true};
	case NK_SIZE: return (Iv){h->sizes[n->u.size].value, h->sizes[n->u.size].value, true};
	case NK_VAR: return (Iv){b->lo[n->u.var], b->hi[n->u.var], true};
	case NK_OP: break;
	default: return bad;
	}
	if (n->ty != TY_INT)
		return bad;
	Iv a = iv(h, n->a[0], b), c = {0, 0, true};
	if (op_info((Op)n->op)->arity > 1)
		c = iv(h, n->a[1], b);
	if (!a.ok || !c.ok)
		return bad;
	Iv o = {0, 0, true};
	switch (n->op) {
	case OP_NEG: return a.lo == INT64_MIN ? bad : (Iv){-a.hi, -a.lo, true};
	case OP_ADD:
		return __builtin_add_overflow(a.lo, c.lo, &o.lo) ||
		       __builtin_add_overflow(a.hi, c.hi, &o.hi) ? bad : o;
	case OP_SUB:
		return __builtin_sub_overflow(a.lo, c.hi, &o.lo) ||
		       __builtin_sub_overflow(a.hi, c.lo, &o.hi) ? bad : o;
	case OP_MUL: {
		int64_t p[4];
		if (__builtin_mul_overflow(a.lo, c.lo, &p[0]) || __builtin_mul_overflow(a.lo, c.hi, &p[1]) ||
		    __builtin_mul_overflow(a.hi, c.lo, &p[2]) || __builtin_mul_overflow(a.hi, c.hi, &p[3]))
			return bad;   /* an overflow: unknown */
		o = (Iv){p[0], p[0], true};
		for (int k = 1; k < 4; k++) {
			o.lo = p[k] < o.lo ? p[k] : o.lo;
			o.hi = p[k] > o.hi ? p[k] : o.hi;
		}
		return o;
	}
	case OP_IDIV:
		if (c.lo != c.hi || c.lo <= 0)
			return bad;
		return (Iv){fdiv64(a.lo, c.lo), fdiv64(a.hi, c.lo), true};
	case OP_MOD:
		if (c.lo != c.hi || c.lo <= 0)
			return bad;
		if (fdiv64(a.lo, c.lo) == fdiv64(a.hi, c.lo))
			return (Iv){a.lo - c.lo * fdiv64(a.lo, c.lo), a.hi - c.lo * fdiv64(a.lo, c.lo), true};
		return (Iv){0, c.lo - 1, true};
	case OP_MAX: return (Iv){a.lo > c.lo ? a.lo : c.lo, a.hi > c.hi ? a.hi : c.hi, true};
	case OP_MIN: return (Iv){a.lo < c.lo ? a.lo : c.lo, a.hi < c.hi ? a.hi : c.hi, true};
	default: return bad;
	}
}

/* Condition r over box b: 1 always true, 0 always false, -1 unknown. */
static int prove(const Graph *h, Ref r, const Box *b)
{
	const Node *n = ir_node(h, r);
	if (n->kind != NK_OP)
		return -1;
	if (n->op == OP_AND) {
		int x = prove(h, n->a[0], b), y = prove(h, n->a[1], b);
		return x == 0 || y == 0 ? 0 : x == 1 && y == 1 ? 1 : -1;
	}
	if (!(op_info((Op)n->op)->flags & OPF_CMP))
		return -1;
	Iv x = iv(h, n->a[0], b), y = iv(h, n->a[1], b);
	if (!x.ok || !y.ok)
		return -1;
	switch (n->op) {
	case OP_LT: return x.hi < y.lo ? 1 : x.lo >= y.hi ? 0 : -1;
	case OP_LE: return x.hi <= y.lo ? 1 : x.lo > y.hi ? 0 : -1;
	case OP_GT: return x.lo > y.hi ? 1 : x.hi <= y.lo ? 0 : -1;
	case OP_GE: return x.lo >= y.hi ? 1 : x.hi < y.lo ? 0 : -1;
	case OP_EQ:
		return x.lo == x.hi && y.lo == y.hi && x.lo == y.lo ? 1 :
		       x.hi < y.lo || y.hi < x.lo ? 0 : -1;
	case OP_NE:
		return x.hi < y.lo || y.hi < x.lo ? 1 :
		       x.lo == x.hi && y.lo == y.hi && x.lo == y.lo ? 0 : -1;
	default: return -1;
	}
}

static bool mentions(const Graph *h, Ref r, uint32_t var)
{
	const Node *n = ir_node(h, r);
	switch (n->kind) {
	case NK_VAR: return n->u.var == var;
	case NK_READ: {
		const Ref *ix = ir_read_idx(h, n);
		for (uint32_t i = 0; i < n->u.read.n; i++)
			if (mentions(h, ix[i], var))
				return true;
		return n->u.read.pad && mentions(h, n->u.read.pad, var);
	}
	case NK_OP:
		for (int k = 0; k < op_info((Op)n->op)->arity; k++)
			if (mentions(h, n->a[k], var))
				return true;
		return false;
	default: return false;
	}
}

/* The coefficient of var in r when r is affine in var (*ok), else *ok = false. */
static int64_t coef(const Graph *h, Ref r, uint32_t var, bool *ok)
{
	const Node *n = ir_node(h, r);
	if (!mentions(h, r, var))
		return 0;
	if (n->kind == NK_VAR)
		return 1;
	if (n->kind != NK_OP || n->ty != TY_INT) {
		*ok = false;
		return 0;
	}
	switch (n->op) {
	case OP_NEG: return -coef(h, n->a[0], var, ok);
	case OP_ADD: return coef(h, n->a[0], var, ok) + coef(h, n->a[1], var, ok);
	case OP_SUB: return coef(h, n->a[0], var, ok) - coef(h, n->a[1], var, ok);
	case OP_MUL:
		for (int k = 0; k < 2; k++) {
			const Node *c = ir_node(h, n->a[k]);
			if (c->kind == NK_INT || c->kind == NK_SIZE) {
				int64_t v = c->kind == NK_INT ? c->u.ival : h->sizes[c->u.size].value;
				return v * coef(h, n->a[1 - k], var, ok);
			}
		}
		*ok = false;
		return 0;
	default:
		*ok = false;
		return 0;
	}
}

/* A constant positive divisor (an integer literal or a size), or 0. */
static int64_t divisor(const Graph *h, Ref r)
{
	const Node *c = ir_node(h, r);
	int64_t v = c->kind == NK_INT ? c->u.ival : c->kind == NK_SIZE ? h->sizes[c->u.size].value : 0;
	return v > 0 ? v : 0;
}

/* Adds `?? 0` to every read of r whose affine indices may leave the tensor over box b. */
static Ref pad_reads(Gx *x, Ref r, const Box *b)
{
	Graph *h = x->h;
	Node n = *ir_node(h, r);
	if (n.kind == NK_OP) {
		Ref a[3];
		for (int k = 0; k < 3; k++)
			a[k] = n.a[k] ? pad_reads(x, n.a[k], b) : REF_NONE;
		return ir_op(h, (Op)n.op, (Ty)n.ty, a[0], a[1], a[2]);
	}
	if (n.kind != NK_READ)
		return r;
	Ref idx[IR_MAXRANK];
	memcpy(idx, &h->refs[n.u.read.first], n.u.read.n * sizeof(Ref));
	bool inside = true;
	const Tensor *T = &h->tensors[n.u.read.tensor];
	for (uint32_t i = 0; i < n.u.read.n; i++) {
		if (ir_node(h, idx[i])->kind == NK_READ) {
			idx[i] = pad_reads(x, idx[i], b);
			continue;
		}
		Iv v = iv(h, idx[i], b);
		if (!v.ok || v.lo < 0 || v.hi >= T->dims[i].value)
			inside = false;
	}
	Ref pad = n.u.read.pad ? pad_reads(x, n.u.read.pad, b) : REF_NONE;
	if (!inside && !pad)
		pad = zero(h);
	return ir_read(h, n.u.read.tensor, idx, n.u.read.n, pad, (Ty)n.ty);
}

/* Condition r for a value context, where `/` is real division: every floor division
 * a / c outside a read's brackets becomes (a - a % c) / c, the same integer as a real (exact
 * in any format while |a| < 2^24: the quotient of an exact multiple). */
static bool constant(const Graph *h, Ref r)
{
	const Node *n = ir_node(h, r);
	if (n->kind == NK_INT || n->kind == NK_SIZE)
		return true;
	if (n->kind != NK_OP || n->ty != TY_INT)
		return false;
	for (int k = 0; k < op_info((Op)n->op)->arity; k++)
		if (!constant(h, n->a[k]))
			return false;
	return true;
}

static bool has_idiv(const Graph *h, Ref r)
{
	const Node *n = ir_node(h, r);
	if (n->kind != NK_OP)
		return false;   /* a read's brackets are an index context of their own */
	if (n->op == OP_IDIV)
		return true;
	for (int k = 0; k < op_info((Op)n->op)->arity; k++)
		if (has_idiv(h, n->a[k]))
			return true;
	return false;
}

static Ref value_div(Graph *h, Ref r)
{
	Node n = *ir_node(h, r);
	if (n.kind != NK_OP)
		return r;
	if (constant(h, r)) {
		Box none;
		memset(&none, 0, sizeof none);
		Iv v = iv(h, r, &none);
		if (v.ok && v.lo == v.hi)
			return ir_int(h, v.lo);
	}
	/* a % c and a floor division of an a without divisions keep their integer operands:
	 * (a - a % c) / c, exact; with a division inside a (4 * (r / 2) + 1) nothing in a
	 * value context can be an integer operand of %, so the quotient is floor(A / c) and
	 * the remainder A - c * floor(A / c), A being a as a real (exact while the values
	 * are small integers, as indices are) */
	if ((n.op == OP_MOD || n.op == OP_IDIV) && has_idiv(h, n.a[0])) {
		Ref A = value_div(h, n.a[0]);
		Ref q = mkop(h, OP_FLOOR, mkop(h, OP_DIV, A, n.a[1], 0), 0, 0);
		return n.op == OP_IDIV ? q : mkop(h, OP_SUB, A, mkop(h, OP_MUL, n.a[1], q, 0), 0);
	}
	if (n.op == OP_MOD)
		return r;
	if (n.op == OP_IDIV)
		return mkop(h, OP_DIV, mkop(h, OP_SUB, n.a[0], mkop(h, OP_MOD, n.a[0], n.a[1], 0), 0),
			    n.a[1], 0);
	Ref a[3];
	for (int k = 0; k < 3; k++)
		a[k] = n.a[k] ? value_div(h, n.a[k]) : REF_NONE;
	return mkop(h, (Op)n.op, a[0], a[1], a[2]);
}

/* ------------------------------------------------------------ contributions */

/* The iteration space of a consumer: its variables' ranges and their bounding box. */
typedef struct {
	int nv;                 /* working variables: the consumer's, then split ones */
	Ref lo[MAXW], hi[MAXW]; /* range [lo, hi) of each of the consumer's variables */
	Ref ext[MAXW];          /* the box's extent as a size or literal, when it starts at 0 */
	const char *name[MAXW];
	Box box;                /* inclusive */
} Space;

static void space_of(Gx *x, const Def *D, Space *sp)
{
	Graph *h = x->h;
	memset(sp, 0, sizeof *sp);
	sp->nv = D->nlhs + D->nred;
	for (int k = 0; k < D->nlhs; k++) {
		sp->lo[k] = zero(h);
		sp->hi[k] = sp->ext[k] = extent_ref(h, D->lhs[k].ext);
		sp->box.lo[k] = 0;
		sp->box.hi[k] = D->lhs[k].ext.value - 1;
		sp->name[k] = D->lhs[k].name;
	}
	for (int r = 0; r < D->nred; r++) {
		int v = D->nlhs + r;
		sp->lo[v] = D->red[r].lo;
		sp->hi[v] = D->red[r].hi;
		sp->name[v] = D->red[r].name;
		Iv lo = iv(h, D->red[r].lo, &sp->box), hi = iv(h, D->red[r].hi, &sp->box);
		IR_ASSERT(lo.ok && hi.ok);
		sp->box.lo[v] = lo.lo;
		sp->box.hi[v] = hi.hi - 1;
		if (D->red[r].full)
			sp->ext[v] = D->red[r].hi;
	}
}

/* A contribution's equations e_p = u_p being solved: the working variables (the consumer's,
 * then split ones) with their box, the splits, each variable's solution (vmap: REF_NONE for
 * a free one; the u_p are variables UVAR + p) and the equations left. */
typedef struct {
	Space sp;
	int nv0;                /* the consumer's own variables */
	int n;                  /* the read's rank */
	Ref idx[IR_MAXRANK];    /* its index expressions */
	Xl dm;
	Ref vmap[UVAR + IR_MAXRANK];
	Ref eqs[IR_MAXRANK];
	int neq;
} Solve;

/* Splits v = c*q + s where an index reads v / c or v % c (c a constant). */
static void split_divmod(Gx *x, Solve *S)
{
	Graph *h = x->h;
	for (int p = 0; p < S->n; p++) {
		Node en = *ir_node(h, S->idx[p]);   /* by value: ir_var below may grow the nodes */
		const Node *e = &en;
		if (e->kind != NK_OP || (e->op != OP_IDIV && e->op != OP_MOD) ||
		    ir_node(h, e->a[0])->kind != NK_VAR)
			continue;
		uint32_t v = ir_node(h, e->a[0])->u.var;
		int64_t c = divisor(h, e->a[1]);
		bool seen = false;
		for (int k = 0; k < S->dm.ndm; k++)
			seen |= S->dm.dm[k].var == v;
		if (seen || !c || S->sp.nv + 2 > MAXW || S->vmap[v])
			continue;
		int q = S->sp.nv++, s = S->sp.nv++;
		S->dm.dm[S->dm.ndm].var = v;
		S->dm.dm[S->dm.ndm].c = e->a[1];
		S->dm.dm[S->dm.ndm].q = ir_var(h, (uint32_t)q, TY_INT);
		S->dm.dm[S->dm.ndm].s = ir_var(h, (uint32_t)s, TY_INT);
		S->sp.box.lo[q] = fdiv64(S->sp.box.lo[v], c);
		S->sp.box.hi[q] = fdiv64(S->sp.box.hi[v], c);
		S->sp.box.lo[s] = 0;
		S->sp.box.hi[s] = c - 1;
		if (S->sp.box.lo[q] == S->sp.box.hi[q]) {
			S->sp.box.lo[s] = S->sp.box.lo[v] - c * S->sp.box.lo[q];
			S->sp.box.hi[s] = S->sp.box.hi[v] - c * S->sp.box.lo[q];
		}
		S->sp.lo[q] = S->sp.lo[s] = S->sp.hi[q] = S->sp.hi[s] = REF_NONE;
		S->sp.name[q] = S->sp.name[v];
		S->sp.name[s] = S->sp.name[v];
		Ref qc = mkop(h, OP_MUL, S->dm.dm[S->dm.ndm].q, e->a[1], 0);
		S->vmap[v] = mkop(h, OP_ADD, qc, S->dm.dm[S->dm.ndm].s, 0);
		S->dm.ndm++;
	}
}

/* Solves each e_p = u_p for a variable of coefficient +-1 where there is one (the one with
 * the largest range); keeps the others as equations. */
static void solve(Gx *x, Solve *S)
{
	Graph *h = x->h;
	for (int p = 0; p < S->n; p++) {
		Ref u = ir_var(h, (uint32_t)(UVAR + p), TY_INT);
		Ref e = subst(h, S->idx[p], S->vmap, &S->dm);
		const Node *en = ir_node(h, e);
		if ((x->o.faults & GF_VIEW_TRANSPOSE) && en->kind == NK_VAR &&
		    en->u.var < (uint32_t)S->n && (int)en->u.var < S->nv0 && en->u.var != (uint32_t)p &&
		    !S->vmap[en->u.var])
			u = ir_var(h, UVAR + en->u.var, TY_INT);   /* fault: not transposed back */
		int best = -1;
		int64_t bc = 0;
		for (int w = 0; w < S->sp.nv; w++) {
			if (S->vmap[w])
				continue;
			bool ok = true;
			int64_t c = coef(h, e, (uint32_t)w, &ok);
			if (!ok || (c != 1 && c != -1))
				continue;
			const Box *b = &S->sp.box;
			if (best < 0 || b->hi[w] - b->lo[w] > b->hi[best] - b->lo[best]) {
				best = w;
				bc = c;
			}
		}
		if (best < 0) {
			S->eqs[S->neq++] = mkop(h, OP_EQ, e, u, 0);
			continue;
		}
		Ref z[UVAR + IR_MAXRANK] = {0};
		z[best] = zero(h);
		Ref rest = subst(h, e, z, NULL);
		Ref sol = bc == 1 ? (is_int(h, rest, 0) ? u : mkop(h, OP_SUB, u, rest, 0)) :
			  mkop(h, OP_SUB, rest, u, 0);
		Ref one[UVAR + IR_MAXRANK] = {0};
		one[best] = sol;
		for (int w = 0; w < S->sp.nv; w++)
			if (S->vmap[w])
				S->vmap[w] = subst(h, S->vmap[w], one, NULL);
		S->vmap[best] = sol;
	}
}

/* The contribution of read R (of g tensor gt) with term `term` to gt's adjoint, as a new
 * definition; -1 when it is empty. */
static int contribution(Gx *x, const Space *sp0, Ref R, Ref term, int gt)
{
	Graph *h = x->h;
	Solve sv;
	memset(&sv, 0, sizeof sv);
	Solve *S = &sv;
	S->sp = *sp0;
	S->nv0 = sp0->nv;
	Node rn = *ir_node(h, R);
	int n = S->n = (int)rn.u.read.n;
	memcpy(S->idx, &h->refs[rn.u.read.first], (size_t)n * sizeof(Ref));
	const Tensor *X = &x->g->tensors[gt];
	split_divmod(x, S);
	solve(x, S);
	Space sp = S->sp;
	Xl dm = S->dm;
	Ref *vmap = S->vmap, *eqs = S->eqs, *idx = S->idx;
	int neq = S->neq;

	if (x->o.faults & GF_BCAST_NOSUM)   /* fault: a broadcast index is not summed over */
		for (int w = 0; w < sp0->nv; w++) {
			bool used = false;
			for (int p = 0; p < n; p++)
				used |= mentions(h, idx[p], (uint32_t)w);
			if (!used && !vmap[w])
				vmap[w] = ir_int(h, sp.box.lo[w]);
		}
	/* final numbering: u_p is variable p, the free ones follow */
	Ref fin[UVAR + IR_MAXRANK] = {0};
	Box fb;
	memset(&fb, 0, sizeof fb);
	int nfree = 0, freew[MAXW];
	for (int p = 0; p < n; p++) {
		fin[UVAR + p] = ir_var(h, (uint32_t)p, TY_INT);
		fb.lo[p] = 0;
		fb.hi[p] = X->dims[p].value - 1;
	}
	for (int w = 0; w < sp.nv; w++) {
		if (vmap[w])
			continue;
		int v = n + nfree;
		if (v >= UVAR || nfree >= IR_MAXRED) {
			diag_set(x->d, 2, "%s: the gradient of a read of '%s' needs more than %d "
				 "reduction indices", x->g->file, X->name, IR_MAXRED);
			x->failed = 1;
			return -1;
		}
		freew[nfree++] = w;
		fin[w] = ir_var(h, (uint32_t)v, TY_INT);
		fb.lo[v] = sp.box.lo[w];
		fb.hi[v] = sp.box.hi[w];
		if (fb.lo[v] > fb.hi[v])
			return -1;   /* an empty range: nothing flows back */
	}
	Ref all[UVAR + IR_MAXRANK] = {0};
	for (int w = 0; w < UVAR + IR_MAXRANK; w++)
		all[w] = w < sp.nv && vmap[w] ? subst(h, vmap[w], fin, NULL) : fin[w];
	/* the guard: every range of the consumer, every unsolved equation */
	Ref guard = REF_NONE;
	for (int w = 0; w < sp0->nv + 2 * dm.ndm; w++) {
		Ref c[2] = {REF_NONE, REF_NONE};
		if (w < sp0->nv) {
			Ref vw = ir_var(h, (uint32_t)w, TY_INT);
			c[0] = mkop(h, OP_LE, sp.lo[w], vw, 0);
			c[1] = mkop(h, OP_LT, vw, sp.hi[w], 0);
		} else if ((w - sp0->nv) % 2 == 1) {
			/* the remainder s of v = c*q + s lies in 0..c-1, also where it was solved
			 * for (x[i, i / 3] read at [u, u3]: s = u - 3*u3 is a remainder only for
			 * u3 = u / 3); with v's own range this makes (q, s) v's */
			Ref vw = ir_var(h, (uint32_t)w, TY_INT);
			c[0] = mkop(h, OP_LE, zero(h), vw, 0);
			c[1] = mkop(h, OP_LT, vw, dm.dm[(w - sp0->nv) / 2].c, 0);
		}
		for (int k = 0; k < 2; k++) {
			if (!c[k])
				continue;
			Ref f = subst(h, subst(h, c[k], NULL, &dm), all, NULL);
			int pr = prove(h, f, &fb);
			if (pr == 0)
				return -1;
			if (pr < 0)
				guard = guard ? mkop(h, OP_AND, guard, f, 0) : f;
		}
	}
	for (int k = 0; k < neq; k++) {
		Ref f = subst(h, eqs[k], all, NULL);
		int pr = prove(h, f, &fb);
		if (pr == 0)
			return -1;
		if (pr < 0)
			guard = guard ? mkop(h, OP_AND, guard, f, 0) : f;
	}
	Ref body = subst(h, subst(h, term, NULL, &dm), all, NULL);
	body = pad_reads(x, body, &fb);
	/* the guard's own reads (an index table's entry compared with an index) may fall
	 * outside their tensor where an earlier range of the guard fails; the range is the
	 * consumer's, so inside every range they are the consumer's reads, in bounds */
	if (guard)
		guard = pad_reads(x, guard, &fb);
	if (guard)
		body = select3(h, value_div(h, guard), body, REF_NONE);

	Def D;
	memset(&D, 0, sizeof D);
	char *names[IR_MAXVARS];
	D.nlhs = n;
	for (int p = 0; p < n; p++) {
		const char *base = "u";
		for (int w = 0; w < sp.nv; w++) {
			const Node *a = ir_node(h, all[w]);
			if (w < sp0->nv && a->kind == NK_VAR && a->u.var == (uint32_t)p)
				base = sp.name[w];
		}
		names[p] = D.lhs[p].name = fresh_index(h, base, names, p);
		D.lhs[p].ext = X->dims[p];
	}
	for (int r = 0; r < nfree; r++) {
		int w = freew[r], v = n + r;
		names[v] = D.red[r].name = fresh_index(h, sp.name[w], names, v);
		D.red[r].lo = ir_int(h, fb.lo[v]);
		if (fb.lo[v] == 0 && sp.ext[w] && w < sp0->nv) {
			D.red[r].hi = sp.ext[w];
			D.red[r].full = true;
		} else {
			D.red[r].hi = ir_int(h, fb.hi[v] + 1);
		}
	}
	D.nred = nfree;
	D.monoid = nfree ? MO_SUM : MO_NONE;
	bool indirect = false;
	for (int k = 0; k < neq; k++)
		indirect |= ir_node(h, ir_node(h, eqs[k])->a[0])->kind == NK_READ;
	if ((x->o.faults & GF_SCATTER_ONE) && indirect && nfree)
		D.monoid = MO_MAX;   /* fault: one write kept, not their sum */
	D.body = body;
	char base[300];
	snprintf(base, sizeof base, "adj_%s_%d", X->name, x->contrib[gt].n + 1);
	return new_def(x, fresh(h, base), X->dims, &D);
}

/* ------------------------------------------------------------ definitions */

/* The distinct real reads of r (of real tensors of g), at most MAXREADS. */
static int collect_reads(Gx *x, Ref r, Ref *out, int n)
{
	const Node *e = ir_node(x->h, r);
	if (e->kind == NK_READ) {
		int gt = x->htog[e->u.read.tensor];
		if (e->ty == TY_REAL && gt >= 0 && x->g->tensors[gt].dtype != DT_I32) {
			for (int k = 0; k < n; k++)
				if (out[k] == r)
					return n;
			if (n == MAXREADS) {
				diag_set(x->d, 2, "%s: a definition reads more than %d distinct tensor "
					 "elements; its gradient is not supported", x->g->file, MAXREADS);
				x->failed = 1;
				return n;
			}
			out[n++] = r;
		}
		return n;
	}
	if (e->kind == NK_OP) {
		Node c = *e;
		for (int k = 0; k < op_info((Op)c.op)->arity; k++)
			n = collect_reads(x, c.a[k], out, n);
	}
	return n;
}

/* A real read inside a padding default (the derivation does not follow those). */
static bool pad_has_real_read(const Graph *h, Ref r, bool in_pad)
{
	const Node *e = ir_node(h, r);
	if (e->kind == NK_READ) {
		if (in_pad && e->ty == TY_REAL)
			return true;
		return e->u.read.pad && pad_has_real_read(h, e->u.read.pad, true);
	}
	if (e->kind == NK_OP)
		for (int k = 0; k < op_info((Op)e->op)->arity; k++)
			if (pad_has_real_read(h, e->a[k], in_pad))
				return true;
	return false;
}

/* cnt[lhs] = sum(red) (body == y[lhs] ? 1 : 0): how many terms a max or min ties on. */
static int tie_count(Gx *x, const Def *Y, Ref yread)
{
	Graph *h = x->h;
	Def D = *Y;
	D.monoid = MO_SUM;
	D.body = mkop(h, OP_SELECT, mkop(h, OP_EQ, Y->body, yread, 0), ir_int(h, 1), zero(h));
	char base[300];
	snprintf(base, sizeof base, "ties_%s", h->tensors[Y->out[0]].name);
	return new_def(x, fresh(h, base), h->tensors[Y->out[0]].dims, &D);
}

/* others[lhs, r...] = prod(r'...) (r' != r ? body(r') : 1): the product of the other terms
 * of a prod reduction (no division: exact with zeros). -1 with d when the reduction's
 * indices cannot be left-hand ones (too many, or a range below 0). */
static int other_terms(Gx *x, const Def *Y, const Space *sp)
{
	Graph *h = x->h;
	int nl = Y->nlhs, nr = Y->nred;
	const char *yname = h->tensors[Y->out[0]].name;
	if (nl + nr > IR_MAXRANK) {
		diag_set(x->d, 2, "%s: the gradient of prod '%s' needs more than %d indices",
			 x->g->file, yname, IR_MAXRANK);
		return -1;
	}
	Def D;
	memset(&D, 0, sizeof D);
	Extent dims[IR_MAXRANK];
	char *names[IR_MAXVARS];
	Ref vmap[UVAR + IR_MAXRANK] = {0};
	for (int k = 0; k < nl; k++) {
		D.lhs[k] = Y->lhs[k];
		names[k] = D.lhs[k].name;
		dims[k] = Y->lhs[k].ext;
	}
	Ref differ = REF_NONE;
	for (int r = 0; r < nr; r++) {
		int v = nl + r;
		if (sp->box.lo[v] < 0 || sp->box.hi[v] < sp->box.lo[v]) {
			diag_set(x->d, 2, "%s: the gradient of prod '%s': index %s ranges below 0",
				 x->g->file, yname, Y->red[r].name);
			return -1;
		}
		names[v] = D.lhs[v].name = fresh_index(h, Y->red[r].name, names, v);
		D.lhs[v].ext = dims[v] = (Extent){-1, sp->box.hi[v] + 1};
		vmap[v] = ir_var(h, (uint32_t)(nl + nr + r), TY_INT);
		Ref ne = mkop(h, OP_NE, vmap[v], ir_var(h, (uint32_t)v, TY_INT), 0);
		differ = differ ? mkop(h, OP_OR, differ, ne, 0) : ne;
	}
	D.nlhs = nl + nr;
	for (int r = 0; r < nr; r++) {
		D.red[r] = Y->red[r];
		names[nl + nr + r] = D.red[r].name = fresh_index(h, Y->red[r].name, names, nl + nr + r);
		D.red[r].lo = subst(h, Y->red[r].lo, vmap, NULL);
		D.red[r].hi = subst(h, Y->red[r].hi, vmap, NULL);
		D.red[r].full = Y->red[r].full;
	}
	D.nred = nr;
	D.monoid = MO_PROD;
	D.body = mkop(h, OP_SELECT, differ, subst(h, Y->body, vmap, NULL), ir_int(h, 1));
	char base[300];
	snprintf(base, sizeof base, "others_%s", yname);
	return new_def(x, fresh(h, base), dims, &D);
}

/* The contributions of definition k (g's and h's index) whose adjoint is h tensor adj. */
static int derive_def(Gx *x, int k, int adj)
{
	Graph *h = x->h;
	Def Y = h->defs[k];
	Ref lhsv[IR_MAXRANK];
	for (int i = 0; i < Y.nlhs; i++)
		lhsv[i] = ir_var(h, (uint32_t)i, TY_INT);
	Ref dy = read_at(h, adj, lhsv, Y.nlhs);
	Ref yread = read_at(h, Y.out[0], lhsv, Y.nlhs);
	Ref W = REF_NONE;
	Space sp;
	space_of(x, &Y, &sp);
	const char *yname = x->g->tensors[x->g->defs[k].out[0]].name;
	if (pad_has_real_read(h, Y.body, false)) {
		diag_set(x->d, 2, "%s: '%s' reads a tensor inside a padding default (`?? x[...]`); "
			 "the gradient does not follow padding defaults", x->g->file, yname);
		return -1;
	}
	switch (Y.monoid) {
	case MO_NONE:
	case MO_SUM:
		W = dy;
		break;
	case MO_MAX:
	case MO_MIN: {
		/* ties share the cotangent equally (docs/grad.md). The count is at least 1
		 * wherever a term is chosen, so max(count, 1) is the count exactly; in a kernel
		 * the count's comparisons may be rounded otherwise than the mask's (another
		 * kernel, another format: 1 + x in f64 against the f32 maximum) and give 0
		 * where the mask gives 1: the whole cotangent then, never d / 0 */
		int cnt = tie_count(x, &Y, yread);
		Ref share = mkop(h, OP_DIV, dy, mkop(h, OP_MAX, read_at(h, cnt, lhsv, Y.nlhs),
						      ir_int(h, 1), 0), 0);
		if (x->o.faults & GF_MAX_BOTH)   /* fault: no share */
			share = dy;
		W = select3(h, mkop(h, OP_EQ, Y.body, yread, 0), share, REF_NONE);
		break;
	}
	case MO_LOGSUMEXP:
		W = mul(h, dy, mkop(h, OP_EXP, mkop(h, OP_SUB, Y.body, yread, 0), 0, 0));
		break;
	case MO_TOPK: {
		Ref chosen = read_at(h, Y.out[1], lhsv, Y.nlhs);
		Ref r = ir_var(h, (uint32_t)Y.nlhs, TY_INT);
		W = select3(h, mkop(h, OP_EQ, r, chosen, 0), dy, REF_NONE);
		break;
	}
	case MO_PROD: {
		int ot = other_terms(x, &Y, &sp);
		if (ot < 0)
			return -1;
		Ref at[IR_MAXRANK];
		for (int i = 0; i < Y.nlhs + Y.nred; i++)
			at[i] = ir_var(h, (uint32_t)i, TY_INT);
		W = mul(h, dy, read_at(h, ot, at, Y.nlhs + Y.nred));
		break;
	}
	default:
		diag_set(x->d, 2, "%s: the gradient of a %s reduction ('%s') is not supported",
			 x->g->file, monoid_name((Monoid)Y.monoid), yname);
		return -1;
	}
	Ref reads[MAXREADS];
	int nr = collect_reads(x, Y.body, reads, 0);
	if (x->failed)
		return -1;
	for (int i = 0; i < nr; i++) {
		Ref dB = deriv_wrt(x, Y.body, reads[i]);
		if (x->failed)
			return -1;
		Ref term = mul(h, W, dB);
		if (!term)
			continue;
		int gt = x->htog[ir_node(h, reads[i])->u.read.tensor];
		int c = contribution(x, &sp, reads[i], term, gt);
		if (x->failed)
			return -1;
		if (c >= 0)
			push(&x->contrib[gt], c);
	}
	return 0;
}

/* The adjoint of g tensor gt: the sum of its contributions, named `name` (a fresh adj_X
 * when NULL). -1 when nothing flows into it (and name is NULL). */
static int finish_adjoint(Gx *x, int gt, const char *name)
{
	Graph *h = x->h;
	IdList *l = &x->contrib[gt];
	const Tensor *X = &x->g->tensors[gt];
	if (l->n == 0 && !name)
		return -1;
	bool def1 = l->n == 1 && h->tensors[l->t[0]].kind == TK_DEF;
	if (l->n == 1 && (def1 || !name)) {
		if (def1) {
			char base[300];
			snprintf(base, sizeof base, "adj_%s", X->name);
			h->tensors[l->t[0]].name = name ? ir_strdup(h, name, strlen(name)) : fresh(h, base);
		}
		return l->t[0];
	}
	Def D;
	memset(&D, 0, sizeof D);
	Ref idx[IR_MAXRANK];
	lhs_like(h, &D, X->dims, X->rank, idx);
	Ref body = REF_NONE;
	for (int k = 0; k < l->n; k++)
		body = add(h, body, read_at(h, l->t[k], idx, X->rank));
	D.body = body ? body : ir_num(h, "0", 1);
	char base[300];
	snprintf(base, sizeof base, "adj_%s", X->name);
	return new_def(x, name ? ir_strdup(h, name, strlen(name)) : fresh(h, base), X->dims, &D);
}

/* ------------------------------------------------------------ the graph */

/* Copies g's sizes into h. */
static void copy_sizes(const Graph *g, Graph *h)
{
	for (int i = 0; i < g->nsizes; i++)
		ir_add_size(h, ir_strdup(h, g->sizes[i].name, strlen(g->sizes[i].name)),
			    g->sizes[i].value, (SrcPos){0});
}

/* Adds a copy of tensor t of src to dst (name given, or src's) and returns its id. */
static int copy_tensor(const Graph *src, int t, Graph *dst, const char *name)
{
	Tensor T = src->tensors[t];
	const char *nm = name ? name : T.name;
	T.name = ir_strdup(dst, nm, strlen(nm));
	T.pos = (SrcPos){0};
	return ir_add_tensor(dst, &T);
}

/* Copies definition k of src into dst through c (tensors through c->tmap, which gets its
 * results; `suffix` appended to their names when given). */
static int copy_def(Xl *c, int k, const char *suffix)
{
	const Graph *src = c->src;
	Graph *dst = c->dst;
	Def D = src->defs[k];
	for (int i = 0; i < D.nlhs; i++)
		D.lhs[i].name = ir_strdup(dst, D.lhs[i].name, strlen(D.lhs[i].name));
	for (int r = 0; r < D.nred; r++) {
		D.red[r].name = ir_strdup(dst, D.red[r].name, strlen(D.red[r].name));
		D.red[r].lo = xl(c, D.red[r].lo);
		D.red[r].hi = xl(c, D.red[r].hi);
		D.red[r].pos = (SrcPos){0};
	}
	D.body = xl(c, D.body);
	D.pos = (SrcPos){0};
	for (int o = 0; o < D.nout; o++) {
		Tensor T = src->tensors[D.out[o]];
		char buf[300];
		snprintf(buf, sizeof buf, "%s%s", T.name, suffix ? suffix : "");
		T.name = suffix ? fresh(dst, buf) : ir_strdup(dst, T.name, strlen(T.name));
		T.pos = (SrcPos){0};
		T.def = dst->ndefs;
		int id = ir_add_tensor(dst, &T);
		c->tmap[D.out[o]] = id;
		D.out[o] = id;
	}
	return ir_add_def(dst, &D);
}

static void mark(const Graph *h, Ref r, bool *used)
{
	const Node *n = ir_node(h, r);
	if (n->kind == NK_READ) {
		used[n->u.read.tensor] = true;
		const Ref *ix = ir_read_idx(h, n);
		for (uint32_t i = 0; i < n->u.read.n; i++)
			mark(h, ix[i], used);
		if (n->u.read.pad)
			mark(h, n->u.read.pad, used);
	} else if (n->kind == NK_OP) {
		for (int k = 0; k < op_info((Op)n->op)->arity; k++)
			mark(h, n->a[k], used);
	}
}

/* A copy of h without the definitions no output reads; *dropped counts them. */
static Graph *prune(const Graph *h, const char *file, int *dropped)
{
	bool *used = calloc((size_t)h->ntensors + 1, sizeof *used);
	int *tmap = malloc(((size_t)h->ntensors + 1) * sizeof *tmap);
	IR_ASSERT(used && tmap);
	for (int i = 0; i < h->noutputs; i++)
		used[h->outputs[i].tensor] = true;
	for (int k = h->ndefs - 1; k >= 0; k--) {
		const Def *D = &h->defs[k];
		bool u = false;
		for (int o = 0; o < D->nout; o++)
			u |= used[D->out[o]];
		if (!u)
			continue;
		for (int o = 0; o < D->nout; o++)
			used[D->out[o]] = true;
		mark(h, D->body, used);
		for (int r = 0; r < D->nred; r++) {
			mark(h, D->red[r].lo, used);
			mark(h, D->red[r].hi, used);
		}
	}
	Graph *c = ir_new(file);
	if (h->name)
		c->name = ir_strdup(c, h->name, strlen(h->name));
	copy_sizes(h, c);
	for (int t = 0; t < h->ntensors; t++)
		tmap[t] = -1;
	for (int t = 0; t < h->ntensors; t++)
		if (h->tensors[t].kind == TK_INPUT)
			tmap[t] = copy_tensor(h, t, c, NULL);
	Xl x = {.src = h, .dst = c, .tmap = tmap};
	*dropped = 0;
	for (int k = 0; k < h->ndefs; k++) {
		if (used[h->defs[k].out[0]])
			copy_def(&x, k, NULL);
		else
			++*dropped;
	}
	for (int i = 0; i < h->noutputs; i++)
		ir_add_output(c, tmap[h->outputs[i].tensor], h->outputs[i].dtype, (SrcPos){0});
	free(used);
	free(tmap);
	return c;
}

/* h without the definitions no output reads, simplified (exact and integer rules), printed
 * and parsed back: a checked graph. Simplifying can remove the last read of a definition
 * (a term multiplied by an exact 0, a select of equal arms), so the two alternate until
 * nothing more is dropped. */
static Graph *finish(Graph *h, const char *file, Diag *d)
{
	int dropped;
	Graph *c = prune(h, file, &dropped);
	Graph *s = rw_simplify(c, RW_EXACT | RW_INT, NULL);
	ir_free(c);
	for (int round = 0; round < 64; round++) {
		c = prune(s, file, &dropped);
		ir_free(s);
		s = c;
		if (!dropped)
			break;
		s = rw_simplify(c, RW_EXACT | RW_INT, NULL);
		ir_free(c);
	}
	char *text = ir_print(s);
	ir_free(s);
	Diag e = {0};
	Graph *out = ir_parse(text, strlen(text), file, NULL, 0, &e);
	if (!out) {
		diag_set(d, 3, "internal error: the derived graph does not parse back:\n%s%s",
			 e.msg ? e.msg : "", text);
		diag_clear(&e);
	}
	free(text);
	return out;
}

static void gx_free(Gx *x)
{
	if (x->contrib)
		for (int t = 0; t < x->g->ntensors; t++)
			free(x->contrib[t].t);
	free(x->contrib);
	free(x->tmap);
	free(x->htog);
	if (x->tg)
		ir_free(x->tg);
	if (x->h)
		ir_free(x->h);
}

static bool wanted(const Gx *x, int t)
{
	const Tensor *T = &x->g->tensors[t];
	if (T->kind != TK_INPUT || T->dtype == DT_I32)
		return false;
	if (!x->o.nwrt)
		return true;
	for (int k = 0; k < x->o.nwrt; k++)
		if (strcmp(x->o.wrt[k], T->name) == 0)
			return true;
	return false;
}

Graph *gr_derive(const Graph *g, const GradOpts *o, Diag *d)
{
	Gx x = {0};
	x.g = g;
	x.d = d;
	if (o)
		x.o = *o;
	for (int k = 0; k < x.o.nwrt; k++) {
		int t = ir_find_tensor(g, x.o.wrt[k]);
		if (t < 0 || g->tensors[t].kind != TK_INPUT || g->tensors[t].dtype == DT_I32) {
			diag_set(d, 2, "%s: --wrt %s: %s", g->file, x.o.wrt[k],
				 t < 0 ? "no such input" : g->tensors[t].kind != TK_INPUT ?
				 "not an input" : "an i32 input has no gradient");
			return NULL;
		}
	}
	char file[1024];
	snprintf(file, sizeof file, "%s (gradient)", g->file ? g->file : "graph");
	Graph *h = x.h = ir_new(file);
	if (g->name) {
		char nm[300];
		snprintf(nm, sizeof nm, "%s_grad", g->name);
		h->name = ir_strdup(h, nm, strlen(nm));
	}
	copy_sizes(g, h);
	x.tmap = malloc(((size_t)g->ntensors + 1) * sizeof *x.tmap);
	x.contrib = calloc((size_t)g->ntensors + 1, sizeof *x.contrib);
	IR_ASSERT(x.tmap && x.contrib);
	for (int t = 0; t < g->ntensors; t++)
		x.tmap[t] = -1;
	for (int t = 0; t < g->ntensors; t++)
		if (g->tensors[t].kind == TK_INPUT) {
			x.tmap[t] = copy_tensor(g, t, h, NULL);
			note_tensor(&x, x.tmap[t], t);
		}
	/* the names the spec fixes: d_y for each real output, grad_a for each input derived */
	for (int i = 0; i < g->noutputs; i++) {
		int t = g->outputs[i].tensor;
		if (g->tensors[t].dtype == DT_I32 && g->tensors[t].kind == TK_INPUT)
			continue;
		if (g->outputs[i].dtype == DT_I32)
			continue;
		char nm[300];
		snprintf(nm, sizeof nm, "d_%s", g->tensors[t].name);
		if (name_taken(g, nm)) {
			diag_set(d, 2, "%s: the cotangent of output '%s' is named '%s', which the graph "
				 "already uses", g->file, g->tensors[t].name, nm);
			goto fail;
		}
		Tensor T = g->tensors[t];
		T.name = ir_strdup(h, nm, strlen(nm));
		T.kind = TK_INPUT;
		T.def = -1;
		T.result = 0;
		T.pos = (SrcPos){0};
		Dtype od = g->outputs[i].dtype;
		T.dtype = od == DT_F16 || od == DT_BF16 ? DT_F32 : od;
		int id = ir_add_tensor(h, &T);
		note_tensor(&x, id, -1);
		push(&x.contrib[t], id);
	}
	for (int t = 0; t < g->ntensors; t++) {
		if (!wanted(&x, t))
			continue;
		char nm[300];
		snprintf(nm, sizeof nm, "grad_%s", g->tensors[t].name);
		if (name_taken(g, nm) || name_taken(h, nm)) {
			diag_set(d, 2, "%s: the gradient of input '%s' is named '%s', which the graph "
				 "already uses", g->file, g->tensors[t].name, nm);
			goto fail;
		}
	}
	{
		Xl c = {.src = g, .dst = h, .tmap = x.tmap, .strip = x.o.strip_casts};
		for (int k = 0; k < g->ndefs; k++) {
			copy_def(&c, k, NULL);
			for (int r = 0; r < g->defs[k].nout; r++)
				note_tensor(&x, x.tmap[g->defs[k].out[r]], g->defs[k].out[r]);
		}
	}
	for (int k = g->ndefs - 1; k >= 0; k--) {
		if (g->defs[k].ty != TY_REAL)
			continue;
		int adj = finish_adjoint(&x, g->defs[k].out[0], NULL);
		if (adj >= 0 && derive_def(&x, k, adj) < 0)
			goto fail;
	}
	for (int t = 0; t < g->ntensors; t++) {
		if (!wanted(&x, t))
			continue;
		char nm[300];
		snprintf(nm, sizeof nm, "grad_%s", g->tensors[t].name);
		int gt = finish_adjoint(&x, t, nm);
		ir_add_output(h, gt, (Dtype)g->tensors[t].dtype, (SrcPos){0});
	}
	if (h->noutputs == 0) {
		diag_set(d, 2, "%s: no floating-point input to derive against", g->file);
		goto fail;
	}
	Graph *out = finish(h, file, d);
	gx_free(&x);
	return out;
fail:
	gx_free(&x);
	return NULL;
}

static const char *const fault_names[GF__COUNT] = {
	"max-both", "bcast-nosum", "view-transpose", "scatter-one", "div-denom",
};

unsigned gr_fault_parse(const char *name)
{
	for (int k = 0; k < GF__COUNT; k++)
		if (strcmp(name, fault_names[k]) == 0)
			return 1u << k;
	return 0;
}

const char *gr_fault_name(int k)
{
	return k >= 0 && k < GF__COUNT ? fault_names[k] : NULL;
}

unsigned gr_faults_of(uint64_t kf)
{
	_Static_assert(KF_GRAD_BCAST_NOSUM == KF_GRAD_MAX_BOTH << 1 &&
		       KF_GRAD_DIV_DENOM == KF_GRAD_MAX_BOTH << (GF__COUNT - 1),
		       "the KF_GRAD_* bits are GF_*'s, in order");
	return (unsigned)((kf / KF_GRAD_MAX_BOTH) & ((1u << GF__COUNT) - 1));
}

/* ------------------------------------------------------------ the directional check */

Graph *gr_strip(const Graph *g, Diag *d)
{
	Graph *h = ir_new(g->file);
	if (g->name)
		h->name = ir_strdup(h, g->name, strlen(g->name));
	copy_sizes(g, h);
	int *tm = malloc(((size_t)g->ntensors + 1) * sizeof *tm);
	IR_ASSERT(tm);
	for (int t = 0; t < g->ntensors; t++)
		tm[t] = g->tensors[t].kind == TK_INPUT ? copy_tensor(g, t, h, NULL) : -1;
	Xl c = {.src = g, .dst = h, .tmap = tm, .strip = true};
	for (int k = 0; k < g->ndefs; k++)
		copy_def(&c, k, NULL);
	for (int i = 0; i < g->noutputs; i++)
		ir_add_output(h, tm[g->outputs[i].tensor],
			      g->outputs[i].dtype == DT_I32 ? DT_I32 : DT_F64, (SrcPos){0});
	free(tm);
	char *text = ir_print(h);
	ir_free(h);
	Graph *out = ir_parse(text, strlen(text), g->file, NULL, 0, d);
	free(text);
	return out;
}

/* name[] = sum(i...) a[i] * b[i] (abs of each product when absval). */
static int full_dot(Gx *x, const char *name, int a, int b, bool absval)
{
	Graph *h = x->h;
	const Tensor *A = &h->tensors[a];
	Def D;
	memset(&D, 0, sizeof D);
	Ref idx[IR_MAXRANK];
	char *names[IR_MAXRANK];
	for (int p = 0; p < A->rank; p++) {
		char nb[16];
		snprintf(nb, sizeof nb, "i%d", p);
		names[p] = D.red[p].name = fresh_index(h, nb, names, p);
		D.red[p].lo = zero(h);
		D.red[p].hi = extent_ref(h, A->dims[p]);
		D.red[p].full = true;
		idx[p] = ir_var(h, (uint32_t)p, TY_INT);
	}
	D.nred = A->rank;
	D.monoid = A->rank ? MO_SUM : MO_NONE;
	Ref m = mkop(h, OP_MUL, read_at(h, a, idx, A->rank), read_at(h, b, idx, A->rank), 0);
	D.body = absval ? mkop(h, OP_ABS, m, 0, 0) : m;
	return new_def(x, fresh(h, name), NULL, &D);
}

/* name[] = sum of the scalars ts[0..n) */
static int scalar_sum(Gx *x, const char *name, const int *ts, int n)
{
	Def D;
	memset(&D, 0, sizeof D);
	Ref body = REF_NONE;
	for (int k = 0; k < n; k++)
		body = add(x->h, body, read_at(x->h, ts[k], NULL, 0));
	D.body = body ? body : ir_num(x->h, "0", 1);
	return new_def(x, fresh(x->h, name), NULL, &D);
}

Graph *gr_dirgraph(const Graph *g, const Graph *gg, int k, Diag *d)
{
	char file[1024];
	snprintf(file, sizeof file, "%s (directional check)", g->file ? g->file : "graph");
	Gx x = {0};
	x.g = g;
	x.d = d;
	Graph *h = x.h = ir_new(file);
	copy_sizes(gg, h);
	int na = gg->noutputs;
	int *tm = malloc(((size_t)gg->ntensors + (size_t)g->ntensors + 1) * sizeof *tm);
	int *ain = calloc((size_t)na + 1, sizeof *ain), *tin = calloc((size_t)na + 1, sizeof *tin);
	int *ys = calloc(2 * ((size_t)g->noutputs + 1), sizeof *ys);
	IR_ASSERT(tm && ain && tin && ys);
	for (int t = 0; t < gg->ntensors; t++)
		tm[t] = gg->tensors[t].kind == TK_INPUT ? copy_tensor(gg, t, h, NULL) : -1;
	for (int i = 0; i < na; i++) {
		const char *gn = gg->tensors[gg->outputs[i].tensor].name;
		ain[i] = strncmp(gn, "grad_", 5) == 0 ? ir_find_tensor(g, gn + 5) : -1;
		if (ain[i] < 0 || g->tensors[ain[i]].kind != TK_INPUT) {
			diag_set(d, 2, "%s: output '%s' of the gradient names no input", g->file, gn);
			goto fail;
		}
		Tensor T = g->tensors[ain[i]];
		char nm[300];
		snprintf(nm, sizeof nm, "t_%s", T.name);
		T.name = fresh(h, nm);
		T.dtype = DT_F64;
		T.pos = (SrcPos){0};
		tin[i] = ir_add_tensor(h, &T);
	}
	{
		Xl c = {.src = gg, .dst = h, .tmap = tm};
		for (int j = 0; j < gg->ndefs; j++)
			copy_def(&c, j, NULL);
	}
	int L[2];
	for (int s = 0; s < 2; s++) {
		const char *sfx = s ? "_m" : "_p";
		int *tg = tm + gg->ntensors;
		for (int t = 0; t < g->ntensors; t++)
			tg[t] = g->tensors[t].kind == TK_INPUT ? ir_find_tensor(h, g->tensors[t].name) : -1;
		for (int i = 0; i < na; i++) {
			const Tensor *A = &g->tensors[ain[i]];
			Def D;
			memset(&D, 0, sizeof D);
			Ref idx[IR_MAXRANK];
			lhs_like(h, &D, A->dims, A->rank, idx);
			char lit[32];
			snprintf(lit, sizeof lit, "0x1p-%d", k);
			Ref step = mkop(h, OP_MUL, ir_num(h, lit, strlen(lit)),
					read_at(h, tin[i], idx, A->rank), 0);
			D.body = mkop(h, s ? OP_SUB : OP_ADD, read_at(h, tg[ain[i]], idx, A->rank), step, 0);
			char nm[300];
			snprintf(nm, sizeof nm, "%s%s", A->name, sfx);
			tg[ain[i]] = new_def(&x, fresh(h, nm), A->dims, &D);
		}
		Xl c = {.src = g, .dst = h, .tmap = tg, .strip = true};
		for (int j = 0; j < g->ndefs; j++)
			copy_def(&c, j, sfx);
		int ny = 0;
		for (int i = 0; i < g->noutputs; i++) {
			const Tensor *Y = &g->tensors[g->outputs[i].tensor];
			char nm[300];
			snprintf(nm, sizeof nm, "d_%s", Y->name);
			int dy = ir_find_tensor(h, nm);
			if (dy < 0 || h->tensors[dy].kind != TK_INPUT)
				continue;
			snprintf(nm, sizeof nm, "L_%s%s", Y->name, sfx);
			ys[ny++] = full_dot(&x, nm, dy, tg[g->outputs[i].tensor], false);
		}
		L[s] = scalar_sum(&x, s ? "L_m" : "L_p", ys, ny);
	}
	{
		Def D;
		memset(&D, 0, sizeof D);
		char lit[32];
		snprintf(lit, sizeof lit, "0x1p%d", k - 1);
		D.body = mkop(h, OP_MUL, mkop(h, OP_SUB, read_at(h, L[0], NULL, 0),
					      read_at(h, L[1], NULL, 0), 0),
			      ir_num(h, lit, strlen(lit)), 0);
		int cd = new_def(&x, fresh(h, "cd"), NULL, &D);
		int *ip = calloc((size_t)na + 1, sizeof *ip), *mg = calloc((size_t)na + 1, sizeof *mg);
		IR_ASSERT(ip && mg);
		for (int i = 0; i < na; i++) {
			int ga = tm[gg->outputs[i].tensor];
			ip[i] = full_dot(&x, "ip_a", ga, tin[i], false);
			mg[i] = full_dot(&x, "mag_a", ga, tin[i], true);
		}
		int ipt = scalar_sum(&x, "ip", ip, na), mgt = scalar_sum(&x, "mag", mg, na);
		free(ip);
		free(mg);
		ir_add_output(h, ipt, DT_F64, (SrcPos){0});
		ir_add_output(h, cd, DT_F64, (SrcPos){0});
		ir_add_output(h, mgt, DT_F64, (SrcPos){0});
	}
	free(tm);
	free(ain);
	free(tin);
	free(ys);
	Graph *out = finish(h, file, d);
	gx_free(&x);
	return out;
fail:
	free(tm);
	free(ain);
	free(tin);
	free(ys);
	gx_free(&x);
	return NULL;
}
