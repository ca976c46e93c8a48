/* fuzz/edit.c: editing a checked graph into another one, for the reducer (reduce.c) and
 * the metamorphic variants (meta.c).
 *
 * An edit starts from a fresh parse of a canonical text: new nodes come from the
 * hash-consing constructors (ir_op, ir_read...), bodies, ranges, sizes and extents are set
 * in place, new definitions are appended (ir_add_tensor, ir_add_def), and an FzMask says
 * what else changes: tensors dropped or printed as inputs, outputs and directives dropped,
 * inputs given another format, the order in which tensors are printed (a definition added
 * at the end of the arrays must be printed before its readers), and directive lines added.
 * fz_print_masked writes the result as .tg text, leaving out whatever no kept output needs
 * (dead definitions, unused sizes, directives of what is gone) but keeping every input
 * declared (the values generated for input k depend on k). The text is then parsed again,
 * so that ir_parse's checker judges every edit: nothing here needs to prove an edit legal.
 * fz_rebuild rewrites an expression: one node replaced by another, index variables
 * substituted, reads of a plain definition replaced by its body (inlining).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fuzz.h"

void fz_mask_init(const Graph *g, FzMask *m)
{
	size_t nt = (size_t)g->ntensors + 1, no = (size_t)g->noutputs + 1, nd = (size_t)g->ndirs + 1;
	m->drop = calloc(nt, sizeof *m->drop);
	m->as_input = calloc(nt, sizeof *m->as_input);
	m->drop_out = calloc(no, sizeof *m->drop_out);
	m->drop_dir = calloc(nd, sizeof *m->drop_dir);
	m->in_dt = malloc(nt * sizeof *m->in_dt);
	IR_ASSERT(m->drop && m->as_input && m->drop_out && m->drop_dir && m->in_dt);
	for (size_t t = 0; t < nt; t++)
		m->in_dt[t] = DT_NONE;
	m->order = NULL;
	m->norder = 0;
	m->extra_dirs = NULL;
}

void fz_mask_free(FzMask *m)
{
	free(m->drop);
	free(m->as_input);
	free(m->drop_out);
	free(m->drop_dir);
	free(m->in_dt);
	free(m->order);
	m->order = NULL;
}

/* ------------------------------------------------------------------ walking */

void fz_walk(const Graph *g, Ref r, FzWalkFn *fn, void *ctx)
{
	if (!r)
		return;
	const Node *n = ir_node(g, r);
	fn(g, r, ctx);
	if (n->kind == NK_READ) {
		for (uint32_t i = 0; i < n->u.read.n; i++)
			fz_walk(g, ir_read_idx(g, n)[i], fn, ctx);
		fz_walk(g, n->u.read.pad, fn, ctx);
	} else if (n->kind == NK_OP) {
		for (int i = 0; i < op_info((Op)n->op)->arity; i++)
			fz_walk(g, n->a[i], fn, ctx);
	}
}

void fz_walk_def(const Graph *g, int d, FzWalkFn *fn, void *ctx)
{
	const Def *D = &g->defs[d];
	for (int r = 0; r < D->nred; r++) {
		fz_walk(g, D->red[r].lo, fn, ctx);
		fz_walk(g, D->red[r].hi, fn, ctx);
	}
	fz_walk(g, D->body, fn, ctx);
}

void fz_collect(const Graph *g, Ref r, void *ctx)
{
	FzNodes *ns = ctx;
	for (int k = 0; k < ns->n; k++)
		if (ns->r[k] == r)
			return;
	if (ns->n == ns->cap) {
		ns->cap = ns->cap ? 2 * ns->cap : 64;
		ns->r = realloc(ns->r, (size_t)ns->cap * sizeof *ns->r);
		IR_ASSERT(ns->r);
	}
	ns->r[ns->n++] = r;
}

typedef struct {
	bool *tensors;   /* read */
	bool *sizes;     /* used as a value */
} Uses;

static void note_use(const Graph *g, Ref r, void *ctx)
{
	Uses *u = ctx;
	const Node *n = ir_node(g, r);
	if (n->kind == NK_READ)
		u->tensors[n->u.read.tensor] = true;
	else if (n->kind == NK_SIZE && u->sizes)
		u->sizes[n->u.size] = true;
}

/* The k-th tensor in print order. */
static int nth(const Graph *g, const FzMask *m, int k)
{
	return m->order ? m->order[k] : k;
}

static int ntensors_printed(const Graph *g, const FzMask *m)
{
	return m->order ? m->norder : g->ntensors;
}

/* live[t]: tensor t is printed (needed by a kept output). Readers come after what they
 * read in print order, so one backward pass over it finds every tensor needed. */
