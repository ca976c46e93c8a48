/* fuzz/gen_online.c: one-pass-shaped subgraphs and their `online` schedules (gen.h;
 * docs/fuzz.md "What the generator draws on purpose"; docs/online.md).
 *
 * A share of the cases (GenOpts.p_online, decided in a stream of its own: go_case) is
 * built around one of the shapes compiler/sched/online.c recognises:
 * - softmax: m = max(r) x; l = sum(r) exp(x - m) or exp((x - m) * c), c a positive
 *   constant, now and then under `cond ? . : 0`, through a plain definition p or written
 *   in l; now and then the normalised y = p / l;
 * - attention: scores s = sum(d) q * k [* scale] (a contraction), m, l as softmax, and
 *   o = sum(r) p * v / l; grouped-query heads (k and v read at h / G), causal ranges
 *   (r: 0..i+1, r: 0..i), paddings (a shifted key or value read `?? 0.0`), decode shapes
 *   (no query dimension) and permuted output rows;
 * - logsumexp: z = logsumexp(r) x, now and then of terms scaled past exp's range;
 * - welford: mu = sum(r:N) x / N; var = sum(r:N) (x - mu) * (x - mu) / N; now and then the
 *   layernorm y = (x - mu) * rsqrt(var + eps).
 * x is a view of a new input (gen_expr.c gx_view: transposed, strided, windowed, divided,
 * broadcast reads) or a random expression, written as the same text in every member over
 * the same variable names, so that the members' terms are equal node for node as online.c
 * compares them. The reductions' ranges are full, causal (r: 0..i+1 with i a row of the
 * key extent), strictly before the diagonal (r: 0..i), tails (r: i..E) or literal starts.
 * A few ordinary definitions may follow (gen.c), reading the shape's results.
 *
 * The schedule (go_schedule) finds the sets with online.c's own matcher (on_match), so a
 * set is put under `online` only where the directive is accepted, and gives each set's
 * members linear order and one split for all or none; now and then a tile of a member's
 * rows and 16-bit (or f64) formats.
 *
 * Invariants: as gen.c's. The text is a function of (options, seed, case number); every
 * read is in bounds or padded; every tensor stays within max_elems; a shape is drawn only
 * where the options allow its operations and monoids.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "gen.h"

/* ------------------------------------------------------------ the case */

static bool has_op(const GenOpts *o, Op op)
{
	return o->op_w[op] > 0;
}

/* The relative weight of each shape, 0 where the options exclude what it needs. */
static void shape_weights(const GenOpts *o, unsigned *w)
{
	static const unsigned base[GO__COUNT] = {
		[GO_SOFTMAX] = 3, [GO_ATTENTION] = 4, [GO_LSE] = 3, [GO_WELFORD] = 3,
	};
	memcpy(w, base, sizeof base);
	bool arith = has_op(o, OP_SUB) && has_op(o, OP_MUL) && has_op(o, OP_DIV);
	bool sm = arith && has_op(o, OP_EXP) && o->monoid_w[MO_MAX] && o->monoid_w[MO_SUM];
	if (!sm || o->max_rank < 1 || o->max_defs < 2)
		w[GO_SOFTMAX] = 0;
	if (!sm || o->max_rank < 2 || o->max_defs < 4 || o->max_inputs < 3)
		w[GO_ATTENTION] = 0;
	if (!o->monoid_w[MO_LOGSUMEXP] || o->max_rank < 1)
		w[GO_LSE] = 0;
	if (!arith || !o->monoid_w[MO_SUM] || o->max_rank < 1 || o->max_defs < 2)
		w[GO_WELFORD] = 0;
	w[GO_NONE] = 0;
}

int go_case(const GenOpts *o, uint64_t seed, uint64_t case_no)
{
	Rng r = {fz_seed(seed, case_no, FZ_STREAM_GRAPH) ^ 0x0a11e0a55ull, 0};
	if (!rng_chance(&r, o->p_online))
		return GO_NONE;
	unsigned w[GO__COUNT];
	shape_weights(o, w);
	int k = rng_pick(&r, w, GO__COUNT);
	return k < 0 ? GO_NONE : k;
}

/* ------------------------------------------------------------ variables and text */

typedef struct {
	const char *name;
	GExt ext;
} Dim;

enum { MAXROWS = 3 };

