/* SPDX-License-Identifier: MIT */
/*
 * sleepers.c - a raw-ABI program written for a UMCG kernel, run on every
 * backend: plain sleeps and reads, none of them wrapped.
 *
 * One server thread (umcg_ctl(), umcg_wait(), umcg_kick() of <umcg/umcg.h>)
 * runs three workers:
 *   spinner  counts until told to stop; in cooperative mode it yields once
 *            per YIELD_EVERY_NS (1 ms) of its own running;
 *   napper   write(2)s a line, then sleeps T_A with plain nanosleep() (sleep()
 *            in --full mode), ROUNDS times;
 *   reader   write(2)s a line, then read()s a pipe that a plain thread
 *            writes its clock into every T_B, ROUNDS times.
 * Nothing tells the backend about those sleeps. On a UMCG kernel the
 * kernel sees them; on the emulation libumcg-preload.so (if loaded) or the
 * detection of unannounced blocking (umcg_detect_set(3)) must, or the only
 * server stays with a sleeper and the spinner starves.
 *
 * Two phases: cooperative, then preemptive with a 1 ms slice (the server
 * preempts the worker it runs when its slice ends and another is waiting,
 * as a kernel-side scheduler would). Checks per phase:
 *   - every nanosleep()/sleep() returns 0 after at least the time asked
 *     (no sleep ends early: no kick of ours cut it short);
 *   - every sleep and every read wakes on time: at most 10% late, plus the
 *     detection bound where the emulation runs, plus SLACK for the hand
 *     back (the sleeper waits for the spinner's next yield or the slice's
 *     end, 1 ms of both, and for the CPU on a shared 2-CPU machine: a CI
 *     run beside another test once saw 27 ms). SLACK is 100 ms, not a
 *     timing target: what this catches, a sleeper held until the spinner
 *     stops, is late by the rest of the phase (seconds), and a sleep cut
 *     short is caught above. UMCG_SLEEPERS_SLACK_MS overrides it;
 *   - the spinner runs at least 80% of the phase's wall time: the time
 *     the server had it as its running worker (with one server and both
 *     sleepers asleep almost all the time, it runs only if the sleeps freed
 *     the server). Its CPU time is printed beside it; that one also
 *     depends on what else the machine runs, so it is not checked;
 *   - a bound on the whole phase: a starved program fails, it does not hang.
 * The server's books follow examples/raw_scheduler.c: it knows which worker
 * runs (`current`), consumes one next_tid per run, and a worker leaves by
 * unregistering, storing `done` and waking the server.
 *
 * Protocols: `stop` (relaxed; a flag only) set by the server, read by the
 * spinner. `done`: seq_cst store by the finishing worker after its
 * unregistration, seq_cst load by the server after its own seq_cst state
 * store (a Dekker pair with the worker's CAS of the server's state). The
 * ticker's clock values travel through the pipe. Per-worker results are
 * read after pthread_join().
 *
 * Usage: umcg-test-sleepers [--full]   (exit 0: every check held)
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <umcg/umcg.h>

#define MS 1000000ull
#define SEC 1000000000ull
#define SLICE_NS MS
#define YIELD_EVERY_NS MS
#define NR_WORKERS 3

enum kind {
	SPINNER,
	NAPPER,
	READER
};

struct worker {
	struct umcg_task task; /* first: the list element converts back */
	const char *name;
	enum kind kind;
	pid_t tid;
	int done;
	pthread_t thread;
	struct worker *qnext;
	/* results, written by the worker, read after pthread_join() */
	uint64_t cpu_ns; /* spinner */
	unsigned int rounds, early, late, failed;
	uint64_t worst_late_ns;
};

static struct umcg_task server_task;
static pid_t server_tid;
static struct worker workers[NR_WORKERS];
static int stop;
static bool cooperative, full;
static uint64_t t_a, t_b, rounds, bound_ns, slack_ns;
static int pipefd[2];
/* server only: how long the spinner was its running worker this phase */
static uint64_t spinner_run_ns;

static void say(const char *fmt, ...)
{
	char buf[256];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n > (int)sizeof(buf) - 1)
		n = (int)sizeof(buf) - 1;
	if (n > 0 && write(STDOUT_FILENO, buf, (size_t)n) < 0)
		_exit(3);
}

static void die(const char *what, int err)
{
	say("umcg-test-sleepers: %s: %s\n", what, strerror(err));
	_exit(2);
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * SEC + (uint64_t)ts.tv_nsec;
}

