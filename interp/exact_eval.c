/* interp/exact_eval.c: evaluation of definition elements for exact mode (exact_eval.h):
 * a graph's meaning (graph-format.md section 6) in interval arithmetic (ival.h).
 *
 * A recursive evaluator walks the hash-consed expression DAG of a definition's body with an
 * environment of int64 index variables (left-hand indices first, then reduction indices).
 * Definition elements are memoised per precision Level: one sparse paged table per tensor
 * (pages of PAGE slots allocated on first touch; interval slots for real tensors, int64
 * slots for i32 ones), filled on demand, so a single output element evaluates only what it
 * needs. A Level above the first reuses the first Level's exact points (exact at any
 * precision). Input values are converted once into MPFR points at their format's precision;
 * reads whose indices are affine use precomputed plans. Temporaries come from a per-Ctx
 * stack of intervals allocated in blocks: no allocation per operation.
 *
 * Invariants: a Level's slots hold values computed at its precision, or exact ones; a slot
 * is written only by the evaluation of the element that owns it; an element reads only
 * tensors defined before its own (the graph is a DAG in file order), so evaluation never
 * recurses into the element being computed. Undecided values (ival.h) propagate: an
 * undecided index gives an undecided read, an undecided condition the hull of both
 * branches, an undecided ranking an undecided argmax or topk place.
 *
 * Reductions collect their terms (pointers to values on the scratch stack, in tables or
 * inputs) up to the Shared's block; a longer one feeds each full block to an IvStream
 * (ivred.c) and frees it, so memory does not grow with its length, and one of at most a
 * block is reduced all at once as before. The streams of the reductions in progress are
 * kept per depth (a term may read an element whose own reduction is then evaluated).
 * Table pages and converted input pages are charged to the Limits (limit.h) when they are
 * allocated; a charge over the cap, a deadline passed (polled every 1024 terms) or an
 * allocation that fails stops the evaluation with an error.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "exact_eval.h"
#include "mpfmt.h"

enum {
	PAGE_BITS = 12,
	PAGE = 1 << PAGE_BITS,
	BLOCK = 128,        /* scratch intervals per allocation */
	POLL = 1024,        /* reduction terms between polls of the limits */
};

#define RN MPFR_RNDN

typedef struct {
	int64_t v;
	uint8_t und, done;
} ISlot;

typedef struct {
	int64_t n;
	size_t npages;
	void **pages;   /* Iv blocks, or ISlot arrays when isint */
	bool isint;
} Memo;

typedef struct {
	const HostTensor *ht;   /* NULL for definitions */
	bool isint;
	mpfr_prec_t prec;
	size_t npages;
	Iv **pages;
} Input;

/* A read whose index expressions are affine in the index variables: index k is
 * c + sum of coef * env[var] over its terms (the checks and the flat index stay per read). */
enum { PLAN_TERMS = 4 };

typedef struct {
	int64_t c;
	int nt;
	uint8_t var[PLAN_TERMS];
	int64_t coef[PLAN_TERMS];
} PlanDim;

typedef struct {
	PlanDim dim[IR_MAXRANK];
} Plan;

struct Shared {
	const Graph *g;
	Input *in;     /* by tensor id */
	Plan **plan;   /* by node: the affine plan of a read, or NULL */
	Limits *lim;
	size_t block;  /* terms a reduction holds at once */
	int64_t held;  /* bytes of converted inputs charged to lim */
};

struct Level {
	const Graph *g;
	mpfr_prec_t prec;
	Memo *memo;                 /* by tensor id */
	Iv *lits;                   /* by literal id */
	const Level *base;   /* whose exact values may be reused, or NULL */
	Limits *lim;
	int64_t held;        /* bytes of pages charged to lim */
};

static int ev_int(Ctx *c, Ref r, int64_t *v);
static int ev_bool(Ctx *c, Ref r);
static const Iv *ev(Ctx *c, Ref r, Iv *out);

/* ------------------------------------------------------------ storage */

void *ex_calloc(size_t n, size_t size)
{
	return mp_xcalloc(n, size);
}

static size_t npages_of(int64_t n)
{
	return (size_t)((n + PAGE - 1) >> PAGE_BITS);
}

static size_t page_len(int64_t n, size_t pg)
{
	int64_t left = n - (int64_t)pg * PAGE;
	return (size_t)(left < PAGE ? left : PAGE);
}

/* A limit stopped the evaluation: the message is the Limits' (lim_diag). Returns -1. */
static int stopped(Diag *d)
{
	diag_set(d, 2, "the evaluation stopped at a limit");
	return -1;
}

/* A page of len values (ISlot when isint, else Iv at prec) for tensor t, charged to lim
 * (*held grows): NULL with d at the cap or out of memory. */
static void *new_page(Limits *lim, int64_t *held, const Graph *g, int t, size_t len, bool isint,
		      mpfr_prec_t prec, Diag *d)
{
	int64_t bytes = (int64_t)(isint ? len * sizeof(ISlot) : iv_block_bytes(len, prec));
	char what[300];
	snprintf(what, sizeof what, "tensor '%s' (%zu more of its %lld elements, as %s)",
		 g->tensors[t].name, len, (long long)ir_tensor_count(g, t),
		 isint ? "integers" : "MPFR intervals");
	if (!lim_charge(lim, bytes, what)) {
		stopped(d);
		return NULL;
	}
	void *p = isint ? calloc(len, sizeof(ISlot)) : (void *)iv_block(len, prec);
	if (!p) {
		lim_release(lim, bytes);
		lim_oom(lim, d, bytes, what);
		return NULL;
	}
	*held += bytes;
	return p;
}

static void *memo_page(Level *l, int t, int64_t flat, Diag *d)
{
	Memo *m = &l->memo[t];
	size_t pg = (size_t)(flat >> PAGE_BITS);
	if (!m->pages[pg])
		m->pages[pg] = new_page(l->lim, &l->held, l->g, t, page_len(m->n, pg), m->isint,
					l->prec, d);
	return m->pages[pg];
}

