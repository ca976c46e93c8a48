/* fuzz/reduce.c: the reducer: delta debugging over a graph, keeping its failure signature.
 *
 * The current graph is always a canonical text (ir_print of a checked graph). A candidate
 * is made from a fresh parse of it: a transformation edits that Graph (new nodes through
 * the hash-consing constructors, bodies, ranges, sizes and extents set in place) and
 * masks (tensors dropped or turned into inputs, outputs and directives dropped); this
 * file's printer writes the result, leaving out whatever no kept output needs (dead
 * definitions, unread inputs, unused sizes, directives of what is gone). The text is then
 * parsed again, so ir_parse's checker judges every candidate, and kept only when fz_holds:
 * the same signature (backend, verdict, output and format, implicated directive kinds and
 * faults). The passes, in order, each retried until a whole round changes nothing:
 *   outputs      drop every other output at once, then one at a time
 *   definitions  turn a definition into an input of its shape (last first), or substitute
 *                a plain one into its readers
 *   directives   drop one
 *   reductions   make a reduction a plain expression (indices at their lower bounds), drop
 *                a reduction index, narrow a range to one term or start it at 0
 *   sizes        shrink a size or a literal extent (to 1, 2, half, one less)
 *   expressions  replace a node (values, conditions, index expressions, paddings) by one
 *                of its operands or by 0 or 1, halve an integer literal, drop a padding
 *   unused       drop an input no longer read (inputs stay declared until then, because
 *                generated values depend on an input's number)
 *   inputs       an input's format to f32; the distribution to normal, without specials
 *                (the seed is kept)
 * The editing and printing machinery is edit.c's (shared with the metamorphic variants).
 * Determinism: the order of candidates is a function of the text alone, and the budget is a
 * count of checks, so the result is too (unless max_seconds cuts it). Each candidate is
 * checked in a child process, so a toolkit that dies on a candidate only rejects it.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "fuzz.h"

enum { MAXROUNDS = 16 };

typedef struct {
	const FzSig *s;
	const FzReduceOpts *o;
	FzReduceStats *st;
	FzRun run;            /* the current inputs */
	char *cur;            /* canonical text of the current graph */
	uint64_t *seen;       /* hashes of tried (text, inputs) */
	int nseen, capseen;
	double t0;
	bool stop;
} Red;

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static uint64_t fnv(const char *s, uint64_t h)
{
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
	return h;
}

static Graph *parse_text(const char *text)
{
	Diag d = {0};
	Graph *g = ir_parse(text, strlen(text), "reduce.tg", NULL, 0, &d);
	diag_clear(&d);
	return g;
}

/* ------------------------------------------------------------------ trying */

static bool budget_left(Red *R)
{
	int max = R->o->max_tests > 0 ? R->o->max_tests : 400;
	if (R->st->tests >= max || (R->o->max_seconds > 0 && now() - R->t0 > R->o->max_seconds)) {
		R->stop = true;
		R->st->exhausted = true;
	}
	return !R->stop;
}

static bool seen(Red *R, uint64_t h)
{
	for (int k = 0; k < R->nseen; k++)
		if (R->seen[k] == h)
			return true;
	if (R->nseen == R->capseen) {
		R->capseen = R->capseen ? 2 * R->capseen : 256;
		R->seen = realloc(R->seen, (size_t)R->capseen * sizeof *R->seen);
		IR_ASSERT(R->seen);
	}
	R->seen[R->nseen++] = h;
	return false;
}

static int ndefs_of(const char *text)
{
	Graph *g = parse_text(text);
	int n = g ? g->ndefs : -1;
	ir_free(g);
	return n;
}

/* fz_holds in a child process: a candidate on which the toolkit itself dies (an internal
 * error of the oracle, the budgets or the compiler on a strange graph) is only a candidate
 * that does not hold, never the reducer's death. */