/* ---- workers ---------------------------------------------------------- */

static void yield(struct worker *w)
{
	int ret;

	__atomic_store_n(&w->task.state, UMCG_TASK_RUNNABLE | UMCG_TF_COND_WAIT, __ATOMIC_SEQ_CST);
	ret = umcg_wait(0, 0);
	if (ret)
		die("spinner: umcg_wait", -ret);
}

static void spin(struct worker *w)
{
	uint64_t n = 0, last = now_ns();
	struct timespec ts;

	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		/* The clock every 4096 turns: a yield per ms of running. */
		if (cooperative && ++n % 4096 == 0 && now_ns() - last >= YIELD_EVERY_NS) {
			yield(w);
			last = now_ns();
		}
	}
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	w->cpu_ns = (uint64_t)ts.tv_sec * SEC + (uint64_t)ts.tv_nsec;
}

/* A wake-up @late ns after it was due. */
static void judge(struct worker *w, uint64_t asked, uint64_t late)
{
	if (late > w->worst_late_ns)
		w->worst_late_ns = late;
	if (late > asked / 10 + bound_ns + slack_ns)
		w->late++;
}

static void nap(struct worker *w)
{
	struct timespec ts = { (time_t)(t_a / SEC), (long)(t_a % SEC) };
	uint64_t t0, dt;

	for (; w->rounds < rounds; w->rounds++) {
		say("%s: round %u\n", w->name, w->rounds);
		t0 = now_ns();
		if (full) {
			if (sleep((unsigned int)(t_a / SEC)) != 0)
				w->early++;
		} else if (nanosleep(&ts, NULL) != 0) {
			w->early++;
		}
		dt = now_ns() - t0;
		if (dt < t_a)
			w->early++;
		else
			judge(w, t_a, dt - t_a);
	}
}

static void read_pipe(struct worker *w)
{
	uint64_t sent;

	for (; w->rounds < rounds; w->rounds++) {
		say("%s: round %u\n", w->name, w->rounds);
		if (read(pipefd[0], &sent, sizeof(sent)) != (ssize_t)sizeof(sent)) {
			w->failed++;
			return;
		}
		judge(w, t_b, now_ns() - sent);
	}
}

static void finish(struct worker *w)
{
	uint32_t s;
	int ret;

	ret = umcg_ctl(UMCG_CTL_UNREGISTER, NULL, 0);
	if (ret)
		die("umcg_ctl(UNREGISTER)", -ret);
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
		die("umcg_kick(server)", -ret);
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	int ret;

	w->tid = gettid();
	w->task.state = UMCG_TASK_BLOCKED;
	w->task.server_tid = (uint32_t)server_tid;
	ret = umcg_ctl(UMCG_CTL_REGISTER | UMCG_CTL_WORKER, &w->task, CLOCK_MONOTONIC);
	if (ret)
		die("umcg_ctl(REGISTER|WORKER)", -ret);
	if (w->kind == SPINNER)
		spin(w);
	else if (w->kind == NAPPER)
		nap(w);
	else
		read_pipe(w);
	finish(w);
	return NULL;
}

/* A plain thread: the pipe gets the clock every t_b. */
static void *ticker(void *arg)
{
	uint64_t next = now_ns(), t;
	struct timespec ts;
	unsigned int i;

	(void)arg;
	for (i = 0; i < rounds; i++) {
		next += t_b;
		ts.tv_sec = (time_t)(next / SEC);
		ts.tv_nsec = (long)(next % SEC);
		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
			;
		t = now_ns();
		if (write(pipefd[1], &t, sizeof(t)) != (ssize_t)sizeof(t))
			die("ticker: write", errno);
	}
	return NULL;
}

/* ---- the server ------------------------------------------------------- */

struct queue {
	struct worker *head, *tail;
};

static void push_tail(struct queue *q, struct worker *w)
{
	w->qnext = NULL;
	if (q->tail)
		q->tail->qnext = w;
	else
		q->head = w;
	q->tail = w;
}

static void push_head(struct queue *q, struct worker *w)
{
	w->qnext = q->head;
	q->head = w;
	if (!q->tail)
		q->tail = w;
}

static struct worker *pop(struct queue *q)
{
	struct worker *w = q->head;

	if (w) {
		q->head = w->qnext;
		if (!q->head)
			q->tail = NULL;
	}
	return w;
}