/* Slot flat of tensor t in l, its page allocated on first touch: NULL with c->d. */
static Iv *slot_iv(Ctx *c, Level *l, int t, int64_t flat)
{
	Iv *p = memo_page(l, t, flat, c->d);
	return p ? &p[flat & (PAGE - 1)] : NULL;
}

static ISlot *slot_int(Ctx *c, Level *l, int t, int64_t flat)
{
	ISlot *p = memo_page(l, t, flat, c->d);
	return p ? &p[flat & (PAGE - 1)] : NULL;
}

/* The slot of t at flat in l if it was computed, else NULL (never allocates). */
static const void *peek(const Level *l, int t, int64_t flat)
{
	const Memo *m = &l->memo[t];
	const void *p = m->pages[flat >> PAGE_BITS];
	if (!p)
		return NULL;
	if (m->isint) {
		const ISlot *s = &((const ISlot *)p)[flat & (PAGE - 1)];
		return s->done ? s : NULL;
	}
	const Iv *v = &((const Iv *)p)[flat & (PAGE - 1)];
	return v->done ? v : NULL;
}

void ex_level_free(Level *l, const Graph *g)
{
	if (!l)
		return;
	for (int t = 0; t < g->ntensors; t++) {
		for (size_t p = 0; p < l->memo[t].npages; p++)
			free(l->memo[t].pages[p]);
		free(l->memo[t].pages);
	}
	if (l->lim)
		lim_release(l->lim, l->held);
	free(l->memo);
	free(l->lits);
	free(l);
}

Level *ex_level_new(const Graph *g, mpfr_prec_t prec, const Level *base, Limits *lim, Diag *d)
{
	Level *l = ex_calloc(1, sizeof *l);
	l->g = g;
	l->prec = prec;
	l->base = base;
	l->lim = lim;
	l->memo = ex_calloc((size_t)g->ntensors, sizeof *l->memo);
	for (int t = 0; t < g->ntensors; t++) {
		if (g->tensors[t].kind != TK_DEF)
			continue;
		Memo *m = &l->memo[t];
		m->n = ir_tensor_count(g, t);
		m->npages = npages_of(m->n);
		m->pages = ex_calloc(m->npages, sizeof *m->pages);
		m->isint = g->tensors[t].dtype == DT_I32;
	}
	l->lits = g->nlits ? iv_block(g->nlits, prec) : NULL;
	if (g->nlits && !l->lits) {
		lim_oom(lim, d, (int64_t)iv_block_bytes(g->nlits, prec), "the literals");
		ex_level_free(l, g);
		return NULL;
	}
	for (uint32_t i = 0; i < g->nlits; i++)
		if (iv_from_str(NULL, &l->lits[i], g->lits[i].text) < 0) {
			diag_set(d, 3, "literal '%s' is not a number", g->lits[i].text);
			ex_level_free(l, g);
			return NULL;
		}
	return l;
}

/* Element flat of input t as an MPFR point, its page converted on first touch: NULL with
 * c->d at the cap or out of memory. */
static const Iv *input_iv(Ctx *c, int t, int64_t flat)
{
	Input *in = &c->sh->in[t];
	size_t pg = (size_t)(flat >> PAGE_BITS);
	if (!in->pages[pg]) {
		size_t len = page_len(in->ht->n, pg);
		Iv *p = new_page(c->sh->lim, &c->sh->held, c->g, t, len, false, in->prec, c->d);
		if (!p)
			return NULL;
		for (size_t i = 0; i < len; i++)
			mpfr_set_d(p[i].lo, ht_get(in->ht, (int64_t)(pg * PAGE + i)), RN);
		in->pages[pg] = p;
	}
	return &in->pages[pg][flat & (PAGE - 1)];
}

static bool novars(const int64_t *coef)
{
	for (int v = 0; v < IR_MAXVARS; v++)
		if (coef[v])
			return false;
	return true;
}

/* Adds k * (expression r) to the affine form (c, coef); false if r is not affine. */
static bool affine(const Graph *g, Ref r, int64_t k, int64_t *c, int64_t *coef)
{
	const Node *n = &g->nodes[r];
	int64_t v;
	switch (n->kind) {
	case NK_INT:
		return !__builtin_mul_overflow(k, n->u.ival, &v) && !__builtin_add_overflow(*c, v, c);
	case NK_SIZE:
		return !__builtin_mul_overflow(k, g->sizes[n->u.size].value, &v) &&
		       !__builtin_add_overflow(*c, v, c);
	case NK_VAR:
		return n->u.var < IR_MAXVARS &&
		       !__builtin_add_overflow(coef[n->u.var], k, &coef[n->u.var]);
	case NK_OP: break;
	default: return false;
	}
	switch (n->op) {
	case OP_ADD: return affine(g, n->a[0], k, c, coef) && affine(g, n->a[1], k, c, coef);
	case OP_SUB: return affine(g, n->a[0], k, c, coef) && affine(g, n->a[1], -k, c, coef);
	case OP_NEG: return affine(g, n->a[0], -k, c, coef);
	case OP_MUL:   /* one factor must be a constant */
		for (int side = 0; side < 2; side++) {
			int64_t k1 = 0, z[IR_MAXVARS] = {0};
			if (affine(g, n->a[side], 1, &k1, z) && novars(z))
				return !__builtin_mul_overflow(k, k1, &v) &&
				       affine(g, n->a[1 - side], v, c, coef);
		}
		return false;
	default:
		return false;
	}
}

static Plan *make_plan(const Graph *g, const Node *n)
{
	Plan p;
	memset(&p, 0, sizeof p);
	const Ref *ix = ir_read_idx(g, n);
	for (uint32_t k = 0; k < n->u.read.n; k++) {
		int64_t coef[IR_MAXVARS] = {0};
		if (!affine(g, ix[k], 1, &p.dim[k].c, coef))
			return NULL;
		for (int v = 0; v < IR_MAXVARS; v++) {
			if (!coef[v])
				continue;
			if (p.dim[k].nt == PLAN_TERMS)
				return NULL;
			p.dim[k].var[p.dim[k].nt] = (uint8_t)v;
			p.dim[k].coef[p.dim[k].nt++] = coef[v];
		}
	}
	Plan *q = mp_xmalloc(sizeof *q);
	*q = p;
	return q;
}

