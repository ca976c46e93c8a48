/* tests/test_map.c: the GPU mapping stage (compiler/map/map.h), through its public words
 * (kir_plan_text): for a few kernels (a row reduction, the same split, a tiled matrix
 * product) on each GPU target, the plan's mode, work-group, statement roles, locals'
 * sharing and places and bindings; and the plan recorded once with the program (made at
 * the first request and kept: ASSAY_CUDA_MODE changed afterwards does not change it, a
 * program lowered afterwards gets the new mode). Needs no device: plans are made before
 * any text.
 */
#include "testutil.h"
#include "../compiler/compiler.h"

static const char graph_src[] =
	"size R = 8, C = 1000, M = 32, N = 32, K = 40\n"
	"input x : f32[R, C]\ninput a : f32[M, K]\ninput b : f32[K, N]\n"
	"s[r:R] = sum(c:C) x[r, c]\n"
	"y[m:M, n:N] = sum(k:K) a[m, k] * b[k, n]\n"
	"output s : f32, y : f32\n";

static const char *const gpus[] = {"cuda", "opencl", "vulkan", "wgsl"};

static Kernels *lowered(Graph *g, const char *sched, Schedule *s)
{
	Diag d = {0};
	ck_assert_msg(ir_parse_schedule(g, sched, strlen(sched), "test.sched", &d) == 0, "%s", d.msg);
	ck_assert_msg(sched_build(g, s, &d) == 0, "%s", d.msg);
	Kernels *k = kir_lower(g, s, NULL, &d);
	ck_assert_msg(k != NULL, "%s", d.msg);
	return k;
}

/* Kernel i's paragraph of program k's plan on backend b (malloc'ed). */
static char *plan_of(const Kernels *k, const char *b, int i)
{
	const Backend *be = be_find(b);
	ck_assert_msg(be && be->map, "%s: no mapping target", b);
	char *all = kir_plan_text(k, be->map), head[32];
	snprintf(head, sizeof head, "kernel %d: ", i);
	char *at = strstr(all, head);
	ck_assert_msg(at != NULL, "%s: no kernel %d in:\n%s", b, i, all);
	char *end = strstr(at + 1, "kernel ");
	char *out = strndup(at, end ? (size_t)(end - at) : strlen(at));
	free(all);
	return out;
}

/* Kernel i's paragraph on backend b of graph src lowered under sched (malloc'ed). */
static char *plan_for(const char *src, const char *sched, const char *b, int i)
{
	Graph *g = tu_parse(src);
	Schedule s;
	Kernels *k = lowered(g, sched, &s);
	char *p = plan_of(k, b, i);
	kir_free(k);
	sched_free(&s);
	ir_free(g);
	return p;
}

static int count(const char *s, const char *needle)
{
	int n = 0;
	for (const char *p = strstr(s, needle); p; p = strstr(p + 1, needle))
		n++;
	return n;
}

#define HAS(text, what) ck_assert_msg(strstr(text, what) != NULL, "no '%s' in:\n%s", what, text)

/* Without a schedule nothing is distributed: an item per invocation everywhere, in the
 * target's own group of items (opencl's chosen by its runtime). */
START_TEST(row_reduction_serial)
{
	Graph *g = tu_parse(graph_src);
	Schedule s;
	Kernels *k = lowered(g, "", &s);
	static const char *const want[] = {"item wg=128 groups=1", "item wg=1 groups=0",
					   "item wg=64 groups=1", "item wg=64 groups=1"};
	for (size_t i = 0; i < ARRAY_LEN(gpus); i++) {
		char *p = plan_of(k, gpus[i], 0);
		HAS(p, want[i]);
		ck_assert_msg(!strstr(p, "roles:"), "%s", p);
		free(p);
	}
	kir_free(k);
	sched_free(&s);
	ir_free(g);
}
END_TEST

