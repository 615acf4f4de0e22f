/* SPDX-License-Identifier: MIT */
/*
 * tests/abi/conformance_wait.c - the conformance suite's "wait" tests:
 * doc/umcg-abi.md §5: umcg_wait() (see conformance.c).
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

/* ==== §5: umcg_wait() =================================================== */

START_TEST(s5r01_unregistered)
{
	struct umcg_task *t = server_task_for(h_gettid());

	ck_assert_int_eq(umcg_wait(0, 0), -EINVAL);
	ck_assert_int_eq(umcg_wait(0, h_now(CLK) + MS), -EINVAL);
	ck_assert_int_eq(umcg_wait(1, 0), -EINVAL);
	ck_assert_int_eq(umcg_ctl(UMCG_CTL_REGISTER, t, CLK), 0);
	ck_assert_int_eq(umcg_ctl(UMCG_CTL_UNREGISTER, NULL, 0), 0);
	ck_assert_int_eq(umcg_wait(0, 0), -EINVAL);
}
END_TEST

static void bad_flags_worker(struct h_worker *w)
{
	struct h_server *s = w->arg;
	struct h_snap snap;

	await_consumed(s);
	h_snap_take(&snap, &w->task, &s->task, NULL, NULL);
	atomic_store(&w->r[0], umcg_wait(2, 0));
	H_ASSERT_UNCHANGED(&snap, "a worker's umcg_wait() with bad flags");
	h_set_state(&w->task, UMCG_TASK_RUNNABLE | UMCG_TF_COND_WAIT);
	h_snap_take(&snap, &w->task, &s->task, NULL, NULL);
	atomic_store(&w->r[1], umcg_wait(0x80000000U, 0));
	H_ASSERT_UNCHANGED(&snap, "a worker's umcg_wait() with bad flags");
	H_CHECK(h_cas_state(&w->task, UMCG_TASK_RUNNABLE | UMCG_TF_COND_WAIT, UMCG_TASK_RUNNING),
		"could not set the worker RUNNING again");
}

START_TEST(s5r01_bad_flags)
{
	static const uint32_t bad[] = { 1, 2, UMCG_TF_COND_WAIT, 0x80000000U };
	struct h_server *s = h_server_register(CLK);
	struct h_worker *w;
	struct h_snap snap;
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		h_snap_take(&snap, &s->task, NULL, NULL, NULL);
		ck_assert_int_eq(umcg_wait(bad[i], 0), -EINVAL);
		H_ASSERT_UNCHANGED(&snap, "umcg_wait() with bad flags, RUNNING");
		h_set_state(&s->task, UMCG_TASK_RUNNABLE | UMCG_TF_COND_WAIT);
		h_snap_take(&snap, &s->task, NULL, NULL, NULL);
		ck_assert_int_eq(umcg_wait(bad[i], h_now(CLK) + MS), -EINVAL);
		H_ASSERT_UNCHANGED(&snap, "umcg_wait() with bad flags, RUNNABLE");
		ck_assert(h_cas_state(&s->task, UMCG_TASK_RUNNABLE | UMCG_TF_COND_WAIT,
				      UMCG_TASK_RUNNING));
	}
	w = h_worker_start(s->tid, CLK, bad_flags_worker, s);
	ck_assert_int_eq(h_server_run(s, w, 0), 0);
	ck_assert_int_eq(atomic_load(&w->r[0]), -EINVAL);
	ck_assert_int_eq(atomic_load(&w->r[1]), -EINVAL);
}
END_TEST

static void erange_worker(struct h_worker *w)
{
	struct h_server *s = w->arg;
	struct h_snap snap;

	await_consumed(s);
	h_snap_take(&snap, &w->task, &s->task, NULL, NULL);
	atomic_store(&w->r[0], umcg_wait(0, h_now(CLK) + 1000 * MS));
	H_ASSERT_UNCHANGED(&snap, "a worker's timed umcg_wait(), RUNNING");

	h_set_state(&w->task, UMCG_TASK_RUNNABLE | UMCG_TF_COND_WAIT);
	h_snap_take(&snap, &w->task, &s->task, NULL, NULL);
	atomic_store(&w->r[1], umcg_wait(0, h_now(CLK) + 1000 * MS));
	atomic_store(&w->r[2], umcg_wait(0, 1));
	H_ASSERT_UNCHANGED(&snap, "a worker's timed umcg_wait(), RUNNABLE");
	H_CHECK(h_cas_state(&w->task, UMCG_TASK_RUNNABLE | UMCG_TF_COND_WAIT, UMCG_TASK_RUNNING),
		"could not set the worker RUNNING again");
}

