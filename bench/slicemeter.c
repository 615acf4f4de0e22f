/* SPDX-License-Identifier: MIT */
/*
 * slicemeter.c - what a preemption costs today, against what a timer costs
 * a busy CPU at all, at a slice of 1 ms or of 100 us (slicemeter.h).
 *
 * Everything measured runs on one CPU, the first of the mask; the calling
 * thread, which only sleeps, arms timers and reads counters, moves to
 * another CPU if there is one, and back when the measurement is done. The
 * work is a busy loop in chunks of about 1 us (spin() of common.h), each
 * chunk counted.
 *
 * A measurement is `pairs` pairs of windows, "off" and "on", of `window_ms`
 * each at 100 us (5 times that at 1 ms, so that a window holds enough
 * events to stand out of the noise), back to back on the same threads, so
 * that what drifts (the other CPU's load, the clock speed) drifts for both
 * halves of a pair alike. In
 * each window the rate is chunks per CPU-ns of the measured threads: this
 * kernel charges interrupt time to the interrupted thread (no IRQ time
 * accounting), so a timer's cost is CPU time that did no chunk, while CPU
 * time that other programs took is not counted at all. What a pair loses,
 * (1 - rate_on / rate_off) * the on window's CPU time, over the events of
 * the on window, is that pair's cost per event; the report gives the
 * median over the pairs.
 *
 *  - timer_floor_us at period P (1000 and 100 us): one plain thread runs
 *    the loop; a POSIX timer (CLOCK_MONOTONIC, SIGEV_THREAD_ID to that
 *    thread, an empty handler) is disarmed in the off window and expires
 *    every P in the on window; the events are the expiries its handler
 *    counted. It is the CPU a busy CPU gives up each time a timer takes
 *    its attention: the least any timer-driven preemption can cost here.
 *  - today's preemption at slice S (1000 and 100 us): a runtime with one
 *    server, pinned to that CPU, timeslice S, and two workers running the
 *    loop. Off: the second worker is parked, the first runs alone and
 *    nothing waits, so no slice end preempts. On: both run, and every
 *    slice end finds the other waiting. The events are the server's
 *    preemptions; preempt_cost_us is all the CPU one takes (the server's
 *    wake-up, the kick, the switches, one timer expiry among them). From
 *    the on windows also achieved_slice_us = window / switches, the mean
 *    wall time a worker held the CPU, and achieved_slice_ratio = that / S.
 *
 * cost_floor_ratio = preempt_cost_us / timer_floor_us.
 * pairs_without_preemption counts the on windows in which the server
 * preempted nobody at all (the medians leave them out): preemption held
 * back for a whole window, which is a fault to chase, not noise. With
 * `server_priority` P the servers run SCHED_FIFO at P if the process may
 * (it is set to 0 where not); by default everything is SCHED_OTHER and
 * unprivileged. A single pair's figure is noisy on a
 * shared machine, and a pair can even come out negative; the medians over
 * the default 10 pairs are what to quote.
 *
 * Protocols. stop: the calling thread's release store ends every loop
 * (relaxed loads there: a late look costs one more chunk). The chunk
 * counters have one writer each and are sampled by the calling
 * thread (relaxed: each read is a sample; the windows are its own clock). The handler's expiry counter is an atomic add. The second
 * worker's pause: the caller stores `paused` and, to resume, clears it and calls
 * umcg_unpark(); the worker parks while it sees `paused` set, and permit
 * semantics make an unpark that comes before its park harmless.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "common.h"

#include <signal.h>
#include <stdatomic.h>
#include <sys/syscall.h>

#include <umcg/runtime.h>

#include "slicemeter.h"

#define FLOOR_SIGNAL (SIGRTMIN + 2)

/* One loop's counter, on its own cache line. */
struct counter {
	_Alignas(64) atomic_uint_fast64_t chunks;
};

