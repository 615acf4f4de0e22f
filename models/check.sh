#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# models/check.sh - verify one SPIN model exhaustively at one scope.
#
#   models/check.sh MODEL SCOPE KIND [-DNAME...]
#
# MODEL  abi (abi.pml), rt (rt.pml), sync (sync.pml), chan (chan.pml),
#        detect (detect.pml), pin (pin.pml) or slice (slice.pml)
# SCOPE  1x3 or 2x2 (servers x workers); abi also takes 2x4 (stress);
#        sync takes 3x2 and 2x3 (threads x rounds), chan takes select,
#        detect takes 1x2 (one worker, two deciders), pin takes 2x2 (two
#        owners of one record, two readers), slice takes 3runs (one worker,
#        three runs); these safety only
# KIND   safety    assertions and invalid end states (lost wake-ups)
#        liveness  under weak fairness: abi, non-progress cycles (-DNP,
#                  pan -l -f); rt, acceptance cycles of its LTL claim
#                  no_stuck (pan -a -f)
# -D...  passed to spin and the C compiler: a mutant (see mutate.sh)
#
# UMCG_MODEL_MEMLIM: pan's memory bound in MiB (default 8192).
#
# Exit: 0 verified, 1 an error was found (the trail is kept in the work
# directory, printed on stderr, for spin -t), 2 incomplete search or usage,
# 77 spin or a C compiler is missing. Prints pan's summary line by line.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

if [ $# -lt 3 ]; then
	echo "usage: $0 abi|rt|sync|chan|detect|pin|slice 1x3|2x2|2x4|3x2|2x3|select|1x2|3runs safety|liveness [-DNAME...]" >&2
	exit 2
fi
model="$1" scope="$2" kind="$3"
shift 3

if ! command -v spin >/dev/null 2>&1; then
	echo "spin not found: skipped (Debian package spin)"
	exit 77
fi
cc="${CC:-cc}"
if ! command -v "$cc" >/dev/null 2>&1; then
	echo "no C compiler ($cc): skipped"
	exit 77
fi

case "$model/$scope" in
abi/1x3) defs=(-DNS=1 -DNW=3) ;;
abi/2x2) defs=(-DNS=2 -DNW=2) ;;
abi/2x4) defs=(-DNS=2 -DNW=4) ;;
rt/1x3) defs=(-DNS=1) ;;
rt/2x2) defs=(-DNS=2) ;;
sync/3x2) defs=(-DNT=3 -DNROUNDS=2) ;;
sync/2x3) defs=(-DNT=2 -DNROUNDS=3) ;;
chan/select) defs=() ;;
detect/1x2) defs=() ;;
pin/2x2) defs=() ;;
slice/3runs) defs=(-DNRUNS=3) ;;
*)
	echo "unknown model/scope $model/$scope" >&2
	exit 2
	;;
esac
defs+=("$@")
# The liveness check of abi.pml assumes that a slice does not end, for ever,
# before its worker reaches user code (abi.pml, ran[]).
if [ "$model/$kind" = abi/liveness ]; then
	defs+=(-DSLICE_RAN)
fi
# rt.pml's LTL claim exists only for its liveness check.
if [ "$model/$kind" = rt/liveness ]; then
	defs+=(-DLTL_NO_STUCK)
fi

work="$(mktemp -d "${TMPDIR:-/tmp}/umcg-model.XXXXXX")"
keep=0
cleanup() {
	if [ "$keep" -eq 0 ]; then
		rm -rf "$work"
	fi
}
trap cleanup EXIT

cp "$here/$model.pml" "$work/"
cd "$work"
spin "${defs[@]}" -a "$model.pml" >spin.log 2>&1 || {
	cat spin.log >&2
	exit 2
}

# -DCOLLAPSE: compressed state vectors; the search is still exhaustive.
# -DNFAIR=4: weak fairness over up to 12 processes (the default covers 6,
# fewer than rt.pml and abi.pml run with the flusher of a mutant).
# MEMLIM: pan's memory bound in MiB, UMCG_MODEL_MEMLIM or 8192 (the largest
# check, rt 1x3 liveness, used 5.3 GiB).
ccflags=(-O2 -w -DCOLLAPSE -DNFAIR=4 "-DMEMLIM=${UMCG_MODEL_MEMLIM:-8192}" "${defs[@]}")
# The DFS stack is allocated up front (about 53 bytes a step): abi.pml runs
# deep; rt.pml less so (rt 1x3 liveness reaches 2.4e5 steps of its 1e6).
if [ "$model" = abi ]; then depth=-m10000000; else depth=-m1000000; fi
case "$kind" in
safety)
	ccflags+=(-DSAFETY -DNOCLAIM)
	runflags=("$depth")
	;;
liveness)
	if [ "$model" = abi ]; then
		ccflags+=(-DNP)
		runflags=("$depth" -l -f)
	else
		runflags=("$depth" -a -f -N no_stuck)
	fi
	;;
*)
	echo "unknown kind $kind" >&2
	exit 2
	;;
esac
if ! "$cc" "${ccflags[@]}" -o pan pan.c; then
	echo "pan.c did not compile" >&2
	exit 2
fi
start=$(date +%s)
./pan "${runflags[@]}" >pan.log 2>&1 || true
end=$(date +%s)

echo "== $model $scope $kind ${*:-} ($((end - start)) s)"
grep -E 'errors:|states, stored|total actual memory|transitions \(|depth reached|max search depth too small|out of memory|pan: |assertion violated|invalid end state|cycle' pan.log || true

if grep -q 'max search depth too small\|out of memory' pan.log; then
	echo "incomplete search" >&2
	exit 2
fi
errors=$(sed -n 's/.*errors: \([0-9]*\).*/\1/p' pan.log | tail -n 1)
if [ -z "$errors" ]; then
	cat pan.log >&2
	exit 2
fi
if [ "$errors" -ne 0 ]; then
	keep=1
	echo "trail kept: cd $work && spin ${defs[*]} -t -p $model.pml" >&2
	exit 1
fi
exit 0
