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
 * Scope: -DNS=1 (workers W0 W1 W2 on server 0, plus a plain thread P) or
 * -DNS=2 (W0 on server 0, W1 on server 1). The script:
 *   W0  parks until go >= 1, then until go >= 2, then exits;
 *   W1  sets go = 1 and unparks W0 (with NS=1 a worker of W0's server:
 *       direct handoff or push, the policy's budget chosen freely), then
 *       computes (possibly for ever), yields, exits;
 *   W2  (NS=1) yields, computes (possibly for ever), exits;
 *   P   (NS=1) a plain thread: once go >= 1, sets go = 2 and unparks W0;
 *       with NS=2, W1 does round 2 after round 1 (from another server).
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
 * and the LTL claim no_stuck under weak fairness: never, from some point
 * on for ever, is a server asleep in an overtime wait while a worker
 * waits for it (the Dekker pair's promise).
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

inline push(ps, pw)
{
	atomic {
		assert(onl[pw] == 0 && !(rq[ps] & BIT(pw)) && !held[pw]);
		nxt[pw] = head[ps];
		head[ps] = pw + 1;
		onl[pw]++
	}
}

/* runtime.c:poke(): RUNNABLE -> RUNNING; the kick wakes a sleeper. */
inline poke(s)
{
	xition(s, RUNNABLE, RUNNING, ok)
}

/* A worker's umcg_wait() after it stored RUNNABLE|TF_COND_WAIT. */
inline worker_wait(w)
{
	xition(w, RUNNABLE, RUNNABLE, ok);
	assert(ok);
	push(SRV(w), w);
	atomic {
		if
		:: ntid[w] != 0 && (st[ntid[w] - 1] & MASK) == RUNNABLE ->
			st[ntid[w] - 1] = RUNNING;
			ntid[w] = 0
		:: else ->
			xition(SRV(w), RUNNABLE, RUNNING, ok)
		fi
	}
	drain(w);
	(st[w] & MASK) == RUNNING
}

/* ---- the worker ---------------------------------------------------------- */

/* A kick with TF_PREEMPT reaches user code (return_to_user()). */
inline preempted(w)
{
	atomic {
		(st[w] & MASK) == RUNNING && (st[w] & PRE);
		st[w] = RUNNABLE
	}
	push(SRV(w), w);
	poke(SRV(w));
	(st[w] & MASK) == RUNNING
}

/* User code: any number of steps, each a point where a kick may land. */
#define USER(w) do :: preempted(w) :: !(st[w] & PRE) -> break od
#define COMPUTE(w) do :: preempted(w) :: !(st[w] & PRE) -> break :: !(st[w] & PRE) -> skip od

/* runtime.c:yield_self() */
inline yield_self(w, ex)
{
	/* exiting is read by the server only once w is on its list */
	atomic { st[w] = RUNNABLE | CW; exiting[w] = ex };
	x = OWN_STAGED(w);
	if :: x != 0 -> ntid[w] = x :: else fi;
	in_sw[w] = 1;
	worker_wait(w);
	drain(w);
	in_sw[w] = 0;
	atomic { x = 0; ok = 0 }
}

/* runtime.c:umcg_park() */
inline park_self(w)
{
	atomic { if :: park[w] == PERMIT -> park[w] = NORMAL; ok = 1 :: else -> p = park[w]; ok = 0 fi };
	if
	:: ok
	:: else ->
		atomic { if :: p == NORMAL && park[w] == NORMAL -> park[w] = PARKING; ok = 1 :: else -> ok = 0 fi };
		if
		:: ok -> yield_self(w, 0)
		:: else -> atomic { if :: park[w] == PERMIT -> park[w] = NORMAL :: else fi }
		fi
	fi
	atomic { p = 0; ok = 0 }
}

/*
 * runtime.c:umcg_unpark(@w) called by worker @me (T for a plain thread).
 * @ho: the policy allows a direct handoff (handoff_ok()), a free choice.
 */
inline unpark(uw, ume)
{
	p = park[uw];
	do
	:: p == PERMIT -> break
	:: p == NORMAL ->
		atomic { if :: park[uw] == p -> park[uw] = PERMIT; ok = 1 :: else -> p = park[uw]; ok = 0 fi };
		if :: ok -> break :: else fi
	:: p == PARKING ->
#ifndef M_UNPARK_PARKING_STORE
		atomic { if :: park[uw] == p -> park[uw] = NORMAL; ok = 1 :: else -> p = park[uw]; ok = 0 fi };
#else
		park[uw] = NORMAL; ok = 1;
#endif
		if :: ok -> break :: else fi
	:: p == PARKED ->
		atomic { if :: park[uw] == p -> park[uw] = NORMAL; held[uw] = 0; ok = 1 :: else -> p = park[uw]; ok = 0 fi };
		if
		:: ok ->
			/* wake: we own @uw, RUNNABLE and on no list */
			if
			:: ume < T && SRV(ume) == SRV(uw) && OWN_STAGED(ume) == 0 ->
				if
				:: /* handoff_ok(): stage it */
					assert(onl[uw] == 0 && !(rq[SRV(uw)] & BIT(uw)) && !held[uw]);
#ifndef M_STAGED_STORE_RELAXED
					staged[ume] = uw + 1;
#else
					drain(ume);
					atomic { sbv[ume] = uw + 1; sbf[ume] = 1 };
#endif
#ifndef M_STAGED_NO_OT_CHECK
					if :: ot[SRV(uw)] -> drain(ume); poke(SRV(uw)) :: else fi;
#endif
					break
				:: skip /* budget spent, or no F_HANDOFF: push */
				fi
			:: else
			fi;
#ifndef M_UNPARK_OT_BEFORE_PUSH
			push(SRV(uw), uw);
			if
			:: ume >= T || SRV(ume) != SRV(uw) || ot[SRV(uw)] -> poke(SRV(uw))
			:: else
			fi;
#else
			ok = (ume >= T || SRV(ume) != SRV(uw) || ot[SRV(uw)]);
			push(SRV(uw), uw);
			if :: ok -> poke(SRV(uw)) :: else fi;
#endif
			break
		:: else
		fi
	od
	atomic { p = 0; ok = 0 }
}

/* runtime.c:worker_finish(), then the thread ends as a plain thread. */
inline finish(w)
{
#ifndef M_FINISH_NO_STAGED_PUSH
	atomic { x = OWN_STAGED(w); staged[w] = 0; DROP_BUF(w) };
	if :: x != 0 -> push(SRV(x - 1), x - 1) :: else fi;
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

	/* registration: BLOCKED -> RUNNABLE, push, wake the server, wait */
	st[w] = RUNNABLE;
	push(SRV(w), w);
	poke(SRV(w));
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
#if NS == 2
		USER(w);
		go = 2;
		unpark(W0, w);
#endif
		yield_self(w, 0);
		USER(w)
	:: w == W2 ->
		yield_self(w, 0);
		COMPUTE(w)
	fi;
	finish(w)
}

#if NS == 1
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
	atomic {
		w = 0; c = 0; x = 0; i = 0; ok = 0; handed = 0; sst = 0; in = 0; next = 0; timed = 0; exits = 0;
		st[s] = RUNNABLE | CW
	}
	atomic { list = head[s]; head[s] = 0 };
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
	/* umcg_wait(0, deadline) */
	drain(s);
	xition(s, RUNNABLE, RUNNABLE, ok);
	if
	:: !ok
	:: else ->
		if
		:: next != 0 ->
			atomic {
				if
				:: (st[next - 1] & MASK) == RUNNABLE -> st[next - 1] = RUNNING; ntid[s] = 0; ok = 1
				:: else -> st[s] = RUNNING; ok = 0
				fi
			}
		:: else
		fi;
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

active proctype monitor()
{
end:	atomic { !INV -> assert(INV) }
}

/* A worker waits for server s while it sleeps in an overtime wait. */
#define WAITS(s) (head[s] != 0 || rq[s] != 0 || (cur[s] != 0 && staged[cur[s] - 1] != 0))
#if NS == 1
#define STUCK (otw[0] && (st[0] & MASK) == RUNNABLE && WAITS(0))
#else
#define STUCK ((otw[0] && (st[0] & MASK) == RUNNABLE && WAITS(0)) || \
	       (otw[1] && (st[1] & MASK) == RUNNABLE && WAITS(1)))
#endif
ltl no_stuck { []<> !STUCK }

init
{
	byte i;

	atomic {
		for (i : 0 .. NS - 1) {
			st[i] = RUNNING;
			run server(i)
		}
		for (i : NS .. T - 1) {
			st[i] = BLOCKED;
			run worker(i)
		}
	}
}
