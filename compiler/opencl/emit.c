/* compiler/opencl/emit.c: the OpenCL backend's emitter: kernel IR -> one OpenCL C 1.2
 * program, one __kernel per kernel of the IR, laid out by plan.c's plan (opencl.h).
 *
 * All text goes through one emitter (a growable buffer with an indentation level) and its
 * printf-checked emit(); the output is a deterministic function of the kernel IR, named
 * as in the c backend: temporaries t<expression id>, locals v<variable id>, buffers
 * b<buffer id>, kernels k<index>. Each statement's expressions become one `const`
 * temporary per computing node, fully parenthesised, with explicit conversions; a
 * statement needing temporaries is wrapped in its own block.
 *
 * Numerics: `#pragma OPENCL FP_CONTRACT OFF` forbids contracting a*b+c into an fma, and the
 * build options (run.c) allow no fast or relaxed math, so + - * are IEEE operations rounded
 * once; / and sqrt are correctly rounded when the device supports
 * -cl-fp32-correctly-rounded-divide-sqrt (run.c asks for it then), else within OpenCL's
 * 2.5 and 3 ulp (oracles/allowances.def models that worse case). Built-in functions are
 * OpenCL's, with the full profile's ulp bounds (allowances.def "opencl" rows); rsqrt is
 * OpenCL's rsqrt; sigmoid is 1/(1+exp(-x)). f16 and bf16 are stored as ushort and
 * converted by prelude.c's functions with integer operations (round to nearest even,
 * subnormals, overflow to inf, NaN kept NaN); f16/bf16 arithmetic is f32 arithmetic
 * rounded to the format (kir.h), never native half. f64 needs cl_khr_fp64: the pragma and
 * the double functions appear only in programs that use f64 (ocl_needs_fp64).
 *
 * Work-groups (opencl.h): a kernel with lanes runs one item per work-group; a distributed
 * nest becomes a loop over its collapsed iterations strided by the work-group size; in
 * uniform code, stores are made by lane 0 and writes to shared variables by lane 0 between
 * barriers. Error reports (KX_CHECK, KS_CHECK) go to err: err[0] claims the first error
 * with atomic_cmpxchg (site + 1), the long at err + 2 then holds its value.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "opencl.h"

#define BARRIER "barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);"

/* How an op is written: an operator (infix or prefix by ops.def's flags), an OpenCL
 * built-in function, a helper of this program (name + _f/_d/_i by type), or not at all. */
typedef enum { SP_OPER, SP_BUILTIN, SP_HELPER, SP_SELECT, SP_NONE } SpKind;

static const struct {
	SpKind kind;
	const char *text;   /* the spelling, or for SP_NONE why there is none */
} spell[] = {
	[OP_NEG] = {SP_OPER, "-"},
	[OP_NOT] = {SP_OPER, "!"},
	[OP_ADD] = {SP_OPER, "+"},
	[OP_SUB] = {SP_OPER, "-"},
	[OP_MUL] = {SP_OPER, "*"},
	[OP_DIV] = {SP_OPER, "/"},
	[OP_IDIV] = {SP_HELPER, "fdiv"},      /* floor division */
	[OP_MOD] = {SP_HELPER, "fmod"},       /* non-negative remainder */
	[OP_EQ] = {SP_OPER, "=="},
	[OP_NE] = {SP_OPER, "!="},
	[OP_LT] = {SP_OPER, "<"},
	[OP_LE] = {SP_OPER, "<="},
	[OP_GT] = {SP_OPER, ">"},
	[OP_GE] = {SP_OPER, ">="},
	[OP_AND] = {SP_OPER, "&&"},
	[OP_OR] = {SP_OPER, "||"},
	[OP_SELECT] = {SP_SELECT, "?:"},
	[OP_EXP] = {SP_BUILTIN, "exp"},
	[OP_EXP2] = {SP_BUILTIN, "exp2"},
	[OP_EXPM1] = {SP_BUILTIN, "expm1"},
	[OP_LOG] = {SP_BUILTIN, "log"},
	[OP_LOG2] = {SP_BUILTIN, "log2"},
	[OP_LOG1P] = {SP_BUILTIN, "log1p"},
	[OP_SQRT] = {SP_BUILTIN, "sqrt"},
	[OP_RSQRT] = {SP_BUILTIN, "rsqrt"},
	[OP_ABS] = {SP_BUILTIN, "fabs"},      /* integers: the helper abs_i */
	[OP_SIN] = {SP_BUILTIN, "sin"},
	[OP_COS] = {SP_BUILTIN, "cos"},
	[OP_TANH] = {SP_BUILTIN, "tanh"},
	[OP_SIGMOID] = {SP_HELPER, "sigmoid"},
	[OP_ERF] = {SP_BUILTIN, "erf"},
	[OP_FLOOR] = {SP_BUILTIN, "floor"},
	[OP_CEIL] = {SP_BUILTIN, "ceil"},
	[OP_POW] = {SP_BUILTIN, "pow"},
	[OP_MAX] = {SP_HELPER, "max"},        /* IEEE 754-2019 maximum (fmax drops NaN) */
	[OP_MIN] = {SP_HELPER, "min"},
	[OP_FMA] = {SP_BUILTIN, "fma"},
	[OP_CAST_F64] = {SP_NONE, "a cast is lowered to KX_CVT/KX_ROUND, never an op"},
	[OP_CAST_F32] = {SP_NONE, "a cast is lowered to KX_CVT/KX_ROUND, never an op"},
	[OP_CAST_F16] = {SP_NONE, "a cast is lowered to KX_CVT/KX_ROUND, never an op"},
	[OP_CAST_BF16] = {SP_NONE, "a cast is lowered to KX_CVT/KX_ROUND, never an op"},
};
_Static_assert(ARRAY_LEN(spell) == OP__COUNT, "one OpenCL spelling per op");

