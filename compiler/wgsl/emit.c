/* compiler/wgsl/emit.c: the WGSL backend's emitter: kernel IR -> one WGSL module with a
 * compute entry point per kernel (k0, k1, ...), then its launch manifest.
 *
 * The text is written by the emitter core (compiler/emit/cemit.h) with WGSL's table (CLang) and
 * the WGSL pieces here (types, opaque constants, checked i32 ops, storage views, the
 * manifest); the output is a deterministic function of the kernel IR. Names follow the C backend: t12 for the
 * temporary of expression 12 (one `let` per computing node of a statement, in a block of
 * its own), v3 for variable 3, b0 for buffer 0 read-only and b0w for its writable view
 * (both bound at binding 1 + buffer id; binding 0 is the error slot `err`).
 *
 * Numerics. f32 arithmetic is WGSL's f32: + - * are correctly rounded; WGSL has no fp
 * contraction in the language (no fma unless written), so none is requested or possible to
 * disable; the driver's compiler is trusted not to fuse (measured on lavapipe: a*b+c is two
 * roundings). f16 and bf16 are 16-bit storage with integer conversions (lib.c); an f16 or
 * bf16 op format computes in f32 and rounds each result, as the kernel IR says. f64 is not
 * in WGSL: a program with f64 buffers, f64 locals or f64 arithmetic is `unsupported`, but
 * for the f64 values the IR makes without f64 arithmetic: an integer as f64 (held as i32),
 * an f32-exact constant, its negation, and f64(i) rounded to f16/bf16/f32 (held as f32,
 * rounded once from the integer, exactly as in f64); these are converted to f32 and
 * compared (across the two holdings exactly: cmp_if), as integer definitions with real
 * subexpressions and integers entering a narrow format need.
 * Integers are i32 (the plan, compiler/map/owner.c: operations that may leave i32 are emitted checked).
 *
 * Opaque constants. WGSL lets an implementation assume that no NaN or infinity occurs, and
 * Dawn's SPIR-V does not declare SignedZeroInfNanPreserve, so a Vulkan driver may treat
 * float ops as NotNaN/NotInf/NSZ: lavapipe folds 0.0 / x to 0 and fma(0, x, c) to c, wrong
 * for x = 0, inf or NaN. Every float constant is therefore written as fbits(BITS ^ zu),
 * zu = num_workgroups.z - 1 (always 0: launches are two-dimensional, but no compiler can
 * know it), so is every integer converted to a float (integer constants fold too), and
 * an op on one value twice (x - x, x / x, x == x) gets an opaque second operand. What is not a constant fold (a driver assuming no NaN in a comparison, say) stays
 * the driver's: the special-value semantics of this backend are only as good as its
 * driver's, as WGSL allows.
 *
 * Work-groups follow the plan (compiler/map/map.h MapMode): the kernel prologue turns the work-group and
 * invocation ids into the item and its tile origins (last parallel dimension fastest, as
 * in c/emit.c); a store outside the distributed loops of a MAP_GROUP/MAP_LANES kernel is
 * made by invocation 0 only (the others compute the same value).
 *
 * Ops are spelled by ops.def's C-family base with WGSL's overrides (wgsl_ops) and the
 * checked i32 forms (checked); casts are not ops of the kernel IR (KX_CVT/KX_ROUND carry
 * them).
 *
 * Local arrays are private (`var v3: array<f32, 12>;`) unless the plan puts them in scratch
 * (wgsl.h, "Scratch"): then their elements are words of `scr` in the invocation's column,
 * read as bitcast<f32>(scr[(o + min(u32(i), n - 1u)) * sst + slot]) (the index clamped as
 * WGSL clamps a private array's), and a kernel with scratch finds its work-groups from the
 * uniform `chunk`. The pairwise trees of a kernel share one set of stacks, declared at its
 * top and sized by the plan.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "../emit/cemit.h"
#include "wgsl.h"

/* WGSL's spellings where they differ from the C-family base of ops.def (cemit.h, "op
 * spellings"; f64 values the backend holds are spelled as f32, f64kind): a float / and
 * the functions lib.c writes out are helpers (div_f, exp_f, ...; WGSL's own are too loose
 * or fold NaN away), select(if false, if true, condition) is the conditional, != of floats
 * and booleans is written !(a == b) (unordered: Dawn's != is ordered on lavapipe), abs, max
 * and min of i32 are built-ins. */
