/* SPDX-License-Identifier: MIT */
/*
 * test_reliability.c - regression tests for the runtime defects of issue 9:
 * unparks from signal handlers, extreme timeslices, spawn racing stop,
 * drain and destroy that return while worker threads still run, a join
 * cut short by cancellation, yield and park from a signal handler, errno,
 * saturated sleeps, and what umcg_join() reports.
 *
 * Each test runs in its own process (Check's fork mode) and builds its own
 * runtimes. An assertion that fails in any thread ends that process, so
 * workers and helper threads may fail a test directly; hot loops test with
 * a plain `if` (EXPECT) because a passing ck_assert() writes to Check's
 * pipe, a syscall that on the emulation would hold the worker's server.
 * Workers wait by yielding (YIELD_UNTIL), plain threads by polling with
 * short sleeps (WAIT_UNTIL); both give up after a liveness bound (5 s,
 * times CK_TIMEOUT_MULTIPLIER) with a message rather than hanging until
 * Check's timeout. No assertion depends on how long something took.
 *
 * UMCG_STRESS=1 (any non-zero value) runs every loop ten times longer.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* pthread_setattr_default_np(), gettid() */
#endif
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <umcg/runtime.h>

#include "runtime.h"

/*
 * TSan delivers an asynchronous signal only when the thread next passes
 * through its runtime, so a handler never runs on a worker asleep in a
 * raw futex syscall (parked); and it reports a thread cancelled inside
 * its pthread_join() interceptor as "finished with ignores enabled".
 * The tests that need either skip under TSan, saying so.
 */
static bool tsan_skip(const char *test)
{
#ifdef UNDER_TSAN
	fprintf(stderr, "%s: skipped under TSan (signal or cancellation interception)\n", test);
	return true;
#else
	(void)test;
	return false;
#endif
}

/* ==== 1: umcg_unpark() from a signal handler ============================= */

/*
 * A plain thread sends SIGUSR1 to worker C, one signal at a time; C's
 * handler unparks worker T, which parks in a loop, both on one server. C
 * parks for the whole test (_i == 0: the handler runs on a parked worker),
 * or yields in a loop (_i == 1: the handler lands inside C's switches and
 * C's own stagings), or alternates unparking T itself with yields
 * (_i == 2). Every unpark must reach T; the watchdog fails the test when
 * T stops moving.
 */
static struct umcg_worker *sig_target;
static atomic_int sig_handled, sig_done;
static atomic_ulong sig_progress[1];

static void unpark_handler(int sig)
{
	int saved = errno;

	(void)sig;
	EXPECT(umcg_unpark(sig_target) == 0, "umcg_unpark() failed in a handler");
	BUMP(&sig_handled);
	errno = saved;
}

static void *sig_parker(void *arg)
{
	unsigned long n = (unsigned long)(uintptr_t)arg;

	while (PEEK(&sig_progress[0]) < n) {
		EXPECT(umcg_park() == 0, "umcg_park() failed");
		BUMP(&sig_progress[0]);
	}
	return NULL;
}

static void *sig_host(void *arg)
{
	int mode = (int)(intptr_t)arg;

	while (!LOAD(&sig_done)) {
		if (mode == 0) {
			EXPECT(umcg_park() == 0, "umcg_park() failed");
		} else {
			if (mode == 2)
				umcg_unpark(sig_target);
			EXPECT(umcg_yield() == 0, "umcg_yield() failed");
		}
	}
	return NULL;
}

