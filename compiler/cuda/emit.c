/* compiler/cuda/emit.c: the CUDA backend's emitter: kernel IR -> one CUDA C++ program for
 * NVRTC, one `extern "C" __global__` function k<i> per kernel, in the model of cuda.h under
 * the plan of the mapping stage (compiler/map.h, map/block.c).
 *
 * The text is written by the emitter core (compiler/cemit.h) with CUDA's table (CLang) and
 * the CUDA pieces here (storage of locals, block distribution and barriers, the helpers);
 * the output is a deterministic function of the kernel IR (and of ASSAY_CUDA_MODE, which
 * the header records): temporaries are named after expression ids (t12), variables after
 * variable ids (v3), buffers after buffer ids (b0). Each statement's expressions become one
 * `const` temporary per computing node, fully parenthesised, with explicit casts.
 *
 * Numerics: f32 and f64 arithmetic is float and double, compiled by NVRTC with
 * --fmad=false (no contraction of a*b+c into an fma, as the emulator and the budgets
 * assume), --prec-div=true and --prec-sqrt=true (correctly rounded / and sqrt),
 * --ftz=false (subnormals kept). f16 and bf16 live in unsigned short and are converted by
 * integer helpers (here and in compiler/chelp.c: round to nearest even, subnormals,
 * overflow to inf, NaN kept NaN), so no toolkit header is needed. f16/bf16 arithmetic is
 * f32 arithmetic rounded by KX_ROUND (kir.h), which for + - * / sqrt equals the native half
 * operation. Functions are CUDA's math library, spelled by ops.def's C-family base (float
 * versions with an f suffix, ce_cop); rsqrt is rsqrtf/rsqrt (2 and 1 ulp; the one override,
 * ops below), sigmoid
 * 1/(1+exp(-x)), max/min IEEE 754-2019 helpers. KS_TREE runs iteratively with an explicit
 * stack (no recursion on the GPU) over exactly the tree of kir.h.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../emit/cemit.h"
#include "cuda.h"

/* the types below; h2f and b2f: f16 and bf16 bits to float, exactly */
static const char widen[] =
	"typedef unsigned short u16;\n"
	"typedef unsigned long long u64;\n"
	"__device__ __forceinline__ float h2f(u16 h)\n"
	"{\n"
	"\tunsigned s = (unsigned)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;\n"
	"\tif (e == 0) {\n"
	"\t\tfloat f = (float)m * 0x1p-24f;\n"
	"\t\treturn s ? -f : f;\n"
	"\t}\n"
	"\treturn __uint_as_float(e == 31 ? (s | 0x7f800000u | (m << 13)) : (s | ((e + 112u) << 23) | (m << 13)));\n"
	"}\n"
	"__device__ __forceinline__ float b2f(u16 h) { return __uint_as_float((unsigned)h << 16); }\n";

/* float -> f16 and bf16 bits (f2h, f2b), round to nearest even in 32-bit integer operations:
 * the same bits as d2h and d2b give for the float as a double (NaN keeps the same top
 * payload bits, 65520 and the bf16 midpoint above its largest finite go to inf), without
 * their 64-bit arithmetic; h16 and b16 pick the conversion by the value's type. Then
 * sigmoid; the pairwise trees of kir.h, iteratively; error reports */
