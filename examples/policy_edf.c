/* SPDX-License-Identifier: MIT */
/*
 * policy_edf.c - an earliest-deadline-first scheduling policy written the
 * way a user of libumcg would write one (public headers only), and a
 * program that shows it at work.
 *
 * The policy. Each server keeps its runnable workers in a pairing heap
 * ordered by (deadline, arrival): the worker with the earliest deadline
 * runs next, and workers with equal deadlines run in the order they were
 * queued. The heap is threaded through the struct umcg_policy_link that
 * every worker carries for its policy:
 *
 *	link->next	first child
 *	link->prev	next sibling
 *	link->key	the deadline (0, "none", is stored as UINT64_MAX: after
 *			every real deadline)
 *	link->data	the arrival number on its server, for ties
 *
 * so enqueue is O(1), pick is O(log n) amortized, and nothing is
 * allocated once the policy exists. That matters beyond speed: a policy
 * runs on a server thread, and a server that waited for a lock held by one
 * of its own workers (malloc's, say, held by a worker it has switched out)
 * would wait forever. The deadline is read when a worker is queued, so a
 * worker that calls umcg_worker_set_deadline() is placed by its new
 * deadline the next time it yields. A worker handed back with
 * UMCG_ENQ_RETURN (picked, but it did not get the CPU) keeps its old key
 * and arrival number and so goes back exactly where it was.
 *
 * Locking: none. The runtime calls enqueue() and pick_next() only on the
 * server they name, and this policy does not steal (steal() is optional),
 * so each heap is only ever touched by its own server thread. Without
 * stealing a worker stays on the server it started on; a policy for many
 * servers would add steal() and nr_queued(), with a lock per heap.
 *
 * The program. One server, cooperative. A launcher worker with the
 * earliest deadline of all spawns NR_JOBS jobs with shuffled deadlines;
 * since the launcher's own deadline is the earliest, EDF keeps picking it
 * each time it yields, until all jobs have been queued (the policy counts
 * them), and only then does it open the jobs' gate and finish (a job that
 * ran while the launcher was blocked in umcg_spawn() waits at the gate;
 * when the launcher wakes, its earlier deadline preempts that job at once:
 * preempts(), wake-up preemption). Each job writes down when it first
 * runs and each time it comes back from one of its NR_YIELDS yields. EDF
 * gives the earliest queued deadline the CPU, so a job that yields is
 * picked again at once, and the runs come job by job, by deadline. One job,
 * the most urgent, moves its deadline after all the others' after its
 * first run, and so finishes last. The program computes the order EDF must
 * produce from the deadlines, compares, prints a report, and exits with 1
 * if the order is not the expected one.
 *
 * Usage: umcg-example-edf [seed]	(seed of the shuffle, default 1)
 */
#include <errno.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <umcg/runtime.h>

/* ---- the policy ----------------------------------------------------------- */

/* Counters the program reads (policy_arg); updated on the server thread. */
struct edf_stats {
	atomic_ulong enqueued[UMCG_ENQ_RETURN + 1]; /* by reason */
	atomic_ulong picked;
};

struct edf_server {
	struct umcg_policy_link *root; /* the heap; NULL when empty */
	uint64_t arrivals; /* arrival numbers handed out */
};

struct edf {
	unsigned int nr_servers;
	struct edf_stats *stats; /* may be NULL */
	struct edf_server srv[];
};

#define CHILD(l) ((l)->next)
#define SIBLING(l) ((l)->prev)

/* Does @a run before @b? Earlier deadline first; on a tie, earlier arrival. */
static bool edf_before(const struct umcg_policy_link *a, const struct umcg_policy_link *b)
{
	if (a->key != b->key)
		return a->key < b->key;
	return (uintptr_t)a->data < (uintptr_t)b->data;
}

/* Meld two heap roots (each with no sibling) into one. */
static struct umcg_policy_link *meld(struct umcg_policy_link *a, struct umcg_policy_link *b)
{
	struct umcg_policy_link *t;

	if (!a)
		return b;
	if (!b)
		return a;
	if (edf_before(b, a)) {
		t = a;
		a = b;
		b = t;
	}
	SIBLING(b) = CHILD(a);
	CHILD(a) = b;
	return a;
}