START_TEST(test_unpark_from_handler)
{
	unsigned long rounds = 2000 * h_stress(), sent = 0;
	struct umcg_rt *rt = rt_start(1, 0);
	struct umcg_worker *host, *target;
	struct sigaction sa;
	struct h_watchdog *wd;
	pid_t tid;

	if (_i == 0 && tsan_skip("test_unpark_from_handler(parked host)"))
		return;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = unpark_handler;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	ck_assert_int_eq(sigaction(SIGUSR1, &sa, NULL), 0);

	ck_assert_int_eq(umcg_spawn(rt, &target, NULL, sig_parker, (void *)(uintptr_t)rounds), 0);
	sig_target = target;
	ck_assert_int_eq(umcg_spawn(rt, &host, NULL, sig_host, (void *)(intptr_t)_i), 0);
	WAIT_UNTIL(umcg_worker_tid(host) != 0);
	tid = umcg_worker_tid(host);
	wd = watchdog_start("unpark_from_handler", sig_progress, 1, rounds, rt);
	while (PEEK(&sig_progress[0]) < rounds) {
		ck_assert_int_eq(tgkill(getpid(), tid, SIGUSR1), 0);
		sent++;
		WAIT_UNTIL((unsigned long)LOAD(&sig_handled) >= sent);
	}
	h_watchdog_stop(wd);
	/* The host first: it may still unpark the target (T exits by itself). */
	STORE(&sig_done, 1);
	ck_assert_int_eq(umcg_unpark(host), 0);
	ck_assert_int_eq(umcg_join(host, NULL), 0);
	ck_assert_int_eq(umcg_join(target, NULL), 0);
	rt_end(rt);
}
END_TEST

/* ==== 10: umcg_sleep_for() saturates ====================================== */

static atomic_int sleep_started, sleep_returned;

static void *sleep_forever(void *arg)
{
	STORE(&sleep_started, 1);
	if (arg)
		umcg_sleep_until(UINT64_MAX);
	else
		umcg_sleep_for(UINT64_MAX);
	STORE(&sleep_returned, 1);
	return NULL;
}

/*
 * umcg_sleep_for(UINT64_MAX) sleeps "for ever": its deadline saturates
 * rather than wrapping to the past. A worker that returns is a failure at
 * any time; the test looks after 200 ms (a correct sleeper never returns,
 * so the length of that look is no timed assertion). The process ends
 * with the sleeper still asleep.
 */
START_TEST(test_sleep_for_saturates)
{
	struct umcg_rt *rt = rt_start(1, 0);

	ck_assert_int_eq(umcg_spawn(rt, NULL, NULL, sleep_forever, _i ? (void *)1 : NULL), 0);
	WAIT_UNTIL(LOAD(&sleep_started));
	h_sleep_us(200000);
	ck_assert_msg(!LOAD(&sleep_returned), "umcg_sleep_%s(UINT64_MAX) returned",
		      _i ? "until" : "for");
}
END_TEST

/* ==== 3: extreme timeslices ============================================== */

#define HOG_NR 2
static atomic_ulong hog_progress[HOG_NR];
static unsigned long hog_iters;

/* A CPU-bound worker: no yield, no syscall, only preemption moves it. */
static void *hog(void *arg)
{
	atomic_ulong *p = arg;

	for (unsigned long i = 0; i < hog_iters; i++)
		BUMP(p);
	return NULL;
}

static const uint64_t slices[] = {
	1,
	1000,
	UMCG_TIMESLICE_MIN_NS - 1,
	UMCG_TIMESLICE_MIN_NS,
	UMCG_TIMESLICE_MIN_NS + 1,
	UINT64_MAX / 2,
	UINT64_MAX,
};

/*
 * A timeslice below UMCG_TIMESLICE_MIN_NS is refused; from the minimum up
 * to UINT64_MAX (whose slice end would wrap) two CPU-bound workers on one
 * server both run to the end. The watchdog fails the test when neither
 * moves for its stall bound (before the fix, a 1 us or a wrapping slice
 * preempted every worker before it ran an instruction).
 */