static const char own[] =
	"__device__ __forceinline__ u16 f2h(float x)\n"
	"{\n"
	"\tunsigned b = __float_as_uint(x), a = b & 0x7fffffffu;\n"
	"\tu16 s = (u16)((b >> 16) & 0x8000u);\n"
	"\tif (a > 0x7f800000u)\n"
	"\t\treturn (u16)(s | 0x7e00u | ((a >> 13) & 0x1ffu));\n"
	"\tif (a >= 0x477ff000u)   /* 65520 and up: inf */\n"
	"\t\treturn (u16)(s | 0x7c00u);\n"
	"\tif (a >= 0x38800000u) {   /* 2^-14 and up: normal */\n"
	"\t\tunsigned r = a - (112u << 23);\n"
	"\t\tr += 0xfffu + ((r >> 13) & 1u);\n"
	"\t\treturn (u16)(s | (r >> 13));\n"
	"\t}\n"
	"\treturn (u16)(s | __float2uint_rn(__uint_as_float(a) * 0x1p24f));   /* exact product */\n"
	"}\n"
	"__device__ __forceinline__ u16 f2b(float x)\n"
	"{\n"
	"\tunsigned b = __float_as_uint(x), a = b & 0x7fffffffu;\n"
	"\tu16 s = (u16)((b >> 16) & 0x8000u);\n"
	"\tif (a > 0x7f800000u)\n"
	"\t\treturn (u16)(s | 0x7fc0u | ((a >> 16) & 0x3fu));\n"
	"\treturn (u16)(s | ((a + 0x7fffu + ((a >> 16) & 1u)) >> 16));\n"
	"}\n"
	"__device__ __forceinline__ u16 h16(float x) { return f2h(x); }\n"
	"__device__ __forceinline__ u16 h16(double x) { return d2h(x); }\n"
	"__device__ __forceinline__ u16 b16(float x) { return f2b(x); }\n"
	"__device__ __forceinline__ u16 b16(double x) { return d2b(x); }\n"
	"__device__ __forceinline__ float sigmoid_f(float x) { return 1.0f / (1.0f + expf(-x)); }\n"
	"__device__ __forceinline__ double sigmoid_d(double x) { return 1.0 / (1.0 + exp(-x)); }\n"
	"/* a combine of a pairwise tree, rounded to FMT: 0 the type's own, 1 f16, 2 bf16, 3 f32 */\n"
	"template <typename T, int MUL, int FMT> __device__ __forceinline__ T comb(T a, T b)\n"
	"{\n"
	"\tT r = MUL ? a * b : a + b;\n"
	"\treturn FMT == 1 ? (T)h2f(h16(r)) : FMT == 2 ? (T)b2f(b16(r)) :\n"
	"\t       FMT == 3 ? (T)(float)r : r;\n"
	"}\n"
	"/* The pairwise tree of kir.h over t[0], t[st], ... t[(n-1)*st] (n >= 1): the left half\n"
	" * is the first floor(n/2) terms. Iterative: frames of an explicit stack (depth <= 64). */\n"
	"template <typename T, int MUL, int FMT> __device__ T tree(const T *t, long long st, long long n)\n"
	"{\n"
	"\tlong long lo[64], len[64];\n"
	"\tT left[64];\n"
	"\tint stage[64], sp = 0;\n"
	"\tT r = t[0];\n"
	"\tlo[0] = 0;\n"
	"\tlen[0] = n;\n"
	"\tstage[0] = 0;\n"
	"\tfor (;;) {\n"
	"\t\tif (len[sp] > 1 && stage[sp] == 0) {   /* descend left */\n"
	"\t\t\tstage[sp] = 1;\n"
	"\t\t\tlo[sp + 1] = lo[sp];\n"
	"\t\t\tlen[sp + 1] = len[sp] / 2;\n"
	"\t\t\tstage[++sp] = 0;\n"
	"\t\t\tcontinue;\n"
	"\t\t}\n"
	"\t\tr = t[lo[sp] * st];   /* a leaf; then hand r up */\n"
	"\t\tfor (;;) {\n"
	"\t\t\tif (sp == 0)\n"
	"\t\t\t\treturn r;\n"
	"\t\t\tsp--;\n"
	"\t\t\tif (stage[sp] == 1) {   /* left half done: descend right */\n"
	"\t\t\t\tleft[sp] = r;\n"
	"\t\t\t\tstage[sp] = 2;\n"
	"\t\t\t\tlo[sp + 1] = lo[sp] + len[sp] / 2;\n"
	"\t\t\t\tlen[sp + 1] = len[sp] - len[sp] / 2;\n"
	"\t\t\t\tstage[++sp] = 0;\n"
	"\t\t\t\tbreak;\n"
	"\t\t\t}\n"
	"\t\t\tr = comb<T, MUL, FMT>(left[sp], r);   /* both halves done */\n"
	"\t\t}\n"
	"\t}\n"
	"}\n"
	"/* the first error wins; the value is written after the site is claimed */\n"
	"__device__ void rep(u64 *err, long long site, long long v)\n"
	"{\n"
	"\tif (atomicCAS(err, 0ull, (u64)(site + 1)) == 0ull)\n"
	"\t\terr[1] = (u64)v;\n"
	"}\n";

static const CHelp help = {
	.fn = "__device__ __forceinline__ ", .i64 = "long long", .let = "", .gap = "",
	.neg = {"__float_as_int(a) < 0", "__double_as_longlong(a) < 0"},
	.err = "u64 *err", .site = "long long",
	.dfn = "__device__ ", .u16 = "u16", .u64 = "u64",
	.bits = "\tu64 b = (u64)__double_as_longlong(x), a = b & 0x7fffffffffffffffull;\n"
		"\tu16 s = (u16)((b >> 48) & 0x8000u);\n",
	.ax = "\tdouble ax = __longlong_as_double((long long)a);\n",
};

/* ------------------------------------------------------------ the emitter */

typedef struct {
	CEmit c;
	const MapPlan *mp;
	const MapKernel *plan;
	bool block;        /* the kernel is MAP_GROUP: a block per item */
	bool dist;         /* inside a distributed construct (thread context) */
	bool synced;       /* a barrier was the last thing emitted */
	bool owed;         /* thread 0 wrote shared locals since it: a barrier is owed
	                      before anything but another such write */
	int wg;            /* the launch's block: its lead kernel's (every distributed
	                      construct strides by it) */
	int32_t part;      /* inside a split's chunk loop: the partial's variable, else -1 */
	int32_t held;      /* that split's statement: its arrays held in registers p<v>
	                      (MapKernel.vheld), else 0 */
	int32_t last;      /* the item body's last top-level statement where the kernel has
	                      no shared locals, else 0: a nest there owes no barrier (the
	                      kernel's items are independent; a phase ends with one) */
} E;

static void barrier(E *e)
{
	if (!e->synced)
		ce_line(&e->c, "__syncthreads();");
	e->synced = true;
	e->owed = false;
}

/* Before a statement of uniform code: a barrier where it writes a shared local (other
 * threads may still read the old value) or where thread 0's writes are owed to it. */
static void barrier_if(E *e, bool shw)
{
	if (shw || e->owed)
		barrier(e);
}

/* Where local v lives, in this emitter's terms (cuda.h), from its plan. */
static CuStore store(const E *e, int32_t v)
{
	switch (e->plan->vplace[v]) {
	case MAP_P_SHARED: return SC_SHARED;
	case MAP_P_SCRATCH_GROUP: return SC_SCRATCH_B;
	case MAP_P_SCRATCH: return SC_SCRATCH_T;
	default: return e->c.k->vars[v].n ? SC_LOCAL : SC_REG;
	}
}

static bool shared_var(const E *e, int32_t v)
{
	return store(e, v) == SC_SHARED || store(e, v) == SC_SCRATCH_B;
}

/* ------------------------------------------------------------ expressions */

