/* compiler/map/lanes.c: the mapping stage's rules for targets that deal proved-independent
 * nests to the lanes of a work-group (MAP_RULES_LANES: the opencl backend; map.h compares
 * the four rule sets): how one kernel of the kernel IR maps onto work-groups (the model is
 * opencl/opencl.h's), which loops are dealt to the lanes, which local variables the lanes
 * share, and where each variable is stored.
 *
 * A loop nest may be dealt to lanes when its iterations are independent. For loops marked
 * par (a tile's point loops, a topk's output loop) the kernel IR promises it for buffer
 * stores; for every loop, this file proves it for local variables declared outside the nest
 * (the only state lanes could share): such a variable may be
 * - a scalar written only with one constant and never read inside (a "some term was
 *   added" flag), or
 * - an array accessed only at index expressions that give different iterations of the
 *   nest disjoint elements: a Horner form ((v0 * c1 + v1) * c2 + v2 ...) over loop
 *   variables that include the nest's, each later variable provably in [0, c) (its loop
 *   starts at 0 and stops at a constant <= c), plus terms invariant in the nest; or the
 *   pairwise-reduction slot h * cap + count[h] with h such a form and count an array the
 *   nest owns the same way. The second relies on the lowering's invariant that a partial
 *   never receives more than cap terms (lower.c sizes cap so); everything else is proved.
 * Buffer stores in a loop not marked par, a scalar written with a computed value, a read of
 * a written scalar or a pairwise tree over a written array disqualify a nest.
 *
 * Which nests are used: a uniform loop is tried as the head of a nest of perfectly nested
 * par loops (collapsed, as deep as legal), then as the chunk loop around a distributable
 * loop (SM_SWAP: a split reduction's partial loop). A nest whose shared variables are also
 * written by uniform code inside a uniform loop is vetoed (it would cost two barriers per
 * such write: a topk's list initialised in parallel, then updated term by term), and the
 * marking is redone until nothing more is vetoed. A kernel with no nest, or whose nests
 * have fewer than two iterations by the static estimate, runs without lanes.
 */
#include <stdlib.h>
#include <string.h>
#include "map.h"

enum { HOR_MAX = 16, NEST_MAX = 8, TRIPS_UNKNOWN = 64 };

/* A statement's role and a variable's sharing, as this file's analysis keeps them. */
#define SM_NONE MAP_S_NONE
#define SM_NEST MAP_S_NEST
#define SM_SWAP MAP_S_SWAP

typedef struct {
	const Kernels *k;
	const MapTarget *t;
	MapKernel *p;
	int32_t *vloop;    /* per variable: the loop statement binding it, 0 for none */
	uint8_t *veto;     /* per statement: may not head a nest */
	int32_t *swapv;    /* per nest head: the variable of the SM_SWAP loop around it, or -1 */
	/* the nest under test */
	uint8_t *inner;    /* per variable: bound or declared inside the nest */
	uint8_t *wr;       /* per variable: declared outside, written inside */
	int32_t *wconst;   /* per scalar variable: the constant written (0: none yet) */
	uint32_t *seen;    /* per expression: stamp of the nest test that checked it */
	uint32_t stamp;
	int32_t dvars[NEST_MAX];
	int nd;
	int32_t swapvar;
	bool par, ok;
} A;

/* ------------------------------------------------------------ index expressions */

static bool invariant(A *a, int32_t e)
{
	if (e < 0)
		return true;
	const KExpr *x = &a->k->x[e];
	switch (x->kind) {
	case KX_VAR:
		return !a->inner[x->v] && !a->wr[x->v] && x->v != a->swapvar;
	case KX_ELEM:
		if (a->inner[x->v] || a->wr[x->v])
			return false;
		break;
	default:
		break;
	}
	for (int i = 0; i < 4; i++)
		if (!invariant(a, x->a[i]))
			return false;
	return true;
}

/* Loop variable v runs within [0, c). */
static bool below(A *a, int32_t v, int64_t c)
{
	const KStmt *L = &a->k->s[a->vloop[v]];
	const KExpr *lo = &a->k->x[L->a], *hi = &a->k->x[L->b];
	if (lo->kind != KX_ICONST || lo->i != 0)
		return false;
	if (hi->kind == KX_ICONST)
		return hi->i <= c;
	if (hi->kind != KX_OP || hi->op != OP_MIN)
		return false;
	for (int i = 0; i < 2; i++) {
		const KExpr *h = &a->k->x[hi->a[i]];
		if (h->kind == KX_ICONST && h->i <= c)
			return true;
	}
	return false;
}

