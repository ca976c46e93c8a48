/* compiler/map.h (private to compiler/): the GPU mapping stage: how each kernel of the
 * kernel IR (kir.h) is spread over a GPU, decided once per program and target, recorded
 * with the program, and read by the target's emitter (to spell it) and by its runtime (to
 * launch it). No backend plans again or reads its own text back.
 *
 * The stage's input is the kernel IR and a target's limits (MapTarget: data on the
 * target's Backend, compiler.h); its output is one MapKernel per kernel (MapPlan). The
 * plan is kept with the program (Kernels.maps): map_plan computes it on its first call
 * for a target and returns the same record afterwards, so the emitter and the runtime of
 * one program always read one plan.
 *
 * What the four GPU targets decide (their rules: MapRules, in compiler/map/), and how
 * they differ. Every rule keeps the IR's combine order: a split reduction's partial s
 * still accumulates its terms in order, the partials are combined by the IR's own
 * statements, and a pairwise tree (KS_TREE) is spelled as the stated tree.
 *
 * - MAP_RULES_BLOCK (cuda; map/block.c). An item per thread (MAP_ITEM, item_wg threads a
 *   block), or an item per block (MAP_GROUP) when the kernel has a split reduction as
 *   lower.c builds it (chunk loop `for c { for s in [0, S) }` then its tail `for s2 in
 *   [0, r)`: MAP_S_SPLIT and MAP_S_SPLIT_TAIL, partial s on thread s mod W) or a nest of
 *   par loops (MAP_S_NEST, collapsed as deep as the bounds allow) of at least wg_min
 *   iterations. The block is the largest construct's trip count rounded up to a power of
 *   two in [wg_min, wg_max]. Locals written inside a distributed construct and declared
 *   outside it are shared (MAP_V_SHARED): in shared memory up to shared_max bytes, else
 *   in per-group scratch; private arrays over private_bytes go to per-invocation scratch.
 *   The cuda performance (softmax at 1262 GB/s on the H200) rests on recognising the
 *   split's tail loop here.
 * - MAP_RULES_LANES (opencl; map/lanes.c). A work-group per item ("lanes") when some loop
 *   nest can be dealt to the lanes: a perfect par nest (MAP_S_NEST, collapsed), or a
 *   split's chunk loop run inside its partial loop (MAP_S_SWAP around a MAP_S_NEST).
 *   Independence is proved for every outside local from its index expressions (Horner
 *   forms over the nest's variables, bounded by OP_MIN bounds; a pairwise partial's slot
 *   h * cap + count[h]); a nest whose shared locals uniform code also writes in a loop is
 *   vetoed, until nothing more is. Lanes: the largest nest's trips rounded to a power of
 *   two up to wg_max; a kernel with fewer than wg_min is an item per work-item (the
 *   runtime then picks the work-group). Barriers follow each nest that writes shared
 *   locals (MapKernel.sbarrier); shared locals live in __local memory up to shared_max
 *   bytes, else in per-group scratch; private arrays over private_elems elements in
 *   per-invocation scratch.
 * - MAP_RULES_REPLICATE (vulkan; map/replicate.c). An item per invocation (item_wg a
 *   group) or an item per work-group whose invocations run the item's statements
 *   redundantly ("replicated"), except the distributed nests (MAP_S_NEST roots: par nests,
 *   or a loop from 0 without stores: a split's partial loop). Outside locals written in a
 *   nest are kept by parts (MAP_V_PART: each invocation its own iterations' elements),
 *   merged through shared memory after the nest (MAP_V_MERGE, a merge slot each, at most
 *   merge_max, within shared_max bytes; MapKernel.srep and sdist say where merges go), or
 *   merged as a maximum (MAP_V_FLAG, a some-term flag); roots breaking these are
 *   disabled until a fixpoint. The group is the largest nest's trips rounded up to a
 *   power of two in [wg_min, wg_max]. Integers are 32-bit where the intervals prove it
 *   (MapKernel.i32); arrays over private_elems elements live in per-invocation scratch.
 * - MAP_RULES_OWNER (wgsl; map/owner.c). MAP_GROUP when every par nest in uniform
 *   position is owner-consistent (an outside local written in a nest is an array touched
 *   only in nests of one shape at one index), the group sized as above; else MAP_LANES
 *   when a top-level local array of at most wg_max elements is a split's partials set
 *   only by lane loops (MAP_S_LANE: invocation l computes partial l; they meet in
 *   workgroup memory after MapKernel.gather_after); else MAP_ITEM (item_wg a group).
 *   Integers are always i32 (target int32: intervals, and checked ops where they may
 *   leave i32); arrays over private_bytes, and the largest while all exceed
 *   private_budget bytes, live in per-invocation scratch.
 *
 * - Launch fusion (map/fuse.c; targets with MapTarget.fuse_rows: cuda, opencl and vulkan,
 *   which spell it; wgsl runs each kernel in its own launch still). After the rules,
 *   consecutive kernels share a launch, a work-group per row of the first (the lead, a
 *   work-group per item), when every value a later one reads from an earlier one was
 *   stored by the same row: proved by evaluating the index expressions for every row.
 *   Each kernel is a phase of the row with its own code; barriers between phases.
 *   Softmax and layernorm become one launch each (their rows stay in the caches between
 *   the phases).
 *
 * - Row staging (map/stage.c; targets with MapTarget.stage_max: cuda). In a fused launch
 *   whose lead is one row index, the row slice of an input that at least two phases load
 *   is copied into work-group memory once per row (16-byte words), and each load whose
 *   index is proved (kir_int_ranges) to be the row origin times the slice plus a part
 *   inside it reads the copy (MapPlan.xstage). Softmax and layernorm read memory once per
 *   row instead of three times through the caches.
 *
 * So the four agree on the model (an item per invocation, or an item per work-group with
 * some loop nests dealt to its invocations and the rest uniform or replicated; what the
 * invocations share; where a local lives) and differ in which nests they can prove
 * independent and in how a shared local is put back together. The rules are still four
 * (keeping every emitted kernel identical: scripts/emit-golden.sh); one plan type, one
 * entry point and the limits as data are what the backends share now.
 */
