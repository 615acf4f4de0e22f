/* SPDX-License-Identifier: MIT */
/*
 * bimodal.c - umcg-bench-bimodal: latency of short tasks stuck among long
 * ones, with and without preemption, and against a pthread pool.
 *
 * The load: tasks that burn CPU in a busy loop (spin() of common.h,
 * calibrated at start), most of them --short-us (default 20 us) long and
 * --long-percent (default 1%) of them --long-us (default 5 ms). Which task
 * is long, and when each task arrives, come from a fixed-seed generator, so
 * every version sees the same sequence.
 *
 * Four versions run the load on the same number of threads:
 *  - cooperative: a runtime with one server per CPU, no timeslice, and a
 *    pool of --pool workers per server;
 *  - preemptive_1000us and preemptive_100us: the same with a timeslice of
 *    1 ms and of 100 us;
 *  - pthread: a pool of as many plain threads, taking tasks from a FIFO
 *    queue under a mutex and a condition variable (a pool rather than a
 *    thread per task: creating a thread costs about as much as a short task).
 *
 * Priorities, both off by default (0 = SCHED_OTHER):
 *  - --server-priority P: both runtimes' servers run SCHED_FIFO at P
 *    (umcg_rt_attr.server_priority), so that a server takes its CPU the
 *    moment a slice ends or work arrives;
 *  - --rt-priority P: the submitter runs SCHED_FIFO at P while it submits,
 *    in all three versions, so that it is not late behind busy workers.
 * Workers and pthread pool threads stay SCHED_OTHER. Where the process may
 * not use SCHED_FIFO, both fall back to 0; the report gives what was in
 * force ("server_priority", "submitter_rt_priority"). The README has what
 * each costs on the emulation.
 *
 * Two phases per version:
 *  - latency: open loop. The main thread (a plain thread, not a worker)
 *    submits --tasks tasks at Poisson arrival times whose mean rate is
 *    --load (default 0.7) times the capacity of the machine (servers /
 *    mean task CPU time), sleeping until each arrival; it never waits for
 *    the pool. A task's latency is its completion time minus its scheduled
 *    arrival (not the moment the submitter got around to it, so a late
 *    submitter does not hide queueing). Reported: p50 and p99 of the short
 *    tasks, p50 of the long ones, and the submitter's own lag; for bench/plot
 *    also the latency distribution of each kind of task, as its values at
 *    the percentiles listed in "latency_percentiles" ("short_latency_us" and
 *    "long_latency_us" of each version, medians over the runs).
 *  - throughput: --batch tasks all submitted at once; tasks per second from
 *    the submission to the last completion, and cpu_share: the process's
 *    CPU time (getrusage) over the phase / (wall time * CPUs). Below 1,
 *    CPUs sat idle or other programs had them; on a shared machine the
 *    throughputs compare only where the shares are close.
 * Each of --repeat runs measures the four versions in an order that
 * rotates from run to run; the report gives medians and every run.
 *
 * Figures and targets. After the runs, with the runtimes gone, the slice
 * meter (slicemeter.c, the measurement of umcg-bench-slice) measures each
 * slice on one CPU: the achieved slice, what one preemption costs and the
 * bare timer floor, all in the same run. Under "slice_1000us" and
 * "slice_100us" the report then gives, for that preemptive version:
 *   achieved_slice_ratio = mean achieved slice / requested slice,
 *   preempt_cost_us, timer_floor_us, cost_floor_ratio (their ratio),
 *   p99_ratio            = its short p99 / cooperative short p99,
 *   p99_ratio_vs_pthread = its short p99 / pthread short p99,
 *   throughput_cost      = 1 - its / cooperative batch throughput,
 * and the targets of the unprivileged SCHED_OTHER default with
 * "targets_met": at 1 ms achieved_slice_ratio <= 1.3, p99_ratio <= 0.25,
 * p99_ratio_vs_pthread <= 0.5, throughput_cost <= 0.05; at 100 us
 * achieved_slice_ratio <= 1.5 and preempt_cost_us <= 1.3 timer_floor_us.
 * Nothing fails on a missed target: the benchmark reports, and the README
 * says which are met today.
 *
 * The UMCG pool. The queue is two counters: `submitted`, stored only by
 * the submitter, and `taken`, advanced by the workers with a CAS; task
 * number i is the i-th submitted, so the counters are the whole queue, it
 * is FIFO, and nothing in it can be held by a worker that is switched out.
 * A worker that finds it empty announces itself idle (its `idle` flag,
 * then the `nr_idle` count), re-checks the queue and the stop flag, and
 * parks. The submitter stores `submitted`, then reads `nr_idle`, and if it
 * is not 0 claims one idle flag with an exchange and unparks that worker.
 *
 * Invariant: a task is never left queued while every worker sleeps. The
 * worker's flag store, count increment and re-check loads, and the
 * submitter's counter store and `nr_idle` load, are all seq_cst: either
 * the worker's re-check sees the task, or the submitter sees the count and
 * then finds the flag (stored before the count). Each flag goes from 1 to 0
 * by exchange, by exactly one party, which also decrements `nr_idle`: the
 * submitter (and then unparks) or the worker itself (after its re-check
 * succeeded, or after a wake-up that was a stale permit). Stopping is the
 * same pattern with the stop flag in place of `submitted`.
 *
 * Completion: each worker stores its task's completion time, then
 * increments `completed` (acq_rel); the one that reaches the total wakes
 * the main thread, whose acquire load of `completed` makes every time
 * visible.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "common.h"

#include <getopt.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/resource.h>

#include <umcg/runtime.h>

#include "slicemeter.h"

enum mode {
	MODE_COOP,
	MODE_PREEMPT_1MS,
	MODE_PREEMPT_100US,
	MODE_PTHREAD,
	NR_MODES
};

static const char *const mode_names[NR_MODES] = { "cooperative", "preemptive_1000us",
						  "preemptive_100us", "pthread" };

/* The timeslice of each preemptive version, and the key of its figures. */
#define NR_SLICES 2
static const struct {
	enum mode mode;
	uint64_t slice_us;
	const char *key;
	/* The targets (see "Figures and targets" above); 0: none. */
	double max_slice_ratio, max_p99_ratio, max_p99_ratio_vs_pthread, max_throughput_cost,
		max_cost_floor_ratio;
} slices[NR_SLICES] = {
	{ MODE_PREEMPT_1MS, 1000, "slice_1000us", 1.3, 0.25, 0.5, 0.05, 0 },
	{ MODE_PREEMPT_100US, 100, "slice_100us", 1.5, 0, 0, 0, 1.3 },
};

