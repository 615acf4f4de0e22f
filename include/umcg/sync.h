/* SPDX-License-Identifier: MIT */
/*
 * umcg/sync.h - mutexes, condition variables, semaphores and channels that
 * park the waiting worker, not its thread.
 *
 * The objects follow pthread's (pthread_mutex_t, pthread_cond_t, sem_t);
 * channels and select follow Go's. The differences:
 *
 *  - A runtime worker (umcg_spawn()) that has to wait parks: it leaves its
 *    server, which runs others, and the worker that wakes it makes it
 *    runnable again without any kernel sleep. With the FIFO policy, a
 *    wake-up of a worker of the waker's own server hands the CPU straight
 *    to it at the waker's next switch (UMCG_POLICY_F_HANDOFF in
 *    <umcg/runtime.h>), with no trip through the server.
 *  - Any other thread (a plain thread, a raw-ABI worker, a server) waits on
 *    a futex, so workers of any runtime and plain threads can share one
 *    object. A raw-ABI worker of the emulation announces that sleep
 *    (umcg_block_begin()), so its server runs others meanwhile.
 *  - A timed wait (umcg_mutex_timedlock(), umcg_cond_timedwait(),
 *    umcg_sem_timedwait(), the timed channel calls, a select with a
 *    deadline) sleeps on the futex in every thread, a runtime
 *    worker included, inside umcg_block_begin()/umcg_block_end(): its
 *    server runs others meanwhile, but the wake-up is a kernel one, and the
 *    worker then queues on its server like any worker back from blocking.
 *    Deadlines are absolute CLOCK_MONOTONIC times in ns, as for
 *    umcg_sleep_until() on a runtime with the default clock; a deadline
 *    already past still tries once (a timed lock of a free mutex takes
 *    it).
 *  - Waiters are served first come, first served: an unlock hands the mutex
 *    to the longest waiter (ownership passes with the wake-up, so a
 *    newcomer cannot overtake it), a post hands its unit to the longest
 *    waiter of the semaphore, a signal wakes the longest waiter of the
 *    condition variable. No waiter starves.
 *  - Mutexes are error-checking and never recursive; they record their
 *    owner's thread ID. There are no attributes, no process-shared objects
 *    and no priority inheritance (see "Priority" below).
 *
 * Error convention: every call returns 0 or a negative errno and never
 * touches errno. Misuse is answered and changes nothing:
 *  -EINVAL     NULL, an object never initialised (or destroyed), a bad
 *              argument;
 *  -EPERM      unlock of a mutex, or a wait on a condition variable with a
 *              mutex, that the caller does not hold;
 *  -EDEADLK    a lock (also a trylock) by the mutex's owner;
 *  -EBUSY      trylock of a mutex another thread holds; destroy of a mutex
 *              that is held or has waiters, of a condition variable, a
 *              semaphore or a channel with waiters;
 *  -ETIMEDOUT  a timed wait past its deadline;
 *  -EAGAIN     a semaphore's trywait with the value 0, a channel's try
 *              call or a polling select that would wait;
 *  -EPIPE      a send on a closed channel, a receive on a closed, empty
 *              one;
 *  -EOVERFLOW  a post past UMCG_SEM_VALUE_MAX.
 * An object must be initialised (UMCG_*_INIT or umcg_*_init()) before any
 * other use; a program that uses memory that never held one as such is
 * outside the contract (the check for "never initialised" looks at a
 * magic word, which random memory can hold).
 *
 * Waking: each call wakes only waiters whose wait it completes (no
 * thundering herd, except umcg_cond_broadcast(), which wakes every waiter
 * and lets them retake the mutex one by one). A waiter woken by a call
 * always returns 0: if its deadline passes while the wake-up is under way,
 * the wake-up wins.
 *
 * Lifetime: an object may be destroyed (and its memory reused) once no
 * thread uses it any more, which umcg_*_destroy() checks for waiters; a
 * thread that wakes another does not touch the object after its call
 * returns.
 *
 * Preemption: a worker preempted while it holds a mutex keeps it; its
 * waiters park (workers) or sleep (threads), never spin, until it runs
 * again and unlocks. Each object also has an internal lock, held for a few
 * loads and stores; a thread that finds it held spins briefly and then
 * sleeps on a futex (announced, if it is a worker of the emulation).
 *
 * Priority: waiters are served in arrival order, not by priority. Under
 * umcg_policy_priority a low-priority holder is not boosted: a
 * high-priority waiter waits while workers of middle priority run and the
 * holder stays queued (priority inversion). Inheritance would need a way
 * to requeue a worker at a new priority while it is queued on its server,
 * which the policy interface does not have; keep critical sections short,
 * or give the holders the waiters' priority.
 *
 * Not async-signal-safe: none of these may be called from a signal
 * handler.
 *
 * fork(): a child gets the objects as they were; only the forking thread
 * runs there, so objects that other threads held or waited on stay so.
 */
