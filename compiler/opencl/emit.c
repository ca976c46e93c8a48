/* compiler/opencl/emit.c: the OpenCL backend's emitter: kernel IR -> one OpenCL C 1.2
 * program, one __kernel per kernel of the IR, laid out by its plan (compiler/map/map.h,
 * map/lanes.c; the model: opencl.h).
 *
 * The text is written by the emitter core (compiler/emit/cemit.h) with OpenCL C's table (CLang)
 * and the OpenCL pieces here (conversions, stores, work-group distribution, the iterative
 * pairwise tree); the output is a deterministic function of the kernel IR, named as in the
 * c backend: temporaries t<expression id>, locals v<variable id>, buffers b<buffer id>,
 * kernels k<index>. Each statement's expressions become one `const` temporary per
 * computing node, fully parenthesised, with explicit conversions; a statement needing
 * temporaries is wrapped in its own block.
 *
 * Numerics: `#pragma OPENCL FP_CONTRACT OFF` forbids contracting a*b+c into an fma, and the
 * build options (run.c) allow no fast or relaxed math, so + - * are IEEE operations rounded
 * once; / and sqrt are correctly rounded when the device supports
 * -cl-fp32-correctly-rounded-divide-sqrt (run.c asks for it then), else within OpenCL's
 * 2.5 and 3 ulp (oracles/allowances.def models that worse case). Built-in functions are
 * OpenCL's, with the full profile's ulp bounds (allowances.def "opencl" rows), spelled by
 * ops.def's C-family base (overloaded: no f suffix, ce_cop); rsqrt is OpenCL's rsqrt (the
 * one override, ops below); sigmoid
 * is 1/(1+exp(-x)). exp, exp2, expm1, tanh, floor, ceil and sigmoid give a NaN argument
 * back (a + a) without calling the built-in (nan_guarded: PoCL 3.1's are poison at a NaN
 * constant). Integer floor division and remainder by a constant 2^k are a shift and
 * a mask (op_text: PoCL 3.1 miscompiled the helper form), by anything else the program's
 * fdiv_i and fmod_i. f16 and bf16 are stored as ushort and converted by lib.c's
 * functions with integer operations (round to nearest even, subnormals, overflow to inf,
 * NaN kept NaN); f16/bf16 arithmetic is f32 arithmetic rounded to the format (kir.h), never
 * native half. f64 needs cl_khr_fp64: the pragma and
 * the double functions appear only in programs that use f64 (ocl_needs_fp64).
 *
 * Work-groups (opencl.h): a kernel with lanes runs one item per work-group; a distributed
 * nest becomes a loop over its collapsed iterations strided by the work-group size; in
 * uniform code, stores are made by lane 0 and writes to shared variables by lane 0 between
 * barriers. Error reports (KX_CHECK, KS_CHECK) go to err: err[0] claims the first error
 * with atomic_cmpxchg (site + 1), the long at err + 2 then holds its value.
 */
#include <stdlib.h>
#include "opencl.h"

#define BARRIER "barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);"

typedef enum { CTX_UNIFORM, CTX_LANE } Ctx;

typedef struct {
	CEmit c;
	const MapKernel *plan;   /* the kernel being emitted */
	Ctx ctx;           /* with lanes: the context of the statement being emitted */
} E;

/* The uniform context of a kernel with lanes (where lane 0 acts for the work-group). */
static bool uniform(const E *e)
{
	return e->plan->mode == MAP_GROUP && e->ctx == CTX_UNIFORM;
}

/* ------------------------------------------------------------ expressions */

static void load_text(CEmit *c, const KExpr *x)
{
	Dtype f = c->k->bufs[x->v].fmt;
	const char *pre = f == DT_F16 ? "h2f(" : f == DT_BF16 ? "b2f(" : "(";
	ce_emit(c, "((%s)%sb%d[", c->L->type[x->type], pre, x->v);
	ce_ref(c, x->a[0]);
	ce_emit(c, "]))");
}

