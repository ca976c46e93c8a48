/* tests/test_stream.c: long reductions and the limits of the oracle (interp/ivred.c,
 * interp/limit.c; issue 12).
 *
 * Streamed sums against values known independently of MPFR: cancellation across blocks,
 * exact ties, a rounding decided by a term many blocks away, signs of zeros, and a sum
 * whose correctly rounded value is computed here in __int128 arithmetic. Each is evaluated
 * with blocks of 1, 3 and 1000 terms and the default, and must settle. Then every monoid
 * streamed against the same graph held all at once; the memory of a long reduction
 * (forked children, peak RSS by getrusage: never a timing); the memory cap, the deadline
 * and the progress reports; out of memory under RLIMIT_AS (exit status 3, never SIGABRT).
 */
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include "testutil.h"
#include "../interp/interp.h"

/* ------------------------------------------------------------ helpers */

static Graph *parse_sized(const char *src, int64_t n)
{
	SizeOverride ov = {"N", n};
	Diag d = {0};
	Graph *g = ir_parse(src, strlen(src), "stream.tg", &ov, 1, &d);
	ck_assert_msg(g != NULL, "parse: %s", d.msg ? d.msg : "?");
	return g;
}

typedef struct {
	HostTensor out[16];
	uint8_t *status[16];
	MpStats st;
	int n;
} Res;

static int run(const Graph *g, const HostTensor *in, const MpOpts *o, Res *r, Diag *d)
{
	memset(r, 0, sizeof *r);
	r->n = g->noutputs;
	return mp_exact(g, in, o, r->out, r->status, &r->st, d);
}

static void res_free(Res *r)
{
	for (int k = 0; k < r->n; k++) {
		ht_free(&r->out[k]);
		free(r->status[k]);
	}
}

/* ------------------------------------------------------------ known sums */

static const char sum_f64[] = "size N = 2\ninput x : f64[N]\ns[] = sum(j:N) x[j]\noutput s : f64\n";
static const char sum_f32[] = "size N = 2\ninput x : f64[N]\ns[] = sum(j:N) x[j]\noutput s : f32\n";

/* The term i of n of each case. */
static double t_cancel(int64_t i, int64_t n) { return i == 0 ? 1e30 : i == n - 1 ? -1e30 : 1.5; }
static double t_tie(int64_t i, int64_t n) { (void)n; return i == 0 ? 1 : 0x1p-34; }
static double t_far_up(int64_t i, int64_t n) { return i == 0 ? 1 : i == 1 ? 0x1p-24 : i == n - 1 ? 0x1p-100 : 0; }
static double t_far_down(int64_t i, int64_t n) { return i == 0 ? 1 : i == 1 ? 0x1p-24 : i == n - 1 ? -0x1p-100 : 0; }
static double t_mzero(int64_t i, int64_t n) { (void)i, (void)n; return -0.0; }
static double t_mixed_zero(int64_t i, int64_t n) { return i == n - 1 ? 0.0 : -0.0; }
static double t_cancel_zero(int64_t i, int64_t n) { return i == 0 ? 0x1p-1074 : i == n - 1 ? -0x1p-1074 : -0.0; }
static double t_tenth(int64_t i, int64_t n) { (void)i, (void)n; return 0.1; }

/* 20000 * 0.1 (the double 0x1.999999999999ap-4 = m * 2^-56), correctly rounded to f64:
 * the exact product is the integer 20000 * m times 2^-56, and the conversion of an
 * __int128 to double rounds to nearest even. */
static double tenth_times_20000(void)
{
	__int128 m = 0x1999999999999aLL;
	return ldexp((double)(m * 20000), -56);
}