/* Element idx of local array v, by its storage. */
static void elem(CEmit *c, int32_t v, int32_t idx)
{
	E *e = (E *)c;
	if (e->held && e->plan->vheld[v] == e->held && c->k->x[idx].kind == KX_VAR &&
	    c->k->x[idx].v == e->part) {
		ce_emit(c, "p%d", v);
		return;
	}
	ce_emit(c, "v%d[", v);
	if (store((E *)c, v) == SC_SCRATCH_T) {
		ce_emit(c, "(");
		ce_ref(c, idx);
		ce_emit(c, ") * nthr]");
	} else {
		ce_ref(c, idx);
		ce_emit(c, "]");
	}
}

static void round_text(CEmit *c, const KExpr *x)
{
	Dtype f = (Dtype)x->fmt;
	const char *T = c->L->type[x->type];
	if (f == DT_F32) {
		ce_emit(c, "((%s)(float)", T);
		ce_ref(c, x->a[0]);
		ce_emit(c, ")");
		return;
	}
	IR_ASSERT(f == DT_F16 || f == DT_BF16);
	bool flt = c->k->x[x->a[0]].type == KT_F32;   /* f2h/f2b: the same bits, in 32 bits */
	ce_emit(c, "((%s)%s(%s(%s", T, f == DT_F16 ? "h2f" : "b2f",
		f == DT_F16 ? (flt ? "f2h" : "d2h") : (flt ? "f2b" : "d2b"), flt ? "" : "(double)");
	ce_ref(c, x->a[0]);
	ce_emit(c, ")))");
}

/* An op: x / c for a constant c = +-2^k whose reciprocal is of x's type too is x * (1/c),
 * the same value (both are x * 2^-k rounded once: zeros, infinities, NaN and subnormal
 * results alike), one multiply instead of a correctly rounded division's sequence (the
 * mean's division by a row length of 2^k in layernorm); anything else by ce_cop. */
static void op_text(CEmit *c, const KExpr *x)
{
	if (x->op == OP_DIV && (x->type == KT_F32 || x->type == KT_F64)) {
		const KExpr *d = &c->k->x[x->a[1]];
		int ex;
		bool flt = x->type == KT_F32;
		if (d->kind == KX_FCONST && isfinite(d->f) && d->f != 0 && fabs(frexp(d->f, &ex)) == 0.5) {
			double r = 1 / d->f;   /* exact: a power of two within double's range, or inf */
			if (isfinite(r) && r != 0 && (!flt || ((double)(float)r == r && isfinite((float)r)))) {
				COV(cuda_div_pow2);
				ce_emit(c, "(");
				ce_ref(c, x->a[0]);
				ce_emit(c, r < 0 ? " * (%a%s))" : " * %a%s)", r, flt ? "f" : "");
				return;
			}
		}
	}
	ce_cop(c, x);
}

/* A load: from its launch's staged row where the plan proved it falls there
 * (MapPlan.xstage: the copy at the index's part within the row), else from memory. */
static void load(CEmit *c, const KExpr *x)
{
	const E *e = (const E *)c;
	int32_t rest = e->mp->xstage[x - c->k->x];
	if (rest)
		ce_load_at(c, x, "st", rest);
	else
		ce_load_c(c, x);
}

/* ------------------------------------------------------------ statements */

/* A store: a float into f16 or bf16 by f2h/f2b (the bits d2h/d2b give, in 32-bit integer
 * operations), anything else as C's (ce_store). */
static void store_stmt(CEmit *c, const KStmt *s)
{
	Dtype f = c->k->bufs[s->v].fmt;
	if ((f != DT_F16 && f != DT_BF16) || c->k->x[s->b].type != KT_F32) {
		ce_store(c, s);
		return;
	}
	COV(cemit_store_16);
	ce_emit(c, "b%d[", s->v);
	ce_ref(c, s->a);
	ce_emit(c, "] = %s(", f == DT_F16 ? "f2h" : "f2b");
	ce_ref(c, s->b);
	ce_emit(c, ");\n");
}

/* ------------------------------------------------------------ exact combines
 *
 * A split's combine in uniform code is thread 0's (or every thread's) fold of the partials
 * v[0], v[1], ... v[n-1]: a left-deep chain of one op. Where that op is exact and
 * associative and commutative (max and min of floats, IEEE 754-2019's with -0 below +0 and
 * NaN for any NaN, and max, min and + of the IR's int64 integers), every order gives the
 * same value (a NaN result may carry another payload, which no verdict tells apart:
 * verify/emucheck.c), so the block folds them: thread t the partials t, t + W, ..., then
 * warp shuffles, then one value per warp in shared memory, which the statement folds. A
 * float sum's chain is left to thread 0: its order is the schedule's. */
typedef struct {
	int32_t root, v;   /* the chain's last op; the local array */
	int n;             /* its terms v[0..n) */
	Op op;
	KType t;
} Chain;

enum { CHAIN_MIN = 32 };   /* shorter chains stay serial */

static bool chain_op(const KExpr *x)
{
	if (x->kind != KX_OP)
		return false;
	if (x->op == OP_MAX || x->op == OP_MIN)
		return x->type == KT_F32 || x->type == KT_F64 || x->type == KT_INT;
	return x->op == OP_ADD && x->type == KT_INT;
}

/* Term x of a chain over array v: element v[i] at a constant i, noted in seen. */
static bool chain_term(E *e, const KExpr *x, Chain *ch, uint8_t *seen)
{
	const Kernels *k = e->c.k;
	if (x->kind != KX_ELEM || (ch->v >= 0 && x->v != ch->v))
		return false;
	const KExpr *ix = &k->x[x->a[0]];
	if (ix->kind != KX_ICONST || ix->i < 0 || ix->i >= k->vars[x->v].n || ix->i >= 1 << 20)
		return false;
	ch->v = x->v;
	if (seen[ix->i])
		return false;
	seen[ix->i] = 1;
	ch->n++;
	return true;
}

