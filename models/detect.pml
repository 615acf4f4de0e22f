/* SPDX-License-Identifier: MIT */
/*
 * detect.pml - the emulation's decision that a worker fell asleep in a
 * call nobody announced (src/emulated.c, "Detection": watch_one(),
 * kick_pinned(), detect_block(), enter_lib() and reclaim()), checked by
 * SPIN.
 *
 * A decider (the watcher, or a kicker) looks at a worker that is RUNNING
 * outside the library, reads its CPU clock, probes it (is it asleep in the
 * kernel?), and if so takes the decision (detected NONE -> DECIDING, a
 * CAS), looks at in_lib once more (the Dekker pair with enter_lib()),
 * reads the CPU clock again, and CASes the worker's state RUNNING ->
 * BLOCKED. Each of those is a separate step, and the worker runs between
 * any two of them: it may sleep inside the library (umcg_yield() waiting
 * for its turn, in_lib set) at the moment of the probe, and be back in
 * user code, never having slept in a call of its own, when the decision
 * is taken. The second read of the CPU clock is what rules that out.
 *
 * Scope (check.sh): 1x2, one worker and two deciders (the watcher and a
 * kicker, which may decide about the same worker at once).
 *
 * Variables and the C they stand for:
 *   st          the worker's umcg_task.state: RUNNING, RUNNABLE, BLOCKED
 *   in_lib      struct umcg__etask.in_lib
 *   det         struct umcg__etask.detected: DET_NONE, DET_DECIDING,
 *               DET_BLOCKED
 *   in_call     the thread is asleep in a call of its own (a raw syscall,
 *               a page fault): what the probe reports as PROBE_ASLEEP, or
 *               PROBE_USER with a sleeping stat state
 *   in_wait     the thread is asleep inside the library (the futex wait
 *               of a yield); the probe reports it the same way
 *   ran[d]      "the CPU clock moved since decider d read it": every step
 *               of the worker sets it, d's first read of the clock clears
 *               it, and d's second read compares (thread_cpu_ns() == cpu)
 *   slept       ghost: the worker slept in a call of its own since it last
 *               left the library
 *   inside      ghost: the worker is past enter_lib() (reclaim() done),
 *               in the library
 *
 * Abstracted away: the server (a yield's wait ends at any moment with the
 * worker RUNNING again; a detected worker's server is woken and runs
 * others, which is not this model's concern), the watcher's first test
 * that the clock did not move for a whole period (a filter against cost,
 * not part of the decision's safety), the request to the server and the
 * kick that take a detected worker back while it stays in user code
 * (both end in reclaim(), which the worker here reaches by entering the
 * library at any moment), timestamps, tid reuse (the pin and the tid
 * check). Memory is sequentially consistent: every access named here is
 * seq_cst in the C, or ordered by the probe's locks (see detect_block()).
 *
 * Properties (assertions):
 *   a worker is made BLOCKED only if it slept in a call of its own since
 *   it last left the library, and never while it is inside the library;
 *   inside the library it is RUNNING (a detected worker reclaimed itself
 *   first); invalid end states (a worker waiting for a decision that
 *   never ends).
 *
 * Mutants (mutate.sh), each must fail:
 *   M_NO_CPU_RECHECK     detect_block() without the second clock read
 *   M_NO_INLIB_RECHECK   detect_block() without its load of in_lib
 *   M_DECIDE_STORE       the NONE -> DECIDING CAS turned into a load and a
 *                        store
 * and R_DETECTION_REACHABLE asserts that no detection happens, which must
 * fail too: the model does reach a detection (it is not safe by doing
 * nothing).
 */

#define RUNNING 1
#define RUNNABLE 2
#define BLOCKED 3

#define NONE 0
#define DECIDING 1
#define DBLOCKED 2

#define ND 2

byte st = RUNNING;
bit in_lib;
byte det = NONE;
bit in_call;
bit in_wait;
bit ran[ND];
bit slept;
bit inside;

/* Every step of the worker moves its CPU clock. */
inline ran_step()
{
	ran[0] = 1;
	ran[1] = 1
}

active proctype worker()
{
	byte d;

user:
	do
	:: atomic { ran_step() } /* user code */
	:: goto call
	:: goto lib
	od;

call:
	/* A call of its own that sleeps; the kernel ends it at any moment. */
	atomic { ran_step(); in_call = 1; slept = 1 };
	atomic { in_call = 0; ran_step() };
	goto user;

lib:
	/* enter_lib(): in_lib = 1, then reclaim(): wait out a decision. */
	atomic { ran_step(); in_lib = 1 };
	do
	:: atomic { ran_step(); d = det; if :: d != DECIDING -> break :: else -> skip fi }
	od;
	if
	:: d == DBLOCKED ->
		/* BLOCKED -> RUNNABLE, pushed, run again by its server. */
		atomic { ran_step(); assert(st == BLOCKED); st = RUNNING; det = NONE }
	:: else -> skip
	fi;
	atomic { ran_step(); inside = 1; assert(st == RUNNING) };
	/* umcg_yield(): RUNNABLE, asleep in the futex wait until run. */
	atomic { ran_step(); assert(st == RUNNING); st = RUNNABLE; in_wait = 1 };
	atomic { st = RUNNING; in_wait = 0; ran_step() };
	/* return_to_user(): in_lib = 0, back in user code. */
	atomic { ran_step(); assert(st == RUNNING); inside = 0; in_lib = 0; slept = 0 };
	goto user
}

active [ND] proctype decider()
{
	byte me = _pid - 1;
	byte s, dd;
	bit il, asleep, mine;

	do
	:: /* The look: RUNNING, no decision, outside the library. */
		s = st;
		dd = det;
		il = in_lib;
		if
		:: s != RUNNING || dd != NONE || il -> goto next
		:: else -> skip
		fi;
		/* cpu = thread_cpu_ns(tid) */
		ran[me] = 0;
		/* The probe: asleep in the kernel? */
		asleep = in_call || in_wait;
		if
		:: !asleep -> goto next
		:: else -> skip
		fi;
		/* detect_block(): one decider at a time. */
#ifdef M_DECIDE_STORE
		dd = det;
		if
		:: dd == NONE -> det = DECIDING; mine = 1
		:: else -> mine = 0
		fi;
#else
		atomic {
			if
			:: det == NONE -> det = DECIDING; mine = 1
			:: else -> mine = 0
			fi
		};
#endif
		if
		:: !mine -> goto next
		:: else -> skip
		fi;
#ifndef M_NO_INLIB_RECHECK
		if
		:: in_lib -> goto undo
		:: else -> skip
		fi;
#endif
#ifndef M_NO_CPU_RECHECK
		if
		:: ran[me] -> goto undo
		:: else -> skip
		fi;
#endif
		atomic {
			if
			:: st == RUNNING ->
				assert(slept && !inside);
#ifdef R_DETECTION_REACHABLE
				assert(false);
#endif
				st = BLOCKED
			:: else -> goto undo
			fi
		};
		det = DBLOCKED;
		goto next;
undo:
		det = NONE;
next:
		skip
	od
}
