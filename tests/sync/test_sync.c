/* SPDX-License-Identifier: MIT */
/*
 * test_sync.c - <umcg/sync.h>: misuse of every call, the mutex's FIFO
 * order, waits that park the worker and not its server, timeouts, the
 * program's own park permits left alone, waiters freed right after their
 * wake-up, channels (rendezvous, close with waiters, select: fairness,
 * waiting on several, deadlines, never matching itself), and stress with
 * workers of several servers and plain threads on the same objects,
 * cooperative and with 50 us slices, under the lost-wake-up watchdog.
 *
 * Each test runs in its own process (Check's fork mode). Workers test hot
 * loops with EXPECT (a plain `if`), and wait by yielding (YIELD_UNTIL) or
 * on the objects under test; plain threads poll with short sleeps
 * (WAIT_UNTIL). No assertion depends on how long something took: a
 * deadline is only ever checked to have passed, never to be near.
 *
 * UMCG_STRESS=1 runs every loop ten times longer.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <umcg/sync.h>

#include "../runtime/runtime.h"
#include "harness.h"

/* A look at an object's private fields, which the tests use to know that a
 * waiter is queued (the library writes them atomically). */
#define QPEEK(p) __atomic_load_n(&(p), __ATOMIC_ACQUIRE)

/* ---- misuse ------------------------------------------------------------ */

static void *trylock_elsewhere(void *arg)
{
	return (void *)(intptr_t)umcg_mutex_trylock(arg);
}

static void *unlock_elsewhere(void *arg)
{
	return (void *)(intptr_t)umcg_mutex_unlock(arg);
}

static int other_thread(void *(*fn)(void *), void *arg)
{
	void *ret;
	pthread_t th = h_thread(fn, arg);

	ck_assert_int_eq(pthread_join(th, &ret), 0);
	return (int)(intptr_t)ret;
}

START_TEST(test_mutex_misuse)
{
	struct umcg_mutex zero, m = UMCG_MUTEX_INIT, copy;

	memset(&zero, 0, sizeof(zero));
	errno = 1234;
	ck_assert_int_eq(umcg_mutex_init(NULL), -EINVAL);
	ck_assert_int_eq(umcg_mutex_lock(NULL), -EINVAL);
	ck_assert_int_eq(umcg_mutex_trylock(NULL), -EINVAL);
	ck_assert_int_eq(umcg_mutex_timedlock(NULL, 0), -EINVAL);
	ck_assert_int_eq(umcg_mutex_unlock(NULL), -EINVAL);
	ck_assert_int_eq(umcg_mutex_destroy(NULL), -EINVAL);
	ck_assert_int_eq(umcg_mutex_lock(&zero), -EINVAL);
	ck_assert_int_eq(umcg_mutex_trylock(&zero), -EINVAL);
	ck_assert_int_eq(umcg_mutex_timedlock(&zero, 0), -EINVAL);
	ck_assert_int_eq(umcg_mutex_unlock(&zero), -EINVAL);
	ck_assert_int_eq(umcg_mutex_destroy(&zero), -EINVAL);
	memset(&copy, 0, sizeof(copy));
	ck_assert_int_eq(memcmp(&zero, &copy, sizeof(zero)), 0);

	/* Not held: unlock by anyone is -EPERM. */
	ck_assert_int_eq(umcg_mutex_unlock(&m), -EPERM);
	ck_assert_int_eq(umcg_mutex_lock(&m), 0);
	ck_assert_int_eq(umcg_mutex_lock(&m), -EDEADLK);
	ck_assert_int_eq(umcg_mutex_trylock(&m), -EDEADLK);
	ck_assert_int_eq(umcg_mutex_timedlock(&m, h_now(CLOCK_MONOTONIC) + 10 * MS), -EDEADLK);
	ck_assert_int_eq(other_thread(trylock_elsewhere, &m), -EBUSY);
	ck_assert_int_eq(other_thread(unlock_elsewhere, &m), -EPERM);
	ck_assert_int_eq(umcg_mutex_destroy(&m), -EBUSY);
	/* Still ours after all that. */
	memcpy(&copy, &m, sizeof(m));
	ck_assert_int_eq(umcg_mutex_unlock(&m), 0);
	ck_assert_int_eq(umcg_mutex_unlock(&m), -EPERM);
	ck_assert_int_eq(other_thread(trylock_elsewhere, &m), 0);
	ck_assert_int_eq(umcg_mutex_trylock(&m), -EBUSY);
	ck_assert_int_eq(other_thread(unlock_elsewhere, &m), -EPERM);
	(void)copy;
	ck_assert_int_eq(errno, 1234);
}
END_TEST

START_TEST(test_mutex_destroy)
{
	struct umcg_mutex m;

	ck_assert_int_eq(umcg_mutex_init(&m), 0);
	ck_assert_int_eq(umcg_mutex_destroy(&m), 0);
	ck_assert_int_eq(umcg_mutex_lock(&m), -EINVAL);
	ck_assert_int_eq(umcg_mutex_destroy(&m), -EINVAL);
	ck_assert_int_eq(umcg_mutex_init(&m), 0);
	ck_assert_int_eq(umcg_mutex_lock(&m), 0);
	ck_assert_int_eq(umcg_mutex_unlock(&m), 0);
	ck_assert_int_eq(umcg_mutex_destroy(&m), 0);
}
END_TEST