START_TEST(test_timeslice_extremes)
{
	uint64_t slice = slices[_i];
	struct umcg_worker *w[HOG_NR];
	struct umcg_rt_attr attr;
	struct umcg_rt *rt = NULL;
	struct h_watchdog *wd;
	int i;

	umcg_rt_attr_init(&attr);
	attr.nr_servers = 1;
	attr.timeslice_ns = slice;
	if (slice < UMCG_TIMESLICE_MIN_NS) {
		ck_assert_int_eq(umcg_rt_create(&rt, &attr), -EINVAL);
		ck_assert_ptr_null(rt);
		return;
	}
	ck_assert_int_eq(umcg_rt_create(&rt, &attr), 0);
	ck_assert_int_eq(umcg_rt_start(rt), 0);
	hog_iters = 2000000 * h_stress();
	wd = watchdog_start("timeslice", hog_progress, HOG_NR, HOG_NR * hog_iters, rt);
	for (i = 0; i < HOG_NR; i++)
		ck_assert_int_eq(umcg_spawn(rt, &w[i], NULL, hog, &hog_progress[i]), 0);
	for (i = 0; i < HOG_NR; i++)
		ck_assert_int_eq(umcg_join(w[i], NULL), 0);
	h_watchdog_stop(wd);
	for (i = 0; i < HOG_NR; i++)
		ck_assert_uint_eq(PEEK(&hog_progress[i]), hog_iters);
	rt_end(rt);
}
END_TEST

/* ==== 5: umcg_spawn() racing umcg_rt_stop() ============================== */

static atomic_long race_ran;

static void *race_fn(void *arg)
{
	BUMP(&race_ran);
	return arg;
}

struct race_spawner {
	struct umcg_rt *rt;
	long ok;
};

/* Spawn and join until the runtime refuses; every spawn that returned 0
 * must have run its function and report its value. */
static void *race_spawner_main(void *arg)
{
	struct race_spawner *rs = arg;
	struct umcg_worker *w;
	void *v;
	int ret;

	for (;;) {
		ret = umcg_spawn(rs->rt, &w, NULL, race_fn, (void *)0x5a);
		if (ret == -ENODEV)
			return NULL;
		EXPECT(ret == 0, "umcg_spawn() returned %d", ret);
		v = NULL;
		ret = umcg_join(w, &v);
		EXPECT(ret == 0 && v == (void *)0x5a, "umcg_join() returned %d, value %p", ret, v);
		rs->ok++;
	}
}

START_TEST(test_spawn_races_stop)
{
	unsigned long rounds = 100 * h_stress();

	for (unsigned long r = 0; r < rounds; r++) {
		struct umcg_rt *rt = rt_start(1, 0);
		struct race_spawner rs[2] = { { rt, 0 }, { rt, 0 } };
		pthread_t th[2];
		int ret;

		atomic_store(&race_ran, 0);
		for (int i = 0; i < 2; i++)
			ck_assert_int_eq(pthread_create(&th[i], NULL, race_spawner_main, &rs[i]),
					 0);
		while ((ret = umcg_rt_stop(rt)) == -EBUSY)
			;
		ck_assert_int_eq(ret, 0);
		for (int i = 0; i < 2; i++)
			ck_assert_int_eq(pthread_join(th[i], NULL), 0);
		ck_assert_int_eq(atomic_load(&race_ran), rs[0].ok + rs[1].ok);
		ck_assert_int_eq(umcg_rt_destroy(rt), 0);
	}
}
END_TEST

static void *parks_until_unparked(void *arg)
{
	(void)arg;
	while (!atomic_load(&race_ran))
		umcg_park();
	return NULL;
}

struct failing_stopper {
	struct umcg_rt *rt;
	atomic_bool stop;
	long tries;
};

/* Stop a runtime that has a live worker, again and again: always -EBUSY. */
static void *failing_stopper_main(void *arg)
{
	struct failing_stopper *fs = arg;

	while (!atomic_load(&fs->stop)) {
		int ret = umcg_rt_stop(fs->rt);

		EXPECT(ret == -EBUSY, "umcg_rt_stop() with a live worker returned %d", ret);
		fs->tries++;
	}
	return NULL;
}

/* A stop that fails with -EBUSY changes nothing: a spawn beside it never
 * gets -ENODEV (it used to, in the moment the stop looked at `live`). */
