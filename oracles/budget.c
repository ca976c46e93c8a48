/* oracles/budget.c: error budgets by running error analysis through the scheduled graph
 * (numerics.md section 4).
 *
 * What is bounded. For each output element, with R the rounding into the output's dtype,
 * `kernel` the value a correct kernel delivers for the schedule on the backend and
 * `exact` the graph's exact value (graph-format.md section 6), the budget B satisfies
 *     |kernel - R(exact)| <= B   and   |kernel - exact| <= B.
 * The first is what verify checks against mp_exact's correctly rounded oracle value; the
 * second lets it compare with a wider reference. "Correct kernel" means one that computes
 * what compiler/sched/sched.c says the schedule means, in the formats it names, with +, -, *
 * correctly rounded and the backend's functions within their allowances (allowances.def);
 * the emulating interpreter (mp_emulate with orc_emu_config) is one, with every function
 * correctly rounded (backend "emul").
 *
 * How. The graph is evaluated once on the given inputs, element by element, in the order
 * and formats of the schedule, exactly as interp/emul.c and compiler/kir/lower.c do (op format
 * for expressions and loads, literals and integers rounded into it, casts rounded, terms
 * accumulated in the accum format, stored values rounded into the store format). Each
 * value is a Bv (bval.h): a rigorous enclosure of its exact value and a bound e on its
 * computed value's distance to it, propagated by the rules of bval.c (propagation over
 * intervals, not first order, plus each operation's local rounding or allowance).
 * - Reductions follow the actual tree: linear chains, pairwise halves (the first
 *   floor(n/2) terms on the left), split reductions as S strided partial chains (term j of
 *   the split index goes to partial (j - lo) mod S) combined in order, exactly the trees of
 *   lower.c. Every addition node adds half an ulp of the accum format at the magnitude of
 *   its partial sum (|exact partial| + the errors below it): the running error bound. By
 *   induction over the tree, a node at height d above term i carries at most
 *   ((1+u)^d - 1)|t_i| + (1+u)^d e_i of it, so the bound is at most
 *   gamma_h(u_accum) * sum |t_i| + (1+u)^h * sum e_i for the tree's height h (linear n-1,
 *   split ceil(n/S)-1 + S-1, pairwise ceil(log2 n)), and often far below it, because it
 *   uses the partial sums of the actual data and each term's own depth. An identity (an
 *   empty partial) joins exactly.
 * - max/min: error <= max e_i (no rounding). logsumexp: the kernel's max shift m + log(sum
 *   exp(t - m)), analysed with m = the computed max (its exact value does not matter: the
 *   expression equals logsumexp(t) for any m); its enclosure is computed separately.
 * - Selections (argmax, argmin, topk): a topk value is the k-th order statistic, 1-Lipschitz
 *   in the terms (error <= max e_i); an index is decided when the exact winner's computed
 *   value beats every other term's for every computed value within the bounds, else the
 *   element is a near tie (orc_budget_ties), and so is every value computed from it.
 * - ?: on a real comparison that the computed values may decide otherwise: the error is
 *   that of the other branch plus the distance between the branches; on an integer
 *   condition that depends on a near tie: a near tie.
 * - Output: B = max(R(hi + e) - R(lo), R(hi) - R(lo - e), R(hi + e) - lo, hi - R(lo - e))
 *   for the exact enclosure [lo, hi] and the stored value's bound e, all rounded up.
 * - Flushed subnormals: where the backend may flush a format's subnormals to zero (the
 *   backend's facts, BeFacts.flush, with Backend.flush_source citing the permission:
 *   Vulkan and WGSL for f32, Vulkan for f64; f16
 *   and bf16 are computed in f32, so bf16's subnormals, which are f32's, may be flushed
 *   and f16's, which are f32 normals, are not), every arithmetic operation, comparison,
 *   max/min and function may take a zero for a subnormal operand and deliver a zero for a
 *   subnormal result (bval.c: bv_flush and the rules' results). The term is taken from
 *   the value information: it is nonzero only where a computed operand or result may lie
 *   below the smallest normal (2^-126 for f32), and then it is the largest |exact| a zero
 *   would stand for, carried on through later operations like any other error (a flushed
 *   operand times a large value). A selection (argmax, argmin, topk, a ?: on a real
 *   comparison) decides on flushed values. Where a flushed value reaches a divisor, a log
 *   or an rsqrt, the computed argument's range holds 0 and the budget is +inf (no claim):
 *   the kernel's inf there is a legitimate consequence of flushing (docs/oracle.md).
 * Unbounded values (possible inf or NaN, divisors around 0, functions at the edge of their
 * domains, functions a backend promises nothing for) give +inf budgets.
 * - Infinities (docs/oracle.md "Infinities in budgets"): where the run's facts keep them
 *   (BeFacts.specials), an infinite input or literal and an overflow every allowed
 *   computation makes are definite infinities (bval.h), followed through the rules; an
 *   element whose computed and oracle values are the same infinity gets 0, a finite one
 *   computed through an infinity its finite bound.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "bval.h"

typedef struct {
	int64_t v;
	bool tie;
} Bi;

/* ------------------------------------------------------------ the backend's facts */

/* What the budgets assume of a backend comes from its facts (compiler.h BeFacts: the
 * Backend struct, never its name): the formats whose subnormals it may flush to zero as
 * operands and results of its floating-point arithmetic and conversions (a stored value
 * read into a wider op format is converted: NVIDIA's Vulkan driver flushes an f32 subnormal
 * widened into f64; not of loads, stores, selections or bit casts, which every
 * specification keeps exact), and whether it propagates NaN and
 * keeps zero signs. For flushes, NaNs and zero signs the budget knows a backend, not a
 * device: it reads the facts every device of the backend promises (Backend.facts), not the
 * refinements of one device (Backend.device_facts), so a flush is allowed wherever one is
 * permitted, whatever a given device does (infinities and the roundings that make them
 * read the run's facts instead, orc_budget_facts: a Vulkan device with
 * SignedZeroInfNanPreserve keeps them): lavapipe, and Dawn on lavapipe, happen to keep
 * subnormals; NVIDIA's Vulkan driver flushes f32 subnormals (vkrt_describe: "f32
 * denormals not guaranteed"), and so does Dawn's WGSL on it. c, cuda and opencl never flush
 * (c is built without -ffast-math, cuda with --ftz=false, opencl never passes
 * -cl-denorms-are-zero); an OpenCL device whose CL_DEVICE_SINGLE_FP_CONFIG lacks
 * CL_FP_DENORM may still flush f32 (its device facts say so, compiler/opencl/run.c's device
 * description too: "f32 denormals flushed"; NVIDIA's and PoCL's have it), which the budget
 * does not model. The pseudo-backend "emul" (and NULL) is the emulating interpreter: IEEE,
 * no flush.
 */
static const BeFacts emul_facts = BE_FACTS_IEEE;

static const BeFacts *facts_of(const char *backend)
{
	const Backend *b = backend && strcmp(backend, "emul") ? be_find(backend) : NULL;
	return b ? &b->facts : &emul_facts;
}

/* The backends whose kernels propagate a NaN operand through + - * / fma, max and min, so
 * that a NaN the oracle computes from a NaN input or literal is claimed (bv_nan), and keep
 * the sign of a zero: the emulator, C (IEEE 754 arithmetic, the emitted max/min test for
 * NaN), OpenCL C (IEEE arithmetic without -cl-fast-relaxed-math or -cl-finite-math-only)
 * and CUDA (IEEE arithmetic, no fast-math flags). Not vulkan: SPIR-V may assume operands
 * are not NaN unless SignedZeroInfNanPreserve is in force, which not every device offers;
 * not wgsl: WGSL lets an implementation assume NaN and infinity absent (WGSL §14.6). */
static bool nan_claims(const char *backend)
{
	const BeFacts *f = facts_of(backend);
	return f->specials && f->minmax == BE_MINMAX_IEEE;
}

bool orc_may_flush(const char *backend, Dtype f, const char **source)
{
	if (!backend || al_backend(backend) < 0 || f < 0 || f == DT_I32 || f >= DT__COUNT)
		return false;
	Dtype w = al_via(al_backend(backend), f);
	if (!(facts_of(backend)->flush & (1u << w)))
		return false;
	if (source) {
		const Backend *b = be_find(backend);
		*source = b && b->flush_source ? b->flush_source : "";
	}
	return true;
}

