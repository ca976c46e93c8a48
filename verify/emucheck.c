/* verify/emucheck.c: the emulation check, bit-exact verdicts where the numbers are
 * determined (docs/oracle.md "Bit-exact verdicts").
 *
 * The emulating interpreter (interp/emul.c) rounds every operation in the schedule's
 * formats and order, as compiler/kir/lower.c's kernels compute: f16 and bf16 arithmetic as f32
 * operations rounded to the format, loads rounded into the op format, reductions in the
 * schedule's tree (linear, pairwise, split partials combined in order), sums from -0,
 * inlined definitions computed in their own op format, stores and outputs rounded to
 * nearest even. Where a kernel's arithmetic is fully specified on a backend, a correct
 * kernel's outputs are therefore exactly the emulation's, and a difference is a verdict of
 * its own, whatever the budgets say (an exact tie rounded away from zero is within every
 * budget).
 *
 * Per output, over its cone: output k's values are computed from the definitions it
 * depends on (vf_emu_cone: its own and, transitively, every definition a read names in
 * theirs, in terms, index lists, reduction bounds and `??` defaults, inlined ones included)
 * and from nothing else, so output k is judged on its cone alone: an exp in another
 * output's definitions says nothing about it. A correct kernel's values for output k
 * depend on no definition outside the cone however the kernels are fused or share memory
 * (anything else is a miscompilation, which is what the check is for), a contraction or a
 * flush can change only the operations it is applied to, and a device assuming no NaN can
 * change only real operations.
 *
 * Online passes (docs/online.md): the emulator computes them in the kernel's one-pass
 * order (interp/emul.c online_element: the rescales, the Welford updates and the merges),
 * so they are held to it like any other order where their operations are promised (a
 * Welford pass; a softmax pass has exp, which is not).
 *
 * Fully specified (vf_emu_specified), from the backend's facts on the run's device
 * (compiler.h BeFacts: Backend.facts refined by Backend.device_facts in the worker):
 * - every real operation of every definition of the cone (terms, the monoid's combine,
 *   comparisons, selections, casts, conversions of loads, integers and stored values into
 *   their format) is in the facts' promised set for the format it computes in: + - * /
 *   sqrt fma where correctly rounded, the exact ones (neg, abs, max, min, floor, ceil, ?:,
 *   comparisons), conversions; no function with an allowance (exp, log, sin, tanh, pow,
 *   rsqrt, sigmoid, ... and so logsumexp) and no format the backend promises nothing in;
 * - a cone with real operations needs special values kept, and one with + - * / or fma
 *   no contraction;
 * - integer arithmetic is exact everywhere (int64, overflow checked where stored);
 * - the order is fixed: every schedule fixes it (linear or pairwise, split partials
 *   combined in order), and the kernels keep it (kir.h);
 * - a device that may flush a width's subnormals is held to the emulation only where the
 *   emulation met no subnormal of that width in the cone's definitions (mp_emulate_defs's
 *   bits per definition): vulkan on lavapipe, which grants no DenormPreserve, is checked on
 *   every output whose definitions' values stay normal.
 * Elements compare bit for bit: any NaN equals any NaN (payloads and signs are not
 * promised); otherwise the bits, the sign of a zero included: under IEEE rounding to
 * nearest every zero's sign is determined (x - x is +0, a sum of -0 terms is -0, an empty
 * sum +0, max(-0, +0) is +0, a product's sign is the xor, underflow keeps the sign).
 * A graph with an output checked on sampled elements (larger than max_exact) is not
 * emulated: its emulation costs as much as the exact oracle. An emulation that fails or
 * stops at its deadline, in whichever definition, emulates no output.
 *
 * The first differing operation: on a mismatch, vf_emu_locate runs the kernels again on a
 * copy of the graph whose stored definitions in the cones of the differing outputs are
 * outputs too (the same kernels: lowering does not look at outputs) and compares, for each
 * differing output, the stored definitions of its own cone, in graph order, with the
 * emulation of the same copy: the first that differs is where the kernel left the
 * emulation, named with its first differing element. Outside the cone a definition may
 * differ from the emulation legitimately (an exp within its allowance).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "verify.h"

/* ------------------------------------------------------------ fully specified */

