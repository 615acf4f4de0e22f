/* SPDX-License-Identifier: MIT */
/*
 * yield.c - umcg-bench-yield: how many umcg_yield() calls a server carries
 * per second, against the floor of a futex handoff between two threads on
 * one CPU, measured in the same run.
 *
 * One server: a runtime with a single server (pinned to the first CPU of
 * the mask) runs K workers. Each worker yields in a loop until the main
 * thread says go, then yields --iterations more times, and the last worker
 * to finish takes the time. Every yield is one switch: the yielding worker
 * goes back to the queue and the server runs the next one (with one
 * worker, the same one again), so ns per yield is ns per worker switch.
 * The server's own switch counter over the timed window is reported as
 * switches_per_yield, as a check of that claim.
 *
 * All servers: a runtime with one server per CPU of the mask, K workers
 * started on each server, the same loop. Reported as the aggregate rate and
 * the rate per server; the servers share nothing but the policy's queues
 * (and steal from each other when one runs dry at the end).
 *
 * Floor: two plain threads pinned to the CPU of the one-server runtime
 * ping-pong on a futex word (FUTEX_PRIVATE): A stores 1 and wakes B, B
 * sees 1, stores 0 and wakes A. One handoff each way; the round trips are
 * timed and halved, K * --iterations handoffs in all. "ratio" is ns per
 * umcg switch (one server) / ns per futex handoff.
 *
 * Each of --repeat runs measures the three, in an order that rotates from
 * run to run so that drift hits all of them; the report gives the medians
 * and every run.
 *
 * Protocols. go: the main thread's release store pairs with the workers'
 * acquire loads; the timestamp written before it is read by the workers
 * only through the report after the joins. done: a relaxed counter whose
 * last incrementer stores the end time; the main thread reads it after
 * umcg_join(), which orders it. The futex word: each side's release store
 * pairs with the other side's acquire load.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "common.h"

#include <getopt.h>

#include <umcg/runtime.h>

struct options {
	unsigned int workers; /* per server */
	uint64_t iterations; /* yields per worker */
	unsigned int repeat;
};

/* One timed UMCG run, shared by its workers. */
struct yrun {
	uint64_t iterations;
	unsigned int nworkers;
	int ready; /* workers that started */
	int go; /* set by main: start counting */
	unsigned int done;
	int errors; /* umcg_yield() failures */
	uint64_t t_end; /* written by the last worker */
};

struct umcg_result {
	double ns_per_yield; /* elapsed / yields of all servers */
	double yields_per_s; /* all servers together */
	uint64_t switches; /* the servers' counters over the window */
	uint64_t steals;
	uint64_t preemptions;
};

struct futex_pair {
	uint32_t word;
	uint64_t rounds;
};

struct run {
	struct umcg_result one, all;
	double futex_ns;
};

static void *yield_worker(void *arg)
{
	struct yrun *y = arg;
	uint64_t i;

	__atomic_fetch_add(&y->ready, 1, __ATOMIC_RELAXED);
	/* Acquire: pairs with the main thread's release store of go. */
	while (!__atomic_load_n(&y->go, __ATOMIC_ACQUIRE)) {
		if (umcg_yield()) {
			__atomic_fetch_add(&y->errors, 1, __ATOMIC_RELAXED);
			return NULL;
		}
	}
	for (i = 0; i < y->iterations; i++) {
		if (umcg_yield()) {
			__atomic_fetch_add(&y->errors, 1, __ATOMIC_RELAXED);
			break;
		}
	}
	if (__atomic_add_fetch(&y->done, 1, __ATOMIC_RELAXED) == y->nworkers)
		y->t_end = now_ns();
	return NULL;
}

static void sum_stats(struct umcg_rt *rt, struct umcg_server_stats *sum)
{
	struct umcg_server_stats s;
	unsigned int i;

	memset(sum, 0, sizeof(*sum));
	for (i = 0; i < umcg_rt_nr_servers(rt); i++) {
		if (umcg_rt_server_stats(rt, i, &s))
			die("umcg_rt_server_stats(%u) failed", i);
		sum->switches += s.switches;
		sum->yields += s.yields;
		sum->steals += s.steals;
		sum->preemptions += s.preemptions;
	}
}

/* K workers per server of @rt yield @opt->iterations times each. */
static struct umcg_result umcg_run(struct umcg_rt *rt, const struct options *opt)
{
	unsigned int nr = umcg_rt_nr_servers(rt), n = opt->workers * nr, i;
	struct umcg_server_stats s0, s1;
	struct umcg_worker **w;
	struct umcg_worker_attr wa;
	struct umcg_result res;
	struct yrun y = { .iterations = opt->iterations, .nworkers = n };
	uint64_t t_go;
	int ret;

