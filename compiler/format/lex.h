/* compiler/format/lex.h (private to compiler/): the front end's internal interface. The lexer's
 * tokens (lex.c), and the hooks the parser (parse.c) uses to run the checker (check.c)
 * statement by statement, so that the first error reported is the first in the file and
 * every error points at the occurrence in the statement being checked.
 *
 * Invariants: a token list always ends with T_EOF (after a T_NL when the last statement is
 * complete); T_NL never appears inside brackets or after a token that continues a
 * statement (a binary operator, `?`, `:`, `,`, `..`, `??`); names are at most LEX_MAXNAME bytes; T_INT values are exact
 * up to 2^62 and `big` says they do not fit in 32 bits.
 */
#ifndef ASSAY_LEX_H
#define ASSAY_LEX_H

#include "../compiler.h"

enum {
	LEX_MAXNAME = 255,    /* bytes in a name */
	LEX_MAXLIT = 1000,    /* bytes in a numeric literal */
	LEX_MAXEXP = 1000000, /* |exponent| of a decimal or hexadecimal literal */
	FE_MAXNEST = 200,     /* recursion of the parser (about two levels per parenthesis) */
	FE_MAXDEPTH = 250,    /* depth of an expression tree (printing and checking recurse) */
};

typedef enum {
	T_EOF, T_NL, T_NAME, T_INT, T_NUM,
	T_PLUS, T_MINUS, T_STAR, T_SLASH, T_PERCENT,
	T_EQ, T_NE, T_LT, T_LE, T_GT, T_GE, T_AND, T_OR, T_NOT,
	T_QUEST, T_QQ, T_COLON, T_COMMA, T_ASSIGN, T_DOTDOT,
	T_LPAREN, T_RPAREN, T_LBRACK, T_RBRACK,
	T__COUNT
} TokKind;

typedef struct {
	uint8_t kind;   /* TokKind */
	bool big;       /* T_INT: larger than 2^31 - 1 */
	uint32_t off, len;
	int line, col;  /* 1-based */
	int64_t ival;   /* T_INT: the value, saturated at 2^62 */
} Token;

/* Splits src into tokens. On success *out is a malloc'd array of *n tokens (the caller
 * frees it). On error returns -1 with d filled (file:line:col of the offending byte). */
int lex_tokens(const char *src, size_t len, const char *file, Token **out, int *n, Diag *d);
/* How a token kind is named in messages: "'+'", "a name", "end of line", ... */
const char *tok_describe(TokKind k);

/* ----------------------------------------------------------- checker hooks */

typedef struct Checker Checker;

/* A checker for g; carets quote g->src. The checker borrows g and d. */
Checker *ck_new(Graph *g, Diag *d);
void ck_free(Checker *ck);
/* Starts a new statement: positions recorded with ck_note are forgotten. */
void ck_begin(Checker *ck);
/* Records where node r occurs in the current statement (the first occurrence wins). */
void ck_note(Checker *ck, Ref r, SrcPos pos);

/* The checks, each returning 0 or -1 with the Diag filled. ir_check runs them all in this
 * order; the parser runs each as soon as the thing it checks is complete. */
int ck_size(Checker *ck, int size);       /* name, value */
int ck_tensor(Checker *ck, int tensor);   /* name, format, extents */
/* A name about to be declared (tensor, size or index) is not already a size or tensor. */
int ck_name_free(Checker *ck, const char *name, SrcPos pos);
/* The size or tensor checked so far that is called name: its id, or -1. */
typedef enum { SYM_SIZE = 1, SYM_TENSOR, SYM_INDEX } SymKind;
int ck_find(const Checker *ck, const char *name, SymKind *kind);
int ck_def(Checker *ck, int def);         /* indices, ranges, types, reads, bounds */
int ck_outputs(Checker *ck);
int ck_unused(Checker *ck);
/* The schedule's directives; src/srclen is the text of the file they came from. */
int ck_schedule(Checker *ck, const char *file, const char *src, size_t srclen);

/* The type of an operation on operands a, b, c (the parser builds nodes with it; the
 * checker verifies operands against it). Invalid operands give the type a valid use
 * would have; the checker reports them. */
Ty ck_op_type(const Graph *g, Op op, Ref a, Ref b, Ref c);
/* The type of a read of tensor t with padding pad (REF_NONE for none). */
Ty ck_read_type(const Graph *g, int t, Ref pad);
/* The type of a definition's (value) result, from its monoid and body. */
Ty ck_def_type(const Graph *g, const Def *D);

/* print.c: the spelling of a directive kind ("store", ...). */
const char *fe_dir_name(DirKind k);

#endif
