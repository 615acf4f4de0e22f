/* SPDX-License-Identifier: MIT */
/*
 * tests/abi/conformance_block.c - the conformance suite's "block" tests:
 * doc/umcg-abi.md §7 and §10 rule 5: blocking and its hooks (see
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

/* ==== §7 and §10 rule 5: blocking ======================================= */

static void hooks_noop_worker(struct h_worker *w)
{
	struct h_server *s = w->arg;
	struct h_snap snap;

	await_consumed(s);
	h_snap_take(&snap, &w->task, &s->task, NULL, NULL);
	atomic_store(&w->r[0], umcg_block_begin());
	atomic_store(&w->r[1], umcg_block_begin());
	atomic_store(&w->r[2], umcg_block_end());
	atomic_store(&w->r[3], umcg_block_end());
	H_ASSERT_UNCHANGED(&snap, "the blocking hooks on the kernel backend");
}

/* On the kernel backend the hooks return 0 and change nothing, anywhere. */
static void check_hooks_are_noops(void)
{
	struct h_server *s;
	struct h_worker *w;
	int i;

	ck_assert_int_eq(umcg_block_begin(), 0);
	ck_assert_int_eq(umcg_block_end(), 0);
	ck_assert_int_eq(umcg_block_end(), 0);
	s = h_server_register(CLK);
	ck_assert_int_eq(umcg_block_begin(), 0);
	ck_assert_int_eq(umcg_block_end(), 0);
	ck_assert_state(&s->task, UMCG_TASK_RUNNING);
	w = h_worker_start(s->tid, CLK, hooks_noop_worker, s);
	ck_assert_int_eq(h_server_run(s, w, 0), 0);
	for (i = 0; i < 4; i++)
		ck_assert_int_eq(atomic_load(&w->r[i]), 0);
}

#define HOOKS_OR_NOOP()                          \
	do {                                     \
		if (!emulated()) {               \
			check_hooks_are_noops(); \
			return;                  \
		}                                \
	} while (0)

START_TEST(s7r02_begin_wakes_server)
{
	struct h_server *s;
	struct h_worker *w;
	int fd[2];

	HOOKS_OR_NOOP();
	ck_assert_int_eq(pipe2(fd, O_CLOEXEC), 0);
	s = h_server_register(CLK);
	w = h_worker_start(s->tid, CLK, block_on_pipe_worker, fd);
	ck_assert_int_eq(h_server_run(s, w, 0), 0);
	ck_assert_state(&w->task, UMCG_TASK_BLOCKED);
	ck_assert(!h_list_contains(&s->task, &w->task));
	H_WAIT_UNTIL(atomic_load(&w->r[0]) != H_PENDING, "umcg_block_begin() to return");
	ck_assert_int_eq(atomic_load(&w->r[0]), 0);
	ck_assert_int_eq(write(fd[1], "x", 1), 1);
	ck_assert_int_eq(h_server_run(s, w, 0), 0);
	ck_assert_int_eq(atomic_load(&w->r[2]), 0);
}
END_TEST

struct begin_next_ctx {
	struct h_server *s;
	struct h_worker *a, *b;
	int fd[2];
};

static void begin_next_a(struct h_worker *w)
{
	struct begin_next_ctx *c = w->arg;
	char ch;

	h_store(&w->task.next_tid, (uint32_t)atomic_load(&c->b->tid));
	atomic_store(&w->r[0], umcg_block_begin());
	atomic_store(&w->r[1], (int)read(c->fd[0], &ch, 1));
	atomic_store(&w->r[2], umcg_block_end());
}

static void begin_next_b(struct h_worker *w)
{
	struct begin_next_ctx *c = w->arg;

	H_SPIN_UNTIL(h_load(&c->a->task.next_tid) == 0, "A's next_tid consumed");
	atomic_store(&w->r[0], (int)h_state(&c->a->task));
	atomic_store(&w->r[1], (int)h_state(&c->s->task));
	h_spin_us(20000);
	atomic_store(&w->r[2], (int)h_state(&c->s->task));
}