static void liveness(const Graph *g, const FzMask *m, bool *live, bool *sizes)
{
	for (int k = 0; k < g->noutputs; k++)
		if (!m->drop_out[k])
			live[g->outputs[k].tensor] = true;
	Uses u = {live, sizes};
	for (int k = ntensors_printed(g, m) - 1; k >= 0; k--) {
		int t = nth(g, m, k);
		const Tensor *T = &g->tensors[t];
		if (!live[t] || m->drop[t] || T->kind != TK_DEF || m->as_input[t])
			continue;
		const Def *D = &g->defs[T->def];
		for (int i = 0; i < D->nout; i++)
			live[D->out[i]] = true;
		if (T->result == 0 || !live[D->out[0]])
			fz_walk_def(g, T->def, note_use, &u);
	}
	/* inputs stay declared until a pass drops them: the values of input k depend on k */
	for (int t = 0; t < g->ntensors; t++)
		live[t] |= g->tensors[t].kind == TK_INPUT && !m->drop[t];
	for (int t = 0; t < g->ntensors; t++)
		for (int k = 0; live[t] && !m->drop[t] && k < g->tensors[t].rank; k++)
			if (g->tensors[t].dims[k].size >= 0)
				sizes[g->tensors[t].dims[k].size] = true;
}

/* ------------------------------------------------------------------ printing */

static void pext(FILE *f, const Graph *g, const Extent *e)
{
	if (e->size >= 0)
		fprintf(f, "%s", g->sizes[e->size].name);
	else
		fprintf(f, "%lld", (long long)e->value);
}

static void pexpr(FILE *f, const Graph *g, int d, Ref r)
{
	char *s = ir_print_expr(g, d, r);
	fputs(s, f);
	free(s);
}

static void plhs(FILE *f, const Graph *g, const Def *D, int t)
{
	fprintf(f, "%s[", g->tensors[t].name);
	for (int k = 0; k < D->nlhs; k++) {
		fprintf(f, "%s%s:", k ? ", " : "", D->lhs[k].name);
		pext(f, g, &g->tensors[t].dims[k]);
	}
	fputc(']', f);
}

static void pdef(FILE *f, const Graph *g, int d)
{
	const Def *D = &g->defs[d];
	plhs(f, g, D, D->out[0]);
	if (D->nout == 2) {
		fputs(", ", f);
		plhs(f, g, D, D->out[1]);
	}
	fputs(" = ", f);
	if (D->monoid != MO_NONE) {
		fprintf(f, "%s(", monoid_name(D->monoid));
		for (int r = 0; r < D->nred; r++) {
			fprintf(f, "%s%s:", r ? ", " : "", D->red[r].name);
			if (D->red[r].full) {
				pexpr(f, g, d, D->red[r].hi);
			} else {
				fputc(' ', f);
				pexpr(f, g, d, D->red[r].lo);
				fputs("..", f);
				pexpr(f, g, d, D->red[r].hi);
			}
		}
		fputs(") ", f);
	}
	pexpr(f, g, d, D->body);
	fputc('\n', f);
}

static void pinput(FILE *f, const Graph *g, int t, Dtype dt)
{
	const Tensor *T = &g->tensors[t];
	fprintf(f, "input %s : %s[", T->name, dt_name(dt));
	for (int k = 0; k < T->rank; k++) {
		fputs(k ? ", " : "", f);
		pext(f, g, &T->dims[k]);
	}
	fputs("]\n", f);
}

static void pdirective(FILE *f, const Directive *X)
{
	static const char *const names[SD__COUNT] = {
		[SD_STORE] = "store", [SD_ACCUM] = "accum", [SD_INLINE] = "inline",
		[SD_TILE] = "tile", [SD_SPLIT] = "split", [SD_ORDER] = "order", [SD_ONLINE] = "online", [SD_MMA] = "mma",
	};
	fprintf(f, "%s %s", names[X->kind], X->target);
	if (X->kind == SD_STORE || X->kind == SD_ACCUM)
		fprintf(f, " : %s", dt_name(X->fmt));
	for (int a = 0; (X->kind == SD_TILE || X->kind == SD_SPLIT || X->kind == SD_MMA) && a < X->nargs; a++)
		fprintf(f, "%s%s=%lld", a ? ", " : " : ", X->args[a].name, (long long)X->args[a].value);
	if (X->kind == SD_ORDER)
		fprintf(f, " : %s", order_name(X->order));
	for (int a = 1; X->kind == SD_ONLINE && a < X->nargs; a++)
		fprintf(f, ", %s", X->args[a].name);
	fputc('\n', f);
}

