/* SPDX-License-Identifier: MIT */
/*
 * umcg/io.h - blocking calls that give the worker's server away while they
 * sleep.
 *
 * On a UMCG kernel a worker that sleeps in any system call frees its server
 * by itself. The futex emulation only knows about the sleeps it is told
 * about (umcg_block_begin() / umcg_block_end() in <umcg/umcg.h>). The
 * functions below are the common blocking calls with that announcement
 * built in. Each takes the arguments of the libc call it is named after
 * (umcg_read() is read(), and so on) and does this:
 *
 *  - kernel backend: the plain call.
 *  - emulation, caller not a registered worker (a server, an ordinary
 *    thread, a worker already inside its own umcg_block_begin() region):
 *    the plain call. The result is what the plain call gives.
 *  - emulation, caller a worker: first an attempt that cannot sleep
 *    (RWF_NOWAIT, MSG_DONTWAIT, WNOHANG, LOCK_NB, a zero timeout, a look at
 *    the futex word), which costs no scheduling at all when it succeeds;
 *    only if the call would sleep: umcg_block_begin(), the plain call,
 *    umcg_block_end(). The worker is BLOCKED meanwhile and its server runs
 *    others; when the call returns the worker is RUNNABLE on its server's
 *    list and continues once the server runs it again.
 *
 * The first attempt of each call:
 *
 *   read, readv, pread     preadv2(RWF_NOWAIT)     regular files: a page-cache
 *   write, writev, pwrite  pwritev2(RWF_NOWAIT)    miss takes the blocking
 *                                                  path, and so does every
 *                                                  buffered write on file
 *                                                  systems that refuse
 *                                                  RWF_NOWAIT writes (ext4
 *                                                  among them today)
 *   recv*, send*           MSG_DONTWAIT added
 *   accept, accept4        poll(POLLIN, 0), then the call
 *   connect                none, except that an O_NONBLOCK socket gets
 *                          the plain call; a blocking one always takes
 *                          the blocking path
 *   poll, ppoll,           timeout 0
 *   epoll_wait, epoll_pwait
 *   nanosleep,             none; a zero (or already past) sleep is the
 *   clock_nanosleep        plain call, which returns at once
 *   futex_wait             compare the word and the deadline in user space
 *   waitpid                WNOHANG added
 *   flock                  LOCK_NB added
 *
 * The semantics are those of the plain call, including on descriptors that
 * are O_NONBLOCK (a would-block read of one returns -EAGAIN without any
 * scheduling) and for full transfers: where the plain blocking call would
 * have moved every byte (a write to a blocking pipe or stream socket, a
 * read of a regular file that does not reach its end, MSG_WAITALL on a
 * stream socket), a first attempt that moved only part goes on with the
 * rest, blocking as needed, and reports the total. Only the system calls
 * made differ: a descriptor's flags and type are looked at (fcntl(F_GETFL),
 * fstat(), getsockopt(SO_TYPE)) only after a first attempt that would have
 * slept or that moved part of the data (so a short read costs one fstat()),
 * and nothing is cached per descriptor.
 *
 * Return values: what the call returns on success (a count, a descriptor,
 * a pid, 0) or a negative errno. errno is never modified.
 *
 * Signals. The emulation preempts a worker with its kick signal
 * (umcg_kick_signal()). A wrapper blocks that signal, in the calling thread
 * only, for the duration of the call that may sleep (the worker is BLOCKED
 * then, so there is nothing to preempt), so the library's own signal never
 * interrupts a wrapped call: a wrapper returns -EINTR exactly where the plain
 * call would for a signal of the program (the kernel never restarts poll,
 * epoll_wait, the sleeps, or socket calls with a SO_RCVTIMEO/SO_SNDTIMEO
 * timeout; most others it restarts under SA_RESTART; see signal(7)). The one exception is
 * umcg_futex_wait(), which reports an interruption as a wake-up (0).
 *
 * Bad pointers. The wrappers never dereference a pointer the plain call
 * would have the kernel read (a timeout, a request, a signal mask, a futex
 * word) before the kernel has said it can read it: an unreadable one gives
 * -EFAULT, as the system call does, in every thread and on both backends,
 * never a SIGSEGV (glibc's own ppoll() copies its timeout in user space and
 * does crash on an unreadable one).
 *
 * Cancellation. The wrappers of cancellation points are cancellation points.
 * A worker cancelled while BLOCKED in one runs umcg_block_end() as the first
 * step of unwinding, so it goes back to its server (RUNNABLE, then RUNNING)
 * before its cleanup handlers run, and the server learns that it is gone the
 * way it learns about any worker exit.
 *
 * Blocking that goes around these wrappers, on the emulation: a program run
 * with libumcg-preload.so (libumcg-preload(7)) has libc's blocking calls
 * made by these same wrappers. What neither sees (raw system calls, page
 * faults, libc's internal locks, other calls) the emulation's detection
 * notices within a bound (umcg_detect_set(), 2 ms by default): it makes
 * the worker BLOCKED and wakes its server. With detection off, such a call
 * keeps the worker RUNNING from the scheduler's point of view and its
 * server waits for it: without preemption for as long as the call sleeps;
 * with preemption until the next slice end, when the kick signal interrupts
 * the call (see umcg_kick_signal() and the README for what that does to
 * each call).
 *
 * Other rules: the wrappers are not async-signal-safe on the emulation (use
 * the plain calls in signal handlers). Like every call of the library, the
 * first call of a wrapper chooses the backend if nothing has yet.
 */
