/* interp/ivred.c: the reductions of exact mode over intervals (ival.h): all terms at once
 * (iv_reduce, iv_argbest, iv_topk), for a reduction short enough to hold, and streamed
 * (IvStream), fed block by block, for one of any length in memory that does not grow
 * with it.
 *
 * Streamed sums keep their partial sums exact. A block's exact sum with the partial needs
 * at most top - low + ceil(log2(n)) + 1 bits, top the largest exponent of its values (each
 * |x| < 2^EXP(x)) and low the lowest weight of a significant bit (x is a multiple of
 * 2^(EXP(x) - PREC(x)); for the partial, of 2^(EXP - mpfr_min_prec)); mpfr_sum at that
 * precision is therefore exact (asserted: ternary 0), and the final rounding to the
 * working precision is the one iv_reduce makes over all the terms at once, zero signs
 * included (the sign of an exact zero sum is -0 only when every term is -0, which
 * composes over blocks, -0 being the identity the partial starts from). Beyond
 * IVS_EXACT_CAP bits, or when the exact sum would overflow MPFR's exponent range, the
 * partial is rounded at that precision, down for the low end and up for the high end (a
 * point sum splits into two ends first). Infinite ends and NaN are counted aside, by the
 * rules of the all-at-once sum.
 * prod, max and min fold term by term exactly as the all-at-once forms do. logsumexp
 * keeps per end the largest end so far, m, and s = sum exp(x - m) rounded in the end's
 * direction, rescaling s by exp(m - m') when a block brings a larger m': each step is
 * monotone in the rounded quantities (all positive), so the ends stay bounds. argmax and
 * argmin keep the first best near end (the only possible sure winner j) and the two most
 * threatening far ends with their first positions: the winner is decided when the most
 * threatening far end among the others is beaten (ties: by position), which needs the
 * runner-up when j itself holds the most threatening far end. topk keeps candidates and
 * prunes those surely beaten by K others: such a term sorts after place K-1, and every
 * decided place beats it through a beater (the sure order is transitive), so pruning
 * changes neither the order of the first K places nor which are decided.
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include "ival.h"
#include "limit.h"

#define RN MPFR_RNDN
#define RD MPFR_RNDD
#define RU MPFR_RNDU

static bool pinf(mpfr_srcptr x) { return mpfr_inf_p(x) && mpfr_sgn(x) > 0; }
static bool ninf(mpfr_srcptr x) { return mpfr_inf_p(x) && mpfr_sgn(x) < 0; }

/* Makes room for n arguments of mpfr_sum (and n logsumexp temporaries if big). */
static void reserve(IvCtx *c, size_t n, bool big)
{
	if (n > c->cap) {
		size_t cap = c->cap ? c->cap : 64;
		while (cap < n)
			cap *= 2;
		c->los = mp_xrealloc(c->los, cap * sizeof *c->los);
		c->his = mp_xrealloc(c->his, cap * sizeof *c->his);
		c->cap = cap;
	}
	if (big && n > c->nbig) {
		c->big = mp_xrealloc(c->big, c->cap * sizeof *c->big);
		for (; c->nbig < c->cap; c->nbig++)
			mpfr_init2(c->big[c->nbig], c->prec);
	}
}

/* ---------------------------------------------------------- all terms at once */

/* Sum: one correctly rounded mpfr_sum when every term is a point, else one per end. */
static void sum(IvCtx *c, Iv *r, const Iv *const *t, size_t n)
{
	reserve(c, n, false);
	bool und = false, allpt = true, ptp = false, ptn = false;
	size_t np = 0, nn = 0, both = 0;
	for (size_t i = 0; i < n; i++) {
		const Iv *v = t[i];
		if (v->und) {
			und = true;
			continue;
		}
		if (iv_isnan(v)) {
			iv_set_nan(r);
			return;
		}
		c->los[i] = (mpfr_ptr)v->lo;
		c->his[i] = (mpfr_ptr)iv_hi(v);
		allpt &= v->pt;
		bool p = pinf(iv_hi(v)), q = ninf(v->lo);
		np += p;
		nn += q;
		both += p && q;
		if (v->pt) {
			ptp |= p;
			ptn |= q;
		}
	}
	if (und) {
		iv_set_und(r);
	} else if (ptp && ptn) {
		iv_set_nan(r);   /* a definite +inf and a definite -inf */
	} else if (allpt) {
		iv_fin(r, mpfr_sum(r->lo, c->los, n, RN));
		c->ops += n ? n - 1 : 0;
	} else if (np && nn && !(np == 1 && nn == 1 && both == 1)) {
		iv_set_und(r);   /* +inf and -inf possible in different terms */
	} else {
		if (mpfr_sum(r->lo, c->los, n, RD) == 0 && mpfr_zero_p(r->lo))
			mpfr_sum(r->lo, c->los, n, RN);   /* the sign of an exact zero, as in add */
		mpfr_sum(r->hi, c->his, n, RU);
		c->ops += 2 * (n - 1);
		iv_norm(r);
	}
}