static const struct {
	const char *name;
	const char *src;
	int64_t n;
	double (*term)(int64_t, int64_t);
	double want;          /* NAN: tenth_times_20000 */
	bool settles_at_once; /* a point: no escalation */
} known[] = {
	/* 1e30 + 5000 * 1.5 - 1e30 across blocks: a block rounded at 64 bits would lose them */
	{"cancel", sum_f64, 5002, t_cancel, 7500, true},
	/* 1 + 1024 * 2^-34 = 1 + 2^-24, an exact tie in f32: to even, 1 */
	{"tie_down", sum_f32, 1025, t_tie, 1, true},
	/* 1 + 3072 * 2^-34 = 1 + 3 * 2^-24, a tie: to even, 1 + 2^-22 */
	{"tie_up", sum_f32, 3073, t_tie, 1 + 0x1p-22, true},
	/* 1 + 2^-24 + 2^-100 (the last term 5000 terms away): above the tie, 1 + 2^-23; the
	 * exact sum needs 101 bits, more than the first precision: escalation settles it */
	{"far_up", sum_f32, 5000, t_far_up, 1 + 0x1p-23, false},
	{"far_down", sum_f32, 5000, t_far_down, 1, false},
	{"minus_zeros", sum_f64, 5000, t_mzero, -0.0, true},
	{"one_plus_zero", sum_f64, 5000, t_mixed_zero, 0.0, true},
	{"cancel_to_zero", sum_f64, 5000, t_cancel_zero, 0.0, true},
	{"tenths", sum_f64, 20000, t_tenth, NAN, true},
};

START_TEST(known_sums)
{
	Graph *g = parse_sized(known[_i].src, known[_i].n);
	HostTensor in;
	int64_t n = known[_i].n;
	ck_assert_int_eq(ht_alloc(&in, DT_F64, 1, &n), 0);
	for (int64_t i = 0; i < n; i++)
		ht_set(&in, i, known[_i].term(i, n));
	double want = isnan(known[_i].want) ? tenth_times_20000() : known[_i].want;
	static const long blocks[] = {1, 3, 1000, 0};
	for (size_t b = 0; b < ARRAY_LEN(blocks); b++) {
		MpOpts o = {.threads = 1, .red_block = blocks[b]};
		Res r;
		Diag d = {0};
		ck_assert_msg(run(g, &in, &o, &r, &d) == 0, "%s", d.msg);
		ck_assert_int_eq(r.status[0][0], MP_EXACT_OK);
		double got = ht_get(&r.out[0], 0);
		ck_assert_msg(tu_same(got, want), "%s, blocks of %ld: %a, want %a", known[_i].name,
			      blocks[b], got, want);
		if (known[_i].settles_at_once)
			ck_assert_int_eq(r.st.escalations, 0);
		res_free(&r);
	}
	ht_free(&in);
	ir_free(g);
}
END_TEST

/* Terms 2^E, then 8 ones (or 8 zeros), then -2^E (or one more 1): for E = 20000 the
 * partial sums stay exact, their precision following the span (8, and +0 when nothing is
 * left). For E = 2000000 the span passes the exact partials' cap (2^20 bits): the partials
 * round outward at the cap, and the enclosure of 2^E + 8 - 2^E is far too wide to settle:
 * unsamplable, never a guess; 2^E + 9 still settles (to +inf in f64). */
START_TEST(partials_beyond_the_cap)
{
	static const char src[] =
		"size N = 10\ninput x : f64[N]\ninput e : f64[N]\n"
		"s[] = sum(j:N) x[j] * exp2(e[j])\noutput s : f64\n";
	Graph *g = parse_sized(src, 10);
	int64_t n = 10;
	HostTensor in[2];
	for (int k = 0; k < 2; k++)
		ck_assert_int_eq(ht_alloc(&in[k], DT_F64, 1, &n), 0);
	static const struct {
		double e, middle, last, want;
		MpStatus st;
	} cases[] = {
		{20000, 1, -1, 8, MP_EXACT_OK}, {20000, 0, -1, 0.0, MP_EXACT_OK},
		{2000000, 1, -1, 0, MP_UNSAMPLABLE}, {2000000, 1, 1, INFINITY, MP_EXACT_OK},
	};
	for (size_t c = 0; c < ARRAY_LEN(cases); c++) {
		for (int64_t i = 0; i < n; i++) {
			bool end = i == 0 || (i == n - 1 && cases[c].last < 0);
			ht_set(&in[0], i, i == n - 1 ? cases[c].last : i == 0 ? 1 : cases[c].middle);
			ht_set(&in[1], i, end ? cases[c].e : 0);
		}
		MpOpts o = {.threads = 1, .red_block = 1, .prec_cap = 256};
		Res r;
		Diag d = {0};
		ck_assert_msg(run(g, in, &o, &r, &d) == 0, "%s", d.msg);
		ck_assert_msg(r.status[0][0] == cases[c].st, "case %zu: status %d", c, r.status[0][0]);
		if (cases[c].st == MP_EXACT_OK)
			ck_assert_msg(tu_same(ht_get(&r.out[0], 0), cases[c].want), "case %zu: %a", c,
				      ht_get(&r.out[0], 0));
		res_free(&r);
	}
	ht_free(&in[0]);
	ht_free(&in[1]);
	ir_free(g);
}
END_TEST

