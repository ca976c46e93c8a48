/* fuzz/fuzz.h: the public face of fuzz/: random graphs valid by construction (this section),
 * and, as they are written, the campaign loop, the reducer, deduplication and the seeded
 * faults (their own sections below).
 *
 * Invariants
 * - Everything is a deterministic function of (campaign seed, case number) and the options:
 *   no global state, no clock, no thread dependence. fz_seed derives the independent
 *   streams of one case (graph, schedule, inputs) with a counter-based mixer, so a case can be
 *   replayed alone.
 * - A generated graph is valid by construction: its text passes the checker (ir_parse)
 *   without retry, every quasi-affine read is provably in bounds or padded with `??`, every
 *   indirect read goes through an i32 tensor whose values are in bounds (an index table that
 *   mp_make_inputs draws in bounds, or a topk/argmax/integer definition whose value range the
 *   generator tracked), no integer can leave 32 bits, no topk range is shorter than K, no `%`
 *   divides by zero and no integer max/min runs over an empty range.
 * - By default decisions (conditions of `?:`, floor/ceil arguments, argmax/argmin/topk
 *   terms) are made on values the exact oracle can decide: exact ring arithmetic of inputs,
 *   or one irrational function of such a value compared with a dyadic literal. Elsewhere
 *   every function appears freely (NaN from log of a negative value included).
 */
#ifndef ASSAY_FUZZ_H
#define ASSAY_FUZZ_H

#include "../compiler/compiler.h"

/* ================================================================ generator */

/* Index-expression kinds of a read (knob weights; counted by the tests). Transposes come
 * from the order in which variables meet dimensions, not from a kind of their own. */
typedef enum {
	FZ_IX_VAR,       /* x[i] */
	FZ_IX_REVERSE,   /* x[N - 1 - i] */
	FZ_IX_STRIDE,    /* x[2 * i + 1] */
	FZ_IX_WINDOW,    /* x[i + k - 1] (padded with ?? when it may fall outside) */
	FZ_IX_DIV,       /* x[i / 3] */
	FZ_IX_MOD,       /* x[(i + 1) % N] */
	FZ_IX_RESHAPE,   /* x[r / C, r % C] (two dimensions at once) */
	FZ_IX_FLAT,      /* x[i * 4 + j] */
	FZ_IX_CONST,     /* x[0], x[N - 1] (broadcast) */
	FZ_IX_INDIRECT,  /* x[tab[i]], x[topk_ix[i, r]] */
	FZ_IX__COUNT
} FzIxKind;

/* Reduction ranges. */
typedef enum {
	FZ_RANGE_FULL,   /* j:E */
	FZ_RANGE_TRI,    /* j: 0..i+1 */
	FZ_RANGE_TAIL,   /* j: i..E */
	FZ_RANGE_LIT,    /* j: 1..E */
	FZ_RANGE_SLIDE,  /* j: i..i+3 */
	FZ_RANGE__COUNT
} FzRangeKind;

enum { FZ_MAXRANK = 6, FZ_MAXRED = 3 };

/* Knobs. fz_gen_defaults fills every field; change any afterwards. Weights are relative
 * (0 excludes: monoid_w[MO_TOPK] = 0 leaves topk out); probabilities are in [0, 1]. */
typedef struct {
	/* size */
	int max_rank;        /* rank of tensors, 0 .. FZ_MAXRANK (default 4) */
	int max_extent;      /* largest extent of a dimension (default 13) */
	int max_defs;        /* definitions per graph, at least 1 (default 6) */
	int max_inputs;      /* input tensors (index tables included) (default 5) */
	int max_depth;       /* expression depth (default 4) */
	int max_red;         /* reduction indices of one definition, 1 .. FZ_MAXRED (default 2) */
	int64_t max_elems;   /* elements of one tensor (default 256) */
	int64_t max_work;    /* estimated scalar operations of one exact evaluation (default 4e4) */
	/* weights */
	unsigned op_w[OP__COUNT];          /* every op of the op table (IDIV and MOD feed indices
	                                      and integer values; comparisons and && || ! feed
	                                      conditions) */
	unsigned monoid_w[MO__COUNT];      /* MO_NONE: a plain body */
	unsigned ix_w[FZ_IX__COUNT];
	unsigned range_w[FZ_RANGE__COUNT];
	unsigned in_dtype_w[DT_I32 + 1];   /* input formats (i32: small integer value tables) */
	unsigned out_dtype_w[DT_I32 + 1];  /* output formats (i32 only for integer results) */
	/* probabilities */
	double p_int_def;    /* a definition is integer-valued (default 0.15) */
	double p_oob;        /* an index may fall outside (and the read gets `??`) (0.12) */
	double p_pad;        /* an in-bounds read gets `??` anyway (0.03) */
	double p_extra_output; /* a used definition is an output too (0.3) */
	double p_schedule;   /* a schedule block from sched_sample (default 0.5) */
	bool risky_ties;     /* allow computed values in decisions: may make the exact oracle
	                        report unsamplable elements (default false) */
} GenOpts;

void fz_gen_defaults(GenOpts *o);

/* The independent 64-bit seed of one stream of one case (deterministic, counter-based). */
enum { FZ_STREAM_GRAPH, FZ_STREAM_SCHEDULE, FZ_STREAM_INPUTS, FZ_STREAM__COUNT };
uint64_t fz_seed(uint64_t seed, uint64_t case_no, unsigned stream);

/* The generated text of case (seed, case_no), before the checker and without a schedule
 * block. Never NULL (aborts on out of memory); the caller frees. */
char *fz_gen_raw(const GenOpts *o, uint64_t seed, uint64_t case_no);

/* The checked graph of case (seed, case_no): fz_gen_raw parsed by ir_parse, with a schedule
 * block from sched_sample with probability o->p_schedule. NULL with d filled if the
 * checker rejects it (a generator bug: no retry is made). The caller frees (ir_free). */
Graph *fz_gen(const GenOpts *o, uint64_t seed, uint64_t case_no, Diag *d);

/* The canonical text (ir_print) of fz_gen's graph, or NULL with d. The caller frees. */
char *fz_gen_text(const GenOpts *o, uint64_t seed, uint64_t case_no, Diag *d);

/* Replaces g's schedule by a random legal one (sched_sample seeded by fz_seed(seed, case_no,
 * FZ_STREAM_SCHEDULE)), as a schedule block that ir_print prints. 0, or -1 with d. */
int fz_gen_schedule(Graph *g, uint64_t seed, uint64_t case_no, Diag *d);

#endif
