/* SPDX-License-Identifier: MIT */
/*
 * soak.c - a long mixed run of the runtime that counts lost wake-ups.
 *
 * Two servers with 20 us timeslices run three kinds of workers at once,
 * placed on both servers:
 *  - yielders call umcg_yield() in a loop and, every few rounds, unpark a
 *    parker chosen at random (on either server);
 *  - spinners compute and never call the library: only preemption takes
 *    their server away;
 *  - parkers arm a wake-up request and umcg_park() until it is served.
 * Plain threads (not workers) unpark parkers too, so unparks come both
 * from workers of the same server, of the other server, and from outside.
 *
 * The run lasts until the servers' `switches` counters add up to the
 * target: 3x10^5 by default (10^5 in a sanitizer build, set by CMake),
 * 10^8 under UMCG_STRESS=1, or UMCG_SOAK_SWITCHES.
 * It is cut into rounds of at most 10^7 switches (UMCG_SOAK_ROUND), each a
 * Check test of its own with a fresh runtime: Check cannot report a test
 * that ran longer than 2^31 us (about 36 minutes; it fails packing the
 * duration), and 10^8 switches take about an hour on a loaded machine.
 *
 * What fails the test:
 *  - a lost wake-up: a parker whose request was served (stamped and
 *    unparked) and that has not run within the liveness bound. The
 *    watchdog thread checks every parker every 10 ms;
 *  - a stall: any worker whose progress counter has not moved within the
 *    liveness bound, counted from the start for one that has not run yet
 *    (a worker whose first run comes after the end of a short run, within
 *    the bound, passes: a slow machine can do that);
 *  - a non-zero `missed_wakeups` in any server's statistics at the end.
 * The liveness bound is 5 s, times CK_TIMEOUT_MULTIPLIER: generous, never a
 * timing assertion.
 *
 * What it reports: a JSON line on stdout with the switches, the wall time,
 * switches per second, the longest wait of a parker between its unpark and
 * its run, and the longest gap between two progress ticks of any worker;
 * and a progress line on stderr every 5 s.
 *
 * The wake-up protocol. A parker stores `armed` = 1 (release) and parks
 * while `armed` is not 0. An unparker claims it with a CAS 1 -> 2, stamps
 * `t_unpark`, stores `armed` = 0 (release, pairs with the parker's acquire
 * load) and calls umcg_unpark(). The parker, once out of its loop, reads
 * `t_unpark` for the wait it measured, clears it and counts a tick. Permit
 * semantics make a stale unpark harmless: the parker re-reads `armed` and
 * parks again.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <check.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <umcg/runtime.h>

#include "test_common.h"

#define US UINT64_C(1000)
#define MS UINT64_C(1000000)
#define SEC UINT64_C(1000000000)

#define NR_SERVERS 2
#define YIELDERS_PER_SERVER 2
#define SPINNERS_PER_SERVER 1
#define PARKERS_PER_SERVER 3
#define NR_PLAIN 2
#define NR_PARKERS (NR_SERVERS * PARKERS_PER_SERVER)
#define NR_WORKERS (NR_SERVERS * (YIELDERS_PER_SERVER + SPINNERS_PER_SERVER + PARKERS_PER_SERVER))

#define PEEK(p) atomic_load_explicit((p), memory_order_relaxed)
#define POKE(p, v) atomic_store_explicit((p), (v), memory_order_relaxed)

enum kind {
	YIELDER,
	SPINNER,
	PARKER
};

struct soaker {
	enum kind kind;
	unsigned int idx;
	struct umcg_worker *w;
	/* Published by the worker itself (release), read by unparkers. */
	_Atomic(struct umcg_worker *) self;
	atomic_ulong ticks;
	/* Last tick (ns), for the watchdog; relaxed, it only needs to move. */
	atomic_uint_fast64_t last_tick;
	uint64_t max_gap; /* own only; read after join */
	uint64_t max_wake;
	/* Parkers: 0 = served, 1 = waiting, 2 = claimed by an unparker. */
	atomic_int armed;
	atomic_uint_fast64_t t_unpark;
	atomic_ulong unparks_sent;
	/* When worker_fn first ran (ns); 0 until then. */
	atomic_uint_fast64_t t_first;
	struct umcg_worker_stats at_stop; /* read by the main thread */
};

static struct soaker soakers[NR_WORKERS];
static struct soaker *parkers[NR_PARKERS];
static atomic_bool stop;
static atomic_ulong plain_unparks;
static struct umcg_rt *rt;

static uint64_t round_switches(void)
{
	const char *s = getenv("UMCG_SOAK_ROUND");
	uint64_t v = s && *s ? strtoull(s, NULL, 10) : 0;

	return v ? v : UINT64_C(10000000);
}

