/* SPDX-License-Identifier: MIT */
/*
 * test_efault.c - wrappers handed pointers the kernel cannot read answer
 * what the plain call answers (-EFAULT), never with a SIGSEGV, and leave
 * errno alone; and the library's first call leaves errno alone whatever
 * the environment says.
 *
 * Each case runs in its own process (Check's fork mode), once in a plain
 * thread and once in a worker of a one-server runtime, against three kinds
 * of address taken from one mapping laid out as
 *
 *	page 0: read-write	page 1: PROT_NONE
 *	page 2: unmapped	page 3: PROT_NONE (keeps page 2 a hole)
 *
 * PROT_NONE is page 1, unmapped is page 2, and "straddling" is the last 8
 * bytes of page 0. A hole may be filled by any later mmap() (a thread's
 * stack, a sanitizer's allocator), so an unmapped address is made afresh,
 * the same way, just before each call that uses it: the first half of a timespec is readable, the second is
 * not. For a sigset the kernel reads only its first 8 bytes, so there the
 * straddling pointer is a good one, and the call must simply work. The
 * expected answer of every case is what the plain call gives for the same
 * arguments in the test's main thread; the cases that must fail also check
 * that this answer is -EFAULT, so that the comparison means something.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <check.h>
#include <errno.h>
#include <linux/futex.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <umcg/io.h>
#include <umcg/runtime.h>
#include <umcg/umcg.h>

#include "test_common.h"

#define PAGE 4096
#define ERRNO_SENTINEL 4242 /* no real errno has this value */
#define NR_KINDS 3
#define SHORT_MS 10 /* the timeout of the cases that may wait */

enum kind {
	PROT_NONE_PAGE,
	UNMAPPED,
	STRADDLING
};

static const char *const kind_name[NR_KINDS] = { "PROT_NONE", "unmapped", "straddling" };

static char *map; /* the four pages */
static int pipe_fd[2];
static int epfd;
static uint32_t word; /* a good futex word holding 0 */

/* The call under test, run where the loop index says. */
static long (*call)(void *bad);
static void *bad_ptr;
static enum kind bad_kind;
static long got;
static int got_errno;

/* A page nobody has mapped: the middle one of three, the outer two kept
 * PROT_NONE (and leaked) so that the hole is one page wide. */
