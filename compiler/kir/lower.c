/* compiler/lower.c: lowering a scheduled graph to the kernel IR (kir.h).
 *
 * One kernel per stored definition, in file order. Buffers: one per input (its dtype) and
 * per stored result (the schedule's store format; topk indices and integer results i32).
 * Expressions are translated under an environment mapping the definition's variables to
 * kernel expressions; a read of an inlined definition translates that definition's body
 * under an environment mapping its left-hand variables to the read's index expressions,
 * which is how transposed, strided and windowed views of an inlined producer work.
 *
 * Semantics kept (graph-format.md sections 3-6; the schedule changes only rounding):
 * - A definition computes in its op format rf (type rt: f32 for f32, f16 and bf16, whose
 *   results are each rounded to rf); integers are exact int64; a value read from a buffer,
 *   a literal (correctly rounded from its text) and an integer used as a real are rounded
 *   once into rf; a cast rounds into its format (a literal straight from its text) and the
 *   value is used as it is; max, min, abs, neg, floor, ceil and ?: are exact.
 * - `x[i] ?? D`: the index is tested against the extents; the read happens at a clamped,
 *   in-bounds index and the result is selected, so no statement ever reads out of bounds.
 * - An indirect index is checked when the read would really be evaluated (the guard is
 *   the conjunction of the ?: conditions on its path): out of range, the kernel reports the
 *   error and reads index 0.
 * - sum starts from -0 (so a sum of -0 terms is -0) and an empty sum gives +0; prod from 1;
 *   max/min from -inf/+inf with IEEE 754-2019 maximum/minimum; logsumexp is two passes,
 *   m = max, then m + log(sum exp(t - m)), m itself when m is not finite; argmax/argmin
 *   keep the first best, a NaN winning; topk inserts each term into a sorted list of K
 *   (NaN largest, ties: smaller index first) and reports a range shorter than K.
 * - Integer results are checked to fit in 32 bits when stored.
 * Not reported: an integer `%` or `/` by a zero divisor gives 0 (both ?: branches are
 * evaluated, and the guarded form `b != 0 ? a % b : 0` must not fail).
 *
 * Seeded faults (LowerOpts.faults, KF_* of compiler.h) break one of the rules above on
 * purpose, to measure the fuzzer; each is a test of l->faults made while lowering, so a
 * program lowered without faults is exactly what it was before they existed. Each site is
 * marked "fault:".
 */
#include <limits.h>
#include <math.h>
#include <mpfr.h>
#include <stdlib.h>
#include <string.h>
#include "../map/map.h"

enum { HOIST_MAX = 16384, TERMS_MAX = 1 << 22 };

typedef struct {
	Kernels *k;
	const Graph *g;
	const Schedule *s;
	uint64_t faults;
	Diag *d;
	int def;          /* the definition being lowered */
	/* an online pass (el_online): reads of member role r give ov[r] (a value of format
	 * ovf[r]) and record their indices in ovidx[r]; reads of plain definitions that
	 * depend on a member (expand) are computed where read, not loaded */
	const OnPlan *on;
	int32_t ov[3];
	Dtype ovf[3];
	int32_t ovidx[3][IR_MAXRANK];
	bool ovseen[3], ovclash;
	bool *expand;
	OnPlan plan;      /* of the definition being lowered, when it is in an online set */
	/* reductions an online pass computes where they are read (absorbed, no buffer): the
	 * reads met while translating one term, computed by flush() before the term's use */
	int npend;
	struct { int t; int32_t idx[IR_MAXRANK]; int32_t v; } pend[8];
	bool pend_over, flush_failed;
} L;

typedef struct {
	int def;
	KType rt;            /* type of real arithmetic */
	Dtype rf;            /* its format: rt's, or f16/bf16 computed in f32 and rounded */
	int32_t guard;       /* path condition, -1: always */
	int32_t var[IR_MAXVARS];
} Env;

/* ------------------------------------------------------------ helpers */

static int32_t iop(L *l, Op op, int32_t a, int32_t b)
{
	return kx_op(l->k, op, KT_INT, a, b, -1);
}

static int32_t bop(L *l, Op op, int32_t a, int32_t b)
{
	return kx_op(l->k, op, KT_BOOL, a, b, -1);
}

static int32_t and_(L *l, int32_t a, int32_t b)
{
	return a < 0 ? b : b < 0 ? a : bop(l, OP_AND, a, b);
}

static int32_t sel(L *l, int32_t c, int32_t a, int32_t b)
{
	return kx_op(l->k, OP_SELECT, kx_type(l->k, a), c, a, b);
}

static int32_t ic(L *l, int64_t v)
{
	return kx_int(l->k, v);
}

static int32_t var(L *l, KType t, int64_t n, bool loop)
{
	return kv_new(l->k, t, n, loop);
}

/* A literal rounded to nearest into format f, straight from its text. */
static double lit_round(const char *text, Dtype f)
{
	if (f == DT_F64)
		return strtod(text, NULL);
	if (f == DT_F32)
		return (double)strtof(text, NULL);
	COV(lower_literal_narrow);
	const DtypeInfo *di = dt_info(f);
	mpfr_exp_t emin = mpfr_get_emin(), emax = mpfr_get_emax();
	mpfr_t x;
	mpfr_init2(x, di->prec);
	mpfr_set_emin(di->emin);
	mpfr_set_emax(di->emax);
	int t = mpfr_strtofr(x, text, NULL, 0, MPFR_RNDN);
	t = mpfr_check_range(x, t, MPFR_RNDN);
	mpfr_subnormalize(x, t, MPFR_RNDN);
	double v = mpfr_get_d(x, MPFR_RNDN);
	double w = strtod(text, NULL);   /* (to double: nearest, for the test below alone) */
	if (w != 0 && fabs(w) < ldexp(1.0, (int)(di->emin + di->prec - 2)))
		COV(lower_literal_tiny);
	mpfr_set_emin(emin);
	mpfr_set_emax(emax);
	mpfr_clear(x);
	return v;
}

static int32_t to_t(L *l, KType t, int32_t x)
{
	return kx_cvt(l->k, t, x);
}

static bool narrow(Dtype f)
{
	return f == DT_F16 || f == DT_BF16;
}

/* The precision rank of a real format (f16 and bf16 alike), for KF_ACCUM_IGNORED. */
static int width(Dtype f)
{
	return f == DT_F64 ? 3 : f == DT_F32 ? 2 : narrow(f) ? 1 : 4;
}

/* A real result of format f's arithmetic: rounded to f when f is narrower than its type. */
static int32_t fit(L *l, Dtype f, int32_t x)
{
	/* f32 over an f64 value happens only under the fault KF_ACCUM_IGNORED */
	bool f32_of_f64 = f == DT_F32 && kx_type(l->k, x) == KT_F64;
	if (narrow(f))
		COV(lower_arith_narrow);
	return narrow(f) || f32_of_f64 ? kx_round(l->k, f, x) : x;
}

/* x, an integer or a real of format `from`, as a value of e's arithmetic (rounded once). */
static int32_t into(L *l, const Env *e, int32_t x, Dtype from)
{
	KType s = kx_type(l->k, x);
	if (s == KT_BOOL)
		return x;
	if (s == KT_INT)
		x = to_t(l, narrow(e->rf) ? KT_F64 : e->rt, x);
	if (narrow(e->rf) && from != e->rf)
		x = kx_round(l->k, e->rf, x);
	return to_t(l, e->rt, x);
}

/* Real arithmetic in format f (type t). */
static int32_t arith(L *l, Dtype f, Op op, KType t, int32_t a, int32_t b, int32_t c)
{
	if (t == KT_F64)
		COV(lower_arith_f64);
	return fit(l, f, kx_op(l->k, op, t, a, b, c));
}

/* Flat element index of tensor t at indices idx (row-major, Horner form). */
static int32_t flat(L *l, int t, const int32_t *idx)
{
	const Tensor *T = &l->g->tensors[t];
	int32_t f = ic(l, 0);
	for (int i = 0; i < T->rank; i++)
		f = iop(l, OP_ADD, iop(l, OP_MUL, f, ic(l, T->dims[i].value)), idx[i]);
	return f;
}

static int32_t site(L *l, const KSite *s)
{
	/* field by field: a KSite has padding bytes, which memcmp would read (and they are
	 * indeterminate, which made error-site numbers and emitted text vary between runs) */
	for (int32_t i = 0; i < l->k->nsites; i++) {
		const KSite *x = &l->k->sites[i];
		if (x->kind == s->kind && x->def == s->def && x->tensor == s->tensor &&
		    x->dim == s->dim && x->idx_tensor == s->idx_tensor && x->bound == s->bound)
			return i;
	}
	return ksite_new(l->k, s);
}

/* ------------------------------------------------------------ expressions */

static int32_t tr(L *l, const Env *e, Ref r);

/* A read of an absorbed reduction t (kir_lower: one an online pass computes where it is
 * read): a local, computed by flush() before the statement that uses it, holding the value
 * the reduction's kernel would have stored (rounded to its store format). */
static int32_t pending(L *l, const Env *e, int t, const int32_t *idx)
{
	const Tensor *T = &l->g->tensors[t];
	Dtype sf = l->s->defs[T->def].store;
	int k = 0;
	for (; k < l->npend; k++) {
		bool same = l->pend[k].t == t;
		for (int i = 0; same && i < T->rank; i++)
			same = l->pend[k].idx[i] == idx[i];
		if (same)
			break;
	}
	if (k == l->npend) {
		if (k == (int)ARRAY_LEN(l->pend)) {
			l->pend_over = true;
			return into(l, e, kx_real(l->k, kt_of(sf), 0.0), sf);
		}
		l->pend[k].t = t;
		memcpy(l->pend[k].idx, idx, (size_t)T->rank * sizeof *idx);
		l->pend[k].v = var(l, kt_of(sf), 0, false);
		l->npend++;
	}
	return into(l, e, kx_var(l->k, l->pend[k].v), sf);
}

/* The value of tensor t at in-bounds indices idx, in e's types. */
static int32_t value_at(L *l, const Env *e, int t, const int32_t *idx)
{
	const Graph *g = l->g;
	int32_t b = l->k->tbuf[t];
	for (int r = 0; l->on && r < l->on->n; r++) {
		if (g->defs[l->on->def[r]].out[0] != t || l->ov[r] < 0)
			continue;
		for (int i = 0; i < g->tensors[t].rank; i++) {
			l->ovclash |= l->ovseen[r] && l->ovidx[r][i] != idx[i];
			l->ovidx[r][i] = idx[i];
		}
		l->ovseen[r] = true;
		return into(l, e, l->ov[r], l->ovf[r]);
	}
	if (l->on && l->expand[t])
		b = -1;
	if (b >= 0) {
		int32_t x = kx_load(l->k, b, flat(l, t, idx));
		return kx_type(l->k, x) == KT_INT ? x : into(l, e, x, l->k->bufs[b].fmt);
	}
	int d = g->tensors[t].def;
	const Def *D = &g->defs[d];
	if (D->monoid != MO_NONE)
		return pending(l, e, t, idx);
	COV(lower_inline);
	if (g->defs[e->def].monoid != MO_NONE)
		COV(lower_inline_reduce);
	if (e->def != l->def)
		COV(lower_inline_nested);
	Env sub;
	memset(&sub, 0, sizeof sub);
	sub.def = d;
	sub.rt = kt_of(l->s->defs[d].op);
	sub.rf = l->s->defs[d].op;
	sub.guard = e->guard;
	for (int i = 0; i < D->nlhs; i++)
		sub.var[i] = idx[i];
	int32_t x = tr(l, &sub, D->body);
	if (kx_type(l->k, x) != KT_INT && narrow(e->rf) && sub.rf != e->rf)
		COV(lower_inline_narrow);
	return kx_type(l->k, x) == KT_INT ? x : into(l, e, x, sub.rf);
}

