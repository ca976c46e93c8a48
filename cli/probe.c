/* cli/probe.c: `assay probe --backend B`: reveals the summation tree a backend's derived
 * kernel really uses, FPRev-style (docs/numerics.md 6a; spec/cli.md v2 "probe"), and
 * compares it with the tree its schedule declares.
 *
 * The probed kernel is a row sum, s[p] = sum(k:N) x[p, k] in f32, under the schedule given
 * (--schedule FILE: split, order, tile of s; default: the default schedule). Row p holds the
 * probe of one pair (i, j): every summand 1, x[p, i] = +M and x[p, j] = -M with M so large
 * in the accumulation's format (2^100; 2^(12 + ceil(log2 N)) for f16, 2^(9 + ...) for bf16)
 * that every 1 added into a partial holding M or -M is absorbed; the
 * two cancel exactly where they meet, at the lowest common ancestor of i and j, and the
 * ones summed after it survive. N - s[p] is then the number of leaves under that ancestor.
 * One run of the kernel gives every pair (N (N - 1) / 2 rows). The tree is rebuilt from
 * those counts bottom-up (pairs in increasing count merge their groups into a node: a node
 * with more than two children is a fused multi-way sum, a matrix unit's block). The same
 * rows are evaluated by the emulating interpreter in the schedule's order (the order the
 * budgets and the emulation check assume; MPFR, so its answer is certified): the tree the
 * schedule declares. Exit 0 when the two trees are the same, 1 when they differ (the
 * kernel sums in an order its schedule does not declare), 2 for bad input, 3 when the
 * backend or the environment failed.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "cli.h"
#include "../oracles/oracles.h"
#include "../verify/verify.h"

static const FlagSpec flags[] = {
	{"backend", true, false, "B        the backend whose kernel is probed (default c)"},
	{"n", true, false, "N        summands (2..512, default 16)"},
	{"schedule", true, false, "FILE     schedule of the row sum s (split, order, tile of s)"},
	{"json", false, false, "         one JSON object on stdout"},
	{"help", false, false, "         this help"},
};

/* counts[p] of each pair into the parenthesised tree text (leaves numbered 0..n-1). */
typedef struct {
	int n;
	int *parent;        /* union-find over leaves */
	char **text;        /* per root: its subtree's text */
	int *size;
} Tree;

static int find(Tree *t, int a)
{
	while (t->parent[a] != a)
		a = t->parent[a] = t->parent[t->parent[a]];
	return a;
}

typedef struct {
	int i, j;
	double c;
} Pair;

static int by_count(const void *a, const void *b)
{
	const Pair *x = a, *y = b;
	return x->c < y->c ? -1 : x->c > y->c ? 1 : x->i != y->i ? x->i - y->i : x->j - y->j;
}

/* The tree of the LCA leaf counts lca[i * n + j] (i < j): its text (malloc'ed), or NULL
 * when the counts are no tree's (a count below a group's size, a group of a size that
 * does not match: the kernel is not a tree of sums, or the probe was absorbed otherwise). */
