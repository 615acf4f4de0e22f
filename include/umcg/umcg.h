/* SPDX-License-Identifier: MIT */
/*
 * umcg/umcg.h - libumcg: User Managed Concurrency Groups for Linux.
 *
 * libumcg lets a program schedule its own threads. Server threads decide
 * which worker thread runs; a worker runs only while its server lets it,
 * and its server is woken whenever the worker blocks, yields or is
 * preempted. The three calls below carry the UMCG kernel ABI (see
 * <umcg/abi.h>); they run on a UMCG kernel where one is known to be present
 * and on a futex emulation of the same ABI everywhere else.
 *
 * Error convention: every function returns 0 (or a non-negative value where
 * documented) on success and a negative errno value on failure. No function
 * of this library reads or writes errno. A call that fails because of bad
 * arguments or a wrong state changes nothing.
 *
 * Contexts named in the "Context:" lines:
 *  - any thread: registered or not;
 *  - a server: a thread registered with UMCG_CTL_REGISTER alone;
 *  - a worker: a thread registered with UMCG_CTL_REGISTER | UMCG_CTL_WORKER.
 */
#ifndef UMCG_UMCG_H
#define UMCG_UMCG_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include <umcg/abi.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(UMCG_BUILDING_LIBRARY)
#define UMCG_API __attribute__((visibility("default")))
#else
#define UMCG_API
#endif

#define UMCG_VERSION_MAJOR 0
#define UMCG_VERSION_MINOR 1
#define UMCG_VERSION_PATCH 0

/**
 * umcg_version() - the library's version string, "MAJOR.MINOR.PATCH".
 *
 * Return: a static string; never NULL.
 * Context: any thread.
 */
UMCG_API const char *umcg_version(void);

/* ------------------------------------------------------------------------
 * Backends
 *
 * The backend is chosen once per process, at the first call that needs it
 * (or by umcg_backend_select()), and never changes afterwards.
 *
 *  - UMCG_BACKEND_KERNEL: the UMCG system calls of a patched kernel. It is
 *    considered only where the syscall numbers are known to belong to UMCG:
 *    the kernel publishes them in /sys/kernel/umcg/syscalls, the library was
 *    built against headers defining __NR_umcg_ctl/__NR_umcg_wait/
 *    __NR_umcg_kick (or with -DUMCG_SYSCALL_NRS=ctl,wait,kick), or the
 *    environment says UMCG_SYSCALL_NRS=ctl,wait,kick. Even then a probe,
 *    whose arguments are harmless to whatever syscall really has those
 *    numbers, must answer the way only UMCG answers. The numbers 450-452 of
 *    the original proposal are never called blindly: on stock kernels they
 *    are set_mempolicy_home_node, cachestat and fchmodat2.
 *  - UMCG_BACKEND_EMULATED: the same ABI in user space, on futexes.
 *
 * The environment variable UMCG_BACKEND=auto|kernel|emulated forces the
 * choice made at first use; umcg_backend_select() called before first use
 * takes precedence over it. "auto" picks the kernel where it is available
 * and the emulation otherwise. Forcing "kernel" where it is not available
 * is an error (-ENOSYS from every call), never a silent fallback.
 * ---------------------------------------------------------------------- */

/**
 * enum umcg_backend - which implementation of the UMCG ABI runs.
 * @UMCG_BACKEND_AUTO: the kernel if available, else the emulation.
 * @UMCG_BACKEND_KERNEL: the UMCG syscalls of a patched kernel.
 * @UMCG_BACKEND_EMULATED: the futex emulation.
 */
enum umcg_backend {
	UMCG_BACKEND_AUTO = 0,
	UMCG_BACKEND_KERNEL = 1,
	UMCG_BACKEND_EMULATED = 2,
};

/**
 * umcg_backend_select() - choose the backend of this process.
 * @backend: the backend wanted; UMCG_BACKEND_AUTO picks as described above.
 *
 * Must be called before any thread registers. Selecting the backend that is
 * already active is not an error.
 *
 * Return: 0 on success;
 *  -EINVAL if @backend is not one of enum umcg_backend;
 *  -ENOSYS if the kernel backend was asked for and is not available (the
 *   choice then stays open, so the caller may select another);
 *  -EBUSY if another backend is already active, or the choice was already
 *   made and failed (UMCG_BACKEND named an unavailable backend).
 * Context: any thread.
 */
