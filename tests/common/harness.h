/* SPDX-License-Identifier: MIT */
/*
 * tests/common/harness.h - threads, servers, workers and checks for the UMCG
 * conformance suite.
 *
 * Everything here uses only the public API (<umcg/umcg.h>), pthreads and
 * plain system calls, so that the suite runs unchanged on every backend.
 * The suite runs in Check's fork mode: each test is a fresh process whose
 * main thread is unregistered at the start, and a thread left sleeping in
 * umcg_wait() dies with that process. An assertion that fails in any
 * thread ends the process (_exit in fork mode), so helper threads may fail
 * a test directly.
 *
 * Rules for code that runs on a worker while it is RUNNING: on the kernel
 * backend every syscall that sleeps makes the worker BLOCKED and wakes its
 * server, so worker code waits by spinning (h_spin_us(), H_SPIN_UNTIL) and
 * reports failures with H_CHECK(), which costs nothing when the condition
 * holds (ck_assert() records a location on success, which is a write()).
 */
#ifndef UMCG_TESTS_HARNESS_H
#define UMCG_TESTS_HARNESS_H

#include <check.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include <umcg/umcg.h>

#include "test_common.h"

/* The backend of this run (umcg_backend_active()), set by main(). */
extern int h_backend;

/* Sentinel of a result that was not produced yet. */
#define H_PENDING INT_MIN

/* The largest number of workers a test may start. */
#define H_MAX_WORKERS 16

/* ---- time, threads, randomness ------------------------------------------ */

pid_t h_gettid(void);

/* h_spin_us() - busy-wait without any syscall; for workers. */
void h_spin_us(unsigned int us);

/* h_rand() - xorshift32 step on *@seed (which must not be 0). */
uint32_t h_rand(uint32_t *seed);

/* h_thread() - start a plain (unregistered) helper thread, or fail. */
pthread_t h_thread(void *(*fn)(void *), void *arg);
void h_join(pthread_t th);

/* h_skip() - print that @test does not apply to this backend, and why. */
void h_skip(const char *test, const char *why);

/* ---- struct umcg_task fields shared between threads ----------------------- */

#define h_load(p) atomic_load(h_atomic(p))
#define h_store(p, v) atomic_store(h_atomic(p), (v))

static inline uint32_t h_state(struct umcg_task *t)
{
	return h_load(&t->state);
}

/* Store state and flag bits @st, keeping the user bits 16-31. */
void h_set_state(struct umcg_task *t, uint32_t st);

/* CAS the whole state word from @old to @new. */
bool h_cas_state(struct umcg_task *t, uint32_t old, uint32_t new_state);

/*
 * h_alloc() - zeroed, 64-byte aligned memory that lives as long as the test
 * process: registered tasks must stay valid while their threads sleep, and
 * a global table keeps it reachable for leak checkers.
 */
void *h_alloc(size_t size);

/* h_task_new() - a zeroed struct umcg_task from h_alloc(). */
struct umcg_task *h_task_new(void);

/* Fill @t for umcg_ctl(): a server (RUNNING, itself) or a worker of @server. */
void h_task_server(struct umcg_task *t, pid_t self_tid);
void h_task_worker(struct umcg_task *t, pid_t server_tid);

/* Walk a server's list without taking it (only pushes may run meanwhile). */
bool h_list_contains(struct umcg_task *server, const struct umcg_task *t);
size_t h_list_len(struct umcg_task *server);

/* ---- snapshots: "a failed call changes nothing" --------------------------- */

struct h_snap {
	int n;
	struct umcg_task *src[4];
	struct umcg_task copy[4];
};

/* h_snap_take() - copy up to four tasks (NULL entries are skipped). */
void h_snap_take(struct h_snap *s, struct umcg_task *a, struct umcg_task *b, struct umcg_task *c,
		 struct umcg_task *d);

/* h_snap_same() - compare again; on a difference describe it in @why. */
bool h_snap_same(const struct h_snap *s, char *why, size_t len);

#define H_ASSERT_UNCHANGED(snap, what)                                       \
	do {                                                                 \
		char why_[256];                                              \
		if (!h_snap_same((snap), why_, sizeof(why_)))                \
			ck_abort_msg("%s changed a task: %s", (what), why_); \
	} while (0)

/* ---- checks that cost nothing when they hold ------------------------------ */

/* H_CHECK() - like ck_assert_msg() but silent on success: safe in workers. */
#define H_CHECK(cond, ...)                         \
	do {                                       \
		if (!(cond))                       \
			ck_abort_msg(__VA_ARGS__); \
	} while (0)

/* h_dump() - the state of every server and worker of this test, for messages. */
void h_dump(char *buf, size_t len);

/* h_until_failed() - fail: @what did not happen within h_liveness_ns(). */
void h_until_failed(const char *file, int line, const char *what) __attribute__((noreturn));

