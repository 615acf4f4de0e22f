/* SPDX-License-Identifier: MIT */
/*
 * tests/abi/conformance_ctl.c - the conformance suite's "ctl" tests:
 * doc/umcg-abi.md §4: umcg_ctl(), registration and its checks in order
 * (see conformance.c).
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

/* ==== §4: umcg_ctl() ==================================================== */

START_TEST(s4r01_misaligned_self)
{
	static const size_t offs[] = { 1, 4, 8, 16, 32, 63 };
	unsigned char *buf = h_alloc(256), before[256];
	struct umcg_task *tmpl = server_task_for(h_gettid());
	struct umcg_task *wtmpl = worker_task_for(h_gettid());
	size_t i;

	for (i = 0; i < sizeof(offs) / sizeof(offs[0]); i++) {
		void *p = buf + offs[i];

		memset(buf, 0, 256);
		memcpy(p, tmpl, sizeof(*tmpl));
		memcpy(before, buf, 256);
		ck_assert_int_eq(umcg_ctl(UMCG_CTL_REGISTER, p, CLK), -EINVAL);
		memcpy(p, wtmpl, sizeof(*wtmpl));
		memcpy(before, buf, 256);
		ck_assert_int_eq(umcg_ctl(UMCG_CTL_REGISTER | UMCG_CTL_WORKER, p, CLK), -EINVAL);
		ck_assert_int_eq(umcg_ctl(UMCG_CTL_UNREGISTER, p, 0), -EINVAL);
		ck_assert_msg(!memcmp(before, buf, 256), "a refused umcg_ctl() wrote to self");
		h_assert_unregistered("after a misaligned self");
	}
}
END_TEST

START_TEST(s4r02_unknown_flags)
{
	static const uint32_t bad[] = {
		0x4,
		0x8,
		0x100,
		0x8000,
		0x20000,
		0x80000000U,
		UMCG_CTL_REGISTER | 0x4,
		UMCG_CTL_REGISTER | 0x80000000U,
		UMCG_CTL_REGISTER | UMCG_CTL_WORKER | 0x20000,
		UMCG_CTL_UNREGISTER | 0x4,
	};
	struct umcg_task *t = server_task_for(h_gettid());
	struct h_snap snap;
	size_t i;

	h_snap_take(&snap, t, NULL, NULL, NULL);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int ret = umcg_ctl(bad[i], bad[i] & UMCG_CTL_UNREGISTER ? NULL : t, CLK);

		ck_assert_msg(ret == -EINVAL, "umcg_ctl(%#x) gave %d, expected -EINVAL", bad[i],
			      ret);
		H_ASSERT_UNCHANGED(&snap, "umcg_ctl() with unknown flags");
		h_assert_unregistered("after unknown flags");
	}
	/* The task itself was fine. */
	ck_assert_int_eq(umcg_ctl(UMCG_CTL_REGISTER, t, CLK), 0);
	ck_assert_int_eq(umcg_ctl(UMCG_CTL_UNREGISTER, NULL, 0), 0);
}
END_TEST

START_TEST(s4r03_unregister_nonnull_self)
{
	struct umcg_task *t = server_task_for(h_gettid());
	struct umcg_task *other = server_task_for(h_gettid());
	struct h_snap snap;

	ck_assert_int_eq(umcg_ctl(UMCG_CTL_UNREGISTER, t, 0), -EINVAL);
	ck_assert_int_eq(umcg_ctl(UMCG_CTL_REGISTER, t, CLK), 0);
	h_snap_take(&snap, t, other, NULL, NULL);
	ck_assert_int_eq(umcg_ctl(UMCG_CTL_UNREGISTER, t, 0), -EINVAL);
	ck_assert_int_eq(umcg_ctl(UMCG_CTL_UNREGISTER, other, 0), -EINVAL);
	H_ASSERT_UNCHANGED(&snap, "UNREGISTER with a non-NULL self");
	/* Still registered: the plain UNREGISTER works exactly once. */
	ck_assert_int_eq(umcg_ctl(UMCG_CTL_UNREGISTER, NULL, 0), 0);
	h_assert_unregistered("after UNREGISTER");
}
END_TEST

START_TEST(s4r03_unregister_unregistered)
{
	struct umcg_task *t = server_task_for(h_gettid());

	ck_assert_int_eq(umcg_ctl(UMCG_CTL_UNREGISTER, NULL, 0), -EINVAL);
	ck_assert_int_eq(umcg_ctl(UMCG_CTL_UNREGISTER, NULL, CLK), -EINVAL);
	ck_assert_int_eq(umcg_ctl(UMCG_CTL_REGISTER, t, CLK), 0);
	ck_assert_int_eq(umcg_ctl(UMCG_CTL_UNREGISTER, NULL, 0), 0);
	ck_assert_int_eq(umcg_ctl(UMCG_CTL_UNREGISTER, NULL, 0), -EINVAL);
}
END_TEST

