/* SPDX-License-Identifier: MIT */
/*
 * test_policy.c - the built-in scheduling policies, and user policies,
 * through the runtime.
 *
 * Every test builds a runtime (umcg_rt_create() with attr.policy), runs
 * workers that write down the order in which they run, and checks that
 * order once the workers are gone. Workers never assert: a failing check
 * on a worker would write() (a blocking syscall on the kernel backend) and
 * end the process under the runtime's feet. They record, and the test's
 * main thread checks after umcg_rt_drain() or umcg_join(), which order the
 * workers' stores before its loads.
 *
 * Spawning and registration are asynchronous: umcg_spawn() returns before
 * the new thread is queued, so the order in which workers first reach the
 * policy is not the spawn order. The tests therefore open a gate once all
 * workers are known to be queued, and check the order after it:
 *
 *  - with yields (FIFO): a worker that arrives yields until all have
 *    arrived; FIFO lets everyone in, so nobody starves at the gate;
 *  - with parks (priority, LIFO, where a yielding worker may be picked
 *    again at once): a worker that arrives parks; the last one unparks the
 *    others and yields, so all of them become runnable together.
 *
 * Model check. A "spy" policy wraps a built-in one: every call goes
 * through one lock, is forwarded, and is compared with a model of the
 * queues (what was enqueued where, in which order, with which priority),
 * so each pick and each steal is checked against what the policy promises
 * at the moment it is made, under real runtime traffic on three servers.
 *
 * Direct drive. Cases that the runtime produces rarely or not on demand
 * (UMCG_ENQ_RETURN, a steal with a choice of victims, ties) are checked by
 * calling a built-in policy's ops from the test thread, on an instance of
 * its own, with real workers that sit parked meanwhile.
 *
 * No test asserts a duration. Loops that wait for something that must
 * happen give up after a generous bound (h_liveness_ns(), tests/common) and report it.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* sched_getaffinity(), CPU_COUNT() */
#endif
#include <umcg/runtime.h>

#include <check.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_common.h"

#define MAX_WORKERS 32
#define MAX_TRACE 4096

/* ---- helpers ---------------------------------------------------------- */

static int nr_cpus(void)
{
	cpu_set_t set;

	if (sched_getaffinity(0, sizeof(set), &set))
		return 1;
	return CPU_COUNT(&set);
}

/* Busy work without syscalls (a syscall may block a kernel-backend worker). */
static void spin(unsigned int n)
{
	atomic_uint sink = 0;
	unsigned int i;

	for (i = 0; i < n; i++)
		atomic_fetch_add_explicit(&sink, 1, memory_order_relaxed);
}

static struct umcg_rt *rt_up(const struct umcg_policy_ops *policy, void *arg,
			     unsigned int nr_servers, uint64_t timeslice_ns)
{
	struct umcg_rt_attr attr;
	struct umcg_rt *rt = NULL;
	int ret;

	umcg_rt_attr_init(&attr);
	attr.nr_servers = nr_servers;
	attr.policy = policy;
	attr.policy_arg = arg;
	attr.timeslice_ns = timeslice_ns;
	ret = umcg_rt_create(&rt, &attr);
	ck_assert_msg(ret == 0, "umcg_rt_create: %d", ret);
	ret = umcg_rt_start(rt);
	ck_assert_msg(ret == 0, "umcg_rt_start: %d", ret);
	return rt;
}

static void rt_down(struct umcg_rt *rt)
{
	ck_assert_int_eq(umcg_rt_drain(rt), 0);
	ck_assert_int_eq(umcg_rt_destroy(rt), 0);
}

static void spawn(struct umcg_rt *rt, struct umcg_worker **wp, int prio, int server,
		  umcg_worker_fn fn, intptr_t arg)
{
	struct umcg_worker_attr wa;
	int ret;

	umcg_worker_attr_init(&wa);
	wa.priority = prio;
	wa.server = server;
	ret = umcg_spawn(rt, wp, &wa, fn, (void *)arg);
	ck_assert_msg(ret == 0, "umcg_spawn: %d", ret);
}

/* The run trace: worker ids in the order of their runs after the gate. */
static int trace[MAX_TRACE];
static atomic_int trace_len;

static void record(int id)
{
	int i = atomic_fetch_add(&trace_len, 1);

	if (i < MAX_TRACE)
		trace[i] = id;
}

/*
 * Check the trace of @n workers with priorities @prio that each recorded
 * @rounds runs: priorities never go up, and within one priority the
 * workers take turns (FIFO round-robin: period = how many share it).
 */
static void check_levels(const int *prio, int n, int rounds)
{
	int len = atomic_load(&trace_len), count[MAX_WORKERS] = { 0 };
	int i, j;

	ck_assert_int_eq(len, n * rounds);
	for (i = 0; i < len; i++) {
		ck_assert(trace[i] >= 0 && trace[i] < n);
		count[trace[i]]++;
	}
	for (j = 0; j < n; j++)
		ck_assert_msg(count[j] == rounds, "worker %d ran %d times, not %d", j, count[j],
			      rounds);
	for (i = 0; i < len;) {
		int p = prio[trace[i]], k = 0, seg;

		for (j = 0; j < n; j++)
			k += prio[j] == p;
		seg = k * rounds;
		ck_assert_msg(i == 0 || p < prio[trace[i - 1]],
			      "position %d: priority %d after priority %d", i, p,
			      prio[trace[i - 1]]);
		for (j = i; j < i + seg; j++) {
			ck_assert_msg(prio[trace[j]] == p,
				      "position %d: worker %d (priority %d) ran before the %d "
				      "workers of priority %d were done",
				      j, trace[j], prio[trace[j]], k, p);
			ck_assert_msg(j < i + k || trace[j] == trace[j - k],
				      "position %d: worker %d, expected %d (round-robin of %d)", j,
				      trace[j], trace[j - k], k);
		}
		i += seg;
	}
}

/* Park gate: the last of @n to arrive wakes the others (see the header). */
static struct umcg_worker *gate_handles[MAX_WORKERS];
static atomic_int gate_arrived;

static void park_gate(int id, int n)
{
	int i;

	gate_handles[id] = umcg_self();
	/* seq_cst RMW: the last arriver sees every handle stored before. */
	if (atomic_fetch_add(&gate_arrived, 1) + 1 < n) {
		umcg_park();
		return;
	}
	for (i = 0; i < n; i++) {
		if (i != id)
			umcg_unpark(gate_handles[i]);
	}
	umcg_yield();
}

