/* fuzz/gen.c: random graphs valid by construction (fuzz.h, "generator").
 *
 * A case is drawn as .tg text and then parsed and checked by ir_parse, so every generated
 * graph also exercises the parser. The text is built definition by definition: each picks a
 * monoid, a shape (often the dimensions of a definition nobody reads yet, some of them
 * reduced: chains, diamonds and contractions follow), its reduction ranges (full,
 * triangular, tails, literal starts, sliding windows), and a body from gen_expr.c, which
 * reads earlier tensors or creates inputs shaped for the view it wants. Definitions that
 * nothing reads become outputs, so every definition is used. Some shapes are drawn on
 * purpose (docs/fuzz.md "What the generator draws on purpose"): large sizes (p_large),
 * tied terms (gx_tie), and on the schedule partial tiles (bias_tiles), inlines into 16-bit
 * accumulations (bias_inline_fmt) and inlines of definitions read through a reachable
 * padding (bias_inline). A share of the cases (p_spec) is fully specified (spec_opts): only
 * operations every local backend promises bit for bit, so that each output is held to the
 * emulation.
 *
 * Invariants: the random bits come from a counter-based generator keyed by (seed, case
 * number, stream): the text is a function of (options, seed, case number) only. Every value
 * the oracle must rank or compare is exact unless o->risky_ties; every integer stays within
 * 32 bits (an integer reduction that could overflow is computed on f64 casts instead); a
 * topk range is never shorter than K; an integer max/min never runs over an empty range.
 * Work: the estimated element operations of an exact evaluation stay near o->max_work.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "gen.h"

/* ------------------------------------------------------------ random bits */

