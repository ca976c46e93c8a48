/* compiler/sched/online.c: the one-pass (online) forms of `online d1, d2, ...`
 * (graph-format.md section 7a; docs/online.md), recognised structurally from the graph.
 *
 * The rules are data (on_rules below): each names the reductions it takes, the running
 * state, how a term updates it, how two states merge (split pieces) and its domain. Every
 * rule is an identity over the reals only (domain RW_REAL of rewrite.c): the one-pass value
 * rounds differently from the multi-pass one, and the budgets (oracles/budget.c) analyse
 * the one-pass order, not the graph's.
 *
 * Recognition works on the graph's nodes. A member's body is matched after expanding every
 * read of a plain definition (monoid none, a non-member) into that definition's body at the
 * read's indices (frames below), so `p[i, j] = exp(s[i, j] - m[i])` read by `l` and by `o`
 * is seen as the exp itself. Two expressions are the same when they are equal node for
 * node after expansion, variables compared through the frames down to the member's own
 * variables (the reduction variable of every member is one variable J).
 *
 * Common conditions of every rule: every member has exactly one reduction index; the
 * ranges of all members, compared through the rows the later members read, are the same;
 * a later member reads an earlier one only where its rule says; no member is read by a
 * definition the set's pass computes (other than as the rule says). A set that fits no
 * rule is an error that names what is missing.
 *
 * Ownership: on_match fills a caller's OnPlan (no heap). Failure: -1 with the reason in why.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../compiler.h"

const OnRuleInfo on_rules[ON__COUNT] = {
	[ON_SOFTMAX] = {"online-softmax", "m = max(j) x; l = sum(j) exp(x - m) or exp((x - m) * c)",
			"(m, l)",
			"m' = max(m, x); l = l * exp((m - m') * c) + exp((x - m') * c)",
			"m = max(mA, mB); l = lA * exp((mA - m) * c) + lB * exp((mB - m) * c)",
			"real: sum exp((x - m) * c) = exp((m' - m) * c) * sum exp((x - m') * c) for any m, "
			"m'; c > 0 independent of j (a constant); a term under `cond ? . : 0` is 0 or "
			"the term"},
	[ON_FLASH] = {"online-attention", "online-softmax (m, l) and o = sum(j) p * v / l, "
		      "p the softmax term, v independent of m and l, l read at the row",
		      "(m, l, acc)",
		      "as online-softmax; acc = acc * exp((m - m') * c) + p(m') * v; o = acc / l at the end",
		      "acc = accA * exp((mA - m) * c) + accB * exp((mB - m) * c)",
		      "real: the division by l (independent of j) distributes over the sum; the rest "
		      "as online-softmax"},
	[ON_WELFORD] = {"welford", "mu = sum(j) x / N; var = sum(j) (x - mu) * (x - mu) / N', N "
			"and N' the range's length",
			"(n, mean, M2)",
			"n = n + 1; d = x - mean; mean = mean + d / n; M2 = M2 + d * (x - mean); "
			"mu = mean, var = M2 / N'",
			"Chan: d = meanB - meanA; n = nA + nB; mean = meanA + d * nB / n; "
			"M2 = M2A + M2B + d * d * nA * nB / n",
			"real: Welford's and Chan's updates give the mean and the sum of squared "
			"deviations exactly over the reals (Chan, Golub, LeVeque 1983)"},
	[ON_LSE] = {"online-logsumexp", "z = logsumexp(j) x", "(m, l)",
		    "as online-softmax with c = 1; z = m + log(l) (m itself when not finite)",
		    "as online-softmax",
		    "real: logsumexp(x) = m + log(sum exp(x - m)) for any finite m"},
};

/* ------------------------------------------------------------ frames */

enum { MAXFR = 96 };

typedef struct Fr Fr;
struct Fr {
	const Fr *up;
	int def;
	Ref ix[IR_MAXVARS];     /* var v is ix[v] in frame up, where canon[v] < 0 */
	int canon[IR_MAXVARS];  /* else a canonical variable id */
};

typedef struct {
	const Graph *g;
	const bool *member;     /* per tensor: a member's result */
	const bool *dep;        /* per tensor: depends on a member (transitively) */
	Fr fr[MAXFR];
	int nfr;
	bool full;
} Mx;