/* Is expression id the root of a chain (Chain) over a shared local array, of every term of
 * it once, CHAIN_MIN terms or more? inner (if not NULL) marks its ops but the root. */
static bool chain_at(E *e, int32_t id, Chain *ch, uint8_t *inner)
{
	const Kernels *k = e->c.k;
	const KExpr *r = &k->x[id];
	if (!chain_op(r))
		return false;
	*ch = (Chain){.root = id, .v = -1, .op = (Op)r->op, .t = (KType)r->type};
	int32_t cur = id;
	uint8_t *seen = NULL;
	bool ok = true;
	while (ok) {
		const KExpr *x = &k->x[cur];
		if (cur != id && inner)
			inner[cur] = 1;
		const KExpr *a = &k->x[x->a[0]], *b = &k->x[x->a[1]];
		bool ea = a->kind == KX_ELEM, eb = b->kind == KX_ELEM;
		if (!seen) {
			int32_t v = ea ? a->v : eb ? b->v : -1;
			if (v < 0 || store(e, v) != SC_SHARED || k->vars[v].type != ch->t || k->vars[v].n < CHAIN_MIN)
				break;
			seen = calloc((size_t)k->vars[v].n, 1);
			IR_ASSERT(seen);
		}
		const KExpr *more = NULL;
		if (ea && eb)
			ok = chain_term(e, a, ch, seen) && chain_term(e, b, ch, seen);
		else if (eb)
			ok = chain_term(e, b, ch, seen), more = a;
		else if (ea)
			ok = chain_term(e, a, ch, seen), more = b;
		else
			ok = false;
		if (!ok || !more)
			break;
		if (more->kind != KX_OP || more->op != ch->op || more->type != ch->t) {
			ok = false;
			break;
		}
		cur = (int32_t)(more - k->x);
	}
	ok = ok && seen && ch->n >= CHAIN_MIN && ch->n == k->vars[ch->v].n;
	free(seen);
	return ok;
}

/* Does a node of the statement's expressions outside the chain read one of its inner
 * ops? (Then the chain's values are needed apart: it stays serial.) */
static bool chain_shared(const Kernels *k, int32_t id, const Chain *ch, const uint8_t *inner, uint8_t *vis)
{
	if (id < 0 || id == ch->root || vis[id])
		return false;
	vis[id] = 1;
	const KExpr *x = &k->x[id];
	for (int i = 0; i < 4; i++)
		if (x->a[i] >= 0 && ((inner[x->a[i]] && x->a[i] != ch->root) || chain_shared(k, x->a[i], ch, inner, vis)))
			return true;
	return false;
}

/* The first chain in expression id's tree (depth first), not read apart. */
static bool chain_find(E *e, const KStmt *s, int32_t id, Chain *ch, uint8_t *vis)
{
	const Kernels *k = e->c.k;
	if (id < 0 || vis[id])
		return false;
	vis[id] = 1;
	if (chain_at(e, id, ch, NULL)) {
		size_t n = (size_t)k->nx + 1;
		uint8_t *inner = calloc(n, 1), *v2 = calloc(n, 1);
		IR_ASSERT(inner && v2);
		chain_at(e, id, ch, inner);
		bool ok = !chain_shared(k, s->a, ch, inner, v2);
		memset(v2, 0, n);
		ok = ok && !chain_shared(k, s->b, ch, inner, v2);
		free(inner);
		free(v2);
		if (ok)
			return true;
	}
	const KExpr *x = &k->x[id];
	for (int i = 0; i < 4; i++)
		if (chain_find(e, s, x->a[i], ch, vis))
			return true;
	return false;
}

static const char *chain_fn(const Chain *ch)
{
	if (ch->op == OP_ADD)
		return NULL;
	static const char *const fn[3][2] = {{"max_f", "min_f"}, {"max_d", "min_d"}, {"max_i", "min_i"}};
	return fn[ch->t == KT_F32 ? 0 : ch->t == KT_F64 ? 1 : 2][ch->op == OP_MIN];
}

/* `a = F(a, b);` of the chain's op */
static void chain_step(CEmit *c, const Chain *ch, const char *a, const char *b)
{
	const char *fn = chain_fn(ch);
	if (fn)
		ce_line(c, "%s = %s(%s, %s);", a, fn, a, b);
	else
		ce_line(c, "%s += %s;", a, b);
}

/* The block's part of chain ch: each warp's fold into cw<root>[warp], then a barrier. */
static void chain_block(E *e, const Chain *ch)
{
	CEmit *c = &e->c;
	const char *T = c->L->type[ch->t];
	int W = e->wg, n = ch->n;
	COV(cuda_combine_shfl);
	barrier(e);   /* the partials are written */
	ce_line(c, "__shared__ %s cw%d[%d];   /* v%d[0..%d) combined by %s, exact in any order: by the "
		"block, then warp shuffles */", T, ch->root, W / 32, ch->v, n,
		ch->op == OP_ADD ? "+" : ch->op == OP_MAX ? "max" : "min");
	ce_line(c, "{");
	c->ind++;
	if (ch->op == OP_ADD)   /* no term: 0 */
		ce_line(c, "%s r = threadIdx.x < %d ? v%d[threadIdx.x] : 0;", T, n, ch->v);
	else   /* no term: v[0] again (max and min are idempotent) */
		ce_line(c, "%s r = v%d[threadIdx.x < %d ? threadIdx.x : 0];", T, ch->v, n);
	if (n > W) {
		ce_line(c, "for (int i = threadIdx.x + %d; i < %d; i += %d) {", W, n, W);
		c->ind++;
		char term[32];
		snprintf(term, sizeof term, "v%d[i]", ch->v);
		chain_step(c, ch, "r", term);
		c->ind--;
		ce_line(c, "}");
	}
	ce_line(c, "for (int o = 16; o > 0; o >>= 1) {");
	c->ind++;
	ce_line(c, "const %s y = __shfl_xor_sync(0xffffffffu, r, o);", T);
	chain_step(c, ch, "r", "y");
	c->ind--;
	ce_line(c, "}");
	ce_line(c, "if ((threadIdx.x & 31) == 0)");
	ce_line(c, "\tcw%d[threadIdx.x >> 5] = r;", ch->root);
	c->ind--;
	ce_line(c, "}");
	e->synced = false;
	barrier(e);
}

