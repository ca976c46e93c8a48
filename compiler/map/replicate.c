/* compiler/map/replicate.c: the mapping stage's rules for targets that replicate uniform
 * code (MAP_RULES_REPLICATE: the vulkan backend; map.h compares the four rule sets): how
 * one kernel's items and loops map onto GPU invocations, whether its integers may be
 * 32-bit, which of its arrays live in scratch and whether it holds f64 values.
 *
 * A kernel runs either one item per invocation (the serial plan: the item's statements as
 * they are), or one item per work-group (the group plan). Under the group plan every
 * invocation executes the item's statements redundantly ("replicated" code: identical
 * inputs, identical locals, identical stores) except the distributed loops, whose
 * iterations are spread over the invocations (iteration f of a loop nest flattened with
 * its last loop fastest goes to invocation f mod WG). A loop may be distributed when its
 * iterations are independent and what they leave behind can be put back together exactly:
 *
 * - a par loop (kir.h: independent iterations), with the perfectly nested par loops below
 *   it whose bounds do not depend on the nest's variables (a tile's point loops);
 * - or a loop from 0 without stores whose iterations are made independent by the rules
 *   below (a split reduction's partial accumulators: partial s in iteration s).
 *
 * Every local declared outside a distributed loop and written inside it must be one of:
 * - MAP_V_PART: an array accessed only inside distributed nests of one shape (same loops,
 *   same bounds), always at one index expression X, written unconditionally in one of
 *   them, and only in par nests: each invocation then owns the elements of its
 *   iterations, which are the same in every nest, so it keeps only those (its j-th
 *   iteration's element at private index j: map_part_len elements). The hoisted tile
 *   accumulators of a tiled reduction are this case.
 * - MAP_V_MERGE: an array accessed inside distributed loops only at the index of a one-loop
 *   nest from 0 (its owner is invocation index mod WG). After the distributed part, before
 *   replicated code touches it again, the owners' values are merged through shared memory
 *   so every invocation holds the whole array (the partials of a split reduction).
 * - MAP_V_FLAG: an int scalar only ever set to 0 or 1, set to 1 (never read) inside
 *   distributed loops; merged as the maximum over invocations (a sum's "any term" flag).
 * When a local breaks these rules, the loops writing it are not distributed (their bodies
 * are tried instead) and the analysis runs again, until nothing changes. A kernel that
 * reads a buffer it also writes, or has nothing to distribute, gets the serial plan.
 *
 * The combine order of a split reduction is untouched: partial s still accumulates its
 * terms in order (its iterations of the c loop, then the tail), and the partials are
 * combined by the same replicated statements as before.
 */
#include <stdlib.h>
#include <string.h>
#include "map.h"

typedef struct {
	int32_t var, stmt, idx;   /* idx: index expression, -1 scalar, -2 the whole array */
	int32_t val;              /* writes: the value expression */
	bool write, hdr;          /* hdr: in a loop's bounds or a condition */
} Access;

typedef struct {
	const Kernels *k;
	const Kernel *kn;
	const MapTarget *tg;
	int32_t ns;          /* statements + 1 */
	int32_t *parent;     /* per statement */
	int32_t *decl;       /* per variable: declaring statement, 0 at kernel level */
	Access *acc;
	int nacc, capacc;
	uint32_t *seen;      /* per expression: stamp */
	uint32_t stamp;
	/* per fixpoint round */
	uint8_t *disabled;   /* per statement */
	int32_t *ctx;        /* per statement: root of the distributed nest it is inside, 0 */
	int32_t *inner;      /* per root: its innermost chain loop */
} P;

static void add_acc(P *p, Access a)
{
	if (p->nacc == p->capacc) {
		p->capacc = p->capacc ? 2 * p->capacc : 64;
		p->acc = realloc(p->acc, (size_t)p->capacc * sizeof *p->acc);
		IR_ASSERT(p->acc);
	}
	p->acc[p->nacc++] = a;
}