START_TEST(s4r04_register_missing)
{
	struct umcg_task *t = server_task_for(h_gettid());
	struct umcg_task *wt;
	struct h_server *s;
	struct h_snap snap;

	h_snap_take(&snap, t, NULL, NULL, NULL);
	ck_assert_int_eq(umcg_ctl(0, t, CLK), -EINVAL);
	ck_assert_int_eq(umcg_ctl(UMCG_CTL_WORKER, t, CLK), -EINVAL);
	H_ASSERT_UNCHANGED(&snap, "umcg_ctl() without REGISTER");
	h_assert_unregistered("without REGISTER");

	/* A worker task that would register fine with REGISTER | WORKER. */
	s = h_server_register(CLK);
	wt = worker_task_for(s->tid);
	h_snap_take(&snap, wt, &s->task, NULL, NULL);
	ck_assert_int_eq(h_ctl_thread(UMCG_CTL_WORKER, wt, CLK, false), -EINVAL);
	ck_assert_int_eq(h_ctl_thread(0, wt, CLK, false), -EINVAL);
	H_ASSERT_UNCHANGED(&snap, "a worker umcg_ctl() without REGISTER");
}
END_TEST

START_TEST(s4r05_bad_clock)
{
	static const clockid_t bad[] = {
		CLOCK_PROCESS_CPUTIME_ID,
		CLOCK_THREAD_CPUTIME_ID,
		CLOCK_MONOTONIC_RAW,
		CLOCK_REALTIME_COARSE,
		CLOCK_MONOTONIC_COARSE,
		CLOCK_REALTIME_ALARM,
		CLOCK_BOOTTIME_ALARM,
		-1,
		99,
	};
	struct umcg_task *t = server_task_for(h_gettid());
	struct umcg_task *wt;
	struct h_server *s;
	struct h_snap snap;
	clockid_t cpu;
	size_t i;

	h_snap_take(&snap, t, NULL, NULL, NULL);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int ret = umcg_ctl(UMCG_CTL_REGISTER, t, bad[i]);

		ck_assert_msg(ret == -EINVAL, "clock %d gave %d, expected -EINVAL", (int)bad[i],
			      ret);
	}
	ck_assert_int_eq(pthread_getcpuclockid(pthread_self(), &cpu), 0);
	ck_assert_int_eq(umcg_ctl(UMCG_CTL_REGISTER, t, cpu), -EINVAL);
	H_ASSERT_UNCHANGED(&snap, "umcg_ctl() with a bad clock");
	h_assert_unregistered("after bad clocks");

	s = h_server_register(CLK);
	wt = worker_task_for(s->tid);
	h_snap_take(&snap, wt, &s->task, NULL, NULL);
	ck_assert_int_eq(h_ctl_thread(UMCG_CTL_REGISTER | UMCG_CTL_WORKER, wt, CLOCK_MONOTONIC_RAW,
				      false),
			 -EINVAL);
	ck_assert_int_eq(h_ctl_thread(UMCG_CTL_REGISTER | UMCG_CTL_WORKER, wt, 99, false), -EINVAL);
	H_ASSERT_UNCHANGED(&snap, "a worker umcg_ctl() with a bad clock");
}
END_TEST

START_TEST(s4r05_valid_clocks)
{
	static const clockid_t good[] = { CLOCK_REALTIME, CLOCK_MONOTONIC, CLOCK_BOOTTIME,
					  CLOCK_TAI };
	size_t i;

	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		struct umcg_task *t = server_task_for(h_gettid());

		ck_assert_msg(umcg_ctl(UMCG_CTL_REGISTER, t, good[i]) == 0, "clock %d refused",
			      (int)good[i]);
		ck_assert_int_eq(umcg_ctl(UMCG_CTL_UNREGISTER, NULL, 0), 0);
	}
}
END_TEST

static void double_register_worker(struct h_worker *w)
{
	struct umcg_task *other = w->arg;
	struct h_snap snap;

	h_snap_take(&snap, &w->task, other, NULL, NULL);
	atomic_store(&w->r[0], umcg_ctl(UMCG_CTL_REGISTER | UMCG_CTL_WORKER, other, CLK));
	atomic_store(&w->r[1], umcg_ctl(UMCG_CTL_REGISTER | UMCG_CTL_WORKER, &w->task, CLK));
	H_ASSERT_UNCHANGED(&snap, "a worker registering again");
}

START_TEST(s4r06_double_register)
{
	struct umcg_task *t2 = server_task_for(h_gettid());
	struct umcg_task *wt, *wt2;
	struct h_server *s = h_server_register(CLK);
	struct h_worker *w;
	struct h_snap snap;

	wt = worker_task_for(s->tid);
	h_snap_take(&snap, &s->task, t2, wt, NULL);
	ck_assert_int_eq(umcg_ctl(UMCG_CTL_REGISTER, &s->task, CLK), -EINVAL);
	ck_assert_int_eq(umcg_ctl(UMCG_CTL_REGISTER, t2, CLK), -EINVAL);
	ck_assert_int_eq(umcg_ctl(UMCG_CTL_REGISTER | UMCG_CTL_WORKER, wt, CLK), -EINVAL);
	H_ASSERT_UNCHANGED(&snap, "a server registering again");

	/* A registered worker, running, tries again. */
	wt2 = worker_task_for(s->tid);
	w = h_worker_start(s->tid, CLK, double_register_worker, wt2);
	ck_assert_int_eq(h_server_run(s, w, 0), 0);
	ck_assert_int_eq(atomic_load(&w->r[0]), -EINVAL);
	ck_assert_int_eq(atomic_load(&w->r[1]), -EINVAL);

	ck_assert_int_eq(umcg_ctl(UMCG_CTL_UNREGISTER, NULL, 0), 0);
	ck_assert_int_eq(umcg_ctl(UMCG_CTL_UNREGISTER, NULL, 0), -EINVAL);
}
END_TEST

