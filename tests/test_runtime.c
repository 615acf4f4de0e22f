/* SPDX-License-Identifier: MIT */
/*
 * test_runtime.c - the runtime of <umcg/runtime.h>: worker lifecycle,
 * yield storms, parking, preemption, blocking, stealing, fork() and misuse.
 *
 * Each test runs in its own process (Check's fork mode) and builds its own
 * runtimes, so nothing carries over from one test to the next. An assertion
 * that fails in any thread ends that process (_exit in fork mode), so
 * workers and helper threads may fail a test directly; hot loops test with
 * a plain `if` and call ck_abort_msg() only on failure, because a passing
 * ck_assert() writes to Check's pipe (a syscall, which on the emulation
 * would hold the worker's server).
 *
 * Workers never sleep in the kernel except through the library (yield,
 * park, sleep, join): on the emulation an unannounced sleep holds the
 * server. They wait by yielding (YIELD_UNTIL); plain threads wait by
 * polling with short sleeps (WAIT_UNTIL). Both give up after a liveness
 * bound (h_liveness_ns(), tests/common) with a message rather than
 * hanging until Check's timeout.
 *
 * Progress and the watchdog. Tests that look for lost wake-ups (a worker
 * left RUNNABLE, or parked with its unpark lost, while its server idles)
 * give every worker a progress counter and run a watchdog thread that
 * fails the test, after printing every counter and every server's stats,
 * when the sum has not moved for H_WATCHDOG_STALL_MS (times CK_TIMEOUT_MULTIPLIER) before
 * reaching its target. Counters are relaxed atomics: the watchdog needs
 * only to see them move eventually, not in any order with other data.
 *
 * Orders between workers. A flag or counter that hands data from one
 * thread to another is stored with release and loaded with acquire (the
 * handle a worker publishes, `release` flags, the ping-pong `turn`). The
 * final checks in the test's main thread read plain results after
 * umcg_join() or umcg_rt_drain(), whose futex wait on the worker's
 * completion orders them after everything the worker did. Waits on a
 * condition always loop: park() may return for a permit left by an earlier
 * round (permits coalesce), and the loop re-reads the condition.
 *
 * UMCG_STRESS=1 (any non-zero value) runs every loop ten times longer.
 * The default run stays well under a minute on two CPUs.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* gettid(), pthread_getattr_np(), CPU_COUNT() */
#endif
#include <check.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <umcg/runtime.h>

#include "test_common.h"

#include "test_common.h"

#if defined(__SANITIZE_THREAD__)
#define UNDER_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define UNDER_TSAN 1
#endif
#endif

#define MS UINT64_C(1000000)
#define SEC UINT64_C(1000000000)

/* ---- small helpers ------------------------------------------------------- */

#define LOAD(p) atomic_load_explicit((p), memory_order_acquire)
#define STORE(p, v) atomic_store_explicit((p), (v), memory_order_release)
#define BUMP(p) atomic_fetch_add_explicit((p), 1, memory_order_relaxed)
#define PEEK(p) atomic_load_explicit((p), memory_order_relaxed)

/* Fail the test if @cond is false; costs nothing when it holds. */
#define EXPECT(cond, ...)                          \
	do {                                       \
		if (!(cond))                       \
			ck_abort_msg(__VA_ARGS__); \
	} while (0)