static void scan_expr(P *p, int32_t e, int32_t stmt, bool hdr)
{
	if (e < 0 || p->seen[e] == p->stamp)
		return;
	p->seen[e] = p->stamp;
	const KExpr *x = &p->k->x[e];
	if (x->kind == KX_VAR && !p->k->vars[x->v].loop)
		add_acc(p, (Access){x->v, stmt, -1, -1, false, hdr});
	if (x->kind == KX_ELEM)
		add_acc(p, (Access){x->v, stmt, x->a[0], -1, false, hdr});
	for (int i = 0; i < 4; i++)
		scan_expr(p, x->a[i], stmt, hdr);
}

static void scan(P *p, int32_t s, int32_t parent)
{
	for (; s > 0; s = p->k->s[s].next) {
		const KStmt *t = &p->k->s[s];
		p->parent[s] = parent;
		p->stamp++;
		bool hdr = t->kind == KS_LOOP || t->kind == KS_IF || t->kind == KS_WHILE;
		if (t->kind != KS_DECL) {
			scan_expr(p, t->a, s, hdr);
			scan_expr(p, t->b, s, hdr);
		}
		switch (t->kind) {
		case KS_DECL: p->decl[t->v] = s; break;
		case KS_LOOP: p->decl[t->v] = s; break;
		case KS_SET: add_acc(p, (Access){t->v, s, t->a, t->b, true, false}); break;
		case KS_TREE:
			add_acc(p, (Access){t->v, s, -1, -1, true, false});
			add_acc(p, (Access){t->c, s, -2, -1, false, false});
			break;
		default: break;
		}
		scan(p, t->body, s);
		scan(p, t->body2, s);
	}
}

static bool depends(const Kernels *k, int32_t e, int32_t var, int depth)
{
	if (e < 0)
		return false;
	const KExpr *x = &k->x[e];
	if (x->kind == KX_VAR && x->v == var)
		return true;
	if (depth > 64)
		return true;   /* too deep to tell: assume it does */
	for (int i = 0; i < 4; i++)
		if (depends(k, x->a[i], var, depth + 1))
			return true;
	return false;
}

static bool is_const(const Kernels *k, int32_t e, int64_t v)
{
	return e >= 0 && k->x[e].kind == KX_ICONST && k->x[e].i == v;
}

/* The loops of the distributed nest rooted at s (1 for a non-par loop); 0 if s cannot
 * root one. */
static int chain_len(const Kernels *k, int32_t s, int32_t *inner)
{
	const KStmt *t = &k->s[s];
	if (t->kind != KS_LOOP)
		return 0;
	*inner = s;
	if (!t->par)
		return is_const(k, t->a, 0) ? 1 : 0;
	int32_t vars[IR_MAXRANK];
	int n = 0;
	vars[n++] = t->v;
	while (n < IR_MAXRANK) {
		const KStmt *c = &k->s[*inner];
		int32_t b = c->body;
		if (b <= 0 || k->s[b].next > 0 || k->s[b].kind != KS_LOOP || !k->s[b].par)
			break;
		bool dep = false;
		for (int i = 0; i < n; i++)
			dep |= depends(k, k->s[b].a, vars[i], 0) || depends(k, k->s[b].b, vars[i], 0);
		if (dep)
			break;
		vars[n++] = k->s[b].v;
		*inner = b;
	}
	return n;
}

static bool has_store(const Kernels *k, int32_t s)
{
	for (; s > 0; s = k->s[s].next) {
		const KStmt *t = &k->s[s];
		if (t->kind == KS_STORE || has_store(k, t->body) || has_store(k, t->body2))
			return true;
	}
	return false;
}

/* Marks the active roots: the outermost loops on each path that may root a nest. */
static void activate(P *p, MapKernel *pl, int32_t s, int32_t root)
{
	const Kernels *k = p->k;
	for (; s > 0; s = k->s[s].next) {
		const KStmt *t = &k->s[s];
		p->ctx[s] = root;
		int32_t in = 0;
		int len = root || p->disabled[s] ? 0 : chain_len(k, s, &in);
		if (len && !t->par && has_store(k, t->body))
			len = 0;
		if (len) {
			pl->srole[s] = MAP_S_NEST;
			pl->sdepth[s] = (uint8_t)len;
			p->inner[s] = in;
			for (int32_t c = s; c != in; c = k->s[c].body)
				p->ctx[k->s[c].body] = 0;
			activate(p, pl, k->s[in].body, s);
			continue;
		}
		activate(p, pl, t->body, root);
		activate(p, pl, t->body2, root);
	}
}

