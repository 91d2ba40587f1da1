#!/usr/bin/env bash
# tests/stress/policy_matrix.sh - the core, sync and net suites under every policy and every
# preemption mechanism (make soak; issue 16 §7).
#
# Owns: the full matrix that CI samples. CI (make test) runs these binaries under every policy in
# the plain build and under fifo and ws in the sanitizer builds (tests/CMakeLists.txt), each
# PREEMPT one under every mechanism only with ws; this script runs each test binary under each of the eight policies with the library's
# default mechanism, and the PREEMPT ones also under none and each mechanism CTest registers for
# them in that build (the suites are read from CTest, not listed here). Prints
# one line per run and a summary; exits 1 if any run failed (its output is kept in the log dir).
# usage: tests/stress/policy_matrix.sh [build-dir=build] [log-dir=/tmp/jiffy-policy-matrix]
set -uo pipefail

build=${1:-build}
logs=${2:-/tmp/jiffy-policy-matrix}
mapfile -t policies < <(sed -n 's/^JF_POLICY(\([a-z0-9_]*\))$/\1/p' "$(dirname "$0")/../../src/sched/policies.def")
# The suites and their mechanisms come from CTest's own registrations (tests/CMakeLists.txt):
# every core/sync/net test registered per policy (<name>.fifo, JIFFY_POLICY=fifo) is a suite,
# and it runs under every mechanism it is also registered with as <name>.ws.<mechanism>
# (PREEMPT: JIFFY_PREEMPT=<mechanism> in that test's environment).
# One line per suite: <command> <mechanisms, comma-separated, or ->.
suites=$(ctest --test-dir "$build" --show-only=json-v1 2>/dev/null | python3 -c '
import json, sys
tests = {t["name"]: t for t in json.load(sys.stdin)["tests"]}
def env(t):
    return [v for p in t.get("properties", []) if p["name"] == "ENVIRONMENT" for v in p["value"]]
for name, t in sorted(tests.items()):
    if name.split(".")[0] not in ("core", "sync", "net") or not name.endswith(".fifo") \
       or env(t) != ["JIFFY_POLICY=fifo"]:
        continue
    base = name[: -len(".fifo")]
    mechs = sorted(n[len(base) + 4:] for n in tests if n.startswith(base + ".ws.")
                   and "JIFFY_PREEMPT=" + n[len(base) + 4:] in env(tests[n]))
    print(" ".join(t["command"]), ",".join(["none"] + [m for m in mechs if m != "none"]) if mechs else "-")
') || { echo "policy_matrix.sh: cannot list the tests of $build (ctest, python3)" >&2; exit 2; }
[[ -n $suites ]] || { echo "policy_matrix.sh: no per-policy suites registered in $build" >&2; exit 2; }

mkdir -p "$logs"
runs=0 failed=0
run() { # run <policy> <mechanism|-> <command>
	local log="$logs/$1.$2.$(basename "$3").log" env=(JIFFY_POLICY=$1)
	[[ $2 != - ]] && env+=(JIFFY_PREEMPT=$2 JIFFY_QUANTUM_US=50)
	runs=$((runs + 1))
	if env "${env[@]}" timeout 600 "$3" >"$log" 2>&1; then
		printf 'ok    %-8s %-10s %s\n' "$1" "$2" "$(basename "$3")"
		rm -f "$log"
	else
		printf 'FAIL  %-8s %-10s %s (exit %d; %s)\n' "$1" "$2" "$(basename "$3")" $? "$log"
		failed=$((failed + 1))
	fi
}
for p in "${policies[@]}"; do
	while read -r cmd mechs; do
		run "$p" - "$cmd"
		[[ $mechs == - ]] && continue
		IFS=, read -ra ms <<<"$mechs"
		for m in "${ms[@]}"; do run "$p" "$m" "$cmd"; done
	done <<<"$suites"
done
echo "policy_matrix: $runs runs, $failed failed (build $build)"
((failed == 0))
