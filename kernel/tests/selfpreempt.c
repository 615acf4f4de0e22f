// SPDX-License-Identifier: MIT
/*
 * selfpreempt.c - a worker preempted by its own timer, with no umcg_kick():
 * a POSIX timer (CLOCK_MONOTONIC, SIGEV_THREAD_ID to the worker) whose
 * handler CASes the worker's own state RUNNING -> RUNNING | TF_PREEMPT.
 * The kernel runs its return-to-user hook on every return to user space of
 * a registered task, rt_sigreturn's included, so the worker leaves its CPU
 * there: RUNNABLE, on its server's list, the server woken. This is the
 * kernel-backend half of a timer-driven preemption that needs no server
 * wake-up and no privilege.
 *
 * Also recorded, not checked: what the same timer does to a worker asleep
 * in a call nobody wrapped (a raw nanosleep()); the line "INFO
 * selfpreempt_sleep" gives it. Seen on 2026-12-07: the signal ends the
 * 300 ms sleep after 22 ms with EINTR, as any handled signal does. On its
 * way out the worker goes BLOCKED -> RUNNABLE and waits for its server,
 * so the handler runs only once it is RUNNING again, sets the flag, and
 * preempts it a second time. A timer-driven preemption must therefore be
 * disarmed before such a sleep, or not reach it, and a handler that
 * interrupted a system call must not preempt.
 *
 * Concurrency: the handler uses only C11 seq_cst atomics (async-signal-
 * safe), which pair with the kernel's fully ordered CAS on the state word;
 * the server never kicks, so a listed worker can only have been preempted
 * by the hook.
 */
#include "kt.h"

#include <signal.h>

#define TIMER_MS 20
#define SLEEP_MS 300
#define LISTED_WITHIN_MS 2000

static struct umcg_task server_task __attribute__((aligned(64)));
static struct umcg_task worker_task __attribute__((aligned(64)));
static _Atomic pid_t worker_tid;
static _Atomic int worker_step;
static _Atomic int worker_stop;
static _Atomic int fired;	/* handler runs */
static _Atomic int set_preempt;	/* of them, the ones that found RUNNING */
static _Atomic uint32_t state_seen;	/* the worker's state in the last run */
static _Atomic long sleep_ret = 1;
static _Atomic int sleep_errno;
static _Atomic uint64_t sleep_ms;

static void on_timer(int sig)
{
	uint32_t s = UMCG_TASK_RUNNING;

	(void)sig;
	atomic_fetch_add(&fired, 1);
	atomic_store(&state_seen, kt_state(&worker_task));
	if (atomic_compare_exchange_strong((_Atomic uint32_t *)&worker_task.state, &s,
					   UMCG_TASK_RUNNING | UMCG_TF_PREEMPT))
		atomic_fetch_add(&set_preempt, 1);
}

static int arm_once(timer_t t, unsigned int ms)
{
	struct itimerspec its = { .it_value = { ms / 1000, (long)(ms % 1000) * 1000000L } };

	return timer_settime(t, 0, &its, NULL);
}

static void *worker_main(void *arg)
{
	struct sigevent sev = { 0 };
	struct timespec ts = { SLEEP_MS / 1000, (long)(SLEEP_MS % 1000) * 1000000L };
	timer_t t;
	uint64_t t0;

	(void)arg;
	worker_tid = kt_gettid();
	sev.sigev_notify = SIGEV_THREAD_ID;
	sev.sigev_signo = SIGRTMIN;
	sev._sigev_un._tid = kt_gettid();
	if (timer_create(CLOCK_MONOTONIC, &sev, &t)) {
		worker_step = -1;
		return NULL;
	}
	kt_worker_init(&worker_task, (pid_t)(uintptr_t)server_task.server_tid);
	if (kt_ctl(UMCG_CTL_REGISTER | UMCG_CTL_WORKER, &worker_task, CLOCK_MONOTONIC)) {
		worker_step = -1;
		return NULL;
	}
	/* Running: arm, and spin in user space until preempted and run again. */
	worker_step = 1;
	arm_once(t, TIMER_MS);
	while (atomic_load(&fired) == 0 || kt_state(&worker_task) != UMCG_TASK_RUNNING)
		;
	worker_step = 2;
	/* Run again: the timer now meets a raw sleep. */
	arm_once(t, TIMER_MS);
	t0 = kt_now();
	sleep_ret = syscall(SYS_nanosleep, &ts, NULL);
	sleep_errno = errno;
	sleep_ms = (kt_now() - t0) / KT_MS;
	worker_step = 3;
	while (!worker_stop)
		;
	timer_delete(t);
	kt_ctl(UMCG_CTL_UNREGISTER, NULL, 0);
	worker_step = 4;
	return NULL;
}

