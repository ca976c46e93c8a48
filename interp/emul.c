/* interp/emul.c: emulation mode. The graph is evaluated the way a kernel with chosen
 * precisions would compute it: every operation rounded to a format, reductions accumulated
 * in a format and an order. This is the interpreter that checks precision choices; the
 * exact meaning is exact.c's business.
 *
 * Invariants
 * - Every emulated real value is a double: each format (f64 and the narrower ones, exponent
 *   range included) embeds in binary64, so tensors hold doubles whose values lie in their
 *   format.
 * - One operation is one MPFR call at the format's precision in the widest exponent range,
 *   then mpf_finish (check_range and subnormalize with the ternary value): a single correct
 *   rounding, subnormals and overflow included (numerics.md section 1). Elementary
 *   functions are MPFR's correctly rounded ones; sigmoid, which MPFR lacks, is rounded
 *   correctly by a Ziv loop on an enclosing interval. Backend allowances are the budget's
 *   business, not the emulator's.
 * - Loads convert: a value read from a tensor (an input in its dtype, a definition in its
 *   store format) is rounded to the reading definition's op format, as a kernel loading it
 *   into a register of that type would (a no-op when the op format holds every value of
 *   the stored one). So are literals (rounded once, from their exact value) and integers
 *   used as reals. A cast rounds its operand to the cast's format and nothing rounds it
 *   again: the next operation takes it as it is.
 * - Integer expressions and definitions are exact int64; an i32 tensor value that does not
 *   fit in 32 bits, an int64 overflow and `%` by zero are errors (code 2).
 * - Reductions: terms in the op format; sum and prod accumulate in the accum format, linear
 *   (left to right, starting from the first term) or pairwise (recursive halves, the first
 *   floor(n/2) terms on the left); a split reduction (EmuConfig.split) deals the terms into
 *   S partials by (j - lo) mod S of its split index j, reduces each in that order (an empty
 *   one is the identity -0 or 1) and combines p0, p1, ... in the same order, as lower.c's
 *   kernels do; max and min are exact IEEE 754-2019 maximum/minimum;
 *   logsumexp is the kernel's max-shift m + log(sum exp(x - m)) with x - m and exp in the
 *   op format, the sum, the log and the final add in the accum format (a NaN or infinite
 *   max is the result); argmax/argmin/topk compare the rounded terms (ties: smaller index,
 *   NaN wins). Stored values round to the store format, outputs once more to their dtype.
 * - Results do not depend on the thread count: a definition's elements are split among
 *   threads, each element computed by one thread from tensors complete before the
 *   definition starts; the error reported is the one at the first failing element.
 * - Memory does not grow with a reduction's length: a worker buffers at most a block of
 *   terms (MpOpts.red_block). When the buffer fills, max, min, argmax, argmin, topk and the
 *   integer monoids compact it to the state they carry (the running value, the best term,
 *   the K best: the final reduction of the buffer then sees the same terms' ranks and
 *   values); sum and prod fold the rest as it comes (streamed folds below), in the same
 *   operations and order as the buffered fold; logsumexp finishes the max over the
 *   remaining terms, then evaluates them a second time to sum exp(x - m).
 * - Subnormals: every operand and result of an operation, every loaded, literal, cast and stored
 *   value is noted when it is a subnormal of the width its operation computes in (f32 for
 *   f32, f16 and bf16; f64), into MpStats.subnormal and, per definition, into
 *   mp_emulate_defs's def_sub: a device that may flush them could compute otherwise there,
 *   and nowhere else.
 * - Limits (MpOpts): the footprint (every tensor dense, in doubles) is checked against the
 *   memory cap before anything is allocated; workers poll the deadline and report
 *   progress between elements and every 1024 terms; a limit stops the call with -2.
 */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "limit.h"
#include "mpfmt.h"

enum { ZIV_CAP = 4096, MIN_PER_THREAD = 16, POLL = 1024, DEFAULT_BLOCK = 4096 };

/* ------------------------------------------------------------ one operation */

/* MPFR variables of one thread: operands (53 bits hold any emulated value exactly) and one
 * result variable per format, at that format's precision. */
typedef struct {
	mpfr_t x[3];
	mpfr_t y[DT__COUNT];
	uint64_t ops;
	uint32_t sub;   /* MpStats.subnormal */
} Scratch;

static void scratch_init(Scratch *s)
{
	for (int i = 0; i < 3; i++)
		mpfr_init2(s->x[i], 53);
	for (int f = 0; f < DT__COUNT; f++)
		mpfr_init2(s->y[f], f == DT_I32 ? 53 : dt_info((Dtype)f)->prec);
	s->ops = 0;
	s->sub = 0;
}

/* Notes x, a value computed in (or loaded into) format f's arithmetic, when it is a
 * subnormal of the width f computes in: f64, else f32 (MpStats.subnormal). */
static inline void note(Scratch *s, Dtype f, double x)
{
	bool wide = f == DT_F64;
	if (x != 0 && fabs(x) < (wide ? 0x1p-1022 : 0x1p-126))
		s->sub |= 1u << (wide ? DT_F64 : DT_F32);
}

/* The arithmetic whose zeros a sign-losing device folds (x + 0.0 -> x, x * 0 -> 0 and
 * their kin in -, fma and /): a zero operand or result there sets MP_MET_ZERO. A zero that
 * only moves through loads, stores, casts, neg, abs, select, min and max keeps its sign on
 * such a device, and is held to the emulation there (BeFacts.nsz). */
static inline bool folds_zero(Op op)
{
	return op == OP_ADD || op == OP_SUB || op == OP_MUL || op == OP_FMA || op == OP_DIV;
}

static void scratch_clear(Scratch *s)
{
	for (int i = 0; i < 3; i++)
		mpfr_clear(s->x[i]);
	for (int f = 0; f < DT__COUNT; f++)
		mpfr_clear(s->y[f]);
}

static double finish(Scratch *s, Dtype f, int t)
{
	mpf_finish(s->y[f], t, f, MPFR_RNDN);
	return mpfr_get_d(s->y[f], MPFR_RNDN);
}

/* x (any double) rounded into format f. */
static double round_d(Scratch *s, Dtype f, double x)
{
	if (f == DT_I32)
		return nearbyint(x);
	if (f == DT_F64 || isnan(x))
		return x;
	s->ops++;
	return finish(s, f, mpfr_set_d(s->y[f], x, MPFR_RNDN));
}

/* An integer as a value of format f. */
static double round_i(Scratch *s, Dtype f, int64_t v)
{
	int64_t lim = (int64_t)1 << (f == DT_I32 ? 53 : dt_info(f)->prec);
	if (v >= -lim && v <= lim && f != DT_E4M3)
		return (double)v;   /* exact: p bits and well inside the range */
	if (f == DT_I32)
		return (double)v;
	s->ops++;
	return finish(s, f, mpfr_set_si(s->y[f], (long)v, MPFR_RNDN));
}

/* IEEE 754-2019 maximum and minimum: NaN if either is NaN, -0 below +0. */
static double max754(double a, double b)
{
	if (isnan(a) || isnan(b))
		return NAN;
	if (a == b)
		return signbit(a) ? b : a;
	return a > b ? a : b;
}

static double min754(double a, double b)
{
	if (isnan(a) || isnan(b))
		return NAN;
	if (a == b)
		return signbit(a) ? a : b;
	return a < b ? a : b;
}

/* 1/(1+exp(-a)) correctly rounded into f: both ends of an enclosing interval at working
 * precision w round to the same value of f, or w doubles. Exact cases (a = 0, +-inf) give a
 * point interval at once; other values are irrational, so the loop ends. */
static double sigmoid(Scratch *s, Dtype f, double a)
{
	if (isnan(a))
		return NAN;
	mpfr_t lo, hi, t;
	mpfr_prec_t p = dt_info(f)->prec;
	mpfr_inits2(p + 32, lo, hi, t, (mpfr_ptr)0);
	mpfr_set_d(s->x[0], -a, MPFR_RNDN);
	double r = NAN;
	for (mpfr_prec_t w = p + 32;; w *= 2) {
		mpfr_set_prec(lo, w);
		mpfr_set_prec(hi, w);
		mpfr_set_prec(t, w);
		mpfr_exp(t, s->x[0], MPFR_RNDU);
		mpfr_add_ui(t, t, 1, MPFR_RNDU);
		mpfr_ui_div(lo, 1, t, MPFR_RNDD);
		mpfr_exp(t, s->x[0], MPFR_RNDD);
		mpfr_add_ui(t, t, 1, MPFR_RNDD);
		mpfr_ui_div(hi, 1, t, MPFR_RNDU);
		s->ops += 6;
		mpf_round(lo, lo, f, MPFR_RNDN);
		mpf_round(hi, hi, f, MPFR_RNDN);
		if (mpfr_equal_p(lo, hi) || w >= ZIV_CAP) {
			r = mpfr_get_d(hi, MPFR_RNDN);
			break;
		}
	}
	mpfr_clears(lo, hi, t, (mpfr_ptr)0);
	return r;
}

/* op(a, b, c) computed at format f's precision in the widest range, rounded once into f.
 * Casts round a into their own format. */
