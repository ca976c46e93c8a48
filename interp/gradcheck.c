/* interp/gradcheck.c: the directional check of a derived gradient (docs/grad.md, "Verifying
 * a derivation"), apart from any kernel.
 *
 * For random inputs x, cotangents c and directions t (one draw per pair, from the seed), the
 * oracle evaluates compiler/sched/grad.c's directional graph: <grad, t> from the derived gradient
 * and the central difference (L(x + h t) - L(x - h t)) / 2h of L = <c, G(x)>, both exactly
 * and each correctly rounded to f64. With h = 2^-60 the difference's O(h^2) error is far
 * below f64's resolution of either figure, so a correct derivation agrees to a few ulps of
 * the products' scale and a wrong rule differs in the leading digits. On a mismatch the
 * first wrong element is found by bisection over the prefix of t (both sides are linear in
 * t): log2(elements) more evaluations, and its derived and exact partials are reported.
 *
 * Ownership: nothing is kept past a call. Errors: -1 or -2 as mp_exact (with d).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "interp.h"

typedef struct {
	const Graph *v;       /* the directional graph */
	HostTensor *in;       /* its inputs */
	HostTensor *t0;       /* copies of the directions as drawn */
	int first_t, nt;      /* the directions: inputs first_t .. first_t + nt - 1 */
	const MpOpts *mp;
} Ck;

/* Evaluates ip, cd, mag with the directions beyond the first `prefix` elements zeroed. */
static int eval_prefix(Ck *c, int64_t prefix, double out[3], Diag *d)
{
	int64_t at = 0;
	for (int k = 0; k < c->nt; k++) {
		HostTensor *t = &c->in[c->first_t + k];
		for (int64_t i = 0; i < t->n; i++, at++)
			((double *)t->data)[i] = at < prefix ? ((double *)c->t0[k].data)[i] : 0;
	}
	HostTensor outs[3];
	memset(outs, 0, sizeof outs);
	MpStats st = {0};
	int r = mp_exact(c->v, c->in, c->mp, outs, NULL, &st, d);
	if (r)
		return r;
	for (int k = 0; k < 3; k++) {
		out[k] = ht_get(&outs[k], 0);
		ht_free(&outs[k]);
	}
	return 0;
}

static bool agree(const MpGradOpts *o, const double v[3])
{
	double ip = v[0], cd = v[1], mag = v[2];
	if (!isfinite(ip) || !isfinite(cd))
		return false;   /* (a pair whose cd is not finite is not judged) */
	double rtol = o->rtol > 0 ? o->rtol : 0x1p-40;
	return fabs(ip - cd) <= rtol * (mag + fabs(cd)) + 0x1p-900;
}

/* Zeroes the cotangents of the output elements that are not finite at the drawn inputs
 * (NaN or an infinity of the cast-free graph gs, in f64): the derivative of <c, y> exists
 * only where y does. The cotangents are inputs ng .. of the directional graph, one per real
 * output of g in order. */
static int mask_cotangents(const Graph *gs, Ck *c, Diag *d)
{
	int ng = ir_ninputs(gs);
	HostTensor *outs = calloc((size_t)gs->noutputs + 1, sizeof *outs);
	if (!outs) {
		diag_env(d, "out of memory checking the gradient of %s", gs->file);
		return -1;
	}
	int rc = mp_exact(gs, c->in, c->mp, outs, NULL, NULL, d);
	for (int k = 0, j = 0; !rc && k < gs->noutputs; k++) {
		if (gs->outputs[k].dtype == DT_I32)
			continue;
		HostTensor *cy = &c->in[ng + j++];
		for (int64_t i = 0; i < cy->n; i++)
			if (!isfinite(ht_get(&outs[k], i)))
				ht_set(cy, i, 0);
	}
	for (int k = 0; k < gs->noutputs; k++)
		ht_free(&outs[k]);
	free(outs);
	return rc;
}

