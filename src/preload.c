/* SPDX-License-Identifier: MIT */
/*
 * preload.c - libumcg-preload.so: libc's blocking calls, announced.
 *
 * This library defines libc's blocking entry points (read, poll, sleep,
 * pthread_mutex_lock, ...; the list is libumcg-preload(7)). Loaded with
 * LD_PRELOAD, or linked before libc, its definitions come first in the
 * dynamic linker's search order, so calls from the program and from every
 * library but libc itself land here. Each entry asks one question: is the
 * caller a worker of the emulation running the program's code
 * (umcg__intercept, a thread-local flag of libumcg.so that only the thread
 * itself writes)? If not (an ordinary thread, a server, any thread on the
 * kernel backend, any call before a backend is chosen, a call the library
 * makes itself from inside a wrapper or a blocking region), it calls the
 * next definition, libc's, found once with dlsym(RTLD_NEXT). If so, it
 * calls the <umcg/io.h> wrapper of the same name, or for the calls without
 * one the private function of io.c (src/preload.h), and turns the result
 * back into libc's convention (-1 and errno, or an error number for the
 * pthread functions and clock_nanosleep()). The code that decides whether
 * and how to announce a sleep is io.c's, for both.
 *
 * Protocol: each resolved address is stored with release and loaded with
 * acquire. Threads that race to resolve the same name store the same value
 * (dlsym() of one name from one object), so a lost race costs one more
 * lookup and nothing else.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
/* The fortified headers define inline versions of some of these calls. */
#undef _FORTIFY_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/file.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <umcg/io.h>

#include "preload.h"

#define ENTRY __attribute__((visibility("default")))
#define likely(x) __builtin_expect(!!(x), 1)

/* ---- the next definitions ----------------------------------------------- */

static void missing(const char *name)
{
	static const char msg[] = "libumcg-preload: no definition of ";

	syscall(SYS_write, 2, msg, sizeof(msg) - 1);
	syscall(SYS_write, 2, name, strlen(name));
	syscall(SYS_write, 2, " after this library\n", 20);
	abort();
}

/* The definition of @name that this library stands in front of. */
static void *next_of(void **slot, const char *name, const char *version)
{
	void *p = __atomic_load_n(slot, __ATOMIC_ACQUIRE);

	if (likely(p))
		return p;
	p = version ? dlvsym(RTLD_NEXT, name, version) : dlsym(RTLD_NEXT, name);
	if (!p)
		missing(name);
	__atomic_store_n(slot, p, __ATOMIC_RELEASE);
	return p;
}

#define SLOT(fn) static void *next_##fn
#define NEXT(fn) ((__typeof__(&fn))next_of(&next_##fn, #fn, NULL))
/* glibc keeps an old pthread_cond_* ABI under an older version. */
#define NEXT_V(fn, ver) ((__typeof__(&fn))next_of(&next_##fn, #fn, ver))

/* A result of io.c (value or -errno) in the convention of libc. */
static long ret_errno(long r)
{
	if (r < 0) {
		errno = (int)-r;
		return -1;
	}
	return r;
}

/* ---- read and write ------------------------------------------------------ */

SLOT(read);
SLOT(write);
SLOT(readv);
SLOT(writev);
SLOT(pread);
SLOT(pwrite);
SLOT(pread64);
SLOT(pwrite64);

ENTRY ssize_t read(int fd, void *buf, size_t count)
{
	if (likely(!umcg__intercept))
		return NEXT(read)(fd, buf, count);
	return ret_errno(umcg_read(fd, buf, count));
}

ENTRY ssize_t write(int fd, const void *buf, size_t count)
{
	if (likely(!umcg__intercept))
		return NEXT(write)(fd, buf, count);
	return ret_errno(umcg_write(fd, buf, count));
}

ENTRY ssize_t readv(int fd, const struct iovec *iov, int iovcnt)
{
	if (likely(!umcg__intercept))
		return NEXT(readv)(fd, iov, iovcnt);
	return ret_errno(umcg_readv(fd, iov, iovcnt));
}

ENTRY ssize_t writev(int fd, const struct iovec *iov, int iovcnt)
{
	if (likely(!umcg__intercept))
		return NEXT(writev)(fd, iov, iovcnt);
	return ret_errno(umcg_writev(fd, iov, iovcnt));
}

