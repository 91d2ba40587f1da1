#!/usr/bin/env bash
# check_monitor.sh - JIFFY_SCHEDTRACE and JIFFY_STALL_REPORT print what docs/observability.md
# says, checked on real runs of test_core_introspect:
#  - schedtrace: one "jiffy: SCHED <ms>ms: ..." line per period with a [w0 ...] section holding
#    sw=, pre=, steal= and p99delay= (a 300 ms run at 50 ms gives at least 3 lines);
#  - stall report: a uthread computing 300 ms on one worker with no preemption while another
#    waits is reported once, by name, with the reason (preemption is off) and a backtrace that
#    shows the function it is stuck in; with JIFFY_STALL_REPORT unset nothing is reported;
#  - a bad value is refused with a message naming the variable.
# Usage: check_monitor.sh <path to test_core_introspect>
set -uo pipefail
bin=$1
fail() { echo "FAIL: $*" >&2; exit 1; }
out=$(mktemp); trap 'rm -f "$out"' EXIT

env JIFFY_SCHEDTRACE=50 "$bin" schedtrace 2>"$out" || { cat "$out"; fail "schedtrace run failed"; }
n=$(grep -cE '^jiffy: SCHED [0-9]+ms: workers=1 running=[01] parked=[01] spinning=[0-9]+ runnable=-?[0-9]+ \[w0 (run|idle|park) sw=[0-9]+ pre=[0-9]+ steal=[0-9]+ p99delay=[0-9]+us\]$' "$out")
((n >= 3)) || { cat "$out"; fail "expected >= 3 schedtrace lines, got $n"; }
echo "schedtrace: $n lines, e.g.: $(grep -m1 SCHED "$out")"

env JIFFY_PREEMPT=none JIFFY_STALL_REPORT=20 "$bin" stall 2>"$out" || { cat "$out"; fail "stall run failed"; }
grep -qE "^jiffy: stall: uthread [0-9]+ 'the-staller' has kept worker 0 for [0-9]+ us .*preemption is off" "$out" ||
	{ cat "$out"; fail "no stall report naming the-staller"; }
(( $(grep -c '^jiffy: stall:' "$out") == 1 )) || { cat "$out"; fail "expected exactly one report (one per uthread per second)"; }
grep -q 'jft_stalling_compute' "$out" || { cat "$out"; fail "the backtrace does not show jft_stalling_compute"; }
echo "stall report: $(grep -m1 '^jiffy: stall:' "$out")"

env JIFFY_PREEMPT=none "$bin" stall 2>"$out" || { cat "$out"; fail "run without stall report failed"; }
! grep -q 'jiffy: stall' "$out" || { cat "$out"; fail "a stall was reported without JIFFY_STALL_REPORT"; }

env JIFFY_STALL_REPORT=abc "$bin" stall >"$out" 2>&1 && fail "JIFFY_STALL_REPORT=abc was accepted"
grep -q "JIFFY_STALL_REPORT='abc'" "$out" || { cat "$out"; fail "the error does not name JIFFY_STALL_REPORT"; }
env JIFFY_SCHEDTRACE=-1 "$bin" schedtrace >"$out" 2>&1 && fail "JIFFY_SCHEDTRACE=-1 was accepted"
grep -q "JIFFY_SCHEDTRACE='-1'" "$out" || { cat "$out"; fail "the error does not name JIFFY_SCHEDTRACE"; }
echo "check_monitor: ok"