static const COpSpell wgsl_ops[OP__COUNT] = {
	[OP_DIV] = {CF_CALL, "div_f", NULL, NULL, NULL},
	[OP_NE] = {CF_NOTEQ, "==", NULL, NULL, "=="},
	[OP_SELECT] = {CF_SELECTF, "select", NULL, "select", "select"},
	[OP_EXP] = {CF_CALL, "exp_f", NULL, NULL, NULL},
	[OP_EXP2] = {CF_CALL, "exp2_f", NULL, NULL, NULL},
	[OP_EXPM1] = {CF_CALL, "expm1_f", NULL, NULL, NULL},
	[OP_LOG] = {CF_CALL, "log_f", NULL, NULL, NULL},
	[OP_LOG2] = {CF_CALL, "log2_f", NULL, NULL, NULL},
	[OP_LOG1P] = {CF_CALL, "log1p_f", NULL, NULL, NULL},
	[OP_ABS] = {CF_CALL, "abs", NULL, "abs", NULL},
	[OP_TANH] = {CF_CALL, "tanh_f", NULL, NULL, NULL},
	[OP_ERF] = {CF_CALL, "erf_f", NULL, NULL, NULL},
	[OP_POW] = {CF_CALL, "pow_f", NULL, NULL, NULL},
	[OP_MAX] = {CF_CALL, NULL, NULL, "max", NULL},
	[OP_MIN] = {CF_CALL, NULL, NULL, "min", NULL},
};

/* The checked i32 spelling of the integer ops whose result may leave i32 (MapPlan.xwide):
 * a call that reports the kernel's overflow site (lib.c); wgsl_target.int_checked names
 * these ops (the plan binds the error slot by it). */
static const char *const checked[OP__COUNT] = {
	[OP_NEG] = "neg_ck", [OP_ADD] = "add_ck", [OP_SUB] = "sub_ck", [OP_MUL] = "mul_ck",
	[OP_IDIV] = "fdiv_ck", [OP_ABS] = "abs_ck",
};

typedef struct {
	CEmit c;
	const MapPlan *pl;
	int ki;                /* the kernel being written */
	bool dist;             /* inside a distributed nest or a lane */
	bool uses_err;         /* the kernel reports errors */
	uint8_t *use;          /* per buffer, this kernel: 1 loads, 2 stores */
	uint8_t *views;        /* per buffer, any kernel: 1 read view, 2 write view */
} E;

/* The word offset of local array v in the invocation's scratch column, -1: private. */
static int64_t soff(const E *e, int32_t v)
{
	const MapKernel *kp = &e->pl->k[e->ki];
	return kp->vplace[v] == MAP_P_SCRATCH ? kp->voff[v] / 4 : -1;
}

/* ------------------------------------------------------------ types */

/* f64 nodes the backend can hold (see the file comment): 1 an integer (held as i32),
 * 2 a value exact in f32 (held as f32: an f32-exact constant, a rounding to f32, f16 or
 * bf16, and the negation or absolute value of such); 0 none. */
static int f64kind(const CEmit *c, int32_t id)
{
	const KExpr *x = &c->k->x[id];
	if (x->type != KT_F64)
		return 0;
	if (x->kind == KX_FCONST)
		return isnan(x->f) || (double)(float)x->f == x->f ? 2 : 0;
	if (x->kind == KX_CVT && c->k->x[x->a[0]].type == KT_INT)
		return 1;
	if (x->kind == KX_ROUND && (x->fmt == DT_F32 || x->fmt == DT_F16 || x->fmt == DT_BF16))
		return f64kind(c, x->a[0]) ? 2 : 0;
	if (x->kind == KX_OP && (x->op == OP_NEG || x->op == OP_ABS))   /* exact */
		return f64kind(c, x->a[0]) == 2 ? 2 : 0;
	return 0;
}

static const char *wtype(const CEmit *c, int32_t id)
{
	KType t = (KType)c->k->x[id].type;
	if (t == KT_F64 && f64kind(c, id) == 1)
		COV(wgsl_f64_int);
	else if (t == KT_F64)
		COV(wgsl_f64_f32);
	if (t == KT_F64)
		return f64kind(c, id) == 1 ? "i32" : "f32";
	return c->L->type[t];
}

static const char *vtype(CEmit *c, KType t)
{
	if (t == KT_F64) {
		COV(wgsl_f64_refused);
		ce_unsupported(c, "an f64 local (WGSL has no f64)");
	}
	return t == KT_F64 ? "f32" : c->L->type[t];
}

/* ------------------------------------------------------------ expressions */

static bool temp(CEmit *c, int32_t id)
{
	if (c->k->x[id].type == KT_F64 && !f64kind(c, id)) {
		COV(wgsl_f64_refused);
		ce_unsupported(c, "f64 arithmetic (WGSL has no f64)");
		return false;
	}
	ce_indent(c);
	ce_emit(c, "let t%d: %s = ", id, wtype(c, id));
	return true;
}

/* A float constant, from its bits xor zu (0 at run time, unknown to the compiler): see
 * the file comment ("opaque constants"). */
static void fconst(CEmit *c, const KExpr *x)
{
	float v = (float)x->f;
	uint32_t u;
	memcpy(&u, &v, sizeof u);
	ce_emit(c, "fbits(0x%08xu ^ zu)", u);
}

static void iconst(CEmit *c, int64_t i)
{
	if (i < INT32_MIN || i > INT32_MAX)
		ce_unsupported(c, "the integer constant %lld does not fit in 32 bits (WGSL has no i64)",
			       (long long)i);
	else if (i == INT32_MIN)
		ce_emit(c, "i32(-2147483648)");
	else if (i < 0)
		ce_emit(c, "(%lldi)", (long long)i);
	else
		ce_emit(c, "%lldi", (long long)i);
}