ENTRY ssize_t pread(int fd, void *buf, size_t count, off_t offset)
{
	if (likely(!umcg__intercept))
		return NEXT(pread)(fd, buf, count, offset);
	return ret_errno(umcg_pread(fd, buf, count, offset));
}

ENTRY ssize_t pwrite(int fd, const void *buf, size_t count, off_t offset)
{
	if (likely(!umcg__intercept))
		return NEXT(pwrite)(fd, buf, count, offset);
	return ret_errno(umcg_pwrite(fd, buf, count, offset));
}

/* On x86_64 off_t is 64 bits already: the 64 variants are the same calls. */
ENTRY ssize_t pread64(int fd, void *buf, size_t count, off64_t offset)
{
	if (likely(!umcg__intercept))
		return NEXT(pread64)(fd, buf, count, offset);
	return ret_errno(umcg_pread(fd, buf, count, (off_t)offset));
}

ENTRY ssize_t pwrite64(int fd, const void *buf, size_t count, off64_t offset)
{
	if (likely(!umcg__intercept))
		return NEXT(pwrite64)(fd, buf, count, offset);
	return ret_errno(umcg_pwrite(fd, buf, count, (off_t)offset));
}

/* ---- sockets ------------------------------------------------------------- */

/*
 * Under _GNU_SOURCE glibc declares the socket calls' address arguments as
 * transparent unions (__SOCKADDR_ARG); the definitions must say the same.
 */
SLOT(recv);
SLOT(send);
SLOT(recvfrom);
SLOT(sendto);
SLOT(recvmsg);
SLOT(sendmsg);
SLOT(accept);
SLOT(accept4);
SLOT(connect);

ENTRY ssize_t recv(int fd, void *buf, size_t len, int flags)
{
	if (likely(!umcg__intercept))
		return NEXT(recv)(fd, buf, len, flags);
	return ret_errno(umcg_recv(fd, buf, len, flags));
}

ENTRY ssize_t send(int fd, const void *buf, size_t len, int flags)
{
	if (likely(!umcg__intercept))
		return NEXT(send)(fd, buf, len, flags);
	return ret_errno(umcg_send(fd, buf, len, flags));
}

ENTRY ssize_t recvfrom(int fd, void *buf, size_t len, int flags, __SOCKADDR_ARG addr,
		       socklen_t *addrlen)
{
	if (likely(!umcg__intercept))
		return NEXT(recvfrom)(fd, buf, len, flags, addr, addrlen);
	return ret_errno(umcg_recvfrom(fd, buf, len, flags, addr.__sockaddr__, addrlen));
}

ENTRY ssize_t sendto(int fd, const void *buf, size_t len, int flags, __CONST_SOCKADDR_ARG addr,
		     socklen_t addrlen)
{
	if (likely(!umcg__intercept))
		return NEXT(sendto)(fd, buf, len, flags, addr, addrlen);
	return ret_errno(umcg_sendto(fd, buf, len, flags, addr.__sockaddr__, addrlen));
}

ENTRY ssize_t recvmsg(int fd, struct msghdr *msg, int flags)
{
	if (likely(!umcg__intercept))
		return NEXT(recvmsg)(fd, msg, flags);
	return ret_errno(umcg_recvmsg(fd, msg, flags));
}

ENTRY ssize_t sendmsg(int fd, const struct msghdr *msg, int flags)
{
	if (likely(!umcg__intercept))
		return NEXT(sendmsg)(fd, msg, flags);
	return ret_errno(umcg_sendmsg(fd, msg, flags));
}

ENTRY int accept(int fd, __SOCKADDR_ARG addr, socklen_t *addrlen)
{
	if (likely(!umcg__intercept))
		return NEXT(accept)(fd, addr, addrlen);
	return (int)ret_errno(umcg_accept(fd, addr.__sockaddr__, addrlen));
}

ENTRY int accept4(int fd, __SOCKADDR_ARG addr, socklen_t *addrlen, int flags)
{
	if (likely(!umcg__intercept))
		return NEXT(accept4)(fd, addr, addrlen, flags);
	return (int)ret_errno(umcg_accept4(fd, addr.__sockaddr__, addrlen, flags));
}

ENTRY int connect(int fd, __CONST_SOCKADDR_ARG addr, socklen_t addrlen)
{
	if (likely(!umcg__intercept))
		return NEXT(connect)(fd, addr, addrlen);
	return (int)ret_errno(umcg_connect(fd, addr.__sockaddr__, addrlen));
}

/* ---- waiting for events -------------------------------------------------- */

