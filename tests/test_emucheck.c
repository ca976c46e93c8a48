/* tests/test_emucheck.c: the emulation check (verify/emucheck.c) and the backend facts it
 * reads (compiler.h BeFacts).
 *
 * Which scheduled graphs are fully specified on which facts (a table, no backend needed);
 * the bit-for-bit comparison; the judgement of a run against its schedule's emulation,
 * subnormals and flushing devices included (a hand-made worker result); then on the real
 * c backend: the seeded fault tie_away (f16 and bf16 conversions rounding exact ties away
 * from zero) passes every budget and is an emulation-mismatch naming the first differing
 * stored definition, and without it the same graphs pass; last, the facts a worker
 * reports for the opencl and vulkan devices here.
 */
#include <unistd.h>
#include "testutil.h"
#include "../interp/interp.h"
#include "../oracles/oracles.h"
#include "../verify/verify.h"

/* ------------------------------------------------------------ facts */

/* The facts the tests judge with: a backend's own, or one refined as a device would. */
static BeFacts facts(const char *which)
{
	char name[32];
	snprintf(name, sizeof name, "%s", which);
	char *plus = strchr(name, '+');
	if (plus)
		*plus = 0;
	const Backend *b = be_find(name);
	ck_assert_ptr_nonnull(b);
	BeFacts f = b->facts;
	if (plus && strcmp(plus + 1, "cr") == 0) {   /* CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT */
		f.exact[DT_F32] |= BE_OPS_DIVSQRT;
		f.exact[DT_F16] |= BE_OPS_DIVSQRT;
	}
	if (plus && strcmp(plus + 1, "fc") == 0) {   /* SignedZeroInfNanPreserve + RTE, 32 bits */
		f.specials = true;
		f.minmax = BE_MINMAX_IEEE;
		f.exact[DT_F32] |= BE_OPS_SELECTING | BE_OPS_ROUNDED | BE_OP(OP_CAST_F32);
		f.exact[DT_F16] |= BE_OPS_SELECTING | BE_OPS_ROUNDED | BE_OP(OP_CAST_F16);
		f.exact[DT_BF16] |= BE_OPS_SELECTING | BE_OPS_ROUNDED | BE_OP(OP_CAST_BF16);
	}
	return f;
}

static const char dot[] = "input x : f32[4, 3]\ninput w : f32[3]\n"
			  "y[i:4] = sum(j:3) x[i, j] * w[j]\noutput y : f32\n";

/* Two outputs: a through exp, b through + and * alone. */
static const char two[] = "input x : f32[4]\na[i:4] = exp(x[i])\nb[i:4] = x[i] * 3 + 1\n"
			  "output a : f32, b : f32\n";
/* b reads e (exp) stored or inlined; c does not. */
static const char via[] = "input x : f32[4]\ne[i:4] = exp(x[i])\nb[i:4] = e[i] * 3 + 1\n"
			  "c[i:4] = x[i] * 2\noutput b : f32, c : f32\n";
/* b reads x through an index that an argmax of exp terms chose; c reads only x. */
static const char idx[] = "input x : f32[4, 3]\na[i:4] = argmax(j:3) exp(x[i, j])\n"
			  "b[i:4] = x[i, a[i]] * 2\nc[i:4] = x[i, 0] * 2\noutput b : f32, c : f32\n";

