/* SPDX-License-Identifier: MIT */
/*
 * tests/common/test_common.c - main(), the liveness bound and the watchdog
 * shared by the Check suites (see test_common.h).
 *
 * The watchdog thread reads the counters with relaxed loads: it needs only
 * to see them move eventually, in no order with other data. Its stop flag
 * is stored with release by h_watchdog_stop() and loaded with acquire by
 * the thread, which h_watchdog_stop() then joins.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_common.h"

double h_timeout_multiplier(void)
{
	const char *env = getenv("CK_TIMEOUT_MULTIPLIER");
	double m = env ? strtod(env, NULL) : 1.0;

	return m >= 1.0 ? m : 1.0;
}

uint64_t h_liveness_ns(void)
{
	return (uint64_t)((double)H_LIVENESS_NS * h_timeout_multiplier());
}

unsigned int h_stress(void)
{
	const char *env = getenv("UMCG_STRESS");

	return env && *env && strcmp(env, "0") ? 10 : 1;
}

uint64_t h_now(clockid_t clk)
{
	struct timespec ts;

	if (clock_gettime(clk, &ts))
		ck_abort_msg("clock_gettime(%d) failed: %s", (int)clk, strerror(errno));
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

void h_sleep_us(unsigned int us)
{
	struct timespec ts = { .tv_sec = us / 1000000, .tv_nsec = (long)(us % 1000000) * 1000 };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

int h_tids_snapshot(struct h_tids *t)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;

	if (!d)
		return -1;
	t->n = 0;
	while ((e = readdir(d)) && t->n < H_MAX_TIDS) {
		char path[300], *comm = t->comm[t->n];
		ssize_t len = -1;
		int fd;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/comm", e->d_name);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd >= 0) {
			len = read(fd, comm, sizeof(t->comm[0]) - 1);
			close(fd);
		}
		if (len < 0) /* it left between readdir() and open() */
			continue;
		comm[len] = '\0';
		comm[strcspn(comm, "\n")] = '\0';
		if (strcmp(comm, "umcg-watch") == 0)
			continue;
		t->tid[t->n++] = (pid_t)atoi(e->d_name);
	}
	closedir(d);
	return 0;
}

int h_tids_new(const struct h_tids *base, const struct h_tids *now, char *names, size_t size)
{
	size_t used = 0;
	int i, j, n = 0;

	if (size)
		names[0] = '\0';
	for (i = 0; i < now->n; i++) {
		for (j = 0; j < base->n && base->tid[j] != now->tid[i]; j++)
			;
		if (j < base->n)
			continue;
		n++;
		if (used < size) {
			int len = snprintf(names + used, size - used, "%s%d \"%s\"",
					   n > 1 ? ", " : "", (int)now->tid[i], now->comm[i]);

			used += len > 0 ? (size_t)len : 0;
		}
	}
	return n;
}

/* ---- the watchdog ----------------------------------------------------------- */

struct h_watchdog {
	struct h_watchdog_spec spec;
	atomic_ulong **counters;
	uint64_t stall_ns;
	atomic_bool stop;
	pthread_t thread;
};

static unsigned long counter(const struct h_watchdog *wd, size_t i)
{
	return atomic_load_explicit(wd->counters[i], memory_order_relaxed);
}

static unsigned long counters_sum(const struct h_watchdog *wd)
{
	unsigned long sum = 0;
	size_t i;

	for (i = 0; i < wd->spec.n; i++)
		sum += counter(wd, i);
	return sum;
}

static bool stopped(struct h_watchdog *wd)
{
	/* Pairs with the release store in h_watchdog_stop(). */
	return atomic_load_explicit(&wd->stop, memory_order_acquire);
}