static void int_const(CEmit *c, const KExpr *x)
{
	if (x->type == KT_BOOL)
		ce_emit(c, "%s", x->i ? "true" : "false");
	else
		iconst(c, x->i);
}

/* Operand i of x; the second operand of a float op on one value twice (x - x, x / x,
 * x == x) is made opaque, so that the compiler cannot fold the op to a constant (wrong for
 * inf and NaN: see the file comment). */
static void arg(CEmit *c, const KExpr *x, int i)
{
	bool twice = i == 1 && x->a[0] == x->a[1] && strcmp(wtype(c, x->a[0]), "f32") == 0;
	if (twice)
		COV(wgsl_opaque_twice);
	if (twice)
		ce_emit(c, "opq(");
	ce_ref(c, x->a[i]);
	if (twice)
		ce_emit(c, ", zu)");
}

/* A comparison of two f64 values the backend holds differently: an integer (i32) and an
 * f32-exact value. cmp_if compares them exactly (lib.c). */
static void cmp_mixed(CEmit *c, const KExpr *x)
{
	static const struct { Op op, swapped; int code; } rel[] = {
		{OP_LT, OP_GT, 0}, {OP_LE, OP_GE, 1}, {OP_GT, OP_LT, 2}, {OP_GE, OP_LE, 3},
		{OP_EQ, OP_EQ, 4}, {OP_NE, OP_NE, 5},
	};
	int ka = f64kind(c, x->a[0]), kb = f64kind(c, x->a[1]);
	if (!ka || !kb) {
		ce_unsupported(c, "a comparison of f64 values (WGSL has no f64)");
		return;
	}
	COV(wgsl_cmp_mixed);
	bool swap = ka == 2;   /* the integer goes first */
	Op op = (Op)x->op;
	for (size_t i = 0; i < ARRAY_LEN(rel); i++) {
		if (rel[i].op != op)
			continue;
		Op want = swap ? rel[i].swapped : op;
		for (size_t j = 0; j < ARRAY_LEN(rel); j++)
			if (rel[j].op == want) {
				ce_emit(c, "cmp_if(");
				ce_ref(c, x->a[swap ? 1 : 0]);
				ce_emit(c, ", ");
				ce_ref(c, x->a[swap ? 0 : 1]);
				ce_emit(c, ", %di)", rel[j].code);
			}
		return;
	}
	IR_ASSERT(!"cmp_mixed: not a comparison");
}

static void op_text(CEmit *c, const KExpr *x)
{
	E *e = (E *)c;
	Op op = (Op)x->op;
	int n = op_info(op)->arity;
	bool wide = x->type == KT_INT && e->pl->xwide[x - c->k->x];
	CSType t = ce_spell_type(c, x);
	CSpelt sp;
	if (!ce_spell(c->L, op, t == CS_F64 ? CS_F32 : t, &sp)) {
		ce_internal(c, "no spelling for %s on %s (%s)", op_info(op)->name, kt_name((KType)x->type),
			    (op_info(op)->flags & OPF_CAST) ? "a conversion: the kernel IR carries it as KX_CVT/KX_ROUND"
							     : "no such op");
		return;
	}
	if (wide && (wgsl_target.int_checked & BE_OP(op))) {
		IR_ASSERT(checked[op]);
		COV(wgsl_checked_op);
		e->uses_err = true;   /* a checked call: the kernel's overflow site is nsites + ki */
		ce_emit(c, "%s(", checked[op]);
		ce_args(c, x, n);
		ce_emit(c, ", %di)", c->k->nsites + e->ki);
		return;
	}
	if ((op_info(op)->flags & OPF_CMP) && t == CS_F64 && f64kind(c, x->a[0]) != f64kind(c, x->a[1])) {
		cmp_mixed(c, x);
		return;
	}
	ce_op(c, x, (CForm)sp.form, sp.s);
}

/* Buffer b's element at index expression idx, for a load. */
static void load_text(CEmit *c, const KExpr *x)
{
	E *e = (E *)c;
	int b = x->v;
	Dtype f = c->k->bufs[b].fmt;
	bool w = e->use[b] & 2;
	e->use[b] |= 1;
	if (f == DT_F16 || f == DT_BF16) {
		ce_emit(c, "%s(half16(%sb%d%s[(u32(", f == DT_F16 ? "h2f" : "b2f", w ? "atomicLoad(&" : "", b,
			w ? "w" : "");
		ce_ref(c, x->a[0]);
		ce_emit(c, ") >> 1u) + %du]%s, u32(", WGSL_GUARD / 4, w ? ")" : "");
		ce_ref(c, x->a[0]);
		ce_emit(c, ")))");
		return;
	}
	ce_emit(c, "b%d%s[u32(", b, w ? "w" : "");
	ce_ref(c, x->a[0]);
	ce_emit(c, ") + %du]", WGSL_GUARD / 4);
}

