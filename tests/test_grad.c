/* tests/test_grad.c: derived gradients (compiler/sched/grad.c) and the directional check of a
 * derivation (interp/gradcheck.c): every example's gradient parses back, agrees with the
 * oracle's exact directional derivatives for 20 (cotangent, direction) pairs and passes
 * `assay check` on the c backend; every op's derivative column, every view and every
 * reduction rule is checked on a graph of its own; each seeded derivation fault is caught.
 * Examples run at reduced sizes (the same graphs, smaller extents) to keep the suite short;
 * the full sizes are `assay grad --verify examples/X.tg` (docs/grad.md). */
#include "testutil.h"
#include <dirent.h>
#include <sys/wait.h>
#include <unistd.h>
#include "../interp/interp.h"
#include "../fuzz/fuzz.h"

static const char *prog(void)
{
	const char *p = getenv("ASSAY");
	return p && *p ? p : "./assay";
}

/* Each example with the size overrides the suite uses. */
static const struct {
	const char *file;
	const char *sizes;   /* "N=V N=V ..." */
} examples[] = {
	{"examples/attention.tg", "T=12 H=4 G=2 D=8"},
	{"examples/batched_matmul.tg", "B=2 M=8 K=16 N=8"},
	{"examples/conv1d.tg", "CI=6 CO=5 L=12 L2=6"},
	{"examples/embedding.tg", "T=12 V=40 D=8 P=24"},
	{"examples/layernorm.tg", "T=4 C=48"},
	{"examples/matmul.tg", "M=4 K=16 N=12"},
	{"examples/moe_topk.tg", "T=4 C=16 F=24"},
	{"examples/paged_kv_decode.tg", "B=2 H=4 G=2 D=16 BS=4 NB=3 L=12 NP=8"},
	{"examples/rmsnorm.tg", "T=4 C=64"},
	{"examples/rope.tg", "T=8 H=2 KVH=1 D=16"},
	{"examples/softmax.tg", "R=3 V=37"},
	{"examples/swiglu_mlp.tg", "T=4 C=16 F=24"},
};

static Graph *load_sized(const char *file, const char *sizes)
{
	SizeOverride ov[16];
	char buf[256], *save = NULL;
	int n = 0;
	snprintf(buf, sizeof buf, "%s", sizes);
	for (char *t = strtok_r(buf, " ", &save); t; t = strtok_r(NULL, " ", &save)) {
		char *eq = strchr(t, '=');
		*eq = 0;
		ov[n].name = t;
		ov[n++].value = atoll(eq + 1);
	}
	Diag d = {0};
	Graph *g = ir_parse_file(file, ov, n, &d);
	ck_assert_msg(g, "%s: %s", file, d.msg);
	return g;
}

static Graph *parse_text(const char *src, Diag *d)
{
	return ir_parse(src, strlen(src), "test.tg", NULL, 0, d);
}

static Graph *derive(const Graph *g, unsigned faults)
{
	GradOpts o = {.faults = faults};
	Diag d = {0};
	Graph *gg = gr_derive(g, &o, &d);
	ck_assert_msg(gg, "%s", d.msg);
	return gg;
}

/* mp_grad_verify with `pairs` pairs: r filled, the call itself must succeed. */
static void verify(const Graph *g, unsigned faults, int pairs, MpGradResult *r)
{
	GradOpts go = {.faults = faults};
	MpGradOpts o = {.pairs = pairs, .seed = 7};
	Diag d = {0};
	ck_assert_msg(mp_grad_verify(g, &go, &o, r, &d) == 0, "%s", d.msg);
}

/* ------------------------------------------------------------ examples */

