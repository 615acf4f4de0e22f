/* SPDX-License-Identifier: MIT */
/*
 * tests/runtime/runtime_preempt.c - the "preempt" tests of test-runtime:
 * preemption and overtime. The suite is built in test_runtime.c;
 * runtime.h holds what the groups share.
 */
#include "runtime.h"

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
 * servers, 1 = SCHED_FIFO ones (skipped where not permitted), 2 =
 * SCHED_OTHER with every thread on one CPU, so that each kick finds the
 * hog preempted by the host rather than running (the emulation's probe of
 * /proc/self/task/TID/syscall must not take that for a sleep).
 */
START_TEST(test_preempt_hog)
{
	struct umcg_rt_attr attr;
	struct umcg_worker *h, *p[HOG_PEERS];
	struct umcg_server_stats ss;
	struct umcg_rt *rt;
	struct h_watchdog *wd;
	cpu_set_t was, one;
	int i;

	if (_i == 2) {
		ck_assert_int_eq(sched_getaffinity(0, sizeof(was), &was), 0);
		CPU_ZERO(&one);
		CPU_SET(sched_getcpu(), &one);
		ck_assert_int_eq(sched_setaffinity(0, sizeof(one), &one), 0);
	}
	umcg_rt_attr_init(&attr);
	attr.nr_servers = 1;
	attr.timeslice_ns = 1 * MS;
	attr.server_priority = _i == 1;
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
	if (_i == 2)
		ck_assert_int_eq(sched_setaffinity(0, sizeof(was), &was), 0);
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
 *
 * The hog's bound is per round, not for the whole storm: every round is a
 * few switches on the server's CPU, and a second program busy on that CPU
 * (the server is pinned, and its workers follow it) makes each one wait
 * for the kernel's scheduler, so 2000 rounds may take longer than one
 * liveness bound without anything being lost. A hog that gave up on the
 * total would stop unparking and leave the parker parked for good, which
 * the watchdog then reports as a lost wake-up.
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
	uint64_t limit, until, x = 12345;
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
		limit = h_now(CLOCK_MONOTONIC) + h_liveness_ns();
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

void runtime_add_preempt(Suite *s)
{
	TCase *tc;

	tc = tcase_create("preempt");
	tcase_set_timeout(tc, 60);
	tcase_add_loop_test(tc, test_preempt_hog, 0, 3);
	tcase_add_loop_test(tc, test_overtime, 0, OT_NR);
	tcase_add_loop_test(tc, test_overtime_storm, 0, 2);
	tcase_add_test(tc, test_server_priority);
	tcase_add_test(tc, test_cooperative_no_preempt);
	suite_add_tcase(s, tc);
}
