/* SPDX-License-Identifier: MIT */
/*
 * tests/runtime/runtime_lifecycle.c - the "lifecycle" tests of test-runtime:
 * worker lifecycle: spawn, join, detach, exit, drain, stop, restart, and many workers. The suite is built in test_runtime.c;
 * runtime.h holds what the groups share.
 */
#include "runtime.h"

/* ==== lifecycle ============================================================ */

static void *triple(void *arg)
{
	EXPECT(umcg_yield() == 0, "umcg_yield() failed in a worker");
	return (void *)((uintptr_t)arg * 3);
}

#define NR_VALUES 64
START_TEST(test_spawn_join_values)
{
	struct umcg_rt *rt = rt_start(0, 0);
	struct umcg_worker *w[NR_VALUES];
	uintptr_t i;
	void *ret;

	for (i = 0; i < NR_VALUES; i++)
		ck_assert_int_eq(umcg_spawn(rt, &w[i], NULL, triple, (void *)(i + 1)), 0);
	for (i = 0; i < NR_VALUES; i++) {
		ret = NULL;
		ck_assert_int_eq(umcg_join(w[i], &ret), 0);
		ck_assert_uint_eq((uintptr_t)ret, (i + 1) * 3);
	}
	/* A NULL @retval is allowed. */
	ck_assert_int_eq(umcg_spawn(rt, &w[0], NULL, triple, (void *)1), 0);
	ck_assert_int_eq(umcg_join(w[0], NULL), 0);
	rt_end(rt);
}
END_TEST

struct attr_probe {
	atomic_int go;
	atomic_int done;
	size_t stack;
	int prio;
	uint64_t deadline_before;
	int set_rc;
	uint64_t deadline_after;
};

static void *probe_attrs(void *arg)
{
	struct attr_probe *p = arg;
	pthread_attr_t pa;

	if (pthread_getattr_np(pthread_self(), &pa) == 0) {
		pthread_attr_getstacksize(&pa, &p->stack);
		pthread_attr_destroy(&pa);
	}
	p->prio = umcg_worker_priority(umcg_self());
	p->deadline_before = umcg_worker_deadline(umcg_self());
	YIELD_UNTIL(LOAD(&p->go));
	p->set_rc = umcg_worker_set_deadline(777);
	p->deadline_after = umcg_worker_deadline(umcg_self());
	STORE(&p->done, 1);
	return NULL;
}

/* Stack size, priority and deadline reach the worker; the deadline moves. */
START_TEST(test_worker_attributes)
{
	struct umcg_rt *rt = rt_start(1, 0);
	struct umcg_worker_attr wa;
	static struct attr_probe p, q;
	struct umcg_worker *w, *v;

	umcg_worker_attr_init(&wa);
	ck_assert_int_eq(wa.server, -1);
	ck_assert_int_eq(wa.cpu, -1);
	ck_assert_int_eq(wa.priority, 0);
	wa.stack_size = 1024 * 1024;
	wa.priority = 31;
	wa.deadline = 123456789;
	ck_assert_int_eq(umcg_spawn(rt, &w, &wa, probe_attrs, &p), 0);
	ck_assert_int_eq(umcg_worker_priority(w), 31);
	ck_assert_uint_eq(umcg_worker_deadline(w), 123456789);
	STORE(&p.go, 1);
	WAIT_UNTIL(LOAD(&p.done));
	/* Joinable and finished: its handle is still valid. */
	ck_assert_uint_eq(umcg_worker_deadline(w), 777);
	ck_assert_int_eq(umcg_join(w, NULL), 0);
	ck_assert_uint_ge(p.stack, 1024 * 1024);
	ck_assert_int_eq(p.prio, 31);
	ck_assert_uint_eq(p.deadline_before, 123456789);
	ck_assert_int_eq(p.set_rc, 0);
	ck_assert_uint_eq(p.deadline_after, 777);

	/* Defaults: 256 KiB of stack, priority 0, no deadline. */
	STORE(&q.go, 1);
	ck_assert_int_eq(umcg_spawn(rt, &v, NULL, probe_attrs, &q), 0);
	ck_assert_int_eq(umcg_join(v, NULL), 0);
	ck_assert_uint_ge(q.stack, 256 * 1024);
	ck_assert_int_eq(q.prio, 0);
	ck_assert_uint_eq(q.deadline_before, 0);
	rt_end(rt);
}
END_TEST

