/* SPDX-License-Identifier: MIT */
/*
 * demo.c - umcg-demo: a mixed workload on the libumcg runtime.
 *
 * One runtime with a server per CPU (or --servers N), a timeslice of
 * --slice-us (0: cooperative) and the --policy fifo or priority, runs for
 * --seconds:
 *
 *  - CPU-bound workers (--workers N, default two per server) count the
 *    primes of random ranges of 1000 numbers by trial division and check
 *    each count against a sieve built before the start. With a timeslice
 *    they never yield: preemption shares the CPUs. Cooperative, they
 *    yield after every range.
 *  - Echo pairs: a client worker writes a 64-byte message into a Unix
 *    stream socketpair with umcg_write(), its server worker reads it with
 *    umcg_read(), transforms it and writes it back, and the client checks
 *    the reply, then sleeps 200 us. Both block in the kernel and give their
 *    server away meanwhile (<umcg/io.h>).
 *  - Sleepers sleep 0.5 to 3 ms with umcg_sleep_for(), check that they did
 *    not wake early, and compute a little.
 *  - A feeder worker spawns short detached tasks, four every millisecond
 *    while fewer than 64 are alive; each task counts the primes of a range
 *    of 50 numbers and checks the count against the sieve.
 * Under the priority policy the feeder runs at priority 20, the tasks at
 * 16, the echo workers at 12, the sleepers at 8 and the CPU-bound workers
 * at 0.
 *
 * Every 250 ms the main thread (not a worker) prints a progress line. At
 * the end it stops the workers, joins them, drains the tasks and prints a
 * table per server and per kind of worker, the backend and why it was
 * chosen, and the policy. Exit status: 0 if every check held, 1 if one
 * failed (a wrong count or echo, an early wake-up, a kind of worker that
 * never ran, no preemption with a timeslice or one without, an error from
 * the library), 2 for a bad option.
 *
 * Shared state: `stop` is stored by the main thread with release and read
 * by the workers with acquire. The counters are relaxed atomics: the
 * progress lines read them while they change (each is exact by itself, not
 * with the others), and the final report reads them after umcg_join() and
 * umcg_rt_drain(), which order every worker's updates before it.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <umcg/io.h>
#include <umcg/runtime.h>

#define SIEVE_LIMIT 2000000u
#define CPU_RANGE 1000u /* numbers per CPU-bound round */
#define TASK_RANGE 50u /* numbers per short task */
#define NR_ECHO_PAIRS 2
#define NR_SLEEPERS 2
#define ECHO_MSG 64
#define FEED_BURST 4
#define FEED_MAX_ALIVE 64
#define PROGRESS_NS 250000000ull

enum kind {
	K_CPU,
	K_ECHO_CLIENT,
	K_ECHO_SERVER,
	K_SLEEPER,
	K_FEEDER,
	NR_KINDS
};

static const char *const kind_names[NR_KINDS] = { "cpu-bound", "echo client", "echo server",
						  "sleeper", "feeder" };
static const int kind_prio[NR_KINDS] = { 0, 12, 12, 8, 20 };
#define TASK_PRIO 16

struct options {
	unsigned int servers;
	int workers; /* -1: two per server */
	uint64_t slice_us;
	const struct umcg_policy_ops *policy;
	double seconds;
	int server_priority; /* 0, or SCHED_FIFO 1-99 */
};

/* Counters, relaxed atomics (see the header comment). */
static struct {
	uint64_t cpu_rounds, cpu_bad;
	uint64_t echoes, echo_bad, io_errors;
	uint64_t sleeps, sleeps_early;
	uint64_t tasks_spawned, tasks_done, tasks_bad, spawn_failures;
	uint64_t lib_errors;
} ctr;

static int stop;
static unsigned char *composite; /* the sieve: composite[n] for n < SIEVE_LIMIT */
static struct umcg_rt *rt;
static bool cooperative; /* written before the runtime starts */

#define CTR_ADD(field, v) __atomic_fetch_add(&ctr.field, (v), __ATOMIC_RELAXED)
#define CTR_GET(field) __atomic_load_n(&ctr.field, __ATOMIC_RELAXED)

