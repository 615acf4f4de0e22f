/* SPDX-License-Identifier: MIT */
/*
 * detect.c - umcg-bench-detect: what the emulation's detection of
 * unannounced blocking costs, and what the mechanisms it was chosen from
 * cost (umcg_detect_set(3), doc/umcg-abi.md §11 rule 15).
 *
 * Probes: from one thread, the cost of each way of asking about another
 * thread of the process, once for a thread asleep in nanosleep() and once
 * for one spinning on another CPU: clock_gettime() of its CPU-time clock,
 * pread() of /proc/self/task/TID/stat, /schedstat and /syscall kept open,
 * and an open-pread-close of /syscall (what a kicker without a cached
 * descriptor pays). ns per call, the median of --repeat runs.
 *
 * Cost: a runtime with one server per CPU runs B busy workers (0, 1 and
 * 8), each spinning for --window and yielding every 200 us of work so
 * that all of them get turns; with B = 0 ("idle") eight workers sleep in
 * umcg_sleep_for() instead. Each B runs twice in the same process, with
 * detection on (--bound, default 2 ms) and off (umcg_detect_set(0)), in an
 * order that alternates from run to run. Reported per B: the watcher's CPU
 * time over the window as a share of one CPU (its thread's CPU clock;
 * "umcg-watch" in /proc/self/task), the process's CPU share, and the
 * workers' spin rate on / off ("spin_ratio", the peer being the same load
 * without detection).
 *
 * Protocols: `stop` is stored (release) by the main thread after the
 * window and loaded (acquire) by the workers; their counters are summed
 * after umcg_join(), which orders them.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "common.h"

#include <getopt.h>
#include <sys/resource.h>
#include <sys/syscall.h>

#include <umcg/runtime.h>

struct options {
	uint64_t window_ns;
	uint64_t bound_ns;
	unsigned int repeat;
	unsigned int probe_calls;
};

/* ---- probes ------------------------------------------------------------ */

static int target_stop;
static pid_t target_tid[2];

static void *sleeping_target(void *arg)
{
	(void)arg;
	__atomic_store_n(&target_tid[0], (pid_t)syscall(SYS_gettid), __ATOMIC_RELEASE);
	while (!__atomic_load_n(&target_stop, __ATOMIC_ACQUIRE))
		sleep_ns(50 * NSEC_PER_MSEC);
	return NULL;
}

static void *spinning_target(void *arg)
{
	(void)arg;
	__atomic_store_n(&target_tid[1], (pid_t)syscall(SYS_gettid), __ATOMIC_RELEASE);
	while (!__atomic_load_n(&target_stop, __ATOMIC_ACQUIRE))
		;
	return NULL;
}

enum {
	P_CPUCLOCK,
	P_STAT,
	P_SCHEDSTAT,
	P_SYSCALL,
	P_OPEN_SYSCALL,
	NR_PROBES
};
static const char *const probe_names[NR_PROBES] = { "cpu_clock", "proc_stat", "proc_schedstat",
						    "proc_syscall", "open_read_close_syscall" };

