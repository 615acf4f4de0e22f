/* SPDX-License-Identifier: MIT */
/*
 * handoff.c - the cost of a server -> worker -> server round trip, against
 * the floor of two threads ping-ponging on one futex word.
 *
 * UMCG round trip (through the library, whichever backend it picked): the
 * server, pinned to one CPU, sets next_tid = W, stores
 * RUNNABLE|TF_COND_WAIT and calls umcg_wait(0, 0); the worker runs, stores
 * RUNNABLE|TF_COND_WAIT and calls umcg_wait(0, 0), which pushes it on the
 * server's list and wakes the server. The worker is created with the
 * process's original CPU mask, not the server's: keeping it on the
 * server's CPU is the library's job, so each timed round the worker
 * records sched_getcpu() and the report counts the rounds it ran elsewhere,
 * plus the growth of the thread's se.nr_migrations (from
 * /proc/self/task/TID/sched; null where that file does not exist) between
 * its first run as a worker and its exit.
 *
 * Futex round trip (the floor): two threads pinned to the same CPU; A
 * stores 1 and FUTEX_WAKEs, B sees 1, stores 0 and FUTEX_WAKEs, A sees 0:
 * there and back, FUTEX_PRIVATE. B calls sched_getcpu() each timed round
 * too, so both loops do the same bookkeeping.
 *
 * Each of --repeat runs measures both, alternating which goes first, so
 * that drift and noise hit both; the report gives the median of each and
 * their ratio, plus every run. Every run starts with one untimed round
 * (the worker's registration, the futex thread's start) and --warmup more.
 *
 * Protocols: the server loop is doc/umcg-abi.md §7 rule 8 (its seq_cst state
 * store pairs with the backend's seq_cst CAS that wakes it); the worker's
 * exit is the one of examples/raw_scheduler.c: unregister while RUNNING,
 * store done (seq_cst), CAS the server RUNNABLE -> RUNNING and kick it. In
 * the futex loop the release store of the word pairs with the other
 * thread's acquire load.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* gettid(), sched_getcpu(), pthread_attr_setaffinity_np() */
#endif
#include <errno.h>
#include <inttypes.h>
#include <linux/futex.h>
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

#include <umcg/umcg.h>

#include "common.h"

struct options {
	uint64_t iterations;
	uint64_t warmup;
	unsigned int repeat;
};

/* The figures of one run. */
struct run {
	double umcg_ns;
	double futex_ns;
	uint64_t worker_cpu_mismatch;
	uint64_t futex_cpu_mismatch;
	long long worker_migrations; /* -1: unknown */
};

/*
 * struct bench_worker - the UMCG worker of one run.
 * @task: first, so the struct is 64-byte aligned.
 * @tid: written before registering; published by the registration push.
 * @done: set after the worker unregistered (seq_cst, see the header).
 * Everything else is written by the worker and read after pthread_join().
 */
struct bench_worker {
	struct umcg_task task;
	const struct options *opt;
	int cpu;
	pid_t tid;
	int done;
	int err;
	const char *err_what;
	uint64_t cpu_mismatch;
	long long migrations;
};

/* The futex pair of one run: A is the calling thread, B a new one. */
struct pingpong {
	uint32_t word;
	const struct options *opt;
	int cpu;
	uint64_t cpu_mismatch;
};

static struct umcg_task server_task;
static pid_t server_tid;
static cpu_set_t original_mask; /* the process's mask before pinning */

/* se.nr_migrations of thread @tid, or -1 if the kernel does not say. */
static long long read_migrations(pid_t tid)
{
	char path[64], line[256];
	long long val = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/task/%d/sched", (int)tid);
	f = fopen(path, "re");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		char *colon;

		if (strncmp(line, "se.nr_migrations", 16) != 0)
			continue;
		colon = strchr(line, ':');
		if (colon)
			val = strtoll(colon + 1, NULL, 10);
		break;
	}
	fclose(f);
	return val;
}

/* ---- UMCG round trips ---------------------------------------------------- */