START_TEST(s5r02_worker_timeout_erange)
{
	struct h_server *s = h_server_register(CLK);
	struct h_worker *w = h_worker_start(s->tid, CLK, erange_worker, s);

	ck_assert_int_eq(h_server_run(s, w, 0), 0);
	ck_assert_int_eq(atomic_load(&w->r[0]), -ERANGE);
	ck_assert_int_eq(atomic_load(&w->r[1]), -ERANGE);
	ck_assert_int_eq(atomic_load(&w->r[2]), -ERANGE);
	ck_assert_int_eq(atomic_load(&w->done), 1);
}
END_TEST

struct esrch_ctx {
	struct h_server *s;
	pid_t bad[3];
};

/*
 * After -ESRCH the caller was not made to wait; its state is either left
 * as it set it or put back to RUNNING (the text allows both readings).
 */
static bool esrch_state_ok(uint32_t st, uint32_t before)
{
	return st == before || st == ((before & 0xffff0000U) | UMCG_TASK_RUNNING);
}

static void server_tid_esrch_worker(struct h_worker *w)
{
	struct esrch_ctx *c = w->arg;
	struct h_snap snap;
	uint32_t st;
	int i, ret;

	await_consumed(c->s);
	for (i = 0; i < 3; i++) {
		h_store(&w->task.server_tid, (uint32_t)c->bad[i]);
		h_set_state(&w->task, UMCG_TASK_RUNNABLE | UMCG_TF_COND_WAIT);
		h_snap_take(&snap, &c->s->task, NULL, NULL, NULL);
		ret = umcg_wait(0, 0);
		atomic_store(&w->r[i], ret);
		H_ASSERT_UNCHANGED(&snap, "a worker's umcg_wait() with a bad server_tid");
		st = h_state(&w->task);
		H_CHECK(esrch_state_ok(st, UMCG_TASK_RUNNABLE | UMCG_TF_COND_WAIT),
			"after -ESRCH the worker is in state %#x", st);
		H_CHECK(h_load(&w->task.server_tid) == (uint32_t)c->bad[i],
			"umcg_wait() changed server_tid");
		h_store(&w->task.server_tid, (uint32_t)c->s->tid);
		h_set_state(&w->task, UMCG_TASK_RUNNING);
	}
}

START_TEST(s5r03_server_tid_esrch)
{
	struct esrch_ctx c;
	struct h_idle idle;
	struct h_worker *w;

	c.s = h_server_register(CLK);
	h_idle_start(&idle);
	c.bad[0] = atomic_load(&idle.tid);
	c.bad[1] = 1;
	c.bad[2] = NO_SUCH_TID;
	w = h_worker_start(c.s->tid, CLK, server_tid_esrch_worker, &c);
	ck_assert_int_eq(h_server_run(c.s, w, 0), 0);
	ck_assert_int_eq(atomic_load(&w->r[0]), -ESRCH);
	ck_assert_int_eq(atomic_load(&w->r[1]), -ESRCH);
	ck_assert_int_eq(atomic_load(&w->r[2]), -ESRCH);
	h_idle_stop(&idle);
}
END_TEST

static void next_tid_esrch_worker(struct h_worker *w)
{
	struct esrch_ctx *c = w->arg;
	struct h_snap snap;
	uint32_t st;
	int i;

	await_consumed(c->s);
	for (i = 0; i < 3; i++) {
		h_store(&w->task.next_tid, (uint32_t)c->bad[i]);
		h_set_state(&w->task, UMCG_TASK_RUNNABLE | UMCG_TF_COND_WAIT);
		h_snap_take(&snap, &c->s->task, NULL, NULL, NULL);
		atomic_store(&w->r[i], umcg_wait(0, 0));
		H_ASSERT_UNCHANGED(&snap, "a worker's umcg_wait() with a bad next_tid");
		st = h_state(&w->task);
		H_CHECK(esrch_state_ok(st, UMCG_TASK_RUNNABLE | UMCG_TF_COND_WAIT),
			"after -ESRCH the worker is in state %#x", st);
		H_CHECK(h_load(&w->task.next_tid) == (uint32_t)c->bad[i],
			"a failed umcg_wait() changed next_tid");
		h_store(&w->task.next_tid, 0U);
		h_set_state(&w->task, UMCG_TASK_RUNNING);
	}
}