/* Names element e (of all the directions, in order) as grad_a[i, j] in r->what. */
static void name_element(const Ck *c, const Graph *gg, int64_t e, double derived, double exact,
			 MpGradResult *r)
{
	for (int k = 0; k < c->nt; k++) {
		const HostTensor *t = &c->t0[k];
		if (e >= t->n) {
			e -= t->n;
			continue;
		}
		int n = snprintf(r->what, sizeof r->what, "%s[",
				 gg->tensors[gg->outputs[k].tensor].name);
		int64_t rem = e, co[IR_MAXRANK];
		for (int i = t->rank - 1; i >= 0; i--) {
			co[i] = rem % t->dims[i];
			rem /= t->dims[i];
		}
		for (int i = 0; i < t->rank && n > 0 && (size_t)n < sizeof r->what; i++)
			n += snprintf(r->what + n, sizeof r->what - (size_t)n, "%s%lld", i ? ", " : "",
				      (long long)co[i]);
		if (n > 0 && (size_t)n < sizeof r->what)
			snprintf(r->what + n, sizeof r->what - (size_t)n,
				 "] = %.17g but the exact partial derivative is %.17g", derived, exact);
		return;
	}
}

/* The first wrong element, from a failing pair. */
static int localize(Ck *c, const MpGradOpts *o, const Graph *gg, const double full[3],
		    MpGradResult *r, Diag *d)
{
	int64_t n = 0;
	for (int k = 0; k < c->nt; k++)
		n += c->t0[k].n;
	int64_t lo = 0, hi = n;
	double vlo[3] = {0, 0, 0}, vhi[3] = {full[0], full[1], full[2]};
	while (hi - lo > 1) {
		int64_t mid = lo + (hi - lo) / 2;
		double v[3];
		int rc = eval_prefix(c, mid, v, d);
		if (rc)
			return rc;
		if (agree(o, v)) {
			lo = mid;
			memcpy(vlo, v, sizeof v);
		} else {
			hi = mid;
			memcpy(vhi, v, sizeof v);
		}
	}
	int64_t e = hi - 1, at = e;
	double te = 0;
	for (int k = 0; k < c->nt; at -= c->t0[k].n, k++)
		if (at < c->t0[k].n) {
			te = ((double *)c->t0[k].data)[at];
			break;
		}
	r->element = e;
	name_element(c, gg, e, (vhi[0] - vlo[0]) / te, (vhi[1] - vlo[1]) / te, r);
	return 0;
}