#ifndef ASSAY_MAP_H
#define ASSAY_MAP_H

#include "../kir/kir.h"

typedef enum {
	MAP_RULES_BLOCK,       /* cuda */
	MAP_RULES_LANES,       /* opencl */
	MAP_RULES_REPLICATE,   /* vulkan */
	MAP_RULES_OWNER,       /* wgsl */
} MapRules;

/* A target's limits, as its Backend states them (data, not checks of a name). */
struct MapTarget {
	MapRules rules;
	int item_wg;              /* invocations per work-group of a MAP_ITEM kernel (0: the
	                             runtime's choice) */
	int wg_min, wg_max;       /* a group-per-item kernel's work-group: at least, at most */
	int64_t shared_max;       /* bytes of work-group memory a kernel's shared locals use */
	int64_t private_bytes;    /* a private array over this many bytes goes to scratch */
	int64_t private_elems;    /* a private array over this many elements goes to scratch */
	int64_t private_budget;   /* bytes of private arrays per invocation (0: no budget) */
	int merge_max;            /* MAP_RULES_REPLICATE: merge slots per kernel */
	bool int32;               /* integers are i32: every integer op proved or checked */
	bool fuse_rows;           /* row kernels may share a launch (map/fuse.c; the target's
	                             emitter and runtime spell MapKernel.lead and nfused) */
	bool fuse_alike;          /* ... only kernels alike in what the whole program text
	                             states once: work-group size (a group-per-item member),
	                             i32 and f64 (REPLICATE's shaders) */
	int64_t stage_max;        /* bytes of work-group memory a fused launch may fill with
	                             a staged row of an input (map/stage.c; 0: none) beside
	                             its shared locals */
	uint64_t int_checked;     /* the ops (BE_OP bits) spelled checked where they may leave
	                             i32 (they report into the error slot): int32's, and
	                             REPLICATE's kernels held in 32-bit ints (MapKernel.i32) */
};

