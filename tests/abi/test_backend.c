/* SPDX-License-Identifier: MIT */
/*
 * test_backend.c - choosing the backend: umcg_backend_select(),
 * umcg_backend_active(), umcg_backend_name(), umcg_backend_reason(), and
 * the environment variables UMCG_BACKEND and UMCG_SYSCALL_NRS.
 *
 * The backend is chosen once per process, at first use, so every scenario
 * needs a fresh process: Check's fork mode gives each test one, and the
 * parent never calls into the library (it would hand its choice down to
 * every child). Each test starts from an environment without UMCG_BACKEND
 * and UMCG_SYSCALL_NRS (the fixture clears them) and sets what it needs
 * with setenv() before its first library call.
 *
 * Most scenarios assume the machine has no UMCG kernel, which is the case
 * on every stock kernel. main() finds out in a throw-away child; where a
 * UMCG kernel answers, those scenarios are left out and the ones that
 * expect the kernel backend run instead. If UMCG_SYSCALL_NRS names numbers
 * here, they are numbers no kernel has (4000-4002), so the probe that
 * checks them calls nothing that exists.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* gettid() */
#endif
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <umcg/umcg.h>

#include "test_common.h"

static void clear_env(void)
{
	unsetenv("UMCG_BACKEND");
	unsetenv("UMCG_SYSCALL_NRS");
}

static void assert_reason_has(const char *needle)
{
	const char *r = umcg_backend_reason();

	ck_assert_ptr_nonnull(r);
	ck_assert_msg(strstr(r, needle), "reason \"%s\" does not mention \"%s\"", r, needle);
}

/* Every UMCG entry point fails with @err, and nothing crashes. */
static void assert_all_calls_fail(int err)
{
	static struct umcg_task t;

	t.state = UMCG_TASK_RUNNING;
	t.server_tid = (uint32_t)gettid();
	ck_assert_int_eq(umcg_ctl(UMCG_CTL_REGISTER, &t, CLOCK_MONOTONIC), err);
	ck_assert_int_eq(umcg_ctl(UMCG_CTL_UNREGISTER, NULL, 0), err);
	ck_assert_int_eq(umcg_wait(0, 0), err);
	ck_assert_int_eq(umcg_kick(0, gettid()), err);
	ck_assert_int_eq(umcg_block_begin(), err);
	ck_assert_int_eq(umcg_block_end(), err);
}

/* A server registers and unregisters: the chosen backend really runs. */
static void assert_server_round_trip(void)
{
	static struct umcg_task t;

	t.state = UMCG_TASK_RUNNING;
	t.server_tid = (uint32_t)gettid();
	ck_assert_int_eq(umcg_ctl(UMCG_CTL_REGISTER, &t, CLOCK_MONOTONIC), 0);
	ck_assert_int_eq(umcg_ctl(UMCG_CTL_UNREGISTER, NULL, 0), 0);
}

/* ---- names and reasons ---------------------------------------------------- */

START_TEST(test_names)
{
	ck_assert_str_eq(umcg_backend_name(UMCG_BACKEND_AUTO), "auto");
	ck_assert_str_eq(umcg_backend_name(UMCG_BACKEND_KERNEL), "kernel");
	ck_assert_str_eq(umcg_backend_name(UMCG_BACKEND_EMULATED), "emulated");
	ck_assert_str_eq(umcg_backend_name(3), "invalid");
	ck_assert_str_eq(umcg_backend_name(42), "invalid");
	ck_assert_str_eq(umcg_backend_name(-1), "invalid");
	ck_assert_str_eq(umcg_backend_name(-ENOSYS), "invalid");
}
END_TEST

START_TEST(test_reason_before_choice)
{
	assert_reason_has("not chosen");
	/* Asking for the reason chooses nothing. */
	assert_reason_has("not chosen");
	ck_assert_str_eq(umcg_backend_name(UMCG_BACKEND_KERNEL), "kernel");
	assert_reason_has("not chosen");
}
END_TEST

/* ---- auto, no UMCG kernel ------------------------------------------------ */

