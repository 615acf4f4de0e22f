/* SPDX-License-Identifier: MIT */
/*
 * preload.c - umcg-bench-preload: what libumcg-preload.so costs a call it
 * does not announce, and a worker's call that does not block.
 *
 * The program is linked with libumcg-preload.so, so its calls by name
 * (read(), write(), poll()) reach the preload's definitions; the peers are
 * reached without it, in the same run:
 *
 * unregistered: a plain thread runs a loop of write(/dev/null, 1 byte),
 *   read(/dev/zero, 1 byte) and poll(/dev/zero, timeout 0), once by name
 *   (through the preload, which passes them to libc after its one test)
 *   and once through libc's own definitions (dlsym() on the libc.so.6
 *   handle). "ratio" is preload / libc; the target is <= 1.02.
 *
 * worker_read: a worker of a one-server cooperative runtime reads 64 bytes
 *   of /dev/zero in a loop, once with read() by name (the preload, then
 *   umcg_read()) and once with umcg_read() itself. Neither blocks, so no
 *   scheduling happens; "ratio" is read / umcg_read (target <= 1.1).
 *
 * worker_mutex: two workers of a one-server cooperative runtime each run
 *   lock, yield, unlock, yield on one mutex, so that every lock finds it
 *   held by the other: once with a pthread_mutex_t (by name, so through
 *   the preload, which announces the blocking lock: the thread sleeps in
 *   the kernel and its server runs the holder) and once with a
 *   struct umcg_mutex of <umcg/sync.h> (the waiter parks). Reported: ns
 *   per worker iteration and pthread / umcg, what mapping pthread's
 *   mutexes onto <umcg/sync.h> in the preload would win (README, "Worker
 *   synchronization", says why it does not).
 *
 * Each of --repeat runs times both sides of both loops back to back, in an
 * order that alternates from run to run; reported are the medians of each
 * side, the median of the runs' ratios (each run's two sides saw the same
 * machine), and every run.
 *
 * Protocols: none between threads beyond umcg_join(), which orders the
 * worker's results before the main thread reads them.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "common.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>

#include <umcg/io.h>
#include <umcg/runtime.h>
#include <umcg/sync.h>

#define MAX_REPEAT 64

struct options {
	uint64_t iterations;
	unsigned int repeat;
};

static ssize_t (*libc_read)(int, void *, size_t);
static ssize_t (*libc_write)(int, const void *, size_t);
static int (*libc_poll)(struct pollfd *, nfds_t, int);
static int null_fd, zero_fd;
/* read() by name is the preload's own (false: an interposer before it). */
static bool direct;

static void resolve(void)
{
	void *libc = dlopen("libc.so.6", RTLD_LAZY | RTLD_NOLOAD);
	void *pre = dlopen("libumcg-preload.so.0", RTLD_LAZY | RTLD_NOLOAD);

	if (!libc || !pre)
		die("libc.so.6 or libumcg-preload.so.0 is not loaded");
	libc_read = (ssize_t(*)(int, void *, size_t))dlsym(libc, "read");
	libc_write = (ssize_t(*)(int, const void *, size_t))dlsym(libc, "write");
	libc_poll = (int (*)(struct pollfd *, nfds_t, int))dlsym(libc, "poll");
	if (!libc_read || !libc_write || !libc_poll)
		die("libc's read, write or poll not found");
	/* Calls by name must reach the preload, or the comparison is void; in
	 * a sanitizer build they reach the sanitizer's interceptor first,
	 * which forwards to the preload (and the figures mean little). */
	if (dlsym(RTLD_DEFAULT, "read") == (void *)libc_read)
		die("read() by name is libc's: the preload is not in front of it");
	direct = dlsym(RTLD_DEFAULT, "read") == dlsym(pre, "read");
	null_fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
	zero_fd = open("/dev/zero", O_RDONLY | O_CLOEXEC);
	if (null_fd < 0 || zero_fd < 0)
		die_err("open /dev/null, /dev/zero", errno);
}

/* ---- an unregistered thread ---------------------------------------------- */

static double loop_named(uint64_t n)
{
	struct pollfd p = { .fd = zero_fd, .events = POLLIN };
	char b = 0;
	uint64_t t0 = now_ns(), i;

	for (i = 0; i < n; i++) {
		if (write(null_fd, &b, 1) != 1 || read(zero_fd, &b, 1) != 1 || poll(&p, 1, 0) != 1)
			die("a call of the loop failed");
	}
	return (double)(now_ns() - t0) / (double)n;
}

static double loop_libc(uint64_t n)
{
	struct pollfd p = { .fd = zero_fd, .events = POLLIN };
	char b = 0;
	uint64_t t0 = now_ns(), i;

	for (i = 0; i < n; i++) {
		if (libc_write(null_fd, &b, 1) != 1 || libc_read(zero_fd, &b, 1) != 1 ||
		    libc_poll(&p, 1, 0) != 1)
			die("a call of the loop failed");
	}
	return (double)(now_ns() - t0) / (double)n;
}