static void cvt_text(CEmit *c, const KExpr *x)
{
	int32_t a = x->a[0];
	KType from = (KType)c->k->x[a].type;
	if ((x->type == KT_F32 && from == KT_INT) ||
	    (x->type == KT_F32 && from == KT_F64 && f64kind(c, a) == 1)) {
		ce_emit(c, "opq(i2f(");   /* opaque: an integer may be a folded constant */
		ce_ref(c, a);
		ce_emit(c, "), zu)");
	} else if ((x->type == KT_F32 && from == KT_F64 && f64kind(c, a) == 2) ||
		   (x->type == KT_F64 && from == KT_INT)) {
		ce_ref(c, a);   /* an exact f32 value; an integer held as i32 */
	} else {
		ce_unsupported(c, "a conversion from %s to %s (WGSL has no f64)", kt_name(from),
			       kt_name((KType)x->type));
	}
}

static void round_text(CEmit *c, const KExpr *x)
{
	Dtype f = (Dtype)x->fmt;
	int32_t a = x->a[0];
	int k64 = x->type == KT_F64 ? f64kind(c, a) : 0;
	if (x->type == KT_F64 && !k64) {
		ce_unsupported(c, "f64 arithmetic rounded to %s (WGSL has no f64)", dt_name(f));
		return;
	}
	if (k64 == 1) {
		const char *fn = f == DT_F16 ? "i2h" : f == DT_BF16 ? "i2b" : f == DT_F32 ? "i2f" : NULL;
		if (!fn) {
			ce_unsupported(c, "rounding to %s", dt_name(f));
			return;
		}
		ce_emit(c, "opq(%s(", fn);
		ce_ref(c, a);
		ce_emit(c, "), zu)");
		return;
	}
	if (f == DT_F32) {
		ce_ref(c, a);
		return;
	}
	if (f != DT_F16 && f != DT_BF16) {
		ce_unsupported(c, "rounding to %s", dt_name(f));
		return;
	}
	ce_emit(c, "%s(%s(", f == DT_F16 ? "h2f" : "b2f", f == DT_F16 ? "f2h" : "f2b");
	ce_ref(c, a);
	ce_emit(c, "))");
}

static bool is_const(const Kernels *k, int32_t id)
{
	return k->x[id].kind == KX_ICONST;
}

/* chk(v, lo, hi inclusive, guard, site); a check the intervals already prove is v. */
static void check_text(CEmit *c, const KExpr *x)
{
	const Kernels *k = c->k;
	KIvl v = ((E *)c)->pl->xiv[x->a[0]];
	if (is_const(k, x->a[1]) && is_const(k, x->a[2]) && v.lo <= v.hi &&
	    v.lo >= k->x[x->a[1]].i && v.hi < k->x[x->a[2]].i) {
		COV(wgsl_check_proved);
		ce_ref(c, x->a[0]);
		return;
	}
	((E *)c)->uses_err = true;
	ce_emit(c, "chk(");
	ce_ref(c, x->a[0]);
	ce_emit(c, ", ");
	if (is_const(k, x->a[1]))
		iconst(c, k->x[x->a[1]].i < INT32_MIN ? INT32_MIN : k->x[x->a[1]].i);
	else
		ce_ref(c, x->a[1]);
	ce_emit(c, ", ");
	if (is_const(k, x->a[2]))
		iconst(c, k->x[x->a[2]].i - 1 > INT32_MAX ? INT32_MAX : k->x[x->a[2]].i - 1);
	else {
		ce_emit(c, "(");
		ce_ref(c, x->a[2]);
		ce_emit(c, " - 1i)");
	}
	ce_emit(c, ", ");
	if (x->a[3] >= 0)
		ce_ref(c, x->a[3]);
	else
		ce_emit(c, "true");
	ce_emit(c, ", %di)", x->v);
}

/* ------------------------------------------------------------ statements */

static void store_text(E *e, const KStmt *s)
{
	CEmit *c = &e->c;
	int b = s->v;
	Dtype f = c->k->bufs[b].fmt;
	e->use[b] |= 2;
	bool solo = e->pl->k[e->ki].mode != MAP_ITEM && !e->dist;
	ce_indent(c);
	if (solo)
		ce_emit(c, "if (lid == 0u) ");
	if (f == DT_F16 || f == DT_BF16) {
		/* two invocations may write the two halves of one word: atomic and/or */
		COV(wgsl_store16);
		ce_emit(c, "{ let i = u32(");
		ce_ref(c, s->a);
		ce_emit(c, "); let sh = (i & 1u) << 4u; let w = (i >> 1u) + %du; ", WGSL_GUARD / 4);
		ce_emit(c, "atomicAnd(&b%dw[w], ~(0xffffu << sh)); atomicOr(&b%dw[w], %s(", b, b,
			f == DT_F16 ? "f2h" : "f2b");
		ce_ref(c, s->b);
		ce_emit(c, ") << sh); }\n");
		return;
	}
	ce_emit(c, "%sb%dw[u32(", solo ? "{ " : "", b);
	ce_ref(c, s->a);
	ce_emit(c, ") + %du] = ", WGSL_GUARD / 4);
	ce_ref(c, s->b);
	ce_emit(c, ";%s\n", solo ? " }" : "");
}