START_TEST(test_auto_picks_emulated)
{
	ck_assert_int_eq(umcg_backend_active(), UMCG_BACKEND_EMULATED);
	assert_reason_has("auto");
	assert_reason_has("emulation");
	/* Why: nothing said which numbers are UMCG's. */
	assert_reason_has("UMCG_SYSCALL_NRS");
	ck_assert_int_eq(umcg_kick_signal(), SIGURG);
	assert_server_round_trip();
}
END_TEST

START_TEST(test_auto_is_chosen_once)
{
	ck_assert_int_eq(umcg_backend_active(), UMCG_BACKEND_EMULATED);
	/* The environment is read at first use only. */
	setenv("UMCG_BACKEND", "kernel", 1);
	ck_assert_int_eq(umcg_backend_active(), UMCG_BACKEND_EMULATED);
	assert_server_round_trip();
}
END_TEST

START_TEST(test_first_call_chooses)
{
	static struct umcg_task t;

	/* A UMCG call, not umcg_backend_active(), makes the choice here. */
	t.state = UMCG_TASK_RUNNING;
	t.server_tid = (uint32_t)gettid();
	ck_assert_int_eq(umcg_ctl(UMCG_CTL_REGISTER, &t, CLOCK_MONOTONIC), 0);
	assert_reason_has("emulation");
	ck_assert_int_eq(umcg_backend_select(UMCG_BACKEND_KERNEL), -EBUSY);
	ck_assert_int_eq(umcg_backend_active(), UMCG_BACKEND_EMULATED);
	ck_assert_int_eq(umcg_ctl(UMCG_CTL_UNREGISTER, NULL, 0), 0);
}
END_TEST

#define RACERS 8

static pthread_barrier_t race_barrier;

static void *race_active(void *arg)
{
	int *out = arg;

	pthread_barrier_wait(&race_barrier);
	*out = umcg_backend_active();
	return NULL;
}

START_TEST(test_concurrent_first_use)
{
	pthread_t th[RACERS];
	int got[RACERS], i;

	pthread_barrier_init(&race_barrier, NULL, RACERS);
	for (i = 0; i < RACERS; i++)
		ck_assert_int_eq(pthread_create(&th[i], NULL, race_active, &got[i]), 0);
	for (i = 0; i < RACERS; i++) {
		pthread_join(th[i], NULL);
		ck_assert_int_eq(got[i], UMCG_BACKEND_EMULATED);
	}
	pthread_barrier_destroy(&race_barrier);
}
END_TEST

/* ---- umcg_backend_select() ------------------------------------------------ */

START_TEST(test_select_sequence)
{
	/* No UMCG kernel: -ENOSYS, and the choice stays open. */
	ck_assert_int_eq(umcg_backend_select(UMCG_BACKEND_KERNEL), -ENOSYS);
	assert_reason_has("kernel");
	ck_assert_int_eq(umcg_backend_select(UMCG_BACKEND_EMULATED), 0);
	assert_reason_has("umcg_backend_select()");
	ck_assert_int_eq(umcg_backend_active(), UMCG_BACKEND_EMULATED);
	/* Selecting the active backend again is fine; another is not. */
	ck_assert_int_eq(umcg_backend_select(UMCG_BACKEND_EMULATED), 0);
	ck_assert_int_eq(umcg_backend_select(UMCG_BACKEND_KERNEL), -EBUSY);
	ck_assert_int_eq(umcg_backend_active(), UMCG_BACKEND_EMULATED);
	assert_server_round_trip();
}
END_TEST

START_TEST(test_select_kernel_failure_leaves_auto_open)
{
	ck_assert_int_eq(umcg_backend_select(UMCG_BACKEND_KERNEL), -ENOSYS);
	ck_assert_int_eq(umcg_backend_select(UMCG_BACKEND_KERNEL), -ENOSYS);
	ck_assert_int_eq(umcg_backend_active(), UMCG_BACKEND_EMULATED);
	assert_reason_has("emulation");
}
END_TEST

