/* SPDX-License-Identifier: MIT */
/*
 * policy_common.h - what the built-in policies share.
 */
#ifndef UMCG_SRC_POLICY_COMMON_H
#define UMCG_SRC_POLICY_COMMON_H

#include <stdint.h>

/*
 * umcg__first_victim() - where a thief starts its scan of the other
 * servers. Per-thread xorshift state (one per server thread, so thieves
 * neither share a cache line nor all start at server 0). Steal is only
 * called on server threads, and a server thread serves one runtime, so one
 * state per thread is enough.
 */
static inline unsigned int umcg__first_victim(unsigned int thief, unsigned int nr_servers)
{
	static _Thread_local uint32_t state;
	uint32_t x = state;

	if (!x)
		x = (thief + 1) * UINT32_C(0x9e3779b9) | 1;
	x ^= x << 13;
	x ^= x >> 17;
	x ^= x << 5;
	state = x;
	return x % nr_servers;
}

#endif /* UMCG_SRC_POLICY_COMMON_H */
