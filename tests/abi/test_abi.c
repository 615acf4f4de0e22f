/* SPDX-License-Identifier: MIT */
/*
 * test_abi.c - the layout and constants of <umcg/abi.h>, checked at run time.
 *
 * The header already checks most of this with static asserts; this program
 * checks it again where a static assert cannot look (real addresses of
 * automatic, static and heap objects, array strides, field sizes) and pins
 * every constant to the value of doc/umcg-abi.md §2 rules 1-5, so that a change to
 * the header shows up as a named failing test rather than as a build error
 * somewhere else.
 *
 * <umcg/abi.h> is included first and alone to prove it is self-contained;
 * the build compiles this file with -std=c11 -pedantic-errors, which is how
 * "the public headers are C11 clean" is tested.
 */
#include <umcg/abi.h>

#include <check.h>
#include <stdalign.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <umcg/umcg.h>

#include "test_common.h"

#if !defined(__STDC_VERSION__) || __STDC_VERSION__ < 201112L
#error "test_abi.c must be compiled as C11 or later"
#endif

#define FIELD_SIZE(type, field) sizeof(((type *)0)->field)

START_TEST(test_size_and_alignment)
{
	ck_assert_uint_eq(sizeof(struct umcg_task), 64);
	ck_assert_uint_eq(alignof(struct umcg_task), 64);
	ck_assert_uint_eq(UMCG_TASK_ALIGN, 64);
	ck_assert_uint_eq(alignof(struct umcg_task), UMCG_TASK_ALIGN);
}
END_TEST

START_TEST(test_field_offsets)
{
	ck_assert_uint_eq(offsetof(struct umcg_task, state), 0);
	ck_assert_uint_eq(offsetof(struct umcg_task, next_tid), 4);
	ck_assert_uint_eq(offsetof(struct umcg_task, server_tid), 8);
	ck_assert_uint_eq(offsetof(struct umcg_task, __hole), 12);
	ck_assert_uint_eq(offsetof(struct umcg_task, blocked_ts), 16);
	ck_assert_uint_eq(offsetof(struct umcg_task, runnable_ts), 24);
	ck_assert_uint_eq(offsetof(struct umcg_task, runnable_workers_ptr), 32);
	ck_assert_uint_eq(offsetof(struct umcg_task, __zero), 40);
}
END_TEST

START_TEST(test_field_sizes)
{
	ck_assert_uint_eq(FIELD_SIZE(struct umcg_task, state), 4);
	ck_assert_uint_eq(FIELD_SIZE(struct umcg_task, next_tid), 4);
	ck_assert_uint_eq(FIELD_SIZE(struct umcg_task, server_tid), 4);
	ck_assert_uint_eq(FIELD_SIZE(struct umcg_task, __hole), 4);
	ck_assert_uint_eq(FIELD_SIZE(struct umcg_task, blocked_ts), 8);
	ck_assert_uint_eq(FIELD_SIZE(struct umcg_task, runnable_ts), 8);
	ck_assert_uint_eq(FIELD_SIZE(struct umcg_task, runnable_workers_ptr), 8);
	ck_assert_uint_eq(FIELD_SIZE(struct umcg_task, __zero), 24);
	/* The fields cover the struct: no padding anywhere. */
	ck_assert_uint_eq(offsetof(struct umcg_task, __zero) + FIELD_SIZE(struct umcg_task, __zero),
			  sizeof(struct umcg_task));
	/* A pointer fits in runnable_workers_ptr. */
	ck_assert_uint_ge(FIELD_SIZE(struct umcg_task, runnable_workers_ptr), sizeof(void *));
}
END_TEST

/* Objects of every storage duration land on a 64-byte boundary. */
static struct umcg_task static_tasks[3];

static int is_aligned(const void *p)
{
	return ((uintptr_t)p % UMCG_TASK_ALIGN) == 0;
}