START_TEST(s7r02_begin_wakes_next)
{
	struct begin_next_ctx c = { 0 };

	HOOKS_OR_NOOP();
	ck_assert_int_eq(pipe2(c.fd, O_CLOEXEC), 0);
	c.s = h_server_register(CLK);
	c.b = h_worker_start(c.s->tid, CLK, begin_next_b, &c);
	c.a = h_worker_start(c.s->tid, CLK, begin_next_a, &c);
	h_server_wait_listed(c.s, c.a);
	h_server_wait_listed(c.s, c.b);
	h_server_collect(c.s);
	ck_assert(h_server_unqueue(c.s, c.a));
	ck_assert(h_server_unqueue(c.s, c.b));
	ck_assert_int_eq(h_server_switch(c.s, c.a, h_now(CLK) + h_liveness_ns()), 0);
	/* B ran while the server slept, then parked and woke it. */
	ck_assert_int_eq(atomic_load(&c.b->done), 1);
	ck_assert_uint_eq((uint32_t)atomic_load(&c.b->r[0]), UMCG_TASK_BLOCKED);
	ck_assert_msg((uint32_t)atomic_load(&c.b->r[1]) == UMCG_TASK_RUNNABLE &&
			      (uint32_t)atomic_load(&c.b->r[2]) == UMCG_TASK_RUNNABLE,
		      "the server did not stay asleep (states %#x, %#x)",
		      (uint32_t)atomic_load(&c.b->r[1]), (uint32_t)atomic_load(&c.b->r[2]));
	ck_assert_int_eq(atomic_load(&c.a->r[0]), 0);
	ck_assert_state(&c.a->task, UMCG_TASK_BLOCKED);
	ck_assert_int_eq(write(c.fd[1], "x", 1), 1);
	ck_assert_int_eq(h_server_run(c.s, c.a, 0), 0);
	ck_assert_int_eq(atomic_load(&c.a->r[2]), 0);
}
END_TEST

struct end_ctx {
	int fd[2];
};

static void block_twice_worker(struct h_worker *w)
{
	struct end_ctx *c = w->arg;
	char ch;
	int i;

	for (i = 0; i < 2; i++) {
		atomic_store(&w->r[3 * i], umcg_block_begin());
		H_CHECK(read(c->fd[0], &ch, 1) == 1, "read from the pipe failed");
		atomic_store(&w->r[3 * i + 1], umcg_block_end());
		atomic_store(&w->r[3 * i + 2], 1);
	}
}

struct delayed_write {
	int fd;
	unsigned int after_us;
};

static void *delayed_writer(void *arg)
{
	struct delayed_write *dw = arg;

	h_sleep_us(dw->after_us);
	ck_assert_int_eq(write(dw->fd, "x", 1), 1);
	return NULL;
}

START_TEST(s7r03_end_pushes_and_waits)
{
	struct end_ctx c;
	struct delayed_write dw;
	struct h_server *s;
	struct h_worker *w;
	pthread_t th;
	int i;

	HOOKS_OR_NOOP();
	ck_assert_int_eq(pipe2(c.fd, O_CLOEXEC), 0);
	s = h_server_register(CLK);
	w = h_worker_start(s->tid, CLK, block_twice_worker, &c);
	ck_assert_int_eq(h_server_run(s, w, 0), 0);
	ck_assert_state(&w->task, UMCG_TASK_BLOCKED);

	/* Round 1, server RUNNING: end pushes w and w waits to be run. */
	ck_assert_int_eq(write(c.fd[1], "x", 1), 1);
	h_server_wait_listed(s, w);
	ck_assert_state(&w->task, UMCG_TASK_RUNNABLE);
	for (i = 0; i < 10; i++) {
		h_sleep_us(10000);
		ck_assert_msg(atomic_load(&w->r[2]) == H_PENDING,
			      "umcg_block_end() returned before the worker was run");
		ck_assert_state(&w->task, UMCG_TASK_RUNNABLE);
		ck_assert(h_list_contains(&s->task, &w->task));
	}
	ck_assert_int_eq(h_server_run(s, w, 0), 0); /* runs w; woken by its next begin */
	ck_assert_int_eq(atomic_load(&w->r[1]), 0);
	ck_assert_int_eq(atomic_load(&w->r[2]), 1);
	H_WAIT_UNTIL(atomic_load(&w->r[3]) != H_PENDING, "umcg_block_begin() to return");
	ck_assert_int_eq(atomic_load(&w->r[3]), 0);
	ck_assert_state(&w->task, UMCG_TASK_BLOCKED);

	/* Round 2, server asleep: the end's push wakes it. */
	dw.fd = c.fd[1];
	dw.after_us = 20000;
	th = h_thread(delayed_writer, &dw);
	ck_assert_int_eq(h_server_run(s, w, 0), 0);
	h_join(th);
	ck_assert_int_eq(atomic_load(&w->r[4]), 0);
	ck_assert_int_eq(atomic_load(&w->r[5]), 1);
}
END_TEST

struct ts_ctx {
	int fd[2];
	_Atomic uint64_t t0;
};