typedef struct {
	const Graph *g;
	const Schedule *s;
	const BeFacts *f;
	bool real;         /* the graph has real operations (conversions included) */
	bool fusable;      /* ... and + - * / or fma, which a compiler might contract */
	char why[300];     /* the first operation not promised, "" while none */
} Spec;

static bool is_function(Op op)
{
	return (op_info(op)->flags & OPF_CALL) && !(op_info(op)->flags & OPF_CAST) &&
	       op != OP_ABS && op != OP_MAX && op != OP_MIN && op != OP_FLOOR && op != OP_CEIL &&
	       op != OP_SQRT && op != OP_FMA;
}

/* op computed in format f must be promised; the first that is not is why. */
static void need(Spec *c, Op op, Dtype f)
{
	if (f != DT_I32) {
		c->real = true;
		c->fusable |= op == OP_ADD || op == OP_SUB || op == OP_MUL || op == OP_DIV ||
			      op == OP_FMA;
	}
	if (c->why[0] || be_exact(c->f, op, f))
		return;
	char name[16];
	size_t i = 0;
	for (const char *p = op_info(op)->name; *p && i + 1 < sizeof name; p++)
		name[i++] = (char)(*p >= 'A' && *p <= 'Z' ? *p - 'A' + 'a' : *p);
	name[i] = 0;
	if (f == DT_I32)
		snprintf(c->why, sizeof c->why, "integer %s is not promised exact", name);
	else if (is_function(op))
		snprintf(c->why, sizeof c->why, "%s has an allowance (a built-in function)", name);
	else if (op_info(op)->flags & OPF_CAST)
		snprintf(c->why, sizeof c->why, "conversions into %s are not promised correctly "
			 "rounded", dt_name(f));
	else
		snprintf(c->why, sizeof c->why, "%s in %s is not promised correctly rounded", name,
			 dt_name(f));
}

/* A value of format `from` (DT_I32: an integer) converted into format f's arithmetic. */
static void convert(Spec *c, Dtype from, Dtype f)
{
	if (from != f && f != DT_I32)
		need(c, (Op)op_cast_to(f), f);
}

static Dtype real_fmt(Dtype f)
{
	return f == DT_I32 ? DT_F64 : f;
}

/* The format tensor t's values are read in: an input's dtype, a definition's store format
 * (an inlined one's: its op format). */
static Dtype stored_fmt(const Spec *c, int t)
{
	const Tensor *T = &c->g->tensors[t];
	if (T->kind == TK_INPUT || T->dtype == DT_I32)
		return (Dtype)T->dtype;
	const DefSched *ds = &c->s->defs[T->def];
	return ds->inlined ? real_fmt(ds->op) : ds->store;
}

/* Expression r of a definition computing in format f (its real values). */
static void walk(Spec *c, Ref r, Dtype f)
{
	const Graph *g = c->g;
	const Node *n = ir_node(g, r);
	switch (n->kind) {
	case NK_NUM: case NK_INT: case NK_VAR: case NK_SIZE:
		return;   /* constants are the compiler's own, rounded once from their text */
	case NK_READ: {
		const Ref *ix = ir_read_idx(g, n);
		for (uint32_t i = 0; i < n->u.read.n; i++)
			walk(c, ix[i], f);
		if (n->u.read.pad)
			walk(c, n->u.read.pad, f);
		if (n->ty == TY_REAL)
			convert(c, stored_fmt(c, (int)n->u.read.tensor), f);
		return;
	}
	case NK_OP: break;
	}
	Op op = (Op)n->op;
	const OpInfo *oi = op_info(op);
	for (int i = 0; i < oi->arity; i++)
		walk(c, n->a[i], f);
	if ((oi->flags & OPF_BOOL_IN) || (n->ty == TY_BOOL && !(oi->flags & OPF_CMP)))
		return;   /* ! && || and ?: on booleans */
	bool ints = true;   /* every operand an integer */
	for (int i = op == OP_SELECT; i < oi->arity; i++)
		ints &= ir_node(g, n->a[i])->ty != TY_REAL;
	if (oi->flags & OPF_CAST) {
		Dtype to = op_cast_dtype(op);
		need(c, op, to);
		return;
	}
	if (n->ty == TY_INT || ((oi->flags & OPF_CMP) && ints)) {
		need(c, op, DT_I32);
		return;
	}
	/* real arithmetic (or a comparison of reals) in f; integer operands converted */
	for (int i = op == OP_SELECT; i < oi->arity; i++)
		if (ir_node(g, n->a[i])->ty == TY_INT)
			convert(c, DT_I32, f);
	need(c, op, f);
}