#ifndef UMCG_IO_H
#define UMCG_IO_H

#include <poll.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/select.h> /* sigset_t, also under strict ISO C */
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <time.h>

#include <umcg/umcg.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------
 * Files, pipes and other descriptors
 * ---------------------------------------------------------------------- */

/**
 * umcg_read() - read(2) that frees the server while it sleeps.
 * @fd: the descriptor.
 * @buf: where to store the data.
 * @count: at most this many bytes.
 *
 * Return: the number of bytes read (0 at end of file), or a negative errno
 *  (-EAGAIN only where the plain read() would fail with EAGAIN: an
 *  O_NONBLOCK descriptor with nothing to read).
 * Context: any thread; a worker gives its server away while the read sleeps.
 */
UMCG_API ssize_t umcg_read(int fd, void *buf, size_t count);

/**
 * umcg_readv() - readv(2) that frees the server while it sleeps.
 * @fd: the descriptor.
 * @iov: the buffers.
 * @iovcnt: their number.
 *
 * Return: the number of bytes read, or a negative errno.
 * Context: any thread; a worker gives its server away while the read sleeps.
 */
UMCG_API ssize_t umcg_readv(int fd, const struct iovec *iov, int iovcnt);

/**
 * umcg_pread() - pread(2) that frees the server while it sleeps.
 * @fd: the descriptor.
 * @buf: where to store the data.
 * @count: at most this many bytes.
 * @offset: the file offset to read from (the file position is unchanged).
 *
 * Return: the number of bytes read, or a negative errno (-EINVAL for a
 *  negative @offset, -ESPIPE for a pipe or socket).
 * Context: any thread; a worker gives its server away while the read sleeps.
 */
UMCG_API ssize_t umcg_pread(int fd, void *buf, size_t count, off_t offset);

/**
 * umcg_write() - write(2) that frees the server while it sleeps.
 * @fd: the descriptor.
 * @buf: the data.
 * @count: its length.
 *
 * Return: the number of bytes written (all of them on a blocking pipe or
 *  stream socket unless an error or a signal of the program stops the
 *  write part way, as with write()), or a negative errno.
 * Context: any thread; a worker gives its server away while the write sleeps.
 */
UMCG_API ssize_t umcg_write(int fd, const void *buf, size_t count);

/**
 * umcg_writev() - writev(2) that frees the server while it sleeps.
 * @fd: the descriptor.
 * @iov: the buffers.
 * @iovcnt: their number.
 *
 * If a write that did not sleep took only part of the data, the rest is
 * written by further calls; another writer of the same pipe or socket may
 * then interleave, as it may with any write larger than PIPE_BUF.
 *
 * Return: the number of bytes written, or a negative errno.
 * Context: any thread; a worker gives its server away while the write sleeps.
 */
UMCG_API ssize_t umcg_writev(int fd, const struct iovec *iov, int iovcnt);

/**
 * umcg_pwrite() - pwrite(2) that frees the server while it sleeps.
 * @fd: the descriptor.
 * @buf: the data.
 * @count: its length.
 * @offset: the file offset to write at.
 *
 * Return: the number of bytes written, or a negative errno.
 * Context: any thread; a worker gives its server away while the write sleeps.
 */
UMCG_API ssize_t umcg_pwrite(int fd, const void *buf, size_t count, off_t offset);

