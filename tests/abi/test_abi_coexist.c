/* SPDX-License-Identifier: MIT */
/*
 * test_abi_coexist.c - <umcg/umcg.h> next to a kernel's <linux/umcg.h>.
 *
 * Built with -Itests/abi/fake-kernel-headers, whose linux/umcg.h mimics the
 * uapi header of a UMCG kernel: __u32/__u64 fields and the umcg_ctl() flags
 * as an enum. The same file is built twice:
 *  - test-abi-coexist: <linux/umcg.h> first, then <umcg/umcg.h>;
 *  - test-abi-coexist-reverse (-DUMCG_TEST_REVERSE_ORDER): <umcg/umcg.h>
 *    first, which must pull <linux/umcg.h> in by itself, then
 *    <linux/umcg.h> again, which its guard must turn into nothing.
 * Either way the program must compile (no redefinition of struct umcg_task
 * or of a constant), see the kernel's definitions, and the library, built
 * without the fake header, must work on the kernel's struct type: the two
 * layouts are one ABI.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* gettid() */
#endif

#ifndef UMCG_TEST_REVERSE_ORDER
#include <linux/umcg.h>
#ifndef _LINUX_UMCG_H
#error "tests/abi/fake-kernel-headers must come first on the include path"
#endif
#include <umcg/umcg.h>
#else
#include <umcg/umcg.h>
#ifndef _LINUX_UMCG_H
#error "<umcg/abi.h> did not include <linux/umcg.h> although it exists"
#endif
#include <linux/umcg.h>
#endif

#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "test_common.h"

/* These only compile if the kernel header's definitions are the ones in use. */
#define IS_KERNEL_U64(x) _Generic((x), __u64 : 1, default : 0)

static const enum umcg_ctl_flag server_flags = UMCG_CTL_REGISTER;

/*
 * Register the calling thread as a server with a task of the kernel's type,
 * through the library, and unregister it. Uses both headers at once.
 */
static int server_round_trip(struct umcg_task *t)
{
	int ret;

	memset(t, 0, sizeof(*t));
	t->state = UMCG_TASK_RUNNING;
	t->server_tid = (__u32)gettid();
	ret = umcg_ctl(server_flags, t, CLOCK_MONOTONIC);
	if (ret)
		return ret;
	return umcg_ctl(UMCG_CTL_UNREGISTER, NULL, 0);
}

START_TEST(test_kernel_definitions_in_use)
{
	struct umcg_task t = { 0 };

	ck_assert_int_eq(IS_KERNEL_U64(t.runnable_workers_ptr), 1);
	ck_assert_int_eq(IS_KERNEL_U64(t.blocked_ts), 1);
	ck_assert_uint_eq(sizeof(server_flags), sizeof(enum umcg_ctl_flag));
	ck_assert_uint_eq(sizeof(struct umcg_task), 64);
	ck_assert_uint_eq(_Alignof(struct umcg_task), UMCG_TASK_ALIGN);
	ck_assert_uint_eq(UMCG_CTL_REGISTER | UMCG_CTL_WORKER, 0x10001);
}
END_TEST

START_TEST(test_library_list_helpers_on_kernel_type)
{
	static struct umcg_task server, w[3];
	struct umcg_task *head, *pos, *tmp;
	static const __u64 ts[3] = { 20, 30, 10 };
	struct umcg_task *const sorted[3] = { &w[2], &w[0], &w[1] };
	size_t n = 0;
	int i;

	/* Push w[0], w[1], w[2] the way the kernel does; w[2] is the newest. */
	for (i = 0; i < 3; i++) {
		w[i].runnable_ts = ts[i];
		w[i].runnable_workers_ptr = server.runnable_workers_ptr;
		server.runnable_workers_ptr = (__u64)(uintptr_t)&w[i];
	}
	head = umcg_runnable_take(&server);
	ck_assert_ptr_eq(head, &w[2]);
	ck_assert_uint_eq(server.runnable_workers_ptr, 0);
	ck_assert_uint_eq(umcg_runnable_count(head), 3);

	head = umcg_runnable_sort_oldest(head);
	umcg_runnable_for_each(pos, tmp, head) {
		ck_assert_ptr_eq(pos, sorted[n]);
		n++;
	}
	ck_assert_uint_eq(n, 3);
}
END_TEST

START_TEST(test_library_calls_with_kernel_type)
{
	_Alignas(UMCG_TASK_ALIGN) unsigned char buf[2 * sizeof(struct umcg_task)];
	struct umcg_task t;
	int ret;

	/* §4 rule 1: a misaligned task is refused first. */
	ck_assert_int_eq(umcg_ctl(server_flags, (struct umcg_task *)(void *)(buf + 8),
				  CLOCK_MONOTONIC),
			 -EINVAL);

	ret = server_round_trip(&t);
	ck_assert_msg(ret == 0, "server register/unregister with the kernel's type: %d (%s)", ret,
		      strerror(-ret));
}
END_TEST

static Suite *coexist_suite(void)
{
	Suite *s = suite_create("abi-coexist");
	TCase *tc = tcase_create("coexist");

	tcase_set_timeout(tc, 10);
	tcase_add_test(tc, test_kernel_definitions_in_use);
	tcase_add_test(tc, test_library_list_helpers_on_kernel_type);
	tcase_add_test(tc, test_library_calls_with_kernel_type);
	suite_add_tcase(s, tc);
	return s;
}

H_TEST_MAIN(coexist_suite, NULL)
