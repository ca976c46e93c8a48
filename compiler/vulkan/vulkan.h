/* compiler/vulkan/vulkan.h (private to compiler/vulkan/): the Vulkan backend's parts and
 * the contract between its emitter and its runtime.
 *
 * The emitted program is one GLSL 450 compute shader per kernel, concatenated in kernel
 * order; each shader starts with a line `//// assay kernel I: NAME` (VK_MARK) so the runtime
 * can cut the text apart again. A shader declares only the buffers it touches, at binding
 * b (set 0) for program buffer b, plus the error buffer at binding nbufs: VK_ERR_WORDS
 * 32-bit words per kernel (word 0: error site + 1, set once by compare-and-swap; words 1
 * and 2: the low and high halves of the offending 64-bit value).
 *
 * Local arrays longer than vk_target.private_elems (128) elements (pairwise term buffers, large topk
 * lists) live in a scratch buffer rather than in private memory (compilers such as
 * lavapipe's LLVM take time superlinear in a private array's length): each invocation of
 * a dispatch owns MapKernel.scratch bytes of it (also on the marker line), bound as float, double and int64
 * views at bindings nbufs + 1, + 2, + 3. The runtime dispatches a kernel in chunks of
 * items, each chunk's first item in the push constant `base`, so the scratch buffer stays
 * within the device's limits; chunks of one kernel are separated by barriers.
 *
 * Device-dependent choices are left to preprocessor symbols the runtime defines after the
 * `#version` line (so one emitted text serves every device): VK_SYM_16BIT (f16/bf16
 * buffers as uint16_t through GL_EXT_shader_16bit_storage, else two per uint with atomic
 * read-modify-write stores), VK_SYM_FC (float controls usable), and VK_SYM_DENORM32/64,
 * VK_SYM_SZINP32/64, VK_SYM_RTE32/64 for the float-controls execution modes the device
 * supports (denormals preserved, signed zero/inf/NaN preserved, round to nearest even).
 *
 * Kernel plans (the mapping stage, compiler/map/map.h, rules MAP_RULES_REPLICATE in
 * compiler/map/replicate.c): how a kernel's items and loops map onto invocations. A kernel
 * either runs one item per invocation (MAP_ITEM), or one item per work-group whose
 * invocations execute the item's statements redundantly ("replicated" code, every
 * invocation holding identical locals) except inside distributed loops, whose iterations
 * are spread over the invocations. The plan is recorded with the program (map_plan): the
 * emitter spells it and run.c launches from it; the mark line only documents it.
 */
#ifndef ASSAY_VULKAN_VULKAN_H
#define ASSAY_VULKAN_VULKAN_H

#include "../map/map.h"

#define VK_MARK "//// assay kernel "
#define VK_SYM_16BIT "ASSAY_16BIT"
#define VK_SYM_FC "ASSAY_FC"
#define VK_SYM_DENORM32 "ASSAY_DENORM32"
#define VK_SYM_DENORM64 "ASSAY_DENORM64"
#define VK_SYM_SZINP32 "ASSAY_SZINP32"
#define VK_SYM_SZINP64 "ASSAY_SZINP64"
#define VK_SYM_RTE32 "ASSAY_RTE32"
#define VK_SYM_RTE64 "ASSAY_RTE64"

enum {
	VK_ERR_WORDS = 4,      /* error words per kernel */
	VK_WG_MAX = 256,       /* the largest work-group a plan asks for */
};

/* The vulkan target's limits (run.c; its plans: compiler/map/replicate.c). */
extern const MapTarget vk_target;
/* Whether loop statement s counts from a constant >= 0 to a bound known below 2^31 - 1, so
 * that its counter may be a 32-bit int (emit.c). */
bool vk_loop_narrow(const Kernels *k, int32_t s);
/* An upper bound of the iterations of the distributed nest rooted at s, or -1. */
int64_t vk_chain_bound(const Kernels *k, const MapKernel *p, int32_t s);

/* The GLSL helper library (lib.c): one bit per helper; vk_lib adds what each depends on. */
enum {
	VH_RNE = 1 << 0,      /* rne_shr */
	VH_RNE64 = 1 << 1,    /* rne_shr64, msb64 */
	VH_F16 = 1 << 2,      /* h2f, f2h */
	VH_BF16 = 1 << 3,     /* b2f, f2b */
	VH_I2F = 1 << 4,
	VH_I2D = 1 << 5,
	VH_D2F = 1 << 6,
	VH_D2H = 1 << 7,
	VH_D2B = 1 << 8,
	VH_IDIV = 1 << 9,
	VH_IMOD = 1 << 10,
	VH_IMINMAX = 1 << 11, /* abs_i, max_i, min_i */
	VH_FMINMAX = 1 << 12,
	VH_DMINMAX = 1 << 13,
	VH_EXPM1 = 1 << 14,
	VH_LOG1P = 1 << 15,
	VH_TANH = 1 << 16,
	VH_ERF = 1 << 17,
	VH_POW = 1 << 18,
	VH_SIGMOID = 1 << 19,
	VH_EXP_D = 1 << 20,   /* exp_d and its scaling */
	VH_EXP2_D = 1 << 21,
	VH_EXPM1_D = 1 << 22,
	VH_LOG_D = 1 << 23,   /* log_d and its core */
	VH_LOG2_D = 1 << 24,
	VH_LOG1P_D = 1 << 25,
	VH_SINCOS_D = 1 << 26,
	VH_TANH_D = 1 << 27,
	VH_SIGMOID_D = 1 << 28,
	VH_ERF_D = 1 << 29,
	VH_POW_D = 1 << 30,
};
/* The VH_ bit of the helper that defines function fn (an op's spelling: "exp_d"), or 0 for
 * a name the library does not define (a GLSL built-in: "exp"). */
unsigned vk_lib_need(const char *fn);
/* Passes the text of every helper in need (and their dependencies), in a fixed order. */
void vk_lib(unsigned need, void (*put)(void *ctx, const char *text), void *ctx);

char *vk_emit(const Kernels *k, Diag *d);
extern const Backend vulkan_backend;   /* run.c */

#endif
