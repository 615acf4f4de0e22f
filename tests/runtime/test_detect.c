/* SPDX-License-Identifier: MIT */
/*
 * test_detect.c - the emulation's detection of blocking nobody announced
 * (umcg_detect_set(), doc/umcg-abi.md §11), on a runtime with one server so
 * that a worker that kept its server asleep would stop every other one.
 *
 * Each sleep here is unwrapped: a raw syscall(), a page fault served late
 * by userfaultfd, a stdio lock held by a plain thread. A case passes when
 * another worker of the same server ran while the sleeper slept, the sleep
 * lasted what it asked and returned its own result, and the server counted
 * the block in unannounced_blocks. One case checks the converse: workers
 * that never sleep in a call of their own, on loaded CPUs, are never made
 * BLOCKED (no_false_detection). No timing is asserted beyond "never
 * shorter than asked"; waits for progress are bounded by h_liveness_ns().
 * On the kernel backend the same cases pass (the kernel sees the blocks),
 * except that unannounced_blocks stays 0.
 */
#include "runtime.h"

#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>

#define SLEEP_MS 200

static atomic_ulong spins;
static atomic_ulong first_spin_ns; /* when the spinner first ran */
static atomic_int sleeping, stop;

static bool emulated_backend(void)
{
	return umcg_backend_active() == UMCG_BACKEND_EMULATED;
}

/*
 * A worker that counts until told to stop, yielding every 2^16 counts: the
 * spinner of a cooperative UMCG program. On the kernel a woken sleeper is
 * RUNNABLE until its server runs it, so a spinner that never yielded would
 * keep it from returning (it does not on the emulation only when the
 * sleeper gets back to the library before detection takes it back).
 */
static void *spinner(void *arg)
{
	unsigned long n;

	(void)arg;
	STORE(&first_spin_ns, h_now(CLOCK_MONOTONIC));
	while (!LOAD(&stop)) {
		n = BUMP(&spins);
		if ((n & 0xffff) == 0)
			EXPECT(umcg_yield() == 0, "umcg_yield");
	}
	return NULL;
}

/*
 * Did the spinner run while the sleeper slept? It was spawned once the
 * sleeper was asleep, so it did if it first ran before @end, the moment
 * the sleep returned.
 */
static bool spun_while_asleep(uint64_t end)
{
	uint64_t first = LOAD(&first_spin_ns);

	return first && first < end;
}

static void expect_unannounced(struct umcg_rt *rt)
{
	struct umcg_server_stats st;

	ck_assert_int_eq(umcg_rt_server_stats(rt, 0, &st), 0);
	if (emulated_backend())
		EXPECT(st.unannounced_blocks >= 1 && st.blocks >= st.unannounced_blocks,
		       "unannounced_blocks %" PRIu64 ", blocks %" PRIu64, st.unannounced_blocks,
		       st.blocks);
	else
		ck_assert_uint_eq(st.unannounced_blocks, 0);
}

/* ---- the API ---------------------------------------------------------- */

START_TEST(api_bounds)
{
	uint64_t was = umcg_detect_get();

	ck_assert_uint_eq(was, UMCG_DETECT_DEFAULT_NS);
	ck_assert_int_eq(umcg_detect_set(UMCG_DETECT_MIN_NS - 1), -EINVAL);
	ck_assert_int_eq(umcg_detect_set(UMCG_DETECT_MAX_NS + 1), -EINVAL);
	ck_assert_int_eq(umcg_detect_set(1), -EINVAL);
	ck_assert_uint_eq(umcg_detect_get(), was);
	errno = 1234;
	ck_assert_int_eq(umcg_detect_set(0), 0);
	ck_assert_uint_eq(umcg_detect_get(), 0);
	ck_assert_int_eq(umcg_detect_set(UMCG_DETECT_MIN_NS), 0);
	ck_assert_uint_eq(umcg_detect_get(), UMCG_DETECT_MIN_NS);
	ck_assert_int_eq(umcg_detect_set(UMCG_DETECT_MAX_NS), 0);
	ck_assert_int_eq(errno, 1234);
}
END_TEST

/* UMCG_DETECT_US, read once; each case runs in a fresh child. */
static const char *const env_values[] = { "500", "0", "abc", "50", "99999999999", "" };
/* Ignored values leave the default. */
static const uint64_t env_expect[] = { 500000,
				       0,
				       UMCG_DETECT_DEFAULT_NS,
				       UMCG_DETECT_DEFAULT_NS,
				       UMCG_DETECT_DEFAULT_NS,
				       UMCG_DETECT_DEFAULT_NS };

