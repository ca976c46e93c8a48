/* compiler/kir/kir.c: the kernel IR's store: hash-consed expressions, statements, variables,
 * error sites, and a readable dump (kir_print).
 *
 * Invariants: x[0] and s[0] are unused (id 0 is never a real node); an expression is never
 * modified after creation; the hash table holds every expression id and is at most half
 * full. Integer folding in kx_op is exact (integer-only identities on int64 values that
 * index expressions never overflow).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../map/map.h"

static void *grow(void *p, int32_t *cap, int32_t need, size_t elem)
{
	if (need <= *cap)
		return p;
	int32_t c = *cap ? *cap : 64;
	while (c < need)
		c *= 2;
	void *q = realloc(p, (size_t)c * elem);
	IR_ASSERT(q);
	memset((char *)q + (size_t)*cap * elem, 0, (size_t)(c - *cap) * elem);
	*cap = c;
	return q;
}

KType kt_of(Dtype f)
{
	switch (f) {
	case DT_F64: return KT_F64;
	case DT_I32: return KT_INT;
	default: return KT_F32;
	}
}

const char *kt_name(KType t)
{
	static const char *names[] = {[KT_BOOL] = "bool", [KT_INT] = "int", [KT_F32] = "f32",
				      [KT_F64] = "f64"};
	_Static_assert(ARRAY_LEN(names) == KT__COUNT, "one name per KType");
	return names[t];
}

/* ------------------------------------------------------------ expressions */

static uint64_t mix(uint64_t h, uint64_t v)
{
	h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
	return h * 0xff51afd7ed558ccdull;
}

static uint64_t xhash(const KExpr *e)
{
	uint64_t bits;
	memcpy(&bits, &e->f, sizeof bits);
	uint64_t h = mix(mix(mix(mix(0, e->kind), e->type), e->fmt), e->op);
	for (int i = 0; i < 4; i++)
		h = mix(h, (uint64_t)(uint32_t)e->a[i]);
	return mix(mix(mix(h, (uint64_t)(uint32_t)e->v), (uint64_t)e->i), bits);
}

static bool xsame(const KExpr *x, const KExpr *y)
{
	return x->kind == y->kind && x->type == y->type && x->fmt == y->fmt && x->op == y->op &&
	       memcmp(x->a, y->a, sizeof x->a) == 0 && x->v == y->v && x->i == y->i &&
	       memcmp(&x->f, &y->f, sizeof x->f) == 0;
}

static void rehash(Kernels *k)
{
	int32_t cap = k->caphash ? k->caphash * 2 : 1024;
	int32_t *t = calloc((size_t)cap, sizeof *t);
	IR_ASSERT(t);
	for (int32_t id = 1; id < k->nx; id++) {
		uint32_t i = (uint32_t)xhash(&k->x[id]) & (uint32_t)(cap - 1);
		while (t[i])
			i = (i + 1) & (uint32_t)(cap - 1);
		t[i] = id;
	}
	free(k->hash);
	k->hash = t;
	k->caphash = cap;
}

int32_t kx_new(Kernels *k, const KExpr *e)
{
	if (k->nx == 0)
		k->nx = 1;
	if ((k->nx + 1) * 2 > k->caphash)
		rehash(k);
	uint32_t i = (uint32_t)xhash(e) & (uint32_t)(k->caphash - 1);
	while (k->hash[i]) {
		if (xsame(&k->x[k->hash[i]], e))
			return k->hash[i];
		i = (i + 1) & (uint32_t)(k->caphash - 1);
	}
	k->x = grow(k->x, &k->capx, k->nx + 1, sizeof *k->x);
	int32_t id = k->nx++;
	k->x[id] = *e;
	k->hash[i] = id;
	return id;
}

static KExpr mk(KxKind kind, KType t)
{
	KExpr e;
	memset(&e, 0, sizeof e);
	e.kind = (uint8_t)kind;
	e.type = (uint8_t)t;
	e.a[0] = e.a[1] = e.a[2] = e.a[3] = -1;
	e.v = -1;
	return e;
}

