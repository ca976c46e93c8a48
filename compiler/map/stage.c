/* compiler/map/stage.c: the mapping stage's row staging (map.h, MapTarget.stage_max): in a
 * fused launch of row kernels (map/fuse.c), the row of an input that several phases read
 * is copied into work-group memory once per row, with wide coalesced loads, and every
 * load proved to fall in it reads the copy. Softmax reads its row three times (the
 * maximum, the sum, the normalised row) and layernorm three (the mean, the variance, the
 * row): from memory once, then from the copy.
 *
 * A load of buffer b (an input: no kernel stores it) in member j is staged when its index
 * is o * s + rest, o the member's row origin (its first parallel dimension: the lead's
 * row, tile 1, so o is the launch's row index it), rest not reading o and its interval
 * (kir_int_ranges: loops span their bounds, origins their extents) non-empty inside
 * [0, s), and every row's slice [it * s, it * s + s) inside the buffer. The staged value
 * is b[it * s + rest] itself: the copy changes where a load reads, never what. A load
 * not proved keeps reading memory. The buffer staged is the one whose proved loads sit in
 * the most phases (at least two: one phase alone gains nothing), its slice within
 * stage_max bytes beside the launch's other work-group memory. Leads of one parallel
 * dimension only (a row is one index). cuda spells it (its emitter's load hook and the
 * copy at the start of each row). opencl did too, element by element into __local
 * memory, and was dropped: on the H200 its bf16 rows went from 892 and 1355 GB/s (softmax,
 * layernorm) to 797 and 955, and an f32 row of 8192 does not fit OpenCL's guaranteed
 * 32 KiB beside the partials.
 */
#include <stdlib.h>
#include <string.h>
#include "map.h"

typedef struct {
	const Kernels *k;
	const KIvl *iv;
	uint8_t *seen;        /* per expression: visited in this member */
	int32_t origin;       /* the member's row origin variable */
	int32_t buf;          /* the candidate buffer, or -1: collect candidates */
	int64_t s;            /* its slice */
	int32_t *mark;        /* per expression: the proved load's rest (NULL: count only) */
	int hits;
	uint32_t *rseen;      /* per expression: map_reads's stamps */
	uint32_t rstamp;
	int64_t *cand_s;      /* per buffer: its proved slice (the first found), or 0 */
	int *cand_phase;      /* per buffer: phases with a proved load */
	bool *in_phase;       /* per buffer: one in the member being walked */
} S;

/* Is index x = origin * s + rest with rest's values inside [0, s)? Sets *s. */
static bool row_index(S *a, int32_t x, int64_t *s, int32_t *rest)
{
	const KExpr *e = &a->k->x[x];
	if (e->kind != KX_OP || e->op != OP_ADD || e->type != KT_INT)
		return false;
	for (int side = 0; side < 2; side++) {
		const KExpr *m = &a->k->x[e->a[side]];
		int32_t r = e->a[1 - side];
		if (m->kind != KX_OP || m->op != OP_MUL)
			continue;
		const KExpr *l = &a->k->x[m->a[0]], *c = &a->k->x[m->a[1]];
		if (l->kind == KX_ICONST && c->kind == KX_VAR) {
			const KExpr *t = l;
			l = c;
			c = t;
		}
		if (l->kind != KX_VAR || l->v != a->origin || c->kind != KX_ICONST || c->i <= 0)
			continue;
		KIvl iv = a->iv[r];
		if (map_reads(a->k, r, a->origin, a->rseen, &a->rstamp) || iv.hi < iv.lo || iv.lo < 0 || iv.hi >= c->i)
			continue;
		*s = c->i;
		*rest = r;
		return true;
	}
	return false;
}

static void expr(S *a, int32_t x)
{
	if (x <= 0 || a->seen[x])
		return;
	a->seen[x] = 1;
	const KExpr *e = &a->k->x[x];
	for (int i = 0; i < 4; i++)
		expr(a, e->a[i]);
	if (e->kind != KX_LOAD || !a->k->bufs[e->v].input)
		return;
	int64_t s;
	int32_t rest;
	if (!row_index(a, e->a[0], &s, &rest))
		return;
	if (a->buf < 0) {
		if (!a->cand_s[e->v] || a->cand_s[e->v] == s) {
			a->cand_s[e->v] = s;
			if (!a->in_phase[e->v])
				a->cand_phase[e->v]++;
			a->in_phase[e->v] = true;
		}
	} else if (e->v == a->buf && s == a->s) {
		a->mark[x] = rest;
		a->hits++;
	}
}

