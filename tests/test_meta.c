/* tests/test_meta.c: metamorphic variants (fuzz/meta.c) and their checks in campaigns.
 *
 * Every kind on hand-made graphs: the variant checks, has the same exact outputs (mp_exact,
 * under several input distributions, specials included) and, where it claims so, the same
 * emulation bit for bit; over generated graphs the same holds for every kind; a claim the
 * emulation refutes is seen to be refuted; a seeded fault that no budget sees (max_nan
 * losing a NaN where the budget claims nothing) is found by a variant as a variant-mismatch
 * of its own signature, and reduced as a pair; settings and reports carry variants.
 * Campaigns run on the c backend.
 */
#include <unistd.h>
#include "testutil.h"
#include "../fuzz/fuzz.h"
#include "../reports/reports.h"

static const char *cache(void)
{
	return tu_cache_dir("meta");
}

static FzRun run_c(uint64_t faults, uint64_t seed, Dist dist, bool specials)
{
	FzRun r = {0};
	r.backends[0] = be_find("c");
	r.nbackends = 1;
	r.seed = seed;
	r.dist = dist;
	r.specials = specials;
	r.faults = faults;
	r.timeout_s = 20;
	r.cache_dir = cache();
	return r;
}

static const InputSpec specs[] = {
	{DIST_NORMAL, 1, false}, {DIST_UNIFORM, 2, false}, {DIST_ADVERSARIAL, 3, false},
	{DIST_ADVERSARIAL, 4, true}, {DIST_ADVERSARIAL, 5, true},
};

/* The exact outputs of g and v are the same (elements the oracle could not settle aside),
 * under every input spec; the inputs are generated from each graph's own text. */
static void same_exact(const Graph *g, const Graph *v, const char *what)
{
	MpOpts o = {.threads = 1};
	for (size_t s = 0; s < ARRAY_LEN(specs); s++) {
		int ni = ir_ninputs(g);
		ck_assert_int_eq(ir_ninputs(v), ni);
		HostTensor *in = calloc((size_t)ni + 1, sizeof *in), *vin = calloc((size_t)ni + 1, sizeof *vin);
		HostTensor *a = calloc((size_t)g->noutputs + 1, sizeof *a);
		HostTensor *b = calloc((size_t)g->noutputs + 1, sizeof *b);
		uint8_t **sa = calloc((size_t)g->noutputs + 1, sizeof *sa);
		uint8_t **sb = calloc((size_t)g->noutputs + 1, sizeof *sb);
		Diag d = {0};
		MpStats st;
		ck_assert_msg(mp_make_inputs(g, &specs[s], NULL, in, &d) == 0, "%s", d.msg);
		ck_assert_msg(mp_make_inputs(v, &specs[s], NULL, vin, &d) == 0, "%s", d.msg);
		ck_assert_msg(mp_exact(g, in, &o, a, sa, &st, &d) == 0, "%s", d.msg);
		ck_assert_msg(mp_exact(v, vin, &o, b, sb, &st, &d) == 0, "%s: %s", what, d.msg);
		for (int k = 0; k < g->noutputs; k++) {
			int64_t at = fz_first_difference(&a[k], &b[k], sa[k], sb[k]);
			ck_assert_msg(at < 0, "%s: output %d element %lld: %.17g against the original's "
				      "%.17g (inputs %zu)", what, k, (long long)at, ht_get(&b[k], at),
				      ht_get(&a[k], at), s);
			free(sa[k]);
			free(sb[k]);
		}
		tu_free_tensors(in, ni);
		tu_free_tensors(vin, ni);
		tu_free_tensors(a, g->noutputs);
		tu_free_tensors(b, g->noutputs);
		free(sa);
		free(sb);
	}
}

/* A bit-identity claim holds under every input spec (fz_variant_verify). */
static void claim_holds(const Graph *g, const FzVariant *v)
{
	MpOpts o = {.threads = 1};
	for (size_t s = 0; s < ARRAY_LEN(specs); s++) {
		bool same = false;
		char why[512];
		Diag d = {0};
		ck_assert_msg(fz_variant_verify(g, v, &specs[s], &o, &same, why, sizeof why, &d) == 0,
			      "%s", d.msg);
		ck_assert_msg(same, "%s (%s): %s\n%s", v->name, v->what, why, v->text);
	}
}

/* ------------------------------------------------------------ each kind by hand */