/* The distributed root an access is inside (0: replicated). */
static int32_t where(const P *p, const Access *a)
{
	return p->ctx[a->stmt];
}

static bool same_shape(const Kernels *k, const P *p, int32_t r1, int32_t r2)
{
	for (int32_t a = r1, b = r2;; a = k->s[a].body, b = k->s[b].body) {
		const KStmt *x = &k->s[a], *y = &k->s[b];
		if (x->v != y->v || x->a != y->a || x->b != y->b || !x->par || !y->par)
			return false;
		if (a == p->inner[r1] || b == p->inner[r2])
			return a == p->inner[r1] && b == p->inner[r2];
	}
}

/* The class of local v under the current roots, or -1. On -1, *culprit is a root whose
 * accesses break the MAP_V_MERGE rule (disabling it may let v be merged or kept by parts), a
 * non-par one first (an outer reduction loop taken for a split's), or 0. */
static int classify(P *p, MapKernel *pl, int32_t v, int32_t *culprit)
{
	const Kernels *k = p->k;
	const KVar *V = &k->vars[v];
	bool part = V->n > 0, merge = V->n > 0, flag = V->n == 0 && V->type == KT_INT;
	bool dw = false, uncond = false;
	int32_t root0 = 0, idx0 = -3, par_culprit = 0;
	*culprit = 0;
	for (int i = 0; i < p->nacc; i++) {
		const Access *a = &p->acc[i];
		if (a->var != v)
			continue;
		int32_t r = where(p, a);
		if (a->write && !is_const(k, a->val, 0) && !is_const(k, a->val, 1))
			flag = false;
		if (!r) {
			part = false;
			continue;
		}
		dw |= a->write;
		const KStmt *R = &k->s[r];
		if (!a->write || !is_const(k, a->val, 1))
			flag = false;
		bool own = a->idx >= 0 && k->x[a->idx].kind == KX_VAR && k->x[a->idx].v == R->v;
		if (pl->sdepth[r] != 1 || !own || !is_const(k, R->a, 0)) {
			merge = false;
			if (R->par && !par_culprit)
				par_culprit = r;
			if (!R->par && !*culprit)
				*culprit = r;
		}
		if (!R->par || a->idx < 0 || (idx0 != -3 && a->idx != idx0) ||
		    (root0 && !same_shape(k, p, root0, r)))
			part = false;
		idx0 = a->idx;
		if (!root0)
			root0 = r;
		if (a->write && p->parent[a->stmt] == p->inner[r])
			uncond = true;
	}
	if (!dw)
		return MAP_V_OWN;
	if (part && uncond)
		return MAP_V_PART;
	if (!*culprit)
		*culprit = par_culprit;
	if (V->n == 0)
		*culprit = 0;
	return merge ? MAP_V_MERGE : flag ? MAP_V_FLAG : -1;
}

static int64_t type_bytes(KType t)
{
	return t == KT_INT || t == KT_F64 ? 8 : 4;
}

/* Disables every active root that writes v. */
static void disable_writers(P *p, int32_t v)
{
	for (int i = 0; i < p->nacc; i++)
		if (p->acc[i].var == v && p->acc[i].write && where(p, &p->acc[i]))
			p->disabled[where(p, &p->acc[i])] = 1;
}