static void cvt_text(CEmit *c, const KExpr *x)
{
	KType to = (KType)x->type, from = (KType)c->k->x[x->a[0]].type;
	bool rtz = to == KT_INT && (from == KT_F32 || from == KT_F64);
	if (rtz)
		COV(ocl_cvt_rtz);
	if ((to == KT_F32 && (from == KT_INT || from == KT_F64)) || (to == KT_F64 && from == KT_INT))
		ce_emit(c, "convert_%s_rte(", c->L->type[to]);
	else if (rtz)
		ce_emit(c, "convert_long_rtz(");
	else if (to == KT_BOOL)
		ce_emit(c, "(0 != ");
	else
		ce_emit(c, "((%s)", c->L->type[to]);
	ce_ref(c, x->a[0]);
	ce_emit(c, ")");
}

static void round_text(CEmit *c, const KExpr *x)
{
	Dtype f = (Dtype)x->fmt;
	bool dbl = x->type == KT_F64;
	if (f == DT_F32) {
		IR_ASSERT(dbl);
		ce_emit(c, "((double)convert_float_rte(");
		ce_ref(c, x->a[0]);
		ce_emit(c, "))");
		return;
	}
	IR_ASSERT(f == DT_F16 || f == DT_BF16);
	const char *to = f == DT_F16 ? "h2f" : "b2f";
	const char *from = f == DT_F16 ? (dbl ? "d2h" : "f2h") : (dbl ? "d2b" : "f2b");
	ce_emit(c, "%s%s(%s(", dbl ? "(double)" : "", to, from);
	ce_ref(c, x->a[0]);
	ce_emit(c, "))");
}

/* k when c = 2^k (k in 0..62), else -1. */
static int pow2_log(int64_t c)
{
	if (c <= 0 || (c & (c - 1)) != 0)
		return -1;
	int k = 0;
	while (c >>= 1)
		k++;
	return k;
}

/* The real functions that PoCL 3.1's library (SLEEF) computes through a float-to-int
 * conversion of its argument with no NaN test before it: exp, exp2, expm1, tanh, floor,
 * ceil. Where LLVM can fold the argument to a NaN constant (a nan literal, 0/0, inf - inf,
 * an overflowed product less itself, 0/(j - 1) in the replica of lane j = 1), that
 * conversion folds to poison (LangRef: fptosi of a value out of range), so the result is
 * poison: its store is deleted, or a consumer branches on it (cos's argument reduction)
 * and the kernel is folded to `unreachable`, which PoCL runs off the end of: SIGSEGV
 * (tests/regress/pocl_nan_const.tg). sigmoid's helpers guard their exp the same way
 * (lib.c). Both f32 and f64: a rule by function, not by what one PoCL got wrong. */
static bool nan_guarded(const KExpr *x)
{
	if (x->type != KT_F32 && x->type != KT_F64)
		return false;
	switch ((Op)x->op) {
	case OP_EXP: case OP_EXP2: case OP_EXPM1: case OP_TANH: case OP_FLOOR: case OP_CEIL:
		return true;
	default:
		return false;
	}
}

/* `(isnan(a) ? (a + a) : f(a))`: never a call on a NaN, so no NaN reaches the conversion.
 * Exact: for a number a it is f(a), the same built-in on the same value; for a NaN, a + a
 * is a quiet NaN (a's payload), which is IEEE 754's (and OpenCL's) value of each of these
 * at NaN, and NaNs are compared by isnan alone (verify/metrics.c). A conditional, not
 * OpenCL's select() nor a helper: either would pass the unguarded result, poison, to a
 * noundef parameter, itself undefined. a is a name or a constant (ce_ref), so the text
 * repeats no computation. tanh also answers ±1 at ±inf itself, as OpenCL C's edge cases
 * (and C's Annex F) say: PoCL 3.1 gives 0.99999994 for tanh(+inf) in f32, where the budget,
 * which claims the edge case, is 0 (found by the patch-fault control campaign, case 553:
 * `d2[i:M] = tanh(inf)`; test_opencl tanh_at_infinities). */
static void nan_guard_text(CEmit *c, const KExpr *x)
{
	ce_emit(c, "(isnan(");
	ce_ref(c, x->a[0]);
	ce_emit(c, ") ? (");
	ce_ref(c, x->a[0]);
	ce_emit(c, " + ");
	ce_ref(c, x->a[0]);
	ce_emit(c, ") : ");
	if (x->op == OP_TANH) {   /* PoCL 3.1's tanh(+inf) is 0.99999994 (see below) */
		ce_emit(c, "isinf(");
		ce_ref(c, x->a[0]);
		ce_emit(c, x->type == KT_F32 ? ") ? copysign(1.0f, " : ") ? copysign(1.0, ");
		ce_ref(c, x->a[0]);
		ce_emit(c, ") : ");
	}
	ce_cop(c, x);
	ce_emit(c, ")");
}

