/* SPDX-License-Identifier: MIT */
/*
 * tests/abi/conformance_kick.c - the conformance suite's "kick" tests:
 * doc/umcg-abi.md §6 and §8: umcg_kick() and preemption (see
 * conformance.c).
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

/* ==== §6 and §8: umcg_kick(), preemption ================================ */

START_TEST(s6r01_esrch)
{
	struct umcg_task *t = server_task_for(h_gettid());
	pid_t child = h_fork_sleeper();
	struct h_idle idle;
	pid_t bad[8];
	size_t i;

	h_idle_start(&idle);
	bad[0] = h_gettid();
	bad[1] = atomic_load(&idle.tid);
	bad[2] = 0;
	bad[3] = 1;
	bad[4] = getppid();
	bad[5] = child;
	bad[6] = NO_SUCH_TID;
	bad[7] = -1;
	for (i = 0; i < 8; i++)
		ck_assert_msg(umcg_kick(0, bad[i]) == -ESRCH, "umcg_kick(0, %d) gave %d",
			      (int)bad[i], umcg_kick(0, bad[i]));
	/* Registered, then unregistered again. */
	ck_assert_int_eq(umcg_ctl(UMCG_CTL_REGISTER, t, CLK), 0);
	ck_assert_int_eq(umcg_ctl(UMCG_CTL_UNREGISTER, NULL, 0), 0);
	ck_assert_int_eq(umcg_kick(0, h_gettid()), -ESRCH);
	h_idle_stop(&idle);
	h_kill(child);
}
END_TEST

START_TEST(s6r02_bad_flags)
{
	static const uint32_t bad[] = { 1, UMCG_TF_PREEMPT, 0x80000000U };
	struct h_server *s = h_server_register(CLK);
	struct h_worker *w = h_worker_start(s->tid, CLK, NULL, NULL);
	struct h_idle idle;
	struct h_snap snap;
	size_t i;

	ck_assert_int_eq(h_server_run(s, w, 0), 0); /* w parks on the list */
	h_idle_start(&idle);
	h_snap_take(&snap, &s->task, &w->task, NULL, NULL);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ck_assert_int_eq(umcg_kick(bad[i], s->tid), -EINVAL);
		ck_assert_int_eq(umcg_kick(bad[i], atomic_load(&w->tid)), -EINVAL);
		/* The target is checked first. */
		ck_assert_int_eq(umcg_kick(bad[i], atomic_load(&idle.tid)), -ESRCH);
		ck_assert_int_eq(umcg_kick(bad[i], NO_SUCH_TID), -ESRCH);
	}
	H_ASSERT_UNCHANGED(&snap, "umcg_kick() with bad flags");
	h_idle_stop(&idle);
}
END_TEST

struct kick_ctx {
	struct h_server *s;
	struct h_worker *w;
	atomic_int server_returned;
	atomic_int rounds;
	int n;
};

static void *noop_kicker(void *arg)
{
	struct kick_ctx *c = arg;
	struct h_snap snap;
	int i;

	H_WAIT_UNTIL(atomic_load(&c->w->progress) > 0, "the worker to run");
	H_WAIT_UNTIL(h_load(&c->s->task.next_tid) == 0, "the server's next_tid to be reset");
	h_snap_take(&snap, &c->w->task, &c->s->task, NULL, NULL);
	ck_assert_state(&c->w->task, UMCG_TASK_RUNNING);
	ck_assert_state(&c->s->task, UMCG_TASK_RUNNABLE);
	for (i = 0; i < 20; i++) {
		unsigned long p;

		ck_assert_int_eq(umcg_kick(0, atomic_load(&c->w->tid)), 0);
		p = atomic_load(&c->w->progress);
		H_WAIT_UNTIL(atomic_load(&c->w->progress) > p + 1000,
			     "the kicked worker to keep running");
	}
	H_ASSERT_UNCHANGED(&snap, "a kick without TF_PREEMPT");
	ck_assert_msg(!atomic_load(&c->server_returned),
		      "a kick without TF_PREEMPT woke the server");
	atomic_store(&c->w->stop, 1);
	return NULL;
}