static bool inner_loop_var(A *a, int32_t e)
{
	const KExpr *x = &a->k->x[e];
	return x->kind == KX_VAR && a->inner[x->v] && a->vloop[x->v] > 0;
}

static bool push(int32_t *l, int *n, int32_t v)
{
	for (int i = 0; i < *n; i++)
		if (l[i] == v)
			return false;
	if (*n >= HOR_MAX)
		return false;
	l[(*n)++] = v;
	return true;
}

/* Is e a Horner form over inner loop variables (listed in l), injective in them? */
static bool hor(A *a, int32_t e, int32_t *l, int *n)
{
	const Kernels *k = a->k;
	const KExpr *x = &k->x[e];
	if (inner_loop_var(a, e))
		return push(l, n, x->v);
	if (x->kind != KX_OP || x->type != KT_INT)
		return false;
	int m = *n;
	if (x->op == OP_ADD) {
		for (int o = 0; o < 2; o++) {
			const KExpr *h = &k->x[x->a[o]];
			int32_t r = x->a[1 - o];
			if (!inner_loop_var(a, r) || h->kind != KX_OP || h->op != OP_MUL)
				continue;
			for (int q = 0; q < 2; q++) {
				const KExpr *c = &k->x[h->a[q]];
				if (c->kind != KX_ICONST || c->i <= 0 || !below(a, k->x[r].v, c->i))
					continue;
				if (hor(a, h->a[1 - q], l, n) && push(l, n, k->x[r].v))
					return true;
				*n = m;
			}
		}
		for (int o = 0; o < 2; o++) {
			if (invariant(a, x->a[1 - o]) && hor(a, x->a[o], l, n))
				return true;
			*n = m;
		}
		return false;
	}
	if (x->op == OP_SUB)
		return invariant(a, x->a[1]) && hor(a, x->a[0], l, n);
	if (x->op == OP_MUL)
		for (int q = 0; q < 2; q++) {
			const KExpr *c = &k->x[x->a[q]];
			if (c->kind == KX_ICONST && c->i != 0 && hor(a, x->a[1 - q], l, n))
				return true;
			*n = m;
		}
	return false;
}

/* Does the Horner form e separate the nest's iterations (cover every nest variable)? */
static bool separates(A *a, int32_t e)
{
	int32_t l[HOR_MAX];
	int n = 0;
	if (!hor(a, e, l, &n))
		return false;
	for (int d = 0; d < a->nd; d++) {
		bool in = false;
		for (int i = 0; i < n; i++)
			in |= l[i] == a->dvars[d];
		if (!in)
			return false;
	}
	return true;
}

static bool owned(A *a, int32_t e)
{
	if (separates(a, e))
		return true;
	/* a pairwise partial's term slot: h * cap + count[h] (or h + count[h] when cap = 1) */
	const Kernels *k = a->k;
	const KExpr *x = &k->x[e];
	if (x->kind != KX_OP || x->op != OP_ADD || x->type != KT_INT)
		return false;
	for (int o = 0; o < 2; o++) {
		const KExpr *c = &k->x[x->a[1 - o]], *h = &k->x[x->a[o]];
		if (c->kind != KX_ELEM || !a->wr[c->v] || !separates(a, c->a[0]))
			continue;
		if (separates(a, x->a[o]))
			return true;
		if (h->kind == KX_OP && h->op == OP_MUL)
			for (int q = 0; q < 2; q++)
				if (k->x[h->a[q]].kind == KX_ICONST && k->x[h->a[q]].i > 0 &&
				    separates(a, h->a[1 - q]))
					return true;
	}
	return false;
}

/* ------------------------------------------------------------ nests */

static void mark_inner(A *a, int32_t s)
{
	for (; s > 0; s = a->k->s[s].next) {
		const KStmt *t = &a->k->s[s];
		if (t->kind == KS_DECL || t->kind == KS_LOOP)
			a->inner[t->v] = 1;
		if (t->kind == KS_LOOP || t->kind == KS_WHILE || t->kind == KS_IF)
			mark_inner(a, t->body);
		if (t->kind == KS_IF)
			mark_inner(a, t->body2);
	}
}

