/* SPDX-License-Identifier: MIT */
/*
 * test_kick.c - the emulation's kick cannot be refused, and cannot be
 * cancelled half-way.
 *
 * A full RLIMIT_SIGPENDING. The limit counts the queued signals of all of a
 * user's processes against the limit of the receiving one. The test process
 * lowers its own soft limit to SIGQ_LIMIT and forks a child (same user),
 * which sets its own to FILL_LIMIT, blocks SIGRTMIN and queues it to itself
 * until sigqueue() fails with EAGAIN, and tops it up every millisecond.
 * The user's count then stays above SIGQ_LIMIT even while other processes'
 * signals come and go, so no queued signal can be sent to the test process;
 * other processes of the user keep their own, much higher limit, so they
 * lose nothing. The child exits when the test closes its pipe (or dies),
 * and its pending signals go with it. Under that full queue:
 *   - a raw umcg_kick() of a RUNNING|TF_PREEMPT worker spinning under a
 *     tiny raw-ABI server returns 0, and the worker is preempted (it shows
 *     up on the server's runnable list again);
 *   - a runtime with a timeslice still preempts a CPU hog, so that a second
 *     worker of its only server runs.
 *
 * Asynchronous cancellation. A worker spinning with
 * PTHREAD_CANCEL_ASYNCHRONOUS is cancelled while it sleeps in the kick
 * handler, preempted; a companion worker on the same server must keep
 * running, and (under ASan) nothing may touch freed memory.
 *
 * Only the emulation has a kick signal: on the kernel backend the program
 * exits with 77 (skipped).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <umcg/runtime.h>
#include <umcg/umcg.h>

#include "test_common.h"

#define NSEC_PER_MSEC 1000000LL
#define NSEC_PER_SEC 1000000000LL
#define LIVENESS_NS (20 * NSEC_PER_SEC) /* a watchdog, not a timing */
#define SIGQ_LIMIT 64
#define FILL_LIMIT (8 * SIGQ_LIMIT)
#define TIMESLICE_NS (1 * NSEC_PER_MSEC)

static long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * NSEC_PER_SEC + ts.tv_nsec;
}

static void sleep_us(long us)
{
	struct timespec ts = { .tv_sec = us / 1000000, .tv_nsec = (us % 1000000) * 1000 };

	while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
		;
}

static int load_int(int *p)
{
	return atomic_load_explicit(h_atomic(p), memory_order_acquire);
}

static void store_int(int *p, int v)
{
	/* Release: pairs with load_int() in the other threads. */
	atomic_store_explicit(h_atomic(p), v, memory_order_release);
}

/* Wait until @cond() holds; fail after LIVENESS_NS. */
static void wait_for(bool (*cond)(void), const char *what)
{
	long long end = now_ns() + LIVENESS_NS;

	while (!cond()) {
		ck_assert_msg(now_ns() < end, "no progress: %s", what);
		sleep_us(200);
	}
}

/* ---- the full signal queue ----------------------------------------------- */

static pid_t filler = -1;
static int filler_pipe = -1;

static void fill_sigpending(void)
{
	struct pollfd p;
	struct rlimit rl;
	int ready[2], hold[2];
	union sigval v = { 0 };
	sigset_t set;
	char c;

	ck_assert_int_eq(getrlimit(RLIMIT_SIGPENDING, &rl), 0);
	rl.rlim_cur = SIGQ_LIMIT;
	ck_assert_int_eq(setrlimit(RLIMIT_SIGPENDING, &rl), 0);
	ck_assert_int_eq(pipe(ready), 0);
	ck_assert_int_eq(pipe(hold), 0);
	filler = fork();
	ck_assert_int_ge(filler, 0);
	if (filler == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		close(ready[0]);
		close(hold[1]);
		rl.rlim_cur = rl.rlim_max < FILL_LIMIT ? rl.rlim_max : FILL_LIMIT;
		setrlimit(RLIMIT_SIGPENDING, &rl);
		sigemptyset(&set);
		sigaddset(&set, SIGRTMIN);
		sigprocmask(SIG_BLOCK, &set, NULL);
		while (sigqueue(getpid(), SIGRTMIN, v) == 0)
			;
		c = errno == EAGAIN ? 'F' : 'E';
		if (write(ready[1], &c, 1) != 1)
			_exit(1);
		/* Until the test closes the pipe or dies. */
		p = (struct pollfd){ .fd = hold[0], .events = POLLIN };
		while (poll(&p, 1, 1) <= 0)
			while (sigqueue(getpid(), SIGRTMIN, v) == 0)
				;
		_exit(0);
	}
	close(ready[1]);
	close(hold[0]);
	filler_pipe = hold[1];
	p = (struct pollfd){ .fd = ready[0], .events = POLLIN };
	ck_assert_msg(poll(&p, 1, (int)(LIVENESS_NS / 1000000)) == 1,
		      "no progress: the filler never reported its full queue");
	ck_assert_int_eq(read(ready[0], &c, 1), 1);
	close(ready[0]);
	ck_assert_msg(c == 'F', "the filler's sigqueue() did not fail with EAGAIN");
	/* The test process itself can no longer be sent a queued signal. */
	sigemptyset(&set);
	sigaddset(&set, SIGRTMIN + 1);
	ck_assert_int_eq(sigprocmask(SIG_BLOCK, &set, NULL), 0);
	ck_assert_int_eq(sigqueue(getpid(), SIGRTMIN + 1, v), -1);
	ck_assert_int_eq(errno, EAGAIN);
}