START_TEST(test_spawn_beside_failing_stop)
{
	struct umcg_rt *rt = rt_start(1, 0);
	struct failing_stopper fs = { .rt = rt };
	unsigned long spawns = 2000 * h_stress();
	struct umcg_worker *holder, *w;
	pthread_t th;
	void *v;
	int ret;

	atomic_store(&race_ran, 0);
	ck_assert_int_eq(umcg_spawn(rt, &holder, NULL, parks_until_unparked, NULL), 0);
	ck_assert_int_eq(pthread_create(&th, NULL, failing_stopper_main, &fs), 0);
	for (unsigned long i = 0; i < spawns; i++) {
		ret = umcg_spawn(rt, &w, NULL, race_fn, (void *)0x5a);
		ck_assert_msg(ret == 0, "spawn %lu beside a failing stop returned %d", i, ret);
		v = NULL;
		ck_assert_int_eq(umcg_join(w, &v), 0);
		ck_assert_ptr_eq(v, (void *)0x5a);
	}
	atomic_store(&fs.stop, true);
	ck_assert_int_eq(pthread_join(th, NULL), 0);
	ck_assert_int_gt(fs.tries, 0);
	atomic_store(&race_ran, -1);
	ck_assert_int_eq(umcg_unpark(holder), 0);
	ck_assert_int_eq(umcg_join(holder, NULL), 0);
	ck_assert_int_eq(umcg_rt_destroy(rt), 0);
}
END_TEST

/* ==== 7 and 11: what umcg_join() reports; a join cut short =============== */

static void *exits_by_pthread_exit(void *arg)
{
	pthread_exit(arg);
}

static void *cancels_itself(void *arg)
{
	(void)arg;
	pthread_cancel(pthread_self());
	while (umcg_yield() == 0)
		pthread_testcancel();
	return NULL;
}

/* pthread_exit(v) in a worker reports v; a cancelled worker reports
 * PTHREAD_CANCELED; a SIZE_MAX stack is refused. */
START_TEST(test_join_reports)
{
	struct umcg_rt *rt = rt_start(1, 0);
	struct umcg_worker_attr wa;
	struct umcg_worker *w;
	void *v = NULL;

	ck_assert_int_eq(umcg_spawn(rt, &w, NULL, exits_by_pthread_exit, (void *)0x77), 0);
	ck_assert_int_eq(umcg_join(w, &v), 0);
	ck_assert_ptr_eq(v, (void *)0x77);
	ck_assert_int_eq(umcg_spawn(rt, &w, NULL, cancels_itself, NULL), 0);
	ck_assert_int_eq(umcg_join(w, &v), 0);
	ck_assert_ptr_eq(v, PTHREAD_CANCELED);
	umcg_worker_attr_init(&wa);
	wa.stack_size = SIZE_MAX;
	w = NULL;
	ck_assert_int_eq(umcg_spawn(rt, &w, &wa, exits_by_pthread_exit, NULL), -EINVAL);
	ck_assert_ptr_null(w);
	rt_end(rt);
}
END_TEST

static atomic_int cj_release, cj_joining;
static pthread_t cj_thread;

static void *cj_target(void *arg)
{
	(void)arg;
	while (!LOAD(&cj_release))
		umcg_yield();
	return NULL;
}

static void *cj_joiner(void *arg)
{
	cj_thread = pthread_self();
	STORE(&cj_joining, 1);
	umcg_join(arg, NULL);
	ck_abort_msg("umcg_join() returned in a cancelled worker");
	return NULL;
}

/*
 * A worker cancelled while it waits in umcg_join(): the join is given up
 * (the target detached), the joiner reports PTHREAD_CANCELED, and drain
 * and destroy then work. The cancel comes while the target still runs;
 * it is released only afterwards.
 */
START_TEST(test_join_cancelled)
{
	struct umcg_rt *rt = rt_start(1, 0);
	struct umcg_worker *t, *j;
	void *v = NULL;

	if (tsan_skip("test_join_cancelled"))
		return;
	ck_assert_int_eq(umcg_spawn(rt, &t, NULL, cj_target, NULL), 0);
	ck_assert_int_eq(umcg_spawn(rt, &j, NULL, cj_joiner, t), 0);
	WAIT_UNTIL(LOAD(&cj_joining));
	h_sleep_us(20000);
	ck_assert_int_eq(pthread_cancel(cj_thread), 0);
	ck_assert_int_eq(umcg_join(j, &v), 0);
	ck_assert_ptr_eq(v, PTHREAD_CANCELED);
	STORE(&cj_release, 1);
	rt_end(rt);
}
END_TEST

