/* SPDX-License-Identifier: MIT */
/*
 * test_io.c - the blocking wrappers of <umcg/io.h>, with a real server.
 *
 * Each test runs in its own process (Check's fork mode) with a tiny
 * scheduler on the raw ABI: one server thread and one worker thread. The
 * server loop is doc/umcg-abi.md §7 rule 8 (RUNNABLE|TF_COND_WAIT, take
 * the list, next_tid, umcg_wait() with a 2 ms deadline so that it can
 * notice the end of the test) and it keeps books, which the tests read:
 *
 *	wakeups	umcg_wait() returns that were not timeouts: someone woke it;
 *	blocks	times it found the worker it had run BLOCKED;
 *	pushes	workers it took from its runnable list.
 *
 * "The call freed its server" is: `blocks` went up while the worker was
 * still inside the call, the worker's state was BLOCKED, and once the call
 * could complete the worker was pushed (`pushes` went up). "The call cost
 * no scheduling" is: none of the three moved across the call. While the
 * worker runs the server sleeps, so only the worker can move them.
 *
 * To know that a worker sleeps inside the system call itself (and not
 * just between umcg_block_begin() and the call), the tests read
 * /proc/self/task/<tid>/syscall.
 *
 * The books are exact on the emulation. On the kernel backend the kernel
 * decides what blocks, so the tests skip what only the emulation promises
 * (that a call which need not sleep costs no scheduling, that the kick
 * signal never interrupts a wrapper). If no backend can run, every test
 * would fail for that reason alone: the program exits with 77 (skipped).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <umcg/io.h>

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <umcg/umcg.h>

#include "test_common.h"

#define NSEC_PER_MSEC 1000000LL
#define NSEC_PER_SEC 1000000000LL
#define SERVER_TICK_NS (2 * NSEC_PER_MSEC)
#define WAIT_LIMIT_NS (5 * NSEC_PER_SEC) /* for anything the tests wait on */
#define ERRNO_SENTINEL 4242 /* no real errno has this value */

/* ---- the harness ----------------------------------------------------------
 *
 * One per test process. Fields marked (atomic) are read and written with
 * <stdatomic.h> through h_atomic() (tests/common); the others belong to one
 * thread at a time.
 */
struct counts {
	unsigned long wakeups, blocks, pushes;
};

static struct harness {
	struct umcg_task srv; /* the server's ABI block */
	struct umcg_task wk; /* the worker's */
	pthread_t srv_thread, wk_thread;
	bool wk_joined;
	pid_t srv_tid, wk_tid; /* (atomic) */
	int srv_ready; /* (atomic) 1 registered, -1 failed */
	int wk_ready; /* (atomic) 1 registered, -1 failed */
	int stop; /* (atomic) the server's loop ends */
	int phase; /* (atomic) 1: worker in the call; 2: back */
	struct counts books; /* (atomic) server's books, see the header */
	void (*body)(void); /* what the worker runs */
	/* Results of the body, read by the main thread after the join. */
	long ret;
	int err_after; /* errno after the call */
	struct counts before, after;
	long long elapsed_ns;
} h;

static bool emulated;

static long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * NSEC_PER_SEC + ts.tv_nsec;
}

static void sleep_ms(long ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * NSEC_PER_MSEC };

	while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
		;
}

static unsigned long load_ul(unsigned long *p)
{
	return atomic_load_explicit(h_atomic(p), memory_order_acquire);
}

static void add_ul(unsigned long *p)
{
	/* Release: pairs with load_ul() in other threads. */
	atomic_fetch_add_explicit(h_atomic(p), 1, memory_order_release);
}

static struct counts books(void)
{
	struct counts c = {
		.wakeups = load_ul(&h.books.wakeups),
		.blocks = load_ul(&h.books.blocks),
		.pushes = load_ul(&h.books.pushes),
	};
	return c;
}

static void *server_main(void *arg)
{
	struct umcg_task *list, *pos, *tmp;
	bool queued = false, current = false;
	struct timespec ts;
	int ret;

	(void)arg;
	h.srv.state = UMCG_TASK_RUNNING;
	h.srv.server_tid = (uint32_t)gettid();
	ret = umcg_ctl(UMCG_CTL_REGISTER, &h.srv, CLOCK_MONOTONIC);
	atomic_store_explicit(h_atomic(&h.srv_tid), gettid(), memory_order_release);
	atomic_store_explicit(h_atomic(&h.srv_ready), ret ? -1 : 1, memory_order_release);
	if (ret)
		return NULL;
	for (;;) {
		/* seq_cst: a worker that blocks or pushes itself after this
		 * store finds us RUNNABLE and wakes us (§7 rule 7). */
		atomic_store_explicit(h_atomic(&h.srv.state),
				      UMCG_TASK_RUNNABLE | UMCG_TF_COND_WAIT, memory_order_seq_cst);
		list = umcg_runnable_take(&h.srv);
		umcg_runnable_for_each(pos, tmp, list) {
			ck_assert_ptr_eq(pos, &h.wk);
			add_ul(&h.books.pushes);
			queued = true;
			current = false;
		}
		if (current && (atomic_load_explicit(h_atomic(&h.wk.state), memory_order_acquire) &
				UMCG_TASK_MASK) == UMCG_TASK_BLOCKED) {
			add_ul(&h.books.blocks);
			current = false;
		}
		if (atomic_load_explicit(h_atomic(&h.stop), memory_order_acquire))
			break;
		if (queued)
			h.srv.next_tid = (uint32_t)atomic_load_explicit(h_atomic(&h.wk_tid),
									memory_order_acquire);
		clock_gettime(CLOCK_MONOTONIC, &ts);
		ret = umcg_wait(0,
				(uint64_t)(ts.tv_sec * NSEC_PER_SEC + ts.tv_nsec) + SERVER_TICK_NS);
		ck_assert_msg(ret == 0 || ret == -ETIMEDOUT || ret == -EAGAIN,
			      "server umcg_wait: %d", ret);
		if (ret != -ETIMEDOUT)
			add_ul(&h.books.wakeups);
		if (queued) {
			if (!h.srv.next_tid) {
				queued = false;
				current = true;
			} else {
				h.srv.next_tid = 0;
			}
		}
	}
	atomic_store_explicit(h_atomic(&h.srv.state), UMCG_TASK_RUNNING, memory_order_seq_cst);
	ck_assert_int_eq(umcg_ctl(UMCG_CTL_UNREGISTER, NULL, 0), 0);
	return NULL;
}

