/* compiler/format/check.c: the `.tg` checker. Everything graph-format.md requires of a graph
 * beyond its syntax: names defined once and read only below their definition, ranks and
 * extents, types (booleans only feed ?: && || !; `%` and indices are integers; integer
 * values fit in 32 bits), quasi-affine indices, reads provably in bounds, reduction ranges
 * that use only indices to their left, monoid rules (argmax over one index, topk's K within
 * its range), outputs, unused definitions, and schedule directives.
 *
 * It checks graphs from the parser (statement by statement, through the hooks of lex.h)
 * and graphs built in memory (ir_check) with the same code. A malformed node store (a
 * dangling handle, an operand created after its user, a type that disagrees with its
 * operands) is an internal error, exit code 3; everything else is the user's, exit code 2.
 *
 * Bounds are proved by interval reasoning over the iteration domain: left-hand indices
 * range over 0 .. E-1, reduction indices over [LO, HI) with LO and HI affine in the indices
 * to their left. Indices that appear in some range bound (and all indices of a non-affine
 * index expression) are enumerated, up to ENUM_CAP points; the others are free, and an
 * affine index takes its extremes at their ends. This is exact for affine reads over
 * nested affine ranges (a point whose range is empty reads nothing) and gives an offending
 * point. Past the cap, plain interval arithmetic over-approximates.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "lex.h"

enum { ENUM_CAP = 1 << 22 };
#define BIG ((int64_t)1 << 62)
#define I32MAX ((int64_t)2147483647)
#define I32MIN (-(int64_t)2147483648)

typedef struct { int64_t lo, hi; } Ivl;   /* inclusive */

typedef struct {
	int64_t c0;
	int64_t c[IR_MAXVARS];
} Lin;

/* The iteration domain of the definition being checked. */
typedef struct {
	int nlhs, nv;
	Ivl hull[IR_MAXVARS];
	Lin lo[IR_MAXRED], hi[IR_MAXRED];
	uint32_t bvars;   /* indices that appear in some range bound */
	bool empty;       /* no point at all */
} Dom;

typedef struct {
	const char *name;
	uint8_t kind;   /* SymKind */
	int id;
	SrcPos pos;
} Sym;

typedef struct {
	Sym *s;
	uint32_t cap, n;
} Table;

struct Checker {
	Graph *g;
	Table names, indices;
	Diag *d;
	uint32_t gen;             /* statement generation for positions */
	uint32_t *posgen;
	SrcPos *pos;
	uint32_t cap;             /* of every per-node array */
	uint16_t *depth;
	uint8_t *qaff;            /* 0 unknown, 1 quasi-affine, 2 not */
	uint32_t *seen_v, *seen_i, *seen_r, *seen_iv;
	Ivl *iv;
	uint8_t *ivunk;           /* interval unknown (depends on a read) */
	uint32_t stamp;
	uint32_t checked;         /* nodes [1, checked) are validated */
	const Def *D;
	int def;
	Dom dom;
};

/* ------------------------------------------------------------ utilities */

static int64_t clamp(int64_t a)
{
	return a > BIG ? BIG : a < -BIG ? -BIG : a;
}

/* Saturating arithmetic: results stay within [-2^62, 2^62], far outside any extent. */
static int64_t sadd(int64_t a, int64_t b)
{
	int64_t r;
	if (__builtin_add_overflow(a, b, &r))
		return a < 0 ? -BIG : BIG;
	return clamp(r);
}

static int64_t smul(int64_t a, int64_t b)
{
	int64_t r;
	if (__builtin_mul_overflow(a, b, &r))
		return (a < 0) != (b < 0) ? -BIG : BIG;
	return clamp(r);
}

static int64_t floordiv(int64_t a, int64_t c)
{
	int64_t q = a / c;
	return (a % c != 0 && ((a < 0) != (c < 0))) ? q - 1 : q;
}

static int64_t nnmod(int64_t a, int64_t c)
{
	int64_t m = a % c;
	return m < 0 ? m + (c < 0 ? -c : c) : m;
}

static void grow(Checker *ck)
{
	uint32_t need = ck->g->nnodes;
	if (need <= ck->cap)
		return;
	uint32_t c = ck->cap ? ck->cap : 256;
	while (c < need)
		c *= 2;
#define G(p) do { void *q = realloc(p, (size_t)c * sizeof *(p)); IR_ASSERT(q); \
	memset((char *)q + (size_t)ck->cap * sizeof *(p), 0, (size_t)(c - ck->cap) * sizeof *(p)); \
	(p) = q; } while (0)
	G(ck->posgen); G(ck->pos); G(ck->depth); G(ck->qaff); G(ck->seen_v); G(ck->seen_i);
	G(ck->seen_r); G(ck->seen_iv); G(ck->iv); G(ck->ivunk);
#undef G
	ck->cap = c;
}

Checker *ck_new(Graph *g, Diag *d)
{
	Checker *ck = calloc(1, sizeof *ck);
	IR_ASSERT(ck);
	ck->g = g;
	ck->d = d;
	ck->gen = 1;
	ck->checked = 1;
	ck->def = -1;
	grow(ck);
	return ck;
}

void ck_free(Checker *ck)
{
	if (!ck)
		return;
	free(ck->posgen); free(ck->pos); free(ck->depth); free(ck->qaff); free(ck->seen_v);
	free(ck->seen_i); free(ck->seen_r); free(ck->seen_iv); free(ck->iv); free(ck->ivunk);
	free(ck->names.s); free(ck->indices.s);
	free(ck);
}

void ck_begin(Checker *ck)
{
	ck->gen++;
}

void ck_note(Checker *ck, Ref r, SrcPos pos)
{
	grow(ck);
	if (r && r < ck->g->nnodes && ck->posgen[r] != ck->gen) {
		ck->posgen[r] = ck->gen;
		ck->pos[r] = pos;
	}
}

static SrcPos npos(const Checker *ck, Ref r)
{
	if (r < ck->cap && ck->posgen[r] == ck->gen)
		return ck->pos[r];
	return ck->g->nodes[r].pos;
}

static int verr(Checker *ck, SrcPos pos, const char *src, size_t len, const char *fmt, va_list ap)
{
	char buf[600];
	vsnprintf(buf, sizeof buf, fmt, ap);
	diag_at(ck->d, pos, src, len, "%s", buf);
	return -1;
}