static void release_sigpending(void)
{
	int status;

	if (filler <= 0)
		return;
	close(filler_pipe);
	ck_assert_int_eq(waitpid(filler, &status, 0), filler);
	filler = -1;
}

/* ---- a raw-ABI server and one spinning worker ---------------------------- */

static struct {
	struct umcg_task srv, wk;
	pid_t srv_tid, wk_tid; /* (atomic) */
	int srv_ready, wk_spinning, stop, wk_done; /* (atomic) */
	int pushes; /* (atomic) the server took the worker from its list */
} r;

static void *raw_server(void *arg)
{
	struct umcg_task *list;
	bool queued = false;
	int ret;

	(void)arg;
	r.srv.state = UMCG_TASK_RUNNING;
	r.srv.server_tid = (uint32_t)gettid();
	ck_assert_int_eq(umcg_ctl(UMCG_CTL_REGISTER, &r.srv, CLOCK_MONOTONIC), 0);
	store_int(&r.srv_tid, gettid());
	store_int(&r.srv_ready, 1);
	while (!load_int(&r.wk_done)) {
		/* seq_cst: a worker that pushes itself after this store finds
		 * us RUNNABLE and wakes us. */
		atomic_store_explicit(h_atomic(&r.srv.state),
				      UMCG_TASK_RUNNABLE | UMCG_TF_COND_WAIT, memory_order_seq_cst);
		list = umcg_runnable_take(&r.srv);
		if (list) {
			ck_assert_ptr_eq(list, &r.wk);
			atomic_fetch_add_explicit(h_atomic(&r.pushes), 1, memory_order_release);
			queued = true;
		}
		/* Run the worker: umcg_wait() consumes next_tid when it
		 * switches, else it is offered again next time round. */
		if (queued)
			r.srv.next_tid = (uint32_t)load_int(&r.wk_tid);
		ret = umcg_wait(0, (uint64_t)(now_ns() + 2 * NSEC_PER_MSEC));
		ck_assert_msg(ret == 0 || ret == -ETIMEDOUT || ret == -EAGAIN, "umcg_wait: %d",
			      ret);
		if (queued && !r.srv.next_tid)
			queued = false;
		r.srv.next_tid = 0;
	}
	atomic_store_explicit(h_atomic(&r.srv.state), UMCG_TASK_RUNNING, memory_order_seq_cst);
	umcg_ctl(UMCG_CTL_UNREGISTER, NULL, 0);
	return NULL;
}

static void *raw_worker(void *arg)
{
	sigset_t kick;

	(void)arg;
	sigemptyset(&kick);
	sigaddset(&kick, umcg_kick_signal());
	pthread_sigmask(SIG_UNBLOCK, &kick, NULL);
	r.wk.state = UMCG_TASK_BLOCKED;
	r.wk.server_tid = (uint32_t)load_int(&r.srv_tid);
	store_int(&r.wk_tid, gettid());
	ck_assert_int_eq(umcg_ctl(UMCG_CTL_REGISTER | UMCG_CTL_WORKER, &r.wk, CLOCK_MONOTONIC), 0);
	store_int(&r.wk_spinning, 1);
	while (!load_int(&r.stop))
		;
	umcg_ctl(UMCG_CTL_UNREGISTER, NULL, 0);
	store_int(&r.wk_done, 1);
	return NULL;
}

/*
 * Join @th within LIVENESS_NS, or fail naming where the raw pair stands:
 * a hang here would otherwise end in the test's timeout with nothing said.
 */