/**
 * umcg_flock() - flock(2) that frees the server while it waits for the lock.
 * @fd: the descriptor.
 * @operation: LOCK_SH, LOCK_EX or LOCK_UN, optionally with LOCK_NB.
 *
 * Return: 0, or a negative errno (-EWOULDBLOCK with LOCK_NB when the lock is
 *  held elsewhere).
 * Context: any thread; a worker gives its server away while it waits.
 */
UMCG_API int umcg_flock(int fd, int operation);

/* ------------------------------------------------------------------------
 * Sockets
 * ---------------------------------------------------------------------- */

/**
 * umcg_recv() - recv(2) that frees the server while it sleeps.
 * @sockfd: the socket.
 * @buf: where to store the data.
 * @len: at most this many bytes.
 * @flags: MSG_* flags; with MSG_DONTWAIT or MSG_ERRQUEUE (which never
 *	sleep) this is the plain call.
 *
 * Return: the number of bytes received (0 when a stream peer has shut
 *  down), or a negative errno.
 * Context: any thread; a worker gives its server away while it sleeps.
 */
UMCG_API ssize_t umcg_recv(int sockfd, void *buf, size_t len, int flags);

/**
 * umcg_recvfrom() - recvfrom(2) that frees the server while it sleeps.
 * @sockfd: the socket.
 * @buf: where to store the data.
 * @len: at most this many bytes.
 * @flags: as for umcg_recv().
 * @src_addr: where to store the sender's address, or NULL.
 * @addrlen: in: the size of @src_addr; out: the address's length.
 *
 * Return: the number of bytes received, or a negative errno.
 * Context: any thread; a worker gives its server away while it sleeps.
 */
UMCG_API ssize_t umcg_recvfrom(int sockfd, void *buf, size_t len, int flags,
			       struct sockaddr *src_addr, socklen_t *addrlen);

/**
 * umcg_recvmsg() - recvmsg(2) that frees the server while it sleeps.
 * @sockfd: the socket.
 * @msg: the message header, as for recvmsg().
 * @flags: as for umcg_recv().
 *
 * With MSG_WAITALL on a stream socket, data that arrives after a partial
 * first attempt is received into the rest of @msg's buffers; the address
 * and ancillary data are those of the first part, and @msg->msg_flags
 * collects the flags of every part.
 *
 * Return: the number of bytes received, or a negative errno.
 * Context: any thread; a worker gives its server away while it sleeps.
 */
UMCG_API ssize_t umcg_recvmsg(int sockfd, struct msghdr *msg, int flags);

/**
 * umcg_send() - send(2) that frees the server while it sleeps.
 * @sockfd: the socket.
 * @buf: the data.
 * @len: its length.
 * @flags: MSG_* flags; with MSG_DONTWAIT this is the plain call.
 *
 * Return: the number of bytes sent, or a negative errno.
 * Context: any thread; a worker gives its server away while it sleeps.
 */
UMCG_API ssize_t umcg_send(int sockfd, const void *buf, size_t len, int flags);

/**
 * umcg_sendto() - sendto(2) that frees the server while it sleeps.
 * @sockfd: the socket.
 * @buf: the data.
 * @len: its length.
 * @flags: as for umcg_send().
 * @dest_addr: the destination, or NULL on a connected socket.
 * @addrlen: the size of @dest_addr.
 *
 * Return: the number of bytes sent, or a negative errno.
 * Context: any thread; a worker gives its server away while it sleeps.
 */
UMCG_API ssize_t umcg_sendto(int sockfd, const void *buf, size_t len, int flags,
			     const struct sockaddr *dest_addr, socklen_t addrlen);

/**
 * umcg_sendmsg() - sendmsg(2) that frees the server while it sleeps.
 * @sockfd: the socket.
 * @msg: the message, as for sendmsg().
 * @flags: as for umcg_send().
 *
 * On a blocking stream socket, data left over by a partial first attempt is
 * sent by further calls without @msg's ancillary data (which went with the
 * first part).
 *
 * Return: the number of bytes sent, or a negative errno.
 * Context: any thread; a worker gives its server away while it sleeps.
 */
UMCG_API ssize_t umcg_sendmsg(int sockfd, const struct msghdr *msg, int flags);

/**
 * umcg_accept() - accept(2) that frees the server while it waits.
 * @sockfd: the listening socket.
 * @addr: where to store the peer's address, or NULL.
 * @addrlen: in: the size of @addr; out: the address's length.
 *
 * The connection is accepted only after poll() said the socket is
 * readable. If several threads accept on one blocking listening socket,
 * another may take that connection first, and this call then sleeps in
 * accept() without freeing the server; an O_NONBLOCK listening socket has
 * no such window (the call returns -EAGAIN instead).
 *
 * Return: the new descriptor, or a negative errno.
 * Context: any thread; a worker gives its server away while it waits.
 */