struct options {
	uint64_t tasks;
	uint64_t batch;
	double short_us;
	double long_us;
	double long_percent;
	double load;
	struct slice_meter meter;
	unsigned int pool; /* workers per server */
	unsigned int repeat;
	int rt_priority; /* SCHED_FIFO priority of the submitter */
	int server_priority; /* umcg_rt_attr.server_priority */
	int preempt; /* umcg_rt_attr.preempt */
};

/* One task of a schedule: when it arrives (ns after the start), how long. */
struct item {
	uint64_t offset;
	uint64_t iters;
	bool is_long;
};

struct schedule {
	struct item *items;
	uint64_t n;
};

struct pool {
	enum mode mode;
	const struct item *items;
	uint64_t n;
	uint64_t base; /* the schedule's time 0 */
	uint64_t *done_ts;
	uint64_t *submit_ts;
	uint64_t *results;
	unsigned int nworkers;

	uint64_t submitted __attribute__((aligned(64)));
	uint64_t taken __attribute__((aligned(64)));
	uint32_t completed __attribute__((aligned(64)));
	int stop;
	int duplicates; /* tasks taken twice: must stay 0 */

	/* UMCG pool */
	struct umcg_worker **w;
	int *idle;
	int nr_idle __attribute__((aligned(64)));
	unsigned int rot; /* submitter-private: where the next scan starts */

	/* pthread pool */
	pthread_t *th;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	uint64_t p_submitted, p_taken; /* under lock */
};

struct worker_arg {
	struct pool *p;
	unsigned int idx;
};

/* ---- the work ------------------------------------------------------------ */

static void run_task(struct pool *p, uint64_t t)
{
	uint64_t r = spin(p->items[t].iters, t + 1);

	if (__atomic_exchange_n(&p->results[t], r | 1, __ATOMIC_RELAXED))
		__atomic_fetch_add(&p->duplicates, 1, __ATOMIC_RELAXED);
	p->done_ts[t] = now_ns();
	/* acq_rel: the last incrementer's wake makes every done_ts visible
	 * to the main thread's acquire load. */
	if (__atomic_add_fetch(&p->completed, 1, __ATOMIC_ACQ_REL) == p->n)
		futex_wake(&p->completed, 1);
}

/* ---- the UMCG pool -------------------------------------------------------- */

/* Take the next task, or return false if none is queued. */
static bool take(struct pool *p, uint64_t *t)
{
	uint64_t x = __atomic_load_n(&p->taken, __ATOMIC_RELAXED);

	/* seq_cst load of submitted: the worker's half of the Dekker pair
	 * (and an acquire of the submitter's store). */
	while (x < __atomic_load_n(&p->submitted, __ATOMIC_SEQ_CST)) {
		if (__atomic_compare_exchange_n(&p->taken, &x, x + 1, false, __ATOMIC_RELAXED,
						__ATOMIC_RELAXED)) {
			*t = x;
			return true;
		}
	}
	return false;
}

/* Clear our idle flag if nobody claimed it yet. */
static void unidle_self(struct pool *p, unsigned int i)
{
	if (__atomic_exchange_n(&p->idle[i], 0, __ATOMIC_SEQ_CST))
		__atomic_fetch_sub(&p->nr_idle, 1, __ATOMIC_SEQ_CST);
}

static void *umcg_pool_worker(void *arg)
{
	struct worker_arg *a = arg;
	struct pool *p = a->p;
	unsigned int i = a->idx;
	uint64_t t;

	for (;;) {
		if (take(p, &t)) {
			run_task(p, t);
			continue;
		}
		if (__atomic_load_n(&p->stop, __ATOMIC_SEQ_CST))
			break;
		__atomic_store_n(&p->idle[i], 1, __ATOMIC_SEQ_CST);
		__atomic_fetch_add(&p->nr_idle, 1, __ATOMIC_SEQ_CST);
		if (__atomic_load_n(&p->taken, __ATOMIC_RELAXED) <
			    __atomic_load_n(&p->submitted, __ATOMIC_SEQ_CST) ||
		    __atomic_load_n(&p->stop, __ATOMIC_SEQ_CST)) {
			unidle_self(p, i);
			continue;
		}
		umcg_park();
		unidle_self(p, i); /* a stale permit woke us: nobody claimed it */
	}
	return NULL;
}

