/* tests/test_map.c: the GPU mapping stage (compiler/map.h, a private header of compiler/
 * that this suite reads on purpose: the plans are its subject). For a few kernels (a row
 * reduction, the same split, a tiled matrix product) on each GPU target: the plan's mode,
 * work-group, statement roles and locals' sharing and places; the plan recorded once per
 * program and target (the emitter and the runtime read one record); and the target's
 * limits, as data, deciding (a lower work-group limit gives a smaller group). Needs no
 * device: plans are made before any text.
 */
#include "testutil.h"
#include "../compiler/map.h"

static const char graph_src[] =
	"size R = 8, C = 1000, M = 32, N = 32, K = 40\n"
	"input x : f32[R, C]\ninput a : f32[M, K]\ninput b : f32[K, N]\n"
	"s[r:R] = sum(c:C) x[r, c]\n"
	"y[m:M, n:N] = sum(k:K) a[m, k] * b[k, n]\n"
	"output s : f32, y : f32\n";

static const char *const gpus[] = {"cuda", "opencl", "vulkan", "wgsl"};

static const MapTarget *target(const char *backend)
{
	const Backend *b = be_find(backend);
	ck_assert_msg(b && b->map, "%s: no mapping target", backend);
	return b->map;
}

static Kernels *lowered(Graph *g, const char *sched, Schedule *s)
{
	Diag d = {0};
	ck_assert_msg(ir_parse_schedule(g, sched, strlen(sched), "test.sched", &d) == 0, "%s", d.msg);
	ck_assert_msg(sched_build(g, s, &d) == 0, "%s", d.msg);
	Kernels *k = kir_lower(g, s, NULL, &d);
	ck_assert_msg(k != NULL, "%s", d.msg);
	ck_assert_int_eq(k->nk, 2);
	return k;
}

/* How many statements of the program have role r in plan p. */
static int roles(const Kernels *k, const MapKernel *p, int r)
{
	int n = 0;
	for (int32_t s = 1; s < k->ns; s++)
		n += p->srole[s] == r;
	return n;
}

/* How many locals have sharing sh in plan p. */
static int shared_as(const Kernels *k, const MapKernel *p, int sh)
{
	int n = 0;
	for (int32_t v = 0; v < k->nvars; v++)
		n += p->vshare[v] == sh;
	return n;
}

/* Without a schedule nothing is distributed: an item per invocation everywhere, in the
 * target's own group of items. */