static char *tree_of(int n, const double *lca, int *fanin, int *depth)
{
	int np = n * (n - 1) / 2, k = 0;
	Pair *ps = malloc((size_t)np * sizeof *ps);
	Tree t = {n, malloc((size_t)n * sizeof(int)), calloc((size_t)n, sizeof(char *)),
		  malloc((size_t)n * sizeof(int))};
	int *dep = calloc((size_t)n, sizeof(int));
	IR_ASSERT(ps && t.parent && t.text && t.size && dep);
	for (int i = 0; i < n; i++) {
		t.parent[i] = i;
		t.size[i] = 1;
		IR_ASSERT(asprintf(&t.text[i], "%d", i) >= 0);
		for (int j = i + 1; j < n; j++)
			ps[k++] = (Pair){i, j, lca[i * n + j]};
	}
	qsort(ps, (size_t)np, sizeof *ps, by_count);
	bool ok = true;
	*fanin = 0;
	for (int a = 0; a < np && ok;) {
		int b = a;
		while (b < np && ps[b].c == ps[a].c)
			b++;
		/* the pairs of one count: each connected set of groups becomes one node */
		for (int q = a; q < b && ok; q++) {
			int ri = find(&t, ps[q].i), rj = find(&t, ps[q].j);
			if (ri == rj)
				continue;
			/* gather every group joined at this count with ri */
			int members[512], nm = 0, total = 0, dmax = 0;
			members[nm++] = ri;
			for (int r = a; r < b; r++) {
				int x = find(&t, ps[r].i), y = find(&t, ps[r].j);
				for (int m = 0; m < nm; m++) {
					int other = x == members[m] ? y : y == members[m] ? x : -1;
					bool seen = other < 0;
					for (int m2 = 0; m2 < nm && !seen; m2++)
						seen = members[m2] == other;
					if (!seen && nm < 512)
						members[nm++] = other;
				}
			}
			char *buf = NULL;
			size_t len = 0;
			FILE *f = open_memstream(&buf, &len);
			IR_ASSERT(f);
			fputc('(', f);
			/* children in leaf order: the smallest leaf of each group leads */
			for (int m = 0; m < nm; m++)
				for (int m2 = m + 1; m2 < nm; m2++)
					if (members[m2] < members[m]) {
						int x = members[m];
						members[m] = members[m2];
						members[m2] = x;
					}
			for (int m = 0; m < nm; m++) {
				fprintf(f, "%s%s", m ? " " : "", t.text[members[m]]);
				total += t.size[members[m]];
				dmax = dep[members[m]] > dmax ? dep[members[m]] : dmax;
			}
			fputc(')', f);
			fclose(f);
			if ((double)total != ps[a].c)
				ok = false;
			int root = members[0];
			for (int m = 1; m < nm; m++) {
				t.parent[members[m]] = root;
				free(t.text[members[m]]);
				t.text[members[m]] = NULL;
			}
			free(t.text[root]);
			t.text[root] = buf;
			t.size[root] = total;
			dep[root] = dmax + 1;
			*fanin = nm > *fanin ? nm : *fanin;
		}
		a = b;
	}
	int root = find(&t, 0);
	ok = ok && t.size[root] == n;
	*depth = dep[root];
	char *out = ok ? t.text[root] : NULL;
	if (ok)
		t.text[root] = NULL;
	for (int i = 0; i < n; i++)
		free(t.text[i]);
	free(t.text);
	free(t.parent);
	free(t.size);
	free(dep);
	free(ps);
	return out;
}

