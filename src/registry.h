/* SPDX-License-Identifier: MIT */
/*
 * registry.h - the emulation's process-wide tid -> task map.
 */
#ifndef UMCG_SRC_REGISTRY_H
#define UMCG_SRC_REGISTRY_H

#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include <umcg/abi.h>

/*
 * struct umcg__etask - what the emulation knows about one registered thread.
 *
 * Records are type-stable: once allocated they are never returned to the
 * allocator, only recycled through a free list. A thread that looked one up
 * without a lock may therefore always read it; it checks `tid` afterwards to
 * see whether the record still describes the task it asked for.
 *
 * Fields written once at registration, before the record is published in
 * the table (release), and read by other threads after their lookup
 * (acquire): tid, ut, worker, clock, affinity. The flags are atomics, read
 * and written as the protocol in emulated.c describes.
 */
struct umcg__etask {
	pid_t tid; /* 0 while free */
	struct umcg_task *ut; /* the thread's ABI block; relaxed atomic (ut_of()) */
	bool worker; /* registered with UMCG_CTL_WORKER; relaxed atomic */
	clockid_t clock; /* registration clock */
	int in_lib; /* inside an emulated call: kicks wake, not signal */
	int in_block; /* between umcg_block_begin() and _end() */
	int saved_intercept; /* umcg__intercept before umcg_block_begin() */
	int kick_pending; /* 1: a kick signal is on its way (kicks coalesce) */
	bool have_affinity; /* server: `affinity` holds its CPU set */
	cpu_set_t affinity; /* server: CPUs at registration */
	struct umcg__etask *synced_server; /* worker: whose CPUs it took */
	struct umcg__etask *free_next;

	/* Detection of unannounced blocking (emulated.c, "Detection"). */
	int detected; /* worker: DET_* */
	int reclaim; /* worker: the watcher asked its server to take it back */
	int pins; /* threads of others reading `ut` (emulated.c, pin()) */
	int reclaim_req; /* server: some worker's `reclaim` is set */
	uint64_t kick_cpu; /* worker: its CPU time at the last look of a kicker */
	uint64_t unannounced; /* server: blocks detected on its workers */
	/* Probe descriptors cached by this record's own thread (a kicker):
	 * /proc/self/task/<probe_tid[i]>/syscall is open as probe_fd[i]. */
	pid_t probe_tid[4];
	int probe_fd[4];
	unsigned int probe_next; /* the slot to replace next */
	volatile int probe_busy; /* a probe runs (a handler nests: no cache) */
	/* The watcher's own view of this record; only the watcher touches
	 * these. */
	pid_t m_tid;
	int m_mode;
	int m_asks;
	uint64_t m_cpu;
	/* The slice timer of a worker (emulated.c, "Slice timers"). */
	uint64_t slice_req; /* set by its server: the slice of its next run */
	uint64_t slice_live; /* own thread: the armed deadline not yet taken */
	uint64_t slice_armed; /* own thread: what the timer is set to (0: off) */
	int *slice_fired; /* set by its server: stored 1 when a slice ends */
	int slice_timer; /* the kernel's timer id, once slice_tstate is READY */
	int slice_tstate; /* SLICE_T_*: written by the own thread only */
	/* Every record ever allocated, newest first; never unlinked. */
	struct umcg__etask *all_next;
};

/* The head of the list of every record (acquire load). */
struct umcg__etask *umcg__etask_all(void);

struct umcg__etask *umcg__etask_alloc(void);
void umcg__etask_free(struct umcg__etask *e);

/* Publish @e under its tid. Return: 0, or -EINVAL for a tid out of range,
 * -ENOMEM if a table chunk could not be allocated. */
int umcg__registry_insert(struct umcg__etask *e);
/* Remove @e from the table if it is still there. */
void umcg__registry_remove(struct umcg__etask *e);
/* The live record of @tid, or NULL. */
struct umcg__etask *umcg__registry_lookup(pid_t tid);
/* In a child after fork(): only the forking thread exists; forget all. */
void umcg__registry_forget_all(void);
/* fork() handlers for the registry's lock. */
void umcg__registry_lock(void);
void umcg__registry_unlock(void);

#endif /* UMCG_SRC_REGISTRY_H */
