/* SPDX-License-Identifier: MIT */
/*
 * abi.pml - the UMCG ABI state machine as the futex emulation implements
 * it (src/emulated.c, src/list.c, src/backend.h, src/backend.c), checked
 * by SPIN. Run it through models/check.sh; models/README.md says how.
 *
 * Scope: NS servers and NW workers (-DNS=1 -DNW=3 or -DNS=2 -DNW=2).
 * Worker w is hosted by server (w - NS) % NS for good (no stealing here:
 * that is the runtime's business, model rt.pml). Task ids: servers are
 * 0 .. NS-1, workers NS .. NS+NW-1. The workers start registered: RUNNABLE,
 * on their server's list, waiting (e_register() is the push and wake of
 * e_block_end(), which the model has).
 *
 * The servers run the loop of ABI section 7 (the runtime's server_loop()
 * reduced to what the ABI sees): store RUNNABLE|TF_COND_WAIT, take the
 * list, queue what it held, pick any queued worker (every policy), name it
 * in next_tid, umcg_wait() with a slice deadline; on -ETIMEDOUT preempt the
 * running worker with umcg_preempt(): TF_PREEMPT CAS, then umcg_kick(). A
 * kick is sent once per slice and the server then waits with no deadline,
 * so a lost kick is not hidden by the next one. The workers forever
 * compute, yield the way the runtime does (RUNNABLE|TF_COND_WAIT, then
 * umcg_wait()) or block (umcg_block_begin()/_end()).
 *
 * Variables and the C they stand for:
 *   st[t]          struct umcg_task.state (include/umcg/abi.h), bits:
 *                  1 RUNNING, 2 RUNNABLE, 3 BLOCKED (mask 3), PRE = 16
 *                  UMCG_TF_PREEMPT, CW = 32 UMCG_TF_COND_WAIT
 *   head[s]        server's umcg_task.runnable_workers_ptr (worker id+1)
 *   nxt[w]         worker's umcg_task.runnable_workers_ptr (next pointer)
 *   next_tid[s]    server's umcg_task.next_tid (worker id+1, 0 = none)
 *   in_lib[t]      emulated.c: struct umcg__etask.in_lib
 *   in_block[t]    emulated.c: struct umcg__etask.in_block
 *   sigp[t]        emulated.c: umcg__etask.kick_pending plus the pending
 *                  KICK_SIGNAL (e_kick() -> take_kicks() in kick_handler())
 *   rq[s], cur[s]  the server's policy queue (bit per worker) and the
 *                  worker it runs (runtime.c: struct server.current)
 *   nx[s]          the server's local `next`: the worker it picked and
 *                  wakes in this round (global only so the invariants can
 *                  see it)
 * Ghosts (no C counterpart; they state the properties):
 *   onl[w]         how many runnable lists hold w
 *   pw[w]          w changed its state in a way its server must hear of
 *                  (became BLOCKED or RUNNABLE) and has not woken it yet
 *   wt[w]          w sleeps in wait_running()
 *   usr[w]         w runs user code
 *   sl[s]          s sleeps in wait_running()
 *   kp[s]          s is inside umcg_preempt() of its current worker
 *   ran[s]         the worker s woke last has reached user code. For the
 *                  liveness check only (-DSLICE_RAN), a slice ends only
 *                  then: its fairness assumption. Without it a slice could
 *                  end before its worker reached user code, round after
 *                  round; a real slice (10 us or more) ends early now and
 *                  then, which the safety check allows, but not for ever.
 *   sbf[t], sbv[t] a one-entry store buffer of worker t, used only by the
 *                  mutant that weakens the seq_cst store of in_lib
 *
 * Granularity. Each step is one access to shared memory of the C code, or
 * several merged where no other thread can tell the difference. The merges,
 * each argued where it is made:
 *   - the CAS loop of umcg__runnable_push() is one step: failed rounds
 *     change nothing, and the successful CAS is its linearization point;
 *   - the futex is its guarantee: a thread that sleeps until its state is
 *     RUNNING is a guard on that state. umcg__futex_wait() compares and
 *     sleeps atomically, and every RUNNABLE -> RUNNING CAS of the C is
 *     followed by a FUTEX_WAKE (wake_task()), so a wake-up can be lost
 *     only by the protocol on the state words, which the model keeps;
 *   - a thread's private data (the server's queue, current worker and
 *     next_tid, a worker's locals) rides on the neighbouring shared access;
 *   - kick signals: a pending signal is taken in user code at once (a
 *     pending unblocked signal is delivered on the next return to user
 *     space). Inside the library its handler sees in_lib set and does
 *     nothing, so a signal still pending when the worker sets in_lib is
 *     dropped there. In the TF_COND_WAIT window of a yield (in_lib still
 *     clear) it may be taken: the handler's return_to_user() must see the
 *     flag and return.
 *
 * Memory order: SPIN interleaves, which is sequential consistency. That is
 * what the C code asks for: every access in the two Dekker pairs of
 * emulated.c (sections 2 and 3 of its header comment) is seq_cst. The
 * mutant that weakens the in_lib store puts it in the store buffer instead;
 * the buffer is flushed by the process `flusher` at any moment, and by its
 * owner before its next store and before it sleeps (a system call is a
 * full barrier). Others read memory: the store->load reordering that a
 * missing fence allows on x86 and on ARM.
 *
 * Abstracted away: registration checks and errors, timestamps, user bits
 * 16-31, CPU affinity, unregistration and exit, the registry and tid
 * reuse, a worker's own next_tid, detection of unannounced blocking (its
 * marking is umcg_block_begin() done by another thread, behind a Dekker
 * pair of its own), signals on servers (the runtime's block them all).
 *
 * Properties (the monitor checks them in every state):
 *   ALONE    a RUNNING worker is on no list and in no queue; each push and
 *            each enqueue asserts that the worker is on none yet;
 *   ONE      at most one RUNNING worker per server;
 *   TAKEN    the server's xchg takes every worker pushed before it (an
 *            assertion where the list is walked);
 *   HEARD    no lost wake-up of a server: a server asleep while its list
 *            holds a worker, or while its queue holds one and its current
 *            worker does not run, has a worker on its way to wake it (pw);
 *   FOUND    no lost worker: a worker asleep in wait_running() is RUNNING,
 *            on a list, queued, or picked (nx);
 *   KICKED   no lost kick: a worker in user code with TF_PREEMPT set has
 *            the kick signal pending, or the kick is still being sent;
 * and with -DNP (liveness, weak fairness): no cycle in which no worker
 * ever enters user code (label progress).
 */