static uint64_t target_switches(void)
{
	const char *s = getenv("UMCG_SOAK_SWITCHES");
	const char *st = getenv("UMCG_STRESS");

	if (s && *s)
		return strtoull(s, NULL, 10);
	return st && *st && strcmp(st, "0") != 0 ? UINT64_C(100000000) : UINT64_C(300000);
}

static uint32_t xorshift(uint32_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 17;
	*x ^= *x << 5;
	return *x;
}

static void tick(struct soaker *s, uint64_t *last)
{
	uint64_t now = h_now(CLOCK_MONOTONIC);

	if (now - *last > s->max_gap)
		s->max_gap = now - *last;
	*last = now;
	POKE(&s->last_tick, now);
	atomic_fetch_add_explicit(&s->ticks, 1, memory_order_relaxed);
}

/* Serve parker @p's request if it has one; true if it was unparked. */
static bool try_unpark(struct soaker *p)
{
	int one = 1;
	struct umcg_worker *w;
	int ret;

	/* Pairs with the release publication in worker_fn(). */
	w = atomic_load_explicit(&p->self, memory_order_acquire);
	if (!w || !atomic_compare_exchange_strong(&p->armed, &one, 2))
		return false;
	atomic_store(&p->t_unpark, h_now(CLOCK_MONOTONIC));
	/* Pairs with the parker's acquire load of `armed`. */
	atomic_store_explicit(&p->armed, 0, memory_order_release);
	ret = umcg_unpark(w);
	if (ret)
		ck_abort_msg("umcg_unpark: %d", ret);
	atomic_fetch_add_explicit(&p->unparks_sent, 1, memory_order_relaxed);
	return true;
}

static void *worker_fn(void *arg)
{
	struct soaker *s = arg;
	uint32_t seed = 2463534242u + s->idx * 7919u;
	uint64_t last = h_now(CLOCK_MONOTONIC), t;
	volatile uint64_t sink = 0;
	unsigned int i;

	/* Pairs with the acquire loads in try_unpark(). */
	atomic_store_explicit(&s->self, umcg_self(), memory_order_release);
	POKE(&s->last_tick, last);
	POKE(&s->t_first, last);
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		switch (s->kind) {
		case YIELDER:
			umcg_yield();
			if ((xorshift(&seed) & 3) == 0)
				try_unpark(parkers[xorshift(&seed) % NR_PARKERS]);
			break;
		case SPINNER:
			for (i = 0; i < 2000; i++)
				sink += i * sink + 1;
			break;
		case PARKER:
			atomic_store(&s->t_unpark, 0);
			/* Pairs with the acquire CAS in try_unpark(). */
			atomic_store_explicit(&s->armed, 1, memory_order_release);
			while (atomic_load_explicit(&s->armed, memory_order_acquire) != 0 &&
			       !atomic_load_explicit(&stop, memory_order_relaxed))
				umcg_park();
			t = atomic_load(&s->t_unpark);
			if (t && h_now(CLOCK_MONOTONIC) - t > s->max_wake)
				s->max_wake = h_now(CLOCK_MONOTONIC) - t;
			break;
		}
		tick(s, &last);
	}
	return NULL;
}

static void *plain_fn(void *arg)
{
	uint32_t seed = 88675123u + (uint32_t)(uintptr_t)arg;
	struct timespec ts = { 0, 20 * 1000 };

	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		if (try_unpark(parkers[xorshift(&seed) % NR_PARKERS]))
			atomic_fetch_add_explicit(&plain_unparks, 1, memory_order_relaxed);
		nanosleep(&ts, NULL);
	}
	return NULL;
}

static const char *kind_name(enum kind k)
{
	return k == YIELDER ? "yielder" : k == SPINNER ? "spinner" : "parker";
}

static atomic_bool wd_stop;

static void *watchdog_fn(void *arg)
{
	uint64_t bound = h_liveness_ns(), now, t;
	struct timespec ts = { 0, 10 * MS };
	unsigned int i;

	(void)arg;
	while (!atomic_load(&wd_stop)) {
		nanosleep(&ts, NULL);
		now = h_now(CLOCK_MONOTONIC);
		for (i = 0; i < NR_WORKERS; i++) {
			struct soaker *s = &soakers[i];

			if (atomic_load(&stop))
				break;
			if (s->kind == PARKER) {
				t = atomic_load(&s->t_unpark);
				if (t && t < now && now - t > bound && PEEK(&s->armed) == 0)
					ck_abort_msg("lost wake-up: parker %u unparked %" PRIu64
						     " ms ago has not run (ticks %lu)",
						     i, (now - t) / MS, PEEK(&s->ticks));
			}
			t = PEEK(&s->last_tick);
			if (t && t < now && now - t > bound)
				ck_abort_msg("stall: %s %u made no progress for %" PRIu64
					     " ms (ticks %lu, armed %d)",
					     kind_name(s->kind), i, (now - t) / MS, PEEK(&s->ticks),
					     PEEK(&s->armed));
		}
	}
	return NULL;
}

