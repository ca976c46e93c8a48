/* compiler/kir/kivl.c: integer intervals over a kernel program, for backends whose integers
 * are 32-bit (wgsl always, vulkan where a kernel allows: kir.h, kir_int_ranges).
 *
 * The kernel IR's integers are int64, but the graph format makes every integer value an
 * i32 (a value that leaves i32 is an error), so operand intervals are clamped to i32 and an
 * operation is "wide" when its exact result interval is not inside i32: a backend holding
 * i32 values emits it checked, or keeps 64-bit integers. Intervals are a fixpoint over the
 * program: tile origins span their extent (multiples of the tile), a loop variable spans its bounds, an integer
 * local joins everything assigned to it (after a few rounds a local still growing widens to
 * all of i32), an i32 load is any i32, a checked index its range.
 */
#include <stdlib.h>
#include "kir.h"

enum { ROUNDS = 8, WIDEN_AFTER = 5 };

static const KIvl EMPTY = {1, 0}, I32 = {INT32_MIN, INT32_MAX};

typedef struct {
	const Kernels *k;
	KIvl *xiv;             /* per expression: within i32 (the result) */
	bool *xwide;           /* per expression (the result) */
	KIvl *viv;             /* per variable */
	KIvl *raw;             /* per expression: before clamping */
	uint32_t *stamp;       /* per expression: round it was computed in */
	uint32_t round;
	bool *pin;             /* per variable: viv fixed (a counter's bound) */
	bool *guarded;         /* per statement: a guarded decrement (counts) */
	uint32_t *seen;        /* per expression: reads_var's stamp */
	uint32_t walk;
} P;

static bool empty(KIvl a)
{
	return a.hi < a.lo;
}

static KIvl join(KIvl a, KIvl b)
{
	if (empty(a))
		return b;
	if (empty(b))
		return a;
	return (KIvl){a.lo < b.lo ? a.lo : b.lo, a.hi > b.hi ? a.hi : b.hi};
}

static KIvl clamp32(KIvl a)
{
	if (empty(a))
		return a;
	if (a.lo < INT32_MIN)
		a.lo = INT32_MIN;
	if (a.hi > INT32_MAX)
		a.hi = INT32_MAX;
	if (a.lo > INT32_MAX || a.hi < INT32_MIN) {
		COV(kivl_outside);
		return I32;
	}
	return a;
}

static int64_t min4(int64_t a, int64_t b, int64_t c, int64_t d)
{
	int64_t m = a < b ? a : b;
	m = m < c ? m : c;
	return m < d ? m : d;
}

static int64_t max4(int64_t a, int64_t b, int64_t c, int64_t d)
{
	int64_t m = a > b ? a : b;
	m = m > c ? m : c;
	return m > d ? m : d;
}