int mp_grad_verify(const Graph *g, const GradOpts *go, const MpGradOpts *o, MpGradResult *r,
		   Diag *d)
{
	memset(r, 0, sizeof *r);
	r->ok = true;
	r->element = -1;
	GradOpts so = go ? *go : (GradOpts){0};
	so.strip_casts = true;
	int k = o->step_log2 > 0 ? o->step_log2 : 60;
	Graph *gg = gr_derive(g, &so, d);
	if (!gg)
		return -1;
	Graph *v = gr_dirgraph(g, gg, k, d);
	Graph *gs = v ? gr_strip(g, d) : NULL;
	if (!gs) {
		if (v)
			ir_free(v);
		ir_free(gg);
		return -1;
	}
	int nin = ir_ninputs(v), rc = 0;
	Graph *v2 = NULL;   /* the directional graph at step 2^-(k-12), made on a mismatch */
	MpOpts mp = o->mp;
	if (mp.prec_cap <= 0)
		mp.prec_cap = 2048;   /* an exactly cancelling difference is unsamplable: not judged */
	Ck c = {.v = v, .nt = gg->noutputs, .mp = &mp};
	c.first_t = nin - c.nt;
	c.in = calloc((size_t)nin + 1, sizeof *c.in);
	c.t0 = calloc((size_t)c.nt + 1, sizeof *c.t0);
	if (!c.in || !c.t0) {
		diag_env(d, "out of memory checking the gradient of %s", g->file);
		rc = -1;
		goto out;
	}
	int pairs = o->pairs > 0 ? o->pairs : 20;
	for (int p = 0; p < pairs && r->ok; p++) {
		InputSpec spec = {DIST_NORMAL, o->seed * 1000003u + (uint64_t)p, false};
		/* g's integer inputs as g's own draw makes them: an index table of g is read
		 * in v's gradient only in comparisons (x1[j] == u), where nothing bounds it,
		 * so a draw from v alone could put it outside the tensors g indexes with it */
		int ng = ir_ninputs(g);
		HostTensor *gin = calloc((size_t)ng + 1, sizeof *gin);
		IR_ASSERT(gin);
		rc = mp_make_inputs_opts(g, &spec, NULL, &o->mp, gin, d);
		for (int k = 0; k < ng; k++)
			if (g->tensors[ir_input_tensor(g, k)].dtype != DT_I32)
				ht_free(&gin[k]);
		HostTensor *given = calloc((size_t)nin + 1, sizeof *given);
		IR_ASSERT(given);
		for (int k = 0; k < ng && k < nin; k++)
			given[k] = gin[k];
		if (!rc)
			rc = mp_make_inputs_opts(v, &spec, given, &o->mp, c.in, d);
		for (int k = 0; k < ng; k++)
			ht_free(&gin[k]);
		free(gin);
		free(given);
		if (rc)
			goto out;
		if ((rc = mask_cotangents(gs, &c, d)))
			goto out;
		for (int t = 0; t < c.nt; t++) {
			HostTensor *src = &c.in[c.first_t + t];
			if (ht_alloc(&c.t0[t], DT_F64, src->rank, src->dims)) {
				diag_env(d, "out of memory checking the gradient of %s", g->file);
				rc = -1;
				goto out;
			}
			memcpy(c.t0[t].data, src->data, (size_t)src->n * sizeof(double));
		}
		double vals[3];
		if ((rc = eval_prefix(&c, INT64_MAX, vals, d)))
			goto out;
		r->pairs_done++;
		/* the directional derivative is not defined here (a pole, an overflow) */
		bool undefined = !isfinite(vals[1]);
		if (!undefined && !agree(o, vals) && isfinite(vals[0])) {
			/* the difference quotient at a step 2^12 times larger: where L is smooth
			 * it is the same to far below rtol (its error is O(h^2)); where it is not
			 * (a jump of ceil, floor, a comparison, at inputs exactly on it: edges and
			 * adversarial draws put them there) it scales with 1/h, and there is no
			 * derivative to judge: not judged, as a pole */
			if (!v2 && !(v2 = gr_dirgraph(g, gg, k - 12, d))) {
				rc = -1;
				goto out;
			}
			Ck c2 = c;
			c2.v = v2;
			double vals2[3];
			if ((rc = eval_prefix(&c2, INT64_MAX, vals2, d)))
				goto out;
			double rtol = o->rtol > 0 ? o->rtol : 0x1p-40;
			undefined = !(fabs(vals2[1] - vals[1]) <= rtol * (vals[2] + fabs(vals[1])) + 0x1p-900);
		}
		if (undefined) {
			r->undefined++;
			for (int i = 0; i < nin; i++)
				ht_free(&c.in[i]);
			for (int t = 0; t < c.nt; t++)
				ht_free(&c.t0[t]);
			continue;
		}
		double scale = vals[2] + fabs(vals[1]);
		double rel = scale > 0 ? fabs(vals[0] - vals[1]) / scale : 0;
		if (isfinite(rel) && rel > r->worst)
			r->worst = rel;
		r->ip = vals[0];
		r->cd = vals[1];
		if (!agree(o, vals)) {
			r->ok = false;
			r->pair = p;
			r->nonfinite = !isfinite(vals[0]);
			if ((rc = localize(&c, o, gg, vals, r, d)))
				goto out;
		}
		for (int i = 0; i < nin; i++)
			ht_free(&c.in[i]);
		for (int t = 0; t < c.nt; t++)
			ht_free(&c.t0[t]);
	}
out:
	if (c.in)
		for (int i = 0; i < nin; i++)
			ht_free(&c.in[i]);
	if (c.t0)
		for (int t = 0; t < c.nt; t++)
			ht_free(&c.t0[t]);
	free(c.in);
	free(c.t0);
	ir_free(gs);
	ir_free(v);
	if (v2)
		ir_free(v2);
	ir_free(gg);
	return rc;
}