START_TEST(api_environment)
{
	ck_assert_int_eq(setenv("UMCG_DETECT_US", env_values[_i], 1), 0);
	ck_assert_uint_eq(umcg_detect_get(), env_expect[_i]);
}
END_TEST

/* ---- a raw system call ------------------------------------------------- */

static void *raw_sleeper(void *arg)
{
	struct timespec ts = { 0, SLEEP_MS * (long)MS };
	uint64_t t0 = h_now(CLOCK_MONOTONIC), t1;
	long r;

	(void)arg;
	STORE(&sleeping, 1);
	r = syscall(SYS_nanosleep, &ts, NULL);
	t1 = h_now(CLOCK_MONOTONIC);
	EXPECT(r == 0, "raw nanosleep returned %ld (errno %d)", r, errno);
	EXPECT(t1 - t0 >= SLEEP_MS * MS, "raw nanosleep ended early");
	return (void *)(uintptr_t)spun_while_asleep(t1);
}

/* Run @sleeper beside a spinner on one server (@slice: 0 cooperative). */
static void run_pair(void *(*sleeper)(void *), void *arg, uint64_t slice)
{
	struct umcg_rt *rt = rt_start(1, slice);
	struct umcg_worker *s = NULL, *w = NULL;
	void *spun = NULL;

	STORE(&stop, 0);
	STORE(&sleeping, 0);
	STORE(&first_spin_ns, 0);
	/* The sleeper first: it holds the server when the spinner arrives. */
	ck_assert_int_eq(umcg_spawn(rt, &w, NULL, sleeper, arg), 0);
	WAIT_UNTIL(LOAD(&sleeping));
	ck_assert_int_eq(umcg_spawn(rt, &s, NULL, spinner, NULL), 0);
	ck_assert_int_eq(umcg_join(w, &spun), 0);
	EXPECT(spun, "the spinner never ran while the sleeper slept");
	STORE(&stop, 1);
	ck_assert_int_eq(umcg_join(s, NULL), 0);
	expect_unannounced(rt);
	rt_end(rt);
}

START_TEST(raw_syscall_cooperative)
{
	run_pair(raw_sleeper, NULL, 0);
}
END_TEST

START_TEST(raw_syscall_preemptive)
{
	run_pair(raw_sleeper, NULL, MS);
}
END_TEST

/* ---- a page fault ------------------------------------------------------- */

struct uffd_case {
	int uffd;
	char *page;
	long size;
};

/* Serve the one fault, SLEEP_MS late. */
static void *uffd_server(void *arg)
{
	struct uffd_case *c = arg;
	struct uffd_msg msg;
	struct pollfd pfd = { c->uffd, POLLIN, 0 };
	static char src[65536] __attribute__((aligned(65536)));
	struct uffdio_copy copy;

	EXPECT(poll(&pfd, 1, -1) == 1, "poll on the userfaultfd");
	EXPECT(read(c->uffd, &msg, sizeof(msg)) == sizeof(msg), "read of the fault");
	h_sleep_us(SLEEP_MS * 1000);
	memset(src, 0x5a, (size_t)c->size);
	copy = (struct uffdio_copy){ .dst = (uintptr_t)c->page,
				     .src = (uintptr_t)src,
				     .len = (uint64_t)c->size };
	EXPECT(ioctl(c->uffd, UFFDIO_COPY, &copy) == 0, "UFFDIO_COPY: %s", strerror(errno));
	return NULL;
}

static void *fault_sleeper(void *arg)
{
	struct uffd_case *c = arg;
	uint64_t t0 = h_now(CLOCK_MONOTONIC), t1;
	char v;

	STORE(&sleeping, 1);
	v = *(volatile char *)c->page;
	t1 = h_now(CLOCK_MONOTONIC);
	EXPECT(v == 0x5a, "the faulted page holds %d", v);
	EXPECT(t1 - t0 >= SLEEP_MS * MS, "the fault was served early");
	return (void *)(uintptr_t)spun_while_asleep(t1);
}

