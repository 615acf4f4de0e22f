/* SPDX-License-Identifier: MIT */
/*
 * test_noblind.c - the library never calls system calls 450-460 blindly.
 *
 * The UMCG proposal used 450-452; mainline gave those numbers (and the
 * next ones) to set_mempolicy_home_node, cachestat, fchmodat2,
 * map_shadow_stack, futex_wake, ... so a library that "tries UMCG" by
 * calling them runs something else. Each test here installs a seccomp
 * filter that turns every call of 450-460 (x86_64, or the x32 numbering of
 * the same, or any call through another ABI) into SIGSYS. The handler does
 * not run the call: it records its number and arguments and makes it
 * return -ENOSYS, so the program carries on as on a kernel without those
 * syscalls. Then the test drives the library through everything a program
 * does -- choosing the backend, registering a server and a worker,
 * handoffs, yields, blocking hooks, a preemption (TF_PREEMPT and a kick),
 * unregistering -- and asserts that nothing was trapped.
 *
 * That the trap works is shown in the same process: a direct
 * syscall(451, ...) afterwards must be counted. And where the program opts
 * in with UMCG_SYSCALL_NRS=451,452,453, the library may call those numbers,
 * but only for its documented probe, whose arguments are harmless to
 * whatever really sits there (src/kernel.c):
 *	umcg_ctl(UMCG_CTL_UNREGISTER, NULL, 0)	expects -EINVAL
 *	umcg_kick(0, 0)				expects -ESRCH
 *	umcg_wait(1, 0)				expects -EINVAL
 * The trap answers -ENOSYS, so the probe fails at its first call and auto
 * falls back to the emulation, saying so in the reason.
 *
 * A library built with syscall numbers of its own (the CMake option
 * UMCG_SYSCALL_NRS, passed to this test as UMCG_TEST_BUILT_IN_NRS, or
 * kernel headers defining __NR_umcg_*) has opted in the same way: there
 * the scenarios without numbers in the environment accept the probe at
 * those numbers, and nothing else.
 *
 * Each test runs in its own process (Check fork mode): a seccomp filter
 * cannot be removed, and the backend is chosen once per process.
 * x86_64 only (exit 77 elsewhere, where seccomp filters are refused, or on
 * a UMCG kernel that publishes its numbers in /sys/kernel/umcg/syscalls:
 * calling them there is right).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* gettid(), REG_RAX */
#endif
#include <check.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test_common.h"

#if defined(__x86_64__)

#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <ucontext.h>

#include <umcg/umcg.h>

#define TRAP_FIRST 450
#define TRAP_LAST 460
#define X32_SYSCALL_BIT 0x40000000U
#define MAX_RECORDS 32

/* ---- the trap ---------------------------------------------------------- */

struct trapped {
	long nr;
	unsigned int arch;
	unsigned long args[6];
};

/* Written by the SIGSYS handler only; read by the test thread after the
 * calls it made returned (same thread) or after pthread_join(). */
static struct trapped records[MAX_RECORDS];
static unsigned int nr_trapped;

static void sigsys_handler(int sig, siginfo_t *si, void *ctx)
{
	ucontext_t *uc = ctx;
	greg_t *r = uc->uc_mcontext.gregs;
	unsigned int i = atomic_fetch_add_explicit(h_atomic(&nr_trapped), 1, memory_order_relaxed);

	(void)sig;
	if (i < MAX_RECORDS) {
		records[i].nr = si->si_syscall;
		records[i].arch = si->si_arch;
		records[i].args[0] = (unsigned long)r[REG_RDI];
		records[i].args[1] = (unsigned long)r[REG_RSI];
		records[i].args[2] = (unsigned long)r[REG_RDX];
		records[i].args[3] = (unsigned long)r[REG_R10];
		records[i].args[4] = (unsigned long)r[REG_R8];
		records[i].args[5] = (unsigned long)r[REG_R9];
	}
	/* The call did not run; make it fail as on a kernel without it. */
	r[REG_RAX] = -ENOSYS;
}

/* Return: 0, or a negative errno if the filter could not be installed. */
static int install_trap(void)
{
	struct sock_filter code[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_TRAP), /* another ABI: trap all */
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_STMT(BPF_ALU | BPF_AND | BPF_K, ~X32_SYSCALL_BIT),
		BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, TRAP_FIRST, 0, 2),
		BPF_JUMP(BPF_JMP | BPF_JGT | BPF_K, TRAP_LAST, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_TRAP),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { .len = sizeof(code) / sizeof(code[0]), .filter = code };
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = sigsys_handler;
	sa.sa_flags = SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGSYS, &sa, NULL))
		return -errno;
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		return -errno;
	if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog))
		return -errno;
	return 0;
}