int32_t kx_int(Kernels *k, int64_t v)
{
	KExpr e = mk(KX_ICONST, KT_INT);
	e.i = v;
	return kx_new(k, &e);
}

int32_t kx_real(Kernels *k, KType t, double v)
{
	IR_ASSERT(t == KT_F32 || t == KT_F64);
	KExpr e = mk(KX_FCONST, t);
	e.f = t == KT_F32 ? (double)(float)v : v;
	return kx_new(k, &e);
}

int32_t kx_var(Kernels *k, int32_t v)
{
	KExpr e = mk(KX_VAR, k->vars[v].type);
	e.v = v;
	return kx_new(k, &e);
}

int32_t kx_elem(Kernels *k, int32_t v, int32_t idx)
{
	IR_ASSERT(k->vars[v].n > 0 && kx_type(k, idx) == KT_INT);
	KExpr e = mk(KX_ELEM, k->vars[v].type);
	e.v = v;
	e.a[0] = idx;
	return kx_new(k, &e);
}

int32_t kx_load(Kernels *k, int32_t buf, int32_t idx)
{
	KExpr e = mk(KX_LOAD, kt_of(k->bufs[buf].fmt));
	e.v = buf;
	e.a[0] = idx;
	return kx_new(k, &e);
}

static bool is_ic(const Kernels *k, int32_t a, int64_t *v)
{
	if (a < 0 || k->x[a].kind != KX_ICONST)
		return false;
	*v = k->x[a].i;
	return true;
}

/* Integer folding; returns -1 when nothing folds. */
static int32_t fold_int(Kernels *k, Op op, int32_t a, int32_t b)
{
	int64_t x = 0, y = 0;
	bool ca = is_ic(k, a, &x), cb = is_ic(k, b, &y);
	switch (op) {
	case OP_NEG: return ca ? kx_int(k, -x) : -1;
	case OP_ADD:
		if (ca && cb) return kx_int(k, x + y);
		if (ca && x == 0) return b;
		if (cb && y == 0) return a;
		return -1;
	case OP_SUB:
		if (ca && cb) return kx_int(k, x - y);
		if (cb && y == 0) return a;
		return -1;
	case OP_MUL:
		if (ca && cb) return kx_int(k, x * y);
		if ((ca && x == 0) || (cb && y == 0)) return kx_int(k, 0);
		if (ca && x == 1) return b;
		if (cb && y == 1) return a;
		return -1;
	case OP_IDIV:
		if (ca && cb && y > 0) return kx_int(k, x >= 0 ? x / y : -((-x + y - 1) / y));
		if (cb && y == 1) return a;
		return -1;
	case OP_MOD:
		if (ca && cb && y > 0) return kx_int(k, ((x % y) + y) % y);
		if (cb && y == 1) return kx_int(k, 0);
		return -1;
	case OP_MIN: return ca && cb ? kx_int(k, x < y ? x : y) : -1;
	case OP_MAX: return ca && cb ? kx_int(k, x > y ? x : y) : -1;
	default: return -1;
	}
}

int32_t kx_op(Kernels *k, Op op, KType t, int32_t a, int32_t b, int32_t c)
{
	const OpInfo *oi = op_info(op);
	IR_ASSERT(!(oi->flags & OPF_CAST));
	/* every operand of the op's arity exists (a missing one would be emitted as `t-1`) */
	IR_ASSERT(a > 0 && (oi->arity < 2 || b > 0) && (oi->arity < 3 || c > 0));
	if (t == KT_INT) {
		int32_t f = fold_int(k, op, a, b);
		if (f >= 0)
			return f;
	}
	KExpr e = mk(KX_OP, t);
	e.op = (uint16_t)op;
	e.a[0] = a;
	e.a[1] = oi->arity > 1 ? b : -1;
	e.a[2] = oi->arity > 2 ? c : -1;
	return kx_new(k, &e);
}