#ifndef UMCG_SYNC_H
#define UMCG_SYNC_H

#include <stddef.h>
#include <stdint.h>

#include <umcg/umcg.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The magic words of initialised objects (private to the implementation). */
#define UMCG_MUTEX_MAGIC_ 0x6d757478u
#define UMCG_COND_MAGIC_ 0x636f6e64u
#define UMCG_SEM_MAGIC_ 0x73656d61u

/** UMCG_SEM_VALUE_MAX - the largest value a semaphore can hold. */
#define UMCG_SEM_VALUE_MAX 0x7fffffffu

/*
 * The objects. Their members are private: use only the calls below, and
 * UMCG_*_INIT or umcg_*_init() to set one up. Copying an object that is in
 * use copies nothing useful.
 */
/** struct umcg_mutex - a mutex; UMCG_MUTEX_INIT or umcg_mutex_init(). */
struct umcg_mutex {
	uint32_t magic;
	uint32_t owner; /* owner's tid, with a "waiters" bit */
	uint32_t lock; /* the internal lock */
	uint32_t spare;
	void *head, *tail; /* waiters, oldest first */
};

/** struct umcg_cond - a condition variable; UMCG_COND_INIT or umcg_cond_init(). */
struct umcg_cond {
	uint32_t magic;
	uint32_t lock;
	void *head, *tail;
};

/** struct umcg_sem - a counting semaphore; umcg_sem_init(). */
struct umcg_sem {
	uint32_t magic;
	uint32_t lock;
	uint32_t value;
	uint32_t spare;
	void *head, *tail;
};

#define UMCG_MUTEX_INIT                                \
	{                                              \
		UMCG_MUTEX_MAGIC_, 0, 0, 0, NULL, NULL \
	}
#define UMCG_COND_INIT                          \
	{                                       \
		UMCG_COND_MAGIC_, 0, NULL, NULL \
	}

/**
 * umcg_mutex_init() - set up @m, unlocked (the same as UMCG_MUTEX_INIT).
 * Return: 0; -EINVAL for NULL.
 * Context: any thread.
 */
UMCG_API int umcg_mutex_init(struct umcg_mutex *m);

/**
 * umcg_mutex_lock() - take @m, waiting as long as it takes.
 * Return: 0; -EINVAL (NULL, not initialised); -EDEADLK if the caller
 *  holds @m already.
 * Context: any thread.
 */
UMCG_API int umcg_mutex_lock(struct umcg_mutex *m);

/**
 * umcg_mutex_trylock() - take @m if nobody holds it, without waiting.
 * Return: 0; -EBUSY if another thread holds it; -EDEADLK if the caller
 *  does; -EINVAL.
 * Context: any thread.
 */
UMCG_API int umcg_mutex_trylock(struct umcg_mutex *m);

/**
 * umcg_mutex_timedlock() - take @m, waiting until @deadline at the latest.
 * @deadline: absolute CLOCK_MONOTONIC time, in ns.
 * Return: 0; -ETIMEDOUT; -EDEADLK; -EINVAL.
 * Context: any thread.
 */
UMCG_API int umcg_mutex_timedlock(struct umcg_mutex *m, uint64_t deadline);

/**
 * umcg_mutex_unlock() - release @m; its longest waiter, if any, owns it now.
 * Return: 0; -EPERM if the caller does not hold @m; -EINVAL.
 * Context: the thread that holds @m.
 */
UMCG_API int umcg_mutex_unlock(struct umcg_mutex *m);

/**
 * umcg_mutex_destroy() - make @m unusable until initialised again.
 * Return: 0; -EBUSY if it is held or has waiters (nothing changes); -EINVAL.
 * Context: any thread.
 */
UMCG_API int umcg_mutex_destroy(struct umcg_mutex *m);

/**
 * umcg_cond_init() - set up @c (the same as UMCG_COND_INIT).
 * Return: 0; -EINVAL for NULL.
 * Context: any thread.
 */
UMCG_API int umcg_cond_init(struct umcg_cond *c);

/**
 * umcg_cond_wait() - release @m, wait for a signal on @c, retake @m.
 *
 * The release and the start of the wait are one step for any signaller
 * that holds @m. Without a signal the wait does not end (no spurious
 * wake-ups of its own), but as with pthreads the caller rechecks its
 * predicate: another thread may have taken what the signal was for.
 *
 * Return: 0, with @m held again; -EPERM if the caller does not hold @m;
 *  -EINVAL (NULL, not initialised).
 * Context: the thread that holds @m.
 */
