/* SPDX-License-Identifier: MIT */
/*
 * registry.c - the emulation's process-wide tid -> task map.
 *
 * Layout: a two-level table indexed by tid. Linux tids are below
 * PID_MAX_LIMIT (2^22 on 64-bit), so 1024 chunks of 4096 slots cover every
 * tid; a chunk is allocated the first time a tid in its range registers,
 * installed with a CAS, and never freed. A lookup is two loads.
 *
 * Invariants and barriers:
 *  - A slot holds NULL or a record whose fields were all written before the
 *    slot was set: the insert is a release store, pairing with the acquire
 *    load in umcg__registry_lookup().
 *  - Records are type-stable (see registry.h), so a lookup racing with an
 *    unregistration reads a valid record; it re-reads `tid` (acquire) and
 *    rejects the record if it has been freed or reused. umcg__etask_free()
 *    clears `tid` with a release store after the slot was emptied.
 *  - Only the thread itself inserts or removes its own tid's slot (and a
 *    fork child wipes the table while it is single-threaded), so slot
 *    writers never race each other.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "atomics.h"
#include "registry.h"

#define CHUNK_SHIFT 12
#define CHUNK_SLOTS (1u << CHUNK_SHIFT)
#define NR_CHUNKS 1024u /* CHUNK_SLOTS * NR_CHUNKS == 2^22 */

static struct umcg__etask **chunks[NR_CHUNKS];
static pthread_mutex_t free_lock = PTHREAD_MUTEX_INITIALIZER;
static struct umcg__etask *free_list;
/* Push-only list of every record, for the watcher's scan: a record is
 * linked (release CAS) after its fields are set, and never freed. */
static struct umcg__etask *all_list;

struct umcg__etask *umcg__etask_all(void)
{
	/* Pairs with the release CAS in umcg__etask_alloc(). */
	return umcg__load(&all_list, umcg__acquire);
}

struct umcg__etask *umcg__etask_alloc(void)
{
	struct umcg__etask *e;

	pthread_mutex_lock(&free_lock);
	e = free_list;
	if (e)
		free_list = e->free_next;
	pthread_mutex_unlock(&free_lock);
	if (!e) {
		int saved = errno; /* calloc() sets it when it fails */
		struct umcg__etask *head;

		e = calloc(1, sizeof(*e));
		errno = saved;
		if (!e)
			return NULL;
		head = umcg__load(&all_list, umcg__relaxed);
		do {
			e->all_next = head;
		} while (!umcg__cas(&all_list, &head, e, umcg__release));
	}
	/* A stale reader only trusts the record after it has seen its own
	 * tid in it (before and after its reads); `ut` is left as it was, so
	 * such a reader never finds NULL there. */
	umcg__store(&e->worker, false, umcg__relaxed);
	e->clock = CLOCK_MONOTONIC;
	umcg__store(&e->in_lib, 0, umcg__relaxed);
	umcg__store(&e->in_block, 0, umcg__relaxed);
	umcg__store(&e->kick_pending, 0, umcg__relaxed);
	umcg__store(&e->detected, 0, umcg__relaxed);
	/* `pins` is left alone: it is 0 here but for a stale reader's
	 * increment, which that reader takes back itself once it sees a tid
	 * that is not its own (emulated.c, pin()). A store of 0 under it
	 * would leave -1 behind, and the record's next owner would wait for
	 * ever in its unregistration. (A fork child, where the reader is
	 * gone, clears it: emulated.c, fork_child().) */
	umcg__store(&e->reclaim, 0, umcg__relaxed);
	umcg__store(&e->reclaim_req, 0, umcg__relaxed);
	umcg__store(&e->kick_cpu, 0, umcg__relaxed);
	umcg__store(&e->unannounced, 0, umcg__relaxed);
	/* UINT64_MAX: no request (emulated.c, SLICE_NONE). */
	umcg__store(&e->slice_req, UINT64_MAX, umcg__relaxed);
	umcg__store(&e->slice_live, 0, umcg__relaxed);
	e->slice_armed = 0;
	umcg__store(&e->slice_fired, NULL, umcg__relaxed);
	umcg__store(&e->slice_tstate, 0, umcg__relaxed);
	e->have_affinity = false;
	e->synced_server = NULL;
	e->free_next = NULL;
	return e;
}

void umcg__etask_free(struct umcg__etask *e)
{
	/* Pairs with the acquire re-read of `tid` in lookup. */
	umcg__store(&e->tid, 0, umcg__release);
	pthread_mutex_lock(&free_lock);
	e->free_next = free_list;
	free_list = e;
	pthread_mutex_unlock(&free_lock);
}

static struct umcg__etask **slot_of(pid_t tid, bool create)
{
	unsigned int c, i;
	struct umcg__etask **chunk, **fresh, **expected;
	int saved;

	if (tid <= 0 || (unsigned int)tid >= CHUNK_SLOTS * NR_CHUNKS)
		return NULL;
	c = (unsigned int)tid >> CHUNK_SHIFT;
	i = (unsigned int)tid & (CHUNK_SLOTS - 1);
	/* Pairs with the release CAS that installed the chunk. */
	chunk = umcg__load(&chunks[c], umcg__acquire);
	if (!chunk) {
		if (!create)
			return NULL;
		saved = errno; /* calloc() sets it when it fails */
		fresh = calloc(CHUNK_SLOTS, sizeof(*fresh));
		errno = saved;
		if (!fresh)
			return NULL;
		expected = NULL;
		if (umcg__cas(&chunks[c], &expected, fresh, umcg__acq_rel)) {
			chunk = fresh;
		} else {
			free(fresh);
			chunk = expected;
		}
	}
	return &chunk[i];
}

int umcg__registry_insert(struct umcg__etask *e)
{
	struct umcg__etask **slot;

	if (e->tid <= 0 || (unsigned int)e->tid >= CHUNK_SLOTS * NR_CHUNKS)
		return -EINVAL;
	slot = slot_of(e->tid, true);
	if (!slot)
		return -ENOMEM;
	/* Publishes every field of @e; pairs with the acquire in lookup. */
	umcg__store(slot, e, umcg__release);
	return 0;
}

void umcg__registry_remove(struct umcg__etask *e)
{
	struct umcg__etask **slot = slot_of(e->tid, false);
	struct umcg__etask *expected = e;

	if (slot)
		umcg__cas(slot, &expected, NULL, umcg__release);
}

struct umcg__etask *umcg__registry_lookup(pid_t tid)
{
	struct umcg__etask **slot = slot_of(tid, false);
	struct umcg__etask *e;

	if (!slot)
		return NULL;
	e = umcg__load(slot, umcg__acquire);
	/* A freed or recycled record no longer carries @tid. */
	if (!e || umcg__load(&e->tid, umcg__acquire) != tid)
		return NULL;
	return e;
}

void umcg__registry_forget_all(void)
{
	unsigned int c;

	for (c = 0; c < NR_CHUNKS; c++) {
		if (chunks[c])
			memset(chunks[c], 0, CHUNK_SLOTS * sizeof(*chunks[c]));
	}
}

void umcg__registry_lock(void)
{
	pthread_mutex_lock(&free_lock);
}

void umcg__registry_unlock(void)
{
	pthread_mutex_unlock(&free_lock);
}
