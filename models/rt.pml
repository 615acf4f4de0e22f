/* SPDX-License-Identifier: MIT */
/*
 * rt.pml - the runtime's protocols (src/runtime.c, the essay at its top):
 * the park/unpark word, the overtime Dekker pair, and the direct-handoff
 * staging with in_switch, checked by SPIN on top of the ABI.
 *
 * The ABI is taken as abi.pml checks it: umcg_wait(), the runnable-list
 * push and take, umcg_preempt() and a kick that reaches its worker. Its
 * steps keep the granularity of emulated.c where the runtime can see the
 * difference (push, then wake).
 *
 * Scope: -DNS=1 (workers W0 W1 W2 on server 0) or -DNS=2 (W0 on server
 * 0, W1 on server 1, plus a plain thread P). The script:
 *   W0  parks until go >= 1, then until go >= 2, then exits;
 *   W1  sets go = 1 and unparks W0 (with NS=1 a worker of W0's server:
 *       direct handoff or push, the policy's budget chosen freely; with
 *       NS=2 from another server), then computes (possibly for ever),
 *       yields, exits;
 *   W2  (NS=1) yields until go >= 1, sets go = 2 and unparks W0 (a second
 *       same-server unparker, which may stage too), computes (possibly for
 *       ever), exits;
 *   P   (NS=2) a plain thread: once go >= 1, sets go = 2 and unparks W0.
 * Every worker that finishes unregisters; the last one stops the servers
 * (umcg_rt_stop() pokes them), so every run ends unless a wake-up is lost.
 *
 * The idle backstop (IDLE_BACKSTOP_NS) and the overtime backstop are left
 * out: an idle or overtime server here sleeps with no deadline, so any
 * wake-up that only the 50 ms backstop would deliver is reported as lost.
 * The slice deadline is kept: its expiry is a free choice of the server.
 *
 * Variables and the C they stand for (runtime.c unless named):
 *   st[t]        struct umcg_task.state (1 RUNNING, 2 RUNNABLE, 3 BLOCKED;
 *                PRE 16 = UMCG_TF_PREEMPT, CW 32 = UMCG_TF_COND_WAIT)
 *   head[s]      servers[s].task.runnable_workers_ptr (worker id + 1)
 *   nxt[w]       worker's task.runnable_workers_ptr
 *   ntid[t]      task.next_tid (server: its pick; worker: its handoff)
 *   park[w]      struct umcg_worker.park (PARK_NORMAL .. PARK_PARKED)
 *   staged[w]    struct umcg_worker.staged (worker id + 1)
 *   in_sw[w]     struct umcg_worker.in_switch
 *   exiting[w]   struct umcg_worker.exiting
 *   started[w]   struct umcg_worker.started (server-private)
 *   ot[s]        struct server.overtime
 *   cur[s]       struct server.current
 *   rq[s]        the policy's queue of server s (policy_fifo.c), a set
 *   live         struct umcg_rt.live
 *   go           the user's condition that W0 parks on
 *   onl[w]       ghost: how many runnable lists hold w
 *   held[w]      ghost: w is PARKED and held aside by its server
 *   otw[s]       ghost: server s sleeps in an overtime wait
 *   sbf/sbv      store buffer of the weakened-store mutants (abi.pml)
 *
 * Abstracted away: timestamps and statistics, stealing and wake_idle()
 * (W0 stays on its home server), the policy's order (any queued worker
 * may be picked), priorities, blocking (abi.pml has it), signals in
 * workers other than the kick, fork, detach and join.
 *
 * Properties: assertions (each worker on at most one list, queue, staged
 * slot or held aside; a RUNNING worker on none; at most one RUNNING worker
 * per server), invalid end states (lost wake-up: the run cannot finish),
 * the invariant HEARD (the Dekker pair's promise as a safety property: a
 * server asleep in an overtime wait while a worker waits for it has a
 * poke on its way), and, for the liveness check only (-DLTL_NO_STUCK),
 * the LTL claim no_stuck under weak fairness: never, from some point on
 * for ever, is a server asleep in an overtime wait while a worker waits
 * for it.
 */

#ifndef NS
#define NS 1
#endif
#if NS == 1
#define NW 3
#else
#define NW 2
#endif
#define T (NS + NW)
#define W0 NS
#define W1 (NS + 1)
#define W2 (NS + 2)