static void *worker_main(void *arg)
{
	int ret;

	(void)arg;
	h.wk.state = UMCG_TASK_BLOCKED;
	h.wk.server_tid =
		(uint32_t)atomic_load_explicit(h_atomic(&h.srv_tid), memory_order_acquire);
	/* Published to the server by the registration's push. */
	atomic_store_explicit(h_atomic(&h.wk_tid), gettid(), memory_order_release);
	ret = umcg_ctl(UMCG_CTL_REGISTER | UMCG_CTL_WORKER, &h.wk, CLOCK_MONOTONIC);
	atomic_store_explicit(h_atomic(&h.wk_ready), ret ? -1 : 1, memory_order_release);
	if (ret)
		return NULL;
	h.body();
	ck_assert_int_eq(umcg_ctl(UMCG_CTL_UNREGISTER, NULL, 0), 0);
	return NULL;
}

/* Wait until *@p >= @v (an int or a counter), failing the test after a while. */
#define WAIT_GE(p, v, what)                                                                    \
	do {                                                                                   \
		long long deadline_ = now_ns() + WAIT_LIMIT_NS;                                \
		while (atomic_load_explicit(h_atomic((p)), memory_order_acquire) < (v)) {      \
			ck_assert_msg(now_ns() < deadline_, "timed out waiting for %s", what); \
			sleep_ms(1);                                                           \
		}                                                                              \
	} while (0)

/* Start the server, then a worker that runs @body. */
static void start(void (*body)(void))
{
	h.body = body;
	ck_assert_int_eq(pthread_create(&h.srv_thread, NULL, server_main, NULL), 0);
	WAIT_GE(&h.srv_ready, 1, "the server");
	ck_assert_int_eq(pthread_create(&h.wk_thread, NULL, worker_main, NULL), 0);
	WAIT_GE(&h.wk_ready, 1, "the worker");
}

/* Join the worker (unless the test did), then stop and join the server. */
static void finish(void)
{
	if (!h.wk_joined)
		ck_assert_int_eq(pthread_join(h.wk_thread, NULL), 0);
	h.wk_joined = true;
	atomic_store_explicit(h_atomic(&h.stop), 1, memory_order_release);
	ck_assert_int_eq(pthread_join(h.srv_thread, NULL), 0);
}

/* The system call thread @tid sleeps in right now, or -1 if it runs. */
static long in_syscall(pid_t tid)
{
	char path[64], line[256];
	long nr = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/task/%d/syscall", (int)tid);
	f = fopen(path, "r");
	ck_assert_msg(f != NULL, "cannot open %s", path);
	if (fgets(line, sizeof(line), f) && strncmp(line, "running", 7))
		nr = strtol(line, NULL, 10);
	fclose(f);
	return nr;
}

static void wait_in_syscall(pid_t tid, long nr)
{
	long long deadline = now_ns() + WAIT_LIMIT_NS;

	while (in_syscall(tid) != nr) {
		ck_assert_msg(now_ns() < deadline, "thread %d never slept in syscall %ld", (int)tid,
			      nr);
		sleep_ms(1);
	}
}

/*
 * The worker is asleep in its call and its server has moved on: the server
 * saw it BLOCKED, it is BLOCKED now, and it has not come back from the call.
 * Then wait until it sleeps in system call @nr.
 */
/*
 * The worker sleeps in syscall @nr, or in @plain_nr: the plain call, which
 * is what runs on the kernel backend, and on the emulation where the
 * kernel does not support the non-blocking first try (RWF_NOWAIT on pipes
 * before Linux 6.4).
 */
static void expect_worker_blocked_in2(long nr, long plain_nr)
{
	pid_t tid = atomic_load_explicit(h_atomic(&h.wk_tid), memory_order_acquire);
	long long deadline = now_ns() + WAIT_LIMIT_NS;
	long in;

	WAIT_GE(&h.phase, 1, "the worker to start its call");
	WAIT_GE(&h.books.blocks, 1UL, "the server to see its worker block");
	ck_assert_uint_eq(atomic_load_explicit(h_atomic(&h.wk.state), memory_order_acquire) &
				  UMCG_TASK_MASK,
			  UMCG_TASK_BLOCKED);
	while ((in = in_syscall(tid)) != nr && in != plain_nr) {
		ck_assert_msg(now_ns() < deadline, "thread %d never slept in syscall %ld or %ld",
			      (int)tid, nr, plain_nr);
		sleep_ms(1);
	}
	ck_assert_int_eq(atomic_load_explicit(h_atomic(&h.phase), memory_order_acquire), 1);
}

static void expect_worker_blocked_in(long nr)
{
	expect_worker_blocked_in2(nr, nr);
}

/* Does this kernel take RWF_NOWAIT on @fd (so a cached read is free)? */
static bool nowait_supported(int fd)
{
	char c;
	struct iovec iov = { .iov_base = &c, .iov_len = 1 };

	/* One byte: a zero-length read returns before the flags are seen. */
	return preadv2(fd, &iov, 1, 0, RWF_NOWAIT) != -1 || errno != EOPNOTSUPP;
}

/* After the worker came back from a call that had blocked: it was pushed. */
static void expect_worker_returned(void)
{
	ck_assert_int_eq(atomic_load_explicit(h_atomic(&h.phase), memory_order_acquire), 2);
	ck_assert_uint_ge(load_ul(&h.books.blocks), 1);
	ck_assert_uint_ge(h.after.pushes, h.before.pushes + 1);
}

/* The body's call cost no scheduling (checked on the emulation only). */
static void expect_no_scheduling(void)
{
	if (!emulated)
		return;
	ck_assert_uint_eq(h.after.wakeups, h.before.wakeups);
	ck_assert_uint_eq(h.after.blocks, h.before.blocks);
	ck_assert_uint_eq(h.after.pushes, h.before.pushes);
}

/*
 * CALL() - in a worker body: record the books, set errno to a sentinel,
 * run @expr (a wrapper call), record its value, errno, the time it took and
 * the books again.
 */