static Fr *fr_new(Mx *m)
{
	if (m->nfr == MAXFR) {
		m->full = true;
		return NULL;
	}
	Fr *f = &m->fr[m->nfr++];
	memset(f, 0, sizeof *f);
	for (int v = 0; v < IR_MAXVARS; v++)
		f->canon[v] = -1;
	return f;
}

static const Fr *fr_root(Mx *m, int def)
{
	Fr *f = fr_new(m);
	if (!f)
		return NULL;
	f->def = def;
	for (int v = 0; v < IR_MAXVARS; v++)
		f->canon[v] = def * IR_MAXVARS + v;
	return f;
}

static bool is_plain(const Mx *m, int t)
{
	const Tensor *T = &m->g->tensors[t];
	return T->kind == TK_DEF && !m->member[t] && m->g->defs[T->def].monoid == MO_NONE;
}

/* Follows variables bound to index expressions and reads of plain definitions down to
 * a node that is neither. */
static Ref norm(Mx *m, Ref r, const Fr **F)
{
	for (;;) {
		const Node *n = ir_node(m->g, r);
		if (n->kind == NK_VAR && (*F)->canon[n->u.var] < 0) {
			r = (*F)->ix[n->u.var];
			*F = (*F)->up;
			continue;
		}
		if (n->kind == NK_READ && !n->u.read.pad && is_plain(m, (int)n->u.read.tensor)) {
			const Def *D = &m->g->defs[m->g->tensors[n->u.read.tensor].def];
			Fr *f = fr_new(m);
			if (!f)
				return r;
			f->up = *F;
			f->def = m->g->tensors[n->u.read.tensor].def;
			const Ref *ix = ir_read_idx(m->g, n);
			for (int k = 0; k < D->nlhs; k++)
				f->ix[k] = ix[k];
			*F = f;
			r = D->body;
			continue;
		}
		return r;
	}
}

static bool eq(Mx *m, Ref a, const Fr *Fa, Ref b, const Fr *Fb)
{
	if (a == REF_NONE || b == REF_NONE)
		return a == b;
	a = norm(m, a, &Fa);
	b = norm(m, b, &Fb);
	const Node *x = ir_node(m->g, a), *y = ir_node(m->g, b);
	if (m->full || x->kind != y->kind)
		return false;
	switch (x->kind) {
	case NK_VAR: return Fa->canon[x->u.var] == Fb->canon[y->u.var];
	case NK_INT: return x->u.ival == y->u.ival;
	case NK_SIZE: return x->u.size == y->u.size;
	case NK_NUM: return strcmp(m->g->lits[x->u.lit].text, m->g->lits[y->u.lit].text) == 0;
	case NK_READ: {
		if (x->u.read.tensor != y->u.read.tensor || x->u.read.n != y->u.read.n)
			return false;
		const Ref *ix = ir_read_idx(m->g, x), *iy = ir_read_idx(m->g, y);
		for (uint32_t i = 0; i < x->u.read.n; i++)
			if (!eq(m, ix[i], Fa, iy[i], Fb))
				return false;
		return eq(m, x->u.read.pad, Fa, y->u.read.pad, Fb);
	}
	case NK_OP:
		if (x->op != y->op)
			return false;
		for (int i = 0; i < op_info((Op)x->op)->arity; i++)
			if (!eq(m, x->a[i], Fa, y->a[i], Fb))
				return false;
		return true;
	default:
		return false;
	}
}

/* Does r (anything it reads, through index lists and plain definitions) depend on a
 * member? */
static bool reads_dep(const Mx *m, Ref r)
{
	if (r == REF_NONE)
		return false;
	const Node *n = ir_node(m->g, r);
	if (n->kind == NK_READ) {
		if (m->dep[n->u.read.tensor] || reads_dep(m, n->u.read.pad))
			return true;
		const Ref *ix = ir_read_idx(m->g, n);
		for (uint32_t i = 0; i < n->u.read.n; i++)
			if (reads_dep(m, ix[i]))
				return true;
		return false;
	}
	if (n->kind == NK_OP)
		for (int i = 0; i < op_info((Op)n->op)->arity; i++)
			if (reads_dep(m, n->a[i]))
				return true;
	return false;
}