#define RUNNING 1
#define RUNNABLE 2
#define BLOCKED 3
#define MASK 3
#define PRE 16
#define CW 32

#define NORMAL 0
#define PERMIT 1
#define PARKING 2
#define PARKED 3

#define SRV(w) (((w) - NS) % NS)
#define BIT(w) (1 << ((w) - NS))

#if defined(M_OT_STORE_RELAXED) || defined(M_STAGED_STORE_RELAXED)
#define WEAK
#endif

byte st[T];
byte head[NS];
byte nxt[T];
byte ntid[T];
byte park[T];
byte staged[T];
bit in_sw[T];
bit exiting[T];
bit started[T];
bit ot[NS];
byte cur[NS];
byte rq[NS];
byte live = NW;
byte go;
byte onl[T];
bit held[T];
bit otw[NS];
byte pd[T + 1];
bit sbf[T];
byte sbv[T];

/* ---- memory: the weakened-store mutants' buffer (see abi.pml) -------- */

/* The buffered word: overtime of a server; staged or in_switch of a
 * worker, whichever the mutant weakens. */
#define WBUF(t) if :: (t) < NS -> ot[t] = sbv[t] :: else -> staged[t] = sbv[t] fi
#ifdef M_STAGED_STORE_RELAXED
#define OWN_STAGED(w) (sbf[w] -> sbv[w] : staged[w])
#define DROP_BUF(w) sbf[w] = 0
#else
#define OWN_STAGED(w) staged[w]
#define DROP_BUF(w) skip
#endif

/* Without a weakened-store mutant the buffer stays empty: draining it is
 * no step at all, so it adds no interleaving point. */
inline drain(t)
{
#ifdef WEAK
	atomic { if :: sbf[t] -> WBUF(t); sbf[t] = 0 :: else fi }
#else
	skip
#endif
}

#define FLUSH(i) :: atomic { sbf[i] -> WBUF(i); sbf[i] = 0 }

#ifdef WEAK
active proctype flusher()
{
end:	do
	FLUSH(0)
	FLUSH(1)
	FLUSH(2)
	FLUSH(3)
	od
}
#endif

/* ---- the ABI, as abi.pml checks it ------------------------------------ */

inline xition(t, from, to, ok)
{
	atomic { if :: (st[t] & MASK) == from -> st[t] = to; ok = 1 :: else -> ok = 0 fi }
}

/* umcg__runnable_push() of worker @pw onto server @ps's list by thread
 * @me, who now owes @ps a poke or a handoff (pd). Its CAS loop is one
 * step: failed rounds change nothing, the successful CAS is the point. */
inline push(ps, pw, me)
{
	atomic {
		assert(onl[pw] == 0 && !(rq[ps] & BIT(pw)) && !held[pw]);
		nxt[pw] = head[ps];
		head[ps] = pw + 1;
		onl[pw]++;
		pd[me] = ps + 1
	}
}

/* runtime.c:poke() by thread @me: RUNNABLE -> RUNNING (the futex wake
 * that follows is the guard of the sleeper); @me's poke is no longer
 * pending. */
inline poke(s, me)
{
	atomic { xition(s, RUNNABLE, RUNNING, ok); pd[me] = 0 }
}

/*
 * The rest of a worker's umcg_wait() after yield_begin(): the push, then
 * the wake of next_tid or else of the server, and the sleep until RUNNING
 * (a guard), after which yield_self() stores in_switch = 0 in the same
 * step: only the server that runs the worker again looks at it, and it
 * does not before then.
 */
inline worker_wait(w)
{
	push(SRV(w), w, w);
	atomic {
		if
		:: ntid[w] != 0 && (st[ntid[w] - 1] & MASK) == RUNNABLE ->
			st[ntid[w] - 1] = RUNNING;
			ntid[w] = 0
		:: else ->
			xition(SRV(w), RUNNABLE, RUNNING, ok)
		fi;
		pd[w] = 0
	}
	drain(w);
	atomic { (st[w] & MASK) == RUNNING -> in_sw[w] = 0; ok = 0 }
}

/* ---- the worker ---------------------------------------------------------- */

/* A kick with TF_PREEMPT reaches user code (return_to_user()). */
inline preempted(w)
{
	atomic {
		(st[w] & MASK) == RUNNING && (st[w] & PRE);
		st[w] = RUNNABLE
	}
	push(SRV(w), w, w);
	poke(SRV(w), w);
	(st[w] & MASK) == RUNNING
}