/* G->v: the left-hand variables d[0..n) and, when red is not NULL, the reduction variable
 * red over [lo, hi] of extent e. */
static void set_vars(Gen *G, const Dim *d, int n, const char *red, GExt e, int64_t lo,
		     int64_t hi)
{
	G->nv = 0;
	for (int k = 0; k < n; k++) {
		GVar *v = &G->v[G->nv++];
		memset(v, 0, sizeof *v);
		snprintf(v->name, sizeof v->name, "%s", d[k].name);
		v->lo = 0, v->hi = d[k].ext.v - 1;
		v->ext = d[k].ext;
		v->lhs = true;
	}
	if (red) {
		GVar *v = &G->v[G->nv++];
		memset(v, 0, sizeof *v);
		snprintf(v->name, sizeof v->name, "%s", red);
		v->lo = lo, v->hi = hi;
		v->ext = e;
	}
}

/* Definition G->ndefs over the left-hand variables of G->v: "LHS = body". */
static int put_def(Gen *G, const char *body, int64_t work)
{
	int t = add_result(G, "", false, false, 0, 0);
	G->t[t].line = gs(G, "%s = %s", lhs_text(G, G->t[t].name), body);
	G->work += work;
	G->ndefs++;
	return t;
}

/* "t[ix]", counted as a read */
static char *rd(Gen *G, int t, const char *ix)
{
	G->t[t].uses++;
	return gs(G, "%s[%s]", G->t[t].name, ix);
}

/* "i, j" of the names of d[0..n) */
static char *names(Gen *G, const Dim *d, int n)
{
	char *s = "";
	for (int k = 0; k < n; k++)
		s = gs(G, "%s%s%s", s, k ? ", " : "", d[k].name);
	return s;
}

static int64_t prod(const Dim *d, int n)
{
	int64_t p = 1;
	for (int k = 0; k < n; k++)
		p *= d[k].ext.v;
	return p;
}

static const char *par(Gen *G, const char *s, bool atom)
{
	return atom ? s : gs(G, "(%s)", s);
}

static Dtype real_dtype(Gen *G)
{
	unsigned w[DT_I32];
	memcpy(w, G->o->in_dtype_w, sizeof w);
	int k = rng_pick(&G->r, w, DT_I32);
	return k < 0 ? DT_F32 : (Dtype)k;
}

/* An extent of at most cap (>= 1): now and then a large one (a size past max_extent when
 * the case has one, else a literal), so that splits and tiles meet long ranges. */
static GExt red_ext(Gen *G, int64_t cap)
{
	static const int64_t large[] = {17, 20, 24, 31, 33, 40, 64, 65, 100};
	if (rng_chance(&G->r, 0.3)) {
		int c[GMAXSIZES], n = 0;
		for (int k = 0; k < G->nsizes; k++)
			if (G->sizes[k].v > G->o->max_extent && G->sizes[k].v <= cap)
				c[n++] = k;
		if (n) {
			int k = c[rng_below(&G->r, n)];
			return (GExt){k, G->sizes[k].v};
		}
		int64_t v[ARRAY_LEN(large)];
		int m = 0;
		for (size_t k = 0; k < ARRAY_LEN(large); k++)
			if (large[k] <= cap && large[k] <= G->o->max_large)
				v[m++] = large[k];
		if (m)
			return ext_of_value(G, v[rng_below(&G->r, m)]);
	}
	GExt e = fresh_ext(G, cap < G->o->max_extent ? cap : G->o->max_extent);
	if (e.v > cap || (e.v < 2 && cap >= 2 && rng_chance(&G->r, 0.7)))
		e = ext_of_value(G, cap < 2 ? 1 : 2 + rng_below(&G->r, (cap < 9 ? cap : 9) - 1));
	return e;
}

/* ------------------------------------------------------------ ranges and terms */

typedef enum { RG_FULL, RG_CAUSAL, RG_BEFORE, RG_TAIL, RG_LIT, RG__COUNT } RangeKind;

typedef struct {
	char *text;       /* "r: 0..i+1" */
	int64_t lo, hi;   /* the values r takes (inclusive hull) */
} Range;

