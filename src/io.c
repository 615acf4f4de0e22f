/* SPDX-License-Identifier: MIT */
/*
 * io.c - the blocking wrappers of <umcg/io.h>.
 *
 * Every wrapper has the same shape:
 *
 *	kernel backend:		plain call
 *	emulation:		attempt that cannot sleep
 *				done (success, or an error that is final)?  return it
 *				O_NONBLOCK and the plain call would not wait?  return
 *				region: umcg_block_begin(); plain call; umcg_block_end()
 *
 * and a region entered by a thread that is not a worker (umcg_block_begin()
 * fails) is just the plain call.
 *
 * Protocol 1, the backend cache. `mode` is written once per process (by
 * whichever thread gets there first; every writer computes the same value
 * from the same permanent backend choice) with a release store after
 * `kick_sig`; readers load it with acquire, which pairs with that store, so
 * a reader that sees MODE_ANNOUNCE sees kick_sig too.
 *
 * Protocol 2, the region and the kick signal. Invariant: between a
 * successful umcg_block_begin() and the matching umcg_block_end() the
 * calling worker has the kick signal blocked, except for the instant right
 * after begin. The emulation's umcg_kick() does not signal a worker whose
 * in_block flag is set (point 3 at the top of emulated.c), but a kick that read the
 * flag just before umcg_block_begin() set it can still deliver its signal
 * during the call. Its handler would do nothing (in_block is set), yet it
 * would make poll(), epoll_wait(), the sleeps and futex waits fail with
 * EINTR, which the kernel never restarts. With the signal blocked such a
 * late kick stays pending and is taken after the region, when the handler
 * sees RUNNING without TF_PREEMPT (umcg_block_begin() cleared it) and
 * again does nothing. So every EINTR a wrapper returns is the program's.
 * The mask is per thread and nothing else reads it; no barrier is involved.
 *
 * Protocol 3, cancellation. The plain call inside a region runs under a
 * pthread cleanup handler that leaves the region (unblocks the signal and
 * runs umcg_block_end()). A worker cancelled while BLOCKED therefore goes
 * back to RUNNABLE and waits for its server before it unwinds further;
 * without that it would die BLOCKED, and its server would never hear from
 * it again.
 *
 * The wrappers share no other data between threads.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/file.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <umcg/io.h>

#include "atomics.h"
#include "preload.h"
#include "syscall.h"

#define NSEC_PER_SEC 1000000000L
/* Entries of a partly transferred vector handled per follow-up call. */
#define TAIL_IOV 16

/* ---- backend cache (protocol 1) ----------------------------------------- */

enum {
	MODE_UNKNOWN = 0,
	MODE_PLAIN,
	MODE_ANNOUNCE
};

static int mode;
static int kick_sig;

/* Whether wrappers must announce their sleeps (the emulation runs). */
static bool announce(void)
{
	/* Pairs with the release store below. */
	int m = umcg__load(&mode, umcg__acquire);
	int sig;

	if (m != MODE_UNKNOWN)
		return m == MODE_ANNOUNCE;
	if (umcg_backend_active() == UMCG_BACKEND_EMULATED) {
		sig = umcg_kick_signal();
		umcg__store(&kick_sig, sig > 0 ? sig : 0, umcg__relaxed);
		m = MODE_ANNOUNCE;
	} else {
		/* The kernel backend, or none at all: nobody to tell. */
		m = MODE_PLAIN;
	}
	umcg__store(&mode, m, umcg__release);
	return m == MODE_ANNOUNCE;
}

/* ---- blocking regions (protocols 2 and 3) ------------------------------- */

struct region {
	int unblock; /* the kick signal we blocked, to unblock on the way out */
};

/*
 * region_enter() - umcg_block_begin(), then block the kick signal.
 *
 * Return: true if the caller is now BLOCKED in a region; false if it is not
 * a worker (or is one inside a region of its own), so that the call that
 * follows is a plain one.
 */
static bool region_enter(struct region *r)
{
	int sig = umcg__load(&kick_sig, umcg__relaxed);
	sigset_t set, old;

	r->unblock = 0;
	if (umcg_block_begin())
		return false;
	if (sig) {
		sigemptyset(&set);
		sigaddset(&set, sig);
		if (!pthread_sigmask(SIG_BLOCK, &set, &old) && !sigismember(&old, sig))
			r->unblock = sig;
	}
	return true;
}

/* Undo region_enter(); also the cleanup handler of a cancelled call. */
static void region_leave(void *arg)
{
	struct region *r = arg;
	sigset_t set;

	if (r->unblock) {
		sigemptyset(&set);
		sigaddset(&set, r->unblock);
		pthread_sigmask(SIG_UNBLOCK, &set, NULL);
	}
	umcg_block_end();
}

/*
 * BLOCKING() - evaluate @call (the plain call) inside a region if the
 * caller is a worker, else just evaluate it; store its value in @ret.
 *
 * Without -fexceptions, glibc's pthread_cleanup_push() is a sigsetjmp(), and
 * gcc's -Wclobbered then suspects every local that lives across it. After
 * the jump back (the thread is being cancelled) only the cleanup routine and
 * __pthread_unwind_next() run, with values set before the sigsetjmp and never
 * changed; no local of the wrapper is read again. So the warning is switched
 * off for this file, whose only sigsetjmp is this one.
 */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wclobbered"
#endif
#define BLOCKING(ret, call)                                           \
	do {                                                          \
		struct region region_;                                \
		if (region_enter(&region_)) {                         \
			pthread_cleanup_push(region_leave, &region_); \
			(ret) = (call);                               \
			pthread_cleanup_pop(1);                       \
		} else {                                              \
			(ret) = (call);                               \
		}                                                     \
	} while (0)

/* ---- helpers ------------------------------------------------------------ */

/* What a wrapper puts back on its way out. */
struct entry {
	int err;
	int intercept;
};

