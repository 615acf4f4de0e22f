/* SPDX-License-Identifier: MIT */
/*
 * tests/common/harness.c - servers, workers and snapshots for the UMCG
 * conformance suite (see harness.h for the rules worker code follows).
 *
 * Protocol between the test's threads: everything a test shares between
 * threads is either a C11 atomic or a field of struct umcg_task reached
 * through h_atomic() (test_common.h), all seq_cst, so that ThreadSanitizer sees
 * every access and no reasoning about weaker orders is needed in a test.
 * What the harness relies on from the backend, and checks:
 *  - a server's loop (h_server_run()) stores RUNNABLE|TF_COND_WAIT, then
 *    takes its list, then calls umcg_wait(); the library's seq_cst take
 *    pairs with the pushers' CAS (list.c), so a push is either taken here
 *    or turns the umcg_wait() into -EAGAIN (doc/umcg-abi.md §7 rule 7);
 *  - a worker is on a list only while RUNNABLE (h_server_collect() fails
 *    the test otherwise) and the list holds only workers of this test;
 *  - a failed call changes no task (h_snap_same()).
 * The registry below (servers[], workers[]) is append-only: an entry is
 * published with a seq_cst store of the count after the pointer, and read
 * by h_dump() from any thread.
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
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"

int h_backend;

#define ALLOC_MAX 256

static void *allocated[ALLOC_MAX];
static atomic_int nallocated;

static struct h_server *_Atomic servers[4];
static atomic_int nservers;
static struct h_worker *_Atomic workers[H_MAX_WORKERS];
static atomic_int nworkers;

/* ---- time, threads, randomness ------------------------------------------ */

pid_t h_gettid(void)
{
	return (pid_t)syscall(SYS_gettid);
}

void h_spin_us(unsigned int us)
{
	uint64_t end = h_now(CLOCK_MONOTONIC) + (uint64_t)us * 1000;

	while (h_now(CLOCK_MONOTONIC) < end)
		h_cpu_relax();
}

uint32_t h_rand(uint32_t *seed)
{
	uint32_t x = *seed;

	x ^= x << 13;
	x ^= x >> 17;
	x ^= x << 5;
	return *seed = x;
}

pthread_t h_thread(void *(*fn)(void *), void *arg)
{
	pthread_t th;
	int err = pthread_create(&th, NULL, fn, arg);

	if (err)
		ck_abort_msg("pthread_create: %s", strerror(err));
	return th;
}

void h_join(pthread_t th)
{
	int err = pthread_join(th, NULL);

	if (err)
		ck_abort_msg("pthread_join: %s", strerror(err));
}

void h_skip(const char *test, const char *why)
{
	printf("%s: not applicable on the %s backend (%s); passes without running\n", test,
	       umcg_backend_name(h_backend), why);
	fflush(stdout);
}

/* ---- tasks ------------------------------------------------------------------ */

void h_set_state(struct umcg_task *t, uint32_t st)
{
	uint32_t old = h_load(&t->state);

	while (!atomic_compare_exchange_strong(h_atomic(&t->state), &old, (old & 0xffff0000U) | st))
		;
}

bool h_cas_state(struct umcg_task *t, uint32_t old, uint32_t new_state)
{
	return atomic_compare_exchange_strong(h_atomic(&t->state), &old, new_state);
}

void *h_alloc(size_t size)
{
	size_t rounded = (size + UMCG_TASK_ALIGN - 1) & ~(size_t)(UMCG_TASK_ALIGN - 1);
	void *p = aligned_alloc(UMCG_TASK_ALIGN, rounded);
	int n = atomic_fetch_add(&nallocated, 1);

	ck_assert_ptr_nonnull(p);
	ck_assert_int_lt(n, ALLOC_MAX);
	memset(p, 0, rounded);
	allocated[n] = p;
	return p;
}

struct umcg_task *h_task_new(void)
{
	return h_alloc(sizeof(struct umcg_task));
}

void h_task_server(struct umcg_task *t, pid_t self_tid)
{
	memset(t, 0, sizeof(*t));
	t->state = UMCG_TASK_RUNNING;
	t->server_tid = (uint32_t)self_tid;
}