START_TEST(s5r03_next_tid_esrch)
{
	struct esrch_ctx c;
	struct h_idle idle;
	struct h_worker *w;
	struct h_snap snap;
	int i;

	c.s = h_server_register(CLK);
	h_idle_start(&idle);
	c.bad[0] = atomic_load(&idle.tid);
	c.bad[1] = 1;
	c.bad[2] = NO_SUCH_TID;
	for (i = 0; i < 3; i++) {
		uint32_t st;
		int ret;

		h_store(&c.s->task.next_tid, (uint32_t)c.bad[i]);
		h_set_state(&c.s->task, UMCG_TASK_RUNNABLE | UMCG_TF_COND_WAIT);
		h_snap_take(&snap, &c.s->task, NULL, NULL, NULL);
		ret = umcg_wait(0, h_now(CLK) + h_liveness_ns());
		ck_assert_msg(ret == -ESRCH, "server, next_tid %d: %d, expected -ESRCH",
			      (int)c.bad[i], ret);
		ck_assert_uint_eq(h_load(&c.s->task.next_tid), (uint32_t)c.bad[i]);
		ck_assert_uint_eq(h_load(&c.s->task.runnable_workers_ptr), 0);
		st = h_state(&c.s->task);
		ck_assert_msg(esrch_state_ok(st, UMCG_TASK_RUNNABLE | UMCG_TF_COND_WAIT),
			      "after -ESRCH the server is in state %#x", st);
		h_set_state(&c.s->task, UMCG_TASK_RUNNING);
		h_store(&c.s->task.next_tid, 0U);
	}
	w = h_worker_start(c.s->tid, CLK, next_tid_esrch_worker, &c);
	ck_assert_int_eq(h_server_run(c.s, w, 0), 0);
	for (i = 0; i < 3; i++)
		ck_assert_int_eq(atomic_load(&w->r[i]), -ESRCH);
	h_idle_stop(&idle);
}
END_TEST

static void running_wait_worker(struct h_worker *w)
{
	struct h_server *s = w->arg;
	struct h_snap snap;

	await_consumed(s);
	h_snap_take(&snap, &w->task, &s->task, NULL, NULL);
	atomic_store(&w->r[0], umcg_wait(0, 0));
	H_ASSERT_UNCHANGED(&snap, "a RUNNING worker's umcg_wait()");
}

START_TEST(s5r04_not_runnable_eagain)
{
	struct h_server *s = h_server_register(CLK);
	struct h_worker *w;
	struct h_snap snap;

	h_snap_take(&snap, &s->task, NULL, NULL, NULL);
	ck_assert_int_eq(umcg_wait(0, 0), -EAGAIN);
	ck_assert_int_eq(umcg_wait(0, h_now(CLK) + 100 * MS), -EAGAIN);
	H_ASSERT_UNCHANGED(&snap, "a RUNNING server's umcg_wait()");

	/* With a runnable next_tid: not used either. */
	w = h_worker_start(s->tid, CLK, running_wait_worker, s);
	h_server_wait_listed(s, w);
	h_server_collect(s);
	h_store(&s->task.next_tid, (uint32_t)atomic_load(&w->tid));
	h_snap_take(&snap, &s->task, &w->task, NULL, NULL);
	ck_assert_int_eq(umcg_wait(0, 0), -EAGAIN);
	H_ASSERT_UNCHANGED(&snap, "a RUNNING server's umcg_wait() with next_tid");
	h_sleep_us(20000);
	ck_assert_int_eq(atomic_load(&w->reg_ret), H_PENDING);
	ck_assert_state(&w->task, UMCG_TASK_RUNNABLE);
	h_store(&s->task.next_tid, 0U);

	ck_assert_int_eq(h_server_run(s, w, 0), 0);
	ck_assert_int_eq(atomic_load(&w->r[0]), -EAGAIN);
}
END_TEST

struct stamp_ctx {
	struct h_server *s;
	_Atomic uint64_t t0;
	_Atomic uint64_t rts;
	_Atomic uint64_t seen_at;
};

static void stamp_observer_worker(struct h_worker *w)
{
	struct stamp_ctx *c = w->arg;

	atomic_store(&w->r[0], (int)h_state(&c->s->task));
	atomic_store(&c->rts, h_load(&c->s->task.runnable_ts));
	atomic_store(&c->seen_at, h_now(c->s->clock));
}

START_TEST(s5r04_clears_cond_wait_and_stamps)
{
	struct stamp_ctx c = { 0 };
	struct h_worker *w;
	uint64_t t0, t1, rts;

	c.s = h_server_register(CLOCK_REALTIME);
	w = h_worker_start(c.s->tid, CLOCK_REALTIME, stamp_observer_worker, &c);
	h_server_wait_listed(c.s, w);
	t0 = h_now(CLOCK_REALTIME);
	ck_assert_int_eq(h_server_run(c.s, w, 0), 0);
	ck_assert_msg((uint32_t)atomic_load(&w->r[0]) == UMCG_TASK_RUNNABLE,
		      "a sleeping server's state is %#x, expected RUNNABLE without TF_COND_WAIT",
		      (uint32_t)atomic_load(&w->r[0]));
	rts = atomic_load(&c.rts);
	ck_assert_msg(rts >= t0 && rts <= atomic_load(&c.seen_at),
		      "server runnable_ts %" PRIu64 " not in [%" PRIu64 ", %" PRIu64 "]", rts, t0,
		      atomic_load(&c.seen_at));

	/* A timed-out wait: the transition was made, the stamp is fresh. */
	t0 = h_now(CLOCK_REALTIME);
	ck_assert_int_eq(h_server_switch(c.s, NULL, t0 + 2 * MS), -ETIMEDOUT);
	t1 = h_now(CLOCK_REALTIME);
	ck_assert_state(&c.s->task, UMCG_TASK_RUNNING);
	rts = h_load(&c.s->task.runnable_ts);
	ck_assert_msg(rts >= t0 && rts <= t1,
		      "server runnable_ts %" PRIu64 " not in [%" PRIu64 ", %" PRIu64 "]", rts, t0,
		      t1);
}
END_TEST