#define CALL(expr)                                                                  \
	do {                                                                        \
		long long t0_;                                                      \
		h.before = books();                                                 \
		atomic_store_explicit(h_atomic(&h.phase), 1, memory_order_release); \
		errno = ERRNO_SENTINEL;                                             \
		t0_ = now_ns();                                                     \
		h.ret = (long)(expr);                                               \
		h.elapsed_ns = now_ns() - t0_;                                      \
		h.err_after = errno;                                                \
		h.after = books();                                                  \
		atomic_store_explicit(h_atomic(&h.phase), 2, memory_order_release); \
	} while (0)

/* Test data shared by the main thread and the worker body. */
static int fds[2];
static int lfd; /* a listening socket */
static char buf[256 * 1024];
static uint32_t word;

static void make_pipe(int flags)
{
	ck_assert_int_eq(pipe2(fds, flags), 0);
}

static void make_socketpair(int type)
{
	ck_assert_int_eq(socketpair(AF_UNIX, type, 0, fds), 0);
}

/* An abstract-namespace Unix address private to this test process. */
static socklen_t test_addr(struct sockaddr_un *sun)
{
	memset(sun, 0, sizeof(*sun));
	sun->sun_family = AF_UNIX;
	snprintf(sun->sun_path + 1, sizeof(sun->sun_path) - 1, "umcg-test-io-%d", (int)getpid());
	return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + strlen(sun->sun_path + 1));
}

static void make_listener(int flags)
{
	struct sockaddr_un sun;
	socklen_t len = test_addr(&sun);

	lfd = socket(AF_UNIX, SOCK_STREAM | flags, 0);
	ck_assert_int_ge(lfd, 0);
	ck_assert_int_eq(bind(lfd, (struct sockaddr *)&sun, len), 0);
	ck_assert_int_eq(listen(lfd, 8), 0);
}

static int connect_client(int flags)
{
	struct sockaddr_un sun;
	socklen_t len = test_addr(&sun);
	int fd = socket(AF_UNIX, SOCK_STREAM | flags, 0);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(connect(fd, (struct sockaddr *)&sun, len), 0);
	return fd;
}

static void put(int fd, const char *s)
{
	ck_assert_int_eq(write(fd, s, strlen(s)), (ssize_t)strlen(s));
}

static void expect_data(const char *s)
{
	ck_assert_int_eq(h.ret, (long)strlen(s));
	ck_assert_mem_eq(buf, s, strlen(s));
	ck_assert_int_eq(h.err_after, ERRNO_SENTINEL);
}

/* ---- read ------------------------------------------------------------- */

static void body_read(void)
{
	CALL(umcg_read(fds[0], buf, sizeof(buf)));
}

START_TEST(test_read_blocks_and_frees_server)
{
	make_pipe(0);
	start(body_read);
	expect_worker_blocked_in(SYS_read);
	put(fds[1], "hello");
	finish();
	expect_worker_returned();
	expect_data("hello");
}
END_TEST

START_TEST(test_read_ready_costs_nothing)
{
	make_pipe(0);
	put(fds[1], "ready");
	start(body_read);
	finish();
	expect_data("ready");
	expect_no_scheduling();
}
END_TEST

START_TEST(test_read_nonblocking_fd_eagain)
{
	make_pipe(O_NONBLOCK);
	start(body_read);
	finish();
	ck_assert_int_eq(h.ret, -EAGAIN);
	ck_assert_int_eq(h.err_after, ERRNO_SENTINEL);
	expect_no_scheduling();
}
END_TEST

static void body_readv_pread(void)
{
	struct iovec iov[3] = {
		{ buf, 3 },
		{ buf + 100, 0 },
		{ buf + 3, 4 },
	};

	CALL(umcg_readv(fds[0], iov, 3));
}

START_TEST(test_readv_scatters)
{
	make_pipe(0);
	put(fds[1], "abcdefgh");
	start(body_readv_pread);
	finish();
	ck_assert_int_eq(h.ret, 7);
	ck_assert_mem_eq(buf, "abcdefg", 7);
	expect_no_scheduling();
}
END_TEST

/* A regular file in the page cache: pread, pwrite, short read at the end. */
static int file_fd;

static void body_file(void)
{
	char tmp[16];

	ck_assert_int_eq(umcg_pwrite(file_fd, "0123456789", 10, 0), 10);
	ck_assert_int_eq(umcg_pread(file_fd, tmp, 4, 3), 4);
	ck_assert_mem_eq(tmp, "3456", 4);
	ck_assert_int_eq(umcg_pread(file_fd, tmp, 4, -1), -EINVAL);
	ck_assert_int_eq(lseek(file_fd, 0, SEEK_SET), 0);
	/* Cached data, read up to the end of the file: a short count. */
	CALL(umcg_read(file_fd, buf, sizeof(buf)));
}

START_TEST(test_file_pread_pwrite_short_read)
{
	char path[] = "/tmp/umcg-test-io-XXXXXX";

	file_fd = mkstemp(path);
	ck_assert_int_ge(file_fd, 0);
	unlink(path);
	start(body_file);
	finish();
	expect_data("0123456789");
	/* The data was cached: no sleep, no scheduling, where the kernel lets
	 * the wrapper find that out (RWF_NOWAIT on this file system). */
	if (nowait_supported(file_fd))
		expect_no_scheduling();
	else
		printf("test_file_pread_pwrite_short_read: no RWF_NOWAIT on this file "
		       "system, scheduling not checked\n");
}
END_TEST

/* ---- write ------------------------------------------------------------ */

#define BIG_WRITE (200 * 1024) /* more than a pipe holds (64 KiB) */

static void body_write_big(void)
{
	CALL(umcg_write(fds[1], buf, BIG_WRITE));
}

START_TEST(test_write_full_pipe_blocks_and_completes)
{
	static char got[BIG_WRITE];
	size_t have = 0;
	ssize_t n;
	size_t i;

	for (i = 0; i < BIG_WRITE; i++)
		buf[i] = (char)(i * 7 + i / 251);
	make_pipe(0);
	start(body_write_big);
	/* 64 KiB went in at once; the rest is written with pwritev2() (or,
	 * where RWF_NOWAIT is missing, all of it with write()). */
	expect_worker_blocked_in2(SYS_pwritev2, SYS_write);
	while (have < BIG_WRITE) {
		n = read(fds[0], got + have, BIG_WRITE - have);
		ck_assert_int_gt(n, 0);
		have += (size_t)n;
	}
	finish();
	/* All of it, as write() on a blocking pipe: no short count. */
	ck_assert_int_eq(h.ret, BIG_WRITE);
	ck_assert_mem_eq(got, buf, BIG_WRITE);
	ck_assert_int_eq(h.err_after, ERRNO_SENTINEL);
	expect_worker_returned();
}
END_TEST