static bool stopping(void)
{
	/* Acquire: pairs with the main thread's release store. */
	return __atomic_load_n(&stop, __ATOMIC_ACQUIRE);
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* xorshift64: each worker draws from its own state. */
static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* ---- primes ------------------------------------------------------------- */

static void build_sieve(void)
{
	uint64_t i, j;

	composite = calloc(SIEVE_LIMIT, 1);
	if (!composite) {
		fprintf(stderr, "umcg-demo: out of memory\n");
		exit(1);
	}
	composite[0] = composite[1] = 1;
	for (i = 2; i * i < SIEVE_LIMIT; i++) {
		if (composite[i])
			continue;
		for (j = i * i; j < SIEVE_LIMIT; j += i)
			composite[j] = 1;
	}
}

/* The primes in [@a, @a + @len), by trial division. */
static unsigned int count_primes_trial(uint32_t a, uint32_t len)
{
	unsigned int count = 0;
	uint32_t n, d;

	for (n = a; n < a + len; n++) {
		bool prime = n >= 2;

		if (n > 2 && n % 2 == 0)
			prime = false;
		for (d = 3; prime && d * d <= n; d += 2)
			if (n % d == 0)
				prime = false;
		count += prime;
	}
	return count;
}

/* The same count, from the sieve. */
static unsigned int count_primes_sieve(uint32_t a, uint32_t len)
{
	unsigned int count = 0;
	uint32_t n;

	for (n = a; n < a + len; n++)
		count += !composite[n];
	return count;
}

static bool check_range(uint64_t *seed, uint32_t len)
{
	uint32_t a = (uint32_t)(rnd(seed) % (SIEVE_LIMIT - len));

	return count_primes_trial(a, len) == count_primes_sieve(a, len);
}

/* ---- the workers ----------------------------------------------------------- */

static void lib_error(const char *what, long err)
{
	fprintf(stderr, "umcg-demo: %s: %s\n", what, strerror((int)-err));
	CTR_ADD(lib_errors, 1);
}

/* @arg: the worker's number. Returns its number of rounds. */
static void *cpu_worker(void *arg)
{
	uint64_t seed = 0x9e3779b97f4a7c15ull * ((uintptr_t)arg + 1), rounds = 0;
	int ret;

	while (!stopping()) {
		if (!check_range(&seed, CPU_RANGE))
			CTR_ADD(cpu_bad, 1);
		CTR_ADD(cpu_rounds, 1);
		rounds++;
		if (cooperative && (ret = umcg_yield()))
			lib_error("umcg_yield", ret);
	}
	return (void *)(uintptr_t)rounds;
}

/* The reply to @msg: every byte plus one, the sequence number kept. */
static void echo_transform(unsigned char *msg)
{
	int i;

	for (i = 8; i < ECHO_MSG; i++)
		msg[i]++;
}

/* Read exactly ECHO_MSG bytes. Return: 1, 0 at end of stream, or -errno. */
static int read_msg(int fd, unsigned char *buf)
{
	size_t got = 0;
	ssize_t n;

	while (got < ECHO_MSG) {
		n = umcg_read(fd, buf + got, ECHO_MSG - got);
		if (n <= 0)
			return n == 0 && got == 0 ? 0 : n == 0 ? -EPIPE : (int)n;
		got += (size_t)n;
	}
	return 1;
}

struct echo_pair {
	int fd[2]; /* [0] client's end, [1] server's end */
	unsigned int idx;
};

static void *echo_client(void *arg)
{
	struct echo_pair *ep = arg;
	unsigned char msg[ECHO_MSG], reply[ECHO_MSG];
	uint64_t seq, n = 0;
	ssize_t w;
	int i, ret;

	for (seq = 0; !stopping(); seq++) {
		memcpy(msg, &seq, 8);
		for (i = 8; i < ECHO_MSG; i++)
			msg[i] = (unsigned char)(seq * 7 + (uint64_t)i + ep->idx);
		w = umcg_write(ep->fd[0], msg, ECHO_MSG);
		if (w != ECHO_MSG) {
			lib_error("umcg_write", w < 0 ? w : -EIO);
			CTR_ADD(io_errors, 1);
			break;
		}
		ret = read_msg(ep->fd[0], reply);
		if (ret <= 0) {
			lib_error("umcg_read", ret < 0 ? ret : -EPIPE);
			CTR_ADD(io_errors, 1);
			break;
		}
		echo_transform(msg);
		if (memcmp(msg, reply, ECHO_MSG))
			CTR_ADD(echo_bad, 1);
		CTR_ADD(echoes, 1);
		n++;
		ret = umcg_sleep_for(200000);
		if (ret)
			lib_error("umcg_sleep_for", ret);
	}
	/* The echo server sees the end of the stream and returns. */
	shutdown(ep->fd[0], SHUT_WR);
	return (void *)(uintptr_t)n;
}

static void *echo_server(void *arg)
{
	struct echo_pair *ep = arg;
	unsigned char msg[ECHO_MSG];
	uint64_t n = 0;
	ssize_t w;
	int ret;

	for (;;) {
		ret = read_msg(ep->fd[1], msg);
		if (ret == 0)
			break; /* the client is done */
		if (ret < 0) {
			lib_error("umcg_read", ret);
			CTR_ADD(io_errors, 1);
			break;
		}
		echo_transform(msg);
		w = umcg_write(ep->fd[1], msg, ECHO_MSG);
		if (w != ECHO_MSG) {
			lib_error("umcg_write", w < 0 ? w : -EIO);
			CTR_ADD(io_errors, 1);
			break;
		}
		n++;
	}
	return (void *)(uintptr_t)n;
}

static void *sleeper(void *arg)
{
	uint64_t seed = 0xd1b54a32d192ed03ull * ((uintptr_t)arg + 1), n = 0, d, t0, t1;
	int ret;

	while (!stopping()) {
		d = 500000 + rnd(&seed) % 2500000;
		t0 = umcg_now();
		ret = umcg_sleep_for(d);
		t1 = umcg_now();
		if (ret)
			lib_error("umcg_sleep_for", ret);
		else if (t1 - t0 < d)
			CTR_ADD(sleeps_early, 1);
		if (!check_range(&seed, TASK_RANGE))
			CTR_ADD(cpu_bad, 1);
		CTR_ADD(sleeps, 1);
		n++;
	}
	return (void *)(uintptr_t)n;
}

/* A short detached task; @arg: its number. */
static void *task(void *arg)
{
	uint64_t seed = 0xa0761d6478bd642full * ((uintptr_t)arg + 1);

	if (!check_range(&seed, TASK_RANGE))
		CTR_ADD(tasks_bad, 1);
	CTR_ADD(tasks_done, 1);
	return NULL;
}

static void *feeder(void *arg)
{
	struct umcg_worker_attr wa;
	uint64_t id = 0;
	int i, ret;

	(void)arg;
	umcg_worker_attr_init(&wa);
	wa.stack_size = 64 * 1024;
	wa.priority = TASK_PRIO;
	wa.name = "task";
	while (!stopping()) {
		for (i = 0; i < FEED_BURST; i++) {
			if (CTR_GET(tasks_spawned) - CTR_GET(tasks_done) >= FEED_MAX_ALIVE)
				break;
			/* Counted first: the task may finish before
			 * umcg_spawn() returns. */
			CTR_ADD(tasks_spawned, 1);
			ret = umcg_spawn(rt, NULL, &wa, task, (void *)(uintptr_t)id);
			if (ret) {
				/* Out of threads for now: not the demo's fault. */
				CTR_ADD(tasks_spawned, (uint64_t)-1);
				CTR_ADD(spawn_failures, 1);
				break;
			}
			id++;
		}
		ret = umcg_sleep_for(1000000);
		if (ret)
			lib_error("umcg_sleep_for", ret);
	}
	return (void *)(uintptr_t)id;
}

/* ---- main ---------------------------------------------------------------------- */

/*
 * struct worker_slot - one long-lived worker.
 * @w: its handle.
 * @kind: what it does.
 * @fn: its function, run by slot_main().
 * @arg: the function's argument.
 * @result: what the function returned (rounds, echoes, sleeps, tasks
 *	spawned); written by the worker before it counts itself in
 *	`finished` (release), read by main after its acquire load.
 * @st: its counters, read by main once every function returned.
 */
struct worker_slot {
	struct umcg_worker *w;
	enum kind kind;
	umcg_worker_fn fn;
	void *arg;
	uint64_t result;
	struct umcg_worker_stats st;
};

static unsigned int finished; /* long-lived workers whose function returned */

static void *slot_main(void *arg)
{
	struct worker_slot *slot = arg;

	slot->result = (uint64_t)(uintptr_t)slot->fn(slot->arg);
	/* Release: pairs with the main thread's acquire load. */
	__atomic_fetch_add(&finished, 1, __ATOMIC_RELEASE);
	return NULL;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: umcg-demo [options]\n"
		"  --servers N         servers (default: one per CPU)\n"
		"  --workers N         CPU-bound workers (default: two per server)\n"
		"  --slice-us N        timeslice in microseconds; 0 = cooperative (default 1000)\n"
		"  --policy NAME       fifo or priority (default fifo)\n"
		"  --seconds S         how long the workload runs (default 3)\n"
		"  --server-priority P run the servers SCHED_FIFO at P (1-99; needs\n"
		"                      CAP_SYS_NICE or RLIMIT_RTPRIO; default 0 = no)\n"
		"  --help              this text\n"
		"Exit status: 0 if every check held, 1 if one failed, 2 for a bad option.\n");
}

