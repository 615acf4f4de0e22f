/* SPDX-License-Identifier: MIT */
/*
 * tests/fuzz/harness.c - libFuzzer entry point: random sequences of raw ABI
 * and runtime calls, with the protocol's invariants checked after each step.
 *
 * One input is a byte string read front to back (fz_u8() gives 0 once it is
 * used up, so every input is valid). It is cut into at most FZ_MAX_SECTIONS
 * sections; the first byte of each picks one of three scenarios, and each
 * scenario ends with every thread joined, every task unregistered and every
 * runtime destroyed, so libFuzzer can run the next input in the same
 * process:
 *
 *   A. garbage: the calling thread issues umcg_ctl/umcg_wait/umcg_kick/
 *      umcg_preempt/umcg_block_begin/_end on task words filled from a
 *      palette of good and bad values (states, flags, next_tid, server_tid,
 *      the reserved fields, misaligned pointers, bad clocks), and runs the
 *      runnable-list helpers on lists built from the input. The results are
 *      checked against the ordered error list of <umcg/umcg.h>; a call that
 *      fails must leave the task word as it was.
 *   B. raw: one or two server threads run a correct server loop (section 7
 *      of the ABI, as examples/raw_scheduler.c) over up to four workers,
 *      cooperative or with a timeslice. Each worker runs a script from the
 *      input: yield, block, spin, kick and preempt other tasks, and calls
 *      that must fail (a timeout from a worker, a second registration, a
 *      block_end without a begin). The main thread kicks and preempts from
 *      outside meanwhile.
 *   C. runtime: umcg_rt_create with attributes from the input (bad ones
 *      too: those runtimes are only destroyed), start, spawn up to four
 *      workers whose scripts yield, park, unpark one another, sleep, block,
 *      spawn detached children and make the calls a worker may not make;
 *      then stop the scripts, unpark everyone once, join or detach, drain,
 *      stop, destroy.
 *
 * Invariants (FZ_CHECK aborts, which libFuzzer and Check report as a crash):
 *   - every call returns 0 or one of the negative errnos its header lists
 *     for that situation, and leaves errno as it was (each call is made
 *     with errno set to a value from the input);
 *   - no lost wake-up: each scenario must end within a liveness bound
 *     (fz_liveness_ns(): 10 s, times CK_TIMEOUT_MULTIPLIER), watched by a
 *     thread that aborts with a dump of the task words when it is passed.
 *     Servers of scenario B wait without a backstop timeout, and the end
 *     of scenario C unparks each worker exactly once, so a wake-up that
 *     the library drops shows as a hang;
 *   - each worker is on at most one runnable list: a server that takes a
 *     worker already in its queue, a worker of another server, a finished
 *     worker, or one not RUNNABLE, fails;
 *   - at most one RUNNING worker per server, and it is the one the server
 *     ran last (checked by every server of scenario B on every loop).
 *
 * Determinism: the sequence of calls depends on the input only; the
 * interleaving of threads does not, and every wait in the harness is
 * bounded by the liveness bound, so an iteration always ends.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <umcg/runtime.h>
#include <umcg/umcg.h>

#include "fuzz.h"
#include "h_atomic.h"

#define FZ_MAX_SECTIONS 4
#define FZ_MAX_OPS 24

#define ld(p) atomic_load_explicit(h_atomic((p)), memory_order_seq_cst)
#define st(p, v) atomic_store_explicit(h_atomic((p)), (v), memory_order_seq_cst)

/* ---- input ---------------------------------------------------------------- */

struct fz_in {
	const uint8_t *p;
	size_t n;
};

static uint8_t fz_u8(struct fz_in *in)
{
	uint8_t v;

	if (!in->n)
		return 0;
	v = *in->p++;
	in->n--;
	return v;
}

static uint32_t fz_u32(struct fz_in *in)
{
	uint32_t v = fz_u8(in);

	v |= (uint32_t)fz_u8(in) << 8;
	v |= (uint32_t)fz_u8(in) << 16;
	v |= (uint32_t)fz_u8(in) << 24;
	return v;
}

/* ---- failure, time, the watchdog ----------------------------------------- */

static const char *fz_phase = "idle"; /* atomic: read by the watchdog */
static uint64_t fz_deadline; /* atomic: 0 = nothing watched */
static void (*fz_dump)(void); /* atomic: describes the current scenario */

static void fz_fail(const char *file, int line, const char *fmt, ...)
	__attribute__((noreturn, format(printf, 3, 4)));

static void fz_fail(const char *file, int line, const char *fmt, ...)
{
	void (*dump)(void) = ld(&fz_dump);
	va_list ap;

	fprintf(stderr, "umcg-fuzz: %s:%d: in %s: ", file, line, ld(&fz_phase));
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	if (dump)
		dump();
	fflush(stderr);
	abort();
}

#define FZ_CHECK(cond, ...)                                       \
	do {                                                      \
		if (!(cond))                                      \
			fz_fail(__FILE__, __LINE__, __VA_ARGS__); \
	} while (0)

/* Check @ret is one of the listed results (a 0-terminated list after the
 * first), and that errno is still @err. */
static bool ret_in(int ret, int first, ...)
{
	va_list ap;
	int v;
	bool ok = ret == first;

	va_start(ap, first);
	while (!ok && (v = va_arg(ap, int)) != 1)
		ok = ret == v;
	va_end(ap);
	return ok;
}

/* FZ_CALL(ret, call, allowed...) - make @call with errno set to a marker,
 * store its result in @ret, check the result is one of @allowed (the list
 * ends with 1, which is no result of any call) and errno untouched. */
