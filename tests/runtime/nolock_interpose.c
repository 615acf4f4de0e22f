/* SPDX-License-Identifier: MIT */
/*
 * nolock_interpose.c - libc's allocator, locks and stdio, interposed in the
 * test executable, counting the calls that server threads make.
 *
 * How. The functions below are defined in the executable, which comes first
 * in the dynamic linker's search order (the executable is linked with
 * ENABLE_EXPORTS, so that each one is in its dynamic symbol table), so they
 * win over libc's, and over a sanitizer runtime's, for every object in the
 * process: libumcg.so's calls land here, and so do libc's own calls to
 * malloc(), which glibc makes through its PLT so that an allocator can be
 * replaced. Each one forwards to the next definition, found with
 * dlsym(RTLD_NEXT) (the technique of tests/fault/interpose.c, whose
 * bootstrap buffer is copied here: dlsym() may allocate).
 *
 * What is not seen: libc's internal use of a stdio lock (printf() takes
 * its stream's lock without calling flockfile()). That costs nothing here:
 * a server runs only the library's code, so any stdio on a server starts
 * with the library calling one of the stdio functions below, and
 * test_nolock.c checks that every such function the library imports is
 * interposed (test_imports_are_interposed).
 *
 * Who counts. A call counts when the calling thread is a server (its name
 * starts with NOLOCK_SERVER_PREFIX; the answer is cached in a thread-local
 * variable at the thread's first interposed call, so the hot path of every
 * other thread is one TLS load and a compare) and the test has armed the
 * counter (nolock_arm()). The test arms it after umcg_rt_start() returned
 * and disarms it before umcg_rt_stop() (or umcg_rt_destroy()) is called;
 * see test_nolock.c for why that window holds the whole server loop and
 * nothing else.
 *
 * Ordering. `armed` is read relaxed: the arming store comes after
 * umcg_rt_start() saw every server's release store of `ready`, which the
 * server makes after its start-up calls, so those calls cannot see it
 * armed; the disarming store comes before umcg_rt_stop()'s seq_cst store
 * of `stopping`, which a server loads (seq_cst) before it leaves its loop,
 * so its tear-down calls see it disarmed. The count is a seq_cst RMW; a
 * record is written by the call that got its slot and read by the test
 * after the servers are gone (pthread_join() orders it).
 *
 * This file is compiled without sanitizers: its wrappers run before a
 * sanitizer's runtime is ready (its own start-up allocates).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#undef _FORTIFY_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "nolock_interpose.h"

/* Every function defined below, in one list. */
/* clang-format off */
#define NOLOCK_FUNCTIONS(X) \
	X(malloc) X(calloc) X(realloc) X(reallocarray) X(free) \
	X(posix_memalign) X(aligned_alloc) X(memalign) X(valloc) X(pvalloc) \
	X(pthread_mutex_lock) X(pthread_mutex_trylock) X(pthread_mutex_timedlock) \
	X(pthread_mutex_clocklock) X(pthread_rwlock_rdlock) X(pthread_rwlock_wrlock) \
	X(pthread_rwlock_tryrdlock) X(pthread_rwlock_trywrlock) X(pthread_rwlock_timedrdlock) \
	X(pthread_rwlock_timedwrlock) X(pthread_spin_lock) X(pthread_spin_trylock) \
	X(pthread_cond_wait) X(pthread_cond_timedwait) X(pthread_cond_clockwait) \
	X(sem_wait) X(sem_timedwait) X(sem_clockwait) \
	X(pthread_create) X(pthread_join) X(pthread_tryjoin_np) X(pthread_timedjoin_np) \
	X(flockfile) X(ftrylockfile) X(funlockfile) X(fopen) X(fopen64) X(fdopen) X(freopen) \
	X(fclose) X(fflush) X(fputs) X(puts) X(fputc) X(putc) X(fwrite) X(fread) X(fgets) \
	X(fgetc) X(getc) X(ungetc) X(setvbuf) X(setbuf) X(perror) X(getline) X(getdelim) \
	X(fseek) X(ftell) X(rewind) X(open_memstream) X(fmemopen) \
	X(printf) X(fprintf) X(dprintf) X(sprintf) X(snprintf) X(asprintf) \
	X(vprintf) X(vfprintf) X(vdprintf) X(vsprintf) X(vsnprintf) X(vasprintf) \
	X(__printf_chk) X(__fprintf_chk) X(__dprintf_chk) X(__sprintf_chk) \
	X(__snprintf_chk) X(__asprintf_chk) X(__vprintf_chk) X(__vfprintf_chk) \
	X(__vdprintf_chk) X(__vsprintf_chk) X(__vsnprintf_chk) X(__vasprintf_chk)