static void collect_writes(A *a, int32_t s)
{
	const Kernels *k = a->k;
	for (; s > 0 && a->ok; s = k->s[s].next) {
		const KStmt *t = &k->s[s];
		switch (t->kind) {
		case KS_SET:
			if (a->inner[t->v])
				break;
			a->wr[t->v] = 1;
			if (k->vars[t->v].n == 0) {
				uint8_t kind = k->x[t->b].kind;
				if ((kind != KX_ICONST && kind != KX_FCONST) ||
				    (a->wconst[t->v] && a->wconst[t->v] != t->b))
					a->ok = false;
				a->wconst[t->v] = t->b;
			}
			break;
		case KS_TREE:
			a->ok &= a->inner[t->v];
			break;
		case KS_STORE:
			a->ok &= a->par;
			break;
		case KS_LOOP: case KS_WHILE:
			collect_writes(a, t->body);
			break;
		case KS_IF:
			collect_writes(a, t->body);
			collect_writes(a, t->body2);
			break;
		default:
			break;
		}
	}
}

static void check_expr(A *a, int32_t e)
{
	if (e < 0 || !a->ok || a->seen[e] == a->stamp)
		return;
	a->seen[e] = a->stamp;
	const KExpr *x = &a->k->x[e];
	if (x->kind == KX_VAR && a->wr[x->v])
		a->ok = false;
	if (x->kind == KX_ELEM && a->wr[x->v] && !owned(a, x->a[0]))
		a->ok = false;
	for (int i = 0; i < 4; i++)
		check_expr(a, x->a[i]);
}

static void check_stmts(A *a, int32_t s)
{
	const Kernels *k = a->k;
	for (; s > 0 && a->ok; s = k->s[s].next) {
		const KStmt *t = &k->s[s];
		if (t->kind == KS_SET && !a->inner[t->v] && k->vars[t->v].n > 0 && !owned(a, t->a))
			a->ok = false;
		if (t->kind == KS_TREE && a->wr[t->c])
			a->ok = false;
		check_expr(a, t->a);
		check_expr(a, t->b);
		if (t->kind == KS_LOOP || t->kind == KS_WHILE || t->kind == KS_IF)
			check_stmts(a, t->body);
		if (t->kind == KS_IF)
			check_stmts(a, t->body2);
	}
}

/* May the depth perfectly nested loops from head be dealt to lanes? swapvar: the variable
 * of a loop around head that would run inside it (SM_SWAP), or -1. Leaves inner and wr. */
static bool nest_ok(A *a, int32_t head, int depth, int32_t swapvar)
{
	const Kernels *k = a->k;
	memset(a->inner, 0, (size_t)k->nvars);
	memset(a->wr, 0, (size_t)k->nvars);
	memset(a->wconst, 0, (size_t)k->nvars * sizeof *a->wconst);
	a->stamp++;
	a->nd = 0;
	a->par = true;
	a->ok = true;
	a->swapvar = swapvar;
	int32_t s = head, last = head;
	for (int i = 0; i < depth; i++) {
		const KStmt *t = &k->s[s];
		a->inner[t->v] = 1;
		a->dvars[a->nd++] = t->v;
		a->par &= t->par;
		last = s;
		s = t->body;
	}
	mark_inner(a, k->s[last].body);
	collect_writes(a, k->s[last].body);
	if (!a->ok)
		return false;
	/* bounds evaluated once, before the nest: the inner loops' (and in a swap the loop's
	 * own, which the swapped loop would otherwise evaluate per iteration) */
	s = head;
	for (int i = 0; i < depth; i++) {
		const KStmt *t = &k->s[s];
		if ((i > 0 || swapvar >= 0) && (!invariant(a, t->a) || !invariant(a, t->b)))
			return false;
		s = t->body;
	}
	check_stmts(a, k->s[last].body);
	return a->ok;
}

