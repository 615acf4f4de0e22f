/* SPDX-License-Identifier: MIT */
/*
 * test_preload.c - libumcg-preload.so: libc's blocking calls, made plainly
 * by a worker, free its server on the emulation.
 *
 * The emulation's detection of unannounced blocking is switched off
 * (umcg_detect_set(0)) in every case, so what frees a server here is the
 * interposition and nothing else. Every blocking case
 * runs on a runtime with one server: a worker makes the plain libc call,
 * which sleeps until a plain thread acts (or its timeout passes); a second
 * worker, which yields in a loop, is spawned once the first is about to
 * sleep. The case passes when that second worker ran while the call slept,
 * the call returned what libc returns, and the server counted a block but
 * no unannounced one. Without the preload the cooperative server would
 * stay with the sleeper and the spinner would run only after it.
 *
 * The same source is built twice: test-preload links libumcg-preload.so
 * (the sanitizer builds run that one), test-preload-env does not and runs
 * with LD_PRELOAD. Each case first checks that the preload is in front of
 * libc, so that a run without it cannot pass (UMCG_PRELOAD_EXPECT=0 turns
 * the check around, to see the cases fail without the preload).
 *
 * No timing is asserted beyond "never shorter than asked"; waits for
 * progress are bounded by h_liveness_ns().
 */
#include "runtime.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <poll.h>
#include <semaphore.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/file.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/un.h>

#define SLEEP_MS 150

static atomic_int sleeping, stop, spinner_ran_early;
static atomic_ulong call_done_ns;

/* ---- is the preload in front of libc? ---------------------------------- */

static bool expect_preload(void)
{
	const char *e = getenv("UMCG_PRELOAD_EXPECT");

	return !e || strcmp(e, "0");
}

/*
 * The preload is loaded, and the read() that the program's calls reach is
 * not libc's: the preload's, or in a sanitizer build the sanitizer's, which
 * forwards to the next definition, the preload's.
 */
static void check_preload(void)
{
	void *h = dlopen("libumcg-preload.so.0", RTLD_LAZY | RTLD_NOLOAD);
	void *p = dlsym(RTLD_DEFAULT, "read");
	Dl_info info;

	if (!expect_preload()) {
		EXPECT(!h, "libumcg-preload.so is loaded in a run without it");
		return;
	}
	EXPECT(h, "libumcg-preload.so is not loaded");
	ck_assert_ptr_nonnull(p);
	ck_assert_int_ne(dladdr(p, &info), 0);
	EXPECT(p == dlsym(h, "read") || !strstr(info.dli_fname, "libc.so"),
	       "read() is libc's: the preload is not in front of it");
	dlclose(h);
}

static void fixture(void)
{
	check_preload();
	ck_assert_int_eq(umcg_backend_active(), UMCG_BACKEND_EMULATED);
	ck_assert_int_eq(umcg_detect_set(0), 0);
}

/* ---- the blocking calls ---------------------------------------------------- */

/*
 * One case: @setup runs in the test's thread; @pre on the plain helper
 * thread before the worker starts (it may take a lock that the worker's call
 * then waits for); @call in the worker, which makes the call and checks its
 * result; @wake on the helper, SLEEP_MS after the worker is about to call.
 * A case without @wake has a call that times out by itself after SLEEP_MS.
 */
struct ctx {
	int p[2]; /* a pipe */
	int sv[2]; /* a stream socket pair */
	int lfd; /* a listening socket */
	struct sockaddr_un addr;
	int epfd;
	int fd1, fd2; /* two open file descriptions of one file */
	int ctl[2]; /* a pipe to a child process */
	pid_t child;
	pthread_t thread;
	pthread_mutex_t m;
	pthread_cond_t cv;
	int flag;
	sem_t sem;
	char file[64];
};

struct bcase {
	const char *name;
	void (*setup)(struct ctx *);
	void (*pre)(struct ctx *);
	void (*call)(struct ctx *);
	void (*wake)(struct ctx *);
	bool may_not_sleep; /* fsync: the call may not sleep at all */
};

static uint64_t t_start;

static void begin(void)
{
	t_start = h_now(CLOCK_MONOTONIC);
	STORE(&sleeping, 1);
}

static void slept_enough(void)
{
	EXPECT(h_now(CLOCK_MONOTONIC) - t_start >= SLEEP_MS * MS, "the call returned early");
}

static struct timespec rel_ts(void)
{
	return (struct timespec){ 0, SLEEP_MS * (long)MS };
}

static struct timespec abs_ts(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	ts.tv_nsec += SLEEP_MS * (long)MS;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	return ts;
}

static void setup_pipe(struct ctx *c)
{
	ck_assert_int_eq(pipe(c->p), 0);
}

static void setup_socks(struct ctx *c)
{
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, c->sv), 0);
}

static void setup_epoll(struct ctx *c)
{
	struct epoll_event ev = { .events = EPOLLIN };

	setup_pipe(c);
	c->epfd = epoll_create1(0);
	ck_assert_int_ge(c->epfd, 0);
	ck_assert_int_eq(epoll_ctl(c->epfd, EPOLL_CTL_ADD, c->p[0], &ev), 0);
}

