/* interp/inputs.c: generated inputs, deterministic from a seed.
 *
 * Each element's value depends only on (seed, input number k, element index i): the random
 * bits come from a counter-based generator (splitmix64's finaliser applied to a chain of
 * those counters), so results do not depend on threads, on the order of generation or on
 * the other inputs. Values are drawn as doubles and rounded into the input's dtype (round
 * to nearest even), so an input holds exactly values of its dtype.
 *
 * - normal: N(0, 1) by the Marsaglia polar method. Its logarithm is MPFR's (correctly
 *   rounded) and the rest is IEEE +, *, /, sqrt, so the values are the same on every
 *   machine, whatever its libm.
 * - uniform: U(-1, 1).
 * - adversarial: elements come in pairs (2m, 2m+1) sharing one category: huge (near the
 *   largest finite value), tiny (near the smallest normal), subnormal, a nearly cancelling
 *   pair (x and -x(1 + k ulp)), an exact tie (both equal, from a small set that repeats
 *   across the tensor), signed zeros, small integers, values near one, ordinary values, and
 *   with spec->specials also inf, -inf and NaN.
 * - edges (an extension: values where rounding and rewriting bugs show; "edges" below):
 *   exact rounding ties of every format narrower than the input's (f16, bf16 and the others
 *   for f32 inputs, f32 too for f64 ones; the formats the graph names weigh more), values
 *   just beside such ties (by one or two ulps of the input's format, or by a quarter ulp of a
 *   format in between: double rounding), the boundaries of the input's and of the narrower
 *   formats (largest finite, the overflow tie, smallest normal, largest and smallest
 *   subnormal, half the smallest subnormal, +-0, just above and below powers of two), values
 *   of a few bits, and structure across elements: equal and negated pairs at related
 *   positions (mirrored or neighbouring along one dimension, transposed, or the flat index
 *   mirrored), runs of three along one dimension that cancel exactly (a, b, -(a + b)) or
 *   absorb (B, s, -B), and values shared (or negated) by every input at the same flat
 *   index. Values beyond 2^64 (the top of f32 and bf16: one such value overflows every
 *   sum and product it enters) come only in one input tensor in three. With
 *   spec->specials, boundaries also hold inf, -inf and NaN.
 * - i32 inputs read in an index position (an indirect read anywhere in the graph) are drawn
 *   in [0, b) with b the smallest extent of every dimension they index (adversarial favours
 *   0 and b - 1; edges too, and repeats an entry in its neighbour), so generated cases are
 *   always valid; other i32 inputs are small integers in [-8, 8] (edges: 0, +-1, +-8 often,
 *   equal and negated neighbours).
 *
 * Limits (mp_make_inputs_opts): the inputs' total size is checked against the memory cap
 * before anything is allocated (the largest input is named); generation polls the deadline
 * and reports progress every 4096 elements.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "limit.h"
#include "mpfmt.h"

enum { CHUNK = 4096 };   /* elements between polls */

static const char *dist_names[] = {
	[DIST_NORMAL] = "normal",
	[DIST_UNIFORM] = "uniform",
	[DIST_ADVERSARIAL] = "adversarial",
	[DIST_EDGES] = "edges",
};
_Static_assert(ARRAY_LEN(dist_names) == DIST__COUNT, "one name per Dist");

Dist dist_parse(const char *s)
{
	for (int i = 0; i < DIST__COUNT; i++)
		if (s && strcmp(s, dist_names[i]) == 0)
			return (Dist)i;
	return (Dist)-1;
}

const char *dist_name(Dist d)
{
	return d >= 0 && d < DIST__COUNT ? dist_names[d] : "?";
}

const char *dist_list(void)
{
	return "normal, uniform, adversarial or edges";
}

/* ------------------------------------------------------------ random bits */