START_TEST(test_cond_sem_misuse)
{
	struct umcg_cond zc, c = UMCG_COND_INIT;
	struct umcg_mutex zm, m = UMCG_MUTEX_INIT;
	struct umcg_sem zs, s;
	uint64_t past = h_now(CLOCK_MONOTONIC);

	memset(&zc, 0, sizeof(zc));
	memset(&zm, 0, sizeof(zm));
	memset(&zs, 0, sizeof(zs));
	errno = 4321;
	ck_assert_int_eq(umcg_cond_init(NULL), -EINVAL);
	ck_assert_int_eq(umcg_cond_wait(NULL, &m), -EINVAL);
	ck_assert_int_eq(umcg_cond_wait(&c, NULL), -EINVAL);
	ck_assert_int_eq(umcg_cond_wait(&zc, &m), -EINVAL);
	ck_assert_int_eq(umcg_cond_wait(&c, &zm), -EINVAL);
	ck_assert_int_eq(umcg_cond_timedwait(NULL, &m, 0), -EINVAL);
	ck_assert_int_eq(umcg_cond_signal(NULL), -EINVAL);
	ck_assert_int_eq(umcg_cond_signal(&zc), -EINVAL);
	ck_assert_int_eq(umcg_cond_broadcast(NULL), -EINVAL);
	ck_assert_int_eq(umcg_cond_broadcast(&zc), -EINVAL);
	ck_assert_int_eq(umcg_cond_destroy(NULL), -EINVAL);
	ck_assert_int_eq(umcg_cond_destroy(&zc), -EINVAL);
	/* A wait without the mutex held. */
	ck_assert_int_eq(umcg_cond_wait(&c, &m), -EPERM);
	ck_assert_int_eq(umcg_cond_timedwait(&c, &m, past), -EPERM);
	/* Timed out, with the mutex held again. */
	ck_assert_int_eq(umcg_mutex_lock(&m), 0);
	ck_assert_int_eq(umcg_cond_timedwait(&c, &m, past), -ETIMEDOUT);
	ck_assert_int_eq(umcg_cond_timedwait(&c, &m, h_now(CLOCK_MONOTONIC) + MS), -ETIMEDOUT);
	ck_assert_int_eq(umcg_mutex_lock(&m), -EDEADLK);
	ck_assert_int_eq(umcg_mutex_unlock(&m), 0);
	ck_assert_int_eq(umcg_cond_signal(&c), 0);
	ck_assert_int_eq(umcg_cond_broadcast(&c), 0);
	ck_assert_int_eq(umcg_cond_destroy(&c), 0);
	ck_assert_int_eq(umcg_cond_signal(&c), -EINVAL);

	ck_assert_int_eq(umcg_sem_init(NULL, 0), -EINVAL);
	ck_assert_int_eq(umcg_sem_init(&s, UMCG_SEM_VALUE_MAX + 1u), -EINVAL);
	ck_assert_int_eq(umcg_sem_wait(NULL), -EINVAL);
	ck_assert_int_eq(umcg_sem_wait(&zs), -EINVAL);
	ck_assert_int_eq(umcg_sem_trywait(&zs), -EINVAL);
	ck_assert_int_eq(umcg_sem_timedwait(&zs, 0), -EINVAL);
	ck_assert_int_eq(umcg_sem_post(NULL), -EINVAL);
	ck_assert_int_eq(umcg_sem_post(&zs), -EINVAL);
	ck_assert_int_eq(umcg_sem_getvalue(&zs), -EINVAL);
	ck_assert_int_eq(umcg_sem_destroy(&zs), -EINVAL);
	ck_assert_int_eq(umcg_sem_init(&s, 1), 0);
	ck_assert_int_eq(umcg_sem_trywait(&s), 0);
	ck_assert_int_eq(umcg_sem_trywait(&s), -EAGAIN);
	ck_assert_int_eq(umcg_sem_timedwait(&s, past), -ETIMEDOUT);
	ck_assert_int_eq(umcg_sem_timedwait(&s, h_now(CLOCK_MONOTONIC) + MS), -ETIMEDOUT);
	ck_assert_int_eq(umcg_sem_getvalue(&s), 0);
	ck_assert_int_eq(umcg_sem_init(&s, UMCG_SEM_VALUE_MAX), 0);
	ck_assert_int_eq(umcg_sem_post(&s), -EOVERFLOW);
	ck_assert_int_eq(umcg_sem_getvalue(&s), (int)UMCG_SEM_VALUE_MAX);
	ck_assert_int_eq(umcg_sem_timedwait(&s, past), 0);
	ck_assert_int_eq(umcg_sem_post(&s), 0);
	ck_assert_int_eq(umcg_sem_destroy(&s), 0);
	ck_assert_int_eq(umcg_sem_post(&s), -EINVAL);
	ck_assert_int_eq(errno, 4321);
}
END_TEST

/* Destroy with a waiter is -EBUSY and leaves the object working. */
static struct umcg_cond busy_cond = UMCG_COND_INIT;
static struct umcg_mutex busy_mutex = UMCG_MUTEX_INIT;
static struct umcg_sem busy_sem;
static atomic_int busy_go;

static void *busy_waiter(void *arg)
{
	(void)arg;
	EXPECT(umcg_mutex_lock(&busy_mutex) == 0, "lock");
	while (!LOAD(&busy_go))
		EXPECT(umcg_cond_wait(&busy_cond, &busy_mutex) == 0, "cond wait");
	EXPECT(umcg_mutex_unlock(&busy_mutex) == 0, "unlock");
	EXPECT(umcg_sem_wait(&busy_sem) == 0, "sem wait");
	return NULL;
}

START_TEST(test_destroy_busy)
{
	struct umcg_rt *rt = NULL;
	struct umcg_worker *w;
	pthread_t th = 0;

	ck_assert_int_eq(umcg_sem_init(&busy_sem, 0), 0);
	if (_i) {
		rt = rt_start(1, 0);
		ck_assert_int_eq(umcg_spawn(rt, &w, NULL, busy_waiter, NULL), 0);
	} else {
		th = h_thread(busy_waiter, NULL);
	}
	WAIT_UNTIL(QPEEK(busy_cond.head) != NULL);
	ck_assert_int_eq(umcg_cond_destroy(&busy_cond), -EBUSY);
	ck_assert_int_eq(umcg_mutex_lock(&busy_mutex), 0);
	STORE(&busy_go, 1);
	ck_assert_int_eq(umcg_cond_signal(&busy_cond), 0);
	ck_assert_int_eq(umcg_mutex_unlock(&busy_mutex), 0);
	WAIT_UNTIL(QPEEK(busy_sem.head) != NULL);
	ck_assert_int_eq(umcg_sem_destroy(&busy_sem), -EBUSY);
	ck_assert_int_eq(umcg_sem_post(&busy_sem), 0);
	if (_i) {
		ck_assert_int_eq(umcg_join(w, NULL), 0);
		rt_end(rt);
	} else {
		h_join(th);
	}
	ck_assert_int_eq(umcg_cond_destroy(&busy_cond), 0);
	ck_assert_int_eq(umcg_sem_destroy(&busy_sem), 0);
	ck_assert_int_eq(umcg_mutex_destroy(&busy_mutex), 0);
}
END_TEST

/* ---- a contended lock parks the worker; its server runs the holder ---- */

static struct umcg_mutex park_m = UMCG_MUTEX_INIT;
static atomic_int park_holder_in, park_waiter_in, park_done;

static void *park_holder(void *arg)
{
	(void)arg;
	EXPECT(umcg_mutex_lock(&park_m) == 0, "holder lock");
	STORE(&park_holder_in, 1);
	/* Until the waiter is queued: it parked, or we would never run. */
	YIELD_UNTIL(LOAD(&park_waiter_in) && QPEEK(park_m.head) != NULL);
	EXPECT(umcg_mutex_unlock(&park_m) == 0, "holder unlock");
	return NULL;
}

static void *park_waiter(void *arg)
{
	(void)arg;
	YIELD_UNTIL(LOAD(&park_holder_in));
	STORE(&park_waiter_in, 1);
	EXPECT(umcg_mutex_lock(&park_m) == 0, "waiter lock");
	EXPECT(umcg_mutex_unlock(&park_m) == 0, "waiter unlock");
	STORE(&park_done, 1);
	return NULL;
}

/* _i: 0 cooperative, 1 with 50 us slices. One server: a waiter that held
 * its thread would hold the only server, and the holder would never run. */
START_TEST(test_lock_parks)
{
	struct umcg_rt *rt = rt_start(1, _i ? 50000 : 0);
	struct umcg_worker *h, *w;
	struct umcg_worker_stats st;

	ck_assert_int_eq(umcg_spawn(rt, &h, NULL, park_holder, NULL), 0);
	ck_assert_int_eq(umcg_spawn(rt, &w, NULL, park_waiter, NULL), 0);
	ck_assert_int_eq(umcg_worker_stats(w, &st), 0);
	WAIT_UNTIL(LOAD(&park_done));
	ck_assert_int_eq(umcg_worker_stats(w, &st), 0);
	/* It parked: no kernel sleep (which would count as a block). */
	if (!_i)
		ck_assert_uint_eq(st.blocks, 0);
	ck_assert_int_eq(umcg_join(h, NULL), 0);
	ck_assert_int_eq(umcg_join(w, NULL), 0);
	rt_end(rt);
}
END_TEST

