/* tests/test_exact.c: the exact mode of the MPFR interpreter (interp/exact.c, ival.c)
 * against independently known values.
 *
 * Expected values come from outside MPFR: the f64 constants are Python's math module
 * (float.hex(math.exp(1)), ...); the narrower formats were derived from 50-digit reference
 * decimals by exact rational rounding in Python (fractions), cross-checked with numpy casts
 * and by reading the bits. Graphs are built with the IR constructors, so this suite does not
 * depend on the parser. The random self-check compares exact mode at precision p and p + 20
 * (MPFR's tgeneric) and against a plain 4000-bit MPFR evaluation of the same expression.
 */
#include <math.h>
#include <mpfr.h>
#include "testutil.h"
#include "../interp/interp.h"

/* ------------------------------------------------------------ building graphs */

static Ref num(Graph *g, const char *s) { return ir_num(g, s, strlen(s)); }
static Ref var(Graph *g, int k) { return ir_var(g, (uint32_t)k, TY_INT); }
static Ref cint(Graph *g, int64_t v) { return ir_int(g, v); }
static Ref op1(Graph *g, Op op, Ref a) { return ir_op(g, op, TY_REAL, a, 0, 0); }
static Ref op2(Graph *g, Op op, Ref a, Ref b) { return ir_op(g, op, TY_REAL, a, b, 0); }
static Ref iop2(Graph *g, Op op, Ref a, Ref b) { return ir_op(g, op, TY_INT, a, b, 0); }

static Ref rd(Graph *g, int t, int n, const Ref *idx)
{
	Dtype dt = (Dtype)g->tensors[t].dtype;
	return ir_read(g, (uint32_t)t, idx, (uint32_t)n, REF_NONE, dt == DT_I32 ? TY_INT : TY_REAL);
}

static Ref rd1(Graph *g, int t, Ref i) { return rd(g, t, 1, &i); }

static int input(Graph *g, const char *name, Dtype dt, int rank, const int64_t *dims)
{
	Tensor t;
	memset(&t, 0, sizeof t);
	t.name = ir_strdup(g, name, strlen(name));
	t.kind = TK_INPUT;
	t.dtype = (int8_t)dt;
	t.rank = rank;
	t.def = -1;
	for (int k = 0; k < rank; k++)
		t.dims[k] = (Extent){-1, dims[k]};
	return ir_add_tensor(g, &t);
}

/* A definition NAME[i0:E0, ...] = MONOID(j: lo..hi) body (monoid MO_NONE: plain body). The
 * left-hand indices are vars 0..nlhs-1, the reduction index var nlhs. Returns the tensor;
 * topk also adds NAME_ix (its tensor id is the returned one + 1). */
static int define(Graph *g, const char *name, int nlhs, const int64_t *ext, Monoid m,
		  Ref lo, Ref hi, Ref body)
{
	static const char *ix[] = {"i", "k", "l", "n"};
	Ty ty = g->nodes[body].ty == TY_INT || m == MO_ARGMAX || m == MO_ARGMIN ? TY_INT : TY_REAL;
	if (m == MO_LOGSUMEXP)
		ty = TY_REAL;
	Tensor t;
	memset(&t, 0, sizeof t);
	t.kind = TK_DEF;
	t.rank = nlhs;
	t.def = g->ndefs;
	for (int k = 0; k < nlhs; k++)
		t.dims[k] = (Extent){-1, ext[k]};
	Def d;
	memset(&d, 0, sizeof d);
	t.name = ir_strdup(g, name, strlen(name));
	t.dtype = ty == TY_INT ? DT_I32 : DT_F64;
	d.out[0] = ir_add_tensor(g, &t);
	d.nout = 1;
	if (m == MO_TOPK) {
		char buf[64];
		snprintf(buf, sizeof buf, "%s_ix", name);
		t.name = ir_strdup(g, buf, strlen(buf));
		t.dtype = DT_I32;
		t.result = 1;
		d.out[1] = ir_add_tensor(g, &t);
		d.nout = 2;
	}
	d.nlhs = nlhs;
	for (int k = 0; k < nlhs; k++)
		d.lhs[k] = (LhsIndex){ir_strdup(g, ix[k], 1), {-1, ext[k]}, {0}};
	d.monoid = m;
	if (m != MO_NONE) {
		d.nred = 1;
		d.red[0] = (RedIndex){ir_strdup(g, "j", 1), lo, hi, false, {0}};
	}
	d.body = body;
	d.ty = ty;
	ir_add_def(g, &d);
	return d.out[0];
}

static int scalar(Graph *g, const char *name, Ref body)
{
	return define(g, name, 0, NULL, MO_NONE, 0, 0, body);
}

/* sum(j:n)-style reduction over j in 0..n-1 of body (var 0 is j when nlhs == 0). */
static int reduce0(Graph *g, const char *name, Monoid m, int64_t n, Ref body)
{
	return define(g, name, 0, NULL, m, cint(g, 0), cint(g, n), body);
}

/* W(a) = (exp(40) + a) - exp(40) is exactly a, but at 64 bits an interval about 0.03
 * wide: a probe of the interval code's soundness away from points. */
static Ref wide(Graph *g, Ref a)
{
	Ref e = op1(g, OP_EXP, num(g, "40"));
	return op2(g, OP_SUB, op2(g, OP_ADD, e, a), e);
}

static HostTensor vec(Dtype dt, int64_t n, const double *v)
{
	HostTensor t;
	ck_assert_int_eq(ht_alloc(&t, dt, 1, &n), 0);
	for (int64_t i = 0; i < n; i++)
		ht_set(&t, i, v[i]);
	return t;
}

/* Evaluates g in exact mode; fails the test on an error. */
typedef struct {
	HostTensor out[64];
	uint8_t *status[64];
	MpStats st;
	int n;
} Res;

static int run(const Graph *g, const HostTensor *in, const MpOpts *o, Res *r, Diag *d)
{
	memset(r, 0, sizeof *r);
	r->n = g->noutputs;
	return mp_exact(g, in, o, r->out, r->status, &r->st, d);
}

static void run_ok(const Graph *g, const HostTensor *in, const MpOpts *o, Res *r)
{
	Diag d = {0};
	int rc = run(g, in, o, r, &d);
	ck_assert_msg(rc == 0, "mp_exact failed: %s", d.msg ? d.msg : "?");
}

static void res_free(Res *r)
{
	for (int k = 0; k < r->n; k++) {
		ht_free(&r->out[k]);
		free(r->status[k]);
	}
}

static double out1(const Res *r, int k, int64_t i)
{
	ck_assert_int_eq(r->status[k][i], MP_EXACT_OK);
	return ht_get(&r->out[k], i);
}

/* Bitwise equality of doubles (NaN equals NaN, -0 differs from +0). */
static bool same(double a, double b)
{
	if (isnan(a) || isnan(b))
		return isnan(a) && isnan(b);
	return a == b && signbit(a) == signbit(b);
}

#define ck_same(a, b) ck_assert_msg(same((a), (b)), "got %a, want %a", (double)(a), (double)(b))

/* ------------------------------------------------------------ known values */

START_TEST(sum_cancels_exactly)
{
	Graph *g = ir_new("t.tg");
	int x = input(g, "x", DT_F64, 1, (int64_t[]){3});
	int y = reduce0(g, "y", MO_SUM, 3, rd1(g, x, var(g, 0)));
	ir_add_output(g, y, DT_F64, (SrcPos){0});
	HostTensor in = vec(DT_F64, 3, (double[]){1e16, 1, -1e16});
	Res r;
	run_ok(g, &in, NULL, &r);
	ck_same(out1(&r, 0, 0), 1.0);
	ck_assert_int_eq(r.st.escalations, 0);
	res_free(&r);
	ht_free(&in);
	ir_free(g);
}
END_TEST

static const struct {
	Op op;
	const char *arg;
	double want[4];   /* f64, f32, f16, bf16 */
} consts[] = {
	{OP_EXP, "1", {0x1.5bf0a8b145769p+1, 0x1.5bf0a8p+1, 0x1.5cp+1, 0x1.5cp+1}},
	{OP_LOG, "2", {0x1.62e42fefa39efp-1, 0x1.62e43p-1, 0x1.63p-1, 0x1.62p-1}},
	{OP_ERF, "0.5", {0x1.0a7ef5c18edd2p-1, 0x1.0a7ef6p-1, 0x1.0a8p-1, 0x1.0ap-1}},
};

START_TEST(correctly_rounded_constants)
{
	static const Dtype fmts[4] = {DT_F64, DT_F32, DT_F16, DT_BF16};
	Graph *g = ir_new("t.tg");
	int y = scalar(g, "y", op1(g, consts[_i].op, num(g, consts[_i].arg)));
	for (int f = 0; f < 4; f++)
		ir_add_output(g, y, fmts[f], (SrcPos){0});
	Res r;
	run_ok(g, NULL, NULL, &r);
	for (int f = 0; f < 4; f++)
		ck_same(out1(&r, f, 0), consts[_i].want[f]);
	res_free(&r);
	ir_free(g);
}
END_TEST

START_TEST(f16_spot_checks)
{
	static const char *lit[] = {"65519", "65520", "0x1p-25", "1e-6", "-65520", "-0x1p-25"};
	static const double want[] = {65504, INFINITY, 0, 17 * 0x1p-24, -INFINITY, -0.0};
	Graph *g = ir_new("t.tg");
	for (int k = 0; k < 6; k++) {
		char name[16];
		snprintf(name, sizeof name, "y%d", k);
		Ref v = num(g, lit[k][0] == '-' ? lit[k] + 1 : lit[k]);
		int y = scalar(g, name, lit[k][0] == '-' ? op1(g, OP_NEG, v) : v);
		ir_add_output(g, y, DT_F16, (SrcPos){0});
	}
	Res r;
	run_ok(g, NULL, NULL, &r);
	for (int k = 0; k < 6; k++)
		ck_same(out1(&r, k, 0), want[k]);
	ck_assert_int_eq(r.st.escalations, 0);   /* exact values and ties settle at once */
	res_free(&r);
	ir_free(g);
}
END_TEST