int cmd_probe(int argc, char **argv)
{
	Args a;
	int code = cli_parse(&a, "probe", flags, ARRAY_LEN(flags), argc, argv);
	if (code)
		return code;
	if (cli_has(&a, "help")) {
		cli_usage(stdout, "probe", "[--backend B] [--n N] [--schedule FILE] [--json]",
			  "Reveals the summation tree of the backend's derived row sum FPRev-style\n"
			  "(+M and -M at two places, ones elsewhere: N - sum counts the leaves under\n"
			  "their lowest common ancestor) and compares it with the tree its schedule\n"
			  "declares (the emulating interpreter's order). Exit 1 when they differ.",
			  flags, ARRAY_LEN(flags));
		return 0;
	}
	if (a.npos) {
		fprintf(stderr, "assay probe: takes no positional arguments (see 'assay probe --help')\n");
		return 2;
	}
	long long n;
	if (cli_int(&a, "probe", "n", 16, 2, 512, &n))
		return 2;
	const char *bn = cli_get(&a, "backend") ? cli_get(&a, "backend") : "c";
	const Backend *b = be_find(bn);
	if (!b) {
		fprintf(stderr, "assay probe: --backend %s: no such backend\n", bn);
		return 2;
	}
	int np = (int)(n * (n - 1) / 2);
	char src[256];
	snprintf(src, sizeof src, "graph probe\nsize P = %d, N = %lld\ninput x : f32[P, N]\n"
		 "s[p:P] = sum(k:N) x[p, k]\noutput s : f32\n", np, n);
	Diag d = {0};
	Graph *g = ir_parse(src, strlen(src), "probe.tg", NULL, 0, &d);
	if (!g)
		return cli_report(&d);
	bool given = false;
	if ((code = cli_schedule(&a, "probe", g, &given))) {
		ir_free(g);
		return code;
	}
	Schedule s;
	if (sched_build(g, &s, &d)) {
		ir_free(g);
		return cli_report(&d);
	}
	/* the declared tree: the emulating interpreter in the schedule's order */
	OrcEmu oe;
	orc_emu_config(g, &s, &oe);
	/* M absorbs a sum of up to n ones in the accumulation's format: 2^(p + lg + 1) for p
	 * significand bits; 2^100 for f32 and f64 (within f32's range, absorbing in both) */
	Dtype acc = oe.cfg.accum && oe.cfg.accum[0] != DT_NONE ? oe.cfg.accum[0] : oe.cfg.dflt;
	int lg = 0;
	while ((1ll << lg) < n)
		lg++;
	int e = acc == DT_F16 ? 12 + lg : acc == DT_BF16 ? 9 + lg : 100;
	if (acc == DT_F16 && e > 15) {
		fprintf(stderr, "assay probe: --n %lld: an f16 accumulation cannot absorb %lld ones "
			"below its overflow (give --n 8 or less)\n", n, n);
		orc_emu_free(&oe);
		sched_free(&s);
		ir_free(g);
		return 2;
	}
	double M = ldexp(1, e);
	HostTensor in;
	int64_t dims[2] = {np, n};
	IR_ASSERT(ht_alloc(&in, DT_F32, 2, dims) == 0);
	for (int i = 0, p = 0; i < n; i++)
		for (int j = i + 1; j < n; j++, p++)
			for (int k = 0; k < n; k++)
				ht_set(&in, (int64_t)p * n + k, k == i ? M : k == j ? -M : 1);
	HostTensor emu = {0};
	MpOpts mo = {.threads = 1};
	MpStats st = {0};
	int rc = mp_emulate(g, &in, &oe.cfg, &mo, &emu, &st, &d);
	orc_emu_free(&oe);
	if (rc) {
		sched_free(&s);
		ht_free(&in);
		ir_free(g);
		return cli_report(&d);
	}
	/* the kernel's */
	char why[512];
	WorkerResult w = {0};
	WorkerOpts wo = {.threads = 1, .timeout_s = 60, .compile_timeout_s = 120};
	const char *envf = getenv("ASSAY_FAULT");   /* seeded faults reach the kernel, as in check */
	if (envf && *envf && vf_faults_parse(envf, &wo.faults, &d)) {
		fprintf(stderr, "assay probe: ASSAY_FAULT: %s\n", d.msg ? d.msg : "");
		diag_clear(&d);
		ht_free(&emu);
		sched_free(&s);
		ht_free(&in);
		ir_free(g);
		return 2;
	}
	if (vf_available(NULL, b, why, sizeof why)) {
		fprintf(stderr, "assay probe: backend %s is unavailable here: %s\n", bn, why);
		ht_free(&emu);
		sched_free(&s);
		ht_free(&in);
		ir_free(g);
		return 3;
	}
	if (vf_worker_run(b, g, &s, &in, &wo, &w, &d)) {
		ht_free(&emu);
		sched_free(&s);
		ht_free(&in);
		ir_free(g);
		return cli_report(&d);
	}
	if (w.status != WK_OK) {
		fprintf(stderr, "assay probe: the %s kernel did not run: %s\n", bn,
			w.reason ? w.reason : "");
		vf_worker_free(g, &w);
		ht_free(&emu);
		sched_free(&s);
		ht_free(&in);
		ir_free(g);
		return 3;
	}
	double *lk = calloc((size_t)(n * n), sizeof *lk), *le = calloc((size_t)(n * n), sizeof *le);
	IR_ASSERT(lk && le);
	for (int i = 0, p = 0; i < n; i++)
		for (int j = i + 1; j < n; j++, p++) {
			lk[i * n + j] = (double)n - ht_get(&w.outs[0], p);
			le[i * n + j] = (double)n - ht_get(&emu, p);
		}
	int fk, dk, fe, de;
	char *tk = tree_of((int)n, lk, &fk, &dk), *te = tree_of((int)n, le, &fe, &de);
	bool same = tk && te && strcmp(tk, te) == 0;
	char *stext = sched_text(g, &s);
	if (cli_has(&a, "json")) {
		printf("{\"backend\":\"%s\",\"n\":%lld,\"schedule\":\"", bn, n);
		for (const char *c = stext ? stext : ""; *c; c++)
			printf(*c == '\n' ? "\\n" : *c == '"' ? "\\\"" : "%c", *c);
		printf("\",\"kernel_tree\":\"%s\",\"declared_tree\":\"%s\",\"kernel_fanin\":%d,"
		       "\"kernel_depth\":%d,\"same\":%s}\n", tk ? tk : "", te ? te : "", tk ? fk : 0,
		       tk ? dk : 0, same ? "true" : "false");
	} else {
		printf("probe of the %s backend's row sum of %lld f32 terms, accumulated in %s "
		       "(FPRev: +-2^%d at two places, ones elsewhere; %d pairs in one run)\n"
		       "schedule: %s", bn, n, dt_info(acc)->name, e, np,
		       stext && *stext ? stext : "the default\n");
		printf("kernel's tree:   %s\n", tk ? tk : "(not a tree of sums: the counts fit none)");
		if (tk)
			printf("                 depth %d, widest node %d terms%s\n", dk, fk,
			       fk > 2 ? " (a fused multi-way sum)" : "");
		printf("declared tree:   %s\n", te ? te : "(not a tree)");
		printf("%s\n", same ? "the kernel sums in the order its schedule declares" :
		       "MISMATCH: the kernel sums in an order its schedule does not declare");
	}
	free(stext);
	free(tk);
	free(te);
	free(lk);
	free(le);
	vf_worker_free(g, &w);
	ht_free(&emu);
	sched_free(&s);
	ht_free(&in);
	ir_free(g);
	return same ? 0 : 1;
}
