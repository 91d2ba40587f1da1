#!/usr/bin/env bash
# perfcheck.sh - the hot path's instruction budget (make perfcheck; part of make test).
#
# Owns: counting the instructions per operation of the core operations with Valgrind's Callgrind
# and comparing them with the committed budget, bench/perfcheck.budget. Noise cannot move these
# counts the way it moves nanoseconds: one worker's operations repeat to the instruction.
#
# How an operation is counted: bench/jiffy_bench runs the op's own loop (the same code the timed
# benchmark runs) for exactly N and 2N iterations (BENCH_ITERS), with Callgrind's instrumentation
# on only around that loop; (count(2N) - count(N)) / (ops(2N) - ops(N)) is what one operation
# costs, start-up and the loop's set-up cancelling out. Each op runs under JIFFY_PREEMPT=none and
# under the default mechanism (auto). auto's backstop timer gets a grace of a second
# (JIFFY_GRACE_US): Valgrind runs the code 20-50x slower and stalls threads, and a signal that
# fired would add a preemption to the count (and Valgrind's sigreturn cannot follow a uthread
# to another worker: docs/debugging.md). The path counted is the same: the timer is armed and
# moved exactly as with the default grace, it only never falls due.
#
# wakeup_xworker (two workers) cannot repeat exactly under Valgrind, which runs one thread at a
# time: how often a worker finds the other still spinning on a runtime spinlock it was descheduled
# holding, or parks before the wake reaches it, depends on Valgrind's interleaving. The idle loop is
# left out of the count by name (--toggle-collect=worker_idle, a function runtime.c never inlines;
# --collect-atstart=yes after it, or Callgrind would count only that function), lock spinning is
# off (JIFFY_LOCK_SPIN_US=0: a spin times itself), an idle worker spins and never parks
# (JIFFY_SPIN_US=100000, JIFFY_SPIN_MAX_US=0: whether it had parked when the wake came depended
# on how long the host let Valgrind run, and a fresh-clone CI run on 2026-11-29 counted 2848
# instructions under none against 2077 idle, all three runs; spinning, 1739-1747 also beside two
# CPU hogs), and the least of three runs is taken; its tolerance is wider (XW_TOL). (A
# CALLGRIND_TOGGLE_COLLECT client request in the idle loop did not do: a worker idle when the
# instrumentation started had its toggles inverted, and 3 runs in 8 counted the idle loop
# instead of the rest.)
#
# Usage: scripts/perfcheck.sh [BUILD_DIR]
#   PERFCHECK_WRITE=1  write the counts measured as the new budget (commit it, saying why)
#   PERFCHECK_OPS="yield mutex_pingpong"  only these ops (default: all six)
# Exit status: 0 within budget, 1 over budget (each line says which op, the count, the budget),
# 2 could not count.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
BIN=$BUILD/bench/jiffy_bench
BUDGET=bench/perfcheck.budget
TOL=2    # percent over budget that fails
XW_TOL=3 # percent, wakeup_xworker (see above)
N=2000
XW_N=250
OPS=${PERFCHECK_OPS:-yield ctx_switch spawn_join mutex_pingpong condvar_pingpong wakeup_xworker}
MECHS="none auto"

