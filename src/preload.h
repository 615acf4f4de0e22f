/* SPDX-License-Identifier: MIT */
/*
 * preload.h - what libumcg.so exports for libumcg-preload.so alone.
 *
 * These names live in the version node LIBUMCG_PRIVATE_0.1 of libumcg.map:
 * they are not part of the public interface, carry no promise between
 * releases, and the preload library of the same build is their only user.
 *
 * The functions are the blocking calls of libc that <umcg/io.h> has no
 * public wrapper for, with the same shape as those wrappers (io.c): on the
 * emulation, for a registered worker, an attempt that cannot sleep, then if
 * needed the plain call inside a blocking region; otherwise the plain call.
 * Each returns what the libc call returns on success, or a negative errno,
 * and leaves errno alone; the preload turns that back into libc's
 * convention for the function it stands in for.
 */
#ifndef UMCG_SRC_PRELOAD_H
#define UMCG_SRC_PRELOAD_H

#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <sys/select.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>

#define UMCG_PRIVATE __attribute__((visibility("default")))

/* 1 while a registered worker of the emulation runs the program's code;
 * see emulated.c. Thread-local, initial-exec: one load from %fs. */
extern __thread int umcg__intercept __attribute__((tls_model("initial-exec"))) UMCG_PRIVATE;

UMCG_PRIVATE int umcg__select(int nfds, fd_set *readfds, fd_set *writefds, fd_set *exceptfds,
			      struct timeval *timeout);
UMCG_PRIVATE int umcg__pselect(int nfds, fd_set *readfds, fd_set *writefds, fd_set *exceptfds,
			       const struct timespec *timeout, const sigset_t *sigmask);
UMCG_PRIVATE int umcg__waitid(idtype_t idtype, id_t id, siginfo_t *infop, int options);
/* Return: the seconds left, as sleep(3); never negative. */
UMCG_PRIVATE unsigned int umcg__sleep(unsigned int seconds);
UMCG_PRIVATE int umcg__usleep(useconds_t usec);
UMCG_PRIVATE int umcg__pthread_join(pthread_t thread, void **retval);
UMCG_PRIVATE int umcg__mutex_lock(pthread_mutex_t *mutex);
UMCG_PRIVATE int umcg__mutex_timedlock(pthread_mutex_t *mutex, const struct timespec *abstime);
UMCG_PRIVATE int umcg__cond_wait(pthread_cond_t *cond, pthread_mutex_t *mutex);
UMCG_PRIVATE int umcg__cond_timedwait(pthread_cond_t *cond, pthread_mutex_t *mutex,
				      const struct timespec *abstime);
UMCG_PRIVATE int umcg__sem_wait(sem_t *sem);
UMCG_PRIVATE int umcg__sem_timedwait(sem_t *sem, const struct timespec *abstime);
/* fcntl() with F_SETLKW or F_OFD_SETLKW; any other @cmd is -EINVAL. */
UMCG_PRIVATE int umcg__fcntl_lock(int fd, int cmd, void *lock);
UMCG_PRIVATE int umcg__fsync(int fd);
UMCG_PRIVATE int umcg__fdatasync(int fd);

#endif /* UMCG_SRC_PRELOAD_H */