START_TEST(test_select_invalid)
{
	static const int bad[] = { 42, 3, -1 };
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_int_eq(umcg_backend_select((enum umcg_backend)bad[i]), -EINVAL);
	/* Nothing was chosen by those. */
	assert_reason_has("not chosen");
	ck_assert_int_eq(umcg_backend_select(UMCG_BACKEND_EMULATED), 0);
	/* And after a choice, still -EINVAL rather than -EBUSY. */
	ck_assert_int_eq(umcg_backend_select((enum umcg_backend)42), -EINVAL);
}
END_TEST

START_TEST(test_select_auto)
{
	ck_assert_int_eq(umcg_backend_select(UMCG_BACKEND_AUTO), 0);
	ck_assert_int_eq(umcg_backend_active(), UMCG_BACKEND_EMULATED);
	assert_reason_has("emulation");
	/* AUTO names no other backend than the active one. */
	ck_assert_int_eq(umcg_backend_select(UMCG_BACKEND_AUTO), 0);
	ck_assert_int_eq(umcg_backend_select(UMCG_BACKEND_KERNEL), -EBUSY);
}
END_TEST

START_TEST(test_select_beats_environment)
{
	setenv("UMCG_BACKEND", "kernel", 1);
	ck_assert_int_eq(umcg_backend_select(UMCG_BACKEND_EMULATED), 0);
	ck_assert_int_eq(umcg_backend_active(), UMCG_BACKEND_EMULATED);
	assert_server_round_trip();
}
END_TEST

/* ---- UMCG_BACKEND ------------------------------------------------------------ */

START_TEST(test_env_kernel_without_kernel)
{
	setenv("UMCG_BACKEND", "kernel", 1);
	ck_assert_int_eq(umcg_backend_active(), -ENOSYS);
	assert_reason_has("UMCG_BACKEND=kernel");
	assert_reason_has("unavailable");
	/* A clear error from every call, never a fallback. */
	assert_all_calls_fail(-ENOSYS);
	ck_assert_int_eq(umcg_backend_active(), -ENOSYS);
	/* The failed choice is final: no switching afterwards either. */
	ck_assert_int_lt(umcg_backend_select(UMCG_BACKEND_EMULATED), 0);
	ck_assert_int_eq(umcg_backend_active(), -ENOSYS);
	ck_assert_int_eq(umcg_ctl(UMCG_CTL_UNREGISTER, NULL, 0), -ENOSYS);
}
END_TEST

START_TEST(test_env_bogus)
{
	setenv("UMCG_BACKEND", "bogus", 1);
	ck_assert_int_eq(umcg_backend_active(), -EINVAL);
	assert_reason_has("UMCG_BACKEND=bogus");
	assert_all_calls_fail(-EINVAL);
}
END_TEST

START_TEST(test_env_case_matters)
{
	/* The documented values are lower case; anything else is refused. */
	setenv("UMCG_BACKEND", "Emulated", 1);
	ck_assert_int_eq(umcg_backend_active(), -EINVAL);
}
END_TEST

START_TEST(test_env_emulated)
{
	setenv("UMCG_BACKEND", "emulated", 1);
	ck_assert_int_eq(umcg_backend_active(), UMCG_BACKEND_EMULATED);
	assert_reason_has("UMCG_BACKEND=emulated");
	assert_server_round_trip();
}
END_TEST

START_TEST(test_env_auto)
{
	setenv("UMCG_BACKEND", "auto", 1);
	ck_assert_int_eq(umcg_backend_active(), UMCG_BACKEND_EMULATED);
	assert_reason_has("UMCG_BACKEND=auto");
	assert_reason_has("emulation");
}
END_TEST

START_TEST(test_env_empty_is_unset)
{
	setenv("UMCG_BACKEND", "", 1);
	ck_assert_int_eq(umcg_backend_active(), UMCG_BACKEND_EMULATED);
}
END_TEST

/* ---- UMCG_SYSCALL_NRS ------------------------------------------------------- */