/* Interval terms (inexact at every precision: exp of a number) summed across blocks:
 * sum over j of (exp(x[j]) - exp(x[j])) + x[j] with a wide middle, exactly sum x[j]. The
 * wide terms make the partials two ends, rounded outward; escalation settles it. */
START_TEST(interval_terms)
{
	static const char src[] =
		"size N = 9\ninput x : f64[N]\n"
		"w[j:N] = (exp(40) + x[j]) - exp(40)\n"
		"s[] = sum(j:N) w[j]\noutput s : f64\n";
	Graph *g = parse_sized(src, 3001);
	int64_t n = 3001;
	HostTensor in;
	ck_assert_int_eq(ht_alloc(&in, DT_F64, 1, &n), 0);
	for (int64_t i = 0; i < n; i++)
		ht_set(&in, i, (double)(i % 7) - 3 + 0.25);
	static const long blocks[] = {1, 7, 0};
	for (size_t b = 0; b < ARRAY_LEN(blocks); b++) {
		MpOpts o = {.threads = 1, .prec0 = 64, .red_block = blocks[b]};
		Res r;
		Diag d = {0};
		ck_assert_msg(run(g, &in, &o, &r, &d) == 0, "%s", d.msg);
		ck_assert_int_eq(r.status[0][0], MP_EXACT_OK);
		/* sum of (i % 7) - 3 over 3001 terms: 428 full cycles sum to 0, then 0..4 - 3 */
		ck_assert_msg(tu_same(ht_get(&r.out[0], 0), -5.0 + 3001 * 0.25), "blocks of %ld: %a",
			      blocks[b], ht_get(&r.out[0], 0));
		ck_assert_int_gt(r.st.escalations, 0);
		res_free(&r);
	}
	ht_free(&in);
	ir_free(g);
}
END_TEST

/* ------------------------------------------------------------ every monoid */

/* Every monoid with blocks of 1, 2 and 5 terms gives the correctly rounded values and the
 * statuses of the same graph held all at once, on adversarial inputs (ties, signed zeros,
 * cancelling pairs, huge and subnormal values), with inf and NaN, and on normal ones. */
static const char monoids_src[] =
	"size M = 4, N = 37\n"
	"input x : f32[M, N]\n"
	"input k : i32[N]\n"
	"s1[i:M] = sum(j:N) x[i, j]\n"
	"s2[i:M] = sum(j:N) exp(x[i, j] * 0.001) * x[i, j]\n"
	"p1[i:M] = prod(j:N) (x[i, j] * 0.25 + 1)\n"
	"l1[i:M] = logsumexp(j:N) x[i, j]\n"
	"mx[i:M] = max(j:N) x[i, j]\n"
	"mn[i:M] = min(j:N) sin(x[i, j])\n"
	"am[i:M] = argmax(j:N) x[i, j]\n"
	"an[i:M] = argmin(j:N) x[i, j] * x[i, j]\n"
	"v[i:M, r:4], ix[i:M, r:4] = topk(j:N) x[i, j]\n"
	"iv[i:M, r:3], ii[i:M, r:3] = topk(j:N) k[j] * (i + 1)\n"
	"is[i:M] = sum(j:N) k[j] * (i + 1)\n"
	"tri[i:M] = sum(j:N, l:0..j+1) x[i, l] * x[i, j]\n"
	"output s1, s2, p1, l1, mx, mn, am, an, v, ix, iv, ii, is, tri\n";

