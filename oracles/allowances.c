/* oracles/allowances.c: the table of backend allowances (allowances.def) and its lookup.
 *
 * The table is data: one row per function, backend, format and argument domain, each with
 * its source. A lookup gathers the rows of (op, backend, format) whose domain meets the
 * argument range, requires their domains to cover the whole range (a range partly outside
 * every row has no bound: INFINITY), and returns the largest of their bounds.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "bval.h"

static const OrcAllowance table[] = {
#define X(op, be, fmt, ulps, vs, per, abs, dlo, dhi, dabs, src, note) \
	{OP_##op, be, fmt, ulps, vs, per, abs, dlo, dhi, dabs, src, note},
#include "allowances.def"
#undef X
};

/* "emul" first: index 0 is the correctly rounded model of the emulating interpreter. */
static const char *const backends[] = {"emul", "c", "opencl", "vulkan", "wgsl", "cuda"};

/* Formats a backend has no arithmetic for, computed as operations of a wider format whose
 * every result is rounded into the narrow one. + - * / and sqrt stay correctly rounded
 * when the wide precision is at least 2p + 2 (Figueroa 1995); other functions err by the
 * wide format's allowance plus the final rounding. */
static const struct {
	const char *backend;
	Dtype fmt, via;
} vias[] = {
	/* compiler/kir/lower.c (kir.h): f16 and bf16 arithmetic is f32 arithmetic whose every
	 * result is rounded; no backend here uses native half arithmetic (c/, vulkan/,
	 * opencl/, cuda/, wgsl/ emit.c say so), so the table's 16-bit rows, which describe
	 * native half arithmetic, are not used for them */
	{"c", DT_F16, DT_F32}, {"c", DT_BF16, DT_F32},
	{"opencl", DT_F16, DT_F32}, {"opencl", DT_BF16, DT_F32},
	{"vulkan", DT_F16, DT_F32}, {"vulkan", DT_BF16, DT_F32},
	{"wgsl", DT_F16, DT_F32}, {"wgsl", DT_BF16, DT_F32},
	{"cuda", DT_F16, DT_F32}, {"cuda", DT_BF16, DT_F32},
};

/* Functions at an infinite argument (bval.c's rules for definite infinities): where a
 * backend takes their values from C Annex F (F.10: exp, exp2 +inf -> +inf, -inf -> +0;
 * expm1 -inf -> -1; log, log2, log1p, sqrt +inf -> +inf; tanh, erf +-inf -> +-1; the
 * helpers rsqrt = 1/sqrt(x), +inf -> +0, and sigmoid = 1/(1 + exp(-x)), +inf -> 1,
 * -inf -> +0, follow from them), their values there are claimed like any other; a
 * backend absent here (vulkan: GLSL.std.450 and the Vulkan precision table say nothing of
 * infinite arguments; wgsl: WGSL may assume no infinity at all) gets no claim. */
#define FN_ALL (BE_OP(OP_EXP) | BE_OP(OP_EXP2) | BE_OP(OP_EXPM1) | BE_OP(OP_LOG) | \
	BE_OP(OP_LOG2) | BE_OP(OP_LOG1P) | BE_OP(OP_SQRT) | BE_OP(OP_RSQRT) | BE_OP(OP_TANH) | \
	BE_OP(OP_ERF) | BE_OP(OP_SIGMOID))
static const struct {
	const char *backend;
	uint64_t ops;
	const char *source;
} fn_specials[] = {
	{"emul", FN_ALL, "the emulating interpreter: MPFR's functions at +-inf"},
	{"c", FN_ALL, "C11 Annex F F.10 (glibc conforms); rsqrt and sigmoid are c/emit.c's "
		"1/sqrt(x) and 1/(1 + exp(-x))"},
	{"cuda", FN_ALL, "CUDA Math API, each function's special cases (expf(-inf) = +0, "
		"rsqrtf(+inf) = +0, tanhf(+-inf) = +-1, ...); sigmoid is cuda/emit.c's "
		"1/(1 + exp(-x))"},
	{"opencl", FN_ALL & ~BE_OP(OP_RSQRT), "OpenCL C 3.0 'Edge Case Behavior': the math "
		"functions conform to F.9 of C99 TC2 (no -cl-fast-relaxed-math, no "
		"-cl-finite-math-only); sigmoid is prelude.c's 1/(1 + exp(-x)); rsqrt, OpenCL's "
		"own builtin and no C function, lists no value at +inf: not claimed"},
};

uint64_t al_fn_specials(int be)
{
	if (be < 0 || be >= (int)ARRAY_LEN(backends))
		return 0;
	for (size_t i = 0; i < ARRAY_LEN(fn_specials); i++)
		if (strcmp(fn_specials[i].backend, backends[be]) == 0)
			return fn_specials[i].ops;
	return 0;
}

int orc_nallowances(void)
{
	return (int)ARRAY_LEN(table);
}

