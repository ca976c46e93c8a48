/* compiler/map/block.c: the mapping stage's rules for targets that run an item per thread
 * or per block (MAP_RULES_BLOCK: the cuda backend; map.h compares the four rule sets): how
 * each kernel of the kernel IR maps onto threads and blocks (the model is in cuda/cuda.h),
 * and where each of its locals lives.
 *
 * The analysis walks the item body in "uniform" context and marks distributable
 * constructs met there:
 * - a par loop (kir.h: independent iterations), together with the par loops perfectly
 *   nested in it whose bounds do not depend on the outer ones (a tile's point loops: the
 *   nest is collapsed, so a 4 x 8 tile gives 32 threads work);
 * - a split reduction as lower.c builds it: `for c in [lo, hi) { for s in [0, S) {B} }`
 *   followed by the tail `for s2 in [0, r) {B'}`, where S is the definition's split
 *   factor. Partial s owns everything B touches outside itself: arrays only at index s
 *   (or, for pairwise term buffers, at s * cap + cnt[s]), scalars only set to constants
 *   (the "any term" flag). Under that check, running partial s's chunks and then its tail
 *   on one thread gives each partial its terms in the IR's order, and the combine that
 *   follows is the IR's own code.
 * A construct is accepted only if every scalar it writes that is declared outside it is
 * written with a constant (idempotent, so concurrent writes agree).
 *
 * A split's partial arrays that its chunk body touches only at [partial] are held in a
 * register across the chunks (MapKernel.vheld; the cuda emitter reads them once before
 * and writes them once after).
 *
 * A kernel becomes MAP_GROUP (a block per item) when it has a split reduction (the schedule asked for a
 * parallel reduction) or a par nest of at least 32 known iterations (or an unknown
 * number); otherwise MAP_ITEM (one thread per item beats idle lanes). The block size is
 * the largest construct's trip count rounded up to a power of two within [32, 256]
 * (cuda_target's wg_min and wg_max).
 */
#include <stdlib.h>
#include <string.h>
#include "map.h"

typedef struct {
	const Kernels *k;
	const MapTarget *t;
	MapKernel *p;
	uint8_t *decl_dist;    /* per var: declared inside a distributed construct */
	uint8_t *wr_dist;      /* per var: written inside one */
	uint32_t *seen;        /* per expression: visit stamp */
	uint32_t stamp;
	int64_t split;         /* the kernel definition's split factor (0: none) */
	int64_t maxtrip;       /* largest known trip count; -1 once one is unknown */
	bool any_split, any_nest;
} A;

/* ------------------------------------------------------------ expression queries */

/* Does expression x read variable v (as a scalar or an array)? */
static bool uses(A *a, int32_t x, int32_t v)
{
	return map_reads(a->k, x, v, a->seen, &a->stamp);
}

/* Does expression x read any variable flagged in set? */
static bool uses_set_rec(A *a, int32_t x, const uint8_t *set)
{
	if (x < 0 || a->seen[x] == a->stamp)
		return false;
	a->seen[x] = a->stamp;
	const KExpr *e = &a->k->x[x];
	if ((e->kind == KX_VAR || e->kind == KX_ELEM) && set[e->v])
		return true;
	for (int i = 0; i < 4; i++)
		if (uses_set_rec(a, e->a[i], set))
			return true;
	return false;
}

static bool uses_set(A *a, int32_t x, const uint8_t *set)
{
	a->stamp++;
	return uses_set_rec(a, x, set);
}

static bool has_check_rec(A *a, int32_t x)
{
	if (x < 0 || a->seen[x] == a->stamp)
		return false;
	a->seen[x] = a->stamp;
	const KExpr *e = &a->k->x[x];
	if (e->kind == KX_CHECK)
		return true;
	for (int i = 0; i < 4; i++)
		if (has_check_rec(a, e->a[i]))
			return true;
	return false;
}

static bool has_check(A *a, int32_t x)
{
	a->stamp++;
	return has_check_rec(a, x);
}

