/* SPDX-License-Identifier: MIT */
/*
 * tests/runtime/runtime_misuse.c - the "misuse" tests of test-runtime:
 * misuse: bad arguments and calls out of order. The suite is built in test_runtime.c;
 * runtime.h holds what the groups share.
 */
#include "runtime.h"

/* ==== misuse =============================================================== */

#define BOGUS_WORKER ((struct umcg_worker *)(uintptr_t)0xdead0)
#define BOGUS_RT ((struct umcg_rt *)(uintptr_t)0xdead0)

START_TEST(test_misuse_null)
{
	struct umcg_rt *rt = rt_start(1, 0);
	struct umcg_worker *w = BOGUS_WORKER, *h;
	struct umcg_server_stats ss;
	struct umcg_worker_stats ws;
	struct umcg_rt_attr attr;

	umcg_rt_attr_init(&attr);
	ck_assert_int_eq(umcg_rt_create(NULL, NULL), -EINVAL);
	ck_assert_int_eq(umcg_rt_create(NULL, &attr), -EINVAL);
	ck_assert_int_eq(umcg_rt_start(NULL), -EINVAL);
	ck_assert_int_eq(umcg_rt_drain(NULL), -EINVAL);
	ck_assert_int_eq(umcg_rt_stop(NULL), -EINVAL);
	ck_assert_int_eq(umcg_rt_destroy(NULL), 0);
	ck_assert_uint_eq(umcg_rt_nr_servers(NULL), 0);
	ck_assert_int_eq(umcg_spawn(NULL, &w, NULL, echo, NULL), -EINVAL);
	ck_assert_int_eq(umcg_spawn(rt, &w, NULL, NULL, NULL), -EINVAL);
	ck_assert_int_eq(umcg_spawn(rt, NULL, NULL, NULL, NULL), -EINVAL);
	ck_assert_ptr_eq(w, BOGUS_WORKER);
	ck_assert_int_eq(umcg_join(NULL, NULL), -EINVAL);
	ck_assert_int_eq(umcg_detach(NULL), -EINVAL);
	ck_assert_int_eq(umcg_unpark(NULL), -EINVAL);
	ck_assert_int_eq(umcg_rt_server_stats(NULL, 0, &ss), -EINVAL);
	ck_assert_int_eq(umcg_rt_server_stats(rt, 0, NULL), -EINVAL);
	ck_assert_int_eq(umcg_worker_stats(NULL, &ws), -EINVAL);

	ck_assert_int_eq(umcg_spawn(rt, &h, NULL, holder, NULL), 0);
	ck_assert_int_eq(umcg_worker_stats(h, NULL), -EINVAL);
	ck_assert_int_eq(umcg_worker_stats(h, &ws), 0);
	STORE(&release, 1);
	ck_assert_int_eq(umcg_join(h, NULL), 0);

	/* Nothing leaked into the live count: drain returns. */
	ck_assert_int_eq(umcg_rt_drain(rt), 0);
	assert_rt_works(rt);
	rt_end(rt);
}
END_TEST

