/* tests/test_external.c: kernels from outside (spec/cli.md v2 "Verifying kernels from
 * outside", docs/external.md), through the assay program and clients/numpy_client.py:
 * every example passes; the client's faults get their verdicts (f16 accumulation
 * over-budget, a softmax without its max shift special-mismatch, a crash, a hang, a missing
 * or mis-shaped output); fuzz --external keeps within the capabilities; a report puts an
 * external and assay's own backend side by side; `order s : any` budgets the worst tree.
 * Needs python3 with NumPy (scripts/deps.sh: python3-numpy).
 */
#include <stdarg.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "testutil.h"
#include "../fuzz/fuzz.h"
#include "../oracles/oracles.h"

#define NUMPY "python3 clients/numpy_client.py"

static const char *prog(void)
{
	const char *p = getenv("ASSAY");
	return p && *p ? p : "./assay";
}

typedef struct {
	int code;
	char *out;
} Ran;

static char *tmpdir(void)
{
	char *t = strdup("/tmp/assay-test-ext.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(t));
	return t;
}

static void rm_rf(char *dir)
{
	char cmd[600];
	ck_assert(strncmp(dir, "/tmp/assay-test-ext.", 20) == 0);
	snprintf(cmd, sizeof cmd, "rm -rf -- '%s'", dir);
	ck_assert_int_eq(system(cmd), 0);
	free(dir);
}

/* Runs `ASSAY ARGS` (formatted, through /bin/sh), stdout and stderr together kept. */
static Ran run(const char *dir, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static Ran run(const char *dir, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *args = NULL, *cmd = NULL, *path = NULL;
	ck_assert_int_ge(vasprintf(&args, fmt, ap), 0);
	va_end(ap);
	ck_assert_int_ge(asprintf(&path, "%s/out.txt", dir), 0);
	ck_assert_int_ge(asprintf(&cmd, "timeout 300 %s %s >%s 2>&1", prog(), args, path), 0);
	int st = system(cmd);
	Ran r = {WIFEXITED(st) ? WEXITSTATUS(st) : 128, tu_read_file(path, NULL)};
	ck_assert_ptr_nonnull(r.out);
	free(args);
	free(cmd);
	free(path);
	return r;
}

static int count(const char *hay, const char *needle)
{
	int n = 0;
	for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle))
		n++;
	return n;
}

static void write_text(const char *dir, const char *name, const char *text)
{
	char path[600];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	FILE *f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	fclose(f);
}

/* A small graph whose kernel is quick to run: a sum of 64 products. */
static const char *small_tg =
	"graph small\nsize N = 4, K = 64\ninput a : f32[N, K]\ninput b : f32[K]\n"
	"y[i:N] = sum(k:K) a[i, k] * b[k]\noutput y : f32\n";

START_TEST(numpy_passes_every_example)
{
	char *dir = tmpdir();
	Ran r = run(dir, "check examples/*.tg --external '" NUMPY "' --json");
	ck_assert_msg(r.code == 0, "exit %d: %.2000s", r.code, r.out);
	/* one record per output of the 12 examples (moe_topk and rope have two) */
	ck_assert_int_eq(count(r.out, "\"backend\":\"external\""), 14);
	ck_assert_int_eq(count(r.out, "\"verdict\":\"pass\""), 14);
	ck_assert_int_eq(count(r.out, "\"schedule\":\"claim\""), 14);
	free(r.out);
	rm_rf(dir);
}
END_TEST

START_TEST(f16_accumulation_over_budget)
{
	char *dir = tmpdir();
	Ran r = run(dir, "check examples/matmul.tg --external '" NUMPY " --fault f16-accumulate'");
	ck_assert_msg(r.code == 1, "exit %d: %s", r.code, r.out);
	ck_assert_msg(strstr(r.out, "over-budget"), "%s", r.out);
	free(r.out);
	/* the same client without the fault passes the same case */
	r = run(dir, "check examples/matmul.tg --external '" NUMPY "'");
	ck_assert_msg(r.code == 0 && strstr(r.out, " pass "), "exit %d: %s", r.code, r.out);
	free(r.out);
	rm_rf(dir);
}
END_TEST

