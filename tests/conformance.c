/* SPDX-License-Identifier: MIT */
/*
 * tests/conformance.c - does the active backend implement sections 4-8 of
 * umcg-abi.md, as <umcg/umcg.h> documents them?
 *
 * One test per numbered rule (ctl_NN_*, wait_NN_*, kick_NN_*, block_07_*),
 * the order of umcg_ctl()'s checks, the runnable-list helpers on lists the
 * backend built, "a failed call changes nothing" for every entry point
 * (misuse_*), and the races a server loop must survive (race_*). Only the
 * public API is used, so the same binary checks the emulation and, on a
 * UMCG kernel, the kernel backend. Where the two are documented to differ
 * (blocking hooks, a timeout across a signal, a syscall that blocks), the
 * test says so and passes without running on the other backend.
 *
 * Concurrency protocol of the tests: the main thread of each test (a fresh
 * process: Check's fork mode) is usually the server; workers report through
 * the atomics of struct h_worker and the test's context structs, all
 * seq_cst except the plain progress counters, which are relaxed because
 * only their growth is looked at. A worker observes its sleeping server
 * and reports; the server asserts after it is woken, whose wake-up (a CAS
 * on its state by the worker, acquired by its umcg_wait()) orders the
 * reports before the asserts. Worker code sleeps in a syscall only where
 * a test means it to block (harness.h explains why) and fails only with
 * H_CHECK().
 *
 * Environment: UMCG_BACKEND picks the backend (exit 77 when the kernel one
 * is asked for and absent), UMCG_STRESS=1 runs the race loops ten times
 * longer, CK_TIMEOUT_MULTIPLIER scales every time bound, CK_RUN_CASE /
 * CK_RUN_SUITE select tests.
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

#include "harness.h"

#define CLK CLOCK_MONOTONIC
#define MS ((uint64_t)1000000)

/* A tid no process has: pid_max is at most 2^22. */
#define NO_SUCH_TID 0x7ffffff0

static bool emulated(void)
{
	return h_backend == UMCG_BACKEND_EMULATED;
}

static const char *state_name(uint32_t st)
{
	switch (st & UMCG_TASK_MASK) {
	case UMCG_TASK_NONE:
		return "NONE";
	case UMCG_TASK_RUNNING:
		return "RUNNING";
	case UMCG_TASK_RUNNABLE:
		return "RUNNABLE";
	case UMCG_TASK_BLOCKED:
		return "BLOCKED";
	default:
		return "?";
	}
}

#define ck_assert_state(task, want)                                                     \
	do {                                                                            \
		uint32_t st_ = h_state(task);                                           \
		ck_assert_msg(st_ == (uint32_t)(want),                                  \
			      "state of " #task " is %#x (%s), expected %#x (%s)", st_, \
			      state_name(st_), (uint32_t)(want), state_name(want));     \
	} while (0)

static struct umcg_task *server_task_for(pid_t tid)
{
	struct umcg_task *t = h_task_new();

	h_task_server(t, tid);
	return t;
}

static struct umcg_task *worker_task_for(pid_t server_tid)
{
	struct umcg_task *t = h_task_new();

	h_task_worker(t, server_tid);
	return t;
}

/* Worker bodies shared by several tests. */

/* Spin, advancing the progress counter, until the test sets stop. */
static void spin_until_stopped(struct h_worker *w)
{
	while (!atomic_load_explicit(&w->stop, memory_order_relaxed))
		atomic_fetch_add_explicit(&w->progress, 1, memory_order_relaxed);
}

/* An idle server thread: it only waits for *arg to become non-zero. */
static void idle_server(struct h_server *s, void *arg)
{
	atomic_int *release = arg;

	(void)s;
	H_WAIT_UNTIL(atomic_load(release), "the test to release an idle server");
}

/*
 * await_consumed() - from a worker its server just ran: wait until the
 * server's umcg_wait() has reset next_tid, its last write before it
 * sleeps, so that a snapshot of the server stays valid.
 */
