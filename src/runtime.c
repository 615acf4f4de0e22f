/* SPDX-License-Identifier: MIT */
/*
 * runtime.c - per-CPU servers, worker lifecycle, parking and preemption on
 * top of the UMCG ABI (either backend).
 *
 * Who runs: each server runs at most one worker at a time. While that
 * worker runs, the server sleeps in umcg_wait(); it wakes when the worker
 * yields, parks, exits, blocks, is preempted, or when something is pushed
 * on its runnable list and it is RUNNABLE. Policies are called only from
 * server threads.
 *
 * The server loop (doc/umcg-abi.md §7 rule 8):
 *
 *	state = RUNNABLE|TF_COND_WAIT          (seq_cst)
 *	list  = umcg_runnable_take(self)        (seq_cst xchg)
 *	handle every worker on the list         (policy enqueue, parked, exits)
 *	if the current worker still RUNNING:    wait again (same slice deadline)
 *	else next = pick_next() or steal()      (next_tid = next)
 *	ret = umcg_wait(0, slice deadline or idle backstop)
 *
 * -EAGAIN means something woke the server between its take and its wait:
 * it loops. A next_tid left unconsumed goes back to the policy (ENQ_RETURN)
 * and next_tid is cleared, so it is never stale. -ETIMEDOUT with a running
 * worker and a timeslice preempts it (umcg_preempt()).
 *
 * Waking another server without waiting ("poke"): a thread CASes the
 * server's state RUNNABLE -> RUNNING and then umcg_kick()s it. The CAS makes
 * the server's next umcg_wait() fail with -EAGAIN (if it is not in it yet),
 * and the kick makes a server already asleep in umcg_wait() re-read its
 * state. The pusher's push (seq_cst CAS) comes before its CAS on the state;
 * the server's store of RUNNABLE|COND_WAIT comes before its xchg of the
 * list; so the server sees the push or the pusher sees RUNNABLE. Idle
 * servers also wait with a backstop timeout, so that no wake-up depends on
 * a kick reaching a sleeper.
 *
 * Overtime (preemptive runtimes, policies with nr_queued): a worker whose
 * slice ends while nothing else waits for its server is not preempted;
 * preempting it would only put it back on the CPU at a cost. The server
 * sets `overtime` and sleeps with only the idle backstop as its deadline;
 * the first worker that becomes runnable for it wakes it, and then the
 * overtime worker is preempted at once (its slice is over). What can
 * become runnable, and how the server hears of it:
 *   - a worker that yields, blocks, wakes or registers: umcg_wait(), the
 *     wake-up of a blocked worker and registration always wake the server;
 *   - a push by umcg_unpark() from another server's worker or a plain
 *     thread: that always pokes;
 *   - a push or a staging (see "Direct handoff") by a worker of this
 *     server: it pokes if it finds `overtime` set.
 * The last case is a Dekker pair: the server stores `overtime` and then
 * loads the runnable list head and the current worker's `staged`; the
 * worker pushes (or stores `staged`) and then loads `overtime`; all
 * seq_cst. Either the server sees the new worker and preempts, or the
 * worker sees `overtime` and pokes. The policy's queue needs no such
 * pair: only this server enqueues on it.
 *
 * Worker exit (the ABI reports none): the worker sets `exiting` and yields
 * a last time. The server finds it on its list and releases it: it names it
 * in next_tid and calls umcg_wait() with an already expired deadline, which
 * wakes the worker (RUNNABLE -> RUNNING) and returns -ETIMEDOUT at once. The
 * worker then unregisters and finishes as a plain thread. Nothing in this
 * relies on the kernel telling anyone about exits, and the server never
 * touches the worker after the release.
 *
 * Parking (umcg_park/umcg_unpark), per worker `park` word:
 *	NORMAL -> PERMIT          unpark before park
 *	NORMAL -> PARKING         park: worker about to yield
 *	PARKING -> NORMAL         unpark while parking: the server, finding it
 *	                          NORMAL on its list, enqueues it
 *	PARKING -> PARKED         server saw it on its list: held aside
 *	PARKED -> NORMAL          unpark: the unparker pushes it on its
 *	                          server's runnable list and pokes the server
 *	PERMIT -> NORMAL          park consumes the permit
 * All transitions are seq_cst CASes; exactly one party wins each, and only
 * the winner of PARKED -> NORMAL pushes the worker, so it is on at most one
 * list or queue at any time.
 *
 * A second word, `spark`, runs the same machine for <umcg/sync.h> alone
 * (umcg__sync_park()/umcg__sync_unpark()), so that the sync layer never
 * takes a permit meant for the program's own umcg_park(), and never
 * leaves one behind for it. A worker parks on one word at a time (a park
 * is one call, and a handler cannot park while it is inside one), and the
 * server holds aside whichever of the two says PARKING.
 *
 * Holds: a sync.c waker that will unpark worker W after W can already see
 * itself woken (and so return, exit and be joined) counts itself in
 * W->holds before it publishes the wake-up and takes itself out after the
 * unpark; every path that frees a worker waits for holds == 0 first
 * (worker_free()). The increment comes while W still waits and so cannot
 * be freed; the seq_cst decrement orders the whole unpark before the
 * freer's seq_cst load that sees 0.
 *
 * Direct handoff (policies with UMCG_POLICY_F_HANDOFF, at most
 * HANDOFF_BUDGET times between two picks of the server, so that workers
 * waiting in its queue lose at most that many turns): a worker C that
 * unparks a parked worker X of its own server keeps X in C->staged instead
 * of pushing it. At C's next yield or park, once its state is
 * RUNNABLE|TF_COND_WAIT (from then on no preemption can come), C writes
 * X's tid into its own next_tid, sets `in_switch`, and calls umcg_wait(),
 * which wakes X directly (consuming next_tid) without a round trip through
 * the sleeping server. next_tid is written nowhere else, so a block or a
 * preemption of C never hands off.
 *
 * The server learns about it when it next wakes (resolve_current()). Its
 * current worker C no longer RUNNING with C->staged set is in one of three
 * states, told apart by loading C's state and then `in_switch` (seq_cst,
 * in the opposite order of C's stores):
 *   - TF_COND_WAIT set or in_switch set, next_tid still set: C is inside
 *     its switch and will consume next_tid; the server yields the CPU to
 *     it until it has;
 *   - in_switch set and next_tid 0: X got the CPU; X becomes current and
 *     the server follows the chain (X may have handed off too);
 *   - neither: C was preempted or blocked before it switched; X never ran
 *     and the server queues it.
 * `staged` is taken with an exchange on both sides (the server when C is
 * not running, C itself in worker_finish()), so exactly one of them owns X.
 *
 * Signal handlers (umcg_unpark() is async-signal-safe): a handler that runs
 * on worker C and unparks a worker of C's own server must not stage it on
 * C, nor skip the poke, unless C is RUNNING user code, which will switch
 * soon. C's `in_rt` is set by C's own thread around every use of `staged`
 * (yield_self(), the staging in umcg_unpark(), worker_finish() for good);
 * only C's thread and handlers on it read it. An unpark that finds it set,
 * or C's state other than plain RUNNING (parked, blocked, preempted, in a
 * switch), pushes and pokes like a plain thread. The stores need only be
 * ordered against C's own program order, which the seq_cst accesses next
 * to them (or an opaque call) give. Every other step of an unpark is a
 * CAS, a push, clock_gettime() or a kick (a lock-free registry lookup and
 * a tgkill on the emulation): async-signal-safe.
 *
 * Start and stop, the `started` word: STOPPED -> STARTING -> STARTED
 * (umcg_rt_start) and STARTED -> STOPPING -> STOPPED (umcg_rt_stop, or back
 * to STARTED when workers are live), all seq_cst. A spawn counts itself in
 * `live` and then loads `started`; a stop CASes STARTED -> STOPPING and
 * then loads `live`. Either the spawn sees a non-STARTED word, or the stop
 * sees the spawn's count and gives up. A spawn that sees STOPPING takes
 * its count back and waits for the stop's answer: STOPPED, and it refuses
 * with -ENODEV; STARTED again (the stop saw other live workers and failed
 * with -EBUSY), and it counts itself anew. So a failing stop never makes a
 * spawn fail. `started` goes back to STOPPED only after the servers are
 * joined, so no spawn goes ahead on a runtime without servers.
 *
 * Detach vs exit, per worker `detach` word: JOINABLE -> DETACHED
 * (umcg_detach) or JOINABLE -> FINISHED (exit). Whoever loses the CAS frees:
 * a detached worker hands itself to the zombie list at exit; detaching a
 * finished worker joins it.
 *
 * Zombies: every worker thread is created joinable, so that drain and stop
 * return only once each worker's thread has ended, thread-local
 * destructors included. A detached worker at exit pushes itself on
 * rt->zombies (seq_cst CAS) and then bumps `events` (seq_cst) and wakes
 * it; it stays counted in `live`. Whoever takes the list (xchg) joins the
 * threads, frees them and decrements `live`: umcg_rt_drain() and
 * umcg_rt_stop() blocking, umcg_spawn() only for threads already gone
 * (pthread_tryjoin_np), pushing the others back. The drainer loads
 * `events`, takes the list, loads `live`, and futex-waits on `events` with
 * the value it loaded: a push it did not take, or `live` reaching 0
 * (which bumps `events` too), came after its load and ends the wait.
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include <umcg/runtime.h>

#include "atomics.h"
#include "backend.h"
#include "rt_sync.h"
#include "syscall.h"
#include "trace.h"

#define MAX_SERVERS 1024
#define DEFAULT_STACK (256 * 1024)
#define IDLE_BACKSTOP_NS 50000000ull /* 50 ms */
#define HANDOFF_BUDGET 8 /* direct handoffs between server visits */