void h_task_worker(struct umcg_task *t, pid_t server_tid)
{
	memset(t, 0, sizeof(*t));
	t->state = UMCG_TASK_BLOCKED;
	t->server_tid = (uint32_t)server_tid;
}

static struct umcg_task *list_next(struct umcg_task *t)
{
	return (struct umcg_task *)(uintptr_t)h_load(&t->runnable_workers_ptr);
}

bool h_list_contains(struct umcg_task *server, const struct umcg_task *t)
{
	struct umcg_task *pos =
		(struct umcg_task *)(uintptr_t)h_load(&server->runnable_workers_ptr);

	for (; pos; pos = list_next(pos))
		if (pos == t)
			return true;
	return false;
}

size_t h_list_len(struct umcg_task *server)
{
	struct umcg_task *pos =
		(struct umcg_task *)(uintptr_t)h_load(&server->runnable_workers_ptr);
	size_t n = 0;

	for (; pos; pos = list_next(pos))
		n++;
	return n;
}

/* ---- snapshots ---------------------------------------------------------- */

static void task_copy(struct umcg_task *dst, struct umcg_task *src)
{
	memset(dst, 0, sizeof(*dst));
	dst->state = h_load(&src->state);
	dst->next_tid = h_load(&src->next_tid);
	dst->server_tid = h_load(&src->server_tid);
	dst->__hole[0] = h_load(&src->__hole[0]);
	dst->blocked_ts = h_load(&src->blocked_ts);
	dst->runnable_ts = h_load(&src->runnable_ts);
	dst->runnable_workers_ptr = h_load(&src->runnable_workers_ptr);
	dst->__zero[0] = h_load(&src->__zero[0]);
	dst->__zero[1] = h_load(&src->__zero[1]);
	dst->__zero[2] = h_load(&src->__zero[2]);
}

void h_snap_take(struct h_snap *s, struct umcg_task *a, struct umcg_task *b, struct umcg_task *c,
		 struct umcg_task *d)
{
	struct umcg_task *all[4] = { a, b, c, d };
	int i;

	s->n = 0;
	for (i = 0; i < 4; i++) {
		if (!all[i])
			continue;
		s->src[s->n] = all[i];
		task_copy(&s->copy[s->n], all[i]);
		s->n++;
	}
}

bool h_snap_same(const struct h_snap *s, char *why, size_t len)
{
	struct umcg_task now;
	int i;

	for (i = 0; i < s->n; i++) {
		const struct umcg_task *was = &s->copy[i];

		task_copy(&now, s->src[i]);
		if (!memcmp(&now, was, sizeof(now)))
			continue;
#define DIFF(field, fmt)                                                                     \
	if (now.field != was->field) {                                                       \
		snprintf(why, len, "task %p: " #field " " fmt " -> " fmt, (void *)s->src[i], \
			 (unsigned long long)was->field, (unsigned long long)now.field);     \
		return false;                                                                \
	}
		DIFF(state, "%#llx");
		DIFF(next_tid, "%llu");
		DIFF(server_tid, "%llu");
		DIFF(__hole[0], "%llu");
		DIFF(blocked_ts, "%llu");
		DIFF(runnable_ts, "%llu");
		DIFF(runnable_workers_ptr, "%#llx");
		DIFF(__zero[0], "%llu");
		DIFF(__zero[1], "%llu");
		DIFF(__zero[2], "%llu");
#undef DIFF
	}
	return true;
}

/* ---- diagnostics ---------------------------------------------------------- */

void h_dump(char *buf, size_t len)
{
	size_t off = 0;
	int i, n;

	buf[0] = '\0';
#define ADD(...)                                                              \
	do {                                                                  \
		if (off < len) {                                              \
			int k_ = snprintf(buf + off, len - off, __VA_ARGS__); \
			off += k_ > 0 ? (size_t)k_ : 0;                       \
		}                                                             \
	} while (0)
	n = atomic_load(&nservers);
	for (i = 0; i < n; i++) {
		struct h_server *s = atomic_load(&servers[i]);

		ADD("[server %d: state %#x next %u list %u] ", (int)s->tid, h_state(&s->task),
		    h_load(&s->task.next_tid), (unsigned int)h_list_len(&s->task));
	}
	n = atomic_load(&nworkers);
	for (i = 0; i < n; i++) {
		struct h_worker *w = atomic_load(&workers[i]);

		ADD("[W%d %d: state %#x next %u reg %d done %d progress %lu] ", w->index,
		    atomic_load(&w->tid), h_state(&w->task), h_load(&w->task.next_tid),
		    atomic_load(&w->reg_ret), atomic_load(&w->done), atomic_load(&w->progress));
	}
#undef ADD
}

