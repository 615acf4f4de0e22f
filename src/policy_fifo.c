/* SPDX-License-Identifier: MIT */
/*
 * policy_fifo.c - umcg_policy_fifo: one FIFO run queue per server; a server
 * with nothing to run steals the oldest queued worker of another server.
 *
 * Queues. Server i owns queue i, a singly linked list threaded through the
 * workers' struct umcg_policy_link (->next), with head and tail pointers:
 * enqueue at the tail, enqueue at the head (UMCG_ENQ_RETURN: the worker was
 * picked but did not get the CPU, so it goes back where it was) and removal
 * at the head are O(1) and allocate nothing. A worker is on at most one
 * queue: the runtime hands a worker to enqueue() only when it is on none,
 * and pick_next() and steal() unlink it before they return it.
 *
 * Locking. Queue i is changed by server i (enqueue, pick_next) and by any
 * thief (steal), so each queue has a lock, held for every change of head,
 * tail, a link or the count. A thread holds at most one queue lock at a
 * time (a thief does not hold its own while it looks at a victim), so there
 * is no lock order. The lock is umcg__lock (lock.h), a futex word, not a
 * pthread mutex: these callbacks run on the server path, which takes no
 * libc lock (no malloc, no stdio, no pthread_mutex_lock(), which
 * libumcg-preload.so interposes for workers). A sleeping lock rather than a
 * pure spinlock: on the emulation a server shares its CPU with the worker
 * it runs and can lose the CPU while holding its lock; a spinning thief
 * would then burn its own slice. The critical sections are a few stores, so
 * the lock is almost always taken uncontended (one CAS).
 *
 * Who holds a queue lock: server threads only. The runtime calls enqueue,
 * pick_next, steal and nr_queued from servers (runtime.h, "Scheduling
 * policies"), and this policy has no select_server, the one callback that
 * runs on the spawning thread, which may be a worker. So no worker ever
 * holds one, and the kick signal that preempts a worker (parking it in its
 * handler until its server runs it again) never parks a lock holder. A
 * server is never parked: it blocks every signal and sleeps only in its own
 * umcg_wait(), never inside a critical section, which makes no call. So a
 * server that waits for a queue lock waits for another server that is
 * runnable and a few stores from unlocking; it cannot wait for ever.
 *
 * Barriers: none but the lock's. Its unlock (release) pairs with the next
 * lock (acquire), which carries the link stores of the server that queued
 * a worker to the thief that takes it. The lock-free reads below are
 * relaxed and order nothing.
 *
 * Count. nr is the length of the queue. It is written only with the lock
 * held (so a relaxed load and store cannot lose an update) and read without
 * the lock, relaxed, by nr_queued() and by thieves choosing a victim. Such
 * a read may be stale; it is only a hint: steal() and pick_next() look at
 * the queue itself under the lock. One exception is exact: only server i
 * adds to queue i (the runtime calls enqueue() on the server it names), so
 * after its own last store only thieves' decrements follow, and server i
 * never reads a count below the true length. Reading 0 in its own count,
 * it knows its queue is empty, and pick_next() skips the lock then.
 *
 * Invariant, with the lock of queue i held: head == NULL iff tail == NULL
 * iff nr == 0; following ->next from head reaches tail in nr - 1 steps; and
 * tail->next == NULL.
 *
 * Per-server state is aligned, and so padded, to a cache line, so that the
 * enqueues of one server do not invalidate the line of its neighbour.
 *
 * select_server() is left to the runtime's default, the round-robin hint:
 * choosing by queue length would read counters that are stale by the time
 * the new worker first runs, and stealing evens out the load anyway.
 */
#include <stdalign.h>
#include <stdint.h>
#include <stdlib.h>

#include <umcg/runtime.h>

#include "atomics.h"
#include "lock.h"
#include "policy_common.h"

#define CACHE_LINE 64

struct fifo_queue {
	alignas(CACHE_LINE) struct umcg__lock lock;
	struct umcg_policy_link *head;
	struct umcg_policy_link *tail;
	size_t nr; /* umcg__load/umcg__store only */
};

struct fifo {
	unsigned int nr_servers;
	struct fifo_queue q[];
};

/* ---- the queue (lock held) ---------------------------------------------- */

static void count_add(struct fifo_queue *q, size_t delta)
{
	/* Relaxed: writers hold the lock; lock-free readers take a hint. */
	umcg__store(&q->nr, umcg__load(&q->nr, umcg__relaxed) + delta, umcg__relaxed);
}

static void push_tail(struct fifo_queue *q, struct umcg_policy_link *l)
{
	l->next = NULL;
	if (q->tail)
		q->tail->next = l;
	else
		q->head = l;
	q->tail = l;
	count_add(q, 1);
}