static void def_spec(Spec *c, int d)
{
	const Def *D = &c->g->defs[d];
	const DefSched *ds = &c->s->defs[d];
	Dtype f = real_fmt(ds->op), acc = real_fmt(ds->accum);
	for (int r = 0; r < D->nred; r++) {
		walk(c, D->red[r].lo, f);
		walk(c, D->red[r].hi, f);
	}
	walk(c, D->body, f);
	if (ds->mma && !c->why[0]) {
		/* the emulation follows sm_90's unit (EmuConfig.mma_sm 0: interp/mma.c); a device
		 * whose unit has another row is judged by the budget only */
		const MmaUnit *want = mma_unit(90, ds->mma_ab, DT_F32);
		const MmaUnit *have = c->f->mma_sm ? mma_unit(c->f->mma_sm, ds->mma_ab, DT_F32) : NULL;
		if (have != want)
			snprintf(c->why, sizeof c->why, "mma '%s': the emulation models sm_90's matrix "
				 "unit and the device's is %s", c->g->tensors[D->out[0]].name,
				 !c->f->mma_sm ? "not known" : have ? have->arch : "missing");
	}
	bool real_terms = ir_node(c->g, D->body)->ty == TY_REAL;
	switch (D->monoid) {
	case MO_SUM: need(c, OP_ADD, real_terms ? acc : DT_I32); break;
	case MO_PROD: need(c, OP_MUL, real_terms ? acc : DT_I32); break;
	case MO_MAX: need(c, OP_MAX, real_terms ? acc : DT_I32); break;
	case MO_MIN: need(c, OP_MIN, real_terms ? acc : DT_I32); break;
	case MO_LOGSUMEXP:   /* m + log(sum exp(x - m)) */
		c->real = true;
		if (!c->why[0] && !(be_exact(c->f, OP_EXP, acc) && be_exact(c->f, OP_LOG, acc)))
			snprintf(c->why, sizeof c->why, "logsumexp computes exp and log, which have "
				 "allowances");
		need(c, OP_SUB, acc);
		need(c, OP_ADD, acc);
		break;
	case MO_ARGMAX: case MO_ARGMIN: case MO_TOPK:
		need(c, OP_GT, real_terms ? f : DT_I32);
		break;
	default: break;
	}
	/* the value's conversion into the store format (an integer result is stored exact) */
	if (D->ty == TY_REAL && !ds->inlined)
		convert(c, f, ds->store);
	if (D->ty == TY_REAL && D->monoid != MO_NONE)
		convert(c, f, acc);
}

/* Marks in cone (one byte per definition) the definitions of the tensors expression r
 * reads, anywhere in it (operands, index lists, `??` defaults); seen: one byte per node. */
