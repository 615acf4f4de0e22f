/* SPDX-License-Identifier: MIT */
/*
 * emulated.c - the UMCG ABI in user space, on futexes.
 *
 * doc/umcg-abi.md §4-§8 are implemented here on the very struct umcg_task
 * the kernel would use: the same states, the same compare-and-swap
 * transitions, the same pushes on the runnable list, the same errors in the
 * same order. What the kernel gets from the scheduler, this file builds from
 * three pieces:
 *
 * 1. Sleeping and waking. A task sleeps in wait_running() with a futex on
 *    its own `state` word, until (state & MASK) == RUNNING. Whoever makes it
 *    RUNNING does so with a CAS on that word and then FUTEX_WAKEs it. The
 *    futex compares the word it sleeps on, so a CAS that lands between the
 *    sleeper's load and its FUTEX_WAIT makes the wait return at once: no
 *    wakeup is lost. The woken task's acquire load of `state` pairs with the
 *    waker's seq_cst CAS, so it sees what the waker wrote before.
 *
 * 2. The lost-wakeup window of a server. A server stores
 *    RUNNABLE|TF_COND_WAIT, takes its list (seq_cst xchg), and calls
 *    umcg_wait(), whose first transition is a CAS RUNNABLE -> RUNNABLE. A
 *    worker pushes itself (seq_cst CAS on the list head) and then CASes
 *    the server RUNNABLE -> RUNNING. All four are seq_cst, so either the
 *    server's take sees the push, or the worker's CAS sees RUNNABLE and
 *    makes the server RUNNING, in which case the server's transition fails
 *    and umcg_wait() returns -EAGAIN. Never both misses.
 *
 * 3. Return to user and kicks. The kernel checks a task's state on every
 *    return to user space; the emulation does it on the way out of each of
 *    its own calls (return_to_user()) and in the handler of the kick
 *    signal. `in_lib` says "this thread is inside the library and will run
 *    return_to_user() before leaving". umcg_kick() reads it: if set, a
 *    futex wake is enough (the target re-reads its state); if clear, and
 *    the target's state asks for action, it sends the kick signal.
 *    The race that matters is a kick whose TF_PREEMPT CAS lands while the
 *    target is leaving the library: the target clears `in_lib` and then
 *    reads its state; the kicker sets TF_PREEMPT and then reads `in_lib`.
 *    All four accesses are seq_cst (a Dekker pair), so the target sees the
 *    flag or the kicker sees in_lib == 0 and signals. A handler that finds
 *    `in_lib` set does nothing: the library code it interrupted will run
 *    return_to_user() itself.
 *
 * The kick signal is SIGURG, a standard signal, and not a real-time one.
 * A real-time signal is queued: each takes an entry counted against
 * RLIMIT_SIGPENDING, which is per user, so any process of the same user
 * that fills it (a program with a blocked signal it keeps queueing) makes
 * tgkill() fail with EAGAIN and preemption stop, for no fault of ours. A
 * standard signal needs no entry: over the limit the kernel still sets it
 * pending and only drops its siginfo, so tgkill() cannot be refused for a
 * live thread. SIGURG because its default action is to be ignored (a stray
 * one harms no thread that has no handler) and programs rarely use it (out
 * of band socket data), the choice Go made for the same job. The price is
 * that standard signals coalesce: two kicks sent before the first is taken
 * are delivered once, and a delivery may come without siginfo. So a kick
 * does not count signals: the kicker sets `kick_pending` (release, after
 * the Dekker reads above) and sends the signal; the handler exchanges it
 * with 0 (acquire) and, if it was set, runs return_to_user(), which looks
 * at the state as it is then and so serves every kick that came before.
 * A delivery that served no kick, or whose siginfo names another sender,
 * is the program's and goes on to the handler that was installed before.
 *
 * Cancellation. The handler runs inside a worker's user code, which may be
 * cancelled asynchronously (PTHREAD_CANCEL_ASYNCHRONOUS is legal in a pure
 * compute loop), and it may sleep in return_to_user() for as long as the
 * server runs others. A cancellation delivered there would unwind out of
 * the middle of a transition (the worker pushed, say, and then pushed
 * again by its exit path). glibc delivers asynchronous cancellation with
 * its internal signal 32 (SIGCANCEL), so the handler's sa_mask holds it,
 * and the handler blocks it itself around return_to_user() for callers
 * other than the kernel (no_cancel()): the cancellation waits until the
 * handler returns to the interrupted code, where the worker is RUNNING and
 * owns nothing of the library's.
 *
 * Blocking: the emulation cannot see a worker fall asleep in the kernel, so
 * umcg_block_begin()/umcg_block_end() say so. While `in_block` is set the
 * worker is BLOCKED and "in the kernel": kicks leave it alone, and
 * return_to_user() runs at umcg_block_end().
 *
 * Affinity: a worker takes its server's CPU set when it registers and
 * whenever its server_tid changes, so a handoff between a server and its
 * worker is a same-CPU wake-up.
 *
 * Everything here that can run in the kick handler (return_to_user() and
 * what it calls) is async-signal-safe: atomics, futex, clock_gettime,
 * sched_setaffinity, and thread-local data of the initial-exec model.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <ucontext.h>
#include <unistd.h>

#include "atomics.h"
#include "backend.h"
#include "preload.h"
#include "registry.h"
#include "syscall.h"
#include "trace.h"

#define KICK_SIGNAL SIGURG
/* glibc's signal for asynchronous cancellation (see the header comment). */
#define CANCEL_SIGNAL 32
/* The kernel's sigset_t, in words. */
#define KSIGSET_WORDS ((_NSIG - 1) / (8 * sizeof(unsigned long)))

static __thread struct umcg__etask *self_task __attribute__((tls_model("initial-exec")));

/*
 * umcg__intercept - 1 in a thread registered as a worker with this backend
 * while it runs the program's code, else 0. Written and read only by the
 * thread itself (no barrier): set at registration, cleared at
 * unregistration and in a fork child; umcg_block_begin() saves and clears
 * it, umcg_block_end() puts the saved value back; the wrappers of io.c
 * clear it for their duration (ENTER_WRAPPER). libumcg-preload.so's entry
 * points test it as their one question "does this call need announcing?",
 * so a call the library itself makes from inside a wrapper or a region goes
 * straight to libc.
 */
__thread int umcg__intercept;

static void reclaim(struct umcg__etask *e);
static void enter_lib(struct umcg__etask *e);
static void serve_reclaims(struct umcg__etask *srv);
static void watch_poke(void);
static int e_block_begin(void);
static int e_block_end(void);
static void slice_run_start(struct umcg__etask *e);

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static int init_err;
static pthread_key_t exit_key;
static struct sigaction prev_action;

/* ---- state transitions ------------------------------------------------ */