static const struct {
	const char *src, *sched, *facts;
	bool want;
	const char *why;   /* a part of the reason when not */
	int out;           /* the output judged (-1: the whole graph) */
} spec_cases[] = {
	{dot, "", "c", true, "", 0},
	{dot, "", "cuda", true, "", 0},
	{dot, "", "opencl", true, "", 0},
	{dot, "", "vulkan", false, "not promised", 0},    /* no float controls: rounding unknown */
	{dot, "", "vulkan+fc", true, "", 0},
	{dot, "", "wgsl", false, "contraction", 0},
	{dot, "order y : pairwise\nsplit y : j=2\naccum y : bf16", "c", true, "", 0},
	{dot, "accum y : f64", "vulkan+fc", false, "f64", 0},
	{"input x : f32[4]\ny[i:4] = exp(x[i])\noutput y : f32\n", "", "c", false,
	 "exp has an allowance", 0},
	{"input x : f32[4]\ny[i:4] = rsqrt(x[i])\noutput y : f32\n", "", "cuda", false,
	 "rsqrt has an allowance", 0},
	{"input x : f32[4]\ny[i:4] = sigmoid(x[i])\noutput y : f32\n", "", "c", false,
	 "sigmoid", 0},
	{"input x : f32[4]\ny[i:4] = x[i] / 3\noutput y : f32\n", "", "c", true, "", 0},
	{"input x : f32[4]\ny[i:4] = x[i] / 3\noutput y : f32\n", "", "opencl", false,
	 "div in f32", 0},
	{"input x : f32[4]\ny[i:4] = sqrt(x[i])\noutput y : f32\n", "", "opencl+cr", true, "", 0},
	{"input x : f32[4]\ny[i:4] = x[i] / 3\noutput y : f32\n", "", "vulkan+fc", false,
	 "div in f32", 0},
	{"input x : f64[4]\ny[i:4] = x[i] / 3\noutput y : f64\n", "", "opencl", true, "", 0},
	{"input x : f32[4, 3]\ns[i:4] = logsumexp(j:3) x[i, j]\noutput s : f32\n", "", "c", false,
	 "logsumexp", 0},
	/* fma through f32 then rounded to f16 is not f16's fma */
	{"input x : f32[4, 3]\ns[i:4] = sum(j:3) fma(x[i, j], x[i, j], 1)\noutput s : f32\n",
	 "accum s : f16", "c", false, "fma in f16", 0},
	{"input x : f32[4, 3]\ns[i:4] = sum(j:3) fma(x[i, j], x[i, j], 1)\noutput s : f32\n", "",
	 "c", true, "", 0},
	{"input x : f32[4, 3]\nm[i:4] = max(j:3) abs(floor(x[i, j])) - min(x[i, j], 0)\n"
	 "a[i:4] = argmax(j:3) x[i, j] * 2\noutput m : f32, a : i32\n", "", "vulkan+fc", true, "", 0},
	/* no real arithmetic at all: loads, stores and integers are exact anywhere */
	{"y[i:6] = (i - 3) % 4\noutput y : i32\n", "", "wgsl", true, "", 0},
	{"input x : f32[4]\ninput t : i32[3]\ny[i:3] = x[t[i]]\noutput y : f32\n", "", "wgsl",
	 true, "", 0},
	{"input x : f32[4]\ny[i:3] = x[i] ?? 0.5\noutput y : f32\n", "", "vulkan", true, "", 0},
	{"input x : f32[4]\ny[i:4] = x[i]\noutput y : f16\n", "store y : f16", "wgsl", false,
	 "sign of zero", 0},
	{"input x : f32[4]\ny[i:4] = x[i]\noutput y : f16\n", "store y : f16", "vulkan+fc", true,
	 "", 0},
	{"input x : f32[4]\ny[i:4] = x[i] > 0 ? x[i] : 0.5\noutput y : f32\n", "", "wgsl", false,
	 "NaN", 0},
	{"input x : f32[4]\ny[i:4] = f16(x[i]) * 3\noutput y : f32\n", "", "c", true, "", 0},
	/* per output, over the definitions it depends on */
	{two, "", "c", false, "exp has an allowance", 0},
	{two, "", "c", true, "", 1},
	{two, "", "c", false, "exp has an allowance", -1},
	{two, "", "vulkan+fc", true, "", 1},
	{via, "", "c", false, "exp has an allowance", 0},
	{via, "inline e", "c", false, "exp has an allowance", 0},
	{via, "inline e", "c", true, "", 1},
	{idx, "", "c", false, "exp has an allowance", 0},
	{idx, "", "c", true, "", 1},
	/* contraction and special values: only where the output's own definitions need them */
	{"y[i:6] = (i - 3) % 4\ninput x : f32[6]\nz[i:6] = x[i] * 2 + 1\n"
	 "output y : i32, z : f32\n", "", "wgsl", true, "", 0},
	{"y[i:6] = (i - 3) % 4\ninput x : f32[6]\nz[i:6] = x[i] * 2 + 1\n"
	 "output y : i32, z : f32\n", "", "wgsl", false, "contraction", 1},
	{"y[i:6] = (i - 3) % 4\ninput x : f32[6]\nz[i:6] = x[i] * 2 + 1\n"
	 "output y : i32, z : f32\n", "", "wgsl", false, "contraction", -1},
};

START_TEST(fully_specified)
{
	Graph *g = tu_parse(spec_cases[_i].src);
	Diag d = {0};
	const char *sch = spec_cases[_i].sched;
	ck_assert_msg(ir_parse_schedule(g, sch, strlen(sch), "t.sched", &d) == 0, "%s", d.msg);
	Schedule s;
	ck_assert_int_eq(sched_build(g, &s, &d), 0);
	BeFacts f = facts(spec_cases[_i].facts);
	char why[300] = "unset";
	bool got = vf_emu_specified(g, &s, &f, spec_cases[_i].out, why, sizeof why);
	ck_assert_msg(got == spec_cases[_i].want, "case %d (%s): %d, why '%s'", _i,
		      spec_cases[_i].facts, got, why);
	if (got)
		ck_assert_str_eq(why, "");
	else
		ck_assert_msg(strstr(why, spec_cases[_i].why), "case %d: '%s' lacks '%s'", _i, why,
			      spec_cases[_i].why);
	sched_free(&s);
	ir_free(g);
}
END_TEST

