/* verify/agree.c: per-output figures recorded beside the metrics: agreement of discrete
 * choices with the oracle's (argmax and top-k set along an axis), and the length of the
 * longest reduction feeding an output (reports plot error against it).
 *
 * Agreement (numerics.md 4a). An output is viewed as rows along one axis (the last by
 * default): for a [T, V] logits tensor a row is one token's distribution, for a [T, E]
 * router one token's experts.
 * - argmax: a row agrees when the backend's argmax (first index of the largest value)
 *   points at an element whose oracle value is the oracle row's maximum: ties in the
 *   oracle's own (rounded) values are not disagreements.
 * - top-k set: a row agrees when the backend's k largest elements are a valid top-k set
 *   of the oracle row: every chosen element is at least the oracle's k-th largest value,
 *   and every element strictly above it is chosen.
 * NaN orders above every number (torch.argmax returns a NaN's index), so a NaN the oracle
 * does not have moves the choice. A near tie decided differently counts against agreement,
 * never as a failure: the verdicts stay with the metrics.
 * An i32 output already holds choices (the indices a topk or argmax definition produced):
 * there argmax agreement is the fraction of rows equal element by element, and top-k set
 * agreement the fraction of rows holding the same values in any order.
 * Rows shorter than 2 elements carry no choice: such outputs (and scalars) get no figures
 * (rows = 0).
 *
 * Reduction length: the largest number of terms of one reduction (the product of the
 * lengths of its indices' ranges, each bounded above by interval arithmetic over the
 * left-hand indices) among the definitions the output depends on, itself included. 0 when
 * none reduces.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "verify.h"

/* ------------------------------------------------------------------ agreement */

/* a > b in the agreement order: NaN above everything, NaNs equal. */
static bool above(double a, double b)
{
	if (isnan(a))
		return !isnan(b);
	return !isnan(b) && a > b;
}

static bool same(double a, double b)
{
	return (isnan(a) && isnan(b)) || a == b;
}

typedef struct {
	const HostTensor *t;
	int64_t base, stride, len;
} Row;

static double at(const Row *r, int64_t i)
{
	return ht_get(r->t, r->base + i * r->stride);
}

/* The k largest positions of r (ties to the lower position), in decreasing order: one
 * pass, inserting into a sorted list of k. */
static void top(const Row *r, int k, int64_t *pos, double *val)
{
	int n = 0;
	for (int64_t i = 0; i < r->len; i++) {
		double v = at(r, i);
		if (n == k && !above(v, val[k - 1]))
			continue;
		int j = n < k ? n++ : k - 1;
		for (; j > 0 && above(v, val[j - 1]); j--) {
			pos[j] = pos[j - 1];
			val[j] = val[j - 1];
		}
		pos[j] = i;
		val[j] = v;
	}
}