/*
 * The children of a removed root, @first and its siblings, into one heap:
 * meld them in pairs from left to right, then meld the pairs from right to
 * left (the two-pass rule that gives the O(log n) amortized bound). The
 * pairs are stacked through their sibling pointers, so no recursion.
 */
static struct umcg_policy_link *merge_pairs(struct umcg_policy_link *first)
{
	struct umcg_policy_link *stack = NULL, *root = NULL, *a, *b;

	while (first) {
		a = first;
		b = SIBLING(a);
		first = b ? SIBLING(b) : NULL;
		SIBLING(a) = NULL;
		if (b)
			SIBLING(b) = NULL;
		a = meld(a, b);
		SIBLING(a) = stack;
		stack = a;
	}
	while (stack) {
		a = stack;
		stack = SIBLING(a);
		SIBLING(a) = NULL;
		root = meld(root, a);
	}
	return root;
}

static void *edf_create(unsigned int nr_servers, void *arg)
{
	struct edf *e;
	unsigned int i;

	e = malloc(sizeof(*e) + (size_t)nr_servers * sizeof(e->srv[0]));
	if (!e)
		return NULL;
	e->nr_servers = nr_servers;
	e->stats = arg;
	for (i = 0; i < nr_servers; i++) {
		e->srv[i].root = NULL;
		e->srv[i].arrivals = 0;
	}
	return e;
}

static void edf_destroy(void *policy)
{
	free(policy);
}

static void edf_enqueue(void *policy, unsigned int server, struct umcg_worker *w,
			enum umcg_enqueue_reason why)
{
	struct edf *e = policy;
	struct edf_server *s = &e->srv[server];
	struct umcg_policy_link *l = umcg_worker_link(w);

	if (why != UMCG_ENQ_RETURN) {
		uint64_t deadline = umcg_worker_deadline(w);

		l->key = deadline ? deadline : UINT64_MAX;
		l->data = (void *)(uintptr_t)++s->arrivals;
	}
	CHILD(l) = NULL;
	SIBLING(l) = NULL;
	s->root = meld(s->root, l);
	if (e->stats)
		atomic_fetch_add_explicit(&e->stats->enqueued[why], 1, memory_order_relaxed);
}

static struct umcg_worker *edf_pick_next(void *policy, unsigned int server)
{
	struct edf *e = policy;
	struct edf_server *s = &e->srv[server];
	struct umcg_policy_link *l = s->root;

	if (!l)
		return NULL;
	s->root = merge_pairs(CHILD(l));
	CHILD(l) = NULL;
	if (e->stats)
		atomic_fetch_add_explicit(&e->stats->picked, 1, memory_order_relaxed);
	return umcg_worker_from_link(l);
}

/*
 * Wake-up preemption: a worker that arrives with an earlier deadline than
 * the running one's (as enqueue() stored it) takes the CPU at once.
 */
static bool edf_preempts(void *policy, unsigned int server, struct umcg_worker *w,
			 struct umcg_worker *running)
{
	(void)policy;
	(void)server;
	return edf_before(umcg_worker_link(w), umcg_worker_link(running));
}

static const struct umcg_policy_ops edf_policy = {
	.name = "edf",
	.create = edf_create,
	.destroy = edf_destroy,
	.enqueue = edf_enqueue,
	.pick_next = edf_pick_next,
	.flags = UMCG_POLICY_F_WAKE_PREEMPT,
	.preempts = edf_preempts,
};

/* ---- the program ------------------------------------------------------------ */

#define NR_JOBS 12
#define NR_YIELDS 3
#define NR_RUNS (NR_JOBS * (NR_YIELDS + 1))
#define MSEC 1000000ull
#define GIVE_UP_NS (20000 * MSEC) /* the launcher waits at most this */

struct job {
	int id;
	uint64_t deadline; /* given at spawn */
	bool procrastinate; /* moves its deadline to `late` after its first run */
	int first_run; /* rank among first runs; written by the job */
};

