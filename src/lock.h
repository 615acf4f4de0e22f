/* SPDX-License-Identifier: MIT */
/*
 * lock.h - umcg__lock, the library's internal mutex: one futex word, and no
 * call into libc's locking.
 *
 * Why not a pthread_mutex_t. libumcg-preload.so interposes
 * pthread_mutex_lock() for the program's workers, so a library lock taken
 * through it would run the preload's code (and whatever else a program
 * interposes there) on a server; and libc's mutex is one more thing a
 * server would share with the code it schedules. This lock is a word, two
 * atomic operations and, only under contention, FUTEX_WAIT/FUTEX_WAKE
 * through umcg__syscall6() (libc's syscall(), a stub that takes no lock
 * and allocates nothing). It is the three-state mutex of Drepper's
 * "Futexes Are Tricky" (musl's __lock is the same idea).
 *
 * The word:
 *	UMCG__LOCK_FREE       0  nobody owns the lock
 *	UMCG__LOCK_HELD       1  owned, and nobody sleeps on the word
 *	UMCG__LOCK_CONTENDED  2  owned, and some thread may sleep on the word
 * lock:   CAS FREE -> HELD (the fast path, one atomic). Else spin a little
 *         while the word is HELD, then exchange it with CONTENDED until the
 *         exchange returns FREE, with FUTEX_WAIT(word, CONTENDED) between
 *         tries.
 * unlock: exchange the word with FREE; if it was CONTENDED, FUTEX_WAKE one.
 *
 * Invariant: the word is FREE iff no thread owns the lock, and it is
 * CONTENDED whenever a thread sleeps, or is about to sleep, in FUTEX_WAIT
 * on it, until an unlock that sees CONTENDED wakes one such thread. A
 * sleeper only sleeps after it stored CONTENDED itself, and FUTEX_WAIT
 * compares the word with CONTENDED atomically against FUTEX_WAKE, so an
 * unlock that lands between a waiter's exchange and its wait makes the
 * wait return at once: no wake-up is lost. A woken waiter takes the lock
 * with an exchange to CONTENDED, not to HELD, because another may still
 * sleep: at worst a later unlock makes a FUTEX_WAKE that wakes nobody.
 *
 * Barriers: the successful CAS or exchange that takes the lock is an
 * acquire and pairs with the release exchange of the unlock before it, so
 * the next owner sees every store the previous owner made inside the
 * critical section. Nothing else is ordered by the lock: the spin's loads
 * are relaxed, and the futex calls order nothing by themselves.
 *
 * Rules for users (the reason for this file: issue #8, "servers never
 * block on a lock that a worker may hold"):
 *  - Only for locks that no worker of a runtime ever holds, except through
 *    umcg__lock_announced() (sync.c), whose sleeps free the sleeper's
 *    server and which no server takes. A worker can
 *    be preempted anywhere in its own code (on the emulation, parked
 *    inside the kick signal's handler until its server runs it again);
 *    a server that then sleeps on a lock that worker holds waits for a
 *    worker that waits for the server. Servers and plain threads may hold
 *    it: the kernel may take the CPU from them, but nothing parks them, so
 *    a waiter waits only as long as the kernel keeps a runnable owner off
 *    its CPU, provided critical sections never sleep.
 *  - Critical sections are a few loads and stores: no call that can sleep
 *    or take another lock, so there is no lock order and a holder is
 *    always runnable.
 *  - Not recursive, no owner is recorded, and not async-signal-safe (a
 *    handler that takes a lock its thread holds deadlocks). Servers block
 *    every signal, so on a server that cannot happen.
 *  - A fork() child gets the word as it was; the library never takes these
 *    locks in a child (its runtimes answer -ECHILD there).
 */
#ifndef UMCG_SRC_LOCK_H
#define UMCG_SRC_LOCK_H

#include <stdbool.h>
#include <stdint.h>

#include <umcg/umcg.h>

#include "atomics.h"
#include "syscall.h"

#define UMCG__LOCK_FREE 0U
#define UMCG__LOCK_HELD 1U
#define UMCG__LOCK_CONTENDED 2U

/*
 * How many times lock() looks at a HELD word before it sleeps. The owner
 * is a server on another CPU in a few stores' critical section, so a short
 * spin usually saves two system calls; when the owner has lost its CPU the
 * spin is over in a microsecond or so.
 */
#define UMCG__LOCK_SPINS 100

struct umcg__lock {
	uint32_t word; /* UMCG__LOCK_*; umcg__ atomics only */
};

#define UMCG__LOCK_INITIALIZER  \
	{                       \
		UMCG__LOCK_FREE \
	}

static inline void umcg__lock_init(struct umcg__lock *l)
{
	umcg__store(&l->word, UMCG__LOCK_FREE, umcg__relaxed);
}

static inline void umcg__cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield" ::: "memory");
#endif
}

/* Take @l if it is free. Return: true if the caller owns it now. */
static inline bool umcg__trylock(struct umcg__lock *l)
{
	uint32_t expected = UMCG__LOCK_FREE;

	/* Acquire: pairs with the release exchange in umcg__unlock(). */
	return umcg__cas(&l->word, &expected, UMCG__LOCK_HELD, umcg__acquire);
}

/*
 * The contended path of umcg__lock() and umcg__lock_announced(), out of
 * line. @announce: each sleep goes inside umcg_block_begin()/_end(), and
 * the lock is retaken only once the caller runs again.
 */
static __attribute__((noinline, unused)) void umcg__lock_slow(struct umcg__lock *l, bool announce)
{
	bool hooked;
	unsigned int spins;

	for (spins = 0; spins < UMCG__LOCK_SPINS; spins++) {
		/* Relaxed: only a hint; the CAS or exchange decides. */
		uint32_t w = umcg__load(&l->word, umcg__relaxed);

		if (w == UMCG__LOCK_FREE && umcg__trylock(l))
			return;
		if (w == UMCG__LOCK_CONTENDED)
			break; /* others sleep already: join them */
		umcg__cpu_relax();
	}
	/* Acquire when it returns FREE: pairs with the release exchange in
	 * umcg__unlock(). CONTENDED, not HELD: see the invariant above. */
	while (umcg__xchg(&l->word, UMCG__LOCK_CONTENDED, umcg__acquire) != UMCG__LOCK_FREE) {
		hooked = announce && umcg_block_begin() == 0;
		umcg__futex_wait(&l->word, UMCG__LOCK_CONTENDED, NULL, 0);
		if (hooked)
			umcg_block_end();
	}
}

static inline void umcg__lock(struct umcg__lock *l)
{
	if (!umcg__trylock(l))
		umcg__lock_slow(l, false);
}

/*
 * umcg__lock_announced() - umcg__lock() for a lock that workers hold too
 * (<umcg/sync.h>'s internal locks): a worker that must sleep on it
 * announces the sleep, so its server runs others, among them a preempted
 * holder of the same server. Its unlock is umcg__unlock().
 */
static inline void umcg__lock_announced(struct umcg__lock *l)
{
	if (!umcg__trylock(l))
		umcg__lock_slow(l, true);
}

static inline void umcg__unlock(struct umcg__lock *l)
{
	/* Release: pairs with the acquire that takes the lock next. */
	if (umcg__xchg(&l->word, UMCG__LOCK_FREE, umcg__release) == UMCG__LOCK_CONTENDED)
		umcg__futex_wake(&l->word);
}

#endif /* UMCG_SRC_LOCK_H */
