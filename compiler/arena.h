/* compiler/arena.h (private to compiler/): a bump allocator. Everything allocated from an
 * arena is freed in one call (arena_free). Allocations are zeroed and 16-byte aligned. */
#ifndef ASSAY_ARENA_H
#define ASSAY_ARENA_H

#include <stddef.h>

typedef struct Arena Arena;

Arena *arena_new(void);
void *arena_alloc(Arena *a, size_t n);
void arena_free(Arena *a);

#endif