/* ---- a worker's read that does not block ---------------------------------- */

struct wrun {
	uint64_t n;
	bool umcg_first;
	double read_ns, umcg_ns;
	bool failed;
};

static double worker_named(uint64_t n, bool *failed)
{
	char b[64];
	uint64_t t0 = now_ns(), i;

	for (i = 0; i < n; i++)
		*failed |= read(zero_fd, b, sizeof(b)) != (ssize_t)sizeof(b);
	return (double)(now_ns() - t0) / (double)n;
}

static double worker_umcg(uint64_t n, bool *failed)
{
	char b[64];
	uint64_t t0 = now_ns(), i;

	for (i = 0; i < n; i++)
		*failed |= umcg_read(zero_fd, b, sizeof(b)) != (ssize_t)sizeof(b);
	return (double)(now_ns() - t0) / (double)n;
}

static void *worker(void *arg)
{
	struct wrun *r = arg;

	if (r->umcg_first) {
		r->umcg_ns = worker_umcg(r->n, &r->failed);
		r->read_ns = worker_named(r->n, &r->failed);
	} else {
		r->read_ns = worker_named(r->n, &r->failed);
		r->umcg_ns = worker_umcg(r->n, &r->failed);
	}
	return NULL;
}

static void run_worker(struct umcg_rt *rt, struct wrun *r)
{
	struct umcg_worker *w;
	int ret;

	ret = umcg_spawn(rt, &w, NULL, worker, r);
	if (ret)
		die_err("umcg_spawn", -ret);
	ret = umcg_join(w, NULL);
	if (ret)
		die_err("umcg_join", -ret);
	if (r->failed)
		die("a worker's read of /dev/zero failed");
}

/* ---- two workers contending for a mutex -------------------------------- */

struct mrun {
	uint64_t n;
	bool umcg;
	pthread_mutex_t pm;
	struct umcg_mutex um;
	bool failed;
};

static void *mutex_worker(void *arg)
{
	struct mrun *r = arg;
	uint64_t i;

	for (i = 0; i < r->n; i++) {
		if (r->umcg) {
			r->failed |= umcg_mutex_lock(&r->um) != 0;
			umcg_yield();
			r->failed |= umcg_mutex_unlock(&r->um) != 0;
		} else {
			r->failed |= pthread_mutex_lock(&r->pm) != 0;
			umcg_yield();
			r->failed |= pthread_mutex_unlock(&r->pm) != 0;
		}
		umcg_yield();
	}
	return NULL;
}

/* ns per worker iteration, both workers together. */
static double run_mutex(struct umcg_rt *rt, uint64_t n, bool umcg)
{
	struct mrun r = { .n = n, .umcg = umcg, .um = UMCG_MUTEX_INIT };
	struct umcg_worker *w[2];
	uint64_t t0;
	int i, ret;

	pthread_mutex_init(&r.pm, NULL);
	t0 = now_ns();
	for (i = 0; i < 2; i++) {
		ret = umcg_spawn(rt, &w[i], NULL, mutex_worker, &r);
		if (ret)
			die_err("umcg_spawn", -ret);
	}
	for (i = 0; i < 2; i++) {
		ret = umcg_join(w[i], NULL);
		if (ret)
			die_err("umcg_join", -ret);
	}
	t0 = now_ns() - t0;
	if (r.failed)
		die("a mutex call failed in a worker");
	pthread_mutex_destroy(&r.pm);
	return (double)t0 / (double)(2 * n);
}

/* ---- report ----------------------------------------------------------- */