START_TEST(test_nrs_garbage_auto)
{
	setenv("UMCG_SYSCALL_NRS", "garbage", 1);
	ck_assert_int_eq(umcg_backend_active(), -EINVAL);
	assert_reason_has("UMCG_SYSCALL_NRS");
	assert_all_calls_fail(-EINVAL);
}
END_TEST

START_TEST(test_nrs_garbage_explicit_auto)
{
	setenv("UMCG_BACKEND", "auto", 1);
	setenv("UMCG_SYSCALL_NRS", "garbage", 1);
	ck_assert_int_eq(umcg_backend_active(), -EINVAL);
	assert_reason_has("UMCG_SYSCALL_NRS");
}
END_TEST

START_TEST(test_nrs_malformed)
{
	/* Each in its own process: fork by hand, since the choice is final. */
	static const char *const bad[] = {
		"4000,4001",   "4000,4001,4002,4003", "4000,4000,4001", "-1,4001,4002",
		"4000,4001,x", "0,4001,4002",	      "4000;4001;4002", "99999,4001,4002",
	};
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		pid_t pid = fork();
		int status;

		ck_assert_int_ge(pid, 0);
		if (pid == 0) {
			setenv("UMCG_SYSCALL_NRS", bad[i], 1);
			_exit(umcg_backend_active() == -EINVAL ? 0 : 1);
		}
		ck_assert_int_eq(waitpid(pid, &status, 0), pid);
		ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
			      "UMCG_SYSCALL_NRS=%s was not refused with -EINVAL", bad[i]);
	}
}
END_TEST

START_TEST(test_nrs_ignored_when_emulated)
{
	/* UMCG_BACKEND=emulated never looks at the numbers. */
	setenv("UMCG_BACKEND", "emulated", 1);
	setenv("UMCG_SYSCALL_NRS", "garbage", 1);
	ck_assert_int_eq(umcg_backend_active(), UMCG_BACKEND_EMULATED);
}
END_TEST

START_TEST(test_nrs_probe_fails_auto)
{
	/* Well-formed numbers that no kernel has: the probe must refuse them. */
	setenv("UMCG_SYSCALL_NRS", "4000,4001,4002", 1);
	ck_assert_int_eq(umcg_backend_active(), UMCG_BACKEND_EMULATED);
	assert_reason_has("probe");
	assert_reason_has("emulation");
	assert_server_round_trip();
}
END_TEST

START_TEST(test_nrs_probe_fails_kernel)
{
	setenv("UMCG_BACKEND", "kernel", 1);
	setenv("UMCG_SYSCALL_NRS", "4000,4001,4002", 1);
	ck_assert_int_eq(umcg_backend_active(), -ENOSYS);
	assert_reason_has("probe");
	assert_all_calls_fail(-ENOSYS);
}
END_TEST

START_TEST(test_nrs_probe_fails_select)
{
	setenv("UMCG_SYSCALL_NRS", "4000,4001,4002", 1);
	ck_assert_int_eq(umcg_backend_select(UMCG_BACKEND_KERNEL), -ENOSYS);
	assert_reason_has("probe");
	ck_assert_int_eq(umcg_backend_select(UMCG_BACKEND_EMULATED), 0);
}
END_TEST

/* ---- a machine with a UMCG kernel ------------------------------------------ */

START_TEST(test_auto_picks_kernel)
{
	ck_assert_int_eq(umcg_backend_active(), UMCG_BACKEND_KERNEL);
	assert_reason_has("probe");
	ck_assert_int_eq(umcg_kick_signal(), 0);
	assert_server_round_trip();
}
END_TEST

START_TEST(test_select_kernel_with_kernel)
{
	ck_assert_int_eq(umcg_backend_select(UMCG_BACKEND_KERNEL), 0);
	ck_assert_int_eq(umcg_backend_select(UMCG_BACKEND_KERNEL), 0);
	ck_assert_int_eq(umcg_backend_select(UMCG_BACKEND_EMULATED), -EBUSY);
	ck_assert_int_eq(umcg_backend_active(), UMCG_BACKEND_KERNEL);
}
END_TEST