static void mark_reads(const Graph *g, Ref r, uint8_t *cone, uint8_t *seen)
{
	if (r == REF_NONE || seen[r])
		return;
	seen[r] = 1;
	const Node *n = ir_node(g, r);
	if (n->kind == NK_READ) {
		int d = g->tensors[n->u.read.tensor].def;
		if (d >= 0)
			cone[d] = 1;
		const Ref *ix = ir_read_idx(g, n);
		for (uint32_t i = 0; i < n->u.read.n; i++)
			mark_reads(g, ix[i], cone, seen);
		mark_reads(g, n->u.read.pad, cone, seen);
	} else if (n->kind == NK_OP) {
		for (int i = 0; i < op_info((Op)n->op)->arity; i++)
			mark_reads(g, n->a[i], cone, seen);
	}
}

void vf_emu_cone(const Graph *g, int k, uint8_t *cone)
{
	memset(cone, 0, (size_t)g->ndefs);
	int d0 = g->tensors[g->outputs[k].tensor].def;
	if (d0 < 0)
		return;
	cone[d0] = 1;
	uint8_t *seen = calloc((size_t)g->nnodes + 1, 1), *done = calloc((size_t)g->ndefs + 1, 1);
	IR_ASSERT(seen && done);
	/* until every marked definition's expressions are walked (whatever order reads take) */
	for (bool more = true; more;) {
		more = false;
		for (int d = g->ndefs - 1; d >= 0; d--) {
			if (!cone[d] || done[d])
				continue;
			done[d] = 1;
			more = true;
			const Def *D = &g->defs[d];
			for (int r = 0; r < D->nred; r++) {
				mark_reads(g, D->red[r].lo, cone, seen);
				mark_reads(g, D->red[r].hi, cone, seen);
			}
			mark_reads(g, D->body, cone, seen);
		}
	}
	free(done);
	free(seen);
}

bool vf_emu_specified(const Graph *g, const Schedule *s, const BeFacts *f, int k, char *why,
		      size_t n)
{
	Spec c = {.g = g, .s = s, .f = f};
	uint8_t *cone = malloc((size_t)g->ndefs + 1);
	IR_ASSERT(cone);
	if (k >= 0)
		vf_emu_cone(g, k, cone);
	else
		memset(cone, 1, (size_t)g->ndefs);
	for (int d = 0; d < g->ndefs; d++)
		if (cone[d])
			def_spec(&c, d);
	free(cone);
	const char *no = NULL;
	if (c.fusable && !f->no_contract)
		no = "contraction cannot be forbidden (a*b + c may be fused into an fma)";
	else if (c.real && !f->specials)
		no = "NaN, infinities and the sign of zero are not promised";
	else if (c.why[0])
		no = c.why;
	if (no)
		snprintf(why, n, "%s", no);
	else if (n)
		why[0] = 0;
	return !no;
}

/* ------------------------------------------------------------ comparing */

static bool same_bits(Dtype f, double a, double b)
{
	if (isnan(a) || isnan(b))
		return isnan(a) && isnan(b);
	return a == b && (f == DT_I32 || signbit(a) == signbit(b));
}

void vf_emu_compare(const HostTensor *got, const HostTensor *want, VfEmuDiff *diff)
{
	IR_ASSERT(got->n == want->n && got->dtype == want->dtype);
	memset(diff, 0, sizeof *diff);
	diff->first = -1;
	for (int64_t i = 0; i < got->n; i++) {
		double a = ht_get(got, i), b = ht_get(want, i);
		if (same_bits(got->dtype, a, b))
			continue;
		if (diff->n_diff++ == 0) {
			diff->first = i;
			diff->got = a;
			diff->want = b;
			diff->ulps = isnan(a) || isnan(b) ? INFINITY : vf_ulp_dist(got->dtype, a, b);
		}
	}
}

void vf_coords_text(const Graph *g, int t, int64_t flat, char *buf, size_t n)
{
	const Tensor *T = &g->tensors[t];
	int64_t co[IR_MAXRANK];
	for (int r = T->rank - 1; r >= 0; r--) {
		co[r] = flat % T->dims[r].value;
		flat /= T->dims[r].value;
	}
	size_t len = (size_t)snprintf(buf, n, "%s[", T->name);
	for (int r = 0; r < T->rank && len < n; r++)
		len += (size_t)snprintf(buf + len, n - len, "%s%lld", r ? ", " : "", (long long)co[r]);
	if (len < n)
		snprintf(buf + len, n - len, "]");
}

