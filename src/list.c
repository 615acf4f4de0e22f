/* SPDX-License-Identifier: MIT */
/*
 * list.c - helpers for a server's runnable-worker list.
 *
 * The backend pushes workers with a CAS on the server's
 * runnable_workers_ptr; user space only ever takes the whole list with one
 * exchange, so there is no pop and no ABA problem. The exchange is seq_cst:
 * it pairs with the pushers' seq_cst CAS (their stores of runnable_ts and
 * of the next pointer happen before it), and it orders the server's earlier
 * store of RUNNABLE|TF_COND_WAIT before the take, which is what closes the
 * lost-wakeup window (doc/umcg-abi.md §7 rule 7).
 */
#include <stddef.h>

#include "atomics.h"
#include "backend.h"

UMCG_API struct umcg_task *umcg_runnable_take(struct umcg_task *server)
{
	if (!server)
		return NULL;
	return (struct umcg_task *)(uintptr_t)umcg__xchg(&server->runnable_workers_ptr, 0,
							 umcg__seq_cst);
}

UMCG_API size_t umcg_runnable_count(const struct umcg_task *head)
{
	size_t n = 0;

	for (; head; head = umcg_runnable_next(head))
		n++;
	return n;
}

static void set_next(struct umcg_task *t, struct umcg_task *next)
{
	t->runnable_workers_ptr = (uint64_t)(uintptr_t)next;
}

/* Merge two lists sorted by runnable_ts; on ties @a's element goes first. */
static struct umcg_task *merge(struct umcg_task *a, struct umcg_task *b)
{
	struct umcg_task *head = NULL, *tail = NULL, *pick;

	while (a && b) {
		if (b->runnable_ts < a->runnable_ts) {
			pick = b;
			b = umcg_runnable_next(b);
		} else {
			pick = a;
			a = umcg_runnable_next(a);
		}
		if (tail)
			set_next(tail, pick);
		else
			head = pick;
		tail = pick;
	}
	pick = a ? a : b;
	if (tail)
		set_next(tail, pick);
	else
		head = pick;
	return head;
}

UMCG_API struct umcg_task *umcg_runnable_sort_oldest(struct umcg_task *head)
{
	struct umcg_task *rev = NULL, *next;
	struct umcg_task *bins[64] = { NULL };
	struct umcg_task *run;
	int i;

	/* Reverse first: the list is newest first, so the reversed list is
	 * in push order, and a stable sort keeps push order among ties. */
	while (head) {
		next = umcg_runnable_next(head);
		set_next(head, rev);
		rev = head;
		head = next;
	}
	/* Bottom-up merge sort: bins[i] holds a sorted run of 2^i elements,
	 * older elements in higher bins, which merge() keeps first on ties. */
	while (rev) {
		run = rev;
		rev = umcg_runnable_next(rev);
		set_next(run, NULL);
		for (i = 0; i < 64 && bins[i]; i++) {
			run = merge(bins[i], run);
			bins[i] = NULL;
		}
		if (i == 64)
			i = 63;
		bins[i] = run;
	}
	run = NULL;
	for (i = 0; i < 64; i++) {
		if (bins[i])
			run = run ? merge(bins[i], run) : bins[i];
	}
	return run;
}