UMCG_API int umcg_backend_select(enum umcg_backend backend);

/**
 * umcg_backend_active() - the backend in use, choosing it now if needed.
 *
 * Return: UMCG_BACKEND_KERNEL or UMCG_BACKEND_EMULATED; or a negative errno
 *  if no backend can run (-ENOSYS: UMCG_BACKEND=kernel where the kernel has
 *  no UMCG; -EINVAL: UMCG_BACKEND or UMCG_SYSCALL_NRS has a value that does
 *  not parse). umcg_backend_reason() says which.
 * Context: any thread.
 */
UMCG_API int umcg_backend_active(void);

/**
 * umcg_backend_name() - a backend's name.
 * @backend: a value of enum umcg_backend.
 *
 * Return: "auto", "kernel", "emulated", or "invalid"; never NULL.
 * Context: any thread.
 */
UMCG_API const char *umcg_backend_name(int backend);

/**
 * umcg_backend_reason() - why the active backend (or no backend) was chosen.
 *
 * Return: a static human-readable sentence: where the choice came from
 *  ("auto" or the UMCG_BACKEND setting), then why, for example
 *  "auto: no UMCG syscall numbers known (/sys/kernel/umcg/syscalls absent,
 *  UMCG_SYSCALL_NRS unset, none built in); using the emulation";
 *  "not chosen yet" before the first use.
 * Context: any thread.
 */
UMCG_API const char *umcg_backend_reason(void);

/* ------------------------------------------------------------------------
 * The UMCG calls. They take the arguments of the system calls of the same
 * names and follow doc/umcg-abi.md §4-§8 rule by rule; the error codes are
 * those of the system calls, negated.
 * ---------------------------------------------------------------------- */

/**
 * umcg_ctl() - register or unregister the calling thread.
 * @flags: UMCG_CTL_REGISTER for a server, UMCG_CTL_REGISTER|UMCG_CTL_WORKER
 *	for a worker, or UMCG_CTL_UNREGISTER.
 * @self: the caller's struct umcg_task (64-byte aligned); NULL to
 *	unregister. Its memory must stay valid while the thread is
 *	registered.
 * @which_clock: CLOCK_REALTIME, CLOCK_MONOTONIC, CLOCK_BOOTTIME or CLOCK_TAI:
 *	the clock of the timestamps and of umcg_wait()'s timeout.
 *
 * A server comes with @self->state == UMCG_TASK_RUNNING and @self->server_tid
 * equal to its own tid, and registration returns at once. A worker comes
 * with @self->state == UMCG_TASK_BLOCKED and @self->server_tid naming a
 * registered server; registration makes it RUNNABLE, pushes it on the
 * server's runnable list, wakes the server, and returns only once a server
 * has set it RUNNING.
 *
 * Unregistering clears the thread's UMCG state but wakes nobody: a worker's
 * server is not told (the runtime layer covers that).
 *
 * Return: 0 on success; otherwise the first failing check, in this order:
 *  -EINVAL: @self not 64-byte aligned; unknown @flags; UNREGISTER with a
 *   non-NULL @self or from an unregistered thread; REGISTER missing; a
 *   @which_clock not listed above; already registered; @self NULL;
 *  -EFAULT: @self not readable;
 *  -EINVAL: next_tid, __hole or __zero not zero;
 *  -ESRCH: a worker's server_tid is not a registered server of this
 *   process, or a server's server_tid is not its own tid;
 *  -EINVAL: a worker's state and flag bits are not exactly
 *   UMCG_TASK_BLOCKED, or a server's not exactly UMCG_TASK_RUNNING (the
 *   user bits 16-31 are not looked at);
 *  on the emulation only, once every check above has passed: -EAGAIN or
 *   -ENOMEM if the process-wide setup of the first registration failed
 *   (its thread-specific key, its fork handlers; the error stays for every
 *   later registration), then -ENOMEM if the thread's registration record
 *   or its slot in the registry could not be allocated; nothing is then
 *   registered and the thread may try again;
 *  -ENOSYS (or another error of umcg_backend_active()): no backend; this
 *   one is listed last but comes before all of the above, since without a
 *   backend nothing else is checked.
 * Context: any thread; registration blocks a worker until it is run.
 */