void h_until_failed(const char *file, int line, const char *what)
{
	char dump[1024];

	h_dump(dump, sizeof(dump));
	ck_abort_msg("%s:%d: nothing after %" PRIu64 " ms waiting for: %s; %s", file, line,
		     h_liveness_ns() / 1000000, what, dump);
	abort(); /* not reached: ck_abort_msg() ends the test process */
}

static bool known_worker(const struct umcg_task *t)
{
	int i, n = atomic_load(&nworkers);

	for (i = 0; i < n; i++)
		if (&atomic_load(&workers[i])->task == t)
			return true;
	return false;
}

/* ---- workers -------------------------------------------------------------- */

int h_yield(struct h_worker *w)
{
	h_set_state(&w->task, UMCG_TASK_RUNNABLE | UMCG_TF_COND_WAIT);
	return umcg_wait(0, 0);
}

static void *worker_main(void *arg)
{
	struct h_worker *w = arg;
	int ret;

	atomic_store(&w->tid, h_gettid());
	ret = umcg_ctl(UMCG_CTL_REGISTER | UMCG_CTL_WORKER, &w->task, w->clock);
	atomic_store(&w->reg_ret, ret);
	if (ret)
		return NULL;
	if (w->fn)
		w->fn(w);
	if (atomic_load(&w->left))
		return NULL;
	atomic_store(&w->done, 1);
	for (;;) {
		ret = h_yield(w);
		H_CHECK(ret == 0, "parked worker W%d: umcg_wait() returned %d", w->index, ret);
	}
	return NULL;
}

static bool thread_sleeping(pid_t tid)
{
	char path[64], buf[512], *p;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", (int)tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		ck_abort_msg("open(%s): %s", path, strerror(errno));
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		ck_abort_msg("read(%s) failed", path);
	buf[n] = '\0';
	/* "tid (comm) S ...": comm may hold anything, so look after the last ')'. */
	p = strrchr(buf, ')');
	return p && p[1] == ' ' && p[2] == 'S';
}

void h_wait_asleep(struct h_worker *w)
{
	pid_t tid = atomic_load(&w->tid);

	H_WAIT_UNTIL(thread_sleeping(tid), "a RUNNABLE worker's thread to fall asleep");
}

struct h_worker *h_worker_start_state(pid_t server_tid, clockid_t clk, uint32_t state,
				      h_worker_fn fn, void *arg)
{
	struct h_worker *w = h_alloc(sizeof(*w));
	int i, n;

	h_task_worker(&w->task, server_tid);
	w->task.state = state;
	w->server_tid = server_tid;
	w->clock = clk;
	w->reg_state = state;
	w->fn = fn;
	w->arg = arg;
	atomic_init(&w->tid, 0);
	atomic_init(&w->reg_ret, H_PENDING);
	atomic_init(&w->done, 0);
	atomic_init(&w->stop, 0);
	atomic_init(&w->left, 0);
	atomic_init(&w->progress, 0);
	for (i = 0; i < 8; i++)
		atomic_init(&w->r[i], H_PENDING);

	n = atomic_load(&nworkers);
	ck_assert_int_lt(n, H_MAX_WORKERS);
	w->index = n;
	atomic_store(&workers[n], w);
	atomic_store(&nworkers, n + 1);

	w->thread = h_thread(worker_main, w);
	H_WAIT_UNTIL(atomic_load(&w->tid) != 0, "a worker thread to start");
	return w;
}

struct h_worker *h_worker_start(pid_t server_tid, clockid_t clk, h_worker_fn fn, void *arg)
{
	return h_worker_start_state(server_tid, clk, UMCG_TASK_BLOCKED, fn, arg);
}