START_TEST(test_object_alignment)
{
	struct umcg_task automatic[3];
	struct {
		char c;
		struct umcg_task t;
	} embedded;
	struct umcg_task *heap;
	size_t i;

	for (i = 0; i < 3; i++) {
		ck_assert_msg(is_aligned(&static_tasks[i]), "static_tasks[%zu] at %p", i,
			      (void *)&static_tasks[i]);
		ck_assert_msg(is_aligned(&automatic[i]), "automatic[%zu] at %p", i,
			      (void *)&automatic[i]);
	}
	ck_assert_uint_eq((uintptr_t)&static_tasks[1] - (uintptr_t)&static_tasks[0], 64);
	ck_assert_msg(is_aligned(&embedded.t), "embedded task at %p", (void *)&embedded.t);
	ck_assert_uint_eq(offsetof(__typeof__(embedded), t), 64);

	heap = aligned_alloc(UMCG_TASK_ALIGN, 2 * sizeof(*heap));
	ck_assert_ptr_nonnull(heap);
	ck_assert(is_aligned(&heap[0]) && is_aligned(&heap[1]));
	free(heap);
}
END_TEST

START_TEST(test_state_constants)
{
	ck_assert_uint_eq(UMCG_TASK_NONE, 0);
	ck_assert_uint_eq(UMCG_TASK_RUNNING, 1);
	ck_assert_uint_eq(UMCG_TASK_RUNNABLE, 2);
	ck_assert_uint_eq(UMCG_TASK_BLOCKED, 3);
	ck_assert_uint_eq(UMCG_TASK_MASK, 0x00ff);
	/* Every state lies inside the state mask and outside the flag mask. */
	ck_assert_uint_eq(UMCG_TASK_BLOCKED & ~UMCG_TASK_MASK, 0);
	ck_assert_uint_eq(UMCG_TASK_BLOCKED & UMCG_TF_MASK, 0);
	ck_assert_uint_eq(UMCG_TASK_RUNNING & UMCG_TASK_RUNNABLE & UMCG_TASK_MASK, 0);
}
END_TEST

START_TEST(test_flag_constants)
{
	ck_assert_uint_eq(UMCG_TF_PREEMPT, 0x0100);
	ck_assert_uint_eq(UMCG_TF_COND_WAIT, 0x0200);
	ck_assert_uint_eq(UMCG_TF_MASK, 0xff00);
	ck_assert_uint_eq((UMCG_TF_PREEMPT | UMCG_TF_COND_WAIT) & ~UMCG_TF_MASK, 0);
	ck_assert_uint_eq(UMCG_TF_MASK & UMCG_TASK_MASK, 0);
	/* Bits 16-31 stay free for user space. */
	ck_assert_uint_eq(UMCG_TF_MASK | UMCG_TASK_MASK, 0xffff);
}
END_TEST

START_TEST(test_ctl_constants)
{
	ck_assert_uint_eq(UMCG_CTL_REGISTER, 0x00001);
	ck_assert_uint_eq(UMCG_CTL_UNREGISTER, 0x00002);
	ck_assert_uint_eq(UMCG_CTL_WORKER, 0x10000);
	ck_assert_uint_eq(UMCG_CTL_REGISTER & UMCG_CTL_UNREGISTER, 0);
	ck_assert_uint_eq((UMCG_CTL_REGISTER | UMCG_CTL_UNREGISTER) & UMCG_CTL_WORKER, 0);
}
END_TEST

START_TEST(test_version)
{
	char expect[32];

	snprintf(expect, sizeof(expect), "%d.%d.%d", UMCG_VERSION_MAJOR, UMCG_VERSION_MINOR,
		 UMCG_VERSION_PATCH);
	ck_assert_ptr_nonnull(umcg_version());
	ck_assert_str_eq(umcg_version(), expect);
}
END_TEST

static Suite *abi_suite(void)
{
	Suite *s = suite_create("abi");
	TCase *tc = tcase_create("layout");

	tcase_set_timeout(tc, 10);
	tcase_add_test(tc, test_size_and_alignment);
	tcase_add_test(tc, test_field_offsets);
	tcase_add_test(tc, test_field_sizes);
	tcase_add_test(tc, test_object_alignment);
	suite_add_tcase(s, tc);

	tc = tcase_create("constants");
	tcase_set_timeout(tc, 10);
	tcase_add_test(tc, test_state_constants);
	tcase_add_test(tc, test_flag_constants);
	tcase_add_test(tc, test_ctl_constants);
	tcase_add_test(tc, test_version);
	suite_add_tcase(s, tc);
	return s;
}

H_TEST_MAIN(abi_suite, NULL)