static int32_t int_op(L *l, Op op, int32_t a, int32_t b, int32_t c);

static bool is_const(const Node *n)
{
	return n->kind == NK_INT || n->kind == NK_SIZE;
}

/* An index expression of a read. Only the view faults make it differ from tr: fault:
 * KF_VIEW_OFFSET drops a literal added or subtracted, KF_VIEW_STRIDE a constant factor. */
static int32_t tr_index(L *l, const Env *e, Ref r)
{
	const Node *n = ir_node(l->g, r);
	unsigned f = l->faults & (KF_VIEW_OFFSET | KF_VIEW_STRIDE);
	if (!f || n->kind != NK_OP || n->ty != TY_INT)
		return tr(l, e, r);
	Op op = (Op)n->op;
	int arity = op_info(op)->arity;
	const Node *a = ir_node(l->g, n->a[0]), *b = arity > 1 ? ir_node(l->g, n->a[1]) : NULL;
	if ((f & KF_VIEW_OFFSET) && (op == OP_ADD || op == OP_SUB) && b->kind == NK_INT)
		return tr_index(l, e, n->a[0]);
	if ((f & KF_VIEW_OFFSET) && op == OP_ADD && a->kind == NK_INT)
		return tr_index(l, e, n->a[1]);
	if ((f & KF_VIEW_STRIDE) && op == OP_MUL && is_const(b))
		return tr_index(l, e, n->a[0]);
	if ((f & KF_VIEW_STRIDE) && op == OP_MUL && is_const(a))
		return tr_index(l, e, n->a[1]);
	if (op != OP_ADD && op != OP_SUB && op != OP_MUL && op != OP_NEG && op != OP_IDIV &&
	    op != OP_MOD)
		return tr(l, e, r);
	int32_t x = tr_index(l, e, n->a[0]), y = arity > 1 ? tr_index(l, e, n->a[1]) : -1;
	return int_op(l, op, x, y, -1);
}

static int32_t tr_read(L *l, const Env *e, Ref r)
{
	const Graph *g = l->g;
	const Node *n = ir_node(g, r);
	int t = (int)n->u.read.tensor;
	const Tensor *T = &g->tensors[t];
	const Ref *ix = ir_read_idx(g, n);
	int32_t idx[IR_MAXRANK];
	bool inlined = l->k->tbuf[t] < 0, gather = false;
	for (int i = 0; i < T->rank; i++) {
		idx[i] = tr_index(l, e, ix[i]);
		if (inlined && ir_node(g, ix[i])->kind != NK_VAR)
			COV(lower_inline_view);
		gather |= ir_node(g, ix[i])->kind == NK_READ;
	}
	if (!n->u.read.pad) {
		for (int i = 0; i < T->rank; i++) {
			const Node *m = ir_node(g, ix[i]);
			if (m->kind != NK_READ)
				continue;
			COV(lower_gather);
			if (e->guard >= 0)
				COV(lower_gather_guarded);
			KSite s = {KE_INDEX, l->def, t, i, (int)m->u.read.tensor, T->dims[i].value};
			/* fault: KF_GATHER_BOUNDS checks against one less than the extent */
			int64_t hi = T->dims[i].value - !!(l->faults & KF_GATHER_BOUNDS);
			idx[i] = kx_check(l->k, idx[i], ic(l, 0), ic(l, hi), e->guard, site(l, &s));
		}
		return value_at(l, e, t, idx);
	}
	int32_t inb = -1, safe[IR_MAXRANK];
	for (int i = 0; i < T->rank; i++)
		inb = and_(l, inb, and_(l, bop(l, OP_GE, idx[i], ic(l, 0)),
					bop(l, OP_LT, idx[i], ic(l, T->dims[i].value))));
	if (inb < 0) {   /* a scalar (`x[] ?? D`) is always in bounds: D is never used */
		COV(lower_pad_scalar);
		int32_t v = value_at(l, e, t, idx);
		/* `i32[] ?? real` is real (ck_read_type): as the selecting form would convert it */
		return n->ty == TY_REAL && kx_type(l->k, v) == KT_INT ? into(l, e, v, e->rf) : v;
	}
	COV(lower_pad);
	if (e->guard >= 0)
		COV(lower_pad_guarded);
	if (T->rank >= 2)
		COV(lower_pad_2d);
	if (gather)
		COV(lower_gather_pad);
	if (inlined)
		COV(lower_inline_pad);
	for (int i = 0; i < T->rank; i++)
		safe[i] = sel(l, inb, idx[i], ic(l, 0));
	Env ein = *e, eout = *e;
	ein.guard = and_(l, e->guard, inb);
	eout.guard = and_(l, e->guard, bop(l, OP_NOT, inb, -1));
	if ((l->faults & KF_INLINE_PAD) && l->k->tbuf[t] < 0)
		return value_at(l, e, t, safe);   /* fault: the fused producer loses its padding */
	int32_t v = value_at(l, &ein, t, safe);
	int32_t p = tr(l, &eout, n->u.read.pad);
	if (l->faults & KF_PAD_ZERO)
		p = kx_type(l->k, p) == KT_INT ? ic(l, 0) : kx_real(l->k, e->rt, 0.0);
	if (kx_type(l->k, v) != kx_type(l->k, p)) {
		COV(lower_pad_mixed);
		v = into(l, e, v, e->rf);
		p = into(l, e, p, e->rf);
	}
	return sel(l, inb, v, p);
}

static int32_t tr_cast(L *l, const Env *e, const Node *n)
{
	Dtype f = op_cast_dtype((Op)n->op);
	const Node *a = ir_node(l->g, n->a[0]);
	if (a->kind == NK_NUM) {
		COV(lower_cast_literal);
		return kx_real(l->k, e->rt, lit_round(l->g->lits[a->u.lit].text, f));
	}
	int32_t x = tr(l, e, n->a[0]);
	if (kx_type(l->k, x) == KT_INT) {
		COV(lower_cast_int);
		return to_t(l, e->rt, kx_round(l->k, f, to_t(l, KT_F64, x)));
	}
	if (narrow(f))
		COV(lower_cast_narrow);
	return kx_round(l->k, f, x);
}

/* fault: KF_MAX_NAN: max and min as a compare and select, as a careless C compiler
 * writes them (a NaN on the left is lost; -0 and +0 come out in operand order). */
static int32_t naive_max(L *l, bool max, int32_t a, int32_t b)
{
	return sel(l, bop(l, max ? OP_GT : OP_LT, a, b), a, b);
}

/* An integer operation. fault: KF_TRUNC_DIV and KF_NEG_MOD give C's truncating `/` and
 * `%` (the divisor of `/` is a positive constant: graph-format.md section 4). */
static int32_t int_op(L *l, Op op, int32_t a, int32_t b, int32_t c)
{
	if (op == OP_IDIV || op == OP_MOD)
		COV(lower_int_divmod);
	bool trunc = op == OP_IDIV && (l->faults & KF_TRUNC_DIV);
	bool crem = op == OP_MOD && (l->faults & KF_NEG_MOD);
	if (!trunc && !crem)
		return kx_op(l->k, op, KT_INT, a, b, c);
	int32_t r = iop(l, OP_MOD, a, b);   /* in [0, |b|) */
	int32_t off = bop(l, OP_AND, bop(l, OP_LT, a, ic(l, 0)), bop(l, OP_NE, r, ic(l, 0)));
	if (trunc)
		return sel(l, off, iop(l, OP_ADD, iop(l, OP_IDIV, a, b), ic(l, 1)),
			   iop(l, OP_IDIV, a, b));
	return sel(l, off, iop(l, OP_SUB, r, kx_op(l->k, OP_ABS, KT_INT, b, -1, -1)), r);
}

static int32_t tr_op(L *l, const Env *e, const Node *n)
{
	Op op = (Op)n->op;
	const OpInfo *oi = op_info(op);
	if (oi->flags & OPF_CAST)
		return tr_cast(l, e, n);
	if (op == OP_SELECT) {
		int32_t c = tr(l, e, n->a[0]);
		Env ea = *e, eb = *e;
		ea.guard = and_(l, e->guard, c);
		eb.guard = and_(l, e->guard, bop(l, OP_NOT, c, -1));
		int32_t a = tr(l, &ea, n->a[1]), b = tr(l, &eb, n->a[2]);
		if (kx_type(l->k, a) != kx_type(l->k, b))
			COV(lower_select_mixed);
		if (kx_type(l->k, a) != kx_type(l->k, b) || n->ty == TY_REAL) {
			a = into(l, e, a, e->rf);
			b = into(l, e, b, e->rf);
		}
		return sel(l, c, a, b);
	}
	int32_t x[3] = {-1, -1, -1};
	for (int i = 0; i < oi->arity; i++)
		x[i] = tr(l, e, n->a[i]);
	if (oi->flags & OPF_BOOL_IN)
		return kx_op(l->k, op, KT_BOOL, x[0], x[1], -1);
	if (oi->flags & OPF_CMP) {
		if ((kx_type(l->k, x[0]) == KT_INT) != (kx_type(l->k, x[1]) == KT_INT))
			COV(lower_cmp_mixed);
		if (kx_type(l->k, x[0]) != KT_INT || kx_type(l->k, x[1]) != KT_INT) {
			x[0] = into(l, e, x[0], e->rf);
			x[1] = into(l, e, x[1], e->rf);
		}
		return kx_op(l->k, op, KT_BOOL, x[0], x[1], -1);
	}
	if (n->ty == TY_INT)
		return int_op(l, op, x[0], x[1], x[2]);
	for (int i = 0; i < oi->arity; i++)
		x[i] = into(l, e, x[i], e->rf);
	if ((op == OP_MAX || op == OP_MIN) && (l->faults & KF_MAX_NAN))
		return naive_max(l, op == OP_MAX, x[0], x[1]);
	if (op == OP_SUB && (l->faults & KF_ZERO_SIGN))   /* fault: x - x gives -0 */
		return kx_op(l->k, OP_NEG, e->rt, arith(l, e->rf, op, e->rt, x[1], x[0], -1), -1, -1);
	if (op == OP_NEG || op == OP_ABS || op == OP_MAX || op == OP_MIN || op == OP_FLOOR ||
	    op == OP_CEIL) {   /* exact: the result is in the format already */
		if (op != OP_NEG)
			COV(lower_real_minmax);
		return kx_op(l->k, op, e->rt, x[0], x[1], x[2]);
	}
	return arith(l, e->rf, op, e->rt, x[0], x[1], x[2]);
}

static int32_t tr(L *l, const Env *e, Ref r)
{
	const Graph *g = l->g;
	const Node *n = ir_node(g, r);
	switch (n->kind) {
	case NK_NUM: return kx_real(l->k, e->rt, lit_round(g->lits[n->u.lit].text, e->rf));
	case NK_INT: return ic(l, n->u.ival);
	case NK_VAR: return e->var[n->u.var];
	case NK_SIZE: return ic(l, g->sizes[n->u.size].value);
	case NK_READ: return tr_read(l, e, r);
	case NK_OP: return tr_op(l, e, n);
	}
	IR_ASSERT(!"tr: unknown node kind");
}

/* ------------------------------------------------------------ ranges */

/* Bounds [*lo, *hi] of a quasi-affine integer expression of definition D, given bounds of
 * its variables. false when r is not quasi-affine. */