static void setup_listen(struct ctx *c)
{
	c->lfd = socket(AF_UNIX, SOCK_STREAM, 0);
	ck_assert_int_ge(c->lfd, 0);
	c->addr.sun_family = AF_UNIX;
	/* An abstract name: nothing to clean up. */
	snprintf(c->addr.sun_path + 1, sizeof(c->addr.sun_path) - 1, "umcg-preload-%d",
		 (int)getpid());
	ck_assert_int_eq(bind(c->lfd, (struct sockaddr *)&c->addr, sizeof(c->addr)), 0);
	ck_assert_int_eq(listen(c->lfd, 4), 0);
}

static void setup_file(struct ctx *c)
{
	snprintf(c->file, sizeof(c->file), "/tmp/umcg-preload-%d", (int)getpid());
	c->fd1 = open(c->file, O_RDWR | O_CREAT | O_TRUNC, 0600);
	c->fd2 = open(c->file, O_RDWR);
	ck_assert_int_ge(c->fd1, 0);
	ck_assert_int_ge(c->fd2, 0);
	unlink(c->file);
}

static void setup_sync(struct ctx *c)
{
	pthread_mutex_init(&c->m, NULL);
	pthread_cond_init(&c->cv, NULL);
	sem_init(&c->sem, 0, 0);
}

/* Fill @fd (O_NONBLOCK for the moment) until a write would block. */
static void fill(int fd)
{
	static char junk[4096];
	int fl = fcntl(fd, F_GETFL);

	ck_assert_int_eq(fcntl(fd, F_SETFL, fl | O_NONBLOCK), 0);
	while (write(fd, junk, sizeof(junk)) > 0)
		;
	ck_assert_int_eq(errno, EAGAIN);
	ck_assert_int_eq(fcntl(fd, F_SETFL, fl), 0);
}

static void setup_full_pipe(struct ctx *c)
{
	setup_pipe(c);
	fill(c->p[1]);
}

static void setup_full_socks(struct ctx *c)
{
	setup_socks(c);
	fill(c->sv[0]);
}

static void wake_pipe(struct ctx *c)
{
	ck_assert_int_eq(write(c->p[1], "x", 1), 1);
}

static void wake_socks(struct ctx *c)
{
	ck_assert_int_eq(send(c->sv[1], "x", 1, 0), 1);
}

/* Empty @fd: a unix socket's writer waits until most of its queue is read. */
static void drain(int fd)
{
	static char junk[65536];
	int fl = fcntl(fd, F_GETFL);

	ck_assert_int_gt(read(fd, junk, sizeof(junk)), 0);
	ck_assert_int_eq(fcntl(fd, F_SETFL, fl | O_NONBLOCK), 0);
	while (read(fd, junk, sizeof(junk)) > 0)
		;
	ck_assert_int_eq(errno, EAGAIN);
	ck_assert_int_eq(fcntl(fd, F_SETFL, fl), 0);
}

static void wake_drain_pipe(struct ctx *c)
{
	drain(c->p[0]);
}

static void wake_drain_socks(struct ctx *c)
{
	drain(c->sv[1]);
}

static void wake_connect(struct ctx *c)
{
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(connect(fd, (struct sockaddr *)&c->addr, sizeof(c->addr)), 0);
}

static void call_sleep(struct ctx *c)
{
	(void)c;
	begin();
	ck_assert_uint_eq(sleep(1), 0);
	EXPECT(h_now(CLOCK_MONOTONIC) - t_start >= SEC, "sleep(1) returned early");
}

static void call_usleep(struct ctx *c)
{
	(void)c;
	begin();
	ck_assert_int_eq(usleep(SLEEP_MS * 1000), 0);
	slept_enough();
}

static void call_nanosleep(struct ctx *c)
{
	struct timespec ts = rel_ts(), rem = { 7, 7 };

	(void)c;
	begin();
	ck_assert_int_eq(nanosleep(&ts, &rem), 0);
	slept_enough();
}

static void call_clock_nanosleep(struct ctx *c)
{
	struct timespec ts = rel_ts();

	(void)c;
	begin();
	ck_assert_int_eq(clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, NULL), 0);
	slept_enough();
}

static void call_clock_nanosleep_abs(struct ctx *c)
{
	struct timespec ts;

	(void)c;
	begin();
	ts = abs_ts(CLOCK_REALTIME);
	ck_assert_int_eq(clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME, &ts, NULL), 0);
	slept_enough();
}

static void call_poll(struct ctx *c)
{
	struct pollfd p = { .fd = c->p[0], .events = POLLIN };

	begin();
	ck_assert_int_eq(poll(&p, 1, -1), 1);
	ck_assert(p.revents & POLLIN);
	slept_enough();
}

static void call_poll_timeout(struct ctx *c)
{
	struct pollfd p = { .fd = c->p[0], .events = POLLIN };

	begin();
	ck_assert_int_eq(poll(&p, 1, SLEEP_MS), 0);
	slept_enough();
}

