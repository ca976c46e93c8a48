/* bench/bench_c.c: the C backend, beside its anchors measured in the same run.
 *
 * 1. Per example: compile time (a cold compile into a fresh cache) and kernel run time
 *    (the median of 5 runs after a warm-up, through the run driver: compiler.h
 *    be_run_time), with the default schedule, one thread.
 * 2. A derived f32 matmul 1024x1024x1024 (tiled schedule) in GFLOP/s beside a naive triple
 *    loop and OpenBLAS's sgemm on one thread (libopenblas.so.0 loaded with dlopen; it is the
 *    anchor, not a dependency). Target (issue 3): >= 25% of OpenBLAS.
 */
#include <dlfcn.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "../compiler/compiler.h"
#include "../interp/interp.h"
#include "bench.h"

enum { REPS = 5 };

static void die(Diag *d)
{
	fprintf(stderr, "%s", d->msg ? d->msg : "bench: failure\n");
	exit(3);
}

/* Compiles g under its schedule and times it through the run driver (a warm-up run, then
 * REPS runs each timed alone); returns the median run time. */
static double run_graph(Graph *g, const char *cache, double *compile_s)
{
	Diag d = {0};
	Schedule s;
	if (sched_build(g, &s, &d))
		die(&d);
	Kernels *k = kir_lower(g, &s, NULL, &d);
	if (!k)
		die(&d);
	BeOpts o = {1, cache};
	InputSpec spec = {DIST_NORMAL, 1, false};
	int nin = ir_ninputs(g);
	HostTensor *in = calloc((size_t)nin + 1, sizeof *in);
	if (mp_make_inputs(g, &spec, NULL, in, &d))
		die(&d);
	BeRun r;
	BeTimeOpts to = {.batches = REPS};
	BeTimes t;
	be_run_open(&r, be_find("c"), k);
	if (be_run_ready(&r, &o, in, &d) || be_run_time(&r, &to, &t, &d))
		die(&d);
	*compile_s = r.st.compile_s;
	be_run_close(&r);
	for (int i = 0; i < nin; i++)
		ht_free(&in[i]);
	free(in);
	kir_free(k);
	sched_free(&s);
	return t.run_s;
}

static void examples(const char *cache)
{
	glob_t gl;
	if (glob("examples/*.tg", 0, NULL, &gl)) {
		printf("no examples found (run from the repository root)\n");
		return;
	}
	printf("%-18s %12s %12s\n", "example", "compile s", "run ms");
	for (size_t i = 0; i < gl.gl_pathc; i++) {
		Diag d = {0};
		Graph *g = ir_parse_file(gl.gl_pathv[i], NULL, 0, &d);
		if (!g)
			die(&d);
		double cs, rs = run_graph(g, cache, &cs);
		printf("%-18s %12.3f %12.3f\n", g->name ? g->name : gl.gl_pathv[i], cs, rs * 1e3);
		ir_free(g);
	}
	globfree(&gl);
}

enum { N = 1024 };

static double naive_gflops(void)
{
	float *a = malloc(sizeof(float) * N * N), *b = malloc(sizeof(float) * N * N),
	      *c = malloc(sizeof(float) * N * N);
	for (int i = 0; i < N * N; i++) {
		a[i] = (float)((i * 7) % 13) / 13.0f;
		b[i] = (float)((i * 5) % 11) / 11.0f;
	}
	double t0 = now();
	for (int i = 0; i < N; i++)
		for (int j = 0; j < N; j++) {
			float s = 0;
			for (int k = 0; k < N; k++)
				s += a[i * N + k] * b[k * N + j];
			c[i * N + j] = s;
		}
	double t = now() - t0;
	volatile float sink = c[N + 1];
	(void)sink;
	free(a), free(b), free(c);
	return 2.0 * N * N * N / t / 1e9;
}

typedef void SgemmFn(int order, int ta, int tb, int m, int n, int k, float alpha,
		     const float *a, int lda, const float *b, int ldb, float beta, float *c, int ldc);

static double openblas_gflops(char *why, size_t n)
{
	void *h = dlopen("libopenblas.so.0", RTLD_NOW);
	if (!h) {
		snprintf(why, n, "libopenblas.so.0 not found (Debian libopenblas-dev)");
		return 0;
	}
	/* ISO C has no conversion from void * to a function pointer: copy the bits */
	SgemmFn *sgemm = NULL;
	void (*threads)(int) = NULL;
	char *(*core)(void) = NULL;
	void *p;
	if ((p = dlsym(h, "cblas_sgemm")))
		memcpy(&sgemm, &p, sizeof p);
	if ((p = dlsym(h, "openblas_set_num_threads")))
		memcpy(&threads, &p, sizeof p);
	if ((p = dlsym(h, "openblas_get_corename")))
		memcpy(&core, &p, sizeof p);
	if (!sgemm) {
		snprintf(why, n, "cblas_sgemm missing from libopenblas.so.0");
		return 0;
	}
	if (threads)
		threads(1);
	snprintf(why, n, "OpenBLAS core %s", core ? core() : "?");
	float *a = malloc(sizeof(float) * N * N), *b = malloc(sizeof(float) * N * N),
	      *c = malloc(sizeof(float) * N * N);
	for (int i = 0; i < N * N; i++)
		a[i] = b[i] = (float)(i % 17) / 17.0f;
	double t[REPS];
	for (int r = 0; r < REPS; r++) {
		double t0 = now();
		sgemm(101 /* row major */, 111, 111, N, N, N, 1.0f, a, N, b, N, 0.0f, c, N);
		t[r] = now() - t0;
	}
	free(a), free(b), free(c);
	return 2.0 * N * N * N / median(t, REPS) / 1e9;
}

static const char *matmul =
	"graph matmul1024\n"
	"size M = 1024, N = 1024, K = 1024\n"
	"input a : f32[M, K]\ninput b : f32[K, N]\n"
	"c[i:M, j:N] = sum(k:K) a[i, k] * b[k, j]\n"
	"output c : f32\n"
	"schedule\n"
	"tile c : i=6, j=64\n";

int main(void)
{
	char cache[] = "/tmp/assay-bench-XXXXXX";
	if (!mkdtemp(cache)) {
		perror("mkdtemp");
		return 3;
	}
	printf("C backend, one thread, medians of %d runs; compile times are cold (fresh cache %s)\n\n",
	       REPS, cache);
	examples(cache);

	Diag d = {0};
	Graph *g = ir_parse(matmul, strlen(matmul), "<bench>", NULL, 0, &d);
	if (!g)
		die(&d);
	double cs, t = run_graph(g, cache, &cs);
	ir_free(g);
	double derived = 2.0 * N * N * N / t / 1e9;
	double naive = naive_gflops();
	char why[256];
	double blas = openblas_gflops(why, sizeof why);
	printf("\nf32 matmul %dx%dx%d, schedule `tile c : i=6, j=64`, one thread:\n", N, N, N);
	printf("  derived kernel  %8.2f GFLOP/s\n", derived);
	printf("  naive loop      %8.2f GFLOP/s   derived/naive    %6.2fx\n", naive, derived / naive);
	if (blas > 0)
		printf("  OpenBLAS sgemm  %8.2f GFLOP/s   derived/OpenBLAS %6.2f  (target >= 0.25; %s)\n",
		       blas, derived / blas, why);
	else
		printf("  OpenBLAS sgemm  not measured: %s\n", why);
	char cmd[300];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", cache);
	if (system(cmd) != 0)
		fprintf(stderr, "bench: could not remove %s\n", cache);
	return 0;
}
