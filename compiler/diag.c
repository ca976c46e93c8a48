/* compiler/diag.c: error messages in the chibicc manner: "file:line:col: error: message",
 * then the source line and a caret under the column. A Diag owns its message; diag_clear
 * frees it. Setting a Diag that already holds a message keeps the first (the first error
 * is the one a user wants to read). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "compiler.h"

_Noreturn void ir_abort(const char *file, int line, const char *what)
{
	fprintf(stderr, "assay: internal error at %s:%d: %s\n", file, line, what);
	fflush(stderr);
	abort();
}

void diag_clear(Diag *d)
{
	if (!d)
		return;
	free(d->msg);
	d->msg = NULL;
	d->code = 0;
	d->env = false;
}

/* Appends to a heap string; returns the new string. */
static char *append(char *s, const char *fmt, va_list ap)
{
	va_list ap2;
	va_copy(ap2, ap);
	int n = vsnprintf(NULL, 0, fmt, ap2);
	va_end(ap2);
	size_t old = s ? strlen(s) : 0;
	char *r = realloc(s, old + (size_t)n + 1);
	IR_ASSERT(r);
	vsnprintf(r + old, (size_t)n + 1, fmt, ap);
	return r;
}

static char *appendf(char *s, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	s = append(s, fmt, ap);
	va_end(ap);
	return s;
}

/* The one setter under diag_set, diag_env and diag_io: keeps a message already there. */
static void vset(Diag *d, int code, bool env, const char *fmt, va_list ap)
{
	if (!d || d->msg)
		return;
	d->msg = append(NULL, fmt, ap);
	d->msg = appendf(d->msg, "\n");
	d->code = code;
	d->env = env;
}

void diag_set(Diag *d, int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vset(d, code, false, fmt, ap);
	va_end(ap);
}

void diag_env(Diag *d, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vset(d, 3, true, fmt, ap);
	va_end(ap);
}

bool diag_errno_env(int e)
{
	return e == ENOSPC || e == EDQUOT || e == EROFS || e == EACCES || e == EPERM ||
	       e == EIO || e == ENOMEM || e == EMFILE || e == ENFILE || e == EFBIG;
}

void diag_io(Diag *d, int e, const char *fmt, ...)
{
	bool env = diag_errno_env(e);
	va_list ap;
	va_start(ap, fmt);
	vset(d, env ? 3 : 2, env, fmt, ap);
	va_end(ap);
}

void diag_at(Diag *d, SrcPos pos, const char *src, size_t srclen, const char *fmt, ...)
{
	if (!d || d->msg)
		return;
	char *m = NULL;
	if (pos.file && pos.line > 0)
		m = appendf(m, "%s:%d:%d: error: ", pos.file, pos.line, pos.col > 0 ? pos.col : 1);
	else if (pos.file)
		m = appendf(m, "%s: error: ", pos.file);
	else
		m = appendf(m, "error: ");
	va_list ap;
	va_start(ap, fmt);
	m = append(m, fmt, ap);
	va_end(ap);
	m = appendf(m, "\n");
	if (src && pos.line > 0) {
		/* find the line */
		size_t i = 0;
		for (int l = 1; l < pos.line && i < srclen; i++)
			if (src[i] == '\n')
				l++;
		size_t e = i;
		while (e < srclen && src[e] != '\n' && src[e] != '\r')
			e++;
		if (i <= srclen) {
			m = appendf(m, "%.*s\n", (int)(e - i), src + i);
			int col = pos.col > 0 ? pos.col : 1;
			char *caret = malloc((size_t)col + 1);
			IR_ASSERT(caret);
			for (int k = 0; k < col - 1; k++)
				caret[k] = (i + (size_t)k < e && src[i + (size_t)k] == '\t') ? '\t' : ' ';
			caret[col - 1] = '^';
			caret[col] = 0;
			m = appendf(m, "%s\n", caret);
			free(caret);
		}
	}
	d->msg = m;
	d->code = 2;
}
