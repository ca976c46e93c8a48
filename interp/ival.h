/* interp/ival.h (private to interp/): interval arithmetic over the extended reals with IEEE
 * conventions, the arithmetic of exact mode (graph-format.md section 6, numerics.md 2).
 *
 * An Iv is one of
 * - a point (pt): the exact value is lo (hi is not read). Zeros carry their IEEE sign; NaN is
 *   a point (a definite NaN);
 * - an interval [lo, hi] (neither flag): the exact value lies between the ends in the order
 *   of the extended reals refined by -0 < +0 (so an end -0 admits an exact -0). It is never
 *   NaN. An infinite end means "possibly that infinity";
 * - undecided (und): nothing is known (the value may be NaN, or a branch, index or
 *   comparison it depends on could not be decided at this precision).
 * Every operation is sound (the exact result lies in the result) and keeps points exact:
 * with point operands it rounds to nearest and uses the ternary value, so an exactly
 * representable result is again a point, and an inexact one is the 1-ulp interval around
 * the rounded value. When both ends of a computed interval are equal (zero signs included)
 * the result is a point. When unsure, an operation returns und rather than guess.
 *
 * Results are written to r, which must not alias an operand; r's precision must be at least
 * that of every operand (values are copied exactly). Every function counts its elementary
 * MPFR operations in IvCtx.ops. Nothing here allocates per operation except iv_topk's and
 * the sums' argument arrays, which grow and are then reused.
 * The reductions (iv_reduce, iv_argbest, iv_topk and the streamed IvStream) are in ivred.c.
 */
#ifndef ASSAY_IVAL_H
#define ASSAY_IVAL_H

#include <stdbool.h>
#include <mpfr.h>
#include "interp.h"

typedef struct {
	mpfr_t lo, hi;
	uint8_t pt;    /* an exact point: lo */
	uint8_t und;   /* undecided */
	uint8_t done;  /* used by memo tables: the slot holds its value */
} Iv;

enum { IV_FALSE = 0, IV_TRUE = 1, IV_UND = 2 };

/* Per-thread state of the arithmetic: its working precision, operation count and
 * temporaries. */
typedef struct {
	mpfr_prec_t prec;
	uint64_t ops;
	mpfr_t t[4];          /* temporaries at prec */
	Iv acc[2];            /* products */
	Iv wide;              /* exact products for fma, at 2 * prec */
	mpfr_ptr *los, *his;  /* argument arrays of mpfr_sum */
	mpfr_t *big;          /* logsumexp temporaries */
	size_t cap, nbig;
	void *sortbuf;        /* topk */
	size_t capsort;
} IvCtx;

void ivc_init(IvCtx *c, mpfr_prec_t prec);
void ivc_free(IvCtx *c);

/* A block of n intervals at precision prec, their significands in the same allocation
 * (MPFR's custom interface): free the block with free(); never mpfr_clear its values.
 * NULL when out of memory. iv_block_bytes is its size. */
Iv *iv_block(size_t n, mpfr_prec_t prec);
size_t iv_block_bytes(size_t n, mpfr_prec_t prec);
void iv_init(Iv *v, mpfr_prec_t prec);   /* one value with mpfr_init2 */
void iv_clear(Iv *v);

static inline mpfr_srcptr iv_hi(const Iv *a) { return a->pt ? a->lo : a->hi; }
static inline bool iv_isnan(const Iv *a) { return a->pt && mpfr_nan_p(a->lo); }

/* Finishes r from a point operation rounded to nearest with ternary value t (a point if
 * exact, else the 1-ulp interval around it); from ends computed with directed roundings. */
void iv_fin(Iv *r, int t);
void iv_norm(Iv *r);
/* Comparison in the order -inf < ... < -0 < +0 < ... < +inf (no NaN). */
int iv_lcmp(mpfr_srcptr x, mpfr_srcptr y);

void iv_set_und(Iv *r);
void iv_set_nan(Iv *r);
void iv_set_inf(Iv *r, int sign);
void iv_set_zero(Iv *r, int sign);        /* sign < 0: -0 */
void iv_set_ui(Iv *r, unsigned long v);   /* exact for small v */
void iv_copy(Iv *r, const Iv *a);
void iv_from_si(IvCtx *c, Iv *r, int64_t v);
/* A literal's exact value (decimal, hex float, inf, nan). -1 if s is not a number. */
int iv_from_str(IvCtx *c, Iv *r, const char *s);

/* Real-valued operations of ops.def: iv_unary for arity 1 (NEG, functions, casts),
 * iv_binary for ADD SUB MUL DIV POW MAX MIN, iv_fma for FMA. iv_self computes `a op a` for
 * one operand (SUB gives +0, DIV 1, MUL the square, where the value allows). */