START_TEST(test_misuse_rt_attr)
{
	static const clockid_t bad_clocks[] = {
		CLOCK_PROCESS_CPUTIME_ID,
		CLOCK_THREAD_CPUTIME_ID,
		CLOCK_MONOTONIC_RAW,
		CLOCK_REALTIME_COARSE,
		CLOCK_MONOTONIC_COARSE,
		-1,
		4242,
	};
	static const unsigned int bad_nr[] = { 1025, 4096, UINT_MAX };
	struct umcg_policy_ops ops;
	struct umcg_rt_attr attr;
	struct umcg_rt *rt = BOGUS_RT;
	size_t i;

	umcg_rt_attr_init(&attr);
	ck_assert_uint_eq(attr.nr_servers, 0);
	ck_assert_uint_eq(attr.timeslice_ns, 0);
	ck_assert_ptr_null(attr.policy);
	ck_assert_int_eq(attr.clock, CLOCK_MONOTONIC);
	ck_assert(attr.pin_servers);

	for (i = 0; i < sizeof(bad_nr) / sizeof(bad_nr[0]); i++) {
		attr.nr_servers = bad_nr[i];
		ck_assert_int_eq(umcg_rt_create(&rt, &attr), -EINVAL);
		ck_assert_ptr_eq(rt, BOGUS_RT);
	}
	attr.nr_servers = 0;
	for (i = 0; i < sizeof(bad_clocks) / sizeof(bad_clocks[0]); i++) {
		attr.clock = bad_clocks[i];
		ck_assert_int_eq(umcg_rt_create(&rt, &attr), -EINVAL);
		ck_assert_ptr_eq(rt, BOGUS_RT);
	}
	attr.clock = CLOCK_MONOTONIC;

	/* A policy without one of its required callbacks. */
	for (i = 0; i < 4; i++) {
		ops = umcg_policy_fifo;
		if (i == 0)
			ops.create = NULL;
		else if (i == 1)
			ops.destroy = NULL;
		else if (i == 2)
			ops.enqueue = NULL;
		else
			ops.pick_next = NULL;
		attr.policy = &ops;
		ck_assert_int_eq(umcg_rt_create(&rt, &attr), -EINVAL);
		ck_assert_ptr_eq(rt, BOGUS_RT);
	}
	attr.policy = NULL;

	/* SCHED_FIFO priorities are 1-99; 0 means none. */
	attr.server_priority = -1;
	ck_assert_int_eq(umcg_rt_create(&rt, &attr), -EINVAL);
	attr.server_priority = 100;
	ck_assert_int_eq(umcg_rt_create(&rt, &attr), -EINVAL);
	ck_assert_ptr_eq(rt, BOGUS_RT);
	attr.server_priority = 0;

	/* The limit itself is accepted. */
	attr.nr_servers = 1024;
	ck_assert_int_eq(umcg_rt_create(&rt, &attr), 0);
	ck_assert_uint_eq(umcg_rt_nr_servers(rt), 1024);
	ck_assert_int_eq(umcg_rt_destroy(rt), 0);

	/* NULL attributes: one server per CPU. */
	ck_assert_int_eq(umcg_rt_create(&rt, NULL), 0);
	ck_assert_uint_eq(umcg_rt_nr_servers(rt), nr_cpus());
	ck_assert_int_eq(umcg_rt_destroy(rt), 0);

	/* More servers than CPUs run too. */
	rt = rt_start(nr_cpus() + 1, 0);
	ck_assert_uint_eq(umcg_rt_nr_servers(rt), nr_cpus() + 1);
	assert_rt_works(rt);
	rt_end(rt);
}
END_TEST

/* The server that ran the worker's first run (accounted once it yields). */
static void *report_server(void *arg)
{
	struct umcg_worker_stats st;

	(void)arg;
	EXPECT(umcg_yield() == 0, "umcg_yield() failed in a worker");
	EXPECT(umcg_worker_stats(umcg_self(), &st) == 0, "umcg_worker_stats()");
	return (void *)(intptr_t)st.server;
}

/* spawn_on() - where a worker spawned with @server and @cpu ran first. */
static int spawn_on(struct umcg_rt *rt, int server, int cpu)
{
	struct umcg_worker_attr wa;
	struct umcg_worker *w;
	void *ret = NULL;

	umcg_worker_attr_init(&wa);
	wa.server = server;
	wa.cpu = cpu;
	ck_assert_int_eq(umcg_spawn(rt, &w, &wa, report_server, NULL), 0);
	ck_assert_int_eq(umcg_join(w, &ret), 0);
	return (int)(intptr_t)ret;
}

