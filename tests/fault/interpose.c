/* SPDX-License-Identifier: MIT */
/*
 * interpose.c - make the k-th allocation, thread, mapping, timer or ring
 * that libumcg.so asks for fail.
 *
 * This file defines malloc, calloc, realloc, posix_memalign,
 * aligned_alloc, free, pthread_create, mmap, timer_create, syscall and
 * liburing's io_uring_setup/io_uring_queue_init(_params) in the test
 * executable. An executable comes first in the dynamic linker's search
 * order, so these definitions win over libc's (and over a sanitizer
 * runtime's) for every object in the process, libumcg.so included. Each
 * one forwards to the next definition, found with dlsym(RTLD_NEXT).
 *
 * Only calls made from libumcg.so's own code are eligible: the return
 * address of the wrapper must lie in one of the library's executable
 * segments (found with dl_iterate_phdr() by fault_init()). Calls made by
 * libc, Check or the test are never counted and never fail; libc's own
 * internal calls (the stack mmap() of pthread_create(), say) do not come
 * here at all. For syscall() only SYS_io_uring_setup and SYS_timer_create
 * are eligible.
 *
 * Modes: FAULT_OFF; FAULT_COUNT counts eligible calls and remembers what
 * each one was; FAULT_FAIL makes the k-th eligible call fail the way libc
 * reports that resource running out (NULL and ENOMEM, ENOMEM returned,
 * EAGAIN returned with ENOMEM in errno as glibc leaves it when a stack
 * cannot be mapped, MAP_FAILED and ENOMEM, -1 and EAGAIN or ENOMEM).
 *
 * Bootstrap: dlsym() may allocate. While a wrapper resolves its target,
 * allocations are served from a static buffer, never freed.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "interpose.h"

struct io_uring;
struct io_uring_params;

/* ---- the library's text --------------------------------------------------- */

#define MAX_RANGES 8

static struct {
	uintptr_t lo, hi;
} ranges[MAX_RANGES];
static int nr_ranges;

static int find_lib(struct dl_phdr_info *info, size_t size, void *data)
{
	const char *base;
	int i;

	(void)size;
	(void)data;
	base = info->dlpi_name ? strrchr(info->dlpi_name, '/') : NULL;
	base = base ? base + 1 : info->dlpi_name;
	if (!base || strncmp(base, "libumcg.so", 10) != 0)
		return 0;
	for (i = 0; i < info->dlpi_phnum && nr_ranges < MAX_RANGES; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
			continue;
		ranges[nr_ranges].lo = info->dlpi_addr + ph->p_vaddr;
		ranges[nr_ranges].hi = info->dlpi_addr + ph->p_vaddr + ph->p_memsz;
		nr_ranges++;
	}
	return 1;
}

int fault_init(void)
{
	if (!nr_ranges)
		dl_iterate_phdr(find_lib, NULL);
	return nr_ranges ? 0 : -ENOENT;
}

static bool from_lib(const void *ret_addr)
{
	uintptr_t a = (uintptr_t)ret_addr;
	int i;

	for (i = 0; i < nr_ranges; i++) {
		if (a >= ranges[i].lo && a < ranges[i].hi)
			return true;
	}
	return false;
}

/* ---- modes and the record of calls ---------------------------------------- */

static atomic_int mode;
static atomic_long calls;
static long fail_at;
static atomic_long failed_call;
static const char *what_of[FAULT_MAX_CALLS + 1];

void fault_set(int m, long k)
{
	atomic_store(&calls, 0);
	atomic_store(&failed_call, 0);
	fail_at = k;
	/* seq_cst: the fields above are set before any thread sees the mode. */
	atomic_store(&mode, m);
}

long fault_calls(void)
{
	return atomic_load(&calls);
}

long fault_failed(void)
{
	return atomic_load(&failed_call);
}

const char *fault_what(long n)
{
	return n > 0 && n <= FAULT_MAX_CALLS && what_of[n] ? what_of[n] : "?";
}

