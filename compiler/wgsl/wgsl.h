/* compiler/wgsl/wgsl.h (private to compiler/wgsl/): the WGSL backend's parts.
 *
 * - the mapping stage (compiler/map/map.h, map/owner.c) analyses a program before emission: an
 *   interval for every integer expression (WGSL has no 64-bit integers: integers are i32,
 *   and an operation whose result may leave i32 is emitted checked, reporting an error
 *   instead of wrapping), how each kernel's items map onto work-groups (MapMode), which
 *   arrays live in scratch, and what each kernel binds.
 * - emit.c writes the WGSL module: one compute entry point per kernel, and after the code a
 *   launch manifest, one line per kernel ("//! kernel k0 groups=N bindings=0,1,3", and for
 *   a kernel with scratch " scratch=BYTES wg=W slots=S"): documentation of the plan, which
 *   run.c launches from (the record, never the text).
 * - helper.c runs the Node helper process (node/helper.mjs, Dawn through the npm package
 *   `webgpu`) and speaks its framed protocol.
 * - run.c is the Backend.
 *
 * Scratch. A local array longer than wgsl_target.private_bytes (1024), or the largest ones
 * while a kernel's private arrays together exceed private_budget (4096) bytes, lives in the scratch
 * buffer `scr` (array<u32>, binding nbufs + 1) instead of private memory: NVIDIA's Vulkan
 * driver refuses a pipeline with a 16 KiB private array (VK_ERROR_UNKNOWN), and a GPU keeps
 * dynamically indexed private arrays in memory anyway. Each invocation owns a column of
 * `scratch` words (manifest: bytes per invocation): element i of a scratch array at word
 * offset o (MapKernel.voff / 4) is scr[(o + i) * stride + slot], slot = the invocation's index
 * in its dispatch (work-group in the dispatch * wg + local index), stride = the slots the
 * buffer holds, so neighbouring invocations touch neighbouring words. f32 and i32 elements
 * are stored as their bits, bool as 0u/1u; a column is never initialised (KS_DECL declares
 * a local uninitialised). Such a kernel runs in one dispatch when all its live invocations
 * fit the scratch budget (run.c: at most WGSL_SCRATCH_MAX bytes and the device's binding
 * size), else in chunks of as many work-groups as fit; the uniform `chunk` (binding
 * nbufs + 2, one entry per dispatch, WGSL_CHUNK_STRIDE bytes apart) holds the dispatch's
 * first work-group, its work-groups and the stride. Kernels without scratch keep their
 * single dispatch and their text.
 */
#ifndef ASSAY_WGSL_WGSL_H
#define ASSAY_WGSL_WGSL_H

#include "../map/map.h"

enum {
	WGSL_GUARD = 256,        /* guard bytes before and after every buffer */
	WGSL_GUARD_BYTE = 0xa5,
	WGSL_MAX_WG = 256,       /* WebGPU's default maxComputeInvocationsPerWorkgroup */
	WGSL_SCRATCH_MAX = 256 << 20,  /* bytes of scratch one dispatch may bind */
	WGSL_CHUNK_STRIDE = 256,     /* bytes between chunk entries (WebGPU's largest offset alignment) */
};

/* How a kernel's items (kir.h) run (the plan, compiler/map/map.h, rules MAP_RULES_OWNER in
 * compiler/map/owner.c, recorded with the program: the emitter spells it, run.c launches
 * from it, and the manifest only documents it):
 * - MAP_ITEM: one invocation per item, wgsl_target.item_wg items per work-group;
 * - MAP_GROUP: one work-group per item; the iterations of its par loop nests (the tile's
 *   points) are dealt to the work-group's invocations (iteration f to invocation f mod wg,
 *   the same in every nest, so a tile accumulator element always has one owner);
 * - MAP_LANES: one work-group per item for a split reduction: invocation l computes the
 *   partial accumulator l; the partials meet in workgroup memory after a barrier and the
 *   combine runs as written (its order unchanged). */
extern const MapTarget wgsl_target;   /* run.c */

char *wgsl_emit(const Kernels *k, Diag *d);
extern const char *const wgsl_lib[];   /* lib.c: the helper functions of every module */
extern const size_t wgsl_nlib;

/* --- the helper process (helper.c) --- */

/* A reply: its header's fields as text (JSON values, strings unescaped), and its payload. */
typedef struct {
	char *head;              /* the JSON header (owned) */
	unsigned char *data;     /* the payload (owned), n bytes */
	size_t n;
} WgslReply;

/* Locates node and helper.mjs; 0 or -1 with why. */
int wgsl_locate(char *node, size_t nn, char *script, size_t ns, char *why, size_t nw);
/* Sends one request (header JSON, optional payload) to this process's helper, starting it
 * when needed, and waits for the reply. -1 with d when the helper is unusable (its
 * stderr's tail in the message); a reply with ok false is returned as 0: the caller
 * reads it. */
int wgsl_call(const char *head, const void *data, size_t n, WgslReply *r, Diag *d);
void wgsl_reply_free(WgslReply *r);
/* Field access on a reply header: a string (malloc'ed, NULL if absent), a number, a bool. */
char *wgsl_json_str(const char *json, const char *key);
bool wgsl_json_num(const char *json, const char *key, double *v);
bool wgsl_json_bool(const char *json, const char *key);
/* Appends s to the growable buffer as a JSON string literal. */
void wgsl_json_quote(char **buf, size_t *len, size_t *cap, const char *s);

extern const Backend wgsl_backend;   /* run.c */

#endif