static void *fresh_hole(void)
{
	char *p = mmap(NULL, 3 * PAGE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	unsigned char vec;

	ck_assert_ptr_ne(p, MAP_FAILED);
	ck_assert_int_eq(munmap(p + PAGE, PAGE), 0);
	ck_assert_int_eq(mincore(p + PAGE, PAGE, &vec), -1);
	return p + PAGE;
}

static void *bad_address(enum kind k)
{
	switch (k) {
	case PROT_NONE_PAGE:
		return map + PAGE;
	case UNMAPPED:
		return fresh_hole();
	default:
		return map + PAGE - 8;
	}
}

static void setup(void)
{
	struct epoll_event ev = { .events = EPOLLIN };
	unsigned char vec;

	map = mmap(NULL, 4 * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ck_assert_ptr_ne(map, MAP_FAILED);
	ck_assert_int_eq(mprotect(map + PAGE, PAGE, PROT_NONE), 0);
	ck_assert_int_eq(mprotect(map + 3 * PAGE, PAGE, PROT_NONE), 0);
	ck_assert_int_eq(munmap(map + 2 * PAGE, PAGE), 0);
	ck_assert_int_eq(mincore(map + 2 * PAGE, PAGE, &vec), -1);
	ck_assert_int_eq(pipe(pipe_fd), 0);
	epfd = epoll_create1(0);
	ck_assert_int_ge(epfd, 0);
	ev.data.fd = pipe_fd[0];
	ck_assert_int_eq(epoll_ctl(epfd, EPOLL_CTL_ADD, pipe_fd[0], &ev), 0);
}

static long neg(long r)
{
	return r == -1 ? -errno : r;
}

static void record(void)
{
	if (bad_kind == UNMAPPED)
		bad_ptr = fresh_hole();
	errno = ERRNO_SENTINEL;
	got = call(bad_ptr);
	got_errno = errno;
}

static void *plain_main(void *arg)
{
	(void)arg;
	record();
	return NULL;
}

static void *worker_fn(void *arg)
{
	(void)arg;
	record();
	return NULL;
}

/* Run call(@bad) in a worker (@in_worker) or a plain thread. */
static void run(bool in_worker, void *bad)
{
	struct umcg_worker *w;
	struct umcg_rt_attr attr;
	struct umcg_rt *rt;
	pthread_t t;

	bad_ptr = bad;
	got = 1234567;
	got_errno = 0;
	if (!in_worker) {
		ck_assert_int_eq(pthread_create(&t, NULL, plain_main, NULL), 0);
		ck_assert_int_eq(pthread_join(t, NULL), 0);
		return;
	}
	umcg_rt_attr_init(&attr);
	attr.nr_servers = 1;
	ck_assert_int_eq(umcg_rt_create(&rt, &attr), 0);
	ck_assert_int_eq(umcg_rt_start(rt), 0);
	ck_assert_int_eq(umcg_spawn(rt, &w, NULL, worker_fn, NULL), 0);
	ck_assert_int_eq(umcg_join(w, NULL), 0);
	ck_assert_int_eq(umcg_rt_destroy(rt), 0);
}

/*
 * check() - the loop index @i picks the thread (worker, plain) and the kind
 * of address; @plain is the plain call's answer for it. @must_fault says
 * whether that answer has to be -EFAULT for this kind.
 */
static void check(int i, long (*fn)(void *), long plain, bool must_fault)
{
	bool in_worker = i / NR_KINDS == 0;
	enum kind k = (enum kind)(i % NR_KINDS);

	if (must_fault)
		ck_assert_msg(plain == -EFAULT, "%s: the plain call gave %ld, not -EFAULT",
			      kind_name[k], plain);
	call = fn;
	bad_kind = k;
	run(in_worker, bad_address(k));
	ck_assert_msg(got == plain, "%s address in a %s: %ld, the plain call gave %ld",
		      kind_name[k], in_worker ? "worker" : "plain thread", got, plain);
	ck_assert_msg(got_errno == ERRNO_SENTINEL, "errno changed to %d", got_errno);
}

static enum kind kind_of(int i)
{
	return (enum kind)(i % NR_KINDS);
}

/* ---- the sleeps ---------------------------------------------------------- */

static long do_nanosleep(void *bad)
{
	return umcg_nanosleep(bad, NULL);
}

START_TEST(nanosleep_request)
{
	check(_i, do_nanosleep, neg(nanosleep(bad_address(kind_of(_i)), NULL)), true);
}
END_TEST

static long do_clock_nanosleep(void *bad)
{
	return umcg_clock_nanosleep(CLOCK_MONOTONIC, 0, bad, NULL);
}

START_TEST(clock_nanosleep_request)
{
	check(_i, do_clock_nanosleep,
	      -clock_nanosleep(CLOCK_MONOTONIC, 0, bad_address(kind_of(_i)), NULL), true);
}
END_TEST

static long do_clock_nanosleep_abs(void *bad)
{
	return umcg_clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, bad, NULL);
}

START_TEST(clock_nanosleep_abstime)
{
	check(_i, do_clock_nanosleep_abs,
	      -clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, bad_address(kind_of(_i)), NULL),
	      true);
}
END_TEST

/* ---- ppoll and epoll_pwait ----------------------------------------------- */

static const struct timespec short_ts = { 0, SHORT_MS * 1000000L };

static long do_ppoll_timeout(void *bad)
{
	struct pollfd p = { .fd = pipe_fd[0], .events = POLLIN };

	return umcg_ppoll(&p, 1, bad, NULL);
}

START_TEST(ppoll_timeout)
{
	struct pollfd p = { .fd = pipe_fd[0], .events = POLLIN };

	/* glibc's ppoll() copies the timeout in user space and crashes on
	 * it; what the system call answers is what the wrapper must. */
	check(_i, do_ppoll_timeout,
	      neg(syscall(SYS_ppoll, &p, 1, bad_address(kind_of(_i)), NULL, _NSIG / 8)), true);
}
END_TEST

static long do_ppoll_sigmask(void *bad)
{
	struct pollfd p = { .fd = pipe_fd[0], .events = POLLIN };

	return umcg_ppoll(&p, 1, &short_ts, bad);
}

START_TEST(ppoll_sigmask)
{
	struct pollfd p = { .fd = pipe_fd[0], .events = POLLIN };
	enum kind k = kind_of(_i);

	check(_i, do_ppoll_sigmask, neg(ppoll(&p, 1, &short_ts, bad_address(k))), k != STRADDLING);
}
END_TEST

static long do_epoll_pwait(void *bad)
{
	struct epoll_event ev;

	return umcg_epoll_pwait(epfd, &ev, 1, SHORT_MS, bad);
}

START_TEST(epoll_pwait_sigmask)
{
	struct epoll_event ev;
	enum kind k = kind_of(_i);

	check(_i, do_epoll_pwait, neg(epoll_pwait(epfd, &ev, 1, SHORT_MS, bad_address(k))),
	      k != STRADDLING);
}
END_TEST