UMCG_API int umcg_cond_wait(struct umcg_cond *c, struct umcg_mutex *m);

/**
 * umcg_cond_timedwait() - umcg_cond_wait() until @deadline at the latest.
 * @deadline: absolute CLOCK_MONOTONIC time, in ns.
 * Return: 0; -ETIMEDOUT, with @m held again; -EPERM; -EINVAL.
 * Context: the thread that holds @m.
 */
UMCG_API int umcg_cond_timedwait(struct umcg_cond *c, struct umcg_mutex *m, uint64_t deadline);

/**
 * umcg_cond_signal() - wake the longest waiter of @c, if any.
 * Return: 0; -EINVAL.
 * Context: any thread (holding the waiters' mutex or not).
 */
UMCG_API int umcg_cond_signal(struct umcg_cond *c);

/**
 * umcg_cond_broadcast() - wake every waiter of @c.
 * Return: 0; -EINVAL.
 * Context: any thread.
 */
UMCG_API int umcg_cond_broadcast(struct umcg_cond *c);

/**
 * umcg_cond_destroy() - make @c unusable until initialised again.
 * Return: 0; -EBUSY if it has waiters (nothing changes); -EINVAL.
 * Context: any thread.
 */
UMCG_API int umcg_cond_destroy(struct umcg_cond *c);

/**
 * umcg_sem_init() - set up @sem with @value units.
 * Return: 0; -EINVAL for NULL or @value above UMCG_SEM_VALUE_MAX.
 * Context: any thread.
 */
UMCG_API int umcg_sem_init(struct umcg_sem *sem, unsigned int value);

/**
 * umcg_sem_wait() - take a unit of @sem, waiting for one if there is none.
 * Return: 0; -EINVAL.
 * Context: any thread.
 */
UMCG_API int umcg_sem_wait(struct umcg_sem *sem);

/**
 * umcg_sem_trywait() - take a unit of @sem if there is one.
 * Return: 0; -EAGAIN if there is none; -EINVAL.
 * Context: any thread.
 */
UMCG_API int umcg_sem_trywait(struct umcg_sem *sem);

/**
 * umcg_sem_timedwait() - umcg_sem_wait() until @deadline at the latest.
 * @deadline: absolute CLOCK_MONOTONIC time, in ns.
 * Return: 0; -ETIMEDOUT; -EINVAL.
 * Context: any thread.
 */
UMCG_API int umcg_sem_timedwait(struct umcg_sem *sem, uint64_t deadline);

/**
 * umcg_sem_post() - add a unit to @sem, or hand it to its longest waiter.
 * Return: 0; -EOVERFLOW if the value is UMCG_SEM_VALUE_MAX already
 *  (nothing changes); -EINVAL.
 * Context: any thread.
 */
UMCG_API int umcg_sem_post(struct umcg_sem *sem);

/**
 * umcg_sem_getvalue() - the units @sem holds now (0 while anyone waits).
 * Return: the value; -EINVAL.
 * Context: any thread.
 */
UMCG_API int umcg_sem_getvalue(struct umcg_sem *sem);

/**
 * umcg_sem_destroy() - make @sem unusable until initialised again.
 * Return: 0; -EBUSY if it has waiters (nothing changes); -EINVAL.
 * Context: any thread.
 */
UMCG_API int umcg_sem_destroy(struct umcg_sem *sem);

/*
 * Channels. A channel carries elements of a fixed size, copied in and out.
 * With a capacity of 0 it is a rendezvous: a send waits for a receiver and
 * the element passes straight from one to the other. Otherwise up to
 * capacity elements wait in the channel, in order. Waiting senders and
 * receivers are served FIFO; a select polls its ready operations in a
 * random order, so none of them starves.
 *
 * Closing: sends on a closed channel return -EPIPE; receives drain what is
 * left, then return -EPIPE; waiters at the close return -EPIPE.
 */
struct umcg_chan;

/** UMCG_CHAN_SEND, UMCG_CHAN_RECV - what an operation of umcg_chan_select() does. */
#define UMCG_CHAN_SEND 1
#define UMCG_CHAN_RECV 2
/** UMCG_CHAN_FOREVER - a deadline that never comes. */
#define UMCG_CHAN_FOREVER UINT64_MAX
/** UMCG_CHAN_SELECT_MAX - the most operations one select takes. */
#define UMCG_CHAN_SELECT_MAX 64