/* The backends' facts as the budgets read them: flushing where their specifications allow
 * it, NaN claimed only where special values are kept. */
START_TEST(backend_facts)
{
	const Backend *c = be_find("c"), *vk = be_find("vulkan"), *wg = be_find("wgsl");
	ck_assert(c->facts.flush == 0 && c->facts.specials && c->facts.no_contract);
	ck_assert(be_exact(&c->facts, OP_DIV, DT_F32) && !be_exact(&c->facts, OP_EXP, DT_F32));
	ck_assert(!be_exact(&c->facts, OP_FMA, DT_F16) && be_exact(&c->facts, OP_FMA, DT_F64));
	ck_assert(vk->facts.flush & (1u << DT_F32) && vk->facts.flush & (1u << DT_F64));
	ck_assert(vk->device_facts && vk->flush_source && strstr(vk->flush_source, "Vulkan"));
	ck_assert(!wg->facts.no_contract && wg->facts.flush == 1u << DT_F32);
	ck_assert(!be_exact(&be_find("opencl")->facts, OP_DIV, DT_F32));
	ck_assert(be_exact(&be_find("opencl")->facts, OP_DIV, DT_F64));
	for (int k = 0; be_at(k); k++)   /* every backend: integers exact */
		ck_assert_msg(be_at(k)->facts.exact[DT_I32] == BE_OPS_INT, "%s", be_at(k)->name);
	/* the budget reads the flush from the facts (bf16 is computed in f32) */
	ck_assert(orc_may_flush("vulkan", DT_BF16, NULL) && !orc_may_flush("c", DT_F32, NULL));
}
END_TEST

/* ------------------------------------------------------------ comparing */

START_TEST(bits)
{
	const double a[] = {1.0, NAN, 0.0, 2.0, 5.0, -INFINITY};
	const double b[] = {1.0, -NAN, -0.0, 2.0, 4.0, -INFINITY};
	int64_t n = 6;
	HostTensor x, y;
	ck_assert_int_eq(ht_alloc(&x, DT_F32, 1, &n), 0);
	ck_assert_int_eq(ht_alloc(&y, DT_F32, 1, &n), 0);
	for (int i = 0; i < 6; i++) {
		ht_set(&x, i, a[i]);
		ht_set(&y, i, b[i]);
	}
	VfEmuDiff df;
	vf_emu_compare(&x, &y, &df);
	ck_assert_int_eq(df.n_diff, 2);   /* the signs of zero, 5 against 4 */
	ck_assert_int_eq(df.first, 2);
	ck_assert(df.ulps == 0 && signbit(df.want) && !signbit(df.got));
	ht_set(&y, 2, 0.0);
	ht_set(&y, 4, NAN);
	vf_emu_compare(&x, &y, &df);
	ck_assert_int_eq(df.n_diff, 1);
	ck_assert(df.first == 4 && isinf(df.ulps));
	ht_free(&x);
	ht_free(&y);
	ck_assert_int_eq(ht_alloc(&x, DT_I32, 1, &n), 0);
	ck_assert_int_eq(ht_alloc(&y, DT_I32, 1, &n), 0);
	ht_set(&x, 3, 7);
	vf_emu_compare(&x, &y, &df);
	ck_assert(df.n_diff == 1 && df.first == 3 && df.ulps == 7);
	ht_free(&x);
	ht_free(&y);
}
END_TEST

/* ------------------------------------------------------------ judging a run */

/* The emulation of g under s (what a correct kernel delivers on a fully specified backend). */
static HostTensor *emulated(const Graph *g, const Schedule *s, const HostTensor *in)
{
	OrcEmu e;
	orc_emu_config(g, s, &e);
	HostTensor *out = calloc((size_t)g->noutputs + 1, sizeof *out);
	Diag d = {0};
	MpOpts o = {.threads = 1};
	ck_assert_msg(mp_emulate(g, in, &e.cfg, &o, out, NULL, &d) == 0, "%s", d.msg);
	orc_emu_free(&e);
	return out;
}

/* A run on a device that may flush f32 subnormals is held to the emulation where the
 * emulation met none, and not where it met one; a wrong element is found; a sampled
 * output, a run without outputs and a function with an allowance are not emulated. */
