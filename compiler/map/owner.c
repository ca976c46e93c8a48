/* compiler/map/owner.c: the mapping stage's rules for targets whose work-groups deal par
 * nests by owner or a split's partials by lane (MAP_RULES_OWNER: the wgsl backend; map.h
 * compares the four rule sets): how each kernel's items become work-groups, which local
 * arrays live in scratch, and what each kernel binds.
 *
 * Integer ranges (compiler/kivl.c, kir_int_ranges, in MapPlan): WGSL has i32 only; every
 * integer value the emitted code holds is an exact i32, and an operation whose result could
 * leave i32 (MapPlan.xwide) is emitted checked: on overflow it reports an error instead of
 * wrapping.
 *
 * Work-groups (map.h MapMode). MAP_GROUP needs every par nest in uniform position (its
 * bounds, and the conditions and loops around it, depend on tile origins and constants
 * only) to be owner-consistent: a local declared outside the nests and written inside one
 * must be an array accessed only inside nests of one shape, always at one index
 * expression, so that the invocation that owns iteration f owns that element in every
 * nest. MAP_LANES needs a top-level local array whose every access before the partials
 * meet is either a write at a constant index (the initialisation) or inside a lane loop:
 * a loop over L whose body only sets A[L] from values reading A at L only. Anything else
 * runs MAP_ITEM.
 *
 * Local arrays (wgsl.h, "Scratch"): every array longer than private_bytes goes to
 * scratch, then, while the kernel's private arrays together exceed private_budget, the
 * longest remaining one (the first declared among equals); the partials of MAP_LANES stay
 * private (at most wg_max elements: within both bounds). Every element is one 32-bit
 * word. The pairwise trees of a kernel share one set of stacks, as deep as its longest
 * term array needs: a tree over n terms has frames nested 1 + ceil(log2 n) deep, and holds
 * at most as many pending values.
 */
#include <stdlib.h>
#include <string.h>
#include "map.h"

typedef struct {
	const Kernels *k;
	const MapTarget *t;
	const MapPlan *mp;     /* its intervals */
	MapKernel *p;          /* the kernel's plan */
	bool *origin;          /* per variable: a tile origin */
	bool *uloop;           /* per variable: a loop variable of a uniform loop */
} P;

static bool empty(KIvl a)
{
	return a.hi < a.lo;
}

/* ------------------------------------------------------------ uniformity */

/* Does expression id depend only on constants, tile origins and (loops) uniform loops? */
static bool uni(const P *p, int32_t id, bool loops)
{
	if (id < 0)
		return true;
	const KExpr *x = &p->k->x[id];
	switch (x->kind) {
	case KX_FCONST: case KX_ICONST: return true;
	case KX_VAR: return p->origin[x->v] || (loops && p->uloop[x->v]);
	case KX_OP: case KX_CVT: case KX_ROUND:
		for (int i = 0; i < 3; i++)
			if (!uni(p, x->a[i], loops))
				return false;
		return true;
	default: return false;
	}
}

static bool nest_level(const P *p, const KStmt *t)
{
	return t->kind == KS_LOOP && t->par && uni(p, t->a, false) && uni(p, t->b, false);
}

static int64_t trips(const P *p, const KStmt *t)
{
	KIvl a = p->mp->xiv[t->a], b = p->mp->xiv[t->b];
	return empty(a) || empty(b) || b.hi <= a.lo ? 0 : b.hi - a.lo;
}

