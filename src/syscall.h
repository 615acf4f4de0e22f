/* SPDX-License-Identifier: MIT */
/*
 * syscall.h - the one place where libumcg turns "-1 and errno" into "-errno".
 *
 * The library promises never to touch errno, so every raw system call it
 * makes goes through umcg__syscall6(), which saves errno around syscall(2)
 * and returns the result or a negative errno. The futex helpers used by the
 * emulation sit on top of it.
 */
#ifndef UMCG_SRC_SYSCALL_H
#define UMCG_SRC_SYSCALL_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <linux/futex.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static inline long umcg__syscall6(long nr, long a, long b, long c, long d, long e, long f)
{
	int saved = errno;
	long ret = syscall(nr, a, b, c, d, e, f);

	if (ret == -1)
		ret = -errno;
	errno = saved;
	return ret;
}

/*
 * umcg__readable() - whether the kernel can read the @len bytes at @p,
 * asked of the kernel instead of found out by a fault. rt_sigprocmask()
 * copies 8 bytes in before it looks at its `how`, so with an invalid one
 * it fails with EFAULT for memory it cannot read and with EINVAL, changing
 * nothing, for memory it can. @len is 8 or a multiple of it. Bytes within
 * one 4 KiB block share a page, so one look covers them all; a range
 * across a boundary takes a look per 8 bytes.
 *
 * The io.h wrappers ask before they read a caller's timespec, sigset or
 * futex word themselves, and hand an unreadable one to the plain call,
 * which fails with EFAULT at once; the emulation's umcg_ctl() asks it of
 * the task block (§4 rule 7).
 */
static inline bool umcg__readable(const void *p, size_t len)
{
	uintptr_t a = (uintptr_t)p;
	size_t off = 0;

	if ((a & 4095) <= 4096 - len)
		len = 8;
	for (; off < len; off += 8)
		if (umcg__syscall6(SYS_rt_sigprocmask, -1, (long)(a + off), 0, 8, 0, 0) == -EFAULT)
			return false;
	return true;
}

static inline pid_t umcg__gettid(void)
{
	return (pid_t)umcg__syscall6(SYS_gettid, 0, 0, 0, 0, 0, 0);
}

/*
 * umcg__futex_wait() - sleep while *@word == @val.
 * @abs: absolute deadline, or NULL for none.
 * @realtime: whether @abs is CLOCK_REALTIME (else CLOCK_MONOTONIC).
 *
 * Return: 0 when woken (possibly spuriously), -EAGAIN if *@word != @val,
 * -EINTR after a signal handler ran, -ETIMEDOUT.
 */
static inline int umcg__futex_wait(uint32_t *word, uint32_t val, const struct timespec *abs,
				   int realtime)
{
	int op = FUTEX_WAIT_BITSET | FUTEX_PRIVATE_FLAG;

	if (realtime)
		op |= FUTEX_CLOCK_REALTIME;
	return (int)umcg__syscall6(SYS_futex, (long)word, op, (long)val, (long)abs, 0,
				   (long)FUTEX_BITSET_MATCH_ANY);
}

/* Wake at most @n threads sleeping on @word. Return: the number woken. */
static inline int umcg__futex_wake_n(uint32_t *word, int n)
{
	return (int)umcg__syscall6(SYS_futex, (long)word, FUTEX_WAKE | FUTEX_PRIVATE_FLAG, n, 0, 0,
				   0);
}

/* Wake at most one thread sleeping on @word. */
static inline int umcg__futex_wake(uint32_t *word)
{
	return umcg__futex_wake_n(word, 1);
}

#endif /* UMCG_SRC_SYSCALL_H */