/* The statements of one line: set, store, check, tree. In uniform code of a block kernel,
 * a store or check is thread 0's, and a write of a shared local is thread 0's between
 * barriers; thread 0 alone evaluates their expressions (a split's combine of its partials
 * is not computed by every thread of the block). */
static void simple_stmt(E *e, const KStmt *s)
{
	CEmit *c = &e->c;
	bool uni = e->block && !e->dist;
	bool shw = uni && (s->kind == KS_SET || s->kind == KS_TREE) && shared_var(e, s->v);
	bool one = uni && (shw || s->kind == KS_STORE || s->kind == KS_CHECK);
	Chain ch;
	bool chain = false;
	if (uni && s->kind != KS_TREE && e->wg >= 32 && e->wg % 32 == 0) {
		uint8_t *vis = calloc((size_t)c->k->nx + 1, 1);
		IR_ASSERT(vis);
		chain = chain_find(e, s, s->b, &ch, vis) || chain_find(e, s, s->a, &ch, vis);
		free(vis);
	}
	if (!shw || !e->owed)   /* a run of thread 0's shared writes needs no barrier inside */
		barrier_if(e, shw);
	if (chain)
		chain_block(e, &ch);
	if (one) {   /* thread 0's alone: it alone evaluates the statement's expressions */
		ce_line(c, "if (threadIdx.x == 0) {");
		c->ind++;
	}
	bool open = true;
	if (chain) {   /* the chain's value: the warps' values folded */
		char a[32], b[32];
		c->stamp++;
		ce_line(c, "{");
		c->ind++;
		ce_line(c, "%s t%d = cw%d[0];", c->L->type[ch.t], ch.root, ch.root);
		ce_line(c, "for (int w = 1; w < %d; w++)", e->wg / 32);
		c->ind++;
		snprintf(a, sizeof a, "t%d", ch.root);
		snprintf(b, sizeof b, "cw%d[w]", ch.root);
		chain_step(c, &ch, a, b);
		c->ind--;
		c->mark[ch.root] = c->stamp;
		ce_temps(c, s->a);
		ce_temps(c, s->b);
	} else {
		open = ce_open_stmt(c, s);
	}
	ce_indent(c);
	switch (s->kind) {
	case KS_SET: ce_set(c, s->v, s->a, s->b); break;
	case KS_STORE: store_stmt(c, s); break;
	case KS_CHECK:
		ce_emit(c, "{ ");
		ce_report(c, s);
		ce_emit(c, " }\n");
		break;
	case KS_TREE: {
		KType t = c->k->vars[s->c].type;
		Dtype f = (Dtype)s->fmt;
		COV(cuda_tree);
		if (f == DT_F16 || f == DT_BF16)
			COV(cuda_tree_16);
		int fm = f == DT_F16 ? 1 : f == DT_BF16 ? 2 : f == DT_F32 && t == KT_F64 ? 3 : 0;
		bool scr = store(e, s->c) == SC_SCRATCH_T;
		ce_emit(c, "v%d = tree<%s, %d, %d>(v%d + ", s->v, c->L->type[t], s->op == OP_MUL, fm, s->c);
		if (scr)
			ce_emit(c, "(");
		ce_ref(c, s->a);
		ce_emit(c, scr ? ") * nthr, nthr, " : ", 1LL, ");
		ce_ref(c, s->b);
		ce_emit(c, ");\n");
		break;
	}
	default: IR_ASSERT(!"simple_stmt: not a simple statement");
	}
	ce_close(c, open);
	if (one) {
		c->ind--;
		ce_line(c, "}");
	}
	e->synced = false;
	if (shw)
		e->owed = true;
}

/* A nested statement list: no barrier of the code around it counts inside it, and one
 * owed at its end is paid inside it (a loop's next iteration may read). */
static void body(CEmit *c, int32_t first)
{
	E *e = (E *)c;
	e->synced = false;
	ce_stmts(c, first);
	if (e->owed)
		barrier(e);
	e->synced = false;
}

static void decl_stmt(E *e, const KStmt *s)
{
	const KVar *v = &e->c.k->vars[s->v];
	const char *T = e->c.L->type[v->type];
	switch (store(e, s->v)) {
	case SC_REG: ce_line(&e->c, "%s v%d;", T, s->v); return;
	case SC_LOCAL: ce_line(&e->c, "%s v%d[%lld];", T, s->v, (long long)v->n); return;
	default: return;   /* declared at the kernel's entry */
	}
}

/* A par nest dealt to the block's threads: the collapsed iteration q of n0 * n1 * ...
 * (last loop fastest) goes to thread q mod W. The bounds do not depend on the nest's own
 * variables (map/block.c), so they are evaluated once, before it. */