static void timestamp_worker(struct h_worker *w)
{
	struct ts_ctx *c = w->arg;
	char ch;

	atomic_store(&c->t0, h_now(w->clock));
	atomic_store(&w->r[0], umcg_block_begin());
	H_CHECK(read(c->fd[0], &ch, 1) == 1, "read from the pipe failed");
	atomic_store(&w->r[1], umcg_block_end());
}

START_TEST(s7r01_timestamps)
{
	const clockid_t clk = CLOCK_REALTIME;
	struct ts_ctx c;
	struct h_server *s;
	struct h_worker *w;
	uint64_t t1, t2, t3, bts, rts;

	HOOKS_OR_NOOP();
	ck_assert_int_eq(pipe2(c.fd, O_CLOEXEC), 0);
	atomic_init(&c.t0, 0);
	s = h_server_register(clk);
	w = h_worker_start(s->tid, clk, timestamp_worker, &c);
	ck_assert_int_eq(h_server_run(s, w, 0), 0);
	t1 = h_now(clk);
	bts = h_load(&w->task.blocked_ts);
	ck_assert_msg(bts >= atomic_load(&c.t0) && bts <= t1,
		      "blocked_ts %" PRIu64 " not in [%" PRIu64 ", %" PRIu64 "]", bts,
		      atomic_load(&c.t0), t1);
	t2 = h_now(clk);
	ck_assert_int_eq(write(c.fd[1], "x", 1), 1);
	h_server_wait_listed(s, w);
	t3 = h_now(clk);
	rts = h_load(&w->task.runnable_ts);
	ck_assert_msg(rts >= t2 && rts <= t3,
		      "runnable_ts %" PRIu64 " not in [%" PRIu64 ", %" PRIu64 "]", rts, t2, t3);
	ck_assert_uint_ge(rts, bts);
	ck_assert_uint_eq(h_load(&w->task.blocked_ts), bts);
	ck_assert_int_eq(h_server_run(s, w, 0), 0);
	ck_assert_int_eq(atomic_load(&w->r[1]), 0);
}
END_TEST

START_TEST(s10r05_begin_not_worker)
{
	struct h_server *s;
	struct h_snap snap;

	HOOKS_OR_NOOP();
	ck_assert_int_eq(umcg_block_begin(), -EINVAL);
	ck_assert_int_eq(umcg_block_end(), -EINVAL);
	s = h_server_register(CLK);
	h_snap_take(&snap, &s->task, NULL, NULL, NULL);
	ck_assert_int_eq(umcg_block_begin(), -EINVAL);
	ck_assert_int_eq(umcg_block_end(), -EINVAL);
	H_ASSERT_UNCHANGED(&snap, "the blocking hooks on a server");
}
END_TEST

static void end_without_begin_worker(struct h_worker *w)
{
	struct h_server *s = w->arg;
	struct h_snap snap;

	await_consumed(s);
	h_snap_take(&snap, &w->task, &s->task, NULL, NULL);
	atomic_store(&w->r[0], umcg_block_end());
	H_ASSERT_UNCHANGED(&snap, "umcg_block_end() without begin");
	atomic_store(&w->r[1], umcg_block_begin());
	atomic_store(&w->r[2], umcg_block_end());
	h_snap_take(&snap, &w->task, NULL, NULL, NULL);
	atomic_store(&w->r[3], umcg_block_end());
	H_ASSERT_UNCHANGED(&snap, "a second umcg_block_end()");
}

START_TEST(s10r05_end_without_begin)
{
	struct h_server *s;
	struct h_worker *w;

	HOOKS_OR_NOOP();
	s = h_server_register(CLK);
	w = h_worker_start(s->tid, CLK, end_without_begin_worker, s);
	ck_assert_int_eq(h_server_run(s, w, 0), 0); /* woken by the begin */
	ck_assert_int_eq(h_server_run(s, w, 0), 0); /* runs it after its end */
	ck_assert_int_eq(atomic_load(&w->r[0]), -EINVAL);
	ck_assert_int_eq(atomic_load(&w->r[1]), 0);
	ck_assert_int_eq(atomic_load(&w->r[2]), 0);
	ck_assert_int_eq(atomic_load(&w->r[3]), -EINVAL);
}
END_TEST

static void nested_begin_worker(struct h_worker *w)
{
	struct h_snap snap;

	atomic_store(&w->r[0], umcg_block_begin());
	h_snap_take(&snap, &w->task, NULL, NULL, NULL);
	atomic_store(&w->r[1], umcg_block_begin());
	H_ASSERT_UNCHANGED(&snap, "a nested umcg_block_begin()");
	atomic_store(&w->r[2], umcg_block_end());
}