/* The statements of a distributed construct, run by each invocation on its own share. */
static void dist_body(E *e, int32_t first)
{
	bool was = e->dist;
	e->dist = true;
	ce_stmts(&e->c, first);
	e->dist = was;
}

/* MAP_GROUP: a par nest of `levels` loops flattened, iteration f to invocation f mod wg. */
static void nest_stmt(E *e, const KStmt *s, int levels)
{
	CEmit *c = &e->c;
	const KStmt *lv[8];
	int32_t roots[16] = {0};
	IR_ASSERT(levels >= 1 && levels <= 8);
	lv[0] = s;
	for (int l = 1; l < levels; l++)
		lv[l] = &c->k->s[lv[l - 1]->body];
	for (int l = 0; l < levels; l++) {
		roots[2 * l] = lv[l]->a;
		roots[2 * l + 1] = lv[l]->b;
	}
	bool open = ce_open(c, roots, 2 * levels);
	if (!open) {
		ce_line(c, "{");
		c->ind++;
	}
	for (int l = 0; l < levels; l++) {
		ce_indent(c);
		ce_emit(c, "let n%d: u32 = u32(max(", l);
		ce_ref(c, lv[l]->b);
		ce_emit(c, " - ");
		ce_ref(c, lv[l]->a);
		ce_emit(c, ", 0i));\n");
	}
	ce_indent(c);
	ce_emit(c, "let nf: u32 = n0");
	for (int l = 1; l < levels; l++)
		ce_emit(c, " * n%d", l);
	ce_emit(c, ";\n");
	ce_line(c, "for (var f: u32 = lid; f < nf; f += %du) {", e->pl->k[e->ki].wg);
	c->ind++;
	ce_line(c, "var r: u32 = f;");
	for (int l = levels - 1; l >= 0; l--) {
		ce_indent(c);
		ce_emit(c, "let v%d: i32 = ", lv[l]->v);
		ce_ref(c, lv[l]->a);
		ce_emit(c, " + i32(r %% n%d);\n", l);
		ce_line(c, "r = r / n%d;", l);
	}
	dist_body(e, lv[levels - 1]->body);
	c->ind--;
	ce_line(c, "}");
	c->ind--;
	ce_line(c, "}");
}

/* MAP_LANES: invocation l runs iteration l of a lane loop. */
static void lane_stmt(E *e, const KStmt *s)
{
	CEmit *c = &e->c;
	bool open = ce_open_stmt(c, s);
	if (!open) {
		ce_line(c, "{");
		c->ind++;
	}
	ce_line(c, "let v%d: i32 = i32(lid);", s->v);
	ce_indent(c);
	ce_emit(c, "if (v%d >= ", s->v);
	ce_ref(c, s->a);
	ce_emit(c, " && v%d < ", s->v);
	ce_ref(c, s->b);
	ce_emit(c, ") {\n");
	c->ind++;
	dist_body(e, s->body);
	c->ind--;
	ce_line(c, "}");
	c->ind--;
	ce_line(c, "}");
}

/* The scratch word of element idx (an expression, or the text ix when not NULL) of local
 * array v, which lives in scratch. */
static void scratch_word(CEmit *c, int32_t v, int32_t idx, const char *ix)
{
	const E *e = (const E *)c;
	ce_emit(c, "scr[(%lldu + min(u32(", (long long)soff(e, v));
	if (ix)
		ce_emit(c, "%s", ix);
	else
		ce_ref(c, idx);
	ce_emit(c, "), %lldu)) * sst + slot]", (long long)(c->k->vars[v].n - 1));
}

/* Element idx (or ix) of local array v, read. */
static void elem_text(CEmit *c, int32_t v, int32_t idx, const char *ix)
{
	const E *e = (const E *)c;
	if (soff(e, v) < 0) {
		ce_emit(c, "v%d[", v);
		if (ix)
			ce_emit(c, "%s", ix);
		else
			ce_ref(c, idx);
		ce_emit(c, "]");
		return;
	}
	KType t = (KType)c->k->vars[v].type;
	ce_emit(c, "%s", t == KT_BOOL ? "(" : t == KT_INT ? "bitcast<i32>(" : "bitcast<f32>(");
	scratch_word(c, v, idx, ix);
	ce_emit(c, "%s", t == KT_BOOL ? " != 0u)" : ")");
}

/* The elem hook: reads, and the target of ce_set (never one in scratch: set_stmt). */
static void local_elem(CEmit *c, int32_t v, int32_t idx)
{
	elem_text(c, v, idx, NULL);
}

/* `lhs = val;` of a set statement, indented, with its newline. */
static void set_stmt(CEmit *c, const KStmt *s)
{
	ce_indent(c);
	if (s->a < 0 || soff((E *)c, s->v) < 0) {
		ce_set(c, s->v, s->a, s->b);
		return;
	}
	scratch_word(c, s->v, s->a, NULL);
	ce_emit(c, " = %s(", c->k->vars[s->v].type == KT_BOOL ? "select(0u, 1u, " : "bitcast<u32>");
	ce_ref(c, s->b);
	ce_emit(c, "%s;\n", c->k->vars[s->v].type == KT_BOOL ? "))" : ")");
}