/* A split row reduction: a work-group per row everywhere, each target in its own terms. */
START_TEST(row_reduction_split)
{
	Graph *g = tu_parse(graph_src);
	Schedule s;
	Kernels *k = lowered(g, "split s : c=8", &s);
	/* cuda: the chunk loop and its tail recognised, partial s on thread s, 32 threads,
	 * the partials shared */
	char *p = plan_of(k, "cuda", 0);
	HAS(p, "kernel 0: group wg=32 groups=8 split=8 shared=");
	ck_assert_int_eq(count(p, " split:"), 1);
	ck_assert_int_eq(count(p, " tail:"), 1);
	HAS(p, ":shared/shared/held/init");   /* partial s in a register across its chunks,
	                                         starting from the sum's identity there */
	ck_assert_msg(!strstr(p, " init:"), "the initial sets are not listed: %s", p);
	free(p);
	/* opencl: the chunk loop swapped inside the partial loop, 8 lanes */
	p = plan_of(k, "opencl", 0);
	HAS(p, "kernel 0: group wg=8 groups=8");
	ck_assert_int_eq(count(p, " swap:"), 1);
	HAS(p, " nest:");
	HAS(p, ":shared/shared");
	free(p);
	/* vulkan: the partials merged through shared memory, whole subgroups, int integers */
	p = plan_of(k, "vulkan", 0);
	HAS(p, "kernel 0: group wg=32 groups=8 i32");
	HAS(p, ":merge/shared");
	free(p);
	/* wgsl: a partial per lane, 8 lanes, a work-group per row */
	p = plan_of(k, "wgsl", 0);
	HAS(p, "kernel 0: lanes wg=8 groups=8 i32");
	HAS(p, " lane:");
	free(p);
	kir_free(k);
	sched_free(&s);
	ir_free(g);
}
END_TEST

/* Launch fusion of row kernels (map/fuse.c, cuda, opencl and vulkan): softmax's max, sum and normalised
 * row share a launch, the row read at its own index; a consumer reading another row's
 * maximum, or a lead of one item, keeps its own launch. */
static const char softmax_src[] =
	"size R = 16, V = 300\ninput x : f32[R, V]\n"
	"m[r:R] = max(c:V) x[r, c]\ne[r:R, c:V] = exp(x[r, c] - m[r])\n"
	"s[r:R] = sum(c:V) e[r, c]\ny[r:R, c:V] = e[r, c] / s[r]\noutput y : f32\n";

START_TEST(row_fusion)
{
	Graph *g = tu_parse(softmax_src);
	Schedule s;
	Kernels *k = lowered(g, "split m : c=32\nsplit s : c=32\ninline e", &s);
	char *p = plan_of(k, "cuda", 0);
	HAS(p, " fused=3");
	/* cuda stages x's row (300 elements) for the loads of it in its three phases */
	HAS(p, " stage=b0:300/5");   /* chunks and tails of m and s, and y */
	free(p);
	p = plan_of(k, "cuda", 2);
	HAS(p, " in=0 per_row=1");
	free(p);
	p = plan_of(k, "opencl", 0);
	HAS(p, " fused=3");
	ck_assert_msg(!strstr(p, "stage="), "opencl stages nothing: %s", p);
	free(p);
	/* vulkan: only kernels of the lead's work-group join (y's rows want 256 invocations);
	 * it stages nothing */
	p = plan_of(k, "vulkan", 0);
	HAS(p, " fused=2");
	ck_assert_msg(!strstr(p, "stage="), "vulkan: %s", p);
	free(p);
	p = plan_of(k, "wgsl", 0);   /* not spelled there yet */
	ck_assert_msg(!strstr(p, "fused="), "wgsl: %s", p);
	free(p);
	kir_free(k);
	sched_free(&s);
	ir_free(g);

	/* y reads the next row's sum: s and y stay apart (m and s still share a launch) */
	static const char shifted[] =
		"size R = 16, V = 300\ninput x : f32[R, V]\n"
		"m[r:R] = max(c:V) x[r, c]\ne[r:R, c:V] = exp(x[r, c] - m[r])\n"
		"s[r:R] = sum(c:V) e[r, c]\ny[r:R, c:V] = e[r, c] / s[(r + 1) % R]\noutput y : f32\n";
	g = tu_parse(shifted);
	k = lowered(g, "split m : c=32\nsplit s : c=32\ninline e", &s);
	p = plan_of(k, "cuda", 0);
	HAS(p, " fused=2");
	HAS(p, " stage=b0:300/4");   /* m's and s's loads */
	free(p);
	p = plan_of(k, "cuda", 2);
	ck_assert_msg(!strstr(p, " in=") && !strstr(p, "fused=") && !strstr(p, "stage="), "%s", p);
	free(p);
	kir_free(k);
	sched_free(&s);
	ir_free(g);

	/* a row wider than the block's shared memory is not staged (16384 f32: 64 KiB) */
	static const char wide[] =
		"size R = 4, V = 16384\ninput x : f32[R, V]\n"
		"m[r:R] = max(c:V) x[r, c]\ne[r:R, c:V] = exp(x[r, c] - m[r])\n"
		"s[r:R] = sum(c:V) e[r, c]\ny[r:R, c:V] = e[r, c] / s[r]\noutput y : f32\n";
	p = plan_for(wide, "split m : c=32\nsplit s : c=32\ninline e", "cuda", 0);
	HAS(p, " fused=3");
	ck_assert_msg(!strstr(p, "stage="), "%s", p);
	free(p);

	/* a scalar lead is not a row space */
	static const char scalar[] =
		"size V = 300\ninput x : f32[V]\nm[] = max(c:V) x[c]\ny[c:V] = x[c] - m[]\n"
		"output y : f32\n";
	g = tu_parse(scalar);
	k = lowered(g, "split m : c=32", &s);
	p = plan_of(k, "cuda", 0);
	ck_assert_msg(!strstr(p, "fused="), "%s", p);
	free(p);
	kir_free(k);
	sched_free(&s);
	ir_free(g);
}
END_TEST