struct name_probe {
	_Atomic(struct umcg_worker *) self;
	pid_t tid;
	char thread_name[16];
	char api_name[32];
	atomic_int go;
};

static void *probe_name(void *arg)
{
	struct name_probe *p = arg;

	p->tid = gettid();
	pthread_getname_np(pthread_self(), p->thread_name, sizeof(p->thread_name));
	snprintf(p->api_name, sizeof(p->api_name), "%s", umcg_worker_name(umcg_self()));
	STORE(&p->self, umcg_self());
	/* Stay alive until the main thread has looked at the handle. */
	YIELD_UNTIL(LOAD(&p->go));
	return NULL;
}

static void *self_outside(void *arg)
{
	int *rc = arg;

	rc[0] = umcg_self() == NULL;
	rc[1] = umcg_yield();
	return NULL;
}

START_TEST(test_self_and_names)
{
	static const char longname[] = "0123456789abcdefghij";
	struct umcg_rt *rt = rt_start(0, 0);
	static struct name_probe p[4];
	struct umcg_worker_attr wa;
	struct umcg_worker *w[4];
	char buf[16];
	pthread_t th;
	int rc[2] = { 0, 0 };
	int i;

	/* Not a worker: the main thread and a plain thread. */
	ck_assert_ptr_null(umcg_self());
	ck_assert_int_eq(pthread_create(&th, NULL, self_outside, rc), 0);
	ck_assert_int_eq(pthread_join(th, NULL), 0);
	ck_assert_int_eq(rc[0], 1);
	ck_assert_int_eq(rc[1], -EPERM);

	umcg_worker_attr_init(&wa);
	wa.name = "alpha";
	ck_assert_int_eq(umcg_spawn(rt, &w[0], &wa, probe_name, &p[0]), 0);
	wa.name = longname;
	ck_assert_int_eq(umcg_spawn(rt, &w[1], &wa, probe_name, &p[1]), 0);
	wa.name = NULL;
	ck_assert_int_eq(umcg_spawn(rt, &w[2], &wa, probe_name, &p[2]), 0);
	/* The name is copied: changing the caller's buffer changes nothing. */
	strcpy(buf, "beta");
	wa.name = buf;
	ck_assert_int_eq(umcg_spawn(rt, &w[3], &wa, probe_name, &p[3]), 0);
	strcpy(buf, "XXXX");

	for (i = 0; i < 4; i++) {
		WAIT_UNTIL(LOAD(&p[i].self) != NULL);
		ck_assert_ptr_eq(LOAD(&p[i].self), w[i]);
		ck_assert_int_gt(umcg_worker_tid(w[i]), 0);
		ck_assert_int_eq(umcg_worker_tid(w[i]), p[i].tid);
		ck_assert_int_ne(umcg_worker_tid(w[i]), gettid());
	}
	ck_assert_str_eq(umcg_worker_name(w[0]), "alpha");
	ck_assert_str_eq(p[0].api_name, "alpha");
	ck_assert_str_eq(p[0].thread_name, "alpha");
	/* Long names: the thread name is the first 15 bytes. */
	ck_assert_str_eq(p[1].thread_name, "0123456789abcde");
	ck_assert_uint_ge(strlen(umcg_worker_name(w[1])), 15);
	ck_assert(strncmp(umcg_worker_name(w[1]), longname, strlen(umcg_worker_name(w[1]))) == 0);
	ck_assert_str_eq(umcg_worker_name(w[2]), "");
	ck_assert_str_eq(p[2].api_name, "");
	ck_assert_str_eq(umcg_worker_name(w[3]), "beta");
	ck_assert_str_eq(p[3].thread_name, "beta");

	for (i = 0; i < 4; i++) {
		STORE(&p[i].go, 1);
		ck_assert_int_eq(umcg_join(w[i], NULL), 0);
	}
	ck_assert_ptr_null(umcg_self());
	rt_end(rt);
}
END_TEST

