// SPDX-License-Identifier: MIT
/*
 * basic.c - the UMCG kernel's interface: published numbers, the library's
 * probe, umcg_ctl() argument checks, a server running a worker with
 * next_tid, a worker yielding, and preemption with TF_PREEMPT + umcg_kick().
 */
#include "kt.h"

static struct umcg_task server_task __attribute__((aligned(64)));
static struct umcg_task worker_task __attribute__((aligned(64)));
static _Atomic pid_t worker_tid;
static _Atomic int worker_step;
static _Atomic int worker_stop;
static _Atomic int worker_reg_ret = 1;

static void check_sysfs(void)
{
	char buf[64] = "";
	FILE *f = fopen("/sys/kernel/umcg/syscalls", "r");
	size_t n = 0;

	if (f) {
		n = fread(buf, 1, sizeof(buf) - 1, f);
		fclose(f);
	}
	buf[n] = 0;
	KT_CHECK("sysfs_syscalls", !strcmp(buf, "451 452 453\n"), "read '%s'", buf);
	KT_CHECK("header_numbers", __NR_umcg_ctl == 451 && __NR_umcg_wait == 452 &&
		 __NR_umcg_kick == 453, "%d %d %d", __NR_umcg_ctl, __NR_umcg_wait,
		 __NR_umcg_kick);
}

static void check_probe(void)
{
	int a = kt_ctl(UMCG_CTL_UNREGISTER, NULL, 0);
	int b = kt_kick(0, 0);
	int c = kt_wait(1, 0);

	KT_CHECK("probe_ctl_unregister", a == -EINVAL, "got %d", a);
	KT_CHECK("probe_kick_0", b == -ESRCH, "got %d", b);
	KT_CHECK("probe_wait_flags", c == -EINVAL, "got %d", c);
	c = kt_wait(0, 0);
	KT_CHECK("wait_unregistered", c == -EINVAL, "got %d", c);
}

static void check_ctl_errors(void)
{
	static struct umcg_task t __attribute__((aligned(64)));
	int r;

	memset(&t, 0, sizeof(t));
	t.state = UMCG_TASK_RUNNING;
	t.server_tid = kt_gettid();
	r = kt_ctl(UMCG_CTL_REGISTER, (struct umcg_task *)((char *)&t + 8), CLOCK_MONOTONIC);
	KT_CHECK("ctl_misaligned", r == -EINVAL, "got %d", r);
	r = kt_ctl(UMCG_CTL_REGISTER | 0x4, &t, CLOCK_MONOTONIC);
	KT_CHECK("ctl_bad_flags", r == -EINVAL, "got %d", r);
	r = kt_ctl(UMCG_CTL_UNREGISTER, &t, 0);
	KT_CHECK("ctl_unregister_with_self", r == -EINVAL, "got %d", r);
	r = kt_ctl(UMCG_CTL_WORKER, &t, CLOCK_MONOTONIC);
	KT_CHECK("ctl_register_missing", r == -EINVAL, "got %d", r);
	r = kt_ctl(UMCG_CTL_REGISTER, &t, CLOCK_PROCESS_CPUTIME_ID);
	KT_CHECK("ctl_bad_clock", r == -EINVAL, "got %d", r);
	r = kt_ctl(UMCG_CTL_REGISTER, NULL, CLOCK_MONOTONIC);
	KT_CHECK("ctl_null_self", r == -EINVAL, "got %d", r);
	r = kt_ctl(UMCG_CTL_REGISTER, (struct umcg_task *)64, CLOCK_MONOTONIC);
	KT_CHECK("ctl_efault", r == -EFAULT, "got %d", r);
	t.__zero[1] = 1;
	r = kt_ctl(UMCG_CTL_REGISTER, &t, CLOCK_MONOTONIC);
	KT_CHECK("ctl_zero_nonzero", r == -EINVAL, "got %d", r);
	t.__zero[1] = 0;
	t.server_tid = 1;
	r = kt_ctl(UMCG_CTL_REGISTER, &t, CLOCK_MONOTONIC);
	KT_CHECK("ctl_server_not_self", r == -ESRCH, "got %d", r);
	t.server_tid = kt_gettid();
	r = kt_ctl(UMCG_CTL_REGISTER | UMCG_CTL_WORKER, &t, CLOCK_MONOTONIC);
	KT_CHECK("ctl_worker_no_server", r == -ESRCH, "got %d", r);
	t.state = UMCG_TASK_RUNNABLE;
	r = kt_ctl(UMCG_CTL_REGISTER, &t, CLOCK_MONOTONIC);
	KT_CHECK("ctl_server_bad_state", r == -EINVAL, "got %d", r);
	t.state = UMCG_TASK_RUNNING;
	r = kt_ctl(UMCG_CTL_REGISTER, &t, CLOCK_MONOTONIC);
	KT_CHECK("ctl_server_ok", r == 0, "got %d", r);
	r = kt_ctl(UMCG_CTL_REGISTER, &t, CLOCK_MONOTONIC);
	KT_CHECK("ctl_twice", r == -EINVAL, "got %d", r);
	r = kt_kick(0, kt_gettid());
	KT_CHECK("kick_self", r == 0, "got %d", r);
	r = kt_kick(1, kt_gettid());
	KT_CHECK("kick_flags", r == -EINVAL, "got %d", r);
	r = kt_ctl(UMCG_CTL_UNREGISTER, NULL, 0);
	KT_CHECK("ctl_unregister", r == 0, "got %d", r);
	r = kt_kick(0, kt_gettid());
	KT_CHECK("kick_unregistered", r == -ESRCH, "got %d", r);
}

