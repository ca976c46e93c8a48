/* fuzz/gen_expr.c: random expressions, reads and index expressions for the generator
 * (gen.h). Every function returns text that is valid in the definition being written:
 *
 * - Index expressions are quasi-affine in the current variables, and their value interval
 *   is computed from the variables' intervals. A read whose every index interval lies
 *   inside its extent is in bounds; otherwise it gets `?? DEFAULT`. Indirect indices read an
 *   index table (an i32 input only ever read in index positions, which mp_make_inputs draws
 *   in bounds) or an integer tensor whose tracked values fit the extent.
 * - Integer expressions carry their value interval; an operation whose interval would leave
 *   +-2^16 is not written (its first operand stands instead), and `%` divides only by a
 *   positive literal or size.
 * - In tie mode (gen.h) only exact operations and exact tensors are used.
 * - Drawn on purpose now and then: rewrite-rule patterns and near misses (pattern), one
 *   tensor read twice with two paddings (reread), compositions no rule has (compose),
 *   bodies whose terms tie (gx_tie).
 * Operands that are not atoms are parenthesised; ir_print restores the canonical form.
 */
#include <string.h>
#include "gen.h"

enum { INTLIM = 1 << 16 };

/* Literals: dyadic ones are exact (safe in decisions); the others are not binary numbers.
 * Among the dyadic ones, format boundaries as literals (a literal is rounded into the
 * format of the arithmetic it meets): -0, f16's largest finite value and its overflow tie,
 * f16's smallest subnormal and a value between it and half of it (rounds up to it), a
 * value among f16's subnormals that needs rounding there (and is a bf16 tie), and one among
 * f32's and bf16's subnormals. */
static const char *const dyadic[] = {
	"0.0", "1.0", "2.0", "0.5", "-1.0", "0.25", "1.5", "-0.5", "0.125", "0x1.8p-3",
	"2.5e-1", "-0.75", "1e3", "3.0", "-2.0", "6.5e4", "-0.0", "65504.0", "0x1.ffep15",
	"0x1p-24", "0x1.8p-25", "0x1.31p-20", "-0x1.31p-130",
};
static const char *const inexact[] = {"0.1", "1e-3", "3.14159", "-0.3", "1e-30", "0.7"};
static const char *const special[] = {"inf", "-inf", "nan"};
static const char *const pads[] = {"0", "0.0", "1.0", "-inf", "inf", "-1.0", "0.5", "nan"};

static Ex mk(char *s, Ty ty, bool atom, bool exact, int64_t lo, int64_t hi, int nodes)
{
	return (Ex){s, ty, atom, exact, false, lo, hi, nodes, 0};
}

static const char *par(Gen *G, Ex e)
{
	return e.atom ? e.s : gs(G, "(%s)", e.s);
}

static int64_t imin(int64_t a, int64_t b) { return a < b ? a : b; }
static int64_t imax(int64_t a, int64_t b) { return a > b ? a : b; }
static int64_t iabs(int64_t a) { return a < 0 ? -a : a; }

static Ex lit_real(Gen *G)
{
	Rng *r = &G->r;
	const char *s;
	bool exact = true;
	if (tie_mode(G) || rng_chance(r, 0.6))
		s = dyadic[rng_below(r, ARRAY_LEN(dyadic))];
	else if (rng_chance(r, 0.75))
		s = inexact[rng_below(r, ARRAY_LEN(inexact))], exact = false;
	else
		s = special[rng_below(r, ARRAY_LEN(special))];
	return mk((char *)s, TY_REAL, s[0] != '-', exact, 0, 0, 0);
}

static Ex lit_int(Gen *G, int64_t lo, int64_t hi)
{
	int64_t v = lo + rng_below(&G->r, hi - lo + 1);
	return mk(gs(G, "%lld", (long long)v), TY_INT, v >= 0, true, v, v, 0);
}

static Ex var_ex(Gen *G, int k)
{
	return mk(G->v[k].name, TY_INT, true, true, G->v[k].lo, G->v[k].hi, 0);
}

/* ------------------------------------------------------------ index expressions */

typedef struct {
	char *s;
	int64_t lo, hi;
} Ix;

/* Variables with non-negative values up to at most maxhi, collected into c. */
static int vars_upto(Gen *G, int64_t maxhi, int *c)
{
	int n = 0;
	for (int k = 0; k < G->nv; k++)
		if (G->v[k].lo >= 0 && G->v[k].hi <= maxhi)
			c[n++] = k;
	return n;
}

static int any_var(Gen *G)
{
	return G->nv ? (int)rng_below(&G->r, G->nv) : -1;
}

/* A variable that fits, preferably one that spans the whole extent; sometimes (p_oob) one
 * that does not fit, padded. */
static bool ix_var(Gen *G, int64_t e, const char *et, Ix *x)
{
	int c[GMAXVARS], n = vars_upto(G, e - 1, c), k = -1;
	(void)et;
	if (n && rng_chance(&G->r, 0.7))
		for (int j = 0; j < n; j++)
			if (G->v[c[j]].hi == e - 1 && (k < 0 || rng_chance(&G->r, 0.5)))
				k = c[j];
	if (k < 0 && n)
		k = c[rng_below(&G->r, n)];
	if (k < 0 && G->nv && rng_chance(&G->r, G->o->p_oob))
		k = any_var(G);
	if (k < 0)
		return false;
	*x = (Ix){G->v[k].name, G->v[k].lo, G->v[k].hi};
	return true;
}

static bool ix_reverse(Gen *G, int64_t e, const char *et, Ix *x)
{
	int c[GMAXVARS], n = vars_upto(G, e - 1, c);
	if (n == 0)
		return false;
	const GVar *v = &G->v[c[rng_below(&G->r, n)]];
	char *s = et[0] >= '0' && et[0] <= '9' ? gs(G, "%lld - %s", (long long)(e - 1), v->name)
		: gs(G, "%s - 1 - %s", et, v->name);
	*x = (Ix){s, e - 1 - v->hi, e - 1 - v->lo};
	return true;
}

static bool ix_stride(Gen *G, int64_t e, const char *et, Ix *x)
{
	int64_t a = 2 + rng_below(&G->r, 2);
	int c[GMAXVARS], n = vars_upto(G, (e - 1) / a, c);
	(void)et;
	if (n == 0)
		return false;
	const GVar *v = &G->v[c[rng_below(&G->r, n)]];
	int64_t b = rng_below(&G->r, imin(3, e - 1 - a * v->hi) + 1);
	char *s = b ? gs(G, "%lld * %s + %lld", (long long)a, v->name, (long long)b)
		: gs(G, "%lld * %s", (long long)a, v->name);
	*x = (Ix){s, a * v->lo + b, a * v->hi + b};
	return true;
}

/* i + k: in bounds when it fits, else centred (convolution padding) and padded. */
static bool ix_window(Gen *G, int64_t e, const char *et, Ix *x)
{
	(void)et;
	if (G->nv < 2)
		return false;
	int a = any_var(G), b = any_var(G);
	if (a == b)
		b = (a + 1) % G->nv;
	const GVar *v = &G->v[a], *w = &G->v[b];
	if (v->lo < 0 || w->lo < 0)
		return false;
	int64_t off = 0;
	if (v->hi + w->hi > e - 1 || rng_chance(&G->r, G->o->p_oob))
		off = -rng_below(&G->r, w->hi + 1);
	char *s = off ? gs(G, "%s + %s - %lld", v->name, w->name, (long long)-off)
		: gs(G, "%s + %s", v->name, w->name);
	*x = (Ix){s, v->lo + w->lo + off, v->hi + w->hi + off};
	return true;
}