static uint64_t total_switches(struct umcg_server_stats *st)
{
	uint64_t sum = 0;
	unsigned int i;

	for (i = 0; i < NR_SERVERS; i++) {
		ck_assert_int_eq(umcg_rt_server_stats(rt, i, &st[i]), 0);
		sum += st[i].switches;
	}
	return sum;
}

/*
 * A worker whose loop first ran after `stop`, later than the liveness
 * bound from the start: fail, with what the worker
 * and the servers had done by then, so that a rare failure says whether
 * the worker was ever picked and which server stopped switching.
 */
static void never_ran(const struct soaker *s, const struct umcg_server_stats *st)
{
	const struct umcg_worker_stats *ws = &s->at_stop;
	char servers[256];
	size_t used = 0;
	unsigned int i;

	for (i = 0; i < NR_SERVERS && used < sizeof(servers); i++) {
		int len = snprintf(servers + used, sizeof(servers) - used,
				   "%s server %u: %" PRIu64 " switches, %" PRIu64
				   " preemptions, %" PRIu64 " missed wake-ups, %" PRIu64
				   " unannounced blocks",
				   i ? ";" : "", i, st[i].switches, st[i].preemptions,
				   st[i].missed_wakeups, st[i].unannounced_blocks);

		used += len > 0 ? (size_t)len : 0;
	}
	ck_abort_msg(
		"%s %u first ran after the end of the run, later than the liveness bound; by then it had been run %" PRIu64
		" times, preempted %" PRIu64 ", %" PRIu64 " ms runnable, %" PRIu64
		" ms blocked, last server %d; at the end,%s",
		kind_name(s->kind), s->idx, ws->switches, ws->preemptions, ws->runnable_ns / MS,
		ws->blocked_ns / MS, ws->server, servers);
}

