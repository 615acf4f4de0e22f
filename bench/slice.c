/* SPDX-License-Identifier: MIT */
/*
 * slice.c - umcg-bench-slice: what a preemption costs today, against what
 * a timer costs a busy CPU at all, for slices of 1 ms and of 100 us. The
 * measurement is slicemeter.c's (its header comment has the method);
 * umcg-bench-bimodal reports the same figures beside its latencies.
 *
 * Per period, under "slice_1000us" and "slice_100us": requested_us,
 * achieved_slice_us and achieved_slice_ratio (achieved / requested),
 * preempt_cost_us, timer_floor_us, cost_floor_ratio (preempt_cost_us /
 * timer_floor_us), pairs_without_preemption, and every pair's figures.
 * A single pair's figure is noisy on a shared machine; the medians over the
 * default 10 pairs are what to quote.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "common.h"

#include <getopt.h>

#include <umcg/umcg.h>

#include "slicemeter.h"

#define NR_PERIODS 2

static const uint64_t periods_us[NR_PERIODS] = { 1000, 100 };

/* ---- main ------------------------------------------------------------------------ */

static void usage(FILE *f)
{
	fprintf(f,
		"usage: umcg-bench-slice [options]\n"
		"  --window-ms W         length of a window at 100 us, 5 W at 1 ms (default 100)\n"
		"  --pairs N             off/on window pairs per figure; medians reported\n"
		"                        (default 10)\n"
		"  --server-priority P   SCHED_FIFO servers at P, if allowed (default 0)\n"
		"  --preempt MODE        server or timer: umcg_rt_attr.preempt (default:\n"
		"                        UMCG_PREEMPT, else server)\n"
		"  --quick               a short smoke run (W=20, N=2)\n"
		"  --help                this text\n"
		"Prints one JSON object on standard output, progress on standard error.\n");
}

static void parse_args(int argc, char **argv, struct slice_meter *opt)
{
	static const struct option longopts[] = {
		{ "window-ms", required_argument, NULL, 'w' },
		{ "pairs", required_argument, NULL, 'n' },
		{ "server-priority", required_argument, NULL, 'p' },
		{ "preempt", required_argument, NULL, 'm' },
		{ "quick", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	opt->window_ms = 100;
	opt->pairs = 10;
	opt->server_priority = 0;
	opt->preempt = UMCG_PREEMPT_DEFAULT;
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case 'w':
			opt->window_ms = parse_u64("--window-ms", optarg, 10, 60000);
			break;
		case 'n':
			opt->pairs = (unsigned int)parse_u64("--pairs", optarg, 1, 1000);
			break;
		case 'p':
			opt->server_priority = (int)parse_u64("--server-priority", optarg, 0, 99);
			break;
		case 'm':
			opt->preempt = parse_preempt(optarg);
			break;
		case 'q':
			opt->window_ms = 20;
			opt->pairs = 2;
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

int main(int argc, char **argv)
{
	struct slice_figures f[NR_PERIODS];
	struct slice_meter opt;
	unsigned int i;
	struct json j;
	int backend;

	parse_args(argc, argv, &opt);
	backend = umcg_backend_active();
	if (backend < 0)
		die("no UMCG backend (%s): %s", strerror(-backend), umcg_backend_reason());
	slice_meter_init(spin_calibrate());
	for (i = 0; i < NR_PERIODS; i++)
		slice_meter_measure(&opt, periods_us[i], &f[i]);

	json_begin(&j, stdout);
	json_str(&j, "bench", "slice");
	json_str(&j, "backend", umcg_backend_name(backend));
	json_str(&j, "backend_reason", umcg_backend_reason());
	json_int(&j, "cpu", slice_meter_cpu());
	json_str(&j, "preempt", preempt_name(opt.preempt_used));
	json_u64(&j, "window_ms", opt.window_ms);
	json_u64(&j, "pairs", opt.pairs);
	json_int(&j, "server_priority", opt.server_priority);
	json_double(&j, "chunk_ns", slice_meter_chunk_ns(), 1);
	for (i = 0; i < NR_PERIODS; i++) {
		char key[32];

		snprintf(key, sizeof(key), "slice_%" PRIu64 "us", periods_us[i]);
		json_object(&j, key);
		slice_figures_json(&j, &f[i], opt.pairs);
		json_close(&j, '}');
		slice_figures_free(&f[i]);
	}
	json_end(&j);
	return 0;
}
