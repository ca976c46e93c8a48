/* fuzz/inv.c: a case of `assay fuzz --invariance` (docs/decode.md, "Batch invariance").
 *
 * With FzRun.invariance, fz_check judges batch invariance instead of the graph's numbers:
 * one size of the graph is the batch, and the graph is run again at a smaller value of it
 * under the same schedule (verify/invariance.c: the leading slices of the full run's
 * inputs; only outputs whose exact rows do not depend on the batch are compared). Rows that
 * differ bit for bit are the verdict variant-mismatch ("batch invariance"): the compiler
 * lowered a fixed schedule differently for another batch. The batch and its smaller value
 * are drawn from the run's seed among the sizes that are an extent of some output and are
 * at least 2 (none: no records). The choice is a function of the graph and the seed, so
 * the reducer's candidates draw again (a size it shrinks to 1 leaves the choice). A batch
 * that does not apply (the graph does not check at the smaller value, or an index table's
 * values index the batch) gives no records either; the done line says why.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fuzz.h"

static uint64_t mix(uint64_t z)
{
	z += 0x9e3779b97f4a7c15ull;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* The batch size of g for seed (its index in g->sizes) and its smaller value; -1: none. */
int fz_inv_choice(const Graph *g, uint64_t seed, int64_t *value)
{
	int cand[64], n = 0;
	for (int s = 0; s < g->nsizes && n < 64; s++) {
		if (g->sizes[s].value < 2)
			continue;
		bool used = false;
		for (int o = 0; o < g->noutputs && !used; o++) {
			const Tensor *t = &g->tensors[g->outputs[o].tensor];
			for (int i = 0; i < t->rank; i++)
				used |= t->dims[i].size == s;
		}
		if (used)
			cand[n++] = s;
	}
	if (!n)
		return -1;
	uint64_t z = mix(seed ^ 0x1a7a1a7aull);
	int s = cand[z % (uint64_t)n];
	*value = 1 + (int64_t)(mix(z) % (uint64_t)(g->sizes[s].value - 1));
	return s;
}

typedef struct {
	FzResult *res;
} Ctx;

static void sink(void *ctx, const VfRecord *r)
{
	fz_sink_record(((Ctx *)ctx)->res, r);
}

int fz_check_inv(const Graph *g, const FzRun *r, FzResult *res, Diag *d)
{
	int64_t v;
	int s = fz_inv_choice(g, r->seed, &v);
	if (s < 0) {
		snprintf(res->inv_note, sizeof res->inv_note, "no batch: no size of 2 or more is an "
			 "output's extent");
		return 0;
	}
	snprintf(res->inv_note, sizeof res->inv_note, "%s=%lld of %lld", g->sizes[s].name,
		 (long long)v, (long long)g->sizes[s].value);
	char *text = ir_print(g);
	Ctx c = {res};
	VfInvOpts io = {.size = g->sizes[s].name, .values = {v}, .nvalues = 1};
	VfOpts vo = fz_vf_opts(r, sink, &c);
	VfInvSummary sum;
	Diag vd = {0};
	int rc = vf_invariance_text(text, g->file ? g->file : "fuzz.tg", NULL, 0, r->backends,
				    r->nbackends, &io, &vo, &sum, &vd);
	free(text);
	if (rc && !vd.env && vd.code == 2) {
		/* the batch does not apply to this graph: at the smaller value it does not check
		 * (a read in bounds only at the full extent), or an index table's values index the
		 * batch (the leading slice points outside it): no comparison, no verdict */
		snprintf(res->inv_note, sizeof res->inv_note, "%s=%lld does not apply: %.80s",
			 g->sizes[s].name, (long long)v, vd.msg ? vd.msg : "");
		for (char *p = res->inv_note; *p; p++)
			if (*p == '\n')
				*p = ' ';
		diag_clear(&vd);
		return 0;
	}
	if (rc)
		*d = vd;
	return rc;
}