const OrcAllowance *orc_allowance(int i)
{
	return i >= 0 && i < (int)ARRAY_LEN(table) ? &table[i] : NULL;
}

bool orc_backend_known(const char *backend)
{
	return al_backend(backend) >= 0;
}

int al_backend(const char *name)
{
	if (!name)
		return 0;
	for (size_t i = 0; i < ARRAY_LEN(backends); i++)
		if (strcmp(name, backends[i]) == 0)
			return (int)i;
	return -1;
}

/* The argument range a row's domain is compared with: |x| for DABS rows. */
static void arg_range(const OrcAllowance *r, double xlo, double xhi, double *a, double *b)
{
	if (!r->dabs) {
		*a = xlo;
		*b = xhi;
		return;
	}
	double l = fabs(xlo), h = fabs(xhi);
	*a = xlo <= 0 && xhi >= 0 ? 0 : fmin(l, h);
	*b = fmax(l, h);
}

static double row_bound(const OrcAllowance *r, Dtype f, double xlo, double xhi, double ymax)
{
	double ulps = r->ulps + (r->vs == AL_CR ? 0.5 : 0) + r->per_absx * fmax(fabs(xlo), fabs(xhi));
	double b = r->abs;
	if (ulps > 0) {
		/* a result rounded up into the next binade has twice the ulp */
		double m = ymax * (1 + ldexp(1.0, 1 - dt_info(f)->prec));
		b += ulps * 2 * bv_half_ulp(f, m);
	}
	/* a result that may err past the largest finite value may be infinite: no bound
	 * (Vulkan's exp(88.7228) is 61 ulp below FLT_MAX, within its 3 + 2|x| = 180 ulp) */
	if (isinf(bv_half_ulp(f, ymax + b)))
		return INFINITY;
	return b * INFL;
}

Dtype al_via(int be, Dtype f)
{
	for (size_t i = 0; i < ARRAY_LEN(vias); i++)
		if (be > 0 && vias[i].fmt == f && strcmp(vias[i].backend, backends[be]) == 0)
			return vias[i].via;
	return f;
}

bool al_inherited(int be, Op op, Dtype f)
{
	for (size_t i = 0; be > 0 && i < ARRAY_LEN(table); i++)
		if (table[i].op == op && table[i].fmt == f && table[i].vs == AL_INHERITED &&
		    strcmp(table[i].backend, backends[be]) == 0)
			return true;
	return false;
}

bool al_is_cr(int be, Op op, Dtype f)
{
	if (be == 0 || op == OP_ADD || op == OP_SUB || op == OP_MUL)
		return true;
	const char *name = backends[be];
	for (size_t i = 0; i < ARRAY_LEN(vias); i++)
		if (vias[i].fmt == f && strcmp(vias[i].backend, name) == 0)
			return (op == OP_DIV || op == OP_SQRT) && al_is_cr(be, op, vias[i].via) &&
			       dt_info(vias[i].via)->prec >= 2 * dt_info(f)->prec + 2;
	for (size_t i = 0; i < ARRAY_LEN(table); i++) {
		const OrcAllowance *r = &table[i];
		if (r->op == op && r->fmt == f && strcmp(r->backend, name) == 0 && r->ulps == 0 &&
		    r->vs == AL_CR && r->abs == 0 && r->per_absx == 0 && r->dlo == -INFINITY &&
		    r->dhi == INFINITY)
			return true;
	}
	return false;
}

/* op in format f computed through format w (vias): correctly rounded when the wide
 * operation is and w is wide enough, else the wide bound plus the final rounding. */
static double via_local(int be, Op op, Dtype f, Dtype w, double xlo, double xhi, double ymax)
{
	if (al_is_cr(be, op, f))
		return bv_half_ulp(f, ymax) * INFL;
	bool found;
	double b = al_local(be, op, w, xlo, xhi, ymax, &found);
	if (!found && al_is_cr(be, op, w))
		b = bv_half_ulp(w, ymax);
	else if (!found)
		return INFINITY;
	return (b + bv_half_ulp(f, ymax + b)) * INFL;
}