/* For each kind, a graph with sites of it, what some variant's text must contain, and
 * the claim that variant must make. */
static const struct {
	FzVariantKind kind;
	const char *src;
	const char *want;    /* a line of the variant's text contains it */
	bool bit;
} kinds[] = {
	{FZ_VK_SWAP, "input x : f32[8]\ninput z : f32[8]\ny[i:8] = max(x[i], z[i])\noutput y : f32\n",
	 "y[i:8] = max(z[i], x[i])", true},
	{FZ_VK_SWAP, "input x : f32[8]\ny[i:8] = x[i] < 0.5 ? 1 : 2\noutput y : f32\n",
	 "0.5 > x[i]", true},
	{FZ_VK_VIEW, "input x : f32[8]\ny[i:8] = x[7 - i]\noutput y : f32\n", "(7 - i - 8) % 8",
	 true},
	{FZ_VK_VIEW, "input x : f32[8]\ny[i:9] = x[i - 1] ?? 3\noutput y : f32\n", ") / ", true},
	{FZ_VK_COPY, "input x : f32[4, 6]\ny[i:6, j:4] = x[j, i] * 2\noutput y : f32\n",
	 "mv0[a0:6, b0:4] = x[b0, a0]", true},
	{FZ_VK_COPY, "input x : f16[6]\ny[i:7] = x[i - 1] ?? 9\noutput y : f32\n",
	 "mv0[a0:6] = x[5 - a0]", true},
	{FZ_VK_SPLIT, "input x : f32[4, 6]\ns[i:4] = sum(j:6) exp(x[i, j]) * 3\noutput s : f32\n",
	 "mh0[i:4, j:6] = exp(x[i, j])", true},
	/* f64 accumulation: the hoisted part is stored in f64, and s keeps its f32 store */
	{FZ_VK_SPLIT, "input x : f32[4, 6]\ns[i:4] = sum(j:6) exp(x[i, j]) * 3\noutput s : f32\n"
		      "schedule\naccum s : f64\n", "store mh0 : f64", true},
	/* f16 accumulation: no plain definition computes in f16, so only the exact value */
	{FZ_VK_SPLIT, "input x : f32[4, 6]\ns[i:4] = sum(j:6) exp(x[i, j]) * 3\noutput s : f32\n"
		      "schedule\naccum s : f16\n", "mh0[", false},
	{FZ_VK_INLINE, "input x : f32[6]\np[i:6] = x[i] * 3\ny[i:7] = p[i - 1] ?? 2\noutput y : f32\n",
	 "inline p", true},
	/* a narrowing store is not there once inlined */
	{FZ_VK_INLINE, "input x : f32[6]\np[i:6] = x[i] * 3\ny[i:6] = p[i] + 1\noutput y : f32\n"
		       "schedule\nstore p : f16\n", "inline p", false},
	{FZ_VK_REVERSE, "input x : f32[4, 6]\nm[i:4] = max(j:6) x[i, j]\noutput m : f32\n",
	 "x[i, 5 - j]", true},
	{FZ_VK_REVERSE, "input x : f32[6, 6]\nm[i:6] = min(j: 0..i + 1) x[i, j]\noutput m : f32\n",
	 "x[i, i + 1 - 1 - j]", true},
	{FZ_VK_REVERSE, "input t : i32[4, 6]\ns[i:4] = sum(j:6) t[i, j]\noutput s : i32\n",
	 "t[i, 5 - j]", true},
	{FZ_VK_REVERSE, "input x : f32[4, 6]\ns[i:4] = sum(j:6) x[i, j]\noutput s : f32\n",
	 "x[i, 5 - j]", false},
	{FZ_VK_CAST, "input x : f16[6]\ny[i:6] = x[i] * 2\noutput y : f32\n", "f32(x[i])", true},
	/* an f64 cast makes an f32 definition an f64 one: within budget only */
	{FZ_VK_CAST, "input x : f32[6]\ny[i:6] = x[i] * 2\noutput y : f32\n", "f64(", false},
	{FZ_VK_CAST, "input x : f64[6]\ny[i:6] = x[i] * 2\noutput y : f32\n", "f64(x[i])", true},
};