static bool is_const(const Kernels *k, int32_t x)
{
	return x >= 0 && (k->x[x].kind == KX_ICONST || k->x[x].kind == KX_FCONST);
}

static bool is_var(const Kernels *k, int32_t x, int32_t v)
{
	return x >= 0 && k->x[x].kind == KX_VAR && k->x[x].v == v;
}

/* ------------------------------------------------------------ held partials */

/* Marks in acc[] the arrays expression x reads, and in bad[] those read at another index
 * than variable sv. */
static void elems_expr(const Kernels *k, int32_t x, int32_t sv, uint8_t *acc, uint8_t *bad)
{
	if (x <= 0)
		return;
	const KExpr *e = &k->x[x];
	if (e->kind == KX_ELEM) {
		acc[e->v] = 1;
		if (k->x[e->a[0]].kind != KX_VAR || k->x[e->a[0]].v != sv)
			bad[e->v] = 1;
	}
	for (int i = 0; i < 4; i++)
		elems_expr(k, e->a[i], sv, acc, bad);
}

static void elems(const Kernels *k, int32_t s, int32_t sv, uint8_t *acc, uint8_t *bad)
{
	for (; s > 0; s = k->s[s].next) {
		const KStmt *t = &k->s[s];
		elems_expr(k, t->a, sv, acc, bad);
		elems_expr(k, t->b, sv, acc, bad);
		if (t->kind == KS_TREE || ((t->kind == KS_SET) && k->vars[t->v].n > 0)) {
			acc[t->kind == KS_TREE ? t->c : t->v] = 1;
			if (t->kind == KS_TREE || k->x[t->a].kind != KX_VAR || k->x[t->a].v != sv)
				bad[t->kind == KS_TREE ? t->c : t->v] = 1;
		}
		elems(k, t->body, sv, acc, bad);
		elems(k, t->body2, sv, acc, bad);
	}
}

/* The shared arrays split statement s's chunk body (partial variable sv) touches only at
 * [sv]: the partial owns that element (body_owned), so it may be held in a register across
 * the chunks (read before them, written back after): MapKernel.vheld = s. */
static void hold_partials(const Kernels *k, MapKernel *p, int32_t s, int32_t body, int32_t sv)
{
	size_t n = (size_t)k->nvars + 1;
	uint8_t *acc = calloc(n, 1), *bad = calloc(n, 1);
	IR_ASSERT(acc && bad);
	elems(k, body, sv, acc, bad);
	for (int32_t v = 0; v < k->nvars; v++)
		if (acc[v] && !bad[v] && k->vars[v].n > 0 &&
		    (p->vplace[v] == MAP_P_SHARED || p->vplace[v] == MAP_P_SCRATCH_GROUP))
			p->vheld[v] = s;
	free(acc);
	free(bad);
}

static bool touches(A *a, int32_t s, int32_t v);

/* Does statement u (its bodies included) touch local v: set it, reduce it, loop over it or
 * read it? (Its declaration is not a touch.) */
static bool stmt_touches(A *a, int32_t u, int32_t v)
{
	const KStmt *t = &a->k->s[u];
	bool var = t->kind == KS_SET || t->kind == KS_TREE || t->kind == KS_LOOP;
	if ((var && t->v == v) || (t->kind == KS_TREE && t->c == v))
		return true;
	if ((t->a >= 0 && uses(a, t->a, v)) || (t->b >= 0 && uses(a, t->b, v)))
		return true;
	return touches(a, t->body, v) || touches(a, t->body2, v);
}

/* Does list s touch local v? */
static bool touches(A *a, int32_t s, int32_t v)
{
	for (; s > 0; s = a->k->s[s].next)
		if (stmt_touches(a, s, v))
			return true;
	return false;
}

static bool same_const(const Kernels *k, int32_t x, int32_t y)
{
	const KExpr *p = &k->x[x], *q = &k->x[y];
	if (p->kind != q->kind || p->type != q->type)
		return false;
	return p->kind == KX_ICONST ? p->i == q->i : memcmp(&p->f, &q->f, sizeof p->f) == 0;
}