static bool is_done(struct worker *w)
{
	return __atomic_load_n(&w->done, __ATOMIC_SEQ_CST);
}

static void preempt(struct worker *w)
{
	uint32_t s = __atomic_load_n(&w->task.state, __ATOMIC_RELAXED);
	int ret;

	for (;;) {
		if ((s & UMCG_TASK_MASK) != UMCG_TASK_RUNNING)
			return;
		if (s & UMCG_TF_PREEMPT)
			break;
		if (__atomic_compare_exchange_n(&w->task.state, &s, s | UMCG_TF_PREEMPT, false,
						__ATOMIC_SEQ_CST, __ATOMIC_RELAXED))
			break;
	}
	ret = umcg_kick(0, w->tid);
	if (ret && ret != -ESRCH)
		die("umcg_kick(worker)", -ret);
}

/* Return: false if the phase ran past its bound. */
static bool serve(uint64_t limit)
{
	struct worker *current = NULL, *picked, *w;
	struct umcg_task *list, *pos, *tmp;
	struct queue q = { NULL, NULL };
	uint64_t slice_end = 0, deadline, now, end = now_ns() + limit, spin_from = 0, wait_from;
	int ret, i, sleepers_done;
	uint32_t s;
	bool ok = true;

	for (;;) {
		__atomic_store_n(&server_task.state, UMCG_TASK_RUNNABLE | UMCG_TF_COND_WAIT,
				 __ATOMIC_SEQ_CST);
		list = umcg_runnable_sort_oldest(umcg_runnable_take(&server_task));
		umcg_runnable_for_each(pos, tmp, list) {
			w = (struct worker *)pos;
			push_tail(&q, w);
		}
		if (current &&
		    (is_done(current) || (__atomic_load_n(&current->task.state, __ATOMIC_SEQ_CST) &
					  UMCG_TASK_MASK) != UMCG_TASK_RUNNING))
			current = NULL;
		/* The spinner's run, from the wait that started it to the
		 * first look that finds it no longer running. */
		if (current != &workers[0] && spin_from) {
			spinner_run_ns += now_ns() - spin_from;
			spin_from = 0;
		}
		for (i = 0, sleepers_done = 0; i < NR_WORKERS; i++)
			sleepers_done += workers[i].kind != SPINNER && is_done(&workers[i]);
		now = now_ns();
		if (sleepers_done == NR_WORKERS - 1 || now > end) {
			ok &= now <= end;
			__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
			if (is_done(&workers[0]) && sleepers_done == NR_WORKERS - 1)
				break;
			if (now > end + 5 * SEC) {
				say("umcg-test-sleepers: the workers did not finish; giving up\n");
				_exit(1);
			}
		}
		picked = NULL;
		if (!current) {
			picked = pop(&q);
			if (picked) {
				server_task.next_tid = (uint32_t)picked->tid;
				slice_end = now + SLICE_NS;
			}
		}
		deadline = now + 100 * MS; /* re-check the bounds now and then */
		if (!cooperative && (current || picked) && q.head && slice_end < deadline)
			deadline = slice_end;
		wait_from = now_ns();
		ret = umcg_wait(0, deadline);
		if (ret && ret != -EAGAIN && ret != -ETIMEDOUT)
			die("server: umcg_wait", -ret);
		if (picked) {
			if (__atomic_load_n(&server_task.next_tid, __ATOMIC_RELAXED) == 0) {
				current = picked;
				if (picked == &workers[0])
					spin_from = wait_from;
			} else {
				server_task.next_tid = 0;
				push_head(&q, picked);
			}
		}
		/* A slice ends: preempt only if someone waits (as a kernel
		 * scheduler would not interrupt a lone runner). */
		if (!cooperative && current && q.head && now_ns() >= slice_end) {
			preempt(current);
			slice_end = now_ns() + SLICE_NS;
		}
	}
	s = __atomic_load_n(&server_task.state, __ATOMIC_RELAXED);
	while ((s & UMCG_TASK_MASK) == UMCG_TASK_RUNNABLE &&
	       !__atomic_compare_exchange_n(&server_task.state, &s,
					    (s & ~(UMCG_TASK_MASK | UMCG_TF_MASK)) |
						    UMCG_TASK_RUNNING,
					    false, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED))
		;
	return ok;
}

/* ---- main ------------------------------------------------------------- */

