/* compiler/npy.c: tensors as NumPy .npy files (spec/cli.md, "Inputs and outputs as files").
 *
 * Written files are format version 1.0: the magic "\x93NUMPY", bytes 1 and 0, a
 * little-endian u16 header length, then a Python dict literal
 * {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), } padded with spaces and ended
 * by '\n' so that magic + length + header is a multiple of 64 bytes, then the data in C
 * order, little-endian. dtypes: <f8 <f4 <f2 <i4, and bf16 as <u2 holding the raw bits.
 *
 * Reading accepts versions 1.0, 2.0 and 3.0 (u32 header length), the byte orders '<' and
 * '=' (native, on a little-endian host), Fortran order only where it is the same layout as
 * C order (rank <= 1), and nothing else: big-endian data, other dtypes, a malformed header
 * and a truncated file are errors (code 2) naming the file. Data beyond the promised
 * elements is ignored, as NumPy ignores it. Everything is converted explicitly to and from
 * little-endian, so the code does not depend on the host's byte order.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "compiler.h"

enum { NPY_ALIGN = 64, NPY_MAXHEADER = 1 << 20 };

static const struct {
	const char *code;
	Dtype dt;
} codes[] = {
	{"f8", DT_F64}, {"f4", DT_F32}, {"f2", DT_F16}, {"i4", DT_I32}, {"u2", DT_BF16},
};

/* The descr of a host dtype ("<f4"), or NULL if it has none. */
static const char *descr_of(Dtype dt)
{
	switch (dt) {
	case DT_F64: return "<f8";
	case DT_F32: return "<f4";
	case DT_F16: return "<f2";
	case DT_I32: return "<i4";
	case DT_BF16: return "<u2";
	default: return NULL;
	}
}

static bool host_le(void)
{
	const uint16_t one = 1;
	unsigned char c;
	memcpy(&c, &one, 1);
	return c == 1;
}

/* Reverses the bytes of each w-byte element of p[0 .. n*w-1]. */
static void swap_bytes(unsigned char *p, int64_t n, int w)
{
	for (int64_t i = 0; i < n; i++, p += w)
		for (int a = 0, b = w - 1; a < b; a++, b--) {
			unsigned char c = p[a];
			p[a] = p[b];
			p[b] = c;
		}
}

/* "2, 3" / "5," / "" for a shape, into buf. */
static void shape_text(char *buf, size_t cap, int rank, const int64_t *dims, bool py)
{
	size_t k = 0;
	buf[0] = 0;
	for (int i = 0; i < rank && k < cap; i++)
		k += (size_t)snprintf(buf + k, cap - k, "%s%lld", i ? ", " : "", (long long)dims[i]);
	if (py && rank == 1 && k < cap)
		snprintf(buf + k, cap - k, ",");
}

/* ------------------------------------------------------------------ writing */

int npy_write(const char *path, const HostTensor *t, Diag *d)
{
	const char *descr = descr_of(t->dtype);
	if (!descr) {
		diag_set(d, 2, "%s: format %s has no .npy dtype", path, dt_name(t->dtype));
		return -1;
	}
	char shape[IR_MAXRANK * 24 + 8], head[IR_MAXRANK * 24 + 256];
	shape_text(shape, sizeof shape, t->rank, t->dims, true);
	int len = snprintf(head + 10, sizeof head - 10,
			   "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }", descr, shape);
	int total = 10 + len + 1;
	int pad = (NPY_ALIGN - total % NPY_ALIGN) % NPY_ALIGN;
	memset(head + 10 + len, ' ', (size_t)pad);
	head[10 + len + pad] = '\n';
	total += pad;
	memcpy(head, "\x93NUMPY\x01\x00", 8);
	head[8] = (char)((total - 10) & 0xff);
	head[9] = (char)((total - 10) >> 8);

	FILE *f = fopen(path, "wb");
	if (!f) {
		diag_io(d, errno, "%s: cannot write: %s", path, strerror(errno));
		return -1;
	}
	int w = dt_info(t->dtype)->bytes;
	size_t bytes = (size_t)t->n * (size_t)w;
	bool ok = fwrite(head, 1, (size_t)total, f) == (size_t)total;
	if (ok && host_le()) {
		ok = fwrite(t->data, 1, bytes, f) == bytes;
	} else if (ok) {
		unsigned char *tmp = malloc(bytes ? bytes : 1);
		ok = tmp != NULL;
		if (ok) {
			memcpy(tmp, t->data, bytes);
			swap_bytes(tmp, t->n, w);
			ok = fwrite(tmp, 1, bytes, f) == bytes;
		}
		free(tmp);
	}
	int err = errno;
	if (fclose(f) != 0 && ok) {
		ok = false;
		err = errno;
	}
	if (!ok) {
		diag_io(d, err, "%s: cannot write: %s", path, strerror(err));
		remove(path);
		return -1;
	}
	return 0;
}