/* Floor division and the non-negative remainder of an integer by a constant 2^k (a split's
 * piece and tail counts, tiles, reshapes) as `(a >> k)` and `(a & (2^k - 1))`: exact for
 * every long a, since OpenCL C's >> fills a negative value's vacated bits with ones and its
 * integers are two's complement (tests/test_opencl.c, pow2_identities). Every other op, and
 * other divisors, as ce_cop spells them (the program's fdiv_i and fmod_i). Why: PoCL 3.1
 * (LLVM 15) miscompiled a split's tail loop whose trip count was written `t - fdiv_i(t, 2) *
 * 2` (tests/regress/pocl_split2_tail.tg); LLVM reads the shift form as the bit it is. */
static void op_text(CEmit *c, const KExpr *x)
{
	if (nan_guarded(x)) {
		nan_guard_text(c, x);
		return;
	}
	if ((x->op == OP_IDIV || x->op == OP_MOD) && x->type == KT_INT) {
		const KExpr *b = &c->k->x[x->a[1]];
		int k = b->kind == KX_ICONST ? pow2_log(b->i) : -1;
		if (k < 0)
			COV(ocl_divmod_helper);
		if (k >= 0) {
			COV(ocl_pow2_divmod);
			ce_emit(c, "(");
			ce_ref(c, x->a[0]);
			if (x->op == OP_IDIV)
				ce_emit(c, " >> %d)", k);
			else
				ce_emit(c, " & %lldL)", (long long)(b->i - 1));
			return;
		}
	}
	ce_cop(c, x);
}

/* ------------------------------------------------------------ statements */

/* Writes the assignment of local v (element idx, or -1 for a scalar) = expression val; in
 * uniform code a shared variable is written by lane 0 between barriers. */
static void assign(E *e, int32_t v, int32_t idx, int32_t val)
{
	CEmit *c = &e->c;
	bool guard = uniform(e) && e->plan->vshare[v] == MAP_V_SHARED;
	if (guard) {
		ce_line(c, BARRIER);
		ce_line(c, "if (lid == 0)");
		c->ind++;
	}
	ce_indent(c);
	ce_set(c, v, idx, val);
	if (guard) {
		c->ind--;
		ce_line(c, BARRIER);
	}
}

static void store_text(E *e, const KStmt *s)
{
	CEmit *c = &e->c;
	Dtype f = c->k->bufs[s->v].fmt;
	KType t = (KType)c->k->x[s->b].type;
	if (uniform(e)) {
		ce_line(c, "if (lid == 0)");
		c->ind++;
	}
	ce_indent(c);
	ce_emit(c, "b%d[", s->v);
	ce_ref(c, s->a);
	ce_emit(c, "] = ");
	switch (f) {
	case DT_F16: ce_emit(c, "%s(", t == KT_F64 ? "d2h" : "f2h"); break;
	case DT_BF16: ce_emit(c, "%s(", t == KT_F64 ? "d2b" : "f2b"); break;
	case DT_F32: ce_emit(c, t == KT_F32 ? "(" : "convert_float_rte("); break;
	default: ce_emit(c, "((%s)", c->L->store[f]); break;
	}
	ce_ref(c, s->b);
	ce_emit(c, ");\n");
	if (uniform(e))
		c->ind--;
}

/* The header of a collapsed nest of loops L[0..depth): for f = lid, lid + nl, ... below
 * the product of the trip counts, each loop variable recovered from f (last fastest). */
