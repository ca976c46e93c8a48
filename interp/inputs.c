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
 * - i32 inputs read in an index position (an indirect read anywhere in the graph) are drawn
 *   in [0, b) with b the smallest extent of every dimension they index (adversarial favours
 *   0 and b - 1), so generated cases are always valid; other i32 inputs are small integers
 *   in [-8, 8].
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

/* ------------------------------------------------------------ random bits */

static uint64_t mix64(uint64_t z)
{
	z += 0x9e3779b97f4a7c15ull;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* What one input's generation needs. */
typedef struct {
	uint64_t key;      /* mix of the seed and the input's number */
	Dtype dt;
	const DtypeInfo *fi;
	bool specials;
	mpfr_t l;          /* for the normal distribution's logarithm */
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

static double draw_int(const Gen *G, Dist dist, int64_t bound, int64_t i)
{
	uint64_t r = bits(G, i, 0);
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
	G.dt = (Dtype)T->dtype;
	G.fi = dt_info(G.dt);
	G.specials = spec->specials;
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