/* A softmax of logits around 60 +- 30: exp overflows f32 without the max shift. */
START_TEST(softmax_without_max_shift)
{
	char *dir = tmpdir(), path[600];
	snprintf(path, sizeof path, "%s/x.npy", dir);
	int64_t dims[2] = {8, 1031};
	HostTensor x = {0};
	ck_assert_int_eq(ht_alloc(&x, DT_F32, 2, dims), 0);
	for (int64_t i = 0; i < x.n; i++)
		ht_set(&x, i, 60 + 30 * sin(0.37 * (double)i));
	Diag d = {0};
	ck_assert_int_eq(npy_write(path, &x, &d), 0);
	ht_free(&x);
	Ran r = run(dir, "check examples/softmax.tg --input x=%s --external '" NUMPY
		    " --fault no-max-shift'", path);
	ck_assert_msg(r.code == 1 && strstr(r.out, "special-mismatch"), "exit %d: %s", r.code, r.out);
	free(r.out);
	r = run(dir, "check examples/softmax.tg --input x=%s --external '" NUMPY "'", path);
	ck_assert_msg(r.code == 0 && strstr(r.out, " pass "), "exit %d: %s", r.code, r.out);
	free(r.out);
	rm_rf(dir);
}
END_TEST

START_TEST(failing_commands)
{
	static const struct {
		const char *fault, *verdict, *says;
	} t[] = {
		{"crash", "crash", "exited with status 1"},
		{"segv", "crash", "confirmed"},
		{"no-output", "bad-output", "without writing output y"},
		{"wrong-shape", "bad-output", "the command wrote f32[3] (<f4) where f32[4] (<f4) is asked"},
		{"wrong-dtype", "bad-output", "f64[4] (<f8) where f32[4]"},
	};
	char *dir = tmpdir();
	write_text(dir, "small.tg", small_tg);
	for (size_t i = 0; i < ARRAY_LEN(t); i++) {
		Ran r = run(dir, "check %s/small.tg --external '" NUMPY " --fault %s' --name np", dir,
			    t[i].fault);
		ck_assert_msg(r.code == 1, "%s: exit %d: %s", t[i].fault, r.code, r.out);
		char row[64];
		snprintf(row, sizeof row, " %s ", t[i].verdict);
		ck_assert_msg(strstr(r.out, row) && strstr(r.out, t[i].says) && strstr(r.out, " np "),
			      "%s: %s", t[i].fault, r.out);
		free(r.out);
	}
	/* a command that never ends: killed at the compile limit plus the run limit */
	Ran r = run(dir, "check %s/small.tg --external '" NUMPY " --fault hang' --timeout 1 "
		    "--compile-timeout 1", dir);
	ck_assert_msg(r.code == 1 && strstr(r.out, " timeout ") &&
		      strstr(r.out, "gave no result within 2 s"), "exit %d: %s", r.code, r.out);
	free(r.out);
	/* the name of one of assay's own backends is refused: the records would mix them */
	r = run(dir, "check %s/small.tg --external '" NUMPY "' --name c", dir);
	ck_assert_msg(r.code == 2 && strstr(r.out, "one of assay's own backends"), "exit %d: %s",
		      r.code, r.out);
	free(r.out);
	/* a command that is not there at all: sh's 127 is a crash with its stderr */
	r = run(dir, "check %s/small.tg --external 'no-such-client-here'", dir);
	ck_assert_msg(r.code == 1 && strstr(r.out, "status 127") && strstr(r.out, "not found"),
		      "exit %d: %s", r.code, r.out);
	free(r.out);
	rm_rf(dir);
}
END_TEST

/* The claim: --schedule CLAIM's formats are what the client computes in, and what the
 * budget allows; an order the claim leaves unstated is any. */
START_TEST(claimed_schedule)
{
	char *dir = tmpdir();
	write_text(dir, "small.tg", small_tg);
	write_text(dir, "claim.txt", "accum y : f16\n");
	Ran r = run(dir, "check %s/small.tg --external '" NUMPY "' --schedule %s/claim.txt --json",
		    dir, dir);
	ck_assert_msg(r.code == 0, "exit %d: %s", r.code, r.out);
	ck_assert_msg(strstr(r.out, "accum y : f16") && strstr(r.out, "order y : any"), "%s", r.out);
	free(r.out);
	/* f16 accumulation is within a claim of f16, not within the default claim of f32 */
	r = run(dir, "check %s/small.tg --external '" NUMPY " --fault f16-accumulate' --schedule "
		"%s/claim.txt", dir, dir);
	ck_assert_msg(r.code == 0, "exit %d: %s", r.code, r.out);
	free(r.out);
	r = run(dir, "check %s/small.tg --external '" NUMPY " --fault f16-accumulate'", dir);
	ck_assert_msg(r.code == 1 && strstr(r.out, "over-budget"), "exit %d: %s", r.code, r.out);
	free(r.out);
	rm_rf(dir);
}
END_TEST

/* fuzz --external: a client that declares no exp never receives one (it would exit 1, a
 * crash, on a request holding exp); the same cases, unrestricted, do hold exp. */