int32_t kx_cvt(Kernels *k, KType t, int32_t a)
{
	KType s = kx_type(k, a);
	if (s == t)
		return a;
	IR_ASSERT(t == KT_F32 || t == KT_F64);
	IR_ASSERT(s != KT_BOOL);
	if (k->x[a].kind == KX_ICONST && k->x[a].i > -(1LL << 24) && k->x[a].i < (1LL << 24))
		return kx_real(k, t, (double)k->x[a].i);
	KExpr e = mk(KX_CVT, t);
	e.a[0] = a;
	return kx_new(k, &e);
}

int32_t kx_round(Kernels *k, Dtype f, int32_t a)
{
	KType t = kx_type(k, a);
	IR_ASSERT(t == KT_F32 || t == KT_F64);
	if (f == DT_F64 || (f == DT_F32 && t == KT_F32))
		return a;
	KExpr e = mk(KX_ROUND, t);
	e.fmt = (uint8_t)f;
	e.a[0] = a;
	return kx_new(k, &e);
}

int32_t kx_check(Kernels *k, int32_t a, int32_t lo, int32_t hi, int32_t guard, int32_t site)
{
	KExpr e = mk(KX_CHECK, KT_INT);
	e.a[0] = a;
	e.a[1] = lo;
	e.a[2] = hi;
	e.a[3] = guard;
	e.v = site;
	return kx_new(k, &e);
}

/* ------------------------------------------------------------ statements */

int32_t kv_new(Kernels *k, KType t, int64_t n, bool loop)
{
	k->vars = grow(k->vars, &k->capvars, k->nvars + 1, sizeof *k->vars);
	k->vars[k->nvars] = (KVar){t, n, loop};
	return k->nvars++;
}

int32_t ks_new(Kernels *k, const KStmt *s)
{
	if (k->ns == 0)
		k->ns = 1;
	k->s = grow(k->s, &k->caps, k->ns + 1, sizeof *k->s);
	k->s[k->ns] = *s;
	k->s[k->ns].next = -1;
	return k->ns++;
}

int32_t ksite_new(Kernels *k, const KSite *s)
{
	k->sites = grow(k->sites, &k->capsites, k->nsites + 1, sizeof *k->sites);
	k->sites[k->nsites] = *s;
	return k->nsites++;
}

void kb_add(Kernels *k, KBlk *b, int32_t st)
{
	if (b->head <= 0)
		b->head = st;
	else
		k->s[b->tail].next = st;
	b->tail = st;
}

static KStmt st0(KsKind kind)
{
	KStmt s;
	memset(&s, 0, sizeof s);
	s.kind = (uint8_t)kind;
	s.v = s.a = s.b = s.c = -1;
	s.body = s.body2 = s.next = -1;
	return s;
}

void kb_loop(Kernels *k, KBlk *b, int32_t var, int32_t lo, int32_t hi, bool par, KBlk body)
{
	KStmt s = st0(KS_LOOP);
	s.v = var;
	s.a = lo;
	s.b = hi;
	s.par = par;
	s.body = body.head > 0 ? body.head : -1;
	kb_add(k, b, ks_new(k, &s));
}

void kb_set(Kernels *k, KBlk *b, int32_t var, int32_t idx, int32_t val)
{
	KStmt s = st0(KS_SET);
	s.v = var;
	s.a = idx;
	s.b = val;
	kb_add(k, b, ks_new(k, &s));
}

void kb_decl(Kernels *k, KBlk *b, int32_t var)
{
	KStmt s = st0(KS_DECL);
	s.v = var;
	kb_add(k, b, ks_new(k, &s));
}

/* ------------------------------------------------------------ dump */

typedef struct {
	char *buf;
	size_t len, cap;
} Str;