#ifndef NS
#define NS 1
#endif
#ifndef NW
#define NW 3
#endif
#define T (NS + NW)

#if defined(M_INLIB_RELAXED)
#define WEAK
#endif

#define RUNNING 1
#define RUNNABLE 2
#define BLOCKED 3
#define MASK 3
#define PRE 16
#define CW 32

#define SRV(w) (((w) - NS) % NS)
#define BIT(w) (1 << ((w) - NS))
#define RUN(t) ((st[t] & MASK) == RUNNING)

byte st[T];
byte head[NS];
byte nxt[T];
byte next_tid[NS];
bit in_lib[T];
bit in_block[T];
bit sigp[T];
byte rq[NS];
byte cur[NS];
byte nx[NS];
byte onl[T];
bit pw[T];
bit wt[T];
bit usr[T];
bit sl[NS];
bit kp[NS];
bit ran[NS];
bit sbf[T];
bit sbv[T];

/* Liveness only (check.sh passes -DSLICE_RAN): a slice ends only after its
 * worker reached user code. Safety lets it end at any moment, as a real
 * one can while the worker is still on its way out of the library. */
#ifdef SLICE_RAN
#define SLICE_OVER(s) ran[s]
#define RAN(s, v) ran[s] = v
#else
#define SLICE_OVER(s) 1
#define RAN(s, v) skip
#endif

/* ---- memory: the store buffer of the weakened-store mutant ----------- */