static void collapsed_header(CEmit *c, int32_t s, const int32_t *L, int depth)
{
	const Kernels *k = c->k;
	for (int i = 0; i < depth; i++) {
		const KStmt *t = &k->s[L[i]];
		ce_indent(c);
		ce_emit(c, "const long n%d_%d = ", s, i);
		ce_ref(c, t->b);
		ce_emit(c, " > ");
		ce_ref(c, t->a);
		ce_emit(c, " ? ");
		ce_ref(c, t->b);
		ce_emit(c, " - ");
		ce_ref(c, t->a);
		ce_emit(c, " : 0L;\n");
	}
	ce_indent(c);
	ce_emit(c, "const long n%d = n%d_0", s, s);
	for (int i = 1; i < depth; i++)
		ce_emit(c, " * n%d_%d", s, i);
	ce_emit(c, ";\n");
	ce_line(c, "for (long f%d = lid; f%d < n%d; f%d += nl) {", s, s, s, s);
	c->ind++;
	ce_line(c, "long g%d = f%d;", s, s);
	for (int i = depth - 1; i >= 0; i--) {
		const KStmt *t = &k->s[L[i]];
		ce_indent(c);
		ce_emit(c, "const long v%d = ", t->v);
		ce_ref(c, t->a);
		if (i)
			ce_emit(c, " + g%d %% n%d_%d;\n", s, s, i);
		else
			ce_emit(c, " + g%d;\n", s);
		if (i)
			ce_line(c, "g%d /= n%d_%d;", s, s, i);
	}
	c->ind--;
}

/* A distributed nest of depth loops from s: iteration f of the collapsed nest runs on lane
 * f mod nl. swap (>= 0): the statement of a loop around s to run inside it (MAP_S_SWAP).
 * All bounds are evaluated once, before the nest (map/lanes.c proved them invariant in it). */
static void nest_stmt(E *e, int32_t s, int32_t swap)
{
	CEmit *c = &e->c;
	const Kernels *k = c->k;
	int depth = e->plan->sdepth[s];
	int32_t roots[2 * 8 + 2], nr = 0, L[8];
	IR_ASSERT(depth >= 1 && depth <= 8);
	if (swap > 0) {
		roots[nr++] = k->s[swap].a;
		roots[nr++] = k->s[swap].b;
	}
	for (int i = 0; i < depth; i++) {
		L[i] = i ? k->s[L[i - 1]].body : s;
		roots[nr++] = k->s[L[i]].a;
		roots[nr++] = k->s[L[i]].b;
	}
	ce_line(c, "{");
	c->ind++;
	c->stamp++;
	for (int i = 0; i < nr; i++)
		ce_temps(c, roots[i]);
	if (depth == 1)
		ce_for(c, &k->s[s], " + lid", " += nl");
	else
		collapsed_header(c, s, L, depth);
	c->ind++;
	Ctx saved = e->ctx;
	e->ctx = CTX_LANE;
	if (swap > 0) {
		ce_for(c, &k->s[swap], "", "++");
		c->ind++;
		ce_stmts(c, k->s[L[depth - 1]].body);
		c->ind--;
		ce_line(c, "}");
	} else {
		ce_stmts(c, k->s[L[depth - 1]].body);
	}
	e->ctx = saved;
	c->ind--;
	ce_line(c, "}");
	c->ind--;
	ce_line(c, "}");
	if (e->plan->sbarrier[s])
		ce_line(c, BARRIER);
}

static void decl_stmt(E *e, const KStmt *s)
{
	const KVar *v = &e->c.k->vars[s->v];
	const char *T = e->c.L->type[v->type];
	if (e->plan->vplace[s->v] != MAP_P_PRIVATE)
		return;   /* declared at the kernel's entry */
	if (v->n)
		ce_line(&e->c, "%s v%d[%lld];", T, s->v, (long long)v->n);
	else
		ce_line(&e->c, "%s v%d;", T, s->v);
}

static int bits(int64_t n)
{
	int b = 0;
	for (; n > 0; n >>= 1)
		b++;
	return b;
}

/* The pairwise tree of kir.h, iteratively (cemit.h ce_tree). */
static void tree_stmt(E *e, const KStmt *s)
{
	CEmit *c = &e->c;
	bool shared = uniform(e) && e->plan->vshare[s->v] == MAP_V_SHARED;
	const CTree tr = {.itype = "long", .isfx = "", .depth = bits(c->k->vars[s->c].n) + 3,
			  .keep = shared};
	COV(ocl_tree);
	ce_line(c, "{");
	c->ind++;
	c->stamp++;
	ce_temps(c, s->a);
	ce_temps(c, s->b);
	ce_tree(c, s, &tr);
	if (shared) {
		COV(ocl_tree_shared);
		ce_line(c, BARRIER);
		ce_line(c, "if (lid == 0)");
		ce_line(c, "\tv%d = tr_v[0];", s->v);
		ce_line(c, BARRIER);
	}
	c->ind--;
	ce_line(c, "}");
}