static void call_ppoll(struct ctx *c)
{
	struct pollfd p = { .fd = c->p[0], .events = POLLIN };
	sigset_t none;

	sigemptyset(&none);
	sigaddset(&none, SIGUSR2);
	begin();
	ck_assert_int_eq(ppoll(&p, 1, NULL, &none), 1);
	ck_assert(p.revents & POLLIN);
	slept_enough();
}

static void call_select(struct ctx *c)
{
	fd_set r;

	FD_ZERO(&r);
	FD_SET(c->p[0], &r);
	begin();
	ck_assert_int_eq(select(c->p[0] + 1, &r, NULL, NULL, NULL), 1);
	ck_assert(FD_ISSET(c->p[0], &r));
	slept_enough();
}

static void call_pselect_timeout(struct ctx *c)
{
	struct timespec ts = rel_ts();
	fd_set r;

	FD_ZERO(&r);
	FD_SET(c->p[0], &r);
	begin();
	ck_assert_int_eq(pselect(c->p[0] + 1, &r, NULL, NULL, &ts, NULL), 0);
	ck_assert(!FD_ISSET(c->p[0], &r));
	slept_enough();
}

static void call_epoll_wait(struct ctx *c)
{
	struct epoll_event ev;

	begin();
	ck_assert_int_eq(epoll_wait(c->epfd, &ev, 1, -1), 1);
	ck_assert(ev.events & EPOLLIN);
	slept_enough();
}

static void call_epoll_pwait_timeout(struct ctx *c)
{
	struct epoll_event ev;
	sigset_t none;

	sigemptyset(&none);
	begin();
	ck_assert_int_eq(epoll_pwait(c->epfd, &ev, 1, SLEEP_MS, &none), 0);
	slept_enough();
}

static void call_read(struct ctx *c)
{
	char b[8];

	begin();
	ck_assert_int_eq(read(c->p[0], b, sizeof(b)), 1);
	ck_assert_int_eq(b[0], 'x');
	slept_enough();
}

static void call_readv(struct ctx *c)
{
	char b[8];
	struct iovec iov = { b, sizeof(b) };

	begin();
	ck_assert_int_eq(readv(c->p[0], &iov, 1), 1);
	slept_enough();
}

static void call_write(struct ctx *c)
{
	begin();
	ck_assert_int_eq(write(c->p[1], "y", 1), 1);
	slept_enough();
}

static void call_writev(struct ctx *c)
{
	struct iovec iov = { "yz", 2 };

	begin();
	ck_assert_int_eq(writev(c->p[1], &iov, 1), 2);
	slept_enough();
}

static void call_recv(struct ctx *c)
{
	char b[8];

	begin();
	ck_assert_int_eq(recv(c->sv[0], b, sizeof(b), 0), 1);
	slept_enough();
}

static void call_recvfrom(struct ctx *c)
{
	char b[8];

	begin();
	ck_assert_int_eq(recvfrom(c->sv[0], b, sizeof(b), 0, NULL, NULL), 1);
	slept_enough();
}

static void call_recvmsg(struct ctx *c)
{
	char b[8];
	struct iovec iov = { b, sizeof(b) };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };

	begin();
	ck_assert_int_eq(recvmsg(c->sv[0], &msg, 0), 1);
	slept_enough();
}

static void call_send(struct ctx *c)
{
	begin();
	ck_assert_int_eq(send(c->sv[0], "y", 1, 0), 1);
	slept_enough();
}

static void call_sendmsg(struct ctx *c)
{
	struct iovec iov = { "yz", 2 };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };

	begin();
	ck_assert_int_eq(sendmsg(c->sv[0], &msg, 0), 2);
	slept_enough();
}

static void call_accept(struct ctx *c)
{
	int fd;

	begin();
	fd = accept(c->lfd, NULL, NULL);
	ck_assert_int_ge(fd, 0);
	slept_enough();
	close(fd);
}

static void call_accept4(struct ctx *c)
{
	int fd;

	begin();
	fd = accept4(c->lfd, NULL, NULL, SOCK_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	ck_assert(fcntl(fd, F_GETFD) & FD_CLOEXEC);
	slept_enough();
	close(fd);
}

static void setup_child(struct ctx *c)
{
	ck_assert_int_eq(pipe(c->ctl), 0);
	c->child = fork();
	ck_assert_int_ge(c->child, 0);
	if (c->child == 0) {
		char b;

		/* Exit once told to (the parent's helper writes the byte). */
		if (read(c->ctl[0], &b, 1) != 1)
			_exit(1);
		_exit(7);
	}
}

static void wake_child(struct ctx *c)
{
	ck_assert_int_eq(write(c->ctl[1], "x", 1), 1);
}

static void call_waitpid(struct ctx *c)
{
	int st = 0;

	begin();
	ck_assert_int_eq(waitpid(c->child, &st, 0), c->child);
	ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 7);
	slept_enough();
}

static void call_wait(struct ctx *c)
{
	int st = 0;

	begin();
	ck_assert_int_eq(wait(&st), c->child);
	ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 7);
	slept_enough();
}

