/* SPDX-License-Identifier: MIT */
/*
 * slicemeter.h - what one preemption costs and how long a slice really
 * lasts, against what a timer costs a busy CPU at all. Shared by
 * umcg-bench-slice, which reports only this, and umcg-bench-bimodal, which
 * reports it beside the latencies the same slices buy. slicemeter.c has
 * the method.
 */
#ifndef UMCG_BENCH_SLICEMETER_H
#define UMCG_BENCH_SLICEMETER_H

#include <stdint.h>

/* What to measure, and how long. */
struct slice_meter {
	uint64_t window_ms; /* a window at 100 us; longer periods get longer ones */
	unsigned int pairs; /* off/on window pairs; medians are reported */
	int server_priority; /* SCHED_FIFO servers at this, if allowed; set to
			      * 0 by the measurement where it is denied */
	int preempt; /* umcg_rt_attr.preempt */
	int preempt_used; /* set by the measurement: umcg_rt_preempt_mode() */
};

/* The figures for one period. The *_pairs arrays hold one entry per pair
 * (NaN where the on window had no event); slice_figures_free() frees them. */
struct slice_figures {
	uint64_t period_us;
	double timer_floor_us; /* CPU a busy CPU loses per bare timer expiry */
	double preempt_cost_us; /* CPU one preemption by the runtime takes */
	double achieved_slice_us; /* mean wall time a worker held the CPU */
	unsigned int pairs_without_preemption;
	double *timer_floor_us_pairs, *preempt_cost_us_pairs, *achieved_slice_us_pairs;
};

/*
 * slice_meter_init() - once, before any slice_meter_measure(): installs the
 * floor timer's signal handler and sizes the busy loop's chunks from
 * @ns_per_round (spin_calibrate() of common.h).
 */
void slice_meter_init(double ns_per_round);

/* The length of a chunk of the busy loop, in ns. */
double slice_meter_chunk_ns(void);

/* The CPU measured: the first of the caller's affinity mask. */
int slice_meter_cpu(void);

/*
 * slice_meter_measure() - the timer floor at @period_us, then a runtime
 * with one server and that timeslice, into @f. The calling thread moves off
 * the measured CPU while it runs and gets its own mask back at the end.
 * Progress goes to standard error; errors end the program (die()).
 */
void slice_meter_measure(struct slice_meter *m, uint64_t period_us, struct slice_figures *f);

/*
 * slice_figures_json() - write @f into the JSON object open in @j:
 * requested_us, achieved_slice_us, achieved_slice_ratio, preempt_cost_us,
 * timer_floor_us, cost_floor_ratio, pairs_without_preemption and the
 * figures of each of the @pairs pairs. (struct json is common.h's.)
 */
struct json;
void slice_figures_json(struct json *j, const struct slice_figures *f, unsigned int pairs);

void slice_figures_free(struct slice_figures *f);

#endif