void ex_shared_free(Shared *sh)
{
	if (!sh)
		return;
	for (uint32_t r = 0; sh->plan && r < sh->g->nnodes; r++)
		free(sh->plan[r]);
	free(sh->plan);
	for (int t = 0; t < sh->g->ntensors; t++) {
		for (size_t p = 0; p < sh->in[t].npages; p++)
			free(sh->in[t].pages[p]);
		free(sh->in[t].pages);
	}
	if (sh->lim)
		lim_release(sh->lim, sh->held);
	free(sh->in);
	free(sh);
}

static int check_input(const Graph *g, int t, const HostTensor *h, Diag *d)
{
	const Tensor *tt = &g->tensors[t];
	bool ok = h->dtype == (Dtype)tt->dtype && h->rank == tt->rank && h->data;
	for (int k = 0; ok && k < tt->rank; k++)
		ok = h->dims[k] == tt->dims[k].value;
	if (!ok)
		diag_set(d, 2, "input '%s': the tensor given does not match its declaration "
			 "(%s, rank %d)", tt->name, dt_name((Dtype)tt->dtype), tt->rank);
	return ok ? 0 : -1;
}

/* The shape of definitions the evaluator relies on (the checker guarantees it for parsed
 * graphs; graphs built in memory may not be checked): 0, or -1 with an internal error. */
static int validate(const Graph *g, Diag *d)
{
	for (int di = 0; di < g->ndefs; di++) {
		const Def *D = &g->defs[di];
		Monoid m = D->monoid;
		bool ok = D->nout >= 1 && D->nout <= 2 && D->nred >= 0 && D->nred <= IR_MAXRED &&
			  D->nlhs >= 0 && D->nlhs <= IR_MAXRANK && (m == MO_NONE) == (D->nred == 0);
		for (int o = 0; ok && o < D->nout; o++)
			ok = D->out[o] >= 0 && D->out[o] < g->ntensors &&
			     g->tensors[D->out[o]].def == di;
		if (ok) {
			bool ival = g->tensors[D->out[0]].dtype == DT_I32;
			bool ibody = g->nodes[D->body].ty == TY_INT;
			if (m == MO_ARGMAX || m == MO_ARGMIN)
				ok = ival && D->nred == 1;
			else if (m == MO_TOPK)
				ok = D->nlhs >= 1 && D->nred == 1 && ival == ibody &&
				     (D->nout == 1 || g->tensors[D->out[1]].dtype == DT_I32);
			else
				ok = !ival || ibody;
			ok = ok && D->nout == (m == MO_TOPK ? D->nout : 1);
		}
		if (!ok) {
			diag_set(d, 3, "exact: definition %d (%s) has a shape the interpreter cannot "
				 "evaluate", di, D->nout >= 1 && D->out[0] >= 0 && D->out[0] < g->ntensors ?
				 g->tensors[D->out[0]].name : "?");
			return -1;
		}
	}
	return 0;
}

Shared *ex_shared_new(const Graph *g, const HostTensor *inputs, Limits *lim, size_t block,
		      Diag *d)
{
	if (validate(g, d) < 0)
		return NULL;
	Shared *sh = ex_calloc(1, sizeof *sh);
	sh->g = g;
	sh->lim = lim;
	sh->block = block;
	sh->in = ex_calloc((size_t)g->ntensors, sizeof *sh->in);
	int n = ir_ninputs(g);
	for (int k = 0; k < n; k++) {
		int t = ir_input_tensor(g, k);
		Input *in = &sh->in[t];
		if (!inputs || check_input(g, t, &inputs[k], d) < 0) {
			if (!inputs)
				diag_set(d, 2, "input '%s' is missing", g->tensors[t].name);
			ex_shared_free(sh);
			return NULL;
		}
		in->ht = &inputs[k];
		in->isint = inputs[k].dtype == DT_I32;
		in->prec = in->isint ? OUT_PREC : dt_info(inputs[k].dtype)->prec;
		in->npages = in->isint ? 0 : npages_of(inputs[k].n);
		in->pages = ex_calloc(in->npages, sizeof *in->pages);
	}
	sh->plan = ex_calloc(g->nnodes, sizeof *sh->plan);
	for (uint32_t r = 1; r < g->nnodes; r++)
		if (g->nodes[r].kind == NK_READ)
			sh->plan[r] = make_plan(g, &g->nodes[r]);
	return sh;
}

int ex_shared_fill(Shared *sh, Ctx *c)
{
	for (int t = 0; t < sh->g->ntensors; t++) {
		lim_tensor(sh->lim, sh->g->tensors[t].name);
		for (size_t p = 0; p < sh->in[t].npages; p++) {
			if (!input_iv(c, t, (int64_t)p * PAGE))
				return -1;
			int64_t len = (int64_t)page_len(sh->in[t].ht->n, p);
			if (lim_poll(sh->lim, len, len))
				return stopped(c->d);
		}
	}
	return 0;
}

/* ------------------------------------------------------------ contexts */

Ctx *ex_ctx_new(const Graph *g, Shared *sh, Level *lv)
{
	Ctx *c = ex_calloc(1, sizeof *c);
	c->g = g;
	c->sh = sh;
	c->lv = lv;
	c->def = -1;
	c->lim = sh->lim;
	ivc_init(&c->iv, lv->prec);
	mpfr_init2(c->out, OUT_PREC);
	return c;
}

void ex_ctx_free(Ctx *c)
{
	if (!c)
		return;
	for (size_t b = 0; b < c->nblocks; b++)
		free(c->blocks[b]);
	free(c->blocks);
	free(c->terms);
	free(c->jv);
	free(c->order);
	for (int k = 0; k < c->nstreams; k++)
		ivs_free(c->streams[k]);
	free(c->streams);
	ivc_free(&c->iv);
	mpfr_clear(c->out);
	free(c);
}