/* The gradient is a checked graph that prints back to itself, with the spec's names. */
START_TEST(example_derives)
{
	Graph *g = load_sized(examples[_i].file, examples[_i].sizes);
	Graph *gg = derive(g, 0);
	char *t1 = ir_print(gg);
	Diag d = {0};
	Graph *back = parse_text(t1, &d);
	ck_assert_msg(back, "%s\n%s", d.msg, t1);
	char *t2 = ir_print(back);
	ck_assert_str_eq(t1, t2);
	int want = 0;
	for (int k = 0; k < ir_ninputs(g); k++) {
		const Tensor *a = &g->tensors[ir_input_tensor(g, k)];
		ck_assert_int_ge(ir_find_tensor(gg, a->name), 0);
		if (a->dtype == DT_I32)
			continue;
		char nm[64];
		snprintf(nm, sizeof nm, "grad_%s", a->name);
		const Output *o = &gg->outputs[want++];
		ck_assert_str_eq(gg->tensors[o->tensor].name, nm);
		ck_assert_int_eq(o->dtype, a->dtype);
	}
	ck_assert_int_eq(gg->noutputs, want);
	for (int k = 0; k < g->noutputs; k++) {
		if (g->outputs[k].dtype == DT_I32)
			continue;
		char nm[64];
		snprintf(nm, sizeof nm, "d_%s", g->tensors[g->outputs[k].tensor].name);
		int t = ir_find_tensor(gg, nm);
		ck_assert_msg(t >= 0 && gg->tensors[t].kind == TK_INPUT, "no cotangent %s", nm);
		Dtype od = g->outputs[k].dtype;
		ck_assert_int_eq(gg->tensors[t].dtype, od == DT_F16 || od == DT_BF16 ? DT_F32 : od);
	}
	free(t1);
	free(t2);
	ir_free(back);
	ir_free(gg);
	ir_free(g);
}
END_TEST

START_TEST(example_directional)
{
	Graph *g = load_sized(examples[_i].file, examples[_i].sizes);
	MpGradResult r;
	verify(g, 0, 20, &r);
	ck_assert_msg(r.ok, "%s: %s", examples[_i].file, r.what);
	ck_assert_int_eq(r.pairs_done, 20);
	ir_free(g);
}
END_TEST

