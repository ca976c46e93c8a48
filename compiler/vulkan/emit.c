/* compiler/vulkan/emit.c: the Vulkan backend's emitter: kernel IR -> GLSL 450 compute
 * shaders, one per kernel (vulkan.h says how the runtime cuts them apart).
 *
 * All text goes through one emitter (a growable buffer with an indentation level) and its
 * printf-checked emit(); the output is a deterministic function of the kernel IR and of the
 * plan (plan.c), itself deterministic: temporaries are named after expression ids (t12),
 * variables after variable ids (v3), buffers after buffer ids (b0). Each statement's
 * expressions become one temporary per computing node, fully parenthesised, with explicit
 * conversions; a statement that needs temporaries gets its own block.
 *
 * Numerics: KT_F32 is GLSL float, KT_F64 double (shaderFloat64), KT_INT int64_t
 * (GL_ARB_gpu_shader_int64: the kernel IR's integers are exact int64, and an i32 result is
 * checked to fit after the fact). Every float temporary and local is `precise`, which makes
 * glslang mark its operations NoContraction: a*b+c stays a rounded product and a rounded
 * sum, never an fma (the only fma is the graph's own fma(), GLSL's fma). f16 and bf16 live
 * as 16-bit patterns (uint16_t under GL_EXT_shader_16bit_storage when the runtime says the
 * device has it, else two per uint, stored with atomicAnd/atomicOr so neighbours never
 * race) and are converted by lib.c's integer code; no native half arithmetic is used (an
 * f16 op format computes in f32 and rounds each result, as the kernel IR states). The op
 * table below is the one place GLSL spellings live; an op GLSL cannot express in a type
 * is refused with the reason (code 2, "unsupported"), never approximated silently.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "vulkan.h"

enum { F_NONE, F_INFIX, F_PREFIX, F_CALL, F_NE, F_SELECT };

typedef struct {
	uint8_t form;
	const char *f, *d, *i;   /* float, double, int64 spellings (NULL: not in that type) */
	unsigned hf, hd, hi;     /* the helpers (VH_*) each needs */
} Spell;

static const Spell spell[] = {
	[OP_NEG] = {F_PREFIX, "-", "-", "-", 0, 0, 0},
	[OP_NOT] = {F_PREFIX, "!", NULL, NULL, 0, 0, 0},
	[OP_ADD] = {F_INFIX, "+", "+", "+", 0, 0, 0},
	[OP_SUB] = {F_INFIX, "-", "-", "-", 0, 0, 0},
	[OP_MUL] = {F_INFIX, "*", "*", "*", 0, 0, 0},
	[OP_DIV] = {F_INFIX, "/", "/", NULL, 0, 0, 0},
	[OP_IDIV] = {F_CALL, NULL, NULL, "fdiv_i", 0, 0, VH_IDIV},
	[OP_MOD] = {F_CALL, NULL, NULL, "fmod_i", 0, 0, VH_IMOD},
	[OP_EQ] = {F_INFIX, "==", "==", "==", 0, 0, 0},
	[OP_NE] = {F_NE, "==", "==", "==", 0, 0, 0},
	[OP_LT] = {F_INFIX, "<", "<", "<", 0, 0, 0},
	[OP_LE] = {F_INFIX, "<=", "<=", "<=", 0, 0, 0},
	[OP_GT] = {F_INFIX, ">", ">", ">", 0, 0, 0},
	[OP_GE] = {F_INFIX, ">=", ">=", ">=", 0, 0, 0},
	[OP_AND] = {F_INFIX, "&&", NULL, NULL, 0, 0, 0},
	[OP_OR] = {F_INFIX, "||", NULL, NULL, 0, 0, 0},
	[OP_SELECT] = {F_SELECT, "?:", "?:", "?:", 0, 0, 0},
	[OP_EXP] = {F_CALL, "exp", "exp_d", NULL, 0, VH_EXP_D, 0},
	[OP_EXP2] = {F_CALL, "exp2", "exp2_d", NULL, 0, VH_EXP2_D, 0},
	[OP_EXPM1] = {F_CALL, "expm1_f", "expm1_d", NULL, VH_EXPM1, VH_EXPM1_D, 0},
	[OP_LOG] = {F_CALL, "log", "log_d", NULL, 0, VH_LOG_D, 0},
	[OP_LOG2] = {F_CALL, "log2", "log2_d", NULL, 0, VH_LOG2_D, 0},
	[OP_LOG1P] = {F_CALL, "log1p_f", "log1p_d", NULL, VH_LOG1P, VH_LOG1P_D, 0},
	[OP_SQRT] = {F_CALL, "sqrt", "sqrt", NULL, 0, 0, 0},
	[OP_RSQRT] = {F_CALL, "inversesqrt", "inversesqrt", NULL, 0, 0, 0},
	[OP_ABS] = {F_CALL, "abs", "abs", "abs_i", 0, 0, VH_IMINMAX},
	[OP_SIN] = {F_CALL, "sin", "sin_d", NULL, 0, VH_SINCOS_D, 0},
	[OP_COS] = {F_CALL, "cos", "cos_d", NULL, 0, VH_SINCOS_D, 0},
	[OP_TANH] = {F_CALL, "tanh_f", "tanh_d", NULL, VH_TANH, VH_TANH_D, 0},
	[OP_SIGMOID] = {F_CALL, "sigmoid_f", "sigmoid_d", NULL, VH_SIGMOID, VH_SIGMOID_D, 0},
	[OP_ERF] = {F_CALL, "erf_f", "erf_d", NULL, VH_ERF, VH_ERF_D, 0},
	[OP_FLOOR] = {F_CALL, "floor", "floor", NULL, 0, 0, 0},
	[OP_CEIL] = {F_CALL, "ceil", "ceil", NULL, 0, 0, 0},
	[OP_POW] = {F_CALL, "pow_f", "pow_d", NULL, VH_POW, VH_POW_D, 0},
	[OP_MAX] = {F_CALL, "max_f", "max_d", "max_i", VH_FMINMAX, VH_DMINMAX, VH_IMINMAX},
	[OP_MIN] = {F_CALL, "min_f", "min_d", "min_i", VH_FMINMAX, VH_DMINMAX, VH_IMINMAX},
	[OP_FMA] = {F_CALL, "fma", "fma", NULL, 0, 0, 0},
	[OP_CAST_F64] = {F_NONE, NULL, NULL, NULL, 0, 0, 0},
	[OP_CAST_F32] = {F_NONE, NULL, NULL, NULL, 0, 0, 0},
	[OP_CAST_F16] = {F_NONE, NULL, NULL, NULL, 0, 0, 0},
	[OP_CAST_BF16] = {F_NONE, NULL, NULL, NULL, 0, 0, 0},
};
_Static_assert(ARRAY_LEN(spell) == OP__COUNT, "one GLSL spelling row per op");

