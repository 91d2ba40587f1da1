#!/usr/bin/env bash
# bench/kv_limits.sh - what issue 13's limits cost jiffy-kv's RESP front end (docs/performance.md,
# "Safe by default: the cost of the limits and of AUTH").
#
# Owns: an interleaved comparison of redis-benchmark throughput against (a) a jiffy-kv built
# without the limits (BASE, e.g. a worktree of the commit before them), (b) this tree's jiffy-kv
# with its defaults (limits on, no password), (c) the same with a password and redis-benchmark
# -a. Each repeat starts each server fresh, in rotating order, and runs GET and SET with 50
# clients, unpipelined (-P 1) and pipelined (-P 16). Prints one line per run and the median with
# its range per configuration; ratios are of medians. Runs alone: it is a timing measurement.
#
# usage: bench/kv_limits.sh BASE_JIFFY_KV NEW_JIFFY_KV [REPEATS (5)] [REQUESTS (200000)]
set -euo pipefail

BASE=${1:?usage: kv_limits.sh BASE_JIFFY_KV NEW_JIFFY_KV [REPEATS] [REQUESTS]}
NEW=${2:?usage: kv_limits.sh BASE_JIFFY_KV NEW_JIFFY_KV [REPEATS] [REQUESTS]}
REPEATS=${3:-5}
N=${4:-200000}
work=$(mktemp -d)
pid=
trap '[[ -n $pid ]] && kill -KILL $pid 2>/dev/null; rm -rf "$work"' EXIT
printf 'bench password\n' >"$work/pw"
chmod 600 "$work/pw"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')

start() { # start <binary> <args...>
	"$@" --port 0 --resp-port "$port" --keys 100000 >"$work/out" 2>"$work/err" &
	pid=$!
	for _ in $(seq 100); do
		grep -q '^READY' "$work/out" && return 0
		sleep 0.1
	done
	echo "no READY from $*" >&2
	exit 1
}
stop() {
	kill -INT "$pid"
	wait "$pid" || true
	pid=
}

configs=(base new new-auth)
for ((r = 1; r <= REPEATS; r++)); do
	for ((k = 0; k < 3; k++)); do
		c=${configs[$(((k + r) % 3))]}
		auth=()
		case $c in
		base) start "$BASE" ;;
		new) start "$NEW" ;;
		new-auth) start "$NEW" --requirepass-file "$work/pw"; auth=(-a 'bench password') ;;
		esac
		for P in 1 16; do
			redis-benchmark -p "$port" "${auth[@]}" -t get,set -n "$N" -c 50 -P "$P" -q 2>/dev/null |
				tr '\r' '\n' | grep -E '^(GET|SET): [0-9.]+ requests per second' |
				while read -r op rps _; do
					echo "$r $c P$P ${op%:} $rps"
				done
		done
		stop
	done
done | tee "$work/runs"

echo
echo "median (min-max) requests/s over $REPEATS repeats; ratio: median / base median"
python3 - "$work/runs" <<'PY'
import collections, statistics, sys
runs = collections.defaultdict(list)
for line in open(sys.argv[1]):
    r, c, p, op, rps = line.split()
    runs[(p, op, c)].append(float(rps))
for p in ("P1", "P16"):
    for op in ("GET", "SET"):
        base = statistics.median(runs[(p, op, "base")])
        cells = []
        for c in ("base", "new", "new-auth"):
            v = runs[(p, op, c)]
            m = statistics.median(v)
            cells.append("%s %.0f (%.0f-%.0f) x%.3f" % (c, m, min(v), max(v), m / base))
        print("%-3s %-3s  %s" % (p, op, "   ".join(cells)))
PY