static void call_waitid(struct ctx *c)
{
	siginfo_t si;

	memset(&si, 0, sizeof(si));
	begin();
	ck_assert_int_eq(waitid(P_PID, (id_t)c->child, &si, WEXITED), 0);
	ck_assert_int_eq(si.si_pid, c->child);
	ck_assert_int_eq(si.si_status, 7);
	slept_enough();
}

static void *napper(void *arg)
{
	(void)arg;
	h_sleep_us(SLEEP_MS * 1000);
	return (void *)(uintptr_t)42;
}

static void call_pthread_join(struct ctx *c)
{
	void *v = NULL;

	(void)c;
	begin();
	ck_assert_int_eq(pthread_create(&c->thread, NULL, napper, NULL), 0);
	ck_assert_int_eq(pthread_join(c->thread, &v), 0);
	ck_assert_ptr_eq(v, (void *)(uintptr_t)42);
	slept_enough();
}

static void pre_lock(struct ctx *c)
{
	ck_assert_int_eq(pthread_mutex_lock(&c->m), 0);
}

static void wake_unlock(struct ctx *c)
{
	ck_assert_int_eq(pthread_mutex_unlock(&c->m), 0);
}

static void call_mutex_lock(struct ctx *c)
{
	begin();
	ck_assert_int_eq(pthread_mutex_lock(&c->m), 0);
	slept_enough();
	ck_assert_int_eq(pthread_mutex_unlock(&c->m), 0);
}

static void call_mutex_timedlock(struct ctx *c)
{
	struct timespec ts;

	begin();
	ts = abs_ts(CLOCK_REALTIME);
	ts.tv_sec += 60;
	ck_assert_int_eq(pthread_mutex_timedlock(&c->m, &ts), 0);
	slept_enough();
	ck_assert_int_eq(pthread_mutex_unlock(&c->m), 0);
}

static void wake_cond(struct ctx *c)
{
	ck_assert_int_eq(pthread_mutex_lock(&c->m), 0);
	c->flag = 1;
	ck_assert_int_eq(pthread_cond_signal(&c->cv), 0);
	ck_assert_int_eq(pthread_mutex_unlock(&c->m), 0);
}

static void call_cond_wait(struct ctx *c)
{
	ck_assert_int_eq(pthread_mutex_lock(&c->m), 0);
	begin();
	while (!c->flag)
		ck_assert_int_eq(pthread_cond_wait(&c->cv, &c->m), 0);
	ck_assert_int_eq(pthread_mutex_unlock(&c->m), 0);
	slept_enough();
}

static void call_cond_timedwait(struct ctx *c)
{
	struct timespec ts;
	int r;

	ck_assert_int_eq(pthread_mutex_lock(&c->m), 0);
	begin();
	ts = abs_ts(CLOCK_REALTIME);
	do
		r = pthread_cond_timedwait(&c->cv, &c->m, &ts);
	while (r == 0);
	ck_assert_int_eq(r, ETIMEDOUT);
	ck_assert_int_eq(pthread_mutex_unlock(&c->m), 0);
	slept_enough();
}

static void wake_sem(struct ctx *c)
{
	ck_assert_int_eq(sem_post(&c->sem), 0);
}

static void call_sem_wait(struct ctx *c)
{
	begin();
	ck_assert_int_eq(sem_wait(&c->sem), 0);
	slept_enough();
}

static void call_sem_timedwait(struct ctx *c)
{
	struct timespec ts;

	begin();
	ts = abs_ts(CLOCK_REALTIME);
	ck_assert_int_eq(sem_timedwait(&c->sem, &ts), -1);
	ck_assert_int_eq(errno, ETIMEDOUT);
	slept_enough();
}

static void pre_flock(struct ctx *c)
{
	ck_assert_int_eq(flock(c->fd1, LOCK_EX), 0);
}

static void wake_flock(struct ctx *c)
{
	ck_assert_int_eq(flock(c->fd1, LOCK_UN), 0);
}

static void call_flock(struct ctx *c)
{
	begin();
	ck_assert_int_eq(flock(c->fd2, LOCK_EX), 0);
	slept_enough();
}

static struct flock whole(short type)
{
	return (struct flock){ .l_type = type, .l_whence = SEEK_SET };
}

static void pre_ofd(struct ctx *c)
{
	struct flock fl = whole(F_WRLCK);

	ck_assert_int_eq(fcntl(c->fd1, F_OFD_SETLK, &fl), 0);
}

static void wake_ofd(struct ctx *c)
{
	struct flock fl = whole(F_UNLCK);

	ck_assert_int_eq(fcntl(c->fd1, F_OFD_SETLK, &fl), 0);
}

static void call_ofd_setlkw(struct ctx *c)
{
	struct flock fl = whole(F_WRLCK);

	begin();
	ck_assert_int_eq(fcntl(c->fd2, F_OFD_SETLKW, &fl), 0);
	slept_enough();
}

/* A classic record lock conflicts only with another process's: a child
 * takes it, and drops it (by exiting) when told. */
