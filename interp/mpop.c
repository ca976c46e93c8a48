/* interp/mpop.c: the one mapping of ops to MPFR functions, expanded from compiler/ops.def's
 * mpfr column (interp.h mp_op_fn), which the emulator (emul.c), the intervals (ival.c) and
 * the oracles' bounds (oracles/bval.c) all use: a new op is mapped here or nowhere.
 */
#include "interp.h"

int mp_rsqrt(mpfr_ptr y, mpfr_srcptr x, mpfr_rnd_t rnd)
{
	if (mpfr_zero_p(x)) {   /* the spec: rsqrt(-0) = -inf (MPFR gives +inf) */
		mpfr_set_inf(y, mpfr_signbit(x) ? -1 : 1);
		return 0;
	}
	return mpfr_rec_sqrt(y, x, rnd);
}

/* an ops.def row's function, in the member of its arity */
#define MP_1(f) {.f1 = f}
#define MP_2(f) {.f2 = f}
#define MP_3(f) {.f3 = f}
static const MpOpFn fns[] = {
#define X(name, spelling, arity, flags, c, helper, mpfr, grad) [OP_##name] = MP_##arity(mpfr),
#include "../compiler/ops.def"
#undef X
};
_Static_assert(ARRAY_LEN(fns) == OP__COUNT, "one MPFR row per op");

const MpOpFn *mp_op_fn(Op op)
{
	IR_ASSERT(op < OP__COUNT);
	return &fns[op];
}
