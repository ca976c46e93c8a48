/* interp/mpfmt.c: rounding MPFR values into numeric formats (see mpfmt.h). */
#include <math.h>
#include "mpfmt.h"

void mpf_widest_range(void)
{
	mpfr_set_emin(mpfr_get_emin_min());
	mpfr_set_emax(mpfr_get_emax_max());
}

/* e4m3 keeps exponent 9 for the range check, then treats |y| > 448 as NaN. */
static int clamp_e4m3(mpfr_ptr y, int t)
{
	if (mpfr_number_p(y) && mpfr_cmp_ui_2exp(y, 448, 0) > 0 && mpfr_sgn(y) > 0)
		goto nan;
	if (mpfr_number_p(y) && mpfr_sgn(y) < 0 && mpfr_cmp_si(y, -448) < 0)
		goto nan;
	if (mpfr_inf_p(y))
		goto nan;
	return t;
nan:
	mpfr_set_nan(y);
	return 0;
}

int mpf_finish(mpfr_ptr y, int t, Dtype f, mpfr_rnd_t rnd)
{
	const DtypeInfo *fi = dt_info(f);
	mpfr_exp_t emin = mpfr_get_emin(), emax = mpfr_get_emax();
	mpfr_set_emin(fi->emin);
	mpfr_set_emax(fi->emax);
	t = mpfr_check_range(y, t, rnd);
	t = mpfr_subnormalize(y, t, rnd);
	mpfr_set_emin(emin);
	mpfr_set_emax(emax);
	if (f == DT_E4M3)
		t = clamp_e4m3(y, t);
	return t;
}

int mpf_round(mpfr_ptr y, mpfr_srcptr x, Dtype f, mpfr_rnd_t rnd)
{
	if (f == DT_I32)
		return mpfr_rint(y, x, rnd);
	mpfr_t tmp;
	mpfr_init2(tmp, dt_info(f)->prec);
	int t = mpfr_set(tmp, x, rnd);   /* p bits, wide range */
	t = mpf_finish(tmp, t, f, rnd);
	mpfr_set(y, tmp, MPFR_RNDN);     /* exact: y has at least p bits */
	mpfr_clear(tmp);
	return t;
}