/* Marks the par nests in uniform position under s; the largest flattened trip count. */
static int64_t find_nests(P *p, int32_t s, bool u)
{
	int64_t most = 0;
	for (; s > 0; s = p->k->s[s].next) {
		const KStmt *t = &p->k->s[s];
		if (t->kind == KS_LOOP && u && nest_level(p, t)) {
			int lv = 1;
			int64_t n = trips(p, t);
			for (const KStmt *in = t; in->body > 0 && p->k->s[in->body].next < 0 &&
			     nest_level(p, &p->k->s[in->body]) && lv < 8; lv++) {
				in = &p->k->s[in->body];
				int64_t m = trips(p, in);
				n = n > 0 && m > INT32_MAX / n ? INT32_MAX : n * m;
			}
			p->p->srole[s] = MAP_S_NEST;
			p->p->sdepth[s] = (uint8_t)lv;
			most = n > most ? n : most;
			continue;
		}
		bool u2 = u;
		if (t->kind == KS_LOOP) {
			u2 = u && uni(p, t->a, true) && uni(p, t->b, true);
			if (u2)
				p->uloop[t->v] = true;
		} else if (t->kind == KS_IF) {
			u2 = u && uni(p, t->a, true);
		} else if (t->kind == KS_WHILE) {
			u2 = false;
		}
		int64_t a = find_nests(p, t->body, u2), b = find_nests(p, t->body2, u2);
		most = a > most ? a : most;
		most = b > most ? b : most;
	}
	return most;
}

/* ------------------------------------------------------------ owners (MAP_GROUP) */

typedef struct {
	int32_t nest;        /* the first nest head that touched it, or -1 */
	int32_t index;       /* the index expression of its accesses inside nests */
	bool in_write, outside, irregular;
} Use;

typedef struct {
	P *p;
	Use *use;            /* per variable */
	bool *inner;         /* per variable: declared inside the current nest */
	uint32_t *seen;      /* per expression: statement stamp */
	uint32_t stamp;
} Own;

static bool same_nest(const Kernels *k, int32_t a, int32_t b, int levels)
{
	for (int l = 0; l < levels; l++) {
		const KStmt *x = &k->s[a], *y = &k->s[b];
		if (x->v != y->v || x->a != y->a || x->b != y->b)
			return false;
		a = x->body;
		b = y->body;
	}
	return true;
}

static void touch(Own *o, int32_t v, int32_t index, int32_t nest, bool write)
{
	const Kernels *k = o->p->k;
	if (v < 0 || k->vars[v].loop || o->inner[v])
		return;
	Use *u = &o->use[v];
	if (nest < 0) {
		u->outside = true;
		return;
	}
	u->in_write |= write;
	if (index < 0 || k->vars[v].n == 0)
		u->irregular = true;
	if (u->nest < 0) {
		u->nest = nest;
		u->index = index;
	} else if (u->index != index ||
		   o->p->p->sdepth[u->nest] != o->p->p->sdepth[nest] ||
		   !same_nest(k, u->nest, nest, o->p->p->sdepth[nest])) {
		u->irregular = true;
	}
}

static void own_expr(Own *o, int32_t id, int32_t nest)
{
	if (id < 0 || o->seen[id] == o->stamp)
		return;
	o->seen[id] = o->stamp;
	const KExpr *x = &o->p->k->x[id];
	if (x->kind == KX_VAR)
		touch(o, x->v, -1, nest, false);
	else if (x->kind == KX_ELEM)
		touch(o, x->v, x->a[0], nest, false);
	for (int i = 0; i < 4; i++)
		own_expr(o, x->a[i], nest);
}

static void own_stmts(Own *o, int32_t s, int32_t nest)
{
	const Kernels *k = o->p->k;
	for (; s > 0; s = k->s[s].next) {
		const KStmt *t = &k->s[s];
		int32_t n = nest >= 0 ? nest : (o->p->p->srole[s] == MAP_S_NEST ? s : -1);
		o->stamp++;
		own_expr(o, t->a, n);
		own_expr(o, t->b, n);
		if (t->kind == KS_DECL && n >= 0)
			o->inner[t->v] = true;
		else if (t->kind == KS_SET)
			touch(o, t->v, t->a, n, true);
		else if (t->kind == KS_TREE) {
			touch(o, t->v, -1, n, true);
			touch(o, t->c, -1, n, false);
		}
		own_stmts(o, t->body, n);
		own_stmts(o, t->body2, n);
	}
}

