/* SPDX-License-Identifier: MIT */
/*
 * rt_sync.h - what runtime.c lends sync.c: a park of its own, and holds
 * that keep a worker's memory alive across a wake-up (runtime.c,
 * "Parking" and "Holds").
 */
#ifndef UMCG_SRC_RT_SYNC_H
#define UMCG_SRC_RT_SYNC_H

#include <umcg/runtime.h>

/* umcg_park() on the worker's second word. Return: 0; -EPERM if the caller
 * is not a runtime worker; -EDEADLK where umcg_park() refuses. */
int umcg__sync_park(void);
/* umcg_unpark() of @w from that word. Return: 0; -ECHILD after fork(). */
int umcg__sync_unpark(struct umcg_worker *w);
/* Keep @w from being freed until the matching put. Only while @w is known
 * to be alive (waiting for the caller). */
void umcg__worker_hold(struct umcg_worker *w);
void umcg__worker_put(struct umcg_worker *w);

#endif /* UMCG_SRC_RT_SYNC_H */