static struct entry entry_begin(void)
{
	struct entry e = { errno, umcg__intercept };

	umcg__intercept = 0;
	return e;
}

static void entry_end(const struct entry *e)
{
	errno = e->err;
	umcg__intercept = e->intercept;
}

/*
 * ENTER_WRAPPER - a declaration at the top of every function here that a
 * program calls: it saves errno and umcg__intercept, clears the latter (the
 * libc calls a wrapper makes are the library's, and go straight to libc even
 * where libumcg-preload.so stands in for them), and the compiler puts both
 * back on every way out of the function (the cleanup attribute), so no
 * return can forget them. The plain calls in between may set errno at will;
 * neg() reads it. A thread that is cancelled unwinds without it, and is
 * past caring.
 */
#define ENTER_WRAPPER struct entry entry_ __attribute__((cleanup(entry_end))) = entry_begin()

/* A libc result, with -1 turned into -errno. Call it with errno saved. */
static long neg(long r)
{
	return r == -1 ? -errno : r;
}

/*
 * The descriptor is O_NONBLOCK. A descriptor fcntl() cannot read (closed
 * meanwhile, or never open) counts as O_NONBLOCK too: the plain call then
 * runs outside a region and reports the error at once.
 */
static bool fd_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	return fl == -1 || (fl & O_NONBLOCK);
}

/* The descriptor is a regular file or a block device: reads and writes of
 * those wait for the whole transfer whatever O_NONBLOCK says. */
static bool fd_is_file(int fd)
{
	struct stat st;

	return !fstat(fd, &st) && (S_ISREG(st.st_mode) || S_ISBLK(st.st_mode));
}

static bool fd_is_stream(int fd)
{
	int type = 0;
	socklen_t len = sizeof(type);

	return !getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) && type == SOCK_STREAM;
}

/* A failure of RWF_NOWAIT that says nothing about the plain call: it would
 * block, or RWF_NOWAIT is not supported on this descriptor or kernel. */
static bool nowait_failed(long r)
{
	return r == -EAGAIN || r == -EOPNOTSUPP || r == -EINVAL || r == -ENOSYS;
}

/* The bytes of a sigset_t that the kernel reads: its own sigset_t. */
#define KERNEL_SIGSET_SIZE (_NSIG / 8)

static bool timespec_valid(const struct timespec *ts)
{
	return ts->tv_sec >= 0 && ts->tv_nsec >= 0 && ts->tv_nsec < NSEC_PER_SEC;
}

static bool timespec_zero(const struct timespec *ts)
{
	return !ts->tv_sec && !ts->tv_nsec;
}

/* a <= b */
static bool timespec_le(const struct timespec *a, const struct timespec *b)
{
	return a->tv_sec < b->tv_sec || (a->tv_sec == b->tv_sec && a->tv_nsec <= b->tv_nsec);
}

static size_t iov_total(const struct iovec *iov, int cnt)
{
	size_t n = 0;
	int i;

	for (i = 0; i < cnt; i++)
		n += iov[i].iov_len;
	return n;
}

/*
 * iov_tail() - the part of @iov that starts @skip bytes in, as at most
 * TAIL_IOV entries in @out. Return: the number of entries (0: nothing left).
 */
static int iov_tail(const struct iovec *iov, int cnt, size_t skip, struct iovec *out)
{
	int n = 0;

	for (; cnt > 0 && skip >= iov->iov_len; iov++, cnt--)
		skip -= iov->iov_len;
	for (; cnt > 0 && n < TAIL_IOV; iov++, cnt--, n++) {
		out[n].iov_base = (char *)iov->iov_base + skip;
		out[n].iov_len = iov->iov_len - skip;
		skip = 0;
	}
	return n;
}

/* ---- read and write ----------------------------------------------------- */

/* One transfer; @off -1 means the file position. */
static ssize_t xfer(bool wr, int fd, const struct iovec *iov, int cnt, off_t off, int flags)
{
	return neg(wr ? pwritev2(fd, iov, cnt, off, flags) : preadv2(fd, iov, cnt, off, flags));
}

/* The plain call the caller asked for: read/readv/pread or their writes. */
static ssize_t plain_rw(bool wr, int fd, const struct iovec *iov, int cnt, off_t off, bool vec)
{
	if (off < 0) {
		if (vec)
			return neg(wr ? writev(fd, iov, cnt) : readv(fd, iov, cnt));
		return neg(wr ? write(fd, iov->iov_base, iov->iov_len) :
				read(fd, iov->iov_base, iov->iov_len));
	}
	return neg(wr ? pwrite(fd, iov->iov_base, iov->iov_len, off) :
			pread(fd, iov->iov_base, iov->iov_len, off));
}

/*
 * rw_finish() - complete a transfer that moved @done of @total bytes
 * without sleeping, where the plain call would have moved them all. Each
 * piece is tried without sleeping first, then in a region. Stops at end of
 * file (a read returning 0) or an error, like the plain call.
 *
 * Return: the bytes moved in all.
 */
static ssize_t rw_finish(bool wr, int fd, const struct iovec *iov, int cnt, off_t off, size_t done,
			 size_t total)
{
	struct iovec tail[TAIL_IOV];
	off_t at;
	ssize_t r;
	int n;

	while (done < total) {
		n = iov_tail(iov, cnt, done, tail);
		at = off < 0 ? -1 : off + (off_t)done;
		r = xfer(wr, fd, tail, n, at, RWF_NOWAIT);
		if (nowait_failed(r))
			BLOCKING(r, xfer(wr, fd, tail, n, at, 0));
		if (r <= 0)
			break;
		done += (size_t)r;
	}
	return (ssize_t)done;
}

/*
 * ready_now() - where RWF_NOWAIT is not supported (pipes before Linux 6.4
 * lack FMODE_NOWAIT), would the plain call go through without sleeping?
 * poll() says so for a read of a non-file, and for a write of at most
 * PIPE_BUF bytes (the amount POLLOUT promises room for). Regular files
 * always poll ready, so they are not asked: a page-cache miss still sleeps.
 */