static bool ix_div(Gen *G, int64_t e, const char *et, Ix *x)
{
	(void)et;
	int k = any_var(G);
	if (k < 0 || G->v[k].lo < 0)
		return false;
	const GVar *v = &G->v[k];
	int64_t c = 2 + rng_below(&G->r, 3);
	if (v->hi / c > e - 1)
		return false;
	if (rng_chance(&G->r, 0.3)) {
		/* a shifted numerator that goes negative: floor division, not truncation, of
		 * negative indices matters here (the read is padded where it falls below 0) */
		int64_t sh = 1 + rng_below(&G->r, (uint64_t)c + 1);
		int64_t lo = v->lo - sh, hi = v->hi - sh;
		int64_t flo = lo >= 0 ? lo / c : -((-lo + c - 1) / c);
		int64_t fhi = hi >= 0 ? hi / c : -((-hi + c - 1) / c);
		if (flo < 0 && rng_chance(&G->r, 0.5)) {
			/* and shifted back in range: the negative quotients, exact ones included
			 * ((1 - 3) / 2 is -1), select elements instead of the padding */
			*x = (Ix){gs(G, "(%s - %lld) / %lld + %lld", v->name, (long long)sh,
				     (long long)c, (long long)-flo), 0, fhi - flo};
			return true;
		}
		*x = (Ix){gs(G, "(%s - %lld) / %lld", v->name, (long long)sh, (long long)c), flo, fhi};
		return true;
	}
	*x = (Ix){gs(G, "%s / %lld", v->name, (long long)c), v->lo / c, v->hi / c};
	return true;
}

static bool ix_mod(Gen *G, int64_t e, const char *et, Ix *x)
{
	int k = any_var(G);
	if (k < 0)
		return false;
	const char *v = G->v[k].name;
	char *s;
	switch (rng_below(&G->r, 3)) {
	case 0: s = gs(G, "%s %% %s", v, et); break;
	case 1: s = gs(G, "(%s + %lld) %% %s", v, (long long)(1 + rng_below(&G->r, 3)), et); break;
	default: s = gs(G, "(2 * %s + 1) %% %s", v, et); break;
	}
	*x = (Ix){s, 0, e - 1};
	return true;
}

static bool ix_flat(Gen *G, int64_t e, const char *et, Ix *x)
{
	(void)et;
	if (G->nv < 2)
		return false;
	int a = any_var(G), b = any_var(G);
	if (a == b)
		b = (a + 1) % G->nv;
	const GVar *v = &G->v[a], *w = &G->v[b];
	int64_t W = w->hi + 1;
	if (v->lo < 0 || w->lo < 0 || v->hi * W + w->hi > e - 1)
		return false;
	const char *wt = w->lhs && w->ext.v == W ? ext_text(G, w->ext) : gs(G, "%lld", (long long)W);
	*x = (Ix){gs(G, "%s * %s + %s", v->name, wt, w->name), v->lo * W + w->lo, v->hi * W + w->hi};
	return true;
}

static bool ix_const(Gen *G, int64_t e, const char *et, Ix *x)
{
	bool named = !(et[0] >= '0' && et[0] <= '9');
	if (named && e > 1 && rng_chance(&G->r, 0.3)) {
		*x = (Ix){gs(G, "%s - 1", et), e - 1, e - 1};
		return true;
	}
	int64_t c = rng_chance(&G->r, 0.5) ? 0 : rng_below(&G->r, e);
	*x = (Ix){gs(G, "%lld", (long long)c), c, c};
	return true;
}

static Ex read_of(Gen *G, int t, int use);
static Ex gx_read(Gen *G, bool want_int);

/* A new index table: an i32 input whose shape is made of the current variables' ranges. */
static int new_table(Gen *G, int64_t e)
{
	GExt dims[2];
	int rank = (int)imin(imin(G->nv, G->o->max_rank), rng_below(&G->r, 3));
	for (int k = 0; k < rank; k++) {
		const GVar *v = &G->v[any_var(G)];
		dims[k] = v->lhs ? v->ext : ext_of_value(G, v->hi + 1);
	}
	int t = new_input(G, DT_I32, rank, dims);
	if (t < 0)
		return -1;
	G->t[t].ixtab = true;
	G->t[t].lo = 0;
	G->t[t].hi = e - 1;
	return t;
}

static bool ix_indirect(Gen *G, int64_t e, const char *et, Ix *x)
{
	(void)et;
	if (G->ixdepth >= 2)
		return false;
	/* tables, and integer definitions (topk and argmax indices...) whose values fit */
	int c[GMAXT], n = 0, cd[GMAXT], nd = 0;
	for (int t = 0; t < G->nt; t++) {
		const GTensor *T = &G->t[t];
		if (T->ixtab)
			c[n++] = t;
		else if (T->isint && T->lo >= 0 && T->hi <= e - 1)
			cd[nd++] = t;
	}
	int t = -1;
	if (nd && rng_chance(&G->r, 0.6))
		t = cd[rng_below(&G->r, nd)];
	else if ((n == 0 || rng_chance(&G->r, 0.2)) && G->ninputs < G->o->max_inputs)
		t = new_table(G, e);
	if (t < 0 && n + nd > 0)
		t = rng_below(&G->r, n + nd) < n ? c[rng_below(&G->r, n)] : cd[rng_below(&G->r, nd)];
	if (t < 0)
		return false;
	if (G->t[t].ixtab)
		G->t[t].hi = imin(G->t[t].hi, e - 1);
	G->ixdepth++;
	Ex r = read_of(G, t, 2);
	G->ixdepth--;
	*x = (Ix){r.s, 0, e - 1};
	return true;
}

typedef bool (*IxFn)(Gen *, int64_t, const char *, Ix *);
static const IxFn ixfns[FZ_IX__COUNT] = {
	[FZ_IX_VAR] = ix_var, [FZ_IX_REVERSE] = ix_reverse, [FZ_IX_STRIDE] = ix_stride,
	[FZ_IX_WINDOW] = ix_window, [FZ_IX_DIV] = ix_div, [FZ_IX_MOD] = ix_mod,
	[FZ_IX_RESHAPE] = NULL /* two dimensions: read_of */, [FZ_IX_FLAT] = ix_flat,
	[FZ_IX_CONST] = ix_const, [FZ_IX_INDIRECT] = ix_indirect,
};

/* An index expression for a dimension of extent e; *oob when it may fall outside. */
static char *index_for(Gen *G, GExt ext, bool *oob)
{
	unsigned w[FZ_IX__COUNT];
	memcpy(w, G->o->ix_w, sizeof w);
	w[FZ_IX_RESHAPE] = 0;
	const char *et = ext_text(G, ext);
	Ix x;
	int k;
	for (;;) {
		k = rng_pick(&G->r, w, FZ_IX__COUNT);
		if (k < 0) {
			ix_const(G, ext.v, et, &x);
			break;
		}
		if (ixfns[k](G, ext.v, et, &x))
			break;
		w[k] = 0;
	}
	/* a shifted index now and then (x[i - 1] ?? 0); every kind but an indirect read has
	 * no operator weaker than + at its top, so the sum needs no parentheses */
	if (k != FZ_IX_INDIRECT && ext.v > 1 && rng_chance(&G->r, G->o->p_oob / 2)) {
		bool up = rng_chance(&G->r, 0.5);
		x.s = gs(G, "%s %c 1", x.s, up ? '+' : '-');
		x.lo += up ? 1 : -1, x.hi += up ? 1 : -1;
	}
	/* now and then in an integer rule's pattern, the value unchanged: i + 0, 0 + i,
	 * (i) * 1, i + (2 - 2), and floor division and remainder of literals (-7 / 2 is -4) */
	if (k != FZ_IX_INDIRECT && rng_chance(&G->r, G->o->p_ident / 2)) {
		static const char *const f[] = {"%s + 0", "0 + %s", "(%s) * 1", "%s + (2 - 2)", "%s - 0",
						"%s + (7 / 2 - 3)", "%s + ((-7) / 2 + 4)",
						"%s + ((-7) % 3 - 2)"};
		x.s = gs(G, f[rng_below(&G->r, ARRAY_LEN(f))], x.s);
	}
	if (x.lo < 0 || x.hi > ext.v - 1)
		*oob = true;
	return x.s;
}

/* r / C, r % C for dimensions (E1, C) with r below E1 * C. */
static bool reshape_pair(Gen *G, GExt e1, GExt e2, char **a, char **b)
{
	int c[GMAXVARS], n = vars_upto(G, e1.v * e2.v - 1, c);
	if (n == 0 || e2.v < 2)
		return false;
	const GVar *v = &G->v[c[rng_below(&G->r, n)]];
	const char *ct = ext_text(G, e2);
	*a = gs(G, "%s / %s", v->name, ct);
	*b = gs(G, "%s %% %s", v->name, ct);
	return true;
}

/* ------------------------------------------------------------------- reads */