/* ---- servers -------------------------------------------------------------- */

static struct h_server *server_new(clockid_t clk)
{
	struct h_server *s = h_alloc(sizeof(*s));
	int n;

	s->clock = clk;
	atomic_init(&s->reg_ret, H_PENDING);
	atomic_init(&s->done, 0);
	n = atomic_load(&nservers);
	ck_assert_int_lt(n, 4);
	atomic_store(&servers[n], s);
	atomic_store(&nservers, n + 1);
	return s;
}

struct h_server *h_server_register_state(clockid_t clk, uint32_t state)
{
	struct h_server *s = server_new(clk);
	int ret;

	s->tid = h_gettid();
	h_task_server(&s->task, s->tid);
	s->task.state = state;
	ret = umcg_ctl(UMCG_CTL_REGISTER, &s->task, clk);
	ck_assert_msg(ret == 0, "registering a server (clock %d, state %#x) gave %d", (int)clk,
		      state, ret);
	atomic_store(&s->reg_ret, ret);
	return s;
}

struct h_server *h_server_register(clockid_t clk)
{
	return h_server_register_state(clk, UMCG_TASK_RUNNING);
}

static void *server_main(void *arg)
{
	struct h_server *s = arg;
	int ret;

	s->tid = h_gettid();
	h_task_server(&s->task, s->tid);
	ret = umcg_ctl(UMCG_CTL_REGISTER, &s->task, s->clock);
	atomic_store(&s->reg_ret, ret);
	if (ret)
		return NULL;
	s->fn(s, s->arg);
	ret = umcg_ctl(UMCG_CTL_UNREGISTER, NULL, 0);
	H_CHECK(ret == 0, "server thread %d: unregistering gave %d", (int)s->tid, ret);
	atomic_store(&s->done, 1);
	return NULL;
}

struct h_server *h_server_thread_start(clockid_t clk, void (*fn)(struct h_server *s, void *arg),
				       void *arg)
{
	struct h_server *s = server_new(clk);
	int ret;

	s->fn = fn;
	s->arg = arg;
	s->thread = h_thread(server_main, s);
	H_WAIT_UNTIL(atomic_load(&s->reg_ret) != H_PENDING, "a server thread to register");
	ret = atomic_load(&s->reg_ret);
	ck_assert_msg(ret == 0, "registering a server thread gave %d", ret);
	return s;
}

void h_server_thread_join(struct h_server *s)
{
	h_join(s->thread);
	ck_assert_int_eq(atomic_load(&s->done), 1);
}

void h_server_collect(struct h_server *s)
{
	struct umcg_task *head = umcg_runnable_take(&s->task), *pos, *tmp;
	struct h_worker *taken[H_QUEUE_MAX];
	unsigned int n = 0;
	uint32_t st;

	umcg_runnable_for_each(pos, tmp, head) {
		H_CHECK(known_worker(pos), "server %d: unknown task %p on its runnable list",
			(int)s->tid, (void *)pos);
		st = h_state(pos);
		H_CHECK((st & UMCG_TASK_MASK) == UMCG_TASK_RUNNABLE,
			"server %d: worker W%d on the runnable list in state %#x", (int)s->tid,
			h_worker_of(pos)->index, st);
		H_CHECK(n < H_QUEUE_MAX, "server %d: runnable list longer than %d (a loop?)",
			(int)s->tid, H_QUEUE_MAX);
		taken[n++] = h_worker_of(pos);
	}
	/* The list is newest first; the queue is oldest first. */
	while (n) {
		H_CHECK(s->nq < H_QUEUE_MAX, "server %d: queue overflow", (int)s->tid);
		s->queue[s->nq++] = taken[--n];
	}
}

bool h_server_unqueue(struct h_server *s, struct h_worker *w)
{
	unsigned int i;

	for (i = 0; i < s->nq; i++) {
		if (s->queue[i] != w)
			continue;
		memmove(&s->queue[i], &s->queue[i + 1], (s->nq - i - 1) * sizeof(s->queue[0]));
		s->nq--;
		return true;
	}
	return false;
}

