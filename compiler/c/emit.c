/* compiler/c/emit.c: the C backend's emitter: kernel IR -> one C11 translation unit.
 *
 * All text goes through one emitter (a growable buffer with an indentation level) and
 * its printf-checked emit(); the output is a deterministic function of the kernel IR:
 * temporaries are named after expression ids (t12), variables after variable ids (v3),
 * buffers after buffer ids (b0). Each statement's expressions become one `const`
 * temporary per computing node (constants and variables are written in place), fully
 * parenthesised, with explicit casts; a statement that needs temporaries is wrapped in its
 * own block, so temporaries never outlive the statement they belong to.
 *
 * Numerics: f32 and f64 arithmetic is C's float and double (FLT_EVAL_METHOD 0 on x86-64
 * and AArch64), compiled without contraction (run.c: -ffp-contract=off), so every
 * operation rounds once, as the emulator assumes. f16 and bf16 live in uint16_t and are
 * converted by the helpers below with integer operations (round to nearest even,
 * subnormals, overflow to inf, NaN kept NaN). Ops whose ops.def C spelling is NULL are
 * helpers here: floor division and non-negative remainder, rsqrt = 1/sqrt (two roundings),
 * sigmoid = 1/(1+exp(-x)), IEEE 754-2019 maximum/minimum; the math library supplies the
 * rest (float versions with an `f` suffix; their accuracy is glibc's).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "c.h"

static const char *const helpers[] = {
	"static inline float h2f(uint16_t h)\n"
	"{\n"
	"\tuint32_t s = (uint32_t)(h & 0x8000u) << 16, e = (uint32_t)(h >> 10) & 0x1fu, m = h & 0x3ffu, x;\n"
	"\tfloat f;\n"
	"\tif (e == 0) {\n"
	"\t\tf = (float)m * 0x1p-24f;\n"
	"\t\treturn s ? -f : f;\n"
	"\t}\n"
	"\tx = e == 31 ? (s | 0x7f800000u | (m << 13)) : (s | ((e + 112u) << 23) | (m << 13));\n"
	"\tmemcpy(&f, &x, sizeof f);\n"
	"\treturn f;\n"
	"}\n",
	"static inline float b2f(uint16_t h)\n"
	"{\n"
	"\tuint32_t x = (uint32_t)h << 16;\n"
	"\tfloat f;\n"
	"\tmemcpy(&f, &x, sizeof f);\n"
	"\treturn f;\n"
	"}\n",
	"/* double -> f16 bits, round to nearest even (every float is a double: no double rounding) */\n"
	"static inline uint16_t d2h(double x)\n"
	"{\n"
	"\tuint64_t b, a;\n"
	"\tdouble ax;\n"
	"\tmemcpy(&b, &x, sizeof b);\n"
	"\tuint16_t s = (uint16_t)((b >> 48) & 0x8000u);\n"
	"\ta = b & 0x7fffffffffffffffull;\n"
	"\tif (a > 0x7ff0000000000000ull)\n"
	"\t\treturn (uint16_t)(s | 0x7e00u | ((a >> 42) & 0x1ffu));\n"
	"\tif (a >= 0x40effe0000000000ull)   /* 65520 and up: inf */\n"
	"\t\treturn (uint16_t)(s | 0x7c00u);\n"
	"\tif (a >= 0x3f10000000000000ull) {   /* 2^-14 and up: normal */\n"
	"\t\tuint64_t r = a - (1008ull << 52);\n"
	"\t\tr += (1ull << 41) - 1 + ((r >> 42) & 1);\n"
	"\t\treturn (uint16_t)(s | (r >> 42));\n"
	"\t}\n"
	"\tmemcpy(&ax, &a, sizeof ax);\n"
	"\treturn (uint16_t)(s | (uint16_t)(((ax + 0x1p28) - 0x1p28) * 0x1p24));\n"
	"}\n",
	"/* double -> bf16 bits, round to nearest even */\n"
	"static inline uint16_t d2b(double x)\n"
	"{\n"
	"\tuint64_t b, a;\n"
	"\tdouble ax;\n"
	"\tmemcpy(&b, &x, sizeof b);\n"
	"\tuint16_t s = (uint16_t)((b >> 48) & 0x8000u);\n"
	"\ta = b & 0x7fffffffffffffffull;\n"
	"\tif (a > 0x7ff0000000000000ull)\n"
	"\t\treturn (uint16_t)(s | 0x7fc0u | ((a >> 45) & 0x3fu));\n"
	"\tif (a >= 0x47eff00000000000ull)\n"
	"\t\treturn (uint16_t)(s | 0x7f80u);\n"
	"\tif (a >= 0x3810000000000000ull) {   /* 2^-126 and up: normal */\n"
	"\t\tuint64_t r = a - (896ull << 52);\n"
	"\t\tr += (1ull << 44) - 1 + ((r >> 45) & 1);\n"
	"\t\treturn (uint16_t)(s | (r >> 45));\n"
	"\t}\n"
	"\tmemcpy(&ax, &a, sizeof ax);\n"
	"\treturn (uint16_t)(s | (uint16_t)(((ax + 0x1p-81) - 0x1p-81) * 0x1p133));\n"
	"}\n",
	"static inline int64_t fdiv_i(int64_t a, int64_t b)\n"
	"{\n"
	"\tif (b == 0)\n"
	"\t\treturn 0;\n"
	"\tint64_t q = a / b;\n"
	"\treturn (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;\n"
	"}\n",
	"static inline int64_t fmod_i(int64_t a, int64_t b)\n"
	"{\n"
	"\tif (b == 0)\n"
	"\t\treturn 0;\n"
	"\tint64_t r = a % b;\n"
	"\treturn r < 0 ? r + (b < 0 ? -b : b) : r;\n"
	"}\n",
	"static inline int64_t abs_i(int64_t a) { return a < 0 ? -a : a; }\n"
	"static inline int64_t max_i(int64_t a, int64_t b) { return a > b ? a : b; }\n"
	"static inline int64_t min_i(int64_t a, int64_t b) { return a < b ? a : b; }\n"
	"/* IEEE 754-2019 maximum and minimum: NaN if either is NaN, -0 below +0 */\n"
	"static inline float max_f(float a, float b)\n"
	"{\n"
	"\tif (a != a || b != b)\n"
	"\t\treturn a + b;\n"
	"\tif (a == b)\n"
	"\t\treturn signbit(a) ? b : a;\n"
	"\treturn a > b ? a : b;\n"
	"}\n",
	"static inline float min_f(float a, float b)\n"
	"{\n"
	"\tif (a != a || b != b)\n"
	"\t\treturn a + b;\n"
	"\tif (a == b)\n"
	"\t\treturn signbit(a) ? a : b;\n"
	"\treturn a < b ? a : b;\n"
	"}\n",
	"static inline double max_d(double a, double b)\n"
	"{\n"
	"\tif (a != a || b != b)\n"
	"\t\treturn a + b;\n"
	"\tif (a == b)\n"
	"\t\treturn signbit(a) ? b : a;\n"
	"\treturn a > b ? a : b;\n"
	"}\n",
	"static inline double min_d(double a, double b)\n"
	"{\n"
	"\tif (a != a || b != b)\n"
	"\t\treturn a + b;\n"
	"\tif (a == b)\n"
	"\t\treturn signbit(a) ? a : b;\n"
	"\treturn a < b ? a : b;\n"
	"}\n",
	"static inline float rsqrt_f(float x) { return 1.0f / sqrtf(x); }\n"
	"static inline double rsqrt_d(double x) { return 1.0 / sqrt(x); }\n"
	"static inline float sigmoid_f(float x) { return 1.0f / (1.0f + expf(-x)); }\n"
	"static inline double sigmoid_d(double x) { return 1.0 / (1.0 + exp(-x)); }\n"
	"/* pairwise trees: the left half is the first floor(n/2) terms (n >= 1) */\n"
	"static float tree_add_f(const float *t, int64_t n)\n"
	"{\n"
	"\treturn n == 1 ? t[0] : tree_add_f(t, n / 2) + tree_add_f(t + n / 2, n - n / 2);\n"
	"}\n",
	"static double tree_add_d(const double *t, int64_t n)\n"
	"{\n"
	"\treturn n == 1 ? t[0] : tree_add_d(t, n / 2) + tree_add_d(t + n / 2, n - n / 2);\n"
	"}\n",
	"static float tree_mul_f(const float *t, int64_t n)\n"
	"{\n"
	"\treturn n == 1 ? t[0] : tree_mul_f(t, n / 2) * tree_mul_f(t + n / 2, n - n / 2);\n"
	"}\n",
	"static double tree_mul_d(const double *t, int64_t n)\n"
	"{\n"
	"\treturn n == 1 ? t[0] : tree_mul_d(t, n / 2) * tree_mul_d(t + n / 2, n - n / 2);\n"
	"}\n",
	"/* f16 and bf16 arithmetic: f32 operations rounded (exact for + - * / sqrt) */\n"
	"static float tree_add_h(const float *t, int64_t n)\n"
	"{\n"
	"\treturn n == 1 ? t[0] : h2f(d2h((double)(tree_add_h(t, n / 2) + tree_add_h(t + n / 2, n - n / 2))));\n"
	"}\n"
	"static float tree_mul_h(const float *t, int64_t n)\n"
	"{\n"
	"\treturn n == 1 ? t[0] : h2f(d2h((double)(tree_mul_h(t, n / 2) * tree_mul_h(t + n / 2, n - n / 2))));\n"
	"}\n"
	"static float tree_add_b(const float *t, int64_t n)\n"
	"{\n"
	"\treturn n == 1 ? t[0] : b2f(d2b((double)(tree_add_b(t, n / 2) + tree_add_b(t + n / 2, n - n / 2))));\n"
	"}\n"
	"static float tree_mul_b(const float *t, int64_t n)\n"
	"{\n"
	"\treturn n == 1 ? t[0] : b2f(d2b((double)(tree_mul_b(t, n / 2) * tree_mul_b(t + n / 2, n - n / 2))));\n"
	"}\n",
	"/* the first error wins; the value is written after the site is claimed */\n"
	"static void rep(int64_t *err, int64_t site, int64_t v)\n"
	"{\n"
	"\tint64_t none = 0;\n"
	"\tif (__atomic_compare_exchange_n(&err[0], &none, site + 1, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED))\n"
	"\t\t__atomic_store_n(&err[1], v, __ATOMIC_RELAXED);\n"
	"}\n",
	"static inline int64_t chk(int64_t *err, int64_t v, int64_t lo, int64_t hi, int g, int64_t site)\n"
	"{\n"
	"\tif (v >= lo && v < hi)\n"
	"\t\treturn v;\n"
	"\tif (g)\n"
	"\t\trep(err, site, v);\n"
	"\treturn lo;\n"
	"}\n",
};

