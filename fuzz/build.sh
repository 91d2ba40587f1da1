#!/usr/bin/env bash
# fuzz/build.sh - build the libFuzzer targets of fuzz/ with clang-14 into a directory (default
# build-fuzz/), each from only the sources it needs (the project's main build uses gcc; these
# never need it). -fsanitize=fuzzer,address,undefined, warnings as errors, UB fatal.
# Usage: fuzz/build.sh [OUTDIR] [TARGET...]   (targets: see TARGETS below; default all)
# Rebuilds a target only when one of its sources (or this script) is newer than the binary.
set -euo pipefail

cd "$(dirname "$0")/.."
OUT=${1:-build-fuzz}
shift || true
CC=${FUZZ_CC:-clang-14}
CFLAGS=(-std=gnu17 -g -O1 -fno-omit-frame-pointer -Wall -Wextra -Werror
	-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all
	-Iinclude -Isrc -Iapps/common -Iapps/kv -Isim -Ifuzz)

TARGETS=(resp proto config sim_dist sim_trace)

# The sources of each target, and its extra flags.
sources() {
	case $1 in
	resp) echo fuzz/fuzz_resp.c apps/kv/resp.c fuzz/fake_kvstore.c ;;
	proto) echo fuzz/fuzz_proto.c apps/kv/kvproto.c apps/common/synth.c apps/common/spin.c \
		fuzz/fake_kvstore.c ;;
	config) echo fuzz/fuzz_config.c src/runtime/config.c src/sched/policy.c src/sched/params.c \
		src/common/spinlock.c \
		src/sched/pwq.c $(sed -n 's|^JF_POLICY(\([a-z0-9_]*\))$|src/sched/\1.c|p' src/sched/policies.def) ;;
	sim_dist) echo fuzz/fuzz_sim_dist.c sim/dist.c ;;
	sim_trace) echo fuzz/fuzz_sim_trace.c sim/sim.c sim/dist.c sim/hist.c sim/costs.c sim/json.c ;;
	*) echo "fuzz/build.sh: unknown target '$1' (known: ${TARGETS[*]})" >&2; return 1 ;;
	esac
}
extra_flags() {
	case $1 in
	sim_dist | sim_trace) echo -lm ;;
	*) ;;
	esac
}

command -v "$CC" >/dev/null || { echo "fuzz/build.sh: $CC not found (scripts/deps.sh build)" >&2; exit 1; }
mkdir -p "$OUT"
(($#)) || set -- "${TARGETS[@]}"
pids=()
for t in "$@"; do
	srcs=$(sources "$t")
	bin=$OUT/fuzz_$t
	stale=0
	for f in $srcs fuzz/*.h src/sched/policies.def fuzz/build.sh; do [[ -e $bin && ! $f -nt $bin ]] || stale=1; done
	((stale)) || continue
	# shellcheck disable=SC2046,SC2086 # word splitting of the lists is intended
	"$CC" "${CFLAGS[@]}" $srcs $(extra_flags "$t") -o "$bin" &
	pids+=($!)
	# two compilers at a time: CI has two cores
	if ((${#pids[@]} >= ${FUZZ_BUILD_JOBS:-2})); then wait "${pids[0]}"; pids=("${pids[@]:1}"); fi
done
for p in "${pids[@]}"; do wait "$p"; done