static void setup(void)
{
	int ret;

	unsetenv("UMCG_BACKEND");
	unsetenv("UMCG_SYSCALL_NRS");
	ret = install_trap();
	ck_assert_msg(ret == 0, "seccomp filter: %s", strerror(-ret));
}

static void print_records(char *buf, size_t len)
{
	unsigned int i, n = nr_trapped < MAX_RECORDS ? nr_trapped : MAX_RECORDS;
	size_t off = 0;

	buf[0] = '\0';
	for (i = 0; i < n && off < len; i++)
		off += (size_t)snprintf(buf + off, len - off, " %ld(%#lx,%#lx,%#lx)", records[i].nr,
					records[i].args[0], records[i].args[1], records[i].args[2]);
}

/* The probe, in the order kernel.c makes it. */
static const struct {
	int which; /* index into the numbers: 0 ctl, 1 wait, 2 kick */
	unsigned long args[6];
	const char *what;
} probe[] = {
	{ 0, { UMCG_CTL_UNREGISTER, 0, 0, 0, 0, 0 }, "umcg_ctl(UNREGISTER, NULL, 0)" },
	{ 2, { 0, 0, 0, 0, 0, 0 }, "umcg_kick(0, 0)" },
	{ 1, { 1, 0, 0, 0, 0, 0 }, "umcg_wait(1, 0)" },
};

/*
 * Every trapped call so far is a call of the probe at @nrs, in order, and
 * there are between @min and 3 of them. Return: how many.
 */
static unsigned int assert_probe_only(const long nrs[3], unsigned int min, const char *when)
{
	unsigned int i, j, n = nr_trapped;
	char buf[512];

	print_records(buf, sizeof(buf));
	ck_assert_msg(n >= min && n <= 3, "%s: %u trapped calls:%s", when, n, buf);
	for (i = 0; i < n; i++) {
		ck_assert_msg(records[i].nr == nrs[probe[i].which],
			      "%s: call %u is syscall %ld, expected %s as %ld", when, i,
			      records[i].nr, probe[i].what, nrs[probe[i].which]);
		ck_assert_uint_eq(records[i].arch, AUDIT_ARCH_X86_64);
		for (j = 0; j < 6; j++)
			ck_assert_msg(records[i].args[j] == probe[i].args[j],
				      "%s: %s: argument %u is %#lx, not %#lx", when, probe[i].what,
				      j, records[i].args[j], probe[i].args[j]);
	}
	return n;
}

/* Numbers the library knows without the environment, if any. */
#if defined(UMCG_TEST_BUILT_IN_NRS)
static const char built_in_nrs[] = UMCG_TEST_BUILT_IN_NRS;
#elif defined(__NR_umcg_ctl) && defined(__NR_umcg_wait) && defined(__NR_umcg_kick)
#define STR_(x) #x
#define STR(x) STR_(x)
static const char built_in_nrs[] =
	STR(__NR_umcg_ctl) "," STR(__NR_umcg_wait) "," STR(__NR_umcg_kick);
#else
static const char built_in_nrs[] = "";
#endif

/* Return: true and the numbers in @nrs if the build has some. */
static bool get_built_in_nrs(long nrs[3])
{
	return built_in_nrs[0] &&
	       sscanf(built_in_nrs, "%ld,%ld,%ld", &nrs[0], &nrs[1], &nrs[2]) == 3;
}

/*
 * Nothing of 450-460 was called, except, in a library built with syscall
 * numbers, its probe at those numbers.
 */
static void assert_nothing_trapped(const char *when)
{
	char buf[512];
	long nrs[3];

	if (get_built_in_nrs(nrs)) {
		assert_probe_only(nrs, 0, when);
		return;
	}
	print_records(buf, sizeof(buf));
	ck_assert_msg(nr_trapped == 0, "%s: %u calls of syscalls %d-%d:%s", when, nr_trapped,
		      TRAP_FIRST, TRAP_LAST, buf);
}

