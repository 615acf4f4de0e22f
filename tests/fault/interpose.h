/* SPDX-License-Identifier: MIT */
/*
 * interpose.h - failing libumcg.so's k-th allocation, pthread_create(),
 * mmap(), timer_create() or io_uring setup (interpose.c).
 */
#ifndef UMCG_TESTS_FAULT_INTERPOSE_H
#define UMCG_TESTS_FAULT_INTERPOSE_H

/* Calls remembered by name for messages; later ones are counted only. */
#define FAULT_MAX_CALLS 4096

enum {
	FAULT_OFF,
	FAULT_COUNT,
	FAULT_FAIL
};

/* fault_init() - find libumcg.so's text; 0, or -ENOENT if not loaded. */
int fault_init(void);

/*
 * fault_set() - reset the count and enter @mode; with FAULT_FAIL, the
 * @k-th eligible call (1-based) fails. Call it while the process runs no
 * thread of the library.
 */
void fault_set(int mode, long k);

/* fault_calls() - eligible calls since fault_set(). */
long fault_calls(void);

/* fault_failed() - the number of the call that was made to fail, or 0. */
long fault_failed(void);

/* fault_what() - the function eligible call @n went to ("?" if unknown). */
const char *fault_what(long n);

#endif /* UMCG_TESTS_FAULT_INTERPOSE_H */