enum {
	PARK_NORMAL,
	PARK_PERMIT,
	PARK_PARKING,
	PARK_PARKED
};
enum {
	RT_STOPPED,
	RT_STARTING,
	RT_STARTED,
	RT_STOPPING
};
enum {
	DETACH_JOINABLE,
	DETACH_DETACHED,
	DETACH_FINISHED
};

struct umcg_worker {
	struct umcg_task task; /* first: 64-byte aligned */
	struct umcg_rt *rt;
	pthread_t thread;
	pid_t tid;
	umcg_worker_fn fn;
	void *arg;
	void *retval;
	int prio;
	uint64_t deadline;
	char name[16];
	struct umcg_policy_link link;
	unsigned int server; /* home server; written by servers only */
	int exiting; /* set by the worker before its last yield */
	int park; /* PARK_*: umcg_park()/umcg_unpark() */
	int spark; /* PARK_*: the same for <umcg/sync.h> only (sync.c) */
	int holds; /* wakers of sync.c between a hold and its put */
	int detach; /* DETACH_* */
	int done; /* futex: 1 once finished and unregistered */
	int start_err; /* never ran: what umcg_join() reports */
	struct umcg_worker *zombie_next; /* on rt->zombies */
	int in_switch; /* inside yield_self(), state already RUNNABLE */
	int in_rt; /* own thread only: inside a call that uses `staged` */
	struct umcg_worker *staged; /* handed the CPU to on our next switch */
	int preempt_sent; /* server-private: it kicked this worker */
	int slice_fired; /* its slice timer preempted it (backend.h) */
	bool timer_armed; /* server-private: its run has a slice timer */
	int unparked; /* server-private: came back through unpark */
	bool started; /* server-private: seen on a list before */
	uint64_t t_pick; /* server-private: when it was last run */
	uint64_t park_ts; /* when it parked */
	struct umcg_worker_stats st; /* relaxed atomics, as for servers */
} __attribute__((aligned(UMCG_TASK_ALIGN)));

struct server {
	struct umcg_task task; /* first: 64-byte aligned */
	struct umcg_rt *rt;
	unsigned int idx;
	int cpu;
	pthread_t thread;
	pid_t tid;
	int idle; /* sleeping with nothing to run */
	int overtime; /* current ran past its slice, nothing waits */
	bool overtime_wait; /* our wait's deadline is the overtime backstop */
	bool wake_preempt; /* handle_list(): an arrival outranks current */
	bool rt_class; /* runs SCHED_FIFO or SCHED_RR (set or inherited) */
	int ready; /* registered (futex for start) */
	struct umcg_worker *current; /* ran last and may still be running */
	uint64_t slice_end;
	int handoffs_left; /* direct handoffs before we look again */
	struct umcg_server_stats st; /* relaxed atomics */
} __attribute__((aligned(UMCG_TASK_ALIGN)));

struct umcg_rt {
	struct umcg_rt_attr attr;
	struct umcg_policy_ops ops;
	void *policy;
	unsigned int nr;
	struct server *servers;
	pid_t owner;
	int started; /* RT_*: the lifecycle, see "Start and stop" */
	int stopping; /* servers may leave once no worker is live */
	int live; /* workers spawned and not yet joined or reaped */
	int events; /* futex: bumped when `live` reaches 0 or a zombie comes */
	struct umcg_worker *zombies; /* finished detached workers to join */
	/* UMCG_PREEMPT_TIMER in use: the backend's slice_request(). */
	int (*slice_request)(struct umcg_task *t, pid_t tid, uint64_t slice_ns, int *fired);
	unsigned int rr;
	cpu_set_t cpus;
};

static void reap_zombies(struct umcg_rt *rt, bool block);
static void worker_free(struct umcg_worker *w);

static __thread struct umcg_worker *cur_worker;
static pthread_once_t rt_once = PTHREAD_ONCE_INIT;
/*
 * The process ID, kept by the fork handler: getpid() is a system call in
 * glibc, and forked() runs on every unpark. A child made without fork()'s
 * handlers (_Fork(), a raw clone, a vfork() child that does not exec) is
 * not seen; it must not use a runtime of its parent.
 */
static pid_t rt_pid;

static void rt_fork_child(void)
{
	cur_worker = NULL;
	umcg__store(&rt_pid, getpid(), umcg__relaxed);
}

static void rt_init_once(void)
{
	umcg__store(&rt_pid, getpid(), umcg__relaxed);
	pthread_atfork(NULL, NULL, rt_fork_child);
}

