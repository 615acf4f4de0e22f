/* SPDX-License-Identifier: MIT */
/*
 * tests/abi/conformance_race.c - the conformance suite's "race" tests:
 * the races a server loop must survive (see conformance.c).
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

/* ==== Races ============================================================= */

struct race_ctx {
	struct h_server *s;
	struct h_worker *w[4];
	int nw;
	atomic_ulong iteration;
	atomic_int oncpu;
	atomic_ulong yields;
};

static void random_yield_worker(struct h_worker *w)
{
	uint32_t seed = (uint32_t)atomic_load(&w->tid) | 1;
	int ret;

	while (!atomic_load(&w->stop)) {
		h_spin_us(h_rand(&seed) % 100);
		atomic_fetch_add_explicit(&w->progress, 1, memory_order_relaxed);
		ret = h_yield(w);
		H_CHECK(ret == 0, "a worker's yield gave %d", ret);
	}
}

/*
 * A worker that yields while its server is between taking its list and
 * calling umcg_wait() must make that umcg_wait() return -EAGAIN (or be
 * found by the next take): never a server asleep with a worker on its list.
 * The worker runs past its short slice about half the time, and the server
 * then spends a random few microseconds between its take and its wait (as
 * a real policy would), so the yield often lands inside that window.
 */
START_TEST(s7r07_race_wakeup_between_take_and_wait)
{
	const unsigned long n = 20000UL * h_stress();
	struct race_ctx c = { 0 };
	struct h_watchdog *wd;
	atomic_ulong *counters[1];
	unsigned long eagain = 0, timedout = 0, ran = 0, empty = 0;
	uint32_t seed = 0x9e3779b9U;
	bool woken = false;
	struct h_worker *w;

	c.s = h_server_register(CLK);
	w = h_worker_start(c.s->tid, CLK, random_yield_worker, NULL);
	counters[0] = &c.iteration;
	wd = h_watchdog_start("s7r07_race_wakeup_between_take_and_wait", counters, 1, &c.iteration,
			      2000);
	while (atomic_load(&c.iteration) < n) {
		struct h_worker *next = NULL;
		uint64_t deadline = 0;
		bool consumed;
		int ret;

		h_set_state(&c.s->task, UMCG_TASK_RUNNABLE | UMCG_TF_COND_WAIT);
		h_server_collect(c.s);
		/*
		 * Woken with nothing to take: the late wake-up of a yield whose
		 * push an earlier take had already seen. Legal, and counted.
		 */
		if (woken && !h_server_queued(c.s, w))
			empty++;
		if (h_server_unqueue(c.s, w)) {
			next = w;
			deadline = h_now(CLK) + 5000 + h_rand(&seed) % 30000;
		} else {
			h_spin_us(h_rand(&seed) % 20);
		}
		h_store(&c.s->task.next_tid, next ? (uint32_t)atomic_load(&w->tid) : 0U);
		/* No timeout without a worker to run: a lost wakeup hangs here. */
		ret = umcg_wait(0, deadline);
		consumed = next && h_load(&c.s->task.next_tid) == 0;
		if (next && !consumed)
			h_server_requeue(c.s, w);
		if (ret == -EAGAIN) {
			eagain++;
			if (consumed)
				ck_abort_msg("iteration %lu: -EAGAIN after next_tid was used",
					     atomic_load(&c.iteration));
		} else if (ret == -ETIMEDOUT) {
			if (!consumed)
				ck_abort_msg("iteration %lu: -ETIMEDOUT and next_tid unused",
					     atomic_load(&c.iteration));
			timedout++;
		} else if (ret != 0) {
			ck_abort_msg("iteration %lu: umcg_wait() gave %d",
				     atomic_load(&c.iteration), ret);
		}
		if (h_state(&c.s->task) != UMCG_TASK_RUNNING)
			ck_abort_msg("iteration %lu: server state %#x after umcg_wait() gave %d",
				     atomic_load(&c.iteration), h_state(&c.s->task), ret);
		ran += consumed;
		woken = !(consumed && ret == -ETIMEDOUT);
		atomic_fetch_add(&c.iteration, 1);
	}
	atomic_store(&w->stop, 1);
	h_watchdog_stop(wd);
	printf("s7r07_race_wakeup_between_take_and_wait: %lu iterations, %lu runs, %lu -EAGAIN, "
	       "%lu -ETIMEDOUT, %lu yields, %lu wake-ups with an empty list\n",
	       n, ran, eagain, timedout, atomic_load(&w->progress), empty);
	ck_assert_uint_gt(ran, 0);
	ck_assert_uint_gt(atomic_load(&w->progress), 0);
}
END_TEST