static void body_write_small(void)
{
	struct iovec iov[2] = { { "wri", 3 }, { "tev", 3 } };

	ck_assert_int_eq(umcg_writev(fds[1], iov, 2), 6);
	CALL(umcg_write(fds[1], "write", 5));
}

START_TEST(test_write_with_room_costs_nothing)
{
	make_pipe(0);
	start(body_write_small);
	finish();
	ck_assert_int_eq(h.ret, 5);
	ck_assert_int_eq(read(fds[0], buf, sizeof(buf)), 11);
	ck_assert_mem_eq(buf, "writevwrite", 11);
	expect_no_scheduling();
}
END_TEST

/* ---- sockets ------------------------------------------------------------ */

static void body_recv(void)
{
	CALL(umcg_recv(fds[0], buf, sizeof(buf), 0));
}

START_TEST(test_recv_blocks_and_frees_server)
{
	make_socketpair(SOCK_STREAM);
	start(body_recv);
	expect_worker_blocked_in(SYS_recvfrom);
	put(fds[1], "socket");
	finish();
	expect_worker_returned();
	expect_data("socket");
}
END_TEST

START_TEST(test_recv_ready_costs_nothing)
{
	make_socketpair(SOCK_STREAM);
	put(fds[1], "ready");
	start(body_recv);
	finish();
	expect_data("ready");
	expect_no_scheduling();
}
END_TEST

static void body_recv_waitall(void)
{
	CALL(umcg_recv(fds[0], buf, 12, MSG_WAITALL));
}

START_TEST(test_recv_waitall_waits_for_the_rest)
{
	make_socketpair(SOCK_STREAM);
	put(fds[1], "first-");
	start(body_recv_waitall);
	/* Half the data arrived: the rest is waited for, with the server free
	 * (the rest goes through recvmsg()). */
	expect_worker_blocked_in2(SYS_recvmsg, SYS_recvfrom);
	put(fds[1], "second");
	finish();
	expect_worker_returned();
	expect_data("first-second");
}
END_TEST

static void body_recvmsg_sendmsg(void)
{
	struct iovec out[2] = { { "msg", 3 }, { "-sent", 5 } };
	struct msghdr m = { .msg_iov = out, .msg_iovlen = 2 };
	struct iovec in = { buf, sizeof(buf) };

	ck_assert_int_eq(umcg_sendmsg(fds[0], &m, 0), 8);
	ck_assert_int_eq(umcg_sendto(fds[0], "+to", 3, 0, NULL, 0), 3);
	ck_assert_int_eq(umcg_send(fds[0], "+send", 5, 0), 5);
	m = (struct msghdr){ .msg_iov = &in, .msg_iovlen = 1 };
	CALL(umcg_recvmsg(fds[0], &m, 0));
}

START_TEST(test_sendmsg_recvmsg)
{
	char echo[64];
	ssize_t n;

	make_socketpair(SOCK_STREAM);
	start(body_recvmsg_sendmsg);
	/* Echo back what the worker sent once all of it is here. */
	for (n = 0; n < 16;) {
		ssize_t r = read(fds[1], echo + n, sizeof(echo) - (size_t)n);

		ck_assert_int_gt(r, 0);
		n += r;
	}
	ck_assert_int_eq(n, 16);
	ck_assert_int_eq(write(fds[1], echo, (size_t)n), n);
	finish();
	expect_data("msg-sent+to+send");
}
END_TEST

static void body_recvfrom_dgram(void)
{
	struct sockaddr_un from;
	socklen_t len = sizeof(from);

	CALL(umcg_recvfrom(fds[0], buf, sizeof(buf), 0, (struct sockaddr *)&from, &len));
}

START_TEST(test_recvfrom_dgram_blocks)
{
	make_socketpair(SOCK_DGRAM);
	start(body_recvfrom_dgram);
	expect_worker_blocked_in(SYS_recvfrom);
	put(fds[1], "datagram");
	finish();
	expect_worker_returned();
	expect_data("datagram");
}
END_TEST

static int accepted;

static void body_accept(void)
{
	CALL(accepted = umcg_accept(lfd, NULL, NULL));
}

START_TEST(test_accept_blocks_and_frees_server)
{
	int c;

	make_listener(0);
	start(body_accept);
	expect_worker_blocked_in(SYS_accept);
	c = connect_client(0);
	finish();
	expect_worker_returned();
	ck_assert_int_ge(h.ret, 0);
	ck_assert_int_eq(h.err_after, ERRNO_SENTINEL);
	put(c, "x");
	ck_assert_int_eq(read(accepted, buf, 1), 1);
}
END_TEST

static void body_accept4(void)
{
	CALL(accepted = umcg_accept4(lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK));
}

START_TEST(test_accept_ready_costs_nothing)
{
	make_listener(0);
	connect_client(0);
	start(body_accept4);
	finish();
	ck_assert_int_ge(h.ret, 0);
	ck_assert_int_eq(fcntl(accepted, F_GETFD) & FD_CLOEXEC, FD_CLOEXEC);
	ck_assert_int_eq(fcntl(accepted, F_GETFL) & O_NONBLOCK, O_NONBLOCK);
	expect_no_scheduling();
}
END_TEST

START_TEST(test_accept_nonblocking_listener_eagain)
{
	make_listener(SOCK_NONBLOCK);
	start(body_accept);
	finish();
	ck_assert_int_eq(h.ret, -EAGAIN);
	ck_assert_int_eq(h.err_after, ERRNO_SENTINEL);
	expect_no_scheduling();
}
END_TEST

static void body_connect(void)
{
	struct sockaddr_un sun;
	socklen_t len = test_addr(&sun);
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);

	ck_assert_int_ge(fd, 0);
	CALL(umcg_connect(fd, (struct sockaddr *)&sun, len));
	fds[0] = fd;
}