static void __attribute__((noreturn)) stalled(struct h_watchdog *wd, const char *how)
{
	const struct h_watchdog_spec *s = &wd->spec;
	char dump[1024] = "";
	size_t i;

	fprintf(stderr, "%s: %s for %" PRIu64 " ms:\n", s->what, how, wd->stall_ns / 1000000);
	for (i = 0; i < s->n; i++)
		fprintf(stderr, "%s: counter[%zu] = %lu\n", s->what, i, counter(wd, i));
	if (s->dump)
		s->dump(s->arg, dump, sizeof(dump));
	ck_abort_msg("%s: %s for %" PRIu64
		     " ms (lost wake-up?) at iteration %lu, sum %lu of %lu; %s",
		     s->what, how, wd->stall_ns / 1000000,
		     s->iteration ? atomic_load_explicit(s->iteration, memory_order_relaxed) : 0UL,
		     counters_sum(wd), s->target, dump);
	abort(); /* not reached: ck_abort_msg() ends the test process */
}

static void *watchdog_main(void *arg)
{
	struct h_watchdog *wd = arg;
	size_t i, n = wd->spec.n;
	unsigned long *last = calloc(n + 1, sizeof(*last));
	uint64_t *since = calloc(n + 1, sizeof(*since));
	uint64_t now = h_now(CLOCK_MONOTONIC);

	if (!last || !since)
		ck_abort_msg("%s: watchdog: out of memory", wd->spec.what);
	/* Slot n is the sum. */
	for (i = 0; i <= n; i++) {
		last[i] = i < n ? counter(wd, i) : counters_sum(wd);
		since[i] = now;
	}
	while (!stopped(wd)) {
		h_sleep_us(10000);
		now = h_now(CLOCK_MONOTONIC);
		if (wd->spec.target) {
			unsigned long sum = counters_sum(wd);

			if (sum != last[n] || sum >= wd->spec.target) {
				last[n] = sum;
				since[n] = now;
			} else if (now - since[n] >= wd->stall_ns && !stopped(wd)) {
				stalled(wd, "no progress");
			}
			continue;
		}
		for (i = 0; i < n; i++) {
			unsigned long v = counter(wd, i);

			if (v != last[i]) {
				last[i] = v;
				since[i] = now;
			} else if (now - since[i] >= wd->stall_ns && !stopped(wd)) {
				fprintf(stderr, "%s: counter %zu stuck at %lu\n", wd->spec.what, i,
					v);
				stalled(wd, "a counter stood still");
			}
		}
	}
	free(last);
	free(since);
	return NULL;
}

struct h_watchdog *h_watchdog_run(const struct h_watchdog_spec *spec)
{
	struct h_watchdog *wd = calloc(1, sizeof(*wd));
	unsigned int stall_ms = spec->stall_ms ? spec->stall_ms : H_WATCHDOG_STALL_MS;
	int err;

	ck_assert_ptr_nonnull(wd);
	wd->spec = *spec;
	wd->counters = calloc(spec->n ? spec->n : 1, sizeof(*wd->counters));
	ck_assert_ptr_nonnull(wd->counters);
	memcpy(wd->counters, spec->counters, spec->n * sizeof(*wd->counters));
	wd->spec.counters = wd->counters;
	wd->stall_ns = (uint64_t)((double)stall_ms * 1e6 * h_timeout_multiplier());
	atomic_init(&wd->stop, false);
	err = pthread_create(&wd->thread, NULL, watchdog_main, wd);
	if (err)
		ck_abort_msg("%s: watchdog: pthread_create: %s", spec->what, strerror(err));
	return wd;
}

void h_watchdog_stop(struct h_watchdog *wd)
{
	int err;

	/* Pairs with the acquire load in stopped(). */
	atomic_store_explicit(&wd->stop, true, memory_order_release);
	err = pthread_join(wd->thread, NULL);
	if (err)
		ck_abort_msg("%s: watchdog: pthread_join: %s", wd->spec.what, strerror(err));
	free(wd->counters);
	free(wd);
}

/* ---- main() ----------------------------------------------------------------- */

int h_test_main(int argc, char **argv, Suite *(*suite)(void), int (*prepare)(void))
{
	SRunner *sr;
	int ret, failed;

	if (prepare) {
		ret = prepare();
		if (ret)
			return ret;
	}
	if (argc > 2) {
		fprintf(stderr, "usage: %s [test-case]\n", argv[0]);
		return 2;
	}
	fflush(stdout);
	sr = srunner_create(suite());
	srunner_set_fork_status(sr, CK_FORK);
	srunner_run(sr, NULL, argc == 2 ? argv[1] : NULL, CK_ENV);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