static uint64_t mix64(uint64_t z)
{
	z += 0x9e3779b97f4a7c15ull;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

enum { NARROW_MAX = 6 };

/* What one input's generation needs. */
typedef struct {
	uint64_t key;      /* mix of the seed and the input's number */
	uint64_t skey;     /* the seed's alone: edges values every input shares */
	Dtype dt;
	const DtypeInfo *fi;
	bool specials;
	mpfr_t l;          /* for the normal distribution's logarithm */
	/* edges */
	int rank;
	int64_t dims[IR_MAXRANK], stride[IR_MAXRANK], n;
	int pdim;          /* the dimension of pairs and runs */
	int rel;           /* REL_*: how a pair's two elements are related */
	int tdim;          /* REL_TRANSPOSE: the dimension swapped with pdim */
	bool huge;         /* values beyond 2^64 (one tensor in three) */
	Dtype nf[NARROW_MAX];   /* the narrower formats, by weight */
	unsigned nw[NARROW_MAX];
	int nn;
} Gen;

/* The j-th 64 random bits of element i. */
static uint64_t bits(const Gen *G, int64_t i, uint64_t j)
{
	return mix64(mix64(G->key ^ (uint64_t)i) + j * 0xd1342543de82ef95ull);
}

/* A double uniform in [0, 1) with 53 random bits. */
static double unif(const Gen *G, int64_t i, uint64_t j)
{
	return (double)(bits(G, i, j) >> 11) * 0x1p-53;
}

static double normal(Gen *G, int64_t i)
{
	for (uint64_t j = 0;; j += 2) {
		double u = 2 * unif(G, i, j) - 1, v = 2 * unif(G, i, j + 1) - 1;
		double s = u * u + v * v;
		if (s == 0 || s >= 1)
			continue;
		mpfr_set_d(G->l, s, MPFR_RNDN);
		mpfr_log(G->l, G->l, MPFR_RNDN);
		double lg = mpfr_get_d(G->l, MPFR_RNDN);
		return u * sqrt(-2 * lg / s);
	}
}

/* ------------------------------------------------------------ adversarial */

enum {
	ADV_HUGE, ADV_TINY, ADV_SUBNORMAL, ADV_CANCEL, ADV_TIE, ADV_ZERO, ADV_SMALLINT,
	ADV_NEARONE, ADV_ORDINARY, ADV_SPECIAL, ADV__COUNT
};

/* An ordinary value of element i: uniform magnitude, a few binades, random sign. */
static double ordinary(const Gen *G, int64_t i)
{
	uint64_t r = bits(G, i, 7);
	return ldexp(2 * unif(G, i, 8) - 1, (int)(r % 7) - 3);
}

static double adversarial(Gen *G, int64_t i)
{
	int64_t pair = i & ~(int64_t)1;
	int ncat = G->specials ? ADV__COUNT : ADV__COUNT - 1;
	uint64_t rp = bits(G, pair, 100), r = bits(G, i, 101);
	double sign = (r >> 63) ? -1.0 : 1.0;
	int p = G->fi->prec;
	double minsub = ldexp(1.0, (int)G->fi->emin - 1);
	double minnorm = ldexp(1.0, (int)G->fi->emin + p - 2);
	switch ((int)(rp % (uint64_t)ncat)) {
	case ADV_HUGE:
		return sign * G->fi->maxfinite * (1 - 0.25 * unif(G, i, 1));
	case ADV_TINY:
		return sign * minnorm * (1 + unif(G, i, 1)) * (double)(1 << (r % 4));
	case ADV_SUBNORMAL: {
		uint64_t m = (uint64_t)1 << (p - 1);
		return sign * minsub * (double)(1 + (r >> 8) % (m - 1));
	}
	case ADV_CANCEL: {
		/* x, rounded into the dtype first, then -x(1 + k ulp) */
		double x = mp_round_to(G->dt, ordinary(G, pair));
		if (i == pair)
			return x;
		return -x * (1 + (double)(1 + r % 4) * ldexp(1.0, 1 - p));
	}
	case ADV_TIE:
		return 0.5 * (double)((int)((rp >> 32) % 7) - 3);
	case ADV_ZERO:
		return sign * 0.0;
	case ADV_SMALLINT:
		return (double)((int)(r % 17) - 8);
	case ADV_NEARONE:
		return sign * (1 + (double)((int)(r % 5) - 2) * ldexp(1.0, 1 - p));
	case ADV_ORDINARY:
		return ordinary(G, i);
	default:
		return (r % 3) == 0 ? NAN : sign * INFINITY;
	}
}

/* ------------------------------------------------------------ edges */

/* How the two elements of a pair are related: the coordinate along pdim mirrored
 * (x[N - 1 - i]), its neighbour (x[i ^ 1]: i and i + 1), pdim swapped with tdim (x[j, i]),
 * or the flat index mirrored. */
enum { REL_MIRROR, REL_NEIGHBOUR, REL_TRANSPOSE, REL_FLAT, REL__COUNT };

/* Shares, in percent: elements shared by every input (by flat index), runs of three that
 * cancel, pairs; the rest are single values of the categories below. */
enum { EDGE_SHARED = 12, EDGE_RUN = 15, EDGE_PAIR = 25 };
enum { ONE_TIE, ONE_NEAR, ONE_BOUND, ONE_FEW, ONE__COUNT };
static const unsigned one_w[ONE__COUNT] = {40, 15, 25, 20};

/* A weighted index into w[0..n) from the random bits r. */
static int rng_weighted(const unsigned *w, int n, uint64_t r)
{
	uint64_t sum = 0;
	for (int k = 0; k < n; k++)
		sum += w[k];
	uint64_t x = r % sum;
	for (int k = 0; k < n; k++) {
		if (x < w[k])
			return k;
		x -= w[k];
	}
	return n - 1;
}

/* The smallest positive (subnormal) and the smallest normal value of fi. */
static double min_sub(const DtypeInfo *fi) { return ldexp(1.0, (int)fi->emin - 1); }
static double min_norm(const DtypeInfo *fi) { return ldexp(1.0, (int)fi->emin + fi->prec - 2); }

/* The spacing of fi's values at |v| (v finite, a value of fi; the spacing above it at a power
 * of two). */
static double ulp_of(const DtypeInfo *fi, double v)
{
	v = fabs(v);
	if (v < min_norm(fi))
		return min_sub(fi);
	int e;
	frexp(v, &e);
	return ldexp(1.0, e - fi->prec);
}

/* Whether x is exactly a value of the input's format. */
static bool holds_value(const Gen *G, double x)
{
	return isfinite(x) && mp_round_to(G->dt, x) == x;
}

/* A positive value of format fi from the random bits r: a random significand in an
 * ordinary binade (2^-4 .. 2^4), in the lowest normal ones, the subnormals, or the top. */
static double fmt_value(const DtypeInfo *fi, uint64_t r)
{
	int p = fi->prec, lo = (int)fi->emin + p - 2, hi = (int)fi->emax - 1, e;
	uint64_t half = (uint64_t)1 << (p - 1), m = half + (r >> 12) % half;
	switch ((r >> 4) % 10) {
	case 0: e = lo + (int)((r >> 8) % 2); break;
	case 1: return min_sub(fi) * (double)(1 + (r >> 12) % (half - 1));
	case 2: e = hi - (int)((r >> 8) % 2); break;
	default: e = (int)((r >> 8) % 9) - 4; break;
	}
	e = e < lo ? lo : e > hi ? hi : e;
	double v = ldexp((double)m, e - (p - 1));
	return v > fi->maxfinite ? fi->maxfinite : v;
}

/* A format narrower than the input's, by the weights of G->nf. */
static Dtype narrow_pick(const Gen *G, uint64_t r)
{
	return G->nn ? G->nf[rng_weighted(G->nw, G->nn, r)] : DT_NONE;
}

/* An exact tie of format N (the midpoint of two adjacent values) that the input's format
 * holds, or NAN. */
static double tie_of(const Gen *G, Dtype N, uint64_t r)
{
	const DtypeInfo *fn = dt_info(N);
	double v = fmt_value(fn, r), t = v + ulp_of(fn, v) / 2;
	return holds_value(G, t) ? t : NAN;
}

/* Just beside a tie of N: by one or two ulps of the input's format, or by a quarter ulp of a
 * format between N and the input's (a value that rounds onto the tie there, and then to
 * the wrong neighbour: double rounding). */
static double near_tie(const Gen *G, Dtype N, uint64_t r)
{
	double t = tie_of(G, N, r);
	if (!isfinite(t))
		return NAN;
	double d = (double)(1 + (r >> 1) % 2) * ulp_of(G->fi, t);
	static const Dtype mid[] = {DT_F32, DT_F16, DT_BF16, DT_TF32};
	for (size_t k = 0; k < ARRAY_LEN(mid) && (r >> 2) % 2; k++) {
		int pm = dt_info(mid[k])->prec;
		if (pm > dt_info(N)->prec && pm < G->fi->prec) {
			d = ulp_of(dt_info(mid[k]), t) / 4;
			break;
		}
	}
	double x = r & 1 ? t + d : t - d;
	return holds_value(G, x) ? x : NAN;
}

/* A boundary of format X: the largest finite value, the tie above it (which overflows), just
 * below that tie, the smallest normal, the largest and the smallest subnormal, the ties
 * around the smallest subnormal, zero, a power of two and values just above and below one
 * (by X's spacing or the input's). */
static double boundary(const Gen *G, const DtypeInfo *X, uint64_t r)
{
	double top = X->maxfinite, sub = min_sub(X), norm = min_norm(X);
	int k = (r >> 8) % 4 == 0 ? (int)X->emin + X->prec - 2 + (int)((r >> 10) % 4)
		: (int)((r >> 10) % 12) - 3;
	double p2 = ldexp(1.0, k);
	const DtypeInfo *S = (r >> 16) % 2 ? X : G->fi;
	switch ((r >> 4) % 12) {
	case 0: return top;
	case 1: return top + ulp_of(X, top) / 2;
	case 2:   /* just below the overflow tie, or inside the band (top, tie): rounds to top */
		if ((r >> 20) % 2)
			return top + ulp_of(X, top) * (double)(1 + (r >> 21) % 7) / 16;
		return top + ulp_of(X, top) / 2 - ulp_of(G->fi, top);
	case 3: return norm;
	case 4: return norm - sub;
	case 5: return sub;
	case 6: return sub / 2;
	case 7: return 3 * sub / 2;
	case 8: return 0.0;
	case 9: return p2;
	case 10: return p2 + ulp_of(S, p2);
	default: return p2 - ulp_of(S, p2) / 2;
	}
}

/* A value of a few bits: +-(1..15) / 2^(0..3), exact in every format and in their sums. */
static double few_bits(uint64_t r)
{
	return ldexp((double)(1 + (r >> 4) % 15), -(int)((r >> 8) % 4));
}

/* The sign of bit b of r. */
static double sign_of(uint64_t r, int b)
{
	return (r >> b) & 1 ? -1.0 : 1.0;
}

/* A single value of element i (category drawn from its bits), a value of the input's format. */
static double edge_one(const Gen *G, int64_t i)
{
	uint64_t r = bits(G, i, 600), v = bits(G, i, 601);
	double s = sign_of(r, 63), x = NAN;
	Dtype N = narrow_pick(G, bits(G, i, 602));
	switch (rng_weighted(one_w, ONE__COUNT, r)) {
	case ONE_TIE:
		if (N != DT_NONE)
			x = tie_of(G, N, v);
		break;
	case ONE_NEAR:
		if (N != DT_NONE)
			x = near_tie(G, N, v);
		break;
	case ONE_BOUND:
		if (G->specials && (v >> 40) % 8 == 0)
			return (v >> 43) % 3 == 0 ? NAN : s * INFINITY;
		x = boundary(G, N == DT_NONE || (v >> 44) % 3 == 0 ? G->fi : dt_info(N), v);
		if (!holds_value(G, x))
			x = boundary(G, G->fi, v);
		break;
	default:
		break;
	}
	if (!holds_value(G, x) || (!G->huge && fabs(x) > 0x1p64))
		x = few_bits(v);
	return s * x;
}

/* Element i's coordinate along dimension k. */
static int64_t coord(const Gen *G, int64_t i, int k)
{
	return i / G->stride[k] % G->dims[k];
}

/* Whether element i holds the value every input holds at flat index i (*sh: its bits). */
static bool shared_at(const Gen *G, int64_t i, uint64_t *sh)
{
	*sh = mix64(G->skey ^ (uint64_t)i);
	return *sh % 100 < EDGE_SHARED;
}

static bool is_shared(const Gen *G, int64_t i)
{
	uint64_t sh;
	return shared_at(G, i, &sh);
}

/* Whether element i is in a run of three along pdim (none of them shared) that cancels:
 * *start is the run's first element, *pos i's place in it. */
static bool in_run(const Gen *G, int64_t i, int64_t *start, int *pos)
{
	if (G->rank == 0)
		return false;
	int64_t c = coord(G, i, G->pdim), c0 = c - c % 3, s = G->stride[G->pdim];
	if (c0 + 3 > G->dims[G->pdim])
		return false;
	*pos = (int)(c - c0);
	*start = i - *pos * s;
	if (bits(G, *start, 400) % 100 >= EDGE_RUN)
		return false;
	for (int k = 0; k < 3; k++)
		if (is_shared(G, *start + k * s))
			return false;
	return true;
}

/* The element paired with i (i itself when it has none). */
static int64_t partner(const Gen *G, int64_t i)
{
	if (G->rank == 0)
		return i;
	int d = G->pdim;
	int64_t c = coord(G, i, d), s = G->stride[d], e = G->dims[d];
	switch (G->rel) {
	case REL_MIRROR:
		return i + (e - 1 - 2 * c) * s;
	case REL_NEIGHBOUR:
		return (c ^ 1) < e ? i + ((c ^ 1) - c) * s : i;
	case REL_TRANSPOSE: {
		int64_t t = coord(G, i, G->tdim);
		return i + (t - c) * s + (c - t) * G->stride[G->tdim];
	}
	default:
		return G->n - 1 - i;
	}
}

/* The three values of the run that starts at element start: a, b, -(a + b) (exact: a few
 * bits each); a, -a, b; or B, b, -B with B so large that B + b rounds in a narrower format. */
static double run_value(const Gen *G, int64_t start, int pos)
{
	uint64_t r = bits(G, start, 401);
	double a = sign_of(r, 62) * few_bits(r), b = sign_of(r, 61) * few_bits(r >> 20);
	double t[3] = {a, b, -(a + b)};
	if (r % 3 == 1) {
		t[1] = -a, t[2] = b;
	} else if (r % 3 == 2) {
		Dtype N = narrow_pick(G, r >> 30);
		double B = ldexp(a, dt_info(N == DT_NONE ? G->dt : N)->prec + 4);
		if (holds_value(G, B))
			t[0] = B, t[2] = -B;
	}
	return t[pos];
}

static double edges(Gen *G, int64_t i)
{
	uint64_t sh;
	if (shared_at(G, i, &sh)) {
		/* 7 bits in 2^-6 .. 2^6: a value of every format, so every input holds it (or its
		 * negation) at flat index i */
		uint64_t m = 64 + (sh >> 8) % 64;
		return sign_of(bits(G, i, 300), 0) * ldexp((double)m, (int)((sh >> 16) % 13) - 12);
	}
	int64_t start, p = partner(G, i);
	int pos;
	if (in_run(G, i, &start, &pos))
		return run_value(G, start, pos);
	int64_t cell = p < i ? p : i;
	if (p != i && bits(G, cell, 500) % 100 < EDGE_PAIR && !is_shared(G, p) &&
	    !in_run(G, p, &start, &pos)) {
		/* the pair's value is its first element's single value; the other holds it or
		 * its negation */
		double v = edge_one(G, cell);
		return i == cell || !(bits(G, cell, 501) & 1) ? v : -v;
	}
	return edge_one(G, i);
}

/* Where the formats narrower than the input's format come from: f16 and bf16 always
 * (sampled schedules store and accumulate there), f32 for f64 inputs (more: a sampled
 * schedule's formats of an f64 definition are f32, f16, bf16), the formats the graph names
 * (outputs, inputs, casts) four times more, the schedule-only ones (tf32, e4m3, e5m2) less. The
 * schedule itself is not consulted: a repro's inputs do not change when a directive is
 * dropped. */
static void narrow_formats(const Graph *g, Gen *G)
{
	bool named[DT__COUNT] = {0};
	for (int k = 0; k < g->noutputs; k++)
		named[g->outputs[k].dtype] = true;
	for (int t = 0; t < g->ntensors; t++)
		if (g->tensors[t].kind == TK_INPUT)
			named[g->tensors[t].dtype] = true;
	for (uint32_t r = 1; r < g->nnodes; r++)
		if (g->nodes[r].kind == NK_OP && (op_info((Op)g->nodes[r].op)->flags & OPF_CAST))
			named[op_cast_dtype((Op)g->nodes[r].op)] = true;
	static const Dtype cand[] = {DT_F32, DT_F16, DT_BF16, DT_TF32, DT_E4M3, DT_E5M2};
	G->nn = 0;
	for (size_t k = 0; k < ARRAY_LEN(cand); k++) {
		Dtype f = cand[k];
		if (dt_info(f)->prec >= G->fi->prec)
			continue;
		unsigned w = f == DT_F32 ? 4 : f == DT_F16 || f == DT_BF16 ? 2 : 1;
		G->nf[G->nn] = f;
		G->nw[G->nn++] = named[f] ? 4 * w : w;
	}
}

/* The shape and the layout of pairs and runs of input tensor t. */
static void edges_setup(const Graph *g, int t, Gen *G)
{
	const Tensor *T = &g->tensors[t];
	G->rank = T->rank;
	G->n = 1;
	for (int k = T->rank - 1; k >= 0; k--) {
		G->dims[k] = T->dims[k].value;
		G->stride[k] = G->n;
		G->n *= G->dims[k];
	}
	uint64_t r = mix64(G->key ^ 0xed9e5ull);
	G->pdim = G->rank ? (int)(r % (uint64_t)G->rank) : 0;
	G->rel = (int)((r >> 8) % REL__COUNT);
	G->huge = (r >> 16) % 3 == 0;
	G->tdim = -1;
	for (int k = 0; k < G->rank && G->rel == REL_TRANSPOSE; k++)
		if (k != G->pdim && G->dims[k] == G->dims[G->pdim])
			G->tdim = k;
	if (G->rel == REL_TRANSPOSE && G->tdim < 0)
		G->rel = REL_MIRROR;
	if (G->dt != DT_I32)
		narrow_formats(g, G);
}

/* ------------------------------------------------------------ index inputs */

/* The smallest extent of every dimension that input tensor t indexes (an indirect read),
 * or -1 when t is never read in an index position. */
static int64_t index_bound(const Graph *g, int t)
{
	int64_t b = -1;
	for (uint32_t r = 1; r < g->nnodes; r++) {
		const Node *n = &g->nodes[r];
		if (n->kind != NK_READ)
			continue;
		const Ref *ix = ir_read_idx(g, n);
		for (uint32_t i = 0; i < n->u.read.n; i++) {
			const Node *m = ir_node(g, ix[i]);
			if (m->kind != NK_READ || m->u.read.tensor != (uint32_t)t)
				continue;
			int64_t ext = g->tensors[n->u.read.tensor].dims[i].value;
			if (b < 0 || ext < b)
				b = ext;
		}
	}
	return b;
}

/* An edges integer: index tables (bound >= 1) hold 0 and bound - 1 often, and a pair of
 * neighbours (2m, 2m + 1) often holds one index twice (the same element read at two
 * places); value tables hold 0, +-1 and +-8 often, and equal or negated neighbours. */
static double edge_int(const Gen *G, int64_t bound, int64_t i)
{
	uint64_t r = bits(G, i, 0), rp = bits(G, i & ~(int64_t)1, 1);
	static const int common[] = {0, 1, -1, 8, -8};
	if (rp % 3 == 0) {
		if (bound >= 1)
			return (double)((rp >> 8) % (uint64_t)bound);
		double v = (double)((int)((rp >> 8) % 17) - 8);
		return (i & 1) && (rp >> 40) % 2 ? -v : v;
	}
	if (r % 2 == 0)
		return bound >= 1 ? ((r >> 8) % 2 ? (double)(bound - 1) : 0.0)
				  : (double)common[(r >> 8) % ARRAY_LEN(common)];
	return bound >= 1 ? (double)((r >> 8) % (uint64_t)bound) : (double)((int)((r >> 8) % 17) - 8);
}

static double draw_int(const Gen *G, Dist dist, int64_t bound, int64_t i)
{
	uint64_t r = bits(G, i, 0);
	if (dist == DIST_EDGES)
		return edge_int(G, bound, i);
	if (bound < 0)
		return (double)((int)(r % 17) - 8);
	if (dist == DIST_ADVERSARIAL && (r & 3) < 2)
		return (r & 1) ? (double)(bound - 1) : 0.0;
	return (double)((r >> 2) % (uint64_t)bound);
}

static double draw(Gen *G, Dist dist, int64_t i)
{
	switch (dist) {
	case DIST_NORMAL: return normal(G, i);
	case DIST_UNIFORM: return 2 * unif(G, i, 0) - 1;
	case DIST_EDGES: return edges(G, i);
	default: return adversarial(G, i);
	}
}

/* ------------------------------------------------------------ the inputs */

static int copy_given(const Graph *g, int t, const HostTensor *h, HostTensor *out, Diag *d)
{
	const Tensor *T = &g->tensors[t];
	bool ok = h->dtype == T->dtype && h->rank == T->rank;
	for (int i = 0; ok && i < T->rank; i++)
		ok = h->dims[i] == T->dims[i].value;
	if (!ok) {
		diag_set(d, 2, "input '%s' is declared %s of rank %d but was given %s of rank %d "
			 "or another shape", T->name, dt_name((Dtype)T->dtype), T->rank,
			 dt_name(h->dtype), h->rank);
		return -1;
	}
	if (ht_alloc(out, h->dtype, h->rank, h->dims) < 0) {
		diag_set(d, 3, "out of memory for input '%s'", T->name);
		return -1;
	}
	memcpy(out->data, h->data, (size_t)h->n * (size_t)dt_info(h->dtype)->bytes);
	return 0;
}

/* Generates input k (tensor t) into out: 0, -1 with d, or 1 when a limit stopped it. */
static int generate(const Graph *g, int k, int t, const InputSpec *spec, Limits *L,
		    HostTensor *out, Diag *d)
{
	const Tensor *T = &g->tensors[t];
	int64_t dims[IR_MAXRANK];
	for (int i = 0; i < T->rank; i++)
		dims[i] = T->dims[i].value;
	if (ht_alloc(out, (Dtype)T->dtype, T->rank, dims) < 0) {
		char what[300];
		snprintf(what, sizeof what, "input '%s'", T->name);
		return lim_oom(L, d, ir_tensor_count(g, t) * dt_info((Dtype)T->dtype)->bytes, what);
	}
	lim_tensor(L, T->name);
	Gen G;
	G.key = mix64(mix64(spec->seed) ^ mix64(0x5bd1e995ull + (uint64_t)k));
	G.skey = mix64(mix64(spec->seed) ^ 0x5a4edull);
	G.dt = (Dtype)T->dtype;
	G.fi = dt_info(G.dt);
	G.specials = spec->specials;
	if (spec->dist == DIST_EDGES)
		edges_setup(g, t, &G);
	int64_t b = G.dt == DT_I32 ? index_bound(g, t) : 0;
	if (G.dt != DT_I32)
		mpfr_init2(G.l, 53);
	int rc = 0;
	for (int64_t i = 0; i < out->n && !rc; i += CHUNK) {
		int64_t e = i + CHUNK < out->n ? i + CHUNK : out->n;
		for (int64_t j = i; j < e; j++)
			ht_set(out, j, G.dt == DT_I32 ? draw_int(&G, spec->dist, b, j)
						      : mp_round_to(G.dt, draw(&G, spec->dist, j)));
		rc = lim_poll(L, e - i, e - i);
	}
	if (G.dt != DT_I32)
		mpfr_clear(G.l);
	if (rc)
		ht_free(out);
	return rc;
}

/* The inputs' bytes against the cap: 0, or -1 with why (malloc'ed) naming the largest. */
static int check_size(const Graph *g, int64_t cap, char **why)
{
	int64_t total = 0, big = 0;
	int bt = -1;
	for (int k = 0; k < ir_ninputs(g); k++) {
		int t = ir_input_tensor(g, k);
		int64_t n = ir_tensor_count(g, t), bytes;
		if (__builtin_mul_overflow(n, (int64_t)dt_info((Dtype)g->tensors[t].dtype)->bytes, &bytes) ||
		    __builtin_add_overflow(total, bytes, &total))
			total = bytes = INT64_MAX;
		if (bytes > big) {
			big = bytes;
			bt = t;
		}
	}
	if (cap < 0 || total <= cap)
		return 0;
	const Tensor *T = &g->tensors[bt];
	char a[32], b[32], c[32], shape[160];
	lim_shape(g, bt, shape, sizeof shape);
	if (asprintf(why, "%s: the inputs would take %s, over the oracle's memory cap of %s: input "
		     "'%s' (%s) is %lld elements of %d bytes = %s. Evaluate a smaller --size, or "
		     "raise the cap (--oracle-mem MB)", g->file ? g->file : "<graph>",
		     lim_bytes(a, sizeof a, total), lim_bytes(b, sizeof b, cap), T->name, shape,
		     (long long)ir_tensor_count(g, bt), dt_info((Dtype)T->dtype)->bytes,
		     lim_bytes(c, sizeof c, big)) < 0)
		mp_oom_exit(256);
	return -1;
}

int mp_make_inputs(const Graph *g, const InputSpec *spec, const HostTensor *given,
		   HostTensor *inputs, Diag *d)
{
	return mp_make_inputs_opts(g, spec, given, NULL, inputs, d);
}

int mp_make_inputs_opts(const Graph *g, const InputSpec *spec, const HostTensor *given,
			const MpOpts *o, HostTensor *inputs, Diag *d)
{
	int n = ir_ninputs(g);
	if (spec->dist < 0 || spec->dist >= DIST__COUNT) {
		diag_set(d, 2, "unknown input distribution %d", (int)spec->dist);
		return -1;
	}
	Limits L;
	lim_init(&L, g, o, "input generation");
	char *why = NULL;
	if (check_size(g, L.cap, &why)) {
		diag_set(d, 2, "%s", why);
		free(why);
		lim_free(&L);
		return -2;
	}
	int64_t total = 0;
	for (int k = 0; k < n; k++)
		if (!given || !given[k].data)
			total += ir_tensor_count(g, ir_input_tensor(g, k));
	lim_phase(&L, "generating", total, 0);
	int rc = 0;
	for (int k = 0; k < n && !rc; k++) {
		int t = ir_input_tensor(g, k);
		rc = given && given[k].data ? copy_given(g, t, &given[k], &inputs[k], d)
					    : generate(g, k, t, spec, &L, &inputs[k], d);
		if (rc)
			for (int j = 0; j < k; j++)
				ht_free(&inputs[j]);
	}
	if (rc > 0) {
		lim_diag(&L, d);
		rc = -2;
	}
	lim_free(&L);
	return rc;
}