/* The analysis of one graph. */
typedef struct {
	const Graph *g;
	const Schedule *s;
	BvCtx c;
	Bv **rv;                       /* real tensors (NULL for i32 ones) */
	int64_t **iv;                  /* i32 tensors */
	uint8_t **itie;                /* their near-tie flags */
	int64_t (*stride)[IR_MAXRANK];
	/* the definition being evaluated */
	const Def *def;
	Dtype opf, accf, stf;
	Order order;
	int64_t S, qlo;                /* split factor of reduction index q, start of q's range */
	int q;
	int64_t vars[IR_MAXVARS];
	/* reduction terms of the current element */
	Bv *tv;
	Bi *ti;
	int64_t *tix, *tp;
	size_t n, cap;
	Bv *sbuf;                      /* split folds */
	size_t *scnt;
	bool *sempty;
	size_t capsbuf;
	/* an online pass (online_element): reads of member ovt give ovv and record their
	 * indices; reads of plain definitions that depend on a member (odep) are evaluated at
	 * the read, as the pass computes them */
	int ovt;
	Bv ovv;
	int64_t ovidx[IR_MAXRANK];
	bool ovseen;
	bool *odep;
	OnPlan on;                     /* the definition's online set (rule -1: none) */
	int orole;                     /* its role there, -1: computed as written */
	/* an mma definition (mma_element): its factors and the unit's parameters the bound
	 * takes (mblock products per fused block, mfrac bits below its largest exponent);
	 * mblock 0: none */
	Ref mfa, mfb;
	int mblock, mfrac;
	Dtype mab;
	/* errors: a soft evaluation (a branch only a flipped condition takes) records them */
	int soft;
	bool failed, softfail;
	Diag *d;
} Ba;

static Bv ev_real(Ba *b, Ref r);
static Bi ev_int(Ba *b, Ref r);
static B3 ev_bool(Ba *b, Ref r);

__attribute__((format(printf, 4, 5)))
static void fail(Ba *b, SrcPos pos, int code, const char *fmt, ...)
{
	if (b->soft) {
		b->softfail = true;
		return;
	}
	if (b->failed)
		return;
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	if (pos.line <= 0)
		pos = b->def->pos;
	diag_at(b->d, pos, b->g->src, b->g->srclen, "budget: %s", msg);
	b->d->code = code;
	b->failed = true;
}

static bool stop(const Ba *b)
{
	return b->failed || (b->soft && b->softfail);
}

static bool decided(const B3 *c)
{
	return c->ex != 2 && c->cp == (c->ex ? 2 : 1);
}

/* ------------------------------------------------------------ leaves */

static Bv int_real(Ba *b, Bi v, Dtype f)
{
	Bv r = bv_exact((double)v.v, DT_NONE);
	if (v.v > ((int64_t)1 << 53) || v.v < -((int64_t)1 << 53)) {
		r.lo = nextafter(r.lo, -INFINITY);
		r.hi = nextafter(r.hi, INFINITY);
	}
	r.tie = v.tie;
	return bv_round(&b->c, r, f);
}

/* An input element's or literal's value as the backend's facts let it be claimed: an
 * infinity is a definite one only where the kernels keep infinities (BvCtx.inf_claims). */
static Bv leaf(const Ba *b, Bv v)
{
	return v.inf && !b->c.inf_claims ? bv_unbounded(v.tie) : v;
}

/* A literal's exact value, not yet rounded. */
static Bv lit_exact(const Ba *b, const Lit *l)
{
	if (isnan(l->approx))
		return bv_nan(false);
	if (!isfinite(l->approx))
		return leaf(b, bv_exact(l->approx, DT_NONE));
	Bv r = bv_exact(l->approx, DT_NONE);
	if (!l->exact) {
		r.lo = nextafter(l->approx, -INFINITY);
		r.hi = nextafter(l->approx, INFINITY);
	}
	return r;
}

/* Offset of read n in its tensor: 1 in bounds, 0 outside with a `??` default, -1 error.
 * *tie collects near ties of indirect indices. */
static int read_at(Ba *b, const Node *n, int64_t *off, bool *tie)
{
	const Graph *g = b->g;
	uint32_t t = n->u.read.tensor;
	const Ref *ix = ir_read_idx(g, n);
	int64_t o = 0;
	for (uint32_t i = 0; i < n->u.read.n; i++) {
		Bi v = ev_int(b, ix[i]);
		if (stop(b))
			return -1;
		*tie |= v.tie;
		int64_t ext = g->tensors[t].dims[i].value;
		if (v.v >= 0 && v.v < ext) {
			o += v.v * b->stride[t][i];
			continue;
		}
		if (n->u.read.pad)
			return 0;
		fail(b, n->pos, 2, "read of '%s' out of range: index %u is %lld, outside [0, %lld)",
		     g->tensors[t].name, i, (long long)v.v, (long long)ext);
		return -1;
	}
	*off = o;
	return 1;
}

static Dtype real_fmt(Dtype f);

static Bv plain_at(Ba *b, const Node *n);

static Bv read_real(Ba *b, const Node *n)
{
	if (b->odep && (int)n->u.read.tensor == b->ovt && !n->u.read.pad) {
		const Ref *ix = ir_read_idx(b->g, n);
		for (uint32_t i = 0; i < n->u.read.n; i++)
			b->ovidx[i] = ev_int(b, ix[i]).v;
		b->ovseen = true;
		return bv_round(&b->c, b->ovv, b->opf);
	}
	if (b->odep && b->odep[n->u.read.tensor] && !n->u.read.pad)
		return plain_at(b, n);
	int64_t off = 0;
	bool tie = false;
	int k = read_at(b, n, &off, &tie);
	if (k < 0)
		return bv_unbounded(tie);
	Bv v;
	uint32_t t = n->u.read.tensor;
	if (k == 0)
		v = ev_real(b, n->u.read.pad);
	else if (b->iv[t])
		v = int_real(b, (Bi){b->iv[t][off], b->itie[t][off]}, b->opf);
	else {
		/* the stored value converted into the op format: a conversion is an operation of
		 * the stored format, so a device that flushes that format's subnormals may give a
		 * zero for one (NVIDIA's Vulkan driver widening an f32 subnormal into f64) */
		const Tensor *T = &b->g->tensors[t];
		Dtype sf = T->kind == TK_INPUT ? (Dtype)T->dtype : real_fmt(b->s->defs[T->def].store);
		v = bv_round(&b->c, sf != b->opf ? bv_flush(&b->c, b->rv[t][off], sf) : b->rv[t][off],
			     b->opf);
	}
	v.tie |= tie;
	return v;
}

/* ------------------------------------------------------------ real expressions */

/* A cast of a literal or an integer: the exact value is R_G(x) and so is the computed one
 * (rounded straight into G), but a backend keeps a constant of a format wider than the op
 * format in the op format (lower.c): allow that second rounding too. */
static Bv cast_const(Ba *b, Bv x, Dtype g)
{
	if (!bv_bounded(&x))
		return x;
	Bv r = x;
	r.lo = bv_fmt_round(g, x.lo);
	r.hi = bv_fmt_round(g, x.hi);
	r.e = 0;
	r.fmt = (int8_t)g;
	if (isinf(r.lo) && r.lo == r.hi)   /* f16(1e5): the exact value is the infinity */
		return leaf(b, bv_inf(r.lo > 0 ? 1 : -1, r.lo, r.hi, x.tie));
	if (!isfinite(r.lo) || !isfinite(r.hi))
		return bv_unbounded(x.tie);
	if (bv_within(g, b->opf))
		return r;
	Bv w = bv_round(&b->c, r, b->opf);
	w.fmt = DT_NONE;
	return w;
}

static Bv select_real(Ba *b, const Node *n)
{
	B3 c = ev_bool(b, n->a[0]);
	if (stop(b))
		return bv_unbounded(c.tie);
	if (decided(&c)) {
		Bv v = ev_real(b, n->a[c.ex ? 1 : 2]);
		v.tie |= c.tie;
		if (b->odep && b->ovt >= 0 && !b->ovseen) {
			/* an online pass's term `cond ? exp(x - m) : 0` where cond is false: the
			 * pass still needs the row of m (its state takes x at every j), which
			 * only the other branch reads; evaluated softly, its value unused */
			b->soft++;
			(void)ev_real(b, n->a[c.ex ? 2 : 1]);
			if (--b->soft == 0)
				b->softfail = false;
		}
		return v;
	}
	/* both branches may be taken: the one the exact value does not take is evaluated
	 * softly (a kernel taking it might meet an error the exact computation does not) */
	Bv v[2];
	for (int i = 0; i < 2; i++) {
		bool exact_branch = c.ex == (i == 0 ? 1 : 0);
		if (!exact_branch)
			b->soft++;
		v[i] = ev_real(b, n->a[1 + i]);
		if (!exact_branch && --b->soft == 0 && b->softfail) {
			b->softfail = false;
			v[i] = bv_unbounded(true);
		}
	}
	return bv_select(&c, &v[0], &v[1]);
}