START_TEST(every_monoid_streams)
{
	Diag d = {0};
	Graph *g = tu_parse(monoids_src);
	static const InputSpec specs[] = {
		{DIST_ADVERSARIAL, 3, false}, {DIST_ADVERSARIAL, 4, true}, {DIST_NORMAL, 5, false},
	};
	HostTensor in[2];
	ck_assert_int_eq(mp_make_inputs(g, &specs[_i], NULL, in, &d), 0);
	MpOpts whole = {.threads = 1, .red_block = 1 << 30};
	Res w;
	ck_assert_msg(run(g, in, &whole, &w, &d) == 0, "%s", d.msg);
	static const long blocks[] = {1, 2, 5};
	for (size_t b = 0; b < ARRAY_LEN(blocks); b++) {
		MpOpts o = {.threads = 1 + (int)b % 2, .red_block = blocks[b]};
		Res r;
		ck_assert_msg(run(g, in, &o, &r, &d) == 0, "%s", d.msg);
		for (int k = 0; k < g->noutputs; k++) {
			const char *name = g->tensors[g->outputs[k].tensor].name;
			for (int64_t e = 0; e < w.out[k].n; e++) {
				ck_assert_msg(r.status[k][e] == w.status[k][e], "%s[%lld], blocks of %ld: "
					      "status %d, whole %d", name, (long long)e, blocks[b],
					      r.status[k][e], w.status[k][e]);
				ck_assert_msg(tu_same(ht_get(&r.out[k], e), ht_get(&w.out[k], e)),
					      "%s[%lld], blocks of %ld: %a, whole %a", name, (long long)e,
					      blocks[b], ht_get(&r.out[k], e), ht_get(&w.out[k], e));
			}
		}
		res_free(&r);
	}
	res_free(&w);
	ht_free(&in[0]);
	ht_free(&in[1]);
	ir_free(g);
}
END_TEST

/* ------------------------------------------------------------ memory */

static const char long_sum[] =
	"size N = 2\ninput x : f32[1]\ns[] = sum(i:N) x[0] * 1.5\noutput s : f32\n";

/* The peak RSS (KiB) of a child evaluating long_sum at n terms (emulate: in f32). */
static long child_rss(int64_t n, bool emulate)
{
	pid_t pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		Graph *g = parse_sized(long_sum, n);
		HostTensor in[1], out[1];
		InputSpec sp = {DIST_NORMAL, 1, false};
		Diag d = {0};
		if (mp_make_inputs(g, &sp, NULL, in, &d))
			_exit(10);
		MpOpts o = {.threads = 1};
		EmuConfig cfg = {.dflt = DT_F32};
		int rc = emulate ? mp_emulate(g, in, &cfg, &o, out, NULL, &d)
				 : mp_exact(g, in, &o, out, NULL, NULL, &d);
		_exit(rc == 0 && ht_get(&out[0], 0) != 0 ? 0 : 11);
	}
	int status;
	struct rusage ru;
	ck_assert_int_eq(wait4(pid, &status, 0, &ru), pid);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status %d", status);
	return ru.ru_maxrss;
}

/* Peak memory does not grow with the reduction's length (before streaming, 4 * 10^6
 * terms took ~500 MB in exact mode, 128 MB in emulation). */
START_TEST(memory_independent_of_length)
{
	bool emulate = _i == 1;
	long small = child_rss(1000000, emulate), big = child_rss(4000000, emulate);
	ck_assert_msg(big < small * 3 / 2 + 16 * 1024, "%s: peak RSS %ld KiB at 10^6 terms, %ld "
		      "KiB at 4 * 10^6", emulate ? "emulation" : "exact", small, big);
}
END_TEST

/* ------------------------------------------------------------ the memory cap */

/* A table of N elements computed from 4 inputs. */
static const char big_table[] =
	"size N = 2\ninput x : f32[4]\ny[i:N] = x[i % 4] * 3\nz[] = sum(i:N) y[i]\n"
	"output z : f32\n";

START_TEST(cap_refuses_inputs)
{
	Graph *g = parse_sized("size N = 2\ninput x : f32[N]\ns[] = x[0]\noutput s : f32\n",
			       1000000);
	HostTensor in[1];
	InputSpec sp = {DIST_NORMAL, 1, false};
	Diag d = {0};
	MpOpts o = {.threads = 1, .mem_cap = 1 << 20};
	/* 4 MB of inputs pass a 1 MiB cap: refused before anything is generated */
	ck_assert_int_eq(mp_make_inputs_opts(g, &sp, NULL, &o, in, &d), -2);
	ck_assert_int_eq(d.code, 2);
	ck_assert_msg(strstr(d.msg, "stream.tg: the inputs would take 3.8 MiB") &&
		      strstr(d.msg, "input 'x' (f32[1000000])") &&
		      strstr(d.msg, "1000000 elements of 4 bytes") && strstr(d.msg, "cap of 1.0 MiB") &&
		      strstr(d.msg, "--size"), "%s", d.msg);
	diag_clear(&d);
	MpOpts roomy = {.threads = 1, .mem_cap = 8 << 20};
	ck_assert_int_eq(mp_make_inputs_opts(g, &sp, NULL, &roomy, in, &d), 0);
	ht_free(&in[0]);
	ir_free(g);
}
END_TEST