/* The trap itself works: a call we make on purpose is caught. */
static void assert_trap_catches(void)
{
	unsigned int before = nr_trapped;
	long ret;

	errno = 0;
	ret = syscall(451, 0, 0, 0);
	ck_assert_int_eq(ret, -1);
	ck_assert_int_eq(errno, ENOSYS);
	ck_assert_uint_eq(nr_trapped, before + 1);
	ck_assert_int_eq(records[before].nr, 451);
	ck_assert_uint_eq(records[before].arch, AUDIT_ARCH_X86_64);
}

/* ---- a small scheduler that touches every entry point --------------------- */

struct tworker {
	struct umcg_task task;
	pid_t tid;
	int spinning; /* set by the worker when it starts spinning */
	int stop; /* set by the server once it saw the preemption */
	int done; /* set after the worker unregistered */
	int err;
};

static struct umcg_task server_task;
static pid_t server_tid;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void wake_server(void)
{
	uint32_t s = atomic_load_explicit(h_atomic(&server_task.state), memory_order_seq_cst);

	while ((s & UMCG_TASK_MASK) == UMCG_TASK_RUNNABLE &&
	       !atomic_compare_exchange_strong_explicit(h_atomic(&server_task.state), &s,
							(s & ~(UMCG_TASK_MASK | UMCG_TF_MASK)) |
								UMCG_TASK_RUNNING,
							memory_order_seq_cst, memory_order_seq_cst))
		;
	umcg_kick(0, server_tid);
}

static void *worker_main(void *arg)
{
	struct tworker *w = arg;
	struct timespec ms = { 0, 1000000 };
	int i, ret;

	w->tid = gettid();
	w->task.state = UMCG_TASK_BLOCKED;
	w->task.server_tid = (uint32_t)server_tid;
	ret = umcg_ctl(UMCG_CTL_REGISTER | UMCG_CTL_WORKER, &w->task, CLOCK_MONOTONIC);
	if (ret)
		goto fail;
	for (i = 0; i < 3; i++) {
		atomic_store_explicit(h_atomic(&w->task.state),
				      UMCG_TASK_RUNNABLE | UMCG_TF_COND_WAIT, memory_order_seq_cst);
		ret = umcg_wait(0, 0);
		if (ret)
			goto fail;
	}
	for (i = 0; i < 3; i++) {
		ret = umcg_block_begin();
		if (ret)
			goto fail;
		nanosleep(&ms, NULL);
		ret = umcg_block_end();
		if (ret)
			goto fail;
	}
	/* Spin until the server has preempted us and run us again. */
	atomic_store_explicit(h_atomic(&w->spinning), 1, memory_order_seq_cst);
	while (!atomic_load_explicit(h_atomic(&w->stop), memory_order_acquire))
		;
	ret = umcg_ctl(UMCG_CTL_UNREGISTER, NULL, 0);
	if (ret)
		goto fail;
	atomic_store_explicit(h_atomic(&w->done), 1, memory_order_seq_cst);
	wake_server();
	return NULL;
fail:
	w->err = ret;
	atomic_store_explicit(h_atomic(&w->done), 1, memory_order_seq_cst);
	wake_server();
	return NULL;
}

/*
 * Register the calling thread as a server, run one worker through yields,
 * blocking and a preemption, and unregister. Asserts that it all worked.
 */