static uint64_t chunk_iters; /* spin() rounds in about 1 us */
static double chunk_ns; /* what they take */
static atomic_bool stop;
static atomic_bool paused; /* the second worker parks while set */
static atomic_uint_fast64_t expiries;
static int cpu;
static cpu_set_t full_mask; /* the caller's affinity at the start of a measurement */

static void busy_loop(struct counter *c, bool pausable)
{
	uint64_t x = 1, n = 0;

	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		while (pausable && atomic_load_explicit(&paused, memory_order_acquire) &&
		       !atomic_load_explicit(&stop, memory_order_relaxed))
			umcg_park();
		x = spin(chunk_iters, x);
		atomic_store_explicit(&c->chunks, ++n, memory_order_relaxed);
	}
	__asm__ volatile("" : : "r"(x));
}

/* ---- CPU clocks ---------------------------------------------------------------- */

static uint64_t clock_cpu_ns(clockid_t id)
{
	struct timespec ts;

	if (clock_gettime(id, &ts))
		die("clock_gettime: %s", strerror(errno));
	return (uint64_t)ts.tv_sec * NSEC_PER_SEC + (uint64_t)ts.tv_nsec;
}

/* ---- windows ------------------------------------------------------------------- */

/* What is measured: the plain thread @tid, or (@tid == 0) the runtime's
 * server and workers: the process less the main thread and the watcher. */
struct subject {
	pid_t tid;
	pid_t watcher;
	struct counter *const *cs;
	unsigned int n;
	struct umcg_rt *rt;
};

static uint64_t subject_cpu_ns(const struct subject *sj)
{
	if (sj->tid)
		return thread_cpu_ns(sj->tid);
	return clock_cpu_ns(CLOCK_PROCESS_CPUTIME_ID) - clock_cpu_ns(CLOCK_THREAD_CPUTIME_ID) -
	       thread_cpu_ns(sj->watcher);
}

struct sample {
	uint64_t chunks, cpu_ns, expiries, switches, preemptions;
};

static void take(const struct subject *sj, struct sample *s)
{
	struct umcg_server_stats st;
	unsigned int i;

	memset(s, 0, sizeof(*s));
	if (sj->rt) {
		if (umcg_rt_server_stats(sj->rt, 0, &st))
			die("umcg_rt_server_stats failed");
		s->switches = st.switches;
		s->preemptions = st.preemptions;
	}
	s->expiries = atomic_load(&expiries);
	s->cpu_ns = subject_cpu_ns(sj);
	for (i = 0; i < sj->n; i++)
		s->chunks += atomic_load_explicit(&sj->cs[i]->chunks, memory_order_relaxed);
}

/* One window of @w ns after a settling tenth of it: the differences of a
 * sample. */
static void window(const struct subject *sj, uint64_t w, struct sample *d)
{
	struct sample a, b;

	sleep_ns(w / 10);
	take(sj, &a);
	sleep_ns(w);
	take(sj, &b);
	d->chunks = b.chunks - a.chunks;
	d->cpu_ns = b.cpu_ns - a.cpu_ns;
	d->expiries = b.expiries - a.expiries;
	d->switches = b.switches - a.switches;
	d->preemptions = b.preemptions - a.preemptions;
}

static double rate(const struct sample *s)
{
	return s->cpu_ns ? (double)s->chunks / (double)s->cpu_ns : 0.0;
}

/*
 * The CPU time of the on window that did no chunk, measured against the
 * off window's rate. Not clipped at 0: a negative figure is noise that the
 * report shows rather than hides.
 */
static double lost_ns(const struct sample *off, const struct sample *on)
{
	double r0 = rate(off);

	return r0 > 0 ? (1.0 - rate(on) / r0) * (double)on->cpu_ns : NAN;
}

/* ---- the timer floor: one plain thread ----------------------------------------- */

struct plain_arg {
	struct counter c;
	pid_t tid;
	int ready;
};

static void on_floor_timer(int sig)
{
	(void)sig;
	atomic_fetch_add_explicit(&expiries, 1, memory_order_relaxed);
}