/* ---- FIFO --------------------------------------------------------------- */

#define RR_WORKERS 6
#define RR_ROUNDS 20

static atomic_int rr_arrived, rr_stuck;

static void *rr_worker(void *arg)
{
	uint64_t give_up = umcg_now() + h_liveness_ns();
	int id = (int)(intptr_t)arg, r;

	atomic_fetch_add(&rr_arrived, 1);
	while (atomic_load(&rr_arrived) < RR_WORKERS) {
		if (umcg_now() > give_up) {
			atomic_store(&rr_stuck, 1);
			return NULL;
		}
		umcg_yield();
	}
	for (r = 0; r < RR_ROUNDS; r++) {
		int ret;

		record(id);
		/* A yield that returned without switching would record twice
		 * in a row: say so rather than fail on the order later. */
		ret = umcg_yield();
		ck_assert_msg(ret == 0, "worker %d, round %d: umcg_yield() returned %d", id, r,
			      ret);
	}
	return NULL;
}

/*
 * One server, workers that yield: FIFO is round-robin. Once all have
 * arrived, the queue order is fixed and every yield sends the runner to the
 * back, so the trace repeats with period RR_WORKERS. Loop 0 uses the
 * default policy (attr.policy = NULL), loop 1 names umcg_policy_fifo.
 */
START_TEST(test_fifo_round_robin)
{
	static const int same[RR_WORKERS];
	struct umcg_rt *rt = rt_up(_i ? &umcg_policy_fifo : NULL, NULL, 1, 0);
	int i;

	for (i = 0; i < RR_WORKERS; i++)
		spawn(rt, NULL, 0, -1, rr_worker, i);
	rt_down(rt);
	ck_assert_msg(!atomic_load(&rr_stuck),
		      "%d of %d workers arrived: a yielding worker was picked again while "
		      "others waited",
		      atomic_load(&rr_arrived), RR_WORKERS);
	check_levels(same, RR_WORKERS, RR_ROUNDS);
}
END_TEST

/* ---- priority ----------------------------------------------------------- */

#define PS_HIGH 4
#define PS_ROUNDS 10

static struct umcg_rt *ps_rt;
static atomic_int ps_high_started, ps_high_finished, ps_low_ran, ps_high_saw_low, ps_spawn_err;
static int ps_low_saw_finished = -1, ps_launcher_saw_finished = -1;

static void *ps_high(void *arg)
{
	int r;

	(void)arg;
	atomic_fetch_add(&ps_high_started, 1);
	for (r = 0; r < PS_ROUNDS; r++) {
		if (atomic_load(&ps_low_ran))
			atomic_fetch_add(&ps_high_saw_low, 1);
		spin(1000);
		umcg_yield();
	}
	atomic_fetch_add(&ps_high_finished, 1);
	return NULL;
}

static void *ps_low(void *arg)
{
	(void)arg;
	ps_low_saw_finished = atomic_load(&ps_high_finished);
	atomic_store(&ps_low_ran, 1);
	return NULL;
}

/*
 * Priority 1: spawns the low worker (0) first, then the high ones (20),
 * and yields until every high one has started. It can run again only when
 * no high worker is queued, and the low one only when neither it nor a
 * high one is.
 */
static void *ps_launcher(void *arg)
{
	uint64_t give_up = umcg_now() + h_liveness_ns();
	struct umcg_worker_attr wa;
	int i;

	(void)arg;
	umcg_worker_attr_init(&wa);
	wa.priority = 0;
	if (umcg_spawn(ps_rt, NULL, &wa, ps_low, NULL))
		atomic_fetch_add(&ps_spawn_err, 1);
	wa.priority = 20;
	for (i = 0; i < PS_HIGH; i++) {
		if (umcg_spawn(ps_rt, NULL, &wa, ps_high, NULL))
			atomic_fetch_add(&ps_spawn_err, 1);
	}
	while (atomic_load(&ps_high_started) < PS_HIGH) {
		if (umcg_now() > give_up)
			break;
		umcg_yield();
	}
	ps_launcher_saw_finished = atomic_load(&ps_high_finished);
	return NULL;
}

START_TEST(test_priority_starves_lower)
{
	struct umcg_server_stats st;

	ps_rt = rt_up(&umcg_policy_priority, NULL, 1, 0);
	spawn(ps_rt, NULL, 1, -1, ps_launcher, 0);
	ck_assert_int_eq(umcg_rt_drain(ps_rt), 0);
	ck_assert_int_eq(umcg_rt_server_stats(ps_rt, 0, &st), 0);
	rt_down(ps_rt);
	ck_assert_int_eq(atomic_load(&ps_spawn_err), 0);
	/*
	 * A worker that sleeps in the kernel is not runnable, and then a lower
	 * one may run: on the kernel backend the launcher's umcg_spawn() (a
	 * pthread_create() that can wait for the address space's lock) and a
	 * new worker's first page faults can block, which the server counts.
	 * The order is only promised for runs without a block.
	 */
	if (st.blocks > 0) {
		fprintf(stderr,
			"test_priority_starves_lower: %" PRIu64 " blocks in the kernel, "
			"order not checked\n",
			st.blocks);
		return;
	}
	ck_assert_msg(ps_launcher_saw_finished == PS_HIGH,
		      "the priority-1 launcher ran with %d of %d priority-20 workers finished",
		      ps_launcher_saw_finished, PS_HIGH);
	ck_assert_msg(ps_low_saw_finished == PS_HIGH,
		      "the priority-0 worker ran with %d of %d priority-20 workers finished",
		      ps_low_saw_finished, PS_HIGH);
	ck_assert_int_eq(atomic_load(&ps_high_saw_low), 0);
}
END_TEST

#define PO_WORKERS 8
#define PO_ROUNDS 6

static const int po_prio[PO_WORKERS] = { 3, 17, 3, 31, 0, 17, 31, 9 };

static void *po_worker(void *arg)
{
	int id = (int)(intptr_t)arg, r;

	park_gate(id, PO_WORKERS);
	for (r = 0; r < PO_ROUNDS; r++) {
		record(id);
		umcg_yield();
	}
	return NULL;
}

/*
 * One server, all workers runnable at once after the gate: they run by
 * decreasing priority, each level to the end before the next, and the two
 * workers of a level take turns.
 */
