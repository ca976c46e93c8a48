/* bench/exp/mma/mma.cu: the device half of the matrix-unit experiment (README.md beside it).
 *
 * Runs every tile of tiles.h through exactly one tensor-core instruction, written in inline
 * PTX so that nothing but that instruction touches the numbers: operands move as raw bits
 * (C enters and D leaves as u32, reinterpreted, never converted). It writes the dump that
 * compare.c holds to interp/mma.c's model, and prints the MMA-Sim-style probes of probes.h:
 * each probe's answer under the model's row for this device, by construction, beside the
 * unit's.
 *
 * Usage: mma DUMP [NRAND_MMA [NRAND_WGMMA]] (random tiles per mma.sync and per wgmma
 * instruction; 2048 and 256, so that the dump stays under 16 MiB). Exit status: 0 done; 1 a
 * layout check failed (that instruction's other tiles are left out of the dump: with a
 * wrong fragment layout they would measure the harness, not the unit); 2 bad arguments;
 * 3 no device, or a CUDA error (the dump then holds the instructions finished before it).
 *
 * Fragment layouts: mma.sync as the PTX ISA's "Matrix Fragments for mma.m16n8k16 / m16n8k8
 * with floating point type" give them; wgmma (sm_90a only) takes A and B from shared memory
 * through matrix descriptors, no swizzle, K-major: core matrices of 8 rows by 16 bytes,
 * 128 bytes each, the two halves of k 128 bytes apart (the descriptor's leading byte
 * offset), groups of 8 rows of m (or n) 256 bytes apart (its stride byte offset). The
 * layout tiles check this on the device; should they fail, the run tries the two offsets
 * swapped once and says so (flag MD_SWAPPED).
 */
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cuda_runtime.h>
#include "tiles.h"
#include "probes.h"

/* ---- kernels */

/* One warp a tile. g = lane / 4, q = lane % 4. A's register j holds row g + 8 (j & 1),
 * columns 2q + 8 (j >> 1) and the next; B's register j holds rows (k) 2q + 8 j and the next
 * of column g; C and D element i is row g + 8 (i >> 1), column 2q + (i & 1). The lower half
 * of a register is the lower index. INS: 0 bf16 k16, 1 f16 k16, 2 bf16 k8. */
template <int INS>
__global__ void k_mma(Tile *tiles, int nt)
{
	const int K = INS == 2 ? 8 : 16, N = 8;
	int w = (int)((blockIdx.x * blockDim.x + threadIdx.x) >> 5), lane = threadIdx.x & 31;
	if (w >= nt)
		return;   /* a whole warp: mma.sync needs all 32 lanes */
	Tile *t = tiles + w;
	int g = lane >> 2, q = lane & 3;
	uint32_t a[4] = {0, 0, 0, 0}, b[2] = {0, 0};
	float c[4], d[4];
	for (int j = 0; j < K / 4; j++) {
		int row = g + 8 * (j & 1), col = 2 * q + 8 * (j >> 1);
		a[j] = t->a[row * K + col] | (uint32_t)t->a[row * K + col + 1] << 16;
	}
	for (int j = 0; j < K / 8; j++) {
		int kk = 2 * q + 8 * j;
		b[j] = t->b[kk * N + g] | (uint32_t)t->b[(kk + 1) * N + g] << 16;
	}
	for (int i = 0; i < 4; i++)
		c[i] = __uint_as_float(t->c[(g + 8 * (i >> 1)) * N + 2 * q + (i & 1)]);
	if (INS == 0)
		asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
			     "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%10,%11,%12,%13};"
			     : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
			     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]),
			       "f"(c[0]), "f"(c[1]), "f"(c[2]), "f"(c[3]));
	else if (INS == 1)
		asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
			     "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%10,%11,%12,%13};"
			     : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
			     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]),
			       "f"(c[0]), "f"(c[1]), "f"(c[2]), "f"(c[3]));
	else
		asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.bf16.bf16.f32 "
			     "{%0,%1,%2,%3}, {%4,%5}, {%6}, {%7,%8,%9,%10};"
			     : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
			     : "r"(a[0]), "r"(a[1]), "r"(b[0]),
			       "f"(c[0]), "f"(c[1]), "f"(c[2]), "f"(c[3]));
	for (int i = 0; i < 4; i++)
		t->d[(g + 8 * (i >> 1)) * N + 2 * q + (i & 1)] = __float_as_uint(d[i]);
}

/* set by a wgmma kernel built for sm_90a: a binary built for another arch has a stub */
__device__ int wgmma_built;

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
/* a shared-memory matrix descriptor: start address, leading and stride byte offsets (each
 * in 16-byte units), base offset 0, no swizzle */
static __device__ uint64_t smem_desc(const void *p, int lbo, int sbo)
{
	uint32_t a = (uint32_t)__cvta_generic_to_shared(p);
	return (uint64_t)((a & 0x3ffff) >> 4) | (uint64_t)(lbo >> 4) << 16 | (uint64_t)(sbo >> 4) << 32;
}
#endif