/* ---- FIFO: waiters get the mutex in the order they came --------------- */

#define FIFO_N 6
static struct umcg_mutex fifo_m = UMCG_MUTEX_INIT;
static atomic_int fifo_order[FIFO_N], fifo_next;

static void *fifo_worker(void *arg)
{
	int me = (int)(intptr_t)arg;

	EXPECT(umcg_mutex_lock(&fifo_m) == 0, "lock");
	STORE(&fifo_order[atomic_fetch_add(&fifo_next, 1)], me);
	EXPECT(umcg_mutex_unlock(&fifo_m) == 0, "unlock");
	return NULL;
}

/* _i: 0 workers of one runtime (one per CPU), 1 plain threads. */
START_TEST(test_mutex_fifo)
{
	struct umcg_rt *rt = _i ? NULL : rt_start(0, 0);
	struct umcg_worker *w[FIFO_N];
	pthread_t th[FIFO_N];
	void *tail;
	int i;

	ck_assert_int_eq(umcg_mutex_lock(&fifo_m), 0);
	for (i = 0; i < FIFO_N; i++) {
		tail = QPEEK(fifo_m.tail);
		if (rt)
			ck_assert_int_eq(
				umcg_spawn(rt, &w[i], NULL, fifo_worker, (void *)(intptr_t)i), 0);
		else
			th[i] = h_thread(fifo_worker, (void *)(intptr_t)i);
		/* Queued behind the one before (tail is the newest node). */
		WAIT_UNTIL(QPEEK(fifo_m.tail) != tail && QPEEK(fifo_m.tail) != NULL);
	}
	ck_assert_int_eq(umcg_mutex_unlock(&fifo_m), 0);
	for (i = 0; i < FIFO_N; i++) {
		if (rt)
			ck_assert_int_eq(umcg_join(w[i], NULL), 0);
		else
			h_join(th[i]);
	}
	for (i = 0; i < FIFO_N; i++)
		ck_assert_int_eq(LOAD(&fifo_order[i]), i);
	ck_assert_int_eq(umcg_mutex_destroy(&fifo_m), 0);
	if (rt)
		rt_end(rt);
}
END_TEST

/* ---- timed lock against a holder; the mutex works after ------------- */

static struct umcg_mutex tl_m = UMCG_MUTEX_INIT;
static atomic_int tl_held, tl_release, tl_timeouts;

static void *tl_holder(void *arg)
{
	(void)arg;
	EXPECT(umcg_mutex_lock(&tl_m) == 0, "lock");
	STORE(&tl_held, 1);
	if (umcg_self())
		YIELD_UNTIL(LOAD(&tl_release));
	else
		WAIT_UNTIL(LOAD(&tl_release));
	EXPECT(umcg_mutex_unlock(&tl_m) == 0, "unlock");
	return NULL;
}

static void *tl_waiter(void *arg)
{
	(void)arg;
	for (int i = 0; i < 3; i++) {
		uint64_t dl = h_now(CLOCK_MONOTONIC) + 2 * MS;

		EXPECT(umcg_mutex_timedlock(&tl_m, dl) == -ETIMEDOUT, "timedlock did not time out");
		EXPECT(h_now(CLOCK_MONOTONIC) >= dl, "timedlock returned before its deadline");
		atomic_fetch_add(&tl_timeouts, 1);
	}
	return NULL;
}

/* _i: 0 plain threads, 1 workers of one server. */
START_TEST(test_timedlock)
{
	struct umcg_rt *rt = _i ? rt_start(1, 0) : NULL;
	struct umcg_worker *wh = NULL, *ww = NULL;
	pthread_t th = 0, tw = 0;

	if (rt)
		ck_assert_int_eq(umcg_spawn(rt, &wh, NULL, tl_holder, NULL), 0);
	else
		th = h_thread(tl_holder, NULL);
	WAIT_UNTIL(LOAD(&tl_held));
	if (rt)
		ck_assert_int_eq(umcg_spawn(rt, &ww, NULL, tl_waiter, NULL), 0);
	else
		tw = h_thread(tl_waiter, NULL);
	WAIT_UNTIL(LOAD(&tl_timeouts) == 3);
	/* Nobody waits now: the waiters bit went with the last one. */
	ck_assert_ptr_null(QPEEK(tl_m.head));
	ck_assert_uint_eq(QPEEK(tl_m.owner) & 0x80000000u, 0);
	STORE(&tl_release, 1);
	if (rt) {
		ck_assert_int_eq(umcg_join(wh, NULL), 0);
		ck_assert_int_eq(umcg_join(ww, NULL), 0);
		rt_end(rt);
	} else {
		h_join(th);
		h_join(tw);
	}
	ck_assert_int_eq(umcg_mutex_timedlock(&tl_m, 0), 0);
	ck_assert_int_eq(umcg_mutex_unlock(&tl_m), 0);
	ck_assert_int_eq(umcg_mutex_destroy(&tl_m), 0);
}
END_TEST

/* ---- the program's own park permits are left alone ------------------ */

static struct umcg_sem perm_sem;
static atomic_int perm_unparked;
static atomic_ulong perm_progress;

static void *perm_worker(void *arg)
{
	(void)arg;
	/* A permit of ours survives a sync wait... */
	EXPECT(umcg_unpark(umcg_self()) == 0, "unpark self");
	EXPECT(umcg_sem_wait(&perm_sem) == 0, "sem wait");
	EXPECT(umcg_park() == 0, "park");
	/* ...and sync wake-ups leave none behind: this park waits for the
	 * main thread's unpark, which comes after perm_unparked. */
	for (int i = 0; i < 50; i++) {
		EXPECT(umcg_sem_wait(&perm_sem) == 0, "sem wait");
		BUMP(&perm_progress);
	}
	EXPECT(umcg_park() == 0, "park");
	EXPECT(LOAD(&perm_unparked), "umcg_park() returned on a permit the sync layer left");
	return NULL;
}

START_TEST(test_permits_untouched)
{
	struct umcg_rt *rt = rt_start(1, 0);
	struct umcg_worker *w;
	int i;

	ck_assert_int_eq(umcg_sem_init(&perm_sem, 0), 0);
	ck_assert_int_eq(umcg_spawn(rt, &w, NULL, perm_worker, NULL), 0);
	WAIT_UNTIL(QPEEK(perm_sem.head) != NULL);
	ck_assert_int_eq(umcg_sem_post(&perm_sem), 0);
	for (i = 0; i < 50; i++) {
		WAIT_UNTIL(QPEEK(perm_sem.head) != NULL);
		ck_assert_int_eq(umcg_sem_post(&perm_sem), 0);
	}
	WAIT_UNTIL(PEEK(&perm_progress) == 50);
	h_sleep_us(20000);
	STORE(&perm_unparked, 1);
	ck_assert_int_eq(umcg_unpark(w), 0);
	ck_assert_int_eq(umcg_join(w, NULL), 0);
	rt_end(rt);
}
END_TEST