static bool bounds(const Graph *g, Ref r, const int64_t *vlo, const int64_t *vhi, int64_t *lo,
		   int64_t *hi)
{
	const Node *n = ir_node(g, r);
	int64_t a0, a1, b0, b1;
	switch (n->kind) {
	case NK_INT: *lo = *hi = n->u.ival; return true;
	case NK_SIZE: *lo = *hi = g->sizes[n->u.size].value; return true;
	case NK_VAR: *lo = vlo[n->u.var]; *hi = vhi[n->u.var]; return true;
	case NK_OP: break;
	default: return false;
	}
	if (!bounds(g, n->a[0], vlo, vhi, &a0, &a1))
		return false;
	if (n->op == OP_NEG) {
		*lo = -a1;
		*hi = -a0;
		return true;
	}
	if (op_info((Op)n->op)->arity != 2 || !bounds(g, n->a[1], vlo, vhi, &b0, &b1))
		return false;
	switch (n->op) {
	case OP_ADD: *lo = a0 + b0; *hi = a1 + b1; return true;
	case OP_SUB: *lo = a0 - b1; *hi = a1 - b0; return true;
	case OP_MUL: {
		int64_t p[4] = {a0 * b0, a0 * b1, a1 * b0, a1 * b1};
		*lo = *hi = p[0];
		for (int i = 1; i < 4; i++) {
			*lo = p[i] < *lo ? p[i] : *lo;
			*hi = p[i] > *hi ? p[i] : *hi;
		}
		return true;
	}
	case OP_IDIV:
		if (b0 != b1 || b0 <= 0)
			return false;
		*lo = a0 >= 0 ? a0 / b0 : -((-a0 + b0 - 1) / b0);
		*hi = a1 >= 0 ? a1 / b0 : -((-a1 + b0 - 1) / b0);
		return true;
	case OP_MOD:
		if (b0 != b1 || b0 <= 0)
			return false;
		*lo = 0;
		*hi = b0 - 1;
		return true;
	default: return false;
	}
}

/* Upper bound of the number of terms of D's reduction (per element), with reduction index
 * q dealt into S partials (per partial); -1 if unknown. */
static int64_t max_terms(const Graph *g, const Def *D, int q, int64_t S, bool *may_empty)
{
	int64_t vlo[IR_MAXVARS], vhi[IR_MAXVARS], n = 1;
	*may_empty = false;
	for (int i = 0; i < D->nlhs; i++) {
		vlo[i] = 0;
		vhi[i] = D->lhs[i].ext.value - 1;
	}
	for (int r = 0; r < D->nred; r++) {
		int64_t l0, l1, h0, h1;
		if (!bounds(g, D->red[r].lo, vlo, vhi, &l0, &l1) ||
		    !bounds(g, D->red[r].hi, vlo, vhi, &h0, &h1))
			return -1;
		if (h0 - l1 <= 0)
			*may_empty = true;
		int64_t len = h1 - l0 > 0 ? h1 - l0 : 0;
		if (r == q && S > 1)
			len = (len + S - 1) / S;
		vlo[D->nlhs + r] = l0;
		vhi[D->nlhs + r] = h1 - 1;
		n = len > 0 && n > TERMS_MAX / len ? TERMS_MAX + 1 : n * len;
	}
	return n;
}

/* Whether expression r mentions an index variable (a bound that moves with an index). */
static bool mentions_var(const Graph *g, Ref r)
{
	const Node *n = ir_node(g, r);
	if (n->kind == NK_VAR)
		return true;
	if (n->kind != NK_OP)
		return false;
	for (int i = 0; i < op_info((Op)n->op)->arity; i++)
		if (mentions_var(g, n->a[i]))
			return true;
	return false;
}

/* The largest value of reduction r's upper bound over D's domain (false if unknown). */
static bool hi_max(const Graph *g, const Def *D, int r, int64_t *hmax)
{
	int64_t vlo[IR_MAXVARS], vhi[IR_MAXVARS], l0, l1, h0, h1 = 0;
	for (int i = 0; i < D->nlhs; i++) {
		vlo[i] = 0;
		vhi[i] = D->lhs[i].ext.value - 1;
	}
	for (int q = 0; q <= r; q++) {
		if (!bounds(g, D->red[q].lo, vlo, vhi, &l0, &l1) ||
		    !bounds(g, D->red[q].hi, vlo, vhi, &h0, &h1))
			return false;
		vlo[D->nlhs + q] = l0;
		vhi[D->nlhs + q] = h1 - 1;
	}
	*hmax = h1;
	return true;
}

/* ------------------------------------------------------------ accumulators */

typedef struct {
	Monoid mo;
	KType t;
	Dtype f;            /* format of the accumulation (rounded to when narrower than t) */
	int64_t S;
	bool pairwise;
	int32_t p;          /* linear: accumulator (S == 1) or array of S */
	int32_t buf, cnt;   /* pairwise: terms [S * cap] and counts [S] */
	int64_t cap;
	int32_t any;        /* -1, or a flag set when a term is added */
} Acc;

static int32_t identity(L *l, Monoid mo, KType t)
{
	if ((mo == MO_MAX || mo == MO_MIN) && (l->faults & KF_MAX_IDENTITY))
		return t == KT_INT ? ic(l, 0) : kx_real(l->k, t, 0.0);   /* fault */
	if (t == KT_INT) {
		switch (mo) {
		case MO_PROD: return ic(l, 1);
		case MO_MAX: return ic(l, INT64_MIN);
		case MO_MIN: return ic(l, INT64_MAX);
		default: return ic(l, 0);
		}
	}
	switch (mo) {
	case MO_PROD: return kx_real(l->k, t, 1.0);
	case MO_MAX: return kx_real(l->k, t, -INFINITY);
	case MO_MIN: return kx_real(l->k, t, INFINITY);
	default: return kx_real(l->k, t, -0.0);
	}
}

/* a op b for monoid mo (max and min are exact; sum and prod round to format f) */
static int32_t combine(L *l, Monoid mo, KType t, Dtype f, int32_t a, int32_t b)
{
	static const Op ops[MO__COUNT] = {[MO_SUM] = OP_ADD, [MO_PROD] = OP_MUL,
					  [MO_MAX] = OP_MAX, [MO_MIN] = OP_MIN};
	if ((mo == MO_MAX || mo == MO_MIN) && t != KT_INT && (l->faults & KF_MAX_NAN))
		return naive_max(l, mo == MO_MAX, a, b);   /* fault */
	if (mo == MO_MAX || mo == MO_MIN || t == KT_INT)
		return kx_op(l->k, ops[mo], t, a, b, -1);
	return arith(l, f, ops[mo], t, a, b, -1);
}

static void acc_init(L *l, KBlk *b, Acc *A)
{
	Kernels *k = l->k;
	if (A->pairwise) {
		A->buf = var(l, A->t, A->S * A->cap, false);
		A->cnt = var(l, KT_INT, A->S, false);
		kb_decl(k, b, A->buf);
		kb_decl(k, b, A->cnt);
		for (int64_t s = 0; s < A->S; s++)
			kb_set(k, b, A->cnt, ic(l, s), ic(l, 0));
	} else {
		A->p = var(l, A->t, A->S > 1 ? A->S : 0, false);
		kb_decl(k, b, A->p);
		for (int64_t s = 0; s < A->S; s++)
			kb_set(k, b, A->p, A->S > 1 ? ic(l, s) : -1, identity(l, A->mo, A->t));
	}
	if (A->any >= 0) {
		kb_decl(k, b, A->any);
		kb_set(k, b, A->any, -1, ic(l, 0));
	}
}

static void acc_add(L *l, KBlk *b, Acc *A, int32_t part, int32_t term)
{
	Kernels *k = l->k;
	if (A->pairwise) {
		int32_t c = kx_elem(k, A->cnt, part);
		int32_t at = iop(l, OP_ADD, iop(l, OP_MUL, part, ic(l, A->cap)), c);
		kb_set(k, b, A->buf, at, term);
		kb_set(k, b, A->cnt, part, iop(l, OP_ADD, c, ic(l, 1)));
	} else if (A->S > 1) {
		kb_set(k, b, A->p, part, combine(l, A->mo, A->t, A->f, kx_elem(k, A->p, part), term));
	} else {
		kb_set(k, b, A->p, -1, combine(l, A->mo, A->t, A->f, kx_var(k, A->p), term));
	}
	if (A->any >= 0)
		kb_set(k, b, A->any, -1, ic(l, 1));
}

/* The tree of the S partial results r[lo .. lo+n). */
static int32_t tree(L *l, const Acc *A, int32_t r, int64_t lo, int64_t n, bool pw)
{
	if (n == 1)
		return A->S > 1 || A->pairwise ? kx_elem(l->k, r, ic(l, lo)) : kx_var(l->k, r);
	if (!pw)
		return combine(l, A->mo, A->t, A->f, tree(l, A, r, lo, n - 1, pw),
			       tree(l, A, r, lo + n - 1, 1, pw));
	int64_t h = n / 2;
	return combine(l, A->mo, A->t, A->f, tree(l, A, r, lo, h, pw), tree(l, A, r, lo + h, n - h, pw));
}

/* Emits what finishes the reduction and returns its value (valid after b). */
static int32_t acc_result(L *l, KBlk *b, const Acc *A)
{
	Kernels *k = l->k;
	int32_t r = A->p;
	if (A->pairwise) {
		r = var(l, A->t, A->S, false);
		kb_decl(k, b, r);
		for (int64_t s = 0; s < A->S; s++) {
			/* r[s] = the tree of partial s's terms, or the identity when it has none */
			int32_t n = kx_elem(k, A->cnt, ic(l, s)), len = n;
			if (l->faults & KF_PAIRWISE_ODD)   /* fault: an odd count > 1 loses its last */
				len = sel(l, bop(l, OP_GT, n, ic(l, 1)),
					  iop(l, OP_SUB, n, iop(l, OP_MOD, n, ic(l, 2))), n);
			KStmt t = {.kind = KS_TREE, .fmt = (uint8_t)A->f,
				   .op = A->mo == MO_PROD ? OP_MUL : OP_ADD,
				   .v = var(l, A->t, 0, false), .a = ic(l, s * A->cap), .b = len,
				   .c = A->buf, .body = -1, .body2 = -1};
			KBlk then = {0}, els = {0};
			kb_decl(k, &then, t.v);
			kb_add(k, &then, ks_new(k, &t));
			kb_set(k, &then, r, ic(l, s), kx_var(k, t.v));
			kb_set(k, &els, r, ic(l, s), identity(l, A->mo, A->t));
			KStmt s_if = {.kind = KS_IF, .v = -1, .a = bop(l, OP_GT, n, ic(l, 0)), .b = -1,
				      .c = -1, .body = then.head, .body2 = els.head, .next = -1};
			kb_add(k, b, ks_new(k, &s_if));
		}
	}
	int32_t v = (l->faults & KF_NO_COMBINE) && A->S > 1
		? tree(l, A, r, 0, 1, false)
		: tree(l, A, r, 0, A->S, A->pairwise);
	if (A->any >= 0)
		v = sel(l, bop(l, OP_NE, kx_var(k, A->any), ic(l, 0)), v, kx_real(k, A->t, 0.0));
	return v;
}

/* ------------------------------------------------------------ reduction loops */

typedef struct Red Red;
typedef void (*TermFn)(L *l, Env *e, KBlk *b, Red *R, int32_t part);
struct Red {
	const Def *D;
	int q;              /* split reduction index, -1 */
	int64_t S;
	TermFn fn;
	Acc *A;
	void *ctx;
	bool short_hi;      /* fault KF_ONLINE_CAUSAL_TILE (an online pass): a row-dependent
	                       upper bound of the last range takes one term less */
};

