/* SPDX-License-Identifier: MIT */
/*
 * test_list.c - the runnable-list helpers on hand-built lists.
 *
 * No backend is involved: each test builds a server's list by pushing
 * tasks the way the kernel does (newest first) and checks
 * umcg_runnable_take(), umcg_runnable_count(), umcg_runnable_for_each()
 * and umcg_runnable_sort_oldest() against it. Sorting is checked against
 * qsort() on (runnable_ts, push order), which is the contract: ascending
 * timestamps, ties in push order.
 *
 * <umcg/umcg.h> comes first to prove it is self-contained.
 */
#include <umcg/umcg.h>

#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "test_common.h"

#define MAX_TASKS 1000

static struct umcg_task server;
static struct umcg_task tasks[MAX_TASKS];

/* Empty the server's list and zero every task. */
static void reset(void)
{
	memset(&server, 0, sizeof(server));
	memset(tasks, 0, sizeof(tasks));
}

/* Push @t on the server's list as the kernel does. */
static void push(struct umcg_task *t)
{
	t->runnable_workers_ptr = server.runnable_workers_ptr;
	server.runnable_workers_ptr = (uint64_t)(uintptr_t)t;
}

/* Push tasks[0..n-1] with the given timestamps, tasks[0] first. */
static void push_n(size_t n, const uint64_t *ts)
{
	size_t i;

	for (i = 0; i < n; i++) {
		tasks[i].runnable_ts = ts[i];
		push(&tasks[i]);
	}
}

static size_t index_of(const struct umcg_task *t)
{
	ck_assert_msg(t >= tasks && t < tasks + MAX_TASKS, "%p is not one of the tasks",
		      (const void *)t);
	return (size_t)(t - tasks);
}

/* ---- take and count --------------------------------------------------- */

START_TEST(test_take_null_and_empty)
{
	reset();
	ck_assert_ptr_null(umcg_runnable_take(NULL));
	ck_assert_ptr_null(umcg_runnable_take(&server));
	ck_assert_uint_eq(server.runnable_workers_ptr, 0);
	ck_assert_uint_eq(umcg_runnable_count(NULL), 0);
}
END_TEST

START_TEST(test_take_detaches_whole_list)
{
	size_t i;

	reset();
	for (i = 0; i < 5; i++)
		push(&tasks[i]);
	ck_assert_ptr_eq(umcg_runnable_take(&server), &tasks[4]);
	ck_assert_uint_eq(server.runnable_workers_ptr, 0);
	/* A second take finds nothing; pushes after a take start a new list. */
	ck_assert_ptr_null(umcg_runnable_take(&server));
	push(&tasks[7]);
	ck_assert_ptr_eq(umcg_runnable_take(&server), &tasks[7]);
	ck_assert_ptr_null(umcg_runnable_next(&tasks[7]));
}
END_TEST

START_TEST(test_take_leaves_other_fields)
{
	reset();
	server.state = UMCG_TASK_RUNNABLE | UMCG_TF_COND_WAIT | 0xabcd0000U;
	server.next_tid = 1234;
	server.runnable_ts = 99;
	push(&tasks[0]);
	ck_assert_ptr_eq(umcg_runnable_take(&server), &tasks[0]);
	ck_assert_uint_eq(server.state, UMCG_TASK_RUNNABLE | UMCG_TF_COND_WAIT | 0xabcd0000U);
	ck_assert_uint_eq(server.next_tid, 1234);
	ck_assert_uint_eq(server.runnable_ts, 99);
}
END_TEST

START_TEST(test_count)
{
	static const size_t sizes[] = { 1, 2, 3, 17, MAX_TASKS };
	size_t s, i;

	for (s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
		reset();
		for (i = 0; i < sizes[s]; i++)
			push(&tasks[i]);
		ck_assert_uint_eq(umcg_runnable_count(umcg_runnable_take(&server)), sizes[s]);
	}
}
END_TEST

/* ---- for_each --------------------------------------------------------- */