static void nest_stmt(E *e, int32_t id)
{
	CEmit *c = &e->c;
	const Kernels *k = c->k;
	int d = e->plan->sdepth[id];
	const KStmt *L[64];
	L[0] = &k->s[id];
	for (int i = 1; i < d; i++)
		L[i] = &k->s[L[i - 1]->body];
	barrier(e);
	ce_line(c, "{");
	c->ind++;
	c->stamp++;
	for (int i = 0; i < d; i++) {
		ce_temps(c, L[i]->a);
		ce_temps(c, L[i]->b);
	}
	for (int i = 0; i < d; i++) {
		ce_indent(c);
		ce_emit(c, "const long long n%d_%d = max_i(", id, i);
		ce_ref(c, L[i]->b);
		ce_emit(c, " - ");
		ce_ref(c, L[i]->a);
		ce_emit(c, ", 0LL);\n");
	}
	ce_indent(c);
	ce_emit(c, "const long long n%d = n%d_0", id, id);
	for (int i = 1; i < d; i++)
		ce_emit(c, " * n%d_%d", id, i);
	ce_emit(c, ";\n");
	ce_line(c, "for (long long q%d = threadIdx.x; q%d < n%d; q%d += %d) {", id, id, id, id,
		e->wg);
	c->ind++;
	ce_line(c, "long long r%d = q%d;", id, id);
	ce_line(c, "(void)r%d;", id);
	for (int i = d - 1; i >= 0; i--) {
		ce_indent(c);
		ce_emit(c, "const long long v%d = ", L[i]->v);
		ce_ref(c, L[i]->a);
		if (i > 0) {
			ce_emit(c, " + r%d %% n%d_%d;\n", id, id, i);
			ce_line(c, "r%d /= n%d_%d;", id, id, i);
		} else {
			ce_emit(c, " + r%d;\n", id);
		}
	}
	e->dist = true;
	ce_stmts(c, L[d - 1]->body);
	e->dist = false;
	c->ind--;
	ce_line(c, "}");
	c->ind--;
	ce_line(c, "}");
	e->synced = false;
	if (id == e->last)
		COV(cuda_nest_last);   /* nothing of the item follows: no barrier */
	else
		barrier(e);
}

/* A split reduction: thread s mod W computes partial s: its chunks, then its tail term. */
static void split_stmt(E *e, int32_t id)
{
	CEmit *c = &e->c;
	const Kernels *k = c->k;
	const KStmt *ch = &k->s[id], *in = &k->s[ch->body], *tl = &k->s[ch->next];
	int W = e->wg;
	barrier(e);
	ce_line(c, "{");
	c->ind++;
	c->stamp++;
	ce_temps(c, ch->a);
	ce_temps(c, ch->b);
	ce_temps(c, tl->b);
	ce_line(c, "for (long long v%d = threadIdx.x; v%d < %lldLL; v%d += %d) {", in->v, in->v,
		(long long)e->plan->split, in->v, W);
	c->ind++;
	const int32_t *held = e->plan->vheld;   /* map/block.c: partials held in registers */
	for (int32_t v = 0; v < k->nvars; v++)
		if (held[v] == id && e->plan->vinit[v]) {   /* its initial sets are its own */
			ce_indent(c);
			ce_emit(c, "%s p%d = ", c->L->type[k->vars[v].type], v);
			ce_ref(c, e->plan->vinit[v]);
			ce_emit(c, ";\n");
		} else if (held[v] == id) {
			ce_line(c, "%s p%d = v%d[v%d];", c->L->type[k->vars[v].type], v, v, in->v);
		}
	ce_for(c, ch, "", "++");
	e->dist = true;
	e->held = id;
	e->part = in->v;
	c->ind++;
	body(c, in->body);
	c->ind--;
	e->held = 0;
	e->part = -1;
	ce_line(c, "}");
	for (int32_t v = 0; v < k->nvars; v++)
		if (held[v] == id)
			ce_line(c, "v%d[v%d] = p%d;", v, in->v, v);
	c->ind--;
	ce_line(c, "}");
	ce_indent(c);
	ce_emit(c, "for (long long v%d = threadIdx.x; v%d < ", tl->v, tl->v);
	ce_ref(c, tl->b);
	ce_emit(c, "; v%d += %d) {\n", tl->v, W);
	c->ind++;
	body(c, tl->body);
	c->ind--;
	ce_line(c, "}");
	e->dist = false;
	c->ind--;
	ce_line(c, "}");
	e->synced = false;
	barrier(e);
}

static int32_t stmt(CEmit *c, int32_t id)
{
	E *e = (E *)c;
	const KStmt *s = &c->k->s[id];
	bool uni = e->block && !e->dist;
	if (uni && (e->plan->srole[id] == MAP_S_SPLIT_TAIL || e->plan->srole[id] == MAP_S_HELD_INIT))
		return id;   /* split_stmt writes it */
	if (uni && e->plan->srole[id] == MAP_S_NEST) {
		nest_stmt(e, id);
	} else if (uni && e->plan->srole[id] == MAP_S_SPLIT) {
		split_stmt(e, id);
	} else if (s->kind == KS_DECL) {
		decl_stmt(e, s);
	} else if (s->kind == KS_LOOP || s->kind == KS_WHILE || s->kind == KS_IF) {
		if (e->owed)
			barrier(e);   /* its condition or bounds may read them */
		ce_control(c, s);
		e->synced = false;
	} else {
		simple_stmt(e, s);
	}
	return id;
}

/* CUDA's spellings where they differ from the C-family base: rsqrtf and rsqrt are
 * built-ins. */
static const COpSpell ops[OP__COUNT] = {
	[OP_RSQRT] = {CF_CALL, "rsqrtf", "rsqrt", NULL, NULL},
};