static uint64_t now_ns(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/*
 * xition() - CAS @t from state @from to state @to, as the kernel does: only
 * if (state & MASK) == @from; the user bits 16-31 are kept and TF_PREEMPT /
 * TF_COND_WAIT are cleared. seq_cst: see 2. and 3. in the header comment.
 */
static bool xition(struct umcg_task *t, uint32_t from, uint32_t to)
{
	uint32_t old = umcg__load(&t->state, umcg__relaxed);
	uint32_t val;

	do {
		if ((old & UMCG_TASK_MASK) != from)
			return false;
		val = (old & ~(UMCG_TASK_MASK | UMCG_TF_MASK)) | to;
	} while (!umcg__cas(&t->state, &old, val, umcg__seq_cst));
	return true;
}

/* Wake a task: RUNNABLE -> RUNNING, then wake its thread. */
static int wake_task(struct umcg_task *t)
{
	if (!xition(t, UMCG_TASK_RUNNABLE, UMCG_TASK_RUNNING))
		return -EAGAIN;
	UMCG_TRACE2(wake, (uintptr_t)t, self_task ? self_task->tid : -1);
	umcg__futex_wake(&t->state);
	return 0;
}

/*
 * The ABI block of a record another thread looked up. A record can be
 * recycled for a new registration while a stale lookup still reads it
 * (registry.h), so `ut` is read and written as a relaxed atomic: the reader
 * gets the old or the new block, both of which it may touch, and re-checks
 * the record's tid before it acts on the thread.
 */
static struct umcg_task *ut_of(struct umcg__etask *e)
{
	return umcg__load(&e->ut, umcg__relaxed);
}

/*
 * pin() / unpin() - keep the task block of record @t, looked up for thread
 * @tid by another thread, from being freed while we read it. A thread that
 * unregisters clears `tid` and then waits for `pins` to drop to 0 before
 * it returns (after which its program may free the block); the reader
 * counts itself in `pins` and then re-reads `tid` (all seq_cst): either the
 * reader sees the tid gone and leaves the block alone, or the thread sees
 * the pin and waits. Async-signal-safe.
 */
static bool pin(struct umcg__etask *t, pid_t tid)
{
	umcg__fetch_add(&t->pins, 1, umcg__seq_cst);
	if (umcg__load(&t->tid, umcg__seq_cst) == tid)
		return true;
	umcg__fetch_add(&t->pins, -1, umcg__seq_cst);
	return false;
}

static void unpin(struct umcg__etask *t)
{
	umcg__fetch_add(&t->pins, -1, umcg__seq_cst);
}

/* Waking a server that is not RUNNABLE is fine: it is awake already. */
static void wake_server(struct umcg__etask *srv)
{
	wake_task(ut_of(srv));
}

/*
 * wait_running() - sleep until our state is RUNNING, or @deadline (ns, in
 * our registration clock; 0 = none) passes. Signal handlers may run; the
 * wait and its deadline survive them.
 */
static int wait_running(struct umcg__etask *e, uint64_t deadline)
{
	struct umcg_task *ut = e->ut;
	struct timespec ts, *tsp = NULL;
	bool waited = false;
	int realtime = 0;
	uint32_t s;

	for (;;) {
		/* Pairs with the seq_cst CAS of whoever made us RUNNING. */
		s = umcg__load(&ut->state, umcg__acquire);
		if ((s & UMCG_TASK_MASK) == UMCG_TASK_RUNNING) {
			/* A worker's run starts: its slice timer for it. */
			if (waited && e->worker)
				slice_run_start(e);
			return 0;
		}
		waited = true;
		if (deadline) {
			uint64_t now = now_ns(e->clock), abs;

			if (now >= deadline)
				return -ETIMEDOUT;
			if (e->clock == CLOCK_REALTIME || e->clock == CLOCK_MONOTONIC) {
				realtime = e->clock == CLOCK_REALTIME;
				abs = deadline;
			} else {
				/* BOOTTIME and TAI: the same span on MONOTONIC,
				 * re-derived after every wake-up. */
				abs = now_ns(CLOCK_MONOTONIC) + (deadline - now);
			}
			ts.tv_sec = (time_t)(abs / 1000000000ull);
			ts.tv_nsec = (long)(abs % 1000000000ull);
			tsp = &ts;
		}
		/* A server the watcher asked to take a worker back (see
		 * "Detection"); relaxed: the exchange in there decides. */
		if (umcg__load(&e->reclaim_req, umcg__relaxed))
			serve_reclaims(e);
		umcg__futex_wait(&ut->state, s, tsp, realtime);
	}
}

/* Sync a worker's CPU set with its server's (see the header comment). */
static void follow_server(struct umcg__etask *e, struct umcg__etask *srv)
{
	if (e->synced_server == srv)
		return;
	if (srv->have_affinity)
		umcg__syscall6(SYS_sched_setaffinity, 0, sizeof(srv->affinity),
			       (long)&srv->affinity, 0, 0, 0);
	e->synced_server = srv;
}

/* Stamp runnable_ts: the caller just entered RUNNABLE. */
static void stamp_runnable(struct umcg__etask *e)
{
	umcg__store(&e->ut->runnable_ts, now_ns(e->clock), umcg__relaxed);
}

/* A RUNNABLE worker goes on its server's list. */
static void enqueue_self(struct umcg__etask *e, struct umcg__etask *srv)
{
	follow_server(e, srv);
	umcg__runnable_push(ut_of(srv), e->ut);
}

/* The server a worker names, if it is a registered server. */
static struct umcg__etask *server_of(struct umcg__etask *e)
{
	pid_t tid = (pid_t)umcg__load(&e->ut->server_tid, umcg__relaxed);
	struct umcg__etask *srv = umcg__registry_lookup(tid);

	return (srv && !umcg__load(&srv->worker, umcg__relaxed)) ? srv : NULL;
}

/*
 * Slice timers (UMCG_PREEMPT_TIMER in <umcg/runtime.h>). A server that
 * preempts a worker at its slice end needs its own CPU for a moment while
 * the worker runs, and on the emulation it then has to signal the worker:
 * two wake-ups and a signal per preemption. Instead each worker owns a
 * POSIX timer that signals the worker's own thread (SIGEV_THREAD_ID, the
 * kick signal, SLICE_COOKIE as its value). Its server asks for a slice
 * before it runs the worker (e_slice_request()); the worker itself arms
 * the timer for a slice from the moment its run starts (slice_run_start(),
 * from wait_running()) and disarms it when it blocks (e_block_begin()).
 * When it fires, the handler finds `slice_live` due, sets TF_PREEMPT on its
 * own state and goes the kick's way (return_to_user()): the worker is back
 * on its server's list, and the server is woken once, as for a yield. The
 * server keeps a backstop a slice later and preempts the old way if the
 * timer's preemption did not land.
 *
 * Who touches what. `slice_req` is written by the server (release) and
 * taken by the worker (exchange, acquire) as a run starts; the server's
 * wake-up of the worker orders the two anyway. `slice_armed`, `slice_live`
 * and the timer's setting belong to the worker's own thread; its handler
 * is the only other reader or writer of `slice_live`, and runs on that
 * thread (signal fences order them). Nothing here needs a lock, because
 * every mistake a race can cause is a preemption lost or one too many,
 * never a lost wake-up or a cut system call:
 *   - The watcher disarms the timer of a worker it finds asleep
 *     (detect_block(), from another thread, while `detected` is DECIDING,
 *     which keeps the timer alive). It can race the worker's own arming at
 *     a next run and win: that run is then preempted by its server's
 *     backstop, a slice late.
 *   - A stale expiry (a timer re-armed after its signal was generated)
 *     finds `slice_live` not due and does nothing.
 *   - A timer that fires while the worker sleeps in a call nobody
 *     announced ends that call like a kick's signal would: the handler
 *     takes the worker for blocked and resumes the call (resume_cut()).
 * A worker never has its timer armed inside a region: e_block_begin()
 * disarms it while `in_lib` is set, and an expiry pending by then is
 * delivered on the way out of that timer_settime(), where in_lib makes the
 * handler leave the worker alone (it is BLOCKED, so TF_PREEMPT cannot go
 * in). A standard signal coalesces with a kick's, so the handler tests
 * `slice_live` on every delivery, whatever siginfo says.
 */
#define SLICE_COOKIE 0x554d4347 /* "UMCG" */
#ifndef sigev_notify_thread_id /* not named by every glibc */
#define sigev_notify_thread_id _sigev_un._tid
#endif
#define SLICE_NONE UINT64_MAX /* slice_req: no request since the last run */

enum {
	SLICE_T_NONE,
	SLICE_T_READY,
	SLICE_T_FAILED
};

/* Create the calling worker's timer; false if the kernel refused one. */
static bool slice_create(struct umcg__etask *e)
{
	struct sigevent sev;
	int id = -1;

	memset(&sev, 0, sizeof(sev));
	sev.sigev_notify = SIGEV_THREAD_ID;
	sev.sigev_signo = KICK_SIGNAL;
	sev.sigev_value.sival_int = SLICE_COOKIE;
	sev.sigev_notify_thread_id = e->tid;
	/* Raw: glibc's timer_create() keeps ids of its own for SIGEV_THREAD. */
	if (umcg__syscall6(SYS_timer_create, e->clock, (long)&sev, (long)&id, 0, 0, 0)) {
		/* EAGAIN: RLIMIT_SIGPENDING (each timer reserves a signal
		 * entry) or no memory; the server preempts this one itself. */
		umcg__store(&e->slice_tstate, SLICE_T_FAILED, umcg__release);
		return false;
	}
	e->slice_timer = id;
	/* Release: the watcher reads slice_timer after this (slice_off()). */
	umcg__store(&e->slice_tstate, SLICE_T_READY, umcg__release);
	return true;
}

/* Set timer @id to fire at @at (absolute; 0 = off). */
static void slice_settime(int id, uint64_t at)
{
	struct itimerspec its;

	memset(&its, 0, sizeof(its));
	its.it_value.tv_sec = (time_t)(at / 1000000000ull);
	its.it_value.tv_nsec = (long)(at % 1000000000ull);
	umcg__syscall6(SYS_timer_settime, id, at ? TIMER_ABSTIME : 0, (long)&its, 0, 0, 0);
}

/* The calling worker's timer, to @at (0 = off). */
static void slice_set(struct umcg__etask *e, uint64_t at)
{
	if (at && umcg__load(&e->slice_tstate, umcg__relaxed) == SLICE_T_NONE && !slice_create(e))
		return;
	if (umcg__load(&e->slice_tstate, umcg__relaxed) != SLICE_T_READY)
		return;
	/* Before the setting: an expiry of the new deadline finds it. */
	umcg__store(&e->slice_live, at, umcg__relaxed);
	umcg__signal_fence();
	e->slice_armed = at;
	slice_settime(e->slice_timer, at);
}

/* A run of the calling worker starts (in_lib set): what its server asked,
 * timed from now, so that a run that starts late still gets its slice. */
static void slice_run_start(struct umcg__etask *e)
{
	uint64_t ns = umcg__xchg(&e->slice_req, SLICE_NONE, umcg__acquire), at = 0;

	/* No request: a run its server did not start (a direct handoff), or
	 * one it preempts itself. */
	if (ns != SLICE_NONE && ns) {
		at = now_ns(e->clock) + ns;
		if (at < ns)
			at = UINT64_MAX - 1;
	}
	if (at != e->slice_armed)
		slice_set(e, at);
}

/*
 * slice_stop() - the calling worker's run ends before its slice: an expiry
 * of that slice delivered later (the timer stays armed until the next run
 * sets it) is not due. Without this, a handler that runs late (as under
 * ThreadSanitizer, which defers handlers to its next interceptor) could
 * find the old slice due at the start of the next run and end that run at
 * once, every time.
 */
static void slice_stop(struct umcg__etask *e)
{
	umcg__store(&e->slice_live, 0, umcg__relaxed);
}

/*
 * slice_due() - has the calling worker's armed slice ended? Then it is
 * taken (once). From the kick handler, on the worker's own thread.
 */
static bool slice_due(struct umcg__etask *e)
{
	uint64_t at = umcg__load(&e->slice_live, umcg__relaxed);

	if (!at || now_ns(e->clock) < at)
		return false;
	umcg__store(&e->slice_live, 0, umcg__relaxed);
	return true;
}

/*
 * slice_preempt_self() - the slice of the calling worker ended: TF_PREEMPT
 * on its own state, while it is RUNNING, as umcg_preempt() would set it;
 * return_to_user() does the rest. Its server learns through `slice_fired`
 * that the worker did not yield by itself.
 */
static void slice_preempt_self(struct umcg__etask *e)
{
	uint32_t s = umcg__load(&e->ut->state, umcg__relaxed);
	int *fired;

	while ((s & UMCG_TASK_MASK) == UMCG_TASK_RUNNING && !(s & UMCG_TF_PREEMPT)) {
		if (umcg__cas(&e->ut->state, &s, s | UMCG_TF_PREEMPT, umcg__seq_cst)) {
			/* Ordered before the push by the seq_cst CAS and
			 * push of return_to_user(); the server reads it after
			 * its take of the list. */
			fired = umcg__load(&e->slice_fired, umcg__relaxed);
			if (fired)
				umcg__store(fired, 1, umcg__relaxed);
			return;
		}
	}
}

/*
 * slice_off() - from another thread (the watcher): disarm worker @t's
 * timer. Only while @t's `detected` is DET_DECIDING and ours: then @t
 * cannot finish unregistering (unregister_self() waits), so the id still
 * names its timer.
 */
static void slice_off(struct umcg__etask *t)
{
	if (umcg__load(&t->slice_tstate, umcg__acquire) == SLICE_T_READY)
		slice_settime(t->slice_timer, 0);
}

/* When the calling worker unregisters: its timer goes. */
static void slice_delete(struct umcg__etask *e)
{
	if (umcg__load(&e->slice_tstate, umcg__relaxed) == SLICE_T_READY)
		umcg__syscall6(SYS_timer_delete, e->slice_timer, 0, 0, 0, 0, 0);
	umcg__store(&e->slice_tstate, SLICE_T_NONE, umcg__relaxed);
	umcg__store(&e->slice_live, 0, umcg__relaxed);
	e->slice_armed = 0;
}

/*
 * return_to_user() - what the kernel does before it returns to user space.
 *
 * Called with in_lib set. A worker in RUNNING|TF_PREEMPT is preempted: it
 * becomes RUNNABLE, is pushed, wakes its server and waits to be run. A task
 * whose state is not RUNNING waits until it is, unless it is
 * RUNNABLE|TF_COND_WAIT. Clears in_lib on the way out, then looks at the
 * state once more (3. in the header comment).
 */
static void return_to_user(struct umcg__etask *e)
{
	struct umcg_task *ut = e->ut;
	struct umcg__etask *srv;
	uint32_t s;

	for (;;) {
		umcg__store(&e->in_lib, 0, umcg__seq_cst);
		s = umcg__load(&ut->state, umcg__seq_cst);
		if (e->worker && (s & UMCG_TASK_MASK) == UMCG_TASK_RUNNING &&
		    (s & UMCG_TF_PREEMPT)) {
			umcg__store(&e->in_lib, 1, umcg__seq_cst);
			srv = server_of(e);
			if (!srv) {
				/* No server to go back to: drop the request. */
				umcg__cas(&ut->state, &s, s & ~UMCG_TF_PREEMPT, umcg__seq_cst);
				continue;
			}
			/* From exactly the state seen: a kick handled in
			 * between (in_lib was clear) may have preempted us and
			 * let us run again already. */
			if (umcg__cas(&ut->state, &s,
				      (s & ~(UMCG_TASK_MASK | UMCG_TF_MASK)) | UMCG_TASK_RUNNABLE,
				      umcg__seq_cst)) {
				slice_stop(e);
				stamp_runnable(e);
				enqueue_self(e, srv);
				wake_server(srv);
				wait_running(e, 0);
			}
			continue;
		}
		if ((s & UMCG_TASK_MASK) != UMCG_TASK_RUNNING &&
		    !((s & UMCG_TASK_MASK) == UMCG_TASK_RUNNABLE && (s & UMCG_TF_COND_WAIT))) {
			/* BLOCKED by detection (a page fault just now)? Back
			 * on the list first. */
			enter_lib(e);
			wait_running(e, 0);
			continue;
		}
		/* Running again: a thief may have moved us to its server.
		 * Its CPU is taken with in_lib set: sched_setaffinity() may
		 * sleep until the move is done, and a sleep in user code is
		 * what detection looks for. */
		if (e->worker && (s & UMCG_TASK_MASK) == UMCG_TASK_RUNNING) {
			srv = server_of(e);
			if (srv && e->synced_server != srv) {
				umcg__store(&e->in_lib, 1, umcg__seq_cst);
				follow_server(e, srv);
				continue;
			}
			/* A worker back in user code is what the watcher
			 * watches: wake it if it sleeps ("Detection"). */
			watch_poke();
		}
		return;
	}
}

/* ---- detection of unannounced blocking ---------------------------------- */

/*
 * Detection. The kernel sees a worker fall asleep in any system call or
 * page fault; the emulation sees only what it is told (umcg_block_begin(),
 * the wrappers of <umcg/io.h> and libumcg-preload.so). For the rest, a
 * watcher thread, started at the first registration of a worker, looks at
 * every worker that is RUNNING outside the library every `detect_ns / 2`:
 *
 *   - its thread's CPU clock (clock_gettime() of the thread's CPU-time
 *     clock, ~0.5 us) has not moved since the previous look, and
 *   - /proc/self/task/TID/syscall says it is not runnable (the kernel
 *     prints "running" for a runnable thread, and the system call number,
 *     or -1 outside one, for a sleeping thread),
 *
 * then the worker has been off its CPU for a whole period and sleeps now:
 * the watcher makes it BLOCKED (blocked_ts stamped) and wakes its server,
 * as the kernel would have. So within `detect_ns` of falling asleep in
 * anything (a raw syscall, a page fault, a lock inside libc), a worker
 * frees its server. Other mechanisms were measured first (doc/umcg-abi.md
 * §11 rule 19 has the figures): /proc/.../stat costs more a read, schedstat
 * less but says nothing about sleeping; the CPU clock is the cheapest test
 * of "did it run", and the syscall file the cheapest of "does it sleep",
 * read only for a worker that did not run.
 *
 * A worker so marked is still asleep in its own call, which must not be
 * disturbed: no signal goes to it (umcg_kick() leaves a detected worker
 * alone, as the kernel's CAS on a BLOCKED worker fails). When it wakes it
 * runs user code while BLOCKED. It goes back under its server's control
 * (BLOCKED -> RUNNABLE, pushed, server woken, wait for RUNNING) in
 * reclaim(), the first thing it does on entering the library, or, if it
 * stays in user code, when the watcher sees its CPU clock move: the watcher
 * asks its server (`reclaim`, `reclaim_req`, a futex wake of the server's
 * state word), and the server, which shares the worker's CPU, probes the
 * worker and kicks it only if it is runnable. While the server runs there,
 * the worker cannot start a new sleep, so the kick lands in user code. The
 * kick handler calls reclaim().
 *
 * `detected`: DET_NONE -> DET_DECIDING (CAS, by the watcher or a kicker:
 * one at a time) -> DET_BLOCKED (the worker's state was CASed RUNNING ->
 * BLOCKED) or back to DET_NONE. The worker's side is enter_lib(): it stores
 * in_lib and then loads `detected`; the decider stores DET_DECIDING and
 * then loads in_lib (all seq_cst: a Dekker pair). Either the decider sees
 * in_lib and gives up, or the worker sees DET_DECIDING and waits for the
 * outcome, so no worker inside the library is ever made BLOCKED under it.
 * The probe itself may be stale by then (the worker slept inside the
 * library when it was probed, and has run back to user code since): the
 * decider reads the thread's CPU clock once more after its load of in_lib
 * and gives up if it moved since before the probe (detect_block()).
 * models/detect.pml checks the decision.
 * A worker whose user code overwrote the BLOCKED state (a plain store of
 * RUNNABLE before umcg_wait()) is left as it is; reclaim() then only clears
 * the mark.
 *
 * Kicks: umcg_kick() of a RUNNING worker probes it first. A worker asleep
 * in the kernel is not signalled (a signal would end its sleep early:
 * nanosleep, poll and epoll_wait are not restarted after a handler); it is
 * made BLOCKED on the spot, or left alone with detection off, and the next
 * slice end kicks again. A signal that still meets a system call (the
 * worker entered it between the probe and the signal) is caught in the
 * handler, which resumes the call with restart_syscall(2) where the kernel
 * kept a restart block (nanosleep, clock_nanosleep, poll, timed futex
 * waits) and returns its real result in place of EINTR (cut_short()).
 *
 * The watcher sleeps on `watch_idle` while no worker is RUNNING outside the
 * library and none is detected; a worker leaving the library wakes it
 * (watch_poke()). The watcher stores watch_idle = 1 and then scans (loads
 * of in_lib and state); the worker stores in_lib = 0, loads its state, and
 * then loads watch_idle (seq_cst): the watcher sees the worker, or the
 * worker sees watch_idle set and wakes it.
 */
enum {
	DET_NONE = 0,
	DET_DECIDING,
	DET_BLOCKED
};
/*
 * What /proc/self/task/TID/syscall says of a thread: "running" (runnable,
 * on a CPU or waiting for one), a syscall number (asleep inside that
 * call), or "-1 sp pc" (not runnable, and in no call: asleep in a fault,
 * or stopped). The last is PROBE_USER: a signal there ends no call, so a
 * kick is sent; the watcher counts it as a sleep only if the thread's stat
 * state says S or D.
 */
enum {
	PROBE_UNKNOWN = 0,
	PROBE_RUNNABLE,
	PROBE_ASLEEP,
	PROBE_USER
};
enum {
	M_NONE = 0,
	M_RUNNING,
	M_BLOCKED
};

/* On by default with the bound (README, "Blocking on the emulation");
 * umcg_detect_set() or UMCG_DETECT_US changes it, 0 turns it off. */
#define DETECT_DEFAULT_NS UMCG_DETECT_DEFAULT_NS
#define NR_PROBE_SLOTS 4
#define WATCH_FAILED -1
#define WATCH_ASKS 8

static uint64_t detect_ns = DETECT_DEFAULT_NS;
static pthread_once_t detect_once = PTHREAD_ONCE_INIT;
static int watch_started; /* 0, 1, or WATCH_FAILED */
static int watch_idle; /* futex word: 1 while the watcher has nothing to watch */
/* futex word: 1 once the watcher's thread runs watch_main(), or could not
 * be created (see fork_prepare()) */
static int watch_up;

/* The watcher runs, or will not: let a waiting fork_prepare() go on. */
static void watch_up_set(void)
{
	umcg__store(&watch_up, 1, umcg__release);
	umcg__futex_wake((uint32_t *)&watch_up);
}
/* The watcher's own probe descriptors. */
static pid_t watch_probe_tid[NR_PROBE_SLOTS];
static int watch_probe_fd[NR_PROBE_SLOTS];
static unsigned int watch_probe_next;

static void detect_env(void)
{
	const char *env = getenv("UMCG_DETECT_US");
	char *end;
	unsigned long long us;
	int saved = errno;

	if (env && *env) {
		errno = 0;
		us = strtoull(env, &end, 10);
		if (!errno && !*end &&
		    (us == 0 ||
		     (us >= UMCG_DETECT_MIN_NS / 1000 && us <= UMCG_DETECT_MAX_NS / 1000)))
			umcg__store(&detect_ns, (uint64_t)us * 1000, umcg__relaxed);
	}
	errno = saved;
}

UMCG_API int umcg_detect_set(uint64_t bound_ns)
{
	if (bound_ns && (bound_ns < UMCG_DETECT_MIN_NS || bound_ns > UMCG_DETECT_MAX_NS))
		return -EINVAL;
	pthread_once(&detect_once, detect_env);
	umcg__store(&detect_ns, bound_ns, umcg__relaxed);
	/* A watcher asleep with detection off looks again. */
	if (umcg__xchg(&watch_idle, 0, umcg__seq_cst))
		umcg__futex_wake((uint32_t *)&watch_idle);
	return 0;
}

UMCG_API uint64_t umcg_detect_get(void)
{
	pthread_once(&detect_once, detect_env);
	return umcg__load(&detect_ns, umcg__relaxed);
}

uint64_t umcg__unannounced_blocks(pid_t server_tid)
{
	struct umcg__etask *srv = umcg__registry_lookup(server_tid);

	return srv ? umcg__load(&srv->unannounced, umcg__relaxed) : 0;
}

/* Digits of @v at the end of the buffer ending at @end. */
static char *put_uint(char *end, unsigned int v)
{
	do {
		*--end = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	return end;
}

/* open("/proc/self/task/<tid>/<name>") read-only, async-signal-safe. */
static int task_file_open(pid_t tid, const char *name)
{
	static const char head[] = "/proc/self/task/";
	char digits[12], path[sizeof(head) + sizeof(digits) + 16];
	char *d = put_uint(digits + sizeof(digits), (unsigned int)tid);
	size_t n = (size_t)(digits + sizeof(digits) - d), len = strlen(name);

	if (len >= 15)
		return -ENAMETOOLONG;
	memcpy(path, head, sizeof(head) - 1);
	memcpy(path + sizeof(head) - 1, d, n);
	path[sizeof(head) - 1 + n] = '/';
	memcpy(path + sizeof(head) + n, name, len + 1);
	return (int)umcg__syscall6(SYS_openat, AT_FDCWD, (long)path, O_RDONLY | O_CLOEXEC, 0, 0, 0);
}

static int probe_open(pid_t tid)
{
	return task_file_open(tid, "syscall");
}

static int probe_parse(int fd)
{
	char buf[16];
	long r = umcg__syscall6(SYS_pread64, fd, (long)buf, sizeof(buf), 0, 0, 0);

	if (r <= 0)
		return PROBE_UNKNOWN;
	if (r >= 7 && !memcmp(buf, "running", 7))
		return PROBE_RUNNABLE;
	if (buf[0] == '-')
		return PROBE_USER;
	if (buf[0] >= '0' && buf[0] <= '9')
		return PROBE_ASLEEP;
	return PROBE_UNKNOWN;
}

/*
 * fault_sleep() - is thread @tid, found in no call (PROBE_USER), asleep
 * (stat state S or D: a fault waiting on I/O, a lock or userfaultfd)
 * rather than stopped, or runnable again by now? Only the watcher asks,
 * and only then: an open, a read and a close of /proc/self/task/TID/stat.
 */
static bool fault_sleep(pid_t tid)
{
	char buf[160], *d, *p;
	int fd = task_file_open(tid, "stat");
	long r;

	if (fd < 0)
		return false;
	r = umcg__syscall6(SYS_read, fd, (long)buf, sizeof(buf) - 1, 0, 0, 0);
	umcg__syscall6(SYS_close, fd, 0, 0, 0, 0, 0);
	if (r <= 0)
		return false;
	buf[r] = 0;
	/* "tid (comm) S ...": comm may hold ')' itself; take the last. */
	p = NULL;
	for (d = buf; *d; d++)
		if (*d == ')')
			p = d;
	return p && p[1] == ' ' && (p[2] == 'S' || p[2] == 'D');
}

/*
 * probe() - is thread @tid runnable, or asleep in the kernel? With a cache
 * of descriptors (@tids/@fds, @slots long, owned by the calling thread) if
 * the caller has one, else an open and a close. A cached descriptor whose
 * thread has gone reads an error and is replaced.
 */
static int probe(pid_t tid, pid_t *tids, int *fds, unsigned int *next)
{
	unsigned int i;
	int fd, r;

	if (!tids) {
		fd = probe_open(tid);
		if (fd < 0)
			return PROBE_UNKNOWN;
		r = probe_parse(fd);
		umcg__syscall6(SYS_close, fd, 0, 0, 0, 0, 0);
		return r;
	}
	for (i = 0; i < NR_PROBE_SLOTS; i++) {
		if (tids[i] == tid) {
			r = probe_parse(fds[i]);
			if (r != PROBE_UNKNOWN)
				return r;
			umcg__syscall6(SYS_close, fds[i], 0, 0, 0, 0, 0);
			tids[i] = 0;
			break;
		}
	}
	fd = probe_open(tid);
	if (fd < 0)
		return PROBE_UNKNOWN;
	r = probe_parse(fd);
	i = (*next)++ % NR_PROBE_SLOTS;
	if (tids[i])
		umcg__syscall6(SYS_close, fds[i], 0, 0, 0, 0, 0);
	tids[i] = tid;
	fds[i] = fd;
	return r;
}

/* Probe @tid from the calling thread, with its record's cache if it has one. */
static int probe_self(pid_t tid)
{
	struct umcg__etask *me = self_task;
	int r;

	/* The cache is the thread's own; a handler that interrupts a probe
	 * of its thread goes without it. */
	if (!me || me->probe_busy)
		return probe(tid, NULL, NULL, NULL);
	me->probe_busy = 1;
	r = probe(tid, me->probe_tid, me->probe_fd, &me->probe_next);
	me->probe_busy = 0;
	return r;
}

/* Close the probe descriptors cached in @tids/@fds. */
static void probe_close_all(pid_t *tids, int *fds)
{
	unsigned int i;

	for (i = 0; i < NR_PROBE_SLOTS; i++) {
		if (tids[i])
			umcg__syscall6(SYS_close, fds[i], 0, 0, 0, 0, 0);
		tids[i] = 0;
	}
}

/* CPU time of thread @tid in ns (+1, so that 0 means unreadable). */
static uint64_t thread_cpu_ns(pid_t tid)
{
	/* The kernel's clock id for a thread's scheduler CPU time. */
	clockid_t id = (clockid_t)((~(unsigned int)tid << 3) | 6);
	struct timespec ts;

	if (umcg__syscall6(SYS_clock_gettime, id, (long)&ts, 0, 0, 0, 0))
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec + 1;
}

/*
 * detect_block() - make worker @t (thread @tid), found asleep in the kernel
 * in a call nobody announced, BLOCKED, and wake its server. Called by the
 * watcher or by a kicker, with @cpu, the thread's CPU clock read before
 * the probe that found it asleep. Return: true if it did.
 *
 * The probe's answer may be stale by now: between the caller's look at
 * in_lib and the probe the worker may have run into the library and slept
 * there (umcg_yield() waiting for its turn), and between the probe and
 * here been run again and gone back to user code. So once the decision is
 * ours and in_lib reads 0, the CPU clock is read again: if it has not
 * moved since @cpu, the thread did not run at any moment from before the
 * probe until after that load, so in_lib was 0 when the probe saw it
 * asleep, and it still sleeps in that same call. If it moved, it ran and
 * nothing is decided (the next look starts over).
 */
static bool detect_block(struct umcg__etask *t, pid_t tid, uint64_t cpu)
{
	struct umcg__etask *srv;
	struct umcg_task *ut;
	int none = DET_NONE;
	uint32_t s;

	/* One decider at a time. */
	if (!umcg__cas(&t->detected, &none, DET_DECIDING, umcg__seq_cst))
		return false;
	/* The Dekker pair with enter_lib() (see "Detection"). */
	if (umcg__load(&t->in_lib, umcg__seq_cst) || umcg__load(&t->in_block, umcg__seq_cst) ||
	    umcg__load(&t->tid, umcg__acquire) != tid)
		goto undo;
	if (!cpu || thread_cpu_ns(tid) != cpu)
		goto undo;
	ut = ut_of(t);
	srv = server_of(t);
	if (!srv)
		goto undo;
	s = umcg__load(&ut->state, umcg__relaxed);
	do {
		if ((s & UMCG_TASK_MASK) != UMCG_TASK_RUNNING)
			goto undo;
	} while (!umcg__cas(&ut->state, &s,
			    (s & ~(UMCG_TASK_MASK | UMCG_TF_MASK)) | UMCG_TASK_BLOCKED,
			    umcg__seq_cst));
	umcg__store(&ut->blocked_ts, now_ns(t->clock), umcg__relaxed);
	/* Its slice timer must not end the sleep ("Slice timers"). */
	slice_off(t);
	/* Release: a worker that sees DET_BLOCKED sees its state BLOCKED. */
	umcg__store(&t->detected, DET_BLOCKED, umcg__release);
	UMCG_TRACE1(block, tid);
	if (pin(srv, umcg__load(&srv->tid, umcg__relaxed))) {
		umcg__fetch_add(&srv->unannounced, 1, umcg__relaxed);
		wake_server(srv);
		unpin(srv);
	}
	watch_poke();
	return true;
undo:
	umcg__store(&t->detected, DET_NONE, umcg__release);
	return false;
}

/*
 * umcg__settle() - a worker of the emulation that detection made BLOCKED
 * and that runs user code again goes back under its server now, so that
 * what follows sees it RUNNING. Nothing for anyone else (the kernel
 * backend included) or inside the library. Async-signal-safe.
 */
void umcg__settle(void)
{
	struct umcg__etask *e = self_task;

	if (!e || !e->worker || umcg__load(&e->in_lib, umcg__relaxed) ||
	    umcg__load(&e->detected, umcg__seq_cst) == DET_NONE)
		return;
	enter_lib(e);
	return_to_user(e);
}

/* The calling thread enters the library (see 3. and "Detection"). */
static void enter_lib(struct umcg__etask *e)
{
	umcg__store(&e->in_lib, 1, umcg__seq_cst);
	if (e->worker)
		reclaim(e);
}

/*
 * reclaim() - a worker that detection made BLOCKED is awake and in the
 * library: back under its server, as umcg_block_end() does. Called with
 * in_lib set.
 */
static void reclaim(struct umcg__etask *e)
{
	struct umcg__etask *srv;
	int d;

	/* Pairs with the seq_cst CAS and the release store of the decider. */
	while ((d = umcg__load(&e->detected, umcg__seq_cst)) == DET_DECIDING)
		umcg__syscall6(SYS_sched_yield, 0, 0, 0, 0, 0, 0);
	if (d != DET_BLOCKED)
		return;
	umcg__store(&e->detected, DET_NONE, umcg__relaxed);
	umcg__store(&e->reclaim, 0, umcg__relaxed);
	srv = server_of(e);
	if (!srv) {
		/* No server to go back to: carry on, as a worker whose
		 * server_tid is bad does after a preemption. */
		xition(e->ut, UMCG_TASK_BLOCKED, UMCG_TASK_RUNNING);
		return;
	}
	/* Fails if user code wrote its state itself since: nothing to do. */
	if (!xition(e->ut, UMCG_TASK_BLOCKED, UMCG_TASK_RUNNABLE))
		return;
	stamp_runnable(e);
	enqueue_self(e, srv);
	wake_server(srv);
	wait_running(e, 0);
}

/*
 * ran_since_cpu() - has worker @t had CPU time since the last kicker
 * looked? @cpu is its thread's CPU clock, read now (ran_since() reads it
 * for thread @tid). A runnable thread that has not may be inside the kernel,
 * woken from a sleep and waiting for its CPU to return: a signal now would
 * turn the end of a poll() or epoll_wait() timeout into EINTR. One that has
 * was running user code moments ago. The first look passes.
 */
static bool ran_since_cpu(struct umcg__etask *t, uint64_t cpu)
{
	uint64_t last = umcg__xchg(&t->kick_cpu, cpu, umcg__relaxed);

	return !cpu || cpu != last;
}

static bool ran_since(struct umcg__etask *t, pid_t tid)
{
	return ran_since_cpu(t, thread_cpu_ns(tid));
}

/*
 * reclaim_kick() - kick detected worker @t (thread @tid) back into the
 * library if the probe found it runnable, i.e. awake in user code.
 */
static void reclaim_kick(struct umcg__etask *t, pid_t tid, int probed)
{
	if ((probed != PROBE_RUNNABLE && probed != PROBE_USER) ||
	    umcg__load(&t->detected, umcg__acquire) != DET_BLOCKED ||
	    umcg__load(&t->tid, umcg__acquire) != tid || !ran_since(t, tid))
		return;
	/* Pairs with the exchange in take_kicks(). */
	umcg__store(&t->kick_pending, 1, umcg__release);
	umcg__syscall6(SYS_tgkill, getpid(), tid, KICK_SIGNAL, 0, 0, 0);
}

/* A server serves the watcher's requests to take its workers back. */
static void serve_reclaims(struct umcg__etask *srv)
{
	struct umcg__etask *t;
	pid_t tid;

	if (!umcg__xchg(&srv->reclaim_req, 0, umcg__acq_rel))
		return;
	for (t = umcg__etask_all(); t; t = t->all_next) {
		tid = umcg__load(&t->tid, umcg__acquire);
		if (!tid || !umcg__load(&t->reclaim, umcg__relaxed))
			continue;
		if (umcg__xchg(&t->reclaim, 0, umcg__acq_rel) && pin(t, tid)) {
			reclaim_kick(t, tid, probe_self(tid));
			unpin(t);
		}
	}
}

/* The watcher asks @t's server to take it back. */
static bool ask_server(struct umcg__etask *t)
{
	struct umcg__etask *srv = server_of(t);

	if (!srv || !pin(srv, umcg__load(&srv->tid, umcg__relaxed)))
		return false;
	umcg__store(&t->reclaim, 1, umcg__release);
	umcg__store(&srv->reclaim_req, 1, umcg__release);
	umcg__futex_wake(&ut_of(srv)->state);
	unpin(srv);
	return true;
}

static uint64_t watch_period(void)
{
	return umcg__load(&detect_ns, umcg__relaxed) / 2;
}

static int watch_probe(pid_t tid)
{
	return probe(tid, watch_probe_tid, watch_probe_fd, &watch_probe_next);
}

/* One look at worker @t (thread @tid, pinned). Return: whether it needs
 * watching. */
static bool watch_one(struct umcg__etask *t, pid_t tid)
{
	uint64_t cpu;
	uint32_t s;
	int d;

	s = umcg__load(&ut_of(t)->state, umcg__seq_cst) & UMCG_TASK_MASK;
	d = umcg__load(&t->detected, umcg__seq_cst);
	if (d == DET_BLOCKED) {
		if (s != UMCG_TASK_BLOCKED)
			return true; /* its user code took over; reclaim() clears */
		cpu = thread_cpu_ns(tid);
		if (t->m_tid != tid || t->m_mode != M_BLOCKED) {
			t->m_tid = tid;
			t->m_mode = M_BLOCKED;
			t->m_cpu = cpu;
			t->m_asks = 0;
			return true;
		}
		/* Still asleep, or only woke for a moment (a sleeper
		 * between two sleeps is left alone). */
		if (cpu - t->m_cpu < watch_period() / 4)
			return true;
		t->m_cpu = cpu;
		umcg__store(&t->kick_cpu, cpu, umcg__relaxed);
		/* Awake in user code: its server takes it back (the
		 * server found it asleep again if it did not). Only a
		 * server that left the request untaken for
		 * WATCH_ASKS looks (one that does not wait in
		 * umcg_wait()) makes the watcher kick it itself; that
		 * kick, from another CPU, is the one that can meet a
		 * new sleep (resume_cut() then repairs what it can). */
		if (!umcg__load(&t->reclaim, umcg__acquire))
			t->m_asks = 0;
		if (t->m_asks++ < WATCH_ASKS && ask_server(t))
			return true;
		t->m_asks = 0;
		umcg__store(&t->reclaim, 0, umcg__relaxed);
		reclaim_kick(t, tid, watch_probe(tid));
		return true;
	}
	if (s != UMCG_TASK_RUNNING || d != DET_NONE || umcg__load(&t->in_lib, umcg__seq_cst) ||
	    umcg__load(&t->in_block, umcg__seq_cst)) {
		t->m_mode = M_NONE;
		return false;
	}
	cpu = thread_cpu_ns(tid);
	if (t->m_tid != tid || t->m_mode != M_RUNNING || cpu != t->m_cpu) {
		t->m_tid = tid;
		t->m_mode = M_RUNNING;
		t->m_cpu = cpu;
		return true;
	}
	/* No CPU time for a whole period: asleep, or only waiting
	 * for a CPU? */
	switch (watch_probe(tid)) {
	case PROBE_ASLEEP:
		break;
	case PROBE_USER:
		if (fault_sleep(tid))
			break;
		return true;
	default:
		return true;
	}
	if (detect_block(t, tid, cpu)) {
		t->m_mode = M_BLOCKED;
		t->m_cpu = thread_cpu_ns(tid);
		t->m_asks = 0;
	}
	return true;
}

/* One look at every worker. Return: whether any needs watching. */
static bool watch_scan(void)
{
	struct umcg__etask *t;
	bool busy = false;
	pid_t tid;

	for (t = umcg__etask_all(); t; t = t->all_next) {
		tid = umcg__load(&t->tid, umcg__acquire);
		if (!tid || !umcg__load(&t->worker, umcg__relaxed) || !pin(t, tid)) {
			t->m_mode = M_NONE;
			continue;
		}
		busy |= watch_one(t, tid);
		unpin(t);
	}
	return busy;
}

static void *watch_main(void *arg)
{
	struct timespec ts;
	uint64_t bound;

	(void)arg;
	watch_up_set();
	for (;;) {
		bound = umcg__load(&detect_ns, umcg__relaxed);
		if (bound && watch_scan()) {
			ts.tv_sec = (time_t)(bound / 2 / 1000000000ull);
			ts.tv_nsec = (long)(bound / 2 % 1000000000ull);
			umcg__syscall6(SYS_nanosleep, (long)&ts, 0, 0, 0, 0, 0);
			continue;
		}
		/* Nothing to watch: sleep until a worker leaves the library
		 * (see "Detection" for the pair with watch_poke()). */
		umcg__store(&watch_idle, 1, umcg__seq_cst);
		bound = umcg__load(&detect_ns, umcg__relaxed);
		if (!bound || !watch_scan())
			umcg__futex_wait((uint32_t *)&watch_idle, 1, NULL, 0);
		umcg__store(&watch_idle, 0, umcg__relaxed);
	}
	return NULL;
}

/* Wake the watcher if it sleeps with nothing to watch. */
static void watch_poke(void)
{
	int one = 1;

	if (umcg__load(&watch_idle, umcg__seq_cst) &&
	    umcg__cas(&watch_idle, &one, 0, umcg__seq_cst))
		umcg__futex_wake((uint32_t *)&watch_idle);
}

/* Start the watcher once per process (again in a fork child). Without it
 * (pthread_create() failed, or detection is off) nothing is detected, and
 * kicks still spare sleepers. */
static void watch_start(void)
{
	int zero = 0;
	sigset_t all, old;
	pthread_attr_t attr;
	pthread_t th;
	int saved = errno;

	if (umcg__load(&watch_started, umcg__acquire) || !umcg_detect_get())
		return;
	if (!umcg__cas(&watch_started, &zero, 1, umcg__acq_rel))
		return;
	/* The watcher takes no signals: it inherits a full mask. */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	if (pthread_attr_init(&attr)) {
		umcg__store(&watch_started, WATCH_FAILED, umcg__release);
	} else {
		pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
		pthread_attr_setstacksize(&attr, 64 * 1024);
		if (pthread_create(&th, &attr, watch_main, NULL))
			umcg__store(&watch_started, WATCH_FAILED, umcg__release);
		else
			pthread_setname_np(th, "umcg-watch");
		pthread_attr_destroy(&attr);
	}
	if (umcg__load(&watch_started, umcg__acquire) == WATCH_FAILED)
		watch_up_set();
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	errno = saved;
}

/*
 * cut_short() - did the kick signal, taken at @uc, end a system call of
 * the program's with EINTR? Then the interrupted instruction pointer is
 * just past a `syscall` instruction and rax holds -EINTR. (A call the
 * kernel restarts itself, with SA_RESTART, shows rip back on the `syscall`
 * and rax holding the call's number.)
 */
static bool cut_short(void *uc)
{
	/* ThreadSanitizer defers handlers to a later point of its own and
	 * passes the context of the delivery: the call has returned by then,
	 * and resuming it there would restart whatever the thread did last. */
#if defined(__x86_64__) && !defined(__SANITIZE_THREAD__)
	const greg_t *g = ((ucontext_t *)uc)->uc_mcontext.gregs;
	const unsigned char *ip = (const unsigned char *)g[REG_RIP];

	if (g[REG_RAX] != -EINTR || (uintptr_t)ip < 4096 || !umcg__readable(ip - 8, 8))
		return false;
	return ip[-2] == 0x0f && ip[-1] == 0x05;
#else
	(void)uc;
	return false;
#endif
}

/* A cut call, in a region already (in_block set, or opened by resume_cut()):
 * restart it with restart_syscall(2) and put its result where the
 * interrupted code reads it. */
static void resume_in_region(void *uc)
{
#if defined(__x86_64__)
	((ucontext_t *)uc)->uc_mcontext.gregs[REG_RAX] =
		umcg__syscall6(SYS_restart_syscall, 0, 0, 0, 0, 0, 0);
#else
	(void)uc;
#endif
}

/*
 * resume_cut() - the kick signal ended the system call it met (cut_short()).
 * Resume the call with restart_syscall(2), BLOCKED while it sleeps, and put
 * its result where the interrupted code reads it. A call the kernel keeps
 * no restart block for (epoll_wait, select, ppoll) answers -EINTR at once,
 * and EINTR is then what the program sees.
 */
static void resume_cut(void *uc)
{
	struct umcg__etask *srv = self_task ? server_of(self_task) : NULL;
	/* A worker the watcher already made BLOCKED stays so; reclaim()
	 * takes it back afterwards. */
	bool region = !e_block_begin();

	/* A block nobody announced, caught by the signal: counted as the
	 * watcher counts the ones it finds. */
	if (region && srv)
		umcg__fetch_add(&srv->unannounced, 1, umcg__relaxed);
	resume_in_region(uc);
	if (region)
		e_block_end();
}

/* ---- process-wide set-up ----------------------------------------------- */

static void unregister_self(void)
{
	struct umcg__etask *e = self_task;

	/* The library's own calls from here on are not the program's. */
	umcg__intercept = 0;
	/* From here on a kick only futex-wakes us (3. above), and a kick
	 * signal already on its way finds in_lib set and does nothing: the
	 * thread must not be preempted once it left the registry. */
	umcg__store(&e->in_lib, 1, umcg__seq_cst);
	/* A detected worker leaves as it is; wait for a decider to finish. */
	while (umcg__load(&e->detected, umcg__seq_cst) == DET_DECIDING)
		umcg__syscall6(SYS_sched_yield, 0, 0, 0, 0, 0, 0);
	umcg__store(&e->detected, DET_NONE, umcg__relaxed);
	/* No watcher uses the timer's id now (slice_off()). */
	slice_delete(e);
	probe_close_all(e->probe_tid, e->probe_fd);
	umcg__registry_remove(e);
	/* No reader of our task block is left when we return (pin()). */
	umcg__store(&e->tid, 0, umcg__seq_cst);
	while (umcg__load(&e->pins, umcg__seq_cst))
		umcg__syscall6(SYS_sched_yield, 0, 0, 0, 0, 0, 0);
	self_task = NULL;
	umcg__intercept = 0;
	pthread_setspecific(exit_key, NULL);
	umcg__etask_free(e);
}

/* A registered thread that exits is unregistered, as the kernel does. */
static void on_thread_exit(void *arg)
{
	(void)arg;
	if (self_task)
		unregister_self();
}

/* Take every kick sent so far (they coalesce: see the header comment). */
static bool take_kicks(struct umcg__etask *e)
{
	/* Pairs with the release store in e_kick(): the state the kicker
	 * changed before it is visible to return_to_user(). */
	return umcg__xchg(&e->kick_pending, 0, umcg__acq_rel) != 0;
}

/*
 * no_cancel() - block CANCEL_SIGNAL in the thread (@on; the old mask goes
 * to @old) or restore @old, with the raw system call (glibc's wrappers
 * leave its internal signals alone). The handler's sa_mask holds it from
 * the delivery on; this holds it too when the handler is called by
 * something other than the kernel's delivery, as under ThreadSanitizer,
 * which defers signals and runs handlers later itself.
 */
static void no_cancel(bool on, unsigned long *old)
{
	unsigned long set[KSIGSET_WORDS] = { 0 };

	set[(CANCEL_SIGNAL - 1) / (8 * sizeof(set[0]))] =
		1UL << ((CANCEL_SIGNAL - 1) % (8 * sizeof(set[0])));
	if (on)
		umcg__syscall6(SYS_rt_sigprocmask, SIG_BLOCK, (long)set, (long)old, sizeof(set), 0,
			       0);
	else
		umcg__syscall6(SYS_rt_sigprocmask, SIG_SETMASK, (long)old, 0, sizeof(set), 0, 0);
}

static void kick_handler(int sig, siginfo_t *si, void *uc)
{
	unsigned long old[KSIGSET_WORDS];
	int saved = errno;
	struct umcg__etask *e = self_task;
	bool took = e && take_kicks(e);
	/* A slice timer's expiry, ours or (coalesced with it) a kick's. */
	bool timer = si->si_code == SI_TIMER && si->si_value.sival_int == SLICE_COOKIE;
	bool due = e && e->worker && slice_due(e);
	/* Sent by a kick, or by anyone once the queue limit dropped the
	 * siginfo (then SI_USER from pid 0). */
	bool ours = (si->si_code == SI_TKILL && si->si_pid == getpid()) ||
		    (si->si_code == SI_USER && si->si_pid == 0);
	bool in_lib, in_block, cut;

	if (took || due || (e && timer)) {
		/* in_lib set: the interrupted library call will run
		 * return_to_user() itself. in_block set: the worker is
		 * "in the kernel"; umcg_block_end() runs it. */
		in_lib = umcg__load(&e->in_lib, umcg__seq_cst);
		in_block = umcg__load(&e->in_block, umcg__relaxed);
		/* The signal met a system call the worker entered after a
		 * kicker's probe, or one nobody announced that its slice
		 * timer caught (see "Detection", "Slice timers"). */
		cut = !in_lib && cut_short(uc);
		/* A slice that ended while the worker ran (a sleep ends in
		 * a region instead, below). */
		if (due && !cut && !in_block && umcg__load(&e->detected, umcg__seq_cst) == DET_NONE)
			slice_preempt_self(e);
		if (!in_lib && !in_block) {
			no_cancel(true, old);
			if (cut)
				resume_cut(uc);
			enter_lib(e);
			return_to_user(e);
			no_cancel(false, old);
		} else if (cut) {
			/* A region's own call: it goes on where it was. */
			resume_in_region(uc);
		}
	}
	if (timer || (took && ours)) {
		/* Nothing of the program's. */
	} else if (prev_action.sa_flags & SA_SIGINFO) {
		if (prev_action.sa_sigaction)
			prev_action.sa_sigaction(sig, si, uc);
	} else if (prev_action.sa_handler != SIG_DFL && prev_action.sa_handler != SIG_IGN) {
		prev_action.sa_handler(sig);
	}
	errno = saved;
}

/*
 * Before fork(): if the watcher's thread is still starting (created by the
 * first registration of a worker, which may be just before the fork), wait
 * until it runs. A thread in its start-up holds locks of the allocator for
 * a moment, and an allocator that does not lock itself around fork() (the
 * one of AddressSanitizer here) would leave them held in the child, whose
 * next malloc() never returns. Once, for a few microseconds, per process.
 * At most 1 s: a fork() from a signal handler that interrupted watch_start()
 * itself, before its pthread_create(), would otherwise wait for ever.
 */
static void fork_prepare(void)
{
	struct timespec end;

	if (umcg__load(&watch_started, umcg__acquire) == 1 &&
	    !umcg__load(&watch_up, umcg__acquire)) {
		clock_gettime(CLOCK_MONOTONIC, &end);
		end.tv_sec += 1;
		while (!umcg__load(&watch_up, umcg__acquire) &&
		       umcg__futex_wait((uint32_t *)&watch_up, 0, &end, 0) != -ETIMEDOUT)
			;
	}
	umcg__registry_lock();
}

static void fork_parent(void)
{
	umcg__registry_unlock();
}

/* The child of fork() is not registered, and neither is anyone else. */
static void fork_child(void)
{
	struct umcg__etask *t;

	umcg__registry_unlock();
	umcg__registry_forget_all();
	self_task = NULL;
	umcg__intercept = 0;
	/* No watcher here; the descriptors name the parent's threads. A pin
	 * some other thread held at the fork is never taken back here: the
	 * child is alone, so every record has none (see umcg__etask_alloc()). */
	for (t = umcg__etask_all(); t; t = t->all_next) {
		probe_close_all(t->probe_tid, t->probe_fd);
		umcg__store(&t->pins, 0, umcg__relaxed);
	}
	probe_close_all(watch_probe_tid, watch_probe_fd);
	umcg__store(&watch_started, 0, umcg__relaxed);
	umcg__store(&watch_up, 0, umcg__relaxed);
	umcg__store(&watch_idle, 0, umcg__relaxed);
	pthread_setspecific(exit_key, NULL);
}

static void init_process(void)
{
	struct sigaction sa;
	int saved = errno;

	pthread_once(&detect_once, detect_env);
	if (pthread_key_create(&exit_key, on_thread_exit)) {
		init_err = -EAGAIN;
		goto out;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = kick_handler;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	/* No cancellation inside the handler (see the header comment).
	 * glibc's sigaddset() refuses its internal signals, but its
	 * sigaction() hands the mask to the kernel as it is. */
#ifdef __GLIBC__
	sa.sa_mask.__val[(CANCEL_SIGNAL - 1) / (8 * sizeof(sa.sa_mask.__val[0]))] |=
		1UL << ((CANCEL_SIGNAL - 1) % (8 * sizeof(sa.sa_mask.__val[0])));
#endif
	if (sigaction(KICK_SIGNAL, &sa, &prev_action)) {
		init_err = -errno;
		goto out;
	}
	if (pthread_atfork(fork_prepare, fork_parent, fork_child))
		init_err = -ENOMEM;
out:
	errno = saved;
}

/* ---- umcg_ctl ---------------------------------------------------------- */

/*
 * §4 rule 7: @t must be readable (and, since we CAS on it, writable), found
 * without touching it: umcg__readable() (a 64-byte aligned block never
 * crosses a page, so that is one look). Writability: process_vm_writev()
 * of the bytes just read, where the kernel has it (it changes nothing: the
 * block belongs to the calling thread, which is busy registering).
 */
static int check_access(struct umcg_task *t)
{
	unsigned char buf[sizeof(*t)];
	struct iovec local = { buf, sizeof(buf) };
	struct iovec remote = { t, sizeof(*t) };
	long r;

	if (!umcg__readable(t, sizeof(*t)))
		return -EFAULT;
	r = umcg__syscall6(SYS_process_vm_readv, getpid(), (long)&local, 1, (long)&remote, 1, 0);
	if (r != (long)sizeof(buf))
		return 0; /* not available here: readable is all we know */
	r = umcg__syscall6(SYS_process_vm_writev, getpid(), (long)&local, 1, (long)&remote, 1, 0);
	return r == -EFAULT ? -EFAULT : 0;
}

static int e_register(uint32_t flags, struct umcg_task *self, clockid_t clock)
{
	bool worker = flags & UMCG_CTL_WORKER;
	pid_t tid = umcg__gettid();
	struct umcg__etask *e, *srv = NULL;
	int ret;

	/* §4 rule 6 */
	if (self_task || !self)
		return -EINVAL;
	/* §4 rule 7 */
	ret = check_access(self);
	if (ret)
		return ret;
	/* §4 rule 8 */
	if (self->next_tid || self->__hole[0] || self->__zero[0] || self->__zero[1] ||
	    self->__zero[2])
		return -EINVAL;
	/* §4 rule 9 */
	if (worker) {
		srv = umcg__registry_lookup((pid_t)self->server_tid);
		if (!srv || umcg__load(&srv->worker, umcg__relaxed))
			return -ESRCH;
	} else if ((pid_t)self->server_tid != tid) {
		return -ESRCH;
	}
	/* §4 rule 10: state and flag bits exact; the user bits 16-31 are free. */
	if ((umcg__load(&self->state, umcg__relaxed) & (UMCG_TASK_MASK | UMCG_TF_MASK)) !=
	    (worker ? UMCG_TASK_BLOCKED : UMCG_TASK_RUNNING))
		return -EINVAL;

	pthread_once(&init_once, init_process);
	if (init_err)
		return init_err;
	e = umcg__etask_alloc();
	if (!e)
		return -ENOMEM;
	umcg__store(&e->ut, self, umcg__relaxed); /* see ut_of() */
	umcg__store(&e->worker, worker, umcg__relaxed); /* read by stale lookups too */
	e->clock = clock;
	if (!worker)
		e->have_affinity = umcg__syscall6(SYS_sched_getaffinity, 0, sizeof(e->affinity),
						  (long)&e->affinity, 0, 0, 0) > 0;
	umcg__store(&e->in_lib, 1, umcg__seq_cst);
	/* Release: the watcher, which finds records by their list rather
	 * than the table, sees ut, worker and the block's fields. */
	umcg__store(&e->tid, tid, umcg__release);
	ret = umcg__registry_insert(e);
	if (ret) {
		umcg__etask_free(e);
		return ret;
	}
	self_task = e;
	pthread_setspecific(exit_key, e);
	if (!worker) {
		umcg__store(&e->in_lib, 0, umcg__seq_cst);
		return 0;
	}
	umcg__intercept = 1;
	watch_start();
	/* §4 rule 13: BLOCKED -> RUNNABLE, push, wake the server, wait to run. */
	xition(self, UMCG_TASK_BLOCKED, UMCG_TASK_RUNNABLE);
	stamp_runnable(e);
	enqueue_self(e, srv);
	wake_server(srv);
	return_to_user(e);
	return 0;
}

static int e_ctl(uint32_t flags, struct umcg_task *self, clockid_t which_clock)
{
	/* A detected worker's call sees it RUNNING, as it would on the
	 * kernel. */
	umcg__settle();
	/* §4 rule 1 */
	if ((uintptr_t)self & (UMCG_TASK_ALIGN - 1))
		return -EINVAL;
	/* §4 rule 2 */
	if (flags & ~(UMCG_CTL_REGISTER | UMCG_CTL_UNREGISTER | UMCG_CTL_WORKER))
		return -EINVAL;
	/* §4 rule 3 */
	if (flags == UMCG_CTL_UNREGISTER) {
		if (self || !self_task)
			return -EINVAL;
		unregister_self();
		return 0;
	}
	/* §4 rule 4 */
	if (!(flags & UMCG_CTL_REGISTER))
		return -EINVAL;
	/* §4 rule 5 */
	if (!umcg__clock_valid(which_clock))
		return -EINVAL;
	return e_register(flags, self, which_clock);
}

/* ---- umcg_wait ----------------------------------------------------------- */

static int e_wait(uint32_t flags, uint64_t abs_timeout)
{
	struct umcg__etask *e = self_task, *srv = NULL, *next = NULL;
	struct umcg_task *ut;
	pid_t next_tid;
	int ret = 0;

	/* §5 rule 1 */
	if (!e || flags)
		return -EINVAL;
	/* §5 rule 2 */
	if (e->worker && abs_timeout)
		return -ERANGE;
	ut = e->ut;
	enter_lib(e);
	/* §5 rule 3 */
	if (e->worker) {
		srv = server_of(e);
		if (!srv) {
			ret = -ESRCH;
			goto out;
		}
	}
	next_tid = (pid_t)umcg__load(&ut->next_tid, umcg__relaxed);
	if (next_tid) {
		next = umcg__registry_lookup(next_tid);
		if (!next) {
			ret = -ESRCH;
			goto out;
		}
	}
	/* §5 rule 4: RUNNABLE -> RUNNABLE clears TF_COND_WAIT; failure means
	 * something made us RUNNING since we last looked. */
	if (!xition(ut, UMCG_TASK_RUNNABLE, UMCG_TASK_RUNNABLE)) {
		ret = -EAGAIN;
		goto out;
	}
	stamp_runnable(e);
	if (e->worker) {
		/* The run ends here: its slice can no longer be due. */
		slice_stop(e);
		/* §5 rule 5 */
		enqueue_self(e, srv);
		if (next && !wake_task(ut_of(next))) {
			umcg__store(&ut->next_tid, 0, umcg__relaxed);
		} else {
			if (next)
				ret = -EAGAIN; /* next not RUNNABLE: fall back */
			wake_server(srv);
		}
	} else if (next) {
		/* §5 rules 6-7 */
		if (wake_task(ut_of(next))) {
			xition(ut, UMCG_TASK_RUNNABLE, UMCG_TASK_RUNNING);
			ret = -EAGAIN;
			goto out;
		}
		umcg__store(&ut->next_tid, 0, umcg__relaxed);
	}
	/* §5 rule 8 */
	if (wait_running(e, abs_timeout) == -ETIMEDOUT) {
		/* Only a server has a deadline. If someone set us RUNNING
		 * meanwhile, that wake-up wins over the timeout (§5 rule 10). */
		if (xition(ut, UMCG_TASK_RUNNABLE, UMCG_TASK_RUNNING))
			ret = -ETIMEDOUT;
	}
out:
	return_to_user(e);
	return ret;
}

/* ---- umcg_kick ----------------------------------------------------------- */

/* Would return_to_user() do anything for a task in state @s? */
static bool kick_acts(const struct umcg__etask *t, uint32_t s)
{
	uint32_t st = s & UMCG_TASK_MASK;

	if (st == UMCG_TASK_RUNNING)
		return umcg__load(&t->worker, umcg__relaxed) && (s & UMCG_TF_PREEMPT);
	return !(st == UMCG_TASK_RUNNABLE && (s & UMCG_TF_COND_WAIT));
}

static int kick_pinned(struct umcg__etask *t, pid_t tid);

static int e_kick(uint32_t flags, pid_t tid)
{
	struct umcg__etask *t = umcg__registry_lookup(tid);
	int ret;

	if (!t)
		return -ESRCH;
	if (flags)
		return -EINVAL;
	if (!pin(t, tid))
		return -ESRCH;
	ret = kick_pinned(t, tid);
	unpin(t);
	return ret;
}

static int kick_pinned(struct umcg__etask *t, pid_t tid)
{
	uint32_t s;

	/* Dekker with return_to_user(): see 3. in the header comment. */
	if (umcg__load(&t->in_lib, umcg__seq_cst)) {
		umcg__futex_wake(&ut_of(t)->state);
		return 0;
	}
	if (umcg__load(&t->in_block, umcg__seq_cst))
		return 0;
	s = umcg__load(&ut_of(t)->state, umcg__seq_cst);
	if (!kick_acts(t, s))
		return 0;
	/* Asleep in a call that detection saw: as on the kernel, where the
	 * CAS on a BLOCKED worker fails, nothing happens. */
	if (umcg__load(&t->detected, umcg__seq_cst) != DET_NONE)
		return 0;
	/* With detection on, a RUNNING worker asleep in the kernel is not
	 * signalled: the signal would end its sleep (see "Detection"). With
	 * it off, kicks do not probe (README, "Blocking on the emulation"). */
	if ((s & UMCG_TASK_MASK) == UMCG_TASK_RUNNING && t != self_task &&
	    umcg__load(&detect_ns, umcg__relaxed)) {
		uint64_t cpu = thread_cpu_ns(tid);

		switch (probe_self(tid)) {
		case PROBE_ASLEEP:
			detect_block(t, tid, cpu);
			return 0;
		case PROBE_RUNNABLE:
			/* Not yet: the next slice end kicks again. */
			if (!ran_since_cpu(t, cpu))
				return 0;
			break;
		}
	}
	/* The record may have been recycled for another thread since the
	 * lookup (registry.c): only signal the thread it still names. */
	if (umcg__load(&t->tid, umcg__acquire) != tid)
		return -ESRCH;
	/* Pairs with the exchange in take_kicks(). A flag, not a count: a
	 * failed send leaves it set, and it costs at most one handler run
	 * that finds nothing to do. */
	umcg__store(&t->kick_pending, 1, umcg__release);
	/* A standard signal is never refused for a live thread (see the
	 * header comment): ESRCH means the thread has gone. */
	return (int)umcg__syscall6(SYS_tgkill, getpid(), tid, KICK_SIGNAL, 0, 0, 0);
}

/* ---- blocking hooks ----------------------------------------------------- */

static int e_block_begin(void)
{
	struct umcg__etask *e = self_task, *srv, *next;
	struct umcg_task *ut;
	pid_t next_tid;

	/* in_lib set: a signal handler interrupted a call of the library,
	 * whose state a region must not touch; the handler's call is plain. */
	if (!e || !e->worker || umcg__load(&e->in_block, umcg__relaxed) ||
	    umcg__load(&e->in_lib, umcg__relaxed))
		return -EINVAL;
	ut = e->ut;
	srv = server_of(e);
	if (!srv)
		return -ESRCH;
	enter_lib(e);
	if (!xition(ut, UMCG_TASK_RUNNING, UMCG_TASK_BLOCKED)) {
		umcg__store(&e->in_lib, 0, umcg__seq_cst);
		return -EAGAIN;
	}
	umcg__store(&ut->blocked_ts, now_ns(e->clock), umcg__relaxed);
	/* No slice timer in a region (see "Slice timers"). */
	if (e->slice_armed)
		slice_set(e, 0);
	umcg__store(&e->in_block, 1, umcg__seq_cst);
	/* The call in the region is the plain one (see umcg__intercept). */
	e->saved_intercept = umcg__intercept;
	umcg__intercept = 0;
	UMCG_TRACE1(block, e->tid);
	/* Wake next_tid, consuming it; a stale one (not RUNNABLE, or gone)
	 * is cleared and the server woken instead of killing the process. */
	next_tid = (pid_t)umcg__load(&ut->next_tid, umcg__relaxed);
	next = next_tid ? umcg__registry_lookup(next_tid) : NULL;
	if (next_tid)
		umcg__store(&ut->next_tid, 0, umcg__relaxed);
	if (!next || wake_task(ut_of(next)))
		wake_server(srv);
	/* BLOCKED is a state of "inside the kernel": no return_to_user(). */
	umcg__store(&e->in_lib, 0, umcg__seq_cst);
	return 0;
}

static int e_block_end(void)
{
	struct umcg__etask *e = self_task, *srv;

	if (!e || !umcg__load(&e->in_block, umcg__relaxed))
		return -EINVAL;
	srv = server_of(e);
	if (!srv)
		return -ESRCH;
	umcg__store(&e->in_lib, 1, umcg__seq_cst);
	umcg__store(&e->in_block, 0, umcg__seq_cst);
	if (xition(e->ut, UMCG_TASK_BLOCKED, UMCG_TASK_RUNNABLE)) {
		stamp_runnable(e);
		enqueue_self(e, srv);
		wake_server(srv);
	}
	return_to_user(e);
	umcg__intercept = e->saved_intercept;
	return 0;
}

static int e_kick_signal(void)
{
	return KICK_SIGNAL;
}

/* Called by @t's server before it runs @t (see "Slice timers"). */
static int e_slice_request(struct umcg_task *t, pid_t tid, uint64_t slice_ns, int *fired)
{
	struct umcg__etask *w = umcg__registry_lookup(tid);
	int ret = 0;

	if (!w || !pin(w, tid))
		return -ESRCH;
	if (ut_of(w) != t || !umcg__load(&w->worker, umcg__relaxed)) {
		ret = -EINVAL;
	} else if (slice_ns && umcg__load(&w->slice_tstate, umcg__acquire) == SLICE_T_FAILED) {
		ret = -ENOTSUP;
	} else {
		umcg__store(&w->slice_fired, fired, umcg__relaxed);
		/* A slice of SLICE_NONE would read as no request. */
		umcg__store(&w->slice_req, slice_ns == SLICE_NONE ? SLICE_NONE - 1 : slice_ns,
			    umcg__release);
	}
	unpin(w);
	return ret;
}

const struct umcg__backend_ops umcg__emulated_ops = {
	.name = "emulated",
	.ctl = e_ctl,
	.wait = e_wait,
	.kick = e_kick,
	.block_begin = e_block_begin,
	.block_end = e_block_end,
	.kick_signal = e_kick_signal,
	.slice_request = e_slice_request,
};
