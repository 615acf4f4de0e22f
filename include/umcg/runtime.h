/* SPDX-License-Identifier: MIT */
/*
 * umcg/runtime.h - libumcg's runtime: per-CPU servers, pluggable scheduling
 * policies, and the lifecycle of worker threads.
 *
 * A runtime owns a set of server threads (by default one per CPU the process
 * may run on, each pinned to its CPU). Functions spawned with umcg_spawn()
 * run as UMCG workers: real threads, with their own stack, TLS and tid, that
 * run only when a server picks them. A server picks the next worker through
 * the runtime's policy when the running one yields, blocks, parks, exits,
 * or (with a timeslice) is preempted. The runtime runs on both backends.
 *
 * Error convention: as in <umcg/umcg.h>, 0 (or a documented non-negative
 * value) or a negative errno; errno is never touched. Calls made in a child
 * process after fork() on a runtime created by the parent return -ECHILD:
 * the child has none of the parent's server or worker threads.
 *
 * Signal handlers: of the runtime's calls only umcg_unpark(), umcg_self(),
 * umcg_now(), umcg_worker_tid(), umcg_worker_name(), umcg_worker_priority(),
 * umcg_worker_deadline() and the stats readers are async-signal-safe.
 * umcg_yield() and umcg_park() are not: from a handler that interrupted
 * the worker inside a switch, or while it is parked, blocked or preempted,
 * they refuse with -EDEADLK and change nothing (the server is never
 * wedged); a handler that interrupted plain user code of a running worker
 * may switch, but a park there may end early or turn an interrupted
 * umcg_park() into a yield. Nothing else may be called from a handler.
 *
 * Blocking: a worker that sleeps in the kernel frees its server for others
 * on the kernel backend by itself; on the emulation, blocking that goes
 * through umcg_block_begin()/umcg_block_end(), the wrappers of <umcg/io.h>
 * or libumcg-preload.so does, and detection (umcg_detect_set() in
 * <umcg/umcg.h>) notices the rest within its bound. With detection off,
 * unannounced blocking holds the server until the call returns, or until
 * the next slice end's kick when preemption is on (the README, "Blocking
 * on the emulation", says which calls a kick interrupts).
 *
 * Undefined behaviour. As in POSIX, these are outside the contract: the
 * library does not detect them, and a program that does them may crash,
 * hang or corrupt the runtime:
 * - using a runtime after umcg_rt_destroy() returned 0, or a worker handle
 *   after umcg_join() returned for it or after umcg_detach() (both free
 *   it); in particular joining a worker twice, and a plain thread's
 *   umcg_unpark() that can still run while another thread destroys the
 *   runtime;
 * - a policy whose callbacks break struct umcg_policy_ops' rules: picking
 *   or stealing a worker that is not queued on it, handing out a worker
 *   twice, returning garbage, or blocking;
 * - calling into the library from a worker while its cancellation type is
 *   PTHREAD_CANCEL_ASYNCHRONOUS (POSIX allows only the cancellation calls
 *   there; a pure compute loop with asynchronous cancellation is fine);
 * - raw ABI calls (umcg_ctl(), umcg_wait(), umcg_kick(), writes to the
 *   struct umcg_task) on a thread the runtime owns, server or worker;
 * - unmapping or overwriting a worker's stack or the runtime's memory.
 */
#ifndef UMCG_RUNTIME_H
#define UMCG_RUNTIME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <umcg/umcg.h>