/* Claim and unpark up to @n idle workers. */
static void wake_idle_workers(struct pool *p, uint64_t n)
{
	unsigned int k, i;

	for (k = 0; n && k < p->nworkers; k++) {
		/* seq_cst: the submitter's half of the Dekker pair. */
		if (!__atomic_load_n(&p->nr_idle, __ATOMIC_SEQ_CST))
			return;
		i = (p->rot + k) % p->nworkers;
		if (__atomic_load_n(&p->idle[i], __ATOMIC_RELAXED) &&
		    __atomic_exchange_n(&p->idle[i], 0, __ATOMIC_SEQ_CST)) {
			__atomic_fetch_sub(&p->nr_idle, 1, __ATOMIC_SEQ_CST);
			umcg_unpark(p->w[i]);
			p->rot = i + 1;
			n--;
		}
	}
}

/* ---- the pthread pool ------------------------------------------------------- */

static void *pthread_pool_worker(void *arg)
{
	struct worker_arg *a = arg;
	struct pool *p = a->p;
	uint64_t t;

	for (;;) {
		pthread_mutex_lock(&p->lock);
		while (p->p_taken == p->p_submitted && !p->stop)
			pthread_cond_wait(&p->cond, &p->lock);
		if (p->p_taken == p->p_submitted) {
			pthread_mutex_unlock(&p->lock);
			break;
		}
		t = p->p_taken++;
		pthread_mutex_unlock(&p->lock);
		run_task(p, t);
	}
	return NULL;
}

/* ---- submitting ---------------------------------------------------------------- */

/* Make tasks [0, @upto) available and wake workers for the new ones. */
static void submit(struct pool *p, uint64_t upto)
{
	uint64_t prev;

	if (p->mode == MODE_PTHREAD) {
		pthread_mutex_lock(&p->lock);
		prev = p->p_submitted;
		p->p_submitted = upto;
		if (upto - prev == 1)
			pthread_cond_signal(&p->cond);
		else
			pthread_cond_broadcast(&p->cond);
		pthread_mutex_unlock(&p->lock);
		return;
	}
	prev = p->submitted;
	/* seq_cst: publishes the tasks, and orders before the nr_idle load. */
	__atomic_store_n(&p->submitted, upto, __ATOMIC_SEQ_CST);
	wake_idle_workers(p, upto - prev);
}

static void stop_pool(struct pool *p)
{
	unsigned int i;
	int ret;

	if (p->mode == MODE_PTHREAD) {
		pthread_mutex_lock(&p->lock);
		p->stop = 1;
		pthread_cond_broadcast(&p->cond);
		pthread_mutex_unlock(&p->lock);
		for (i = 0; i < p->nworkers; i++)
			pthread_join(p->th[i], NULL);
		return;
	}
	__atomic_store_n(&p->stop, 1, __ATOMIC_SEQ_CST);
	for (i = 0; i < p->nworkers; i++) {
		if (__atomic_exchange_n(&p->idle[i], 0, __ATOMIC_SEQ_CST)) {
			__atomic_fetch_sub(&p->nr_idle, 1, __ATOMIC_SEQ_CST);
			umcg_unpark(p->w[i]);
		}
	}
	for (i = 0; i < p->nworkers; i++) {
		ret = umcg_join(p->w[i], NULL);
		if (ret)
			die_err("umcg_join", ret);
	}
}

/* User plus system time of the whole process so far, in ns. */
static uint64_t process_cpu_ns(void)
{
	struct rusage ru;

	if (getrusage(RUSAGE_SELF, &ru))
		die("getrusage: %s", strerror(errno));
	return ((uint64_t)ru.ru_utime.tv_sec + (uint64_t)ru.ru_stime.tv_sec) * NSEC_PER_SEC +
	       ((uint64_t)ru.ru_utime.tv_usec + (uint64_t)ru.ru_stime.tv_usec) * NSEC_PER_USEC;
}

static unsigned int ncpus; /* in the affinity mask */
static int rt_priority; /* what is in force: --rt-priority, or 0 */
static int server_priority; /* what is in force: --server-priority, or 0 */
static int preempt; /* --preempt */
static int preempt_used; /* umcg_rt_preempt_mode() of the preemptive runtimes */

/* The calling thread to SCHED_FIFO at rt_priority (@on), or back. */
static void submitter_rt(bool on)
{
	struct sched_param sp = { .sched_priority = on ? rt_priority : 0 };
	int ret;

	if (!rt_priority)
		return;
	ret = pthread_setschedparam(pthread_self(), on ? SCHED_FIFO : SCHED_OTHER, &sp);
	if (ret == EPERM && on) {
		fprintf(stderr, "SCHED_FIFO denied: the submitter runs SCHED_OTHER\n");
		rt_priority = 0;
	} else if (ret) {
		die("pthread_setschedparam: %s", strerror(ret));
	}
}

/* The percentiles of the reported latency distributions. */
static const double lat_pcts[] = { 1, 5, 10, 25, 50, 75, 90, 95, 99, 99.9, 100 };
#define NR_PCTS (sizeof(lat_pcts) / sizeof(lat_pcts[0]))

struct phase_result {
	double short_p50_us, short_p99_us, long_p50_us;
	double submit_lag_p99_us;
	double short_pct_us[NR_PCTS]; /* latency at lat_pcts[i] (latency phase) */
	double long_pct_us[NR_PCTS];
	double tasks_per_s; /* completed / (last completion - first arrival) */
	double cpu_share; /* process CPU time / (wall time * CPUs) */
	uint64_t preemptions; /* the servers' counters over the phase */
	uint64_t switches;
	uint64_t steals;
};