static bool holds_isolated(const Graph *g, const FzRun *run, const FzSig *s)
{
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0) {   /* no process to spare: check here */
		bool kept = false;
		Diag d = {0};
		fz_holds(g, run, s, &kept, &d);
		diag_clear(&d);
		return kept;
	}
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		int null = open("/dev/null", O_WRONLY);   /* its internal errors are not ours */
		if (null >= 0)
			dup2(null, 2);
		bool kept = false;
		Diag d = {0};
		fz_holds(g, run, s, &kept, &d);
		_exit(kept ? 0 : 1);
	}
	int st;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

/* Tries a candidate text (taken over; NULL: none) with inputs run. true when kept. */
static bool try(Red *R, char *text, const FzRun *run, const char *what)
{
	if (!text)
		return false;
	Graph *g = parse_text(text);
	free(text);
	if (!g)
		return false;
	char *canon = ir_print(g);
	uint64_t h = fnv(canon, 0xcbf29ce484222325ull) ^
		     ((uint64_t)run->dist * 0x9e3779b97f4a7c15ull) ^ (run->specials ? 0x51ull : 0);
	bool kept = false;
	if (!seen(R, h) && budget_left(R)) {
		R->st->tests++;
		kept = holds_isolated(g, run, R->s);
	}
	ir_free(g);
	if (!kept) {
		free(canon);
		return false;
	}
	free(R->cur);
	R->cur = canon;
	R->run = *run;
	R->st->accepted++;
	if (R->o->log)
		fprintf(R->o->log, "reduce: %s: %d definitions (%d checks)\n", what, ndefs_of(R->cur),
			R->st->tests);
	return true;
}

/* ------------------------------------------------------------------ candidates */

/* A pass makes candidate k of the current graph: 1 with *text (maybe NULL: nothing at
 * k), 0 past the last. */
typedef int PassFn(Red *R, Graph *g, int k, char **text, FzRun *run);

static int target_tensor(const Graph *g, const Red *R)
{
	return ir_find_tensor(g, R->s->output);
}

static int pass_outputs(Red *R, Graph *g, int k, char **text, FzRun *run)
{
	if (k > g->noutputs)
		return 0;
	int t = target_tensor(g, R);
	FzMask m;
	fz_mask_init(g, &m);
	for (int o = 0; o < g->noutputs; o++)
		m.drop_out[o] = g->outputs[o].tensor != t && (k == 0 || o == k - 1);
	*text = fz_print_masked(g, &m);
	fz_mask_free(&m);
	return 1;
}

/* Definition k from the last: an input, or (odd k) substituted into its readers. */
static int pass_defs(Red *R, Graph *g, int k, char **text, FzRun *run)
{
	if (k >= 2 * g->ndefs)
		return 0;
	int d = g->ndefs - 1 - k / 2, t = target_tensor(g, R);
	const Def *D = &g->defs[d];
	if (t < 0 || g->tensors[t].def == d)
		return 1;
	FzMask m;
	fz_mask_init(g, &m);
	if (k % 2 == 0) {
		for (int i = 0; i < D->nout; i++)
			m.as_input[D->out[i]] = true;
		*text = fz_print_masked(g, &m);
	} else if (D->monoid == MO_NONE) {
		FzSub s = {g, 0, 0, {0}, D->out[0], false};
		for (int e = d + 1; e < g->ndefs; e++)
			fz_rebuild_def(&s, e);
		m.drop[D->out[0]] = true;
		if (!s.bad)
			*text = fz_print_masked(g, &m);
	}
	fz_mask_free(&m);
	return 1;
}

static int pass_dirs(Red *R, Graph *g, int k, char **text, FzRun *run)
{
	if (k >= g->ndirs)
		return 0;
	FzMask m;
	fz_mask_init(g, &m);
	m.drop_dir[k] = true;
	*text = fz_print_masked(g, &m);
	fz_mask_free(&m);
	return 1;
}

/* Drops the directives of kinds in mask on definition d (those that stop applying). */
static void drop_dirs_of(const Graph *g, FzMask *m, int d, unsigned kinds)
{
	for (int k = 0; k < g->ndirs; k++)
		if (g->dirs[k].def == d && (kinds & (1u << g->dirs[k].kind)))
			m->drop_dir[k] = true;
}