/**
 * struct umcg_chan_op - one operation of umcg_chan_select().
 * @chan: the channel; NULL makes the operation never ready (as a nil
 *	channel in Go), to switch it off without reshaping the array.
 * @op: UMCG_CHAN_SEND or UMCG_CHAN_RECV.
 * @elem: the element to send, or where to receive one (may be NULL only
 *	for elements of size 0).
 * @result: out, for the operation that completed: 0, or -EPIPE if its
 *	channel is closed (a send, or a receive of a closed, empty channel).
 */
struct umcg_chan_op {
	struct umcg_chan *chan;
	int op;
	void *elem;
	int result;
};

/**
 * umcg_chan_create() - a new channel of @capacity elements of @elem_size
 * bytes each, in *@ch.
 * Return: 0; -EINVAL (NULL @ch, a size that overflows); -ENOMEM.
 * Context: any thread.
 */
UMCG_API int umcg_chan_create(struct umcg_chan **ch, size_t capacity, size_t elem_size);

/**
 * umcg_chan_send() - copy *@elem into @ch, waiting for room (or, with
 * capacity 0, for a receiver).
 * Return: 0; -EPIPE if @ch is closed (also while waiting); -EINVAL.
 * Context: any thread.
 */
UMCG_API int umcg_chan_send(struct umcg_chan *ch, const void *elem);

/**
 * umcg_chan_recv() - take the oldest element of @ch into *@elem, waiting
 * for one.
 * Return: 0; -EPIPE if @ch is closed and empty (also while waiting);
 *  -EINVAL.
 * Context: any thread.
 */
UMCG_API int umcg_chan_recv(struct umcg_chan *ch, void *elem);

/**
 * umcg_chan_try_send() - umcg_chan_send() only if it need not wait.
 * Return: 0; -EAGAIN if it would wait; -EPIPE; -EINVAL.
 */
UMCG_API int umcg_chan_try_send(struct umcg_chan *ch, const void *elem);

/**
 * umcg_chan_try_recv() - umcg_chan_recv() only if it need not wait.
 * Return: 0; -EAGAIN if it would wait; -EPIPE; -EINVAL.
 */
UMCG_API int umcg_chan_try_recv(struct umcg_chan *ch, void *elem);

/**
 * umcg_chan_timed_send() - umcg_chan_send() until @deadline at the latest.
 * @deadline: absolute CLOCK_MONOTONIC time in ns; one already past tries once.
 * Return: 0; -ETIMEDOUT; -EPIPE; -EINVAL.
 */
UMCG_API int umcg_chan_timed_send(struct umcg_chan *ch, const void *elem, uint64_t deadline);

/**
 * umcg_chan_timed_recv() - umcg_chan_recv() until @deadline at the latest.
 * Return: 0; -ETIMEDOUT; -EPIPE; -EINVAL.
 */
UMCG_API int umcg_chan_timed_recv(struct umcg_chan *ch, void *elem, uint64_t deadline);

/**
 * umcg_chan_close() - close @ch: no more sends; every waiter returns -EPIPE.
 * Return: 0; -EPIPE if it was closed already; -EINVAL.
 * Context: any thread.
 */
UMCG_API int umcg_chan_close(struct umcg_chan *ch);

/**
 * umcg_chan_destroy() - free @ch (closed or not; elements left in it go).
 * Return: 0; -EBUSY if somebody waits on it (nothing changes); -EINVAL.
 * Context: any thread, once nobody else uses @ch.
 */
UMCG_API int umcg_chan_destroy(struct umcg_chan *ch);

/**
 * umcg_chan_select() - complete exactly one of @n operations, waiting until
 * one can complete.
 * @ops: the operations, 1 to UMCG_CHAN_SELECT_MAX of them; they may name
 *	one channel more than once.
 * @deadline: 0 to poll (never wait), UMCG_CHAN_FOREVER for no deadline,
 *	else an absolute CLOCK_MONOTONIC time in ns.
 *
 * Of the operations ready when it looks, a random one completes; if none
 * is, the call waits on all of them and the first that becomes ready
 * completes. Exactly one operation completes, or none with an error.
 *
 * Return: the index of the operation that completed, its outcome in its
 *  @result (0, or -EPIPE); -EAGAIN when polling and nothing is ready;
 *  -ETIMEDOUT; -EINVAL (NULL @ops, @n 0 or too large, a bad @op, a
 *  channel not created or destroyed, a NULL @elem for a non-empty element).
 * Context: any thread.
 */
UMCG_API int umcg_chan_select(struct umcg_chan_op *ops, size_t n, uint64_t deadline);

#ifdef __cplusplus
}
#endif

#endif /* UMCG_SYNC_H */