START_TEST(logsumexp_of_equal_terms)
{
	Graph *g = ir_new("t.tg");
	int x = input(g, "x", DT_F64, 1, (int64_t[]){2});
	int y = reduce0(g, "y", MO_LOGSUMEXP, 2, rd1(g, x, var(g, 0)));
	int z = reduce0(g, "z", MO_LOGSUMEXP, 1, rd1(g, x, var(g, 0)));
	ir_add_output(g, y, DT_F64, (SrcPos){0});
	ir_add_output(g, y, DT_F32, (SrcPos){0});
	ir_add_output(g, z, DT_F64, (SrcPos){0});
	HostTensor in = vec(DT_F64, 2, (double[]){1000, 1000});
	Res r;
	run_ok(g, &in, NULL, &r);
	ck_same(out1(&r, 0, 0), 0x1.f458b90bfbe8ep+9);   /* 1000 + log 2 */
	ck_same(out1(&r, 1, 0), 0x1.f458bap+9);
	ck_same(out1(&r, 2, 0), 1000.0);   /* one term: exactly itself */
	res_free(&r);
	ht_free(&in);
	ir_free(g);
}
END_TEST

/* ------------------------------------------------------------ argmax, topk */

static const struct {
	int n;
	double x[6];
	int argmax, argmin;
} args[] = {
	{4, {1, 3, 3, 2}, 1, 0},                   /* ties: the smallest index */
	{4, {2, 1, 5, 1}, 2, 1},
	{2, {-0.0, 0.0}, 0, 0},                    /* -0 and +0 tie */
	{2, {0.0, -0.0}, 0, 0},
	{5, {1, NAN, 5, NAN, -7}, 1, 1},            /* the first NaN wins */
	{3, {-INFINITY, INFINITY, 0}, 1, 0},
	{1, {NAN}, 0, 0},
};

START_TEST(argmax_ties_and_nan)
{
	Graph *g = ir_new("t.tg");
	int n = args[_i].n;
	int x = input(g, "x", DT_F64, 1, (int64_t[]){n});
	Ref body = rd1(g, x, var(g, 0));
	int a = reduce0(g, "a", MO_ARGMAX, n, body);
	int b = reduce0(g, "b", MO_ARGMIN, n, body);
	ir_add_output(g, a, DT_I32, (SrcPos){0});
	ir_add_output(g, b, DT_I32, (SrcPos){0});
	HostTensor in = vec(DT_F64, n, args[_i].x);
	Res r;
	run_ok(g, &in, NULL, &r);
	ck_assert_int_eq((int)out1(&r, 0, 0), args[_i].argmax);
	ck_assert_int_eq((int)out1(&r, 1, 0), args[_i].argmin);
	res_free(&r);
	ht_free(&in);
	ir_free(g);
}
END_TEST

/* Computed (inexact) terms: decided where they differ, unsamplable where they tie. */
START_TEST(argmax_of_computed_terms)
{
	Graph *g = ir_new("t.tg");
	int x = input(g, "x", DT_F64, 1, (int64_t[]){5});
	Ref ex = op1(g, OP_EXP, rd1(g, x, var(g, 0)));
	int a = reduce0(g, "a", MO_ARGMAX, 3, ex);   /* decided */
	int b = define(g, "b", 0, NULL, MO_ARGMAX, cint(g, 1), cint(g, 4), ex);
	/* topk(j:5) exp(x[j]), K = 2: the first place is decided, the second is a tie */
	int t = define(g, "t", 1, (int64_t[]){2}, MO_TOPK, cint(g, 0), cint(g, 5),
		       op1(g, OP_EXP, rd1(g, x, var(g, 1))));
	ir_add_output(g, a, DT_I32, (SrcPos){0});
	ir_add_output(g, b, DT_I32, (SrcPos){0});
	ir_add_output(g, t, DT_F32, (SrcPos){0});
	ir_add_output(g, t + 1, DT_I32, (SrcPos){0});
	HostTensor in = vec(DT_F64, 5, (double[]){0.5, 1.25, 1.0, 1.25, 2});
	Res r;
	MpOpts o = {.threads = 1, .prec0 = 64, .prec_cap = 256};
	run_ok(g, &in, &o, &r);
	ck_assert_int_eq((int)out1(&r, 0, 0), 1);
	ck_assert_int_eq(r.status[1][0], MP_UNSAMPLABLE);   /* exp(1.25) vs exp(1.25) */
	ck_same(out1(&r, 2, 0), 0x1.d8e64cp+2);              /* exp(2) */
	ck_same(out1(&r, 3, 0), 4);
	ck_assert_int_eq(r.status[2][1], MP_UNSAMPLABLE);
	ck_assert_int_eq(r.status[3][1], MP_UNSAMPLABLE);
	ck_assert_int_eq(r.st.unsamplable, 3);
	res_free(&r);
	ht_free(&in);
	ir_free(g);
}
END_TEST

START_TEST(topk_order)
{
	static const double x[8] = {1, NAN, 3, 3, -0.0, 0.0, NAN, 2};
	static const double wantv[8] = {NAN, NAN, 3, 3, 2, 1, -0.0, 0.0};
	static const int wanti[8] = {1, 6, 2, 3, 7, 0, 4, 5};
	int K = _i ? 8 : 5;
	Graph *g = ir_new("t.tg");
	int xt = input(g, "x", DT_F64, 1, (int64_t[]){8});
	int v = define(g, "v", 1, (int64_t[]){K}, MO_TOPK, cint(g, 0), cint(g, 8),
		       rd1(g, xt, var(g, 1)));
	ir_add_output(g, v, DT_F64, (SrcPos){0});
	ir_add_output(g, v + 1, DT_I32, (SrcPos){0});
	HostTensor in = vec(DT_F64, 8, x);
	Res r;
	run_ok(g, &in, NULL, &r);
	for (int q = 0; q < K; q++) {
		ck_same(out1(&r, 0, q), wantv[q]);
		ck_assert_int_eq((int)out1(&r, 1, q), wanti[q]);
	}
	res_free(&r);
	ht_free(&in);
	ir_free(g);
}
END_TEST

START_TEST(topk_short_range_is_an_error)
{
	Graph *g = ir_new("t.tg");
	int xt = input(g, "x", DT_F64, 1, (int64_t[]){8});
	/* v[i:2, r:3] = topk(j: 0..i+2) x[j]: row 0 has 2 terms, fewer than K = 3 */
	Ref hi = iop2(g, OP_ADD, var(g, 0), cint(g, 2));
	int v = define(g, "v", 2, (int64_t[]){2, 3}, MO_TOPK, cint(g, 0), hi,
		       rd1(g, xt, var(g, 2)));
	ir_add_output(g, v, DT_F64, (SrcPos){0});
	HostTensor in = vec(DT_F64, 8, (double[]){1, 2, 3, 4, 5, 6, 7, 8});
	Res r;
	Diag d = {0};
	ck_assert_int_eq(run(g, &in, NULL, &r, &d), -1);
	ck_assert_int_eq(d.code, 2);
	ck_assert_msg(strstr(d.msg, "fewer than K = 3") && strstr(d.msg, "v[0, 0]"), "%s", d.msg);
	diag_clear(&d);
	ht_free(&in);
	ir_free(g);
}
END_TEST

/* ------------------------------------------------------------ empty ranges */

static const struct {
	Monoid m;
	bool integer;
	double want;
} empties[] = {
	{MO_SUM, false, 0.0}, {MO_PROD, false, 1.0}, {MO_MAX, false, -INFINITY},
	{MO_MIN, false, INFINITY}, {MO_LOGSUMEXP, false, -INFINITY}, {MO_ARGMAX, false, -1},
	{MO_ARGMIN, false, -1}, {MO_SUM, true, 0}, {MO_PROD, true, 1},
};

START_TEST(empty_range_identity)
{
	Graph *g = ir_new("t.tg");
	int x = input(g, "x", DT_F64, 1, (int64_t[]){4});
	/* y[i:2] = M(j: i+1 .. i+1) body: empty for every i */
	Ref b = iop2(g, OP_ADD, var(g, 0), cint(g, 1));
	int y = define(g, "y", 1, (int64_t[]){2}, empties[_i].m, b, b,
		       empties[_i].integer ? iop2(g, OP_ADD, var(g, 1), cint(g, 7))
					   : rd1(g, x, var(g, 1)));
	bool isint = g->tensors[y].dtype == DT_I32;
	ir_add_output(g, y, isint ? DT_I32 : DT_F32, (SrcPos){0});
	HostTensor in = vec(DT_F64, 4, (double[]){1, 2, 3, 4});
	Res r;
	run_ok(g, &in, NULL, &r);
	ck_same(out1(&r, 0, 0), empties[_i].want);
	ck_same(out1(&r, 0, 1), empties[_i].want);
	res_free(&r);
	ht_free(&in);
	ir_free(g);
}
END_TEST

/* ------------------------------------------------------------ signed zeros */