static void exercise(void)
{
	static struct tworker w;
	bool ready = false, running = false;
	unsigned int dispatches = 0, preemptions = 0;
	pthread_t th;
	uint32_t s;
	int ret;

	memset(&w, 0, sizeof(w));
	memset(&server_task, 0, sizeof(server_task));
	server_tid = gettid();
	server_task.state = UMCG_TASK_RUNNING;
	server_task.server_tid = (uint32_t)server_tid;
	ck_assert_int_eq(umcg_ctl(UMCG_CTL_REGISTER, &server_task, CLOCK_MONOTONIC), 0);
	ck_assert_int_eq(pthread_create(&th, NULL, worker_main, &w), 0);

	for (;;) {
		/* doc/umcg-abi.md §7 rules 7-8. */
		atomic_store_explicit(h_atomic(&server_task.state),
				      UMCG_TASK_RUNNABLE | UMCG_TF_COND_WAIT, memory_order_seq_cst);
		if (umcg_runnable_take(&server_task)) {
			/* Back on the list while spinning: it was preempted. */
			if (atomic_load_explicit(h_atomic(&w.spinning), memory_order_seq_cst) &&
			    !atomic_load_explicit(h_atomic(&w.stop), memory_order_relaxed)) {
				preemptions++;
				atomic_store_explicit(h_atomic(&w.stop), 1, memory_order_release);
			}
			ready = true;
			running = false;
		}
		if (atomic_load_explicit(h_atomic(&w.done), memory_order_seq_cst))
			break;
		if (running &&
		    (atomic_load_explicit(h_atomic(&w.task.state), memory_order_seq_cst) &
		     UMCG_TASK_MASK) != UMCG_TASK_RUNNING)
			running = false;
		if (ready && !running)
			server_task.next_tid = (uint32_t)w.tid;
		ret = umcg_wait(0, now_ns() + 2000000);
		ck_assert_msg(ret == 0 || ret == -EAGAIN || ret == -ETIMEDOUT, "umcg_wait: %d",
			      ret);
		if (server_task.next_tid) {
			server_task.next_tid = 0;
		} else if (ready && !running) {
			ready = false;
			running = true;
			dispatches++;
		}
		if (ret == -ETIMEDOUT && running &&
		    atomic_load_explicit(h_atomic(&w.spinning), memory_order_seq_cst) &&
		    !atomic_load_explicit(h_atomic(&w.stop), memory_order_relaxed)) {
			/* §8 rule 1: TF_PREEMPT only if RUNNING, then kick. */
			s = atomic_load_explicit(h_atomic(&w.task.state), memory_order_relaxed);
			while ((s & UMCG_TASK_MASK) == UMCG_TASK_RUNNING &&
			       !atomic_compare_exchange_strong_explicit(
				       h_atomic(&w.task.state), &s, s | UMCG_TF_PREEMPT,
				       memory_order_seq_cst, memory_order_relaxed))
				;
			ret = umcg_kick(0, w.tid);
			ck_assert_msg(ret == 0 || ret == -ESRCH, "umcg_kick: %d", ret);
		}
	}
	s = UMCG_TASK_RUNNABLE | UMCG_TF_COND_WAIT;
	atomic_compare_exchange_strong_explicit(h_atomic(&server_task.state), &s, UMCG_TASK_RUNNING,
						memory_order_seq_cst, memory_order_seq_cst);
	pthread_join(th, NULL);
	ck_assert_msg(w.err == 0, "worker: %d (%s)", w.err, strerror(-w.err));
	/* Registration, 3 yields, 3 blocks, 1 preemption: 8 runs at least. */
	ck_assert_uint_ge(dispatches, 8);
	ck_assert_uint_eq(preemptions, 1);
	ck_assert_int_eq(umcg_ctl(UMCG_CTL_UNREGISTER, NULL, 0), 0);
}

/* ---- tests ------------------------------------------------------------------- */

START_TEST(test_auto_unset_env)
{
	ck_assert_int_eq(umcg_backend_active(), UMCG_BACKEND_EMULATED);
	assert_nothing_trapped("choosing the backend");
	exercise();
	assert_nothing_trapped("running on the emulation");
	assert_trap_catches();
}
END_TEST

START_TEST(test_auto_env_auto)
{
	setenv("UMCG_BACKEND", "auto", 1);
	/* No umcg_backend_active() first: let a UMCG call choose. */
	exercise();
	ck_assert_int_eq(umcg_backend_active(), UMCG_BACKEND_EMULATED);
	assert_nothing_trapped("UMCG_BACKEND=auto");
	assert_trap_catches();
}
END_TEST

START_TEST(test_env_kernel_no_numbers)
{
	setenv("UMCG_BACKEND", "kernel", 1);
	ck_assert_int_eq(umcg_backend_active(), -ENOSYS);
	ck_assert_int_eq(umcg_ctl(UMCG_CTL_UNREGISTER, NULL, 0), -ENOSYS);
	ck_assert_int_eq(umcg_kick(0, gettid()), -ENOSYS);
	assert_nothing_trapped("UMCG_BACKEND=kernel without numbers");
	assert_trap_catches();
}
END_TEST

START_TEST(test_select_kernel_no_numbers)
{
	ck_assert_int_eq(umcg_backend_select(UMCG_BACKEND_KERNEL), -ENOSYS);
	ck_assert_int_eq(umcg_backend_select(UMCG_BACKEND_EMULATED), 0);
	exercise();
	assert_nothing_trapped("umcg_backend_select(KERNEL) without numbers");
	assert_trap_catches();
}
END_TEST