/* Held array v of split statement sp, in the list that starts at first: when the
 * statements before sp set each of its elements once, at a constant index, to one
 * constant, and nothing else there touches it, those sets are the partials' initial
 * values: MAP_S_HELD_INIT, and MapKernel.vinit the value. Each partial's thread starts
 * its register from it (the split's partial loop covers every partial, and writes each
 * back), where thread 0 set every element before a barrier. */
static void held_init(A *a, int32_t first, int32_t sp, int32_t v)
{
	const Kernels *k = a->k;
	int64_t n = k->vars[v].n, got = 0;
	int32_t val = 0;
	uint8_t *seen = calloc((size_t)n + 1, 1);
	IR_ASSERT(seen);
	for (int32_t u = first; u > 0 && u != sp; u = k->s[u].next) {
		const KStmt *t = &k->s[u];
		if (t->kind == KS_SET && t->v == v && t->a >= 0) {
			const KExpr *ix = &k->x[t->a], *b = &k->x[t->b];
			if (ix->kind != KX_ICONST || ix->i < 0 || ix->i >= n || seen[ix->i] ||
			    (b->kind != KX_ICONST && b->kind != KX_FCONST) || (val && !same_const(k, val, t->b)) ||
			    uses(a, t->b, v))
				goto out;
			seen[ix->i] = 1;
			val = t->b;
			got++;
		} else if (stmt_touches(a, u, v)) {
			goto out;
		}
	}
	if (got != n || !val)
		goto out;
	for (int32_t u = first; u > 0 && u != sp; u = k->s[u].next)
		if (k->s[u].kind == KS_SET && k->s[u].v == v)
			a->p->srole[u] = MAP_S_HELD_INIT;
	a->p->vinit[v] = val;
	COV(cuda_held_init);
out:
	free(seen);
}

/* held_init for every held array of every split of list s (and the lists inside it). */
static void held_inits(A *a, int32_t s)
{
	const Kernels *k = a->k;
	for (int32_t u = s; u > 0; u = k->s[u].next) {
		if (a->p->srole[u] == MAP_S_SPLIT)
			for (int32_t v = 0; v < k->nvars; v++)
				if (a->p->vheld[v] == u)
					held_init(a, s, u, v);
		held_inits(a, k->s[u].body);
		held_inits(a, k->s[u].body2);
	}
}

/* ------------------------------------------------------------ statement sets */

/* Marks in flag[] every variable declared (by KS_DECL or as a loop variable) in list s. */
static void decls(const Kernels *k, int32_t s, uint8_t *flag)
{
	for (; s > 0; s = k->s[s].next) {
		const KStmt *t = &k->s[s];
		if (t->kind == KS_DECL || t->kind == KS_LOOP)
			flag[t->v] = 1;
		decls(k, t->body, flag);
		decls(k, t->body2, flag);
	}
}

/* Marks in flag[] every variable written in list s (sets, trees, loop variables). */
static void writes(const Kernels *k, int32_t s, uint8_t *flag)
{
	for (; s > 0; s = k->s[s].next) {
		const KStmt *t = &k->s[s];
		if (t->kind == KS_SET || t->kind == KS_TREE || t->kind == KS_LOOP)
			flag[t->v] = 1;
		writes(k, t->body, flag);
		writes(k, t->body2, flag);
	}
}

/* Every scalar that list s writes and does not declare is set to constants only. */
static bool scalars_idempotent(const Kernels *k, int32_t s, const uint8_t *inner)
{
	for (; s > 0; s = k->s[s].next) {
		const KStmt *t = &k->s[s];
		if (t->kind == KS_TREE && !inner[t->v])
			return false;
		if (t->kind == KS_SET && !inner[t->v] && t->a < 0 && !is_const(k, t->b))
			return false;
		if (!scalars_idempotent(k, t->body, inner) || !scalars_idempotent(k, t->body2, inner))
			return false;
	}
	return true;
}

static bool construct_ok(A *a, int32_t body)
{
	uint8_t *inner = calloc((size_t)a->k->nvars + 1, 1);
	IR_ASSERT(inner);
	decls(a->k, body, inner);
	bool ok = scalars_idempotent(a->k, body, inner);
	free(inner);
	return ok;
}