/* Does r mention a variable or read anything (r is not a constant)? */
static bool varies(const Graph *g, Ref r)
{
	const Node *n = ir_node(g, r);
	if (n->kind == NK_VAR || n->kind == NK_READ)
		return true;
	if (n->kind == NK_OP)
		for (int i = 0; i < op_info((Op)n->op)->arity; i++)
			if (varies(g, n->a[i]))
				return true;
	return false;
}

/* A constant that is positive over the reals: a positive literal, integer or size, and
 * exp, sqrt and rsqrt of, products and quotients of, such. */
static bool positive(const Graph *g, Ref r)
{
	const Node *n = ir_node(g, r);
	switch (n->kind) {
	case NK_NUM: return g->lits[n->u.lit].approx > 0;
	case NK_INT: return n->u.ival > 0;
	case NK_SIZE: return true;
	case NK_OP:
		if (varies(g, r))
			return false;
		switch ((Op)n->op) {
		case OP_EXP: case OP_EXP2: return true;
		case OP_SQRT: case OP_RSQRT: case OP_CAST_F64: case OP_CAST_F32: case OP_CAST_F16:
		case OP_CAST_BF16:
			return positive(g, n->a[0]);
		case OP_MUL: case OP_DIV: return positive(g, n->a[0]) && positive(g, n->a[1]);
		default: return false;
		}
	default: return false;
	}
}

/* ------------------------------------------------------------ the terms */

/* A read of member tensor t (after expansion) at r in frame F: *at gets its frame. */
static bool read_of(Mx *m, Ref r, const Fr *F, int t, Ref *at, const Fr **Fat)
{
	r = norm(m, r, &F);
	const Node *n = ir_node(m->g, r);
	if (n->kind != NK_READ || (int)n->u.read.tensor != t || n->u.read.pad)
		return false;
	*at = r;
	*Fat = F;
	return true;
}

/* The frame of the max member mdef read at node `at` (frame Fat), its reduction variable
 * bound to canonical J. */
static const Fr *member_frame(Mx *m, int mdef, Ref at, const Fr *Fat, int J)
{
	Fr *f = fr_new(m);
	if (!f)
		return NULL;
	const Def *D = &m->g->defs[mdef];
	const Node *n = ir_node(m->g, at);
	const Ref *ix = ir_read_idx(m->g, n);
	f->up = Fat;
	f->def = mdef;
	for (int k = 0; k < D->nlhs; k++)
		f->ix[k] = ix[k];
	f->canon[D->nlhs] = J;
	return f;
}

/* Do member d's range (frame Fd) and the range of member e (frame Fe) agree? */
static bool same_range(Mx *m, int d, const Fr *Fd, int e, const Fr *Fe)
{
	const Def *A = &m->g->defs[d], *B = &m->g->defs[e];
	return eq(m, A->red[0].lo, Fd, B->red[0].lo, Fe) && eq(m, A->red[0].hi, Fd, B->red[0].hi, Fe);
}

/* The softmax term at r (frame F) of max member mdef: [cond ? ] exp((x - m) [* c]) [: 0],
 * with x the max's own term at the row of the read of m, cond and c free of members, c a
 * positive constant. */
static bool sm_term(Mx *m, Ref r, const Fr *F, int mdef, int J, Ref *scale, const Fr **Fm)
{
	const Graph *g = m->g;
	r = norm(m, r, &F);
	const Node *n = ir_node(g, r);
	if (n->kind == NK_OP && n->op == OP_SELECT) {
		const Node *z = ir_node(g, n->a[2]);
		bool zero = (z->kind == NK_NUM && g->lits[z->u.lit].approx == 0) ||
			    (z->kind == NK_INT && z->u.ival == 0);
		if (!zero || reads_dep(m, n->a[0]))
			return false;
		return sm_term(m, n->a[1], F, mdef, J, scale, Fm);
	}
	if (n->kind != NK_OP || n->op != OP_EXP)
		return false;
	Ref a = norm(m, n->a[0], &F);
	const Node *x = ir_node(g, a);
	*scale = REF_NONE;
	if (x->kind == NK_OP && x->op == OP_MUL) {
		Ref c = x->a[1], d = x->a[0];
		if (!positive(g, c)) {
			c = x->a[0];
			d = x->a[1];
		}
		if (!positive(g, c))
			return false;
		*scale = c;
		a = norm(m, d, &F);
		x = ir_node(g, a);
	}
	if (x->kind != NK_OP || x->op != OP_SUB)
		return false;
	Ref at;
	const Fr *Fat;
	int mt = g->defs[mdef].out[0];
	if (!read_of(m, x->a[1], F, mt, &at, &Fat) || reads_dep(m, x->a[0]))
		return false;
	const Fr *Fr_m = member_frame(m, mdef, at, Fat, J);
	if (!Fr_m || !eq(m, x->a[0], F, g->defs[mdef].body, Fr_m))
		return false;
	*Fm = Fr_m;
	return true;
}