/* One warpgroup (128 threads) a tile. D element i of thread (warp w, g, q) is row
 * 16 w + g + 8 (i >> 1), column 2q + (i & 1) (m64nNk16's accumulator layout, N = 8). */
template <int F16>
__global__ void __launch_bounds__(128) k_wgmma(Tile *tiles, int swap)
{
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
	/* sb is 1 KB although B takes 256 bytes: the swapped descriptor reads past 256 */
	__shared__ __align__(1024) uint16_t sa[64 * 16];
	__shared__ __align__(1024) uint16_t sb[512];
	Tile *t = tiles + blockIdx.x;
	int tid = threadIdx.x;
	/* in elements: core matrix rows 8 apart, k halves 64 apart, 8-row groups 128 apart */
	for (int e = tid; e < 64 * 16; e += 128) {
		int m = e / 16, kk = e % 16;
		sa[(m >> 3) * 128 + (kk >> 3) * 64 + (m & 7) * 8 + (kk & 7)] = t->a[e];
	}
	for (int e = tid; e < 512; e += 128)
		sb[e] = 0;
	__syncthreads();
	for (int e = tid; e < 16 * 8; e += 128) {
		int kk = e / 8, n = e % 8;
		sb[(kk >> 3) * 64 + n * 8 + (kk & 7)] = t->b[e];
	}
	/* the generic proxy's stores are made visible to the async proxy wgmma reads through */
	asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
	__syncthreads();
	int lbo = swap ? 256 : 128, sbo = swap ? 128 : 256;
	uint64_t da = smem_desc(sa, lbo, sbo), db = smem_desc(sb, lbo, sbo);
	int w = tid >> 5, lane = tid & 31, g = lane >> 2, q = lane & 3, at[4];
	float d[4];
	for (int i = 0; i < 4; i++) {
		at[i] = (16 * w + g + 8 * (i >> 1)) * 8 + 2 * q + (i & 1);
		d[i] = __uint_as_float(t->c[at[i]]);
	}
	asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
	/* scale-d = 1: D = A B + D, D holding C; scale-a, scale-b 1; both K-major */
	if (F16)
		asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %6, 0;\n"
			     "wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 "
			     "{%0,%1,%2,%3}, %4, %5, p, 1, 1, 0, 0;\n}"
			     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
			     : "l"(da), "l"(db), "r"(1) : "memory");
	else
		asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %6, 0;\n"
			     "wgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.bf16 "
			     "{%0,%1,%2,%3}, %4, %5, p, 1, 1, 0, 0;\n}"
			     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
			     : "l"(da), "l"(db), "r"(1) : "memory");
	asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
	asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
	for (int i = 0; i < 4; i++)
		t->d[at[i]] = __float_as_uint(d[i]);
	if (tid == 0 && blockIdx.x == 0)
		wgmma_built = 1;
#else
	(void)tiles, (void)swap;
#endif
}

/* ---- host: running, checking the layout, writing the dump */

static FILE *dump;
static unsigned ndumped, dflags;
static int sm;

/* the dump's header names the tiles written so far: rewritten at the end and on errors */
static void finish(void)
{
	if (!dump)
		return;
	fflush(dump);
	fseek(dump, 0, SEEK_SET);
	dump_header(dump, (uint32_t)sm, ndumped, dflags);
	fclose(dump);
	dump = NULL;
}