static void prod(IvCtx *c, Iv *r, const Iv *const *t, size_t n)
{
	Iv *acc = &c->acc[0], *nxt = &c->acc[1];
	iv_set_ui(acc, 1);
	for (size_t i = 0; i < n; i++) {
		iv_binary(c, OP_MUL, nxt, acc, t[i]);
		Iv *s = acc;
		acc = nxt;
		nxt = s;
	}
	iv_copy(r, acc);
}

static void maxn(Iv *r, const Iv *const *t, size_t n, bool max)
{
	bool und = false;
	for (size_t i = 0; i < n; i++) {
		if (iv_isnan(t[i])) {
			iv_set_nan(r);
			return;
		}
		und |= t[i]->und;
	}
	if (und) {
		iv_set_und(r);
		return;
	}
	if (n == 0) {
		iv_set_inf(r, max ? -1 : 1);
		return;
	}
	int s = max ? 1 : -1;
	mpfr_srcptr lo = t[0]->lo, hi = iv_hi(t[0]);
	for (size_t i = 1; i < n; i++) {
		if (s * iv_lcmp(t[i]->lo, lo) > 0)
			lo = t[i]->lo;
		if (s * iv_lcmp(iv_hi(t[i]), hi) > 0)
			hi = iv_hi(t[i]);
	}
	mpfr_set(r->lo, lo, RN);
	mpfr_set(r->hi, hi, RN);
	iv_norm(r);
}

/* One end of logsumexp: m + log(sum(exp(x_i - m))) with m the largest end, every step
 * rounded in the end's direction (the whole is increasing in every x_i). Returns whether
 * some step was inexact. */
static bool lse_end(IvCtx *c, mpfr_ptr out, const Iv *const *t, size_t n, bool up)
{
	mpfr_rnd_t d = up ? RU : RD;
	mpfr_srcptr m = NULL;
	for (size_t i = 0; i < n; i++) {
		mpfr_srcptr x = up ? iv_hi(t[i]) : t[i]->lo;
		if (!m || mpfr_cmp(x, m) > 0)
			m = x;
	}
	if (mpfr_inf_p(m)) {   /* every end -inf, or one +inf */
		mpfr_set(out, m, RN);
		return false;
	}
	reserve(c, n, true);
	bool inexact = false;
	for (size_t i = 0; i < n; i++) {
		mpfr_srcptr x = up ? iv_hi(t[i]) : t[i]->lo;
		inexact |= mpfr_sub(c->big[i], x, m, d) != 0;
		inexact |= mpfr_exp(c->big[i], c->big[i], d) != 0;
		c->los[i] = c->big[i];
	}
	inexact |= mpfr_sum(c->t[2], c->los, n, d) != 0;
	inexact |= mpfr_log(c->t[2], c->t[2], d) != 0;
	inexact |= mpfr_add(out, c->t[2], m, d) != 0;
	c->ops += 3 * n + 1;
	return inexact;
}

static void lse(IvCtx *c, Iv *r, const Iv *const *t, size_t n)
{
	bool und = false, allpt = true;
	for (size_t i = 0; i < n; i++) {
		if (iv_isnan(t[i])) {
			iv_set_nan(r);
			return;
		}
		und |= t[i]->und;
		allpt &= t[i]->pt;
	}
	if (und) {
		iv_set_und(r);
	} else if (n == 0) {
		iv_set_inf(r, -1);
	} else if (!lse_end(c, r->lo, t, n, false) && allpt) {
		iv_fin(r, 0);
	} else {
		lse_end(c, r->hi, t, n, true);
		iv_norm(r);
	}
}