/* ==== 8: umcg_yield() and umcg_park() from a signal handler ============== */

static atomic_int sw_rc_yield = 1, sw_rc_park = 1, sw_parked, sw_done;

static void switch_handler(int sig)
{
	int saved = errno;

	(void)sig;
	STORE(&sw_rc_yield, umcg_yield());
	STORE(&sw_rc_park, umcg_park());
	errno = saved;
}

static void *sw_parker(void *arg)
{
	(void)arg;
	STORE(&sw_parked, 1);
	while (!LOAD(&sw_done))
		EXPECT(umcg_park() == 0, "umcg_park() failed");
	return NULL;
}

/*
 * A handler on a parked worker calls umcg_yield() and umcg_park(): both
 * refuse with -EDEADLK, and the server goes on running other workers.
 */
START_TEST(test_switch_from_handler)
{
	struct umcg_rt *rt = rt_start(1, 0);
	struct umcg_worker *p, *w;
	struct sigaction sa;
	void *v = NULL;

	if (tsan_skip("test_switch_from_handler"))
		return;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = switch_handler;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	ck_assert_int_eq(sigaction(SIGUSR2, &sa, NULL), 0);
	ck_assert_int_eq(umcg_spawn(rt, &p, NULL, sw_parker, NULL), 0);
	WAIT_UNTIL(LOAD(&sw_parked) && umcg_worker_tid(p) != 0);
	/* Parked for good: its yield to the server is long done. */
	h_sleep_us(20000);
	ck_assert_int_eq(tgkill(getpid(), umcg_worker_tid(p), SIGUSR2), 0);
	WAIT_UNTIL(LOAD(&sw_rc_park) != 1);
	ck_assert_int_eq(LOAD(&sw_rc_yield), -EDEADLK);
	ck_assert_int_eq(LOAD(&sw_rc_park), -EDEADLK);
	ck_assert_int_eq(umcg_spawn(rt, &w, NULL, echo, (void *)0x33), 0);
	ck_assert_int_eq(umcg_join(w, &v), 0);
	ck_assert_ptr_eq(v, (void *)0x33);
	STORE(&sw_done, 1);
	ck_assert_int_eq(umcg_unpark(p), 0);
	ck_assert_int_eq(umcg_join(p, NULL), 0);
	rt_end(rt);
}
END_TEST

/* ==== 9: errno is never touched ========================================== */

/*
 * A thread that cannot be created (a stack too large to map, for a worker
 * and, through the default attributes, for a server) gives -EAGAIN or
 * -ENOMEM and leaves errno as it was.
 */
START_TEST(test_errno_untouched)
{
	const size_t huge = (size_t)1 << 46; /* 64 TiB: more than any machine maps */
	struct umcg_rt *rt = rt_start(1, 0), *rt2 = NULL;
	struct umcg_worker_attr wa;
	struct umcg_worker *w = NULL;
	pthread_attr_t pa, old;
	int ret;

	umcg_worker_attr_init(&wa);
	wa.stack_size = huge;
	errno = 4242;
	ret = umcg_spawn(rt, &w, &wa, echo, NULL);
	ck_assert_int_eq(errno, 4242);
	ck_assert_msg(ret == -EAGAIN || ret == -ENOMEM, "umcg_spawn() returned %d", ret);
	ck_assert_ptr_null(w);
	rt_end(rt);

	ck_assert_int_eq(pthread_getattr_default_np(&old), 0);
	ck_assert_int_eq(pthread_attr_init(&pa), 0);
	ck_assert_int_eq(pthread_attr_setstacksize(&pa, huge), 0);
	ck_assert_int_eq(pthread_setattr_default_np(&pa), 0);
	ck_assert_int_eq(umcg_rt_create(&rt2, NULL), 0);
	errno = 4242;
	ret = umcg_rt_start(rt2);
	ck_assert_int_eq(errno, 4242);
	ck_assert_int_eq(ret, -EAGAIN);
	ck_assert_int_eq(pthread_setattr_default_np(&old), 0);
	ck_assert_int_eq(umcg_rt_start(rt2), 0);
	rt_end(rt2);
}
END_TEST

