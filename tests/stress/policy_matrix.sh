#!/usr/bin/env bash
# tests/stress/policy_matrix.sh - the core, sync and net suites under every policy and every
# preemption mechanism (make soak; issue 16 §7).
#
# Owns: the full matrix that CI samples. CI (make test) runs these binaries under fifo and ws in
# every build and, in the plain build, under one more policy that rotates with the day of the
# year (tests/CMakeLists.txt, JIFFY_TEST_ROTATING_POLICY), so each policy runs in CI every six
# days; this script runs each test binary under each of the eight policies with the library's
# default mechanism, and the PREEMPT ones also under each mechanism, in the given build. Prints
# one line per run and a summary; exits 1 if any run failed (its output is kept in the log dir).
# usage: tests/stress/policy_matrix.sh [build-dir=build] [log-dir=/tmp/jiffy-policy-matrix]
set -uo pipefail

build=${1:-build}
logs=${2:-/tmp/jiffy-policy-matrix}
policies=(fifo ws rr twoq cfs eevdf central lcbe)
mechanisms=(none timer dispatcher safepoint deadline hybrid auto)
# test binary -> also run under every mechanism (PREEMPT in tests/CMakeLists.txt)
declare -A preempt=([core_thread_api]=1 [core_million]=0 [core_storm]=1 [core_errno]=1
	[core_fpu]=1 [core_shutdown]=1 [core_sleep]=1 [core_handoff]=1 [sync_mutex]=1
	[sync_cond]=1 [sync_waitgroup]=1 [net_netpoll]=1)
tests=(core_thread_api core_million core_storm core_errno core_fpu core_shutdown core_sleep
	core_handoff sync_mutex sync_cond sync_waitgroup net_netpoll)

mkdir -p "$logs"
for t in "${tests[@]}"; do
	[[ -x $build/tests/test_$t ]] || { echo "policy_matrix.sh: $build/tests/test_$t is not built" >&2; exit 2; }
done
runs=0 failed=0
run() { # run <policy> <mechanism|-> <test>
	local log="$logs/$1.$2.$3.log" env=(JIFFY_POLICY=$1)
	[[ $2 != - ]] && env+=(JIFFY_PREEMPT=$2 JIFFY_QUANTUM_US=50)
	runs=$((runs + 1))
	if env "${env[@]}" timeout 600 "$build/tests/test_$3" >"$log" 2>&1; then
		printf 'ok    %-8s %-10s %s\n' "$1" "$2" "$3"
		rm -f "$log"
	else
		printf 'FAIL  %-8s %-10s %s (exit %d; %s)\n' "$1" "$2" "$3" $? "$log"
		failed=$((failed + 1))
	fi
}
for p in "${policies[@]}"; do
	for t in "${tests[@]}"; do
		run "$p" - "$t"
		if ((preempt[$t])); then
			for m in "${mechanisms[@]}"; do run "$p" "$m" "$t"; done
		fi
	done
done
echo "policy_matrix: $runs runs, $failed failed (build $build)"
((failed == 0))