void iv_reduce(IvCtx *c, Monoid m, Iv *r, const Iv *const *t, size_t n)
{
	switch (m) {
	case MO_SUM: sum(c, r, t, n); return;
	case MO_PROD: prod(c, r, t, n); return;
	case MO_MAX: maxn(r, t, n, true); return;
	case MO_MIN: maxn(r, t, n, false); return;
	case MO_LOGSUMEXP: lse(c, r, t, n); return;
	default: IR_ASSERT(!"iv_reduce: not a value monoid");
	}
}

int iv_argbest(const Iv *const *t, size_t n, bool max, size_t *best)
{
	for (size_t i = 0; i < n; i++) {
		if (t[i]->und)
			return IV_UND;
		if (iv_isnan(t[i])) {
			*best = i;
			return IV_TRUE;
		}
	}
	*best = n;
	if (n == 0)
		return IV_TRUE;
	/* the only possible sure winner: the first term with the best near end */
	int s = max ? 1 : -1;
	size_t j = 0;
	for (size_t i = 1; i < n; i++)
		if (s * mpfr_cmp(max ? t[i]->lo : iv_hi(t[i]), max ? t[j]->lo : iv_hi(t[j])) > 0)
			j = i;
	mpfr_srcptr key = max ? t[j]->lo : iv_hi(t[j]);
	for (size_t i = 0; i < n; i++) {
		if (i == j)
			continue;
		int k = s * mpfr_cmp(key, max ? iv_hi(t[i]) : t[i]->lo);
		if (k < 0 || (k == 0 && i < j))
			return IV_UND;
	}
	*best = j;
	return IV_TRUE;
}

typedef struct {
	const Iv *v;
	size_t i;
} Ent;

/* Candidate order for topk: NaN first, then by low end descending, then by position. */
static int entcmp(const void *x, const void *y)
{
	const Ent *a = x, *b = y;
	bool an = iv_isnan(a->v), bn = iv_isnan(b->v);
	int k = an || bn ? (int)bn - (int)an : -mpfr_cmp(a->v->lo, b->v->lo);
	if (k)
		return k;
	return a->i < b->i ? -1 : a->i > b->i;
}

/* a surely ranks before b: a larger value, or an equal one at a smaller position. */
static bool beats(const Ent *a, const Ent *b)
{
	bool an = iv_isnan(a->v), bn = iv_isnan(b->v);
	if (an || bn)
		return an && (!bn || a->i < b->i);
	int k = mpfr_cmp(a->v->lo, iv_hi(b->v));
	return k > 0 || (k == 0 && a->i < b->i);
}

size_t iv_topk(IvCtx *c, const Iv *const *t, size_t n, size_t k, size_t *order)
{
	IR_ASSERT(k <= n);
	for (size_t i = 0; i < n; i++)
		if (t[i]->und)
			return 0;
	if (n > c->capsort) {
		free(c->sortbuf);
		c->sortbuf = mp_xmalloc(n * sizeof(Ent));
		c->capsort = n;
	}
	Ent *e = c->sortbuf;
	for (size_t i = 0; i < n; i++)
		e[i] = (Ent){t[i], i};
	qsort(e, n, sizeof *e, entcmp);
	/* position q is decided when every earlier one is and e[q] surely ranks before every
	 * later candidate (the sure order is transitive) */
	for (size_t q = 0; q < k; q++) {
		for (size_t j = q + 1; j < n; j++)
			if (!beats(&e[q], &e[j]))
				return q;
		order[q] = e[q].i;
	}
	return k;
}


/* ---------------------------------------------------------- streamed */

typedef struct {
	mpfr_t v, w;       /* the partial sum (exact, or rounded outward), scratch for the next */
} Part;

typedef struct {
	mpfr_t m, s;       /* the largest finite end so far, sum of exp(end - m) */
	bool any;          /* a finite end was seen */
	bool pinf;         /* an end is +inf: the end's value is +inf */
	bool inexact;
} LseEnd;

typedef struct {
	mpfr_t v;
	int64_t pos;       /* position in the reduction */
	bool has;
} Best;