static Ex pad_default(Gen *G, bool isint, int use)
{
	if (use == 2)
		return mk("0", TY_INT, true, true, 0, 0, 0);
	if (isint)
		return lit_int(G, -2, 3);
	if (G->ixdepth == 0 && rng_chance(&G->r, 0.1)) {
		/* another read: x[i + 1] ?? y[i] (?? chains to the right) */
		G->ixdepth = 2;
		Ex r = gx_read(G, false);
		G->ixdepth = 0;
		if (r.s)
			return r;
	}
	const char *s = pads[rng_below(&G->r, ARRAY_LEN(pads))];
	return mk((char *)s, s[0] == '0' && s[1] == 0 ? TY_INT : TY_REAL, s[0] != '-', true, 0, 0,
		  0);
}

/* A read of tensor t from the current definition. use: 0 a real value, 1 an integer value,
 * 2 a whole index position (its default, if any, is 0). */
static Ex read_of(Gen *G, int t, int use)
{
	GTensor *T = &G->t[t];
	char *ix[FZ_MAXRANK];
	bool oob = false;
	unsigned wsum = 0;
	for (int k = 0; k < FZ_IX__COUNT; k++)
		wsum += G->o->ix_w[k];
	double preshape = wsum ? (double)G->o->ix_w[FZ_IX_RESHAPE] / wsum : 0;
	for (int k = 0; k < T->rank; k++) {
		if (k + 1 < T->rank && rng_chance(&G->r, preshape) &&
		    reshape_pair(G, T->dims[k], T->dims[k + 1], &ix[k], &ix[k + 1])) {
			k++;
			continue;
		}
		ix[k] = index_for(G, T->dims[k], &oob);
	}
	char *s = gs(G, "%s[", T->name);
	for (int k = 0; k < T->rank; k++)
		s = gs(G, "%s%s%s", s, k ? ", " : "", ix[k]);
	s = gs(G, "%s]", s);
	T->uses++;
	Ex e = mk(s, T->isint ? TY_INT : TY_REAL, true, T->exact, T->lo, T->hi, 1);
	e.sig = (uint32_t)t + 1;
	e.expy = T->expy;
	if (!T->isint)
		e.lo = e.hi = 0;
	if (oob || rng_chance(&G->r, G->o->p_pad)) {
		Ex d = pad_default(G, T->isint, use);
		e.s = gs(G, "%s ?? %s", s, d.s);
		e.atom = false;
		if (e.ty == TY_INT)
			e.lo = imin(e.lo, d.lo), e.hi = imax(e.hi, d.hi);
	}
	return e;
}

/* A new input read by the current variables in one of the view kinds, shaped to fit. */
static Ex design_input(Gen *G, Dtype dt)
{
	GExt dims[FZ_MAXRANK];
	int maxr = G->o->max_rank, n = 0;
	int rank = G->nv && maxr && !rng_chance(&G->r, 0.1) ? 1 + (int)rng_below(&G->r, maxr)
		: (int)rng_below(&G->r, maxr + 1);
	int64_t elems = 1;
	while (n < rank) {
		int k = any_var(G);
		if (k < 0)
			break;
		const GVar *v = &G->v[k];
		int64_t hi = v->hi;
		GExt e = v->lhs && !rng_chance(&G->r, 0.15) ? v->ext : ext_of_value(G, hi + 1);
		if (v->lo < 0 || elems * e.v > G->o->max_elems)
			break;
		/* a stride or a window widens the dimension; a division narrows it */
		int kind = rng_pick(&G->r, G->o->ix_w, FZ_IX__COUNT);
		if (kind == FZ_IX_STRIDE && elems * (2 * hi + 2) <= G->o->max_elems)
			e = ext_of_value(G, 2 * hi + 1 + rng_below(&G->r, 2));
		else if (kind == FZ_IX_DIV && hi >= 2)
			e = ext_of_value(G, hi / 2 + 1);
		else if (kind == FZ_IX_WINDOW && G->nv > 1 && elems * (hi + 4) <= G->o->max_elems)
			e = ext_of_value(G, hi + 1 + rng_below(&G->r, 3));
		else if (kind == FZ_IX_CONST || kind == FZ_IX_INDIRECT)
			e = fresh_ext(G, G->o->max_extent);
		if (elems * e.v > G->o->max_elems)
			break;
		dims[n++] = e;
		elems *= e.v;
	}
	int t = new_input(G, dt, n, dims);
	if (t < 0)
		return mk(NULL, TY_REAL, true, true, 0, 0, 0);
	return read_of(G, t, dt == DT_I32);
}

static bool def_used(const Gen *G, const GTensor *T)
{
	return T->uses > 0 || (T->mate >= 0 && G->t[T->mate].uses > 0);
}

/* A read of some tensor: preferably a definition nothing reads yet (so that every
 * definition ends up used, in chains and diamonds), else any tensor, else a new input. */
static Ex gx_read(Gen *G, bool want_int)
{
	int front[GMAXT], any[GMAXT], nf = 0, na = 0;
	bool tie = tie_mode(G);
	for (int t = 0; t < G->nt; t++) {
		const GTensor *T = &G->t[t];
		if ((tie && !T->exact) || (want_int && !T->isint) || T->ixtab)
			continue;
		if (!T->input && !def_used(G, T))
			front[nf++] = t;
		any[na++] = t;
	}
	Rng *r = &G->r;
	bool can_new = G->ninputs < G->o->max_inputs;
	if (nf && rng_chance(r, 0.6))
		return read_of(G, front[rng_below(r, nf)], want_int);
	if (can_new && (na == 0 || rng_chance(r, 0.35))) {
		unsigned w[DT_I32 + 1];
		memcpy(w, G->o->in_dtype_w, sizeof w);
		if (want_int)
			memset(w, 0, sizeof w[0] * DT_I32);
		int dt = rng_pick(r, w, DT_I32 + 1);
		if (dt >= 0)
			return design_input(G, (Dtype)dt);
	}
	if (na)
		return read_of(G, any[rng_below(r, na)], want_int);
	return mk(NULL, TY_REAL, true, true, 0, 0, 0);
}

Ex gx_read_tensor(Gen *G, int t)
{
	return read_of(G, t, G->t[t].isint);
}

Ex gx_view(Gen *G, Dtype dt)
{
	return design_input(G, dt);
}

/* ------------------------------------------------------------- expressions */

static char *gx_bool(Gen *G, int depth);

static Ex int_leaf(Gen *G)
{
	int64_t r = rng_below(&G->r, 100);
	if (r < 40 && G->nv)
		return var_ex(G, any_var(G));
	if (r < 65) {
		Ex e = gx_read(G, true);
		if (e.s)
			return e;
	}
	if (r < 85 && G->nsizes) {
		int k = (int)rng_below(&G->r, G->nsizes);
		int64_t v = G->sizes[k].v;
		return mk((char *)ext_text(G, (GExt){k, v}), TY_INT, true, true, v, v, 0);
	}
	return lit_int(G, -3, 9);
}

/* The interval of integer op over a (and b). */
static void int_iv(Op op, const Ex *a, const Ex *b, int64_t *lo, int64_t *hi)
{
	int64_t p[4];
	switch (op) {
	case OP_NEG: *lo = -a->hi, *hi = -a->lo; break;
	case OP_ABS:
		*hi = imax(iabs(a->lo), iabs(a->hi));
		*lo = a->lo <= 0 && a->hi >= 0 ? 0 : imin(iabs(a->lo), iabs(a->hi));
		break;
	case OP_ADD: *lo = a->lo + b->lo, *hi = a->hi + b->hi; break;
	case OP_SUB: *lo = a->lo - b->hi, *hi = a->hi - b->lo; break;
	case OP_MUL:
		p[0] = a->lo * b->lo, p[1] = a->lo * b->hi, p[2] = a->hi * b->lo, p[3] = a->hi * b->hi;
		*lo = imin(imin(p[0], p[1]), imin(p[2], p[3]));
		*hi = imax(imax(p[0], p[1]), imax(p[2], p[3]));
		break;
	case OP_MAX: *lo = imax(a->lo, b->lo), *hi = imax(a->hi, b->hi); break;
	case OP_MIN: *lo = imin(a->lo, b->lo), *hi = imin(a->hi, b->hi); break;
	case OP_SELECT: *lo = imin(a->lo, b->lo), *hi = imax(a->hi, b->hi); break;
	case OP_MOD: {   /* the non-negative remainder: in [0, |b| - 1] */
		int64_t m = imax(iabs(b->lo), iabs(b->hi)) - 1;
		*lo = 0, *hi = a->lo >= 0 ? imin(a->hi, m) : m;
		break;
	}
	default: IR_ASSERT(!"not an integer op");
	}
}