static int err(Checker *ck, SrcPos pos, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int err(Checker *ck, SrcPos pos, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	verr(ck, pos, ck->g->src, ck->g->srclen, fmt, ap);
	va_end(ap);
	return -1;
}

static int bad(Checker *ck, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int bad(Checker *ck, const char *fmt, ...)
{
	char buf[300];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	diag_set(ck->d, 3, "malformed graph: %s", buf);
	return -1;
}

/* An expression as text for a message, cut short if long; the caller frees it. */
static char *etext(const Checker *ck, Ref r)
{
	char *s = ir_print_expr(ck->g, ck->def, r);
	if (strlen(s) > 80)
		strcpy(s + 77, "...");
	return s;
}

static const Node *N(const Checker *ck, Ref r) { return &ck->g->nodes[r]; }

static const char *where(const SrcPos *p, char *buf, size_t n)
{
	snprintf(buf, n, "%d:%d", p->line, p->col);
	return buf;
}

/* ------------------------------------------------------------------- types */

Ty ck_op_type(const Graph *g, Op op, Ref a, Ref b, Ref c)
{
	const OpInfo *oi = op_info(op);
	const Ref x[3] = {a, b, c};
	if (oi->flags & OPF_BOOL_OUT)
		return TY_BOOL;
	if (op == OP_SELECT)
		return g->nodes[b].ty == TY_INT && g->nodes[c].ty == TY_INT ? TY_INT : TY_REAL;
	if (oi->flags & OPF_INT_ONLY)
		return TY_INT;
	if (!(oi->flags & OPF_INT_OK))
		return TY_REAL;
	for (int k = 0; k < oi->arity; k++)
		if (g->nodes[x[k]].ty != TY_INT)
			return TY_REAL;
	return TY_INT;
}

Ty ck_read_type(const Graph *g, int t, Ref pad)
{
	return g->tensors[t].dtype == DT_I32 && (!pad || g->nodes[pad].ty == TY_INT) ? TY_INT : TY_REAL;
}

Ty ck_def_type(const Graph *g, const Def *D)
{
	Ty b = D->body ? (Ty)g->nodes[D->body].ty : TY_REAL;
	switch (D->monoid) {
	case MO_LOGSUMEXP: return TY_REAL;
	case MO_ARGMAX: case MO_ARGMIN: return TY_INT;
	default: return b == TY_INT ? TY_INT : TY_REAL;
	}
}

static int want_number(Checker *ck, Ref r)
{
	if (N(ck, r)->ty != TY_BOOL)
		return 0;
	char *s = etext(ck, r);
	err(ck, npos(ck, r), "boolean '%s' where a number is needed", s);
	free(s);
	return -1;
}

static int want_bool(Checker *ck, Ref r)
{
	if (N(ck, r)->ty == TY_BOOL)
		return 0;
	char *s = etext(ck, r);
	err(ck, npos(ck, r), "number '%s' where a boolean is needed", s);
	free(s);
	return -1;
}

/* The operands of op node r have the types the op needs. */
static int op_operands(Checker *ck, Ref r)
{
	const Node *n = N(ck, r);
	const OpInfo *oi = op_info((Op)n->op);
	if (n->op == OP_SELECT)
		return want_bool(ck, n->a[0]) || want_number(ck, n->a[1]) || want_number(ck, n->a[2]) ? -1 : 0;
	for (int k = 0; k < oi->arity; k++) {
		Ref a = n->a[k];
		if ((oi->flags & OPF_BOOL_IN) ? want_bool(ck, a) : want_number(ck, a))
			return -1;
		if ((oi->flags & OPF_INT_ONLY) && N(ck, a)->ty != TY_INT) {
			char *s = etext(ck, a);
			err(ck, npos(ck, r), "'%s' needs integer operands, but '%s' is real",
			    n->op == OP_MOD ? "%" : "/", s);
			free(s);
			return -1;
		}
	}
	if (n->op == OP_MOD && N(ck, n->a[1])->kind == NK_INT && N(ck, n->a[1])->u.ival == 0)
		return err(ck, npos(ck, r), "'%%' by zero");
	return 0;
}

/* ------------------------------------------------------------ the node store */

static int node_ok(Checker *ck, Ref r)
{
	Graph *g = ck->g;
	const Node *n = &g->nodes[r];
	int d = 0;
	switch (n->kind) {
	case NK_NUM:
		if (n->u.lit >= g->nlits || n->ty != TY_REAL)
			return bad(ck, "node %u: bad literal", r);
		break;
	case NK_INT: case NK_VAR: case NK_SIZE:
		if (n->ty != TY_INT || (n->kind == NK_SIZE && n->u.size >= (uint32_t)g->nsizes) ||
		    (n->kind == NK_VAR && n->u.var >= IR_MAXVARS))
			return bad(ck, "node %u: bad leaf", r);
		break;
	case NK_READ: {
		uint64_t end = (uint64_t)n->u.read.first + n->u.read.n;
		if (n->u.read.tensor >= (uint32_t)g->ntensors || end > g->nrefs || n->u.read.pad >= r)
			return bad(ck, "node %u: bad read", r);
		for (uint32_t k = 0; k < n->u.read.n; k++) {
			Ref a = g->refs[n->u.read.first + k];
			if (a == 0 || a >= r)
				return bad(ck, "node %u: bad index", r);
			d = d > ck->depth[a] ? d : ck->depth[a];
		}
		if (n->u.read.pad) {
			d = d > ck->depth[n->u.read.pad] ? d : ck->depth[n->u.read.pad];
			if (want_number(ck, n->u.read.pad))
				return -1;
		}
		if (n->ty != ck_read_type(g, (int)n->u.read.tensor, n->u.read.pad))
			return bad(ck, "node %u: read has the wrong type", r);
		break;
	}
	case NK_OP: {
		if (n->op >= OP__COUNT)
			return bad(ck, "node %u: bad op", r);
		int ar = op_info((Op)n->op)->arity;
		for (int k = 0; k < 3; k++) {
			if ((k < ar) != (n->a[k] != 0) || n->a[k] >= r)
				return bad(ck, "node %u: bad operand", r);
			if (n->a[k])
				d = d > ck->depth[n->a[k]] ? d : ck->depth[n->a[k]];
		}
		if (op_operands(ck, r))
			return -1;
		if (n->ty != ck_op_type(g, (Op)n->op, n->a[0], n->a[1], n->a[2]))
			return bad(ck, "node %u: %s has the wrong type", r, op_info((Op)n->op)->name);
		break;
	}
	default:
		return bad(ck, "node %u: bad kind", r);
	}
	ck->depth[r] = (uint16_t)(d + 1);
	if (d + 1 > FE_MAXDEPTH)
		return err(ck, npos(ck, r), "expression nested too deeply (more than %d levels)",
			   FE_MAXDEPTH);
	return 0;
}

/* Validates the nodes created since the last call. */
static int nodes_ok(Checker *ck)
{
	grow(ck);
	for (; ck->checked < ck->g->nnodes; ck->checked++)
		if (node_ok(ck, ck->checked))
			return -1;
	return 0;
}

static bool ref_ok(const Checker *ck, Ref r)
{
	return r > 0 && r < ck->checked;
}

/* ------------------------------------------------------------------ names */

static int redefined(Checker *ck, const char *name, SrcPos pos, SrcPos first)
{
	char b[40];
	return err(ck, pos, "redefinition of '%s' (first defined at %s)", name, where(&first, b, sizeof b));
}

/* Open-addressing tables of names: sizes and tensors in one, index names in the other. The
 * names belong to the graph. */
static uint32_t strhash(const char *s)
{
	uint32_t h = 2166136261u;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 16777619u;
	return h;
}

static Sym *tfind(const Table *t, const char *name)
{
	if (!t->cap)
		return NULL;
	for (uint32_t i = strhash(name) & (t->cap - 1);; i = (i + 1) & (t->cap - 1)) {
		if (!t->s[i].name)
			return NULL;
		if (strcmp(t->s[i].name, name) == 0)
			return &t->s[i];
	}
}

static void tput(Table *t, Sym sym)
{
	if (tfind(t, sym.name))
		return;
	if (2 * (t->n + 1) > t->cap) {
		Table u = {calloc(t->cap ? 2 * t->cap : 64, sizeof(Sym)), t->cap ? 2 * t->cap : 64, 0};
		IR_ASSERT(u.s);
		for (uint32_t i = 0; i < t->cap; i++)
			if (t->s[i].name)
				tput(&u, t->s[i]);
		free(t->s);
		*t = u;
	}
	uint32_t i = strhash(sym.name) & (t->cap - 1);
	while (t->s[i].name)
		i = (i + 1) & (t->cap - 1);
	t->s[i] = sym;
	t->n++;
}

int ck_find(const Checker *ck, const char *name, SymKind *kind)
{
	const Sym *s = tfind(&ck->names, name);
	if (!s)
		return -1;
	*kind = (SymKind)s->kind;
	return s->id;
}

/* name is not a size, nor a tensor with id < ntensor. */
static int name_free(Checker *ck, const char *name, SrcPos pos, int ntensor)
{
	const Sym *s = tfind(&ck->names, name);
	if (s && (s->kind == SYM_SIZE || s->id < ntensor))
		return redefined(ck, name, pos, s->pos);
	return 0;
}

int ck_name_free(Checker *ck, const char *name, SrcPos pos)
{
	return name_free(ck, name, pos, ck->g->ntensors);
}

/* Declares a size or tensor name (it may have been declared by an earlier call). */
static int declare(Checker *ck, const char *name, SymKind kind, int id, SrcPos pos)
{
	const Sym *s = tfind(&ck->names, name);
	if (s && (s->kind != kind || s->id != id))
		return redefined(ck, name, pos, s->pos);
	if (kind == SYM_SIZE && (s = tfind(&ck->indices, name)) != NULL)
		return redefined(ck, name, pos, s->pos);
	tput(&ck->names, (Sym){name, (uint8_t)kind, id, pos});
	return 0;
}

int ck_size(Checker *ck, int s)
{
	const Size *S = &ck->g->sizes[s];
	if (!S->name || !*S->name)
		return bad(ck, "size %d has no name", s);
	if (declare(ck, S->name, SYM_SIZE, s, S->pos))
		return -1;
	if (S->value < 1 || S->value > I32MAX)
		return err(ck, S->pos, "size '%s' must be an integer from 1 to 2147483647", S->name);
	return 0;
}

static int extent_ok(Checker *ck, const Extent *e, SrcPos pos, const char *what)
{
	if (e->size >= 0) {
		if (e->size >= ck->g->nsizes || e->value != ck->g->sizes[e->size].value)
			return bad(ck, "extent of %s names size %d wrongly", what, (int)e->size);
		return 0;
	}
	if (e->size != -1 || e->value < 1 || e->value > I32MAX)
		return err(ck, pos, "the extent of %s must be an integer from 1 to 2147483647", what);
	return 0;
}

int ck_tensor(Checker *ck, int t)
{
	const Graph *g = ck->g;
	const Tensor *T = &g->tensors[t];
	if (!T->name || !*T->name)
		return bad(ck, "tensor %d has no name", t);
	if (declare(ck, T->name, SYM_TENSOR, t, T->pos))
		return -1;
	if (T->dtype < 0 || T->dtype >= DT__COUNT || !dt_info((Dtype)T->dtype)->in_graph)
		return err(ck, T->pos, "'%s' has format %s, which is not a graph format", T->name,
			   dt_name((Dtype)T->dtype));
	if (T->rank < 0 || T->rank > IR_MAXRANK)
		return bad(ck, "tensor '%s' has rank %d", T->name, T->rank);
	if ((T->kind == TK_INPUT) != (T->def < 0) || T->def >= g->ndefs || T->kind > TK_DEF)
		return bad(ck, "tensor '%s' has a bad kind or definition", T->name);
	int64_t count = 1;
	for (int k = 0; k < T->rank; k++) {
		char what[300];
		snprintf(what, sizeof what, "'%s'", T->name);
		if (extent_ok(ck, &T->dims[k], T->pos, what))
			return -1;
		count = smul(count, T->dims[k].value);
	}
	if (count > ((int64_t)1 << 48))
		return err(ck, T->pos, "'%s' has too many elements (more than 2^48)", T->name);
	return 0;
}

/* ------------------------------------------------------- index arithmetic */

static bool has_vars(const Checker *ck, Ref r)
{
	const Node *n = N(ck, r);
	if (n->kind == NK_INT || n->kind == NK_SIZE)
		return false;
	if (n->kind != NK_OP)
		return true;
	for (int k = 0; k < op_info((Op)n->op)->arity; k++)
		if (has_vars(ck, n->a[k]))
			return true;
	return false;
}

static uint32_t vars_of(const Checker *ck, Ref r)
{
	const Node *n = N(ck, r);
	if (n->kind == NK_VAR)
		return 1u << n->u.var;
	if (n->kind != NK_OP)
		return 0;
	uint32_t m = 0;
	for (int k = 0; k < op_info((Op)n->op)->arity; k++)
		m |= vars_of(ck, n->a[k]);
	return m;
}

enum { Q_OK, Q_READ, Q_MUL, Q_DIV, Q_OTHER };

/* Is r quasi-affine? If not, why, and *at is the node at fault. */
static int qaff_why(Checker *ck, Ref r, Ref *at)
{
	if (ck->qaff[r] == 1)
		return Q_OK;
	const Node *n = N(ck, r);
	int why = Q_OK;
	*at = r;
	if (n->kind == NK_READ)
		return Q_READ;
	if (n->kind == NK_NUM)
		return Q_OTHER;
	if (n->kind == NK_OP) {
		switch (n->op) {
		case OP_ADD: case OP_SUB:
			why = qaff_why(ck, n->a[0], at);
			if (!why)
				why = qaff_why(ck, n->a[1], at);
			break;
		case OP_NEG:
			why = qaff_why(ck, n->a[0], at);
			break;
		case OP_MUL:
			why = qaff_why(ck, n->a[0], at);
			if (!why)
				why = qaff_why(ck, n->a[1], at);
			if (!why && has_vars(ck, n->a[0]) && has_vars(ck, n->a[1]))
				*at = r, why = Q_MUL;
			break;
		case OP_IDIV: case OP_MOD: {
			const Node *c = N(ck, n->a[1]);
			if (!((c->kind == NK_INT && c->u.ival > 0) || c->kind == NK_SIZE))
				return Q_DIV;
			why = qaff_why(ck, n->a[0], at);
			break;
		}
		default:
			return Q_OTHER;
		}
	}
	if (!why)
		ck->qaff[r] = 1;
	return why;
}

static bool qaff_ok(Checker *ck, Ref r)
{
	Ref at;
	return qaff_why(ck, r, &at) == Q_OK;
}

/* The value of a quasi-affine expression at the point vals. */
static int64_t qeval(const Checker *ck, Ref r, const int64_t *vals)
{
	const Node *n = N(ck, r);
	switch (n->kind) {
	case NK_INT: return clamp(n->u.ival);
	case NK_SIZE: return clamp(ck->g->sizes[n->u.size].value);
	case NK_VAR: return vals[n->u.var];
	case NK_OP: break;
	default: return 0;
	}
	int64_t a = qeval(ck, n->a[0], vals);
	int64_t b = n->a[1] ? qeval(ck, n->a[1], vals) : 0;
	switch (n->op) {
	case OP_ADD: return sadd(a, b);
	case OP_SUB: return sadd(a, -b);
	case OP_NEG: return -a;
	case OP_MUL: return smul(a, b);
	case OP_IDIV: return b > 0 ? floordiv(a, b) : 0;
	case OP_MOD: return b > 0 ? nnmod(a, b) : 0;
	default: return 0;
	}
}

static bool lin_const(const Lin *L)
{
	for (int v = 0; v < IR_MAXVARS; v++)
		if (L->c[v])
			return false;
	return true;
}

static void lin_scale(Lin *L, int64_t k)
{
	L->c0 = smul(L->c0, k);
	for (int v = 0; v < IR_MAXVARS; v++)
		L->c[v] = smul(L->c[v], k);
}

/* The affine form of r in the index variables; parts without variables may use / and %. */
static bool lin_of(Checker *ck, Ref r, Lin *L)
{
	const Node *n = N(ck, r);
	memset(L, 0, sizeof *L);
	if (n->ty != TY_INT)
		return false;
	if (n->kind == NK_VAR) {
		L->c[n->u.var] = 1;
		return true;
	}
	if (!has_vars(ck, r)) {
		if (!qaff_ok(ck, r))
			return false;
		L->c0 = qeval(ck, r, NULL);
		return true;
	}
	if (n->kind != NK_OP)
		return false;
	Lin B;
	switch (n->op) {
	case OP_ADD: case OP_SUB:
		if (!lin_of(ck, n->a[0], L) || !lin_of(ck, n->a[1], &B))
			return false;
		if (n->op == OP_SUB)
			lin_scale(&B, -1);
		L->c0 = sadd(L->c0, B.c0);
		for (int v = 0; v < IR_MAXVARS; v++)
			L->c[v] = sadd(L->c[v], B.c[v]);
		return true;
	case OP_NEG:
		if (!lin_of(ck, n->a[0], L))
			return false;
		lin_scale(L, -1);
		return true;
	case OP_MUL:
		if (!lin_of(ck, n->a[0], L) || !lin_of(ck, n->a[1], &B))
			return false;
		if (lin_const(L)) {
			lin_scale(&B, L->c0);
			*L = B;
			return true;
		}
		if (lin_const(&B)) {
			lin_scale(L, B.c0);
			return true;
		}
		return false;
	default:
		return false;
	}
}

static int64_t lin_eval(const Lin *L, const int64_t *vals, int nv)
{
	int64_t s = L->c0;
	for (int v = 0; v < nv; v++)
		if (L->c[v])
			s = sadd(s, smul(L->c[v], vals[v]));
	return s;
}

/* Range of L over a box; argmin/argmax (may be NULL) get the points of the extremes. */
static Ivl lin_box(const Lin *L, const Ivl *box, int nv, int64_t *argmin, int64_t *argmax)
{
	Ivl r = {L->c0, L->c0};
	for (int v = 0; v < nv; v++) {
		int64_t c = L->c[v];
		int64_t at_lo = c > 0 ? box[v].lo : box[v].hi, at_hi = c > 0 ? box[v].hi : box[v].lo;
		if (argmin)
			argmin[v] = at_lo;
		if (argmax)
			argmax[v] = at_hi;
		if (c) {
			r.lo = sadd(r.lo, smul(c, at_lo));
			r.hi = sadd(r.hi, smul(c, at_hi));
		}
	}
	return r;
}

/* Interval arithmetic over a quasi-affine expression (affine parts exactly). */
static Ivl qivl(Checker *ck, Ref r, const Ivl *box)
{
	Lin L;
	if (lin_of(ck, r, &L))
		return lin_box(&L, box, IR_MAXVARS, NULL, NULL);
	const Node *n = N(ck, r);
	Ivl all = {-BIG, BIG};
	if (n->kind != NK_OP)
		return all;
	Ivl a = qivl(ck, n->a[0], box), b = n->a[1] ? qivl(ck, n->a[1], box) : a;
	switch (n->op) {
	case OP_ADD: return (Ivl){sadd(a.lo, b.lo), sadd(a.hi, b.hi)};
	case OP_SUB: return (Ivl){sadd(a.lo, -b.hi), sadd(a.hi, -b.lo)};
	case OP_NEG: return (Ivl){-a.hi, -a.lo};
	case OP_MUL: {
		int64_t p[4] = {smul(a.lo, b.lo), smul(a.lo, b.hi), smul(a.hi, b.lo), smul(a.hi, b.hi)};
		Ivl m = {p[0], p[0]};
		for (int k = 1; k < 4; k++) {
			m.lo = p[k] < m.lo ? p[k] : m.lo;
			m.hi = p[k] > m.hi ? p[k] : m.hi;
		}
		return m;
	}
	case OP_IDIV:
		if (b.lo != b.hi || b.lo <= 0)
			return all;
		return (Ivl){floordiv(a.lo, b.lo), floordiv(a.hi, b.lo)};
	case OP_MOD:
		if (b.lo != b.hi || b.lo <= 0)
			return all;
		if (floordiv(a.lo, b.lo) == floordiv(a.hi, b.lo))
			return (Ivl){nnmod(a.lo, b.lo), nnmod(a.hi, b.lo)};
		return (Ivl){0, b.lo - 1};
	default:
		return all;
	}
}

/* ------------------------------------------------------------ the domain */

static const char *var_name(const Checker *ck, int v)
{
	const Def *D = ck->D;
	return v < D->nlhs ? D->lhs[v].name : D->red[v - D->nlhs].name;
}

static int bound_ok(Checker *ck, int r, Ref b, Lin *L)
{
	const Def *D = ck->D;
	const char *name = D->red[r].name;
	if (!lin_of(ck, b, L)) {
		char *s = etext(ck, b);
		err(ck, npos(ck, b), "the range of '%s' is not affine: '%s'", name, s);
		free(s);
		return -1;
	}
	int v = D->nlhs + r;
	for (int u = v; u < IR_MAXVARS; u++) {
		if (!L->c[u])
			continue;
		if (u >= D->nlhs + D->nred)
			return bad(ck, "the range of '%s' uses index variable %d", name, u);
		if (u == v)
			return err(ck, npos(ck, b), "the range of '%s' uses '%s' itself", name, name);
		return err(ck, npos(ck, b), "the range of '%s' uses '%s', an index declared to its right",
			   name, var_name(ck, u));
	}
	ck->dom.bvars |= vars_of(ck, b);
	return 0;
}

/* Sets up ck->dom for ck->D, checking its reduction ranges. */
static int dom_setup(Checker *ck)
{
	const Def *D = ck->D;
	Dom *m = &ck->dom;
	memset(m, 0, sizeof *m);
	m->nlhs = D->nlhs;
	m->nv = D->nlhs + D->nred;
	for (int k = 0; k < D->nlhs; k++)
		m->hull[k] = (Ivl){0, D->lhs[k].ext.value - 1};
	for (int r = 0; r < D->nred; r++) {
		const RedIndex *R = &D->red[r];
		if (!ref_ok(ck, R->lo) || !ref_ok(ck, R->hi))
			return bad(ck, "the range of '%s' has no bounds", R->name);
		if (R->full) {
			const Node *lo = N(ck, R->lo), *hi = N(ck, R->hi);
			if (lo->kind != NK_INT || lo->u.ival != 0 || (hi->kind != NK_SIZE &&
			    (hi->kind != NK_INT || hi->u.ival < 1 || hi->u.ival > I32MAX)))
				return bad(ck, "the range of '%s' is marked full but is not 0..E", R->name);
		}
		if (bound_ok(ck, r, R->lo, &m->lo[r]) || bound_ok(ck, r, R->hi, &m->hi[r]))
			return -1;
		int v = D->nlhs + r;
		int64_t lo = lin_box(&m->lo[r], m->hull, v, NULL, NULL).lo;
		int64_t hi = lin_box(&m->hi[r], m->hull, v, NULL, NULL).hi - 1;
		if (lo > hi)
			m->empty = true;
		m->hull[v] = (Ivl){lo, hi < lo ? lo : hi};
	}
	return 0;
}

/* ------------------------------------------------------------------ bounds */

typedef struct {
	Checker *ck;
	Ref e;
	bool aff;
	Lin L;
	uint32_t en;   /* enumerated indices */
	int64_t ext;
	int64_t vals[IR_MAXVARS];
	int64_t wit[IR_MAXVARS];
	int64_t badval;
} Probe;

/* One point of the enumerated indices: is the index out of range somewhere in it? */
static bool leaf(Probe *pb)
{
	const Dom *m = &pb->ck->dom;
	Ivl fr[IR_MAXVARS];
	for (int v = 0; v < m->nv; v++) {
		if (pb->en & (1u << v))
			continue;
		if (v < m->nlhs) {
			fr[v] = m->hull[v];
			continue;
		}
		int64_t lo = lin_eval(&m->lo[v - m->nlhs], pb->vals, v);
		int64_t hi = lin_eval(&m->hi[v - m->nlhs], pb->vals, v) - 1;
		if (lo > hi)
			return false;   /* an empty range: nothing is read here */
		fr[v] = (Ivl){lo, hi};
	}
	if (!pb->aff) {
		int64_t x = qeval(pb->ck, pb->e, pb->vals);
		memcpy(pb->wit, pb->vals, sizeof pb->wit);
		pb->badval = x;
		return x < 0 || x > pb->ext - 1;
	}
	int64_t mn = pb->L.c0, mx = pb->L.c0, amin[IR_MAXVARS], amax[IR_MAXVARS];
	for (int v = 0; v < m->nv; v++) {
		int64_t c = pb->L.c[v];
		if (pb->en & (1u << v)) {
			amin[v] = amax[v] = pb->vals[v];
		} else {
			amin[v] = c > 0 ? fr[v].lo : fr[v].hi;
			amax[v] = c > 0 ? fr[v].hi : fr[v].lo;
		}
		mn = sadd(mn, smul(c, amin[v]));
		mx = sadd(mx, smul(c, amax[v]));
	}
	if (mx > pb->ext - 1) {
		memcpy(pb->wit, amax, sizeof amax);
		pb->badval = mx;
		return true;
	}
	if (mn < 0) {
		memcpy(pb->wit, amin, sizeof amin);
		pb->badval = mn;
		return true;
	}
	return false;
}

static bool enumerate(Probe *pb, int v)
{
	const Dom *m = &pb->ck->dom;
	while (v < m->nv && !(pb->en & (1u << v)))
		v++;
	if (v == m->nv)
		return leaf(pb);
	int64_t lo = 0, hi = m->hull[v].hi;
	if (v >= m->nlhs) {
		lo = lin_eval(&m->lo[v - m->nlhs], pb->vals, v);
		hi = lin_eval(&m->hi[v - m->nlhs], pb->vals, v) - 1;
	}
	for (int64_t x = lo; x <= hi; x++) {
		pb->vals[v] = x;
		if (enumerate(pb, v + 1))
			return true;
	}
	return false;
}

/* "i=63, k=2" for the indices in mask. */
static void point_text(const Checker *ck, uint32_t mask, const int64_t *vals, char *buf, size_t n)
{
	size_t len = 0;
	buf[0] = 0;
	for (int v = 0; v < ck->dom.nv && len < n; v++)
		if (mask & (1u << v))
			len += (size_t)snprintf(buf + len, n - len, "%s%s=%lld", len ? ", " : "",
						var_name(ck, v), (long long)vals[v]);
}

/* Index k (expression e) of read rd lies in [0, ext) at every point of the domain. */
static int read_bounds(Checker *ck, Ref rd, int k, Ref e, int64_t ext)
{
	const Dom *m = &ck->dom;
	if (m->empty)
		return 0;
	Ivl iv = qivl(ck, e, m->hull);   /* a superset of the values: usually proof enough */
	if (iv.lo >= 0 && iv.hi <= ext - 1)
		return 0;
	Probe pb = {.ck = ck, .e = e, .ext = ext};
	pb.aff = lin_of(ck, e, &pb.L);
	uint32_t ev = vars_of(ck, e);
	pb.en = m->bvars | (pb.aff ? 0 : ev);
	int64_t count = 1;
	for (int v = 0; v < m->nv; v++)
		if (pb.en & (1u << v))
			count = smul(count, m->hull[v].hi - m->hull[v].lo + 1);
	char *s;
	if (count <= ENUM_CAP) {
		if (!enumerate(&pb, 0))
			return 0;
		if (pb.aff) {
			ev = 0;
			for (int v = 0; v < m->nv; v++)
				ev |= pb.L.c[v] ? 1u << v : 0;
		}
		char pt[300];
		point_text(ck, ev, pb.wit, pt, sizeof pt);
		s = etext(ck, rd);
		err(ck, npos(ck, rd), "read %s may be out of bounds: %s%s%sindex %d is %lld, extent %lld",
		    s, ev ? "at " : "", pt, ev ? " " : "", k, (long long)pb.badval, (long long)ext);
	} else {
		s = etext(ck, rd);
		err(ck, npos(ck, rd), "read %s may be out of bounds: index %d may reach %lld, extent %lld",
		    s, k, (long long)(iv.hi > ext - 1 ? iv.hi : iv.lo), (long long)ext);
	}
	free(s);
	return -1;
}

/* topk's K (the last left-hand extent) is within the length of its range everywhere. */
static int topk_ok(Checker *ck)
{
	const Def *D = ck->D;
	const Dom *m = &ck->dom;
	Lin len = m->hi[0];
	for (int v = 0; v < IR_MAXVARS; v++)
		len.c[v] = sadd(len.c[v], -m->lo[0].c[v]);
	len.c0 = sadd(len.c0, -m->lo[0].c0);
	int64_t K = D->lhs[D->nlhs - 1].ext.value, at[IR_MAXVARS];
	int64_t mn = lin_box(&len, m->hull, D->nlhs, at, NULL).lo;
	if (mn >= K)
		return 0;
	uint32_t mask = 0;
	for (int v = 0; v < D->nlhs; v++)
		mask |= len.c[v] ? 1u << v : 0;
	if (!mask)
		return err(ck, D->red[0].pos, "topk: K = %lld is larger than the range of '%s' "
			   "(length %lld)", (long long)K, D->red[0].name, (long long)mn);
	char pt[300];
	point_text(ck, mask, at, pt, sizeof pt);
	return err(ck, D->red[0].pos, "topk: K = %lld is larger than the range of '%s' at %s "
		   "(length %lld)", (long long)K, D->red[0].name, pt, (long long)mn);
}

/* --------------------------------------------------------- integer values */

static Ivl imul(Ivl a, Ivl b)
{
	int64_t p[4] = {smul(a.lo, b.lo), smul(a.lo, b.hi), smul(a.hi, b.lo), smul(a.hi, b.hi)};
	Ivl v = {p[0], p[0]};
	for (int k = 1; k < 4; k++) {
		v.lo = p[k] < v.lo ? p[k] : v.lo;
		v.hi = p[k] > v.hi ? p[k] : v.hi;
	}
	return v;
}

/* The interval of an integer operation on operand intervals a, b; false if unknown. */
static bool int_op(Op op, Ivl a, Ivl b, Ivl *v)
{
	switch (op) {
	case OP_ADD: *v = (Ivl){sadd(a.lo, b.lo), sadd(a.hi, b.hi)}; return true;
	case OP_SUB: *v = (Ivl){sadd(a.lo, -b.hi), sadd(a.hi, -b.lo)}; return true;
	case OP_NEG: *v = (Ivl){-a.hi, -a.lo}; return true;
	case OP_MUL: *v = imul(a, b); return true;
	case OP_ABS:
		*v = a.lo >= 0 ? a : a.hi <= 0 ? (Ivl){-a.hi, -a.lo} : (Ivl){0, -a.lo > a.hi ? -a.lo : a.hi};
		return true;
	case OP_MAX: *v = (Ivl){a.lo > b.lo ? a.lo : b.lo, a.hi > b.hi ? a.hi : b.hi}; return true;
	case OP_MIN: *v = (Ivl){a.lo < b.lo ? a.lo : b.lo, a.hi < b.hi ? a.hi : b.hi}; return true;
	case OP_SELECT: *v = (Ivl){a.lo < b.lo ? a.lo : b.lo, a.hi > b.hi ? a.hi : b.hi}; return true;
	case OP_MOD: {
		int64_t m = -b.lo > b.hi ? -b.lo : b.hi;
		*v = (Ivl){0, m > 0 ? m - 1 : 0};
		return true;
	}
	case OP_IDIV:
		if (b.lo != b.hi || b.lo <= 0)
			return false;
		*v = (Ivl){floordiv(a.lo, b.lo), floordiv(a.hi, b.lo)};
		return true;
	default:
		return false;
	}
}

/* An integer value without reads must fit in 32 bits (interval arithmetic over the
 * domain's hulls; reads of i32 tensors are checked when evaluated). */
static int int_fits(Checker *ck, Ref r)
{
	if (ck->seen_iv[r] == ck->stamp)
		return 0;
	ck->seen_iv[r] = ck->stamp;
	const Node *n = N(ck, r);
	Ivl v = {0, 0};
	bool unk = n->ty != TY_INT || ck->dom.empty || n->kind == NK_READ || n->kind == NK_NUM;
	if (!unk && n->kind == NK_OP) {
		int k0 = n->op == OP_SELECT ? 1 : 0, ar = op_info((Op)n->op)->arity;
		for (int k = k0; k < ar; k++) {
			int_fits(ck, n->a[k]);
			unk |= ck->ivunk[n->a[k]] != 0;
		}
		Ivl a = ck->iv[n->a[k0]], b = ar > k0 + 1 ? ck->iv[n->a[k0 + 1]] : a;
		if (!unk)
			unk = !int_op((Op)n->op, a, b, &v);
	} else if (!unk) {
		if (n->kind == NK_INT)
			v.lo = v.hi = clamp(n->u.ival);
		else if (n->kind == NK_SIZE)
			v.lo = v.hi = ck->g->sizes[n->u.size].value;
		else
			v = ck->dom.hull[n->u.var];
	}
	ck->iv[r] = v;
	ck->ivunk[r] = unk;
	if (unk || (v.lo >= I32MIN && v.hi <= I32MAX))
		return 0;
	char *s = etext(ck, r);
	err(ck, npos(ck, r), "integer value '%s' may not fit in 32 bits (it can reach %lld)", s,
	    (long long)(v.hi > I32MAX ? v.hi : v.lo));
	free(s);
	return -1;
}

/* ------------------------------------------------------------ definitions */

static int walk(Checker *ck, Ref r, bool index);

static int index_ok(Checker *ck, const Tensor *T, int k, Ref e)
{
	Ref at = e;
	int why = qaff_why(ck, e, &at);
	if (!why)
		return 0;
	static const char *const reason[] = {
		[Q_READ] = ": an indirect read must be the whole index",
		[Q_MUL] = ": '*' needs an integer literal or a size on one side",
		[Q_DIV] = "", [Q_OTHER] = "",
	};
	char *s = etext(ck, e);
	if (why == Q_DIV)
		err(ck, npos(ck, at), "index '%s' of '%s' is not quasi-affine: '%s' needs a positive "
		    "integer literal or a size on its right", s, T->name,
		    N(ck, at)->op == OP_MOD ? "%" : "/");
	else
		err(ck, npos(ck, at), "index '%s' of '%s' is not quasi-affine%s", s, T->name, reason[why]);
	(void)k;
	free(s);
	return -1;
}

static int walk_read(Checker *ck, Ref r)
{
	const Graph *g = ck->g;
	const Def *D = ck->D;
	const Node *n = N(ck, r);
	if (ck->seen_r[r] == ck->stamp)
		return 0;
	ck->seen_r[r] = ck->stamp;
	int t = (int)n->u.read.tensor;
	const Tensor *T = &g->tensors[t];
	if (t >= D->out[0])
		return err(ck, npos(ck, r), t <= D->out[D->nout - 1] ? "'%s' is read in its own definition"
			   : "'%s' is read before its definition", T->name);
	if ((int)n->u.read.n != T->rank)
		return err(ck, npos(ck, r), "'%s' has rank %d but is read with %u %s", T->name, T->rank,
			   n->u.read.n, n->u.read.n == 1 ? "index" : "indices");
	const Ref *ix = ir_read_idx(g, n);
	for (int k = 0; k < T->rank; k++) {
		Ref e = ix[k];
		const Node *en = N(ck, e);
		if (en->kind == NK_READ) {
			const Tensor *I = &g->tensors[en->u.read.tensor];
			if (I->dtype != DT_I32)
				return err(ck, npos(ck, e), "index %d of '%s' reads '%s', which is not an i32 "
					   "tensor", k, T->name, I->name);
			if (en->ty != TY_INT)
				return err(ck, npos(ck, e), "the default after '?\?' in index %d of '%s' must be "
					   "an integer", k, T->name);
			if (walk(ck, e, true))
				return -1;
			continue;
		}
		if (index_ok(ck, T, k, e) || walk(ck, e, true))
			return -1;
		if (!n->u.read.pad && read_bounds(ck, r, k, e, T->dims[k].value))
			return -1;
	}
	return n->u.read.pad ? walk(ck, n->u.read.pad, false) : 0;
}

/* Checks the expression r (post-order, each node once per definition and context). */
static int walk(Checker *ck, Ref r, bool index)
{
	uint32_t *seen = index ? ck->seen_i : ck->seen_v;
	if (seen[r] == ck->stamp)
		return 0;
	seen[r] = ck->stamp;
	const Node *n = N(ck, r);
	if (n->kind == NK_VAR && (int)n->u.var >= ck->dom.nv)
		return bad(ck, "node %u: index variable %u is not one of '%s'", r, n->u.var,
			   ck->g->tensors[ck->D->out[0]].name);
	if (n->kind == NK_READ && walk_read(ck, r))
		return -1;
	if (n->kind == NK_OP) {
		if (!index && n->op == OP_IDIV)
			return err(ck, npos(ck, r), "floor division is only allowed in indices");
		for (int k = 0; k < op_info((Op)n->op)->arity; k++)
			if (walk(ck, n->a[k], index))
				return -1;
	}
	return n->ty == TY_INT ? int_fits(ck, r) : 0;
}

/* Result tensors, indices and their names. */
static int def_shape(Checker *ck, int def)
{
	const Graph *g = ck->g;
	const Def *D = ck->D;
	if (D->nout < 1 || D->nout > 2 || (D->nout == 2) != (D->monoid == MO_TOPK) ||
	    D->nlhs < 0 || D->nlhs > IR_MAXRANK || D->nred < 0 || D->nred > IR_MAXRED ||
	    D->monoid < 0 || D->monoid >= MO__COUNT || (D->monoid == MO_NONE) != (D->nred == 0))
		return bad(ck, "definition %d has a bad shape", def);
	for (int o = 0; o < D->nout; o++) {
		int t = D->out[o];
		if (t < 0 || t >= g->ntensors || g->tensors[t].kind != TK_DEF || g->tensors[t].def != def ||
		    g->tensors[t].result != o || g->tensors[t].rank != D->nlhs)
			return bad(ck, "definition %d: bad result tensor %d", def, t);
		if (ck_tensor(ck, t))
			return -1;
		for (int k = 0; k < D->nlhs; k++)
			if (g->tensors[t].dims[k].size != D->lhs[k].ext.size ||
			    g->tensors[t].dims[k].value != D->lhs[k].ext.value) {
				if (o == 0)
					return bad(ck, "'%s': extents differ from its indices'", g->tensors[t].name);
				return err(ck, g->tensors[t].pos, "the second result of topk must have the same "
					   "left-hand extents as the first");
			}
	}
	int last = D->out[D->nout - 1] + 1;
	for (int v = 0; v < D->nlhs + D->nred; v++) {
		const char *name = var_name(ck, v);
		SrcPos pos = v < D->nlhs ? D->lhs[v].pos : D->red[v - D->nlhs].pos;
		if (!name || !*name)
			return bad(ck, "definition %d: index %d has no name", def, v);
		for (int u = 0; u < v; u++)
			if (strcmp(var_name(ck, u), name) == 0)
				return err(ck, pos, "index '%s' is declared twice", name);
		if (name_free(ck, name, pos, last))
			return -1;
		tput(&ck->indices, (Sym){name, SYM_INDEX, def, pos});
		if (v < D->nlhs && extent_ok(ck, &D->lhs[v].ext, pos, "an index"))
			return -1;
	}
	return 0;
}

/* Whether expression r mentions variable v anywhere, reads' index lists and defaults
 * included. Operands always have smaller ids than their node (hash-consing builds bottom
 * up), so one forward pass over ids 1..r computes every node's variable mask. */
static bool mentions_var(const Graph *g, Ref r, uint32_t v)
{
	if (!r || r >= g->nnodes)
		return false;
	uint32_t *m = calloc((size_t)r + 1, sizeof *m);
	IR_ASSERT(m);
	for (Ref i = 1; i <= r; i++) {
		const Node *n = &g->nodes[i];
		if (n->kind == NK_VAR)
			m[i] = n->u.var < 32 ? 1u << n->u.var : 0;
		else if (n->kind == NK_OP)
			for (int k = 0; k < op_info((Op)n->op)->arity; k++)
				m[i] |= n->a[k] < i ? m[n->a[k]] : 0;
		else if (n->kind == NK_READ) {
			for (uint32_t k = 0; k < n->u.read.n; k++) {
				Ref x = g->refs[n->u.read.first + k];
				m[i] |= x < i ? m[x] : 0;
			}
			m[i] |= n->u.read.pad && n->u.read.pad < i ? m[n->u.read.pad] : 0;
		}
	}
	bool used = (m[r] >> v) & 1u;
	free(m);
	return used;
}

static int monoid_ok(Checker *ck)
{
	const Def *D = ck->D;
	bool one = D->monoid == MO_ARGMAX || D->monoid == MO_ARGMIN || D->monoid == MO_TOPK;
	if (one && D->nred != 1)
		return err(ck, D->red[1].pos, "%s takes one reduction index, found %d",
			   monoid_name(D->monoid), D->nred);
	if (D->monoid == MO_TOPK && D->nlhs == 0)
		return err(ck, D->pos, "topk needs a left-hand index: its last one ranges over the K results");
	/* The K results rank one set of terms: the terms may not depend on the rank index. */
	uint32_t kv = (uint32_t)D->nlhs - 1;
	if (D->monoid == MO_TOPK &&
	    (mentions_var(ck->g, D->body, kv) || mentions_var(ck->g, D->red[0].lo, kv) ||
	     mentions_var(ck->g, D->red[0].hi, kv)))
		return err(ck, D->lhs[kv].pos, "topk: the terms may not use '%s', the index of the K "
			   "results", D->lhs[kv].name);
	return 0;
}

int ck_def(Checker *ck, int def)
{
	const Graph *g = ck->g;
	if (def < 0 || def >= g->ndefs)
		return bad(ck, "no definition %d", def);
	ck->D = &g->defs[def];
	ck->def = def;
	const Def *D = ck->D;
	int rc = -1;
	if (nodes_ok(ck) || def_shape(ck, def) || dom_setup(ck) || monoid_ok(ck))
		goto out;
	if (!ref_ok(ck, D->body)) {
		rc = bad(ck, "definition %d has no body", def);
		goto out;
	}
	ck->stamp++;
	for (int r = 0; r < D->nred; r++)
		if (walk(ck, D->red[r].lo, true) || walk(ck, D->red[r].hi, true))
			goto out;
	if (want_number(ck, D->body) || walk(ck, D->body, false))
		goto out;
	if (D->monoid == MO_TOPK && topk_ok(ck))
		goto out;
	if (D->ty != ck_def_type(g, D) ||
	    g->tensors[D->out[0]].dtype != (D->ty == TY_INT ? DT_I32 : DT_F64) ||
	    (D->nout == 2 && g->tensors[D->out[1]].dtype != DT_I32)) {
		rc = bad(ck, "definition '%s' has the wrong type", g->tensors[D->out[0]].name);
		goto out;
	}
	rc = 0;
out:
	ck->D = NULL;
	return rc;
}

/* ---------------------------------------------------------------- outputs */

int ck_outputs(Checker *ck)
{
	const Graph *g = ck->g;
	if (g->noutputs == 0)
		return err(ck, (SrcPos){g->file, 0, 0}, "the graph has no output");
	for (int k = 0; k < g->noutputs; k++) {
		const Output *O = &g->outputs[k];
		if (O->tensor < 0 || O->tensor >= g->ntensors)
			return bad(ck, "output %d names no tensor", k);
		const Tensor *T = &g->tensors[O->tensor];
		if (T->kind == TK_INPUT)
			return err(ck, O->pos, "'%s' is an input; an output must be a definition", T->name);
		if (O->dtype < 0 || O->dtype >= DT__COUNT || !dt_info(O->dtype)->in_graph)
			return err(ck, O->pos, "output '%s': %s is not a graph format", T->name,
				   dt_name(O->dtype));
		if (O->dtype == DT_I32 && T->dtype != DT_I32)
			return err(ck, O->pos, "output '%s' cannot be i32: its values are real", T->name);
		for (int j = 0; j < k; j++)
			if (g->outputs[j].tensor == O->tensor)
				return err(ck, O->pos, "'%s' is an output twice", T->name);
	}
	return 0;
}

static void mark(Checker *ck, Ref r, uint8_t *used)
{
	if (ck->seen_v[r] == ck->stamp)
		return;
	ck->seen_v[r] = ck->stamp;
	const Node *n = N(ck, r);
	if (n->kind == NK_READ) {
		int def = ck->g->tensors[n->u.read.tensor].def;
		if (def >= 0)
			used[def] = 1;
		for (uint32_t k = 0; k < n->u.read.n; k++)
			mark(ck, ir_read_idx(ck->g, n)[k], used);
		if (n->u.read.pad)
			mark(ck, n->u.read.pad, used);
	} else if (n->kind == NK_OP) {
		for (int k = 0; k < op_info((Op)n->op)->arity; k++)
			mark(ck, n->a[k], used);
	}
}

int ck_unused(Checker *ck)
{
	const Graph *g = ck->g;
	uint8_t *used = calloc((size_t)g->ndefs + 1, 1);
	IR_ASSERT(used);
	for (int k = 0; k < g->noutputs; k++)
		if (g->tensors[g->outputs[k].tensor].def >= 0)
			used[g->tensors[g->outputs[k].tensor].def] = 1;
	ck->stamp++;
	for (int d = g->ndefs - 1; d >= 0; d--)
		if (used[d])
			mark(ck, g->defs[d].body, used);
	int rc = 0;
	for (int d = 0; d < g->ndefs && rc == 0; d++)
		if (!used[d])
			rc = err(ck, g->defs[d].pos, "definition '%s' is not used by any output",
				 g->tensors[g->defs[d].out[0]].name);
	free(used);
	return rc;
}

/* -------------------------------------------------------------- schedules */

static int dir_err(Checker *ck, const Directive *X, SrcPos pos, const char *file,
		   const char *src, size_t len, const char *fmt, ...) __attribute__((format(printf, 7, 8)));
static int dir_err(Checker *ck, const Directive *X, SrcPos pos, const char *file,
		   const char *src, size_t len, const char *fmt, ...)
{
	/* quote the text the directive came from: a schedule file or the graph */
	const char *s = NULL;
	size_t n = 0;
	if (X->pos.file && file && strcmp(X->pos.file, file) == 0)
		s = src, n = len;
	else if (X->pos.file && ck->g->file && strcmp(X->pos.file, ck->g->file) == 0)
		s = ck->g->src, n = ck->g->srclen;
	va_list ap;
	va_start(ap, fmt);
	verr(ck, pos, s, n, fmt, ap);
	va_end(ap);
	return -1;
}

static bool is_index(const Def *D, const char *name, bool red)
{
	for (int k = 0; k < (red ? D->nred : D->nlhs); k++)
		if (strcmp(red ? D->red[k].name : D->lhs[k].name, name) == 0)
			return true;
	return false;
}

#define DERR(pos, ...) dir_err(ck, X, pos, file, src, len, __VA_ARGS__)

/* `online d1, ...`: each member a definition that is a reduction, named once, and in no
 * other online set. Whether the set has a one-pass form is sched_build's question
 * (compiler/sched/online.c). */
static int online_ok(Checker *ck, int k, const char *file, const char *src, size_t len)
{
	Graph *g = ck->g;
	Directive *X = &g->dirs[k];
	for (int a = 0; a < X->nargs; a++) {
		const DirArg *A = &X->args[a];
		if (!A->name)
			return bad(ck, "directive %d: bad argument", k);
		int t = ir_find_tensor(g, A->name);
		if (t < 0)
			return DERR(A->pos, "unknown definition '%s'", A->name);
		if (g->tensors[t].kind == TK_INPUT)
			return DERR(A->pos, "'%s' is an input, not a definition", A->name);
		const Def *D = &g->defs[g->tensors[t].def];
		if (D->monoid == MO_NONE)
			return DERR(A->pos, "online of '%s', which is not a reduction", A->name);
		for (int b = 0; b < a; b++)
			if (strcmp(X->args[b].name, A->name) == 0)
				return DERR(A->pos, "'%s' appears twice in one online set", A->name);
		for (int j = 0; j < k; j++) {
			const Directive *Y = &g->dirs[j];
			for (int b = 0; Y->kind == SD_ONLINE && b < Y->nargs; b++)
				if (strcmp(Y->args[b].name, A->name) == 0)
					return DERR(A->pos, "'%s' is already in the online set at line %d",
						    A->name, Y->pos.line);
		}
	}
	X->def = g->tensors[ir_find_tensor(g, X->target)].def;
	return 0;
}

static int directive_ok(Checker *ck, int k, const char *file, const char *src, size_t len)
{
	Graph *g = ck->g;
	Directive *X = &g->dirs[k];
	if (X->kind >= SD__COUNT || !X->target || ((X->kind == SD_TILE || X->kind == SD_SPLIT ||
	    X->kind == SD_ONLINE) &&
	    (X->nargs < 1 || !X->args)) || X->fmt < 0 || X->fmt >= DT__COUNT ||
	    (X->order < 0 || X->order >= ORDER__COUNT))
		return bad(ck, "directive %d is malformed", k);
	const char *kw = fe_dir_name((DirKind)X->kind);
	int t = ir_find_tensor(g, X->target);
	if (t < 0)
		return DERR(X->pos, "unknown definition '%s'", X->target);
	if (g->tensors[t].kind == TK_INPUT)
		return DERR(X->pos, "'%s' is an input, not a definition", X->target);
	X->def = g->tensors[t].def;
	const Def *D = &g->defs[X->def];
	bool red = D->monoid != MO_NONE;
	if ((X->kind == SD_ACCUM || X->kind == SD_SPLIT || X->kind == SD_ORDER) && !red)
		return DERR(X->pos, "%s of '%s', which is not a reduction", kw, X->target);
	if (X->kind == SD_STORE && X->fmt == DT_I32 && g->tensors[t].dtype != DT_I32)
		return DERR(X->pos, "'%s' has real values; it cannot be stored as i32", X->target);
	if (X->kind == SD_ACCUM && X->fmt == DT_I32 && D->ty != TY_INT)
		return DERR(X->pos, "'%s' has real values; it cannot be accumulated in i32", X->target);
	if (X->kind == SD_INLINE)
		for (int o = 0; o < g->noutputs; o++)
			if (g->tensors[g->outputs[o].tensor].def == X->def)
				return DERR(X->pos, "'%s' is an output; it cannot be inlined", X->target);
	for (int a = 0; a < X->nargs && (X->kind == SD_TILE || X->kind == SD_SPLIT); a++) {
		const DirArg *A = &X->args[a];
		if (!A->name || A->value < 1)
			return bad(ck, "directive %d: bad argument", k);
		if (!is_index(D, A->name, X->kind == SD_SPLIT))
			return DERR(A->pos, "'%s' is not a %s index of '%s'", A->name,
				    X->kind == SD_SPLIT ? "reduction" : "left-hand", X->target);
		for (int b = 0; b < a; b++)
			if (strcmp(X->args[b].name, A->name) == 0)
				return DERR(A->pos, "index '%s' appears twice", A->name);
	}
	for (int a = 0; a < X->nargs && X->kind == SD_MMA; a++) {
		const DirArg *A = &X->args[a];
		if (!A->name || A->value < 1)
			return bad(ck, "directive %d: bad argument", k);
		if (strcmp(A->name, "m") != 0 && strcmp(A->name, "n") != 0 && strcmp(A->name, "k") != 0)
			return DERR(A->pos, "mma takes the instruction tile m, n, k, not '%s'", A->name);
		for (int b = 0; b < a; b++)
			if (strcmp(X->args[b].name, A->name) == 0)
				return DERR(A->pos, "'%s' appears twice", A->name);
	}
	if (X->kind == SD_MMA && !red)
		return DERR(X->pos, "mma of '%s', which is not a reduction", X->target);
	if (X->kind == SD_ONLINE)
		return online_ok(ck, k, file, src, len);
	for (int j = 0; j < k; j++) {
		const Directive *Y = &g->dirs[j];
		if (Y->kind == X->kind && (X->kind == SD_STORE ? strcmp(Y->target, X->target) == 0
							 : Y->def == X->def))
			return DERR(X->pos, "a second '%s' directive for '%s' (the first is at line %d)",
				    kw, X->target, Y->pos.line);
	}
	return 0;
}

int ck_schedule(Checker *ck, const char *file, const char *src, size_t len)
{
	for (int k = 0; k < ck->g->ndirs; k++)
		if (directive_ok(ck, k, file, src, len))
			return -1;
	return 0;
}

/* ------------------------------------------------------------- the whole */

int ir_check(Graph *g, Diag *d)
{
	Checker *ck = ck_new(g, d);
	int rc = -1;
	if (nodes_ok(ck))
		goto out;
	for (int s = 0; s < g->nsizes; s++)
		if (ck_size(ck, s))
			goto out;
	for (int t = 0; t < g->ntensors; t++)
		if (ck_tensor(ck, t))
			goto out;
	for (int k = 0; k < g->ndefs; k++)
		if (ck_def(ck, k))
			goto out;
	if (ck_outputs(ck) || ck_unused(ck) || ck_schedule(ck, g->file, g->src, g->srclen))
		goto out;
	rc = 0;
out:
	ck_free(ck);
	return rc;
}

int ir_check_schedule(Graph *g, Diag *d)
{
	Checker *ck = ck_new(g, d);
	int rc = ck_schedule(ck, g->file, g->src, g->srclen);
	ck_free(ck);
	return rc;
}
