/* SPDX-License-Identifier: MIT */
/*
 * raw_scheduler.c - a single-server UMCG scheduler on the raw ABI.
 *
 * This example uses only umcg_ctl(), umcg_wait(), umcg_kick(), the blocking
 * hooks and the runnable-list helpers (plus __atomic builtins for the
 * TF_PREEMPT compare-and-swap), to show the protocol of doc/umcg-abi.md that a
 * runtime normally hides. One server thread, pinned to one CPU, runs three
 * workers: a spinner that counts loop iterations until told to stop, and
 * two sleepers that block (through umcg_block_begin()/umcg_block_end()) in
 * sleeps of 3 ms and 7 ms. It does so twice:
 *
 *   phase 1, cooperative: the spinner yields every YIELD_EVERY iterations;
 *   phase 2, preemptive: the spinner never yields; the server waits with a
 *	2 ms deadline and, when it passes, preempts the running worker.
 *
 * The server loop is doc/umcg-abi.md §7 rule 8:
 *
 *	state = RUNNABLE | TF_COND_WAIT		(seq_cst: see below)
 *	take the runnable list, oldest first, append it to a FIFO queue
 *	if no worker runs: next_tid = head of the queue
 *	umcg_wait(0, deadline)			(-EAGAIN: something happened)
 *	next_tid still set: the choice was not used; put it back, clear it
 *
 * Invariant: at most one worker of this server is RUNNING, and the server
 * knows which (`current`). A worker leaves RUNNING only by yielding,
 * blocking or being preempted, and each of those wakes the server; a worker
 * comes back to RUNNING only through the server's next_tid. So every run of
 * a worker is one consumed next_tid, and the program checks the books:
 * switches == registrations + yields + blocks + preemptions that took
 * effect.
 *
 * The lost wake-up: the server stores RUNNABLE|TF_COND_WAIT (seq_cst)
 * before it takes the list and before it reads `current`'s state and done
 * flag; whoever changes those afterwards (a worker yielding, blocking or
 * finishing) then finds the server RUNNABLE and sets it RUNNING, and the
 * server's umcg_wait() fails with -EAGAIN instead of sleeping through it.
 * The store pairs with the backend's seq_cst CAS on the server's state for
 * yields and blocks, and with finish()'s CAS below for exits.
 *
 * Worker exit. The ABI reports no exit: unregistering wakes nobody. A
 * finishing worker is the RUNNING one, so it leaves like this:
 *   1. umcg_ctl(UNREGISTER) while still RUNNING. Until this returns it is
 *      an ordinary worker: if a preemption catches it first, it is pushed,
 *      run again later, and only then unregisters.
 *   2. store done = 1 (seq_cst). From here on it can never be on a list,
 *      so the server may forget it.
 *   3. wake the server: CAS its state RUNNABLE -> RUNNING (the flags
 *      cleared, as a kernel wake does) and umcg_kick(0, server_tid); the
 *      kick makes a server asleep in umcg_wait() re-read its state, on
 *      both backends. If the server was not RUNNABLE it is awake and will
 *      see done when it next looks (Dekker: its seq_cst state store before
 *      its done load, against our done store before our state CAS).
 * The server treats `current` as gone once its done flag is set, and a
 * phase ends when all three are done; the threads are then joined. No
 * worker is ever left parked in umcg_wait().
 *
 * Output: one summary per phase. Exit status 0 if every check held, 1
 * otherwise (for example no preemption in phase 2).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* gettid(), CPU_SET() */
#endif
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <umcg/umcg.h>

#define NSEC_PER_MSEC 1000000ull
#define PHASE_NS (450 * NSEC_PER_MSEC) /* the spinner is stopped after this */
#define SLICE_NS (2 * NSEC_PER_MSEC) /* phase 2 time slice */
#define YIELD_EVERY 100000 /* phase 1: spinner iterations per yield */
#define NR_WORKERS 3

enum kind {
	SPINNER,
	SLEEPER,
};