/* Same checks on the emulation, which every machine has. */
START_TEST(test_env_emulated_with_kernel)
{
	setenv("UMCG_BACKEND", "emulated", 1);
	ck_assert_int_eq(umcg_backend_active(), UMCG_BACKEND_EMULATED);
	ck_assert_int_eq(umcg_backend_select(UMCG_BACKEND_KERNEL), -EBUSY);
	assert_server_round_trip();
}
END_TEST

/* ---- main ------------------------------------------------------------------- */

/* Whether auto picks the kernel here; asked in a child, see the header. */
static bool machine_has_umcg_kernel(void)
{
	pid_t pid = fork();
	int status;

	if (pid < 0) {
		perror("fork");
		exit(1);
	}
	if (pid == 0) {
		clear_env();
		_exit(umcg_backend_active() == UMCG_BACKEND_KERNEL ? 0 : 3);
	}
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) {
		fprintf(stderr, "test-backend: the probing child died\n");
		exit(1);
	}
	return WEXITSTATUS(status) == 0;
}

static TCase *new_tcase(Suite *s, const char *name)
{
	TCase *tc = tcase_create(name);

	tcase_add_checked_fixture(tc, clear_env, NULL);
	tcase_set_timeout(tc, 10);
	suite_add_tcase(s, tc);
	return tc;
}

static Suite *backend_suite(bool kernel)
{
	Suite *s = suite_create("backend");
	TCase *tc = new_tcase(s, "names");

	tcase_add_test(tc, test_names);
	tcase_add_test(tc, test_reason_before_choice);

	if (kernel) {
		tc = new_tcase(s, "with-umcg-kernel");
		tcase_add_test(tc, test_auto_picks_kernel);
		tcase_add_test(tc, test_select_kernel_with_kernel);
		tcase_add_test(tc, test_env_emulated_with_kernel);
		tcase_add_test(tc, test_select_invalid);
		tcase_add_test(tc, test_env_bogus);
		tcase_add_test(tc, test_nrs_garbage_auto);
		tcase_add_test(tc, test_nrs_malformed);
		return s;
	}

	tc = new_tcase(s, "auto");
	tcase_add_test(tc, test_auto_picks_emulated);
	tcase_add_test(tc, test_auto_is_chosen_once);
	tcase_add_test(tc, test_first_call_chooses);
	tcase_add_test(tc, test_concurrent_first_use);

	tc = new_tcase(s, "select");
	tcase_add_test(tc, test_select_sequence);
	tcase_add_test(tc, test_select_kernel_failure_leaves_auto_open);
	tcase_add_test(tc, test_select_invalid);
	tcase_add_test(tc, test_select_auto);
	tcase_add_test(tc, test_select_beats_environment);

	tc = new_tcase(s, "env-backend");
	tcase_add_test(tc, test_env_kernel_without_kernel);
	tcase_add_test(tc, test_env_bogus);
	tcase_add_test(tc, test_env_case_matters);
	tcase_add_test(tc, test_env_emulated);
	tcase_add_test(tc, test_env_auto);
	tcase_add_test(tc, test_env_empty_is_unset);

	tc = new_tcase(s, "env-syscall-nrs");
	tcase_add_test(tc, test_nrs_garbage_auto);
	tcase_add_test(tc, test_nrs_garbage_explicit_auto);
	tcase_add_test(tc, test_nrs_malformed);
	tcase_add_test(tc, test_nrs_ignored_when_emulated);
	tcase_add_test(tc, test_nrs_probe_fails_auto);
	tcase_add_test(tc, test_nrs_probe_fails_kernel);
	tcase_add_test(tc, test_nrs_probe_fails_select);
	return s;
}

static bool kernel;

static int prepare(void)
{
	kernel = machine_has_umcg_kernel();
	if (kernel)
		printf("test-backend: this machine has a UMCG kernel; "
		       "the scenarios that assume none are skipped\n");
	return 0;
}

static Suite *suite(void)
{
	return backend_suite(kernel);
}

H_TEST_MAIN(suite, prepare)
