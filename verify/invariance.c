/* verify/invariance.c: batch invariance, `assay check --invariance SIZE=V,...`
 * (docs/decode.md "Batch invariance").
 *
 * The same rows computed at the graph's own value of a batch size and inside smaller
 * batches: the graph is instantiated again at SIZE = V for each V, its inputs are the
 * leading slices of the full run's (every input dimension whose extent is SIZE cut to V),
 * and every (backend, schedule) runs at each size. Only outputs whose rows do not depend on
 * the batch are compared: the oracle's exact values of the small run must equal the leading
 * slice of the full run's (an output that sums over SIZE, or divides by it, is not a
 * batched one, and is reported so). Then:
 * - under the same schedule (the full run's directives applied at SIZE = V: the schedule
 *   declares the result independent of the batch), the backend's slices must be bitwise
 *   identical (a NaN equals any NaN): a difference is a failure, verdict variant-mismatch
 *   ("batch invariance"), since a compiler that lowers a fixed schedule differently for
 *   another batch breaks what the schedule promised;
 * - under another schedule at SIZE = V (--invariance-schedule V=FILE: an engine that picks,
 *   say, split-K by batch size), a difference is expected: recorded as non-invariant, not a
 *   failure; each run is judged against its own budget by `assay check` as usual.
 * Each result counts towards the non-invariance rate of every directive kind its schedule
 * uses (split, tile, order, accum, store, inline; "none" for the default schedule).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "verify.h"

static const char *const kinds[VF_INV_KINDS] = {"none", "split", "tile", "order", "accum",
						 "store", "inline"};

const char *vf_inv_kind_name(int k)
{
	return k >= 0 && k < VF_INV_KINDS ? kinds[k] : "?";
}

/* The directive kinds of a schedule's text (bit k: kinds[k]). */
static unsigned kinds_of(const char *text)
{
	unsigned m = 0;
	for (const char *l = text; l && *l;) {
		size_t n = strcspn(l, "\n");
		for (int k = 1; k < VF_INV_KINDS; k++) {
			size_t kl = strlen(kinds[k]);
			if (n > kl && strncmp(l, kinds[k], kl) == 0 && l[kl] == ' ')
				m |= 1u << k;
		}
		l += n + (l[n] == '\n');
	}
	return m ? m : 1;
}

/* Flat index in a tensor of dims `full` of the element at flat index i of one of dims
 * `small` (the same rank; every small extent <= the full one). */
static int64_t full_index(int rank, const int64_t *small, const int64_t *full, int64_t i)
{
	int64_t c[IR_MAXRANK], f = 0;
	for (int a = rank - 1; a >= 0; a--) {
		c[a] = i % small[a];
		i /= small[a];
	}
	for (int a = 0; a < rank; a++)
		f = f * full[a] + c[a];
	return f;
}

static bool same_bits(const HostTensor *small, const HostTensor *full, int64_t *ndiff,
		      int64_t *first)
{
	*ndiff = 0;
	*first = -1;
	for (int64_t i = 0; i < small->n; i++) {
		double a = ht_get(small, i), b = ht_get(full, full_index(small->rank, small->dims,
								       full->dims, i));
		bool eq = (isnan(a) && isnan(b)) || (a == b && signbit(a) == signbit(b));
		if (!eq && (*ndiff)++ == 0)
			*first = i;
	}
	return *ndiff == 0;
}

/* Input k of gs (the graph at the smaller size): the leading slice of the full input. */
static int slice_input(const Graph *gs, int k, const HostTensor *full, HostTensor *out, Diag *d)
{
	const Tensor *t = &gs->tensors[ir_input_tensor(gs, k)];
	int64_t dims[IR_MAXRANK];
	for (int i = 0; i < t->rank; i++)
		dims[i] = t->dims[i].value;
	if (ht_alloc(out, full->dtype, t->rank, dims)) {
		diag_set(d, 3, "invariance: out of memory for input %s", t->name);
		return -1;
	}
	for (int64_t i = 0; i < out->n; i++)
		ht_set(out, i, ht_get(full, full_index(t->rank, dims, full->dims, i)));
	return 0;
}