START_TEST(soak_mixed)
{
	struct umcg_server_stats st[NR_SERVERS];
	struct umcg_worker_attr wa;
	struct umcg_rt_attr ra;
	pthread_t plain[NR_PLAIN], wd;
	uint64_t total = target_switches(), per = round_switches(), done = (uint64_t)_i * per;
	uint64_t target = total - done < per ? total - done : per, t0, now, next_report, sw = 0,
		 max_gap = 0;
	uint64_t max_wake = 0, preempt = 0, yields = 0, steals = 0, missed = 0;
	unsigned int i, np = 0;
	double load[3] = { 0, 0, 0 }, secs;
	struct timespec ts = { 0, 50 * MS };

	umcg_rt_attr_init(&ra);
	ra.nr_servers = NR_SERVERS;
	ra.timeslice_ns = 20 * US;
	ck_assert_int_eq(umcg_rt_create(&rt, &ra), 0);
	ck_assert_int_eq(umcg_rt_start(rt), 0);

	for (i = 0; i < NR_WORKERS; i++) {
		unsigned int per = NR_WORKERS / NR_SERVERS, k = i % per;

		soakers[i].idx = i;
		soakers[i].kind = k < YIELDERS_PER_SERVER			? YIELDER :
				  k < YIELDERS_PER_SERVER + SPINNERS_PER_SERVER ? SPINNER :
										  PARKER;
		if (soakers[i].kind == PARKER)
			parkers[np++] = &soakers[i];
	}
	ck_assert_uint_eq(np, NR_PARKERS);
	t0 = h_now(CLOCK_MONOTONIC);
	for (i = 0; i < NR_WORKERS; i++) {
		/* A worker that never gets to run stalls from t0 on: the
		 * watchdog's bound covers it (it skips last_tick == 0). */
		POKE(&soakers[i].last_tick, t0);
		umcg_worker_attr_init(&wa);
		wa.server = (int)(i / (NR_WORKERS / NR_SERVERS));
		ck_assert_int_eq(umcg_spawn(rt, &soakers[i].w, &wa, worker_fn, &soakers[i]), 0);
	}
	for (i = 0; i < NR_PLAIN; i++)
		ck_assert_int_eq(pthread_create(&plain[i], NULL, plain_fn, (void *)(uintptr_t)i),
				 0);
	ck_assert_int_eq(pthread_create(&wd, NULL, watchdog_fn, NULL), 0);

	fprintf(stderr,
		"soak: round %d: target %" PRIu64 " of %" PRIu64
		" switches, %d servers, 20 us slices\n",
		_i + 1, target, total, NR_SERVERS);
	next_report = t0 + 5 * SEC;
	while ((sw = total_switches(st)) < target) {
		nanosleep(&ts, NULL);
		now = h_now(CLOCK_MONOTONIC);
		if (now >= next_report) {
			unsigned long pu = PEEK(&plain_unparks);

			preempt = 0;
			for (i = 0; i < NR_SERVERS; i++)
				preempt += st[i].preemptions;
			fprintf(stderr,
				"soak: %.0f s: %" PRIu64 " switches (%.1f%%), %.0f/s, %" PRIu64
				" preemptions, %lu plain unparks\n",
				(double)(now - t0) / SEC, sw, 100.0 * (double)sw / (double)target,
				(double)sw * SEC / (double)(now - t0), preempt, pu);
			next_report = now + 5 * SEC;
		}
	}
	atomic_store(&stop, true);
	/* What each worker had done when the run ended, for the report of
	 * one that never ran (the records go with umcg_join()). */
	for (i = 0; i < NR_WORKERS; i++)
		ck_assert_int_eq(umcg_worker_stats(soakers[i].w, &soakers[i].at_stop), 0);
	for (i = 0; i < NR_PLAIN; i++)
		pthread_join(plain[i], NULL);
	/* Every parker still parked gets one last unpark, which it sees with
	 * `stop` set. */
	for (i = 0; i < NR_PARKERS; i++)
		ck_assert_int_eq(umcg_unpark(parkers[i]->w), 0);
	for (i = 0; i < NR_WORKERS; i++)
		ck_assert_int_eq(umcg_join(soakers[i].w, NULL), 0);
	now = h_now(CLOCK_MONOTONIC);
	atomic_store(&wd_stop, true);
	pthread_join(wd, NULL);
	sw = total_switches(st);
	for (i = 0; i < NR_SERVERS; i++) {
		yields += st[i].yields;
		steals += st[i].steals;
		missed += st[i].missed_wakeups;
		if (st[i].missed_wakeups)
			fprintf(stderr, "soak: server %u: %" PRIu64 " missed wake-ups\n", i,
				st[i].missed_wakeups);
	}
	preempt = st[0].preemptions + st[1].preemptions;
	for (i = 0; i < NR_WORKERS; i++) {
		if (soakers[i].max_gap > max_gap)
			max_gap = soakers[i].max_gap;
		if (soakers[i].max_wake > max_wake)
			max_wake = soakers[i].max_wake;
		/* On a slow machine a worker's first run may come after
		 * `stop` (0 ticks): only a first run later than the liveness
		 * bound fails, as every wait in this test. */
		if (PEEK(&soakers[i].ticks) == 0 &&
		    PEEK(&soakers[i].t_first) - t0 > h_liveness_ns())
			never_ran(&soakers[i], st);
	}
	if (getloadavg(load, 3) < 0)
		load[0] = load[1] = load[2] = -1;
	secs = (double)(now - t0) / SEC;
	printf("{\"test\":\"soak\",\"round\":%d,\"rounds\":%d,\"servers\":%d,\"timeslice_us\":20,\"workers\":%d,"
	       "\"plain_threads\":%d,\"switches\":%" PRIu64 ",\"seconds\":%.1f,"
	       "\"switches_per_s\":%.0f,\"preemptions\":%" PRIu64 ",\"yields_parks\":%" PRIu64
	       ",\"steals\":%" PRIu64 ",\"plain_unparks\":%lu,\"lost_wakeups\":0,"
	       "\"missed_wakeups\":%" PRIu64 ",\"longest_wake_us\":%.1f,"
	       "\"longest_tick_gap_us\":%.1f,\"longest_stall_us\":%.1f,"
	       "\"loadavg\":[%.2f,%.2f,%.2f]}\n",
	       _i + 1, (int)((total + per - 1) / per), NR_SERVERS, NR_WORKERS, NR_PLAIN, sw, secs,
	       (double)sw / secs, preempt, yields, steals, PEEK(&plain_unparks), missed,
	       (double)max_wake / US, (double)max_gap / US,
	       (double)(max_gap > max_wake ? max_gap : max_wake) / US, load[0], load[1], load[2]);
	fflush(stdout);
	ck_assert_msg(missed == 0, "%" PRIu64 " missed wake-ups", missed);
	ck_assert_uint_ge(sw, target);
	ck_assert_int_eq(umcg_rt_drain(rt), 0);
	ck_assert_int_eq(umcg_rt_destroy(rt), 0);
}
END_TEST

static Suite *soak_suite(void)
{
	Suite *s = suite_create("soak");
	TCase *tc = tcase_create("soak");

	/* Scaled by CK_TIMEOUT_MULTIPLIER (sanitizers, UMCG_STRESS). */
	tcase_set_timeout(tc, 600);
	tcase_add_loop_test(tc, soak_mixed, 0,
			    (int)((target_switches() + round_switches() - 1) / round_switches()));
	suite_add_tcase(s, tc);
	return s;
}

H_TEST_MAIN(soak_suite, NULL)