static void decl_stmt(CEmit *c, const KStmt *s)
{
	const KVar *v = &c->k->vars[s->v];
	const char *t = vtype(c, v->type);
	if (v->n && soff((E *)c, s->v) >= 0)
		ce_line(c, "// v%d: %s[%lld] in scratch at word %lld of the invocation's column", s->v, t,
			(long long)v->n, (long long)soff((E *)c, s->v));
	else if (v->n)
		ce_line(c, "var v%d: array<%s, %lld>;", s->v, t, (long long)v->n);
	else
		ce_line(c, "var v%d: %s;", s->v, t);
}

/* WGSL's declarations for ce_tree: var name: array<type, n>, var name: type = init, or
 * let name = init. */
static void tree_decl(CEmit *c, const char *type, const char *name, int n, const char *init,
		      bool mut)
{
	if (n > 0)
		ce_line(c, "var %s: array<%s, %d>;", name, type, n);
	else if (mut)
		ce_line(c, "var %s: %s = %s;", name, type, init);
	else
		ce_line(c, "let %s = %s;", name, init);
}

static void tree_term(CEmit *c, int32_t v, const char *ix)
{
	elem_text(c, v, -1, ix);
}

/* How WGSL writes the pairwise trees (cemit.h ce_tree): i32 frames, f32 values, on the
 * stacks the kernel's trees share (tree_stacks). */
static CTree tree_spell(int depth)
{
	return (CTree){.itype = "i32", .isfx = "i", .vtype = "f32", .depth = depth, .shared = true,
		       .decl = tree_decl, .term = tree_term};
}

/* The pairwise tree of kir.h, iteratively (ce_tree). */
static void tree_stmt(CEmit *c, const KStmt *s)
{
	Dtype f = (Dtype)s->fmt;
	COV(wgsl_tree);
	if (f != DT_F32 && f != DT_F16 && f != DT_BF16) {
		COV(wgsl_f64_refused);
		ce_unsupported(c, "a pairwise reduction in %s (WGSL has no f64)", dt_name(f));
		return;
	}
	if (f != DT_F32)
		COV(wgsl_tree_16);
	const CTree tr = tree_spell(((const E *)c)->pl->k[((const E *)c)->ki].tree_depth);
	bool open = ce_open_stmt(c, s);
	if (!open) {
		ce_line(c, "{");
		c->ind++;
	}
	ce_tree(c, s, &tr);
	c->ind--;
	ce_line(c, "}");
}

/* The statements of one line: set, store, check. */
static void simple_stmt(E *e, const KStmt *s)
{
	CEmit *c = &e->c;
	bool open = ce_open_stmt(c, s);
	switch (s->kind) {
	case KS_SET: set_stmt(c, s); break;
	case KS_STORE: store_text(e, s); break;
	case KS_CHECK:
		e->uses_err = true;
		ce_indent(c);
		ce_report(c, s);
		ce_emit(c, "\n");
		break;
	default: IR_ASSERT(!"simple_stmt: not a simple statement");
	}
	ce_close(c, open);
}

static void gather(E *e)
{
	const MapKernel *kp = &e->pl->k[e->ki];
	IR_ASSERT(soff(e, kp->lane_arr) < 0);   /* the plan keeps the partials private */
	ce_line(&e->c, "wg%d[lid] = v%d[lid];", e->ki, kp->lane_arr);
	ce_line(&e->c, "workgroupBarrier();");
	ce_line(&e->c, "for (var j: u32 = 0u; j < %du; j++) {", kp->wg);
	ce_line(&e->c, "\tv%d[j] = wg%d[j];", kp->lane_arr, e->ki);
	ce_line(&e->c, "}");
}

static int32_t stmt(CEmit *c, int32_t id)
{
	E *e = (E *)c;
	const KStmt *s = &c->k->s[id];
	uint8_t role = e->pl->k[e->ki].srole[id];
	MapMode mode = e->pl->k[e->ki].mode;
	if (s->kind == KS_LOOP && role == MAP_S_NEST && mode == MAP_GROUP)
		nest_stmt(e, s, e->pl->k[e->ki].sdepth[id]);
	else if (s->kind == KS_LOOP && role == MAP_S_LANE && mode == MAP_LANES)
		lane_stmt(e, s);
	else if (s->kind == KS_LOOP || s->kind == KS_WHILE || s->kind == KS_IF)
		ce_control(c, s);
	else if (s->kind == KS_DECL)
		decl_stmt(c, s);
	else if (s->kind == KS_TREE)
		tree_stmt(c, s);
	else
		simple_stmt(e, s);
	if (id == e->pl->k[e->ki].gather_after && mode == MAP_LANES)
		gather(e);
	return id;
}

