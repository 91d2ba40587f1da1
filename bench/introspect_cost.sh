#!/usr/bin/env bash
# bench/introspect_cost.sh - what issue 15's always-on introspection costs on the switch path:
# jiffy_bench yield and spawn_join for five variants, interleaved (each round runs every variant
# once, in a rotating order), medians with min/max and the ratio to the base.
#   base     BASE_REV (default 66598c9: the commit before the histograms, view and probes)
#   noprobe  HEAD with the USDT probe macros compiled to nothing (src/runtime/probes.h)
#   nohist   HEAD with jf_hist_add() compiled to nothing (src/runtime/runtime.h)
#   head     HEAD as built
#   monitor  HEAD with JIFFY_SCHEDTRACE=1000 JIFFY_STALL_REPORT=100 (the monitor thread running)
# The variants are git worktrees under $WORK (default /tmp/jiffy-introspect-cost), built with
# the project's RelWithDebInfo flags (only jiffy_bench). Usage: bench/introspect_cost.sh [ROUNDS]
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
rounds=${1:-7}
base_rev=${BASE_REV:-66598c9}
work=${WORK:-/tmp/jiffy-introspect-cost}
mkdir -p "$work"
head_rev=$(git -C "$root" rev-parse --short HEAD)

prepare() { # prepare <name> <rev>
	local dir=$work/$1
	if [[ ! -d $dir ]]; then
		git -C "$root" worktree add -f -q "$dir" "$2"
	else
		git -C "$dir" checkout -q -f "$2"
	fi
}
prepare base "$base_rev"
prepare noprobe "$head_rev"
prepare nohist "$head_rev"
python3 - "$work" <<'PY'
import re, sys
w = sys.argv[1]
p = f"{w}/noprobe/src/runtime/probes.h"
s = open(p).read()
s = re.sub(r"#define JF_PROBE(\d)\(([^)]*)\) DTRACE_PROBE\d\(jiffy, [^\n]*",
           lambda m: f"#define JF_PROBE{m.group(1)}({m.group(2)}) ((void)0)", s)
assert "((void)0)" in s
open(p, "w").write(s)
p = f"{w}/nohist/src/runtime/runtime.h"
s = open(p).read()
old = ("\tuint64_t *b = &h->buckets[jf_hist_index(v)];\n"
       "\t__atomic_store_n(b, __atomic_load_n(b, __ATOMIC_RELAXED) + 1, __ATOMIC_RELAXED);")
assert old in s
open(p, "w").write(s.replace(old, "\t(void)h;\n\t(void)v;"))
PY
for v in base noprobe nohist; do
	cmake -G Ninja -S "$work/$v" -B "$work/$v/build" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
		-DJIFFY_BUILD_APPS=OFF >/dev/null
	cmake --build "$work/$v/build" -j "$(nproc)" --target jiffy_bench >/dev/null
done
cmake --build "$root/build" -j "$(nproc)" --target jiffy_bench >/dev/null

declare -A bin=([base]=$work/base/build/bench/jiffy_bench [noprobe]=$work/noprobe/build/bench/jiffy_bench
	[nohist]=$work/nohist/build/bench/jiffy_bench [head]=$root/build/bench/jiffy_bench
	[monitor]=$root/build/bench/jiffy_bench)
vs=(base noprobe nohist head monitor)
raw=$work/raw.tsv
: >"$raw"
for r in $(seq 1 "$rounds"); do
	for op in yield spawn_join; do
		for i in 0 1 2 3 4; do
			v=${vs[$(((i + r) % 5))]}
			e=()
			[[ $v == monitor ]] && e=(JIFFY_SCHEDTRACE=1000 JIFFY_STALL_REPORT=100)
			printf '%s\t%s\t' "$r" "$v" >>"$raw"
			env "${e[@]}" "${bin[$v]}" "$op" 2>/dev/null | tail -1 >>"$raw"
		done
	done
done
echo "base $base_rev, head $head_rev, $rounds rounds; ns per op (min of jiffy_bench's repetitions)"
python3 - "$raw" <<'PY'
import collections, statistics as st, sys
d = collections.defaultdict(list)
for ln in open(sys.argv[1]):
    f = ln.rstrip("\n").split("\t")
    d[(f[1], f[3])].append(float(f[4]))
for op in ("yield", "spawn_join"):
    b = st.median(d[("base", op)])
    for v in ("base", "noprobe", "nohist", "head", "monitor"):
        x = d[(v, op)]
        m = st.median(x)
        print(f"{op:10s} {v:8s} median {m:8.1f}  min {min(x):8.1f}  max {max(x):8.1f}"
              f"  vs base {100 * (m / b - 1):+5.1f}%")
PY