START_TEST(each_kind_by_hand)
{
	Graph *g = tu_parse(kinds[_i].src);
	bool seen = false;
	int made = 0;
	for (uint64_t seed = 0; seed < 24; seed++) {
		FzVariant v;
		if (!fz_variant_make(g, kinds[_i].kind, seed, &v))
			continue;
		made++;
		ck_assert_int_eq(v.kind, kinds[_i].kind);
		ck_assert_uint_eq(v.seed, seed);
		char *orig = ir_print(g);
		ck_assert_msg(strcmp(orig, v.text) != 0, "a variant that changes nothing");
		free(orig);
		/* the text is canonical and checks */
		Graph *back = tu_parse(v.text);
		char *again = ir_print(back);
		ck_assert_str_eq(again, v.text);
		free(again);
		ir_free(back);
		same_exact(g, v.g, v.what);
		if (v.bit)
			claim_holds(g, &v);
		seen |= strstr(v.text, kinds[_i].want) && v.bit == kinds[_i].bit;
		/* the recipe makes it again */
		FzVariant w;
		ck_assert_int_eq(fz_variant_make(g, v.kind, v.seed, &w), 1);
		ck_assert_str_eq(w.text, v.text);
		fz_variant_free(&w);
		fz_variant_free(&v);
	}
	ck_assert_msg(made > 0, "no %s variant of\n%s", fz_variant_kind_name(kinds[_i].kind),
		      kinds[_i].src);
	ck_assert_msg(seen, "no %s variant claiming %s holds '%s'", fz_variant_kind_name(kinds[_i].kind),
		      kinds[_i].bit ? "bit-identity" : "its budget only", kinds[_i].want);
	ir_free(g);
}
END_TEST

/* Where a kind cannot keep the exact value, it makes nothing. */
START_TEST(kinds_refuse_what_is_not_equivalent)
{
	static const struct {
		FzVariantKind kind;
		const char *src;
	} none[] = {
		/* argmax's first index among ties is the reversed range's last */
		{FZ_VK_REVERSE, "input x : f32[4, 6]\na[i:4] = argmax(j:6) x[i, j]\noutput a : i32\n"},
		{FZ_VK_REVERSE, "input x : f32[4, 6]\nv[i:4, k:2], w[i:4, k:2] = topk(j:6) x[i, j]\n"
				"output v : f32\n"},
		/* a definition's exact value is any real, whatever format it is stored in */
		{FZ_VK_CAST, "input x : f32[6]\np[i:6] = exp(x[i])\ny[i:6] = p[i] * 2\noutput y : f32\n"
			     "schedule\nstore p : f16\n"},
		/* an output is not inlined; a reduction is not */
		{FZ_VK_INLINE, "input x : f32[4, 6]\ns[i:4] = sum(j:6) x[i, j]\ny[i:4] = s[i] + 1\n"
			       "output y : f32, s : f32\n"},
		{FZ_VK_SWAP, "input x : f32[8]\ny[i:8] = x[i] - 1\noutput y : f32\n"},
	};
	for (size_t i = 0; i < ARRAY_LEN(none); i++) {
		Graph *g = tu_parse(none[i].src);
		for (uint64_t seed = 0; seed < 8; seed++) {
			FzVariant v;
			int made = fz_variant_make(g, none[i].kind, seed, &v);
			ck_assert_msg(!made || (none[i].kind == FZ_VK_CAST && !strstr(v.text, "(p[")),
				      "%s made of\n%s:\n%s", fz_variant_kind_name(none[i].kind),
				      none[i].src, v.text);
			if (made)
				fz_variant_free(&v);
		}
		ir_free(g);
	}
}
END_TEST

/* ------------------------------------------------------------ over generated graphs */

/* Every kind over generated graphs: the exact outputs stay, and every claim of
 * bit-identity holds under the emulator. Also: kinds in an order drawn per seed, each
 * kind once before any twice, and the same variants for the same seed. */