START_TEST(fuzz_keeps_to_capabilities)
{
	enum { CASES = 12 };
	GenOpts go;
	fz_gen_defaults(&go);
	int with_exp = 0;
	Diag d = {0};
	for (int n = 0; n < CASES; n++) {
		char *t = fz_gen_text(&go, 1, (uint64_t)n, &d);
		ck_assert_ptr_nonnull(t);
		with_exp += strstr(t, "exp(") != NULL;
		free(t);
	}
	ck_assert_msg(with_exp > 0, "none of the %d unrestricted cases holds exp", CASES);
	char *dir = tmpdir();
	Ran r = run(dir, "fuzz --external '" NUMPY " --without exp,exp2,expm1' --cases %d "
		    "--no-feedback --no-reduce --quiet -o %s/camp", CASES, dir);
	ck_assert_msg(r.code == 0, "exit %d: %s", r.code, r.out);
	char path[600];
	snprintf(path, sizeof path, "%s/camp/results.jsonl", dir);
	char *log = tu_read_file(path, NULL);
	ck_assert_ptr_nonnull(log);
	ck_assert_int_eq(count(log, "\"verdict\":\"crash\""), 0);
	ck_assert_int_gt(count(log, "\"verdict\":\"pass\""), CASES / 2);
	free(log);
	free(r.out);
	/* a resume needs the external kernel named again; then it continues, still within */
	r = run(dir, "fuzz --resume %s/camp --cases %d --quiet", dir, CASES + 4);
	ck_assert_msg(r.code == 2 && strstr(r.out, "--external CMD --name NAME"), "exit %d: %s",
		      r.code, r.out);
	free(r.out);
	r = run(dir, "fuzz --resume %s/camp --external '" NUMPY " --without exp,exp2,expm1' "
		"--cases %d --quiet", dir, CASES + 4);
	ck_assert_msg(r.code == 0, "exit %d: %s", r.code, r.out);
	free(r.out);
	log = tu_read_file(path, NULL);
	ck_assert_int_eq(count(log, "\"verdict\":\"crash\""), 0);
	ck_assert_int_eq(count(log, "{\"done\":"), CASES + 4);
	free(log);
	/* a failure's repro names the command, and its reproduce line reproduces it */
	r = run(dir, "fuzz --external '" NUMPY " --fault crash' --cases 1 --no-reduce --quiet -o "
		"%s/camp3", dir);
	ck_assert_msg(r.code == 1, "exit %d: %s", r.code, r.out);
	free(r.out);
	snprintf(path, sizeof path, "%s/camp3/failures/external.crash.-.-.-/repro.tg", dir);
	char *repro = tu_read_file(path, NULL);
	ck_assert_ptr_nonnull(repro);
	char *line = strstr(repro, "# reproduce: assay check THIS.tg --external '" NUMPY
			    " --fault crash' --name external --seed ");
	ck_assert_msg(line, "%s", repro);
	line += strlen("# reproduce: assay ");
	line[strcspn(line, "\n")] = 0;
	char *again = strstr(line, "THIS.tg");
	r = run(dir, "check %s%s", path, again + strlen("THIS.tg"));
	ck_assert_msg(r.code == 1 && strstr(r.out, " crash "), "exit %d: %s", r.code, r.out);
	free(r.out);
	free(repro);
	/* the capability query itself: a command that prints none is refused, exit 2 */
	r = run(dir, "fuzz --external 'true' --cases 1 --quiet -o %s/camp2", dir);
	ck_assert_msg(r.code == 2 && strstr(r.out, "capability"), "exit %d: %s", r.code, r.out);
	free(r.out);
	rm_rf(dir);
}
END_TEST

/* assay report of a check with both assay's c backend and an external one shows both. */
START_TEST(report_side_by_side)
{
	char *dir = tmpdir();
	Ran r = run(dir, "check examples/softmax.tg --backends c --external '" NUMPY "' --name numpy "
		    "-o %s/check", dir);
	ck_assert_msg(r.code == 0, "exit %d: %s", r.code, r.out);
	free(r.out);
	r = run(dir, "report %s/check -o %s/report", dir, dir);
	ck_assert_msg(r.code == 0, "exit %d: %s", r.code, r.out);
	free(r.out);
	char path[600];
	snprintf(path, sizeof path, "%s/report/report.md", dir);
	char *md = tu_read_file(path, NULL);
	ck_assert_ptr_nonnull(md);
	ck_assert_msg(strstr(md, "| c | f32 |") && strstr(md, "| numpy | f32 |") &&
		      strstr(md, "numpy: external command"), "%s", md);
	free(md);
	snprintf(path, sizeof path, "%s/report/junit.xml", dir);
	char *ju = tu_read_file(path, NULL);
	ck_assert_ptr_nonnull(ju);
	ck_assert_msg(strstr(ju, "name=\"numpy/claim\"") && strstr(ju, "name=\"c/default\""), "%s",
		      ju);
	free(ju);
	rm_rf(dir);
}
END_TEST

