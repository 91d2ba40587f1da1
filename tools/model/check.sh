#!/usr/bin/env bash
# tools/model/check.sh - check the park/wake model (tools/model/park.pml) with SPIN.
#
# Owns: which configurations of the model are checked and what each must give. Every correct
# configuration must be explored exhaustively with no error; every mutation (a bug the model
# can express: see park.pml) must make SPIN report one, which shows the check can fail.
#   quick (CTest model.park, ~20 s): the handshake with work only (futex and epoll parking, 2
#         items per worker), with a timer armed on a busy worker (futex, no spurious wake-up),
#         and the four mutations
#   full  (make model, ~3 min, ~4 GB): also the timer with spurious wake-ups, and the timer
#         with epoll parking
# usage: tools/model/check.sh [quick|full]
set -euo pipefail

mode=${1:-quick}
case $mode in quick|full) ;; *) echo "usage: $0 [quick|full]" >&2; exit 2 ;; esac
for tool in spin gcc; do
	command -v $tool >/dev/null 2>&1 || {
		echo "check.sh: $tool is missing: scripts/deps.sh build installs it (apt-get install spin gcc)" >&2
		exit 1
	}
done
model=$(cd "$(dirname "$0")" && pwd)/park.pml
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp "$model" "$work/"
cd "$work"

status=0
# check <expect: pass|fail> <description> <spin -D options...>
check() {
	local expect=$1 what=$2
	shift 2
	spin "$@" -a park.pml >spin.log 2>&1 || { cat spin.log; echo "model: spin $* failed" >&2; exit 1; }
	gcc -O2 -DSAFETY -DCOLLAPSE -o pan pan.c 2>gcc.log || { cat gcc.log; exit 1; }
	local t0=$SECONDS out errors states
	out=$(./pan -m100000 2>&1 || true)
	errors=$(sed -n 's/.*errors: \([0-9]*\).*/\1/p' <<<"$out" | head -1)
	states=$(sed -n 's/^ *\([0-9.e+]*\) states, stored.*/\1/p' <<<"$out" | head -1)
	if grep -q "max search depth too small\|out of memory\|resize hashtable" <<<"$out" &&
	   ! grep -q "errors: [1-9]" <<<"$out"; then
		echo "FAIL  $what ($*): the search was incomplete"; echo "$out"; status=1; return
	fi
	case $expect/$errors in
	pass/0) echo "ok    $what: no lost wakeup in $states states ($((SECONDS - t0)) s) [$*]" ;;
	fail/[1-9]*) echo "ok    $what: SPIN finds the lost wakeup ($(grep -o 'assertion violated' <<<"$out" | head -1 || echo error), $states states) [$*]" ;;
	*) echo "FAIL  $what: expected $expect, SPIN reported errors=${errors:-?} [$*]"; echo "$out"; status=1 ;;
	esac
}

check pass "futex parking, 2 items per worker"          -DNETPOLL=0 -DTIMERS=0 -DITEMS=2
check pass "epoll parking, 2 items per worker"          -DNETPOLL=1 -DTIMERS=0 -DITEMS=2
check pass "futex parking, a timer on a busy worker"    -DNETPOLL=0 -DSPURIOUS=0
if [[ $mode == full ]]; then
	check pass "futex parking, a timer, a spurious wake-up" -DNETPOLL=0
	check pass "epoll parking, a timer, a spurious wake-up" -DNETPOLL=1
fi
check fail "mutation CHECK_BEFORE_PUBLISH" -DCHECK_BEFORE_PUBLISH -DNETPOLL=0 -DTIMERS=0
check fail "mutation NO_TIMER_KICK"        -DNO_TIMER_KICK -DNETPOLL=0
check fail "mutation EVFD_SHARED"          -DEVFD_SHARED -DNETPOLL=1 -DTIMERS=0
check fail "mutation NO_SLOT_RECHECK"      -DNO_SLOT_RECHECK -DNETPOLL=1 -DTIMERS=0
exit $status