/* One round: activate, classify; returns true when something had to be disabled. */
static bool round_(P *p, MapKernel *pl)
{
	const Kernels *k = p->k;
	memset(pl->srole, 0, (size_t)p->ns);
	memset(pl->sdepth, 0, (size_t)p->ns);
	memset(p->ctx, 0, (size_t)p->ns * sizeof *p->ctx);
	activate(p, pl, p->kn->body, 0);
	bool changed = false;
	int64_t shared = 0, big = 0;
	int32_t bigvar = -1;
	pl->nslots = 0;
	for (int32_t v = 0; v < k->nvars; v++) {
		pl->vshare[v] = MAP_V_OWN;
		pl->vslot[v] = -1;
		if (k->vars[v].loop || p->ctx[p->decl[v]])
			continue;
		int32_t culprit;
		int c = classify(p, pl, v, &culprit);
		if (c < 0 && culprit) {
			COV(vk_disabled);
			p->disabled[culprit] = 1;
			changed = true;
			continue;
		}
		if (c < 0 || ((c == MAP_V_MERGE || c == MAP_V_FLAG) && pl->nslots == p->tg->merge_max)) {
			if (c >= 0)
				COV(vk_merge_full);
			disable_writers(p, v);
			changed = true;
			continue;
		}
		pl->vshare[v] = (uint8_t)c;
		if (c == MAP_V_MERGE || c == MAP_V_FLAG) {
			int64_t bytes = c == MAP_V_FLAG ? 4 * p->tg->wg_max : k->vars[v].n * type_bytes(k->vars[v].type);
			shared += bytes;
			if (c == MAP_V_MERGE && bytes > big) {
				big = bytes;
				bigvar = v;
			}
			pl->vslot[v] = (int8_t)pl->nslots;
			pl->slotvar[pl->nslots++] = v;
		}
	}
	if (!changed && shared > p->tg->shared_max && bigvar >= 0) {
		COV(vk_shared_over);
		disable_writers(p, bigvar);
		changed = true;
	}
	/* a non-par root that leaves nothing behind is not worth distributing */
	for (int32_t s = 1; !changed && s < p->ns; s++) {
		if (pl->srole[s] != MAP_S_NEST || k->s[s].par)
			continue;
		bool w = false;
		for (int i = 0; i < p->nacc && !w; i++)
			w = p->acc[i].write && where(p, &p->acc[i]) == s &&
			    pl->vshare[p->acc[i].var] != MAP_V_OWN;
		if (!w) {
			p->disabled[s] = 1;
			changed = true;
		}
	}
	return changed;
}

int64_t map_upper(const Kernels *k, int32_t e)
{
	const KExpr *x = &k->x[e];
	if (x->kind == KX_ICONST)
		return x->i;
	if (x->kind == KX_OP && x->op == OP_MIN) {
		int64_t a = map_upper(k, x->a[0]), b = map_upper(k, x->a[1]);
		return a < 0 ? b : b < 0 ? a : a < b ? a : b;
	}
	return -1;
}

/* The largest iteration count of any distributed nest that is known here. */
static int work_group(const P *p, const MapKernel *pl)
{
	const Kernels *k = p->k;
	int64_t best = 0;
	for (int32_t s = 1; s < p->ns; s++) {
		if (pl->srole[s] != MAP_S_NEST)
			continue;
		int64_t n = 1;
		for (int32_t c = s; n > 0; c = k->s[c].body) {
			int64_t hi = map_upper(k, k->s[c].b);
			n = hi < 0 || !is_const(k, k->s[c].a, 0) ? -1 : n * hi;
			if (n > p->tg->wg_max)
				n = p->tg->wg_max;
			if (c == p->inner[s])
				break;
		}
		if (n > best)
			best = n;
	}
	if (best <= 0)
		return p->tg->item_wg;
	/* whole subgroups: a power of two from 32 (the extra invocations find no iteration).
	 * NVIDIA's driver lost the stores of a 5-invocation group (softmax, `tile s : r=5`
	 * with `store s : f64`: rows 0..4 of s never written) where 3, 4 and 8 worked; no
	 * group smaller than a warp has been seen to fail since. */
	int64_t wg = p->tg->wg_min;
	while (wg < best && wg < p->tg->wg_max)
		wg *= 2;
	return (int)wg;
}

/* Buffers both loaded and stored by the kernel: replicated code could then see another
 * invocation's store (the kernel IR never does this; a plan would not be exact). */
static void buf_use(const Kernels *k, int32_t s, uint8_t *use, uint32_t *seen, uint32_t stamp);

static void buf_expr(const Kernels *k, int32_t e, uint8_t *use, uint32_t *seen, uint32_t stamp)
{
	if (e < 0 || seen[e] == stamp)
		return;
	seen[e] = stamp;
	if (k->x[e].kind == KX_LOAD)
		use[k->x[e].v] |= 1;
	for (int i = 0; i < 4; i++)
		buf_expr(k, k->x[e].a[i], use, seen, stamp);
}