static bool ready_now(bool wr, int fd, size_t total)
{
	struct pollfd p = { .fd = fd, .events = wr ? POLLOUT : POLLIN };

	if (fd_is_file(fd) || (wr && total > PIPE_BUF))
		return false;
	return poll(&p, 1, 0) == 1 && !(p.revents & POLLNVAL);
}

/*
 * rw() - the emulation's read/readv/pread/write/writev/pwrite.
 * @off: the file offset, or -1 for the file position.
 * @vec: the caller used the vector form.
 */
static ssize_t rw(bool wr, int fd, const struct iovec *iov, int cnt, off_t off, bool vec)
{
	size_t total;
	ssize_t r;

	/* A vector the plain call rejects at once needs no region. */
	if (cnt < 0 || cnt > IOV_MAX)
		return plain_rw(wr, fd, iov, cnt, off, vec);
	r = xfer(wr, fd, iov, cnt, off, RWF_NOWAIT);
	if (r > 0) {
		total = iov_total(iov, cnt);
		/* A short transfer is final where the plain call also stops
		 * short: reads of anything but files (pipes, sockets, ttys
		 * return what is there), writes to O_NONBLOCK non-files. */
		if ((size_t)r < total &&
		    (wr ? (!fd_nonblock(fd) || fd_is_file(fd)) : fd_is_file(fd)))
			return rw_finish(wr, fd, iov, cnt, off, (size_t)r, total);
		return r;
	}
	if (!nowait_failed(r))
		return r;
	if (r == -EOPNOTSUPP && ready_now(wr, fd, iov_total(iov, cnt)))
		return plain_rw(wr, fd, iov, cnt, off, vec);
	/* An O_NONBLOCK pipe or socket: the plain call would not wait either.
	 * (A file ignores O_NONBLOCK: a page-cache miss waits for the disk.) */
	if (fd_nonblock(fd) && !fd_is_file(fd))
		return r == -EAGAIN ? r : plain_rw(wr, fd, iov, cnt, off, vec);
	BLOCKING(r, plain_rw(wr, fd, iov, cnt, off, vec));
	return r;
}

UMCG_API ssize_t umcg_read(int fd, void *buf, size_t count)
{
	struct iovec iov = { .iov_base = buf, .iov_len = count };
	ENTER_WRAPPER;
	ssize_t r;

	r = announce() ? rw(false, fd, &iov, 1, -1, false) : neg(read(fd, buf, count));
	return r;
}

UMCG_API ssize_t umcg_readv(int fd, const struct iovec *iov, int iovcnt)
{
	ENTER_WRAPPER;
	ssize_t r;

	r = announce() ? rw(false, fd, iov, iovcnt, -1, true) : neg(readv(fd, iov, iovcnt));
	return r;
}

UMCG_API ssize_t umcg_pread(int fd, void *buf, size_t count, off_t offset)
{
	struct iovec iov = { .iov_base = buf, .iov_len = count };
	ENTER_WRAPPER;
	ssize_t r;

	/* preadv2() reads at the file position for -1, pread() fails. */
	if (announce() && offset >= 0)
		r = rw(false, fd, &iov, 1, offset, false);
	else
		r = neg(pread(fd, buf, count, offset));
	return r;
}

UMCG_API ssize_t umcg_write(int fd, const void *buf, size_t count)
{
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = count };
	ENTER_WRAPPER;
	ssize_t r;

	r = announce() ? rw(true, fd, &iov, 1, -1, false) : neg(write(fd, buf, count));
	return r;
}

UMCG_API ssize_t umcg_writev(int fd, const struct iovec *iov, int iovcnt)
{
	ENTER_WRAPPER;
	ssize_t r;

	r = announce() ? rw(true, fd, iov, iovcnt, -1, true) : neg(writev(fd, iov, iovcnt));
	return r;
}

UMCG_API ssize_t umcg_pwrite(int fd, const void *buf, size_t count, off_t offset)
{
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = count };
	ENTER_WRAPPER;
	ssize_t r;

	if (announce() && offset >= 0)
		r = rw(true, fd, &iov, 1, offset, false);
	else
		r = neg(pwrite(fd, buf, count, offset));
	return r;
}

UMCG_API int umcg_flock(int fd, int operation)
{
	ENTER_WRAPPER;
	int r;

	/* LOCK_UN never waits. */
	if (!announce() || (operation & (LOCK_NB | LOCK_UN))) {
		r = (int)neg(flock(fd, operation));
	} else {
		r = (int)neg(flock(fd, operation | LOCK_NB));
		if (r == -EWOULDBLOCK)
			BLOCKING(r, (int)neg(flock(fd, operation)));
	}
	return r;
}

/* ---- sockets ------------------------------------------------------------ */

/* Flags with which a socket call never sleeps: the plain call it is. */
#define SOCK_NOSLEEP (MSG_DONTWAIT | MSG_ERRQUEUE)

/*
 * recv_finish() - MSG_WAITALL on a stream socket after a first attempt that
 * received @done of @total bytes: receive the rest into @iov, as the plain
 * call would have waited to. @msg_flags, if given, collects the flags.
 *
 * Return: the bytes received in all.
 */
static ssize_t recv_finish(int fd, const struct iovec *iov, int cnt, size_t done, size_t total,
			   int flags, int *msg_flags)
{
	struct iovec tail[TAIL_IOV];
	struct msghdr m;
	ssize_t r;

	while (done < total) {
		m = (struct msghdr){ .msg_iov = tail };
		m.msg_iovlen = (size_t)iov_tail(iov, cnt, done, tail);
		r = neg(recvmsg(fd, &m, flags | MSG_DONTWAIT));
		if (r == -EAGAIN)
			BLOCKING(r, neg(recvmsg(fd, &m, flags)));
		if (r <= 0)
			break;
		done += (size_t)r;
		if (msg_flags)
			*msg_flags |= m.msg_flags;
	}
	return (ssize_t)done;
}