START_TEST(test_priority_order)
{
	struct umcg_rt *rt = rt_up(&umcg_policy_priority, NULL, 1, 0);
	int i;

	for (i = 0; i < PO_WORKERS; i++)
		spawn(rt, NULL, po_prio[i], -1, po_worker, i);
	rt_down(rt);
	check_levels(po_prio, PO_WORKERS, PO_ROUNDS);
}
END_TEST

/* ---- wake-up preemption ------------------------------------------------- */

/*
 * One server, cooperative unless the loop says 1 ms slices. A hog of
 * priority 1 spins without yielding until it is told to stop (or gives up
 * after h_liveness_ns()). A worker that then arrives with priority 5 must
 * run while the hog still spins, twice: when it is new, and when it comes
 * back from a sleep (umcg_sleep_for() blocks it: UMCG_ENQ_WAKE). Each
 * arrival is a preemption the server counts. Then one of priority 0
 * arrives: it must not preempt; it runs only after the hog has finished.
 */
static atomic_int wp_hog_running, wp_stop, wp_hog_gave_up, wp_hog_done;
static atomic_int wp_high_runs, wp_high_saw_hog, wp_low_saw_done = -1;

static void *wp_hog(void *arg)
{
	uint64_t give_up = umcg_now() + h_liveness_ns();

	(void)arg;
	atomic_store(&wp_hog_running, 1);
	while (!atomic_load(&wp_stop)) {
		if (umcg_now() > give_up) {
			atomic_store(&wp_hog_gave_up, 1);
			break;
		}
		spin(100);
	}
	atomic_store(&wp_hog_done, 1);
	return NULL;
}

static void *wp_high(void *arg)
{
	(void)arg;
	/* The hog is still spinning each time: it was preempted for us. */
	if (!atomic_load(&wp_hog_done))
		atomic_fetch_add(&wp_high_saw_hog, 1);
	atomic_fetch_add(&wp_high_runs, 1);
	umcg_sleep_for(5000000);
	if (!atomic_load(&wp_hog_done))
		atomic_fetch_add(&wp_high_saw_hog, 1);
	atomic_fetch_add(&wp_high_runs, 1);
	return NULL;
}

static void *wp_low(void *arg)
{
	(void)arg;
	atomic_store(&wp_low_saw_done, atomic_load(&wp_hog_done));
	return NULL;
}

START_TEST(test_wake_preempt)
{
	struct umcg_rt *rt = rt_up(&umcg_policy_priority, NULL, 1, _i ? 1000000 : 0);
	struct umcg_worker *hog = NULL, *high = NULL, *low = NULL;
	struct umcg_server_stats st;
	uint64_t preempts;

	atomic_store(&wp_hog_running, 0);
	atomic_store(&wp_stop, 0);
	atomic_store(&wp_hog_gave_up, 0);
	atomic_store(&wp_hog_done, 0);
	atomic_store(&wp_high_runs, 0);
	atomic_store(&wp_high_saw_hog, 0);
	atomic_store(&wp_low_saw_done, -1);
	spawn(rt, &hog, 1, -1, wp_hog, 0);
	while (!atomic_load(&wp_hog_running))
		h_sleep_us(100);
	ck_assert_int_eq(umcg_rt_server_stats(rt, 0, &st), 0);
	preempts = st.preemptions;
	spawn(rt, &high, 5, -1, wp_high, 0);
	ck_assert_int_eq(umcg_join(high, NULL), 0);
	ck_assert_int_eq(umcg_rt_server_stats(rt, 0, &st), 0);
	ck_assert_msg(atomic_load(&wp_high_saw_hog) == 2 && !atomic_load(&wp_hog_done),
		      "the priority-5 arrival ran %d times, %d of them while the hog spun "
		      "(hog done: %d)",
		      atomic_load(&wp_high_runs), atomic_load(&wp_high_saw_hog),
		      atomic_load(&wp_hog_done));
	if (!_i)
		ck_assert_msg(st.preemptions - preempts == 2,
			      "%" PRIu64 " preemptions for two arrivals of a higher priority "
			      "in a cooperative runtime",
			      st.preemptions - preempts);
	else
		ck_assert_uint_ge(st.preemptions - preempts, 2);
	/* Lower than the hog: no preemption, it waits for the hog's end (in
	 * a preemptive runtime a slice end may let it in; cooperative only). */
	ck_assert_int_eq(umcg_rt_server_stats(rt, 0, &st), 0);
	preempts = st.preemptions;
	spawn(rt, &low, 0, -1, wp_low, 0);
	h_sleep_us(20000);
	atomic_store(&wp_stop, 1);
	ck_assert_int_eq(umcg_join(low, NULL), 0);
	ck_assert_int_eq(umcg_join(hog, NULL), 0);
	ck_assert_msg(!atomic_load(&wp_hog_gave_up), "the hog gave up: nobody stopped it");
	if (!_i) {
		ck_assert_int_eq(umcg_rt_server_stats(rt, 0, &st), 0);
		ck_assert_msg(atomic_load(&wp_low_saw_done) == 1 && st.preemptions == preempts,
			      "a lower-priority arrival preempted the hog (it ran before the hog "
			      "was done: %d; %" PRIu64 " preemptions)",
			      atomic_load(&wp_low_saw_done) != 1, st.preemptions - preempts);
	}
	rt_down(rt);
}
END_TEST

/* ---- user policies ------------------------------------------------------ */

/*
 * A tiny LIFO: one stack per server through the workers' links, no lock
 * (it does not steal, so only server i touches stack i). It counts its
 * calls for the checks.
 */
struct lifo {
	unsigned int nr_servers;
	struct umcg_policy_link **top;
};

static atomic_int lifo_creates, lifo_destroys, lifo_picks, lifo_left_at_destroy;
static atomic_int lifo_enq[UMCG_ENQ_RETURN + 1];
static atomic_uint lifo_nr_servers;

static void *lifo_create(unsigned int nr_servers, void *arg)
{
	struct lifo *l = malloc(sizeof(*l));

	(void)arg;
	atomic_fetch_add(&lifo_creates, 1);
	atomic_store(&lifo_nr_servers, nr_servers);
	if (!l)
		return NULL;
	l->nr_servers = nr_servers;
	l->top = calloc(nr_servers, sizeof(*l->top));
	if (!l->top) {
		free(l);
		return NULL;
	}
	return l;
}