static void setup_lock_child(struct ctx *c)
{
	int ready[2];
	char b;

	setup_file(c);
	ck_assert_int_eq(pipe(ready), 0);
	ck_assert_int_eq(pipe(c->ctl), 0);
	c->child = fork();
	ck_assert_int_ge(c->child, 0);
	if (c->child == 0) {
		struct flock fl = whole(F_WRLCK);

		if (fcntl(c->fd1, F_SETLK, &fl) || write(ready[1], "r", 1) != 1 ||
		    read(c->ctl[0], &b, 1) != 1)
			_exit(1);
		_exit(0);
	}
	ck_assert_int_eq(read(ready[0], &b, 1), 1);
}

static void call_setlkw(struct ctx *c)
{
	struct flock fl = whole(F_WRLCK);
	int st;

	begin();
	ck_assert_int_eq(fcntl(c->fd2, F_SETLKW, &fl), 0);
	slept_enough();
	ck_assert_int_eq(waitpid(c->child, &st, 0), c->child);
}

static void call_fsync(struct ctx *c)
{
	begin();
	ck_assert_int_eq(write(c->fd1, "data", 4), 4);
	ck_assert_int_eq(fsync(c->fd1), 0);
	ck_assert_int_eq(fdatasync(c->fd1), 0);
}

static const struct bcase cases[] = {
	{ "sleep", NULL, NULL, call_sleep, NULL, false },
	{ "usleep", NULL, NULL, call_usleep, NULL, false },
	{ "nanosleep", NULL, NULL, call_nanosleep, NULL, false },
	{ "clock_nanosleep", NULL, NULL, call_clock_nanosleep, NULL, false },
	{ "clock_nanosleep_abs", NULL, NULL, call_clock_nanosleep_abs, NULL, false },
	{ "poll", setup_pipe, NULL, call_poll, wake_pipe, false },
	{ "poll_timeout", setup_pipe, NULL, call_poll_timeout, NULL, false },
	{ "ppoll", setup_pipe, NULL, call_ppoll, wake_pipe, false },
	{ "select", setup_pipe, NULL, call_select, wake_pipe, false },
	{ "pselect_timeout", setup_pipe, NULL, call_pselect_timeout, NULL, false },
	{ "epoll_wait", setup_epoll, NULL, call_epoll_wait, wake_pipe, false },
	{ "epoll_pwait_timeout", setup_epoll, NULL, call_epoll_pwait_timeout, NULL, false },
	{ "read", setup_pipe, NULL, call_read, wake_pipe, false },
	{ "readv", setup_pipe, NULL, call_readv, wake_pipe, false },
	{ "write", setup_full_pipe, NULL, call_write, wake_drain_pipe, false },
	{ "writev", setup_full_pipe, NULL, call_writev, wake_drain_pipe, false },
	{ "recv", setup_socks, NULL, call_recv, wake_socks, false },
	{ "recvfrom", setup_socks, NULL, call_recvfrom, wake_socks, false },
	{ "recvmsg", setup_socks, NULL, call_recvmsg, wake_socks, false },
	{ "send", setup_full_socks, NULL, call_send, wake_drain_socks, false },
	{ "sendmsg", setup_full_socks, NULL, call_sendmsg, wake_drain_socks, false },
	{ "accept", setup_listen, NULL, call_accept, wake_connect, false },
	{ "accept4", setup_listen, NULL, call_accept4, wake_connect, false },
	{ "waitpid", setup_child, NULL, call_waitpid, wake_child, false },
	{ "wait", setup_child, NULL, call_wait, wake_child, false },
	{ "waitid", setup_child, NULL, call_waitid, wake_child, false },
	{ "pthread_join", NULL, NULL, call_pthread_join, NULL, false },
	{ "pthread_mutex_lock", setup_sync, pre_lock, call_mutex_lock, wake_unlock, false },
	{ "pthread_mutex_timedlock", setup_sync, pre_lock, call_mutex_timedlock, wake_unlock,
	  false },
	{ "pthread_cond_wait", setup_sync, NULL, call_cond_wait, wake_cond, false },
	{ "pthread_cond_timedwait", setup_sync, NULL, call_cond_timedwait, NULL, false },
	{ "sem_wait", setup_sync, NULL, call_sem_wait, wake_sem, false },
	{ "sem_timedwait", setup_sync, NULL, call_sem_timedwait, NULL, false },
	{ "flock", setup_file, pre_flock, call_flock, wake_flock, false },
	{ "fcntl_ofd_setlkw", setup_file, pre_ofd, call_ofd_setlkw, wake_ofd, false },
	{ "fcntl_setlkw", setup_lock_child, NULL, call_setlkw, wake_child, false },
	{ "fsync_fdatasync", setup_file, NULL, call_fsync, NULL, true },
};

#define NR_CASES ((int)(sizeof(cases) / sizeof(cases[0])))

static const struct bcase *cur;
static struct ctx cx;
static atomic_int pre_done;

static void *helper(void *arg)
{
	(void)arg;
	if (cur->pre)
		cur->pre(&cx);
	STORE(&pre_done, 1);
	if (!cur->wake)
		return NULL;
	WAIT_UNTIL(LOAD(&sleeping));
	h_sleep_us(SLEEP_MS * 1000);
	cur->wake(&cx);
	return NULL;
}