static int phase(bool coop)
{
	static const char *names[NR_WORKERS] = { "spinner", "napper", "reader" };
	uint64_t t0, wall, phase_ns = (t_a > t_b ? t_a : t_b) * rounds;
	pthread_t tick;
	bool in_time;
	int i, ret, bad = 0;

	cooperative = coop;
	__atomic_store_n(&stop, 0, __ATOMIC_RELAXED);
	spinner_run_ns = 0;
	memset(workers, 0, sizeof(workers));
	if (pipe(pipefd))
		die("pipe", errno);
	t0 = now_ns();
	for (i = 0; i < NR_WORKERS; i++) {
		workers[i].name = names[i];
		workers[i].kind = (enum kind)i;
		ret = pthread_create(&workers[i].thread, NULL, worker_main, &workers[i]);
		if (ret)
			die("pthread_create", ret);
	}
	ret = pthread_create(&tick, NULL, ticker, NULL);
	if (ret)
		die("pthread_create", ret);
	/* Twice the phase's length, and a second, before it counts as stuck. */
	in_time = serve(2 * phase_ns + SEC);
	wall = now_ns() - t0;
	for (i = 0; i < NR_WORKERS; i++)
		pthread_join(workers[i].thread, NULL);
	pthread_join(tick, NULL);
	close(pipefd[0]);
	close(pipefd[1]);

	say("%s: %.0f ms; spinner run %.0f ms (%.0f%%), %.0f ms of CPU (%.0f%%)",
	    coop ? "cooperative" : "preemptive 1 ms", (double)wall / 1e6,
	    (double)spinner_run_ns / 1e6, 100.0 * (double)spinner_run_ns / (double)wall,
	    (double)workers[0].cpu_ns / 1e6, 100.0 * (double)workers[0].cpu_ns / (double)wall);
	for (i = 1; i < NR_WORKERS; i++)
		say("; %s %u rounds, worst %.2f ms late, %u late, %u early", workers[i].name,
		    workers[i].rounds, (double)workers[i].worst_late_ns / 1e6, workers[i].late,
		    workers[i].early);
	say("\n");
#define CHECK(cond, what)                            \
	do {                                         \
		if (!(cond)) {                       \
			say("  FAILED: %s\n", what); \
			bad++;                       \
		}                                    \
	} while (0)
	CHECK(in_time, "the phase ran past its bound (a sleeper kept the server)");
	for (i = 1; i < NR_WORKERS; i++) {
		CHECK(workers[i].rounds == rounds && !workers[i].failed, "a sleeper missed rounds");
		CHECK(workers[i].early == 0, "a sleep ended early or failed");
		CHECK(workers[i].late == 0, "a sleeper woke late");
	}
	CHECK(spinner_run_ns * 10 >= wall * 8, "the spinner ran less than 80% of the time");
#undef CHECK
	return bad;
}

int main(int argc, char **argv)
{
	const char *slack = getenv("UMCG_SLEEPERS_SLACK_MS");
	int backend, bad;

	full = argc > 1 && !strcmp(argv[1], "--full");
	if (argc > 1 && !full) {
		say("usage: umcg-test-sleepers [--full]\n");
		return 2;
	}
	/* --full: the program of the issue, sleep(2) and a 3 s tick. */
	t_a = full ? 2 * SEC : 200 * MS;
	t_b = full ? 3 * SEC : 300 * MS;
	rounds = full ? 5 : 6;
	slack_ns = (slack ? strtoull(slack, NULL, 10) : 100) * MS;
	backend = umcg_backend_active();
	if (backend < 0)
		die("no UMCG backend", -backend);
	bound_ns = backend == UMCG_BACKEND_EMULATED ? umcg_detect_get() : 0;
	say("backend %s, detection bound %.1f ms, slack %.1f ms\n", umcg_backend_name(backend),
	    (double)bound_ns / 1e6, (double)slack_ns / 1e6);
	server_tid = gettid();
	server_task.state = UMCG_TASK_RUNNING;
	server_task.server_tid = (uint32_t)server_tid;
	if (umcg_ctl(UMCG_CTL_REGISTER, &server_task, CLOCK_MONOTONIC))
		die("umcg_ctl(REGISTER) of the server", EINVAL);
	bad = phase(true);
	bad += phase(false);
	umcg_ctl(UMCG_CTL_UNREGISTER, NULL, 0);
	say("%s\n", bad ? "FAILED" : "passed");
	return bad ? 1 : 0;
}
