/* SPDX-License-Identifier: MIT */
/*
 * tests/runtime/test_runtime.c - the runtime of <umcg/runtime.h>: worker lifecycle,
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
 *
 * Layout: one file per group of test cases (runtime_<group>.c, each with
 * its runtime_add_<group>()), what they share in runtime.h; this file
 * builds the suite from the groups.
 */
#include "runtime.h"

static Suite *runtime_suite(void)
{
	Suite *s = suite_create("runtime");

	runtime_add_lifecycle(s);
	runtime_add_yield(s);
	runtime_add_park(s);
	runtime_add_preempt(s);
	runtime_add_block(s);
	runtime_add_steal(s);
	runtime_add_fork(s);
	runtime_add_misuse(s);
	return s;
}

/* Fork mode always: tests share globals and fail from any thread. */
H_TEST_MAIN(runtime_suite, NULL)