static void red_rec(L *l, Env *e, KBlk *b, int r, Red *R, int32_t part)
{
	const Def *D = R->D;
	if (r == D->nred) {
		R->fn(l, e, b, R, part);
		return;
	}
	int32_t lo = tr(l, e, D->red[r].lo), hi = tr(l, e, D->red[r].hi);
	if ((l->faults & KF_SKIP_LAST) && r == D->nred - 1)
		hi = iop(l, OP_SUB, hi, ic(l, 1));
	if (R->short_hi && r == D->nred - 1 && mentions_var(l->g, D->red[r].hi))
		hi = iop(l, OP_SUB, hi, ic(l, 1));   /* fault: the diagonal key is left out */
	int64_t hmax;
	if ((l->faults & KF_TRI_BOUND) && mentions_var(l->g, D->red[r].hi) &&
	    hi_max(l->g, D, r, &hmax))   /* fault: one term more, within the range's hull */
		hi = iop(l, OP_MIN, iop(l, OP_ADD, hi, ic(l, 1)), ic(l, hmax));
	int32_t *slot = &e->var[D->nlhs + r];
	if (r != R->q || R->S <= 1) {
		int32_t v = var(l, KT_INT, 0, true);
		*slot = kx_var(l->k, v);
		KBlk in = {0};
		red_rec(l, e, &in, r + 1, R, part);
		kb_loop(l->k, b, v, lo, hi, false, in);
		return;
	}
	/* strided partials: j = lo + c*S + s goes to partial s */
	int64_t S = R->S;
	int32_t n = iop(l, OP_MAX, iop(l, OP_SUB, hi, lo), ic(l, 0));
	int32_t nfull = iop(l, OP_IDIV, n, ic(l, S));
	int32_t c = var(l, KT_INT, 0, true), s = var(l, KT_INT, 0, true);
	*slot = iop(l, OP_ADD, lo, iop(l, OP_ADD, iop(l, OP_MUL, kx_var(l->k, c), ic(l, S)),
					kx_var(l->k, s)));
	KBlk in = {0}, mid = {0};
	red_rec(l, e, &in, r + 1, R, kx_var(l->k, s));
	kb_loop(l->k, &mid, s, ic(l, 0), ic(l, S), false, in);
	kb_loop(l->k, b, c, ic(l, 0), nfull, false, mid);
	int32_t s2 = var(l, KT_INT, 0, true);
	int32_t base = iop(l, OP_ADD, lo, iop(l, OP_MUL, nfull, ic(l, S)));
	*slot = iop(l, OP_ADD, base, kx_var(l->k, s2));
	KBlk tail = {0};
	red_rec(l, e, &tail, r + 1, R, kx_var(l->k, s2));
	kb_loop(l->k, b, s2, ic(l, 0), iop(l, OP_SUB, n, iop(l, OP_MUL, nfull, ic(l, S))), false,
		tail);
}

static void red_loops(L *l, Env *e, KBlk *b, Red *R)
{
	red_rec(l, e, b, 0, R, ic(l, 0));
}

static KType term_type(L *l, const Env *e, const Def *D)
{
	return ir_node(l->g, D->body)->ty == TY_INT ? KT_INT : e->rt;
}

static int flush(L *l, KBlk *b);

static void add_term(L *l, Env *e, KBlk *b, Red *R, int32_t part)
{
	int32_t t = to_t(l, R->A->t, tr(l, e, R->D->body));
	if (l->npend && flush(l, b))
		l->flush_failed = true;
	acc_add(l, b, R->A, part, t);
}

/* Sets up an accumulator for monoid mo over D's terms under D's schedule. */
static int acc_setup(L *l, const Def *D, Monoid mo, KType t, Acc *A, Red *R, bool use_split)
{
	const DefSched *ds = &l->s->defs[l->def];
	memset(A, 0, sizeof *A);
	memset(R, 0, sizeof *R);
	A->mo = mo;
	A->t = t;
	A->f = t == KT_INT ? DT_I32 : ds->op;
	A->S = 1;
	A->any = -1;
	R->D = D;
	R->q = -1;
	R->S = 1;
	R->A = A;
	for (int r = 0; use_split && r < D->nred; r++)
		if (ds->split[r] > 1) {
			R->q = r;
			R->S = A->S = ds->split[r];
		}
	if (R->S > 1) {
		COV(lower_split);
		if (R->q > 0)
			COV(lower_split_inner);
		for (int k = 0; k < D->nlhs; k++)
			if (ds->tile[k] > 1)
				COV(lower_split_tile);
	}
	bool empty;
	int64_t n = max_terms(l->g, D, R->q, R->S, &empty);
	A->pairwise = ds->order == ORDER_PAIRWISE && t != KT_INT && (mo == MO_SUM || mo == MO_PROD);
	if (A->pairwise) {
		COV(lower_pairwise);
		if (A->S > 1)
			COV(lower_pairwise_split);
		if (mo == MO_PROD)
			COV(lower_pairwise_prod);
		if (n < 0 || n > TERMS_MAX / A->S) {
			COV(lower_pairwise_refused);
			diag_set(l->d, 2, "order %s : pairwise: more than %d terms per element, or a range "
				 "the compiler cannot bound", l->g->tensors[D->out[0]].name, TERMS_MAX);
			return -1;
		}
		A->cap = n > 0 ? n : 1;
	}
	/* fault: the accumulator is kept in the storage format (a pairwise tree of f64 terms
	 * rounds in its own type only, as the backends' tree helpers are typed) */
	if ((l->faults & KF_ACCUM_IGNORED) && t != KT_INT && width(ds->store) < width(A->f) &&
	    (!A->pairwise || t == KT_F32))
		A->f = ds->store;
	if (t != KT_INT && narrow(ds->op))
		COV(lower_accum_narrow);
	if (t != KT_INT && ds->op == DT_F64)
		COV(lower_accum_f64);
	if (mo == MO_SUM && t != KT_INT && (empty || (l->faults & KF_SKIP_LAST))) {
		COV(lower_any_flag);
		A->any = var(l, KT_INT, 0, false);
	}
	return 0;
}

/* ------------------------------------------------------------ monoids */

static int32_t lhs_flat(L *l, const Env *e, const Def *D, int out)
{
	return flat(l, D->out[out], e->var);
}

/* fault: KF_STORE_TRUNC: x cut to format f's precision toward zero (in f64: x * 2^s is
 * exact, floor/ceil drop the low bits, the division is exact), for normal finite x; the
 * store's own rounding then has nothing left to round. */
static int32_t trunc_to(L *l, Dtype f, int32_t x)
{
	const DtypeInfo *fi = dt_info(f);
	KType t = KT_F64;
	x = to_t(l, t, x);
	int32_t a = kx_op(l->k, OP_ABS, t, x, -1, -1);
	int32_t ex = kx_op(l->k, OP_FLOOR, t, kx_op(l->k, OP_LOG2, t, a, -1, -1), -1, -1);
	int32_t sc = kx_op(l->k, OP_EXP2, t,
			   kx_op(l->k, OP_SUB, t, kx_real(l->k, t, fi->prec - 1), ex, -1), -1, -1);
	int32_t y = kx_op(l->k, OP_MUL, t, x, sc, -1);
	y = sel(l, bop(l, OP_GE, y, kx_real(l->k, t, 0)), kx_op(l->k, OP_FLOOR, t, y, -1, -1),
		kx_op(l->k, OP_CEIL, t, y, -1, -1));
	y = kx_op(l->k, OP_DIV, t, y, sc, -1);
	int32_t normal = bop(l, OP_AND, bop(l, OP_GE, a, kx_real(l->k, t, ldexp(1, (int)fi->emin - 1))),
			     bop(l, OP_LE, a, kx_real(l->k, t, fi->maxfinite)));
	return sel(l, normal, y, x);
}

static void store(L *l, KBlk *b, const Def *D, int out, int32_t at, int32_t v)
{
	int32_t buf = l->k->tbuf[D->out[out]];
	Dtype bf = l->k->bufs[buf].fmt;
	if (narrow(bf))
		COV(lower_store_narrow);
	else if (bf == DT_F64)
		COV(lower_store_f64);
	else if (bf == DT_I32)
		COV(lower_store_i32);
	if ((l->faults & KF_STORE_TRUNC) && narrow(bf) && kx_type(l->k, v) != KT_INT)
		v = trunc_to(l, bf, v);
	if (l->k->bufs[buf].fmt == DT_I32) {
		KSite s = {KE_INT32, l->def, D->out[out], 0, -1, 0};
		v = kx_check(l->k, v, ic(l, INT32_MIN), ic(l, (int64_t)INT32_MAX + 1), -1, site(l, &s));
	}
	KStmt st = {.kind = KS_STORE, .v = buf, .a = at, .b = v, .c = -1, .body = -1, .body2 = -1};
	kb_add(l->k, b, ks_new(l->k, &st));
}

static int el_fold(L *l, Env *e, KBlk *b, const Def *D, int32_t *res)
{
	Acc A;
	Red R;
	if (acc_setup(l, D, D->monoid, term_type(l, e, D), &A, &R, true))
		return -1;
	R.fn = add_term;
	acc_init(l, b, &A);
	red_loops(l, e, b, &R);
	if (l->flush_failed)
		return -1;
	*res = acc_result(l, b, &A);
	return 0;
}

static void add_exp(L *l, Env *e, KBlk *b, Red *R, int32_t part)
{
	int32_t m = *(int32_t *)R->ctx;
	int32_t t = into(l, e, tr(l, e, R->D->body), e->rf);
	int32_t x = arith(l, e->rf, OP_EXP, e->rt, arith(l, e->rf, OP_SUB, e->rt, t, m, -1), -1, -1);
	acc_add(l, b, R->A, part, x);
}

static int el_logsumexp(L *l, Env *e, KBlk *b, const Def *D, int32_t *res)
{
	Acc M, A;
	Red RM, R;
	if (acc_setup(l, D, MO_MAX, e->rt, &M, &RM, false) ||
	    acc_setup(l, D, MO_SUM, e->rt, &A, &R, true))
		return -1;
	RM.fn = add_term;
	acc_init(l, b, &M);
	red_loops(l, e, b, &RM);
	int32_t m = acc_result(l, b, &M);
	R.fn = add_exp;
	R.ctx = &m;
	acc_init(l, b, &A);
	red_loops(l, e, b, &R);
	int32_t s = acc_result(l, b, &A);
	KType t = e->rt;
	int32_t fin = kx_op(l->k, OP_EQ, KT_BOOL, kx_op(l->k, OP_SUB, t, m, m, -1), kx_real(l->k, t, 0),
			    -1);
	*res = sel(l, fin, arith(l, e->rf, OP_ADD, t, m, arith(l, e->rf, OP_LOG, t, s, -1, -1), -1), m);
	return 0;
}

/* Does value a (new, later index) rank before b? max order, NaN largest. */
static int32_t beats(L *l, KType t, int32_t a, int32_t b, Op cmp)
{
	int32_t gt = bop(l, cmp, a, b);
	if (t == KT_INT)
		return gt;
	return bop(l, OP_OR, gt, and_(l, bop(l, OP_NE, a, a), bop(l, OP_EQ, b, b)));
}

typedef struct {
	int32_t best, bv, tv, tk;
	Op cmp;
} ArgCtx;