struct IvStream {
	mpfr_prec_t prec;
	Monoid m;
	int64_t n;         /* terms fed */
	bool und, nan, allpt;
	/* sum */
	bool split;        /* the ends are tracked apart (lo, hi), else lo is the point sum */
	bool ptp, ptn, lo_pinf, hi_ninf;
	int64_t np, nn, both;
	Part lo, hi;
	/* prod */
	Iv acc, nxt;
	/* max, min */
	mpfr_t xlo, xhi;
	bool any;
	/* logsumexp */
	LseEnd le, he;
	/* argmax, argmin */
	int special;       /* the first undecided (IV_UND) or NaN (IV_TRUE) term, else 0 */
	int64_t spjv;
	Best key, f1, f2;  /* the first best near end; the two most threatening far ends */
	int64_t keyjv;
	/* topk */
	size_t k, limit, block;
	Iv *cand;
	int64_t *cpos, *cjv;
	const Iv **cptr;
	bool *keep;
	size_t ncand, capcand;
	int64_t held;      /* bytes charged for the candidates' capacity (kept until freed) */
	struct Limits *lim;
	const char *what;
};

static void part_init(Part *p)
{
	mpfr_init2(p->v, MPFR_PREC_MIN);
	mpfr_init2(p->w, MPFR_PREC_MIN);
}

static void part_clear(Part *p)
{
	mpfr_clear(p->v);
	mpfr_clear(p->w);
}

IvStream *ivs_new(mpfr_prec_t prec)
{
	IvStream *s = mp_xcalloc(1, sizeof *s);
	s->prec = prec;
	part_init(&s->lo);
	part_init(&s->hi);
	iv_init(&s->acc, prec);
	iv_init(&s->nxt, prec);
	mpfr_inits2(prec, s->xlo, s->xhi, s->le.m, s->le.s, s->he.m, s->he.s, s->key.v, s->f1.v,
		    s->f2.v, (mpfr_ptr)0);
	return s;
}

static void cand_release(IvStream *s)
{
	if (s->held && s->lim)
		lim_release(s->lim, s->held);
	s->held = 0;
}

void ivs_free(IvStream *s)
{
	if (!s)
		return;
	part_clear(&s->lo);
	part_clear(&s->hi);
	iv_clear(&s->acc);
	iv_clear(&s->nxt);
	mpfr_clears(s->xlo, s->xhi, s->le.m, s->le.s, s->he.m, s->he.s, s->key.v, s->f1.v, s->f2.v,
		    (mpfr_ptr)0);
	cand_release(s);
	free(s->cand);
	free(s->cpos);
	free(s->cjv);
	free(s->cptr);
	free(s->keep);
	free(s);
}

void ivs_begin(IvStream *s, Monoid m, size_t k, size_t block, struct Limits *lim,
	       const char *what)
{
	IR_ASSERT(!s->held || s->lim == lim);   /* the capacity kept is charged to lim */
	s->m = m;
	s->n = 0;
	s->und = s->nan = false;
	s->allpt = true;
	s->split = s->ptp = s->ptn = s->lo_pinf = s->hi_ninf = false;
	s->np = s->nn = s->both = 0;
	mpfr_set_prec(s->lo.v, MPFR_PREC_MIN);
	mpfr_set_zero(s->lo.v, -1);   /* -0: the identity of IEEE addition, zero signs too */
	iv_set_ui(&s->acc, 1);
	s->any = false;
	s->le.any = s->le.pinf = s->le.inexact = false;
	s->he.any = s->he.pinf = s->he.inexact = false;
	s->special = 0;
	s->key.has = s->f1.has = s->f2.has = false;
	s->k = k;
	s->block = block < 64 ? 64 : block;
	s->limit = k + s->block;
	s->ncand = 0;
	s->lim = lim;
	s->what = what;
}

int64_t ivs_count(const IvStream *s)
{
	return s->n;
}

/* ------------------------------------------------------------ sum */

/* The bits that hold the exact sum of x[0..n) (finite terms, the partial first, whose
 * least significant bit mpfr_min_prec finds), or 0 when every one is zero; LONG_MAX when
 * more than the cap, or when the partial is infinite (an end that overflowed). */
static long exact_bits(mpfr_ptr const *x, size_t n)
{
	bool any = false;
	mpfr_exp_t top = 0, low = 0;
	for (size_t i = 0; i < n; i++) {
		if (mpfr_zero_p(x[i]))
			continue;
		if (!mpfr_number_p(x[i]))
			return LONG_MAX;
		mpfr_exp_t e = mpfr_get_exp(x[i]);
		mpfr_prec_t p = i == 0 ? mpfr_min_prec(x[i]) : mpfr_get_prec(x[i]);
		mpfr_exp_t l = e - (mpfr_exp_t)p;
		top = any && top > e ? top : e;
		low = any && low < l ? low : l;
		any = true;
	}
	if (!any)
		return 0;
	long carry = 1;
	while (carry < 64 && ((size_t)1 << (carry - 1)) < n)
		carry++;
	/* exponents lie in [1 - 2^62, 2^62 - 1]: the difference fits */
	if (top - low > (mpfr_exp_t)IVS_EXACT_CAP)
		return LONG_MAX;
	return (long)(top - low) + carry;
}