static uint64_t clock_ns(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* @a + @b, saturated: a slice end past UINT64_MAX is "never". */
static uint64_t add_sat(uint64_t a, uint64_t b)
{
	return b > UINT64_MAX - a ? UINT64_MAX : a + b;
}

#define STAT_INC(p) umcg__fetch_add(&(p), 1, umcg__relaxed)
#define STAT_ADD(p, v) umcg__fetch_add(&(p), (v), umcg__relaxed)

static bool forked(const struct umcg_rt *rt)
{
	return rt->owner != umcg__load(&rt_pid, umcg__relaxed);
}

/* ---- small ABI helpers -------------------------------------------------- */

static void set_state(struct umcg_task *t, uint32_t st)
{
	uint32_t old = umcg__load(&t->state, umcg__relaxed);

	/* seq_cst: ordered before the list take or the push that follows
	 * (the lost-wakeup argument in the header comment). */
	umcg__store(&t->state, (old & ~(UMCG_TASK_MASK | UMCG_TF_MASK)) | st, umcg__seq_cst);
}

/* Poke server @s: make it RUNNING if it is RUNNABLE, and kick it awake. */
static void poke(struct server *s)
{
	uint32_t old = umcg__load(&s->task.state, umcg__seq_cst);

	do {
		if ((old & UMCG_TASK_MASK) != UMCG_TASK_RUNNABLE)
			return; /* running: it will take its list */
	} while (!umcg__cas(&s->task.state, &old,
			    (old & ~(UMCG_TASK_MASK | UMCG_TF_MASK)) | UMCG_TASK_RUNNING,
			    umcg__seq_cst));
	umcg_kick(0, s->tid);
}

/*
 * Let a worker on the server's CPU run for a moment; @n counts the pauses
 * of this wait so far. sched_yield() does it for a SCHED_OTHER server and
 * is cheap. A SCHED_FIFO or SCHED_RR server would get the CPU straight
 * back from its SCHED_OTHER workers, so it sleeps instead, long enough for
 * the worker to get somewhere: 20 us, doubling up to 640 us (a sleep of a
 * microsecond ends before the worker has done anything, and the server
 * spins until the kernel's RT throttling steps in). Servers block every
 * signal, so the sleep is never cut short.
 */
static void server_pause(const struct server *s, unsigned int n)
{
	struct timespec ts = { 0, 20000L << (n < 5 ? n : 5) };

	if (s->rt_class)
		nanosleep(&ts, NULL);
	else
		sched_yield();
}

/* ---- attributes and creation ------------------------------------------- */

UMCG_API void umcg_rt_attr_init(struct umcg_rt_attr *attr)
{
	if (!attr)
		return;
	memset(attr, 0, sizeof(*attr));
	attr->clock = CLOCK_MONOTONIC;
	attr->pin_servers = true;
}

UMCG_API void umcg_worker_attr_init(struct umcg_worker_attr *attr)
{
	if (!attr)
		return;
	memset(attr, 0, sizeof(*attr));
	attr->server = -1;
	attr->cpu = -1;
}

/* The ABI of struct umcg_rt_attr: `preempt` took a reserved slot. */
_Static_assert(offsetof(struct umcg_rt_attr, preempt) == 48, "umcg_rt_attr.preempt moved");
_Static_assert(sizeof(struct umcg_rt_attr) == 112, "umcg_rt_attr changed size");

/* UMCG_PREEMPT_DEFAULT resolved: UMCG_PREEMPT in the environment, or -1 if
 * it names no mode. */
static int preempt_mode(int asked)
{
	const char *env;

	if (asked != UMCG_PREEMPT_DEFAULT)
		return asked;
	env = getenv("UMCG_PREEMPT");
	if (!env || !*env || !strcmp(env, "server"))
		return UMCG_PREEMPT_SERVER;
	return strcmp(env, "timer") ? -1 : UMCG_PREEMPT_TIMER;
}

static int rt_create(struct umcg_rt **rtp, const struct umcg_rt_attr *attr)
{
	struct umcg_rt_attr def;
	struct umcg_rt *rt;
	int ret, ncpu;
	unsigned int i;

	if (!rtp)
		return -EINVAL;
	if (!attr) {
		umcg_rt_attr_init(&def);
		attr = &def;
	}
	if (attr->nr_servers > MAX_SERVERS || !umcg__clock_valid(attr->clock) ||
	    attr->server_priority < 0 || attr->server_priority > 99 ||
	    attr->preempt < UMCG_PREEMPT_DEFAULT || attr->preempt > UMCG_PREEMPT_TIMER ||
	    preempt_mode(attr->preempt) < 0 ||
	    (attr->timeslice_ns && attr->timeslice_ns < UMCG_TIMESLICE_MIN_NS))
		return -EINVAL;
	if (attr->policy && (!attr->policy->create || !attr->policy->destroy ||
			     !attr->policy->enqueue || !attr->policy->pick_next))
		return -EINVAL;
	ret = umcg_backend_active();
	if (ret < 0)
		return ret;
	pthread_once(&rt_once, rt_init_once);

	rt = calloc(1, sizeof(*rt));
	if (!rt)
		return -ENOMEM;
	rt->attr = *attr;
	rt->attr.preempt = preempt_mode(attr->preempt);
	if (attr->timeslice_ns && rt->attr.preempt == UMCG_PREEMPT_TIMER)
		rt->slice_request = umcg__backend(&ret)->slice_request;
	rt->ops = attr->policy ? *attr->policy : umcg_policy_fifo;
	rt->owner = umcg__load(&rt_pid, umcg__relaxed);
	if (umcg__syscall6(SYS_sched_getaffinity, 0, sizeof(rt->cpus), (long)&rt->cpus, 0, 0, 0) <=
	    0) {
		CPU_ZERO(&rt->cpus);
		CPU_SET(0, &rt->cpus);
	}
	ncpu = CPU_COUNT(&rt->cpus);
	rt->nr = attr->nr_servers ? attr->nr_servers : (unsigned int)ncpu;
	ret = posix_memalign((void **)&rt->servers, UMCG_TASK_ALIGN, rt->nr * sizeof(*rt->servers));
	if (ret) {
		free(rt);
		return -ENOMEM;
	}
	memset(rt->servers, 0, rt->nr * sizeof(*rt->servers));
	for (i = 0; i < rt->nr; i++) {
		int n = (int)(i % (unsigned int)ncpu), cpu;

		for (cpu = 0; cpu < CPU_SETSIZE; cpu++) {
			if (CPU_ISSET(cpu, &rt->cpus) && n-- == 0)
				break;
		}
		rt->servers[i].rt = rt;
		rt->servers[i].idx = i;
		rt->servers[i].cpu = attr->pin_servers ? cpu : -1;
		rt->servers[i].st.cpu = rt->servers[i].cpu;
	}
	rt->policy = rt->ops.create(rt->nr, attr->policy_arg);
	if (!rt->policy) {
		free(rt->servers);
		free(rt);
		return -ENOMEM;
	}
	*rtp = rt;
	return 0;
}

/* libc's allocators and the policy's create() may set errno when they fail. */
UMCG_API int umcg_rt_create(struct umcg_rt **rtp, const struct umcg_rt_attr *attr)
{
	int saved = errno, ret = rt_create(rtp, attr);

	errno = saved;
	return ret;
}

UMCG_API int umcg_rt_preempt_mode(const struct umcg_rt *rt)
{
	if (!rt)
		return -EINVAL;
	if (!rt->attr.timeslice_ns)
		return 0;
	return rt->slice_request ? UMCG_PREEMPT_TIMER : UMCG_PREEMPT_SERVER;
}

UMCG_API unsigned int umcg_rt_nr_servers(const struct umcg_rt *rt)
{
	return rt ? rt->nr : 0;
}

/* ---- the server --------------------------------------------------------- */

/* @w, picked at @w->t_pick, got the CPU. */
static void account_pick(struct server *s, struct umcg_worker *w)
{
	uint64_t rts = umcg__load(&w->task.runnable_ts, umcg__relaxed);

	if (w->t_pick > rts)
		STAT_ADD(w->st.runnable_ns, w->t_pick - rts);
	STAT_INC(w->st.switches);
	STAT_INC(s->st.switches);
	umcg__store(&w->st.server, (int)s->idx, umcg__relaxed);
}

/* @w came back on the list: account what it did since it was picked, and
 * return why it is runnable again. */
static enum umcg_enqueue_reason account_return(struct server *s, struct umcg_worker *w)
{
	uint64_t bts = umcg__load(&w->task.blocked_ts, umcg__relaxed);
	uint64_t rts = umcg__load(&w->task.runnable_ts, umcg__relaxed);
	enum umcg_enqueue_reason why = UMCG_ENQ_YIELD;

	if (!w->started) {
		w->started = true;
		return UMCG_ENQ_NEW;
	}
	if (w->unparked) {
		w->unparked = 0;
		if (w->park_ts > w->t_pick)
			STAT_ADD(w->st.running_ns, w->park_ts - w->t_pick);
		if (rts > w->park_ts)
			STAT_ADD(w->st.blocked_ns, rts - w->park_ts);
		return UMCG_ENQ_WAKE;
	}
	if (bts > w->t_pick) {
		STAT_ADD(w->st.running_ns, bts - w->t_pick);
		if (rts > bts)
			STAT_ADD(w->st.blocked_ns, rts - bts);
		STAT_INC(w->st.blocks);
		STAT_INC(s->st.blocks);
		why = UMCG_ENQ_WAKE;
	} else {
		if (rts > w->t_pick)
			STAT_ADD(w->st.running_ns, rts - w->t_pick);
	}
	/* Its slice timer, if any, preempted it: the flag was stored before
	 * the push that our take of the list saw. */
	w->timer_armed = false;
	if (umcg__load(&w->slice_fired, umcg__relaxed))
		w->preempt_sent = umcg__xchg(&w->slice_fired, 0, umcg__relaxed);
	if (w->preempt_sent) {
		w->preempt_sent = 0;
		if (why == UMCG_ENQ_YIELD) {
			STAT_INC(w->st.preemptions);
			STAT_INC(s->st.preemptions);
			why = UMCG_ENQ_PREEMPT;
		}
	}
	return why;
}

/*
 * Wake @tid from server @s without waiting for it (see "Worker exit" in
 * the header comment). Return: true if @tid was woken.
 */
static bool wake_nowait(struct server *s, pid_t tid)
{
	unsigned int tries;

	for (tries = 0; tries < 100; tries++) {
		umcg__store(&s->task.next_tid, (uint32_t)tid, umcg__relaxed);
		set_state(&s->task, UMCG_TASK_RUNNABLE | UMCG_TF_COND_WAIT);
		umcg_wait(0, 1);
		if (!umcg__load(&s->task.next_tid, umcg__relaxed))
			return true;
		umcg__store(&s->task.next_tid, 0, umcg__relaxed);
		/* Unconsumed: we were woken ourselves (the caller takes the
		 * list again anyway), or @tid is not RUNNABLE yet. */
		server_pause(s, tries);
	}
	return false;
}

/* Another server is idle and we have more than we run: wake one. */
static void wake_idle(struct server *s)
{
	struct umcg_rt *rt = s->rt;
	unsigned int i;
	int one = 1;

	if (!rt->ops.steal || !rt->ops.nr_queued || rt->nr < 2 ||
	    rt->ops.nr_queued(rt->policy, s->idx) == 0)
		return;
	for (i = 1; i < rt->nr; i++) {
		struct server *o = &rt->servers[(s->idx + i) % rt->nr];

		if (umcg__load(&o->idle, umcg__relaxed) &&
		    umcg__cas(&o->idle, &one, 0, umcg__seq_cst)) {
			STAT_INC(s->st.wakeups_sent);
			poke(o);
			return;
		}
		one = 1;
	}
}

static void handle_list(struct server *s, struct umcg_task *list, struct umcg_worker **exits)
{
	struct umcg_rt *rt = s->rt;
	struct umcg_task *t, *tmp;
	int parking = PARK_PARKING, *pw;

	list = umcg_runnable_sort_oldest(list);
	umcg_runnable_for_each(t, tmp, list) {
		struct umcg_worker *w = (struct umcg_worker *)t;
		enum umcg_enqueue_reason why;
		bool ask;

		if (w == s->current)
			s->current = NULL;
		/* Moved here by a thief or an unpark while we looked away. */
		w->server = s->idx;
		why = account_return(s, w);
		if (umcg__load(&w->exiting, umcg__acquire)) {
			if (rt->ops.on_exit)
				rt->ops.on_exit(rt->policy, s->idx, w);
			w->link.next = (struct umcg_policy_link *)*exits;
			*exits = w;
			continue;
		}
		pw = umcg__load(&w->park, umcg__seq_cst) == PARK_PARKING ? &w->park : &w->spark;
		if (why != UMCG_ENQ_NEW && umcg__load(pw, umcg__seq_cst) == PARK_PARKING) {
			if (umcg__cas(pw, &parking, PARK_PARKED, umcg__seq_cst)) {
				STAT_INC(s->st.yields);
				continue; /* held aside until unparked */
			}
			/* Unparked while parking: it runs again. */
			parking = PARK_PARKING;
			why = UMCG_ENQ_WAKE;
		}
		if (why == UMCG_ENQ_YIELD)
			STAT_INC(s->st.yields);
		ask = (why == UMCG_ENQ_NEW || why == UMCG_ENQ_WAKE) && s->current &&
		      !s->wake_preempt && (rt->ops.flags & UMCG_POLICY_F_WAKE_PREEMPT) &&
		      rt->ops.preempts;
		/* Once enqueued, @w can be stolen by another server, run, finish
		 * and be freed by its joiner before preempts() reads it: a hold
		 * keeps it (see "Holds"). @s->current runs here and cannot. */
		if (ask)
			umcg__worker_hold(w);
		rt->ops.enqueue(rt->policy, s->idx, w, why);
		if (ask) {
			if (rt->ops.preempts(rt->policy, s->idx, w, s->current))
				s->wake_preempt = true;
			umcg__worker_put(w);
		}
	}
}

/*
 * Preempt current worker @c of @s (TF_PREEMPT and a kick): it comes back
 * through handle_list() as UMCG_ENQ_PREEMPT. A worker that stopped in the
 * meantime fails the ABI's CAS and is found on the list at the next turn.
 */
static void send_preempt(struct server *s, struct umcg_worker *c)
{
	c->preempt_sent = 1;
	if (umcg_preempt(&c->task, c->tid))
		c->preempt_sent = 0;
	else
		UMCG_TRACE2(preempt, (int)s->idx, c->tid);
}

/*
 * Wake-up preemption (struct umcg_policy_ops, @preempts): an arrival that
 * the policy ranks above the running worker preempts it now, as a slice
 * end would.
 */
static void wake_preempt(struct server *s)
{
	struct umcg_worker *c = s->current;

	s->wake_preempt = false;
	if (c && !c->preempt_sent)
		send_preempt(s, c);
}

/* Release the exiting workers collected by handle_list(). */
static void release_exits(struct server *s, struct umcg_worker *exits)
{
	while (exits) {
		struct umcg_worker *w = exits;

		exits = (struct umcg_worker *)w->link.next;
		/* @w is RUNNABLE and off every list: nobody else wakes it. */
		while (!wake_nowait(s, w->tid))
			;
	}
}

static struct umcg_worker *pick(struct server *s)
{
	struct umcg_rt *rt = s->rt;
	struct umcg_worker *w = rt->ops.pick_next(rt->policy, s->idx);

	if (!w && rt->ops.steal) {
		w = rt->ops.steal(rt->policy, s->idx);
		if (w) {
			STAT_INC(s->st.steals);
			UMCG_TRACE2(steal, (int)s->idx, w->tid);
			w->server = s->idx;
			umcg__store(&w->task.server_tid, (uint32_t)s->tid, umcg__relaxed);
		}
	}
	return w;
}

/* Which worker runs on @s now? See "Direct handoff" above. */
static void resolve_current(struct server *s)
{
	struct umcg_rt *rt = s->rt;
	struct umcg_worker *c, *x;
	unsigned int pauses = 0;
	bool handed;
	uint32_t st;
	int in;

	while ((c = s->current)) {
		/* Pairs with the worker's state transitions (seq_cst). */
		st = umcg__load(&c->task.state, umcg__acquire) & UMCG_TASK_MASK;
		if (st == UMCG_TASK_RUNNING)
			return;
		if (st == UMCG_TASK_BLOCKED && rt->ops.on_block)
			rt->ops.on_block(rt->policy, s->idx, c);
		s->current = NULL;
		if (!umcg__load(&c->staged, umcg__acquire))
			return; /* blocked, or about to show up on the list */
		for (;;) {
			st = umcg__load(&c->task.state, umcg__seq_cst);
			in = umcg__load(&c->in_switch, umcg__seq_cst);
			if (!in && !(st & UMCG_TF_COND_WAIT)) {
				handed = false; /* preempted or blocked first */
				break;
			}
			if (in && !umcg__load(&c->task.next_tid, umcg__acquire)) {
				handed = true;
				break;
			}
			/* It is about to hand over: let it. */
			server_pause(s, pauses++);
		}
		x = umcg__xchg(&c->staged, NULL, umcg__acq_rel);
		if (!x)
			return;
		if (!handed) {
			rt->ops.enqueue(rt->policy, s->idx, x, UMCG_ENQ_WAKE);
			return;
		}
		s->current = x;
		/* It runs without a slice timer: we preempt it. */
		x->timer_armed = false;
		x->t_pick = clock_ns(rt->attr.clock);
		/* A fresh slice from when we learnt of it. */
		s->slice_end = add_sat(x->t_pick, rt->attr.timeslice_ns);
		account_pick(s, x);
	}
}

/*
 * May current worker @c run past its slice? Only if nothing waits for
 * this server; see "Overtime" for the Dekker pair with the pushers.
 */
static bool overtime_ok(struct server *s, struct umcg_worker *c)
{
	struct umcg_rt *rt = s->rt;

	if (!rt->ops.nr_queued)
		return false;
	umcg__store(&s->overtime, 1, umcg__seq_cst);
	if (rt->ops.nr_queued(rt->policy, s->idx) == 0 &&
	    !umcg__load(&s->task.runnable_workers_ptr, umcg__seq_cst) &&
	    !umcg__load(&c->staged, umcg__seq_cst))
		return true;
	umcg__store(&s->overtime, 0, umcg__relaxed);
	return false;
}

/*
 * Slice timers (UMCG_PREEMPT_TIMER; emulated.c, "Slice timers"): before a
 * worker's run, its server asks for the run to end a slice after it
 * starts, and the worker's own timer preempts it there. Only when something else
 * waits at the start of the run; otherwise the run may go into overtime,
 * which only the server can judge, and the server preempts it as without
 * timers. The server then keeps a backstop: it wakes a slice after the
 * slice end and preempts the old way if the worker has not come back.
 */
static bool others_wait(struct server *s)
{
	struct umcg_rt *rt = s->rt;

	return !rt->ops.nr_queued || rt->ops.nr_queued(rt->policy, s->idx) > 0 ||
	       umcg__load(&s->task.runnable_workers_ptr, umcg__relaxed);
}

/* Ask for @w's timer for the run that starts now, a slice from the moment
 * it really starts (never early); @none: cancel a request no run took. */
static void request_slice(struct server *s, struct umcg_worker *w, bool none)
{
	struct umcg_rt *rt = s->rt;
	uint64_t ns = none || s->slice_end == UINT64_MAX || !others_wait(s) ? 0 :
									      rt->attr.timeslice_ns;

	w->timer_armed = !rt->slice_request(&w->task, w->tid, ns, &w->slice_fired) && ns;
}

/* When server @s wants to hear of its run of @w ending at s->slice_end. */
static uint64_t slice_deadline(const struct server *s, const struct umcg_worker *w)
{
	return w->timer_armed ? add_sat(s->slice_end, s->rt->attr.timeslice_ns) : s->slice_end;
}

/*
 * The current worker runs: preempt it if its slice is over and something
 * waits. @expired: our last wait was an overtime one and ran out. Return:
 * the deadline for our wait.
 */
static uint64_t check_slice(struct server *s, bool expired)
{
	struct umcg_rt *rt = s->rt;
	struct umcg_worker *c = s->current;
	uint64_t now = clock_ns(rt->attr.clock), end = slice_deadline(s, c);

	if (now < end)
		return end;
	if (overtime_ok(s, c)) {
		s->overtime_wait = true;
		return now + IDLE_BACKSTOP_NS;
	}
	/* Something waits that did not wake us: see missed_wakeups. */
	if (expired)
		STAT_INC(s->st.missed_wakeups);
	send_preempt(s, c);
	c->timer_armed = false;
	/* If the kick has not landed a slice from now, kick again. */
	s->slice_end = add_sat(now, rt->attr.timeslice_ns);
	return s->slice_end;
}

static void server_loop(struct server *s)
{
	struct umcg_rt *rt = s->rt;
	uint64_t slice = rt->attr.timeslice_ns;
	clockid_t clk = rt->attr.clock;
	bool expired = false;

	for (;;) {
		struct umcg_worker *next = NULL, *exits = NULL;
		struct umcg_task *list;
		uint64_t deadline = 0;
		int ret;

		set_state(&s->task, UMCG_TASK_RUNNABLE | UMCG_TF_COND_WAIT);
		list = umcg_runnable_take(&s->task);
		/* Before the list: its workers may be links of the chain. */
		resolve_current(s);
		if (list) {
			handle_list(s, list, &exits);
			if (s->wake_preempt)
				wake_preempt(s);
			/* Queued behind a running worker: a thief may help. */
			if (s->current)
				wake_idle(s);
		}
		if (exits) {
			release_exits(s, exits);
			continue; /* our state was used: start over */
		}
		if (!s->current) {
			if (umcg__load(&rt->stopping, umcg__seq_cst) &&
			    !umcg__load(&rt->live, umcg__acquire)) {
				set_state(&s->task, UMCG_TASK_RUNNING);
				return;
			}
			next = pick(s);
		}
		if (next) {
			umcg__store(&s->task.next_tid, (uint32_t)next->tid, umcg__relaxed);
			umcg__store(&s->handoffs_left, HANDOFF_BUDGET, umcg__relaxed);
			next->t_pick = clock_ns(clk);
			if (slice)
				s->slice_end = add_sat(next->t_pick, slice);
			if (rt->slice_request)
				request_slice(s, next, false);
			wake_idle(s);
		}
		umcg__store(&s->overtime, 0, umcg__relaxed);
		if (s->current && slice) {
			deadline = check_slice(s, expired);
		} else if (s->current || next) {
			deadline = slice ? slice_deadline(s, next) : 0;
		} else {
			deadline = clock_ns(clk) + IDLE_BACKSTOP_NS;
			umcg__store(&s->idle, 1, umcg__seq_cst);
		}

		ret = umcg_wait(0, deadline);
		expired = s->overtime_wait && ret == -ETIMEDOUT;
		s->overtime_wait = false;

		if (!s->current && !next) {
			if (!umcg__xchg(&s->idle, 0, umcg__seq_cst) && ret == 0)
				STAT_INC(s->st.idle_wakeups);
		}
		if (next) {
			if (umcg__load(&s->task.next_tid, umcg__relaxed)) {
				/* Not consumed: it goes back, next_tid is
				 * cleared so it is never stale. */
				umcg__store(&s->task.next_tid, 0, umcg__relaxed);
				/* Nor is its slice request: a later run that
				 * is not ours must not take it. */
				if (rt->slice_request)
					request_slice(s, next, true);
				rt->ops.enqueue(rt->policy, s->idx, next, UMCG_ENQ_RETURN);
			} else {
				s->current = next;
				account_pick(s, next);
				UMCG_TRACE3(switch, (int)s->idx, next->tid, 0);
			}
		}
		/* A timeout: the next turn preempts (check_slice()). */
	}
}

static void *server_main(void *arg)
{
	struct server *s = arg;
	struct umcg_rt *rt = s->rt;
	uint64_t unannounced;
	sigset_t all;
	int ret;

	/* Servers take no signals: a signal would drop a kernel server's
	 * timeout (doc/umcg-abi.md §9 rule 4), and nothing here needs one. */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	if (rt->attr.server_priority > 0) {
		struct sched_param sp = { .sched_priority = rt->attr.server_priority };

		ret = pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp);
		if (ret) {
			umcg__store(&s->ready, -ret, umcg__release);
			umcg__futex_wake((uint32_t *)&s->ready);
			return NULL;
		}
	}
	/* Set, or inherited from the thread that started us. */
	ret = sched_getscheduler(0);
	s->rt_class = ret == SCHED_FIFO || ret == SCHED_RR;
	/* Slice ends to the microsecond, not the default 50 us timer slack. */
	prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
	if (s->cpu >= 0) {
		cpu_set_t one;

		CPU_ZERO(&one);
		CPU_SET(s->cpu, &one);
		pthread_setaffinity_np(pthread_self(), sizeof(one), &one);
	}
	s->tid = umcg__gettid();
	memset(&s->task, 0, sizeof(s->task));
	s->task.state = UMCG_TASK_RUNNING;
	s->task.server_tid = (uint32_t)s->tid;
	ret = umcg_ctl(UMCG_CTL_REGISTER, &s->task, rt->attr.clock);
	umcg__store(&s->ready, ret ? -EAGAIN : 1, umcg__release);
	umcg__futex_wake((uint32_t *)&s->ready);
	if (ret)
		return NULL;
	server_loop(s);
	/* The emulation's count dies with the registration: keep it. */
	unannounced = umcg__unannounced_blocks(s->tid);
	umcg_ctl(UMCG_CTL_UNREGISTER, NULL, 0);
	umcg__fetch_add(&s->st.unannounced_blocks, unannounced, umcg__relaxed);
	return NULL;
}