static void join_within(pthread_t th, const char *what)
{
	struct timespec end;
	int err;

	clock_gettime(CLOCK_REALTIME, &end);
	end.tv_sec += LIVENESS_NS / NSEC_PER_SEC;
	err = pthread_timedjoin_np(th, NULL, &end);
	ck_assert_msg(err == 0,
		      "no progress: %s (%s); worker state %#x, server state %#x, pushes %d, "
		      "worker done %d",
		      what, strerror(err),
		      atomic_load_explicit(h_atomic(&r.wk.state), memory_order_acquire),
		      atomic_load_explicit(h_atomic(&r.srv.state), memory_order_acquire),
		      load_int(&r.pushes), load_int(&r.wk_done));
}

static bool worker_spins(void)
{
	return load_int(&r.wk_spinning) &&
	       (atomic_load_explicit(h_atomic(&r.wk.state), memory_order_acquire) &
		UMCG_TASK_MASK) == UMCG_TASK_RUNNING;
}

static int pushes_seen;

static bool worker_pushed_again(void)
{
	return load_int(&r.pushes) > pushes_seen;
}

START_TEST(raw_kick_under_full_queue)
{
	pthread_t s, w;
	uint32_t old;

	ck_assert_int_eq(pthread_create(&s, NULL, raw_server, NULL), 0);
	while (!load_int(&r.srv_ready))
		sleep_us(100);
	ck_assert_int_eq(pthread_create(&w, NULL, raw_worker, NULL), 0);
	wait_for(worker_spins, "the worker runs");
	fill_sigpending();
	pushes_seen = load_int(&r.pushes);
	/* RUNNING -> RUNNING|TF_PREEMPT, then the kick. */
	old = atomic_load_explicit(h_atomic(&r.wk.state), memory_order_relaxed);
	ck_assert_uint_eq(old & UMCG_TASK_MASK, UMCG_TASK_RUNNING);
	ck_assert(
		atomic_compare_exchange_strong(h_atomic(&r.wk.state), &old, old | UMCG_TF_PREEMPT));
	ck_assert_int_eq(umcg_kick(0, load_int(&r.wk_tid)), 0);
	wait_for(worker_pushed_again, "the kicked worker is preempted");
	store_int(&r.stop, 1);
	join_within(w, "the worker unregisters and ends");
	join_within(s, "the server ends");
	release_sigpending();
}
END_TEST

/* ---- the runtime's preemption -------------------------------------------- */

static int hog_running, hog_stop, other_ran; /* (atomic) */

static void *hog(void *arg)
{
	(void)arg;
	store_int(&hog_running, 1);
	while (!load_int(&hog_stop))
		;
	return NULL;
}

static void *other(void *arg)
{
	(void)arg;
	store_int(&other_ran, 1);
	return NULL;
}

static bool hog_runs(void)
{
	return load_int(&hog_running);
}

static bool other_has_run(void)
{
	return load_int(&other_ran);
}

static struct umcg_worker *hog_worker;

/* The server counts a preemption when the kicked worker comes back to it:
 * the one proof that the hog left its CPU, and was not merely run beside. */
static bool hog_preempted(void)
{
	struct umcg_worker_stats st;

	ck_assert_int_eq(umcg_worker_stats(hog_worker, &st), 0);
	return st.preemptions > 0;
}

static struct umcg_rt *start_rt(void)
{
	struct umcg_rt_attr attr;
	struct umcg_rt *rt;

	umcg_rt_attr_init(&attr);
	attr.nr_servers = 1;
	attr.timeslice_ns = TIMESLICE_NS;
	ck_assert_int_eq(umcg_rt_create(&rt, &attr), 0);
	ck_assert_int_eq(umcg_rt_start(rt), 0);
	return rt;
}

START_TEST(runtime_preempts_under_full_queue)
{
	struct umcg_worker *h, *o;
	struct umcg_rt *rt = start_rt();

	ck_assert_int_eq(umcg_spawn(rt, &h, NULL, hog, NULL), 0);
	wait_for(hog_runs, "the hog runs");
	fill_sigpending();
	/* One server, taken by the hog: only a preemption lets this run. */
	ck_assert_int_eq(umcg_spawn(rt, &o, NULL, other, NULL), 0);
	wait_for(other_has_run, "a second worker runs beside a CPU hog");
	hog_worker = h;
	wait_for(hog_preempted, "the hog is preempted");
	store_int(&hog_stop, 1);
	ck_assert_int_eq(umcg_join(o, NULL), 0);
	ck_assert_int_eq(umcg_join(h, NULL), 0);
	ck_assert_int_eq(umcg_rt_destroy(rt), 0);
	release_sigpending();
}
END_TEST

