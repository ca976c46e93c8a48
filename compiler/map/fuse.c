/* compiler/map/fuse.c: the mapping stage's launch fusion of row kernels (map.h,
 * MapTarget.fuse_rows): consecutive kernels of a program run in one launch, a work-group
 * per row, when every value a later one reads from an earlier one was written by the same
 * row. Softmax (a max per row, a sum per row, the normalised row) and layernorm (a mean,
 * a variance, the row) become one launch instead of three: the row a work-group reads
 * three times stays in the caches between its phases, so the program reads memory once.
 *
 * The rows are the items of the first kernel (the lead, a block per item): its grid is
 * the row space. A later kernel j joins when
 * - its first npar(lead) parallel dimensions are the lead's (same extents and tiles), so
 *   the items of row t are t * f .. t * f + f - 1 of j's grid (the last dimension
 *   fastest), f the items of j's remaining dimensions;
 * - every buffer a member stores is stored at indices that depend only on the member's
 *   row origins (not on loops or locals), and the index sets of different rows are
 *   disjoint (so a row's phase never overwrites what another row reads);
 * - every load in j of a buffer an earlier member stores has an index that depends only
 *   on j's row origins and lies in the set the same row of that member stores;
 * - no member stores a buffer an earlier member reads, nor one another member stores;
 * - neither uses per-invocation or per-group scratch, their shared locals (and merge
 *   slots) fit the target's, where the target asks (fuse_alike) a group-per-item member
 *   has the lead's work-group size and every member its integer and f64 forms, and a
 *   member has at most PER_ROW_MAX items per row (the lead: at least two rows).
 * These are decided by evaluating the index expressions for every row (integer
 * arithmetic of kir.h, an index check held only where it passes): a proof over the
 * program's actual sizes, not a pattern. The launch's work-group is the lead's; a target
 * that fuses spells every member with it (its distributed constructs stride by the
 * work-group, whatever size their own plan preferred). Nothing else changes: each phase is its kernel's
 * own code, in its own order, so every rounding is the one the kernel IR states.
 */
#include <stdlib.h>
#include <string.h>
#include "map.h"

/* At most this many rows are checked; a member runs at most PER_ROW_MAX items per row (a
 * larger one would crowd its items onto the lead's few blocks); a lead of one item (no
 * parallel dimension) is not a row space. */
enum { FUSE_ROWS_MAX = 1 << 20, FUSE_ELEMS_MAX = 1 << 26, PER_ROW_MAX = 64 };

/* ------------------------------------------------------------ integer evaluation */

typedef struct {
	const Kernels *k;
	int64_t *val;      /* per variable */
	uint8_t *bound;    /* per variable: val holds its value */
} Ev;

static bool ev(const Ev *E, int32_t x, int64_t *out);

static bool ev2(const Ev *E, const KExpr *e, int64_t *a, int64_t *b)
{
	return ev(E, e->a[0], a) && ev(E, e->a[1], b);
}

/* The value of integer expression x where the bound variables have their values; false
 * where it reads anything else or cannot be decided here. */
static bool ev(const Ev *E, int32_t x, int64_t *out)
{
	if (x <= 0)
		return false;
	const KExpr *e = &E->k->x[x];
	int64_t a, b, lo, hi;
	switch (e->kind) {
	case KX_ICONST:
		*out = e->i;
		return true;
	case KX_VAR:
		if (!E->bound[e->v])
			return false;
		*out = E->val[e->v];
		return true;
	case KX_CHECK:   /* the checked index, where the check passes */
		if (!ev(E, e->a[0], &a) || !ev(E, e->a[1], &lo) || !ev(E, e->a[2], &hi) || a < lo || a >= hi)
			return false;
		*out = a;
		return true;
	case KX_OP:
		break;
	default:
		return false;
	}
	if (e->type != KT_INT)
		return false;
	switch (e->op) {
	case OP_ADD: return ev2(E, e, &a, &b) && !__builtin_add_overflow(a, b, out);
	case OP_SUB: return ev2(E, e, &a, &b) && !__builtin_sub_overflow(a, b, out);
	case OP_MUL: return ev2(E, e, &a, &b) && !__builtin_mul_overflow(a, b, out);
	case OP_MIN: if (!ev2(E, e, &a, &b)) return false; *out = a < b ? a : b; return true;
	case OP_MAX: if (!ev2(E, e, &a, &b)) return false; *out = a > b ? a : b; return true;
	case OP_NEG: return ev(E, e->a[0], &a) && a != INT64_MIN && ((*out = -a), true);
	case OP_IDIV:   /* floor division (kir.h: a zero divisor gives 0: not decided here) */
		if (!ev2(E, e, &a, &b) || b == 0 || (a == INT64_MIN && b == -1))
			return false;
		*out = a / b - ((a % b != 0) && ((a < 0) != (b < 0)));
		return true;
	case OP_MOD:   /* non-negative remainder */
		if (!ev2(E, e, &a, &b) || b == 0 || b == INT64_MIN)
			return false;
		*out = a % b;
		if (*out < 0)
			*out += b < 0 ? -b : b;
		return true;
	default:
		return false;
	}
}

