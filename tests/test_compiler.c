/* tests/test_compiler.c: the Check suite of compiler/'s front end: the `.tg` lexer, parser,
 * canonical printer and checker.
 *
 * - round trip: every .tg file in examples/ parses and checks, print(parse(x)) is a fixed point and
 *   re-parses to an ir_graph_equal graph;
 * - golden: tests/parse/golden/X.tg prints exactly as X.expected (written by hand);
 * - errors: tests/parse/errors/X.tg fails with the message its first line names
 *   (`# expect: LINE:COL: error: MESSAGE`, or `# expect: error: MESSAGE` for one without a
 *   position), exit code 2, the source line and a caret;
 * - tables: lexer corner cases, size overrides, schedule files, graph equality, graphs built
 *   in memory;
 * - mutations: a few hundred deterministic mutations of the examples each parse (and then
 *   round-trip) or fail with a message; none may crash (fork mode; `make san` adds ASan).
 */
#include <glob.h>
#include <stdint.h>
#include "../compiler/compiler.h"
#include "testutil.h"

/* ------------------------------------------------------------- helpers */

/* globbed once when the suite is built; the forked tests inherit them */
static int nfiles_golden, nfiles_errors, nfiles_examples;
static char **golden, **errors, **examples;

static char **glob_list(const char *pat, int *n)
{
	glob_t gl;
	*n = 0;
	if (glob(pat, 0, NULL, &gl) != 0)
		return NULL;
	char **v = calloc(gl.gl_pathc + 1, sizeof *v);
	for (size_t k = 0; k < gl.gl_pathc; k++)
		v[k] = strdup(gl.gl_pathv[k]);
	*n = (int)gl.gl_pathc;
	globfree(&gl);
	return v;
}

static Graph *parse_str(const char *src, const char *file, Diag *d)
{
	return ir_parse(src, strlen(src), file, NULL, 0, d);
}

/* print(parse(x)) is a fixed point and re-parses to an equal graph. */
static void assert_round_trip(Graph *g, const char *what)
{
	Diag d = {0};
	char *s1 = ir_print(g);
	Graph *h = parse_str(s1, "reprinted.tg", &d);
	ck_assert_msg(h, "%s: the printed graph does not parse: %s\n%s", what, d.msg, s1);
	char *s2 = ir_print(h);
	ck_assert_msg(strcmp(s1, s2) == 0, "%s: printing is not a fixed point:\n%s----\n%s", what, s1, s2);
	ck_assert_msg(ir_graph_equal(g, h), "%s: the re-parsed graph differs", what);
	ck_assert_msg(ir_check(h, &d) == 0, "%s: re-parsed graph fails ir_check: %s", what, d.msg);
	free(s1);
	free(s2);
	ir_free(h);
}

/* ------------------------------------------------------------ examples */

START_TEST(examples_round_trip)
{
	ck_assert_msg(nfiles_examples >= 1, "no examples/*.tg found (run from the repository root)");
	for (int k = 0; k < nfiles_examples; k++) {
		Diag d = {0};
		Graph *g = ir_parse_file(examples[k], NULL, 0, &d);
		ck_assert_msg(g, "%s does not parse: %s", examples[k], d.msg);
		ck_assert_msg(ir_check(g, &d) == 0, "%s: ir_check fails: %s", examples[k], d.msg);
		assert_round_trip(g, examples[k]);
		ir_free(g);
	}
}
END_TEST

/* -------------------------------------------------------------- golden */

START_TEST(golden_file)
{
	ck_assert_msg(nfiles_golden >= 4, "expected the golden files under tests/parse/golden");
	const char *path = golden[_i];
	char exp_path[512];
	snprintf(exp_path, sizeof exp_path, "%.*s.expected", (int)(strlen(path) - 3), path);
	char *want = tu_read_file(exp_path, NULL);
	ck_assert_msg(want, "%s: missing %s", path, exp_path);
	Diag d = {0};
	Graph *g = ir_parse_file(path, NULL, 0, &d);
	ck_assert_msg(g, "%s does not parse: %s", path, d.msg);
	char *got = ir_print(g);
	ck_assert_msg(strcmp(got, want) == 0, "%s: printed\n%s----\nexpected\n%s", path, got, want);
	assert_round_trip(g, path);
	free(got);
	free(want);
	ir_free(g);
}
END_TEST