static void buf_use(const Kernels *k, int32_t s, uint8_t *use, uint32_t *seen, uint32_t stamp)
{
	for (; s > 0; s = k->s[s].next) {
		const KStmt *t = &k->s[s];
		if (t->kind != KS_DECL) {
			buf_expr(k, t->a, use, seen, stamp);
			buf_expr(k, t->b, use, seen, stamp);
		}
		if (t->kind == KS_STORE)
			use[t->v] |= 2;
		buf_use(k, t->body, use, seen, stamp);
		buf_use(k, t->body2, use, seen, stamp);
	}
}

static bool self_reading(P *p)
{
	const Kernels *k = p->k;
	uint8_t *use = calloc((size_t)k->nbufs + 1, 1);
	IR_ASSERT(use);
	buf_use(k, p->kn->body, use, p->seen, ++p->stamp);
	bool bad = false;
	for (int b = 0; b < k->nbufs; b++)
		bad |= use[b] == 3;
	free(use);
	return bad;
}

/* The merge slots each statement's replicated code and distributed loops touch. */
static void masks(P *p, MapKernel *pl)
{
	for (int i = 0; i < p->nacc; i++) {
		const Access *a = &p->acc[i];
		if (pl->vslot[a->var] < 0)
			continue;
		uint64_t bit = 1ull << pl->vslot[a->var];
		uint64_t *m = where(p, a) ? pl->sdist : pl->srep;
		for (int32_t s = a->stmt; s > 0; s = p->parent[s])
			m[s] |= bit;
	}
}

/* ------------------------------------------------------------ 32-bit integers */

bool map_i32_check(const Kernels *k, int32_t id)
{
	const KExpr *x = &k->x[id];
	return x->kind == KX_CHECK && is_const(k, x->a[1], INT32_MIN) &&
	       is_const(k, x->a[2], (int64_t)INT32_MAX + 1);
}

typedef struct {
	const Kernels *k;
	const KIvl *xiv;
	const bool *xwide;
	uint64_t checked;   /* ops spelled checked where they may leave i32 (MapTarget.int_checked) */
	uint8_t *seen;      /* per expression: 1 seen as a stored value's operation, 2 as any */
	bool ok;
} N32;

/* An upper bound of the iterations of the distributed nest rooted at s from the intervals
 * of its bounds, or -1 beyond INT32_MAX. */
static int64_t chain_count(const N32 *n, const MapKernel *pl, int32_t s)
{
	int64_t most = 1;
	int32_t c = s;
	for (int i = 0; i < pl->sdepth[s]; i++, c = n->k->s[c].body) {
		KIvl a = n->xiv[n->k->s[c].a], b = n->xiv[n->k->s[c].b];
		if (a.hi < a.lo || b.hi < b.lo)
			return -1;
		int64_t d = b.hi - a.lo > 0 ? b.hi - a.lo : 0;
		if (d > INT32_MAX || (d > 0 && most > INT32_MAX / d))
			return -1;
		most *= d;
	}
	return most;
}

/* top: id is the operand of an i32 check (map_i32_check), the value a definition stores: an
 * op there that leaves i32 makes the stored value do so, the error its checked spelling
 * reports with the same value. Anywhere else (x * 65536 % 7) the exact int64 value may come
 * back into i32, and the kernel keeps int64_t. */
static void n32_expr(N32 *n, int32_t id, bool top)
{
	if (id <= 0 || !n->ok || (n->seen[id] & 2) || (top && n->seen[id]))
		return;
	n->seen[id] |= top ? 1 : 2;
	const KExpr *x = &n->k->x[id];
	if (x->kind == KX_ICONST) {
		/* integer max/min identities: INT32_MIN/MAX are identities of i32 values too */
		if (x->i != INT64_MIN && x->i != INT64_MAX && (x->i < INT32_MIN || x->i > INT32_MAX))
			n->ok = false;
		return;
	}
	if (x->kind == KX_FCONST || x->kind == KX_VAR)
		return;
	if (n->xwide[id] &&
	    !(top && x->kind == KX_OP && x->type == KT_INT && (n->checked & BE_OP(x->op)))) {
		n->ok = false;
		return;
	}
	if (map_i32_check(n->k, id)) {   /* an int holds an i32: emitted as its operand */
		n32_expr(n, x->a[0], true);
		return;
	}
	int na = x->kind == KX_OP ? op_info((Op)x->op)->arity : x->kind == KX_CHECK ? 4 : 1;
	for (int i = 0; i < na; i++)
		n32_expr(n, x->a[i], false);
}