/* clang-format on */

#define ENUM(name) FN_##name,
enum {
	NOLOCK_FUNCTIONS(ENUM) NR_FNS
};
#undef ENUM

#define NAME(name) #name,
static const char *const fn_names[NR_FNS] = { NOLOCK_FUNCTIONS(NAME) };
#undef NAME

/* ---- counting ------------------------------------------------------------- */

static atomic_int armed;
static atomic_long count;
static atomic_long per_fn[NR_FNS];
static struct nolock_call records[NOLOCK_MAX_RECORDS];

/* 0: not looked at yet, 1: a server, -1: not a server. */
static __thread int server_class;

static bool self_is_server(void)
{
	char name[16] = "";

	if (!server_class) {
		/* The raw call: no sanitizer interceptor, no lock. */
		syscall(SYS_prctl, PR_GET_NAME, (unsigned long)name, 0UL, 0UL, 0UL);
		server_class =
			strncmp(name, NOLOCK_SERVER_PREFIX, strlen(NOLOCK_SERVER_PREFIX)) ? -1 : 1;
	}
	return server_class > 0;
}

static void note(int fn, const void *caller)
{
	long n;

	if (!atomic_load_explicit(&armed, memory_order_relaxed) || !self_is_server())
		return;
	n = atomic_fetch_add(&count, 1);
	atomic_fetch_add_explicit(&per_fn[fn], 1, memory_order_relaxed);
	if (n < NOLOCK_MAX_RECORDS) {
		records[n].fn = fn_names[fn];
		records[n].caller = caller;
		records[n].tid = (pid_t)syscall(SYS_gettid);
	}
}

void nolock_arm(bool on)
{
	int i;

	if (on) {
		atomic_store(&count, 0);
		for (i = 0; i < NR_FNS; i++)
			atomic_store(&per_fn[i], 0);
		memset(records, 0, sizeof(records));
	}
	atomic_store(&armed, on);
}

long nolock_count(void)
{
	return atomic_load(&count);
}

long nolock_count_of(const char *fn)
{
	int i;

	for (i = 0; i < NR_FNS; i++)
		if (!strcmp(fn_names[i], fn))
			return atomic_load(&per_fn[i]);
	return 0;
}

const struct nolock_call *nolock_record(long i)
{
	return i >= 0 && i < NOLOCK_MAX_RECORDS && i < nolock_count() ? &records[i] : NULL;
}

void nolock_reclassify(void)
{
	server_class = 0;
}

bool nolock_is_interposed(const char *name)
{
	int i;

	for (i = 0; i < NR_FNS; i++)
		if (!strcmp(fn_names[i], name))
			return true;
	return false;
}

/* ---- resolving the next definitions (as in tests/fault/interpose.c) ------- */

static _Alignas(64) unsigned char boot_buf[64 * 1024];
static size_t boot_used;
static __thread int resolving;

static void *boot_alloc(size_t size)
{
	size_t at = (boot_used + 63) & ~(size_t)63;

	if (size > sizeof(boot_buf) - at)
		return NULL;
	boot_used = at + size;
	return boot_buf + at;
}

static bool is_boot(const void *p)
{
	return (const unsigned char *)p >= boot_buf &&
	       (const unsigned char *)p < boot_buf + sizeof(boot_buf);
}

static void *next_fn(const char *name)
{
	void *f;

	resolving++;
	f = dlsym(RTLD_NEXT, name);
	resolving--;
	return f;
}

