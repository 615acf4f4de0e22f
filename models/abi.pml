/* SPDX-License-Identifier: MIT */
/*
 * abi.pml - the UMCG ABI state machine as the futex emulation implements
 * it (src/emulated.c, src/list.c, src/backend.h, src/backend.c), checked
 * by SPIN. Run it through models/check.sh; models/README.md says how.
 *
 * Scope: NS servers and NW workers (-DNS=1 -DNW=3 or -DNS=2 -DNW=2).
 * Worker w is hosted by server (w - NS) % NS for good (no stealing here:
 * that is the runtime's business, model rt.pml). Task ids: servers are
 * 0 .. NS-1, workers NS .. NS+NW-1.
 *
 * The servers run the loop of ABI section 7 (the runtime's server_loop()
 * reduced to what the ABI sees): store RUNNABLE|TF_COND_WAIT, take the
 * list, queue what it held, pick any queued worker (every policy),
 * name it in next_tid, umcg_wait() with a slice deadline; on -ETIMEDOUT
 * preempt the running worker with umcg_preempt(): TF_PREEMPT CAS, then
 * umcg_kick(). A kick is sent once per slice and the server then sleeps
 * with no deadline, so a kick that is lost shows as a server that never
 * runs again (the runtime re-kicks a slice later and would only hide it).
 * The workers forever compute, yield the way the runtime does
 * (RUNNABLE|TF_COND_WAIT, umcg_wait()) or block (umcg_block_begin/_end).
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
 *   sigp[t]        emulated.c: umcg__etask.kick_pending plus the queued
 *                  KICK_SIGNAL (e_kick() -> take_kick() in kick_handler())
 *   fw[t]          "thread t sleeps in FUTEX_WAIT on &st[t]" (the futex
 *                  in wait_running(); umcg__futex_wake() clears it)
 *   rq[s], cur[s]  the server's policy queue (bit per worker) and the
 *                  worker it last ran (runtime.c: server.current)
 *   onl[w]         ghost: how many runnable lists hold w
 *   sbf[t], sbv[t] a one-entry store buffer of thread t, used only by the
 *                  mutants that weaken a seq_cst store (see mutate.sh)
 *
 * Memory order: SPIN interleaves, which is sequential consistency. That is
 * what the C code asks for: every access in the two Dekker pairs of
 * emulated.c (section 2 and 3 of its header comment) is seq_cst. A mutant
 * that weakens one of those stores puts it in the store buffer instead;
 * the buffer is flushed by the process `flusher` at any moment, before
 * the owner's next store or RMW on the same word, and before it sleeps
 * (a system call is a full barrier). Loads by the owner see its buffered
 * value; loads by others see memory. That is the store->load reordering
 * that a missing fence allows on x86 and on ARM.
 *
 * Abstracted away: registration checks and errors, timestamps, user bits
 * 16-31, CPU affinity, unregistration and exit, the registry and tid
 * reuse, a worker's own next_tid, signals on servers (the runtime's block
 * them all), and a kick signal landing inside library code: its handler
 * sees in_lib set and returns, so it is delivered here only in user code,
 * where the worker takes it at once (a pending unblocked signal is
 * delivered on the next return to user space).
 *
 * Properties: assertions (each worker on at most one list or queue; a
 * RUNNING worker on none; at most one RUNNING worker per server), invalid
 * end states (every thread asleep = lost wake-up), and with -DNP the
 * absence of non-progress cycles under weak fairness (progress = a worker
 * enters user code).
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

#define EAGAIN 1
#define ETIMEDOUT 2

#define SRV(w) (((w) - NS) % NS)
#define BIT(w) (1 << ((w) - NS))

byte st[T];
byte head[NS];
byte nxt[T];
byte next_tid[NS];
bit fw[T];
bit in_lib[T];
bit in_block[T];
bit sigp[T];
byte rq[NS];
byte cur[NS];
byte onl[T];
bit sbf[T];
byte sbv[T];

/* ---- memory: the store buffer of the weakened-store mutants ---------- */

