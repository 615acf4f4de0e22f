/* SPDX-License-Identifier: MIT */
/*
 * sync.pml - the mutex of <umcg/sync.h> (src/sync.c, the essay at its
 * top): the owner word with its waiters bit, the FIFO of waiters under the
 * internal lock, ownership passed to the woken waiter, timeouts that take
 * a node back, and the holds that keep a woken worker's memory until its
 * waker's unpark is done (runtime.c, "Holds"), checked by SPIN.
 *
 * Scope (check.sh): 3x2 is -DNT=3 -DNROUNDS=2, three threads each taking
 * and releasing the mutex twice; 2x3 is two threads, three times each. Each lock is chosen freely to be untimed or timed; a timed
 * waiter's futex wait may time out at any moment (its deadline is free).
 * A thread that finishes its rounds "exits and is freed" once no waker
 * holds it. Every run ends unless a wake-up is lost.
 *
 * Variables and the C they stand for:
 *   ow          struct umcg_mutex.owner: tid (1..NT), + 8 for OWNER_WAITERS
 *   lk          struct umcg_mutex.lock, the internal lock (taken and
 *               released as one step each: lock.h's protocol is not what
 *               this model checks)
 *   q[], qn     the FIFO (head .. tail), struct umcg_mutex.head/tail
 *   queued[t]   struct waiter.queued of thread t's node
 *   word[t]     struct waiter.word of thread t's node
 *   holds[t]    struct umcg_worker.holds
 *   gone[t]     ghost: thread t's worker has been freed
 *   incs        ghost: threads inside the critical section
 *
 * Abstracted away: how a waiter sleeps (a worker's park on its second
 * word, checked with the park machine in rt.pml, or a futex wait): here
 * it waits until word[t] == 1, and a wake-up is the store to word[t]. The
 * unpark that follows the store is the step "touch", which must find the
 * worker not freed. A plain thread's waker does a FUTEX_WAKE, which may
 * touch a dead address harmlessly, and is not modelled. The trylock, the
 * -EDEADLK and -EPERM checks and destroy are plain checks of ow.
 *
 * Properties: mutual exclusion (incs <= 1); no overtaking: an acquisition
 * through ow == 0 (fast path or under the lock) finds nobody queued; the
 * invariant "a node is queued only while OWNER_WAITERS is set and the
 * mutex is owned" (the monitor); a waker never touches a freed worker;
 * and invalid end states (a waiter left asleep: a lost wake-up).
 *
 * Mutants (mutate.sh), each must fail:
 *   M_NO_WAITERS_BIT  the slow path queues without setting OWNER_WAITERS
 *   M_UNLOCK_TO_ZERO  the slow unlock stores owner = 0 and wakes the head
 *                     to retry, instead of passing ownership to it
 *   M_NO_HOLD         the waker takes no hold around its unpark
 *   M_TIMEOUT_NO_REQUEUE_CHECK  a timed-out waiter returns -ETIMEDOUT
 *                     without looking whether a waker took its node
 */

#ifndef NT
#define NT 3
#endif
#ifndef NROUNDS
#define NROUNDS 2
#endif
#define WB 8

byte ow;
bit lk;
byte q[NT];
byte qn;
bit queued[NT + 1];
bit word[NT + 1];
byte holds[NT + 1];
bit gone[NT + 1];
byte incs;

/* Take thread t's node out of the FIFO, wherever it is (under lk). */
inline unlink_node(t)
{
	k = 0;
	do
	:: k < qn && q[k] != t -> k++
	:: else -> break
	od;
	assert(k < qn);
	j = k;
	do
	:: j + 1 < qn -> q[j] = q[j + 1]; j++
	:: else -> break
	od;
	qn--;
	q[qn] = 0;
	queued[t] = 0
}

inline wake(n)
{
#ifndef M_NO_HOLD
	holds[n]++;
#endif
	word[n] = 1;
	/* umcg__sync_unpark(w): reads and writes the worker. */
	assert(!gone[n]);
#ifndef M_NO_HOLD
	holds[n]--
#endif
}

proctype thread(byte t)
{
	byte r = 0, v, n, k, j;
	bit timed, got;

	do
	:: r == NROUNDS -> break
	:: r < NROUNDS ->
		got = 0;
		if
		:: timed = 0
		:: timed = 1
		fi;
		/* fast path: CAS 0 -> t */
		atomic {
			if
			:: ow == 0 -> assert(qn == 0); ow = t; got = 1
			:: else -> skip
			fi
		}
		if
		:: got -> skip
		:: else ->
			atomic { lk == 0 -> lk = 1 };
			/* the loop: CAS 0 -> t, or set the bit on the value seen */
			do
			:: v = ow;
				if
				:: v == 0 ->
					atomic {
						if
						:: ow == 0 -> assert(qn == 0); ow = t; got = 1
						:: else -> skip
						fi
					};
					if
					:: got -> break
					:: else -> skip
					fi
				:: v != 0 && v >= WB -> break
				:: v != 0 && v < WB ->
#ifdef M_NO_WAITERS_BIT
					break
#else
					atomic {
						if
						:: ow == v -> ow = v + WB; v = 255
						:: else -> skip
						fi
					};
					if
					:: v == 255 -> break
					:: else -> skip
					fi
#endif
				fi
			od;
			if
			:: got -> lk = 0
			:: else ->
				/* queue the node, unlock, wait */
				word[t] = 0;
				q[qn] = t;
				qn++;
				queued[t] = 1;
				lk = 0;
				if
				:: word[t] == 1 -> got = 1
				:: timed && word[t] == 0 ->
					/* the futex wait timed out */
					atomic { lk == 0 -> lk = 1 };
#ifdef M_TIMEOUT_NO_REQUEUE_CHECK
					if
					:: queued[t] -> unlink_node(t)
					:: else -> skip
					fi;
#else
					if
					:: queued[t] -> unlink_node(t)
					:: else -> got = 1
					fi;
#endif
					if
					:: !got && qn == 0 -> atomic { ow = ow % WB }
					:: else -> skip
					fi;
					lk = 0;
					if
					:: got -> word[t] == 1 /* the waker is about to store */
					:: else -> skip
					fi
				fi
			fi
		fi;
		if
		:: got ->
			assert(ow % WB == t);
			incs++;
			assert(incs == 1);
			incs--;
			/* unlock: CAS t -> 0, or the slow path */
			atomic {
				if
				:: ow == t -> ow = 0; v = 0
				:: else -> v = 1
				fi
			};
			if
			:: v == 1 ->
				atomic { lk == 0 -> lk = 1 };
				if
				:: qn > 0 ->
					n = q[0];
					unlink_node(n);
#ifdef M_UNLOCK_TO_ZERO
					ow = 0;
#else
					if
					:: qn > 0 -> ow = n + WB
					:: else -> ow = n
					fi;
#endif
					lk = 0;
					wake(n)
				:: else -> ow = 0; lk = 0
				fi
			:: else -> skip
			fi
		:: else -> skip
		fi;
		r++
	od;
	/* exits; worker_free() waits for holds == 0 */
	atomic { holds[t] == 0 -> gone[t] = 1 }
}

/* A node is queued only while OWNER_WAITERS is set and the mutex owned. */
active proctype monitor()
{
end:
	atomic { !(qn == 0 || (ow >= WB && ow % WB != 0)) -> assert(false) }
}

init {
	byte i;

	atomic {
		for (i : 1 .. NT) {
			run thread(i)
		}
	}
}