/* p += x[1..n) (x[0] is set to p->v here) exactly, at the bits exact_bits found: false,
 * p unchanged, when that is not possible (too many bits, or the sum overflows MPFR's
 * exponent range). */
static bool part_exact(Part *p, mpfr_ptr *x, size_t n, long bits)
{
	if (bits > IVS_EXACT_CAP)
		return false;
	x[0] = p->v;
	mpfr_set_prec(p->w, bits < MPFR_PREC_MIN ? MPFR_PREC_MIN : bits);
	if (mpfr_sum(p->w, x, (unsigned long)n, RN) != 0)
		return false;   /* only an overflow: the bits hold every exact sum */
	mpfr_swap(p->v, p->w);
	return true;
}

/* p += x[1..n) rounded in direction d at the cap (or at bits when fewer). */
static void part_round(Part *p, mpfr_ptr *x, size_t n, long bits, mpfr_rnd_t d)
{
	x[0] = p->v;
	mpfr_set_prec(p->w, bits < 64 ? 64 : bits > IVS_EXACT_CAP ? IVS_EXACT_CAP : bits);
	if (mpfr_sum(p->w, x, (unsigned long)n, d) == 0 && mpfr_zero_p(p->w))
		mpfr_sum(p->w, x, (unsigned long)n, RN);   /* an exact zero: its sign as to nearest */
	mpfr_swap(p->v, p->w);
}

static void split_parts(IvStream *s)
{
	mpfr_set_prec(s->hi.v, mpfr_get_prec(s->lo.v));
	mpfr_set(s->hi.v, s->lo.v, RN);
	s->split = true;
}

static void sum_feed(IvCtx *c, IvStream *s, const Iv *const *t, size_t n)
{
	reserve(c, n + 1, false);
	size_t nl = 1, nh = 1;   /* x[0] is the partial */
	bool pts = true;
	for (size_t i = 0; i < n; i++) {
		const Iv *v = t[i];
		if (v->und) {
			s->und = true;
			continue;
		}
		if (iv_isnan(v)) {
			s->nan = true;
			continue;
		}
		mpfr_srcptr lo = v->lo, hi = iv_hi(v);
		bool p = pinf(hi), q = ninf(lo);
		s->np += p;
		s->nn += q;
		s->both += p && q;
		if (v->pt) {
			s->ptp |= p;
			s->ptn |= q;
		} else {
			pts = false;
		}
		if (pinf(lo))
			s->lo_pinf = true;
		else if (!q)
			c->los[nl++] = (mpfr_ptr)lo;
		if (ninf(hi))
			s->hi_ninf = true;
		else if (!p)
			c->his[nh++] = (mpfr_ptr)hi;
	}
	if (s->und || s->nan)
		return;   /* the value is decided; the terms still count */
	s->allpt &= pts;
	if (!s->allpt && !s->split)
		split_parts(s);
	c->los[0] = s->lo.v;
	long bl = exact_bits(c->los, nl);
	c->ops += nl - 1;
	if (!s->split) {
		if (part_exact(&s->lo, c->los, nl, bl))
			return;
		split_parts(s);   /* all points, but no exact partial: two ends from now on */
	}
	c->his[0] = s->hi.v;
	long bh = exact_bits(c->his, nh);
	c->ops += nh - 1;
	if (!part_exact(&s->lo, c->los, nl, bl))
		part_round(&s->lo, c->los, nl, bl, RD);
	if (!part_exact(&s->hi, c->his, nh, bh))
		part_round(&s->hi, c->his, nh, bh, RU);
}

