/* compiler/cuda/emit.c: the CUDA backend's emitter: kernel IR -> one CUDA C++ program for
 * NVRTC, one `extern "C" __global__` function k<i> per kernel, in the model of cuda.h under
 * the plan of plan.c.
 *
 * All text goes through one emitter (growable buffer, indentation, printf-checked emit());
 * the output is a deterministic function of the kernel IR (and of ASSAY_CUDA_MODE, which
 * the header records): temporaries are named after expression ids (t12), variables after
 * variable ids (v3), buffers after buffer ids (b0). Each statement's expressions become one
 * `const` temporary per computing node, fully parenthesised, with explicit casts.
 *
 * Numerics: f32 and f64 arithmetic is float and double, compiled by NVRTC with
 * --fmad=false (no contraction of a*b+c into an fma, as the emulator and the budgets
 * assume), --prec-div=true and --prec-sqrt=true (correctly rounded / and sqrt),
 * --ftz=false (subnormals kept). f16 and bf16 live in unsigned short and are converted by
 * the integer helpers below (round to nearest even, subnormals, overflow to inf, NaN kept
 * NaN), so no toolkit header is needed. f16/bf16 arithmetic is f32 arithmetic rounded by
 * KX_ROUND (kir.h), which for + - * / sqrt equals the native half operation. Functions are
 * CUDA's math library (float versions with an f suffix); rsqrt is rsqrtf/rsqrt (2 and 1
 * ulp), sigmoid 1/(1+exp(-x)), max/min IEEE 754-2019 helpers. KS_TREE runs iteratively with
 * an explicit stack (no recursion on the GPU) over exactly the tree of kir.h.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cuda.h"

static const char *const helpers[] = {
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
	"}\n",
	"__device__ __forceinline__ float b2f(u16 h) { return __uint_as_float((unsigned)h << 16); }\n"
	"/* double -> f16 bits, round to nearest even (every float is a double: no double rounding) */\n"
	"__device__ u16 d2h(double x)\n"
	"{\n"
	"\tu64 b = (u64)__double_as_longlong(x), a = b & 0x7fffffffffffffffull;\n"
	"\tu16 s = (u16)((b >> 48) & 0x8000u);\n"
	"\tif (a > 0x7ff0000000000000ull)\n"
	"\t\treturn (u16)(s | 0x7e00u | ((a >> 42) & 0x1ffu));\n"
	"\tif (a >= 0x40effe0000000000ull)   /* 65520 and up: inf */\n"
	"\t\treturn (u16)(s | 0x7c00u);\n"
	"\tif (a >= 0x3f10000000000000ull) {   /* 2^-14 and up: normal */\n"
	"\t\tu64 r = a - (1008ull << 52);\n"
	"\t\tr += (1ull << 41) - 1 + ((r >> 42) & 1);\n"
	"\t\treturn (u16)(s | (r >> 42));\n"
	"\t}\n"
	"\tdouble ax = __longlong_as_double((long long)a);\n"
	"\treturn (u16)(s | (u16)(((ax + 0x1p28) - 0x1p28) * 0x1p24));\n"
	"}\n",
	"/* double -> bf16 bits, round to nearest even */\n"
	"__device__ u16 d2b(double x)\n"
	"{\n"
	"\tu64 b = (u64)__double_as_longlong(x), a = b & 0x7fffffffffffffffull;\n"
	"\tu16 s = (u16)((b >> 48) & 0x8000u);\n"
	"\tif (a > 0x7ff0000000000000ull)\n"
	"\t\treturn (u16)(s | 0x7fc0u | ((a >> 45) & 0x3fu));\n"
	"\tif (a >= 0x47eff00000000000ull)\n"
	"\t\treturn (u16)(s | 0x7f80u);\n"
	"\tif (a >= 0x3810000000000000ull) {   /* 2^-126 and up: normal */\n"
	"\t\tu64 r = a - (896ull << 52);\n"
	"\t\tr += (1ull << 44) - 1 + ((r >> 45) & 1);\n"
	"\t\treturn (u16)(s | (r >> 45));\n"
	"\t}\n"
	"\tdouble ax = __longlong_as_double((long long)a);\n"
	"\treturn (u16)(s | (u16)(((ax + 0x1p-81) - 0x1p-81) * 0x1p133));\n"
	"}\n",
	"__device__ __forceinline__ long long fdiv_i(long long a, long long b)\n"
	"{\n"
	"\tif (b == 0)\n"
	"\t\treturn 0;\n"
	"\tlong long q = a / b;\n"
	"\treturn (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;\n"
	"}\n",
	"__device__ __forceinline__ long long fmod_i(long long a, long long b)\n"
	"{\n"
	"\tif (b == 0)\n"
	"\t\treturn 0;\n"
	"\tlong long r = a % b;\n"
	"\treturn r < 0 ? r + (b < 0 ? -b : b) : r;\n"
	"}\n",
	"__device__ __forceinline__ long long abs_i(long long a) { return a < 0 ? -a : a; }\n"
	"__device__ __forceinline__ long long max_i(long long a, long long b) { return a > b ? a : b; }\n"
	"__device__ __forceinline__ long long min_i(long long a, long long b) { return a < b ? a : b; }\n"
	"/* IEEE 754-2019 maximum and minimum: NaN if either is NaN, -0 below +0 */\n"
	"__device__ __forceinline__ float max_f(float a, float b)\n"
	"{\n"
	"\tif (a != a || b != b)\n"
	"\t\treturn a + b;\n"
	"\tif (a == b)\n"
	"\t\treturn __float_as_int(a) < 0 ? b : a;\n"
	"\treturn a > b ? a : b;\n"
	"}\n",
	"__device__ __forceinline__ float min_f(float a, float b)\n"
	"{\n"
	"\tif (a != a || b != b)\n"
	"\t\treturn a + b;\n"
	"\tif (a == b)\n"
	"\t\treturn __float_as_int(a) < 0 ? a : b;\n"
	"\treturn a < b ? a : b;\n"
	"}\n",
	"__device__ __forceinline__ double max_d(double a, double b)\n"
	"{\n"
	"\tif (a != a || b != b)\n"
	"\t\treturn a + b;\n"
	"\tif (a == b)\n"
	"\t\treturn __double_as_longlong(a) < 0 ? b : a;\n"
	"\treturn a > b ? a : b;\n"
	"}\n",
	"__device__ __forceinline__ double min_d(double a, double b)\n"
	"{\n"
	"\tif (a != a || b != b)\n"
	"\t\treturn a + b;\n"
	"\tif (a == b)\n"
	"\t\treturn __double_as_longlong(a) < 0 ? a : b;\n"
	"\treturn a < b ? a : b;\n"
	"}\n",
	"__device__ __forceinline__ float sigmoid_f(float x) { return 1.0f / (1.0f + expf(-x)); }\n"
	"__device__ __forceinline__ double sigmoid_d(double x) { return 1.0 / (1.0 + exp(-x)); }\n"
	"/* a combine of a pairwise tree, rounded to FMT: 0 the type's own, 1 f16, 2 bf16, 3 f32 */\n"
	"template <typename T, int MUL, int FMT> __device__ __forceinline__ T comb(T a, T b)\n"
	"{\n"
	"\tT r = MUL ? a * b : a + b;\n"
	"\treturn FMT == 1 ? (T)h2f(d2h((double)r)) : FMT == 2 ? (T)b2f(d2b((double)r)) :\n"
	"\t       FMT == 3 ? (T)(float)r : r;\n"
	"}\n",
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
	"}\n",
	"/* the first error wins; the value is written after the site is claimed */\n"
	"__device__ void rep(u64 *err, long long site, long long v)\n"
	"{\n"
	"\tif (atomicCAS(err, 0ull, (u64)(site + 1)) == 0ull)\n"
	"\t\terr[1] = (u64)v;\n"
	"}\n",
	"__device__ __forceinline__ long long chk(u64 *err, long long v, long long lo, long long hi, int g, long long site)\n"
	"{\n"
	"\tif (v >= lo && v < hi)\n"
	"\t\treturn v;\n"
	"\tif (g)\n"
	"\t\trep(err, site, v);\n"
	"\treturn lo;\n"
	"}\n",
};