static void n32_stmts(N32 *n, const MapKernel *pl, int32_t s)
{
	for (; s > 0 && n->ok; s = n->k->s[s].next) {
		const KStmt *t = &n->k->s[s];
		n32_expr(n, t->a, false);
		n32_expr(n, t->b, false);
		if (pl->srole[s] == MAP_S_NEST) {
			int64_t most = chain_count(n, pl, s);
			if (most < 0 || most > (int64_t)INT32_MAX - pl->wg)
				n->ok = false;
		}
		n32_stmts(n, pl, t->body);
		n32_stmts(n, pl, t->body2);
	}
}

/* Whether kernel `kernel` may hold its integers as 32-bit ints (map.h: MapKernel.i32; NVIDIA's
 * Vulkan driver miscompiled shaders doing their index arithmetic in int64_t,
 * tests/regress/vk_nvidia_tile5_f64.tg, and doing int64_t arithmetic on an i32 load,
 * tests/known/vk_nvidia_tile_gt_extent_*.tg): no integer operation of it may leave i32
 * (xwide) but one the target spells checked (t->int_checked) whose result is the stored
 * value (n32_expr: abs(x) of an i32 x is 2^31 at INT32_MIN, the store's error, which the
 * checked op reports with the same value), no
 * constant lies outside i32 but the identities INT64_MIN/MAX of integer max/min, and its
 * items, its distributed nests' iteration counts (from the intervals xiv of their bounds) and
 * buffers' elements fit. */
static bool kernel_i32(const Kernels *k, const MapTarget *t, int kernel, const MapKernel *pl, const KIvl *xiv, const bool *xwide)
{
	const Kernel *kn = &k->k[kernel];
	if (kn->nitems > (int64_t)INT32_MAX - t->wg_max)
		return false;
	for (int b = 0; b < k->nbufs; b++)
		if (k->bufs[b].n > INT32_MAX)
			return false;
	N32 n = {k, xiv, xwide, t->int_checked, calloc((size_t)k->nx + 1, 1), true};
	IR_ASSERT(n.seen);
	n32_stmts(&n, pl, kn->body);
	free(n.seen);
	return n.ok;
}

/* Local arrays longer than private_elems elements live in per-invocation scratch. */
static void scratch_place(const Kernels *k, const MapTarget *t, int32_t s, MapKernel *pl)
{
	for (; s > 0; s = k->s[s].next) {
		const KStmt *st = &k->s[s];
		if (st->kind == KS_DECL && pl->vplace[st->v] != MAP_P_SCRATCH) {
			const KVar *V = &k->vars[st->v];
			int64_t len = pl->vshare[st->v] == MAP_V_PART ? map_part_len(k, pl, st->v) : V->n;
			if (V->type != KT_BOOL && len > t->private_elems) {
				COV(vk_scratch);
				pl->vplace[st->v] = MAP_P_SCRATCH;
				pl->voff[st->v] = pl->scratch;
				pl->scratch += (len * (V->type == KT_F32 || (V->type == KT_INT && pl->i32) ? 4 : 8) + 7) / 8 * 8;
			}
		}
		scratch_place(k, t, st->body, pl);
		scratch_place(k, t, st->body2, pl);
	}
}

static bool f64_expr(P *p, int32_t e)
{
	if (e < 0 || p->seen[e] == p->stamp)
		return false;
	p->seen[e] = p->stamp;
	const KExpr *x = &p->k->x[e];
	if ((x->type == KT_F64 && x->kind != KX_FCONST) ||
	    (x->kind == KX_LOAD && p->k->bufs[x->v].fmt == DT_F64))
		return true;
	for (int i = 0; i < 4; i++)
		if (f64_expr(p, x->a[i]))
			return true;
	return false;
}