UMCG_API int umcg_ctl(uint32_t flags, struct umcg_task *self, clockid_t which_clock);

/**
 * umcg_wait() - sleep until the caller's state is RUNNING.
 * @flags: must be 0.
 * @abs_timeout: absolute deadline in the registration clock, in ns; 0 for
 *	none. Servers only.
 *
 * The caller sets its own state to UMCG_TASK_RUNNABLE first (a server:
 * UMCG_TASK_RUNNABLE | UMCG_TF_COND_WAIT). The call then turns that into
 * RUNNABLE (clearing UMCG_TF_COND_WAIT, stamping runnable_ts). A worker
 * pushes itself on its server's runnable list and wakes next_tid if set,
 * else its server. A server wakes next_tid if set. Waking a task means
 * setting it RUNNABLE -> RUNNING and waking its thread; a next_tid that was
 * used is reset to 0. Then the caller sleeps until a server or worker sets
 * it RUNNING. Signal handlers run during the wait without ending it; on the
 * emulation the timeout survives them, on the kernel it may not.
 *
 * A worker whose next_tid cannot be woken falls back to waking its server,
 * still sleeps until it is RUNNING, and then returns -EAGAIN.
 *
 * Return: 0 when set RUNNING;
 *  -EINVAL: caller not registered, or @flags not 0;
 *  -ERANGE: a worker passed a timeout;
 *  -ESRCH: server_tid or next_tid names no UMCG task of this process;
 *  -EAGAIN: the caller's state was not RUNNABLE (something woke it since it
 *   last looked), or next_tid was not RUNNABLE;
 *  -ETIMEDOUT: the deadline passed.
 *  The errors of the first three kinds (-EINVAL, -ERANGE, -ESRCH) change
 *  nothing, so a server's state stays RUNNABLE|UMCG_TF_COND_WAIT. A server
 *  that fails after its RUNNABLE -> RUNNABLE transition is put back to
 *  RUNNING before the call returns.
 *
 * A return of 0 does not mean that the server's list holds something new:
 * a worker pushes itself before it wakes its server, so a server that took
 * the list between the two is woken later with nothing on it.
 * Context: a server or a worker.
 */
UMCG_API int umcg_wait(uint32_t flags, uint64_t abs_timeout);

/**
 * umcg_kick() - force a task through its return-to-user path.
 * @flags: must be 0.
 * @tid: a registered UMCG task of this process.
 *
 * A worker in state RUNNING | UMCG_TF_PREEMPT becomes RUNNABLE, is pushed on
 * its server's list, wakes its server, and sleeps until it is RUNNING again.
 * Otherwise nothing visible happens, except that a target asleep in
 * umcg_wait() wakes up and re-reads its state: if something made it RUNNING
 * meanwhile (a CAS RUNNABLE -> RUNNING by another thread), its umcg_wait()
 * returns. That is how a thread that is not a server wakes a sleeping
 * server: CAS its state RUNNABLE -> RUNNING, then kick it. On the emulation
 * the kick is the signal umcg_kick_signal() sent with tgkill(); a task
 * sleeping inside the library is woken with a futex instead. That signal
 * is a standard one, which the kernel sets pending without a queue entry,
 * so no RLIMIT_SIGPENDING (full by the doing of any process of the same
 * user) can refuse a kick; kicks sent before the target takes the signal
 * are served together by the one delivery.
 *
 * Return: 0 on success; -ESRCH if @tid is not a registered UMCG task of this
 *  process (never for a live one); -EINVAL if @flags is not 0.
 * Context: any thread.
 */
UMCG_API int umcg_kick(uint32_t flags, pid_t tid);