START_TEST(test_connect)
{
	int a;

	make_listener(0);
	start(body_connect);
	finish();
	ck_assert_int_eq(h.ret, 0);
	ck_assert_int_eq(h.err_after, ERRNO_SENTINEL);
	a = accept(lfd, NULL, NULL);
	ck_assert_int_ge(a, 0);
	put(fds[0], "c");
	ck_assert_int_eq(read(a, buf, 1), 1);
}
END_TEST

/* ---- poll, epoll -------------------------------------------------------- */

static void body_poll(void)
{
	struct pollfd p = { .fd = fds[0], .events = POLLIN };

	CALL(umcg_poll(&p, 1, -1));
	ck_assert_int_eq(p.revents, POLLIN);
}

START_TEST(test_poll_blocks_and_frees_server)
{
	make_pipe(0);
	start(body_poll);
	expect_worker_blocked_in(SYS_poll);
	put(fds[1], "p");
	finish();
	expect_worker_returned();
	ck_assert_int_eq(h.ret, 1);
	ck_assert_int_eq(h.err_after, ERRNO_SENTINEL);
}
END_TEST

START_TEST(test_poll_ready_costs_nothing)
{
	make_pipe(0);
	put(fds[1], "p");
	start(body_poll);
	finish();
	ck_assert_int_eq(h.ret, 1);
	expect_no_scheduling();
}
END_TEST

static void body_poll_timeout(void)
{
	struct pollfd p = { .fd = fds[0], .events = POLLIN };

	CALL(umcg_poll(&p, 1, 30));
}

START_TEST(test_poll_timeout)
{
	make_pipe(0);
	start(body_poll_timeout);
	finish();
	ck_assert_int_eq(h.ret, 0);
	ck_assert_int_ge(h.elapsed_ns, 30 * NSEC_PER_MSEC);
	/* It slept 30 ms with the server free. */
	ck_assert_uint_ge(h.after.blocks, h.before.blocks + 1);
	ck_assert_uint_ge(h.after.pushes, h.before.pushes + 1);
}
END_TEST

static void body_ppoll(void)
{
	struct pollfd p = { .fd = fds[0], .events = POLLIN };
	struct timespec tmo = { .tv_sec = 0, .tv_nsec = 20 * NSEC_PER_MSEC };
	sigset_t none;

	sigemptyset(&none);
	CALL(umcg_ppoll(&p, 1, &tmo, &none));
}

START_TEST(test_ppoll_timeout)
{
	make_pipe(0);
	start(body_ppoll);
	finish();
	ck_assert_int_eq(h.ret, 0);
	ck_assert_int_ge(h.elapsed_ns, 20 * NSEC_PER_MSEC);
	ck_assert_uint_ge(h.after.blocks, h.before.blocks + 1);
}
END_TEST

static int epfd;

static void body_epoll(void)
{
	struct epoll_event ev[2];

	CALL(umcg_epoll_wait(epfd, ev, 2, -1));
	ck_assert_uint_eq(ev[0].events, EPOLLIN);
	ck_assert_int_eq(ev[0].data.fd, fds[0]);
}

START_TEST(test_epoll_wait_blocks_and_frees_server)
{
	struct epoll_event ev = { .events = EPOLLIN };

	make_pipe(0);
	epfd = epoll_create1(0);
	ev.data.fd = fds[0];
	ck_assert_int_eq(epoll_ctl(epfd, EPOLL_CTL_ADD, fds[0], &ev), 0);
	start(body_epoll);
	expect_worker_blocked_in(SYS_epoll_wait);
	put(fds[1], "e");
	finish();
	expect_worker_returned();
	ck_assert_int_eq(h.ret, 1);
}
END_TEST

static void body_epoll_pwait_ready(void)
{
	struct epoll_event ev[2];
	sigset_t none;

	sigemptyset(&none);
	CALL(umcg_epoll_pwait(epfd, ev, 2, 1000, &none));
}

START_TEST(test_epoll_pwait_ready_costs_nothing)
{
	struct epoll_event ev = { .events = EPOLLIN };

	make_pipe(0);
	put(fds[1], "e");
	epfd = epoll_create1(0);
	ck_assert_int_eq(epoll_ctl(epfd, EPOLL_CTL_ADD, fds[0], &ev), 0);
	start(body_epoll_pwait_ready);
	finish();
	ck_assert_int_eq(h.ret, 1);
	expect_no_scheduling();
}
END_TEST

/* ---- sleeps --------------------------------------------------------------- */

static void body_nanosleep(void)
{
	struct timespec req = { .tv_sec = 0, .tv_nsec = 100 * NSEC_PER_MSEC };

	CALL(umcg_nanosleep(&req, NULL));
}

START_TEST(test_nanosleep_blocks_and_frees_server)
{
	start(body_nanosleep);
	expect_worker_blocked_in(SYS_clock_nanosleep);
	finish();
	expect_worker_returned();
	ck_assert_int_eq(h.ret, 0);
	ck_assert_int_eq(h.err_after, ERRNO_SENTINEL);
	ck_assert_int_ge(h.elapsed_ns, 100 * NSEC_PER_MSEC);
}
END_TEST

static void body_sleep_zero(void)
{
	struct timespec zero = { 0, 0 }, bad = { 0, NSEC_PER_SEC }, past;

	clock_gettime(CLOCK_MONOTONIC, &past);
	past.tv_sec -= 1;
	ck_assert_int_eq(umcg_nanosleep(&bad, NULL), -EINVAL);
	ck_assert_int_eq(umcg_clock_nanosleep(CLOCK_MONOTONIC, 0, &bad, NULL), -EINVAL);
	ck_assert_int_eq(umcg_clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &past, NULL), 0);
	ck_assert_int_eq(umcg_clock_nanosleep(CLOCK_MONOTONIC, 0, &zero, NULL), 0);
	CALL(umcg_nanosleep(&zero, NULL));
}

START_TEST(test_zero_and_past_sleeps_cost_nothing)
{
	start(body_sleep_zero);
	finish();
	ck_assert_int_eq(h.ret, 0);
	ck_assert_int_eq(h.err_after, ERRNO_SENTINEL);
	/* CALL() covers the last one; the others are checked against the
	 * server's books at the end of the body. */
	expect_no_scheduling();
	if (emulated)
		ck_assert_uint_eq(load_ul(&h.books.blocks), 0);
}
END_TEST