/* ------------------------------------------------------------ split reductions */

/* Is index expression x owned by partial sv: sv itself, or sv * C + w[sv], or sv + w[sv]? */
static bool owned_index(const Kernels *k, int32_t x, int32_t sv)
{
	if (is_var(k, x, sv))
		return true;
	const KExpr *e = &k->x[x];
	if (e->kind != KX_OP || e->op != OP_ADD)
		return false;
	const KExpr *r = &k->x[e->a[1]];
	if (r->kind != KX_ELEM || !is_var(k, r->a[0], sv))
		return false;
	if (is_var(k, e->a[0], sv))
		return true;
	const KExpr *l = &k->x[e->a[0]];
	return l->kind == KX_OP && l->op == OP_MUL && is_var(k, l->a[0], sv) && is_const(k, l->a[1]);
}

/* Every array element expression x reads, of an array not in inner, is at an owned index. */
static bool reads_owned(A *a, int32_t x, int32_t sv, const uint8_t *inner)
{
	if (x < 0)
		return true;
	const KExpr *e = &a->k->x[x];
	if (e->kind == KX_ELEM && !inner[e->v] && !owned_index(a->k, e->a[0], sv))
		return false;
	for (int i = 0; i < 4; i++)
		if (!reads_owned(a, e->a[i], sv, inner))
			return false;
	return true;
}

/* Partial sv owns every outside local that list s touches (flags: the outside scalars
 * that the construct writes, which it must not read). */
static bool partial_owned(A *a, int32_t s, int32_t sv, const uint8_t *inner, const uint8_t *flags)
{
	const Kernels *k = a->k;
	for (; s > 0; s = k->s[s].next) {
		const KStmt *t = &k->s[s];
		if (t->kind == KS_TREE)
			return false;
		if (t->kind == KS_SET && !inner[t->v]) {
			bool arr = k->vars[t->v].n > 0;
			if (arr ? !owned_index(k, t->a, sv) : !is_const(k, t->b))
				return false;
		}
		if (!reads_owned(a, t->a, sv, inner) || !reads_owned(a, t->b, sv, inner))
			return false;
		if (uses_set(a, t->a, flags) || uses_set(a, t->b, flags))
			return false;
		if (!partial_owned(a, t->body, sv, inner, flags) ||
		    !partial_owned(a, t->body2, sv, inner, flags))
			return false;
	}
	return true;
}

static bool body_owned(A *a, int32_t body, int32_t sv)
{
	size_t n = (size_t)a->k->nvars + 1;
	uint8_t *inner = calloc(n, 1), *w = calloc(n, 1);
	IR_ASSERT(inner && w);
	decls(a->k, body, inner);
	writes(a->k, body, w);
	for (int32_t v = 0; v < a->k->nvars; v++)
		w[v] = w[v] && !inner[v] && a->k->vars[v].n == 0;
	bool ok = partial_owned(a, body, sv, inner, w);
	free(inner);
	free(w);
	return ok;
}

/* Is statement s the chunk loop of a split reduction (its tail is s's next)? */
static bool split_at(A *a, int32_t s)
{
	const Kernels *k = a->k;
	const KStmt *c = &k->s[s];
	if (a->split <= 1 || c->kind != KS_LOOP || c->par || c->body <= 0 || c->next <= 0)
		return false;
	const KStmt *in = &k->s[c->body], *tl = &k->s[c->next];
	if (in->kind != KS_LOOP || in->par || in->next > 0 || !is_const(k, in->a) ||
	    k->x[in->a].i != 0 || !is_const(k, in->b) || k->x[in->b].i != a->split)
		return false;
	if (tl->kind != KS_LOOP || tl->par || !is_const(k, tl->a) || k->x[tl->a].i != 0)
		return false;
	/* the tail's bound may be evaluated before the chunks run */
	uint8_t *w = calloc((size_t)k->nvars + 1, 1);
	IR_ASSERT(w);
	w[c->v] = 1;
	writes(k, c->body, w);
	bool indep = !uses_set(a, tl->b, w);
	free(w);
	return indep && body_owned(a, in->body, in->v) && body_owned(a, tl->body, tl->v);
}

