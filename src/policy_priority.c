/* SPDX-License-Identifier: MIT */
/*
 * policy_priority.c - umcg_policy_priority: strict priority per server,
 * 0 (lowest) to UMCG_PRIORITY_MAX (31), FIFO within a priority; a server with nothing to run
 * steals the highest-priority queued worker of the server whose best
 * queued worker is the best of all.
 *
 * Queues. Server i owns one FIFO list per priority, threaded through the
 * workers' struct umcg_policy_link (->next) with head and tail pointers,
 * and a bitmap `levels` whose bit p is set iff list p is not empty. The
 * next worker is the head of list 31 - clz(levels): enqueue and pick are
 * O(1) and allocate nothing. UMCG_ENQ_RETURN (picked but did not get the
 * CPU) puts the worker back at the head of its list. A worker's priority
 * is fixed at spawn (umcg_worker_priority()); enqueue() stores it in the
 * link's key, which is the list the worker sits on.
 *
 * Strictness. A server never picks a worker while a worker of higher
 * priority waits in its own queue. Across servers it is best effort: a
 * server that runs a low-priority worker does not look at the other
 * queues, but an idle server steals the best worker there is.
 *
 * Locking. Queue i is changed by server i (enqueue, pick_next) and by any
 * thief (steal), so each queue has a lock, held for every change of a
 * list, a link, the bitmap or the count; the lock also publishes the links
 * to a thief. A thread holds at most one queue lock at a time, so there is
 * no lock order. The lock is umcg__lock (lock.h), not a pthread mutex, for
 * the reasons given in policy_fifo.c: the server path takes no libc lock,
 * and a server can lose its CPU to its own worker while it holds the lock,
 * so a sleeping lock rather than a spinlock. Only servers hold it (no
 * select_server here, and the runtime calls the other callbacks from
 * servers), so no worker parked by a preemption ever holds it and a server
 * waiting for it waits only for a runnable server: see policy_fifo.c.
 *
 * Barriers: none but the lock's. Its unlock (release) pairs with the next
 * lock (acquire), which carries the link stores of the server that queued
 * a worker to the thief that takes it. The lock-free reads below are
 * relaxed and order nothing.
 *
 * Lock-free reads. `levels` and `nr` are written only with the lock held
 * (relaxed: the lock orders the writers) and read without it, relaxed, by
 * nr_queued() and by thieves choosing a victim: hints that may be stale;
 * the thief looks again under the victim's lock. Only server i adds to
 * queue i (the runtime calls enqueue() on the server it names), so server
 * i reading 0 in its own `levels` knows its queue is empty (after its own
 * last store only thieves' removals follow) and pick_next() skips the lock
 * then.
 *
 * Invariant, with the lock of queue i held: for every p, bit p of levels is
 * set iff head[p] != NULL iff tail[p] != NULL; tail[p]->next == NULL; every
 * link on list p has key p; nr is the total length of the lists.
 *
 * Per-server state is aligned, and so padded, to a cache line.
 *
 * select_server() is left to the runtime's default (the round-robin hint);
 * see policy_fifo.c.
 */
#include <stdalign.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include <umcg/runtime.h>

#include "atomics.h"
#include "lock.h"
#include "policy_common.h"

#define CACHE_LINE 64
#define NR_LEVELS (UMCG_PRIORITY_MAX + 1)

/* One bit of a 32-bit bitmap per level. */
_Static_assert(NR_LEVELS <= 32, "priority levels must fit the bitmap");

struct level {
	struct umcg_policy_link *head;
	struct umcg_policy_link *tail;
};

struct prio_queue {
	alignas(CACHE_LINE) struct umcg__lock lock;
	uint_least32_t levels; /* umcg__load/umcg__store only */
	size_t nr; /* umcg__load/umcg__store only */
	struct level lv[NR_LEVELS];
};

struct prio {
	unsigned int nr_servers;
	struct prio_queue q[];
};

/* The highest set bit of a non-zero level bitmap. */
static unsigned int top_level(uint_least32_t levels)
{
	return 31 - (unsigned int)__builtin_clz((unsigned int)levels);
}

/* ---- the queue (lock held) ---------------------------------------------- */

static void account(struct prio_queue *q, uint_least32_t levels, size_t delta)
{
	/* Relaxed: writers hold the lock; lock-free readers take a hint. */
	umcg__store(&q->levels, levels, umcg__relaxed);
	umcg__store(&q->nr, umcg__load(&q->nr, umcg__relaxed) + delta, umcg__relaxed);
}

static void push(struct prio_queue *q, struct umcg_policy_link *l, unsigned int p, bool at_head)
{
	struct level *lv = &q->lv[p];

	l->key = p;
	if (at_head) {
		l->next = lv->head;
		lv->head = l;
		if (!lv->tail)
			lv->tail = l;
	} else {
		l->next = NULL;
		if (lv->tail)
			lv->tail->next = l;
		else
			lv->head = l;
		lv->tail = l;
	}
	account(q, umcg__load(&q->levels, umcg__relaxed) | UINT32_C(1) << p, 1);
}

/* Unlink the head of the highest non-empty list, or return NULL. */
static struct umcg_policy_link *pop_best(struct prio_queue *q)
{
	uint_least32_t levels = umcg__load(&q->levels, umcg__relaxed);
	struct umcg_policy_link *l;
	struct level *lv;
	unsigned int p;