static inline void h_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield" ::: "memory");
#endif
}

#define H_UNTIL_(cond, spin, what)                                          \
	do {                                                                \
		uint64_t end_ = h_now(CLOCK_MONOTONIC) + h_liveness_ns();   \
		while (!(cond)) {                                           \
			if (h_now(CLOCK_MONOTONIC) > end_)                  \
				h_until_failed(__FILE__, __LINE__, (what)); \
			if (spin)                                           \
				h_cpu_relax();                              \
			else                                                \
				h_sleep_us(100);                            \
		}                                                           \
	} while (0)

/* Poll @cond: sleeping (any thread but a RUNNING worker) or spinning. */
#define H_WAIT_UNTIL(cond, what) H_UNTIL_(cond, false, what)
#define H_SPIN_UNTIL(cond, what) H_UNTIL_(cond, true, what)

/* ---- workers -------------------------------------------------------------- */

struct h_worker;
typedef void (*h_worker_fn)(struct h_worker *w);

/**
 * struct h_worker - a worker thread and what the tests share with it.
 * @task: its struct umcg_task (first member: see h_worker_of()).
 * @tid: its tid, known once h_worker_start() returned.
 * @server_tid: the server it registers with.
 * @clock: its registration clock.
 * @reg_state: the state word it registers with.
 * @fn: what it runs once registered and run; then it parks (below).
 * @arg: the test's argument for @fn.
 * @reg_ret: umcg_ctl()'s result, H_PENDING before it returned.
 * @done: @fn returned and the worker parked (or left UMCG).
 * @stop: set by the test to end a loop in @fn.
 * @left: @fn unregistered the thread for good: do not park.
 * @progress: a counter @fn advances while it runs.
 * @r: results and phases, test-defined (H_PENDING-initialised).
 * @index: its number within the test, from 0.
 *
 * When @fn returns, the worker parks: it yields, and yields again every
 * time it is run, so a parked worker stays RUNNABLE on some list.
 */
struct h_worker {
	struct umcg_task task;
	pthread_t thread;
	atomic_int tid;
	pid_t server_tid;
	clockid_t clock;
	uint32_t reg_state;
	h_worker_fn fn;
	void *arg;
	atomic_int reg_ret;
	atomic_int done;
	atomic_int stop;
	atomic_int left;
	atomic_ulong progress;
	atomic_int r[8];
	int index;
};

static inline struct h_worker *h_worker_of(struct umcg_task *t)
{
	return (struct h_worker *)t;
}

/* h_worker_start() - start a worker registering with @server_tid (BLOCKED). */
struct h_worker *h_worker_start(pid_t server_tid, clockid_t clk, h_worker_fn fn, void *arg);

/* h_worker_start_state() - the same with an explicit registration state word. */
struct h_worker *h_worker_start_state(pid_t server_tid, clockid_t clk, uint32_t state,
				      h_worker_fn fn, void *arg);

/* h_yield() - from the worker itself: RUNNABLE|TF_COND_WAIT, umcg_wait(0, 0). */
int h_yield(struct h_worker *w);

/*
 * h_wait_asleep() - wait until @w's thread sleeps (state S in /proc).
 *
 * A worker that becomes RUNNABLE pushes itself and then wakes its server.
 * A server that finds it on the list before that wake landed, and runs it,
 * can be woken by that late wake while the worker runs: legal, but it would
 * make a test's "the server was woken, so the worker yielded" wrong. A
 * RUNNABLE worker's last step is to fall asleep, so once its thread sleeps
 * its wake-up is done. h_server_run() and h_server_wait_listed() use this.
 */
void h_wait_asleep(struct h_worker *w);

/* ---- servers -------------------------------------------------------------- */

#define H_QUEUE_MAX 64

/**
 * struct h_server - a server thread, its task and its user-space run queue.
 * @task: its struct umcg_task.
 * @tid: its tid.
 * @clock: its registration clock.
 * @queue: workers taken off the runnable list, oldest first.
 * @nq: the number of entries of @queue.
 * @last_pick_state: the state word of the worker h_server_run() last picked,
 *	read just before it was run.
 * @wakeups: umcg_wait() calls of h_server_run() that ended in 0 without a
 *	worker to run (woken by a push).
 * @eagains: umcg_wait() calls of h_server_run() that returned -EAGAIN.
 * @fn, @arg, @thread, @reg_ret: for servers started by h_server_thread_start().
 */
struct h_server {
	struct umcg_task task;
	pid_t tid;
	clockid_t clock;
	struct h_worker *queue[H_QUEUE_MAX];
	unsigned int nq;
	uint32_t last_pick_state;
	unsigned long wakeups;
	unsigned long eagains;
	void (*fn)(struct h_server *s, void *arg);
	void *arg;
	pthread_t thread;
	atomic_int reg_ret;
	atomic_int done;
};