/* Agreement of one real row: argmax into *am, top-k set into *tk. */
static void real_row(const Row *got, const Row *want, int k, int64_t *gp, int64_t *wp,
		     double *tmp, bool *am, bool *tk)
{
	top(got, k, gp, tmp);
	top(want, k, wp, tmp);
	*am = same(at(want, gp[0]), at(want, wp[0]));
	double t = at(want, wp[k - 1]);
	int64_t above_t = 0, chosen_above = 0;
	for (int64_t i = 0; i < want->len; i++)
		above_t += above(at(want, i), t);
	*tk = true;
	for (int j = 0; j < k; j++) {
		double v = at(want, gp[j]);
		*tk &= !above(t, v);
		chosen_above += above(v, t);
	}
	*tk &= chosen_above == above_t;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* i32 rows: (element-wise equal, equal as sets of values). */
static void int_rows(const Row *got, const Row *want, double *tmp, bool *eq, bool *set)
{
	*eq = true;
	for (int64_t i = 0; i < got->len; i++) {
		tmp[i] = at(got, i);
		tmp[got->len + i] = at(want, i);
		*eq &= tmp[i] == tmp[got->len + i];
	}
	qsort(tmp, (size_t)got->len, sizeof *tmp, cmp_double);
	qsort(tmp + got->len, (size_t)got->len, sizeof *tmp, cmp_double);
	*set = memcmp(tmp, tmp + got->len, (size_t)got->len * sizeof *tmp) == 0;
}

void vf_agree(const HostTensor *got, const HostTensor *want, int axis, int k, const char *ref,
	      VfAgree *a)
{
	memset(a, 0, sizeof *a);
	a->axis = -1;
	a->ref = ref;
	if (got->rank == 0 || got->n != want->n)
		return;
	if (axis < 0)
		axis += got->rank;
	if (axis < 0 || axis >= got->rank || got->dims[axis] < 2)
		return;
	int64_t len = got->dims[axis], stride = 1;
	for (int r = axis + 1; r < got->rank; r++)
		stride *= got->dims[r];
	a->axis = axis;
	a->k = (int)(k > 0 ? (k < len ? k : len) : (len < 5 ? len : 5));
	int64_t *gp = malloc((size_t)a->k * sizeof *gp), *wp = malloc((size_t)a->k * sizeof *wp);
	double *tmp = malloc((size_t)(2 * len) * sizeof *tmp);
	IR_ASSERT(gp && wp && tmp);
	for (int64_t o = 0; o < got->n / (len * stride); o++)
		for (int64_t i = 0; i < stride; i++) {
			Row g = {got, o * len * stride + i, stride, len};
			Row w = {want, g.base, stride, len};
			bool am, tk;
			if (got->dtype == DT_I32) {
				int_rows(&g, &w, tmp, &am, &tk);
			} else {
				real_row(&g, &w, a->k, gp, wp, tmp, &am, &tk);
			}
			a->rows++;
			a->argmax_ok += am;
			a->topk_ok += tk;
		}
	free(gp);
	free(wp);
	free(tmp);
}

/* ------------------------------------------------------------------ reduction length */

typedef struct {
	int64_t lo, hi;   /* inclusive */
	bool ok;
} Iv;

static Iv iv(int64_t lo, int64_t hi)
{
	return (Iv){lo, hi, true};
}

static int64_t min4(int64_t a, int64_t b, int64_t c, int64_t d)
{
	int64_t m = a < b ? a : b, n = c < d ? c : d;
	return m < n ? m : n;
}

static int64_t max4(int64_t a, int64_t b, int64_t c, int64_t d)
{
	int64_t m = a > b ? a : b, n = c > d ? c : d;
	return m > n ? m : n;
}

/* Bounds of an index expression of definition d (variables over their ranges). */
static Iv bounds(const Graph *g, const Def *d, Ref r, int depth)
{
	const Node *n = ir_node(g, r);
	Iv bad = {0, 0, false};
	if (depth > 64)
		return bad;
	switch (n->kind) {
	case NK_INT:
		return iv(n->u.ival, n->u.ival);
	case NK_SIZE:
		return iv(g->sizes[n->u.size].value, g->sizes[n->u.size].value);
	case NK_VAR:
		if ((int)n->u.var < d->nlhs)
			return iv(0, d->lhs[n->u.var].ext.value - 1);
		if ((int)n->u.var < d->nlhs + d->nred) {
			const RedIndex *ri = &d->red[n->u.var - (uint32_t)d->nlhs];
			Iv lo = bounds(g, d, ri->lo, depth + 1), hi = bounds(g, d, ri->hi, depth + 1);
			return lo.ok && hi.ok ? iv(lo.lo, hi.hi - 1) : bad;
		}
		return bad;
	case NK_OP:
		break;
	default:
		return bad;
	}
	Iv x = bounds(g, d, n->a[0], depth + 1);
	Iv y = op_info((Op)n->op)->arity > 1 ? bounds(g, d, n->a[1], depth + 1) : iv(0, 0);
	if (!x.ok || !y.ok)
		return bad;
	switch (n->op) {
	case OP_NEG: return iv(-x.hi, -x.lo);
	case OP_ADD: return iv(x.lo + y.lo, x.hi + y.hi);
	case OP_SUB: return iv(x.lo - y.hi, x.hi - y.lo);
	case OP_MUL:
		return iv(min4(x.lo * y.lo, x.lo * y.hi, x.hi * y.lo, x.hi * y.hi),
			  max4(x.lo * y.lo, x.lo * y.hi, x.hi * y.lo, x.hi * y.hi));
	case OP_MIN: return iv(x.lo < y.lo ? x.lo : y.lo, x.hi < y.hi ? x.hi : y.hi);
	case OP_MAX: return iv(x.lo > y.lo ? x.lo : y.lo, x.hi > y.hi ? x.hi : y.hi);
	case OP_IDIV:
		if (y.lo > 0)   /* floor division by a positive divisor is monotone */
			return iv(x.lo >= 0 ? x.lo / y.hi : -((-x.lo + y.lo - 1) / y.lo),
				  x.hi >= 0 ? x.hi / y.lo : -((-x.hi + y.hi - 1) / y.hi));
		return bad;
	case OP_MOD:
		return y.lo > 0 ? iv(0, y.hi - 1) : bad;
	default:
		return bad;
	}
}

/* The number of terms of one reduction of d (upper bound), 0 for a plain body. */
static int64_t def_red_len(const Graph *g, const Def *d)
{
	if (d->monoid == MO_NONE || d->nred == 0)
		return 0;
	int64_t len = 1;
	for (int r = 0; r < d->nred; r++) {
		Iv lo = bounds(g, d, d->red[r].lo, 0), hi = bounds(g, d, d->red[r].hi, 0);
		if (!lo.ok || !hi.ok)
			return 0;
		int64_t n = hi.hi - lo.lo;
		if (n <= 0)
			return 0;
		len = len > INT64_MAX / n ? INT64_MAX : len * n;
	}
	return len;
}

/* Marks the tensors node r reads (through index expressions and padding too). */
static void reads(const Graph *g, Ref r, bool *seen_node, bool *need)
{
	if (r == REF_NONE || seen_node[r])
		return;
	seen_node[r] = true;
	const Node *n = ir_node(g, r);
	if (n->kind == NK_READ) {
		need[n->u.read.tensor] = true;
		const Ref *ix = ir_read_idx(g, n);
		for (uint32_t i = 0; i < n->u.read.n; i++)
			reads(g, ix[i], seen_node, need);
		reads(g, n->u.read.pad, seen_node, need);
	} else if (n->kind == NK_OP) {
		for (int i = 0; i < op_info((Op)n->op)->arity; i++)
			reads(g, n->a[i], seen_node, need);
	}
}

int64_t vf_red_len(const Graph *g, int output)
{
	bool *need = calloc((size_t)g->ntensors + 1, 1);
	bool *seen = calloc((size_t)g->nnodes + 1, 1);
	IR_ASSERT(need && seen);
	need[g->outputs[output].tensor] = true;
	int64_t best = 0;
	/* a definition reads only tensors with smaller ids: one backward sweep suffices */
	for (int t = g->ntensors - 1; t >= 0; t--) {
		const Tensor *T = &g->tensors[t];
		if (!need[t] || T->kind != TK_DEF)
			continue;
		const Def *d = &g->defs[T->def];
		for (int k = 0; k < d->nout; k++)
			need[d->out[k]] = true;
		reads(g, d->body, seen, need);
		for (int r = 0; r < d->nred; r++) {
			reads(g, d->red[r].lo, seen, need);
			reads(g, d->red[r].hi, seen, need);
		}
		int64_t n = def_red_len(g, d);
		best = n > best ? n : best;
	}
	free(need);
	free(seen);
	return best;
}