SLOT(poll);
SLOT(ppoll);
SLOT(select);
SLOT(pselect);
SLOT(epoll_wait);
SLOT(epoll_pwait);

ENTRY int poll(struct pollfd *fds, nfds_t nfds, int timeout)
{
	if (likely(!umcg__intercept))
		return NEXT(poll)(fds, nfds, timeout);
	return (int)ret_errno(umcg_poll(fds, nfds, timeout));
}

ENTRY int ppoll(struct pollfd *fds, nfds_t nfds, const struct timespec *tmo_p,
		const sigset_t *sigmask)
{
	if (likely(!umcg__intercept))
		return NEXT(ppoll)(fds, nfds, tmo_p, sigmask);
	return (int)ret_errno(umcg_ppoll(fds, nfds, tmo_p, sigmask));
}

ENTRY int select(int nfds, fd_set *readfds, fd_set *writefds, fd_set *exceptfds,
		 struct timeval *timeout)
{
	if (likely(!umcg__intercept))
		return NEXT(select)(nfds, readfds, writefds, exceptfds, timeout);
	return (int)ret_errno(umcg__select(nfds, readfds, writefds, exceptfds, timeout));
}

ENTRY int pselect(int nfds, fd_set *readfds, fd_set *writefds, fd_set *exceptfds,
		  const struct timespec *timeout, const sigset_t *sigmask)
{
	if (likely(!umcg__intercept))
		return NEXT(pselect)(nfds, readfds, writefds, exceptfds, timeout, sigmask);
	return (int)ret_errno(umcg__pselect(nfds, readfds, writefds, exceptfds, timeout, sigmask));
}

ENTRY int epoll_wait(int epfd, struct epoll_event *events, int maxevents, int timeout)
{
	if (likely(!umcg__intercept))
		return NEXT(epoll_wait)(epfd, events, maxevents, timeout);
	return (int)ret_errno(umcg_epoll_wait(epfd, events, maxevents, timeout));
}

ENTRY int epoll_pwait(int epfd, struct epoll_event *events, int maxevents, int timeout,
		      const sigset_t *sigmask)
{
	if (likely(!umcg__intercept))
		return NEXT(epoll_pwait)(epfd, events, maxevents, timeout, sigmask);
	return (int)ret_errno(umcg_epoll_pwait(epfd, events, maxevents, timeout, sigmask));
}

/* ---- sleeping ------------------------------------------------------------ */

SLOT(sleep);
SLOT(usleep);
SLOT(nanosleep);
SLOT(clock_nanosleep);

ENTRY unsigned int sleep(unsigned int seconds)
{
	if (likely(!umcg__intercept))
		return NEXT(sleep)(seconds);
	return umcg__sleep(seconds);
}

ENTRY int usleep(useconds_t usec)
{
	if (likely(!umcg__intercept))
		return NEXT(usleep)(usec);
	return (int)ret_errno(umcg__usleep(usec));
}

ENTRY int nanosleep(const struct timespec *req, struct timespec *rem)
{
	if (likely(!umcg__intercept))
		return NEXT(nanosleep)(req, rem);
	return (int)ret_errno(umcg_nanosleep(req, rem));
}

/* Returns an error number, as clock_nanosleep() does; errno is not set. */
ENTRY int clock_nanosleep(clockid_t clockid, int flags, const struct timespec *req,
			  struct timespec *rem)
{
	if (likely(!umcg__intercept))
		return NEXT(clock_nanosleep)(clockid, flags, req, rem);
	return -umcg_clock_nanosleep(clockid, flags, req, rem);
}

/* ---- processes and threads ----------------------------------------------- */

SLOT(wait);
SLOT(waitpid);
SLOT(waitid);
SLOT(pthread_join);

ENTRY pid_t wait(int *wstatus)
{
	if (likely(!umcg__intercept))
		return NEXT(wait)(wstatus);
	return (pid_t)ret_errno(umcg_waitpid(-1, wstatus, 0));
}

ENTRY pid_t waitpid(pid_t pid, int *wstatus, int options)
{
	if (likely(!umcg__intercept))
		return NEXT(waitpid)(pid, wstatus, options);
	return (pid_t)ret_errno(umcg_waitpid(pid, wstatus, options));
}

ENTRY int waitid(idtype_t idtype, id_t id, siginfo_t *infop, int options)
{
	if (likely(!umcg__intercept))
		return NEXT(waitid)(idtype, id, infop, options);
	return (int)ret_errno(umcg__waitid(idtype, id, infop, options));
}