/* -------------------------------------------------------------- errors */

START_TEST(error_file)
{
	ck_assert_msg(nfiles_errors >= 40, "expected the negative tests under tests/parse/errors");
	const char *path = errors[_i];
	char *src = tu_read_file(path, NULL);
	ck_assert(src);
	const char *tag = "# expect: ";
	ck_assert_msg(strncmp(src, tag, strlen(tag)) == 0, "%s: line 1 must be '# expect: ...'", path);
	const char *e = src + strlen(tag);
	size_t elen = strcspn(e, "\n");
	char want[600];   /* "file:LINE:COL: error: ..." or, without a position, "file: error: ..." */
	snprintf(want, sizeof want, "%s:%s%.*s", path, *e >= '0' && *e <= '9' ? "" : " ", (int)elen, e);
	Diag d = {0};
	Graph *g = ir_parse_file(path, NULL, 0, &d);
	ck_assert_msg(!g, "%s: parsed, but should fail with: %s", path, want);
	ck_assert_msg(d.msg && d.code == 2, "%s: no message or exit code %d", path, d.code);
	size_t l1 = strcspn(d.msg, "\n");
	ck_assert_msg(strlen(want) == l1 && strncmp(d.msg, want, l1) == 0,
		      "%s:\n got: %.*s\nwant: %s", path, (int)l1, d.msg, want);
	/* a position gives the source line and a caret under the column */
	int line = 0, col = 0;
	if (sscanf(e, "%d:%d:", &line, &col) == 2) {
		const char *l2 = d.msg + l1 + 1, *l3 = l2 + strcspn(l2, "\n") + 1;
		ck_assert_msg(*l2 && *l3, "%s: no source line and caret:\n%s", path, d.msg);
		size_t caret = strcspn(l3, "^");
		ck_assert_msg(caret == (size_t)col - 1, "%s: caret at %zu, not column %d:\n%s", path,
			      caret + 1, col, d.msg);
	}
	diag_clear(&d);
	free(src);
}
END_TEST

/* -------------------------------------------------------------- tables */

/* Small graphs and their canonical text: lexer and printer corner cases. */
static const struct { const char *src, *want; } canon[] = {
	/* hex floats, exponents, inf/nan, `..` after an integer, CRLF, comments */
	{"size N = 4 # four\r\ninput x : f32[N]\r\ny[i:N] = x[i] * 0x1.8p-3 + .5 + 1.5e-3 + 2E+2\r\n"
	 "output y\r\n",
	 "size N = 4\n\ninput x : f32[N]\ny[i:N] = x[i] * 0x1.8p-3 + .5 + 1.5e-3 + 2E+2\n\noutput y : f32\n"},
	{"input x : f32[8]\ny[i:8] = max(x[i], -inf) + (x[i] != x[i] ? nan : 0)\noutput y : f64\n",
	 "input x : f32[8]\ny[i:8] = max(x[i], -inf) + (x[i] != x[i] ? nan : 0)\n\noutput y : f64\n"},
	/* continuation after an operator, `,`, `?`, `:` and inside brackets */
	{"input x : f32[8]\ny[i:8] = x[i] +\n\n  # a comment\n  1\nz[\n i:8] = y[i] > 0 ?\n y[i] :\n -y[i]\n"
	 "output y,\n z\n",
	 "input x : f32[8]\ny[i:8] = x[i] + 1\nz[i:8] = y[i] > 0 ? y[i] : -y[i]\n\noutput y : f32, z : f32\n"},
	/* unary minus: literals fold, -(5) stays a negation, --x keeps its parentheses */
	{"input x : f32[8]\ny[i:8] = -5 * x[i] - -x[i] + -(5) + -(-x[i]) + - - x[i] + -0.5\noutput y\n",
	 "input x : f32[8]\ny[i:8] = -5 * x[i] - -x[i] + -(5) + -(-x[i]) + -(-x[i]) + -0.5\n\noutput y : f32\n"},
	/* minimal parentheses by precedence, and the readability ones around % */
	{"size D = 8\ninput x : f32[D]\ny[d:D] = ((x[d] + 1) * (x[d] - (1 - x[d]))) / (2 * (d % 2) + (2 * d) % D)\n"
	 "output y\n",
	 "size D = 8\n\ninput x : f32[D]\ny[d:D] = (x[d] + 1) * (x[d] - (1 - x[d])) / (2 * (d % 2) + (2 * d) % D)\n"
	 "\noutput y : f32\n"},
	/* ?? binds tighter than *, takes one primary, chains to the right */
	{"input x : f32[8]\ninput w : f32[3]\ny[i:8] = sum(k:3) x[i + k - 1] ?? 0 * w[k] + (x[i + k] ?? -inf) "
	 "+ x[i - k] ?? x[i + 1 - k] ?? (w[k] + 1)\noutput y\n",
	 "input x : f32[8]\ninput w : f32[3]\ny[i:8] = sum(k:3) x[i + k - 1] ?\? 0 * w[k] + x[i + k] ?\? -inf "
	 "+ x[i - k] ?\? x[i + 1 - k] ?\? (w[k] + 1)\n\noutput y : f32\n"},
	/* scalars, literal extents, nested ?: and logic */
	{"input s : f64[]\ninput x : f32[4]\nt[] = sum(i:4) x[i] * s[]\n"
	 "u[i:4] = i < 2 && !(x[i] > 0) || i == 3 ? (i == 0 ? 1 : 2) : t[] < 0 ? 3 : 4\noutput u\n",
	 "input s : f64[]\ninput x : f32[4]\nt[] = sum(i:4) x[i] * s[]\n"
	 "u[i:4] = i < 2 && !(x[i] > 0) || i == 3 ? (i == 0 ? 1 : 2) : t[] < 0 ? 3 : 4\n\noutput u : f32\n"},
};