/* ------------------------------------------------------------------ the header */

typedef struct {
	const char *s;
	size_t i, n;
	char descr[32];
	bool fortran, have[3];
	int rank;
	int64_t dims[IR_MAXRANK];
	const char *err;
} Hdr;

static void skip(Hdr *h)
{
	while (h->i < h->n && strchr(" \t\r\n", h->s[h->i]))
		h->i++;
}

static bool eat(Hdr *h, char c)
{
	skip(h);
	if (h->i < h->n && h->s[h->i] == c) {
		h->i++;
		return true;
	}
	return false;
}

/* A quoted string ('...' or "...") into out. */
static bool str(Hdr *h, char *out, size_t cap)
{
	skip(h);
	if (h->i >= h->n || (h->s[h->i] != '\'' && h->s[h->i] != '"'))
		return false;
	char q = h->s[h->i++];
	size_t k = 0;
	while (h->i < h->n && h->s[h->i] != q) {
		if (k + 1 >= cap)
			return false;
		out[k++] = h->s[h->i++];
	}
	out[k] = 0;
	return h->i++ < h->n;
}

static bool word(Hdr *h, const char *w)
{
	skip(h);
	size_t l = strlen(w);
	if (h->n - h->i >= l && memcmp(h->s + h->i, w, l) == 0) {
		h->i += l;
		return true;
	}
	return false;
}

/* A shape tuple: (), (5,), (2, 3); Python 2's 3L suffix accepted. */
static bool tuple(Hdr *h)
{
	if (!eat(h, '('))
		return false;
	h->rank = 0;
	for (;;) {
		if (eat(h, ')'))
			return true;
		skip(h);
		if (h->i >= h->n || h->s[h->i] < '0' || h->s[h->i] > '9')
			return false;
		int64_t v = 0;
		while (h->i < h->n && h->s[h->i] >= '0' && h->s[h->i] <= '9') {
			if (v > (INT64_MAX - 9) / 10)
				return false;
			v = v * 10 + (h->s[h->i++] - '0');
		}
		if (h->i < h->n && h->s[h->i] == 'L')
			h->i++;
		if (h->rank == IR_MAXRANK) {
			h->err = "more dimensions than the toolkit supports (8)";
			return false;
		}
		h->dims[h->rank++] = v;
		if (!eat(h, ',')) {
			return eat(h, ')');
		}
	}
}

static bool entry(Hdr *h)
{
	char key[32];
	if (!str(h, key, sizeof key) || !eat(h, ':'))
		return false;
	if (strcmp(key, "descr") == 0) {
		h->have[0] = true;
		if (!str(h, h->descr, sizeof h->descr)) {
			h->err = "'descr' is not a simple dtype string (structured arrays are not supported)";
			return false;
		}
		return true;
	}
	if (strcmp(key, "fortran_order") == 0) {
		h->have[1] = true;
		h->fortran = word(h, "True");
		return h->fortran || word(h, "False");
	}
	if (strcmp(key, "shape") == 0) {
		h->have[2] = true;
		return tuple(h);
	}
	h->err = "unexpected key in the header";
	return false;
}

static bool parse_header(Hdr *h)
{
	if (!eat(h, '{'))
		return false;
	for (;;) {
		if (eat(h, '}'))
			break;
		if (!entry(h))
			return false;
		if (!eat(h, ',')) {
			if (!eat(h, '}'))
				return false;
			break;
		}
	}
	skip(h);
	if (h->i != h->n) {
		h->err = "text after the header's dict";
		return false;
	}
	if (!h->have[0] || !h->have[1] || !h->have[2]) {
		h->err = "the header lacks one of 'descr', 'fortran_order', 'shape'";
		return false;
	}
	return true;
}

/* The dtype of descr, or DT_NONE with a message in msg. */
static Dtype descr_dtype(const char *descr, const char *path, Diag *d)
{
	char order = descr[0];
	const char *code = descr + 1;
	if (order == '>') {
		diag_set(d, 2, "%s: big-endian data ('%s') is not supported: save it little-endian "
			 "(a.astype('<%s'))", path, descr, code);
		return DT_NONE;
	}
	if (order == '<' || (order == '=' && host_le()))
		for (size_t i = 0; i < ARRAY_LEN(codes); i++)
			if (strcmp(code, codes[i].code) == 0)
				return codes[i].dt;
	diag_set(d, 2, "%s: dtype '%s' is not supported: use <f8, <f4, <f2, <i4, or <u2 for "
		 "bfloat16 bits", path, descr);
	return DT_NONE;
}

/* ------------------------------------------------------------------ reading */