START_TEST(judge_runs)
{
	Graph *g = tu_parse("input x : f32[3]\ny[i:3] = x[i] * 1e-30\noutput y : f32\n");
	VfSched sc = {.name = "default"};
	sched_default(g, &sc.s);
	HostTensor *in = tu_new_inputs(g);
	const double normal[3] = {1e10, -2e10, 1e9}, tiny[3] = {1e-9, -2e-10, 1};
	MpOpts mo = {.threads = 1};
	BeFacts flushing = be_find("c")->facts, ieee = be_find("c")->facts;
	flushing.flush = 1u << DT_F32;
	const Backend *b = be_find("c");
	for (int pass = 0; pass < 2; pass++) {
		for (int i = 0; i < 3; i++)
			ht_set(&in[0], i, pass ? tiny[i] : normal[i]);
		VfEmu *e = vf_emu_new(g, in, &sc, 1, &mo, 0);
		WorkerResult w = {.status = WK_OK, .outs = emulated(g, &sc.s, in), .facts = flushing};
		VfEmuResult r;
		vf_emu_judge(e, b, 0, &w, false, &r);
		ck_assert_msg(r.out[0].applies == !pass, "pass %d: %s", pass, r.out[0].why);
		if (pass)
			ck_assert_msg(strstr(r.out[0].why, "may flush f32 subnormals"), "%s",
				      r.out[0].why);
		else
			ck_assert_int_eq(r.out[0].diff.n_diff, 0);
		vf_emu_result_free(&r);
		w.facts = ieee;   /* a device that keeps them: held to it, and a wrong bit is seen */
		ht_set(&w.outs[0], 1, nextafterf((float)ht_get(&w.outs[0], 1), 0));
		vf_emu_judge(e, b, 0, &w, false, &r);
		ck_assert(r.out[0].applies && r.out[0].diff.n_diff == 1 && r.out[0].diff.first == 1);
		ck_assert(r.out[0].diff.ulps == 1);
		vf_emu_result_free(&r);
		vf_emu_judge(e, b, 0, &w, true, &r);
		ck_assert(!r.out[0].applies && strstr(r.out[0].why, "sampled"));
		vf_emu_result_free(&r);
		w.status = WK_CRASH;
		vf_emu_judge(e, b, 0, &w, false, &r);
		ck_assert(!r.out[0].applies && strstr(r.out[0].why, "no outputs"));
		vf_emu_result_free(&r);
		tu_free_tensors(w.outs, 1);
		vf_emu_free(e);
	}
	tu_free_tensors(in, 1);
	sched_free(&sc.s);
	ir_free(g);
}
END_TEST

/* A device that may lose zero signs (BeFacts.nsz: lavapipe folds x * 0 to 0) is held to the
 * emulation only where the emulation met no zero in the output's cone. */
START_TEST(judge_zero_sign)
{
	Graph *g = tu_parse("input x : f32[3]\ny[i:3] = x[i] * 0\nz[i:3] = x[i] * 2\n"
			    "output y : f32, z : f32\n");
	VfSched sc = {.name = "default"};
	sched_default(g, &sc.s);
	HostTensor *in = tu_new_inputs(g);
	const double xs[3] = {-1.5, 2, -3};
	for (int i = 0; i < 3; i++)
		ht_set(&in[0], i, xs[i]);
	MpOpts mo = {.threads = 1};
	const Backend *b = be_find("c");
	for (int nsz = 0; nsz < 2; nsz++) {
		VfEmu *e = vf_emu_new(g, in, &sc, 1, &mo, 0);
		WorkerResult w = {.status = WK_OK, .outs = emulated(g, &sc.s, in), .facts = b->facts};
		w.facts.nsz = nsz;
		ht_set(&w.outs[0], 0, 0.0);   /* -1.5 * 0 folded to +0, as lavapipe does */
		VfEmuResult r;
		vf_emu_judge(e, b, 0, &w, false, &r);
		ck_assert_msg(r.out[0].applies == !nsz, "nsz %d: %s", nsz, r.out[0].why);
		if (nsz)
			ck_assert(strstr(r.out[0].why, "sign of a zero"));
		else
			ck_assert(r.out[0].diff.n_diff == 1 && r.out[0].diff.first == 0);
		ck_assert(r.out[1].applies && r.out[1].diff.n_diff == 0);   /* no zero in z's cone */
		vf_emu_result_free(&r);
		tu_free_tensors(w.outs, 2);
		vf_emu_free(e);
	}
	tu_free_tensors(in, 1);
	sched_free(&sc.s);
	ir_free(g);
}
END_TEST

/* The zeros a sign-losing device folds are those of +, -, *, / and fma: a zero that only
 * moves through min (and loads, casts, neg) is held to its sign on such a device too, so a
 * min(+0, -0) that comes back +0 is a difference under nsz as well. */