static atomic_int finished;
atomic_int release; /* runtime.h */

static void *finish_counted(void *arg)
{
	(void)arg;
	for (int i = 0; i < 3; i++)
		EXPECT(umcg_yield() == 0, "umcg_yield() failed in a worker");
	BUMP(&finished);
	return NULL;
}

static void *wait_release(void *arg)
{
	(void)arg;
	YIELD_UNTIL(LOAD(&release));
	BUMP(&finished);
	return NULL;
}

#define NR_DETACHED 32
START_TEST(test_detach)
{
	struct umcg_rt *rt = rt_start(0, 0);
	struct umcg_worker *w;
	pid_t tid;
	int i;

	/* Spawned detached (no handle): they free themselves. */
	for (i = 0; i < NR_DETACHED; i++)
		ck_assert_int_eq(umcg_spawn(rt, NULL, NULL, finish_counted, NULL), 0);
	ck_assert_int_eq(umcg_rt_drain(rt), 0);
	ck_assert_int_eq(LOAD(&finished), NR_DETACHED);

	/* Detached while it runs. */
	ck_assert_int_eq(umcg_spawn(rt, &w, NULL, wait_release, NULL), 0);
	ck_assert_int_eq(umcg_detach(w), 0);
	STORE(&release, 1);
	ck_assert_int_eq(umcg_rt_drain(rt), 0);
	ck_assert_int_eq(LOAD(&finished), NR_DETACHED + 1);

	/* Detached after its thread is gone: detach reaps it. */
	ck_assert_int_eq(umcg_spawn(rt, &w, NULL, finish_counted, NULL), 0);
	WAIT_UNTIL(LOAD(&finished) == NR_DETACHED + 2);
	tid = umcg_worker_tid(w);
	ck_assert_int_gt(tid, 0);
	WAIT_UNTIL(thread_gone(tid));
	ck_assert_int_eq(umcg_detach(w), 0);
	/* Nothing is left to count: drain returns. */
	ck_assert_int_eq(umcg_rt_drain(rt), 0);

	assert_rt_works(rt);
	rt_end(rt);
}
END_TEST

static atomic_int cleanup_n;
static atomic_int cleanup_order[2];
static atomic_int after_exit;

static void note_cleanup(void *arg)
{
	int i = atomic_fetch_add_explicit(&cleanup_n, 1, memory_order_relaxed);

	if (i < 2)
		STORE(&cleanup_order[i], (int)(intptr_t)arg);
}

static __attribute__((noinline)) void exit_at_depth(int depth, void *val)
{
	if (depth == 0) {
		umcg_exit(val);
		STORE(&after_exit, 1);
		return;
	}
	EXPECT(umcg_yield() == 0, "umcg_yield() failed in a worker");
	exit_at_depth(depth - 1, val);
	STORE(&after_exit, 1);
}

static void *exiter(void *arg)
{
	int depth = (int)(intptr_t)arg;

	pthread_cleanup_push(note_cleanup, (void *)1);
	pthread_cleanup_push(note_cleanup, (void *)2);
	exit_at_depth(depth, (void *)(uintptr_t)(0x5eed + depth));
	pthread_cleanup_pop(0);
	pthread_cleanup_pop(0);
	STORE(&after_exit, 1);
	return NULL;
}

