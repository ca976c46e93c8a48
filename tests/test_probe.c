/* tests/test_probe.c: `assay probe` (cli/probe.c): the summation tree of a derived row sum,
 * revealed FPRev-style, equals the tree its schedule declares (linear, pairwise, split), on
 * the c backend and wherever the GPU API backends run here; a seeded fault that changes the
 * order or drops a term is a mismatch (exit 1); bad requests exit 2. */
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include "testutil.h"

static const char *prog(void)
{
	const char *p = getenv("ASSAY");
	return p && *p ? p : "./assay";
}

/* Runs `ENV ASSAY probe ARGS` with stdout into DIR/out; its exit status. */
static int probe(const char *dir, const char *env, const char *args)
{
	char cmd[2048];
	snprintf(cmd, sizeof cmd, "%s %s probe %s >%s/out 2>%s/err", env, prog(), args, dir, dir);
	int st = system(cmd);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static char *out(const char *dir)
{
	char p[600];
	snprintf(p, sizeof p, "%s/out", dir);
	return tu_read_file(p, NULL);
}

static void sched(const char *dir, const char *text)
{
	char p[600];
	snprintf(p, sizeof p, "%s/s.sched", dir);
	FILE *f = fopen(p, "w");
	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	fclose(f);
}

static const struct {
	const char *sched;   /* "" for the default schedule */
	int n;
	const char *tree;
} trees[] = {
	{"", 6, "(((((0 1) 2) 3) 4) 5)"},
	{"order s : pairwise\n", 7, "((0 (1 2)) ((3 4) (5 6)))"},
	{"order s : pairwise\n", 8, "(((0 1) (2 3)) ((4 5) (6 7)))"},
	/* three partials dealt by k mod 3, each linear, combined left to right */
	{"split s : k=3\n", 8, "((((0 3) 6) ((1 4) 7)) (2 5))"},
};

START_TEST(declared_trees)
{
	char *t = tu_mkdtemp("probe");
	const char *be[] = {"c", "opencl", "vulkan"};
	for (size_t b = 0; b < ARRAY_LEN(be); b++) {
		const Backend *x = be_find(be[b]);
		char why[256];
		if (b > 0 && (!x || x->available(why, sizeof why) != 0))
			continue;   /* the GPU API backends where this machine has them */
		char args[1024];
		if (*trees[_i].sched) {
			sched(t, trees[_i].sched);
			snprintf(args, sizeof args, "--backend %s --n %d --schedule %s/s.sched", be[b],
				 trees[_i].n, t);
		} else {
			snprintf(args, sizeof args, "--backend %s --n %d", be[b], trees[_i].n);
		}
		ck_assert_int_eq(probe(t, "", args), 0);
		char *o = out(t), want[256];
		snprintf(want, sizeof want, "kernel's tree:   %s\n", trees[_i].tree);
		ck_assert_msg(strstr(o, want), "%s: %s", be[b], o);
		snprintf(want, sizeof want, "declared tree:   %s\n", trees[_i].tree);
		ck_assert_msg(strstr(o, want), "%s: %s", be[b], o);
		free(o);
	}
	tu_rm_rf(t);
}
END_TEST

START_TEST(faults_and_errors)
{
	char *t = tu_mkdtemp("probe-bad");
	char args[1024];
	sched(t, "split s : k=3\n");
	snprintf(args, sizeof args, "--n 8 --schedule %s/s.sched", t);
	/* only the first partial returned: the counts fit no tree */
	ck_assert_int_eq(probe(t, "ASSAY_FAULT=no_combine", args), 1);
	char *o = out(t);
	ck_assert_ptr_nonnull(strstr(o, "MISMATCH"));
	free(o);
	sched(t, "order s : pairwise\n");
	snprintf(args, sizeof args, "--n 7 --schedule %s/s.sched --json", t);
	ck_assert_int_eq(probe(t, "ASSAY_FAULT=pairwise_odd", args), 1);
	o = out(t);
	ck_assert_ptr_nonnull(strstr(o, "\"same\":false"));
	free(o);
	ck_assert_int_eq(probe(t, "", "--n 1"), 2);
	ck_assert_int_eq(probe(t, "", "--backend nope"), 2);
	ck_assert_int_eq(probe(t, "", "extra"), 2);
	sched(t, "accum s : f16\n");
	snprintf(args, sizeof args, "--n 16 --schedule %s/s.sched", t);
	ck_assert_int_eq(probe(t, "", args), 2);   /* f16 cannot absorb 16 ones below 65504 */
	tu_rm_rf(t);
}
END_TEST

/* The graph form: sum D of a graph, under the graph's schedule block, as the fuzzer's probes
 * (fuzz/probe.c) run it; a range LO..HI and two reduction indices are one row of leaves. */
START_TEST(graph_form)
{
	char *t = tu_mkdtemp("probe-graph");
	char p[600], args[1024];
	snprintf(p, sizeof p, "%s/g.tg", t);
	FILE *f = fopen(p, "w");
	ck_assert_ptr_nonnull(f);
	fputs("graph g\ninput a : f32[4, 6, 2]\n"
	      "y[i:4] = sum(j: 2..8, k:2) a[i, j - 2, k] * 2\n"
	      "z[i:4] = y[i] + 1\n"
	      "output z : f32\n"
	      "schedule\nsplit y : j=3\n", f);
	fclose(f);
	snprintf(args, sizeof args, "%s --def y", p);
	ck_assert_int_eq(probe(t, "", args), 0);
	char *o = out(t);
	/* 12 leaves (j, k) row-major; three partials by j mod 3, each linear */
	ck_assert_msg(strstr(o, "declared tree:   (((((0 1) 6) 7) (((2 3) 8) 9)) (((4 5) 10) 11))\n"),
		      "%s", o);
	ck_assert_ptr_nonnull(strstr(o, "sum y of 12 f32 terms"));
	ck_assert_ptr_nonnull(strstr(o, "the kernel sums in the order its schedule declares"));
	free(o);
	ck_assert_int_eq(probe(t, "ASSAY_FAULT=no_combine", args), 1);
	snprintf(args, sizeof args, "%s --def z", p);
	ck_assert_int_eq(probe(t, "", args), 2);    /* not a sum */
	snprintf(args, sizeof args, "%s --def nope", p);
	ck_assert_int_eq(probe(t, "", args), 2);
	snprintf(args, sizeof args, "%s", p);
	ck_assert_int_eq(probe(t, "", args), 2);    /* a graph needs --def */
	snprintf(args, sizeof args, "%s --def y --n 4", p);
	ck_assert_int_eq(probe(t, "", args), 2);
	ck_assert_int_eq(probe(t, "", "--def y"), 2);   /* --def needs a graph */
	tu_rm_rf(t);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("probe");
	TCase *tc = tcase_create("probe");
	tcase_set_timeout(tc, 300);
	tcase_add_loop_test(tc, declared_trees, 0, (int)ARRAY_LEN(trees));
	tcase_add_test(tc, faults_and_errors);
	tcase_add_test(tc, graph_form);
	suite_add_tcase(s, tc);
	return tu_run(s);
}
