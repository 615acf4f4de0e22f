/* SPDX-License-Identifier: MIT */
/*
 * common.h - helpers shared by the runtime benchmarks (yield.c, pipeline.c,
 * bimodal.c): timing, option parsing, medians and percentiles, a busy loop
 * calibrated in nanoseconds, futex words, CPU masks, and a small JSON
 * writer for the one object each benchmark prints on standard output.
 *
 * Everything is static (inline, so that a benchmark that does not use a
 * helper gets no warning), and everything reports errors by dying with the
 * program's name: a benchmark that cannot measure prints no figures.
 * Progress and errors go to standard error; standard output carries only
 * the JSON document.
 *
 * The including file defines _GNU_SOURCE before any system header
 * (program_invocation_short_name, CPU_SET, pthread_setaffinity_np).
 */
#ifndef UMCG_BENCH_COMMON_H
#define UMCG_BENCH_COMMON_H

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/futex.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <umcg/runtime.h>

#define NSEC_PER_USEC 1000ull
#define NSEC_PER_MSEC 1000000ull
#define NSEC_PER_SEC 1000000000ull

/* ---- errors and options -------------------------------------------------- */

/**
 * die() - print "<program>: <message>" on standard error and exit(1).
 * @fmt: printf format of the message.
 */
static inline __attribute__((noreturn, format(printf, 1, 2))) void die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", program_invocation_short_name);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

/**
 * die_err() - die() for a call that returned a negative errno.
 * @what: the call.
 * @err: its return value.
 */
static inline __attribute__((noreturn)) void die_err(const char *what, int err)
{
	die("%s: %s", what, strerror(err < 0 ? -err : err));
}

/**
 * parse_u64() - parse the decimal argument of an option, or exit(2).
 * @opt: the option's name, for the message.
 * @s: the argument.
 * @min: smallest value accepted.
 * @max: largest value accepted.
 *
 * Return: the value.
 */
static inline uint64_t parse_u64(const char *opt, const char *s, uint64_t min, uint64_t max)
{
	unsigned long long v;
	char *end;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (!*s || *end || errno || s[0] == '-' || v < min || v > max) {
		fprintf(stderr, "%s: %s wants an integer in [%" PRIu64 ", %" PRIu64 "], not '%s'\n",
			program_invocation_short_name, opt, min, max, s);
		exit(2);
	}
	return v;
}

/**
 * parse_double() - parse a decimal fraction argument, or exit(2).
 * @opt: the option's name, for the message.
 * @s: the argument.
 * @min: smallest value accepted.
 * @max: largest value accepted.
 *
 * Return: the value.
 */
static inline double parse_double(const char *opt, const char *s, double min, double max)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (!*s || *end || errno || !(v >= min && v <= max)) {
		fprintf(stderr, "%s: %s wants a number in [%g, %g], not '%s'\n",
			program_invocation_short_name, opt, min, max, s);
		exit(2);
	}
	return v;
}

/*
 * parse_preempt() - the argument of --preempt ("server" or "timer") as a
 * umcg_rt_attr.preempt value, or exit(2).
 */
static inline int parse_preempt(const char *s)
{
	if (!strcmp(s, "server"))
		return UMCG_PREEMPT_SERVER;
	if (!strcmp(s, "timer"))
		return UMCG_PREEMPT_TIMER;
	fprintf(stderr, "%s: --preempt wants server or timer, not '%s'\n",
		program_invocation_short_name, s);
	exit(2);
}

/* The name of what umcg_rt_preempt_mode() returned, for the report. */
static inline const char *preempt_name(int mode)
{
	return mode == UMCG_PREEMPT_TIMER  ? "timer" :
	       mode == UMCG_PREEMPT_SERVER ? "server" :
					     "none";
}

/* ---- time ------------------------------------------------------------------ */

/** now_ns() - CLOCK_MONOTONIC in nanoseconds (the runtime's default clock). */
static inline uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * NSEC_PER_SEC + (uint64_t)ts.tv_nsec;
}

/** sleep_ns() - sleep @ns nanoseconds on CLOCK_MONOTONIC (plain threads). */
static inline void sleep_ns(uint64_t ns)
{
	struct timespec ts = { .tv_sec = (time_t)(ns / NSEC_PER_SEC),
			       .tv_nsec = (long)(ns % NSEC_PER_SEC) };

	while (clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, &ts) == EINTR)
		;
}