START_TEST(page_fault)
{
	struct uffd_case c = { .size = sysconf(_SC_PAGESIZE) };
	struct uffdio_api api = { .api = UFFD_API };
	struct uffdio_register reg;
	pthread_t th;

	c.uffd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | UFFD_USER_MODE_ONLY);
	if (c.uffd < 0) {
		fprintf(stderr, "page_fault: userfaultfd: %s; skipped\n", strerror(errno));
		return;
	}
	ck_assert_int_eq(ioctl(c.uffd, UFFDIO_API, &api), 0);
	c.page = mmap(NULL, (size_t)c.size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
		      0);
	ck_assert_ptr_ne(c.page, MAP_FAILED);
	reg = (struct uffdio_register){ .range = { (uintptr_t)c.page, (uint64_t)c.size },
					.mode = UFFDIO_REGISTER_MODE_MISSING };
	ck_assert_int_eq(ioctl(c.uffd, UFFDIO_REGISTER, &reg), 0);
	ck_assert_int_eq(pthread_create(&th, NULL, uffd_server, &c), 0);
	run_pair(fault_sleeper, &c, 0);
	ck_assert_int_eq(pthread_join(th, NULL), 0);
	munmap(c.page, (size_t)c.size);
	close(c.uffd);
}
END_TEST

/* ---- a lock inside libc ------------------------------------------------ */

static FILE *devnull;
static atomic_int locked;

/* A plain thread holds the stream's lock for SLEEP_MS. */
static void *lock_holder(void *arg)
{
	(void)arg;
	flockfile(devnull);
	STORE(&locked, 1);
	h_sleep_us(SLEEP_MS * 1000);
	funlockfile(devnull);
	return NULL;
}

static void *stdio_sleeper(void *arg)
{
	int r;

	(void)arg;
	STORE(&sleeping, 1);
	r = fputs("x", devnull);
	EXPECT(r >= 0, "fputs");
	/* The lock is free once the holder's sleep is over. */
	return (void *)(uintptr_t)spun_while_asleep(h_now(CLOCK_MONOTONIC));
}

START_TEST(libc_lock)
{
	pthread_t th;

	devnull = fopen("/dev/null", "w");
	ck_assert_ptr_nonnull(devnull);
	ck_assert_int_eq(pthread_create(&th, NULL, lock_holder, NULL), 0);
	WAIT_UNTIL(LOAD(&locked));
	run_pair(stdio_sleeper, NULL, 0);
	ck_assert_int_eq(pthread_join(th, NULL), 0);
	fclose(devnull);
}
END_TEST

/* ---- a woken sleeper goes back under its server ----------------------- */

static atomic_ulong own_spins;
static atomic_int woke, release_sleeper;

/* Sleeps unannounced, then spins in user code without a library call. */
static void *wake_and_spin(void *arg)
{
	struct timespec ts = { 0, 50 * (long)MS };

	(void)arg;
	STORE(&sleeping, 1);
	EXPECT(syscall(SYS_nanosleep, &ts, NULL) == 0, "raw nanosleep");
	STORE(&woke, 1);
	while (!LOAD(&release_sleeper))
		BUMP(&own_spins);
	return NULL;
}

/*
 * Runs while the other worker sleeps, and keeps the one server (cooperative)
 * after it woke: the woken worker must stop running beside it.
 */
static void *watcher_of_sleeper(void *arg)
{
	uint64_t end = h_now(CLOCK_MONOTONIC) + h_liveness_ns(), still_since = 0;
	unsigned long last = 0, now;

	(void)arg;
	while (!LOAD(&woke))
		EXPECT(h_now(CLOCK_MONOTONIC) < end, "the sleeper never woke");
	/* Its counter must stand still for 100 ms on end. */
	for (;;) {
		now = PEEK(&own_spins);
		if (now != last) {
			last = now;
			still_since = h_now(CLOCK_MONOTONIC);
		} else if (h_now(CLOCK_MONOTONIC) - still_since >= 100 * MS) {
			break;
		}
		EXPECT(h_now(CLOCK_MONOTONIC) < end,
		       "the woken sleeper kept running beside us (%lu spins)", now);
	}
	STORE(&release_sleeper, 1);
	return NULL;
}

START_TEST(woken_sleeper_is_taken_back)
{
	struct umcg_rt *rt;
	struct umcg_worker *a = NULL, *b = NULL;

	if (!emulated_backend()) {
		/* On the kernel the sleeper is back under its server before
		 * it runs any user code: nothing to see. */
		return;
	}
	rt = rt_start(1, 0);
	ck_assert_int_eq(umcg_spawn(rt, &a, NULL, wake_and_spin, NULL), 0);
	WAIT_UNTIL(LOAD(&sleeping));
	ck_assert_int_eq(umcg_spawn(rt, &b, NULL, watcher_of_sleeper, NULL), 0);
	ck_assert_int_eq(umcg_join(b, NULL), 0);
	ck_assert_int_eq(umcg_join(a, NULL), 0);
	expect_unannounced(rt);
	rt_end(rt);
}
END_TEST