/* ---- futexes ------------------------------------------------------------- */

static long raw_futex_wait(uint32_t *uaddr, uint32_t val, const struct timespec *abs)
{
	return neg(syscall(SYS_futex, uaddr, FUTEX_WAIT_BITSET | FUTEX_PRIVATE_FLAG, val, abs, NULL,
			   FUTEX_BITSET_MATCH_ANY));
}

/* The word of the straddling kind is the last one of the readable page: it
 * holds 0, so waiting for 1 must give -EAGAIN without sleeping. */
static uint32_t *bad_word(void *bad)
{
	return (uint32_t *)((char *)bad + 4);
}

static long do_futex_wait_word(void *bad)
{
	return umcg_futex_wait(bad_word(bad), 1, NULL);
}

START_TEST(futex_wait_word)
{
	enum kind k = kind_of(_i);

	check(_i, do_futex_wait_word, raw_futex_wait(bad_word(bad_address(k)), 1, NULL),
	      k != STRADDLING);
}
END_TEST

static long do_futex_wait_timeout(void *bad)
{
	return umcg_futex_wait(&word, 0, bad);
}

START_TEST(futex_wait_timeout)
{
	check(_i, do_futex_wait_timeout, raw_futex_wait(&word, 0, bad_address(kind_of(_i))), true);
}
END_TEST

/* A private wake finds waiters by address and reads nothing: the kernel
 * answers 0 for any address nobody waits on, and so must the wrapper. */
static long do_futex_wake(void *bad)
{
	return umcg_futex_wake(bad_word(bad), 1);
}

START_TEST(futex_wake_bad_address)
{
	uint32_t *w = bad_word(bad_address(kind_of(_i)));
	long plain = neg(syscall(SYS_futex, w, FUTEX_WAKE | FUTEX_PRIVATE_FLAG, 1, NULL, NULL, 0));

	ck_assert_int_eq(plain, 0);
	check(_i, do_futex_wake, plain, false);
}
END_TEST

/* ---- errno and the first call -------------------------------------------- */

/*
 * With UMCG_SYSCALL_NRS set the first call parses it. The numbers here are
 * ones no kernel has (4000-4002), so the probe calls nothing that exists,
 * and the emulation is chosen; a value that does not parse makes the
 * choice fail with -EINVAL. Neither may leave anything in errno.
 */
static void first_call_keeps_errno(const char *nrs, int expect)
{
	int ret;

	unsetenv("UMCG_BACKEND");
	ck_assert_int_eq(setenv("UMCG_SYSCALL_NRS", nrs, 1), 0);
	errno = ERRNO_SENTINEL;
	ret = umcg_backend_active();
	ck_assert_int_eq(errno, ERRNO_SENTINEL);
	ck_assert_int_eq(ret, expect);
}

START_TEST(syscall_nrs_first_call)
{
	first_call_keeps_errno("4000,4001,4002", UMCG_BACKEND_EMULATED);
}
END_TEST

START_TEST(syscall_nrs_malformed_first_call)
{
	first_call_keeps_errno("4000,x", -EINVAL);
}
END_TEST

static Suite *efault_suite(void)
{
	Suite *s = suite_create("efault");
	TCase *tc = tcase_create("bad pointers");
	TCase *te = tcase_create("errno");
	int n = 2 * NR_KINDS;

	tcase_add_checked_fixture(tc, setup, NULL);
	tcase_set_timeout(tc, 30);
	tcase_add_loop_test(tc, nanosleep_request, 0, n);
	tcase_add_loop_test(tc, clock_nanosleep_request, 0, n);
	tcase_add_loop_test(tc, clock_nanosleep_abstime, 0, n);
	tcase_add_loop_test(tc, ppoll_timeout, 0, n);
	tcase_add_loop_test(tc, ppoll_sigmask, 0, n);
	tcase_add_loop_test(tc, epoll_pwait_sigmask, 0, n);
	tcase_add_loop_test(tc, futex_wait_word, 0, n);
	tcase_add_loop_test(tc, futex_wait_timeout, 0, n);
	tcase_add_loop_test(tc, futex_wake_bad_address, 0, n);
	suite_add_tcase(s, tc);
	tcase_set_timeout(te, 30);
	tcase_add_test(te, syscall_nrs_first_call);
	tcase_add_test(te, syscall_nrs_malformed_first_call);
	suite_add_tcase(s, te);
	return s;
}

/* Nothing before the suite may call the library: each test process chooses
 * its backend afresh. */
H_TEST_MAIN(efault_suite, NULL)