static double op_raw(Scratch *s, Op op, Dtype f, double a, double b, double c)
{
	mpfr_ptr y = s->y[f], x = s->x[0], xb = s->x[1], xc = s->x[2];
	const mpfr_rnd_t R = MPFR_RNDN;
	int t;
	switch (op) {
	case OP_MAX: return round_d(s, f, max754(a, b));
	case OP_MIN: return round_d(s, f, min754(a, b));
	case OP_SIGMOID: return sigmoid(s, f, a);
	case OP_CAST_F64: case OP_CAST_F32: case OP_CAST_F16: case OP_CAST_BF16:
		return round_d(s, op_cast_dtype(op), a);
	default: break;
	}
	int arity = op_info(op)->arity;
	mpfr_set_d(x, a, R);
	if (arity > 1)
		mpfr_set_d(xb, b, R);
	if (arity > 2)
		mpfr_set_d(xc, c, R);
	s->ops++;
	const MpOpFn *m = mp_op_fn(op);   /* ops.def's mpfr column */
	/* not a real operation: the ops above, or none of the emulator's */
	IR_ASSERT(arity == 1 ? m->f1 != NULL : arity == 2 ? m->f2 != NULL : m->f3 != NULL);
	if (arity == 1)
		t = m->f1(y, x, R);
	else if (arity == 2)
		t = m->f2(y, x, xb, R);
	else
		t = m->f3(y, x, xb, xc, R);
	return finish(s, f, t);
}

/* op_raw, its operands and result noted (note()). */
static double op1(Scratch *s, Op op, Dtype f, double a, double b, double c)
{
	double r = op_raw(s, op, f, a, b, c);
	const double v[3] = {a, b, c};
	bool zero = r == 0;
	for (int i = 0; i < op_info(op)->arity; i++) {
		note(s, f, v[i]);
		zero |= v[i] == 0;
	}
	note(s, f, r);
	if (zero && folds_zero(op))
		s->sub |= MP_MET_ZERO;
	return r;
}

/* Runs fn with the widest exponent range, restoring the caller's range afterwards. */
double mp_emul_op(Op op, Dtype f, double a, double b, double c)
{
	IR_ASSERT(f >= 0 && f < DT__COUNT && f != DT_I32);
	mpfr_exp_t emin = mpfr_get_emin(), emax = mpfr_get_emax();
	mpf_widest_range();
	Scratch s;
	scratch_init(&s);
	double r = op1(&s, op, f, a, b, c);
	scratch_clear(&s);
	mpfr_set_emin(emin);
	mpfr_set_emax(emax);
	return r;
}

double mp_round_to(Dtype f, double x)
{
	IR_ASSERT(f >= 0 && f < DT__COUNT);
	if (f == DT_I32)
		return nearbyint(x);
	mpfr_exp_t emin = mpfr_get_emin(), emax = mpfr_get_emax();
	mpf_widest_range();
	mpfr_t y;
	mpfr_init2(y, dt_info(f)->prec);
	int t = mpfr_set_d(y, x, MPFR_RNDN);
	mpf_finish(y, t, f, MPFR_RNDN);
	double r = mpfr_get_d(y, MPFR_RNDN);
	mpfr_clear(y);
	mpfr_set_emin(emin);
	mpfr_set_emax(emax);
	return r;
}

/* ------------------------------------------------------------ graph state */

/* The evaluation of one graph: every tensor densely, in C order. */
typedef struct {
	const Graph *g;
	double **rv;                   /* real tensors: values (NULL for i32 tensors) */
	int64_t **iv;                  /* i32 tensors: values (NULL for real tensors) */
	Dtype *tfmt;                   /* the format the values of real tensor t lie in */
	int64_t (*stride)[IR_MAXRANK];
	double *lit;                   /* lit[f * nnodes + r]: literal node r rounded into f */
	bool fits[DT__COUNT][DT__COUNT];  /* every value of format a is one of format b */
} Emu;

/* A pairwise fold of a known number of terms, fed one at a time: the frames of the nodes
 * on the path to the next leaf (a node of len >= 2 waits for its left half, then for its
 * right half, holding the left's value). */
typedef struct {
	int64_t len;
	bool right;
	double left;
} Frame;

/* One partial of a streamed sum or product (the only one without a split). */
typedef struct {
	int64_t n, seen;   /* terms it will get (pairwise; counted first), and got */
	double acc;        /* linear: the value so far; pairwise: the value once complete */
	Frame *fr;
	int depth;
} Partial;

/* How a worker takes the terms of the current element. */
enum { TAKE_BUFFER, TAKE_LSE_MAX, TAKE_LSE_SUM };

/* One thread's share of one definition. */
typedef struct {
	Emu *E;
	const Def *def;
	Dtype opf, accf, stf;
	Order order;
	int64_t S;                     /* split factor (1: none) of reduction index q */
	int q;
	int64_t qlo;                   /* the start of q's range for the current terms */
	int64_t begin, end;
	int64_t vars[IR_MAXVARS];
	Scratch s;
	/* reduction terms of the current element */
	double *tv;
	int64_t *ti, *tix;
	int64_t *tp;                   /* partial of each term (split reductions) */
	size_t n, cap;
	double *sbuf;                  /* split folds: terms regrouped by partial, then partials */
	size_t *scnt;
	size_t capsbuf;
	/* streamed reductions */
	Limits *lim;
	size_t block, limit;           /* block: MpOpts.red_block; limit: the buffer's size now */
	int64_t pend;                  /* terms not yet counted in lim */
	int64_t total;                 /* terms of the current element */
	int take;                      /* TAKE_* */
	bool folding;                  /* a sum or product is folded as its terms come */
	double lse_m;                  /* logsumexp: the max so far, then the max */
	Partial *part;
	size_t cappart;
	Frame *frames;
	size_t capframes;
	bool failed;
	int64_t fail_at;
	Diag d;
	/* an online pass (online_element): the definition's set and role (-1: computed as
	 * written); reads of the max (mean) give ovv and record their indices in ovidx; reads
	 * of plain definitions that depend on a member (odep) are evaluated where read */
	const Schedule *sched;
	OnPlan on;
	int orole;
	const bool *odep;
	int ovt;
	double ovv;
	int64_t ovidx[IR_MAXRANK];
	bool ovseen;
	/* an mma definition (docs/mma.md): the unit, the factors of its terms, and the block
	 * being gathered (mn products) onto the chain's value macc; mu NULL otherwise */
	const MmaUnit *mu;
	Ref mfa, mfb;
	double macc;
	double ma[64], mb[64];
	int mn;
} Worker;

static bool fmt_fits(Dtype a, Dtype b)
{
	if (a == b)
		return true;
	const DtypeInfo *x = dt_info(a), *y = dt_info(b);
	if (a == DT_I32 || b == DT_I32 || !y->has_inf)
		return false;
	return x->prec <= y->prec && x->emin >= y->emin && x->emax <= y->emax;
}

/* Rounds every literal of g into every real format, once, from its exact value. */
static void round_literals(Emu *E, Scratch *s)
{
	const Graph *g = E->g;
	for (uint32_t r = 1; r < g->nnodes; r++) {
		const Node *n = &g->nodes[r];
		if (n->kind != NK_NUM)
			continue;
		const Lit *l = &g->lits[n->u.lit];
		for (int f = 0; f < DT__COUNT; f++) {
			if (f == DT_I32)
				continue;
			char *end;
			int t = mpfr_strtofr(s->y[f], l->text, &end, 0, MPFR_RNDN);
			if (*end)   /* not MPFR's syntax: the parser's nearest double */
				t = mpfr_set_d(s->y[f], l->approx, MPFR_RNDN);
			E->lit[(size_t)f * g->nnodes + r] = finish(s, (Dtype)f, t);
		}
	}
}

/* ------------------------------------------------------------ errors */

/* "d[1, 2] (j = 5)": where worker w is in its definition. */
static void where(const Worker *w, char *buf, size_t cap)
{
	const Graph *g = w->E->g;
	const Def *D = w->def;
	size_t k = (size_t)snprintf(buf, cap, "%s[", g->tensors[D->out[0]].name);
	for (int i = 0; i < D->nlhs && k < cap; i++)
		k += (size_t)snprintf(buf + k, cap - k, "%s%lld", i ? ", " : "",
				      (long long)w->vars[i]);
	if (k < cap)
		k += (size_t)snprintf(buf + k, cap - k, "]");
	for (int r = 0; r < D->nred && k < cap; r++)
		k += (size_t)snprintf(buf + k, cap - k, "%s%s = %lld", r ? ", " : " (",
				      D->red[r].name, (long long)w->vars[D->nlhs + r]);
	if (D->nred && k < cap)
		snprintf(buf + k, cap - k, ")");
}