/* Reduction d as a plain expression: every reduction index at its lower bound. */
static bool to_plain(Graph *g, int d, FzMask *m)
{
	Def *D = &g->defs[d];
	if (D->monoid == MO_NONE || D->monoid == MO_ARGMAX || D->monoid == MO_ARGMIN ||
	    D->monoid == MO_TOPK)
		return false;
	FzSub s = {g, 0, 0, {0}, -1, false};
	for (int r = 0; r < D->nred; r++)
		s.vmap[D->nlhs + r] = fz_rebuild(&s, D->red[r].lo);
	D->body = fz_rebuild(&s, D->body);
	D->monoid = MO_NONE;
	D->nred = 0;
	drop_dirs_of(g, m, d, 1u << SD_ACCUM | 1u << SD_SPLIT | 1u << SD_ORDER | 1u << SD_MMA);
	return true;
}

/* Drops reduction index r of d (at its lower bound); later indices move down. */
static bool drop_red(Graph *g, int d, int r, FzMask *m)
{
	Def *D = &g->defs[d];
	if (D->nred < 2 || r >= D->nred)
		return false;
	FzSub s = {g, 0, 0, {0}, -1, false};
	s.vmap[D->nlhs + r] = D->red[r].lo;
	for (int q = r + 1; q < D->nred; q++)
		s.vmap[D->nlhs + q] = ir_var(g, (uint32_t)(D->nlhs + q - 1), TY_INT);
	for (int k = 0; k < g->ndirs; k++)
		for (int a = 0; g->dirs[k].def == d && a < g->dirs[k].nargs; a++)
			m->drop_dir[k] |= strcmp(g->dirs[k].args[a].name, D->red[r].name) == 0;
	for (int q = r; q + 1 < D->nred; q++)
		D->red[q] = D->red[q + 1];
	D->nred--;
	fz_rebuild_def(&s, d);
	return true;
}

/* Per definition: 0 plain, 1.. drop index, then narrow each range two ways. */
static int pass_reductions(Red *R, Graph *g, int k, char **text, FzRun *run)
{
	int per = 1 + 3 * IR_MAXRED;
	if (k >= per * g->ndefs)
		return 0;
	int d = k / per, j = k % per;
	Def *D = &g->defs[d];
	FzMask m;
	fz_mask_init(g, &m);
	bool ok = false;
	if (j == 0) {
		ok = to_plain(g, d, &m);
	} else if (j <= IR_MAXRED) {
		ok = drop_red(g, d, j - 1, &m);
	} else {
		int r = (j - 1 - IR_MAXRED) / 2;
		if (r < D->nred) {
			RedIndex *X = &D->red[r];
			if ((j - 1 - IR_MAXRED) % 2 == 0) {
				X->hi = ir_op(g, OP_ADD, TY_INT, X->lo, ir_int(g, 1), 0);
			} else {
				ok = !(ir_node(g, X->lo)->kind == NK_INT && ir_node(g, X->lo)->u.ival == 0);
				X->lo = ir_int(g, 0);
			}
			ok = ok || (j - 1 - IR_MAXRED) % 2 == 0;
			X->full = false;
		}
	}
	if (ok)
		*text = fz_print_masked(g, &m);
	fz_mask_free(&m);
	return 1;
}

/* The smaller values an extent v may try: 1, 2, v/2, v-1 (ascending, distinct, < v). */
static int smaller(int64_t v, int64_t *c)
{
	int64_t cand[4] = {1, 2, v / 2, v - 1};
	int n = 0;
	for (int i = 0; i < 4; i++)
		if (cand[i] >= 1 && cand[i] < v && (n == 0 || cand[i] > c[n - 1]))
			c[n++] = cand[i];
	return n;
}