START_TEST(generated_graphs_keep_their_values)
{
	GenOpts o;
	fz_gen_defaults(&o);
	int made[FZ_VK__COUNT] = {0}, bit[FZ_VK__COUNT] = {0};
	for (uint64_t n = 40 * (uint64_t)_i; n < 40 * (uint64_t)(_i + 1); n++) {
		Diag d = {0};
		Graph *g = fz_gen(&o, 11, n, &d);
		ck_assert_msg(g, "%s", d.msg);
		for (int k = 0; k < FZ_VK__COUNT; k++) {
			FzVariant v;
			if (!fz_variant_make(g, (FzVariantKind)k, n * 31 + (uint64_t)k, &v))
				continue;
			made[k]++;
			bit[k] += v.bit;
			same_exact(g, v.g, v.what);
			if (v.bit)
				claim_holds(g, &v);
			fz_variant_free(&v);
		}
		FzVariant vs[FZ_VK__COUNT + 2], ws[FZ_VK__COUNT + 2];
		int nv = fz_variants(g, n, FZ_VK__COUNT + 2, vs), nw = fz_variants(g, n, 3, ws);
		ck_assert_int_le(nw, 3);
		bool any[FZ_VK__COUNT] = {false};
		int kinds_made = 0;
		for (int k = 0; k < nv; k++)
			kinds_made += !any[vs[k].kind], any[vs[k].kind] = true;
		for (int k = 0; k < nv; k++) {
			for (int j = 0; j < k && k < kinds_made; j++)
				ck_assert_msg(vs[j].kind != vs[k].kind,
					      "kind %s twice before every kind once", vs[k].name);
			char num[16];
			snprintf(num, sizeof num, "v%d.", k + 1);
			ck_assert_msg(strncmp(vs[k].name, num, strlen(num)) == 0, "%s", vs[k].name);
			if (k < nw)
				ck_assert_str_eq(vs[k].text, ws[k].text);
		}
		for (int k = 0; k < nv; k++)
			fz_variant_free(&vs[k]);
		for (int k = 0; k < nw; k++)
			fz_variant_free(&ws[k]);
		ir_free(g);
	}
	for (int k = 0; k < FZ_VK__COUNT; k++)
		ck_assert_msg(made[k] > 0, "no %s variant in 40 generated graphs",
			      fz_variant_kind_name((FzVariantKind)k));
}
END_TEST

/* The verification can fail: a reversed f32 sum claimed bit-identical is refuted for
 * inputs whose sum depends on the order. */
START_TEST(a_false_claim_is_refuted)
{
	Graph *g = tu_parse("input x : f32[2, 64]\ns[i:2] = sum(j:64) x[i, j]\noutput s : f32\n");
	FzVariant v;
	ck_assert_int_eq(fz_variant_make(g, FZ_VK_REVERSE, 1, &v), 1);
	ck_assert(!v.bit);
	v.bit = true;
	MpOpts o = {.threads = 1};
	InputSpec spec = {DIST_NORMAL, 7, false};
	bool same = true;
	char why[512] = "";
	Diag d = {0};
	ck_assert_int_eq(fz_variant_verify(g, &v, &spec, &o, &same, why, sizeof why, &d), 0);
	ck_assert_msg(!same, "the reversed sum of 64 normal f32 values rounds the same way");
	ck_assert_ptr_nonnull(strstr(why, "output s"));
	fz_variant_free(&v);
	ir_free(g);
}
END_TEST

/* ------------------------------------------------------------ a fault only a variant sees */

/* max_nan lowers max(a, b) as a > b ? a : b: max(log(x), x) loses the NaN of log of a
 * negative x, where the budget claims nothing (a log argument may be 0: +inf), so the
 * check sees no failure; max(x, log(x)) keeps it. The swap variant of one is the other,
 * so a pair check finds the difference: variant-mismatch, with the fault implicated. */
static const char *maxnan_src = "input x : f32[16]\ny[i:16] = max(log(x[i]), x[i])\noutput y : f32\n";

static bool has_failure(const FzResult *res)
{
	for (int k = 0; k < res->n; k++)
		if (res->v[k].suspect)
			return true;
	return false;
}