static bool try_nest(A *a, int32_t s)
{
	const Kernels *k = a->k;
	int depth = 1;
	if (k->s[s].par)
		for (int32_t b = k->s[s].body; depth < NEST_MAX && b > 0 && k->s[b].kind == KS_LOOP &&
		     k->s[b].par && k->s[b].next <= 0; b = k->s[b].body)
			depth++;
	for (; depth >= 1; depth--)
		if (nest_ok(a, s, depth, -1)) {
			a->p->srole[s] = SM_NEST;
			a->p->sdepth[s] = (uint8_t)depth;
			a->swapv[s] = -1;
			return true;
		}
	return false;
}

static bool try_swap(A *a, int32_t s)
{
	const Kernels *k = a->k;
	int32_t b = k->s[s].body;
	if (b <= 0 || k->s[b].kind != KS_LOOP || k->s[b].next > 0 || a->veto[b] ||
	    !nest_ok(a, b, 1, k->s[s].v))
		return false;
	a->p->srole[s] = SM_SWAP;
	a->p->srole[b] = SM_NEST;
	a->p->sdepth[b] = 1;
	a->swapv[b] = k->s[s].v;
	return true;
}

/* Marks the nests of the uniform statements s.. */
static void mark(A *a, int32_t s)
{
	const Kernels *k = a->k;
	for (; s > 0; s = k->s[s].next) {
		const KStmt *t = &k->s[s];
		if (t->kind == KS_LOOP && !a->veto[s] && (try_nest(a, s) || try_swap(a, s)))
			continue;
		if (t->kind == KS_LOOP || t->kind == KS_WHILE || t->kind == KS_IF)
			mark(a, t->body);
		if (t->kind == KS_IF)
			mark(a, t->body2);
	}
}

/* Variables written by uniform statements inside a uniform loop. */
static void uniform_writes(A *a, int32_t s, int depth, uint8_t *uw)
{
	const Kernels *k = a->k;
	for (; s > 0; s = k->s[s].next) {
		const KStmt *t = &k->s[s];
		if (a->p->srole[s] != SM_NONE)
			continue;
		if ((t->kind == KS_SET || t->kind == KS_TREE) && depth > 0)
			uw[t->v] = 1;
		if (t->kind == KS_LOOP || t->kind == KS_WHILE)
			uniform_writes(a, t->body, depth + 1, uw);
		if (t->kind == KS_IF) {
			uniform_writes(a, t->body, depth, uw);
			uniform_writes(a, t->body2, depth, uw);
		}
	}
}

static int64_t trips(const Kernels *k, int32_t s, int depth, int64_t most)
{
	int64_t n = 1;
	for (int i = 0; i < depth; i++, s = k->s[s].body) {
		const KExpr *lo = &k->x[k->s[s].a], *hi = &k->x[k->s[s].b];
		int64_t h = -1;
		if (hi->kind == KX_ICONST)
			h = hi->i;
		if (hi->kind == KX_OP && hi->op == OP_MIN)
			for (int j = 0; j < 2; j++)
				if (k->x[hi->a[j]].kind == KX_ICONST)
					h = k->x[hi->a[j]].i;
		int64_t t = lo->kind == KX_ICONST && h >= 0 ? h - lo->i : TRIPS_UNKNOWN;
		n *= t > 0 ? t : 1;
		if (n > most)
			return most;
	}
	return n;
}

/* Marks, computes the shared variables, vetoes; true when nothing was vetoed. */
static bool settle(A *a, int32_t body, uint8_t *uw)
{
	const Kernels *k = a->k;
	MapKernel *p = a->p;
	memset(p->srole, 0, (size_t)k->ns);
	memset(p->sdepth, 0, (size_t)k->ns);
	memset(p->sbarrier, 0, (size_t)k->ns);
	memset(p->vshare, 0, (size_t)k->nvars);
	memset(uw, 0, (size_t)k->nvars);
	mark(a, body);
	uniform_writes(a, body, 0, uw);
	bool quiet = true;
	for (int32_t s = 1; s < k->ns; s++) {
		if (p->srole[s] != SM_NEST)
			continue;
		bool ok = nest_ok(a, s, p->sdepth[s], a->swapv[s]);
		IR_ASSERT(ok);
		for (int32_t v = 0; v < k->nvars; v++) {
			if (!a->wr[v])
				continue;
			p->sbarrier[s] = 1;
			p->vshare[v] = MAP_V_SHARED;
			if (uw[v] && !a->veto[s]) {
				COV(ocl_veto);
				a->veto[s] = 1;
				quiet = false;
			}
		}
	}
	return quiet;
}