static const CLang lang = {
	.name = "wgsl",
	.no_mma = "WGSL has no matrix-unit instruction (tensor cores: the cuda backend)",
	.ops = wgsl_ops,
	.type = {[KT_BOOL] = "bool", [KT_INT] = "i32", [KT_F32] = "f32", [KT_F64] = "f64"},
	.ivar = "var ", .ivar_end = ": i32",
	.forever = "loop {",
	.braces = true,
	.err = "", .truth = "true", .site = "i",
	.temp = temp,
	.iconst = int_const,
	.fconst = fconst,
	.operand = arg,
	.elem = local_elem,
	.load = load_text,
	.op = op_text,
	.cvt = cvt_text,
	.round = round_text,
	.check = check_text,
	.stmt = stmt,
};

/* ------------------------------------------------------------ kernels */

static const CTiles tiles = {
	"let v%d: i32 = 0i;", "let v%d: i32 = (q %% %lldi) * %lldi;", "q = q / %lldi;",
};

static const char *mode_name(MapMode m)
{
	static const char *names[] = {[MAP_ITEM] = "an invocation per item",
				      [MAP_GROUP] = "a work-group per item, its tile's points over the invocations",
				      [MAP_LANES] = "a work-group per item, a split partial per invocation"};
	return names[m];
}

/* Marks the buffers that statements s.. store (before any load is written, so that a
 * kernel reading its own output reads it through the writable view). */
static void scan_stores(E *e, int32_t s)
{
	for (; s > 0; s = e->c.k->s[s].next) {
		const KStmt *t = &e->c.k->s[s];
		if (t->kind == KS_STORE)
			e->use[t->v] |= 2;
		scan_stores(e, t->body);
		scan_stores(e, t->body2);
	}
}

/* The stacks the kernel's pairwise trees share (tree_stmt): frames of `depth`. */
static void tree_stacks(CEmit *c, int depth)
{
	if (!depth)
		return;
	const CTree tr = tree_spell(depth);
	ce_line(c, "// the pairwise trees' stacks");
	ce_tree_stacks(c, &tr);
}

static void kernel(E *e, int i, CEmit *manifest)
{
	CEmit *c = &e->c;
	const Kernels *k = c->k;
	const Kernel *kn = &k->k[i];
	const MapKernel *kp = &e->pl->k[i];
	e->ki = i;
	e->uses_err = false;
	if (kp->scratch > WGSL_SCRATCH_MAX) {
		ce_unsupported(c, "kernel %d keeps %lld bytes of local arrays per invocation, more than "
			       "the %d bytes of scratch a dispatch may bind", i, (long long)kp->scratch,
			       WGSL_SCRATCH_MAX);
		return;
	}
	memset(e->use, 0, (size_t)k->nbufs + 1);
	scan_stores(e, kn->body);
	ce_line(c, "// %s: %s", ce_kernel_name(k, i), mode_name(kp->mode));
	ce_line(c, "@compute @workgroup_size(%d)", kp->wg);
	ce_line(c, "fn k%d(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,", i);
	ce_line(c, "\t@builtin(local_invocation_index) lid: u32) {");
	c->ind++;
	if (kp->scratch) {
		/* dispatched in chunks (wgsl.h, "Scratch") */
		ce_line(c, "let cg: u32 = wid.x + wid.y * nwg.x;   // the work-group in this chunk");
		ce_line(c, "if (cg >= chunk.y) {");
		ce_line(c, "\treturn;");
		ce_line(c, "}");
		ce_line(c, "let grp: u32 = chunk.x + cg;");
		ce_line(c, "let slot: u32 = cg * %du + lid;   // this invocation's scratch column", kp->wg);
		ce_line(c, "let sst: u32 = chunk.z;");
	} else {
		ce_line(c, "let grp: u32 = wid.x + wid.y * nwg.x;");
	}
	ce_line(c, "let zu: u32 = nwg.z - 1u;");
	if (kp->mode == MAP_ITEM)
		ce_line(c, "let item: u32 = grp * %du + lid;", kp->wg);
	else
		ce_line(c, "let item: u32 = grp;");
	ce_line(c, "if (item >= %lldu) {", (long long)kn->nitems);
	ce_line(c, "\treturn;");
	ce_line(c, "}");
	ce_line(c, "var q: i32 = i32(item);");
	ce_tiles(c, kn, &tiles);
	tree_stacks(c, kp->tree_depth);
	ce_stmts(c, kn->body);
	c->ind--;
	ce_line(c, "}");
	ce_line(c, "%s", "");
	/* the runtime binds what the plan says (MapKernel.buse, err): the text must agree */
	bool agree = e->uses_err == kp->err;
	for (int b = 0; b < k->nbufs; b++)
		agree &= e->use[b] == kp->buse[b];
	if (!agree) {
		ce_internal(c, "kernel %d uses other buffers or error slot than its plan binds", i);
		return;
	}
	ce_emit(manifest, "//! kernel k%d groups=%lld bindings=%s", i, (long long)kp->groups,
		e->uses_err ? "0" : "");
	bool first = !e->uses_err;
	for (int b = 0; b < k->nbufs; b++) {
		if (!e->use[b])
			continue;
		ce_emit(manifest, "%s%d", first ? "" : ",", b + 1);
		first = false;
		e->views[b] |= (e->use[b] & 2) ? 2 : 1;
	}
	if (kp->scratch)
		ce_emit(manifest, " scratch=%lld wg=%d slots=%lld", (long long)kp->scratch, kp->wg,
			(long long)(kp->mode == MAP_ITEM ? kn->nitems : kp->groups * kp->wg));
	ce_emit(manifest, "\n");
}