static struct umcg_rt *rt;
static struct edf_stats stats;
static struct job jobs[NR_JOBS];
static uint64_t late; /* after every job's deadline */
static int runs[NR_RUNS];
static atomic_int nr_runs, nr_first;
static atomic_int launch_errors;
static atomic_bool gate_open; /* set by the launcher once every job is queued */
static bool launcher_gave_up;

/* Workers make no system calls that may block here; they only record. */
static void ran(int id)
{
	int i = atomic_fetch_add(&nr_runs, 1);

	if (i < NR_RUNS)
		runs[i] = id;
}

static void *job_main(void *arg)
{
	struct job *j = arg;
	int k;

	/*
	 * A job may get the CPU before all are queued: while the launcher is
	 * blocked inside umcg_spawn() (creating a thread can sleep), the
	 * server runs what it has. Such a job waits here, yielding, until the
	 * launcher comes back (it preempts us: its deadline is the earliest)
	 * and has seen every job queued; the runs counted start after it.
	 */
	while (!atomic_load(&gate_open))
		umcg_yield();
	j->first_run = atomic_fetch_add(&nr_first, 1);
	ran(j->id);
	if (j->procrastinate)
		umcg_worker_set_deadline(late);
	for (k = 0; k < NR_YIELDS; k++) {
		umcg_yield();
		ran(j->id);
	}
	return NULL;
}

static void *launcher_main(void *arg)
{
	uint64_t give_up = umcg_now() + GIVE_UP_NS;
	struct umcg_worker_attr wa;
	int i;

	(void)arg;
	for (i = 0; i < NR_JOBS; i++) {
		umcg_worker_attr_init(&wa);
		wa.deadline = jobs[i].deadline;
		if (umcg_spawn(rt, NULL, &wa, job_main, &jobs[i]))
			atomic_fetch_add(&launch_errors, 1);
	}
	/*
	 * Our deadline is the earliest: each yield lets the server queue the
	 * jobs that have started meanwhile, and gives us the CPU back. Once
	 * all of them (and we, once) came in as new, EDF decides the rest.
	 */
	while (atomic_load(&stats.enqueued[UMCG_ENQ_NEW]) <
	       (unsigned long)(NR_JOBS + 1 - atomic_load(&launch_errors))) {
		if (umcg_now() > give_up) {
			launcher_gave_up = true;
			break;
		}
		umcg_yield();
	}
	atomic_store(&gate_open, true);
	return NULL;
}

/* xorshift32: a reproducible shuffle. */
static uint32_t next_rand(uint32_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 17;
	*s ^= *s << 5;
	return *s;
}

/*
 * The run order EDF must produce on one server: repeatedly the unfinished
 * job with the earliest current deadline, which changes once for the
 * procrastinator (deadlines are distinct, so there are no ties to break).
 */
static void expected_runs(int *out)
{
	uint64_t dl[NR_JOBS];
	int left[NR_JOBS], i, n, best;

	for (i = 0; i < NR_JOBS; i++) {
		dl[i] = jobs[i].deadline;
		left[i] = NR_YIELDS + 1;
	}
	for (n = 0; n < NR_RUNS; n++) {
		best = -1;
		for (i = 0; i < NR_JOBS; i++) {
			if (left[i] && (best < 0 || dl[i] < dl[best]))
				best = i;
		}
		out[n] = best;
		if (left[best]-- == NR_YIELDS + 1 && jobs[best].procrastinate)
			dl[best] = late;
	}
}