START_TEST(judge_zero_sign_min)
{
	Graph *g = tu_parse("input x : f32[2]\ninput y : f32[2]\nu[i:2] = min(x[i], -y[i])\n"
			    "v[i:2] = x[i] + y[i]\noutput u : f32, v : f32\n");
	VfSched sc = {.name = "default"};
	sched_default(g, &sc.s);
	HostTensor *in = tu_new_inputs(g);
	ht_set(&in[0], 0, 0.0), ht_set(&in[0], 1, 1.0);
	ht_set(&in[1], 0, 0.0), ht_set(&in[1], 1, 2.0);
	MpOpts mo = {.threads = 1};
	const Backend *b = be_find("c");
	VfEmu *e = vf_emu_new(g, in, &sc, 1, &mo, 0);
	WorkerResult w = {.status = WK_OK, .outs = emulated(g, &sc.s, in), .facts = b->facts};
	w.facts.nsz = true;
	ck_assert(signbit(ht_get(&w.outs[0], 0)));   /* min(+0, -0) = -0 */
	ht_set(&w.outs[0], 0, 0.0);
	VfEmuResult r;
	vf_emu_judge(e, b, 0, &w, false, &r);
	ck_assert_msg(r.out[0].applies, "%s", r.out[0].why);
	ck_assert(r.out[0].diff.n_diff == 1 && r.out[0].diff.first == 0);
	ck_assert(!r.out[1].applies && strstr(r.out[1].why, "sign of a zero"));   /* 0 + 0 */
	vf_emu_result_free(&r);
	tu_free_tensors(w.outs, 2);
	vf_emu_free(e);
	tu_free_tensors(in, 2);
	sched_free(&sc.s);
	ir_free(g);
}
END_TEST

/* Per output: a function with an allowance in one output's definitions leaves the other
 * held to the emulation (and a wrong bit there seen); a subnormal the emulation met in one
 * output's definitions keeps a flushing device from that output alone, and from every
 * output that reads it. mp_emulate_defs says which definition met it. */
START_TEST(judge_per_output)
{
	Graph *g = tu_parse("input x : f32[3]\ninput y : f32[3]\na[i:3] = x[i] * 1e-30\n"
			    "e[i:3] = exp(y[i])\nb[i:3] = y[i] * 3 + 1\nc[i:3] = a[i] * 1e30\n"
			    "output a : f32, e : f32, b : f32, c : f32\n");
	VfSched sc = {.name = "default"};
	sched_default(g, &sc.s);
	HostTensor *in = tu_new_inputs(g);
	const double tiny[3] = {1e-9, -2e-10, 1}, ys[3] = {0.5, -2, 3};
	for (int i = 0; i < 3; i++) {
		ht_set(&in[0], i, tiny[i]);
		ht_set(&in[1], i, ys[i]);
	}
	/* the definition that met the subnormal: a (x * 1e-30) and c, which loads it */
	OrcEmu oe;
	orc_emu_config(g, &sc.s, &oe);
	HostTensor out[4] = {0};
	uint32_t sub[4] = {9, 9, 9, 9};
	MpStats st;
	Diag d = {0};
	MpOpts mo = {.threads = 1};
	ck_assert_msg(mp_emulate_defs(g, in, &oe.cfg, &mo, out, &st, sub, &d) == 0, "%s", d.msg);
	ck_assert(sub[0] == 1u << DT_F32 && sub[1] == 0 && sub[2] == 0 && sub[3] == 1u << DT_F32);
	ck_assert(st.subnormal == 1u << DT_F32);
	for (int k = 0; k < 4; k++)
		ht_free(&out[k]);
	orc_emu_free(&oe);
	/* one cone each: a = {a}, e = {e}, b = {b}, c = {a, c} */
	uint8_t cone[4];
	vf_emu_cone(g, 3, cone);
	ck_assert(cone[0] && !cone[1] && !cone[2] && cone[3]);
	vf_emu_cone(g, 2, cone);
	ck_assert(!cone[0] && !cone[1] && cone[2] && !cone[3]);

	const Backend *b = be_find("c");
	BeFacts flushing = b->facts;
	flushing.flush = 1u << DT_F32;
	VfEmu *e = vf_emu_new(g, in, &sc, 1, &mo, 0);
	WorkerResult w = {.status = WK_OK, .outs = emulated(g, &sc.s, in), .facts = b->facts};
	VfEmuResult r;
	vf_emu_judge(e, b, 0, &w, false, &r);
	ck_assert_int_eq(r.n, 4);
	ck_assert(r.out[0].applies && r.out[2].applies && r.out[3].applies);
	ck_assert_msg(!r.out[1].applies && strstr(r.out[1].why, "c: exp has an allowance"), "%s",
		      r.out[1].why);
	for (int k = 0; k < 4; k++)
		ck_assert_int_eq(r.out[k].diff.n_diff, 0);
	vf_emu_result_free(&r);
	/* a wrong rounding in b: seen there, nowhere else */
	ht_set(&w.outs[2], 2, nextafterf((float)ht_get(&w.outs[2], 2), 100));
	vf_emu_judge(e, b, 0, &w, false, &r);
	ck_assert(r.out[2].applies && r.out[2].diff.n_diff == 1 && r.out[2].diff.first == 2);
	ck_assert(r.out[0].diff.n_diff == 0 && r.out[3].diff.n_diff == 0);
	vf_emu_result_free(&r);
	/* a flushing device: a and c met a subnormal, b did not */
	w.facts = flushing;
	vf_emu_judge(e, b, 0, &w, false, &r);
	ck_assert(!r.out[0].applies && !r.out[3].applies && r.out[2].applies);
	ck_assert_msg(strstr(r.out[3].why, "may flush f32 subnormals") &&
		      strstr(r.out[3].why, "c depends on"), "%s", r.out[3].why);
	ck_assert_int_eq(r.out[2].diff.n_diff, 1);
	vf_emu_result_free(&r);
	tu_free_tensors(w.outs, 4);
	vf_emu_free(e);
	tu_free_tensors(in, 2);
	sched_free(&sc.s);
	ir_free(g);
}
END_TEST