/*
 * struct worker - one worker thread and what the server knows about it.
 * @task: its UMCG block; first, so that the struct is 64-byte aligned and
 *	a list element converts back with worker_of().
 * @tid: written by the worker before it registers; the registration's push
 *	(seq_cst) publishes it to the server's take.
 * @done: set by the worker once it has unregistered (see the header).
 * @iterations, @rounds, @yields, @blocks: written by the worker only, read
 *	after pthread_join().
 * @qnext: the server's run queue link; server only.
 */
struct worker {
	struct umcg_task task;
	const char *name;
	enum kind kind;
	bool cooperative;
	uint64_t sleep_ns;
	unsigned int rounds_wanted;
	pthread_t thread;
	pid_t tid;
	int done;
	uint64_t iterations;
	unsigned int rounds;
	unsigned long yields;
	unsigned long blocks;
	struct worker *qnext;
};

struct queue {
	struct worker *head, *tail;
};

struct phase_stats {
	unsigned long switches; /* consumed next_tids */
	unsigned long preempt_req; /* TF_PREEMPT set and kick delivered */
	unsigned long rekicks; /* second kicks to a worker still RUNNING */
	unsigned long unused_picks; /* next_tid not consumed (umcg_wait -EAGAIN) */
	uint64_t elapsed_ns;
};

static struct umcg_task server_task;
static pid_t server_tid;
static int server_cpu;
static int stop; /* __atomic: set by the server, read by the spinner */
static struct worker workers[NR_WORKERS];

static void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs("umcg-raw-scheduler: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	fflush(NULL);
	_exit(1);
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static struct worker *worker_of(struct umcg_task *t)
{
	return (struct worker *)((char *)t - offsetof(struct worker, task));
}

static void queue_push_tail(struct queue *q, struct worker *w)
{
	w->qnext = NULL;
	if (q->tail)
		q->tail->qnext = w;
	else
		q->head = w;
	q->tail = w;
}

static void queue_push_head(struct queue *q, struct worker *w)
{
	w->qnext = q->head;
	q->head = w;
	if (!q->tail)
		q->tail = w;
}

static struct worker *queue_pop(struct queue *q)
{
	struct worker *w = q->head;

	if (w) {
		q->head = w->qnext;
		if (!q->head)
			q->tail = NULL;
	}
	return w;
}

/* ---- workers ------------------------------------------------------------ */

/* Give the CPU back to the server and sleep until it runs us again. */
static void yield(struct worker *w)
{
	int ret;

	/*
	 * RUNNABLE|TF_COND_WAIT rather than RUNNABLE: a kick or signal that
	 * lands before umcg_wait() must not park us off every list. seq_cst:
	 * the server's TF_PREEMPT CAS, if any, either came before (and is
	 * overwritten: we yield anyway) or fails on RUNNABLE.
	 */
	__atomic_store_n(&w->task.state, UMCG_TASK_RUNNABLE | UMCG_TF_COND_WAIT, __ATOMIC_SEQ_CST);
	ret = umcg_wait(0, 0);
	if (ret)
		die("%s: umcg_wait: %s", w->name, strerror(-ret));
	w->yields++;
}

static void spin(struct worker *w)
{
	uint64_t n = 0;

	/* Relaxed: the flag carries no data, it only has to be seen. */
	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		n++;
		if (w->cooperative && n % YIELD_EVERY == 0)
			yield(w);
	}
	w->iterations = n;
}