static void sum_stats(struct umcg_rt *rt, struct umcg_server_stats *sum)
{
	struct umcg_server_stats s;
	unsigned int i;

	memset(sum, 0, sizeof(*sum));
	if (!rt)
		return;
	for (i = 0; i < umcg_rt_nr_servers(rt); i++) {
		if (umcg_rt_server_stats(rt, i, &s))
			die("umcg_rt_server_stats(%u) failed", i);
		sum->switches += s.switches;
		sum->preemptions += s.preemptions;
		sum->steals += s.steals;
	}
}

/*
 * run_phase() - run @s on a fresh pool of @nworkers in @mode.
 * @rt: the runtime (NULL for pthreads).
 * @open_loop: submit at the schedule's times; else all at once.
 */
static struct phase_result run_phase(enum mode mode, struct umcg_rt *rt, unsigned int nworkers,
				     const struct schedule *s, bool open_loop)
{
	struct umcg_server_stats st0, st1;
	struct worker_arg *args;
	struct umcg_worker_attr wa;
	struct phase_result res;
	uint64_t *lat_short, *lat_long, *lag, ns = 0, nl = 0, t, last = 0, cpu0, cpu1, wall;
	struct pool *p;
	unsigned int i;
	uint32_t c;
	int ret;

	p = calloc(1, sizeof(*p));
	args = calloc(nworkers, sizeof(*args));
	if (!p || !args)
		die("out of memory");
	p->mode = mode;
	p->items = s->items;
	p->n = s->n;
	p->nworkers = nworkers;
	p->done_ts = calloc(s->n, sizeof(uint64_t));
	p->submit_ts = calloc(s->n, sizeof(uint64_t));
	p->results = calloc(s->n, sizeof(uint64_t));
	p->w = calloc(nworkers, sizeof(*p->w));
	p->idle = calloc(nworkers, sizeof(*p->idle));
	p->th = calloc(nworkers, sizeof(*p->th));
	if (!p->done_ts || !p->submit_ts || !p->results || !p->w || !p->idle || !p->th)
		die("out of memory");
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->cond, NULL);

	for (i = 0; i < nworkers; i++) {
		args[i].p = p;
		args[i].idx = i;
		if (mode == MODE_PTHREAD) {
			ret = pthread_create(&p->th[i], NULL, pthread_pool_worker, &args[i]);
			if (ret)
				die("pthread_create: %s", strerror(ret));
		} else {
			umcg_worker_attr_init(&wa);
			wa.server = (int)(i % umcg_rt_nr_servers(rt));
			wa.name = "pool";
			ret = umcg_spawn(rt, &p->w[i], &wa, umcg_pool_worker, &args[i]);
			if (ret)
				die_err("umcg_spawn", ret);
		}
	}
	/* Let the UMCG workers reach their first park (the pthread ones wait
	 * on the condition either way). */
	if (mode != MODE_PTHREAD) {
		while (__atomic_load_n(&p->nr_idle, __ATOMIC_SEQ_CST) < (int)nworkers)
			sleep_ns(100 * NSEC_PER_USEC);
	} else {
		sleep_ns(2 * NSEC_PER_MSEC);
	}

	sum_stats(rt, &st0);
	/* After the spawns: the pool threads must not inherit it. */
	submitter_rt(true);
	cpu0 = process_cpu_ns();
	p->base = now_ns() + 100 * NSEC_PER_USEC;
	if (open_loop) {
		for (t = 0; t < s->n; t++) {
			uint64_t due = p->base + s->items[t].offset, now = now_ns();

			if (now < due) {
				sleep_until_ns(due);
				now = now_ns();
			}
			p->submit_ts[t] = now;
			submit(p, t + 1);
		}
	} else {
		sleep_until_ns(p->base);
		t = now_ns();
		for (i = 0; i < s->n; i++)
			p->submit_ts[i] = t;
		submit(p, s->n);
	}
	/* Acquire: pairs with the workers' acq_rel increments. */
	while ((c = __atomic_load_n(&p->completed, __ATOMIC_ACQUIRE)) < s->n)
		futex_wait(&p->completed, c);
	cpu1 = process_cpu_ns();
	wall = now_ns() - p->base;
	submitter_rt(false);
	sum_stats(rt, &st1);
	stop_pool(p);
	if (p->duplicates)
		die("%s: %d tasks ran twice", mode_names[mode], p->duplicates);

	lat_short = malloc(s->n * sizeof(uint64_t));
	lat_long = malloc(s->n * sizeof(uint64_t));
	lag = malloc(s->n * sizeof(uint64_t));
	if (!lat_short || !lat_long || !lag)
		die("out of memory");
	for (t = 0; t < s->n; t++) {
		uint64_t due = p->base + s->items[t].offset, l;

		if (!p->results[t] || p->done_ts[t] < due)
			die("%s: task %" PRIu64 " did not run, or ended before it arrived",
			    mode_names[mode], t);
		l = p->done_ts[t] - due;
		if (s->items[t].is_long)
			lat_long[nl++] = l;
		else
			lat_short[ns++] = l;
		lag[t] = p->submit_ts[t] > due ? p->submit_ts[t] - due : 0;
		if (p->done_ts[t] > last)
			last = p->done_ts[t];
	}
	qsort(lat_short, ns, sizeof(uint64_t), cmp_u64);
	qsort(lat_long, nl, sizeof(uint64_t), cmp_u64);
	qsort(lag, s->n, sizeof(uint64_t), cmp_u64);
	res.short_p50_us = ns ? percentile(lat_short, ns, 50) / 1e3 : NAN;
	res.short_p99_us = ns ? percentile(lat_short, ns, 99) / 1e3 : NAN;
	res.long_p50_us = nl ? percentile(lat_long, nl, 50) / 1e3 : NAN;
	res.submit_lag_p99_us = percentile(lag, s->n, 99) / 1e3;
	for (i = 0; i < NR_PCTS; i++) {
		res.short_pct_us[i] = ns ? percentile(lat_short, ns, lat_pcts[i]) / 1e3 : NAN;
		res.long_pct_us[i] = nl ? percentile(lat_long, nl, lat_pcts[i]) / 1e3 : NAN;
	}
	res.tasks_per_s = (double)s->n * 1e9 / (double)(last - p->base);
	res.cpu_share = (double)(cpu1 - cpu0) / ((double)wall * ncpus);
	res.preemptions = st1.preemptions - st0.preemptions;
	res.switches = st1.switches - st0.switches;
	res.steals = st1.steals - st0.steals;

	free(lat_short);
	free(lat_long);
	free(lag);
	pthread_mutex_destroy(&p->lock);
	pthread_cond_destroy(&p->cond);
	free(p->done_ts);
	free(p->submit_ts);
	free(p->results);
	free(p->w);
	free(p->idle);
	free(p->th);
	free(p);
	free(args);
	return res;
}

