/* compiler/arena.c: a bump allocator over a list of blocks (QBE's pool, Lua's buffers).
 * Blocks grow geometrically; a request larger than a block gets a block of its own. Out of
 * memory is an internal failure: it aborts with file and line. */
#include <stdlib.h>
#include <string.h>
#include "compiler.h"
#include "arena.h"

typedef struct Block Block;
struct Block {
	Block *next;
	size_t used, cap;
	_Alignas(16) unsigned char data[];
};

struct Arena {
	Block *head;
	size_t next_cap;
};

Arena *arena_new(void)
{
	Arena *a = calloc(1, sizeof *a);
	IR_ASSERT(a);
	a->next_cap = 4096;
	return a;
}

void *arena_alloc(Arena *a, size_t n)
{
	n = (n + 15) & ~(size_t)15;
	if (!a->head || a->head->used + n > a->head->cap) {
		size_t cap = a->next_cap;
		if (cap < n)
			cap = n;
		Block *b = malloc(sizeof *b + cap);
		IR_ASSERT(b);
		b->used = 0;
		b->cap = cap;
		b->next = a->head;
		a->head = b;
		if (a->next_cap < (1u << 20))
			a->next_cap *= 2;
	}
	void *p = a->head->data + a->head->used;
	a->head->used += n;
	memset(p, 0, n);
	return p;
}

void arena_free(Arena *a)
{
	if (!a)
		return;
	for (Block *b = a->head, *nx; b; b = nx) {
		nx = b->next;
		free(b);
	}
	free(a);
}
