/* SPDX-License-Identifier: MIT */
/*
 * tests/runtime/runtime_steal.c - the "steal" tests of test-runtime:
 * work stealing between servers. The suite is built in test_runtime.c;
 * runtime.h holds what the groups share.
 */
#include "runtime.h"

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

void runtime_add_steal(Suite *s)
{
	TCase *tc;

	tc = tcase_create("steal");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_stealing);
	suite_add_tcase(s, tc);
}