START_TEST(cap_refuses_up_front)
{
	Graph *g = parse_sized(big_table, 1000000);
	HostTensor in[1];
	InputSpec sp = {DIST_NORMAL, 1, false};
	Diag d = {0};
	MpOpts o = {.threads = 1, .mem_cap = 1 << 20};
	ck_assert_int_eq(mp_make_inputs(g, &sp, NULL, in, &d), 0);
	ck_assert_int_eq(mp_check_memory(g, &o, false, &d), -2);
	ck_assert_msg(strstr(d.msg, "stream.tg: the exact oracle would need") &&
		      strstr(d.msg, "memory cap of 1.0 MiB") &&
		      strstr(d.msg, "tensor 'y' (f64[1000000]): 1000000 elements") &&
		      strstr(d.msg, "--max-exact"), "%s", d.msg);
	diag_clear(&d);
	Res r;
	ck_assert_int_eq(run(g, in, &o, &r, &d), -2);
	ck_assert_int_eq(d.code, 2);
	ck_assert_msg(strstr(d.msg, "would need"), "%s", d.msg);
	diag_clear(&d);
	HostTensor out[1];
	EmuConfig cfg = {.dflt = DT_F32};
	ck_assert_int_eq(mp_emulate(g, in, &cfg, &o, out, NULL, &d), -2);
	ck_assert_msg(strstr(d.msg, "the emulating interpreter would need"), "%s", d.msg);
	diag_clear(&d);
	/* within a cap that holds it, the same evaluation runs */
	MpOpts roomy = {.threads = 1, .mem_cap = (int64_t)1 << 30};
	ck_assert_int_eq(mp_check_memory(g, &roomy, false, &d), 0);
	ht_free(&in[0]);
	ir_free(g);
}
END_TEST

/* Point evaluation has no footprint to check first (it touches what the point needs): its
 * tables are charged as they grow, and the cap stops it there, naming the tensor. */
START_TEST(cap_stops_a_growing_table)
{
	Graph *g = parse_sized(big_table, 1000000);
	HostTensor in[1];
	InputSpec sp = {DIST_NORMAL, 1, false};
	Diag d = {0};
	ck_assert_int_eq(mp_make_inputs(g, &sp, NULL, in, &d), 0);
	MpOpts o = {.threads = 2, .mem_cap = 16 << 20};
	double v;
	uint8_t st;
	ck_assert_int_eq(mp_points(g, in, &o, 0, NULL, 1, DT_NONE, &v, &st, NULL, &d), -2);
	ck_assert_int_eq(d.code, 2);
	ck_assert_msg(strstr(d.msg, "stream.tg: the exact oracle reached its memory cap of 16.0 MiB") &&
		      strstr(d.msg, "tensor '"), "%s", d.msg);
	diag_clear(&d);
	ht_free(&in[0]);
	ir_free(g);
}
END_TEST

/* ------------------------------------------------------------ the deadline */

/* 10^10 terms in one element: no machine finishes it within the test's timeout, so a
 * return at all shows the deadline is polled inside the reduction. */
static const char endless[] =
	"size N = 2\ninput x : f32[4]\ns[] = sum(i:N, j:N) x[(i + j) % 4] * 1.5\noutput s : f32\n";

START_TEST(deadline_stops_a_long_reduction)
{
	Graph *g = parse_sized(endless, 100000);
	HostTensor in[1], out[1];
	InputSpec sp = {DIST_NORMAL, 1, false};
	Diag d = {0};
	ck_assert_int_eq(mp_make_inputs(g, &sp, NULL, in, &d), 0);
	MpOpts o = {.threads = 2, .deadline = mp_now() + (_i == 0 ? 0 : 0.3)};
	int rc;
	switch (_i) {
	case 2: {
		EmuConfig cfg = {.dflt = DT_F32};
		rc = mp_emulate(g, in, &cfg, &o, out, NULL, &d);
		break;
	}
	case 3: {
		double v;
		uint8_t st;
		rc = mp_points(g, in, &o, 0, NULL, 1, DT_NONE, &v, &st, NULL, &d);
		break;
	}
	default: {
		Res r;
		rc = run(g, in, &o, &r, &d);
	}
	}
	ck_assert_int_eq(rc, -2);
	ck_assert_int_eq(d.code, 2);
	ck_assert_msg(strstr(d.msg, "stream.tg: ") && strstr(d.msg, "stopped at its deadline") &&
		      strstr(d.msg, "--timeout"), "%s", d.msg);
	diag_clear(&d);
	ht_free(&in[0]);
	ir_free(g);
}
END_TEST