/* ---- no call cut short under 1 ms preemption ---------------------------- */

/* ThreadSanitizer runs signal handlers late, off the interrupted call. */
#if defined(__SANITIZE_THREAD__)
#define UNDER_TSAN 1
#else
#define UNDER_TSAN 0
#endif

/*
 * A worker's sleep(3), nanosleep(), poll() and epoll_wait() with a timeout,
 * none of them wrapped, beside a worker that never yields, on one server
 * with a 1 ms slice. The kicks meant for whoever the server thinks runs
 * never land as a signal on the sleeper: on the kernel its state is
 * BLOCKED and the kick's CAS fails; on the emulation detection makes it
 * BLOCKED, and a kick before that looks at it first and finds it asleep.
 * Each call returns after its full time with its own result.
 *
 * With slice timers (UMCG_PREEMPT=timer, the test-detect.timer variant) the
 * signal comes from the sleeper's own timer, which cannot look first: a
 * slice that ends before detection does ends the call, and the handler
 * resumes it. Calls that Linux never resumes after a handler (epoll_wait)
 * then fail with EINTR, as <umcg/runtime.h> says; that one is only made
 * there, not checked. Under ThreadSanitizer no call can be resumed (its
 * handlers run after the call has returned), so the case is skipped.
 */
static atomic_int hog_running;

static void *hog(void *arg)
{
	(void)arg;
	STORE(&hog_running, 1);
	while (!LOAD(&stop))
		;
	return NULL;
}

static void *full_time_sleeper(void *arg)
{
	struct timespec ts = { 0, 300 * (long)MS }, rem = { 0, 0 };
	struct epoll_event ev = { .events = EPOLLIN };
	struct pollfd pfd;
	int p[2], ep;
	bool timer = arg != NULL;
	uint64_t t0;
	int r;

	ck_assert_int_eq(pipe(p), 0);
	ep = epoll_create1(0);
	ck_assert_int_ge(ep, 0);
	ck_assert_int_eq(epoll_ctl(ep, EPOLL_CTL_ADD, p[0], &ev), 0);
	pfd = (struct pollfd){ .fd = p[0], .events = POLLIN };

	t0 = h_now(CLOCK_MONOTONIC);
	EXPECT(sleep(3) == 0, "sleep(3) was cut short");
	EXPECT(h_now(CLOCK_MONOTONIC) - t0 >= 3 * SEC, "sleep(3) returned early");

	t0 = h_now(CLOCK_MONOTONIC);
	EXPECT(nanosleep(&ts, &rem) == 0, "nanosleep: %s", strerror(errno));
	EXPECT(h_now(CLOCK_MONOTONIC) - t0 >= 300 * MS, "nanosleep returned early");

	t0 = h_now(CLOCK_MONOTONIC);
	EXPECT(poll(&pfd, 1, 300) == 0, "poll: %s", strerror(errno));
	EXPECT(h_now(CLOCK_MONOTONIC) - t0 >= 300 * MS, "poll returned early");

	t0 = h_now(CLOCK_MONOTONIC);
	r = epoll_wait(ep, &ev, 1, 300);
	if (!timer) {
		EXPECT(r == 0, "epoll_wait: %s", strerror(errno));
		EXPECT(h_now(CLOCK_MONOTONIC) - t0 >= 300 * MS, "epoll_wait returned early");
	}

	close(ep);
	close(p[0]);
	close(p[1]);
	return (void *)(uintptr_t)1;
}