UMCG_API int umcg_accept(int sockfd, struct sockaddr *addr, socklen_t *addrlen);

/**
 * umcg_accept4() - accept4(2) that frees the server while it waits.
 * @sockfd: the listening socket.
 * @addr: where to store the peer's address, or NULL.
 * @addrlen: in: the size of @addr; out: the address's length.
 * @flags: SOCK_NONBLOCK and/or SOCK_CLOEXEC for the new descriptor.
 *
 * As umcg_accept().
 *
 * Return: the new descriptor, or a negative errno.
 * Context: any thread; a worker gives its server away while it waits.
 */
UMCG_API int umcg_accept4(int sockfd, struct sockaddr *addr, socklen_t *addrlen, int flags);

/**
 * umcg_connect() - connect(2) that frees the server while it waits.
 * @sockfd: the socket.
 * @addr: the peer's address.
 * @addrlen: its size.
 *
 * connect() has no attempt that cannot sleep, so on a blocking socket a
 * worker always gives its server away for the call, even when the
 * connection is made at once (as it usually is for Unix sockets).
 *
 * Return: 0, or a negative errno (-EINPROGRESS on an O_NONBLOCK socket whose
 *  connection is under way).
 * Context: any thread; a worker gives its server away while it waits.
 */
UMCG_API int umcg_connect(int sockfd, const struct sockaddr *addr, socklen_t addrlen);

/* ------------------------------------------------------------------------
 * Waiting for events
 * ---------------------------------------------------------------------- */

/**
 * umcg_poll() - poll(2) that frees the server while it waits.
 * @fds: the descriptors and events.
 * @nfds: their number.
 * @timeout: milliseconds; negative: no limit; 0: the plain call.
 *
 * Return: the number of descriptors with events, 0 on timeout, or a
 *  negative errno (-EINTR after a signal of the program).
 * Context: any thread; a worker gives its server away while it waits.
 */
UMCG_API int umcg_poll(struct pollfd *fds, nfds_t nfds, int timeout);

/**
 * umcg_ppoll() - ppoll(2) that frees the server while it waits.
 * @fds: the descriptors and events.
 * @nfds: their number.
 * @tmo_p: the relative timeout; NULL: no limit; zero: the plain call.
 * @sigmask: the signal mask during the wait, or NULL. The kick signal of
 *	the emulation is added to it for a worker's wait.
 *
 * Return: the number of descriptors with events, 0 on timeout, or a
 *  negative errno.
 * Context: any thread; a worker gives its server away while it waits.
 */
UMCG_API int umcg_ppoll(struct pollfd *fds, nfds_t nfds, const struct timespec *tmo_p,
			const sigset_t *sigmask);

/**
 * umcg_epoll_wait() - epoll_wait(2) that frees the server while it waits.
 * @epfd: the epoll instance.
 * @events: where to store the events.
 * @maxevents: at most this many.
 * @timeout: milliseconds; negative: no limit; 0: the plain call.
 *
 * Return: the number of events, 0 on timeout, or a negative errno.
 * Context: any thread; a worker gives its server away while it waits.
 */
UMCG_API int umcg_epoll_wait(int epfd, struct epoll_event *events, int maxevents, int timeout);

/**
 * umcg_epoll_pwait() - epoll_pwait(2) that frees the server while it waits.
 * @epfd: the epoll instance.
 * @events: where to store the events.
 * @maxevents: at most this many.
 * @timeout: milliseconds; negative: no limit; 0: the plain call.
 * @sigmask: as for umcg_ppoll().
 *
 * Return: the number of events, 0 on timeout, or a negative errno.
 * Context: any thread; a worker gives its server away while it waits.
 */
UMCG_API int umcg_epoll_pwait(int epfd, struct epoll_event *events, int maxevents, int timeout,
			      const sigset_t *sigmask);

/**
 * umcg_waitpid() - waitpid(2) that frees the server while it waits.
 * @pid: the child (or group) to wait for, as for waitpid().
 * @wstatus: where to store the status, or NULL.
 * @options: WNOHANG, WUNTRACED, WCONTINUED...; with WNOHANG this is the
 *	plain call.
 *
 * Return: the child's pid, 0 (WNOHANG and nothing to report), or a negative
 *  errno (-ECHILD when there is no such child).
 * Context: any thread; a worker gives its server away while it waits.
 */