double al_local(int be, Op op, Dtype f, double xlo, double xhi, double ymax, bool *found)
{
	const char *name = backends[be];
	for (size_t i = 0; i < ARRAY_LEN(vias); i++)
		if (vias[i].fmt == f && strcmp(vias[i].backend, name) == 0) {
			*found = true;
			return via_local(be, op, f, vias[i].via, xlo, xhi, ymax);
		}
	const OrcAllowance *hit[8];
	int nhit = 0;
	*found = false;
	for (size_t i = 0; i < ARRAY_LEN(table); i++) {
		const OrcAllowance *r = &table[i];
		if (r->op != op || r->fmt != f || strcmp(r->backend, name) != 0)
			continue;
		*found = true;
		if (r->vs == AL_INHERITED)
			return INFINITY;   /* the caller composes the formula (al_inherited) */
		double a, b;
		arg_range(r, xlo, xhi, &a, &b);
		if (b >= r->dlo && a <= r->dhi && nhit < (int)ARRAY_LEN(hit))
			hit[nhit++] = r;
	}
	if (nhit == 0)
		return INFINITY;
	/* coverage: from the range's low end, step to the farthest end of a row holding the
	 * current point (closed domains; the rows of one key share DABS) */
	double lo, hi, cur, bound = 0;
	arg_range(hit[0], xlo, xhi, &lo, &hi);
	cur = lo;
	for (int step = 0;; step++) {
		double far = -INFINITY;
		for (int i = 0; i < nhit; i++)
			if (hit[i]->dlo <= cur && cur <= hit[i]->dhi)
				far = fmax(far, hit[i]->dhi);
		if (far < cur || step > nhit)
			return INFINITY;
		if (far >= hi)
			break;
		cur = far;
	}
	for (int i = 0; i < nhit; i++)
		bound = fmax(bound, row_bound(hit[i], f, xlo, xhi, ymax));
	return bound;
}

/* ------------------------------------------------------------ the rows in words */

static void put(char *buf, size_t n, size_t *len, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void put(char *buf, size_t n, size_t *len, const char *fmt, ...)
{
	if (*len >= n)
		return;
	va_list ap;
	va_start(ap, fmt);
	int k = vsnprintf(buf + *len, n - *len, fmt, ap);
	va_end(ap);
	*len = k < 0 ? n : *len + (size_t)k;
}

/* A bound's number: 2^k when it is a power of two, else %g. */
static void put_num(char *buf, size_t n, size_t *len, double v)
{
	int e;
	if (isfinite(v) && v != 0 && fabs(frexp(v, &e)) == 0.5 && (e - 1 < -3 || e - 1 > 10))
		put(buf, n, len, "%s2^%d", v < 0 ? "-" : "", e - 1);
	else
		put(buf, n, len, "%g", v);
}

static void row_text(const OrcAllowance *r, char *buf, size_t n, size_t *len)
{
	if (r->vs == AL_INHERITED) {
		put(buf, n, len, "%s", r->op == OP_POW ? "exp2(y*log2(x)) under their rows" :
		    "inherited from a formula");
		return;
	}
	bool ulp = r->ulps > 0 || r->per_absx > 0 || r->vs == AL_CR;
	if (r->ulps == 0 && r->per_absx == 0 && r->vs == AL_CR && r->abs == 0)
		put(buf, n, len, "cr");
	else if (ulp) {
		put(buf, n, len, "%g", r->ulps);
		if (r->per_absx > 0)
			put(buf, n, len, "+%g|x|", r->per_absx);
		put(buf, n, len, " ulp%s", r->vs == AL_CR ? " of cr" : "");
	}
	if (r->abs > 0) {
		put(buf, n, len, "%sabs ", ulp ? " + " : "");
		put_num(buf, n, len, r->abs);
	}
	if (r->dlo > -INFINITY || r->dhi < INFINITY) {
		put(buf, n, len, " on %s[", r->dabs ? "|x| in " : "");
		put_num(buf, n, len, r->dlo);
		put(buf, n, len, ",");
		put_num(buf, n, len, r->dhi);
		put(buf, n, len, "]");
	}
}

static void key_text(int be, Op op, Dtype f, char *buf, size_t n, size_t *len)
{
	const char *name = backends[be];
	if (be == 0) {
		put(buf, n, len, "cr");
		return;
	}
	for (size_t i = 0; i < ARRAY_LEN(vias); i++)
		if (vias[i].fmt == f && strcmp(vias[i].backend, name) == 0) {
			if (al_is_cr(be, op, f)) {
				put(buf, n, len, "cr (%s operation)", dt_name(vias[i].via));
				return;
			}
			char wide[200] = "";
			size_t wl = 0;
			key_text(be, op, vias[i].via, wide, sizeof wide, &wl);
			if (strcmp(wide, "none") == 0)
				put(buf, n, len, "none");
			else
				put(buf, n, len, "via %s: %s + rounding", dt_name(vias[i].via), wide);
			return;
		}
	int rows = 0;
	for (size_t i = 0; i < ARRAY_LEN(table); i++) {
		const OrcAllowance *r = &table[i];
		if (r->op != op || r->fmt != f || strcmp(r->backend, name) != 0)
			continue;
		if (rows++)
			put(buf, n, len, "; ");
		row_text(r, buf, n, len);
	}
	if (rows == 0)
		put(buf, n, len, "%s", op == OP_ADD || op == OP_SUB || op == OP_MUL ? "cr" : "none");
}

const char *orc_allowance_text(const char *backend, Op op, Dtype f, char *buf, size_t n)
{
	size_t len = 0;
	int be = al_backend(backend);
	if (n == 0)
		return buf;
	buf[0] = 0;
	if (be < 0)
		put(buf, n, &len, "unknown backend");
	else
		key_text(be, op, f, buf, n, &len);
	return buf;
}