/** sleep_until_ns() - sleep until CLOCK_MONOTONIC reaches @t (plain threads). */
static inline void sleep_until_ns(uint64_t t)
{
	struct timespec ts = { .tv_sec = (time_t)(t / NSEC_PER_SEC),
			       .tv_nsec = (long)(t % NSEC_PER_SEC) };

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

/* ---- statistics ------------------------------------------------------------ */

static inline int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static inline int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/**
 * median() - the median of @n values (the mean of the middle two for even
 * @n); @v is left as it was.
 * Return: the median, or NAN for @n == 0.
 */
static inline double median(const double *v, size_t n)
{
	double *s, m;

	if (!n)
		return NAN;
	s = malloc(n * sizeof(*s));
	if (!s)
		die("out of memory");
	memcpy(s, v, n * sizeof(*s));
	qsort(s, n, sizeof(*s), cmp_double);
	m = n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
	free(s);
	return m;
}

/**
 * percentile() - the nearest-rank @p-th percentile of @n sorted values:
 * the smallest value with at least @p percent of the values at or below it.
 * @sorted: ascending.
 * @n: how many; 0 gives 0.
 * @p: in (0, 100].
 */
static inline uint64_t percentile(const uint64_t *sorted, size_t n, double p)
{
	size_t rank;

	if (!n)
		return 0;
	rank = (size_t)ceil(p / 100.0 * (double)n);
	if (rank < 1)
		rank = 1;
	if (rank > n)
		rank = n;
	return sorted[rank - 1];
}

/* ---- a calibrated busy loop ------------------------------------------------ */

/**
 * spin() - burn CPU: @iters rounds of a 64-bit LCG step with an xorshift,
 * a dependency chain that the compiler cannot fold or vectorise.
 * @iters: rounds.
 * @seed: start value.
 *
 * Return: the final value, for the caller to check or store so that the
 * loop is not dropped.
 */
static inline uint64_t spin(uint64_t iters, uint64_t seed)
{
	uint64_t x = seed;

	while (iters--) {
		x = x * 6364136223846793005ull + 1442695040888963407ull;
		x ^= x >> 29;
	}
	return x;
}

/**
 * spin_calibrate() - nanoseconds per spin() round on this CPU.
 *
 * Times blocks of about 200 us, 25 times, and keeps the fastest: on a
 * shared machine a block that nobody interrupted is the one that measures
 * the CPU, and any slower block measured someone else too.
 *
 * Return: ns per round (> 0).
 */
static inline double spin_calibrate(void)
{
	uint64_t iters = 1000, t0, t1, best = UINT64_MAX, sink = 0;
	int i;

	/* Grow the block to roughly 200 us. */
	for (;;) {
		t0 = now_ns();
		sink += spin(iters, iters);
		t1 = now_ns();
		if (t1 - t0 >= 200 * NSEC_PER_USEC || iters >= (1ull << 32))
			break;
		iters *= 2;
	}
	for (i = 0; i < 25; i++) {
		t0 = now_ns();
		sink += spin(iters, sink);
		t1 = now_ns();
		if (t1 - t0 < best)
			best = t1 - t0;
	}
	/* The sum goes nowhere; the asm keeps the loops. */
	__asm__ volatile("" : : "r"(sink));
	return (double)(best ? best : 1) / (double)iters;
}

/* ---- futex words and CPUs ---------------------------------------------------- */

/** futex_wait() - sleep while *@word == @val (FUTEX_PRIVATE, no timeout). */
static inline void futex_wait(uint32_t *word, uint32_t val)
{
	syscall(SYS_futex, word, FUTEX_WAIT_PRIVATE, val, NULL, NULL, 0);
}

/** futex_wake() - wake up to @n sleepers on @word. */
static inline void futex_wake(uint32_t *word, int n)
{
	syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, n, NULL, NULL, 0);
}

/**
 * first_cpu() - the first CPU of the calling thread's affinity mask.
 * @nr: if not NULL, gets the number of CPUs in the mask.
 */
static inline int first_cpu(unsigned int *nr)
{
	cpu_set_t set;
	int cpu;

	if (sched_getaffinity(0, sizeof(set), &set))
		die("sched_getaffinity: %s", strerror(errno));
	if (nr)
		*nr = (unsigned int)CPU_COUNT(&set);
	for (cpu = 0; cpu < CPU_SETSIZE; cpu++)
		if (CPU_ISSET(cpu, &set))
			return cpu;
	die("empty affinity mask");
}

/** pin_self() - pin the calling thread to @cpu. */
static inline void pin_self(int cpu)
{
	cpu_set_t set;
	int ret;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	ret = pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
	if (ret)
		die("pthread_setaffinity_np(%d): %s", cpu, strerror(ret));
}

/* ---- threads of this process ------------------------------------------------ */

/**
 * watcher_tid() - the tid of the emulation's detection watcher, found by its
 * name ("umcg-watch"), or 0 if there is none (yet).
 */