static void sum_value(IvStream *s, Iv *r)
{
	if (s->nan || (s->ptp && s->ptn)) {
		iv_set_nan(r);
	} else if (s->und) {
		iv_set_und(r);
	} else if (s->allpt && (s->ptp || s->ptn)) {
		iv_set_inf(r, s->ptp ? 1 : -1);
	} else if (s->allpt && !s->split) {
		iv_fin(r, mpfr_set(r->lo, s->lo.v, RN));
	} else if (s->np && s->nn && !(s->np == 1 && s->nn == 1 && s->both == 1)) {
		iv_set_und(r);   /* +inf and -inf possible in different terms */
	} else {
		if (s->nn)
			mpfr_set_inf(r->lo, -1);
		else if (s->lo_pinf)
			mpfr_set_inf(r->lo, 1);
		else
			mpfr_set(r->lo, s->lo.v, RD);
		if (s->np)
			mpfr_set_inf(r->hi, 1);
		else if (s->hi_ninf)
			mpfr_set_inf(r->hi, -1);
		else
			mpfr_set(r->hi, s->hi.v, RU);
		iv_norm(r);
	}
}

/* ------------------------------------------------------------ max, min, logsumexp */

static void maxmin_feed(IvStream *s, const Iv *const *t, size_t n, bool max)
{
	int sg = max ? 1 : -1;
	for (size_t i = 0; i < n; i++) {
		if (iv_isnan(t[i]))
			s->nan = true;
		s->und |= t[i]->und;
		if (s->nan || s->und)
			continue;
		mpfr_srcptr lo = t[i]->lo, hi = iv_hi(t[i]);
		if (!s->any || sg * iv_lcmp(lo, s->xlo) > 0)
			mpfr_set(s->xlo, lo, RN);
		if (!s->any || sg * iv_lcmp(hi, s->xhi) > 0)
			mpfr_set(s->xhi, hi, RN);
		s->any = true;
	}
}

static void lse_feed_end(IvCtx *c, LseEnd *e, const Iv *const *t, size_t n, bool up)
{
	mpfr_rnd_t d = up ? RU : RD;
	mpfr_srcptr mb = NULL;
	for (size_t i = 0; i < n && !e->pinf; i++) {
		mpfr_srcptr x = up ? iv_hi(t[i]) : t[i]->lo;
		if (pinf(x))
			e->pinf = true;
		else if (!ninf(x) && (!mb || mpfr_cmp(x, mb) > 0))
			mb = x;
	}
	if (e->pinf || !mb)
		return;   /* +inf, or only -inf ends (exp(-inf - m) = 0 adds nothing) */
	if (!e->any) {
		mpfr_set(e->m, mb, RN);
		mpfr_set_zero(e->s, 1);
		e->any = true;
	} else if (mpfr_cmp(mb, e->m) > 0) {
		e->inexact |= mpfr_sub(c->t[2], e->m, mb, d) != 0;
		e->inexact |= mpfr_exp(c->t[2], c->t[2], d) != 0;
		e->inexact |= mpfr_mul(e->s, e->s, c->t[2], d) != 0;
		mpfr_set(e->m, mb, RN);
		c->ops += 3;
	}
	reserve(c, n + 1, true);
	size_t k = 0;
	c->los[k++] = e->s;
	for (size_t i = 0; i < n; i++) {
		mpfr_srcptr x = up ? iv_hi(t[i]) : t[i]->lo;
		if (ninf(x))
			continue;
		mpfr_ptr b = c->big[k - 1];
		e->inexact |= mpfr_sub(b, x, e->m, d) != 0;
		e->inexact |= mpfr_exp(b, b, d) != 0;
		c->los[k++] = b;
	}
	e->inexact |= mpfr_sum(c->t[2], c->los, (unsigned long)k, d) != 0;
	mpfr_swap(e->s, c->t[2]);
	c->ops += 3 * (k - 1);
}

/* One end of the logsumexp: m + log(s) rounded in its direction; true when inexact. */
static bool lse_end_value(IvCtx *c, LseEnd *e, mpfr_ptr out, bool up)
{
	mpfr_rnd_t d = up ? RU : RD;
	if (e->pinf || !e->any) {
		mpfr_set_inf(out, e->pinf ? 1 : -1);
		return false;
	}
	bool inexact = e->inexact;
	inexact |= mpfr_log(c->t[2], e->s, d) != 0;
	inexact |= mpfr_add(out, c->t[2], e->m, d) != 0;
	c->ops += 2;
	return inexact;
}

static void lse_feed(IvCtx *c, IvStream *s, const Iv *const *t, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (iv_isnan(t[i]))
			s->nan = true;
		s->und |= t[i]->und;
		s->allpt &= t[i]->pt;
	}
	if (s->nan || s->und)
		return;
	lse_feed_end(c, &s->le, t, n, false);
	lse_feed_end(c, &s->he, t, n, true);
}

/* ------------------------------------------------------------ argmax, argmin */