/* Inside an atomic step of worker t, before it stores or sleeps. */
#ifdef WEAK
#define DRAIN(t) if :: sbf[t] -> in_lib[t] = sbv[t]; sbf[t] = 0 :: else fi
#define FLUSH(i) :: atomic { sbf[i] -> in_lib[i] = sbv[i]; sbf[i] = 0 }

active proctype flusher()
{
end:	do
	FLUSH(1)
	FLUSH(2)
	FLUSH(3)
#if T > 4
	FLUSH(4)
	FLUSH(5)
#endif
	od
}
#else
#define DRAIN(t) skip
#endif

/* ---- ABI primitives ---------------------------------------------------- */

/* emulated.c:wake_server() = wake_task(): RUNNABLE -> RUNNING (a server that
 * is not RUNNABLE is awake already), then FUTEX_WAKE (the guard). */
#define WAKE_SERVER(s) if :: (st[s] & MASK) == RUNNABLE -> st[s] = RUNNING :: else fi

/* backend.h:umcg__runnable_push(): the CAS loop on the head, one step.
 * M_PUSH_STORE: the CAS made a store, so a load and a later store. */
#ifndef M_PUSH_STORE
#define PUSH(s, w) \
	atomic { \
		assert(onl[w] == 0 && !(rq[s] & BIT(w))); \
		nxt[w] = head[s]; head[s] = w + 1; onl[w]++ \
	}
#else
#define PUSH(s, w) \
	atomic { assert(onl[w] == 0 && !(rq[s] & BIT(w))); nxt[w] = head[s] }; \
	atomic { head[s] = w + 1; onl[w]++ }
#endif

/* backend.c:umcg_preempt() then emulated.c:e_kick(), on worker t, by its
 * server. Three steps: the TF_PREEMPT CAS, the seq_cst load of in_lib
 * (the Dekker pair with return_to_user()), then the loads of in_block
 * and the state and the signal (kick_pinned(); the probe of detection is
 * left out). */
inline preempt(t)
{
#ifdef M_KICK_LOAD_BEFORE_CAS
	il = in_lib[t];
#endif
#ifndef M_PREEMPT_STORE
	atomic {
		if
		:: RUN(t) -> st[t] = st[t] | PRE; kp[s] = 1
		:: else
		fi
	};
#else
	s_ = st[t];
	atomic {
		if
		:: (s_ & MASK) == RUNNING -> st[t] = s_ | PRE; kp[s] = 1
		:: else
		fi;
		s_ = 0
	};
#endif
	if
	:: kp[s] ->
#ifndef M_KICK_LOAD_BEFORE_CAS
		if
		:: atomic { in_lib[t] -> kp[s] = 0 } /* futex wake: it is in the library */
		:: atomic { !in_lib[t] -> skip }
		fi;
#else
		if
		:: atomic { il -> kp[s] = 0; il = 0 }
		:: atomic { !il -> skip }
		fi;
#endif
		if
		:: kp[s] ->
			atomic {
				if
				:: in_block[t]
				:: !in_block[t] && (((st[t] & MASK) == RUNNING && (st[t] & PRE)) ||
						   (!RUN(t) && !((st[t] & MASK) == RUNNABLE && (st[t] & CW)))) ->
					sigp[t] = 1
				:: else
				fi;
				kp[s] = 0
			}
		:: else
		fi
	:: else
	fi
}

/* ---- the server ---------------------------------------------------------- */