/* User code: any number of steps, each a point where a kick may land. */
#define USER(w) do :: preempted(w) :: !(st[w] & PRE) -> break od
#define COMPUTE(w) do :: preempted(w) :: !(st[w] & PRE) -> break :: !(st[w] & PRE) -> skip od

/*
 * runtime.c:yield_self() up to the push of its umcg_wait(), as one step:
 * the store of RUNNABLE|TF_COND_WAIT, the store of exiting, the load of
 * staged, the store of next_tid, the store of in_switch = 1 and
 * umcg_wait()'s CAS that clears TF_COND_WAIT. No other thread can tell:
 * the server reads exiting only once w is on its list, and next_tid only
 * once it saw in_switch set; what it can see in between (TF_COND_WAIT set
 * without in_switch, or in_switch with next_tid still set) makes
 * resolve_current() pause and look again, and only w itself takes or
 * sets its staged before it is on the list. A kick needs RUNNING. So
 * TF_COND_WAIT of a worker never shows in this model (but for the mutant
 * in yield_self() that needs the window): it is the business of abi.pml.
 */
inline yield_begin(w, ex)
{
	st[w] = RUNNABLE;
	exiting[w] = ex;
	ntid[w] = OWN_STAGED(w);
	in_sw[w] = 1
}

inline yield_self(w, ex)
{
	drain(w);
#ifndef M_RESOLVE_LOADS_SWAPPED
	atomic { yield_begin(w, ex) };
#else
	/* The merge above is sound for the C's order of the server's loads
	 * (state, then in_switch) only. With them swapped, the window it
	 * hides matters, so this mutant keeps the C's three steps: the
	 * store of RUNNABLE|TF_COND_WAIT (with exiting and next_tid, which
	 * no other thread reads yet), the store of in_switch, and the CAS
	 * of umcg_wait() that clears TF_COND_WAIT (no other thread changes
	 * w's state meanwhile: it is on no list and nobody hands off to it). */
	atomic { st[w] = RUNNABLE | CW; exiting[w] = ex; ntid[w] = OWN_STAGED(w) };
	in_sw[w] = 1;
	st[w] = RUNNABLE;
#endif
	worker_wait(w)
}

/*
 * runtime.c:umcg_park(): its CASes (PERMIT -> NORMAL, else NORMAL ->
 * PARKING, else the permit that came in between) are one step. Only the
 * worker itself moves its word out of NORMAL or PERMIT to PARKING, so a
 * failed CAS of the C only sees an unparker's PERMIT, which the merged
 * step sees as an unpark just before it.
 */
inline park_self(w)
{
	drain(w);
	/* The CAS to PARKING and yield_begin() are one step too: between them
	 * an unparker only sees PARKING (and may store NORMAL), the server
	 * only sees w RUNNING, and neither touches what the other does. */
	atomic {
		if
		:: park[w] == PERMIT -> park[w] = NORMAL; ok = 0
		:: park[w] == NORMAL -> park[w] = PARKING; ok = 1; yield_begin(w, 0)
		:: else -> assert(0)
		fi
	};
	if
	:: ok -> worker_wait(w)
	:: else
	fi
}

/*
 * runtime.c:umcg_unpark(@w) called by worker @me (T for a plain thread).
 * Its load of the park word and each round of its CAS loop are one step:
 * a failed CAS changes nothing and reloads. The PARKING -> NORMAL store of
 * the mutant M_UNPARK_PARKING_STORE is a step of its own, after the load.
 * handoff_ok() (the policy allows a direct handoff) is a free choice.
 */