/* h_server_register() - register the calling thread as a server, or fail. */
struct h_server *h_server_register(clockid_t clk);

/* h_server_register_state() - the same with an explicit state word. */
struct h_server *h_server_register_state(clockid_t clk, uint32_t state);

/*
 * h_server_thread_start() - a thread that registers as a server with
 * @clk, runs @fn, unregisters and ends. Returns once it is registered.
 */
struct h_server *h_server_thread_start(clockid_t clk, void (*fn)(struct h_server *s, void *arg),
				       void *arg);
void h_server_thread_join(struct h_server *s);

/* h_server_collect() - take the runnable list and append it to the queue. */
void h_server_collect(struct h_server *s);

/* h_server_unqueue() - remove @w from the queue; false if it is not there. */
bool h_server_unqueue(struct h_server *s, struct h_worker *w);

/* h_server_requeue() - put @w back at the head of the queue. */
void h_server_requeue(struct h_server *s, struct h_worker *w);

/* h_server_queued() - whether @w is in the queue. */
bool h_server_queued(const struct h_server *s, const struct h_worker *w);

/*
 * h_server_run() - the server loop of doc/umcg-abi.md §7 rule 8 until @w has run:
 * RUNNABLE|TF_COND_WAIT, take the list, pick @w if it is queued, umcg_wait.
 * With @slice_ns the wait that runs @w has a deadline @slice_ns ahead.
 * Before a wait that runs @w, every queued worker has fallen asleep (see
 * h_wait_asleep()), so the wake-up that ends the wait is @w's doing.
 *
 * Return: 0 once @w was run and the server was woken again, -ETIMEDOUT if
 * @w was run and @slice_ns passed. Fails the test when nothing happens
 * within h_liveness_ns() or umcg_wait() returns an error the ABI does not
 * allow here.
 */
int h_server_run(struct h_server *s, struct h_worker *w, uint64_t slice_ns);

/*
 * h_server_switch() - one raw step: next_tid = @w (or 0), state
 * RUNNABLE|TF_COND_WAIT, umcg_wait(0, @abs_timeout). No list take.
 */
int h_server_switch(struct h_server *s, struct h_worker *w, uint64_t abs_timeout);

/*
 * h_server_wait_listed() - a RUNNING server polls until @w is on its list
 * and asleep.
 */
void h_server_wait_listed(struct h_server *s, struct h_worker *w);

/* ---- calls in a thread of their own --------------------------------------- */

/**
 * struct h_ctl_call - one umcg_ctl() made by a fresh thread.
 * @flags, @self, @clock: the arguments.
 * @server_tid_is_self: first store the thread's tid into @self->server_tid.
 * @unregister_after: after a successful call, unregister (result in
 *	@unreg_ret) before the thread ends.
 * @tid: the calling thread's tid.
 * @ret: the result, H_PENDING until the call returned.
 */
struct h_ctl_call {
	uint32_t flags;
	struct umcg_task *self;
	clockid_t clock;
	bool server_tid_is_self;
	bool unregister_after;
	atomic_int tid;
	atomic_int ret;
	atomic_int unreg_ret;
	pthread_t thread;
};

/*
 * h_ctl_in_thread() - make the call; wait for it up to h_liveness_ns().
 * Return: true if it returned. If not, @c and @c->self stay in use.
 */
bool h_ctl_in_thread(struct h_ctl_call *c);

/*
 * h_ctl_thread() - the usual case: the result of umcg_ctl(@flags, @self,
 * @clk) from a fresh thread, failing the test if the call blocks.
 */
int h_ctl_thread(uint32_t flags, struct umcg_task *self, clockid_t clk, bool server_tid_is_self);

/* h_assert_unregistered() - the calling thread holds no registration. */
void h_assert_unregistered(const char *what);

/* ---- idle threads and foreign processes ----------------------------------- */

/* An unregistered thread of this process that sleeps until stopped. */
struct h_idle {
	pthread_t thread;
	atomic_int tid;
	int fd[2];
};

void h_idle_start(struct h_idle *idle);
void h_idle_stop(struct h_idle *idle);

/* h_fork_sleeper() - a child process that sleeps until h_kill() ends it. */
pid_t h_fork_sleeper(void);
void h_kill(pid_t pid);

/* ---- watchdog ------------------------------------------------------------- */

/*
 * h_watchdog_start() - h_watchdog_run() on @n counters that must each move
 * every @stall_ms (times CK_TIMEOUT_MULTIPLIER; H_WATCHDOG_STALL_MS is the
 * usual bound). @iteration is printed with the failure, and so are the
 * states of the test's tasks (h_dump()). Stop it with h_watchdog_stop().
 */
struct h_watchdog *h_watchdog_start(const char *what, atomic_ulong *const *counters, int n,
				    const atomic_ulong *iteration, unsigned int stall_ms);

#endif /* UMCG_TESTS_HARNESS_H */