/* umcg_exit() from any depth: join sees its value, cleanup handlers run. */
START_TEST(test_exit)
{
	static const int depths[] = { 0, 1, 8 };
	struct umcg_rt *rt = rt_start(1, 0);
	struct umcg_worker *w;
	void *ret;
	size_t i;

	for (i = 0; i < sizeof(depths) / sizeof(depths[0]); i++) {
		atomic_store(&cleanup_n, 0);
		atomic_store(&cleanup_order[0], 0);
		atomic_store(&cleanup_order[1], 0);
		ck_assert_int_eq(umcg_spawn(rt, &w, NULL, exiter, (void *)(intptr_t)depths[i]), 0);
		ret = NULL;
		ck_assert_int_eq(umcg_join(w, &ret), 0);
		ck_assert_ptr_eq(ret, (void *)(uintptr_t)(0x5eed + depths[i]));
		ck_assert_int_eq(LOAD(&cleanup_n), 2);
		/* Innermost first, as pthread_exit() runs them. */
		ck_assert_int_eq(LOAD(&cleanup_order[0]), 2);
		ck_assert_int_eq(LOAD(&cleanup_order[1]), 1);
		ck_assert_int_eq(LOAD(&after_exit), 0);
	}

	/* A detached worker that exits frees itself too. */
	atomic_store(&cleanup_n, 0);
	ck_assert_int_eq(umcg_spawn(rt, NULL, NULL, exiter, (void *)3), 0);
	ck_assert_int_eq(umcg_rt_drain(rt), 0);
	ck_assert_int_eq(LOAD(&cleanup_n), 2);
	ck_assert_int_eq(LOAD(&after_exit), 0);

	assert_rt_works(rt);
	rt_end(rt);
}
END_TEST

#define MANY 2000
static struct umcg_worker *many[MANY];

/* 2000 live workers at once (x10 batches under stress), each yielding. */
START_TEST(test_many_workers)
{
	struct umcg_rt *rt = rt_start(0, 0);
	unsigned long b, batches = h_stress();
	uintptr_t i;
	void *ret;
	int rc;

	for (b = 0; b < batches; b++) {
		for (i = 0; i < MANY; i++) {
			rc = umcg_spawn(rt, &many[i], NULL, few_yields, (void *)(i + 1));
			ck_assert_msg(rc == 0, "spawn %lu of %d: %d", (unsigned long)i, MANY, rc);
		}
		for (i = 0; i < MANY; i++) {
			ret = NULL;
			ck_assert_int_eq(umcg_join(many[i], &ret), 0);
			ck_assert_uint_eq((uintptr_t)ret, i + 1);
		}
	}
	rt_end(rt);
}
END_TEST

static struct umcg_rt *tree_rt;
static atomic_int tree_errors;

/* A binary tree of workers: each spawns two children and joins them. */
static void *tree(void *arg)
{
	uintptr_t depth = (uintptr_t)arg, total = 1;
	struct umcg_worker *kid[2] = { NULL, NULL };
	void *ret;
	int k;

	EXPECT(umcg_yield() == 0, "umcg_yield() failed in a worker");
	if (depth == 0)
		return (void *)total;
	for (k = 0; k < 2; k++) {
		if (umcg_spawn(tree_rt, &kid[k], NULL, tree, (void *)(depth - 1))) {
			BUMP(&tree_errors);
			kid[k] = NULL;
		}
	}
	EXPECT(umcg_yield() == 0, "umcg_yield() failed in a worker");
	for (k = 0; k < 2; k++) {
		if (!kid[k])
			continue;
		ret = NULL;
		if (umcg_join(kid[k], &ret))
			BUMP(&tree_errors);
		else
			total += (uintptr_t)ret;
	}
	return (void *)total;
}

#define TREE_DEPTH 7
/* _i: 0 = one server, 1 = one per CPU. */
START_TEST(test_workers_spawn_workers)
{
	struct umcg_rt *rt = rt_start(_i == 0 ? 1 : 0, 0);
	unsigned long r, rounds = h_stress();
	struct umcg_worker *w;
	void *ret;

	tree_rt = rt;
	for (r = 0; r < rounds; r++) {
		ret = NULL;
		ck_assert_int_eq(umcg_spawn(rt, &w, NULL, tree, (void *)(uintptr_t)TREE_DEPTH), 0);
		ck_assert_int_eq(umcg_join(w, &ret), 0);
		ck_assert_int_eq(LOAD(&tree_errors), 0);
		ck_assert_uint_eq((uintptr_t)ret, (2u << TREE_DEPTH) - 1);
	}
	rt_end(rt);
}
END_TEST

