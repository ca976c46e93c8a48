/* interp/exact_eval.h (private to interp/): the evaluator of exact mode, shared by
 * exact_eval.c (elements of definitions evaluated over memo tables) and exact.c (the
 * driver: sessions, precision escalation, threads and the public mp_exact, mp_point and
 * mp_points).
 *
 * Ownership: a Shared (input caches, affine read plans) borrows its Graph and input
 * tensors; a Level (the memo tables and literal values of one working precision) and a Ctx
 * (one thread's scratch stack, index environment and arithmetic state, evaluating at one
 * Level) belong to whoever made them.
 * Threads: a Ctx is used by one thread at a time. Evaluation writes a Level's slots (only
 * those of the elements it evaluates, plus any it computes on demand) and fills a Shared's
 * input cache on first touch. Several threads may therefore share a Level and a Shared only
 * after ex_shared_fill, when each works on its own elements of an ex_prepare'd definition
 * whose inputs are all complete.
 * Limits (limit.h): a Shared carries the Limits of its evaluation; a Level charges its
 * table pages to them and a Shared its converted inputs, and evaluation polls them (the
 * deadline, progress) every element and every 1024 reduction terms. An evaluation that
 * fails with the limits hit (lim_hit) was stopped by a limit: -2 for the public calls.
 * Reductions hold at most Shared's block of terms and stream longer ones (IvStream).
 */
#ifndef ASSAY_EXACT_EVAL_H
#define ASSAY_EXACT_EVAL_H

#include "ival.h"
#include "limit.h"

enum {
	MIN_PREC = 53,   /* the lowest working precision: holds every format's values */
	OUT_PREC = 64,   /* output rounding: holds every format's values and every int64 */
};

typedef struct Shared Shared;
typedef struct Level Level;

typedef struct {
	const Graph *g;
	Shared *sh;
	Level *lv;
	IvCtx iv;
	Iv **blocks;                /* the scratch stack */
	size_t nblocks, top;
	const Iv **terms;           /* terms of the reductions in progress */
	int64_t *jv;                /* their reduction index values */
	size_t nterms, capterms;
	size_t *order;
	size_t caporder;
	int64_t env[IR_MAXVARS];
	int def;                    /* the definition being evaluated, -1 */
	mpfr_t out;                 /* output rounding */
	Diag *d;                    /* where errors go */
	Limits *lim;                /* the Shared's */
	IvStream **streams;         /* per depth of reductions in progress, made on first use */
	int nstreams, depth;
	int64_t pend;               /* reduction terms not yet counted in lim */
	int64_t pend_units;         /* units of work not yet counted in lim (exact.c) */
} Ctx;

/* Never NULL: out of memory exits the process with status 3 (limit.h). */
void *ex_calloc(size_t n, size_t size);

/* Checks the graph's shape and the inputs against their declarations (-1 with d). lim is
 * borrowed; block is the most terms a reduction holds at once. */
Shared *ex_shared_new(const Graph *g, const HostTensor *inputs, Limits *lim, size_t block,
		      Diag *d);
/* Converts every input value now, so that threads only read the cache (polling the limits
 * every page: the progress of the phase "converting"): 0, or -1 with d. */
int ex_shared_fill(Shared *sh, Ctx *c);
void ex_shared_free(Shared *sh);

/* Empty tables at precision prec; a slot missing here may be taken from base where base
 * holds an exact value. NULL with d if a literal is not a number or out of memory. */
Level *ex_level_new(const Graph *g, mpfr_prec_t prec, const Level *base, Limits *lim, Diag *d);
void ex_level_free(Level *l, const Graph *g);
/* Allocates every table page of definition di in l; returns its number of units (elements;
 * for topk, lists of K), the unit argument of ex_elem, or -1 with d (the cap, or out of
 * memory). */
int64_t ex_prepare(Level *l, const Graph *g, int di, Diag *d);

Ctx *ex_ctx_new(const Graph *g, Shared *sh, Level *lv);
void ex_ctx_free(Ctx *c);

/* Evaluates one unit of definition di into c's level: 0, or -1 with *c->d. */
int ex_elem(Ctx *c, int di, int64_t unit);
/* Rounds element flat of tensor t into format f, evaluating what it needs: 1 settled
 * (*val is the correctly rounded value), 0 not settled at this precision, -1 error. */
int ex_settle(Ctx *c, int t, int64_t flat, Dtype f, double *val);

#endif