/* The buffered word of thread t: st[t] for a server, in_lib[t] for a
 * worker (the two stores that begin a Dekker pair in emulated.c). */
#define BUFWORD(t) if :: (t) < NS -> st[t] = sbv[t] :: else -> in_lib[t] = sbv[t] fi

/* Without a weakened-store mutant the buffer stays empty: draining it is
 * no step at all, so it adds no interleaving point. */
inline drain(t)
{
#ifdef WEAK
	atomic { if :: sbf[t] -> BUFWORD(t); sbf[t] = 0 :: else fi }
#else
	skip
#endif
}

#define FLUSH(i) :: atomic { sbf[i] -> BUFWORD(i); sbf[i] = 0 }

#ifdef WEAK
active proctype flusher()
{
end:	do
	FLUSH(0)
	FLUSH(1)
	FLUSH(2)
	FLUSH(3)
#if T > 4
	FLUSH(4)
	FLUSH(5)
#endif
	od
}
#endif

/* ---- ABI primitives ---------------------------------------------------- */

/* emulated.c:xition(): CAS on (state & MASK) == from, flags cleared. */
inline xition(t, from, to, ok)
{
	atomic { if :: (st[t] & MASK) == from -> st[t] = to; ok = 1 :: else -> ok = 0 fi }
}

/* emulated.c:wake_task(): RUNNABLE -> RUNNING, then FUTEX_WAKE. */
inline wake_task(t, ok)
{
	xition(t, RUNNABLE, RUNNING, ok);
	if
	:: ok ->
#ifndef M_WAKE_NO_FUTEX_WAKE
		fw[t] = 0
#else
		skip
#endif
	:: else
	fi
}

/* backend.h:umcg__runnable_push(): CAS loop on the head. */
inline push(s, w)
{
	assert(onl[w] == 0 && !(rq[s] & BIT(w)));
	do
	:: h = head[s];
		nxt[w] = h;
#ifndef M_PUSH_STORE
		atomic { if :: head[s] == h -> head[s] = w + 1; onl[w]++; h = 0; break :: else fi }
#else
		atomic { head[s] = w + 1; onl[w]++; break }
#endif
	od
}

/* emulated.c:wait_running() for a thread of task t. */
inline wait_running(t, timed, ret)
{
	ret = 0;
	do
	:: s_ = st[t];
		if
		:: (s_ & MASK) == RUNNING -> s_ = 0; break
		:: else ->
			atomic { if :: st[t] == s_ -> fw[t] = 1 :: else fi };
			if
			:: fw[t] == 0
			:: timed -> atomic { fw[t] = 0; ret = ETIMEDOUT; s_ = 0 }; break
			fi
		fi
	od
}

/* backend.c:umcg_preempt() then emulated.c:e_kick(), on worker t. */
inline preempt(t)
{
#ifdef M_KICK_LOAD_BEFORE_CAS
	il = in_lib[t];
#endif
#ifndef M_PREEMPT_STORE
	atomic { if :: (st[t] & MASK) == RUNNING -> st[t] = st[t] | PRE; ok = 1 :: else -> ok = 0 fi };
#else
	s_ = st[t];
	if :: (s_ & MASK) == RUNNING -> st[t] = s_ | PRE; ok = 1 :: else -> ok = 0 fi;
#endif
	if
	:: ok ->
		if
#ifndef M_KICK_LOAD_BEFORE_CAS
		:: in_lib[t] -> fw[t] = 0
#else
		:: il -> fw[t] = 0
#endif
		:: else ->
			if
			:: in_block[t]
			:: else ->
				s_ = st[t];
				if
				:: ((s_ & MASK) == RUNNING && (s_ & PRE)) ||
				   ((s_ & MASK) != RUNNING && !((s_ & MASK) == RUNNABLE && (s_ & CW))) ->
					sigp[t] = 1
				:: else
				fi
			fi
		fi
	:: else
	fi
}

/* emulated.c:wake_server(): wake_task() whose failure is fine. */
#define WAKE_SERVER xition(s, RUNNABLE, RUNNING, ok); if :: ok -> fw[s] = 0 :: else fi

