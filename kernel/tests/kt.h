/* SPDX-License-Identifier: MIT */
/*
 * kt.h - helpers of the kernel-only UMCG tests (the files of kernel/tests/).
 *
 * These tests run inside the test VM against the patched kernel only: they
 * call the UMCG syscalls directly, with the numbers and struct umcg_task of
 * the kernel's own installed headers (<linux/umcg.h>, <asm/unistd.h>), and
 * check what the kernel alone does (blocking in an unwrapped syscall or a
 * page fault, fork, exec). Each check prints "PASS <name>" or
 * "FAIL <name>: <why>"; main() returns 1 if any check failed.
 *
 * Concurrency: the server spins or sleeps on the worker's and its own
 * struct umcg_task with C11 atomics (seq_cst), which pair with the
 * kernel's fully ordered compare-and-swap on the same words; runnable
 * lists are detached with an exchange, as the ABI requires.
 */
#ifndef KT_H
#define KT_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <linux/umcg.h>

#ifndef __NR_umcg_ctl
#error "build against the headers of the UMCG kernel (make headers_install)"
#endif

static int kt_failures;

#define KT_CHECK(name, cond, ...)                                              \
	do {                                                                   \
		if (cond) {                                                    \
			printf("PASS %s\n", name);                             \
		} else {                                                       \
			printf("FAIL %s: ", name);                             \
			printf(__VA_ARGS__);                                   \
			printf("\n");                                          \
			kt_failures++;                                         \
		}                                                              \
		fflush(stdout);                                                \
	} while (0)

static inline int kt_ctl(uint32_t flags, struct umcg_task *self, clockid_t clk)
{
	return syscall(__NR_umcg_ctl, flags, self, clk) ? -errno : 0;
}

static inline int kt_wait(uint32_t flags, uint64_t abs_timeout)
{
	return syscall(__NR_umcg_wait, flags, abs_timeout) ? -errno : 0;
}

static inline int kt_kick(uint32_t flags, pid_t tid)
{
	return syscall(__NR_umcg_kick, flags, tid) ? -errno : 0;
}

static inline pid_t kt_gettid(void)
{
	return (pid_t)syscall(SYS_gettid);
}

static inline uint64_t kt_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

#define KT_MS 1000000ull

static inline uint32_t kt_state(struct umcg_task *t)
{
	return atomic_load((_Atomic uint32_t *)&t->state);
}

static inline void kt_set_state(struct umcg_task *t, uint32_t s)
{
	atomic_store((_Atomic uint32_t *)&t->state, s);
}

static inline struct umcg_task *kt_take(struct umcg_task *server)
{
	return (struct umcg_task *)(uintptr_t)atomic_exchange(
		(_Atomic uint64_t *)&server->runnable_workers_ptr, 0);
}

/* Register the calling thread as a server on @s. */
static inline int kt_server_register(struct umcg_task *s)
{
	memset(s, 0, sizeof(*s));
	s->state = UMCG_TASK_RUNNING;
	s->server_tid = kt_gettid();
	return kt_ctl(UMCG_CTL_REGISTER, s, CLOCK_MONOTONIC);
}

/*
 * kt_server_wait() - one turn of a server loop: announce RUNNABLE |
 * COND_WAIT, then either take the runnable list (if it is not empty; the
 * server is put back to RUNNING) or run @next (0: nobody) and sleep until
 * something wakes it or @timeout_ms passes.
 * Returns the list taken, or NULL after a wait; *@ret gets umcg_wait()'s
 * result (0 when the list was taken).
 */
static inline struct umcg_task *kt_server_wait(struct umcg_task *s, pid_t next,
					       unsigned int timeout_ms, int *ret)
{
	struct umcg_task *head;
	uint32_t expect = UMCG_TASK_RUNNABLE | UMCG_TF_COND_WAIT;

	kt_set_state(s, UMCG_TASK_RUNNABLE | UMCG_TF_COND_WAIT);
	head = kt_take(s);
	if (head) {
		/* A worker may have set us RUNNING meanwhile: both fine. */
		atomic_compare_exchange_strong((_Atomic uint32_t *)&s->state, &expect,
					       UMCG_TASK_RUNNING);
		*ret = 0;
		return head;
	}
	s->next_tid = (uint32_t)next;
	*ret = kt_wait(0, kt_now() + timeout_ms * KT_MS);
	return NULL;
}

/*
 * kt_server_until_listed() - serve until @w appears on the runnable list
 * (returns 1) or @timeout_ms passes (returns 0). Never runs anybody.
 */
static inline int kt_server_until_listed(struct umcg_task *s, struct umcg_task *w,
					 unsigned int timeout_ms)
{
	uint64_t end = kt_now() + timeout_ms * KT_MS;
	struct umcg_task *head;
	int ret;

	while (kt_now() < end) {
		head = kt_server_wait(s, 0, 50, &ret);
		for (; head; head = (struct umcg_task *)(uintptr_t)head->runnable_workers_ptr)
			if (head == w)
				return 1;
	}
	return 0;
}

/* Fill a worker's struct umcg_task for registration with server @server. */
static inline void kt_worker_init(struct umcg_task *w, pid_t server)
{
	memset(w, 0, sizeof(*w));
	w->state = UMCG_TASK_BLOCKED;
	w->server_tid = (uint32_t)server;
}

#endif /* KT_H */
