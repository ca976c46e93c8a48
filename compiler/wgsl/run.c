/* compiler/wgsl/run.c: the WGSL backend: Dawn's WebGPU through the Node helper (helper.c).
 *
 * compile sends the module and its launch manifest (emit.c's //! lines) to the helper,
 * which compiles it with Tint and makes a compute pipeline per kernel; alloc makes one
 * GPU buffer per program buffer with WGSL_GUARD pattern bytes on each side (and the error
 * slot); launch runs every kernel in order, n times, in one compute pass and reads the
 * error slot once: the first error claims it, and the kernels after the first failing one run on
 * (harmlessly: every index they use is clamped by its check) but their results are not
 * used. An error at a site past the program's sites is an i32 overflow of kernel
 * site - nsites (WGSL has no i64: compiler/map/owner.c), reported as the graph's error "an integer value
 * does not fit in 32 bits" (code 2), which the graph's meaning also makes it whenever the
 * stored result overflows; an intermediate that overflows while the result fits is where
 * this backend and int64 arithmetic differ. guards and download read buffers back whole
 * (guards included), cached until the next upload or launch.
 *
 * A kernel with scratch (wgsl.h, "Scratch") runs in one dispatch, or in chunks of as many
 * work-groups as the scratch budget holds (WGSL_SCRATCH_MAX, the device's storage binding
 * size and its buffer size); compile works the chunks out and tells the helper, which
 * makes the scratch buffer (the largest any kernel needs) and the chunk entries. A kernel
 * whose one work-group needs more scratch than the budget is unsupported on the device
 * (code 2). ASSAY_WGSL_SCRATCH_MAX (bytes) lowers the budget, to test the chunks.
 *
 * Nothing is cached between processes: Tint and the driver compile a module in well under
 * a second, and the helper holds no state worth keeping across programs.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "wgsl.h"
#include "../emit/berun.h"

_Static_assert((int)WGSL_GUARD_BYTE == (int)BE_GUARD_BYTE, "wg_guards uses be_guard_check");

struct BeModule {
	const Kernels *k;
	int id;                  /* the helper's module; 0: none */
	size_t *bytes;           /* per buffer: data bytes */
	unsigned char **raw;     /* per buffer: the last read-back (guards included), or NULL */
	size_t *rawn;
	bool alloced;
};

/* A request whose reply must be ok: -1 with d otherwise (code 3 unless said). */
static int request(const char *head, const void *data, size_t n, WgslReply *r, Diag *d)
{
	if (wgsl_call(head, data, n, r, d))
		return -1;
	if (wgsl_json_bool(r->head, "ok"))
		return 0;
	char *msg = wgsl_json_str(r->head, "msg"), *kind = wgsl_json_str(r->head, "kind");
	diag_set(d, 3, "wgsl backend: %s%s", kind && strcmp(kind, "compile") == 0 ?
		 "Dawn rejected the module:\n" : "", msg ? msg : "the helper failed without a message");
	free(msg);
	free(kind);
	wgsl_reply_free(r);
	return -1;
}

static int wg_available(char *why, size_t n)
{
	char node[4096], script[4096];
	if (wgsl_locate(node, sizeof node, script, sizeof script, why, n))
		return -1;
	WgslReply r;
	Diag d = {0};
	if (request("{\"cmd\":\"info\"}", NULL, 0, &r, &d)) {
		snprintf(why, n, "%s", d.msg ? d.msg : "the helper failed");
		diag_clear(&d);
		return -1;
	}
	wgsl_reply_free(&r);
	return 0;
}