typedef struct {
	char *buf;
	size_t len, cap;
	int ind;
	const Kernels *k;
	uint32_t *mark;    /* per expression: the statement stamp it was emitted in */
	uint32_t stamp;
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

/* One indented line. */
static void line(E *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void line(E *e, const char *fmt, ...)
{
	for (int i = 0; i < e->ind; i++)
		emit(e, "\t");
	va_list ap;
	va_start(ap, fmt);
	emitv(e, fmt, ap);
	va_end(ap);
	emit(e, "\n");
}

/* Indentation for a line built piece by piece. */
static void indent(E *e)
{
	for (int i = 0; i < e->ind; i++)
		emit(e, "\t");
}

static const char *ctype(KType t)
{
	static const char *names[] = {[KT_BOOL] = "int", [KT_INT] = "int64_t", [KT_F32] = "float",
				      [KT_F64] = "double"};
	_Static_assert(ARRAY_LEN(names) == KT__COUNT, "one C type per KType");
	return names[t];
}

static const char *store_ctype(Dtype f)
{
	switch (f) {
	case DT_F64: return "double";
	case DT_F32: return "float";
	case DT_I32: return "int32_t";
	default: return "uint16_t";
	}
}

/* ------------------------------------------------------------ expressions */

static bool leaf(const KExpr *x)
{
	return x->kind == KX_FCONST || x->kind == KX_ICONST || x->kind == KX_VAR;
}

/* Writes the C text that denotes expression id (a constant, a variable or a temporary). */
static void ref(E *e, int32_t id)
{
	const KExpr *x = &e->k->x[id];
	if (x->kind == KX_VAR) {
		emit(e, "v%d", x->v);
	} else if (x->kind == KX_ICONST) {
		if (x->i == INT64_MIN)
			emit(e, "INT64_MIN");
		else if (x->i == INT64_MAX)
			emit(e, "INT64_MAX");
		else
			emit(e, "%sINT64_C(%lld)%s", x->i < 0 ? "(" : "", (long long)x->i, x->i < 0 ? ")" : "");
	} else if (x->kind == KX_FCONST) {
		const char *suf = x->type == KT_F32 ? "f" : "";
		if (isnan(x->f))
			emit(e, "%s", x->type == KT_F32 ? "NAN" : "((double)NAN)");
		else if (isinf(x->f))
			emit(e, "%s%s%s", x->f < 0 ? "(-" : "",
			     x->type == KT_F32 ? "INFINITY" : "((double)INFINITY)", x->f < 0 ? ")" : "");
		else if (signbit(x->f))
			emit(e, "(%a%s)", x->f, suf);
		else
			emit(e, "%a%s", x->f, suf);
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
	switch (op) {
	case OP_SELECT:
		emit(e, "(");
		ref(e, x->a[0]);
		emit(e, " ? ");
		ref(e, x->a[1]);
		emit(e, " : ");
		ref(e, x->a[2]);
		emit(e, ")");
		return;
	case OP_IDIV: call(e, "fdiv_i", x, 2); return;
	case OP_MOD: call(e, "fmod_i", x, 2); return;
	case OP_MAX: case OP_MIN: case OP_RSQRT: case OP_SIGMOID:
		snprintf(fn, sizeof fn, "%s%s", op == OP_MAX ? "max" : op == OP_MIN ? "min" :
			 op == OP_RSQRT ? "rsqrt" : "sigmoid", sfx);
		call(e, fn, x, oi->arity);
		return;
	case OP_ABS:
		if (t == KT_INT) {
			call(e, "abs_i", x, 1);
			return;
		}
		break;
	default:
		break;
	}
	if (!oi->c) {
		diag_set(e->d, 3, "internal: the c backend has no spelling for %s", oi->name);
		e->failed = true;
		return;
	}
	if (oi->flags & OPF_INFIX) {
		emit(e, "(");
		ref(e, x->a[0]);
		emit(e, " %s ", oi->c);
		ref(e, x->a[1]);
		emit(e, ")");
	} else if (oi->flags & OPF_PREFIX) {
		emit(e, "(%s", oi->c);
		ref(e, x->a[0]);
		emit(e, ")");
	} else {
		snprintf(fn, sizeof fn, "%s%s", oi->c, t == KT_F32 ? "f" : "");
		call(e, fn, x, oi->arity);
	}
}

static void load_text(E *e, const KExpr *x)
{
	Dtype f = e->k->bufs[x->v].fmt;
	const char *pre = f == DT_F16 ? "h2f(" : f == DT_BF16 ? "b2f(" : f == DT_I32 ? "((int64_t)" : "(";
	emit(e, "%sb%d[", pre, x->v);
	ref(e, x->a[0]);
	emit(e, "])");
}

static void round_text(E *e, const KExpr *x)
{
	Dtype f = (Dtype)x->fmt;
	bool dbl = x->type == KT_F64;
	if (f == DT_F32) {
		emit(e, "((double)(float)");
		ref(e, x->a[0]);
		emit(e, ")");
		return;
	}
	IR_ASSERT(f == DT_F16 || f == DT_BF16);
	emit(e, "%s%s(%s(", dbl ? "(double)" : "", f == DT_F16 ? "h2f" : "b2f",
	     f == DT_F16 ? "d2h" : "d2b");
	emit(e, "(double)");
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
	emit(e, "const %s t%d = ", ctype((KType)x->type), id);
	switch (x->kind) {
	case KX_ELEM:
		emit(e, "v%d[", x->v);
		ref(e, x->a[0]);
		emit(e, "]");
		break;
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

static void loop_stmt(E *e, const KStmt *s)
{
	int32_t roots[2] = {s->a, s->b};
	bool open = open_stmt(e, roots, 2);
	indent(e);
	emit(e, "for (int64_t v%d = ", s->v);
	ref(e, s->a);
	emit(e, "; v%d < ", s->v);
	ref(e, s->b);
	emit(e, "; v%d++) {\n", s->v);
	e->ind++;
	stmts(e, s->body);
	e->ind--;
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
	if (v->n > C_HEAP_LOCAL)
		return;   /* allocated at the kernel's entry */
	if (v->n)
		line(e, "%s v%d[%lld];", ctype(v->type), s->v, (long long)v->n);
	else
		line(e, "%s v%d;", ctype(v->type), s->v);
}

/* The statements of one line: set, store, check, tree. */
static void simple_stmt(E *e, const KStmt *s)
{
	int32_t roots[2] = {s->a, s->b};
	bool open = open_stmt(e, roots, 2);
	indent(e);
	switch (s->kind) {
	case KS_SET:
		emit(e, "v%d", s->v);
		if (s->a >= 0) {
			emit(e, "[");
			ref(e, s->a);
			emit(e, "]");
		}
		emit(e, " = ");
		ref(e, s->b);
		emit(e, ";\n");
		break;
	case KS_STORE: store_text(e, s); break;
	case KS_CHECK:
		emit(e, "if (!");
		ref(e, s->a);
		emit(e, ") rep(err, %d, ", s->v);
		ref(e, s->b);
		emit(e, ");\n");
		break;
	case KS_TREE:
		emit(e, "v%d = tree_%s_%s(&v%d[", s->v, s->op == OP_MUL ? "mul" : "add",
		     s->fmt == DT_F64 ? "d" : s->fmt == DT_F16 ? "h" : s->fmt == DT_BF16 ? "b" : "f",
		     s->c);
		ref(e, s->a);
		emit(e, "], ");
		ref(e, s->b);
		emit(e, ");\n");
		break;
	default: IR_ASSERT(!"simple_stmt: not a simple statement");
	}
	close_stmt(e, open);
}

static void stmt(E *e, const KStmt *s)
{
	switch (s->kind) {
	case KS_LOOP: loop_stmt(e, s); return;
	case KS_WHILE: while_stmt(e, s); return;
	case KS_IF: if_stmt(e, s); return;
	case KS_DECL: decl_stmt(e, s); return;
	default: simple_stmt(e, s); return;
	}
}

static void stmts(E *e, int32_t s)
{
	for (; s > 0; s = e->k->s[s].next)
		stmt(e, &e->k->s[s]);
}

/* ------------------------------------------------------------ kernels */

/* Marks the buffers kernel statements s.. load (1) and store (2), and the heap locals. */
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

static void scan(const Kernels *k, int32_t s, uint8_t *use, uint8_t *heap)
{
	for (; s > 0; s = k->s[s].next) {
		const KStmt *t = &k->s[s];
		scan_expr(k, t->a, use);
		scan_expr(k, t->b, use);
		if (t->kind == KS_STORE)
			use[t->v] |= 2;
		if (t->kind == KS_DECL && k->vars[t->v].n > C_HEAP_LOCAL)
			heap[t->v] = 1;
		scan(k, t->body, use, heap);
		scan(k, t->body2, use, heap);
	}
}

static void kernel(E *e, int i)
{
	const Kernels *k = e->k;
	const Kernel *kn = &k->k[i];
	const Graph *g = k->g;
	uint8_t *use = calloc((size_t)k->nbufs + 1, 1), *heap = calloc((size_t)k->nvars + 1, 1);
	IR_ASSERT(use && heap);
	scan(k, kn->body, use, heap);
	line(e, "/* %s%s */", g->tensors[g->defs[kn->def].out[0]].name,
	     kn->hoisted ? ": reduction outside the tile's point loops" : "");
	line(e, "static void k%d(void *const *buf, int64_t *err, int64_t t0, int64_t t1)", i);
	line(e, "{");
	e->ind++;
	line(e, "(void)err;");
	for (int b = 0; b < k->nbufs; b++) {
		const char *ct = store_ctype(k->bufs[b].fmt);
		if (use[b] == 1)
			line(e, "const %s *restrict b%d = (const %s *)buf[%d];", ct, b, ct, b);
		else if (use[b])
			line(e, "%s *restrict b%d = (%s *)buf[%d];", ct, b, ct, b);
	}
	for (int v = 0; v < k->nvars; v++)
		if (heap[v])
			line(e, "%s *v%d = (%s *)malloc(sizeof(%s) * %lld);", ctype(k->vars[v].type), v,
			     ctype(k->vars[v].type), ctype(k->vars[v].type), (long long)k->vars[v].n);
	line(e, "for (int64_t it = t0; it < t1; it++) {");
	e->ind++;
	line(e, "int64_t q = it;");
	line(e, "(void)q;");
	for (int p = kn->npar - 1; p >= 0; p--) {
		const KPar *P = &kn->par[p];
		int64_t nt = (P->extent + P->tile - 1) / P->tile;
		if (nt == 1) {
			line(e, "const int64_t v%d = 0;", P->origin);
			continue;
		}
		line(e, "const int64_t v%d = (q %% %lld) * %lld;", P->origin, (long long)nt,
		     (long long)P->tile);
		line(e, "q /= %lld;", (long long)nt);
	}
	stmts(e, kn->body);
	e->ind--;
	line(e, "}");
	for (int v = 0; v < k->nvars; v++)
		if (heap[v])
			line(e, "free(v%d);", v);
	e->ind--;
	line(e, "}");
	line(e, "%s", "");
	free(use);
	free(heap);
}

static void prologue(E *e)
{
	const Kernels *k = e->k;
	const Graph *g = k->g;
	line(e, "/* Generated by assay's c backend from graph %s. Do not edit.", g->name ? g->name : "(unnamed)");
	line(e, " * Compile: cc %s", C_CFLAGS);
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
	line(e, "#include <math.h>");
	line(e, "#include <stdint.h>");
	line(e, "#include <stdlib.h>");
	line(e, "#include <string.h>");
	line(e, "%s", "");
	emit(e, "%s", C_ABI(C_TEXT));
	line(e, "%s", "");
	for (size_t i = 0; i < ARRAY_LEN(helpers); i++)
		emit(e, "%s", helpers[i]);
	line(e, "%s", "");
}

char *c_emit(const Kernels *k, Diag *d)
{
	E e = {0};
	e.k = k;
	e.d = d;
	e.mark = calloc((size_t)k->nx + 1, sizeof *e.mark);
	IR_ASSERT(e.mark);
	prologue(&e);
	for (int i = 0; i < k->nk; i++)
		kernel(&e, i);
	line(&e, "static const AssayKernel kernels[%d] = {", k->nk > 0 ? k->nk : 1);
	for (int i = 0; i < k->nk; i++)
		line(&e, "\t{k%d, %lld, \"%s\"},", i, (long long)k->k[i].nitems,
		     k->g->tensors[k->g->defs[k->k[i].def].out[0]].name);
	if (k->nk == 0)
		line(&e, "\t{0, 0, 0},");
	line(&e, "};");
	line(&e, "const AssayProgram assay_program = {%d, %d, kernels};", C_ABI_VERSION, k->nk);
	free(e.mark);
	if (e.failed) {
		free(e.buf);
		return NULL;
	}
	return e.buf;
}