typedef enum {
	MAP_ITEM,    /* one invocation per item of the grid */
	MAP_GROUP,   /* one work-group per item: nests dealt to its invocations */
	MAP_LANES,   /* one work-group per item: invocation l computes a split's partial l */
} MapMode;

/* Statement roles (MapKernel.srole). */
enum {
	MAP_S_NONE,
	MAP_S_NEST,        /* head of a nest of sdepth loops dealt to the invocations */
	MAP_S_SPLIT,       /* a split's chunk loop `for c { for s in [0, S) }` (BLOCK) */
	MAP_S_SPLIT_TAIL,  /* the tail loop after it (BLOCK) */
	MAP_S_SWAP,        /* a uniform loop run inside the nest it holds (LANES) */
	MAP_S_LANE,        /* a lane loop: iteration l on invocation l (OWNER) */
	MAP_S_HELD_INIT,   /* BLOCK: a held partial's initial set, made by its own thread
	                      in the split (MapKernel.vinit) */
};

/* How the invocations of a work-group share a local (MapKernel.vshare). */
enum {
	MAP_V_OWN,      /* private to each invocation (replicated where the rules replicate) */
	MAP_V_SHARED,   /* one copy per work-group, written by several invocations */
	MAP_V_PART,     /* kept by parts: each invocation its own iterations' elements */
	MAP_V_MERGE,    /* private, merged through work-group memory after a nest */
	MAP_V_FLAG,     /* private 0/1 flag, merged as the maximum */
};

/* Where a local lives (MapKernel.vplace). */
enum {
	MAP_P_PRIVATE,        /* a private variable or array */
	MAP_P_SHARED,         /* work-group memory */
	MAP_P_SCRATCH,        /* global scratch, per invocation, at voff */
	MAP_P_SCRATCH_GROUP,  /* global scratch, per work-group, at voff */
};

enum { MAP_MERGE_SLOTS = 64 };

typedef struct {
	MapMode mode;
	int wg;                   /* invocations per work-group (1 for a MAP_ITEM kernel of a
	                             target whose item_wg is 0: the runtime picks it) */
	int64_t groups;           /* work-groups of the whole grid (0 where the runtime picks
	                             the work-group) */
	int64_t split;            /* BLOCK: partials of the kernel's split (MAP_S_SPLIT) */
	/* per statement (k->ns + 1) */
	uint8_t *srole;           /* MAP_S_* */
	uint8_t *sdepth;          /* MAP_S_NEST: loops of the nest */
	uint8_t *sbarrier;        /* LANES: the nest writes shared locals (a barrier follows) */
	uint64_t *srep;           /* REPLICATE: merge slots its replicated code touches */
	uint64_t *sdist;          /* REPLICATE: merge slots its distributed nests touch */
	/* per variable (k->nvars + 1) */
	uint8_t *vshare;          /* MAP_V_* */
	uint8_t *vplace;          /* MAP_P_* */
	int64_t *voff;            /* MAP_P_SCRATCH*: byte offset in the invocation's (group's) slice */
	int8_t *vslot;            /* MAP_V_MERGE, MAP_V_FLAG: merge slot, else -1 */
	int32_t *vheld;           /* BLOCK: the split statement whose partial holds this shared
	                             array in a register across its chunks (every access of
	                             it there is at [partial]), else 0 */
	int32_t *vinit;           /* BLOCK: a held array's initial value (a constant
	                             expression) when every element's initial set before the
	                             split is one (those sets are MAP_S_HELD_INIT: the
	                             partial's thread starts from it), else 0 */
	int nslots;
	int32_t slotvar[MAP_MERGE_SLOTS];
	int64_t shared_bytes;     /* work-group memory of MAP_P_SHARED locals */
	int64_t scratch;          /* scratch bytes per invocation */
	int64_t scratch_group;    /* scratch bytes per work-group */
	int32_t lane_arr;         /* MAP_LANES: the partials (wg elements), else -1 */
	int32_t gather_after;     /* MAP_LANES: the top-level statement they meet after */
	int tree_depth;           /* OWNER: frames of the kernel's pairwise trees' stacks */
	bool i32;                 /* integers held as 32-bit ints */
	bool f64;                 /* REPLICATE: the kernel computes or stores in f64 */
	/* what the kernel binds (REPLICATE, OWNER) */
	uint8_t *buse;            /* per buffer (k->nbufs + 1): 1 loaded, 2 stored */
	bool err;                 /* OWNER: it may report into the error slot */
	/* launch fusion (map/fuse.c; every kernel its own launch where the target does not
	   fuse): the kernels lead .. lead + nfused - 1 run in one launch, a work-group per
	   item of the lead (a row); this kernel's items per row */
	int lead;                 /* the kernel whose launch runs this one (itself: a launch) */
	int nfused;               /* the lead's: kernels in its launch (1: none fused) */
	int64_t per_row;          /* items of this kernel per item of its lead */
	/* row staging (map/stage.c; a lead of a fused launch): buffer stage_buf's row slice
	   [it * stage_len, it * stage_len + stage_len) copied into work-group memory at the
	   start of each row; the loads MapPlan.xstage marks read it there */
	int32_t stage_buf;        /* -1: nothing staged */
	int64_t stage_len;
	int stage_loads;          /* loads reading the copy */
} MapKernel;

