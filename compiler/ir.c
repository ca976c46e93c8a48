/* compiler/ir.c: the graph IR's store: the format and op tables, hash-consed expression
 * nodes, and the lists of sizes, tensors, definitions and outputs.
 *
 * Invariants: nodes[0] is unused so that Ref 0 means "none"; a node is never modified after
 * creation except for its source position (not part of its identity); the hash table holds
 * every node id and is at most half full. Index lists of reads live in g->refs and are
 * compared by content, so two reads of the same tensor at the same indices are one node.
 */
#include <stdlib.h>
#include <string.h>
#include "compiler.h"
#include "arena.h"

/* ------------------------------------------------------------------ tables */

static const DtypeInfo dtypes[] = {
	[DT_F64] = {"f64", 53, -1073, 1024, 8, true, true, 1.7976931348623157e308},
	[DT_F32] = {"f32", 24, -148, 128, 4, true, true, 3.4028234663852886e38},
	[DT_F16] = {"f16", 11, -23, 16, 2, true, true, 65504.0},
	[DT_BF16] = {"bf16", 8, -132, 128, 2, true, true, 3.3895313892515355e38},
	[DT_I32] = {"i32", 0, 0, 0, 4, true, false, 2147483647.0},
	[DT_TF32] = {"tf32", 11, -135, 128, 4, false, true, 3.4011621342146535e38},
	[DT_E4M3] = {"e4m3", 4, -8, 9, 1, false, false, 448.0},
	[DT_E5M2] = {"e5m2", 3, -15, 16, 1, false, true, 57344.0},
};
_Static_assert(ARRAY_LEN(dtypes) == DT__COUNT, "one row per Dtype");

const DtypeInfo *dt_info(Dtype d)
{
	IR_ASSERT(d >= 0 && d < DT__COUNT);
	return &dtypes[d];
}

const char *dt_name(Dtype d)
{
	return d >= 0 && d < DT__COUNT ? dtypes[d].name : "?";
}

Dtype dt_parse(const char *s, size_t len)
{
	for (int i = 0; i < DT__COUNT; i++)
		if (strlen(dtypes[i].name) == len && memcmp(dtypes[i].name, s, len) == 0)
			return (Dtype)i;
	return DT_NONE;
}