static void lifo_destroy(void *policy)
{
	struct lifo *l = policy;
	unsigned int i;

	for (i = 0; i < l->nr_servers; i++) {
		if (l->top[i])
			atomic_fetch_add(&lifo_left_at_destroy, 1);
	}
	atomic_fetch_add(&lifo_destroys, 1);
	free(l->top);
	free(l);
}

static void lifo_enqueue(void *policy, unsigned int server, struct umcg_worker *w,
			 enum umcg_enqueue_reason why)
{
	struct lifo *l = policy;
	struct umcg_policy_link *link = umcg_worker_link(w);

	if ((unsigned int)why <= UMCG_ENQ_RETURN)
		atomic_fetch_add(&lifo_enq[why], 1);
	link->next = l->top[server];
	l->top[server] = link;
}

static struct umcg_worker *lifo_pick_next(void *policy, unsigned int server)
{
	struct lifo *l = policy;
	struct umcg_policy_link *link = l->top[server];

	if (!link)
		return NULL;
	l->top[server] = link->next;
	atomic_fetch_add(&lifo_picks, 1);
	return umcg_worker_from_link(link);
}

static const struct umcg_policy_ops lifo_ops = {
	.name = "test-lifo",
	.create = lifo_create,
	.destroy = lifo_destroy,
	.enqueue = lifo_enqueue,
	.pick_next = lifo_pick_next,
};

START_TEST(test_user_missing_callbacks)
{
	struct umcg_policy_ops ops;
	struct umcg_rt_attr attr;
	struct umcg_rt *sentinel = (struct umcg_rt *)&attr, *rt;
	int i, ret;

	for (i = 0; i < 5; i++) {
		ops = lifo_ops;
		switch (i) {
		case 0:
			ops.create = NULL;
			break;
		case 1:
			ops.destroy = NULL;
			break;
		case 2:
			ops.enqueue = NULL;
			break;
		case 3:
			ops.pick_next = NULL;
			break;
		default:
			memset(&ops, 0, sizeof(ops));
			break;
		}
		umcg_rt_attr_init(&attr);
		attr.nr_servers = 1;
		attr.policy = &ops;
		rt = sentinel;
		ret = umcg_rt_create(&rt, &attr);
		ck_assert_msg(ret == -EINVAL, "variant %d: umcg_rt_create returned %d", i, ret);
		ck_assert_msg(rt == sentinel, "variant %d: *rtp written on failure", i);
	}
	ck_assert_int_eq(atomic_load(&lifo_creates), 0);
}
END_TEST

static atomic_int nocreate_calls, nocreate_destroys;

static void *nocreate_create(unsigned int nr_servers, void *arg)
{
	(void)nr_servers;
	(void)arg;
	atomic_fetch_add(&nocreate_calls, 1);
	return NULL;
}

static void nocreate_destroy(void *policy)
{
	(void)policy;
	atomic_fetch_add(&nocreate_destroys, 1);
}

/* create() failing fails umcg_rt_create() with -ENOMEM; nothing to destroy. */
START_TEST(test_user_create_fails)
{
	struct umcg_policy_ops ops = lifo_ops;
	struct umcg_rt_attr attr;
	struct umcg_rt *sentinel = (struct umcg_rt *)&attr, *rt = sentinel;
	int ret;

	ops.create = nocreate_create;
	ops.destroy = nocreate_destroy;
	umcg_rt_attr_init(&attr);
	attr.nr_servers = 1;
	attr.policy = &ops;
	ret = umcg_rt_create(&rt, &attr);
	ck_assert_msg(ret == -ENOMEM, "umcg_rt_create returned %d", ret);
	ck_assert_ptr_eq(rt, sentinel);
	ck_assert_int_eq(atomic_load(&nocreate_calls), 1);
	ck_assert_int_eq(atomic_load(&nocreate_destroys), 0);
}
END_TEST

#define LI_WORKERS 5
#define LI_ROUNDS 8

static void *lifo_worker(void *arg)
{
	int id = (int)(intptr_t)arg, r;

	park_gate(id, LI_WORKERS);
	for (r = 0; r < LI_ROUNDS; r++) {
		record(id);
		umcg_yield();
	}
	return NULL;
}

/*
 * The LIFO above, with only the required callbacks, runs workers to the
 * end, and in LIFO order: a worker that yields goes back on top, so once
 * Y runs after X, X runs again only when Y is done. The runs of two
 * workers never interleave as X..Y..X..Y (FIFO would: all are runnable
 * together after the gate).
 */
START_TEST(test_user_lifo)
{
	struct umcg_rt *rt = rt_up(&lifo_ops, NULL, 1, 0);
	int first[LI_WORKERS], last[LI_WORKERS], count[LI_WORKERS] = { 0 };
	int i, x, y, len, enq = 0;

	ck_assert_int_eq(atomic_load(&lifo_creates), 1);
	ck_assert_uint_eq(atomic_load(&lifo_nr_servers), 1);
	for (i = 0; i < LI_WORKERS; i++)
		spawn(rt, NULL, 0, -1, lifo_worker, i);
	ck_assert_int_eq(umcg_rt_drain(rt), 0);
	ck_assert_int_eq(atomic_load(&lifo_destroys), 0);
	ck_assert_int_eq(umcg_rt_destroy(rt), 0);
	ck_assert_int_eq(atomic_load(&lifo_destroys), 1);
	ck_assert_int_eq(atomic_load(&lifo_left_at_destroy), 0);

	len = atomic_load(&trace_len);
	ck_assert_int_eq(len, LI_WORKERS * LI_ROUNDS);
	for (i = 0; i < len; i++) {
		x = trace[i];
		ck_assert(x >= 0 && x < LI_WORKERS);
		if (!count[x]++)
			first[x] = i;
		last[x] = i;
	}
	for (x = 0; x < LI_WORKERS; x++) {
		ck_assert_int_eq(count[x], LI_ROUNDS);
		for (y = 0; y < LI_WORKERS; y++) {
			ck_assert_msg(!(first[x] < first[y] && first[y] < last[x] &&
					last[x] < last[y]),
				      "workers %d and %d interleave: runs %d..%d and %d..%d", x, y,
				      first[x], last[x], first[y], last[y]);
		}
	}

	/* Every worker came in once as new, and all but the last arriver
	 * once more from its park; everything queued was picked. */
	ck_assert_int_eq(atomic_load(&lifo_enq[UMCG_ENQ_NEW]), LI_WORKERS);
	ck_assert_int_eq(atomic_load(&lifo_enq[UMCG_ENQ_WAKE]), LI_WORKERS - 1);
	ck_assert_int_ge(atomic_load(&lifo_enq[UMCG_ENQ_YIELD]), LI_WORKERS * LI_ROUNDS);
	for (i = 0; i <= UMCG_ENQ_RETURN; i++)
		enq += atomic_load(&lifo_enq[i]);
	ck_assert_int_eq(atomic_load(&lifo_picks), enq);
}
END_TEST

