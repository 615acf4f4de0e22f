/* SPDX-License-Identifier: MIT */
/*
 * pipeline.c - umcg-bench-pipeline: messages per second through a feeder,
 * four stages and a sink joined by bounded queues, as UMCG workers and as
 * plain threads.
 *
 *	feeder -> q0 -> stage 1 -> q1 -> ... -> stage 4 -> q4 -> sink
 *
 * The feeder sends the numbers 0..N-1; stage k replaces v by v * 31 + k;
 * the sink recomputes each value from its sequence number and dies on the
 * first mismatch (a lost, duplicated or reordered message). The stages do
 * nothing else: what is measured is the cost of moving a message from one
 * thread to the next, which is a thread switch whenever a queue is full or
 * empty. Each queue holds 1 message, or 16; both are
 * measured.
 *
 * Three versions, each timed from the feeder's first send (once all six
 * threads have started) to the sink's last receive:
 *  - umcg, one server: a runtime with a single server runs the six workers;
 *    every handoff is a same-CPU switch through that server.
 *  - umcg, all servers: a runtime with one server per CPU; the workers start
 *    spread over the servers (and the policy may move them).
 *  - pthread: six plain, unpinned threads; the queues are a mutex and two
 *    condition variables.
 *  - chan: the one-server runtime, the queues umcg_chan channels of
 *    <umcg/sync.h> (capacity 1 or 16).
 *  - mutex_cond: the one-server runtime, the queues a ring under a
 *    umcg_mutex with two umcg_cond, written as the pthread queue is.
 *  - floor: what the one-server versions cannot beat at capacity 1, run
 *    beside them: six plain threads pinned to one CPU pass a token round
 *    robin through futexes (each sleeps on its own word, and hands the
 *    token on by setting the next one's word and waking it), one same-CPU
 *    futex handoff per stage; a message is one round of six handoffs. Capacity does not
 *    change it; it is measured for each capacity all the same.
 * Each of --repeat runs measures every combination in an order that
 * rotates from run to run; the report gives the medians, the ratios
 * umcg/pthread and chan/floor, and every run.
 *
 * The UMCG queue: a single-producer single-consumer ring. `tail` is written
 * only by the producer and `head` only by the consumer, so no lock is
 * needed, and a worker never holds anything while it is switched out. A
 * side that finds the ring full (empty) parks with umcg_park() after
 * announcing itself in `prod_waiting` (`cons_waiting`); the other side
 * wakes it with umcg_unpark() after it made room (added a message).
 *
 * Invariant: a party that parks has announced itself, and whoever changes
 * the ring after the announcement sees it. The waiter stores its flag and
 * then loads the index it waits on; the other side stores that index and
 * then loads the flag. All four accesses are seq_cst (a Dekker pair), so
 * either the waiter sees the new index and does not park, or the other
 * side sees the flag and unparks it. The flag is cleared with an exchange
 * by exactly one party: the waker (who then unparks) or the waiter itself
 * (when its re-check succeeds). An unpark that lands after the waiter
 * stopped waiting leaves a permit, so a later umcg_park() returns at once;
 * every park sits in a loop that re-checks the ring, so that costs one
 * extra turn and nothing else.
 *
 * Slots: the producer writes the slot and then stores tail (seq_cst, so a
 * release); the consumer loads tail (seq_cst, an acquire) before it reads
 * the slot. The consumer reads the slot before it stores head; the producer
 * loads head before it overwrites the slot.
 *
 * Start: each worker counts itself in `started` (relaxed) before its first
 * queue operation; the feeder yields until all six are in, so that thread
 * creation and registration are not timed.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "common.h"

#include <getopt.h>

#include <linux/futex.h>
#include <sys/syscall.h>

#include <umcg/runtime.h>
#include <umcg/sync.h>

#define NR_STAGES 4
#define NR_QUEUES (NR_STAGES + 1)
#define NR_THREADS (NR_STAGES + 2)

#define NR_CAPS 2
static const unsigned int capacities[NR_CAPS] = { 1, 16 };

struct options {
	uint64_t messages;
	unsigned int repeat;
};

/* ---- the UMCG queue -------------------------------------------------------- */

struct uqueue {
	uint64_t head __attribute__((aligned(64))); /* consumer's */
	struct umcg_worker *consumer;
	int cons_waiting;
	uint64_t tail __attribute__((aligned(64))); /* producer's */
	struct umcg_worker *producer;
	int prod_waiting;
	unsigned int cap;
	uint64_t *slots;
	uint64_t parks; /* umcg_park() calls on this queue (both sides) */
};