/* Combines operands into op's text, type, exactness and interval. An integer +, - or *
 * that could grow past INTLIM takes its operands modulo 251 instead (never drop an
 * operand: its reads count as uses). */
static Ex combine(Gen *G, Op op, char *s, const Ex *a, int n, bool exact)
{
	Ex e = mk(s, TY_INT, false, exact, 0, 0, 1);
	bool allint = (op_info(op)->flags & (OPF_INT_OK | OPF_INT_ONLY)) != 0;
	e.expy = op == OP_EXP || op == OP_EXP2 || op == OP_EXPM1;
	for (int k = 0; k < n; k++) {
		allint &= a[k].ty == TY_INT;
		e.exact &= a[k].exact;
		e.expy |= a[k].expy;
		e.nodes += a[k].nodes;
	}
	if (op_info(op)->flags & OPF_CALL)
		e.atom = true;
	if (!allint) {
		e.ty = TY_REAL;
		return e;
	}
	int_iv(op, &a[0], n > 1 ? &a[1] : &a[0], &e.lo, &e.hi);
	bool grows = op == OP_ADD || op == OP_SUB || op == OP_MUL;
	if (!grows || (e.lo >= -INTLIM && e.hi <= INTLIM))
		return e;
	Ex m[2];
	for (int k = 0; k < 2; k++)
		m[k] = mk(gs(G, "%s %% 251", par(G, a[k])), TY_INT, false, true,
			  0, a[k].lo >= 0 ? imin(a[k].hi, 250) : 250, a[k].nodes + 1);
	e.s = gs(G, "%s %s %s", par(G, m[0]), op_info(op)->spelling, par(G, m[1]));
	int_iv(op, &m[0], &m[1], &e.lo, &e.hi);
	return e;
}

static Ex int_op(Gen *G, Op op, int depth)
{
	Ex a[2];
	a[0] = gx_int(G, depth - 1);
	const char *A = par(G, a[0]);
	switch (op) {
	case OP_NEG:
	case OP_ABS:
		return combine(G, op, op == OP_NEG ? gs(G, "-%s", A) : gs(G, "abs(%s)", a[0].s), a, 1,
			       true);
	case OP_MOD:
		if (G->nsizes && rng_chance(&G->r, 0.3)) {
			int k = (int)rng_below(&G->r, G->nsizes);
			a[1] = mk((char *)ext_text(G, (GExt){k, G->sizes[k].v}), TY_INT, true, true,
				  G->sizes[k].v, G->sizes[k].v, 0);
		} else {
			a[1] = lit_int(G, 2, 7);
		}
		/* a negative divisor now and then (the remainder stays non-negative: a helper
		 * that corrects a negative C remainder by b rather than |b| is wrong there) */
		if (rng_chance(&G->r, 0.25))
			a[1] = mk(gs(G, "-%s", a[1].s), TY_INT, false, true, -a[1].hi, -a[1].lo, 0);
		return combine(G, op, gs(G, "%s %% %s", A, a[1].s), a, 2, true);
	case OP_SELECT: {
		char *c = gx_bool(G, depth - 1);
		a[1] = gx_int(G, depth - 1);
		return combine(G, op, gs(G, "%s ? %s : %s", c, A, par(G, a[1])), a, 2, true);
	}
	default:
		break;
	}
	a[1] = gx_int(G, depth - 1);
	if (op == OP_MAX || op == OP_MIN)
		return combine(G, op, gs(G, "%s(%s, %s)", op_info(op)->spelling, a[0].s, a[1].s), a,
			       2, true);
	return combine(G, op, gs(G, "%s %s %s", A, op_info(op)->spelling, par(G, a[1])), a, 2,
		       true);
}

/* ------------------------------------------------------------ rule patterns */

/* Patterns the compiler's rewrite rules match (compiler/rewrite.c), so that campaigns
 * exercise every rule: x * 1 (1.0 * x, x * 0x1p0), x / 1, x / 2^k (k = 2, -1, 14, -14),
 * x - 0, -(-x) and !!c, A(B(x)) where A holds B (f64(f32), f32(bf16), f32(f16), f64(bf16)),
 * c ? x : x, integer folding (+, -, %, max, abs of literals; in index expressions, where
 * `/` is integer division, floor division of negatives too) and i + 0, 1 * i, i * 0, i - i; and near misses that the exact and integer
 * rules must leave alone: the real-only x * 0.0, x + 0.0, x - x, x / x; x / 2^15 and
 * x / 2^-15 (past the rule's range), x / 3.0, x / -2.0, x - (-0.0) (x + 0: -0 becomes +0),
 * 0.0 - x, x * -1.0; narrowing cast pairs (f16(f32), bf16(f64), f16(bf16), bf16(f16),
 * f32(f64)). The operand goes between pre and post (parenthesised when not an atom);
 * c ? x : x (pre and post NULL) takes a fresh condition; x POST x (pre NULL) needs an exact
 * x (its exact zero keeps its sign). A pattern needs the weights of its ops (op2: OP__COUNT
 * when none). */
typedef struct {
	const char *pre, *post;
	Op op, op2;
	bool same;        /* the value is the operand's */
} Pat;

static const Pat real_pats[] = {
	{"", " * 1.0", OP_MUL, OP__COUNT, true}, {"1 * ", "", OP_MUL, OP__COUNT, true},
	{"1.0 * ", "", OP_MUL, OP__COUNT, true}, {"", " * 0x1p0", OP_MUL, OP__COUNT, true},
	{"", " / 1.0", OP_DIV, OP__COUNT, true}, {"", " / 1", OP_DIV, OP__COUNT, true},
	{"", " - 0.0", OP_SUB, OP__COUNT, true}, {"", " - 0", OP_SUB, OP__COUNT, true},
	{"-(-", ")", OP_NEG, OP__COUNT, true}, {NULL, NULL, OP_SELECT, OP__COUNT, true},
	{"", " / 4.0", OP_DIV, OP__COUNT, false}, {"", " / 0.5", OP_DIV, OP__COUNT, false},
	{"", " / 16384.0", OP_DIV, OP__COUNT, false}, {"", " / 0x1p-14", OP_DIV, OP__COUNT, false},
	{"", " / 32768.0", OP_DIV, OP__COUNT, false}, {"", " / 0x1p-15", OP_DIV, OP__COUNT, false},
	{"", " / 3.0", OP_DIV, OP__COUNT, false}, {"", " / -2.0", OP_DIV, OP__COUNT, false},
	{"", " - (-0.0)", OP_SUB, OP_NEG, false}, {"0.0 - ", "", OP_SUB, OP__COUNT, false},
	{"", " * -1.0", OP_MUL, OP__COUNT, false},
	{"", " * 0.0", OP_MUL, OP__COUNT, false}, {"", " + 0.0", OP_ADD, OP__COUNT, false},
	{NULL, " - ", OP_SUB, OP__COUNT, false}, {NULL, " / ", OP_DIV, OP__COUNT, false},
	{"f64(f32(", "))", OP_CAST_F64, OP_CAST_F32, false},
	{"f32(bf16(", "))", OP_CAST_F32, OP_CAST_BF16, false},
	{"f32(f16(", "))", OP_CAST_F32, OP_CAST_F16, false},
	{"f64(bf16(", "))", OP_CAST_F64, OP_CAST_BF16, false},
	{"f16(f32(", "))", OP_CAST_F16, OP_CAST_F32, false},
	{"bf16(f64(", "))", OP_CAST_BF16, OP_CAST_F64, false},
	{"f16(bf16(", "))", OP_CAST_F16, OP_CAST_BF16, false},
	{"bf16(f16(", "))", OP_CAST_BF16, OP_CAST_F16, false},
	{"f32(f64(", "))", OP_CAST_F32, OP_CAST_F64, false},
};
static const Pat int_pats[] = {
	{"", " + 0", OP_ADD, OP__COUNT, true}, {"0 + ", "", OP_ADD, OP__COUNT, true},
	{"", " - 0", OP_SUB, OP__COUNT, true}, {"", " * 1", OP_MUL, OP__COUNT, true},
	{"1 * ", "", OP_MUL, OP__COUNT, true},
	{"-(-", ")", OP_NEG, OP__COUNT, true}, {NULL, NULL, OP_SELECT, OP__COUNT, true},
	{"", " + (3 - 3)", OP_ADD, OP_SUB, true}, {"", " * (5 - 4)", OP_MUL, OP_SUB, true},
	{"", " + ((-7) % 3 - 2)", OP_ADD, OP_MOD, true}, {"", " + (max(2, 5) - 5)", OP_ADD, OP_MAX, true},
	{"", " - (abs(-3) - 3)", OP_SUB, OP_ABS, true},
	{"", " * 0", OP_MUL, OP__COUNT, false}, {"0 * ", "", OP_MUL, OP__COUNT, false},
	{NULL, " - ", OP_SUB, OP__COUNT, false},
};