/* ---- stealing ----------------------------------------------------------- */

#define ST_WORKERS 8

static atomic_int st_seen_on_1, st_gave_up;

static void *st_worker(void *arg)
{
	uint64_t give_up = umcg_now() + h_liveness_ns();
	struct umcg_worker_stats ws;

	(void)arg;
	while (!atomic_load(&st_seen_on_1)) {
		spin(20000);
		if (umcg_worker_stats(umcg_self(), &ws) == 0 && ws.server == 1)
			atomic_store(&st_seen_on_1, 1);
		else if (umcg_now() > give_up)
			atomic_store(&st_gave_up, 1);
		if (atomic_load(&st_gave_up))
			break;
		umcg_yield();
	}
	return NULL;
}

/*
 * Two servers, every worker spawned on server 0: server 0's surplus wakes
 * server 1, which has nothing of its own and must steal. Loop 0: FIFO,
 * loop 1: priority (with mixed priorities).
 */
START_TEST(test_steal)
{
	const struct umcg_policy_ops *policy = _i ? &umcg_policy_priority : &umcg_policy_fifo;
	struct umcg_worker *w[ST_WORKERS];
	struct umcg_server_stats ss;
	struct umcg_rt *rt;
	int i, cpus = nr_cpus();

	if (cpus < 2) {
		fprintf(stderr, "test_steal(%s): skipped, needs 2 CPUs, the process has %d\n",
			policy->name, cpus);
		return;
	}
	rt = rt_up(policy, NULL, 2, 0);
	for (i = 0; i < ST_WORKERS; i++)
		spawn(rt, &w[i], (i * 7) % 32, 0, st_worker, i);
	for (i = 0; i < ST_WORKERS; i++)
		ck_assert_int_eq(umcg_join(w[i], NULL), 0);
	ck_assert_int_eq(umcg_rt_server_stats(rt, 1, &ss), 0);
	rt_down(rt);
	ck_assert_msg(!atomic_load(&st_gave_up) && atomic_load(&st_seen_on_1),
		      "%s: no worker ran on server 1 (steals %llu)", policy->name,
		      (unsigned long long)ss.steals);
	ck_assert_msg(ss.steals > 0, "%s: server 1 ran a worker but stole none", policy->name);
}
END_TEST

/* ---- the ops, driven directly ------------------------------------------ */

/*
 * A few cases the runtime produces rarely or never on demand (ENQ_RETURN,
 * a steal with a choice of victims, ties) are checked by calling a
 * policy's ops from the test thread, on a policy instance of its own,
 * with real workers that sit parked in a runtime meanwhile. A parked
 * worker is in no queue of its runtime's policy, so its link is free;
 * the instance is destroyed before the workers are released.
 */
#define DR_WORKERS 8

static const int dr_prio[DR_WORKERS] = { 3, 17, 3, 31, 9, 9, 0, 17 };
static atomic_int dr_parked, dr_release;

static void *dr_worker(void *arg)
{
	(void)arg;
	atomic_fetch_add(&dr_parked, 1);
	while (!atomic_load(&dr_release))
		umcg_park();
	return NULL;
}

static struct umcg_rt *dr_rt;
static struct umcg_worker *dr_w[DR_WORKERS];

static void dr_setup(void)
{
	int i;

	dr_rt = rt_up(NULL, NULL, 1, 0);
	for (i = 0; i < DR_WORKERS; i++)
		spawn(dr_rt, &dr_w[i], dr_prio[i], -1, dr_worker, i);
	/* A worker that counted itself has run, so it left its runtime's
	 * queue; from then on it only parks. */
	while (atomic_load(&dr_parked) < DR_WORKERS)
		sched_yield();
}

static void dr_teardown(void)
{
	int i;

	atomic_store(&dr_release, 1);
	for (i = 0; i < DR_WORKERS; i++)
		ck_assert_int_eq(umcg_unpark(dr_w[i]), 0);
	for (i = 0; i < DR_WORKERS; i++)
		ck_assert_int_eq(umcg_join(dr_w[i], NULL), 0);
	rt_down(dr_rt);
}

/* The index of @w in dr_w, -1 for NULL. */
static int dr_index(const struct umcg_worker *w)
{
	int i;

	for (i = 0; i < DR_WORKERS; i++) {
		if (dr_w[i] == w)
			return i;
	}
	return w ? -2 : -1;
}

static void dr_expect(struct umcg_worker *got, int want, const char *op, unsigned int arg, int line)
{
	ck_assert_msg(dr_index(got) == want,
		      "line %d: %s(%u) gave worker %d, expected %d (-1: none, -2: unknown)", line,
		      op, arg, dr_index(got), want);
}

#define DR_ENQ(p, st, srv, i, why) (p)->enqueue((st), (srv), dr_w[i], (why))
#define DR_PICK(p, st, srv, i) \
	dr_expect((p)->pick_next((st), (srv)), (i), "pick_next", (srv), __LINE__)
#define DR_STEAL(p, st, thief, i) \
	dr_expect((p)->steal((st), (thief)), (i), "steal", (thief), __LINE__)

