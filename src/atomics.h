/* SPDX-License-Identifier: MIT */
/*
 * atomics.h - named-order atomic accesses to the plain fields of the ABI.
 *
 * struct umcg_task is shared with the kernel and cannot use _Atomic types,
 * so the library reaches its fields through the compiler's __atomic
 * builtins, which are defined on plain objects (and understood by
 * ThreadSanitizer). These wrappers only exist so that every call site names
 * its memory order; the comment at each call says what it pairs with.
 */
#ifndef UMCG_SRC_ATOMICS_H
#define UMCG_SRC_ATOMICS_H

#include <stdbool.h>
#include <stdint.h>

#define umcg__relaxed __ATOMIC_RELAXED
#define umcg__acquire __ATOMIC_ACQUIRE
#define umcg__release __ATOMIC_RELEASE
#define umcg__acq_rel __ATOMIC_ACQ_REL
#define umcg__seq_cst __ATOMIC_SEQ_CST

#define umcg__load(p, order) __atomic_load_n((p), (order))
#define umcg__store(p, v, order) __atomic_store_n((p), (v), (order))
#define umcg__xchg(p, v, order) __atomic_exchange_n((p), (v), (order))
#define umcg__fetch_add(p, v, order) __atomic_fetch_add((p), (v), (order))
#define umcg__fetch_and(p, v, order) __atomic_fetch_and((p), (v), (order))
#define umcg__fence(order) __atomic_thread_fence(order)
/* Orders against a signal handler of the same thread (a compiler barrier). */
#define umcg__signal_fence() __atomic_signal_fence(__ATOMIC_SEQ_CST)

/* Strong compare-and-swap; on failure *@expected is updated. */
#define umcg__cas(p, expected, desired, order)                                       \
	__atomic_compare_exchange_n((p), (expected), (desired), false, (order),      \
				    (order) == __ATOMIC_RELEASE ? __ATOMIC_RELAXED : \
				    (order) == __ATOMIC_ACQ_REL ? __ATOMIC_ACQUIRE : \
								  (order))

#endif /* UMCG_SRC_ATOMICS_H */