/**
 * umcg_preempt() - ask a running worker to leave its CPU.
 * @worker: the worker's struct umcg_task.
 * @tid: the worker's tid.
 *
 * Sets UMCG_TF_PREEMPT in @worker->state if, and only if, the worker is
 * RUNNING, then calls umcg_kick(0, @tid). The worker ends up RUNNABLE on its
 * server's runnable list and its server is woken.
 *
 * Return: 0 on success; -EINVAL if @worker is NULL or misaligned; -EAGAIN if
 *  the worker was not RUNNING (nothing changed); the errors of umcg_kick().
 * Context: any thread, usually the worker's server.
 */
UMCG_API int umcg_preempt(struct umcg_task *worker, pid_t tid);

/**
 * umcg_kick_signal() - the signal the emulation reserves for umcg_kick().
 *
 * The emulation installs its handler on this signal, SIGURG, when the
 * first thread registers. It is a standard signal, not a real-time one: a
 * queued signal can be refused once the user's RLIMIT_SIGPENDING is full,
 * which another process may do at any time, and preemption would stop;
 * SIGURG cannot be refused and is ignored by default, so a stray one harms
 * nothing. Standard signals coalesce, so the handler does not count them: it
 * serves every kick sent so far at each delivery. A delivery that served
 * no kick, or that another sender made, is passed on to the handler that
 * was installed before (or ignored if there was none); a SIGURG of the
 * program's that arrives while a kick is pending merges with it, as
 * standard signals do. A handler the program installs on this signal
 * afterwards replaces the library's and breaks preemption on the emulation;
 * blocking the signal in a worker delays its preemption until it blocks or
 * yields. The handler holds off asynchronous cancellation (glibc's
 * internal signal 32) while it runs: a worker cancelled then is cancelled
 * once it is back in its own code.
 *
 * Return: the signal number on the emulation; 0 on the kernel backend.
 * Context: any thread.
 */
UMCG_API int umcg_kick_signal(void);

/* ------------------------------------------------------------------------
 * Blocking hooks
 *
 * A kernel with UMCG sees a worker fall asleep in any syscall. The emulation
 * sees only what it is told: a worker brackets a call that may sleep with
 * umcg_block_begin() and umcg_block_end(). begin makes the worker BLOCKED
 * and wakes next_tid or its server, so the server can run someone else;
 * end makes it RUNNABLE, pushes it on its server's list, wakes the server
 * and sleeps until it is RUNNING again. On the kernel backend both are
 * no-ops that return 0.
 * ---------------------------------------------------------------------- */

/**
 * umcg_block_begin() - the calling worker is about to sleep in the kernel.
 *
 * Return: 0 on success (also on the kernel backend, always);
 *  -EINVAL if the caller is not a registered worker, is already inside
 *   a blocking region, or is a signal handler that interrupted a call of
 *   the library (whose state a region must not change under it);
 *  -ESRCH if its server_tid names no registered server;
 *  -EAGAIN if the caller's state is not RUNNING.
 * Context: a worker.
 */
UMCG_API int umcg_block_begin(void);

/**
 * umcg_block_end() - the calling worker's blocking call has returned.
 *
 * Sleeps until the caller's server runs it again.
 *
 * Return: 0 on success (also on the kernel backend, always);
 *  -EINVAL if the caller is not inside a blocking region;
 *  -ESRCH if its server_tid names no registered server (the caller stays
 *   inside the blocking region; fix server_tid and call again).
 * Context: a worker.
 */
UMCG_API int umcg_block_end(void);

/* ------------------------------------------------------------------------
 * Detection of unannounced blocking (emulation)
 *
 * A worker asleep in the kernel in a call nobody announced (a raw
 * syscall(), a page fault, a lock inside libc, any unwrapped call) is
 * noticed by the emulation within a bound: it is made BLOCKED, blocked_ts
 * stamped, and its server woken, as the kernel does at once. When it wakes
 * it goes back under its server (BLOCKED -> RUNNABLE, pushed, waits for
 * RUNNING) before it has run user code for that bound beside another worker
 * of its server. With detection on, a kick does not signal a worker it
 * finds asleep in a system call (README, "Blocking on the emulation", says
 * what a kick that races with the start of a sleep can still do). The
 * bound defaults to UMCG_DETECT_DEFAULT_NS (2 ms). The environment variable
 * UMCG_DETECT_US (microseconds, 0 = off) sets it at the first registration,
 * umcg_detect_set() at any time. On the kernel backend nothing needs
 * detecting and the setting has no effect.
 * ---------------------------------------------------------------------- */

