/* SPDX-License-Identifier: MIT */
/*
 * tests/abi/conformance_list.c - the conformance suite's "list" tests:
 * the runnable-list helpers on lists the backend built (see conformance.c).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "conformance.h"

/* ==== Runnable-list helpers on lists the backend built ================== */

START_TEST(s3r08_take_empty)
{
	struct h_server *s = h_server_register(CLK);
	struct umcg_task *fake = h_task_new(), *elem = h_task_new();

	ck_assert_ptr_null(umcg_runnable_take(NULL));
	ck_assert_ptr_null(umcg_runnable_take(&s->task));
	ck_assert_uint_eq(umcg_runnable_count(NULL), 0);
	ck_assert_ptr_null(umcg_runnable_sort_oldest(NULL));
	/* Any task's list can be taken, registered or not. */
	fake->runnable_workers_ptr = (uint64_t)(uintptr_t)elem;
	ck_assert_ptr_eq(umcg_runnable_take(fake), elem);
	ck_assert_uint_eq(fake->runnable_workers_ptr, 0);
	ck_assert_ptr_null(umcg_runnable_take(fake));
}
END_TEST

START_TEST(s3r06_lifo_order)
{
	struct h_server *s = h_server_register(CLK);
	struct h_worker *w[4];
	struct umcg_task *head, *pos, *tmp, *rev = NULL, *sorted;
	size_t n = 0;
	int i;

	for (i = 0; i < 4; i++) {
		w[i] = h_worker_start(s->tid, CLK, NULL, NULL);
		h_server_wait_listed(s, w[i]);
	}
	head = umcg_runnable_take(&s->task);
	ck_assert_uint_eq(h_load(&s->task.runnable_workers_ptr), 0);
	ck_assert_uint_eq(umcg_runnable_count(head), 4);
	/* Newest first. */
	for (i = 3, pos = head; i >= 0; i--, pos = umcg_runnable_next(pos))
		ck_assert_msg(pos == &w[i]->task, "list position %d is not W%d", 3 - i, i);
	ck_assert_ptr_null(pos);
	for (i = 1; i < 4; i++)
		ck_assert_uint_le(h_load(&w[i - 1]->task.runnable_ts),
				  h_load(&w[i]->task.runnable_ts));
	/* for_each visits the same order and lets the body relink pos. */
	umcg_runnable_for_each(pos, tmp, head) {
		ck_assert_ptr_eq(pos, &w[3 - n]->task);
		ck_assert_state(pos, UMCG_TASK_RUNNABLE);
		pos->runnable_workers_ptr = (uint64_t)(uintptr_t)rev;
		rev = pos;
		n++;
	}
	ck_assert_uint_eq(n, 4);
	ck_assert_ptr_eq(rev, &w[0]->task);
	/* Back to newest first, then sorted: oldest first. */
	head = NULL;
	while (rev) {
		tmp = umcg_runnable_next(rev);
		rev->runnable_workers_ptr = (uint64_t)(uintptr_t)head;
		head = rev;
		rev = tmp;
	}
	sorted = umcg_runnable_sort_oldest(head);
	for (i = 0, pos = sorted; i < 4; i++, pos = umcg_runnable_next(pos))
		ck_assert_msg(pos == &w[i]->task, "sorted position %d is not W%d", i, i);
	ck_assert_ptr_null(pos);
}
END_TEST

static void yield_once_worker(struct h_worker *w)
{
	atomic_store(&w->r[0], h_yield(w));
}

START_TEST(s3r07_sort_oldest_yields)
{
	static const int order[3] = { 2, 0, 1 };
	struct h_server *s = h_server_register(CLK);
	struct h_worker *w[3];
	struct umcg_task *head, *pos;
	int i;

	for (i = 0; i < 3; i++) {
		w[i] = h_worker_start(s->tid, CLK, yield_once_worker, NULL);
		h_server_wait_listed(s, w[i]);
	}
	h_server_collect(s);
	/* Run them in another order than they registered; each yields once. */
	for (i = 0; i < 3; i++) {
		ck_assert(h_server_unqueue(s, w[order[i]]));
		ck_assert_int_eq(h_server_switch(s, w[order[i]], h_now(CLK) + h_liveness_ns()), 0);
		ck_assert_uint_eq(h_load(&s->task.next_tid), 0);
	}
	head = umcg_runnable_take(&s->task);
	ck_assert_uint_eq(umcg_runnable_count(head), 3);
	for (i = 2, pos = head; i >= 0; i--, pos = umcg_runnable_next(pos))
		ck_assert_msg(pos == &w[order[i]]->task, "list position %d is not W%d", 2 - i,
			      order[i]);
	head = umcg_runnable_sort_oldest(head);
	for (i = 0, pos = head; i < 3; i++, pos = umcg_runnable_next(pos)) {
		ck_assert_msg(pos == &w[order[i]]->task, "sorted position %d is not W%d", i,
			      order[i]);
		if (i)
			ck_assert_uint_le(h_load(&w[order[i - 1]]->task.runnable_ts),
					  h_load(&pos->runnable_ts));
	}
	ck_assert_ptr_null(pos);
}
END_TEST