static uint64_t mix64(uint64_t z)
{
	z += 0x9e3779b97f4a7c15ull;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

uint64_t fz_seed(uint64_t seed, uint64_t case_no, unsigned stream)
{
	return mix64(mix64(seed) ^ mix64(case_no * FZ_STREAM__COUNT + stream + 0x243f6a8885a308d3ull));
}

uint64_t rng_next(Rng *r)
{
	return mix64(r->key + 0xd1342543de82ef95ull * ++r->ctr);
}

int64_t rng_below(Rng *r, int64_t n)
{
	return n <= 1 ? 0 : (int64_t)(rng_next(r) % (uint64_t)n);
}

bool rng_chance(Rng *r, double p)
{
	return (double)(rng_next(r) >> 11) * 0x1p-53 < p;
}

int rng_pick(Rng *r, const unsigned *w, int n)
{
	uint64_t sum = 0;
	for (int k = 0; k < n; k++)
		sum += w[k];
	if (sum == 0)
		return -1;
	uint64_t x = rng_next(r) % sum;
	for (int k = 0; k < n; k++) {
		if (x < w[k])
			return k;
		x -= w[k];
	}
	return n - 1;
}

/* ------------------------------------------------------------ strings */

char *gs(Gen *G, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	char *s = malloc((size_t)n + 1);
	IR_ASSERT(s);
	va_start(ap, fmt);
	vsnprintf(s, (size_t)n + 1, fmt, ap);
	va_end(ap);
	if (G->nstrs == G->capstrs) {
		G->capstrs = G->capstrs ? 2 * G->capstrs : 256;
		G->strs = realloc(G->strs, (size_t)G->capstrs * sizeof *G->strs);
		IR_ASSERT(G->strs);
	}
	G->strs[G->nstrs++] = s;
	return s;
}

bool tie_mode(const Gen *G)
{
	return G->tie && !G->o->risky_ties;
}

/* ------------------------------------------------------------ extents */

/* Extents: 1, primes, non-powers of two, a few powers of two; weights in the second row. */
static const int64_t extv[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 16, 17};
static const unsigned extw[] = {3, 4, 4, 2, 4, 3, 4, 1, 1, 1, 3, 1, 3, 1, 1};
_Static_assert(ARRAY_LEN(extv) == ARRAY_LEN(extw), "one weight per extent");

static int64_t ext_value(Gen *G, int64_t maxv)
{
	unsigned w[ARRAY_LEN(extv)];
	for (size_t k = 0; k < ARRAY_LEN(extv); k++)
		w[k] = extv[k] <= maxv ? extw[k] : 0;
	int k = rng_pick(&G->r, w, ARRAY_LEN(extv));
	return k < 0 ? 1 : extv[k];
}

const char *ext_text(Gen *G, GExt e)
{
	if (e.size < 0)
		return gs(G, "%lld", (long long)e.v);
	G->sizes[e.size].used = true;
	return G->sizes[e.size].name;
}

GExt ext_of_value(Gen *G, int64_t v)
{
	for (int k = 0; k < G->nsizes; k++)
		if (G->sizes[k].v == v && rng_chance(&G->r, 0.6))
			return (GExt){k, v};
	return (GExt){-1, v};
}

GExt fresh_ext(Gen *G, int64_t maxv)
{
	if (maxv < 1)
		maxv = 1;
	/* sizes may be large (make_sizes); literal extents stay within max_extent */
	int64_t sizemax = maxv >= G->o->max_extent && G->o->max_large > maxv ? G->o->max_large : maxv;
	if (rng_chance(&G->r, 0.65)) {
		int c[GMAXSIZES], n = 0;
		for (int k = 0; k < G->nsizes; k++)
			if (G->sizes[k].v <= sizemax)
				c[n++] = k;
		if (n) {
			int k = c[rng_below(&G->r, n)];
			return (GExt){k, G->sizes[k].v};
		}
	}
	return (GExt){-1, ext_value(G, maxv)};
}

/* Large sizes (p_large): past max_extent, so that tiles of 16, 32 and 64 are partial (65,
 * 70, 80, 97, 100 for 64; 33, 40, 47 for 32; 17 .. 31 for 16), and powers of two beside
 * them. Tensors stay within max_elems (pick_shape), so a large size comes with small
 * others. */
static const int64_t largev[] = {17, 20, 23, 24, 31, 32, 33, 40, 47, 63, 64, 65, 70, 80, 97, 100};

static int64_t large_value(Gen *G)
{
	int c[ARRAY_LEN(largev)], n = 0;
	for (size_t k = 0; k < ARRAY_LEN(largev); k++)
		if (largev[k] > G->o->max_extent && largev[k] <= G->o->max_large)
			c[n++] = (int)k;
	return n ? largev[c[rng_below(&G->r, n)]] : ext_value(G, G->o->max_extent);
}

static void make_sizes(Gen *G)
{
	static const char *const names[GMAXSIZES] = {"N", "M", "K", "P", "Q", "S"};
	G->nsizes = 1 + (int)rng_below(&G->r, 4);
	for (int k = 0; k < G->nsizes; k++) {
		snprintf(G->sizes[k].name, sizeof G->sizes[k].name, "%s", names[k]);
		G->sizes[k].v = G->o->max_large > G->o->max_extent && rng_chance(&G->r, G->o->p_large)
			? large_value(G) : ext_value(G, G->o->max_extent);
	}
}

/* ------------------------------------------------------------ tensors */

int new_input(Gen *G, Dtype dt, int rank, const GExt *dims)
{
	if (G->nt >= GMAXT || G->ninputs >= G->o->max_inputs)
		return -1;
	GTensor *T = &G->t[G->nt];
	memset(T, 0, sizeof *T);
	snprintf(T->name, sizeof T->name, "x%d", G->ninputs++);
	T->input = true;
	T->dt = dt;
	T->rank = rank;
	memcpy(T->dims, dims, (size_t)rank * sizeof *dims);
	T->isint = dt == DT_I32;
	T->exact = true;
	T->lo = -8, T->hi = 8;   /* i32 value tables (mp_make_inputs) */
	T->def = -1;
	T->mate = -1;
	return G->nt++;
}

static int64_t elems(const GExt *d, int n)
{
	int64_t p = 1;
	for (int k = 0; k < n; k++)
		p *= d[k].v;
	return p;
}

/* ------------------------------------------------------------ definitions */

typedef struct {
	GExt lhs[FZ_MAXRANK];
	int nl;
	GExt red[FZ_MAXRED];
	int nr;
} Shape;

static bool unread_def(const Gen *G, const GTensor *T)
{
	return !T->input && T->uses == 0 && (T->mate < 0 || G->t[T->mate].uses == 0);
}

/* A tensor whose dimensions the new definition takes: most often a definition nobody reads
 * yet (its dimensions then match for plain reads and contractions), or -1. */
static int pick_template(Gen *G)
{
	int front[GMAXT], any[GMAXT], nf = 0, na = 0;
	for (int t = 0; t < G->nt; t++) {
		if (G->t[t].ixtab)
			continue;
		if (unread_def(G, &G->t[t]))
			front[nf++] = t;
		any[na++] = t;
	}
	if (nf && rng_chance(&G->r, 0.6))
		return front[rng_below(&G->r, nf)];
	if (na && rng_chance(&G->r, 0.6))
		return any[rng_below(&G->r, na)];
	return -1;
}

static void remove_at(GExt *a, int *n, int k)
{
	memmove(&a[k], &a[k + 1], (size_t)(*n - k - 1) * sizeof *a);
	(*n)--;
}

/* Left-hand and reduced extents; topk's K is added later. Fits max_elems and the work left. */
static void pick_shape(Gen *G, Monoid m, int depth, Shape *S)
{
	const GenOpts *o = G->o;
	Rng *r = &G->r;
	int maxl = o->max_rank - (m == MO_TOPK);
	int nred = m == MO_NONE ? 0 : m >= MO_ARGMAX ? 1 : 1 + (int)rng_below(r, o->max_red);
	GExt pool[FZ_MAXRANK + FZ_MAXRED];
	int np = 0, t = pick_template(G);
	if (t >= 0) {
		np = G->t[t].rank;
		memcpy(pool, G->t[t].dims, (size_t)np * sizeof *pool);
		for (int k = np - 1; k > 0 && rng_chance(r, 0.3); k--) {
			int j = (int)rng_below(r, k + 1);
			GExt x = pool[k];
			pool[k] = pool[j], pool[j] = x;
		}
	} else {
		np = (int)rng_below(r, maxl + 1) + nred;
		for (int k = 0; k < np; k++)
			pool[k] = fresh_ext(G, o->max_extent);
	}
	S->nr = 0;
	for (int k = 0; k < nred; k++) {
		if (np && rng_chance(r, 0.85)) {
			int j = (int)rng_below(r, np);
			S->red[S->nr++] = pool[j];
			remove_at(pool, &np, j);
		} else {
			S->red[S->nr++] = fresh_ext(G, o->max_extent);
		}
	}
	S->nl = 0;
	for (int k = 0; k < np && S->nl < FZ_MAXRANK; k++)
		if (!rng_chance(r, 0.1))
			S->lhs[S->nl++] = pool[k];
	if (S->nl < maxl && rng_chance(r, 0.2)) {
		int at = (int)rng_below(r, S->nl + 1);
		memmove(&S->lhs[at + 1], &S->lhs[at], (size_t)(S->nl - at) * sizeof *S->lhs);
		S->lhs[at] = fresh_ext(G, o->max_extent);
		S->nl++;
	}
	int64_t left = o->max_work - G->work;
	if (left < o->max_work / 8)
		left = o->max_work / 8;
	while (S->nl > 0 && (S->nl > maxl || elems(S->lhs, S->nl) > o->max_elems ||
			     elems(S->lhs, S->nl) * elems(S->red, S->nr) * (4 + 2 * depth) > left))
		remove_at(S->lhs, &S->nl, (int)rng_below(r, S->nl));
	for (int k = 0; k < S->nr && elems(S->red, S->nr) * (4 + 2 * depth) > left; k++)
		if (S->red[k].v > 3)
			S->red[k] = (GExt){-1, 2 + rng_below(r, 2)};
}

/* A reduction range over extent e for reduction index k: its text and length bounds. The
 * new variable G->v[G->nv] is set (the caller counts it). */
static char *make_range(Gen *G, int k, GExt e, bool nonempty, int64_t *minlen, int64_t *maxlen)
{
	static const char *const names[FZ_MAXRED] = {"r", "s", "u"};
	GVar *v = &G->v[G->nv];
	memset(v, 0, sizeof *v);
	snprintf(v->name, sizeof v->name, "%s", names[k]);
	v->ext = e;
	int c[GMAXVARS], nc = 0;
	for (int j = 0; j < G->nv; j++)
		if (!G->v[j].isk && G->v[j].lo >= 0 && G->v[j].lo <= e.v - 1)
			c[nc++] = j;
	unsigned w[FZ_RANGE__COUNT];
	memcpy(w, G->o->range_w, sizeof w);
	if (nc == 0)
		w[FZ_RANGE_TRI] = w[FZ_RANGE_TAIL] = w[FZ_RANGE_SLIDE] = 0;
	if (e.v < 2)
		w[FZ_RANGE_LIT] = 0;
	int kind = rng_pick(&G->r, w, FZ_RANGE__COUNT);
	const GVar *b = nc ? &G->v[c[rng_below(&G->r, nc)]] : NULL;
	if (kind == FZ_RANGE_TAIL && nonempty && b->hi > e.v - 1)
		kind = FZ_RANGE_FULL;
	const char *et = ext_text(G, e);
	switch (kind) {
	case FZ_RANGE_TRI:
		v->lo = 0, v->hi = b->hi;
		*minlen = b->lo + 1, *maxlen = b->hi + 1;
		return gs(G, "%s: 0..%s+1", v->name, b->name);
	case FZ_RANGE_TAIL:
		v->lo = b->lo, v->hi = e.v - 1;
		*minlen = b->hi > e.v ? 0 : e.v - b->hi, *maxlen = e.v - b->lo;
		return gs(G, "%s: %s..%s", v->name, b->name, et);
	case FZ_RANGE_LIT: {
		int64_t lo = 1 + rng_below(&G->r, e.v - 1);
		v->lo = lo, v->hi = e.v - 1;
		*minlen = *maxlen = e.v - lo;
		return gs(G, "%s: %lld..%s", v->name, (long long)lo, et);
	}
	case FZ_RANGE_SLIDE: {
		int64_t n = 1 + rng_below(&G->r, 3);
		v->lo = b->lo, v->hi = b->hi + n - 1;
		*minlen = *maxlen = n;
		return gs(G, "%s: %s..%s+%lld", v->name, b->name, b->name, (long long)n);
	}
	default:
		v->lo = 0, v->hi = e.v - 1;
		*minlen = *maxlen = e.v;
		return gs(G, "%s:%s", v->name, et);
	}
}

static void add_lhs_var(Gen *G, GExt e, bool isk)
{
	static const char *const names[FZ_MAXRANK] = {"i", "j", "k", "l", "m", "n"};
	int nl = 0;
	for (int k = 0; k < G->nv; k++)
		nl += G->v[k].lhs;
	GVar *v = &G->v[G->nv];
	memset(v, 0, sizeof *v);
	snprintf(v->name, sizeof v->name, "%s", names[nl]);
	v->lo = 0, v->hi = e.v - 1;
	v->ext = e;
	v->lhs = true;
	v->isk = isk;
	G->nv++;
}

/* |x|^n bounded by 2^30 (or 2^30 + 1 when larger). */
static int64_t ipow_cap(int64_t x, int64_t n)
{
	int64_t p = 1;
	for (int64_t k = 0; k < n && p <= (1 << 30); k++)
		p *= x < 0 ? -x : x;
	return p > (1 << 30) ? (1 << 30) + 1 : p;
}

/* The value range of an integer reduction; false when it may leave 32 bits (or, for max and
 * min, when the range may be empty: they have no integer value there). */
static bool int_reduce(Monoid m, Ex *b, int64_t minlen, int64_t maxlen)
{
	int64_t M = b->hi > -b->lo ? b->hi : -b->lo;
	switch (m) {
	case MO_SUM:
		if (M * maxlen > (1 << 30))
			return false;
		b->lo = b->lo < 0 ? b->lo * maxlen : 0;
		b->hi = b->hi > 0 ? b->hi * maxlen : 0;
		return true;
	case MO_PROD: {
		int64_t p = ipow_cap(M, maxlen);
		if (p > (1 << 30))
			return false;
		b->lo = -p, b->hi = p < 1 ? 1 : p;
		return true;
	}
	case MO_MAX:
	case MO_MIN:
		return minlen > 0;
	default:
		return true;
	}
}

/* Registers the result tensor(s) of definition G->ndefs with statement text line. */
int add_result(Gen *G, const char *suffix, bool isint, bool exact, int64_t lo, int64_t hi)
{
	IR_ASSERT(G->nt < GMAXT);
	GTensor *T = &G->t[G->nt];
	memset(T, 0, sizeof *T);
	snprintf(T->name, sizeof T->name, "d%d%s", G->ndefs, suffix);
	T->dt = isint ? DT_I32 : DT_F64;
	T->isint = isint;
	T->exact = exact;
	T->lo = lo, T->hi = hi;
	T->def = G->ndefs;
	T->mate = -1;
	T->rank = 0;
	for (int k = 0; k < G->nv; k++)
		if (G->v[k].lhs)
			T->dims[T->rank++] = G->v[k].ext;
	return G->nt++;
}

char *lhs_text(Gen *G, const char *name)
{
	char *s = gs(G, "%s[", name);
	for (int k = 0, n = 0; k < G->nv; k++)
		if (G->v[k].lhs)
			s = gs(G, "%s%s%s:%s", s, n++ ? ", " : "", G->v[k].name, ext_text(G, G->v[k].ext));
	return gs(G, "%s]", s);
}

static Monoid pick_monoid(Gen *G)
{
	unsigned w[MO__COUNT];
	memcpy(w, G->o->monoid_w, sizeof w);
	if (G->o->max_rank < 1)
		w[MO_TOPK] = 0;
	int m = rng_pick(&G->r, w, MO__COUNT);
	return m < 0 ? MO_NONE : (Monoid)m;
}

static void gen_def(Gen *G)
{
	const GenOpts *o = G->o;
	Monoid m = pick_monoid(G);
	int depth = 1 + (int)rng_below(&G->r, o->max_depth);
	Shape S;
	pick_shape(G, m, depth, &S);
	G->nv = 0;
	for (int k = 0; k < S.nl; k++)
		add_lhs_var(G, S.lhs[k], false);
	char *ranges = "";
	int64_t minlen = 1, maxlen = 1, lo, hi;
	for (int k = 0; k < S.nr; k++) {
		char *rt = make_range(G, k, S.red[k], m == MO_TOPK, &lo, &hi);
		ranges = gs(G, "%s%s%s", ranges, k ? ", " : "", rt);
		minlen *= lo, maxlen *= hi;
		G->nv++;
	}
	const GVar rv = G->v[S.nl];   /* the reduction index of selections */
	G->tie = m == MO_ARGMAX || m == MO_ARGMIN || m == MO_TOPK;
	bool tied = (G->tie || m == MO_MAX || m == MO_MIN) && rng_chance(&G->r, o->p_tie);
	Ex b = tied ? gx_tie(G, depth, m, S.nl)
		: rng_chance(&G->r, o->p_int_def) ? gx_int(G, depth) : gx_real(G, depth);
	G->tie = false;
	/* K's index comes last, after the body: the checker keeps it out of topk's terms */
	if (m == MO_TOPK)
		add_lhs_var(G, ext_of_value(G, 1 + rng_below(&G->r, minlen < 4 ? minlen : 4)), true);
	if (getenv("FZDBG")) fprintf(stderr, "def %d ty %d [%lld,%lld] len %lld..%lld m %d\n", G->ndefs, b.ty, (long long)b.lo, (long long)b.hi, (long long)minlen, (long long)maxlen, m);
	if (b.ty == TY_INT && !int_reduce(m, &b, minlen, maxlen)) {
		/* f32 holds the terms (within 2^24) and is promised where f64 is not */
		b.s = gs(G, G->spec ? "f32(%s)" : "f64(%s)", b.s);
		b.ty = TY_REAL;
	}
	bool isint = (b.ty == TY_INT && m != MO_LOGSUMEXP) || m == MO_ARGMAX || m == MO_ARGMIN;
	if (m == MO_ARGMAX || m == MO_ARGMIN)
		lo = minlen > 0 ? rv.lo : -1, hi = rv.hi;
	else
		lo = b.lo, hi = b.hi;
	int t = add_result(G, "", isint, m == MO_LOGSUMEXP ? false : isint || b.exact, lo, hi);
	G->t[t].expy = b.expy;
	char *line = lhs_text(G, G->t[t].name);
	if (m == MO_TOPK) {
		int u = add_result(G, "i", true, true, rv.lo, rv.hi);
		G->t[t].mate = u, G->t[u].mate = t;
		line = gs(G, "%s, %s", line, lhs_text(G, G->t[u].name));
	}
	if (m == MO_NONE)
		line = gs(G, "%s = %s", line, b.s);
	else
		line = gs(G, "%s = %s(%s) %s", line, monoid_name(m), ranges, b.s);
	G->t[t].line = line;
	G->work += elems(G->t[t].dims, G->t[t].rank) * maxlen * (b.nodes + 1);
	G->ndefs++;
	G->nv = 0;
}

/* ------------------------------------------------------------ the text */

static Dtype out_dtype(Gen *G, bool isint)
{
	unsigned w[DT_I32 + 1];
	memcpy(w, G->o->out_dtype_w, sizeof w);
	if (!isint)
		w[DT_I32] = 0;
	int k = rng_pick(&G->r, w, isint ? DT_I32 + 1 : DT_I32);
	return k < 0 ? (isint ? DT_I32 : DT_F32) : (Dtype)k;
}

/* Every definition nothing reads, plus a few others. */
static char *outputs_text(Gen *G)
{
	char *s = "";
	int n = 0;
	for (int t = 0; t < G->nt; t++) {
		const GTensor *T = &G->t[t];
		if (T->input || !T->line)
			continue;
		bool need = unread_def(G, T);
		if (!need && !rng_chance(&G->r, G->o->p_extra_output))
			continue;
		int which = T->mate < 0 ? 0 : (int)rng_below(&G->r, 5);  /* topk: 0-2 values */
		for (int r = 0; r < 2; r++) {
			if ((r == 0 && which > 3) || (r == 1 && (T->mate < 0 || which < 3)))
				continue;
			const GTensor *O = r ? &G->t[T->mate] : T;
			s = gs(G, "%s%s%s : %s", s, n++ ? ", " : "", O->name,
			       dt_name(out_dtype(G, O->isint)));
		}
	}
	return s;
}

static char *assemble(Gen *G, uint64_t case_no)
{
	char *defs = "", *inputs = "";
	for (int t = 0; t < G->nt; t++)
		if (G->t[t].line)
			defs = gs(G, "%s%s\n", defs, G->t[t].line);
	char *outs = outputs_text(G);
	for (int t = 0; t < G->nt; t++) {
		const GTensor *T = &G->t[t];
		if (!T->input)
			continue;
		char *s = gs(G, "input %s : %s[", T->name, dt_name(T->dt));
		for (int k = 0; k < T->rank; k++)
			s = gs(G, "%s%s%s", s, k ? ", " : "", ext_text(G, T->dims[k]));
		inputs = gs(G, "%s%s]\n", inputs, s);
	}
	char *sizes = "";
	for (int k = 0, n = 0; k < G->nsizes; k++)
		if (G->sizes[k].used)
			sizes = gs(G, "%s%s%s = %lld", sizes, n++ ? ", " : "size ", G->sizes[k].name,
				   (long long)G->sizes[k].v);
	char *s = gs(G, "graph fz%llu\n%s%s\n%s\n%s\noutput %s\n", (unsigned long long)case_no,
		     sizes, *sizes ? "\n" : "", inputs, defs, outs);
	return strdup(s);
}

/* ------------------------------------------------------------ the API */

void fz_gen_restrict(GenOpts *o, const VfCaps *c)
{
	for (int op = 0; op < OP__COUNT; op++)
		if (!(c->ops & BE_OP(op)))
			o->op_w[op] = 0;
	for (int m = MO_NONE + 1; m < MO__COUNT; m++)
		if (!(c->monoids & (1u << m)))
			o->monoid_w[m] = 0;
	for (int f = 0; f <= DT_I32; f++)
		if (!(c->formats & (1u << f)))
			o->in_dtype_w[f] = o->out_dtype_w[f] = 0;
}

void fz_gen_defaults(GenOpts *o)
{
	memset(o, 0, sizeof *o);
	o->max_rank = 4;
	o->max_extent = 13;
	o->max_defs = 6;
	o->max_inputs = 5;
	o->max_depth = 4;
	o->max_red = 2;
	o->max_elems = 512;
	o->max_work = 100000;
	o->max_large = 100;
	for (int op = 0; op < OP__COUNT; op++)
		o->op_w[op] = op_info((Op)op)->flags & OPF_CAST ? 5 : 10;
	o->op_w[OP_ADD] = o->op_w[OP_SUB] = o->op_w[OP_MUL] = 30;
	o->op_w[OP_DIV] = o->op_w[OP_SELECT] = 15;
	static const unsigned mw[MO__COUNT] = {
		[MO_NONE] = 40, [MO_SUM] = 20, [MO_PROD] = 6, [MO_MAX] = 10, [MO_MIN] = 8,
		[MO_LOGSUMEXP] = 8, [MO_ARGMAX] = 6, [MO_ARGMIN] = 5, [MO_TOPK] = 7,
	};
	static const unsigned iw[FZ_IX__COUNT] = {
		[FZ_IX_VAR] = 50, [FZ_IX_REVERSE] = 5, [FZ_IX_STRIDE] = 6, [FZ_IX_WINDOW] = 8,
		[FZ_IX_DIV] = 5, [FZ_IX_MOD] = 5, [FZ_IX_RESHAPE] = 8, [FZ_IX_FLAT] = 5,
		[FZ_IX_CONST] = 5, [FZ_IX_INDIRECT] = 7,
	};
	static const unsigned rw[FZ_RANGE__COUNT] = {
		[FZ_RANGE_FULL] = 60, [FZ_RANGE_TRI] = 15, [FZ_RANGE_TAIL] = 10, [FZ_RANGE_LIT] = 8,
		[FZ_RANGE_SLIDE] = 7,
	};
	static const unsigned in[DT_I32 + 1] = {2, 4, 3, 3, 1}, out[DT_I32 + 1] = {2, 4, 3, 3, 5};
	memcpy(o->monoid_w, mw, sizeof mw);
	memcpy(o->ix_w, iw, sizeof iw);
	memcpy(o->range_w, rw, sizeof rw);
	memcpy(o->in_dtype_w, in, sizeof in);
	memcpy(o->out_dtype_w, out, sizeof out);
	o->p_int_def = 0.15;
	o->p_oob = 0.12;
	o->p_pad = 0.03;
	o->p_extra_output = 0.3;
	o->p_schedule = 0.5;
	o->p_ident = 0.07;
	o->p_reread = 0.03;
	o->p_compose = 0.03;
	o->p_tie = 0.3;
	o->p_large = 0.2;
	o->p_tile = 0.7;
	o->p_inline_fmt = 0.5;
	o->p_spec = 0.3;
	o->p_online = 0.16;
}

/* The options as the generator uses them: clamped, and index kinds that need `/` or `%`
 * off when those ops are. */
static void settle_opts(GenOpts *o)
{
	o->max_rank = o->max_rank < 0 ? 0 : o->max_rank > FZ_MAXRANK ? FZ_MAXRANK : o->max_rank;
	o->max_red = o->max_red < 1 ? 1 : o->max_red > FZ_MAXRED ? FZ_MAXRED : o->max_red;
	o->max_defs = o->max_defs < 1 ? 1 : o->max_defs;
	o->max_extent = o->max_extent < 1 ? 1 : o->max_extent;
	o->max_depth = o->max_depth < 1 ? 1 : o->max_depth;
	o->max_elems = o->max_elems < 1 ? 1 : o->max_elems;
	if (o->max_defs * 2 + o->max_inputs > GMAXT)
		o->max_defs = (GMAXT - o->max_inputs) / 2;
	if (!o->op_w[OP_IDIV])
		o->ix_w[FZ_IX_DIV] = o->ix_w[FZ_IX_RESHAPE] = 0;
	if (!o->op_w[OP_MOD])
		o->ix_w[FZ_IX_MOD] = o->ix_w[FZ_IX_RESHAPE] = 0;
}

/* Whether case (seed, case_no) is fully specified (o->p_spec), and whether it may divide
 * and take square roots (c and opencl promise them correctly rounded; vulkan does not):
 * drawn from a stream of their own, so that gen_raw and the schedule agree. */
static int spec_case(const GenOpts *o, uint64_t seed, uint64_t case_no)
{
	if (go_case(o, seed, case_no) != GO_NONE)   /* a one-pass shape needs exp and / */
		return 0;
	Rng r = {fz_seed(seed, case_no, FZ_STREAM_GRAPH) ^ 0x5bec1f1edull, 0};
	if (!rng_chance(&r, o->p_spec))
		return 0;
	return rng_chance(&r, 0.5) ? 2 : 1;
}

/* Fully specified (docs/oracle.md "Fully specified"): the options without the functions
 * that have allowances (exp, log, tanh, pow, ... and logsumexp), without f64 formats
 * (vulkan promises no f64 arithmetic or conversion), without fma (contraction) and, unless
 * divsqrt, without / and sqrt; compositions and rule patterns more often. Every output of
 * such a graph is held to the emulation bit for bit on c, opencl and vulkan (but for
 * vulkan's subnormals), so a wrong rounding, combine order or rewrite shows although every
 * budget holds. */
static void spec_opts(GenOpts *o, bool divsqrt)
{
	for (int op = 0; op < OP__COUNT; op++) {
		unsigned f = op_info((Op)op)->flags;
		bool keep = (f & (OPF_BOOL_IN | OPF_BOOL_OUT | OPF_CMP | OPF_INT_ONLY)) != 0;
		switch (op) {
		case OP_NEG: case OP_ADD: case OP_SUB: case OP_MUL: case OP_SELECT: case OP_ABS:
		case OP_FLOOR: case OP_CEIL: case OP_MAX: case OP_MIN: case OP_CAST_F32:
		case OP_CAST_F16: case OP_CAST_BF16:
			keep = true;
			break;
		case OP_DIV: case OP_SQRT:
			keep = divsqrt;
			break;
		default:
			break;
		}
		if (!keep)
			o->op_w[op] = 0;
	}
	o->monoid_w[MO_LOGSUMEXP] = 0;
	unsigned in = 0, out = 0;
	for (int f = DT_F32; f < DT_I32; f++)
		in += o->in_dtype_w[f], out += o->out_dtype_w[f];
	if (in)
		o->in_dtype_w[DT_F64] = 0;
	if (out)
		o->out_dtype_w[DT_F64] = 0;
	o->p_compose = o->p_compose > 0.12 ? o->p_compose : 0.12;
	o->p_ident = o->p_ident > 0.1 ? o->p_ident : 0.1;
}

char *fz_gen_raw(const GenOpts *o, uint64_t seed, uint64_t case_no)
{
	Gen *G = calloc(1, sizeof *G);
	GenOpts *oc = malloc(sizeof *oc);
	IR_ASSERT(G && oc);
	*oc = *o;
	int spec = spec_case(o, seed, case_no);
	if (spec)
		spec_opts(oc, spec == 2);
	settle_opts(oc);
	G->o = oc;
	G->spec = spec != 0;
	G->r = (Rng){fz_seed(seed, case_no, FZ_STREAM_GRAPH), 0};
	make_sizes(G);
	int shape = go_case(o, seed, case_no);
	if (shape != GO_NONE) {
		/* the shape, and now and then an ordinary definition or two after it */
		go_gen(G, shape);
		int nd = rng_chance(&G->r, 0.3) ? 1 + (int)rng_below(&G->r, 2) : 0;
		for (int k = 0; k < nd && G->ndefs < oc->max_defs; k++)
			gen_def(G);
	} else {
		int nd = 1 + (int)rng_below(&G->r, oc->max_defs);
		for (int k = 0; k < nd; k++)
			gen_def(G);
	}
	char *text = assemble(G, case_no);
	IR_ASSERT(text);
	for (int k = 0; k < G->nstrs; k++)
		free(G->strs[k]);
	free(G->strs);
	free(oc);
	free(G);
	return text;
}

/* Whether some read of tensor t carries a padding (`t[...] ?? D`) with an index that is not
 * a bare variable (`t[i] ?? D` reads in range when i spans t's extent, as the generator
 * makes it; `t[i - 1]`, `t[(j - 5) / 4]` and the like reach the padding). */
static bool padded_read(const Graph *g, int t)
{
	for (uint32_t r = 1; r < g->nnodes; r++) {
		const Node *n = &g->nodes[r];
		if (n->kind != NK_READ || !n->u.read.pad || n->u.read.tensor != (uint32_t)t)
			continue;
		const Ref *ix = ir_read_idx(g, n);
		for (uint32_t i = 0; i < n->u.read.n; i++)
			if (ir_node(g, ix[i])->kind != NK_VAR)
				return true;
	}
	return false;
}

static bool is_output(const Graph *g, int t)
{
	for (int k = 0; k < g->noutputs; k++)
		if (g->outputs[k].tensor == t)
			return true;
	return false;
}

/* Directed: sched_sample inlines a plain definition 3 times in 10; one that is read with a
 * padding that may be reached (padded_read) is inlined here in 3 of 4 schedules (sampled
 * or default), its other directives dropped (they do not apply to an inlined definition).
 * A padded read of an inlined definition must not evaluate the producer out of range; that
 * interplay was the rarest of the seeded faults' (inline_pad: 28 s to kill on c alone,
 * surviving 80 s with every backend selected). True when s changed. */
static bool bias_inline(const Graph *g, Schedule *s, Rng *r)
{
	bool changed = false;
	for (int d = 0; d < g->ndefs; d++) {
		const Def *D = &g->defs[d];
		int t = D->out[0];
		if (D->monoid != MO_NONE || is_output(g, t) || !padded_read(g, t) || !rng_chance(r, 0.75))
			continue;
		changed |= !s->defs[d].inlined;
		s->defs[d].inlined = true;
	}
	return changed;
}

/* Whether expression e reads tensor t. */
static bool reads_tensor(const Graph *g, Ref e, int t)
{
	if (!e)
		return false;
	const Node *n = ir_node(g, e);
	if (n->kind == NK_READ) {
		if (n->u.read.tensor == (uint32_t)t || reads_tensor(g, n->u.read.pad, t))
			return true;
		for (uint32_t k = 0; k < n->u.read.n; k++)
			if (reads_tensor(g, ir_read_idx(g, n)[k], t))
				return true;
		return false;
	}
	if (n->kind != NK_OP)
		return false;
	for (int k = 0; k < op_info((Op)n->op)->arity; k++)
		if (reads_tensor(g, n->a[k], t))
			return true;
	return false;
}

/* Whether real expression e has an operation whose result its format rounds (+ - * / and
 * the functions; not a read, a literal, a cast, a select or a negation). */
static bool rounds(const Graph *g, Ref e)
{
	if (!e)
		return false;
	const Node *n = ir_node(g, e);
	if (n->kind != NK_OP)
		return false;
	unsigned f = op_info((Op)n->op)->flags;
	if (n->ty == TY_REAL && !(f & (OPF_CAST | OPF_CMP | OPF_BOOL_OUT)) && n->op != OP_SELECT &&
	    n->op != OP_NEG && n->op != OP_ABS && n->op != OP_MAX && n->op != OP_MIN &&
	    n->op != OP_FLOOR && n->op != OP_CEIL)
		return true;
	for (int k = 0; k < op_info((Op)n->op)->arity; k++)
		if (rounds(g, n->a[k]))
			return true;
	return false;
}

/* Directed, on sampled schedules (o->p_inline_fmt): a plain real definition A that a
 * definition B with a real body reads is inlined into B, and B accumulates in f16 or bf16
 * (a reduction) or stores there (a plain one, half as often). A's value is still computed
 * in its own format (graph-format.md 17a): computing it in the consumer's is the bug this
 * draws out. Without it an inline into a 16-bit accumulation came up once in 600 cases.
 * An A that computes (rounds) is preferred to one that only reads, casts or selects: its
 * format shows only where it rounds. */
static bool bias_inline_fmt(const Graph *g, Schedule *s, Rng *r, const GenOpts *o)
{
	bool changed = false;
	for (int b = 0; b < g->ndefs; b++) {
		const Def *B = &g->defs[b];
		bool red = B->monoid != MO_NONE;
		if (s->defs[b].inlined || ir_node(g, B->body)->ty != TY_REAL ||
		    (!red && (B->ty != TY_REAL || !rng_chance(r, 0.5))))
			continue;
		int c[64], n = 0, na = 0;
		for (int a = 0; a < b && n < 64; a++) {
			const Def *A = &g->defs[a];
			if (A->monoid != MO_NONE || A->ty != TY_REAL || is_output(g, A->out[0]) ||
			    !reads_tensor(g, B->body, A->out[0]))
				continue;
			/* one that computes (an operation that rounds in its format) first */
			if (rounds(g, A->body)) {
				c[n++] = c[na];
				c[na++] = a;
			} else {
				c[n++] = a;
			}
		}
		if (n == 0 || !rng_chance(r, o->p_inline_fmt))
			continue;
		if (na)
			n = na;
		s->defs[c[rng_below(r, n)]].inlined = true;
		Dtype f = rng_chance(r, 0.5) ? DT_F16 : DT_BF16;
		if (red)
			s->defs[b].accum = f;
		else
			s->defs[b].store = f;
		changed = true;
	}
	return changed;
}

/* A tile size from v[0..n) that is partial on extent e (smaller, not a divisor), or 0. */
static int64_t partial_tile(Rng *r, const int64_t *v, int n, int64_t e)
{
	int64_t c[16];
	int m = 0;
	for (int k = 0; k < n; k++)
		if (v[k] < e && e % v[k] != 0)
			c[m++] = v[k];
	return m ? c[rng_below(r, m)] : 0;
}

/* Directed, on sampled schedules (o->p_tile): a definition with a left-hand extent past 16
 * gets a tile of 16, 32 or 64 that is partial there, and half the time a partial tile on a
 * second dimension; one with two dimensions or more, now and then, partial tiles on two of
 * them. The sampler alone clamps its tiles of 16-64 to the (small) extents and tiles two
 * dimensions partially in 1.7% of cases. */
static bool bias_tiles(const Graph *g, Schedule *s, Rng *r, const GenOpts *o)
{
	static const int64_t big[] = {16, 32, 64}, small[] = {2, 3, 4, 5, 7, 8, 16};
	bool changed = false;
	for (int d = 0; d < g->ndefs; d++) {
		const Def *D = &g->defs[d];
		int nl = D->monoid == MO_TOPK ? D->nlhs - 1 : D->nlhs;
		if (s->defs[d].inlined || nl < 1)
			continue;
		int c[IR_MAXRANK], n = 0;
		for (int k = 0; k < nl; k++)
			if (partial_tile(r, big, ARRAY_LEN(big), D->lhs[k].ext.value))
				c[n++] = k;
		int first = -1;
		if (n && rng_chance(r, o->p_tile)) {
			first = c[rng_below(r, n)];
			s->defs[d].tile[first] = partial_tile(r, big, ARRAY_LEN(big), D->lhs[first].ext.value);
		} else if (nl >= 2 && rng_chance(r, o->p_tile / 4)) {
			first = (int)rng_below(r, nl);
			int64_t t = partial_tile(r, small, ARRAY_LEN(small), D->lhs[first].ext.value);
			if (!t) {
				first = -1;
				continue;
			}
			s->defs[d].tile[first] = t;
		}
		if (first < 0)
			continue;
		changed = true;
		if (nl < 2 || (n && !rng_chance(r, 0.5)))
			continue;
		int second = (first + 1 + (int)rng_below(r, nl - 1)) % nl;
		int64_t t = partial_tile(r, small, ARRAY_LEN(small), D->lhs[second].ext.value);
		if (t)
			s->defs[d].tile[second] = t;
	}
	return changed;
}

/* Fully specified cases (spec_case): f64 accumulations, stores and op formats of a sampled
 * schedule become f32 (vulkan promises nothing in f64, so one f64 format removes an
 * output from its emulation check); a definition that reads f64 values keeps them. */
static bool spec_formats(const Graph *g, Schedule *s)
{
	Schedule def;
	sched_default(g, &def);
	bool changed = false;
	for (int d = 0; d < g->ndefs && d < s->ndefs; d++) {
		DefSched *D = &s->defs[d];
		if (def.defs[d].op == DT_F64)
			continue;
		Dtype *f[3] = {&D->op, &D->accum, &D->store};
		for (int k = 0; k < 3; k++)
			if (*f[k] == DT_F64)
				*f[k] = DT_F32, changed = true;
	}
	sched_free(&def);
	return changed;
}

/* The schedule of case (seed, case_no) into g: sched_sample's when sampled, else the
 * default; then the directed choices above (bias_inline on both, bias_inline_fmt and
 * bias_tiles on sampled ones). The directed schedule is kept where the parser takes it
 * (checked like any schedule), else the undirected one. The default schedule with nothing
 * directed is no block rather than an empty one. */
static int schedule_case(Graph *g, const GenOpts *o, uint64_t seed, uint64_t case_no,
			 bool sampled, bool spec, Diag *d)
{
	Schedule s;
	if (sampled)
		sched_sample(g, fz_seed(seed, case_no, FZ_STREAM_SCHEDULE), &s);
	else
		sched_default(g, &s);
	char *txt = sched_text(g, &s);
	Rng br = {fz_seed(seed, case_no, FZ_STREAM_SCHEDULE) ^ 0x1a11edull, 0};
	bool changed = bias_inline(g, &s, &br);
	if (sampled) {
		changed |= bias_inline_fmt(g, &s, &br, o);
		changed |= bias_tiles(g, &s, &br, o);
		if (spec)
			changed |= spec_formats(g, &s);
	}
	if (go_case(o, seed, case_no) != GO_NONE) {
		Rng orr = {fz_seed(seed, case_no, FZ_STREAM_SCHEDULE) ^ 0x0a11e5c4edull, 0};
		changed |= go_schedule(g, &s, &orr);
	}
	if (changed) {
		char *biased = sched_text(g, &s);
		Diag pd = {0};   /* a failed parse leaves g's schedule as it was */
		int ok = ir_parse_schedule(g, biased, strlen(biased), "<schedule>", &pd);
		diag_clear(&pd);
		free(biased);
		if (ok == 0) {
			sched_free(&s);
			free(txt);
			return 0;
		}
	}
	sched_free(&s);
	int rc = *txt ? ir_parse_schedule(g, txt, strlen(txt), "<schedule>", d) : 0;
	free(txt);
	return rc;
}

int fz_gen_schedule(Graph *g, uint64_t seed, uint64_t case_no, Diag *d)
{
	GenOpts o;
	fz_gen_defaults(&o);
	return schedule_case(g, &o, seed, case_no, true, false, d);
}

Graph *fz_gen(const GenOpts *o, uint64_t seed, uint64_t case_no, Diag *d)
{
	char *src = fz_gen_raw(o, seed, case_no);
	char name[64];
	snprintf(name, sizeof name, "fuzz-%llu-%llu.tg", (unsigned long long)seed,
		 (unsigned long long)case_no);
	Graph *g = ir_parse(src, strlen(src), name, NULL, 0, d);
	free(src);
	if (!g)
		return NULL;
	Rng r = {fz_seed(seed, case_no, FZ_STREAM_SCHEDULE) ^ 0x5c4edull, 0};
	/* a fully specified graph is scheduled more often: splits, pairwise orders and 16-bit
	 * accumulations are where its exact rounding is decided */
	bool spec = spec_case(o, seed, case_no) != 0;
	double ps = spec && o->p_schedule < 0.8 ? 0.8 : o->p_schedule;
	if (schedule_case(g, o, seed, case_no, rng_chance(&r, ps), spec, d) < 0) {
		ir_free(g);
		return NULL;
	}
	fz_direct_schedule(g, o, seed, case_no);
	return g;
}

char *fz_gen_text(const GenOpts *o, uint64_t seed, uint64_t case_no, Diag *d)
{
	Graph *g = fz_gen(o, seed, case_no, d);
	if (!g)
		return NULL;
	char *s = ir_print(g);
	ir_free(g);
	return s;
}

InputSpec fz_gen_input_spec(uint64_t seed, uint64_t case_no)
{
	uint64_t x = fz_seed(seed, case_no, FZ_STREAM_INPUTS);
	int k = (int)(mix64(x ^ 0x1b873593ull) % (DIST__COUNT + 1));
	return (InputSpec){k < DIST__COUNT ? (Dist)k : DIST_ADVERSARIAL, x, k == DIST__COUNT};
}

int fz_gen_inputs(const Graph *g, uint64_t seed, uint64_t case_no, HostTensor *inputs, Diag *d)
{
	InputSpec sp = fz_gen_input_spec(seed, case_no);
	return mp_make_inputs(g, &sp, NULL, inputs, d);
}