static void await_consumed(struct h_server *s)
{
	H_SPIN_UNTIL(h_load(&s->task.next_tid) == 0, "the server's next_tid to be reset");
}

static void tgkill_sigusr1(pid_t tid)
{
	syscall(SYS_tgkill, getpid(), tid, SIGUSR1);
}

/* ==== Section 4: umcg_ctl() ============================================= */

START_TEST(ctl_01_misaligned_self)
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

START_TEST(ctl_02_unknown_flags)
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

START_TEST(ctl_03_unregister_nonnull_self)
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

START_TEST(ctl_03_unregister_unregistered)
{
	struct umcg_task *t = server_task_for(h_gettid());

	ck_assert_int_eq(umcg_ctl(UMCG_CTL_UNREGISTER, NULL, 0), -EINVAL);
	ck_assert_int_eq(umcg_ctl(UMCG_CTL_UNREGISTER, NULL, CLK), -EINVAL);
	ck_assert_int_eq(umcg_ctl(UMCG_CTL_REGISTER, t, CLK), 0);
	ck_assert_int_eq(umcg_ctl(UMCG_CTL_UNREGISTER, NULL, 0), 0);
	ck_assert_int_eq(umcg_ctl(UMCG_CTL_UNREGISTER, NULL, 0), -EINVAL);
}
END_TEST

START_TEST(ctl_04_register_missing)
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

START_TEST(ctl_05_bad_clock)
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

START_TEST(ctl_05_valid_clocks)
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

START_TEST(ctl_06_double_register)
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

START_TEST(ctl_06_null_self)
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

START_TEST(ctl_07_unreadable_self)
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
 * check_zero_field() - check 8 for one field: a task that is valid except
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

START_TEST(ctl_08_nonzero_next_tid)
{
	check_zero_field(poison_next_self, "next_tid = own tid");
}
END_TEST

START_TEST(ctl_08_nonzero_next_tid_other)
{
	check_zero_field(poison_next_one, "next_tid = 1");
}
END_TEST

START_TEST(ctl_08_nonzero_hole)
{
	check_zero_field(poison_hole, "__hole[0] != 0");
}
END_TEST

START_TEST(ctl_08_nonzero_zero)
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

START_TEST(ctl_09_server_tid_not_self)
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

START_TEST(ctl_09_worker_server_unregistered)
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

START_TEST(ctl_09_worker_server_is_worker)
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

START_TEST(ctl_09_worker_server_other_process)
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

START_TEST(ctl_10_worker_state_not_blocked)
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

START_TEST(ctl_10_server_state_not_running)
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
 * Check 10 compares the state and flag bits; bits 16-31 belong to user
 * space (section 2) and every transition keeps them.
 */
START_TEST(ctl_10_user_bits_kept)
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

/* The first failing check decides the error (section 4, in order). */
START_TEST(ctl_check_order)
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

START_TEST(ctl_07_before_08)
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

START_TEST(ctl_08_before_09)
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

START_TEST(ctl_09_before_10)
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

START_TEST(ctl_register_server_returns_at_once)
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

START_TEST(ctl_register_worker_blocks_until_run)
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

START_TEST(ctl_unregister_clears)
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

START_TEST(ctl_unregister_wakes_nobody)
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

/* ==== Section 5: umcg_wait() ============================================ */

START_TEST(wait_01_unregistered)
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

START_TEST(wait_01_bad_flags)
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

START_TEST(wait_02_worker_timeout_erange)
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

START_TEST(wait_03_server_tid_esrch)
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

START_TEST(wait_03_next_tid_esrch)
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

START_TEST(wait_04_not_runnable_eagain)
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

START_TEST(wait_04_clears_cond_wait_and_stamps)
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

START_TEST(wait_05_worker_pushes_self)
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

START_TEST(wait_05_worker_wakes_server)
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

START_TEST(wait_05_worker_wakes_next)
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

/* Decision documented in umcg.h: a worker's unusable next_tid falls back. */
START_TEST(wait_05_worker_next_not_runnable)
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