/* The range of r over extent e; causal kinds follow row i (its extent at most e). */
static Range range_of(Gen *G, RangeKind k, GExt e, const Dim *i)
{
	const char *et = ext_text(G, e);
	switch (k) {
	case RG_CAUSAL:
		return (Range){gs(G, "r: 0..%s+1", i->name), 0, i->ext.v - 1};
	case RG_BEFORE:
		return (Range){gs(G, "r: 0..%s", i->name), 0, i->ext.v - 2};
	case RG_TAIL:
		return (Range){gs(G, "r: %s..%s", i->name, et), 0, e.v - 1};
	case RG_LIT: {
		int64_t lo = 1 + rng_below(&G->r, e.v - 1);
		return (Range){gs(G, "r: %lld..%s", (long long)lo, et), lo, e.v - 1};
	}
	default:
		return (Range){gs(G, "r:%s", et), 0, e.v - 1};
	}
}

/* A range kind: causal ones only where row i exists (extent <= e). */
static RangeKind pick_range(Gen *G, GExt e, const Dim *i, bool causal)
{
	if (causal && i)
		return rng_chance(&G->r, 0.8) ? RG_CAUSAL : RG_BEFORE;
	unsigned w[RG__COUNT] = {[RG_FULL] = 60, [RG_TAIL] = 15, [RG_LIT] = 15};
	if (!i || i->ext.v > e.v)
		w[RG_TAIL] = 0;
	if (e.v < 2)
		w[RG_LIT] = 0;
	int k = rng_pick(&G->r, w, RG__COUNT);
	return k < 0 ? RG_FULL : (RangeKind)k;
}

/* The members' term x over G->v: a view of a new input (most often) or a random real
 * expression; never one that holds exp (online.c takes exp of x - m) or an integer. */
static Ex term(Gen *G)
{
	Ex e = {0};
	bool saved = G->tie;
	G->tie = false;
	if (rng_chance(&G->r, 0.65))
		e = gx_view(G, real_dtype(G));
	if (!e.s || e.expy || e.ty != TY_REAL)
		e = gx_real(G, 1 + (int)rng_below(&G->r, 2));
	if (!e.s || e.expy)
		e = gx_view(G, DT_F32);
	if (!e.s || e.expy)
		e = (Ex){"0.5", TY_REAL, true, true, false, 0, 0, 0, 0};
	if (e.ty != TY_REAL)
		e = (Ex){gs(G, "f32(%s)", e.s), TY_REAL, true, e.exact, false, 0, 0, e.nodes + 1, 0};
	G->tie = saved;
	return e;
}

/* A positive constant c of exp((x - m) * c) (online.c `positive`): literals, exp and rsqrt
 * of literals. */
static const char *scale(Gen *G)
{
	static const char *const c[] = {"0.5", "2.0", "0.125", "0.7", "1.5", "0.25", "3",
					"rsqrt(8.0)", "exp(-1.0)"};
	int n = (int)ARRAY_LEN(c);
	if (!has_op(G->o, OP_RSQRT) || !has_op(G->o, OP_EXP))
		n -= 2;
	return c[rng_below(&G->r, n)];
}

/* The softmax term [cond ? ] exp((x - m[rows]) [* c]) [: 0] of x (text xs, atom xa). */
static char *sm_term(Gen *G, const char *xs, bool xa, const char *mread, const char *c,
		     const char *cond)
{
	char *d = gs(G, "%s - %s", xs, mread);
	(void)xa;
	char *e = c ? gs(G, "exp((%s) * %s)", d, c) : gs(G, "exp(%s)", d);
	return cond ? gs(G, "%s ? %s : 0", cond, e) : e;
}

/* A condition of the softmax term over r and row i (no member in it). */
static const char *cond_of(Gen *G, const Dim *i)
{
	if (!has_op(G->o, OP_SELECT) || !rng_chance(&G->r, 0.25))
		return NULL;
	if (i && rng_chance(&G->r, 0.7))
		return gs(G, "r %s %s", rng_chance(&G->r, 0.7) ? "<=" : ">=", i->name);
	return "r != 0";
}

/* ------------------------------------------------------------ the shapes */

/* Up to two rows (the first is i, the one causal ranges follow), their elements times e
 * within max_elems; *causal: i has e's extent. */