/* The fortified entry points that -D_FORTIFY_SOURCE turns calls into. */
int __vprintf_chk(int flag, const char *fmt, va_list ap);
int __vfprintf_chk(FILE *f, int flag, const char *fmt, va_list ap);
int __vdprintf_chk(int fd, int flag, const char *fmt, va_list ap);
int __vsprintf_chk(char *s, int flag, size_t slen, const char *fmt, va_list ap);
int __vsnprintf_chk(char *s, size_t n, int flag, size_t slen, const char *fmt, va_list ap);
int __vasprintf_chk(char **s, int flag, const char *fmt, va_list ap);
int __printf_chk(int flag, const char *fmt, ...);
int __fprintf_chk(FILE *f, int flag, const char *fmt, ...);
int __dprintf_chk(int fd, int flag, const char *fmt, ...);
int __sprintf_chk(char *s, int flag, size_t slen, const char *fmt, ...);
int __snprintf_chk(char *s, size_t n, int flag, size_t slen, const char *fmt, ...);
int __asprintf_chk(char **s, int flag, const char *fmt, ...);

#define DECLARE_REAL(name) static __typeof__(name) *real_##name;
NOLOCK_FUNCTIONS(DECLARE_REAL)
#undef DECLARE_REAL

#define RESOLVE(name)                                                          \
	do {                                                                   \
		if (!real_##name)                                              \
			real_##name = (__typeof__(real_##name))next_fn(#name); \
	} while (0)

/* Resolved before main() while the process has one thread, so that the
 * wrappers only read these pointers later. */
#define RESOLVE_ONE(name) RESOLVE(name);
__attribute__((constructor)) static void resolve_all(void)
{
	NOLOCK_FUNCTIONS(RESOLVE_ONE)
}
#undef RESOLVE_ONE

#define RET_ADDR __builtin_return_address(0)

/* ---- the allocator -------------------------------------------------------- */

void *malloc(size_t size)
{
	if (resolving)
		return boot_alloc(size);
	note(FN_malloc, RET_ADDR);
	RESOLVE(malloc);
	return real_malloc(size);
}

void *calloc(size_t n, size_t size)
{
	if (resolving)
		return n && size > SIZE_MAX / n ? NULL : boot_alloc(n * size);
	note(FN_calloc, RET_ADDR);
	RESOLVE(calloc);
	return real_calloc(n, size);
}

void *realloc(void *p, size_t size)
{
	void *q;

	if (resolving)
		return NULL;
	note(FN_realloc, RET_ADDR);
	if (is_boot(p)) {
		/* Grown out of the bootstrap buffer: copy what fits. */
		size_t left = (size_t)(boot_buf + sizeof(boot_buf) - (unsigned char *)p);

		RESOLVE(malloc);
		q = real_malloc(size);
		if (q)
			memcpy(q, p, left < size ? left : size);
		return q;
	}
	RESOLVE(realloc);
	return real_realloc(p, size);
}

void free(void *p)
{
	/* dlsym() frees its last error message, and a sanitizer's start-up
	 * frees before resolve_all() ran: such blocks are let go. */
	if (resolving || is_boot(p))
		return;
	note(FN_free, RET_ADDR);
	if (!p || !real_free)
		return;
	real_free(p);
}

/* A plain forwarder: note the call, then the next definition. */
#define FORWARD(ret, name, params, args)   \
	ret name params                    \
	{                                  \
		note(FN_##name, RET_ADDR); \
		RESOLVE(name);             \
		return real_##name args;   \
	}

FORWARD(void *, reallocarray, (void *p, size_t n, size_t size), (p, n, size))
FORWARD(int, posix_memalign, (void **pp, size_t align, size_t size), (pp, align, size))
FORWARD(void *, aligned_alloc, (size_t align, size_t size), (align, size))
FORWARD(void *, memalign, (size_t align, size_t size), (align, size))
FORWARD(void *, valloc, (size_t size), (size))
FORWARD(void *, pvalloc, (size_t size), (size))

/* ---- locks and threads ---------------------------------------------------- */

FORWARD(int, pthread_mutex_lock, (pthread_mutex_t * m), (m))
FORWARD(int, pthread_mutex_trylock, (pthread_mutex_t * m), (m))
FORWARD(int, pthread_mutex_timedlock, (pthread_mutex_t * m, const struct timespec *t), (m, t))
FORWARD(int, pthread_mutex_clocklock, (pthread_mutex_t * m, clockid_t c, const struct timespec *t),
	(m, c, t))
FORWARD(int, pthread_rwlock_rdlock, (pthread_rwlock_t * l), (l))
FORWARD(int, pthread_rwlock_wrlock, (pthread_rwlock_t * l), (l))
FORWARD(int, pthread_rwlock_tryrdlock, (pthread_rwlock_t * l), (l))
FORWARD(int, pthread_rwlock_trywrlock, (pthread_rwlock_t * l), (l))
FORWARD(int, pthread_rwlock_timedrdlock, (pthread_rwlock_t * l, const struct timespec *t), (l, t))
FORWARD(int, pthread_rwlock_timedwrlock, (pthread_rwlock_t * l, const struct timespec *t), (l, t))
FORWARD(int, pthread_spin_lock, (pthread_spinlock_t * l), (l))
FORWARD(int, pthread_spin_trylock, (pthread_spinlock_t * l), (l))
FORWARD(int, pthread_cond_wait, (pthread_cond_t * c, pthread_mutex_t *m), (c, m))
FORWARD(int, pthread_cond_timedwait,
	(pthread_cond_t * c, pthread_mutex_t *m, const struct timespec *t), (c, m, t))
FORWARD(int, pthread_cond_clockwait,
	(pthread_cond_t * c, pthread_mutex_t *m, clockid_t k, const struct timespec *t),
	(c, m, k, t))
FORWARD(int, sem_wait, (sem_t * s), (s))
FORWARD(int, sem_timedwait, (sem_t * s, const struct timespec *t), (s, t))
FORWARD(int, sem_clockwait, (sem_t * s, clockid_t c, const struct timespec *t), (s, c, t))
FORWARD(int, pthread_create,
	(pthread_t * th, const pthread_attr_t *a, void *(*fn)(void *), void *arg), (th, a, fn, arg))
FORWARD(int, pthread_join, (pthread_t th, void **ret), (th, ret))
FORWARD(int, pthread_tryjoin_np, (pthread_t th, void **ret), (th, ret))
FORWARD(int, pthread_timedjoin_np, (pthread_t th, void **ret, const struct timespec *t),
	(th, ret, t))

/* ---- stdio ------------------------------------------------------------------ */

#define FORWARD_VOID(name, params, args)   \
	void name params                   \
	{                                  \
		note(FN_##name, RET_ADDR); \
		RESOLVE(name);             \
		real_##name args;          \
	}

FORWARD_VOID(flockfile, (FILE * f), (f))
FORWARD(int, ftrylockfile, (FILE * f), (f))
FORWARD_VOID(funlockfile, (FILE * f), (f))
FORWARD(FILE *, fopen, (const char *path, const char *mode), (path, mode))
FORWARD(FILE *, fopen64, (const char *path, const char *mode), (path, mode))
FORWARD(FILE *, fdopen, (int fd, const char *mode), (fd, mode))
FORWARD(FILE *, freopen, (const char *path, const char *mode, FILE *f), (path, mode, f))
FORWARD(int, fclose, (FILE * f), (f))
FORWARD(int, fflush, (FILE * f), (f))
FORWARD(int, fputs, (const char *s, FILE *f), (s, f))
FORWARD(int, puts, (const char *s), (s))
FORWARD(int, fputc, (int c, FILE *f), (c, f))
FORWARD(int, putc, (int c, FILE *f), (c, f))
FORWARD(size_t, fwrite, (const void *p, size_t size, size_t n, FILE *f), (p, size, n, f))
FORWARD(size_t, fread, (void *p, size_t size, size_t n, FILE *f), (p, size, n, f))
FORWARD(char *, fgets, (char *s, int n, FILE *f), (s, n, f))
FORWARD(int, fgetc, (FILE * f), (f))
FORWARD(int, getc, (FILE * f), (f))
FORWARD(int, ungetc, (int c, FILE *f), (c, f))
FORWARD(int, setvbuf, (FILE * f, char *buf, int mode, size_t size), (f, buf, mode, size))
FORWARD_VOID(setbuf, (FILE * f, char *buf), (f, buf))
FORWARD_VOID(perror, (const char *s), (s))
FORWARD(ssize_t, getline, (char **line, size_t *n, FILE *f), (line, n, f))
FORWARD(ssize_t, getdelim, (char **line, size_t *n, int delim, FILE *f), (line, n, delim, f))
FORWARD(int, fseek, (FILE * f, long off, int whence), (f, off, whence))
FORWARD(long, ftell, (FILE * f), (f))
FORWARD_VOID(rewind, (FILE * f), (f))
FORWARD(FILE *, open_memstream, (char **buf, size_t *size), (buf, size))
FORWARD(FILE *, fmemopen, (void *buf, size_t size, const char *mode), (buf, size, mode))
FORWARD(int, vprintf, (const char *fmt, va_list ap), (fmt, ap))
FORWARD(int, vfprintf, (FILE * f, const char *fmt, va_list ap), (f, fmt, ap))
FORWARD(int, vdprintf, (int fd, const char *fmt, va_list ap), (fd, fmt, ap))
FORWARD(int, vsprintf, (char *s, const char *fmt, va_list ap), (s, fmt, ap))
FORWARD(int, vsnprintf, (char *s, size_t n, const char *fmt, va_list ap), (s, n, fmt, ap))
FORWARD(int, vasprintf, (char **s, const char *fmt, va_list ap), (s, fmt, ap))

FORWARD(int, __vprintf_chk, (int flag, const char *fmt, va_list ap), (flag, fmt, ap))
FORWARD(int, __vfprintf_chk, (FILE * f, int flag, const char *fmt, va_list ap), (f, flag, fmt, ap))
FORWARD(int, __vdprintf_chk, (int fd, int flag, const char *fmt, va_list ap), (fd, flag, fmt, ap))
FORWARD(int, __vsprintf_chk, (char *s, int flag, size_t slen, const char *fmt, va_list ap),
	(s, flag, slen, fmt, ap))
FORWARD(int, __vsnprintf_chk,
	(char *s, size_t n, int flag, size_t slen, const char *fmt, va_list ap),
	(s, n, flag, slen, fmt, ap))
FORWARD(int, __vasprintf_chk, (char **s, int flag, const char *fmt, va_list ap), (s, flag, fmt, ap))

/*
 * The variadic ones: note the call, then the next definition of the
 * va_list form (so that it is not counted twice).
 */
#define FORWARD_VA(name, vname, params, last, args) \
	int name params                             \
	{                                           \
		va_list ap;                         \
		int r;                              \
                                                    \
		note(FN_##name, RET_ADDR);          \
		RESOLVE(vname);                     \
		va_start(ap, last);                 \
		r = real_##vname args;              \
		va_end(ap);                         \
		return r;                           \
	}

FORWARD_VA(printf, vprintf, (const char *fmt, ...), fmt, (fmt, ap))
FORWARD_VA(fprintf, vfprintf, (FILE * f, const char *fmt, ...), fmt, (f, fmt, ap))
FORWARD_VA(dprintf, vdprintf, (int fd, const char *fmt, ...), fmt, (fd, fmt, ap))
FORWARD_VA(sprintf, vsprintf, (char *s, const char *fmt, ...), fmt, (s, fmt, ap))
FORWARD_VA(snprintf, vsnprintf, (char *s, size_t n, const char *fmt, ...), fmt, (s, n, fmt, ap))
FORWARD_VA(asprintf, vasprintf, (char **s, const char *fmt, ...), fmt, (s, fmt, ap))
FORWARD_VA(__printf_chk, __vprintf_chk, (int flag, const char *fmt, ...), fmt, (flag, fmt, ap))
FORWARD_VA(__fprintf_chk, __vfprintf_chk, (FILE * f, int flag, const char *fmt, ...), fmt,
	   (f, flag, fmt, ap))
FORWARD_VA(__dprintf_chk, __vdprintf_chk, (int fd, int flag, const char *fmt, ...), fmt,
	   (fd, flag, fmt, ap))
FORWARD_VA(__sprintf_chk, __vsprintf_chk, (char *s, int flag, size_t slen, const char *fmt, ...),
	   fmt, (s, flag, slen, fmt, ap))
FORWARD_VA(__snprintf_chk, __vsnprintf_chk,
	   (char *s, size_t n, int flag, size_t slen, const char *fmt, ...), fmt,
	   (s, n, flag, slen, fmt, ap))
FORWARD_VA(__asprintf_chk, __vasprintf_chk, (char **s, int flag, const char *fmt, ...), fmt,
	   (s, flag, fmt, ap))