START_TEST(signed_zeros)
{
	Graph *g = ir_new("t.tg");
	int x = input(g, "x", DT_F64, 1, (int64_t[]){4});
	Ref m0 = op1(g, OP_NEG, num(g, "0")), p0 = num(g, "0");
	Ref x0 = rd1(g, x, cint(g, 0)), e = op1(g, OP_EXP, x0);
	const struct {
		const char *name;
		Ref body;
		double want;
	} rows[] = {
		{"sqrt_m0", op1(g, OP_SQRT, m0), -0.0},
		{"m0_plus_m0", op2(g, OP_ADD, m0, m0), -0.0},
		{"m0_plus_p0", op2(g, OP_ADD, m0, p0), 0.0},
		{"x_minus_x", op2(g, OP_SUB, x0, x0), 0.0},
		{"ex_minus_ex", op2(g, OP_SUB, e, e), 0.0},   /* inexact x, yet exactly +0 */
		{"m0_times_5", op2(g, OP_MUL, m0, num(g, "5")), -0.0},
		{"p0_times_m5", op2(g, OP_MUL, p0, op1(g, OP_NEG, num(g, "5"))), -0.0},
		{"one_over_m0", op2(g, OP_DIV, num(g, "1"), m0), -INFINITY},
		{"rsqrt_m0", op1(g, OP_RSQRT, m0), -INFINITY},
		{"rsqrt_p0", op1(g, OP_RSQRT, p0), INFINITY},
		{"max_zeros", op2(g, OP_MAX, m0, p0), 0.0},
		{"min_zeros", op2(g, OP_MIN, p0, m0), -0.0},
		{"ceil_m_half", op1(g, OP_CEIL, op1(g, OP_NEG, num(g, "0.5"))), -0.0},
		{"expm1_m0", op1(g, OP_EXPM1, m0), -0.0},
		{"inf_minus_inf", op2(g, OP_SUB, num(g, "inf"), op1(g, OP_NEG, op1(g, OP_NEG, num(g, "inf")))), NAN},
		{"zero_times_inf", op2(g, OP_MUL, p0, num(g, "inf")), NAN},
		{"pow_nan_0", op2(g, OP_POW, num(g, "nan"), p0), 1.0},
		{"pow_m8_third", op2(g, OP_POW, op1(g, OP_NEG, num(g, "8")), op2(g, OP_DIV, num(g, "1"), num(g, "3"))), NAN},
		{"sqrt_m1", op1(g, OP_SQRT, op1(g, OP_NEG, num(g, "1"))), NAN},
		{"log_0", op1(g, OP_LOG, p0), -INFINITY},
		{"exp_minf", op1(g, OP_EXP, op1(g, OP_NEG, num(g, "inf"))), 0.0},
	};
	int n = (int)ARRAY_LEN(rows);
	for (int k = 0; k < n; k++)
		ir_add_output(g, scalar(g, rows[k].name, rows[k].body), DT_F64, (SrcPos){0});
	/* reductions over stored zeros */
	int z = input(g, "z", DT_F64, 1, (int64_t[]){2});
	int w = input(g, "w", DT_F64, 1, (int64_t[]){2});
	ir_add_output(g, reduce0(g, "sum_mm", MO_SUM, 2, rd1(g, z, var(g, 0))), DT_F64, (SrcPos){0});
	ir_add_output(g, reduce0(g, "sum_pm", MO_SUM, 2, rd1(g, w, var(g, 0))), DT_F64, (SrcPos){0});
	ir_add_output(g, reduce0(g, "prod_mp", MO_PROD, 2, rd1(g, w, var(g, 0))), DT_F64, (SrcPos){0});
	ir_add_output(g, reduce0(g, "max_mp", MO_MAX, 2, rd1(g, w, var(g, 0))), DT_F64, (SrcPos){0});
	HostTensor in[3] = {vec(DT_F64, 4, (double[]){1.5, 2, 3, 4}),
			    vec(DT_F64, 2, (double[]){-0.0, -0.0}),
			    vec(DT_F64, 2, (double[]){0.0, -0.0})};
	Res r;
	run_ok(g, in, NULL, &r);
	for (int k = 0; k < n; k++)
		ck_assert_msg(same(out1(&r, k, 0), rows[k].want), "%s: got %a, want %a", rows[k].name,
			      ht_get(&r.out[k], 0), rows[k].want);
	ck_same(out1(&r, n, 0), -0.0);
	ck_same(out1(&r, n + 1, 0), 0.0);
	ck_same(out1(&r, n + 2, 0), -0.0);
	ck_same(out1(&r, n + 3, 0), 0.0);
	ck_assert_int_eq(r.st.escalations, 0);
	res_free(&r);
	for (int k = 0; k < 3; k++)
		ht_free(&in[k]);
	ir_free(g);
}
END_TEST

/* Reductions over special values, each term scaled by exp(1) so that finite terms are
 * intervals, not points: a definite +inf and -inf still make NaN, NaN absorbs, and so on. */
static const struct {
	Monoid m;
	double z[3];
	double want;
} specials[] = {
	{MO_SUM, {INFINITY, -INFINITY, 1.5}, NAN},
	{MO_SUM, {INFINITY, 2, 1.5}, INFINITY},
	{MO_SUM, {NAN, 2, 1.5}, NAN},
	{MO_PROD, {0.0, INFINITY, 1.5}, NAN},
	{MO_PROD, {-2, INFINITY, 1.5}, -INFINITY},
	{MO_MAX, {NAN, 2, 1.5}, NAN},
	{MO_MAX, {-INFINITY, -INFINITY, -INFINITY}, -INFINITY},
	{MO_MIN, {INFINITY, 2, -INFINITY}, -INFINITY},
	{MO_LOGSUMEXP, {INFINITY, 2, 1.5}, INFINITY},
	{MO_LOGSUMEXP, {-INFINITY, -INFINITY, -INFINITY}, -INFINITY},
	{MO_LOGSUMEXP, {NAN, INFINITY, 1.5}, NAN},
};

START_TEST(special_reductions)
{
	Graph *g = ir_new("t.tg");
	int z = input(g, "z", DT_F64, 1, (int64_t[]){3});
	Ref term = op2(g, OP_MUL, rd1(g, z, var(g, 0)), op1(g, OP_EXP, num(g, "1")));
	int y = reduce0(g, "y", specials[_i].m, 3, term);
	ir_add_output(g, y, DT_F32, (SrcPos){0});
	HostTensor in = vec(DT_F64, 3, specials[_i].z);
	Res r;
	run_ok(g, &in, NULL, &r);
	ck_same(out1(&r, 0, 0), specials[_i].want);
	res_free(&r);
	ht_free(&in);
	ir_free(g);
}
END_TEST

/* ------------------------------------------------------------ reads */

START_TEST(indirect_read_out_of_range)
{
	Graph *g = ir_new("t.tg");
	int emb = input(g, "emb", DT_F32, 1, (int64_t[]){4});
	int tok = input(g, "tok", DT_I32, 1, (int64_t[]){3});
	int y = define(g, "y", 1, (int64_t[]){3}, MO_NONE, 0, 0,
		       rd1(g, emb, rd1(g, tok, var(g, 0))));
	ir_add_output(g, y, DT_F32, (SrcPos){0});
	HostTensor in[2] = {vec(DT_F32, 4, (double[]){1, 2, 3, 4}),
			    vec(DT_I32, 3, (double[]){2, 7, 1})};
	Res r;
	Diag d = {0};
	for (int threads = 1; threads <= 2; threads++) {
		MpOpts o = {.threads = threads};
		ck_assert_int_eq(run(g, in, &o, &r, &d), -1);
		ck_assert_int_eq(d.code, 2);
		ck_assert_msg(strstr(d.msg, "indirect read out of range: index 1 of emb is tok[1] = 7, "
					    "outside 0..3 (computing y[1])"), "%s", d.msg);
		diag_clear(&d);
	}
	for (int k = 0; k < 2; k++)
		ht_free(&in[k]);
	ir_free(g);
}
END_TEST

START_TEST(padding_reads)
{
	Graph *g = ir_new("t.tg");
	int x = input(g, "x", DT_F32, 1, (int64_t[]){4});
	int tok = input(g, "tok", DT_I32, 1, (int64_t[]){3});
	/* y[i:4] = x[i + 1] ?? -1 ; z[i:3] = x[tok[i]] ?? 0 ; w[i:4] = x[i - 1] ?? x[i] */
	Ref i1 = iop2(g, OP_ADD, var(g, 0), cint(g, 1)), im = iop2(g, OP_SUB, var(g, 0), cint(g, 1));
	Ref t = rd1(g, tok, var(g, 0));
	Ref py = ir_read(g, (uint32_t)x, &i1, 1, op1(g, OP_NEG, num(g, "1")), TY_REAL);
	Ref pz = ir_read(g, (uint32_t)x, &t, 1, num(g, "0"), TY_REAL);
	Ref pw = ir_read(g, (uint32_t)x, &im, 1, rd1(g, x, var(g, 0)), TY_REAL);
	ir_add_output(g, define(g, "y", 1, (int64_t[]){4}, MO_NONE, 0, 0, py), DT_F32, (SrcPos){0});
	ir_add_output(g, define(g, "z", 1, (int64_t[]){3}, MO_NONE, 0, 0, pz), DT_F32, (SrcPos){0});
	ir_add_output(g, define(g, "w", 1, (int64_t[]){4}, MO_NONE, 0, 0, pw), DT_F32, (SrcPos){0});
	HostTensor in[2] = {vec(DT_F32, 4, (double[]){10, 20, 30, 40}),
			    vec(DT_I32, 3, (double[]){3, -1, 4})};
	Res r;
	run_ok(g, in, NULL, &r);
	static const double wy[] = {20, 30, 40, -1}, wz[] = {40, 0, 0}, ww[] = {10, 10, 20, 30};
	for (int i = 0; i < 4; i++) {
		ck_same(out1(&r, 0, i), wy[i]);
		ck_same(out1(&r, 2, i), ww[i]);
	}
	for (int i = 0; i < 3; i++)
		ck_same(out1(&r, 1, i), wz[i]);
	res_free(&r);
	for (int k = 0; k < 2; k++)
		ht_free(&in[k]);
	ir_free(g);
}
END_TEST

/* ------------------------------------------------------------ integers */

START_TEST(integer_errors)
{
	Graph *g = ir_new("t.tg");
	Ref body;
	const char *want;
	if (_i == 0) {   /* y[i:3] = 65536 * 65536 * i: i = 1 does not fit */
		body = iop2(g, OP_MUL, iop2(g, OP_MUL, cint(g, 65536), cint(g, 65536)), var(g, 0));
		want = "the value 4294967296 does not fit in 32 bits (computing y[1])";
	} else {         /* y[i:3] = i % (i - 1): by zero at i = 1 */
		body = iop2(g, OP_MOD, var(g, 0), iop2(g, OP_SUB, var(g, 0), cint(g, 1)));
		want = "% by zero (computing y[1])";
	}
	int y = define(g, "y", 1, (int64_t[]){3}, MO_NONE, 0, 0, body);
	ir_add_output(g, y, DT_I32, (SrcPos){0});
	Res r;
	Diag d = {0};
	ck_assert_int_eq(run(g, NULL, NULL, &r, &d), -1);
	ck_assert_int_eq(d.code, 2);
	ck_assert_msg(strstr(d.msg, want), "%s", d.msg);
	diag_clear(&d);
	ir_free(g);
}
END_TEST