START_TEST(canonical_text)
{
	Diag d = {0};
	Graph *g = parse_str(canon[_i].src, "canon.tg", &d);
	ck_assert_msg(g, "case %d does not parse: %s", _i, d.msg);
	char *s = ir_print(g);
	ck_assert_msg(strcmp(s, canon[_i].want) == 0, "case %d printed\n%s----\nexpected\n%s", _i, s,
		      canon[_i].want);
	assert_round_trip(g, "canonical case");
	free(s);
	ir_free(g);
}
END_TEST

static const char *override_src =
	"size N = 4, M = 8\ninput x : f32[N, M]\ny[i:N] = sum(j:M) x[i, j]\noutput y\n";

static const struct {
	SizeOverride ov[2];
	int nov;
	const char *want;   /* the size line, or the error message */
} overrides[] = {
	{{{"N", 16}}, 1, "size N = 16, M = 8"},
	{{{"M", 3}, {"N", 1}}, 2, "size N = 1, M = 3"},
	{{{"Q", 3}}, 1, "--size Q=3: the graph has no size named 'Q'"},
	{{{"N", 0}}, 1, "--size N=0: a size must be an integer from 1 to 2147483647"},
	{{{"N", 3000000000}}, 1, "--size N=3000000000: a size must be an integer from 1 to 2147483647"},
};

START_TEST(size_overrides)
{
	Diag d = {0};
	Graph *g = ir_parse(override_src, strlen(override_src), "ov.tg", overrides[_i].ov,
			    overrides[_i].nov, &d);
	const char *want = overrides[_i].want;
	if (strncmp(want, "size", 4) == 0) {
		ck_assert_msg(g, "case %d: %s", _i, d.msg);
		char *s = ir_print(g);
		ck_assert_msg(strncmp(s, want, strlen(want)) == 0, "case %d printed %s", _i, s);
		ck_assert_int_eq(ir_tensor_count(g, 0), g->sizes[0].value * g->sizes[1].value);
		free(s);
		ir_free(g);
	} else {
		ck_assert_msg(!g && d.msg, "case %d should fail", _i);
		ck_assert_msg(strncmp(d.msg, want, strlen(want)) == 0 && d.code == 2,
			      "case %d: got %s", _i, d.msg);
		diag_clear(&d);
	}
}
END_TEST

static const char *sched_graph =
	"size N = 8, M = 16\ninput x : f32[N, M]\ne[i:N, j:M] = exp(x[i, j])\n"
	"s[i:N] = sum(j:M) e[i, j]\ny[i:N, j:M] = e[i, j] / s[i]\noutput y\n";