inline unpark(uw, ume)
{
	atomic {
		p = park[uw];
		if
		:: p == PERMIT -> ok = 0
		:: p == NORMAL -> park[uw] = PERMIT; ok = 0
#ifndef M_UNPARK_PARKING_STORE
		:: p == PARKING -> park[uw] = NORMAL; ok = 0
#else
		:: p == PARKING -> ok = 0
#endif
		:: p == PARKED -> park[uw] = NORMAL; held[uw] = 0; ok = 1
		fi
	};
#ifdef M_UNPARK_PARKING_STORE
	if :: p == PARKING -> park[uw] = NORMAL :: else fi;
#endif
	if
	:: ok ->
		/* wake: we own @uw, RUNNABLE and on no list. p = 1: push it */
		p = 1;
		if
		:: ume < T && SRV(ume) == SRV(uw) && OWN_STAGED(ume) == 0 ->
			if
			:: /* handoff_ok(): stage it */
				assert(onl[uw] == 0 && !(rq[SRV(uw)] & BIT(uw)) && !held[uw]);
#ifndef M_STAGED_STORE_RELAXED
				atomic { staged[ume] = uw + 1; pd[ume] = SRV(uw) + 1; p = 0 };
#else
				drain(ume);
				atomic { sbv[ume] = uw + 1; sbf[ume] = 1; pd[ume] = SRV(uw) + 1; p = 0 };
#endif
#ifndef M_STAGED_NO_OT_CHECK
				/* the load of overtime; a poke if set */
				atomic { ok = ot[SRV(uw)]; if :: !ok -> pd[ume] = 0 :: else fi };
				if :: ok -> drain(ume); poke(SRV(uw), ume) :: else fi
#else
				pd[ume] = 0
#endif
			:: skip /* budget spent, or no F_HANDOFF: push */
			fi
		:: else
		fi;
		if
		:: p ->
#ifndef M_UNPARK_OT_BEFORE_PUSH
			push(SRV(uw), uw, ume);
			atomic {
				ok = (ume >= T || SRV(ume) != SRV(uw) || ot[SRV(uw)]);
				if :: !ok -> pd[ume] = 0 :: else fi
			};
#else
			ok = (ume >= T || SRV(ume) != SRV(uw) || ot[SRV(uw)]);
			push(SRV(uw), uw, ume);
			if :: !ok -> pd[ume] = 0 :: else fi;
#endif
			if :: ok -> poke(SRV(uw), ume) :: else fi
		:: else
		fi
	:: else
	fi;
	atomic { p = 0; ok = 0 }
}

/* runtime.c:worker_finish(), then the thread ends as a plain thread. */
inline finish(w)
{
#ifndef M_FINISH_NO_STAGED_PUSH
	/* the push leaves a poke pending (pd) until the yield's wake */
	atomic { x = OWN_STAGED(w); staged[w] = 0; DROP_BUF(w) };
	if :: x != 0 -> push(SRV(x - 1), x - 1, w) :: else fi;
	x = 0;
#endif
	yield_self(w, 1);
	atomic {
		st[w] = 0; /* umcg_ctl(UMCG_CTL_UNREGISTER) */
		live--;
		if
		:: live == 0 ->
			/* umcg_rt_stop() -> stop_servers(): poke every server */
			for (x : 0 .. NS - 1) {
				if :: (st[x] & MASK) == RUNNABLE -> st[x] = RUNNING :: else fi
			}
		:: else
		fi
	}
}

proctype worker(byte w)
{
	byte x, p, r;
	bit ok;

	/* registered by init: RUNNABLE, on the list, waiting */
	(st[w] & MASK) == RUNNING;
	if
	:: w == W0 ->
		for (r : 1 .. 2) {
			do
			:: go >= r -> break
			:: else -> USER(w); park_self(w)
			od
		}
	:: w == W1 ->
		USER(w);
		go = 1;
		unpark(W0, w);
		COMPUTE(w);
		yield_self(w, 0);
		USER(w)
	:: w == W2 ->
		/* round 2, from a worker of the same server */
		do
		:: go >= 1 -> break
		:: else -> USER(w); yield_self(w, 0)
		od;
		go = 2;
		unpark(W0, w);
		COMPUTE(w)
	fi;
	finish(w)
}

#if NS == 2
/* A plain thread (no UMCG task): round 2 of W0's parking. */
active proctype plain()
{
	byte p;
	bit ok;

	go >= 1;
	go = 2;
	unpark(W0, T)
}
#endif

/* ---- the server ---------------------------------------------------------- */