/* Build a list newest first from @ts[0..n) (ts[0] is the head). */
static struct umcg_task *synthetic_list(struct umcg_task *tasks, const uint64_t *ts, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		memset(&tasks[i], 0, sizeof(tasks[i]));
		tasks[i].runnable_ts = ts[i];
		tasks[i].runnable_workers_ptr = i + 1 < n ? (uint64_t)(uintptr_t)&tasks[i + 1] : 0;
	}
	return n ? &tasks[0] : NULL;
}

/*
 * The expected order: by runnable_ts; among equal stamps, push order,
 * which is the reverse of list order (higher index first).
 */
static bool sorted_before(const struct umcg_task *tasks, size_t a, size_t b)
{
	if (tasks[a].runnable_ts != tasks[b].runnable_ts)
		return tasks[a].runnable_ts < tasks[b].runnable_ts;
	return a > b;
}

static void check_sort(size_t n, const uint64_t *ts)
{
	struct umcg_task *tasks = aligned_alloc(UMCG_TASK_ALIGN, (n ? n : 1) * sizeof(*tasks));
	struct umcg_task *head, *pos;
	size_t i, prev = 0;

	ck_assert_ptr_nonnull(tasks);
	head = umcg_runnable_sort_oldest(synthetic_list(tasks, ts, n));
	ck_assert_uint_eq(umcg_runnable_count(head), n);
	for (i = 0, pos = head; pos; i++, pos = umcg_runnable_next(pos)) {
		size_t idx = (size_t)(pos - tasks);

		ck_assert_uint_lt(idx, n);
		if (i)
			ck_assert_msg(sorted_before(tasks, prev, idx),
				      "n=%zu: element %zu (ts %" PRIu64 ") after %zu (ts %" PRIu64
				      ")",
				      n, idx, (uint64_t)tasks[idx].runnable_ts, prev,
				      (uint64_t)tasks[prev].runnable_ts);
		prev = idx;
	}
	ck_assert_uint_eq(i, n);
	free(tasks);
}

START_TEST(s3r07_sort_oldest_synthetic)
{
	static const uint64_t seven[7] = { 5, 3, 3, 9, 1, 3, 9 };
	static const uint64_t same[5] = { 4, 4, 4, 4, 4 };
	uint64_t *big = malloc(1000 * sizeof(*big));
	uint32_t seed = 12345;
	size_t i;

	ck_assert_ptr_nonnull(big);
	check_sort(0, NULL);
	check_sort(1, seven);
	check_sort(7, seven);
	check_sort(5, same);
	for (i = 0; i < 1000; i++)
		big[i] = 1000 - i; /* newest first: already the usual case */
	check_sort(1000, big);
	for (i = 0; i < 1000; i++)
		big[i] = i;
	check_sort(1000, big);
	for (i = 0; i < 1000; i++)
		big[i] = h_rand(&seed) % 50;
	check_sort(1000, big);
	free(big);
}
END_TEST

START_TEST(s3r07_count)
{
	struct umcg_task *tasks = aligned_alloc(UMCG_TASK_ALIGN, 1000 * sizeof(*tasks));
	uint64_t *ts = calloc(1000, sizeof(*ts));

	ck_assert_ptr_nonnull(tasks);
	ck_assert_ptr_nonnull(ts);
	ck_assert_uint_eq(umcg_runnable_count(NULL), 0);
	ck_assert_uint_eq(umcg_runnable_count(synthetic_list(tasks, ts, 1)), 1);
	ck_assert_uint_eq(umcg_runnable_count(synthetic_list(tasks, ts, 2)), 2);
	ck_assert_uint_eq(umcg_runnable_count(synthetic_list(tasks, ts, 1000)), 1000);
	free(tasks);
	free(ts);
}
END_TEST

void conformance_add_list(Suite *s)
{
	TCase *tc = tcase(s, "list", 10);

	tcase_add_test(tc, s3r08_take_empty);
	tcase_add_test(tc, s3r06_lifo_order);
	tcase_add_test(tc, s3r07_sort_oldest_yields);
	tcase_add_test(tc, s3r07_sort_oldest_synthetic);
	tcase_add_test(tc, s3r07_count);
}