static char *wg_device(void)
{
	WgslReply r;
	Diag d = {0};
	char *out = malloc(1024);
	IR_ASSERT(out);
	if (request("{\"cmd\":\"info\"}", NULL, 0, &r, &d)) {
		snprintf(out, 1024, "none (%s)", d.msg ? d.msg : "?");
		diag_clear(&d);
		return out;
	}
	char *a = wgsl_json_str(r.head, "adapter"), *b = wgsl_json_str(r.head, "backend"),
	     *dawn = wgsl_json_str(r.head, "dawn"), *node = wgsl_json_str(r.head, "node");
	snprintf(out, 1024, "%s%s%s%s, via Dawn (npm webgpu %s) on Node %s%s", a ? a : "?",
		 b && *b ? " (" : "", b && *b ? b : "", b && *b ? ")" : "", dawn ? dawn : "?",
		 node ? node : "?", wgsl_json_bool(r.head, "fallback") ? ", a software fallback adapter" : "");
	free(a);
	free(b);
	free(dawn);
	free(node);
	wgsl_reply_free(&r);
	return out;
}

/* ------------------------------------------------------------ compile */

static void put(char **buf, size_t *len, size_t *cap, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void put(char **buf, size_t *len, size_t *cap, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (*len + (size_t)n + 1 > *cap) {
		*cap = (*len + (size_t)n + 1) * 2;
		*buf = realloc(*buf, *cap);
		IR_ASSERT(*buf);
	}
	va_start(ap, fmt);
	vsnprintf(*buf + *len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	*len += (size_t)n;
}

/* The bytes of scratch one dispatch may bind on the helper's device (wgsl.h), a multiple
 * of 4; 0 with d when the device's limits cannot be read. */
static int64_t scratch_budget(Diag *d)
{
	WgslReply r;
	if (request("{\"cmd\":\"info\"}", NULL, 0, &r, d))
		return 0;
	char *lim = wgsl_json_str(r.head, "limits");
	double bind = 0, size = 0;
	bool ok = lim && wgsl_json_num(lim, "maxStorageBufferBindingSize", &bind) &&
		  wgsl_json_num(lim, "maxBufferSize", &size) && bind >= 4 && size >= 4;
	free(lim);
	wgsl_reply_free(&r);
	if (!ok) {
		diag_set(d, 3, "wgsl backend: the helper's device reports no storage buffer limits");
		return 0;
	}
	double b = bind < size ? bind : size;
	if (b > WGSL_SCRATCH_MAX)
		b = WGSL_SCRATCH_MAX;
	/* a smaller budget, so that tests can make a kernel run in several chunks */
	const char *env = getenv("ASSAY_WGSL_SCRATCH_MAX");
	if (env && atof(env) >= 4 && atof(env) < b)
		b = atof(env);
	return (int64_t)b / 4 * 4;
}

/* The chunks of kernel i with scratch (wgsl.h): `scratch` bytes per invocation, wg
 * invocations per work-group, slots live invocations in all; the work-groups of a chunk
 * and the slots its scratch holds into *chunk and *stride: one chunk when the live
 * invocations fit the budget, else chunks of whole work-groups. -1 with d if one
 * work-group needs more than the budget. */
static int chunks(int i, long long groups, long long scratch, int wg, long long slots,
		  int64_t budget, int64_t *chunk, int64_t *stride, Diag *d)
{
	if (slots <= budget / scratch) {   /* every live invocation at once */
		*chunk = groups;
		*stride = slots;
		return 0;
	}
	if (scratch > budget || scratch * wg > budget) {
		diag_set(d, 2, "wgsl backend: unsupported: kernel %d needs %lld bytes of scratch per "
			 "work-group (%lld per invocation), more than the %lld a dispatch may bind here",
			 i, scratch > budget ? scratch : scratch * wg, scratch, (long long)budget);
		return -1;
	}
	int64_t per_group = (int64_t)scratch * wg;
	*chunk = budget / per_group < groups ? budget / per_group : groups;
	*stride = *chunk * wg < slots ? *chunk * wg : slots;
	return 0;
}

/* The module request: the source, and each kernel's launch from its plan (the program's
 * record, compiler/map/map.h; the text's manifest only documents it), with the chunks and
 * scratch of those that have scratch. */
static char *module_request(const Kernels *k, const char *src, Diag *d)
{
	char *buf = NULL;
	size_t len = 0, cap = 0;
	int64_t budget = -1, most = 0;
	const MapPlan *mp = map_plan(k, &wgsl_target);
	put(&buf, &len, &cap, "{\"cmd\":\"module\",\"src\":");
	wgsl_json_quote(&buf, &len, &cap, src);
	put(&buf, &len, &cap, ",\"kernels\":[");
	for (int i = 0; i < k->nk; i++) {
		const MapKernel *kp = &mp->k[i];
		put(&buf, &len, &cap, "%s{\"entry\":\"k%d\",\"groups\":%lld,\"bindings\":[%s", i ? "," : "",
		    i, (long long)kp->groups, kp->err ? "0" : "");
		bool first = !kp->err;
		for (int b = 0; b < k->nbufs; b++)
			if (kp->buse[b]) {
				put(&buf, &len, &cap, "%s%d", first ? "" : ",", b + 1);
				first = false;
			}
		put(&buf, &len, &cap, "]");
		if (kp->scratch) {
			int64_t chunk, stride;
			long long slots = kp->mode == MAP_ITEM ? k->k[i].nitems : kp->groups * kp->wg;
			if (budget < 0)
				budget = scratch_budget(d);
			if (!budget || chunks(i, kp->groups, kp->scratch, kp->wg, slots, budget, &chunk,
					      &stride, d)) {
				free(buf);
				return NULL;
			}
			put(&buf, &len, &cap, ",\"chunk\":%lld,\"stride\":%lld", (long long)chunk,
			    (long long)stride);
			most = stride * kp->scratch > most ? stride * kp->scratch : most;
		}
		put(&buf, &len, &cap, "}");
	}
	put(&buf, &len, &cap, "],\"scratch\":%lld,\"sbind\":%d}", (long long)most, k->nbufs + 1);
	return buf;
}

static BeModule *wg_compile(const Kernels *k, const char *src, const BeOpts *o, BeStats *st,
			    Diag *d)
{
	(void)o;
	double t0 = be_now();
	char *req = module_request(k, src, d);
	if (!req)
		return NULL;
	WgslReply r;
	int rc = request(req, NULL, 0, &r, d);
	free(req);
	if (rc)
		return NULL;
	double id = 0;
	wgsl_json_num(r.head, "id", &id);
	wgsl_reply_free(&r);
	BeModule *m = calloc(1, sizeof *m);
	IR_ASSERT(m);
	m->k = k;
	m->id = (int)id;
	be_stats(st, false, t0);
	return m;
}

/* ------------------------------------------------------------ buffers */

static void drop_raw(BeModule *m)
{
	for (int b = 0; m->raw && b < m->k->nbufs; b++) {
		free(m->raw[b]);
		m->raw[b] = NULL;
	}
}

static int wg_alloc(BeModule *m, Diag *d)
{
	const Kernels *k = m->k;
	size_t n = (size_t)k->nbufs + 1;
	m->bytes = calloc(n, sizeof *m->bytes);
	m->raw = calloc(n, sizeof *m->raw);
	m->rawn = calloc(n, sizeof *m->rawn);
	IR_ASSERT(m->bytes && m->raw && m->rawn);
	char *buf = NULL;
	size_t len = 0, cap = 0;
	put(&buf, &len, &cap, "{\"cmd\":\"alloc\",\"id\":%d,\"guard\":%d,\"pattern\":%d,\"sizes\":[", m->id,
	    WGSL_GUARD, WGSL_GUARD_BYTE);
	for (int b = 0; b < k->nbufs; b++) {
		m->bytes[b] = be_buf_bytes(&k->bufs[b]);
		put(&buf, &len, &cap, "%s%zu", b ? "," : "", m->bytes[b]);
	}
	put(&buf, &len, &cap, "]}");
	WgslReply r;
	int rc = request(buf, NULL, 0, &r, d);
	free(buf);
	if (rc)
		return -1;
	wgsl_reply_free(&r);
	m->alloced = true;
	return 0;
}

static int wg_upload(BeModule *m, int tensor, const HostTensor *t, Diag *d)
{
	int b = be_input_buffer(m->k, tensor, m->alloced, t, "wgsl", d);
	if (b < 0)
		return -1;
	const KBuf *B = &m->k->bufs[b];
	drop_raw(m);
	char head[128];
	snprintf(head, sizeof head, "{\"cmd\":\"upload\",\"id\":%d,\"buf\":%d}", m->id, b);
	unsigned char *data = calloc(1, m->bytes[b]);
	IR_ASSERT(data);
	memcpy(data, t->data, (size_t)B->n * (size_t)dt_info(B->fmt)->bytes);
	WgslReply r;
	int rc = request(head, data, m->bytes[b], &r, d);
	free(data);
	if (rc)
		return -1;
	wgsl_reply_free(&r);
	return 0;
}

/* Buffer b read back whole (guards included), cached in m->raw[b]. */
static int fetch(BeModule *m, int b, Diag *d)
{
	if (m->raw[b])
		return 0;
	char head[128];
	snprintf(head, sizeof head, "{\"cmd\":\"read\",\"id\":%d,\"buf\":%d}", m->id, b);
	WgslReply r;
	if (request(head, NULL, 0, &r, d))
		return -1;
	size_t want = 2 * WGSL_GUARD + ((m->bytes[b] + 3) & ~(size_t)3);
	if (r.n != want) {
		diag_set(d, 3, "wgsl backend: buffer %d came back with %zu bytes, not %zu", b, r.n, want);
		wgsl_reply_free(&r);
		return -1;
	}
	m->raw[b] = r.data;
	m->rawn[b] = r.n;
	r.data = NULL;
	wgsl_reply_free(&r);
	return 0;
}

static int wg_download(BeModule *m, int tensor, Dtype dt, HostTensor *t, Diag *d)
{
	int b = be_buffer_of(m->k, tensor, m->alloced, "wgsl", d);
	if (b < 0 || fetch(m, b, d) || be_out_alloc(m->k, tensor, dt, t, "wgsl", d))
		return -1;
	be_out_fill(t, m->raw[b] + WGSL_GUARD, &m->k->bufs[b]);
	return 0;
}

/* Inputs are skipped: every kernel binds them read-only (var<storage, read>), through which
 * WebGPU admits no write, and a write through another binding stays inside that buffer
 * (robust buffer access clamps it). */
static int wg_guards(BeModule *m, Diag *d)
{
	for (int b = 0; b < m->k->nbufs; b++) {
		if (m->k->bufs[b].input)
			continue;
		if (fetch(m, b, d) || be_guard_check(m->raw[b], WGSL_GUARD, m->bytes[b], m->rawn[b],
						     m->k->g->tensors[m->k->bufs[b].tensor].name, d))
			return -1;
	}
	return 0;
}

/* ------------------------------------------------------------ launch */

static void runtime_error(const BeModule *m, int64_t site, int64_t v, Diag *d)
{
	const Graph *g = m->k->g;
	if (site >= m->k->nsites) {
		int ki = (int)(site - m->k->nsites);
		const char *def = ki < m->k->nk ? g->tensors[g->defs[m->k->k[ki].def].out[0]].name : "?";
		diag_set(d, 2, "an integer value in '%s' does not fit in 32 bits (an intermediate: the "
			 "wgsl backend computes integers in i32, WGSL having no i64)", def);
		return;
	}
	be_runtime_error(m->k, site, v, d);
}

/* One request: the helper runs the program n times in one compute pass and reads the
 * error slot once (its reply says how many runs it made, checked). */
static int wg_launch(BeModule *m, int n, Diag *d)
{
	if (!m->alloced) {
		diag_set(d, 3, "wgsl backend: launch before alloc");
		return -1;
	}
	drop_raw(m);
	char head[128];
	snprintf(head, sizeof head, "{\"cmd\":\"launch\",\"id\":%d,\"n\":%d}", m->id, n);
	WgslReply r;
	if (request(head, NULL, 0, &r, d))
		return -1;
	char *err = wgsl_json_str(r.head, "err");
	long long site1 = 0, v = 0;
	double runs = -1;
	if (!wgsl_json_num(r.head, "runs", &runs))
		runs = -1;
	if (!err || sscanf(err, "[%lld,%lld]", &site1, &v) != 2 || runs != n) {
		diag_set(d, 3, "wgsl backend: the helper's launch reply has %s",
			 runs != n ? "another number of runs than asked" : "no error slot");
		free(err);
		wgsl_reply_free(&r);
		return -1;
	}
	free(err);
	wgsl_reply_free(&r);
	if (site1 > 0 && site1 - 1 < (long long)m->k->nsites + m->k->nk) {
		runtime_error(m, site1 - 1, v, d);
		return -1;
	}
	if (site1 != 0) {
		diag_set(d, 3, "wgsl backend: the error slot holds a site %lld the program does not have", site1 - 1);
		return -1;
	}
	return 0;
}

static void wg_free(BeModule *m)
{
	if (!m)
		return;
	if (m->id) {
		char head[128];
		snprintf(head, sizeof head, "{\"cmd\":\"free\",\"id\":%d}", m->id);
		WgslReply r;
		Diag d = {0};
		if (request(head, NULL, 0, &r, &d) == 0)
			wgsl_reply_free(&r);
		diag_clear(&d);
	}
	if (m->raw)
		drop_raw(m);
	free(m->raw);
	free(m->rawn);
	free(m->bytes);
	free(m);
}

/* Facts (BeFacts): WGSL promises no bit for bit arithmetic (WGSL spec, 'Floating Point
 * Evaluation'): no rounding mode (a correctly rounded result may be either neighbour), an
 * implementation may flush subnormal inputs and outputs of f32 operations to zero, may
 * assume NaN and infinities absent and ignore the sign of a zero, and nothing forbids
 * fusing a*b + c (NVIDIA's driver fuses it under Dawn). Only integer operations are exact. */
const MapTarget wgsl_target = {
	.rules = MAP_RULES_OWNER,
	.item_wg = 64,                /* work-group size of MAP_ITEM kernels */
	.wg_min = 32,                 /* whole subgroups, as vulkan's */
	.wg_max = WGSL_MAX_WG,
	.private_bytes = 1024,        /* a longer local array lives in scratch */
	.private_budget = 4096,       /* bytes of private local arrays per invocation */
	.int32 = true,
	.int_checked = BE_OP(OP_NEG) | BE_OP(OP_ADD) | BE_OP(OP_SUB) | BE_OP(OP_MUL) |
		       BE_OP(OP_IDIV) | BE_OP(OP_ABS),
};

const Backend wgsl_backend = {
	.name = "wgsl",
	.map = &wgsl_target,
	.facts = {.flush = 1u << DT_F32, .specials = false, .minmax = BE_MINMAX_ANY,
		  .no_contract = false, .exact = {[DT_I32] = BE_OPS_INT}},
	.flush_source = "WGSL spec, 'Floating Point Evaluation' (differences from IEEE-754): "
		"for operations covered by the floating point accuracy requirements, implementations "
		"may flush subnormal inputs or outputs to zero; other operations preserve subnormal "
		"values (WGSL has no f64)",
	.available = wg_available,
	.device = wg_device,
	.emit = wgsl_emit,
	.compile = wg_compile,
	.alloc = wg_alloc,
	.upload = wg_upload,
	.launch = wg_launch,
	.download = wg_download,
	.guards = wg_guards,
	.free = wg_free,
};