START_TEST(s4r06_null_self)
{
	static const clockid_t clocks[] = { CLOCK_REALTIME, CLOCK_MONOTONIC, CLOCK_BOOTTIME,
					    CLOCK_TAI };
	size_t i;

	for (i = 0; i < sizeof(clocks) / sizeof(clocks[0]); i++) {
		ck_assert_int_eq(umcg_ctl(UMCG_CTL_REGISTER, NULL, clocks[i]), -EINVAL);
		ck_assert_int_eq(umcg_ctl(UMCG_CTL_REGISTER | UMCG_CTL_WORKER, NULL, clocks[i]),
				 -EINVAL);
	}
	h_assert_unregistered("after a NULL self");
}
END_TEST

START_TEST(s4r07_unreadable_self)
{
	long page = sysconf(_SC_PAGESIZE);
	unsigned char *map = mmap(NULL, 2 * page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	unsigned char *gone;
	void *where[4];
	size_t i;

	ck_assert_ptr_ne(map, MAP_FAILED);
	where[0] = map;
	where[1] = map + 64;
	where[2] = map + page - 64;
	where[3] = map + page;
	for (i = 0; i < 4; i++) {
		ck_assert_int_eq(umcg_ctl(UMCG_CTL_REGISTER, where[i], CLK), -EFAULT);
		ck_assert_int_eq(umcg_ctl(UMCG_CTL_REGISTER | UMCG_CTL_WORKER, where[i], CLK),
				 -EFAULT);
	}
	/* Memory that is not mapped at all. */
	gone = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ck_assert_ptr_ne(gone, MAP_FAILED);
	ck_assert_int_eq(munmap(gone, page), 0);
	ck_assert_int_eq(umcg_ctl(UMCG_CTL_REGISTER, (void *)gone, CLK), -EFAULT);
	h_assert_unregistered("after an unreadable self");
}
END_TEST

/*
 * check_zero_field() - §4 rule 8 for one field: a task that is valid except
 * for @poison is refused with -EINVAL, for a server and for a worker.
 */
static void check_zero_field(void (*poison)(struct umcg_task *t, pid_t tid), const char *what)
{
	struct umcg_task *t = server_task_for(h_gettid());
	struct umcg_task *wt;
	struct h_server *s;
	struct h_snap snap;
	int ret;

	poison(t, h_gettid());
	h_snap_take(&snap, t, NULL, NULL, NULL);
	ret = umcg_ctl(UMCG_CTL_REGISTER, t, CLK);
	ck_assert_msg(ret == -EINVAL, "server with %s: %d, expected -EINVAL", what, ret);
	H_ASSERT_UNCHANGED(&snap, what);
	h_assert_unregistered(what);

	s = h_server_register(CLK);
	wt = worker_task_for(s->tid);
	poison(wt, s->tid);
	h_snap_take(&snap, wt, &s->task, NULL, NULL);
	ret = h_ctl_thread(UMCG_CTL_REGISTER | UMCG_CTL_WORKER, wt, CLK, false);
	ck_assert_msg(ret == -EINVAL, "worker with %s: %d, expected -EINVAL", what, ret);
	H_ASSERT_UNCHANGED(&snap, what);
}

static void poison_next_self(struct umcg_task *t, pid_t tid)
{
	t->next_tid = (uint32_t)tid;
}

static void poison_next_one(struct umcg_task *t, pid_t tid)
{
	(void)tid;
	t->next_tid = 1;
}

static void poison_hole(struct umcg_task *t, pid_t tid)
{
	(void)tid;
	t->__hole[0] = 0x80000000U;
}

static void poison_zero0(struct umcg_task *t, pid_t tid)
{
	(void)tid;
	t->__zero[0] = 1;
}

static void poison_zero1(struct umcg_task *t, pid_t tid)
{
	(void)tid;
	t->__zero[1] = 1ULL << 63;
}

static void poison_zero2(struct umcg_task *t, pid_t tid)
{
	(void)tid;
	t->__zero[2] = 0x100;
}

START_TEST(s4r08_nonzero_next_tid)
{
	check_zero_field(poison_next_self, "next_tid = own tid");
}
END_TEST

START_TEST(s4r08_nonzero_next_tid_other)
{
	check_zero_field(poison_next_one, "next_tid = 1");
}
END_TEST

START_TEST(s4r08_nonzero_hole)
{
	check_zero_field(poison_hole, "__hole[0] != 0");
}
END_TEST

START_TEST(s4r08_nonzero_zero)
{
	switch (_i) {
	case 0:
		check_zero_field(poison_zero0, "__zero[0] != 0");
		break;
	case 1:
		check_zero_field(poison_zero1, "__zero[1] != 0");
		break;
	default:
		check_zero_field(poison_zero2, "__zero[2] != 0");
		break;
	}
}
END_TEST

START_TEST(s4r09_server_tid_not_self)
{
	atomic_int release = 0;
	struct h_server *other = h_server_thread_start(CLK, idle_server, &release);
	struct h_idle idle;
	pid_t child = h_fork_sleeper();
	pid_t bad[8];
	struct umcg_task *t = h_task_new();
	struct h_snap snap;
	size_t i;

	h_idle_start(&idle);
	bad[0] = 0;
	bad[1] = 1;
	bad[2] = getppid();
	bad[3] = child;
	bad[4] = atomic_load(&idle.tid);
	bad[5] = other->tid;
	bad[6] = NO_SUCH_TID;
	bad[7] = -1;
	for (i = 0; i < 8; i++) {
		int ret;

		h_task_server(t, bad[i]);
		h_snap_take(&snap, t, &other->task, NULL, NULL);
		ret = umcg_ctl(UMCG_CTL_REGISTER, t, CLK);
		ck_assert_msg(ret == -ESRCH, "server_tid %d for a server: %d, expected -ESRCH",
			      (int)bad[i], ret);
		H_ASSERT_UNCHANGED(&snap, "a server naming another thread");
		h_assert_unregistered("a server naming another thread");
	}
	atomic_store(&release, 1);
	h_server_thread_join(other);
	h_idle_stop(&idle);
	h_kill(child);
}
END_TEST

START_TEST(s4r09_worker_server_unregistered)
{
	struct umcg_task *t = h_task_new(), *st = server_task_for(h_gettid());
	struct h_idle idle;
	pid_t bad[3];
	size_t i;

	h_idle_start(&idle);
	bad[0] = h_gettid(); /* this thread: not registered */
	bad[1] = atomic_load(&idle.tid);
	bad[2] = NO_SUCH_TID;
	for (i = 0; i < 3; i++) {
		h_task_worker(t, bad[i]);
		ck_assert_msg(h_ctl_thread(UMCG_CTL_REGISTER | UMCG_CTL_WORKER, t, CLK, false) ==
				      -ESRCH,
			      "a worker of unregistered thread %d was not refused with -ESRCH",
			      (int)bad[i]);
	}
	/* A worker naming itself. */
	h_task_worker(t, 0);
	ck_assert_int_eq(h_ctl_thread(UMCG_CTL_REGISTER | UMCG_CTL_WORKER, t, CLK, true), -ESRCH);
	/* A server that has unregistered again. */
	ck_assert_int_eq(umcg_ctl(UMCG_CTL_REGISTER, st, CLK), 0);
	ck_assert_int_eq(umcg_ctl(UMCG_CTL_UNREGISTER, NULL, 0), 0);
	h_task_worker(t, h_gettid());
	ck_assert_int_eq(h_ctl_thread(UMCG_CTL_REGISTER | UMCG_CTL_WORKER, t, CLK, false), -ESRCH);
	h_idle_stop(&idle);
}
END_TEST

START_TEST(s4r09_worker_server_is_worker)
{
	struct h_server *s = h_server_register(CLK);
	struct h_worker *w = h_worker_start(s->tid, CLK, NULL, NULL);
	struct umcg_task *t = h_task_new();
	struct h_snap snap;

	/* Run w once: it parks, RUNNABLE on s's list, registered for sure. */
	ck_assert_int_eq(h_server_run(s, w, 0), 0);
	h_task_worker(t, atomic_load(&w->tid));
	h_snap_take(&snap, t, &s->task, &w->task, NULL);
	ck_assert_int_eq(h_ctl_thread(UMCG_CTL_REGISTER | UMCG_CTL_WORKER, t, CLK, false), -ESRCH);
	H_ASSERT_UNCHANGED(&snap, "a worker naming a worker as its server");
}
END_TEST

START_TEST(s4r09_worker_server_other_process)
{
	struct h_server *s = h_server_register(CLK);
	pid_t child = h_fork_sleeper();
	struct umcg_task *t = h_task_new();
	struct h_snap snap;
	pid_t bad[5];
	size_t i;

	bad[0] = 1;
	bad[1] = getppid();
	bad[2] = child;
	bad[3] = 0;
	bad[4] = -1;
	for (i = 0; i < 5; i++) {
		h_task_worker(t, bad[i]);
		h_snap_take(&snap, t, &s->task, NULL, NULL);
		ck_assert_msg(h_ctl_thread(UMCG_CTL_REGISTER | UMCG_CTL_WORKER, t, CLK, false) ==
				      -ESRCH,
			      "a worker of tid %d (another process) was not refused with -ESRCH",
			      (int)bad[i]);
		H_ASSERT_UNCHANGED(&snap, "a worker naming another process");
	}
	h_kill(child);
}
END_TEST

START_TEST(s4r10_worker_state_not_blocked)
{
	static const uint32_t bad[] = {
		UMCG_TASK_NONE,
		UMCG_TASK_RUNNING,
		UMCG_TASK_RUNNABLE,
		UMCG_TASK_BLOCKED | UMCG_TF_PREEMPT,
		UMCG_TASK_BLOCKED | UMCG_TF_COND_WAIT,
		UMCG_TASK_RUNNABLE | UMCG_TF_COND_WAIT,
		UMCG_TASK_BLOCKED | 0x0400,
		0x04,
	};
	struct h_server *s = h_server_register(CLK);
	struct umcg_task *t = h_task_new();
	struct h_snap snap;
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int ret;

		h_task_worker(t, s->tid);
		t->state = bad[i];
		h_snap_take(&snap, t, &s->task, NULL, NULL);
		ret = h_ctl_thread(UMCG_CTL_REGISTER | UMCG_CTL_WORKER, t, CLK, false);
		ck_assert_msg(ret == -EINVAL, "worker in state %#x: %d, expected -EINVAL", bad[i],
			      ret);
		H_ASSERT_UNCHANGED(&snap, "a worker in the wrong state");
	}
}
END_TEST