void h_server_requeue(struct h_server *s, struct h_worker *w)
{
	H_CHECK(s->nq < H_QUEUE_MAX, "server %d: queue overflow", (int)s->tid);
	memmove(&s->queue[1], &s->queue[0], s->nq * sizeof(s->queue[0]));
	s->queue[0] = w;
	s->nq++;
}

bool h_server_queued(const struct h_server *s, const struct h_worker *w)
{
	unsigned int i;

	for (i = 0; i < s->nq; i++)
		if (s->queue[i] == w)
			return true;
	return false;
}

static void server_fail(struct h_server *s, struct h_worker *w, const char *what, int ret)
{
	char dump[1024];

	h_dump(dump, sizeof(dump));
	ck_abort_msg("server %d running W%d: %s (umcg_wait gave %d); %s", (int)s->tid,
		     w ? w->index : -1, what, ret, dump);
}

int h_server_run(struct h_server *s, struct h_worker *w, uint64_t slice_ns)
{
	uint64_t give_up = h_now(CLOCK_MONOTONIC) + h_liveness_ns();

	for (;;) {
		struct h_worker *next = NULL;
		uint64_t deadline;
		bool consumed;
		uint32_t st;
		int ret;

		h_set_state(&s->task, UMCG_TASK_RUNNABLE | UMCG_TF_COND_WAIT);
		h_server_collect(s);
		if (w && h_server_unqueue(s, w))
			next = w;
		if (next) {
			unsigned int i;

			h_wait_asleep(next);
			for (i = 0; i < s->nq; i++)
				h_wait_asleep(s->queue[i]);
		}
		h_store(&s->task.next_tid, next ? (uint32_t)atomic_load(&next->tid) : 0U);
		if (next)
			s->last_pick_state = h_state(&next->task);
		deadline = h_now(s->clock) + (next && slice_ns ? slice_ns : h_liveness_ns());
		ret = umcg_wait(0, deadline);
		consumed = next && h_load(&s->task.next_tid) == 0;
		st = h_state(&s->task);
		if ((ret == 0 || ret == -ETIMEDOUT || ret == -EAGAIN) &&
		    (st & UMCG_TASK_MASK) != UMCG_TASK_RUNNING)
			server_fail(s, w, "the server is not RUNNING after umcg_wait()", ret);
		if (consumed) {
			if (ret == 0 || (ret == -ETIMEDOUT && slice_ns))
				return ret;
			server_fail(s, w, "the worker ran but the server was not woken", ret);
		}
		if (next)
			h_server_requeue(s, next);
		if (ret == -EAGAIN) {
			s->eagains++;
			if (next && (h_state(&next->task) & UMCG_TASK_MASK) != UMCG_TASK_RUNNABLE)
				server_fail(s, w, "-EAGAIN: the picked worker is not RUNNABLE",
					    ret);
		} else if (ret == 0) {
			if (next)
				server_fail(s, w, "umcg_wait() returned 0 without using next_tid",
					    ret);
			s->wakeups++;
		} else if (ret == -ETIMEDOUT) {
			server_fail(s, w,
				    next ? "-ETIMEDOUT without using next_tid" :
					   "the worker never showed up on the runnable list",
				    ret);
		} else {
			server_fail(s, w, "unexpected error", ret);
		}
		if (h_now(CLOCK_MONOTONIC) > give_up)
			server_fail(s, w, "gave up looping", ret);
	}
}

int h_server_switch(struct h_server *s, struct h_worker *w, uint64_t abs_timeout)
{
	h_store(&s->task.next_tid, w ? (uint32_t)atomic_load(&w->tid) : 0U);
	h_set_state(&s->task, UMCG_TASK_RUNNABLE | UMCG_TF_COND_WAIT);
	return umcg_wait(0, abs_timeout);
}

void h_server_wait_listed(struct h_server *s, struct h_worker *w)
{
	H_WAIT_UNTIL(h_list_contains(&s->task, &w->task), "a worker on its server's runnable list");
	h_wait_asleep(w);
}

/* ---- calls in a thread of their own --------------------------------------- */

