/* compiler/map.c: the mapping stage's entry (map.h): one plan per program and target,
 * computed at the first request and kept with the program, so that a backend's emitter
 * and its runtime read the same record; the rules of each target live in compiler/map/.
 */
#include <stdarg.h>
#include <stdio.h>
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
	free(p->buse);
}

static void plan_free(MapPlan *p)
{
	for (int i = 0; i < p->nk; i++)
		kernel_free(&p->k[i]);
	free(p->k);
	free(p->xiv);
	free(p->xwide);
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
	p->buse = calloc((size_t)k->nbufs + 1, 1);
	IR_ASSERT(p->srole && p->sdepth && p->sbarrier && p->srep && p->sdist && p->vshare &&
		  p->vplace && p->voff && p->vslot && p->buse);
	memset(p->vslot, -1, nv);
	p->lane_arr = -1;
	p->gather_after = -1;
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
	}
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

/* ------------------------------------------------------------ in words */

typedef struct {
	char *buf;
	size_t len, cap;
} Text;

static void put(Text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(Text *t, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	IR_ASSERT(n >= 0);
	if (t->len + (size_t)n + 1 > t->cap) {
		t->cap = 2 * (t->len + (size_t)n + 1);
		t->buf = realloc(t->buf, t->cap);
		IR_ASSERT(t->buf);
	}
	va_start(ap, fmt);
	vsnprintf(t->buf + t->len, t->cap - t->len, fmt, ap);
	va_end(ap);
	t->len += (size_t)n;
}

char *kir_plan_text(const Kernels *k, const MapTarget *tg)
{
	static const char *const modes[] = {"item", "group", "lanes"};
	static const char *const role[] = {"", "nest", "split", "tail", "swap", "lane"};
	static const char *const share[] = {"own", "shared", "part", "merge", "flag"};
	static const char *const place[] = {"private", "shared", "scratch", "scratch_group"};
	const MapPlan *mp = map_plan(k, tg);
	Text t = {0};
	put(&t, "%s", "");
	for (int i = 0; i < mp->nk; i++) {
		const MapKernel *p = &mp->k[i];
		put(&t, "kernel %d: %s wg=%d groups=%lld", i, modes[p->mode], p->wg, (long long)p->groups);
		if (p->split)
			put(&t, " split=%lld", (long long)p->split);
		if (p->shared_bytes)
			put(&t, " shared=%lld", (long long)p->shared_bytes);
		if (p->scratch)
			put(&t, " scratch=%lld", (long long)p->scratch);
		if (p->scratch_group)
			put(&t, " scratch_group=%lld", (long long)p->scratch_group);
		put(&t, "%s%s%s\n", p->i32 ? " i32" : "", p->f64 ? " f64" : "", p->err ? " err" : "");
		const char *lead = "  roles:";
		for (int32_t s = 1; s < k->ns; s++)
			if (p->srole[s]) {
				put(&t, "%s %s:%d", lead, role[p->srole[s]], s);
				if (p->srole[s] == MAP_S_NEST)
					put(&t, "/%d", p->sdepth[s]);
				lead = "";
			}
		if (!*lead)
			put(&t, "\n");
		lead = "  locals:";
		for (int32_t v = 0; v < k->nvars; v++)
			if (p->vshare[v] || p->vplace[v]) {
				put(&t, "%s v%d:%s/%s", lead, v, share[p->vshare[v]], place[p->vplace[v]]);
				lead = "";
			}
		if (!*lead)
			put(&t, "\n");
		lead = "  binds:";
		for (int b = 0; b < k->nbufs; b++)
			if (p->buse[b]) {
				put(&t, "%s b%d:%s%s", lead, b, p->buse[b] & 1 ? "l" : "", p->buse[b] & 2 ? "s" : "");
				lead = "";
			}
		if (!*lead)
			put(&t, "\n");
	}
	return t.buf;
}