/* As recv_finish(), for a send on a blocking stream socket. */
static ssize_t send_finish(int fd, const struct iovec *iov, int cnt, size_t done, size_t total,
			   int flags)
{
	struct iovec tail[TAIL_IOV];
	struct msghdr m;
	ssize_t r;

	while (done < total) {
		m = (struct msghdr){ .msg_iov = tail };
		m.msg_iovlen = (size_t)iov_tail(iov, cnt, done, tail);
		r = neg(sendmsg(fd, &m, flags | MSG_DONTWAIT));
		if (r == -EAGAIN)
			BLOCKING(r, neg(sendmsg(fd, &m, flags)));
		if (r <= 0)
			break;
		done += (size_t)r;
	}
	return (ssize_t)done;
}

/*
 * The three receive calls share this: @first is the result of the call with
 * MSG_DONTWAIT added. Return: what the wrapper returns, or 0 with *@redo set
 * when the plain call must be made in a region.
 */
static ssize_t recv_after_try(int fd, ssize_t first, const struct iovec *iov, int cnt, int flags,
			      int *msg_flags, bool *redo)
{
	size_t total;

	*redo = false;
	if (first == -EAGAIN) {
		if (fd_nonblock(fd))
			return first;
		*redo = true;
		return 0;
	}
	if (first <= 0 || !(flags & MSG_WAITALL))
		return first;
	total = iov_total(iov, cnt);
	if ((size_t)first >= total || !fd_is_stream(fd))
		return first;
	if (flags & MSG_PEEK) {
		/* Peeking consumed nothing: wait for the whole of it. */
		*redo = true;
		return 0;
	}
	return recv_finish(fd, iov, cnt, (size_t)first, total, flags, msg_flags);
}

UMCG_API ssize_t umcg_recv(int sockfd, void *buf, size_t len, int flags)
{
	struct iovec iov = { .iov_base = buf, .iov_len = len };
	ENTER_WRAPPER;
	bool redo;
	ssize_t r;

	if (!announce() || (flags & SOCK_NOSLEEP)) {
		r = neg(recv(sockfd, buf, len, flags));
	} else {
		r = neg(recv(sockfd, buf, len, flags | MSG_DONTWAIT));
		r = recv_after_try(sockfd, r, &iov, 1, flags, NULL, &redo);
		if (redo)
			BLOCKING(r, neg(recv(sockfd, buf, len, flags)));
	}
	return r;
}

UMCG_API ssize_t umcg_recvfrom(int sockfd, void *buf, size_t len, int flags,
			       struct sockaddr *src_addr, socklen_t *addrlen)
{
	struct iovec iov = { .iov_base = buf, .iov_len = len };
	ENTER_WRAPPER;
	bool redo;
	ssize_t r;

	if (!announce() || (flags & SOCK_NOSLEEP)) {
		r = neg(recvfrom(sockfd, buf, len, flags, src_addr, addrlen));
	} else {
		r = neg(recvfrom(sockfd, buf, len, flags | MSG_DONTWAIT, src_addr, addrlen));
		r = recv_after_try(sockfd, r, &iov, 1, flags, NULL, &redo);
		if (redo)
			BLOCKING(r, neg(recvfrom(sockfd, buf, len, flags, src_addr, addrlen)));
	}
	return r;
}

UMCG_API ssize_t umcg_recvmsg(int sockfd, struct msghdr *msg, int flags)
{
	ENTER_WRAPPER;
	bool redo;
	ssize_t r;

	if (!announce() || (flags & SOCK_NOSLEEP)) {
		r = neg(recvmsg(sockfd, msg, flags));
	} else {
		r = neg(recvmsg(sockfd, msg, flags | MSG_DONTWAIT));
		/* msg is valid if the kernel could read it (r != -EFAULT). */
		if (r > 0)
			r = recv_after_try(sockfd, r, msg->msg_iov, (int)msg->msg_iovlen, flags,
					   &msg->msg_flags, &redo);
		else
			r = recv_after_try(sockfd, r, NULL, 0, flags, NULL, &redo);
		if (redo)
			BLOCKING(r, neg(recvmsg(sockfd, msg, flags)));
	}
	return r;
}

/*
 * The three send calls share this: @first is the result with MSG_DONTWAIT.
 * A partial send on a blocking socket goes on with the rest (only stream
 * sockets send part of a message). Return: as recv_after_try().
 */
static ssize_t send_after_try(int fd, ssize_t first, const struct iovec *iov, int cnt, int flags,
			      bool *redo)
{
	size_t total;

	*redo = false;
	if (first == -EAGAIN) {
		if (fd_nonblock(fd))
			return first;
		*redo = true;
		return 0;
	}
	if (first < 0)
		return first;
	total = iov_total(iov, cnt);
	if ((size_t)first >= total || fd_nonblock(fd))
		return first;
	return send_finish(fd, iov, cnt, (size_t)first, total, flags);
}

UMCG_API ssize_t umcg_send(int sockfd, const void *buf, size_t len, int flags)
{
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };
	ENTER_WRAPPER;
	bool redo;
	ssize_t r;

	if (!announce() || (flags & SOCK_NOSLEEP)) {
		r = neg(send(sockfd, buf, len, flags));
	} else {
		r = neg(send(sockfd, buf, len, flags | MSG_DONTWAIT));
		r = send_after_try(sockfd, r, &iov, 1, flags, &redo);
		if (redo)
			BLOCKING(r, neg(send(sockfd, buf, len, flags)));
	}
	return r;
}

