#!/usr/bin/env bash
# attribution.sh - where the core operations' time goes: jiffy_bench built at several commits
# and run with features toggled, interleaved, in one run (docs/performance.md, "Paying only for
# what is used").
#
# Owns: building bench/jiffy_bench at each commit named (a git worktree per commit under
# $WORK, RelWithDebInfo like ./build), then REPS rounds in which every (commit, variant) runs
# once, in order, so that the host's drift falls on every column alike; prints the median over
# the rounds of each op's best-of-5 (BENCH_QUICK=1: 20 ms runs), in ns per op.
#
# Usage: bench/attribution.sh [REPS] [COMMIT...]
#   default commits: the hot-path steps of issue 26 (2d58218 .. HEAD); default REPS 3.
#   A variant is "<commit> <env>": each commit runs under JIFFY_PREEMPT=none and =auto, HEAD also
#   with the runtime toggles below (histograms on, strict mutex handoff, no lock spinning, no
#   lock-holder deferral).
# Timing: run it alone (flock /tmp/jiffy-timing.lock, as the other benchmarks do).
set -euo pipefail
cd "$(dirname "$0")/.."
REPS=${1:-3}
shift || true
COMMITS=("$@")
if ((${#COMMITS[@]} == 0)); then
	COMMITS=(2d58218 aa1d125 c96a8ed cc1eb2c HEAD)
fi
WORK=${WORK:-/tmp/jiffy-attribution}
OPS="yield ctx_switch spawn_join mutex_pingpong condvar_pingpong wakeup_xworker"
mkdir -p "$WORK"

declare -A bin
for c in "${COMMITS[@]}"; do
	sha=$(git rev-parse --short "$c")
	dir=$WORK/$sha
	if [[ ! -x $dir/bench/jiffy_bench ]]; then
		echo "attribution: building jiffy_bench at $sha" >&2
		rm -rf "$dir" "$WORK/src-$sha"
		git worktree add -f --detach "$WORK/src-$sha" "$sha" >/dev/null 2>&1
		cmake -G Ninja -S "$WORK/src-$sha" -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
		cmake --build "$dir" --target jiffy_bench >/dev/null
		git worktree remove --force "$WORK/src-$sha" >/dev/null 2>&1 || true
	fi
	bin[$c]=$dir/bench/jiffy_bench
	[[ -x ${bin[$c]} ]] || { echo "attribution: no jiffy_bench for $c" >&2; exit 2; }
done

variants=()
for c in "${COMMITS[@]}"; do
	variants+=("$c|JIFFY_PREEMPT=none" "$c|JIFFY_PREEMPT=auto")
done
last=${COMMITS[${#COMMITS[@]}-1]}
variants+=("$last|JIFFY_PREEMPT=auto JIFFY_HIST=1" "$last|JIFFY_PREEMPT=auto JIFFY_LOCK_HANDOFF=1"
	"$last|JIFFY_PREEMPT=auto JIFFY_LOCK_SPIN_US=0" "$last|JIFFY_PREEMPT=auto JIFFY_LOCK_DEFER_US=0")

out=$WORK/raw.tsv
: >"$out"
for r in $(seq 1 "$REPS"); do
	for v in "${variants[@]}"; do
		c=${v%%|*} envs=${v#*|}
		# shellcheck disable=SC2086
		env $envs BENCH_QUICK=1 "${bin[$c]}" $OPS 2>/dev/null |
			awk -v v="$(git rev-parse --short "$c") $envs" -v r="$r" '{ print r "\t" v "\t" $2 "\t" $3 }' >>"$out"
	done
done

echo "date: $(date -u '+%F %T') UTC; machine: $(nproc) CPUs, $(sed -n 's/^model name[^:]*: //p' /proc/cpuinfo | head -1); rounds: $REPS"
echo "ns per op: median over rounds of the best of 5 (BENCH_QUICK=1); min-max over rounds in brackets"
python3 - "$out" "$OPS" <<'EOF'
import sys, statistics, collections
rows = collections.defaultdict(list)
order = []
for line in open(sys.argv[1]):
    r, v, op, ns = line.rstrip("\n").split("\t")
    if ns == "n/a":
        continue
    if v not in order:
        order.append(v)
    rows[(v, op)].append(float(ns))
ops = sys.argv[2].split()
print("| variant | " + " | ".join(ops) + " |")
print("| --- |" + " ---: |" * len(ops))
for v in order:
    cells = []
    for op in ops:
        x = rows.get((v, op))
        cells.append(f"{statistics.median(x):.1f} [{min(x):.0f}-{max(x):.0f}]" if x else "-")
    print(f"| {v} | " + " | ".join(cells) + " |")
EOF