/* Does the kernel compute or store in f64: an f64 local, a computed f64 value or an f64
 * buffer? (f64 constants alone do not count: a constant converted to f32 is spelled
 * with integer operations on its bits, no f64 arithmetic, so the shader needs no f64
 * float-controls modes.) */
static bool uses_f64(P *p, int32_t s)
{
	const Kernels *k = p->k;
	for (; s > 0; s = k->s[s].next) {
		const KStmt *t = &k->s[s];
		if ((t->kind == KS_DECL || t->kind == KS_SET || t->kind == KS_TREE) && k->vars[t->v].type == KT_F64)
			return true;
		if (t->kind == KS_STORE && k->bufs[t->v].fmt == DT_F64)
			return true;
		if (t->kind != KS_DECL && (f64_expr(p, t->a) || f64_expr(p, t->b)))
			return true;
		if (uses_f64(p, t->body) || uses_f64(p, t->body2))
			return true;
	}
	return false;
}

void map_replicate(const Kernels *k, const MapTarget *tg, const MapPlan *mp, int kernel, MapKernel *pl)
{
	P p = {0};
	p.k = k;
	p.kn = &k->k[kernel];
	p.tg = tg;
	p.ns = k->ns + 1;
	size_t ns = (size_t)p.ns, nv = (size_t)k->nvars + 1;
	p.parent = calloc(ns, sizeof *p.parent);
	p.decl = calloc(nv, sizeof *p.decl);
	p.seen = calloc((size_t)k->nx + 1, sizeof *p.seen);
	p.disabled = calloc(ns, 1);
	p.ctx = calloc(ns, sizeof *p.ctx);
	p.inner = calloc(ns, sizeof *p.inner);
	IR_ASSERT(p.parent && p.decl && p.seen && p.disabled && p.ctx && p.inner);
	scan(&p, p.kn->body, 0);
	bool serial = self_reading(&p);
	while (!serial && round_(&p, pl))
		;
	bool any = false;
	for (int32_t s = 1; !serial && s < p.ns; s++)
		any |= pl->srole[s] == MAP_S_NEST;
	if (serial || !any) {
		memset(pl->srole, 0, ns);
		memset(pl->sdepth, 0, ns);
		memset(pl->vshare, 0, nv);
		memset(pl->vslot, -1, nv);
		pl->nslots = 0;
		pl->mode = MAP_ITEM;
		pl->wg = tg->item_wg;
		pl->groups = (p.kn->nitems + pl->wg - 1) / pl->wg;
	} else {
		pl->mode = MAP_GROUP;
		pl->wg = work_group(&p, pl);
		pl->groups = p.kn->nitems;
		masks(&p, pl);
		COV(vk_group);
		if (pl->wg > 32)
			COV(vk_wg_wide);
		for (int32_t v = 0; v < k->nvars; v++) {
			if (pl->vshare[v] == MAP_V_PART)
				COV(vk_part);
			else if (pl->vshare[v] == MAP_V_MERGE)
				COV(vk_merge);
			else if (pl->vshare[v] == MAP_V_FLAG)
				COV(vk_flag);
		}
	}
	for (int32_t v = 0; v < k->nvars; v++)
		if (pl->vshare[v] == MAP_V_MERGE || pl->vshare[v] == MAP_V_FLAG)
			pl->vplace[v] = MAP_P_SHARED;   /* merged through work-group memory */
	pl->i32 = kernel_i32(k, tg, kernel, pl, mp->xiv, mp->xwide);
	if (!pl->i32)
		COV(vk_i64);
	scratch_place(k, tg, p.kn->body, pl);
	p.stamp++;
	pl->f64 = uses_f64(&p, p.kn->body);
	free(p.parent);
	free(p.decl);
	free(p.seen);
	free(p.disabled);
	free(p.ctx);
	free(p.inner);
	free(p.acc);
}

int64_t map_part_len(const Kernels *k, const MapKernel *p, int32_t var)
{
	return (k->vars[var].n + p->wg - 1) / p->wg;
}