UMCG_API ssize_t umcg_sendto(int sockfd, const void *buf, size_t len, int flags,
			     const struct sockaddr *dest_addr, socklen_t addrlen)
{
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };
	ENTER_WRAPPER;
	bool redo;
	ssize_t r;

	if (!announce() || (flags & SOCK_NOSLEEP)) {
		r = neg(sendto(sockfd, buf, len, flags, dest_addr, addrlen));
	} else {
		r = neg(sendto(sockfd, buf, len, flags | MSG_DONTWAIT, dest_addr, addrlen));
		r = send_after_try(sockfd, r, &iov, 1, flags, &redo);
		if (redo)
			BLOCKING(r, neg(sendto(sockfd, buf, len, flags, dest_addr, addrlen)));
	}
	return r;
}

UMCG_API ssize_t umcg_sendmsg(int sockfd, const struct msghdr *msg, int flags)
{
	ENTER_WRAPPER;
	bool redo;
	ssize_t r;

	if (!announce() || (flags & SOCK_NOSLEEP)) {
		r = neg(sendmsg(sockfd, msg, flags));
	} else {
		r = neg(sendmsg(sockfd, msg, flags | MSG_DONTWAIT));
		/* msg is valid if the kernel could read it (r >= 0). */
		if (r >= 0)
			r = send_after_try(sockfd, r, msg->msg_iov, (int)msg->msg_iovlen, flags,
					   &redo);
		else
			r = send_after_try(sockfd, r, NULL, 0, flags, &redo);
		if (redo)
			BLOCKING(r, neg(sendmsg(sockfd, msg, flags)));
	}
	return r;
}

/*
 * accept_ready() - whether accept on @fd may be called without a region:
 * poll says readable (or reports an error the call will return at once).
 * If not, and @fd is O_NONBLOCK, *@eagain is set: the plain call would
 * fail with EAGAIN.
 */
static bool accept_ready(int fd, bool *eagain)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	*eagain = false;
	/* poll() skips a negative descriptor; accept() fails on it at once. */
	if (fd < 0 || poll(&p, 1, 0) != 0)
		return true;
	*eagain = fd_nonblock(fd);
	return false;
}

UMCG_API int umcg_accept(int sockfd, struct sockaddr *addr, socklen_t *addrlen)
{
	ENTER_WRAPPER;
	bool eagain;
	int r;

	if (!announce() || accept_ready(sockfd, &eagain))
		r = (int)neg(accept(sockfd, addr, addrlen));
	else if (eagain)
		r = -EAGAIN;
	else
		BLOCKING(r, (int)neg(accept(sockfd, addr, addrlen)));
	return r;
}

UMCG_API int umcg_accept4(int sockfd, struct sockaddr *addr, socklen_t *addrlen, int flags)
{
	ENTER_WRAPPER;
	bool eagain;
	int r;

	if (!announce() || accept_ready(sockfd, &eagain))
		r = (int)neg(accept4(sockfd, addr, addrlen, flags));
	else if (eagain)
		r = -EAGAIN;
	else
		BLOCKING(r, (int)neg(accept4(sockfd, addr, addrlen, flags)));
	return r;
}

UMCG_API int umcg_connect(int sockfd, const struct sockaddr *addr, socklen_t addrlen)
{
	ENTER_WRAPPER;
	int r;

	if (!announce() || fd_nonblock(sockfd))
		r = (int)neg(connect(sockfd, addr, addrlen));
	else
		BLOCKING(r, (int)neg(connect(sockfd, addr, addrlen)));
	return r;
}

/* ---- waiting for events ------------------------------------------------- */

UMCG_API int umcg_poll(struct pollfd *fds, nfds_t nfds, int timeout)
{
	ENTER_WRAPPER;
	int r;

	r = (int)neg(poll(fds, nfds, announce() ? 0 : timeout));
	if (r == 0 && timeout != 0 && announce())
		BLOCKING(r, (int)neg(poll(fds, nfds, timeout)));
	return r;
}

/* @sigmask with the kick signal added, in @buf; NULL stays NULL (the
 * thread's own mask, which a region has blocked it in). Only the bytes the
 * kernel reads are copied: @sigmask is umcg__readable() for those, and the
 * rest of a sigset_t need not even be mapped. */
static const sigset_t *mask_with_kick(const sigset_t *sigmask, sigset_t *buf)
{
	int sig = umcg__load(&kick_sig, umcg__relaxed);

	if (!sigmask || !sig)
		return sigmask;
	sigemptyset(buf);
	memcpy(buf, sigmask, KERNEL_SIGSET_SIZE);
	sigaddset(buf, sig);
	return buf;
}

UMCG_API int umcg_ppoll(struct pollfd *fds, nfds_t nfds, const struct timespec *tmo_p,
			const sigset_t *sigmask)
{
	struct timespec zero = { 0, 0 }; /* writable: ppoll() may store the time left */
	struct timespec tmo;
	const sigset_t *mask;
	ENTER_WRAPPER;
	sigset_t buf;
	int r;

	/*
	 * glibc's ppoll() copies *@tmo_p in user space (the system call
	 * stores the time left in it), so an unreadable one would crash it:
	 * fail as the system call does, before anything else. The wrapper
	 * reads it from a copy of its own from then on.
	 */
	if (tmo_p) {
		if (!umcg__readable(tmo_p, sizeof(*tmo_p)))
			return -EFAULT;
		tmo = *tmo_p;
		tmo_p = &tmo;
	}
	/* Unreadable @sigmask: the plain call fails at once. */
	if (!announce() || (sigmask && !umcg__readable(sigmask, KERNEL_SIGSET_SIZE)) ||
	    (tmo_p && (!timespec_valid(tmo_p) || timespec_zero(tmo_p)))) {
		r = (int)neg(ppoll(fds, nfds, tmo_p, sigmask));
	} else {
		/* Without @sigmask: a signal it would let in must not end a
		 * look that cannot sleep (the plain call would not fail with
		 * EINTR when descriptors are ready either). */
		r = (int)neg(ppoll(fds, nfds, &zero, NULL));
		if (r == 0) {
			mask = mask_with_kick(sigmask, &buf);
			BLOCKING(r, (int)neg(ppoll(fds, nfds, tmo_p, mask)));
		}
	}
	return r;
}