static inline pid_t watcher_tid(void)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	char path[300], comm[32];
	pid_t tid = 0;
	ssize_t n;
	int fd;

	if (!d)
		return 0;
	while (!tid && (e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/comm", e->d_name);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		n = read(fd, comm, sizeof(comm) - 1);
		close(fd);
		if (n == 11 && !memcmp(comm, "umcg-watch\n", 11))
			tid = (pid_t)atoi(e->d_name);
	}
	closedir(d);
	return tid;
}

/** thread_cpu_ns() - thread @tid's CPU time (its scheduler clock), in ns; 0
 * for tid 0 or a thread that has gone. */
static inline uint64_t thread_cpu_ns(pid_t tid)
{
	clockid_t clk = (clockid_t)((~(unsigned int)tid << 3) | 6);
	struct timespec ts;

	if (!tid || clock_gettime(clk, &ts))
		return 0;
	return (uint64_t)ts.tv_sec * NSEC_PER_SEC + (uint64_t)ts.tv_nsec;
}

/* ---- JSON ------------------------------------------------------------------- */

#define JSON_MAX_DEPTH 16

/**
 * struct json - a JSON writer on a stdio stream.
 * @f: the stream.
 * @depth: open objects and arrays.
 * @more: per level, whether a value was written there (a comma is due).
 *
 * Values inside an object take a key; values inside an array take NULL.
 * Non-finite numbers are written as null.
 */
struct json {
	FILE *f;
	unsigned int depth;
	bool more[JSON_MAX_DEPTH];
};

static inline void json_string_raw(struct json *j, const char *s)
{
	const unsigned char *p = (const unsigned char *)(s ? s : "");

	fputc('"', j->f);
	for (; *p; p++) {
		if (*p == '"' || *p == '\\')
			fprintf(j->f, "\\%c", *p);
		else if (*p < 0x20)
			fprintf(j->f, "\\u%04x", *p);
		else
			fputc(*p, j->f);
	}
	fputc('"', j->f);
}

/* The comma and key before a value. */
static inline void json_key(struct json *j, const char *key)
{
	if (j->depth && j->more[j->depth - 1])
		fputc(',', j->f);
	if (j->depth)
		j->more[j->depth - 1] = true;
	if (key) {
		json_string_raw(j, key);
		fputc(':', j->f);
	}
}

static inline void json_open(struct json *j, const char *key, char c)
{
	json_key(j, key);
	fputc(c, j->f);
	if (j->depth == JSON_MAX_DEPTH)
		die("JSON nested too deep");
	j->more[j->depth++] = false;
}

/** json_begin() - start the document on @f with its top-level object. */
static inline void json_begin(struct json *j, FILE *f)
{
	j->f = f;
	j->depth = 0;
	json_open(j, NULL, '{');
}

/** json_end() - close the top-level object and end the line. */
static inline void json_end(struct json *j)
{
	if (j->depth != 1)
		die("JSON document closed at depth %u", j->depth);
	fputs("}\n", j->f);
	j->depth = 0;
	fflush(j->f);
}

static inline void json_object(struct json *j, const char *key)
{
	json_open(j, key, '{');
}

static inline void json_array(struct json *j, const char *key)
{
	json_open(j, key, '[');
}

/** json_close() - close the innermost object or array (@c: '}' or ']'). */
static inline void json_close(struct json *j, char c)
{
	if (j->depth < 2)
		die("JSON close at depth %u", j->depth);
	j->depth--;
	fputc(c, j->f);
}

static inline void json_u64(struct json *j, const char *key, uint64_t v)
{
	json_key(j, key);
	fprintf(j->f, "%" PRIu64, v);
}

static inline void json_int(struct json *j, const char *key, long long v)
{
	json_key(j, key);
	fprintf(j->f, "%lld", v);
}

/** json_double() - a number with @decimals digits after the point. */
static inline void json_double(struct json *j, const char *key, double v, int decimals)
{
	json_key(j, key);
	if (isfinite(v))
		fprintf(j->f, "%.*f", decimals, v);
	else
		fputs("null", j->f);
}

static inline void json_str(struct json *j, const char *key, const char *s)
{
	json_key(j, key);
	json_string_raw(j, s);
}

static inline void json_bool(struct json *j, const char *key, bool v)
{
	json_key(j, key);
	fputs(v ? "true" : "false", j->f);
}

/* An array of @n doubles under @key, @dec decimals each. */
static inline void json_pairs(struct json *j, const char *key, const double *v, unsigned int n,
			      int dec)
{
	unsigned int i;

	json_array(j, key);
	for (i = 0; i < n; i++)
		json_double(j, NULL, v[i], dec);
	json_close(j, ']');
}

#endif /* UMCG_BENCH_COMMON_H */