static void free_outs(const Graph *g, HostTensor *o, uint8_t **st)
{
	for (int k = 0; o && k < g->noutputs; k++)
		ht_free(&o[k]);
	for (int k = 0; st && k < g->noutputs; k++)
		free(st[k]);
	free(o);
	free(st);
}

/* The exact outputs of g on in (NULL with d on failure). */
static HostTensor *exact(const Graph *g, const HostTensor *in, int64_t mem, Diag *d)
{
	HostTensor *o = calloc((size_t)g->noutputs + 1, sizeof *o);
	uint8_t **st = calloc((size_t)g->noutputs + 1, sizeof *st);
	IR_ASSERT(o && st);
	MpOpts mo = {.threads = 1, .mem_cap = mem};
	MpStats ms;
	if (mp_exact(g, in, &mo, o, st, &ms, d)) {
		free(o);
		free(st);
		return NULL;
	}
	for (int k = 0; k < g->noutputs; k++)
		free(st[k]);
	free(st);
	return o;
}

static void record(const VfInvOpts *io, const VfOpts *o, const Graph *gs, const char *backend,
		   const VfSched *s, int k, Verdict v, const char *reason, VfInvSummary *sum,
		   Diag *d)
{
	char name[300], base[200];
	snprintf(name, sizeof name, "%s@%s=%lld", vf_graph_name(gs, base, sizeof base), io->size,
		 (long long)gs->sizes[ir_find_size(gs, io->size)].value);
	VfRecord r = {0};
	r.graph = name;
	r.file = gs->file;
	r.backend = backend;
	r.sched = s->name;
	r.sched_text = s->text ? s->text : "";
	r.sched_seed = s->seed;
	r.output = gs->tensors[gs->outputs[k].tensor].name;
	r.dtype = gs->outputs[k].dtype;
	r.verdict = v;
	r.reason = reason;
	vf_metrics_init(&r.m);
	vf_metrics_init(&r.m64);
	r.n_elements = ir_tensor_count(gs, gs->outputs[k].tensor);
	r.seed = o->seed;
	r.dist = o->dist ? o->dist : "normal";
	r.case_dir = "";
	r.emu_why = "an invariance comparison";
	if (o->sink)
		o->sink(o->ctx, &r);
	if (o->out_dir && vf_append_record(o->out_dir, &r, d))
		sum->env_failed = true;
}

int vf_invariance(const char *path, const SizeOverride *ov, int nov, const Backend *const *bs,
		  int nb, const VfInvOpts *io, const VfOpts *o, VfInvSummary *sum, Diag *d)
{
	memset(sum, 0, sizeof *sum);
	Graph *g = ir_parse_file(path, ov, nov, d);   /* its source text, NUL-terminated */
	if (!g)
		return -1;
	int rc = vf_invariance_text(g->src, path, ov, nov, bs, nb, io, o, sum, d);
	ir_free(g);
	return rc;
}