static int pick_rows(Gen *G, Dim *rows, GExt e, bool causal)
{
	static const char *const nm[] = {"i", "j"};
	int64_t cap = G->o->max_elems / e.v;
	int n = 0, want = (int)rng_below(&G->r, 3);
	if (causal)
		want = want ? want : 1;
	if (want > G->o->max_rank - 1)
		want = G->o->max_rank - 1;
	for (int k = 0; k < want; k++) {
		GExt x = causal && k == 0 ? e : fresh_ext(G, G->o->max_extent);
		if (x.v > cap)
			break;
		rows[n].name = nm[n];
		rows[n].ext = x;
		cap /= x.v;
		n++;
	}
	return n;
}

/* softmax: m, [p], l, [y]; logsumexp: z */
static void gen_softmax(Gen *G, bool lse)
{
	Rng *r = &G->r;
	bool causal = rng_chance(r, 0.3) && G->o->max_elems >= 4;
	int64_t cap = G->o->max_elems;
	if (causal) {
		cap = 1;
		while ((cap + 1) * (cap + 1) <= G->o->max_elems)
			cap++;
	}
	GExt e = red_ext(G, cap);
	Dim rows[MAXROWS];
	int nr = pick_rows(G, rows, e, causal && e.v >= 2);
	causal = causal && nr > 0 && rows[0].ext.v == e.v;
	const Dim *i = nr ? &rows[0] : NULL;
	Range rg = range_of(G, pick_range(G, e, i, causal), e, i);
	char *rows_ix = names(G, rows, nr);
	set_vars(G, rows, nr, "r", e, 0, e.v - 1);
	Ex x = term(G);
	int64_t work = prod(rows, nr) * e.v * (x.nodes + 4);
	if (lse) {
		const char *xs = x.s;
		if (rng_chance(r, 0.5))   /* terms past exp's range: only the shift keeps it finite */
			xs = gs(G, "%s * %s", par(G, x.s, x.atom),
				rng_chance(r, 0.5) ? "100.0" : rng_chance(r, 0.5) ? "1e3" : "64.0");
		set_vars(G, rows, nr, "r", e, rg.lo, rg.hi);
		put_def(G, gs(G, "logsumexp(%s) %s", rg.text, xs), work);
		return;
	}
	set_vars(G, rows, nr, "r", e, rg.lo, rg.hi);
	int m = put_def(G, gs(G, "max(%s) %s", rg.text, x.s), work);
	const char *c = rng_chance(r, 0.3) ? scale(G) : NULL;
	const char *cond = cond_of(G, i);
	char *mread = rd(G, m, rows_ix);
	char *t = sm_term(G, par(G, x.s, x.atom), x.atom, mread, c, cond);
	bool atom = !cond;
	if (rng_chance(r, 0.6) && G->ndefs + 2 <= G->o->max_defs) {
		Dim pr[MAXROWS + 1];
		memcpy(pr, rows, (size_t)nr * sizeof *pr);
		pr[nr] = (Dim){"r", e};
		set_vars(G, pr, nr + 1, NULL, e, 0, 0);
		int p = put_def(G, t, work);
		t = rd(G, p, nr ? gs(G, "%s, r", rows_ix) : "r");
		atom = true;
	}
	set_vars(G, rows, nr, "r", e, rg.lo, rg.hi);
	int l = put_def(G, gs(G, "sum(%s) %s", rg.text, t), work);
	if (G->ndefs < G->o->max_defs && rng_chance(r, 0.4)) {
		Dim yr[MAXROWS + 1];
		memcpy(yr, rows, (size_t)nr * sizeof *yr);
		yr[nr] = (Dim){"r", e};
		set_vars(G, yr, nr + 1, NULL, e, 0, 0);
		put_def(G, gs(G, "%s / %s", par(G, t, atom), rd(G, l, rows_ix)), work);
	}
}