static void *plain_main(void *p)
{
	struct plain_arg *a = p;

	pin_self(cpu);
	a->tid = (pid_t)syscall(SYS_gettid);
	__atomic_store_n(&a->ready, 1, __ATOMIC_RELEASE);
	busy_loop(&a->c, false);
	return NULL;
}

static void arm(timer_t t, uint64_t period_ns)
{
	struct itimerspec its;

	its.it_value.tv_sec = (time_t)(period_ns / NSEC_PER_SEC);
	its.it_value.tv_nsec = (long)(period_ns % NSEC_PER_SEC);
	its.it_interval = its.it_value;
	if (timer_settime(t, 0, &its, NULL))
		die("timer_settime: %s", strerror(errno));
}

/*
 * The window for events every @period_ns: longer for longer periods (5
 * times --window-ms at 1 ms), so that a window holds enough events for
 * their cost to stand out of the noise.
 */
static uint64_t window_ns(const struct slice_meter *opt, uint64_t period_ns)
{
	uint64_t unit = 200 * NSEC_PER_USEC;

	return opt->window_ms * NSEC_PER_MSEC * (period_ns > unit ? period_ns / unit : 1);
}

/* Per pair: the CPU lost per expiry, in us, into @cost[]. */
static void floor_run(const struct slice_meter *opt, uint64_t period_ns, double *cost)
{
	uint64_t w = window_ns(opt, period_ns);
	struct plain_arg a;
	struct counter *c = &a.c;
	struct subject sj = { .cs = &c, .n = 1 };
	struct sample off, on;
	struct sigevent sev;
	timer_t timer;
	pthread_t th;
	unsigned int p;

	memset(&a, 0, sizeof(a));
	atomic_store(&stop, false);
	if (pthread_create(&th, NULL, plain_main, &a))
		die("pthread_create failed");
	while (!__atomic_load_n(&a.ready, __ATOMIC_ACQUIRE))
		sleep_ns(NSEC_PER_MSEC);
	sj.tid = a.tid;
	memset(&sev, 0, sizeof(sev));
	sev.sigev_notify = SIGEV_THREAD_ID;
	sev.sigev_signo = FLOOR_SIGNAL;
	sev._sigev_un._tid = a.tid;
	if (timer_create(CLOCK_MONOTONIC, &sev, &timer))
		die("timer_create: %s", strerror(errno));
	for (p = 0; p < opt->pairs; p++) {
		arm(timer, 0);
		window(&sj, w, &off);
		arm(timer, period_ns);
		window(&sj, w, &on);
		cost[p] = on.expiries ? lost_ns(&off, &on) / (double)on.expiries / 1e3 : NAN;
	}
	timer_delete(timer);
	atomic_store_explicit(&stop, true, memory_order_release);
	pthread_join(th, NULL);
}

/* ---- today's preemption: one server, two busy workers ---------------------------- */

static struct counter rt_counter[2];

/* The second worker (the one that pauses) gets @p != NULL. */
static void *worker_fn(void *p)
{
	busy_loop(p ? &rt_counter[1] : &rt_counter[0], p != NULL);
	return NULL;
}

/* The main thread keeps off the measured CPU if there is another. */
static void leave_cpu(void)
{
	cpu_set_t set = full_mask;
	int c;

	if (CPU_COUNT(&set) < 2)
		return;
	CPU_CLR(cpu, &set);
	for (c = 0; c < CPU_SETSIZE && !CPU_ISSET(c, &set); c++)
		;
	pin_self(c);
}

static struct umcg_rt *make_rt(uint64_t slice_ns, int *prio, int preempt)
{
	struct umcg_rt_attr attr;
	struct umcg_rt *rt;
	int ret;