static void usage(FILE *f)
{
	fprintf(f, "usage: umcg-bench-preload [--iterations N] [--repeat N] [--quick]\n"
		   "  --iterations N  calls per timed loop (default 200000)\n"
		   "  --repeat N      runs of everything; medians are reported (default 7)\n"
		   "  --quick         a short run for the smoke test\n");
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = { { "iterations", required_argument, NULL, 'i' },
						  { "repeat", required_argument, NULL, 'r' },
						  { "quick", no_argument, NULL, 'q' },
						  { "help", no_argument, NULL, 'h' },
						  { NULL, 0, NULL, 0 } };
	struct options opt = { .iterations = 200000, .repeat = 7 };
	double named[MAX_REPEAT], libc[MAX_REPEAT], wread[MAX_REPEAT], wumcg[MAX_REPEAT];
	double r_unreg[MAX_REPEAT], r_worker[MAX_REPEAT];
	double mpth[MAX_REPEAT], mumcg[MAX_REPEAT], r_mutex[MAX_REPEAT];
	double m_named, m_libc, m_read, m_umcg;
	uint64_t mutex_n;
	struct umcg_rt_attr attr;
	struct umcg_rt *rt;
	struct wrun wr;
	struct json j;
	unsigned int i;
	int c, ret;

	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (c) {
		case 'i':
			opt.iterations = parse_u64("--iterations", optarg, 100, 100000000);
			break;
		case 'r':
			opt.repeat = (unsigned int)parse_u64("--repeat", optarg, 1, MAX_REPEAT);
			break;
		case 'q':
			opt.iterations = 5000;
			opt.repeat = 3;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	resolve();
	umcg_rt_attr_init(&attr);
	attr.nr_servers = 1;
	ret = umcg_rt_create(&rt, &attr);
	if (!ret)
		ret = umcg_rt_start(rt);
	if (ret)
		die_err("starting the runtime", -ret);

	/* One untimed round of each loop first: page in, resolve symbols. */
	loop_named(opt.iterations / 10);
	loop_libc(opt.iterations / 10);
	wr = (struct wrun){ .n = opt.iterations / 10 };
	run_worker(rt, &wr);
	/* A contended round costs microseconds: fewer of them. */
	mutex_n = opt.iterations / 20 ? opt.iterations / 20 : 1;
	run_mutex(rt, mutex_n / 10 + 1, false);
	for (i = 0; i < opt.repeat; i++) {
		if (i % 2) {
			libc[i] = loop_libc(opt.iterations);
			named[i] = loop_named(opt.iterations);
		} else {
			named[i] = loop_named(opt.iterations);
			libc[i] = loop_libc(opt.iterations);
		}
		wr = (struct wrun){ .n = opt.iterations, .umcg_first = i % 2 };
		run_worker(rt, &wr);
		wread[i] = wr.read_ns;
		wumcg[i] = wr.umcg_ns;
		if (i % 2) {
			mumcg[i] = run_mutex(rt, mutex_n, true);
			mpth[i] = run_mutex(rt, mutex_n, false);
		} else {
			mpth[i] = run_mutex(rt, mutex_n, false);
			mumcg[i] = run_mutex(rt, mutex_n, true);
		}
		r_mutex[i] = mpth[i] / mumcg[i];
	}
	umcg_rt_drain(rt);
	umcg_rt_stop(rt);
	umcg_rt_destroy(rt);

	for (i = 0; i < opt.repeat; i++) {
		r_unreg[i] = named[i] / libc[i];
		r_worker[i] = wread[i] / wumcg[i];
	}
	m_named = median(named, opt.repeat);
	m_libc = median(libc, opt.repeat);
	m_read = median(wread, opt.repeat);
	m_umcg = median(wumcg, opt.repeat);
	json_begin(&j, stdout);
	json_str(&j, "bench", "preload");
	json_str(&j, "backend", umcg_backend_name(umcg_backend_active()));
	json_u64(&j, "iterations", opt.iterations);
	json_u64(&j, "repeat", opt.repeat);
	json_str(&j, "in_front_of_libc", direct ? "preload" : "an interposer before the preload");
	json_object(&j, "unregistered");
	json_str(&j, "loop", "write(/dev/null,1) + read(/dev/zero,1) + poll(0)");
	json_double(&j, "preload_ns", m_named, 1);
	json_double(&j, "libc_ns", m_libc, 1);
	json_double(&j, "ratio", median(r_unreg, opt.repeat), 3);
	json_double(&j, "target", 1.02, 2);
	json_close(&j, '}');
	json_object(&j, "worker_read");
	json_str(&j, "loop", "read(/dev/zero,64) in a worker");
	json_double(&j, "preload_read_ns", m_read, 1);
	json_double(&j, "umcg_read_ns", m_umcg, 1);
	json_double(&j, "ratio", median(r_worker, opt.repeat), 3);
	json_double(&j, "target", 1.1, 2);
	json_close(&j, '}');
	json_object(&j, "worker_mutex");
	json_str(&j, "loop", "lock, yield, unlock, yield; two workers, one server");
	json_u64(&j, "iterations", mutex_n);
	json_double(&j, "pthread_preload_ns", median(mpth, opt.repeat), 1);
	json_double(&j, "umcg_mutex_ns", median(mumcg, opt.repeat), 1);
	json_double(&j, "ratio", median(r_mutex, opt.repeat), 3);
	json_close(&j, '}');
	json_array(&j, "runs");
	for (i = 0; i < opt.repeat; i++) {
		json_object(&j, NULL);
		json_double(&j, "preload_ns", named[i], 1);
		json_double(&j, "libc_ns", libc[i], 1);
		json_double(&j, "preload_read_ns", wread[i], 1);
		json_double(&j, "umcg_read_ns", wumcg[i], 1);
		json_double(&j, "pthread_preload_mutex_ns", mpth[i], 1);
		json_double(&j, "umcg_mutex_ns", mumcg[i], 1);
		json_close(&j, '}');
	}
	json_close(&j, ']');
	json_end(&j);
	return 0;
}