struct yield_ctx {
	_Atomic uint64_t before[4];
	_Atomic uint64_t prev_rts[4];
};

static void yield_thrice_worker(struct h_worker *w)
{
	struct yield_ctx *c = w->arg;
	int i;

	for (i = 0; i < 3; i++) {
		atomic_store(&c->prev_rts[i], h_load(&w->task.runnable_ts));
		atomic_store(&c->before[i], h_now(w->clock));
		atomic_store(&w->r[i], 1);
		atomic_store(&w->r[4 + i], h_yield(w));
	}
}

START_TEST(s5r05_worker_pushes_self)
{
	struct h_server *s = h_server_register(CLK);
	struct yield_ctx c = { 0 };
	struct h_worker *w = h_worker_start(s->tid, CLK, yield_thrice_worker, &c);
	int i;

	for (i = 0; i < 3; i++) {
		uint64_t rts, now;

		ck_assert_int_eq(h_server_run(s, w, 0), 0);
		now = h_now(CLK);
		/* Pushed before the server was woken: on the list right now. */
		ck_assert_msg(h_list_contains(&s->task, &w->task),
			      "yield %d: the server was woken before the worker was pushed", i);
		ck_assert_state(&w->task, UMCG_TASK_RUNNABLE);
		rts = h_load(&w->task.runnable_ts);
		ck_assert_msg(rts >= atomic_load(&c.before[i]) && rts <= now,
			      "yield %d: runnable_ts %" PRIu64 " not in [%" PRIu64 ", %" PRIu64 "]",
			      i, rts, atomic_load(&c.before[i]), now);
		ck_assert_msg(rts > atomic_load(&c.prev_rts[i]),
			      "yield %d: runnable_ts did not advance", i);
		if (i)
			ck_assert_int_eq(atomic_load(&w->r[4 + i - 1]), 0);
	}
}
END_TEST

START_TEST(s5r05_worker_wakes_server)
{
	struct h_server *s = h_server_register(CLK);
	struct yield_ctx c = { 0 };
	struct h_worker *w = h_worker_start(s->tid, CLK, yield_thrice_worker, &c);
	int i, ret;

	for (i = 0; i < 3; i++) {
		h_server_wait_listed(s, w);
		h_server_collect(s);
		ck_assert(h_server_unqueue(s, w));
		ret = h_server_switch(s, w, h_now(CLK) + h_liveness_ns());
		ck_assert_msg(ret == 0,
			      "run %d: the server's umcg_wait() gave %d, expected 0 "
			      "(woken by the yield)",
			      i, ret);
		ck_assert_uint_eq(h_load(&s->task.next_tid), 0);
		ck_assert_state(&s->task, UMCG_TASK_RUNNING);
		ck_assert_int_eq(atomic_load(&w->r[i]), 1);
	}
}
END_TEST

struct handoff_ctx {
	struct h_server *s;
	struct h_worker *a, *b;
};

static void handoff_a(struct h_worker *w)
{
	struct handoff_ctx *c = w->arg;

	h_store(&w->task.next_tid, (uint32_t)atomic_load(&c->b->tid));
	atomic_store(&w->r[0], h_yield(w));
}

static void handoff_b(struct h_worker *w)
{
	struct handoff_ctx *c = w->arg;
	struct h_worker *a = c->a;

	H_SPIN_UNTIL(h_list_contains(&c->s->task, &a->task), "A on the server's list");
	H_SPIN_UNTIL(h_load(&a->task.next_tid) == 0, "A's next_tid reset to 0");
	atomic_store(&w->r[0], (int)h_state(&a->task));
	atomic_store(&w->r[1], (int)h_state(&c->s->task));
	h_spin_us(30000);
	atomic_store(&w->r[2], (int)h_state(&c->s->task));
}