void iv_unary(IvCtx *c, Op op, Iv *r, const Iv *a);
void iv_binary(IvCtx *c, Op op, Iv *r, const Iv *a, const Iv *b);
void iv_self(IvCtx *c, Op op, Iv *r, const Iv *a);
void iv_fma(IvCtx *c, Iv *r, const Iv *a, const Iv *b, const Iv *d);
/* The smallest interval holding both a and b (the value of `c ? a : b` when c is not
 * decided); und if either may be NaN while the other may not. */
void iv_hull(Iv *r, const Iv *a, const Iv *b);

/* A comparison op (EQ NE LT LE GT GE) of two values: IV_FALSE, IV_TRUE or IV_UND. NaN
 * compares unequal to everything; -0 == +0. */
int iv_compare(Op op, const Iv *a, const Iv *b);

/* r = MONOID over t[0..n-1] for MO_SUM, MO_PROD, MO_MAX, MO_MIN, MO_LOGSUMEXP (the identity
 * when n == 0). */
void iv_reduce(IvCtx *c, Monoid m, Iv *r, const Iv *const *t, size_t n);

/* The position of the largest (max) or smallest term: value comparison (-0 == +0), first
 * NaN wins, smallest position on ties. Returns IV_TRUE with *best set (n when n == 0) or
 * IV_UND when it cannot be decided. */
int iv_argbest(const Iv *const *t, size_t n, bool max, size_t *best);
/* The positions of the k largest terms (k <= n) in descending order (NaN largest, ties:
 * smaller position first) into order[0..]. Returns how many leading places are decided
 * (k when all are). */
size_t iv_topk(IvCtx *c, const Iv *const *t, size_t n, size_t k, size_t *order);

/* ---------------------------------------------------------- streamed reductions */

/* A reduction fed its terms block by block (blocks of any size, in order), for reductions
 * too long to hold: its memory does not grow with the number of terms (topk's excepted
 * when its candidates cannot be told apart: see ivred.c). Results:
 * - sum: iv_reduce's, exactly: partial sums are kept exact (their precision adapts to the
 *   terms' span) and rounded once at the end. Only when the exact partial would need more
 *   than IVS_EXACT_CAP bits is it rounded outward at that precision (still an enclosure);
 * - prod, max, min, argmax, argmin, topk: iv_reduce's, iv_argbest's and iv_topk's;
 * - logsumexp: an enclosure by online rescaling (max so far, sum of exp(x - max) rescaled
 *   when the max grows), every step rounded outward: sound, its ends may differ from
 *   iv_reduce's within the roundings.
 * A stream belongs to one IvCtx at one precision; it may be begun again for another
 * reduction once the previous one is finished. */
typedef struct IvStream IvStream;
enum { IVS_EXACT_CAP = 1 << 20 };   /* bits: 128 KiB a partial, spans of a million binades */

struct Limits;
IvStream *ivs_new(mpfr_prec_t prec);
void ivs_free(IvStream *s);
/* Starts a reduction under m (k: topk's K; block: the caller's block size, for topk's
 * pruning). Memory topk's candidates take is charged to lim as `what`. */
void ivs_begin(IvStream *s, Monoid m, size_t k, size_t block, struct Limits *lim,
	       const char *what);
/* Feeds the next n terms (jv: their reduction index values, read by argmax, argmin and
 * topk). 0; 1 when topk's candidates would pass lim's cap (the limit is hit); -1 when
 * memory for them could not be had. */
int ivs_feed(IvCtx *c, IvStream *s, const Iv *const *t, const int64_t *jv, size_t n);
int64_t ivs_count(const IvStream *s);   /* terms fed */
/* The value of a sum, prod, max, min or logsumexp into r (at least s's precision). */
void ivs_value(IvCtx *c, IvStream *s, Iv *r);
/* argmax/argmin: IV_TRUE with *jv the winner's index value, or IV_UND. */
int ivs_argbest(IvStream *s, int64_t *jv);
/* topk: the decided leading places (k when all are); place q is candidate order[q], read
 * with ivs_cand and ivs_cand_jv. */
size_t ivs_topk(IvCtx *c, IvStream *s, size_t *order);
const Iv *ivs_cand(const IvStream *s, size_t i);
int64_t ivs_cand_jv(const IvStream *s, size_t i);

/* Rounds a into format f (round to nearest even). Returns true with out set when both
 * ends round alike (the value is then proven correctly rounded). out has >= 64 bits. */
bool iv_round(IvCtx *c, const Iv *a, Dtype f, mpfr_ptr out);

#endif
