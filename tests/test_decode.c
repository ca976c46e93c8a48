/* tests/test_decode.c: `assay decode` (verify/decode.c, docs/decode.md) and what it rests
 * on. The model is examples/qwen3_tiny (one Qwen3-MoE layer over a paged KV cache); every
 * command runs as a subprocess (ASSAY in the environment, default ./assay) under
 * `timeout`. A correct kernel's greedy decode agrees with the oracle at every step and the
 * gate holds; a seeded fault (skip_last: the last term of every reduction dropped) makes
 * defects and fails the gate; a model that breaks the conventions is the user's error.
 * Batch invariance (`check --invariance`): bitwise-identical rows under one schedule, an
 * expected difference where the schedule changes with the batch, a failure where a
 * (seeded) compiler bug makes a fixed schedule depend on it.
 */
#include <math.h>
#include <stdarg.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "testutil.h"
#include "../verify/verify.h"
#include "../fuzz/fuzz.h"

static const char *prog(void)
{
	const char *p = getenv("ASSAY");
	return p && *p ? p : "./assay";
}

/* Runs the program with args (printf-style) in the environment env; stdout and stderr go
 * to DIR/out and DIR/err. Returns the exit status (124: the time limit). */
static int run(const char *dir, const char *env, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int run(const char *dir, const char *env, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *args = NULL, *cmd = NULL;
	ck_assert_int_ge(vasprintf(&args, fmt, ap), 0);
	va_end(ap);
	ck_assert_int_ge(asprintf(&cmd, "%s timeout 300 %s %s >%s/out 2>%s/err", env, prog(), args,
				  dir, dir), 0);
	int st = system(cmd);
	free(args);
	free(cmd);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

static char *file(const char *dir, const char *name)
{
	char *p = NULL;
	ck_assert_int_ge(asprintf(&p, "%s/%s", dir, name), 0);
	char *t = tu_read_file(p, NULL);
	ck_assert_msg(t != NULL, "cannot read %s", p);
	free(p);
	return t;
}

static int count(const char *text, const char *piece)
{
	int n = 0;
	for (const char *p = text; (p = strstr(p, piece)); p += strlen(piece))
		n++;
	return n;
}

static void put(const char *dir, const char *name, const char *text)
{
	char *p = NULL;
	ck_assert_int_ge(asprintf(&p, "%s/%s", dir, name), 0);
	FILE *f = fopen(p, "w");
	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	fclose(f);
	free(p);
}

static const char *policy =
	"gate */token/*  token_agree         >= 99%\n"
	"gate *          defect_divergences  <= 0\n"
	"gate *          failing             <= 0\n";

START_TEST(decode_agrees)
{
	char *t = tu_mkdtemp("decode");
	put(t, "p.policy", policy);
	int rc = run(t, "", "decode examples/qwen3_tiny --backends c --steps 8 -o %s/d", t);
	char *err = file(t, "err"), *out = file(t, "out");
	ck_assert_msg(rc == 0, "exit %d: %s%s", rc, out, err);
	char *steps = file(t, "d/decode.jsonl");
	ck_assert_int_eq(count(steps, "\n"), 8);
	ck_assert_int_eq(count(steps, "\"class\":\"agree\""), 8);
	ck_assert_int_eq(count(steps, "\"step\":0,"), 1);
	/* later steps settle on a few candidates, never the whole vocabulary */
	ck_assert_int_ge(count(steps, "\"candidates\":256"), 0);
	ck_assert_int_lt(count(steps, "\"candidates\":256"), 8);
	char *recs = file(t, "d/results.jsonl");
	ck_assert_int_ge(count(recs, "\"graph\":\"qwen3_tiny_decode@step"), 7 * 3);
	ck_assert_int_eq(count(recs, "\"graph\":\"qwen3_tiny_prefill@step0\""), 3);
	ck_assert_int_eq(run(t, "", "gate %s/d --policy %s/p.policy", t, t), 0);
	ck_assert_int_eq(run(t, "", "report %s/d -o %s/r", t, t), 0);
	char *md = file(t, "r/report.md");
	ck_assert_ptr_nonnull(strstr(md, "| qwen3_tiny_decode | c | default | 8 | 8 | 0 | 0 | 0 | 100.00% |"));
	/* every agreeing step leads its runner-up by a positive exact gap, and the report plots
	 * each step's lead against the runner-up's budget */
	ck_assert_int_eq(count(steps, "\"gap\":-1,"), 0);
	ck_assert_int_eq(count(steps, "\"gap_exact\":"), 8);
	char *dat = file(t, "r/plots/decode.dat");
	ck_assert_int_ge(count(dat, "\n"), 8);
	ck_assert_ptr_nonnull(strstr(dat, "# qwen3_tiny_decode c default"));
	char *html = file(t, "r/index.html");
	ck_assert_ptr_nonnull(strstr(html, "Decode: each step's lead against its budget"));
	free(html);
	free(dat);
	free(md);
	free(recs);
	free(steps);
	free(out);
	free(err);
	tu_rm_rf(t);
}
END_TEST

START_TEST(decode_on_gpu_apis)
{
	/* PoCL and lavapipe here; the same driver code runs NVIDIA's on the GPU machine */
	char *t = tu_mkdtemp("decode-apis");
	int rc = run(t, "", "decode examples/qwen3_tiny --backends opencl,vulkan --steps 3 -o %s/d", t);
	char *out = file(t, "out"), *err = file(t, "err");
	ck_assert_msg(rc == 0, "exit %d: %s%s", rc, out, err);
	char *steps = file(t, "d/decode.jsonl");
	ck_assert_int_eq(count(steps, "\"class\":\"agree\""), 6);
	free(steps);
	free(out);
	free(err);
	tu_rm_rf(t);
}
END_TEST

START_TEST(decode_fault_is_defect)
{
	char *t = tu_mkdtemp("decode-fault");
	put(t, "p.policy", policy);
	int rc = run(t, "ASSAY_FAULT=skip_last", "decode examples/qwen3_tiny --backends c --steps 5 -o %s/d", t);
	char *out = file(t, "out"), *err = file(t, "err");
	ck_assert_msg(rc == 1, "exit %d, not 1: %s%s", rc, out, err);
	char *steps = file(t, "d/decode.jsonl");
	ck_assert_int_ge(count(steps, "\"class\":\"defect\""), 1);
	ck_assert_int_eq(run(t, "", "gate %s/d --policy %s/p.policy", t, t), 1);
	char *gate = file(t, "out");
	ck_assert_ptr_nonnull(strstr(gate, "defect_divergences"));
	ck_assert_ptr_nonnull(strstr(gate, "FAIL"));
	free(gate);
	free(steps);
	free(out);
	free(err);
	tu_rm_rf(t);
}
END_TEST

/* A copy of examples/qwen3_tiny in DIR/m with decode.tg's text changed (from -> to). */
static void model_with(const char *dir, const char *from, const char *to)
{
	char *cmd = NULL;
	ck_assert_int_ge(asprintf(&cmd, "mkdir -p %s/m && cp examples/qwen3_tiny/*.tg %s/m/", dir,
				  dir), 0);
	ck_assert_int_eq(system(cmd), 0);
	free(cmd);
	char *p = NULL;
	ck_assert_int_ge(asprintf(&p, "%s/m", dir), 0);
	char *src = file(p, "decode.tg");
	char *at = strstr(src, from);
	ck_assert_ptr_nonnull(at);
	char *edited = NULL;
	ck_assert_int_ge(asprintf(&edited, "%.*s%s%s", (int)(at - src), src, to, at + strlen(from)), 0);
	put(p, "decode.tg", edited);
	free(edited);
	free(src);
	free(p);
}

START_TEST(decode_bad_model)
{
	char *t = tu_mkdtemp("decode-bad");
	ck_assert_int_eq(run(t, "", "decode %s/none --backends c", t), 2);
	char *err = file(t, "err");
	ck_assert_ptr_nonnull(strstr(err, "prefill.tg"));
	free(err);
	/* the position input is part of the conventions */
	model_with(t, "input pos   : i32[1]", "input pos   : i32[2]");
	ck_assert_int_eq(run(t, "", "decode %s/m --backends c --steps 2", t), 2);
	err = file(t, "err");
	ck_assert_msg(strstr(err, "decode.tg:32:") && strstr(err, "'pos'"), "%s", err);
	free(err);
	/* more steps than the cache holds (64 positions after an 8-token prompt) */
	ck_assert_int_eq(run(t, "", "decode examples/qwen3_tiny --backends c --steps 58%s", ""), 2);
	err = file(t, "err");
	ck_assert_ptr_nonnull(strstr(err, "the cache holds 64"));
	free(err);
	ck_assert_int_eq(run(t, "", "decode examples/qwen3_tiny --backends c --prompt 1,x%s", ""), 2);
	ck_assert_int_eq(run(t, "", "decode examples/qwen3_tiny --backends c --prompt 1,999%s", ""), 2);
	err = file(t, "err");
	ck_assert_ptr_nonnull(strstr(err, "outside the vocabulary"));
	free(err);
	tu_rm_rf(t);
}
END_TEST

START_TEST(decode_unsupported_is_no_step)
{
	/* WGSL has no f64: a model with an f64 weight is not a failed history there but an
	 * unsupported one, and a run that tested nothing is exit 2 */
	char *t = tu_mkdtemp("decode-unsup");
	model_with(t, "input lnf   : bf16[C]", "input lnf   : f64[C]");
	char *cmd = NULL;
	ck_assert_int_ge(asprintf(&cmd, "sed -i 's/^input lnf   : bf16\\[C\\]/input lnf   : f64[C]/' "
				  "%s/m/prefill.tg", t), 0);
	ck_assert_int_eq(system(cmd), 0);
	free(cmd);
	int rc = run(t, "", "decode %s/m --backends wgsl --steps 2 -o %s/d", t, t);
	char *out = file(t, "out"), *err = file(t, "err");
	if (strstr(out, "wgsl     unavailable")) {
		/* no Dawn-capable Vulkan here: says so, and nothing was tested */
		ck_assert_int_eq(rc, 2);
	} else {
		ck_assert_msg(rc == 2, "exit %d: %s%s", rc, out, err);
		ck_assert_msg(strstr(out, "== wgsl default: unsupported:") && strstr(out, "f64"), "%s", out);
		char *steps = file(t, "d/decode.jsonl");
		ck_assert_str_eq(steps, "");
		free(steps);
	}
	ck_assert_ptr_nonnull(strstr(err, "nothing was tested"));
	free(out);
	free(err);
	tu_rm_rf(t);
}
END_TEST

START_TEST(decode_weights_round_trip)
{
	/* weights saved as .npy load back as the model's (MODEL/weights), the same decode */
	char *t = tu_mkdtemp("decode-w");
	ck_assert_int_eq(run(t, "", "decode examples/qwen3_tiny --backends c --steps 3 --seed 4 "
			     "--save-weights %s/w --json", t), 0);
	char *first = file(t, "out");
	char *cmd = NULL;
	ck_assert_int_ge(asprintf(&cmd, "mkdir -p %s/m && cp examples/qwen3_tiny/*.tg %s/m/ && "
				  "mv %s/w %s/m/weights", t, t, t, t), 0);
	ck_assert_int_eq(system(cmd), 0);
	free(cmd);
	/* another seed: only the prompt and the page table come from it now */
	ck_assert_int_eq(run(t, "", "decode %s/m --backends c --steps 3 --seed 4 --json", t), 0);
	char *second = file(t, "out");
	int nw = -1, nr = -2;
	ck_assert_int_eq(sscanf(second, "model %*s %d weights (%d read from", &nw, &nr), 2);
	ck_assert_int_gt(nw, 10);
	ck_assert_int_eq(nr, nw);
	ck_assert_str_eq(strchr(first, '\n'), strchr(second, '\n'));
	free(first);
	free(second);
	tu_rm_rf(t);
}
END_TEST

/* ------------------------------------------------------------ batch invariance */

static const char *batched =
	"graph inv\nsize T = 8, K = 96, N = 16\ninput x : f32[T, K]\ninput w : f32[N, K]\n"
	"y[t:T, n:N] = sum(k:K) x[t, k] * w[n, k]\ns[t:T] = max(n:N) y[t, n]\n"
	"z[t:T, n:N] = exp(y[t, n] - s[t])\nm[] = sum(t:T) z[t, 0]\noutput z : f32, m : f32\n";

START_TEST(invariance_fixed_schedule)
{
	/* the same schedule at every batch: the rows are bitwise the same on every backend;
	 * m sums over the batch and is not compared */
	char *t = tu_mkdtemp("inv");
	put(t, "g.tg", batched);
	int rc = run(t, "", "check %s/g.tg --backends c,opencl,vulkan --schedules 2 "
		     "--invariance T=1,3", t);
	char *out = file(t, "out"), *err = file(t, "err");
	ck_assert_msg(rc == 0, "exit %d: %s%s", rc, out, err);
	ck_assert_msg(strstr(out, "invariance over T: 18 comparisons, 0 not bitwise identical"), "%s",
		      out);
	ck_assert_int_eq(count(out, "not a batched output"), 18);
	free(out);
	free(err);
	tu_rm_rf(t);
}
END_TEST

START_TEST(invariance_split_by_batch)
{
	/* an engine that splits K at batch 1 only: a real non-invariance, expected, counted
	 * against split, not a failure */
	char *t = tu_mkdtemp("inv-split");
	put(t, "g.tg", batched);
	put(t, "split.sched", "split y : k=4\n");
	int rc = run(t, "", "check %s/g.tg --backends c --invariance T=1,3 "
		     "--invariance-schedule 1=%s/split.sched --json", t, t);
	char *out = file(t, "out"), *err = file(t, "err");
	ck_assert_msg(rc == 0, "exit %d: %s%s", rc, out, err);
	ck_assert_msg(strstr(err, "2 comparisons, 1 not bitwise identical (0 under the same"), "%s",
		      err);
	ck_assert_ptr_nonnull(strstr(err, "split 1/1"));
	ck_assert_int_eq(count(out, "{\"graph\":\"inv@T="), 4);
	ck_assert_ptr_nonnull(strstr(out, "not invariant, as expected: the schedule at T=1 differs"));
	free(out);
	free(err);
	tu_rm_rf(t);
}
END_TEST

START_TEST(invariance_fault_found)
{
	/* partial tiles dropped (a seeded fault): T=3 has one under tile t=2, T=8 none; under
	 * the same schedule that is a failure */
	char *t = tu_mkdtemp("inv-fault");
	put(t, "g.tg", batched);
	put(t, "tile.sched", "tile z : t=2\n");
	int rc = run(t, "ASSAY_FAULT=drop_tail", "check %s/g.tg --backends c --schedule "
		     "%s/tile.sched --invariance T=3", t, t);
	char *out = file(t, "out"), *err = file(t, "err");
	ck_assert_msg(rc == 1, "exit %d: %s%s", rc, out, err);
	ck_assert_ptr_nonnull(strstr(out, "variant-mismatch"));
	ck_assert_ptr_nonnull(strstr(out, "batch invariance: under the same schedule"));
	free(out);
	free(err);
	ck_assert_int_eq(run(t, "", "check %s/g.tg --backends c --invariance T=8", t), 2);
	err = file(t, "err");
	ck_assert_ptr_nonnull(strstr(err, "give smaller batches"));
	free(err);
	ck_assert_int_eq(run(t, "", "check %s/g.tg --backends c --invariance Q=1", t), 2);
	ck_assert_int_eq(run(t, "", "check %s/g.tg --backends c --invariance T=1 "
			     "--invariance-schedule 2=x", t), 2);
	tu_rm_rf(t);
}
END_TEST

/* `assay fuzz --invariance` (fuzz/inv.c): the batch drawn from a graph's sizes; with partial
 * tiles dropped (a seeded fault) the rows at a smaller batch differ from the full batch's
 * under the same schedule (variant-mismatch), without the fault they do not; a batch at
 * which the graph does not check is no comparison, not an error. */
START_TEST(fuzz_invariance)
{
	Diag d = {0};
	const char *src = "size K = 32\nd1[i:1, j:K] = 1 + i * j\noutput d1 : f64\n"
			  "schedule\ntile d1 : i=3, j=16\n";
	Graph *g = ir_parse(src, strlen(src), "inv.tg", NULL, 0, &d);
	ck_assert_msg(g, "%s", d.msg);
	uint64_t seed = 1;
	int64_t v = 0;
	for (; seed < 1000; seed++) {   /* a batch with a partial tile of 16 (a tile larger
					   than the extent is the whole extent) */
		ck_assert_int_eq(fz_inv_choice(g, seed, &v), 0);
		ck_assert(v >= 1 && v < 32);
		if (v > 16)
			break;
	}
	ck_assert_int_gt(v, 16);
	FzRun r = {0};
	r.backends[0] = be_find("c");
	r.nbackends = 1;
	r.seed = seed;
	r.dist = DIST_NORMAL;
	r.timeout_s = 20;
	r.invariance = true;
	for (int fault = 0; fault < 2; fault++) {
		r.faults = fault ? KF_DROP_TAIL : 0;
		FzResult res = {0};
		ck_assert_msg(fz_check(g, &r, &res, &d) == 0, "%s", d.msg ? d.msg : "");
		ck_assert_int_eq(res.n, 1);
		ck_assert_int_eq(res.v[0].verdict, fault ? V_VARIANT_MISMATCH : V_PASS);
		ck_assert_ptr_nonnull(strstr(res.inv_note, "K="));
		fz_result_free(&res);
	}
	ir_free(g);
	/* a read in bounds only at the full extent: the batch does not apply */
	const char *narrow = "size N = 4\ninput x : f32[N]\ny[i:N] = x[i] + x[3]\noutput y : f32\n";
	g = ir_parse(narrow, strlen(narrow), "narrow.tg", NULL, 0, &d);
	ck_assert_msg(g, "%s", d.msg);
	r.faults = 0;
	FzResult res = {0};
	ck_assert_msg(fz_check(g, &r, &res, &d) == 0, "%s", d.msg ? d.msg : "");
	ck_assert_int_eq(res.n, 0);
	ck_assert_ptr_nonnull(strstr(res.inv_note, "does not apply"));
	fz_result_free(&res);
	ir_free(g);
	/* the command line: a campaign records the mode and its done lines the batch */
	char *t = tu_mkdtemp("fuzz-inv");
	ck_assert_int_eq(run(t, "", "fuzz --invariance --cases 4 --backends c --seed 2 --quiet "
			     "-o %s/c", t), 0);
	char *set = file(t, "c/settings.json"), *log = file(t, "c/results.jsonl");
	ck_assert_ptr_nonnull(strstr(set, "\"invariance\":1"));
	ck_assert_int_eq(count(log, "\"invariance\":\""), 4);
	ck_assert_int_eq(run(t, "", "fuzz --invariance --grad --cases 1 -o %s/x", t), 2);
	free(set);
	free(log);
	tu_rm_rf(t);
}
END_TEST

int main(void)
{
	if (access(prog(), X_OK) != 0) {
		fprintf(stderr, "test_decode: %s is not there: build it first (make), or set ASSAY\n",
			prog());
		return EXIT_FAILURE;
	}
	Suite *s = suite_create("decode");
	TCase *tc = tcase_create("decode");
	tcase_set_timeout(tc, 600);
	tcase_add_test(tc, decode_agrees);
	tcase_add_test(tc, decode_on_gpu_apis);
	tcase_add_test(tc, decode_fault_is_defect);
	tcase_add_test(tc, decode_bad_model);
	tcase_add_test(tc, decode_weights_round_trip);
	tcase_add_test(tc, decode_unsupported_is_no_step);
	tcase_add_test(tc, invariance_fixed_schedule);
	tcase_add_test(tc, invariance_split_by_batch);
	tcase_add_test(tc, invariance_fault_found);
	tcase_add_test(tc, fuzz_invariance);
	suite_add_tcase(s, tc);
	return tu_run(s);
}