ENTRY int pthread_join(pthread_t thread, void **retval)
{
	if (likely(!umcg__intercept))
		return NEXT(pthread_join)(thread, retval);
	return -umcg__pthread_join(thread, retval);
}

/* ---- locks --------------------------------------------------------------- */

SLOT(pthread_mutex_lock);
SLOT(pthread_mutex_timedlock);
SLOT(pthread_cond_wait);
SLOT(pthread_cond_timedwait);
SLOT(sem_wait);
SLOT(sem_timedwait);
SLOT(flock);
SLOT(fcntl);
SLOT(fcntl64);

ENTRY int pthread_mutex_lock(pthread_mutex_t *mutex)
{
	if (likely(!umcg__intercept))
		return NEXT(pthread_mutex_lock)(mutex);
	return -umcg__mutex_lock(mutex);
}

ENTRY int pthread_mutex_timedlock(pthread_mutex_t *mutex, const struct timespec *abstime)
{
	if (likely(!umcg__intercept))
		return NEXT(pthread_mutex_timedlock)(mutex, abstime);
	return -umcg__mutex_timedlock(mutex, abstime);
}

/* libc's next definitions are those of the current condition variable ABI
 * (GLIBC_2.3.2). An unversioned definition also satisfies a reference to
 * the older GLIBC_2.2.5 one, which no program gets without asking for it
 * with .symver; such a program would get the current ABI here. */
ENTRY int pthread_cond_wait(pthread_cond_t *cond, pthread_mutex_t *mutex)
{
	if (likely(!umcg__intercept))
		return NEXT_V(pthread_cond_wait, "GLIBC_2.3.2")(cond, mutex);
	return -umcg__cond_wait(cond, mutex);
}

ENTRY int pthread_cond_timedwait(pthread_cond_t *cond, pthread_mutex_t *mutex,
				 const struct timespec *abstime)
{
	if (likely(!umcg__intercept))
		return NEXT_V(pthread_cond_timedwait, "GLIBC_2.3.2")(cond, mutex, abstime);
	return -umcg__cond_timedwait(cond, mutex, abstime);
}

ENTRY int sem_wait(sem_t *sem)
{
	if (likely(!umcg__intercept))
		return NEXT(sem_wait)(sem);
	return (int)ret_errno(umcg__sem_wait(sem));
}

ENTRY int sem_timedwait(sem_t *sem, const struct timespec *abstime)
{
	if (likely(!umcg__intercept))
		return NEXT(sem_timedwait)(sem, abstime);
	return (int)ret_errno(umcg__sem_timedwait(sem, abstime));
}

ENTRY int flock(int fd, int operation)
{
	if (likely(!umcg__intercept))
		return NEXT(flock)(fd, operation);
	return (int)ret_errno(umcg_flock(fd, operation));
}

/*
 * fcntl(): the one argument after @cmd, when there is one, is an int or a
 * pointer; read as a pointer-sized value it is passed on unchanged either
 * way (libc's own fcntl() reads it the same way). Only the commands that
 * wait for a lock are announced.
 */
static int fcntl_common(void **slot, const char *name, int fd, int cmd, void *arg)
{
	int (*next)(int, int, ...);

	if (likely(!umcg__intercept) || (cmd != F_SETLKW && cmd != F_OFD_SETLKW)) {
		next = (int (*)(int, int, ...))next_of(slot, name, NULL);
		return next(fd, cmd, arg);
	}
	return (int)ret_errno(umcg__fcntl_lock(fd, cmd, arg));
}

ENTRY int fcntl(int fd, int cmd, ...)
{
	va_list ap;
	void *arg;

	va_start(ap, cmd);
	arg = va_arg(ap, void *);
	va_end(ap);
	return fcntl_common(&next_fcntl, "fcntl", fd, cmd, arg);
}

ENTRY int fcntl64(int fd, int cmd, ...)
{
	va_list ap;
	void *arg;

	va_start(ap, cmd);
	arg = va_arg(ap, void *);
	va_end(ap);
	return fcntl_common(&next_fcntl64, "fcntl64", fd, cmd, arg);
}

/* ---- flushing ------------------------------------------------------------ */

SLOT(fsync);
SLOT(fdatasync);

ENTRY int fsync(int fd)
{
	if (likely(!umcg__intercept))
		return NEXT(fsync)(fd);
	return (int)ret_errno(umcg__fsync(fd));
}