/* ------------------------------------------------------------ op spellings */

typedef enum { SP_NONE, SP_INFIX, SP_PREFIX, SP_CALL, SP_SELECT } SpForm;

/* CUDA's spelling of each op by operand type (an operator for infix and prefix forms, a
 * function for calls); NULL where it has none, with the reason. */
typedef struct {
	uint8_t form;
	const char *f32, *f64, *i64;
	const char *why;
} Spell;

#define INFIX(o) {SP_INFIX, o, o, o, NULL}
#define REAL(f, d) {SP_CALL, f, d, NULL, "a real function: no integer form"}
static const Spell spell[] = {
	[OP_NEG] = {SP_PREFIX, "-", "-", "-", NULL},
	[OP_NOT] = {SP_PREFIX, "!", "!", "!", NULL},
	[OP_ADD] = INFIX("+"),
	[OP_SUB] = INFIX("-"),
	[OP_MUL] = INFIX("*"),
	[OP_DIV] = {SP_INFIX, "/", "/", NULL, "real division: integers use IDIV"},
	[OP_IDIV] = {SP_CALL, NULL, NULL, "fdiv_i", "floor division is integer only"},
	[OP_MOD] = {SP_CALL, NULL, NULL, "fmod_i", "the remainder is integer only"},
	[OP_EQ] = INFIX("=="),
	[OP_NE] = INFIX("!="),
	[OP_LT] = INFIX("<"),
	[OP_LE] = INFIX("<="),
	[OP_GT] = INFIX(">"),
	[OP_GE] = INFIX(">="),
	[OP_AND] = INFIX("&&"),
	[OP_OR] = INFIX("||"),
	[OP_SELECT] = {SP_SELECT, NULL, NULL, NULL, NULL},
	[OP_EXP] = REAL("expf", "exp"),
	[OP_EXP2] = REAL("exp2f", "exp2"),
	[OP_EXPM1] = REAL("expm1f", "expm1"),
	[OP_LOG] = REAL("logf", "log"),
	[OP_LOG2] = REAL("log2f", "log2"),
	[OP_LOG1P] = REAL("log1pf", "log1p"),
	[OP_SQRT] = REAL("sqrtf", "sqrt"),
	[OP_RSQRT] = REAL("rsqrtf", "rsqrt"),
	[OP_ABS] = {SP_CALL, "fabsf", "fabs", "abs_i", NULL},
	[OP_SIN] = REAL("sinf", "sin"),
	[OP_COS] = REAL("cosf", "cos"),
	[OP_TANH] = REAL("tanhf", "tanh"),
	[OP_SIGMOID] = REAL("sigmoid_f", "sigmoid_d"),
	[OP_ERF] = REAL("erff", "erf"),
	[OP_FLOOR] = REAL("floorf", "floor"),
	[OP_CEIL] = REAL("ceilf", "ceil"),
	[OP_POW] = REAL("powf", "pow"),
	[OP_MAX] = {SP_CALL, "max_f", "max_d", "max_i", NULL},
	[OP_MIN] = {SP_CALL, "min_f", "min_d", "min_i", NULL},
	[OP_FMA] = REAL("fmaf", "fma"),
	[OP_CAST_F64] = {SP_NONE, NULL, NULL, NULL, "a cast: lowering makes it a conversion (KX_CVT/KX_ROUND)"},
	[OP_CAST_F32] = {SP_NONE, NULL, NULL, NULL, "a cast: lowering makes it a conversion (KX_CVT/KX_ROUND)"},
	[OP_CAST_F16] = {SP_NONE, NULL, NULL, NULL, "a cast: lowering makes it a conversion (KX_CVT/KX_ROUND)"},
	[OP_CAST_BF16] = {SP_NONE, NULL, NULL, NULL, "a cast: lowering makes it a conversion (KX_CVT/KX_ROUND)"},
};
_Static_assert(ARRAY_LEN(spell) == OP__COUNT, "one CUDA spelling per op");