command -v valgrind >/dev/null || { echo "perfcheck: valgrind is not installed (scripts/deps.sh build installs it)" >&2; exit 2; }
[[ -x $BIN ]] || { echo "perfcheck: $BIN is missing (build first: make build)" >&2; exit 2; }
[[ -f $BUDGET || ${PERFCHECK_WRITE:-0} == 1 ]] || { echo "perfcheck: $BUDGET is missing" >&2; exit 2; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# One Callgrind run: prints "<ops> <instructions>".
count() { # count <mech> <op> <iters>
	local out
	local xw=()
	[[ $2 == wakeup_xworker ]] && xw=(JIFFY_LOCK_SPIN_US=0 JIFFY_SPIN_US=100000 JIFFY_SPIN_MAX_US=0)
	out=$(env JIFFY_PREEMPT="$1" JIFFY_GRACE_US=1000000 JIFFY_LOCK_SPIN_US=2 ${xw[@]+"${xw[@]}"} \
		BENCH_ITERS="$3" valgrind --tool=callgrind --instr-atstart=no \
		--toggle-collect=worker_idle --collect-atstart=yes \
		--callgrind-out-file=/dev/null "$BIN" "$2" 2>&1) || {
		echo "perfcheck: $2 under $1 failed under valgrind:" >&2
		echo "$out" | tail -20 >&2
		return 1
	}
	echo "$out" | awk '$1 == "jiffy" && $3 == "ops" { o = $4 } /Collected :/ { c = $4 }
		END { if (o == "" || c == "") exit 1; print o, c }'
}
export -f count
export BIN

# The jobs, one line each: "<mech> <op> <iters> <rep>"; run two at a time (the counts do not
# depend on load).
for m in $MECHS; do
	for op in $OPS; do
		if [[ $op == wakeup_xworker ]]; then
			for r in 1 2 3; do echo "$m $op $XW_N $r"; echo "$m $op $((2 * XW_N)) $r"; done
		else
			echo "$m $op $N 1"; echo "$m $op $((2 * N)) 1"
		fi
	done
done >"$tmp/jobs"
if ! xargs -P 2 -L 1 bash -c 'r=$(count "$0" "$1" "$2") || exit 255; echo "$0 $1 $2 $3 $r"' \
	<"$tmp/jobs" >"$tmp/counts"; then
	echo "perfcheck: could not count (see above)" >&2
	exit 2
fi

bfile=$BUDGET
[[ -f $bfile ]] || bfile=/dev/null # PERFCHECK_WRITE=1 without a budget yet
# Per op: the least count at each length (one run, or the least of three), then the difference.
awk -v tol="$TOL" -v xtol="$XW_TOL" -v budget="$bfile" -v write="${PERFCHECK_WRITE:-0}" -v ops="$OPS" -v mechs="$MECHS" '
	FILENAME == budget {
		if ($0 ~ /^[ \t]*(#|$)/) next
		want[$1 " " $2] = $3
		next
	}
	{
		k = $1 " " $2 " " $3
		if (!(k in ins) || $6 < ins[k]) { ins[k] = $6; nops[k] = $5 }
		len[$1 " " $2, ++nlen[$1 " " $2]] = $3
	}
	END {
		nm = split(mechs, M, " "); no = split(ops, O, " ")
		fail = 0
		if (!write) printf "%-18s %-5s %10s %10s %8s\n", "op", "mech", "instr/op", "budget", "vs budget"
		for (i = 1; i <= nm; i++) for (j = 1; j <= no; j++) {
			key = O[j] " " M[i]
			lo = 1e18; hi = 0
			for (n = 1; n <= nlen[M[i] " " O[j]]; n++) {
				l = len[M[i] " " O[j], n] + 0
				if (l < lo) lo = l
				if (l > hi) hi = l
			}
			a = M[i] " " O[j] " " lo; b = M[i] " " O[j] " " hi
			per = (ins[b] - ins[a]) / (nops[b] - nops[a])
			if (write) { printf "%s %s %.0f\n", O[j], M[i], per; continue }
			if (!(key in want)) { printf "%-18s %-5s %10.0f %10s  no budget line\n", O[j], M[i], per, "-"; fail = 1; continue }
			t = (O[j] == "wakeup_xworker") ? xtol : tol
			d = 100 * (per - want[key]) / want[key]
			verdict = d > t ? sprintf("  OVER BUDGET (more than +%d%%)", t) : ""
			if (d > t) fail = 1
			printf "%-18s %-5s %10.0f %10d %+7.1f%%%s\n", O[j], M[i], per, want[key], d, verdict
		}
		exit fail
	}' "$bfile" "$tmp/counts" >"$tmp/report" 2>&1 || status=$?
status=${status:-0}

if [[ ${PERFCHECK_WRITE:-0} == 1 ]]; then
	{
		echo "# bench/perfcheck.budget - instructions per operation that make perfcheck allows"
		echo "# (scripts/perfcheck.sh says how they are counted). A change to a line is a commit that"
		echo "# says why. Columns: op, mechanism, instructions per op (yield: one yield; ctx_switch,"
		echo "# mutex_pingpong, condvar_pingpong: one one-way handoff; spawn_join: a spawn and its"
		echo "# join; wakeup_xworker: a round trip between two workers)."
		echo "# Written $(date -u +%F) at $(git rev-parse --short HEAD 2>/dev/null || echo '?')"\
			"with $(gcc -dumpfullversion 2>/dev/null | sed 's/^/gcc /') and $(valgrind --version)."
		cat "$tmp/report"
	} >"$BUDGET"
	echo "perfcheck: wrote $BUDGET:"
	grep -v '^#' "$BUDGET"
	exit 0
fi
cat "$tmp/report"
if [[ $status -ne 0 ]]; then
	echo "perfcheck: FAILED: an operation costs more instructions than $BUDGET allows." >&2
	echo "perfcheck: find what the change added to that path (callgrind_annotate), or, if the" >&2
	echo "perfcheck: cost is meant, rewrite the budget (PERFCHECK_WRITE=1) in a commit that says why." >&2
	exit 1
fi
echo "perfcheck: every operation within budget (+$TOL %; wakeup_xworker +$XW_TOL %)"
