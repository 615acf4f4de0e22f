/* SPDX-License-Identifier: MIT */
/*
 * chan.pml - the channels and select of <umcg/sync.h> (src/sync.c,
 * "channels and select"): one claim per select record, a select that
 * locks all its channels before it polls and queues, claimants and
 * droppers that touch a waiter's nodes only under a channel lock, the
 * waiter that takes its loser nodes off before it returns, a timeout that
 * claims the record for itself, and close. Checked by SPIN.
 *
 * The script: two rendezvous channels C0 and C1. S selects a receive on
 * both (with a deadline that may pass at any moment, unless -DNO_TIMEOUT);
 * sender Pc sends one message on Cc (a select of one operation, no
 * deadline); a closer closes C0 and then C1, at any moment. Every run
 * ends unless a wake-up is lost.
 *
 * Variables and the C they stand for:
 *   lk[c]        struct umcg_chan.lock (one step to take, one to release)
 *   closed[c]    struct umcg_chan.closed
 *   rq[c]        S's node is on Cc's receiver FIFO (only S receives)
 *   sq[c]        Pc's node is on Cc's sender FIFO (only Pc sends on Cc)
 *   claimed[p]   struct sel.claimed of party p (S = 0, P0 = 1, P1 = 2):
 *                0 open, 1 + the operation's index, or TMO
 *   word[p]      struct sel.base.word: the wake-up (the unpark or futex
 *                wake behind it is the wake-up protocol of sync.pml)
 *   res[p]       struct sel.result / the value returned: 0 delivered,
 *                EPIPE, TMO; NONE while running
 *   from         ghost: which sender S received from (NONE if none)
 *   gone[p]      ghost: party p has returned (its stack, with its select
 *                record and nodes, is gone)
 *
 * Properties: whoever touches a party's record (a claim, a drop, a copy, a
 * wake-up) finds the party still there; a party gets exactly one outcome;
 * a sender's message was delivered iff S received it, and S received at
 * most one; invalid end states (a party left waiting).
 *
 * Mutants (mutate.sh), each must fail:
 *   M_SEL_LOCK_EACH  S polls and queues one channel at a time, under that
 *                    channel's lock only
 *   M_NO_UNQUEUE     S returns without taking its loser node off
 *   M_TIMEOUT_NO_CLAIM  S's timeout takes its nodes off but does not claim
 *                    its record first
 */

#define S 0
#define NONE 9
#define EPIPE 2
#define TMO 3

bit lk[2];
bit closed[2];
bit rq[2];
bit sq[2];
byte claimed[3];
bit word[3];
byte res[3];
byte from = NONE;
bit gone[3];

inline take(c)
{
	atomic { lk[c] == 0 -> lk[c] = 1 }
}

inline give(c)
{
	lk[c] = 0
}

/* Wake party p (after the claimant's unlock). */
inline wake(p)
{
	atomic { assert(!gone[p]); word[p] = 1 }
}

/* S's loser nodes come off, one channel lock at a time. */
inline unqueue_s()
{
#ifndef M_NO_UNQUEUE
	take(0);
	rq[0] = 0;
	give(0);
	take(1);
	rq[1] = 0;
	give(1)
#else
	skip
#endif
}

/* Under Cc's lock: claim sender Pc's queued node for a receive. */
inline claim_sender(c, ok)
{
	ok = 0;
	if
	:: sq[c] ->
		sq[c] = 0;
		atomic {
			assert(!gone[c + 1]);
			if
			:: claimed[c + 1] == 0 -> claimed[c + 1] = 1; ok = 1
			:: else -> skip
			fi
		}
	:: else -> skip
	fi
}