static void arg_term(L *l, Env *e, KBlk *b, Red *R, int32_t part)
{
	ArgCtx *c = R->ctx;
	Kernels *k = l->k;
	KType t = k->vars[c->tv].type;
	kb_set(k, b, c->tv, -1, to_t(l, t, tr(l, e, R->D->body)));
	int32_t tv = kx_var(k, c->tv), bv = kx_var(k, c->bv), best = kx_var(k, c->best);
	int32_t take = bop(l, OP_OR, bop(l, OP_LT, best, ic(l, 0)),
			   t == KT_INT ? bop(l, c->cmp, tv, bv)
				       : and_(l, bop(l, OP_EQ, bv, bv), beats(l, t, tv, bv, c->cmp)));
	kb_set(k, b, c->tk, -1, take);
	int32_t tk = kx_var(k, c->tk);
	kb_set(k, b, c->bv, -1, sel(l, tk, tv, bv));
	kb_set(k, b, c->best, -1, sel(l, tk, e->var[R->D->nlhs], best));
}

static int el_arg(L *l, Env *e, KBlk *b, const Def *D, int32_t *res)
{
	Kernels *k = l->k;
	KType t = term_type(l, e, D);
	bool last = l->faults & KF_ARGMAX_TIE;   /* fault: >= for >, so a tie takes the later */
	ArgCtx c = {var(l, KT_INT, 0, false), var(l, t, 0, false), var(l, t, 0, false),
		    var(l, KT_BOOL, 0, false),
		    D->monoid == MO_ARGMAX ? (last ? OP_GE : OP_GT) : (last ? OP_LE : OP_LT)};
	kb_decl(k, b, c.best);
	kb_decl(k, b, c.bv);
	kb_decl(k, b, c.tv);
	kb_decl(k, b, c.tk);
	kb_set(k, b, c.best, -1, ic(l, -1));
	kb_set(k, b, c.bv, -1, t == KT_INT ? ic(l, 0) : kx_real(k, t, 0));
	Red R = {D, -1, 1, arg_term, NULL, &c, false};
	red_loops(l, e, b, &R);
	*res = kx_var(k, c.best);
	return 0;
}

typedef struct {
	int32_t vals, idx, cnt, pos, tv;
	int64_t K;
} TopCtx;

static void top_term(L *l, Env *e, KBlk *b, Red *R, int32_t part)
{
	TopCtx *c = R->ctx;
	Kernels *k = l->k;
	KType t = k->vars[c->tv].type;
	kb_set(k, b, c->tv, -1, to_t(l, t, tr(l, e, R->D->body)));
	kb_set(k, b, c->pos, -1, kx_var(k, c->cnt));
	int32_t pos = kx_var(k, c->pos), tv = kx_var(k, c->tv), K = ic(l, c->K);
	int32_t prev = iop(l, OP_SUB, pos, ic(l, 1));
	int32_t safe = iop(l, OP_MAX, prev, ic(l, 0));
	int32_t cond = bop(l, OP_AND, bop(l, OP_GT, pos, ic(l, 0)),
			   beats(l, t, tv, kx_elem(k, c->vals, safe), OP_GT));
	KBlk shift = {0}, wbody = {0}, ins = {0};
	kb_set(k, &shift, c->vals, pos, kx_elem(k, c->vals, prev));
	kb_set(k, &shift, c->idx, pos, kx_elem(k, c->idx, prev));
	KStmt s_if = {.kind = KS_IF, .v = -1, .a = bop(l, OP_LT, pos, K), .b = -1, .c = -1,
		      .body = shift.head, .body2 = -1};
	kb_add(k, &wbody, ks_new(k, &s_if));
	kb_set(k, &wbody, c->pos, -1, prev);
	KStmt s_while = {.kind = KS_WHILE, .v = -1, .a = cond, .b = -1, .c = -1,
			 .body = wbody.head, .body2 = -1};
	kb_add(k, b, ks_new(k, &s_while));
	kb_set(k, &ins, c->vals, pos, tv);
	kb_set(k, &ins, c->idx, pos, e->var[R->D->nlhs]);
	KStmt s_ins = {.kind = KS_IF, .v = -1, .a = bop(l, OP_LT, pos, K), .b = -1, .c = -1,
		       .body = ins.head, .body2 = -1};
	kb_add(k, b, ks_new(k, &s_ins));
	kb_set(k, b, c->cnt, -1, iop(l, OP_MIN, iop(l, OP_ADD, kx_var(k, c->cnt), ic(l, 1)), K));
}

/* topk: the element's K values and indices are stored here, not returned. */
static void el_topk(L *l, Env *e, KBlk *b, const Def *D)
{
	Kernels *k = l->k;
	KType t = term_type(l, e, D);
	int64_t K = D->lhs[D->nlhs - 1].ext.value;
	TopCtx c = {var(l, t, K, false), var(l, KT_INT, K, false), var(l, KT_INT, 0, false),
		    var(l, KT_INT, 0, false), var(l, t, 0, false), K};
	kb_decl(k, b, c.vals);
	kb_decl(k, b, c.idx);
	kb_decl(k, b, c.cnt);
	kb_decl(k, b, c.pos);
	kb_decl(k, b, c.tv);
	int32_t r = var(l, KT_INT, 0, true);
	KBlk init = {0};
	kb_set(k, &init, c.vals, kx_var(k, r), t == KT_INT ? ic(l, 0) : kx_real(k, t, 0));
	kb_set(k, &init, c.idx, kx_var(k, r), ic(l, -1));
	kb_loop(k, b, r, ic(l, 0), ic(l, K), true, init);
	kb_set(k, b, c.cnt, -1, ic(l, 0));
	Red R = {D, -1, 1, top_term, NULL, &c, false};
	red_loops(l, e, b, &R);
	KSite s = {KE_TOPK, l->def, D->out[0], 0, -1, K};
	KStmt chk = {.kind = KS_CHECK, .v = site(l, &s), .a = bop(l, OP_GE, kx_var(k, c.cnt), ic(l, K)),
		     .b = kx_var(k, c.cnt), .c = -1, .body = -1, .body2 = -1};
	kb_add(k, b, ks_new(k, &chk));
	int32_t r2 = var(l, KT_INT, 0, true);
	e->var[D->nlhs - 1] = kx_var(k, r2);
	int32_t at = kx_var(k, r2);
	if (l->faults & KF_TOPK_ORDER)   /* fault: the list is delivered back to front */
		at = iop(l, OP_SUB, ic(l, K - 1), at);
	KBlk out = {0};
	store(l, &out, D, 0, lhs_flat(l, e, D, 0), kx_elem(k, c.vals, at));
	store(l, &out, D, 1, lhs_flat(l, e, D, 1), kx_elem(k, c.idx, at));
	kb_loop(k, b, r2, ic(l, 0), ic(l, K), true, out);
}

static Env env_of(L *l, int d, int32_t guard);

static void kb_cat(KBlk *b, const KBlk *in, Kernels *k)
{
	if (in->head <= 0)
		return;
	if (b->head <= 0)
		*b = *in;
	else {
		k->s[b->tail].next = in->head;
		b->tail = in->tail;
	}
}

/* Computes the pending reads of absorbed reductions into b (each its own reduction, in
 * its own schedule, rounded to its store format), before the statement that reads them. */
static int flush(L *l, KBlk *b)
{
	int rc = 0;
	while (l->npend > 0 && !rc) {
		int k = --l->npend;
		int t = l->pend[k].t, d = l->g->tensors[t].def, save = l->def;
		const Def *D = &l->g->defs[d];
		int32_t idx[IR_MAXRANK], v = l->pend[k].v;
		memcpy(idx, l->pend[k].idx, sizeof idx);
		Env e = env_of(l, d, -1);
		for (int i = 0; i < D->nlhs; i++)
			e.var[i] = idx[i];
		l->def = d;
		int32_t x = -1;
		kb_decl(l->k, b, v);
		KBlk in = {0};
		rc = el_fold(l, &e, &in, D, &x);
		if (!rc) {
			Dtype sf = l->s->defs[d].store;
			x = narrow(sf) ? kx_round(l->k, sf, x) : x;
			kb_set(l->k, &in, v, -1, to_t(l, kt_of(sf), x));
			kb_cat(b, &in, l->k);
		}
		l->def = save;
	}
	if (l->pend_over) {
		diag_set(l->d, 3, "internal: an online pass reads more than %d absorbed reductions "
			 "in one term", (int)ARRAY_LEN(l->pend));
		rc = -1;
	}
	return rc;
}

/* ------------------------------------------------------------ online passes */

/* One pass of an online set (compiler/sched/online.c, docs/online.md) for member `role` of
 * plan p: the state of the members up to it, per split piece (arrays of S when split),
 * updated term by term in index order, the pieces merged in order, and the member's value.
 * Roles: softmax/attention m (a plain max: el_fold), l (state m, l), o (m, l, acc);
 * welford mu (n, mean), var (n, mean, M2); logsumexp z (m, l). */
typedef struct {
	const OnPlan *p;
	int role;
	int64_t S;
	Env em, el, eo;      /* the environments of the max (mean), the sum and the member */
	int32_t M, Lv, A, N; /* state variables (arrays of S when split) */
	int32_t xv, mn, ms;  /* per term: the max's term, the new max, the safe shift */
	int32_t tl, to;      /* the sum's and the contraction's terms (built before the loop) */
	int32_t xe;          /* the max's (mean's) term expression */
	int32_t scl, sco;    /* the constant c in l's and o's arithmetic, -1 for 1 */
	bool failed;
} OnCtx;

static int32_t st(L *l, int32_t v, int32_t part, int64_t S)
{
	return S > 1 ? kx_elem(l->k, v, part) : kx_var(l->k, v);
}

static void st_set(L *l, KBlk *b, int32_t v, int32_t part, int64_t S, int32_t x)
{
	kb_set(l->k, b, v, S > 1 ? part : -1, x);
}

static int32_t decl(L *l, KBlk *b, KType t, int64_t S)
{
	int32_t v = var(l, t, S > 1 ? S : 0, false);
	kb_decl(l->k, b, v);
	return v;
}

static Env env_of(L *l, int d, int32_t guard)
{
	Env e;
	memset(&e, 0, sizeof e);
	e.def = d;
	e.rt = kt_of(l->s->defs[d].op);
	e.rf = l->s->defs[d].op;
	e.guard = guard;
	return e;
}

/* The factor that takes a state shifted by m to one shifted by mn >= m, in e's arithmetic:
 * 1 where they are equal (-inf, -inf included), else exp((m - mn) * c). fault:
 * KF_ONLINE_FLIP rescales by exp((mn - m) * c). */
static int32_t rescale(L *l, const Env *e, int32_t m, int32_t mn, int32_t c, Dtype mf)
{
	int32_t a = into(l, e, m, mf), bb = into(l, e, mn, mf);
	int32_t d = (l->faults & KF_ONLINE_FLIP) ? arith(l, e->rf, OP_SUB, e->rt, bb, a, -1)
						 : arith(l, e->rf, OP_SUB, e->rt, a, bb, -1);
	if (c >= 0)
		d = arith(l, e->rf, OP_MUL, e->rt, d, c, -1);
	int32_t x = arith(l, e->rf, OP_EXP, e->rt, d, -1, -1);
	return sel(l, kx_op(l->k, OP_EQ, KT_BOOL, m, mn, -1), kx_real(l->k, e->rt, 1.0), x);
}

/* s * f + t in e's arithmetic */
static int32_t axpy(L *l, const Env *e, int32_t s, int32_t f, int32_t t)
{
	return arith(l, e->rf, OP_ADD, e->rt, arith(l, e->rf, OP_MUL, e->rt, s, f, -1), t, -1);
}

