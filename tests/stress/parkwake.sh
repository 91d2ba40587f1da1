#!/usr/bin/env bash
# tests/stress/parkwake.sh - the park/wake stress under host contention (make soak; issue 16).
#
# Owns: running core.parkwake's binary RUNS times in each park mode (futex, epoll) while
# 2 x nproc CPU hogs (`yes`) compete for every vCPU, and the verdict: every run must finish (the
# binary's watchdog aborts a run with no progress for 10 s) and no single wait, the longest gap
# between two passes of a run, may exceed BOUND_MS. Prints the distribution of those longest
# gaps (median, p99, max per mode) for docs/design.md.
# usage: tests/stress/parkwake.sh [path/to/test_core_parkwake] [RUNS=1000] [ROUNDS=5000] [BOUND_MS=5000]
set -euo pipefail

bin=${1:-build/tests/test_core_parkwake}
runs=${2:-1000}
rounds=${3:-5000}
bound_ms=${4:-5000}
[[ -x $bin ]] || { echo "parkwake.sh: $bin is not built (make build)" >&2; exit 2; }
# A private copy: a rebuild during the ~30 minutes must not replace the binary under the runs.
tmp=$(mktemp -d)
cp "$bin" "$tmp/parkwake"
bin=$tmp/parkwake
hogs=()
cleanup() {
	((${#hogs[@]})) && kill "${hogs[@]}" 2>/dev/null
	wait 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT
for ((i = 0; i < 2 * $(nproc); i++)); do yes >/dev/null & hogs+=($!); done

out=$tmp/gaps
fail=0
for mode in futex epoll; do
	: >"$out"
	for ((r = 1; r <= runs; r++)); do
		if ! line=$("$bin" "$mode" "$rounds" 2>&1 | grep "^parkwake $mode:"); then
			echo "parkwake.sh: run $r ($mode) failed:" >&2
			"$bin" "$mode" "$rounds" >&2 || true
			fail=1
			break
		fi
		sed -n 's/.*longest gap between passes \([0-9.]*\) ms/\1/p' <<<"$line" >>"$out"
	done
	n=$(wc -l <"$out")
	sort -n "$out" | awk -v mode="$mode" -v n="$n" -v bound="$bound_ms" '
		{ g[NR] = $1 }
		END {
			p50 = g[int((n + 1) / 2)]; p99 = g[int(n * 0.99) > 0 ? int(n * 0.99) : 1]; max = g[n]
			printf "%s: %d runs finished; longest gap per run: median %.2f ms, p99 %.2f ms, max %.2f ms (bound %d ms)\n", mode, n, p50, p99, max, bound
			if (max > bound) exit 1
		}' || { echo "parkwake.sh: a wait in $mode mode exceeded ${bound_ms} ms" >&2; fail=1; }
	((fail)) && break
done
exit $fail