START_TEST(test_direct_fifo)
{
	const struct umcg_policy_ops *p = &umcg_policy_fifo;
	struct umcg_worker *a, *b;
	void *st;
	int round;

	dr_setup();
	ck_assert_ptr_null(p->create(0, NULL));
	st = p->create(3, NULL);
	ck_assert_ptr_nonnull(st);

	/* Empty. */
	DR_PICK(p, st, 0, -1);
	DR_STEAL(p, st, 0, -1);
	ck_assert_uint_eq(p->nr_queued(st, 0), 0);

	/* FIFO whatever the reason, except RETURN, which goes first. */
	DR_ENQ(p, st, 0, 0, UMCG_ENQ_NEW);
	DR_ENQ(p, st, 0, 1, UMCG_ENQ_YIELD);
	DR_ENQ(p, st, 0, 2, UMCG_ENQ_WAKE);
	DR_ENQ(p, st, 0, 3, UMCG_ENQ_PREEMPT);
	ck_assert_uint_eq(p->nr_queued(st, 0), 4);
	ck_assert_uint_eq(p->nr_queued(st, 1), 0);
	DR_PICK(p, st, 0, 0);
	DR_ENQ(p, st, 0, 0, UMCG_ENQ_RETURN);
	DR_PICK(p, st, 0, 0);
	DR_PICK(p, st, 0, 1);
	DR_PICK(p, st, 0, 2);
	DR_ENQ(p, st, 0, 2, UMCG_ENQ_RETURN);
	DR_ENQ(p, st, 0, 1, UMCG_ENQ_YIELD);
	ck_assert_uint_eq(p->nr_queued(st, 0), 3);
	DR_PICK(p, st, 0, 2);
	DR_PICK(p, st, 0, 3);
	DR_PICK(p, st, 0, 1);
	DR_PICK(p, st, 0, -1);
	/* RETURN into an empty queue, then one at the tail. */
	DR_ENQ(p, st, 1, 5, UMCG_ENQ_RETURN);
	DR_ENQ(p, st, 1, 4, UMCG_ENQ_YIELD);
	DR_PICK(p, st, 1, 5);
	DR_PICK(p, st, 1, 4);
	DR_PICK(p, st, 1, -1);

	/* A thief never takes from itself. */
	DR_ENQ(p, st, 0, 0, UMCG_ENQ_NEW);
	DR_STEAL(p, st, 0, -1);
	DR_PICK(p, st, 0, 0);

	/*
	 * Server 1 has one queued, server 2 two: the thief takes the oldest
	 * of server 2, from whichever victim it starts (several rounds, as
	 * the start is random), then the two singles, then nothing.
	 */
	for (round = 0; round < 16; round++) {
		DR_ENQ(p, st, 1, 3, UMCG_ENQ_NEW);
		DR_ENQ(p, st, 2, 4, UMCG_ENQ_NEW);
		DR_ENQ(p, st, 2, 5, UMCG_ENQ_YIELD);
		DR_STEAL(p, st, 0, 4);
		ck_assert_uint_eq(p->nr_queued(st, 2), 1);
		a = p->steal(st, 0);
		b = p->steal(st, 0);
		ck_assert_msg((a == dr_w[3] && b == dr_w[5]) || (a == dr_w[5] && b == dr_w[3]),
			      "round %d: stole %p and %p", round, (void *)a, (void *)b);
		DR_STEAL(p, st, 0, -1);
		ck_assert_uint_eq(p->nr_queued(st, 1) + p->nr_queued(st, 2), 0);
	}
	/* A stolen worker can be queued on the thief at once. */
	DR_ENQ(p, st, 2, 6, UMCG_ENQ_NEW);
	DR_STEAL(p, st, 1, 6);
	DR_ENQ(p, st, 1, 6, UMCG_ENQ_RETURN);
	DR_PICK(p, st, 1, 6);

	p->destroy(st);
	dr_teardown();
}
END_TEST

START_TEST(test_direct_priority)
{
	const struct umcg_policy_ops *p = &umcg_policy_priority;
	void *st;
	int i;

	dr_setup();
	for (i = 0; i < DR_WORKERS; i++)
		ck_assert_int_eq(umcg_worker_priority(dr_w[i]), dr_prio[i]);
	ck_assert_ptr_null(p->create(0, NULL));
	st = p->create(3, NULL);
	ck_assert_ptr_nonnull(st);
	DR_PICK(p, st, 0, -1);
	DR_STEAL(p, st, 0, -1);

	/* By priority, FIFO within one: 3(31) 1(17) 7(17) 4(9) 5(9) 0(3) 2(3) 6(0). */
	for (i = 0; i < DR_WORKERS; i++)
		DR_ENQ(p, st, 0, i, UMCG_ENQ_NEW);
	ck_assert_uint_eq(p->nr_queued(st, 0), DR_WORKERS);
	DR_PICK(p, st, 0, 3);
	DR_PICK(p, st, 0, 1);
	/* RETURN goes to the head of its own level, not above a better one. */
	DR_ENQ(p, st, 0, 3, UMCG_ENQ_YIELD);
	DR_ENQ(p, st, 0, 1, UMCG_ENQ_RETURN);
	DR_PICK(p, st, 0, 3);
	DR_PICK(p, st, 0, 1);
	DR_PICK(p, st, 0, 7);
	DR_PICK(p, st, 0, 4);
	DR_ENQ(p, st, 0, 4, UMCG_ENQ_YIELD);
	DR_PICK(p, st, 0, 5);
	DR_PICK(p, st, 0, 4);
	DR_PICK(p, st, 0, 0);
	DR_ENQ(p, st, 0, 0, UMCG_ENQ_RETURN);
	DR_PICK(p, st, 0, 0);
	DR_PICK(p, st, 0, 2);
	DR_PICK(p, st, 0, 6);
	DR_PICK(p, st, 0, -1);
	ck_assert_uint_eq(p->nr_queued(st, 0), 0);

	/* Steal: the victim with the best top priority, its best worker. */
	DR_ENQ(p, st, 1, 0, UMCG_ENQ_NEW); /* 3 */
	DR_ENQ(p, st, 1, 4, UMCG_ENQ_NEW); /* 9 */
	DR_ENQ(p, st, 2, 1, UMCG_ENQ_NEW); /* 17 */
	DR_ENQ(p, st, 2, 6, UMCG_ENQ_NEW); /* 0 */
	DR_ENQ(p, st, 0, 3, UMCG_ENQ_NEW); /* 31, the thief's own */
	DR_STEAL(p, st, 0, 1);
	DR_STEAL(p, st, 0, 4);
	DR_STEAL(p, st, 0, 0);
	DR_STEAL(p, st, 0, 6);
	DR_STEAL(p, st, 0, -1);
	DR_PICK(p, st, 0, 3);
	/* Equal tops: the victim with more queued. */
	for (i = 0; i < 8; i++) {
		DR_ENQ(p, st, 1, 4, UMCG_ENQ_NEW); /* 9 */
		DR_ENQ(p, st, 2, 5, UMCG_ENQ_NEW); /* 9 */
		DR_ENQ(p, st, 2, 2, UMCG_ENQ_NEW); /* 3 */
		DR_STEAL(p, st, 0, 5);
		DR_STEAL(p, st, 0, 4);
		DR_STEAL(p, st, 0, 2);
		DR_STEAL(p, st, 0, -1);
	}

	p->destroy(st);
	dr_teardown();
}
END_TEST

