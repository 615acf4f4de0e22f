/* SPDX-License-Identifier: MIT */
/*
 * tests/common/test_common.h - what every Check suite of libumcg shares:
 * its main(), the liveness bound, the stress factor, clocks and sleeps,
 * and the progress watchdog.
 *
 * main(). A suite ends with H_TEST_MAIN(suite_fn, prepare_fn). prepare_fn
 * (may be NULL) runs first and returns 0 to run the suite, 77 to skip it
 * (CTest's SKIP_RETURN_CODE) or 1 to fail it; it prints why. The suite then
 * runs in Check's fork mode (every test a fresh process: tests leave
 * threads asleep in the library, and fail from any thread), whatever
 * CK_FORK says, and reports as CK_VERBOSITY asks (CK_ENV). An argument,
 * if given, names the one test case to run (Check's CK_RUN_CASE does the
 * same). The exit status is 0 if every test passed, else 1.
 *
 * Liveness. "It did not happen" is judged after h_liveness_ns(): one bound,
 * H_LIVENESS_NS, times CK_TIMEOUT_MULTIPLIER when that is set (sanitizer
 * and VM runs set it). It is a failure bound, never a measurement: a test
 * that passes never waits for it. It stays below every test case's
 * timeout, so a hang is reported with a message rather than by Check's
 * timer.
 *
 * Atomics. The suites spell atomics one way, <stdatomic.h>: their own
 * shared variables are _Atomic objects. The words the ABI shares with the
 * kernel or the library (the fields of struct umcg_task, futex words) are
 * plain integers by definition; h_atomic() views one as the _Atomic object
 * of the same type (same size and alignment on every target the library
 * builds for), so that those accesses are spelt the same way.
 */
#ifndef UMCG_TESTS_COMMON_TEST_COMMON_H
#define UMCG_TESTS_COMMON_TEST_COMMON_H

#include <check.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "h_atomic.h"

/* UNDER_TSAN: defined (as 1) in a ThreadSanitizer build, with gcc or clang. */
#if defined(__SANITIZE_THREAD__)
#define UNDER_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define UNDER_TSAN 1
#endif
#endif

/* The liveness bound before CK_TIMEOUT_MULTIPLIER: 5 s. */
#define H_LIVENESS_NS UINT64_C(5000000000)

/* How long a watchdog lets a counter stand still: 2 s before the multiplier. */
#define H_WATCHDOG_STALL_MS 2000U

/* h_timeout_multiplier() - CK_TIMEOUT_MULTIPLIER, at least 1. */
double h_timeout_multiplier(void);

/* h_liveness_ns() - H_LIVENESS_NS times h_timeout_multiplier(). */
uint64_t h_liveness_ns(void);

/* h_stress() - 10 when UMCG_STRESS is set to a non-zero value, else 1. */
unsigned int h_stress(void);

/* h_now() - @clk read in nanoseconds (vDSO: no syscall on the usual clocks). */
uint64_t h_now(clockid_t clk);

/* h_sleep_us() - nanosleep, restarted on EINTR; never from a RUNNING worker. */
void h_sleep_us(unsigned int us);

/*
 * The threads of this process, told by their tids: a test that checks
 * that nothing it started is left compares a snapshot taken before with
 * one taken after, rather than two counts, so that a thread that is not
 * its own (a joined one whose /proc entry has not gone yet, a sanitizer's
 * helper) is never blamed on the library. The emulation's watcher
 * ("umcg-watch"), which lives as long as the process once a worker
 * registered, is left out. Linux hands out tids cyclically, so a tid of
 * the first snapshot is not given to a new thread within a test's run.
 */
#define H_MAX_TIDS 256

struct h_tids {
	int n;
	pid_t tid[H_MAX_TIDS];
	char comm[H_MAX_TIDS][16];
};

/* h_tids_snapshot() - the threads now; 0, or -1 with errno if /proc cannot
 * be read. */
int h_tids_snapshot(struct h_tids *t);

/*
 * h_tids_new() - how many threads of @now are not in @base; "tid "name""
 * of each, comma-separated, go to @names (@size bytes, truncated).
 */
int h_tids_new(const struct h_tids *base, const struct h_tids *now, char *names, size_t size);

/* ---- the watchdog ----------------------------------------------------------- */

/**
 * struct h_watchdog_spec - what a watchdog watches.
 * @what: printed with the failure.
 * @counters: the progress counters, @n of them (copied).
 * @n: their number.
 * @target: 0: every counter must move at least every @stall_ms (a worker
 *	that stops is a lost wake-up). Else the sum of the counters must move
 *	every @stall_ms until it reaches @target (workers may finish early).
 * @iteration: optional; its value is printed with the failure.
 * @stall_ms: the bound, times h_timeout_multiplier(); 0 is H_WATCHDOG_STALL_MS.
 * @dump: optional; describes the test's state into @buf for the message.
 * @arg: for @dump.
 */
struct h_watchdog_spec {
	const char *what;
	atomic_ulong *const *counters;
	size_t n;
	unsigned long target;
	const atomic_ulong *iteration;
	unsigned int stall_ms;
	void (*dump)(void *arg, char *buf, size_t len);
	void *arg;
};

/*
 * h_watchdog_run() - a thread that fails the test (ck_abort_msg(), after
 * printing every counter to stderr) when progress stalls as @spec says,
 * until h_watchdog_stop().
 */
struct h_watchdog;
struct h_watchdog *h_watchdog_run(const struct h_watchdog_spec *spec);
void h_watchdog_stop(struct h_watchdog *wd);

/* ---- main() ----------------------------------------------------------------- */

int h_test_main(int argc, char **argv, Suite *(*suite)(void), int (*prepare)(void));

#define H_TEST_MAIN(suite, prepare)                             \
	int main(int argc, char **argv)                         \
	{                                                       \
		return h_test_main(argc, argv, suite, prepare); \
	}

#endif /* UMCG_TESTS_COMMON_TEST_COMMON_H */