/* Candidate k: sizes first (4 slots each), then literal extents of tensors. */
static int pass_sizes(Red *R, Graph *g, int k, char **text, FzRun *run)
{
	int64_t c[4];
	int slot = k / 4, i = k % 4;
	if (slot < g->nsizes) {
		if (i < smaller(g->sizes[slot].value, c)) {
			g->sizes[slot].value = c[i];
			FzMask m;
			fz_mask_init(g, &m);
			*text = fz_print_masked(g, &m);
			fz_mask_free(&m);
		}
		return 1;
	}
	slot -= g->nsizes;
	if (slot >= g->ntensors * IR_MAXRANK)
		return 0;
	Tensor *T = &g->tensors[slot / IR_MAXRANK];
	int dim = slot % IR_MAXRANK;
	if (dim >= T->rank || T->dims[dim].size >= 0 || T->result == 1 ||
	    i >= smaller(T->dims[dim].value, c))
		return 1;
	T->dims[dim].value = c[i];
	if (T->kind == TK_DEF && g->defs[T->def].nout == 2)
		g->tensors[g->defs[T->def].out[1]].dims[dim].value = c[i];
	FzMask m;
	fz_mask_init(g, &m);
	*text = fz_print_masked(g, &m);
	fz_mask_free(&m);
	return 1;
}

/* ------------------------------------------------------------------ expressions */

enum { RP_OPERAND0, RP_OPERAND1, RP_OPERAND2, RP_ZERO, RP_ONE, RP_HALF, RP_NOPAD, RP__COUNT };

static bool is_lit(const Graph *g, Ref r, const char *text)
{
	const Node *n = ir_node(g, r);
	return n->kind == NK_NUM && strcmp(g->lits[n->u.lit].text, text) == 0;
}

/* The replacement rp of node r, or 0 when it has none. */
static Ref replacement(Graph *g, Ref r, int rp)
{
	const Node *n = ir_node(g, r);
	int arity = n->kind == NK_OP ? op_info((Op)n->op)->arity : 0;
	if (rp <= RP_OPERAND2) {
		if (rp >= arity || (n->op == OP_SELECT && rp == 0 && n->kind == NK_OP))
			return 0;
		Ref a = n->a[rp];
		return ir_node(g, a)->ty == TY_BOOL && n->ty != TY_BOOL ? 0 : a;
	}
	if (n->ty == TY_BOOL)
		return 0;
	switch (rp) {
	case RP_ZERO:
		if (n->ty == TY_INT)
			return n->kind == NK_INT && n->u.ival == 0 ? 0 : ir_int(g, 0);
		return is_lit(g, r, "0") ? 0 : ir_num(g, "0", 1);
	case RP_ONE:
		if (n->ty == TY_INT)
			return n->kind == NK_INT && n->u.ival == 1 ? 0 : ir_int(g, 1);
		return is_lit(g, r, "1") ? 0 : ir_num(g, "1", 1);
	case RP_HALF:
		return n->kind == NK_INT && n->u.ival > 2 ? ir_int(g, n->u.ival / 2) : 0;
	case RP_NOPAD: {
		if (n->kind != NK_READ || !n->u.read.pad)
			return 0;
		/* copies first: a new node may move the graph's arrays under n */
		Node c = *n;
		Ref idx[IR_MAXRANK];
		memcpy(idx, ir_read_idx(g, &c), c.u.read.n * sizeof *idx);
		return ir_read(g, c.u.read.tensor, idx, c.u.read.n, 0, (Ty)c.ty);
	}
	}
	return 0;
}

/* Candidate k: definitions from the last, their nodes root first, RP__COUNT each. */
static int pass_exprs(Red *R, Graph *g, int k, char **text, FzRun *run)
{
	for (int d = g->ndefs - 1; d >= 0; d--) {
		FzNodes ns = {0};
		fz_walk(g, g->defs[d].body, fz_collect, &ns);
		for (int r = 0; r < g->defs[d].nred; r++) {
			fz_walk(g, g->defs[d].red[r].lo, fz_collect, &ns);
			fz_walk(g, g->defs[d].red[r].hi, fz_collect, &ns);
		}
		if (k >= ns.n * RP__COUNT) {
			k -= ns.n * RP__COUNT;
			free(ns.r);
			continue;
		}
		Ref from = ns.r[k / RP__COUNT], to = replacement(g, from, k % RP__COUNT);
		free(ns.r);
		if (to) {
			FzSub s = {g, from, to, {0}, -1, false};
			fz_rebuild_def(&s, d);
			FzMask m;
			fz_mask_init(g, &m);
			*text = fz_print_masked(g, &m);
			fz_mask_free(&m);
		}
		return 1;
	}
	return 0;
}