/* ------------------------------------------------------------ par nests */

/* The depth of the collapsible par nest at s, and its trip count (-1: unknown). */
static int nest_depth(A *a, int32_t s, int64_t *trip)
{
	const Kernels *k = a->k;
	int d = 1;
	int32_t outer[IR_MAXRANK + 8];
	*trip = 1;
	for (const KStmt *t = &k->s[s];; t = &k->s[t->body], d++) {
		bool known = is_const(k, t->a) && is_const(k, t->b);
		int64_t n = known ? k->x[t->b].i - k->x[t->a].i : -1;
		*trip = *trip < 0 || n < 0 ? -1 : *trip * (n > 0 ? n : 0);
		outer[d - 1] = t->v;
		const KStmt *in = t->body > 0 ? &k->s[t->body] : NULL;
		if (!in || in->kind != KS_LOOP || !in->par || in->next > 0 || d >= (int)ARRAY_LEN(outer))
			return d;
		bool indep = true;
		for (int i = 0; i < d && indep; i++)
			indep = !uses(a, in->a, outer[i]) && !uses(a, in->b, outer[i]);
		if (!indep || has_check(a, in->a) || has_check(a, in->b))
			return d;
	}
}

/* ------------------------------------------------------------ the walk */

static void trip_seen(A *a, int64_t t)
{
	if (t < 0 || a->maxtrip < 0)
		a->maxtrip = -1;
	else if (t > a->maxtrip)
		a->maxtrip = t;
}

static void walk(A *a, int32_t s, bool dist);

static void walk_dist(A *a, int32_t s)
{
	walk(a, s, true);
}

static void walk(A *a, int32_t s, bool dist)
{
	const Kernels *k = a->k;
	for (; s > 0; s = k->s[s].next) {
		const KStmt *t = &k->s[s];
		if (dist) {
			if (t->kind == KS_DECL || t->kind == KS_LOOP)
				a->decl_dist[t->v] = 1;
			if (t->kind == KS_SET || t->kind == KS_TREE)
				a->wr_dist[t->v] = 1;
		} else if (t->kind == KS_LOOP && t->par && construct_ok(a, t->body)) {
			int64_t trip;
			int d = nest_depth(a, s, &trip);
			a->p->srole[s] = MAP_S_NEST;
			a->p->sdepth[s] = (uint8_t)d;
			a->any_nest = true;
			trip_seen(a, trip);
			const KStmt *in = t;
			for (int i = 1; i < d; i++)
				in = &k->s[in->body];
			walk_dist(a, in->body);
			continue;
		} else if (split_at(a, s)) {
			const KStmt *in = &k->s[t->body], *tl = &k->s[t->next];
			a->p->srole[s] = MAP_S_SPLIT;
			a->p->srole[t->next] = MAP_S_SPLIT_TAIL;
			a->p->split = a->split;
			a->any_split = true;
			trip_seen(a, a->split);
			walk_dist(a, in->body);
			walk_dist(a, tl->body);
			s = t->next;   /* the tail is part of the construct */
			continue;
		}
		walk(a, t->body, dist);
		walk(a, t->body2, dist);
	}
}

/* ------------------------------------------------------------ storage */

static int64_t align8(int64_t n)
{
	return (n + 7) & ~(int64_t)7;
}

/* Variables declared or used by kernel ki's body (its own, as ids are program-wide). */
static void kernel_vars(const Kernels *k, int32_t s, uint8_t *mine)
{
	for (; s > 0; s = k->s[s].next) {
		const KStmt *t = &k->s[s];
		if (t->kind == KS_DECL || t->kind == KS_LOOP || t->kind == KS_SET || t->kind == KS_TREE)
			mine[t->v] = 1;
		if (t->kind == KS_TREE)
			mine[t->c] = 1;
		kernel_vars(k, t->body, mine);
		kernel_vars(k, t->body2, mine);
	}
}