START_TEST(wait_06_server_wakes_next)
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

START_TEST(wait_07_next_consumed)
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

static void block_on_pipe_worker(struct h_worker *w)
{
	int *fd = w->arg;
	char ch;

	atomic_store(&w->r[0], umcg_block_begin());
	atomic_store(&w->r[1], (int)read(fd[0], &ch, 1));
	atomic_store(&w->r[2], umcg_block_end());
}

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

START_TEST(wait_07_next_not_runnable_eagain)
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

START_TEST(wait_08_timeout_realtime)
{
	check_timeout(CLOCK_REALTIME);
}
END_TEST

START_TEST(wait_08_timeout_monotonic)
{
	check_timeout(CLOCK_MONOTONIC);
}
END_TEST

START_TEST(wait_08_timeout_boottime)
{
	check_timeout(CLOCK_BOOTTIME);
}
END_TEST

START_TEST(wait_08_timeout_tai)
{
	check_timeout(CLOCK_TAI);
}
END_TEST

START_TEST(wait_08_past_deadline)
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
/* For wait_08_timeout_survives_signal: signals handled before a deadline. */
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

START_TEST(wait_08_signal_does_not_end_wait)
{
	check_signal_during_wait(SA_RESTART);
}
END_TEST

START_TEST(wait_08_signal_does_not_end_wait_norestart)
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

