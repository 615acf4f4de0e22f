/* SPDX-License-Identifier: MIT */
/*
 * tests/runtime/runtime_fork.c - the "fork" tests of test-runtime:
 * fork() from a runtime. The suite is built in test_runtime.c;
 * runtime.h holds what the groups share.
 */
#include "runtime.h"

/* ==== fork() =============================================================== */

static const char *const fork_steps[] = {
	"ok",
	"umcg_spawn() on the parent's runtime did not return -ECHILD",
	"umcg_rt_drain() on the parent's runtime did not return -ECHILD",
	"umcg_rt_stop() on the parent's runtime did not return -ECHILD",
	"umcg_rt_start() on the parent's runtime did not return -ECHILD",
	"umcg_join() of a parent's worker did not return -ECHILD",
	"umcg_self() is not NULL in the child",
	"umcg_rt_destroy() of the parent's runtime did not return 0",
	"a new runtime could not be created or started",
	"a worker of the new runtime could not be spawned",
	"a worker of the new runtime could not be joined or returned the wrong value",
	"the new runtime could not be drained or destroyed",
};

/* In the child: returns the first failing step (an index in fork_steps). */
static int child_after_fork(struct umcg_rt *rt, struct umcg_worker *live)
{
	struct umcg_worker *w[8];
	struct umcg_rt *fresh = NULL;
	uintptr_t i;
	void *ret;

	if (umcg_spawn(rt, &w[0], NULL, echo, NULL) != -ECHILD)
		return 1;
	if (umcg_rt_drain(rt) != -ECHILD)
		return 2;
	if (umcg_rt_stop(rt) != -ECHILD)
		return 3;
	if (umcg_rt_start(rt) != -ECHILD)
		return 4;
	if (umcg_join(live, NULL) != -ECHILD)
		return 5;
	if (umcg_self() != NULL)
		return 6;
	if (umcg_rt_destroy(rt) != 0)
		return 7;
#ifdef UNDER_TSAN
	/* ThreadSanitizer cannot follow threads started in the child of a
	 * threaded process (it aborts with "dup thread"); stop here. */
	return 0;
#endif
	if (umcg_rt_create(&fresh, NULL) || umcg_rt_start(fresh))
		return 8;
	for (i = 0; i < 8; i++) {
		if (umcg_spawn(fresh, &w[i], NULL, few_yields, (void *)(i + 1)))
			return 9;
	}
	for (i = 0; i < 8; i++) {
		if (umcg_join(w[i], &ret) || (uintptr_t)ret != i + 1)
			return 10;
	}
	if (umcg_rt_drain(fresh) || umcg_rt_destroy(fresh))
		return 11;
	return 0;
}

static void assert_child_ok(pid_t pid, const char *const *steps, int nr_steps)
{
	int status = 0, code;

	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(WIFEXITED(status), "the child did not exit (status 0x%x)", status);
	code = WEXITSTATUS(status);
	ck_assert_msg(code == 0, "child: %s", code < nr_steps ? steps[code] : "unknown failure");
}

/* fork() in a process with a started runtime and a running worker. */
START_TEST(test_fork_child)
{
#ifdef UNDER_TSAN
	printf("test_fork_child: under ThreadSanitizer the child does not start a new runtime\n");
#endif
	struct umcg_rt *rt = rt_start(0, 0);
	struct umcg_worker *w;
	unsigned long seen;
	pid_t pid;

	ck_assert_int_eq(umcg_spawn(rt, &w, NULL, holder, NULL), 0);
	WAIT_UNTIL(PEEK(&holder_progress) > 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0)
		_exit(child_after_fork(rt, w));
	assert_child_ok(pid, fork_steps, (int)(sizeof(fork_steps) / sizeof(fork_steps[0])));

	/* The parent's runtime is untouched. */
	seen = PEEK(&holder_progress);
	WAIT_UNTIL(PEEK(&holder_progress) > seen);
	assert_rt_works(rt);
	STORE(&release, 1);
	ck_assert_int_eq(umcg_join(w, NULL), 0);
	rt_end(rt);
}
END_TEST

static const char *const forker_steps[] = {
	"ok",
	"umcg_self() is not NULL in the child of a worker",
	"umcg_yield() did not return -EPERM in the child of a worker",
	"umcg_park() did not return -EPERM in the child of a worker",
	"umcg_sleep_for() did not return -EPERM in the child of a worker",
	"umcg_exit() did not return -EPERM in the child of a worker",
	"umcg_spawn() on the parent's runtime did not return -ECHILD",
};

static struct umcg_rt *fork_rt;
static bool forker_self_kept;
static int forker_yield_rc = 1;

static void *forker(void *arg)
{
	struct umcg_worker *me = umcg_self();
	pid_t pid;
	int code;

	(void)arg;
	pid = fork();
	if (pid == 0) {
		if (umcg_self() != NULL)
			code = 1;
		else if (umcg_yield() != -EPERM)
			code = 2;
		else if (umcg_park() != -EPERM)
			code = 3;
		else if (umcg_sleep_for(1) != -EPERM)
			code = 4;
		else if (umcg_exit(NULL) != -EPERM)
			code = 5;
		else if (umcg_spawn(fork_rt, NULL, NULL, echo, NULL) != -ECHILD)
			code = 6;
		else
			code = 0;
		_exit(code);
	}
	/* The parent's worker carries on. */
	forker_self_kept = umcg_self() == me;
	forker_yield_rc = umcg_yield();
	return (void *)(intptr_t)pid;
}

START_TEST(test_fork_from_worker)
{
	struct umcg_rt *rt = rt_start(1, 0);
	struct umcg_worker *w;
	void *ret = NULL;
	pid_t pid;

	fork_rt = rt;
	ck_assert_int_eq(umcg_spawn(rt, &w, NULL, forker, NULL), 0);
	ck_assert_int_eq(umcg_join(w, &ret), 0);
	pid = (pid_t)(intptr_t)ret;
	ck_assert_int_gt(pid, 0);
	assert_child_ok(pid, forker_steps, (int)(sizeof(forker_steps) / sizeof(forker_steps[0])));
	ck_assert(forker_self_kept);
	ck_assert_int_eq(forker_yield_rc, 0);
	assert_rt_works(rt);
	rt_end(rt);
}
END_TEST

void runtime_add_fork(Suite *s)
{
	TCase *tc;

	tc = tcase_create("fork");
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_fork_child);
	tcase_add_test(tc, test_fork_from_worker);
	suite_add_tcase(s, tc);
}