/* ==== 6: drain and destroy wait for every worker thread ================== */

static pthread_key_t tsd_key;
static atomic_int tsd_dtors;

/* A thread-local destructor: user code that runs after the worker's
 * function, as its thread ends. It takes a while, on purpose. */
static void tsd_dtor(void *p)
{
	(void)p;
	h_sleep_us(50000);
	BUMP(&tsd_dtors);
}

static void *tsd_worker(void *arg)
{
	pthread_setspecific(tsd_key, arg);
	return NULL;
}

static void *idle_thread(void *arg)
{
	return arg;
}

/* How many threads not in @base are there now (test_common.h). */
static int tasks_since(const struct h_tids *base)
{
	struct h_tids now;
	char names[256];

	ck_assert_int_eq(h_tids_snapshot(&now), 0);
	return h_tids_new(base, &now, names, sizeof(names));
}

/*
 * Detached workers (spawned detached, _i == 0, or detached while they
 * run, _i == 1) whose thread-local destructors are still running: drain
 * returns only after all of them, and after destroy no thread of the
 * runtime is left.
 */
START_TEST(test_drain_waits_for_threads)
{
	const int n = 4;
	struct umcg_worker *w;
	struct umcg_rt *rt;
	struct h_tids before;
	pthread_t th;
	int i;

	ck_assert_int_eq(pthread_key_create(&tsd_key, tsd_dtor), 0);
	/* A first thread makes a sanitizer start its own helper thread. */
	ck_assert_int_eq(pthread_create(&th, NULL, idle_thread, NULL), 0);
	ck_assert_int_eq(pthread_join(th, NULL), 0);
	ck_assert_int_eq(h_tids_snapshot(&before), 0);
	rt = rt_start(2, 0);
	for (i = 0; i < n; i++) {
		if (_i == 0) {
			ck_assert_int_eq(umcg_spawn(rt, NULL, NULL, tsd_worker, (void *)1), 0);
		} else {
			ck_assert_int_eq(umcg_spawn(rt, &w, NULL, tsd_worker, (void *)1), 0);
			ck_assert_int_eq(umcg_detach(w), 0);
		}
	}
	ck_assert_int_eq(umcg_rt_drain(rt), 0);
	ck_assert_int_eq(LOAD(&tsd_dtors), n);
	ck_assert_int_eq(umcg_rt_destroy(rt), 0);
	/*
	 * pthread_join() returns once the kernel cleared the thread's tid,
	 * shortly before /proc drops its entry: by then it ran its last user
	 * code. A thread really left behind never goes, and fails here.
	 */
	WAIT_UNTIL(tasks_since(&before) == 0);
}
END_TEST

/* ==== the suite ============================================================ */

static Suite *reliability_suite(void)
{
	Suite *s = suite_create("reliability");
	TCase *tc;

	tc = tcase_create("signal");
	tcase_set_timeout(tc, 60);
	tcase_add_loop_test(tc, test_unpark_from_handler, 0, 3);
	suite_add_tcase(s, tc);

	tc = tcase_create("lifecycle");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_spawn_races_stop);
	tcase_add_test(tc, test_spawn_beside_failing_stop);
	tcase_add_test(tc, test_join_reports);
	tcase_add_test(tc, test_join_cancelled);
	tcase_add_test(tc, test_switch_from_handler);
	tcase_add_test(tc, test_errno_untouched);
	tcase_add_loop_test(tc, test_drain_waits_for_threads, 0, 2);
	suite_add_tcase(s, tc);

	tc = tcase_create("sleep");
	tcase_set_timeout(tc, 30);
	tcase_add_loop_test(tc, test_sleep_for_saturates, 0, 2);
	suite_add_tcase(s, tc);

	tc = tcase_create("timeslice");
	tcase_set_timeout(tc, 60);
	tcase_add_loop_test(tc, test_timeslice_extremes, 0,
			    (int)(sizeof(slices) / sizeof(slices[0])));
	suite_add_tcase(s, tc);
	return s;
}

H_TEST_MAIN(reliability_suite, NULL)