static struct umcg_rt *chain_rt;

/* Each link spawns the next and joins it; the last one yields a while. */
static void *chain(void *arg)
{
	uintptr_t n = (uintptr_t)arg;
	struct umcg_worker *w;
	void *ret = NULL;

	if (n == 0) {
		for (int i = 0; i < 20; i++)
			EXPECT(umcg_yield() == 0, "umcg_yield() failed in a worker");
		return (void *)0;
	}
	EXPECT(umcg_spawn(chain_rt, &w, NULL, chain, (void *)(n - 1)) == 0, "spawn in chain");
	EXPECT(umcg_join(w, &ret) == 0, "join in chain");
	return (void *)((uintptr_t)ret + 1);
}

static void *yield_100(void *arg)
{
	for (int i = 0; i < 100; i++)
		EXPECT(umcg_yield() == 0, "umcg_yield() failed in a worker");
	return arg;
}

static void *join_arg(void *arg)
{
	void *ret = NULL;

	EXPECT(umcg_join(arg, &ret) == 0, "join from a worker failed");
	return ret;
}

/*
 * On one server a joining worker must give the server away: the joinee
 * needs it to finish. A chain of 32 joiners, and a worker joining a worker
 * the main thread spawned.
 */
START_TEST(test_join_from_worker_one_server)
{
	struct umcg_rt *rt = rt_start(1, 0);
	struct umcg_worker *a, *b;
	void *ret = NULL;

	chain_rt = rt;
	ck_assert_int_eq(umcg_spawn(rt, &a, NULL, chain, (void *)32), 0);
	ck_assert_int_eq(umcg_join(a, &ret), 0);
	ck_assert_uint_eq((uintptr_t)ret, 32);

	ck_assert_int_eq(umcg_spawn(rt, &b, NULL, yield_100, (void *)0x77), 0);
	ck_assert_int_eq(umcg_spawn(rt, &a, NULL, join_arg, b), 0);
	ret = NULL;
	ck_assert_int_eq(umcg_join(a, &ret), 0);
	ck_assert_ptr_eq(ret, (void *)0x77);
	rt_end(rt);
}
END_TEST

static struct umcg_rt *drain_rt;
static atomic_int drain_errors;
static atomic_int drained;

static void *drain_spawner(void *arg)
{
	(void)arg;
	EXPECT(umcg_yield() == 0, "umcg_yield() failed in a worker");
	for (int k = 0; k < 8; k++) {
		if (umcg_spawn(drain_rt, NULL, NULL, finish_counted, NULL))
			BUMP(&drain_errors);
		EXPECT(umcg_yield() == 0, "umcg_yield() failed in a worker");
	}
	BUMP(&finished);
	return NULL;
}

static void *drainer(void *arg)
{
	STORE(&drained, umcg_rt_drain(arg) == 0 ? 1 : -1);
	return NULL;
}

START_TEST(test_drain)
{
	struct umcg_rt *rt = rt_start(0, 0);
	struct umcg_worker *w;
	pthread_t th;
	pid_t tid;
	int i;

	/* Nothing to wait for. */
	ck_assert_int_eq(umcg_rt_drain(rt), 0);

	/* Detached workers that spawn more detached workers while we drain. */
	drain_rt = rt;
	for (i = 0; i < 8; i++)
		ck_assert_int_eq(umcg_spawn(rt, NULL, NULL, drain_spawner, NULL), 0);
	ck_assert_int_eq(umcg_rt_drain(rt), 0);
	ck_assert_int_eq(LOAD(&drain_errors), 0);
	ck_assert_int_eq(LOAD(&finished), 8 + 8 * 8);

	/* A finished joinable worker counts until it is joined. */
	ck_assert_int_eq(umcg_spawn(rt, &w, NULL, echo, NULL), 0);
	WAIT_UNTIL((tid = umcg_worker_tid(w)) > 0);
	WAIT_UNTIL(thread_gone(tid));
	ck_assert_int_eq(pthread_create(&th, NULL, drainer, rt), 0);
	h_sleep_us(50000);
	ck_assert_msg(LOAD(&drained) == 0, "drain returned before the joinable worker was joined");
	ck_assert_int_eq(umcg_join(w, NULL), 0);
	ck_assert_int_eq(pthread_join(th, NULL), 0);
	ck_assert_int_eq(LOAD(&drained), 1);
	rt_end(rt);
}
END_TEST