static const OpInfo ops[] = {
#define X(name, spelling, arity, flags, c, helper, mpfr, grad) \
	[OP_##name] = {#name, spelling, arity, flags, c, helper},
#include "ops.def"
#undef X
};
_Static_assert(ARRAY_LEN(ops) == OP__COUNT, "one row per Op");

const OpInfo *op_info(Op op)
{
	IR_ASSERT(op < OP__COUNT);
	return &ops[op];
}

int op_lookup_call(const char *name, size_t len, int arity)
{
	for (int i = 0; i < OP__COUNT; i++)
		if ((ops[i].flags & OPF_CALL) && ops[i].arity == arity &&
		    strlen(ops[i].spelling) == len && memcmp(ops[i].spelling, name, len) == 0)
			return i;
	return -1;
}

int op_cast_to(Dtype d)
{
	switch (d) {
	case DT_F64: return OP_CAST_F64;
	case DT_F32: return OP_CAST_F32;
	case DT_F16: return OP_CAST_F16;
	case DT_BF16: return OP_CAST_BF16;
	default: return -1;
	}
}

Dtype op_cast_dtype(Op op)
{
	switch (op) {
	case OP_CAST_F64: return DT_F64;
	case OP_CAST_F32: return DT_F32;
	case OP_CAST_F16: return DT_F16;
	case OP_CAST_BF16: return DT_BF16;
	default: return DT_NONE;
	}
}

static const char *monoids[] = {
	[MO_NONE] = "", [MO_SUM] = "sum", [MO_PROD] = "prod", [MO_MAX] = "max", [MO_MIN] = "min",
	[MO_LOGSUMEXP] = "logsumexp", [MO_ARGMAX] = "argmax", [MO_ARGMIN] = "argmin",
	[MO_TOPK] = "topk",
};
_Static_assert(ARRAY_LEN(monoids) == MO__COUNT, "one name per Monoid");

const char *order_name(Order o)
{
	static const char *const names[ORDER__COUNT] = {"linear", "pairwise", "any"};
	return o >= 0 && o < ORDER__COUNT ? names[o] : "?";
}

int order_parse(const char *s, size_t len)
{
	for (int o = 0; o < ORDER__COUNT; o++)
		if (strlen(order_name((Order)o)) == len && strncmp(order_name((Order)o), s, len) == 0)
			return o;
	return -1;
}

const char *monoid_name(Monoid m)
{
	IR_ASSERT(m >= 0 && m < MO__COUNT);
	return monoids[m];
}

Monoid monoid_parse(const char *s, size_t len)
{
	for (int i = 1; i < MO__COUNT; i++)
		if (strlen(monoids[i]) == len && memcmp(monoids[i], s, len) == 0)
			return (Monoid)i;
	return MO_NONE;
}

/* ------------------------------------------------------------------ graphs */

Graph *ir_new(const char *file)
{
	Graph *g = calloc(1, sizeof *g);
	IR_ASSERT(g);
	g->arena = arena_new();
	g->file = ir_strdup(g, file ? file : "<graph>", strlen(file ? file : "<graph>"));
	g->capnodes = 64;
	g->nodes = calloc(g->capnodes, sizeof *g->nodes);
	g->nnodes = 1;
	g->caphash = 128;
	g->hash = calloc(g->caphash, sizeof *g->hash);
	IR_ASSERT(g->nodes && g->hash);
	return g;
}

void ir_free(Graph *g)
{
	if (!g)
		return;
	for (uint32_t i = 0; i < g->nlits; i++)
		free(g->lits[i].text);
	free(g->lits);
	free(g->lithash);
	free(g->nodes);
	free(g->refs);
	free(g->hash);
	free(g->sizes);
	free(g->tensors);
	free(g->defs);
	free(g->outputs);
	free(g->dirs);
	free(g->src);
	arena_free(g->arena);
	free(g);
}

char *ir_strdup(Graph *g, const char *s, size_t len)
{
	char *p = arena_alloc(g->arena, len + 1);
	memcpy(p, s, len);
	p[len] = 0;
	return p;
}

void *ir_alloc(Graph *g, size_t n)
{
	return arena_alloc(g->arena, n);
}

/* Grows a dynamic array so that it holds at least need elements. */
static void *grow(void *p, uint32_t *cap, uint32_t need, size_t elem)
{
	if (need <= *cap)
		return p;
	uint32_t c = *cap ? *cap : 16;
	while (c < need)
		c *= 2;
	void *q = realloc(p, (size_t)c * elem);
	IR_ASSERT(q);
	*cap = c;
	return q;
}

/* ------------------------------------------------------------ hash-consing */

static uint64_t mix(uint64_t h, uint64_t v)
{
	h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
	return h * 0xff51afd7ed558ccdull;
}

static uint64_t node_hash(const Graph *g, const Node *n)
{
	uint64_t h = mix(mix(mix(0, n->kind), n->ty), n->op);
	switch (n->kind) {
	case NK_NUM: {
		const char *t = g->lits[n->u.lit].text;
		for (; *t; t++)
			h = mix(h, (unsigned char)*t);
		break;
	}
	case NK_INT: h = mix(h, (uint64_t)n->u.ival); break;
	case NK_VAR: h = mix(h, n->u.var); break;
	case NK_SIZE: h = mix(h, n->u.size); break;
	case NK_READ:
		h = mix(mix(mix(h, n->u.read.tensor), n->u.read.n), n->u.read.pad);
		for (uint32_t i = 0; i < n->u.read.n; i++)
			h = mix(h, g->refs[n->u.read.first + i]);
		break;
	case NK_OP:
		h = mix(mix(mix(h, n->a[0]), n->a[1]), n->a[2]);
		break;
	}
	return h;
}

static bool node_same(const Graph *g, const Node *x, const Node *y)
{
	if (x->kind != y->kind || x->ty != y->ty || x->op != y->op)
		return false;
	switch (x->kind) {
	case NK_NUM: return strcmp(g->lits[x->u.lit].text, g->lits[y->u.lit].text) == 0;
	case NK_INT: return x->u.ival == y->u.ival;
	case NK_VAR: return x->u.var == y->u.var;
	case NK_SIZE: return x->u.size == y->u.size;
	case NK_READ:
		if (x->u.read.tensor != y->u.read.tensor || x->u.read.n != y->u.read.n ||
		    x->u.read.pad != y->u.read.pad)
			return false;
		return memcmp(&g->refs[x->u.read.first], &g->refs[y->u.read.first],
			      x->u.read.n * sizeof(Ref)) == 0;
	case NK_OP:
		return x->a[0] == y->a[0] && x->a[1] == y->a[1] && x->a[2] == y->a[2];
	}
	return false;
}

static void rehash(Graph *g)
{
	uint32_t cap = g->caphash * 2;
	uint32_t *t = calloc(cap, sizeof *t);
	IR_ASSERT(t);
	for (uint32_t id = 1; id < g->nnodes; id++) {
		uint32_t i = (uint32_t)node_hash(g, &g->nodes[id]) & (cap - 1);
		while (t[i])
			i = (i + 1) & (cap - 1);
		t[i] = id;
	}
	free(g->hash);
	g->hash = t;
	g->caphash = cap;
}

/* Returns the id of a node equal to *n, adding *n if there is none. For reads, *n's index
 * list must already sit at the end of g->refs; it is dropped again if the node exists. */
static Ref intern(Graph *g, Node *n)
{
	uint64_t h = node_hash(g, n);
	uint32_t i = (uint32_t)h & (g->caphash - 1);
	while (g->hash[i]) {
		if (node_same(g, &g->nodes[g->hash[i]], n)) {
			if (n->kind == NK_READ)
				g->nrefs -= n->u.read.n;
			return g->hash[i];
		}
		i = (i + 1) & (g->caphash - 1);
	}
	g->nodes = grow(g->nodes, &g->capnodes, g->nnodes + 1, sizeof *g->nodes);
	Ref id = g->nnodes++;
	g->nodes[id] = *n;
	g->hash[i] = id;
	if (g->nnodes * 2 > g->caphash)
		rehash(g);
	return id;
}

static Node mk(NodeKind k, Ty ty)
{
	Node n;
	memset(&n, 0, sizeof n);
	n.kind = (uint8_t)k;
	n.ty = (uint8_t)ty;
	return n;
}

static uint64_t text_hash(const char *t, size_t len)
{
	uint64_t h = 1469598103934665603ull;
	for (size_t i = 0; i < len; i++)
		h = (h ^ (unsigned char)t[i]) * 1099511628211ull;
	return h;
}

/* The id of the literal spelled text[0..len), adding it if new. lithash holds id + 1. */
static uint32_t lit_intern(Graph *g, const char *text, size_t len)
{
	if ((g->nlits + 1) * 2 > g->caplithash) {
		uint32_t cap = g->caplithash ? g->caplithash * 2 : 64;
		uint32_t *t = calloc(cap, sizeof *t);
		IR_ASSERT(t);
		for (uint32_t id = 0; id < g->nlits; id++) {
			const char *x = g->lits[id].text;
			uint32_t i = (uint32_t)text_hash(x, strlen(x)) & (cap - 1);
			while (t[i])
				i = (i + 1) & (cap - 1);
			t[i] = id + 1;
		}
		free(g->lithash);
		g->lithash = t;
		g->caplithash = cap;
	}
	uint32_t i = (uint32_t)text_hash(text, len) & (g->caplithash - 1);
	for (; g->lithash[i]; i = (i + 1) & (g->caplithash - 1)) {
		const char *x = g->lits[g->lithash[i] - 1].text;
		if (strlen(x) == len && memcmp(x, text, len) == 0)
			return g->lithash[i] - 1;
	}
	g->lits = grow(g->lits, &g->caplits, g->nlits + 1, sizeof *g->lits);
	uint32_t id = g->nlits++;
	Lit *l = &g->lits[id];
	l->text = malloc(len + 1);
	IR_ASSERT(l->text);
	memcpy(l->text, text, len);
	l->text[len] = 0;
	l->approx = strtod(l->text, NULL);
	/* `exact` is a hint for cheap paths: true for integers, hex floats, inf and nan (whose
	 * values strtod gives exactly); decimals like 0.1 go through MPFR. */
	l->exact = (strpbrk(l->text, "xX") != NULL) || strcmp(l->text, "inf") == 0 ||
		   strcmp(l->text, "nan") == 0 || strpbrk(l->text, ".eE") == NULL;
	g->lithash[i] = id + 1;
	return id;
}

Ref ir_num(Graph *g, const char *text, size_t len)
{
	Node n = mk(NK_NUM, TY_REAL);
	n.u.lit = lit_intern(g, text, len);
	return intern(g, &n);
}

Ref ir_int(Graph *g, int64_t v)
{
	Node n = mk(NK_INT, TY_INT);
	n.u.ival = v;
	return intern(g, &n);
}

Ref ir_var(Graph *g, uint32_t var, Ty ty)
{
	Node n = mk(NK_VAR, ty);
	n.u.var = var;
	return intern(g, &n);
}

Ref ir_size(Graph *g, uint32_t size)
{
	Node n = mk(NK_SIZE, TY_INT);
	n.u.size = size;
	return intern(g, &n);
}

Ref ir_read(Graph *g, uint32_t tensor, const Ref *idx, uint32_t nidx, Ref pad, Ty ty)
{
	Node n = mk(NK_READ, ty);
	g->refs = grow(g->refs, &g->caprefs, g->nrefs + nidx + 1, sizeof *g->refs);
	n.u.read.tensor = tensor;
	n.u.read.first = g->nrefs;
	n.u.read.n = nidx;
	n.u.read.pad = pad;
	if (nidx)
		memcpy(&g->refs[g->nrefs], idx, nidx * sizeof(Ref));
	g->nrefs += nidx;
	return intern(g, &n);
}

Ref ir_op(Graph *g, Op op, Ty ty, Ref a, Ref b, Ref c)
{
	Node n = mk(NK_OP, ty);
	n.op = (uint16_t)op;
	n.a[0] = a;
	n.a[1] = b;
	n.a[2] = c;
	return intern(g, &n);
}

void ir_setpos(Graph *g, Ref r, SrcPos pos)
{
	if (r && r < g->nnodes && g->nodes[r].pos.line == 0)
		g->nodes[r].pos = pos;
}

/* ------------------------------------------------------------------- lists */

int ir_add_size(Graph *g, const char *name, int64_t value, SrcPos pos)
{
	uint32_t cap = (uint32_t)g->nsizes;
	g->sizes = grow(g->sizes, &cap, (uint32_t)g->nsizes + 1, sizeof *g->sizes);
	/* grow's cap is recomputed from the count each time: cheap enough for small lists */
	Size *s = &g->sizes[g->nsizes];
	s->name = ir_strdup(g, name, strlen(name));
	s->value = value;
	s->pos = pos;
	return g->nsizes++;
}

int ir_add_tensor(Graph *g, const Tensor *t)
{
	uint32_t cap = (uint32_t)g->ntensors;
	g->tensors = grow(g->tensors, &cap, (uint32_t)g->ntensors + 1, sizeof *g->tensors);
	g->tensors[g->ntensors] = *t;
	return g->ntensors++;
}

int ir_add_def(Graph *g, const Def *d)
{
	uint32_t cap = (uint32_t)g->ndefs;
	g->defs = grow(g->defs, &cap, (uint32_t)g->ndefs + 1, sizeof *g->defs);
	g->defs[g->ndefs] = *d;
	return g->ndefs++;
}

int ir_add_output(Graph *g, int tensor, Dtype dt, SrcPos pos)
{
	uint32_t cap = (uint32_t)g->noutputs;
	g->outputs = grow(g->outputs, &cap, (uint32_t)g->noutputs + 1, sizeof *g->outputs);
	g->outputs[g->noutputs] = (Output){tensor, dt, pos};
	return g->noutputs++;
}

int ir_find_tensor(const Graph *g, const char *name)
{
	for (int i = 0; i < g->ntensors; i++)
		if (strcmp(g->tensors[i].name, name) == 0)
			return i;
	return -1;
}

int ir_find_size(const Graph *g, const char *name)
{
	for (int i = 0; i < g->nsizes; i++)
		if (strcmp(g->sizes[i].name, name) == 0)
			return i;
	return -1;
}

int ir_find_def(const Graph *g, const char *name)
{
	int t = ir_find_tensor(g, name);
	return t >= 0 ? g->tensors[t].def : -1;
}

int ir_ninputs(const Graph *g)
{
	int n = 0;
	for (int i = 0; i < g->ntensors; i++)
		n += g->tensors[i].kind == TK_INPUT;
	return n;
}

int ir_input_tensor(const Graph *g, int k)
{
	for (int i = 0; i < g->ntensors; i++)
		if (g->tensors[i].kind == TK_INPUT && k-- == 0)
			return i;
	return -1;
}

int64_t ir_tensor_count(const Graph *g, int t)
{
	int64_t n = 1;
	for (int i = 0; i < g->tensors[t].rank; i++)
		n *= g->tensors[t].dims[i].value;
	return n;
}
