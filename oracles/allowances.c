/* oracles/allowances.c: the table of backend allowances (allowances.def) and its lookup.
 *
 * The table is data: one row per function, backend, format and argument domain, each with
 * its source. A lookup gathers the rows of (op, backend, format) whose domain meets the
 * argument range, requires their domains to cover the whole range (a range partly outside
 * every row has no bound: INFINITY), and returns the largest of their bounds.
 */
#include <math.h>
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
	/* compiler/lower.c (kir.h): f16 and bf16 arithmetic is f32 arithmetic whose every
	 * result is rounded; no backend here uses native half arithmetic (c/, vulkan/,
	 * opencl/, cuda/, wgsl/ emit.c say so), so the table's 16-bit rows, which describe
	 * native half arithmetic, are not used for them */
	{"c", DT_F16, DT_F32}, {"c", DT_BF16, DT_F32},
	{"opencl", DT_F16, DT_F32}, {"opencl", DT_BF16, DT_F32},
	{"vulkan", DT_F16, DT_F32}, {"vulkan", DT_BF16, DT_F32},
	{"wgsl", DT_F16, DT_F32}, {"wgsl", DT_BF16, DT_F32},
	{"cuda", DT_F16, DT_F32}, {"cuda", DT_BF16, DT_F32},
};

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
	return b * INFL;
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