static void put(Str *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(Str *s, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (s->len + (size_t)n + 1 > s->cap) {
		s->cap = (s->len + (size_t)n + 1) * 2;
		s->buf = realloc(s->buf, s->cap);
		IR_ASSERT(s->buf);
	}
	va_start(ap, fmt);
	vsnprintf(s->buf + s->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	s->len += (size_t)n;
}

static void pexpr(Str *o, const Kernels *k, int32_t e)
{
	const KExpr *x = &k->x[e];
	switch (x->kind) {
	case KX_FCONST: put(o, "%a", x->f); return;
	case KX_ICONST: put(o, "%lld", (long long)x->i); return;
	case KX_VAR: put(o, "v%d", x->v); return;
	case KX_ELEM: put(o, "v%d[", x->v); pexpr(o, k, x->a[0]); put(o, "]"); return;
	case KX_LOAD: put(o, "b%d[", x->v); pexpr(o, k, x->a[0]); put(o, "]"); return;
	case KX_CVT: put(o, "%s(", kt_name((KType)x->type)); break;
	case KX_ROUND: put(o, "round_%s(", dt_name((Dtype)x->fmt)); break;
	case KX_CHECK: put(o, "check#%d(", x->v); break;
	case KX_OP: put(o, "%s(", op_info((Op)x->op)->name); break;
	}
	for (int i = 0; i < 4 && x->a[i] >= 0; i++) {
		if (i)
			put(o, ", ");
		pexpr(o, k, x->a[i]);
	}
	put(o, ")");
}

static void pstmts(Str *o, const Kernels *k, int32_t s, int ind)
{
	for (; s > 0; s = k->s[s].next) {
		const KStmt *t = &k->s[s];
		put(o, "%*s", 2 * ind, "");
		switch (t->kind) {
		case KS_LOOP:
			put(o, "%s v%d in [", t->par ? "parfor" : "for", t->v);
			pexpr(o, k, t->a);
			put(o, ", ");
			pexpr(o, k, t->b);
			put(o, "):\n");
			pstmts(o, k, t->body, ind + 1);
			continue;
		case KS_WHILE:
			put(o, "while ");
			pexpr(o, k, t->a);
			put(o, ":\n");
			pstmts(o, k, t->body, ind + 1);
			continue;
		case KS_IF:
			put(o, "if ");
			pexpr(o, k, t->a);
			put(o, ":\n");
			pstmts(o, k, t->body, ind + 1);
			if (t->body2 > 0) {
				put(o, "%*selse:\n", 2 * ind, "");
				pstmts(o, k, t->body2, ind + 1);
			}
			continue;
		case KS_DECL:
			put(o, "local v%d : %s", t->v, kt_name(k->vars[t->v].type));
			if (k->vars[t->v].n)
				put(o, "[%lld]", (long long)k->vars[t->v].n);
			break;
		case KS_SET:
			put(o, "v%d", t->v);
			if (t->a >= 0) {
				put(o, "[");
				pexpr(o, k, t->a);
				put(o, "]");
			}
			put(o, " = ");
			pexpr(o, k, t->b);
			break;
		case KS_STORE:
			put(o, "b%d[", t->v);
			pexpr(o, k, t->a);
			put(o, "] = ");
			pexpr(o, k, t->b);
			break;
		case KS_CHECK:
			put(o, "check#%d ", t->v);
			pexpr(o, k, t->a);
			break;
		case KS_TREE:
			put(o, "v%d = tree_%s(v%d[", t->v, op_info((Op)t->op)->name, t->c);
			pexpr(o, k, t->a);
			put(o, " +: ");
			pexpr(o, k, t->b);
			put(o, "])");
			break;
		}
		put(o, "\n");
	}
}

char *kir_print(const Kernels *k)
{
	Str o = {0};
	const Graph *g = k->g;
	for (int b = 0; b < k->nbufs; b++)
		put(&o, "buffer b%d: %s %s[%lld]%s\n", b, g->tensors[k->bufs[b].tensor].name,
		    dt_name(k->bufs[b].fmt), (long long)k->bufs[b].n, k->bufs[b].input ? " input" : "");
	for (int i = 0; i < k->nk; i++) {
		const Kernel *kn = &k->k[i];
		put(&o, "kernel %d: %s, %lld items", i,
		    g->tensors[g->defs[kn->def].out[0]].name, (long long)kn->nitems);
		for (int p = 0; p < kn->npar; p++)
			put(&o, "%s v%d = tile origin of %s (extent %lld, tile %lld)", p ? "," : ";",
			    kn->par[p].origin, g->defs[kn->def].lhs[kn->par[p].lhs].name,
			    (long long)kn->par[p].extent, (long long)kn->par[p].tile);
		put(&o, "\n");
		pstmts(&o, k, kn->body, 1);
	}
	if (!o.buf)
		put(&o, "%s", "");
	return o.buf;
}

/* The plan in words (compiler.h): the mapping stage's record (map.h), read here beside the
 * dump of the IR it describes. */
char *kir_plan_text(const Kernels *k, const MapTarget *tg)
{
	static const char *const modes[] = {"item", "group", "lanes"};
	static const char *const role[] = {"", "nest", "split", "tail", "swap", "lane", "init"};
	static const char *const share[] = {"own", "shared", "part", "merge", "flag"};
	static const char *const place[] = {"private", "shared", "scratch", "scratch_group"};
	const MapPlan *mp = map_plan(k, tg);
	Str t = {0};
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
		put(&t, "%s%s%s", p->i32 ? " i32" : "", p->f64 ? " f64" : "", p->err ? " err" : "");
		if (p->nfused > 1)
			put(&t, " fused=%d", p->nfused);
		if (p->stage_buf >= 0)
			put(&t, " stage=b%d:%lld/%d", p->stage_buf, (long long)p->stage_len, p->stage_loads);
		if (p->lead != i)
			put(&t, " in=%d per_row=%lld", p->lead, (long long)p->per_row);
		put(&t, "\n");
		const char *lead = "  roles:";
		for (int32_t s = 1; s < k->ns; s++)
			if (p->srole[s] && p->srole[s] != MAP_S_HELD_INIT) {   /* inits: /init below */
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
				put(&t, "%s v%d:%s/%s%s%s", lead, v, share[p->vshare[v]], place[p->vplace[v]],
				    p->vheld[v] ? "/held" : "", p->vinit[v] ? "/init" : "");
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

void kir_free(Kernels *k)
{
	if (!k)
		return;
	free(k->x);
	free(k->hash);
	free(k->s);
	free(k->vars);
	free(k->bufs);
	free(k->tbuf);
	free(k->k);
	free(k->sites);
	sched_free(&k->sched);
	map_free_all(k->maps);
	free(k);
}

/* The type operand i of op expression x must have (kir.h: KX_OP). */
static KType operand_type(const Kernels *k, const KExpr *x, int i)
{
	const OpInfo *oi = op_info((Op)x->op);
	if (x->op == OP_SELECT)
		return i == 0 ? KT_BOOL : (KType)x->type;
	if (oi->flags & OPF_BOOL_IN)
		return KT_BOOL;
	if (oi->flags & OPF_CMP)
		return kx_type(k, x->a[0]);
	return (KType)x->type;
}

int kir_validate(const Kernels *k, Diag *d)
{
	for (int32_t id = 1; id < k->nx; id++) {
		const KExpr *x = &k->x[id];
		int n = 1;   /* KX_ELEM, KX_LOAD, KX_CVT, KX_ROUND */
		if (x->kind == KX_FCONST || x->kind == KX_ICONST || x->kind == KX_VAR)
			n = 0;
		else if (x->kind == KX_OP)
			n = op_info((Op)x->op)->arity;
		else if (x->kind == KX_CHECK)
			n = 3;   /* a[3], the guard, may be -1 */
		for (int i = 0; i < n; i++) {
			if (x->a[i] <= 0 || x->a[i] >= id) {
				diag_set(d, 3, "kernel IR: expression %d (kind %d) lacks operand %d",
					 id, x->kind, i);
				return -1;
			}
			if (x->kind == KX_OP && kx_type(k, x->a[i]) != operand_type(k, x, i)) {
				diag_set(d, 3, "kernel IR: expression %d (%s) operand %d is %s", id,
					 op_info((Op)x->op)->name, i, kt_name(kx_type(k, x->a[i])));
				return -1;
			}
		}
	}
	return 0;
}
