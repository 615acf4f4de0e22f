/* SPDX-License-Identifier: MIT */
/*
 * nolock_interpose.h - count the calls that server threads make to libc's
 * allocator, its locks and its stdio while a runtime serves
 * (nolock_interpose.c; test_nolock.c uses it).
 */
#ifndef UMCG_TESTS_RUNTIME_NOLOCK_INTERPOSE_H
#define UMCG_TESTS_RUNTIME_NOLOCK_INTERPOSE_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/*
 * A thread is a server to the interposer when its name (PR_GET_NAME)
 * starts with this. The runtime does not name its servers; a thread
 * created by pthread_create() starts with its creator's name, so the test
 * starts the runtime from a thread of that name. A runtime that names its
 * servers "umcg-server<N>" would match as well.
 */
#define NOLOCK_SERVER_PREFIX "umcg-server"

/* The offending calls remembered for the failure message. */
#define NOLOCK_MAX_RECORDS 32

/**
 * struct nolock_call - one counted call.
 * @fn: the interposed function's name.
 * @caller: its return address (in the library, libc or the test).
 * @tid: the server thread that made it.
 */
struct nolock_call {
	const char *fn;
	const void *caller;
	pid_t tid;
};

/*
 * nolock_arm() - count (@on) or stop counting the interposed calls of
 * server threads. The counts and records start again at 0 when armed.
 */
void nolock_arm(bool on);

/* nolock_count() - the calls counted since the last nolock_arm(true). */
long nolock_count(void);

/* nolock_count_of() - how many of them went to @fn (0 if not interposed). */
long nolock_count_of(const char *fn);

/* nolock_record() - the @i-th counted call (i < NOLOCK_MAX_RECORDS), or NULL. */
const struct nolock_call *nolock_record(long i);

/*
 * nolock_reclassify() - forget whether the calling thread is a server: the
 * next interposed call looks at its name again (for a thread that renamed
 * itself after it made such a call).
 */
void nolock_reclassify(void);

/* nolock_is_interposed() - whether this file defines @name. */
bool nolock_is_interposed(const char *name);

#endif /* UMCG_TESTS_RUNTIME_NOLOCK_INTERPOSE_H */