/* Serve (never kick) until the worker reaches @step or @ms pass. */
static int serve_until_step(int step, unsigned int ms)
{
	uint64_t end = kt_now() + ms * KT_MS;
	struct umcg_task *head;
	int ret;

	while (worker_step != step && kt_now() < end) {
		head = kt_server_wait(&server_task, 0, 10, &ret);
		for (; head; head = (struct umcg_task *)(uintptr_t)head->runnable_workers_ptr)
			if (head == &worker_task)
				kt_server_wait(&server_task, worker_tid, 10, &ret);
	}
	return worker_step == step;
}

int main(void)
{
	struct sigaction sa;
	pthread_t th;
	int r, ret, listed;
	uint32_t st;

	setvbuf(stdout, NULL, _IOLBF, 0);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_timer;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGRTMIN, &sa, NULL);

	r = kt_server_register(&server_task);
	KT_CHECK("selfpreempt_server_register", r == 0, "got %d", r);
	if (r)
		return 1;
	pthread_create(&th, NULL, worker_main, NULL);
	listed = kt_server_until_listed(&server_task, &worker_task, LISTED_WITHIN_MS);
	KT_CHECK("selfpreempt_worker_listed", listed, "step %d", worker_step);
	if (!listed)
		goto out;
	/* Run it: it arms its timer and spins; nobody kicks it. */
	kt_server_wait(&server_task, worker_tid, 10, &ret);
	listed = kt_server_until_listed(&server_task, &worker_task, LISTED_WITHIN_MS);
	st = kt_state(&worker_task);
	KT_CHECK("selfpreempt_by_timer", listed && st == UMCG_TASK_RUNNABLE,
		 "listed %d state %#x, handler ran %d times", listed, st, fired);
	KT_CHECK("selfpreempt_handler_set_flag", set_preempt == 1 && state_seen == UMCG_TASK_RUNNING,
		 "set %d of %d, state seen %#x", set_preempt, fired, state_seen);
	if (!listed)
		goto out;
	kt_server_wait(&server_task, worker_tid, 10, &ret);
	KT_CHECK("selfpreempt_runs_again", serve_until_step(3, SLEEP_MS + LISTED_WITHIN_MS),
		 "step %d", worker_step);
	printf("INFO selfpreempt_sleep: a %d ms raw nanosleep() met the timer after %d ms: "
	       "returned %ld (%s) after %llu ms; the handler saw state %#x and set the flag %d "
	       "times in all\n",
	       SLEEP_MS, TIMER_MS, (long)sleep_ret, sleep_ret ? strerror(sleep_errno) : "-",
	       (unsigned long long)sleep_ms, state_seen, set_preempt);
	worker_stop = 1;
	KT_CHECK("selfpreempt_worker_ends", serve_until_step(4, LISTED_WITHIN_MS), "step %d",
		 worker_step);
out:
	if (worker_step != 4) {
		printf("selfpreempt: worker stuck, exiting\n");
		exit(1);
	}
	pthread_join(th, NULL);
	kt_ctl(UMCG_CTL_UNREGISTER, NULL, 0);
	printf("selfpreempt: %d failed\n", kt_failures);
	return kt_failures ? 1 : 0;
}