static void body_clock_nanosleep_abs(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	t.tv_nsec += 50 * NSEC_PER_MSEC;
	if (t.tv_nsec >= NSEC_PER_SEC) {
		t.tv_sec++;
		t.tv_nsec -= NSEC_PER_SEC;
	}
	CALL(umcg_clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &t, NULL));
}

START_TEST(test_clock_nanosleep_abs_blocks)
{
	start(body_clock_nanosleep_abs);
	finish();
	ck_assert_int_eq(h.ret, 0);
	ck_assert_int_ge(h.elapsed_ns, 45 * NSEC_PER_MSEC);
	ck_assert_uint_ge(h.after.blocks, h.before.blocks + 1);
}
END_TEST

/* ---- futex ---------------------------------------------------------------- */

static void body_futex_wait(void)
{
	CALL(umcg_futex_wait(&word, 0, NULL));
}

START_TEST(test_futex_wait_blocks_and_frees_server)
{
	start(body_futex_wait);
	expect_worker_blocked_in(SYS_futex);
	atomic_store_explicit(h_atomic(&word), 1, memory_order_release);
	ck_assert_int_eq(umcg_futex_wake(&word, 1), 1);
	finish();
	expect_worker_returned();
	ck_assert_int_eq(h.ret, 0);
	ck_assert_int_eq(h.err_after, ERRNO_SENTINEL);
}
END_TEST

static void body_futex_mismatch(void)
{
	struct timespec past = { 0, 0 };

	word = 7;
	/* A value that differs wins over a deadline that passed. */
	ck_assert_int_eq(umcg_futex_wait(&word, 6, &past), -EAGAIN);
	ck_assert_int_eq(umcg_futex_wait(&word, 7, &past), -ETIMEDOUT);
	ck_assert_int_eq(umcg_futex_wake(&word, 0), -EINVAL);
	ck_assert_int_eq(umcg_futex_wake((uint32_t *)((char *)&word + 1), 1), -EINVAL);
	ck_assert_int_eq(umcg_futex_wait(NULL, 0, NULL), -EFAULT);
	CALL(umcg_futex_wait(&word, 0, NULL));
}

START_TEST(test_futex_wait_mismatch_costs_nothing)
{
	start(body_futex_mismatch);
	finish();
	ck_assert_int_eq(h.ret, -EAGAIN);
	ck_assert_int_eq(h.err_after, ERRNO_SENTINEL);
	expect_no_scheduling();
	if (emulated)
		ck_assert_uint_eq(load_ul(&h.books.blocks), 0);
}
END_TEST

static void body_futex_timeout(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	t.tv_nsec += 30 * NSEC_PER_MSEC;
	if (t.tv_nsec >= NSEC_PER_SEC) {
		t.tv_sec++;
		t.tv_nsec -= NSEC_PER_SEC;
	}
	CALL(umcg_futex_wait(&word, 0, &t));
}

START_TEST(test_futex_wait_timeout)
{
	start(body_futex_timeout);
	finish();
	ck_assert_int_eq(h.ret, -ETIMEDOUT);
	ck_assert_int_ge(h.elapsed_ns, 25 * NSEC_PER_MSEC);
	ck_assert_uint_ge(h.after.blocks, h.before.blocks + 1);
}
END_TEST

/* ---- waitpid, flock ------------------------------------------------------- */

static pid_t child;

static void body_waitpid(void)
{
	int status = 0;

	CALL(umcg_waitpid(child, &status, 0));
	ck_assert(WIFEXITED(status));
	ck_assert_int_eq(WEXITSTATUS(status), 7);
}

START_TEST(test_waitpid_blocks_and_frees_server)
{
	char c;

	/* The child waits for a byte on the pipe, then exits with 7. */
	make_pipe(0);
	child = fork();
	ck_assert_int_ge(child, 0);
	if (child == 0) {
		close(fds[1]);
		_exit(read(fds[0], &c, 1) == 1 ? 7 : 1);
	}
	start(body_waitpid);
	expect_worker_blocked_in(SYS_wait4);
	put(fds[1], "x");
	finish();
	expect_worker_returned();
	ck_assert_int_eq(h.ret, child);
	ck_assert_int_eq(h.err_after, ERRNO_SENTINEL);
}
END_TEST

static char lock_path[] = "/tmp/umcg-test-io-lock-XXXXXX";

static void body_flock(void)
{
	int fd = open(lock_path, O_RDWR);

	ck_assert_int_ge(fd, 0);
	CALL(umcg_flock(fd, LOCK_EX));
	ck_assert_int_eq(umcg_flock(fd, LOCK_UN), 0);
	close(fd);
}

START_TEST(test_flock_blocks_and_frees_server)
{
	int fd = mkstemp(lock_path);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(flock(fd, LOCK_EX), 0);
	start(body_flock);
	expect_worker_blocked_in(SYS_flock);
	ck_assert_int_eq(flock(fd, LOCK_UN), 0);
	finish();
	unlink(lock_path);
	expect_worker_returned();
	ck_assert_int_eq(h.ret, 0);
	ck_assert_int_eq(h.err_after, ERRNO_SENTINEL);
}
END_TEST

/* ---- signals and cancellation -------------------------------------------- */

static void body_poll_long(void)
{
	struct pollfd p = { .fd = fds[0], .events = POLLIN };

	CALL(umcg_poll(&p, 1, 300));
}

/* The kick signal, delivered to a worker asleep in a wrapper, interrupts
 * nothing (without the mask, poll() would fail with EINTR). */
START_TEST(test_kick_signal_does_not_interrupt)
{
	pid_t tid;
	int i;

	if (!emulated)
		return;
	make_pipe(0);
	start(body_poll_long);
	expect_worker_blocked_in(SYS_poll);
	tid = atomic_load_explicit(h_atomic(&h.wk_tid), memory_order_acquire);
	for (i = 0; i < 3; i++) {
		ck_assert_int_eq(syscall(SYS_tgkill, getpid(), tid, umcg_kick_signal()), 0);
		sleep_ms(10);
	}
	finish();
	ck_assert_int_eq(h.ret, 0);
	ck_assert_int_ge(h.elapsed_ns, 300 * NSEC_PER_MSEC);
}
END_TEST

