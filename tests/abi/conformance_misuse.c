/* SPDX-License-Identifier: MIT */
/*
 * tests/abi/conformance_misuse.c - the conformance suite's "misuse" tests:
 * misuse: the documented errno, and no state changed (see conformance.c).
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

/* ==== Misuse: documented errno and no state changed ===================== */

START_TEST(s4r14_misuse)
{
	struct h_server *s = h_server_register(CLK);
	struct h_worker *w = h_worker_start(s->tid, CLK, NULL, NULL);
	struct umcg_task *t = h_task_new();
	struct h_snap snap;

	ck_assert_int_eq(h_server_run(s, w, 0), 0); /* w parks on s's list */

#define MISUSE(call, want, what)                                                            \
	do {                                                                                \
		int ret_;                                                                   \
		h_snap_take(&snap, &s->task, &w->task, t, NULL);                            \
		ret_ = (call);                                                              \
		ck_assert_msg(ret_ == (want), "%s: %d, expected %d", (what), ret_, (want)); \
		H_ASSERT_UNCHANGED(&snap, (what));                                          \
	} while (0)

	MISUSE(h_ctl_thread(UMCG_CTL_REGISTER, NULL, CLK, false), -EINVAL, "NULL self");
	h_task_server(t, s->tid);
	MISUSE(h_ctl_thread(UMCG_CTL_REGISTER | 0x40, t, CLK, false), -EINVAL, "unknown flags");
	h_task_worker(t, atomic_load(&w->tid));
	MISUSE(h_ctl_thread(UMCG_CTL_REGISTER | UMCG_CTL_WORKER, t, CLK, false), -ESRCH,
	       "a worker's server is a worker");
	/* The calling thread names itself: compare all but server_tid. */
	h_task_server(t, 0);
	t->state = UMCG_TASK_BLOCKED;
	h_snap_take(&snap, &s->task, &w->task, NULL, NULL);
	ck_assert_int_eq(h_ctl_thread(UMCG_CTL_REGISTER, t, CLK, true), -EINVAL);
	H_ASSERT_UNCHANGED(&snap, "a BLOCKED server");
	ck_assert_state(t, UMCG_TASK_BLOCKED);
	ck_assert_uint_eq(t->next_tid, 0);
	ck_assert_uint_eq(t->runnable_workers_ptr, 0);
	h_task_worker(t, s->tid);
	t->state = UMCG_TASK_RUNNING;
	MISUSE(h_ctl_thread(UMCG_CTL_REGISTER | UMCG_CTL_WORKER, t, CLK, false), -EINVAL,
	       "a RUNNING worker");
	MISUSE(h_ctl_thread(UMCG_CTL_UNREGISTER, NULL, 0, false), -EINVAL,
	       "UNREGISTER from an unregistered thread");
	h_task_server(t, s->tid);
	MISUSE(umcg_ctl(UMCG_CTL_REGISTER, t, CLK), -EINVAL, "a server registering twice");
	h_task_worker(t, s->tid);
	MISUSE(umcg_ctl(UMCG_CTL_REGISTER | UMCG_CTL_WORKER, t, CLK), -EINVAL,
	       "a server registering as a worker");
	MISUSE(umcg_ctl(UMCG_CTL_REGISTER, &s->task, CLK), -EINVAL,
	       "a server registering its own task twice");
#undef MISUSE
}
END_TEST

static void misuse_wait_worker(struct h_worker *w)
{
	struct h_server *s = w->arg;
	struct h_snap snap;

	await_consumed(s);
	h_snap_take(&snap, &w->task, &s->task, NULL, NULL);
	atomic_store(&w->r[0], umcg_wait(4, 0));
	atomic_store(&w->r[1], umcg_wait(0, 0));
	H_ASSERT_UNCHANGED(&snap, "a worker's umcg_wait() misuse");
	h_set_state(&w->task, UMCG_TASK_RUNNABLE | UMCG_TF_COND_WAIT);
	h_snap_take(&snap, &w->task, &s->task, NULL, NULL);
	atomic_store(&w->r[2], umcg_wait(0, h_now(CLK) + MS));
	H_ASSERT_UNCHANGED(&snap, "a worker's umcg_wait() with a timeout");
	H_CHECK(h_cas_state(&w->task, UMCG_TASK_RUNNABLE | UMCG_TF_COND_WAIT, UMCG_TASK_RUNNING),
		"could not set the worker RUNNING again");
}

static void *wait_unregistered(void *arg)
{
	atomic_int *ret = arg;

	atomic_store(ret, umcg_wait(0, 0));
	return NULL;
}

START_TEST(s5r09_misuse)
{
	struct h_server *s = h_server_register(CLK);
	struct h_worker *p = h_worker_start(s->tid, CLK, NULL, NULL);
	struct h_worker *w;
	struct h_snap snap;
	atomic_int ret = H_PENDING;

	ck_assert_int_eq(h_server_run(s, p, 0), 0); /* p parks on s's list */
	h_snap_take(&snap, &s->task, &p->task, NULL, NULL);
	h_join(h_thread(wait_unregistered, &ret));
	ck_assert_int_eq(atomic_load(&ret), -EINVAL);
	ck_assert_int_eq(umcg_wait(8, 0), -EINVAL);
	ck_assert_int_eq(umcg_wait(0, 0), -EAGAIN);
	H_ASSERT_UNCHANGED(&snap, "umcg_wait() misuse");

	w = h_worker_start(s->tid, CLK, misuse_wait_worker, s);
	ck_assert_int_eq(h_server_run(s, w, 0), 0);
	ck_assert_int_eq(atomic_load(&w->r[0]), -EINVAL);
	ck_assert_int_eq(atomic_load(&w->r[1]), -EAGAIN);
	ck_assert_int_eq(atomic_load(&w->r[2]), -ERANGE);
}
END_TEST