static void best_set(Best *b, mpfr_srcptr v, int64_t pos)
{
	mpfr_set(b->v, v, RN);
	b->pos = pos;
	b->has = true;
}

static void argbest_feed(IvStream *s, const Iv *const *t, const int64_t *jv, size_t n)
{
	bool max = s->m == MO_ARGMAX;
	int sg = max ? 1 : -1;
	for (size_t i = 0; i < n; i++) {
		int64_t pos = s->n + (int64_t)i;
		if (!s->special && (t[i]->und || iv_isnan(t[i]))) {
			s->special = t[i]->und ? IV_UND : IV_TRUE;
			s->spjv = jv[i];
		}
		if (s->special)
			continue;
		mpfr_srcptr key = max ? t[i]->lo : iv_hi(t[i]), far = max ? iv_hi(t[i]) : t[i]->lo;
		if (!s->key.has || sg * mpfr_cmp(key, s->key.v) > 0) {
			best_set(&s->key, key, pos);
			s->keyjv = jv[i];
		}
		if (!s->f1.has || sg * mpfr_cmp(far, s->f1.v) > 0) {
			if (s->f1.has) {
				mpfr_swap(s->f2.v, s->f1.v);
				s->f2.pos = s->f1.pos;
				s->f2.has = true;
			}
			best_set(&s->f1, far, pos);
		} else if (!s->f2.has || sg * mpfr_cmp(far, s->f2.v) > 0) {
			best_set(&s->f2, far, pos);
		}
	}
}

int ivs_argbest(IvStream *s, int64_t *jv)
{
	*jv = -1;
	if (s->special == IV_UND)
		return IV_UND;
	if (s->special) {
		*jv = s->spjv;
		return IV_TRUE;
	}
	if (!s->key.has)
		return IV_TRUE;
	/* the most threatening far end among the others: f1, unless it is the winner's own */
	const Best *f = s->f1.pos != s->key.pos ? &s->f1 : &s->f2;
	if (f->has) {
		int k = (s->m == MO_ARGMAX ? 1 : -1) * mpfr_cmp(s->key.v, f->v);
		if (k < 0 || (k == 0 && f->pos < s->key.pos))
			return IV_UND;
	}
	*jv = s->keyjv;
	return IV_TRUE;
}

/* ------------------------------------------------------------ topk */

/* Room for n candidates: -1 out of memory, 1 over the cap, else 0. */
static int cand_room(IvStream *s, size_t n)
{
	if (n <= s->capcand)
		return 0;
	size_t cap = s->capcand ? s->capcand : 256;
	while (cap < n)
		cap *= 2;
	size_t each = iv_block_bytes(1, s->prec) + 2 * sizeof(int64_t) + sizeof(Iv *) + 1;
	int64_t more = (int64_t)((cap - s->capcand) * each);
	if (s->lim && !lim_charge(s->lim, more, s->what))
		return 1;
	Iv *b = iv_block(cap, s->prec);
	int64_t *pos = malloc(cap * sizeof *pos), *jv = malloc(cap * sizeof *jv);
	const Iv **ptr = malloc(cap * sizeof *ptr);
	bool *keep = malloc(cap);
	if (!b || !pos || !jv || !ptr || !keep) {
		free(b), free(pos), free(jv), free(ptr), free(keep);
		if (s->lim)
			lim_release(s->lim, more);
		return -1;
	}
	for (size_t i = 0; i < s->ncand; i++) {
		iv_copy(&b[i], &s->cand[i]);
		pos[i] = s->cpos[i];
		jv[i] = s->cjv[i];
	}
	free(s->cand), free(s->cpos), free(s->cjv), free(s->cptr), free(s->keep);
	s->cand = b, s->cpos = pos, s->cjv = jv, s->cptr = ptr, s->keep = keep;
	s->held += more;
	s->capcand = cap;
	return 0;
}