static const CLang lang = {
	.name = "cuda",
	.no_mma = "the cuda backend's tensor-core kernels are not written yet (issue 16)",
	.type = {[KT_BOOL] = "int", [KT_INT] = "long long", [KT_F32] = "float", [KT_F64] = "double"},
	.store = {[DT_F64] = "double", [DT_F32] = "float", [DT_F16] = "u16", [DT_BF16] = "u16",
		  [DT_I32] = "int"},
	.imin = "(-9223372036854775807LL - 1LL)", .ipre = "", .isfx = "LL",
	.nan = {"__int_as_float(0x7fc00000)", "__longlong_as_double(0x7ff8000000000000LL)"},
	.inf = {"__int_as_float(0x7f800000)", "__longlong_as_double(0x7ff0000000000000LL)"},
	.ninf = {"__int_as_float((int)0xff800000u)", "__longlong_as_double((long long)0xfff0000000000000ull)"},
	.fsfx = "f", .ops = ops,
	.ivar = "long long ", .ivar_end = "",
	.forever = "for (;;) {",
	.err = "err, ", .truth = "1", .site = "",
	.elem = elem,
	.load = load,
	.op = op_text,
	.round = round_text,
	.stmt = stmt,
	.body = body,
};

/* ------------------------------------------------------------ kernels */

static const CTiles tiles = {
	"const long long v%d = 0;", "const long long v%d = (q %% %lldLL) * %lldLL;", "q /= %lldLL;",
};

/* The signature: the error slot, the scratch area, then every buffer in program order. */
static void signature(E *e, int i, int n)
{
	CEmit *c = &e->c;
	const Kernels *k = c->k;
	uint8_t *use = ce_launch_use(k, i, n);
	ce_line(c, "extern \"C\" __global__ void __launch_bounds__(%d) k%d(u64 *__restrict__ err, "
		"char *__restrict__ scratch%s", e->plan->wg, i, k->nbufs ? "," : ")");
	for (int b = 0; b < k->nbufs; b++) {
		const char *ct = lang.store[k->bufs[b].fmt], *end = b + 1 < k->nbufs ? "," : ")";
		if (use[b] == 0)
			ce_line(c, "\tconst void *b%d%s", b, end);
		else if (use[b] == 1)
			ce_line(c, "\tconst %s *__restrict__ b%d%s", ct, b, end);
		else
			ce_line(c, "\t%s *__restrict__ b%d%s", ct, b, end);
	}
	free(use);
}

/* Shared and scratch locals, declared at the kernel's entry. */
static void entry_locals(E *e)
{
	CEmit *c = &e->c;
	const Kernels *k = c->k;
	const MapKernel *p = e->plan;
	for (int32_t v = 0; v < k->nvars; v++) {
		const KVar *V = &k->vars[v];
		const char *ct = lang.type[V->type];
		int64_t bytes = (V->n ? V->n : 1) * map_type_bytes(V->type);
		switch (store(e, v)) {
		case SC_SHARED:
			if (V->n)
				ce_line(c, "__shared__ %s v%d[%lld];", ct, v, (long long)V->n);
			else
				ce_line(c, "__shared__ %s v%d;", ct, v);
			break;
		case SC_SCRATCH_T:
			ce_line(c, "%s *const v%d = (%s *)(scratch + %lldLL * nthr) + gtid;", ct, v, ct,
				(long long)p->voff[v]);
			break;
		case SC_SCRATCH_B:
			ce_line(c, "%s *const v%d = (%s *)(scratch + %lldLL * nthr + %lldLL * (long long)gridDim.x"
				" + %lldLL * (long long)blockIdx.x);", ct, v, ct, (long long)p->scratch,
				(long long)p->voff[v], (long long)((bytes + 7) & ~(int64_t)7));
			break;
		default:
			break;
		}
	}
}

/* Does the kernel keep locals one per block (shared memory or block scratch)? Without any,
 * its items need no barrier between them. */
static bool group_locals(const MapKernel *p)
{
	return p->shared_bytes > 0 || p->scratch_group > 0;
}

/* E.last for kernel body first under plan p */
static int32_t last_of(const Kernels *k, const MapKernel *p, int32_t first)
{
	if (group_locals(p) || first <= 0)
		return 0;
	while (k->s[first].next > 0)
		first = k->s[first].next;
	return first;
}

/* The items of kernel j that row `it` of its launch runs (one kernel alone: the item it),
 * then kernel j's body for each. A block-per-item kernel runs them one after another on
 * the whole block; a thread-per-item kernel deals them to the block's threads. */
static void phase(E *e, const MapPlan *mp, int j, bool fused)
{
	CEmit *c = &e->c;
	const Kernels *k = c->k;
	const Kernel *kn = &k->k[j];
	e->plan = &mp->k[j];
	e->block = e->plan->mode == MAP_GROUP;
	e->dist = false;
	long long f = (long long)e->plan->per_row;
	bool loop = fused && (f > 1 || !e->block);
	if (loop) {
		if (e->block)
			ce_line(c, "for (long long u%d = it * %lldLL; u%d < (it + 1) * %lldLL; u%d++) {", j, f, j, f, j);
		else
			ce_line(c, "for (long long u%d = it * %lldLL + threadIdx.x; u%d < (it + 1) * %lldLL; u%d += blockDim.x) {",
				j, f, j, f, j);
		c->ind++;
		ce_line(c, "long long q = u%d;", j);
	} else {
		ce_line(c, "{");
		c->ind++;
		ce_line(c, "long long q = it;");
	}
	ce_line(c, "(void)q;");
	ce_tiles(c, kn, &tiles);
	e->last = last_of(k, e->plan, kn->body);
	ce_stmts(c, kn->body);
	e->last = 0;
	if (e->block && group_locals(e->plan))
		barrier(e);   /* the next item reuses the shared locals */
	c->ind--;
	ce_line(c, "}");
}

