/* tests/test_decode.c: `assay decode` (verify/decode.c, docs/decode.md) and what it rests
 * on. The model is examples/qwen3_tiny (one Qwen3-MoE layer over a paged KV cache); every
 * command runs as a subprocess (ASSAY in the environment, default ./assay) under
 * `timeout`. A correct kernel's greedy decode agrees with the oracle at every step and the
 * gate holds; a seeded fault (skip_last: the last term of every reduction dropped) makes
 * defects and fails the gate; a model that breaks the conventions is the user's error.
 */
#include <math.h>
#include <stdarg.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "testutil.h"
#include "../verify/verify.h"

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
	suite_add_tcase(s, tc);
	return tu_run(s);
}