static void kick_sleeping_server_worker(struct h_worker *w)
{
	struct h_server *s = w->arg;
	struct h_snap snap;

	await_consumed(s);
	h_snap_take(&snap, &s->task, NULL, NULL, NULL);
	atomic_store(&w->r[0], umcg_kick(0, s->tid));
	h_spin_us(20000);
	H_ASSERT_UNCHANGED(&snap, "kicking a sleeping server");
}

START_TEST(s6r02_misuse)
{
	struct h_server *s = h_server_register(CLK);
	struct h_worker *p = h_worker_start(s->tid, CLK, NULL, NULL);
	struct h_worker *w;
	struct h_idle idle;
	struct h_snap snap;

	ck_assert_int_eq(h_server_run(s, p, 0), 0); /* p parks on s's list */
	h_idle_start(&idle);
	h_snap_take(&snap, &s->task, &p->task, NULL, NULL);
	ck_assert_int_eq(umcg_kick(1, atomic_load(&p->tid)), -EINVAL);
	ck_assert_int_eq(umcg_kick(0, 0), -ESRCH);
	ck_assert_int_eq(umcg_kick(0, atomic_load(&idle.tid)), -ESRCH);
	/* No TF_PREEMPT: nothing visible, on a RUNNABLE worker or on oneself. */
	ck_assert_int_eq(umcg_kick(0, atomic_load(&p->tid)), 0);
	ck_assert_int_eq(umcg_kick(0, s->tid), 0);
	h_sleep_us(20000);
	H_ASSERT_UNCHANGED(&snap, "umcg_kick() misuse");
	h_idle_stop(&idle);

	w = h_worker_start(s->tid, CLK, kick_sleeping_server_worker, s);
	ck_assert_int_eq(h_server_run(s, w, 0), 0);
	ck_assert_int_eq(atomic_load(&w->r[0]), 0);
}
END_TEST

static void preempt_self_worker(struct h_worker *w)
{
	struct h_snap snap;

	h_snap_take(&snap, &w->task, NULL, NULL, NULL);
	atomic_store(&w->r[0], umcg_preempt(&w->task, NO_SUCH_TID));
	H_ASSERT_UNCHANGED(&snap, "umcg_preempt() of a bad tid");
}

START_TEST(s8r03_misuse)
{
	struct h_server *s = h_server_register(CLK);
	struct h_worker *p = h_worker_start(s->tid, CLK, NULL, NULL);
	struct umcg_task *fake = h_task_new();
	unsigned char *buf = h_alloc(128), copy[128];
	struct h_worker *w;
	struct h_idle idle;
	struct h_snap snap;

	ck_assert_int_eq(h_server_run(s, p, 0), 0); /* p parks on s's list */
	buf[32] = UMCG_TASK_RUNNING;
	memcpy(copy, buf, 128);
	ck_assert_int_eq(umcg_preempt(NULL, atomic_load(&p->tid)), -EINVAL);
	ck_assert_int_eq(umcg_preempt((void *)(buf + 32), atomic_load(&p->tid)), -EINVAL);
	ck_assert(!memcmp(buf, copy, 128));

	h_snap_take(&snap, &s->task, &p->task, NULL, NULL);
	ck_assert_int_eq(umcg_preempt(&p->task, atomic_load(&p->tid)), -EAGAIN);
	H_ASSERT_UNCHANGED(&snap, "umcg_preempt() of a RUNNABLE worker");

	h_idle_start(&idle);
	fake->state = UMCG_TASK_RUNNING;
	h_snap_take(&snap, fake, &s->task, &p->task, NULL);
	ck_assert_int_eq(umcg_preempt(fake, atomic_load(&idle.tid)), -ESRCH);
	ck_assert_int_eq(umcg_preempt(fake, NO_SUCH_TID), -ESRCH);
	H_ASSERT_UNCHANGED(&snap, "umcg_preempt() of a tid that is no UMCG task");
	h_idle_stop(&idle);

	w = h_worker_start(s->tid, CLK, preempt_self_worker, NULL);
	ck_assert_int_eq(h_server_run(s, w, 0), 0);
	ck_assert_int_eq(atomic_load(&w->r[0]), -ESRCH);
}
END_TEST

START_TEST(s3r08_misuse_take_null)
{
	struct h_server *s = h_server_register(CLK);
	struct h_worker *p = h_worker_start(s->tid, CLK, NULL, NULL);
	struct h_snap snap;

	h_server_wait_listed(s, p);
	h_snap_take(&snap, &s->task, &p->task, NULL, NULL);
	ck_assert_ptr_null(umcg_runnable_take(NULL));
	ck_assert_uint_eq(umcg_runnable_count(NULL), 0);
	ck_assert_ptr_null(umcg_runnable_sort_oldest(NULL));
	H_ASSERT_UNCHANGED(&snap, "umcg_runnable_take(NULL)");
}
END_TEST

void conformance_add_misuse(Suite *s)
{
	TCase *tc = tcase(s, "misuse", 10);

	tcase_add_test(tc, s4r14_misuse);
	tcase_add_test(tc, s5r09_misuse);
	tcase_add_test(tc, s6r02_misuse);
	tcase_add_test(tc, s8r03_misuse);
	tcase_add_test(tc, s3r08_misuse_take_null);
}