static void place(A *a, const uint8_t *mine)
{
	const Kernels *k = a->k;
	MapKernel *p = a->p;
	for (int32_t v = 0; v < k->nvars; v++) {
		const KVar *V = &k->vars[v];
		if (!mine[v] || V->loop)
			continue;
		int64_t bytes = (V->n ? V->n : 1) * map_type_bytes(V->type);
		bool shared = p->mode == MAP_GROUP && a->wr_dist[v] && !a->decl_dist[v];
		if (shared && p->shared_bytes + align8(bytes) <= a->t->shared_max) {
			COV(cuda_shared);
			p->vshare[v] = MAP_V_SHARED;
			p->vplace[v] = MAP_P_SHARED;
			p->shared_bytes += align8(bytes);
		} else if (shared) {
			COV(cuda_scratch_block);
			p->vshare[v] = MAP_V_SHARED;
			p->vplace[v] = MAP_P_SCRATCH_GROUP;
			p->voff[v] = p->scratch_group;
			p->scratch_group += align8(bytes);
		} else if (V->n > 0 && bytes > a->t->private_bytes) {
			COV(cuda_scratch_thread);
			p->vplace[v] = MAP_P_SCRATCH;
			p->voff[v] = p->scratch;
			p->scratch += align8(bytes);
		}
	}
}

void map_block(const Kernels *k, const MapTarget *tg, int ki, MapKernel *p)
{
	const Kernel *kn = &k->k[ki];
	size_t nv = (size_t)k->nvars + 1, ns = (size_t)k->ns + 1;
	A a = {.k = k, .t = tg, .p = p};
	a.decl_dist = calloc(nv, 1);
	a.wr_dist = calloc(nv, 1);
	a.seen = calloc((size_t)k->nx + 1, sizeof *a.seen);
	uint8_t *mine = calloc(nv, 1);
	IR_ASSERT(a.decl_dist && a.wr_dist && a.seen && mine);
	const DefSched *ds = &k->sched.defs[kn->def];
	for (int r = 0; r < IR_MAXRED; r++)
		if (ds->split[r] > 1)
			a.split = ds->split[r];
	walk(&a, kn->body, false);
	const char *force = getenv("ASSAY_CUDA_MODE");
	bool block = a.any_split || (a.any_nest && (a.maxtrip < 0 || a.maxtrip >= tg->wg_min));
	if (force && strcmp(force, "block") == 0)
		block = a.any_split || a.any_nest;
	else if (force && strcmp(force, "thread") == 0)
		block = false;
	if (block) {
		int64_t t = a.maxtrip < 0 ? tg->wg_max : a.maxtrip;
		p->mode = MAP_GROUP;
		p->wg = tg->wg_min;
		while (p->wg < t && p->wg < tg->wg_max)
			p->wg *= 2;
		p->groups = kn->nitems;
		COV(cuda_block);
		if (p->wg > 32)
			COV(cuda_threads_wide);
		for (int32_t s = 1; s < k->ns; s++) {
			if (p->srole[s] == MAP_S_NEST)
				COV(cuda_nest);
			if (p->srole[s] == MAP_S_NEST && p->sdepth[s] >= 2)
				COV(cuda_nest_collapsed);
			if (p->srole[s] == MAP_S_SPLIT)
				COV(cuda_split);
		}
	} else {
		p->mode = MAP_ITEM;
		p->wg = tg->item_wg;
		p->groups = (kn->nitems + p->wg - 1) / p->wg;
		memset(p->srole, 0, ns);
		p->split = 0;
	}
	kernel_vars(k, kn->body, mine);
	place(&a, mine);
	for (int32_t s = 1; p->mode == MAP_GROUP && s < k->ns; s++)
		if (p->srole[s] == MAP_S_SPLIT)
			hold_partials(k, p, s, k->s[k->s[s].body].body, k->s[k->s[s].body].v);
	if (p->mode == MAP_GROUP)
		held_inits(&a, kn->body);
	free(mine);
	free(a.decl_dist);
	free(a.wr_dist);
	free(a.seen);
}