/* An integer ?: whose condition is never decided: decided anyway when the branches agree. */
START_TEST(undecided_integer_branch)
{
	Graph *g = ir_new("t.tg");
	Ref w1 = wide(g, num(g, "1"));
	Ref cond = ir_op(g, OP_GE, TY_BOOL, w1, num(g, "1"), 0);
	Ref same7 = ir_op(g, OP_SELECT, TY_INT, cond, cint(g, 7), iop2(g, OP_ADD, cint(g, 3), cint(g, 4)));
	Ref differ = ir_op(g, OP_SELECT, TY_INT, cond, cint(g, 7), cint(g, 8));
	ir_add_output(g, scalar(g, "a", same7), DT_I32, (SrcPos){0});
	ir_add_output(g, scalar(g, "b", differ), DT_I32, (SrcPos){0});
	Res r;
	MpOpts o = {.threads = 1, .prec0 = 64, .prec_cap = 256};
	run_ok(g, NULL, &o, &r);
	ck_same(out1(&r, 0, 0), 7);
	ck_assert_int_eq(r.status[1][0], MP_UNSAMPLABLE);
	res_free(&r);
	ir_free(g);
}
END_TEST

/* A graph built in memory with a shape the checker would reject (argmax into a real
 * tensor) is an internal error, not a crash. */
START_TEST(malformed_graph_rejected)
{
	Graph *g = ir_new("t.tg");
	int x = input(g, "x", DT_F64, 1, (int64_t[]){4});
	int a = reduce0(g, "a", MO_ARGMAX, 4, rd1(g, x, var(g, 0)));
	g->tensors[a].dtype = DT_F64;
	ir_add_output(g, a, DT_F32, (SrcPos){0});
	HostTensor in = vec(DT_F64, 4, (double[]){1, 2, 3, 4});
	Res r;
	Diag d = {0};
	ck_assert_int_eq(run(g, &in, NULL, &r, &d), -1);
	ck_assert_int_eq(d.code, 3);
	ck_assert_ptr_eq(r.out[0].data, NULL);
	diag_clear(&d);
	ht_free(&in);
	ir_free(g);
}
END_TEST

START_TEST(integer_values)
{
	Graph *g = ir_new("t.tg");
	/* a[i:5] = (i * 3 - 7) % 4 ; b[] = sum(j:5) a[j] * a[j] ; c[i:5] = f32(a[i]) / 4 */
	Ref a_body = iop2(g, OP_MOD, iop2(g, OP_SUB, iop2(g, OP_MUL, var(g, 0), cint(g, 3)),
					cint(g, 7)), cint(g, 4));
	int a = define(g, "a", 1, (int64_t[]){5}, MO_NONE, 0, 0, a_body);
	Ref aj = rd1(g, a, var(g, 0));
	int b = reduce0(g, "b", MO_SUM, 5, iop2(g, OP_MUL, aj, aj));
	Ref ai = rd1(g, a, var(g, 0));
	int c = define(g, "c", 1, (int64_t[]){5}, MO_NONE, 0, 0,
		       op2(g, OP_DIV, op1(g, OP_CAST_F32, ai), num(g, "4")));
	ir_add_output(g, a, DT_I32, (SrcPos){0});
	ir_add_output(g, b, DT_I32, (SrcPos){0});
	ir_add_output(g, c, DT_F16, (SrcPos){0});
	ir_add_output(g, a, DT_F32, (SrcPos){0});
	Res r;
	run_ok(g, NULL, NULL, &r);
	static const int wa[] = {1, 0, 3, 2, 1};
	for (int i = 0; i < 5; i++) {
		ck_same(out1(&r, 0, i), wa[i]);
		ck_same(out1(&r, 2, i), wa[i] / 4.0);
		ck_same(out1(&r, 3, i), wa[i]);
	}
	ck_same(out1(&r, 1, 0), 15);
	res_free(&r);
	ir_free(g);
}
END_TEST

/* ------------------------------------------------------------ threads, points */

static uint64_t rnext(uint64_t *s)
{
	*s = *s * 6364136223846793005ull + 1442695040888963407ull;
	return *s >> 33;
}

static double runif(uint64_t *s)
{
	return (double)rnext(s) / 2147483648.0;
}

/* A softmax, a matvec, an argmax, a topk, a logsumexp and an element that needs a second
 * precision (sqrt(L + i)^2 with L just above an f16 tie). */
static Graph *mixed_graph(void)
{
	Graph *g = ir_new("t.tg");
	int x = input(g, "x", DT_F64, 2, (int64_t[]){16, 8});
	int w = input(g, "w", DT_F32, 1, (int64_t[]){8});
	Ref xij = rd(g, x, 2, (Ref[]){var(g, 0), var(g, 1)});
	Ref xik = xij;   /* x[i, k] for 2-d definitions: var 1 is k there */
	Ref wj = rd1(g, w, var(g, 1));
	int64_t e16[] = {16}, e168[] = {16, 8}, e163[] = {16, 3};
	int s = define(g, "s", 1, e16, MO_SUM, cint(g, 0), cint(g, 8), op2(g, OP_MUL, xij, wj));
	int m = define(g, "m", 1, e16, MO_MAX, cint(g, 0), cint(g, 8), xij);
	int e = define(g, "e", 2, e168, MO_NONE, 0, 0,
		       op1(g, OP_EXP, op2(g, OP_SUB, xik, rd1(g, m, var(g, 0)))));
	Ref eij = rd(g, e, 2, (Ref[]){var(g, 0), var(g, 1)});
	Ref eik = rd(g, e, 2, (Ref[]){var(g, 0), var(g, 1)});
	int z = define(g, "z", 1, e16, MO_SUM, cint(g, 0), cint(g, 8), eij);
	int p = define(g, "p", 2, e168, MO_NONE, 0, 0, op2(g, OP_DIV, eik, rd1(g, z, var(g, 0))));
	Ref li = op2(g, OP_ADD, num(g, "0x1.002000000000000004p0"), op1(g, OP_CAST_F32, var(g, 0)));
	int q = define(g, "q", 1, e16, MO_NONE, 0, 0,
		       op2(g, OP_MUL, op1(g, OP_SQRT, li), op1(g, OP_SQRT, li)));
	int a = define(g, "a", 1, e16, MO_ARGMAX, cint(g, 0), cint(g, 8), op2(g, OP_MUL, xij, wj));
	int l = define(g, "l", 1, e16, MO_LOGSUMEXP, cint(g, 0), cint(g, 8), xij);
	Ref xij2 = rd(g, x, 2, (Ref[]){var(g, 0), var(g, 2)});
	int t = define(g, "t", 2, e163, MO_TOPK, cint(g, 0), cint(g, 8), op1(g, OP_SIN, xij2));
	ir_add_output(g, s, DT_F32, (SrcPos){0});
	ir_add_output(g, p, DT_F16, (SrcPos){0});
	ir_add_output(g, q, DT_F16, (SrcPos){0});
	ir_add_output(g, a, DT_I32, (SrcPos){0});
	ir_add_output(g, l, DT_BF16, (SrcPos){0});
	ir_add_output(g, t, DT_F32, (SrcPos){0});
	ir_add_output(g, t + 1, DT_I32, (SrcPos){0});
	ir_add_output(g, p, DT_F64, (SrcPos){0});
	return g;
}

static void mixed_inputs(HostTensor in[2])
{
	uint64_t seed = 42;
	ck_assert_int_eq(ht_alloc(&in[0], DT_F64, 2, (int64_t[]){16, 8}), 0);
	ck_assert_int_eq(ht_alloc(&in[1], DT_F32, 1, (int64_t[]){8}), 0);
	for (int64_t i = 0; i < in[0].n; i++)
		ht_set(&in[0], i, (runif(&seed) - 0.5) * 8);
	for (int64_t i = 0; i < in[1].n; i++)
		ht_set(&in[1], i, runif(&seed) - 0.5);
	ht_set(&in[0], 3, ht_get(&in[0], 5));   /* a tie in row 0 */
}

START_TEST(thread_count_independence)
{
	Graph *g = mixed_graph();
	HostTensor in[2];
	mixed_inputs(in);
	Res r[3];
	for (int k = 0; k < 3; k++) {
		MpOpts o = {.threads = k + 1};
		run_ok(g, in, &o, &r[k]);
	}
	ck_assert_int_gt(r[0].st.escalations, 0);   /* the test exercises escalation */
	for (int k = 1; k < 3; k++) {
		ck_assert_int_eq(r[k].st.escalations, r[0].st.escalations);
		ck_assert_int_eq(r[k].st.unsamplable, r[0].st.unsamplable);
		ck_assert_int_eq(r[k].st.elements, r[0].st.elements);
		for (int o = 0; o < g->noutputs; o++) {
			HostTensor *a = &r[0].out[o], *b = &r[k].out[o];
			size_t bytes = (size_t)a->n * (size_t)dt_info(a->dtype)->bytes;
			ck_assert_int_eq(a->n, b->n);
			ck_assert_msg(memcmp(a->data, b->data, bytes) == 0, "output %d differs", o);
			ck_assert(memcmp(r[0].status[o], r[k].status[o], (size_t)a->n) == 0);
		}
	}
	for (int k = 0; k < 3; k++)
		res_free(&r[k]);
	ht_free(&in[0]);
	ht_free(&in[1]);
	ir_free(g);
}
END_TEST