static void sleep_ns(uint64_t ns)
{
	uint64_t end = now_ns() + ns;
	struct timespec ts = { .tv_sec = (time_t)(end / 1000000000ull),
			       .tv_nsec = (long)(end % 1000000000ull) };

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

static void sleep_rounds(struct worker *w)
{
	int ret;

	while (w->rounds < w->rounds_wanted) {
		ret = umcg_block_begin();
		if (ret)
			die("%s: umcg_block_begin: %s", w->name, strerror(-ret));
		sleep_ns(w->sleep_ns);
		ret = umcg_block_end();
		if (ret)
			die("%s: umcg_block_end: %s", w->name, strerror(-ret));
		w->blocks++;
		w->rounds++;
	}
}

/* Leave UMCG and wake the server: the exit protocol of the header comment. */
static void finish(struct worker *w)
{
	uint32_t s;
	int ret;

	ret = umcg_ctl(UMCG_CTL_UNREGISTER, NULL, 0);
	if (ret)
		die("%s: umcg_ctl(UNREGISTER): %s", w->name, strerror(-ret));
	/* Pairs with the server's seq_cst state store and done load. */
	__atomic_store_n(&w->done, 1, __ATOMIC_SEQ_CST);
	s = __atomic_load_n(&server_task.state, __ATOMIC_SEQ_CST);
	while ((s & UMCG_TASK_MASK) == UMCG_TASK_RUNNABLE &&
	       !__atomic_compare_exchange_n(&server_task.state, &s,
					    (s & ~(UMCG_TASK_MASK | UMCG_TF_MASK)) |
						    UMCG_TASK_RUNNING,
					    false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
		;
	ret = umcg_kick(0, server_tid);
	if (ret)
		die("%s: umcg_kick(server): %s", w->name, strerror(-ret));
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	int ret;

	w->tid = gettid();
	w->task.state = UMCG_TASK_BLOCKED;
	w->task.server_tid = (uint32_t)server_tid;
	/* Returns once the server has run us. */
	ret = umcg_ctl(UMCG_CTL_REGISTER | UMCG_CTL_WORKER, &w->task, CLOCK_MONOTONIC);
	if (ret)
		die("%s: umcg_ctl(REGISTER|WORKER): %s", w->name, strerror(-ret));
	if (w->kind == SPINNER)
		spin(w);
	else
		sleep_rounds(w);
	finish(w);
	return NULL;
}

/* ---- the server ----------------------------------------------------------- */

static bool is_done(struct worker *w)
{
	return __atomic_load_n(&w->done, __ATOMIC_SEQ_CST);
}

/*
 * preempt() - ask the running worker @w to leave the CPU (doc/umcg-abi.md §8 rule 1).
 *
 * Return: true if a new request was made and the kick went out.
 */
static bool preempt(struct worker *w, struct phase_stats *st)
{
	uint32_t s = __atomic_load_n(&w->task.state, __ATOMIC_RELAXED);
	bool again = false;
	int ret;

	for (;;) {
		if ((s & UMCG_TASK_MASK) != UMCG_TASK_RUNNING)
			return false; /* it blocked or yielded meanwhile */
		if (s & UMCG_TF_PREEMPT) {
			again = true; /* asked before, not gone yet: kick again */
			break;
		}
		/* seq_cst: orders the flag before the kick's look at @w. */
		if (__atomic_compare_exchange_n(&w->task.state, &s, s | UMCG_TF_PREEMPT, false,
						__ATOMIC_SEQ_CST, __ATOMIC_RELAXED))
			break;
	}
	ret = umcg_kick(0, w->tid);
	if (ret == -ESRCH)
		return false; /* it unregistered meanwhile: it is finishing */
	if (ret)
		die("server: umcg_kick(%d): %s", w->tid, strerror(-ret));
	if (again) {
		st->rekicks++;
		return false;
	}
	st->preempt_req++;
	return true;
}

static uint64_t min_deadline(uint64_t a, uint64_t b)
{
	if (!a)
		return b;
	if (!b)
		return a;
	return a < b ? a : b;
}

static void run_phase(bool preemptive, struct phase_stats *st)
{
	struct worker *current = NULL, *picked;
	struct umcg_task *list, *pos, *tmp;
	struct queue q = { NULL, NULL };
	uint64_t start = now_ns(), phase_end = start + PHASE_NS;
	uint64_t slice_end = 0, deadline, now;
	uint32_t s;
	int i, finished, ret;

	for (;;) {
		/* §7 rules 7-8; see "The lost wake-up" in the header. */
		__atomic_store_n(&server_task.state, UMCG_TASK_RUNNABLE | UMCG_TF_COND_WAIT,
				 __ATOMIC_SEQ_CST);
		list = umcg_runnable_sort_oldest(umcg_runnable_take(&server_task));
		umcg_runnable_for_each(pos, tmp, list)
			queue_push_tail(&q, worker_of(pos));

		if (current &&
		    (is_done(current) || (__atomic_load_n(&current->task.state, __ATOMIC_SEQ_CST) &
					  UMCG_TASK_MASK) != UMCG_TASK_RUNNING))
			current = NULL;

		for (i = 0, finished = 0; i < NR_WORKERS; i++)
			finished += is_done(&workers[i]);
		if (finished == NR_WORKERS)
			break;

		now = now_ns();
		if (now >= phase_end && !__atomic_load_n(&stop, __ATOMIC_RELAXED))
			__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);

		picked = NULL;
		if (!current) {
			picked = queue_pop(&q);
			if (picked) {
				server_task.next_tid = (uint32_t)picked->tid;
				slice_end = now + SLICE_NS;
			}
		}
		deadline = __atomic_load_n(&stop, __ATOMIC_RELAXED) ? 0 : phase_end;
		if (preemptive && (current || picked))
			deadline = min_deadline(deadline, slice_end);

		ret = umcg_wait(0, deadline);
		if (ret && ret != -EAGAIN && ret != -ETIMEDOUT)
			die("server: umcg_wait: %s", strerror(-ret));

		if (picked) {
			if (__atomic_load_n(&server_task.next_tid, __ATOMIC_RELAXED) == 0) {
				current = picked;
				st->switches++;
			} else {
				/* Not used (we were woken first): the worker
				 * is still RUNNABLE and ours; run it next. */
				server_task.next_tid = 0;
				queue_push_head(&q, picked);
				st->unused_picks++;
			}
		}
		if (ret == -ETIMEDOUT && preemptive && current && now_ns() >= slice_end) {
			preempt(current, st);
			/* Give the kick one slice to take effect. */
			slice_end = now_ns() + SLICE_NS;
		}
	}
	st->elapsed_ns = now_ns() - start;

	/* Back to RUNNING: unless a finishing worker already did it. */
	s = __atomic_load_n(&server_task.state, __ATOMIC_RELAXED);
	while ((s & UMCG_TASK_MASK) == UMCG_TASK_RUNNABLE &&
	       !__atomic_compare_exchange_n(&server_task.state, &s,
					    (s & ~(UMCG_TASK_MASK | UMCG_TF_MASK)) |
						    UMCG_TASK_RUNNING,
					    false, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED))
		;
}

/* ---- main -------------------------------------------------------------- */

static int pin_to_first_cpu(void)
{
	cpu_set_t set;
	int cpu;

	if (sched_getaffinity(0, sizeof(set), &set))
		die("sched_getaffinity: %s", strerror(errno));
	for (cpu = 0; cpu < CPU_SETSIZE; cpu++)
		if (CPU_ISSET(cpu, &set))
			break;
	if (cpu == CPU_SETSIZE)
		die("empty affinity mask");
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set))
		die("sched_setaffinity(%d): %s", cpu, strerror(errno));
	return cpu;
}