atomic_ulong holder_progress; /* runtime.h */

void *holder(void *arg)
{
	(void)arg;
	while (!LOAD(&release)) {
		BUMP(&holder_progress);
		EXPECT(umcg_yield() == 0, "umcg_yield() failed in a worker");
	}
	return NULL;
}

/* stop and destroy refuse while workers live; both work afterwards. */
START_TEST(test_stop_and_destroy)
{
	struct umcg_rt *rt = rt_start(1, 0), *idle = NULL;
	struct umcg_worker *w;
	unsigned long seen;

	ck_assert_int_eq(umcg_spawn(rt, &w, NULL, holder, NULL), 0);
	ck_assert_int_eq(umcg_spawn(rt, NULL, NULL, holder, NULL), 0);
	WAIT_UNTIL(PEEK(&holder_progress) > 0);
	ck_assert_int_eq(umcg_rt_stop(rt), -EBUSY);
	ck_assert_int_eq(umcg_rt_destroy(rt), -EBUSY);
	/* Nothing was stopped or freed: the holders still run, spawning works. */
	seen = PEEK(&holder_progress);
	WAIT_UNTIL(PEEK(&holder_progress) > seen);
	assert_rt_works(rt);

	STORE(&release, 1);
	ck_assert_int_eq(umcg_join(w, NULL), 0);
	ck_assert_int_eq(umcg_rt_drain(rt), 0);
	ck_assert_int_eq(umcg_rt_stop(rt), 0);
	ck_assert_int_eq(umcg_rt_stop(rt), 0);
	ck_assert_int_eq(umcg_spawn(rt, &w, NULL, echo, NULL), -ENODEV);
	ck_assert_int_eq(umcg_rt_destroy(rt), 0);

	/* Never started: stop and destroy are fine. */
	ck_assert_int_eq(umcg_rt_create(&idle, NULL), 0);
	ck_assert_int_eq(umcg_rt_stop(idle), 0);
	ck_assert_int_eq(umcg_rt_destroy(idle), 0);
	ck_assert_int_eq(umcg_rt_destroy(NULL), 0);
}
END_TEST

/*
 * A stopped runtime starts again: umcg_rt_stop() returns 0 "also if ...
 * already stopped" and umcg_rt_start() refuses only a started runtime, so a
 * stop/start cycle leaves a working runtime.
 */
START_TEST(test_restart_after_stop)
{
	struct umcg_rt *rt = rt_start(2, 0);
	unsigned long r, rounds = 3 * h_stress();

	for (r = 0; r < rounds; r++) {
		for (int i = 0; i < 4; i++)
			assert_rt_works(rt);
		ck_assert_int_eq(umcg_rt_stop(rt), 0);
		ck_assert_int_eq(umcg_rt_start(rt), 0);
	}
	assert_rt_works(rt);
	rt_end(rt);
}
END_TEST

static struct umcg_rt *pair_rt[2];
static atomic_ulong pair_progress[2];
static _Atomic(struct umcg_worker *) pair_parker;
static atomic_int pair_flag;
static unsigned long pair_rounds;

#define PAIR_WORKERS 4

/*
 * Half its yields, then wait for the other runtime to be half-way too,
 * then the rest: both runtimes must run at the same time to get through.
 */