static void *sleeper(void *arg)
{
	(void)arg;
	cur->call(&cx);
	STORE(&call_done_ns, h_now(CLOCK_MONOTONIC));
	return NULL;
}

/* Yields until stopped; notes whether it first ran before the call ended. */
static void *yielder(void *arg)
{
	(void)arg;
	if (!LOAD(&call_done_ns))
		STORE(&spinner_ran_early, 1);
	while (!LOAD(&stop))
		EXPECT(umcg_yield() == 0, "umcg_yield() failed");
	return NULL;
}

static void run_case(const struct bcase *bc, uint64_t slice)
{
	struct umcg_rt *rt = rt_start(1, slice);
	struct umcg_worker *s = NULL, *w = NULL;
	struct umcg_server_stats st;
	pthread_t h;

	cur = bc;
	memset(&cx, 0, sizeof(cx));
	STORE(&sleeping, 0);
	STORE(&stop, 0);
	STORE(&pre_done, 0);
	STORE(&spinner_ran_early, 0);
	STORE(&call_done_ns, 0);
	if (bc->setup)
		bc->setup(&cx);
	ck_assert_int_eq(pthread_create(&h, NULL, helper, NULL), 0);
	WAIT_UNTIL(LOAD(&pre_done));
	ck_assert_int_eq(umcg_spawn(rt, &w, NULL, sleeper, NULL), 0);
	WAIT_UNTIL(LOAD(&sleeping));
	ck_assert_int_eq(umcg_spawn(rt, &s, NULL, yielder, NULL), 0);
	ck_assert_int_eq(umcg_join(w, NULL), 0);
	STORE(&stop, 1);
	ck_assert_int_eq(umcg_join(s, NULL), 0);
	ck_assert_int_eq(pthread_join(h, NULL), 0);
	if (!bc->may_not_sleep)
		EXPECT(LOAD(&spinner_ran_early), "%s: the other worker never ran while it slept",
		       bc->name);
	ck_assert_int_eq(umcg_rt_server_stats(rt, 0, &st), 0);
	EXPECT(st.blocks >= 1, "%s: no block counted", bc->name);
	ck_assert_uint_eq(st.unannounced_blocks, 0);
	rt_end(rt);
}

START_TEST(blocking_cooperative)
{
	run_case(&cases[_i], 0);
}
END_TEST

START_TEST(blocking_preemptive)
{
	run_case(&cases[_i], MS);
}
END_TEST

/* ---- two workers of one server and a pthread mutex ---------------------- */

static pthread_mutex_t shared_m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t shared_cv = PTHREAD_COND_INITIALIZER;
static atomic_int holding, waiter_in, released, waiter_got;
static int cond_flag;

/* Holds the mutex until the mutex_waiter has been run and has asked for it. */
static void *mutex_holder(void *arg)
{
	(void)arg;
	ck_assert_int_eq(pthread_mutex_lock(&shared_m), 0);
	STORE(&holding, 1);
	YIELD_UNTIL(LOAD(&waiter_in));
	/* The mutex_waiter runs only while we yield: one more turn lets it reach
	 * pthread_mutex_lock() and block there. */
	ck_assert_int_eq(umcg_yield(), 0);
	STORE(&released, 1);
	ck_assert_int_eq(pthread_mutex_unlock(&shared_m), 0);
	return NULL;
}

static void *mutex_waiter(void *arg)
{
	(void)arg;
	STORE(&waiter_in, 1);
	ck_assert_int_eq(pthread_mutex_lock(&shared_m), 0);
	EXPECT(LOAD(&released),
	       "the mutex_waiter got the mutex before the mutex_holder released it");
	STORE(&waiter_got, 1);
	ck_assert_int_eq(pthread_mutex_unlock(&shared_m), 0);
	return NULL;
}

START_TEST(mutex_between_workers)
{
	struct umcg_rt *rt = rt_start(1, 0);
	struct umcg_worker *a = NULL, *b = NULL;
	struct umcg_worker_stats ws;

	ck_assert_int_eq(umcg_spawn(rt, &a, NULL, mutex_holder, NULL), 0);
	WAIT_UNTIL(LOAD(&holding));
	ck_assert_int_eq(umcg_spawn(rt, &b, NULL, mutex_waiter, NULL), 0);
	ck_assert_int_eq(umcg_worker_stats(b, &ws), 0);
	ck_assert_int_eq(umcg_join(a, NULL), 0);
	WAIT_UNTIL(LOAD(&waiter_got));
	ck_assert_int_eq(umcg_worker_stats(b, &ws), 0);
	/* It blocked in the mutex: the one way its server got to the mutex_holder. */
	EXPECT(ws.blocks >= 1, "the mutex_waiter never blocked (%" PRIu64 ")", ws.blocks);
	ck_assert_int_eq(umcg_join(b, NULL), 0);
	rt_end(rt);
}
END_TEST