proctype server(byte s)
{
	byte list, w, c, x, next, exits, i;
	bit ok, timed, handed;
	byte sst, in, seen;

loop:
	/* set_state(RUNNABLE|TF_COND_WAIT), then the take: one step. Between
	 * the two only pushes and pokes can act; a push commutes with the
	 * state store and a poke with the take, so every interleaving of the
	 * C has a twin with the pair adjacent. */
	atomic {
		w = 0; c = 0; x = 0; i = 0; ok = 0; handed = 0; sst = 0; in = 0; next = 0; timed = 0; exits = 0;
		st[s] = RUNNABLE | CW;
		list = head[s];
		head[s] = 0
	};
	/* resolve_current(): before the list */
	do
	:: cur[s] == 0 -> break
	:: else ->
		/* cur is the server's own: its reads and writes ride on the
		 * load of the state */
		atomic {
			c = cur[s] - 1;
			if
			:: (st[c] & MASK) == RUNNING -> c = 0; break
			:: else -> cur[s] = 0
			fi
		}
		if
		:: staged[c] == 0 -> c = 0; break
		:: else
		fi;
		do
		:: /* state, then in_switch: the opposite order of C's stores */
#ifndef M_RESOLVE_LOADS_SWAPPED
			sst = st[c];
			in = in_sw[c];
#else
			in = in_sw[c];
			sst = st[c];
#endif
			if
			:: !in && !(sst & CW) -> handed = 0; break
			:: in && ntid[c] == 0 -> handed = 1; break
			:: else /* server_pause() */
			fi
		od;
		atomic {
			x = staged[c];
			staged[c] = 0;
			if
			:: x == 0 -> break
			:: !handed ->
				assert(onl[x - 1] == 0 && !(rq[s] & BIT(x - 1)) && !held[x - 1] &&
				       (st[x - 1] & MASK) != RUNNING);
				rq[s] = rq[s] | BIT(x - 1);
				break
			:: else -> cur[s] = x; c = 0; x = 0; sst = 0; in = 0; handed = 0
			fi
		}
	od;
	/* handle_list() */
	atomic {
		c = 0; x = 0; sst = 0; in = 0; handed = 0;
		do
		:: list != 0 ->
			w = list - 1;
			list = nxt[w];
			onl[w]--;
			if :: cur[s] == w + 1 -> cur[s] = 0 :: else fi;
			if
			:: exiting[w] -> exits = exits | BIT(w)
			:: else ->
				if
				:: started[w] && park[w] == PARKING ->
#ifndef M_PARKED_STORE
					park[w] = PARKED; held[w] = 1
#else
					seen = seen | BIT(w)
#endif
				:: else ->
					started[w] = 1;
					assert(!(rq[s] & BIT(w)));
					rq[s] = rq[s] | BIT(w)
				fi
			fi
		:: else -> w = 0; break
		od
	}
#ifdef M_PARKED_STORE
	/* handle_list(): PARKING -> PARKED as the load above and a store */
	for (i : NS .. T - 1) {
		if :: seen & BIT(i) -> park[i] = PARKED; held[i] = 1 :: else fi
	}
	seen = 0;
#endif
	/* release_exits(): wake_nowait() of each */
	if
	:: exits != 0 ->
		for (i : NS .. T - 1) {
			if
			:: exits & BIT(i) -> (st[i] & MASK) == RUNNABLE; st[i] = RUNNING
			:: else
			fi
		}
		goto loop
	:: else
	fi;
	/* The pick. cur, rq and ntid[s] are the server's own, so reading and
	 * writing them adds no interleaving point: they ride on the one
	 * shared access of the step (here the load of live). */
	atomic {
		next = 0;
		if
		:: cur[s] == 0 && live == 0 -> goto stopping
		:: cur[s] == 0 && live != 0 && rq[s] != 0 ->
			w = NS;
			do
			:: rq[s] & BIT(w) -> break
			:: (rq[s] >> (w + 1 - NS)) != 0 -> w++
			od;
			rq[s] = rq[s] & ~BIT(w);
			next = w + 1;
			ntid[s] = next;
			w = 0
		:: else
		fi
	}
	if
	:: atomic { cur[s] != 0 -> ot[s] = 0; timed = 1 /* the slice is not over */ }
	:: atomic { cur[s] != 0 -> ot[s] = 0; c = cur[s] - 1 };
		/* check_slice(): over; overtime_ok()? */
#ifndef M_OT_STORE_RELAXED
		ot[s] = 1;
#else
		drain(s);
		atomic { sbv[s] = 1; sbf[s] = 1 };
#endif
		if
		:: atomic {
			rq[s] == 0 && head[s] == 0 &&
#ifndef M_OT_NO_STAGED_CHECK
			staged[c] == 0 &&
#endif
			1 ->
			timed = 0;
			otw[s] = 1
		   }
		:: else ->
			drain(s);
			ot[s] = 0;
			atomic { if :: (st[c] & MASK) == RUNNING -> st[c] = st[c] | PRE :: else fi };
			timed = 1
		fi;
		c = 0
	:: atomic { cur[s] == 0 -> ot[s] = 0; timed = (next != 0) }
	fi;
	/* umcg_wait(0, deadline): the CAS that clears TF_COND_WAIT and the
	 * wake of next_tid are one step (a poke's xition ignores the flag,
	 * so a poke between them acts as one just after both) */
	drain(s);
	atomic {
		xition(s, RUNNABLE, RUNNABLE, ok);
		if
		:: ok && next != 0 ->
			if
			:: (st[next - 1] & MASK) == RUNNABLE -> st[next - 1] = RUNNING; ntid[s] = 0
			:: else -> st[s] = RUNNING; ok = 0
			fi
		:: else
		fi
	};
	if
	:: !ok
	:: else ->
		if
		:: ok ->
			if
			:: (st[s] & MASK) == RUNNING
			:: timed -> xition(s, RUNNABLE, RUNNING, ok)
			fi
		:: else
		fi
	fi;
	atomic {
		otw[s] = 0;
		timed = 0;
		ok = 0;
		if
		:: next != 0 ->
			if
			:: ntid[s] != 0 -> ntid[s] = 0; rq[s] = rq[s] | BIT(next - 1)
			:: else -> cur[s] = next
			fi
		:: else
		fi;
		next = 0
	};
	goto loop;
stopping:
	st[s] = RUNNING;
stopped:
	skip
}