/* welford: mu, var, [y] */
static void gen_welford(Gen *G)
{
	GExt e = red_ext(G, G->o->max_elems);
	Dim rows[MAXROWS];
	int nr = pick_rows(G, rows, e, false);
	char *rows_ix = names(G, rows, nr);
	set_vars(G, rows, nr, "r", e, 0, e.v - 1);
	Ex x = term(G);
	const char *et = ext_text(G, e), *xs = par(G, x.s, x.atom);
	int64_t work = prod(rows, nr) * e.v * (x.nodes + 6);
	int mu = put_def(G, gs(G, "sum(r:%s) %s / %s", et, xs, et), work);
	char *d = gs(G, "(%s - %s)", xs, rd(G, mu, rows_ix));
	G->t[mu].uses++;
	int var = put_def(G, gs(G, "sum(r:%s) %s * %s / %s", et, d, d, et), work);
	if (G->ndefs < G->o->max_defs && rng_chance(&G->r, 0.4)) {
		Dim yr[MAXROWS + 1];
		memcpy(yr, rows, (size_t)nr * sizeof *yr);
		yr[nr] = (Dim){"r", e};
		set_vars(G, yr, nr + 1, NULL, e, 0, 0);
		char *v = rd(G, var, rows_ix);
		char *n = has_op(G->o, OP_RSQRT) ? gs(G, "rsqrt(%s + 1e-5)", v)
			: gs(G, "(1.0 / (%s + 1e-5))", v);
		put_def(G, gs(G, "(%s - %s) * %s", xs, rd(G, mu, rows_ix), n), work);
	}
}