/* Records an error at node position pos (or the definition's) with code. */
__attribute__((format(printf, 4, 5)))
static void fail(Worker *w, SrcPos pos, int code, const char *fmt, ...)
{
	if (w->failed)
		return;
	char msg[512], at[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	where(w, at, sizeof at);
	const Graph *g = w->E->g;
	if (pos.line <= 0)
		pos = w->def->pos;
	diag_at(&w->d, pos, g->src, g->srclen, "%s, at %s", msg, at);
	w->d.code = code;
	w->failed = true;
}

/* ------------------------------------------------------------ expressions */

static double eval_real(Worker *w, Ref r);
static int64_t eval_int(Worker *w, Ref r);
static bool eval_bool(Worker *w, Ref r);

/* Offset of read n in its tensor: 1 in bounds, 0 outside with a `??` default, -1 error. */
static int read_at(Worker *w, const Node *n, int64_t *off)
{
	const Graph *g = w->E->g;
	uint32_t t = n->u.read.tensor;
	const Ref *ix = ir_read_idx(g, n);
	int64_t o = 0;
	for (uint32_t i = 0; i < n->u.read.n; i++) {
		int64_t v = eval_int(w, ix[i]);
		if (w->failed)
			return -1;
		int64_t ext = g->tensors[t].dims[i].value;
		if (v >= 0 && v < ext) {
			o += v * w->E->stride[t][i];
			continue;
		}
		if (n->u.read.pad)
			return 0;
		const Node *m = ir_node(g, ix[i]);
		if (m->kind == NK_READ)
			fail(w, n->pos, 2, "indirect read of '%s' out of range: index %u (read from "
			     "'%s') is %lld, outside [0, %lld)", g->tensors[t].name, i,
			     g->tensors[m->u.read.tensor].name, (long long)v, (long long)ext);
		else
			fail(w, n->pos, 2, "read of '%s' out of range: index %u is %lld, outside "
			     "[0, %lld)", g->tensors[t].name, i, (long long)v, (long long)ext);
		return -1;
	}
	*off = o;
	return 1;
}

/* A stored value loaded into a register of the op format. */
static double load(Worker *w, Dtype from, double v)
{
	double x = w->E->fits[from][w->opf] ? v : round_d(&w->s, w->opf, v);
	note(&w->s, w->opf, x);
	return x;
}

static double plain_at(Worker *w, const Node *n);
static Dtype op_of(const Worker *w, int d);

static double read_real(Worker *w, const Node *n)
{
	if (w->odep && (int)n->u.read.tensor == w->ovt && !n->u.read.pad) {
		const Ref *ix = ir_read_idx(w->E->g, n);
		for (uint32_t i = 0; i < n->u.read.n; i++)
			w->ovidx[i] = eval_int(w, ix[i]);
		w->ovseen = true;
		/* the state is a value of the member's op format (the kernel's ovf) */
		Dtype from = op_of(w, w->E->g->tensors[n->u.read.tensor].def);
		double x = w->E->fits[from][w->opf] ? w->ovv : round_d(&w->s, w->opf, w->ovv);
		note(&w->s, w->opf, x);
		return x;
	}
	if (w->odep && w->odep[n->u.read.tensor] && !n->u.read.pad)
		return plain_at(w, n);
	int64_t off = 0;
	int k = read_at(w, n, &off);
	if (k < 0)
		return NAN;
	if (k == 0)
		return eval_real(w, n->u.read.pad);
	uint32_t t = n->u.read.tensor;
	if (w->E->iv[t])
		return round_i(&w->s, w->opf, w->E->iv[t][off]);
	return load(w, w->E->tfmt[t], w->E->rv[t][off]);
}

static double op_real(Worker *w, const Node *n)
{
	const Graph *g = w->E->g;
	Op op = (Op)n->op;
	if (op == OP_SELECT) {
		bool c = eval_bool(w, n->a[0]);
		double v = eval_real(w, n->a[c ? 1 : 2]);
		if (w->odep && w->ovt >= 0 && !w->ovseen) {
			/* an online pass's term `cond ? exp(x - m) : 0` where cond is false: the
			 * row of m, which the pass needs at every j, is read in the other branch
			 * only; its value is not used (nor its formats noted) */
			uint64_t ops = w->s.ops;
			uint32_t sub = w->s.sub;
			(void)eval_real(w, n->a[c ? 2 : 1]);
			w->s.ops = ops, w->s.sub = sub;
		}
		return v;
	}
	Dtype cf = op_cast_dtype(op);
	if (cf != DT_NONE) {   /* round the operand straight into the cast's format */
		const Node *a = ir_node(g, n->a[0]);
		double x;
		if (a->kind == NK_NUM)
			x = w->E->lit[(size_t)cf * g->nnodes + n->a[0]];
		else if (a->ty == TY_INT)
			x = round_i(&w->s, cf, eval_int(w, n->a[0]));
		else
			x = round_d(&w->s, cf, eval_real(w, n->a[0]));
		note(&w->s, cf, x);       /* the conversion's result, */
		note(&w->s, w->opf, x);   /* kept in the op type */
		return x;
	}
	double x[3] = {0, 0, 0};
	int arity = op_info(op)->arity;
	for (int i = 0; i < arity; i++)
		x[i] = eval_real(w, n->a[i]);
	if (w->failed)
		return NAN;
	return op1(&w->s, op, w->opf, x[0], x[1], x[2]);
}

static double eval_real(Worker *w, Ref r)
{
	const Graph *g = w->E->g;
	const Node *n = ir_node(g, r);
	if (n->ty == TY_INT)
		return round_i(&w->s, w->opf, eval_int(w, r));
	switch (n->kind) {
	case NK_NUM: {
		double x = w->E->lit[(size_t)w->opf * g->nnodes + r];
		note(&w->s, w->opf, x);
		return x;
	}
	case NK_READ: return read_real(w, n);
	case NK_OP: return op_real(w, n);
	default:
		fail(w, n->pos, 3, "internal: node kind %d is not a real value", n->kind);
		return NAN;
	}
}

int mp_int_op(Op op, int64_t a, int64_t b, int64_t *v, char *why, size_t n)
{
	bool ovf = false;
	*v = 0;
	switch (op) {
	case OP_NEG: ovf = __builtin_sub_overflow((int64_t)0, a, v); break;
	case OP_ADD: ovf = __builtin_add_overflow(a, b, v); break;
	case OP_SUB: ovf = __builtin_sub_overflow(a, b, v); break;
	case OP_MUL: ovf = __builtin_mul_overflow(a, b, v); break;
	case OP_ABS: ovf = a == INT64_MIN; *v = a < 0 ? -a : a; break;
	case OP_MAX: *v = a > b ? a : b; break;
	case OP_MIN: *v = a < b ? a : b; break;
	case OP_IDIV: case OP_MOD:
		if (b == 0) {
			snprintf(why, n, "integer %s by zero", op == OP_MOD ? "%" : "division");
			return 2;
		}
		if (b == -1) {   /* avoids INT64_MIN / -1 */
			*v = op == OP_MOD ? 0 : -a;
			return 0;
		}
		*v = op == OP_MOD ? a % b : a / b;
		if (op == OP_MOD && *v < 0)
			*v += b < 0 ? -b : b;
		else if (op == OP_IDIV && a % b != 0 && ((a < 0) != (b < 0)))
			(*v)--;
		break;
	default:
		snprintf(why, n, "internal: %s is not an integer operation", op_info(op)->name);
		return 3;
	}
	if (ovf) {
		snprintf(why, n, "integer overflow in '%s'", op_info(op)->spelling);
		return 2;
	}
	return 0;
}

bool mp_int_compare(Op op, int64_t a, int64_t b)
{
	switch (op) {
	case OP_EQ: return a == b;
	case OP_NE: return a != b;
	case OP_LT: return a < b;
	case OP_LE: return a <= b;
	case OP_GT: return a > b;
	default: return a >= b;
	}
}

bool mp_int_reduce(Monoid m, int64_t *acc, int64_t x)
{
	switch (m) {
	case MO_SUM: return __builtin_add_overflow(*acc, x, acc);
	case MO_PROD: return __builtin_mul_overflow(*acc, x, acc);
	case MO_MAX: *acc = x > *acc ? x : *acc; return false;
	case MO_MIN: *acc = x < *acc ? x : *acc; return false;
	default: IR_ASSERT(!"mp_int_reduce: not an integer monoid");
	}
}

static int64_t op_int(Worker *w, const Node *n)
{
	Op op = (Op)n->op;
	if (op == OP_SELECT)
		return eval_bool(w, n->a[0]) ? eval_int(w, n->a[1]) : eval_int(w, n->a[2]);
	int64_t a = eval_int(w, n->a[0]), b = 0, v;
	if (op_info(op)->arity > 1)
		b = eval_int(w, n->a[1]);
	if (w->failed)
		return 0;
	char why[128];
	int code = mp_int_op(op, a, b, &v, why, sizeof why);
	if (code)
		fail(w, n->pos, code, "%s", why);
	return v;
}

static int64_t eval_int(Worker *w, Ref r)
{
	const Graph *g = w->E->g;
	const Node *n = ir_node(g, r);
	switch (n->kind) {
	case NK_INT: return n->u.ival;
	case NK_VAR: return w->vars[n->u.var];
	case NK_SIZE: return g->sizes[n->u.size].value;
	case NK_OP: return op_int(w, n);
	case NK_READ: {
		int64_t off = 0;
		int k = read_at(w, n, &off);
		if (k <= 0)
			return k == 0 ? eval_int(w, n->u.read.pad) : 0;
		const int64_t *iv = w->E->iv[n->u.read.tensor];
		if (!iv) {
			fail(w, n->pos, 3, "internal: integer read of a real tensor");
			return 0;
		}
		return iv[off];
	}
	default:
		fail(w, n->pos, 3, "internal: a real literal where an integer belongs");
		return 0;
	}
}

static bool compare(Op op, double a, double b)
{
	switch (op) {
	case OP_EQ: return a == b;
	case OP_NE: return a != b;
	case OP_LT: return a < b;
	case OP_LE: return a <= b;
	case OP_GT: return a > b;
	default: return a >= b;
	}
}

static bool eval_bool(Worker *w, Ref r)
{
	const Graph *g = w->E->g;
	const Node *n = ir_node(g, r);
	if (n->kind != NK_OP) {
		fail(w, n->pos, 3, "internal: not a boolean");
		return false;
	}
	Op op = (Op)n->op;
	switch (op) {
	case OP_NOT: return !eval_bool(w, n->a[0]);
	case OP_AND: return eval_bool(w, n->a[0]) && eval_bool(w, n->a[1]);
	case OP_OR: return eval_bool(w, n->a[0]) || eval_bool(w, n->a[1]);
	case OP_SELECT:
		return eval_bool(w, n->a[0]) ? eval_bool(w, n->a[1]) : eval_bool(w, n->a[2]);
	default: break;
	}
	if (!(op_info(op)->flags & OPF_CMP)) {
		fail(w, n->pos, 3, "internal: %s is not a boolean operation", op_info(op)->name);
		return false;
	}
	if (ir_node(g, n->a[0])->ty == TY_INT && ir_node(g, n->a[1])->ty == TY_INT) {
		int64_t a = eval_int(w, n->a[0]), b = eval_int(w, n->a[1]);
		return mp_int_compare(op, a, b);
	}
	double a = eval_real(w, n->a[0]), b = eval_real(w, n->a[1]);
	return compare(op, a, b);
}

/* ------------------------------------------------------------ reductions */

static void compact(Worker *w, bool ints);
static void partial_add(Worker *w, Op op, Partial *p, double x);

/* A limit stopped the evaluation (its message replaces this one: lim_diag). */
static void stop(Worker *w)
{
	fail(w, (SrcPos){0}, 2, "the evaluation stopped at a limit");
}

/* The gathered products as one fused dot-add of the unit onto the chain's value. */
static void mma_flush(Worker *w)
{
	if (!w->mn)
		return;
	w->macc = mma_fdpa(w->mu, w->ma, w->mb, w->mn, w->macc);
	note(&w->s, DT_F32, w->macc);
	w->s.ops += (uint64_t)w->mn;
	w->mn = 0;
}

static void push_term(Worker *w, bool ints)
{
	const Def *D = w->def;
	if (++w->pend >= POLL) {
		int64_t k = w->pend;
		w->pend = 0;
		if (lim_poll(w->lim, 0, k)) {
			stop(w);
			return;
		}
	}
	if (w->mu) {   /* a product of the unit's block; a full block joins the chain */
		w->total++;
		w->ma[w->mn] = eval_real(w, w->mfa);
		w->mb[w->mn] = eval_real(w, w->mfb);
		if (++w->mn == w->mu->block)
			mma_flush(w);
		return;
	}
	int64_t part = w->S > 1 ? (w->vars[D->nlhs + w->q] - w->qlo) % w->S : 0;
	w->total++;
	if (w->take != TAKE_BUFFER) {   /* logsumexp of more terms than a buffer */
		double x = eval_real(w, D->body);
		if (w->take == TAKE_LSE_MAX)
			w->lse_m = max754(w->lse_m, x);
		else
			partial_add(w, OP_ADD, &w->part[part], op1(&w->s, OP_EXP, w->opf,
					op1(&w->s, OP_SUB, w->opf, x, w->lse_m, 0), 0, 0));
		return;
	}
	if (w->n == w->cap) {
		w->cap = w->cap ? 2 * w->cap : 64;
		w->tv = mp_xrealloc(w->tv, w->cap * sizeof *w->tv);
		w->ti = mp_xrealloc(w->ti, w->cap * sizeof *w->ti);
		w->tix = mp_xrealloc(w->tix, w->cap * sizeof *w->tix);
		w->tp = mp_xrealloc(w->tp, w->cap * sizeof *w->tp);
	}
	if (ints)
		w->ti[w->n] = eval_int(w, D->body);
	else
		w->tv[w->n] = eval_real(w, D->body);
	w->tix[w->n] = w->vars[D->nlhs];   /* the (first) reduction index */
	w->tp[w->n] = part;
	if (++w->n >= w->limit && !w->failed)
		compact(w, ints);
}

/* Evaluates the body at every point of reduction indices r.. in order, outer first. */
static void collect(Worker *w, int r, bool ints)
{
	const Def *D = w->def;
	if (r == D->nred) {
		push_term(w, ints);
		return;
	}
	int64_t lo = eval_int(w, D->red[r].lo), hi = eval_int(w, D->red[r].hi);
	if (r == w->q)
		w->qlo = lo;
	for (int64_t v = lo; v < hi && !w->failed; v++) {
		w->vars[D->nlhs + r] = v;
		collect(w, r + 1, ints);
	}
}

static double pairwise(Worker *w, Op op, const double *t, size_t n)
{
	if (n == 1)
		return round_d(&w->s, w->accf, t[0]);
	size_t h = n / 2;
	double a = pairwise(w, op, t, h), b = pairwise(w, op, t + h, n - h);
	return op1(&w->s, op, w->accf, a, b, 0);
}

/* The S partials of a split reduction combined in the definition's order. */
static double combine(Worker *w, Op op, const double *part, size_t S)
{
	if (w->order == ORDER_PAIRWISE)
		return pairwise(w, op, part, S);
	double acc = part[0];
	for (size_t s = 1; s < S; s++)
		acc = op1(&w->s, op, w->accf, acc, part[s], 0);
	return acc;
}

/* Sum or product of t[0..n-1] in the accum format and order (n >= 1). */
static double fold1(Worker *w, Op op, const double *t, size_t n)
{
	if (w->order == ORDER_PAIRWISE)
		return pairwise(w, op, t, n);
	double acc = round_d(&w->s, w->accf, t[0]);
	for (size_t i = 1; i < n; i++)
		acc = op1(&w->s, op, w->accf, acc, t[i], 0);
	return acc;
}

/* The same, split: term i goes to partial tp[i]; a stable counting sort regroups the terms
 * (each partial keeps their order), then the S partials are combined in the same order. */
static double fold(Worker *w, Op op, const double *t, size_t n)
{
	if (w->S <= 1)
		return fold1(w, op, t, n);
	size_t S = (size_t)w->S;
	if (w->capsbuf < n + S) {
		w->capsbuf = n + S;
		w->sbuf = mp_xrealloc(w->sbuf, w->capsbuf * sizeof *w->sbuf);
		w->scnt = mp_xrealloc(w->scnt, (w->capsbuf + 1) * sizeof *w->scnt);
	}
	size_t *at = w->scnt;   /* at[s]: where partial s's next term goes */
	memset(at, 0, (S + 1) * sizeof *at);
	for (size_t i = 0; i < n; i++)
		at[w->tp[i] + 1]++;
	for (size_t s = 1; s <= S; s++)
		at[s] += at[s - 1];
	double *grouped = w->sbuf, *part = w->sbuf + n;
	for (size_t i = 0; i < n; i++)
		grouped[at[w->tp[i]]++] = t[i];
	/* now at[s] is the end of partial s, at[s - 1] (or 0) its start */
	for (size_t s = 0; s < S; s++) {
		size_t b = s ? at[s - 1] : 0, m = at[s] - b;
		part[s] = m ? fold1(w, op, grouped + b, m) : (op == OP_ADD ? -0.0 : 1.0);
	}
	return combine(w, op, part, S);
}

static double logsumexp(Worker *w, double *t, size_t n)
{
	double m = t[0];
	for (size_t i = 1; i < n; i++)
		m = max754(m, t[i]);
	if (!isfinite(m))
		return m;
	for (size_t i = 0; i < n; i++)
		t[i] = op1(&w->s, OP_EXP, w->opf, op1(&w->s, OP_SUB, w->opf, t[i], m, 0), 0, 0);
	double s = fold(w, OP_ADD, t, n);
	return op1(&w->s, OP_ADD, w->accf, m, op1(&w->s, OP_LOG, w->accf, s, 0, 0), 0);
}

static double fold_end(Worker *w, Op op);
static double lse_stream(Worker *w);

static double reduce_real(Worker *w)
{
	double *t = w->tv;
	size_t n = w->n;
	if (w->folding)
		return fold_end(w, w->def->monoid == MO_SUM ? OP_ADD : OP_MUL);
	if (w->take == TAKE_LSE_MAX)
		return lse_stream(w);
	switch (w->def->monoid) {
	case MO_SUM: return n ? fold(w, OP_ADD, t, n) : 0.0;
	case MO_PROD: return n ? fold(w, OP_MUL, t, n) : 1.0;
	case MO_MAX: case MO_MIN: {
		bool mx = w->def->monoid == MO_MAX;
		double acc = mx ? -INFINITY : INFINITY;
		for (size_t i = 0; i < n; i++)
			acc = mx ? max754(acc, t[i]) : min754(acc, t[i]);
		return round_d(&w->s, w->accf, acc);
	}
	case MO_LOGSUMEXP: return n ? logsumexp(w, t, n) : -INFINITY;
	default: IR_ASSERT(!"reduce_real: not a real monoid");
	}
}

static int64_t reduce_int(Worker *w)
{
	Monoid m = w->def->monoid;
	int64_t acc = m == MO_PROD ? 1 : m == MO_MAX ? INT64_MIN : m == MO_MIN ? INT64_MAX : 0;
	if (w->n == 0 && (m == MO_MAX || m == MO_MIN)) {
		fail(w, w->def->pos, 2, "integer %s over an empty range has no value",
		     monoid_name(m));
		return 0;
	}
	for (size_t i = 0; i < w->n; i++) {
		if (mp_int_reduce(m, &acc, w->ti[i])) {
			fail(w, w->def->pos, 2, "integer overflow in %s", monoid_name(m));
			return 0;
		}
	}
	return acc;
}

/* Does term i rank before term j (larger for max, smaller for min; a NaN first; ties and
 * NaN against NaN by the smaller index)? -0 and +0 tie. */
static bool ranks_before(const Worker *w, bool ints, int dir, size_t i, size_t j)
{
	if (ints) {
		if (w->ti[i] != w->ti[j])
			return dir > 0 ? w->ti[i] > w->ti[j] : w->ti[i] < w->ti[j];
	} else {
		double a = w->tv[i], b = w->tv[j];
		if (isnan(a) != isnan(b))
			return isnan(a);
		if (!isnan(a) && a != b)
			return dir > 0 ? a > b : a < b;
	}
	return w->tix[i] < w->tix[j];
}

static int64_t argbest(const Worker *w, bool ints, int dir)
{
	if (w->n == 0)
		return -1;
	size_t best = 0;
	for (size_t i = 1; i < w->n; i++)
		if (ranks_before(w, ints, dir, i, best))
			best = i;
	return w->tix[best];
}

/* ------------------------------------------------------------ streamed reductions */

/* Pushes the frames of the left spine of a node of len terms (pairwise: the left half of
 * a node of len terms has len / 2 of them, as in pairwise()). */
static void descend(Partial *p, int64_t len)
{
	while (len >= 2) {
		p->fr[p->depth++] = (Frame){len, false, 0};
		len /= 2;
	}
}

/* One more term x of partial p, folded as fold1 folds it. */
static void partial_add(Worker *w, Op op, Partial *p, double x)
{
	p->seen++;
	if (w->order != ORDER_PAIRWISE) {
		p->acc = p->seen > 1 ? op1(&w->s, op, w->accf, p->acc, x, 0) : round_d(&w->s, w->accf, x);
		return;
	}
	double v = round_d(&w->s, w->accf, x);   /* a leaf */
	while (p->depth > 0) {
		Frame *f = &p->fr[p->depth - 1];
		if (!f->right) {
			f->left = v;
			f->right = true;
			descend(p, f->len - f->len / 2);
			return;
		}
		v = op1(&w->s, op, w->accf, f->left, v, 0);
		p->depth--;
	}
	p->acc = v;   /* the root is complete */
}

/* Counts the terms of each partial from reduction index r on (the innermost level by
 * arithmetic). qlo: the start of the split index's range. */
static void count_terms(Worker *w, int r, int64_t qlo)
{
	const Def *D = w->def;
	int64_t lo = eval_int(w, D->red[r].lo), hi = eval_int(w, D->red[r].hi);
	if (w->failed)
		return;
	if (r == w->q)
		qlo = lo;
	if (r + 1 < D->nred) {
		for (int64_t v = lo; v < hi && !w->failed; v++) {
			w->vars[D->nlhs + r] = v;
			count_terms(w, r + 1, qlo);
		}
		return;
	}
	if (hi <= lo)
		return;
	if (w->S <= 1) {
		w->part[0].n += hi - lo;
	} else if (r == w->q) {   /* j - lo = s, s + S, ... below hi - lo */
		for (int64_t s = 0; s < w->S && s < hi - lo; s++)
			w->part[s].n += (hi - lo - s + w->S - 1) / w->S;
	} else {
		w->part[(w->vars[D->nlhs + w->q] - qlo) % w->S].n += hi - lo;
	}
}

/* Starts folding the current element's sum or product as its terms come: false when the
 * pairwise tree cannot be known (counting the terms met an error the evaluation has not
 * reached yet: the buffer then keeps every term, as before). */
static bool fold_start(Worker *w)
{
	size_t S = (size_t)w->S;
	if (S > w->cappart) {
		w->part = mp_xrealloc(w->part, S * sizeof *w->part);
		w->cappart = S;
	}
	memset(w->part, 0, S * sizeof *w->part);
	if (w->order != ORDER_PAIRWISE)
		return true;
	int64_t saved[IR_MAXVARS], qlo = w->qlo;
	memcpy(saved, w->vars, sizeof saved);
	count_terms(w, 0, 0);
	memcpy(w->vars, saved, sizeof saved);
	w->qlo = qlo;
	if (w->failed) {
		w->failed = false;
		diag_clear(&w->d);
		return false;
	}
	size_t nf = 0;
	for (size_t s = 0; s < S; s++)
		nf += 64 - (size_t)__builtin_clzll((unsigned long long)w->part[s].n | 1);
	if (nf > w->capframes) {
		w->frames = mp_xrealloc(w->frames, nf * sizeof *w->frames);
		w->capframes = nf;
	}
	for (size_t s = 0, at = 0; s < S; s++) {
		w->part[s].fr = w->frames + at;
		at += 64 - (size_t)__builtin_clzll((unsigned long long)w->part[s].n | 1);
		descend(&w->part[s], w->part[s].n);
	}
	return true;
}

/* The streamed fold's value: the buffer's terms folded in, the partials combined as fold()
 * combines them. */
static double fold_end(Worker *w, Op op)
{
	for (size_t i = 0; i < w->n; i++)
		partial_add(w, op, &w->part[w->tp[i]], w->tv[i]);
	w->n = 0;
	size_t S = (size_t)w->S;
	for (size_t s = 0; w->order == ORDER_PAIRWISE && s < S; s++)
		IR_ASSERT(w->part[s].seen == w->part[s].n && w->part[s].depth == 0);
	if (S <= 1)
		return w->part[0].acc;
	if (w->capsbuf < S) {
		w->capsbuf = S;
		w->sbuf = mp_xrealloc(w->sbuf, S * sizeof *w->sbuf);
		w->scnt = mp_xrealloc(w->scnt, (S + 1) * sizeof *w->scnt);
	}
	double *part = w->sbuf;
	for (size_t s = 0; s < S; s++)
		part[s] = w->part[s].seen ? w->part[s].acc : (op == OP_ADD ? -0.0 : 1.0);
	return combine(w, op, part, S);
}

/* logsumexp of more terms than a buffer: the max is complete (lse_m); the terms are
 * evaluated again, exp(x - m) folded as they come. */
static double lse_stream(Worker *w)
{
	double m = w->lse_m;
	if (!isfinite(m))
		return m;
	if (!fold_start(w))
		IR_ASSERT(!"lse_stream: the first pass evaluated every bound");
	w->take = TAKE_LSE_SUM;
	collect(w, 0, false);
	if (w->failed)
		return NAN;
	double s = fold_end(w, OP_ADD);
	return op1(&w->s, OP_ADD, w->accf, m, op1(&w->s, OP_LOG, w->accf, s, 0, 0), 0);
}

static void swap_terms(Worker *w, bool ints, size_t i, size_t j);

/* The buffer is full: reduce it to what the reduction carries (see the file's head). */
static void compact(Worker *w, bool ints)
{
	const Def *D = w->def;
	Monoid m = D->monoid;
	bool iacc = w->E->iv[D->out[0]] && ints && m != MO_ARGMAX && m != MO_ARGMIN && m != MO_TOPK;
	if (iacc) {   /* integer sum, prod, max, min: the running value */
		int64_t acc = reduce_int(w);
		w->ti[0] = acc;
		w->n = 1;
	} else if (m == MO_MAX || m == MO_MIN) {
		double acc = m == MO_MAX ? -INFINITY : INFINITY;
		for (size_t i = 0; i < w->n; i++)
			acc = m == MO_MAX ? max754(acc, w->tv[i]) : min754(acc, w->tv[i]);
		w->tv[0] = acc;
		w->n = 1;
	} else if (m == MO_ARGMAX || m == MO_ARGMIN || m == MO_TOPK) {
		/* the best (K best) terms, ranked as the final selection ranks them */
		size_t K = m == MO_TOPK ? (size_t)w->E->g->tensors[D->out[0]].dims[D->nlhs - 1].value : 1;
		int dir = m == MO_ARGMIN ? -1 : 1;
		for (size_t k = 0; k < K && k < w->n; k++) {
			size_t best = k;
			for (size_t i = k + 1; i < w->n; i++)
				if (ranks_before(w, ints, dir, i, best))
					best = i;
			swap_terms(w, ints, k, best);
		}
		w->n = K < w->n ? K : w->n;
	} else if (m == MO_LOGSUMEXP) {   /* now only the max: the sum comes in a second pass */
		w->lse_m = -INFINITY;
		for (size_t i = 0; i < w->n; i++)
			w->lse_m = max754(w->lse_m, w->tv[i]);
		w->n = 0;
		w->take = TAKE_LSE_MAX;
	} else if (!w->folding && !fold_start(w)) {
		w->limit *= 2;   /* sum or product whose terms cannot be counted yet: keep them */
	} else {
		w->folding = true;
		Op op = m == MO_SUM ? OP_ADD : OP_MUL;
		for (size_t i = 0; i < w->n; i++)
			partial_add(w, op, &w->part[w->tp[i]], w->tv[i]);
		w->n = 0;
	}
}

/* ------------------------------------------------------------ elements */

/* Before an element's terms: an empty buffer of a block (topk: K more). */
static void begin_terms(Worker *w, int64_t K)
{
	w->n = 0;
	w->total = 0;
	w->take = TAKE_BUFFER;
	w->folding = false;
	w->limit = (size_t)K + w->block;
}

/* A real value x of the definition rounded into its store format (and noted). */
static double stored(Worker *w, double x)
{
	double v = round_d(&w->s, w->stf, x);
	note(&w->s, w->opf, v);
	return v;
}

static void store_int(Worker *w, int t, int64_t e, int64_t v)
{
	if (v < INT32_MIN || v > INT32_MAX)
		fail(w, w->def->pos, 2, "integer value %lld does not fit in 32 bits", (long long)v);
	w->E->iv[t][e] = v;
}

static void set_lhs(Worker *w, int64_t e, int n)
{
	const Tensor *t = &w->E->g->tensors[w->def->out[0]];
	for (int k = n - 1; k >= 0; k--) {
		int64_t ext = t->dims[k].value;
		w->vars[k] = e % ext;
		e /= ext;
	}
}

static void swap_terms(Worker *w, bool ints, size_t i, size_t j)
{
	int64_t ix = w->tix[i];
	w->tix[i] = w->tix[j];
	w->tix[j] = ix;
	if (ints) {
		int64_t v = w->ti[i];
		w->ti[i] = w->ti[j];
		w->ti[j] = v;
	} else {
		double v = w->tv[i];
		w->tv[i] = w->tv[j];
		w->tv[j] = v;
	}
}

/* Element e of the leading indices of a topk: K values and K indices. */
static void topk_element(Worker *w, int64_t e, bool ints)
{
	const Def *D = w->def;
	Emu *E = w->E;
	int tv = D->out[0], ti = D->out[1];
	int64_t K = E->g->tensors[tv].dims[D->nlhs - 1].value;
	set_lhs(w, e, D->nlhs - 1);
	w->vars[D->nlhs - 1] = 0;
	begin_terms(w, K);
	collect(w, 0, ints);
	if (w->failed)
		return;
	if (w->total < K) {
		fail(w, D->pos, 2, "topk over a range of %lld terms, fewer than K = %lld",
		     (long long)w->total, (long long)K);
		return;
	}
	/* selection of the K best, in rank order; the rank order is total, so any selection
	 * method gives the same result */
	for (int64_t k = 0; k < K; k++) {
		size_t best = (size_t)k;
		for (size_t i = (size_t)k + 1; i < w->n; i++)
			if (ranks_before(w, ints, 1, i, best))
				best = i;
		swap_terms(w, ints, (size_t)k, best);
		if (ints)
			store_int(w, tv, e * K + k, w->ti[k]);
		else
			E->rv[tv][e * K + k] = stored(w, w->tv[k]);
		store_int(w, ti, e * K + k, w->tix[k]);
	}
}

/* ------------------------------------------------------------ online passes */

/* The one-pass order of compiler/kir/lower.c's el_online (docs/online.md), operation by
 * operation in the kernel's order and formats: per split piece the state, per term the
 * max's term x (the max's op format), m' = max(m, x), the safe shift ms, the terms with the
 * max read as ms, the rescale m == m' ? 1 : exp((m - m') * c) (each member's op format),
 * l = l * f + t; Welford's n, d, mean, M2; the pieces merged into piece 0 in order; the
 * member's value. A plain definition that depends on a member is evaluated where read (its
 * op format, not rounded to a store format). */
typedef struct {
	const Def *def;
	Dtype opf, accf, stf;
	int64_t vars[IR_MAXVARS];
} WSave;

static void w_save(const Worker *w, WSave *s)
{
	s->def = w->def;
	s->opf = w->opf;
	s->accf = w->accf;
	s->stf = w->stf;
	memcpy(s->vars, w->vars, sizeof s->vars);
}

static void w_restore(Worker *w, const WSave *s)
{
	w->def = s->def;
	w->opf = s->opf;
	w->accf = s->accf;
	w->stf = s->stf;
	memcpy(w->vars, s->vars, sizeof s->vars);
}

static Dtype op_of(const Worker *w, int d)
{
	Dtype f = w->sched->defs[d].op;
	return f == DT_I32 || f == DT_NONE ? DT_F64 : f;
}

static double plain_at(Worker *w, const Node *n)
{
	const Graph *g = w->E->g;
	int d = g->tensors[n->u.read.tensor].def;
	int64_t idx[IR_MAXRANK];
	const Ref *ix = ir_read_idx(g, n);
	for (uint32_t i = 0; i < n->u.read.n; i++)
		idx[i] = eval_int(w, ix[i]);
	WSave sv;
	w_save(w, &sv);
	w->def = &g->defs[d];
	w->opf = op_of(w, d);
	for (uint32_t i = 0; i < n->u.read.n; i++)
		w->vars[i] = idx[i];
	double v = eval_real(w, g->defs[d].body);
	Dtype from = w->opf;
	w_restore(w, &sv);
	return load(w, from, v);
}

/* r evaluated in the current frame with the max (mean) read as v */
static double w_shift(Worker *w, Ref r, double v)
{
	w->ovv = v;
	w->ovseen = false;
	return eval_real(w, r);
}

/* r in member md's frame at the row recorded in ovidx, index j */
static double w_row(Worker *w, int md, Ref r, int64_t j)
{
	const Graph *g = w->E->g;
	WSave sv;
	w_save(w, &sv);
	w->def = &g->defs[md];
	w->opf = op_of(w, md);
	for (int i = 0; i < w->def->nlhs; i++)
		w->vars[i] = w->ovidx[i];
	w->vars[w->def->nlhs] = j;
	int ovt = w->ovt;
	w->ovt = -1;
	double x = eval_real(w, r);
	w->ovt = ovt;
	w_restore(w, &sv);
	return x;
}

typedef struct {
	double m, l, a;
	int64_t n;
} WSt;

static double o1(Worker *w, Op op, Dtype f, double a, double b)
{
	return op1(&w->s, op, f, a, b, 0);
}

/* a value of format `from` as an operand of format f's arithmetic */
static double w_into(Worker *w, Dtype from, Dtype f, double v)
{
	return w->E->fits[from][f] ? v : round_d(&w->s, f, v);
}

/* m == mn ? 1 : exp((m - mn) * c) in format f (m, mn of format mf) */
static double w_scale(Worker *w, double m, double mn, const double *c, Dtype f, Dtype mf)
{
	double a = w_into(w, mf, f, m), b = w_into(w, mf, f, mn);
	double d = o1(w, OP_SUB, f, a, b);
	if (c)
		d = o1(w, OP_MUL, f, d, *c);
	double x = o1(w, OP_EXP, f, d, 0);
	return m == mn ? 1.0 : x;
}

static double w_axpy(Worker *w, Dtype f, double s, double k, double t)
{
	return o1(w, OP_ADD, f, o1(w, OP_MUL, f, s, k), t);
}

static void online_element(Worker *w, int64_t e)
{
	Emu *E = w->E;
	const Graph *g = E->g;
	const OnPlan *p = &w->on;
	int role = w->orole;
	const Def *D = w->def;
	set_lhs(w, e, D->nlhs);
	bool lse = p->rule == ON_LSE, wf = p->rule == ON_WELFORD;
	int md = p->def[0], ld = lse ? md : p->def[1];
	const Def *M = &g->defs[md];
	Dtype of = w->opf, mf = op_of(w, md), lf = op_of(w, ld);
	if (role == 0 || lse)
		mf = lf = of;
	if (role == 1)
		lf = of;
	int64_t S = w->sched->defs[D - g->defs].split[0] > 1 ? w->sched->defs[D - g->defs].split[0] : 1;
	WSt *st = calloc((size_t)S, sizeof *st);
	IR_ASSERT(st);
	for (int64_t k = 0; k < S; k++)
		st[k].m = wf ? 0.0 : -INFINITY;
	int64_t lo = eval_int(w, D->red[0].lo), hi = eval_int(w, D->red[0].hi);
	bool hasc = p->scale != REF_NONE;
	double cl = 0, co = 0;
	if (hasc) {
		WSave sv;
		w_save(w, &sv);
		w->opf = lf;
		cl = eval_real(w, p->scale);
		w->opf = of;
		co = eval_real(w, p->scale);
		w_restore(w, &sv);
	}
	w->ovt = M->out[0];
	WSave sv;
	w_save(w, &sv);
	for (int64_t j = lo; j < hi && !w->failed; j++) {
		WSt *q = &st[S > 1 ? (j - lo) % S : 0];
		w->vars[D->nlhs] = j;
		double x;
		if (lse) {
			x = eval_real(w, D->body);
		} else if (wf) {
			if (role == 1)
				(void)w_shift(w, D->body, q->m);
			else
				for (int i = 0; i < D->nlhs; i++)
					w->ovidx[i] = w->vars[i];
			x = w_row(w, md, ir_node(g, M->body)->a[0], j);
		} else {
			(void)w_shift(w, role == 2 ? p->num : D->body, 0.0);
			x = w_row(w, md, M->body, j);
		}
		if (w->failed)
			break;
		if (wf) {
			q->n++;
			double d = o1(w, OP_SUB, mf, x, q->m);
			q->m = o1(w, OP_ADD, mf, q->m, o1(w, OP_DIV, mf, d, (double)q->n));
			if (role == 1)
				q->l = w_axpy(w, mf, d, o1(w, OP_SUB, mf, x, q->m), q->l);
			continue;
		}
		double mn = max754(q->m, x);
		double ms = mn == -INFINITY ? 0.0 : mn;
		double tl, to = 0;
		if (lse) {
			tl = o1(w, OP_EXP, mf, o1(w, OP_SUB, mf, x, ms), 0);
		} else if (role == 2) {
			to = w_shift(w, p->num, ms);
			const Node *dn = ir_node(g, ir_node(g, D->body)->a[1]);
			const Ref *ix = ir_read_idx(g, dn);
			int64_t li[IR_MAXRANK];
			for (uint32_t i = 0; i < dn->u.read.n; i++)
				li[i] = eval_int(w, ix[i]);
			WSave s2;
			w_save(w, &s2);
			w->def = &g->defs[ld];
			w->opf = lf;
			for (uint32_t i = 0; i < dn->u.read.n; i++)
				w->vars[i] = li[i];
			w->vars[w->def->nlhs] = j;
			tl = w_shift(w, g->defs[ld].body, ms);
			w_restore(w, &s2);
		} else {
			tl = w_shift(w, D->body, ms);
		}
		double fl = w_scale(w, q->m, mn, hasc ? &cl : NULL, lf, mf);
		if (role == 2) {
			double fo = w_scale(w, q->m, mn, hasc ? &co : NULL, of, mf);
			q->a = w_axpy(w, of, q->a, fo, to);
		}
		q->l = w_axpy(w, lf, q->l, fl, tl);
		q->m = mn;
	}
	w_restore(w, &sv);
	w->ovt = -1;
	WSt *a = &st[0];
	for (int64_t k = 1; k < S && !w->failed; k++) {
		WSt *c = &st[k];
		if (wf) {
			int64_t n = a->n + c->n;
			double d = o1(w, OP_SUB, mf, c->m, a->m);
			double wt = o1(w, OP_DIV, mf, (double)c->n,
				       (double)n);
			double mean = o1(w, OP_ADD, mf, a->m, o1(w, OP_MUL, mf, d, wt));
			if (role == 1) {
				double wn = o1(w, OP_DIV, mf, o1(w, OP_MUL, mf, (double)a->n, (double)c->n),
					       (double)n);
				double m2 = o1(w, OP_ADD, mf, o1(w, OP_ADD, mf, a->l, c->l),
					       o1(w, OP_MUL, mf, o1(w, OP_MUL, mf, d, d), wn));
				a->l = c->n == 0 ? a->l : a->n == 0 ? c->l : m2;
			}
			a->m = c->n == 0 ? a->m : a->n == 0 ? c->m : mean;
			a->n = n;
			continue;
		}
		double mn = max754(a->m, c->m);
		if (role == 2) {
			double fa = w_scale(w, a->m, mn, hasc ? &co : NULL, of, mf);
			double fb = w_scale(w, c->m, mn, hasc ? &co : NULL, of, mf);
			a->a = w_axpy(w, of, a->a, fa, o1(w, OP_MUL, of, c->a, fb));
		}
		double fa = w_scale(w, a->m, mn, hasc ? &cl : NULL, lf, mf);
		double fb = w_scale(w, c->m, mn, hasc ? &cl : NULL, lf, mf);
		a->l = w_axpy(w, lf, a->l, fa, o1(w, OP_MUL, lf, c->l, fb));
		a->m = mn;
	}
	double v;
	if (wf && role == 0) {
		v = w_into(w, mf, of, a->m);
	} else if (wf) {
		double nn = eval_real(w, ir_node(g, D->body)->a[1]);
		/* M2 / N, or M2 * 2^-k (online.c mean_of: a rewritten / 2^k) */
		v = o1(w, (Op)ir_node(g, D->body)->op, of, w_into(w, mf, of, a->l), nn);
	} else if (lse) {
		bool fin = a->m - a->m == 0;
		v = fin ? o1(w, OP_ADD, of, a->m, o1(w, OP_LOG, of, a->l, 0)) : a->m;
	} else if (role == 1) {
		v = a->l;
	} else {   /* an empty range is the empty sum +0, not 0 / 0 */
		v = lo < hi ? o1(w, OP_DIV, of, a->a, w_into(w, lf, of, a->l)) : 0.0;
	}
	free(st);
	E->rv[D->out[0]][e] = stored(w, v);
}

static void do_element(Worker *w, int64_t e)
{
	const Def *D = w->def;
	Emu *E = w->E;
	if (w->orole >= 0) {
		online_element(w, e);
		return;
	}
	int t = D->out[0];
	bool body_int = ir_node(E->g, D->body)->ty == TY_INT;
	if (D->monoid == MO_TOPK) {
		topk_element(w, e, body_int && E->iv[t]);
		return;
	}
	set_lhs(w, e, D->nlhs);
	if (D->monoid == MO_NONE) {
		if (E->iv[t])
			store_int(w, t, e, eval_int(w, D->body));
		else
			E->rv[t][e] = stored(w, eval_real(w, D->body));
		return;
	}
	if (w->mu) {   /* the unit's chain: blocks of products in reduction order, from +0 */
		begin_terms(w, 0);
		w->macc = 0.0;
		w->mn = 0;
		collect(w, 0, false);
		if (w->failed)
			return;
		mma_flush(w);
		E->rv[t][e] = stored(w, w->macc);
		return;
	}
	bool arg = D->monoid == MO_ARGMAX || D->monoid == MO_ARGMIN;
	bool ints = body_int && (arg || E->iv[t]);
	begin_terms(w, 0);
	collect(w, 0, ints);
	if (w->failed)
		return;
	if (arg)
		store_int(w, t, e, argbest(w, ints, D->monoid == MO_ARGMAX ? 1 : -1));
	else if (E->iv[t])
		store_int(w, t, e, reduce_int(w));
	else
		E->rv[t][e] = stored(w, reduce_real(w));
}

static void *run_worker(void *p)
{
	Worker *w = p;
	mpf_widest_range();
	int64_t units = 0;
	for (int64_t e = w->begin; e < w->end && !w->failed; e++) {
		do_element(w, e);
		units++;
		w->pend += w->def->monoid == MO_NONE;
		if ((units >= 64 || w->pend >= POLL) && !w->failed) {   /* shared counters: batched */
			if (lim_poll(w->lim, units, w->pend))
				stop(w);
			units = w->pend = 0;
		}
		if (w->failed)
			w->fail_at = e;
	}
	return NULL;
}

static void *run_thread(void *p)
{
	run_worker(p);
	mpfr_free_cache2(MPFR_FREE_LOCAL_CACHE);
	return NULL;
}

/* ------------------------------------------------------------ the driver */

static Dtype pick(const Dtype *a, int k, Dtype dflt)
{
	return a && a[k] != DT_NONE ? a[k] : dflt;
}

/* Formats and order of definition k; -1 with d if a format is not a real one. */
static int def_formats(const Graph *g, const EmuConfig *cfg, int k, Worker *w, Diag *d)
{
	Dtype dflt = cfg && cfg->dflt != DT_NONE ? cfg->dflt : DT_F32;
	w->opf = pick(cfg ? cfg->op : NULL, k, dflt);
	w->accf = pick(cfg ? cfg->accum : NULL, k, dflt);
	w->stf = pick(cfg ? cfg->store : NULL, k, dflt);
	w->order = cfg && cfg->order ? cfg->order[k] : ORDER_LINEAR;
	w->S = 1;
	w->q = -1;
	Monoid mo = g->defs[k].monoid;
	if (cfg && cfg->split && cfg->split[k] > 1 &&
	    (mo == MO_SUM || mo == MO_PROD || mo == MO_LOGSUMEXP)) {
		int q = cfg->split_red ? cfg->split_red[k] : 0;
		if (q < 0 || q >= g->defs[k].nred) {
			diag_set(d, 2, "emulation of '%s': split of reduction index %d, which it does "
				 "not have", g->tensors[g->defs[k].out[0]].name, q);
			return -1;
		}
		w->S = cfg->split[k];
		w->q = q;
	}
	Dtype f[3] = {w->opf, w->accf, w->stf};
	for (int i = 0; i < 3; i++)
		if (f[i] < 0 || f[i] >= DT__COUNT || f[i] == DT_I32) {
			diag_set(d, 2, "emulation of '%s': %s is not a real format",
				 g->tensors[g->defs[k].out[0]].name, dt_name(f[i]));
			return -1;
		}
	return 0;
}

static void emu_free(Emu *E)
{
	const Graph *g = E->g;
	if (!g)
		return;
	for (int t = 0; t < g->ntensors; t++) {
		if (E->rv)
			free(E->rv[t]);
		if (E->iv)
			free(E->iv[t]);
	}
	free(E->rv);
	free(E->iv);
	free(E->tfmt);
	free(E->stride);
	free(E->lit);
}

/* Allocates every tensor's storage and loads the inputs: 0, or -1 with d. */
static int emu_init(Emu *E, const Graph *g, const HostTensor *inputs, Limits *L, Diag *d)
{
	memset(E, 0, sizeof *E);
	E->g = g;
	size_t nt = (size_t)g->ntensors;
	E->rv = mp_xcalloc(nt, sizeof *E->rv);
	E->iv = mp_xcalloc(nt, sizeof *E->iv);
	E->tfmt = mp_xcalloc(nt, sizeof *E->tfmt);
	E->stride = mp_xcalloc(nt, sizeof *E->stride);
	E->lit = mp_xcalloc((size_t)DT__COUNT * g->nnodes, sizeof *E->lit);
	for (int a = 0; a < DT__COUNT; a++)
		for (int b = 0; b < DT__COUNT; b++)
			E->fits[a][b] = fmt_fits((Dtype)a, (Dtype)b);
	int k = 0;
	for (int t = 0; t < g->ntensors; t++) {
		const Tensor *T = &g->tensors[t];
		int64_t n = ir_tensor_count(g, t), s = 1;
		for (int i = T->rank - 1; i >= 0; i--) {
			E->stride[t][i] = s;
			s *= T->dims[i].value;
		}
		if (T->dtype == DT_I32)
			E->iv[t] = calloc((size_t)(n ? n : 1), sizeof **E->iv);
		else
			E->rv[t] = calloc((size_t)(n ? n : 1), sizeof **E->rv);
		if (!E->iv[t] && !E->rv[t]) {
			char what[300];
			snprintf(what, sizeof what, "tensor '%s' (%lld elements as doubles)", T->name,
				 (long long)n);
			return lim_oom(L, d, n * 8, what);
		}
		E->tfmt[t] = T->dtype == DT_I32 ? DT_F64 : (Dtype)T->dtype;
		if (T->kind != TK_INPUT)
			continue;
		const HostTensor *h = &inputs[k++];
		if (!h->data || h->dtype != T->dtype || h->n != n) {
			diag_set(d, 2, "input '%s' is declared %s with %lld elements but was given "
				 "%s with %lld", T->name, dt_name((Dtype)T->dtype), (long long)n,
				 h->data ? dt_name(h->dtype) : "nothing", (long long)h->n);
			return -1;
		}
		for (int64_t i = 0; i < n; i++) {
			if (E->iv[t])
				E->iv[t][i] = (int64_t)ht_get(h, i);
			else
				E->rv[t][i] = ht_get(h, i);
		}
	}
	return 0;
}

/* Evaluates definition k over nw workers (at most), keeping the first error. */
static int run_def(Emu *E, const EmuConfig *cfg, int k, Worker *ws, int nw, Diag *d)
{
	const Graph *g = E->g;
	const Def *D = &g->defs[k];
	int64_t n = ir_tensor_count(g, D->out[0]);
	if (D->monoid == MO_TOPK)
		n /= g->tensors[D->out[0]].dims[D->nlhs - 1].value;
	if (def_formats(g, cfg, k, &ws[0], d) < 0)
		return -1;
	E->tfmt[D->out[0]] = ws[0].stf;   /* real values are stored in the store format */
	const MmaUnit *mu = NULL;
	Ref mfa = REF_NONE, mfb = REF_NONE;
	if (cfg && cfg->sched && k < cfg->sched->ndefs && cfg->sched->defs[k].mma) {
		int sm = cfg->mma_sm ? cfg->mma_sm : 90;
		Dtype ab;
		char why[300];
		if (!sched_mma_factors(g, cfg->sched, k, &mfa, &mfb, &ab, why, sizeof why)) {
			diag_set(d, 2, "emulation of mma '%s': %s", g->tensors[D->out[0]].name, why);
			return -1;
		}
		mu = mma_unit(sm, ab, DT_F32);
		if (!mu) {
			diag_set(d, 2, "emulation of mma '%s': sm_%d has no matrix unit for %s operands "
				 "(interp/mma.c)", g->tensors[D->out[0]].name, sm, dt_name(ab));
			return -1;
		}
	}
	int use = nw;
	if (n / MIN_PER_THREAD < use)
		use = (int)(n / MIN_PER_THREAD) > 1 ? (int)(n / MIN_PER_THREAD) : 1;
	int64_t chunk = (n + use - 1) / use;
	for (int i = 0; i < use; i++) {
		Worker *w = &ws[i];
		w->E = E;
		w->def = D;
		w->lim = ws[0].lim;
		w->block = ws[0].block;
		w->opf = ws[0].opf, w->accf = ws[0].accf, w->stf = ws[0].stf;
		w->order = ws[0].order;
		w->S = ws[0].S;
		w->q = ws[0].q;
		w->begin = i * chunk < n ? i * chunk : n;
		w->end = w->begin + chunk < n ? w->begin + chunk : n;
		w->failed = false;
		memset(w->vars, 0, sizeof w->vars);
		w->sched = cfg ? cfg->sched : NULL;
		w->mu = mu;
		w->mfa = mfa, w->mfb = mfb;
		w->orole = -1;
		w->odep = NULL;
		w->ovt = -1;
	}
	bool *odep = NULL;
	OnPlan on;
	if (cfg && cfg->sched && on_plan(g, cfg->sched, k, &on) == 0) {
		int role = -1;
		for (int r = 0; r < on.n; r++)
			if (on.def[r] == k)
				role = r;
		if (role == 0 && (on.rule == ON_SOFTMAX || on.rule == ON_FLASH))
			role = -1;
		size_t nt = (size_t)g->ntensors + 1;
		bool *dep = calloc(nt, 1);
		odep = calloc(nt, 1);
		IR_ASSERT(dep && odep);
		for (int r = 0; r < on.n; r++)
			dep[g->defs[on.def[r]].out[0]] = true;
		for (int t = 0; t < g->ntensors; t++) {
			const Tensor *T = &g->tensors[t];
			if (T->kind != TK_DEF || dep[t] || g->defs[T->def].monoid != MO_NONE)
				continue;
			dep[t] = on_reads(g, g->defs[T->def].body, dep);
			odep[t] = dep[t];
		}
		free(dep);
		for (int i = 0; role >= 0 && i < use; i++) {
			ws[i].on = on;
			ws[i].orole = role;
			ws[i].odep = odep;
		}
	}
	if (use == 1) {
		mpfr_exp_t emin = mpfr_get_emin(), emax = mpfr_get_emax();
		run_worker(&ws[0]);
		mpfr_set_emin(emin);
		mpfr_set_emax(emax);
	} else {
		pthread_t th[use];
		bool started[use];
		for (int i = 0; i < use; i++)
			started[i] = pthread_create(&th[i], NULL, run_thread, &ws[i]) == 0;
		mpfr_exp_t emin = mpfr_get_emin(), emax = mpfr_get_emax();
		for (int i = 0; i < use; i++)
			if (!started[i])   /* no thread to be had: the same work, here */
				run_worker(&ws[i]);
		mpfr_set_emin(emin);
		mpfr_set_emax(emax);
		for (int i = 0; i < use; i++)
			if (started[i])
				pthread_join(th[i], NULL);
	}
	free(odep);
	for (int i = 0; i < use; i++) {
		ws[i].odep = NULL;
		ws[i].orole = -1;
	}
	for (int i = 0; i < use; i++)   /* chunks are in element order: the first is first */
		if (ws[i].failed) {
			if (d && !d->msg) {
				d->msg = ws[i].d.msg;
				d->code = ws[i].d.code;
				ws[i].d.msg = NULL;
			}
			diag_clear(&ws[i].d);
			return -1;
		}
	return 0;
}

/* Output k of g from E into outs[k], rounded into its dtype. */
static int deliver(Emu *E, Scratch *s, int k, HostTensor *out, Diag *d)
{
	const Graph *g = E->g;
	const Output *o = &g->outputs[k];
	const Tensor *T = &g->tensors[o->tensor];
	if (o->dtype == DT_I32 && !E->iv[o->tensor]) {
		diag_set(d, 2, "output '%s' : i32 of a real-valued tensor", T->name);
		return -1;
	}
	int64_t dims[IR_MAXRANK];
	for (int i = 0; i < T->rank; i++)
		dims[i] = T->dims[i].value;
	if (ht_alloc(out, o->dtype, T->rank, dims) < 0) {
		diag_set(d, 3, "out of memory for output '%s'", T->name);
		return -1;
	}
	for (int64_t i = 0; i < out->n; i++) {
		if (E->iv[o->tensor]) {
			int64_t v = E->iv[o->tensor][i];
			ht_set(out, i, o->dtype == DT_I32 ? (double)v : round_i(s, o->dtype, v));
		} else {
			ht_set(out, i, round_d(s, o->dtype, E->rv[o->tensor][i]));
		}
	}
	return 0;
}

int mp_emulate(const Graph *g, const HostTensor *inputs, const EmuConfig *cfg,
	       const MpOpts *o, HostTensor *outs, MpStats *st, Diag *d)
{
	return mp_emulate_defs(g, inputs, cfg, o, outs, st, NULL, d);
}

int mp_emulate_defs(const Graph *g, const HostTensor *inputs, const EmuConfig *cfg,
		    const MpOpts *o, HostTensor *outs, MpStats *st, uint32_t *def_sub, Diag *d)
{
	int nw = o && o->threads > 0 ? o->threads : 1, rc = -1, nout = 0;
	Emu E = {0};
	Limits L;
	lim_init(&L, g, o, "the emulating interpreter");
	Worker *ws = mp_xcalloc((size_t)nw, sizeof *ws);
	for (int i = 0; i < nw; i++)
		scratch_init(&ws[i].s);
	ws[0].lim = &L;
	ws[0].block = o && o->red_block > 0 ? (size_t)o->red_block : DEFAULT_BLOCK;
	mpfr_exp_t emin = mpfr_get_emin(), emax = mpfr_get_emax();
	mpf_widest_range();
	if (mp_check_memory(g, o, true, d) < 0) {
		rc = -2;
		goto fail_init;
	}
	lim_phase_defs(&L, "emulating");
	if (emu_init(&E, g, inputs, &L, d) < 0)
		goto fail_init;
	round_literals(&E, &ws[0].s);   /* notes nothing: a literal is noted where it is used */
	uint32_t sub = 0;
	for (int k = 0; k < g->ndefs; k++) {
		lim_tensor(&L, g->tensors[g->defs[k].out[0]].name);
		if (run_def(&E, cfg, k, ws, nw, d) < 0)
			goto fail_run;
		uint32_t here = 0;   /* definition k's subnormals, whichever worker met them */
		for (int i = 0; i < nw; i++) {
			here |= ws[i].s.sub;
			ws[i].s.sub = 0;
		}
		sub |= here;
		if (def_sub)
			def_sub[k] = here;
	}
	for (; nout < g->noutputs; nout++)
		if (deliver(&E, &ws[0].s, nout, &outs[nout], d) < 0)
			goto fail_run;
	rc = 0;
	if (st) {
		memset(st, 0, sizeof *st);
		st->subnormal = sub;   /* deliver's roundings into the outputs' dtypes note none */
		for (int k = 0; k < g->noutputs; k++)
			st->elements += outs[k].n;
		for (int i = 0; i < nw; i++)
			st->mpfr_ops += ws[i].s.ops;
		for (int k = 0; k < g->ndefs; k++) {
			Worker w;
			def_formats(g, cfg, k, &w, NULL);
			Dtype f[3] = {w.opf, w.accf, w.stf};
			for (int i = 0; i < 3; i++)
				if (dt_info(f[i])->prec > st->max_prec)
					st->max_prec = dt_info(f[i])->prec;
		}
	}
fail_run:
	if (rc < 0)
		for (int k = 0; k < nout; k++)
			ht_free(&outs[k]);
	if (rc == -1 && lim_hit(&L)) {
		lim_diag(&L, d);
		rc = -2;
	}
fail_init:
	lim_free(&L);
	emu_free(&E);
	for (int i = 0; i < nw; i++) {
		scratch_clear(&ws[i].s);
		free(ws[i].tv);
		free(ws[i].ti);
		free(ws[i].tix);
		free(ws[i].tp);
		free(ws[i].sbuf);
		free(ws[i].scnt);
		free(ws[i].part);
		free(ws[i].frames);
		diag_clear(&ws[i].d);
	}
	free(ws);
	mpfr_set_emin(emin);
	mpfr_set_emax(emax);
	return rc;
}