static void pdecls(FILE *f, const Graph *g, const FzMask *m, const bool *live)
{
	for (int k = 0; k < ntensors_printed(g, m); k++) {
		int t = nth(g, m, k);
		const Tensor *T = &g->tensors[t];
		if (!live[t] || m->drop[t])
			continue;
		if (T->kind == TK_INPUT)
			pinput(f, g, t, m->in_dt[t] != DT_NONE ? m->in_dt[t] : (Dtype)T->dtype);
		else if (m->as_input[t])
			pinput(f, g, t, T->dtype == DT_I32 ? DT_I32 : DT_F32);
		else if (T->result == 0)
			pdef(f, g, T->def);
	}
}

char *fz_print_masked(const Graph *g, const FzMask *m)
{
	bool *live = calloc((size_t)g->ntensors + 1, sizeof *live);
	bool *sizes = calloc((size_t)g->nsizes + 1, sizeof *sizes);
	IR_ASSERT(live && sizes);
	liveness(g, m, live, sizes);
	char *s = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&s, &len);
	IR_ASSERT(f);
	if (g->name)
		fprintf(f, "graph %s\n", g->name);
	for (int i = 0, n = 0; i < g->nsizes; i++)
		if (sizes[i])
			fprintf(f, "%s%s = %lld", n++ ? ", " : "size ", g->sizes[i].name,
				(long long)g->sizes[i].value);
	fputs("\n\n", f);
	pdecls(f, g, m, live);
	for (int k = 0, n = 0; k < g->noutputs; k++) {
		int t = g->outputs[k].tensor;
		if (m->drop_out[k] || m->drop[t] || m->as_input[t])
			continue;
		fprintf(f, "%s%s : %s", n++ ? ", " : "\noutput ", g->tensors[t].name,
			dt_name(g->outputs[k].dtype));
	}
	fputc('\n', f);
	int n = 0;
	for (int k = 0; k < g->ndirs; k++) {
		int d = g->dirs[k].def, t = d >= 0 ? g->defs[d].out[0] : -1;
		if (m->drop_dir[k] || t < 0 || !live[t] || m->drop[t] || m->as_input[t])
			continue;
		if (n++ == 0)
			fputs("\nschedule\n", f);
		pdirective(f, &g->dirs[k]);
	}
	if (m->extra_dirs && *m->extra_dirs)
		fprintf(f, "%s%s", n ? "" : "\nschedule\n", m->extra_dirs);
	fclose(f);
	free(live);
	free(sizes);
	return s;
}

/* ------------------------------------------------------------------ rebuilding */

static Ref inline_read(FzSub *s, const Node *n, const Ref *idx)
{
	const Def *D = &s->g->defs[s->g->tensors[s->inl].def];
	FzSub in = {s->g, 0, 0, {0}, -1, false};
	for (int k = 0; k < D->nlhs; k++)
		in.vmap[k] = idx[k];
	if (n->u.read.pad)
		s->bad = true;
	return fz_rebuild(&in, D->body);
}

Ref fz_rebuild(FzSub *s, Ref r)
{
	if (!r)
		return r;
	if (r == s->from)
		return s->to;
	Graph *g = s->g;
	Node n = *ir_node(g, r);
	switch (n.kind) {
	case NK_VAR:
		return n.u.var < IR_MAXVARS && s->vmap[n.u.var] ? s->vmap[n.u.var] : r;
	case NK_READ: {
		Ref idx[IR_MAXRANK];
		for (uint32_t i = 0; i < n.u.read.n; i++)
			idx[i] = fz_rebuild(s, g->refs[n.u.read.first + i]);
		if ((int)n.u.read.tensor == s->inl)
			return inline_read(s, &n, idx);
		Ref pad = fz_rebuild(s, n.u.read.pad);
		return ir_read(g, n.u.read.tensor, idx, n.u.read.n, pad, (Ty)n.ty);
	}
	case NK_OP: {
		Ref a[3] = {0, 0, 0};
		for (int i = 0; i < op_info((Op)n.op)->arity; i++)
			a[i] = fz_rebuild(s, n.a[i]);
		return ir_op(g, (Op)n.op, (Ty)n.ty, a[0], a[1], a[2]);
	}
	default:
		return r;
	}
}

void fz_rebuild_def(FzSub *s, int d)
{
	Def *D = &s->g->defs[d];
	for (int r = 0; r < D->nred; r++) {
		D->red[r].lo = fz_rebuild(s, D->red[r].lo);
		D->red[r].hi = fz_rebuild(s, D->red[r].hi);
	}
	D->body = fz_rebuild(s, D->body);
}
