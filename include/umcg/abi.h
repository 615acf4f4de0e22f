/* SPDX-License-Identifier: MIT */
/*
 * umcg/abi.h - the UMCG (User Managed Concurrency Groups) user/kernel ABI.
 *
 * This header describes the memory shared between a thread and whoever
 * schedules it: struct umcg_task, its state and flag bits, and the flags of
 * umcg_ctl(). Both libumcg backends (the kernel one and the futex emulation)
 * read and write exactly this layout.
 *
 * Coexistence with a patched kernel: when <linux/umcg.h> exists (a kernel
 * built with the UMCG patches installs it), this header includes it and
 * uses its definitions instead of repeating them; the static asserts below
 * then check that the kernel's layout is the one libumcg was written for.
 * Including the two headers in either order is fine.
 *
 * Layout (64 bytes, 64-byte aligned, packed):
 *
 *   offset  field                 written by     meaning
 *   0       state                 kernel + user  bits 0-7 state, 8-15 flags,
 *                                                16-31 free for user space
 *   4       next_tid              user           task to switch to in
 *                                                umcg_wait(); 0 once used
 *   8       server_tid            user           the server hosting the task
 *   12      __hole[1]             -              must be 0
 *   16      blocked_ts            kernel         ns, last entry into BLOCKED
 *   24      runnable_ts           kernel         ns, last entry into RUNNABLE
 *   32      runnable_workers_ptr  kernel + user  server: list head;
 *                                                worker: next pointer
 *   40      __zero[3]             -              must be 0
 */
#ifndef UMCG_ABI_H
#define UMCG_ABI_H

#include <stddef.h>
#include <stdint.h>

#if defined(__has_include)
#if __has_include(<linux/umcg.h>)
#include <linux/umcg.h>
#endif
#endif

#if !defined(_LINUX_UMCG_H) && !defined(_UAPI_LINUX_UMCG_H)

/** UMCG_TASK_ALIGN - required alignment of struct umcg_task. */
#define UMCG_TASK_ALIGN 64

/* Task states: (state & UMCG_TASK_MASK). */
#define UMCG_TASK_NONE 0x0000U
#define UMCG_TASK_RUNNING 0x0001U
#define UMCG_TASK_RUNNABLE 0x0002U
#define UMCG_TASK_BLOCKED 0x0003U
#define UMCG_TASK_MASK 0x00ffU

/* Task flags: (state & UMCG_TF_MASK). */
/* The server asks the running worker to leave the CPU (see umcg_kick()). */
#define UMCG_TF_PREEMPT 0x0100U
/* "I set RUNNABLE myself and am about to call umcg_wait()". */
#define UMCG_TF_COND_WAIT 0x0200U
#define UMCG_TF_MASK 0xff00U

/* umcg_ctl() flags. */
#define UMCG_CTL_REGISTER 0x00001U
#define UMCG_CTL_UNREGISTER 0x00002U
#define UMCG_CTL_WORKER 0x10000U

/**
 * struct umcg_task - the per-thread UMCG control block.
 * @state: state (bits 0-7), flags (bits 8-15), user bits (16-31).
 * @next_tid: tid of the task umcg_wait() should switch to; reset to 0 by
 *	the backend when that switch happened.
 * @server_tid: tid of the server hosting this task (a server: itself).
 * @__hole: reserved, must be 0.
 * @blocked_ts: time of the last transition to BLOCKED, in the clock given
 *	at registration, in nanoseconds.
 * @runnable_ts: time of the last transition to RUNNABLE, same clock.
 * @runnable_workers_ptr: on a server, the head of its list of runnable
 *	workers (a struct umcg_task pointer stored as a u64); on a worker, the
 *	next element of that list.
 * @__zero: reserved, must be 0.
 */
struct umcg_task {
	uint32_t state;
	uint32_t next_tid;
	uint32_t server_tid;
	uint32_t __hole[1];
	uint64_t blocked_ts;
	uint64_t runnable_ts;
	uint64_t runnable_workers_ptr;
	uint64_t __zero[3];
} __attribute__((packed, aligned(UMCG_TASK_ALIGN)));

#endif /* !_LINUX_UMCG_H */

#if !defined(__cplusplus)
#define UMCG__STATIC_ASSERT _Static_assert
#define UMCG__ALIGNOF _Alignof
#else
#define UMCG__STATIC_ASSERT static_assert
#define UMCG__ALIGNOF alignof
#endif

UMCG__STATIC_ASSERT(sizeof(struct umcg_task) == 64, "struct umcg_task must be 64 bytes");
UMCG__STATIC_ASSERT(UMCG__ALIGNOF(struct umcg_task) == 64,
		    "struct umcg_task must be 64-byte aligned");
UMCG__STATIC_ASSERT(UMCG_TASK_ALIGN == 64, "UMCG_TASK_ALIGN must be 64");
UMCG__STATIC_ASSERT(offsetof(struct umcg_task, state) == 0, "state offset");
UMCG__STATIC_ASSERT(offsetof(struct umcg_task, next_tid) == 4, "next_tid offset");
UMCG__STATIC_ASSERT(offsetof(struct umcg_task, server_tid) == 8, "server_tid offset");
UMCG__STATIC_ASSERT(offsetof(struct umcg_task, __hole) == 12, "__hole offset");
UMCG__STATIC_ASSERT(offsetof(struct umcg_task, blocked_ts) == 16, "blocked_ts offset");
UMCG__STATIC_ASSERT(offsetof(struct umcg_task, runnable_ts) == 24, "runnable_ts offset");
UMCG__STATIC_ASSERT(offsetof(struct umcg_task, runnable_workers_ptr) == 32,
		    "runnable_workers_ptr offset");
UMCG__STATIC_ASSERT(offsetof(struct umcg_task, __zero) == 40, "__zero offset");
UMCG__STATIC_ASSERT(UMCG_TASK_RUNNING == 1 && UMCG_TASK_RUNNABLE == 2 && UMCG_TASK_BLOCKED == 3,
		    "task states");
UMCG__STATIC_ASSERT(UMCG_TF_PREEMPT == 0x100 && UMCG_TF_COND_WAIT == 0x200, "task flags");
UMCG__STATIC_ASSERT(UMCG_CTL_REGISTER == 1 && UMCG_CTL_UNREGISTER == 2 &&
			    UMCG_CTL_WORKER == 0x10000,
		    "umcg_ctl flags");

#endif /* UMCG_ABI_H */