static Ex pattern(Gen *G, Ex e)
{
	bool isint = e.ty == TY_INT;
	const Pat *t = isint ? int_pats : real_pats;
	int n = isint ? (int)ARRAY_LEN(int_pats) : (int)ARRAY_LEN(real_pats);
	unsigned w[ARRAY_LEN(real_pats)];
	for (int k = 0; k < n; k++)
		w[k] = G->o->op_w[t[k].op] && (t[k].op2 == OP__COUNT || G->o->op_w[t[k].op2]) &&
		       (t[k].pre || !t[k].post || e.exact) &&
		       !(tie_mode(G) && t[k].post && strcmp(t[k].post, " / 3.0") == 0);
	int k = rng_pick(&G->r, w, n);
	if (k < 0)
		return e;
	const Pat *p = &t[k];
	const char *x = par(G, e);
	Ex r = e;
	r.s = p->pre ? gs(G, "%s%s%s", p->pre, x, p->post)
		: p->post ? gs(G, "%s%s%s", x, p->post, x) : gs(G, "%s ? %s : %s", gx_bool(G, 1), x, x);
	r.atom = false;
	r.nodes = e.nodes + 1;
	if (!p->same) {
		r.sig = e.sig ? e.sig * 31u + 101u + (uint32_t)k : 0;
		if (isint)   /* i * 0, 0 * i, i - i */
			r.lo = r.hi = 0;
		/* x / 3.0 is no dyadic: not safe in decisions (x / x is 1 or NaN) */
		r.exact = e.exact && !(p->post && strcmp(p->post, " / 3.0") == 0);
	}
	return r;
}

/* e, or now and then e in a rule pattern (GenOpts.p_ident). */
static Ex maybe_pattern(Gen *G, Ex e)
{
	return e.s && rng_chance(&G->r, G->o->p_ident) ? pattern(G, e) : e;
}

static Ex reread(Gen *G, bool want_int);

Ex gx_int(Gen *G, int depth)
{
	static const Op ops[] = {OP_NEG, OP_ADD, OP_SUB, OP_MUL, OP_MOD, OP_ABS, OP_MAX, OP_MIN,
				 OP_SELECT};
	if (rng_chance(&G->r, G->o->p_reread)) {
		Ex e = reread(G, true);
		if (e.s)
			return maybe_pattern(G, e);
	}
	if (depth <= 0 || rng_chance(&G->r, 0.3))
		return maybe_pattern(G, int_leaf(G));
	unsigned w[ARRAY_LEN(ops)];
	for (size_t k = 0; k < ARRAY_LEN(ops); k++)
		w[k] = G->o->op_w[ops[k]];
	int k = rng_pick(&G->r, w, ARRAY_LEN(ops));
	return maybe_pattern(G, k < 0 ? int_leaf(G) : int_op(G, ops[k], depth));
}

static Ex real_leaf(Gen *G)
{
	int64_t r = rng_below(&G->r, 100);
	if (r < 70) {
		Ex e = gx_read(G, false);
		if (e.s)
			return e;
	}
	if (r < 88 || !G->nv)
		return lit_real(G);
	return int_leaf(G);
}

static bool exact_op(Op op)
{
	switch (op) {
	case OP_NEG: case OP_ADD: case OP_SUB: case OP_MUL: case OP_SELECT: case OP_ABS:
	case OP_FLOOR: case OP_CEIL: case OP_MAX: case OP_MIN: case OP_FMA: case OP_MOD:
	case OP_POW: /* only with the exponent 2 or 3 in tie mode */
		return true;
	default:
		return (op_info(op)->flags & OPF_CAST) != 0;
	}
}

/* A unary function whose values are irrational at almost every exact argument and that
 * never saturates (erf, tanh, sigmoid, exp and their kin approach their limits faster than
 * any working precision can resolve: ceil(erf(1000)) is undecidable in practice). */
static bool irrational_fn(Op op)
{
	switch (op) {
	case OP_LOG: case OP_LOG2: case OP_LOG1P: case OP_SQRT: case OP_RSQRT: case OP_SIN:
	case OP_COS:
		return true;
	default:
		return false;
	}
}

Ex gx_decision(Gen *G, int depth)
{
	if (G->o->risky_ties)
		return gx_real(G, depth);
	bool saved = G->tie;
	G->tie = true;
	Ex a = gx_real(G, depth);
	G->tie = saved;
	if (saved || !rng_chance(&G->r, 0.3))
		return a;
	unsigned w[OP__COUNT];
	for (int op = 0; op < OP__COUNT; op++)
		w[op] = irrational_fn((Op)op) ? G->o->op_w[op] : 0;
	int op = rng_pick(&G->r, w, OP__COUNT);
	if (op < 0)
		return a;
	return combine(G, (Op)op, gs(G, "%s(%s)", op_info((Op)op)->spelling, a.s), &a, 1, false);
}

static Ex operand(Gen *G, int depth)
{
	return rng_chance(&G->r, 0.15) ? gx_int(G, depth) : gx_real(G, depth);
}

/* pow(x, literal) or pow(positive literal, x). A computed value to a computed power, or a
 * negative base, is left to o->risky_ties: whether the exponent is an integer decides NaN,
 * and the oracle cannot decide that for computed exponents (log1p(expm1(3)) is 3). */
static Ex pow_op(Gen *G, int depth)
{
	static const char *const ex[] = {"2", "3", "0.5", "-1", "1.5", "0", "-2", "0.25", "2.0"};
	static const char *const base[] = {"2.0", "0.5", "10.0", "1.5", "-2.0"};
	Ex a[2];
	Rng *r = &G->r;
	bool risky = G->o->risky_ties;
	int64_t k = tie_mode(G) ? 0 : rng_below(r, 10);
	if (k < 7) {
		const char *e = ex[tie_mode(G) ? rng_below(r, 2) : rng_below(r, ARRAY_LEN(ex))];
		a[0] = operand(G, depth - 1);
		a[1] = mk((char *)e, TY_REAL, e[0] != '-', true, 0, 0, 0);
		bool exact = a[0].exact && (strcmp(e, "2") == 0 || strcmp(e, "3") == 0);
		return combine(G, OP_POW, gs(G, "pow(%s, %s)", a[0].s, e), a, 2, exact);
	}
	if (k < 9 || !risky)
		a[0] = mk((char *)base[rng_below(r, ARRAY_LEN(base) - !risky)], TY_REAL, true, true,
			  0, 0, 0);
	else
		a[0] = operand(G, depth - 1);
	a[1] = operand(G, depth - 1);
	Ex e = combine(G, OP_POW, gs(G, "pow(%s, %s)", a[0].s, a[1].s), a, 2, false);
	e.expy = true;
	return e;
}

static bool exp_or_log(Op op)
{
	switch (op) {
	case OP_EXP: case OP_EXP2: case OP_EXPM1: case OP_LOG: case OP_LOG2: case OP_LOG1P:
		return true;
	default:
		return false;
	}
}

