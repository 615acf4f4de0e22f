/* SPDX-License-Identifier: MIT */
/*
 * tests/fuzz/fuzz.h - the fuzz harness's entry points, shared by the
 * libFuzzer binary (umcg-fuzz) and the Check smoke suite (test-fuzz-smoke).
 */
#ifndef UMCG_TESTS_FUZZ_H
#define UMCG_TESTS_FUZZ_H

#include <stddef.h>
#include <stdint.h>

/* LLVMFuzzerTestOneInput() - run one input; returns 0, aborts on a failed
 * invariant. Threads, tasks and runtimes are all gone when it returns. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* fz_liveness_ns() - the bound of the harness's watchdog: 10 s, times
 * CK_TIMEOUT_MULTIPLIER when that is set (sanitizer builds). */
uint64_t fz_liveness_ns(void);

#endif /* UMCG_TESTS_FUZZ_H */