START_TEST(s4r10_server_state_not_running)
{
	static const uint32_t bad[] = {
		UMCG_TASK_NONE,
		UMCG_TASK_RUNNABLE,
		UMCG_TASK_BLOCKED,
		UMCG_TASK_RUNNING | UMCG_TF_PREEMPT,
		UMCG_TASK_RUNNING | UMCG_TF_COND_WAIT,
		UMCG_TASK_RUNNABLE | UMCG_TF_COND_WAIT,
		UMCG_TASK_RUNNING | 0x0800,
		0x05,
	};
	struct umcg_task *t = h_task_new();
	struct h_snap snap;
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int ret;

		h_task_server(t, h_gettid());
		t->state = bad[i];
		h_snap_take(&snap, t, NULL, NULL, NULL);
		ret = umcg_ctl(UMCG_CTL_REGISTER, t, CLK);
		ck_assert_msg(ret == -EINVAL, "server in state %#x: %d, expected -EINVAL", bad[i],
			      ret);
		H_ASSERT_UNCHANGED(&snap, "a server in the wrong state");
		h_assert_unregistered("a server in the wrong state");
	}
}
END_TEST

#define USER_BITS_S 0xa5a50000U
#define USER_BITS_W 0x5a5a0000U

static void user_bits_worker(struct h_worker *w)
{
	struct h_server *s = w->arg;

	atomic_store(&w->r[0], (int)h_state(&w->task));
	atomic_store(&w->r[1], (int)h_state(&s->task));
	h_yield(w);
	atomic_store(&w->r[2], (int)h_state(&w->task));
}