static void wait_word(int *word, int val)
{
	while (umcg__load(word, umcg__acquire) == val)
		umcg__futex_wait((uint32_t *)word, (uint32_t)val, NULL, 0);
}

static void stop_servers(struct umcg_rt *rt, unsigned int n)
{
	unsigned int i;

	umcg__store(&rt->stopping, 1, umcg__seq_cst);
	for (i = 0; i < n; i++) {
		if (umcg__load(&rt->servers[i].ready, umcg__acquire) == 1)
			poke(&rt->servers[i]);
	}
	for (i = 0; i < n; i++)
		pthread_join(rt->servers[i].thread, NULL);
}

/* After stop_servers(): ready for another umcg_rt_start(). */
static void reset_servers(struct umcg_rt *rt)
{
	unsigned int i;

	for (i = 0; i < rt->nr; i++) {
		struct server *s = &rt->servers[i];

		umcg__store(&s->ready, 0, umcg__relaxed);
		umcg__store(&s->idle, 0, umcg__relaxed);
		s->current = NULL;
		s->tid = 0;
	}
	umcg__store(&rt->stopping, 0, umcg__relaxed);
}

static int rt_start(struct umcg_rt *rt)
{
	int ret = 0, stopped = RT_STOPPED;
	unsigned int i;

	if (!rt)
		return -EINVAL;
	if (forked(rt))
		return -ECHILD;
	if (cur_worker)
		return -EDEADLK;
	if (!umcg__cas(&rt->started, &stopped, RT_STARTING, umcg__seq_cst))
		return -EBUSY;
	for (i = 0; i < rt->nr; i++) {
		if (pthread_create(&rt->servers[i].thread, NULL, server_main, &rt->servers[i])) {
			ret = -EAGAIN;
			break;
		}
		wait_word(&rt->servers[i].ready, 0);
		if (rt->servers[i].ready != 1) {
			pthread_join(rt->servers[i].thread, NULL);
			ret = rt->servers[i].ready;
			break;
		}
	}
	if (ret) {
		stop_servers(rt, i);
		reset_servers(rt);
		umcg__store(&rt->started, RT_STOPPED, umcg__seq_cst);
		return ret;
	}
	/* Pairs with the seq_cst load in umcg_spawn(). */
	umcg__store(&rt->started, RT_STARTED, umcg__seq_cst);
	return 0;
}