START_TEST(points_equal_full_evaluation)
{
	Graph *g = mixed_graph();
	HostTensor in[2];
	mixed_inputs(in);
	Res r;
	run_ok(g, in, NULL, &r);
	Diag d = {0};
	MpSession *s = mp_session_new(g, in, NULL, &d);
	ck_assert_msg(s != NULL, "%s", d.msg ? d.msg : "");
	for (int o = 0; o < g->noutputs; o++) {
		const Tensor *t = &g->tensors[g->outputs[o].tensor];
		int64_t n = r.out[o].n;
		int64_t *coords = malloc((size_t)(n * t->rank) * sizeof *coords);
		double *vals = malloc((size_t)n * sizeof *vals);
		uint8_t *sts = malloc((size_t)n);
		/* backwards, so that memoised elements are not simply reused in order */
		for (int64_t i = n - 1; i >= 0; i--) {
			int64_t f = i;
			for (int k = t->rank - 1; k >= 0; k--) {
				coords[i * t->rank + k] = f % t->dims[k].value;
				f /= t->dims[k].value;
			}
			double v;
			MpStatus st;
			ck_assert_int_eq(mp_point(s, o, &coords[i * t->rank], DT_NONE, &v, &st, &d), 0);
			ck_assert_int_eq(st, r.status[o][i]);
			ck_assert_msg(same(v, ht_get(&r.out[o], i)) || st != MP_EXACT_OK,
				      "output %d element %lld: %a vs %a", o, (long long)i, v,
				      ht_get(&r.out[o], i));
		}
		MpOpts two = {.threads = 2};
		MpStats st;
		ck_assert_int_eq(mp_points(g, in, &two, o, coords, n, DT_NONE, vals, sts, &st, &d), 0);
		for (int64_t i = 0; i < n; i++) {
			ck_assert_int_eq(sts[i], r.status[o][i]);
			ck_assert(same(vals[i], ht_get(&r.out[o], i)) || sts[i] != MP_EXACT_OK);
		}
		free(coords);
		free(vals);
		free(sts);
	}
	/* a point in another format than the output's: p[0, 0] in f64 and f16 */
	double v16, v64;
	MpStatus st;
	ck_assert_int_eq(mp_point(s, 1, (int64_t[]){0, 0}, DT_NONE, &v16, &st, &d), 0);
	ck_assert_int_eq(mp_point(s, 1, (int64_t[]){0, 0}, DT_F64, &v64, &st, &d), 0);
	ck_same(v64, ht_get(&r.out[7], 0));
	ck_same(mp_round_to(DT_F16, v64), v16);
	ck_assert_int_eq(mp_point(s, 1, (int64_t[]){16, 0}, DT_NONE, &v16, &st, &d), -1);
	ck_assert_msg(strstr(d.msg, "outside 0..15"), "%s", d.msg);
	diag_clear(&d);
	mp_session_free(s);
	res_free(&r);
	ht_free(&in[0]);
	ht_free(&in[1]);
	ir_free(g);
}
END_TEST

START_TEST(unsamplable_tie)
{
	Graph *g = ir_new("t.tg");
	Ref t = num(g, "0x1.002p0");   /* 1 + 2^-11: a tie between two f16 values */
	int y = scalar(g, "y", op2(g, OP_MUL, op1(g, OP_SQRT, t), op1(g, OP_SQRT, t)));
	int z = scalar(g, "z", t);
	ir_add_output(g, y, DT_F16, (SrcPos){0});
	ir_add_output(g, y, DT_F32, (SrcPos){0});
	ir_add_output(g, z, DT_F16, (SrcPos){0});
	MpOpts o = {.threads = 1, .prec0 = 64, .prec_cap = 256};
	Res r;
	run_ok(g, NULL, &o, &r);
	ck_assert_int_eq(r.status[0][0], MP_UNSAMPLABLE);
	ck_assert(isnan(ht_get(&r.out[0], 0)));
	ck_same(out1(&r, 1, 0), 0x1.002p0);
	ck_same(out1(&r, 2, 0), 1.0);   /* the exact tie rounds to even at once */
	ck_assert_int_eq(r.st.unsamplable, 1);
	ck_assert_int_eq(r.st.escalations, 2);   /* 64 -> 128 -> 256 */
	ck_assert_int_eq(r.st.max_prec, 256);
	res_free(&r);
	ir_free(g);
}
END_TEST

/* ------------------------------------------------------------ wide intervals */

/* The rows: W(a) = (exp(40) + a) - exp(40), see wide(). Each row is right only if the
 * operation's interval is sound (a wrong end settles to a wrong value at the first
 * precision) and the escalation reaches the exact answer. */
static Ref wide_row(Graph *g, int row)
{
	Ref w0 = wide(g, num(g, "0")), one = num(g, "1");
	switch (row) {
	case 0: return op1(g, OP_SIN, wide(g, num(g, "1.5707963267948966")));   /* max of sin */
	case 1: return op1(g, OP_COS, w0);                                      /* max of cos */
	case 2: return op1(g, OP_NEG, op1(g, OP_COS, wide(g, num(g, "3.141592653589793"))));
	case 3: return op2(g, OP_ADD, op2(g, OP_POW, w0, num(g, "2")), one);    /* even power */
	case 4: return op2(g, OP_ADD, op2(g, OP_MUL, w0, w0), one);             /* square */
	case 5: return op2(g, OP_ADD, op1(g, OP_ABS, w0), one);
	case 6: return op1(g, OP_RSQRT, wide(g, num(g, "4")));
	case 7: return op1(g, OP_SIGMOID, w0);
	case 8: return op1(g, OP_FLOOR, wide(g, num(g, "2.5")));
	case 9: return op1(g, OP_CEIL, wide(g, num(g, "2.5")));
	case 10: return op1(g, OP_CAST_F16, wide(g, num(g, "0.1")));
	case 11: return op2(g, OP_MAX, wide(g, one), wide(g, num(g, "2")));
	case 12: return op2(g, OP_MIN, wide(g, one), wide(g, num(g, "2")));
	case 13: return op2(g, OP_DIV, one, wide(g, num(g, "2")));
	case 14: return op2(g, OP_DIV, wide(g, num(g, "3")), wide(g, num(g, "3")));
	case 15: return op2(g, OP_MUL, wide(g, num(g, "-3")), wide(g, num(g, "0.5")));
	case 16: return op1(g, OP_SQRT, wide(g, num(g, "4")));
	case 17: return op2(g, OP_POW, wide(g, num(g, "4")), wide(g, num(g, "0.5")));
	case 18: return op1(g, OP_EXP, w0);
	case 19: return op2(g, OP_POW, wide(g, num(g, "-2")), num(g, "3"));   /* odd power */
	case 20: return op2(g, OP_POW, wide(g, num(g, "-2")), num(g, "-2"));  /* negative even */
	case 21: return op2(g, OP_POW, w0, num(g, "-2"));     /* pole: exactly pow(+0, -2) */
	case 22: return op1(g, OP_LOG, wide(g, one));         /* an exact 0 computed inexactly */
	case 23: return op2(g, OP_DIV, w0, w0);               /* 0 / 0, never decided */
	case 25: {   /* a GELU tail: -1e10 * (1 + erf(-1e10)), a tiny negative number (-0) */
		Ref m = op1(g, OP_NEG, num(g, "1e10"));
		return op2(g, OP_MUL, m, op2(g, OP_ADD, one, op1(g, OP_ERF, m)));
	}
	case 24: {   /* W(1) >= 1 ? W(1) : 1: never decided, but both branches are 1 there */
		Ref w1 = wide(g, one);
		return ir_op(g, OP_SELECT, TY_REAL, ir_op(g, OP_GE, TY_BOOL, w1, one, 0), w1, one);
	}
	default:   /* floor(1000 * -cos(c) + 0.1) for c near pi: the minimum of cos inside */
		return op1(g, OP_FLOOR, op2(g, OP_ADD, op2(g, OP_MUL, op1(g, OP_NEG,
			   op1(g, OP_COS, wide(g, num(g, "3.141592653589793")))), num(g, "1000")),
			   num(g, "0.1")));
	}
}

enum { UNS = 12345 };   /* expected: unsamplable */
static const double wide_want[] = {1, 1, 1, 1, 1, 1, 0.5, 0.5, 2, 3, 0x1.998p-4, 2, 1, 0.5,
				   1, -1.5, 2, 2, 1, -8, 0.25, UNS, UNS, UNS, 1, -0.0, 1000};

START_TEST(wide_intervals)
{
	Graph *g = ir_new("t.tg");
	int y = scalar(g, "y", wide_row(g, _i));
	ir_add_output(g, y, DT_F32, (SrcPos){0});
	ir_add_output(g, y, DT_F16, (SrcPos){0});
	Res r;
	MpOpts o = {.threads = 1, .prec0 = 64, .prec_cap = 1024};
	run_ok(g, NULL, &o, &r);
	for (int k = 0; k < 2; k++) {
		if (wide_want[_i] == UNS)
			ck_assert_int_eq(r.status[k][0], MP_UNSAMPLABLE);
		else
			ck_same(out1(&r, k, 0), wide_want[_i]);
	}
	res_free(&r);
	ir_free(g);
}
END_TEST

/* argmax and topk when one term is an interval ending exactly at another term's value:
 * u[0] = f16(v) for v just above the midpoint below 3 (so u[0] = 3, a tie with u[1] = 3,
 * which the smaller index wins), but at 64 bits u[0] is the interval [3 - 2^-9, 3]. */
START_TEST(tie_with_interval_end)
{
	Graph *g = ir_new("t.tg");
	Ref v = num(g, "0x2.ffc0000000000000004p0");   /* 3 - 2^-10 + 2^-78 */
	Ref u0 = op1(g, OP_CAST_F16, op2(g, OP_MUL, op1(g, OP_SQRT, v), op1(g, OP_SQRT, v)));
	Ref isz = ir_op(g, OP_EQ, TY_BOOL, var(g, 0), cint(g, 0), 0);
	int u = define(g, "u", 1, (int64_t[]){2}, MO_NONE, 0, 0,
		       ir_op(g, OP_SELECT, TY_REAL, isz, u0, num(g, "3")));
	int a = reduce0(g, "a", MO_ARGMAX, 2, rd1(g, u, var(g, 0)));
	int t = define(g, "t", 1, (int64_t[]){2}, MO_TOPK, cint(g, 0), cint(g, 2),
		       rd1(g, u, var(g, 1)));
	ir_add_output(g, a, DT_I32, (SrcPos){0});
	ir_add_output(g, t + 1, DT_I32, (SrcPos){0});
	ir_add_output(g, u, DT_F16, (SrcPos){0});
	Res r;
	MpOpts o = {.threads = 1, .prec0 = 64};
	run_ok(g, NULL, &o, &r);
	ck_same(out1(&r, 2, 0), 3.0);
	ck_same(out1(&r, 0, 0), 0);
	ck_same(out1(&r, 1, 0), 0);
	ck_same(out1(&r, 1, 1), 1);
	ck_assert_int_gt(r.st.escalations, 0);
	res_free(&r);
	ir_free(g);
}
END_TEST