static int usr1_seen;

static void on_usr1(int sig)
{
	(void)sig;
	atomic_store_explicit(h_atomic(&usr1_seen), 1, memory_order_release);
}

static struct timespec rem;

static void body_nanosleep_long(void)
{
	struct timespec req = { .tv_sec = 5, .tv_nsec = 0 };

	CALL(umcg_nanosleep(&req, &rem));
}

/* A signal of the program interrupts a wrapped sleep as it would the plain
 * one: -EINTR and the time left. */
START_TEST(test_user_signal_interrupts_sleep)
{
	struct sigaction sa = { .sa_handler = on_usr1 };

	sigemptyset(&sa.sa_mask);
	ck_assert_int_eq(sigaction(SIGUSR1, &sa, NULL), 0);
	start(body_nanosleep_long);
	expect_worker_blocked_in(SYS_clock_nanosleep);
	ck_assert_int_eq(pthread_kill(h.wk_thread, SIGUSR1), 0);
	finish();
	ck_assert_int_eq(usr1_seen, 1);
	ck_assert_int_eq(h.ret, -EINTR);
	ck_assert_int_eq(h.err_after, ERRNO_SENTINEL);
	ck_assert(rem.tv_sec > 0 && rem.tv_sec <= 5);
	ck_assert_int_lt(h.elapsed_ns, 4 * NSEC_PER_SEC);
	expect_worker_returned();
}
END_TEST

static uint32_t state_in_cleanup;

static void note_state(void *arg)
{
	(void)arg;
	state_in_cleanup = atomic_load_explicit(h_atomic(&h.wk.state), memory_order_acquire) &
			   UMCG_TASK_MASK;
}

static void body_cancelled_read(void)
{
	pthread_cleanup_push(note_state, NULL);
	CALL(umcg_read(fds[0], buf, sizeof(buf)));
	pthread_cleanup_pop(0);
}

/* A worker cancelled while BLOCKED in a wrapper goes back to its server
 * before its own cleanup handlers run. */
START_TEST(test_cancel_returns_worker_to_server)
{
	struct counts before;
	void *res;

	make_pipe(0);
	start(body_cancelled_read);
	expect_worker_blocked_in(SYS_read);
	before = books();
	ck_assert_int_eq(pthread_cancel(h.wk_thread), 0);
	ck_assert_int_eq(pthread_join(h.wk_thread, &res), 0);
	h.wk_joined = true;
	ck_assert_ptr_eq(res, PTHREAD_CANCELED);
	ck_assert_uint_eq(state_in_cleanup, UMCG_TASK_RUNNING);
	ck_assert_uint_ge(load_ul(&h.books.pushes), before.pushes + 1);
	finish();
}
END_TEST

/* ---- bad descriptors, errno, non-workers --------------------------------- */

/* Every descriptor wrapper on @fd fails with -EBADF and leaves errno alone. */
static void check_ebadf(int fd)
{
	struct iovec iov = { buf, 1 };
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1 };
	struct sockaddr_un sun;
	socklen_t len = test_addr(&sun);
	struct epoll_event ev;

	errno = ERRNO_SENTINEL;
	ck_assert_int_eq(umcg_read(fd, buf, 1), -EBADF);
	ck_assert_int_eq(umcg_readv(fd, &iov, 1), -EBADF);
	ck_assert_int_eq(umcg_pread(fd, buf, 1, 0), -EBADF);
	ck_assert_int_eq(umcg_write(fd, buf, 1), -EBADF);
	ck_assert_int_eq(umcg_writev(fd, &iov, 1), -EBADF);
	ck_assert_int_eq(umcg_pwrite(fd, buf, 1, 0), -EBADF);
	ck_assert_int_eq(umcg_recv(fd, buf, 1, 0), -EBADF);
	ck_assert_int_eq(umcg_recvfrom(fd, buf, 1, 0, NULL, NULL), -EBADF);
	ck_assert_int_eq(umcg_recvmsg(fd, &m, 0), -EBADF);
	ck_assert_int_eq(umcg_send(fd, buf, 1, 0), -EBADF);
	ck_assert_int_eq(umcg_sendto(fd, buf, 1, 0, NULL, 0), -EBADF);
	ck_assert_int_eq(umcg_sendmsg(fd, &m, 0), -EBADF);
	ck_assert_int_eq(umcg_accept(fd, NULL, NULL), -EBADF);
	ck_assert_int_eq(umcg_accept4(fd, NULL, NULL, 0), -EBADF);
	ck_assert_int_eq(umcg_connect(fd, (struct sockaddr *)&sun, len), -EBADF);
	ck_assert_int_eq(umcg_epoll_wait(fd, &ev, 1, 10), -EBADF);
	ck_assert_int_eq(umcg_epoll_pwait(fd, &ev, 1, 10, NULL), -EBADF);
	ck_assert_int_eq(umcg_flock(fd, LOCK_EX), -EBADF);
	ck_assert_int_eq(errno, ERRNO_SENTINEL);
}

/* A descriptor number that is not open. */
static int closed_fd(void)
{
	int fd = dup(0);

	ck_assert_int_ge(fd, 0);
	close(fd);
	return fd;
}

static void body_ebadf(void)
{
	h.before = books();
	check_ebadf(-1);
	check_ebadf(closed_fd());
	h.after = books();
}

START_TEST(test_bad_fd_in_worker)
{
	start(body_ebadf);
	finish();
	/* An error the first attempt reports costs no scheduling. */
	expect_no_scheduling();
}
END_TEST

START_TEST(test_bad_fd_in_plain_thread)
{
	check_ebadf(-1);
	check_ebadf(closed_fd());
}
END_TEST

static pid_t reader_tid;

static void *plain_reader(void *arg)
{
	(void)arg;
	atomic_store_explicit(h_atomic(&reader_tid), gettid(), memory_order_release);
	h.ret = umcg_read(fds[0], buf, sizeof(buf));
	return NULL;
}

