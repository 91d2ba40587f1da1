#!/usr/bin/env bash
# check_usdt.sh - the runtime's USDT probes (src/runtime/probes.h) are in the library and fire:
#  - readelf lists the provider "jiffy" with each of spawn, switch, block, wake, preempt, steal
#    and exit in libjiffy.so's .note.stapsdt;
#  - bpftrace attached to a real run (test_core_introspect's schedtrace subject, which spawns,
#    yields and joins for 300 ms) counts spawn, switch, block, wake and exit events (steal and
#    preempt need two busy workers or a preemption mechanism firing and are checked by the
#    notes only).
# Usage: check_usdt.sh <libjiffy.so> <test_core_introspect>
set -uo pipefail
lib=$1 bin=$2
fail() { echo "FAIL: $*" >&2; exit 1; }
notes=$(readelf -n "$lib") || fail "readelf -n $lib"
for p in spawn switch block wake preempt steal exit; do
	grep -A3 'stapsdt' <<<"$notes" | grep -q "Name: $p\$" || fail "probe jiffy:$p missing in $lib"
done
grep -q 'Provider: jiffy' <<<"$notes" || fail "provider jiffy missing in $lib"
echo "readelf: the 7 probes are in $lib"

command -v bpftrace >/dev/null || fail "bpftrace not installed (scripts/deps.sh build installs it)"
ulimit -l unlimited 2>/dev/null || true
prog=""
for p in spawn switch block wake exit; do prog+="usdt:$bin:jiffy:$p { @$p = count(); } "; done
out=$(timeout 60 bpftrace -e "$prog" -c "$bin schedtrace" 2>&1) || { echo "$out"; fail "bpftrace failed"; }
for p in spawn switch block wake exit; do
	n=$(sed -n "s/^@$p: \\([0-9]*\\)\$/\\1/p" <<<"$out")
	[[ -n "$n" && "$n" -gt 0 ]] || { echo "$out"; fail "bpftrace saw no jiffy:$p event"; }
	echo "bpftrace: jiffy:$p fired $n times"
done
echo "check_usdt: ok"