int vf_invariance_text(const char *text, const char *path, const SizeOverride *ov, int nov,
		       const Backend *const *bs, int nb, const VfInvOpts *io, const VfOpts *o,
		       VfInvSummary *sum, Diag *d)
{
	memset(sum, 0, sizeof *sum);
	size_t tlen = strlen(text);
	Graph *g = ir_parse(text, tlen, path, ov, nov, d);
	if (!g)
		return -1;
	int rc = -1, si = ir_find_size(g, io->size), ns = 0, ni = ir_ninputs(g);
	VfSched *sched = NULL;
	HostTensor *in = NULL, *want = NULL;
	if (si < 0) {
		diag_set(d, 2, "--invariance %s: %s has no size named '%s'", io->size, g->file,
			 io->size);
		goto out;
	}
	int64_t full = g->sizes[si].value;
	for (int v = 0; v < io->nvalues; v++)
		if (io->values[v] >= full) {
			diag_set(d, 2, "--invariance %s=%lld: the graph's own %s is %lld: give smaller "
				 "batches", io->size, (long long)io->values[v], io->size, (long long)full);
			goto out;
		}
	if (io->schedule && ir_parse_schedule(g, io->schedule, strlen(io->schedule),
					      io->schedule_file, d))
		goto out;
	if (vf_sched_list(g, io->schedule ? "file" : g->has_schedule ? "graph" : "default", o->seed,
			  io->nsampled, &sched, &ns, d))
		goto out;
	in = calloc((size_t)ni + 1, sizeof *in);
	IR_ASSERT(in);
	InputSpec spec = {dist_parse(o->dist ? o->dist : "normal"), o->seed, false};
	if (mp_make_inputs(g, &spec, NULL, in, d) || !(want = exact(g, in, o->oracle_mem, d)))
		goto out;
	/* the full size's kernels, per (backend, schedule), run once */
	WorkerResult *wf = calloc((size_t)(nb * ns) + 1, sizeof *wf);
	bool *ran = calloc((size_t)(nb * ns) + 1, 1);
	IR_ASSERT(wf && ran);
	rc = 0;
	for (int v = 0; v < io->nvalues && rc == 0; v++) {
		SizeOverride ovs[64];
		int n = 0;
		for (int i = 0; i < nov && n < 63; i++)
			if (strcmp(ov[i].name, io->size) != 0)
				ovs[n++] = ov[i];
		ovs[n++] = (SizeOverride){io->size, io->values[v]};
		Graph *gs = ir_parse(text, tlen, path, ovs, n, d);
		if (!gs) {
			rc = -1;
			break;
		}
		HostTensor *ins = calloc((size_t)ni + 1, sizeof *ins), *ws = NULL;
		IR_ASSERT(ins);
		for (int k = 0; k < ni && rc == 0; k++)
			rc = slice_input(gs, k, &in[k], &ins[k], d);
		if (rc == 0 && !(ws = exact(gs, ins, o->oracle_mem, d)))
			rc = -1;
		/* which outputs are batched: their exact rows are the full run's */
		bool *batched = calloc((size_t)gs->noutputs + 1, 1);
		IR_ASSERT(batched);
		for (int k = 0; rc == 0 && k < gs->noutputs; k++) {
			int64_t nd, first;
			batched[k] = same_bits(&ws[k], &want[k], &nd, &first);
		}
		for (int s = 0; rc == 0 && s < ns; s++) {
			/* the schedule at this size: --invariance-schedule's, else the full one's */
			VfSched at = {0};
			snprintf(at.name, sizeof at.name, "%s", sched[s].name);
			const char *text = io->sched_at[v] ? io->sched_at[v] : sched[s].text;
			Diag sd = {0};
			bool applies = ir_parse_schedule(gs, text ? text : "", text ? strlen(text) : 0,
							 io->sched_at[v] ? io->sched_file[v] : "schedule",
							 &sd) == 0 && sched_build(gs, &at.s, &sd) == 0;
			at.text = applies ? sched_text(gs, &at.s) : NULL;
			bool changed = !applies || strcmp(at.text ? at.text : "",
							  sched[s].text ? sched[s].text : "") != 0;
			/* the kinds of both schedules: a split at one size only is a split's doing */
			unsigned km = kinds_of(sched[s].text) | (applies ? kinds_of(at.text) : 0);
			if (km != 1)
				km &= ~1u;
			for (int b = 0; rc == 0 && b < nb; b++) {
				char why[600];
				if (vf_available(o->w.pool, bs[b], why, sizeof why))
					continue;
				WorkerResult *F = &wf[b * ns + s];
				if (!ran[b * ns + s]) {
					if (vf_worker_run(bs[b], g, &sched[s].s, in, &o->w, F, d)) {
						rc = -1;
						break;
					}
					ran[b * ns + s] = true;
				}
				WorkerResult W = {0};
				bool wrun = false;
				if (applies && F->status == WK_OK) {
					if (vf_worker_run(bs[b], gs, &at.s, ins, &o->w, &W, d)) {
						rc = -1;
						break;
					}
					wrun = true;
				}
				for (int k = 0; k < gs->noutputs; k++) {
					const char *oname = gs->tensors[gs->outputs[k].tensor].name;
					Verdict vd = V_PASS;
					if (!applies)
						snprintf(why, sizeof why, "the schedule does not apply at %s=%lld: %s",
							 io->size, (long long)io->values[v], sd.msg ? sd.msg : "");
					else if (F->status != WK_OK || W.status != WK_OK)
						snprintf(why, sizeof why, "a run did not finish (%s); assay check "
							 "judges it", F->status != WK_OK ? "full batch" : "small batch");
					else if (!batched[k])
						snprintf(why, sizeof why, "the rows of %s depend on %s (its exact "
							 "values differ): not a batched output", oname, io->size);
					if (!applies || F->status != WK_OK || W.status != WK_OK || !batched[k]) {
						record(io, o, gs, bs[b]->name, &at, k, V_UNSUPPORTED, why, sum, d);
						continue;
					}
					int64_t nd, first;
					bool eq = same_bits(&W.outs[k], &F->outs[k], &nd, &first);
					sum->compared++;
					for (int q = 0; q < VF_INV_KINDS; q++)
						if (km >> q & 1) {
							sum->kind_results[q]++;
							sum->kind_noninv[q] += !eq;
						}
					if (eq) {
						snprintf(why, sizeof why, "bitwise identical to the rows of %s=%lld",
							 io->size, (long long)full);
					} else if (changed) {
						sum->noninvariant++;
						snprintf(why, sizeof why, "not invariant, as expected: the schedule "
							 "at %s=%lld differs; %lld of %lld elements differ from the "
							 "rows of %s=%lld", io->size, (long long)io->values[v],
							 (long long)nd, (long long)W.outs[k].n, io->size,
							 (long long)full);
					} else {
						sum->noninvariant++;
						sum->failed++;
						vd = V_VARIANT_MISMATCH;
						char coords[200];
						vf_coords_text(gs, gs->outputs[k].tensor, first, coords, sizeof coords);
						snprintf(why, sizeof why, "batch invariance: under the same schedule, "
							 "%lld of %lld elements of %s at %s=%lld differ from the rows of "
							 "%s=%lld (first %s: %.9g against %.9g)", (long long)nd,
							 (long long)W.outs[k].n, oname, io->size,
							 (long long)io->values[v], io->size, (long long)full, coords,
							 ht_get(&W.outs[k], first),
							 ht_get(&F->outs[k], full_index(W.outs[k].rank, W.outs[k].dims,
											 F->outs[k].dims, first)));
					}
					record(io, o, gs, bs[b]->name, &at, k, vd, why, sum, d);
				}
				if (wrun)
					vf_worker_free(gs, &W);
			}
			diag_clear(&sd);
			sched_free(&at.s);
			free(at.text);
		}
		free(batched);
		if (ws)
			free_outs(gs, ws, NULL);
		for (int k = 0; k < ni; k++)
			ht_free(&ins[k]);
		free(ins);
		ir_free(gs);
	}
	for (int i = 0; i < nb * ns; i++)
		if (ran[i])
			vf_worker_free(g, &wf[i]);
	free(wf);
	free(ran);
	if (sum->env_failed && rc == 0) {
		diag_env(d, "%s/results.jsonl: could not be written", o->out_dir);
		rc = -1;
	}
out:
	if (want)
		free_outs(g, want, NULL);
	for (int k = 0; in && k < ni; k++)
		ht_free(&in[k]);
	free(in);
	vf_sched_list_free(sched, ns);
	ir_free(g);
	return rc;
}