static Ex real_op(Gen *G, Op op, int depth)
{
	const OpInfo *in = op_info(op);
	Ex a[3];
	switch (op) {
	case OP_MOD:
		return int_op(G, OP_MOD, depth);
	case OP_POW:
		return pow_op(G, depth);
	case OP_SELECT: {
		char *c = gx_bool(G, depth - 1);
		a[0] = operand(G, depth - 1);
		a[1] = operand(G, depth - 1);
		return combine(G, op, gs(G, "%s ? %s : %s", c, par(G, a[0]), par(G, a[1])), a, 2,
			       true);
	}
	case OP_FLOOR:
	case OP_CEIL:
		a[0] = gx_decision(G, depth - 1);
		return combine(G, op, gs(G, "%s(%s)", in->spelling, a[0].s), a, 1, a[0].exact);
	case OP_NEG:
		a[0] = operand(G, depth - 1);
		return combine(G, op, gs(G, "-%s", par(G, a[0])), a, 1, true);
	default:
		break;
	}
	for (int k = 0; k < in->arity; k++)
		a[k] = operand(G, depth - 1);
	/* f(d[i]) - f(d[j]) (f computed, or d) is an exact zero at i == j that the oracle sees
	 * only as an interval around 0, whose sign is then undecidable: add instead */
	if (op == OP_SUB && ((a[0].sig && a[0].sig == a[1].sig && !(a[0].exact && a[1].exact)) ||
			     (a[0].expy && a[1].expy)))
		op = OP_ADD, in = op_info(op);
	/* no exp or log of an exp-like value, no division by one (gen.h Ex.expy) */
	if (a[0].expy && in->arity == 1 && exp_or_log(op))
		op = G->o->op_w[OP_TANH] ? OP_TANH : OP_ABS, in = op_info(op);
	if (op == OP_DIV && a[1].expy)
		op = OP_MUL, in = op_info(op);
	bool exact = exact_op(op);
	if (in->flags & OPF_INFIX)
		return combine(G, op, gs(G, "%s %s %s", par(G, a[0]), in->spelling, par(G, a[1])), a,
			       2, exact);
	char *s = gs(G, "%s(%s", in->spelling, a[0].s);
	for (int k = 1; k < in->arity; k++)
		s = gs(G, "%s, %s", s, a[k].s);
	Ex e = combine(G, op, gs(G, "%s)", s), a, in->arity, exact);
	if (in->arity == 1 && a[0].sig)
		e.sig = a[0].sig * 31u + (uint32_t)op + 1u;
	return e;
}

static bool real_op_ok(Gen *G, Op op)
{
	unsigned f = op_info(op)->flags;
	if (f & (OPF_BOOL_IN | OPF_BOOL_OUT | OPF_INT_ONLY))
		return op == OP_MOD;
	if (!tie_mode(G))
		return true;
	return exact_op(op);
}

/* ------------------------------------------------------------ one tensor, read twice */

/* A variable spanning [0, e - 1] (so that it shifted by one reaches outside), or -1. */
static int spanning_var(Gen *G, int64_t e)
{
	int c[GMAXVARS], n = 0;
	for (int k = 0; k < G->nv; k++)
		if (!G->v[k].isk && G->v[k].lo == 0 && G->v[k].hi == e - 1)
			c[n++] = k;
	return n ? c[rng_below(&G->r, n)] : -1;
}

/* A tensor with a dimension a current variable spans (*dim: one such), of the type wanted
 * (exact in tie mode), or a new input shaped by the variables; -1 if none. */
static int reread_tensor(Gen *G, bool want_int, int *dim)
{
	int c[GMAXT], cd[GMAXT], n = 0;
	bool tie = tie_mode(G);
	for (int t = 0; t < G->nt; t++) {
		const GTensor *T = &G->t[t];
		if (T->ixtab || T->isint != want_int || (tie && !T->exact))
			continue;
		for (int k = 0; k < T->rank; k++)
			if (T->dims[k].v > 1 && spanning_var(G, T->dims[k].v) >= 0) {
				c[n] = t, cd[n++] = k;
				break;
			}
	}
	if (n && (G->ninputs >= G->o->max_inputs || rng_chance(&G->r, 0.6))) {
		int k = (int)rng_below(&G->r, n);
		*dim = cd[k];
		return c[k];
	}
	if (want_int)
		return -1;
	GExt dims[2];
	int rank = 0;
	int64_t el = 1;
	for (int k = 0; k < G->nv && rank < 2 && rank < G->o->max_rank; k++) {
		const GVar *v = &G->v[k];
		if (v->isk || v->lo != 0 || v->hi < 1 || el * (v->hi + 1) > G->o->max_elems ||
		    (rank && rng_chance(&G->r, 0.5)))
			continue;
		dims[rank++] = v->lhs ? v->ext : ext_of_value(G, v->hi + 1);
		el *= v->hi + 1;
	}
	unsigned w[DT_I32];
	memcpy(w, G->o->in_dtype_w, sizeof w);
	int dt = rng_pick(&G->r, w, DT_I32);
	if (rank == 0 || dt < 0)
		return -1;
	int t = new_input(G, (Dtype)dt, rank, dims);
	*dim = (int)rng_below(&G->r, rank);
	return t;
}

/* Two different paddings of a read of T (real literals, or small integers). */
static void two_pads(Gen *G, bool isint, Ex *d)
{
	if (isint) {
		int64_t a = rng_below(&G->r, 6) - 2, b = a + 1 + rng_below(&G->r, 4);
		d[0] = mk(gs(G, "%lld", (long long)a), TY_INT, a >= 0, true, a, a, 0);
		d[1] = mk(gs(G, "%lld", (long long)b), TY_INT, b >= 0, true, b, b, 0);
		return;
	}
	int a = (int)rng_below(&G->r, ARRAY_LEN(pads));
	int b = (a + 1 + (int)rng_below(&G->r, ARRAY_LEN(pads) - 1)) % (int)ARRAY_LEN(pads);
	for (int k = 0; k < 2; k++) {
		const char *s = pads[k ? b : a];
		d[k] = mk((char *)s, s[0] == '0' && s[1] == 0 ? TY_INT : TY_REAL, s[0] != '-', true, 0,
			  0, 0);
	}
}

/* The read T[ix] ?? pad as an Ex. */
static Ex padded_read(Gen *G, int t, char **ix, Ex pad)
{
	GTensor *T = &G->t[t];
	char *s = gs(G, "%s[", T->name);
	for (int k = 0; k < T->rank; k++)
		s = gs(G, "%s%s%s", s, k ? ", " : "", ix[k]);
	T->uses++;
	Ex e = mk(gs(G, "%s] ?? %s", s, pad.s), T->isint ? TY_INT : TY_REAL, false, T->exact,
		  imin(T->lo, pad.lo), imax(T->hi, pad.hi), 1);
	e.sig = (uint32_t)t + 1;
	e.expy = T->expy;
	if (!T->isint)
		e.lo = e.hi = 0;
	return e;
}

/* One tensor read twice in one expression, each read padded and one padding reached:
 * the same view with two paddings (x[i + 1] ?? 0 + x[i + 1] ?? 1: a CSE that merges reads
 * by their index alone is wrong there), or two views (x[i + 1] ?? 0.5 * x[i - 2] ?? -inf),
 * combined by +, -, *, max or min. A result with s NULL when no tensor fits. */
static Ex reread(Gen *G, bool want_int)
{
	int dim = 0, t = reread_tensor(G, want_int, &dim);
	if (t < 0)
		return mk(NULL, TY_REAL, true, true, 0, 0, 0);
	GTensor *T = &G->t[t];
	char *ix[2][FZ_MAXRANK];
	bool oob = false;
	for (int k = 0; k < T->rank; k++)
		ix[0][k] = ix[1][k] = k == dim ? NULL : index_for(G, T->dims[k], &oob);
	int v = spanning_var(G, T->dims[dim].v);
	int mode = (int)rng_below(&G->r, 3);   /* 0: one view; 1, 2: two views (2: one pad) */
	int64_t s0 = 1 + rng_below(&G->r, 2), s1 = 1 + rng_below(&G->r, 2);
	const char *vn = G->v[v].name;
	ix[0][dim] = gs(G, "%s %c %lld", vn, rng_chance(&G->r, 0.5) ? '+' : '-', (long long)s0);
	ix[1][dim] = mode == 0 ? ix[0][dim] : rng_chance(&G->r, 0.5) ? (char *)vn
		   : gs(G, "%s %c %lld", vn, ix[0][dim][strlen(vn) + 1] == '+' ? '-' : '+', (long long)s1);
	Ex d[2];
	two_pads(G, T->isint, d);
	if (mode == 2)
		d[1] = d[0];
	Ex a[2] = {padded_read(G, t, ix[0], d[0]), padded_read(G, t, ix[1], d[1])};
	static const Op ops[] = {OP_ADD, OP_SUB, OP_MUL, OP_MAX, OP_MIN};
	unsigned w[ARRAY_LEN(ops)];
	for (size_t k = 0; k < ARRAY_LEN(ops); k++)
		w[k] = G->o->op_w[ops[k]] ? 1 : 0;
	int k = rng_pick(&G->r, w, ARRAY_LEN(ops));
	Op op = k < 0 ? OP_ADD : ops[k];
	if (op == OP_SUB && !(a[0].exact && a[1].exact))
		op = OP_ADD;   /* an exact zero of computed values: its sign is undecidable */
	char *s = op == OP_MAX || op == OP_MIN
		? gs(G, "%s(%s, %s)", op_info(op)->spelling, a[0].s, a[1].s)
		: gs(G, "%s %s %s", par(G, a[0]), op_info(op)->spelling, par(G, a[1]));
	return combine(G, op, s, a, 2, true);
}

