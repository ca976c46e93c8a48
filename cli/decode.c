/* cli/decode.c: `assay decode MODEL`: a model's greedy decode on each selected backend,
 * under the graphs' own schedules and N sampled ones, every token judged by the oracle
 * along the backend's own history (verify/decode.c; docs/decode.md).
 *
 * Prints one row per step (backend, schedule, step, position, token, the oracle's token,
 * the class, the exact margin against its budget) and a summary per history. -o DIR keeps
 * DIR/decode.jsonl (one record per step), DIR/results.jsonl (the steps' check records:
 * `assay report` and `assay gate` read both) and DIR/provenance.json.
 * Exit codes: 0 when no step is a defect or failed; 1 otherwise (a verdict); 2 for the
 * user's errors (a model that breaks the conventions, a bad flag, more steps than the cache
 * holds, nothing tested); 3 when the toolkit or the environment failed.
 */
#include <dirent.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "cli.h"
#include "../fuzz/fuzz.h"
#include "../verify/verify.h"

static const FlagSpec flags[] = {
	{"backends", true, false, "LIST     comma list of backends (default: every available one)"},
	{"steps", true, false, "N        tokens to generate, the prefill's first included (default 32)"},
	{"schedules", true, false, "N        sampled schedules besides the graphs' own (default 0)"},
	{"seed", true, false, "S        seed of the weights not given, the prompt, the page table (default 1)"},
	{"prompt", true, false, "IDS      the prompt's token ids, comma separated (default: T drawn from the seed)"},
	{"check-logits", true, false, "N        logits besides the candidates checked exactly per step (default 32)"},
	{"timeout", true, false, "S        seconds a kernel may run, alloc to download (default 20)"},
	{"compile-timeout", true, false, "S        seconds a worker may compile (default 120)"},
	{"save-weights", true, false, "DIR      write the weights as DIR/NAME.npy (then MODEL/weights may be DIR)"},
	{"json", false, false, "         one JSON step per line on stdout instead of the table"},
	{"o", true, false, "DIR      keep decode.jsonl, results.jsonl and provenance.json in DIR"},
	{"force", false, false, "         -o: write into a directory that is not empty"},
	{"help", false, false, "         this help"},
};

typedef struct {
	bool json;
} Out;

static void show(void *ctx, const VfStep *s)
{
	const Out *o = ctx;
	if (o->json) {
		printf("{\"backend\":\"%s\",\"schedule\":\"%s\",\"step\":%d,\"token\":%d,"
		       "\"exact_token\":%d,\"class\":\"%s\",\"margin\":%.9g,\"budget\":%.9g}\n",
		       s->backend, s->sched, s->step, s->token, s->exact_token,
		       vf_step_class_name(s->cls), s->margin, isfinite(s->budget) ? s->budget : -1);
	} else {
		char mb[64] = "-";
		if (s->cls != VD_FAILED && s->token != s->exact_token)
			snprintf(mb, sizeof mb, "%.3g / %.3g", s->margin, s->budget);
		printf("%-8s %-9s %5d %5lld %7d %7d  %-9s %5d  %s%s%s\n", s->backend, s->sched,
		       s->step, (long long)s->pos, s->token, s->exact_token,
		       vf_step_class_name(s->cls), s->ncand, mb, *s->reason ? "  " : "", s->reason);
	}
	fflush(stdout);
}

static int parse_prompt(const char *text, int32_t **out, int *n)
{
	*n = 0;
	*out = malloc((strlen(text) / 2 + 2) * sizeof **out);
	IR_ASSERT(*out);
	for (const char *p = text; *p;) {
		char *end;
		long v = strtol(p, &end, 10);
		if (end == p || v < 0 || v > INT32_MAX || (*end && *end != ',')) {
			fprintf(stderr, "assay decode: --prompt expects token ids separated by commas, got "
				"'%s'\n", text);
			free(*out);
			*out = NULL;
			return 2;
		}
		(*out)[(*n)++] = (int32_t)v;
		p = *end ? end + 1 : end;
	}
	return *n ? 0 : 2;
}

static int out_dir(const char *dir, bool force)
{
	static const char *const files[] = {"results.jsonl", "decode.jsonl"};
	return cli_out_dir("decode", dir, force, files, (int)ARRAY_LEN(files));
}

static int decode_all(const VfModel *m, const Backend **bs, int nb, int nsched,
		      VfDecodeOpts *o, int *bad, int *tested)
{
	Diag d = {0};
	VfSched *sp = NULL, *sd = NULL;
	int np = 0, nd = 0, code = 0;
	if (vf_sched_list(m->prefill, m->prefill->has_schedule ? "graph" : "default", o->seed,
			  nsched, &sp, &np, &d) ||
	    vf_sched_list(m->decode, m->decode->has_schedule ? "graph" : "default", o->seed,
			  nsched, &sd, &nd, &d)) {
		code = cli_report(&d);
		goto out;
	}
	for (int b = 0; b < nb && code < 2; b++) {
		char why[512];
		if (vf_available(o->w.pool, bs[b], why, sizeof why)) {
			printf("%-8s unavailable: %s\n", bs[b]->name, why);
			continue;
		}
		for (int s = 0; s < nd && code < 2; s++) {
			VfDecodeSummary sum;
			if (vf_decode(m, bs[b], &sp[s], &sd[s], o, &sum, &d)) {
				code = cli_report(&d);
				break;
			}
			if (*sum.unsupported) {
				printf("== %s %s: unsupported: %.300s\n", bs[b]->name, sd[s].name,
				       sum.unsupported);
				continue;
			}
			int fail = sum.n[VD_DEFECT] + sum.n[VD_FAILED];
			*bad += fail;
			*tested += sum.steps - (sum.n[VD_FAILED] && sum.steps == 1);
			printf("== %s %s: %d steps: %d agree, %d licensed, %d defect, %d failed\n",
			       bs[b]->name, sd[s].name, sum.steps, sum.n[VD_AGREE],
			       sum.n[VD_LICENSED], sum.n[VD_DEFECT], sum.n[VD_FAILED]);
		}
	}
out:
	vf_sched_list_free(sp, np);
	vf_sched_list_free(sd, nd);
	return code;
}