static Bv op_real(Ba *b, const Node *n)
{
	const Graph *g = b->g;
	Op op = (Op)n->op;
	if (op == OP_SELECT)
		return select_real(b, n);
	Dtype cf = op_cast_dtype(op);
	if (cf != DT_NONE) {
		const Node *a = ir_node(g, n->a[0]);
		if (a->kind == NK_NUM)
			return cast_const(b, lit_exact(b, &g->lits[a->u.lit]), cf);
		if (a->ty == TY_INT) {
			Bi v = ev_int(b, n->a[0]);
			Bv x = int_real(b, v, DT_F64);
			return cast_const(b, x, cf);
		}
		Bv x = ev_real(b, n->a[0]);
		return bv_unary(&b->c, op, &x, b->opf);
	}
	Bv x[3];
	int arity = op_info(op)->arity;
	for (int i = 0; i < arity; i++)
		x[i] = ev_real(b, n->a[i]);
	if (stop(b))
		return bv_unbounded(false);
	Dtype f = b->opf;
	switch (op) {
	case OP_ADD: return bv_add(&b->c, &x[0], &x[1], f, false);
	case OP_SUB: return bv_add(&b->c, &x[0], &x[1], f, true);
	case OP_MUL: return bv_mul(&b->c, &x[0], &x[1], f);
	case OP_DIV: return bv_div(&b->c, &x[0], &x[1], f);
	case OP_FMA: return bv_fma(&b->c, &x[0], &x[1], &x[2], f);
	case OP_POW: return bv_pow(&b->c, &x[0], &x[1], f);
	case OP_MAX: return bv_maxmin(&b->c, &x[0], &x[1], true, f);
	case OP_MIN: return bv_maxmin(&b->c, &x[0], &x[1], false, f);
	default: return bv_unary(&b->c, op, &x[0], f);
	}
}

static Bv ev_real(Ba *b, Ref r)
{
	const Graph *g = b->g;
	const Node *n = ir_node(g, r);
	if (n->ty == TY_INT)
		return int_real(b, ev_int(b, r), b->opf);
	switch (n->kind) {
	case NK_NUM: return bv_round(&b->c, lit_exact(b, &g->lits[n->u.lit]), b->opf);
	case NK_READ: return read_real(b, n);
	case NK_OP: return op_real(b, n);
	default:
		fail(b, n->pos, 3, "internal: node kind %d is not a real value", n->kind);
		return bv_unbounded(false);
	}
}

/* ------------------------------------------------------------ integers and booleans */

/* The emulator's integer arithmetic (mp_int_op), its errors this analysis's. */
static int64_t int_op(Ba *b, const Node *n, Op op, int64_t a, int64_t c)
{
	char why[128];
	int64_t v;
	int code = mp_int_op(op, a, c, &v, why, sizeof why);
	if (code)
		fail(b, n->pos, code, "%s", why);
	return v;
}

static Bi op_int(Ba *b, const Node *n)
{
	Op op = (Op)n->op;
	if (op == OP_SELECT) {
		B3 c = ev_bool(b, n->a[0]);
		/* the exact branch (the first when even that is unknown); a near tie otherwise */
		Bi v = ev_int(b, n->a[c.ex == 0 ? 2 : 1]);
		v.tie |= c.tie || !decided(&c);
		return v;
	}
	Bi a = ev_int(b, n->a[0]), c = {0, false};
	if (op_info(op)->arity > 1)
		c = ev_int(b, n->a[1]);
	if (stop(b))
		return (Bi){0, true};
	return (Bi){int_op(b, n, op, a.v, c.v), a.tie || c.tie};
}

static Bi ev_int(Ba *b, Ref r)
{
	const Graph *g = b->g;
	const Node *n = ir_node(g, r);
	switch (n->kind) {
	case NK_INT: return (Bi){n->u.ival, false};
	case NK_VAR: return (Bi){b->vars[n->u.var], false};
	case NK_SIZE: return (Bi){g->sizes[n->u.size].value, false};
	case NK_OP: return op_int(b, n);
	case NK_READ: {
		int64_t off = 0;
		bool tie = false;
		int k = read_at(b, n, &off, &tie);
		if (k <= 0) {
			Bi v = k == 0 ? ev_int(b, n->u.read.pad) : (Bi){0, true};
			v.tie |= tie;
			return v;
		}
		uint32_t t = n->u.read.tensor;
		if (!b->iv[t]) {
			fail(b, n->pos, 3, "internal: integer read of a real tensor");
			return (Bi){0, true};
		}
		return (Bi){b->iv[t][off], tie || b->itie[t][off]};
	}
	default:
		fail(b, n->pos, 3, "internal: a real literal where an integer belongs");
		return (Bi){0, true};
	}
}

static B3 b3_of(bool v, bool tie)
{
	return (B3){v, v ? 2 : 1, tie};
}

static B3 ev_bool(Ba *b, Ref r)
{
	const Graph *g = b->g;
	const Node *n = ir_node(g, r);
	Op op = (Op)n->op;
	if (n->kind != NK_OP) {
		fail(b, n->pos, 3, "internal: not a boolean");
		return (B3){2, 3, true};
	}
	switch (op) {
	case OP_NOT: {
		B3 a = ev_bool(b, n->a[0]);
		return (B3){a.ex == 2 ? 2 : !a.ex, (uint8_t)(((a.cp & 1) << 1) | ((a.cp & 2) >> 1)),
			    a.tie};
	}
	case OP_AND: case OP_OR: {
		bool and = op == OP_AND;
		B3 a = ev_bool(b, n->a[0]);
		if (decided(&a) && a.ex == !and)   /* short circuit, as the kernels do */
			return a;
		B3 c = ev_bool(b, n->a[1]);
		B3 r = {2, 0, a.tie || c.tie};
		if (and)
			r.ex = a.ex == 0 || c.ex == 0 ? 0 : a.ex == 1 && c.ex == 1 ? 1 : 2;
		else
			r.ex = a.ex == 1 || c.ex == 1 ? 1 : a.ex == 0 && c.ex == 0 ? 0 : 2;
		uint8_t t = and ? (a.cp & c.cp & 2) : ((a.cp | c.cp) & 2);
		uint8_t f = and ? ((a.cp | c.cp) & 1) : (a.cp & c.cp & 1);
		r.cp = t | f;
		return r;
	}
	case OP_SELECT: {
		B3 c = ev_bool(b, n->a[0]);
		B3 v = ev_bool(b, n->a[c.ex == 0 ? 2 : 1]);
		v.tie |= c.tie || !decided(&c);
		return v;
	}
	default:
		break;
	}
	if (!(op_info(op)->flags & OPF_CMP)) {
		fail(b, n->pos, 3, "internal: %s is not a boolean operation", op_info(op)->name);
		return (B3){2, 3, true};
	}
	if (ir_node(g, n->a[0])->ty == TY_INT && ir_node(g, n->a[1])->ty == TY_INT) {
		Bi x = ev_int(b, n->a[0]), y = ev_int(b, n->a[1]);
		return b3_of(mp_int_compare(op, x.v, y.v), x.tie || y.tie);
	}
	/* a comparison may flush its operands (a subnormal compares as a zero) */
	Bv x = bv_flush(&b->c, ev_real(b, n->a[0]), b->opf);
	Bv y = bv_flush(&b->c, ev_real(b, n->a[1]), b->opf);
	return bv_cmp(op, &x, &y);
}

/* ------------------------------------------------------------ reductions */

static void grow_terms(Ba *b)
{
	b->cap = b->cap ? 2 * b->cap : 64;
	b->tv = realloc(b->tv, b->cap * sizeof *b->tv);
	b->ti = realloc(b->ti, b->cap * sizeof *b->ti);
	b->tix = realloc(b->tix, b->cap * sizeof *b->tix);
	b->tp = realloc(b->tp, b->cap * sizeof *b->tp);
	IR_ASSERT(b->tv && b->ti && b->tix && b->tp);
}

static void push_term(Ba *b, bool ints)
{
	if (b->n == b->cap)
		grow_terms(b);
	const Def *D = b->def;
	if (ints) {
		b->ti[b->n] = ev_int(b, D->body);
	} else if (b->mblock) {   /* mma: the product is exact on the unit */
		Bv x = ev_real(b, b->mfa), y = ev_real(b, b->mfb);
		b->tv[b->n] = bv_mul(&b->c, &x, &y, DT_F64);
	} else {
		b->tv[b->n] = ev_real(b, D->body);
	}
	b->tix[b->n] = b->vars[D->nlhs];
	b->tp[b->n] = b->S > 1 ? (b->vars[D->nlhs + b->q] - b->qlo) % b->S : 0;
	b->n++;
}

/* Every term of the reduction indices r.. in order, outer first (emul.c's order). */
static void collect(Ba *b, int r, bool ints)
{
	const Def *D = b->def;
	if (r == D->nred) {
		push_term(b, ints);
		return;
	}
	int64_t lo = ev_int(b, D->red[r].lo).v, hi = ev_int(b, D->red[r].hi).v;
	if (r == b->q)
		b->qlo = lo;
	for (int64_t v = lo; v < hi && !stop(b); v++) {
		b->vars[D->nlhs + r] = v;
		collect(b, r + 1, ints);
	}
}

static Bv node(Ba *b, Op op, const Bv *x, const Bv *y)
{
	return op == OP_ADD ? bv_add(&b->c, x, y, b->accf, false) : bv_mul(&b->c, x, y, b->accf);
}

static Bv pairwise(Ba *b, Op op, const Bv *t, size_t n)
{
	if (n == 1)
		return bv_round(&b->c, t[0], b->accf);
	size_t h = n / 2;
	Bv x = pairwise(b, op, t, h), y = pairwise(b, op, t + h, n - h);
	return node(b, op, &x, &y);
}