/* ------------------------------------------------------------ compositions */

/* A real operand of exact value (exact ring arithmetic of inputs: gen.h tie mode), an
 * integer one cast to f32 (exact: integers stay within 2^16). */
static Ex exact_real(Gen *G, int depth)
{
	bool saved = G->tie;
	G->tie = true;
	Ex e = gx_real(G, depth);
	G->tie = saved;
	if (e.ty == TY_INT)
		e = combine(G, OP_CAST_F32, gs(G, "f32(%s)", e.s), &e, 1, true);
	return e;
}

enum {
	CP_FN_PRODUCT, CP_MULDIV, CP_DISTRIB, CP_ADDSUB, CP_SUBSUB, CP_SQUARE, CP_NEGNEG,
	CP_MINMAX, CP_DIVDIV, CP_NESTED, CP_TWOROUND, CP__COUNT
};

/* Two different formats among f32, f16, bf16 (and f64) whose casts have weight: 0, or 1
 * with *f and *g set. */
static int two_formats(Gen *G, Op *f, Op *g)
{
	static const Op casts[] = {OP_CAST_F16, OP_CAST_BF16, OP_CAST_F32, OP_CAST_F64};
	Op c[4];
	int n = 0;
	for (int k = 0; k < 4; k++)
		if (G->o->op_w[casts[k]])
			c[n++] = casts[k];
	if (n < 2)
		return 0;
	int a = (int)rng_below(&G->r, n), b = (a + 1 + (int)rng_below(&G->r, n - 1)) % n;
	*f = c[a], *g = c[b];
	return 1;
}

/* Compositions no rewrite rule has yet, and which a rule one day might get wrong: f(a * b)
 * (log(a * b) is not log a + log b at overflow), (a * b) / b, a * b + a * c, (a + b) - b
 * (also (a + b) - a, and b scaled by a power of two or 3, (a + b * S) - b * S, so that the
 * sum rounds away a's low bits), a - (a - b), a * a, -a * -b, min(a, max(a, b)),
 * a / (b / c), abs(abs(a)), abs(-a), floor(floor(a)), and one value rounded to two formats
 * in one expression (f16(a * b) + bf16(a * b): two roundings that only their target format
 * tells apart, of a value with more bits than either keeps). Other operands are exact (a zero
 * the oracle must sign stays a point). */
static Ex compose(Gen *G, int depth)
{
	static const unsigned cw[CP__COUNT] = {30, 8, 10, 12, 8, 8, 6, 8, 6, 8, 12};
	unsigned w[CP__COUNT];
	memcpy(w, cw, sizeof w);
	bool tie = tie_mode(G);
	const unsigned *ow = G->o->op_w;
	if (tie)
		w[CP_FN_PRODUCT] = w[CP_MULDIV] = w[CP_DIVDIV] = 0;
	if (!ow[OP_MUL])
		w[CP_FN_PRODUCT] = w[CP_MULDIV] = w[CP_DISTRIB] = w[CP_SQUARE] = w[CP_NEGNEG] = 0;
	if (!ow[OP_DIV])
		w[CP_MULDIV] = w[CP_DIVDIV] = 0;
	if (!ow[OP_ADD] || !ow[OP_SUB])
		w[CP_ADDSUB] = w[CP_DISTRIB] = 0;
	if (!ow[OP_SUB])
		w[CP_SUBSUB] = 0;
	if (!ow[OP_NEG])
		w[CP_NEGNEG] = 0;
	if (!ow[OP_MIN] || !ow[OP_MAX])
		w[CP_MINMAX] = 0;
	if (!ow[OP_ABS] && !ow[OP_FLOOR] && !ow[OP_CEIL])
		w[CP_NESTED] = 0;
	Op f1 = OP_CAST_F16, f2 = OP_CAST_BF16;
	if (!two_formats(G, &f1, &f2))
		w[CP_TWOROUND] = 0;
	int form = rng_pick(&G->r, w, CP__COUNT);
	if (form < 0)
		return mk(NULL, TY_REAL, true, true, 0, 0, 0);
	Ex a[3];
	int n = form == CP_SQUARE || form == CP_NESTED ? 1
		: form == CP_DISTRIB || form == CP_DIVDIV ? 3 : 2;
	for (int k = 0; k < n; k++) {
		a[k] = form == CP_TWOROUND && !tie ? gx_read(G, false) : exact_real(G, depth - 1);
		if (!a[k].s)   /* no tensor to read */
			a[k] = exact_real(G, depth - 1);
		if (a[k].ty == TY_INT)
			a[k] = combine(G, OP_CAST_F32, gs(G, "f32(%s)", a[k].s), &a[k], 1, true);
	}
	const char *A = par(G, a[0]), *B = n > 1 ? par(G, a[1]) : NULL, *C = n > 2 ? par(G, a[2]) : NULL;
	char *s;
	bool exact = true;
	Op top = OP_ADD;
	switch (form) {
	case CP_FN_PRODUCT: {
		static const Op fns[] = {OP_EXP, OP_LOG, OP_SQRT, OP_ABS, OP_TANH, OP_SIN, OP_COS,
					 OP_LOG1P, OP_SIGMOID, OP_ERF, OP_RSQRT, OP_EXP2, OP_LOG2,
					 OP_EXPM1};
		unsigned fw[ARRAY_LEN(fns)];
		bool expy = a[0].expy || a[1].expy;
		for (size_t k = 0; k < ARRAY_LEN(fns); k++)
			fw[k] = expy && exp_or_log(fns[k]) ? 0 : ow[fns[k]];
		int k = rng_pick(&G->r, fw, ARRAY_LEN(fns));
		top = k < 0 ? OP_ABS : fns[k];
		s = gs(G, "%s(%s * %s)", op_info(top)->spelling, A, B);
		exact = top == OP_ABS;
		break;
	}
	case CP_MULDIV:
		top = OP_DIV, exact = false;
		s = gs(G, "(%s * %s) / %s", A, B, B);
		break;
	case CP_DISTRIB: {
		bool sub = rng_chance(&G->r, 0.5);
		s = gs(G, "%s * %s %c %s * %s", A, B, sub ? '-' : '+', A, C);
		break;
	}
	case CP_ADDSUB: {
		static const char *const sc[] = {"1024.0", "0x1p-12", "3.0", "65536.0", "0.75"};
		top = OP_SUB;
		int64_t v = rng_below(&G->r, 4);
		if (v == 0)
			s = gs(G, "(%s + %s) - %s", A, B, B);
		else if (v == 1)
			s = gs(G, "(%s + %s) - %s", A, B, A);
		else {   /* b scaled: the sum rounds, a's low bits are lost */
			const char *S = sc[rng_below(&G->r, ARRAY_LEN(sc))];
			char *bs = gs(G, "%s * %s", B, S);
			s = v == 2 ? gs(G, "(%s + %s) - %s", A, bs, bs)
				: gs(G, "(%s + %s) - %s", bs, A, bs);
		}
		break;
	}
	case CP_SUBSUB:
		top = OP_SUB;
		s = gs(G, "%s - (%s - %s)", A, A, B);
		break;
	case CP_SQUARE:
		top = OP_MUL;
		s = gs(G, "%s * %s", A, A);
		break;
	case CP_NEGNEG:
		top = OP_MUL;
		s = gs(G, "-%s * -%s", A, B);
		break;
	case CP_MINMAX: {
		bool mn = rng_chance(&G->r, 0.5);
		top = mn ? OP_MIN : OP_MAX;
		s = gs(G, "%s(%s, %s(%s, %s))", mn ? "min" : "max", a[0].s, mn ? "max" : "min", a[0].s,
		       a[1].s);
		break;
	}
	case CP_DIVDIV:
		top = OP_DIV, exact = false;
		s = gs(G, "%s / (%s / %s)", A, B, C);
		break;
	case CP_TWOROUND: {
		static const char *const ops[] = {"+", "-", "*", "max", "min"};
		static const Op opv[] = {OP_ADD, OP_SUB, OP_MUL, OP_MAX, OP_MIN};
		int k = (int)rng_below(&G->r, ARRAY_LEN(ops));
		const char *o = ow[opv[k]] ? ops[k] : "+";
		const char *F = op_info(f1)->spelling, *H = op_info(f2)->spelling;
		/* the value rounded twice: a product (else a sum) of two reads, whose bits
		 * overflow both formats; an exact operand of few bits (a small integer, a
		 * dyadic literal, a 16-bit input) rounds alike in both and tells nothing */
		const char *v = ow[OP_MUL] ? gs(G, "%s * %s", A, B)
			: ow[OP_ADD] ? gs(G, "%s + %s", A, B) : a[0].s;
		top = f1;
		s = o[0] == 'm' ? gs(G, "%s(%s(%s), %s(%s))", o, F, v, H, v)
			: gs(G, "%s(%s) %s %s(%s)", F, v, o, H, v);
		break;
	}
	default: {
		static const Op nest[] = {OP_ABS, OP_ABS, OP_FLOOR, OP_CEIL};
		unsigned nw[ARRAY_LEN(nest)];
		for (size_t k = 0; k < ARRAY_LEN(nest); k++)
			nw[k] = ow[nest[k]] && (k != 1 || ow[OP_NEG]);
		int k = rng_pick(&G->r, nw, ARRAY_LEN(nest));
		top = nest[k < 0 ? 0 : k];
		const char *f = op_info(top)->spelling;
		s = k == 1 ? gs(G, "abs(-%s)", A) : gs(G, "%s(%s(%s))", f, f, a[0].s);
		break;
	}
	}
	Ex e = combine(G, top, s, a, n, exact);
	e.atom = false;
	e.nodes += 2;
	return e;
}

