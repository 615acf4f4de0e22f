/* SPDX-License-Identifier: MIT */
/*
 * tests/runtime/runtime_park.c - the "park" tests of test-runtime:
 * park and unpark. The suite is built in test_runtime.c;
 * runtime.h holds what the groups share.
 */
#include "runtime.h"

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

void runtime_add_park(Suite *s)
{
	TCase *tc;

	tc = tcase_create("park");
	tcase_set_timeout(tc, 60);
	tcase_add_loop_test(tc, test_park_pingpong, 0, 6);
	tcase_add_test(tc, test_park_permit);
	tcase_add_loop_test(tc, test_unpark_from_non_worker, 0, 2);
	tcase_add_test(tc, test_many_parkers);
	suite_add_tcase(s, tc);
}
