/* SPDX-License-Identifier: MIT */
/*
 * backend.h - the contract between the front end (backend.c) and the two
 * implementations of the UMCG ABI (kernel.c, emulated.c).
 *
 * Each backend is one const ops table. backend.c chooses a table once per
 * process and forwards the public calls to it; arguments are validated by
 * the backend, since the order of the checks is part of the ABI.
 */
#ifndef UMCG_SRC_BACKEND_H
#define UMCG_SRC_BACKEND_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include <umcg/umcg.h>

#include "atomics.h"

struct umcg__backend_ops {
	const char *name;
	int (*ctl)(uint32_t flags, struct umcg_task *self, clockid_t which_clock);
	int (*wait)(uint32_t flags, uint64_t abs_timeout);
	int (*kick)(uint32_t flags, pid_t tid);
	int (*block_begin)(void);
	int (*block_end)(void);
	int (*kick_signal)(void);
	/*
	 * slice_request() - optional (NULL: the caller preempts @t itself).
	 * @t's server, before it runs worker @t (thread @tid): end that run
	 * @slice_ns after it starts (0 = no slice end), by a timer of @t's
	 * own, which preempts @t as umcg_preempt() would and stores 1 to
	 * *@fired when it does. A later request replaces one not yet taken.
	 * Return: 0; -ENOTSUP if @t can have no timer (the caller preempts @t
	 * itself); -ESRCH, -EINVAL for a @tid that is not @t.
	 */
	int (*slice_request)(struct umcg_task *t, pid_t tid, uint64_t slice_ns, int *fired);
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

/* Blocks the emulation detected on the workers of server @server_tid
 * while it is registered (0 on the kernel backend). */
uint64_t umcg__unannounced_blocks(pid_t server_tid);

/* The calling worker, if detection made it BLOCKED and it runs user code
 * again, goes back under its server first (emulated.c). */
void umcg__settle(void);

/* The backend in use; chooses one on first call. NULL if none can run. */
const struct umcg__backend_ops *umcg__backend(int *err);

/*
 * umcg__runnable_push() - push @w on @server's runnable list, the way the
 * kernel does: CAS the head, @w's runnable_workers_ptr holding the old one.
 * seq_cst: a server that stored RUNNABLE|TF_COND_WAIT and then takes its
 * list (seq_cst xchg in umcg_runnable_take()) sees this push, or the wake
 * that the pusher does next sees the server RUNNABLE. It also releases the
 * pusher's earlier writes (runnable_ts, the next pointer) to that xchg.
 * Only whole-list takes, no pops: no ABA problem.
 */
static inline void umcg__runnable_push(struct umcg_task *server, struct umcg_task *w)
{
	uint64_t head = umcg__load(&server->runnable_workers_ptr, umcg__relaxed);

	do {
		umcg__store(&w->runnable_workers_ptr, head, umcg__relaxed);
	} while (!umcg__cas(&server->runnable_workers_ptr, &head, (uint64_t)(uintptr_t)w,
			    umcg__seq_cst));
}

/* Clocks accepted by umcg_ctl() (doc/umcg-abi.md §4 rule 5). */
static inline bool umcg__clock_valid(clockid_t c)
{
	return c == CLOCK_REALTIME || c == CLOCK_MONOTONIC || c == CLOCK_BOOTTIME || c == CLOCK_TAI;
}

#endif /* UMCG_SRC_BACKEND_H */