typedef enum { CTX_UNIFORM, CTX_LANE } Ctx;

typedef struct {
	char *buf;
	size_t len, cap;
	int ind;
	const Kernels *k;
	uint32_t *mark;    /* per expression: the statement stamp it was emitted in */
	uint32_t stamp;
	bool failed;
	Diag *d;
	OclPlan plan;      /* the kernel being emitted */
	Ctx ctx;           /* with lanes: the context of the statement being emitted */
} E;

static void emitv(E *e, const char *fmt, va_list ap)
{
	va_list ap2;
	va_copy(ap2, ap);
	int n = vsnprintf(NULL, 0, fmt, ap2);
	va_end(ap2);
	if (e->len + (size_t)n + 1 > e->cap) {
		e->cap = (e->len + (size_t)n + 1) * 2;
		e->buf = realloc(e->buf, e->cap);
		IR_ASSERT(e->buf);
	}
	vsnprintf(e->buf + e->len, (size_t)n + 1, fmt, ap);
	e->len += (size_t)n;
}

static void emit(E *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void emit(E *e, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	emitv(e, fmt, ap);
	va_end(ap);
}

static void indent(E *e)
{
	for (int i = 0; i < e->ind; i++)
		emit(e, "\t");
}

/* One indented line. */
static void line(E *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void line(E *e, const char *fmt, ...)
{
	indent(e);
	va_list ap;
	va_start(ap, fmt);
	emitv(e, fmt, ap);
	va_end(ap);
	emit(e, "\n");
}

static const char *cltype(KType t)
{
	static const char *names[] = {[KT_BOOL] = "int", [KT_INT] = "long", [KT_F32] = "float",
				      [KT_F64] = "double"};
	_Static_assert(ARRAY_LEN(names) == KT__COUNT, "one OpenCL type per KType");
	return names[t];
}

static const char *store_type(Dtype f)
{
	switch (f) {
	case DT_F64: return "double";
	case DT_F32: return "float";
	case DT_I32: return "int";
	default: return "ushort";
	}
}

/* The uniform context of a kernel with lanes (where lane 0 acts for the work-group). */
static bool uniform(const E *e)
{
	return e->plan.lanes && e->ctx == CTX_UNIFORM;
}

/* ------------------------------------------------------------ expressions */

static bool leaf(const KExpr *x)
{
	return x->kind == KX_FCONST || x->kind == KX_ICONST || x->kind == KX_VAR;
}

/* Writes the text that denotes expression id (a constant, a variable or a temporary). */
static void ref(E *e, int32_t id)
{
	const KExpr *x = &e->k->x[id];
	if (x->kind == KX_VAR) {
		emit(e, "v%d", x->v);
	} else if (x->kind == KX_ICONST) {
		if (x->i == INT64_MIN)
			emit(e, "(-9223372036854775807L - 1L)");
		else
			emit(e, "%s%lldL%s", x->i < 0 ? "(" : "", (long long)x->i, x->i < 0 ? ")" : "");
	} else if (x->kind == KX_FCONST) {
		bool f32 = x->type == KT_F32;
		if (isnan(x->f))
			emit(e, "%s", f32 ? "NAN" : "((double)NAN)");
		else if (isinf(x->f))
			emit(e, "%s%s%s", x->f < 0 ? "(-" : "", f32 ? "INFINITY" : "((double)INFINITY)",
			     x->f < 0 ? ")" : "");
		else if (signbit(x->f))
			emit(e, "(%a%s)", x->f, f32 ? "f" : "");
		else
			emit(e, "%a%s", x->f, f32 ? "f" : "");
	} else {
		emit(e, "t%d", id);
	}
}

static void call(E *e, const char *fn, const KExpr *x, int n)
{
	emit(e, "%s(", fn);
	for (int i = 0; i < n; i++) {
		if (i)
			emit(e, ", ");
		ref(e, x->a[i]);
	}
	emit(e, ")");
}

static void op_text(E *e, const KExpr *x)
{
	Op op = (Op)x->op;
	const OpInfo *oi = op_info(op);
	KType t = (KType)x->type;
	const char *sfx = t == KT_F32 ? "_f" : t == KT_F64 ? "_d" : "_i";
	char fn[32];
	switch (spell[op].kind) {
	case SP_SELECT:
		emit(e, "(");
		ref(e, x->a[0]);
		emit(e, " ? ");
		ref(e, x->a[1]);
		emit(e, " : ");
		ref(e, x->a[2]);
		emit(e, ")");
		return;
	case SP_OPER:
		emit(e, "(");
		if (oi->flags & OPF_PREFIX) {
			emit(e, "%s", spell[op].text);
			ref(e, x->a[0]);
		} else {
			ref(e, x->a[0]);
			emit(e, " %s ", spell[op].text);
			ref(e, x->a[1]);
		}
		emit(e, ")");
		return;
	case SP_BUILTIN:
		call(e, op == OP_ABS && t == KT_INT ? "abs_i" : spell[op].text, x, oi->arity);
		return;
	case SP_HELPER:
		snprintf(fn, sizeof fn, "%s%s", spell[op].text, sfx);
		call(e, fn, x, oi->arity);
		return;
	case SP_NONE:
		break;
	}
	diag_set(e->d, 3, "internal: opencl backend: no spelling for %s (%s)", oi->name, spell[op].text);
	e->failed = true;
}

static void load_text(E *e, const KExpr *x)
{
	Dtype f = e->k->bufs[x->v].fmt;
	const char *pre = f == DT_F16 ? "h2f(" : f == DT_BF16 ? "b2f(" : "(";
	emit(e, "((%s)%sb%d[", cltype((KType)x->type), pre, x->v);
	ref(e, x->a[0]);
	emit(e, "]))");
}

static void cvt_text(E *e, const KExpr *x)
{
	KType to = (KType)x->type, from = (KType)e->k->x[x->a[0]].type;
	if ((to == KT_F32 && (from == KT_INT || from == KT_F64)) || (to == KT_F64 && from == KT_INT))
		emit(e, "convert_%s_rte(", cltype(to));
	else if (to == KT_INT && (from == KT_F32 || from == KT_F64))
		emit(e, "convert_long_rtz(");
	else if (to == KT_BOOL)
		emit(e, "(0 != ");
	else
		emit(e, "((%s)", cltype(to));
	ref(e, x->a[0]);
	emit(e, ")");
}

static void round_text(E *e, const KExpr *x)
{
	Dtype f = (Dtype)x->fmt;
	bool dbl = x->type == KT_F64;
	if (f == DT_F32) {
		IR_ASSERT(dbl);
		emit(e, "((double)convert_float_rte(");
		ref(e, x->a[0]);
		emit(e, "))");
		return;
	}
	IR_ASSERT(f == DT_F16 || f == DT_BF16);
	const char *to = f == DT_F16 ? "h2f" : "b2f";
	const char *from = f == DT_F16 ? (dbl ? "d2h" : "f2h") : (dbl ? "d2b" : "f2b");
	emit(e, "%s%s(%s(", dbl ? "(double)" : "", to, from);
	ref(e, x->a[0]);
	emit(e, "))");
}

/* Emits the temporaries that expression id needs, operands first. */
static void temps(E *e, int32_t id)
{
	if (id < 0)
		return;
	const KExpr *x = &e->k->x[id];
	if (leaf(x) || e->mark[id] == e->stamp)
		return;
	e->mark[id] = e->stamp;
	for (int i = 0; i < 4; i++)
		temps(e, x->a[i]);
	indent(e);
	emit(e, "const %s t%d = ", cltype((KType)x->type), id);
	switch (x->kind) {
	case KX_ELEM:
		emit(e, "v%d[", x->v);
		ref(e, x->a[0]);
		emit(e, "]");
		break;
	case KX_LOAD: load_text(e, x); break;
	case KX_OP: op_text(e, x); break;
	case KX_CVT: cvt_text(e, x); break;
	case KX_ROUND: round_text(e, x); break;
	case KX_CHECK:
		emit(e, "chk(err, ");
		for (int i = 0; i < 3; i++) {
			ref(e, x->a[i]);
			emit(e, ", ");
		}
		if (x->a[3] >= 0)
			ref(e, x->a[3]);
		else
			emit(e, "1");
		emit(e, ", %d)", x->v);
		break;
	default: IR_ASSERT(!"temps: a leaf");
	}
	emit(e, ";\n");
}

/* Opens a statement: a block when any of its expressions needs temporaries. */
static bool open_stmt(E *e, const int32_t *roots, int n)
{
	e->stamp++;
	bool need = false;
	for (int i = 0; i < n; i++)
		need |= roots[i] >= 0 && !leaf(&e->k->x[roots[i]]);
	if (need) {
		line(e, "{");
		e->ind++;
	}
	for (int i = 0; i < n; i++)
		temps(e, roots[i]);
	return need;
}

static void close_stmt(E *e, bool open)
{
	if (open) {
		e->ind--;
		line(e, "}");
	}
}

/* ------------------------------------------------------------ statements */

static void stmts(E *e, int32_t s);

/* Writes the assignment `lhs = <text of expression val>;` of local v (element idx, or -1
 * for a scalar); in uniform code a shared variable is written by lane 0 between barriers. */
static void assign(E *e, int32_t v, int32_t idx, int32_t val)
{
	bool guard = uniform(e) && e->plan.shared[v];
	if (guard) {
		line(e, BARRIER);
		line(e, "if (lid == 0)");
		e->ind++;
	}
	indent(e);
	emit(e, "v%d", v);
	if (idx >= 0) {
		emit(e, "[");
		ref(e, idx);
		emit(e, "]");
	}
	emit(e, " = ");
	ref(e, val);
	emit(e, ";\n");
	if (guard) {
		e->ind--;
		line(e, BARRIER);
	}
}

static void store_text(E *e, const KStmt *s)
{
	Dtype f = e->k->bufs[s->v].fmt;
	KType t = (KType)e->k->x[s->b].type;
	if (uniform(e)) {
		line(e, "if (lid == 0)");
		e->ind++;
	}
	indent(e);
	emit(e, "b%d[", s->v);
	ref(e, s->a);
	emit(e, "] = ");
	switch (f) {
	case DT_F16: emit(e, "%s(", t == KT_F64 ? "d2h" : "f2h"); break;
	case DT_BF16: emit(e, "%s(", t == KT_F64 ? "d2b" : "f2b"); break;
	case DT_F32: emit(e, t == KT_F32 ? "(" : "convert_float_rte("); break;
	default: emit(e, "((%s)", store_type(f)); break;
	}
	ref(e, s->b);
	emit(e, ");\n");
	if (uniform(e))
		e->ind--;
}

/* `for (long v = a<step>; v < b; v<next>) {` for loop statement t. */
static void for_header(E *e, const KStmt *t, const char *step, const char *next)
{
	indent(e);
	emit(e, "for (long v%d = ", t->v);
	ref(e, t->a);
	emit(e, "%s; v%d < ", step, t->v);
	ref(e, t->b);
	emit(e, "; v%d%s) {\n", t->v, next);
}

static void loop_stmt(E *e, const KStmt *s)
{
	int32_t roots[2] = {s->a, s->b};
	bool open = open_stmt(e, roots, 2);
	for_header(e, s, "", "++");
	e->ind++;
	stmts(e, s->body);
	e->ind--;
	line(e, "}");
	close_stmt(e, open);
}

/* The header of a collapsed nest of loops L[0..depth): for f = lid, lid + nl, ... below
 * the product of the trip counts, each loop variable recovered from f (last fastest). */
static void collapsed_header(E *e, int32_t s, const int32_t *L, int depth)
{
	const Kernels *k = e->k;
	for (int i = 0; i < depth; i++) {
		const KStmt *t = &k->s[L[i]];
		indent(e);
		emit(e, "const long n%d_%d = ", s, i);
		ref(e, t->b);
		emit(e, " > ");
		ref(e, t->a);
		emit(e, " ? ");
		ref(e, t->b);
		emit(e, " - ");
		ref(e, t->a);
		emit(e, " : 0L;\n");
	}
	indent(e);
	emit(e, "const long n%d = n%d_0", s, s);
	for (int i = 1; i < depth; i++)
		emit(e, " * n%d_%d", s, i);
	emit(e, ";\n");
	line(e, "for (long f%d = lid; f%d < n%d; f%d += nl) {", s, s, s, s);
	e->ind++;
	line(e, "long g%d = f%d;", s, s);
	for (int i = depth - 1; i >= 0; i--) {
		const KStmt *t = &k->s[L[i]];
		indent(e);
		emit(e, "const long v%d = ", t->v);
		ref(e, t->a);
		if (i)
			emit(e, " + g%d %% n%d_%d;\n", s, s, i);
		else
			emit(e, " + g%d;\n", s);
		if (i)
			line(e, "g%d /= n%d_%d;", s, s, i);
	}
	e->ind--;
}

/* A distributed nest of depth loops from s: iteration f of the collapsed nest runs on lane
 * f mod nl. swap (>= 0): the statement of a loop around s to run inside it (SM_SWAP). All
 * bounds are evaluated once, before the nest (plan.c proved them invariant in it). */
static void nest_stmt(E *e, int32_t s, int32_t swap)
{
	const Kernels *k = e->k;
	int depth = e->plan.sdepth[s];
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
	line(e, "{");
	e->ind++;
	e->stamp++;
	for (int i = 0; i < nr; i++)
		temps(e, roots[i]);
	if (depth == 1)
		for_header(e, &k->s[s], " + lid", " += nl");
	else
		collapsed_header(e, s, L, depth);
	e->ind++;
	Ctx saved = e->ctx;
	e->ctx = CTX_LANE;
	if (swap > 0) {
		for_header(e, &k->s[swap], "", "++");
		e->ind++;
		stmts(e, k->s[L[depth - 1]].body);
		e->ind--;
		line(e, "}");
	} else {
		stmts(e, k->s[L[depth - 1]].body);
	}
	e->ctx = saved;
	e->ind--;
	line(e, "}");
	e->ind--;
	line(e, "}");
	if (e->plan.sbarrier[s])
		line(e, BARRIER);
}

/* for (;;) { condition's temporaries; if (!cond) break; body } */
static void while_stmt(E *e, const KStmt *s)
{
	line(e, "for (;;) {");
	e->ind++;
	bool open = open_stmt(e, &s->a, 1);
	indent(e);
	emit(e, "if (!");
	ref(e, s->a);
	emit(e, ")\n");
	e->ind++;
	line(e, "break;");
	e->ind--;
	stmts(e, s->body);
	close_stmt(e, open);
	e->ind--;
	line(e, "}");
}

static void if_stmt(E *e, const KStmt *s)
{
	bool open = open_stmt(e, &s->a, 1);
	indent(e);
	emit(e, "if (");
	ref(e, s->a);
	emit(e, ") {\n");
	e->ind++;
	stmts(e, s->body);
	e->ind--;
	if (s->body2 > 0) {
		line(e, "} else {");
		e->ind++;
		stmts(e, s->body2);
		e->ind--;
	}
	line(e, "}");
	close_stmt(e, open);
}

static void decl_stmt(E *e, const KStmt *s)
{
	const KVar *v = &e->k->vars[s->v];
	if (e->plan.vclass[s->v] != VC_PRIV)
		return;   /* declared at the kernel's entry */
	if (v->n)
		line(e, "%s v%d[%lld];", cltype(v->type), s->v, (long long)v->n);
	else
		line(e, "%s v%d;", cltype(v->type), s->v);
}

static int bits(int64_t n)
{
	int b = 0;
	for (; n > 0; n >>= 1)
		b++;
	return b;
}

/* The pairwise tree of kir.h, iteratively: a stack of (first, count, stage) frames walks
 * the tree depth first, a stack of values holds the finished left halves. */
static void tree_stmt(E *e, const KStmt *s)
{
	const KVar *c = &e->k->vars[s->c];
	const char *T = cltype(c->type), *op = s->op == OP_MUL ? "*" : "+";
	int depth = bits(c->n) + 3;
	line(e, "{");
	e->ind++;
	e->stamp++;
	temps(e, s->a);
	temps(e, s->b);
	line(e, "long tr_lo[%d], tr_n[%d];", depth, depth);
	line(e, "int tr_st[%d], tr_sp = 1, tr_vp = 0;", depth);
	line(e, "%s tr_v[%d];", T, depth);
	indent(e);
	emit(e, "tr_lo[0] = ");
	ref(e, s->a);
	emit(e, ";\n");
	indent(e);
	emit(e, "tr_n[0] = ");
	ref(e, s->b);
	emit(e, ";\n");
	line(e, "tr_st[0] = 0;");
	line(e, "while (tr_sp > 0) {");
	e->ind++;
	line(e, "const int f = tr_sp - 1;");
	line(e, "if (tr_n[f] == 1) {");
	line(e, "\ttr_v[tr_vp++] = v%d[tr_lo[f]];", s->c);
	line(e, "\ttr_sp--;");
	line(e, "} else if (tr_st[f] < 2) {");
	line(e, "\tconst long h = tr_n[f] / 2;");
	line(e, "\ttr_lo[tr_sp] = tr_st[f] == 0 ? tr_lo[f] : tr_lo[f] + h;");
	line(e, "\ttr_n[tr_sp] = tr_st[f] == 0 ? h : tr_n[f] - h;");
	line(e, "\ttr_st[tr_sp++] = 0;");
	line(e, "\ttr_st[f]++;");
	line(e, "} else {");
	line(e, "\ttr_vp -= 2;");
	switch (s->fmt) {
	case DT_F16: line(e, "\ttr_v[tr_vp] = h2f(f2h(tr_v[tr_vp] %s tr_v[tr_vp + 1]));", op); break;
	case DT_BF16: line(e, "\ttr_v[tr_vp] = b2f(f2b(tr_v[tr_vp] %s tr_v[tr_vp + 1]));", op); break;
	default: line(e, "\ttr_v[tr_vp] = tr_v[tr_vp] %s tr_v[tr_vp + 1];", op); break;
	}
	line(e, "\ttr_vp++;");
	line(e, "\ttr_sp--;");
	line(e, "}");
	e->ind--;
	line(e, "}");
	if (uniform(e) && e->plan.shared[s->v]) {
		line(e, BARRIER);
		line(e, "if (lid == 0)");
		line(e, "\tv%d = tr_v[0];", s->v);
		line(e, BARRIER);
	} else {
		line(e, "v%d = tr_v[0];", s->v);
	}
	e->ind--;
	line(e, "}");
}

/* The statements of one line: set, store, check. */
static void simple_stmt(E *e, const KStmt *s)
{
	int32_t roots[2] = {s->a, s->b};
	bool open = open_stmt(e, roots, 2);
	switch (s->kind) {
	case KS_SET: assign(e, s->v, s->a, s->b); break;
	case KS_STORE: store_text(e, s); break;
	case KS_CHECK:
		indent(e);
		emit(e, "if (!");
		ref(e, s->a);
		emit(e, ") rep(err, %d, ", s->v);
		ref(e, s->b);
		emit(e, ");\n");
		break;
	default: IR_ASSERT(!"simple_stmt: not a simple statement");
	}
	close_stmt(e, open);
}

static bool shared_set(const E *e, int32_t s)
{
	const KStmt *t = &e->k->s[s];
	return s > 0 && uniform(e) && t->kind == KS_SET && e->plan.shared[t->v];
}

/* Consecutive writes to shared variables in uniform code: lane 0 runs them all, in order,
 * between two barriers. Returns the last statement of the run. */
static int32_t shared_run(E *e, int32_t s)
{
	line(e, BARRIER);
	line(e, "if (lid == 0) {");
	e->ind++;
	e->ctx = CTX_LANE;
	int32_t last = s;
	for (; s > 0 && e->k->s[s].kind == KS_SET && e->plan.shared[e->k->s[s].v];
	     s = e->k->s[s].next) {
		simple_stmt(e, &e->k->s[s]);
		last = s;
	}
	e->ctx = CTX_UNIFORM;
	e->ind--;
	line(e, "}");
	line(e, BARRIER);
	return last;
}

static void stmts(E *e, int32_t s)
{
	for (; s > 0; s = e->k->s[s].next) {
		const KStmt *t = &e->k->s[s];
		if (shared_set(e, s)) {
			s = shared_run(e, s);
			continue;
		}
		if (uniform(e) && e->plan.smark[s] == SM_NEST) {
			nest_stmt(e, s, -1);
			continue;
		}
		if (uniform(e) && e->plan.smark[s] == SM_SWAP) {
			nest_stmt(e, t->body, s);
			continue;
		}
		switch (t->kind) {
		case KS_LOOP: loop_stmt(e, t); break;
		case KS_WHILE: while_stmt(e, t); break;
		case KS_IF: if_stmt(e, t); break;
		case KS_DECL: decl_stmt(e, t); break;
		case KS_TREE: tree_stmt(e, t); break;
		default: simple_stmt(e, t); break;
		}
	}
}

/* ------------------------------------------------------------ kernels */

/* Marks the buffers statements s.. load (1) and store (2). */
static void scan_expr(const Kernels *k, int32_t id, uint8_t *use)
{
	if (id < 0)
		return;
	const KExpr *x = &k->x[id];
	if (x->kind == KX_LOAD)
		use[x->v] |= 1;
	for (int i = 0; i < 4; i++)
		scan_expr(k, x->a[i], use);
}

static void scan(const Kernels *k, int32_t s, uint8_t *use)
{
	for (; s > 0; s = k->s[s].next) {
		const KStmt *t = &k->s[s];
		scan_expr(k, t->a, use);
		scan_expr(k, t->b, use);
		if (t->kind == KS_STORE)
			use[t->v] |= 2;
		if (t->kind == KS_LOOP || t->kind == KS_WHILE || t->kind == KS_IF)
			scan(k, t->body, use);
		if (t->kind == KS_IF)
			scan(k, t->body2, use);
	}
}

static void signature(E *e, int i)
{
	const Kernels *k = e->k;
	uint8_t *use = calloc((size_t)k->nbufs + 1, 1);
	IR_ASSERT(use);
	scan(k, k->k[i].body, use);
	line(e, "__kernel void k%d(", i);
	e->ind++;
	for (int b = 0; b < k->nbufs; b++)
		line(e, "__global %s%s *restrict b%d,", use[b] == 1 ? "const " : "",
		     store_type(k->bufs[b].fmt), b);
	line(e, "__global int *restrict err, __global uchar *restrict scr, const long t0, const long t1)");
	e->ind--;
	free(use);
}

/* Locals in __local memory and in the scratch buffer, declared at the kernel's entry. */
static void entry_decls(E *e)
{
	const Kernels *k = e->k;
	const OclPlan *p = &e->plan;
	for (int32_t v = 0; v < k->nvars; v++)
		if (p->vclass[v] == VC_LOCAL && k->vars[v].n)
			line(e, "__local %s v%d[%lld];", cltype(k->vars[v].type), v, (long long)k->vars[v].n);
		else if (p->vclass[v] == VC_LOCAL)
			line(e, "__local %s v%d;", cltype(k->vars[v].type), v);
	if (p->scr_shared + p->scr_priv == 0)
		return;
	if (p->lanes) {
		line(e, "__global uchar *const sg = scr + (it - t0) * (%lldL + nl * %lldL);",
		     (long long)p->scr_shared, (long long)p->scr_priv);
		line(e, "__global uchar *const sp = sg + %lldL + lid * %lldL;", (long long)p->scr_shared,
		     (long long)p->scr_priv);
	} else {
		line(e, "__global uchar *const sp = scr + (it - t0) * %lldL;", (long long)p->scr_priv);
	}
	for (int32_t v = 0; v < k->nvars; v++) {
		uint8_t c = p->vclass[v];
		if (c != VC_SCR_PRIV && c != VC_SCR_SHARED)
			continue;
		const char *T = cltype(k->vars[v].type);
		line(e, "__global %s *const v%d = (__global %s *)(%s + %lldL);", T, v, T,
		     c == VC_SCR_SHARED ? "sg" : "sp", (long long)p->voff[v]);
	}
}

static void kernel(E *e, int i)
{
	const Kernels *k = e->k;
	const Kernel *kn = &k->k[i];
	const Graph *g = k->g;
	ocl_plan(k, i, &e->plan);
	const OclPlan *p = &e->plan;
	if (p->lanes)
		line(e, "/* %s%s: a work-group per item, up to %lld lanes */",
		     g->tensors[g->defs[kn->def].out[0]].name,
		     kn->hoisted ? " (reduction outside the tile's point loops)" : "", (long long)p->want);
	else
		line(e, "/* %s%s: a work-item per item */", g->tensors[g->defs[kn->def].out[0]].name,
		     kn->hoisted ? " (reduction outside the tile's point loops)" : "");
	signature(e, i);
	line(e, "{");
	e->ind++;
	if (p->lanes) {
		line(e, "const long it = t0 + (long)get_group_id(0);");
		line(e, "const long lid = (long)get_local_id(0), nl = (long)get_local_size(0);");
	} else {
		line(e, "const long it = t0 + (long)get_global_id(0);");
		line(e, "if (it >= t1)");
		line(e, "\treturn;");
	}
	entry_decls(e);
	line(e, "long q = it;");
	for (int d = kn->npar - 1; d >= 0; d--) {
		const KPar *P = &kn->par[d];
		int64_t nt = (P->extent + P->tile - 1) / P->tile;
		if (nt == 1) {
			line(e, "const long v%d = 0;", P->origin);
			continue;
		}
		line(e, "const long v%d = (q %% %lldL) * %lldL;", P->origin, (long long)nt,
		     (long long)P->tile);
		line(e, "q /= %lldL;", (long long)nt);
	}
	e->ctx = CTX_UNIFORM;
	stmts(e, kn->body);
	e->ind--;
	line(e, "}");
	line(e, "%s", "");
	ocl_plan_free(&e->plan);
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

static void prologue(E *e)
{
	const Kernels *k = e->k;
	const Graph *g = k->g;
	line(e, "/* Generated by assay's opencl backend from graph %s. Do not edit.",
	     g->name ? g->name : "(unnamed)");
	line(e, " * OpenCL C 1.2; built without fast or relaxed math (compiler/opencl/run.c).");
	char *sch = sched_text(g, &k->sched);
	if (sch[0]) {
		line(e, " * Schedule:");
		for (char *p = sch, *nl; *p; p = nl + 1) {
			nl = strchr(p, '\n');
			line(e, " *   %.*s", (int)(nl - p), p);
		}
	}
	free(sch);
	if (k->faults)
		line(e, " * SEEDED FAULTS 0x%x: this program is wrong on purpose.", k->faults);
	line(e, " * Buffers:");
	for (int b = 0; b < k->nbufs; b++)
		line(e, " *   b%d  %s : %s[%lld]%s", b, g->tensors[k->bufs[b].tensor].name,
		     dt_name(k->bufs[b].fmt), (long long)k->bufs[b].n, k->bufs[b].input ? " (input)" : "");
	line(e, " */");
	line(e, "#pragma OPENCL FP_CONTRACT OFF");
	bool f64 = ocl_needs_fp64(k);
	if (f64)
		line(e, "#pragma OPENCL EXTENSION cl_khr_fp64 : enable");
	line(e, "%s", "");
	emit(e, "%s", ocl_prelude);
	if (f64)
		emit(e, "%s", ocl_prelude_f64);
}

char *ocl_emit(const Kernels *k, Diag *d)
{
	E e = {0};
	e.k = k;
	e.d = d;
	e.mark = calloc((size_t)k->nx + 1, sizeof *e.mark);
	IR_ASSERT(e.mark);
	prologue(&e);
	for (int i = 0; i < k->nk; i++)
		kernel(&e, i);
	free(e.mark);
	if (e.failed) {
		free(e.buf);
		return NULL;
	}
	return e.buf;
}