static const char *view_type(Dtype f, bool w)
{
	switch (f) {
	case DT_F32: return "array<f32>";
	case DT_I32: return "array<i32>";
	default: return w ? "array<atomic<u32>>" : "array<u32>";
	}
}

static void prologue(E *e, CEmit *out)
{
	const Kernels *k = e->c.k;
	const Graph *g = k->g;
	ce_line(out, "// Generated by assay's wgsl backend from graph %s. Do not edit.",
		g->name ? g->name : "(unnamed)");
	ce_emit(out, "// Runs on Dawn (npm package webgpu) through compiler/wgsl/node/helper.mjs; the\n"
		"// launch manifest (//! lines) is at the end. Buffers have %d guard bytes on each side:\n"
		"// element i of a 32-bit buffer is word i + %d, of a 16-bit one the half i %% 2 of\n"
		"// word i / 2 + %d. WGSL has no fp contraction to turn off.\n",
		WGSL_GUARD, WGSL_GUARD / 4, WGSL_GUARD / 4);
	ce_about(out, "//");
	ce_emit(out, "\n@group(0) @binding(0) var<storage, read_write> err: array<atomic<i32>, 4>;\n");
	for (int b = 0; b < k->nbufs; b++) {
		if (e->views[b] & 1)
			ce_line(out, "@group(0) @binding(%d) var<storage, read> b%d: %s;", b + 1, b,
				view_type(k->bufs[b].fmt, false));
		if (e->views[b] & 2)
			ce_line(out, "@group(0) @binding(%d) var<storage, read_write> b%dw: %s;", b + 1, b,
				view_type(k->bufs[b].fmt, true));
	}
	bool scratch = false;
	for (int i = 0; i < k->nk; i++)
		scratch |= e->pl->k[i].scratch > 0;
	if (scratch) {
		ce_line(out, "@group(0) @binding(%d) var<storage, read_write> scr: array<u32>;   // scratch columns",
			k->nbufs + 1);
		ce_line(out, "@group(0) @binding(%d) var<uniform> chunk: vec4<u32>;   // first work-group, work-groups, stride",
			k->nbufs + 2);
	}
	for (int i = 0; i < k->nk; i++) {
		const MapKernel *kp = &e->pl->k[i];
		if (kp->mode == MAP_LANES)
			ce_line(out, "var<workgroup> wg%d: array<%s, %d>;", i,
				k->vars[kp->lane_arr].type == KT_INT ? "i32" : "f32", kp->wg);
	}
	ce_emit(out, "\n");
	for (size_t i = 0; i < wgsl_nlib; i++)
		ce_emit(out, "%s", wgsl_lib[i]);
	ce_emit(out, "\n");
}

/* Limits WGSL imposes before any text is written. */
static int limits(const Kernels *k, Diag *d)
{
	const Graph *g = k->g;
	for (int b = 0; b < k->nbufs; b++) {
		if (k->bufs[b].fmt == DT_F64) {
			COV(wgsl_f64_refused);
			diag_set(d, 2, "wgsl backend: unsupported: tensor %s is stored in f64 (WGSL has no f64)",
				 g->tensors[k->bufs[b].tensor].name);
			return -1;
		}
		if (k->bufs[b].n > INT32_MAX - 1024) {
			diag_set(d, 2, "wgsl backend: unsupported: tensor %s has %lld elements (indices are i32)",
				 g->tensors[k->bufs[b].tensor].name, (long long)k->bufs[b].n);
			return -1;
		}
	}
	for (int i = 0; i < k->nk; i++)
		if (k->k[i].nitems > INT32_MAX) {
			diag_set(d, 2, "wgsl backend: unsupported: kernel %d has %lld items (more than i32 counts)",
				 i, (long long)k->k[i].nitems);
			return -1;
		}
	return 0;
}

char *wgsl_emit(const Kernels *k, Diag *d)
{
	if (limits(k, d))
		return NULL;
	E e = {0};
	ce_init(&e.c, k, &lang, d);
	e.pl = map_plan(k, &wgsl_target);
	e.use = calloc((size_t)k->nbufs + 1, 1);
	e.views = calloc((size_t)k->nbufs + 1, 1);
	IR_ASSERT(e.use && e.views);
	CEmit manifest = {0}, out = {.k = k};
	ce_emit(&manifest, "%s", "");
	for (int i = 0; i < k->nk && !e.c.failed; i++)
		kernel(&e, i, &manifest);
	if (!e.c.failed) {
		prologue(&e, &out);
		ce_emit(&out, "%s%s", e.c.buf ? e.c.buf : "", manifest.buf);
	}
	bool failed = e.c.failed;
	free(ce_finish(&e.c));
	free(manifest.buf);
	free(e.use);
	free(e.views);
	if (failed) {
		free(out.buf);
		return NULL;
	}
	return out.buf;
}