/* ------------------------------------------------------------ the emulations */

typedef struct {
	bool tried;
	int rc;             /* 0: outs hold the emulation */
	HostTensor *outs;
	uint32_t *def_sub;  /* per definition: MpStats.subnormal's bits it met (mp_emulate_defs) */
	char why[300];      /* rc != 0: why there is none */
} Emulation;

struct VfEmu {
	const Graph *g;
	const HostTensor *inputs;
	const VfSched *scheds;
	int nscheds;
	MpOpts mo;
	double timeout_s;
	Emulation *em;      /* per schedule */
	uint8_t *cones;     /* output k's cone: g->ndefs bytes from k * g->ndefs (vf_emu_cone) */
};

VfEmu *vf_emu_new(const Graph *g, const HostTensor *inputs, const VfSched *scheds,
		  int nscheds, const MpOpts *o, double timeout_s)
{
	VfEmu *e = calloc(1, sizeof *e);
	IR_ASSERT(e);
	*e = (VfEmu){g, inputs, scheds, nscheds, *o, timeout_s,
		     calloc((size_t)nscheds + 1, sizeof *e->em),
		     malloc((size_t)g->noutputs * (size_t)g->ndefs + 1)};
	IR_ASSERT(e->em && e->cones);
	for (int k = 0; k < g->noutputs; k++)
		vf_emu_cone(g, k, e->cones + (size_t)k * (size_t)g->ndefs);
	e->mo.progress = NULL;
	return e;
}

static void free_outs(const Graph *g, HostTensor *outs)
{
	for (int k = 0; outs && k < g->noutputs; k++)
		ht_free(&outs[k]);
	free(outs);
}

void vf_emu_free(VfEmu *e)
{
	if (!e)
		return;
	for (int i = 0; i < e->nscheds; i++) {
		free_outs(e->g, e->em[i].outs);
		free(e->em[i].def_sub);
	}
	free(e->em);
	free(e->cones);
	free(e);
}

/* Emulates g under s into outs (g->noutputs, allocated here) and def_sub (g->ndefs,
 * allocated here, or NULL: not wanted); 0, or rc with why. */
static int emulate(VfEmu *e, const Graph *g, const Schedule *s, HostTensor **outs,
		   uint32_t **def_sub, char *why, size_t n)
{
	OrcEmu oe;
	orc_emu_config(g, s, &oe);
	MpOpts mo = e->mo;
	mo.deadline = e->timeout_s > 0 ? mp_now() + e->timeout_s : 0;
	*outs = calloc((size_t)g->noutputs + 1, sizeof **outs);
	uint32_t *sub = calloc((size_t)g->ndefs + 1, sizeof *sub);
	IR_ASSERT(*outs && sub);
	MpStats st;
	Diag d = {0};
	int rc = mp_emulate_defs(g, e->inputs, &oe.cfg, &mo, *outs, &st, sub, &d);
	orc_emu_free(&oe);
	if (rc) {
		size_t len = d.msg ? strcspn(d.msg, "\n") : 0;
		snprintf(why, n, "the emulation %s: %.*s", rc == -2 ? "stopped at its limit" :
			 "failed", (int)(len < 200 ? len : 200), d.msg ? d.msg : "");
		free(*outs);
		*outs = NULL;
		free(sub);
		sub = NULL;
	}
	if (def_sub)
		*def_sub = sub;
	else
		free(sub);
	diag_clear(&d);
	return rc;
}

static Emulation *emulation(VfEmu *e, int si)
{
	Emulation *m = &e->em[si];
	if (!m->tried) {
		m->tried = true;
		m->rc = emulate(e, e->g, &e->scheds[si].s, &m->outs, &m->def_sub, m->why,
				sizeof m->why);
	}
	return m;
}

