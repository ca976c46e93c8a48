/* oracles/oracles.h: what an output *should* be, and how far a kernel may stray from it.
 *
 * - The exact value: interp/'s mp_exact / mp_points (correctly rounded into a format).
 * - Error budgets: a bound, per output element per test case, on |kernel result - exact
 *   value|, by running error analysis through the *scheduled* graph: every operation
 *   rounded in the format the schedule chose (unit roundoff u of that format, plus the
 *   format's smallest subnormal for underflow), each reduction's tree height (linear,
 *   split, pairwise), the conversions of inputs, stored definitions and outputs, and the
 *   backend's allowances for built-in functions (oracles/allowances.def: one row per
 *   function, backend and format, citing its specification; numerics.md section 5).
 * - Metamorphic checks: a rewrite must not change the exact value.
 *
 * Budgets must be SOUND (the emulating interpreter's result for the schedule, and any
 * conforming backend's, lies within them) and TIGHT (not orders of magnitude loose).
 * oracles/budget.c states the method and what exactly is bounded.
 */
#ifndef ASSAY_ORACLES_H
#define ASSAY_ORACLES_H

#include "../compiler/compiler.h"
#include "../interp/interp.h"

/* Per-element absolute error budgets of every output of g under schedule s on backend
 * `backend` (selects the allowance rows: "c", "opencl", "vulkan", "wgsl", "cuda"; "emul"
 * or NULL: every operation correctly rounded, sigmoid and rsqrt included, as the emulating
 * interpreter computes) for these inputs (in input order, as mp_exact takes them).
 * budgets[k] is allocated here as a DT_F64 tensor shaped like output k. At each element,
 * with R the rounding into the output's dtype, `kernel` the element a correct kernel
 * delivers and `exact` the graph's exact value:
 *     |kernel - R(exact)| <= budget   and   |kernel - exact| <= budget
 * (the first is what verify compares with mp_exact's correctly rounded value). A finite
 * budget also means that the exact value and every correct kernel's value are finite
 * numbers there: a special value on either side is a real failure. A budget of 0 where
 * the oracle's value is an infinity or NaN claims it (orc_budget_facts, bval.h). +inf
 * means no claim: a correct kernel may deliver anything there, an infinity or a NaN
 * included (the value may be infinite or NaN, an intermediate may overflow, a divisor's
 * range holds 0, a function may leave its domain, the backend keeps no infinities, or it
 * promises nothing for a function), so a
 * special mismatch at such an element is not evidence of a wrong kernel. Integer outputs
 * get 0: they must match exactly, unless a near tie allows otherwise (orc_budget_ties).
 * Returns 0, or -1 with d (code 2: an unknown backend, an error of the graph such as an
 * indirect index out of range; code 3: internal). */
int orc_budget(const Graph *g, const Schedule *s, const char *backend,
	       const HostTensor *inputs, HostTensor *budgets, Diag *d);

/* The same, judging infinities by `facts` (NULL: the backend's, Backend.facts): those of
 * the device the kernel ran on (verify's WorkerResult.facts, Backend.device_facts), so
 * that a device whose float controls keep infinities (Vulkan's SignedZeroInfNanPreserve)
 * has them claimed. Where facts->specials holds, an element whose every allowed
 * computation gives the same infinity, and the oracle's value is that infinity, gets
 * budget 0 (a kernel's finite value, other infinity or NaN there is a failure), and an
 * element computed from infinities to a finite value (1/inf, exp(-inf), min(inf, x)) is
 * bounded like any other; elsewhere infinities claim nothing (+inf budgets), as
 * orc_budget says. The flush and NaN claims always read the backend's facts. */
int orc_budget_facts(const Graph *g, const Schedule *s, const char *backend,
		     const BeFacts *facts, const HostTensor *inputs, HostTensor *budgets,
		     uint8_t **ties, Diag *d);

/* Whether backend may flush subnormal values of format f to zero (operands and results of
 * its arithmetic, comparisons and functions; f16 and bf16 as the f32 they are computed in),
 * as its specification permits: the budgets allow for it (oracles/budget.c's table: vulkan
 * f32 and f64, wgsl f32). *source, when source is not NULL and the answer is true, gets
 * the citation. */
bool orc_may_flush(const char *backend, Dtype f, const char **source);

/* The same, and near ties (numerics.md section 4a). ties (may be NULL) gets, per output,
 * a malloc'ed array of one byte per element (free with free()):
 *   0: every discrete choice the element depends on (an argmax/argmin/topk index, the
 *      branch of a ?: whose condition is an integer computed from such a choice or from
 *      a real comparison) is made by any correct kernel exactly as by the exact
 *      computation: an integer element must equal the oracle's, a real one must be within
 *      its budget;
 *   1: a near tie: some choice is between candidates whose exact values lie within their
 *      error bounds of each other (or is unknown), so a correct kernel may choose
 *      otherwise. An integer element may then differ from the oracle's; a real element's
 *      budget assumes the exact choice. Count it against agreement, not as a failure.
 * A real `?:` whose condition may flip needs no flag: the flip is part of its budget. */
int orc_budget_ties(const Graph *g, const Schedule *s, const char *backend,
		    const HostTensor *inputs, HostTensor *budgets, uint8_t **ties, Diag *d);

/* The emulator's configuration for schedule s of g (formats, orders and split, interp.h
 * EmuConfig): e->cfg points into arrays owned by e; free with orc_emu_free. */
typedef struct {
	EmuConfig cfg;
	Dtype *fmt;        /* op, accum, store: 3 * g->ndefs */
	Order *order;
	int64_t *split;
	int *split_red;
} OrcEmu;

void orc_emu_config(const Graph *g, const Schedule *s, OrcEmu *e);
void orc_emu_free(OrcEmu *e);

/* ------------------------------------------------------------ the allowance table */

/* AL_INHERITED: the backend defines the function by a formula of others (Vulkan's and
 * WGSL's pow: exp2(y * log2(x))); its bound is the formula's under their rows. */
typedef enum { AL_EXACT, AL_CR, AL_INHERITED } AlRef;

/* One row of oracles/allowances.def (its header explains the fields). */
typedef struct {
	Op op;
	const char *backend;
	Dtype fmt;
	double ulps;       /* ulps of the result in fmt */
	AlRef vs;          /* measured against the exact or the correctly rounded result,
	                      or inherited from a formula (the bound fields unused) */
	double per_absx;   /* + per_absx * |x| ulps */
	double abs;        /* + an absolute bound */
	double dlo, dhi;   /* the argument domain (|x| when dabs) */
	bool dabs;
	const char *source;
	const char *note;  /* "" or why derived or unsure */
} OrcAllowance;

int orc_nallowances(void);
const OrcAllowance *orc_allowance(int i);   /* NULL past the end */
/* Whether orc_budget knows this backend name (NULL and "emul" included). */
bool orc_backend_known(const char *backend);
/* The allowance of op on backend in format f as the table states it, in words, for
 * reports: "cr" (correctly rounded), "3+2|x| ulp", "1 ulp of cr", "abs 2^-11 on
 * [-3.14159,3.14159]", rows of one key joined by "; ", "via f32: ... + rounding" for a
 * format computed through a wider one, "none" where the table has no row (no bound).
 * Written into buf (n bytes, truncated); returns buf. */
const char *orc_allowance_text(const char *backend, Op op, Dtype f, char *buf, size_t n);

#endif