/* A pthread_create() that fails leaves its stack mmap()'s ENOMEM in errno. */
UMCG_API int umcg_rt_start(struct umcg_rt *rt)
{
	int saved = errno, ret = rt_start(rt);

	errno = saved;
	return ret;
}

UMCG_API int umcg_rt_drain(struct umcg_rt *rt)
{
	int n;

	if (!rt)
		return -EINVAL;
	if (forked(rt))
		return -ECHILD;
	if (cur_worker && cur_worker->rt == rt)
		return -EDEADLK;
	for (;;) {
		/* Before the take and the look at `live`: see "Zombies". */
		n = umcg__load(&rt->events, umcg__seq_cst);
		reap_zombies(rt, true);
		if (!umcg__load(&rt->live, umcg__seq_cst))
			return 0;
		umcg__futex_wait((uint32_t *)&rt->events, (uint32_t)n, NULL, 0);
	}
}

UMCG_API int umcg_rt_stop(struct umcg_rt *rt)
{
	int st = RT_STARTED;

	if (!rt)
		return -EINVAL;
	if (forked(rt))
		return -ECHILD;
	if (cur_worker && cur_worker->rt == rt)
		return -EDEADLK;
	/* seq_cst: the Dekker pair with umcg_spawn() ("Start and stop"). */
	if (!umcg__cas(&rt->started, &st, RT_STOPPING, umcg__seq_cst))
		return st == RT_STOPPED ? 0 : -EBUSY;
	reap_zombies(rt, true);
	if (umcg__load(&rt->live, umcg__seq_cst)) {
		umcg__store(&rt->started, RT_STARTED, umcg__seq_cst);
		return -EBUSY;
	}
	stop_servers(rt, rt->nr);
	reset_servers(rt);
	/* Only now: a spawn that sees STOPPED refuses, as it did STOPPING. */
	umcg__store(&rt->started, RT_STOPPED, umcg__seq_cst);
	return 0;
}