/* ---- the server ---------------------------------------------------------- */

proctype server(byte s)
{
	byte list, w, next, s_, h, ret;
	bit ok, timed, kicked, expired;
#ifdef M_KICK_LOAD_BEFORE_CAS
	bit il;
#endif

loop:
	/* runtime.c:set_state(RUNNABLE|TF_COND_WAIT), seq_cst */
#ifdef M_TAKE_BEFORE_STATE
	atomic { list = head[s]; head[s] = 0 };
#endif
	st[s] = RUNNABLE | CW;
	/* list.c:umcg_runnable_take(): seq_cst xchg */
#if defined(M_TAKE_LOAD_STORE)
	list = head[s];
	head[s] = 0;
#elif !defined(M_TAKE_BEFORE_STATE)
	atomic { list = head[s]; head[s] = 0 }
#endif
	atomic {
		do
		:: list != 0 ->
			w = list - 1;
			list = nxt[w];
			onl[w]--;
			if :: cur[s] == w + 1 -> cur[s] = 0 :: else fi;
			assert(!(rq[s] & BIT(w)));
			rq[s] = rq[s] | BIT(w)
		:: else -> w = 0; break
		od;
		/* resolve_current(): not RUNNING, it shows up on the list */
		if :: cur[s] != 0 && (st[cur[s] - 1] & MASK) != RUNNING -> cur[s] = 0
		   :: else fi
	}
	next = 0;
	if
	:: cur[s] != 0 ->
		if
		:: expired && !kicked ->
			kicked = 1;
			preempt(cur[s] - 1)
		:: else
		fi;
		timed = !kicked
	:: else ->
		kicked = 0;
		if
		:: rq[s] == 0 -> timed = 0
		:: else ->
			/* the policy: any queued worker */
			atomic {
				w = NS;
				do
				:: rq[s] & BIT(w) -> break
				:: (rq[s] >> (w + 1 - NS)) != 0 -> w++
				od;
				rq[s] = rq[s] & ~BIT(w);
				next = w + 1;
				next_tid[s] = next;
				timed = 1
			}
		fi
	fi;

	/* emulated.c:e_wait() of a server */
	drain(s);
	/* 4: RUNNABLE -> RUNNABLE; failure is -EAGAIN */
	xition(s, RUNNABLE, RUNNABLE, ok);
#ifdef M_WAIT_NO_EAGAIN
	ok = 1;
#endif
	if
	:: !ok -> ret = EAGAIN
	:: else ->
		ret = 0;
		if
		:: next != 0 ->
			/* 6, 7 */
			wake_task(next - 1, ok);
			if
			:: !ok -> xition(s, RUNNABLE, RUNNING, ok); ret = EAGAIN
			:: else ->
#ifndef M_NEXT_TID_KEPT
				next_tid[s] = 0
#else
				skip
#endif
			fi
		:: else
		fi;
		if
		:: ret == 0 ->
			/* 8 */
			wait_running(s, timed, ret);
			if
			:: ret == ETIMEDOUT ->
				xition(s, RUNNABLE, RUNNING, ok);
				if :: !ok -> ret = 0 :: else fi
			:: else
			fi
		:: else
		fi
	fi;
	/* runtime.c:server_loop(): an unconsumed next_tid goes back */
	if
	:: next != 0 ->
		if
		:: next_tid[s] != 0 -> next_tid[s] = 0; rq[s] = rq[s] | BIT(next - 1)
		:: else -> cur[s] = next; kicked = 0
		fi
	:: else
	fi;
	expired = (ret == ETIMEDOUT);
	atomic { ret = 0; ok = 0; s_ = 0; h = 0; w = 0; next = 0; timed = 0 };
	goto loop
}

/* ---- the worker ---------------------------------------------------------- */