static void *pair_worker(void *arg)
{
	int me = (int)(intptr_t)arg;
	unsigned long i, half = pair_rounds / 2;

	for (i = 0; i < pair_rounds; i++) {
		if (i == half)
			YIELD_UNTIL(PEEK(&pair_progress[!me]) >= PAIR_WORKERS * half);
		BUMP(&pair_progress[me]);
		EXPECT(umcg_yield() == 0, "umcg_yield() failed in a worker");
	}
	return NULL;
}

/* In runtime 1: park until a worker of runtime 0 says so. */
static void *pair_park(void *arg)
{
	(void)arg;
	STORE(&pair_parker, umcg_self());
	while (!LOAD(&pair_flag))
		EXPECT(umcg_park() == 0, "umcg_park() failed in a worker");
	return NULL;
}

/* In runtime 0: unpark the parker of runtime 1. */
static void *pair_unpark(void *arg)
{
	struct umcg_worker *p;

	(void)arg;
	YIELD_UNTIL((p = LOAD(&pair_parker)) != NULL);
	STORE(&pair_flag, 1);
	EXPECT(umcg_unpark(p) == 0, "cross-runtime unpark failed");
	return NULL;
}

START_TEST(test_two_runtimes)
{
	struct umcg_worker *w[2][PAIR_WORKERS], *park, *unpark, *hold;
	int r, i;

	pair_rounds = 200 * h_stress();
	for (r = 0; r < 2; r++)
		pair_rt[r] = rt_start(r == 0 ? 1 : 0, 0);
	for (i = 0; i < PAIR_WORKERS; i++) {
		for (r = 0; r < 2; r++)
			ck_assert_int_eq(umcg_spawn(pair_rt[r], &w[r][i], NULL, pair_worker,
						    (void *)(intptr_t)r),
					 0);
	}
	ck_assert_int_eq(umcg_spawn(pair_rt[1], &park, NULL, pair_park, NULL), 0);
	ck_assert_int_eq(umcg_spawn(pair_rt[0], &unpark, NULL, pair_unpark, NULL), 0);
	ck_assert_int_eq(umcg_spawn(pair_rt[1], &hold, NULL, holder, NULL), 0);
	for (i = 0; i < PAIR_WORKERS; i++) {
		for (r = 0; r < 2; r++)
			ck_assert_int_eq(umcg_join(w[r][i], NULL), 0);
	}
	ck_assert_int_eq(umcg_join(unpark, NULL), 0);
	ck_assert_int_eq(umcg_join(park, NULL), 0);
	ck_assert_uint_eq(PEEK(&pair_progress[0]), PAIR_WORKERS * pair_rounds);
	ck_assert_uint_eq(PEEK(&pair_progress[1]), PAIR_WORKERS * pair_rounds);

	/* Runtime 0 drains and goes away while runtime 1 still has a worker. */
	ck_assert_int_eq(umcg_rt_drain(pair_rt[0]), 0);
	ck_assert_int_eq(umcg_rt_destroy(pair_rt[0]), 0);
	assert_rt_works(pair_rt[1]);
	STORE(&release, 1);
	ck_assert_int_eq(umcg_join(hold, NULL), 0);
	rt_end(pair_rt[1]);
}
END_TEST

void runtime_add_lifecycle(Suite *s)
{
	TCase *tc;

	tc = tcase_create("lifecycle");
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_spawn_join_values);
	tcase_add_test(tc, test_worker_attributes);
	tcase_add_test(tc, test_self_and_names);
	tcase_add_test(tc, test_detach);
	tcase_add_test(tc, test_exit);
	tcase_add_loop_test(tc, test_workers_spawn_workers, 0, 2);
	tcase_add_test(tc, test_join_from_worker_one_server);
	tcase_add_test(tc, test_drain);
	tcase_add_test(tc, test_stop_and_destroy);
	tcase_add_test(tc, test_restart_after_stop);
	tcase_add_test(tc, test_two_runtimes);
	suite_add_tcase(s, tc);

	tc = tcase_create("scale");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_many_workers);
	suite_add_tcase(s, tc);
}