/* ------------------------------------------------------------ on the c backend */

typedef struct {
	int n;
	Verdict v[8];
	bool emulated[8];
	int64_t diff[8], n_over[8], n_special[8];
	double ratio[8];
	char reason[8][1024], json[8][4096];
} Got;

static void collect(void *ctx, const VfRecord *r)
{
	Got *g = ctx;
	ck_assert_int_lt(g->n, 8);
	int k = g->n++;
	g->v[k] = r->verdict;
	g->emulated[k] = r->emulated;
	g->diff[k] = r->emu_diff;
	g->n_over[k] = r->m.n_over;
	g->n_special[k] = r->m.n_special;
	g->ratio[k] = r->m.max_ratio;
	snprintf(g->reason[k], sizeof g->reason[0], "%s", r->reason);
	FILE *f = fmemopen(g->json[k], sizeof g->json[0] - 1, "w");
	vf_record_json(f, r);
	fclose(f);
}

static bool c_here(void)
{
	char why[256];
	const Backend *b = be_find("c");
	if (b->available(why, sizeof why) == 0)
		return true;
	fprintf(stderr, "SKIP: the c backend is not available here (%s): the pipeline tests of "
		"the emulation check did not run\n", why);
	return false;
}

/* Checks src (inputs from vals, input after input, or normal ones) on the c backend with
 * the real budgets under the graph's own schedule. */
static void check(const char *src, const double *vals, uint64_t faults, Got *got)
{
	Graph *g = tu_parse(src);
	Diag d = {0};
	VfSched *sc;
	int ns, failed;
	ck_assert_int_eq(vf_sched_list(g, "graph", 1, 0, &sc, &ns, &d), 0);
	HostTensor *in = calloc((size_t)ir_ninputs(g) + 1, sizeof *in);
	InputSpec spec = {DIST_NORMAL, 1, false};
	ck_assert_int_eq(mp_make_inputs(g, &spec, NULL, in, &d), 0);
	for (int k = 0; vals && k < ir_ninputs(g); k++)
		for (int64_t i = 0; i < in[k].n; i++)
			ht_set(&in[k], i, *vals++);
	const Backend *b = be_find("c");
	memset(got, 0, sizeof *got);
	VfOpts o = {.w = {20, 1, tu_cache_dir("emucheck"), faults, 0, 0, NULL, false},
		    .threads = 1, .seed = 1, .dist = "normal", .sink = collect, .ctx = got};
	ck_assert_msg(vf_check(g, in, &b, 1, sc, ns, &o, &failed, &d) == 0, "%s", d.msg);
	tu_free_tensors(in, ir_ninputs(g));
	vf_sched_list_free(sc, ns);
	ir_free(g);
}

/* f32 inputs that are exact ties of format f (1 + (2k + 1) ulp/2 of f at 1, k = 0..7, and
 * their negatives), stored into f: to even, half of them round down; away from zero, every
 * one rounds away, half an ulp of f from the exact value: inside every budget. */
START_TEST(tie_away_only_emulation)
{
	if (!c_here())
		return;
	static const struct {
		const char *src;
		double ulp;
	} fmts[] = {
		{"input x : f32[16]\ny[i:16] = x[i]\noutput y : f16\nschedule\nstore y : f16\n",
		 0x1p-10},
		{"input x : f32[16]\ny[i:16] = x[i]\noutput y : bf16\nschedule\nstore y : bf16\n",
		 0x1p-7},
	};
	double v[16];
	for (int k = 0; k < 8; k++) {
		v[k] = 1 + (2 * k + 1) * fmts[_i].ulp / 2;
		v[8 + k] = -v[k];
	}
	Got got;
	check(fmts[_i].src, v, 0, &got);
	ck_assert_int_eq(got.n, 1);
	ck_assert_msg(got.v[0] == V_PASS && got.emulated[0] && got.diff[0] == 0, "%s: %s",
		      vf_verdict_name(got.v[0]), got.reason[0]);
	ck_assert_ptr_nonnull(strstr(got.json[0], "\"emulated\":true,\"emulated_why\":\"\","
					       "\"emu_diff\":0"));
	check(fmts[_i].src, v, KF_TIE_AWAY, &got);
	ck_assert_msg(got.v[0] == V_EMULATION_MISMATCH, "%s: %s", vf_verdict_name(got.v[0]),
		      got.reason[0]);
	/* every budget holds: nothing over, nothing special, the worst ratio at most 1 */
	ck_assert(got.n_over[0] == 0 && got.n_special[0] == 0 && got.ratio[0] <= 1);
	ck_assert_int_eq(got.diff[0], 8);   /* the ties whose even neighbour is toward zero */
	ck_assert_msg(strstr(got.reason[0], "y[0]: ") && strstr(got.reason[0], "1 ulp") &&
		      strstr(got.reason[0], "every budget holds") &&
		      strstr(got.reason[0], "first differing stored definition: y = x[i]"), "%s",
		      got.reason[0]);
	ck_assert(vf_verdict_fails(V_EMULATION_MISMATCH));
	VfMetrics m;
	vf_metrics_init(&m);
	ck_assert_int_eq(vf_class(V_EMULATION_MISMATCH, &m, false, NULL), VC_FAILURE);
}
END_TEST