/* ------------------------------------------------------------ decided special cases */

/* Values decided at the first precision although an operand is an interval or undecided:
 * each row settles at 64 bits with no escalation (before, each escalated to the cap and
 * came back unsamplable). uW(a) = W(a) / W(a) at a = 0 is 0 / 0 over intervals: never
 * decided. */
static Ref special_row(Graph *g, int row)
{
	Ref ninf = num(g, "-inf"), pinf = num(g, "inf"), z = num(g, "0"), nz = num(g, "-0");
	Ref e3 = num(g, "1e-3"), me3 = num(g, "-1e-3"), w0 = wide(g, z);
	Ref und = op2(g, OP_DIV, w0, wide(g, num(g, "0x1p-80")));   /* [-a, a] / [-a, a] */
	switch (row) {
	case 0: return ir_op(g, OP_FMA, TY_REAL, ninf, num(g, "0.0"), wide(g, num(g, "2")));
	case 1: return ir_op(g, OP_FMA, TY_REAL, z, pinf, wide(g, num(g, "2")));
	case 2: return ir_op(g, OP_FMA, TY_REAL, ninf, z, und);   /* NaN beats undecided */
	case 3: return ir_op(g, OP_FMA, TY_REAL, w0, w0, num(g, "nan"));
	case 4: return op2(g, OP_POW, z, e3);
	case 5: return op2(g, OP_POW, nz, e3);
	case 6: return op2(g, OP_POW, z, me3);
	case 7: return op2(g, OP_POW, nz, me3);
	case 8: return op2(g, OP_POW, ninf, e3);
	case 9: return op2(g, OP_POW, ninf, me3);
	case 10: return op2(g, OP_POW, z, op1(g, OP_SQRT, num(g, "2")));
	case 11: return op2(g, OP_POW, ninf, wide(g, num(g, "2.5")));   /* no odd integer */
	/* may be odd: pow(-0, ~3) is -0 or +0, so adding 1 is exactly 1 */
	case 12: return op2(g, OP_ADD, op2(g, OP_POW, nz, wide(g, num(g, "3"))), num(g, "1"));
	case 13: return op2(g, OP_POW, wide(g, num(g, "5")), z);     /* pow(x, 0) = 1 */
	default:   /* floor(pow([+0, a], 0.5)) = +0: pow is monotone on [+0, inf] */
		return op1(g, OP_FLOOR, op2(g, OP_POW, op2(g, OP_MAX, w0, z), num(g, "0.5")));
	}
}

static const double special_want[] = {NAN, NAN, NAN, NAN, 0.0, 0.0, INFINITY, INFINITY,
				       INFINITY, 0.0, 0.0, INFINITY, 1, 1, 0.0};

START_TEST(special_cases_settle_at_once)
{
	Graph *g = ir_new("t.tg");
	int y = scalar(g, "y", special_row(g, _i));
	ir_add_output(g, y, DT_F32, (SrcPos){0});
	Res r;
	MpOpts o = {.threads = 1, .prec0 = 64, .prec_cap = 1024};
	run_ok(g, NULL, &o, &r);
	ck_same(out1(&r, 0, 0), special_want[_i]);
	ck_assert_int_eq(r.st.escalations, 0);
	ck_assert_int_eq(r.st.max_prec, 64);
	res_free(&r);
	ir_free(g);
}
END_TEST

/* floor and ceil of erf, tanh and sigmoid of large finite arguments: the value is strictly
 * inside (-1, 1) (sigmoid: (0, 1)) although its interval ends at 1 (-1, 0) below ~1300
 * bits; each row settles at 64 bits. The last rows are guards: infinite arguments reach
 * the bounds exactly. */
static Ref bounded_row(Graph *g, int row)
{
	Ref big = num(g, "30"), nbig = num(g, "-30"), huge = num(g, "1e30");
	switch (row) {
	case 0: return op1(g, OP_FLOOR, op1(g, OP_ERF, big));
	case 1: return op1(g, OP_CEIL, op1(g, OP_ERF, big));
	case 2: return op1(g, OP_CEIL, op1(g, OP_ERF, nbig));     /* -0 */
	case 3: return op1(g, OP_FLOOR, op1(g, OP_ERF, nbig));
	case 4: return op1(g, OP_FLOOR, op1(g, OP_TANH, wide(g, num(g, "400"))));
	case 5: return op1(g, OP_CEIL, op1(g, OP_TANH, op1(g, OP_NEG, huge)));
	case 6: return op1(g, OP_FLOOR, op1(g, OP_SIGMOID, num(g, "1000")));
	case 7: return op1(g, OP_CEIL, op1(g, OP_SIGMOID, op1(g, OP_NEG, num(g, "1e20"))));
	case 8: return op1(g, OP_FLOOR, op1(g, OP_ERF, num(g, "inf")));
	default: return op1(g, OP_CEIL, op1(g, OP_SIGMOID, num(g, "-inf")));
	}
}

static const double bounded_want[] = {0, 1, -0.0, -1, 0, -0.0, 0, 1, 1, 0};

START_TEST(floor_ceil_of_bounded_functions)
{
	Graph *g = ir_new("t.tg");
	int y = scalar(g, "y", bounded_row(g, _i));
	ir_add_output(g, y, DT_F32, (SrcPos){0});
	Res r;
	MpOpts o = {.threads = 1, .prec0 = 64, .prec_cap = 10000};
	run_ok(g, NULL, &o, &r);
	ck_same(out1(&r, 0, 0), bounded_want[_i]);
	ck_assert_int_eq(r.st.escalations, 0);
	res_free(&r);
	ir_free(g);
}
END_TEST

/* pow(x, 2^63 + 1) for x ~ -1e-6, an interval around 0 at 64 bits: the exponent is odd
 * (an integer above 2^62 is odd at 64 bits and more), so the value is a negative number far
 * below every format's range: -0, not +0 (an even-power reading gave +0 at once). */
START_TEST(pow_large_odd_exponent)
{
	Graph *g = ir_new("t.tg");
	Ref x = wide(g, num(g, "-1e-6"));
	int y = scalar(g, "y", op2(g, OP_POW, x, num(g, "9223372036854775809")));
	ir_add_output(g, y, DT_F32, (SrcPos){0});
	Res r;
	MpOpts o = {.threads = 1, .prec0 = 64, .prec_cap = 1024};
	run_ok(g, NULL, &o, &r);
	ck_same(out1(&r, 0, 0), -0.0);
	res_free(&r);
	ir_free(g);
}
END_TEST

/* An i32 tensor read with a real `??` default is a real read (check.c gives it TY_REAL):
 * the evaluator read the tensor's integer slots as intervals and tripped the assertion
 * `s->done` in def_iv (or read an integer input's missing interval cache). */
START_TEST(int_tensor_read_as_real)
{
	Graph *g = ir_new("t.tg");
	int64_t n = 3;
	int in = input(g, "p", DT_I32, 1, &n);
	int k = define(g, "k", 1, (int64_t[]){3}, MO_NONE, 0, 0,
		       iop2(g, OP_MUL, var(g, 0), cint(g, 7)));
	Ref i1 = iop2(g, OP_ADD, var(g, 0), cint(g, 1));
	Ref half = num(g, "0.5");
	Ref a = ir_read(g, (uint32_t)k, &i1, 1, half, TY_REAL);
	Ref b = ir_read(g, (uint32_t)in, &i1, 1, half, TY_REAL);
	int y = define(g, "y", 1, (int64_t[]){3}, MO_NONE, 0, 0, op2(g, OP_ADD, a, b));
	ir_add_output(g, y, DT_F32, (SrcPos){0});
	double pv[] = {100, 200, 300};
	HostTensor ht = vec(DT_I32, 3, pv);
	static const double want[] = {207, 314, 1};
	for (int threads = 1; threads <= 2; threads++) {
		Res r;
		MpOpts o = {.threads = threads, .prec0 = 64};
		run_ok(g, &ht, &o, &r);
		for (int i = 0; i < 3; i++)
			ck_same(out1(&r, 0, i), want[i]);
		res_free(&r);
	}
	Diag d = {0};
	MpSession *s = mp_session_new(g, &ht, NULL, &d);
	ck_assert(s != NULL);
	double v;
	MpStatus st;
	ck_assert_int_eq(mp_point(s, 0, (int64_t[]){1}, DT_NONE, &v, &st, &d), 0);
	ck_same(v, 314);
	mp_session_free(s);
	ht_free(&ht);
	ir_free(g);
}
END_TEST

/* ------------------------------------------------------------ random self-check */

static const Op unops[] = {
	OP_NEG, OP_EXP, OP_LOG, OP_SQRT, OP_SIN, OP_COS, OP_TANH, OP_ERF, OP_SIGMOID, OP_EXPM1,
	OP_LOG1P, OP_ABS, OP_FLOOR, OP_CEIL, OP_RSQRT, OP_CAST_F16, OP_CAST_BF16, OP_EXP2,
	OP_LOG2, OP_CAST_F32,
};
static const Op binops[] = {OP_ADD, OP_SUB, OP_MUL, OP_DIV, OP_POW, OP_MAX, OP_MIN, OP_ADD, OP_MUL};
static const char *rlits[] = {"0.5", "3", "0.1", "1e-3", "2.5", "7", "0x1.8p-3", "-2"};

static Ref gen(Graph *g, uint64_t *s, int x, int depth)
{
	unsigned k = (unsigned)(rnext(s) % 12);
	if (depth == 0 || k < 3) {
		if (rnext(s) % 4 == 0) {
			const char *l = rlits[rnext(s) % ARRAY_LEN(rlits)];
			return l[0] == '-' ? op1(g, OP_NEG, num(g, l + 1)) : num(g, l);
		}
		Ref i = iop2(g, OP_MOD, iop2(g, OP_ADD, var(g, 0), cint(g, (int64_t)(rnext(s) % 3))),
			     cint(g, 8));
		return rd1(g, x, i);
	}
	Ref a = gen(g, s, x, depth - 1);
	if (k == 3) {   /* (E + a) - E: exactly a, but an interval far wider than an ulp */
		Ref e = op1(g, OP_EXP, num(g, rnext(s) % 2 ? "40" : "30"));
		return op2(g, OP_SUB, op2(g, OP_ADD, e, a), e);
	}
	if (k < 7)
		return op1(g, unops[rnext(s) % ARRAY_LEN(unops)], a);
	Ref b = gen(g, s, x, depth - 1);
	if (k < 11)
		return op2(g, binops[rnext(s) % ARRAY_LEN(binops)], a, b);
	return ir_op(g, OP_FMA, TY_REAL, a, b, gen(g, s, x, depth - 1));
}

