#!/usr/bin/env bash
# fuzz/run.sh - build the libFuzzer targets (fuzz/build.sh) and run each for a while, one after
# the other (one process: never -jobs/-workers), starting from the committed seed corpus
# fuzz/corpus/<target>/, which is never written to. Exit 1 if any target crashed, leaked, hit a
# failed check, exceeded the memory limit or took longer than -timeout on one input; the input
# that did it is left in OUT/artifacts/<target>/ (rerun: OUT/fuzz_<target> <that file>).
# Usage: fuzz/run.sh smoke|campaign SECONDS [OUT] [TARGET...]
#   smoke     a fresh copy of the seed corpus per run (OUT/smoke/<target>); make fuzz-smoke, CI
#   campaign  the working corpus OUT/campaign/<target> is kept and grows from run to run;
#             make fuzz (docs/fuzzing.md). Its final statistics are printed per target.
set -euo pipefail

cd "$(dirname "$0")/.."
mode=${1:?usage: fuzz/run.sh smoke|campaign SECONDS [OUT] [TARGET...]}
secs=${2:?usage: fuzz/run.sh smoke|campaign SECONDS [OUT] [TARGET...]}
OUT=${3:-build-fuzz}
shift 3 2>/dev/null || shift $#
[[ $mode == smoke || $mode == campaign ]] || { echo "fuzz/run.sh: mode must be smoke or campaign" >&2; exit 2; }
(($#)) || set -- resp proto config sim_dist sim_trace

fuzz/build.sh "$OUT" "$@"
failed=()
for t in "$@"; do
	work=$OUT/$mode/$t
	art=$OUT/artifacts/$t
	if [[ $mode == smoke ]]; then rm -rf "$work"; fi
	mkdir -p "$work" "$art"
	cp fuzz/corpus/"$t"/* "$work"/ # the seeds again: same names, same bytes
	log=$OUT/$mode-$t.log
	echo "== fuzz $t: ${secs}s ($work)"
	# -timeout: one input taking 10 s is a finding (a hang or a quadratic path), not patience.
	if "$OUT"/fuzz_"$t" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
		-print_final_stats=1 -artifact_prefix="$art"/ "$work" >"$log" 2>&1; then
		grep -E '^#[0-9]+[[:space:]]+DONE' "$log" | tail -1 || true
		if [[ $mode == campaign ]]; then
			grep -E '^stat::' "$log" | tr '\n' ' '
			echo "corpus: $(find "$work" -type f | wc -l) files"
		fi
	else
		failed+=("$t")
		echo "fuzz $t: FAILED; the end of $log:" >&2
		tail -n 40 "$log" >&2
	fi
done
if ((${#failed[@]})); then
	echo "fuzz: ${#failed[@]} target(s) failed: ${failed[*]} (inputs in $OUT/artifacts/)" >&2
	exit 1
fi
echo "fuzz: ${*} ran ${secs}s each, no crash"