/* The bounds umcg_detect_set() accepts (0 aside): 100 us to 10 s. */
#define UMCG_DETECT_MIN_NS 100000ull
#define UMCG_DETECT_MAX_NS 10000000000ull
/* The bound in use until UMCG_DETECT_US or umcg_detect_set() says otherwise. */
#define UMCG_DETECT_DEFAULT_NS 2000000ull

/**
 * umcg_detect_set() - set the detection bound.
 * @bound_ns: 0 turns detection off; otherwise UMCG_DETECT_MIN_NS to
 *	UMCG_DETECT_MAX_NS. A watcher thread looks at running workers every
 *	@bound_ns / 2.
 *
 * Return: 0; -EINVAL for a bound out of range (nothing changes).
 * Context: any thread.
 */
UMCG_API int umcg_detect_set(uint64_t bound_ns);

/**
 * umcg_detect_get() - the detection bound in use.
 *
 * Return: the bound in ns, 0 if detection is off.
 * Context: any thread.
 */
UMCG_API uint64_t umcg_detect_get(void);

/* ------------------------------------------------------------------------
 * Runnable-list helpers
 *
 * A server's runnable_workers_ptr heads a LIFO singly linked list of
 * RUNNABLE workers, pushed by the backend. User space takes the whole list
 * at once, and only then may change those workers' states.
 * ---------------------------------------------------------------------- */

/**
 * umcg_runnable_take() - detach a server's whole runnable list.
 * @server: the server's struct umcg_task.
 *
 * Atomically exchanges @server->runnable_workers_ptr with 0 (acquire, so
 * everything the pushers wrote before their push is visible).
 *
 * Return: the list, newest first, or NULL if it was empty or @server NULL.
 * Context: any thread, usually the server itself.
 */
UMCG_API struct umcg_task *umcg_runnable_take(struct umcg_task *server);

/**
 * umcg_runnable_next() - the element after @worker on a taken list.
 * @worker: an element of a list returned by umcg_runnable_take().
 *
 * Return: the next worker, or NULL at the end.
 * Context: any thread.
 */
static inline struct umcg_task *umcg_runnable_next(const struct umcg_task *worker)
{
	return (struct umcg_task *)(uintptr_t)worker->runnable_workers_ptr;
}

/**
 * umcg_runnable_for_each() - walk a taken list.
 * @pos: a struct umcg_task * cursor.
 * @tmp: another struct umcg_task *, holding the next element, so that the
 *	body may reuse @pos->runnable_workers_ptr or hand @pos to a queue.
 * @head: the list from umcg_runnable_take().
 */
#define umcg_runnable_for_each(pos, tmp, head)                                      \
	for ((pos) = (head), (tmp) = (pos) ? umcg_runnable_next(pos) : NULL; (pos); \
	     (pos) = (tmp), (tmp) = (pos) ? umcg_runnable_next(pos) : NULL)

/**
 * umcg_runnable_count() - the number of elements of a taken list.
 * @head: the list, or NULL.
 *
 * Return: the length.
 * Context: any thread.
 */
UMCG_API size_t umcg_runnable_count(const struct umcg_task *head);

/**
 * umcg_runnable_sort_oldest() - order a taken list oldest first.
 * @head: the list from umcg_runnable_take(), newest first.
 *
 * Sorts by runnable_ts, ascending; workers with equal timestamps end up in
 * the order they were pushed (the reverse of the list's order), so the
 * result is FIFO even where the clock is coarse. O(n log n), no allocation.
 *
 * Return: the new head (NULL for an empty list).
 * Context: any thread.
 */
UMCG_API struct umcg_task *umcg_runnable_sort_oldest(struct umcg_task *head);

#ifdef __cplusplus
}
#endif

#endif /* UMCG_UMCG_H */
