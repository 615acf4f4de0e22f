// SPDX-License-Identifier: MIT
/*
 * signal.c - a signal delivered to a task asleep in umcg_wait() runs its
 * handler during the wait (the task still RUNNABLE), then the wait goes on
 * until the task is RUNNING: for a server, with and without SA_RESTART,
 * with its timeout kept; for a worker that yielded, without a second push
 * on its server's list.
 *
 * Concurrency: the handler only bumps a counter and records the state it
 * saw (C11 seq_cst atomics, async-signal-safe). The thread that sends the
 * signal waits for the counter before it looks at the sleeper, and ends a
 * server's wait the way any thread may: CAS RUNNABLE -> RUNNING, then
 * umcg_kick() (see kick.c).
 */
#include "kt.h"

#include <signal.h>

#define HANDLER_WITHIN_MS 2000
#define SERVER_TIMEOUT_MS 10000
#define SIGNALS 3

static struct umcg_task server_task __attribute__((aligned(64)));
static struct umcg_task worker_task __attribute__((aligned(64)));
static _Atomic pid_t server_tid;
static _Atomic pid_t worker_tid;

/* What the handler saw. */
static struct umcg_task *_Atomic handler_task;
static _Atomic int handler_count;
static _Atomic int handler_bad_state;	/* handler ran while not RUNNABLE */

static _Atomic int server_returned;

static void on_usr1(int sig)
{
	struct umcg_task *t = atomic_load(&handler_task);

	(void)sig;
	if (t && kt_state(t) != UMCG_TASK_RUNNABLE)
		atomic_fetch_add(&handler_bad_state, 1);
	atomic_fetch_add(&handler_count, 1);
}

static void install_handler(int flags)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_usr1;
	sa.sa_flags = flags;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR1, &sa, NULL);
}

static int tgkill_usr1(pid_t tid)
{
	return (int)syscall(SYS_tgkill, getpid(), tid, SIGUSR1);
}

static int wait_for(_Atomic int *v, int at_least, unsigned int ms)
{
	uint64_t end = kt_now() + ms * KT_MS;

	while (atomic_load(v) < at_least) {
		if (kt_now() > end)
			return 0;
		usleep(1000);
	}
	return 1;
}

static int wait_state(struct umcg_task *t, uint32_t want, unsigned int ms)
{
	uint64_t end = kt_now() + ms * KT_MS;

	while (kt_state(t) != want) {
		if (kt_now() > end)
			return 0;
		usleep(1000);
	}
	return 1;
}

/* ---- a server signalled in umcg_wait() ---------------------------------- */

struct sig_result {
	int in_wait;
	int handled;		/* number of signals whose handler ran */
	int returned_early;
	uint32_t state_seen;
	int woke;
};

static void *server_signaller(void *arg)
{
	struct sig_result *r = arg;
	uint32_t expect = UMCG_TASK_RUNNABLE;
	int k;

	r->in_wait = wait_state(&server_task, UMCG_TASK_RUNNABLE, 2000);
	if (!r->in_wait)
		return NULL;
	usleep(20000);
	for (k = 1; k <= SIGNALS; k++) {
		tgkill_usr1(server_tid);
		if (!wait_for(&handler_count, k, HANDLER_WITHIN_MS))
			break;
		r->handled = k;
		/* The handler returned: the server must be waiting again. */
		usleep(10000);
		r->state_seen = kt_state(&server_task);
		if (server_returned || r->state_seen != UMCG_TASK_RUNNABLE) {
			r->returned_early = 1;
			break;
		}
	}
	/* End the wait however the above went, or the server sleeps 10 s. */
	r->woke = atomic_compare_exchange_strong((_Atomic uint32_t *)&server_task.state,
						 &expect, UMCG_TASK_RUNNING) &&
		  kt_kick(0, server_tid) == 0;
	return NULL;
}

static void check_server_signal(int sa_flags, const char *tag)
{
	struct sig_result r = { 0 };
	char name[64];
	pthread_t th;
	uint64_t t0, el;
	uint32_t st;
	int ret;

	install_handler(sa_flags);
	handler_task = &server_task;
	handler_count = 0;
	handler_bad_state = 0;
	server_returned = 0;

	kt_set_state(&server_task, UMCG_TASK_RUNNABLE | UMCG_TF_COND_WAIT);
	pthread_create(&th, NULL, server_signaller, &r);
	t0 = kt_now();
	ret = kt_wait(0, kt_now() + SERVER_TIMEOUT_MS * KT_MS);
	el = (kt_now() - t0) / KT_MS;
	server_returned = 1;
	pthread_join(th, NULL);
	st = kt_state(&server_task);

	snprintf(name, sizeof(name), "server_signal_handled_%s", tag);
	KT_CHECK(name, r.in_wait && r.handled == SIGNALS,
		 "in wait %d, %d of %d handlers ran during the wait", r.in_wait, r.handled,
		 SIGNALS);
	snprintf(name, sizeof(name), "server_handler_saw_runnable_%s", tag);
	KT_CHECK(name, r.handled && !handler_bad_state, "%d handlers saw another state",
		 handler_bad_state);
	snprintf(name, sizeof(name), "server_wait_resumed_%s", tag);
	KT_CHECK(name, !r.returned_early, "umcg_wait ended by a signal (state %#x)",
		 r.state_seen);
	snprintf(name, sizeof(name), "server_wait_ret_%s", tag);
	KT_CHECK(name, r.woke && ret == 0 && el < SERVER_TIMEOUT_MS / 2 &&
		 st == UMCG_TASK_RUNNING, "woken %d, umcg_wait %d after %llu ms, state %#x",
		 r.woke, ret, (unsigned long long)el, st);
}