	umcg_rt_attr_init(&attr);
	attr.nr_servers = 1;
	attr.timeslice_ns = slice_ns;
	attr.server_priority = *prio;
	attr.preempt = preempt;
	/* Server 0 goes on the first CPU of the mask of the thread that
	 * starts it: the full mask, for the measured CPU. */
	if (sched_setaffinity(0, sizeof(full_mask), &full_mask))
		die("sched_setaffinity: %s", strerror(errno));
	ret = umcg_rt_create(&rt, &attr);
	if (ret)
		die_err("umcg_rt_create", ret);
	ret = umcg_rt_start(rt);
	leave_cpu();
	if (ret == -EPERM && *prio) {
		/* Not allowed SCHED_FIFO here: the report says 0. */
		*prio = 0;
		umcg_rt_destroy(rt);
		return make_rt(slice_ns, prio, preempt);
	}
	if (ret)
		die_err("umcg_rt_start", ret);
	return rt;
}

/* Per pair: CPU lost per preemption and the mean achieved slice, in us. */
static void rt_run(struct slice_meter *opt, uint64_t slice_ns, int *prio, double *cost,
		   double *achieved)
{
	struct counter *pc[2] = { &rt_counter[0], &rt_counter[1] };
	struct subject sj = { .cs = pc, .n = 2 };
	uint64_t w = window_ns(opt, slice_ns);
	struct umcg_worker *wk[2];
	struct umcg_server_stats ss;
	struct sample off, on;
	unsigned int p;
	int ret, i;

	sj.rt = make_rt(slice_ns, prio, opt->preempt);
	opt->preempt_used = umcg_rt_preempt_mode(sj.rt);
	if (umcg_rt_server_stats(sj.rt, 0, &ss))
		die("umcg_rt_server_stats failed");
	if (ss.cpu != cpu)
		die("the server runs on CPU %d, not on the measured CPU %d", ss.cpu, cpu);
	atomic_store(&stop, false);
	atomic_store(&paused, true);
	for (i = 0; i < 2; i++) {
		atomic_store(&rt_counter[i].chunks, 0);
		ret = umcg_spawn(sj.rt, &wk[i], NULL, worker_fn, i ? &sj : NULL);
		if (ret)
			die_err("umcg_spawn", ret);
	}
	sleep_ns(w / 10);
	sj.watcher = watcher_tid();
	for (p = 0; p < opt->pairs; p++) {
		atomic_store_explicit(&paused, true, memory_order_release);
		window(&sj, w, &off);
		atomic_store_explicit(&paused, false, memory_order_release);
		ret = umcg_unpark(wk[1]);
		if (ret)
			die_err("umcg_unpark", ret);
		window(&sj, w, &on);
		cost[p] = on.preemptions ? lost_ns(&off, &on) / (double)on.preemptions / 1e3 : NAN;
		achieved[p] = on.switches ? (double)w / (double)on.switches / 1e3 : NAN;
	}
	atomic_store_explicit(&stop, true, memory_order_release);
	atomic_store_explicit(&paused, false, memory_order_release);
	umcg_unpark(wk[1]);
	for (i = 0; i < 2; i++) {
		ret = umcg_join(wk[i], NULL);
		if (ret)
			die_err("umcg_join", ret);
	}
	ret = umcg_rt_stop(sj.rt);
	if (!ret)
		ret = umcg_rt_destroy(sj.rt);
	if (ret)
		die_err("umcg_rt_stop/destroy", ret);
}

/* ---- the interface ---------------------------------------------------------------- */

void slice_meter_init(double ns_per_round)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_floor_timer;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART;
	if (sigaction(FLOOR_SIGNAL, &sa, NULL))
		die("sigaction: %s", strerror(errno));
	chunk_iters = (uint64_t)(1000.0 / ns_per_round) + 1;
	chunk_ns = ns_per_round * (double)chunk_iters;
}

double slice_meter_chunk_ns(void)
{
	return chunk_ns;
}

int slice_meter_cpu(void)
{
	unsigned int nr;

	return first_cpu(&nr);
}

/*
 * The median of the known values of @in (a pair whose on window had no
 * event has NaN); the number of NaNs goes to @unknown.
 */