static void setup_workers(bool cooperative)
{
	static const struct {
		const char *name;
		enum kind kind;
		uint64_t sleep_ns;
		unsigned int rounds;
	} spec[NR_WORKERS] = {
		{ "spinner", SPINNER, 0, 0 },
		{ "sleep-3ms", SLEEPER, 3 * NSEC_PER_MSEC, 40 },
		{ "sleep-7ms", SLEEPER, 7 * NSEC_PER_MSEC, 20 },
	};
	int i;

	memset(workers, 0, sizeof(workers));
	for (i = 0; i < NR_WORKERS; i++) {
		workers[i].name = spec[i].name;
		workers[i].kind = spec[i].kind;
		workers[i].cooperative = cooperative;
		workers[i].sleep_ns = spec[i].sleep_ns;
		workers[i].rounds_wanted = spec[i].rounds;
	}
}

/* Run one phase and print its summary. Return: the number of failed checks. */
static int phase(int number, bool preemptive)
{
	struct phase_stats st = { 0 };
	unsigned long yields = 0, blocks = 0;
	long effective;
	int i, ret, bad = 0;

	setup_workers(!preemptive);
	__atomic_store_n(&stop, 0, __ATOMIC_RELAXED);
	for (i = 0; i < NR_WORKERS; i++) {
		ret = pthread_create(&workers[i].thread, NULL, worker_main, &workers[i]);
		if (ret)
			die("pthread_create: %s", strerror(ret));
	}
	run_phase(preemptive, &st);
	for (i = 0; i < NR_WORKERS; i++) {
		pthread_join(workers[i].thread, NULL);
		yields += workers[i].yields;
		blocks += workers[i].blocks;
	}
	/* Every run of a worker is one consumed next_tid (header comment). */
	effective = (long)st.switches - NR_WORKERS - (long)yields - (long)blocks;

	if (preemptive)
		printf("phase %d: preemptive (%llu ms slice, the spinner never yields), %llu ms\n",
		       number, SLICE_NS / NSEC_PER_MSEC,
		       (unsigned long long)(st.elapsed_ns / NSEC_PER_MSEC));
	else
		printf("phase %d: cooperative (the spinner yields every %d iterations), %llu ms\n",
		       number, YIELD_EVERY, (unsigned long long)(st.elapsed_ns / NSEC_PER_MSEC));
	printf("  server:  %lu switches, %lu preemptions (%ld took effect), %lu yields, %lu blocks\n",
	       st.switches, st.preempt_req, effective, yields, blocks);
	if (st.unused_picks || st.rekicks)
		printf("  server:  %lu picks not used (woken first), %lu repeated kicks\n",
		       st.unused_picks, st.rekicks);
	for (i = 0; i < NR_WORKERS; i++) {
		struct worker *w = &workers[i];

		if (w->kind == SPINNER)
			printf("  %-10s %llu iterations, %lu yields\n", w->name,
			       (unsigned long long)w->iterations, w->yields);
		else
			printf("  %-10s %u/%u rounds, %lu blocks\n", w->name, w->rounds,
			       w->rounds_wanted, w->blocks);
	}

#define CHECK(cond, ...)                                  \
	do {                                              \
		if (!(cond)) {                            \
			printf("  FAILED: " __VA_ARGS__); \
			putchar('\n');                    \
			bad++;                            \
		}                                         \
	} while (0)
	for (i = 0; i < NR_WORKERS; i++) {
		struct worker *w = &workers[i];

		if (w->kind == SLEEPER) {
			CHECK(w->rounds == w->rounds_wanted && w->blocks == w->rounds_wanted,
			      "%s did not complete its rounds", w->name);
			CHECK(w->yields == 0, "%s yielded", w->name);
		} else {
			CHECK(w->iterations > 0, "the spinner never ran");
		}
	}
	CHECK(effective >= 0 && effective <= (long)st.preempt_req,
	      "switches do not add up: %lu != %d registrations + %lu yields + %lu blocks + "
	      "at most %lu preemptions",
	      st.switches, NR_WORKERS, yields, blocks, st.preempt_req);
	if (preemptive) {
		CHECK(yields == 0, "the spinner yielded in the preemptive phase");
		CHECK(st.preempt_req > 0 && effective > 0, "no preemption happened");
	} else {
		CHECK(workers[0].yields > 0, "the spinner never yielded");
		CHECK(st.preempt_req == 0 && effective == 0, "preemption in the cooperative phase");
	}
#undef CHECK
	return bad;
}