/* ------------------------------------------------------------ ties */

/* A body whose terms tie, for a reduction of monoid m whose reduction index is G->v[rv]:
 * the terms clamped by a dyadic literal on the side that wins (min(e, 0.5) for argmax,
 * max, topk; max(e, 0.5) for argmin, min), a new input seen through r / c (c terms in a
 * row are equal), or e * 0.0 (+0 and -0 tie: the smaller index wins, and max gives +0). */
Ex gx_tie(Gen *G, int depth, Monoid m, int rv)
{
	static const char *const lits[] = {"0.0", "0.5", "-0.5", "1.0", "2.0"};
	bool low = m == MO_ARGMIN || m == MO_MIN;
	const GVar *r = &G->v[rv];
	int kind = (int)rng_below(&G->r, 10);
	if (kind >= 4 && kind < 8 && r->lo >= 0 && G->ninputs < G->o->max_inputs) {
		GExt dims[FZ_MAXRANK];
		char *ix[FZ_MAXRANK];
		int n = 0;
		int64_t c = 2 + rng_below(&G->r, 3), el = r->hi / c + 1;
		for (int k = 0; k < G->nv && n + 1 < G->o->max_rank; k++) {
			const GVar *v = &G->v[k];
			if (!v->lhs || v->isk || el * v->ext.v > G->o->max_elems || rng_chance(&G->r, 0.3))
				continue;
			dims[n] = v->ext, ix[n++] = (char *)v->name;
			el *= v->ext.v;
		}
		int at = (int)rng_below(&G->r, n + 1);
		memmove(&dims[at + 1], &dims[at], (size_t)(n - at) * sizeof *dims);
		memmove(&ix[at + 1], &ix[at], (size_t)(n - at) * sizeof *ix);
		dims[at] = ext_of_value(G, r->hi / c + 1);
		ix[at] = gs(G, "%s / %lld", r->name, (long long)c);
		unsigned w[DT_I32];
		memcpy(w, G->o->in_dtype_w, sizeof w);
		int dt = rng_pick(&G->r, w, DT_I32);
		int t = dt < 0 || G->o->max_rank < 1 ? -1 : new_input(G, (Dtype)dt, n + 1, dims);
		if (t >= 0) {
			char *s = gs(G, "%s[", G->t[t].name);
			for (int k = 0; k <= n; k++)
				s = gs(G, "%s%s%s", s, k ? ", " : "", ix[k]);
			G->t[t].uses++;
			Ex e = mk(gs(G, "%s]", s), TY_REAL, true, true, 0, 0, 1);
			e.sig = (uint32_t)t + 1;
			return e;
		}
	}
	Ex e = gx_real(G, depth - 1);
	if (e.ty == TY_INT)
		e = combine(G, OP_CAST_F32, gs(G, "f32(%s)", e.s), &e, 1, true);
	if (kind >= 8 && G->o->op_w[OP_MUL])
		return combine(G, OP_MUL, gs(G, "%s * 0.0", par(G, e)), &e, 1, e.exact);
	Op op = low ? OP_MAX : OP_MIN;
	if (!G->o->op_w[op])
		return e;
	Ex l = mk((char *)lits[rng_below(&G->r, ARRAY_LEN(lits))], TY_REAL, true, true, 0, 0, 0);
	Ex a[2] = {e, l};
	return combine(G, op, gs(G, "%s(%s, %s)", op_info(op)->spelling, e.s, l.s), a, 2, true);
}

Ex gx_real(Gen *G, int depth)
{
	if (rng_chance(&G->r, G->o->p_reread)) {
		Ex e = reread(G, false);
		if (e.s)
			return maybe_pattern(G, e);
	}
	if (depth > 0 && rng_chance(&G->r, G->o->p_compose)) {
		Ex e = compose(G, depth);
		if (e.s)
			return maybe_pattern(G, e);
	}
	if (depth <= 0 || rng_chance(&G->r, 0.2))
		return maybe_pattern(G, real_leaf(G));
	unsigned w[OP__COUNT];
	for (int op = 0; op < OP__COUNT; op++)
		w[op] = real_op_ok(G, (Op)op) ? G->o->op_w[op] : 0;
	int op = rng_pick(&G->r, w, OP__COUNT);
	return maybe_pattern(G, op < 0 ? real_leaf(G) : real_op(G, (Op)op, depth));
}

/* A comparison of numbers the oracle can decide (gx_decision against an exact value). */
static char *compare(Gen *G, Op op, int depth)
{
	Ex a, b;
	if (rng_chance(&G->r, 0.4)) {
		a = gx_int(G, depth - 1);
		b = gx_int(G, depth - 1);
	} else {
		a = gx_decision(G, depth - 1);
		bool saved = G->tie;
		G->tie = true;
		b = rng_chance(&G->r, 0.5) ? gx_real(G, depth - 1) : lit_real(G);
		G->tie = saved;
	}
	if (rng_chance(&G->r, 0.5)) {
		Ex t = a;
		a = b;
		b = t;
	}
	return gs(G, "(%s %s %s)", par(G, a), op_info(op)->spelling, par(G, b));
}

static char *gx_bool(Gen *G, int depth)
{
	static const Op ops[] = {OP_EQ, OP_NE, OP_LT, OP_LE, OP_GT, OP_GE, OP_AND, OP_OR, OP_NOT};
	unsigned w[ARRAY_LEN(ops)];
	for (size_t k = 0; k < ARRAY_LEN(ops); k++)
		w[k] = depth > 1 || !(op_info(ops[k])->flags & OPF_BOOL_IN) ? G->o->op_w[ops[k]] : 0;
	int k = rng_pick(&G->r, w, ARRAY_LEN(ops));
	Op op = k < 0 ? OP_LT : ops[k];
	if (G->o->op_w[OP_NOT] && rng_chance(&G->r, G->o->p_ident))
		return gs(G, "(!(!%s))", gx_bool(G, depth - 1));   /* !!c -> c */
	if (op == OP_NOT)
		return gs(G, "(!%s)", gx_bool(G, depth - 1));
	if (op == OP_AND || op == OP_OR) {
		char *a = gx_bool(G, depth - 1);
		return gs(G, "(%s %s %s)", a, op_info(op)->spelling, gx_bool(G, depth - 1));
	}
	return compare(G, op, depth);
}