proctype server(byte s)
{
	byte list, w, i;
	bit timed, kicked, expired, eagain;
#ifdef M_KICK_LOAD_BEFORE_CAS
	bit il;
#endif
#ifdef M_PREEMPT_STORE
	byte s_;
#endif

loop:
	/* runtime.c:server_loop(): set_state(RUNNABLE|TF_COND_WAIT), seq_cst.
	 * The previous round's bookkeeping, the server's own data, rides on
	 * it: a next_tid that was not consumed goes back in the queue. */
	atomic {
		if
		:: nx[s] != 0 ->
			if
			:: next_tid[s] != 0 ->
				next_tid[s] = 0;
				assert(!(rq[s] & BIT(nx[s] - 1)));
				rq[s] = rq[s] | BIT(nx[s] - 1)
			:: else -> cur[s] = nx[s]; kicked = 0
			fi;
			nx[s] = 0
		:: else
		fi;
#ifdef M_TAKE_BEFORE_STATE
		list = head[s];
		head[s] = 0
	};
	atomic {
#endif
		st[s] = RUNNABLE | CW
	};
	/* list.c:umcg_runnable_take(): seq_cst xchg; then handle_list() and
	 * resolve_current() on the server's own data, and the pick. */
#ifdef M_TAKE_LOAD_STORE
	list = head[s];
#endif
	atomic {
#if !defined(M_TAKE_LOAD_STORE) && !defined(M_TAKE_BEFORE_STATE)
		list = head[s];
#endif
#ifndef M_TAKE_BEFORE_STATE
		head[s] = 0;
#endif
		do
		:: list != 0 ->
			w = list - 1;
			list = nxt[w];
			onl[w]--;
			if :: cur[s] == w + 1 -> cur[s] = 0 :: else fi;
			assert(!(rq[s] & BIT(w)));
			rq[s] = rq[s] | BIT(w)
		:: else -> break
		od;
		/* TAKEN: every worker pushed before the xchg was on the list */
		for (i : NS .. T - 1) {
			assert(SRV(i) != s || onl[i] == 0)
		}
		i = 0;
		/* resolve_current(): not RUNNING, it shows up on the list */
		if :: cur[s] != 0 && !RUN(cur[s] - 1) -> cur[s] = 0 :: else fi;
		if
		:: cur[s] == 0 ->
			kicked = 0;
			if
			:: rq[s] == 0 -> timed = 0
			:: else ->
				/* the policy: any queued worker */
				w = NS;
				do
				:: rq[s] & BIT(w) -> break
				:: (rq[s] >> (w + 1 - NS)) != 0 -> w++
				od;
				rq[s] = rq[s] & ~BIT(w);
				nx[s] = w + 1;
				next_tid[s] = w + 1;
				timed = 1
			fi
		:: else
		fi;
		w = 0
	};
	if
	:: cur[s] != 0 ->
		if
		:: expired && !kicked ->
			kicked = 1;
			preempt(cur[s] - 1)
		:: else
		fi;
		timed = !kicked
	:: else
	fi;
	expired = 0;

	/* emulated.c:e_wait() of a server: 4 RUNNABLE -> RUNNABLE (failure is
	 * -EAGAIN), then 6-7 wake next_tid and consume it (wake_task()'s CAS on
	 * another word: it commutes with a wake of this server, so it rides on
	 * the same step), then 8 sleep. */
	atomic {
		if
		:: (st[s] & MASK) == RUNNABLE ->
			st[s] = RUNNABLE;
			if
			:: nx[s] != 0 && (st[nx[s] - 1] & MASK) == RUNNABLE ->
				st[nx[s] - 1] = RUNNING;
				RAN(s, 0);
#ifndef M_NEXT_TID_KEPT
				next_tid[s] = 0;
#endif
				eagain = 0
			:: nx[s] != 0 && (st[nx[s] - 1] & MASK) != RUNNABLE ->
				st[s] = RUNNING;
				eagain = 1
			:: nx[s] == 0 -> eagain = 0
			fi
		:: else -> eagain = 1
		fi;
		if :: !eagain -> sl[s] = 1 :: else fi
	};
	if
	:: !eagain ->
		if
		:: atomic { RUN(s) -> sl[s] = 0 }
		:: atomic {
			/* -ETIMEDOUT, then RUNNABLE -> RUNNING: only if nobody
			 * woke us meanwhile (the wake-up wins, section 5 rule 10) */
			timed && SLICE_OVER(s) && !RUN(s) -> st[s] = RUNNING; sl[s] = 0; expired = 1
		   }
		fi
	:: else -> eagain = 0
	fi;
	goto loop
}

/* ---- the worker ---------------------------------------------------------- */