/* ------------------------------------------------------------ the emitter */

typedef struct {
	char *buf;
	size_t len, cap;
	int ind;
	const Kernels *k;
	uint32_t *mark;    /* per expression: the statement stamp it was emitted in */
	uint32_t stamp;
	bool failed;
	Diag *d;
	const CuPlan *plan;
	bool block;        /* the kernel is CM_BLOCK */
	bool dist;         /* inside a distributed construct (thread context) */
	bool synced;       /* a barrier was the last thing emitted */
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

static void barrier(E *e)
{
	if (!e->synced)
		line(e, "__syncthreads();");
	e->synced = true;
}

static const char *ctype(KType t)
{
	static const char *names[] = {[KT_BOOL] = "int", [KT_INT] = "long long", [KT_F32] = "float",
				      [KT_F64] = "double"};
	_Static_assert(ARRAY_LEN(names) == KT__COUNT, "one CUDA type per KType");
	return names[t];
}

static const char *store_ctype(Dtype f)
{
	switch (f) {
	case DT_F64: return "double";
	case DT_F32: return "float";
	case DT_I32: return "int";
	default: return "u16";
	}
}

static bool shared_var(const E *e, int32_t v)
{
	return e->plan->store[v] == SC_SHARED || e->plan->store[v] == SC_SCRATCH_B;
}

/* ------------------------------------------------------------ expressions */

static bool leaf(const KExpr *x)
{
	return x->kind == KX_FCONST || x->kind == KX_ICONST || x->kind == KX_VAR;
}

static void real_const(E *e, KType t, double f)
{
	bool f32 = t == KT_F32;
	if (isnan(f))
		emit(e, "%s", f32 ? "__int_as_float(0x7fc00000)" : "__longlong_as_double(0x7ff8000000000000LL)");
	else if (isinf(f) && f > 0)
		emit(e, "%s", f32 ? "__int_as_float(0x7f800000)" : "__longlong_as_double(0x7ff0000000000000LL)");
	else if (isinf(f))
		emit(e, "%s", f32 ? "__int_as_float((int)0xff800000u)"
				  : "__longlong_as_double((long long)0xfff0000000000000ull)");
	else if (signbit(f))
		emit(e, "(%a%s)", f, f32 ? "f" : "");
	else
		emit(e, "%a%s", f, f32 ? "f" : "");
}

/* Writes the text that denotes expression id (a constant, a variable or a temporary). */
static void ref(E *e, int32_t id)
{
	const KExpr *x = &e->k->x[id];
	if (x->kind == KX_VAR)
		emit(e, "v%d", x->v);
	else if (x->kind == KX_ICONST && x->i == INT64_MIN)
		emit(e, "(-9223372036854775807LL - 1LL)");
	else if (x->kind == KX_ICONST)
		emit(e, "%s%lldLL%s", x->i < 0 ? "(" : "", (long long)x->i, x->i < 0 ? ")" : "");
	else if (x->kind == KX_FCONST)
		real_const(e, (KType)x->type, x->f);
	else
		emit(e, "t%d", id);
}

/* Element idx of local array v, by its storage. */
static void elem(E *e, int32_t v, int32_t idx)
{
	emit(e, "v%d[", v);
	if (e->plan->store[v] == SC_SCRATCH_T) {
		emit(e, "(");
		ref(e, idx);
		emit(e, ") * nthr]");
	} else {
		ref(e, idx);
		emit(e, "]");
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
	const Spell *sp = &spell[op];
	KType t = (KType)x->type;
	if (sp->form == SP_SELECT) {
		emit(e, "(");
		ref(e, x->a[0]);
		emit(e, " ? ");
		ref(e, x->a[1]);
		emit(e, " : ");
		ref(e, x->a[2]);
		emit(e, ")");
		return;
	}
	const char *s = t == KT_F32 ? sp->f32 : t == KT_F64 ? sp->f64 : sp->i64;
	if (sp->form == SP_NONE || !s) {
		if (!e->failed)
			diag_set(e->d, 3, "cuda backend: unsupported: %s on %s: %s", op_info(op)->name,
				 kt_name(t), sp->why ? sp->why : "no spelling");
		e->failed = true;
		return;
	}
	if (sp->form == SP_INFIX) {
		emit(e, "(");
		ref(e, x->a[0]);
		emit(e, " %s ", s);
		ref(e, x->a[1]);
		emit(e, ")");
	} else if (sp->form == SP_PREFIX) {
		emit(e, "(%s", s);
		ref(e, x->a[0]);
		emit(e, ")");
	} else {
		call(e, s, x, op_info(op)->arity);
	}
}

static void load_text(E *e, const KExpr *x)
{
	Dtype f = e->k->bufs[x->v].fmt;
	const char *pre = f == DT_F16 ? "h2f(" : f == DT_BF16 ? "b2f(" : f == DT_I32 ? "((long long)" : "(";
	emit(e, "%sb%d[", pre, x->v);
	ref(e, x->a[0]);
	emit(e, "])");
}

static void round_text(E *e, const KExpr *x)
{
	Dtype f = (Dtype)x->fmt;
	if (f == DT_F32) {
		emit(e, "((%s)(float)", ctype((KType)x->type));
		ref(e, x->a[0]);
		emit(e, ")");
		return;
	}
	IR_ASSERT(f == DT_F16 || f == DT_BF16);
	emit(e, "((%s)%s(%s((double)", ctype((KType)x->type), f == DT_F16 ? "h2f" : "b2f",
	     f == DT_F16 ? "d2h" : "d2b");
	ref(e, x->a[0]);
	emit(e, ")))");
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
	emit(e, "const %s t%d = ", ctype((KType)x->type), id);
	switch (x->kind) {
	case KX_ELEM: elem(e, x->v, x->a[0]); break;
	case KX_LOAD: load_text(e, x); break;
	case KX_OP: op_text(e, x); break;
	case KX_CVT:
		emit(e, "((%s)", ctype((KType)x->type));
		ref(e, x->a[0]);
		emit(e, ")");
		break;
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

static void store_text(E *e, const KStmt *s)
{
	Dtype f = e->k->bufs[s->v].fmt;
	emit(e, "b%d[", s->v);
	ref(e, s->a);
	emit(e, "] = ");
	switch (f) {
	case DT_F16: emit(e, "d2h((double)"); break;
	case DT_BF16: emit(e, "d2b((double)"); break;
	default: emit(e, "((%s)", store_ctype(f)); break;
	}
	ref(e, s->b);
	emit(e, ");\n");
}

/* The statements of one line: set, store, check, tree. In uniform code of a block kernel,
 * a store or check is thread 0's, and a write of a shared local is thread 0's between
 * barriers. */
static void simple_stmt(E *e, const KStmt *s)
{
	bool uni = e->block && !e->dist;
	bool shw = uni && (s->kind == KS_SET || s->kind == KS_TREE) && shared_var(e, s->v);
	bool one = uni && (shw || s->kind == KS_STORE || s->kind == KS_CHECK);
	if (shw)
		barrier(e);
	int32_t roots[2] = {s->a, s->b};
	bool open = open_stmt(e, roots, 2);
	indent(e);
	if (one)
		emit(e, "if (threadIdx.x == 0) ");
	switch (s->kind) {
	case KS_SET:
		if (s->a >= 0)
			elem(e, s->v, s->a);
		else
			emit(e, "v%d", s->v);
		emit(e, " = ");
		ref(e, s->b);
		emit(e, ";\n");
		break;
	case KS_STORE: store_text(e, s); break;
	case KS_CHECK:
		emit(e, "{ if (!");
		ref(e, s->a);
		emit(e, ") rep(err, %d, ", s->v);
		ref(e, s->b);
		emit(e, "); }\n");
		break;
	case KS_TREE: {
		KType t = e->k->vars[s->c].type;
		Dtype f = (Dtype)s->fmt;
		int fm = f == DT_F16 ? 1 : f == DT_BF16 ? 2 : f == DT_F32 && t == KT_F64 ? 3 : 0;
		bool scr = e->plan->store[s->c] == SC_SCRATCH_T;
		emit(e, "v%d = tree<%s, %d, %d>(v%d + ", s->v, ctype(t), s->op == OP_MUL, fm, s->c);
		if (scr)
			emit(e, "(");
		ref(e, s->a);
		emit(e, scr ? ") * nthr, nthr, " : ", 1LL, ");
		ref(e, s->b);
		emit(e, ");\n");
		break;
	}
	default: IR_ASSERT(!"simple_stmt: not a simple statement");
	}
	close_stmt(e, open);
	e->synced = false;
	if (shw)
		barrier(e);
}

static void body(E *e, int32_t s)
{
	e->ind++;
	e->synced = false;
	stmts(e, s);
	e->ind--;
	e->synced = false;
}

static void loop_stmt(E *e, const KStmt *s)
{
	int32_t roots[2] = {s->a, s->b};
	bool open = open_stmt(e, roots, 2);
	indent(e);
	emit(e, "for (long long v%d = ", s->v);
	ref(e, s->a);
	emit(e, "; v%d < ", s->v);
	ref(e, s->b);
	emit(e, "; v%d++) {\n", s->v);
	body(e, s->body);
	line(e, "}");
	close_stmt(e, open);
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
	e->synced = false;
	stmts(e, s->body);
	close_stmt(e, open);
	e->ind--;
	line(e, "}");
	e->synced = false;
}

static void if_stmt(E *e, const KStmt *s)
{
	bool open = open_stmt(e, &s->a, 1);
	indent(e);
	emit(e, "if (");
	ref(e, s->a);
	emit(e, ") {\n");
	body(e, s->body);
	if (s->body2 > 0) {
		line(e, "} else {");
		body(e, s->body2);
	}
	line(e, "}");
	close_stmt(e, open);
}

static void decl_stmt(E *e, const KStmt *s)
{
	const KVar *v = &e->k->vars[s->v];
	switch (e->plan->store[s->v]) {
	case SC_REG: line(e, "%s v%d;", ctype(v->type), s->v); return;
	case SC_LOCAL: line(e, "%s v%d[%lld];", ctype(v->type), s->v, (long long)v->n); return;
	default: return;   /* declared at the kernel's entry */
	}
}

/* A par nest dealt to the block's threads: the collapsed iteration q of n0 * n1 * ...
 * (last loop fastest) goes to thread q mod W. The bounds do not depend on the nest's own
 * variables (plan.c), so they are evaluated once, before it. */
static void nest_stmt(E *e, int32_t id)
{
	const Kernels *k = e->k;
	int d = e->plan->depth[id];
	const KStmt *L[64];
	L[0] = &k->s[id];
	for (int i = 1; i < d; i++)
		L[i] = &k->s[L[i - 1]->body];
	barrier(e);
	line(e, "{");
	e->ind++;
	e->stamp++;
	for (int i = 0; i < d; i++) {
		temps(e, L[i]->a);
		temps(e, L[i]->b);
	}
	for (int i = 0; i < d; i++) {
		indent(e);
		emit(e, "const long long n%d_%d = max_i(", id, i);
		ref(e, L[i]->b);
		emit(e, " - ");
		ref(e, L[i]->a);
		emit(e, ", 0LL);\n");
	}
	indent(e);
	emit(e, "const long long n%d = n%d_0", id, id);
	for (int i = 1; i < d; i++)
		emit(e, " * n%d_%d", id, i);
	emit(e, ";\n");
	line(e, "for (long long q%d = threadIdx.x; q%d < n%d; q%d += %d) {", id, id, id, id,
	     e->plan->threads);
	e->ind++;
	line(e, "long long r%d = q%d;", id, id);
	line(e, "(void)r%d;", id);
	for (int i = d - 1; i >= 0; i--) {
		indent(e);
		emit(e, "const long long v%d = ", L[i]->v);
		ref(e, L[i]->a);
		if (i > 0) {
			emit(e, " + r%d %% n%d_%d;\n", id, id, i);
			line(e, "r%d /= n%d_%d;", id, id, i);
		} else {
			emit(e, " + r%d;\n", id);
		}
	}
	e->dist = true;
	stmts(e, L[d - 1]->body);
	e->dist = false;
	e->ind--;
	line(e, "}");
	e->ind--;
	line(e, "}");
	e->synced = false;
	barrier(e);
}

/* A split reduction: thread s mod W computes partial s: its chunks, then its tail term. */
static void split_stmt(E *e, int32_t id)
{
	const Kernels *k = e->k;
	const KStmt *c = &k->s[id], *in = &k->s[c->body], *tl = &k->s[c->next];
	int W = e->plan->threads;
	barrier(e);
	line(e, "{");
	e->ind++;
	e->stamp++;
	temps(e, c->a);
	temps(e, c->b);
	temps(e, tl->b);
	line(e, "for (long long v%d = threadIdx.x; v%d < %lldLL; v%d += %d) {", in->v, in->v,
	     (long long)e->plan->split, in->v, W);
	e->ind++;
	indent(e);
	emit(e, "for (long long v%d = ", c->v);
	ref(e, c->a);
	emit(e, "; v%d < ", c->v);
	ref(e, c->b);
	emit(e, "; v%d++) {\n", c->v);
	e->dist = true;
	body(e, in->body);
	line(e, "}");
	e->ind--;
	line(e, "}");
	indent(e);
	emit(e, "for (long long v%d = threadIdx.x; v%d < ", tl->v, tl->v);
	ref(e, tl->b);
	emit(e, "; v%d += %d) {\n", tl->v, W);
	body(e, tl->body);
	line(e, "}");
	e->dist = false;
	e->ind--;
	line(e, "}");
	e->synced = false;
	barrier(e);
}

static void stmt(E *e, int32_t id)
{
	const KStmt *s = &e->k->s[id];
	if (e->block && !e->dist && e->plan->mark[id] == CD_NEST) {
		nest_stmt(e, id);
		return;
	}
	if (e->block && !e->dist && e->plan->mark[id] == CD_SPLIT) {
		split_stmt(e, id);
		return;
	}
	switch (s->kind) {
	case KS_LOOP: loop_stmt(e, s); break;
	case KS_WHILE: while_stmt(e, s); break;
	case KS_IF: if_stmt(e, s); break;
	case KS_DECL: decl_stmt(e, s); return;
	default: simple_stmt(e, s); return;
	}
	e->synced = false;
}

static void stmts(E *e, int32_t s)
{
	for (; s > 0; s = e->k->s[s].next)
		if (!(e->block && !e->dist && e->plan->mark[s] == CD_SPLIT_TAIL))
			stmt(e, s);
}

/* ------------------------------------------------------------ kernels */

/* Marks the buffers kernel statements s.. load (1) and store (2). */
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
		scan(k, t->body, use);
		scan(k, t->body2, use);
	}
}

/* The signature: the error slot, the scratch area, then every buffer in program order. */
static void signature(E *e, int i)
{
	const Kernels *k = e->k;
	uint8_t *use = calloc((size_t)k->nbufs + 1, 1);
	IR_ASSERT(use);
	scan(k, k->k[i].body, use);
	line(e, "extern \"C\" __global__ void __launch_bounds__(%d) k%d(u64 *__restrict__ err, "
	     "char *__restrict__ scratch%s", e->plan->threads, i, k->nbufs ? "," : ")");
	for (int b = 0; b < k->nbufs; b++) {
		const char *ct = store_ctype(k->bufs[b].fmt), *end = b + 1 < k->nbufs ? "," : ")";
		if (use[b] == 0)
			line(e, "\tconst void *b%d%s", b, end);
		else if (use[b] == 1)
			line(e, "\tconst %s *__restrict__ b%d%s", ct, b, end);
		else
			line(e, "\t%s *__restrict__ b%d%s", ct, b, end);
	}
	free(use);
}

/* Shared and scratch locals, declared at the kernel's entry. */
static void entry_locals(E *e)
{
	const Kernels *k = e->k;
	const CuPlan *p = e->plan;
	for (int32_t v = 0; v < k->nvars; v++) {
		const KVar *V = &k->vars[v];
		const char *ct = ctype(V->type);
		int64_t bytes = (V->n ? V->n : 1) * cuda_type_bytes(V->type);
		switch (p->store[v]) {
		case SC_SHARED:
			if (V->n)
				line(e, "__shared__ %s v%d[%lld];", ct, v, (long long)V->n);
			else
				line(e, "__shared__ %s v%d;", ct, v);
			break;
		case SC_SCRATCH_T:
			line(e, "%s *const v%d = (%s *)(scratch + %lldLL * nthr) + gtid;", ct, v, ct,
			     (long long)p->off[v]);
			break;
		case SC_SCRATCH_B:
			line(e, "%s *const v%d = (%s *)(scratch + %lldLL * nthr + %lldLL * (long long)gridDim.x"
			     " + %lldLL * (long long)blockIdx.x);", ct, v, ct, (long long)p->thread_bytes,
			     (long long)p->off[v], (long long)((bytes + 7) & ~(int64_t)7));
			break;
		default:
			break;
		}
	}
}

static void kernel(E *e, int i)
{
	const Kernels *k = e->k;
	const Kernel *kn = &k->k[i];
	const Graph *g = k->g;
	const CuPlan *p = e->plan;
	e->block = p->mode == CM_BLOCK;
	e->dist = false;
	e->synced = false;
	line(e, "/* %s%s: %s, %d threads a block */", g->tensors[g->defs[kn->def].out[0]].name,
	     kn->hoisted ? " (reduction outside the tile's point loops)" : "",
	     e->block ? "a block per item" : "a thread per item", p->threads);
	signature(e, i);
	line(e, "{");
	e->ind++;
	line(e, "const long long nthr = (long long)gridDim.x * blockDim.x;");
	line(e, "const long long gtid = (long long)blockIdx.x * blockDim.x + threadIdx.x;");
	line(e, "(void)nthr;");
	line(e, "(void)gtid;");
	line(e, "(void)err;");
	line(e, "(void)scratch;");
	entry_locals(e);
	if (e->block)
		line(e, "for (long long it = blockIdx.x; it < %lldLL; it += gridDim.x) {", (long long)kn->nitems);
	else
		line(e, "for (long long it = gtid; it < %lldLL; it += nthr) {", (long long)kn->nitems);
	e->ind++;
	line(e, "long long q = it;");
	line(e, "(void)q;");
	for (int d = kn->npar - 1; d >= 0; d--) {
		const KPar *P = &kn->par[d];
		int64_t nt = (P->extent + P->tile - 1) / P->tile;
		if (nt == 1) {
			line(e, "const long long v%d = 0;", P->origin);
			continue;
		}
		line(e, "const long long v%d = (q %% %lldLL) * %lldLL;", P->origin, (long long)nt,
		     (long long)P->tile);
		line(e, "q /= %lldLL;", (long long)nt);
	}
	e->synced = true;   /* nothing shared is in use yet, or the last item's barrier */
	stmts(e, kn->body);
	if (e->block)
		barrier(e);   /* the next item reuses the shared locals */
	e->ind--;
	line(e, "}");
	e->ind--;
	line(e, "}");
	line(e, "%s", "");
}

#define OPT_LINE(s) " " s

static void prologue(E *e)
{
	const Kernels *k = e->k;
	const Graph *g = k->g;
	const char *mode = getenv("ASSAY_CUDA_MODE");
	line(e, "/* Generated by assay's cuda backend from graph %s. Do not edit.", g->name ? g->name : "(unnamed)");
	line(e, " * NVRTC options:%s", CU_NVRTC_OPTS(OPT_LINE));
	if (mode && *mode)
		line(e, " * ASSAY_CUDA_MODE=%s", mode);
	char *sch = sched_text(g, &k->sched);
	if (sch[0]) {
		line(e, " * Schedule:");
		for (char *p = sch, *nl; *p; p = nl + 1) {
			nl = strchr(p, '\n');
			if (!nl)
				nl = p + strlen(p) - 1;
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
	for (size_t i = 0; i < ARRAY_LEN(helpers); i++)
		emit(e, "%s", helpers[i]);
	line(e, "%s", "");
}

char *cuda_emit(const Kernels *k, Diag *d)
{
	E e = {0};
	e.k = k;
	e.d = d;
	e.mark = calloc((size_t)k->nx + 1, sizeof *e.mark);
	IR_ASSERT(e.mark);
	prologue(&e);
	for (int i = 0; i < k->nk && !e.failed; i++) {
		CuPlan p;
		cuda_plan(k, i, &p);
		e.plan = &p;
		kernel(&e, i);
		cuda_plan_free(&p);
	}
	free(e.mark);
	if (e.failed) {
		free(e.buf);
		return NULL;
	}
	return e.buf;
}