/* emulated.c:return_to_user() of worker w. */
inline return_to_user(w)
{
	do
	:: /* seq_cst store of in_lib = 0, then seq_cst load of state */
#ifndef M_INLIB_RELAXED
		in_lib[w] = 0;
#else
		drain(w);
		atomic { sbv[w] = 0; sbf[w] = 1 };
#endif
		s_ = st[w];
		if
		:: (s_ & MASK) == RUNNING && (s_ & PRE) ->
			drain(w);
			in_lib[w] = 1;
			atomic { if :: st[w] == s_ -> st[w] = RUNNABLE; ok = 1 :: else -> ok = 0 fi };
			if
			:: ok -> push(s, w); WAKE_SERVER;
				drain(w); wait_running(w, 0, ret)
			:: else
			fi
		:: (s_ & MASK) != RUNNING &&
#ifndef M_NO_COND_WAIT_EXEMPT
		   !((s_ & MASK) == RUNNABLE && (s_ & CW)) ->
#else
		   1 ->
#endif
			drain(w);
			in_lib[w] = 1;
			wait_running(w, 0, ret)
		:: else -> break
		fi
	od
}


proctype worker(byte w)
{
	byte s = SRV(w), s_, h, ret;
	bit ok;

	/* emulated.c:e_register(): BLOCKED -> RUNNABLE, push, wake, wait */
	st[w] = BLOCKED;
	in_lib[w] = 1;
	xition(w, BLOCKED, RUNNABLE, ok);
	push(s, w);
	WAKE_SERVER;
	return_to_user(w);
user:
	atomic { s_ = 0; h = 0; ret = 0; ok = 0 };
progress:
	skip;
compute:
	do
	:: sigp[w] ->
		/* kick_handler(): in user code in_lib and in_block are 0 */
		sigp[w] = 0;
		in_lib[w] = 1;
		return_to_user(w);
		goto user
	:: else ->
		if
		:: skip /* computes */
		:: /* yield, as runtime.c:yield_self() */
			st[w] = RUNNABLE | CW;
			if
			:: sigp[w] -> sigp[w] = 0; in_lib[w] = 1; return_to_user(w)
			:: else
			fi;
			/* emulated.c:e_wait() of a worker */
			drain(w);
			in_lib[w] = 1;
			xition(w, RUNNABLE, RUNNABLE, ok);
			if
			:: ok ->
				/* 5: push, then wake the server */
#ifndef M_WAKE_BEFORE_PUSH
				push(s, w);
				WAKE_SERVER;
#else
				WAKE_SERVER;
				push(s, w);
#endif
				drain(w);
				wait_running(w, 0, ret)
			:: else
			fi;
			return_to_user(w);
			goto user
		:: /* emulated.c:e_block_begin() */
			in_lib[w] = 1;
			xition(w, RUNNING, BLOCKED, ok);
			if
			:: !ok -> in_lib[w] = 0; goto user
			:: else
			fi;
			in_block[w] = 1;
#ifndef M_BLOCK_NO_WAKE
			WAKE_SERVER;
#endif
			in_lib[w] = 0;
			/* asleep in the kernel; then emulated.c:e_block_end() */
			in_lib[w] = 1;
			in_block[w] = 0;
			xition(w, BLOCKED, RUNNABLE, ok);
			if
			:: ok -> push(s, w); WAKE_SERVER
			:: else
			fi;
			return_to_user(w);
			goto user
		fi
	od
}

/* ---- invariants ---------------------------------------------------------- */

#define RUN(w) ((st[w] & MASK) == RUNNING)
#define QUEUED(w) (onl[w] != 0 || (rq[SRV(w)] & BIT(w)))
#define ALONE(w) (!RUN(w) || !QUEUED(w))
#if NW == 3 && NS == 1
#define INV (ALONE(1) && ALONE(2) && ALONE(3) && RUN(1) + RUN(2) + RUN(3) <= 1)
#elif NW == 2 && NS == 2
#define INV (ALONE(2) && ALONE(3))
#elif NW == 4 && NS == 2
#define INV (ALONE(2) && ALONE(3) && ALONE(4) && ALONE(5) && RUN(2) + RUN(4) <= 1 && \
	     RUN(3) + RUN(5) <= 1)
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
			run worker(i)
		}
	}
}