UMCG_API pid_t umcg_waitpid(pid_t pid, int *wstatus, int options);

/* ------------------------------------------------------------------------
 * Sleeping
 *
 * These put the thread to sleep in the kernel: a worker holds no server
 * meanwhile, but it is still a sleeping thread. The runtime's
 * umcg_sleep_until() (<umcg/runtime.h>) is the cheaper way for a runtime
 * worker.
 * ---------------------------------------------------------------------- */

/**
 * umcg_nanosleep() - nanosleep(2) that frees the server while it sleeps.
 * @req: how long.
 * @rem: where to store the time left after an interruption, or NULL.
 *
 * Return: 0; -EINTR after a signal of the program (@rem then holds the time
 *  left); -EINVAL for a negative or malformed @req; -EFAULT for a NULL or
 *  unreadable @req (or an unwritable @rem after an interruption).
 * Context: any thread; a worker gives its server away while it sleeps.
 */
UMCG_API int umcg_nanosleep(const struct timespec *req, struct timespec *rem);

/**
 * umcg_clock_nanosleep() - clock_nanosleep(2) that frees the server while it
 * sleeps.
 * @clockid: the clock.
 * @flags: 0 (relative) or TIMER_ABSTIME.
 * @req: the duration, or with TIMER_ABSTIME the time to wake at.
 * @rem: as for umcg_nanosleep(), relative sleeps only.
 *
 * Unlike clock_nanosleep(), which returns a positive error number, this
 * returns a negative errno.
 *
 * Return: 0; -EINTR after a signal of the program; -EINVAL for a
 *  negative or malformed @req (tv_sec below 0, tv_nsec outside
 *  0..999999999), an unknown @clockid, or CLOCK_THREAD_CPUTIME_ID (the
 *  caller's own CPU clock, which clock_nanosleep() refuses); -ENOTSUP for
 *  a clock that cannot be slept on; -EFAULT for a NULL or unreadable @req
 *  (or an unwritable @rem after an interruption).
 * Context: any thread; a worker gives its server away while it sleeps.
 */
UMCG_API int umcg_clock_nanosleep(clockid_t clockid, int flags, const struct timespec *req,
				  struct timespec *rem);

/* ------------------------------------------------------------------------
 * Futexes (private to the process)
 * ---------------------------------------------------------------------- */

/**
 * umcg_futex_wait() - sleep while *@uaddr == @val, freeing the server.
 * @uaddr: the futex word: 4-byte aligned, readable memory of this process.
 * @val: the value it is expected to hold.
 * @abs_timeout: an absolute CLOCK_MONOTONIC deadline, or NULL for none.
 *
 * A private futex wait (FUTEX_WAIT_BITSET, any bit), paired with
 * umcg_futex_wake() or any private FUTEX_WAKE on the same word. The word is
 * compared in user space first: if it differs, or the deadline has passed,
 * the call returns without sleeping and without scheduling.
 *
 * Return: 0 when woken; also after a spurious wake-up or a signal, so the
 *  caller re-checks its condition, as with every futex wait;
 *  -EAGAIN if *@uaddr != @val; -ETIMEDOUT when the deadline passed;
 *  -EINVAL for a misaligned @uaddr or a malformed @abs_timeout;
 *  -EFAULT for a NULL or unreadable @uaddr, or an unreadable @abs_timeout
 *  (checked in the order of this list, with the timeout before the word:
 *  NULL, alignment, @abs_timeout, the word).
 * Context: any thread; a worker gives its server away while it sleeps.
 */
UMCG_API int umcg_futex_wait(uint32_t *uaddr, uint32_t val, const struct timespec *abs_timeout);

/**
 * umcg_futex_wake() - wake threads sleeping on a private futex word.
 * @uaddr: the futex word.
 * @nr: wake at most this many (INT_MAX: all); at least 1.
 *
 * Never sleeps. A worker woken in umcg_futex_wait() becomes RUNNABLE on its
 * server's list and continues once its server runs it.
 *
 * A private FUTEX_WAKE finds its waiters by address and never reads the
 * word, so an address that nobody waits on gives 0 whether or not it is
 * mapped, NULL included, exactly as the kernel answers; there is no -EFAULT.
 *
 * Return: the number of threads woken (0 if none waits on @uaddr); -EINVAL
 *  if @nr < 1 or @uaddr is misaligned.
 * Context: any thread.
 */
UMCG_API int umcg_futex_wake(uint32_t *uaddr, int nr);

#ifdef __cplusplus
}
#endif

#endif /* UMCG_IO_H */