UMCG_API int umcg_epoll_wait(int epfd, struct epoll_event *events, int maxevents, int timeout)
{
	ENTER_WRAPPER;
	int r;

	r = (int)neg(epoll_wait(epfd, events, maxevents, announce() ? 0 : timeout));
	if (r == 0 && timeout != 0 && announce())
		BLOCKING(r, (int)neg(epoll_wait(epfd, events, maxevents, timeout)));
	return r;
}

UMCG_API int umcg_epoll_pwait(int epfd, struct epoll_event *events, int maxevents, int timeout,
			      const sigset_t *sigmask)
{
	const sigset_t *mask;
	ENTER_WRAPPER;
	sigset_t buf;
	int r;

	/* An unreadable @sigmask fails before any event is looked at. */
	if (!announce() || timeout == 0 ||
	    (sigmask && !umcg__readable(sigmask, KERNEL_SIGSET_SIZE))) {
		r = (int)neg(epoll_pwait(epfd, events, maxevents, timeout, sigmask));
	} else {
		r = (int)neg(epoll_wait(epfd, events, maxevents, 0));
		if (r == 0) {
			mask = mask_with_kick(sigmask, &buf);
			BLOCKING(r, (int)neg(epoll_pwait(epfd, events, maxevents, timeout, mask)));
		}
	}
	return r;
}

UMCG_API pid_t umcg_waitpid(pid_t pid, int *wstatus, int options)
{
	ENTER_WRAPPER;
	pid_t r;

	if (!announce() || (options & WNOHANG)) {
		r = (pid_t)neg(waitpid(pid, wstatus, options));
	} else {
		r = (pid_t)neg(waitpid(pid, wstatus, options | WNOHANG));
		if (r == 0)
			BLOCKING(r, (pid_t)neg(waitpid(pid, wstatus, options)));
	}
	return r;
}

/* ---- sleeping ----------------------------------------------------------- */

UMCG_API int umcg_nanosleep(const struct timespec *req, struct timespec *rem)
{
	ENTER_WRAPPER;
	int r;

	/* A NULL, unreadable, malformed or zero request: the plain call,
	 * which returns at once (with EFAULT, EINVAL or 0). */
	if (!announce() || !req || !umcg__readable(req, sizeof(*req)) || !timespec_valid(req) ||
	    timespec_zero(req))
		r = (int)neg(nanosleep(req, rem));
	else
		BLOCKING(r, (int)neg(nanosleep(req, rem)));
	return r;
}

UMCG_API int umcg_clock_nanosleep(clockid_t clockid, int flags, const struct timespec *req,
				  struct timespec *rem)
{
	struct timespec now;
	bool at_once;
	ENTER_WRAPPER;
	int r;

	/* As umcg_nanosleep(); a past deadline, a clock that cannot be read,
	 * and the thread's CPU clock (which clock_nanosleep() rejects) also
	 * return at once. */
	at_once = !announce() || !req || !umcg__readable(req, sizeof(*req)) ||
		  !timespec_valid(req) || clockid == CLOCK_THREAD_CPUTIME_ID;
	if (!at_once && (flags & TIMER_ABSTIME))
		at_once = clock_gettime(clockid, &now) || timespec_le(req, &now);
	else if (!at_once)
		at_once = timespec_zero(req);
	if (at_once)
		r = -clock_nanosleep(clockid, flags, req, rem);
	else
		BLOCKING(r, -clock_nanosleep(clockid, flags, req, rem));
	return r;
}

/* ---- futexes ------------------------------------------------------------ */

UMCG_API int umcg_futex_wait(uint32_t *uaddr, uint32_t val, const struct timespec *abs_timeout)
{
	struct timespec now;
	ENTER_WRAPPER;
	int r;

	if (!uaddr)
		return -EFAULT;
	if ((uintptr_t)uaddr % sizeof(*uaddr))
		return -EINVAL;
	if (abs_timeout && !umcg__readable(abs_timeout, sizeof(*abs_timeout)))
		return -EFAULT;
	if (abs_timeout && !timespec_valid(abs_timeout))
		return -EINVAL;
	/* The aligned 8 bytes that hold the word lie in its page. */
	if (!umcg__readable((const void *)((uintptr_t)uaddr & ~(uintptr_t)7), 8))
		return -EFAULT;
	/* The futex word's protocol belongs to the caller; the kernel compares
	 * it again under its own lock, so a relaxed look is enough here. */
	if (umcg__load(uaddr, umcg__relaxed) != val)
		return -EAGAIN;
	if (abs_timeout) {
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (timespec_le(abs_timeout, &now))
			return -ETIMEDOUT;
	}
	if (announce())
		BLOCKING(r, umcg__futex_wait(uaddr, val, abs_timeout, 0));
	else
		r = umcg__futex_wait(uaddr, val, abs_timeout, 0);
	/* A signal handler ran: to a futex waiter that is a wake-up. */
	return r == -EINTR ? 0 : r;
}

UMCG_API int umcg_futex_wake(uint32_t *uaddr, int nr)
{
	if (nr < 1 || (uintptr_t)uaddr % sizeof(*uaddr))
		return -EINVAL;
	return umcg__futex_wake_n(uaddr, nr);
}

/* ---- calls without a public wrapper (libumcg-preload.so) ---------------- */

/*
 * The functions below are what libumcg-preload.so calls for the libc
 * functions that <umcg/io.h> has no wrapper for (src/preload.h). They have
 * the shape and the rules of the wrappers above: on the emulation and in a
 * worker, first an attempt that cannot sleep where the call has one, then
 * the plain call in a region; otherwise the plain call. The result is the
 * libc call's on success, or a negative errno; errno is left alone.
 */