START_TEST(s10r05_nested_begin)
{
	struct h_server *s;
	struct h_worker *w;

	HOOKS_OR_NOOP();
	s = h_server_register(CLK);
	w = h_worker_start(s->tid, CLK, nested_begin_worker, NULL);
	ck_assert_int_eq(h_server_run(s, w, 0), 0);
	ck_assert_int_eq(h_server_run(s, w, 0), 0);
	ck_assert_int_eq(atomic_load(&w->r[0]), 0);
	ck_assert_int_eq(atomic_load(&w->r[1]), -EINVAL);
	ck_assert_int_eq(atomic_load(&w->r[2]), 0);
}
END_TEST

static void begin_not_running_worker(struct h_worker *w)
{
	struct h_server *s = w->arg;
	struct h_snap snap;

	await_consumed(s);
	h_set_state(&w->task, UMCG_TASK_RUNNABLE | UMCG_TF_COND_WAIT);
	h_snap_take(&snap, &w->task, &s->task, NULL, NULL);
	atomic_store(&w->r[0], umcg_block_begin());
	H_ASSERT_UNCHANGED(&snap, "umcg_block_begin() when not RUNNING");
	H_CHECK(h_cas_state(&w->task, UMCG_TASK_RUNNABLE | UMCG_TF_COND_WAIT, UMCG_TASK_RUNNING),
		"could not set the worker RUNNING again");
	/* Nothing was left half-done: a real region works. */
	atomic_store(&w->r[1], umcg_block_begin());
	atomic_store(&w->r[2], umcg_block_end());
}

START_TEST(s10r05_begin_not_running)
{
	struct h_server *s;
	struct h_worker *w;

	HOOKS_OR_NOOP();
	s = h_server_register(CLK);
	w = h_worker_start(s->tid, CLK, begin_not_running_worker, s);
	ck_assert_int_eq(h_server_run(s, w, 0), 0);
	ck_assert_int_eq(h_server_run(s, w, 0), 0);
	ck_assert_int_eq(atomic_load(&w->r[0]), -EAGAIN);
	ck_assert_int_eq(atomic_load(&w->r[1]), 0);
	ck_assert_int_eq(atomic_load(&w->r[2]), 0);
}
END_TEST

static void raw_read_worker(struct h_worker *w)
{
	struct ts_ctx *c = w->arg;
	char ch;

	atomic_store(&c->t0, h_now(w->clock));
	atomic_store(&w->r[0], (int)read(c->fd[0], &ch, 1));
}

/* The kernel sees a worker sleep in any syscall (§7 rule 1), the emulation's
 * detection within its bound (§10 rule 15). */
START_TEST(s7r01_syscall_wakes_server)
{
	struct ts_ctx c;
	struct h_server *s;
	struct h_worker *w;
	uint64_t t1, bts;

	if (emulated() && umcg_detect_get() == 0) {
		h_skip("s7r01_syscall_wakes_server",
		       "detection is off (UMCG_DETECT_US=0): the emulation sees only blocking announced by the hooks");
		return;
	}
	ck_assert_int_eq(pipe2(c.fd, O_CLOEXEC), 0);
	atomic_init(&c.t0, 0);
	s = h_server_register(CLK);
	w = h_worker_start(s->tid, CLK, raw_read_worker, &c);
	ck_assert_int_eq(h_server_run(s, w, 0), 0);
	t1 = h_now(CLK);
	ck_assert_state(&w->task, UMCG_TASK_BLOCKED);
	bts = h_load(&w->task.blocked_ts);
	ck_assert_msg(bts >= atomic_load(&c.t0) && bts <= t1,
		      "blocked_ts %" PRIu64 " not in [%" PRIu64 ", %" PRIu64 "]", bts,
		      atomic_load(&c.t0), t1);
	ck_assert_int_eq(write(c.fd[1], "x", 1), 1);
	h_server_wait_listed(s, w);
	ck_assert_state(&w->task, UMCG_TASK_RUNNABLE);
	ck_assert_int_eq(h_server_run(s, w, 0), 0);
	ck_assert_int_eq(atomic_load(&w->r[0]), 1);
}
END_TEST

void conformance_add_block(Suite *s)
{
	TCase *tc = tcase(s, "block", 10);

	tcase_add_test(tc, s7r02_begin_wakes_server);
	tcase_add_test(tc, s7r02_begin_wakes_next);
	tcase_add_test(tc, s7r03_end_pushes_and_waits);
	tcase_add_test(tc, s7r01_timestamps);
	tcase_add_test(tc, s10r05_begin_not_worker);
	tcase_add_test(tc, s10r05_end_without_begin);
	tcase_add_test(tc, s10r05_nested_begin);
	tcase_add_test(tc, s10r05_begin_not_running);
	tcase_add_test(tc, s7r01_syscall_wakes_server);
}
