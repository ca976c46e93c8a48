/* compiler/map.c: the mapping stage's entry (map.h): one plan per program and target,
 * computed at the first request and kept with the program, so that a backend's emitter
 * and its runtime read the same record; the rules of each target live in compiler/map/.
 */
#include <stdlib.h>
#include <string.h>
#include "map.h"

struct MapCache {
	MapPlan **plans;
	int n;
};

MapCache *map_cache_new(void)
{
	MapCache *c = calloc(1, sizeof *c);
	IR_ASSERT(c);
	return c;
}

int map_type_bytes(KType t)
{
	return t == KT_BOOL || t == KT_F32 ? 4 : 8;
}

static void kernel_free(MapKernel *p)
{
	free(p->srole);
	free(p->sdepth);
	free(p->sbarrier);
	free(p->srep);
	free(p->sdist);
	free(p->vshare);
	free(p->vplace);
	free(p->voff);
	free(p->vslot);
	free(p->vheld);
	free(p->vinit);
	free(p->buse);
}

static void plan_free(MapPlan *p)
{
	for (int i = 0; i < p->nk; i++)
		kernel_free(&p->k[i]);
	free(p->k);
	free(p->xiv);
	free(p->xwide);
	free(p->xstage);
	free(p);
}

void map_free_all(MapCache *c)
{
	if (!c)
		return;
	for (int i = 0; i < c->n; i++)
		plan_free(c->plans[i]);
	free(c->plans);
	free(c);
}

static void kernel_init(const Kernels *k, MapKernel *p)
{
	size_t ns = (size_t)k->ns + 1, nv = (size_t)k->nvars + 1;
	memset(p, 0, sizeof *p);
	p->srole = calloc(ns, 1);
	p->sdepth = calloc(ns, 1);
	p->sbarrier = calloc(ns, 1);
	p->srep = calloc(ns, sizeof *p->srep);
	p->sdist = calloc(ns, sizeof *p->sdist);
	p->vshare = calloc(nv, 1);
	p->vplace = calloc(nv, 1);
	p->voff = calloc(nv, sizeof *p->voff);
	p->vslot = malloc(nv);
	p->vheld = calloc(nv, sizeof *p->vheld);
	p->vinit = calloc(nv, sizeof *p->vinit);
	p->buse = calloc((size_t)k->nbufs + 1, 1);
	IR_ASSERT(p->srole && p->sdepth && p->sbarrier && p->srep && p->sdist && p->vshare &&
		  p->vplace && p->voff && p->vslot && p->vheld && p->vinit && p->buse);
	memset(p->vslot, -1, nv);
	p->lane_arr = -1;
	p->gather_after = -1;
	p->stage_buf = -1;
}

static MapPlan *plan_new(const Kernels *k, const MapTarget *t)
{
	MapPlan *p = calloc(1, sizeof *p);
	IR_ASSERT(p);
	p->t = t;
	p->nk = k->nk;
	p->k = calloc((size_t)k->nk + 1, sizeof *p->k);
	IR_ASSERT(p->k);
	if (t->rules == MAP_RULES_REPLICATE || t->rules == MAP_RULES_OWNER) {
		p->xiv = calloc((size_t)k->nx + 1, sizeof *p->xiv);
		p->xwide = calloc((size_t)k->nx + 1, sizeof *p->xwide);
		IR_ASSERT(p->xiv && p->xwide);
		kir_int_ranges(k, p->xiv, p->xwide);
	}
	for (int i = 0; i < k->nk; i++) {
		kernel_init(k, &p->k[i]);
		switch (t->rules) {
		case MAP_RULES_REPLICATE: map_replicate(k, t, p, i, &p->k[i]); break;
		case MAP_RULES_BLOCK: map_block(k, t, i, &p->k[i]); break;
		case MAP_RULES_LANES: map_lanes(k, t, i, &p->k[i]); break;
		case MAP_RULES_OWNER: map_owner(k, t, p, i, &p->k[i]); break;
		}
		p->k[i].lead = i;
		p->k[i].nfused = 1;
		p->k[i].per_row = 1;
	}
	if (t->fuse_rows)
		map_fuse(k, t, p);
	if (t->stage_max > 0)
		map_stage(k, t, p);
	return p;
}

const MapPlan *map_plan(const Kernels *k, const MapTarget *t)
{
	MapCache *c = k->maps;
	IR_ASSERT(c && t);
	for (int i = 0; i < c->n; i++)
		if (c->plans[i]->t == t)
			return c->plans[i];
	c->plans = realloc(c->plans, (size_t)(c->n + 1) * sizeof *c->plans);
	IR_ASSERT(c->plans);
	c->plans[c->n] = plan_new(k, t);
	return c->plans[c->n++];
}

static bool reads_rec(const Kernels *k, int32_t x, int32_t v, uint32_t *seen, uint32_t stamp)
{
	if (x <= 0 || seen[x] == stamp)
		return false;
	seen[x] = stamp;
	const KExpr *e = &k->x[x];
	if ((e->kind == KX_VAR || e->kind == KX_ELEM) && e->v == v)
		return true;
	for (int i = 0; i < 4; i++)
		if (reads_rec(k, e->a[i], v, seen, stamp))
			return true;
	return false;
}

bool map_reads(const Kernels *k, int32_t x, int32_t v, uint32_t *seen, uint32_t *stamp)
{
	return reads_rec(k, x, v, seen, ++*stamp);
}