/* The reference: the same expression in plain MPFR at 4000 bits, rounding to nearest at
 * each step (a format's rounding written from numerics.md section 1). */
enum { REF_PREC = 4000 };

static void ref_round(mpfr_ptr y, Dtype f)
{
	const DtypeInfo *fi = dt_info(f);
	mpfr_t t;
	mpfr_init2(t, fi->prec);
	int tern = mpfr_set(t, y, MPFR_RNDN);
	mpfr_exp_t emin = mpfr_get_emin(), emax = mpfr_get_emax();
	mpfr_set_emin(fi->emin);
	mpfr_set_emax(fi->emax);
	tern = mpfr_check_range(t, tern, MPFR_RNDN);
	mpfr_subnormalize(t, tern, MPFR_RNDN);
	mpfr_set_emin(emin);
	mpfr_set_emax(emax);
	mpfr_set(y, t, MPFR_RNDN);
	mpfr_clear(t);
}

static int64_t ref_int(const Graph *g, Ref r, int64_t i)
{
	const Node *n = &g->nodes[r];
	if (n->kind == NK_INT)
		return n->u.ival;
	if (n->kind == NK_VAR)
		return i;
	int64_t a = ref_int(g, n->a[0], i), b = ref_int(g, n->a[1], i);
	return n->op == OP_ADD ? a + b : ((a % b) + b) % b;
}

static void ref_eval(const Graph *g, Ref r, const HostTensor *x, int64_t i, mpfr_ptr y)
{
	const Node *n = &g->nodes[r];
	mpfr_rnd_t N = MPFR_RNDN;
	if (n->kind == NK_NUM) {
		mpfr_set_str(y, g->lits[n->u.lit].text, 0, N);
		return;
	}
	if (n->kind == NK_READ) {
		mpfr_set_d(y, ht_get(x, ref_int(g, ir_read_idx(g, n)[0], i)), N);
		return;
	}
	mpfr_t b, c;
	mpfr_inits2(REF_PREC, b, c, (mpfr_ptr)0);
	ref_eval(g, n->a[0], x, i, y);
	int ar = op_info((Op)n->op)->arity;
	if (ar > 1)
		ref_eval(g, n->a[1], x, i, b);
	if (ar > 2)
		ref_eval(g, n->a[2], x, i, c);
	switch (n->op) {
	case OP_NEG: mpfr_neg(y, y, N); break;
	case OP_EXP: mpfr_exp(y, y, N); break;
	case OP_EXP2: mpfr_exp2(y, y, N); break;
	case OP_EXPM1: mpfr_expm1(y, y, N); break;
	case OP_LOG: mpfr_log(y, y, N); break;
	case OP_LOG2: mpfr_log2(y, y, N); break;
	case OP_LOG1P: mpfr_log1p(y, y, N); break;
	case OP_SQRT: mpfr_sqrt(y, y, N); break;
	case OP_SIN: mpfr_sin(y, y, N); break;
	case OP_COS: mpfr_cos(y, y, N); break;
	case OP_TANH: mpfr_tanh(y, y, N); break;
	case OP_ERF: mpfr_erf(y, y, N); break;
	case OP_ABS: mpfr_abs(y, y, N); break;
	case OP_FLOOR: mpfr_rint_floor(y, y, N); break;
	case OP_CEIL: mpfr_rint_ceil(y, y, N); break;
	case OP_SIGMOID:
		mpfr_neg(y, y, N);
		mpfr_exp(y, y, N);
		mpfr_add_ui(y, y, 1, N);
		mpfr_ui_div(y, 1, y, N);
		break;
	case OP_RSQRT:
		if (mpfr_zero_p(y))
			mpfr_set_inf(y, mpfr_signbit(y) ? -1 : 1);
		else
			mpfr_rec_sqrt(y, y, N);
		break;
	case OP_CAST_F16: ref_round(y, DT_F16); break;
	case OP_CAST_BF16: ref_round(y, DT_BF16); break;
	case OP_CAST_F32: ref_round(y, DT_F32); break;
	case OP_ADD: mpfr_add(y, y, b, N); break;
	case OP_SUB: mpfr_sub(y, y, b, N); break;
	case OP_MUL: mpfr_mul(y, y, b, N); break;
	case OP_DIV: mpfr_div(y, y, b, N); break;
	case OP_POW: mpfr_pow(y, y, b, N); break;
	case OP_FMA: mpfr_fma(y, y, b, c, N); break;
	case OP_MAX: case OP_MIN: {
		int s = n->op == OP_MAX ? 1 : -1;
		if (mpfr_nan_p(y) || mpfr_nan_p(b))
			mpfr_set_nan(y);
		else if (mpfr_zero_p(y) && mpfr_zero_p(b))   /* max: +0 if either is; min: if both */
			mpfr_set_zero(y, (s > 0 ? !mpfr_signbit(y) || !mpfr_signbit(b)
					       : !mpfr_signbit(y) && !mpfr_signbit(b)) ? 1 : -1);
		else if (s * mpfr_cmp(b, y) > 0)
			mpfr_set(y, b, N);
		break;
	}
	default: ck_abort_msg("no reference for %s", op_info((Op)n->op)->name);
	}
	mpfr_clears(b, c, (mpfr_ptr)0);
}

static const Monoid rmonoids[] = {MO_SUM, MO_PROD, MO_MAX, MO_MIN, MO_LOGSUMEXP};

/* The reference of MONOID over the (unrounded) reference terms t[0..n-1]. */
static void ref_reduce(Monoid m, mpfr_t *t, int n, mpfr_ptr y)
{
	mpfr_rnd_t N = MPFR_RNDN;
	bool nan = false;
	for (int i = 0; i < n; i++)
		nan |= mpfr_nan_p(t[i]) != 0;
	if (m == MO_SUM) {
		mpfr_ptr p[8];
		for (int i = 0; i < n; i++)
			p[i] = t[i];
		mpfr_sum(y, p, (unsigned long)n, N);
		return;
	}
	if (m == MO_PROD) {
		mpfr_set_ui(y, 1, N);
		for (int i = 0; i < n; i++)
			mpfr_mul(y, y, t[i], N);
		return;
	}
	if (nan) {
		mpfr_set_nan(y);
		return;
	}
	int s = m == MO_MIN ? -1 : 1;
	mpfr_set(y, t[0], N);
	for (int i = 1; i < n; i++) {
		int k = mpfr_cmp(t[i], y);
		if (k == 0 && mpfr_zero_p(y))
			k = (int)!mpfr_signbit(t[i]) - (int)!mpfr_signbit(y);
		if (s * k > 0)
			mpfr_set(y, t[i], N);
	}
	if (m != MO_LOGSUMEXP || mpfr_inf_p(y))
		return;
	mpfr_t acc, e;
	mpfr_inits2(REF_PREC, acc, e, (mpfr_ptr)0);
	mpfr_set_zero(acc, 1);
	for (int i = 0; i < n; i++) {
		mpfr_sub(e, t[i], y, N);
		mpfr_exp(e, e, N);
		mpfr_add(acc, acc, e, N);
	}
	mpfr_log(acc, acc, N);
	mpfr_add(y, y, acc, N);
	mpfr_clears(acc, e, (mpfr_ptr)0);
}

/* Prints a random expression (for the message of a failing case). */
static void dump(const Graph *g, Ref r)
{
	const Node *n = &g->nodes[r];
	switch (n->kind) {
	case NK_NUM: fprintf(stderr, "%s", g->lits[n->u.lit].text); return;
	case NK_INT: fprintf(stderr, "%lld", (long long)n->u.ival); return;
	case NK_VAR: fprintf(stderr, "i"); return;
	case NK_READ:
		fprintf(stderr, "x[");
		dump(g, ir_read_idx(g, n)[0]);
		fprintf(stderr, "]");
		return;
	default:
		fprintf(stderr, "%s(", op_info((Op)n->op)->name);
		for (int k = 0; k < op_info((Op)n->op)->arity; k++) {
			fprintf(stderr, k ? ", " : "");
			dump(g, n->a[k]);
		}
		fprintf(stderr, ")");
	}
}

static void dump_case(const Graph *g, Ref body, const HostTensor *in)
{
	dump(g, body);
	fprintf(stderr, "\n  x =");
	for (int q = 0; q < 8; q++)
		fprintf(stderr, " %a", ht_get(in, q));
	fprintf(stderr, "\n");
}