/* ---- the schedules ------------------------------------------------------------ */

/* splitmix64: a fixed-seed generator, the same sequence on every run. */
static uint64_t next_rand(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* Uniform in (0, 1]. */
static double next_unit(uint64_t *state)
{
	return ((double)(next_rand(state) >> 11) + 1.0) / 9007199254740992.0;
}

/*
 * make_schedule() - @n tasks; Poisson arrivals at @rate per second, or all
 * at time 0 if @rate is 0.
 */
static struct schedule make_schedule(uint64_t n, double rate, uint64_t seed,
				     const struct options *opt, double ns_per_round,
				     uint64_t *nr_long)
{
	struct schedule s = { .n = n };
	double t = 0;
	uint64_t i;

	s.items = calloc(n, sizeof(*s.items));
	if (!s.items)
		die("out of memory");
	*nr_long = 0;
	for (i = 0; i < n; i++) {
		s.items[i].is_long = next_unit(&seed) <= opt->long_percent / 100.0;
		s.items[i].iters = (uint64_t)((s.items[i].is_long ? opt->long_us : opt->short_us) *
					      1e3 / ns_per_round);
		if (!s.items[i].iters)
			s.items[i].iters = 1;
		*nr_long += s.items[i].is_long;
		if (rate > 0)
			t += -log(next_unit(&seed)) * 1e9 / rate;
		s.items[i].offset = (uint64_t)t;
	}
	return s;
}

/* ---- main ---------------------------------------------------------------------- */

static void usage(FILE *f)
{
	fprintf(f, "usage: umcg-bench-bimodal [options]\n"
		   "  --tasks N          tasks in the open-loop latency phase (default 20000)\n"
		   "  --batch N          tasks in the throughput phase (default 10000)\n"
		   "  --short-us US      CPU time of a short task (default 20)\n"
		   "  --long-us US       CPU time of a long task (default 5000)\n"
		   "  --long-percent P   share of long tasks (default 1)\n"
		   "  --load F           arrival rate / capacity (default 0.7)\n"
		   "  --meter-window-ms W  window of the slice meter at 100 us, 5 W at 1 ms\n"
		   "                     (default 100)\n"
		   "  --meter-pairs N    off/on window pairs of the slice meter (default 10)\n"
		   "  --pool N           workers (threads) per server (default 8)\n"
		   "  --rt-priority P    SCHED_FIFO priority of the submitter\n"
		   "                     (default 0 = SCHED_OTHER; falls back to 0 if denied)\n"
		   "  --server-priority P  umcg_rt_attr.server_priority of both runtimes\n"
		   "                     (default 0; falls back to 0 if denied)\n"
		   "  --preempt MODE     server or timer: umcg_rt_attr.preempt of the\n"
		   "                     preemptive runtimes and the meter (default:\n"
		   "                     UMCG_PREEMPT, else server)\n"
		   "  --repeat R         runs; medians reported (default 3)\n"
		   "  --quick            a short smoke run (1500 tasks, batch 500, R=1;\n"
		   "                     meter W=20, N=2)\n"
		   "  --help             this text\n"
		   "Prints one JSON object on standard output.\n");
}

static void parse_args(int argc, char **argv, struct options *opt)
{
	static const struct option longopts[] = {
		{ "tasks", required_argument, NULL, 't' },
		{ "batch", required_argument, NULL, 'b' },
		{ "short-us", required_argument, NULL, 's' },
		{ "long-us", required_argument, NULL, 'l' },
		{ "long-percent", required_argument, NULL, 'p' },
		{ "load", required_argument, NULL, 'L' },
		{ "meter-window-ms", required_argument, NULL, 'W' },
		{ "meter-pairs", required_argument, NULL, 'N' },
		{ "pool", required_argument, NULL, 'P' },
		{ "repeat", required_argument, NULL, 'r' },
		{ "rt-priority", required_argument, NULL, 'R' },
		{ "server-priority", required_argument, NULL, 'V' },
		{ "preempt", required_argument, NULL, 'M' },
		{ "quick", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	opt->tasks = 20000;
	opt->batch = 10000;
	opt->short_us = 20;
	opt->long_us = 5000;
	opt->long_percent = 1;
	opt->load = 0.7;
	opt->meter.window_ms = 100;
	opt->meter.pairs = 10;
	opt->pool = 8;
	opt->repeat = 3;
	opt->rt_priority = 0;
	opt->server_priority = 0;
	opt->preempt = UMCG_PREEMPT_DEFAULT;
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case 't':
			opt->tasks = parse_u64("--tasks", optarg, 100, UINT32_MAX);
			break;
		case 'b':
			opt->batch = parse_u64("--batch", optarg, 100, UINT32_MAX);
			break;
		case 's':
			opt->short_us = parse_double("--short-us", optarg, 0.1, 1e6);
			break;
		case 'l':
			opt->long_us = parse_double("--long-us", optarg, 0.1, 1e7);
			break;
		case 'p':
			opt->long_percent = parse_double("--long-percent", optarg, 0, 100);
			break;
		case 'L':
			opt->load = parse_double("--load", optarg, 0.01, 1.5);
			break;
		case 'W':
			opt->meter.window_ms = parse_u64("--meter-window-ms", optarg, 10, 60000);
			break;
		case 'N':
			opt->meter.pairs =
				(unsigned int)parse_u64("--meter-pairs", optarg, 1, 1000);
			break;
		case 'P':
			opt->pool = (unsigned int)parse_u64("--pool", optarg, 1, 256);
			break;
		case 'r':
			opt->repeat = (unsigned int)parse_u64("--repeat", optarg, 1, 1000);
			break;
		case 'R':
			opt->rt_priority = (int)parse_u64("--rt-priority", optarg, 0, 99);
			break;
		case 'V':
			opt->server_priority = (int)parse_u64("--server-priority", optarg, 0, 99);
			break;
		case 'M':
			opt->preempt = parse_preempt(optarg);
			break;
		case 'q':
			opt->tasks = 1500;
			opt->batch = 500;
			opt->repeat = 1;
			opt->meter.window_ms = 20;
			opt->meter.pairs = 2;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			usage(stderr);
			exit(2);
		}
	}
	if (optind < argc) {
		usage(stderr);
		exit(2);
	}
}

/* A started runtime; SCHED_FIFO servers at server_priority, or plain ones
 * (and server_priority 0 from then on) if that is denied. */
static struct umcg_rt *make_rt(uint64_t slice_ns)
{
	struct umcg_rt_attr attr;
	struct umcg_rt *rt;
	int ret;

	umcg_rt_attr_init(&attr);
	attr.timeslice_ns = slice_ns;
	attr.server_priority = server_priority;
	attr.preempt = preempt;
	ret = umcg_rt_create(&rt, &attr);
	if (ret)
		die_err("umcg_rt_create", ret);
	if (slice_ns)
		preempt_used = umcg_rt_preempt_mode(rt);
	ret = umcg_rt_start(rt);
	if (ret == -EPERM && server_priority) {
		fprintf(stderr, "SCHED_FIFO denied: the servers run SCHED_OTHER\n");
		server_priority = 0;
		attr.server_priority = 0;
		if (umcg_rt_destroy(rt))
			die("umcg_rt_destroy failed");
		ret = umcg_rt_create(&rt, &attr);
		if (ret)
			die_err("umcg_rt_create", ret);
		ret = umcg_rt_start(rt);
	}
	if (ret)
		die_err("umcg_rt_start", ret);
	return rt;
}

struct mode_run {
	struct phase_result lat, thr;
};

/* Medians over the runs of one mode. */
struct mode_summary {
	double short_p50_us, short_p99_us, long_p50_us, submit_lag_p99_us;
	double open_loop_tasks_per_s, batch_tasks_per_s;
	double cpu_share; /* of the throughput phase */
	double preemptions_per_run;
	double short_pct_us[NR_PCTS], long_pct_us[NR_PCTS]; /* of the latency phase */
};

/* The median over the runs of mode @m of the double at @off in a phase. */
static double median_of(struct mode_run (*runs)[NR_MODES], unsigned int m,
			const struct options *opt, bool batch, size_t off)
{
	double *v = calloc(opt->repeat, sizeof(*v)), med;
	unsigned int r;

	if (!v)
		die("out of memory");
	for (r = 0; r < opt->repeat; r++) {
		const struct phase_result *p = batch ? &runs[r][m].thr : &runs[r][m].lat;

		memcpy(&v[r], (const char *)p + off, sizeof(double));
	}
	med = median(v, opt->repeat);
	free(v);
	return med;
}

static struct mode_summary summarize(struct mode_run (*runs)[NR_MODES], unsigned int m,
				     const struct options *opt)
{
	struct mode_summary s;
	double *v = calloc(opt->repeat, sizeof(*v));
	unsigned int r;

	if (!v)
		die("out of memory");
	s.short_p50_us =
		median_of(runs, m, opt, false, offsetof(struct phase_result, short_p50_us));
	s.short_p99_us =
		median_of(runs, m, opt, false, offsetof(struct phase_result, short_p99_us));
	s.long_p50_us = median_of(runs, m, opt, false, offsetof(struct phase_result, long_p50_us));
	s.submit_lag_p99_us =
		median_of(runs, m, opt, false, offsetof(struct phase_result, submit_lag_p99_us));
	s.open_loop_tasks_per_s =
		median_of(runs, m, opt, false, offsetof(struct phase_result, tasks_per_s));
	s.batch_tasks_per_s =
		median_of(runs, m, opt, true, offsetof(struct phase_result, tasks_per_s));
	s.cpu_share = median_of(runs, m, opt, true, offsetof(struct phase_result, cpu_share));
	for (r = 0; r < NR_PCTS; r++) {
		s.short_pct_us[r] =
			median_of(runs, m, opt, false,
				  offsetof(struct phase_result, short_pct_us) + r * sizeof(double));
		s.long_pct_us[r] =
			median_of(runs, m, opt, false,
				  offsetof(struct phase_result, long_pct_us) + r * sizeof(double));
	}
	for (r = 0; r < opt->repeat; r++)
		v[r] = (double)(runs[r][m].lat.preemptions + runs[r][m].thr.preemptions);
	s.preemptions_per_run = median(v, opt->repeat);
	free(v);
	return s;
}

static void json_phase(struct json *j, const char *key, const struct phase_result *p, bool umcg)
{
	json_object(j, key);
	json_double(j, "short_p50_us", p->short_p50_us, 1);
	json_double(j, "short_p99_us", p->short_p99_us, 1);
	json_double(j, "long_p50_us", p->long_p50_us, 1);
	json_double(j, "submit_lag_p99_us", p->submit_lag_p99_us, 1);
	json_double(j, "tasks_per_s", p->tasks_per_s, 0);
	json_double(j, "cpu_share", p->cpu_share, 3);
	if (umcg) {
		json_u64(j, "switches", p->switches);
		json_u64(j, "preemptions", p->preemptions);
		json_u64(j, "steals", p->steals);
	}
	json_close(j, '}');
}

/* A target @max (0: none) for @value: reported as @key, and into @met. */
static void target(struct json *j, const char *key, double value, double max, bool *met)
{
	if (!max)
		return;
	json_double(j, key, max, 2);
	*met &= value <= max;
}

/*
 * The figures of preemptive version slices[@i]: the slice meter's @f and the
 * ratios of its latencies and throughput (medians @sum) to the others', and
 * whether each meets its target.
 */
static void json_slice(struct json *j, unsigned int i, const struct mode_summary *sum,
		       const struct slice_figures *f, unsigned int pairs)
{
	const struct mode_summary *p = &sum[slices[i].mode];
	double ratio = f->achieved_slice_us / (double)slices[i].slice_us;
	double cost_floor = f->preempt_cost_us / f->timer_floor_us;
	double p99 = p->short_p99_us / sum[MODE_COOP].short_p99_us;
	double p99_pt = p->short_p99_us / sum[MODE_PTHREAD].short_p99_us;
	double thr = 1 - p->batch_tasks_per_s / sum[MODE_COOP].batch_tasks_per_s;
	bool met = true;

	json_object(j, slices[i].key);
	slice_figures_json(j, f, pairs);
	json_double(j, "p99_ratio", p99, 3);
	json_double(j, "p99_ratio_vs_pthread", p99_pt, 3);
	json_double(j, "throughput_cost", thr, 4);
	json_object(j, "targets");
	target(j, "achieved_slice_ratio_max", ratio, slices[i].max_slice_ratio, &met);
	target(j, "p99_ratio_max", p99, slices[i].max_p99_ratio, &met);
	target(j, "p99_ratio_vs_pthread_max", p99_pt, slices[i].max_p99_ratio_vs_pthread, &met);
	target(j, "throughput_cost_max", thr, slices[i].max_throughput_cost, &met);
	target(j, "cost_floor_ratio_max", cost_floor, slices[i].max_cost_floor_ratio, &met);
	/* NaN (no pair of the meter saw an event) meets nothing. */
	met &= !isnan(ratio) && !isnan(cost_floor);
	json_close(j, '}');
	json_bool(j, "targets_met", met);
	json_close(j, '}');
}

int main(int argc, char **argv)
{
	struct mode_run(*runs)[NR_MODES];
	struct mode_summary sum[NR_MODES];
	struct umcg_rt *rts[NR_MODES];
	struct slice_figures fig[NR_SLICES];
	unsigned int i;
	struct schedule lat, thr;
	unsigned int nr, nworkers, r, k, m;
	double ns_per_round, mean_ns, capacity, rate;
	uint64_t lat_long, thr_long;
	struct options opt;
	struct json j;
	int backend;

	parse_args(argc, argv, &opt);
	backend = umcg_backend_active();
	if (backend < 0)
		die("no UMCG backend (%s): %s", strerror(-backend), umcg_backend_reason());
	/* Sleep to the arrival times without the default 50 us slack. */
	prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);

	first_cpu(&ncpus);
	ns_per_round = spin_calibrate();
	rt_priority = opt.rt_priority;
	server_priority = opt.server_priority;
	preempt = opt.preempt;
	rts[MODE_COOP] = make_rt(0);
	for (i = 0; i < NR_SLICES; i++)
		rts[slices[i].mode] = make_rt(slices[i].slice_us * NSEC_PER_USEC);
	rts[MODE_PTHREAD] = NULL;
	nr = umcg_rt_nr_servers(rts[MODE_COOP]);
	nworkers = nr * opt.pool;

	mean_ns = 1e3 * ((1 - opt.long_percent / 100.0) * opt.short_us +
			 opt.long_percent / 100.0 * opt.long_us);
	capacity = nr * 1e9 / mean_ns;
	rate = opt.load * capacity;
	lat = make_schedule(opt.tasks, rate, 1, &opt, ns_per_round, &lat_long);
	thr = make_schedule(opt.batch, 0, 2, &opt, ns_per_round, &thr_long);
	fprintf(stderr,
		"%.3f ns per spin round; %u servers, %u workers; %.0f tasks/s offered "
		"(%.0f%% of %.0f); the latency phase lasts about %.1f s per version\n",
		ns_per_round, nr, nworkers, rate, opt.load * 100, capacity,
		(double)opt.tasks / rate);

	runs = calloc(opt.repeat, sizeof(*runs));
	if (!runs)
		die("out of memory");
	for (r = 0; r < opt.repeat; r++) {
		for (k = 0; k < NR_MODES; k++) {
			m = (k + r) % NR_MODES;
			runs[r][m].lat = run_phase((enum mode)m, rts[m], nworkers, &lat, true);
			runs[r][m].thr = run_phase((enum mode)m, rts[m], nworkers, &thr, false);
		}
		fprintf(stderr, "run %u/%u:", r + 1, opt.repeat);
		for (m = 0; m < NR_MODES; m++)
			fprintf(stderr, " %s p50 %.0f p99 %.0f us, %.0f tasks/s;", mode_names[m],
				runs[r][m].lat.short_p50_us, runs[r][m].lat.short_p99_us,
				runs[r][m].thr.tasks_per_s);
		fputc('\n', stderr);
	}
	for (m = 0; m < NR_MODES; m++)
		sum[m] = summarize(runs, m, &opt);
	/* The runtimes above are stopped: the meter has the CPUs to itself. */
	for (m = 0; m < NR_MODES; m++) {
		if (rts[m] && umcg_rt_destroy(rts[m]))
			die("umcg_rt_destroy failed");
	}
	slice_meter_init(ns_per_round);
	opt.meter.server_priority = server_priority;
	opt.meter.preempt = preempt;
	for (i = 0; i < NR_SLICES; i++)
		slice_meter_measure(&opt.meter, slices[i].slice_us, &fig[i]);

	json_begin(&j, stdout);
	json_str(&j, "bench", "bimodal");
	json_str(&j, "backend", umcg_backend_name(backend));
	json_str(&j, "backend_reason", umcg_backend_reason());
	json_str(&j, "policy", umcg_policy_fifo.name);
	json_u64(&j, "servers", nr);
	json_u64(&j, "threads", nworkers);
	json_str(&j, "pthread_version",
		 "pool of the same number of threads, FIFO queue under a mutex and condvar");
	json_double(&j, "ns_per_spin_round", ns_per_round, 3);
	json_double(&j, "short_us", opt.short_us, 1);
	json_double(&j, "long_us", opt.long_us, 1);
	json_double(&j, "long_percent", opt.long_percent, 2);
	json_array(&j, "slices_us");
	for (i = 0; i < NR_SLICES; i++)
		json_u64(&j, NULL, slices[i].slice_us);
	json_close(&j, ']');
	json_u64(&j, "submitter_rt_priority", (uint64_t)rt_priority);
	json_u64(&j, "server_priority", (uint64_t)server_priority);
	json_str(&j, "preempt", preempt_name(preempt_used));
	json_str(&j, "meter_preempt", preempt_name(opt.meter.preempt_used));
	json_double(&j, "load", opt.load, 2);
	json_double(&j, "offered_tasks_per_s", rate, 0);
	json_u64(&j, "tasks", opt.tasks);
	json_u64(&j, "tasks_long", lat_long);
	json_u64(&j, "batch", opt.batch);
	json_u64(&j, "batch_long", thr_long);
	json_u64(&j, "repeat", opt.repeat);
	json_array(&j, "latency_percentiles");
	for (k = 0; k < NR_PCTS; k++)
		json_double(&j, NULL, lat_pcts[k], 1);
	json_close(&j, ']');
	for (m = 0; m < NR_MODES; m++) {
		json_object(&j, mode_names[m]);
		json_double(&j, "short_p50_us", sum[m].short_p50_us, 1);
		json_double(&j, "short_p99_us", sum[m].short_p99_us, 1);
		json_double(&j, "long_p50_us", sum[m].long_p50_us, 1);
		json_double(&j, "submit_lag_p99_us", sum[m].submit_lag_p99_us, 1);
		json_double(&j, "open_loop_tasks_per_s", sum[m].open_loop_tasks_per_s, 0);
		json_double(&j, "throughput_tasks_per_s", sum[m].batch_tasks_per_s, 0);
		json_double(&j, "throughput_cpu_share", sum[m].cpu_share, 3);
		if (m != MODE_PTHREAD)
			json_double(&j, "preemptions_per_run", sum[m].preemptions_per_run, 0);
		json_array(&j, "short_latency_us");
		for (k = 0; k < NR_PCTS; k++)
			json_double(&j, NULL, sum[m].short_pct_us[k], 1);
		json_close(&j, ']');
		json_array(&j, "long_latency_us");
		for (k = 0; k < NR_PCTS; k++)
			json_double(&j, NULL, sum[m].long_pct_us[k], 1);
		json_close(&j, ']');
		json_close(&j, '}');
	}
	for (i = 0; i < NR_SLICES; i++)
		json_slice(&j, i, sum, &fig[i], opt.meter.pairs);
	json_u64(&j, "meter_window_ms", opt.meter.window_ms);
	json_u64(&j, "meter_pairs", opt.meter.pairs);
	json_int(&j, "meter_server_priority", opt.meter.server_priority);
	json_array(&j, "runs");
	for (r = 0; r < opt.repeat; r++) {
		json_object(&j, NULL);
		for (m = 0; m < NR_MODES; m++) {
			json_object(&j, mode_names[m]);
			json_phase(&j, "latency", &runs[r][m].lat, m != MODE_PTHREAD);
			json_phase(&j, "throughput", &runs[r][m].thr, m != MODE_PTHREAD);
			json_close(&j, '}');
		}
		json_close(&j, '}');
	}
	json_close(&j, ']');
	json_end(&j);

	for (i = 0; i < NR_SLICES; i++)
		slice_figures_free(&fig[i]);
	free(lat.items);
	free(thr.items);
	free(runs);
	return 0;
}