START_TEST(max_nan_only_a_variant_sees)
{
	Graph *g = tu_parse(maxnan_src);
	uint64_t f;
	Diag d = {0};
	ck_assert_int_eq(vf_faults_parse("max_nan", &f, &d), 0);
	FzRun on = run_c(f, 3, DIST_NORMAL, false), off = run_c(0, 3, DIST_NORMAL, false);
	/* the budgets see nothing */
	FzResult res = {0};
	ck_assert_msg(fz_check(g, &on, &res, &d) == 0, "%s", d.msg);
	ck_assert_msg(!has_failure(&res), "the fault is visible without a variant");
	fz_result_free(&res);
	/* the swap variant, checked as a pair, differs bit for bit */
	FzVariant v;
	ck_assert_int_eq(fz_variant_make(g, FZ_VK_SWAP, 0, &v), 1);
	ck_assert(v.bit);
	ck_assert_ptr_nonnull(strstr(v.text, "max(x[i], log(x[i]))"));
	FzRun pon = on, poff = off;
	pon.pair = poff.pair = true;
	pon.pair_kind = poff.pair_kind = v.kind;
	pon.pair_seed = poff.pair_seed = v.seed;
	memset(&res, 0, sizeof res);
	ck_assert_msg(fz_check(g, &pon, &res, &d) == 0, "%s", d.msg);
	int k = fz_result_find(&res, "c", "y");
	ck_assert_int_ge(k, 0);
	ck_assert_int_eq(res.v[k].verdict, V_VARIANT_MISMATCH);
	FzSig *sigs = NULL;
	ck_assert_msg(fz_classify(g, &pon, &res, &sigs, &d) == 0, "%s", d.msg);
	char key[512];
	ck_assert_str_eq(fz_sig_key(&sigs[k], key, sizeof key), "c/variant-mismatch/f32/-/max_nan");
	FzSig back;
	ck_assert_int_eq(fz_sig_parse(key, &back), 0);
	ck_assert_int_eq(back.verdict, V_VARIANT_MISMATCH);
	/* it holds as a pair, and goes away without the fault */
	bool holds = false;
	ck_assert_int_eq(fz_holds(g, &pon, &sigs[k], &holds, &d), 0);
	ck_assert(holds);
	fz_result_free(&res);
	memset(&res, 0, sizeof res);
	ck_assert_msg(fz_check(g, &poff, &res, &d) == 0, "%s", d.msg);
	ck_assert_msg(!has_failure(&res), "the pair differs without the fault");
	fz_result_free(&res);
	/* reduced as a pair: the repro still differs from its own variant */
	FzReduceOpts ro = {pon, 60, 0, NULL};
	FzReduceStats st;
	char *repro = NULL;
	ck_assert_msg(fz_reduce(g, &sigs[k], &ro, &repro, &st, &d) == 0, "%s", d.msg);
	Graph *rg = tu_parse(repro);
	ck_assert_int_eq(fz_holds(rg, &pon, &sigs[k], &holds, &d), 0);
	ck_assert(holds);
	/* its failure folder holds the variant too, and the header says it is a pair's */
	char *dir = tu_mkdtemp("meta");
	char *header = fz_repro_header(&sigs[k], &pon, rg->ndefs, "case 1, variant v1.swap");
	ck_assert_ptr_nonnull(strstr(header, "variant.tg"));
	ck_assert_ptr_nonnull(strstr(header, "swap variant"));
	ck_assert_msg(fz_save_failure(dir, &sigs[k], repro, header, NULL, &pon, &d) == 0, "%s",
		      d.msg);
	char path[600];
	snprintf(path, sizeof path, "%s/variant.tg", dir);
	char *vt = tu_read_file(path, NULL);
	ck_assert_msg(vt && strstr(vt, "swap variant of repro.tg"), "%s", vt ? vt : "no variant.tg");
	free(vt);
	tu_rm_rf(dir);
	free(dir);
	free(header);
	ir_free(rg);
	free(repro);
	free(sigs);
	fz_variant_free(&v);
	ir_free(g);
}
END_TEST

/* A variant's oracle must be its original's: a "variant" that changes the value is
 * caught by the comparison (FzResult.against), not passed as a variant. */
/* A graph with an online set is checked under its schedule and the default one, whose
 * bits differ (d0's split): fz_check_pair held each variant record to the original's first
 * record of its (backend, output), the graph schedule's, and reported the default's
 * difference as a variant-mismatch (campaign seed 1, case 127, on c, opencl and vulkan). */
START_TEST(pairs_compare_the_same_schedule)
{
	static const char *const src =
		"size N = 10\nd0[i:1] = sum(r:N) 1 / N\nd3[i:1] = logsumexp(r: 0..1) 0\n"
		"output d0 : f32, d3 : f64\nschedule\nsplit d0 : r=2\nonline d3\n";
	Graph *g = tu_parse(src);
	FzVariant v;
	ck_assert_int_eq(fz_variant_make(g, FZ_VK_SPLIT, 3838610360942107860ull, &v), 1);
	ck_assert(v.bit);
	FzRun r = run_c(0, 7952101132001290189ull, DIST_NORMAL, false);
	r.pair = true;
	r.pair_kind = v.kind;
	r.pair_seed = v.seed;
	FzResult res = {0};
	Diag d = {0};
	ck_assert_msg(fz_check(g, &r, &res, &d) == 0, "%s", d.msg);
	ck_assert_int_eq(res.n, 4);   /* d0 and d3 under the graph's schedule and the default */
	for (int k = 0; k < res.n; k++)
		ck_assert_msg(res.v[k].verdict != V_VARIANT_MISMATCH, "%s %s: a variant-mismatch",
			      res.v[k].backend, res.v[k].output);
	fz_result_free(&res);
	fz_variant_free(&v);
	ir_free(g);
}
END_TEST

