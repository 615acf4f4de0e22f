/* SPDX-License-Identifier: MIT */
/*
 * tests/abi/conformance.c - does the active backend implement
 * doc/umcg-abi.md §2-§8 (and §10 rule 5), as <umcg/umcg.h> documents them?
 *
 * One test or more per numbered rule, named sNrMM_* after §N rule MM,
 * the order of umcg_ctl()'s checks (s4r11_*), the runnable-list helpers on
 * lists the backend built, "a failed call changes nothing" for every entry
 * point (s*_misuse*), and the races a server loop must survive
 * (s7r07_race_*, s7r08_race_*, s8r04_race_*). Only the
 * public API is used, so the same binary checks the emulation and, on a
 * UMCG kernel, the kernel backend. Where the two are documented to differ
 * (blocking hooks, a timeout across a signal, a syscall that blocks), the
 * test says so and passes without running on the other backend.
 *
 * Concurrency protocol of the tests: the main thread of each test (a fresh
 * process: Check's fork mode) is usually the server; workers report through
 * the atomics of struct h_worker and the test's context structs, all
 * seq_cst except the plain progress counters, which are relaxed because
 * only their growth is looked at. A worker observes its sleeping server
 * and reports; the server asserts after it is woken, whose wake-up (a CAS
 * on its state by the worker, acquired by its umcg_wait()) orders the
 * reports before the asserts. Worker code sleeps in a syscall only where
 * a test means it to block (harness.h explains why) and fails only with
 * H_CHECK().
 *
 * Environment: UMCG_BACKEND picks the backend (exit 77 when the kernel one
 * is asked for and absent), UMCG_STRESS=1 runs the race loops ten times
 * longer, CK_TIMEOUT_MULTIPLIER scales every time bound, CK_RUN_CASE /
 * CK_RUN_SUITE select tests.
 *
 * The tests live in one file per group (conformance_<group>.c, each with
 * its conformance_add_<group>()); the helpers they share are in
 * conformance.h, the servers and workers in tests/common/harness.h.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "conformance.h"

static Suite *conformance_suite(void)
{
	Suite *s = suite_create("umcg-conformance");

	conformance_add_ctl(s);
	conformance_add_wait(s);
	conformance_add_kick(s);
	conformance_add_block(s);
	conformance_add_list(s);
	conformance_add_misuse(s);
	conformance_add_race(s);
	return s;
}

static int prepare(void)
{
	int backend = umcg_backend_active();

	if (backend < 0) {
		printf("umcg-conformance: no backend (%d): %s\n", backend, umcg_backend_reason());
		return backend == -ENOSYS ? 77 : 1;
	}
	h_backend = backend;
	printf("umcg-conformance: backend %s: %s%s\n", umcg_backend_name(backend),
	       umcg_backend_reason(), h_stress() > 1 ? " (UMCG_STRESS: race loops x10)" : "");
	return 0;
}

/* Tests leave threads asleep in umcg_wait(): each needs its own process. */
H_TEST_MAIN(conformance_suite, prepare)