typedef struct {
	char *buf;
	size_t len, cap;
	int ind;
	const Kernels *k;
	const VkPlan *pl;
	int kernel;
	uint32_t *mark;     /* per expression: the statement stamp it was emitted in */
	uint32_t stamp;
	unsigned need;      /* VH_* helpers the kernel uses */
	bool f64, check, half;
	int32_t chain;      /* the distributed nest being emitted (PART indices), 0 */
	int64_t *soff;      /* per variable: byte offset in the invocation's scratch, -1: private */
	int64_t scratch;    /* scratch bytes per invocation */
	unsigned sused;     /* scratch views used: 1 float, 2 double, 4 int64 */
	bool failed;
	Diag *d;
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

static void unsupported(E *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void unsupported(E *e, const char *fmt, ...)
{
	if (e->failed)
		return;
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	diag_set(e->d, 2, "vulkan backend: unsupported: %s", msg);
	e->failed = true;
}

static const char *gtype(E *e, KType t)
{
	static const char *names[] = {[KT_BOOL] = "bool", [KT_INT] = "int64_t", [KT_F32] = "float",
				      [KT_F64] = "double"};
	_Static_assert(ARRAY_LEN(names) == KT__COUNT, "one GLSL type per KType");
	if (t == KT_F64)
		e->f64 = true;
	return names[t];
}

/* "precise " for the types whose operations must not be contracted. */
static const char *prec(KType t)
{
	return t == KT_F32 || t == KT_F64 ? "precise " : "";
}

/* ------------------------------------------------------------ expressions */

static bool leaf(const KExpr *x)
{
	return x->kind == KX_FCONST || x->kind == KX_ICONST || x->kind == KX_VAR;
}

/* A float or double constant: short exact decimals as such, anything else as its bits. */
static void fconst(E *e, double f, bool dbl)
{
	char txt[64];
	snprintf(txt, sizeof txt, dbl ? "%.17g" : "%.9g", f);
	bool exact = isfinite(f) && f != 0 && fabs(f) >= (dbl ? 0x1p-1022 : 0x1p-126) &&
		     strtod(txt, NULL) == f && strlen(txt) <= 12;
	if (f == 0 && !signbit(f)) {
		emit(e, dbl ? "0.0lf" : "0.0");
	} else if (exact) {
		bool dot = strpbrk(txt, ".en") != NULL;
		emit(e, "%s%s%s%s%s", f < 0 ? "(" : "", txt, dot ? "" : ".0", dbl ? "lf" : "",
		     f < 0 ? ")" : "");
	} else if (dbl) {
		uint64_t b;
		memcpy(&b, &f, sizeof b);
		e->f64 = true;
		emit(e, "uint64BitsToDouble(0x%016llxul)", (unsigned long long)b);
	} else {
		float g = (float)f;
		uint32_t b;
		memcpy(&b, &g, sizeof b);
		emit(e, "uintBitsToFloat(0x%08xu)", b);
	}
}

/* Writes the GLSL text that denotes expression id (a constant, a variable or a temporary). */
static void ref(E *e, int32_t id)
{
	const KExpr *x = &e->k->x[id];
	if (x->kind == KX_VAR) {
		emit(e, "v%d", x->v);
	} else if (x->kind == KX_ICONST) {
		if (x->i == INT64_MIN)
			emit(e, "(-9223372036854775807l - 1l)");
		else
			emit(e, "%s%lldl%s", x->i < 0 ? "(" : "", (long long)x->i, x->i < 0 ? ")" : "");
	} else if (x->kind == KX_FCONST) {
		fconst(e, x->f, x->type == KT_F64);
	} else {
		emit(e, "t%d", id);
	}
}

static void args(E *e, const KExpr *x, int n)
{
	emit(e, "(");
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
	const Spell *sp = &spell[op];
	/* comparisons are typed by their operands, the rest by their result */
	KType t = (oi->flags & OPF_CMP) ? (KType)e->k->x[x->a[0]].type : (KType)x->type;
	const char *s = t == KT_F64 ? sp->d : t == KT_INT ? sp->i : sp->f;
	if (t == KT_BOOL && (op == OP_EQ || op == OP_NE))
		s = sp->i;
	if (!s) {
		if (t == KT_F64)
			unsupported(e, "%s in f64: GLSL has no 64-bit %s (GLSL.std.450 defines it for "
				    "16- and 32-bit floats only)", oi->name, oi->spelling);
		else
			unsupported(e, "%s on %s operands has no GLSL spelling", oi->name, kt_name(t));
		return;
	}
	e->need |= t == KT_F64 ? sp->hd : t == KT_INT ? sp->hi : t == KT_F32 ? sp->hf : 0;
	switch (sp->form) {
	case F_INFIX:
		emit(e, "(");
		ref(e, x->a[0]);
		emit(e, " %s ", s);
		ref(e, x->a[1]);
		emit(e, ")");
		return;
	case F_NE:
		emit(e, "(!(");
		ref(e, x->a[0]);
		emit(e, " == ");
		ref(e, x->a[1]);
		emit(e, "))");
		return;
	case F_PREFIX:
		emit(e, "(%s", s);
		ref(e, x->a[0]);
		emit(e, ")");
		return;
	case F_SELECT:
		emit(e, "(");
		ref(e, x->a[0]);
		emit(e, " ? ");
		ref(e, x->a[1]);
		emit(e, " : ");
		ref(e, x->a[2]);
		emit(e, ")");
		return;
	case F_CALL:
		emit(e, "%s", s);
		args(e, x, oi->arity);
		return;
	default:
		unsupported(e, "%s inside a kernel (the kernel IR expresses it as a conversion)",
			    oi->name);
	}
}

/* buffer b's element i */
static void elem(E *e, int32_t b, int32_t i)
{
	emit(e, "b%d.d[int(", b);
	ref(e, i);
	emit(e, ")]");
}

static void load_text(E *e, const KExpr *x)
{
	Dtype f = e->k->bufs[x->v].fmt;
	switch (f) {
	case DT_F16: case DT_BF16:
		e->need |= f == DT_F16 ? VH_F16 : VH_BF16;
		emit(e, "%s(LD16(b%d, ", f == DT_F16 ? "h2f" : "b2f", x->v);
		ref(e, x->a[0]);
		emit(e, "))");
		return;
	case DT_I32:
		emit(e, "int64_t(");
		elem(e, x->v, x->a[0]);
		emit(e, ")");
		return;
	default:
		elem(e, x->v, x->a[0]);
		return;
	}
}

/* value of type `from` as type `to` (rounded to nearest even) */
static void cvt_text(E *e, KType to, KType from, int32_t a)
{
	static const char *fn[KT__COUNT][KT__COUNT] = {
		[KT_INT][KT_F32] = "i2f", [KT_INT][KT_F64] = "i2d", [KT_F32][KT_F64] = "double",
		[KT_F64][KT_F32] = "d2f", [KT_F32][KT_INT] = "int64_t", [KT_F64][KT_INT] = "int64_t",
		[KT_BOOL][KT_INT] = "int64_t",
	};
	if (to == from) {
		ref(e, a);
		return;
	}
	if (!fn[from][to]) {
		unsupported(e, "a conversion from %s to %s", kt_name(from), kt_name(to));
		return;
	}
	e->need |= from == KT_INT && to == KT_F32 ? VH_I2F : from == KT_INT && to == KT_F64 ? VH_I2D
		: from == KT_F64 && to == KT_F32 ? VH_D2F : 0;
	emit(e, "%s(", fn[from][to]);
	ref(e, a);
	emit(e, ")");
}

static void round_text(E *e, const KExpr *x)
{
	Dtype f = (Dtype)x->fmt;
	bool dbl = x->type == KT_F64;
	if (f == DT_F32 && dbl) {
		e->need |= VH_D2F;
		emit(e, "double(d2f(");
		ref(e, x->a[0]);
		emit(e, "))");
		return;
	}
	if (f != DT_F16 && f != DT_BF16) {
		unsupported(e, "rounding into %s inside a kernel", dt_name(f));
		return;
	}
	bool h = f == DT_F16;
	e->need |= h ? VH_F16 : VH_BF16;
	if (dbl)
		e->need |= h ? VH_D2H : VH_D2B;
	emit(e, "%s%s(%s%s(", dbl ? "double(" : "", h ? "h2f" : "b2f", dbl ? "d" : "f", h ? "2h" : "2b");
	ref(e, x->a[0]);
	emit(e, "))%s", dbl ? ")" : "");
}

/* Element idx of local array v (idx: an expression, or the text ix when not NULL):
 * private, private in parts (index j of the nest), or in scratch (vulkan.h). */
static void arr(E *e, int32_t v, int32_t idx, const char *ix)
{
	const KVar *V = &e->k->vars[v];
	bool part = e->pl->vclass[v] == VC_PART;
	if (part)
		IR_ASSERT(e->chain > 0 && !ix);
	if (e->soff && e->soff[v] >= 0) {
		int view = V->type == KT_F64 ? 1 : V->type == KT_INT ? 2 : 0;
		e->sused |= 1u << view;
		emit(e, "s%c.d[int(sb%d + ", "fdi"[view], v);
	} else {
		emit(e, "v%d[int(", v);
	}
	if (part)
		emit(e, "j%d", e->chain);
	else if (ix)
		emit(e, "%s", ix);
	else
		ref(e, idx);
	emit(e, ")]");
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
	emit(e, "%s%s t%d = ", prec((KType)x->type), gtype(e, (KType)x->type), id);
	switch (x->kind) {
	case KX_ELEM: arr(e, x->v, x->a[0], NULL); break;
	case KX_LOAD: load_text(e, x); break;
	case KX_OP: op_text(e, x); break;
	case KX_CVT: cvt_text(e, (KType)x->type, (KType)e->k->x[x->a[0]].type, x->a[0]); break;
	case KX_ROUND: round_text(e, x); break;
	case KX_CHECK:
		e->check = true;
		emit(e, "chk(");
		for (int i = 0; i < 3; i++) {
			ref(e, x->a[i]);
			emit(e, ", ");
		}
		if (x->a[3] >= 0)
			ref(e, x->a[3]);
		else
			emit(e, "true");
		emit(e, ", %du)", x->v);
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

static uint64_t stmts(E *e, int32_t s, uint64_t pending, bool rep);

/* Puts the owners' values of the merge slots in mask together (vulkan.h, plan.c): every
 * invocation leaves holding the whole array (VC_MERGE) or the maximum (VC_FLAG). */
static void merge(E *e, uint64_t mask)
{
	const VkPlan *pl = e->pl;
	line(e, "/* merge:%s */", mask ? "" : " nothing");
	line(e, "memoryBarrierShared();");
	line(e, "barrier();");
	for (int m = 0; m < pl->nslots; m++) {
		if (!(mask >> m & 1))
			continue;
		int32_t v = pl->slotvar[m];
		if (pl->vclass[v] == VC_FLAG) {
			line(e, "m%d[int(lid)] = int(v%d);", m, v);
			continue;
		}
		indent(e);
		emit(e, "for (int i_ = int(lid); i_ < %lld; i_ += int(WG)) m%d[i_] = ",
		     (long long)e->k->vars[v].n, m);
		arr(e, v, -1, "i_");
		emit(e, ";\n");
	}
	line(e, "memoryBarrierShared();");
	line(e, "barrier();");
	for (int m = 0; m < pl->nslots; m++) {
		if (!(mask >> m & 1))
			continue;
		int32_t v = pl->slotvar[m];
		if (pl->vclass[v] == VC_FLAG) {
			line(e, "for (int i_ = 0; i_ < int(WG); i_++) v%d = max_i(v%d, int64_t(m%d[i_]));", v,
			     v, m);
			continue;
		}
		indent(e);
		emit(e, "for (int i_ = 0; i_ < %lld; i_++) ", (long long)e->k->vars[v].n);
		arr(e, v, -1, "i_");
		emit(e, " = m%d[i_];\n", m);
	}
	e->need |= VH_IMINMAX;
}

static void store_text(E *e, const KStmt *s)
{
	Dtype f = e->k->bufs[s->v].fmt;
	KType t = (KType)e->k->x[s->b].type;
	if (f == DT_F16 || f == DT_BF16) {
		bool h = f == DT_F16;
		e->need |= h ? VH_F16 : VH_BF16;
		if (t == KT_F64)
			e->need |= h ? VH_D2H : VH_D2B;
		else if (t != KT_F32)
			unsupported(e, "a store of %s into an %s buffer", kt_name(t), dt_name(f));
		emit(e, "ST16(b%d, ", s->v);
		ref(e, s->a);
		emit(e, ", %s%s(", t == KT_F64 ? "d" : "f", h ? "2h" : "2b");
		ref(e, s->b);
		emit(e, "));\n");
		return;
	}
	elem(e, s->v, s->a);
	emit(e, " = ");
	if (f == DT_I32) {
		emit(e, "int(");
		ref(e, s->b);
		emit(e, ")");
	} else {
		cvt_text(e, f == DT_F64 ? KT_F64 : KT_F32, t, s->b);
	}
	emit(e, ";\n");
}

static void var_ref(E *e, int32_t v, int32_t idx)
{
	if (idx >= 0)
		arr(e, v, idx, NULL);
	else
		emit(e, "v%d", v);
}

/* local v = the pairwise tree (kir.h) of local array c[a .. a+b), iteratively: a stack of
 * (first, count, phase) frames walks the recursion's post-order. */
static void tree_stmt(E *e, const KStmt *s)
{
	KType t = (KType)e->k->vars[s->c].type;
	const char *T = gtype(e, t), *op = s->op == OP_MUL ? "*" : "+";
	Dtype f = (Dtype)s->fmt;
	const char *r0 = "", *r1 = "";
	if (f == DT_F16 || f == DT_BF16) {
		e->need |= f == DT_F16 ? VH_F16 : VH_BF16;
		r0 = f == DT_F16 ? "h2f(f2h(" : "b2f(f2b(";
		r1 = "))";
		if (t == KT_F64)
			unsupported(e, "a pairwise tree rounded to %s over f64 terms", dt_name(f));
	}
	line(e, "{");
	e->ind++;
	line(e, "int lo_[64], n_[64], ph_[64], sp_ = 1, vp_ = 0;");
	line(e, "%s tv_[65];", T);
	indent(e);
	emit(e, "lo_[0] = int(");
	ref(e, s->a);
	emit(e, ");\n");
	indent(e);
	emit(e, "n_[0] = int(");
	ref(e, s->b);
	emit(e, ");\n");
	line(e, "ph_[0] = 0;");
	line(e, "while (sp_ > 0) {");
	e->ind++;
	line(e, "int l_ = lo_[sp_ - 1], c_ = n_[sp_ - 1];");
	line(e, "if (c_ == 1) {");
	indent(e);
	emit(e, "\ttv_[vp_++] = ");
	arr(e, s->c, -1, "l_");
	emit(e, ";\n");
	line(e, "\tsp_--;");
	line(e, "} else if (ph_[sp_ - 1] < 2) {");
	line(e, "\tbool right_ = ph_[sp_ - 1] == 1;");
	line(e, "\tph_[sp_ - 1]++;");
	line(e, "\tlo_[sp_] = right_ ? l_ + c_ / 2 : l_;");
	line(e, "\tn_[sp_] = right_ ? c_ - c_ / 2 : c_ / 2;");
	line(e, "\tph_[sp_++] = 0;");
	line(e, "} else {");
	line(e, "\tvp_--;");
	line(e, "\t%s%s r_ = tv_[vp_ - 1] %s tv_[vp_];", prec(t), T, op);
	line(e, "\ttv_[vp_ - 1] = %sr_%s;", r0, r1);
	line(e, "\tsp_--;");
	line(e, "}");
	e->ind--;
	line(e, "}");
	line(e, "v%d = tv_[0];", s->v);
	e->ind--;
	line(e, "}");
}

/* The statements of one line: set, store, check, tree. */
static void simple_stmt(E *e, const KStmt *s)
{
	int32_t roots[2] = {s->a, s->b};
	bool open = open_stmt(e, roots, 2);
	if (s->kind == KS_TREE) {
		tree_stmt(e, s);
		close_stmt(e, open);
		return;
	}
	indent(e);
	switch (s->kind) {
	case KS_SET:
		var_ref(e, s->v, s->a);
		emit(e, " = ");
		ref(e, s->b);
		emit(e, ";\n");
		break;
	case KS_STORE: store_text(e, s); break;
	case KS_CHECK:
		e->check = true;
		emit(e, "if (!");
		ref(e, s->a);
		emit(e, ") rep(%du, ", s->v);
		ref(e, s->b);
		emit(e, ");\n");
		break;
	default: IR_ASSERT(!"simple_stmt: not a simple statement");
	}
	close_stmt(e, open);
}

static void decl_stmt(E *e, const KStmt *s)
{
	const KVar *v = &e->k->vars[s->v];
	int64_t n = e->pl->vclass[s->v] == VC_PART ? vk_part_len(e->k, e->pl, s->v) : v->n;
	if (e->soff[s->v] >= 0)
		line(e, "/* v%d: %lld elements in scratch at byte %lld */", s->v, (long long)n,
		     (long long)e->soff[s->v]);
	else if (v->n)
		line(e, "%s%s v%d[%lld];", prec(v->type), gtype(e, v->type), s->v, (long long)(n ? n : 1));
	else
		line(e, "%s%s v%d;", prec(v->type), gtype(e, v->type), s->v);
}

/* A distributed loop nest (plan.c): iterations f = lid, lid + WG, ... of the flattened
 * nest, the last loop fastest; j counts this invocation's iterations (VC_PART index). */
static void chain_stmt(E *e, int32_t s)
{
	const Kernels *k = e->k;
	int L = e->pl->chainlen[s];
	int32_t c[IR_MAXRANK], roots[2 * IR_MAXRANK];
	c[0] = s;
	for (int i = 1; i < L; i++)
		c[i] = k->s[c[i - 1]].body;
	for (int i = 0; i < L; i++) {
		roots[2 * i] = k->s[c[i]].a;
		roots[2 * i + 1] = k->s[c[i]].b;
	}
	line(e, "{");
	e->ind++;
	e->stamp++;
	for (int i = 0; i < 2 * L; i++)
		temps(e, roots[i]);
	for (int i = 0; i < L; i++) {
		indent(e);
		emit(e, "int64_t n%d_%d = (", s, i);
		ref(e, roots[2 * i + 1]);
		emit(e, " > ");
		ref(e, roots[2 * i]);
		emit(e, ") ? (");
		ref(e, roots[2 * i + 1]);
		emit(e, " - ");
		ref(e, roots[2 * i]);
		emit(e, ") : 0l;\n");
	}
	indent(e);
	emit(e, "int64_t tot%d = n%d_0", s, s);
	for (int i = 1; i < L; i++)
		emit(e, " * n%d_%d", s, i);
	emit(e, ";\n");
	line(e, "int j%d = 0;", s);
	line(e, "for (int64_t f%d = lid; f%d < tot%d; f%d += WG, j%d++) {", s, s, s, s, s);
	e->ind++;
	/* 32-bit division where the nest's count fits (see kernel()) */
	int64_t most = vk_chain_bound(k, e->pl, s);
	bool narrow = most >= 0 && most <= UINT32_MAX;
	line(e, narrow ? "uint q%d = uint(f%d);" : "int64_t q%d = f%d;", s, s);
	for (int i = L - 1; i >= 0; i--) {
		indent(e);
		emit(e, "int64_t v%d = ", k->s[c[i]].v);
		ref(e, roots[2 * i]);
		if (i > 0) {
			emit(e, narrow ? " + int64_t(q%d %% uint(n%d_%d));\n" : " + q%d %% n%d_%d;\n", s, s, i);
			line(e, narrow ? "q%d /= uint(n%d_%d);" : "q%d /= n%d_%d;", s, s, i);
		} else {
			emit(e, narrow ? " + int64_t(q%d);\n" : " + q%d;\n", s);
		}
	}
	e->chain = s;
	stmts(e, k->s[c[L - 1]].body, 0, false);
	e->chain = 0;
	e->ind--;
	line(e, "}");
	e->ind--;
	line(e, "}");
}

static uint64_t loop_stmt(E *e, int32_t id, uint64_t pending, bool rep)
{
	const KStmt *s = &e->k->s[id];
	int32_t roots[2] = {s->a, s->b};
	bool open = open_stmt(e, roots, 2);
	indent(e);
	emit(e, "for (int64_t v%d = ", s->v);
	ref(e, s->a);
	emit(e, "; v%d < ", s->v);
	ref(e, s->b);
	emit(e, "; v%d++) {\n", s->v);
	e->ind++;
	uint64_t end = stmts(e, s->body, pending, rep);
	if (rep && (end & e->pl->rep[id])) {
		merge(e, end & e->pl->rep[id]);
		end &= ~e->pl->rep[id];
	}
	e->ind--;
	line(e, "}");
	close_stmt(e, open);
	return pending | end;
}

/* for (;;) { condition's temporaries; if (!cond) break; body } */
static uint64_t while_stmt(E *e, int32_t id, uint64_t pending, bool rep)
{
	const KStmt *s = &e->k->s[id];
	line(e, "for (;;) {");
	e->ind++;
	bool open = open_stmt(e, &s->a, 1);
	indent(e);
	emit(e, "if (!");
	ref(e, s->a);
	emit(e, ")\n");
	line(e, "\tbreak;");
	uint64_t end = stmts(e, s->body, pending, rep);
	if (rep && (end & e->pl->rep[id])) {
		merge(e, end & e->pl->rep[id]);
		end &= ~e->pl->rep[id];
	}
	close_stmt(e, open);
	e->ind--;
	line(e, "}");
	return pending | end;
}

static uint64_t if_stmt(E *e, int32_t id, uint64_t pending, bool rep)
{
	const KStmt *s = &e->k->s[id];
	bool open = open_stmt(e, &s->a, 1);
	indent(e);
	emit(e, "if (");
	ref(e, s->a);
	emit(e, ") {\n");
	e->ind++;
	uint64_t p1 = stmts(e, s->body, pending, rep), p2 = pending;
	e->ind--;
	if (s->body2 > 0) {
		line(e, "} else {");
		e->ind++;
		p2 = stmts(e, s->body2, pending, rep);
		e->ind--;
	}
	line(e, "}");
	close_stmt(e, open);
	return p1 | p2;
}

/* A statement list; rep: replicated code of a group plan (merges are placed here).
 * Returns the merge slots still waiting for a merge at its end. */
static uint64_t stmts(E *e, int32_t s, uint64_t pending, bool rep)
{
	for (; s > 0 && !e->failed; s = e->k->s[s].next) {
		const KStmt *t = &e->k->s[s];
		if (rep && (pending & e->pl->rep[s])) {
			merge(e, pending & e->pl->rep[s]);
			pending &= ~e->pl->rep[s];
		}
		if (rep && e->pl->role[s] == VR_CHAIN) {
			chain_stmt(e, s);
			pending |= e->pl->dist[s];
			continue;
		}
		switch (t->kind) {
		case KS_LOOP: pending = loop_stmt(e, s, pending, rep); break;
		case KS_WHILE: pending = while_stmt(e, s, pending, rep); break;
		case KS_IF: pending = if_stmt(e, s, pending, rep); break;
		case KS_DECL: decl_stmt(e, t); break;
		default: simple_stmt(e, t); break;
		}
	}
	return pending;
}

/* ------------------------------------------------------------ shaders */

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

/* Marks the buffers statements s.. load (1) and store (2). */
static void scan(const Kernels *k, int32_t s, uint8_t *use)
{
	for (; s > 0; s = k->s[s].next) {
		const KStmt *t = &k->s[s];
		if (t->kind != KS_DECL) {
			scan_expr(k, t->a, use);
			scan_expr(k, t->b, use);
		}
		if (t->kind == KS_STORE)
			use[t->v] |= 2;
		scan(k, t->body, use);
		scan(k, t->body2, use);
	}
}

static const char *const fc_modes[][2] = {
	/* symbol, spirv_execution_mode arguments: capability, mode (float controls) */
	{VK_SYM_DENORM32, "capabilities = [4464], 4459, 32"},
	{VK_SYM_SZINP32, "capabilities = [4466], 4461, 32"},
	{VK_SYM_RTE32, "capabilities = [4467], 4462, 32"},
	{VK_SYM_DENORM64, "capabilities = [4464], 4459, 64"},
	{VK_SYM_SZINP64, "capabilities = [4466], 4461, 64"},
	{VK_SYM_RTE64, "capabilities = [4467], 4462, 64"},
};

static void header(E *o, const E *b, int i)
{
	const Kernels *k = o->k;
	const Graph *g = k->g;
	const Kernel *kn = &k->k[i];
	line(o, VK_MARK "%d: %s group=%d wg=%d f64=%d scratch=%lld", i,
	     g->tensors[g->defs[kn->def].out[0]].name, o->pl->group ? 1 : 0, o->pl->wg, b->f64 ? 1 : 0,
	     (long long)b->scratch);
	line(o, "#version 450");
	line(o, "#extension GL_ARB_gpu_shader_int64 : require");
	const char *syms[] = {VK_SYM_16BIT, VK_SYM_FC, VK_SYM_DENORM32, VK_SYM_SZINP32, VK_SYM_RTE32,
			      VK_SYM_DENORM64, VK_SYM_SZINP64, VK_SYM_RTE64};
	for (size_t s = 0; s < ARRAY_LEN(syms); s++)
		line(o, "#ifndef %s\n#define %s 0\n#endif", syms[s], syms[s]);
	if (b->half)
		line(o, "#if %s\n#extension GL_EXT_shader_16bit_storage : require\n#endif", VK_SYM_16BIT);
	line(o, "#if %s\n#extension GL_EXT_spirv_intrinsics : require", VK_SYM_FC);
	for (size_t m = 0; m < ARRAY_LEN(fc_modes); m++)
		if (m < 3 || b->f64)
			line(o, "#if %s\nspirv_execution_mode(extensions = [\"SPV_KHR_float_controls\"], "
			     "%s);\n#endif", fc_modes[m][0], fc_modes[m][1]);
	line(o, "#endif");
	line(o, "/* %s%s; %s plan: %s */", g->tensors[g->defs[kn->def].out[0]].name,
	     kn->hoisted ? ": reduction outside the tile's point loops" : "",
	     o->pl->group ? "group" : "serial",
	     o->pl->group ? "one item per work-group, distributed loop nests"
			  : "one item per invocation");
	line(o, "layout(local_size_x = %d) in;", o->pl->wg);
	line(o, "const int64_t WG = %dl;", o->pl->wg);
	line(o, "const int64_t NITEMS = %lldl;", (long long)kn->nitems);
	line(o, "layout(push_constant) uniform PC { int64_t base; } pc;   /* first item of this dispatch */");
}

static void buffers(E *o, const E *b, const uint8_t *use)
{
	const Kernels *k = o->k;
	if (b->half) {
		line(o, "#if %s", VK_SYM_16BIT);
		line(o, "#define HALF_T uint16_t");
		line(o, "#define LD16(B, I) uint(B.d[int(I)])");
		line(o, "#define ST16(B, I, V) B.d[int(I)] = uint16_t(V)");
		line(o, "#else");
		line(o, "#define HALF_T uint");
		line(o, "#define LD16(B, I) ((B.d[int((I) >> 1)] >> (uint((I) & 1l) * 16u)) & 0xffffu)");
		line(o, "#define ST16(B, I, V) { uint sh_ = uint((I) & 1l) * 16u; int w_ = int((I) >> 1); "
		     "atomicAnd(B.d[w_], ~(0xffffu << sh_)); atomicOr(B.d[w_], uint(V) << sh_); }");
		line(o, "#endif");
	}
	for (int v = 0; v < 3; v++)
		if (b->sused >> v & 1)
			line(o, "layout(std430, set = 0, binding = %d) restrict buffer S%c { %s d[]; } s%c;  /* scratch */",
			     k->nbufs + 1 + v, "FDI"[v], v == 0 ? "float" : v == 1 ? "double" : "int64_t", "fdi"[v]);
	for (int i = 0; i < k->nbufs; i++) {
		if (!use[i])
			continue;
		Dtype f = k->bufs[i].fmt;
		const char *t = f == DT_F64 ? "double" : f == DT_F32 ? "float" : f == DT_I32 ? "int" : "HALF_T";
		line(o, "layout(std430, set = 0, binding = %d) restrict %sbuffer B%d { %s d[]; } b%d;  /* %s: %s */",
		     i, use[i] == 1 ? "readonly " : "", i, t, i, k->g->tensors[k->bufs[i].tensor].name,
		     dt_name(f));
	}
	if (!b->check)
		return;
	line(o, "layout(std430, set = 0, binding = %d) restrict buffer Err { uint e[]; } err;", k->nbufs);
	line(o, "const uint EB = %du;", o->kernel * VK_ERR_WORDS);
	line(o, "/* the first error wins; its value follows the claimed site */");
	line(o, "void rep(uint site, int64_t v)");
	line(o, "{");
	line(o, "\tif (atomicCompSwap(err.e[EB], 0u, site + 1u) == 0u) {");
	line(o, "\t\terr.e[EB + 1u] = uint(uint64_t(v) & 0xfffffffful);");
	line(o, "\t\terr.e[EB + 2u] = uint(uint64_t(v) >> 32);");
	line(o, "\t}");
	line(o, "}");
	line(o, "int64_t chk(int64_t v, int64_t lo, int64_t hi, bool g, uint site)");
	line(o, "{");
	line(o, "\tif (v >= lo && v < hi)");
	line(o, "\t\treturn v;");
	line(o, "\tif (g)");
	line(o, "\t\trep(site, v);");
	line(o, "\treturn lo;");
	line(o, "}");
}

static void put_text(void *ctx, const char *text)
{
	emit(ctx, "%s", text);
}

static void decls(const Kernels *k, int32_t s, int32_t *list, int *n)
{
	for (; s > 0; s = k->s[s].next) {
		if (k->s[s].kind == KS_DECL)
			list[(*n)++] = k->s[s].v;
		decls(k, k->s[s].body, list, n);
		decls(k, k->s[s].body2, list, n);
	}
}

/* Local arrays longer than VK_PRIVATE_MAX live in the scratch buffer (vulkan.h): b->soff. */
static void scratch_plan(E *b, int i)
{
	const Kernels *k = b->k;
	b->soff = malloc(((size_t)k->nvars + 1) * sizeof *b->soff);
	int32_t *list = malloc(((size_t)k->ns + 1) * sizeof *list);
	IR_ASSERT(b->soff && list);
	for (int32_t v = 0; v <= k->nvars; v++)
		b->soff[v] = -1;
	int n = 0;
	decls(k, k->k[i].body, list, &n);
	for (int j = 0; j < n; j++) {
		const KVar *V = &k->vars[list[j]];
		int64_t len = b->pl->vclass[list[j]] == VC_PART ? vk_part_len(k, b->pl, list[j]) : V->n;
		if (V->type == KT_BOOL || len <= VK_PRIVATE_MAX || b->soff[list[j]] >= 0)
			continue;
		b->soff[list[j]] = b->scratch;
		b->scratch += (len * (V->type == KT_F32 ? 4 : 8) + 7) / 8 * 8;
	}
	free(list);
}

/* main's statements (into b), then the whole shader around them (into o). */
static void kernel(E *o, E *b, int i)
{
	const Kernels *k = o->k;
	const Kernel *kn = &k->k[i];
	const VkPlan *pl = o->pl;
	b->ind = 1;
	scratch_plan(b, i);
	line(b, "int64_t it = int64_t(gl_WorkGroupID.y) * int64_t(gl_NumWorkGroups.x) + "
	     "int64_t(gl_WorkGroupID.x);");
	if (!pl->group)
		line(b, "it = it * WG + int64_t(gl_LocalInvocationID.x);");
	line(b, "it += pc.base;");
	line(b, "const int64_t lid = int64_t(gl_LocalInvocationID.x);");
	line(b, "if (it >= NITEMS)");
	line(b, "\treturn;");
	if (b->scratch) {
		line(b, "const int64_t slot = %s;   /* this invocation's scratch */",
		     pl->group ? "(it - pc.base) * WG + lid" : "it - pc.base");
		for (int32_t v = 0; v < k->nvars; v++)
			if (b->soff[v] >= 0) {
				int sz = k->vars[v].type == KT_F32 ? 4 : 8;
				line(b, "const int64_t sb%d = slot * %lldl + %lldl;", v,
				     (long long)(b->scratch / sz), (long long)(b->soff[v] / sz));
			}
	}
	/* 32-bit division where the item ids fit: NVIDIA's driver (580) was seen to compute 64-bit
	 * division and remainder by constants wrongly */
	bool narrow = kn->nitems <= UINT32_MAX;
	line(b, narrow ? "uint q = uint(it);" : "int64_t q = it;");
	for (int p = kn->npar - 1; p >= 0; p--) {
		const KPar *P = &kn->par[p];
		int64_t nt = (P->extent + P->tile - 1) / P->tile;
		if (nt == 1) {
			line(b, "const int64_t v%d = 0l;", P->origin);
			continue;
		}
		line(b, "const int64_t v%d = int64_t(q %% %lld%s) * %lldl;", P->origin, (long long)nt,
		     narrow ? "u" : "l", (long long)P->tile);
		line(b, "q /= %lld%s;", (long long)nt, narrow ? "u" : "l");
	}
	stmts(b, kn->body, 0, pl->group);
	uint8_t *use = calloc((size_t)k->nbufs + 1, 1);
	IR_ASSERT(use);
	scan(k, kn->body, use);
	for (int j = 0; j < k->nbufs; j++) {
		b->half |= use[j] && (k->bufs[j].fmt == DT_F16 || k->bufs[j].fmt == DT_BF16);
		b->f64 |= use[j] && k->bufs[j].fmt == DT_F64;
	}
	header(o, b, i);
	buffers(o, b, use);
	free(use);
	for (int m = 0; m < pl->nslots; m++) {
		int32_t v = pl->slotvar[m];
		if (pl->vclass[v] == VC_FLAG)
			line(o, "shared int m%d[%d];", m, pl->wg);
		else
			line(o, "shared %s m%d[%lld];", gtype(o, k->vars[v].type), m,
			     (long long)k->vars[v].n);
	}
	vk_lib(b->need, put_text, o);
	line(o, "void main()");
	line(o, "{");
	emit(o, "%.*s", (int)b->len, b->buf);
	line(o, "}");
	line(o, "%s", "");
}

char *vk_emit(const Kernels *k, Diag *d)
{
	E o = {0};
	o.k = k;
	o.d = d;
	uint32_t *mark = calloc((size_t)k->nx + 1, sizeof *mark);
	IR_ASSERT(mark);
	const Graph *g = k->g;
	line(&o, "// Generated by assay's vulkan backend from graph %s: %d compute shaders (GLSL 450).",
	     g->name ? g->name : "(unnamed)", k->nk);
	if (k->faults)
		line(&o, "// SEEDED FAULTS 0x%x: this program is wrong on purpose.", k->faults);
	char *sch = sched_text(g, &k->sched);
	for (char *p = sch, *nl; *p; p = nl + 1) {
		nl = strchr(p, '\n');
		line(&o, "// schedule: %.*s", (int)(nl - p), p);
	}
	free(sch);
	for (int i = 0; i < k->nk && !o.failed; i++) {
		VkPlan pl;
		vk_plan(k, i, &pl, d);
		E b = {0};
		b.k = k;
		b.d = d;
		b.pl = &pl;
		b.kernel = i;
		b.mark = mark;
		b.stamp = o.stamp;
		o.pl = &pl;
		o.kernel = i;
		kernel(&o, &b, i);
		o.failed |= b.failed;
		o.stamp = b.stamp;
		free(b.soff);
		free(b.buf);
		vk_plan_free(&pl);
		o.pl = NULL;
	}
	free(mark);
	if (o.failed) {
		free(o.buf);
		return NULL;
	}
	return o.buf;
}