#ifdef __cplusplus
extern "C" {
#endif

struct umcg_rt;
struct umcg_worker;
struct umcg_policy_ops;

/* ------------------------------------------------------------------------
 * Runtime
 * ---------------------------------------------------------------------- */

/*
 * UMCG_TIMESLICE_MIN_NS - the shortest timeslice umcg_rt_create() takes
 * (10 us); a shorter one is refused with -EINVAL rather than clamped, so
 * that a runtime never silently runs with a slice other than the one asked
 * for. Why a minimum: a slice is timed from the moment the server picks a
 * worker, and on the emulation the worker shares its server's CPU, so it
 * runs only once the server is asleep again. A slice shorter than the
 * server's own pick-and-wait path (a few microseconds, far more on a
 * loaded machine) is over before the worker gets the CPU: every worker is
 * preempted before it runs an instruction and the server spins. 10 us
 * leaves the worker most of its slice on an idle machine; the preemption
 * itself then costs far more than the slice (see "Why a server priority"),
 * so slices that short are for tests, not for throughput.
 */
#define UMCG_TIMESLICE_MIN_NS 10000ULL

/**
 * enum umcg_preempt_mode - who ends a worker's slice (umcg_rt_attr.preempt).
 * @UMCG_PREEMPT_DEFAULT: UMCG_PREEMPT from the environment, else SERVER.
 * @UMCG_PREEMPT_SERVER: the server sleeps until the slice end, wakes, and
 *	preempts its worker with umcg_preempt(). Both backends.
 * @UMCG_PREEMPT_TIMER: on the emulation, each worker gets a POSIX timer
 *	(timer_create(2) on the runtime's clock, SIGEV_THREAD_ID) that fires
 *	at its slice end when another worker waits at the start of its run;
 *	it signals the worker itself (umcg_kick_signal()), which then preempts
 *	itself. Its server sleeps on, with a backstop a slice later. A slice
 *	end costs one wake-up and one signal less, and short slices hold
 *	under SCHED_OTHER, where a server's own wake-up can be late by
 *	milliseconds. Each timer reserves a queued signal of the user's
 *	RLIMIT_SIGPENDING; a worker that gets none, a worker run by a direct
 *	handoff, one that nothing waited for when its run started, and every
 *	worker on the kernel backend (where umcg_preempt() costs no signal)
 *	is preempted as with SERVER. A timer that fires while its worker
 *	sleeps in a system call nobody announced ends that call, as a kick's
 *	signal can (the README, "Blocking on the emulation"): the library
 *	resumes it, except for the calls Linux never restarts after a signal
 *	handler (epoll_wait(2), select(2), ppoll(2), pause(2), ...), which
 *	then fail with EINTR. Workers that make those calls outside
 *	<umcg/io.h> and libumcg-preload.so want SERVER.
 */
enum umcg_preempt_mode {
	UMCG_PREEMPT_DEFAULT = 0,
	UMCG_PREEMPT_SERVER = 1,
	UMCG_PREEMPT_TIMER = 2,
};

/**
 * struct umcg_rt_attr - how to build a runtime; fill with umcg_rt_attr_init().
 * @nr_servers: number of servers; 0 = one per CPU in the affinity mask of the
 *	thread calling umcg_rt_create(). At most 1024.
 * @timeslice_ns: preemption timeslice; 0 = cooperative (a worker runs until
 *	it yields, blocks, parks or exits). Otherwise at least
 *	UMCG_TIMESLICE_MIN_NS; any larger value up to UINT64_MAX is taken, and
 *	a slice whose end would pass UINT64_MAX ns of @clock ends there (in
 *	effect never: the worker runs until it stops by itself, as in a
 *	cooperative runtime). A worker is preempted when its
 *	slice is over and another worker waits for its server; while none
 *	waits it runs on, and the first one to arrive preempts it at once.
 *	(A policy without nr_queued() cannot tell: then every slice end
 *	preempts.)
 * @policy: the scheduling policy; NULL = &umcg_policy_fifo.
 * @policy_arg: passed to @policy->create().
 * @clock: clock of the timestamps, deadlines and sleeps: CLOCK_MONOTONIC
 *	(default), CLOCK_REALTIME, CLOCK_BOOTTIME or CLOCK_TAI.
 * @pin_servers: pin server i to the i-th CPU of the mask (default true);
 *	workers follow their server's CPU.
 * @server_priority: 0 (default): the servers keep the scheduling policy of
 *	the thread that calls umcg_rt_start(). 1-99: they run SCHED_FIFO at
 *	that priority, which needs CAP_SYS_NICE or an RLIMIT_RTPRIO at least
 *	as high (umcg_rt_start() fails with -EPERM otherwise).
 * @preempt: how a slice end preempts (ignored by cooperative runtimes):
 *	UMCG_PREEMPT_DEFAULT (0), UMCG_PREEMPT_SERVER or UMCG_PREEMPT_TIMER
 *	(enum umcg_preempt_mode). The default is the environment variable
 *	UMCG_PREEMPT ("server" or "timer") if set, else UMCG_PREEMPT_SERVER.
 *	umcg_rt_preempt_mode() says which one a runtime uses.
 *
 * Why a server priority. On the emulation every worker is a kernel thread
 * on its server's CPU, and the server needs that CPU for a moment whenever
 * a slice ends or a worker is pushed on its list. Under SCHED_OTHER the
 * kernel lets the running worker go on until its own scheduler preempts it
 * (milliseconds, not microseconds), so slices much shorter than that are
 * stretched. A SCHED_FIFO server takes the CPU the moment it
 * wakes; it sleeps whenever a worker runs, so it takes nothing else from
 * the system. Workers stay SCHED_OTHER. The price is that every slice end
 * then really preempts, and on the emulation a preemption costs a timer
 * wake-up, a signal and several context switches, which with slices of
 * 100 us and always someone waiting is a large share of the CPU
 * (doc/performance.md has the figures measured). The kernel backend has
 * the same wake-up question for the server but a much cheaper preemption.
 */
struct umcg_rt_attr {
	unsigned int nr_servers;
	uint64_t timeslice_ns;
	const struct umcg_policy_ops *policy;
	void *policy_arg;
	clockid_t clock;
	bool pin_servers;
	int server_priority;
	int __pad0;
	int preempt;
	int __pad1;
	uint64_t __reserved[7];
};

/**
 * umcg_rt_attr_init() - fill @attr with the defaults.
 * @attr: the attributes (NULL is ignored).
 * Return: nothing.
 * Context: any thread.
 */
UMCG_API void umcg_rt_attr_init(struct umcg_rt_attr *attr);

/**
 * umcg_rt_create() - build a runtime (its servers do not run yet).
 * @rtp: where to store the new runtime.
 * @attr: attributes, or NULL for the defaults.
 *
 * Several runtimes may live in one process; each has its own servers and
 * workers.
 *
 * Return: 0; -EINVAL for a NULL @rtp, a bad attribute (a timeslice below
 *  UMCG_TIMESLICE_MIN_NS among them), or a policy missing a required
 *  callback; -ENOMEM; the errors of umcg_backend_active().
 * Context: any thread.
 */
UMCG_API int umcg_rt_create(struct umcg_rt **rtp, const struct umcg_rt_attr *attr);

/**
 * umcg_rt_start() - start the server threads.
 * @rt: the runtime.
 *
 * Return: 0 once every server is registered and waiting for work; -EINVAL
 *  for NULL; -EBUSY if already started (or being started or stopped by
 *  another thread); -EAGAIN if a thread could not be
 *  created; -EPERM if @server_priority asks for SCHED_FIFO and the process
 *  may not have it; -EDEADLK from a worker; -ECHILD after fork(). On an
 *  error no server is left running.
 * Context: any thread that is not one of @rt's workers.
 */
UMCG_API int umcg_rt_start(struct umcg_rt *rt);

/**
 * umcg_rt_drain() - wait until no worker of @rt is left.
 * @rt: the runtime.
 *
 * Joinable workers count until they are joined. New workers may be spawned
 * while draining (by workers, say); drain returns when the count reaches 0
 * and every detached worker's thread has ended, its thread-local
 * destructors included (drain joins those threads).
 *
 * Return: 0; -EINVAL for NULL; -EDEADLK when called by one of @rt's workers;
 *  -ECHILD after fork().
 * Context: any thread that is not one of @rt's workers.
 */
UMCG_API int umcg_rt_drain(struct umcg_rt *rt);

/**
 * umcg_rt_stop() - stop and join the server threads.
 * @rt: the runtime.
 *
 * Return: 0 (also if never started or already stopped); -EINVAL for NULL;
 *  -EBUSY if workers are alive (drain first), or another thread is starting
 *  or stopping @rt; -EDEADLK from a worker of @rt;
 *  -ECHILD after fork().
 * Context: any thread that is not one of @rt's workers.
 */
UMCG_API int umcg_rt_stop(struct umcg_rt *rt);

/**
 * umcg_rt_destroy() - stop @rt if needed and free it.
 * @rt: the runtime, or NULL (then nothing happens).
 *
 * In a child after fork() it only frees the memory. Once it returns 0, no
 * thread of @rt is left: servers and detached workers' threads are joined.
 *
 * Return: 0; -EBUSY if workers are alive (nothing is freed); -EDEADLK from
 *  a worker of @rt.
 * Context: any thread that is not one of @rt's workers.
 */
UMCG_API int umcg_rt_destroy(struct umcg_rt *rt);

/**
 * umcg_rt_nr_servers() - the number of servers of @rt.
 * @rt: the runtime, or NULL.
 * Return: the count, or 0 for NULL.
 * Context: any thread.
 */
UMCG_API unsigned int umcg_rt_nr_servers(const struct umcg_rt *rt);

/**
 * umcg_rt_preempt_mode() - how @rt ends its workers' slices.
 * @rt: the runtime, or NULL.
 * Return: UMCG_PREEMPT_TIMER if its workers' slice timers can run on this
 *  backend (a worker the kernel refuses a timer is still preempted by its
 *  server), UMCG_PREEMPT_SERVER otherwise, 0 for a cooperative runtime;
 *  -EINVAL for NULL.
 * Context: any thread.
 */
UMCG_API int umcg_rt_preempt_mode(const struct umcg_rt *rt);

/* ------------------------------------------------------------------------
 * Workers
 * ---------------------------------------------------------------------- */

/*
 * UMCG_PRIORITY_MAX - the highest worker priority umcg_spawn() accepts
 * (umcg_worker_attr.priority runs from 0, the lowest, to this).
 */
#define UMCG_PRIORITY_MAX 31

/**
 * struct umcg_worker_attr - how to spawn a worker; fill with
 * umcg_worker_attr_init().
 * @stack_size: bytes; 0 = 256 KiB. At least PTHREAD_STACK_MIN and at most
 *	SIZE_MAX / 2: above that, rounding to pages and adding the guard page
 *	and the thread's TLS would overflow, so umcg_spawn() refuses such a
 *	size (SIZE_MAX, say) with -EINVAL. A size below that but too large to
 *	map gives -EAGAIN.
 * @priority: for priority policies, 0 (lowest) to %UMCG_PRIORITY_MAX; default 0.
 * @server: the server to start on, -1 (default) = the policy's choice.
 * @cpu: start on the server pinned to this CPU; -1 (default) = any. If both
 *	@server and @cpu are set, @server wins.
 * @name: a name for debugging (copied, first 15 bytes used as the thread
 *	name), or NULL.
 * @deadline: an absolute time in the runtime clock for deadline policies;
 *	0 = none.
 */
struct umcg_worker_attr {
	size_t stack_size;
	int priority;
	int server;
	int cpu;
	const char *name;
	uint64_t deadline;
	uint64_t __reserved[6];
};

/**
 * umcg_worker_attr_init() - fill @attr with the defaults.
 * @attr: the attributes (NULL is ignored).
 * Return: nothing.
 * Context: any thread.
 */
UMCG_API void umcg_worker_attr_init(struct umcg_worker_attr *attr);

/** typedef umcg_worker_fn - the function a worker runs. */
typedef void *(*umcg_worker_fn)(void *arg);

/**
 * umcg_spawn() - start @fn(@arg) as a worker of @rt.
 * @rt: a started runtime.
 * @wp: where to store the handle (NULL: the worker is spawned detached).
 * @attr: attributes or NULL for the defaults.
 * @fn: the function; its return value is what umcg_join() reports.
 * @arg: its argument.
 *
 * Return: 0; -EINVAL for a NULL @rt or @fn, a bad attribute (an out-of-range
 *  server, priority or stack size, a CPU with no server); -ENODEV if @rt is
 *  not started, or a umcg_rt_stop() beside it succeeds (a stop that fails
 *  with -EBUSY makes no spawn fail: the spawn waits for its answer; a
 *  worker whose spawn returned 0 always runs); -EAGAIN/-ENOMEM if the
 *  thread could not be created; -ECHILD after fork().
 * Context: any thread, including workers of @rt.
 */
UMCG_API int umcg_spawn(struct umcg_rt *rt, struct umcg_worker **wp,
			const struct umcg_worker_attr *attr, umcg_worker_fn fn, void *arg);

/**
 * umcg_join() - wait for a worker to finish and free it.
 * @w: a joinable worker.
 * @retval: where to store what its function returned (or passed to
 *	umcg_exit()), or NULL.
 *
 * A worker calling this gives its server to others while it waits.
 *
 * What @retval gets, as pthread_join() reports it: the function's return
 * value; the value given to umcg_exit() or to pthread_exit() in the
 * worker; PTHREAD_CANCELED if the worker was cancelled.
 *
 * umcg_join() is a cancellation point, like pthread_join(). If the caller
 * is cancelled in it, @w is not joined: it is detached instead (see
 * umcg_detach() for when it is then joined and freed), so that
 * umcg_rt_drain() and umcg_rt_destroy() still work; @w must not be used
 * again.
 *
 * Return: 0; -EINVAL for NULL or a detached worker; -EDEADLK if @w is the
 *  caller; -ENODEV if @w never ran because its runtime was stopped before
 *  it started (not possible after a successful umcg_spawn() into a started
 *  runtime); -ENOMEM if @w never ran because the emulation could not
 *  allocate its registration record (the worker registers in its own
 *  thread, after umcg_spawn() returned); in both cases @w is freed all the
 *  same; -ECHILD after fork().
 * Context: any thread.
 */
UMCG_API int umcg_join(struct umcg_worker *w, void **retval);

/**
 * umcg_detach() - give up @w's handle: nobody will join it.
 * @w: a joinable worker of a runtime.
 *
 * @w must not be used again. If it has finished, it is joined and freed
 * now. Otherwise it runs on, and when it ends it puts itself on its
 * runtime's list of finished workers; its thread is joined and its memory
 * freed by whichever comes first: an umcg_spawn() into the runtime once
 * that thread is gone (a spawn never waits for it), or umcg_rt_drain(),
 * umcg_rt_stop() or umcg_rt_destroy() (which wait for it). Until then it
 * still counts as a live worker.
 *
 * Return: 0; -EINVAL for NULL or a worker already detached; -ECHILD after
 *  fork().
 * Context: any thread.
 */
UMCG_API int umcg_detach(struct umcg_worker *w);

/**
 * umcg_exit() - end the calling worker, from any call depth.
 * @retval: the value umcg_join() reports.
 *
 * Does not return when called by a worker (it unwinds the thread like
 * pthread_exit(), running cleanup handlers).
 *
 * Return: -EPERM if the caller is not a runtime worker.
 * Context: a worker.
 */
UMCG_API int umcg_exit(void *retval);

/**
 * umcg_self() - the calling worker.
 * Return: its handle, or NULL if the caller is not a runtime worker.
 * Context: any thread.
 */
UMCG_API struct umcg_worker *umcg_self(void);

/**
 * umcg_yield() - let the server run someone else; the caller is queued again.
 *
 * Not async-signal-safe (see the header comment).
 *
 * Return: 0; -EPERM if the caller is not a runtime worker; -EDEADLK from a
 *  signal handler that interrupted the worker inside a runtime switch, or
 *  while it is parked, blocked or preempted (nothing changes).
 * Context: a worker.
 */
UMCG_API int umcg_yield(void);

/**
 * umcg_sleep_until() - sleep until @deadline (ns, in the runtime's clock).
 *
 * The server runs other workers meanwhile. Signals do not end the sleep.
 *
 * Return: 0; -EPERM if the caller is not a runtime worker.
 * Context: a worker.
 */
UMCG_API int umcg_sleep_until(uint64_t deadline);

/**
 * umcg_sleep_for() - sleep for @ns nanoseconds; see umcg_sleep_until().
 * @ns: the length of the sleep; a deadline past UINT64_MAX ns of the
 *	runtime clock saturates there (UINT64_MAX sleeps for ever, in effect).
 * Return: 0; -EPERM if the caller is not a runtime worker.
 * Context: a worker.
 */
UMCG_API int umcg_sleep_for(uint64_t ns);

/**
 * umcg_park() - put the calling worker to sleep until umcg_unpark().
 *
 * A user-space sleep: the worker leaves its server without any kernel
 * sleep of its own, and umcg_unpark() makes it runnable again. Permit
 * semantics: an umcg_unpark() that comes first makes the next umcg_park()
 * return at once. Building block for queues, mutexes and channels between
 * workers.
 *
 * Not async-signal-safe (see the header comment).
 *
 * Return: 0; -EPERM if the caller is not a runtime worker; -EDEADLK as for
 *  umcg_yield() (nothing changes, a permit is not consumed).
 * Context: a worker.
 */
UMCG_API int umcg_park(void);

/**
 * umcg_unpark() - make a parked worker runnable, or give it a permit.
 * @w: the worker; it must still exist (not joined, and if detached, not
 *	finished), as for any use of a handle.
 *
 * Once @w is runnable it may run, finish and be joined before this call
 * returns, but the call still touches @w's server afterwards (to wake it):
 * the runtime must not be destroyed while an unpark into it may be under
 * way on another thread.
 *
 * Async-signal-safe on every path: a signal handler may call it, on any
 * thread, including a worker of @w's own server while that worker runs,
 * parks, blocks or is inside another runtime call; the wake-up is never
 * lost or held back until that worker switches.
 *
 * Return: 0; -EINVAL for NULL; -ECHILD after fork().
 * Context: any thread, and signal handlers.
 */
UMCG_API int umcg_unpark(struct umcg_worker *w);

/**
 * umcg_now() - the current time in the runtime clock of the calling worker
 * (CLOCK_MONOTONIC elsewhere), in ns.
 * Return: the time in ns.
 * Context: any thread.
 */
UMCG_API uint64_t umcg_now(void);

/**
 * umcg_worker_name() - the name given at spawn, cut to 15 bytes ("" if none
 * or @w is NULL).
 * @w: the worker, or NULL.
 * Return: a NUL-terminated string that lives as long as @w.
 * Context: any thread, while @w is alive or joinable.
 */
UMCG_API const char *umcg_worker_name(const struct umcg_worker *w);

/**
 * umcg_worker_tid() - the worker's thread id (0 before it registered).
 * @w: the worker, or NULL.
 * Return: the thread id; 0 before the worker registered or for NULL.
 * Context: any thread, while @w is alive or joinable.
 */
UMCG_API pid_t umcg_worker_tid(const struct umcg_worker *w);

/* ------------------------------------------------------------------------
 * Statistics. Counters are updated by the servers (and, for yields, by the
 * workers) with relaxed atomics: a snapshot is consistent per counter, not
 * across counters. A server accounts a worker's run when the worker comes
 * back to it, so the figures of a worker lag by its current run (during
 * its first run, `server` is still -1).
 * ---------------------------------------------------------------------- */

/**
 * struct umcg_server_stats - what one server did.
 * @switches: workers it ran (one per umcg_wait with next_tid used).
 * @preemptions: timeslice expiries that preempted a worker.
 * @blocks: times its running worker blocked.
 * @yields: times its running worker yielded or parked.
 * @steals: workers it took from other servers' queues.
 * @idle_wakeups: times it was woken while idle.
 * @wakeups_sent: idle servers it woke because it had surplus work.
 * @missed_wakeups: times it let a worker run past its slice (see
 *	umcg_rt_attr.timeslice_ns), slept until its 50 ms backstop, and then
 *	found a worker waiting that nobody had woken it for. Always 0 with the
 *	built-in policies and backends; a policy whose nr_queued() reads low,
 *	or a kernel whose umcg_kick() does not wake a waiting server, shows
 *	here (a worker that turns up within microseconds of the backstop may
 *	also be counted).
 * @unannounced_blocks: times its running worker fell asleep in the kernel
 *	in a call nobody announced and the emulation's detection saw it
 *	(umcg_detect_set()); always 0 on the kernel backend, which sees every
 *	block. Also counted in @blocks.
 * @cpu: the CPU it is pinned to, or -1.
 */
struct umcg_server_stats {
	uint64_t switches;
	uint64_t preemptions;
	uint64_t blocks;
	uint64_t yields;
	uint64_t steals;
	uint64_t idle_wakeups;
	uint64_t wakeups_sent;
	uint64_t missed_wakeups;
	uint64_t unannounced_blocks;
	int cpu;
};

/**
 * struct umcg_worker_stats - what happened to one worker.
 * @switches: times a server ran it.
 * @preemptions: times it was preempted.
 * @blocks: times it blocked.
 * @yields: times it yielded or parked.
 * @running_ns: time spent RUNNING, from the ABI timestamps.
 * @runnable_ns: time spent RUNNABLE (queued).
 * @blocked_ns: time spent BLOCKED.
 * @server: index of the server that last ran it, or -1.
 */
struct umcg_worker_stats {
	uint64_t switches;
	uint64_t preemptions;
	uint64_t blocks;
	uint64_t yields;
	uint64_t running_ns;
	uint64_t runnable_ns;
	uint64_t blocked_ns;
	int server;
};

/**
 * umcg_rt_server_stats() - read server @server's counters.
 * @rt: the runtime.
 * @server: the server's index, 0 to umcg_rt_nr_servers() - 1.
 * @out: where to store the snapshot.
 * Return: 0; -EINVAL for NULL or an index out of range.
 * Context: any thread.
 */
UMCG_API int umcg_rt_server_stats(const struct umcg_rt *rt, unsigned int server,
				  struct umcg_server_stats *out);

/**
 * umcg_worker_stats() - read a worker's counters.
 * @w: the worker.
 * @out: where to store the snapshot.
 * Return: 0; -EINVAL for NULL.
 * Context: any thread, while @w is alive or joinable.
 */
UMCG_API int umcg_worker_stats(const struct umcg_worker *w, struct umcg_worker_stats *out);

/* ------------------------------------------------------------------------
 * Scheduling policies
 *
 * A policy owns the run queues. The runtime calls it only from server
 * threads: enqueue(), pick_next() and the on_*() hooks on the server named
 * by @server, steal() on the thief's thread (so a policy that supports
 * stealing must lock the queues steal() reads). Workers never call into
 * the policy, except through select_server(), so a lock that only the
 * other callbacks take is never held by a thread the runtime schedules.
 * A policy keeps its per-worker data in the worker's link
 * (umcg_worker_link()).
 *
 * The callbacks run on the server path, so they must take no lock that a
 * worker may hold: no malloc() or free() (arena locks), no stdio (stream
 * locks), no pthread mutex that a worker also takes. A worker preempted
 * while it holds one runs again only when its server picks it, and a
 * server that waits for that lock never does. Allocate in create(), keep
 * per-worker data in the link, and lock queues, if at all, with locks
 * that only servers take, around code that makes no call that can sleep
 * (doc/writing-servers.md). The built-in policies do so: their queue locks
 * are futex words only servers hold, and they allocate only in create().
 * ---------------------------------------------------------------------- */

/**
 * enum umcg_enqueue_reason - why a worker is handed to the policy.
 * @UMCG_ENQ_NEW: it just started.
 * @UMCG_ENQ_YIELD: it yielded.
 * @UMCG_ENQ_PREEMPT: its timeslice ran out.
 * @UMCG_ENQ_WAKE: it returned from blocking, or was unparked.
 * @UMCG_ENQ_RETURN: it was picked but could not be run (it did not get the
 *	CPU); it should go back where it was, at the head.
 */
enum umcg_enqueue_reason {
	UMCG_ENQ_NEW,
	UMCG_ENQ_YIELD,
	UMCG_ENQ_PREEMPT,
	UMCG_ENQ_WAKE,
	UMCG_ENQ_RETURN,
};

/**
 * struct umcg_policy_link - per-worker storage owned by the policy.
 * @next: free for list linkage.
 * @prev: free for list linkage.
 * @key: free for an ordering key.
 * @data: free.
 */
struct umcg_policy_link {
	struct umcg_policy_link *next;
	struct umcg_policy_link *prev;
	uint64_t key;
	void *data;
};

/**
 * struct umcg_policy_ops - a scheduling policy.
 * @name: for stats and the demo.
 * @create: required; build the policy's state for @nr_servers servers.
 *	Return it, or NULL on failure (umcg_rt_create() then fails with
 *	-ENOMEM).
 * @destroy: required; free it.
 * @enqueue: required; @w becomes runnable on @server.
 * @pick_next: required; the worker @server should run next (removed from
 *	the queue), or NULL if @server has nothing.
 * @steal: optional; take a queued worker from another server for @thief,
 *	or NULL. The runtime migrates it to @thief: from then on it belongs to
 *	@thief's queues (an ENQ_RETURN of it goes to @thief).
 * @nr_queued: optional; how many workers wait on @server (used to wake idle
 *	servers when @server has surplus, and by preemptive runtimes to let a
 *	worker run past its slice while none waits). Without it no idle server
 *	is woken and every slice end preempts. Called by @server itself (and
 *	by other servers choosing whom to wake); for the calling server's own
 *	queue the count must be exact, not a hint: a 0 while a worker waits
 *	keeps that worker waiting until the running one stops (at most the
 *	runtime's 50 ms backstop, then it is asked again).
 * @select_server: optional; the server a new worker with no affinity
 *	starts on (@hint is a round-robin suggestion). Default: @hint. The
 *	exception to the threading rule: it runs on the thread that calls
 *	umcg_spawn(), which may be a worker that is preempted inside it, so
 *	it must not touch per-server state without a lock, and must not take
 *	a lock that the other callbacks take (a server would then wait for
 *	the preempted worker): read hints with atomic loads instead.
 * @on_block: optional; @w, which @server was running, blocked.
 * @on_exit: optional; @w, last run by @server, finished.
 * @flags: UMCG_POLICY_F_* bits.
 * @preempts: optional, and read only if @flags has
 *	UMCG_POLICY_F_WAKE_PREEMPT (so a policy built before the field existed
 *	is never read past its end); wake-up preemption. @w was just handed to
 *	enqueue() on @server with UMCG_ENQ_NEW or UMCG_ENQ_WAKE while @running
 *	runs there: return true if @w should run before @running, and the
 *	runtime preempts @running at once, slice or no slice (cooperative
 *	runtimes too): it comes back through enqueue() with UMCG_ENQ_PREEMPT
 *	and pick_next() chooses. Called by @server, with the same rules as
 *	enqueue(); @running is not queued, so read only what enqueue() stored
 *	for it or what the worker API returns. umcg_policy_priority uses it
 *	(a higher priority preempts).
 */
struct umcg_policy_ops {
	const char *name;
	void *(*create)(unsigned int nr_servers, void *arg);
	void (*destroy)(void *policy);
	void (*enqueue)(void *policy, unsigned int server, struct umcg_worker *w,
			enum umcg_enqueue_reason why);
	struct umcg_worker *(*pick_next)(void *policy, unsigned int server);
	struct umcg_worker *(*steal)(void *policy, unsigned int thief);
	size_t (*nr_queued)(void *policy, unsigned int server);
	unsigned int (*select_server)(void *policy, struct umcg_worker *w, unsigned int hint);
	void (*on_block)(void *policy, unsigned int server, struct umcg_worker *w);
	void (*on_exit)(void *policy, unsigned int server, struct umcg_worker *w);
	unsigned int flags;
	bool (*preempts)(void *policy, unsigned int server, struct umcg_worker *w,
			 struct umcg_worker *running);
};

/*
 * UMCG_POLICY_F_HANDOFF - the runtime may hand the CPU straight from a
 * worker to a worker it unparked on the same server, at the unparker's
 * next yield, park or block, bypassing enqueue() and pick_next(). That
 * saves a round trip through the server (half the thread switches of a
 * producer/consumer pair). At most 8 such handoffs happen between two
 * pick_next() calls of a server, so a worker waiting in its queue loses at
 * most 8 turns. The built-in FIFO policy sets it; a strict-priority policy
 * must not.
 */
#define UMCG_POLICY_F_HANDOFF 0x1U

/*
 * UMCG_POLICY_F_WAKE_PREEMPT - the policy fills in @preempts: a worker that
 * arrives (new, or back from blocking or a park) and that the policy ranks
 * above the running one preempts it at once (struct umcg_policy_ops).
 */
#define UMCG_POLICY_F_WAKE_PREEMPT 0x2U

/** umcg_policy_fifo - FIFO per server, idle servers steal, surplus wakes idle. */
UMCG_API extern const struct umcg_policy_ops umcg_policy_fifo;
/** umcg_policy_priority - strict priority (UMCG_PRIORITY_MAX highest), FIFO within a level,
 * per server, with stealing of the highest-priority queued worker; an arriving worker of a
 * higher priority than the running one preempts it (UMCG_POLICY_F_WAKE_PREEMPT). */
UMCG_API extern const struct umcg_policy_ops umcg_policy_priority;

/**
 * umcg_worker_link() - the policy's storage in @w.
 * @w: the worker; must not be NULL.
 * Return: the link embedded in @w (never NULL).
 * Context: server threads (inside policy callbacks).
 */
UMCG_API struct umcg_policy_link *umcg_worker_link(struct umcg_worker *w);

/**
 * umcg_worker_from_link() - the worker that owns @link.
 * @link: a link got from umcg_worker_link(); must not be NULL.
 * Return: the worker @link is embedded in.
 * Context: server threads (inside policy callbacks).
 */
UMCG_API struct umcg_worker *umcg_worker_from_link(struct umcg_policy_link *link);

/**
 * umcg_worker_priority() - the priority given at spawn.
 * @w: the worker, or NULL.
 * Return: 0 to %UMCG_PRIORITY_MAX; 0 for NULL.
 * Context: any thread, while @w is alive or joinable.
 */
UMCG_API int umcg_worker_priority(const struct umcg_worker *w);

/**
 * umcg_worker_deadline() - the deadline given at spawn, or set later.
 * @w: the worker, or NULL.
 * Return: the deadline in the runtime clock, in ns; 0 for none or NULL.
 * Context: any thread, while @w is alive or joinable.
 */
UMCG_API uint64_t umcg_worker_deadline(const struct umcg_worker *w);

/**
 * umcg_worker_set_deadline() - change the calling worker's deadline; a
 * deadline policy sees it the next time the worker is queued.
 * Return: 0; -EPERM if the caller is not a runtime worker.
 * Context: a worker.
 */
UMCG_API int umcg_worker_set_deadline(uint64_t deadline);

#ifdef __cplusplus
}
#endif

#endif /* UMCG_RUNTIME_H */