/* ------------------------------------------------------------ storage */

static void decls(const Kernels *k, int32_t s, uint8_t *declared)
{
	for (; s > 0; s = k->s[s].next) {
		const KStmt *t = &k->s[s];
		if (t->kind == KS_DECL)
			declared[t->v] = 1;
		if (t->kind == KS_LOOP || t->kind == KS_WHILE || t->kind == KS_IF)
			decls(k, t->body, declared);
		if (t->kind == KS_IF)
			decls(k, t->body2, declared);
	}
}

static void storage(const Kernels *k, const MapTarget *t, int32_t body, MapKernel *p)
{
	uint8_t *declared = calloc((size_t)k->nvars + 1, 1);
	IR_ASSERT(declared);
	decls(k, body, declared);
	for (int32_t v = 0; v < k->nvars; v++) {
		if (!declared[v])
			continue;
		const KVar *V = &k->vars[v];
		int64_t bytes = (int64_t)map_type_bytes(V->type) * (V->n > 0 ? V->n : 1);
		bytes = (bytes + 7) & ~(int64_t)7;
		bool shared = p->vshare[v] == MAP_V_SHARED;
		if (shared && p->shared_bytes + bytes <= t->shared_max) {
			COV(ocl_shared_local);
			p->vplace[v] = MAP_P_SHARED;
			p->shared_bytes += bytes;
		} else if (shared) {
			COV(ocl_shared_scratch);
			p->vplace[v] = MAP_P_SCRATCH_GROUP;
			p->voff[v] = p->scratch_group;
			p->scratch_group += bytes;
		} else if (V->n > t->private_elems) {
			COV(ocl_private_scratch);
			p->vplace[v] = MAP_P_SCRATCH;
			p->voff[v] = p->scratch;
			p->scratch += bytes;
		}
	}
	free(declared);
}

void map_lanes(const Kernels *k, const MapTarget *tg, int i, MapKernel *p)
{
	size_t ns = (size_t)k->ns + 1, nv = (size_t)k->nvars + 1;
	A a = {.k = k, .t = tg, .p = p};
	a.vloop = calloc(nv, sizeof *a.vloop);
	a.veto = calloc(ns, 1);
	a.swapv = calloc(ns, sizeof *a.swapv);
	a.inner = calloc(nv, 1);
	a.wr = calloc(nv, 1);
	a.wconst = calloc(nv, sizeof *a.wconst);
	a.seen = calloc((size_t)k->nx + 1, sizeof *a.seen);
	uint8_t *uw = calloc(nv, 1);
	IR_ASSERT(a.vloop && a.veto && a.swapv && a.inner && a.wr && a.wconst && a.seen && uw);
	for (int32_t s = 1; s < k->ns; s++)
		if (k->s[s].kind == KS_LOOP)
			a.vloop[k->s[s].v] = s;
	int32_t body = k->k[i].body;
	while (!settle(&a, body, uw))
		;
	int64_t want = 1;
	for (int32_t s = 1; s < k->ns; s++)
		if (p->srole[s] == SM_NEST) {
			int64_t t = trips(k, s, p->sdepth[s], tg->wg_max);
			want = t > want ? t : want;
		}
	int64_t w = 1;
	while (w < want && w < tg->wg_max)
		w *= 2;
	bool lanes = w >= tg->wg_min;
	p->mode = lanes ? MAP_GROUP : MAP_ITEM;
	p->wg = lanes ? (int)w : 1;
	p->groups = lanes ? k->k[i].nitems : 0;
	for (int32_t s = 1; lanes && s < k->ns; s++) {
		if (p->srole[s] == SM_NEST && p->sdepth[s] >= 2)
			COV(ocl_nest_collapsed);
		if (p->srole[s] == SM_SWAP)
			COV(ocl_swap);
	}
	if (lanes)
		COV(ocl_lanes);
	if (!lanes) {
		memset(p->srole, 0, ns);
		memset(p->sbarrier, 0, ns);
		memset(p->vshare, 0, nv);
	}
	storage(k, tg, body, p);
	free(a.vloop);
	free(a.veto);
	free(a.swapv);
	free(a.inner);
	free(a.wr);
	free(a.wconst);
	free(a.seen);
	free(uw);
}