static const struct { const char *src, *want; } schedules[] = {
	{"schedule\nstore e : f16\naccum s : f64\ninline e\ntile y : i=4, j=8\nsplit s : j=4\norder s : pairwise\n",
	 "\nschedule\nstore e : f16\naccum s : f64\ninline e\ntile y : i=4, j=8\nsplit s : j=4\n"
	 "order s : pairwise\n"},
	{"store e\n", "\nschedule\nstore e : f32\n"},
	{"store q : f16\n", "s.sched:1:7: error: unknown definition 'q'"},
	{"# a comment\nsplit e : j=2\n", "s.sched:2:7: error: split of 'e', which is not a reduction"},
	{"split s : k=2\n", "s.sched:1:11: error: 'k' is not a reduction index of 's'"},
	{"tile y : i=2, q=4\n", "s.sched:1:15: error: 'q' is not a left-hand index of 'y'"},
	{"inline x\n", "s.sched:1:8: error: 'x' is an input, not a definition"},
	{"fuse e\n", "s.sched:1:1: error: unknown directive 'fuse' (store, accum, inline, tile, split, order, online or mma)"},
	{"store e : f8\n", "s.sched:1:11: error: unknown format 'f8'"},
	{"tile y : i=0\n", "s.sched:1:12: error: a tile size must be an integer from 1 to 2147483647"},
	{"online s\n", "\nschedule\nonline s\n"},
	{"online s, s\n", "s.sched:1:11: error: 's' appears twice in one online set"},
	{"online e\n", "s.sched:1:8: error: online of 'e', which is not a reduction"},
	{"online s, q\n", "s.sched:1:11: error: unknown definition 'q'"},
	{"online s,", "s.sched:1:10: error: expected a definition name, found end of file"},
};

START_TEST(schedule_files)
{
	Diag d = {0};
	Graph *g = parse_str(sched_graph, "g.tg", &d);
	ck_assert_msg(g, "%s", d.msg);
	const char *src = schedules[_i].src, *want = schedules[_i].want;
	int rc = ir_parse_schedule(g, src, strlen(src), "s.sched", &d);
	char *s = ir_print(g);
	if (want[0] == '\n') {
		ck_assert_msg(rc == 0, "case %d: %s", _i, d.msg);
		const char *tail = strstr(s, "\nschedule\n");
		ck_assert_msg(tail && strcmp(tail, want) == 0, "case %d printed\n%s", _i, s);
		ck_assert_int_eq(ir_check_schedule(g, &d), 0);
		ck_assert_int_ge(g->dirs[0].def, 0);
		assert_round_trip(g, "schedule");
	} else {
		ck_assert_msg(rc == -1 && d.msg && d.code == 2, "case %d should fail", _i);
		ck_assert_msg(strncmp(d.msg, want, strlen(want)) == 0 && d.msg[strlen(want)] == '\n',
			      "case %d:\n got: %s\nwant: %s", _i, d.msg, want);
		ck_assert_msg(!g->has_schedule && g->ndirs == 0, "a failed schedule must leave the graph as it was");
		diag_clear(&d);
	}
	free(s);
	ir_free(g);
}
END_TEST

/* Pairs of graphs that differ in one thing: ir_graph_equal must see it. */
static const char *const unequal[][2] = {
	{"input x : f32[4]\ny[i:4] = x[i] + 1\noutput y\n", "input x : f32[4]\ny[i:4] = x[i] + 2\noutput y\n"},
	{"input x : f32[4]\ny[i:4] = x[i] + 1\noutput y\n", "input x : f32[4]\ny[i:4] = x[i] + 1.0\noutput y\n"},
	{"input x : f32[4]\ny[i:4] = x[i]\noutput y\n", "input x : f16[4]\ny[i:4] = x[i]\noutput y\n"},
	{"input x : f32[4]\ny[i:4] = x[i]\noutput y\n", "input x : f32[4]\ny[i:4] = x[i]\noutput y : f16\n"},
	{"input x : f32[4]\ny[j:4] = x[j]\noutput y\n", "input x : f32[4]\ny[i:4] = x[i]\noutput y\n"},
	{"size N = 4\ninput x : f32[N]\ny[i:N] = x[i]\noutput y\n", "size N = 4\ninput x : f32[4]\ny[i:N] = x[i]\noutput y\n"},
	{"input x : f32[4]\ny[] = sum(j:4) x[j]\noutput y\n", "input x : f32[4]\ny[] = sum(j: 0..4) x[j]\noutput y\n"},
	{"input x : f32[4]\ny[] = sum(j:4) x[j]\noutput y\n", "input x : f32[4]\ny[] = max(j:4) x[j]\noutput y\n"},
	{"input x : f32[4]\ny[i:4] = x[i]\noutput y\n", "input x : f32[4]\ny[i:4] = x[i]\noutput y\nschedule\n"},
	{"input x : f32[4]\ny[i:4] = x[3 - i]\noutput y\n", "input x : f32[4]\ny[i:4] = x[i]\noutput y\n"},
	{"graph a\ninput x : f32[4]\ny[i:4] = x[i]\noutput y\n", "graph b\ninput x : f32[4]\ny[i:4] = x[i]\noutput y\n"},
};