START_TEST(a_different_oracle_is_caught)
{
	Graph *g = tu_parse("input x : f32[8]\ny[i:8] = x[i] * 2\noutput y : f32\n");
	Graph *w = tu_parse("input x : f32[8]\ny[i:8] = x[i] * 3\noutput y : f32\n");
	FzRun r = run_c(0, 5, DIST_NORMAL, false);
	FzResult orig = {0}, res = {0};
	orig.keep = true;
	Diag d = {0};
	ck_assert_int_eq(fz_check(g, &r, &orig, &d), 0);
	ck_assert_int_eq(orig.nkept, 1);
	res.against = &orig;
	res.against_bit = true;
	res.variant = "wrong";
	ck_assert_int_eq(fz_check(w, &r, &res, &d), 0);
	ck_assert_ptr_nonnull(res.oracle_diff);
	ck_assert_ptr_nonnull(strstr(res.oracle_diff, "y["));
	/* outputs that differ where both pass their budgets: a mismatch */
	ck_assert_int_eq(res.v[0].verdict, V_VARIANT_MISMATCH);
	fz_result_free(&res);
	/* the same graph again: nothing */
	memset(&res, 0, sizeof res);
	res.against = &orig;
	res.against_bit = true;
	ck_assert_int_eq(fz_check(g, &r, &res, &d), 0);
	ck_assert_ptr_null(res.oracle_diff);
	ck_assert_int_eq(res.v[0].verdict, V_PASS);
	fz_result_free(&res);
	fz_result_free(&orig);
	ir_free(g);
	ir_free(w);
}
END_TEST

/* ------------------------------------------------------------ campaigns */

static FzCampaign camp(int64_t cases, double variants)
{
	FzCampaign c;
	fz_campaign_defaults(&c);
	c.seed = 7;
	c.cases = cases;
	c.jobs = 1;
	c.reduce = false;
	c.timeout_s = 20;
	c.variants = variants;
	return c;
}

/* Each case's variants: their records carry "variant", the done line lists them with their
 * claims; a fraction of a variant is one in that share of the cases; --replay's case is
 * the log's (fz_case_run), and fz_case_variants gives the variants the log names. */