static void pingpong_worker(struct h_worker *w)
{
	struct race_ctx *c = w->arg;
	uint32_t seed = (uint32_t)atomic_load(&w->tid) | 1;
	int ret, was;

	while (!atomic_load(&w->stop)) {
		was = atomic_fetch_add(&c->oncpu, 1);
		H_CHECK(was == 0, "W%d runs while %d other worker(s) of its server run", w->index,
			was);
		atomic_fetch_add_explicit(&w->progress, 1, memory_order_relaxed);
		h_spin_us(h_rand(&seed) % 5);
		atomic_fetch_sub(&c->oncpu, 1);
		ret = h_yield(w);
		H_CHECK(ret == 0, "a worker's yield gave %d", ret);
	}
}

START_TEST(s7r08_race_yield_pingpong)
{
	const unsigned long n = 20000UL * h_stress();
	struct race_ctx c = { 0 };
	atomic_ulong *counters[1];
	struct h_watchdog *wd;
	int i;

	c.nw = 3;
	c.s = h_server_register(CLK);
	for (i = 0; i < c.nw; i++)
		c.w[i] = h_worker_start(c.s->tid, CLK, pingpong_worker, &c);
	/*
	 * All registered and asleep first: from then on only the running
	 * worker's push wakes the server, so one worker runs at a time (a
	 * registration's late wake-up could otherwise start a second one).
	 */
	for (i = 0; i < c.nw; i++)
		h_server_wait_listed(c.s, c.w[i]);
	counters[0] = &c.iteration;
	wd = h_watchdog_start("s7r08_race_yield_pingpong", counters, 1, &c.iteration, 2000);
	while (atomic_load(&c.iteration) < n) {
		struct h_worker *next = NULL;
		bool consumed;
		int ret;

		h_set_state(&c.s->task, UMCG_TASK_RUNNABLE | UMCG_TF_COND_WAIT);
		h_server_collect(c.s);
		if (c.s->nq) {
			next = c.s->queue[0];
			h_server_unqueue(c.s, next);
		}
		h_store(&c.s->task.next_tid, next ? (uint32_t)atomic_load(&next->tid) : 0U);
		ret = umcg_wait(0, 0);
		consumed = next && h_load(&c.s->task.next_tid) == 0;
		if (next && !consumed)
			h_server_requeue(c.s, next);
		if (ret != 0 && ret != -EAGAIN)
			ck_abort_msg("switch %lu: umcg_wait() gave %d", atomic_load(&c.iteration),
				     ret);
		if (consumed && ret != 0)
			ck_abort_msg("switch %lu: next_tid used but umcg_wait() gave %d",
				     atomic_load(&c.iteration), ret);
		if (consumed)
			atomic_fetch_add(&c.iteration, 1);
	}
	for (i = 0; i < c.nw; i++)
		atomic_store(&c.w[i]->stop, 1);
	h_watchdog_stop(wd);
	printf("s7r08_race_yield_pingpong: %lu switches, %lu -EAGAIN, %lu/%lu/%lu runs\n", n,
	       c.s->eagains, atomic_load(&c.w[0]->progress), atomic_load(&c.w[1]->progress),
	       atomic_load(&c.w[2]->progress));
	for (i = 0; i < c.nw; i++)
		ck_assert_uint_gt(atomic_load(&c.w[i]->progress), 0);
}
END_TEST