static Bv chain(Ba *b, Op op, const Bv *t, size_t n)
{
	Bv acc = bv_round(&b->c, t[0], b->accf);
	for (size_t i = 1; i < n; i++)
		acc = node(b, op, &acc, &t[i]);
	return acc;
}

/* `order s : any` (graph-format.md 7a: claims of --external kernels): the bound of the
 * worst tree. Every tree over n terms has n - 1 nodes, and each node's value is the sum
 * (product) of a subset of the terms. Sums: every subset sum, computed values and their
 * rounding errors included, lies in H = [sum min(0, lo_i) - E - R, sum max(0, hi_i) + E +
 * R] (E = sum e_i, R = n ulps at that magnitude, more than the n - 1 roundings of the
 * partials); a chain whose partial is widened to H before every node adds at each node
 * half an ulp at the largest magnitude a node of any tree can have, so its error bounds
 * every tree's (at most gamma_{n-1} * sum |t_i| + sum e_i, Higham's bound for any order).
 * Products: every tree has the same n - 1 roundings of relative u, so the chain's bound
 * holds to first order; where a subset product may overflow (the product of max(1, |t_i|)
 * does) there is no bound, and a subset product that may fall below the normal range adds
 * up to half a subnormal ulp per node, times that product. The enclosure of the exact
 * value is the chain's (it does not depend on the order). */
static Bv any_tree(Ba *b, Op op, const Bv *t, size_t n)
{
	Bv lin = chain(b, op, t, n);
	if (n < 2 || !bv_bounded(&lin))
		return lin;
	double lo = 0, hi = 0, E = 0, P = 1;
	for (size_t i = 0; i < n; i++) {
		if (!bv_bounded(&t[i]))
			return bv_unbounded(lin.tie);
		lo = bv_add_dn(lo, fmin(0, t[i].lo));
		hi = bv_add_up(hi, fmax(0, t[i].hi));
		E = bv_add_up(E, t[i].e);
		P *= fmax(1, fmax(fabs(t[i].lo), fabs(t[i].hi)) + t[i].e) * INFL;
	}
	if (op == OP_MUL) {
		double h = bv_half_ulp(b->accf, P);
		if (isinf(h))
			return bv_unbounded(lin.tie);
		lin.e = (lin.e + (double)(n - 1) * bv_half_ulp(b->accf, 0) * P) * INFL;
		return lin;
	}
	double M = fmax(-lo, hi) + E;
	double R = (double)n * 2 * bv_half_ulp(b->accf, 2 * M);
	if (isinf(R))
		return bv_unbounded(lin.tie);
	lo = bv_add_dn(lo, -(E + R));
	hi = bv_add_up(hi, E + R);
	Bv acc = bv_round(&b->c, t[0], b->accf);
	for (size_t i = 1; i < n && bv_bounded(&acc); i++) {
		acc.lo = fmin(acc.lo, lo);
		acc.hi = fmax(acc.hi, hi);
		acc = node(b, op, &acc, &t[i]);
	}
	if (!bv_bounded(&acc))
		return bv_unbounded(lin.tie);
	lin.e = fmax(lin.e, acc.e);
	return lin;
}

/* t[0..n-1] (n >= 1) in the accum format and order, as one chain or tree. */
static Bv fold1(Ba *b, Op op, const Bv *t, size_t n)
{
	if (b->order == ORDER_PAIRWISE)
		return pairwise(b, op, t, n);
	if (b->order == ORDER_ANY)
		return any_tree(b, op, t, n);
	return chain(b, op, t, n);
}

/* The pairwise tree over partials p[lo .. lo+n); an empty partial (the identity) joins
 * exactly. false when every partial there is empty. */
static bool ptree(Ba *b, Op op, const Bv *p, const bool *empty, size_t lo, size_t n, Bv *out)
{
	if (n == 1) {
		*out = p[lo];
		return !empty[lo];
	}
	size_t h = n / 2;
	Bv x, y;
	bool hx = ptree(b, op, p, empty, lo, h, &x), hy = ptree(b, op, p, empty, lo + h, n - h, &y);
	if (hx && hy)
		*out = node(b, op, &x, &y);
	else if (hx || hy)
		*out = hx ? x : y;
	return hx || hy;
}

/* The same, split: partial tp[i] gets term i (in order); the partials are combined in
 * order, linear or pairwise (lower.c's strided partial accumulators). */
static Bv fold(Ba *b, Op op, const Bv *t, size_t n)
{
	if (b->S <= 1 || b->order == ORDER_ANY)   /* any order: every split's trees too */
		return fold1(b, op, t, n);
	size_t S = (size_t)b->S;
	if (b->capsbuf < n + S) {
		b->capsbuf = n + S;
		b->sbuf = realloc(b->sbuf, b->capsbuf * sizeof *b->sbuf);
		b->scnt = realloc(b->scnt, (b->capsbuf + 1) * sizeof *b->scnt);
		b->sempty = realloc(b->sempty, b->capsbuf * sizeof *b->sempty);
		IR_ASSERT(b->sbuf && b->scnt && b->sempty);
	}
	size_t *at = b->scnt;
	memset(at, 0, (S + 1) * sizeof *at);
	for (size_t i = 0; i < n; i++)
		at[b->tp[i] + 1]++;
	for (size_t s = 1; s <= S; s++)
		at[s] += at[s - 1];
	Bv *grouped = b->sbuf, *part = b->sbuf + n;
	for (size_t i = 0; i < n; i++)
		grouped[at[b->tp[i]]++] = t[i];
	for (size_t s = 0; s < S; s++) {
		size_t lo = s ? at[s - 1] : 0, m = at[s] - lo;
		b->sempty[s] = m == 0;
		if (m)
			part[s] = fold1(b, op, grouped + lo, m);
	}
	Bv acc = part[0];
	if (b->order == ORDER_PAIRWISE) {
		ptree(b, op, part, b->sempty, 0, S, &acc);
		return acc;
	}
	bool have = false;
	for (size_t s = 0; s < S; s++) {
		if (b->sempty[s])
			continue;
		acc = have ? node(b, op, &acc, &part[s]) : part[s];
		have = true;
	}
	return acc;
}

/* logsumexp as the kernels compute it: m = max of the computed terms, then
 * m + log(sum exp(t - m)). m is treated as an exact input known to lie in the range of
 * the computed max (the expression equals logsumexp(t) whatever m is). */
static Bv lse(Ba *b, const Bv *t, size_t n)
{
	bool tie = false;
	double mlo = -INFINITY, mhi = -INFINITY, slack = 0;
	for (size_t i = 0; i < n; i++) {
		if (!bv_bounded(&t[i]))
			return bv_unbounded(true);
		tie |= t[i].tie;
		/* the kernel's max compares flushed terms (and may deliver an unflushed one) */
		Bv f = bv_flush(&b->c, t[i], b->opf);
		slack = fmax(slack, bv_ftz_slack(&b->c, &t[i], b->opf));
		mlo = fmax(mlo, bv_add_dn(f.lo, -f.e));
		mhi = fmax(mhi, bv_add_up(f.hi, f.e));
	}
	mlo = bv_add_dn(mlo, -slack);
	mhi = bv_add_up(mhi, slack);
	Bv m = {mlo, mhi, 0, (int8_t)b->opf, tie, false, 0};
	Bv *x = malloc(n * sizeof *x);
	IR_ASSERT(x);
	for (size_t i = 0; i < n; i++) {
		Bv d = bv_add(&b->c, &t[i], &m, b->opf, true);
		x[i] = bv_unary(&b->c, OP_EXP, &d, b->opf);
	}
	Bv s = fold(b, OP_ADD, x, n);
	free(x);
	Bv l = bv_unary(&b->c, OP_LOG, &s, b->accf);
	Bv r = bv_add(&b->c, &m, &l, b->accf, false);
	if (!bv_bounded(&r))
		return r;
	bv_lse(&b->c, t, n, &r.lo, &r.hi);
	r.tie = tie;
	return bv_bounded(&r) ? r : bv_unbounded(tie);
}

static Bv reduce_real(Ba *b)
{
	const Bv *t = b->tv;
	size_t n = b->n;
	switch (b->def->monoid) {
	case MO_SUM: return n ? fold(b, OP_ADD, t, n) : bv_exact(0.0, b->accf);
	case MO_PROD: return n ? fold(b, OP_MUL, t, n) : bv_exact(1.0, b->accf);
	case MO_MAX: case MO_MIN: {
		if (n == 0)
			return bv_unbounded(false);
		Bv acc = t[0];
		for (size_t i = 1; i < n; i++)
			acc = bv_maxmin(&b->c, &acc, &t[i], b->def->monoid == MO_MAX, b->accf);
		return bv_round(&b->c, acc, b->accf);
	}
	case MO_LOGSUMEXP: return n ? lse(b, t, n) : bv_unbounded(false);
	default: IR_ASSERT(!"reduce_real: not a real monoid");
	}
}