/* Candidate k: input k left out (only an unread one makes a valid graph; the inputs after
 * it then take other values). */
static int pass_unused(Red *R, Graph *g, int k, char **text, FzRun *run)
{
	if (k >= g->ntensors)
		return 0;
	if (g->tensors[k].kind == TK_INPUT) {
		FzMask m;
		fz_mask_init(g, &m);
		m.drop[k] = true;
		*text = fz_print_masked(g, &m);
		fz_mask_free(&m);
	}
	return 1;
}

/* Candidate k < ntensors: that input in f32; then normal inputs, then no specials. */
static int pass_inputs(Red *R, Graph *g, int k, char **text, FzRun *run)
{
	FzMask m;
	fz_mask_init(g, &m);
	if (k < g->ntensors) {
		const Tensor *T = &g->tensors[k];
		if (T->kind == TK_INPUT && T->dtype != DT_F32 && T->dtype != DT_I32) {
			m.in_dt[k] = DT_F32;
			*text = fz_print_masked(g, &m);
		}
	} else if (k == g->ntensors && run->dist != DIST_NORMAL) {
		run->dist = DIST_NORMAL;
		run->specials = false;
		*text = fz_print_masked(g, &m);
	} else if (k == g->ntensors + 1 && run->specials) {
		run->specials = false;
		*text = fz_print_masked(g, &m);
	}
	fz_mask_free(&m);
	return k <= g->ntensors + 1;
}

static const struct {
	PassFn *fn;
	const char *name;
} passes[] = {
	{pass_outputs, "outputs"}, {pass_defs, "definitions"}, {pass_dirs, "directives"},
	{pass_reductions, "reductions"}, {pass_sizes, "sizes"}, {pass_exprs, "expressions"},
	{pass_unused, "unused inputs"}, {pass_inputs, "inputs"},
};

/* One pass to its fixpoint; true when it changed the graph. */
static bool run_pass(Red *R, int p)
{
	bool changed = false;
	for (int k = 0; !R->stop;) {
		Graph *g = parse_text(R->cur);
		IR_ASSERT(g);
		char *text = NULL;
		FzRun run = R->run;
		int more = passes[p].fn(R, g, k, &text, &run);
		ir_free(g);
		if (!more) {
			free(text);
			break;
		}
		if (try(R, text, &run, passes[p].name))
			changed = true;   /* the new graph's candidate k comes next */
		else
			k++;
	}
	return changed;
}

int fz_reduce(const Graph *g, const FzSig *s, const FzReduceOpts *o, char **out,
	      FzReduceStats *st, Diag *d)
{
	memset(st, 0, sizeof *st);
	Red R = {s, o, st, o->run, ir_print(g), NULL, 0, 0, now(), false};
	R.run.out_dir = NULL;
	st->defs_before = g->ndefs;
	bool holds = false;
	Graph *g0 = parse_text(R.cur);
	if (g0)
		holds = holds_isolated(g0, &R.run, s);
	ir_free(g0);
	if (!holds) {
		char key[512];
		diag_set(d, 2, "reduce: the graph does not fail with signature %s (output %s)",
			 fz_sig_key(s, key, sizeof key), s->output);
		free(R.cur);
		return -1;
	}
	bool changed = true;
	while (changed && !R.stop && st->rounds < MAXROUNDS) {
		changed = false;
		st->rounds++;
		for (size_t p = 0; p < ARRAY_LEN(passes) && !R.stop; p++)
			changed |= run_pass(&R, (int)p);
	}
	st->defs_after = ndefs_of(R.cur);
	st->seconds = now() - R.t0;
	st->seed = R.run.seed;
	st->dist = R.run.dist;
	st->specials = R.run.specials;
	free(R.seen);
	*out = R.cur;
	return 0;
}