proctype selector()
{
	bit ok, done;
	byte c, first;

#ifndef M_SEL_LOCK_EACH
	take(0);
	take(1);
	/* the poll, in a random order; nobody can claim S yet */
	if
	:: first = 0
	:: first = 1
	fi;
	c = first;
	do
	:: closed[c] -> res[S] = EPIPE; done = 1; break
	:: !closed[c] ->
		claim_sender(c, ok);
		if
		:: ok -> res[S] = 0; from = c; res[c + 1] = 0; done = 1; break
		:: !ok && c == first -> c = 1 - c
		:: !ok && c != first -> break
		fi
	od;
	if
	:: done ->
		give(1);
		give(0);
		if
		:: from != NONE -> wake(from + 1)
		:: else -> skip
		fi;
		goto out
	:: else -> skip
	fi;
	/* queue a node on each channel, then unlock */
	rq[0] = 1;
	rq[1] = 1;
	give(1);
	give(0);
#else
	/* per channel: lock, poll, queue, unlock */
	c = 0;
	do
	:: c == 2 -> break
	:: c < 2 ->
		take(c);
		if
		:: closed[c] ->
			atomic {
				if
				:: claimed[S] == 0 -> claimed[S] = 1 + c; res[S] = EPIPE; done = 1
				:: else -> skip
				fi
			}
		:: else ->
			claim_sender(c, ok);
			if
			:: ok ->
				atomic {
					if
					:: claimed[S] == 0 -> claimed[S] = 1 + c
					:: else -> skip
					fi
				};
				assert(from == NONE);
				res[S] = 0; from = c; res[c + 1] = 0; done = 1
			:: else -> rq[c] = 1
			fi
		fi;
		give(c);
		if
		:: done && from != NONE -> wake(from + 1); break
		:: done -> break
		:: else -> c++
		fi
	od;
	if
	:: done -> unqueue_s(); goto out
	:: else -> skip
	fi;
#endif
	/* wait for a claimant, or for the deadline */
	if
	:: word[S] == 1 -> skip
#ifndef NO_TIMEOUT
	:: word[S] == 0 ->
#ifdef M_TIMEOUT_NO_CLAIM
		unqueue_s();
		res[S] = TMO;
		goto out;
#else
		atomic {
			if
			:: claimed[S] == 0 -> claimed[S] = TMO; res[S] = TMO
			:: else -> skip
			fi
		};
		if
		:: res[S] == TMO -> unqueue_s(); goto out
		:: else -> word[S] == 1
		fi
#endif
#endif
	fi;
	unqueue_s();
out:
	atomic { assert(res[S] != NONE); gone[S] = 1 }
}

/* Sender p on channel c = p - 1: a select of one send, no deadline. */
proctype sender(byte p)
{
	byte c = p - 1;
	bit ok;

	take(c);
	if
	:: closed[c] -> res[p] = EPIPE; give(c); goto out
	:: else -> skip
	fi;
	/* a receiver waits: claim it (its node comes off first) */
	if
	:: rq[c] ->
		rq[c] = 0;
		atomic {
			assert(!gone[S]);
			if
			:: claimed[S] == 0 -> claimed[S] = 1 + c; ok = 1
			:: else -> skip
			fi
		}
	:: else -> skip
	fi;
	if
	:: ok ->
		assert(from == NONE);
		from = c;
		res[S] = 0;
		res[p] = 0;
		give(c);
		wake(S);
		goto out
	:: else -> skip
	fi;
	sq[c] = 1;
	give(c);
	word[p] == 1;
out:
	atomic { assert(res[p] != NONE); gone[p] = 1 }
}

/* Closes C0, then C1: every queued node is claimed with EPIPE. */
proctype closer()
{
	byte c = 0;
	bit ok, ws;

	do
	:: c == 2 -> break
	:: c < 2 ->
		take(c);
		closed[c] = 1;
		ws = 0;
		if
		:: rq[c] ->
			rq[c] = 0;
			atomic {
				assert(!gone[S]);
				if
				:: claimed[S] == 0 -> claimed[S] = 1 + c; res[S] = EPIPE; ws = 1
				:: else -> skip
				fi
			}
		:: else -> skip
		fi;
		claim_sender(c, ok);
		if
		:: ok -> res[c + 1] = EPIPE
		:: else -> skip
		fi;
		give(c);
		if
		:: ws -> wake(S)
		:: else -> skip
		fi;
		if
		:: ok -> wake(c + 1)
		:: else -> skip
		fi;
		c++
	od
}

init {
	atomic {
		res[0] = NONE;
		res[1] = NONE;
		res[2] = NONE;
		run selector();
		run sender(1);
		run sender(2);
		run closer()
	}
}

/* At the end: a delivery is one on both sides, and S got at most one. */
active proctype final()
{
	(gone[0] && gone[1] && gone[2]);
	assert(res[1] != 0 || from == 0);
	assert(from != 0 || res[1] == 0);
	assert(res[2] != 0 || from == 1);
	assert(from != 1 || res[2] == 0);
	assert((res[0] == 0) == (from != NONE))
}