/* ---- waiters that exit and are joined right after their wake-up ----- */

static struct umcg_sem life_sem;

static void *life_worker(void *arg)
{
	(void)arg;
	EXPECT(umcg_sem_wait(&life_sem) == 0, "sem wait");
	return NULL;
}

static void *life_poster(void *arg)
{
	unsigned long n = (unsigned long)(uintptr_t)arg;

	for (unsigned long i = 0; i < n; i++) {
		while (umcg_sem_post(&life_sem))
			;
	}
	return NULL;
}

/* The posts come from a plain thread while the main thread joins each
 * woken worker at once, which puts the waker's unpark beside the join's
 * free (the holds of runtime.c keep that safe; the window is a few
 * instructions wide, so this exercises it rather than proves it). _i: 0
 * one server, 1 one per CPU. */
START_TEST(test_waiter_freed_after_wake)
{
	struct umcg_rt *rt = rt_start(_i ? 0 : 1, 0);
	unsigned long n = 300 * h_stress(), i;
	struct umcg_worker *w;
	pthread_t th;

	ck_assert_int_eq(umcg_sem_init(&life_sem, 0), 0);
	th = h_thread(life_poster, (void *)(uintptr_t)n);
	for (i = 0; i < n; i++) {
		ck_assert_int_eq(umcg_spawn(rt, &w, NULL, life_worker, NULL), 0);
		ck_assert_int_eq(umcg_join(w, NULL), 0);
	}
	h_join(th);
	ck_assert_int_eq(umcg_sem_getvalue(&life_sem), 0);
	rt_end(rt);
}
END_TEST

/* ---- stress: workers and plain threads on one mutex, cond, sem ------- */

#define ST_WORKERS_MAX 2000
#define ST_THREADS 4
#define ST_ALL_MAX (ST_WORKERS_MAX + ST_THREADS)

static struct umcg_mutex st_m = UMCG_MUTEX_INIT;
static struct umcg_cond st_c = UMCG_COND_INIT;
static struct umcg_sem st_s;
static unsigned long st_counter; /* under st_m */
static unsigned long st_queue; /* items, under st_m */
static unsigned long st_rounds;
static atomic_ulong st_progress[ST_ALL_MAX];
static atomic_ulong st_consumed;

/*
 * Each participant, per round: increments the counter under the mutex
 * (half the time through a timed lock with a generous deadline), produces
 * an item (signal), consumes one (cond wait, with a timeout now and then
 * that then retries), and passes the semaphore's unit on (wait, post).
 * Production precedes consumption in every participant, so there is
 * always an item for each consumer in the end.
 */
static void *st_main(void *arg)
{
	int me = (int)(intptr_t)arg;
	uint32_t seed = (uint32_t)me * 2654435761u + 1;
	unsigned long r;
	int ret;

	for (r = 0; r < st_rounds; r++) {
		if (h_rand(&seed) & 1)
			ret = umcg_mutex_timedlock(&st_m, h_now(CLOCK_MONOTONIC) + 60 * SEC);
		else
			ret = umcg_mutex_lock(&st_m);
		EXPECT(ret == 0, "lock: %d", ret);
		st_counter++;
		st_queue++;
		EXPECT(umcg_cond_signal(&st_c) == 0, "signal");
		EXPECT(umcg_mutex_unlock(&st_m) == 0, "unlock");

		EXPECT(umcg_mutex_lock(&st_m) == 0, "lock");
		while (st_queue == 0) {
			if (h_rand(&seed) % 8 == 0)
				ret = umcg_cond_timedwait(&st_c, &st_m,
							  h_now(CLOCK_MONOTONIC) + MS);
			else
				ret = umcg_cond_wait(&st_c, &st_m);
			EXPECT(ret == 0 || ret == -ETIMEDOUT, "cond wait: %d", ret);
		}
		st_queue--;
		EXPECT(umcg_mutex_unlock(&st_m) == 0, "unlock");
		atomic_fetch_add_explicit(&st_consumed, 1, memory_order_relaxed);

		if (h_rand(&seed) % 4 == 0)
			ret = umcg_sem_timedwait(&st_s, h_now(CLOCK_MONOTONIC) + 60 * SEC);
		else
			ret = umcg_sem_wait(&st_s);
		EXPECT(ret == 0, "sem wait: %d", ret);
		if (h_rand(&seed) % 16 == 0) {
			if (umcg_self())
				EXPECT(umcg_yield() == 0, "yield");
			else
				sched_yield();
		}
		EXPECT(umcg_sem_post(&st_s) == 0, "sem post");
		BUMP(&st_progress[me]);
	}
	return NULL;
}

/*
 * _i: 0 cooperative, 1 with 50 us slices: 64 workers, 200 rounds each;
 * 2 and 3 the same with 2000 workers, 10 rounds each. Servers one per CPU.
 */
START_TEST(test_stress)
{
	struct umcg_rt *rt = rt_start(0, _i % 2 ? 50000 : 0);
	int nw = _i >= 2 ? ST_WORKERS_MAX : 64, all = nw + ST_THREADS, i;
	struct umcg_worker **w = calloc((size_t)nw, sizeof(*w));
	pthread_t th[ST_THREADS];
	struct h_watchdog *wd;

	ck_assert_ptr_nonnull(w);
	st_rounds = (_i >= 2 ? 10 : 200) * h_stress();
	ck_assert_int_eq(umcg_sem_init(&st_s, 3), 0);
	wd = watchdog_start("sync stress", st_progress, (size_t)all, (unsigned long)all * st_rounds,
			    rt);
	for (i = 0; i < nw; i++)
		ck_assert_int_eq(umcg_spawn(rt, &w[i], NULL, st_main, (void *)(intptr_t)i), 0);
	for (i = 0; i < ST_THREADS; i++)
		th[i] = h_thread(st_main, (void *)(intptr_t)(nw + i));
	for (i = 0; i < nw; i++)
		ck_assert_int_eq(umcg_join(w[i], NULL), 0);
	for (i = 0; i < ST_THREADS; i++)
		h_join(th[i]);
	h_watchdog_stop(wd);
	ck_assert_uint_eq(st_counter, (unsigned long)all * st_rounds);
	ck_assert_uint_eq(PEEK(&st_consumed), (unsigned long)all * st_rounds);
	ck_assert_uint_eq(st_queue, 0);
	ck_assert_int_eq(umcg_sem_getvalue(&st_s), 3);
	ck_assert_int_eq(umcg_mutex_destroy(&st_m), 0);
	ck_assert_int_eq(umcg_cond_destroy(&st_c), 0);
	ck_assert_int_eq(umcg_sem_destroy(&st_s), 0);
	free(w);
	rt_end(rt);
}
END_TEST

/* ---- broadcast wakes every waiter ------------------------------------ */

#define BC_N 16
static struct umcg_mutex bc_m = UMCG_MUTEX_INIT;
static struct umcg_cond bc_c = UMCG_COND_INIT;
static int bc_gen, bc_waiting; /* under bc_m */
static atomic_int bc_woken;