UMCG_API int umcg_rt_destroy(struct umcg_rt *rt)
{
	int ret;

	if (!rt)
		return 0;
	if (!forked(rt)) {
		ret = umcg_rt_stop(rt);
		if (ret)
			return ret;
	}
	rt->ops.destroy(rt->policy);
	free(rt->servers);
	free(rt);
	return 0;
}

/* ---- workers ------------------------------------------------------------- */

static void events_bump(struct umcg_rt *rt)
{
	/* seq_cst: after the change it announces, before the drainer's
	 * futex_wait() compares (see "Zombies"). */
	umcg__fetch_add(&rt->events, 1, umcg__seq_cst);
	umcg__futex_wake_n((uint32_t *)&rt->events, INT_MAX);
}

static void live_dec(struct umcg_rt *rt)
{
	if (umcg__fetch_add(&rt->live, -1, umcg__seq_cst) == 1)
		events_bump(rt);
}

/* A finished detached worker, or one not yet joinable, goes on the list. */
static void zombie_push(struct umcg_rt *rt, struct umcg_worker *w)
{
	struct umcg_worker *old = umcg__load(&rt->zombies, umcg__relaxed);

	do {
		w->zombie_next = old;
		/* Release: zombie_next before the reaper's acquire xchg. */
	} while (!umcg__cas(&rt->zombies, &old, w, umcg__seq_cst));
	events_bump(rt);
}

/*
 * Join the threads of finished detached workers and free them. @block:
 * wait for each (drain and stop); else only those whose thread is gone
 * (spawn), the others go back on the list.
 */
static void reap_zombies(struct umcg_rt *rt, bool block)
{
	/* Pairs with the seq_cst CAS in zombie_push(). */
	struct umcg_worker *w = umcg__xchg(&rt->zombies, NULL, umcg__acq_rel), *next;
	int saved = errno;

	for (; w; w = next) {
		next = w->zombie_next;
		if (block)
			pthread_join(w->thread, NULL);
		else if (pthread_tryjoin_np(w->thread, NULL)) {
			zombie_push(rt, w);
			continue;
		}
		worker_free(w);
		live_dec(rt);
	}
	errno = saved;
}

/*
 * Yield to our server, or hand over to our staged worker. @exiting marks
 * the last switch of a finishing worker; it is set only once the state is
 * RUNNABLE, so a preemption just before cannot pass for the exit.
 */
static void yield_self(struct umcg_worker *w, bool exiting)
{
	struct umcg_worker *x;

	/* Before the state: a handler that sees in_rt clear and us RUNNING
	 * interrupted code that is not here (see "Signal handlers"). The
	 * seq_cst store of the state keeps it first. */
	umcg__store(&w->in_rt, 1, umcg__relaxed);
	set_state(&w->task, UMCG_TASK_RUNNABLE | UMCG_TF_COND_WAIT);
	/* From here on nothing preempts us: see "Direct handoff". */
	if (exiting)
		umcg__store(&w->exiting, 1, umcg__release);
	x = umcg__load(&w->staged, umcg__acquire);
	if (x) {
		umcg__store(&w->task.next_tid, (uint32_t)x->tid, umcg__relaxed);
		UMCG_TRACE3(switch, (int)w->server, x->tid, 1);
	}
	umcg__store(&w->in_switch, 1, umcg__seq_cst);
	umcg_wait(0, 0);
	umcg__store(&w->in_switch, 0, umcg__seq_cst);
	umcg__store(&w->in_rt, 0, umcg__relaxed);
}

static void worker_finish(void *arg)
{
	struct umcg_worker *w = arg, *x;
	struct umcg_rt *rt = w->rt;
	int joinable = DETACH_JOINABLE;

	UMCG_TRACE2(exit, (int)w->server, w->tid);
	/*
	 * A worker we kept for a direct handoff goes to the server instead:
	 * our last switch must wake the server, which releases us, rather
	 * than hand the CPU on and leave our release to whenever the server
	 * wakes next.
	 */
	/* For good: a handler's unpark must not stage on us any more. */
	umcg__store(&w->in_rt, 1, umcg__seq_cst);
	x = umcg__xchg(&w->staged, NULL, umcg__acq_rel);
	if (x)
		umcg__runnable_push(&rt->servers[x->server].task, &x->task);
	/* Last yield: the server releases us (see "Worker exit"). */
	yield_self(w, true);
	umcg_ctl(UMCG_CTL_UNREGISTER, NULL, 0);
	cur_worker = NULL;
	if (umcg__cas(&w->detach, &joinable, DETACH_FINISHED, umcg__acq_rel)) {
		/* Pairs with the acquire in umcg_join(). */
		umcg__store(&w->done, 1, umcg__release);
		umcg__futex_wake((uint32_t *)&w->done);
		return;
	}
	/* Detached: nobody joins us; drain, stop or a spawn joins our
	 * thread and frees us once it has ended (see "Zombies"). We must
	 * not touch @w after the push. */
	zombie_push(rt, w);
}

static void *worker_main(void *arg)
{
	struct umcg_worker *w = arg;
	struct umcg_rt *rt = w->rt;
	sigset_t kick;
	int sig = umcg_kick_signal(), reg;
	void *ret;

	if (sig > 0) {
		sigemptyset(&kick);
		sigaddset(&kick, sig);
		pthread_sigmask(SIG_UNBLOCK, &kick, NULL);
	}
	cur_worker = w;
	umcg__store(&w->tid, umcg__gettid(), umcg__release);
	UMCG_TRACE2(spawn, (int)w->server, w->tid);
	if (w->name[0])
		pthread_setname_np(pthread_self(), w->name);
	w->task.state = UMCG_TASK_BLOCKED;
	w->task.server_tid = (uint32_t)rt->servers[w->server].tid;
	reg = umcg_ctl(UMCG_CTL_REGISTER | UMCG_CTL_WORKER, &w->task, rt->attr.clock);
	if (reg) {
		/* The runtime was stopped under us (-ESRCH: no server), or the
		 * emulation could not allocate our record (-ENOMEM). Finish as
		 * a plain thread so that joiners do not hang, and tell them. */
		cur_worker = NULL;
		w->retval = NULL;
		w->start_err = reg == -ENOMEM ? -ENOMEM : -ENODEV;
		umcg__store(&w->exiting, 1, umcg__relaxed);
		if (umcg__xchg(&w->detach, DETACH_FINISHED, umcg__acq_rel) == DETACH_DETACHED) {
			zombie_push(rt, w);
			return NULL;
		}
		umcg__store(&w->done, 1, umcg__release);
		umcg__futex_wake((uint32_t *)&w->done);
		return NULL;
	}
	pthread_cleanup_push(worker_finish, w);
	ret = w->fn(w->arg);
	w->retval = ret;
	pthread_cleanup_pop(1);
	/* What pthread_join() in umcg_join() sees, as after pthread_exit();
	 * from @ret: worker_finish() may have freed @w. */
	return ret;
}