/* ---- model check -------------------------------------------------------- */

#define SPY_SERVERS 3

struct spy_entry {
	struct umcg_worker *w;
	int prio;
	long seq; /* queue order: RETURN goes below every other entry */
};

struct spy_queue {
	struct spy_entry e[MAX_WORKERS];
	int n;
	long head_seq, tail_seq;
};

static struct spy {
	const struct umcg_policy_ops *inner;
	void *state;
	bool by_prio;
	unsigned int nr_servers;
	pthread_mutex_t lock;
	struct spy_queue q[SPY_SERVERS];
	long enq, picks, steals, nr_queued_calls;
	long why[UMCG_ENQ_RETURN + 1];
	int violations;
	char first[256];
} spy = { .lock = PTHREAD_MUTEX_INITIALIZER };

static void spy_fail(const char *fmt, ...)
{
	va_list ap;

	if (!spy.violations++) {
		va_start(ap, fmt);
		vsnprintf(spy.first, sizeof(spy.first), fmt, ap);
		va_end(ap);
	}
}

/* Where @w is queued in the model: its server, or -1 (index in *@idx). */
static int spy_find(const struct umcg_worker *w, int *idx)
{
	unsigned int s;
	int i;

	*idx = -1;
	for (s = 0; s < spy.nr_servers; s++) {
		for (i = 0; i < spy.q[s].n; i++) {
			if (spy.q[s].e[i].w == w) {
				*idx = i;
				return (int)s;
			}
		}
	}
	return -1;
}

/* The entry the policy must hand out next from queue @s, or -1. */
static int spy_best(unsigned int s)
{
	const struct spy_queue *q = &spy.q[s];
	int i, best = -1;

	for (i = 0; i < q->n; i++) {
		const struct spy_entry *e = &q->e[i], *b = best < 0 ? NULL : &q->e[best];

		if (!b || (spy.by_prio && e->prio > b->prio) ||
		    ((!spy.by_prio || e->prio == b->prio) && e->seq < b->seq))
			best = i;
	}
	return best;
}

static int spy_top(unsigned int s)
{
	int b = spy_best(s);

	return b < 0 ? -1 : spy.q[s].e[b].prio;
}

static void spy_remove(unsigned int s, int i)
{
	struct spy_queue *q = &spy.q[s];

	q->e[i] = q->e[--q->n];
}

static void *spy_create(unsigned int nr_servers, void *arg)
{
	spy.inner = arg;
	spy.by_prio = arg == &umcg_policy_priority;
	spy.nr_servers = nr_servers;
	if (nr_servers > SPY_SERVERS)
		return NULL;
	spy.state = spy.inner->create(nr_servers, NULL);
	return spy.state ? &spy : NULL;
}

static void spy_destroy(void *policy)
{
	(void)policy;
	spy.inner->destroy(spy.state);
}

static void spy_enqueue(void *policy, unsigned int server, struct umcg_worker *w,
			enum umcg_enqueue_reason why)
{
	struct spy_queue *q = &spy.q[server];
	struct spy_entry *e;
	int idx, where;

	(void)policy;
	pthread_mutex_lock(&spy.lock);
	where = spy_find(w, &idx);
	if (where >= 0) {
		spy_fail("runtime: enqueue (reason %d) of a worker queued on server %d", why,
			 where);
	} else if (q->n < MAX_WORKERS) {
		e = &q->e[q->n++];
		e->w = w;
		e->prio = umcg_worker_priority(w);
		e->seq = why == UMCG_ENQ_RETURN ? --q->head_seq : ++q->tail_seq;
	}
	spy.enq++;
	if ((unsigned int)why <= UMCG_ENQ_RETURN)
		spy.why[why]++;
	spy.inner->enqueue(spy.state, server, w, why);
	pthread_mutex_unlock(&spy.lock);
}

static struct umcg_worker *spy_pick_next(void *policy, unsigned int server)
{
	struct umcg_worker *w;
	int best, idx;

	(void)policy;
	pthread_mutex_lock(&spy.lock);
	w = spy.inner->pick_next(spy.state, server);
	best = spy_best(server);
	if (!w) {
		if (best >= 0)
			spy_fail("pick_next(%u): NULL with %d queued", server, spy.q[server].n);
	} else if (spy_find(w, &idx) != (int)server) {
		spy_fail("pick_next(%u): a worker not queued there", server);
	} else {
		if (idx != best)
			spy_fail("pick_next(%u): entry seq %ld prio %d, expected seq %ld prio %d",
				 server, spy.q[server].e[idx].seq, spy.q[server].e[idx].prio,
				 spy.q[server].e[best].seq, spy.q[server].e[best].prio);
		spy_remove(server, idx);
		spy.picks++;
	}
	pthread_mutex_unlock(&spy.lock);
	return w;
}

static struct umcg_worker *spy_steal(void *policy, unsigned int thief)
{
	struct umcg_worker *w;
	unsigned int s;
	int idx, victim, others = 0, max_n = 0, max_top = -1;

	(void)policy;
	pthread_mutex_lock(&spy.lock);
	for (s = 0; s < spy.nr_servers; s++) {
		if (s == thief)
			continue;
		others += spy.q[s].n;
		if (spy.q[s].n > max_n)
			max_n = spy.q[s].n;
		if (spy_top(s) > max_top)
			max_top = spy_top(s);
	}
	w = spy.inner->steal(spy.state, thief);
	if (!w) {
		if (others)
			spy_fail("steal(%u): NULL with %d queued elsewhere", thief, others);
		goto out;
	}
	victim = spy_find(w, &idx);
	if (victim < 0 || victim == (int)thief) {
		spy_fail("steal(%u): a worker not queued on another server", thief);
		goto out;
	}
	if (idx != spy_best((unsigned int)victim))
		spy_fail("steal(%u): not the next worker of server %d", thief, victim);
	if (spy.by_prio && spy_top((unsigned int)victim) != max_top)
		spy_fail("steal(%u): victim's best priority %d, another server has %d", thief,
			 spy_top((unsigned int)victim), max_top);
	if (!spy.by_prio && max_n >= 2 && spy.q[victim].n < 2)
		spy_fail("steal(%u): took from a server with %d queued, another has %d", thief,
			 spy.q[victim].n, max_n);
	spy_remove((unsigned int)victim, idx);
	spy.steals++;
out:
	pthread_mutex_unlock(&spy.lock);
	return w;
}

