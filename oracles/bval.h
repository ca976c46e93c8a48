/* oracles/bval.h (private to oracles/): the values of the budget analysis and the error
 * rules of single operations (bval.c), and the allowance lookup (allowances.c).
 *
 * A Bv describes one value of the scheduled computation:
 * - [lo, hi] encloses its EXACT value (the graph's real-arithmetic meaning), computed with
 *   directed rounding (error-free transformations for + - * / sqrt, MPFR's directed
 *   rounding at 53 bits for the other functions), so the enclosure is rigorous;
 * - e bounds |computed - exact|, where "computed" is what the backend (or the emulator)
 *   gets for this value under the schedule. Error bounds are sums and products of
 *   nonnegative doubles rounded to nearest; every rule multiplies its result by INFL =
 *   1 + 2^-40, far more than the few roundings of the bound's own arithmetic;
 * - fmt: a format every possible computed value belongs to (DT_NONE: unknown), which makes
 *   a conversion into a format that holds it exact;
 * - tie: the value depends on a discrete choice (an argmax/argmin/topk index, an integer
 *   ?: condition) that a correct kernel may make differently from the exact computation
 *   (numerics.md section 4a). Real ?: conditions that may flip are folded into e instead.
 * A value is "bounded" when lo, hi and e are finite; otherwise nothing is known of it (it
 * may be infinite or NaN, exactly or as computed) and everything computed from it is
 * unbounded too, with two exceptions that the rules which know them take apart:
 * - nan: certainly NaN (bv_nan);
 * - inf (+1 or -1): a definite infinity: every correct kernel computes that infinity, and
 *   [lo, hi] still encloses the exact value, which is that infinity (lo = hi = +-inf: an
 *   input or literal infinity and what follows from it) or a finite number (a finite exact
 *   value whose every allowed computation overflows: bv_round, the + - * / fma rules);
 *   e is +inf, so a rule that does not know it sees an unbounded value. Definite
 *   infinities exist only where the backend keeps infinities (BvCtx.inf_claims): budget.c
 *   makes none of its inputs and literals otherwise, and the rules make none of overflows.
 */
#ifndef ASSAY_BVAL_H
#define ASSAY_BVAL_H

#include <mpfr.h>
#include "oracles.h"

#define INFL (1.0 + 0x1p-40)

typedef struct {
	double lo, hi;
	double e;
	int8_t fmt;
	bool tie;
	bool nan;   /* certainly NaN, exact and computed (an unbounded value besides: bv_nan) */
	int8_t inf; /* a definite infinity (+1, -1) as computed, 0 otherwise (bv_inf) */
} Bv;

/* A boolean: its exact value (0, 1, or 2: undecided) and the values a correct kernel may
 * compute (bit 0: false, bit 1: true). */
typedef struct {
	uint8_t ex, cp;
	bool tie;
} B3;

/* Per-analysis state: the backend (an index of al_backends; 0 is "emul", every operation
 * correctly rounded), per format the magnitude below which it may flush a value to zero (0:
 * never; bv_set_ftz) and MPFR scratch at 53 bits. */
typedef struct {
	int be;
	double ftz[DT__COUNT];
	bool nan_claims;   /* the backend propagates NaN through + - * / fma max min (bv_nan) */
	/* The run's facts keep infinities (BeFacts.specials): definite infinities are made
	 * and followed (Bv.inf); fn_inf: op's bit when a function's value at an infinite
	 * argument follows C Annex F on this backend (al_fn_specials); rn[f]: the facts'
	 * exact[f], the operations (a cast op for conversions into f) rounded to nearest even
	 * in format f, whose overflow is certainly an infinity. */
	bool inf_claims;
	uint64_t fn_inf;
	uint64_t rn[DT__COUNT];
	mpfr_t x, y, z;
} BvCtx;

/* No format flushed until bv_set_ftz; no NaN or infinity claimed (the caller sets
 * nan_claims, inf_claims, fn_inf and rn from the facts). */
void bv_init(BvCtx *c, int be);
/* The backend may flush the subnormals of the formats in `formats` (bit f for Dtype f;
 * budget.c's table) and so of every format computed through one of them (al_via). */
void bv_set_ftz(BvCtx *c, uint32_t formats);
void bv_free(BvCtx *c);

/* ------------------------------------------------------------ formats */

/* Half a unit in the last place of format f in the binade of magnitude m (the largest
 * rounding error of a value of magnitude <= m), INFINITY where such a value may overflow. */
double bv_half_ulp(Dtype f, double m);
/* x rounded to nearest even into f (f64: x), overflow to +-inf. */
double bv_fmt_round(Dtype f, double x);
/* Every value of format a is one of format b. */
bool bv_within(Dtype a, Dtype b);

/* ------------------------------------------------------------ values */

static inline bool bv_bounded(const Bv *a)
{
	return a->lo >= -1.7976931348623157e308 && a->hi <= 1.7976931348623157e308 &&
	       a->e <= 1.7976931348623157e308;
}
Bv bv_unbounded(bool tie);
/* A NaN: an input element or a literal that is NaN, and what + - * / fma max min, negation,
 * abs and the float casts make of one (IEEE 754 propagates it, and so do the backends whose
 * BvCtx.nan_claims is set: for the others it is only unbounded). Every rule that does not
 * know it sees an unbounded value (lo, hi, e infinite), so no claim is made by mistake; its
 * budget (bv_budget) is 0 on a backend that claims NaNs, and the judge then holds a number
 * where the oracle has NaN against the kernel. */