START_TEST(test_emulated_ignores_numbers)
{
	setenv("UMCG_BACKEND", "emulated", 1);
	setenv("UMCG_SYSCALL_NRS", "451,452,453", 1);
	exercise();
	assert_nothing_trapped("UMCG_BACKEND=emulated with UMCG_SYSCALL_NRS");
	assert_trap_catches();
}
END_TEST

START_TEST(test_explicit_numbers_probe_only)
{
	static const long nrs[3] = { 451, 452, 453 };
	unsigned int n;

	setenv("UMCG_SYSCALL_NRS", "451,452,453", 1);
	ck_assert_int_eq(umcg_backend_active(), UMCG_BACKEND_EMULATED);
	ck_assert_msg(strstr(umcg_backend_reason(), "probe"),
		      "reason does not mention the probe: %s", umcg_backend_reason());

	/* What was called is a non-empty prefix of the documented probe;
	 * its first call failed (-ENOSYS from the trap), so it stopped. */
	n = assert_probe_only(nrs, 1, "UMCG_SYSCALL_NRS=451,452,453");
	ck_assert_msg(n == 1, "the probe went on after a wrong answer (%u calls)", n);

	/* After the choice, the emulation calls nothing of the range. */
	exercise();
	ck_assert_msg(nr_trapped == n, "%u more calls after the probe", nr_trapped - n);
	assert_trap_catches();
}
END_TEST

START_TEST(test_explicit_numbers_kernel_forced)
{
	setenv("UMCG_BACKEND", "kernel", 1);
	setenv("UMCG_SYSCALL_NRS", "451,452,453", 1);
	ck_assert_int_eq(umcg_backend_active(), -ENOSYS);
	/* Only the probe's first call; then every call fails without trying. */
	ck_assert_uint_eq(nr_trapped, 1);
	ck_assert_int_eq(records[0].nr, 451);
	ck_assert_int_eq(umcg_ctl(UMCG_CTL_UNREGISTER, NULL, 0), -ENOSYS);
	ck_assert_int_eq(umcg_wait(0, 0), -ENOSYS);
	ck_assert_int_eq(umcg_kick(0, gettid()), -ENOSYS);
	ck_assert_uint_eq(nr_trapped, 1);
}
END_TEST

/* Whether this process may install a seccomp filter; asked in a child. */
static bool seccomp_usable(void)
{
	pid_t pid = fork();
	int status;

	if (pid < 0)
		return false;
	if (pid == 0) {
		if (install_trap() || syscall(451, 0, 0, 0) != -1 || errno != ENOSYS)
			_exit(1);
		_exit(nr_trapped == 1 ? 0 : 1);
	}
	return waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

static Suite *noblind_suite(void)
{
	Suite *s = suite_create("noblind");
	TCase *tc = tcase_create("no-numbers");

	tcase_add_checked_fixture(tc, setup, NULL);
	tcase_set_timeout(tc, 20);
	tcase_add_test(tc, test_auto_unset_env);
	tcase_add_test(tc, test_auto_env_auto);
	tcase_add_test(tc, test_env_kernel_no_numbers);
	tcase_add_test(tc, test_select_kernel_no_numbers);
	suite_add_tcase(s, tc);

	tc = tcase_create("explicit-numbers");
	tcase_add_checked_fixture(tc, setup, NULL);
	tcase_set_timeout(tc, 20);
	tcase_add_test(tc, test_emulated_ignores_numbers);
	tcase_add_test(tc, test_explicit_numbers_probe_only);
	tcase_add_test(tc, test_explicit_numbers_kernel_forced);
	suite_add_tcase(s, tc);
	return s;
}

static int prepare(void)
{
	if (access("/sys/kernel/umcg/syscalls", F_OK) == 0) {
		printf("test-noblind: this kernel publishes its UMCG syscall numbers; skipped\n");
		return 77;
	}
	if (!seccomp_usable()) {
		printf("test-noblind: cannot install a seccomp filter here; skipped\n");
		return 77;
	}
	return 0;
}

H_TEST_MAIN(noblind_suite, prepare)

#else /* !__x86_64__ */

static int prepare(void)
{
	printf("test-noblind: x86_64 only; skipped\n");
	return 77;
}

static Suite *noblind_suite(void)
{
	return suite_create("noblind");
}

H_TEST_MAIN(noblind_suite, prepare)

#endif