START_TEST(full_time_under_preemption)
{
	struct umcg_rt *rt = rt_start(1, MS);
	struct umcg_worker *h = NULL, *w = NULL;
	struct umcg_server_stats st;
	void *done = NULL;

	bool timer = umcg_rt_preempt_mode(rt) == UMCG_PREEMPT_TIMER;

	if (timer && UNDER_TSAN) {
		fprintf(stderr, "full_time_under_preemption: slice timers under "
				"ThreadSanitizer cannot resume a call, skipped\n");
		rt_end(rt);
		return;
	}
	STORE(&stop, 0);
	/* The hog first: the sleeper gets the server only by a preemption,
	 * and whenever it falls asleep the hog waits to be run. */
	ck_assert_int_eq(umcg_spawn(rt, &h, NULL, hog, NULL), 0);
	WAIT_UNTIL(LOAD(&hog_running));
	ck_assert_int_eq(umcg_spawn(rt, &w, NULL, full_time_sleeper, timer ? (void *)1 : NULL), 0);
	ck_assert_int_eq(umcg_join(w, &done), 0);
	STORE(&stop, 1);
	ck_assert_int_eq(umcg_join(h, NULL), 0);
	ck_assert_ptr_nonnull(done);
	ck_assert_int_eq(umcg_rt_server_stats(rt, 0, &st), 0);
	EXPECT(st.preemptions > 0, "no preemption happened");
	expect_unannounced(rt);
	rt_end(rt);
}
END_TEST

/* ---- nothing blocks: nothing is detected ----------------------------- */

/*
 * Workers that only yield, on one server, while plain threads keep both
 * CPUs busy so that the host deschedules workers often and the watcher
 * (and, with a slice, the kicker) often finds one that has not run for a
 * whole period. Such a worker is runnable, or asleep inside the library
 * (in_lib set), never asleep in a call of its own, so no look may make it
 * BLOCKED: unannounced_blocks stays 0, and, without a slice (a preempted
 * worker is in user code while the next one runs), no two workers of the
 * one server are ever in user code together (`nf_inside`). A probe whose answer
 * was stale by the time the decision was taken (the worker had slept in
 * umcg_yield() and come back) used to break both, now and then.
 *
 * Counting starts once every worker runs and has touched its stack to a
 * depth no kick handler's frame reaches: until then a worker can truly
 * sleep, in the page fault of a new stack page or behind the mmap_lock of
 * a thread being created, and that block is one the kernel would see too.
 * The first block counted is looked at at once (the worker's system call,
 * state and kernel stack, read from /proc) and named in the failure.
 */
#define NF_WORKERS 4
#define NF_HOGS 4
#define NF_RUN_MS 1500
#define NF_STACK_TOUCH (32 * 1024)

static atomic_int nf_inside, nf_overlaps, nf_ready, nf_go, nf_done;

/* Fault in NF_STACK_TOUCH bytes of the calling thread's stack. */
static __attribute__((noinline)) void nf_touch_stack(void)
{
	volatile char deep[NF_STACK_TOUCH];
	size_t i;

	for (i = 0; i < sizeof(deep); i += 512)
		deep[i] = 1;
}

static void *nf_yielder(void *arg)
{
	uint64_t end;
	int i;

	(void)arg;
	nf_touch_stack();
	BUMP(&nf_ready);
	while (!LOAD(&nf_go))
		EXPECT(umcg_yield() == 0, "umcg_yield");
	end = h_now(CLOCK_MONOTONIC) + NF_RUN_MS * MS;
	while (h_now(CLOCK_MONOTONIC) < end) {
		if (atomic_fetch_add(&nf_inside, 1) != 0)
			BUMP(&nf_overlaps);
		for (i = 0; i < 200; i++)
			atomic_signal_fence(memory_order_seq_cst);
		atomic_fetch_sub(&nf_inside, 1);
		EXPECT(umcg_yield() == 0, "umcg_yield");
	}
	BUMP(&nf_done);
	return NULL;
}

static void *nf_hog(void *arg)
{
	(void)arg;
	while (!LOAD(&stop))
		atomic_signal_fence(memory_order_seq_cst);
	return NULL;
}

/* Append /proc/self/task/@tid/@name (its first line for "stack", the
 * state for "stat") to @buf. */
static void nf_describe(char *buf, size_t len, pid_t tid, const char *name)
{
	char path[64], text[256], *state;
	size_t used = strlen(buf);
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/self/task/%d/%s", (int)tid, name);
	fd = open(path, O_RDONLY);
	n = fd >= 0 ? read(fd, text, sizeof(text) - 1) : -1;
	if (fd >= 0)
		close(fd);
	text[n > 0 ? n : 0] = '\0';
	text[strcspn(text, "\n")] = '\0';
	/* Of stat, the state letter after the name's ')'. */
	state = strcmp(name, "stat") ? NULL : strrchr(text, ')');
	if (state && state[1] == ' ' && state[2]) {
		state[3] = '\0';
		memmove(text, state + 2, 2);
	}
	if (used < len)
		snprintf(buf + used, len - used, " %s=[%s]", name, n > 0 ? text : "?");
}