/* ---- asynchronous cancellation ------------------------------------------- */

static pthread_t victim_thread;
static int victim_running, victim_never, companion_stop, companion_rounds; /* (atomic) */

static void *victim(void *arg)
{
	(void)arg;
	victim_thread = pthread_self();
	pthread_setcanceltype(PTHREAD_CANCEL_ASYNCHRONOUS, NULL);
	store_int(&victim_running, 1);
	/* A pure compute loop; the atomic load is where TSan, which defers
	 * signals to its next hook, lets the kick and the cancel in. */
	while (!atomic_load_explicit(h_atomic(&victim_never), memory_order_relaxed))
		;
	return NULL;
}

/* Spins about half a timeslice, then yields: the victim is preempted at
 * every slice and waits in the kick handler while this one runs. */
static void *companion(void *arg)
{
	long long until;

	(void)arg;
	while (!load_int(&companion_stop)) {
		until = now_ns() + TIMESLICE_NS / 2;
		while (now_ns() < until)
			;
		atomic_fetch_add_explicit(h_atomic(&companion_rounds), 1, memory_order_release);
		umcg_yield();
	}
	return NULL;
}

static bool victim_runs(void)
{
	return load_int(&victim_running);
}

static pid_t victim_tid;

/* The victim sleeps (in the kick handler's wait for its server). */
static bool victim_sleeps(void)
{
	char path[64], buf[256], *p;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", (int)victim_tid);
	fd = open(path, O_RDONLY);
	ck_assert_int_ge(fd, 0);
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	ck_assert_int_gt(n, 0);
	buf[n] = '\0';
	p = strrchr(buf, ')');
	return p && p[1] == ' ' && p[2] == 'S';
}

static int rounds_seen;

static bool companion_goes_on(void)
{
	return load_int(&companion_rounds) > rounds_seen + 2;
}

START_TEST(async_cancel_in_kick_handler)
{
	int loops = getenv("UMCG_STRESS") ? 200 : 20;
	struct umcg_worker *c, *v;
	struct umcg_rt *rt = start_rt();
	void *ret;
	int i;

	ck_assert_int_eq(umcg_spawn(rt, &c, NULL, companion, NULL), 0);
	for (i = 0; i < loops; i++) {
		store_int(&victim_running, 0);
		ck_assert_int_eq(umcg_spawn(rt, &v, NULL, victim, NULL), 0);
		wait_for(victim_runs, "the victim runs");
		victim_tid = umcg_worker_tid(v);
		wait_for(victim_sleeps, "the victim is preempted");
		ck_assert_int_eq(pthread_cancel(victim_thread), 0);
		ck_assert_int_eq(umcg_join(v, &ret), 0);
		rounds_seen = load_int(&companion_rounds);
		wait_for(companion_goes_on, "the companion runs after the cancellation");
	}
	store_int(&companion_stop, 1);
	ck_assert_int_eq(umcg_join(c, NULL), 0);
	ck_assert_int_eq(umcg_rt_destroy(rt), 0);
}
END_TEST

static Suite *kick_suite(void)
{
	Suite *s = suite_create("kick");
	TCase *tq = tcase_create("full signal queue");
	TCase *tc = tcase_create("cancellation");

	tcase_set_timeout(tq, 60);
	tcase_add_test(tq, raw_kick_under_full_queue);
	tcase_add_test(tq, runtime_preempts_under_full_queue);
	suite_add_tcase(s, tq);
	tcase_set_timeout(tc, 240);
	tcase_add_test(tc, async_cancel_in_kick_handler);
	suite_add_tcase(s, tc);
	return s;
}

/* Decided in a throw-away child, so that each test process chooses its
 * backend afresh. */
static bool emulated(void)
{
	int status;
	pid_t pid = fork();

	if (pid == 0)
		_exit(umcg_backend_active() == UMCG_BACKEND_EMULATED ? 0 : 1);
	return pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
	       WEXITSTATUS(status) == 0;
}

static int prepare(void)
{
	if (!emulated()) {
		printf("test-kick: the kick signal is the emulation's; skipped\n");
		return 77;
	}
	return 0;
}

H_TEST_MAIN(kick_suite, prepare)
