#!/usr/bin/env bash
# bench/kv_tombstones.sh - one RocksDB call that runs for milliseconds, and what preemption inside
# RocksDB does for the GETs queued behind it (issue 14 §4; docs/libraries.md, "RocksDB built with
# probes"; numbers in docs/performance.md).
#
# Owns: the scenario and its interleaved measurement. jiffy-kv on ONE worker (twoq, deadline,
# q = 10 us) preloads 200,000 keys; the first 100,000 are then deleted over RESP, which leaves
# 100,000 tombstones in the memtable. A "SCAN 0 COUNT 1" seeks to the first live key: inside
# RocksDB that one rocksdb_iter_seek_to_first() call steps over every tombstone (milliseconds),
# and with --rocksdb-preempt between-keys it is one non-preemptible region. One redis-benchmark
# client sends that SCAN back to back; another sends GETs of one live key, one at a time, and
# reports their latency percentiles. Configurations, each started fresh, in rotating order:
#   debian-between   jiffy-kv (Debian's RocksDB, today's regions)
#   probes-between   jiffy-kv-probes --rocksdb-preempt between-keys (the probes are there but
#                    the seek is a region, so they defer to its end)
#   probes-inside    jiffy-kv-probes (the default: the seek is preemptible at RocksDB's probes)
#   loops-inside     jiffy-kv-loops (probes at loop back-edges only)
#   clang-inside     jiffy-kv-clang --rocksdb-preempt inside (no probes: under deadline nothing
#                    can preempt the seek; the control)
# A binary that is not built is left out with a line saying so. Prints one line per run (GET
# p50/p99/max and the SCANs' rate) and per configuration the median with its range. Runs alone:
# it is a timing measurement.
#
# usage: bench/kv_tombstones.sh [BUILD_DIR (build)] [REPEATS (3)] [GETS (2000)]
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${1:-$root/build}
REPEATS=${2:-3}
GETS=${3:-2000}
KEYS=200000
DELETED=100000
work=$(mktemp -d)
pid=
scan_pid=
trap '[[ -n $scan_pid ]] && kill $scan_pid 2>/dev/null; [[ -n $pid ]] && kill -KILL $pid 2>/dev/null; rm -rf "$work"' EXIT
command -v redis-benchmark >/dev/null || { echo "kv_tombstones: needs redis-benchmark (apt-get install redis-tools)" >&2; exit 1; }
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')

declare -A bin args
configs=()
add() { # add <name> <binary> <args...>
	local name=$1 b=$2
	shift 2
	if [[ ! -x $b ]]; then
		echo "kv_tombstones: $name left out: $b is not built (scripts/rocksdb-probes.sh)" >&2
		return
	fi
	bin[$name]=$b
	args[$name]="$*"
	configs+=("$name")
}
add debian-between "$build/apps/kv/jiffy-kv" --rocksdb-preempt between-keys
add probes-between "$build/apps/kv/jiffy-kv-probes" --rocksdb-preempt between-keys
add probes-inside "$build/apps/kv/jiffy-kv-probes" --rocksdb-preempt inside
add loops-inside "$build/apps/kv/jiffy-kv-loops" --rocksdb-preempt inside
add clang-inside "$build/apps/kv/jiffy-kv-clang" --rocksdb-preempt inside
((${#configs[@]})) || { echo "kv_tombstones: nothing to run" >&2; exit 1; }

start() { # start <config>
	local c=$1
	# shellcheck disable=SC2086
	JIFFY_WORKERS=1 JIFFY_POLICY=twoq JIFFY_PREEMPT=deadline JIFFY_QUANTUM_US=10 \
		taskset -c 0 "${bin[$c]}" ${args[$c]} --port 0 --resp-port "$port" --keys $KEYS \
		>"$work/out" 2>"$work/err" &
	pid=$!
	for _ in $(seq 300); do
		grep -q '^READY' "$work/out" && break
		sleep 0.1
	done
	grep -q '^READY' "$work/out" || { echo "kv_tombstones: $c did not start:" >&2; cat "$work/err" >&2; exit 1; }
	# the tombstones: DEL key0 .. key(DELETED-1), pipelined
	python3 -c "
import sys
for i in range($DELETED):
    k = b'key%012d' % i
    sys.stdout.buffer.write(b'*2\r\n\$3\r\nDEL\r\n\$%d\r\n%s\r\n' % (len(k), k))
" | redis-cli -p "$port" --pipe >"$work/pipe" 2>&1 || { cat "$work/pipe" >&2; exit 1; }
	[[ $(redis-cli -p "$port" DBSIZE) == $((KEYS - DELETED)) ]] ||
		{ echo "kv_tombstones: DBSIZE after the deletes is not $((KEYS - DELETED))" >&2; exit 1; }
}

stop() {
	kill -INT "$pid"
	wait "$pid" || true
	pid=
}

run() { # run <config> <repeat>: prints "config p50 p99 max scans_per_s"
	local c=$1 scans
	start "$c"
	local first
	first=$(redis-cli -p "$port" SCAN 0 COUNT 1 | tail -1)
	[[ $first == key$(printf '%012d' $DELETED) ]] || { echo "kv_tombstones: SCAN 0 COUNT 1 gave '$first'" >&2; exit 1; }
	taskset -c 1 redis-benchmark -p "$port" -c 1 -n 100000000 SCAN 0 COUNT 1 >"$work/scan" 2>&1 &
	scan_pid=$!
	sleep 0.5
	taskset -c 1 redis-benchmark -p "$port" -c 1 -n "$GETS" GET key000000150000 >"$work/get" 2>&1
	kill $scan_pid 2>/dev/null; wait $scan_pid 2>/dev/null || true
	scan_pid=
	# redis-benchmark's summary: "avg min p50 p95 p99 max" in ms, the line after "latency summary"
	read -r _avg _min p50 _p95 p99 max < <(tr '\r' '\n' <"$work/get" | grep -A2 'latency summary' | tail -1)
	scans=$(tr '\r' '\n' <"$work/scan" | grep -oE 'SCAN 0 COUNT 1: rps=[0-9.]+' | tail -1 | sed 's/.*rps=//')
	stop
	printf '%s %s %s %s %s\n' "$c" "$p50" "$p99" "$max" "${scans:-?}"
}

echo "# kv_tombstones $(date -u +%FT%TZ) commit $(git -C "$root" rev-parse --short HEAD) $(nproc) CPUs;" \
	"GET latency in ms (redis-benchmark), while SCAN 0 COUNT 1 steps over $DELETED tombstones"
results=$work/results
: >"$results"
for ((r = 0; r < REPEATS; r++)); do
	n=${#configs[@]}
	for ((i = 0; i < n; i++)); do
		c=${configs[$(((i + r) % n))]}
		line=$(run "$c" "$r")
		echo "run $((r + 1)): $line"
		echo "$line" >>"$results"
	done
done
echo "# per configuration: median [min-max] over $REPEATS runs"
python3 - "$results" <<'EOF'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    c, p50, p99, mx, scans = line.split()
    rows.setdefault(c, []).append((float(p50), float(p99), float(mx)))
def fmt(v):
    return f"{statistics.median(v):.3f} [{min(v):.3f}-{max(v):.3f}]"
print(f"{'config':16} {'GET p50 ms':>24} {'GET p99 ms':>24} {'GET max ms':>24}")
for c, v in rows.items():
    print(f"{c:16} {fmt([x[0] for x in v]):>24} {fmt([x[1] for x in v]):>24} {fmt([x[2] for x in v]):>24}")
EOF