/* Is this eligible call the one to fail? */
static bool inject(const char *what, const void *ret_addr)
{
	/* Pairs with the seq_cst store in fault_set(). */
	int m = atomic_load_explicit(&mode, memory_order_acquire);
	long n;

	if (m == FAULT_OFF || !from_lib(ret_addr))
		return false;
	n = atomic_fetch_add(&calls, 1) + 1;
	if (n <= FAULT_MAX_CALLS)
		what_of[n] = what;
	if (m != FAULT_FAIL || n != fail_at)
		return false;
	atomic_store(&failed_call, n);
	return true;
}

/* ---- resolving the next definitions ---------------------------------------- */

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

#define RESOLVE(var, name)                                    \
	do {                                                  \
		if (!var)                                     \
			var = (__typeof__(var))next_fn(name); \
	} while (0)

static void *(*real_malloc)(size_t);
static void *(*real_calloc)(size_t, size_t);
static void *(*real_realloc)(void *, size_t);
static int (*real_posix_memalign)(void **, size_t, size_t);
static void *(*real_aligned_alloc)(size_t, size_t);
static void (*real_free)(void *);
static int (*real_pthread_create)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
static void *(*real_mmap)(void *, size_t, int, int, int, off_t);
static void *(*real_mmap64)(void *, size_t, int, int, int, off_t);
static int (*real_timer_create)(clockid_t, struct sigevent *, timer_t *);
static long (*real_syscall)(long, ...);
static int (*real_uring_setup)(unsigned int, struct io_uring_params *);
static int (*real_uring_init)(unsigned int, struct io_uring *, unsigned int);
static int (*real_uring_init_params)(unsigned int, struct io_uring *, struct io_uring_params *);

/* Resolved before main() while the process has one thread, so that the
 * wrappers only read these pointers later. */
__attribute__((constructor)) static void resolve_all(void)
{
	RESOLVE(real_malloc, "malloc");
	RESOLVE(real_calloc, "calloc");
	RESOLVE(real_realloc, "realloc");
	RESOLVE(real_posix_memalign, "posix_memalign");
	RESOLVE(real_aligned_alloc, "aligned_alloc");
	RESOLVE(real_free, "free");
	RESOLVE(real_pthread_create, "pthread_create");
	RESOLVE(real_mmap, "mmap");
	RESOLVE(real_mmap64, "mmap64");
	RESOLVE(real_timer_create, "timer_create");
	RESOLVE(real_syscall, "syscall");
}

/* ---- the wrappers ---------------------------------------------------------- */

void *malloc(size_t size)
{
	if (resolving)
		return boot_alloc(size);
	if (inject("malloc", __builtin_return_address(0))) {
		errno = ENOMEM;
		return NULL;
	}
	RESOLVE(real_malloc, "malloc");
	return real_malloc(size);
}

void *calloc(size_t n, size_t size)
{
	if (resolving)
		return n && size > SIZE_MAX / n ? NULL : boot_alloc(n * size);
	if (inject("calloc", __builtin_return_address(0))) {
		errno = ENOMEM;
		return NULL;
	}
	RESOLVE(real_calloc, "calloc");
	return real_calloc(n, size);
}

void *realloc(void *p, size_t size)
{
	void *q;

	if (resolving)
		return NULL;
	if (inject("realloc", __builtin_return_address(0))) {
		errno = ENOMEM;
		return NULL;
	}
	if (is_boot(p)) {
		/* Grown out of the bootstrap buffer: copy what fits. */
		RESOLVE(real_malloc, "malloc");
		q = real_malloc(size);
		if (q)
			memcpy(q, p,
			       (size_t)(boot_buf + sizeof(boot_buf) - (unsigned char *)p) < size ?
				       (size_t)(boot_buf + sizeof(boot_buf) - (unsigned char *)p) :
				       size);
		return q;
	}
	RESOLVE(real_realloc, "realloc");
	return real_realloc(p, size);
}