static void *bc_waiter(void *arg)
{
	int gen;

	(void)arg;
	EXPECT(umcg_mutex_lock(&bc_m) == 0, "lock");
	gen = bc_gen;
	bc_waiting++;
	while (bc_gen == gen)
		EXPECT(umcg_cond_wait(&bc_c, &bc_m) == 0, "wait");
	EXPECT(umcg_mutex_unlock(&bc_m) == 0, "unlock");
	atomic_fetch_add(&bc_woken, 1);
	return NULL;
}

START_TEST(test_broadcast)
{
	struct umcg_rt *rt = rt_start(0, 0);
	struct umcg_worker *w[BC_N];
	pthread_t th[2];
	int i, n;

	for (i = 0; i < BC_N; i++)
		ck_assert_int_eq(umcg_spawn(rt, &w[i], NULL, bc_waiter, NULL), 0);
	for (i = 0; i < 2; i++)
		th[i] = h_thread(bc_waiter, NULL);
	do {
		ck_assert_int_eq(umcg_mutex_lock(&bc_m), 0);
		n = bc_waiting;
		ck_assert_int_eq(umcg_mutex_unlock(&bc_m), 0);
		if (n < BC_N + 2)
			h_sleep_us(1000);
	} while (n < BC_N + 2);
	ck_assert_int_eq(LOAD(&bc_woken), 0);
	ck_assert_int_eq(umcg_mutex_lock(&bc_m), 0);
	bc_gen++;
	ck_assert_int_eq(umcg_cond_broadcast(&bc_c), 0);
	ck_assert_int_eq(umcg_mutex_unlock(&bc_m), 0);
	for (i = 0; i < BC_N; i++)
		ck_assert_int_eq(umcg_join(w[i], NULL), 0);
	for (i = 0; i < 2; i++)
		h_join(th[i]);
	ck_assert_int_eq(LOAD(&bc_woken), BC_N + 2);
	ck_assert_ptr_null(QPEEK(bc_c.head));
	rt_end(rt);
}
END_TEST

/* ==== channels ============================================================ */

START_TEST(test_chan_misuse)
{
	struct umcg_chan *c = NULL, *z = NULL;
	struct umcg_chan_op ops[UMCG_CHAN_SELECT_MAX + 1];
	uint64_t past = h_now(CLOCK_MONOTONIC);
	int v = 7, r = 0;

	errno = 99;
	ck_assert_int_eq(umcg_chan_create(NULL, 1, 4), -EINVAL);
	ck_assert_int_eq(umcg_chan_create(&c, SIZE_MAX / 2, 4), -EINVAL);
	ck_assert_ptr_null(c);
	ck_assert_int_eq(umcg_chan_send(NULL, &v), -EINVAL);
	ck_assert_int_eq(umcg_chan_recv(NULL, &v), -EINVAL);
	ck_assert_int_eq(umcg_chan_try_send(NULL, &v), -EINVAL);
	ck_assert_int_eq(umcg_chan_try_recv(NULL, &v), -EINVAL);
	ck_assert_int_eq(umcg_chan_timed_send(NULL, &v, past), -EINVAL);
	ck_assert_int_eq(umcg_chan_timed_recv(NULL, &v, past), -EINVAL);
	ck_assert_int_eq(umcg_chan_close(NULL), -EINVAL);
	ck_assert_int_eq(umcg_chan_destroy(NULL), -EINVAL);
	ck_assert_int_eq(umcg_chan_select(NULL, 1, 0), -EINVAL);

	ck_assert_int_eq(umcg_chan_create(&c, 1, sizeof(int)), 0);
	ck_assert_int_eq(umcg_chan_send(c, NULL), -EINVAL);
	ck_assert_int_eq(umcg_chan_recv(c, NULL), -EINVAL);
	memset(ops, 0, sizeof(ops));
	ck_assert_int_eq(umcg_chan_select(ops, 0, 0), -EINVAL);
	ops[0] = (struct umcg_chan_op){ .chan = c, .op = 3, .elem = &v };
	ck_assert_int_eq(umcg_chan_select(ops, 1, 0), -EINVAL);
	for (int i = 0; i <= UMCG_CHAN_SELECT_MAX; i++)
		ops[i] = (struct umcg_chan_op){ .chan = c, .op = UMCG_CHAN_RECV, .elem = &r };
	ck_assert_int_eq(umcg_chan_select(ops, UMCG_CHAN_SELECT_MAX + 1, 0), -EINVAL);
	/* 64 receives of an empty channel: nothing ready. */
	ck_assert_int_eq(umcg_chan_select(ops, UMCG_CHAN_SELECT_MAX, 0), -EAGAIN);
	ck_assert_int_eq(umcg_chan_select(ops, 2, past), -ETIMEDOUT);
	/* Only NULL channels: never ready. */
	ops[0].chan = NULL;
	ck_assert_int_eq(umcg_chan_select(ops, 1, 0), -EAGAIN);

	ck_assert_int_eq(umcg_chan_try_recv(c, &r), -EAGAIN);
	ck_assert_int_eq(umcg_chan_timed_recv(c, &r, past), -ETIMEDOUT);
	ck_assert_int_eq(umcg_chan_timed_recv(c, &r, 0), -ETIMEDOUT);
	ck_assert_int_eq(umcg_chan_timed_recv(c, &r, h_now(CLOCK_MONOTONIC) + MS), -ETIMEDOUT);
	ck_assert_int_eq(umcg_chan_try_send(c, &v), 0);
	ck_assert_int_eq(umcg_chan_try_send(c, &v), -EAGAIN);
	ck_assert_int_eq(umcg_chan_timed_send(c, &v, h_now(CLOCK_MONOTONIC) + MS), -ETIMEDOUT);
	ck_assert_int_eq(umcg_chan_close(c), 0);
	ck_assert_int_eq(umcg_chan_close(c), -EPIPE);
	ck_assert_int_eq(umcg_chan_send(c, &v), -EPIPE);
	ck_assert_int_eq(umcg_chan_try_send(c, &v), -EPIPE);
	/* What was sent before the close is still there. */
	ck_assert_int_eq(umcg_chan_recv(c, &r), 0);
	ck_assert_int_eq(r, 7);
	ck_assert_int_eq(umcg_chan_recv(c, &r), -EPIPE);
	ck_assert_int_eq(umcg_chan_try_recv(c, &r), -EPIPE);
	ck_assert_int_eq(umcg_chan_destroy(c), 0);

	/* Elements of size 0 need no buffer. */
	ck_assert_int_eq(umcg_chan_create(&z, 2, 0), 0);
	ck_assert_int_eq(umcg_chan_send(z, NULL), 0);
	ck_assert_int_eq(umcg_chan_recv(z, NULL), 0);
	ck_assert_int_eq(umcg_chan_destroy(z), 0);
	ck_assert_int_eq(errno, 99);
}
END_TEST

/* A rendezvous between a worker and a plain thread, both ways. */
static struct umcg_chan *rv_ping, *rv_pong;