static bool owners_ok(P *p, int32_t body)
{
	const Kernels *k = p->k;
	Own o = {p, calloc((size_t)k->nvars + 1, sizeof(Use)), calloc((size_t)k->nvars + 1, 1),
		 calloc((size_t)k->nx + 1, sizeof(uint32_t)), 0};
	IR_ASSERT(o.use && o.inner && o.seen);
	for (int v = 0; v < k->nvars; v++)
		o.use[v].nest = -1;
	own_stmts(&o, body, -1);
	bool ok = true;
	for (int v = 0; v < k->nvars && ok; v++) {
		const Use *u = &o.use[v];
		if (u->in_write && (u->outside || u->irregular))
			ok = false;
	}
	free(o.use);
	free(o.inner);
	free(o.seen);
	return ok;
}

static void clear_roles(P *p, int32_t s)
{
	for (; s > 0; s = p->k->s[s].next) {
		p->p->srole[s] = 0;
		clear_roles(p, p->k->s[s].body);
		clear_roles(p, p->k->s[s].body2);
	}
}

/* ------------------------------------------------------------ lanes (MAP_LANES) */

/* Does expression id read array a anywhere but at index var L (lane < 0: anywhere)? */
static bool reads_other(const Kernels *k, int32_t id, int32_t a, int32_t lane)
{
	if (id < 0)
		return false;
	const KExpr *x = &k->x[id];
	if (x->kind == KX_ELEM && x->v == a) {
		const KExpr *i = &k->x[x->a[0]];
		if (lane < 0 || i->kind != KX_VAR || i->v != lane)
			return true;
	}
	if (x->kind == KX_VAR && x->v == a)
		return true;
	for (int i = 0; i < 4; i++)
		if (reads_other(k, x->a[i], a, lane))
			return true;
	return false;
}

static bool lane_loop(const P *p, const KStmt *t, int32_t a)
{
	const Kernels *k = p->k;
	if (t->kind != KS_LOOP || t->body <= 0)
		return false;
	KIvl lo = p->mp->xiv[t->a], hi = p->mp->xiv[t->b];
	if (empty(lo) || empty(hi) || lo.lo < 0 || hi.hi > k->vars[a].n)
		return false;
	for (int32_t s = t->body; s > 0; s = k->s[s].next) {
		const KStmt *b = &k->s[s];
		if (b->kind != KS_SET || b->v != a || k->x[b->a].kind != KX_VAR || k->x[b->a].v != t->v ||
		    reads_other(k, b->b, a, t->v))
			return false;
	}
	return true;
}

static bool lanes_in(P *p, int32_t s, int32_t a, bool u, int *lanes);

/* Checks statement s for array a: every access is a lane loop (counted in *lanes, marked
 * WS_LANE) or a constant-index write. False on any other access. */
static bool lane_stmt(P *p, int32_t s, int32_t a, bool u, int *lanes)
{
	const Kernels *k = p->k;
	const KStmt *t = &k->s[s];
	if (u && lane_loop(p, t, a)) {
		p->p->srole[s] = MAP_S_LANE;
		(*lanes)++;
		return true;
	}
	if (reads_other(k, t->a, a, -1) || reads_other(k, t->b, a, -1))
		return false;
	if (t->kind == KS_TREE && (t->v == a || t->c == a))
		return false;
	if (t->kind == KS_SET && t->v == a && (t->a < 0 || k->x[t->a].kind != KX_ICONST))
		return false;
	bool u2 = u;
	if (t->kind == KS_LOOP)
		u2 = u && uni(p, t->a, true) && uni(p, t->b, true);
	else if (t->kind == KS_IF)
		u2 = u && uni(p, t->a, true);
	else if (t->kind == KS_WHILE)
		u2 = false;
	return lanes_in(p, t->body, a, u2, lanes) && lanes_in(p, t->body2, a, u2, lanes);
}

static bool lanes_in(P *p, int32_t s, int32_t a, bool u, int *lanes)
{
	for (; s > 0; s = p->k->s[s].next)
		if (!lane_stmt(p, s, a, u, lanes))
			return false;
	return true;
}

/* The partials array of a split reduction at the kernel's top level: the last top-level
 * statement holding a lane loop is where the partials meet; every statement from the
 * array's declaration up to it must pass lane_stmt. */
