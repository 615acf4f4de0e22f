/* SPDX-License-Identifier: MIT */
/*
 * tests/abi/conformance.h - what the groups of the conformance suite share:
 * assertions on task states, task constructors and worker bodies, and the
 * function each group file gives to add its test case.
 */
#ifndef UMCG_TESTS_ABI_CONFORMANCE_H
#define UMCG_TESTS_ABI_CONFORMANCE_H

#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "harness.h"

#define CLK CLOCK_MONOTONIC
#define MS ((uint64_t)1000000)

/* A tid no process has: pid_max is at most 2^22. */
#define NO_SUCH_TID 0x7ffffff0

static inline bool emulated(void)
{
	return h_backend == UMCG_BACKEND_EMULATED;
}

static inline const char *state_name(uint32_t st)
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

static inline struct umcg_task *server_task_for(pid_t tid)
{
	struct umcg_task *t = h_task_new();

	h_task_server(t, tid);
	return t;
}

static inline struct umcg_task *worker_task_for(pid_t server_tid)
{
	struct umcg_task *t = h_task_new();

	h_task_worker(t, server_tid);
	return t;
}

/* Worker bodies shared by several tests. */

/* Spin, advancing the progress counter, until the test sets stop. */
static inline void spin_until_stopped(struct h_worker *w)
{
	while (!atomic_load_explicit(&w->stop, memory_order_relaxed))
		atomic_fetch_add_explicit(&w->progress, 1, memory_order_relaxed);
}

/* An idle server thread: it only waits for *arg to become non-zero. */
static inline void idle_server(struct h_server *s, void *arg)
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
static inline void await_consumed(struct h_server *s)
{
	H_SPIN_UNTIL(h_load(&s->task.next_tid) == 0, "the server's next_tid to be reset");
}

static inline void tgkill_sigusr1(pid_t tid)
{
	syscall(SYS_tgkill, getpid(), tid, SIGUSR1);
}

/*
 * A worker that blocks in read() on the pipe @w->arg between
 * umcg_block_begin() and umcg_block_end(), their results in r[0..2]
 * (used by the wait and block groups).
 */
static inline void block_on_pipe_worker(struct h_worker *w)
{
	int *fd = w->arg;
	char ch;

	atomic_store(&w->r[0], umcg_block_begin());
	atomic_store(&w->r[1], (int)read(fd[0], &ch, 1));
	atomic_store(&w->r[2], umcg_block_end());
}

static inline TCase *tcase(Suite *s, const char *name, double timeout)
{
	TCase *tc = tcase_create(name);

	tcase_set_timeout(tc, timeout);
	suite_add_tcase(s, tc);
	return tc;
}

void conformance_add_ctl(Suite *s);
void conformance_add_wait(Suite *s);
void conformance_add_kick(Suite *s);
void conformance_add_block(Suite *s);
void conformance_add_list(Suite *s);
void conformance_add_misuse(Suite *s);
void conformance_add_race(Suite *s);

#endif /* UMCG_TESTS_ABI_CONFORMANCE_H */