/* attention: s, m, [p], l, o */
static void gen_attention(Gen *G)
{
	Rng *r = &G->r;
	const GenOpts *o = G->o;
	bool hasq = !rng_chance(r, 0.2);              /* else a decode step: one query */
	bool hash = o->max_rank >= 3 && (!hasq || rng_chance(r, 0.6));
	bool causal = hasq && rng_chance(r, 0.45);
	int64_t T = causal ? 2 + rng_below(r, 11) : red_ext(G, 40).v;
	int64_t Tq = causal ? T : hasq ? 1 + rng_below(r, 8) : 1;
	int64_t Hk = hash ? 1 + rng_below(r, 2) : 1, Gq = hash ? 1 + rng_below(r, 4) : 1;
	int64_t D = 1 + rng_below(r, 8), Dv = 1 + rng_below(r, 5);
	int64_t cap = o->max_elems;
	for (;;) {
		int64_t H = Hk * Gq;
		if (H * Tq * T <= cap && H * Tq * D <= cap && Hk * T * D <= cap && Hk * T * Dv <= cap &&
		    H * Tq * Dv <= cap)
			break;
		if (D > 1)
			D--;
		else if (Dv > 1)
			Dv--;
		else if (Gq > 1)
			Gq--;
		else if (Hk > 1)
			Hk--;
		else if (Tq > 1 && !causal)
			Tq--;
		else if (T > 2)
			T--, Tq = causal ? T : Tq;
		else
			break;
	}
	hash = hash && Hk * Gq > 1;
	GExt eT = ext_of_value(G, T), eD = ext_of_value(G, D), eDv = ext_of_value(G, Dv);
	GExt eH = ext_of_value(G, Hk * Gq), eHk = ext_of_value(G, Hk), eTq = causal ? eT : ext_of_value(G, Tq);
	Dim rows[MAXROWS];
	int nr = 0;
	if (hash)
		rows[nr++] = (Dim){"h", eH};
	if (hasq)
		rows[nr++] = (Dim){"i", eTq};
	const Dim *i = hasq ? &rows[nr - 1] : NULL;
	char *rows_ix = names(G, rows, nr);
	const char *hk = !hash ? NULL : Gq == 1 ? "h" : gs(G, "h / %s", ext_text(G, ext_of_value(G, Gq)));
	bool tr_q = hash && hasq && rng_chance(r, 0.4), tr_kv = hash && rng_chance(r, 0.4);
	/* inputs: q[h, i, d] (or [i, h, d]), k[hk, t, d] (or [t, hk, d]), v likewise */
	GExt qd[3], kd[3], vd[3];
	int nq = 0, nk = 0;
	if (tr_q) {
		qd[nq++] = eTq, qd[nq++] = eH;
	} else {
		if (hash)
			qd[nq++] = eH;
		if (hasq)
			qd[nq++] = eTq;
	}
	qd[nq++] = eD;
	if (hash && !tr_kv)
		kd[nk++] = eHk;
	kd[nk++] = eT;
	if (hash && tr_kv)
		kd[nk++] = eHk;
	memcpy(vd, kd, sizeof kd);
	kd[nk] = eD, vd[nk] = eDv;
	int q = new_input(G, real_dtype(G), nq, qd), k = new_input(G, real_dtype(G), nk + 1, kd);
	int v = new_input(G, real_dtype(G), nk + 1, vd);
	if (q < 0 || k < 0 || v < 0) {
		gen_softmax(G, false);
		return;
	}
	/* s[rows, t:T] = sum(d:D) q * k [* scale], a key or query read shifted and padded
	 * now and then */
	char *qix = tr_q ? "i, h, d" : nr ? gs(G, "%s, d", rows_ix) : "d";
	bool kpad = rng_chance(r, 0.15), vpad = rng_chance(r, 0.15);
	const char *kt = kpad ? "t - 1" : "t";
	char *kix = !hash ? gs(G, "%s, d", kt) : tr_kv ? gs(G, "%s, %s, d", kt, hk) : gs(G, "%s, %s, d", hk, kt);
	char *qs = rd(G, q, qix), *ks = rd(G, k, kix);
	if (kpad)
		ks = gs(G, "(%s ?? 0.0)", ks);
	static const char *const ssc[] = {"0.25", "0.125", "0.5", "0.3535533905932738", "2.0"};
	char *body = gs(G, "sum(d:%s) %s * %s", ext_text(G, eD), qs, ks);
	if (rng_chance(r, 0.7))
		body = gs(G, "%s * %s", body, ssc[rng_below(r, ARRAY_LEN(ssc))]);
	Dim sr[MAXROWS + 1];
	memcpy(sr, rows, (size_t)nr * sizeof *sr);
	sr[nr] = (Dim){"t", eT};
	set_vars(G, sr, nr + 1, "d", eD, 0, D - 1);
	int64_t work = Hk * Gq * Tq * T * (D + Dv + 8);
	int s = put_def(G, body, work);
	/* m, [p], l, o over one range */
	Range rg = range_of(G, pick_range(G, eT, i, causal), eT, i);
	set_vars(G, rows, nr, "r", eT, rg.lo, rg.hi);
	char *sread = rd(G, s, nr ? gs(G, "%s, r", rows_ix) : "r");
	G->t[s].uses += 2;
	int m = put_def(G, gs(G, "max(%s) %s", rg.text, sread), work);
	const char *c = rng_chance(r, 0.3) ? scale(G) : NULL;
	const char *cond = cond_of(G, i);
	char *t = sm_term(G, sread, true, rd(G, m, rows_ix), c, cond);
	bool atom = !cond;
	if (rng_chance(r, 0.6) && G->ndefs + 3 <= o->max_defs) {
		Dim pr[MAXROWS + 1];
		memcpy(pr, rows, (size_t)nr * sizeof *pr);
		pr[nr] = (Dim){"r", eT};
		set_vars(G, pr, nr + 1, NULL, eT, 0, 0);
		int p = put_def(G, t, work);
		t = rd(G, p, nr ? gs(G, "%s, r", rows_ix) : "r");
		G->t[p].uses++;
		atom = true;
	}
	set_vars(G, rows, nr, "r", eT, rg.lo, rg.hi);
	int l = put_def(G, gs(G, "sum(%s) %s", rg.text, t), work);
	const char *vt = vpad ? "r + 1" : "r";
	char *vix = !hash ? gs(G, "%s, c", vt) : tr_kv ? gs(G, "%s, %s, c", vt, hk) : gs(G, "%s, %s, c", hk, vt);
	char *vs = rd(G, v, vix);
	if (vpad)
		vs = gs(G, "(%s ?? 0.0)", vs);
	const char *pt = par(G, t, atom);
	char *num = rng_chance(r, 0.7) ? gs(G, "%s * %s", pt, vs) : gs(G, "%s * %s", vs, pt);
	Dim orow[MAXROWS + 1];
	memcpy(orow, rows, (size_t)nr * sizeof *orow);
	if (nr == 2 && rng_chance(r, 0.4)) {   /* o[i, h, c], as attention.tg */
		orow[0] = rows[1];
		orow[1] = rows[0];
	}
	orow[nr] = (Dim){"c", eDv};
	set_vars(G, orow, nr + 1, "r", eT, rg.lo, rg.hi);
	put_def(G, gs(G, "sum(%s) %s / %s", rg.text, num, rd(G, l, rows_ix)), work);
}