static void grow_stack(Ctx *c)
{
	c->blocks = mp_xrealloc(c->blocks, (c->nblocks + 1) * sizeof *c->blocks);
	Iv *b = iv_block(BLOCK, c->lv->prec);
	if (!b)
		mp_oom_exit(iv_block_bytes(BLOCK, c->lv->prec));
	c->blocks[c->nblocks++] = b;
}

static inline Iv *push(Ctx *c)
{
	size_t k = c->top++;
	if (k / BLOCK == c->nblocks)
		grow_stack(c);
	return &c->blocks[k / BLOCK][k % BLOCK];
}

static void add_term(Ctx *c, const Iv *v, int64_t j)
{
	if (c->nterms == c->capterms) {
		c->capterms = c->capterms ? 2 * c->capterms : 256;
		c->terms = mp_xrealloc(c->terms, c->capterms * sizeof *c->terms);
		c->jv = mp_xrealloc(c->jv, c->capterms * sizeof *c->jv);
	}
	c->terms[c->nterms] = v;
	c->jv[c->nterms++] = j;
}

/* "y[3, 1]": the element being evaluated, for messages. */
static void elem_name(const Ctx *c, char *buf, size_t len)
{
	const Def *d = &c->g->defs[c->def];
	int n = snprintf(buf, len, "%s[", c->g->tensors[d->out[0]].name);
	for (int k = 0; k < d->nlhs && n > 0 && (size_t)n < len; k++)
		n += snprintf(buf + n, len - (size_t)n, "%s%lld", k ? ", " : "",
			      (long long)c->env[k]);
	if (n > 0 && (size_t)n < len)
		snprintf(buf + n, len - (size_t)n, "]");
}

