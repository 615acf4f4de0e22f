/* SPDX-License-Identifier: MIT */
/*
 * fault.c - every allocation, thread, mapping, timer and io_uring that
 * libumcg.so asks for is made to fail, one at a time (interpose.c).
 *
 * Each test is a scenario of public calls. It first runs the scenario once
 * in a child process that only counts the calls the library makes (N),
 * then once more in a fresh child for each k = 1..N with the k-th call
 * failing. In every run:
 *  - each public call returns 0 or a negative errno from the list it
 *    allows (-ENOMEM, -EAGAIN), and leaves errno as it was;
 *  - a call that failed is retried and must then succeed (only one call
 *    fails per run): the failure left nothing half done behind it;
 *  - a runtime whose start failed has no server thread left (the tids of
 *    /proc/self/task are compared with those before the scenario);
 *  - a worker that umcg_spawn() reported as started has run its function;
 *  - after the scenario's last call no thread is left that was not there
 *    before it, and, under ASan, LeakSanitizer finds no leak.
 * A crash, a hang (an alarm after the liveness bound) or a failed check
 * fails the test with the scenario, k and the function that failed.
 *
 * The emulation's tid registry and record free list are process-wide and
 * never shrink, and the first record a thread gets may be one a thread
 * before it left behind, so N can differ by a call or two between runs:
 * a run in which call k is never made counts as passed. Each child starts
 * from the state of this test's process, which never starts a runtime
 * itself.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <check.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <umcg/runtime.h>

#include "interpose.h"
#include "test_common.h"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/lsan_interface.h>
#define HAVE_LSAN 1
#endif

#define SENTINEL_ERRNO 4242

/* ---- checks inside a child ------------------------------------------------ */

static const char *scenario_name;
static long run_k;

#define CHILD_FAIL(...)                                                          \
	do {                                                                     \
		fprintf(stderr, "fault: %s, k=%ld (%s): ", scenario_name, run_k, \
			run_k ? fault_what(run_k) : "none");                     \
		fprintf(stderr, __VA_ARGS__);                                    \
		fprintf(stderr, " [%s:%d]\n", __FILE__, __LINE__);               \
		_exit(1);                                                        \
	} while (0)

/*
 * CALL(ret, expr) - evaluate the public call @expr into @ret with errno set
 * to a sentinel, and check that errno is untouched and @ret is 0 or an
 * allowed error.
 */
