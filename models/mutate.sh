#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# models/mutate.sh - break each protocol the way a bad edit of the C code
# would, and check that SPIN notices every time.
#
#   models/mutate.sh [NAME...]     (default: every mutant)
#
# Each mutant is a -D switch of abi.pml, rt.pml, sync.pml, chan.pml, detect.pml, pin.pml or slice.pml, named after the C line
# it mirrors, with the scope and the check that should kill it. A mutant is
# killed when check.sh finds an error (exit 1). Prints "N of N mutants
# killed"; exits 1 if any survived or a check could not complete, 77 when
# spin is missing.
set -uo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

# name | model scope kind | the C it mirrors
mutants=(
	"M_PUSH_STORE|abi 1x3 safety|backend.h umcg__runnable_push(): the CAS on the list head turned into a store"
	"M_TAKE_LOAD_STORE|abi 1x3 safety|list.c umcg_runnable_take(): the xchg split into a load and a store of 0"
	"M_TAKE_BEFORE_STATE|abi 1x3 safety|runtime.c server_loop(): set_state(RUNNABLE|TF_COND_WAIT) and umcg_runnable_take() swapped"
	"M_INLIB_RELAXED|abi 1x3 safety|emulated.c return_to_user(): the seq_cst store in_lib = 0 made relaxed (barrier dropped)"
	"M_KICK_LOAD_BEFORE_CAS|abi 1x3 safety|backend.c umcg_preempt(): relaxed TF_PREEMPT CAS, so e_kick()'s load of in_lib passes it"
	"M_PREEMPT_STORE|abi 1x3 safety|backend.c umcg_preempt(): the TF_PREEMPT CAS turned into a load and a store"
	"M_NEXT_TID_KEPT|abi 1x3 safety|emulated.c e_wait() 6, 7: umcg__store(&ut->next_tid, 0) removed"
	"M_WAKE_BEFORE_PUSH|abi 1x3 safety|emulated.c e_wait() 5: enqueue_self() and wake_server() swapped"
	"M_NO_COND_WAIT_EXEMPT|abi 1x3 safety|emulated.c return_to_user(): the RUNNABLE|TF_COND_WAIT re-check removed"
	"M_BLOCK_NO_WAKE|abi 1x3 safety|emulated.c e_block_begin(): wake_server() removed"
	"M_OT_STORE_RELAXED|rt 1x3 safety|runtime.c overtime_ok(): the seq_cst store overtime = 1 made relaxed (barrier dropped)"
	"M_STAGED_STORE_RELAXED|rt 1x3 safety|runtime.c umcg_unpark(): the seq_cst store me->staged = w made relaxed (barrier dropped)"
	"M_UNPARK_OT_BEFORE_PUSH|rt 1x3 safety|runtime.c umcg_unpark(): the overtime load moved before umcg__runnable_push()"
	"M_OT_NO_STAGED_CHECK|rt 1x3 safety|runtime.c overtime_ok(): the re-check !umcg__load(&c->staged) removed"
	"M_STAGED_NO_OT_CHECK|rt 1x3 safety|runtime.c umcg_unpark(): the overtime check after staging removed"
	"M_UNPARK_PARKING_STORE|rt 1x3 safety|runtime.c umcg_unpark(): the PARKING -> NORMAL CAS turned into a store"
	"M_PARKED_STORE|rt 1x3 safety|runtime.c handle_list(): the PARKING -> PARKED CAS turned into a load and a store"
	"M_RESOLVE_LOADS_SWAPPED|rt 1x3 safety|runtime.c resolve_current(): the loads of state and in_switch swapped"
	"M_NO_WAITERS_BIT|sync 3x2 safety|sync.c mutex_lock(): the node queued without setting OWNER_WAITERS"
	"M_UNLOCK_TO_ZERO|sync 3x2 safety|sync.c umcg_mutex_unlock(): owner = 0 and the head woken to retry, not handed the mutex"
	"M_NO_HOLD|sync 3x2 safety|sync.c wake(): no umcg__worker_hold()/put() around the unpark"
	"M_TIMEOUT_NO_REQUEUE_CHECK|sync 3x2 safety|sync.c wait_node(): a timed-out waiter fails without looking whether a waker took its node"
	"M_SEL_LOCK_EACH|chan select safety|sync.c chan_select(): poll and queue one channel at a time under its own lock"
	"M_NO_UNQUEUE|chan select safety|sync.c chan_select(): sel_unqueue() of the loser nodes removed"
	"M_TIMEOUT_NO_CLAIM|chan select safety|sync.c chan_select(): a timeout returns without claiming its own select record"
	"M_NO_CPU_RECHECK|detect 1x2 safety|emulated.c detect_block(): the second read of the CPU clock removed"
	"M_NO_INLIB_RECHECK|detect 1x2 safety|emulated.c detect_block(): the load of in_lib under DET_DECIDING removed"
	"M_DECIDE_STORE|detect 1x2 safety|emulated.c detect_block(): the DET_NONE -> DET_DECIDING CAS turned into a load and a store"
	"R_DETECTION_REACHABLE|detect 1x2 safety|not a mutant: asserts that no detection happens, so the model must reach one"
	"M_PIN_RESET|pin 2x2 safety|registry.c umcg__etask_alloc(): pins = 0 stored on a reused record"
	"M_PIN_NO_RECHECK|pin 2x2 safety|emulated.c pin(): the re-read of tid after the increment removed"
	"M_SLICE_NO_STOP|slice 3runs safety|emulated.c e_wait(): slice_stop() removed, a late handler finds an old slice due"
	"M_SLICE_NO_DISARM|slice 3runs safety|emulated.c e_block_begin(): the slice timer is not disarmed"
)

if ! command -v spin >/dev/null 2>&1; then
	echo "spin not found: skipped (Debian package spin)"
	exit 77
fi

want=("$@")
total=0 killed=0 failed=0
for m in "${mutants[@]}"; do
	IFS='|' read -r name how what <<<"$m"
	if [ ${#want[@]} -gt 0 ] && [[ ! " ${want[*]} " =~ " $name " ]]; then
		continue
	fi
	total=$((total + 1))
	# shellcheck disable=SC2086
	"$here/check.sh" $how "-D$name" >/dev/null 2>&1
	rc=$?
	case $rc in
	1) killed=$((killed + 1)); verdict=killed ;;
	0) verdict=SURVIVED ;;
	*) failed=$((failed + 1)); verdict="check failed ($rc)" ;;
	esac
	printf '%-26s %-18s %s  (%s)\n' "$name" "$how" "$verdict" "$what"
done
echo "$killed of $total mutants killed"
[ "$killed" -eq "$total" ]
