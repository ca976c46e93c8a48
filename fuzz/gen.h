/* fuzz/gen.h: private to fuzz/: the state of one graph generation, shared by gen.c (the
 * graph: sizes, inputs, definitions, outputs, text) and gen_expr.c (expressions, reads and
 * index expressions).
 *
 * The generator writes text. It keeps a model of every tensor (shape, integer or real,
 * whether its values are exact, the value range of integer ones) and of the index variables
 * of the definition being written (the inclusive range of values each takes), and proves
 * each choice valid from that model before writing it: an index expression is in bounds when
 * its interval is, otherwise its read gets `??`. Intervals over-approximate, so the checker
 * (which is exact for affine reads) never disagrees with a "valid" verdict.
 * All strings come from the Gen's string list and are freed with it.
 */
#ifndef ASSAY_FUZZ_GEN_H
#define ASSAY_FUZZ_GEN_H

#include "fuzz.h"

enum {
	GMAXT = 48,      /* tensors of one graph (inputs, definition results) */
	GMAXSIZES = 6,
	GMAXVARS = FZ_MAXRANK + FZ_MAXRED,
	GINTMAX = 1 << 24,   /* integer values stay within +-2^24 */
};

typedef struct {
	uint64_t key, ctr;
} Rng;

/* An extent: a size name (size >= 0) or an integer literal. */
typedef struct {
	int size;
	int64_t v;
} GExt;

typedef struct {
	char name[8];
	bool input;
	Dtype dt;        /* inputs: the declared format; definitions: DT_I32 or DT_F64 */
	int rank;
	GExt dims[FZ_MAXRANK];
	bool isint;
	bool exact;      /* values are exact ring arithmetic of inputs: safe in decisions */
	bool expy;       /* values come through exp-like functions (see Ex) */
	bool ixtab;      /* an i32 input read in index positions: values in [0, hi] */
	int64_t lo, hi;  /* integer tensors: every value lies in [lo, hi] */
	int def;         /* definition number; -1 for inputs */
	int uses;        /* reads written so far */
	char *line;      /* definitions: the statement (only on the first result) */
	int mate;        /* topk: the other result's tensor, else -1 */
} GTensor;

/* An index variable of the current definition. */
typedef struct {
	char name[4];
	int64_t lo, hi;  /* inclusive range of values over the iteration domain */
	GExt ext;        /* left-hand: its extent; reduction: its extent when full */
	bool lhs;
	bool isk;        /* topk's K index */
} GVar;

/* A generated expression. */
typedef struct {
	char *s;
	Ty ty;
	bool atom;       /* needs no parentheses as an operand */
	bool exact;      /* safe in decisions (see fuzz.h) */
	bool expy;       /* holds exp, exp2, expm1 or pow to a computed power: of an adversarial
	                    input it may lie beyond MPFR's exponent range, so no exp or log
	                    is taken of it and nothing is divided by it */
	int64_t lo, hi;  /* TY_INT: value range */
	int nodes;       /* operations, for the work estimate */
	uint32_t sig;    /* a read, or unary functions of one: the tensor and the functions;
	                    0 for anything else (see real_op) */
} Ex;

typedef struct {
	const GenOpts *o;
	Rng r;
	struct {
		char name[4];
		int64_t v;
		bool used;
	} sizes[GMAXSIZES];
	int nsizes;
	GTensor t[GMAXT];
	int nt, ninputs, ndefs;
	GVar v[GMAXVARS];
	int nv;
	bool tie;        /* inside a decision: exact values only */
	bool spec;       /* a fully specified graph (GenOpts.p_spec; gen.c spec_opts) */
	int ixdepth;     /* nesting of indirect reads */
	int64_t work;
	char **strs;
	int nstrs, capstrs;
} Gen;

/* gen.c */
uint64_t rng_next(Rng *r);
int64_t rng_below(Rng *r, int64_t n);   /* uniform in [0, n), n >= 1 */
bool rng_chance(Rng *r, double p);
int rng_pick(Rng *r, const unsigned *w, int n);  /* weighted index, -1 if all are 0 */
char *gs(Gen *G, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
const char *ext_text(Gen *G, GExt e);
GExt fresh_ext(Gen *G, int64_t maxv);
GExt ext_of_value(Gen *G, int64_t v);  /* a size of that value when there is one */
int new_input(Gen *G, Dtype dt, int rank, const GExt *dims);
bool tie_mode(const Gen *G);
/* The result tensor of definition G->ndefs, its dimensions those of the left-hand variables
 * of G->v (suffix: "" or topk's "i"); and "NAME[i:E, ...]" of them. */
int add_result(Gen *G, const char *suffix, bool isint, bool exact, int64_t lo, int64_t hi);
char *lhs_text(Gen *G, const char *name);

/* gen_online.c: one-pass shapes (GenOpts.p_online) and their `online` schedules */
typedef enum { GO_NONE, GO_SOFTMAX, GO_ATTENTION, GO_LSE, GO_WELFORD, GO__COUNT } GoShape;
/* The shape case (seed, case_no) is built around (a stream of its own), GO_NONE for most. */
int go_case(const GenOpts *o, uint64_t seed, uint64_t case_no);
/* Writes the definitions of shape into G (its inputs, its results; G->nv is 0 after). */
void go_gen(Gen *G, int shape);
/* Puts the sets of g that online.c matches under `online` in s (most of them), their
 * members split alike or not at all, in linear order; now and then a tile and 16-bit
 * formats on the set's last member. True when s changed. */
bool go_schedule(const Graph *g, Schedule *s, Rng *r);

/* gen_expr.c */
Ex gx_real(Gen *G, int depth);
Ex gx_int(Gen *G, int depth);
Ex gx_decision(Gen *G, int depth);   /* a real expression safe in decisions */
Ex gx_read_tensor(Gen *G, int t);
/* A read of a new input of format dt through the current variables, in one of the view
 * kinds (transposed, strided, windowed, divided, broadcast...); s is NULL when no input is
 * left (GenOpts.max_inputs). */
Ex gx_view(Gen *G, Dtype dt);
/* A body whose terms tie, for a reduction of monoid m over the variable G->v[rv]. */
Ex gx_tie(Gen *G, int depth, Monoid m, int rv);

#endif