ENTRY int fdatasync(int fd)
{
	if (likely(!umcg__intercept))
		return NEXT(fdatasync)(fd);
	return (int)ret_errno(umcg__fdatasync(fd));
}

/* ---- the fortified variants (-D_FORTIFY_SOURCE) -------------------------- */

/*
 * A program built with _FORTIFY_SOURCE calls these where the compiler knows
 * the size of the buffer. A call whose buffer is too small goes to libc's
 * definition, which reports the overflow and ends the process; any other is
 * the plain call's.
 */
ssize_t __read_chk(int fd, void *buf, size_t nbytes, size_t buflen);
ssize_t __pread_chk(int fd, void *buf, size_t nbytes, off_t offset, size_t buflen);
ssize_t __pread64_chk(int fd, void *buf, size_t nbytes, off64_t offset, size_t buflen);
ssize_t __recv_chk(int fd, void *buf, size_t len, size_t buflen, int flags);
ssize_t __recvfrom_chk(int fd, void *buf, size_t len, size_t buflen, int flags, __SOCKADDR_ARG addr,
		       socklen_t *addrlen);
int __poll_chk(struct pollfd *fds, nfds_t nfds, int timeout, size_t fdslen);
int __ppoll_chk(struct pollfd *fds, nfds_t nfds, const struct timespec *tmo_p,
		const sigset_t *sigmask, size_t fdslen);

SLOT(__read_chk);
SLOT(__pread_chk);
SLOT(__pread64_chk);
SLOT(__recv_chk);
SLOT(__recvfrom_chk);
SLOT(__poll_chk);
SLOT(__ppoll_chk);

ENTRY ssize_t __read_chk(int fd, void *buf, size_t nbytes, size_t buflen)
{
	if (likely(!umcg__intercept) || nbytes > buflen)
		return NEXT(__read_chk)(fd, buf, nbytes, buflen);
	return ret_errno(umcg_read(fd, buf, nbytes));
}

ENTRY ssize_t __pread_chk(int fd, void *buf, size_t nbytes, off_t offset, size_t buflen)
{
	if (likely(!umcg__intercept) || nbytes > buflen)
		return NEXT(__pread_chk)(fd, buf, nbytes, offset, buflen);
	return ret_errno(umcg_pread(fd, buf, nbytes, offset));
}

ENTRY ssize_t __pread64_chk(int fd, void *buf, size_t nbytes, off64_t offset, size_t buflen)
{
	if (likely(!umcg__intercept) || nbytes > buflen)
		return NEXT(__pread64_chk)(fd, buf, nbytes, offset, buflen);
	return ret_errno(umcg_pread(fd, buf, nbytes, (off_t)offset));
}

ENTRY ssize_t __recv_chk(int fd, void *buf, size_t len, size_t buflen, int flags)
{
	if (likely(!umcg__intercept) || len > buflen)
		return NEXT(__recv_chk)(fd, buf, len, buflen, flags);
	return ret_errno(umcg_recv(fd, buf, len, flags));
}

ENTRY ssize_t __recvfrom_chk(int fd, void *buf, size_t len, size_t buflen, int flags,
			     __SOCKADDR_ARG addr, socklen_t *addrlen)
{
	if (likely(!umcg__intercept) || len > buflen)
		return NEXT(__recvfrom_chk)(fd, buf, len, buflen, flags, addr, addrlen);
	return ret_errno(umcg_recvfrom(fd, buf, len, flags, addr.__sockaddr__, addrlen));
}

ENTRY int __poll_chk(struct pollfd *fds, nfds_t nfds, int timeout, size_t fdslen)
{
	if (likely(!umcg__intercept) || fdslen / sizeof(*fds) < nfds)
		return NEXT(__poll_chk)(fds, nfds, timeout, fdslen);
	return (int)ret_errno(umcg_poll(fds, nfds, timeout));
}

ENTRY int __ppoll_chk(struct pollfd *fds, nfds_t nfds, const struct timespec *tmo_p,
		      const sigset_t *sigmask, size_t fdslen)
{
	if (likely(!umcg__intercept) || fdslen / sizeof(*fds) < nfds)
		return NEXT(__ppoll_chk)(fds, nfds, tmo_p, sigmask, fdslen);
	return (int)ret_errno(umcg_ppoll(fds, nfds, tmo_p, sigmask));
}