	w = calloc(n, sizeof(*w));
	if (!w)
		die("out of memory");
	for (i = 0; i < n; i++) {
		umcg_worker_attr_init(&wa);
		wa.server = (int)(i % nr);
		wa.name = "yield";
		ret = umcg_spawn(rt, &w[i], &wa, yield_worker, &y);
		if (ret)
			die_err("umcg_spawn", ret);
	}
	while (__atomic_load_n(&y.ready, __ATOMIC_RELAXED) < (int)n)
		sleep_ns(200 * NSEC_PER_USEC);
	sum_stats(rt, &s0);
	t_go = now_ns();
	/* Release: pairs with the workers' acquire loads. */
	__atomic_store_n(&y.go, 1, __ATOMIC_RELEASE);
	for (i = 0; i < n; i++) {
		ret = umcg_join(w[i], NULL);
		if (ret)
			die_err("umcg_join", ret);
	}
	sum_stats(rt, &s1);
	free(w);
	if (y.errors)
		die("umcg_yield() failed %d times", y.errors);

	res.ns_per_yield = (double)(y.t_end - t_go) / ((double)n * (double)opt->iterations);
	res.yields_per_s = 1e9 / res.ns_per_yield;
	res.switches = s1.switches - s0.switches;
	res.steals = s1.steals - s0.steals;
	res.preemptions = s1.preemptions - s0.preemptions;
	return res;
}

/* ---- the futex floor ---------------------------------------------------- */

static void *pong_main(void *arg)
{
	struct futex_pair *p = arg;
	uint64_t i;

	for (i = 0; i < p->rounds + 1; i++) {
		/* Acquire: pairs with ping's release store of 1. */
		while (__atomic_load_n(&p->word, __ATOMIC_ACQUIRE) == 0)
			futex_wait(&p->word, 0);
		__atomic_store_n(&p->word, 0, __ATOMIC_RELEASE);
		futex_wake(&p->word, 1);
	}
	return NULL;
}

struct ping_arg {
	struct futex_pair *p;
	int cpu;
	double ns_per_handoff;
};

static void *ping_main(void *arg)
{
	struct ping_arg *a = arg;
	struct futex_pair *p = a->p;
	pthread_attr_t attr;
	cpu_set_t set;
	pthread_t th;
	uint64_t i, t0 = 0;
	int ret;

	pin_self(a->cpu);
	CPU_ZERO(&set);
	CPU_SET(a->cpu, &set);
	pthread_attr_init(&attr);
	pthread_attr_setaffinity_np(&attr, sizeof(set), &set);
	ret = pthread_create(&th, &attr, pong_main, p);
	pthread_attr_destroy(&attr);
	if (ret)
		die("pthread_create: %s", strerror(ret));
	/* Round 0 is untimed: it waits for the new thread to start. */
	for (i = 0; i < p->rounds + 1; i++) {
		if (i == 1)
			t0 = now_ns();
		/* Release: pairs with pong's acquire load. */
		__atomic_store_n(&p->word, 1, __ATOMIC_RELEASE);
		futex_wake(&p->word, 1);
		while (__atomic_load_n(&p->word, __ATOMIC_ACQUIRE) == 1)
			futex_wait(&p->word, 1);
	}
	a->ns_per_handoff = (double)(now_ns() - t0) / (2.0 * (double)p->rounds);
	pthread_join(th, NULL);
	return NULL;
}

static double futex_run(const struct options *opt, int cpu)
{
	struct futex_pair p = { .word = 0 };
	struct ping_arg a = { .p = &p, .cpu = cpu };
	pthread_t th;
	int ret;

	/* As many handoffs as one-server umcg switches. */
	p.rounds = opt->workers * opt->iterations / 2;
	if (!p.rounds)
		p.rounds = 1;
	ret = pthread_create(&th, NULL, ping_main, &a);
	if (ret)
		die("pthread_create: %s", strerror(ret));
	pthread_join(th, NULL);
	return a.ns_per_handoff;
}

/* ---- main ------------------------------------------------------------------ */

static void usage(FILE *f)
{
	fprintf(f, "usage: umcg-bench-yield [options]\n"
		   "  --workers K      workers per server (default 4)\n"
		   "  --iterations N   timed yields per worker (default 50000)\n"
		   "  --repeat R       runs; medians reported (default 5)\n"
		   "  --quick          a short smoke run (K=4, N=2000, R=1)\n"
		   "  --help           this text\n"
		   "Prints one JSON object on standard output.\n");
}