#define FZ_CALL(ret, call, ...)                                                                \
	do {                                                                                   \
		int err_ = fz_errno_marker();                                                  \
		errno = err_;                                                                  \
		(ret) = (call);                                                                \
		FZ_CHECK(errno == err_, "%s changed errno from %d to %d", #call, err_, errno); \
		FZ_CHECK(ret_in((ret), __VA_ARGS__, 1), "%s returned %d (%s)", #call, (ret),   \
			 (ret) < 0 ? strerror(-(ret)) : "");                                   \
	} while (0)

static int fz_errno_seed = 7; /* per thread would be nicer; any value will do */

static int fz_errno_marker(void)
{
	/* Relaxed: just a value that no call would produce by chance. */
	return 1000 +
	       atomic_fetch_add_explicit(h_atomic(&fz_errno_seed), 1, memory_order_relaxed) % 1000;
}

static pid_t fz_gettid(void)
{
	return (pid_t)syscall(SYS_gettid);
}

static uint64_t fz_now(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void fz_nap_ns(uint64_t ns)
{
	struct timespec ts = { .tv_sec = 0, .tv_nsec = (long)ns };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* Busy wait, no syscall: for RUNNING workers. */
static void fz_spin_ns(uint64_t ns)
{
	uint64_t end = fz_now(CLOCK_MONOTONIC) + ns;

	while (fz_now(CLOCK_MONOTONIC) < end)
		;
}

uint64_t fz_liveness_ns(void)
{
	const char *m = getenv("CK_TIMEOUT_MULTIPLIER");
	double f = m ? atof(m) : 1.0;

	if (f < 1.0)
		f = 1.0;
	return (uint64_t)(10e9 * f);
}

static void *watchdog_main(void *arg)
{
	(void)arg;
	for (;;) {
		uint64_t d = ld(&fz_deadline);

		if (d && fz_now(CLOCK_MONOTONIC) > d)
			fz_fail(__FILE__, __LINE__,
				"lost wake-up: the scenario did not end within %.1f s",
				(double)fz_liveness_ns() / 1e9);
		fz_nap_ns(20 * 1000 * 1000);
	}
	return NULL;
}

static void watchdog_start(void)
{
	pthread_t th;
	pthread_attr_t a;

	pthread_attr_init(&a);
	pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
	if (pthread_create(&th, &a, watchdog_main, NULL))
		abort();
	pthread_attr_destroy(&a);
}

static void watch(const char *phase, void (*dump)(void))
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	pthread_once(&once, watchdog_start);
	st(&fz_phase, phase);
	st(&fz_dump, dump);
	st(&fz_deadline, fz_now(CLOCK_MONOTONIC) + fz_liveness_ns());
}

static void unwatch(void)
{
	st(&fz_deadline, 0);
	st(&fz_dump, NULL);
	st(&fz_phase, "idle");
}

static pthread_t fz_thread(void *(*fn)(void *), void *arg)
{
	pthread_t th;
	int ret = pthread_create(&th, NULL, fn, arg);

	FZ_CHECK(!ret, "pthread_create: %s", strerror(ret));
	return th;
}

/* ======================================================================== *
 * A. Garbage on the calling thread
 * ======================================================================== */

#define A_TASKS 4
#define A_LIST 8

static struct a_state {
	struct umcg_task t[A_TASKS];
	struct umcg_task list[A_LIST];
	struct umcg_task head;
	unsigned char mis[2 * UMCG_TASK_ALIGN] __attribute__((aligned(UMCG_TASK_ALIGN)));
	int reg; /* index of the task the thread registered with, or -1 */
	clockid_t clock;
	pid_t tid;
} A;

static const uint32_t a_states[] = {
	UMCG_TASK_NONE,
	UMCG_TASK_RUNNING,
	UMCG_TASK_RUNNABLE,
	UMCG_TASK_BLOCKED,
	UMCG_TASK_RUNNABLE | UMCG_TF_COND_WAIT,
	UMCG_TASK_RUNNING | UMCG_TF_PREEMPT,
	UMCG_TASK_BLOCKED | UMCG_TF_PREEMPT,
	UMCG_TASK_RUNNING | 0x10000U,
	UMCG_TASK_BLOCKED | 0xabc0000U,
	0x4U,
	0xffU,
	0xffffffffU,
	UMCG_TASK_RUNNING | UMCG_TF_COND_WAIT,
	UMCG_TASK_RUNNING | 0x400U,
};

/* States a registered thread may hold while it calls into the library
 * without asking to sleep forever: anything else means "wait until a
 * server runs me", on the kernel as on the emulation. */
static const uint32_t a_live_states[] = {
	UMCG_TASK_RUNNING,
	UMCG_TASK_RUNNING | 0x20000U,
	UMCG_TASK_RUNNING | UMCG_TF_PREEMPT,
	UMCG_TASK_RUNNABLE | UMCG_TF_COND_WAIT,
};

static const clockid_t a_clocks[] = {
	CLOCK_MONOTONIC,
	CLOCK_REALTIME,
	CLOCK_BOOTTIME,
	CLOCK_TAI,
	-1,
	CLOCK_PROCESS_CPUTIME_ID,
	99,
	CLOCK_MONOTONIC_RAW,
};

static bool clock_ok(clockid_t c)
{
	return c == CLOCK_MONOTONIC || c == CLOCK_REALTIME || c == CLOCK_BOOTTIME || c == CLOCK_TAI;
}

static uint32_t a_tid_value(struct fz_in *in)
{
	switch (fz_u8(in) % 8) {
	case 0:
		return 0;
	case 1:
		return (uint32_t)A.tid;
	case 2:
		return (uint32_t)getpid() == (uint32_t)A.tid ? 1 : (uint32_t)getpid();
	case 3:
		return 0xffffffffU;
	case 4:
		return 0x7fffffffU;
	case 5:
		return 1;
	default:
		return fz_u32(in);
	}
}

static struct umcg_task *a_task_ptr(struct fz_in *in)
{
	uint8_t b = fz_u8(in);

	switch (b % 8) {
	case 0:
		return NULL;
	case 1:
		return (struct umcg_task *)(void *)(A.mis + 1 + (b >> 3) % (UMCG_TASK_ALIGN - 1));
	default:
		return &A.t[b % A_TASKS];
	}
}

static void a_dump(void)
{
	int i;

	for (i = 0; i < A_TASKS; i++)
		fprintf(stderr, "  A.t[%d]: state %#x next %u server %u%s\n", i, A.t[i].state,
			A.t[i].next_tid, A.t[i].server_tid, A.reg == i ? " (registered)" : "");
}

/* Keep a registered task's state among the live ones (see a_live_states). */
static void a_keep_live(void)
{
	uint32_t s;
	size_t i;

	if (A.reg < 0)
		return;
	s = A.t[A.reg].state;
	for (i = 0; i < sizeof(a_live_states) / sizeof(a_live_states[0]); i++)
		if (s == a_live_states[i])
			return;
	A.t[A.reg].state = UMCG_TASK_RUNNING;
}

static void a_set_word(struct fz_in *in)
{
	uint8_t b = fz_u8(in);
	struct umcg_task *t = &A.t[b % A_TASKS];

	switch ((b >> 2) % 8) {
	case 0:
	case 1:
		t->state = a_states[fz_u8(in) % (sizeof(a_states) / sizeof(a_states[0]))];
		break;
	case 2:
		t->state = fz_u32(in);
		break;
	case 3:
		t->next_tid = a_tid_value(in);
		break;
	case 4:
		t->server_tid = a_tid_value(in);
		break;
	case 5:
		t->__hole[0] = fz_u8(in) & 1 ? fz_u32(in) : 0;
		break;
	case 6:
		t->__zero[fz_u8(in) % 3] = fz_u8(in) & 1 ? fz_u32(in) : 0;
		break;
	default:
		/* A well-formed server or worker word. */
		memset(t, 0, sizeof(*t));
		t->state = b & 0x80 ? UMCG_TASK_BLOCKED : UMCG_TASK_RUNNING;
		t->server_tid = (uint32_t)A.tid;
		break;
	}
	a_keep_live();
}

/* The documented result of umcg_ctl() for this thread, in the header's
 * order. *@either is set where the header leaves two answers open. */
static int a_ctl_model(uint32_t flags, struct umcg_task *self, clockid_t clk, bool *either)
{
	const uint32_t known = UMCG_CTL_REGISTER | UMCG_CTL_UNREGISTER | UMCG_CTL_WORKER;
	bool worker = flags & UMCG_CTL_WORKER;

	*either = false;
	if ((uintptr_t)self & (UMCG_TASK_ALIGN - 1))
		return -EINVAL;
	if (flags & ~known)
		return -EINVAL;
	if (flags & UMCG_CTL_UNREGISTER) {
		/* REGISTER|UNREGISTER, UNREGISTER|WORKER: "unknown flags" or
		 * not; the header does not say. */
		if (flags != UMCG_CTL_UNREGISTER)
			*either = true;
		else
			return self || A.reg < 0 ? -EINVAL : 0;
	}
	if (!(flags & UMCG_CTL_REGISTER))
		return -EINVAL;
	if (!clock_ok(clk))
		return -EINVAL;
	if (A.reg >= 0 || !self)
		return -EINVAL;
	if (self->next_tid || self->__hole[0] || self->__zero[0] || self->__zero[1] ||
	    self->__zero[2])
		return -EINVAL;
	/* No server but this thread can be registered here, and it is not. */
	if (worker || self->server_tid != (uint32_t)A.tid)
		return -ESRCH;
	if ((self->state & (UMCG_TASK_MASK | UMCG_TF_MASK)) != UMCG_TASK_RUNNING)
		return -EINVAL;
	return 0;
}

static void a_ctl(struct fz_in *in)
{
	static const uint32_t flag_set[] = {
		UMCG_CTL_REGISTER,
		UMCG_CTL_REGISTER | UMCG_CTL_WORKER,
		UMCG_CTL_UNREGISTER,
		0,
		UMCG_CTL_REGISTER | UMCG_CTL_UNREGISTER,
		UMCG_CTL_UNREGISTER | UMCG_CTL_WORKER,
		UMCG_CTL_WORKER,
		0x4,
	};
	uint8_t b = fz_u8(in);
	uint32_t flags = b & 0x80 ? fz_u32(in) : flag_set[b % 8];
	struct umcg_task *self = a_task_ptr(in);
	clockid_t clk = a_clocks[fz_u8(in) % 8];
	struct umcg_task before;
	bool either;
	int expect, ret;

	if ((b >> 3) % 4 == 0 && (flags & UMCG_CTL_UNREGISTER))
		self = NULL; /* the one good way to unregister */
	expect = a_ctl_model(flags, self, clk, &either);
	if (self && !((uintptr_t)self & (UMCG_TASK_ALIGN - 1)))
		before = *self;
	FZ_CALL(ret, umcg_ctl(flags, self, clk), expect, either ? -EINVAL : expect,
		either ? 0 : expect);
	if (ret == 0) {
		if (flags & UMCG_CTL_REGISTER) {
			FZ_CHECK(self && A.reg < 0, "registered twice");
			A.reg = (int)(self - A.t);
			A.clock = clk;
		} else {
			A.reg = -1;
		}
	} else if (self && !((uintptr_t)self & (UMCG_TASK_ALIGN - 1))) {
		FZ_CHECK(!memcmp(&before, self, sizeof(before)),
			 "failed umcg_ctl(%#x) changed the task word", flags);
	}
}

static void a_wait(struct fz_in *in)
{
	uint8_t b = fz_u8(in);
	uint32_t flags = b & 1 ? (b & 2 ? fz_u32(in) : 1) : 0;
	uint64_t timeout;
	struct umcg_task *t = A.reg >= 0 ? &A.t[A.reg] : NULL;
	struct umcg_task before;
	bool sleeps;
	int ret;

	switch ((b >> 2) % 4) {
	case 0:
		timeout = 0;
		break;
	case 1:
		timeout = 1;
		break;
	case 2:
		timeout = UINT64_MAX;
		break;
	default:
		timeout = fz_now(A.reg >= 0 ? A.clock : CLOCK_MONOTONIC) + (b >> 4) * 20000ull;
		break;
	}
	/* A registered server that is RUNNABLE sleeps until someone sets it
	 * RUNNING; here nobody will, so it gets a near deadline. */
	sleeps = t && (t->state & UMCG_TASK_MASK) == UMCG_TASK_RUNNABLE;
	if (sleeps && (timeout == 0 || timeout == UINT64_MAX))
		timeout = fz_now(A.clock) + 100000;
	if (t)
		before = *t;
	if (!t || flags) {
		FZ_CALL(ret, umcg_wait(flags, timeout), -EINVAL);
	} else if (!sleeps) {
		FZ_CALL(ret, umcg_wait(flags, timeout), -EAGAIN, -ESRCH);
	} else {
		FZ_CALL(ret, umcg_wait(flags, timeout), 0, -EAGAIN, -ESRCH, -ETIMEDOUT);
	}
	if (ret == -EINVAL || ret == -ESRCH || (t && !sleeps))
		FZ_CHECK(!t || !memcmp(&before, t, sizeof(before)),
			 "umcg_wait() returned %d and changed the task word (%#x -> %#x)", ret,
			 before.state, t->state);
	if (t && (ret == -ETIMEDOUT || ret == 0))
		FZ_CHECK((t->state & UMCG_TASK_MASK) == UMCG_TASK_RUNNING,
			 "umcg_wait() returned %d, state %#x", ret, t->state);
	if (t && ret == 0)
		FZ_CHECK(before.next_tid == (uint32_t)A.tid,
			 "umcg_wait() returned 0 though nobody could wake the server");
	a_keep_live();
}

static void a_kick_preempt(struct fz_in *in)
{
	uint8_t b = fz_u8(in);
	pid_t tid = (pid_t)a_tid_value(in);
	uint32_t flags = b & 2 ? (b & 4 ? fz_u32(in) : 1) : 0;
	struct umcg_task *t;
	bool self = A.reg >= 0 && tid == A.tid;
	int ret;

	if (b & 1) {
		if (!self)
			FZ_CALL(ret, umcg_kick(flags, tid), -ESRCH);
		else if (flags)
			FZ_CALL(ret, umcg_kick(flags, tid), -EINVAL);
		else
			FZ_CALL(ret, umcg_kick(flags, tid), 0);
		return;
	}
	t = a_task_ptr(in);
	if (!t || ((uintptr_t)t & (UMCG_TASK_ALIGN - 1)))
		FZ_CALL(ret, umcg_preempt(t, tid), -EINVAL);
	else if (!self)
		FZ_CALL(ret, umcg_preempt(t, tid), -ESRCH);
	else if ((t->state & UMCG_TASK_MASK) != UMCG_TASK_RUNNING)
		FZ_CALL(ret, umcg_preempt(t, tid), -EAGAIN);
	else
		FZ_CALL(ret, umcg_preempt(t, tid), 0);
	/* A server ignores TF_PREEMPT; drop it from words it may sleep on. */
	a_keep_live();
}

static void a_block(struct fz_in *in)
{
	int ret;

	/* This thread is never a worker. */
	if (fz_u8(in) & 1)
		FZ_CALL(ret, umcg_block_begin(), -EINVAL);
	else
		FZ_CALL(ret, umcg_block_end(), -EINVAL);
}

/* Build a list of @n elements in an order and with timestamps from the
 * input, take it off a fake server word, count it, sort it, check it. */
static void a_list(struct fz_in *in)
{
	struct umcg_task *order[A_LIST], *got, *pos, *tmp, *prev;
	unsigned int n = fz_u8(in) % (A_LIST + 1), i, j, k;
	size_t cnt;
	int seen[A_LIST];

	for (i = 0; i < n; i++)
		order[i] = &A.list[i];
	for (i = n; i > 1; i--) {
		struct umcg_task *x;

		j = fz_u8(in) % i;
		x = order[i - 1];
		order[i - 1] = order[j];
		order[j] = x;
	}
	for (i = 0; i < n; i++) {
		order[i]->runnable_ts = fz_u8(in) % 4; /* ties on purpose */
		order[i]->runnable_workers_ptr = i + 1 < n ? (uint64_t)(uintptr_t)order[i + 1] : 0;
	}
	A.head.runnable_workers_ptr = n ? (uint64_t)(uintptr_t)order[0] : 0;
	got = umcg_runnable_take(&A.head);
	FZ_CHECK(got == (n ? order[0] : NULL), "umcg_runnable_take returned the wrong head");
	FZ_CHECK(A.head.runnable_workers_ptr == 0, "umcg_runnable_take left the list");
	FZ_CHECK(umcg_runnable_take(&A.head) == NULL, "second take not empty");
	FZ_CHECK(umcg_runnable_take(NULL) == NULL, "take(NULL)");
	cnt = umcg_runnable_count(got);
	FZ_CHECK(cnt == n, "umcg_runnable_count %zu, want %u", cnt, n);
	got = umcg_runnable_sort_oldest(got);
	memset(seen, 0, sizeof(seen));
	prev = NULL;
	k = 0;
	umcg_runnable_for_each(pos, tmp, got) {
		FZ_CHECK(k < n, "sorted list longer than %u", n);
		i = (unsigned int)(pos - A.list);
		FZ_CHECK(i < A_LIST && !seen[i], "sorted list has a stranger or a duplicate");
		seen[i] = 1;
		if (prev) {
			FZ_CHECK(prev->runnable_ts <= pos->runnable_ts, "sort: not ascending");
			if (prev->runnable_ts == pos->runnable_ts) {
				/* Equal stamps: push order, the reverse of the list's. */
				unsigned int pi = 0, qi = 0;

				for (j = 0; j < n; j++) {
					if (order[j] == prev)
						pi = j;
					if (order[j] == pos)
						qi = j;
				}
				FZ_CHECK(pi > qi, "sort: not stable for equal timestamps");
			}
		}
		prev = pos;
		k++;
	}
	FZ_CHECK(k == n, "sorted list has %u elements, want %u", k, n);
	FZ_CHECK(umcg_runnable_count(NULL) == 0, "count(NULL)");
	FZ_CHECK(umcg_runnable_sort_oldest(NULL) == NULL, "sort(NULL)");
}

static void a_misc(struct fz_in *in)
{
	int b = (int)fz_u32(in), ret;

	FZ_CHECK(umcg_backend_name(b) != NULL, "umcg_backend_name(%d) is NULL", b);
	FZ_CHECK(umcg_backend_reason() != NULL, "umcg_backend_reason() is NULL");
	FZ_CHECK(umcg_version() != NULL, "umcg_version() is NULL");
	FZ_CALL(ret, umcg_backend_active(), UMCG_BACKEND_KERNEL, UMCG_BACKEND_EMULATED);
	ret = umcg_kick_signal();
	FZ_CHECK(ret >= 0, "umcg_kick_signal() %d", ret);
}

static void scenario_garbage(struct fz_in *in)
{
	unsigned int n = fz_u8(in) % FZ_MAX_OPS + 1, i;
	int ret;

	memset(&A, 0, sizeof(A));
	A.reg = -1;
	A.tid = fz_gettid();
	watch("A (garbage)", a_dump);
	for (i = 0; i < n && in->n; i++) {
		switch (fz_u8(in) % 8) {
		case 0:
		case 1:
			a_set_word(in);
			break;
		case 2:
			a_ctl(in);
			break;
		case 3:
			a_wait(in);
			break;
		case 4:
			a_kick_preempt(in);
			break;
		case 5:
			a_block(in);
			break;
		case 6:
			a_list(in);
			break;
		default:
			a_misc(in);
			break;
		}
	}
	if (A.reg >= 0) {
		FZ_CALL(ret, umcg_ctl(UMCG_CTL_UNREGISTER, NULL, 0), 0);
		A.reg = -1;
	}
	unwatch();
}

/* ======================================================================== *
 * B. Raw ABI servers and workers
 * ======================================================================== */

#define B_SERVERS 2
#define B_WORKERS 4

struct b_worker {
	struct umcg_task task; /* first: 64-byte aligned, worker_of() */
	int idx, srv;
	pid_t tid; /* atomic: written before registering */
	int done; /* atomic: unregistered, gone from the protocol */
	int queued; /* its server only */
	struct b_worker *qnext; /* its server only */
	unsigned int nops;
	uint8_t ops[FZ_MAX_OPS];
	pthread_t th;
} __attribute__((aligned(UMCG_TASK_ALIGN)));

struct b_server {
	struct umcg_task task;
	int idx;
	pid_t tid; /* atomic */
	int up; /* atomic: registered */
	uint64_t slice_ns; /* 0: cooperative */
	struct b_worker *head, *tail, *current;
	unsigned long switches, preempts; /* server only */
	pthread_t th;
} __attribute__((aligned(UMCG_TASK_ALIGN)));

static struct b_state {
	struct b_server s[B_SERVERS];
	struct b_worker w[B_WORKERS];
	int nservers, nworkers;
	int nregistered; /* atomic */
} B;

static void b_dump(void)
{
	int i;

	for (i = 0; i < B.nservers; i++)
		fprintf(stderr, "  server %d tid %d: state %#x list %#llx current %d\n", i,
			ld(&B.s[i].tid), ld(&B.s[i].task.state),
			(unsigned long long)ld(&B.s[i].task.runnable_workers_ptr),
			B.s[i].current ? B.s[i].current->idx : -1);
	for (i = 0; i < B.nworkers; i++)
		fprintf(stderr, "  worker %d tid %d of server %d: state %#x done %d\n", i,
			ld(&B.w[i].tid), B.w[i].srv, ld(&B.w[i].task.state), ld(&B.w[i].done));
}

static struct b_worker *b_worker_of(struct umcg_task *t)
{
	uintptr_t p = (uintptr_t)t, lo = (uintptr_t)&B.w[0], hi = (uintptr_t)&B.w[B_WORKERS];

	FZ_CHECK(p >= lo && p < hi && (p - lo) % sizeof(B.w[0]) == 0,
		 "a runnable list holds %p, not a worker of this scenario", (void *)t);
	return (struct b_worker *)t;
}

static bool b_running(struct b_worker *w)
{
	return (ld(&w->task.state) & UMCG_TASK_MASK) == UMCG_TASK_RUNNING;
}

static void b_take(struct b_server *s)
{
	struct umcg_task *list, *pos, *tmp;
	struct b_worker *w;

	list = umcg_runnable_take(&s->task);
	umcg_runnable_for_each(pos, tmp, list) {
		w = b_worker_of(pos);
		FZ_CHECK(w->srv == s->idx, "worker %d (of server %d) on server %d's list", w->idx,
			 w->srv, s->idx);
		FZ_CHECK(!w->queued, "worker %d pushed twice (already queued)", w->idx);
		FZ_CHECK(!ld(&w->done), "worker %d pushed after it unregistered", w->idx);
		FZ_CHECK((ld(&w->task.state) & UMCG_TASK_MASK) == UMCG_TASK_RUNNABLE,
			 "worker %d on a list in state %#x", w->idx, ld(&w->task.state));
		if (w == s->current)
			s->current = NULL;
		w->queued = 1;
		w->qnext = NULL;
		if (s->tail)
			s->tail->qnext = w;
		else
			s->head = w;
		s->tail = w;
	}
}

static void b_check_one_running(struct b_server *s)
{
	int i, n = 0;

	for (i = 0; i < B.nworkers; i++) {
		struct b_worker *w = &B.w[i];

		if (w->srv != s->idx || ld(&w->done) || !b_running(w))
			continue;
		n++;
		FZ_CHECK(w == s->current, "worker %d RUNNING but server %d ran %d", w->idx, s->idx,
			 s->current ? s->current->idx : -1);
	}
	FZ_CHECK(n <= 1, "%d workers of server %d RUNNING", n, s->idx);
}

static bool b_all_done(struct b_server *s)
{
	int i;

	for (i = 0; i < B.nworkers; i++)
		if (B.w[i].srv == s->idx && !ld(&B.w[i].done))
			return false;
	return true;
}

static void *b_server_main(void *arg)
{
	struct b_server *s = arg;
	struct b_worker *picked;
	uint64_t slice_end = 0, deadline, now;
	int ret;

	st(&s->tid, fz_gettid());
	s->task.state = UMCG_TASK_RUNNING;
	s->task.server_tid = (uint32_t)s->tid;
	FZ_CALL(ret, umcg_ctl(UMCG_CTL_REGISTER, &s->task, CLOCK_MONOTONIC), 0);
	st(&s->up, 1);
	for (;;) {
		/* Section 7: the seq_cst store pairs with the pushers' CAS on
		 * our state, and with finishing workers' done store + CAS. */
		st(&s->task.state, UMCG_TASK_RUNNABLE | UMCG_TF_COND_WAIT);
		b_take(s);
		if (s->current && (ld(&s->current->done) || !b_running(s->current)))
			s->current = NULL;
		b_check_one_running(s);
		if (b_all_done(s))
			break;
		now = fz_now(CLOCK_MONOTONIC);
		picked = NULL;
		if (!s->current && s->head) {
			picked = s->head;
			s->head = picked->qnext;
			if (!s->head)
				s->tail = NULL;
			s->task.next_tid = (uint32_t)ld(&picked->tid);
		}
		deadline = 0;
		if (s->slice_ns && (s->current || picked))
			deadline = (s->current ? slice_end : now + s->slice_ns);
		FZ_CALL(ret, umcg_wait(0, deadline), 0, -EAGAIN, -ETIMEDOUT);
		FZ_CHECK(ret != -ETIMEDOUT || deadline, "umcg_wait without deadline timed out");
		now = fz_now(CLOCK_MONOTONIC);
		if (picked) {
			if (s->task.next_tid == 0) {
				picked->queued = 0;
				s->current = picked;
				s->switches++;
				slice_end = now + s->slice_ns;
			} else {
				/* Not used: still RUNNABLE and ours; first again. */
				s->task.next_tid = 0;
				picked->qnext = s->head;
				s->head = picked;
				if (!s->tail)
					s->tail = picked;
			}
		}
		if (s->slice_ns && s->current && now >= slice_end) {
			FZ_CALL(ret, umcg_preempt(&s->current->task, ld(&s->current->tid)), 0,
				-EAGAIN, -ESRCH);
			s->preempts += ret == 0;
			slice_end = now + s->slice_ns;
		}
	}
	FZ_CALL(ret, umcg_ctl(UMCG_CTL_UNREGISTER, NULL, 0), 0);
	return NULL;
}

static pid_t b_some_tid(struct b_worker *self, uint8_t arg)
{
	switch (arg % 7) {
	case 0:
		return ld(&B.s[self->srv].tid);
	case 1:
		return self->tid;
	case 2:
		return ld(&B.w[arg % B.nworkers].tid);
	case 3:
		return ld(&B.s[(self->srv + 1) % B.nservers].tid);
	case 4:
		return getpid(); /* the main thread: no UMCG task */
	case 5:
		return 0;
	default:
		return -1;
	}
}

static void b_worker_op(struct b_worker *w, uint8_t b)
{
	uint8_t arg = b >> 3;
	struct umcg_task other;
	struct b_worker *o;
	pid_t tid;
	int ret;

	switch (b & 7) {
	case 0: /* yield: section 6 */
		st(&w->task.state, UMCG_TASK_RUNNABLE | UMCG_TF_COND_WAIT);
		FZ_CALL(ret, umcg_wait(0, 0), 0);
		break;
	case 1: /* an announced sleep */
		FZ_CALL(ret, umcg_block_begin(), 0);
		if (arg & 1)
			fz_nap_ns(arg * 5000ull);
		else
			sched_yield();
		FZ_CALL(ret, umcg_block_end(), 0);
		break;
	case 2:
		fz_spin_ns(arg * 3000ull);
		break;
	case 3: /* a worker may not pass a timeout, nor flags */
		if (arg & 1)
			FZ_CALL(ret, umcg_wait(arg, 0), -EINVAL);
		else
			FZ_CALL(ret, umcg_wait(0, 1 + arg), -ERANGE);
		FZ_CHECK(b_running(w), "failed umcg_wait left state %#x", ld(&w->task.state));
		break;
	case 4: /* registration calls that must fail and change nothing */
		memset(&other, 0, sizeof(other));
		other.state = UMCG_TASK_BLOCKED;
		other.server_tid = (uint32_t)ld(&B.s[w->srv].tid);
		switch (arg % 4) {
		case 0:
			FZ_CALL(ret,
				umcg_ctl(UMCG_CTL_REGISTER | UMCG_CTL_WORKER, &other,
					 CLOCK_MONOTONIC),
				-EINVAL);
			break;
		case 1:
			FZ_CALL(ret, umcg_ctl(UMCG_CTL_UNREGISTER, &other, 0), -EINVAL);
			break;
		case 2:
			FZ_CALL(ret, umcg_ctl(UMCG_CTL_REGISTER, &w->task, CLOCK_MONOTONIC),
				-EINVAL);
			break;
		default:
			FZ_CALL(ret, umcg_ctl(0x8, NULL, CLOCK_MONOTONIC), -EINVAL);
			break;
		}
		FZ_CHECK(other.state == UMCG_TASK_BLOCKED && !other.runnable_workers_ptr,
			 "failed umcg_ctl changed its task");
		FZ_CHECK(b_running(w), "failed umcg_ctl left state %#x", ld(&w->task.state));
		break;
	case 5: /* kicks of anyone: nothing visible unless TF_PREEMPT is set */
		tid = b_some_tid(w, arg);
		if (arg & 0x10)
			FZ_CALL(ret, umcg_kick(1, tid), -EINVAL, -ESRCH);
		else
			FZ_CALL(ret, umcg_kick(0, tid), 0, -ESRCH);
		break;
	case 6: /* preempt ourselves (a yield by kick) or another worker */
		o = arg & 1 ? w : &B.w[(arg >> 1) % B.nworkers];
		FZ_CALL(ret, umcg_preempt(&o->task, ld(&o->tid)), 0, -EAGAIN, -ESRCH);
		FZ_CHECK(o != w || ret == 0, "self-preemption returned %d", ret);
		break;
	default: /* the blocking hooks out of order */
		if (arg & 1) {
			FZ_CALL(ret, umcg_block_end(), -EINVAL);
		} else {
			FZ_CALL(ret, umcg_block_begin(), 0);
			FZ_CALL(ret, umcg_block_begin(), -EINVAL);
			FZ_CALL(ret, umcg_block_end(), 0);
		}
		break;
	}
}

static void *b_worker_main(void *arg)
{
	struct b_worker *w = arg;
	struct b_server *s = &B.s[w->srv];
	uint32_t ss;
	unsigned int i;
	int ret;

	st(&w->tid, fz_gettid());
	/* Returns once our server has run us. */
	FZ_CALL(ret, umcg_ctl(UMCG_CTL_REGISTER | UMCG_CTL_WORKER, &w->task, CLOCK_MONOTONIC), 0);
	atomic_fetch_add_explicit(h_atomic(&B.nregistered), 1, memory_order_seq_cst);
	for (i = 0; i < w->nops; i++)
		b_worker_op(w, w->ops[i]);
	/* Leave: the exit protocol of examples/raw_scheduler.c. */
	FZ_CALL(ret, umcg_ctl(UMCG_CTL_UNREGISTER, NULL, 0), 0);
	/* Pairs with the server's seq_cst state store and done load. */
	st(&w->done, 1);
	ss = ld(&s->task.state);
	while ((ss & UMCG_TASK_MASK) == UMCG_TASK_RUNNABLE &&
	       !atomic_compare_exchange_strong(h_atomic(&s->task.state), &ss,
					       (ss & ~(UMCG_TASK_MASK | UMCG_TF_MASK)) |
						       UMCG_TASK_RUNNING))
		;
	FZ_CALL(ret, umcg_kick(0, s->tid), 0, -ESRCH);
	return NULL;
}

static void scenario_raw(struct fz_in *in)
{
	static const uint64_t slices[] = { 0, 0, 100000, 500000, 2000000, 50000 };
	uint8_t cfg = fz_u8(in);
	unsigned int i, j, nmain;
	int ret;

	memset(&B, 0, sizeof(B));
	B.nservers = 1 + (cfg & 1);
	B.nworkers = 1 + (cfg >> 1) % B_WORKERS;
	nmain = (cfg >> 3) % 8;
	watch("B (raw ABI)", b_dump);
	for (i = 0; i < (unsigned int)B.nservers; i++) {
		B.s[i].idx = (int)i;
		B.s[i].slice_ns = slices[fz_u8(in) % 6];
	}
	for (i = 0; i < (unsigned int)B.nworkers; i++) {
		struct b_worker *w = &B.w[i];

		w->idx = (int)i;
		w->srv = (int)(fz_u8(in) % (unsigned int)B.nservers);
		w->nops = fz_u8(in) % (FZ_MAX_OPS / 2 + 1);
		for (j = 0; j < w->nops; j++)
			w->ops[j] = fz_u8(in);
		w->task.state = UMCG_TASK_BLOCKED;
	}
	for (i = 0; i < (unsigned int)B.nservers; i++)
		B.s[i].th = fz_thread(b_server_main, &B.s[i]);
	for (i = 0; i < (unsigned int)B.nservers; i++)
		while (!ld(&B.s[i].up))
			fz_nap_ns(10000);
	for (i = 0; i < (unsigned int)B.nworkers; i++) {
		B.w[i].task.server_tid = (uint32_t)ld(&B.s[B.w[i].srv].tid);
		B.w[i].th = fz_thread(b_worker_main, &B.w[i]);
	}
	/* Meanwhile, from a thread that is no UMCG task. */
	for (i = 0; i < nmain; i++) {
		uint8_t b = fz_u8(in);
		struct b_worker *w = &B.w[(b >> 2) % (unsigned int)B.nworkers];

		switch (b & 3) {
		case 0:
			FZ_CALL(ret, umcg_kick(0, ld(&w->tid)), 0, -ESRCH);
			break;
		case 1:
			FZ_CALL(ret, umcg_preempt(&w->task, ld(&w->tid)), 0, -EAGAIN, -ESRCH);
			break;
		case 2:
			FZ_CALL(ret, umcg_kick(0, ld(&B.s[(b >> 2) % B.nservers].tid)), 0, -ESRCH);
			break;
		default:
			fz_nap_ns((b >> 2) * 2000ull);
			break;
		}
	}
	for (i = 0; i < (unsigned int)B.nworkers; i++)
		pthread_join(B.w[i].th, NULL);
	for (i = 0; i < (unsigned int)B.nservers; i++)
		pthread_join(B.s[i].th, NULL);
	unwatch();
}

/* ======================================================================== *
 * C. The runtime
 * ======================================================================== */

#define C_WORKERS 4
#define C_CHILDREN 8

struct c_worker {
	struct umcg_worker *h; /* atomic: published after spawn */
	int idx;
	bool child;
	bool use_exit;
	unsigned int nops;
	uint8_t ops[FZ_MAX_OPS];
	int started; /* atomic */
	int script_done; /* atomic */
};

static struct c_state {
	struct umcg_rt *rt;
	unsigned int nr_servers;
	struct c_worker w[C_WORKERS];
	struct c_worker kids[C_CHILDREN];
	int nworkers;
	int nkids; /* atomic: slots of kids[] handed out */
	int stop; /* atomic: no more parks, unparks, spawns */
	const char *step; /* atomic: what the main thread is doing */
} C;

static void c_dump(void)
{
	struct umcg_server_stats ss;
	unsigned int i;

	fprintf(stderr, "  runtime %p, %u servers, stop %d, main thread in %s\n", (void *)C.rt,
		C.nr_servers, ld(&C.stop), ld(&C.step) ? ld(&C.step) : "?");
	for (i = 0; i < (unsigned int)C.nworkers; i++)
		fprintf(stderr, "  worker %u: handle %p started %d script done %d\n", i,
			(void *)ld(&C.w[i].h), ld(&C.w[i].started), ld(&C.w[i].script_done));
	for (i = 0; C.rt && i < C.nr_servers; i++)
		if (!umcg_rt_server_stats(C.rt, i, &ss))
			fprintf(stderr,
				"  server %u: switches %llu idle wakeups %llu missed %llu\n", i,
				(unsigned long long)ss.switches,
				(unsigned long long)ss.idle_wakeups,
				(unsigned long long)ss.missed_wakeups);
}

static void *c_worker_fn(void *arg);

static void c_attr(struct umcg_worker_attr *a, uint8_t b, bool *valid)
{
	umcg_worker_attr_init(a);
	*valid = true;
	switch (b % 8) {
	case 0:
		a->priority = (b >> 3) % 32;
		break;
	case 1:
		a->server = (int)((b >> 3) % 4) - 1; /* -1, 0, 1, 2 */
		*valid = a->server < (int)C.nr_servers;
		break;
	case 2:
		a->stack_size = 64 * 1024;
		break;
	case 3:
		a->name = "fuzz-worker-with-a-long-name";
		a->deadline = b;
		break;
	case 4:
		a->priority = b & 8 ? 32 : -1;
		*valid = false;
		break;
	case 5:
		a->stack_size = b & 8 ? 1 : 0;
		*valid = !(b & 8);
		break;
	default:
		break;
	}
}

static void c_spawn_child(struct c_worker *self, uint8_t b)
{
	struct umcg_worker_attr a;
	struct c_worker *k;
	bool valid;
	int slot, ret;

	if (ld(&C.stop))
		return;
	slot = atomic_fetch_add_explicit(h_atomic(&C.nkids), 1, memory_order_seq_cst);
	if (slot >= C_CHILDREN)
		return;
	k = &C.kids[slot];
	k->idx = slot;
	k->child = true;
	k->nops = (b >> 3) % 4;
	for (unsigned int i = 0; i < k->nops; i++)
		k->ops[i] = self->ops[(i + b) % FZ_MAX_OPS];
	c_attr(&a, b, &valid);
	if (valid)
		FZ_CALL(ret, umcg_spawn(C.rt, NULL, &a, c_worker_fn, k), 0, -EAGAIN, -ENOMEM);
	else
		FZ_CALL(ret, umcg_spawn(C.rt, NULL, &a, c_worker_fn, k), -EINVAL);
}

static void c_worker_op(struct c_worker *w, uint8_t b)
{
	uint8_t arg = b / 10;
	struct umcg_worker *me = umcg_self(), *o;
	struct umcg_worker_stats ws;
	int ret;

	switch (b % 10) {
	case 0:
		FZ_CALL(ret, umcg_yield(), 0);
		break;
	case 1:
		if (!w->child && !ld(&C.stop))
			FZ_CALL(ret, umcg_park(), 0);
		break;
	case 2:
		if (w->child || ld(&C.stop))
			break;
		o = ld(&C.w[arg % (unsigned int)C.nworkers].h);
		if (o)
			FZ_CALL(ret, umcg_unpark(o), 0);
		break;
	case 3:
		if (arg & 1)
			FZ_CALL(ret, umcg_sleep_for(arg * 10000ull), 0);
		else
			FZ_CALL(ret, umcg_sleep_until(arg ? umcg_now() + arg * 5000ull : 1), 0);
		break;
	case 4:
		if (!w->child)
			c_spawn_child(w, b);
		break;
	case 5:
		FZ_CALL(ret, umcg_block_begin(), 0);
		fz_nap_ns(arg * 2000ull);
		FZ_CALL(ret, umcg_block_end(), 0);
		break;
	case 6: /* calls a worker may not make */
		switch (arg % 8) {
		case 0:
			FZ_CALL(ret, umcg_join(me, NULL), -EDEADLK, -EINVAL);
			break;
		case 1:
			FZ_CALL(ret, umcg_rt_stop(C.rt), -EDEADLK);
			break;
		case 2:
			FZ_CALL(ret, umcg_rt_drain(C.rt), -EDEADLK);
			break;
		case 3:
			FZ_CALL(ret, umcg_rt_destroy(C.rt), -EDEADLK);
			break;
		case 4:
			FZ_CALL(ret, umcg_rt_start(C.rt), -EDEADLK, -EBUSY);
			break;
		case 5:
			FZ_CALL(ret, umcg_join(NULL, NULL), -EINVAL);
			break;
		case 6:
			FZ_CALL(ret, umcg_detach(NULL), -EINVAL);
			break;
		default:
			FZ_CALL(ret, umcg_unpark(NULL), -EINVAL);
			break;
		}
		break;
	case 7:
		fz_spin_ns(arg * 2000ull);
		break;
	case 8:
		FZ_CHECK(me != NULL, "umcg_self() is NULL in a worker");
		FZ_CHECK(!ld(&w->h) || ld(&w->h) == me, "umcg_self() is not the spawned handle");
		FZ_CHECK(umcg_worker_tid(me) == fz_gettid(), "umcg_worker_tid() %d, gettid %d",
			 umcg_worker_tid(me), fz_gettid());
		FZ_CHECK(umcg_worker_name(me) != NULL, "umcg_worker_name() is NULL");
		FZ_CALL(ret, umcg_worker_stats(me, &ws), 0);
		FZ_CALL(ret, umcg_worker_stats(NULL, &ws), -EINVAL);
		FZ_CALL(ret, umcg_worker_set_deadline(arg), 0);
		FZ_CHECK(umcg_worker_deadline(me) == arg, "deadline not set");
		break;
	default: /* kick ourselves while RUNNING: nothing visible */
		FZ_CALL(ret, umcg_kick(0, fz_gettid()), 0, -ESRCH);
		break;
	}
}

static void *c_worker_fn(void *arg)
{
	struct c_worker *w = arg;
	unsigned int i;

	st(&w->started, 1);
	for (i = 0; i < w->nops; i++)
		c_worker_op(w, w->ops[i]);
	st(&w->script_done, 1);
	if (w->use_exit) {
		umcg_exit((void *)(uintptr_t)(0x1000 + w->idx));
		FZ_CHECK(0, "umcg_exit() returned in a worker");
	}
	return (void *)(uintptr_t)(0x1000 + w->idx);
}

static void c_main_op(uint8_t b)
{
	struct umcg_server_stats ss;
	struct umcg_worker *o;
	int ret;

	switch (b % 6) {
	case 0:
		o = ld(&C.w[(b >> 3) % (unsigned int)C.nworkers].h);
		if (o)
			FZ_CALL(ret, umcg_unpark(o), 0);
		break;
	case 1: /* worker calls from a plain thread */
		FZ_CALL(ret, umcg_yield(), -EPERM);
		FZ_CALL(ret, umcg_park(), -EPERM);
		FZ_CALL(ret, umcg_sleep_for(1), -EPERM);
		FZ_CALL(ret, umcg_exit(NULL), -EPERM);
		FZ_CALL(ret, umcg_worker_set_deadline(1), -EPERM);
		FZ_CHECK(umcg_self() == NULL, "umcg_self() in the main thread");
		break;
	case 2:
		FZ_CALL(ret, umcg_rt_server_stats(C.rt, (b >> 3) % (C.nr_servers + 1), &ss),
			(b >> 3) % (C.nr_servers + 1) < C.nr_servers ? 0 : -EINVAL);
		break;
	case 3:
		FZ_CALL(ret, umcg_rt_start(C.rt), -EBUSY);
		break;
	case 4: /* joinable workers are alive until joined */
		FZ_CALL(ret, umcg_rt_stop(C.rt), -EBUSY);
		break;
	default:
		fz_nap_ns((b >> 3) * 5000ull);
		break;
	}
}

static const struct umcg_policy_ops c_bad_policy = { .name = "no-callbacks" };

/* Runtimes with attributes from the input that are only created and
 * destroyed: bad values must give -EINVAL. */
static void c_create_only(struct fz_in *in)
{
	struct umcg_rt_attr a;
	struct umcg_rt *rt = NULL;
	uint8_t b = fz_u8(in);
	bool valid = true;
	int ret;

	umcg_rt_attr_init(&a);
	switch (b % 6) {
	case 0:
		a.nr_servers = 1025;
		valid = false;
		break;
	case 1:
		a.clock = a_clocks[(b >> 3) % 8];
		valid = clock_ok(a.clock);
		break;
	case 2:
		a.server_priority = b & 8 ? -1 : 100;
		valid = false;
		break;
	case 3:
		a.policy = &c_bad_policy;
		valid = false;
		break;
	case 4:
		a.timeslice_ns = b & 8 ? UINT64_MAX : fz_u32(in);
		break;
	default:
		FZ_CALL(ret, umcg_rt_create(NULL, &a), -EINVAL);
		return;
	}
	if (!valid) {
		FZ_CALL(ret, umcg_rt_create(&rt, &a), -EINVAL);
		return;
	}
	FZ_CALL(ret, umcg_rt_create(&rt, &a), 0, -EINVAL);
	if (ret == 0) {
		FZ_CALL(ret, umcg_spawn(rt, NULL, NULL, c_worker_fn, &C.w[0]), -ENODEV);
		FZ_CALL(ret, umcg_rt_drain(rt), 0);
		FZ_CALL(ret, umcg_rt_stop(rt), 0);
		FZ_CALL(ret, umcg_rt_destroy(rt), 0);
	}
}

static void scenario_runtime(struct fz_in *in)
{
	static const uint64_t slices[] = { 0, 0, 200000, 1000000, 5000000 };
	static const struct umcg_policy_ops *policies[] = { NULL, &umcg_policy_fifo,
							    &umcg_policy_priority };
	struct umcg_rt_attr ra;
	struct umcg_worker_attr wa;
	uint8_t cfg = fz_u8(in), cfg2 = fz_u8(in);
	unsigned int i, j, nmain;
	bool valid;
	void *rv;
	int ret;

	memset(&C, 0, sizeof(C));
	watch("C (runtime)", c_dump);
	st(&C.step, "bad attributes");
	for (i = 0; i < (cfg2 & 3u); i++)
		c_create_only(in);
	st(&C.step, "umcg_rt_create/_start");

	umcg_rt_attr_init(&ra);
	ra.nr_servers = 1 + (cfg & 1);
	ra.timeslice_ns = slices[(cfg >> 1) % 5];
	ra.policy = policies[(cfg >> 4) % 3];
	ra.pin_servers = cfg & 0x40;
	ra.clock = a_clocks[(cfg2 >> 2) % 4];
	C.nr_servers = ra.nr_servers;
	FZ_CALL(ret, umcg_rt_create(&C.rt, &ra), 0);
	FZ_CHECK(umcg_rt_nr_servers(C.rt) == C.nr_servers, "umcg_rt_nr_servers() %u",
		 umcg_rt_nr_servers(C.rt));
	FZ_CALL(ret, umcg_spawn(C.rt, NULL, NULL, c_worker_fn, &C.w[0]), -ENODEV);
	FZ_CALL(ret, umcg_rt_start(C.rt), 0, -EAGAIN);
	if (ret) {
		FZ_CALL(ret, umcg_rt_destroy(C.rt), 0);
		unwatch();
		return;
	}
	st(&C.step, "umcg_spawn");
	C.nworkers = 1 + (cfg2 >> 4) % C_WORKERS;
	for (i = 0; i < (unsigned int)C.nworkers; i++) {
		struct c_worker *w = &C.w[i];
		struct umcg_worker *h = NULL;
		uint8_t b = fz_u8(in);

		w->idx = (int)i;
		w->use_exit = b & 0x80;
		w->nops = fz_u8(in) % (FZ_MAX_OPS / 2 + 1);
		for (j = 0; j < w->nops; j++)
			w->ops[j] = fz_u8(in);
		c_attr(&wa, b, &valid);
		if (!valid) {
			FZ_CALL(ret, umcg_spawn(C.rt, &h, &wa, c_worker_fn, w), -EINVAL);
			umcg_worker_attr_init(&wa);
		}
		FZ_CALL(ret, umcg_spawn(C.rt, &h, &wa, c_worker_fn, w), 0);
		st(&w->h, h);
	}
	st(&C.step, "main-thread calls");
	nmain = fz_u8(in) % 8;
	for (i = 0; i < nmain; i++)
		c_main_op(fz_u8(in));

	/* The end: no more parks; one unpark each is enough (permits). */
	st(&C.step, "the final unparks, waiting for the scripts");
	st(&C.stop, 1);
	for (i = 0; i < (unsigned int)C.nworkers; i++)
		FZ_CALL(ret, umcg_unpark(C.w[i].h), 0);
	for (i = 0; i < (unsigned int)C.nworkers; i++)
		while (!ld(&C.w[i].script_done))
			fz_nap_ns(20000);
	st(&C.step, "umcg_join/_detach");
	for (i = 0; i < (unsigned int)C.nworkers; i++) {
		if (fz_u8(in) & 1) {
			FZ_CALL(ret, umcg_detach(C.w[i].h), 0);
			continue;
		}
		rv = NULL;
		FZ_CALL(ret, umcg_join(C.w[i].h, &rv), 0);
		FZ_CHECK(rv == (void *)(uintptr_t)(0x1000 + i), "worker %u: join reported %p", i,
			 rv);
	}
	st(&C.step, "umcg_rt_drain/_stop/_destroy");
	FZ_CALL(ret, umcg_rt_drain(C.rt), 0);
	if (cfg & 0x80)
		FZ_CALL(ret, umcg_rt_stop(C.rt), 0);
	FZ_CALL(ret, umcg_rt_destroy(C.rt), 0);
	C.rt = NULL;
	unwatch();
}

/* ---- entry point ---------------------------------------------------------- */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz_in in = { data, size };
	int i;

	for (i = 0; i < FZ_MAX_SECTIONS && in.n; i++) {
		switch (fz_u8(&in) % 4) {
		case 0:
		case 1:
			scenario_garbage(&in);
			break;
		case 2:
			scenario_raw(&in);
			break;
		default:
			scenario_runtime(&in);
			break;
		}
	}
	return 0;
}