/* Reads the header of f into *h (h->s heap-allocated); -1 with d. */
static int read_header(FILE *f, const char *path, Hdr *h, Diag *d)
{
	unsigned char pre[12];
	if (fread(pre, 1, 10, f) != 10 || memcmp(pre, "\x93NUMPY", 6) != 0) {
		diag_set(d, 2, "%s: not a .npy file (it does not start with \\x93NUMPY)", path);
		return -1;
	}
	size_t hlen;
	if (pre[6] == 1) {
		hlen = (size_t)pre[8] | (size_t)pre[9] << 8;
	} else if (pre[6] == 2 || pre[6] == 3) {
		if (fread(pre + 10, 1, 2, f) != 2) {
			diag_set(d, 2, "%s: truncated .npy header", path);
			return -1;
		}
		hlen = (size_t)pre[8] | (size_t)pre[9] << 8 | (size_t)pre[10] << 16 |
		       (size_t)pre[11] << 24;
	} else {
		diag_set(d, 2, "%s: unsupported .npy format version %d.%d", path, pre[6], pre[7]);
		return -1;
	}
	if (hlen > NPY_MAXHEADER) {
		diag_set(d, 2, "%s: implausible .npy header length %zu", path, hlen);
		return -1;
	}
	char *s = malloc(hlen + 1);
	IR_ASSERT(s);
	if (fread(s, 1, hlen, f) != hlen) {
		free(s);
		diag_set(d, 2, "%s: truncated .npy header", path);
		return -1;
	}
	s[hlen] = 0;
	memset(h, 0, sizeof *h);
	h->s = s;
	h->n = hlen;
	if (!parse_header(h)) {
		diag_set(d, 2, "%s: malformed .npy header: %s: %s", path,
			 h->err ? h->err : "expected {'descr': ..., 'fortran_order': ..., 'shape': (...)}",
			 s);
		free(s);
		return -1;
	}
	free(s);
	h->s = NULL;
	return 0;
}

int npy_read(const char *path, Dtype want, HostTensor *t, Diag *d)
{
	(void)want;   /* a <u2 file can only be bf16 bits here */
	memset(t, 0, sizeof *t);
	FILE *f = fopen(path, "rb");
	if (!f) {
		diag_set(d, 2, "%s: cannot open: %s", path, strerror(errno));
		return -1;
	}
	Hdr h;
	if (read_header(f, path, &h, d) < 0)
		goto fail_file;
	Dtype dt = descr_dtype(h.descr, path, d);
	if (dt == DT_NONE)
		goto fail_file;
	int nbig = 0;
	for (int i = 0; i < h.rank; i++)
		nbig += h.dims[i] > 1;
	if (h.fortran && nbig > 1) {
		diag_set(d, 2, "%s: Fortran-order data is not supported: save a C-order array "
			 "(np.ascontiguousarray(a))", path);
		goto fail_file;
	}
	int64_t n = 1;
	for (int i = 0; i < h.rank; i++)
		if (h.dims[i] && __builtin_mul_overflow(n, h.dims[i], &n)) {
			diag_set(d, 2, "%s: implausible shape", path);
			goto fail_file;
		}
	for (int i = 0; i < h.rank; i++)
		if (!h.dims[i])
			n = 0;
	int w = dt_info(dt)->bytes;
	if (n > INT64_MAX / w || ht_alloc(t, dt, h.rank, h.dims) < 0) {
		diag_set(d, 2, "%s: shape too large to load", path);
		goto fail_file;
	}
	size_t want_bytes = (size_t)n * (size_t)w;
	size_t got = fread(t->data, 1, want_bytes, f);
	if (got != want_bytes) {
		diag_set(d, 2, "%s: truncated: the header promises %lld elements of %s (%zu bytes "
			 "of data) but the file holds %zu", path, (long long)n, h.descr, want_bytes,
			 got);
		goto fail_tensor;
	}
	if (!host_le())
		swap_bytes(t->data, n, w);
	fclose(f);
	return 0;
fail_tensor:
	ht_free(t);
fail_file:
	fclose(f);
	return -1;
}

int npy_check(const Graph *g, int tensor, const HostTensor *t, const char *path, Diag *d)
{
	const Tensor *T = &g->tensors[tensor];
	bool ok = t->dtype == T->dtype && t->rank == T->rank;
	for (int i = 0; ok && i < T->rank; i++)
		ok = t->dims[i] == T->dims[i].value;
	if (ok)
		return 0;
	char want[IR_MAXRANK * 24 + 8], have[IR_MAXRANK * 24 + 8];
	int64_t dims[IR_MAXRANK];
	for (int i = 0; i < T->rank; i++)
		dims[i] = T->dims[i].value;
	shape_text(want, sizeof want, T->rank, dims, false);
	shape_text(have, sizeof have, t->rank, t->dims, false);
	const char *descr = descr_of(t->dtype);
	diag_set(d, 2, "%s: input '%s' is declared %s[%s] but the file holds %s (%s) [%s]", path,
		 T->name, dt_name((Dtype)T->dtype), want, descr ? descr : "?", dt_name(t->dtype),
		 have);
	return -1;
}