	if (!levels)
		return NULL;
	p = top_level(levels);
	lv = &q->lv[p];
	l = lv->head;
	lv->head = l->next;
	if (!lv->head) {
		lv->tail = NULL;
		levels &= ~(UINT32_C(1) << p);
	}
	l->next = NULL;
	account(q, levels, (size_t)-1);
	return l;
}

static struct umcg_worker *take_best(struct prio_queue *q)
{
	struct umcg_policy_link *l;

	umcg__lock(&q->lock);
	l = pop_best(q);
	umcg__unlock(&q->lock);
	return l ? umcg_worker_from_link(l) : NULL;
}

/* ---- the ops ------------------------------------------------------------ */

static void prio_destroy(void *policy)
{
	free(policy);
}

static void *prio_create(unsigned int nr_servers, void *arg)
{
	struct prio *pr;
	size_t size;
	unsigned int i, p;

	(void)arg;
	if (!nr_servers || __builtin_mul_overflow(nr_servers, sizeof(pr->q[0]), &size) ||
	    __builtin_add_overflow(size, sizeof(*pr), &size))
		return NULL;
	/* A multiple of CACHE_LINE (both terms are), as aligned_alloc() wants. */
	pr = aligned_alloc(CACHE_LINE, size);
	if (!pr)
		return NULL;
	for (i = 0; i < nr_servers; i++) {
		struct prio_queue *q = &pr->q[i];

		umcg__lock_init(&q->lock);
		umcg__store(&q->levels, 0, umcg__relaxed);
		umcg__store(&q->nr, 0, umcg__relaxed);
		for (p = 0; p < NR_LEVELS; p++) {
			q->lv[p].head = NULL;
			q->lv[p].tail = NULL;
		}
	}
	pr->nr_servers = nr_servers;
	return pr;
}

static void prio_enqueue(void *policy, unsigned int server, struct umcg_worker *w,
			 enum umcg_enqueue_reason why)
{
	struct prio_queue *q = &((struct prio *)policy)->q[server];
	int p = umcg_worker_priority(w);

	/* umcg_spawn() only accepts 0..UMCG_PRIORITY_MAX; clamp rather than index out. */
	if (p < 0)
		p = 0;
	else if (p >= NR_LEVELS)
		p = NR_LEVELS - 1;
	umcg__lock(&q->lock);
	push(q, umcg_worker_link(w), (unsigned int)p, why == UMCG_ENQ_RETURN);
	umcg__unlock(&q->lock);
}

static struct umcg_worker *prio_pick_next(void *policy, unsigned int server)
{
	struct prio_queue *q = &((struct prio *)policy)->q[server];

	/* Exact for the owner: only it adds to its queue (header comment). */
	if (!umcg__load(&q->levels, umcg__relaxed))
		return NULL;
	return take_best(q);
}

/*
 * The victim is the server whose best queued worker has the highest
 * priority; among equals the one with the most queued, then the first
 * scanned from a random start. Its best worker is taken under its lock. If
 * the victim emptied between the scan and the lock, the scan is redone, at
 * most nr_servers times: each retry means other servers took work, and
 * returning NULL is always allowed (the runtime then idles and is woken
 * when some server has surplus).
 */
static struct umcg_worker *prio_steal(void *policy, unsigned int thief)
{
	struct prio *pr = policy;
	unsigned int n = pr->nr_servers, tries, start, i;

	if (n < 2)
		return NULL;
	for (tries = 0; tries < n; tries++) {
		unsigned int best = n, best_top = 0;
		size_t best_nr = 0;
		struct umcg_worker *w;

		start = umcg__first_victim(thief, n);
		for (i = 0; i < n; i++) {
			unsigned int v = (start + i) % n, top;
			uint_least32_t levels;
			size_t nr;

			if (v == thief)
				continue;
			levels = umcg__load(&pr->q[v].levels, umcg__relaxed);
			if (!levels)
				continue;
			top = top_level(levels);
			nr = umcg__load(&pr->q[v].nr, umcg__relaxed);
			if (best == n || top > best_top || (top == best_top && nr > best_nr)) {
				best = v;
				best_top = top;
				best_nr = nr;
			}
		}
		if (best == n)
			return NULL;
		w = take_best(&pr->q[best]);
		if (w)
			return w;
	}
	return NULL;
}

/* Wake-up preemption: an arrival of a higher priority runs first. */
static bool prio_preempts(void *policy, unsigned int server, struct umcg_worker *w,
			  struct umcg_worker *running)
{
	(void)policy;
	(void)server;
	return umcg_worker_priority(w) > umcg_worker_priority(running);
}

static size_t prio_nr_queued(void *policy, unsigned int server)
{
	return umcg__load(&((struct prio *)policy)->q[server].nr, umcg__relaxed);
}

UMCG_API const struct umcg_policy_ops umcg_policy_priority = {
	.name = "priority",
	.create = prio_create,
	.destroy = prio_destroy,
	.enqueue = prio_enqueue,
	.pick_next = prio_pick_next,
	.steal = prio_steal,
	.nr_queued = prio_nr_queued,
	.flags = UMCG_POLICY_F_WAKE_PREEMPT,
	.preempts = prio_preempts,
};
