/* SPDX-License-Identifier: MIT */
/*
 * kernel.c - the kernel backend: raw UMCG system calls of a patched kernel.
 *
 * UMCG never reached mainline, and the numbers of the original proposal
 * (450-452) now belong to set_mempolicy_home_node, cachestat and fchmodat2.
 * So this backend calls nothing until it knows which numbers are UMCG's,
 * from (first match wins):
 *   1. the environment: UMCG_SYSCALL_NRS=ctl,wait,kick;
 *   2. the kernel itself: /sys/kernel/umcg/syscalls ("ctl wait kick\n");
 *   3. the build: -DUMCG_SYSCALL_NRS="ctl,wait,kick", or kernel headers that
 *      define __NR_umcg_ctl, __NR_umcg_wait and __NR_umcg_kick.
 * The numbers are then confirmed by a probe from the (still unregistered)
 * calling thread, whose answers only UMCG gives together:
 *   umcg_ctl(UMCG_CTL_UNREGISTER, NULL, 0) -> -EINVAL (caller not registered)
 *   umcg_kick(0, 0)                        -> -ESRCH  (no task 0)
 *   umcg_wait(1, 0)                        -> -EINVAL (caller not registered)
 * Every argument is 0, a NULL pointer or a small flag value, so a different
 * syscall at those numbers sees nothing it could act on: at 451-453 on a
 * current mainline kernel, cachestat(2, NULL, NULL, 0) and
 * fchmodat2(0, NULL, 0, 0) fail with EFAULT before touching anything, and
 * map_shadow_stack(1, 0, 0) fails with EINVAL.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend.h"
#include "syscall.h"

#define SYSFS_NRS "/sys/kernel/umcg/syscalls"

/* Written once before the release store of the ops pointer in backend.c. */
static long nr_ctl = -1, nr_wait = -1, nr_kick = -1;

/* strtol() reports overflow only through errno: it is set to 0 for each
 * number, read, and put back as the caller left it on every way out. */
static int parse_nrs(const char *s, long out[3])
{
	int saved = errno;
	bool overflow;
	char *end;
	int i;

	for (i = 0; i < 3; i++) {
		while (*s == ' ' || *s == '\t' || (i && *s == ','))
			s++;
		errno = 0;
		out[i] = strtol(s, &end, 10);
		overflow = errno != 0;
		errno = saved;
		if (end == s || overflow || out[i] <= 0 || out[i] > 4095)
			return -EINVAL;
		s = end;
	}
	while (*s == ' ' || *s == '\t' || *s == '\n')
		s++;
	if (*s || out[0] == out[1] || out[1] == out[2] || out[0] == out[2])
		return -EINVAL;
	return 0;
}

static int read_sysfs(long out[3])
{
	char buf[64];
	ssize_t n;
	int saved = errno;
	int fd = open(SYSFS_NRS, O_RDONLY | O_CLOEXEC);

	if (fd < 0) {
		errno = saved;
		return -ENOENT;
	}
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	errno = saved;
	if (n <= 0)
		return -EIO;
	buf[n] = '\0';
	return parse_nrs(buf, out);
}

static int probe(const long nr[3], char *what, size_t len)
{
	long r;

	r = umcg__syscall6(nr[0], UMCG_CTL_UNREGISTER, 0, 0, 0, 0, 0);
	if (r != -EINVAL) {
		snprintf(what, len, "umcg_ctl(UNREGISTER, NULL) gave %ld, not -EINVAL", r);
		return -ENOSYS;
	}
	r = umcg__syscall6(nr[2], 0, 0, 0, 0, 0, 0);
	if (r != -ESRCH) {
		snprintf(what, len, "umcg_kick(0, 0) gave %ld, not -ESRCH", r);
		return -ENOSYS;
	}
	r = umcg__syscall6(nr[1], 1, 0, 0, 0, 0, 0);
	if (r != -EINVAL) {
		snprintf(what, len, "umcg_wait(1, 0) gave %ld, not -EINVAL", r);
		return -ENOSYS;
	}
	return 0;
}

int umcg__kernel_detect(char *why, size_t len)
{
	const char *env = getenv("UMCG_SYSCALL_NRS");
	const char *source = NULL;
	char what[96];
	long nr[3];

	if (env && *env) {
		if (parse_nrs(env, nr)) {
			snprintf(why, len,
				 "UMCG_SYSCALL_NRS=%.40s is not three distinct syscall numbers",
				 env);
			return -EINVAL;
		}
		source = "UMCG_SYSCALL_NRS";
	} else if (read_sysfs(nr) == 0) {
		source = SYSFS_NRS;
	} else {
#if defined(UMCG_SYSCALL_NRS)
		if (parse_nrs(UMCG_SYSCALL_NRS, nr) == 0)
			source = "the build option UMCG_SYSCALL_NRS";
#elif defined(__NR_umcg_ctl) && defined(__NR_umcg_wait) && defined(__NR_umcg_kick)
		nr[0] = __NR_umcg_ctl;
		nr[1] = __NR_umcg_wait;
		nr[2] = __NR_umcg_kick;
		source = "the kernel headers of the build";
#endif
	}
	if (!source) {
		snprintf(why, len,
			 "no UMCG syscall numbers known (" SYSFS_NRS
			 " absent, UMCG_SYSCALL_NRS unset, none built in)");
		return -ENOSYS;
	}
	if (probe(nr, what, sizeof(what))) {
		snprintf(why, len, "syscalls %ld/%ld/%ld from %s failed the probe: %s", nr[0],
			 nr[1], nr[2], source, what);
		return -ENOSYS;
	}
	nr_ctl = nr[0];
	nr_wait = nr[1];
	nr_kick = nr[2];
	snprintf(why, len, "UMCG syscalls %ld/%ld/%ld from %s, confirmed by probe", nr[0], nr[1],
		 nr[2], source);
	return 0;
}

static int k_ctl(uint32_t flags, struct umcg_task *self, clockid_t which_clock)
{
	return (int)umcg__syscall6(nr_ctl, flags, (long)self, which_clock, 0, 0, 0);
}

static int k_wait(uint32_t flags, uint64_t abs_timeout)
{
	return (int)umcg__syscall6(nr_wait, flags, (long)abs_timeout, 0, 0, 0, 0);
}

static int k_kick(uint32_t flags, pid_t tid)
{
	return (int)umcg__syscall6(nr_kick, flags, tid, 0, 0, 0, 0);
}

/* The kernel sees blocking by itself: the hooks cost nothing here; and it
 * needs no kick signal (umcg_kick_signal() returns 0). */
static int k_block(void)
{
	return 0;
}

const struct umcg__backend_ops umcg__kernel_ops = {
	.name = "kernel",
	.ctl = k_ctl,
	.wait = k_wait,
	.kick = k_kick,
	.block_begin = k_block,
	.block_end = k_block,
	.kick_signal = k_block,
};