static double median_known(const double *in, unsigned int n, unsigned int *unknown)
{
	double *v = calloc(n ? n : 1, sizeof(*v)), med;
	unsigned int i, k = 0;

	if (!v)
		die("out of memory");
	for (i = 0; i < n; i++)
		if (!isnan(in[i]))
			v[k++] = in[i];
	if (unknown)
		*unknown = n - k;
	med = median(v, k);
	free(v);
	return med;
}

void slice_meter_measure(struct slice_meter *m, uint64_t period_us, struct slice_figures *f)
{
	uint64_t ns = period_us * NSEC_PER_USEC;

	memset(f, 0, sizeof(*f));
	f->period_us = period_us;
	f->timer_floor_us_pairs = calloc(m->pairs, sizeof(double));
	f->preempt_cost_us_pairs = calloc(m->pairs, sizeof(double));
	f->achieved_slice_us_pairs = calloc(m->pairs, sizeof(double));
	if (!f->timer_floor_us_pairs || !f->preempt_cost_us_pairs || !f->achieved_slice_us_pairs)
		die("out of memory");
	if (sched_getaffinity(0, sizeof(full_mask), &full_mask))
		die("sched_getaffinity: %s", strerror(errno));
	cpu = slice_meter_cpu();
	leave_cpu();
	fprintf(stderr, "%" PRIu64 " us: timer floor, %u pairs of %" PRIu64 " ms...\n", period_us,
		m->pairs, m->window_ms);
	floor_run(m, ns, f->timer_floor_us_pairs);
	fprintf(stderr, "%" PRIu64 " us: the runtime's preemption, %u pairs of %" PRIu64 " ms...\n",
		period_us, m->pairs, m->window_ms);
	rt_run(m, ns, &m->server_priority, f->preempt_cost_us_pairs, f->achieved_slice_us_pairs);
	if (sched_setaffinity(0, sizeof(full_mask), &full_mask))
		die("sched_setaffinity: %s", strerror(errno));
	f->timer_floor_us = median_known(f->timer_floor_us_pairs, m->pairs, NULL);
	f->preempt_cost_us =
		median_known(f->preempt_cost_us_pairs, m->pairs, &f->pairs_without_preemption);
	f->achieved_slice_us = median_known(f->achieved_slice_us_pairs, m->pairs, NULL);
	fprintf(stderr,
		"%" PRIu64 " us: timer floor %.1f us; slices of %.0f us, %.1f us a preemption "
		"(%.2fx the floor)%s\n",
		period_us, f->timer_floor_us, f->achieved_slice_us, f->preempt_cost_us,
		f->preempt_cost_us / f->timer_floor_us,
		f->pairs_without_preemption ? "; some on windows had no preemption" : "");
}

void slice_figures_json(struct json *j, const struct slice_figures *f, unsigned int pairs)
{
	json_u64(j, "requested_us", f->period_us);
	json_double(j, "achieved_slice_us", f->achieved_slice_us, 1);
	json_double(j, "achieved_slice_ratio", f->achieved_slice_us / (double)f->period_us, 3);
	json_double(j, "preempt_cost_us", f->preempt_cost_us, 2);
	json_double(j, "timer_floor_us", f->timer_floor_us, 2);
	json_double(j, "cost_floor_ratio", f->preempt_cost_us / f->timer_floor_us, 3);
	json_u64(j, "pairs_without_preemption", f->pairs_without_preemption);
	json_pairs(j, "timer_floor_us_pairs", f->timer_floor_us_pairs, pairs, 2);
	json_pairs(j, "preempt_cost_us_pairs", f->preempt_cost_us_pairs, pairs, 2);
	json_pairs(j, "achieved_slice_us_pairs", f->achieved_slice_us_pairs, pairs, 1);
}

void slice_figures_free(struct slice_figures *f)
{
	free(f->timer_floor_us_pairs);
	free(f->preempt_cost_us_pairs);
	free(f->achieved_slice_us_pairs);
	memset(f, 0, sizeof(*f));
}