static void *rv_echo(void *arg)
{
	unsigned long n = (unsigned long)(uintptr_t)arg, v;

	for (unsigned long i = 0; i < n; i++) {
		EXPECT(umcg_chan_recv(rv_ping, &v) == 0, "recv");
		EXPECT(v == i, "rendezvous: got %lu, want %lu", v, i);
		v = ~v;
		EXPECT(umcg_chan_send(rv_pong, &v) == 0, "send");
	}
	return NULL;
}

/* _i: 0 worker echoes for a thread; 1 thread echoes for a worker; 2 two
 * workers of one server. */
static void *rv_driver(void *arg)
{
	unsigned long n = (unsigned long)(uintptr_t)arg, v;

	for (unsigned long i = 0; i < n; i++) {
		v = i;
		EXPECT(umcg_chan_send(rv_ping, &v) == 0, "send");
		EXPECT(umcg_chan_recv(rv_pong, &v) == 0, "recv");
		EXPECT(v == ~i, "echo: got %lx", v);
	}
	return NULL;
}

START_TEST(test_chan_rendezvous)
{
	struct umcg_rt *rt = rt_start(_i == 2 ? 1 : 0, 0);
	unsigned long n = 2000 * h_stress();
	struct umcg_worker *w1, *w2 = NULL;
	pthread_t th = 0;

	ck_assert_int_eq(umcg_chan_create(&rv_ping, 0, sizeof(unsigned long)), 0);
	ck_assert_int_eq(umcg_chan_create(&rv_pong, 0, sizeof(unsigned long)), 0);
	ck_assert_int_eq(
		umcg_spawn(rt, &w1, NULL, _i == 1 ? rv_driver : rv_echo, (void *)(uintptr_t)n), 0);
	if (_i == 2)
		ck_assert_int_eq(umcg_spawn(rt, &w2, NULL, rv_driver, (void *)(uintptr_t)n), 0);
	else
		th = h_thread(_i == 1 ? rv_echo : rv_driver, (void *)(uintptr_t)n);
	ck_assert_int_eq(umcg_join(w1, NULL), 0);
	if (w2)
		ck_assert_int_eq(umcg_join(w2, NULL), 0);
	else
		h_join(th);
	ck_assert_int_eq(umcg_chan_destroy(rv_ping), 0);
	ck_assert_int_eq(umcg_chan_destroy(rv_pong), 0);
	rt_end(rt);
}
END_TEST

/* ---- close while senders and receivers wait ------------------------- */

static struct umcg_chan *cl_chan;
static atomic_int cl_epipe, cl_other;

static void *cl_receiver(void *arg)
{
	int v;

	(void)arg;
	if (umcg_chan_recv(cl_chan, &v) == -EPIPE)
		atomic_fetch_add(&cl_epipe, 1);
	else
		atomic_fetch_add(&cl_other, 1);
	return NULL;
}

static void *cl_sender(void *arg)
{
	int v = 1;

	(void)arg;
	if (umcg_chan_send(cl_chan, &v) == -EPIPE)
		atomic_fetch_add(&cl_epipe, 1);
	else
		atomic_fetch_add(&cl_other, 1);
	return NULL;
}

static size_t queue_len(void *const *headp)
{
	size_t n = 0;

	/* The node's first member is its next pointer (sync.c). */
	for (void *p = QPEEK(*headp); p; p = __atomic_load_n((void *const *)p, __ATOMIC_ACQUIRE))
		n++;
	return n;
}

/* The channel's layout up to its queues, as sync.c has it. */
struct chan_peek {
	uint32_t magic, lock, closed;
	size_t cap, elem, head, count;
	void *sendq_head, *sendq_tail, *recvq_head, *recvq_tail;
};

/* _i: 0 receivers on an empty rendezvous channel, 1 senders on a full
 * buffered one. Half workers (one per CPU's server), half threads. */
START_TEST(test_chan_close_wakes)
{
	struct umcg_rt *rt = rt_start(0, 0);
	struct umcg_worker *w[8];
	pthread_t th[8];
	struct chan_peek *pk;
	int i, v = 0;

	ck_assert_int_eq(umcg_chan_create(&cl_chan, _i ? 2 : 0, sizeof(int)), 0);
	pk = (struct chan_peek *)(void *)cl_chan;
	if (_i) {
		ck_assert_int_eq(umcg_chan_send(cl_chan, &v), 0);
		ck_assert_int_eq(umcg_chan_send(cl_chan, &v), 0);
	}
	for (i = 0; i < 8; i++) {
		ck_assert_int_eq(umcg_spawn(rt, &w[i], NULL, _i ? cl_sender : cl_receiver, NULL),
				 0);
		th[i] = h_thread(_i ? cl_sender : cl_receiver, NULL);
	}
	WAIT_UNTIL(queue_len(_i ? &pk->sendq_head : &pk->recvq_head) == 16);
	ck_assert_int_eq(umcg_chan_destroy(cl_chan), -EBUSY);
	ck_assert_int_eq(umcg_chan_close(cl_chan), 0);
	for (i = 0; i < 8; i++) {
		ck_assert_int_eq(umcg_join(w[i], NULL), 0);
		h_join(th[i]);
	}
	ck_assert_int_eq(LOAD(&cl_epipe), 16);
	ck_assert_int_eq(LOAD(&cl_other), 0);
	if (_i) {
		/* The two sent before the close are still there. */
		ck_assert_int_eq(umcg_chan_recv(cl_chan, &v), 0);
		ck_assert_int_eq(umcg_chan_recv(cl_chan, &v), 0);
	}
	ck_assert_int_eq(umcg_chan_recv(cl_chan, &v), -EPIPE);
	ck_assert_int_eq(umcg_chan_destroy(cl_chan), 0);
	rt_end(rt);
}
END_TEST

/* ---- select ------------------------------------------------------------ */

/* Two channels always ready: each is picked about half the time. The
 * bound (40 % of 10000) is about 20 standard deviations from the mean. */
START_TEST(test_select_fair)
{
	struct umcg_chan *a, *b;
	struct umcg_chan_op ops[2];
	unsigned long n = 10000, hits[2] = { 0, 0 };
	int v = 1, r, i;

	ck_assert_int_eq(umcg_chan_create(&a, 4, sizeof(int)), 0);
	ck_assert_int_eq(umcg_chan_create(&b, 4, sizeof(int)), 0);
	ck_assert_int_eq(umcg_chan_send(a, &v), 0);
	ck_assert_int_eq(umcg_chan_send(b, &v), 0);
	for (unsigned long k = 0; k < n; k++) {
		ops[0] = (struct umcg_chan_op){ .chan = a, .op = UMCG_CHAN_RECV, .elem = &r };
		ops[1] = (struct umcg_chan_op){ .chan = b, .op = UMCG_CHAN_RECV, .elem = &r };
		i = umcg_chan_select(ops, 2, 0);
		ck_assert(i == 0 || i == 1);
		ck_assert_int_eq(ops[i].result, 0);
		hits[i]++;
		/* Put it back: both stay ready. */
		ck_assert_int_eq(umcg_chan_send(i ? b : a, &v), 0);
	}
	ck_assert_uint_ge(hits[0], n * 4 / 10);
	ck_assert_uint_ge(hits[1], n * 4 / 10);
	ck_assert_int_eq(umcg_chan_destroy(a), 0);
	ck_assert_int_eq(umcg_chan_destroy(b), 0);
}
END_TEST