START_TEST(test_for_each_order)
{
	struct umcg_task *pos, *tmp;
	size_t i, n = 0;

	reset();
	for (i = 0; i < 6; i++)
		push(&tasks[i]);
	umcg_runnable_for_each(pos, tmp, umcg_runnable_take(&server)) {
		ck_assert_uint_eq(index_of(pos), 5 - n);
		n++;
	}
	ck_assert_uint_eq(n, 6);

	n = 0;
	umcg_runnable_for_each(pos, tmp, (struct umcg_task *)NULL)
		n++;
	ck_assert_uint_eq(n, 0);
}
END_TEST

START_TEST(test_for_each_body_clobbers_next)
{
	struct umcg_task *pos, *tmp, *rev = NULL;
	size_t i, n = 0;

	reset();
	for (i = 0; i < 8; i++)
		push(&tasks[i]);
	/*
	 * The body reuses pos->runnable_workers_ptr twice over: it poisons
	 * it, then relinks pos onto another list. The walk must not notice.
	 */
	umcg_runnable_for_each(pos, tmp, umcg_runnable_take(&server)) {
		pos->runnable_workers_ptr = UINT64_C(0xdeadbeefdeadbee0);
		pos->runnable_workers_ptr = (uint64_t)(uintptr_t)rev;
		rev = pos;
		n++;
	}
	ck_assert_uint_eq(n, 8);
	/* rev is the reversed list: push order. */
	for (i = 0, pos = rev; pos; pos = umcg_runnable_next(pos), i++)
		ck_assert_uint_eq(index_of(pos), i);
	ck_assert_uint_eq(i, 8);
}
END_TEST

START_TEST(test_for_each_single)
{
	struct umcg_task *pos, *tmp;
	size_t n = 0;

	reset();
	push(&tasks[3]);
	umcg_runnable_for_each(pos, tmp, umcg_runnable_take(&server)) {
		ck_assert_ptr_eq(pos, &tasks[3]);
		ck_assert_ptr_null(tmp);
		pos->runnable_workers_ptr = (uint64_t)(uintptr_t)&tasks[9];
		n++;
	}
	ck_assert_uint_eq(n, 1);
}
END_TEST

/* ---- sort_oldest -------------------------------------------------------- */

struct key {
	uint64_t ts;
	size_t push; /* position in push order */
};

static int key_cmp(const void *a, const void *b)
{
	const struct key *x = a, *y = b;

	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	return x->push < y->push ? -1 : x->push > y->push;
}

/*
 * Push n tasks with timestamps @ts (tasks[i] pushed i-th), sort, and compare
 * with qsort() on (ts, push order). Also checks that the result is
 * NULL-terminated and holds each task once.
 */
static void check_sort(size_t n, const uint64_t *ts)
{
	static struct key keys[MAX_TASKS];
	static unsigned char seen[MAX_TASKS];
	struct umcg_task *head, *pos;
	size_t i;

	ck_assert_uint_le(n, MAX_TASKS);
	reset();
	push_n(n, ts);
	for (i = 0; i < n; i++) {
		keys[i].ts = ts[i];
		keys[i].push = i;
	}
	qsort(keys, n, sizeof(keys[0]), key_cmp);
	memset(seen, 0, sizeof(seen));

	head = umcg_runnable_sort_oldest(umcg_runnable_take(&server));
	if (n == 0) {
		ck_assert_ptr_null(head);
		return;
	}
	for (i = 0, pos = head; pos && i < n; pos = umcg_runnable_next(pos), i++) {
		size_t idx = index_of(pos);

		ck_assert_msg(!seen[idx], "task %zu appears twice", idx);
		seen[idx] = 1;
		ck_assert_msg(idx == keys[i].push,
			      "position %zu: task %zu (ts %llu), expected task %zu (ts %llu)", i,
			      idx, (unsigned long long)pos->runnable_ts, keys[i].push,
			      (unsigned long long)keys[i].ts);
		ck_assert_uint_eq(pos->runnable_ts, ts[idx]);
	}
	ck_assert_msg(pos == NULL, "list longer than %zu", n);
	ck_assert_uint_eq(i, n);
}

START_TEST(test_sort_empty_and_one)
{
	static const uint64_t one[] = { 42 };

	ck_assert_ptr_null(umcg_runnable_sort_oldest(NULL));
	check_sort(0, NULL);
	check_sort(1, one);
}
END_TEST