/* A Welford pass (docs/online.md) in split pieces is emulated in its one-pass order and a
 * correct kernel equals it bit for bit (the graph's schedule and the default one, which
 * vf_sched_list adds); a Chan merge with the wrong weight fails. */
START_TEST(welford_pass_emulated)
{
	if (!c_here())
		return;
	const char *src = "input x : f32[3, 29]\nmu[t:3] = sum(j:29) x[t, j] / 29\n"
			  "var[t:3] = sum(j:29) (x[t, j] - mu[t]) * (x[t, j] - mu[t]) / 29\n"
			  "output mu : f32, var : f32\nschedule\nonline mu, var\nsplit mu : j=4\n"
			  "split var : j=4\naccum var : f64\n";
	Got got;
	check(src, NULL, 0, &got);
	ck_assert_int_eq(got.n, 4);
	for (int k = 0; k < 4; k++)
		ck_assert_msg(got.v[k] == V_PASS && got.emulated[k] && got.diff[k] == 0, "%d: %s: %s",
			      k, vf_verdict_name(got.v[k]), got.reason[k]);
	check(src, NULL, KF_WELFORD_WEIGHT, &got);
	ck_assert_msg(vf_verdict_fails(got.v[0]), "%s", vf_verdict_name(got.v[0]));
}
END_TEST

/* The fault in an intermediate: the output is off by many ulps of its own format but within
 * its budget, and the first differing stored definition is the f16 one, not the output. */
START_TEST(locates_the_definition)
{
	if (!c_here())
		return;
	const char *src = "input x : f32[4, 8]\np[i:4, j:8] = x[i, j] * 0 + 1 + (j + 0.5) * 0x1p-10\n"
			  "s[i:4] = sum(j:8) p[i, j]\noutput s : f32\nschedule\nstore p : f16\n";
	Got got;
	check(src, NULL, 0, &got);
	ck_assert_msg(got.v[0] == V_PASS && got.emulated[0], "%s", got.reason[0]);
	check(src, NULL, KF_TIE_AWAY, &got);
	ck_assert_msg(got.v[0] == V_EMULATION_MISMATCH, "%s", got.reason[0]);
	ck_assert_msg(strstr(got.reason[0], "first differing stored definition: p = ") &&
		      strstr(got.reason[0], "16 of 32 elements") && strstr(got.reason[0], "in f16"),
		      "%s", got.reason[0]);
}
END_TEST

/* One output through exp, one through stores and * alone: the second is held to the
 * emulation, and tie_away's wrong rounding in it is an emulation-mismatch located in its
 * own definitions (q), not in p, which differs first in graph order but only exp reads;
 * the exp output is not emulated and passes. */
START_TEST(per_output_on_c)
{
	if (!c_here())
		return;
	const char *src = "input x : f32[16]\np[i:16] = x[i]\ne[i:16] = exp(p[i])\n"
			  "q[i:16] = x[i] * -1\ny[i:16] = q[i] * 2\noutput e : f32, y : f32\n"
			  "schedule\nstore p : f16\nstore q : f16\n";
	double v[16];
	for (int k = 0; k < 8; k++) {   /* exact f16 ties, as tie_away_only_emulation's */
		v[k] = 1 + (2 * k + 1) * 0x1p-10 / 2;
		v[8 + k] = -v[k];
	}
	Got got;
	check(src, v, 0, &got);
	ck_assert_int_eq(got.n, 2);
	ck_assert_msg(got.v[0] == V_PASS && !got.emulated[0], "%s", got.reason[0]);
	ck_assert_msg(strstr(got.json[0], "\"emulated_why\":\"c: exp has an allowance"), "%s",
		      got.json[0]);
	ck_assert_msg(got.v[1] == V_PASS && got.emulated[1] && got.diff[1] == 0, "%s",
		      got.reason[1]);
	check(src, v, KF_TIE_AWAY, &got);
	ck_assert_msg(got.v[0] == V_PASS && !got.emulated[0], "%s: %s",
		      vf_verdict_name(got.v[0]), got.reason[0]);
	ck_assert_msg(got.v[1] == V_EMULATION_MISMATCH, "%s: %s", vf_verdict_name(got.v[1]),
		      got.reason[1]);
	ck_assert_int_eq(got.diff[1], 8);
	ck_assert_msg(strstr(got.reason[1], "first differing stored definition: q = ") &&
		      strstr(got.reason[1], "8 of 16 elements") && strstr(got.reason[1], "in f16"),
		      "%s", got.reason[1]);
}
END_TEST