/* The statements of one line: set, store, check. */
static void simple_stmt(E *e, const KStmt *s)
{
	int32_t roots[2] = {s->a, s->b};
	bool open = ce_open(&e->c, roots, 2);
	switch (s->kind) {
	case KS_SET: assign(e, s->v, s->a, s->b); break;
	case KS_STORE: store_text(e, s); break;
	case KS_CHECK:
		ce_indent(&e->c);
		ce_report(&e->c, s);
		ce_emit(&e->c, "\n");
		break;
	default: IR_ASSERT(!"simple_stmt: not a simple statement");
	}
	ce_close(&e->c, open);
}

static bool shared_set(const E *e, int32_t s)
{
	const KStmt *t = &e->c.k->s[s];
	return s > 0 && uniform(e) && t->kind == KS_SET && e->plan->vshare[t->v] == MAP_V_SHARED;
}

/* Consecutive writes to shared variables in uniform code: lane 0 runs them all, in order,
 * between two barriers. Returns the last statement of the run. */
static int32_t shared_run(E *e, int32_t s)
{
	CEmit *c = &e->c;
	COV(ocl_shared_run);
	ce_line(c, BARRIER);
	ce_line(c, "if (lid == 0) {");
	c->ind++;
	e->ctx = CTX_LANE;
	int32_t last = s;
	for (; s > 0 && c->k->s[s].kind == KS_SET && e->plan->vshare[c->k->s[s].v] == MAP_V_SHARED; s = c->k->s[s].next) {
		simple_stmt(e, &c->k->s[s]);
		last = s;
	}
	e->ctx = CTX_UNIFORM;
	c->ind--;
	ce_line(c, "}");
	ce_line(c, BARRIER);
	return last;
}

/* Whether statement s is a loop that does nothing: constant bounds and no iteration, or a
 * body of such loops only (an empty body too). PoCL 3.1's work-group compiler aborts on one
 * between barriers (ParallelRegion::Create: "Assertion `exit != NULL' failed";
 * tests/regress/pocl_empty_loop.tg: a split larger than its extent leaves a tail loop of no
 * iteration inside a lane loop), so the emitter leaves such loops out. The kernel IR keeps
 * them: the planners read a split's tail loop, empty or not. */
static bool dead_loop(const Kernels *k, int32_t s)
{
	const KStmt *t = &k->s[s];
	if (t->kind != KS_LOOP || k->x[t->a].kind != KX_ICONST || k->x[t->b].kind != KX_ICONST)
		return false;
	if (k->x[t->b].i <= k->x[t->a].i)
		return true;
	for (int32_t b = t->body; b > 0; b = k->s[b].next)
		if (!dead_loop(k, b))
			return false;
	return true;
}

static int32_t stmt(CEmit *c, int32_t s)
{
	E *e = (E *)c;
	const KStmt *t = &c->k->s[s];
	if (dead_loop(c->k, s)) {
		COV(ocl_dead_loop);
		return s;
	}
	if (shared_set(e, s))
		return shared_run(e, s);
	if (uniform(e) && e->plan->srole[s] == MAP_S_NEST)
		nest_stmt(e, s, -1);
	else if (uniform(e) && e->plan->srole[s] == MAP_S_SWAP)
		nest_stmt(e, t->body, s);
	else if (t->kind == KS_LOOP || t->kind == KS_WHILE || t->kind == KS_IF)
		ce_control(c, t);
	else if (t->kind == KS_DECL)
		decl_stmt(e, t);
	else if (t->kind == KS_TREE)
		tree_stmt(e, t);
	else
		simple_stmt(e, t);
	return s;
}

/* OpenCL C's spellings where they differ from the C-family base: rsqrt is a built-in
 * (overloaded, as every function: no f32 suffix). */
static const COpSpell ops[OP__COUNT] = {
	[OP_RSQRT] = {CF_CALL, "rsqrt", "rsqrt", NULL, NULL},
};