START_TEST(s5r05_worker_wakes_next)
{
	struct handoff_ctx c = { 0 };
	int ret;

	c.s = h_server_register(CLK);
	c.a = h_worker_start(c.s->tid, CLK, handoff_a, &c);
	c.b = h_worker_start(c.s->tid, CLK, handoff_b, &c);
	h_server_wait_listed(c.s, c.a);
	h_server_wait_listed(c.s, c.b);
	h_server_collect(c.s);
	ck_assert(h_server_unqueue(c.s, c.a));
	ck_assert(h_server_unqueue(c.s, c.b)); /* A hands the CPU to B. */
	ret = h_server_switch(c.s, c.a, h_now(CLK) + h_liveness_ns());
	ck_assert_int_eq(ret, 0);
	/* B ran, saw A yield to it while the server slept, then parked. */
	ck_assert_int_eq(atomic_load(&c.b->done), 1);
	ck_assert_uint_eq((uint32_t)atomic_load(&c.b->r[0]), UMCG_TASK_RUNNABLE);
	ck_assert_msg((uint32_t)atomic_load(&c.b->r[1]) == UMCG_TASK_RUNNABLE &&
			      (uint32_t)atomic_load(&c.b->r[2]) == UMCG_TASK_RUNNABLE,
		      "the server did not stay asleep while A yielded to B (states %#x, %#x)",
		      (uint32_t)atomic_load(&c.b->r[1]), (uint32_t)atomic_load(&c.b->r[2]));
	ck_assert_int_eq(atomic_load(&c.a->r[0]), H_PENDING);
	ck_assert(h_list_contains(&c.s->task, &c.a->task));
	ck_assert(h_list_contains(&c.s->task, &c.b->task));
	ck_assert_int_eq(h_server_run(c.s, c.a, 0), 0);
	ck_assert_int_eq(atomic_load(&c.a->r[0]), 0);
}
END_TEST

struct fallback_ctx {
	pid_t next;
	atomic_int allowed;
};

static void fallback_worker(struct h_worker *w)
{
	struct fallback_ctx *c = w->arg;

	h_store(&w->task.next_tid, (uint32_t)c->next);
	atomic_store(&w->r[1], h_yield(w));
	atomic_store(&w->r[2], atomic_load(&c->allowed));
	atomic_store(&w->r[3], (int)h_state(&w->task));
	h_store(&w->task.next_tid, 0U);
}

/* §5 rule 5, §11 rule 1: a worker's unusable next_tid falls back. */
START_TEST(s5r05_worker_next_not_runnable)
{
	atomic_int release = 0;
	struct h_server *other = h_server_thread_start(CLK, idle_server, &release);
	struct h_server *s = h_server_register(CLK);
	struct fallback_ctx c = { .next = other->tid };
	struct h_worker *w = h_worker_start(s->tid, CLK, fallback_worker, &c);
	struct h_snap snap;

	h_snap_take(&snap, &other->task, NULL, NULL, NULL);
	/* Woken by the fallback: the worker's next_tid (a RUNNING server) failed. */
	ck_assert_int_eq(h_server_run(s, w, 0), 0);
	ck_assert(h_list_contains(&s->task, &w->task));
	ck_assert_state(&w->task, UMCG_TASK_RUNNABLE);
	H_ASSERT_UNCHANGED(&snap, "a worker's next_tid naming a RUNNING server");
	h_sleep_us(50000);
	ck_assert_msg(atomic_load(&w->r[1]) == H_PENDING,
		      "umcg_wait() returned %d before the worker was run again",
		      atomic_load(&w->r[1]));
	atomic_store(&c.allowed, 1);
	ck_assert_int_eq(h_server_run(s, w, 0), 0);
	ck_assert_int_eq(atomic_load(&w->r[1]), -EAGAIN);
	ck_assert_int_eq(atomic_load(&w->r[2]), 1);
	ck_assert_uint_eq((uint32_t)atomic_load(&w->r[3]), UMCG_TASK_RUNNING);
	atomic_store(&release, 1);
	h_server_thread_join(other);
}
END_TEST

struct run_obs_ctx {
	struct h_server *s;
	atomic_int own_state[3];
	atomic_int server_state[3];
};

static void run_observer_worker(struct h_worker *w)
{
	struct run_obs_ctx *c = w->arg;
	int i;

	for (i = 0; i < 3; i++) {
		atomic_store(&c->own_state[i], (int)h_state(&w->task));
		H_SPIN_UNTIL(h_load(&c->s->task.next_tid) == 0, "the server's next_tid reset");
		atomic_store(&c->server_state[i], (int)h_state(&c->s->task));
		h_yield(w);
	}
}

START_TEST(s5r06_server_wakes_next)
{
	struct run_obs_ctx c = { 0 };
	struct h_worker *w;
	int i;

	c.s = h_server_register(CLK);
	w = h_worker_start(c.s->tid, CLK, run_observer_worker, &c);
	for (i = 0; i < 3; i++) {
		ck_assert_int_eq(h_server_run(c.s, w, 0), 0);
		ck_assert_uint_eq((uint32_t)atomic_load(&c.own_state[i]), UMCG_TASK_RUNNING);
		ck_assert_uint_eq((uint32_t)atomic_load(&c.server_state[i]), UMCG_TASK_RUNNABLE);
		if (i)
			ck_assert_uint_eq(c.s->last_pick_state, UMCG_TASK_RUNNABLE);
	}
}
END_TEST