static Bi reduce_int(Ba *b)
{
	Monoid m = b->def->monoid;
	int64_t acc = m == MO_PROD ? 1 : m == MO_MAX ? INT64_MIN : m == MO_MIN ? INT64_MAX : 0;
	bool tie = false;
	if (b->n == 0 && (m == MO_MAX || m == MO_MIN)) {
		fail(b, b->def->pos, 2, "integer %s over an empty range has no value", monoid_name(m));
		return (Bi){0, true};
	}
	for (size_t i = 0; i < b->n; i++) {
		tie |= b->ti[i].tie;
		if (mp_int_reduce(m, &acc, b->ti[i].v)) {
			fail(b, b->def->pos, 2, "integer overflow in %s", monoid_name(m));
			return (Bi){0, true};
		}
	}
	return (Bi){acc, tie};
}

/* ------------------------------------------------------------ selections */

/* Does term i (exact key order: larger for dir > 0) certainly come before term j, for all
 * computed values within the bounds? Ties go to the smaller index. */
static bool beats(const Ba *b, size_t i, size_t j, int dir)
{
	const Bv *x = &b->tv[i], *y = &b->tv[j];
	double xl = dir > 0 ? bv_add_dn(x->lo, -x->e) : -bv_add_up(x->hi, x->e);
	double yh = dir > 0 ? bv_add_up(y->hi, y->e) : -bv_add_dn(y->lo, -y->e);
	return b->tix[j] < b->tix[i] ? xl > yh : xl >= yh;
}

/* Ranks term i before term j by the midpoints of the exact enclosures (integers exactly),
 * the smaller index first on ties: the exact order whenever the decision is certain. */
static bool before(const Ba *b, bool ints, int dir, size_t i, size_t j)
{
	if (ints) {
		int64_t x = b->ti[i].v, y = b->ti[j].v;
		if (x != y)
			return dir > 0 ? x > y : x < y;
	} else {
		double x = b->tv[i].lo / 2 + b->tv[i].hi / 2, y = b->tv[j].lo / 2 + b->tv[j].hi / 2;
		if (x != y)
			return dir > 0 ? x > y : x < y;
	}
	return b->tix[i] < b->tix[j];
}

/* The near-tie flag of a selection whose first k terms (positions, in b->tp) are chosen. */
static bool sel_tie(const Ba *b, bool ints, int dir, size_t k)
{
	for (size_t i = 0; i < b->n; i++)
		if (ints ? b->ti[i].tie : (b->tv[i].tie || !bv_bounded(&b->tv[i])))
			return true;
	if (ints)
		return false;
	for (size_t p = 0; p < k; p++)
		for (size_t q = p + 1; q < b->n; q++)
			if (!beats(b, (size_t)b->tp[p], (size_t)b->tp[q], dir))
				return true;
	return false;
}

/* Puts the k best terms first (positions in b->tp, in rank order). */
static void rank(Ba *b, bool ints, int dir, size_t k)
{
	for (size_t i = 0; i < b->n; i++)
		b->tp[i] = (int64_t)i;
	for (size_t p = 0; p < k; p++) {
		size_t best = p;
		for (size_t q = p + 1; q < b->n; q++)
			if (before(b, ints, dir, (size_t)b->tp[q], (size_t)b->tp[best]))
				best = q;
		int64_t x = b->tp[p];
		b->tp[p] = b->tp[best];
		b->tp[best] = x;
	}
}

/* A selection compares the terms as flushed (bv_flush); returns the most a delivered
 * (unflushed) term can differ from its flushed key (bv_ftz_slack). */
static double flush_terms(Ba *b)
{
	double s = 0;
	for (size_t i = 0; i < b->n; i++) {
		s = fmax(s, bv_ftz_slack(&b->c, &b->tv[i], b->opf));
		b->tv[i] = bv_flush(&b->c, b->tv[i], b->opf);
	}
	return s;
}

static Bi arg_best(Ba *b, bool ints, int dir)
{
	if (b->n == 0)
		return (Bi){-1, false};
	rank(b, ints, dir, 1);
	return (Bi){b->tix[b->tp[0]], sel_tie(b, ints, dir, 1)};
}

static int cmp_desc(const void *x, const void *y)
{
	double a = *(const double *)x, c = *(const double *)y;
	return a < c ? 1 : a > c ? -1 : 0;
}

static void store_int(Ba *b, int t, int64_t e, Bi v)
{
	if (v.v < INT32_MIN || v.v > INT32_MAX)
		fail(b, b->def->pos, 2, "integer value %lld does not fit in 32 bits", (long long)v.v);
	b->iv[t][e] = v.v;
	b->itie[t][e] = v.tie;
}

/* The K values of a real topk element: the k-th largest of the terms, whose error is at
 * most the largest term error (order statistics are 1-Lipschitz in the max norm), plus
 * `slack` where the terms were ranked flushed (flush_terms). */
static void topk_values(Ba *b, int t, int64_t e, int64_t K, double slack)
{
	size_t n = b->n;
	double *lo = malloc(2 * n * sizeof *lo), *hi = lo + n, emax = 0;
	IR_ASSERT(lo);
	bool tie = false, ok = true;
	for (size_t i = 0; i < n; i++) {
		lo[i] = b->tv[i].lo;
		hi[i] = b->tv[i].hi;
		emax = fmax(emax, b->tv[i].e);
		tie |= b->tv[i].tie;
		ok &= bv_bounded(&b->tv[i]);
	}
	qsort(lo, n, sizeof *lo, cmp_desc);
	qsort(hi, n, sizeof *hi, cmp_desc);
	for (int64_t k = 0; k < K; k++) {
		Bv v = ok ? (Bv){lo[k], hi[k], slack > 0 ? (emax + slack) * INFL : emax,
				 (int8_t)b->opf, tie, false, 0} : bv_unbounded(tie);
		b->rv[t][e * K + k] = bv_round(&b->c, v, b->stf);
	}
	free(lo);
}

static void set_lhs(Ba *b, int64_t e, int n)
{
	const Tensor *t = &b->g->tensors[b->def->out[0]];
	for (int k = n - 1; k >= 0; k--) {
		int64_t ext = t->dims[k].value;
		b->vars[k] = e % ext;
		e /= ext;
	}
}

static void topk_element(Ba *b, int64_t e, bool ints)
{
	const Def *D = b->def;
	int tv = D->out[0], ti = D->out[1];
	int64_t K = b->g->tensors[tv].dims[D->nlhs - 1].value;
	set_lhs(b, e, D->nlhs - 1);
	b->vars[D->nlhs - 1] = 0;
	b->n = 0;
	collect(b, 0, ints);
	if (stop(b))
		return;
	if ((int64_t)b->n < K) {
		fail(b, D->pos, 2, "topk over a range of %zu terms, fewer than K = %lld", b->n,
		     (long long)K);
		return;
	}
	double slack = ints ? 0 : flush_terms(b);
	rank(b, ints, 1, (size_t)K);
	bool tie = sel_tie(b, ints, 1, (size_t)K);
	for (int64_t k = 0; k < K; k++) {
		size_t i = (size_t)b->tp[k];
		store_int(b, ti, e * K + k, (Bi){b->tix[i], tie});
		if (ints)
			store_int(b, tv, e * K + k, b->ti[i]);
	}
	if (!ints)
		topk_values(b, tv, e, K, slack);
}

/* ------------------------------------------------------------ online passes */

/* The analysis of the one-pass order of compiler/kir/lower.c's el_online (docs/online.md),
 * operation by operation: per split piece the state (m, l[, acc]) or (n, mean, M2), each
 * term's max, safe shift, rescales exp((m - m') * c), products and sums in the member's
 * formats, the pieces merged in order, and the member's value. Every value is a Bv, so the
 * enclosures hold the exact value of the recurrence, which over the reals is the graph's
 * (the rules' identities), and e bounds the computed value's distance to it. A rescale
 * the kernel skips where m == m' (the factor 1) is exp(0) = 1 exactly, within the exp's
 * bound. The pass's terms are evaluated with the max read as the running shift, plain
 * definitions that read it evaluated where read (in their op format, not rounded to a store
 * format), and the member's max or mean at the row its read names. */
typedef struct {
	const Def *def;
	Dtype opf, accf, stf;
	int64_t vars[IR_MAXVARS];
} BaSave;

static void ba_save(const Ba *b, BaSave *s)
{
	s->def = b->def;
	s->opf = b->opf;
	s->accf = b->accf;
	s->stf = b->stf;
	memcpy(s->vars, b->vars, sizeof s->vars);
}

static void ba_restore(Ba *b, const BaSave *s)
{
	b->def = s->def;
	b->opf = s->opf;
	b->accf = s->accf;
	b->stf = s->stf;
	memcpy(b->vars, s->vars, sizeof s->vars);
}

static void ba_enter(Ba *b, int d)
{
	const DefSched *x = &b->s->defs[d];
	b->def = &b->g->defs[d];
	b->opf = real_fmt(x->op);
	b->accf = real_fmt(x->accum);
	b->stf = real_fmt(x->store);
}