/* ---- properties -------------------------------------------------------- */

#define RUN(w) ((st[w] & MASK) == RUNNING)
/* staged is checked where it is set and taken (a slot whose handoff
 * happened stays set, stale, until the server takes it) */
#define WHERE(w) (onl[w] + ((rq[SRV(w)] & BIT(w)) != 0) + held[w])
#define OK(w) (WHERE(w) <= 1 && (!RUN(w) || onl[w] + ((rq[SRV(w)] & BIT(w)) != 0) + held[w] == 0))
#if NS == 1
/* a released exiting worker runs on as a plain thread (runtime.c "Worker exit") */
#define RUNX(w) (RUN(w) && !exiting[w])
#define INV (OK(1) && OK(2) && OK(3) && RUNX(1) + RUNX(2) + RUNX(3) <= 1)
#else
#define INV (OK(2) && OK(3))
#endif

/*
 * HEARD: a server asleep in an overtime wait (no deadline) while a worker
 * waits for it (list head, policy queue, or a handoff staged on its
 * current worker) has a poke on its way: some thread pushed or staged for
 * it and has not yet made its poke-or-not decision (pd). This is the
 * promise of the overtime Dekker pair, as a safety property: without it
 * only the 50 ms backstop would wake the server.
 */
#define WAITS(s) (head[s] != 0 || rq[s] != 0 || (cur[s] != 0 && staged[cur[s] - 1] != 0))
#define STUCK(s) (otw[s] && (st[s] & MASK) == RUNNABLE && WAITS(s))
#if NS == 1
#define HEARD (!STUCK(0) || pd[1] == 1 || pd[2] == 1 || pd[3] == 1)
#else
#define HEARD ((!STUCK(0) || pd[2] == 1 || pd[3] == 1 || pd[4] == 1) && (!STUCK(1) || pd[2] == 2 || pd[3] == 2 || pd[4] == 2))
#endif

active proctype monitor()
{
end:	atomic { !(INV && HEARD) -> assert(INV && HEARD) }
}

#ifdef LTL_NO_STUCK
/* The same promise under weak fairness: never, from some point on, for
 * ever, a server asleep in an overtime wait while a worker waits for it. */
#if NS == 1
ltl no_stuck { []<> !STUCK(0) }
#else
ltl no_stuck { []<> !(STUCK(0) || STUCK(1)) }
#endif
#endif

init
{
	byte i;

	atomic {
		for (i : 0 .. NS - 1) {
			st[i] = RUNNING;
			run server(i)
		}
		for (i : NS .. T - 1) {
			/* registration (umcg_ctl() in worker_main()): BLOCKED ->
			 * RUNNABLE, pushed, waiting; the server starts with
			 * them on its list, so no wake is owed */
			st[i] = RUNNABLE;
			nxt[i] = head[SRV(i)];
			head[SRV(i)] = i + 1;
			onl[i] = 1;
			run worker(i)
		}
		i = 0
	}
}