START_TEST(s5r07_next_consumed)
{
	struct h_server *s = h_server_register(CLK);
	struct h_worker *w = h_worker_start(s->tid, CLK, spin_until_stopped, NULL);
	pid_t tid = atomic_load(&w->tid);
	int ret;

	/* Not used (the server was RUNNING): kept. */
	h_server_wait_listed(s, w);
	h_server_collect(s);
	h_store(&s->task.next_tid, (uint32_t)tid);
	ck_assert_int_eq(umcg_wait(0, 0), -EAGAIN);
	ck_assert_uint_eq(h_load(&s->task.next_tid), (uint32_t)tid);
	/* Used, even though the deadline has passed already: reset to 0. */
	ck_assert(h_server_unqueue(s, w));
	ret = h_server_switch(s, w, 1);
	ck_assert_int_eq(ret, -ETIMEDOUT);
	ck_assert_uint_eq(h_load(&s->task.next_tid), 0);
	ck_assert_state(&s->task, UMCG_TASK_RUNNING);
	H_WAIT_UNTIL(atomic_load(&w->progress) > 0, "the worker to run");
	ck_assert_state(&w->task, UMCG_TASK_RUNNING);
	/* Used with a successful wait. */
	atomic_store(&w->stop, 1);
	h_server_wait_listed(s, w);
	h_server_collect(s);
	ck_assert(h_server_unqueue(s, w));
	ret = h_server_switch(s, w, h_now(CLK) + h_liveness_ns());
	ck_assert_int_eq(ret, 0);
	ck_assert_uint_eq(h_load(&s->task.next_tid), 0);
}
END_TEST

struct far_ctx {
	struct h_worker *_Atomic x;
};

static void far_server(struct h_server *s, void *arg)
{
	struct far_ctx *c = arg;
	struct h_worker *x;

	H_WAIT_UNTIL(atomic_load(&c->x) != NULL, "the test to start the worker");
	x = atomic_load(&c->x);
	H_CHECK(h_server_run(s, x, 0) == 0, "the far server could not run its worker");
}

/* next_tid names an existing task that is not RUNNABLE: -EAGAIN, nothing used. */
static void expect_next_eagain(struct h_server *s, struct umcg_task *target, pid_t tid,
			       const char *what)
{
	struct h_snap snap;
	int ret;

	h_store(&s->task.next_tid, (uint32_t)tid);
	h_set_state(&s->task, UMCG_TASK_RUNNABLE | UMCG_TF_COND_WAIT);
	h_snap_take(&snap, target, NULL, NULL, NULL);
	ret = umcg_wait(0, h_now(s->clock) + h_liveness_ns());
	ck_assert_msg(ret == -EAGAIN, "%s: umcg_wait() gave %d, expected -EAGAIN", what, ret);
	ck_assert_msg(h_load(&s->task.next_tid) == (uint32_t)tid, "%s: next_tid changed", what);
	ck_assert_msg(h_state(&s->task) == UMCG_TASK_RUNNING,
		      "%s: the server is in state %#x after the failed wait", what,
		      h_state(&s->task));
	ck_assert_uint_eq(h_load(&s->task.runnable_workers_ptr), 0);
	H_ASSERT_UNCHANGED(&snap, what);
	h_store(&s->task.next_tid, 0U);
}

START_TEST(s5r07_next_not_runnable_eagain)
{
	atomic_int release = 0;
	struct h_server *idle = h_server_thread_start(CLK, idle_server, &release);
	struct far_ctx fc = { NULL };
	struct h_server *far = h_server_thread_start(CLK, far_server, &fc);
	struct h_server *s = h_server_register(CLK);
	struct h_worker *x, *w;
	int fd[2];

	/* A RUNNING server. */
	expect_next_eagain(s, &idle->task, idle->tid, "next_tid = a RUNNING server");

	/* A RUNNING worker of another server. */
	x = h_worker_start(far->tid, CLK, spin_until_stopped, NULL);
	atomic_store(&fc.x, x);
	H_WAIT_UNTIL(atomic_load(&x->progress) > 0, "the far worker to run");
	ck_assert_state(&x->task, UMCG_TASK_RUNNING);
	expect_next_eagain(s, &x->task, atomic_load(&x->tid), "next_tid = a RUNNING worker");
	atomic_store(&x->stop, 1);
	h_server_thread_join(far);

	/* A BLOCKED worker of this server. */
	ck_assert_int_eq(pipe2(fd, O_CLOEXEC), 0);
	w = h_worker_start(s->tid, CLK, block_on_pipe_worker, fd);
	ck_assert_int_eq(h_server_run(s, w, 0), 0);
	H_WAIT_UNTIL(h_state(&w->task) == UMCG_TASK_BLOCKED, "the worker to block");
	expect_next_eagain(s, &w->task, atomic_load(&w->tid), "next_tid = a BLOCKED worker");
	ck_assert_int_eq(write(fd[1], "x", 1), 1);
	ck_assert_int_eq(h_server_run(s, w, 0), 0);
	ck_assert_int_eq(atomic_load(&w->r[1]), 1);
	ck_assert_int_eq(atomic_load(&w->r[2]), 0);

	atomic_store(&release, 1);
	h_server_thread_join(idle);
}
END_TEST

