/* SPDX-License-Identifier: MIT */
/*
 * tests/runtime/runtime_yield.c - the "yield" tests of test-runtime:
 * yield storms. The suite is built in test_runtime.c;
 * runtime.h holds what the groups share.
 */
#include "runtime.h"

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

/*
 * _i bit 0: 0 = one server, 1 = one per CPU. Bit 1: detection of
 * unannounced blocking off (0) or at its default bound (2).
 */
START_TEST(test_yield_storm)
{
	uint64_t detect_was = umcg_detect_get();
	bool detect = (_i & 2) != 0;
	struct umcg_worker *w[STORM_WORKERS];
	uint64_t yields = 0, switches = 0;
	struct umcg_server_stats ss;
	struct h_watchdog *wd;
	unsigned int s;
	int i;

	struct umcg_rt *rt;

	ck_assert_int_eq(umcg_detect_set(detect ? UMCG_DETECT_DEFAULT_NS : 0), 0);
	rt = rt_start((_i & 1) == 0 ? 1 : 0, 0);
	storm_rounds = 2000 * h_stress();
	wd = watchdog_start((_i & 1) == 0 ? "yield storm, 1 server" : "yield storm, all servers",
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
		 * thread is being created, say. So is it for the emulation
		 * with detection on: under TSan a worker can sleep on the
		 * sanitizer's own lock. With detection off the emulation sees
		 * only the hooked calls, and a storm makes none. */
		if (umcg_backend_active() == UMCG_BACKEND_EMULATED && !detect)
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
	ck_assert_int_eq(umcg_detect_set(detect_was), 0);
}
END_TEST

void runtime_add_yield(Suite *s)
{
	TCase *tc;

	tc = tcase_create("yield");
	tcase_set_timeout(tc, 60);
	tcase_add_loop_test(tc, test_yield_storm, 0, 4);
	suite_add_tcase(s, tc);
}