static void stmts(S *a, int32_t s)
{
	for (; s > 0; s = a->k->s[s].next) {
		const KStmt *t = &a->k->s[s];
		expr(a, t->a);
		expr(a, t->b);
		stmts(a, t->body);
		stmts(a, t->body2);
	}
}

static void member(S *a, int j)
{
	memset(a->seen, 0, (size_t)a->k->nx + 1);
	memset(a->in_phase, 0, (size_t)a->k->nbufs * sizeof *a->in_phase);
	a->origin = a->k->k[j].par[0].origin;
	stmts(a, a->k->k[j].body);
}

/* Is kernel i the lead of a fused launch of rows map_stage can stage? */
static bool row_launch(const Kernels *k, const MapPlan *p, int i, int64_t *shared)
{
	const MapKernel *L = &p->k[i];
	const Kernel *lead = &k->k[i];
	if (L->nfused < 2 || L->mode != MAP_GROUP || lead->npar != 1 || lead->par[0].tile != 1)
		return false;
	*shared = 0;
	for (int j = i; j < i + L->nfused; j++) {
		if (k->k[j].npar < 1 || k->k[j].par[0].tile != 1)
			return false;
		*shared += p->k[j].shared_bytes;
	}
	return true;
}

void map_stage(const Kernels *k, const MapTarget *t, MapPlan *p)
{
	p->xstage = calloc((size_t)k->nx + 1, sizeof *p->xstage);
	IR_ASSERT(p->xstage);
	int64_t shared;
	bool any = false;
	for (int i = 0; i < k->nk && !any; i += p->k[i].nfused)
		any = row_launch(k, p, i, &shared);
	if (!any)
		return;   /* no fused row launch: no intervals to compute */
	size_t nb = (size_t)k->nbufs + 1;
	KIvl *iv = calloc((size_t)k->nx + 1, sizeof *iv);
	bool *wide = calloc((size_t)k->nx + 1, sizeof *wide);
	uint8_t *seen = calloc((size_t)k->nx + 1, 1);
	uint32_t *rseen = calloc((size_t)k->nx + 1, sizeof *rseen);
	int64_t *cand_s = malloc(nb * sizeof *cand_s);
	int *cand_phase = malloc(nb * sizeof *cand_phase);
	bool *in_phase = malloc(nb * sizeof *in_phase);
	IR_ASSERT(iv && wide && seen && rseen && cand_s && cand_phase && in_phase);
	kir_int_ranges(k, iv, wide);
	for (int i = 0; i < k->nk; i += p->k[i].nfused) {
		MapKernel *L = &p->k[i];
		const Kernel *lead = &k->k[i];
		if (!row_launch(k, p, i, &shared))
			continue;
		memset(cand_s, 0, nb * sizeof *cand_s);
		memset(cand_phase, 0, nb * sizeof *cand_phase);
		S a = {.k = k, .iv = iv, .seen = seen, .rseen = rseen, .buf = -1, .cand_s = cand_s,
		       .cand_phase = cand_phase, .in_phase = in_phase};
		for (int j = i; j < i + L->nfused; j++)
			member(&a, j);
		int best = -1;
		for (int b = 0; b < k->nbufs; b++) {
			int64_t bytes = a.cand_s[b] * (int64_t)dt_info(k->bufs[b].fmt)->bytes;
			if (a.cand_phase[b] < 2 || bytes + ((shared + 15) & ~(int64_t)15) > t->stage_max ||
			    (lead->nitems - 1) * a.cand_s[b] + a.cand_s[b] > k->bufs[b].n)
				continue;
			if (best < 0 || a.cand_phase[b] > a.cand_phase[best])
				best = b;
		}
		if (best < 0)
			continue;
		a.buf = best;
		a.s = a.cand_s[best];
		a.mark = p->xstage;
		for (int j = i; j < i + L->nfused; j++)
			member(&a, j);
		L->stage_buf = best;
		L->stage_len = a.s;
		L->stage_loads = a.hits;
		COV(cuda_stage_row);
	}
	free(iv);
	free(wide);
	free(seen);
	free(rseen);
	free(cand_s);
	free(cand_phase);
	free(in_phase);
}