void go_gen(Gen *G, int shape)
{
	switch (shape) {
	case GO_SOFTMAX: gen_softmax(G, false); break;
	case GO_LSE: gen_softmax(G, true); break;
	case GO_WELFORD: gen_welford(G); break;
	case GO_ATTENTION: gen_attention(G); break;
	default: break;
	}
	G->nv = 0;
}

/* ------------------------------------------------------------ the schedule */

/* The online sets of g that on_match accepts, greedily: attention triples, then pairs
 * (softmax, welford), then logsumexps alone; each definition in one set at most. */
typedef struct {
	const Graph *g;
	bool used[GMAXT];
	int set[GMAXT][3], n[GMAXT];
	OnPlan plan[GMAXT];
	int ns;
} Sets;

static bool one_red(const Graph *g, int d, Monoid m)
{
	return d < GMAXT && g->defs[d].monoid == m && g->defs[d].nred == 1;
}

static void try_set(Sets *S, const int *d, int n)
{
	char why[8];
	for (int k = 0; k < n; k++)
		if (S->used[d[k]])
			return;
	if (S->ns == GMAXT || on_match(S->g, d, n, &S->plan[S->ns], why, sizeof why))
		return;
	for (int k = 0; k < n; k++) {
		S->set[S->ns][k] = d[k];
		S->used[d[k]] = true;
	}
	S->n[S->ns++] = n;
}

static void find_sets(const Graph *g, Sets *S)
{
	memset(S, 0, sizeof *S);
	S->g = g;
	int nd = g->ndefs < GMAXT ? g->ndefs : GMAXT;
	for (int a = 0; a < nd; a++)
		for (int b = a + 1; one_red(g, a, MO_MAX) && b < nd; b++)
			for (int c = b + 1; one_red(g, b, MO_SUM) && c < nd; c++)
				if (one_red(g, c, MO_SUM))
					try_set(S, (int[]){a, b, c}, 3);
	for (int a = 0; a < nd; a++)
		for (int b = a + 1; (one_red(g, a, MO_MAX) || one_red(g, a, MO_SUM)) && b < nd; b++)
			if (one_red(g, b, MO_SUM))
				try_set(S, (int[]){a, b}, 2);
	for (int a = 0; a < nd; a++)
		if (one_red(g, a, MO_LOGSUMEXP))
			try_set(S, (int[]){a}, 1);
}

bool go_schedule(const Graph *g, Schedule *s, Rng *r)
{
	static const int64_t splits[] = {2, 3, 4, 5, 8};
	static const int64_t tiles[] = {2, 3, 4, 5, 16};
	Sets *F = malloc(sizeof *F);
	IR_ASSERT(F);
	find_sets(g, F);
	int (*set)[3] = F->set, *n = F->n;
	bool changed = false;
	for (int k = 0; k < F->ns; k++) {
		if (!rng_chance(r, 0.9))
			continue;
		/* welford's merge is Chan's rule: split 3 times in 4 */
		double ps = F->plan[k].rule == ON_WELFORD ? 0.75 : 0.6;
		int64_t S = rng_chance(r, ps) ? splits[rng_below(r, ARRAY_LEN(splits))] : 0;
		for (int j = 0; j < n[k]; j++) {
			DefSched *x = &s->defs[set[k][j]];
			x->online = set[k][0] + 1;
			x->orule = (int8_t)F->plan[k].rule;
			x->order = ORDER_LINEAR;
			x->split[0] = S;
		}
		/* the last member (l, o, var, z) is the set's value: now and then tiled, stored
		 * or accumulated in 16 bits (or f64) */
		int last = set[k][n[k] - 1];
		const Def *D = &g->defs[last];
		DefSched *x = &s->defs[last];
		if (D->nlhs && rng_chance(r, 0.35)) {
			int dim = (int)rng_below(r, D->nlhs);
			x->tile[dim] = tiles[rng_below(r, ARRAY_LEN(tiles))];
		}
		if (rng_chance(r, 0.2))
			x->store = rng_chance(r, 0.5) ? DT_F16 : DT_BF16;
		bool real = ir_node(g, D->body)->ty == TY_REAL;   /* else accum does not apply */
		if (real && rng_chance(r, 0.15))
			x->accum = rng_chance(r, 0.5) ? DT_F16 : DT_BF16;
		else if (real && rng_chance(r, 0.1))
			x->accum = DT_F64;
		changed = true;
	}
	free(F);
	return changed;
}