typedef struct MapPlan {
	const MapTarget *t;
	int nk;
	MapKernel *k;             /* per kernel */
	KIvl *xiv;                /* per expression: integer intervals (kir_int_ranges) */
	bool *xwide;              /* per expression: an integer op that may leave i32 */
	int32_t *xstage;          /* per expression (stage_max targets): of a load that reads
	                             its launch's staged row, the index's part within the row
	                             (the copy's index), else 0 */
} MapPlan;

/* The plan of program k for target t: computed at the first call for t, recorded with
 * the program (freed by kir_free) and returned as is afterwards (t is the record's key: it
 * must not change while k lives; the backends' targets are constants). Never fails: a
 * plan always exists (at worst every kernel MAP_ITEM). Not thread-safe per program. */
const MapPlan *map_plan(const Kernels *k, const MapTarget *t);
/* The record of every target planned for k (kir_free calls it). */
void map_free_all(MapCache *c);
/* A new, empty record (lower.c makes one per program). */
MapCache *map_cache_new(void);

/* The rules (compiler/map/): each fills kernel ki's plan p, allocated and zeroed by map.c
 * (arrays sized as above, vslot -1, lane_arr and gather_after -1), under target t. */
void map_block(const Kernels *k, const MapTarget *t, int ki, MapKernel *p);
void map_lanes(const Kernels *k, const MapTarget *t, int ki, MapKernel *p);
void map_replicate(const Kernels *k, const MapTarget *t, const MapPlan *pl, int ki, MapKernel *p);
void map_owner(const Kernels *k, const MapTarget *t, const MapPlan *pl, int ki, MapKernel *p);
/* Launch fusion of row kernels over the finished per-kernel plans (t->fuse_rows). */
void map_fuse(const Kernels *k, const MapTarget *t, MapPlan *p);
/* Row staging in the fused launches (t->stage_max; after map_fuse). */
void map_stage(const Kernels *k, const MapTarget *t, MapPlan *p);

/* Does expression x read local v (as a scalar or an element)? seen: a stamp per
 * expression (k->nx + 1 entries), *stamp the caller's counter (bumped: a DAG is walked
 * once). */
bool map_reads(const Kernels *k, int32_t x, int32_t v, uint32_t *seen, uint32_t *stamp);

/* Bytes of one element of a local of type t where integers are 64-bit and bool a word
 * (cuda, opencl). */
int map_type_bytes(KType t);
/* The private elements a MAP_V_PART array keeps per invocation. */
int64_t map_part_len(const Kernels *k, const MapKernel *p, int32_t var);
/* A constant upper bound of integer expression e (a constant, or OP_MIN of one), or -1. */
int64_t map_upper(const Kernels *k, int32_t e);
/* Whether expression id checks that an integer fits in i32 (KE_INT32): in a kernel whose
 * integers are ints (MapKernel.i32) it cannot fail, and is spelled as its operand. */
bool map_i32_check(const Kernels *k, int32_t id);

#endif