static void kick_or_yield_worker(struct h_worker *w)
{
	struct race_ctx *c = w->arg;
	uint32_t seed = (uint32_t)atomic_load(&w->tid) | 1;
	int ret;

	while (!atomic_load(&w->stop)) {
		h_spin_us(h_rand(&seed) % 150);
		atomic_fetch_add_explicit(&w->progress, 1, memory_order_relaxed);
		if (h_rand(&seed) & 1) {
			atomic_fetch_add(&c->yields, 1);
			ret = h_yield(w);
			H_CHECK(ret == 0, "a worker's yield gave %d", ret);
		}
	}
}

START_TEST(s8r04_race_kick_vs_yield)
{
	const unsigned long n = 4000UL * h_stress();
	struct race_ctx c = { 0 };
	atomic_ulong *counters[3];
	struct h_watchdog *wd;
	unsigned long preempts = 0;
	int i;

	c.nw = 2;
	c.s = h_server_register(CLK);
	for (i = 0; i < c.nw; i++)
		c.w[i] = h_worker_start(c.s->tid, CLK, kick_or_yield_worker, &c);
	counters[0] = &c.iteration;
	counters[1] = &c.w[0]->progress;
	counters[2] = &c.w[1]->progress;
	wd = h_watchdog_start("s8r04_race_kick_vs_yield", counters, 3, &c.iteration, 2000);
	while (atomic_load(&c.iteration) < n) {
		struct h_worker *next = NULL;
		bool consumed;
		int ret;

		h_set_state(&c.s->task, UMCG_TASK_RUNNABLE | UMCG_TF_COND_WAIT);
		h_server_collect(c.s);
		if (c.s->nq) {
			next = c.s->queue[0];
			h_server_unqueue(c.s, next);
		}
		h_store(&c.s->task.next_tid, next ? (uint32_t)atomic_load(&next->tid) : 0U);
		ret = umcg_wait(0, h_now(CLK) + 50000);
		consumed = next && h_load(&c.s->task.next_tid) == 0;
		if (next && !consumed)
			h_server_requeue(c.s, next);
		if (ret != 0 && ret != -EAGAIN && ret != -ETIMEDOUT)
			ck_abort_msg("iteration %lu: umcg_wait() gave %d",
				     atomic_load(&c.iteration), ret);
		if (ret == -ETIMEDOUT) {
			/* Preempt whoever runs: every worker not queued and RUNNING. */
			for (i = 0; i < c.nw; i++) {
				struct h_worker *x = c.w[i];
				int kret;

				if (h_server_queued(c.s, x) ||
				    !h_cas_state(&x->task, UMCG_TASK_RUNNING,
						 UMCG_TASK_RUNNING | UMCG_TF_PREEMPT))
					continue;
				kret = umcg_kick(0, atomic_load(&x->tid));
				if (kret)
					ck_abort_msg("iteration %lu: umcg_kick() gave %d",
						     atomic_load(&c.iteration), kret);
				preempts++;
			}
		}
		atomic_fetch_add(&c.iteration, 1);
	}
	for (i = 0; i < c.nw; i++)
		atomic_store(&c.w[i]->stop, 1);
	h_watchdog_stop(wd);
	printf("s8r04_race_kick_vs_yield: %lu decisions, %lu preemptions, %lu yields, %lu/%lu loops\n",
	       n, preempts, atomic_load(&c.yields), atomic_load(&c.w[0]->progress),
	       atomic_load(&c.w[1]->progress));
	ck_assert_uint_gt(preempts, 0);
	ck_assert_uint_gt(atomic_load(&c.yields), 0);
	for (i = 0; i < c.nw; i++)
		ck_assert_uint_gt(atomic_load(&c.w[i]->progress), 0);
}
END_TEST

void conformance_add_race(Suite *s)
{
	TCase *tc = tcase(s, "race", 60.0 * h_stress());

	tcase_add_test(tc, s7r07_race_wakeup_between_take_and_wait);
	tcase_add_test(tc, s7r08_race_yield_pingpong);
	tcase_add_test(tc, s8r04_race_kick_vs_yield);
}
