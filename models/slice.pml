/* SPDX-License-Identifier: MIT */
/*
 * slice.pml - a worker's slice timer on the emulation (src/emulated.c,
 * "Slice timers": slice_run_start(), slice_stop(), slice_due(), the kick
 * handler, e_block_begin(), slice_off()).
 *
 * One worker goes through NRUNS runs. A run starts in the library: the
 * worker is RUNNING, then sets `live` to the run's slice and arms its
 * timer for it. In user code it may yield (in the library again), block in
 * a region (disarm, then a call that a signal would cut) or be preempted,
 * by its own timer through the handler or by its server's kick. The timer
 * fires only while armed, for the run it was armed for, whenever that
 * run's slice is over; the watcher may disarm it at any moment. Time passes
 * on its own too: `over` is the last run whose slice has ended.
 *
 * The handler runs on the worker's thread, so it is one atomic step
 * between two of the worker's; it may run any time after its signal was
 * generated (ThreadSanitizer defers handlers; the kernel delivers at once,
 * one of the orders explored), except across a timer_settime() that
 * disarms: the kernel delivers what is pending on the way out of that
 * call (the worker waits for `pending` to clear there).
 *
 * Checked:
 *   - no signal is generated while the worker is in a region's call
 *     (the assertion in the region): a timer never cuts an announced call;
 *   - a run is ended by its timer only once its own slice is over (the
 *     assertion at the preemption): never a stale expiry of an earlier run.
 *
 * Mutants (models/mutate.sh):
 *   M_SLICE_NO_STOP      the yield path does not clear `live`
 *                        (slice_stop() in e_wait()): a late handler finds
 *                        the old slice due as the next run starts and ends
 *                        it at once (the livelock seen under TSan).
 *   M_SLICE_NO_DISARM    e_block_begin() does not disarm: the timer fires
 *                        into the region's call.
 */

#ifndef NRUNS
#define NRUNS 3
#endif

byte cur = 0; /* the run under way (1..NRUNS), 0 before the first */
byte over = 0; /* runs 1..over have their slice over */
byte live = 0; /* slice_live: the run whose slice is armed and not taken */
byte armed = 0; /* the kernel timer: the run it fires for, 0 = off */
bool pending = false; /* a kick signal generated, its handler not yet run */
bool running = false; /* state RUNNING */
bool in_lib = true;
bool in_call = false; /* inside a region's blocking call */
bool tf = false; /* TF_PREEMPT */
byte tf_run = 0; /* the run whose slice end set it (0: a kick) */
bool done = false; /* the worker has finished its runs */

/* The timer, the watcher and the passing of time. */
active proctype clock_and_timer()
{
	do
	:: atomic { armed != 0 ->
		assert(!in_call);
		if
		:: over < armed -> over = armed
		:: else -> skip
		fi;
		pending = true;
		armed = 0 }
	:: atomic { armed != 0 -> armed = 0 } /* the watcher's slice_off() */
	:: atomic { cur != 0 && over < cur -> over = cur }
	:: done -> break
	od
}

/* The kick handler: slice_due() and slice_preempt_self(). */
active proctype handler()
{
	do
	:: atomic { pending ->
		pending = false;
		if
		:: live != 0 && live <= over ->
			if
			:: running && !in_call && !tf -> tf = true; tf_run = live
			:: else -> skip
			fi;
			live = 0
		:: else -> skip
		fi }
	:: atomic { done && !pending -> break }
	od
}

active proctype worker()
{
	do
	:: cur < NRUNS ->
		/* wait_running() sees RUNNING; slice_run_start(). */
		running = true;
		cur++;
		live = cur;
		armed = cur;
		in_lib = false;
		/* User code: preempted, or it stops by itself. */
		if
		:: tf ->
			/* return_to_user() preempts it: by its own run's
			 * slice, never an older one's. */
			assert(tf_run == 0 || tf_run == cur);
			in_lib = true;
			tf = false;
			live = 0; /* slice_stop() */
			running = false
		:: atomic { !tf -> tf = true; tf_run = 0 } /* its server's kick */
			in_lib = true;
			tf = false;
			live = 0;
			running = false
		:: in_lib = true; /* umcg_yield(): e_wait() */
#ifndef M_SLICE_NO_STOP
			live = 0;
#endif
			running = false
		:: in_lib = true; /* umcg_block_begin() */
			running = false; /* BLOCKED */
#ifndef M_SLICE_NO_DISARM
			live = 0;
			armed = 0;
			/* Delivered on the way out of timer_settime(). */
			!pending;
#endif
			in_lib = false;
			in_call = true;
			/* The region's call. */
			in_call = false;
			in_lib = true /* umcg_block_end() */
		fi;
		/* A TF_PREEMPT that came after the run ended is cleared by
		 * the next transition (xition()). */
		tf = false
	:: else -> break
	od;
	done = true
}