/* ------------------------------------------------------------ accesses */

typedef struct {
	int32_t buf, idx;   /* buffer, index expression */
} Acc;

typedef struct {
	Acc *a;
	int n, cap;
} Accs;

static void acc_add(Accs *s, int32_t buf, int32_t idx)
{
	for (int i = 0; i < s->n; i++)
		if (s->a[i].buf == buf && s->a[i].idx == idx)
			return;
	if (s->n == s->cap) {
		s->cap = s->cap ? 2 * s->cap : 16;
		s->a = realloc(s->a, (size_t)s->cap * sizeof *s->a);
		IR_ASSERT(s->a);
	}
	s->a[s->n++] = (Acc){buf, idx};
}

static void loads_expr(const Kernels *k, int32_t x, uint8_t *seen, Accs *ld)
{
	if (x <= 0 || seen[x])
		return;
	seen[x] = 1;
	const KExpr *e = &k->x[x];
	if (e->kind == KX_LOAD)
		acc_add(ld, e->v, e->a[0]);
	for (int i = 0; i < 4; i++)
		loads_expr(k, e->a[i], seen, ld);
}

/* The loads and stores of statement list s (every field that holds an expression). */
static void accesses(const Kernels *k, int32_t s, uint8_t *seen, Accs *ld, Accs *st)
{
	for (; s > 0; s = k->s[s].next) {
		const KStmt *t = &k->s[s];
		loads_expr(k, t->a, seen, ld);
		loads_expr(k, t->b, seen, ld);
		if (t->kind != KS_TREE)
			loads_expr(k, t->c, seen, ld);
		if (t->kind == KS_STORE)
			acc_add(st, t->v, t->a);
		accesses(k, t->body, seen, ld, st);
		accesses(k, t->body2, seen, ld, st);
	}
}

/* ------------------------------------------------------------ the rule */

typedef struct {
	const Kernels *k;
	const MapTarget *t;
	MapPlan *p;
	Ev E;
	uint8_t *seen;        /* per expression, reset per kernel */
	Accs ld[2], st[2];    /* scratch lists */
	int32_t *owner;       /* per element of the buffer being checked: row + 1, or 0 */
} F;

/* Binds kernel kj's row origins (its first npar(lead) dimensions) to row t's values. */
static void bind_row(F *f, const Kernel *lead, const Kernel *kj, int64_t t)
{
	for (int p = lead->npar - 1; p >= 0; p--) {
		const KPar *L = &lead->par[p];
		int64_t nt = (L->extent + L->tile - 1) / L->tile;
		int32_t v = kj->par[p].origin;
		f->E.val[v] = (t % nt) * L->tile;
		f->E.bound[v] = 1;
		t /= nt;
	}
}

static void unbind(F *f, const Kernel *kj, int P)
{
	for (int p = 0; p < P; p++)
		f->E.bound[kj->par[p].origin] = 0;
}

static void lists(F *f, int j, Accs *ld, Accs *st)
{
	ld->n = st->n = 0;
	memset(f->seen, 0, (size_t)f->k->nx + 1);
	accesses(f->k, f->k->k[j].body, f->seen, ld, st);
}

static bool same_rows(const Kernel *lead, const Kernel *kj)
{
	if (kj->npar < lead->npar)
		return false;
	for (int p = 0; p < lead->npar; p++)
		if (kj->par[p].extent != lead->par[p].extent || kj->par[p].tile != lead->par[p].tile)
			return false;
	return true;
}