/* The subnormal bits the emulation met in output k's cone: a flush anywhere else cannot
 * reach output k, whose values are computed from its cone's alone. */
static uint32_t cone_subnormal(const VfEmu *e, const Emulation *m, int k)
{
	const uint8_t *cone = e->cones + (size_t)k * (size_t)e->g->ndefs;
	uint32_t met = 0;
	for (int d = 0; d < e->g->ndefs; d++)
		if (cone[d])
			met |= m->def_sub[d];
	return met;
}

void vf_emu_judge(VfEmu *e, const Backend *b, int si, const WorkerResult *w, bool sampled,
		  VfEmuResult *r)
{
	const Graph *g = e->g;
	memset(r, 0, sizeof *r);
	r->out = calloc((size_t)g->noutputs + 1, sizeof *r->out);
	IR_ASSERT(r->out);
	r->n = g->noutputs;
	const char *all = NULL;   /* why no output is emulated */
	if (w->status != WK_OK)
		all = "no outputs to compare";
	else if (sampled)
		all = "an output is checked on sampled elements: its emulation would cost more than "
		      "the oracle";
	Emulation *m = NULL;
	for (int k = 0; k < g->noutputs; k++) {
		VfEmuOut *o = &r->out[k];
		char why[300];
		if (all) {
			snprintf(o->why, sizeof o->why, "%s", all);
			continue;
		}
		if (!vf_emu_specified(g, &e->scheds[si].s, &w->facts, k, why, sizeof why)) {
			snprintf(o->why, sizeof o->why, "%s: %s", b->name, why);
			continue;
		}
		if (!m)
			m = emulation(e, si);
		if (m->rc) {
			snprintf(o->why, sizeof o->why, "%s", m->why);
			continue;
		}
		uint32_t met = cone_subnormal(e, m, k) & w->facts.flush;
		if (met) {
			snprintf(o->why, sizeof o->why, "%s may flush %s subnormals (no DenormPreserve "
				 "on this device) and the emulation met one in what %s depends on",
				 b->name, met & (1u << DT_F32) ? "f32" : "f64",
				 g->tensors[g->outputs[k].tensor].name);
			continue;
		}
		if (w->facts.nsz && (cone_subnormal(e, m, k) & MP_MET_ZERO)) {
			snprintf(o->why, sizeof o->why, "%s may lose the sign of a zero (the driver folds "
				 "x + 0.0 and x * 0 despite SignedZeroInfNanPreserve) and the emulation met a "
				 "zero in what %s depends on", b->name,
				 g->tensors[g->outputs[k].tensor].name);
			continue;
		}
		o->applies = true;
		vf_emu_compare(&w->outs[k], &m->outs[k], &o->diff);
	}
}

/* ------------------------------------------------------------ locating */

/* A copy of g whose every stored definition result in want (one byte per definition) is an
 * output (in its store format; a topk's indices and integer results in i32); its stored
 * tensors in *ts (graph order). */
static Graph *with_stored(const Graph *g, const Schedule *s, const uint8_t *want, int *ts,
			  int *nts)
{
	Graph *c = rw_simplify(g, 0, NULL);
	*nts = 0;
	for (int d = 0; d < g->ndefs; d++) {
		if (s->defs[d].inlined || !want[d])
			continue;
		for (int k = 0; k < g->defs[d].nout; k++) {
			int t = g->defs[d].out[k];
			bool out = false;
			for (int o = 0; o < c->noutputs; o++)
				out |= c->outputs[o].tensor == t;
			Dtype f = g->tensors[t].dtype == DT_I32 || k == 1 ? DT_I32 : s->defs[d].store;
			if (!out)
				ir_add_output(c, t, f, g->tensors[t].pos);
			ts[(*nts)++] = t;
		}
	}
	return c;
}

static int output_of(const Graph *g, int t)
{
	for (int o = 0; o < g->noutputs; o++)
		if (g->outputs[o].tensor == t)
			return o;
	return -1;
}