static void set_running_if_runnable(struct umcg_task *t)
{
	uint32_t s = __atomic_load_n(&t->state, __ATOMIC_SEQ_CST);

	while ((s & UMCG_TASK_MASK) == UMCG_TASK_RUNNABLE &&
	       !__atomic_compare_exchange_n(
		       &t->state, &s, (s & ~(UMCG_TASK_MASK | UMCG_TF_MASK)) | UMCG_TASK_RUNNING,
		       false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
		;
}

static int worker_yield(struct bench_worker *w)
{
	__atomic_store_n(&w->task.state, UMCG_TASK_RUNNABLE | UMCG_TF_COND_WAIT, __ATOMIC_SEQ_CST);
	return umcg_wait(0, 0);
}

static void *worker_main(void *arg)
{
	struct bench_worker *w = arg;
	uint64_t j, timed_from = w->opt->warmup + 1, last = w->opt->warmup + w->opt->iterations;
	long long mig0;
	int ret;

	w->tid = gettid();
	w->task.state = UMCG_TASK_BLOCKED;
	w->task.server_tid = (uint32_t)server_tid;
	ret = umcg_ctl(UMCG_CTL_REGISTER | UMCG_CTL_WORKER, &w->task, CLOCK_MONOTONIC);
	if (ret) {
		w->err = ret;
		w->err_what = "worker umcg_ctl(REGISTER|WORKER)";
		return NULL;
	}
	/* Segment 0 (untimed): the server ran us once. */
	mig0 = read_migrations(w->tid);
	for (j = 0; j <= last; j++) {
		if (j >= timed_from && sched_getcpu() != w->cpu)
			w->cpu_mismatch++;
		ret = worker_yield(w);
		if (ret) {
			w->err = ret;
			w->err_what = "worker umcg_wait";
			break;
		}
	}
	/* Segment last + 1 (untimed): leave. */
	if (mig0 >= 0) {
		long long mig1 = read_migrations(w->tid);

		w->migrations = mig1 >= 0 ? mig1 - mig0 : -1;
	}
	ret = umcg_ctl(UMCG_CTL_UNREGISTER, NULL, 0);
	if (ret && !w->err) {
		w->err = ret;
		w->err_what = "worker umcg_ctl(UNREGISTER)";
	}
	/* Pairs with the server's seq_cst state store before its done load. */
	__atomic_store_n(&w->done, 1, __ATOMIC_SEQ_CST);
	set_running_if_runnable(&server_task);
	ret = umcg_kick(0, server_tid);
	if (ret && !w->err) {
		w->err = ret;
		w->err_what = "worker umcg_kick(server)";
	}
	return NULL;
}

/*
 * run_once() - run @w and wait until it hands the CPU back: one round trip.
 * @ready: whether @w was already taken off the runnable list (and is ours).
 */
static int run_once(struct bench_worker *w, bool *ready)
{
	struct umcg_task *head;
	int ret;

	for (;;) {
		/* doc/umcg-abi.md §7 rules 7-8. */
		__atomic_store_n(&server_task.state, UMCG_TASK_RUNNABLE | UMCG_TF_COND_WAIT,
				 __ATOMIC_SEQ_CST);
		if (!*ready) {
			head = umcg_runnable_take(&server_task);
			if (head) {
				if (head != &w->task || umcg_runnable_next(head))
					die("unexpected runnable list");
				*ready = true;
			}
		}
		if (*ready)
			server_task.next_tid = (uint32_t)w->tid;
		ret = umcg_wait(0, 0);
		if (ret && ret != -EAGAIN)
			return ret;
		if (*ready) {
			if (__atomic_load_n(&server_task.next_tid, __ATOMIC_RELAXED) == 0) {
				/* Used: @w ran and woke us when it yielded
				 * (or left). */
				*ready = false;
				return 0;
			}
			server_task.next_tid = 0;
		}
	}
}

static double umcg_run(const struct options *opt, int cpu, struct run *r)
{
	static struct bench_worker w;
	uint64_t i, t0, t1;
	bool ready = false;
	pthread_attr_t attr;
	pthread_t th;
	int ret;

	memset(&server_task, 0, sizeof(server_task));
	server_task.state = UMCG_TASK_RUNNING;
	server_task.server_tid = (uint32_t)server_tid;
	ret = umcg_ctl(UMCG_CTL_REGISTER, &server_task, CLOCK_MONOTONIC);
	if (ret)
		die("server umcg_ctl(REGISTER): %s", strerror(-ret));

	memset(&w, 0, sizeof(w));
	w.opt = opt;
	w.cpu = cpu;
	w.migrations = -1;
	pthread_attr_init(&attr);
	pthread_attr_setaffinity_np(&attr, sizeof(original_mask), &original_mask);
	ret = pthread_create(&th, &attr, worker_main, &w);
	pthread_attr_destroy(&attr);
	if (ret)
		die("pthread_create: %s", strerror(ret));

	/* Dispatch 0 (registration) and the warm-up. */
	for (i = 0; i <= opt->warmup; i++)
		if ((ret = run_once(&w, &ready)))
			die("server umcg_wait: %s", strerror(-ret));
	t0 = now_ns();
	for (i = 0; i < opt->iterations; i++)
		if ((ret = run_once(&w, &ready)))
			die("server umcg_wait: %s", strerror(-ret));
	t1 = now_ns();
	/* The last dispatch: the worker leaves and wakes us. */
	if ((ret = run_once(&w, &ready)))
		die("server umcg_wait: %s", strerror(-ret));
	for (;;) {
		__atomic_store_n(&server_task.state, UMCG_TASK_RUNNABLE | UMCG_TF_COND_WAIT,
				 __ATOMIC_SEQ_CST);
		if (__atomic_load_n(&w.done, __ATOMIC_SEQ_CST))
			break;
		ret = umcg_wait(0, 0);
		if (ret && ret != -EAGAIN)
			die("server umcg_wait: %s", strerror(-ret));
	}
	set_running_if_runnable(&server_task);
	pthread_join(th, NULL);
	if (w.err)
		die("%s: %s", w.err_what, strerror(-w.err));
	ret = umcg_ctl(UMCG_CTL_UNREGISTER, NULL, 0);
	if (ret)
		die("server umcg_ctl(UNREGISTER): %s", strerror(-ret));

	r->worker_cpu_mismatch = w.cpu_mismatch;
	r->worker_migrations = w.migrations;
	return (double)(t1 - t0) / (double)opt->iterations;
}

/* ---- futex round trips --------------------------------------------------- */

static void *pong_main(void *arg)
{
	struct pingpong *p = arg;
	uint64_t i, total = 1 + p->opt->warmup + p->opt->iterations;
	uint64_t timed_from = 1 + p->opt->warmup;

	for (i = 0; i < total; i++) {
		/* Acquire: pairs with A's release store of 1. */
		while (__atomic_load_n(&p->word, __ATOMIC_ACQUIRE) == 0)
			futex_wait(&p->word, 0);
		if (i >= timed_from && sched_getcpu() != p->cpu)
			p->cpu_mismatch++;
		__atomic_store_n(&p->word, 0, __ATOMIC_RELEASE);
		futex_wake(&p->word, 1);
	}
	return NULL;
}

static double futex_run(const struct options *opt, int cpu, struct run *r)
{
	struct pingpong p = { .word = 0, .opt = opt, .cpu = cpu };
	uint64_t i, t0 = 0, t1, total = 1 + opt->warmup + opt->iterations;
	pthread_attr_t attr;
	cpu_set_t set;
	pthread_t th;
	int ret;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	pthread_attr_init(&attr);
	pthread_attr_setaffinity_np(&attr, sizeof(set), &set);
	ret = pthread_create(&th, &attr, pong_main, &p);
	pthread_attr_destroy(&attr);
	if (ret)
		die("pthread_create: %s", strerror(ret));
	for (i = 0; i < total; i++) {
		if (i == 1 + opt->warmup)
			t0 = now_ns();
		/* Release: pairs with B's acquire load. */
		__atomic_store_n(&p.word, 1, __ATOMIC_RELEASE);
		futex_wake(&p.word, 1);
		while (__atomic_load_n(&p.word, __ATOMIC_ACQUIRE) == 1)
			futex_wait(&p.word, 1);
	}
	t1 = now_ns();
	pthread_join(th, NULL);
	r->futex_cpu_mismatch = p.cpu_mismatch;
	return (double)(t1 - t0) / (double)opt->iterations;
}

/* ---- main ---------------------------------------------------------------- */

static void usage(FILE *f)
{
	fprintf(f, "usage: umcg-bench-handoff [--iterations N] [--warmup N] [--repeat R]\n"
		   "  --iterations N  timed round trips per run (default 200000)\n"
		   "  --warmup N      untimed round trips before them (default 10000)\n"
		   "  --repeat R      runs of each measurement; medians reported (default 5)\n");
}

static void parse_args(int argc, char **argv, struct options *opt)
{
	int i;

	opt->iterations = 200000;
	opt->warmup = 10000;
	opt->repeat = 5;
	for (i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			usage(stdout);
			exit(0);
		}
		if (i + 1 >= argc ||
		    (strcmp(a, "--iterations") && strcmp(a, "--warmup") && strcmp(a, "--repeat"))) {
			usage(stderr);
			exit(2);
		}
		if (!strcmp(a, "--iterations"))
			opt->iterations = parse_u64(a, argv[++i], 1, UINT64_C(1) << 40);
		else if (!strcmp(a, "--warmup"))
			opt->warmup = parse_u64(a, argv[++i], 0, UINT64_C(1) << 40);
		else
			opt->repeat = (unsigned int)parse_u64(a, argv[++i], 1, 1000);
	}
}

static int pin_to_first_cpu(void)
{
	int cpu;

	if (sched_getaffinity(0, sizeof(original_mask), &original_mask))
		die("sched_getaffinity: %s", strerror(errno));
	cpu = first_cpu(NULL);
	pin_self(cpu);
	return cpu;
}
static void print_migrations(long long m)
{
	if (m < 0)
		fputs("null", stdout);
	else
		printf("%lld", m);
}

int main(int argc, char **argv)
{
	struct options opt;
	struct run *runs;
	double *u, *f, mu, mf;
	uint64_t mismatch = 0;
	long long migrations = 0;
	unsigned int r;
	int backend, cpu;

	parse_args(argc, argv, &opt);
	backend = umcg_backend_active();
	if (backend < 0)
		die("no UMCG backend (%s): %s", strerror(-backend), umcg_backend_reason());
	cpu = pin_to_first_cpu();
	server_tid = gettid();

	runs = calloc(opt.repeat, sizeof(*runs));
	u = calloc(opt.repeat, sizeof(*u));
	f = calloc(opt.repeat, sizeof(*f));
	if (!runs || !u || !f)
		die("out of memory");
	for (r = 0; r < opt.repeat; r++) {
		if (r % 2 == 0) {
			runs[r].umcg_ns = umcg_run(&opt, cpu, &runs[r]);
			runs[r].futex_ns = futex_run(&opt, cpu, &runs[r]);
		} else {
			runs[r].futex_ns = futex_run(&opt, cpu, &runs[r]);
			runs[r].umcg_ns = umcg_run(&opt, cpu, &runs[r]);
		}
		u[r] = runs[r].umcg_ns;
		f[r] = runs[r].futex_ns;
		mismatch += runs[r].worker_cpu_mismatch;
		if (runs[r].worker_migrations < 0 || migrations < 0)
			migrations = -1;
		else
			migrations += runs[r].worker_migrations;
	}
	mu = median(u, opt.repeat);
	mf = median(f, opt.repeat);

	printf("{\"bench\":\"handoff\",\"backend\":\"%s\",\"cpu\":%d,\"iterations\":%" PRIu64
	       ",\"warmup\":%" PRIu64 ",\"repeat\":%u,\"umcg_round_trip_ns\":%.1f"
	       ",\"futex_round_trip_ns\":%.1f,\"ratio\":%.3f,\"worker_cpu_mismatch\":%" PRIu64
	       ",\"worker_migrations\":",
	       umcg_backend_name(backend), cpu, opt.iterations, opt.warmup, opt.repeat, mu, mf,
	       mu / mf, mismatch);
	print_migrations(migrations);
	fputs(",\"runs\":[", stdout);
	for (r = 0; r < opt.repeat; r++) {
		printf("%s{\"umcg_round_trip_ns\":%.1f,\"futex_round_trip_ns\":%.1f"
		       ",\"worker_cpu_mismatch\":%" PRIu64 ",\"futex_cpu_mismatch\":%" PRIu64
		       ",\"worker_migrations\":",
		       r ? "," : "", runs[r].umcg_ns, runs[r].futex_ns, runs[r].worker_cpu_mismatch,
		       runs[r].futex_cpu_mismatch);
		print_migrations(runs[r].worker_migrations);
		putchar('}');
	}
	puts("]}");
	free(runs);
	free(u);
	free(f);
	return 0;
}