static int fail(Ctx *c, SrcPos pos, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Reports a user error at pos, naming the element being computed. Returns -1. */
static int fail(Ctx *c, SrcPos pos, const char *fmt, ...)
{
	char msg[512], where[256] = "";
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	if (c->def >= 0) {
		elem_name(c, where, sizeof where);
		diag_at(c->d, pos, c->g->src, c->g->srclen, "%s (computing %s)", msg, where);
	} else {
		diag_at(c->d, pos, c->g->src, c->g->srclen, "%s", msg);
	}
	return -1;
}

/* ------------------------------------------------------------ reads */

/* Describes index expression ix of a failing read: "tok[3] = 70000" or "70000". */
static void describe_index(Ctx *c, Ref ix, int64_t v, char *buf, size_t len)
{
	const Node *n = &c->g->nodes[ix];
	if (n->kind != NK_READ) {
		snprintf(buf, len, "%lld", (long long)v);
		return;
	}
	int k = snprintf(buf, len, "%s[", c->g->tensors[n->u.read.tensor].name);
	const Ref *in = ir_read_idx(c->g, n);
	for (uint32_t i = 0; i < n->u.read.n && k > 0 && (size_t)k < len; i++) {
		int64_t w;
		Diag quiet = {0};
		Diag *saved = c->d;
		c->d = &quiet;
		int s = ev_int(c, in[i], &w);
		c->d = saved;
		diag_clear(&quiet);
		k += s ? snprintf(buf + k, len - (size_t)k, "%s?", i ? ", " : "")
		       : snprintf(buf + k, len - (size_t)k, "%s%lld", i ? ", " : "", (long long)w);
	}
	if (k > 0 && (size_t)k < len)
		snprintf(buf + k, len - (size_t)k, "] = %lld", (long long)v);
}

static int out_of_range(Ctx *c, const Node *n, uint32_t k, int64_t v)
{
	const Tensor *t = &c->g->tensors[n->u.read.tensor];
	Ref ix = ir_read_idx(c->g, n)[k];
	char what[256];
	describe_index(c, ix, v, what, sizeof what);
	bool indirect = c->g->nodes[ix].kind == NK_READ;
	return fail(c, n->pos, "%sread out of range: index %u of %s is %s, outside 0..%lld",
		    indirect ? "indirect " : "", k + 1, t->name, what,
		    (long long)t->dims[k].value - 1);
}

/* Evaluates the indices of read n: 0 in range (*flat set), 1 undecided, 2 outside the
 * tensor with a `??` default, -1 error. */
static int read_index(Ctx *c, Ref r, int64_t *flat)
{
	const Node *n = &c->g->nodes[r];
	const Tensor *t = &c->g->tensors[n->u.read.tensor];
	const Plan *p = c->sh->plan[r];
	int64_t f = 0;
	if (p) {
		for (uint32_t k = 0; k < n->u.read.n; k++) {
			const PlanDim *d = &p->dim[k];
			int64_t v = d->c, ext = t->dims[k].value;
			for (int i = 0; i < d->nt; i++)
				v += d->coef[i] * c->env[d->var[i]];
			if (v < 0 || v >= ext)
				return n->u.read.pad ? 2 : out_of_range(c, n, k, v);
			f = f * ext + v;
		}
		*flat = f;
		return 0;
	}
	const Ref *ix = ir_read_idx(c->g, n);
	bool und = false;
	for (uint32_t k = 0; k < n->u.read.n; k++) {
		const Node *x = &c->g->nodes[ix[k]];
		int64_t v;
		if (x->kind == NK_VAR) {
			v = c->env[x->u.var];
		} else {
			int s = ev_int(c, ix[k], &v);
			if (s < 0)
				return -1;
			if (s) {
				und = true;
				continue;
			}
		}
		int64_t ext = t->dims[k].value;
		if (v < 0 || v >= ext)
			return n->u.read.pad ? 2 : out_of_range(c, n, k, v);
		f = f * ext + v;
	}
	if (und)
		return 1;
	*flat = f;
	return 0;
}

static int64_t topk_k(const Def *d)
{
	return d->lhs[d->nlhs - 1].ext.value;
}

static int64_t unit_of(const Def *d, int64_t flat)
{
	return d->monoid == MO_TOPK ? flat / topk_k(d) : flat;
}

int64_t ex_prepare(Level *l, const Graph *g, int di, Diag *d)
{
	const Def *D = &g->defs[di];
	for (int o = 0; o < D->nout; o++) {
		Memo *m = &l->memo[D->out[o]];
		for (size_t p = 0; p < m->npages; p++)
			if (!memo_page(l, D->out[o], (int64_t)p * PAGE, d))
				return -1;
	}
	int64_t n = ir_tensor_count(g, D->out[0]);
	return D->monoid == MO_TOPK ? n / topk_k(D) : n;
}

static const Iv *def_iv(Ctx *c, int t, int64_t flat)
{
	Iv *s = slot_iv(c, c->lv, t, flat);
	if (!s)
		return NULL;
	if (s->done)
		return s;
	if (c->lv->base) {
		const Iv *b = peek(c->lv->base, t, flat);
		if (b && b->pt)
			return b;
	}
	int di = c->g->tensors[t].def;
	if (ex_elem(c, di, unit_of(&c->g->defs[di], flat)) < 0)
		return NULL;
	IR_ASSERT(s->done);
	return s;
}

static int def_int(Ctx *c, int t, int64_t flat, int64_t *v)
{
	ISlot *s = slot_int(c, c->lv, t, flat);
	if (!s)
		return -1;
	if (!s->done) {
		const ISlot *b = c->lv->base ? peek(c->lv->base, t, flat) : NULL;
		if (b && !b->und) {
			*v = b->v;
			return 0;
		}
		int di = c->g->tensors[t].def;
		if (ex_elem(c, di, unit_of(&c->g->defs[di], flat)) < 0)
			return -1;
		IR_ASSERT(s->done);
	}
	*v = s->v;
	return s->und;
}

/* An i32 tensor's element read as a real: a read with a real `??` default has type real
 * (check.c), but the tensor's memo holds int slots (ISlot), not intervals. */
static const Iv *int_as_real(Ctx *c, int t, int64_t flat, Iv *out)
{
	int64_t v = 0;
	int s = 0;
	if (c->g->tensors[t].kind == TK_INPUT)
		v = (int64_t)ht_get(c->sh->in[t].ht, flat);
	else
		s = def_int(c, t, flat, &v);
	if (s < 0)
		return NULL;
	if (s)
		iv_set_und(out);
	else
		iv_from_si(&c->iv, out, v);
	return out;
}

static const Iv *ev_read(Ctx *c, Ref r, const Node *n, Iv *out)
{
	int64_t flat;
	switch (read_index(c, r, &flat)) {
	case -1: return NULL;
	case 1: iv_set_und(out); return out;
	case 2: return ev(c, n->u.read.pad, out);
	default: break;
	}
	int t = (int)n->u.read.tensor;
	if (c->g->tensors[t].dtype == DT_I32)
		return int_as_real(c, t, flat, out);
	if (c->g->tensors[t].kind == TK_INPUT)
		return input_iv(c, t, flat);
	return def_iv(c, t, flat);
}

static int read_int(Ctx *c, Ref r, const Node *n, int64_t *v)
{
	int64_t flat;
	int s = read_index(c, r, &flat);
	if (s == 2)
		return ev_int(c, n->u.read.pad, v);
	if (s)
		return s;
	int t = (int)n->u.read.tensor;
	if (c->g->tensors[t].kind == TK_INPUT) {
		*v = (int64_t)ht_get(c->sh->in[t].ht, flat);
		return 0;
	}
	return def_int(c, t, flat, v);
}

/* ------------------------------------------------------------ integers and booleans */

static int int_op(Ctx *c, const Node *n, int64_t *v)
{
	int64_t a, b = 0;
	int s;
	if (n->op == OP_SELECT) {
		int k = ev_bool(c, n->a[0]);
		if (k < 0)
			return -1;
		if (k != IV_UND)
			return ev_int(c, n->a[k ? 1 : 2], v);
		/* undecided: decided after all if both branches agree */
		if ((s = ev_int(c, n->a[1], &a)) != 0 || (s = ev_int(c, n->a[2], &b)) != 0)
			return s;
		*v = a;
		return a != b;
	}
	if ((s = ev_int(c, n->a[0], &a)) != 0)
		return s;
	if (op_info(n->op)->arity == 2 && (s = ev_int(c, n->a[1], &b)) != 0)
		return s;
	bool ovf = false;
	switch (n->op) {
	case OP_NEG: ovf = a == INT64_MIN; *v = ovf ? 0 : -a; break;
	case OP_ABS: ovf = a == INT64_MIN; *v = ovf ? 0 : a < 0 ? -a : a; break;
	case OP_ADD: ovf = __builtin_add_overflow(a, b, v); break;
	case OP_SUB: ovf = __builtin_sub_overflow(a, b, v); break;
	case OP_MUL: ovf = __builtin_mul_overflow(a, b, v); break;
	case OP_MAX: *v = a > b ? a : b; break;
	case OP_MIN: *v = a < b ? a : b; break;
	case OP_IDIV: case OP_MOD:
		if (b == 0)
			return fail(c, n->pos, "%s by zero", n->op == OP_MOD ? "%" : "integer division");
		if (b == -1) {   /* avoids INT64_MIN / -1 */
			ovf = n->op == OP_IDIV && a == INT64_MIN;
			*v = n->op == OP_MOD || ovf ? 0 : -a;
			break;
		}
		if (n->op == OP_IDIV) {
			*v = a / b - ((a % b != 0) && ((a < 0) != (b < 0)));
		} else {
			int64_t r = a % b;
			*v = r < 0 ? r + (b < 0 ? -b : b) : r;
		}
		break;
	default:
		diag_set(c->d, 3, "exact: %s is not an integer operation", op_info(n->op)->name);
		return -1;
	}
	if (ovf)
		return fail(c, n->pos, "integer overflow in %s", op_info(n->op)->spelling);
	return 0;
}

/* An integer-valued expression: 0 with *v, 1 undecided, -1 error. */
static int ev_int(Ctx *c, Ref r, int64_t *v)
{
	const Node *n = &c->g->nodes[r];
	switch (n->kind) {
	case NK_INT: *v = n->u.ival; return 0;
	case NK_VAR: *v = c->env[n->u.var]; return 0;
	case NK_SIZE: *v = c->g->sizes[n->u.size].value; return 0;
	case NK_READ: return read_int(c, r, n, v);
	case NK_OP: return int_op(c, n, v);
	default:
		diag_set(c->d, 3, "exact: node %u is not an integer", r);
		return -1;
	}
}

static int compare(Ctx *c, const Node *n)
{
	const Node *x = &c->g->nodes[n->a[0]], *y = &c->g->nodes[n->a[1]];
	if (x->ty == TY_INT && y->ty == TY_INT) {
		int64_t a, b;
		int s;
		if ((s = ev_int(c, n->a[0], &a)) != 0 || (s = ev_int(c, n->a[1], &b)) != 0)
			return s < 0 ? -1 : IV_UND;
		return mp_int_compare((Op)n->op, a, b);
	}
	size_t mark = c->top;
	const Iv *a = ev(c, n->a[0], push(c));
	const Iv *b = a ? ev(c, n->a[1], push(c)) : NULL;
	int k = b ? iv_compare((Op)n->op, a, b) : -1;
	c->top = mark;
	return k;
}

/* A boolean: IV_FALSE, IV_TRUE, IV_UND, or -1 on error (Kleene logic for && and ||). */
static int ev_bool(Ctx *c, Ref r)
{
	const Node *n = &c->g->nodes[r];
	IR_ASSERT(n->kind == NK_OP);
	int a, b;
	switch (n->op) {
	case OP_NOT:
		a = ev_bool(c, n->a[0]);
		return a == IV_FALSE ? IV_TRUE : a == IV_TRUE ? IV_FALSE : a;
	case OP_AND: case OP_OR: {
		int stop = n->op == OP_AND ? IV_FALSE : IV_TRUE;
		if ((a = ev_bool(c, n->a[0])) < 0 || a == stop)
			return a;
		if ((b = ev_bool(c, n->a[1])) < 0 || b == stop)
			return b;
		return a == IV_UND || b == IV_UND ? IV_UND : !stop;
	}
	case OP_SELECT:
		a = ev_bool(c, n->a[0]);
		if (a < 0 || a == IV_UND)
			return a;
		return ev_bool(c, n->a[a ? 1 : 2]);
	default:
		return compare(c, n);
	}
}

/* ------------------------------------------------------------ reals */

/* floor or ceil of f(x) for f = erf, tanh (values in (-1, 1)) or sigmoid ((0, 1)) and a
 * finite x. An interval end of f(x) at exactly 1 (or -1, or 0 for sigmoid) is then open,
 * which intervals cannot say; but floor and ceil of the open sliver (1 - eps, 1) equal
 * those of nextbelow(1) (no integer lies between), so moving such an end inward by one ulp
 * is sound for them (only: the moved interval may miss the exact value). Without this,
 * floor(erf(30)) is [0, 1] at every precision below ~1300 bits. NULL with an error. */
static const Iv *step_of_bounded(Ctx *c, const Node *n, const Node *f, Iv *out)
{
	size_t mark = c->top;
	const Iv *x = ev(c, f->a[0], push(c));
	if (!x) {
		c->top = mark;
		return NULL;
	}
	Iv *v = push(c);
	iv_unary(&c->iv, (Op)f->op, v, x);
	bool finite = !x->und && mpfr_number_p(x->lo) && mpfr_number_p(iv_hi(x));
	if (finite && !v->und && !v->pt) {
		if (mpfr_cmp_ui(v->hi, 1) == 0)
			mpfr_nextbelow(v->hi);
		if (f->op == OP_SIGMOID ? mpfr_zero_p(v->lo) : mpfr_cmp_si(v->lo, -1) == 0) {
			mpfr_set_zero(v->lo, 1);   /* sigmoid: the end 0 becomes the least positive */
			if (f->op != OP_SIGMOID)
				mpfr_set_si(v->lo, -1, MPFR_RNDN);
			mpfr_nextabove(v->lo);
		}
	}
	if (!v->und && !v->pt && mpfr_cmp(v->lo, v->hi) > 0)
		iv_set_und(out);   /* not expected (the ends lie inside (-1, 1)): stay sound */
	else
		iv_unary(&c->iv, (Op)n->op, out, v);
	c->top = mark;
	return out;
}

static const Iv *ev_op(Ctx *c, const Node *n, Iv *out)
{
	Op op = (Op)n->op;
	size_t mark = c->top;
	if (op == OP_SELECT) {
		int k = ev_bool(c, n->a[0]);
		if (k < 0)
			return NULL;
		if (k != IV_UND)
			return ev(c, n->a[k ? 1 : 2], out);
		/* an undecided branch: the value lies in the hull of both (which often settles
		 * where the branches meet, as in `a >= b ? a : b` at a tie) */
		const Iv *a = ev(c, n->a[1], push(c)), *b = a ? ev(c, n->a[2], push(c)) : NULL;
		if (b)
			iv_hull(out, a, b);
		c->top = mark;
		return b ? out : NULL;
	}
	if (op == OP_FLOOR || op == OP_CEIL) {
		const Node *f = &c->g->nodes[n->a[0]];
		if (f->kind == NK_OP && (f->op == OP_ERF || f->op == OP_TANH || f->op == OP_SIGMOID))
			return step_of_bounded(c, n, f, out);
	}
	const Iv *a = ev(c, n->a[0], push(c)), *b, *d;
	if (!a)
		goto fail;
	switch (op_info(op)->arity) {
	case 1:
		iv_unary(&c->iv, op, out, a);
		break;
	case 2:
		if (n->a[1] == n->a[0]) {   /* hash-consing makes x - x visible */
			iv_self(&c->iv, op, out, a);
			break;
		}
		if (!(b = ev(c, n->a[1], push(c))))
			goto fail;
		iv_binary(&c->iv, op, out, a, b);
		break;
	default:
		if (!(b = ev(c, n->a[1], push(c))) || !(d = ev(c, n->a[2], push(c))))
			goto fail;
		iv_fma(&c->iv, out, a, b, d);
	}
	c->top = mark;
	return out;
fail:
	c->top = mark;
	return NULL;
}

/* A real-valued expression: a pointer to its value (out, or a stored value that stays
 * valid while the Level lives), NULL on error. */
static const Iv *ev(Ctx *c, Ref r, Iv *out)
{
	const Node *n = &c->g->nodes[r];
	if (n->ty != TY_REAL) {
		int64_t v;
		int s = ev_int(c, r, &v);
		if (s < 0)
			return NULL;
		if (s)
			iv_set_und(out);
		else
			iv_from_si(&c->iv, out, v);
		return out;
	}
	switch (n->kind) {
	case NK_NUM: return &c->lv->lits[n->u.lit];
	case NK_READ: return ev_read(c, r, n, out);
	case NK_OP: return ev_op(c, n, out);
	default:
		diag_set(c->d, 3, "exact: node %u is not a real value", r);
		return NULL;
	}
}

/* ------------------------------------------------------------ elements */

static int store_int(Ctx *c, ISlot *s, int und, int64_t v)
{
	if (!s)
		return -1;
	if (!und && (v < INT32_MIN || v > INT32_MAX))
		return fail(c, c->g->defs[c->def].pos, "the value %lld does not fit in 32 bits",
			    (long long)v);
	s->v = und ? 0 : v;
	s->und = (uint8_t)und;
	s->done = 1;
	return 0;
}

static int plain(Ctx *c, const Def *d, int64_t flat)
{
	int t = d->out[0];
	if (c->lv->memo[t].isint) {
		int64_t v = 0;
		int k = ev_int(c, d->body, &v);
		return k < 0 ? -1 : store_int(c, slot_int(c, c->lv, t, flat), k, v);
	}
	Iv *s = slot_iv(c, c->lv, t, flat);
	if (!s)
		return -1;
	const Iv *v = ev(c, d->body, s);
	if (!v)
		return -1;
	if (v != s)
		iv_copy(s, v);
	s->done = 1;
	return 0;
}

/* A reduction in progress: integer monoids fold as they go, the others collect terms from
 * base on (their temporaries on the scratch stack from mark on), feeding each full block
 * to a stream. */
typedef struct {
	const Def *d;
	bool intfold;
	bool any;
	int und;
	int64_t acc;
	size_t base, mark;
	int depth;         /* of this reduction among those in progress: its stream's slot */
	IvStream *st;      /* once the terms overflowed a block, else NULL */
} Red;

static IvStream *stream_at(Ctx *c, int depth)
{
	if (depth >= c->nstreams) {
		c->streams = mp_xrealloc(c->streams, (size_t)(depth + 1) * sizeof *c->streams);
		for (; c->nstreams <= depth; c->nstreams++)
			c->streams[c->nstreams] = NULL;
	}
	if (!c->streams[depth])
		c->streams[depth] = ivs_new(c->lv->prec);
	return c->streams[depth];
}

/* Feeds the collected terms to the stream (begun at the first block) and frees them. */
static int flush(Ctx *c, Red *red)
{
	const Def *d = red->d;
	const char *name = c->g->tensors[d->out[0]].name;
	if (!red->st) {
		red->st = stream_at(c, red->depth);
		ivs_begin(red->st, d->monoid, d->monoid == MO_TOPK ? (size_t)topk_k(d) : 0,
			  c->sh->block, c->lim, name);
	}
	size_t n = c->nterms - red->base;
	int rc = ivs_feed(&c->iv, red->st, &c->terms[red->base], &c->jv[red->base], n);
	c->nterms = red->base;
	c->top = red->mark;
	if (rc > 0)
		return stopped(c->d);
	if (rc < 0)
		return lim_oom(c->lim, c->d, (int64_t)iv_block_bytes(2 * n, c->lv->prec),
			       "the candidates of a topk");
	return 0;
}

static int term(Ctx *c, Red *red, int64_t j)
{
	if (++c->pend >= POLL) {
		int64_t w = c->pend;
		c->pend = 0;
		if (lim_poll(c->lim, 0, w))
			return stopped(c->d);
	}
	const Def *d = red->d;
	if (!red->intfold) {
		Iv *tmp = push(c);
		const Iv *v = ev(c, d->body, tmp);
		if (!v)
			return -1;
		if (v != tmp)
			c->top--;   /* tmp is still the top: ev pops what it pushes */
		add_term(c, v, j);
		return c->nterms - red->base >= c->sh->block ? flush(c, red) : 0;
	}
	int64_t v;
	int s = ev_int(c, d->body, &v);
	if (s < 0)
		return -1;
	bool first = !red->any;
	red->any = true;
	red->und |= s;
	if (red->und)
		return 0;
	bool ovf = false;
	switch (d->monoid) {
	case MO_SUM: ovf = __builtin_add_overflow(red->acc, v, &red->acc); break;
	case MO_PROD: ovf = __builtin_mul_overflow(red->acc, v, &red->acc); break;
	case MO_MAX: red->acc = first || v > red->acc ? v : red->acc; break;
	default: red->acc = first || v < red->acc ? v : red->acc; break;
	}
	return ovf ? fail(c, d->pos, "integer overflow in %s", monoid_name(d->monoid)) : 0;
}

static int loop(Ctx *c, Red *red, int lvl)
{
	const Def *d = red->d;
	const RedIndex *ri = &d->red[lvl];
	int64_t lo, hi;
	int s;
	if ((s = ev_int(c, ri->lo, &lo)) != 0 || (s = ev_int(c, ri->hi, &hi)) != 0)
		return s < 0 ? -1 : fail(c, ri->pos, "the range of %s is undecided", ri->name);
	int var = d->nlhs + lvl;
	for (int64_t j = lo; j < hi; j++) {
		c->env[var] = j;
		s = lvl + 1 < d->nred ? loop(c, red, lvl + 1) : term(c, red, j);
		if (s < 0)
			return -1;
	}
	return 0;
}

/* Runs the loops of red's reduction, then feeds the last terms to its stream if it has
 * one (a reduction of at most a block keeps them all, for the all-at-once forms). */
static int collect(Ctx *c, Red *red)
{
	red->base = c->nterms;
	red->mark = c->top;
	red->depth = c->depth++;
	int rc = loop(c, red, 0);
	c->depth--;
	if (rc == 0 && red->st && c->nterms > red->base)
		rc = flush(c, red);
	return rc;
}

static int reduce(Ctx *c, const Def *d, int64_t flat)
{
	int t = d->out[0];
	Monoid m = d->monoid;
	Red red = {.d = d, .acc = m == MO_PROD};
	red.intfold = c->lv->memo[t].isint && c->g->nodes[d->body].ty == TY_INT &&
		      (m == MO_SUM || m == MO_PROD || m == MO_MAX || m == MO_MIN);
	if (collect(c, &red) < 0)
		return -1;
	if (red.intfold) {
		if (!red.any && (m == MO_MAX || m == MO_MIN))
			return fail(c, d->pos, "%s of integers over an empty range has no value",
				    monoid_name(m));
		return store_int(c, slot_int(c, c->lv, t, flat), red.und, red.acc);
	}
	const Iv *const *tv = &c->terms[red.base];
	size_t n = c->nterms - red.base, b;
	if (m == MO_ARGMAX || m == MO_ARGMIN) {
		int64_t jv = -1;
		int k;
		if (red.st) {
			k = ivs_argbest(red.st, &jv);
		} else {
			k = iv_argbest(tv, n, m == MO_ARGMAX, &b);
			jv = k == IV_UND || n == 0 ? -1 : c->jv[red.base + b];
		}
		return store_int(c, slot_int(c, c->lv, t, flat), k == IV_UND, k == IV_UND ? -1 : jv);
	}
	Iv *s = slot_iv(c, c->lv, t, flat);
	if (!s)
		return -1;
	if (red.st)
		ivs_value(&c->iv, red.st, s);
	else
		iv_reduce(&c->iv, m, s, tv, n);
	s->done = 1;
	return 0;
}

/* topk: one unit is the whole list of K values and indices of a prefix of the left-hand
 * indices (the last one, r, ranges over the K results). */
static int topk(Ctx *c, const Def *d, int64_t unit)
{
	int64_t K = topk_k(d);
	Red red = {.d = d};
	if (collect(c, &red) < 0)
		return -1;
	int64_t n = red.st ? ivs_count(red.st) : (int64_t)(c->nterms - red.base);
	if (n < K)
		return fail(c, d->pos, "topk over a range of %lld terms, fewer than K = %lld",
			    (long long)n, (long long)K);
	if ((size_t)K > c->caporder) {
		free(c->order);
		c->order = mp_xmalloc((size_t)K * sizeof *c->order);
		c->caporder = (size_t)K;
	}
	size_t known = red.st ? ivs_topk(&c->iv, red.st, c->order)
			      : iv_topk(&c->iv, &c->terms[red.base], (size_t)n, (size_t)K, c->order);
	Level *l = c->lv;
	for (int64_t q = 0; q < K; q++) {
		int64_t flat = unit * K + q;
		bool und = (size_t)q >= known;
		const Iv *v = NULL;
		int64_t jv = 0;
		if (!und) {
			size_t o = c->order[q];
			v = red.st ? ivs_cand(red.st, o) : c->terms[red.base + o];
			jv = red.st ? ivs_cand_jv(red.st, o) : c->jv[red.base + o];
		}
		if (d->nout > 1 && store_int(c, slot_int(c, l, d->out[1], flat), und, jv) < 0)
			return -1;
		if (l->memo[d->out[0]].isint) {
			int64_t iv = und ? 0 : mpfr_get_sj(v->lo, RN);
			if (store_int(c, slot_int(c, l, d->out[0], flat), und, iv) < 0)
				return -1;
			continue;
		}
		Iv *s = slot_iv(c, l, d->out[0], flat);
		if (!s)
			return -1;
		if (und)
			iv_set_und(s);
		else
			iv_copy(s, v);
		s->done = 1;
	}
	return 0;
}

/* Computes one unit of definition di (an element; for topk a list of K) into the memo of
 * the context's level. Restores the caller's environment and stacks. */
int ex_elem(Ctx *c, int di, int64_t unit)
{
	const Def *d = &c->g->defs[di];
	int64_t saved[IR_MAXVARS];
	memcpy(saved, c->env, sizeof saved);
	int sdef = c->def, sdepth = c->depth;
	size_t mark = c->top, tmark = c->nterms;
	c->def = di;
	int last = d->nlhs;
	if (d->monoid == MO_TOPK)
		c->env[--last] = 0;
	int64_t u = unit;
	for (int k = last - 1; k >= 0; k--) {
		int64_t e = d->lhs[k].ext.value;
		c->env[k] = u % e;
		u /= e;
	}
	int rc;
	switch (d->monoid) {
	case MO_NONE: rc = plain(c, d, unit); break;
	case MO_TOPK: rc = topk(c, d, unit); break;
	default: rc = reduce(c, d, unit); break;
	}
	memcpy(c->env, saved, sizeof saved);
	c->def = sdef;
	c->depth = sdepth;
	c->top = mark;
	c->nterms = tmark;
	return rc;
}

/* Rounds element flat of tensor t into format f: 1 settled (*val), 0 not, -1 error. */
int ex_settle(Ctx *c, int t, int64_t flat, Dtype f, double *val)
{
	const Tensor *tt = &c->g->tensors[t];
	if (tt->dtype == DT_I32) {
		int64_t v = 0;
		int k = 0;
		if (tt->kind == TK_INPUT)
			v = (int64_t)ht_get(c->sh->in[t].ht, flat);
		else
			k = def_int(c, t, flat, &v);
		if (k)
			return k < 0 ? -1 : 0;
		if (f == DT_I32) {
			*val = (double)v;
			return 1;
		}
		mpfr_set_sj(c->out, v, RN);
		mpf_round(c->out, c->out, f, RN);
		*val = mpfr_get_d(c->out, RN);
		return 1;
	}
	const Iv *v = tt->kind == TK_INPUT ? input_iv(c, t, flat) : def_iv(c, t, flat);
	if (!v)
		return -1;
	if (!iv_round(&c->iv, v, f, c->out))
		return 0;
	*val = mpfr_get_d(c->out, RN);
	if (f == DT_I32 && !isfinite(*val))
		*val = 0;
	return 1;
}