START_TEST(wait_08_timeout_survives_signal)
{
	int flags = _i ? SA_RESTART : 0;
	struct signaller sg = { .every_us = 20000 };
	struct h_server *s;
	uint64_t t0, deadline, t1;
	pthread_t th;
	int ret;

	if (!emulated()) {
		h_skip("wait_08_timeout_survives_signal",
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

/* ==== Section 6 and 8: umcg_kick(), preemption ========================== */

START_TEST(kick_06_esrch)
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

START_TEST(kick_06_bad_flags)
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

START_TEST(kick_06_no_preempt_is_noop)
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

START_TEST(kick_06_preempt)
{
	struct h_server *s = h_server_register(CLK);
	struct h_worker *w = h_worker_start(s->tid, CLK, spin_until_stopped, NULL);

	preempt_loop(s, w, 200, false);
	/* The last preemption, too, ends with w RUNNABLE on the list. */
	h_server_wait_listed(s, w);
	ck_assert_state(&w->task, UMCG_TASK_RUNNABLE);
}
END_TEST

START_TEST(kick_08_umcg_preempt_helper)
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

START_TEST(kick_from_unregistered_thread)
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

/* ==== Section 7: blocking =============================================== */

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

START_TEST(block_07_begin_wakes_server)
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

START_TEST(block_07_begin_wakes_next)
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

START_TEST(block_07_end_pushes_and_waits)
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

START_TEST(block_07_timestamps)
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

START_TEST(block_07_begin_not_worker)
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

START_TEST(block_07_end_without_begin)
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

START_TEST(block_07_nested_begin)
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

START_TEST(block_07_begin_not_running)
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

/* The kernel sees a worker sleep in any syscall (section 7). */
START_TEST(block_07_syscall_wakes_server)
{
	struct ts_ctx c;
	struct h_server *s;
	struct h_worker *w;
	uint64_t t1, bts;

	if (emulated()) {
		h_skip("block_07_syscall_wakes_server",
		       "the emulation sees only blocking announced by the hooks");
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

/* ==== Runnable-list helpers on lists the backend built ================== */

START_TEST(list_take_empty)
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

START_TEST(list_lifo_order)
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

START_TEST(list_sort_oldest_yields)
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

START_TEST(list_sort_oldest_synthetic)
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

START_TEST(list_count)
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

/* ==== Misuse: documented errno and no state changed ===================== */

START_TEST(misuse_ctl)
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

START_TEST(misuse_wait)
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

START_TEST(misuse_kick)
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

START_TEST(misuse_preempt)
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

START_TEST(misuse_runnable_take_null)
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
START_TEST(race_wakeup_between_take_and_wait)
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
	wd = h_watchdog_start("race_wakeup_between_take_and_wait", counters, 1, &c.iteration, 2000);
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
	printf("race_wakeup_between_take_and_wait: %lu iterations, %lu runs, %lu -EAGAIN, "
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

START_TEST(race_yield_pingpong)
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
	wd = h_watchdog_start("race_yield_pingpong", counters, 1, &c.iteration, 2000);
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
	printf("race_yield_pingpong: %lu switches, %lu -EAGAIN, %lu/%lu/%lu runs\n", n,
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

START_TEST(race_kick_vs_yield)
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
	wd = h_watchdog_start("race_kick_vs_yield", counters, 3, &c.iteration, 2000);
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
	printf("race_kick_vs_yield: %lu decisions, %lu preemptions, %lu yields, %lu/%lu loops\n", n,
	       preempts, atomic_load(&c.yields), atomic_load(&c.w[0]->progress),
	       atomic_load(&c.w[1]->progress));
	ck_assert_uint_gt(preempts, 0);
	ck_assert_uint_gt(atomic_load(&c.yields), 0);
	for (i = 0; i < c.nw; i++)
		ck_assert_uint_gt(atomic_load(&c.w[i]->progress), 0);
}
END_TEST

/* ==== main ============================================================== */

static TCase *tcase(Suite *s, const char *name, double timeout)
{
	TCase *tc = tcase_create(name);

	tcase_set_timeout(tc, timeout);
	suite_add_tcase(s, tc);
	return tc;
}

static Suite *conformance_suite(void)
{
	Suite *s = suite_create("umcg-conformance");
	TCase *tc;

	tc = tcase(s, "ctl", 10);
	tcase_add_test(tc, ctl_01_misaligned_self);
	tcase_add_test(tc, ctl_02_unknown_flags);
	tcase_add_test(tc, ctl_03_unregister_nonnull_self);
	tcase_add_test(tc, ctl_03_unregister_unregistered);
	tcase_add_test(tc, ctl_04_register_missing);
	tcase_add_test(tc, ctl_05_bad_clock);
	tcase_add_test(tc, ctl_05_valid_clocks);
	tcase_add_test(tc, ctl_06_double_register);
	tcase_add_test(tc, ctl_06_null_self);
	tcase_add_test(tc, ctl_07_unreadable_self);
	tcase_add_test(tc, ctl_08_nonzero_next_tid);
	tcase_add_test(tc, ctl_08_nonzero_next_tid_other);
	tcase_add_test(tc, ctl_08_nonzero_hole);
	tcase_add_loop_test(tc, ctl_08_nonzero_zero, 0, 3);
	tcase_add_test(tc, ctl_09_server_tid_not_self);
	tcase_add_test(tc, ctl_09_worker_server_unregistered);
	tcase_add_test(tc, ctl_09_worker_server_is_worker);
	tcase_add_test(tc, ctl_09_worker_server_other_process);
	tcase_add_test(tc, ctl_10_worker_state_not_blocked);
	tcase_add_test(tc, ctl_10_server_state_not_running);
	tcase_add_test(tc, ctl_10_user_bits_kept);
	tcase_add_test(tc, ctl_check_order);
	tcase_add_test(tc, ctl_07_before_08);
	tcase_add_test(tc, ctl_08_before_09);
	tcase_add_test(tc, ctl_09_before_10);
	tcase_add_test(tc, ctl_register_server_returns_at_once);
	tcase_add_test(tc, ctl_register_worker_blocks_until_run);
	tcase_add_test(tc, ctl_unregister_clears);
	tcase_add_test(tc, ctl_unregister_wakes_nobody);

	tc = tcase(s, "wait", 10);
	tcase_add_test(tc, wait_01_unregistered);
	tcase_add_test(tc, wait_01_bad_flags);
	tcase_add_test(tc, wait_02_worker_timeout_erange);
	tcase_add_test(tc, wait_03_server_tid_esrch);
	tcase_add_test(tc, wait_03_next_tid_esrch);
	tcase_add_test(tc, wait_04_not_runnable_eagain);
	tcase_add_test(tc, wait_04_clears_cond_wait_and_stamps);
	tcase_add_test(tc, wait_05_worker_pushes_self);
	tcase_add_test(tc, wait_05_worker_wakes_server);
	tcase_add_test(tc, wait_05_worker_wakes_next);
	tcase_add_test(tc, wait_05_worker_next_not_runnable);
	tcase_add_test(tc, wait_06_server_wakes_next);
	tcase_add_test(tc, wait_07_next_consumed);
	tcase_add_test(tc, wait_07_next_not_runnable_eagain);
	tcase_add_test(tc, wait_08_timeout_realtime);
	tcase_add_test(tc, wait_08_timeout_monotonic);
	tcase_add_test(tc, wait_08_timeout_boottime);
	tcase_add_test(tc, wait_08_timeout_tai);
	tcase_add_loop_test(tc, wait_08_past_deadline, 0, 2);
	tcase_add_test(tc, wait_08_signal_does_not_end_wait);
	tcase_add_test(tc, wait_08_signal_does_not_end_wait_norestart);
	tcase_add_loop_test(tc, wait_08_timeout_survives_signal, 0, 2);

	tc = tcase(s, "kick", 20);
	tcase_add_test(tc, kick_06_esrch);
	tcase_add_test(tc, kick_06_bad_flags);
	tcase_add_test(tc, kick_06_no_preempt_is_noop);
	tcase_add_test(tc, kick_06_preempt);
	tcase_add_test(tc, kick_08_umcg_preempt_helper);
	tcase_add_test(tc, kick_from_unregistered_thread);

	tc = tcase(s, "block", 10);
	tcase_add_test(tc, block_07_begin_wakes_server);
	tcase_add_test(tc, block_07_begin_wakes_next);
	tcase_add_test(tc, block_07_end_pushes_and_waits);
	tcase_add_test(tc, block_07_timestamps);
	tcase_add_test(tc, block_07_begin_not_worker);
	tcase_add_test(tc, block_07_end_without_begin);
	tcase_add_test(tc, block_07_nested_begin);
	tcase_add_test(tc, block_07_begin_not_running);
	tcase_add_test(tc, block_07_syscall_wakes_server);

	tc = tcase(s, "list", 10);
	tcase_add_test(tc, list_take_empty);
	tcase_add_test(tc, list_lifo_order);
	tcase_add_test(tc, list_sort_oldest_yields);
	tcase_add_test(tc, list_sort_oldest_synthetic);
	tcase_add_test(tc, list_count);

	tc = tcase(s, "misuse", 10);
	tcase_add_test(tc, misuse_ctl);
	tcase_add_test(tc, misuse_wait);
	tcase_add_test(tc, misuse_kick);
	tcase_add_test(tc, misuse_preempt);
	tcase_add_test(tc, misuse_runnable_take_null);

	tc = tcase(s, "race", 60.0 * h_stress());
	tcase_add_test(tc, race_wakeup_between_take_and_wait);
	tcase_add_test(tc, race_yield_pingpong);
	tcase_add_test(tc, race_kick_vs_yield);
	return s;
}

static int prepare(void)
{
	int backend = umcg_backend_active();

	if (backend < 0) {
		printf("umcg-conformance: no backend (%d): %s\n", backend, umcg_backend_reason());
		return backend == -ENOSYS ? 77 : 1;
	}
	h_backend = backend;
	printf("umcg-conformance: backend %s: %s%s\n", umcg_backend_name(backend),
	       umcg_backend_reason(), h_stress() > 1 ? " (UMCG_STRESS: race loops x10)" : "");
	return 0;
}

/* Tests leave threads asleep in umcg_wait(): each needs its own process. */
H_TEST_MAIN(conformance_suite, prepare)