START_TEST(no_false_detection)
{
	struct umcg_rt *rt = rt_start(1, _i ? 200000 : 0);
	struct umcg_worker *w[NF_WORKERS];
	struct umcg_server_stats st;
	pthread_t hogs[NF_HOGS];
	char seen[1024] = "";
	uint64_t base, until;
	int i;

	ck_assert_int_eq(umcg_detect_set(UMCG_DETECT_MIN_NS), 0);
	STORE(&stop, 0);
	STORE(&nf_overlaps, 0);
	STORE(&nf_ready, 0);
	STORE(&nf_go, 0);
	STORE(&nf_done, 0);
	for (i = 0; i < NF_HOGS; i++)
		ck_assert_int_eq(pthread_create(&hogs[i], NULL, nf_hog, NULL), 0);
	for (i = 0; i < NF_WORKERS; i++)
		ck_assert_int_eq(umcg_spawn(rt, &w[i], NULL, nf_yielder, NULL), 0);
	WAIT_UNTIL(LOAD(&nf_ready) == NF_WORKERS);
	ck_assert_int_eq(umcg_rt_server_stats(rt, 0, &st), 0);
	base = st.unannounced_blocks;
	STORE(&nf_go, 1);
	/* Until they are done: catch the first block counted while the
	 * worker it names may still be where it was found. */
	until = h_now(CLOCK_MONOTONIC) + NF_RUN_MS * MS + h_liveness_ns();
	while (LOAD(&nf_done) < NF_WORKERS) {
		ck_assert_msg(h_now(CLOCK_MONOTONIC) < until, "no progress: %d of %d workers done",
			      LOAD(&nf_done), NF_WORKERS);
		ck_assert_int_eq(umcg_rt_server_stats(rt, 0, &st), 0);
		if (st.unannounced_blocks != base && !seen[0]) {
			snprintf(seen, sizeof(seen), "; at the first:");
			for (i = 0; i < NF_WORKERS; i++) {
				pid_t tid = umcg_worker_tid(w[i]);

				snprintf(seen + strlen(seen), sizeof(seen) - strlen(seen),
					 " worker %d:", (int)tid);
				nf_describe(seen, sizeof(seen), tid, "syscall");
				nf_describe(seen, sizeof(seen), tid, "stat");
				nf_describe(seen, sizeof(seen), tid, "stack");
			}
		}
		h_sleep_us(200);
	}
	for (i = 0; i < NF_WORKERS; i++)
		ck_assert_int_eq(umcg_join(w[i], NULL), 0);
	STORE(&stop, 1);
	for (i = 0; i < NF_HOGS; i++)
		pthread_join(hogs[i], NULL);
	ck_assert_int_eq(umcg_rt_server_stats(rt, 0, &st), 0);
	EXPECT(st.unannounced_blocks == base && (_i || LOAD(&nf_overlaps) == 0),
	       "workers that never slept: %" PRIu64 " detected as blocked, %d times two in user "
	       "code on one server%s",
	       st.unannounced_blocks - base, LOAD(&nf_overlaps), seen);
	rt_end(rt);
}
END_TEST

/* The blocking cases run with a 2 ms bound, whatever UMCG_DETECT_NS says. */
static void detect_on(void)
{
	ck_assert_int_eq(umcg_detect_set(2 * MS), 0);
}

static Suite *detect_suite(void)
{
	Suite *s = suite_create("detect");
	TCase *ta = tcase_create("api");
	TCase *tb = tcase_create("blocking");

	tcase_add_test(ta, api_bounds);
	tcase_add_loop_test(ta, api_environment, 0,
			    (int)(sizeof(env_values) / sizeof(env_values[0])));
	suite_add_tcase(s, ta);
	tcase_set_timeout(tb, 60);
	tcase_add_checked_fixture(tb, detect_on, NULL);
	tcase_add_test(tb, raw_syscall_cooperative);
	tcase_add_test(tb, raw_syscall_preemptive);
	tcase_add_test(tb, page_fault);
	tcase_add_test(tb, libc_lock);
	tcase_add_test(tb, woken_sleeper_is_taken_back);
	tcase_add_test(tb, full_time_under_preemption);
	tcase_add_loop_test(tb, no_false_detection, 0, 2);
	suite_add_tcase(s, tb);
	return s;
}

H_TEST_MAIN(detect_suite, NULL)