static void *cond_waiter(void *arg)
{
	(void)arg;
	ck_assert_int_eq(pthread_mutex_lock(&shared_m), 0);
	STORE(&waiter_in, 1);
	while (!cond_flag)
		ck_assert_int_eq(pthread_cond_wait(&shared_cv, &shared_m), 0);
	ck_assert_int_eq(pthread_mutex_unlock(&shared_m), 0);
	STORE(&waiter_got, 1);
	return NULL;
}

static void *cond_signaller(void *arg)
{
	(void)arg;
	YIELD_UNTIL(LOAD(&waiter_in));
	ck_assert_int_eq(pthread_mutex_lock(&shared_m), 0);
	cond_flag = 1;
	ck_assert_int_eq(pthread_cond_signal(&shared_cv), 0);
	ck_assert_int_eq(pthread_mutex_unlock(&shared_m), 0);
	return NULL;
}

/* The mutex_waiter first: it holds the only server until its wait frees it. */
START_TEST(cond_between_workers)
{
	struct umcg_rt *rt = rt_start(1, 0);
	struct umcg_worker *a = NULL, *b = NULL;

	ck_assert_int_eq(umcg_spawn(rt, &a, NULL, cond_waiter, NULL), 0);
	WAIT_UNTIL(LOAD(&waiter_in));
	ck_assert_int_eq(umcg_spawn(rt, &b, NULL, cond_signaller, NULL), 0);
	ck_assert_int_eq(umcg_join(b, NULL), 0);
	ck_assert_int_eq(umcg_join(a, NULL), 0);
	ck_assert(LOAD(&waiter_got));
	rt_end(rt);
}
END_TEST

/* ---- full time under 1 ms preemption -------------------------------------- */

/*
 * A worker's sleep(3), nanosleep(), poll() and epoll_wait() with a timeout,
 * beside a worker that never yields, on one server with a 1 ms slice: the
 * kicks never reach the sleeper, whose calls return after their full time
 * with their own result. test_detect.c has the same case with detection
 * alone, on both backends.
 */
static atomic_int full_done, hog_running;

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
	uint64_t t0;

	(void)arg;
	ck_assert_int_eq(pipe(p), 0);
	ep = epoll_create1(0);
	ck_assert_int_ge(ep, 0);
	ck_assert_int_eq(epoll_ctl(ep, EPOLL_CTL_ADD, p[0], &ev), 0);
	pfd = (struct pollfd){ .fd = p[0], .events = POLLIN };

	t0 = h_now(CLOCK_MONOTONIC);
	ck_assert_uint_eq(sleep(3), 0);
	EXPECT(h_now(CLOCK_MONOTONIC) - t0 >= 3 * SEC, "sleep(3) returned early");

	t0 = h_now(CLOCK_MONOTONIC);
	EXPECT(nanosleep(&ts, &rem) == 0, "nanosleep: %s", strerror(errno));
	EXPECT(h_now(CLOCK_MONOTONIC) - t0 >= 300 * MS, "nanosleep returned early");

	t0 = h_now(CLOCK_MONOTONIC);
	EXPECT(poll(&pfd, 1, 300) == 0, "poll: %s", strerror(errno));
	EXPECT(h_now(CLOCK_MONOTONIC) - t0 >= 300 * MS, "poll returned early");

	t0 = h_now(CLOCK_MONOTONIC);
	EXPECT(epoll_wait(ep, &ev, 1, 300) == 0, "epoll_wait: %s", strerror(errno));
	EXPECT(h_now(CLOCK_MONOTONIC) - t0 >= 300 * MS, "epoll_wait returned early");

	close(ep);
	close(p[0]);
	close(p[1]);
	STORE(&full_done, 1);
	return NULL;
}

START_TEST(full_time_preload)
{
	struct umcg_rt *rt = rt_start(1, MS);
	struct umcg_worker *h = NULL, *w = NULL;
	struct umcg_server_stats st;

	STORE(&stop, 0);
	/* The hog first: the sleeper gets the server only by a preemption,
	 * and whenever it is about to sleep the hog waits to be run, so the
	 * server keeps asking for the slice of whoever it thinks runs. */
	ck_assert_int_eq(umcg_spawn(rt, &h, NULL, hog, NULL), 0);
	WAIT_UNTIL(LOAD(&hog_running));
	ck_assert_int_eq(umcg_spawn(rt, &w, NULL, full_time_sleeper, NULL), 0);
	ck_assert_int_eq(umcg_join(w, NULL), 0);
	STORE(&stop, 1);
	ck_assert_int_eq(umcg_join(h, NULL), 0);
	ck_assert(LOAD(&full_done));
	ck_assert_int_eq(umcg_rt_server_stats(rt, 0, &st), 0);
	EXPECT(st.preemptions > 0, "no preemption happened");
	ck_assert_uint_eq(st.unannounced_blocks, 0);
	rt_end(rt);
}
END_TEST

/* ---- results, errno, bad input ------------------------------------------ */