/* Wait from a plain thread until @cond holds, or fail. */
#define WAIT_UNTIL(cond)                                                                      \
	do {                                                                                  \
		uint64_t wu_end_ = h_now(CLOCK_MONOTONIC) + h_liveness_ns();                  \
		while (!(cond)) {                                                             \
			EXPECT(h_now(CLOCK_MONOTONIC) < wu_end_, "timed out waiting for: %s", \
			       #cond);                                                        \
			h_sleep_us(200);                                                      \
		}                                                                             \
	} while (0)

/* Wait from a worker, yielding, until @cond holds, or fail. */
#define YIELD_UNTIL(cond)                                                             \
	do {                                                                          \
		uint64_t yu_end_ = h_now(CLOCK_MONOTONIC) + h_liveness_ns();          \
		while (!(cond)) {                                                     \
			EXPECT(h_now(CLOCK_MONOTONIC) < yu_end_,                      \
			       "worker timed out waiting for: %s", #cond);            \
			EXPECT(umcg_yield() == 0, "umcg_yield() failed in a worker"); \
		}                                                                     \
	} while (0)

/* nr_cpus() - the CPUs this process may run on. */
static unsigned int nr_cpus(void)
{
	cpu_set_t set;

	if (sched_getaffinity(0, sizeof(set), &set))
		return 1;
	return (unsigned int)CPU_COUNT(&set);
}

/* thread_gone() - true once thread @tid of this process has exited. */
static bool thread_gone(pid_t tid)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/self/task/%d", (int)tid);
	return access(path, F_OK) != 0;
}

/*
 * rt_start_attr() - a started runtime built from @attr, or NULL when @attr
 * asks for SCHED_FIFO servers and the process may not have them (then the
 * refused runtime is destroyed and @who reports the skip).
 */
static struct umcg_rt *rt_start_attr(const struct umcg_rt_attr *attr, const char *who)
{
	struct umcg_rt *rt = NULL;
	int ret;

	ck_assert_int_eq(umcg_rt_create(&rt, attr), 0);
	ck_assert_ptr_nonnull(rt);
	ret = umcg_rt_start(rt);
	if (ret == -EPERM && attr->server_priority > 0) {
		/* Refused cleanly: nothing runs, and it can be destroyed. */
		ck_assert_int_eq(umcg_rt_destroy(rt), 0);
		fprintf(stderr, "%s: SCHED_FIFO not permitted, skipped\n", who);
		return NULL;
	}
	ck_assert_int_eq(ret, 0);
	return rt;
}

/* rt_start() - a started runtime with @nr servers (0: one per CPU). */
static struct umcg_rt *rt_start(unsigned int nr, uint64_t timeslice_ns)
{
	struct umcg_rt_attr attr;

	umcg_rt_attr_init(&attr);
	attr.nr_servers = nr;
	attr.timeslice_ns = timeslice_ns;
	return rt_start_attr(&attr, "rt_start");
}

/* rt_end() - drain and destroy @rt. */
static void rt_end(struct umcg_rt *rt)
{
	ck_assert_int_eq(umcg_rt_drain(rt), 0);
	ck_assert_int_eq(umcg_rt_destroy(rt), 0);
}

static void *echo(void *arg)
{
	EXPECT(umcg_yield() == 0, "umcg_yield() failed in a worker");
	return arg;
}

static void *few_yields(void *arg)
{
	for (int i = 0; i < 3; i++)
		EXPECT(umcg_yield() == 0, "umcg_yield() failed in a worker");
	return arg;
}

/* assert_rt_works() - a worker of @rt runs and reports its value. */
static void assert_rt_works(struct umcg_rt *rt)
{
	struct umcg_worker *w = NULL;
	void *ret = NULL;

	ck_assert_int_eq(umcg_spawn(rt, &w, NULL, echo, (void *)0x1234), 0);
	ck_assert_int_eq(umcg_join(w, &ret), 0);
	ck_assert_ptr_eq(ret, (void *)0x1234);
}

/* dump_servers() - every server's counters, to stderr. */
static void dump_servers(const char *what, const struct umcg_rt *rt)
{
	struct umcg_server_stats s;
	unsigned int i;

	for (i = 0; i < umcg_rt_nr_servers(rt); i++) {
		if (umcg_rt_server_stats(rt, i, &s))
			continue;
		fprintf(stderr,
			"%s: server %u cpu %d: switches %" PRIu64 " preemptions %" PRIu64
			" blocks %" PRIu64 " yields %" PRIu64 " steals %" PRIu64
			" idle_wakeups %" PRIu64 " wakeups_sent %" PRIu64 "\n",
			what, i, s.cpu, s.switches, s.preemptions, s.blocks, s.yields, s.steals,
			s.idle_wakeups, s.wakeups_sent);
	}
}

/* ---- the watchdog (see the header comment) ----------------------------- */

static void watchdog_dump(void *rt, char *buf, size_t len)
{
	dump_servers("watchdog", rt);
	snprintf(buf, len, "the servers' counters are on stderr");
}

/*
 * watchdog_start() - h_watchdog_run() on @n progress counters whose sum
 * must reach @target, dumping @rt's servers when it stalls.
 */
static struct h_watchdog *watchdog_start(const char *what, atomic_ulong *progress, size_t n,
					 unsigned long target, const struct umcg_rt *rt)
{
	atomic_ulong **counters = calloc(n, sizeof(*counters));
	struct h_watchdog *wd;
	size_t i;

	ck_assert_ptr_nonnull(counters);
	for (i = 0; i < n; i++)
		counters[i] = &progress[i];
	wd = h_watchdog_run(&(struct h_watchdog_spec){
		.what = what,
		.counters = counters,
		.n = n,
		.target = target,
		.dump = watchdog_dump,
		.arg = (void *)rt,
	});
	free(counters);
	return wd;
}

/* ==== lifecycle ============================================================ */

static void *triple(void *arg)
{
	EXPECT(umcg_yield() == 0, "umcg_yield() failed in a worker");
	return (void *)((uintptr_t)arg * 3);
}

#define NR_VALUES 64
START_TEST(test_spawn_join_values)
{
	struct umcg_rt *rt = rt_start(0, 0);
	struct umcg_worker *w[NR_VALUES];
	uintptr_t i;
	void *ret;

	for (i = 0; i < NR_VALUES; i++)
		ck_assert_int_eq(umcg_spawn(rt, &w[i], NULL, triple, (void *)(i + 1)), 0);
	for (i = 0; i < NR_VALUES; i++) {
		ret = NULL;
		ck_assert_int_eq(umcg_join(w[i], &ret), 0);
		ck_assert_uint_eq((uintptr_t)ret, (i + 1) * 3);
	}
	/* A NULL @retval is allowed. */
	ck_assert_int_eq(umcg_spawn(rt, &w[0], NULL, triple, (void *)1), 0);
	ck_assert_int_eq(umcg_join(w[0], NULL), 0);
	rt_end(rt);
}
END_TEST

struct attr_probe {
	atomic_int go;
	atomic_int done;
	size_t stack;
	int prio;
	uint64_t deadline_before;
	int set_rc;
	uint64_t deadline_after;
};

static void *probe_attrs(void *arg)
{
	struct attr_probe *p = arg;
	pthread_attr_t pa;

	if (pthread_getattr_np(pthread_self(), &pa) == 0) {
		pthread_attr_getstacksize(&pa, &p->stack);
		pthread_attr_destroy(&pa);
	}
	p->prio = umcg_worker_priority(umcg_self());
	p->deadline_before = umcg_worker_deadline(umcg_self());
	YIELD_UNTIL(LOAD(&p->go));
	p->set_rc = umcg_worker_set_deadline(777);
	p->deadline_after = umcg_worker_deadline(umcg_self());
	STORE(&p->done, 1);
	return NULL;
}

/* Stack size, priority and deadline reach the worker; the deadline moves. */
START_TEST(test_worker_attributes)
{
	struct umcg_rt *rt = rt_start(1, 0);
	struct umcg_worker_attr wa;
	static struct attr_probe p, q;
	struct umcg_worker *w, *v;

	umcg_worker_attr_init(&wa);
	ck_assert_int_eq(wa.server, -1);
	ck_assert_int_eq(wa.cpu, -1);
	ck_assert_int_eq(wa.priority, 0);
	wa.stack_size = 1024 * 1024;
	wa.priority = 31;
	wa.deadline = 123456789;
	ck_assert_int_eq(umcg_spawn(rt, &w, &wa, probe_attrs, &p), 0);
	ck_assert_int_eq(umcg_worker_priority(w), 31);
	ck_assert_uint_eq(umcg_worker_deadline(w), 123456789);
	STORE(&p.go, 1);
	WAIT_UNTIL(LOAD(&p.done));
	/* Joinable and finished: its handle is still valid. */
	ck_assert_uint_eq(umcg_worker_deadline(w), 777);
	ck_assert_int_eq(umcg_join(w, NULL), 0);
	ck_assert_uint_ge(p.stack, 1024 * 1024);
	ck_assert_int_eq(p.prio, 31);
	ck_assert_uint_eq(p.deadline_before, 123456789);
	ck_assert_int_eq(p.set_rc, 0);
	ck_assert_uint_eq(p.deadline_after, 777);

	/* Defaults: 256 KiB of stack, priority 0, no deadline. */
	STORE(&q.go, 1);
	ck_assert_int_eq(umcg_spawn(rt, &v, NULL, probe_attrs, &q), 0);
	ck_assert_int_eq(umcg_join(v, NULL), 0);
	ck_assert_uint_ge(q.stack, 256 * 1024);
	ck_assert_int_eq(q.prio, 0);
	ck_assert_uint_eq(q.deadline_before, 0);
	rt_end(rt);
}
END_TEST

struct name_probe {
	_Atomic(struct umcg_worker *) self;
	pid_t tid;
	char thread_name[16];
	char api_name[32];
	atomic_int go;
};

static void *probe_name(void *arg)
{
	struct name_probe *p = arg;

	p->tid = gettid();
	pthread_getname_np(pthread_self(), p->thread_name, sizeof(p->thread_name));
	snprintf(p->api_name, sizeof(p->api_name), "%s", umcg_worker_name(umcg_self()));
	STORE(&p->self, umcg_self());
	/* Stay alive until the main thread has looked at the handle. */
	YIELD_UNTIL(LOAD(&p->go));
	return NULL;
}

static void *self_outside(void *arg)
{
	int *rc = arg;

	rc[0] = umcg_self() == NULL;
	rc[1] = umcg_yield();
	return NULL;
}

START_TEST(test_self_and_names)
{
	static const char longname[] = "0123456789abcdefghij";
	struct umcg_rt *rt = rt_start(0, 0);
	static struct name_probe p[4];
	struct umcg_worker_attr wa;
	struct umcg_worker *w[4];
	char buf[16];
	pthread_t th;
	int rc[2] = { 0, 0 };
	int i;

	/* Not a worker: the main thread and a plain thread. */
	ck_assert_ptr_null(umcg_self());
	ck_assert_int_eq(pthread_create(&th, NULL, self_outside, rc), 0);
	ck_assert_int_eq(pthread_join(th, NULL), 0);
	ck_assert_int_eq(rc[0], 1);
	ck_assert_int_eq(rc[1], -EPERM);

	umcg_worker_attr_init(&wa);
	wa.name = "alpha";
	ck_assert_int_eq(umcg_spawn(rt, &w[0], &wa, probe_name, &p[0]), 0);
	wa.name = longname;
	ck_assert_int_eq(umcg_spawn(rt, &w[1], &wa, probe_name, &p[1]), 0);
	wa.name = NULL;
	ck_assert_int_eq(umcg_spawn(rt, &w[2], &wa, probe_name, &p[2]), 0);
	/* The name is copied: changing the caller's buffer changes nothing. */
	strcpy(buf, "beta");
	wa.name = buf;
	ck_assert_int_eq(umcg_spawn(rt, &w[3], &wa, probe_name, &p[3]), 0);
	strcpy(buf, "XXXX");

	for (i = 0; i < 4; i++) {
		WAIT_UNTIL(LOAD(&p[i].self) != NULL);
		ck_assert_ptr_eq(LOAD(&p[i].self), w[i]);
		ck_assert_int_gt(umcg_worker_tid(w[i]), 0);
		ck_assert_int_eq(umcg_worker_tid(w[i]), p[i].tid);
		ck_assert_int_ne(umcg_worker_tid(w[i]), gettid());
	}
	ck_assert_str_eq(umcg_worker_name(w[0]), "alpha");
	ck_assert_str_eq(p[0].api_name, "alpha");
	ck_assert_str_eq(p[0].thread_name, "alpha");
	/* Long names: the thread name is the first 15 bytes. */
	ck_assert_str_eq(p[1].thread_name, "0123456789abcde");
	ck_assert_uint_ge(strlen(umcg_worker_name(w[1])), 15);
	ck_assert(strncmp(umcg_worker_name(w[1]), longname, strlen(umcg_worker_name(w[1]))) == 0);
	ck_assert_str_eq(umcg_worker_name(w[2]), "");
	ck_assert_str_eq(p[2].api_name, "");
	ck_assert_str_eq(umcg_worker_name(w[3]), "beta");
	ck_assert_str_eq(p[3].thread_name, "beta");

	for (i = 0; i < 4; i++) {
		STORE(&p[i].go, 1);
		ck_assert_int_eq(umcg_join(w[i], NULL), 0);
	}
	ck_assert_ptr_null(umcg_self());
	rt_end(rt);
}
END_TEST

static atomic_int finished;
static atomic_int release;

static void *finish_counted(void *arg)
{
	(void)arg;
	for (int i = 0; i < 3; i++)
		EXPECT(umcg_yield() == 0, "umcg_yield() failed in a worker");
	BUMP(&finished);
	return NULL;
}

static void *wait_release(void *arg)
{
	(void)arg;
	YIELD_UNTIL(LOAD(&release));
	BUMP(&finished);
	return NULL;
}

#define NR_DETACHED 32
START_TEST(test_detach)
{
	struct umcg_rt *rt = rt_start(0, 0);
	struct umcg_worker *w;
	pid_t tid;
	int i;

	/* Spawned detached (no handle): they free themselves. */
	for (i = 0; i < NR_DETACHED; i++)
		ck_assert_int_eq(umcg_spawn(rt, NULL, NULL, finish_counted, NULL), 0);
	ck_assert_int_eq(umcg_rt_drain(rt), 0);
	ck_assert_int_eq(LOAD(&finished), NR_DETACHED);

	/* Detached while it runs. */
	ck_assert_int_eq(umcg_spawn(rt, &w, NULL, wait_release, NULL), 0);
	ck_assert_int_eq(umcg_detach(w), 0);
	STORE(&release, 1);
	ck_assert_int_eq(umcg_rt_drain(rt), 0);
	ck_assert_int_eq(LOAD(&finished), NR_DETACHED + 1);

	/* Detached after its thread is gone: detach reaps it. */
	ck_assert_int_eq(umcg_spawn(rt, &w, NULL, finish_counted, NULL), 0);
	WAIT_UNTIL(LOAD(&finished) == NR_DETACHED + 2);
	tid = umcg_worker_tid(w);
	ck_assert_int_gt(tid, 0);
	WAIT_UNTIL(thread_gone(tid));
	ck_assert_int_eq(umcg_detach(w), 0);
	/* Nothing is left to count: drain returns. */
	ck_assert_int_eq(umcg_rt_drain(rt), 0);

	assert_rt_works(rt);
	rt_end(rt);
}
END_TEST

static atomic_int cleanup_n;
static atomic_int cleanup_order[2];
static atomic_int after_exit;

static void note_cleanup(void *arg)
{
	int i = atomic_fetch_add_explicit(&cleanup_n, 1, memory_order_relaxed);

	if (i < 2)
		STORE(&cleanup_order[i], (int)(intptr_t)arg);
}

static __attribute__((noinline)) void exit_at_depth(int depth, void *val)
{
	if (depth == 0) {
		umcg_exit(val);
		STORE(&after_exit, 1);
		return;
	}
	EXPECT(umcg_yield() == 0, "umcg_yield() failed in a worker");
	exit_at_depth(depth - 1, val);
	STORE(&after_exit, 1);
}

static void *exiter(void *arg)
{
	int depth = (int)(intptr_t)arg;

	pthread_cleanup_push(note_cleanup, (void *)1);
	pthread_cleanup_push(note_cleanup, (void *)2);
	exit_at_depth(depth, (void *)(uintptr_t)(0x5eed + depth));
	pthread_cleanup_pop(0);
	pthread_cleanup_pop(0);
	STORE(&after_exit, 1);
	return NULL;
}

/* umcg_exit() from any depth: join sees its value, cleanup handlers run. */
START_TEST(test_exit)
{
	static const int depths[] = { 0, 1, 8 };
	struct umcg_rt *rt = rt_start(1, 0);
	struct umcg_worker *w;
	void *ret;
	size_t i;

	for (i = 0; i < sizeof(depths) / sizeof(depths[0]); i++) {
		atomic_store(&cleanup_n, 0);
		atomic_store(&cleanup_order[0], 0);
		atomic_store(&cleanup_order[1], 0);
		ck_assert_int_eq(umcg_spawn(rt, &w, NULL, exiter, (void *)(intptr_t)depths[i]), 0);
		ret = NULL;
		ck_assert_int_eq(umcg_join(w, &ret), 0);
		ck_assert_ptr_eq(ret, (void *)(uintptr_t)(0x5eed + depths[i]));
		ck_assert_int_eq(LOAD(&cleanup_n), 2);
		/* Innermost first, as pthread_exit() runs them. */
		ck_assert_int_eq(LOAD(&cleanup_order[0]), 2);
		ck_assert_int_eq(LOAD(&cleanup_order[1]), 1);
		ck_assert_int_eq(LOAD(&after_exit), 0);
	}

	/* A detached worker that exits frees itself too. */
	atomic_store(&cleanup_n, 0);
	ck_assert_int_eq(umcg_spawn(rt, NULL, NULL, exiter, (void *)3), 0);
	ck_assert_int_eq(umcg_rt_drain(rt), 0);
	ck_assert_int_eq(LOAD(&cleanup_n), 2);
	ck_assert_int_eq(LOAD(&after_exit), 0);

	assert_rt_works(rt);
	rt_end(rt);
}
END_TEST

#define MANY 2000
static struct umcg_worker *many[MANY];

/* 2000 live workers at once (x10 batches under stress), each yielding. */
START_TEST(test_many_workers)
{
	struct umcg_rt *rt = rt_start(0, 0);
	unsigned long b, batches = h_stress();
	uintptr_t i;
	void *ret;
	int rc;

	for (b = 0; b < batches; b++) {
		for (i = 0; i < MANY; i++) {
			rc = umcg_spawn(rt, &many[i], NULL, few_yields, (void *)(i + 1));
			ck_assert_msg(rc == 0, "spawn %lu of %d: %d", (unsigned long)i, MANY, rc);
		}
		for (i = 0; i < MANY; i++) {
			ret = NULL;
			ck_assert_int_eq(umcg_join(many[i], &ret), 0);
			ck_assert_uint_eq((uintptr_t)ret, i + 1);
		}
	}
	rt_end(rt);
}
END_TEST

static struct umcg_rt *tree_rt;
static atomic_int tree_errors;

/* A binary tree of workers: each spawns two children and joins them. */
static void *tree(void *arg)
{
	uintptr_t depth = (uintptr_t)arg, total = 1;
	struct umcg_worker *kid[2] = { NULL, NULL };
	void *ret;
	int k;

	EXPECT(umcg_yield() == 0, "umcg_yield() failed in a worker");
	if (depth == 0)
		return (void *)total;
	for (k = 0; k < 2; k++) {
		if (umcg_spawn(tree_rt, &kid[k], NULL, tree, (void *)(depth - 1))) {
			BUMP(&tree_errors);
			kid[k] = NULL;
		}
	}
	EXPECT(umcg_yield() == 0, "umcg_yield() failed in a worker");
	for (k = 0; k < 2; k++) {
		if (!kid[k])
			continue;
		ret = NULL;
		if (umcg_join(kid[k], &ret))
			BUMP(&tree_errors);
		else
			total += (uintptr_t)ret;
	}
	return (void *)total;
}

#define TREE_DEPTH 7
/* _i: 0 = one server, 1 = one per CPU. */
START_TEST(test_workers_spawn_workers)
{
	struct umcg_rt *rt = rt_start(_i == 0 ? 1 : 0, 0);
	unsigned long r, rounds = h_stress();
	struct umcg_worker *w;
	void *ret;

	tree_rt = rt;
	for (r = 0; r < rounds; r++) {
		ret = NULL;
		ck_assert_int_eq(umcg_spawn(rt, &w, NULL, tree, (void *)(uintptr_t)TREE_DEPTH), 0);
		ck_assert_int_eq(umcg_join(w, &ret), 0);
		ck_assert_int_eq(LOAD(&tree_errors), 0);
		ck_assert_uint_eq((uintptr_t)ret, (2u << TREE_DEPTH) - 1);
	}
	rt_end(rt);
}
END_TEST

static struct umcg_rt *chain_rt;

/* Each link spawns the next and joins it; the last one yields a while. */
static void *chain(void *arg)
{
	uintptr_t n = (uintptr_t)arg;
	struct umcg_worker *w;
	void *ret = NULL;

	if (n == 0) {
		for (int i = 0; i < 20; i++)
			EXPECT(umcg_yield() == 0, "umcg_yield() failed in a worker");
		return (void *)0;
	}
	EXPECT(umcg_spawn(chain_rt, &w, NULL, chain, (void *)(n - 1)) == 0, "spawn in chain");
	EXPECT(umcg_join(w, &ret) == 0, "join in chain");
	return (void *)((uintptr_t)ret + 1);
}

static void *yield_100(void *arg)
{
	for (int i = 0; i < 100; i++)
		EXPECT(umcg_yield() == 0, "umcg_yield() failed in a worker");
	return arg;
}

static void *join_arg(void *arg)
{
	void *ret = NULL;

	EXPECT(umcg_join(arg, &ret) == 0, "join from a worker failed");
	return ret;
}

/*
 * On one server a joining worker must give the server away: the joinee
 * needs it to finish. A chain of 32 joiners, and a worker joining a worker
 * the main thread spawned.
 */
START_TEST(test_join_from_worker_one_server)
{
	struct umcg_rt *rt = rt_start(1, 0);
	struct umcg_worker *a, *b;
	void *ret = NULL;

	chain_rt = rt;
	ck_assert_int_eq(umcg_spawn(rt, &a, NULL, chain, (void *)32), 0);
	ck_assert_int_eq(umcg_join(a, &ret), 0);
	ck_assert_uint_eq((uintptr_t)ret, 32);

	ck_assert_int_eq(umcg_spawn(rt, &b, NULL, yield_100, (void *)0x77), 0);
	ck_assert_int_eq(umcg_spawn(rt, &a, NULL, join_arg, b), 0);
	ret = NULL;
	ck_assert_int_eq(umcg_join(a, &ret), 0);
	ck_assert_ptr_eq(ret, (void *)0x77);
	rt_end(rt);
}
END_TEST

static struct umcg_rt *drain_rt;
static atomic_int drain_errors;
static atomic_int drained;

static void *drain_spawner(void *arg)
{
	(void)arg;
	EXPECT(umcg_yield() == 0, "umcg_yield() failed in a worker");
	for (int k = 0; k < 8; k++) {
		if (umcg_spawn(drain_rt, NULL, NULL, finish_counted, NULL))
			BUMP(&drain_errors);
		EXPECT(umcg_yield() == 0, "umcg_yield() failed in a worker");
	}
	BUMP(&finished);
	return NULL;
}

static void *drainer(void *arg)
{
	STORE(&drained, umcg_rt_drain(arg) == 0 ? 1 : -1);
	return NULL;
}

START_TEST(test_drain)
{
	struct umcg_rt *rt = rt_start(0, 0);
	struct umcg_worker *w;
	pthread_t th;
	pid_t tid;
	int i;

	/* Nothing to wait for. */
	ck_assert_int_eq(umcg_rt_drain(rt), 0);

	/* Detached workers that spawn more detached workers while we drain. */
	drain_rt = rt;
	for (i = 0; i < 8; i++)
		ck_assert_int_eq(umcg_spawn(rt, NULL, NULL, drain_spawner, NULL), 0);
	ck_assert_int_eq(umcg_rt_drain(rt), 0);
	ck_assert_int_eq(LOAD(&drain_errors), 0);
	ck_assert_int_eq(LOAD(&finished), 8 + 8 * 8);

	/* A finished joinable worker counts until it is joined. */
	ck_assert_int_eq(umcg_spawn(rt, &w, NULL, echo, NULL), 0);
	WAIT_UNTIL((tid = umcg_worker_tid(w)) > 0);
	WAIT_UNTIL(thread_gone(tid));
	ck_assert_int_eq(pthread_create(&th, NULL, drainer, rt), 0);
	h_sleep_us(50000);
	ck_assert_msg(LOAD(&drained) == 0, "drain returned before the joinable worker was joined");
	ck_assert_int_eq(umcg_join(w, NULL), 0);
	ck_assert_int_eq(pthread_join(th, NULL), 0);
	ck_assert_int_eq(LOAD(&drained), 1);
	rt_end(rt);
}
END_TEST

static atomic_ulong holder_progress;

static void *holder(void *arg)
{
	(void)arg;
	while (!LOAD(&release)) {
		BUMP(&holder_progress);
		EXPECT(umcg_yield() == 0, "umcg_yield() failed in a worker");
	}
	return NULL;
}

/* stop and destroy refuse while workers live; both work afterwards. */
START_TEST(test_stop_and_destroy)
{
	struct umcg_rt *rt = rt_start(1, 0), *idle = NULL;
	struct umcg_worker *w;
	unsigned long seen;

	ck_assert_int_eq(umcg_spawn(rt, &w, NULL, holder, NULL), 0);
	ck_assert_int_eq(umcg_spawn(rt, NULL, NULL, holder, NULL), 0);
	WAIT_UNTIL(PEEK(&holder_progress) > 0);
	ck_assert_int_eq(umcg_rt_stop(rt), -EBUSY);
	ck_assert_int_eq(umcg_rt_destroy(rt), -EBUSY);
	/* Nothing was stopped or freed: the holders still run, spawning works. */
	seen = PEEK(&holder_progress);
	WAIT_UNTIL(PEEK(&holder_progress) > seen);
	assert_rt_works(rt);

	STORE(&release, 1);
	ck_assert_int_eq(umcg_join(w, NULL), 0);
	ck_assert_int_eq(umcg_rt_drain(rt), 0);
	ck_assert_int_eq(umcg_rt_stop(rt), 0);
	ck_assert_int_eq(umcg_rt_stop(rt), 0);
	ck_assert_int_eq(umcg_spawn(rt, &w, NULL, echo, NULL), -ENODEV);
	ck_assert_int_eq(umcg_rt_destroy(rt), 0);

	/* Never started: stop and destroy are fine. */
	ck_assert_int_eq(umcg_rt_create(&idle, NULL), 0);
	ck_assert_int_eq(umcg_rt_stop(idle), 0);
	ck_assert_int_eq(umcg_rt_destroy(idle), 0);
	ck_assert_int_eq(umcg_rt_destroy(NULL), 0);
}
END_TEST

/*
 * A stopped runtime starts again: umcg_rt_stop() returns 0 "also if ...
 * already stopped" and umcg_rt_start() refuses only a started runtime, so a
 * stop/start cycle leaves a working runtime.
 */
START_TEST(test_restart_after_stop)
{
	struct umcg_rt *rt = rt_start(2, 0);
	unsigned long r, rounds = 3 * h_stress();

	for (r = 0; r < rounds; r++) {
		for (int i = 0; i < 4; i++)
			assert_rt_works(rt);
		ck_assert_int_eq(umcg_rt_stop(rt), 0);
		ck_assert_int_eq(umcg_rt_start(rt), 0);
	}
	assert_rt_works(rt);
	rt_end(rt);
}
END_TEST

static struct umcg_rt *pair_rt[2];
static atomic_ulong pair_progress[2];
static _Atomic(struct umcg_worker *) pair_parker;
static atomic_int pair_flag;
static unsigned long pair_rounds;

#define PAIR_WORKERS 4

/*
 * Half its yields, then wait for the other runtime to be half-way too,
 * then the rest: both runtimes must run at the same time to get through.
 */
static void *pair_worker(void *arg)
{
	int me = (int)(intptr_t)arg;
	unsigned long i, half = pair_rounds / 2;

	for (i = 0; i < pair_rounds; i++) {
		if (i == half)
			YIELD_UNTIL(PEEK(&pair_progress[!me]) >= PAIR_WORKERS * half);
		BUMP(&pair_progress[me]);
		EXPECT(umcg_yield() == 0, "umcg_yield() failed in a worker");
	}
	return NULL;
}

/* In runtime 1: park until a worker of runtime 0 says so. */
static void *pair_park(void *arg)
{
	(void)arg;
	STORE(&pair_parker, umcg_self());
	while (!LOAD(&pair_flag))
		EXPECT(umcg_park() == 0, "umcg_park() failed in a worker");
	return NULL;
}

/* In runtime 0: unpark the parker of runtime 1. */
static void *pair_unpark(void *arg)
{
	struct umcg_worker *p;

	(void)arg;
	YIELD_UNTIL((p = LOAD(&pair_parker)) != NULL);
	STORE(&pair_flag, 1);
	EXPECT(umcg_unpark(p) == 0, "cross-runtime unpark failed");
	return NULL;
}

START_TEST(test_two_runtimes)
{
	struct umcg_worker *w[2][PAIR_WORKERS], *park, *unpark, *hold;
	int r, i;

	pair_rounds = 200 * h_stress();
	for (r = 0; r < 2; r++)
		pair_rt[r] = rt_start(r == 0 ? 1 : 0, 0);
	for (i = 0; i < PAIR_WORKERS; i++) {
		for (r = 0; r < 2; r++)
			ck_assert_int_eq(umcg_spawn(pair_rt[r], &w[r][i], NULL, pair_worker,
						    (void *)(intptr_t)r),
					 0);
	}
	ck_assert_int_eq(umcg_spawn(pair_rt[1], &park, NULL, pair_park, NULL), 0);
	ck_assert_int_eq(umcg_spawn(pair_rt[0], &unpark, NULL, pair_unpark, NULL), 0);
	ck_assert_int_eq(umcg_spawn(pair_rt[1], &hold, NULL, holder, NULL), 0);
	for (i = 0; i < PAIR_WORKERS; i++) {
		for (r = 0; r < 2; r++)
			ck_assert_int_eq(umcg_join(w[r][i], NULL), 0);
	}
	ck_assert_int_eq(umcg_join(unpark, NULL), 0);
	ck_assert_int_eq(umcg_join(park, NULL), 0);
	ck_assert_uint_eq(PEEK(&pair_progress[0]), PAIR_WORKERS * pair_rounds);
	ck_assert_uint_eq(PEEK(&pair_progress[1]), PAIR_WORKERS * pair_rounds);

	/* Runtime 0 drains and goes away while runtime 1 still has a worker. */
	ck_assert_int_eq(umcg_rt_drain(pair_rt[0]), 0);
	ck_assert_int_eq(umcg_rt_destroy(pair_rt[0]), 0);
	assert_rt_works(pair_rt[1]);
	STORE(&release, 1);
	ck_assert_int_eq(umcg_join(hold, NULL), 0);
	rt_end(pair_rt[1]);
}
END_TEST

/* ==== yield storms ========================================================= */

#define STORM_WORKERS 16
static atomic_ulong storm_progress[STORM_WORKERS];
static struct umcg_worker_stats storm_stats[STORM_WORKERS];
static unsigned long storm_rounds;

static void *storm(void *arg)
{
	int me = (int)(intptr_t)arg;
	unsigned long r;

	for (r = 0; r < storm_rounds; r++) {
		BUMP(&storm_progress[me]);
		EXPECT(umcg_yield() == 0, "umcg_yield() failed in a worker");
	}
	EXPECT(umcg_worker_stats(umcg_self(), &storm_stats[me]) == 0, "umcg_worker_stats()");
	return NULL;
}

/* _i: 0 = one server, 1 = one per CPU. */
START_TEST(test_yield_storm)
{
	struct umcg_rt *rt = rt_start(_i == 0 ? 1 : 0, 0);
	struct umcg_worker *w[STORM_WORKERS];
	uint64_t yields = 0, switches = 0;
	struct umcg_server_stats ss;
	struct h_watchdog *wd;
	unsigned int s;
	int i;

	storm_rounds = 2000 * h_stress();
	wd = watchdog_start(_i == 0 ? "yield storm, 1 server" : "yield storm, all servers",
			    storm_progress, STORM_WORKERS, STORM_WORKERS * storm_rounds, rt);
	for (i = 0; i < STORM_WORKERS; i++)
		ck_assert_int_eq(umcg_spawn(rt, &w[i], NULL, storm, (void *)(intptr_t)i), 0);
	for (i = 0; i < STORM_WORKERS; i++)
		ck_assert_int_eq(umcg_join(w[i], NULL), 0);
	h_watchdog_stop(wd);
	ck_assert_int_eq(umcg_rt_drain(rt), 0);

	for (i = 0; i < STORM_WORKERS; i++) {
		ck_assert_uint_eq(PEEK(&storm_progress[i]), storm_rounds);
		ck_assert_uint_eq(storm_stats[i].yields, storm_rounds);
		/* Run once per yield plus once at the start; the current run
		 * may not be counted yet when the worker reads its stats. */
		ck_assert_uint_ge(storm_stats[i].switches, storm_rounds);
		ck_assert_uint_eq(storm_stats[i].preemptions, 0);
		/* On the kernel a sleep anywhere in the kernel is a block: a
		 * page fault waiting for mmap_lock while another worker's
		 * thread is being created, say. The emulation sees only the
		 * hooked calls, and a storm makes none. */
		if (umcg_backend_active() == UMCG_BACKEND_EMULATED)
			ck_assert_uint_eq(storm_stats[i].blocks, 0);
	}
	for (s = 0; s < umcg_rt_nr_servers(rt); s++) {
		ck_assert_int_eq(umcg_rt_server_stats(rt, s, &ss), 0);
		yields += ss.yields;
		switches += ss.switches;
		ck_assert_uint_eq(ss.preemptions, 0);
	}
	ck_assert_uint_ge(yields, (uint64_t)STORM_WORKERS * storm_rounds);
	ck_assert_uint_ge(switches, (uint64_t)STORM_WORKERS * (storm_rounds + 1));
	ck_assert_int_eq(umcg_rt_destroy(rt), 0);
}
END_TEST

/* ==== park / unpark ======================================================== */

static _Atomic(struct umcg_worker *) pp_peer[2];
static atomic_ulong pp_turn;
static atomic_ulong pp_progress[2];
static atomic_int pp_done;
static unsigned long pp_rounds;

/*
 * Worker @me waits for turn 2r + me, passes it on, and unparks the peer.
 * Neither returns before both are past their last unpark: the main thread
 * joins (frees) one while the other could still be unparking it.
 */
static void *pingpong(void *arg)
{
	int me = (int)(intptr_t)arg;
	struct umcg_worker *peer;
	unsigned long r, want;

	STORE(&pp_peer[me], umcg_self());
	YIELD_UNTIL((peer = LOAD(&pp_peer[!me])) != NULL);
	for (r = 0; r < pp_rounds; r++) {
		want = 2 * r + (unsigned long)me;
		while (LOAD(&pp_turn) != want)
			EXPECT(umcg_park() == 0, "umcg_park() failed in a worker");
		STORE(&pp_turn, want + 1);
		BUMP(&pp_progress[me]);
		EXPECT(umcg_unpark(peer) == 0, "umcg_unpark() failed in a worker");
	}
	atomic_fetch_add_explicit(&pp_done, 1, memory_order_acq_rel);
	YIELD_UNTIL(LOAD(&pp_done) == 2);
	return NULL;
}

/*
 * _i: 0 = one server, 1 = one per CPU (unparks cross servers); 2 and 3 the
 * same with short timeslices, so that preemptions land inside the direct
 * handoffs of unpark -> park (runtime.c, "Direct handoff"); 4 and 5 as 2
 * and 3 with SCHED_FIFO servers (skipped where not permitted), which catch
 * workers inside those handoffs at once and must wait for them.
 */
START_TEST(test_park_pingpong)
{
	static const uint64_t slice[] = { 0, 0, 20000, 50000, 20000, 50000 };
	struct umcg_rt_attr attr;
	struct umcg_rt *rt;
	struct umcg_worker *w[2];
	struct h_watchdog *wd;
	int i;

	umcg_rt_attr_init(&attr);
	attr.nr_servers = _i % 2 == 0 ? 1 : 0;
	attr.timeslice_ns = slice[_i];
	attr.server_priority = _i >= 4 ? 1 : 0;
	rt = rt_start_attr(&attr, "test_park_pingpong");
	if (!rt)
		return;

	pp_rounds = 2000 * h_stress();
	wd = watchdog_start("park ping-pong", pp_progress, 2, 2 * pp_rounds, rt);
	for (i = 0; i < 2; i++)
		ck_assert_int_eq(umcg_spawn(rt, &w[i], NULL, pingpong, (void *)(intptr_t)i), 0);
	for (i = 0; i < 2; i++)
		ck_assert_int_eq(umcg_join(w[i], NULL), 0);
	h_watchdog_stop(wd);
	ck_assert_uint_eq(PEEK(&pp_progress[0]), pp_rounds);
	ck_assert_uint_eq(PEEK(&pp_progress[1]), pp_rounds);
	ck_assert_uint_eq(LOAD(&pp_turn), 2 * pp_rounds);
	rt_end(rt);
}
END_TEST

static atomic_int permit_stage;
static atomic_int permit_given;
static int permit_rc[8];

static void *permit_user(void *arg)
{
	(void)arg;
	/* Our own unpark first: park returns at once. */
	permit_rc[0] = umcg_unpark(umcg_self());
	permit_rc[1] = umcg_park();
	STORE(&permit_stage, 1);
	/* Two unparks leave one permit; the park consumes it. */
	permit_rc[2] = umcg_unpark(umcg_self());
	permit_rc[3] = umcg_unpark(umcg_self());
	permit_rc[4] = umcg_park();
	STORE(&permit_stage, 2);
	/* A permit is kept across yields: only a park consumes it. */
	permit_rc[5] = umcg_unpark(umcg_self());
	EXPECT(umcg_yield() == 0, "umcg_yield() failed in a worker");
	EXPECT(umcg_yield() == 0, "umcg_yield() failed in a worker");
	permit_rc[6] = umcg_park();
	STORE(&permit_stage, 3);
	/* A permit from a plain thread, given before we park (and yield). */
	YIELD_UNTIL(LOAD(&permit_given));
	EXPECT(umcg_yield() == 0, "umcg_yield() failed in a worker");
	permit_rc[7] = umcg_park();
	STORE(&permit_stage, 4);
	return NULL;
}

/* wait_stage() - wait for the permit worker to reach @stage, or fail. */
static void wait_stage(int stage)
{
	uint64_t end = h_now(CLOCK_MONOTONIC) + h_liveness_ns();

	while (LOAD(&permit_stage) < stage) {
		EXPECT(h_now(CLOCK_MONOTONIC) < end,
		       "park after stage %d never returned: its permit was lost",
		       LOAD(&permit_stage));
		h_sleep_us(200);
	}
}

/*
 * Unpark before park leaves a permit that the next park consumes, however
 * the worker got there. On one server nobody else would ever unpark this
 * worker: a lost permit leaves it parked, and the wait fails.
 */
START_TEST(test_park_permit)
{
	struct umcg_rt *rt = rt_start(1, 0);
	struct umcg_worker *w;
	int i;

	ck_assert_int_eq(umcg_spawn(rt, &w, NULL, permit_user, NULL), 0);
	wait_stage(3);
	ck_assert_int_eq(umcg_unpark(w), 0);
	STORE(&permit_given, 1);
	wait_stage(4);
	ck_assert_int_eq(umcg_join(w, NULL), 0);
	for (i = 0; i < 8; i++)
		ck_assert_msg(permit_rc[i] == 0, "step %d returned %d", i, permit_rc[i]);
	rt_end(rt);
}
END_TEST

static atomic_ulong nw_seq;
static atomic_ulong nw_ack[1];
static unsigned long nw_rounds;

static void *nw_parker(void *arg)
{
	unsigned long r;

	(void)arg;
	for (r = 0; r < nw_rounds; r++) {
		while (LOAD(&nw_seq) <= r)
			EXPECT(umcg_park() == 0, "umcg_park() failed in a worker");
		STORE(&nw_ack[0], r + 1);
	}
	return NULL;
}

/* The main thread, not a worker, unparks a worker round after round. */
START_TEST(test_unpark_from_non_worker)
{
	struct umcg_rt *rt = rt_start(_i == 0 ? 1 : 0, 0);
	struct umcg_worker *w;
	struct h_watchdog *wd;
	unsigned long r;

	nw_rounds = 500 * h_stress();
	wd = watchdog_start("unpark from a plain thread", nw_ack, 1, nw_rounds, rt);
	ck_assert_int_eq(umcg_spawn(rt, &w, NULL, nw_parker, NULL), 0);
	for (r = 0; r < nw_rounds; r++) {
		STORE(&nw_seq, r + 1);
		ck_assert_int_eq(umcg_unpark(w), 0);
		/* A lost unpark stalls nw_ack: the watchdog reports it. */
		while (LOAD(&nw_ack[0]) < r + 1)
			sched_yield();
	}
	ck_assert_int_eq(umcg_join(w, NULL), 0);
	h_watchdog_stop(wd);
	rt_end(rt);
}
END_TEST

#define MP_PARKERS 16
static struct umcg_worker *mp_parkers[MP_PARKERS];
static atomic_ulong mp_gen;
static atomic_ulong mp_acks;
static atomic_ulong mp_progress[MP_PARKERS + 1];
static unsigned long mp_rounds;

static void *mp_parker(void *arg)
{
	int me = (int)(intptr_t)arg;
	unsigned long r;

	for (r = 0; r < mp_rounds; r++) {
		while (LOAD(&mp_gen) <= r)
			EXPECT(umcg_park() == 0, "umcg_park() failed in a worker");
		atomic_fetch_add_explicit(&mp_acks, 1, memory_order_acq_rel);
		BUMP(&mp_progress[me]);
	}
	return NULL;
}

/* One worker starts each round by unparking every parker, then waits for
 * all of them to acknowledge it. */
static void *mp_unparker(void *arg)
{
	unsigned long r;
	int i;

	(void)arg;
	for (r = 0; r < mp_rounds; r++) {
		STORE(&mp_gen, r + 1);
		for (i = 0; i < MP_PARKERS; i++)
			EXPECT(umcg_unpark(mp_parkers[i]) == 0, "umcg_unpark() failed");
		/* A lost unpark stalls the acks: the watchdog reports it. */
		while (LOAD(&mp_acks) < (r + 1) * MP_PARKERS)
			EXPECT(umcg_yield() == 0, "umcg_yield() failed in a worker");
		BUMP(&mp_progress[MP_PARKERS]);
	}
	return NULL;
}

START_TEST(test_many_parkers)
{
	struct umcg_rt *rt = rt_start(0, 0);
	struct umcg_worker *u;
	struct h_watchdog *wd;
	int i;

	mp_rounds = 200 * h_stress();
	wd = watchdog_start("many parkers", mp_progress, MP_PARKERS + 1,
			    (MP_PARKERS + 1) * mp_rounds, rt);
	for (i = 0; i < MP_PARKERS; i++)
		ck_assert_int_eq(
			umcg_spawn(rt, &mp_parkers[i], NULL, mp_parker, (void *)(intptr_t)i), 0);
	ck_assert_int_eq(umcg_spawn(rt, &u, NULL, mp_unparker, NULL), 0);
	ck_assert_int_eq(umcg_join(u, NULL), 0);
	for (i = 0; i < MP_PARKERS; i++)
		ck_assert_int_eq(umcg_join(mp_parkers[i], NULL), 0);
	h_watchdog_stop(wd);
	for (i = 0; i <= MP_PARKERS; i++)
		ck_assert_uint_eq(PEEK(&mp_progress[i]), mp_rounds);
	rt_end(rt);
}
END_TEST

/* ==== preemption =========================================================== */

#define HOG_PEERS 3
static atomic_int hog_running;
static atomic_int hog_gave_up;
static atomic_int peers_done;
static atomic_ulong hog_iters;
static atomic_ulong peer_progress[HOG_PEERS];
static struct umcg_worker_stats hog_stats;
static unsigned long peer_rounds;

/* Spins without yielding until the peers are done (or the liveness bound). */
static void *hog(void *arg)
{
	uint64_t start = h_now(CLOCK_MONOTONIC), limit = h_liveness_ns();
	unsigned long i = 0;

	(void)arg;
	STORE(&hog_running, 1);
	while (LOAD(&peers_done) < HOG_PEERS) {
		BUMP(&hog_iters);
		if ((++i & 0xfff) == 0 && h_now(CLOCK_MONOTONIC) - start > limit) {
			STORE(&hog_gave_up, 1);
			break;
		}
	}
	EXPECT(umcg_worker_stats(umcg_self(), &hog_stats) == 0, "umcg_worker_stats()");
	return NULL;
}

static void *hog_peer(void *arg)
{
	int me = (int)(intptr_t)arg;
	unsigned long r;

	for (r = 0; r < peer_rounds; r++) {
		BUMP(&peer_progress[me]);
		EXPECT(umcg_yield() == 0, "umcg_yield() failed in a worker");
	}
	atomic_fetch_add_explicit(&peers_done, 1, memory_order_acq_rel);
	return NULL;
}

/*
 * 1 ms timeslice, one server: the hog runs first and never yields, so the
 * peers can only run when the server preempts it. _i: 0 = SCHED_OTHER
 * servers, 1 = SCHED_FIFO ones (skipped where not permitted).
 */
START_TEST(test_preempt_hog)
{
	struct umcg_rt_attr attr;
	struct umcg_worker *h, *p[HOG_PEERS];
	struct umcg_server_stats ss;
	struct umcg_rt *rt;
	struct h_watchdog *wd;
	int i;

	umcg_rt_attr_init(&attr);
	attr.nr_servers = 1;
	attr.timeslice_ns = 1 * MS;
	attr.server_priority = _i;
	rt = rt_start_attr(&attr, "test_preempt_hog");
	if (!rt)
		return;

	peer_rounds = 200 * h_stress();
	ck_assert_int_eq(umcg_spawn(rt, &h, NULL, hog, NULL), 0);
	WAIT_UNTIL(LOAD(&hog_running));
	wd = watchdog_start("preemption", peer_progress, HOG_PEERS, HOG_PEERS * peer_rounds, rt);
	for (i = 0; i < HOG_PEERS; i++)
		ck_assert_int_eq(umcg_spawn(rt, &p[i], NULL, hog_peer, (void *)(intptr_t)i), 0);
	for (i = 0; i < HOG_PEERS; i++)
		ck_assert_int_eq(umcg_join(p[i], NULL), 0);
	ck_assert_int_eq(umcg_join(h, NULL), 0);
	h_watchdog_stop(wd);

	ck_assert_msg(!LOAD(&hog_gave_up), "the peers did not finish while the hog spun");
	for (i = 0; i < HOG_PEERS; i++)
		ck_assert_uint_eq(PEEK(&peer_progress[i]), peer_rounds);
	ck_assert_uint_gt(PEEK(&hog_iters), 0);
	ck_assert_uint_gt(hog_stats.preemptions, 0);
	ck_assert_int_eq(umcg_rt_server_stats(rt, 0, &ss), 0);
	ck_assert_uint_gt(ss.preemptions, 0);
	rt_end(rt);
}
END_TEST

/*
 * Overtime: a worker whose slice ends while nothing waits for its server
 * is not preempted; the first worker that turns up for that server must
 * still get it. Each way of turning up wakes the server differently
 * (runtime.c, "Overtime"), and one that did not would leave the newcomer
 * waiting behind the hog until the liveness bound.
 */
enum {
	OT_STAGED, /* the hog unparks a worker of its server (direct handoff) */
	OT_PUSHED, /* the same under a policy without direct handoff */
	OT_PLAIN_THREAD, /* a plain thread unparks a parked worker */
	OT_SLEEPER, /* a worker's sleep ends */
	OT_SPAWN, /* a new worker is spawned */
	OT_NR
};
#define OT_SLICE (1 * MS)
#define OT_ALONE (10 * OT_SLICE) /* the hog's solo run: 10 slices */
static int ot_way;
static atomic_int ot_hog_alone_done, ot_hog_gave_up, ot_ran, ot_announced, ot_ran_early;
static _Atomic(struct umcg_worker *) ot_parked;
static struct umcg_worker_stats ot_hog_stats, ot_before_stats, ot_alone_stats;

static void *ot_parker(void *arg)
{
	(void)arg;
	STORE(&ot_announced, 1);
	EXPECT(umcg_park() == 0, "umcg_park() failed in a worker");
	STORE(&ot_ran, 1);
	return NULL;
}

static void *ot_sleeper(void *arg)
{
	(void)arg;
	STORE(&ot_announced, 1);
	/* Long enough that the hog is in overtime when it ends (if the hog
	 * is later than that to start, the test says so: ot_ran_early), and
	 * shorter than the server's 50 ms overtime backstop, which would
	 * otherwise find the sleeper in the same moment it turns up. */
	EXPECT(umcg_sleep_for(OT_ALONE + 20 * MS) == 0, "umcg_sleep_for() failed");
	STORE(&ot_ran, 1);
	return NULL;
}

static void *ot_plain(void *arg)
{
	(void)arg;
	STORE(&ot_ran, 1);
	return NULL;
}

/* Runs alone past its slice, then waits (spinning) for the newcomer. */
static void *ot_hog(void *arg)
{
	uint64_t start, limit = h_now(CLOCK_MONOTONIC) + h_liveness_ns();

	(void)arg;
	/* Let the worker spawned before us reach its park or sleep: once it
	 * has announced itself, one yield (FIFO) lets it get there, unless a
	 * preemption came in between; a parker's park is also seen in its
	 * statistics (umcg_park() counts it before it switches). */
	while (ot_way != OT_SPAWN && !LOAD(&ot_announced))
		EXPECT(umcg_yield() == 0, "umcg_yield() failed in a worker");
	EXPECT(umcg_yield() == 0, "umcg_yield() failed in a worker");
	if (ot_way != OT_SPAWN && ot_way != OT_SLEEPER) {
		struct umcg_worker_stats ps;

		for (;;) {
			EXPECT(umcg_worker_stats(LOAD(&ot_parked), &ps) == 0,
			       "umcg_worker_stats()");
			if (ps.yields)
				break;
			EXPECT(h_now(CLOCK_MONOTONIC) < limit, "the parker never parked");
			EXPECT(umcg_yield() == 0, "umcg_yield() failed in a worker");
		}
	}
	EXPECT(umcg_worker_stats(umcg_self(), &ot_before_stats) == 0, "umcg_worker_stats()");
	start = h_now(CLOCK_MONOTONIC);
	while (h_now(CLOCK_MONOTONIC) - start < OT_ALONE)
		;
	EXPECT(umcg_worker_stats(umcg_self(), &ot_alone_stats) == 0, "umcg_worker_stats()");
	STORE(&ot_ran_early, LOAD(&ot_ran));
	if (ot_way == OT_STAGED || ot_way == OT_PUSHED)
		EXPECT(umcg_unpark(LOAD(&ot_parked)) == 0, "umcg_unpark() failed");
	STORE(&ot_hog_alone_done, 1);
	while (!LOAD(&ot_ran)) {
		if (h_now(CLOCK_MONOTONIC) > limit) {
			STORE(&ot_hog_gave_up, 1);
			break;
		}
	}
	EXPECT(umcg_worker_stats(umcg_self(), &ot_hog_stats) == 0, "umcg_worker_stats()");
	return NULL;
}

START_TEST(test_overtime)
{
	struct umcg_rt_attr attr;
	struct umcg_rt *rt = NULL;
	struct umcg_worker *h, *w = NULL;
	struct umcg_server_stats ss;

	ot_way = _i;
	umcg_rt_attr_init(&attr);
	attr.nr_servers = 1;
	attr.timeslice_ns = OT_SLICE;
	/* Strict priority has no direct handoff: the unpark pushes. */
	if (ot_way == OT_PUSHED)
		attr.policy = &umcg_policy_priority;
	rt = rt_start_attr(&attr, "test_overtime");
	if (ot_way == OT_SLEEPER) {
		ck_assert_int_eq(umcg_spawn(rt, &w, NULL, ot_sleeper, NULL), 0);
	} else if (ot_way != OT_SPAWN) {
		ck_assert_int_eq(umcg_spawn(rt, &w, NULL, ot_parker, NULL), 0);
		STORE(&ot_parked, w);
	}
	ck_assert_int_eq(umcg_spawn(rt, &h, NULL, ot_hog, NULL), 0);
	if (ot_way == OT_PLAIN_THREAD) {
		WAIT_UNTIL(LOAD(&ot_hog_alone_done));
		ck_assert_int_eq(umcg_unpark(w), 0);
	} else if (ot_way == OT_SPAWN) {
		WAIT_UNTIL(LOAD(&ot_hog_alone_done));
		ck_assert_int_eq(umcg_spawn(rt, &w, NULL, ot_plain, NULL), 0);
	}
	ck_assert_int_eq(umcg_join(h, NULL), 0);
	ck_assert_int_eq(umcg_join(w, NULL), 0);

	ck_assert_msg(!LOAD(&ot_hog_gave_up), "way %d: the newcomer waited behind the overtime hog",
		      ot_way);
	/* Alone it was never preempted (unless the sleeper woke before the
	 * solo run ended: then it was not alone); with company it was. */
	if (!LOAD(&ot_ran_early))
		ck_assert_uint_eq(ot_alone_stats.preemptions, ot_before_stats.preemptions);
	else
		fprintf(stderr, "test_overtime: way %d: the newcomer came early\n", ot_way);
	ck_assert_uint_gt(ot_hog_stats.preemptions, ot_alone_stats.preemptions);
	/* It got there by a wake-up, not by the server's backstop. */
	ck_assert_int_eq(umcg_rt_server_stats(rt, 0, &ss), 0);
	ck_assert_uint_eq(ss.missed_wakeups, 0);
	rt_end(rt);
}
END_TEST

/*
 * In a child without the right to SCHED_FIFO (RLIMIT_RTPRIO 0 and, when
 * run as root, an unprivileged user): start fails with -EPERM, leaves no
 * server running, and the runtime can be destroyed. Return: the child's
 * exit status (0 = all held; 77 = could not drop the right).
 */
static int server_priority_denied_child(void)
{
	struct rlimit rl = { 0, 0 };
	struct umcg_rt_attr attr;
	struct umcg_rt *rt = NULL;
	pid_t pid;
	int st;

	pid = fork();
	if (pid == 0) {
		if (setrlimit(RLIMIT_RTPRIO, &rl) ||
		    (geteuid() == 0 && (setgid(65534) || setuid(65534))))
			_exit(77);
		umcg_rt_attr_init(&attr);
		attr.nr_servers = 1;
		attr.server_priority = 1;
		if (umcg_rt_create(&rt, &attr))
			_exit(1);
		if (umcg_rt_start(rt) != -EPERM)
			_exit(2);
		/* Not started: a spawn is refused, destroy works. */
		if (umcg_spawn(rt, NULL, NULL, echo, NULL) != -ENODEV)
			_exit(3);
		if (umcg_rt_destroy(rt))
			_exit(4);
		_exit(0);
	}
	ck_assert_int_gt(pid, 0);
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	ck_assert(WIFEXITED(st));
	return WEXITSTATUS(st);
}

/*
 * The overtime race, many times over: a hog unparks a parked worker of its
 * own server at moments spread around its slice ends (slices of 20 us),
 * then spins until that worker has run. The server is deciding "overtime"
 * or not at about the moment of the unpark, so the Dekker pair of
 * runtime.c ("Overtime") is what makes the parker run; a lost wake-up
 * stalls the watchdog. _i: 0 = FIFO (the unpark stages a direct handoff),
 * 1 = strict priority (the unpark pushes).
 */
static atomic_ulong ots_progress[1];
static _Atomic(struct umcg_worker *) ots_parker_w;
static unsigned long ots_rounds;
static atomic_int ots_hog_gave_up;

static void *ots_parker(void *arg)
{
	unsigned long r;

	(void)arg;
	for (r = 0; r < ots_rounds; r++) {
		EXPECT(umcg_park() == 0, "umcg_park() failed in a worker");
		BUMP(&ots_progress[0]);
	}
	return NULL;
}

static void *ots_hog(void *arg)
{
	uint64_t limit = h_now(CLOCK_MONOTONIC) + h_liveness_ns() * h_stress(), until, x = 12345;
	struct umcg_worker *p = LOAD(&ots_parker_w);
	unsigned long r;

	(void)arg;
	for (r = 0; r < ots_rounds; r++) {
		/* 0-60 us: before, at and after the 20 us slice end. */
		x = x * 6364136223846793005ull + 1442695040888963407ull;
		until = h_now(CLOCK_MONOTONIC) + (x >> 33) % 60000;
		while (h_now(CLOCK_MONOTONIC) < until)
			;
		EXPECT(umcg_unpark(p) == 0, "umcg_unpark() failed");
		while (PEEK(&ots_progress[0]) <= r) {
			if (h_now(CLOCK_MONOTONIC) > limit) {
				STORE(&ots_hog_gave_up, 1);
				return NULL;
			}
		}
	}
	return NULL;
}

START_TEST(test_overtime_storm)
{
	struct umcg_rt_attr attr;
	struct umcg_rt *rt = NULL;
	struct umcg_worker *p, *h;
	struct umcg_server_stats ss;
	struct h_watchdog *wd;

	ots_rounds = 2000 * h_stress();
	umcg_rt_attr_init(&attr);
	attr.nr_servers = 1;
	attr.timeslice_ns = 20000;
	if (_i == 1)
		attr.policy = &umcg_policy_priority;
	rt = rt_start_attr(&attr, "test_overtime_storm");
	wd = watchdog_start("overtime storm", ots_progress, 1, ots_rounds, rt);
	ck_assert_int_eq(umcg_spawn(rt, &p, NULL, ots_parker, NULL), 0);
	STORE(&ots_parker_w, p);
	ck_assert_int_eq(umcg_spawn(rt, &h, NULL, ots_hog, NULL), 0);
	ck_assert_int_eq(umcg_join(h, NULL), 0);
	ck_assert_int_eq(umcg_join(p, NULL), 0);
	h_watchdog_stop(wd);
	ck_assert_msg(!LOAD(&ots_hog_gave_up), "the parker did not run behind a spinning hog");
	ck_assert_uint_eq(PEEK(&ots_progress[0]), ots_rounds);
	ck_assert_int_eq(umcg_rt_server_stats(rt, 0, &ss), 0);
	ck_assert_uint_eq(ss.missed_wakeups, 0);
	rt_end(rt);
}
END_TEST

/*
 * server_priority: 0 by default; refused cleanly where SCHED_FIFO is not
 * allowed. (SCHED_FIFO servers at work: test_preempt_hog and
 * test_park_pingpong.)
 */
START_TEST(test_server_priority)
{
	struct umcg_rt_attr attr;
	int ret;

	umcg_rt_attr_init(&attr);
	ck_assert_int_eq(attr.server_priority, 0);
	ret = server_priority_denied_child();
	ck_assert_msg(ret == 0 || ret == 77, "denied SCHED_FIFO: child check %d failed", ret);
}
END_TEST

#define COOP_SPIN_NS (100 * MS)
static _Atomic(struct umcg_worker *) coop_peer;
static atomic_ulong coop_peer_runs;
static unsigned long coop_seen_before, coop_seen_after;

/*
 * Cooperative: once the peer is queued behind us, spin for a while; the
 * peer must not run until we yield. Bounded in time, so it cannot hang.
 */
static void *coop_hog(void *arg)
{
	uint64_t end, limit = h_now(CLOCK_MONOTONIC) + h_liveness_ns();
	struct umcg_worker *p;

	(void)arg;
	STORE(&hog_running, 1);
	while (!(p = LOAD(&coop_peer)) || umcg_worker_tid(p) == 0) {
		if (h_now(CLOCK_MONOTONIC) > limit) {
			STORE(&hog_gave_up, 1);
			break;
		}
	}
	coop_seen_before = PEEK(&coop_peer_runs);
	end = h_now(CLOCK_MONOTONIC) + COOP_SPIN_NS;
	while (h_now(CLOCK_MONOTONIC) < end)
		BUMP(&hog_iters);
	coop_seen_after = PEEK(&coop_peer_runs);
	EXPECT(umcg_worker_stats(umcg_self(), &hog_stats) == 0, "umcg_worker_stats()");
	EXPECT(umcg_yield() == 0, "umcg_yield() failed in a worker");
	return NULL;
}

static void *coop_peer_fn(void *arg)
{
	(void)arg;
	BUMP(&coop_peer_runs);
	return NULL;
}

START_TEST(test_cooperative_no_preempt)
{
	struct umcg_rt *rt = rt_start(1, 0);
	struct umcg_server_stats ss;
	struct umcg_worker *h, *p;

	ck_assert_int_eq(umcg_spawn(rt, &h, NULL, coop_hog, NULL), 0);
	WAIT_UNTIL(LOAD(&hog_running));
	ck_assert_int_eq(umcg_spawn(rt, &p, NULL, coop_peer_fn, NULL), 0);
	STORE(&coop_peer, p);
	ck_assert_int_eq(umcg_join(h, NULL), 0);
	ck_assert_int_eq(umcg_join(p, NULL), 0);

	ck_assert_msg(!LOAD(&hog_gave_up), "the peer never started");
	ck_assert_uint_eq(coop_seen_before, 0);
	ck_assert_msg(coop_seen_after == 0, "the peer ran while the hog spun without yielding");
	ck_assert_uint_eq(hog_stats.preemptions, 0);
	ck_assert_uint_eq(PEEK(&coop_peer_runs), 1);
	ck_assert_int_eq(umcg_rt_server_stats(rt, 0, &ss), 0);
	ck_assert_uint_eq(ss.preemptions, 0);
	rt_end(rt);
}
END_TEST

/* ==== blocking ============================================================= */

#define SLEEP_NS (50 * MS)
/*
 * The BLOCKED span starts inside umcg_sleep_for(), after the deadline was
 * computed, so it may fall short of the requested sleep by that gap (a few
 * microseconds, more on a loaded machine).
 */
#define BLOCK_SLACK_NS (1 * MS)

static atomic_int sleeper_done;
static atomic_ulong spinner_yields;
static unsigned long yields_during_sleep;
static int sleep_rc;
static struct umcg_worker_stats sleeper_stats;

static void *sleeper(void *arg)
{
	unsigned long before;

	(void)arg;
	YIELD_UNTIL(PEEK(&spinner_yields) > 0);
	before = PEEK(&spinner_yields);
	sleep_rc = umcg_sleep_for(SLEEP_NS);
	yields_during_sleep = PEEK(&spinner_yields) - before;
	EXPECT(umcg_worker_stats(umcg_self(), &sleeper_stats) == 0, "umcg_worker_stats()");
	STORE(&sleeper_done, 1);
	return NULL;
}

static void *spinner(void *arg)
{
	(void)arg;
	while (!LOAD(&sleeper_done)) {
		BUMP(&spinner_yields);
		EXPECT(umcg_yield() == 0, "umcg_yield() failed in a worker");
	}
	return NULL;
}

/* A sleeping worker frees its server: on one server the other one runs. */
START_TEST(test_sleep_frees_server)
{
	struct umcg_rt *rt = rt_start(1, 0);
	struct umcg_server_stats ss;
	struct umcg_worker *a, *b;

	ck_assert_int_eq(umcg_spawn(rt, &a, NULL, sleeper, NULL), 0);
	ck_assert_int_eq(umcg_spawn(rt, &b, NULL, spinner, NULL), 0);
	ck_assert_int_eq(umcg_join(a, NULL), 0);
	ck_assert_int_eq(umcg_join(b, NULL), 0);
	ck_assert_int_eq(sleep_rc, 0);
	ck_assert_uint_gt(yields_during_sleep, 0);
	ck_assert_uint_gt(sleeper_stats.blocks, 0);
	ck_assert_uint_ge(sleeper_stats.blocked_ns, SLEEP_NS - BLOCK_SLACK_NS);
	ck_assert_int_eq(umcg_rt_server_stats(rt, 0, &ss), 0);
	ck_assert_uint_gt(ss.blocks, 0);
	rt_end(rt);
}
END_TEST

static const clockid_t clocks[] = { CLOCK_MONOTONIC, CLOCK_REALTIME, CLOCK_BOOTTIME, CLOCK_TAI };
static clockid_t sleep_clock;
static int clock_rc[4];
static bool now_in_clock, woke_after_deadline;

static void *clock_sleeper(void *arg)
{
	uint64_t t0, now, t1, deadline;

	(void)arg;
	t0 = h_now(sleep_clock);
	now = umcg_now();
	t1 = h_now(sleep_clock);
	now_in_clock = t0 <= now && now <= t1;
	deadline = umcg_now() + 20 * MS;
	clock_rc[0] = umcg_sleep_until(deadline);
	woke_after_deadline = umcg_now() >= deadline;
	/* Deadlines in the past and zero-length sleeps return at once. */
	clock_rc[1] = umcg_sleep_until(0);
	clock_rc[2] = umcg_sleep_until(umcg_now() - 1);
	clock_rc[3] = umcg_sleep_for(0);
	return NULL;
}

/* _i: the runtime's clock. umcg_now() and the sleeps use it. */
START_TEST(test_sleep_clocks)
{
	struct umcg_rt_attr attr;
	struct umcg_rt *rt = NULL;
	struct umcg_worker *w;
	uint64_t t0, now, t1;
	int i;

	umcg_rt_attr_init(&attr);
	attr.nr_servers = 1;
	attr.clock = clocks[_i];
	sleep_clock = clocks[_i];
	ck_assert_int_eq(umcg_rt_create(&rt, &attr), 0);
	ck_assert_int_eq(umcg_rt_start(rt), 0);
	ck_assert_int_eq(umcg_spawn(rt, &w, NULL, clock_sleeper, NULL), 0);
	ck_assert_int_eq(umcg_join(w, NULL), 0);
	ck_assert_msg(now_in_clock, "umcg_now() in a worker is not the runtime's clock");
	ck_assert_msg(woke_after_deadline, "umcg_sleep_until() returned before its deadline");
	for (i = 0; i < 4; i++)
		ck_assert_msg(clock_rc[i] == 0, "sleep %d returned %d", i, clock_rc[i]);

	/* Outside a worker, umcg_now() is CLOCK_MONOTONIC. */
	t0 = h_now(CLOCK_MONOTONIC);
	now = umcg_now();
	t1 = h_now(CLOCK_MONOTONIC);
	ck_assert(t0 <= now && now <= t1);
	rt_end(rt);
}
END_TEST

/* ==== stealing ============================================================= */

#define STEAL_WORKERS 8
static atomic_ulong steal_progress[STEAL_WORKERS];
static atomic_int ran_elsewhere;
static unsigned long steal_rounds;

/* Spin-yield; keep going until some worker has run off server 0, or the
 * liveness bound passes. */
static void *steal_spinner(void *arg)
{
	int me = (int)(intptr_t)arg;
	uint64_t end = h_now(CLOCK_MONOTONIC) + h_liveness_ns();
	struct umcg_worker_stats st;
	unsigned long r;

	for (r = 0;; r++) {
		BUMP(&steal_progress[me]);
		EXPECT(umcg_yield() == 0, "umcg_yield() failed in a worker");
		EXPECT(umcg_worker_stats(umcg_self(), &st) == 0, "umcg_worker_stats()");
		if (st.server > 0)
			STORE(&ran_elsewhere, 1);
		if (r >= steal_rounds && (LOAD(&ran_elsewhere) || h_now(CLOCK_MONOTONIC) > end))
			break;
	}
	return NULL;
}

START_TEST(test_stealing)
{
	struct umcg_rt *rt;
	struct umcg_worker *w[STEAL_WORKERS];
	struct umcg_worker_attr wa;
	struct umcg_server_stats ss;
	uint64_t steals = 0;
	struct h_watchdog *wd;
	unsigned int s;
	int i;

	if (nr_cpus() < 2) {
		printf("test_stealing: skipped: this process may run on 1 CPU only\n");
		return;
	}
	rt = rt_start(2, 0);
	steal_rounds = 500 * h_stress();
	wd = watchdog_start("stealing", steal_progress, STEAL_WORKERS, ULONG_MAX, rt);
	umcg_worker_attr_init(&wa);
	wa.server = 0;
	for (i = 0; i < STEAL_WORKERS; i++)
		ck_assert_int_eq(umcg_spawn(rt, &w[i], &wa, steal_spinner, (void *)(intptr_t)i), 0);
	for (i = 0; i < STEAL_WORKERS; i++)
		ck_assert_int_eq(umcg_join(w[i], NULL), 0);
	h_watchdog_stop(wd);
	ck_assert_int_eq(umcg_rt_drain(rt), 0);

	for (s = 0; s < umcg_rt_nr_servers(rt); s++) {
		ck_assert_int_eq(umcg_rt_server_stats(rt, s, &ss), 0);
		if (s > 0)
			steals += ss.steals;
		/* Not guaranteed (a server may find the work by its own
		 * backstop wake-up before anyone wakes it): reported only. */
		printf("test_stealing: server %u: steals %" PRIu64 " idle_wakeups %" PRIu64
		       " wakeups_sent %" PRIu64 "\n",
		       s, ss.steals, ss.idle_wakeups, ss.wakeups_sent);
	}
	ck_assert_msg(LOAD(&ran_elsewhere), "no worker spawned on server 0 ever ran elsewhere");
	ck_assert_uint_gt(steals, 0);
	ck_assert_int_eq(umcg_rt_destroy(rt), 0);
}
END_TEST

/* ==== fork() =============================================================== */

static const char *const fork_steps[] = {
	"ok",
	"umcg_spawn() on the parent's runtime did not return -ECHILD",
	"umcg_rt_drain() on the parent's runtime did not return -ECHILD",
	"umcg_rt_stop() on the parent's runtime did not return -ECHILD",
	"umcg_rt_start() on the parent's runtime did not return -ECHILD",
	"umcg_join() of a parent's worker did not return -ECHILD",
	"umcg_self() is not NULL in the child",
	"umcg_rt_destroy() of the parent's runtime did not return 0",
	"a new runtime could not be created or started",
	"a worker of the new runtime could not be spawned",
	"a worker of the new runtime could not be joined or returned the wrong value",
	"the new runtime could not be drained or destroyed",
};

/* In the child: returns the first failing step (an index in fork_steps). */
static int child_after_fork(struct umcg_rt *rt, struct umcg_worker *live)
{
	struct umcg_worker *w[8];
	struct umcg_rt *fresh = NULL;
	uintptr_t i;
	void *ret;

	if (umcg_spawn(rt, &w[0], NULL, echo, NULL) != -ECHILD)
		return 1;
	if (umcg_rt_drain(rt) != -ECHILD)
		return 2;
	if (umcg_rt_stop(rt) != -ECHILD)
		return 3;
	if (umcg_rt_start(rt) != -ECHILD)
		return 4;
	if (umcg_join(live, NULL) != -ECHILD)
		return 5;
	if (umcg_self() != NULL)
		return 6;
	if (umcg_rt_destroy(rt) != 0)
		return 7;
#ifdef UNDER_TSAN
	/* ThreadSanitizer cannot follow threads started in the child of a
	 * threaded process (it aborts with "dup thread"); stop here. */
	return 0;
#endif
	if (umcg_rt_create(&fresh, NULL) || umcg_rt_start(fresh))
		return 8;
	for (i = 0; i < 8; i++) {
		if (umcg_spawn(fresh, &w[i], NULL, few_yields, (void *)(i + 1)))
			return 9;
	}
	for (i = 0; i < 8; i++) {
		if (umcg_join(w[i], &ret) || (uintptr_t)ret != i + 1)
			return 10;
	}
	if (umcg_rt_drain(fresh) || umcg_rt_destroy(fresh))
		return 11;
	return 0;
}

static void assert_child_ok(pid_t pid, const char *const *steps, int nr_steps)
{
	int status = 0, code;

	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(WIFEXITED(status), "the child did not exit (status 0x%x)", status);
	code = WEXITSTATUS(status);
	ck_assert_msg(code == 0, "child: %s", code < nr_steps ? steps[code] : "unknown failure");
}

/* fork() in a process with a started runtime and a running worker. */
START_TEST(test_fork_child)
{
#ifdef UNDER_TSAN
	printf("test_fork_child: under ThreadSanitizer the child does not start a new runtime\n");
#endif
	struct umcg_rt *rt = rt_start(0, 0);
	struct umcg_worker *w;
	unsigned long seen;
	pid_t pid;

	ck_assert_int_eq(umcg_spawn(rt, &w, NULL, holder, NULL), 0);
	WAIT_UNTIL(PEEK(&holder_progress) > 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0)
		_exit(child_after_fork(rt, w));
	assert_child_ok(pid, fork_steps, (int)(sizeof(fork_steps) / sizeof(fork_steps[0])));

	/* The parent's runtime is untouched. */
	seen = PEEK(&holder_progress);
	WAIT_UNTIL(PEEK(&holder_progress) > seen);
	assert_rt_works(rt);
	STORE(&release, 1);
	ck_assert_int_eq(umcg_join(w, NULL), 0);
	rt_end(rt);
}
END_TEST

static const char *const forker_steps[] = {
	"ok",
	"umcg_self() is not NULL in the child of a worker",
	"umcg_yield() did not return -EPERM in the child of a worker",
	"umcg_park() did not return -EPERM in the child of a worker",
	"umcg_sleep_for() did not return -EPERM in the child of a worker",
	"umcg_exit() did not return -EPERM in the child of a worker",
	"umcg_spawn() on the parent's runtime did not return -ECHILD",
};

static struct umcg_rt *fork_rt;
static bool forker_self_kept;
static int forker_yield_rc = 1;

static void *forker(void *arg)
{
	struct umcg_worker *me = umcg_self();
	pid_t pid;
	int code;

	(void)arg;
	pid = fork();
	if (pid == 0) {
		if (umcg_self() != NULL)
			code = 1;
		else if (umcg_yield() != -EPERM)
			code = 2;
		else if (umcg_park() != -EPERM)
			code = 3;
		else if (umcg_sleep_for(1) != -EPERM)
			code = 4;
		else if (umcg_exit(NULL) != -EPERM)
			code = 5;
		else if (umcg_spawn(fork_rt, NULL, NULL, echo, NULL) != -ECHILD)
			code = 6;
		else
			code = 0;
		_exit(code);
	}
	/* The parent's worker carries on. */
	forker_self_kept = umcg_self() == me;
	forker_yield_rc = umcg_yield();
	return (void *)(intptr_t)pid;
}

START_TEST(test_fork_from_worker)
{
	struct umcg_rt *rt = rt_start(1, 0);
	struct umcg_worker *w;
	void *ret = NULL;
	pid_t pid;

	fork_rt = rt;
	ck_assert_int_eq(umcg_spawn(rt, &w, NULL, forker, NULL), 0);
	ck_assert_int_eq(umcg_join(w, &ret), 0);
	pid = (pid_t)(intptr_t)ret;
	ck_assert_int_gt(pid, 0);
	assert_child_ok(pid, forker_steps, (int)(sizeof(forker_steps) / sizeof(forker_steps[0])));
	ck_assert(forker_self_kept);
	ck_assert_int_eq(forker_yield_rc, 0);
	assert_rt_works(rt);
	rt_end(rt);
}
END_TEST

/* ==== misuse =============================================================== */

#define BOGUS_WORKER ((struct umcg_worker *)(uintptr_t)0xdead0)
#define BOGUS_RT ((struct umcg_rt *)(uintptr_t)0xdead0)

START_TEST(test_misuse_null)
{
	struct umcg_rt *rt = rt_start(1, 0);
	struct umcg_worker *w = BOGUS_WORKER, *h;
	struct umcg_server_stats ss;
	struct umcg_worker_stats ws;
	struct umcg_rt_attr attr;

	umcg_rt_attr_init(&attr);
	ck_assert_int_eq(umcg_rt_create(NULL, NULL), -EINVAL);
	ck_assert_int_eq(umcg_rt_create(NULL, &attr), -EINVAL);
	ck_assert_int_eq(umcg_rt_start(NULL), -EINVAL);
	ck_assert_int_eq(umcg_rt_drain(NULL), -EINVAL);
	ck_assert_int_eq(umcg_rt_stop(NULL), -EINVAL);
	ck_assert_int_eq(umcg_rt_destroy(NULL), 0);
	ck_assert_uint_eq(umcg_rt_nr_servers(NULL), 0);
	ck_assert_int_eq(umcg_spawn(NULL, &w, NULL, echo, NULL), -EINVAL);
	ck_assert_int_eq(umcg_spawn(rt, &w, NULL, NULL, NULL), -EINVAL);
	ck_assert_int_eq(umcg_spawn(rt, NULL, NULL, NULL, NULL), -EINVAL);
	ck_assert_ptr_eq(w, BOGUS_WORKER);
	ck_assert_int_eq(umcg_join(NULL, NULL), -EINVAL);
	ck_assert_int_eq(umcg_detach(NULL), -EINVAL);
	ck_assert_int_eq(umcg_unpark(NULL), -EINVAL);
	ck_assert_int_eq(umcg_rt_server_stats(NULL, 0, &ss), -EINVAL);
	ck_assert_int_eq(umcg_rt_server_stats(rt, 0, NULL), -EINVAL);
	ck_assert_int_eq(umcg_worker_stats(NULL, &ws), -EINVAL);

	ck_assert_int_eq(umcg_spawn(rt, &h, NULL, holder, NULL), 0);
	ck_assert_int_eq(umcg_worker_stats(h, NULL), -EINVAL);
	ck_assert_int_eq(umcg_worker_stats(h, &ws), 0);
	STORE(&release, 1);
	ck_assert_int_eq(umcg_join(h, NULL), 0);

	/* Nothing leaked into the live count: drain returns. */
	ck_assert_int_eq(umcg_rt_drain(rt), 0);
	assert_rt_works(rt);
	rt_end(rt);
}
END_TEST

START_TEST(test_misuse_rt_attr)
{
	static const clockid_t bad_clocks[] = {
		CLOCK_PROCESS_CPUTIME_ID,
		CLOCK_THREAD_CPUTIME_ID,
		CLOCK_MONOTONIC_RAW,
		CLOCK_REALTIME_COARSE,
		CLOCK_MONOTONIC_COARSE,
		-1,
		4242,
	};
	static const unsigned int bad_nr[] = { 1025, 4096, UINT_MAX };
	struct umcg_policy_ops ops;
	struct umcg_rt_attr attr;
	struct umcg_rt *rt = BOGUS_RT;
	size_t i;

	umcg_rt_attr_init(&attr);
	ck_assert_uint_eq(attr.nr_servers, 0);
	ck_assert_uint_eq(attr.timeslice_ns, 0);
	ck_assert_ptr_null(attr.policy);
	ck_assert_int_eq(attr.clock, CLOCK_MONOTONIC);
	ck_assert(attr.pin_servers);

	for (i = 0; i < sizeof(bad_nr) / sizeof(bad_nr[0]); i++) {
		attr.nr_servers = bad_nr[i];
		ck_assert_int_eq(umcg_rt_create(&rt, &attr), -EINVAL);
		ck_assert_ptr_eq(rt, BOGUS_RT);
	}
	attr.nr_servers = 0;
	for (i = 0; i < sizeof(bad_clocks) / sizeof(bad_clocks[0]); i++) {
		attr.clock = bad_clocks[i];
		ck_assert_int_eq(umcg_rt_create(&rt, &attr), -EINVAL);
		ck_assert_ptr_eq(rt, BOGUS_RT);
	}
	attr.clock = CLOCK_MONOTONIC;

	/* A policy without one of its required callbacks. */
	for (i = 0; i < 4; i++) {
		ops = umcg_policy_fifo;
		if (i == 0)
			ops.create = NULL;
		else if (i == 1)
			ops.destroy = NULL;
		else if (i == 2)
			ops.enqueue = NULL;
		else
			ops.pick_next = NULL;
		attr.policy = &ops;
		ck_assert_int_eq(umcg_rt_create(&rt, &attr), -EINVAL);
		ck_assert_ptr_eq(rt, BOGUS_RT);
	}
	attr.policy = NULL;

	/* SCHED_FIFO priorities are 1-99; 0 means none. */
	attr.server_priority = -1;
	ck_assert_int_eq(umcg_rt_create(&rt, &attr), -EINVAL);
	attr.server_priority = 100;
	ck_assert_int_eq(umcg_rt_create(&rt, &attr), -EINVAL);
	ck_assert_ptr_eq(rt, BOGUS_RT);
	attr.server_priority = 0;

	/* The limit itself is accepted. */
	attr.nr_servers = 1024;
	ck_assert_int_eq(umcg_rt_create(&rt, &attr), 0);
	ck_assert_uint_eq(umcg_rt_nr_servers(rt), 1024);
	ck_assert_int_eq(umcg_rt_destroy(rt), 0);

	/* NULL attributes: one server per CPU. */
	ck_assert_int_eq(umcg_rt_create(&rt, NULL), 0);
	ck_assert_uint_eq(umcg_rt_nr_servers(rt), nr_cpus());
	ck_assert_int_eq(umcg_rt_destroy(rt), 0);

	/* More servers than CPUs run too. */
	rt = rt_start(nr_cpus() + 1, 0);
	ck_assert_uint_eq(umcg_rt_nr_servers(rt), nr_cpus() + 1);
	assert_rt_works(rt);
	rt_end(rt);
}
END_TEST

/* The server that ran the worker's first run (accounted once it yields). */
static void *report_server(void *arg)
{
	struct umcg_worker_stats st;

	(void)arg;
	EXPECT(umcg_yield() == 0, "umcg_yield() failed in a worker");
	EXPECT(umcg_worker_stats(umcg_self(), &st) == 0, "umcg_worker_stats()");
	return (void *)(intptr_t)st.server;
}

/* spawn_on() - where a worker spawned with @server and @cpu ran first. */
static int spawn_on(struct umcg_rt *rt, int server, int cpu)
{
	struct umcg_worker_attr wa;
	struct umcg_worker *w;
	void *ret = NULL;

	umcg_worker_attr_init(&wa);
	wa.server = server;
	wa.cpu = cpu;
	ck_assert_int_eq(umcg_spawn(rt, &w, &wa, report_server, NULL), 0);
	ck_assert_int_eq(umcg_join(w, &ret), 0);
	return (int)(intptr_t)ret;
}

START_TEST(test_misuse_worker_attr)
{
	struct umcg_rt *rt = rt_start(1, 0), *two = NULL, *unpinned = NULL;
	struct umcg_worker *w = BOGUS_WORKER, *ok;
	struct umcg_policy_ops nosteal;
	struct umcg_worker_attr wa;
	struct umcg_server_stats ss;
	struct umcg_rt_attr attr;
	int c0, c1;

	ck_assert_int_eq(umcg_rt_server_stats(rt, 0, &ss), 0);
	c0 = ss.cpu;
	ck_assert_int_ge(c0, 0);

#define SPAWN_FAILS(field, value)                                                              \
	do {                                                                                   \
		umcg_worker_attr_init(&wa);                                                    \
		wa.field = (value);                                                            \
		ck_assert_msg(umcg_spawn(rt, &w, &wa, echo, NULL) == -EINVAL,                  \
			      "spawn with " #field " = " #value " did not fail with -EINVAL"); \
		ck_assert_ptr_eq(w, BOGUS_WORKER);                                             \
	} while (0)

	SPAWN_FAILS(priority, 32);
	SPAWN_FAILS(priority, -1);
	SPAWN_FAILS(priority, INT_MAX);
	SPAWN_FAILS(priority, INT_MIN);
	SPAWN_FAILS(server, 1);
	SPAWN_FAILS(server, -2);
	SPAWN_FAILS(server, INT_MAX);
	SPAWN_FAILS(cpu, -2);
	SPAWN_FAILS(cpu, c0 + 1);
	SPAWN_FAILS(cpu, CPU_SETSIZE + 5);
	SPAWN_FAILS(cpu, INT_MAX);
	SPAWN_FAILS(stack_size, 1);
	SPAWN_FAILS(stack_size, (size_t)PTHREAD_STACK_MIN - 1);
#undef SPAWN_FAILS

	/* The limits themselves are fine. */
	umcg_worker_attr_init(&wa);
	wa.priority = 0;
	ck_assert_int_eq(umcg_spawn(rt, &ok, &wa, echo, NULL), 0);
	ck_assert_int_eq(umcg_join(ok, NULL), 0);
	wa.priority = 31;
	ck_assert_int_eq(umcg_spawn(rt, &ok, &wa, echo, NULL), 0);
	ck_assert_int_eq(umcg_join(ok, NULL), 0);
	ck_assert_int_eq(spawn_on(rt, -1, c0), 0);
	ck_assert_int_eq(umcg_rt_drain(rt), 0);
	assert_rt_works(rt);
	rt_end(rt);

	/*
	 * Placement on two servers, with a policy that never steals so that a
	 * worker runs where it was placed: @cpu picks the server pinned there,
	 * and with both set, @server wins.
	 */
	umcg_rt_attr_init(&attr);
	attr.nr_servers = 2;
	nosteal = umcg_policy_fifo;
	nosteal.steal = NULL;
	nosteal.nr_queued = NULL;
	attr.policy = &nosteal;
	ck_assert_int_eq(umcg_rt_create(&two, &attr), 0);
	ck_assert_int_eq(umcg_rt_start(two), 0);
	ck_assert_int_eq(umcg_rt_server_stats(two, 1, &ss), 0);
	c1 = ss.cpu;
	ck_assert_int_eq(spawn_on(two, 1, -1), 1);
	ck_assert_int_eq(spawn_on(two, 0, -1), 0);
	ck_assert_int_eq(spawn_on(two, -1, c0), 0);
	if (c1 != c0) {
		ck_assert_int_eq(spawn_on(two, -1, c1), 1);
		ck_assert_int_eq(spawn_on(two, 0, c1), 0);
		ck_assert_int_eq(spawn_on(two, 1, c0), 1);
	}
	rt_end(two);

	/* Unpinned servers sit on no CPU: no CPU has a server. */
	umcg_rt_attr_init(&attr);
	attr.nr_servers = 1;
	attr.pin_servers = false;
	ck_assert_int_eq(umcg_rt_create(&unpinned, &attr), 0);
	ck_assert_int_eq(umcg_rt_start(unpinned), 0);
	ck_assert_int_eq(umcg_rt_server_stats(unpinned, 0, &ss), 0);
	ck_assert_int_eq(ss.cpu, -1);
	umcg_worker_attr_init(&wa);
	wa.cpu = c0;
	ck_assert_int_eq(umcg_spawn(unpinned, &w, &wa, echo, NULL), -EINVAL);
	assert_rt_works(unpinned);
	rt_end(unpinned);
}
END_TEST

START_TEST(test_misuse_order)
{
	struct umcg_rt_attr attr;
	struct umcg_rt *rt = NULL;
	struct umcg_worker *w = BOGUS_WORKER;

	umcg_rt_attr_init(&attr);
	attr.nr_servers = 1;
	ck_assert_int_eq(umcg_rt_create(&rt, &attr), 0);
	ck_assert_int_eq(umcg_spawn(rt, &w, NULL, echo, NULL), -ENODEV);
	ck_assert_ptr_eq(w, BOGUS_WORKER);
	ck_assert_int_eq(umcg_rt_drain(rt), 0);
	ck_assert_int_eq(umcg_rt_stop(rt), 0);
	ck_assert_int_eq(umcg_rt_start(rt), 0);
	ck_assert_int_eq(umcg_rt_start(rt), -EBUSY);
	assert_rt_works(rt);
	ck_assert_int_eq(umcg_rt_drain(rt), 0);
	ck_assert_int_eq(umcg_rt_stop(rt), 0);
	ck_assert_int_eq(umcg_spawn(rt, &w, NULL, echo, NULL), -ENODEV);
	ck_assert_ptr_eq(w, BOGUS_WORKER);
	ck_assert_int_eq(umcg_rt_destroy(rt), 0);
}
END_TEST

/* Calls that only a worker may make, from a thread that is none. */
static void *non_worker_calls(void *arg)
{
	int *rc = arg;

	rc[0] = umcg_yield();
	rc[1] = umcg_park();
	rc[2] = umcg_sleep_for(1);
	rc[3] = umcg_sleep_until(0);
	rc[4] = umcg_exit((void *)1);
	rc[5] = umcg_worker_set_deadline(5);
	rc[6] = umcg_self() == NULL ? -EPERM : 0;
	return NULL;
}

START_TEST(test_misuse_non_worker)
{
	struct umcg_rt *rt = rt_start(1, 0);
	int rc[2][7];
	pthread_t th;
	int i, t;

	non_worker_calls(rc[0]);
	ck_assert_int_eq(pthread_create(&th, NULL, non_worker_calls, rc[1]), 0);
	ck_assert_int_eq(pthread_join(th, NULL), 0);
	for (t = 0; t < 2; t++) {
		for (i = 0; i < 7; i++)
			ck_assert_msg(rc[t][i] == -EPERM, "%s: call %d returned %d",
				      t ? "plain thread" : "main thread", i, rc[t][i]);
	}
	assert_rt_works(rt);
	rt_end(rt);
}
END_TEST

static struct umcg_rt *misuse_rt;
static int from_worker_rc[3];

static void *misuse_in_worker(void *arg)
{
	(void)arg;
	from_worker_rc[0] = umcg_join(umcg_self(), NULL);
	from_worker_rc[1] = umcg_rt_drain(misuse_rt);
	from_worker_rc[2] = umcg_rt_stop(misuse_rt);
	return (void *)0x42;
}

START_TEST(test_misuse_from_worker)
{
	struct umcg_rt *rt = rt_start(1, 0);
	struct umcg_worker *w;
	void *ret = NULL;

	misuse_rt = rt;
	ck_assert_int_eq(umcg_spawn(rt, &w, NULL, misuse_in_worker, NULL), 0);
	ck_assert_int_eq(umcg_join(w, &ret), 0);
	ck_assert_ptr_eq(ret, (void *)0x42);
	ck_assert_int_eq(from_worker_rc[0], -EDEADLK);
	ck_assert_int_eq(from_worker_rc[1], -EDEADLK);
	ck_assert_int_eq(from_worker_rc[2], -EDEADLK);
	assert_rt_works(rt);
	rt_end(rt);
}
END_TEST

START_TEST(test_misuse_detached)
{
	struct umcg_rt *rt = rt_start(1, 0);
	struct umcg_worker *w;

	/* The holder lives until released, so its handle stays valid. */
	ck_assert_int_eq(umcg_spawn(rt, &w, NULL, holder, NULL), 0);
	ck_assert_int_eq(umcg_detach(w), 0);
	ck_assert_int_eq(umcg_detach(w), -EINVAL);
	ck_assert_int_eq(umcg_join(w, NULL), -EINVAL);
	STORE(&release, 1);
	ck_assert_int_eq(umcg_rt_drain(rt), 0);
	assert_rt_works(rt);
	rt_end(rt);
}
END_TEST

START_TEST(test_misuse_stats)
{
	struct umcg_rt *rt = rt_start(2, 0);
	struct umcg_server_stats ss, pattern;

	memset(&pattern, 0xab, sizeof(pattern));
	ss = pattern;
	ck_assert_int_eq(umcg_rt_server_stats(rt, 2, &ss), -EINVAL);
	ck_assert_int_eq(umcg_rt_server_stats(rt, UINT_MAX, &ss), -EINVAL);
	ck_assert(memcmp(&ss, &pattern, sizeof(ss)) == 0);
	ck_assert_int_eq(umcg_rt_server_stats(rt, 1, &ss), 0);
	assert_rt_works(rt);
	rt_end(rt);
}
END_TEST

/* ==== the suite ============================================================ */

static Suite *runtime_suite(void)
{
	Suite *s = suite_create("runtime");
	TCase *tc;

	tc = tcase_create("lifecycle");
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_spawn_join_values);
	tcase_add_test(tc, test_worker_attributes);
	tcase_add_test(tc, test_self_and_names);
	tcase_add_test(tc, test_detach);
	tcase_add_test(tc, test_exit);
	tcase_add_loop_test(tc, test_workers_spawn_workers, 0, 2);
	tcase_add_test(tc, test_join_from_worker_one_server);
	tcase_add_test(tc, test_drain);
	tcase_add_test(tc, test_stop_and_destroy);
	tcase_add_test(tc, test_restart_after_stop);
	tcase_add_test(tc, test_two_runtimes);
	suite_add_tcase(s, tc);

	tc = tcase_create("scale");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_many_workers);
	suite_add_tcase(s, tc);

	tc = tcase_create("yield");
	tcase_set_timeout(tc, 60);
	tcase_add_loop_test(tc, test_yield_storm, 0, 2);
	suite_add_tcase(s, tc);

	tc = tcase_create("park");
	tcase_set_timeout(tc, 60);
	tcase_add_loop_test(tc, test_park_pingpong, 0, 6);
	tcase_add_test(tc, test_park_permit);
	tcase_add_loop_test(tc, test_unpark_from_non_worker, 0, 2);
	tcase_add_test(tc, test_many_parkers);
	suite_add_tcase(s, tc);

	tc = tcase_create("preempt");
	tcase_set_timeout(tc, 60);
	tcase_add_loop_test(tc, test_preempt_hog, 0, 2);
	tcase_add_loop_test(tc, test_overtime, 0, OT_NR);
	tcase_add_loop_test(tc, test_overtime_storm, 0, 2);
	tcase_add_test(tc, test_server_priority);
	tcase_add_test(tc, test_cooperative_no_preempt);
	suite_add_tcase(s, tc);

	tc = tcase_create("block");
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_sleep_frees_server);
	tcase_add_loop_test(tc, test_sleep_clocks, 0, (int)(sizeof(clocks) / sizeof(clocks[0])));
	suite_add_tcase(s, tc);

	tc = tcase_create("steal");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_stealing);
	suite_add_tcase(s, tc);

	tc = tcase_create("fork");
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_fork_child);
	tcase_add_test(tc, test_fork_from_worker);
	suite_add_tcase(s, tc);

	tc = tcase_create("misuse");
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_misuse_null);
	tcase_add_test(tc, test_misuse_rt_attr);
	tcase_add_test(tc, test_misuse_worker_attr);
	tcase_add_test(tc, test_misuse_order);
	tcase_add_test(tc, test_misuse_non_worker);
	tcase_add_test(tc, test_misuse_from_worker);
	tcase_add_test(tc, test_misuse_detached);
	tcase_add_test(tc, test_misuse_stats);
	suite_add_tcase(s, tc);
	return s;
}

/* Fork mode always: tests share globals and fail from any thread. */
H_TEST_MAIN(runtime_suite, NULL)
