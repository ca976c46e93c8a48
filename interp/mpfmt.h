/* interp/mpfmt.h (private to interp/): rounding MPFR values into numeric formats.
 *
 * The recipe of numerics.md section 1: a format of precision p has MPFR exponent range
 * [emin, emax] (dt_info); rounding = mpfr_set at precision p inside that range, then
 * mpfr_check_range and mpfr_subnormalize with the ternary value, then the range is restored
 * to the widest MPFR allows (the oracle's own range). e4m3 has no infinity: a value whose
 * rounding exceeds 448 in magnitude becomes NaN (OCP FP8 without saturation).
 * i32 "rounding" is round-to-nearest-even to an integer (outputs of real definitions are
 * rejected by the checker; this exists for completeness).
 */
#ifndef ASSAY_MPFMT_H
#define ASSAY_MPFMT_H

#include <mpfr.h>
#include "interp.h"

/* Sets MPFR's exponent range to the widest it allows. Call once per thread before any
 * evaluation (MPFR's range is thread-local). */
void mpf_widest_range(void);

/* y = x rounded into format f with rounding mode rnd (RNDN for round-to-nearest-even).
 * y may have any precision >= the format's; its value is the format's value exactly.
 * Returns the ternary value (sign of y - x; 0 when exact). */
int mpf_round(mpfr_ptr y, mpfr_srcptr x, Dtype f, mpfr_rnd_t rnd);

/* Completes an operation that was computed into y at exactly the format's precision p, in
 * the widest range, with ternary value t: switches to the format's range, applies
 * mpfr_check_range and mpfr_subnormalize with t (no double rounding), clamps e4m3, and
 * restores the widest range. Returns the new ternary value.
 * (MPFR's inputs must lie in the current range, so ops are never computed in the narrow
 * range: only check_range and subnormalize run there.) */
int mpf_finish(mpfr_ptr y, int t, Dtype f, mpfr_rnd_t rnd);

/* (Names: GMP owns the mpf_ prefix for its own float type, with macros such as
 * mpf_get_d; the three names above are not among GMP's. Use mpfr_get_d for doubles.) */

#endif