/* The deadline is polled while a large input is converted to MPFR values too: the message
 * says where it stopped. */
START_TEST(deadline_stops_input_conversion)
{
	Graph *g = parse_sized("size N = 2\ninput x : f32[N]\ns[] = x[0]\noutput s : f32\n",
			       10000000);
	HostTensor in[1];
	ck_assert_int_eq(ht_alloc(&in[0], DT_F32, 1, (int64_t[]){10000000}), 0);
	MpOpts o = {.threads = 1, .deadline = mp_now()};
	Res r;
	Diag d = {0};
	ck_assert_int_eq(run(g, in, &o, &r, &d), -2);
	ck_assert_msg(strstr(d.msg, "stopped at its deadline") && strstr(d.msg, "converting 'x'"),
		      "%s", d.msg);
	diag_clear(&d);
	ht_free(&in[0]);
	ir_free(g);
}
END_TEST

START_TEST(deadline_stops_input_generation)
{
	Graph *g = parse_sized("size N = 2\ninput x : f32[N]\ns[] = x[0]\noutput s : f32\n",
			       100000000);
	HostTensor in[1];
	InputSpec sp = {DIST_NORMAL, 1, false};
	Diag d = {0};
	MpOpts o = {.deadline = mp_now()};
	ck_assert_int_eq(mp_make_inputs_opts(g, &sp, NULL, &o, in, &d), -2);
	ck_assert_msg(strstr(d.msg, "input generation stopped at its deadline") &&
		      strstr(d.msg, "'x'"), "%s", d.msg);
	diag_clear(&d);
	ir_free(g);
}
END_TEST

/* ------------------------------------------------------------ progress */

typedef struct {
	int calls;
	int64_t work, work_total, total;
	double at[64];
	bool tensor_ok, phase_ok;
} Seen;

static void seen(void *ctx, const MpProgress *p)
{
	Seen *s = ctx;
	if (s->calls < 64)
		s->at[s->calls] = mp_now();
	s->calls++;
	s->work = p->work_done;
	s->work_total = p->work_total;
	s->total = p->total;
	s->tensor_ok = p->tensor && strcmp(p->tensor, "s") == 0;
	s->phase_ok = strcmp(p->phase, "evaluating") == 0;
}

/* Run 2.5 s (a deadline: the work cannot finish on any machine), progress is reported,
 * about once a second: at least once, never twice within 0.9 s. */
START_TEST(progress_reports)
{
	Graph *g = parse_sized(endless, 100000);
	HostTensor in[1];
	InputSpec sp = {DIST_NORMAL, 1, false};
	Diag d = {0};
	ck_assert_int_eq(mp_make_inputs(g, &sp, NULL, in, &d), 0);
	Seen s = {0};
	MpOpts o = {.threads = 1, .deadline = mp_now() + 2.5, .progress = seen, .progress_ctx = &s};
	Res r;
	ck_assert_int_eq(run(g, in, &o, &r, &d), -2);
	ck_assert_int_ge(s.calls, 1);
	for (int k = 1; k < s.calls && k < 64; k++)
		ck_assert_msg(s.at[k] - s.at[k - 1] > 0.9, "reports %d and %d %.3f s apart", k - 1, k,
			      s.at[k] - s.at[k - 1]);
	ck_assert(s.tensor_ok && s.phase_ok);
	ck_assert_int_eq(s.total, 1);
	ck_assert_int_eq(s.work_total, (int64_t)100000 * 100000);
	ck_assert_int_gt(s.work, 0);
	diag_clear(&d);
	ht_free(&in[0]);
	ir_free(g);
}
END_TEST

/* ------------------------------------------------------------ out of memory */