/* A read of a plain definition the pass computes where read. */
static Bv plain_at(Ba *b, const Node *n)
{
	const Graph *g = b->g;
	int d = g->tensors[n->u.read.tensor].def;
	int64_t idx[IR_MAXRANK];
	const Ref *ix = ir_read_idx(g, n);
	for (uint32_t i = 0; i < n->u.read.n; i++)
		idx[i] = ev_int(b, ix[i]).v;
	BaSave sv;
	ba_save(b, &sv);
	ba_enter(b, d);
	for (uint32_t i = 0; i < n->u.read.n; i++)
		b->vars[i] = idx[i];
	Bv v = ev_real(b, g->defs[d].body);
	ba_restore(b, &sv);
	return bv_round(&b->c, v, b->opf);
}

/* Evaluates r in member d's frame, the max (mean) read at the shift v; the indices of
 * that read come back in b->ovidx. */
static Bv with_shift(Ba *b, Ref r, Bv v)
{
	b->ovv = v;
	b->ovseen = false;
	return ev_real(b, r);
}

/* The max's (mean's) term at the row recorded in b->ovidx and index j. */
static Bv row_term(Ba *b, int md, Ref r, int64_t j)
{
	BaSave sv;
	ba_save(b, &sv);
	ba_enter(b, md);
	const Def *M = b->def;
	for (int i = 0; i < M->nlhs; i++)
		b->vars[i] = b->ovidx[i];
	b->vars[M->nlhs] = j;
	int save_ovt = b->ovt;
	b->ovt = -1;
	Bv x = ev_real(b, r);
	b->ovt = save_ovt;
	ba_restore(b, &sv);
	return x;
}

typedef struct {
	Bv m, l, a;
	int64_t n;
	bool any;
} OnSt;

/* exp((m - mn) * c) in format f */
static Bv o_scale(Ba *b, const Bv *m, const Bv *mn, const Bv *c, Dtype f)
{
	Bv d = bv_add(&b->c, m, mn, f, true);
	if (c)
		d = bv_mul(&b->c, &d, c, f);
	return bv_unary(&b->c, OP_EXP, &d, f);
}

/* s * k + t in format f */
static Bv o_axpy(Ba *b, const Bv *s, const Bv *k, const Bv *t, Dtype f)
{
	Bv p = bv_mul(&b->c, s, k, f);
	return bv_add(&b->c, &p, t, f, false);
}

static void online_element(Ba *b, int64_t e, const OnPlan *p, int role)
{
	const Graph *g = b->g;
	const Def *D = b->def;
	int t = D->out[0];
	set_lhs(b, e, D->nlhs);
	bool lse = p->rule == ON_LSE, wf = p->rule == ON_WELFORD;
	int md = p->def[0], ld = lse ? md : p->def[1];
	const Def *M = &g->defs[md];
	Dtype mf = real_fmt(b->s->defs[md].op), lf = real_fmt(b->s->defs[ld].op), of = b->opf;
	if (role == 0 || lse)
		mf = lf = of;
	if (role == 1)
		lf = of;
	int64_t S = 1;
	if (b->s->defs[b->def - g->defs].split[0] > 1)
		S = b->s->defs[b->def - g->defs].split[0];
	OnSt *st = calloc((size_t)S, sizeof *st);
	IR_ASSERT(st);
	int64_t lo = ev_int(b, D->red[0].lo).v, hi = ev_int(b, D->red[0].hi).v;
	BaSave sv;
	ba_save(b, &sv);
	Bv cl = {0}, co = {0};
	bool hasc = p->scale != REF_NONE, got_cl = false, got_co = false;
	b->ovt = g->defs[md].out[0];
	Bv zero = bv_exact(0.0, DT_NONE);
	for (int64_t j = lo; j < hi && !stop(b); j++) {
		OnSt *q = &st[S > 1 ? (j - lo) % S : 0];
		b->vars[D->nlhs] = j;
		Bv x, tl = zero, to = zero;
		if (lse) {
			x = ev_real(b, D->body);
		} else if (wf) {
			if (role == 1)
				(void)with_shift(b, D->body, q->any ? q->m : zero);
			else {
				for (int i = 0; i < D->nlhs; i++)
					b->ovidx[i] = b->vars[i];
				b->ovseen = true;
			}
			x = row_term(b, md, ir_node(g, M->body)->a[0], j);
		} else {
			/* the row of m (and of l): a first evaluation with any shift */
			Bv probe = with_shift(b, role == 2 ? p->num : D->body, zero);
			(void)probe;
			if (!b->ovseen) {
				fail(b, D->pos, 3, "internal: online pass: the max is not read");
				break;
			}
			x = row_term(b, md, M->body, j);
		}
		if (stop(b))
			break;
		if (wf) {
			q->n++;
			Bv nb = bv_exact((double)q->n, DT_NONE);
			Bv mean = q->any ? q->m : zero;
			Bv d = bv_add(&b->c, &x, &mean, mf, true);
			Bv dn = bv_div(&b->c, &d, &nb, mf);
			q->m = bv_add(&b->c, &mean, &dn, mf, false);
			if (role == 1) {
				Bv d2 = bv_add(&b->c, &x, &q->m, mf, true);
				Bv m2 = q->any ? q->l : zero;
				q->l = o_axpy(b, &d, &d2, &m2, mf);
			}
			q->any = true;
			continue;
		}
		Bv mn = q->any ? bv_maxmin(&b->c, &q->m, &x, true, mf) : x;
		/* the terms with the new shift */
		if (lse) {
			Bv dd = bv_add(&b->c, &x, &mn, mf, true);
			tl = bv_unary(&b->c, OP_EXP, &dd, mf);
		} else if (role == 2) {
			to = with_shift(b, p->num, mn);
			BaSave s2;
			ba_save(b, &s2);
			/* l's term at the row of l read by o's divisor */
			const Node *dn = ir_node(g, ir_node(g, D->body)->a[1]);
			const Ref *ix = ir_read_idx(g, dn);
			int64_t li[IR_MAXRANK];
			for (uint32_t i = 0; i < dn->u.read.n; i++)
				li[i] = ev_int(b, ix[i]).v;
			ba_enter(b, ld);
			for (uint32_t i = 0; i < dn->u.read.n; i++)
				b->vars[i] = li[i];
			b->vars[g->defs[ld].nlhs] = j;
			tl = with_shift(b, g->defs[ld].body, mn);
			if (hasc && !got_cl)
				cl = ev_real(b, p->scale), got_cl = true;
			ba_restore(b, &s2);
			if (hasc && !got_co)
				co = ev_real(b, p->scale), got_co = true;
		} else {
			tl = with_shift(b, D->body, mn);
			if (hasc && !got_cl)
				cl = ev_real(b, p->scale), got_cl = true;
		}
		if (stop(b))
			break;
		if (!q->any) {
			q->l = bv_round(&b->c, tl, lf);
			q->a = bv_round(&b->c, to, of);
		} else {
			Bv fl = o_scale(b, &q->m, &mn, hasc ? &cl : NULL, lf);
			q->l = o_axpy(b, &q->l, &fl, &tl, lf);
			if (role == 2) {
				Bv fo = o_scale(b, &q->m, &mn, hasc ? &co : NULL, of);
				q->a = o_axpy(b, &q->a, &fo, &to, of);
			}
		}
		q->m = mn;
		q->any = true;
	}
	ba_restore(b, &sv);
	b->ovt = -1;
	/* the pieces merged in order into piece 0 */
	OnSt *a = &st[0];
	for (int64_t k = 1; k < S && !stop(b); k++) {
		OnSt *c = &st[k];
		if (!c->any)
			continue;
		if (!a->any) {
			*a = *c;
			continue;
		}
		if (wf) {
			int64_t n = a->n + c->n;
			Bv naf = bv_exact((double)a->n, DT_NONE), nbf = bv_exact((double)c->n, DT_NONE);
			Bv nf = bv_exact((double)n, DT_NONE);
			Bv d = bv_add(&b->c, &c->m, &a->m, mf, true);
			Bv w = bv_div(&b->c, &nbf, &nf, mf);
			Bv dw = bv_mul(&b->c, &d, &w, mf);
			Bv mean = bv_add(&b->c, &a->m, &dw, mf, false);
			if (role == 1) {
				Bv ab = bv_mul(&b->c, &naf, &nbf, mf);
				Bv wn = bv_div(&b->c, &ab, &nf, mf);
				Bv dd = bv_mul(&b->c, &d, &d, mf);
				Bv s2 = bv_add(&b->c, &a->l, &c->l, mf, false);
				a->l = o_axpy(b, &dd, &wn, &s2, mf);
			}
			a->m = mean;
			a->n = n;
			continue;
		}
		Bv mn = bv_maxmin(&b->c, &a->m, &c->m, true, mf);
		if (role == 2) {
			Bv fa = o_scale(b, &a->m, &mn, hasc ? &co : NULL, of);
			Bv fb = o_scale(b, &c->m, &mn, hasc ? &co : NULL, of);
			Bv pb = bv_mul(&b->c, &c->a, &fb, of);
			a->a = o_axpy(b, &a->a, &fa, &pb, of);
		}
		Bv fa = o_scale(b, &a->m, &mn, hasc ? &cl : NULL, lf);
		Bv fb = o_scale(b, &c->m, &mn, hasc ? &cl : NULL, lf);
		Bv pb = bv_mul(&b->c, &c->l, &fb, lf);
		a->l = o_axpy(b, &a->l, &fa, &pb, lf);
		a->m = mn;
	}
	Bv v;
	if (stop(b)) {
		v = bv_unbounded(false);
	} else if (!a->any) {
		v = wf && role == 1 ? bv_unbounded(false) : lse ? bv_unbounded(false) : zero;
		if (wf && role == 0)
			v = zero;
	} else if (wf) {
		if (role == 0) {
			v = bv_round(&b->c, a->m, of);
		} else {
			Bv nn = ev_real(b, ir_node(g, D->body)->a[1]);
			Bv m2 = bv_round(&b->c, a->l, of);
			/* M2 / N, or M2 * 2^-k (online.c mean_of: a rewritten / 2^k) */
			v = ir_node(g, D->body)->op == OP_MUL ? bv_mul(&b->c, &m2, &nn, of)
				: bv_div(&b->c, &m2, &nn, of);
		}
	} else if (lse) {
		Bv lg = bv_unary(&b->c, OP_LOG, &a->l, of);
		v = bv_add(&b->c, &a->m, &lg, of, false);
	} else if (role == 1) {
		v = a->l;
	} else {
		Bv lv = bv_round(&b->c, a->l, of);
		v = bv_div(&b->c, &a->a, &lv, of);
	}
	free(st);
	b->rv[t][e] = bv_round(&b->c, v, b->stf);
}