START_TEST(s6r05_no_preempt_is_noop)
{
	struct kick_ctx c = { 0 };
	pthread_t th;

	c.s = h_server_register(CLK);
	c.w = h_worker_start(c.s->tid, CLK, spin_until_stopped, NULL);
	th = h_thread(noop_kicker, &c);
	ck_assert_int_eq(h_server_run(c.s, c.w, 0), 0);
	atomic_store(&c.server_returned, 1);
	h_join(th);
	ck_assert_int_eq(atomic_load(&c.w->done), 1);
}
END_TEST

/*
 * preempt_loop() - @n times: run the spinning worker for a 1 ms slice,
 * then take the CPU back with TF_PREEMPT and a kick (or umcg_preempt()).
 */
static void preempt_loop(struct h_server *s, struct h_worker *w, int n, bool helper)
{
	pid_t tid = atomic_load(&w->tid);
	int i, ret;

	for (i = 0; i < n; i++) {
		unsigned long p;

		ret = h_server_run(s, w, MS);
		ck_assert_msg(ret == -ETIMEDOUT, "round %d: the slice ended with %d", i, ret);
		if (i)
			ck_assert_msg(s->last_pick_state == UMCG_TASK_RUNNABLE,
				      "round %d: the preempted worker was in state %#x", i,
				      s->last_pick_state);
		ck_assert_uint_eq(h_load(&s->task.next_tid), 0);
		ck_assert_state(&s->task, UMCG_TASK_RUNNING);
		p = atomic_load(&w->progress);
		H_WAIT_UNTIL(atomic_load(&w->progress) > p, "the worker to continue its loop");
		if (helper) {
			ret = umcg_preempt(&w->task, tid);
		} else {
			ck_assert_msg(h_cas_state(&w->task, UMCG_TASK_RUNNING,
						  UMCG_TASK_RUNNING | UMCG_TF_PREEMPT),
				      "round %d: the running worker is in state %#x", i,
				      h_state(&w->task));
			ret = umcg_kick(0, tid);
		}
		ck_assert_msg(ret == 0, "round %d: preempting gave %d", i, ret);
	}
}

START_TEST(s6r04_preempt)
{
	struct h_server *s = h_server_register(CLK);
	struct h_worker *w = h_worker_start(s->tid, CLK, spin_until_stopped, NULL);

	preempt_loop(s, w, 200, false);
	/* The last preemption, too, ends with w RUNNABLE on the list. */
	h_server_wait_listed(s, w);
	ck_assert_state(&w->task, UMCG_TASK_RUNNABLE);
}
END_TEST

START_TEST(s8r03_umcg_preempt_helper)
{
	struct h_server *s = h_server_register(CLK);
	struct h_worker *w = h_worker_start(s->tid, CLK, spin_until_stopped, NULL);
	pid_t tid = atomic_load(&w->tid);
	unsigned char *buf = h_alloc(128);
	struct h_snap snap;

	preempt_loop(s, w, 50, true);
	h_server_wait_listed(s, w);
	ck_assert_state(&w->task, UMCG_TASK_RUNNABLE);
	h_snap_take(&snap, &w->task, &s->task, NULL, NULL);
	ck_assert_int_eq(umcg_preempt(&w->task, tid), -EAGAIN);
	ck_assert_int_eq(umcg_preempt(NULL, tid), -EINVAL);
	buf[8] = UMCG_TASK_RUNNING;
	ck_assert_int_eq(umcg_preempt((void *)(buf + 8), tid), -EINVAL);
	ck_assert_uint_eq(buf[8], UMCG_TASK_RUNNING);
	ck_assert_uint_eq(buf[9], 0);
	H_ASSERT_UNCHANGED(&snap, "a refused umcg_preempt()");
}
END_TEST

/*
 * A worker asleep in a raw system call, which nobody announced, then
 * preempts itself as soon as it wakes (§10 rule 15: on the emulation it
 * is still BLOCKED then and runs user code; the library call must first
 * put it back under its server, as on the kernel, where it does not run
 * before its server runs it).
 */
static void sleep_then_preempt_self(struct h_worker *w)
{
	struct timespec ts = { 0, 200 * (long)MS };

	atomic_store(&w->r[1], (int)syscall(SYS_nanosleep, &ts, NULL));
	atomic_store(&w->r[0], umcg_preempt(&w->task, atomic_load(&w->tid)));
}