static int spawn(struct umcg_rt *rt, struct umcg_worker **wp, const struct umcg_worker_attr *attr,
		 umcg_worker_fn fn, void *arg)
{
	struct umcg_worker_attr def;
	struct umcg_worker *w;
	pthread_attr_t pa;
	unsigned int idx, i;
	size_t stack;
	int ret, st;

	if (!rt || !fn)
		return -EINVAL;
	if (forked(rt))
		return -ECHILD;
	if (!attr) {
		umcg_worker_attr_init(&def);
		attr = &def;
	}
	if (attr->priority < 0 || attr->priority > UMCG_PRIORITY_MAX ||
	    (attr->server >= 0 && (unsigned int)attr->server >= rt->nr) || attr->server < -1 ||
	    attr->cpu < -1)
		return -EINVAL;
	stack = attr->stack_size ? attr->stack_size : DEFAULT_STACK;
	/* Above SIZE_MAX / 2, pthread_create()'s page rounding, guard and TLS
	 * would overflow: refused here rather than by whatever libc says. */
	if (stack < (size_t)PTHREAD_STACK_MIN || stack > SIZE_MAX / 2)
		return -EINVAL;
	if (attr->server >= 0) {
		idx = (unsigned int)attr->server;
	} else if (attr->cpu >= 0) {
		for (i = 0; i < rt->nr && rt->servers[i].cpu != attr->cpu; i++)
			;
		if (i == rt->nr)
			return -EINVAL;
		idx = i;
	} else {
		idx = umcg__fetch_add(&rt->rr, 1, umcg__relaxed) % rt->nr;
	}
	/* Counted before the look at the lifecycle, and umcg_rt_stop() leaves
	 * RT_STARTED before it looks at `live` (both seq_cst): a spawn and a
	 * stop never both go ahead. See "Start and stop". */
	if (umcg__load(&rt->zombies, umcg__relaxed))
		reap_zombies(rt, false);
	for (;;) {
		umcg__fetch_add(&rt->live, 1, umcg__seq_cst);
		st = umcg__load(&rt->started, umcg__seq_cst);
		if (st == RT_STARTED)
			break;
		live_dec(rt);
		if (st != RT_STOPPING)
			return -ENODEV;
		/* A stop is deciding: wait for its answer, which it gives
		 * without us (our count is gone), rather than refuse beside
		 * a stop that may fail with -EBUSY and change nothing. */
		sched_yield();
	}

	if (posix_memalign((void **)&w, UMCG_TASK_ALIGN, sizeof(*w))) {
		live_dec(rt);
		return -ENOMEM;
	}
	memset(w, 0, sizeof(*w));
	w->rt = rt;
	w->fn = fn;
	w->arg = arg;
	w->prio = attr->priority;
	w->deadline = attr->deadline;
	w->st.server = -1;
	if (attr->name) {
		strncpy(w->name, attr->name, sizeof(w->name) - 1);
	}
	if (attr->server < 0 && attr->cpu < 0 && rt->ops.select_server) {
		idx = rt->ops.select_server(rt->policy, w, idx);
		if (idx >= rt->nr)
			idx %= rt->nr;
	}
	w->server = idx;
	w->detach = wp ? DETACH_JOINABLE : DETACH_DETACHED;

	pthread_attr_init(&pa);
	pthread_attr_setstacksize(&pa, stack);
	/* Joinable even if detached: see "Zombies". */
	ret = pthread_create(&w->thread, &pa, worker_main, w);
	pthread_attr_destroy(&pa);
	if (ret) {
		free(w);
		live_dec(rt);
		return ret == EAGAIN ? -EAGAIN : -ret;
	}
	if (wp)
		*wp = w;
	return 0;
}

/* posix_memalign() and pthread_create() may set errno when they fail. */
UMCG_API int umcg_spawn(struct umcg_rt *rt, struct umcg_worker **wp,
			const struct umcg_worker_attr *attr, umcg_worker_fn fn, void *arg)
{
	int saved = errno, ret = spawn(rt, wp, attr, fn, arg);

	errno = saved;
	return ret;
}

/*
 * Free @w once no sync.c waker holds it (see "Holds"). A holder is a few
 * instructions from its put; one that was preempted there runs again once
 * we give up the CPU, which a worker does through its server.
 */
static void worker_free(struct umcg_worker *w)
{
	while (umcg__load(&w->holds, umcg__seq_cst)) {
		if (!cur_worker || umcg_yield())
			sched_yield();
	}
	free(w);
}

/* Sleep in the kernel as a worker: tell the emulation first. */
static void blocking_wait_word(int *word, int val)
{
	bool hooked = umcg_block_begin() == 0;

	wait_word(word, val);
	if (hooked)
		umcg_block_end();
}

static void reap(struct umcg_worker *w, void **retval)
{
	struct umcg_rt *rt = w->rt;
	bool hooked;

	if (retval)
		*retval = w->retval;
	hooked = umcg_block_begin() == 0;
	pthread_join(w->thread, NULL);
	if (hooked)
		umcg_block_end();
	worker_free(w);
	live_dec(rt);
}

struct join_wait {
	struct umcg_worker *w;
	bool hooked;
};

/*
 * umcg_join()'s caller was cancelled in pthread_join(), which then did
 * not join: end the blocking section and give the target up as
 * umcg_detach() does (once finished it is joined by drain, stop or a later
 * spawn: see "Zombies").
 */
static void join_cancelled(void *arg)
{
	struct join_wait *jw = arg;

	if (jw->hooked)
		umcg_block_end();
	umcg_detach(jw->w);
}

UMCG_API int umcg_join(struct umcg_worker *w, void **retval)
{
	struct join_wait jw = { w, false };
	struct umcg_rt *rt;
	void *v = NULL;
	int ret, err;

	if (!w)
		return -EINVAL;
	rt = w->rt;
	if (forked(rt))
		return -ECHILD;
	if (w == cur_worker)
		return -EDEADLK;
	if (umcg__load(&w->detach, umcg__acquire) == DETACH_DETACHED)
		return -EINVAL;
	/* The cancellation point: see join_cancelled(). */
	jw.hooked = umcg_block_begin() == 0;
	pthread_cleanup_push(join_cancelled, &jw);
	ret = pthread_join(w->thread, &v);
	pthread_cleanup_pop(0);
	if (jw.hooked)
		umcg_block_end();
	if (ret)
		return -ret;
	/* pthread_join() ordered us after everything @w did. */
	err = w->start_err;
	if (retval && !err)
		*retval = v;
	worker_free(w);
	live_dec(rt);
	return err;
}

UMCG_API int umcg_detach(struct umcg_worker *w)
{
	int joinable = DETACH_JOINABLE;

	if (!w)
		return -EINVAL;
	if (forked(w->rt))
		return -ECHILD;
	/* Once detached, @w may be freed at any moment. */
	if (umcg__cas(&w->detach, &joinable, DETACH_DETACHED, umcg__acq_rel))
		return 0; /* it becomes a zombie when it ends */
	if (joinable == DETACH_DETACHED)
		return -EINVAL;
	/* Already finished: detaching means nobody joins it; reap it now. */
	blocking_wait_word(&w->done, 0);
	reap(w, NULL);
	return 0;
}

UMCG_API int umcg_exit(void *retval)
{
	struct umcg_worker *w = cur_worker;

	if (!w)
		return -EPERM;
	/* worker_main's cleanup handler finishes the worker. */
	w->retval = retval;
	pthread_exit(retval);
}

UMCG_API struct umcg_worker *umcg_self(void)
{
	return cur_worker;
}

/*
 * May the calling worker switch? Not from a signal handler that
 * interrupted it inside a switch, or while it is parked, blocked or
 * preempted: its server already holds it aside or on a list.
 */
static bool can_switch(struct umcg_worker *w)
{
	if (umcg__load(&w->in_rt, umcg__relaxed))
		return false;
	/* Back from a sleep the emulation detected: RUNNING first. */
	umcg__settle();
	/* Pairs with the seq_cst transitions of our state by others. */
	return !umcg__load(&w->in_rt, umcg__relaxed) &&
	       (umcg__load(&w->task.state, umcg__acquire) & UMCG_TASK_MASK) == UMCG_TASK_RUNNING;
}

UMCG_API int umcg_yield(void)
{
	struct umcg_worker *w = cur_worker;

	if (!w)
		return -EPERM;
	if (!can_switch(w))
		return -EDEADLK;
	STAT_INC(w->st.yields);
	yield_self(w, false);
	return 0;
}

UMCG_API uint64_t umcg_now(void)
{
	struct umcg_worker *w = cur_worker;

	return clock_ns(w ? w->rt->attr.clock : CLOCK_MONOTONIC);
}

UMCG_API int umcg_sleep_until(uint64_t deadline)
{
	struct umcg_worker *w = cur_worker;
	struct timespec ts;
	bool hooked;
	int ret;

	if (!w)
		return -EPERM;
	ts.tv_sec = (time_t)(deadline / 1000000000ull);
	ts.tv_nsec = (long)(deadline % 1000000000ull);
	hooked = umcg_block_begin() == 0;
	do {
		ret = clock_nanosleep(w->rt->attr.clock, TIMER_ABSTIME, &ts, NULL);
	} while (ret == EINTR);
	if (hooked)
		umcg_block_end();
	return 0;
}

UMCG_API int umcg_sleep_for(uint64_t ns)
{
	uint64_t now;

	if (!cur_worker)
		return -EPERM;
	now = umcg_now();
	/* Saturate: a deadline that wraps would lie in the past. */
	return umcg_sleep_until(ns > UINT64_MAX - now ? UINT64_MAX : now + ns);
}