START_TEST(graph_equality)
{
	Diag d = {0};
	Graph *a = parse_str(unequal[_i][0], "a.tg", &d), *b = parse_str(unequal[_i][1], "b.tg", &d);
	ck_assert_msg(a && b, "case %d: %s", _i, d.msg);
	ck_assert_msg(!ir_graph_equal(a, b) && !ir_graph_equal(b, a), "case %d: equal", _i);
	Graph *c = parse_str(unequal[_i][0], "c.tg", &d);
	ck_assert_msg(ir_graph_equal(a, c), "case %d: a graph differs from itself", _i);
	ir_free(a);
	ir_free(b);
	ir_free(c);
}
END_TEST

START_TEST(print_expr)
{
	Diag d = {0};
	Graph *g = parse_str("size N = 4\ninput x : f32[N, N]\n"
			     "y[i:N] = max(j: 0..i + 1) x[i, j] * 2 - x[j, (i + 1) % N] ?\? 0\noutput y\n",
			     "e.tg", &d);
	ck_assert_msg(g, "%s", d.msg);
	char *s = ir_print_expr(g, 0, g->defs[0].body);
	ck_assert_str_eq(s, "x[i, j] * 2 - x[j, (i + 1) % N] ?\? 0");
	free(s);
	s = ir_print_expr(g, 0, g->defs[0].red[0].hi);
	ck_assert_str_eq(s, "i + 1");
	free(s);
	ck_assert_int_eq(g->defs[0].ty, TY_REAL);
	ck_assert_int_eq(g->tensors[1].dtype, DT_F64);
	ir_free(g);
}
END_TEST

/* Integer-valued definitions are i32 tensors (spec section 2). */
START_TEST(integer_definitions)
{
	Diag d = {0};
	Graph *g = parse_str("size N = 4, K = 2\ninput t : i32[N]\ninput x : f32[N, N]\n"
			     "a[i:N] = t[i] * 2 + i % 3 - N\nb[i:N] = sum(j:N) abs(t[j] - a[i])\n"
			     "c[i:N] = argmax(j:N) x[i, j]\nd[i:N] = max(t[i], 0) ? 1 : 0\n"
			     "v[i:N, r:K], w[i:N, r:K] = topk(j:N) x[i, j] + b[i]\n"
			     "e[i:N] = i / 2 + c[i] + w[i, 0] + v[i, 1]\n"
			     "output a : i32, b : i32, c : i32, e : f32\n", "int.tg", &d);
	ck_assert_msg(!g, "a number where a boolean is needed must fail");
	ck_assert_msg(strstr(d.msg, "int.tg:7:10: error: number 'max(t[i], 0)' where a boolean is needed"),
		      "%s", d.msg);
	diag_clear(&d);
	g = parse_str("size N = 4, K = 2\ninput t : i32[N]\ninput x : f32[N, N]\n"
		      "a[i:N] = t[i] * 2 + i % 3 - N\nb[i:N] = sum(j:N) abs(t[j] - a[i])\n"
		      "c[i:N] = argmax(j:N) x[i, j]\nv[i:N, r:K], w[i:N, r:K] = topk(j:N) x[i, j] + b[i]\n"
		      "e[i:N] = i / 2 + c[i] + w[i, 0] + v[i, 1]\n"
		      "output a : i32, b : i32, c : i32, e : f32\n", "int.tg", &d);
	ck_assert_msg(g, "%s", d.msg);
	static const struct { const char *name; Dtype dt; } want[] = {
		{"a", DT_I32}, {"b", DT_I32}, {"c", DT_I32}, {"v", DT_F64}, {"w", DT_I32}, {"e", DT_F64},
	};
	for (size_t k = 0; k < ARRAY_LEN(want); k++) {
		int t = ir_find_tensor(g, want[k].name);
		ck_assert_int_ge(t, 0);
		ck_assert_msg(g->tensors[t].dtype == want[k].dt, "%s has dtype %s", want[k].name,
			      dt_name((Dtype)g->tensors[t].dtype));
	}
	assert_round_trip(g, "integer definitions");
	ir_free(g);
}
END_TEST