START_TEST(s10r15_detected_worker_preempts_itself)
{
	struct h_server *s;
	struct h_worker *w;

	if (emulated() && umcg_detect_get() == 0) {
		h_skip("s10r15_detected_worker_preempts_itself",
		       "detection is off (UMCG_DETECT_US=0)");
		return;
	}
	s = h_server_register(CLK);
	w = h_worker_start(s->tid, CLK, sleep_then_preempt_self, NULL);
	/* Woken by the block: the kernel's, or detection's within its bound. */
	ck_assert_int_eq(h_server_run(s, w, 0), 0);
	ck_assert_state(&w->task, UMCG_TASK_BLOCKED);
	/* The sleep ends; the worker's umcg_preempt() makes it RUNNABLE. */
	h_server_wait_listed(s, w);
	ck_assert_state(&w->task, UMCG_TASK_RUNNABLE);
	ck_assert_int_eq(atomic_load(&w->r[0]), H_PENDING);
	/* Run, it preempts itself: RUNNABLE on the list again, call pending. */
	ck_assert_int_eq(h_server_run(s, w, 0), 0);
	ck_assert_msg(h_list_contains(&s->task, &w->task) || h_server_queued(s, w),
		      "the self-preempted worker is on no list");
	ck_assert_int_eq(atomic_load(&w->r[0]), H_PENDING);
	/* Run once more: the call returns 0 and the worker parks. */
	ck_assert_int_eq(h_server_run(s, w, 0), 0);
	ck_assert_int_eq(atomic_load(&w->r[1]), 0);
	ck_assert_int_eq(atomic_load(&w->r[0]), 0);
}
END_TEST

static void *remote_preempter(void *arg)
{
	struct kick_ctx *c = arg;
	pid_t tid = atomic_load(&c->w->tid);
	int i, ret;

	for (i = 0; i < c->n; i++) {
		unsigned long p;

		H_WAIT_UNTIL(atomic_load(&c->rounds) == i &&
				     h_state(&c->w->task) == UMCG_TASK_RUNNING,
			     "the server to run the worker again");
		p = atomic_load(&c->w->progress);
		H_WAIT_UNTIL(atomic_load(&c->w->progress) > p, "the worker to spin");
		if (i & 1) {
			ret = umcg_preempt(&c->w->task, tid);
		} else {
			ck_assert(h_cas_state(&c->w->task, UMCG_TASK_RUNNING,
					      UMCG_TASK_RUNNING | UMCG_TF_PREEMPT));
			ret = umcg_kick(0, tid);
		}
		ck_assert_msg(ret == 0, "round %d: preempting from a plain thread gave %d", i, ret);
	}
	return NULL;
}

START_TEST(s6r03_from_unregistered_thread)
{
	struct kick_ctx c = { 0 };
	pthread_t th;
	int i;

	c.n = 20;
	c.s = h_server_register(CLK);
	c.w = h_worker_start(c.s->tid, CLK, spin_until_stopped, NULL);
	th = h_thread(remote_preempter, &c);
	for (i = 0; i < c.n; i++) {
		/* Sleeps while w spins; woken by the preemption's push. */
		ck_assert_int_eq(h_server_run(c.s, c.w, 0), 0);
		ck_assert_msg(c.s->last_pick_state == UMCG_TASK_RUNNABLE,
			      "round %d: picked the worker in state %#x", i, c.s->last_pick_state);
		atomic_store(&c.rounds, i + 1);
	}
	h_join(th);
	ck_assert(h_list_contains(&c.s->task, &c.w->task));
	ck_assert_state(&c.w->task, UMCG_TASK_RUNNABLE);
}
END_TEST

void conformance_add_kick(Suite *s)
{
	TCase *tc = tcase(s, "kick", 20);

	tcase_add_test(tc, s6r01_esrch);
	tcase_add_test(tc, s6r02_bad_flags);
	tcase_add_test(tc, s6r05_no_preempt_is_noop);
	tcase_add_test(tc, s6r04_preempt);
	tcase_add_test(tc, s8r03_umcg_preempt_helper);
	tcase_add_test(tc, s6r03_from_unregistered_thread);
	tcase_add_test(tc, s10r15_detected_worker_preempts_itself);
}