static uint64_t parse_uint(const char *opt, const char *s, uint64_t max)
{
	unsigned long long v;
	char *end;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (!*s || *end || errno || s[0] == '-' || v > max) {
		fprintf(stderr, "umcg-demo: %s wants an integer in [0, %" PRIu64 "], not '%s'\n",
			opt, max, s);
		exit(2);
	}
	return v;
}

static void parse_args(int argc, char **argv, struct options *opt)
{
	static const struct option longopts[] = {
		{ "servers", required_argument, NULL, 's' },
		{ "workers", required_argument, NULL, 'w' },
		{ "slice-us", required_argument, NULL, 'S' },
		{ "policy", required_argument, NULL, 'p' },
		{ "seconds", required_argument, NULL, 't' },
		{ "server-priority", required_argument, NULL, 'P' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	char *end;
	int c;

	opt->servers = 0;
	opt->workers = -1;
	opt->slice_us = 1000;
	opt->policy = &umcg_policy_fifo;
	opt->seconds = 3;
	opt->server_priority = 0;
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case 's':
			opt->servers = (unsigned int)parse_uint("--servers", optarg, 1024);
			if (!opt->servers) {
				fprintf(stderr, "umcg-demo: --servers wants at least 1\n");
				exit(2);
			}
			break;
		case 'w':
			opt->workers = (int)parse_uint("--workers", optarg, 4096);
			break;
		case 'S':
			opt->slice_us = parse_uint("--slice-us", optarg, 10000000);
			break;
		case 'p':
			if (!strcmp(optarg, "fifo")) {
				opt->policy = &umcg_policy_fifo;
			} else if (!strcmp(optarg, "priority")) {
				opt->policy = &umcg_policy_priority;
			} else {
				fprintf(stderr, "umcg-demo: --policy is fifo or priority\n");
				exit(2);
			}
			break;
		case 't':
			errno = 0;
			opt->seconds = strtod(optarg, &end);
			if (!*optarg || *end || errno ||
			    !(opt->seconds >= 0.1 && opt->seconds <= 3600)) {
				fprintf(stderr,
					"umcg-demo: --seconds wants a number in [0.1, 3600]\n");
				exit(2);
			}
			break;
		case 'P':
			opt->server_priority = (int)parse_uint("--server-priority", optarg, 99);
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

static void sum_servers(struct umcg_server_stats *sum)
{
	struct umcg_server_stats s;
	unsigned int i;

	memset(sum, 0, sizeof(*sum));
	for (i = 0; i < umcg_rt_nr_servers(rt); i++) {
		if (umcg_rt_server_stats(rt, i, &s))
			continue;
		sum->switches += s.switches;
		sum->preemptions += s.preemptions;
		sum->blocks += s.blocks;
		sum->yields += s.yields;
		sum->steals += s.steals;
		sum->idle_wakeups += s.idle_wakeups;
		sum->wakeups_sent += s.wakeups_sent;
		sum->missed_wakeups += s.missed_wakeups;
	}
}

static int spawn_one(struct worker_slot *slot, enum kind kind, umcg_worker_fn fn, void *arg)
{
	struct umcg_worker_attr wa;
	int ret;

	umcg_worker_attr_init(&wa);
	wa.priority = kind_prio[kind];
	wa.name = kind_names[kind];
	slot->kind = kind;
	slot->fn = fn;
	slot->arg = arg;
	ret = umcg_spawn(rt, &slot->w, &wa, slot_main, slot);
	if (ret)
		fprintf(stderr, "umcg-demo: umcg_spawn(%s): %s\n", kind_names[kind],
			strerror(-ret));
	return ret;
}

static void print_server_table(void)
{
	struct umcg_server_stats s, sum;
	unsigned int i;

	printf("\n%-7s %4s %10s %12s %8s %8s %7s %13s %13s\n", "server", "cpu", "switches",
	       "preemptions", "blocks", "yields", "steals", "idle-wakeups", "wakeups-sent");
	for (i = 0; i < umcg_rt_nr_servers(rt); i++) {
		if (umcg_rt_server_stats(rt, i, &s))
			continue;
		printf("%-7u %4d %10" PRIu64 " %12" PRIu64 " %8" PRIu64 " %8" PRIu64 " %7" PRIu64
		       " %13" PRIu64 " %13" PRIu64 "\n",
		       i, s.cpu, s.switches, s.preemptions, s.blocks, s.yields, s.steals,
		       s.idle_wakeups, s.wakeups_sent);
	}
	sum_servers(&sum);
	printf("%-7s %4s %10" PRIu64 " %12" PRIu64 " %8" PRIu64 " %8" PRIu64 " %7" PRIu64
	       " %13" PRIu64 " %13" PRIu64 "\n",
	       "all", "", sum.switches, sum.preemptions, sum.blocks, sum.yields, sum.steals,
	       sum.idle_wakeups, sum.wakeups_sent);
}

static void print_kind_table(const struct worker_slot *slots, unsigned int n)
{
	unsigned int k, i;

	printf("\n%-12s %3s %10s %12s %8s %8s %11s %11s %11s %9s\n", "workers", "n", "switches",
	       "preemptions", "blocks", "yields", "running-ms", "runnable-ms", "blocked-ms",
	       "work-done");
	for (k = 0; k < NR_KINDS; k++) {
		struct umcg_worker_stats t = { 0 };
		uint64_t done = 0;
		unsigned int cnt = 0;

		for (i = 0; i < n; i++) {
			if (slots[i].kind != k)
				continue;
			cnt++;
			t.switches += slots[i].st.switches;
			t.preemptions += slots[i].st.preemptions;
			t.blocks += slots[i].st.blocks;
			t.yields += slots[i].st.yields;
			t.running_ns += slots[i].st.running_ns;
			t.runnable_ns += slots[i].st.runnable_ns;
			t.blocked_ns += slots[i].st.blocked_ns;
			done += slots[i].result;
		}
		if (!cnt)
			continue;
		printf("%-12s %3u %10" PRIu64 " %12" PRIu64 " %8" PRIu64 " %8" PRIu64
		       " %11.1f %11.1f %11.1f %9" PRIu64 "\n",
		       kind_names[k], cnt, t.switches, t.preemptions, t.blocks, t.yields,
		       t.running_ns / 1e6, t.runnable_ns / 1e6, t.blocked_ns / 1e6, done);
	}
	printf("(work-done: ranges counted, echoes, sleeps, tasks spawned)\n");
}

/* One failed check: say which. */
static int fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int fail(const char *fmt, ...)
{
	va_list ap;

	fputs("CHECK FAILED: ", stdout);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	return 1;
}

int main(int argc, char **argv)
{
	struct echo_pair pairs[NR_ECHO_PAIRS];
	struct umcg_server_stats sum;
	struct worker_slot *slots;
	struct umcg_rt_attr attr;
	unsigned int nslots = 0, nr, i, ncpu_workers;
	uint64_t t0, next, end, now;
	struct options opt;
	int ret, bad = 0;

	parse_args(argc, argv, &opt);
	build_sieve();
	cooperative = opt.slice_us == 0;

	umcg_rt_attr_init(&attr);
	attr.nr_servers = opt.servers;
	attr.timeslice_ns = opt.slice_us * 1000;
	attr.policy = opt.policy;
	attr.server_priority = opt.server_priority;
	ret = umcg_rt_create(&rt, &attr);
	if (ret) {
		fprintf(stderr, "umcg-demo: umcg_rt_create: %s (%s)\n", strerror(-ret),
			umcg_backend_reason());
		return 1;
	}
	nr = umcg_rt_nr_servers(rt);
	ncpu_workers = opt.workers < 0 ? 2 * nr : (unsigned int)opt.workers;
	printf("umcg-demo: %u %sservers, %s policy, %s, backend %s\n", nr,
	       opt.server_priority ? "SCHED_FIFO " : "", opt.policy->name,
	       cooperative ? "cooperative" : "preemptive",
	       umcg_backend_name(umcg_backend_active()));
	printf("           %u CPU-bound workers, %d echo pairs, %d sleepers, a feeder of short "
	       "tasks; %.1f s\n",
	       ncpu_workers, NR_ECHO_PAIRS, NR_SLEEPERS, opt.seconds);
	fflush(stdout);
	ret = umcg_rt_start(rt);
	if (ret) {
		fprintf(stderr, "umcg-demo: umcg_rt_start: %s%s\n", strerror(-ret),
			ret == -EPERM ? " (SCHED_FIFO servers need CAP_SYS_NICE or RLIMIT_RTPRIO)" :
					"");
		return 1;
	}

	slots = calloc(ncpu_workers + 2 * NR_ECHO_PAIRS + NR_SLEEPERS + 1, sizeof(*slots));
	if (!slots) {
		fprintf(stderr, "umcg-demo: out of memory\n");
		return 1;
	}
	for (i = 0; i < NR_ECHO_PAIRS; i++) {
		pairs[i].idx = i;
		if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pairs[i].fd)) {
			fprintf(stderr, "umcg-demo: socketpair: %s\n", strerror(errno));
			return 1;
		}
	}

	t0 = now_ns();
	ret = 0;
	for (i = 0; !ret && i < ncpu_workers; i++)
		ret = spawn_one(&slots[nslots++], K_CPU, cpu_worker, (void *)(uintptr_t)i);
	for (i = 0; !ret && i < NR_ECHO_PAIRS; i++) {
		ret = spawn_one(&slots[nslots++], K_ECHO_SERVER, echo_server, &pairs[i]);
		if (!ret)
			ret = spawn_one(&slots[nslots++], K_ECHO_CLIENT, echo_client, &pairs[i]);
	}
	for (i = 0; !ret && i < NR_SLEEPERS; i++)
		ret = spawn_one(&slots[nslots++], K_SLEEPER, sleeper, (void *)(uintptr_t)i);
	if (!ret)
		ret = spawn_one(&slots[nslots++], K_FEEDER, feeder, NULL);
	if (ret) {
		nslots--; /* the slot of the failed spawn holds no worker */
		bad |= fail("could not spawn every worker");
	}

	/* Progress, until the deadline (or at once after a failed spawn). */
	end = t0 + (uint64_t)(opt.seconds * 1e9);
	next = t0 + PROGRESS_NS;
	while (!ret && (now = now_ns()) < end) {
		struct timespec ts;
		uint64_t until = next < end ? next : end;

		ts.tv_sec = (time_t)(until / 1000000000ull);
		ts.tv_nsec = (long)(until % 1000000000ull);
		clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
		if (now_ns() < next)
			continue;
		next += PROGRESS_NS;
		sum_servers(&sum);
		printf("%6.2f s  tasks %7" PRIu64 "  switches %8" PRIu64 "  preemptions %7" PRIu64
		       "  blocks %7" PRIu64 "  ranges %6" PRIu64 "  echoes %6" PRIu64 "\n",
		       (now_ns() - t0) / 1e9, CTR_GET(tasks_done), sum.switches, sum.preemptions,
		       sum.blocks, CTR_GET(cpu_rounds), CTR_GET(echoes));
		fflush(stdout);
	}

	/* Release: pairs with the workers' acquire loads in stopping(). */
	__atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
	if (ret) {
		/* An echo server whose client never started would wait for
		 * it forever: end every stream from the client's side. */
		for (i = 0; i < NR_ECHO_PAIRS; i++)
			shutdown(pairs[i].fd[0], SHUT_RDWR);
	}
	/* Read each worker's counters once its function returned, before
	 * joining it frees them. Acquire: pairs with slot_main(). */
	while (__atomic_load_n(&finished, __ATOMIC_ACQUIRE) < nslots)
		usleep(1000);
	for (i = 0; i < nslots; i++) {
		if (umcg_worker_stats(slots[i].w, &slots[i].st))
			bad |= fail("umcg_worker_stats(%s) failed", kind_names[slots[i].kind]);
		ret = umcg_join(slots[i].w, NULL);
		if (ret)
			bad |= fail("umcg_join(%s): %s", kind_names[slots[i].kind], strerror(-ret));
	}
	ret = umcg_rt_drain(rt);
	if (ret)
		bad |= fail("umcg_rt_drain: %s", strerror(-ret));
	printf("%6.2f s  stopped; all workers joined and tasks drained\n", (now_ns() - t0) / 1e9);
	for (i = 0; i < NR_ECHO_PAIRS; i++) {
		close(pairs[i].fd[0]);
		close(pairs[i].fd[1]);
	}

	print_server_table();
	print_kind_table(slots, nslots);
	printf("\nbackend: %s (%s)\n", umcg_backend_name(umcg_backend_active()),
	       umcg_backend_reason());
	printf("policy:  %s; timeslice %s", opt.policy->name,
	       cooperative ? "none (cooperative)" : "");
	if (!cooperative)
		printf("%" PRIu64 " us", opt.slice_us);
	printf("\nresults: %" PRIu64 " ranges counted (%" PRIu64 " wrong), %" PRIu64
	       " echoes (%" PRIu64 " wrong, %" PRIu64 " I/O errors), %" PRIu64 " sleeps (%" PRIu64
	       " early), %" PRIu64 " tasks spawned and %" PRIu64 " done (%" PRIu64
	       " wrong, %" PRIu64 " spawns refused)\n",
	       CTR_GET(cpu_rounds), CTR_GET(cpu_bad), CTR_GET(echoes), CTR_GET(echo_bad),
	       CTR_GET(io_errors), CTR_GET(sleeps), CTR_GET(sleeps_early), CTR_GET(tasks_spawned),
	       CTR_GET(tasks_done), CTR_GET(tasks_bad), CTR_GET(spawn_failures));

	/* The checks. */
	sum_servers(&sum);
	if (CTR_GET(cpu_bad))
		bad |= fail("%" PRIu64 " prime counts disagree with the sieve", CTR_GET(cpu_bad));
	if (CTR_GET(echo_bad) || CTR_GET(io_errors))
		bad |= fail("%" PRIu64 " wrong echoes, %" PRIu64 " I/O errors", CTR_GET(echo_bad),
			    CTR_GET(io_errors));
	if (CTR_GET(sleeps_early))
		bad |= fail("%" PRIu64 " sleeps ended early", CTR_GET(sleeps_early));
	if (CTR_GET(tasks_bad))
		bad |= fail("%" PRIu64 " tasks computed a wrong count", CTR_GET(tasks_bad));
	if (CTR_GET(tasks_done) != CTR_GET(tasks_spawned))
		bad |= fail("%" PRIu64 " tasks spawned but %" PRIu64 " finished",
			    CTR_GET(tasks_spawned), CTR_GET(tasks_done));
	if (!CTR_GET(tasks_done))
		bad |= fail("no short task ran");
	if (CTR_GET(lib_errors))
		bad |= fail("%" PRIu64 " calls into the library failed", CTR_GET(lib_errors));
	for (i = 0; i < nslots; i++) {
		if (!slots[i].result)
			bad |= fail("a worker of kind \"%s\" did no work at all",
				    kind_names[slots[i].kind]);
	}
	if (!cooperative && ncpu_workers && !sum.preemptions)
		bad |= fail("a timeslice, CPU-bound workers, and no preemption");
	if (cooperative && sum.preemptions)
		bad |= fail("%" PRIu64 " preemptions without a timeslice", sum.preemptions);
	if (sum.missed_wakeups)
		bad |= fail("%" PRIu64 " wake-ups a server missed (found at its backstop)",
			    sum.missed_wakeups);

	ret = umcg_rt_destroy(rt);
	if (ret)
		bad |= fail("umcg_rt_destroy: %s", strerror(-ret));
	free(slots);
	free(composite);
	printf("%s\n", bad ? "FAILED" : "OK: every check held");
	return bad ? 1 : 0;
}