proctype worker(byte w)
{
	byte s = SRV(w);
	bit cwq;
#ifdef M_PUSH_STORE
	byte h;
#endif

	/* registered: RUNNABLE, on the list (init), asleep in wait_running() */
	goto waiting;

rtu:
	/* emulated.c:return_to_user(): the seq_cst store in_lib = 0, then the
	 * seq_cst load of the state (3. of emulated.c's header comment). */
#ifndef M_INLIB_RELAXED
	in_lib[w] = 0;
#else
	atomic { DRAIN(w); sbv[w] = 0; sbf[w] = 1 };
#endif
rtu_load:
	atomic {
		if
		:: RUN(w) && (st[w] & PRE) ->
			/* in_lib = 1, then the CAS from the state seen: nothing
			 * else writes the state of a RUNNING|TF_PREEMPT worker */
			DRAIN(w);
			in_lib[w] = 1;
			sigp[w] = 0;
			st[w] = RUNNABLE;
			pw[w] = 1;
			goto pushing
		:: !RUN(w) && !((st[w] & MASK) == RUNNABLE && (st[w] & CW)) ->
			/* not RUNNING: wait until it is (in the C, a worker that
			 * detection made BLOCKED; the model has no detection and
			 * waits before it comes here, so only a mutant gets here) */
			DRAIN(w);
			in_lib[w] = 1;
			sigp[w] = 0;
			wt[w] = 1;
			goto waiting
		:: RUN(w) && !(st[w] & PRE) ->
			usr[w] = 1;
			RAN(s, 1);
			goto user
		:: (st[w] & MASK) == RUNNABLE && (st[w] & CW) ->
			/* only the window of a yield meets this (see there) */
			assert(0)
		fi
	};

pushing:
	PUSH(s, w);
	atomic { WAKE_SERVER(s); pw[w] = 0; DRAIN(w); wt[w] = 1 };
waiting:
	atomic { RUN(w) -> wt[w] = 0 };
	goto rtu;

user:
progress:
	do
	:: sigp[w] ->
		/* kick_handler(): in user code in_lib and in_block are clear;
		 * enter_lib() then return_to_user(), whose store of in_lib = 0
		 * finds it clear already */
		atomic { sigp[w] = 0; usr[w] = 0 };
		goto rtu_load
	:: !sigp[w] -> skip /* computes */
	:: /* yield, as runtime.c:yield_self(): RUNNABLE|TF_COND_WAIT */
		atomic { DRAIN(w); st[w] = RUNNABLE | CW; usr[w] = 0; pw[w] = 1 };
		/* the TF_COND_WAIT window: a kick signal sent before the store
		 * may land here, with in_lib clear */
		if
		:: sigp[w] ->
			atomic {
				sigp[w] = 0;
#ifndef M_NO_COND_WAIT_EXEMPT
				/* return_to_user(): RUNNABLE|TF_COND_WAIT, returns */
				skip
#else
				/* return_to_user() waits for RUNNING */
				in_lib[w] = 1;
				wt[w] = 1
#endif
			};
#ifdef M_NO_COND_WAIT_EXEMPT
			atomic { RUN(w) -> wt[w] = 0 }
#endif
		:: skip
		fi;
		/* emulated.c:e_wait() of a worker: enter_lib() (in_lib = 1), then
		 * section 5 rule 4, RUNNABLE -> RUNNABLE, clearing TF_COND_WAIT
		 * (between the two a kick finds RUNNABLE|TF_COND_WAIT: nothing to
		 * do either way) */
		atomic {
			DRAIN(w);
			in_lib[w] = 1;
			sigp[w] = 0;
			if
			:: (st[w] & MASK) == RUNNABLE -> st[w] = RUNNABLE; cwq = 1
			:: else -> pw[w] = 0; cwq = 0 /* -EAGAIN */
			fi
		};
		if
		:: cwq ->
			cwq = 0;
			/* 5: push, then wake the server */
#ifndef M_WAKE_BEFORE_PUSH
			goto pushing
#else
			atomic { WAKE_SERVER(s); pw[w] = 0 };
			PUSH(s, w);
			atomic { wt[w] = 1 };
			goto waiting
#endif
		:: else -> goto rtu
		fi
	:: !sigp[w] ->
		/* emulated.c:e_block_begin(): enter_lib(), RUNNING -> BLOCKED,
		 * in_block = 1 (while in_lib is set, a kick futex-wakes a thread
		 * that does not sleep: the stores ride on one step) */
		atomic {
			DRAIN(w);
			in_lib[w] = 1;
			sigp[w] = 0;
			usr[w] = 0;
			if
			:: RUN(w) ->
				st[w] = BLOCKED;
				in_block[w] = 1;
#ifndef M_BLOCK_NO_WAKE
				pw[w] = 1
#endif
			:: else -> in_lib[w] = 0; goto rtu_load /* -EAGAIN */
			fi
		};
		/* wake_server(), then in_lib = 0 (in_block set: a kick leaves it
		 * alone either way) */
		atomic {
#ifndef M_BLOCK_NO_WAKE
			WAKE_SERVER(s);
#endif
			pw[w] = 0;
			in_lib[w] = 0
		};
		/* asleep in the kernel for any time; then emulated.c:
		 * e_block_end(): in_lib = 1, in_block = 0, BLOCKED -> RUNNABLE */
		atomic {
			DRAIN(w);
			in_lib[w] = 1;
			in_block[w] = 0;
			if
			:: (st[w] & MASK) == BLOCKED -> st[w] = RUNNABLE; pw[w] = 1; cwq = 1
			:: else -> cwq = 0
			fi
		};
		if
		:: cwq -> cwq = 0; goto pushing
		:: else -> goto rtu
		fi
	od
}