static void *errno_worker(void *arg)
{
	struct timespec bad = { 0, 2000000000L };
	struct pollfd pfd;
	char b[4];
	int p[2], fl;

	(void)arg;
	ck_assert_int_eq(pipe(p), 0);
	ck_assert_int_eq(write(p[1], "abc", 3), 3);
	/* A call that succeeds leaves errno alone. */
	errno = 1234;
	ck_assert_int_eq(read(p[0], b, sizeof(b)), 3);
	ck_assert_int_eq(errno, 1234);
	/* Failures are libc's: -1 and errno. */
	ck_assert_int_eq(read(-1, b, 1), -1);
	ck_assert_int_eq(errno, EBADF);
	ck_assert_int_eq(nanosleep(&bad, NULL), -1);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_int_eq(select(-1, NULL, NULL, NULL, NULL), -1);
	ck_assert_int_eq(errno, EINVAL);
	pfd = (struct pollfd){ .fd = p[0], .events = POLLIN };
	ck_assert_int_eq(poll(&pfd, 1, 0), 0);
	ck_assert_int_eq(waitpid(-1, NULL, 0), -1);
	ck_assert_int_eq(errno, ECHILD);
	ck_assert_int_eq(clock_nanosleep(CLOCK_THREAD_CPUTIME_ID, 0, &bad, NULL), EINVAL);
	/* fcntl() passes its third argument through, int or pointer. */
	fl = fcntl(p[0], F_GETFL);
	ck_assert_int_ge(fl, 0);
	ck_assert_int_eq(fcntl(p[0], F_SETFL, fl | O_NONBLOCK), 0);
	ck_assert_int_eq(read(p[0], b, 1), -1);
	ck_assert_int_eq(errno, EAGAIN);
	ck_assert_int_eq(pthread_join(pthread_self(), NULL), EDEADLK);
	close(p[0]);
	close(p[1]);
	return NULL;
}

START_TEST(results_and_errno)
{
	struct umcg_rt *rt = rt_start(1, 0);
	struct umcg_worker *w = NULL;
	struct umcg_server_stats st;

	ck_assert_int_eq(umcg_spawn(rt, &w, NULL, errno_worker, NULL), 0);
	ck_assert_int_eq(umcg_join(w, NULL), 0);
	ck_assert_int_eq(umcg_rt_server_stats(rt, 0, &st), 0);
	/* None of these calls would have slept: no region was entered. */
	ck_assert_uint_eq(st.blocks, 0);
	rt_end(rt);
}
END_TEST

/* A call inside the program's own region is the plain call: one block. */
static void *region_worker(void *arg)
{
	struct timespec ts = { 0, 20 * (long)MS };

	(void)arg;
	ck_assert_int_eq(umcg_block_begin(), 0);
	ck_assert_int_eq(nanosleep(&ts, NULL), 0);
	ck_assert_int_eq(umcg_block_end(), 0);
	/* And the preload is back in force afterwards: a second block. */
	ck_assert_int_eq(nanosleep(&ts, NULL), 0);
	return NULL;
}

START_TEST(inside_a_region)
{
	struct umcg_rt *rt = rt_start(1, 0);
	struct umcg_worker *w = NULL;
	struct umcg_worker_stats ws;

	ck_assert_int_eq(umcg_spawn(rt, &w, NULL, region_worker, NULL), 0);
	WAIT_UNTIL(umcg_worker_stats(w, &ws) == 0 && ws.blocks >= 2);
	ck_assert_uint_eq(ws.blocks, 2);
	ck_assert_int_eq(umcg_join(w, NULL), 0);
	rt_end(rt);
}
END_TEST

/* Plain threads and servers get libc itself. */
START_TEST(plain_thread)
{
	struct timespec ts = { 0, MS };
	char b;
	int p[2];

	ck_assert_int_eq(pipe(p), 0);
	ck_assert_int_eq(write(p[1], "q", 1), 1);
	ck_assert_int_eq(read(p[0], &b, 1), 1);
	ck_assert_int_eq(nanosleep(&ts, NULL), 0);
	ck_assert_int_eq(read(-1, &b, 1), -1);
	ck_assert_int_eq(errno, EBADF);
	close(p[0]);
	close(p[1]);
}
END_TEST

static Suite *preload_suite(void)
{
	Suite *s = suite_create("preload");
	TCase *tc = tcase_create("calls");
	TCase *tb = tcase_create("blocking");
	TCase *tf = tcase_create("full_time");

	tcase_add_checked_fixture(tc, fixture, NULL);
	tcase_add_test(tc, plain_thread);
	tcase_add_test(tc, results_and_errno);
	tcase_add_test(tc, inside_a_region);
	tcase_add_test(tc, mutex_between_workers);
	tcase_add_test(tc, cond_between_workers);
	suite_add_tcase(s, tc);
	tcase_set_timeout(tb, 60);
	tcase_add_checked_fixture(tb, fixture, NULL);
	tcase_add_loop_test(tb, blocking_cooperative, 0, NR_CASES);
	tcase_add_loop_test(tb, blocking_preemptive, 0, NR_CASES);
	suite_add_tcase(s, tb);
	tcase_set_timeout(tf, 60);
	tcase_add_checked_fixture(tf, fixture, NULL);
	tcase_add_test(tf, full_time_preload);
	suite_add_tcase(s, tf);
	return s;
}

H_TEST_MAIN(preload_suite, NULL)