START_TEST(test_misuse_worker_attr)
{
	struct umcg_rt *rt = rt_start(1, 0), *two = NULL, *unpinned = NULL;
	struct umcg_worker *w = BOGUS_WORKER, *ok;
	struct umcg_policy_ops nosteal;
	struct umcg_worker_attr wa;
	struct umcg_server_stats ss;
	struct umcg_rt_attr attr;
	int c0, c1;

	ck_assert_int_eq(umcg_rt_server_stats(rt, 0, &ss), 0);
	c0 = ss.cpu;
	ck_assert_int_ge(c0, 0);

#define SPAWN_FAILS(field, value)                                                              \
	do {                                                                                   \
		umcg_worker_attr_init(&wa);                                                    \
		wa.field = (value);                                                            \
		ck_assert_msg(umcg_spawn(rt, &w, &wa, echo, NULL) == -EINVAL,                  \
			      "spawn with " #field " = " #value " did not fail with -EINVAL"); \
		ck_assert_ptr_eq(w, BOGUS_WORKER);                                             \
	} while (0)

	SPAWN_FAILS(priority, 32);
	SPAWN_FAILS(priority, -1);
	SPAWN_FAILS(priority, INT_MAX);
	SPAWN_FAILS(priority, INT_MIN);
	SPAWN_FAILS(server, 1);
	SPAWN_FAILS(server, -2);
	SPAWN_FAILS(server, INT_MAX);
	SPAWN_FAILS(cpu, -2);
	SPAWN_FAILS(cpu, c0 + 1);
	SPAWN_FAILS(cpu, CPU_SETSIZE + 5);
	SPAWN_FAILS(cpu, INT_MAX);
	SPAWN_FAILS(stack_size, 1);
	SPAWN_FAILS(stack_size, (size_t)PTHREAD_STACK_MIN - 1);
#undef SPAWN_FAILS

	/* The limits themselves are fine. */
	umcg_worker_attr_init(&wa);
	wa.priority = 0;
	ck_assert_int_eq(umcg_spawn(rt, &ok, &wa, echo, NULL), 0);
	ck_assert_int_eq(umcg_join(ok, NULL), 0);
	wa.priority = 31;
	ck_assert_int_eq(umcg_spawn(rt, &ok, &wa, echo, NULL), 0);
	ck_assert_int_eq(umcg_join(ok, NULL), 0);
	ck_assert_int_eq(spawn_on(rt, -1, c0), 0);
	ck_assert_int_eq(umcg_rt_drain(rt), 0);
	assert_rt_works(rt);
	rt_end(rt);

	/*
	 * Placement on two servers, with a policy that never steals so that a
	 * worker runs where it was placed: @cpu picks the server pinned there,
	 * and with both set, @server wins.
	 */
	umcg_rt_attr_init(&attr);
	attr.nr_servers = 2;
	nosteal = umcg_policy_fifo;
	nosteal.steal = NULL;
	nosteal.nr_queued = NULL;
	attr.policy = &nosteal;
	ck_assert_int_eq(umcg_rt_create(&two, &attr), 0);
	ck_assert_int_eq(umcg_rt_start(two), 0);
	ck_assert_int_eq(umcg_rt_server_stats(two, 1, &ss), 0);
	c1 = ss.cpu;
	ck_assert_int_eq(spawn_on(two, 1, -1), 1);
	ck_assert_int_eq(spawn_on(two, 0, -1), 0);
	ck_assert_int_eq(spawn_on(two, -1, c0), 0);
	if (c1 != c0) {
		ck_assert_int_eq(spawn_on(two, -1, c1), 1);
		ck_assert_int_eq(spawn_on(two, 0, c1), 0);
		ck_assert_int_eq(spawn_on(two, 1, c0), 1);
	}
	rt_end(two);

	/* Unpinned servers sit on no CPU: no CPU has a server. */
	umcg_rt_attr_init(&attr);
	attr.nr_servers = 1;
	attr.pin_servers = false;
	ck_assert_int_eq(umcg_rt_create(&unpinned, &attr), 0);
	ck_assert_int_eq(umcg_rt_start(unpinned), 0);
	ck_assert_int_eq(umcg_rt_server_stats(unpinned, 0, &ss), 0);
	ck_assert_int_eq(ss.cpu, -1);
	umcg_worker_attr_init(&wa);
	wa.cpu = c0;
	ck_assert_int_eq(umcg_spawn(unpinned, &w, &wa, echo, NULL), -EINVAL);
	assert_rt_works(unpinned);
	rt_end(unpinned);
}
END_TEST

START_TEST(test_misuse_order)
{
	struct umcg_rt_attr attr;
	struct umcg_rt *rt = NULL;
	struct umcg_worker *w = BOGUS_WORKER;

	umcg_rt_attr_init(&attr);
	attr.nr_servers = 1;
	ck_assert_int_eq(umcg_rt_create(&rt, &attr), 0);
	ck_assert_int_eq(umcg_spawn(rt, &w, NULL, echo, NULL), -ENODEV);
	ck_assert_ptr_eq(w, BOGUS_WORKER);
	ck_assert_int_eq(umcg_rt_drain(rt), 0);
	ck_assert_int_eq(umcg_rt_stop(rt), 0);
	ck_assert_int_eq(umcg_rt_start(rt), 0);
	ck_assert_int_eq(umcg_rt_start(rt), -EBUSY);
	assert_rt_works(rt);
	ck_assert_int_eq(umcg_rt_drain(rt), 0);
	ck_assert_int_eq(umcg_rt_stop(rt), 0);
	ck_assert_int_eq(umcg_spawn(rt, &w, NULL, echo, NULL), -ENODEV);
	ck_assert_ptr_eq(w, BOGUS_WORKER);
	ck_assert_int_eq(umcg_rt_destroy(rt), 0);
}
END_TEST

/* Calls that only a worker may make, from a thread that is none. */
static void *non_worker_calls(void *arg)
{
	int *rc = arg;

	rc[0] = umcg_yield();
	rc[1] = umcg_park();
	rc[2] = umcg_sleep_for(1);
	rc[3] = umcg_sleep_until(0);
	rc[4] = umcg_exit((void *)1);
	rc[5] = umcg_worker_set_deadline(5);
	rc[6] = umcg_self() == NULL ? -EPERM : 0;
	return NULL;
}

START_TEST(test_misuse_non_worker)
{
	struct umcg_rt *rt = rt_start(1, 0);
	int rc[2][7];
	pthread_t th;
	int i, t;

	non_worker_calls(rc[0]);
	ck_assert_int_eq(pthread_create(&th, NULL, non_worker_calls, rc[1]), 0);
	ck_assert_int_eq(pthread_join(th, NULL), 0);
	for (t = 0; t < 2; t++) {
		for (i = 0; i < 7; i++)
			ck_assert_msg(rc[t][i] == -EPERM, "%s: call %d returned %d",
				      t ? "plain thread" : "main thread", i, rc[t][i]);
	}
	assert_rt_works(rt);
	rt_end(rt);
}
END_TEST

static struct umcg_rt *misuse_rt;
static int from_worker_rc[3];

static void *misuse_in_worker(void *arg)
{
	(void)arg;
	from_worker_rc[0] = umcg_join(umcg_self(), NULL);
	from_worker_rc[1] = umcg_rt_drain(misuse_rt);
	from_worker_rc[2] = umcg_rt_stop(misuse_rt);
	return (void *)0x42;
}

START_TEST(test_misuse_from_worker)
{
	struct umcg_rt *rt = rt_start(1, 0);
	struct umcg_worker *w;
	void *ret = NULL;

	misuse_rt = rt;
	ck_assert_int_eq(umcg_spawn(rt, &w, NULL, misuse_in_worker, NULL), 0);
	ck_assert_int_eq(umcg_join(w, &ret), 0);
	ck_assert_ptr_eq(ret, (void *)0x42);
	ck_assert_int_eq(from_worker_rc[0], -EDEADLK);
	ck_assert_int_eq(from_worker_rc[1], -EDEADLK);
	ck_assert_int_eq(from_worker_rc[2], -EDEADLK);
	assert_rt_works(rt);
	rt_end(rt);
}
END_TEST

START_TEST(test_misuse_detached)
{
	struct umcg_rt *rt = rt_start(1, 0);
	struct umcg_worker *w;

	/* The holder lives until released, so its handle stays valid. */
	ck_assert_int_eq(umcg_spawn(rt, &w, NULL, holder, NULL), 0);
	ck_assert_int_eq(umcg_detach(w), 0);
	ck_assert_int_eq(umcg_detach(w), -EINVAL);
	ck_assert_int_eq(umcg_join(w, NULL), -EINVAL);
	STORE(&release, 1);
	ck_assert_int_eq(umcg_rt_drain(rt), 0);
	assert_rt_works(rt);
	rt_end(rt);
}
END_TEST

START_TEST(test_misuse_stats)
{
	struct umcg_rt *rt = rt_start(2, 0);
	struct umcg_server_stats ss, pattern;

	memset(&pattern, 0xab, sizeof(pattern));
	ss = pattern;
	ck_assert_int_eq(umcg_rt_server_stats(rt, 2, &ss), -EINVAL);
	ck_assert_int_eq(umcg_rt_server_stats(rt, UINT_MAX, &ss), -EINVAL);
	ck_assert(memcmp(&ss, &pattern, sizeof(ss)) == 0);
	ck_assert_int_eq(umcg_rt_server_stats(rt, 1, &ss), 0);
	assert_rt_works(rt);
	rt_end(rt);
}
END_TEST

void runtime_add_misuse(Suite *s)
{
	TCase *tc;

	tc = tcase_create("misuse");
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_misuse_null);
	tcase_add_test(tc, test_misuse_rt_attr);
	tcase_add_test(tc, test_misuse_worker_attr);
	tcase_add_test(tc, test_misuse_order);
	tcase_add_test(tc, test_misuse_non_worker);
	tcase_add_test(tc, test_misuse_from_worker);
	tcase_add_test(tc, test_misuse_detached);
	tcase_add_test(tc, test_misuse_stats);
	suite_add_tcase(s, tc);
}
