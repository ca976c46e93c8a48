/* verify/probe.c: the summation tree a backend's kernel really uses, revealed FPRev-style
 * (docs/numerics.md 6a, docs/probe.md), beside the tree its schedule declares.
 *
 * A probe graph is a sum over L leaves, s[p] = sum(r1:N1, ...) x[p, r1, ...] in f32 terms,
 * under the directives of the reduction it stands for (accum, order, split; vf_probe_graph
 * builds it from any linear sum of a graph, keeping the definition's and the reduction
 * indices' names so its directives apply unchanged). Row p holds the probe of one pair of
 * leaves (i, j) in row-major order of the reduction indices: every summand 1, +M at i and -M
 * at j, M so large in the accumulation's format that every 1 added into a partial holding
 * +-M is absorbed (2^100 for f32 and f64; 2^(12 + ceil(log2 L)) for f16, 2^(9 + ...) for
 * bf16). The two cancel exactly where they meet, at the lowest common ancestor of i and j,
 * and the ones summed after it survive: L - s[p] counts the leaves under that ancestor. One
 * run of the kernel gives every pair (L (L - 1) / 2 rows). The tree is rebuilt from those
 * counts bottom-up (pairs in increasing count merge their groups into a node: a node with
 * more than two children is a fused multi-way sum, a matrix unit's block). The same rows
 * evaluated by the emulating interpreter in the schedule's order (the order the budgets and
 * the emulation check assume; MPFR, so certified) give the declared tree.
 *
 * Ownership: VfProbe's strings are malloc'ed (vf_probe_free). Failure: vf_probe_run returns
 * 0 with the result (out->ran false with out->why when the kernel did not run: a verdict's
 * status, out->status), -1 with d when the toolkit or the environment failed.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "verify.h"

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


/* ------------------------------------------------------------------ the probe graph */

/* Whether name is one of the reduction indices of def (or the definition's own name). */
static bool taken(const Graph *g, const Def *df, const char *name)
{
	for (int r = 0; r < df->nred; r++)
		if (strcmp(df->red[r].name, name) == 0)
			return true;
	return strcmp(g->tensors[df->out[0]].name, name) == 0;
}

/* The constant value of ref r (an integer or a size), or -1. */
static int64_t const_of(const Graph *g, Ref r)
{
	const Node *n = ir_node(g, r);
	if (n->kind == NK_INT)
		return n->u.ival;
	if (n->kind == NK_SIZE)
		return g->sizes[n->u.size].value;
	return -1;
}

int vf_probe_eligible(const Graph *g, const Schedule *s, int def, int max_leaves, int *leaves,
		      char *why, size_t n)
{
	const Def *df = &g->defs[def];
	const DefSched *ds = &s->defs[def];
	*leaves = 0;
	if (df->monoid != MO_SUM || df->ty != TY_REAL) {
		snprintf(why, n, "not a sum of real terms");
		return 1;
	}
	if (ds->online || ds->inlined) {
		snprintf(why, n, "%s", ds->online ? "one pass of an online set" : "inlined");
		return 1;
	}
	if (1 + df->nred > IR_MAXRANK) {
		snprintf(why, n, "%d reduction indices: a probe input of rank %d", df->nred,
			 1 + df->nred);
		return 1;
	}
	int64_t L = 1;
	for (int r = 0; r < df->nred; r++) {
		const RedIndex *ri = &df->red[r];
		int64_t lo = const_of(g, ri->lo), hi = const_of(g, ri->hi);
		if (lo < 0 || hi <= lo) {
			snprintf(why, n, "reduction index %s: not a range of constant bounds", ri->name);
			return 1;
		}
		L *= hi - lo;
		if (L > max_leaves)
			break;
	}
	if (L < 2 || L > max_leaves) {
		snprintf(why, n, "%lld leaves (a probe takes 2..%d)", (long long)L, max_leaves);
		return 1;
	}
	if (ds->accum == DT_F16 && L > 8) {
		snprintf(why, n, "an f16 accumulation cannot absorb %lld ones below its overflow "
			 "(8 at most)", (long long)L);
		return 1;
	}
	if (ds->accum != DT_F16 && ds->accum != DT_BF16 && ds->accum != DT_F32 &&
	    ds->accum != DT_F64) {
		snprintf(why, n, "accumulated in %s", dt_info(ds->accum)->name);
		return 1;
	}
	*leaves = (int)L;
	return 0;
}