static size_t spy_nr_queued(void *policy, unsigned int server)
{
	size_t n;

	(void)policy;
	pthread_mutex_lock(&spy.lock);
	n = spy.inner->nr_queued(spy.state, server);
	if (n != (size_t)spy.q[server].n)
		spy_fail("nr_queued(%u) = %zu, %d queued", server, n, spy.q[server].n);
	spy.nr_queued_calls++;
	pthread_mutex_unlock(&spy.lock);
	return n;
}

/* The runtime must not report a queued worker as blocked or finished. */
static void spy_not_queued(const char *what, unsigned int server, struct umcg_worker *w)
{
	int idx, where;

	pthread_mutex_lock(&spy.lock);
	where = spy_find(w, &idx);
	if (where >= 0)
		spy_fail("runtime: %s on server %u of a worker queued on server %d", what, server,
			 where);
	pthread_mutex_unlock(&spy.lock);
}

static void spy_on_block(void *policy, unsigned int server, struct umcg_worker *w)
{
	(void)policy;
	spy_not_queued("on_block", server, w);
}

static void spy_on_exit(void *policy, unsigned int server, struct umcg_worker *w)
{
	(void)policy;
	spy_not_queued("on_exit", server, w);
}

static const struct umcg_policy_ops spy_ops = {
	.name = "spy",
	.create = spy_create,
	.destroy = spy_destroy,
	.enqueue = spy_enqueue,
	.pick_next = spy_pick_next,
	.steal = spy_steal,
	.nr_queued = spy_nr_queued,
	.on_block = spy_on_block,
	.on_exit = spy_on_exit,
};

#define MC_WORKERS 16
#define MC_ROUNDS 40

static unsigned int mc_spin; /* set before the workers start */

static void *mc_worker(void *arg)
{
	int id = (int)(intptr_t)arg, r;

	for (r = 0; r < MC_ROUNDS; r++) {
		spin(mc_spin + mc_spin / 4 * (unsigned int)(id % 5));
		if ((id + r) % 4 == 0)
			umcg_sleep_for(20000); /* blocks: comes back as WAKE */
		else
			umcg_yield();
	}
	return NULL;
}

/*
 * Real traffic (yields, blocking sleeps, exits; with several servers also
 * stealing and idle wake-ups) through the spy: every pick, steal and count
 * must match the model. Loops 0 and 1: FIFO and priority, cooperative;
 * loops 2 and 3: the same with a 200 us timeslice and longer spins, so
 * that workers are also preempted.
 */
START_TEST(test_model)
{
	const struct umcg_policy_ops *policy = _i & 1 ? &umcg_policy_priority : &umcg_policy_fifo;
	uint64_t slice = _i & 2 ? 200000 : 0;
	unsigned int servers = nr_cpus() >= 2 ? SPY_SERVERS : 1, s;
	struct umcg_rt *rt;
	int i;

	mc_spin = slice ? 200000 : 2000;
	rt = rt_up(&spy_ops, (void *)policy, servers, slice);

	for (i = 0; i < MC_WORKERS; i++)
		spawn(rt, NULL, (i % 4) * 9, i % 3 ? -1 : 0, mc_worker, i);
	ck_assert_int_eq(umcg_rt_drain(rt), 0);

	pthread_mutex_lock(&spy.lock);
	ck_assert_msg(spy.violations == 0, "%s: %d violations, first: %s", policy->name,
		      spy.violations, spy.first);
	for (s = 0; s < servers; s++)
		ck_assert_int_eq(spy.q[s].n, 0);
	ck_assert_int_eq(spy.enq, spy.picks + spy.steals);
	ck_assert_int_ge(spy.picks, MC_WORKERS * MC_ROUNDS / 2);
	fprintf(stderr,
		"test_model(%s, timeslice %llu ns): %u servers, %ld enqueues (new %ld, yield %ld, preempt %ld, "
		"wake %ld, return %ld), %ld picks, %ld steals\n",
		policy->name, (unsigned long long)slice, servers, spy.enq, spy.why[UMCG_ENQ_NEW],
		spy.why[UMCG_ENQ_YIELD], spy.why[UMCG_ENQ_PREEMPT], spy.why[UMCG_ENQ_WAKE],
		spy.why[UMCG_ENQ_RETURN], spy.picks, spy.steals);
	pthread_mutex_unlock(&spy.lock);
	ck_assert_int_eq(umcg_rt_destroy(rt), 0);
}
END_TEST

/* ---- suite ---------------------------------------------------------------- */

static Suite *policy_suite(void)
{
	Suite *s = suite_create("policy");
	TCase *tc;

	tc = tcase_create("fifo");
	tcase_set_timeout(tc, 60);
	tcase_add_loop_test(tc, test_fifo_round_robin, 0, 2);
	suite_add_tcase(s, tc);

	tc = tcase_create("priority");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_priority_starves_lower);
	tcase_add_test(tc, test_priority_order);
	tcase_add_loop_test(tc, test_wake_preempt, 0, 2);
	suite_add_tcase(s, tc);

	tc = tcase_create("user");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_user_missing_callbacks);
	tcase_add_test(tc, test_user_create_fails);
	tcase_add_test(tc, test_user_lifo);
	suite_add_tcase(s, tc);

	tc = tcase_create("steal");
	tcase_set_timeout(tc, 60);
	tcase_add_loop_test(tc, test_steal, 0, 2);
	suite_add_tcase(s, tc);

	tc = tcase_create("direct");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_direct_fifo);
	tcase_add_test(tc, test_direct_priority);
	suite_add_tcase(s, tc);

	tc = tcase_create("model");
	tcase_set_timeout(tc, 60);
	tcase_add_loop_test(tc, test_model, 0, 4);
	suite_add_tcase(s, tc);
	return s;
}

static int prepare(void)
{
	int backend = umcg_backend_active();

	/* The policies run on either backend; without one there is nothing
	 * to test (77: skipped, for CTest). */
	if (backend < 0) {
		fprintf(stderr, "test-policy: skipped, no UMCG backend: %s\n",
			umcg_backend_reason());
		return 77;
	}
	fprintf(stderr, "test-policy: backend %s\n", umcg_backend_name(backend));
	return 0;
}

/* Fork mode: every test gets a fresh process, so the globals above start
 * at zero in each. */
H_TEST_MAIN(policy_suite, prepare)