static void *ctl_main(void *arg)
{
	struct h_ctl_call *c = arg;
	pid_t tid = h_gettid();
	int ret;

	atomic_store(&c->tid, tid);
	if (c->server_tid_is_self)
		h_store(&c->self->server_tid, (uint32_t)tid);
	ret = umcg_ctl(c->flags, c->self, c->clock);
	if (ret == 0 && c->unregister_after)
		atomic_store(&c->unreg_ret, umcg_ctl(UMCG_CTL_UNREGISTER, NULL, 0));
	atomic_store(&c->ret, ret);
	return NULL;
}

bool h_ctl_in_thread(struct h_ctl_call *c)
{
	uint64_t end = h_now(CLOCK_MONOTONIC) + h_liveness_ns();

	atomic_init(&c->tid, 0);
	atomic_init(&c->ret, H_PENDING);
	atomic_init(&c->unreg_ret, H_PENDING);
	c->thread = h_thread(ctl_main, c);
	while (atomic_load(&c->ret) == H_PENDING) {
		if (h_now(CLOCK_MONOTONIC) > end)
			return false;
		h_sleep_us(200);
	}
	h_join(c->thread);
	return true;
}

int h_ctl_thread(uint32_t flags, struct umcg_task *self, clockid_t clk, bool server_tid_is_self)
{
	struct h_ctl_call *c = calloc(1, sizeof(*c));
	char dump[1024];
	int ret;

	ck_assert_ptr_nonnull(c);
	c->flags = flags;
	c->self = self;
	c->clock = clk;
	c->server_tid_is_self = server_tid_is_self;
	c->unregister_after = true;
	if (!h_ctl_in_thread(c)) {
		h_dump(dump, sizeof(dump));
		ck_abort_msg("umcg_ctl(%#x, %p, %d) from a new thread did not return within "
			     "%" PRIu64 " ms: it accepted a registration it should refuse; %s",
			     flags, (void *)self, (int)clk, h_liveness_ns() / 1000000, dump);
	}
	ret = atomic_load(&c->ret);
	if (ret == 0)
		ck_assert_msg(atomic_load(&c->unreg_ret) == 0,
			      "unregistering after umcg_ctl(%#x) gave %d", flags,
			      atomic_load(&c->unreg_ret));
	free(c);
	return ret;
}

void h_assert_unregistered(const char *what)
{
	int ret = umcg_ctl(UMCG_CTL_UNREGISTER, NULL, 0);

	ck_assert_msg(ret == -EINVAL, "%s: the thread is registered (UNREGISTER gave %d)", what,
		      ret);
}

/* ---- idle threads and foreign processes ----------------------------------- */

static void *idle_main(void *arg)
{
	struct h_idle *idle = arg;
	char c;

	atomic_store(&idle->tid, h_gettid());
	while (read(idle->fd[0], &c, 1) < 0 && errno == EINTR)
		;
	return NULL;
}

void h_idle_start(struct h_idle *idle)
{
	ck_assert_int_eq(pipe2(idle->fd, O_CLOEXEC), 0);
	atomic_init(&idle->tid, 0);
	idle->thread = h_thread(idle_main, idle);
	H_WAIT_UNTIL(atomic_load(&idle->tid) != 0, "an idle thread to start");
}

void h_idle_stop(struct h_idle *idle)
{
	ck_assert_int_eq(write(idle->fd[1], "x", 1), 1);
	h_join(idle->thread);
	close(idle->fd[0]);
	close(idle->fd[1]);
}

pid_t h_fork_sleeper(void)
{
	pid_t pid = fork();

	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		for (;;)
			pause();
	}
	return pid;
}

void h_kill(pid_t pid)
{
	int status;

	kill(pid, SIGKILL);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
}

/* ---- watchdog ------------------------------------------------------------- */

static void watchdog_dump(void *arg, char *buf, size_t len)
{
	(void)arg;
	h_dump(buf, len);
}

struct h_watchdog *h_watchdog_start(const char *what, atomic_ulong *const *counters, int n,
				    const atomic_ulong *iteration, unsigned int stall_ms)
{
	struct h_watchdog_spec spec = {
		.what = what,
		.counters = counters,
		.n = n > 0 ? (size_t)n : 0,
		.iteration = iteration,
		.stall_ms = stall_ms,
		.dump = watchdog_dump,
	};

	return h_watchdog_run(&spec);
}