/* A graph built in memory through the constructors is checked like a parsed one. */
static Graph *build(int64_t offset, bool malformed)
{
	Graph *g = ir_new("mem");
	SrcPos p = {"mem", 1, 1};
	int n = ir_add_size(g, "N", 8, p);
	Tensor x = {.name = ir_strdup(g, "x", 1), .pos = p, .kind = TK_INPUT, .dtype = DT_F32,
		    .rank = 1, .def = -1};
	x.dims[0] = (Extent){n, 8};
	int tx = ir_add_tensor(g, &x);
	Def D = {.nout = 1, .nlhs = 1, .monoid = MO_NONE, .ty = TY_REAL, .pos = p};
	D.lhs[0] = (LhsIndex){ir_strdup(g, "i", 1), {n, 8}, p};
	Ref idx = ir_op(g, OP_ADD, TY_INT, ir_var(g, 0, TY_INT), ir_int(g, offset), 0);
	Ref rd = ir_read(g, (uint32_t)tx, &idx, 1, REF_NONE, TY_REAL);
	ir_setpos(g, rd, p);
	D.body = ir_op(g, OP_MUL, malformed ? TY_INT : TY_REAL, rd, ir_num(g, "0.5", 3), 0);
	Tensor y = {.name = ir_strdup(g, "y", 1), .pos = p, .kind = TK_DEF, .dtype = DT_F64,
		    .rank = 1, .def = 0};
	y.dims[0] = (Extent){n, 8};
	D.out[0] = ir_add_tensor(g, &y);
	ir_add_def(g, &D);
	ir_add_output(g, D.out[0], DT_F32, p);
	return g;
}

START_TEST(in_memory)
{
	Diag d = {0};
	Graph *g = build(0, false);
	ck_assert_msg(ir_check(g, &d) == 0, "%s", d.msg);
	assert_round_trip(g, "in memory");
	ir_free(g);
	g = build(1, false);
	ck_assert_int_eq(ir_check(g, &d), -1);
	ck_assert_msg(strstr(d.msg, "mem:1:1: error: read x[i + 1] may be out of bounds: at i=7 index 0 is 8, extent 8"),
		      "%s", d.msg);
	ck_assert_int_eq(d.code, 2);
	diag_clear(&d);
	ir_free(g);
	g = build(0, true);
	ck_assert_int_eq(ir_check(g, &d), -1);
	ck_assert_msg(strstr(d.msg, "malformed graph") && d.code == 3, "%s", d.msg);
	diag_clear(&d);
	ir_free(g);
}
END_TEST

/* ----------------------------------------------------------- mutations */

