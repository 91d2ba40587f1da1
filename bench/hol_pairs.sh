#!/usr/bin/env bash
# hol_pairs.sh - paired runs of the head-of-line workload at one load, configurations interleaved.
#
# Owns: the quick A/B of preemption settings on jiffy-synth-probes (compiler probes, no hand-placed
# safepoints; bimodal 99.5 % 0.5 us / 0.5 % 500 us; twoq; q = 10 us; one worker on CPU 0,
# jiffy-load on CPU 1), where experiments/configs/autohol.toml sweeps loads. Each round runs every
# configuration once, in order, so that the host's drift falls on all of them alike; at the end,
# per configuration, the short requests' p99 of every run and its median, the median p50 and the
# worker's median idle time (JIFFY_STATS). docs/performance.md, "auto on the head-of-line workload".
#
# Usage: bench/hol_pairs.sh [ROUNDS] [RATE] [CONFIG...]
#   ROUNDS default 9, RATE default 30000 req/s; a CONFIG is "MECH[,VAR=VALUE...]", default:
#   "auto,JIFFY_GRACE_US=1000" "auto" "deadline". DURATION (s, default 3.5) per run. The pseudo
#   variable SERVER=PATH runs another build's jiffy-synth-probes (a before/after of a change:
#   git worktree add /tmp/old REV; cmake ... --target jiffy_synth_probes there).
#   Needs build/apps/jiffy-synth-probes (make build with clang-14) and load/ (make build).
# Timing: run it alone (it holds flock /tmp/jiffy-timing.lock throughout, as the benchmarks do).
set -euo pipefail
cd "$(dirname "$0")/.."
[[ -n ${HOL_PAIRS_LOCKED:-} ]] || exec env HOL_PAIRS_LOCKED=1 flock /tmp/jiffy-timing.lock "$0" "$@"
ROUNDS=${1:-9}
RATE=${2:-30000}
shift $(($# > 2 ? 2 : $#))
CONFIGS=("$@")
((${#CONFIGS[@]})) || CONFIGS=("auto,JIFFY_GRACE_US=1000" "auto" "deadline")
DURATION=${DURATION:-3.5}
SERVER=build/apps/jiffy-synth-probes
LOAD=load/target/release/jiffy-load
for b in "$SERVER" "$LOAD"; do
	[[ -x $b ]] || { echo "hol_pairs: $b is missing (make build)" >&2; exit 2; }
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

one() { # one <config> -> "config p99 p50 idle_s" on stdout
	local cfg=$1 mech=${1%%,*} all=() envs=() server=$SERVER e port pid i
	[[ $cfg == *,* ]] && IFS=, read -r -a all <<<"${cfg#*,}"
	for e in ${all[@]+"${all[@]}"}; do
		if [[ $e == SERVER=* ]]; then server=${e#SERVER=}; else envs+=("$e"); fi
	done
	env ${envs[@]+"${envs[@]}"} JIFFY_STATS=1 JIFFY_WORKERS=1 JIFFY_POLICY=twoq JIFFY_PREEMPT="$mech" \
		JIFFY_QUANTUM_US=10 taskset -c 0 "$server" --port 0 >"$tmp/out" 2>"$tmp/err" &
	pid=$!
	for i in $(seq 100); do grep -q READY "$tmp/out" && break; sleep 0.1; done
	port=$(grep -o "udp=[0-9]*" "$tmp/out" | head -1 | cut -d= -f2)
	[[ -n $port ]] || { kill "$pid"; echo "hol_pairs: $cfg: the server did not start" >&2; cat "$tmp/err" >&2; return 1; }
	"$LOAD" --server "127.0.0.1:$port" --rate "$RATE" --duration "$DURATION" --warmup 0.5 \
		--cpu 1 --quiet --workload spin --dist bimodal:99.5:500ns:500us \
		--json "$tmp/load.json" >"$tmp/load.out" 2>&1
	kill -INT "$pid"
	wait "$pid" || { echo "hol_pairs: $cfg: the server failed on SIGINT" >&2; return 1; }
	python3 - "$cfg" "$tmp/load.json" "$tmp/err" <<'EOF'
import json, sys
cfg, load, err = sys.argv[1:]
d = json.load(open(load))["classes"]["short"]
rows = open(err).read().split("jiffy: counters")[1].splitlines()
st = dict(zip(rows[1].split(), rows[2].split()))
print(cfg, d["p99_us"], d["p50_us"], int(st["idle_ns"]) / 1e9)
EOF
}

for ((r = 1; r <= ROUNDS; r++)); do
	for c in "${CONFIGS[@]}"; do
		one "$c" | tee -a "$tmp/runs"
	done
done
echo "date: $(date -u '+%F %T') UTC; $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'); rate $RATE req/s, $ROUNDS rounds of ${DURATION} s"
python3 - "$tmp/runs" <<'EOF'
import collections, statistics, sys
runs = collections.OrderedDict()
for line in open(sys.argv[1]):
    cfg, p99, p50, idle = line.split()
    runs.setdefault(cfg, []).append((float(p99), float(p50), float(idle)))
print("| configuration | short p99 per run (us, sorted) | median p99 | median p50 | median idle (s) |")
print("| --- | --- | ---: | ---: | ---: |")
for cfg, v in runs.items():
    p99 = sorted(x[0] for x in v)
    print(f"| {cfg} | {', '.join(f'{x:.0f}' for x in p99)} | {statistics.median(p99):.0f} "
          f"| {statistics.median(x[1] for x in v):.1f} | {statistics.median(x[2] for x in v):.2f} |")
EOF