Bv bv_nan(bool tie);
/* A definite infinity of sign `sign` whose exact value lies in [lo, hi] (see Bv.inf). */
Bv bv_inf(int sign, double lo, double hi, bool tie);
/* An exact value (an input element, an exact integer); computed exactly, in format f. An
 * infinity is a definite one (bv_inf), a NaN bv_nan. */
Bv bv_exact(double x, Dtype f);
/* The value as computed, then rounded into f (a load into the op format, a store). */
Bv bv_round(BvCtx *c, Bv a, Dtype f);

/* Operations of ops.def computed in format f (the op format), as the backend does. */
Bv bv_add(BvCtx *c, const Bv *a, const Bv *b, Dtype f, bool sub);
Bv bv_mul(BvCtx *c, const Bv *a, const Bv *b, Dtype f);
Bv bv_div(BvCtx *c, const Bv *a, const Bv *b, Dtype f);
Bv bv_fma(BvCtx *c, const Bv *a, const Bv *b, const Bv *d, Dtype f);
Bv bv_pow(BvCtx *c, const Bv *a, const Bv *b, Dtype f);
/* NEG ABS FLOOR CEIL, the functions of one argument, and the casts (f unused for casts). */
Bv bv_unary(BvCtx *c, Op op, const Bv *a, Dtype f);
/* max/min of two values computed in format f. */
Bv bv_maxmin(BvCtx *c, const Bv *a, const Bv *b, bool max, Dtype f);
/* A comparison op (OP_LT...) of two computed values (flushed first: bv_flush), definite
 * infinities included. */
B3 bv_cmp(Op op, const Bv *a, const Bv *b);

/* Flushed subnormals (FTZ, bval.c): on a backend that may flush the subnormals of the
 * format f is computed in (BvCtx.ftz, through al_via), every operation's operands and
 * result may be replaced by a zero when they are subnormal. The rules above allow for it;
 * these are for the callers' own uses of computed values.
 * bv_flush: a as the operand of an operation in f that may flush it (its bound raised to
 * cover a zero in place of a subnormal computed value; unchanged where none can be).
 * bv_ftz_slack: the largest magnitude below f's smallest normal that a's computed value
 * may have (0 if none, or if nothing is flushed): what a choice made on flushed keys (a
 * comparison, a max) but delivering the unflushed value may add. */
Bv bv_flush(const BvCtx *c, Bv a, Dtype f);
double bv_ftz_slack(const BvCtx *c, const Bv *a, Dtype f);
/* c ? a : b for real values (a flip becomes part of the error). */
Bv bv_select(const B3 *c, const Bv *a, const Bv *b);

/* The budget of an output element holding a (computed, stored) delivered in dtype out:
 * a bound on |R(computed) - R(exact)| and on |R(computed) - exact| (R: rounding into out).
 * A definite infinity gets 0 where R(exact) is that infinity too (the oracle's value is
 * it: a kernel must deliver it), else +inf (the oracle's value is finite, a correct
 * kernel's is the infinity: no claim); so does a bounded value whose every computed value
 * and exact value round to the same infinity in out (c->inf_claims). */
double bv_budget(const BvCtx *c, const Bv *a, Dtype out);

/* An enclosure [*lo, *hi] of logsumexp of the exact values of t[0..n-1] (all bounded). */
void bv_lse(BvCtx *c, const Bv *t, size_t n, double *lo, double *hi);

/* Directed rounding of doubles (exact error-free transformations). */
double bv_add_dn(double a, double b);
double bv_add_up(double a, double b);

/* ------------------------------------------------------------ allowances (allowances.c) */

/* Backends known to the budgets: "emul" (index 0) and those of allowances.def. -1 if
 * unknown; NULL is "emul". */
int al_backend(const char *name);
/* The error bound of op on backend be in format f for arguments in [xlo, xhi] (for DIV the
 * divisor's) and results of magnitude <= ymax. *found is false when the table has no row
 * for (op, be, f); the bound is INFINITY when its rows do not cover [xlo, xhi]. */
double al_local(int be, Op op, Dtype f, double xlo, double xhi, double ymax, bool *found);
/* Whether op rounds correctly on backend be in format f, everywhere. */
bool al_is_cr(int be, Op op, Dtype f);
/* The format backend be computes format f through (allowances.c's vias), or f itself. */
Dtype al_via(int be, Dtype f);
/* The functions (BE_OP bits) whose values at an infinite argument backend be takes from
 * C Annex F (allowances.c's table, with its sources; 0 for a backend without one). */
uint64_t al_fn_specials(int be);
/* Whether backend be defines op in format f by a formula of other functions (a row with
 * AL_INHERITED: pow as exp2(y * log2(x))); al_local has no bound for it (INFINITY): the
 * caller composes the formula (bv_pow). */
bool al_inherited(int be, Op op, Dtype f);

#endif