static void check_timeout(clockid_t clk)
{
	struct h_server *s = h_server_register(clk);
	int i;

	for (i = 0; i < 3; i++) {
		uint64_t t0 = h_now(clk), deadline = t0 + 20 * MS, t1, rts;
		int ret = h_server_switch(s, NULL, deadline);

		t1 = h_now(clk);
		ck_assert_int_eq(ret, -ETIMEDOUT);
		ck_assert_msg(t1 >= deadline,
			      "clock %d: returned %" PRIu64 " ns before the deadline", (int)clk,
			      deadline - t1);
		ck_assert_msg(t1 - deadline < h_liveness_ns(),
			      "clock %d: returned %" PRIu64 " ms after the deadline", (int)clk,
			      (t1 - deadline) / MS);
		ck_assert_state(&s->task, UMCG_TASK_RUNNING);
		rts = h_load(&s->task.runnable_ts);
		ck_assert_msg(rts >= t0 && rts <= t1,
			      "clock %d: runnable_ts %" PRIu64 " not in [%" PRIu64 ", %" PRIu64 "]",
			      (int)clk, rts, t0, t1);
	}
}

START_TEST(s5r08_timeout_realtime)
{
	check_timeout(CLOCK_REALTIME);
}
END_TEST

START_TEST(s5r08_timeout_monotonic)
{
	check_timeout(CLOCK_MONOTONIC);
}
END_TEST

START_TEST(s5r08_timeout_boottime)
{
	check_timeout(CLOCK_BOOTTIME);
}
END_TEST

START_TEST(s5r08_timeout_tai)
{
	check_timeout(CLOCK_TAI);
}
END_TEST

START_TEST(s5r08_past_deadline)
{
	static const clockid_t clocks[] = { CLOCK_REALTIME, CLOCK_MONOTONIC };
	clockid_t clk = clocks[_i];
	struct h_server *s = h_server_register(clk);
	uint64_t deadlines[2];
	int i;

	deadlines[0] = h_now(clk) - MS;
	deadlines[1] = 1;
	for (i = 0; i < 2; i++) {
		uint64_t t0 = h_now(CLOCK_MONOTONIC);

		ck_assert_int_eq(h_server_switch(s, NULL, deadlines[i]), -ETIMEDOUT);
		ck_assert_msg(h_now(CLOCK_MONOTONIC) - t0 < h_liveness_ns(),
			      "a past deadline was not noticed at once");
		ck_assert_state(&s->task, UMCG_TASK_RUNNING);
	}
}
END_TEST

static atomic_int sig_count;
/* For s5r08_timeout_survives_signal: signals handled before a deadline. */
static clockid_t sig_clock = CLK;
static _Atomic uint64_t sig_deadline;
static atomic_int sig_before_deadline;

static void on_sigusr1(int sig)
{
	uint64_t deadline = atomic_load(&sig_deadline);

	(void)sig;
	atomic_fetch_add(&sig_count, 1);
	if (deadline && h_now(sig_clock) < deadline)
		atomic_fetch_add(&sig_before_deadline, 1);
}

static void install_sigusr1(int flags)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_sigusr1;
	sa.sa_flags = flags;
	sigemptyset(&sa.sa_mask);
	ck_assert_int_eq(sigaction(SIGUSR1, &sa, NULL), 0);
}

struct sig_ctx {
	struct h_server *s;
	atomic_int server_returned;
};

static void signal_server_worker(struct h_worker *w)
{
	struct sig_ctx *c = w->arg;
	uint32_t st;
	int k;

	for (k = 1; k <= 3; k++) {
		tgkill_sigusr1(c->s->tid);
		H_SPIN_UNTIL(atomic_load(&sig_count) >= k, "the handler to run on the server");
		h_spin_us(10000);
		st = h_state(&c->s->task);
		H_CHECK((st & UMCG_TASK_MASK) == UMCG_TASK_RUNNABLE,
			"after signal %d the server is in state %#x", k, st);
		H_CHECK(!atomic_load(&c->server_returned),
			"signal %d ended the server's umcg_wait()", k);
	}
}

