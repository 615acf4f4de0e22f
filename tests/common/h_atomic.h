/* SPDX-License-Identifier: MIT */
/*
 * h_atomic.h - the tests' one spelling of atomics: <stdatomic.h>, with
 * h_atomic() to reach a plain object (an ABI word of struct umcg_task, a
 * counter shared with a worker) as an _Atomic one. Every access names its
 * memory order. Included by test_common.h; the libFuzzer harness, which
 * does not link Check, includes it alone.
 */
#ifndef UMCG_TESTS_H_ATOMIC_H
#define UMCG_TESTS_H_ATOMIC_H

#include <stdatomic.h>

/* h_atomic() - the plain object *@p seen as an _Atomic object. */
#define h_atomic(p) ((_Atomic __typeof__(*(p)) *)(p))

#endif /* UMCG_TESTS_H_ATOMIC_H */