/* ------------------------------------------------------------ elements */

static void mma_element(Ba *b, int64_t e);

static void do_element(Ba *b, int64_t e)
{
	const Def *D = b->def;
	int t = D->out[0];
	bool body_int = ir_node(b->g, D->body)->ty == TY_INT;
	if (D->monoid == MO_TOPK) {
		topk_element(b, e, body_int && b->iv[t]);
		return;
	}
	set_lhs(b, e, D->nlhs);
	if (D->monoid == MO_NONE) {
		if (b->iv[t])
			store_int(b, t, e, ev_int(b, D->body));
		else
			b->rv[t][e] = bv_round(&b->c, ev_real(b, D->body), b->stf);
		return;
	}
	if (b->on.rule >= 0 && b->orole >= 0) {
		online_element(b, e, &b->on, b->orole);
		return;
	}
	if (b->mblock) {
		mma_element(b, e);
		return;
	}
	bool arg = D->monoid == MO_ARGMAX || D->monoid == MO_ARGMIN;
	bool ints = body_int && (arg || b->iv[t]);
	b->n = 0;
	collect(b, 0, ints);
	if (stop(b))
		return;
	if (arg && !ints)
		flush_terms(b);
	if (arg)
		store_int(b, t, e, arg_best(b, ints, D->monoid == MO_ARGMAX ? 1 : -1));
	else if (b->iv[t])
		store_int(b, t, e, reduce_int(b));
	else
		b->rv[t][e] = bv_round(&b->c, reduce_real(b), b->stf);
}

/* ------------------------------------------------------------ the driver */

static Dtype real_fmt(Dtype f)
{
	return f == DT_I32 || f == DT_NONE ? DT_F64 : f;
}

static void def_setup(Ba *b, int k)
{
	const Def *D = &b->g->defs[k];
	const DefSched *x = &b->s->defs[k];
	b->def = D;
	b->opf = real_fmt(x->op);
	b->accf = real_fmt(x->accum);
	b->stf = real_fmt(x->store);
	b->order = x->order;
	b->S = 1;
	b->q = -1;
	if (D->monoid != MO_SUM && D->monoid != MO_PROD && D->monoid != MO_LOGSUMEXP)
		return;
	for (int r = 0; r < D->nred; r++)
		if (x->split[r] > 1) {
			b->S = x->split[r];
			b->q = r;
		}
}

/* An mma definition's unit (docs/mma.md): the bound must hold on every device the
 * backend may have, so it takes, over interp/mma.c's rows for the operand format, the
 * fewest products per block (the most result roundings) and the fewest fraction bits. */
static void mma_setup(Ba *b, int k)
{
	const DefSched *x = &b->s->defs[k];
	b->mblock = 0;
	if (!x->mma)
		return;
	char why[300];
	if (!sched_mma_factors(b->g, b->s, k, &b->mfa, &b->mfb, &b->mab, why, sizeof why))
		IR_ASSERT(!"mma_setup: sched_build took a schedule its factors do not fit");
	for (int i = 0; i < mma_nunits; i++) {
		const MmaUnit *u = &mma_units[i];
		if (u->ab != b->mab || u->acc != DT_F32)
			continue;
		if (!b->mblock || u->block < b->mblock)
			b->mblock = u->block;
		if (!b->mfrac || u->frac < b->mfrac)
			b->mfrac = u->frac;
	}
	IR_ASSERT(b->mblock > 0);
}

/* The computed value's largest magnitude: |exact| at most max(|lo|, |hi|), plus e. */
static double mag(const Bv *v)
{
	return bv_add_up(fmax(fabs(v->lo), fabs(v->hi)), v->e);
}

/* An mma element: the unit's chain of fused blocks (interp/mma.c). Each product is exact
 * (two 16-bit factors); a block adds to the errors it takes (its products' and c's) its
 * own: every term truncated toward zero below 2^E, E the largest exponent of the block's
 * computed terms, each term at most 2^E... so at most nt * 2^(E - frac) <= nt * M * 2^-frac
 * for M the largest computed |term| (c included), plus nt * 2^(2 emin - frac) where
 * subnormal factors put E above the terms themselves; and the result rounded toward
 * zero into f32: below one ulp, 2^-23 |computed sum| + 2^-149. The bias (truncation and
 * RZ both shrink magnitudes) is why the bound is this deterministic n * u one, not a
 * probabilistic one. A sum that may pass f32's range is unbounded. */
static void mma_element(Ba *b, int64_t e)
{
	const Def *D = b->def;
	b->n = 0;
	collect(b, 0, false);   /* terms: the factors' products, pushed by push_term */
	if (stop(b))
		return;
	int emin = (int)dt_info(b->mab)->emin + dt_info(b->mab)->prec - 2;
	Bv acc = bv_exact(0.0, DT_F64);
	for (size_t at = 0; at < b->n; at += (size_t)b->mblock) {
		size_t m = b->n - at < (size_t)b->mblock ? b->n - at : (size_t)b->mblock;
		double M = mag(&acc);
		Bv s = acc;
		for (size_t i = 0; i < m; i++) {
			M = fmax(M, mag(&b->tv[at + i]));
			s = bv_add(&b->c, &s, &b->tv[at + i], DT_F64, false);
		}
		if (!isfinite(s.e) || s.nan || s.inf)
			break;
		double nt = (double)m + 1;
		double L = nt * ldexp(M, -b->mfrac) * INFL;
		L = bv_add_up(L, nt * ldexp(1.0, 2 * emin - b->mfrac));
		double top = bv_add_up(mag(&s), L);
		if (top >= 0x1p128) {
			acc = bv_unbounded(s.tie);
			break;
		}
		L = bv_add_up(L, bv_add_up(ldexp(top, -23) * INFL, 0x1p-149));
		s.e = bv_add_up(s.e, L);
		s.fmt = DT_F32;
		acc = s;
	}
	b->rv[D->out[0]][e] = bv_round(&b->c, acc, b->stf);
}

static void ba_free(Ba *b)
{
	const Graph *g = b->g;
	for (int t = 0; t < g->ntensors; t++) {
		if (b->rv)
			free(b->rv[t]);
		if (b->iv)
			free(b->iv[t]);
		if (b->itie)
			free(b->itie[t]);
	}
	free(b->rv);
	free(b->iv);
	free(b->itie);
	free(b->stride);
	free(b->tv);
	free(b->ti);
	free(b->tix);
	free(b->tp);
	free(b->sbuf);
	free(b->scnt);
	free(b->sempty);
	free(b->odep);
	bv_free(&b->c);
}