static bool try_lanes(P *p, int ki)
{
	const Kernels *k = p->k;
	MapKernel *kp = p->p;
	for (int32_t d = k->k[ki].body; d > 0; d = k->s[d].next) {
		const KStmt *t = &k->s[d];
		int64_t n = t->kind == KS_DECL ? k->vars[t->v].n : 0;
		if (n < 2 || n > p->t->wg_max || k->vars[t->v].type == KT_BOOL)
			continue;
		int32_t last = -1;
		for (int32_t s = t->next; s > 0; s = k->s[s].next) {
			int lanes = 0;
			lane_stmt(p, s, t->v, true, &lanes);
			if (lanes)
				last = s;
		}
		clear_roles(p, k->k[ki].body);
		if (last < 0)
			continue;
		int lanes = 0;
		bool ok = true;
		for (int32_t s = t->next; ok && s > 0; s = k->s[s].next) {
			ok = lane_stmt(p, s, t->v, true, &lanes);
			if (s == last)
				break;
		}
		if (!ok || !lanes) {
			clear_roles(p, k->k[ki].body);
			continue;
		}
		COV(wgsl_lanes);
		kp->mode = MAP_LANES;
		kp->wg = (int)n;
		kp->lane_arr = t->v;
		kp->gather_after = last;
		return true;
	}
	return false;
}

/* ------------------------------------------------------------ local arrays */

/* Frames of the pairwise tree over n terms: 1 + ceil(log2 n). */
static int tree_frames(int64_t n)
{
	int d = 1;
	for (int64_t m = 1; m < n; m *= 2)
		d++;
	return d;
}

/* The local arrays declared under s, each once, in order, into list; the trees' depth. */
static void arrays(const Kernels *k, int32_t s, int32_t *list, int *n, uint8_t *seen, int *depth)
{
	for (; s > 0; s = k->s[s].next) {
		const KStmt *t = &k->s[s];
		if (t->kind == KS_DECL && k->vars[t->v].n > 0 && !seen[t->v]) {
			seen[t->v] = 1;
			list[(*n)++] = t->v;
		}
		if (t->kind == KS_TREE) {
			int d = tree_frames(k->vars[t->c].n);
			*depth = d > *depth ? d : *depth;
		}
		arrays(k, t->body, list, n, seen, depth);
		arrays(k, t->body2, list, n, seen, depth);
	}
}

static void to_scratch(const Kernels *k, MapKernel *kp, int32_t v)
{
	kp->vplace[v] = MAP_P_SCRATCH;
	kp->voff[v] = kp->scratch;
	kp->scratch += k->vars[v].n * 4;
}

/* Which of kernel ki's local arrays live in scratch (the file comment): every element one
 * 32-bit word. */
static void place_arrays(const Kernels *k, const MapTarget *t, int ki, MapKernel *kp)
{
	int32_t *list = malloc(((size_t)k->ns + 1) * sizeof *list);
	uint8_t *seen = calloc((size_t)k->nvars + 1, 1);
	IR_ASSERT(list && seen);
	int n = 0;
	arrays(k, k->k[ki].body, list, &n, seen, &kp->tree_depth);
	int64_t priv = 0;
	for (int j = 0; j < n; j++) {
		int32_t v = list[j];
		if (v != kp->lane_arr && k->vars[v].n > t->private_bytes / 4) {
			COV(wgsl_scratch);
			to_scratch(k, kp, v);
		}
		else
			priv += k->vars[v].n * 4;
	}
	while (priv > t->private_budget) {
		int32_t big = -1;
		for (int j = 0; j < n; j++)
			if (kp->vplace[list[j]] != MAP_P_SCRATCH && list[j] != kp->lane_arr &&
			    (big < 0 || k->vars[list[j]].n > k->vars[big].n))
				big = list[j];
		IR_ASSERT(big >= 0);   /* the partials alone are within the budget */
		COV(wgsl_scratch_budget);
		to_scratch(k, kp, big);
		priv -= k->vars[big].n * 4;
	}
	free(list);
	free(seen);
}

/* ------------------------------------------------------------ plans */

/* ------------------------------------------------------------ bindings */