static bool welford(const OnCtx *c)
{
	return c->p->rule == ON_WELFORD;
}

/* The environment of member role r read at the indices recorded for it, j bound. */
static int on_env(L *l, int r, Env *e, int32_t j)
{
	const Def *M = &l->g->defs[l->on->def[r]];
	if (!l->ovseen[r] || l->ovclash) {
		diag_set(l->d, 3, "internal: online pass of '%s': the row of '%s' is not where "
			 "online.c matched it", l->g->tensors[l->g->defs[l->def].out[0]].name,
			 l->g->tensors[M->out[0]].name);
		return -1;
	}
	for (int i = 0; i < M->nlhs; i++)
		e->var[i] = l->ovidx[r][i];
	e->var[M->nlhs] = j;
	return 0;
}

/* The terms of one index j (e binds it): the max's (mean's) term xe, the sum's tl and the
 * contraction's to, reads of the max giving the safe shift ms (welford: the mean). */
static int on_exprs(L *l, Env *e, OnCtx *c)
{
	const Graph *g = l->g;
	Kernels *k = l->k;
	const OnPlan *p = c->p;
	const Def *D = &g->defs[l->def], *M = &g->defs[p->def[0]];
	int32_t j = e->var[D->nlhs];
	l->on = p;
	for (int r = 0; r < 3; r++) {
		l->ov[r] = -1;
		l->ovseen[r] = false;
	}
	l->ovclash = false;
	l->ov[0] = kx_var(k, welford(c) ? c->M : c->ms);
	l->ovf[0] = c->em.rf;
	int rc = 0;
	if (p->rule == ON_LSE) {
		c->em = *e;
		c->xe = to_t(l, c->em.rt, tr(l, &c->em, M->body));
		int32_t t = arith(l, c->em.rf, OP_SUB, c->em.rt, kx_var(k, c->xv), kx_var(k, c->ms), -1);
		if (l->faults & KF_LSE_NO_SHIFT)   /* fault: exp(x), not exp(x - m) */
			t = kx_var(k, c->xv);
		c->tl = arith(l, c->em.rf, OP_EXP, c->em.rt, t, -1, -1);
	} else if (welford(c)) {
		if (c->role == 0) {
			c->em = *e;
		} else {
			(void)tr(l, e, D->body);   /* records the mean's row */
			rc = on_env(l, 0, &c->em, j);
		}
		if (!rc)
			c->xe = to_t(l, c->em.rt, tr(l, &c->em, ir_node(g, M->body)->a[0]));
	} else {
		if (c->role == 2) {
			const Def *Lf = &g->defs[p->def[1]];
			const Node *dn = ir_node(g, ir_node(g, D->body)->a[1]);
			const Ref *ix = ir_read_idx(g, dn);
			for (int i = 0; i < Lf->nlhs; i++)
				c->el.var[i] = tr(l, e, ix[i]);
			c->el.var[Lf->nlhs] = j;
			c->tl = to_t(l, c->el.rt, tr(l, &c->el, Lf->body));
			c->to = to_t(l, c->eo.rt, tr(l, e, p->num));
		} else {
			c->el = *e;
			c->tl = to_t(l, c->el.rt, tr(l, e, D->body));
		}
		rc = on_env(l, 0, &c->em, j);
		if (!rc)
			c->xe = to_t(l, c->em.rt, tr(l, &c->em, M->body));
		c->scl = p->scale != REF_NONE ? tr(l, &c->el, p->scale) : -1;
		c->sco = p->scale != REF_NONE ? tr(l, &c->eo, p->scale) : -1;
	}
	l->on = NULL;
	return rc;
}

static void on_term(L *l, Env *e, KBlk *b, Red *R, int32_t part)
{
	OnCtx *c = R->ctx;
	Kernels *k = l->k;
	int64_t S = c->S;
	if (c->failed || (c->failed = on_exprs(l, e, c) != 0))
		return;
	if (l->npend && (c->failed = flush(l, b) != 0))
		return;
	Dtype mf = c->em.rf;
	kb_set(k, b, c->xv, -1, c->xe);
	int32_t x = kx_var(k, c->xv);
	if (welford(c)) {
		int32_t n1 = iop(l, OP_ADD, st(l, c->N, part, S), ic(l, 1));
		st_set(l, b, c->N, part, S, n1);
		int32_t mean = st(l, c->M, part, S);
		kb_set(k, b, c->mn, -1, arith(l, mf, OP_SUB, c->em.rt, x, mean, -1));
		int32_t dv = kx_var(k, c->mn);
		int32_t nf = to_t(l, c->em.rt, st(l, c->N, part, S));
		st_set(l, b, c->M, part, S,
		       arith(l, mf, OP_ADD, c->em.rt, mean, arith(l, mf, OP_DIV, c->em.rt, dv, nf, -1), -1));
		if (c->role == 1) {
			int32_t d2 = arith(l, mf, OP_SUB, c->em.rt, x, st(l, c->M, part, S), -1);
			st_set(l, b, c->Lv, part, S, axpy(l, &c->em, dv, d2, st(l, c->Lv, part, S)));
		}
		return;
	}
	int32_t m = st(l, c->M, part, S);
	kb_set(k, b, c->mn, -1, kx_op(k, OP_MAX, c->em.rt, m, x, -1));
	int32_t mn = kx_var(k, c->mn);
	kb_set(k, b, c->ms, -1, sel(l, kx_op(k, OP_EQ, KT_BOOL, mn, kx_real(k, c->em.rt, -INFINITY), -1),
				    kx_real(k, c->em.rt, 0.0), mn));
	int32_t fl = rescale(l, &c->el, m, mn, c->scl, mf);
	if ((l->faults & KF_LSE_NO_SHIFT) && c->p->rule == ON_LSE)
		fl = kx_real(k, c->el.rt, 1.0);   /* fault: the unshifted sum is not rescaled */
	if (c->role == 2) {
		int32_t fo = rescale(l, &c->eo, m, mn, c->sco, mf);
		if (l->faults & KF_ONLINE_NO_RESCALE)   /* fault: acc is not rescaled */
			fo = kx_real(k, c->eo.rt, 1.0);
		st_set(l, b, c->A, part, S, axpy(l, &c->eo, st(l, c->A, part, S), fo, c->to));
	}
	st_set(l, b, c->Lv, part, S, axpy(l, &c->el, st(l, c->Lv, part, S), fl, c->tl));
	st_set(l, b, c->M, part, S, mn);
}

/* Merges piece q's state into piece 0's (Chan's rule, or the max's rescale). */
static void on_merge(L *l, OnCtx *c, KBlk *b, int64_t q)
{
	Kernels *k = l->k;
	int64_t S = c->S;
	int32_t p0 = ic(l, 0), pq = ic(l, q);
	Dtype mf = c->em.rf;
	KType mt = c->em.rt;
	if (welford(c)) {
		int32_t na = st(l, c->N, p0, S), nb = st(l, c->N, pq, S);
		int32_t n = iop(l, OP_ADD, na, nb);
		int32_t naf = to_t(l, mt, na), nbf = to_t(l, mt, nb), nf = to_t(l, mt, n);
		int32_t ma = st(l, c->M, p0, S), mb = st(l, c->M, pq, S);
		int32_t d = arith(l, mf, OP_SUB, mt, mb, ma, -1);
		/* fault: KF_WELFORD_WEIGHT weighs the mean's step by nA / n, not nB / n */
		int32_t w = arith(l, mf, OP_DIV, mt, (l->faults & KF_WELFORD_WEIGHT) ? naf : nbf, nf, -1);
		int32_t mean = arith(l, mf, OP_ADD, mt, ma, arith(l, mf, OP_MUL, mt, d, w, -1), -1);
		int32_t none = bop(l, OP_EQ, nb, ic(l, 0)), anone = bop(l, OP_EQ, na, ic(l, 0));
		if (c->role == 1) {
			int32_t qa = st(l, c->Lv, p0, S), qb = st(l, c->Lv, pq, S);
			int32_t wn = arith(l, mf, OP_DIV, mt, arith(l, mf, OP_MUL, mt, naf, nbf, -1), nf, -1);
			int32_t m2 = arith(l, mf, OP_ADD, mt, arith(l, mf, OP_ADD, mt, qa, qb, -1),
					   arith(l, mf, OP_MUL, mt, arith(l, mf, OP_MUL, mt, d, d, -1), wn, -1), -1);
			kb_set(k, b, c->mn, -1, sel(l, none, qa, sel(l, anone, qb, m2)));
			st_set(l, b, c->Lv, p0, S, kx_var(k, c->mn));
		}
		kb_set(k, b, c->xv, -1, sel(l, none, ma, sel(l, anone, mb, mean)));
		st_set(l, b, c->M, p0, S, kx_var(k, c->xv));
		st_set(l, b, c->N, p0, S, n);
		return;
	}
	int32_t ma = st(l, c->M, p0, S), mb = st(l, c->M, pq, S);
	kb_set(k, b, c->mn, -1, kx_op(k, OP_MAX, mt, ma, mb, -1));
	int32_t mn = kx_var(k, c->mn);
	/* fault: KF_ONLINE_SPLIT_MAX adds the pieces as if their maxima were the same */
	bool same = (l->faults & KF_ONLINE_SPLIT_MAX) != 0;
	if (c->role == 2) {
		int32_t fa = rescale(l, &c->eo, ma, mn, c->sco, mf), fb = rescale(l, &c->eo, mb, mn, c->sco, mf);
		if (same)
			fa = fb = kx_real(k, c->eo.rt, 1.0);
		st_set(l, b, c->A, p0, S, axpy(l, &c->eo, st(l, c->A, p0, S), fa,
					       arith(l, c->eo.rf, OP_MUL, c->eo.rt, st(l, c->A, pq, S), fb, -1)));
	}
	int32_t fa = rescale(l, &c->el, ma, mn, c->scl, mf), fb = rescale(l, &c->el, mb, mn, c->scl, mf);
	if (same)
		fa = fb = kx_real(k, c->el.rt, 1.0);
	st_set(l, b, c->Lv, p0, S, axpy(l, &c->el, st(l, c->Lv, p0, S), fa,
					arith(l, c->el.rf, OP_MUL, c->el.rt, st(l, c->Lv, pq, S), fb, -1)));
	st_set(l, b, c->M, p0, S, mn);
}