int posix_memalign(void **pp, size_t align, size_t size)
{
	if (inject("posix_memalign", __builtin_return_address(0)))
		return ENOMEM;
	RESOLVE(real_posix_memalign, "posix_memalign");
	return real_posix_memalign(pp, align, size);
}

void *aligned_alloc(size_t align, size_t size)
{
	if (inject("aligned_alloc", __builtin_return_address(0))) {
		errno = ENOMEM;
		return NULL;
	}
	RESOLVE(real_aligned_alloc, "aligned_alloc");
	return real_aligned_alloc(align, size);
}

void free(void *p)
{
	/*
	 * dlsym() frees its last error message, and a sanitizer's start-up
	 * frees before resolve_all() ran: resolving free() then would recurse
	 * through dlsym(). Such blocks are let go.
	 */
	if (!p || is_boot(p) || resolving || !real_free)
		return;
	real_free(p);
}

int pthread_create(pthread_t *th, const pthread_attr_t *attr, void *(*fn)(void *), void *arg)
{
	/* glibc's own failure leaves the ENOMEM of its stack mmap() in errno. */
	if (inject("pthread_create", __builtin_return_address(0))) {
		errno = ENOMEM;
		return EAGAIN;
	}
	RESOLVE(real_pthread_create, "pthread_create");
	return real_pthread_create(th, attr, fn, arg);
}

void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	if (inject("mmap", __builtin_return_address(0))) {
		errno = ENOMEM;
		return MAP_FAILED;
	}
	RESOLVE(real_mmap, "mmap");
	return real_mmap(addr, len, prot, flags, fd, off);
}

void *mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	if (inject("mmap64", __builtin_return_address(0))) {
		errno = ENOMEM;
		return MAP_FAILED;
	}
	RESOLVE(real_mmap64, "mmap64");
	return real_mmap64(addr, len, prot, flags, fd, off);
}

int timer_create(clockid_t clk, struct sigevent *sev, timer_t *id)
{
	if (inject("timer_create", __builtin_return_address(0))) {
		errno = EAGAIN;
		return -1;
	}
	RESOLVE(real_timer_create, "timer_create");
	return real_timer_create(clk, sev, id);
}

long syscall(long nr, ...)
{
	long a[6];
	va_list ap;
	int i;

	va_start(ap, nr);
	for (i = 0; i < 6; i++)
		a[i] = va_arg(ap, long);
	va_end(ap);
#ifdef SYS_io_uring_setup
	if (nr == SYS_io_uring_setup && inject("io_uring_setup", __builtin_return_address(0))) {
		errno = ENOMEM;
		return -1;
	}
#endif
	/* The emulation's slice timers (raw: no glibc timer ids). */
	if (nr == SYS_timer_create && inject("timer_create", __builtin_return_address(0))) {
		errno = EAGAIN;
		return -1;
	}
	RESOLVE(real_syscall, "syscall");
	return real_syscall(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
}

/* liburing's entry points, in case the library uses it; negative errno. */
int io_uring_setup(unsigned int entries, struct io_uring_params *p)
{
	if (inject("io_uring_setup", __builtin_return_address(0)))
		return -ENOMEM;
	RESOLVE(real_uring_setup, "io_uring_setup");
	return real_uring_setup ? real_uring_setup(entries, p) : -ENOSYS;
}

int io_uring_queue_init(unsigned int entries, struct io_uring *ring, unsigned int flags)
{
	if (inject("io_uring_queue_init", __builtin_return_address(0)))
		return -ENOMEM;
	RESOLVE(real_uring_init, "io_uring_queue_init");
	return real_uring_init ? real_uring_init(entries, ring, flags) : -ENOSYS;
}

int io_uring_queue_init_params(unsigned int entries, struct io_uring *ring,
			       struct io_uring_params *p)
{
	if (inject("io_uring_queue_init_params", __builtin_return_address(0)))
		return -ENOMEM;
	RESOLVE(real_uring_init_params, "io_uring_queue_init_params");
	return real_uring_init_params ? real_uring_init_params(entries, ring, p) : -ENOSYS;
}
