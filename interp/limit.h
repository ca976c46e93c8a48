/* interp/limit.h (private to interp/): the limits of one evaluation (MpOpts' deadline and
 * memory cap), its progress reports, and the allocation paths out of memory takes.
 *
 * One Limits belongs to one public call (mp_exact, mp_points, mp_emulate, mp_make_inputs)
 * or to one MpSession, and is shared by every thread of it. Memory is charged to it where
 * the interpreter allocates tables (memo pages, inputs converted to MPFR, topk candidates)
 * and released where they are freed; a charge that would pass the cap fails, which stops
 * the evaluation. The first limit hit wins: it records its message (the graph's file, what
 * was too big or too slow, the ways out) once, and every thread polling afterwards stops.
 * The public call then returns -2 with that message (lim_diag).
 *
 * Out of memory: mp_xmalloc and friends never return NULL. They, and GMP's allocation
 * hooks (installed on the first lim_init: GMP would abort), print "assay: out of memory
 * evaluating FILE ..." and _exit(3). The file named is the last one a Limits was made for:
 * one process-wide label, the only mutable global of interp/, since GMP's hooks are
 * process-wide too. Large allocations should use plain malloc and fail softly instead
 * (lim_oom fills the Diag, code 3).
 */
#ifndef ASSAY_INTERP_LIMIT_H
#define ASSAY_INTERP_LIMIT_H

#include <stdatomic.h>
#include "interp.h"

enum { LIM_NONE, LIM_DEADLINE, LIM_MEMORY };

typedef struct Limits {
	const Graph *g;
	const char *who;            /* "the exact oracle", ... (for messages) */
	double t0, deadline;        /* mp_now() at the start; 0: no deadline */
	int64_t cap;                /* bytes; < 0: none */
	_Atomic int64_t used;       /* bytes charged */
	_Atomic int hit;            /* LIM_*: the first limit hit */
	char *why;                  /* its message (written once, by the thread that hit it) */
	/* progress */
	MpProgressFn *fn;
	void *ctx;
	_Atomic int64_t next_ns;    /* when the next report is due */
	_Atomic int64_t done, work;
	int64_t total, work_total;
	const char *phase;
	const char *_Atomic tensor;
	double phase_t0;
} Limits;

/* From o (NULL: defaults); who names the evaluator in messages. */
void lim_init(Limits *L, const Graph *g, const MpOpts *o, const char *who);
void lim_free(Limits *L);

/* A new phase of the progress reports (resets its counters). total: elements; work_total:
 * terms and elements when known, else 0. */
void lim_phase(Limits *L, const char *phase, int64_t total, int64_t work_total);
/* A phase over every definition of the graph (units: elements, topk's lists of K; work:
 * their terms when every reduction range is constant). */
void lim_phase_defs(Limits *L, const char *phase);
static inline void lim_tensor(Limits *L, const char *name) { atomic_store(&L->tensor, name); }

/* Counts elements and work done; polls: true when the evaluation must stop (the deadline
 * passed, now or in another thread, or another limit was hit). Cheap when there is neither
 * a deadline nor a progress callback. */
bool lim_poll(Limits *L, int64_t elements, int64_t work);
static inline bool lim_hit(Limits *L) { return atomic_load_explicit(&L->hit, memory_order_relaxed) != 0; }

/* Charges bytes for tensor `what` (or a description): false when the cap would be passed
 * (the limit is hit, its message written). lim_release gives them back. */
bool lim_charge(Limits *L, int64_t bytes, const char *what);
void lim_release(Limits *L, int64_t bytes);

/* Replaces d's message with the limit's (code 2). Call once the threads are done. */
void lim_diag(Limits *L, Diag *d);
/* Records a limit of memory found before evaluating (mp_check_memory's message). */
void lim_set(Limits *L, int kind, const char *why);
/* Out of memory (malloc gave NULL for bytes): d gets "out of memory evaluating FILE: ..."
 * with code 3. Returns -1. */
int lim_oom(Limits *L, Diag *d, int64_t bytes, const char *what);

/* "1.5 GiB" into buf. */
const char *lim_bytes(char *buf, size_t n, int64_t bytes);
/* "f32[1000, 24]": tensor t's dtype and shape into buf. */
const char *lim_shape(const Graph *g, int t, char *buf, size_t n);

/* Allocations that cannot fail (the process exits 3 instead, see above). */
void *mp_xmalloc(size_t n);
void *mp_xcalloc(size_t n, size_t size);
void *mp_xrealloc(void *p, size_t n);
_Noreturn void mp_oom_exit(size_t bytes);

#endif