int main(void)
{
	int backend, ret, bad = 0;

	setvbuf(stdout, NULL, _IOLBF, 0);
	backend = umcg_backend_active();
	printf("backend: %s (%s)\n", backend < 0 ? "none" : umcg_backend_name(backend),
	       umcg_backend_reason());
	if (backend < 0)
		die("no UMCG backend: %s", strerror(-backend));

	server_cpu = pin_to_first_cpu();
	server_tid = gettid();
	server_task.state = UMCG_TASK_RUNNING;
	server_task.server_tid = (uint32_t)server_tid;
	ret = umcg_ctl(UMCG_CTL_REGISTER, &server_task, CLOCK_MONOTONIC);
	if (ret)
		die("umcg_ctl(REGISTER): %s", strerror(-ret));
	printf("server: tid %d on CPU %d, workers: spinner, sleep-3ms (40 rounds), "
	       "sleep-7ms (20 rounds)\n",
	       server_tid, server_cpu);

	bad += phase(1, false);
	bad += phase(2, true);

	ret = umcg_ctl(UMCG_CTL_UNREGISTER, NULL, 0);
	if (ret)
		die("umcg_ctl(UNREGISTER): %s", strerror(-ret));
	printf("%s\n", bad ? "FAILED" : "ok");
	return bad ? 1 : 0;
}