/* What the kernel's text will use (MapKernel.buse, err): the buffers its statements load
 * and store, and whether it may report into the error slot: a KS_CHECK, a KX_CHECK the
 * intervals do not prove, or an integer op that may leave i32 among those spelled checked
 * (t->int_checked). The emitter confirms both against what it wrote. */
typedef struct {
	const Kernels *k;
	const MapTarget *t;
	const MapPlan *mp;
	MapKernel *kp;
	uint8_t *seen;
} B;

static bool check_proved(const Kernels *k, const KIvl *xiv, const KExpr *x)
{
	KIvl v = xiv[x->a[0]];
	return x->a[1] >= 0 && x->a[2] >= 0 && k->x[x->a[1]].kind == KX_ICONST &&
	       k->x[x->a[2]].kind == KX_ICONST && v.lo <= v.hi && v.lo >= k->x[x->a[1]].i &&
	       v.hi < k->x[x->a[2]].i;
}

static void bind_expr(B *b, int32_t id)
{
	if (id < 0 || b->seen[id])
		return;
	b->seen[id] = 1;
	const KExpr *x = &b->k->x[id];
	if (x->kind == KX_LOAD)
		b->kp->buse[x->v] |= 1;
	if (x->kind == KX_CHECK && check_proved(b->k, b->mp->xiv, x)) {
		bind_expr(b, x->a[0]);
		return;
	}
	if (x->kind == KX_CHECK)
		b->kp->err = true;
	if (x->kind == KX_OP && x->type == KT_INT && b->mp->xwide[id] && (b->t->int_checked & (1ull << x->op)))
		b->kp->err = true;
	int na = x->kind == KX_OP ? op_info((Op)x->op)->arity : x->kind == KX_CHECK ? 4 : 1;
	if (x->kind == KX_VAR || x->kind == KX_FCONST || x->kind == KX_ICONST)
		na = 0;
	for (int i = 0; i < na; i++)
		bind_expr(b, x->a[i]);
}

static void bind_stmts(B *b, int32_t s)
{
	for (; s > 0; s = b->k->s[s].next) {
		const KStmt *t = &b->k->s[s];
		if (t->kind == KS_STORE)
			b->kp->buse[t->v] |= 2;
		if (t->kind == KS_CHECK)
			b->kp->err = true;
		if (t->kind != KS_DECL) {
			bind_expr(b, t->a);
			bind_expr(b, t->b);
		}
		bind_stmts(b, t->body);
		bind_stmts(b, t->body2);
	}
}

void map_owner(const Kernels *k, const MapTarget *t, const MapPlan *mp, int ki, MapKernel *kp)
{
	const Kernel *kn = &k->k[ki];
	P p = {k, t, mp, kp, calloc((size_t)k->nvars + 1, 1), calloc((size_t)k->nvars + 1, 1)};
	IR_ASSERT(p.origin && p.uloop);
	for (int i = 0; i < k->nk; i++)
		for (int d = 0; d < k->k[i].npar; d++)
			p.origin[k->k[i].par[d].origin] = true;
	kp->mode = MAP_ITEM;
	kp->wg = t->item_wg;
	kp->groups = (kn->nitems + t->item_wg - 1) / t->item_wg;
	kp->i32 = t->int32;
	int64_t most = find_nests(&p, kn->body, true);
	if (most >= 2 && owners_ok(&p, kn->body)) {
		COV(wgsl_group);
		kp->mode = MAP_GROUP;
		/* whole subgroups, as the vulkan backend does (compiler/map/replicate.c) */
		int64_t wg = t->wg_min;
		while (wg < most && wg < t->wg_max)
			wg *= 2;
		kp->wg = (int)wg;
		kp->groups = kn->nitems;
	} else {
		clear_roles(&p, kn->body);
		if (try_lanes(&p, ki))
			kp->groups = kn->nitems;
	}
	place_arrays(k, t, ki, kp);
	B b = {k, t, mp, kp, calloc((size_t)k->nx + 1, 1)};
	IR_ASSERT(b.seen);
	bind_stmts(&b, kn->body);
	free(b.seen);
	free(p.origin);
	free(p.uloop);
}