/* Drops the candidates that the first K in rank order all surely beat. */
static void prune(IvCtx *c, IvStream *s)
{
	size_t n = s->ncand, K = s->k;
	if (n > c->capsort) {
		free(c->sortbuf);
		c->sortbuf = mp_xmalloc(n * sizeof(Ent));
		c->capsort = n;
	}
	Ent *e = c->sortbuf;
	for (size_t i = 0; i < n; i++) {
		e[i] = (Ent){&s->cand[i], (size_t)s->cpos[i]};
		s->keep[i] = true;
	}
	qsort(e, n, sizeof *e, entcmp);
	for (size_t q = K; q < n; q++) {
		bool beaten = true;
		for (size_t j = 0; j < K && beaten; j++)
			beaten = beats(&e[j], &e[q]);
		if (beaten)
			s->keep[e[q].v - s->cand] = false;
	}
	size_t w = 0;
	for (size_t i = 0; i < n; i++) {
		if (!s->keep[i])
			continue;
		if (w != i) {   /* swap, not copy: each Iv keeps its own significands */
			Iv tmp = s->cand[w];
			s->cand[w] = s->cand[i];
			s->cand[i] = tmp;
			s->cpos[w] = s->cpos[i];
			s->cjv[w] = s->cjv[i];
		}
		w++;
	}
	s->ncand = w;
	if (2 * w > s->limit)
		s->limit = 2 * w;   /* pruning did little: prune less often */
}

static int topk_feed(IvCtx *c, IvStream *s, const Iv *const *t, const int64_t *jv, size_t n)
{
	for (size_t i = 0; i < n; i++)
		s->und |= t[i]->und;
	if (s->und)
		return 0;   /* no place is decided; the terms only count */
	int rc = cand_room(s, s->ncand + n);
	if (rc)
		return rc;
	for (size_t i = 0; i < n; i++) {
		iv_copy(&s->cand[s->ncand], t[i]);
		s->cpos[s->ncand] = s->n + (int64_t)i;
		s->cjv[s->ncand++] = jv[i];
	}
	if (s->ncand >= s->limit)
		prune(c, s);
	return 0;
}

size_t ivs_topk(IvCtx *c, IvStream *s, size_t *order)
{
	if (s->und || (int64_t)s->k > s->n)
		return 0;
	for (size_t i = 0; i < s->ncand; i++)
		s->cptr[i] = &s->cand[i];
	return iv_topk(c, s->cptr, s->ncand, s->k, order);
}

const Iv *ivs_cand(const IvStream *s, size_t i)
{
	return &s->cand[i];
}

int64_t ivs_cand_jv(const IvStream *s, size_t i)
{
	return s->cjv[i];
}

/* ------------------------------------------------------------ the stream */

int ivs_feed(IvCtx *c, IvStream *s, const Iv *const *t, const int64_t *jv, size_t n)
{
	int rc = 0;
	switch (s->m) {
	case MO_SUM: sum_feed(c, s, t, n); break;
	case MO_PROD:
		for (size_t i = 0; i < n; i++) {
			iv_binary(c, OP_MUL, &s->nxt, &s->acc, t[i]);
			Iv tmp = s->acc;
			s->acc = s->nxt;
			s->nxt = tmp;
		}
		break;
	case MO_MAX: case MO_MIN: maxmin_feed(s, t, n, s->m == MO_MAX); break;
	case MO_LOGSUMEXP: lse_feed(c, s, t, n); break;
	case MO_ARGMAX: case MO_ARGMIN: argbest_feed(s, t, jv, n); break;
	case MO_TOPK: rc = topk_feed(c, s, t, jv, n); break;
	default: IR_ASSERT(!"ivs_feed: not a monoid of real terms");
	}
	s->n += (int64_t)n;
	return rc;
}

void ivs_value(IvCtx *c, IvStream *s, Iv *r)
{
	switch (s->m) {
	case MO_SUM: sum_value(s, r); return;
	case MO_PROD: iv_copy(r, &s->acc); return;
	case MO_MAX: case MO_MIN:
		if (s->nan)
			iv_set_nan(r);
		else if (s->und)
			iv_set_und(r);
		else if (!s->any)
			iv_set_inf(r, s->m == MO_MAX ? -1 : 1);
		else {
			mpfr_set(r->lo, s->xlo, RN);
			mpfr_set(r->hi, s->xhi, RN);
			iv_norm(r);
		}
		return;
	case MO_LOGSUMEXP:
		if (s->nan)
			iv_set_nan(r);
		else if (s->und)
			iv_set_und(r);
		else if (s->n == 0)
			iv_set_inf(r, -1);
		else if (!lse_end_value(c, &s->le, r->lo, false) && s->allpt)
			iv_fin(r, 0);
		else {
			lse_end_value(c, &s->he, r->hi, true);
			iv_norm(r);
		}
		return;
	default: IR_ASSERT(!"ivs_value: not a value monoid");
	}
}