static int open_task_file(pid_t tid, const char *name)
{
	char path[64];
	int fd;

	snprintf(path, sizeof(path), "/proc/self/task/%d/%s", (int)tid, name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		die("open %s: %s", path, strerror(errno));
	return fd;
}

/* ns per call of probe @p on @tid. */
static double time_probe(int p, pid_t tid, unsigned int calls)
{
	static const char *const files[NR_PROBES] = { NULL, "stat", "schedstat", "syscall",
						      "syscall" };
	clockid_t clk = (clockid_t)((~(unsigned int)tid << 3) | 6);
	char buf[1024];
	struct timespec ts;
	uint64_t t0;
	unsigned int i;
	int fd = -1;

	if (p != P_CPUCLOCK && p != P_OPEN_SYSCALL)
		fd = open_task_file(tid, files[p]);
	t0 = now_ns();
	for (i = 0; i < calls; i++) {
		switch (p) {
		case P_CPUCLOCK:
			if (clock_gettime(clk, &ts))
				die("clock_gettime of a thread CPU clock: %s", strerror(errno));
			break;
		case P_OPEN_SYSCALL:
			fd = open_task_file(tid, files[p]);
			if (pread(fd, buf, sizeof(buf), 0) <= 0)
				die("pread: %s", strerror(errno));
			close(fd);
			break;
		default:
			if (pread(fd, buf, sizeof(buf), 0) <= 0)
				die("pread: %s", strerror(errno));
		}
	}
	t0 = now_ns() - t0;
	if (p != P_CPUCLOCK && p != P_OPEN_SYSCALL)
		close(fd);
	return (double)t0 / calls;
}

static void run_probes(const struct options *opt)
{
	double v[NR_PROBES][2][64];
	pthread_t th[2];
	unsigned int r, t;
	int p;

	if (pthread_create(&th[0], NULL, sleeping_target, NULL) ||
	    pthread_create(&th[1], NULL, spinning_target, NULL))
		die("pthread_create failed");
	while (!__atomic_load_n(&target_tid[0], __ATOMIC_ACQUIRE) ||
	       !__atomic_load_n(&target_tid[1], __ATOMIC_ACQUIRE))
		sleep_ns(NSEC_PER_MSEC);
	sleep_ns(20 * NSEC_PER_MSEC);
	for (r = 0; r < opt->repeat; r++)
		for (p = 0; p < NR_PROBES; p++)
			for (t = 0; t < 2; t++)
				v[p][t][r] = time_probe(p, target_tid[t],
							p == P_OPEN_SYSCALL ? opt->probe_calls / 4 :
									      opt->probe_calls);
	__atomic_store_n(&target_stop, 1, __ATOMIC_RELEASE);
	pthread_join(th[0], NULL);
	pthread_join(th[1], NULL);
	printf("  \"probes_ns\": {");
	for (p = 0; p < NR_PROBES; p++)
		printf("%s\n    \"%s\": {\"asleep\": %.0f, \"running\": %.0f}", p ? "," : "",
		       probe_names[p], median(v[p][0], opt->repeat), median(v[p][1], opt->repeat));
	printf("\n  },\n");
}

/* ---- cost -------------------------------------------------------------- */

struct load {
	int stop;
	uint64_t spins;
};

static void *busy_worker(void *arg)
{
	struct load *l = arg;
	uint64_t n = 0, next = now_ns() + 200 * NSEC_PER_USEC, t;

	/* Acquire: pairs with the main thread's release store. */
	while (!__atomic_load_n(&l->stop, __ATOMIC_ACQUIRE)) {
		n++;
		if ((n & 1023) == 0 && (t = now_ns()) >= next) {
			umcg_yield();
			next = t + 200 * NSEC_PER_USEC;
		}
	}
	__atomic_fetch_add(&l->spins, n, __ATOMIC_RELAXED);
	return NULL;
}

static void *idle_worker(void *arg)
{
	struct load *l = arg;

	while (!__atomic_load_n(&l->stop, __ATOMIC_ACQUIRE))
		umcg_sleep_for(20 * NSEC_PER_MSEC);
	return NULL;
}

static uint64_t process_cpu(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (uint64_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * NSEC_PER_SEC +
	       (uint64_t)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * NSEC_PER_USEC;
}

struct cost {
	double watcher_pct, process_pct, spins_per_s;
};

/* One window of @busy busy workers (0: idle ones) with @bound. */
static struct cost run_load(struct umcg_rt *rt, unsigned int busy, uint64_t bound,
			    const struct options *opt)
{
	unsigned int n = busy ? busy : 8, i;
	struct umcg_worker *w[8];
	struct load l = { 0 };
	uint64_t t0, c0, p0, wall;
	struct cost c;
	pid_t wt;
	int ret;

	ret = umcg_detect_set(bound);
	if (ret)
		die_err("umcg_detect_set", ret);
	for (i = 0; i < n; i++) {
		ret = umcg_spawn(rt, &w[i], NULL, busy ? busy_worker : idle_worker, &l);
		if (ret)
			die_err("umcg_spawn", ret);
	}
	sleep_ns(50 * NSEC_PER_MSEC); /* all started, the watcher too */
	wt = watcher_tid();
	t0 = now_ns();
	c0 = thread_cpu_ns(wt);
	p0 = process_cpu();
	sleep_ns(opt->window_ns);
	wall = now_ns() - t0;
	c.watcher_pct = 100.0 * (double)(thread_cpu_ns(wt) - c0) / (double)wall;
	c.process_pct = 100.0 * (double)(process_cpu() - p0) / (double)wall;
	/* Release: pairs with the workers' acquire loads. */
	__atomic_store_n(&l.stop, 1, __ATOMIC_RELEASE);
	for (i = 0; i < n; i++) {
		ret = umcg_join(w[i], NULL);
		if (ret)
			die_err("umcg_join", ret);
	}
	c.spins_per_s = (double)l.spins * 1e9 / (double)wall;
	return c;
}

static void run_costs(const struct options *opt)
{
	static const unsigned int loads[] = { 0, 1, 8 };
	struct cost on[3][64], off[3][64];
	double v[64];
	struct umcg_rt *rt;
	unsigned int r, k, i;
	int ret;

	ret = umcg_rt_create(&rt, NULL);
	if (!ret)
		ret = umcg_rt_start(rt);
	if (ret)
		die_err("umcg_rt_create/start", ret);
	for (r = 0; r < opt->repeat; r++) {
		for (k = 0; k < 3; k++) {
			if (r & 1) {
				off[k][r] = run_load(rt, loads[k], 0, opt);
				on[k][r] = run_load(rt, loads[k], opt->bound_ns, opt);
			} else {
				on[k][r] = run_load(rt, loads[k], opt->bound_ns, opt);
				off[k][r] = run_load(rt, loads[k], 0, opt);
			}
			fprintf(stderr, "umcg-bench-detect: run %u/%u, %u busy: watcher %.3f%%\n",
				r + 1, opt->repeat, loads[k], on[k][r].watcher_pct);
		}
	}
	umcg_rt_drain(rt);
	umcg_rt_destroy(rt);

	printf("  \"cost\": [");
	for (k = 0; k < 3; k++) {
		double w_on, p_on, p_off, s_on = 0, s_off = 0;

		for (i = 0; i < opt->repeat; i++)
			v[i] = on[k][i].watcher_pct;
		w_on = median(v, opt->repeat);
		for (i = 0; i < opt->repeat; i++)
			v[i] = on[k][i].process_pct;
		p_on = median(v, opt->repeat);
		for (i = 0; i < opt->repeat; i++)
			v[i] = off[k][i].process_pct;
		p_off = median(v, opt->repeat);
		if (loads[k]) {
			for (i = 0; i < opt->repeat; i++)
				v[i] = on[k][i].spins_per_s;
			s_on = median(v, opt->repeat);
			for (i = 0; i < opt->repeat; i++)
				v[i] = off[k][i].spins_per_s;
			s_off = median(v, opt->repeat);
		}
		printf("%s\n    {\"busy_workers\": %u, \"load\": \"%s\", \"watcher_cpu_pct\": %.3f, "
		       "\"process_cpu_pct_on\": %.1f, \"process_cpu_pct_off\": %.1f",
		       k ? "," : "", loads[k], loads[k] ? "spinning" : "idle (8 in umcg_sleep_for)",
		       w_on, p_on, p_off);
		if (loads[k])
			printf(", \"spins_per_s_on\": %.4g, \"spins_per_s_off\": %.4g, "
			       "\"spin_ratio\": %.4f",
			       s_on, s_off, s_off > 0 ? s_on / s_off : 0.0);
		printf("}");
	}
	printf("\n  ]\n");
}

static void usage(FILE *f)
{
	fprintf(f, "usage: umcg-bench-detect [--window MS] [--bound US] [--repeat N] [--quick]\n"
		   "  --window MS  length of each measured window (default 1000)\n"
		   "  --bound US   the detection bound while on (default 2000)\n"
		   "  --repeat N   runs of everything; medians are reported (default 5)\n"
		   "  --quick      a short run for the smoke test\n");
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = { { "window", required_argument, NULL, 'w' },
						  { "bound", required_argument, NULL, 'b' },
						  { "repeat", required_argument, NULL, 'r' },
						  { "quick", no_argument, NULL, 'q' },
						  { "help", no_argument, NULL, 'h' },
						  { NULL, 0, NULL, 0 } };
	struct options opt = { .window_ns = NSEC_PER_SEC,
			       .bound_ns = 2 * NSEC_PER_MSEC,
			       .repeat = 5,
			       .probe_calls = 20000 };
	int c;

	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (c) {
		case 'w':
			opt.window_ns = parse_u64("--window", optarg, 10, 60000) * NSEC_PER_MSEC;
			break;
		case 'b':
			opt.bound_ns = parse_u64("--bound", optarg, UMCG_DETECT_MIN_NS / 1000,
						 UMCG_DETECT_MAX_NS / 1000) *
				       NSEC_PER_USEC;
			break;
		case 'r':
			opt.repeat = (unsigned int)parse_u64("--repeat", optarg, 1, 64);
			break;
		case 'q':
			opt.window_ns = 100 * NSEC_PER_MSEC;
			opt.repeat = 1;
			opt.probe_calls = 500;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (umcg_backend_active() != UMCG_BACKEND_EMULATED) {
		printf("{\"bench\": \"detect\", \"skipped\": \"detection is the "
		       "emulation's; backend %s\"}\n",
		       umcg_backend_name(umcg_backend_active()));
		return 0;
	}
	printf("{\n  \"bench\": \"detect\",\n  \"backend\": \"emulated\",\n"
	       "  \"window_ms\": %.0f,\n  \"bound_us\": %.0f,\n  \"repeat\": %u,\n",
	       (double)opt.window_ns / 1e6, (double)opt.bound_ns / 1e3, opt.repeat);
	run_probes(&opt);
	run_costs(&opt);
	printf("}\n");
	return 0;
}