/* Row staging (map/stage.c): the row it of buffer stage_buf copied into st<b> at the start
 * of each row, in 16-byte words where the row is a whole number of them (the buffers are
 * 256-byte aligned), then a barrier; the barrier after the row's last phase ends every
 * read of the old copy. (Prefetching the block's next row into registers during this
 * row's phases was measured on the H200 and dropped: softmax f32 2202 -> 2071 GB/s, bf16
 * 1074 -> 973, layernorm f32 3009 -> 3066, bf16 1393 -> 1294: the registers cost more
 * occupancy than the latency it hid.) */
static void stage_row(E *e, const MapKernel *p)
{
	CEmit *c = &e->c;
	int b = p->stage_buf;
	const char *T = lang.store[c->k->bufs[b].fmt];
	long long len = (long long)p->stage_len;
	long long bytes = len * (long long)dt_info(c->k->bufs[b].fmt)->bytes;
	ce_line(c, "{   /* the row of b%d its phases read, staged (%d loads read the copy) */", b,
		p->stage_loads);
	c->ind++;
	if (bytes % 16 == 0) {
		ce_line(c, "const uint4 *src = (const uint4 *)(b%d + it * %lldLL);", b, len);
		ce_line(c, "uint4 *dst = (uint4 *)st%d;", b);
		ce_line(c, "for (int w = threadIdx.x; w < %lld; w += %d)", bytes / 16, e->wg);
		ce_line(c, "\tdst[w] = src[w];");
	} else {
		ce_line(c, "const %s *src = b%d + it * %lldLL;", T, b, len);
		ce_line(c, "for (int w = threadIdx.x; w < %lld; w += %d)", len, e->wg);
		ce_line(c, "\tst%d[w] = src[w];", b);
	}
	c->ind--;
	ce_line(c, "}");
	e->synced = false;
	barrier(e);
}

/* Kernel i, with the kernels fused into its launch (MapKernel.nfused, map/fuse.c): each a
 * phase of the row, a barrier between phases (a phase's stores are visible to the block's
 * threads after it). */
static void kernel(E *e, const MapPlan *mp, int i)
{
	CEmit *c = &e->c;
	const Kernels *k = c->k;
	const Kernel *kn = &k->k[i];
	const MapKernel *p = &mp->k[i];
	int n = p->nfused;
	e->plan = p;
	e->block = p->mode == MAP_GROUP;
	e->wg = p->wg;
	if (n > 1) {
		ce_launch_about(c, i, n, "block", p->wg);
	} else {
		ce_line(c, "/* %s%s: %s, %d threads a block */", ce_kernel_name(k, i),
			kn->hoisted ? " (reduction outside the tile's point loops)" : "",
			e->block ? "a block per item" : "a thread per item", p->wg);
	}
	signature(e, i, n);
	ce_line(c, "{");
	c->ind++;
	ce_line(c, "const long long nthr = (long long)gridDim.x * blockDim.x;");
	ce_line(c, "const long long gtid = (long long)blockIdx.x * blockDim.x + threadIdx.x;");
	ce_line(c, "(void)nthr;");
	ce_line(c, "(void)gtid;");
	ce_line(c, "(void)err;");
	ce_line(c, "(void)scratch;");
	for (int j = i; j < i + n; j++) {
		e->plan = &mp->k[j];
		entry_locals(e);
	}
	e->plan = p;
	if (p->stage_buf >= 0)
		ce_line(c, "__shared__ __align__(16) %s st%d[%lld];", lang.store[k->bufs[p->stage_buf].fmt],
			p->stage_buf, (long long)p->stage_len);
	if (e->block)
		ce_line(c, "for (long long it = blockIdx.x; it < %lldLL; it += gridDim.x) {", (long long)kn->nitems);
	else
		ce_line(c, "for (long long it = gtid; it < %lldLL; it += nthr) {", (long long)kn->nitems);
	c->ind++;
	if (n == 1) {
		ce_line(c, "long long q = it;");
		ce_line(c, "(void)q;");
		ce_tiles(c, kn, &tiles);
		e->synced = true;   /* nothing shared is in use yet, or the last item's barrier */
		e->last = last_of(k, p, kn->body);
		ce_stmts(c, kn->body);
		e->last = 0;
		if (e->block && group_locals(e->plan))
			barrier(e);   /* the next item reuses the shared locals */
	} else {
		e->synced = true;
		if (p->stage_buf >= 0)
			stage_row(e, p);
		for (int j = i; j < i + n; j++) {
			phase(e, mp, j, true);
			if (!e->block)
				e->synced = false;   /* its threads ran their own items */
			e->block = true;
			barrier(e);   /* the next phase reads what this one stored */
		}
	}
	c->ind--;
	ce_line(c, "}");
	c->ind--;
	ce_line(c, "}");
	ce_line(c, "%s", "");
}

#define OPT_LINE(s) " " s

static void prologue(CEmit *c)
{
	const Graph *g = c->k->g;
	const char *mode = getenv("ASSAY_CUDA_MODE");
	ce_line(c, "/* Generated by assay's cuda backend from graph %s. Do not edit.", g->name ? g->name : "(unnamed)");
	ce_line(c, " * NVRTC options:%s", CU_NVRTC_OPTS(OPT_LINE));
	if (mode && *mode)
		ce_line(c, " * ASSAY_CUDA_MODE=%s", mode);
	ce_about(c, " *");
	ce_line(c, " */");
	ce_help_all(c, &help, widen, own);
	ce_line(c, "%s", "");
}

char *cuda_emit(const Kernels *k, Diag *d)
{
	E e = {.part = -1};
	ce_init(&e.c, k, &lang, d);
	prologue(&e.c);
	const MapPlan *mp = map_plan(k, &cuda_target);
	e.mp = mp;
	for (int i = 0; i < k->nk && !e.c.failed; i += mp->k[i].nfused)
		kernel(&e, mp, i);
	return ce_finish(&e.c);
}