/* Can kernel j join the group lead .. j-1? */
static bool joins(F *f, int lead, int j)
{
	const Kernels *k = f->k;
	const Kernel *L = &k->k[lead], *J = &k->k[j];
	const MapKernel *pj = &f->p->k[j];
	if (!same_rows(L, J) || pj->scratch || pj->scratch_group || J->nitems / L->nitems > PER_ROW_MAX)
		return false;
	const MapKernel *pl = &f->p->k[lead];
	if (f->t->fuse_alike && ((pj->mode == MAP_GROUP && pj->wg != pl->wg) || pj->i32 != pl->i32 ||
				 pj->f64 != pl->f64))
		return false;
	int64_t shared = 0;
	int slots = 0;
	for (int i = lead; i <= j; i++) {
		shared += f->p->k[i].shared_bytes;
		slots += f->p->k[i].nslots;
	}
	if (shared > f->t->shared_max || (f->t->merge_max && slots > f->t->merge_max))
		return false;
	Accs *ldj = &f->ld[1], *stj = &f->st[1];
	lists(f, j, ldj, stj);
	int64_t rows = L->nitems;
	/* j's stores: row origins only, disjoint rows (checked per buffer below with the
	 * members' own); j stores nothing a member reads or stores */
	for (int i = lead; i < j; i++) {
		Accs *ldi = &f->ld[0], *sti = &f->st[0];
		lists(f, i, ldi, sti);
		for (int a = 0; a < stj->n; a++) {
			for (int b = 0; b < ldi->n; b++)
				if (ldi->a[b].buf == stj->a[a].buf)
					return false;
			for (int b = 0; b < sti->n; b++)
				if (sti->a[b].buf == stj->a[a].buf)
					return false;
		}
		/* every load in j of a buffer member i stores */
		for (int b = 0; b < sti->n; b++) {
			int32_t buf = sti->a[b].buf;
			bool read = false;
			for (int a = 0; a < ldj->n; a++)
				read |= ldj->a[a].buf == buf;
			if (!read)
				continue;
			int64_t n = k->bufs[buf].n, x0;
			if (n > FUSE_ELEMS_MAX)
				return false;
			bool row0 = true;   /* stores that depend on more than the row fail at row 0:
					       decided before the table is made */
			bind_row(f, L, &k->k[i], 0);
			for (int s = 0; row0 && s < sti->n; s++)
				row0 = sti->a[s].buf != buf || ev(&f->E, sti->a[s].idx, &x0);
			unbind(f, &k->k[i], L->npar);
			if (!row0)
				return false;
			f->owner = calloc((size_t)n + 1, sizeof *f->owner);
			IR_ASSERT(f->owner);
			bool ok = true;
			for (int64_t t = 0; ok && t < rows; t++) {   /* what row t of i stores */
				bind_row(f, L, &k->k[i], t);
				for (int s = 0; ok && s < sti->n; s++) {
					int64_t x;
					if (sti->a[s].buf != buf)
						continue;
					ok = ev(&f->E, sti->a[s].idx, &x) && x >= 0 && x < n &&
					     (f->owner[x] == 0 || f->owner[x] == t + 1);
					if (ok)
						f->owner[x] = (int32_t)(t + 1);
				}
				unbind(f, &k->k[i], L->npar);
			}
			for (int64_t t = 0; ok && t < rows; t++) {   /* what row t of j loads */
				bind_row(f, L, J, t);
				for (int a = 0; ok && a < ldj->n; a++) {
					int64_t x;
					if (ldj->a[a].buf != buf)
						continue;
					ok = ev(&f->E, ldj->a[a].idx, &x) && x >= 0 && x < n && f->owner[x] == t + 1;
				}
				unbind(f, J, L->npar);
			}
			free(f->owner);
			f->owner = NULL;
			if (!ok)
				return false;
		}
	}
	return true;
}

void map_fuse(const Kernels *k, const MapTarget *t, MapPlan *p)
{
	F f = {.k = k, .t = t, .p = p};
	f.E.k = k;
	f.E.val = calloc((size_t)k->nvars + 1, sizeof *f.E.val);
	f.E.bound = calloc((size_t)k->nvars + 1, 1);
	f.seen = calloc((size_t)k->nx + 1, 1);
	IR_ASSERT(f.E.val && f.E.bound && f.seen);
	for (int i = 0; i < k->nk;) {
		const MapKernel *pl = &p->k[i];
		int n = 1;
		if (pl->mode == MAP_GROUP && !pl->scratch && !pl->scratch_group && k->k[i].npar > 0 &&
		    k->k[i].nitems >= 2 && k->k[i].nitems <= FUSE_ROWS_MAX)
			while (i + n < k->nk && joins(&f, i, i + n))
				n++;
		for (int j = i; j < i + n; j++) {
			p->k[j].lead = i;
			p->k[j].per_row = k->k[j].nitems / k->k[i].nitems;
		}
		p->k[i].nfused = n;
		i += n;
	}
	for (int a = 0; a < 2; a++) {
		free(f.ld[a].a);
		free(f.st[a].a);
	}
	free(f.E.val);
	free(f.E.bound);
	free(f.seen);
}