Graph *vf_probe_graph(const Graph *g, const Schedule *s, int def, Diag *d)
{
	const Def *df = &g->defs[def];
	const DefSched *ds = &s->defs[def];
	const char *dn = g->tensors[df->out[0]].name;
	int L = 1;
	for (int r = 0; r < df->nred; r++)
		L *= (int)(const_of(g, df->red[r].hi) - const_of(g, df->red[r].lo));
	const char *p = taken(g, df, "p") ? (taken(g, df, "p_") ? "p__" : "p_") : "p";
	const char *x = taken(g, df, "x") ? (taken(g, df, "x_") ? "x__" : "x_") : "x";
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	IR_ASSERT(f);
	fprintf(f, "graph probe_%s\ninput %s : f32[%d", dn, x, L * (L - 1) / 2);
	for (int r = 0; r < df->nred; r++)
		fprintf(f, ", %lld", (long long)(const_of(g, df->red[r].hi) - const_of(g, df->red[r].lo)));
	fprintf(f, "]\n%s[%s:%d] = sum(", dn, p, L * (L - 1) / 2);
	for (int r = 0; r < df->nred; r++) {   /* the ranges as written: r:E, or r: LO..HI */
		int64_t lo = const_of(g, df->red[r].lo), hi = const_of(g, df->red[r].hi);
		if (lo == 0)
			fprintf(f, "%s%s:%lld", r ? ", " : "", df->red[r].name, (long long)hi);
		else
			fprintf(f, "%s%s: %lld..%lld", r ? ", " : "", df->red[r].name, (long long)lo,
				(long long)hi);
	}
	fprintf(f, ") %s[%s", x, p);
	for (int r = 0; r < df->nred; r++) {
		int64_t lo = const_of(g, df->red[r].lo);
		if (lo == 0)
			fprintf(f, ", %s", df->red[r].name);
		else
			fprintf(f, ", %s - %lld", df->red[r].name, (long long)lo);
	}
	fprintf(f, "]\noutput %s : f32\nschedule\naccum %s : %s\n", dn, dn,
		dt_info(ds->accum)->name);
	if (ds->order != ORDER_LINEAR)
		fprintf(f, "order %s : %s\n", dn, order_name(ds->order));
	for (int r = 0; r < df->nred; r++)
		if (ds->split[r] > 1)
			fprintf(f, "split %s : %s=%lld\n", dn, df->red[r].name, (long long)ds->split[r]);
	fclose(f);
	Graph *pg = ir_parse(buf, len, "probe.tg", NULL, 0, d);
	free(buf);
	return pg;
}

/* ------------------------------------------------------------------ the run */

/* M for L leaves accumulated in acc: 2^e. */
static int absorb_exp(Dtype acc, int L)
{
	int lg = 0;
	while ((1ll << lg) < L)
		lg++;
	return acc == DT_F16 ? 12 + lg : acc == DT_BF16 ? 9 + lg : 100;
}

int vf_probe_run(const Graph *pg, const Backend *b, const WorkerOpts *wo, VfProbe *out, Diag *d)
{
	memset(out, 0, sizeof *out);
	Schedule s;
	if (sched_build(pg, &s, d))
		return -1;
	const Tensor *xt = NULL;
	for (int t = 0; t < pg->ntensors; t++)
		if (pg->tensors[t].kind == TK_INPUT)
			xt = &pg->tensors[t];
	IR_ASSERT(xt && pg->ndefs == 1);
	int L = 1;
	for (int k = 1; k < xt->rank; k++)
		L *= (int)xt->dims[k].value;
	out->leaves = L;
	out->acc = s.defs[0].accum;
	out->m_exp = absorb_exp(out->acc, L);
	IR_ASSERT(out->acc != DT_F16 || out->m_exp <= 15);
	double M = ldexp(1, out->m_exp);
	HostTensor in;
	int64_t dims[IR_MAXRANK];
	for (int k = 0; k < xt->rank; k++)
		dims[k] = xt->dims[k].value;
	IR_ASSERT(ht_alloc(&in, DT_F32, xt->rank, dims) == 0);
	for (int i = 0, q = 0; i < L; i++)
		for (int j = i + 1; j < L; j++, q++)
			for (int k = 0; k < L; k++)
				ht_set(&in, (int64_t)q * L + k, k == i ? M : k == j ? -M : 1);
	/* the declared tree: the emulating interpreter in the schedule's order */
	OrcEmu oe;
	orc_emu_config(pg, &s, &oe);
	HostTensor emu = {0};
	MpOpts mo = {.threads = 1};
	MpStats st = {0};
	int rc = mp_emulate(pg, &in, &oe.cfg, &mo, &emu, &st, d);
	orc_emu_free(&oe);
	if (rc) {
		sched_free(&s);
		ht_free(&in);
		return -1;
	}
	out->sched_text = sched_text(pg, &s);
	WorkerResult w = {0};
	if (vf_worker_run(b, pg, &s, &in, wo, &w, d)) {
		ht_free(&emu);
		sched_free(&s);
		ht_free(&in);
		return -1;
	}
	out->status = w.status;
	if (w.status != WK_OK) {
		snprintf(out->why, sizeof out->why, "%s", w.reason ? w.reason : "");
	} else {
		out->ran = true;
		double *lk = calloc((size_t)L * (size_t)L, sizeof *lk);
		double *le = calloc((size_t)L * (size_t)L, sizeof *le);
		IR_ASSERT(lk && le);
		for (int i = 0, q = 0; i < L; i++)
			for (int j = i + 1; j < L; j++, q++) {
				lk[i * L + j] = (double)L - ht_get(&w.outs[0], q);
				le[i * L + j] = (double)L - ht_get(&emu, q);
			}
		int fe, de;
		out->kernel_tree = tree_of(L, lk, &out->fanin, &out->depth);
		out->declared_tree = tree_of(L, le, &fe, &de);
		out->same = out->kernel_tree && out->declared_tree &&
			    strcmp(out->kernel_tree, out->declared_tree) == 0;
		free(lk);
		free(le);
	}
	vf_worker_free(pg, &w);
	ht_free(&emu);
	sched_free(&s);
	ht_free(&in);
	return 0;
}

void vf_probe_free(VfProbe *p)
{
	free(p->kernel_tree);
	free(p->declared_tree);
	free(p->sched_text);
	memset(p, 0, sizeof *p);
}