static struct umcg_chan *sw_a, *sw_b, *sw_c;
static atomic_int sw_ret, sw_val, sw_queued;

/* Waits on a receive of A, a receive of B and a send on C (full). */
static void *sw_waiter(void *arg)
{
	struct umcg_chan_op ops[3];
	int ra = 0, rb = 0, vc = 5;
	uint64_t dl = (uint64_t)(uintptr_t)arg;

	ops[0] = (struct umcg_chan_op){ .chan = sw_a, .op = UMCG_CHAN_RECV, .elem = &ra };
	ops[1] = (struct umcg_chan_op){ .chan = sw_b, .op = UMCG_CHAN_RECV, .elem = &rb };
	ops[2] = (struct umcg_chan_op){ .chan = sw_c, .op = UMCG_CHAN_SEND, .elem = &vc };
	STORE(&sw_queued, 1);
	STORE(&sw_ret,
	      umcg_chan_select(ops, 3, dl ? h_now(CLOCK_MONOTONIC) + dl : UMCG_CHAN_FOREVER));
	STORE(&sw_val, rb);
	return NULL;
}

/* _i: 0 worker, 1 plain thread; 2 and 3 the same with a 2 ms deadline
 * that passes. The loser nodes come off their channels: destroying all
 * three works afterwards. */
START_TEST(test_select_waits)
{
	struct umcg_rt *rt = rt_start(1, 0);
	bool timed = _i >= 2, worker = _i % 2 == 0;
	struct umcg_worker *w = NULL;
	pthread_t th = 0;
	void *arg = (void *)(uintptr_t)(timed ? 2 * MS : 0);
	struct chan_peek *pa, *pb, *pc;
	int v = 42;

	ck_assert_int_eq(umcg_chan_create(&sw_a, 0, sizeof(int)), 0);
	ck_assert_int_eq(umcg_chan_create(&sw_b, 1, sizeof(int)), 0);
	ck_assert_int_eq(umcg_chan_create(&sw_c, 1, sizeof(int)), 0);
	ck_assert_int_eq(umcg_chan_send(sw_c, &v), 0); /* C is full */
	pa = (struct chan_peek *)(void *)sw_a;
	pb = (struct chan_peek *)(void *)sw_b;
	pc = (struct chan_peek *)(void *)sw_c;
	STORE(&sw_ret, 1000);
	if (worker)
		ck_assert_int_eq(umcg_spawn(rt, &w, NULL, sw_waiter, arg), 0);
	else
		th = h_thread(sw_waiter, arg);
	if (!timed) {
		WAIT_UNTIL(queue_len(&pa->recvq_head) == 1 && queue_len(&pb->recvq_head) == 1 &&
			   queue_len(&pc->sendq_head) == 1);
		ck_assert_int_eq(umcg_chan_send(sw_b, &v), 0);
	}
	if (worker)
		ck_assert_int_eq(umcg_join(w, NULL), 0);
	else
		h_join(th);
	if (timed) {
		ck_assert_int_eq(LOAD(&sw_ret), -ETIMEDOUT);
	} else {
		ck_assert_int_eq(LOAD(&sw_ret), 1);
		ck_assert_int_eq(LOAD(&sw_val), 42);
	}
	ck_assert_uint_eq(queue_len(&pa->recvq_head), 0);
	ck_assert_uint_eq(queue_len(&pb->recvq_head), 0);
	ck_assert_uint_eq(queue_len(&pc->sendq_head), 0);
	/* The send on C never happened: its element is still the first. */
	ck_assert_int_eq(umcg_chan_try_recv(sw_c, &v), 0);
	ck_assert_int_eq(v, 42);
	ck_assert_int_eq(umcg_chan_try_recv(sw_c, &v), -EAGAIN);
	ck_assert_int_eq(umcg_chan_destroy(sw_a), 0);
	ck_assert_int_eq(umcg_chan_destroy(sw_b), 0);
	ck_assert_int_eq(umcg_chan_destroy(sw_c), 0);
	rt_end(rt);
}
END_TEST

/* Two parties each select {send on C, receive on C} on one rendezvous
 * channel: they must pair with each other, never with themselves. */
static struct umcg_chan *self_c;

static void *self_party(void *arg)
{
	int me = (int)(intptr_t)arg, got = -1, i;
	struct umcg_chan_op ops[2] = {
		{ .chan = self_c, .op = UMCG_CHAN_SEND, .elem = &me },
		{ .chan = self_c, .op = UMCG_CHAN_RECV, .elem = &got },
	};

	i = umcg_chan_select(ops, 2, UMCG_CHAN_FOREVER);
	EXPECT(i == 0 || i == 1, "select: %d", i);
	if (i == 1)
		EXPECT(got == !me, "received %d, from itself", got);
	return (void *)(intptr_t)i;
}

START_TEST(test_select_not_self)
{
	struct umcg_rt *rt = rt_start(1, 0);
	struct umcg_worker *w[2];
	void *r0, *r1;

	ck_assert_int_eq(umcg_chan_create(&self_c, 0, sizeof(int)), 0);
	for (int i = 0; i < 2; i++)
		ck_assert_int_eq(umcg_spawn(rt, &w[i], NULL, self_party, (void *)(intptr_t)i), 0);
	ck_assert_int_eq(umcg_join(w[0], &r0), 0);
	ck_assert_int_eq(umcg_join(w[1], &r1), 0);
	/* One sent, the other received. */
	ck_assert_int_eq((int)(intptr_t)r0 + (int)(intptr_t)r1, 1);
	ck_assert_int_eq(umcg_chan_destroy(self_c), 0);
	rt_end(rt);
}
END_TEST

/* ---- channel stress --------------------------------------------------- */

/*
 * Producers (workers and threads) send (id, seq) pairs into one of two
 * channels, chosen by a select of both sends (now and then with a
 * deadline, retried on -ETIMEDOUT); consumers take them with a select of
 * both receives, or a plain or timed receive of one. Each consumer checks
 * that every producer's sequence numbers grow per channel (FIFO), and the
 * totals must come out exact. After the producers finish, both channels
 * are closed, and the consumers stop at -EPIPE.
 */
#define CS_PROD 24
#define CS_CONS 12
#define CS_THREADS 4 /* of the producers and of the consumers */

struct cs_msg {
	uint32_t prod, seq;
};

static struct umcg_chan *cs_ch[2];
static unsigned long cs_per_prod;
static atomic_ulong cs_progress[CS_PROD + CS_CONS];
static atomic_ulong cs_received, cs_sum;