START_TEST(campaign_checks_variants)
{
	char *a = tu_mkdtemp("meta");
	FzCampaign c = camp(8, 1.5);
	FzSummary sum;
	Diag d = {0};
	ck_assert_msg(fz_campaign_run(a, &c, false, NULL, &sum, &d) == 0, "%s", d.msg);
	ck_assert_int_eq(sum.errors, 0);
	char path[512];
	snprintf(path, sizeof path, "%s/results.jsonl", a);
	char *log = tu_read_file(path, NULL);
	ck_assert_ptr_nonnull(log);
	int ones = 0, twos = 0;
	for (char *p = log; (p = strstr(p, "{\"done\":")); p++) {
		char vs[4096] = "";
		char *nl = strchr(p, '\n');
		*nl = 0;
		ck_assert(fz_json_get(p, "variants", vs, sizeof vs));
		int n = 0;
		for (char *q = vs; (q = strstr(q, "\"name\":")); q++)
			n++;
		ones += n == 1;
		twos += n == 2;
		ck_assert_msg(strstr(vs, "\"claim\":\""), "%s", vs);
		*nl = '\n';
	}
	ck_assert_int_eq(ones + twos, 8);
	ck_assert_int_gt(ones, 0);   /* 1.5: one, and in half the cases two */
	ck_assert_int_gt(twos, 0);
	ck_assert_ptr_nonnull(strstr(log, ",\"variant\":\"v1."));
	ck_assert_ptr_nonnull(strstr(log, ",\"variant\":\"v2."));
	/* the campaign's settings keep it; a replayed case is the log's, variants included */
	FzCampaign back;
	ck_assert_int_eq(fz_settings_read(a, &back, &d), 0);
	ck_assert(back.variants == 1.5);
	char *blob = NULL, *gtext = NULL;
	ck_assert_int_eq(fz_case_run(&back, 3, cache(), NULL, &blob, NULL, &gtext, &d), 0);
	char *cut = strstr(blob, ",\"gen_s\":");
	ck_assert_ptr_nonnull(cut);
	*cut = 0;
	ck_assert_msg(strstr(log, strstr(blob, "{\"done\":")), "case 3 replays differently");
	char *v1 = strstr(blob, ",\"variant\":\"v1.");
	ck_assert_ptr_nonnull(v1);
	Graph *g = tu_parse(gtext);
	FzVariant vs[FZ_MAX_VARIANTS];
	int nv = fz_case_variants(&back, 3, g, vs, FZ_MAX_VARIANTS);
	ck_assert_int_ge(nv, 1);
	char want[64];
	snprintf(want, sizeof want, ",\"variant\":\"%s\"", vs[0].name);
	ck_assert_ptr_nonnull(strstr(blob, want));
	for (int k = 0; k < nv; k++)
		fz_variant_free(&vs[k]);
	ir_free(g);
	/* the report counts them */
	RpLoadOpts lo = {false};
	RpRun run;
	ck_assert_msg(rp_load(a, &lo, &run, &d) == 0, "%s", d.msg);
	RpSummary s;
	rp_summarise(&run, &s);
	ck_assert_int_gt(s.variant_results, 0);
	ck_assert_int_gt(s.nvariants, 0);
	char *md = NULL;
	size_t mdlen = 0;
	FILE *f = open_memstream(&md, &mdlen);
	rp_markdown(f, &run, &s, "out");
	fclose(f);
	ck_assert_ptr_nonnull(strstr(md, "**Metamorphic variants**"));
	free(md);
	rp_summary_free(&s);
	rp_free(&run);
	free(blob);
	free(gtext);
	free(log);
	tu_rm_rf(a);
	free(a);
}
END_TEST

/* A campaign written before variants existed has none: its settings lack the member. */
START_TEST(old_settings_have_no_variants)
{
	char *a = tu_mkdtemp("meta");
	FzCampaign c = camp(1, 0.25), back;
	Diag d = {0};
	ck_assert_int_eq(fz_settings_write(a, &c, &d), 0);
	ck_assert_int_eq(fz_settings_read(a, &back, &d), 0);
	ck_assert(back.variants == 0.25);
	char path[512];
	snprintf(path, sizeof path, "%s/settings.json", a);
	char *t = tu_read_file(path, NULL), *m = strstr(t, ",\"variants\":");
	ck_assert_ptr_nonnull(m);
	memmove(m, strchr(m + 1, ','), strlen(strchr(m + 1, ',')) + 1);
	FILE *f = fopen(path, "w");
	fputs(t, f);
	fclose(f);
	ck_assert_msg(fz_settings_read(a, &back, &d) == 0, "%s", d.msg);
	ck_assert(back.variants == 0);
	c.variants = FZ_MAX_VARIANTS + 1;
	ck_assert_int_eq(fz_settings_check(&c, &d), -1);
	ck_assert_msg(strstr(d.msg, "member 'variants'"), "%s", d.msg);
	diag_clear(&d);
	free(t);
	tu_rm_rf(a);
	free(a);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("meta");
	TCase *tc = tcase_create("kinds");
	tcase_set_timeout(tc, 120);
	tcase_add_loop_test(tc, each_kind_by_hand, 0, (int)ARRAY_LEN(kinds));
	tcase_add_test(tc, kinds_refuse_what_is_not_equivalent);
	tcase_add_loop_test(tc, generated_graphs_keep_their_values, 0, 3);
	tcase_add_test(tc, a_false_claim_is_refuted);
	suite_add_tcase(s, tc);
	tc = tcase_create("checks");
	tcase_set_timeout(tc, 240);
	tcase_add_test(tc, max_nan_only_a_variant_sees);
	tcase_add_test(tc, a_different_oracle_is_caught);
	tcase_add_test(tc, pairs_compare_the_same_schedule);
	tcase_add_test(tc, campaign_checks_variants);
	tcase_add_test(tc, old_settings_have_no_variants);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	char cmd[600];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", cache());
	if (system(cmd) != 0)
		fprintf(stderr, "test_meta: could not empty %s\n", cache());
	return tu_run(suite());
}