static int el_online(L *l, Env *e, KBlk *b, const Def *D, int role, const OnPlan *p, int32_t *res)
{
	const Graph *g = l->g;
	Kernels *k = l->k;
	OnCtx c;
	memset(&c, 0, sizeof c);
	c.p = p;
	c.role = role;
	c.scl = c.sco = -1;
	Acc A;
	Red R;
	if (acc_setup(l, D, MO_SUM, e->rt, &A, &R, true))
		return -1;
	c.S = R.S;
	bool lse = p->rule == ON_LSE;
	c.em = lse || role == 0 ? *e : env_of(l, p->def[0], e->guard);
	c.el = lse || role == 1 ? *e : env_of(l, p->def[1], e->guard);
	c.eo = *e;
	/* the state, per piece */
	double m0 = welford(&c) ? 0.0 : -INFINITY;
	c.M = decl(l, b, c.em.rt, c.S);
	c.Lv = decl(l, b, welford(&c) ? c.em.rt : c.el.rt, c.S);
	if (role == 2)
		c.A = decl(l, b, c.eo.rt, c.S);
	if (welford(&c))
		c.N = decl(l, b, KT_INT, c.S);
	c.xv = decl(l, b, c.em.rt, 0);
	c.mn = decl(l, b, c.em.rt, 0);
	c.ms = decl(l, b, c.em.rt, 0);
	for (int64_t q = 0; q < c.S; q++) {
		int32_t pq = ic(l, q);
		st_set(l, b, c.M, pq, c.S, kx_real(k, c.em.rt, m0));
		st_set(l, b, c.Lv, pq, c.S, kx_real(k, k->vars[c.Lv].type, 0.0));
		if (role == 2)
			st_set(l, b, c.A, pq, c.S, kx_real(k, c.eo.rt, 0.0));
		if (welford(&c))
			st_set(l, b, c.N, pq, c.S, ic(l, 0));
	}
	R.fn = on_term;
	R.ctx = &c;
	R.short_hi = (l->faults & KF_ONLINE_CAUSAL_TILE) != 0;
	red_loops(l, e, b, &R);
	if (c.failed)
		return -1;
	for (int64_t q = 1; q < c.S && !(l->faults & KF_NO_COMBINE); q++)
		on_merge(l, &c, b, q);
	int32_t p0 = ic(l, 0);
	int32_t mv = st(l, c.M, p0, c.S), lv = st(l, c.Lv, p0, c.S);
	if (welford(&c)) {
		if (role == 0)
			*res = into(l, e, mv, c.em.rf);
		else   /* M2 / N, or M2 * 2^-k where a rewrite made the mean's / 2^k a product */
			*res = arith(l, e->rf, (Op)ir_node(g, D->body)->op, e->rt, into(l, e, lv, c.em.rf),
				     into(l, e, tr(l, e, ir_node(g, D->body)->a[1]), e->rf), -1);
	} else if (lse) {
		KType t = e->rt;
		int32_t fin = kx_op(k, OP_EQ, KT_BOOL, kx_op(k, OP_SUB, t, mv, mv, -1), kx_real(k, t, 0), -1);
		int32_t sh = (l->faults & KF_LSE_NO_SHIFT) ? kx_real(k, t, 0.0) : mv;
		*res = sel(l, fin, arith(l, e->rf, OP_ADD, t, sh, arith(l, e->rf, OP_LOG, t, lv, -1, -1), -1), mv);
	} else if (role == 1) {
		*res = lv;
	} else {
		if ((l->faults & KF_ONLINE_LAST_L) && c.S > 1)   /* fault: the last piece's own l */
			lv = st(l, c.Lv, ic(l, c.S - 1), c.S);
		/* an empty range is the empty sum +0, not 0 / 0 */
		int32_t any = bop(l, OP_LT, tr(l, e, D->red[0].lo), tr(l, e, D->red[0].hi));
		*res = sel(l, any, arith(l, e->rf, OP_DIV, e->rt, st(l, c.A, p0, c.S),
					 into(l, e, lv, c.el.rf), -1), kx_real(k, e->rt, 0.0));
	}
	return 0;
}

/* The role of the definition being lowered in its online set (l->plan), or -1 when it is
 * computed as it is written: not in a set, or the max of a softmax or attention set (a max
 * is exact in any order: its value is the pass's final m). */
static int on_role(L *l, const Def *D)
{
	(void)D;
	if (!l->s->defs[l->def].online)
		return -1;
	for (int r = 0; r < l->plan.n; r++)
		if (l->plan.def[r] == l->def)
			return r == 0 && (l->plan.rule == ON_SOFTMAX || l->plan.rule == ON_FLASH) ? -1 : r;
	return -1;
}

/* The statements computing and storing one element (e binds the left-hand variables). */
static int element(L *l, Env *e, KBlk *b, const Def *D)
{
	int32_t v = -1;
	int rc = 0;
	int role = on_role(l, D);
	if (role >= 0) {
		if ((rc = el_online(l, e, b, D, role, &l->plan, &v)))
			return rc;
		store(l, b, D, 0, lhs_flat(l, e, D, 0), v);
		return 0;
	}
	switch (D->monoid) {
	case MO_NONE: v = tr(l, e, D->body); break;
	case MO_SUM: case MO_PROD: case MO_MAX: case MO_MIN: rc = el_fold(l, e, b, D, &v); break;
	case MO_LOGSUMEXP: rc = el_logsumexp(l, e, b, D, &v); break;
	case MO_ARGMAX: case MO_ARGMIN: rc = el_arg(l, e, b, D, &v); break;
	case MO_TOPK: el_topk(l, e, b, D); return 0;
	default: IR_ASSERT(!"element: unknown monoid");
	}
	if (rc)
		return rc;
	store(l, b, D, 0, lhs_flat(l, e, D, 0), v);
	return 0;
}

/* ------------------------------------------------------------ kernels */

typedef struct {
	Kernel *kn;
	const Def *D;
	bool tail;
	int32_t pv[IR_MAXRANK];   /* point variables (-1 where the tile is 1) */
	int32_t ext[IR_MAXRANK];  /* their extents */
} Tile;

static void tile_init(L *l, Tile *T, Env *e)
{
	for (int p = 0; p < T->kn->npar; p++) {
		const KPar *P = &T->kn->par[p];
		int32_t o = kx_var(l->k, P->origin);
		if (P->tile == 1) {
			T->pv[p] = -1;
			e->var[P->lhs] = o;
			continue;
		}
		T->pv[p] = var(l, KT_INT, 0, true);
		T->ext[p] = T->tail && P->extent % P->tile
			? iop(l, OP_MIN, ic(l, P->tile), iop(l, OP_SUB, ic(l, P->extent), o))
			: ic(l, P->tile);
		e->var[P->lhs] = iop(l, OP_ADD, o, kx_var(l->k, T->pv[p]));
	}
}

/* Wraps body in the point loops p.. (innermost last); pf gets the point's flat offset. */
static void point_loops(L *l, const Tile *T, int p, KBlk *b, KBlk body)
{
	if (p < 0) {
		if (body.head > 0)
			kb_add(l->k, b, body.head);
		if (body.head > 0)
			b->tail = body.tail;
		return;
	}
	if (T->pv[p] < 0) {
		point_loops(l, T, p - 1, b, body);
		return;
	}
	KBlk loop = {0};
	kb_loop(l->k, &loop, T->pv[p], ic(l, 0), T->ext[p], true, body);
	point_loops(l, T, p - 1, b, loop);
}

static int32_t point_flat(L *l, const Tile *T)
{
	int32_t f = ic(l, 0);
	for (int p = 0; p < T->kn->npar; p++)
		if (T->pv[p] >= 0)
			f = iop(l, OP_ADD, iop(l, OP_MUL, f, ic(l, T->kn->par[p].tile)),
				kx_var(l->k, T->pv[p]));
	return f;
}

typedef struct {
	Tile *T;
	int32_t acc;
} HoistCtx;

static void hoist_term(L *l, Env *e, KBlk *b, Red *R, int32_t part)
{
	HoistCtx *h = R->ctx;
	Acc *A = R->A;
	if (A->any >= 0)
		kb_set(l->k, b, A->any, -1, ic(l, 1));
	int32_t pf = point_flat(l, h->T);
	int32_t t = to_t(l, A->t, tr(l, e, R->D->body));
	KBlk in = {0};
	kb_set(l->k, &in, h->acc, pf, combine(l, A->mo, A->t, A->f, kx_elem(l->k, h->acc, pf), t));
	point_loops(l, h->T, h->T->kn->npar - 1, b, in);
}

/* The tile's reduction with its loop outside the point loops: a tile of accumulators. */
static int hoisted(L *l, Tile *T, Env *e, KBlk *b)
{
	const Def *D = T->D;
	Kernels *k = l->k;
	Acc A;
	Red R;
	if (acc_setup(l, D, D->monoid, term_type(l, e, D), &A, &R, false))
		return -1;
	int64_t V = 1;
	for (int p = 0; p < T->kn->npar; p++)
		V *= T->kn->par[p].tile;
	HoistCtx h = {T, var(l, A.t, V, false)};
	kb_decl(k, b, h.acc);
	if (A.any >= 0) {
		kb_decl(k, b, A.any);
		kb_set(k, b, A.any, -1, ic(l, 0));
	}
	KBlk init = {0}, fin = {0};
	int32_t pf = point_flat(l, T);
	kb_set(k, &init, h.acc, pf, identity(l, A.mo, A.t));
	point_loops(l, T, T->kn->npar - 1, b, init);
	R.fn = hoist_term;
	R.ctx = &h;
	red_loops(l, e, b, &R);
	int32_t v = kx_elem(k, h.acc, pf);
	if (A.any >= 0)
		v = sel(l, bop(l, OP_NE, kx_var(k, A.any), ic(l, 0)), v, kx_real(k, A.t, 0.0));
	store(l, &fin, D, 0, lhs_flat(l, e, D, 0), v);
	point_loops(l, T, T->kn->npar - 1, b, fin);
	return 0;
}

/* The reduction loop may run outside the point loops when the order does not change:
 * linear, not split, and no reduction bound depends on a tiled index. */
static bool can_hoist(L *l, const Kernel *kn, const Def *D)
{
	const DefSched *ds = &l->s->defs[kn->def];
	bool tiled = false;
	int64_t V = 1;
	for (int p = 0; p < kn->npar; p++) {
		tiled |= ds->tile[kn->par[p].lhs] > 0;
		V *= kn->par[p].tile;
	}
	if (!tiled || V <= 1 || V > HOIST_MAX)
		return false;
	if (D->monoid != MO_SUM && D->monoid != MO_PROD && D->monoid != MO_MAX && D->monoid != MO_MIN)
		return false;
	bool order = ds->order == ORDER_PAIRWISE && (D->monoid == MO_SUM || D->monoid == MO_PROD) &&
		     ir_node(l->g, D->body)->ty == TY_REAL;
	for (int r = 0; r < D->nred; r++)
		order |= ds->split[r] > 1;
	if (order) {
		COV(lower_hoist_order);
		return false;
	}
	int64_t vlo[IR_MAXVARS], vhi[IR_MAXVARS];
	for (int r = 0; r < D->nred; r++) {
		/* a bound that changes when a tiled variable moves within its tile: probe by
		 * pinning all other variables and widening one at a time */
		for (int p = 0; p < kn->npar; p++) {
			if (kn->par[p].tile == 1)
				continue;
			for (int i = 0; i < IR_MAXVARS; i++)
				vlo[i] = vhi[i] = 0;
			vhi[kn->par[p].lhs] = 1;
			int64_t a, b;
			if (!bounds(l->g, D->red[r].lo, vlo, vhi, &a, &b) || a != b ||
			    !bounds(l->g, D->red[r].hi, vlo, vhi, &a, &b) || a != b) {
				COV(lower_hoist_bound);
				return false;
			}
		}
	}
	return true;
}

static int tile_body(L *l, Kernel *kn, const Def *D, bool tail, KBlk *b)
{
	Tile T = {kn, D, tail, {0}, {0}};
	Env e;
	memset(&e, 0, sizeof e);
	e.def = kn->def;
	e.rt = kt_of(l->s->defs[kn->def].op);
	e.rf = l->s->defs[kn->def].op;
	e.guard = -1;
	tile_init(l, &T, &e);
	if (kn->hoisted)
		return hoisted(l, &T, &e, b);
	KBlk el = {0};
	if (element(l, &e, &el, D))
		return -1;
	point_loops(l, &T, kn->npar - 1, b, el);
	return 0;
}