/* Clear @flag; if it was set, unpark *@w: we are the one waking it. */
static void wake_waiter(int *flag, struct umcg_worker *const *w)
{
	/* seq_cst: the second half of the Dekker pair (see the header). The
	 * waiter wrote *@w before it set @flag, so read *@w only after. */
	if (__atomic_load_n(flag, __ATOMIC_SEQ_CST) &&
	    __atomic_exchange_n(flag, 0, __ATOMIC_SEQ_CST))
		umcg_unpark(*w);
}

static void uq_push(struct uqueue *q, uint64_t v)
{
	uint64_t t = q->tail, h;

	for (;;) {
		h = __atomic_load_n(&q->head, __ATOMIC_SEQ_CST);
		if (t - h < q->cap)
			break;
		__atomic_store_n(&q->prod_waiting, 1, __ATOMIC_SEQ_CST);
		h = __atomic_load_n(&q->head, __ATOMIC_SEQ_CST);
		if (t - h < q->cap) {
			__atomic_exchange_n(&q->prod_waiting, 0, __ATOMIC_SEQ_CST);
			break;
		}
		__atomic_fetch_add(&q->parks, 1, __ATOMIC_RELAXED);
		umcg_park();
	}
	q->slots[t % q->cap] = v;
	/* seq_cst: publishes the slot, and orders before the flag load. */
	__atomic_store_n(&q->tail, t + 1, __ATOMIC_SEQ_CST);
	wake_waiter(&q->cons_waiting, &q->consumer);
}

static uint64_t uq_pop(struct uqueue *q)
{
	uint64_t h = q->head, t, v;

	for (;;) {
		t = __atomic_load_n(&q->tail, __ATOMIC_SEQ_CST);
		if (t != h)
			break;
		__atomic_store_n(&q->cons_waiting, 1, __ATOMIC_SEQ_CST);
		t = __atomic_load_n(&q->tail, __ATOMIC_SEQ_CST);
		if (t != h) {
			__atomic_exchange_n(&q->cons_waiting, 0, __ATOMIC_SEQ_CST);
			break;
		}
		__atomic_fetch_add(&q->parks, 1, __ATOMIC_RELAXED);
		umcg_park();
	}
	v = q->slots[h % q->cap];
	/* seq_cst: frees the slot, and orders before the flag load. */
	__atomic_store_n(&q->head, h + 1, __ATOMIC_SEQ_CST);
	wake_waiter(&q->prod_waiting, &q->producer);
	return v;
}

/* ---- the pthread queue ------------------------------------------------------ */

struct pqueue {
	pthread_mutex_t lock;
	pthread_cond_t not_empty;
	pthread_cond_t not_full;
	uint64_t head, tail;
	unsigned int cap;
	uint64_t *slots;
	uint64_t waits; /* condition waits on this queue (both sides) */
};

static void pq_push(struct pqueue *q, uint64_t v)
{
	pthread_mutex_lock(&q->lock);
	while (q->tail - q->head == q->cap) {
		q->waits++;
		pthread_cond_wait(&q->not_full, &q->lock);
	}
	q->slots[q->tail++ % q->cap] = v;
	pthread_cond_signal(&q->not_empty);
	pthread_mutex_unlock(&q->lock);
}

static uint64_t pq_pop(struct pqueue *q)
{
	uint64_t v;

	pthread_mutex_lock(&q->lock);
	while (q->tail == q->head) {
		q->waits++;
		pthread_cond_wait(&q->not_empty, &q->lock);
	}
	v = q->slots[q->head++ % q->cap];
	pthread_cond_signal(&q->not_full);
	pthread_mutex_unlock(&q->lock);
	return v;
}

/* ---- the queue on umcg_mutex and umcg_cond ---------------------------------- */

struct mqueue {
	struct umcg_mutex lock;
	struct umcg_cond not_empty;
	struct umcg_cond not_full;
	uint64_t head, tail;
	unsigned int cap;
	uint64_t *slots;
};

static void mq_push(struct mqueue *q, uint64_t v)
{
	umcg_mutex_lock(&q->lock);
	while (q->tail - q->head == q->cap)
		umcg_cond_wait(&q->not_full, &q->lock);
	q->slots[q->tail++ % q->cap] = v;
	umcg_cond_signal(&q->not_empty);
	umcg_mutex_unlock(&q->lock);
}