static void *cs_producer(void *arg)
{
	int me = (int)(intptr_t)arg, i;
	uint32_t seed = (uint32_t)me * 7919u + 3;
	struct cs_msg m = { .prod = (uint32_t)me };
	struct umcg_chan_op ops[2];

	for (unsigned long s = 0; s < cs_per_prod; s++) {
		m.seq = (uint32_t)s;
		for (;;) {
			ops[0] = (struct umcg_chan_op){ .chan = cs_ch[0],
							.op = UMCG_CHAN_SEND,
							.elem = &m };
			ops[1] = (struct umcg_chan_op){ .chan = cs_ch[1],
							.op = UMCG_CHAN_SEND,
							.elem = &m };
			i = umcg_chan_select(ops, 2,
					     h_rand(&seed) % 8 ? UMCG_CHAN_FOREVER :
								 h_now(CLOCK_MONOTONIC) + MS);
			if (i == -ETIMEDOUT)
				continue;
			EXPECT(i == 0 || i == 1, "producer select: %d", i);
			EXPECT(ops[i].result == 0, "send result %d", ops[i].result);
			break;
		}
		BUMP(&cs_progress[me]);
	}
	return NULL;
}

static void *cs_consumer(void *arg)
{
	int me = (int)(intptr_t)arg, i, ret, open = 3;
	uint32_t seed = (uint32_t)me * 104729u + 5;
	uint32_t last[2][CS_PROD];
	struct cs_msg m[2];
	struct umcg_chan_op ops[2];

	memset(last, 0xff, sizeof(last));
	while (open) {
		switch (h_rand(&seed) % 4) {
		case 0:
			i = (open & 1) ? 0 : 1;
			ret = umcg_chan_recv(cs_ch[i], &m[i]);
			break;
		case 1:
			i = (open & 2) ? 1 : 0;
			ret = umcg_chan_timed_recv(cs_ch[i], &m[i], h_now(CLOCK_MONOTONIC) + MS);
			if (ret == -ETIMEDOUT)
				continue;
			break;
		default:
			ops[0] = (struct umcg_chan_op){ .chan = (open & 1) ? cs_ch[0] : NULL,
							.op = UMCG_CHAN_RECV,
							.elem = &m[0] };
			ops[1] = (struct umcg_chan_op){ .chan = (open & 2) ? cs_ch[1] : NULL,
							.op = UMCG_CHAN_RECV,
							.elem = &m[1] };
			i = umcg_chan_select(ops, 2, UMCG_CHAN_FOREVER);
			EXPECT(i == 0 || i == 1, "consumer select: %d", i);
			ret = ops[i].result;
			break;
		}
		if (ret == -EPIPE) {
			open &= ~(1 << i);
			continue;
		}
		EXPECT(ret == 0, "receive: %d", ret);
		EXPECT(m[i].prod < CS_PROD, "bad producer %u", m[i].prod);
		EXPECT(last[i][m[i].prod] == UINT32_MAX || m[i].seq > last[i][m[i].prod],
		       "producer %u: seq %u after %u on channel %d", m[i].prod, m[i].seq,
		       last[i][m[i].prod], i);
		last[i][m[i].prod] = m[i].seq;
		atomic_fetch_add_explicit(&cs_sum, m[i].seq, memory_order_relaxed);
		atomic_fetch_add_explicit(&cs_received, 1, memory_order_relaxed);
		BUMP(&cs_progress[CS_PROD + me]);
	}
	return NULL;
}

/* _i: capacity 0 and 4, each cooperative and with 50 us slices. */
START_TEST(test_chan_stress)
{
	struct umcg_rt *rt = rt_start(0, _i % 2 ? 50000 : 0);
	size_t cap = _i >= 2 ? 4 : 0;
	struct umcg_worker *w[CS_PROD + CS_CONS];
	pthread_t th[CS_PROD + CS_CONS];
	struct h_watchdog *wd;
	unsigned long total;
	int i;

	cs_per_prod = 300 * h_stress();
	total = CS_PROD * cs_per_prod;
	for (i = 0; i < 2; i++)
		ck_assert_int_eq(umcg_chan_create(&cs_ch[i], cap, sizeof(struct cs_msg)), 0);
	wd = watchdog_start("channel stress", cs_progress, CS_PROD + CS_CONS, 2 * total, rt);
	for (i = 0; i < CS_CONS; i++) {
		if (i < CS_THREADS)
			th[CS_PROD + i] = h_thread(cs_consumer, (void *)(intptr_t)i);
		else
			ck_assert_int_eq(umcg_spawn(rt, &w[CS_PROD + i], NULL, cs_consumer,
						    (void *)(intptr_t)i),
					 0);
	}
	for (i = 0; i < CS_PROD; i++) {
		if (i < CS_THREADS)
			th[i] = h_thread(cs_producer, (void *)(intptr_t)i);
		else
			ck_assert_int_eq(
				umcg_spawn(rt, &w[i], NULL, cs_producer, (void *)(intptr_t)i), 0);
	}
	for (i = 0; i < CS_PROD; i++) {
		if (i < CS_THREADS)
			h_join(th[i]);
		else
			ck_assert_int_eq(umcg_join(w[i], NULL), 0);
	}
	ck_assert_int_eq(umcg_chan_close(cs_ch[0]), 0);
	ck_assert_int_eq(umcg_chan_close(cs_ch[1]), 0);
	for (i = 0; i < CS_CONS; i++) {
		if (i < CS_THREADS)
			h_join(th[CS_PROD + i]);
		else
			ck_assert_int_eq(umcg_join(w[CS_PROD + i], NULL), 0);
	}
	h_watchdog_stop(wd);
	ck_assert_uint_eq(PEEK(&cs_received), total);
	ck_assert_uint_eq(PEEK(&cs_sum), CS_PROD * (cs_per_prod * (cs_per_prod - 1) / 2));
	for (i = 0; i < 2; i++)
		ck_assert_int_eq(umcg_chan_destroy(cs_ch[i]), 0);
	rt_end(rt);
}
END_TEST

static Suite *sync_suite(void)
{
	Suite *s = suite_create("sync");
	TCase *tc;

	tc = tcase_create("misuse");
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_mutex_misuse);
	tcase_add_test(tc, test_mutex_destroy);
	tcase_add_test(tc, test_cond_sem_misuse);
	tcase_add_loop_test(tc, test_destroy_busy, 0, 2);
	suite_add_tcase(s, tc);

	tc = tcase_create("semantics");
	tcase_set_timeout(tc, 60);
	tcase_add_loop_test(tc, test_lock_parks, 0, 2);
	tcase_add_loop_test(tc, test_mutex_fifo, 0, 2);
	tcase_add_loop_test(tc, test_timedlock, 0, 2);
	tcase_add_test(tc, test_permits_untouched);
	tcase_add_loop_test(tc, test_waiter_freed_after_wake, 0, 2);
	tcase_add_test(tc, test_broadcast);
	suite_add_tcase(s, tc);

	tc = tcase_create("chan");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_chan_misuse);
	tcase_add_loop_test(tc, test_chan_rendezvous, 0, 3);
	tcase_add_loop_test(tc, test_chan_close_wakes, 0, 2);
	tcase_add_test(tc, test_select_fair);
	tcase_add_loop_test(tc, test_select_waits, 0, 4);
	tcase_add_test(tc, test_select_not_self);
	suite_add_tcase(s, tc);

	tc = tcase_create("stress");
	tcase_set_timeout(tc, 120);
	tcase_add_loop_test(tc, test_stress, 0, 4);
	tcase_add_loop_test(tc, test_chan_stress, 0, 4);
	suite_add_tcase(s, tc);
	return s;
}

H_TEST_MAIN(sync_suite, NULL)