/*
 * §4 rule 10 compares the state and flag bits; bits 16-31 belong to user
 * space, and every transition keeps them (§2 rules 2 and 10).
 */
START_TEST(s4r10_user_bits_kept)
{
	struct h_server *s = h_server_register_state(CLK, UMCG_TASK_RUNNING | USER_BITS_S);
	struct h_worker *w;
	int ret;

	w = h_worker_start_state(s->tid, CLK, UMCG_TASK_BLOCKED | USER_BITS_W, user_bits_worker, s);
	ck_assert_int_eq(h_server_run(s, w, 0), 0);
	ck_assert_state(&s->task, UMCG_TASK_RUNNING | USER_BITS_S);
	ck_assert_int_eq(atomic_load(&w->reg_ret), 0);
	ck_assert_uint_eq((uint32_t)atomic_load(&w->r[0]), UMCG_TASK_RUNNING | USER_BITS_W);
	ck_assert_uint_eq((uint32_t)atomic_load(&w->r[1]), UMCG_TASK_RUNNABLE | USER_BITS_S);
	ck_assert_state(&w->task, UMCG_TASK_RUNNABLE | USER_BITS_W);
	ck_assert_int_eq(h_server_run(s, w, 0), 0);
	ck_assert_uint_eq((uint32_t)atomic_load(&w->r[2]), UMCG_TASK_RUNNING | USER_BITS_W);

	/* A timed-out wait also keeps them. */
	ret = h_server_switch(s, NULL, h_now(CLK) + 2 * MS);
	ck_assert_int_eq(ret, -ETIMEDOUT);
	ck_assert_state(&s->task, UMCG_TASK_RUNNING | USER_BITS_S);
}
END_TEST