static const CLang lang = {
	.name = "opencl",
	.no_mma = "OpenCL C has no matrix-unit instruction this backend uses (tensor cores: the cuda backend)",
	.type = {[KT_BOOL] = "int", [KT_INT] = "long", [KT_F32] = "float", [KT_F64] = "double"},
	.store = {[DT_F64] = "double", [DT_F32] = "float", [DT_F16] = "ushort", [DT_BF16] = "ushort",
		  [DT_I32] = "int"},
	.imin = "(-9223372036854775807L - 1L)", .ipre = "", .isfx = "L",
	.nan = {"NAN", "((double)NAN)"},
	.inf = {"INFINITY", "((double)INFINITY)"},
	.ninf = {"(-INFINITY)", "(-((double)INFINITY))"},
	.fsfx = "", .ops = ops,
	.ivar = "long ", .ivar_end = "",
	.forever = "for (;;) {",
	.err = "err, ", .truth = "1", .site = "",
	.load = load_text,
	.op = op_text,
	.cvt = cvt_text,
	.round = round_text,
	.stmt = stmt,
};

/* ------------------------------------------------------------ kernels */

static const CTiles tiles = {
	"const long v%d = 0;", "const long v%d = (q %% %lldL) * %lldL;", "q /= %lldL;",
};

static void signature(CEmit *c, int i, int n)
{
	const Kernels *k = c->k;
	uint8_t *use = ce_launch_use(k, i, n);
	ce_line(c, "__kernel void k%d(", i);
	c->ind++;
	/* a fused launch's written buffers are read back by other work-items of the group after
	 * a barrier: no restrict there (NVIDIA's OpenCL was seen to give another work-item the
	 * value from before lane 0's store: tests/regress/vk_nvidia_moe_s3.tg, sampled s2) */
	for (int b = 0; b < k->nbufs; b++)
		ce_line(c, "__global %s%s *%sb%d,", use[b] == 1 ? "const " : "", lang.store[k->bufs[b].fmt],
			n > 1 && use[b] >= 2 ? "" : "restrict ", b);
	ce_line(c, "__global int *restrict err, __global uchar *restrict scr, const long t0, const long t1)");
	c->ind--;
	free(use);
}

/* Locals in __local memory and in the scratch buffer, declared at the kernel's entry. */
static void entry_decls(E *e)
{
	CEmit *c = &e->c;
	const Kernels *k = c->k;
	const MapKernel *p = e->plan;
	for (int32_t v = 0; v < k->nvars; v++)
		if (p->vplace[v] == MAP_P_SHARED && k->vars[v].n)
			ce_line(c, "__local %s v%d[%lld];", lang.type[k->vars[v].type], v, (long long)k->vars[v].n);
		else if (p->vplace[v] == MAP_P_SHARED)
			ce_line(c, "__local %s v%d;", lang.type[k->vars[v].type], v);
	if (p->scratch_group + p->scratch == 0)
		return;
	if (p->mode == MAP_GROUP) {
		ce_line(c, "__global uchar *const sg = scr + (it - t0) * (%lldL + nl * %lldL);",
			(long long)p->scratch_group, (long long)p->scratch);
		ce_line(c, "__global uchar *const sp = sg + %lldL + lid * %lldL;", (long long)p->scratch_group,
			(long long)p->scratch);
	} else {
		ce_line(c, "__global uchar *const sp = scr + (it - t0) * %lldL;", (long long)p->scratch);
	}
	for (int32_t v = 0; v < k->nvars; v++) {
		uint8_t vc = p->vplace[v];
		if (vc != MAP_P_SCRATCH && vc != MAP_P_SCRATCH_GROUP)
			continue;
		const char *T = lang.type[k->vars[v].type];
		ce_line(c, "__global %s *const v%d = (__global %s *)(%s + %lldL);", T, v, T,
			vc == MAP_P_SCRATCH_GROUP ? "sg" : "sp", (long long)p->voff[v]);
	}
}

/* Kernel j's items of row `it` in a fused launch (MapKernel.lead, map/fuse.c): a
 * work-group-per-item kernel runs them one after another on the whole work-group, a
 * work-item-per-item kernel deals them to the lanes. */