/* r->out[k].locate: the first stored tensor of output k's cone (of ts, in graph order)
 * whose kernel values (w) differ from the emulation's (em) in the copy c. */
static void locate_in(const VfEmu *e, const Graph *c, const int *ts, int nts,
		      const WorkerResult *w, const HostTensor *em, int k, VfEmuOut *out)
{
	const Graph *g = e->g;
	const uint8_t *cone = e->cones + (size_t)k * (size_t)g->ndefs;
	for (int i = 0; i < nts && !out->locate; i++) {
		const Tensor *T = &g->tensors[ts[i]];
		if (!cone[T->def])
			continue;
		int o = output_of(c, ts[i]);
		VfEmuDiff df;
		vf_emu_compare(&w->outs[o], &em[o], &df);
		if (!df.n_diff)
			continue;
		char at[256];
		vf_coords_text(g, ts[i], df.first, at, sizeof at);
		char *body = ir_print_expr(g, T->def, g->defs[T->def].body);
		int64_t n = ir_tensor_count(g, ts[i]);
		Monoid mo = g->defs[T->def].monoid;
		if (asprintf(&out->locate, "the first differing stored definition: %s = %s%s%.200s, "
			     "%lld of %lld elements (%s: %.9g against the emulation's %.9g in %s, "
			     "%.0f ulp)", T->name, mo != MO_NONE ? monoid_name(mo) : "",
			     mo != MO_NONE ? " " : "", body ? body : "", (long long)df.n_diff,
			     (long long)n, at, df.got, df.want, dt_name(c->outputs[o].dtype),
			     df.ulps) < 0)
			out->locate = NULL;
		free(body);
	}
}

int vf_emu_locate(VfEmu *e, const Backend *b, int si, const WorkerOpts *wo, VfEmuResult *r,
		  Diag *d)
{
	const Graph *g = e->g;
	const Schedule *s = &e->scheds[si].s;
	/* the stored definitions of the cones of the outputs that differ: every one of them
	 * is fully specified there, so any difference is the kernel's */
	uint8_t *want = calloc((size_t)g->ndefs + 1, 1);
	IR_ASSERT(want);
	bool any = false;
	for (int k = 0; k < g->noutputs; k++)
		if (r->out[k].applies && r->out[k].diff.n_diff > 0) {
			any = true;
			for (int x = 0; x < g->ndefs; x++)
				want[x] |= e->cones[(size_t)k * (size_t)g->ndefs + (size_t)x];
		}
	if (!any) {
		free(want);
		return 0;
	}
	int *ts = calloc((size_t)g->ntensors + 1, sizeof *ts), nts;
	IR_ASSERT(ts);
	Graph *c = with_stored(g, s, want, ts, &nts);
	HostTensor *em = NULL;
	char why[300];
	int rc = 0;
	WorkerResult w;
	memset(&w, 0, sizeof w);
	if (c->noutputs > 64 || emulate(e, c, s, &em, NULL, why, sizeof why))
		goto out;
	Diag wd = {0};
	if (vf_worker_run(b, c, s, e->inputs, wo, &w, &wd)) {
		rc = wd.env ? -1 : 0;
		if (wd.env) {
			*d = wd;
			wd = (Diag){0};
		}
		diag_clear(&wd);
		goto out;
	}
	for (int k = 0; w.status == WK_OK && k < g->noutputs; k++)
		if (r->out[k].applies && r->out[k].diff.n_diff > 0)
			locate_in(e, c, ts, nts, &w, em, k, &r->out[k]);
	vf_worker_free(c, &w);
out:
	free_outs(c, em);
	ir_free(c);
	free(ts);
	free(want);
	return rc;
}

void vf_emu_result_free(VfEmuResult *r)
{
	for (int k = 0; r->out && k < r->n; k++)
		free(r->out[k].locate);
	free(r->out);
	memset(r, 0, sizeof *r);
}