/* The first failing check decides the error (§4 rule 11). */
START_TEST(s4r11_check_order)
{
	long page = sysconf(_SC_PAGESIZE);
	unsigned char *none = mmap(NULL, page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct umcg_task *t = server_task_for(h_gettid());

	ck_assert_ptr_ne(none, MAP_FAILED);
	/* 1 before 7: misaligned and unreadable. */
	ck_assert_int_eq(umcg_ctl(UMCG_CTL_REGISTER, (void *)(none + 8), CLK), -EINVAL);
	/* 2 before 7. */
	ck_assert_int_eq(umcg_ctl(UMCG_CTL_REGISTER | 0x4, (void *)none, CLK), -EINVAL);
	/* 3 before 7: UNREGISTER with an unreadable self. */
	ck_assert_int_eq(umcg_ctl(UMCG_CTL_UNREGISTER, (void *)none, 0), -EINVAL);
	/* 4 before 7. */
	ck_assert_int_eq(umcg_ctl(0, (void *)none, CLK), -EINVAL);
	ck_assert_int_eq(umcg_ctl(UMCG_CTL_WORKER, (void *)none, CLK), -EINVAL);
	/* 5 before 7. */
	ck_assert_int_eq(umcg_ctl(UMCG_CTL_REGISTER, (void *)none, 99), -EINVAL);
	ck_assert_int_eq(umcg_ctl(UMCG_CTL_REGISTER, (void *)none, CLOCK_MONOTONIC_RAW), -EINVAL);
	/* 6 before 7: NULL is not readable either. */
	ck_assert_int_eq(umcg_ctl(UMCG_CTL_REGISTER, NULL, CLK), -EINVAL);
	h_assert_unregistered("after the order checks");
	/* 6 (already registered) before 7. */
	ck_assert_int_eq(umcg_ctl(UMCG_CTL_REGISTER, t, CLK), 0);
	ck_assert_int_eq(umcg_ctl(UMCG_CTL_REGISTER, (void *)none, CLK), -EINVAL);
	ck_assert_int_eq(umcg_ctl(UMCG_CTL_REGISTER | UMCG_CTL_WORKER, (void *)none, CLK), -EINVAL);
	ck_assert_int_eq(umcg_ctl(UMCG_CTL_UNREGISTER, NULL, 0), 0);
}
END_TEST

START_TEST(s4r11_07_before_08)
{
	long page = sysconf(_SC_PAGESIZE);
	unsigned char *map =
		mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct umcg_task *t = (struct umcg_task *)(void *)map;
	struct umcg_task *wt = (struct umcg_task *)(void *)(map + 64);

	ck_assert_ptr_ne(map, MAP_FAILED);
	h_task_server(t, h_gettid());
	t->next_tid = 1;
	t->__zero[0] = 1;
	h_task_worker(wt, h_gettid());
	wt->__hole[0] = 1;
	ck_assert_int_eq(mprotect(map, page, PROT_NONE), 0);
	ck_assert_int_eq(umcg_ctl(UMCG_CTL_REGISTER, t, CLK), -EFAULT);
	ck_assert_int_eq(umcg_ctl(UMCG_CTL_REGISTER | UMCG_CTL_WORKER, wt, CLK), -EFAULT);
	h_assert_unregistered("after an unreadable self");
}
END_TEST

START_TEST(s4r11_08_before_09)
{
	struct umcg_task *t = server_task_for(1);
	struct h_server *s;
	struct umcg_task *wt;

	t->next_tid = 1;
	ck_assert_int_eq(umcg_ctl(UMCG_CTL_REGISTER, t, CLK), -EINVAL);
	h_assert_unregistered("next_tid and server_tid wrong");

	s = h_server_register(CLK);
	wt = worker_task_for(NO_SUCH_TID);
	wt->__zero[2] = 7;
	ck_assert_int_eq(h_ctl_thread(UMCG_CTL_REGISTER | UMCG_CTL_WORKER, wt, CLK, false),
			 -EINVAL);
	h_task_worker(wt, 1);
	wt->next_tid = (uint32_t)s->tid;
	ck_assert_int_eq(h_ctl_thread(UMCG_CTL_REGISTER | UMCG_CTL_WORKER, wt, CLK, false),
			 -EINVAL);
}
END_TEST

START_TEST(s4r11_09_before_10)
{
	struct umcg_task *t = server_task_for(1);
	struct h_server *s;
	struct h_idle idle;
	struct umcg_task *wt;

	t->state = UMCG_TASK_BLOCKED;
	ck_assert_int_eq(umcg_ctl(UMCG_CTL_REGISTER, t, CLK), -ESRCH);
	h_assert_unregistered("server_tid and state wrong");

	s = h_server_register(CLK);
	h_idle_start(&idle);
	wt = worker_task_for(atomic_load(&idle.tid));
	wt->state = UMCG_TASK_RUNNING;
	ck_assert_int_eq(h_ctl_thread(UMCG_CTL_REGISTER | UMCG_CTL_WORKER, wt, CLK, false), -ESRCH);
	/* A worker naming itself, in the wrong state. */
	h_task_worker(wt, 0);
	wt->state = UMCG_TASK_RUNNABLE;
	ck_assert_int_eq(h_ctl_thread(UMCG_CTL_REGISTER | UMCG_CTL_WORKER, wt, CLK, true), -ESRCH);
	ck_assert_uint_eq(h_load(&s->task.runnable_workers_ptr), 0);
	h_idle_stop(&idle);
}
END_TEST

START_TEST(s4r12_server_returns_at_once)
{
	struct umcg_task *t = server_task_for(0);
	struct umcg_task *own = server_task_for(h_gettid());

	/* In a thread of its own, so that blocking fails instead of hanging. */
	ck_assert_int_eq(h_ctl_thread(UMCG_CTL_REGISTER, t, CLK, true), 0);

	ck_assert_int_eq(umcg_ctl(UMCG_CTL_REGISTER, own, CLK), 0);
	ck_assert_state(own, UMCG_TASK_RUNNING);
	ck_assert_uint_eq(h_load(&own->next_tid), 0);
	ck_assert_uint_eq(h_load(&own->server_tid), (uint32_t)h_gettid());
	ck_assert_uint_eq(h_load(&own->runnable_workers_ptr), 0);
	ck_assert_int_eq(umcg_ctl(UMCG_CTL_UNREGISTER, NULL, 0), 0);
}
END_TEST

static void set_flag_worker(struct h_worker *w)
{
	atomic_store(&w->r[0], 1);
}

START_TEST(s4r13_worker_blocks_until_run)
{
	struct h_server *s = h_server_register(CLK);
	uint64_t t0 = h_now(CLK), t1, rts;
	struct h_worker *w = h_worker_start(s->tid, CLK, set_flag_worker, NULL);
	int i;

	h_server_wait_listed(s, w);
	t1 = h_now(CLK);
	ck_assert_ptr_eq((void *)(uintptr_t)h_load(&s->task.runnable_workers_ptr), &w->task);
	ck_assert_uint_eq(h_load(&w->task.runnable_workers_ptr), 0);
	ck_assert_state(&w->task, UMCG_TASK_RUNNABLE);
	rts = h_load(&w->task.runnable_ts);
	ck_assert_msg(rts >= t0 && rts <= t1,
		      "runnable_ts %" PRIu64 " not in [%" PRIu64 ", %" PRIu64 "]", rts, t0, t1);
	/* The server was RUNNING: waking it is a no-op, it stays RUNNING. */
	ck_assert_state(&s->task, UMCG_TASK_RUNNING);
	for (i = 0; i < 10; i++) {
		h_sleep_us(10000);
		ck_assert_msg(atomic_load(&w->reg_ret) == H_PENDING,
			      "umcg_ctl() returned %d before any server ran the worker",
			      atomic_load(&w->reg_ret));
		ck_assert_int_eq(atomic_load(&w->r[0]), H_PENDING);
		ck_assert_state(&w->task, UMCG_TASK_RUNNABLE);
	}
	ck_assert_int_eq(h_server_run(s, w, 0), 0);
	ck_assert_int_eq(atomic_load(&w->reg_ret), 0);
	ck_assert_int_eq(atomic_load(&w->r[0]), 1);
	ck_assert_uint_eq(h_load(&s->task.next_tid), 0);
	ck_assert_int_eq(atomic_load(&w->done), 1);
}
END_TEST

static void unregister_clears_worker(struct h_worker *w)
{
	int ret;

	atomic_store(&w->r[0], umcg_ctl(UMCG_CTL_UNREGISTER, NULL, 0));
	atomic_store(&w->r[1], umcg_wait(0, 0));
	atomic_store(&w->r[2], umcg_kick(0, atomic_load(&w->tid)));
	atomic_store(&w->r[3], umcg_block_begin());
	atomic_store(&w->r[4], umcg_ctl(UMCG_CTL_UNREGISTER, NULL, 0));
	/* Register again: this pushes w and wakes the server. */
	h_store(&w->task.next_tid, 0U);
	h_store(&w->task.runnable_workers_ptr, 0ULL);
	h_store(&w->task.state, UMCG_TASK_BLOCKED);
	ret = umcg_ctl(UMCG_CTL_REGISTER | UMCG_CTL_WORKER, &w->task, CLK);
	atomic_store(&w->r[5], ret);
}

START_TEST(s4r15_unregister_clears)
{
	struct umcg_task *t = server_task_for(h_gettid());
	struct umcg_task *wt = h_task_new();
	struct h_server *s;
	struct h_worker *w;

	ck_assert_int_eq(umcg_ctl(UMCG_CTL_REGISTER, t, CLK), 0);
	ck_assert_int_eq(umcg_ctl(UMCG_CTL_UNREGISTER, NULL, 0), 0);
	ck_assert_int_eq(umcg_wait(0, 0), -EINVAL);
	ck_assert_int_eq(umcg_kick(0, h_gettid()), -ESRCH);
	ck_assert_int_eq(umcg_ctl(UMCG_CTL_UNREGISTER, NULL, 0), -EINVAL);
	h_task_worker(wt, h_gettid());
	ck_assert_int_eq(h_ctl_thread(UMCG_CTL_REGISTER | UMCG_CTL_WORKER, wt, CLK, false), -ESRCH);

	s = h_server_register(CLK);
	w = h_worker_start(s->tid, CLK, unregister_clears_worker, NULL);
	/* Woken by the worker's second registration, not by its unregistration. */
	ck_assert_int_eq(h_server_run(s, w, 0), 0);
	ck_assert_int_eq(atomic_load(&w->r[0]), 0);
	ck_assert_int_eq(atomic_load(&w->r[1]), -EINVAL);
	ck_assert_int_eq(atomic_load(&w->r[2]), -ESRCH);
	ck_assert_int_eq(atomic_load(&w->r[3]), emulated() ? -EINVAL : 0);
	ck_assert_int_eq(atomic_load(&w->r[4]), -EINVAL);
	ck_assert_int_eq(atomic_load(&w->r[5]), H_PENDING);
	ck_assert_state(&w->task, UMCG_TASK_RUNNABLE);
	ck_assert_int_eq(h_server_run(s, w, 0), 0);
	ck_assert_int_eq(atomic_load(&w->r[5]), 0);
	ck_assert_int_eq(atomic_load(&w->done), 1);
}
END_TEST

struct wakes_nobody_ctx {
	struct h_server *s;
	atomic_int bad_state;
	atomic_int bad_list;
	atomic_int observed;
};

static void unregister_wakes_nobody_worker(struct h_worker *w)
{
	struct wakes_nobody_ctx *c = w->arg;
	uint64_t end;
	int ret;

	atomic_store(&w->r[0], umcg_ctl(UMCG_CTL_UNREGISTER, NULL, 0));
	/* A plain thread now: it may sleep. Watch the server for 100 ms. */
	end = h_now(CLOCK_MONOTONIC) + 100 * MS;
	while (h_now(CLOCK_MONOTONIC) < end) {
		uint32_t st = h_state(&c->s->task);

		if (st != UMCG_TASK_RUNNABLE)
			atomic_store(&c->bad_state, (int)st);
		if (h_load(&c->s->task.runnable_workers_ptr))
			atomic_store(&c->bad_list, 1);
		h_sleep_us(1000);
	}
	atomic_store(&c->observed, 1);
	h_store(&w->task.next_tid, 0U);
	h_store(&w->task.runnable_workers_ptr, 0ULL);
	h_store(&w->task.state, UMCG_TASK_BLOCKED);
	ret = umcg_ctl(UMCG_CTL_REGISTER | UMCG_CTL_WORKER, &w->task, CLK);
	atomic_store(&w->r[1], ret);
}

START_TEST(s4r16_unregister_wakes_nobody)
{
	struct wakes_nobody_ctx c = { 0 };
	struct h_server *s = h_server_register(CLK);
	struct h_worker *w;

	c.s = s;
	w = h_worker_start(s->tid, CLK, unregister_wakes_nobody_worker, &c);
	ck_assert_int_eq(h_server_run(s, w, 0), 0);
	ck_assert_msg(atomic_load(&c.observed),
		      "the server was woken before the worker registered again");
	ck_assert_int_eq(atomic_load(&w->r[0]), 0);
	ck_assert_msg(atomic_load(&c.bad_state) == 0,
		      "the sleeping server's state became %#x after its worker unregistered",
		      (uint32_t)atomic_load(&c.bad_state));
	ck_assert_msg(!atomic_load(&c.bad_list), "unregistering pushed something on the list");
	ck_assert_int_eq(h_server_run(s, w, 0), 0);
	ck_assert_int_eq(atomic_load(&w->r[1]), 0);
}
END_TEST

void conformance_add_ctl(Suite *s)
{
	TCase *tc = tcase(s, "ctl", 10);

	tcase_add_test(tc, s4r01_misaligned_self);
	tcase_add_test(tc, s4r02_unknown_flags);
	tcase_add_test(tc, s4r03_unregister_nonnull_self);
	tcase_add_test(tc, s4r03_unregister_unregistered);
	tcase_add_test(tc, s4r04_register_missing);
	tcase_add_test(tc, s4r05_bad_clock);
	tcase_add_test(tc, s4r05_valid_clocks);
	tcase_add_test(tc, s4r06_double_register);
	tcase_add_test(tc, s4r06_null_self);
	tcase_add_test(tc, s4r07_unreadable_self);
	tcase_add_test(tc, s4r08_nonzero_next_tid);
	tcase_add_test(tc, s4r08_nonzero_next_tid_other);
	tcase_add_test(tc, s4r08_nonzero_hole);
	tcase_add_loop_test(tc, s4r08_nonzero_zero, 0, 3);
	tcase_add_test(tc, s4r09_server_tid_not_self);
	tcase_add_test(tc, s4r09_worker_server_unregistered);
	tcase_add_test(tc, s4r09_worker_server_is_worker);
	tcase_add_test(tc, s4r09_worker_server_other_process);
	tcase_add_test(tc, s4r10_worker_state_not_blocked);
	tcase_add_test(tc, s4r10_server_state_not_running);
	tcase_add_test(tc, s4r10_user_bits_kept);
	tcase_add_test(tc, s4r11_check_order);
	tcase_add_test(tc, s4r11_07_before_08);
	tcase_add_test(tc, s4r11_08_before_09);
	tcase_add_test(tc, s4r11_09_before_10);
	tcase_add_test(tc, s4r12_server_returns_at_once);
	tcase_add_test(tc, s4r13_worker_blocks_until_run);
	tcase_add_test(tc, s4r15_unregister_clears);
	tcase_add_test(tc, s4r16_unregister_wakes_nobody);
}