/* A tiled matrix product: the tile's 4 x 8 points dealt to a work-group of 32 as one
 * collapsed nest of two loops everywhere (vulkan keeps the hoisted accumulators by parts),
 * and the bindings wgsl plans (a and b loaded, y stored). */
START_TEST(tiled_matmul)
{
	Graph *g = tu_parse(graph_src);
	Schedule s;
	Kernels *k = lowered(g, "tile y : m=4, n=8", &s);
	for (size_t i = 0; i < ARRAY_LEN(gpus); i++) {
		char *p = plan_of(k, gpus[i], 1);
		HAS(p, "kernel 1: group wg=32 groups=32");
		ck_assert_msg(strstr(p, " nest:") && strstr(strstr(p, " nest:"), "/2"), "%s", p);
		free(p);
	}
	char *p = plan_of(k, "vulkan", 1);
	HAS(p, ":part/private");
	free(p);
	p = plan_of(k, "wgsl", 1);
	HAS(p, "binds:");
	ck_assert_int_eq(count(p, ":l "), 2);
	ck_assert_int_eq(count(p, ":s\n"), 1);
	free(p);
	kir_free(k);
	sched_free(&s);
	ir_free(g);
}
END_TEST

/* One record per program and target, made at the first request: the cuda rules read
 * ASSAY_CUDA_MODE when they plan, so changing it afterwards leaves the program's plan (the
 * one its emitter spelled and its runtime launches) as it was; a program lowered after
 * the change is planned under it. */
START_TEST(recorded_once)
{
	Graph *g = tu_parse(graph_src);
	Schedule s;
	unsetenv("ASSAY_CUDA_MODE");
	Kernels *k = lowered(g, "tile y : m=4, n=8", &s);
	char *before = plan_of(k, "cuda", 1);
	HAS(before, "kernel 1: group wg=32");
	setenv("ASSAY_CUDA_MODE", "thread", 1);
	char *after = plan_of(k, "cuda", 1);
	ck_assert_str_eq(before, after);
	Schedule s2;
	Kernels *k2 = lowered(g, "tile y : m=4, n=8", &s2);
	char *fresh = plan_of(k2, "cuda", 1);
	HAS(fresh, "kernel 1: item wg=128");
	unsetenv("ASSAY_CUDA_MODE");
	ck_assert_ptr_null(be_find("c")->map);
	free(before);
	free(after);
	free(fresh);
	kir_free(k);
	kir_free(k2);
	sched_free(&s2);
	sched_free(&s);
	ir_free(g);
}
END_TEST

int main(void)
{
	unsetenv("ASSAY_CUDA_MODE");
	Suite *s = suite_create("map");
	TCase *tc = tcase_create("map");
	tcase_add_test(tc, row_reduction_serial);
	tcase_add_test(tc, row_reduction_split);
	tcase_add_test(tc, tiled_matmul);
	tcase_add_test(tc, recorded_once);
	tcase_add_test(tc, row_fusion);
	suite_add_tcase(s, tc);
	return tu_run(s);
}