static uint64_t rng(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static const char *const tokens[] = {
	"[", "]", "(", ")", ",", ":", "?", "??", "..", "=", "+", "-", "*", "/", "%", "<=", "&&",
	"!", "\n", "sum(j:N) ", "x[i]", "0x1p-3", "1e99999999", "99999999999999999999", "inf",
	"topk(", "schedule\n", "output", "\xc3\xa9", "#", "N", "i", "size Q = 0\n", "max(",
};

/* One deterministic mutation of src (len bytes) into out; returns the new length. */
static size_t mutate(const char *src, size_t len, uint64_t *s, char *out)
{
	size_t at = len ? rng(s) % len : 0, n = 0;
	switch (rng(s) % 6) {
	case 0:   /* flip a byte */
		memcpy(out, src, len);
		if (len)
			out[at] = (char)(rng(s) & 0xff);
		return len;
	case 1: { /* delete a run */
		size_t k = 1 + rng(s) % 8;
		k = k > len - at ? len - at : k;
		memcpy(out, src, at);
		memcpy(out + at, src + at + k, len - at - k);
		return len - k;
	}
	case 2: { /* insert a token */
		const char *t = tokens[rng(s) % ARRAY_LEN(tokens)];
		memcpy(out, src, at);
		n = strlen(t);
		memcpy(out + at, t, n);
		memcpy(out + at + n, src + at, len - at);
		return len + n;
	}
	case 3:   /* truncate */
		memcpy(out, src, at);
		return at;
	case 4: { /* duplicate the line holding `at` */
		size_t b = at, e = at;
		while (b > 0 && src[b - 1] != '\n')
			b--;
		while (e < len && src[e] != '\n')
			e++;
		e += e < len;
		memcpy(out, src, e);
		memcpy(out + e, src + b, e - b);
		memcpy(out + e + (e - b), src + e, len - e);
		return len + (e - b);
	}
	default: { /* swap two bytes */
		size_t b = len ? rng(s) % len : 0;
		memcpy(out, src, len);
		if (len) {
			char c = out[at];
			out[at] = out[b];
			out[b] = c;
		}
		return len;
	}
	}
}

START_TEST(mutations)
{
	ck_assert_msg(nfiles_examples >= 1, "no examples/*.tg found");
	int per = 400 / nfiles_examples + 1, parsed = 0, failed = 0;
	for (int f = 0; f < nfiles_examples; f++) {
		size_t len;
		char *src = tu_read_file(examples[f], &len);
		ck_assert(src);
		char *buf = malloc(4 * len + 8192), *buf2 = malloc(4 * len + 8192);
		uint64_t seed = 0x9e3779b97f4a7c15ull ^ (uint64_t)(f + 1) * 0x100000001b3ull;
		for (int k = 0; k < per; k++) {
			size_t n = mutate(src, len, &seed, buf);
			if (rng(&seed) % 3 == 0)   /* a second mutation on top of the first */
				n = mutate(buf, n, &seed, buf2), memcpy(buf, buf2, n);
			Diag d = {0};
			Graph *g = ir_parse(buf, n, "mutant.tg", NULL, 0, &d);
			if (g) {
				parsed++;
				assert_round_trip(g, "a mutant");
				ir_free(g);
			} else {
				failed++;
				ck_assert_msg(d.msg && strstr(d.msg, "error") && d.code == 2,
					      "%s mutant %d: no error message", examples[f], k);
				diag_clear(&d);
			}
		}
		free(buf);
		free(buf2);
		free(src);
	}
	ck_assert_int_ge(parsed + failed, 400);
	ck_assert_msg(parsed > 0 && failed > 0, "mutants: %d parsed, %d failed", parsed, failed);
}
END_TEST

/* --------------------------------------------------------------- suite */

static Suite *suite(void)
{
	examples = glob_list("examples/*.tg", &nfiles_examples);
	golden = glob_list("tests/parse/golden/*.tg", &nfiles_golden);
	errors = glob_list("tests/parse/errors/*.tg", &nfiles_errors);
	Suite *s = suite_create("compiler");
	TCase *t = tcase_create("front end");
	tcase_set_timeout(t, 60);
	tcase_add_test(t, examples_round_trip);
	tcase_add_loop_test(t, golden_file, 0, nfiles_golden ? nfiles_golden : 1);
	tcase_add_loop_test(t, error_file, 0, nfiles_errors ? nfiles_errors : 1);
	tcase_add_loop_test(t, canonical_text, 0, (int)ARRAY_LEN(canon));
	tcase_add_loop_test(t, size_overrides, 0, (int)ARRAY_LEN(overrides));
	tcase_add_loop_test(t, schedule_files, 0, (int)ARRAY_LEN(schedules));
	tcase_add_loop_test(t, graph_equality, 0, (int)ARRAY_LEN(unequal));
	tcase_add_test(t, print_expr);
	tcase_add_test(t, integer_definitions);
	tcase_add_test(t, in_memory);
	tcase_add_test(t, mutations);
	suite_add_tcase(s, t);
	return s;
}

int main(void)
{
	return tu_run(suite());
}