START_TEST(test_sort_two)
{
	static const uint64_t in_order[] = { 1, 2 }, out_of_order[] = { 2, 1 }, tie[] = { 5, 5 };

	check_sort(2, in_order);
	check_sort(2, out_of_order);
	check_sort(2, tie);
}
END_TEST

START_TEST(test_sort_all_equal_keeps_push_order)
{
	static uint64_t ts[MAX_TASKS];
	struct umcg_task *pos;
	size_t i;

	for (i = 0; i < MAX_TASKS; i++)
		ts[i] = 7;
	check_sort(MAX_TASKS, ts);

	/* Spelled out: the result is the reverse of the list's order. */
	reset();
	push_n(5, ts);
	pos = umcg_runnable_sort_oldest(umcg_runnable_take(&server));
	for (i = 0; i < 5; i++, pos = umcg_runnable_next(pos))
		ck_assert_ptr_eq(pos, &tasks[i]);
	ck_assert_ptr_null(pos);
}
END_TEST

START_TEST(test_sort_already_sorted)
{
	static uint64_t ts[MAX_TASKS];
	size_t i;

	/* Pushed oldest first: the list is newest first, the sort reverses it. */
	for (i = 0; i < MAX_TASKS; i++)
		ts[i] = 1000 + i;
	check_sort(MAX_TASKS, ts);
	check_sort(3, ts);
}
END_TEST

START_TEST(test_sort_reverse_sorted)
{
	static uint64_t ts[MAX_TASKS];
	size_t i;

	/* Pushed newest first: the list is already oldest first. */
	for (i = 0; i < MAX_TASKS; i++)
		ts[i] = 5000 - i;
	check_sort(MAX_TASKS, ts);
	check_sort(3, ts);
}
END_TEST

/* xorshift64: a fixed, reproducible sequence. */
static uint64_t next_rand(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

START_TEST(test_sort_random)
{
	static uint64_t ts[MAX_TASKS];
	static const size_t sizes[] = { 3, 4, 5, 7, 8, 9, 31, 32, 33, 100, 257, MAX_TASKS };
	uint64_t seed = UINT64_C(0x9e3779b97f4a7c15);
	size_t s, i;
	int round;

	for (round = 0; round < 20; round++) {
		for (s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
			/* Odd rounds draw from a small range: many ties. */
			uint64_t range = (round & 1) ? 8 : UINT64_MAX;

			for (i = 0; i < sizes[s]; i++)
				ts[i] = range == UINT64_MAX ? next_rand(&seed) :
							      next_rand(&seed) % range;
			check_sort(sizes[s], ts);
		}
	}
}
END_TEST

START_TEST(test_sort_extreme_timestamps)
{
	static const uint64_t ts[] = { UINT64_MAX, 0, UINT64_MAX, 1, 0, UINT64_MAX - 1 };

	check_sort(sizeof(ts) / sizeof(ts[0]), ts);
}
END_TEST

static Suite *list_suite(void)
{
	Suite *s = suite_create("list");
	TCase *tc = tcase_create("take-count");

	tcase_set_timeout(tc, 10);
	tcase_add_test(tc, test_take_null_and_empty);
	tcase_add_test(tc, test_take_detaches_whole_list);
	tcase_add_test(tc, test_take_leaves_other_fields);
	tcase_add_test(tc, test_count);
	suite_add_tcase(s, tc);

	tc = tcase_create("for-each");
	tcase_set_timeout(tc, 10);
	tcase_add_test(tc, test_for_each_order);
	tcase_add_test(tc, test_for_each_body_clobbers_next);
	tcase_add_test(tc, test_for_each_single);
	suite_add_tcase(s, tc);

	tc = tcase_create("sort-oldest");
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_sort_empty_and_one);
	tcase_add_test(tc, test_sort_two);
	tcase_add_test(tc, test_sort_all_equal_keeps_push_order);
	tcase_add_test(tc, test_sort_already_sorted);
	tcase_add_test(tc, test_sort_reverse_sorted);
	tcase_add_test(tc, test_sort_random);
	tcase_add_test(tc, test_sort_extreme_timestamps);
	suite_add_tcase(s, tc);
	return s;
}

H_TEST_MAIN(list_suite, NULL)