/* Runs `ASSAY ARGS` through /bin/sh; its exit status. */
static int run_assay(const char *args)
{
	char cmd[2048];
	snprintf(cmd, sizeof cmd, "%s %s >/dev/null 2>&1", prog(), args);
	int st = system(cmd);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static char *tmpdir(void)
{
	char *t = strdup("/tmp/assay-grad-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(t));
	return t;
}

/* The gradient graph is a graph like any other: `assay check` on the c backend passes. */
START_TEST(example_checks_on_c)
{
	Graph *g = load_sized(examples[_i].file, examples[_i].sizes);
	Graph *gg = derive(g, 0);
	char *dir = tmpdir(), path[512], args[1024];
	snprintf(path, sizeof path, "%s/g.tg", dir);
	char *text = ir_print(gg);
	FILE *f = fopen(path, "w");
	fputs(text, f);
	fclose(f);
	snprintf(args, sizeof args, "check %s --backends c -o %s/out", path, dir);
	ck_assert_msg(run_assay(args) == 0, "%s: assay check of the gradient failed:\n%s",
		      examples[_i].file, text);
	free(text);
	free(dir);
	ir_free(gg);
	ir_free(g);
}
END_TEST

/* ------------------------------------------------------------ rules */

/* Every op of ops.def with a derivative, on a graph of its own (operand 0 kept positive
 * for the ops with a restricted domain). */
START_TEST(every_op_derivative)
{
	Op op = (Op)_i;
	const OpInfo *oi = op_info(op);
	if ((oi->flags & (OPF_BOOL_OUT | OPF_INT_ONLY)) || op == OP_SELECT)
		return;
	const char *arg[3] = {"(x[i] * x[i] + 0.5)", "y[i]", "z[i]"};
	char body[256];
	if (oi->flags & OPF_INFIX)
		snprintf(body, sizeof body, "%s %s %s", arg[0], oi->spelling,
			 op == OP_DIV ? "(y[i] * y[i] + 0.25)" : arg[1]);
	else if (oi->flags & OPF_PREFIX)
		snprintf(body, sizeof body, "%s%s", oi->spelling, arg[1]);
	else if (oi->arity == 1)
		snprintf(body, sizeof body, "%s(%s) * y[i]", oi->spelling, arg[0]);
	else if (oi->arity == 2)
		snprintf(body, sizeof body, "%s(%s, %s)", oi->spelling, arg[0], arg[1]);
	else
		snprintf(body, sizeof body, "%s(%s, %s, %s)", oi->spelling, arg[0], arg[1], arg[2]);
	char src[1024];
	snprintf(src, sizeof src, "size N = 6\ninput x : f64[N]\ninput y : f64[N]\n"
		 "input z : f64[N]\nr[i:N] = %s + 0 * z[i]\noutput r : f64\n", body);
	Diag d = {0};
	Graph *g = parse_text(src, &d);
	ck_assert_msg(g, "%s: %s", src, d.msg);
	MpGradResult r;
	verify(g, 0, 4, &r);
	ck_assert_msg(r.ok, "%s: %s", oi->name, r.what);
	ir_free(g);
}
END_TEST

/* Views and reductions: each graph's gradient agrees with the exact derivative. */
static const char *const rule_graphs[] = {
	/* transposed */
	"size M = 3, N = 5\ninput x : f32[M, N]\ny[j:N, i:M] = x[i, j] * x[i, j]\noutput y : f32\n",
	/* strided, with an offset */
	"size N = 4, M = 9\ninput x : f32[M]\ny[i:N] = x[2 * i + 1] * 3\noutput y : f32\n",
	/* reshaped */
	"size R = 12, C = 4\ninput x : f32[3, C]\ny[r:R] = exp(x[r / C, r % C])\noutput y : f32\n",
	/* windowed, padded */
	"size L = 7, K = 3\ninput x : f32[L]\ninput w : f32[K]\n"
	"y[i:L] = sum(k:K) x[i + k - 1] ?? 0 * w[k]\noutput y : f32\n",
	/* a floor division beside the variable it divides: x[i, i, i / 3] has a nonzero
	 * partial only where the remainder of i = 3q + s lies in 0..2 (found by fuzz --grad:
	 * the remainder's range was missing from the guard, grad_x0[0, 0, 1] was d_d0[0]) */
	"size N = 2\ninput x0 : f32[N, N, N]\nd0[i:N] = x0[i, i, i / 3] * 2\noutput d0 : f32\n",
	/* a floor division inside one (a view written otherwise by fuzz/meta.c: the guard's
	 * (4 * (r / 2) + 1) % 4 has no integer operand in a value context) */
	"size K = 3\ninput x0 : f32[4]\nd1[] = max(r:7, s:K) x0[(4 * (r / 2) + 1) / 4]\n"
	"d2[i:7] = x0[(4 * (i / 2) + 1) / 4] * x0[i % 4]\noutput d1 : f32, d2 : f32\n",
	/* an integer cast into a real: the check's graph keeps it (stripped, the integer
	 * product overflows 32 bits) */
	"size N = 4\ninput x : f32[N]\ninput k : i32[N]\np[] = prod(r:N) f64(abs(k[r]) + 40000)\n"
	"y[i:N] = x[i] * p[]\noutput y : f32\n",
	/* a maximum of a sum: the tie count's comparison and the mask's can be rounded
	 * otherwise in kernels (1 + x in f64 against the f32 maximum); the share is
	 * d / max(count, 1), never d / 0 (the kernels' check is in fuzz_grad_control) */
	"input x0 : f32[2]\nd1[] = max(s: 0..1) 1 + x0[1]\noutput d1 : f32\n",
	/* a diagonal: one variable twice */
	"size N = 5\ninput x : f32[N, N]\ny[i:N] = x[i, i] * x[i, i]\noutput y : f32\n",
	/* a broadcast and a triangular range */
	"size N = 6\ninput x : f32[N]\ny[i:N, j:N] = sum(k: 0..i + 1) x[k] * x[j]\noutput y : f32\n",
	/* a gather with repeated indices (the scatter-add) */
	"size T = 9, V = 3, D = 2\ninput tok : i32[T]\ninput e : f32[V, D]\n"
	"y[t:T, d:D] = e[tok[t], d] * e[tok[t], d]\noutput y : f32\n",
	/* max, min and logsumexp reductions */
	"size R = 3, C = 8\ninput x : f32[R, C]\nm[r:R] = max(c:C) x[r, c]\n"
	"n[r:R] = min(c:C) x[r, c]\nl[r:R] = logsumexp(c:C) x[r, c]\n"
	"y[r:R] = m[r] * n[r] + l[r]\noutput y : f32\n",
	/* prod, with a zero among the terms possible and a triangular range */
	"size R = 3, N = 5\ninput x : f32[R, N]\np[r:R] = prod(i: 0..r + 2) x[r, i]\n"
	"q[r:R] = prod(i:N, j: i..N) x[r, i] * x[r, j] + 1\noutput p : f32, q : f32\n",
	/* topk values */
	"size R = 2, C = 7, K = 3\ninput x : f32[R, C]\n"
	"v[r:R, k:K], ix[r:R, k:K] = topk(c:C) x[r, c] * x[r, c]\noutput v : f32, ix : i32\n",
	/* a select on data, max and abs of two values */
	"size N = 8\ninput x : f32[N]\ninput y : f32[N]\n"
	"z[i:N] = x[i] > y[i] ? max(x[i], 2 * y[i]) : abs(x[i] - y[i]) * min(x[i], y[i])\n"
	"output z : f32\n",
	/* an output read by a later definition, two outputs */
	"size N = 4\ninput x : f32[N]\na[i:N] = x[i] * x[i]\nb[] = sum(i:N) a[i]\n"
	"output a : f32, b : f32\n",
	/* a 16-bit graph with a cast inside (cast: straight through) */
	"size N = 5\ninput x : bf16[N]\ny[i:N] = bf16(x[i] * 3) * x[i]\noutput y : bf16\n",
};

START_TEST(rule_directional)
{
	Diag d = {0};
	Graph *g = parse_text(rule_graphs[_i], &d);
	ck_assert_msg(g, "%s", d.msg);
	MpGradResult r;
	verify(g, 0, 5, &r);
	ck_assert_msg(r.ok, "%s: %s", rule_graphs[_i], r.what);
	ir_free(g);
}
END_TEST

/* Ties of max share the cotangent equally: max(c:2) x[r] has terms that always tie, and its
 * gradient is exactly d_y. */
START_TEST(max_ties_share)
{
	Diag d = {0};
	Graph *g = parse_text("size R = 4\ninput x : f32[R]\ny[r:R] = max(c:3) x[r]\noutput y : f32\n", &d);
	ck_assert_msg(g, "%s", d.msg);
	Graph *gg = derive(g, 0);
	HostTensor in[2];
	InputSpec spec = {DIST_NORMAL, 3, false};
	ck_assert_int_eq(mp_make_inputs(gg, &spec, NULL, in, &d), 0);
	HostTensor out[1];
	MpOpts o = {0};
	ck_assert_msg(mp_exact(gg, in, &o, out, NULL, NULL, &d) == 0, "%s", d.msg);
	for (int k = 0; k < 4; k++)
		ck_assert_double_eq(ht_get(&out[0], k), ht_get(&in[1], k));
	ht_free(&out[0]);
	ht_free(&in[0]);
	ht_free(&in[1]);
	ir_free(gg);
	ir_free(g);
}
END_TEST

/* ------------------------------------------------------------ faults */

static const struct {
	const char *fault;
	const char *graph;    /* a file, or the text of a graph */
	const char *first;    /* how the failure must start */
} faults[] = {
	{"max-both", "size R = 4\ninput x : f32[R]\ny[r:R] = max(c:2) x[r]\noutput y : f32\n", "grad_x["},
	{"bcast-nosum", "examples/matmul.tg", "grad_x["},
	{"view-transpose", "examples/matmul.tg", "grad_w["},
	{"scatter-one", "examples/embedding.tg", "grad_wte["},
	{"div-denom", "examples/softmax.tg", "grad_x["},
};

START_TEST(fault_is_caught)
{
	Diag d = {0};
	Graph *g = strchr(faults[_i].graph, '\n') ? parse_text(faults[_i].graph, &d) :
		   ir_parse_file(faults[_i].graph, NULL, 0, &d);
	ck_assert_msg(g, "%s", d.msg);
	unsigned f = gr_fault_parse(faults[_i].fault);
	ck_assert_uint_ne(f, 0);
	MpGradResult r;
	verify(g, 0, 2, &r);
	ck_assert_msg(r.ok, "%s without the fault: %s", faults[_i].graph, r.what);
	verify(g, f, 3, &r);
	ck_assert_msg(!r.ok, "fault %s not caught on %s", faults[_i].fault, faults[_i].graph);
	ck_assert_msg(strncmp(r.what, faults[_i].first, strlen(faults[_i].first)) == 0,
		      "%s: %s", faults[_i].fault, r.what);
	ck_assert_ptr_nonnull(strstr(r.what, "but the exact partial derivative is"));
	ir_free(g);
}
END_TEST

/* The element named is the first wrong one: a graph whose gradient is wrong (under the
 * fault) only from element 3 on. */
START_TEST(first_wrong_element)
{
	Diag d = {0};
	Graph *g = parse_text("size N = 6\ninput x : f32[N]\n"
			      "y[i:N] = max(c:2) (i < 3 ? x[i] * (1 + c) : x[i])\noutput y : f32\n", &d);
	ck_assert_msg(g, "%s", d.msg);
	MpGradResult r;
	verify(g, GF_MAX_BOTH, 2, &r);
	ck_assert(!r.ok);
	ck_assert_int_eq(r.element, 3);
	ck_assert_msg(strncmp(r.what, "grad_x[3] = ", 12) == 0, "%s", r.what);
	ir_free(g);
}
END_TEST

/* The fuzzer's graphs (every monoid, view, op and special value it makes): each derives or
 * is refused with a user error (code 2), and no derived gradient disagrees with the exact
 * derivative where both are finite. A gradient that is NaN where the derivative is finite
 * (the chain rule through an infinite intermediate, docs/grad.md) is counted, not failed;
 * inputs the directional graph cannot be evaluated on (an index the fuzzer's own input
 * generator would have drawn otherwise) are skipped. */
START_TEST(generated_graphs)
{
	GenOpts o;
	fz_gen_defaults(&o);
	int derived = 0, verified = 0;
	for (int c = 0; c < 30; c++) {
		Diag d = {0};
		Graph *g = fz_gen(&o, 11, (uint64_t)c, &d);
		if (!g) {
			diag_clear(&d);
			continue;
		}
		Graph *gg = gr_derive(g, NULL, &d);
		if (!gg) {
			ck_assert_msg(d.code == 2, "case %d: %s", c, d.msg);
			diag_clear(&d);
			ir_free(g);
			continue;
		}
		derived++;
		MpGradOpts mo = {.pairs = 2, .seed = 3};
		MpGradResult r;
		if (mp_grad_verify(g, NULL, &mo, &r, &d) == 0) {
			char *t = ir_print(g);
			ck_assert_msg(r.ok || r.nonfinite, "case %d: %s\n%s", c, r.what, t);
			free(t);
			verified += r.ok;
		}
		diag_clear(&d);
		ir_free(gg);
		ir_free(g);
	}
	ck_assert_int_ge(derived, 20);
	ck_assert_int_ge(verified, 15);
}
END_TEST

/* Every generated graph whose gradient is supported derives to a graph that parses back
 * (code 3 is the derivation's own bug). 2000 graphs: before the guard's and the paddings'
 * reads were padded and definitions left unread by the simplification dropped (grad.c
 * pad_reads, finish), 33 of these failed. */
START_TEST(generated_graphs_derive)
{
	GenOpts o;
	fz_gen_defaults(&o);
	int derived = 0;
	for (int s = 0; s < 40; s++)
		for (int c = 0; c < 50; c++) {
			Diag d = {0};
			Graph *g = fz_gen(&o, (uint64_t)s, (uint64_t)c, &d);
			if (!g) {
				diag_clear(&d);
				continue;
			}
			Graph *gg = gr_derive(g, NULL, &d);
			if (!gg) {
				ck_assert_msg(d.code == 2, "seed %d case %d: %s", s, c, d.msg);
			} else {
				derived++;
				ir_free(gg);
			}
			diag_clear(&d);
			ir_free(g);
		}
	ck_assert_int_ge(derived, 1000);
}
END_TEST

/* ------------------------------------------------------------ errors */

START_TEST(unsupported_and_bad_requests)
{
	Diag d = {0};
	Graph *g = parse_text("size N = 4\ninput x : f32[N]\ninput y : f32[N]\n"
			      "p[i:N] = x[i + 1] ?? y[i]\noutput p : f32\n", &d);
	ck_assert_msg(g, "%s", d.msg);
	ck_assert_ptr_null(gr_derive(g, NULL, &d));
	ck_assert_int_eq(d.code, 2);
	ck_assert_ptr_nonnull(strstr(d.msg, "padding default"));
	diag_clear(&d);
	ir_free(g);

	g = ir_parse_file("examples/embedding.tg", NULL, 0, &d);
	const char *bad[] = {"nope"}, *idx[] = {"tok"};
	GradOpts o = {.wrt = bad, .nwrt = 1};
	ck_assert_ptr_null(gr_derive(g, &o, &d));
	ck_assert_int_eq(d.code, 2);
	ck_assert_ptr_nonnull(strstr(d.msg, "no such input"));
	diag_clear(&d);
	o.wrt = idx;
	ck_assert_ptr_null(gr_derive(g, &o, &d));
	ck_assert_int_eq(d.code, 2);
	ck_assert_ptr_nonnull(strstr(d.msg, "i32"));
	diag_clear(&d);
	const char *one[] = {"wpe"};
	o.wrt = one;
	Graph *gg = gr_derive(g, &o, &d);
	ck_assert_msg(gg, "%s", d.msg);
	ck_assert_int_eq(gg->noutputs, 1);
	ck_assert_str_eq(gg->tensors[gg->outputs[0].tensor].name, "grad_wpe");
	ir_free(gg);
	ir_free(g);

	g = parse_text("size N = 4\ninput x : f32[N]\ninput d_y : f32[N]\n"
		       "y[i:N] = x[i] * d_y[i]\noutput y : f32\n", &d);
	ck_assert_msg(g, "%s", d.msg);
	ck_assert_ptr_null(gr_derive(g, NULL, &d));
	ck_assert_int_eq(d.code, 2);
	ck_assert_ptr_nonnull(strstr(d.msg, "d_y"));
	diag_clear(&d);
	ir_free(g);
}
END_TEST

START_TEST(command_line)
{
	char *dir = tmpdir(), args[1024];
	snprintf(args, sizeof args, "grad examples/matmul.tg -o %s/g.tg", dir);
	ck_assert_int_eq(run_assay(args), 0);
	snprintf(args, sizeof args, "%s/g.tg", dir);
	Diag d = {0};
	Graph *g = ir_parse_file(args, NULL, 0, &d);
	ck_assert_msg(g, "%s", d.msg);
	ir_free(g);
	ck_assert_int_eq(run_assay("grad --verify examples/softmax.tg --size V=9 --pairs 2"), 0);
	ck_assert_int_eq(run_assay("grad --verify examples/softmax.tg --size V=9 --pairs 2 "
				   "--fault div-denom"), 1);
	ck_assert_int_eq(run_assay("grad examples/matmul.tg --wrt q"), 2);
	ck_assert_int_eq(run_assay("grad examples/matmul.tg --fault nope"), 2);
	ck_assert_int_eq(run_assay("grad"), 2);
	free(dir);
}
END_TEST

/* `assay fuzz --grad`: a clean campaign judges each case's derivation (records of the
 * "derivation" pseudo-backend) and its gradient's kernels, and fails nothing; with a seeded
 * derivation fault it stops at a derivation failure the fault is implicated in, reduced,
 * whose repro header names the command that shows it. */
START_TEST(fuzz_grad)
{
	char *dir = tmpdir(), args[1024], path[600];
	snprintf(args, sizeof args, "fuzz --grad --cases 6 --backends c --seed 5 --quiet -o %s/clean",
		 dir);
	ck_assert_int_eq(run_assay(args), 0);
	snprintf(path, sizeof path, "%s/clean/results.jsonl", dir);
	FILE *f = fopen(path, "r");
	ck_assert_ptr_nonnull(f);
	char line[65536];
	int deriv = 0, kernels = 0, derived = 0;
	while (fgets(line, sizeof line, f)) {
		deriv += strstr(line, "\"backend\":\"derivation\"") != NULL &&
			 !strstr(line, "\"variant\":");   /* the case's own, not its variants' */
		kernels += strstr(line, "\"backend\":\"c\"") != NULL &&
			   strstr(line, "\"output\":\"grad_") != NULL;
		derived += strstr(line, "\"grad\":\"derived\"") != NULL;
	}
	fclose(f);
	ck_assert_int_gt(derived, 0);
	ck_assert_int_eq(deriv, derived);
	ck_assert_int_gt(kernels, 0);
	snprintf(args, sizeof args, "fuzz --resume %s/clean --grad-pairs 3 --cases 7 --quiet", dir);
	ck_assert_int_eq(run_assay(args), 2);   /* a resume keeps the campaign's --grad */

	snprintf(args, sizeof args, "fuzz --grad --cases 40 --backends c --seed 5 --until-failure "
		 "--quiet -o %s/bad", dir);
	char cmd[1200];
	setenv("ASSAY_FAULT", "grad_bcast_nosum", 1);
	int rc = run_assay(args);
	unsetenv("ASSAY_FAULT");
	ck_assert_int_eq(rc, 1);
	snprintf(path, sizeof path, "%s/bad/failures", dir);
	DIR *dd = opendir(path);
	ck_assert_ptr_nonnull(dd);
	struct dirent *e;
	char repro[900] = "";
	while ((e = readdir(dd)))
		if (strncmp(e->d_name, "derivation.grad-mismatch.", 25) == 0 &&
		    strstr(e->d_name, ".grad_bcast_nosum"))
			snprintf(repro, sizeof repro, "%s/%s/repro.tg", path, e->d_name);
	closedir(dd);
	ck_assert_msg(*repro, "no derivation failure with grad_bcast_nosum implicated");
	f = fopen(repro, "r");
	ck_assert_ptr_nonnull(f);
	char text[8192];
	size_t n = fread(text, 1, sizeof text - 1, f);
	text[n] = 0;
	fclose(f);
	ck_assert_ptr_nonnull(strstr(text, "# reproduce: assay grad --verify THIS.tg --pairs 2 --seed "));
	ck_assert_ptr_nonnull(strstr(text, "--fault bcast-nosum"));
	/* the repro's own command: wrong with the fault, right without it */
	const char *seed = strstr(text, "--seed ") + 7;
	snprintf(cmd, sizeof cmd, "grad --verify %s --pairs 2 --seed %.*s", repro,
		 (int)strspn(seed, "0123456789"), seed);
	ck_assert_int_eq(run_assay(cmd), 0);
	strcat(cmd, " --fault bcast-nosum");
	ck_assert_int_eq(run_assay(cmd), 1);
	free(dir);
}
END_TEST

/* Found by a clean `assay fuzz --grad` campaign (seed 1, case 30): the gradient of a max
 * divided by a tie count that its kernel computed as 0 (the comparison 1 + x == d1 in f64
 * against the f32 maximum) where the mask's kernel chose the term: -inf against the
 * oracle's finite value on c, opencl and vulkan. */
START_TEST(fuzz_grad_control)
{
	char *dir = tmpdir(), path[600], args[1200];
	snprintf(path, sizeof path, "%s/m.tg", dir);
	FILE *f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs("input x0 : f32[2]\nd1[] = max(s: 0..1) 1 + x0[1]\noutput d1 : f32\n", f);
	fclose(f);
	snprintf(args, sizeof args, "grad %s -o %s/m_grad.tg", path, dir);
	ck_assert_int_eq(run_assay(args), 0);
	snprintf(args, sizeof args, "check %s/m_grad.tg --backends c --seed 5871375178448536121 "
		 "--inputs normal", dir);
	ck_assert_int_eq(run_assay(args), 0);
	free(dir);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("grad");
	TCase *t = tcase_create("grad");
	tcase_set_timeout(t, 600);
	tcase_add_loop_test(t, example_derives, 0, (int)ARRAY_LEN(examples));
	tcase_add_loop_test(t, example_directional, 0, (int)ARRAY_LEN(examples));
	tcase_add_loop_test(t, example_checks_on_c, 0, (int)ARRAY_LEN(examples));
	tcase_add_loop_test(t, every_op_derivative, 0, OP__COUNT);
	tcase_add_loop_test(t, rule_directional, 0, (int)ARRAY_LEN(rule_graphs));
	tcase_add_test(t, max_ties_share);
	tcase_add_loop_test(t, fault_is_caught, 0, (int)ARRAY_LEN(faults));
	tcase_add_test(t, first_wrong_element);
	tcase_add_test(t, generated_graphs);
	tcase_add_test(t, generated_graphs_derive);
	tcase_add_test(t, unsupported_and_bad_requests);
	tcase_add_test(t, command_line);
	tcase_add_test(t, fuzz_grad);
	tcase_add_test(t, fuzz_grad_control);
	suite_add_tcase(s, t);
	return s;
}

int main(void)
{
	return tu_run(suite());
}