/* ------------------------------------------------------------ the rules */

static int why(char *w, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int why(char *w, size_t n, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(w, n, fmt, ap);
	va_end(ap);
	return -1;
}

static const char *tname(const Graph *g, int d)
{
	return g->tensors[g->defs[d].out[0]].name;
}

static int match_softmax(Mx *m, OnPlan *p, char *w, size_t nw)
{
	const Graph *g = m->g;
	int md = p->def[0], ld = p->def[1];
	if (g->defs[md].monoid != MO_MAX || g->defs[ld].monoid != MO_SUM)
		return why(w, nw, "no one-pass form: online-softmax needs a max then a sum (here "
			   "'%s' then '%s'); welford needs two sums", tname(g, md), tname(g, ld));
	int J = ld * IR_MAXVARS + g->defs[ld].nlhs;
	const Fr *Fl = fr_root(m, ld), *Fm = NULL;
	if (!Fl || !sm_term(m, g->defs[ld].body, Fl, md, J, &p->scale, &Fm))
		return why(w, nw, "no one-pass form: the terms of '%s' are not exp(x - %s) or "
			   "exp((x - m) * c) with x the max's terms and c a positive constant "
			   "(online-softmax)", tname(g, ld), tname(g, md));
	if (!same_range(m, ld, Fl, md, Fm))
		return why(w, nw, "no one-pass form: '%s' and '%s' reduce over different ranges",
			   tname(g, md), tname(g, ld));
	p->rule = ON_SOFTMAX;
	return 0;
}

static int match_flash(Mx *m, OnPlan *p, char *w, size_t nw)
{
	const Graph *g = m->g;
	OnPlan q = *p;
	q.n = 2;
	if (match_softmax(m, &q, w, nw))
		return -1;
	int md = p->def[0], ld = p->def[1], od = p->def[2];
	const Def *O = &g->defs[od];
	int J = od * IR_MAXVARS + O->nlhs;
	const Fr *Fo = fr_root(m, od), *Fl = NULL, *Fm = NULL;
	const Node *n = ir_node(g, O->body);
	Ref at;
	if (O->monoid != MO_SUM || n->kind != NK_OP || n->op != OP_DIV || !Fo ||
	    !read_of(m, n->a[1], Fo, g->defs[ld].out[0], &at, &Fl))
		return why(w, nw, "no one-pass form: '%s' is not sum(j) p * v / %s with the divisor "
			   "read at the row (online-attention)", tname(g, od), tname(g, ld));
	const Fr *Flr = member_frame(m, ld, at, Fl, J);
	Ref num = n->a[0];
	const Fr *Fn = Fo;
	num = norm(m, num, &Fn);
	const Node *x = ir_node(g, num);
	Ref sc = REF_NONE;
	bool ok = Flr && x->kind == NK_OP && x->op == OP_MUL;
	for (int s = 0; ok && s < 2; s++) {
		if (sm_term(m, x->a[s], Fn, md, J, &sc, &Fm) && !reads_dep(m, x->a[1 - s])) {
			p->vside = s;
			break;
		}
		ok = s == 0;
	}
	if (!ok)
		return why(w, nw, "no one-pass form: the numerator of '%s' is not p * v with p the "
			   "softmax term of '%s' and v independent of the set (online-attention)",
			   tname(g, od), tname(g, md));
	/* the same term as l's, at the same row */
	if (!eq(m, g->defs[ld].body, Flr, x->a[p->vside], Fn) ||
	    (sc == REF_NONE) != (q.scale == REF_NONE) ||
	    (sc != REF_NONE && !eq(m, sc, Fn, q.scale, Fo)))
		return why(w, nw, "no one-pass form: the probabilities of '%s' are not the terms of "
			   "'%s' at its row (online-attention)", tname(g, od), tname(g, ld));
	if (!same_range(m, od, Fo, ld, Flr))
		return why(w, nw, "no one-pass form: '%s' and '%s' reduce over different ranges",
			   tname(g, ld), tname(g, od));
	p->scale = q.scale;
	p->num = n->a[0];
	p->rule = ON_FLASH;
	return 0;
}

/* x / N with N the length of the constant range [0, N) of d; or x * 2^-k with N = 2^k,
 * the same value exactly (rw_compile's x / 2^k -> x * 2^-k turns the one into the other
 * before lowering: lowering, emulation and budgets take the body's operation, / N or
 * * 2^-k, for var's final step) */
static bool mean_of(Mx *m, int d, Ref *x)
{
	const Graph *g = m->g;
	const Def *D = &g->defs[d];
	const Node *n = ir_node(g, D->body), *lo = ir_node(g, D->red[0].lo);
	if (n->kind != NK_OP || (n->op != OP_DIV && n->op != OP_MUL) || lo->kind != NK_INT ||
	    lo->u.ival != 0)
		return false;
	const Node *N = ir_node(g, n->a[1]), *H = ir_node(g, D->red[0].hi);
	int64_t nv = N->kind == NK_INT ? N->u.ival : N->kind == NK_SIZE ? g->sizes[N->u.size].value : -1;
	int64_t hv = H->kind == NK_INT ? H->u.ival : H->kind == NK_SIZE ? g->sizes[H->u.size].value : -2;
	*x = n->a[0];
	if (n->op == OP_MUL)   /* an exact 2^-k times N = 2^k is 1 */
		return N->kind == NK_NUM && g->lits[N->u.lit].exact && hv > 0 &&
		       (hv & (hv - 1)) == 0 && g->lits[N->u.lit].approx * (double)hv == 1.0;
	return nv == hv && nv > 0;
}

static int match_welford(Mx *m, OnPlan *p, char *w, size_t nw)
{
	const Graph *g = m->g;
	int ud = p->def[0], vd = p->def[1];
	Ref x, sq;
	if (!mean_of(m, ud, &x) || reads_dep(m, x))
		return why(w, nw, "no one-pass form: '%s' is not a mean sum(j) x / N over [0, N) "
			   "(welford; online-softmax needs a max first, here '%s')", tname(g, ud),
			   tname(g, vd));
	int J = vd * IR_MAXVARS + g->defs[vd].nlhs;
	const Fr *Fv = fr_root(m, vd), *F = Fv;
	bool ok = Fv && mean_of(m, vd, &sq);
	Ref a = ok ? norm(m, sq, &F) : REF_NONE;
	const Node *n = ok ? ir_node(g, a) : NULL;
	ok = ok && n->kind == NK_OP && n->op == OP_MUL && eq(m, n->a[0], F, n->a[1], F);
	const Fr *Fd = F;
	Ref d = ok ? norm(m, n->a[0], &Fd) : REF_NONE;
	const Node *dn = ok ? ir_node(g, d) : NULL;
	Ref at;
	const Fr *Fat = NULL, *Fu = NULL;
	ok = ok && dn->kind == NK_OP && dn->op == OP_SUB &&
	     read_of(m, dn->a[1], Fd, g->defs[ud].out[0], &at, &Fat) && !reads_dep(m, dn->a[0]);
	ok = ok && (Fu = member_frame(m, ud, at, Fat, J)) && eq(m, dn->a[0], Fd, x, Fu) &&
	     same_range(m, vd, Fv, ud, Fu);
	if (!ok)
		return why(w, nw, "no one-pass form: '%s' is not sum(j) (x - %s) * (x - %s) / N over "
			   "the mean's terms x (welford)", tname(g, vd), tname(g, ud), tname(g, ud));
	p->rule = ON_WELFORD;
	return 0;
}

int on_match(const Graph *g, const int *defs, int n, OnPlan *p, char *w, size_t nw)
{
	memset(p, 0, sizeof *p);
	p->rule = -1;
	p->scale = p->num = REF_NONE;
	if (n < 1 || n > 3)
		return why(w, nw, "no one-pass form for a set of %d: a rule takes 1 (logsumexp), 2 "
			   "(a max and a sum; two sums) or 3 (a max, a sum, a contraction) reductions", n);
	for (int k = 0; k < n; k++) {
		p->def[k] = defs[k];
		for (int j = 0; j < k; j++)
			if (p->def[j] > p->def[k]) {
				int t = p->def[j];
				p->def[j] = p->def[k];
				p->def[k] = t;
			}
	}
	p->n = n;
	for (int k = 0; k < n; k++)
		if (g->defs[p->def[k]].nred != 1)
			return why(w, nw, "no one-pass form: '%s' reduces over %s indices; the rules take "
				   "one reduction index", tname(g, p->def[k]),
				   g->defs[p->def[k]].nred ? "several" : "no");
	size_t nt = (size_t)g->ntensors + 1;
	bool *mem = calloc(2 * nt, 1);
	IR_ASSERT(mem);
	bool *dep = mem + nt;
	for (int k = 0; k < n; k++)
		mem[g->defs[p->def[k]].out[0]] = true;
	for (int t = 0; t < g->ntensors; t++) {
		dep[t] = mem[t];
		const Tensor *T = &g->tensors[t];
		if (dep[t] || T->kind != TK_DEF)
			continue;
		/* a definition depends on a member when anything it reads does (file order:
		 * what it reads comes before it) */
		Mx tmp = {g, mem, dep, .nfr = 0};
		const Def *D = &g->defs[T->def];
		dep[t] = reads_dep(&tmp, D->body);
		for (int r = 0; !dep[t] && r < D->nred; r++)
			dep[t] = reads_dep(&tmp, D->red[r].lo) || reads_dep(&tmp, D->red[r].hi);
	}
	Mx *m = calloc(1, sizeof *m);
	IR_ASSERT(m);
	m->g = g;
	m->member = mem;
	m->dep = dep;
	int rc;
	const Def *A = &g->defs[p->def[0]];
	if (n == 1) {
		rc = A->monoid == MO_LOGSUMEXP ? 0
			: why(w, nw, "no one-pass form: a set of one needs a logsumexp (online-logsumexp)"
			      "; '%s' is a %s", tname(g, p->def[0]), monoid_name(A->monoid));
		if (!rc)
			p->rule = ON_LSE;
	} else if (n == 2 && A->monoid == MO_SUM) {
		rc = match_welford(m, p, w, nw);
	} else if (n == 2) {
		rc = match_softmax(m, p, w, nw);
	} else {
		rc = match_flash(m, p, w, nw);
	}
	/* the later members read the earlier ones only through their rule: an earlier member
	 * in a range bound, or in something the pass does not recompute, has no one-pass form */
	for (int k = 1; !rc && k < n; k++) {
		const Def *D = &g->defs[p->def[k]];
		if (reads_dep(m, D->red[0].lo) || reads_dep(m, D->red[0].hi))
			rc = why(w, nw, "no one-pass form: the range of '%s' depends on '%s'",
				 tname(g, p->def[k]), tname(g, p->def[0]));
	}
	if (m->full && !rc)
		rc = why(w, nw, "no one-pass form: the expressions are too deep to compare");
	free(m);
	free(mem);
	return rc;
}

int on_plan(const Graph *g, const Schedule *s, int d, OnPlan *p)
{
	if (d < 0 || d >= s->ndefs || !s->defs[d].online)
		return -1;
	int lead = s->defs[d].online, defs[3], n = 0;
	for (int k = 0; k < g->ndefs && n < 3; k++)
		if (s->defs[k].online == lead)
			defs[n++] = k;
	char w[8];
	return on_match(g, defs, n, p, w, sizeof w);
}

bool on_reads(const Graph *g, Ref r, const bool *t)
{
	if (r == REF_NONE)
		return false;
	const Node *n = ir_node(g, r);
	if (n->kind == NK_READ) {
		if (t[n->u.read.tensor] || on_reads(g, n->u.read.pad, t))
			return true;
		const Ref *ix = ir_read_idx(g, n);
		for (uint32_t i = 0; i < n->u.read.n; i++)
			if (on_reads(g, ix[i], t))
				return true;
		return false;
	}
	for (int i = 0; n->kind == NK_OP && i < op_info((Op)n->op)->arity; i++)
		if (on_reads(g, n->a[i], t))
			return true;
	return false;
}