static void push_head(struct fifo_queue *q, struct umcg_policy_link *l)
{
	l->next = q->head;
	q->head = l;
	if (!q->tail)
		q->tail = l;
	count_add(q, 1);
}

static struct umcg_policy_link *pop_head(struct fifo_queue *q)
{
	struct umcg_policy_link *l = q->head;

	if (!l)
		return NULL;
	q->head = l->next;
	if (!q->head)
		q->tail = NULL;
	l->next = NULL;
	count_add(q, (size_t)-1);
	return l;
}

static struct umcg_worker *take_oldest(struct fifo_queue *q)
{
	struct umcg_policy_link *l;

	umcg__lock(&q->lock);
	l = pop_head(q);
	umcg__unlock(&q->lock);
	return l ? umcg_worker_from_link(l) : NULL;
}

/* ---- the ops ------------------------------------------------------------ */

static void fifo_destroy(void *policy)
{
	free(policy);
}

static void *fifo_create(unsigned int nr_servers, void *arg)
{
	struct fifo *f;
	size_t size;
	unsigned int i;

	(void)arg;
	if (!nr_servers || __builtin_mul_overflow(nr_servers, sizeof(f->q[0]), &size) ||
	    __builtin_add_overflow(size, sizeof(*f), &size))
		return NULL;
	/* A multiple of CACHE_LINE (both terms are), as aligned_alloc() wants. */
	f = aligned_alloc(CACHE_LINE, size);
	if (!f)
		return NULL;
	for (i = 0; i < nr_servers; i++) {
		umcg__lock_init(&f->q[i].lock);
		f->q[i].head = NULL;
		f->q[i].tail = NULL;
		umcg__store(&f->q[i].nr, 0, umcg__relaxed);
	}
	f->nr_servers = nr_servers;
	return f;
}

static void fifo_enqueue(void *policy, unsigned int server, struct umcg_worker *w,
			 enum umcg_enqueue_reason why)
{
	struct fifo_queue *q = &((struct fifo *)policy)->q[server];
	struct umcg_policy_link *l = umcg_worker_link(w);

	umcg__lock(&q->lock);
	if (why == UMCG_ENQ_RETURN)
		push_head(q, l);
	else
		push_tail(q, l);
	umcg__unlock(&q->lock);
}

static struct umcg_worker *fifo_pick_next(void *policy, unsigned int server)
{
	struct fifo_queue *q = &((struct fifo *)policy)->q[server];

	/* Exact for the owner: only it adds to its queue (header comment). */
	if (!umcg__load(&q->nr, umcg__relaxed))
		return NULL;
	return take_oldest(q);
}

/*
 * Victims are visited from a random one on. A first round only considers
 * servers with at least two queued workers: such a server still has work
 * of its own after the theft. A server with a single queued worker may be
 * about to pick it (between two runs); taking it would leave that server
 * idle, to steal in turn, and one worker would bounce between CPUs, each
 * move a cross-CPU wake-up. If no server has two, a second round takes any
 * queued worker: a single worker queued behind a running one may wait a
 * whole run of it (unbounded when cooperative) while the thief sits idle,
 * which costs more than one migration. A victim found empty under its lock
 * (it changed since the count was read) is skipped; the scan goes on.
 */
static struct umcg_worker *fifo_steal(void *policy, unsigned int thief)
{
	struct fifo *f = policy;
	unsigned int n = f->nr_servers, start, i;
	size_t want;

	if (n < 2)
		return NULL;
	start = umcg__first_victim(thief, n);
	for (want = 2; want > 0; want--) {
		for (i = 0; i < n; i++) {
			unsigned int v = (start + i) % n;
			struct umcg_worker *w;

			if (v == thief || umcg__load(&f->q[v].nr, umcg__relaxed) < want)
				continue;
			w = take_oldest(&f->q[v]);
			if (w)
				return w;
		}
	}
	return NULL;
}

static size_t fifo_nr_queued(void *policy, unsigned int server)
{
	return umcg__load(&((struct fifo *)policy)->q[server].nr, umcg__relaxed);
}

UMCG_API const struct umcg_policy_ops umcg_policy_fifo = {
	.name = "fifo",
	.create = fifo_create,
	.destroy = fifo_destroy,
	.enqueue = fifo_enqueue,
	.pick_next = fifo_pick_next,
	.steal = fifo_steal,
	.nr_queued = fifo_nr_queued,
	/* Bounded handoffs keep FIFO fair enough: see runtime.h. */
	.flags = UMCG_POLICY_F_HANDOFF,
};