static void parse_args(int argc, char **argv, struct options *opt)
{
	static const struct option longopts[] = {
		{ "workers", required_argument, NULL, 'w' },
		{ "iterations", required_argument, NULL, 'n' },
		{ "repeat", required_argument, NULL, 'r' },
		{ "quick", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	opt->workers = 4;
	opt->iterations = 50000;
	opt->repeat = 5;
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case 'w':
			opt->workers = (unsigned int)parse_u64("--workers", optarg, 1, 1024);
			break;
		case 'n':
			opt->iterations = parse_u64("--iterations", optarg, 1, UINT64_C(1) << 32);
			break;
		case 'r':
			opt->repeat = (unsigned int)parse_u64("--repeat", optarg, 1, 1000);
			break;
		case 'q':
			opt->workers = 4;
			opt->iterations = 2000;
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

static void json_umcg(struct json *j, const char *key, const struct umcg_result *r, unsigned int nr)
{
	json_object(j, key);
	json_double(j, "yields_per_s", r->yields_per_s, 0);
	json_double(j, "ns_per_yield_per_server", r->ns_per_yield * nr, 1);
	json_u64(j, "switches", r->switches);
	json_u64(j, "steals", r->steals);
	json_u64(j, "preemptions", r->preemptions);
	json_close(j, '}');
}

int main(int argc, char **argv)
{
	struct options opt;
	struct umcg_rt *one, *all;
	double *v1, *va, *vf, m1, ma, mf, sw1 = 0;
	unsigned int r, k, nr_all;
	struct run *runs;
	struct json j;
	int backend, cpu;

	parse_args(argc, argv, &opt);
	backend = umcg_backend_active();
	if (backend < 0)
		die("no UMCG backend (%s): %s", strerror(-backend), umcg_backend_reason());
	cpu = first_cpu(NULL);
	one = make_rt(1);
	all = make_rt(0);
	nr_all = umcg_rt_nr_servers(all);

	runs = calloc(opt.repeat, sizeof(*runs));
	v1 = calloc(opt.repeat, sizeof(*v1));
	va = calloc(opt.repeat, sizeof(*va));
	vf = calloc(opt.repeat, sizeof(*vf));
	if (!runs || !v1 || !va || !vf)
		die("out of memory");
	for (r = 0; r < opt.repeat; r++) {
		for (k = 0; k < 3; k++) {
			switch ((r + k) % 3) {
			case 0:
				runs[r].one = umcg_run(one, &opt);
				break;
			case 1:
				runs[r].futex_ns = futex_run(&opt, cpu);
				break;
			default:
				runs[r].all = umcg_run(all, &opt);
				break;
			}
		}
		v1[r] = runs[r].one.ns_per_yield;
		va[r] = runs[r].all.yields_per_s;
		vf[r] = runs[r].futex_ns;
		sw1 += (double)runs[r].one.switches;
		fprintf(stderr,
			"run %u/%u: one server %.1f ns/yield, all %u servers %.0f yields/s, "
			"futex %.1f ns/handoff\n",
			r + 1, opt.repeat, v1[r], nr_all, va[r], vf[r]);
	}
	m1 = median(v1, opt.repeat);
	ma = median(va, opt.repeat);
	mf = median(vf, opt.repeat);

	json_begin(&j, stdout);
	json_str(&j, "bench", "yield");
	json_str(&j, "backend", umcg_backend_name(backend));
	json_str(&j, "backend_reason", umcg_backend_reason());
	json_str(&j, "policy", umcg_policy_fifo.name);
	json_int(&j, "cpu", cpu);
	json_u64(&j, "workers_per_server", opt.workers);
	json_u64(&j, "iterations", opt.iterations);
	json_u64(&j, "repeat", opt.repeat);

	json_object(&j, "one_server");
	json_u64(&j, "servers", 1);
	json_u64(&j, "workers", opt.workers);
	json_double(&j, "ns_per_yield", m1, 1);
	json_double(&j, "yields_per_s", 1e9 / m1, 0);
	json_double(&j, "switches_per_yield",
		    sw1 / ((double)opt.repeat * opt.workers * (double)opt.iterations), 3);
	json_close(&j, '}');

	json_object(&j, "all_servers");
	json_u64(&j, "servers", nr_all);
	json_u64(&j, "workers", (uint64_t)opt.workers * nr_all);
	json_double(&j, "yields_per_s", ma, 0);
	json_double(&j, "yields_per_s_per_server", ma / nr_all, 0);
	json_double(&j, "ns_per_yield_per_server", 1e9 * nr_all / ma, 1);
	json_double(&j, "ratio", 1e9 * nr_all / ma / mf, 3);
	json_close(&j, '}');

	json_object(&j, "futex");
	json_int(&j, "cpu", cpu);
	json_double(&j, "ns_per_handoff", mf, 1);
	json_close(&j, '}');

	json_double(&j, "ratio", m1 / mf, 3);

	json_array(&j, "runs");
	for (r = 0; r < opt.repeat; r++) {
		json_object(&j, NULL);
		json_umcg(&j, "one_server", &runs[r].one, 1);
		json_umcg(&j, "all_servers", &runs[r].all, nr_all);
		json_double(&j, "futex_ns_per_handoff", runs[r].futex_ns, 1);
		json_close(&j, '}');
	}
	json_close(&j, ']');
	json_end(&j);

	if (umcg_rt_destroy(one) || umcg_rt_destroy(all))
		die("umcg_rt_destroy failed");
	free(runs);
	free(v1);
	free(va);
	free(vf);
	return 0;
}