START_TEST(row_reduction_serial)
{
	Graph *g = tu_parse(graph_src);
	Schedule s;
	Kernels *k = lowered(g, "", &s);
	static const struct { const char *b; int wg; } want[] = {
		{"cuda", 128}, {"opencl", 1}, {"vulkan", 64}, {"wgsl", 64},
	};
	for (size_t i = 0; i < ARRAY_LEN(want); i++) {
		const MapKernel *p = &map_plan(k, target(want[i].b))->k[0];
		ck_assert_msg(p->mode == MAP_ITEM, "%s: mode %d", want[i].b, p->mode);
		ck_assert_int_eq(p->wg, want[i].wg);
		ck_assert_int_eq(roles(k, p, MAP_S_NONE), k->ns - 1);
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
	/* cuda: the chunk loop and its tail recognised, partial s on thread s, 32 threads */
	const MapKernel *p = &map_plan(k, target("cuda"))->k[0];
	ck_assert(p->mode == MAP_GROUP);
	ck_assert_int_eq(p->wg, 32);
	ck_assert_int_eq(p->split, 8);
	ck_assert_int_eq(roles(k, p, MAP_S_SPLIT), 1);
	ck_assert_int_eq(roles(k, p, MAP_S_SPLIT_TAIL), 1);
	for (int32_t st = 1; st < k->ns; st++)
		if (p->srole[st] == MAP_S_SPLIT)
			ck_assert_int_eq(p->srole[k->s[st].next], MAP_S_SPLIT_TAIL);
	ck_assert_int_ge(shared_as(k, p, MAP_V_SHARED), 1);
	ck_assert_int_gt(p->shared_bytes, 0);
	/* opencl: the chunk loop swapped inside the partial loop, 8 lanes */
	p = &map_plan(k, target("opencl"))->k[0];
	ck_assert(p->mode == MAP_GROUP);
	ck_assert_int_eq(p->wg, 8);
	ck_assert_int_eq(roles(k, p, MAP_S_SWAP), 1);
	ck_assert_int_ge(roles(k, p, MAP_S_NEST), 1);
	/* vulkan: the partials merged through shared memory, a group of whole subgroups */
	p = &map_plan(k, target("vulkan"))->k[0];
	ck_assert(p->mode == MAP_GROUP);
	ck_assert_int_eq(p->wg, 32);
	ck_assert_int_ge(shared_as(k, p, MAP_V_MERGE), 1);
	ck_assert_int_ge(p->nslots, 1);
	ck_assert_int_eq(p->vplace[p->slotvar[0]], MAP_P_SHARED);
	ck_assert(p->i32);
	/* wgsl: a partial per lane, 8 lanes, its partials private */
	p = &map_plan(k, target("wgsl"))->k[0];
	ck_assert(p->mode == MAP_LANES);
	ck_assert_int_eq(p->wg, 8);
	ck_assert_int_ge(p->lane_arr, 0);
	ck_assert_int_eq(k->vars[p->lane_arr].n, 8);
	ck_assert_int_ge(roles(k, p, MAP_S_LANE), 1);
	ck_assert_int_eq(p->groups, 8);
	kir_free(k);
	sched_free(&s);
	ir_free(g);
}
END_TEST

/* A tiled matrix product: the tile's 4 x 8 points dealt to a work-group as one collapsed
 * nest (vulkan keeps the hoisted accumulators by parts), and the bindings wgsl plans. */
START_TEST(tiled_matmul)
{
	Graph *g = tu_parse(graph_src);
	Schedule s;
	Kernels *k = lowered(g, "tile y : m=4, n=8", &s);
	for (size_t i = 0; i < ARRAY_LEN(gpus); i++) {
		const MapKernel *p = &map_plan(k, target(gpus[i]))->k[1];
		ck_assert_msg(p->mode == MAP_GROUP, "%s: mode %d", gpus[i], p->mode);
		ck_assert_msg(p->wg == 32, "%s: wg %d", gpus[i], p->wg);
		ck_assert_int_eq(p->groups, (32 / 4) * (32 / 8));
		int depth = 0;
		for (int32_t st = 1; st < k->ns; st++)
			if (p->srole[st] == MAP_S_NEST && p->sdepth[st] > depth)
				depth = p->sdepth[st];
		ck_assert_msg(depth == 2, "%s: nest depth %d", gpus[i], depth);
	}
	ck_assert_int_ge(shared_as(k, &map_plan(k, target("vulkan"))->k[1], MAP_V_PART), 1);
	const MapKernel *w = &map_plan(k, target("wgsl"))->k[1];
	int loaded = 0, stored = 0;
	for (int b = 0; b < k->nbufs; b++) {
		loaded += (w->buse[b] & 1) != 0;
		stored += (w->buse[b] & 2) != 0;
	}
	ck_assert_int_eq(loaded, 2);   /* a and b */
	ck_assert_int_eq(stored, 1);   /* y */
	kir_free(k);
	sched_free(&s);
	ir_free(g);
}
END_TEST

/* One record per program and target: asked again, the same plan; another target, another. */
START_TEST(recorded_once)
{
	Graph *g = tu_parse(graph_src);
	Schedule s;
	Kernels *k = lowered(g, "split s : c=8", &s);
	const MapPlan *a = map_plan(k, target("vulkan")), *b = map_plan(k, target("wgsl"));
	ck_assert_ptr_eq(map_plan(k, target("vulkan")), a);
	ck_assert_ptr_eq(map_plan(k, target("wgsl")), b);
	ck_assert_ptr_ne(a, b);
	ck_assert_ptr_eq(a->t, target("vulkan"));
	ck_assert_int_eq(a->nk, k->nk);
	ck_assert_ptr_null(be_find("c")->map);
	kir_free(k);
	sched_free(&s);
	ir_free(g);
}
END_TEST

/* The limits are data: the same rules under a lower work-group limit give a smaller group,
 * and a shared-memory limit of zero sends cuda's shared locals to block scratch. */
START_TEST(limits_decide)
{
	Graph *g = tu_parse(graph_src);
	Schedule s;
	Kernels *k = lowered(g, "tile y : m=16, n=16", &s);
	MapTarget low[ARRAY_LEN(gpus)];   /* one each: a plan is recorded per target */
	for (size_t i = 0; i < ARRAY_LEN(gpus); i++) {
		low[i] = *target(gpus[i]);
		low[i].wg_max = 64;
		ck_assert_msg(map_plan(k, target(gpus[i]))->k[1].wg == 256, "%s", gpus[i]);
		ck_assert_msg(map_plan(k, &low[i])->k[1].wg == 64, "%s under wg_max 64", gpus[i]);
	}
	kir_free(k);
	sched_free(&s);
	k = lowered(g, "split s : c=8", &s);
	MapTarget t = *target("cuda");
	t.shared_max = 0;
	const MapKernel *p = &map_plan(k, &t)->k[0];
	ck_assert_int_eq(p->shared_bytes, 0);
	ck_assert_int_gt(p->scratch_group, 0);
	for (int32_t v = 0; v < k->nvars; v++)
		if (p->vshare[v] == MAP_V_SHARED)
			ck_assert_int_eq(p->vplace[v], MAP_P_SCRATCH_GROUP);
	kir_free(k);
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
	tcase_add_test(tc, limits_decide);
	suite_add_tcase(s, tc);
	return tu_run(s);
}