/* The timeout survives a signal: the restarted wait keeps the deadline. */
static void *timeout_signaller(void *arg)
{
	(void)arg;
	if (wait_state(&server_task, UMCG_TASK_RUNNABLE, 2000)) {
		usleep(100000);
		tgkill_usr1(server_tid);
	}
	return NULL;
}

static void check_server_timeout_kept(void)
{
	const uint64_t tmo_ms = 600;
	pthread_t th;
	uint64_t t0, el;
	uint32_t st;
	int ret;

	install_handler(SA_RESTART);
	handler_task = &server_task;
	handler_count = 0;
	handler_bad_state = 0;

	kt_set_state(&server_task, UMCG_TASK_RUNNABLE | UMCG_TF_COND_WAIT);
	pthread_create(&th, NULL, timeout_signaller, NULL);
	t0 = kt_now();
	ret = kt_wait(0, t0 + tmo_ms * KT_MS);
	el = (kt_now() - t0) / KT_MS;
	pthread_join(th, NULL);
	st = kt_state(&server_task);
	KT_CHECK("server_timeout_kept", handler_count == 1 && ret == -ETIMEDOUT &&
		 el >= tmo_ms && el < SERVER_TIMEOUT_MS / 2 && st == UMCG_TASK_RUNNING,
		 "handlers %d, umcg_wait %d after %llu ms (deadline %llu ms), state %#x",
		 handler_count, ret, (unsigned long long)el, (unsigned long long)tmo_ms, st);
}

/* ---- a worker signalled in its yield ------------------------------------ */

static _Atomic int worker_step;
static _Atomic int worker_yield_ret = 1;

static void *worker_main(void *arg)
{
	(void)arg;
	worker_tid = kt_gettid();
	kt_worker_init(&worker_task, server_tid);
	if (kt_ctl(UMCG_CTL_REGISTER | UMCG_CTL_WORKER, &worker_task, CLOCK_MONOTONIC)) {
		worker_step = -1;
		return NULL;
	}
	worker_step = 1;
	kt_set_state(&worker_task, UMCG_TASK_RUNNABLE);
	worker_yield_ret = kt_wait(0, 0);
	worker_step = 2;
	kt_ctl(UMCG_CTL_UNREGISTER, NULL, 0);
	return NULL;
}

static int list_count(struct umcg_task *head, struct umcg_task *w)
{
	int n = 0;

	for (; head; head = (struct umcg_task *)(uintptr_t)head->runnable_workers_ptr)
		n += head == w;
	return n;
}

static void check_worker_signal(void)
{
	struct umcg_task *head;
	pthread_t th;
	uint64_t end;
	uint32_t st;
	int ret, listed, handled, n;

	install_handler(SA_RESTART);
	handler_task = &worker_task;
	handler_count = 0;
	handler_bad_state = 0;

	pthread_create(&th, NULL, worker_main, NULL);
	listed = kt_server_until_listed(&server_task, &worker_task, 2000);
	KT_CHECK("worker_registered", listed, "worker not listed (step %d)", worker_step);
	if (!listed)
		goto out;
	/* Run it; it yields at once: pushed, we are woken. */
	kt_server_wait(&server_task, worker_tid, 2000, &ret);
	listed = kt_server_until_listed(&server_task, &worker_task, 2000);
	KT_CHECK("worker_yielded", listed && worker_step == 1, "listed %d step %d", listed,
		 worker_step);
	if (!listed)
		goto out;
	kt_set_state(&server_task, UMCG_TASK_RUNNING);

	/* It sleeps in umcg_wait(), RUNNABLE and listed once. Signal it. */
	usleep(20000);
	tgkill_usr1(worker_tid);
	handled = wait_for(&handler_count, 1, HANDLER_WITHIN_MS);
	KT_CHECK("worker_handler_during_wait", handled && !handler_bad_state,
		 "handler ran %d times, %d saw another state than RUNNABLE",
		 handler_count, handler_bad_state);
	usleep(50000);
	head = kt_take(&server_task);
	n = list_count(head, &worker_task);
	st = kt_state(&worker_task);
	KT_CHECK("worker_not_pushed_again", !head && st == UMCG_TASK_RUNNABLE &&
		 worker_step == 1, "listed %d more times, state %#x, step %d", n, st,
		 worker_step);

	/* Run it: its yield returns 0, it unregisters. */
	end = kt_now() + 2000 * KT_MS;
	kt_server_wait(&server_task, worker_tid, 100, &ret);
	while (worker_step != 2 && kt_now() < end)
		kt_server_wait(&server_task, 0, 10, &ret);
	KT_CHECK("worker_yield_ret", worker_step == 2 && worker_yield_ret == 0,
		 "step %d, umcg_wait %d", worker_step, worker_yield_ret);
out:
	if (worker_step != 2) {
		printf("signal: worker stuck, exiting\n");
		exit(1);
	}
	pthread_join(th, NULL);
	kt_set_state(&server_task, UMCG_TASK_RUNNING);
}

int main(void)
{
	int r;

	setvbuf(stdout, NULL, _IOLBF, 0);
	server_tid = kt_gettid();
	r = kt_server_register(&server_task);
	KT_CHECK("signal_server_register", r == 0, "got %d", r);
	if (r)
		return 1;
	check_server_signal(SA_RESTART, "restart");
	check_server_signal(0, "norestart");
	check_server_timeout_kept();
	check_worker_signal();
	kt_ctl(UMCG_CTL_UNREGISTER, NULL, 0);
	printf("signal: %d failed\n", kt_failures);
	return kt_failures ? 1 : 0;
}
