/* SPDX-License-Identifier: MIT */
/*
 * internal.h - the contract between the front end (backend.c) and the two
 * implementations of the UMCG ABI (kernel.c, emulated.c).
 *
 * Each backend is one const ops table. backend.c chooses a table once per
 * process and forwards the public calls to it; arguments are validated by
 * the backend, since the order of the checks is part of the ABI.
 */
#ifndef UMCG_SRC_INTERNAL_H
#define UMCG_SRC_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include <umcg/umcg.h>

struct umcg__backend_ops {
	const char *name;
	int (*ctl)(uint32_t flags, struct umcg_task *self, clockid_t which_clock);
	int (*wait)(uint32_t flags, uint64_t abs_timeout);
	int (*kick)(uint32_t flags, pid_t tid);
	int (*block_begin)(void);
	int (*block_end)(void);
	int (*kick_signal)(void);
};

extern const struct umcg__backend_ops umcg__emulated_ops;
extern const struct umcg__backend_ops umcg__kernel_ops;

/*
 * umcg__kernel_detect() - find out whether the kernel backend can run.
 * @why: buffer for a sentence saying why (or why not), @len bytes.
 *
 * Return: 0 if the UMCG syscall numbers are known and the probe confirmed
 * them (the kernel ops are then usable); -ENOSYS if not; -EINVAL if
 * UMCG_SYSCALL_NRS is set but does not parse.
 */
int umcg__kernel_detect(char *why, size_t len);

/* The backend in use; chooses one on first call. NULL if none can run. */
const struct umcg__backend_ops *umcg__backend(int *err);

/* Clocks accepted by umcg_ctl() (check 5). */
static inline bool umcg__clock_valid(clockid_t c)
{
	return c == CLOCK_REALTIME || c == CLOCK_MONOTONIC || c == CLOCK_BOOTTIME || c == CLOCK_TAI;
}

#endif /* UMCG_SRC_INTERNAL_H */