/*
 * LIBC() - libc's own definition of a synchronisation call, found once with
 * dlsym(RTLD_NEXT) (release store, acquire load; racing threads store the
 * same value). The functions below call pthread_mutex_trylock() and the
 * like through it, not by name: the program's call reached them through
 * whatever stands in front of libc (libumcg-preload.so, and in a sanitizer
 * build the sanitizer's interceptor, which records the lock once on its way
 * back), so a second pass through those would record it twice.
 */
static void *libc_sym(void **slot, const char *name, const char *version)
{
	void *p = umcg__load(slot, umcg__acquire);

	if (p)
		return p;
	p = version ? dlvsym(RTLD_NEXT, name, version) : dlsym(RTLD_NEXT, name);
	if (!p)
		abort(); /* libc without pthread_mutex_lock: nothing can work */
	umcg__store(slot, p, umcg__release);
	return p;
}

#define LIBC_SLOT(fn) static void *libc_##fn
#define LIBC(fn) ((__typeof__(&fn))libc_sym(&libc_##fn, #fn, NULL))
/* The condition variables of the current ABI (see preload.c). */
#define LIBC_COND(fn) ((__typeof__(&fn))libc_sym(&libc_##fn, #fn, "GLIBC_2.3.2"))

LIBC_SLOT(pthread_join);
LIBC_SLOT(pthread_tryjoin_np);
LIBC_SLOT(pthread_mutex_lock);
LIBC_SLOT(pthread_mutex_trylock);
LIBC_SLOT(pthread_mutex_timedlock);
LIBC_SLOT(pthread_cond_wait);
LIBC_SLOT(pthread_cond_timedwait);
LIBC_SLOT(sem_wait);
LIBC_SLOT(sem_trywait);
LIBC_SLOT(sem_timedwait);

/* The bytes of an fd_set that select() reads for @nfds descriptors. */
static size_t fdset_bytes(int nfds)
{
	return ((size_t)nfds + 8 * sizeof(long) - 1) / (8 * sizeof(long)) * sizeof(long);
}

/*
 * select_try() - select() or pselect() with a zero timeout on the caller's
 * sets; a look that finds nothing ready leaves the sets as they were (the
 * kernel clears them), so that the call that sleeps gets them whole.
 *
 * Return: what the look returned (0: nothing ready, the sets restored), or
 * 1 with *@skip set when the sets cannot be read here: the plain call is to
 * be made as it is, and fails at once with EFAULT.
 */
static int select_try(int nfds, fd_set *sets[3], bool *skip)
{
	struct timespec zero = { 0, 0 };
	size_t n = fdset_bytes(nfds);
	fd_set copy[3];
	int i, r;

	*skip = false;
	for (i = 0; i < 3; i++) {
		if (!sets[i])
			continue;
		if (!umcg__readable(sets[i], n)) {
			*skip = true;
			return 1;
		}
		memcpy(&copy[i], sets[i], n);
	}
	/* No signal mask: as in umcg_ppoll(), a signal the caller's mask would
	 * let in must not end a look that cannot sleep. */
	r = (int)neg(pselect(nfds, sets[0], sets[1], sets[2], &zero, NULL));
	if (r == 0) {
		for (i = 0; i < 3; i++) {
			if (sets[i])
				memcpy(sets[i], &copy[i], n);
		}
	}
	return r;
}

UMCG_PRIVATE int umcg__select(int nfds, fd_set *readfds, fd_set *writefds, fd_set *exceptfds,
			      struct timeval *timeout)
{
	fd_set *sets[3] = { readfds, writefds, exceptfds };
	ENTER_WRAPPER;
	bool skip;
	int r;

	/* What the plain call rejects or does not wait in needs no region. */
	if (!announce() || nfds < 0 || nfds > FD_SETSIZE ||
	    (timeout && (!umcg__readable(timeout, sizeof(*timeout)) || timeout->tv_sec < 0 ||
			 timeout->tv_usec < 0 || timeout->tv_usec >= 1000000 ||
			 (!timeout->tv_sec && !timeout->tv_usec))))
		return (int)neg(select(nfds, readfds, writefds, exceptfds, timeout));
	r = select_try(nfds, sets, &skip);
	if (skip)
		return (int)neg(select(nfds, readfds, writefds, exceptfds, timeout));
	if (r == 0)
		BLOCKING(r, (int)neg(select(nfds, readfds, writefds, exceptfds, timeout)));
	return r;
}

UMCG_PRIVATE int umcg__pselect(int nfds, fd_set *readfds, fd_set *writefds, fd_set *exceptfds,
			       const struct timespec *timeout, const sigset_t *sigmask)
{
	fd_set *sets[3] = { readfds, writefds, exceptfds };
	const sigset_t *mask;
	ENTER_WRAPPER;
	sigset_t buf;
	bool skip;
	int r;

	if (!announce() || nfds < 0 || nfds > FD_SETSIZE ||
	    (sigmask && !umcg__readable(sigmask, KERNEL_SIGSET_SIZE)) ||
	    (timeout && (!umcg__readable(timeout, sizeof(*timeout)) || !timespec_valid(timeout) ||
			 timespec_zero(timeout))))
		return (int)neg(pselect(nfds, readfds, writefds, exceptfds, timeout, sigmask));
	r = select_try(nfds, sets, &skip);
	if (skip)
		return (int)neg(pselect(nfds, readfds, writefds, exceptfds, timeout, sigmask));
	if (r == 0) {
		mask = mask_with_kick(sigmask, &buf);
		BLOCKING(r, (int)neg(pselect(nfds, readfds, writefds, exceptfds, timeout, mask)));
	}
	return r;
}