#define CALL(ret, expr)                                                                  \
	do {                                                                             \
		errno = SENTINEL_ERRNO;                                                  \
		(ret) = (expr);                                                          \
		if (errno != SENTINEL_ERRNO)                                             \
			CHILD_FAIL("%s changed errno to %d (returned %d)", #expr, errno, \
				   (int)(ret));                                          \
		if ((ret) != 0 && (ret) != -ENOMEM && (ret) != -EAGAIN)                  \
			CHILD_FAIL("%s returned %d", #expr, (int)(ret));                 \
	} while (0)

/* MUST(expr) - CALL() that must succeed (a retry, or a call that allocates
 * nothing). */
#define MUST(expr)                                                                            \
	do {                                                                                  \
		int must_ret_;                                                                \
		CALL(must_ret_, expr);                                                        \
		if (must_ret_ != 0)                                                           \
			CHILD_FAIL("%s returned %d where it must succeed", #expr, must_ret_); \
	} while (0)

/* The threads a scenario leaves behind are told by their tids
 * (test_common.h, h_tids_snapshot()). */
static void snapshot(struct h_tids *t)
{
	if (h_tids_snapshot(t))
		CHILD_FAIL("cannot read /proc/self/task: %s", strerror(errno));
}

/* Joined threads leave /proc/self/task shortly after they exit: wait for
 * every thread not in @base to be gone, within a generous bound. */
static void expect_threads(const struct h_tids *base, const char *when)
{
	struct timespec ts = { 0, 1000000 };
	struct h_tids now;
	char names[512];
	int i, n = 0;

	for (i = 0; i < (int)(5000 * h_timeout_multiplier()); i++) {
		snapshot(&now);
		n = h_tids_new(base, &now, names, sizeof(names));
		if (n == 0)
			return;
		nanosleep(&ts, NULL);
	}
	CHILD_FAIL("%s: %d thread(s) the scenario started are still there: %s", when, n, names);
}

/* ---- scenarios -------------------------------------------------------------- */

static atomic_int ran;

static void *worker_fn(void *arg)
{
	atomic_fetch_add(&ran, 1);
	return arg;
}

/*
 * Spawn one worker with @attr (or none), join it, and check that it ran.
 * A spawn that fails is retried once.
 */
static void spawn_join(struct umcg_rt *rt, const struct umcg_worker_attr *attr)
{
	struct umcg_worker *w = NULL;
	void *rv = NULL;
	long before;
	int ret;

	atomic_store(&ran, 0);
	before = fault_failed();
	CALL(ret, umcg_spawn(rt, &w, attr, worker_fn, &ran));
	if (ret)
		MUST(umcg_spawn(rt, &w, attr, worker_fn, &ran));
	ret = umcg_join(w, &rv);
	if (ret == -ENOMEM && atomic_load(&ran) == 0 && fault_failed() != before &&
	    strcmp(fault_what(fault_failed()), "calloc") == 0) {
		/*
		 * On the emulation a worker registers in its own thread
		 * (worker_main), after umcg_spawn() has returned 0. When that
		 * registration cannot allocate its registry record, the
		 * function never runs and umcg_join() says so with -ENOMEM
		 * (runtime.h); the errno check of CALL() does not apply here.
		 */
		return;
	}
	if (ret)
		CHILD_FAIL("umcg_join() returned %d", ret);
	if (atomic_load(&ran) != 1)
		CHILD_FAIL("spawn returned 0, join 0, the function ran %d times",
			   atomic_load(&ran));
	if (rv != &ran)
		CHILD_FAIL("join reported %p, the function returned %p", rv, (void *)&ran);
}

static void runtime_scenario(unsigned int servers, const struct umcg_worker_attr *wattr)
{
	struct umcg_rt_attr ra;
	struct umcg_rt *rt = NULL;
	struct h_tids base, now;
	char names[512];
	int ret, n;

	snapshot(&base);

	umcg_rt_attr_init(&ra);
	ra.nr_servers = servers;
	CALL(ret, umcg_rt_create(&rt, &ra));
	if (ret)
		MUST(umcg_rt_create(&rt, &ra));
	expect_threads(&base, "after umcg_rt_create");
	CALL(ret, umcg_rt_start(rt));
	if (ret) {
		/* No server may be left running. */
		expect_threads(&base, "after a failed umcg_rt_start");
		MUST(umcg_rt_start(rt));
	}
	snapshot(&now);
	n = h_tids_new(&base, &now, names, sizeof(names));
	if (n < (int)servers)
		CHILD_FAIL(
			"umcg_rt_start returned 0 with %d new thread(s) (%s), expected %u servers",
			n, names, servers);
	spawn_join(rt, wattr);
	/* A second worker after the first one: the registry's free list. */
	spawn_join(rt, wattr);
	MUST(umcg_rt_drain(rt));
	MUST(umcg_rt_stop(rt));
	expect_threads(&base, "after umcg_rt_stop");
	MUST(umcg_rt_destroy(rt));
}

static void one_server(void)
{
	runtime_scenario(1, NULL);
}

static void two_servers(void)
{
	runtime_scenario(2, NULL);
}

static void spawn_with_attr(void)
{
	struct umcg_worker_attr wa;

	umcg_worker_attr_init(&wa);
	wa.stack_size = 1024 * 1024;
	wa.name = "fault-worker";
	wa.server = 1;
	runtime_scenario(2, &wa);
}

/*
 * Slice timers: a hog and a peer that yields three times on one server
 * with a 1 ms slice, UMCG_PREEMPT_TIMER. Each time the peer yields, the hog
 * runs while the peer waits, so the hog's run asks for its timer, and the
 * first one creates it: the timer_create() that may fail here. Whatever
 * fails, the peer finishes (the server preempts the hog if its timer could
 * not be had), and the hog stops once the peer is joined.
 */
static atomic_int hog_stop;

static void *slice_hog(void *arg)
{
	while (!atomic_load(&hog_stop))
		;
	return arg;
}

static void *slice_peer(void *arg)
{
	for (int i = 0; i < 3; i++)
		if (umcg_yield())
			CHILD_FAIL("umcg_yield() failed in the peer");
	return arg;
}

/* Join @w; a worker whose registration could not allocate never ran. */
static void join_or_unregistered(struct umcg_worker *w)
{
	int ret = umcg_join(w, NULL);

	if (ret && !(ret == -ENOMEM && strcmp(fault_what(fault_failed()), "calloc") == 0))
		CHILD_FAIL("umcg_join() returned %d", ret);
}

static void slice_timers(void)
{
	struct umcg_worker *hog = NULL, *peer = NULL;
	struct umcg_rt_attr ra;
	struct umcg_rt *rt = NULL;
	struct h_tids base;
	int ret;

	snapshot(&base);
	atomic_store(&hog_stop, 0);
	umcg_rt_attr_init(&ra);
	ra.nr_servers = 1;
	ra.timeslice_ns = 1000000;
	ra.preempt = UMCG_PREEMPT_TIMER;
	CALL(ret, umcg_rt_create(&rt, &ra));
	if (ret)
		MUST(umcg_rt_create(&rt, &ra));
	CALL(ret, umcg_rt_start(rt));
	if (ret)
		MUST(umcg_rt_start(rt));
	CALL(ret, umcg_spawn(rt, &hog, NULL, slice_hog, NULL));
	if (ret)
		MUST(umcg_spawn(rt, &hog, NULL, slice_hog, NULL));
	CALL(ret, umcg_spawn(rt, &peer, NULL, slice_peer, NULL));
	if (ret)
		MUST(umcg_spawn(rt, &peer, NULL, slice_peer, NULL));
	join_or_unregistered(peer);
	atomic_store(&hog_stop, 1);
	join_or_unregistered(hog);
	MUST(umcg_rt_drain(rt));
	MUST(umcg_rt_stop(rt));
	expect_threads(&base, "after umcg_rt_stop");
	MUST(umcg_rt_destroy(rt));
}

/* The emulation's first registration, from a thread of its own. */
static void *register_main(void *arg)
{
	static struct umcg_task task __attribute__((aligned(UMCG_TASK_ALIGN)));
	int ret;

	(void)arg;
	memset(&task, 0, sizeof(task));
	task.state = UMCG_TASK_RUNNING;
	task.server_tid = (uint32_t)syscall(SYS_gettid);
	CALL(ret, umcg_ctl(UMCG_CTL_REGISTER, &task, CLOCK_MONOTONIC));
	if (ret)
		MUST(umcg_ctl(UMCG_CTL_REGISTER, &task, CLOCK_MONOTONIC));
	MUST(umcg_ctl(UMCG_CTL_UNREGISTER, NULL, CLOCK_MONOTONIC));
	return NULL;
}

static void first_registration(void)
{
	struct h_tids base;
	pthread_t th;

	snapshot(&base);
	if (pthread_create(&th, NULL, register_main, NULL) || pthread_join(th, NULL))
		CHILD_FAIL("the registering thread could not run");
	expect_threads(&base, "after the registering thread");
}

/* ---- running a scenario for every k ----------------------------------------- */

static void *nothing(void *arg)
{
	return arg;
}

static void child_run(void (*scenario)(void), int mode, long k, int report_fd)
{
	pthread_t th;
	long n;

	run_k = k;
	/* TSan starts a thread of its own with the first pthread_create(): let
	 * that happen before the scenarios count threads. */
	if (pthread_create(&th, NULL, nothing, NULL) || pthread_join(th, NULL))
		CHILD_FAIL("a plain thread could not run");
	alarm((unsigned int)(60 * h_timeout_multiplier()));
	fault_set(mode, k);
	scenario();
	n = fault_calls();
	if (mode == FAULT_FAIL && k <= n && fault_failed() != k)
		CHILD_FAIL("call %ld was made but did not fail", k);
#ifdef HAVE_LSAN
	if (__lsan_do_recoverable_leak_check())
		CHILD_FAIL("LeakSanitizer found a leak");
#endif
	if (report_fd >= 0) {
		long i;

		if (write(report_fd, &n, sizeof(n)) != (ssize_t)sizeof(n))
			_exit(1);
		for (i = 1; i <= n && i <= FAULT_MAX_CALLS; i++) {
			char line[64];
			int len = snprintf(line, sizeof(line), "%s\n", fault_what(i));

			if (write(report_fd, line, (size_t)len) != len)
				_exit(1);
		}
	}
	_exit(0);
}

static void wait_child(pid_t pid, const char *name, long k, const char *what)
{
	int status;

	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	if (WIFSIGNALED(status))
		ck_abort_msg("%s, failing call %ld (%s): killed by signal %d%s", name, k, what,
			     WTERMSIG(status), WTERMSIG(status) == SIGALRM ? " (a hang)" : "");
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "%s, failing call %ld (%s): exit status %d", name, k, what,
		      WEXITSTATUS(status));
}

static void run_scenario(const char *name, void (*scenario)(void))
{
	char whats[FAULT_MAX_CALLS + 1][32];
	int fds[2];
	long n = 0, k, i;
	FILE *in;
	pid_t pid;

	ck_assert_int_eq(fault_init(), 0);
	scenario_name = name;
	/* The counting run. */
	ck_assert_int_eq(pipe(fds), 0);
	fflush(NULL);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		close(fds[0]);
		child_run(scenario, FAULT_COUNT, 0, fds[1]);
	}
	close(fds[1]);
	in = fdopen(fds[0], "r");
	ck_assert_ptr_nonnull(in);
	ck_assert_int_eq(fread(&n, sizeof(n), 1, in), 1);
	for (i = 1; i <= n && i <= FAULT_MAX_CALLS; i++) {
		if (!fgets(whats[i], sizeof(whats[i]), in))
			break;
		whats[i][strcspn(whats[i], "\n")] = '\0';
	}
	fclose(in);
	wait_child(pid, name, 0, "none");
	ck_assert_msg(n > 0, "%s: the library made no call that could fail", name);
	fprintf(stderr, "fault: %s: %ld calls:", name, n);
	for (i = 1; i <= n && i <= FAULT_MAX_CALLS; i++)
		fprintf(stderr, " %s", whats[i]);
	fprintf(stderr, "\n");

	/* One run per call, the k-th failing. */
	for (k = 1; k <= n; k++) {
		fflush(NULL);
		pid = fork();
		ck_assert_int_ge(pid, 0);
		if (pid == 0)
			child_run(scenario, FAULT_FAIL, k, -1);
		wait_child(pid, name, k, k <= FAULT_MAX_CALLS ? whats[k] : "?");
	}
	fprintf(stderr, "fault: %s: %ld runs passed\n", name, n);
}