static void check_signal_during_wait(int sa_flags)
{
	struct sig_ctx c = { 0 };
	struct h_worker *w;
	int ret;

	install_sigusr1(sa_flags);
	c.s = h_server_register(CLK);
	w = h_worker_start(c.s->tid, CLK, signal_server_worker, &c);
	h_server_wait_listed(c.s, w);
	h_server_collect(c.s);
	ck_assert(h_server_unqueue(c.s, w));
	ret = h_server_switch(c.s, w, h_now(CLK) + h_liveness_ns());
	atomic_store(&c.server_returned, 1);
	ck_assert_int_eq(ret, 0);
	ck_assert_int_eq(atomic_load(&sig_count), 3);
	ck_assert_int_eq(atomic_load(&w->done), 1);
	ck_assert_state(&c.s->task, UMCG_TASK_RUNNING);
}

START_TEST(s5r08_signal_does_not_end_wait)
{
	check_signal_during_wait(SA_RESTART);
}
END_TEST

START_TEST(s5r08_signal_does_not_end_wait_norestart)
{
	check_signal_during_wait(0);
}
END_TEST

struct signaller {
	pid_t target;
	unsigned int every_us;
	atomic_int stop;
};

/* Signal the target every @every_us, each once the previous one was handled. */
static void *signaller_main(void *arg)
{
	struct signaller *sg = arg;
	int k = 0;

	for (;;) {
		h_sleep_us(sg->every_us);
		if (atomic_load(&sg->stop))
			return NULL;
		tgkill_sigusr1(sg->target);
		k++;
		H_WAIT_UNTIL(atomic_load(&sig_count) >= k || atomic_load(&sg->stop),
			     "the signal handler to run");
	}
}

START_TEST(s5r08_timeout_survives_signal)
{
	int flags = _i ? SA_RESTART : 0;
	struct signaller sg = { .every_us = 20000 };
	struct h_server *s;
	uint64_t t0, deadline, t1;
	pthread_t th;
	int ret;

	if (!emulated()) {
		h_skip("s5r08_timeout_survives_signal",
		       "the kernel may drop a timeout when a signal interrupts the wait");
		return;
	}
	install_sigusr1(flags);
	s = h_server_register(CLK);
	sg.target = s->tid;
	/* 200 ms, longer where everything is slower (CK_TIMEOUT_MULTIPLIER). */
	t0 = h_now(CLK);
	deadline = t0 + h_liveness_ns() / 15;
	atomic_store(&sig_deadline, deadline);
	th = h_thread(signaller_main, &sg);
	ret = h_server_switch(s, NULL, deadline);
	t1 = h_now(CLK);
	atomic_store(&sg.stop, 1);
	h_join(th);
	ck_assert_int_eq(ret, -ETIMEDOUT);
	ck_assert_msg(t1 >= deadline, "returned %" PRIu64 " ms before the deadline",
		      (deadline - t1) / MS);
	ck_assert_msg(t1 - deadline < h_liveness_ns(), "the timeout was lost");
	ck_assert_msg(atomic_load(&sig_before_deadline) > 0,
		      "no signal reached the server during its wait (machine overloaded?)");
	ck_assert_state(&s->task, UMCG_TASK_RUNNING);
}
END_TEST

void conformance_add_wait(Suite *s)
{
	TCase *tc = tcase(s, "wait", 10);

	tcase_add_test(tc, s5r01_unregistered);
	tcase_add_test(tc, s5r01_bad_flags);
	tcase_add_test(tc, s5r02_worker_timeout_erange);
	tcase_add_test(tc, s5r03_server_tid_esrch);
	tcase_add_test(tc, s5r03_next_tid_esrch);
	tcase_add_test(tc, s5r04_not_runnable_eagain);
	tcase_add_test(tc, s5r04_clears_cond_wait_and_stamps);
	tcase_add_test(tc, s5r05_worker_pushes_self);
	tcase_add_test(tc, s5r05_worker_wakes_server);
	tcase_add_test(tc, s5r05_worker_wakes_next);
	tcase_add_test(tc, s5r05_worker_next_not_runnable);
	tcase_add_test(tc, s5r06_server_wakes_next);
	tcase_add_test(tc, s5r07_next_consumed);
	tcase_add_test(tc, s5r07_next_not_runnable_eagain);
	tcase_add_test(tc, s5r08_timeout_realtime);
	tcase_add_test(tc, s5r08_timeout_monotonic);
	tcase_add_test(tc, s5r08_timeout_boottime);
	tcase_add_test(tc, s5r08_timeout_tai);
	tcase_add_loop_test(tc, s5r08_past_deadline, 0, 2);
	tcase_add_test(tc, s5r08_signal_does_not_end_wait);
	tcase_add_test(tc, s5r08_signal_does_not_end_wait_norestart);
	tcase_add_loop_test(tc, s5r08_timeout_survives_signal, 0, 2);
}