int main(int argc, char **argv)
{
	uint32_t seed0 = argc > 1 ? (uint32_t)strtoul(argv[1], NULL, 0) : 1, seed;
	int offset[NR_JOBS], expect[NR_RUNS], i, k, t, ret, backend, bad = 0;
	struct umcg_worker_attr wa;
	struct umcg_rt_attr attr;
	uint64_t base;

	setvbuf(stdout, NULL, _IOLBF, 0);
	backend = umcg_backend_active();
	printf("backend: %s (%s)\n", backend < 0 ? "none" : umcg_backend_name(backend),
	       umcg_backend_reason());
	if (backend < 0)
		return 1;
	seed = seed0 ? seed0 : 1; /* xorshift never leaves 0 */

	/* Deadlines base + 1..NR_JOBS ms, shuffled; the launcher's is base. */
	base = umcg_now() + 1000 * MSEC;
	late = base + (NR_JOBS + 1) * MSEC;
	for (i = 0; i < NR_JOBS; i++)
		offset[i] = i + 1;
	for (i = NR_JOBS - 1; i > 0; i--) {
		k = (int)(next_rand(&seed) % (uint32_t)(i + 1));
		t = offset[i];
		offset[i] = offset[k];
		offset[k] = t;
	}
	for (i = 0; i < NR_JOBS; i++) {
		jobs[i].id = i;
		jobs[i].deadline = base + (uint64_t)offset[i] * MSEC;
		jobs[i].procrastinate = offset[i] == 1;
		jobs[i].first_run = -1;
	}

	umcg_rt_attr_init(&attr);
	attr.nr_servers = 1;
	attr.policy = &edf_policy;
	attr.policy_arg = &stats;
	ret = umcg_rt_create(&rt, &attr);
	if (!ret)
		ret = umcg_rt_start(rt);
	if (ret) {
		fprintf(stderr, "runtime: %s\n", strerror(-ret));
		return 1;
	}
	umcg_worker_attr_init(&wa);
	wa.deadline = base;
	ret = umcg_spawn(rt, NULL, &wa, launcher_main, NULL);
	if (ret) {
		fprintf(stderr, "umcg_spawn: %s\n", strerror(-ret));
		return 1;
	}
	ret = umcg_rt_drain(rt);
	if (!ret)
		ret = umcg_rt_destroy(rt);
	if (ret) {
		fprintf(stderr, "runtime: %s\n", strerror(-ret));
		return 1;
	}

	printf("edf: %d jobs on 1 server, cooperative, %d yields each; shuffle seed %" PRIu32 "\n",
	       NR_JOBS, NR_YIELDS, seed0);
	printf("  job  deadline  first run\n");
	for (i = 0; i < NR_JOBS; i++)
		printf("  %3d  %5d ms  %9d%s\n", i, offset[i], jobs[i].first_run,
		       jobs[i].procrastinate ? "  (then moves its deadline to the end)" : "");
	printf("  runs:");
	for (i = 0; i < NR_RUNS && i < atomic_load(&nr_runs); i++)
		printf(" %d", runs[i]);
	printf("\n  policy: queued new %lu, yield %lu, wake %lu, return %lu; picked %lu\n",
	       atomic_load(&stats.enqueued[UMCG_ENQ_NEW]),
	       atomic_load(&stats.enqueued[UMCG_ENQ_YIELD]),
	       atomic_load(&stats.enqueued[UMCG_ENQ_WAKE]),
	       atomic_load(&stats.enqueued[UMCG_ENQ_RETURN]), atomic_load(&stats.picked));

	if (atomic_load(&launch_errors)) {
		printf("FAILED: %d jobs could not be spawned\n", atomic_load(&launch_errors));
		return 1;
	}
	if (launcher_gave_up) {
		printf("FAILED: not all jobs were queued after %llu s\n",
		       GIVE_UP_NS / 1000000000ull);
		return 1;
	}
	for (i = 0; i < NR_JOBS; i++) {
		if (jobs[i].first_run != offset[i] - 1) {
			printf("FAILED: job %d (deadline %d ms) ran first as number %d, not %d\n",
			       i, offset[i], jobs[i].first_run, offset[i] - 1);
			bad = 1;
		}
	}
	expected_runs(expect);
	if (atomic_load(&nr_runs) != NR_RUNS) {
		printf("FAILED: %d runs recorded, not %d\n", atomic_load(&nr_runs), NR_RUNS);
		bad = 1;
	} else {
		for (i = 0; i < NR_RUNS; i++) {
			if (runs[i] != expect[i]) {
				printf("FAILED: run %d was job %d, EDF would run job %d\n", i,
				       runs[i], expect[i]);
				bad = 1;
				break;
			}
		}
	}
	printf("%s\n", bad ? "FAILED" :
			     "ok: first runs follow the deadlines, and every run is "
			     "the earliest deadline then queued");
	return bad;
}