/* In a thread that is not a worker every wrapper is the plain call. */
START_TEST(test_plain_thread_plain_calls)
{
	struct pollfd p;
	struct timespec req = { 0, 10 * NSEC_PER_MSEC }, t;
	uint32_t w = 0;
	pthread_t th;
	long long t0;
	int sp[2];

	errno = ERRNO_SENTINEL;
	/* Not a worker, before and after (the kernel backend's hooks always
	 * answer 0). */
	ck_assert_int_eq(umcg_block_begin(), emulated ? -EINVAL : 0);

	make_pipe(O_NONBLOCK);
	ck_assert_int_eq(umcg_read(fds[0], buf, 1), -EAGAIN);
	put(fds[1], "plain");
	ck_assert_int_eq(umcg_read(fds[0], buf, sizeof(buf)), 5);
	ck_assert_mem_eq(buf, "plain", 5);

	p = (struct pollfd){ .fd = fds[0], .events = POLLIN };
	t0 = now_ns();
	ck_assert_int_eq(umcg_poll(&p, 1, 20), 0);
	ck_assert_int_ge(now_ns() - t0, 20 * NSEC_PER_MSEC);

	t0 = now_ns();
	ck_assert_int_eq(umcg_nanosleep(&req, NULL), 0);
	ck_assert_int_ge(now_ns() - t0, 10 * NSEC_PER_MSEC);

	clock_gettime(CLOCK_MONOTONIC, &t);
	t.tv_nsec += 10 * NSEC_PER_MSEC;
	if (t.tv_nsec >= NSEC_PER_SEC) {
		t.tv_sec++;
		t.tv_nsec -= NSEC_PER_SEC;
	}
	ck_assert_int_eq(umcg_futex_wait(&w, 0, &t), -ETIMEDOUT);
	ck_assert_int_eq(umcg_waitpid(-1, NULL, 0), -ECHILD);

	/* A blocking read in a plain thread, completed by another. */
	close(fds[0]);
	close(fds[1]);
	make_pipe(0);
	ck_assert_int_eq(pthread_create(&th, NULL, plain_reader, NULL), 0);
	WAIT_GE(&reader_tid, 1, "the reader");
	wait_in_syscall(atomic_load_explicit(h_atomic(&reader_tid), memory_order_acquire),
			SYS_read);
	put(fds[1], "later");
	ck_assert_int_eq(pthread_join(th, NULL), 0);
	ck_assert_int_eq(h.ret, 5);

	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sp), 0);
	ck_assert_int_eq(umcg_recv(sp[0], buf, 1, 0), -EAGAIN);
	ck_assert_int_eq(umcg_block_begin(), emulated ? -EINVAL : 0);
	ck_assert_int_eq(errno, ERRNO_SENTINEL);
}
END_TEST

static Suite *io_suite(void)
{
	Suite *s = suite_create("io");
	TCase *tc;

	tc = tcase_create("files");
	tcase_set_timeout(tc, 10);
	tcase_add_test(tc, test_read_blocks_and_frees_server);
	tcase_add_test(tc, test_read_ready_costs_nothing);
	tcase_add_test(tc, test_read_nonblocking_fd_eagain);
	tcase_add_test(tc, test_readv_scatters);
	tcase_add_test(tc, test_file_pread_pwrite_short_read);
	tcase_add_test(tc, test_write_full_pipe_blocks_and_completes);
	tcase_add_test(tc, test_write_with_room_costs_nothing);
	tcase_add_test(tc, test_flock_blocks_and_frees_server);
	suite_add_tcase(s, tc);

	tc = tcase_create("sockets");
	tcase_set_timeout(tc, 10);
	tcase_add_test(tc, test_recv_blocks_and_frees_server);
	tcase_add_test(tc, test_recv_ready_costs_nothing);
	tcase_add_test(tc, test_recv_waitall_waits_for_the_rest);
	tcase_add_test(tc, test_sendmsg_recvmsg);
	tcase_add_test(tc, test_recvfrom_dgram_blocks);
	tcase_add_test(tc, test_accept_blocks_and_frees_server);
	tcase_add_test(tc, test_accept_ready_costs_nothing);
	tcase_add_test(tc, test_accept_nonblocking_listener_eagain);
	tcase_add_test(tc, test_connect);
	suite_add_tcase(s, tc);

	tc = tcase_create("waits");
	tcase_set_timeout(tc, 10);
	tcase_add_test(tc, test_poll_blocks_and_frees_server);
	tcase_add_test(tc, test_poll_ready_costs_nothing);
	tcase_add_test(tc, test_poll_timeout);
	tcase_add_test(tc, test_ppoll_timeout);
	tcase_add_test(tc, test_epoll_wait_blocks_and_frees_server);
	tcase_add_test(tc, test_epoll_pwait_ready_costs_nothing);
	tcase_add_test(tc, test_waitpid_blocks_and_frees_server);
	suite_add_tcase(s, tc);

	tc = tcase_create("sleeps-futex");
	tcase_set_timeout(tc, 10);
	tcase_add_test(tc, test_nanosleep_blocks_and_frees_server);
	tcase_add_test(tc, test_zero_and_past_sleeps_cost_nothing);
	tcase_add_test(tc, test_clock_nanosleep_abs_blocks);
	tcase_add_test(tc, test_futex_wait_blocks_and_frees_server);
	tcase_add_test(tc, test_futex_wait_mismatch_costs_nothing);
	tcase_add_test(tc, test_futex_wait_timeout);
	suite_add_tcase(s, tc);

	tc = tcase_create("signals-errors");
	tcase_set_timeout(tc, 10);
	tcase_add_test(tc, test_kick_signal_does_not_interrupt);
	tcase_add_test(tc, test_user_signal_interrupts_sleep);
	tcase_add_test(tc, test_cancel_returns_worker_to_server);
	tcase_add_test(tc, test_bad_fd_in_worker);
	tcase_add_test(tc, test_bad_fd_in_plain_thread);
	tcase_add_test(tc, test_plain_thread_plain_calls);
	suite_add_tcase(s, tc);
	return s;
}

static int prepare(void)
{
	int backend = umcg_backend_active();

	if (backend < 0) {
		printf("test-io: no UMCG backend can run (%s): skipped\n", umcg_backend_reason());
		return 77;
	}
	emulated = backend == UMCG_BACKEND_EMULATED;
	printf("test-io: backend %s\n", umcg_backend_name(backend));
	return 0;
}

H_TEST_MAIN(io_suite, prepare)