#if defined(__SANITIZE_ADDRESS__)
#define UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UNDER_ASAN 1
#endif
#endif

/* Virtual memory in use now (KiB), from /proc/self/statm. */
static long vm_kib(void)
{
	FILE *f = fopen("/proc/self/statm", "r");
	long pages = 0;
	if (f && fscanf(f, "%ld", &pages) != 1)
		pages = 0;
	if (f)
		fclose(f);
	return pages * (sysconf(_SC_PAGE_SIZE) / 1024);
}

/* A child under RLIMIT_AS (256 MiB above what it holds) evaluates a graph that needs more:
 * case 0, a table of 10^7 elements (~900 MB; the soft path: -1, code 3, the child exits
 * with the code as `assay eval` does); case 1, 10^8 terms held at once (a block that large:
 * the allocation that cannot fail softly). Either way: exit status 3 and "out of memory
 * evaluating", never SIGABRT. */
START_TEST(out_of_memory_exits_3)
{
#ifdef UNDER_ASAN
	fprintf(stderr, "test_stream: out_of_memory_exits_3 skipped: AddressSanitizer reserves "
		"terabytes of address space, so RLIMIT_AS cannot be tested under it\n");
	return;
#endif
	int fd[2];
	ck_assert_int_eq(pipe(fd), 0);
	pid_t pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		dup2(fd[1], 2);
		close(fd[0]);
		Graph *g = _i == 0 ? parse_sized(big_table, 10000000) : parse_sized(long_sum, 100000000);
		HostTensor in[1], out[1];
		InputSpec sp = {DIST_NORMAL, 1, false};
		Diag d = {0};
		if (mp_make_inputs(g, &sp, NULL, in, &d))
			_exit(10);
		struct rlimit rl = {(rlim_t)(vm_kib() + 256 * 1024) * 1024, RLIM_INFINITY};
		if (setrlimit(RLIMIT_AS, &rl))
			_exit(11);
		MpOpts o = {.threads = 1, .red_block = _i == 0 ? 0 : 1 << 30};
		int rc = mp_exact(g, in, &o, out, NULL, NULL, &d);
		if (rc == 0)
			_exit(0);
		fputs(d.msg ? d.msg : "?\n", stderr);
		_exit(d.code);
	}
	close(fd[1]);
	char buf[4096] = "";
	size_t n = 0;
	for (ssize_t k; n + 1 < sizeof buf && (k = read(fd[0], buf + n, sizeof buf - 1 - n)) > 0;)
		n += (size_t)k;
	buf[n] = 0;
	close(fd[0]);
	int status;
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(WIFEXITED(status), "the child was killed by signal %d: %s",
		      WIFSIGNALED(status) ? WTERMSIG(status) : 0, buf);
	ck_assert_msg(WEXITSTATUS(status) == 3, "exit status %d: %s", WEXITSTATUS(status), buf);
	ck_assert_msg(strstr(buf, "out of memory evaluating") && strstr(buf, "stream.tg"), "%s", buf);
}
END_TEST

/* ------------------------------------------------------------ the suite */

static Suite *suite(void)
{
	Suite *s = suite_create("stream");
	TCase *t = tcase_create("sums");
	tcase_set_timeout(t, 120);
	tcase_add_loop_test(t, known_sums, 0, (int)ARRAY_LEN(known));
	tcase_add_test(t, partials_beyond_the_cap);
	tcase_add_test(t, interval_terms);
	tcase_add_loop_test(t, every_monoid_streams, 0, 3);
	suite_add_tcase(s, t);
	TCase *l = tcase_create("limits");
	tcase_set_timeout(l, 120);
	tcase_add_loop_test(l, memory_independent_of_length, 0, 2);
	tcase_add_test(l, cap_refuses_inputs);
	tcase_add_test(l, cap_refuses_up_front);
	tcase_add_test(l, cap_stops_a_growing_table);
	tcase_add_loop_test(l, deadline_stops_a_long_reduction, 0, 4);
	tcase_add_test(l, deadline_stops_input_conversion);
	tcase_add_test(l, deadline_stops_input_generation);
	tcase_add_test(l, progress_reports);
	tcase_add_loop_test(l, out_of_memory_exits_3, 0, 2);
	suite_add_tcase(s, l);
	return s;
}

int main(void)
{
	return tu_run(suite());
}
