/* SPDX-License-Identifier: MIT */
/*
 * pin.pml - the emulation's pins on a recycled task record
 * (src/emulated.c pin()/unpin() and unregister_self(), src/registry.c
 * umcg__etask_alloc()).
 *
 * Records are type-stable: one that its thread unregistered goes on a free
 * list and is handed to the next thread that registers. A reader that
 * found the record for a thread (the watcher walking every record, a
 * kicker that looked the tid up) may still be on its way to it. pin()
 * adds 1 to `pins` and then re-reads `tid`: its own tid means the record
 * is still that thread's and stays so until unpin(); any other means it
 * takes its 1 back. unregister_self() clears `tid` and then waits until
 * `pins` is 0 before the record may be freed. All of it seq_cst, which is
 * SPIN's interleaving.
 *
 * Here: the record belongs to thread A, which unregisters; thread B gets
 * the record and later unregisters too; two readers look at it any number
 * of times, each with whatever tid it read last. Checked:
 *   - a reader that pinned the record for tid T never reads it after T's
 *     unregistration passed its wait (the assertion);
 *   - both unregistrations finish: `pins` never stays above 0, or below
 *     (an invalid end state otherwise).
 *
 * Mutant (models/mutate.sh):
 *   M_PIN_RESET  umcg__etask_alloc() stores pins = 0 on the reused record,
 *                as it used to: a stale reader's increment is wiped, its
 *                decrement leaves -1, and B waits for ever.
 *   M_PIN_NO_RECHECK  pin() trusts the tid it looked up and does not read
 *                it again after its increment: it reads a freed record.
 */

#define TID_A 1
#define TID_B 2

byte tid = TID_A;
short pins = 0;
bool a_gone = false; /* A's unregistration passed its wait */
bool b_gone = false;
bool reused = false; /* the record was handed to B */

active proctype thread_a()
{
	tid = 0;
	(pins == 0);
	a_gone = true
}

active proctype thread_b()
{
	a_gone;
	/* umcg__etask_alloc() on the free record */
#ifdef M_PIN_RESET
	pins = 0;
#endif
	reused = true;
	tid = TID_B;
	/* B runs for a while, then unregisters. */
	tid = 0;
	(pins == 0);
	b_gone = true
}

active [2] proctype reader()
{
	byte seen;

	do
	:: seen = tid;
		if
		:: seen == 0 -> skip
		:: else ->
			pins++;
			if
			:: tid == seen ->
				/* Reading the record: still thread seen's. */
				assert(!(seen == TID_A && a_gone) && !(seen == TID_B && b_gone));
				pins--
#ifdef M_PIN_NO_RECHECK
			:: true ->
				assert(!(seen == TID_A && a_gone) && !(seen == TID_B && b_gone));
				pins--
#endif
			:: else ->
				pins--
			fi
		fi
	:: break
	od
}