static int64_t fdiv(int64_t a, int64_t b)
{
	int64_t q = a / b;
	return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

/* The exact interval of an integer op on operands within i32 (products fit in int64). */
static KIvl int_op(Op op, KIvl a, KIvl b, KIvl c)
{
	switch (op) {
	case OP_ADD: return (KIvl){a.lo + b.lo, a.hi + b.hi};
	case OP_SUB: return (KIvl){a.lo - b.hi, a.hi - b.lo};
	case OP_NEG: return (KIvl){-a.hi, -a.lo};
	case OP_MUL:
		return (KIvl){min4(a.lo * b.lo, a.lo * b.hi, a.hi * b.lo, a.hi * b.hi),
				 max4(a.lo * b.lo, a.lo * b.hi, a.hi * b.lo, a.hi * b.hi)};
	case OP_ABS:
		if (a.lo >= 0)
			return a;
		if (a.hi <= 0)
			return (KIvl){-a.hi, -a.lo};
		return (KIvl){0, -a.lo > a.hi ? -a.lo : a.hi};
	case OP_MAX: return (KIvl){a.lo > b.lo ? a.lo : b.lo, a.hi > b.hi ? a.hi : b.hi};
	case OP_MIN: return (KIvl){a.lo < b.lo ? a.lo : b.lo, a.hi < b.hi ? a.hi : b.hi};
	case OP_IDIV:
		if (b.lo > 0)   /* floor(a / b) is monotone in a and in b > 0: the corners */
			return (KIvl){min4(fdiv(a.lo, b.lo), fdiv(a.lo, b.hi), fdiv(a.hi, b.lo), fdiv(a.hi, b.hi)),
					 max4(fdiv(a.lo, b.lo), fdiv(a.lo, b.hi), fdiv(a.hi, b.lo), fdiv(a.hi, b.hi))};
		{
			COV(kivl_div_signed);
			int64_t m = -a.lo > a.hi ? -a.lo : a.hi;
			return (KIvl){-m - 1, m + 1};
		}
	case OP_MOD: {
		int64_t m = (b.lo < 0 ? -b.lo : b.lo) > (b.hi < 0 ? -b.hi : b.hi) ?
			    (b.lo < 0 ? -b.lo : b.lo) : (b.hi < 0 ? -b.hi : b.hi);
		return (KIvl){0, m > 0 ? m - 1 : 0};
	}
	case OP_SELECT: return join(b, c);
	default: return I32;
	}
}

static KIvl iv(P *p, int32_t id);

static KIvl iv_op(P *p, const KExpr *x)
{
	KIvl a[3] = {EMPTY, EMPTY, EMPTY};
	int n = op_info((Op)x->op)->arity;
	for (int i = 0; i < n; i++) {
		a[i] = iv(p, x->a[i]);
		if (x->op == OP_SELECT && i == 0)
			continue;   /* the condition is a boolean */
		if (empty(a[i]))
			return EMPTY;
	}
	return int_op((Op)x->op, a[0], a[1], a[2]);
}

/* The interval of integer expression id (clamped to i32); raw keeps the exact one. */
static KIvl iv(P *p, int32_t id)
{
	if (id < 0)
		return EMPTY;
	if (p->stamp[id] == p->round)
		return p->xiv[id];
	const KExpr *x = &p->k->x[id];
	KIvl r = I32;
	if (x->type != KT_INT) {
		r = (KIvl){0, 1};
	} else {
		switch (x->kind) {
		case KX_ICONST: r = (KIvl){x->i, x->i}; break;
		case KX_VAR: case KX_ELEM: r = p->viv[x->v]; break;
		case KX_LOAD: r = I32; break;
		case KX_OP: r = iv_op(p, x); break;
		case KX_CHECK: {
			KIvl lo = iv(p, x->a[1]), hi = iv(p, x->a[2]);
			r = empty(lo) || empty(hi) ? EMPTY : join((KIvl){lo.lo, hi.hi - 1}, lo);
			iv(p, x->a[0]);
			break;
		}
		default: r = I32; break;   /* conversions from reals */
		}
	}
	p->raw[id] = r;
	p->xiv[id] = clamp32(r);
	p->stamp[id] = p->round;
	return p->xiv[id];
}

/* One round over statements s..: joins loop and local intervals; true if any grew. */
static bool vround(P *p, int32_t s, bool widen)
{
	bool grew = false;
	for (; s > 0; s = p->k->s[s].next) {
		const KStmt *t = &p->k->s[s];
		KIvl add = EMPTY;
		int32_t v = -1;
		if (t->kind == KS_LOOP) {
			KIvl a = iv(p, t->a), b = iv(p, t->b);
			v = t->v;
			if (!empty(a) && !empty(b) && b.hi - 1 >= a.lo)
				add = (KIvl){a.lo, b.hi - 1};
		} else if (t->kind == KS_SET && p->k->vars[t->v].type == KT_INT) {
			v = t->v;
			add = iv(p, t->b);
			iv(p, t->a);
		} else {
			iv(p, t->a);
			iv(p, t->b);
		}
		if (v >= 0 && !p->pin[v]) {
			KIvl n = clamp32(join(p->viv[v], add));
			if (n.lo != p->viv[v].lo || n.hi != p->viv[v].hi) {
				if (widen)
					COV(kivl_widened);
				p->viv[v] = widen ? I32 : n;
				grew = true;
			}
		}
		grew |= vround(p, t->body, widen);
		grew |= vround(p, t->body2, widen);
	}
	return grew;
}

/* ------------------------------------------------------------ counters */

/* Counters. A local whose every value is either an expression not reading it (a start) or
 * its own value plus a constant c >= 0 (a count, like the pairwise trees' term counters)
 * lies within [the starts' lo, the starts' hi + the sum over its increments of c times the
 * times that statement can run in one item: the product of the trip counts of the loops
 * around it]. The fixpoint alone widens such a local to all of i32 (it grows every
 * round); this bound, pinned, replaces the widening.
 *
 * A count may also go down: a set of its own value minus c >= 0 directly in the body of a
 * while loop whose condition is a conjunction holding `v > L` or `v >= L` (L a constant),
 * the only set of v in that loop, leaves v >= L + 1 - c (or L - c): the insertion of a
 * top-k walking down its list. */

typedef struct {
	KIvl start;
	int64_t growth;
	int64_t low;           /* the least value a guarded decrement leaves */
	bool ok, any;
} Count;

enum { COUNT_MAX = INT32_MAX };

static bool reads_var(P *p, int32_t id, int32_t v)
{
	if (id <= 0 || p->seen[id] == p->walk)
		return false;
	p->seen[id] = p->walk;
	const KExpr *x = &p->k->x[id];
	if ((x->kind == KX_VAR || x->kind == KX_ELEM) && x->v == v)
		return true;
	if (x->kind == KX_FCONST || x->kind == KX_ICONST || x->kind == KX_VAR)
		return false;
	for (int i = 0; i < 4; i++)
		if (x->a[i] > 0 && reads_var(p, x->a[i], v))
			return true;
	return false;
}

/* c >= 0 when expression id is the local v's own value (either operand) plus c, else -1 */
static int64_t increment(const Kernels *k, int32_t id, int32_t v)
{
	const KExpr *x = &k->x[id];
	if (x->kind != KX_OP || x->op != OP_ADD)
		return -1;
	for (int i = 0; i < 2; i++) {
		const KExpr *a = &k->x[x->a[i]], *b = &k->x[x->a[1 - i]];
		if ((a->kind == KX_VAR || a->kind == KX_ELEM) && a->v == v && b->kind == KX_ICONST &&
		    b->i >= 0 && b->i <= COUNT_MAX)
			return b->i;
	}
	return -1;
}

/* The sets of local v in the statements s.. (nested ones too). */
static int sets_of(const Kernels *k, int32_t s, int32_t v)
{
	int n = 0;
	for (; s > 0; s = k->s[s].next) {
		const KStmt *t = &k->s[s];
		n += t->kind == KS_SET && t->v == v;
		n += sets_of(k, t->body, v) + sets_of(k, t->body2, v);
	}
	return n;
}

/* The least value condition id (a conjunction) guarantees local v, or INT64_MIN. */
static int64_t floor_of(const Kernels *k, int32_t id, int32_t v)
{
	const KExpr *x = &k->x[id];
	if (x->kind != KX_OP)
		return INT64_MIN;
	if (x->op == OP_AND) {
		int64_t a = floor_of(k, x->a[0], v), b = floor_of(k, x->a[1], v);
		return a > b ? a : b;
	}
	bool gt = x->op == OP_GT, ge = x->op == OP_GE, lt = x->op == OP_LT, le = x->op == OP_LE;
	if (!gt && !ge && !lt && !le)
		return INT64_MIN;
	/* v > L, v >= L, L < v, L <= v */
	const KExpr *a = &k->x[x->a[0]], *b = &k->x[x->a[1]];
	if ((gt || ge) && a->kind == KX_VAR && a->v == v && b->kind == KX_ICONST && b->i < INT32_MAX)
		return gt ? b->i + 1 : b->i;
	if ((lt || le) && b->kind == KX_VAR && b->v == v && a->kind == KX_ICONST && a->i < INT32_MAX)
		return lt ? a->i + 1 : a->i;
	return INT64_MIN;
}

/* c >= 0 when expression id is the local v's own value minus c, else -1 */
static int64_t decrement(const Kernels *k, int32_t id, int32_t v)
{
	const KExpr *x = &k->x[id];
	if (x->kind != KX_OP || x->op != OP_SUB)
		return -1;
	const KExpr *a = &k->x[x->a[0]], *b = &k->x[x->a[1]];
	if (a->kind == KX_VAR && a->v == v && b->kind == KX_ICONST && b->i >= 0 && b->i <= COUNT_MAX)
		return b->i;
	return -1;
}

/* The guarded decrements directly in while loop t's body (see "Counters"). */
static void guarded_decrements(P *p, const KStmt *t, Count *c)
{
	const Kernels *k = p->k;
	for (int32_t s = t->body; s > 0; s = k->s[s].next) {
		const KStmt *u = &k->s[s];
		if (u->kind != KS_SET || k->vars[u->v].type != KT_INT || k->vars[u->v].n || u->a >= 0)
			continue;
		int64_t dec = decrement(k, u->b, u->v), fl = floor_of(k, t->a, u->v);
		if (dec < 0 || fl == INT64_MIN || fl - dec < INT32_MIN || sets_of(k, t->body, u->v) != 1)
			continue;
		p->guarded[s] = true;
		COV(kivl_decrement);
		c[u->v].any = true;
		if (fl - dec < c[u->v].low)
			c[u->v].low = fl - dec;
	}
}

/* mult: how often the statements s.. can run in one item, or -1: unbounded */
static void counts(P *p, int32_t s, int64_t mult, Count *c)
{
	const Kernels *k = p->k;
	for (; s > 0; s = k->s[s].next) {
		const KStmt *t = &k->s[s];
		if (t->kind == KS_SET && k->vars[t->v].type == KT_INT && !p->guarded[s]) {
			Count *q = &c[t->v];
			int64_t inc = increment(k, t->b, t->v);
			q->any = true;
			p->walk++;
			if (inc >= 0) {
				if (mult < 0 || (inc > 0 && mult > COUNT_MAX / inc))
					q->ok = false;
				else
					q->growth += inc * mult;
				if (q->growth > COUNT_MAX)
					q->ok = false;
			} else if (reads_var(p, t->b, t->v)) {
				q->ok = false;
			} else {
				q->start = join(q->start, p->xiv[t->b]);
			}
		}
		if (t->kind == KS_LOOP) {
			KIvl a = p->xiv[t->a], b = p->xiv[t->b];
			int64_t trips = empty(a) || empty(b) || b.hi <= a.lo ? 0 : b.hi - a.lo;
			int64_t m = mult < 0 || (trips > 0 && mult > COUNT_MAX / trips) ? -1 : mult * trips;
			counts(p, t->body, m, c);
		} else if (t->kind == KS_WHILE) {
			guarded_decrements(p, t, c);
			counts(p, t->body, -1, c);
		} else if (t->kind == KS_IF) {
			counts(p, t->body, mult, c);
			counts(p, t->body2, mult, c);
		}
	}
}

/* Pins the counters the fixpoint widened; true if any. */
static bool pin_counters(P *p)
{
	const Kernels *k = p->k;
	Count *c = calloc((size_t)k->nvars + 1, sizeof *c);
	IR_ASSERT(c);
	for (int v = 0; v < k->nvars; v++)
		c[v] = (Count){EMPTY, 0, INT64_MAX, true, false};
	for (int i = 0; i < k->nk; i++)
		counts(p, k->k[i].body, 1, c);
	bool any = false;
	for (int v = 0; v < k->nvars; v++) {
		KIvl b = {c[v].start.lo < c[v].low ? c[v].start.lo : c[v].low, c[v].start.hi + c[v].growth};
		if (p->pin[v] || !c[v].any || !c[v].ok || empty(c[v].start) || b.lo < INT32_MIN ||
		    b.hi > INT32_MAX || (p->viv[v].lo <= b.lo && p->viv[v].hi >= b.hi) == false)
			continue;
		if (p->viv[v].lo == b.lo && p->viv[v].hi == b.hi)
			continue;
		p->pin[v] = true;
		p->viv[v] = b;
		COV(kivl_counter);
		any = true;
	}
	free(c);
	return any;
}

/* The fixpoint: variable intervals (pinned ones kept), then every expression's. */
static void fixpoint(P *p)
{
	const Kernels *k = p->k;
	for (int v = 0; v < k->nvars; v++)
		if (!p->pin[v])
			p->viv[v] = EMPTY;
	for (int i = 0; i < k->nk; i++)
		for (int d = 0; d < k->k[i].npar; d++) {
			const KPar *P_ = &k->k[i].par[d];
			/* 0, tile, 2 tile, ...: the last below the extent */
			p->viv[P_->origin] = (KIvl){0, (P_->extent - 1) / P_->tile * P_->tile};
		}
	for (int r = 0; r < ROUNDS + 4; r++) {
		p->round++;
		bool grew = false;
		for (int i = 0; i < k->nk; i++)
			grew |= vround(p, k->k[i].body, r >= WIDEN_AFTER);
		if (!grew)
			break;
	}
	p->round++;   /* a last pass with the final variable intervals */
	for (int i = 0; i < k->nk; i++)
		vround(p, k->k[i].body, false);
	for (int32_t x = 1; x < k->nx; x++)
		iv(p, x);
}

void kir_int_ranges(const Kernels *k, KIvl *xiv, bool *xwide)
{
	P pp = {k, xiv, xwide, calloc((size_t)k->nvars + 1, sizeof(KIvl)),
		calloc((size_t)k->nx + 1, sizeof(KIvl)), calloc((size_t)k->nx + 1, sizeof(uint32_t)), 0,
		calloc((size_t)k->nvars + 1, 1), calloc((size_t)k->ns + 1, 1),
		calloc((size_t)k->nx + 1, sizeof(uint32_t)), 0};
	P *p = &pp;
	IR_ASSERT(p->viv && p->raw && p->stamp && p->pin && p->guarded && p->seen);
	for (int32_t x = 0; x <= k->nx; x++) {
		xiv[x] = EMPTY;
		xwide[x] = false;
	}
	fixpoint(p);
	if (pin_counters(p))
		fixpoint(p);
	for (int32_t x = 1; x < k->nx; x++) {
		const KExpr *e = &k->x[x];
		p->xwide[x] = e->type == KT_INT && !empty(p->raw[x]) &&
			      (p->raw[x].lo < INT32_MIN || p->raw[x].hi > INT32_MAX);
		if (p->xwide[x])
			COV(kivl_wide);
	}
	free(p->viv);
	free(p->raw);
	free(p->stamp);
	free(p->pin);
	free(p->guarded);
	free(p->seen);
}