static void *worker_main(void *arg)
{
	(void)arg;
	worker_tid = kt_gettid();
	kt_worker_init(&worker_task, (pid_t)(uintptr_t)server_task.server_tid);
	/* Returns only once the server ran us. */
	worker_reg_ret = kt_ctl(UMCG_CTL_REGISTER | UMCG_CTL_WORKER, &worker_task,
				CLOCK_MONOTONIC);
	worker_step = 1;
	/* Yield: RUNNABLE, then umcg_wait() pushes us and wakes the server. */
	kt_set_state(&worker_task, UMCG_TASK_RUNNABLE);
	if (kt_wait(0, 0) == 0)
		worker_step = 2;
	/* Spin in user space until preempted and run again. */
	while (!worker_stop)
		;
	worker_step = 3;
	kt_ctl(UMCG_CTL_UNREGISTER, NULL, 0);
	return NULL;
}

static void check_handoff(void)
{
	pthread_t th;
	int r, ret, listed;
	uint64_t end;
	uint32_t st;

	r = kt_server_register(&server_task);
	KT_CHECK("server_register", r == 0, "got %d", r);
	if (r)
		return;
	pthread_create(&th, NULL, worker_main, NULL);

	/* The worker's registration pushes it and wakes us. */
	listed = kt_server_until_listed(&server_task, &worker_task, 2000);
	st = kt_state(&worker_task);
	KT_CHECK("worker_registers_runnable", listed && (st & UMCG_TASK_MASK) == UMCG_TASK_RUNNABLE,
		 "listed %d state %#x", listed, st);
	if (!listed)
		goto out;
	KT_CHECK("worker_runnable_ts", worker_task.runnable_ts != 0, "runnable_ts 0");
	KT_CHECK("worker_still_waiting", worker_step == 0, "step %d", worker_step);

	/* Run it: it yields at once and lands on the list again. */
	kt_server_wait(&server_task, worker_tid, 2000, &ret);
	KT_CHECK("run_next_tid", ret == 0 && server_task.next_tid == 0,
		 "wait %d next_tid %u", ret, server_task.next_tid);
	listed = kt_server_until_listed(&server_task, &worker_task, 2000);
	KT_CHECK("worker_registered_ret", worker_reg_ret == 0, "got %d", worker_reg_ret);
	KT_CHECK("worker_yield_listed", listed && worker_step == 1, "listed %d step %d",
		 listed, worker_step);
	if (!listed)
		goto out;

	/* Run it again: it spins; our timed wait expires while it runs. */
	kt_server_wait(&server_task, worker_tid, 100, &ret);
	st = kt_state(&server_task);
	KT_CHECK("server_timeout", ret == -ETIMEDOUT && (st & UMCG_TASK_MASK) == UMCG_TASK_RUNNING,
		 "wait %d state %#x", ret, st);
	end = kt_now() + 2000 * KT_MS;
	while (worker_step != 2 && kt_now() < end)
		;
	st = UMCG_TASK_RUNNING;
	r = atomic_compare_exchange_strong((_Atomic uint32_t *)&worker_task.state, &st,
					   UMCG_TASK_RUNNING | UMCG_TF_PREEMPT);
	KT_CHECK("worker_running", r && worker_step == 2, "state %#x step %d", st, worker_step);
	r = kt_kick(0, worker_tid);
	KT_CHECK("kick_worker", r == 0, "got %d", r);
	listed = kt_server_until_listed(&server_task, &worker_task, 2000);
	st = kt_state(&worker_task);
	KT_CHECK("preempted_listed", listed && st == UMCG_TASK_RUNNABLE, "listed %d state %#x",
		 listed, st);
	if (!listed)
		goto out;

	worker_stop = 1;
	kt_server_wait(&server_task, worker_tid, 100, &ret);
	end = kt_now() + 2000 * KT_MS;
	while (worker_step != 3 && kt_now() < end)
		kt_server_wait(&server_task, 0, 10, &ret);
	KT_CHECK("worker_finishes", worker_step == 3, "step %d", worker_step);
	pthread_join(th, NULL);
out:
	kt_ctl(UMCG_CTL_UNREGISTER, NULL, 0);
	if (worker_step != 3) {
		printf("basic: worker stuck, exiting\n");
		exit(1);
	}
}

int main(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	check_sysfs();
	check_probe();
	check_ctl_errors();
	check_handoff();
	printf("basic: %d failed\n", kt_failures);
	return kt_failures ? 1 : 0;
}