#define CK(x)                                                                              \
	do {                                                                               \
		cudaError_t e_ = (x);                                                      \
		if (e_ != cudaSuccess) {                                                   \
			printf("mma: CUDA error %s at %s:%d (%s)\n", cudaGetErrorString(e_), \
			       __FILE__, __LINE__, #x);                                    \
			finish();                                                          \
			exit(3);                                                           \
		}                                                                          \
	} while (0)

static void launch(int ins, Tile *h, int nt, int swap)
{
	Tile *dt;
	size_t sz = (size_t)nt * sizeof(Tile);
	CK(cudaMalloc(&dt, sz));
	CK(cudaMemcpy(dt, h, sz, cudaMemcpyHostToDevice));
	switch (ins) {
	case 0: k_mma<0><<<(nt + 3) / 4, 128>>>(dt, nt); break;
	case 1: k_mma<1><<<(nt + 3) / 4, 128>>>(dt, nt); break;
	case 2: k_mma<2><<<(nt + 3) / 4, 128>>>(dt, nt); break;
	case 3: k_wgmma<0><<<nt, 128>>>(dt, swap); break;
	default: k_wgmma<1><<<nt, 128>>>(dt, swap); break;
	}
	CK(cudaGetLastError());
	CK(cudaDeviceSynchronize());
	CK(cudaMemcpy(h, dt, sz, cudaMemcpyDeviceToHost));
	CK(cudaFree(dt));
}

/* layout tiles whose D is not the exact (integer) sum; the first miss is printed */
static int layout_bad(const Tile *h, int nt)
{
	int bad = 0;
	for (int j = 0; j < nt; j++) {
		const Tile *t = &h[j];
		const MmIns *I = &mm_ins[t->ins];
		if (t->fam != FAM_LAYOUT)
			continue;
		int miss = 0;
		for (int i = 0; i < I->m; i++)
			for (int n = 0; n < I->n; n++) {
				double s = dec(FMT_F32, t->c[i * I->n + n]);
				for (int kk = 0; kk < I->k; kk++)
					s += dec(I->fmt, t->a[i * I->k + kk]) * dec(I->fmt, t->b[kk * I->n + n]);
				uint32_t want = enc(FMT_F32, s), got = t->d[i * I->n + n];
				if (want != got && !miss++ && !bad)
					printf("  layout: tile %d row %d col %d: want %.9g, got %.9g (0x%08x)\n",
					       j, i, n, s, (double)dec(FMT_F32, got), got);
			}
		bad += miss > 0;
	}
	return bad;
}

/* one instruction: generate, run, check the layout, print the probes, dump; 1 if the
 * layout check failed */
static int instruction(int ins, int nrand)
{
	const MmIns *I = &mm_ins[ins];
	int nt = tile_count(nrand), swap = 0, block, frac;
	model_row(sm, I, &block, &frac);
	printf("\n%s: %d tiles (model: block %d, frac %d, result toward zero)\n", I->name, nt, block, frac);
	if (I->wg && sm != 90) {
		printf("  skipped: wgmma needs sm_90a; this device is sm_%d\n", sm);
		return 0;
	}
	Tile *h = (Tile *)malloc((size_t)nt * sizeof(Tile));
	if (!h) {
		printf("mma: out of memory\n");
		finish();
		exit(3);
	}
	for (int j = 0; j < nt; j++)
		gen_tile(&h[j], ins, j, nrand);
	launch(ins, h, nt, 0);
	if (I->wg) {
		int built = 0;
		CK(cudaMemcpyFromSymbol(&built, wgmma_built, sizeof built));
		if (!built) {
			printf("  skipped: this binary was not built for sm_90a (run.sh builds it so)\n");
			free(h);
			return 0;
		}
	}
	int bad = layout_bad(h, nt);
	if (bad && I->wg) {
		printf("  layout: %d of %d tiles wrong with LBO 128 (k), SBO 256 (m); trying them swapped\n",
		       bad, MM_NLAYOUT);
		launch(ins, h, nt, swap = 1);
		bad = layout_bad(h, nt);
	}
	if (bad) {
		printf("  layout: FAILED (%d of %d integer tiles not exact): only they are dumped\n", bad, MM_NLAYOUT);
		nt = MM_NLAYOUT;
	} else {
		printf("  layout: ok (%d integer tiles exact%s)\n", MM_NLAYOUT,
		       swap ? "; descriptor offsets SWAPPED: LBO 256, SBO 128" : "");
		if (swap)
			dflags |= MD_SWAPPED;
		if (I->wg)
			dflags |= MD_WGMMA;
		probes(h, nt, sm);
	}
	for (int j = 0; j < nt; j++)
		if (dump_tile(dump, &h[j])) {
			printf("mma: cannot write the dump\n");
			finish();
			exit(3);
		}
	ndumped += (unsigned)nt;
	free(h);
	return bad != 0;
}

static int count_arg(const char *s, int *v)
{
	char *end;
	long x = strtol(s, &end, 10);
	if (*s < '0' || *s > '9' || *end || x < 1 || x > 100000)
		return -1;
	*v = (int)x;
	return 0;
}

int main(int argc, char **argv)
{
	int nr_mma = 2048, nr_wg = 256, ndev = 0, rc = 0;
	if (argc < 2 || argc > 4 || (argc > 2 && count_arg(argv[2], &nr_mma)) ||
	    (argc > 3 && count_arg(argv[3], &nr_wg))) {
		fprintf(stderr, "usage: mma DUMP [NRAND_MMA [NRAND_WGMMA]] (counts 1..100000)\n");
		return 2;
	}
	if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
		fprintf(stderr, "mma: no CUDA device: nothing run\n");
		return 3;
	}
	cudaDeviceProp p;
	CK(cudaGetDeviceProperties(&p, 0));
	sm = p.major * 10 + p.minor;
	printf("mma: %s, sm_%d; seed 0x%llx; one instruction a tile\n", p.name, sm, (unsigned long long)MM_SEED);
	if (sm < 80) {
		printf("mma: these instructions need sm_80 or later\n");
		return 3;
	}
	if (!(dump = fopen(argv[1], "wb")) || dump_header(dump, (uint32_t)sm, 0, 0)) {
		printf("mma: cannot write %s\n", argv[1]);
		return 3;
	}
	for (int ins = 0; ins < MM_NINS; ins++)
		rc |= instruction(ins, mm_ins[ins].wg ? nr_wg : nr_mma);
	finish();
	printf("\nmma: %u tiles written to %s%s\n", ndumped, argv[1], rc ? "; a layout check FAILED" : "");
	return rc;
}