START_TEST(random_self_check)
{
	/* f64 mostly, at working precisions just above 53 bits: interval ends then straddle
	 * the output's rounding boundaries often, so an unsound end shows as a wrong value */
	static const Dtype fmts[] = {DT_F64, DT_F64, DT_F64, DT_F64, DT_F64, DT_F32, DT_F16, DT_BF16};
	uint64_t seed = 1234567 + (uint64_t)_i;
	int settled = 0, total = 0, agree = 0;
	mpfr_set_emin(mpfr_get_emin_min());
	mpfr_set_emax(mpfr_get_emax_max());
	mpfr_t ref;
	mpfr_init2(ref, REF_PREC);
	for (int c = 0; c < 250; c++) {
		Graph *g = ir_new("t.tg");
		int x = input(g, "x", DT_F64, 1, (int64_t[]){8});
		Ref body = gen(g, &seed, x, 1 + (int)(rnext(&seed) % 4));
		int y = define(g, "y", 1, (int64_t[]){8}, MO_NONE, 0, 0, body);
		Dtype f = fmts[rnext(&seed) % ARRAY_LEN(fmts)];
		Monoid m = rmonoids[rnext(&seed) % ARRAY_LEN(rmonoids)];
		int z = reduce0(g, "z", m, 8, rd1(g, y, var(g, 0)));
		ir_add_output(g, y, f, (SrcPos){0});
		ir_add_output(g, z, f, (SrcPos){0});
		HostTensor in;
		ck_assert_int_eq(ht_alloc(&in, DT_F64, 1, (int64_t[]){8}), 0);
		for (int i = 0; i < 8; i++) {
			double v = ldexp(runif(&seed) + 0.5, (int)(rnext(&seed) % 9) - 4);
			ht_set(&in, i, rnext(&seed) % 3 == 0 ? -v : rnext(&seed) % 16 == 0 ? 0.0 : v);
		}
		long p = 54 + (long)(rnext(&seed) % 4);
		MpOpts lo = {.threads = 1, .prec0 = p, .prec_cap = p};
		MpOpts hi = {.threads = 1, .prec0 = p + 20, .prec_cap = p + 20};
		Res a, b;
		run_ok(g, &in, &lo, &a);
		run_ok(g, &in, &hi, &b);
		mpfr_t terms[8];
		for (int i = 0; i < 8; i++) {
			mpfr_init2(terms[i], REF_PREC);
			ref_eval(g, body, &in, i, terms[i]);
		}
		for (int e = 0; e < 9; e++) {
			int o = e < 8 ? 0 : 1, i = e < 8 ? e : 0;
			if (e < 8)
				mpfr_set(ref, terms[e], MPFR_RNDN);
			else
				ref_reduce(m, terms, 8, ref);
			ref_round(ref, f);
			double want = mpfr_get_d(ref, MPFR_RNDN);
			bool sa = a.status[o][i] == MP_EXACT_OK, sb = b.status[o][i] == MP_EXACT_OK;
			double va = ht_get(&a.out[o], i), vb = ht_get(&b.out[o], i);
			total++;
			settled += sa && sb;
			if (sa && sb)
				ck_assert_msg(same(va, vb), "case %d elem %d: p %a vs p+20 %a", c, e, va, vb);
			if ((sa && !same(va, want)) || (sb && !same(vb, want)))
				dump_case(g, body, &in);
			if (sa)
				ck_assert_msg(same(va, want), "case %d elem %d (%s, p %ld): %a, reference %a",
					      c, e, dt_name(f), p, va, want);
			if (sb)
				ck_assert_msg(same(vb, want), "case %d elem %d: %a, reference %a", c, e, vb, want);
			agree += sa && same(va, want);
		}
		for (int i = 0; i < 8; i++)
			mpfr_clear(terms[i]);
		res_free(&a);
		res_free(&b);
		ht_free(&in);
		ir_free(g);
	}
	mpfr_clear(ref);
	fprintf(stderr, "random_self_check %d: %d of %d settled at p and p + 20, %d checked\n",
		_i, settled, total, agree);
	ck_assert_msg(settled * 10 >= total * 7, "only %d of %d elements settled", settled, total);
	ck_assert_int_gt(agree, 0);
}
END_TEST

/* ------------------------------------------------------------ through the parser */

static const char sem_src[] =
	"graph sem\n"
	"size N = 4\n"
	"input x : f32[N]\n"
	"input tok : i32[3]\n"
	"a[i:N] = x[i - 1] ?? -inf\n"
	"b[i:N] = i % 2 == 0 ? x[i] : -x[i]\n"
	"c[] = sum(i:N) x[i] * 0.5 * 2\n"
	"d[i:N] = f32(i) / N\n"
	"e[] = max(i:N) x[i] - x[i]\n"
	"m[] = -0.0 + -0.0\n"
	"k[i:N] = argmax(j: 0..i+1) x[j]\n"
	"g[t:3] = x[tok[t]]\n"
	"output a : f32, b : f32, c : f64, d : f16, e : f32, m : f64, k : i32, g : f32\n";

START_TEST(parsed_graph_semantics)
{
	Diag d = {0};
	Graph *g = ir_parse(sem_src, strlen(sem_src), "sem.tg", NULL, 0, &d);
	ck_assert_msg(g != NULL, "%s", d.msg ? d.msg : "");
	HostTensor in[2] = {vec(DT_F32, 4, (double[]){3, -1, 4, 1}),
			    vec(DT_I32, 3, (double[]){2, _i ? 4 : 3, 0})};
	Res r;
	if (_i) {   /* tok[1] = 4 is out of range: the message points at the read */
		ck_assert_int_eq(run(g, in, NULL, &r, &d), -1);
		ck_assert_int_eq(d.code, 2);
		ck_assert_msg(strstr(d.msg, "sem.tg:12:") == d.msg && strstr(d.msg,
			      "indirect read out of range: index 1 of x is tok[1] = 4, outside 0..3 "
			      "(computing g[1])\ng[t:3] = x[tok[t]]\n"), "%s", d.msg);
		diag_clear(&d);
	} else {
		run_ok(g, in, NULL, &r);
		static const double wa[] = {-INFINITY, 3, -1, 4}, wb[] = {3, 1, 4, -1},
				    wd[] = {0, 0.25, 0.5, 0.75}, wk[] = {0, 0, 2, 2}, wg[] = {4, 1, 3};
		for (int i = 0; i < 4; i++) {
			ck_same(out1(&r, 0, i), wa[i]);
			ck_same(out1(&r, 1, i), wb[i]);
			ck_same(out1(&r, 3, i), wd[i]);
			ck_same(out1(&r, 6, i), wk[i]);
		}
		for (int i = 0; i < 3; i++)
			ck_same(out1(&r, 7, i), wg[i]);
		ck_same(out1(&r, 2, 0), 7);
		ck_same(out1(&r, 4, 0), 0.0);
		ck_same(out1(&r, 5, 0), -0.0);
		res_free(&r);
	}
	ht_free(&in[0]);
	ht_free(&in[1]);
	ir_free(g);
}
END_TEST

/* Every example parses, evaluates with normal inputs on two threads with every element
 * settled, and sampled points agree with the full evaluation. */
START_TEST(examples_evaluate)
{
	static const char *ex[] = {
		"examples/matmul.tg", "examples/softmax.tg", "examples/layernorm.tg",
		"examples/rmsnorm.tg", "examples/attention.tg", "examples/rope.tg",
		"examples/swiglu_mlp.tg", "examples/moe_topk.tg", "examples/paged_kv_decode.tg",
		"examples/conv1d.tg", "examples/embedding.tg", "examples/batched_matmul.tg",
	};
	Diag d = {0};
	Graph *g = ir_parse_file(ex[_i], NULL, 0, &d);
	ck_assert_msg(g != NULL, "%s: %s", ex[_i], d.msg ? d.msg : "");
	HostTensor in[16];
	InputSpec spec = {DIST_NORMAL, 11, false};
	ck_assert_int_eq(mp_make_inputs(g, &spec, NULL, in, &d), 0);
	Res r;
	MpOpts two = {.threads = 2};
	run_ok(g, in, &two, &r);
	ck_assert_int_eq(r.st.unsamplable, 0);
	ck_assert_int_gt(r.st.mpfr_ops, 0);
	MpSession *s = mp_session_new(g, in, NULL, &d);
	ck_assert(s != NULL);
	for (int o = 0; o < g->noutputs; o++) {
		const Tensor *t = &g->tensors[g->outputs[o].tensor];
		for (int64_t i = 0; i < r.out[o].n; i += r.out[o].n / 7 + 1) {
			int64_t c[IR_MAXRANK], f = i;
			for (int k = t->rank - 1; k >= 0; k--) {
				c[k] = f % t->dims[k].value;
				f /= t->dims[k].value;
			}
			double v;
			MpStatus st;
			ck_assert_int_eq(mp_point(s, o, c, DT_NONE, &v, &st, &d), 0);
			ck_assert_int_eq(st, MP_EXACT_OK);
			ck_same(v, ht_get(&r.out[o], i));
		}
	}
	mp_session_free(s);
	res_free(&r);
	for (int k = 0; k < ir_ninputs(g); k++)
		ht_free(&in[k]);
	ir_free(g);
}
END_TEST

/* ------------------------------------------------------------ the suite */

static Suite *suite(void)
{
	Suite *s = suite_create("exact");
	TCase *t = tcase_create("values");
	tcase_set_timeout(t, 60);
	tcase_add_test(t, sum_cancels_exactly);
	tcase_add_loop_test(t, correctly_rounded_constants, 0, (int)ARRAY_LEN(consts));
	tcase_add_test(t, f16_spot_checks);
	tcase_add_test(t, logsumexp_of_equal_terms);
	tcase_add_loop_test(t, argmax_ties_and_nan, 0, (int)ARRAY_LEN(args));
	tcase_add_test(t, argmax_of_computed_terms);
	tcase_add_loop_test(t, topk_order, 0, 2);
	tcase_add_test(t, topk_short_range_is_an_error);
	tcase_add_loop_test(t, empty_range_identity, 0, (int)ARRAY_LEN(empties));
	tcase_add_test(t, signed_zeros);
	tcase_add_loop_test(t, special_reductions, 0, (int)ARRAY_LEN(specials));
	tcase_add_test(t, indirect_read_out_of_range);
	tcase_add_test(t, padding_reads);
	tcase_add_loop_test(t, integer_errors, 0, 2);
	tcase_add_test(t, integer_values);
	tcase_add_test(t, undecided_integer_branch);
	tcase_add_test(t, malformed_graph_rejected);
	tcase_add_test(t, thread_count_independence);
	tcase_add_test(t, points_equal_full_evaluation);
	tcase_add_test(t, unsamplable_tie);
	tcase_add_loop_test(t, wide_intervals, 0, (int)ARRAY_LEN(wide_want));
	tcase_add_test(t, tie_with_interval_end);
	tcase_add_loop_test(t, special_cases_settle_at_once, 0, (int)ARRAY_LEN(special_want));
	tcase_add_test(t, pow_large_odd_exponent);
	tcase_add_loop_test(t, floor_ceil_of_bounded_functions, 0, (int)ARRAY_LEN(bounded_want));
	tcase_add_test(t, int_tensor_read_as_real);
	tcase_add_loop_test(t, random_self_check, 0, 4);
	tcase_add_loop_test(t, parsed_graph_semantics, 0, 2);
	tcase_add_loop_test(t, examples_evaluate, 0, 12);
	suite_add_tcase(s, t);
	return s;
}

int main(void)
{
	return tu_run(suite());
}
