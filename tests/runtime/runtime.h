/* SPDX-License-Identifier: MIT */
/*
 * tests/runtime/runtime.h - what the groups of test-runtime, and
 * test-reliability, share: the waiting and checking macros, runtime
 * constructors, the watchdog, and the function each group file gives to
 * add its test cases (the rules they all follow are in test_runtime.c's
 * header comment).
 */
#ifndef UMCG_TESTS_RUNTIME_RUNTIME_H
#define UMCG_TESTS_RUNTIME_RUNTIME_H

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
static inline unsigned int nr_cpus(void)
{
	cpu_set_t set;

	if (sched_getaffinity(0, sizeof(set), &set))
		return 1;
	return (unsigned int)CPU_COUNT(&set);
}

/* thread_gone() - true once thread @tid of this process has exited. */
static inline bool thread_gone(pid_t tid)
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
static inline struct umcg_rt *rt_start_attr(const struct umcg_rt_attr *attr, const char *who)
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
static inline struct umcg_rt *rt_start(unsigned int nr, uint64_t timeslice_ns)
{
	struct umcg_rt_attr attr;

	umcg_rt_attr_init(&attr);
	attr.nr_servers = nr;
	attr.timeslice_ns = timeslice_ns;
	return rt_start_attr(&attr, "rt_start");
}

/* rt_end() - drain and destroy @rt. */
static inline void rt_end(struct umcg_rt *rt)
{
	ck_assert_int_eq(umcg_rt_drain(rt), 0);
	ck_assert_int_eq(umcg_rt_destroy(rt), 0);
}

static inline void *echo(void *arg)
{
	EXPECT(umcg_yield() == 0, "umcg_yield() failed in a worker");
	return arg;
}

static inline void *few_yields(void *arg)
{
	for (int i = 0; i < 3; i++)
		EXPECT(umcg_yield() == 0, "umcg_yield() failed in a worker");
	return arg;
}

/* assert_rt_works() - a worker of @rt runs and reports its value. */
static inline void assert_rt_works(struct umcg_rt *rt)
{
	struct umcg_worker *w = NULL;
	void *ret = NULL;

	ck_assert_int_eq(umcg_spawn(rt, &w, NULL, echo, (void *)0x1234), 0);
	ck_assert_int_eq(umcg_join(w, &ret), 0);
	ck_assert_ptr_eq(ret, (void *)0x1234);
}

/* dump_servers() - every server's counters, to stderr. */
static inline void dump_servers(const char *what, const struct umcg_rt *rt)
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

static inline void watchdog_dump(void *rt, char *buf, size_t len)
{
	dump_servers("watchdog", rt);
	snprintf(buf, len, "the servers' counters are on stderr");
}

/*
 * watchdog_start() - h_watchdog_run() on @n progress counters whose sum
 * must reach @target, dumping @rt's servers when it stalls.
 */
static inline struct h_watchdog *watchdog_start(const char *what, atomic_ulong *progress, size_t n,
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

/*
 * holder() - a worker that yields, bumping holder_progress, until the test
 * stores release (release/acquire). Defined in runtime_lifecycle.c; the
 * fork and misuse groups use it too.
 */
extern atomic_int release;
extern atomic_ulong holder_progress;
void *holder(void *arg);

void runtime_add_lifecycle(Suite *s);
void runtime_add_yield(Suite *s);
void runtime_add_park(Suite *s);
void runtime_add_preempt(Suite *s);
void runtime_add_block(Suite *s);
void runtime_add_steal(Suite *s);
void runtime_add_fork(Suite *s);
void runtime_add_misuse(Suite *s);

#endif /* UMCG_TESTS_RUNTIME_RUNTIME_H */