UMCG_PRIVATE int umcg__waitid(idtype_t idtype, id_t id, siginfo_t *infop, int options)
{
	ENTER_WRAPPER;
	siginfo_t look;
	int r;

	if (!announce() || (options & WNOHANG))
		return (int)neg(waitid(idtype, id, infop, options));
	/* A look that leaves the child waitable (WNOWAIT), in a siginfo of
	 * our own: the caller's may be anything, and gets the plain call. The
	 * kernel leaves si_pid 0 when no child is ready. */
	memset(&look, 0, sizeof(look));
	r = (int)neg(waitid(idtype, id, &look, options | WNOHANG | WNOWAIT));
	if (r < 0)
		return r;
	if (look.si_pid)
		return (int)neg(waitid(idtype, id, infop, options));
	BLOCKING(r, (int)neg(waitid(idtype, id, infop, options)));
	return r;
}

UMCG_PRIVATE unsigned int umcg__sleep(unsigned int seconds)
{
	ENTER_WRAPPER;
	unsigned int r;

	if (!announce() || !seconds)
		return sleep(seconds);
	BLOCKING(r, sleep(seconds));
	return r;
}

UMCG_PRIVATE int umcg__usleep(useconds_t usec)
{
	ENTER_WRAPPER;
	int r;

	if (!announce() || !usec)
		return (int)neg(usleep(usec));
	BLOCKING(r, (int)neg(usleep(usec)));
	return r;
}

UMCG_PRIVATE int umcg__pthread_join(pthread_t thread, void **retval)
{
	ENTER_WRAPPER;
	int r;

	/* A join of oneself fails at once (tryjoin says EBUSY to it). */
	if (!announce() || pthread_equal(thread, pthread_self()))
		return -LIBC(pthread_join)(thread, retval);
	r = LIBC(pthread_tryjoin_np)(thread, retval);
	if (r != EBUSY)
		return -r;
	BLOCKING(r, LIBC(pthread_join)(thread, retval));
	return -r;
}

UMCG_PRIVATE int umcg__mutex_lock(pthread_mutex_t *mutex)
{
	ENTER_WRAPPER;
	int r;

	if (!announce())
		return -LIBC(pthread_mutex_lock)(mutex);
	/* Anything but "held by another thread" is final: success (a
	 * recursive mutex of ours too), EOWNERDEAD, EINVAL, ... */
	r = LIBC(pthread_mutex_trylock)(mutex);
	if (r != EBUSY)
		return -r;
	BLOCKING(r, LIBC(pthread_mutex_lock)(mutex));
	return -r;
}

UMCG_PRIVATE int umcg__mutex_timedlock(pthread_mutex_t *mutex, const struct timespec *abstime)
{
	ENTER_WRAPPER;
	int r;

	if (!announce())
		return -LIBC(pthread_mutex_timedlock)(mutex, abstime);
	r = LIBC(pthread_mutex_trylock)(mutex);
	if (r != EBUSY)
		return -r;
	BLOCKING(r, LIBC(pthread_mutex_timedlock)(mutex, abstime));
	return -r;
}

/* A condition variable has no look that cannot sleep: every wait sleeps
 * until it is signalled or times out. */
UMCG_PRIVATE int umcg__cond_wait(pthread_cond_t *cond, pthread_mutex_t *mutex)
{
	ENTER_WRAPPER;
	int r;

	if (!announce())
		return -LIBC_COND(pthread_cond_wait)(cond, mutex);
	BLOCKING(r, LIBC_COND(pthread_cond_wait)(cond, mutex));
	return -r;
}

UMCG_PRIVATE int umcg__cond_timedwait(pthread_cond_t *cond, pthread_mutex_t *mutex,
				      const struct timespec *abstime)
{
	ENTER_WRAPPER;
	int r;

	if (!announce())
		return -LIBC_COND(pthread_cond_timedwait)(cond, mutex, abstime);
	BLOCKING(r, LIBC_COND(pthread_cond_timedwait)(cond, mutex, abstime));
	return -r;
}

UMCG_PRIVATE int umcg__sem_wait(sem_t *sem)
{
	ENTER_WRAPPER;
	int r;

	if (!announce())
		return (int)neg(LIBC(sem_wait)(sem));
	r = (int)neg(LIBC(sem_trywait)(sem));
	if (r != -EAGAIN)
		return r;
	BLOCKING(r, (int)neg(LIBC(sem_wait)(sem)));
	return r;
}

UMCG_PRIVATE int umcg__sem_timedwait(sem_t *sem, const struct timespec *abstime)
{
	ENTER_WRAPPER;
	int r;

	if (!announce())
		return (int)neg(LIBC(sem_timedwait)(sem, abstime));
	r = (int)neg(LIBC(sem_trywait)(sem));
	if (r != -EAGAIN)
		return r;
	BLOCKING(r, (int)neg(LIBC(sem_timedwait)(sem, abstime)));
	return r;
}

UMCG_PRIVATE int umcg__fcntl_lock(int fd, int cmd, void *lock)
{
	ENTER_WRAPPER;
	int r;

	if (cmd != F_SETLKW && cmd != F_OFD_SETLKW)
		return -EINVAL;
	if (!announce())
		return (int)neg(fcntl(fd, cmd, lock));
	/* The same request without waiting; only a conflict waits. */
	r = (int)neg(fcntl(fd, cmd == F_SETLKW ? F_SETLK : F_OFD_SETLK, lock));
	if (r != -EAGAIN && r != -EACCES)
		return r;
	BLOCKING(r, (int)neg(fcntl(fd, cmd, lock)));
	return r;
}

/* No attempt can tell whether a flush would wait for the device. */
UMCG_PRIVATE int umcg__fsync(int fd)
{
	ENTER_WRAPPER;
	int r;

	if (!announce())
		return (int)neg(fsync(fd));
	BLOCKING(r, (int)neg(fsync(fd)));
	return r;
}

UMCG_PRIVATE int umcg__fdatasync(int fd)
{
	ENTER_WRAPPER;
	int r;

	if (!announce())
		return (int)neg(fdatasync(fd));
	BLOCKING(r, (int)neg(fdatasync(fd)));
	return r;
}