static uint64_t mq_pop(struct mqueue *q)
{
	uint64_t v;

	umcg_mutex_lock(&q->lock);
	while (q->tail == q->head)
		umcg_cond_wait(&q->not_empty, &q->lock);
	v = q->slots[q->head++ % q->cap];
	umcg_cond_signal(&q->not_full);
	umcg_mutex_unlock(&q->lock);
	return v;
}

/* ---- the floor: a futex token ring on one CPU -------------------------------- */

struct ring {
	uint32_t go[NR_THREADS][16]; /* member i's futex word, a cache line each */
	uint64_t rounds;
	int cpu;
	pthread_barrier_t barrier;
	uint64_t t0, t1;
};

struct ring_member {
	struct ring *r;
	uint32_t idx;
};

/*
 * Member i sleeps on its own word go[i] until it is 1 (acquire, pairing
 * with the release store of member i - 1), clears it, sets go[i + 1] to 1
 * (release) and wakes that one word: exactly one thread woken per step, a
 * same-CPU futex handoff and nothing else. Member 0 starts with the token.
 */
static void *ring_main(void *arg)
{
	struct ring_member *m = arg;
	struct ring *r = m->r;
	uint32_t *mine = &r->go[m->idx][0], *next = &r->go[(m->idx + 1) % NR_THREADS][0];

	pin_self(r->cpu);
	pthread_barrier_wait(&r->barrier);
	if (m->idx == 0)
		r->t0 = now_ns();
	for (uint64_t i = 0; i < r->rounds; i++) {
		while (!__atomic_load_n(mine, __ATOMIC_ACQUIRE))
			syscall(SYS_futex, mine, FUTEX_WAIT_PRIVATE, 0, NULL, NULL, 0);
		__atomic_store_n(mine, 0, __ATOMIC_RELAXED);
		__atomic_store_n(next, 1, __ATOMIC_RELEASE);
		syscall(SYS_futex, next, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
	}
	if (m->idx == NR_THREADS - 1)
		r->t1 = now_ns();
	return NULL;
}

static double run_floor(uint64_t rounds, int cpu)
{
	struct ring_member m[NR_THREADS];
	pthread_t th[NR_THREADS];
	struct ring r = { .rounds = rounds, .cpu = cpu };
	int i, ret;

	r.go[0][0] = 1;

	pthread_barrier_init(&r.barrier, NULL, NR_THREADS);
	for (i = 0; i < NR_THREADS; i++) {
		m[i].r = &r;
		m[i].idx = (uint32_t)i;
		ret = pthread_create(&th[i], NULL, ring_main, &m[i]);
		if (ret)
			die("pthread_create: %s", strerror(ret));
	}
	for (i = 0; i < NR_THREADS; i++)
		pthread_join(th[i], NULL);
	pthread_barrier_destroy(&r.barrier);
	return (double)rounds * 1e9 / (double)(r.t1 - r.t0);
}

/* ---- the pipeline ------------------------------------------------------------ */

enum mode {
	MODE_UMCG_ONE,
	MODE_UMCG_ALL,
	MODE_PTHREAD,
	MODE_CHAN,
	MODE_MUTEX_COND,
	MODE_FLOOR,
	NR_MODES
};

static const char *const mode_names[NR_MODES] = { "umcg_one_server", "umcg_all_servers",
						  "pthread",	     "chan",
						  "mutex_cond",	     "floor" };

struct pipeline {
	enum mode mode;
	uint64_t messages;
	struct uqueue uq[NR_QUEUES];
	struct pqueue pq[NR_QUEUES];
	struct mqueue mq[NR_QUEUES];
	struct umcg_chan *ch[NR_QUEUES];
	int started;
	pthread_barrier_t barrier; /* pthread mode */
	uint64_t t0, t1;
	uint64_t bad; /* sink: first wrong sequence number + 1, or 0 */
};

struct role {
	struct pipeline *p;
	int idx; /* 0 feeder, 1..NR_STAGES stages, NR_STAGES + 1 sink */
};

static uint64_t stage_fn(uint64_t v, int k)
{
	return v * 31 + (uint64_t)k;
}

static void pipe_send(struct pipeline *p, int q, uint64_t v)
{
	int ret;

	switch (p->mode) {
	case MODE_PTHREAD:
		pq_push(&p->pq[q], v);
		break;
	case MODE_CHAN:
		ret = umcg_chan_send(p->ch[q], &v);
		if (ret)
			die_err("umcg_chan_send", ret);
		break;
	case MODE_MUTEX_COND:
		mq_push(&p->mq[q], v);
		break;
	default:
		uq_push(&p->uq[q], v);
	}
}

static uint64_t pipe_recv(struct pipeline *p, int q)
{
	uint64_t v;
	int ret;

	switch (p->mode) {
	case MODE_PTHREAD:
		return pq_pop(&p->pq[q]);
	case MODE_CHAN:
		ret = umcg_chan_recv(p->ch[q], &v);
		if (ret)
			die_err("umcg_chan_recv", ret);
		return v;
	case MODE_MUTEX_COND:
		return mq_pop(&p->mq[q]);
	default:
		return uq_pop(&p->uq[q]);
	}
}

static void *role_main(void *arg)
{
	struct role *r = arg;
	struct pipeline *p = r->p;
	uint64_t i, v;
	int k;

	if (p->mode != MODE_PTHREAD) {
		/* Publish ourselves before any queue operation: the waker
		 * reads these after it saw our flag (seq_cst). */
		if (r->idx > 0)
			p->uq[r->idx - 1].consumer = umcg_self();
		if (r->idx < NR_THREADS - 1)
			p->uq[r->idx].producer = umcg_self();
		__atomic_fetch_add(&p->started, 1, __ATOMIC_RELAXED);
	} else {
		pthread_barrier_wait(&p->barrier);
	}

	if (r->idx == 0) {
		if (p->mode != MODE_PTHREAD) {
			while (__atomic_load_n(&p->started, __ATOMIC_RELAXED) < NR_THREADS)
				umcg_yield();
		}
		p->t0 = now_ns();
		for (i = 0; i < p->messages; i++)
			pipe_send(p, 0, i);
	} else if (r->idx <= NR_STAGES) {
		k = r->idx;
		for (i = 0; i < p->messages; i++)
			pipe_send(p, k, stage_fn(pipe_recv(p, k - 1), k));
	} else {
		for (i = 0; i < p->messages; i++) {
			uint64_t want = i;

			v = pipe_recv(p, NR_QUEUES - 1);
			for (k = 1; k <= NR_STAGES; k++)
				want = stage_fn(want, k);
			if (v != want && !p->bad)
				p->bad = i + 1;
		}
		p->t1 = now_ns();
	}
	return NULL;
}

struct result {
	double msgs_per_s;
	uint64_t waits; /* parks (umcg) or condition waits (pthread) */
};

static struct result run_pipe(enum mode mode, struct umcg_rt *rt, unsigned int cap,
			      uint64_t messages)
{
	struct role roles[NR_THREADS];
	struct umcg_worker *w[NR_THREADS];
	pthread_t th[NR_THREADS];
	struct umcg_worker_attr wa;
	struct result res = { 0 };
	struct pipeline *p;
	uint64_t *slots;
	int i, ret;

	p = calloc(1, sizeof(*p));
	slots = calloc((size_t)NR_QUEUES * cap, sizeof(*slots));
	if (!p || !slots)
		die("out of memory");
	p->mode = mode;
	p->messages = messages;
	for (i = 0; i < NR_QUEUES; i++) {
		p->uq[i].cap = cap;
		p->uq[i].slots = slots + (size_t)i * cap;
		p->pq[i].cap = cap;
		p->pq[i].slots = slots + (size_t)i * cap;
		pthread_mutex_init(&p->pq[i].lock, NULL);
		pthread_cond_init(&p->pq[i].not_empty, NULL);
		pthread_cond_init(&p->pq[i].not_full, NULL);
		p->mq[i].cap = cap;
		p->mq[i].slots = slots + (size_t)i * cap;
		if (umcg_mutex_init(&p->mq[i].lock) || umcg_cond_init(&p->mq[i].not_empty) ||
		    umcg_cond_init(&p->mq[i].not_full))
			die("umcg_mutex_init/umcg_cond_init failed");
		if (mode == MODE_CHAN) {
			ret = umcg_chan_create(&p->ch[i], cap, sizeof(uint64_t));
			if (ret)
				die_err("umcg_chan_create", ret);
		}
	}
	pthread_barrier_init(&p->barrier, NULL, NR_THREADS);

	for (i = 0; i < NR_THREADS; i++) {
		roles[i].p = p;
		roles[i].idx = i;
		if (mode == MODE_PTHREAD) {
			ret = pthread_create(&th[i], NULL, role_main, &roles[i]);
			if (ret)
				die("pthread_create: %s", strerror(ret));
		} else {
			umcg_worker_attr_init(&wa);
			wa.server = (int)((unsigned int)i % umcg_rt_nr_servers(rt));
			wa.name = "pipeline";
			ret = umcg_spawn(rt, &w[i], &wa, role_main, &roles[i]);
			if (ret)
				die_err("umcg_spawn", ret);
		}
	}
	for (i = 0; i < NR_THREADS; i++) {
		if (mode == MODE_PTHREAD) {
			pthread_join(th[i], NULL);
		} else {
			ret = umcg_join(w[i], NULL);
			if (ret)
				die_err("umcg_join", ret);
		}
	}
	if (p->bad)
		die("%s, capacity %u: message %" PRIu64 " arrived wrong", mode_names[mode], cap,
		    p->bad - 1);
	res.msgs_per_s = (double)messages * 1e9 / (double)(p->t1 - p->t0);
	for (i = 0; i < NR_QUEUES; i++) {
		res.waits += mode == MODE_PTHREAD ? p->pq[i].waits : p->uq[i].parks;
		pthread_mutex_destroy(&p->pq[i].lock);
		pthread_cond_destroy(&p->pq[i].not_empty);
		pthread_cond_destroy(&p->pq[i].not_full);
		if (p->ch[i] && umcg_chan_destroy(p->ch[i]))
			die("umcg_chan_destroy failed");
		if (umcg_mutex_destroy(&p->mq[i].lock) || umcg_cond_destroy(&p->mq[i].not_empty) ||
		    umcg_cond_destroy(&p->mq[i].not_full))
			die("umcg_mutex_destroy/umcg_cond_destroy failed");
	}
	pthread_barrier_destroy(&p->barrier);
	free(slots);
	free(p);
	return res;
}

/* ---- main ---------------------------------------------------------------------- */

static void usage(FILE *f)
{
	fprintf(f, "usage: umcg-bench-pipeline [options]\n"
		   "  --messages N   messages per run (default 50000)\n"
		   "  --repeat R     runs; medians reported (default 5)\n"
		   "  --quick        a short smoke run (N=2000, R=1)\n"
		   "  --help         this text\n"
		   "Prints one JSON object on standard output.\n");
}

static void parse_args(int argc, char **argv, struct options *opt)
{
	static const struct option longopts[] = {
		{ "messages", required_argument, NULL, 'n' },
		{ "repeat", required_argument, NULL, 'r' },
		{ "quick", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	opt->messages = 50000;
	opt->repeat = 5;
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case 'n':
			opt->messages = parse_u64("--messages", optarg, 1, UINT64_C(1) << 40);
			break;
		case 'r':
			opt->repeat = (unsigned int)parse_u64("--repeat", optarg, 1, 1000);
			break;
		case 'q':
			opt->messages = 2000;
			opt->repeat = 1;
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

static struct umcg_rt *make_rt(unsigned int nr_servers)
{
	struct umcg_rt_attr attr;
	struct umcg_rt *rt;
	int ret;

	umcg_rt_attr_init(&attr);
	attr.nr_servers = nr_servers;
	ret = umcg_rt_create(&rt, &attr);
	if (ret)
		die_err("umcg_rt_create", ret);
	ret = umcg_rt_start(rt);
	if (ret)
		die_err("umcg_rt_start", ret);
	return rt;
}

int main(int argc, char **argv)
{
	struct result(*runs)[NR_CAPS][NR_MODES];
	double *v, med[NR_CAPS][NR_MODES], waits[NR_CAPS][NR_MODES];
	struct umcg_rt *rts[NR_MODES];
	struct options opt;
	unsigned int r, c, k, m;
	struct json j;
	char key[32];
	int backend, floor_cpu;

	parse_args(argc, argv, &opt);
	backend = umcg_backend_active();
	if (backend < 0)
		die("no UMCG backend (%s): %s", strerror(-backend), umcg_backend_reason());
	rts[MODE_UMCG_ONE] = make_rt(1);
	rts[MODE_UMCG_ALL] = make_rt(0);
	rts[MODE_PTHREAD] = NULL;
	rts[MODE_CHAN] = rts[MODE_UMCG_ONE];
	rts[MODE_MUTEX_COND] = rts[MODE_UMCG_ONE];
	rts[MODE_FLOOR] = NULL;
	/* The one-server runtime's server sits on the first CPU of our mask
	 * (servers are pinned in mask order); the floor runs there too. */
	floor_cpu = first_cpu(NULL);

	runs = calloc(opt.repeat, sizeof(*runs));
	v = calloc(opt.repeat, sizeof(*v));
	if (!runs || !v)
		die("out of memory");
	for (r = 0; r < opt.repeat; r++) {
		/* Rotate the order of the six measurements from run to run. */
		for (k = 0; k < NR_CAPS * NR_MODES; k++) {
			unsigned int x = (k + r) % (NR_CAPS * NR_MODES);

			c = x / NR_MODES;
			m = x % NR_MODES;
			if (m == MODE_FLOOR)
				runs[r][c][m] = (struct result){ .msgs_per_s = run_floor(
									 opt.messages, floor_cpu) };
			else
				runs[r][c][m] =
					run_pipe((enum mode)m, rts[m], capacities[c], opt.messages);
		}
		fprintf(stderr, "run %u/%u:", r + 1, opt.repeat);
		for (c = 0; c < NR_CAPS; c++)
			for (m = 0; m < NR_MODES; m++)
				fprintf(stderr, " %s/%u %.0f", mode_names[m], capacities[c],
					runs[r][c][m].msgs_per_s);
		fputs(" msgs/s\n", stderr);
	}
	for (c = 0; c < NR_CAPS; c++) {
		for (m = 0; m < NR_MODES; m++) {
			waits[c][m] = 0;
			for (r = 0; r < opt.repeat; r++) {
				v[r] = runs[r][c][m].msgs_per_s;
				waits[c][m] += (double)runs[r][c][m].waits;
			}
			med[c][m] = median(v, opt.repeat);
			waits[c][m] /= (double)opt.repeat * (double)opt.messages;
		}
	}

	json_begin(&j, stdout);
	json_str(&j, "bench", "pipeline");
	json_str(&j, "backend", umcg_backend_name(backend));
	json_str(&j, "backend_reason", umcg_backend_reason());
	json_str(&j, "policy", umcg_policy_fifo.name);
	json_u64(&j, "stages", NR_STAGES);
	json_u64(&j, "threads", NR_THREADS);
	json_u64(&j, "messages", opt.messages);
	json_u64(&j, "repeat", opt.repeat);
	json_u64(&j, "servers_all", umcg_rt_nr_servers(rts[MODE_UMCG_ALL]));
	for (c = 0; c < NR_CAPS; c++) {
		snprintf(key, sizeof(key), "capacity_%u", capacities[c]);
		json_object(&j, key);
		json_u64(&j, "capacity", capacities[c]);
		for (m = 0; m < NR_MODES; m++) {
			json_object(&j, mode_names[m]);
			json_double(&j, "msgs_per_s", med[c][m], 0);
			if (m <= MODE_PTHREAD)
				json_double(&j,
					    m == MODE_PTHREAD ? "cond_waits_per_msg" :
								"parks_per_msg",
					    waits[c][m], 3);
			json_close(&j, '}');
		}
		json_double(&j, "ratio", med[c][MODE_UMCG_ONE] / med[c][MODE_PTHREAD], 3);
		json_double(&j, "ratio_all_servers", med[c][MODE_UMCG_ALL] / med[c][MODE_PTHREAD],
			    3);
		json_double(&j, "chan_floor_ratio", med[c][MODE_CHAN] / med[c][MODE_FLOOR], 3);
		json_double(&j, "mutex_cond_floor_ratio",
			    med[c][MODE_MUTEX_COND] / med[c][MODE_FLOOR], 3);
		json_close(&j, '}');
	}
	json_array(&j, "runs");
	for (r = 0; r < opt.repeat; r++) {
		json_object(&j, NULL);
		for (c = 0; c < NR_CAPS; c++) {
			snprintf(key, sizeof(key), "capacity_%u", capacities[c]);
			json_object(&j, key);
			for (m = 0; m < NR_MODES; m++)
				json_double(&j, mode_names[m], runs[r][c][m].msgs_per_s, 0);
			json_close(&j, '}');
		}
		json_close(&j, '}');
	}
	json_close(&j, ']');
	json_end(&j);

	if (umcg_rt_destroy(rts[MODE_UMCG_ONE]) || umcg_rt_destroy(rts[MODE_UMCG_ALL]))
		die("umcg_rt_destroy failed");
	free(runs);
	free(v);
	return 0;
}