/* Park the calling worker @w on @word (&w->park or &w->spark). */
static void park_on(struct umcg_worker *w, int *word)
{
	int expected = PARK_PERMIT;

	if (umcg__cas(word, &expected, PARK_NORMAL, umcg__seq_cst))
		return;
	if (expected != PARK_NORMAL || !umcg__cas(word, &expected, PARK_PARKING, umcg__seq_cst)) {
		/* A permit arrived in between. */
		expected = PARK_PERMIT;
		umcg__cas(word, &expected, PARK_NORMAL, umcg__seq_cst);
		return;
	}
	w->park_ts = clock_ns(w->rt->attr.clock);
	STAT_INC(w->st.yields);
	UMCG_TRACE1(park, w->tid);
	yield_self(w, false);
}

UMCG_API int umcg_park(void)
{
	struct umcg_worker *w = cur_worker;

	if (!w)
		return -EPERM;
	if (!can_switch(w))
		return -EDEADLK;
	park_on(w, &w->park);
	return 0;
}

int umcg__sync_park(void)
{
	struct umcg_worker *w = cur_worker;

	if (!w)
		return -EPERM;
	if (!can_switch(w))
		return -EDEADLK;
	park_on(w, &w->spark);
	return 0;
}

/* May an unparker on @s hand its CPU straight to the unparked worker? */
static bool handoff_ok(struct umcg_rt *rt, struct server *s)
{
	return (rt->ops.flags & UMCG_POLICY_F_HANDOFF) &&
	       umcg__fetch_add(&s->handoffs_left, -1, umcg__relaxed) > 0;
}

/* Unpark @w from @word (&w->park or &w->spark). */
static int unpark_on(struct umcg_worker *w, int *word)
{
	struct umcg_worker *me = cur_worker;
	bool same_server;
	struct server *s;
	int p;

	if (forked(w->rt))
		return -ECHILD;
	p = umcg__load(word, umcg__seq_cst);
	for (;;) {
		switch (p) {
		case PARK_PERMIT:
			return 0;
		case PARK_NORMAL:
			if (umcg__cas(word, &p, PARK_PERMIT, umcg__seq_cst))
				return 0;
			continue;
		case PARK_PARKING:
			/* Not held aside yet: its server will enqueue it. */
			if (umcg__cas(word, &p, PARK_NORMAL, umcg__seq_cst))
				return 0;
			continue;
		case PARK_PARKED:
			if (umcg__cas(word, &p, PARK_NORMAL, umcg__seq_cst))
				goto wake;
			continue;
		default:
			return -EINVAL;
		}
	}
wake:
	/*
	 * We own @w now: it is RUNNABLE and on no list. Its server wrote
	 * w->server before its PARKING -> PARKED CAS, which our CAS read.
	 * Once pushed, @w may run, finish and be freed: decide everything
	 * before the push.
	 */
	s = &w->rt->servers[w->server];
	UMCG_TRACE2(unpark, w->tid, me ? me->tid : -1);
	/*
	 * A worker of that server that runs user code will give it the CPU
	 * back soon anyway. Not so if we are a signal handler that
	 * interrupted it inside a switch, or while it is parked, blocked or
	 * preempted (see "Signal handlers"): then we act as a plain thread.
	 * Those two first: only while we run does no server write
	 * me->server (handle_list(), pick()); our acquire load of our
	 * RUNNING state orders its last write before our read.
	 */
	same_server = me && !umcg__load(&me->in_rt, umcg__relaxed) &&
		      (umcg__load(&me->task.state, umcg__acquire) &
		       (UMCG_TASK_MASK | UMCG_TF_MASK)) == UMCG_TASK_RUNNING &&
		      me->rt == w->rt && me->server == w->server;
	w->unparked = 1;
	umcg__store(&w->task.runnable_ts, clock_ns(w->rt->attr.clock), umcg__relaxed);
	if (same_server && !umcg__load(&me->staged, umcg__relaxed) && handoff_ok(w->rt, s)) {
		/*
		 * Hand the CPU to @w directly at our next switch. in_rt
		 * keeps a handler that interrupts us here off `staged`.
		 * seq_cst store of `staged`, then the overtime load: see
		 * "Overtime".
		 */
		umcg__store(&me->in_rt, 1, umcg__seq_cst);
		umcg__store(&me->staged, w, umcg__seq_cst);
		umcg__store(&me->in_rt, 0, umcg__seq_cst);
		if (umcg__load(&s->overtime, umcg__seq_cst))
			poke(s);
		return 0;
	}
	/* The push is seq_cst: the same pair for a worker of @s. */
	umcg__runnable_push(&s->task, &w->task);
	if (!same_server || umcg__load(&s->overtime, umcg__seq_cst))
		poke(s);
	return 0;
}

UMCG_API int umcg_unpark(struct umcg_worker *w)
{
	if (!w)
		return -EINVAL;
	return unpark_on(w, &w->park);
}

int umcg__sync_unpark(struct umcg_worker *w)
{
	return unpark_on(w, &w->spark);
}

void umcg__worker_hold(struct umcg_worker *w)
{
	umcg__fetch_add(&w->holds, 1, umcg__relaxed);
}

void umcg__worker_put(struct umcg_worker *w)
{
	/* Pairs with the seq_cst load in worker_free(). */
	umcg__fetch_add(&w->holds, -1, umcg__seq_cst);
}

UMCG_API const char *umcg_worker_name(const struct umcg_worker *w)
{
	return w ? w->name : "";
}

UMCG_API pid_t umcg_worker_tid(const struct umcg_worker *w)
{
	return w ? umcg__load(&w->tid, umcg__acquire) : 0;
}

UMCG_API int umcg_worker_priority(const struct umcg_worker *w)
{
	return w ? w->prio : 0;
}

UMCG_API uint64_t umcg_worker_deadline(const struct umcg_worker *w)
{
	return w ? umcg__load(&w->deadline, umcg__relaxed) : 0;
}

UMCG_API int umcg_worker_set_deadline(uint64_t deadline)
{
	if (!cur_worker)
		return -EPERM;
	umcg__store(&cur_worker->deadline, deadline, umcg__relaxed);
	return 0;
}

UMCG_API struct umcg_policy_link *umcg_worker_link(struct umcg_worker *w)
{
	return &w->link;
}

UMCG_API struct umcg_worker *umcg_worker_from_link(struct umcg_policy_link *link)
{
	return (struct umcg_worker *)((char *)link - offsetof(struct umcg_worker, link));
}

/* ---- statistics ----------------------------------------------------------- */

UMCG_API int umcg_rt_server_stats(const struct umcg_rt *rt, unsigned int server,
				  struct umcg_server_stats *out)
{
	const struct umcg_server_stats *st;

	if (!rt || !out || server >= rt->nr)
		return -EINVAL;
	st = &rt->servers[server].st;
	out->switches = umcg__load(&st->switches, umcg__relaxed);
	out->preemptions = umcg__load(&st->preemptions, umcg__relaxed);
	out->blocks = umcg__load(&st->blocks, umcg__relaxed);
	out->yields = umcg__load(&st->yields, umcg__relaxed);
	out->steals = umcg__load(&st->steals, umcg__relaxed);
	out->idle_wakeups = umcg__load(&st->idle_wakeups, umcg__relaxed);
	out->wakeups_sent = umcg__load(&st->wakeups_sent, umcg__relaxed);
	out->missed_wakeups = umcg__load(&st->missed_wakeups, umcg__relaxed);
	/* Earlier runs' counts, and the live one of a registered server. */
	out->unannounced_blocks = umcg__load(&st->unannounced_blocks, umcg__relaxed);
	if (umcg__load(&rt->servers[server].ready, umcg__acquire) == 1)
		out->unannounced_blocks += umcg__unannounced_blocks(rt->servers[server].tid);
	out->cpu = st->cpu;
	return 0;
}

UMCG_API int umcg_worker_stats(const struct umcg_worker *w, struct umcg_worker_stats *out)
{
	if (!w || !out)
		return -EINVAL;
	out->switches = umcg__load(&w->st.switches, umcg__relaxed);
	out->preemptions = umcg__load(&w->st.preemptions, umcg__relaxed);
	out->blocks = umcg__load(&w->st.blocks, umcg__relaxed);
	out->yields = umcg__load(&w->st.yields, umcg__relaxed);
	out->running_ns = umcg__load(&w->st.running_ns, umcg__relaxed);
	out->runnable_ns = umcg__load(&w->st.runnable_ns, umcg__relaxed);
	out->blocked_ns = umcg__load(&w->st.blocked_ns, umcg__relaxed);
	out->server = umcg__load(&w->st.server, umcg__relaxed);
	return 0;
}