static int ba_init(Ba *b, const Graph *g, const Schedule *s, int be, const char *backend,
		   const BeFacts *facts, const HostTensor *in, Diag *d)
{
	memset(b, 0, sizeof *b);
	b->g = g;
	b->s = s;
	b->d = d;
	bv_init(&b->c, be);
	bv_set_ftz(&b->c, facts_of(backend)->flush);
	b->c.nan_claims = nan_claims(backend);
	const BeFacts *f = facts ? facts : facts_of(backend);
	b->c.inf_claims = f->specials;
	b->c.fn_inf = f->specials ? al_fn_specials(be) : 0;
	memcpy(b->c.rn, f->exact, sizeof b->c.rn);
	size_t nt = (size_t)g->ntensors + 1;
	b->rv = calloc(nt, sizeof *b->rv);
	b->iv = calloc(nt, sizeof *b->iv);
	b->itie = calloc(nt, sizeof *b->itie);
	b->stride = calloc(nt, sizeof *b->stride);
	IR_ASSERT(b->rv && b->iv && b->itie && b->stride);
	int k = 0;
	for (int t = 0; t < g->ntensors; t++) {
		const Tensor *T = &g->tensors[t];
		int64_t n = ir_tensor_count(g, t), st = 1;
		for (int i = T->rank - 1; i >= 0; i--) {
			b->stride[t][i] = st;
			st *= T->dims[i].value;
		}
		size_t m = (size_t)(n ? n : 1);
		if (T->dtype == DT_I32) {
			b->iv[t] = calloc(m, sizeof **b->iv);
			b->itie[t] = calloc(m, 1);
			IR_ASSERT(b->iv[t] && b->itie[t]);
		} else {
			b->rv[t] = calloc(m, sizeof **b->rv);
			IR_ASSERT(b->rv[t]);
		}
		if (T->kind != TK_INPUT)
			continue;
		const HostTensor *h = &in[k++];
		if (!h->data || h->dtype != T->dtype || h->n != n) {
			diag_set(d, 2, "budget: input '%s' is declared %s with %lld elements but was "
				 "given %s with %lld", T->name, dt_name((Dtype)T->dtype), (long long)n,
				 h->data ? dt_name(h->dtype) : "nothing", (long long)h->n);
			return -1;
		}
		for (int64_t i = 0; i < n; i++) {
			if (b->iv[t])
				b->iv[t][i] = (int64_t)ht_get(h, i);
			else
				b->rv[t][i] = leaf(b, bv_exact(ht_get(h, i), (Dtype)T->dtype));
		}
	}
	return 0;
}

/* The online plan of definition k and the plain definitions its pass evaluates where
 * read (compiler/kir/lower.c on_setup and on_role). */
static void online_setup(Ba *b, int k)
{
	const Graph *g = b->g;
	b->on.rule = -1;
	b->orole = -1;
	b->ovt = -1;
	free(b->odep);
	b->odep = NULL;
	if (on_plan(g, b->s, k, &b->on))
		return;
	for (int r = 0; r < b->on.n; r++)
		if (b->on.def[r] == k)
			b->orole = r;
	if (b->orole == 0 && (b->on.rule == ON_SOFTMAX || b->on.rule == ON_FLASH))
		b->orole = -1;
	size_t nt = (size_t)g->ntensors + 1;
	bool *dep = calloc(nt, 1);
	b->odep = calloc(nt, 1);
	IR_ASSERT(dep && b->odep);
	for (int r = 0; r < b->on.n; r++)
		dep[g->defs[b->on.def[r]].out[0]] = true;
	for (int t = 0; t < g->ntensors; t++) {
		const Tensor *T = &g->tensors[t];
		if (T->kind != TK_DEF || dep[t] || g->defs[T->def].monoid != MO_NONE)
			continue;
		dep[t] = on_reads(g, g->defs[T->def].body, dep);
		b->odep[t] = dep[t];
	}
	free(dep);
}

static int run_defs(Ba *b)
{
	const Graph *g = b->g;
	for (int k = 0; k < g->ndefs; k++) {
		def_setup(b, k);
		online_setup(b, k);
		mma_setup(b, k);
		const Def *D = b->def;
		int64_t n = ir_tensor_count(g, D->out[0]);
		if (D->monoid == MO_TOPK)
			n /= g->tensors[D->out[0]].dims[D->nlhs - 1].value;
		memset(b->vars, 0, sizeof b->vars);
		for (int64_t e = 0; e < n && !b->failed; e++)
			do_element(b, e);
		if (b->failed)
			return -1;
	}
	return 0;
}

/* Output k's budgets (and near-tie flags) from the analysis. */
static int deliver(Ba *b, int k, HostTensor *out, uint8_t **ties, Diag *d)
{
	const Graph *g = b->g;
	const Output *o = &g->outputs[k];
	const Tensor *T = &g->tensors[o->tensor];
	if (o->dtype == DT_I32 && !b->iv[o->tensor]) {
		diag_set(d, 2, "budget: output '%s' : i32 of a real-valued tensor", T->name);
		return -1;
	}
	int64_t dims[IR_MAXRANK];
	for (int i = 0; i < T->rank; i++)
		dims[i] = T->dims[i].value;
	if (ht_alloc(out, DT_F64, T->rank, dims) < 0) {
		diag_set(d, 3, "budget: out of memory for output '%s'", T->name);
		return -1;
	}
	uint8_t *tie = ties ? malloc((size_t)(out->n ? out->n : 1)) : NULL;
	IR_ASSERT(!ties || tie);
	double *bud = out->data;
	for (int64_t i = 0; i < out->n; i++) {
		if (b->iv[o->tensor]) {
			bud[i] = 0;
			if (tie)
				tie[i] = b->itie[o->tensor][i];
		} else {
			const Bv *v = &b->rv[o->tensor][i];
			bud[i] = v->nan && !b->c.nan_claims ? INFINITY : bv_budget(&b->c, v, o->dtype);
			/* a zero's sign is claimed by a bound of 0: not where the backend may ignore
			 * it (nan_claims' reading: SPIR-V without SignedZeroInfNanPreserve lets
			 * lavapipe fold 0.0 - x into -x, so 0 - (+0) came back -0; WGSL likewise) */
			if (bud[i] == 0 && !b->c.nan_claims && v->lo <= 0 && v->hi >= 0)
				bud[i] = 0x1p-1074;
			if (tie)
				tie[i] = v->tie;
		}
	}
	if (ties)
		ties[k] = tie;
	return 0;
}

int orc_budget_ties(const Graph *g, const Schedule *s, const char *backend,
		    const HostTensor *inputs, HostTensor *budgets, uint8_t **ties, Diag *d)
{
	return orc_budget_facts(g, s, backend, NULL, inputs, budgets, ties, d);
}

int orc_budget_facts(const Graph *g, const Schedule *s, const char *backend,
		     const BeFacts *facts, const HostTensor *inputs, HostTensor *budgets,
		     uint8_t **ties, Diag *d)
{
	int be = al_backend(backend);
	if (be < 0) {
		diag_set(d, 2, "budget: unknown backend '%s' (known: emul, c, opencl, vulkan, wgsl, "
			 "cuda)", backend);
		return -1;
	}
	if (!s || s->ndefs != g->ndefs) {
		diag_set(d, 3, "budget: internal: a schedule of %d definitions for a graph of %d",
			 s ? s->ndefs : -1, g->ndefs);
		return -1;
	}
	mpfr_exp_t emin = mpfr_get_emin(), emax = mpfr_get_emax();
	mpfr_set_emin(mpfr_get_emin_min());
	mpfr_set_emax(mpfr_get_emax_max());
	Ba b;
	int rc = -1, nout = 0;
	if (ba_init(&b, g, s, be, backend, facts, inputs, d) < 0)
		goto out;
	if (run_defs(&b) < 0)
		goto out;
	for (; nout < g->noutputs; nout++)
		if (deliver(&b, nout, &budgets[nout], ties, d) < 0)
			goto out;
	rc = 0;
out:
	if (rc < 0)
		for (int k = 0; k < nout; k++) {
			ht_free(&budgets[k]);
			if (ties) {
				free(ties[k]);
				ties[k] = NULL;
			}
		}
	ba_free(&b);
	mpfr_set_emin(emin);
	mpfr_set_emax(emax);
	return rc;
}

int orc_budget(const Graph *g, const Schedule *s, const char *backend,
	       const HostTensor *inputs, HostTensor *budgets, Diag *d)
{
	return orc_budget_ties(g, s, backend, inputs, budgets, NULL, d);
}

/* ------------------------------------------------------------ emulator configuration */

void orc_emu_config(const Graph *g, const Schedule *s, OrcEmu *e)
{
	size_t n = (size_t)g->ndefs + 1;
	e->fmt = calloc(3 * n, sizeof *e->fmt);
	e->order = calloc(n, sizeof *e->order);
	e->split = calloc(n, sizeof *e->split);
	e->split_red = calloc(n, sizeof *e->split_red);
	IR_ASSERT(e->fmt && e->order && e->split && e->split_red);
	int nd = g->ndefs;
	sched_formats(g, s, e->fmt, e->fmt + nd, e->fmt + 2 * nd, e->order);
	for (int k = 0; k < nd; k++)
		for (int r = 0; r < g->defs[k].nred; r++)
			if (s->defs[k].split[r] > 1) {
				e->split[k] = s->defs[k].split[r];
				e->split_red[k] = r;
			}
	e->cfg = (EmuConfig){DT_F32, e->fmt, e->fmt + nd, e->fmt + 2 * nd, e->order, e->split,
			     e->split_red, s, 0};
}

void orc_emu_free(OrcEmu *e)
{
	free(e->fmt);
	free(e->order);
	free(e->split);
	free(e->split_red);
	memset(e, 0, sizeof *e);
}