static void phase(E *e, const MapPlan *mp, int j)
{
	CEmit *c = &e->c;
	const Kernel *kn = &c->k->k[j];
	e->plan = &mp->k[j];
	long long f = (long long)e->plan->per_row;
	if (e->plan->mode != MAP_GROUP)
		ce_line(c, "for (long u%d = it * %lldL + lid; u%d < (it + 1) * %lldL; u%d += nl) {", j, f, j, f, j);
	else if (f > 1)
		ce_line(c, "for (long u%d = it * %lldL; u%d < (it + 1) * %lldL; u%d++) {", j, f, j, f, j);
	else
		ce_line(c, "{");
	c->ind++;
	if (e->plan->mode != MAP_GROUP || f > 1)
		ce_line(c, "long q = u%d;", j);
	else
		ce_line(c, "long q = it;");
	ce_tiles(c, kn, &tiles);
	e->ctx = CTX_UNIFORM;
	ce_stmts(c, kn->body);
	if (e->plan->mode == MAP_GROUP && f > 1)
		ce_line(c, BARRIER);   /* the next item reuses the shared locals */
	c->ind--;
	ce_line(c, "}");
	ce_line(c, BARRIER);   /* the next phase reads what this one stored */
}

static void kernel(E *e, int i)
{
	CEmit *c = &e->c;
	const Kernels *k = c->k;
	const Kernel *kn = &k->k[i];
	const MapPlan *mp = map_plan(k, &ocl_target);
	e->plan = &mp->k[i];
	const MapKernel *p = e->plan;
	int n = p->nfused;
	if (n > 1) {
		ce_launch_about(c, i, n, "work-group", 0);
	} else if (p->mode == MAP_GROUP)
		ce_line(c, "/* %s%s: a work-group per item, up to %lld lanes */",
			ce_kernel_name(k, i),
			kn->hoisted ? " (reduction outside the tile's point loops)" : "", (long long)p->wg);
	else
		ce_line(c, "/* %s%s: a work-item per item */", ce_kernel_name(k, i),
			kn->hoisted ? " (reduction outside the tile's point loops)" : "");
	signature(c, i, n);
	ce_line(c, "{");
	c->ind++;
	if (p->mode == MAP_GROUP) {
		ce_line(c, "const long it = t0 + (long)get_group_id(0);");
		ce_line(c, "const long lid = (long)get_local_id(0), nl = (long)get_local_size(0);");
	} else {
		ce_line(c, "const long it = t0 + (long)get_global_id(0);");
		ce_line(c, "if (it >= t1)");
		ce_line(c, "\treturn;");
	}
	if (n > 1) {
		for (int j = i; j < i + n; j++) {
			e->plan = &mp->k[j];
			entry_decls(e);
		}
		for (int j = i; j < i + n; j++)
			phase(e, mp, j);
	} else {
		entry_decls(e);
		ce_line(c, "long q = it;");
		ce_tiles(c, kn, &tiles);
		e->ctx = CTX_UNIFORM;
		ce_stmts(c, kn->body);
	}
	c->ind--;
	ce_line(c, "}");
	ce_line(c, "%s", "");
}

bool ocl_needs_fp64(const Kernels *k)
{
	for (int b = 0; b < k->nbufs; b++)
		if (k->bufs[b].fmt == DT_F64)
			return true;
	for (int32_t v = 0; v < k->nvars; v++)
		if (k->vars[v].type == KT_F64)
			return true;
	for (int32_t x = 1; x < k->nx; x++)
		if (k->x[x].type == KT_F64)
			return true;
	return false;
}

static void prologue(CEmit *c)
{
	const Graph *g = c->k->g;
	ce_line(c, "/* Generated by assay's opencl backend from graph %s. Do not edit.",
		g->name ? g->name : "(unnamed)");
	ce_line(c, " * OpenCL C 1.2; built without fast or relaxed math (compiler/opencl/run.c).");
	ce_about(c, " *");
	ce_line(c, " */");
	ce_line(c, "#pragma OPENCL FP_CONTRACT OFF");
	bool f64 = ocl_needs_fp64(c->k);
	if (f64)
		COV(ocl_fp64);
	if (f64)
		ce_line(c, "#pragma OPENCL EXTENSION cl_khr_fp64 : enable");
	ce_line(c, "%s", "");
	ocl_prelude(c, f64);
}

char *ocl_emit(const Kernels *k, Diag *d)
{
	E e = {0};
	ce_init(&e.c, k, &lang, d);
	prologue(&e.c);
	for (int i = 0; i < k->nk; i += map_plan(k, &ocl_target)->k[i].nfused)
		kernel(&e, i);
	return ce_finish(&e.c);
}