START_TEST(fault_one_server)
{
	run_scenario("create/start/spawn/join/drain/stop/destroy, 1 server", one_server);
}
END_TEST

START_TEST(fault_two_servers)
{
	run_scenario("create/start/spawn/join/drain/stop/destroy, 2 servers", two_servers);
}
END_TEST

START_TEST(fault_spawn_attr)
{
	run_scenario("spawn with stack size, name and server", spawn_with_attr);
}
END_TEST

START_TEST(fault_slice_timers)
{
	run_scenario("a hog preempted by its slice timer", slice_timers);
}
END_TEST

START_TEST(fault_first_registration)
{
	run_scenario("the emulation's first registration", first_registration);
}
END_TEST

static int prepare(void)
{
	if (umcg_backend_active() != UMCG_BACKEND_EMULATED) {
		printf("fault: the scenarios count the emulation's allocations; "
		       "skipped on another backend\n");
		return 77;
	}
	if (fault_init()) {
		printf("fault: libumcg.so is not loaded (a static link?)\n");
		return 77;
	}
	return 0;
}

static Suite *fault_suite(void)
{
	Suite *s = suite_create("fault");
	TCase *tc = tcase_create("fault");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, fault_one_server);
	tcase_add_test(tc, fault_two_servers);
	tcase_add_test(tc, fault_spawn_attr);
	tcase_add_test(tc, fault_slice_timers);
	tcase_add_test(tc, fault_first_registration);
	suite_add_tcase(s, tc);
	return s;
}

H_TEST_MAIN(fault_suite, prepare)