/* A function with an allowance is judged by its budget alone, and its record says why. */
START_TEST(not_emulated_recorded)
{
	if (!c_here())
		return;
	Got got;
	check("input x : f32[8]\ny[i:8] = exp(x[i])\noutput y : f32\n", NULL, 0, &got);
	ck_assert(got.v[0] == V_PASS && !got.emulated[0]);
	ck_assert_msg(strstr(got.json[0], "\"emulated\":false,\"emulated_why\":\"c: exp has an "
			     "allowance"), "%s", got.json[0]);
}
END_TEST

/* ------------------------------------------------------------ device facts */

/* A worker reports its device's facts once its compile opened the device: PoCL's and
 * NVIDIA's OpenCL correctly rounded f32 divide/sqrt where the device says so; Vulkan's float
 * controls give f32 + - * where the device grants SignedZeroInfNanPreserve and RTE, and keep
 * the f32 flush unless it grants DenormPreserve (lavapipe grants none). */
START_TEST(device_facts)
{
	const char *name = _i ? "vulkan" : "opencl";
	const Backend *b = be_find(name);
	char why[512];
	if (b->available(why, sizeof why)) {
		fprintf(stderr, "SKIP: %s is not available here (%s): its device facts are not "
			"tested\n", name, why);
		return;
	}
	Graph *g = tu_parse("input x : f32[4]\ny[i:4] = x[i] * 3\noutput y : f32\n");
	Schedule s;
	sched_default(g, &s);
	HostTensor *in = tu_new_inputs(g);
	WorkerOpts wo = {20, 1, tu_cache_dir("emucheck"), 0, 0, 0, NULL, false, 0};
	WorkerResult w;
	Diag d = {0};
	ck_assert_int_eq(vf_worker_run(b, g, &s, in, &wo, &w, &d), 0);
	ck_assert_msg(w.status == WK_OK && w.facts_device, "%s", w.reason);
	char *dev = b->device();
	if (_i == 0) {
		bool cr = strstr(dev, "correctly rounded f32 divide/sqrt") != NULL;
		ck_assert_msg(be_exact(&w.facts, OP_DIV, DT_F32) == cr, "%s", dev);
		ck_assert(be_exact(&w.facts, OP_SQRT, DT_F16) == cr);
		ck_assert(!be_exact(&b->facts, OP_DIV, DT_F32));   /* the static facts stay */
		ck_assert(!(w.facts.flush & (1u << DT_F32)) == !strstr(dev, "denormals flushed"));
	} else {
		bool kept = strstr(dev, "f32 denormals preserved") != NULL;
		ck_assert_msg(!(w.facts.flush & (1u << DT_F32)) == kept, "%s", dev);
		ck_assert(!be_exact(&w.facts, OP_DIV, DT_F32) && !be_exact(&w.facts, OP_ADD, DT_F64));
		fprintf(stderr, "vulkan %s: f32 + - * %s bit for bit\n", dev,
			be_exact(&w.facts, OP_ADD, DT_F32) ? "promised" : "not promised");
	}
	free(dev);
	vf_worker_free(g, &w);
	tu_free_tensors(in, 1);
	sched_free(&s);
	ir_free(g);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("emucheck");
	TCase *t = tcase_create("rules");
	tcase_add_loop_test(t, fully_specified, 0, (int)ARRAY_LEN(spec_cases));
	tcase_add_test(t, backend_facts);
	tcase_add_test(t, bits);
	tcase_add_test(t, judge_runs);
	tcase_add_test(t, judge_zero_sign);
	tcase_add_test(t, judge_zero_sign_min);
	tcase_add_test(t, judge_per_output);
	suite_add_tcase(s, t);
	TCase *p = tcase_create("pipeline");
	tcase_set_timeout(p, 120);
	tcase_add_loop_test(p, tie_away_only_emulation, 0, 2);
	tcase_add_test(p, locates_the_definition);
	tcase_add_test(p, welford_pass_emulated);
	tcase_add_test(p, not_emulated_recorded);
	tcase_add_test(p, per_output_on_c);
	tcase_add_loop_test(p, device_facts, 0, 2);
	suite_add_tcase(s, p);
	return s;
}

int main(void)
{
	return tu_run(suite());
}