/* The coverage points of definition D's kind under its schedule (compiler/cov.def). */
static void marks(L *l, const Def *D, const DefSched *ds, int npar)
{
	bool ints = ir_node(l->g, D->body)->ty == TY_INT, split = false, tiled = false;
	for (int r = 0; r < D->nred; r++) {
		split |= ds->split[r] > 1;
		if (mentions_var(l->g, D->red[r].lo) || mentions_var(l->g, D->red[r].hi))
			COV(lower_range_var);
	}
	for (int p = 0; p < npar; p++)
		tiled |= ds->tile[p] > 1 && D->lhs[p].ext.value > 1;
	if (npar == 0)
		COV(lower_scalar);
	if (D->nred >= 2)
		COV(lower_multi_red);
	switch (D->monoid) {
	case MO_SUM: if (ints) COV(lower_int_red); break;
	case MO_PROD: COV(lower_prod); if (ints) COV(lower_int_red); break;
	case MO_MAX: case MO_MIN:
		if (ints)
			COV(lower_int_red);
		else
			COV(lower_maxmin);
		break;
	case MO_LOGSUMEXP: COV(lower_lse); if (split) COV(lower_lse_split); break;
	case MO_ARGMAX: case MO_ARGMIN: COV(lower_arg); if (ints) COV(lower_arg_int); break;
	case MO_TOPK:
		COV(lower_topk);
		if (ints)
			COV(lower_topk_int);
		if (tiled)
			COV(lower_topk_tile);
		break;
	default: break;
	}
}

/* Does r read a tensor t with dep[t] (operands, index lists, `??` defaults)? */
static bool reads_any(const Graph *g, Ref r, const bool *dep)
{
	if (r == REF_NONE)
		return false;
	const Node *n = ir_node(g, r);
	if (n->kind == NK_READ) {
		if (dep[n->u.read.tensor] || reads_any(g, n->u.read.pad, dep))
			return true;
		const Ref *ix = ir_read_idx(g, n);
		for (uint32_t i = 0; i < n->u.read.n; i++)
			if (reads_any(g, ix[i], dep))
				return true;
		return false;
	}
	for (int i = 0; n->kind == NK_OP && i < op_info((Op)n->op)->arity; i++)
		if (reads_any(g, n->a[i], dep))
			return true;
	return false;
}

/* The plan of d's online set and the plain definitions its pass computes where read
 * (those that depend on a member). */
static int on_setup(L *l, int d)
{
	const Graph *g = l->g;
	if (on_plan(g, l->s, d, &l->plan)) {
		diag_set(l->d, 3, "internal: '%s' is in an online set that online.c does not match",
			 g->tensors[g->defs[d].out[0]].name);
		return -1;
	}
	if (!l->expand) {
		l->expand = calloc((size_t)g->ntensors + 1, 1);
		IR_ASSERT(l->expand);
	}
	bool *dep = calloc((size_t)g->ntensors + 1, 1);
	IR_ASSERT(dep);
	for (int r = 0; r < l->plan.n; r++)
		dep[g->defs[l->plan.def[r]].out[0]] = true;
	for (int t = 0; t < g->ntensors; t++) {
		const Tensor *T = &g->tensors[t];
		l->expand[t] = false;
		if (T->kind != TK_DEF || dep[t] || g->defs[T->def].monoid != MO_NONE)
			continue;
		dep[t] = reads_any(g, g->defs[T->def].body, dep);
		l->expand[t] = dep[t];
	}
	free(dep);
	return 0;
}

static int lower_def(L *l, int d)
{
	const Def *D = &l->g->defs[d];
	const DefSched *ds = &l->s->defs[d];
	Kernels *k = l->k;
	Kernel kn;
	memset(&kn, 0, sizeof kn);
	kn.def = d;
	kn.npar = D->monoid == MO_TOPK ? D->nlhs - 1 : D->nlhs;
	kn.nitems = 1;
	l->def = d;
	if (ds->online && on_setup(l, d))
		return -1;
	marks(l, D, ds, kn.npar);
	for (int p = 0; p < kn.npar; p++) {
		int64_t N = D->lhs[p].ext.value, T = ds->tile[p];
		if (T <= 0 && p == kn.npar - 1 && D->monoid == MO_NONE && N > 4096)
			COV(lower_row_chunk);
		if (T > 0)
			COV(lower_tile);
		if (T > N)
			COV(lower_tile_clamped);
		if (T <= 0)   /* untiled: an element per item, or a vector row for an expression */
			T = p == kn.npar - 1 && D->monoid == MO_NONE ? (N <= 4096 ? N : 1024) : 1;
		if (T > N)
			T = N;
		kn.par[p] = (KPar){p, N, T, var(l, KT_INT, 0, true)};
		kn.nitems *= (N + T - 1) / T;
	}
	kn.hoisted = !ds->online && can_hoist(l, &kn, D);
	if (kn.hoisted)
		COV(lower_hoisted);
	KBlk full = {0}, tail = {0}, body = {0};
	if (tile_body(l, &kn, D, false, &full))
		return -1;
	int32_t cond = -1;
	int partial = 0;
	for (int p = 0; p < kn.npar; p++)
		partial += kn.par[p].extent % kn.par[p].tile != 0;
	if (partial)
		COV(lower_tile_partial);
	if (partial >= 2)
		COV(lower_tile_partial2);
	if (partial && D->monoid != MO_NONE)
		COV(lower_tile_partial_red);
	for (int p = 0; p < kn.npar; p++)
		if (kn.par[p].extent % kn.par[p].tile)
			cond = and_(l, cond, bop(l, OP_LE, iop(l, OP_ADD, kx_var(k, kn.par[p].origin),
								 ic(l, kn.par[p].tile)),
						  ic(l, kn.par[p].extent)));
	if (cond < 0) {
		body = full;
	} else {
		if (!(l->faults & KF_DROP_TAIL) && tile_body(l, &kn, D, true, &tail))
			return -1;
		KStmt s = {.kind = KS_IF, .v = -1, .a = cond, .b = -1, .c = -1, .body = full.head,
			   .body2 = tail.head > 0 ? tail.head : -1};
		kb_add(k, &body, ks_new(k, &s));
	}
	if (l->npend) {
		diag_set(l->d, 3, "internal: '%s' reads an absorbed reduction outside a term",
			 l->g->tensors[D->out[0]].name);
		return -1;
	}
	kn.body = body.head > 0 ? body.head : -1;
	k->k = realloc(k->k, (size_t)(k->nk + 1) * sizeof *k->k);
	IR_ASSERT(k->k);
	k->k[k->nk++] = kn;
	return 0;
}

/* Does definition d read tensor t (its body, bounds, index lists, defaults)? */
static bool def_reads(const Graph *g, int d, int t, bool *one)
{
	one[t] = true;
	const Def *D = &g->defs[d];
	bool y = reads_any(g, D->body, one);
	for (int r = 0; !y && r < D->nred; r++)
		y = reads_any(g, D->red[r].lo, one) || reads_any(g, D->red[r].hi, one);
	one[t] = false;
	return y;
}

/* The definitions online passes absorb (no buffer, no kernel of their own): not members,
 * outputs or inlined; plain ones that depend on a member (each pass computes them where it
 * reads them), and sum/max/min/prod reductions that do not (each pass or the set's max
 * computes them where read, flush); every reader a member of one set or absorbed itself,
 * and never read in a reduction's range bound. NULL when there is no online set. */
static bool *absorbed_set(const Graph *g, const Schedule *s)
{
	bool any = false;
	for (int d = 0; d < g->ndefs; d++)
		any |= s->defs[d].online != 0;
	if (!any)
		return NULL;
	size_t nt = (size_t)g->ntensors + 1;
	bool *ab = calloc(3 * nt, 1), *dep = ab + nt, *one = ab + 2 * nt;
	IR_ASSERT(ab);
	for (int t = 0; t < g->ntensors; t++) {
		const Tensor *T = &g->tensors[t];
		if (T->kind != TK_DEF)
			continue;
		const Def *D = &g->defs[T->def];
		const DefSched *x = &s->defs[T->def];
		dep[t] = x->online || reads_any(g, D->body, dep);
		bool out = false;
		for (int o = 0; o < g->noutputs; o++)
			out |= g->tensors[g->outputs[o].tensor].def == T->def;
		bool fold = D->monoid == MO_SUM || D->monoid == MO_PROD || D->monoid == MO_MAX ||
			    D->monoid == MO_MIN;
		ab[t] = !x->online && !x->inlined && !out && D->nout == 1 &&
			((D->monoid == MO_NONE && dep[t]) || (fold && !dep[t]));
	}
	for (bool changed = true; changed;) {
		changed = false;
		for (int t = 0; t < g->ntensors; t++) {
			if (!ab[t])
				continue;
			int lead = -1;
			for (int d = 0; d < g->ndefs && ab[t]; d++) {
				if (!def_reads(g, d, t, one))
					continue;
				const Def *D = &g->defs[d];
				bool in_bound = false;
				one[t] = true;
				for (int r = 0; r < D->nred; r++)
					in_bound |= reads_any(g, D->red[r].lo, one) || reads_any(g, D->red[r].hi, one);
				one[t] = false;
				int set = s->defs[d].online;
				bool ok = !in_bound && (ab[D->out[0]] || (set && (lead < 0 || lead == set)));
				if (set)
					lead = set;
				if (!ok) {
					ab[t] = false;
					changed = true;
				}
			}
		}
	}
	/* a reduction that only absorbed plain definitions read, none of them in a pass,
	 * would be read outside any term: keep it (all readers absorbed is fine only when
	 * the chain ends in a member) */
	return ab;
}

static void make_buffers(Kernels *k, const bool *ab)
{
	const Graph *g = k->g;
	k->tbuf = malloc((size_t)(g->ntensors + 1) * sizeof *k->tbuf);
	k->bufs = calloc((size_t)g->ntensors + 1, sizeof *k->bufs);
	IR_ASSERT(k->tbuf && k->bufs);
	for (int t = 0; t < g->ntensors; t++) {
		const Tensor *T = &g->tensors[t];
		k->tbuf[t] = -1;
		Dtype f = (Dtype)T->dtype;
		if (T->kind == TK_DEF) {
			const DefSched *ds = &k->sched.defs[T->def];
			if (ds->inlined || (ab && ab[t]))
				continue;
			f = T->result == 1 ? DT_I32 : ds->store;
		}
		k->bufs[k->nbufs] = (KBuf){t, f, ir_tensor_count(g, t), T->kind == TK_INPUT};
		k->tbuf[t] = k->nbufs++;
	}
}

Kernels *kir_lower(const Graph *g, const Schedule *s, const LowerOpts *o, Diag *d)
{
	if (s->ndefs != g->ndefs) {
		diag_set(d, 3, "internal: a schedule of %d definitions for a graph of %d", s->ndefs,
			 g->ndefs);
		return NULL;
	}
	Kernels *k = calloc(1, sizeof *k);
	IR_ASSERT(k);
	k->g = g;
	k->faults = o ? o->faults : 0;
	k->maps = map_cache_new();
	k->sched.ndefs = s->ndefs;
	k->sched.defs = malloc((size_t)(s->ndefs + 1) * sizeof *s->defs);
	IR_ASSERT(k->sched.defs);
	memcpy(k->sched.defs, s->defs, (size_t)s->ndefs * sizeof *s->defs);
	bool *ab = absorbed_set(g, s);
	make_buffers(k, ab);
	L l = {k, g, &k->sched, k->faults, d, -1, .on = NULL};
	for (int i = 0; i < g->ndefs; i++)
		if (!k->sched.defs[i].inlined && !(ab && ab[g->defs[i].out[0]]) && lower_def(&l, i) < 0) {
			free(ab);
			free(l.expand);
			kir_free(k);
			return NULL;
		}
	free(ab);
	free(l.expand);
	return k;
}