/* ---- invariants ---------------------------------------------------------- */

#define QUEUED(w) (onl[w] != 0 || (rq[SRV(w)] & BIT(w)))
#define ALONE(w) (!RUN(w) || !QUEUED(w))
#define FOUND(w) (!wt[w] || RUN(w) || QUEUED(w) || nx[SRV(w)] == w + 1)
#define KICKED(w) (!usr[w] || !(st[w] & PRE) || sigp[w] || kp[SRV(w)])
#define OK(w) (ALONE(w) && FOUND(w) && KICKED(w))
/* the worker server s runs: the one it woke this round, else current */
#define RW(s) (nx[s] != 0 -> nx[s] : cur[s])
#define WAITS(s) (head[s] != 0 || (rq[s] != 0 && (RW(s) == 0 || !RUN(RW(s) - 1))))
#define HEARD(s, wakers) (!sl[s] || RUN(s) || !WAITS(s) || (wakers))

#if NW == 3 && NS == 1
#define INV (OK(1) && OK(2) && OK(3) && RUN(1) + RUN(2) + RUN(3) <= 1 && \
	     HEARD(0, pw[1] || pw[2] || pw[3]))
#elif NW == 2 && NS == 2
#define INV (OK(2) && OK(3) && HEARD(0, pw[2]) && HEARD(1, pw[3]))
#elif NW == 4 && NS == 2
#define INV (OK(2) && OK(3) && OK(4) && OK(5) && RUN(2) + RUN(4) <= 1 && \
	     RUN(3) + RUN(5) <= 1 && HEARD(0, pw[2] || pw[4]) && HEARD(1, pw[3] || pw[5]))
#else
#error "no invariant for this scope"
#endif

active proctype monitor()
{
end:	atomic { !INV -> assert(INV) }
}

init
{
	byte i;

	atomic {
		for (i : 0 .. NS - 1) {
			st[i] = RUNNING;
			run server(i)
		}
		for (i : NS .. T - 1) {
			/* e_register(): BLOCKED -> RUNNABLE, pushed, in_lib set */
			st[i] = RUNNABLE;
			in_lib[i] = 1;
			wt[i] = 1;
			nxt[i] = head[SRV(i)];
			head[SRV(i)] = i + 1;
			onl[i] = 1;
			run worker(i)
		}
		i = 0
	}
}
