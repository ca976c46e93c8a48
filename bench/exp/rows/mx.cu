// max.NaN.f32 / min.NaN.f32 against IEEE 754-2019 maximum/minimum (-0 < +0, NaN propagates)
#include <cstdio>
#include <cstring>
__device__ float mxa(float a, float b) { float r; asm("max.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b)); return r; }
__device__ float mna(float a, float b) { float r; asm("min.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b)); return r; }
__global__ void k(const float *v, int n, float *o)
{
	int i = threadIdx.x / n, j = threadIdx.x % n;
	if (i < n) { o[2 * (i * n + j)] = mxa(v[i], v[j]); o[2 * (i * n + j) + 1] = mna(v[i], v[j]); }
}
static float ref(float a, float b, int mx)
{
	if (a != a || b != b) return a + b;
	if (a == b) { unsigned ua, ub; memcpy(&ua, &a, 4); memcpy(&ub, &b, 4); return ((int)ua < 0) == mx ? b : a; }
	return mx ? (a > b ? a : b) : (a < b ? a : b);
}
int main()
{
	float h[] = {0.0f, -0.0f, 1.0f, -1.0f, 1e-45f, -1e-45f, 1e-40f, 3.4e38f, -3.4e38f, __builtin_inff(), -__builtin_inff(), __builtin_nanf(""), -__builtin_nanf(""), 2.5f, -7.0f};
	int n = sizeof h / sizeof h[0];
	float *dv, *dout, ho[2 * 15 * 15];
	cudaMalloc(&dv, sizeof h); cudaMalloc(&dout, sizeof ho);
	cudaMemcpy(dv, h, sizeof h, cudaMemcpyHostToDevice);
	k<<<1, 256>>>(dv, n, dout);
	if (cudaMemcpy(ho, dout, sizeof ho, cudaMemcpyDeviceToHost) != cudaSuccess) {
		printf("mx: no result from the device: %s\n", cudaGetErrorString(cudaGetLastError()));
		return 3;
	}
	int bad = 0;
	for (int i = 0; i < n; i++) for (int j = 0; j < n; j++) for (int mx = 1; mx >= 0; mx--) {
		float g = ho[2 * (i * n + j) + (1 - mx)], r = ref(h[i], h[j], mx);
		unsigned ug, ur; memcpy(&ug, &g, 4); memcpy(&ur, &r, 4);
		if (!(g != g && r != r) && ug != ur) { bad++; printf("%s(%g,%g): got %08x want %08x\n", mx ? "max" : "min", h[i], h[j], ug, ur); }
	}
	printf("max.NaN/min.NaN vs IEEE 754-2019: %d mismatches over %d pairs\n", bad, 2 * n * n);
	return 0;
}