/* order s : any: at least the budget of every tree assay knows (linear, pairwise), and more
 * than the linear chain's where partial sums cancel. */
START_TEST(order_any_budget)
{
	static const char *const orders[] = {"linear", "pairwise", "any"};
	double b[3][16];
	for (int o = 0; o < 3; o++) {
		char src[600];
		snprintf(src, sizeof src, "size N = 16, K = 200\ninput a : f32[N, K]\n"
			 "y[i:N] = sum(k:K) a[i, k]\noutput y : f32\nschedule\norder y : %s\n",
			 orders[o]);
		Diag d = {0};
		Graph *g = ir_parse(src, strlen(src), "any.tg", NULL, 0, &d);
		ck_assert_msg(g, "%s", d.msg);
		Schedule s;
		ck_assert_int_eq(sched_build(g, &s, &d), 0);
		ck_assert_int_eq(s.defs[0].order, o == 2 ? ORDER_ANY : o == 1 ? ORDER_PAIRWISE :
					   ORDER_LINEAR);
		HostTensor in = {0}, bud[1];
		int64_t dims[2] = {16, 200};
		ck_assert_int_eq(ht_alloc(&in, DT_F32, 2, dims), 0);
		for (int64_t i = 0; i < in.n; i++)   /* big terms that cancel: +1000, -1000, small */
			ht_set(&in, i, (i % 200) < 2 ? ((i % 200) ? -1000.0 : 1000.0) : 0.001 * (double)(i % 7));
		ck_assert_msg(orc_budget(g, &s, "opencl", &in, bud, &d) == 0, "%s", d.msg);
		for (int i = 0; i < 16; i++)
			b[o][i] = ht_get(&bud[0], i);
		ht_free(&bud[0]);
		ht_free(&in);
		sched_free(&s);
		ir_free(g);
	}
	for (int i = 0; i < 16; i++) {
		ck_assert(b[2][i] >= b[0][i] && b[2][i] >= b[1][i]);
		ck_assert_msg(b[2][i] > 4 * b[0][i], "any %g, linear %g", b[2][i], b[0][i]);
		ck_assert(isfinite(b[2][i]));
	}
}
END_TEST

/* The PyTorch client here (no CUDA device; PyTorch perhaps absent): it declines with the
 * reason, so the check tested nothing (exit 2) and says why; its capabilities need no
 * PyTorch, and sdpa's are attention's only. */
START_TEST(torch_client_declines_without_device)
{
	char *dir = tmpdir();
	Ran r = run(dir, "check examples/softmax.tg --external 'python3 clients/torch_client.py "
		    "--mode eager'");
	ck_assert_msg(r.code == 2 && strstr(r.out, "unsupported") && strstr(r.out, "torch_client: ") &&
		      (strstr(r.out, "not installed") || strstr(r.out, "no CUDA device")),
		      "exit %d: %s", r.code, r.out);
	free(r.out);
	char cmd[600];
	snprintf(cmd, sizeof cmd, "python3 clients/torch_client.py --mode sdpa --assay-capabilities "
		 ">%s/caps.json", dir);
	ck_assert_int_eq(system(cmd), 0);
	snprintf(cmd, sizeof cmd, "%s/caps.json", dir);
	char *caps = tu_read_file(cmd, NULL);
	ck_assert_msg(caps && strstr(caps, "\"monoids\": [\"sum\", \"max\"]") &&
		      !strstr(caps, "\"tanh\""), "%s", caps ? caps : "(none)");
	free(caps);
	rm_rf(dir);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("external");
	TCase *tc = tcase_create("external");
	tcase_set_timeout(tc, 600);
	tcase_add_test(tc, order_any_budget);
	tcase_add_test(tc, numpy_passes_every_example);
	tcase_add_test(tc, f16_accumulation_over_budget);
	tcase_add_test(tc, softmax_without_max_shift);
	tcase_add_test(tc, failing_commands);
	tcase_add_test(tc, claimed_schedule);
	tcase_add_test(tc, fuzz_keeps_to_capabilities);
	tcase_add_test(tc, report_side_by_side);
	tcase_add_test(tc, torch_client_declines_without_device);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	if (access(prog(), X_OK) != 0) {
		fprintf(stderr, "test_external: %s is not there: build it first (make), or set ASSAY\n",
			prog());
		return EXIT_FAILURE;
	}
	return tu_run(suite());
}