int cmd_decode(int argc, char **argv)
{
	Args a;
	int code = cli_parse(&a, "decode", flags, ARRAY_LEN(flags), argc, argv);
	if (code)
		return code;
	if (cli_has(&a, "help")) {
		cli_usage(stdout, "decode", "MODEL [--steps N] [--backends LIST] [--schedules N] [-o DIR]",
			  "Greedy decode of the model in directory MODEL (prefill.tg, decode.tg, optional\n"
			  "weights/NAME.npy; docs/decode.md) on every selected backend. At every step the\n"
			  "oracle decides the token exactly along the backend's own history, and the step\n"
			  "is agree, licensed (the two exact logits lie within their budgets of each\n"
			  "other) or defect. Exit 0: no defect; 1: a defect or a kernel that failed;\n"
			  "2: bad input or nothing tested; 3: internal or environment failure.",
			  flags, ARRAY_LEN(flags));
		return 0;
	}
	if (a.npos != 1) {
		fprintf(stderr, "assay decode: expects one model directory (see 'assay decode --help')\n");
		return 2;
	}
	long long steps, nsched, seed, check;
	double timeout, ctimeout;
	if (cli_int(&a, "decode", "steps", 32, 1, 1 << 20, &steps) ||
	    cli_int(&a, "decode", "schedules", 0, 0, 1000, &nsched) ||
	    cli_int(&a, "decode", "seed", 1, 0, LLONG_MAX, &seed) ||
	    cli_int(&a, "decode", "check-logits", 32, 0, LLONG_MAX, &check) ||
	    cli_double(&a, "decode", "timeout", 20, 0, FZ_MAX_TIMEOUT, &timeout) ||
	    cli_double(&a, "decode", "compile-timeout", 120, 0, FZ_MAX_TIMEOUT, &ctimeout))
		return 2;
	int32_t *prompt = NULL;
	int nprompt = 0;
	if (cli_has(&a, "prompt") && parse_prompt(cli_get(&a, "prompt"), &prompt, &nprompt))
		return 2;
	const Backend *bs[16];
	int nb;
	if ((code = cli_backends(&a, "decode", bs, &nb))) {
		free(prompt);
		return code;
	}
	Diag d = {0};
	VfModel m;
	if (vf_model_load(a.pos[0], nprompt, (uint64_t)seed, &m, &d)) {
		free(prompt);
		return cli_report(&d);
	}
	for (int i = 0; i < nprompt; i++)
		if (prompt[i] >= m.vocab) {
			fprintf(stderr, "assay decode: --prompt: token %d is outside the vocabulary of %lld\n",
				prompt[i], (long long)m.vocab);
			code = 2;
		}
	if (code == 0 && cli_has(&a, "save-weights")) {
		const char *wd = cli_get(&a, "save-weights");
		if (vf_mkdirs(wd, &d))
			code = cli_report(&d);
		for (int k = 0; code == 0 && k < ir_ninputs(m.decode); k++) {
			if (!m.weights[k].data)
				continue;
			char path[4096];
			snprintf(path, sizeof path, "%s/%s.npy", wd,
				 m.decode->tensors[ir_input_tensor(m.decode, k)].name);
			if (npy_write(path, &m.weights[k], &d))
				code = cli_report(&d);
		}
	}
	Out out = {.json = cli_has(&a, "json")};
	VfDecodeOpts o = {.steps = (int)steps, .seed = (uint64_t)seed, .prompt = prompt,
			  .nprompt_given = nprompt, .check_logits = check, .on_step = show,
			  .ctx = &out, .out_dir = cli_get(&a, "o")};
	VfOpts env = {0};
	if (code == 0 && vf_opts_env(&env, &d))
		code = cli_report(&d);
	o.w = env.w;
	o.w.timeout_s = timeout;
	o.w.compile_timeout_s = ctimeout;
	if (code == 0 && o.out_dir && (code = out_dir(o.out_dir, cli_has(&a, "force"))) == 0 &&
	    vf_provenance_write(o.out_dir, "decode", argc, argv, bs, nb, o.seed, &d))
		code = cli_report(&d);
	int bad = 0, tested = 0;
	if (code == 0) {
		printf("model %s: %lld weights (%d read from %s/weights), prompt of %lld tokens, "
		       "vocabulary %lld\n", m.decode->name ? m.decode->name : a.pos[0],
		       (long long)m.nweights, m.nloaded, a.pos[0], (long long)m.nprompt,
		       (long long)m.vocab);
		if (!out.json)
			printf("%-8s %-9s %5s %5s %7s %7s  %-9s %5s  %s\n", "backend", "schedule", "step",
			       "pos", "token", "oracle", "class", "cand", "margin / budget");
		o.w.pool = vf_pool_new();
		code = decode_all(&m, bs, nb, (int)nsched, &o, &bad, &tested);
		vf_pool_free(o.w.pool);
	}
	if (code == 0 && tested == 0) {
		fprintf(stderr, "assay decode: nothing was tested (no backend ran a step)\n");
		code = 2;
	}
	vf_model_free(&m);
	free(prompt);
	return code ? code : bad ? 1 : 0;
}
