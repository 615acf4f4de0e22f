/* SPDX-License-Identifier: MIT */
/*
 * tests/runtime/runtime_block.c - the "block" tests of test-runtime:
 * blocking calls free the server. The suite is built in test_runtime.c;
 * runtime.h holds what the groups share.
 */
#include "runtime.h"

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

void runtime_add_block(Suite *s)
{
	TCase *tc;

	tc = tcase_create("block");
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_sleep_frees_server);
	tcase_add_loop_test(tc, test_sleep_clocks, 0, (int)(sizeof(clocks) / sizeof(clocks[0])));
	suite_add_tcase(s, tc);
}
