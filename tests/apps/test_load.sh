#!/usr/bin/env bash
# tests/apps/test_load.sh - checks jiffy-load's numbers against a server with a known service
# time: synth-pthread (one thread, pinned to one CPU) serving SPIN requests of a fixed D, with
# jiffy-load pinned to another CPU.
#   (0) a malformed --dist gives a clear error and a non-zero exit (fast, no server);
#   (a) low load (rho = 0.1, D = 100 us): p50 in [D, D + 50 us], achieved within 3% of
#       offered, nothing lost;
#   (b) rho = 0.5, D = 200 us: the M/D/1 mean response time D + rho*D/(2(1-rho)) = 1.5 D =
#       300 us; the measured mean must be within 15% (255..345 us);
#   (c) overload (offered 2/D, D = 200 us): achieved within 10% of the capacity 1/D = 5000/s.
# The timing checks need CPUs that nobody else uses. An attempt during which other processes (or
# the hypervisor: steal) took more than 0.15 CPU, or (b)'s p99 lay beyond twice M/D/1's (a
# hypervisor stall of the server's CPU), is marked "disturbed" and said to be so. Each check is
# tried until it passes, or until LOAD_TEST_ATTEMPTS (3) undisturbed attempts have failed, or
# LOAD_TEST_MAX_ATTEMPTS (8) attempts were made in all: a check that never passed fails the test
# (exit 1), disturbed or not. (An earlier version made a check that failed only in disturbed
# attempts exit 77, skipped: a regression could then read as "skipped" for ever.) The one skip is
# a machine with fewer than 2 CPUs, said so.
#
# Env: JIFFY_LOAD (jiffy-load binary; default: scripts/build-load.sh builds it),
#      SYNTH_PTHREAD (default: build/apps/synth-pthread), LOAD_TEST_ATTEMPTS (3),
#      LOAD_TEST_MAX_ATTEMPTS (8).
set -uo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
SYNTH=${SYNTH_PTHREAD:-$root/build/apps/synth-pthread}
ATTEMPTS=${LOAD_TEST_ATTEMPTS:-3}
MAX_ATTEMPTS=${LOAD_TEST_MAX_ATTEMPTS:-8}
say() { echo "test_load: $*"; }
die() {
	echo "test_load: FAIL: $*" >&2
	exit 1
}

if [[ -z "${JIFFY_LOAD:-}" ]]; then
	JIFFY_LOAD=$("$root/scripts/build-load.sh") || die "scripts/build-load.sh could not build jiffy-load"
fi
[[ -x "$JIFFY_LOAD" ]] || die "jiffy-load not found at $JIFFY_LOAD (set JIFFY_LOAD)"
[[ -x "$SYNTH" ]] || die "synth-pthread not found at $SYNTH (build with cmake, or set SYNTH_PTHREAD)"

tmp=$(mktemp -d)
SP=
cleanup() {
	if [[ -n "$SP" ]] && kill -0 "$SP" 2>/dev/null; then
		kill -TERM "$SP"
		wait "$SP" 2>/dev/null
	fi
	rm -rf "$tmp"
}
trap cleanup EXIT

# ---- (0) malformed specifications: a clear message, exit status 2, no panic
for bad in "bogus:10us" "fixed:10" "bimodal:150:1us:2us" "lognormal:1us"; do
	out=$("$JIFFY_LOAD" --rate 10 --duration 2 --dist "$bad" 2>&1)
	rc=$?
	[[ $rc -ne 0 ]] || die "--dist $bad was accepted (exit 0)"
	[[ "$out" == *"--dist '$bad'"* ]] || die "--dist $bad: the message does not name the spec: $out"
	[[ "$out" != *panicked* ]] || die "--dist $bad: jiffy-load panicked: $out"
done
out=$("$JIFFY_LOAD" --workload kv --rate 10 --duration 2 --mix get:50,fetch:50 2>&1) &&
	die "--mix with an unknown op was accepted"
[[ "$out" == *"unknown op 'fetch'"* ]] || die "--mix error message unclear: $out"
say "(0) malformed --dist/--mix: clear errors, non-zero exit: ok"

# ---- CPUs: the server on one, the load generator on another
mapfile -t cpus < <(python3 -c 'import os; print("\n".join(map(str, sorted(os.sched_getaffinity(0)))))' 2>/dev/null ||
	seq 0 $(($(nproc) - 1)))
if ((${#cpus[@]} < 2)); then
	say "SKIP: needs 2 CPUs (have ${#cpus[@]})"
	exit 77
fi
SCPU=${cpus[0]}
LCPU=${cpus[1]}

# No CPU hog keeps the server's vCPU from halting: an earlier version ran a SCHED_IDLE busy loop
# there, and on this kernel (6.18, EEVDF) the server thread then got only ~40 % of the CPU ((c)
# measured 2000/s instead of 4800/s, PING p50 seconds), and the loop counted as "other load", so
# every attempt was marked disturbed and the test could only ever be skipped.
taskset -c "$SCPU" "$SYNTH" --port 0 --threads 1 >"$tmp/synth.out" 2>"$tmp/synth.err" &
SP=$!
for _ in $(seq 100); do
	grep -q '^READY synth-pthread udp=' "$tmp/synth.out" && break
	kill -0 "$SP" 2>/dev/null || die "synth-pthread exited: $(cat "$tmp/synth.err")"
	sleep 0.05
done
PORT=$(sed -n 's/^READY synth-pthread udp=\([0-9]*\)$/\1/p' "$tmp/synth.out")
[[ -n "$PORT" ]] || die "synth-pthread did not print READY"
say "synth-pthread on CPU $SCPU (udp $PORT), jiffy-load on CPU $LCPU; $(head -1 "$tmp/synth.err")"

HZ=$(getconf CLK_TCK)
busy_ticks() { awk '/^cpu /{print $2 + $3 + $4 + $9}' /proc/stat; } # user nice system steal
proc_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

# run_load NAME ARGS...: one run; sets V[column] from the CSV "overall" row, and FOREIGN (CPUs
# used by anything but the server and the load generator during the run).
declare -A V
FOREIGN=0
STALL=
run_load() {
	local name=$1
	shift
	STALL=
	local csv="$tmp/$name.csv"
	rm -f "$csv"
	local b0 s0 b1 s1 t0 t1
	b0=$(busy_ticks)
	s0=$(proc_ticks "$SP")
	t0=$(date +%s.%N)
	taskset -c "$LCPU" "$JIFFY_LOAD" --server "127.0.0.1:$PORT" --server-name synth-pthread \
		--label "$name" --csv "$csv" --json "$tmp/$name.json" --quiet "$@" \
		>"$tmp/$name.out" 2>"$tmp/$name.err" || die "$name: jiffy-load failed: $(cat "$tmp/$name.err")"
	t1=$(date +%s.%N)
	b1=$(busy_ticks)
	s1=$(proc_ticks "$SP")
	V=()
	local hdr row
	hdr=$(head -1 "$csv")
	row=$(grep ',overall,' "$csv")
	local IFS=,
	local -a h r
	read -r -a h <<<"$hdr"
	read -r -a r <<<"$row"
	for i in "${!h[@]}"; do V[${h[$i]}]=${r[$i]}; done
	FOREIGN=$(awk -v b=$((b1 - b0)) -v s=$((s1 - s0)) -v hz="$HZ" -v c="${V[cpu_s]}" \
		-v w="$(awk -v a="$t0" -v b="$t1" 'BEGIN{print b - a}')" \
		'BEGIN{f = (b - s) / hz - c; if (f < 0) f = 0; printf "%.2f", f / w}')
}

# between LO X HI
between() { awk -v lo="$1" -v x="$2" -v hi="$3" 'BEGIN{exit !(x >= lo && x <= hi)}'; }
# disturbed: other processes or steal took > 0.15 CPU, or jiffy-load itself could not keep its
# schedule (p99 lag > 50 us: its CPU was taken away).
# Or the check saw a stall of the server's CPU that no process accounts for (STALL, set by
# check_b: the hypervisor stopping the vCPU, which the guest's steal time does not always show).
disturbed() {
	[[ -n "$STALL" ]] && return 0
	awk -v f="$FOREIGN" -v l="${V[lag_p99_us]:-0}" 'BEGIN{exit !(f > 0.15 || l > 50)}'
}

FAILED=()
# check NAME FUNCTION: FUNCTION (0 = pass) until it passes, ATTEMPTS undisturbed attempts failed,
# or MAX_ATTEMPTS were made; a check that never passed is a failure, whatever disturbed it.
check() {
	local name=$1 fn=$2 clean=0 dist=0 a=0
	while ((clean < ATTEMPTS && a < MAX_ATTEMPTS)); do
		a=$((a + 1))
		STALL=
		if $fn; then
			say "$name: ok (attempt $a, other load ${FOREIGN} CPU)"
			return
		fi
		if disturbed; then
			say "$name: attempt $a failed while disturbed (other load ${FOREIGN} CPU${STALL:+, a stall of the server CPU}): $WHY"
			dist=$((dist + 1))
		else
			say "$name: attempt $a FAILED (other load ${FOREIGN} CPU): $WHY"
			clean=$((clean + 1))
		fi
	done
	say "$name: FAILED in all $a attempts ($clean undisturbed, $dist disturbed)"
	FAILED+=("$name")
}

WHY=
SEFF=
BASE=
check_c() {
	wait_idle
	run_load over --dist fixed:200us --rate 10000 --duration 4 --warmup 1 --drain-ms 300
	WHY="achieved ${V[achieved_rps]}/s (capacity 1/D = 5000/s, want 4500..5500), offered ${V[offered_rps]}/s"
	say "  (c) overload 2/D: $WHY; lost ${V[lost]} (expected: the server's queue overflows)"
	between 4500 "${V[achieved_rps]}" 5500 || return 1
	# the server's real service time, for (b); only from a passing run (else (b) uses D)
	SEFF=$(awk -v a="${V[achieved_rps]}" 'BEGIN{printf "%.1f", 1e6 / a}')
}
# wait_idle: after an overload the server still works through what its socket buffer holds;
# the next run must not start behind that backlog (it showed as a PING p99 of 0.4 s).
wait_idle() {
	local a b
	for _ in $(seq 50); do
		a=$(proc_ticks "$SP")
		sleep 0.2
		b=$(proc_ticks "$SP")
		((b - a <= 1)) && return
	done
}
ping_base() {
	run_load ping --workload ping --rate 1000 --duration 3 --warmup 1
	BASE=${V[p50_us]}
	WHY="ping p50 ${V[p50_us]} us p99 ${V[p99_us]} us"
	say "  baseline: PING at 1000/s: $WHY (the round trip + the server's wake-up and fixed cost)"
	between 0 "$BASE" 200 && ! disturbed
}
check_a() {
	local hi
	hi=$(awk -v b="$BASE" 'BEGIN{print 100 + b + 50}')
	run_load low --dist fixed:100us --rate 1000 --duration 4 --warmup 1
	WHY="p50 ${V[p50_us]} us (want 100..$hi = D + ping p50 + 50), offered ${V[offered_rps]}/s achieved ${V[achieved_rps]}/s (want within 3%), lost ${V[lost]} (want 0)"
	say "  (a) rho=0.1 D=100us: $WHY; lag p99 ${V[lag_p99_us]} us"
	between 100 "${V[p50_us]}" "$hi" &&
		between 0.97 "$(awk -v a="${V[achieved_rps]}" -v o="${V[offered_rps]}" 'BEGIN{print a / o}')" 1.03 &&
		[[ "${V[lost]}" == 0 ]]
}
check_b() {
	# M/D/1 with the service time the server really has (S = 1/capacity measured in (c)) plus the
	# PING round trip; with S = D = 200 us and no overhead this is the textbook 1.5 D = 300 us.
	local pred lo hi
	pred=$(awk -v s="$SEFF" -v b="$BASE" 'BEGIN{r = 2500e-6 * s; printf "%.1f", s + r * s / (2 * (1 - r)) + b}')
	lo=$(awk -v p="$pred" 'BEGIN{print p * 0.85}')
	hi=$(awk -v p="$pred" 'BEGIN{print p * 1.15}')
	run_load mdl --dist fixed:200us --rate 2500 --duration 6 --warmup 1
	WHY="mean ${V[mean_us]} us (M/D/1 with S = $SEFF us plus ping p50 $BASE us: $pred us, want $lo..$hi; textbook 1.5 D = 300 us), p50 ${V[p50_us]} p99 ${V[p99_us]} us"
	say "  (b) rho=0.5 D=200us: $WHY; achieved ${V[achieved_rps]}/s lost ${V[lost]}"
	# M/D/1's p99 at rho = 0.5 is about 3.1 times its mean (simulated: 986-1067 us for a mean
	# of 334-344 us with S = 215 us). A p99 beyond twice that is no queueing effect: the host
	# stopped the server's CPU for milliseconds (seen in CI on 2026-11-28: p99 3.1-7.6 ms, p50
	# 335-339 us as usual, every attempt). Such an attempt counts as disturbed, as one with
	# foreign CPU load does; a mean off while the tail is plausible still fails.
	if awk -v p="${V[p99_us]}" -v m="$pred" 'BEGIN{exit !(p > 2 * 3.1 * m)}'; then
		STALL=1
		WHY="$WHY; a stall: p99 above 2 x M/D/1's ($(awk -v m="$pred" 'BEGIN{printf "%.0f", 2 * 3.1 * m}') us)"
	fi
	between "$lo" "${V[mean_us]}" "$hi"
}

check "(c) overload throughput" check_c
wait_idle
[[ -n "$SEFF" ]] || SEFF=200
check "baseline ping" ping_base
[[ -n "$BASE" ]] || BASE=0
check "(a) low load" check_a
check "(b) M/D/1 rho=0.5" check_b

kill -TERM "$SP"
wait "$SP"
src=$?
SP=
[[ $src -eq 0 ]] || die "synth-pthread exited with $src on SIGTERM"
grep -q '^synth-pthread: requests=' "$tmp/synth.err" || die "synth-pthread printed no statistics line on SIGTERM"
say "$(grep '^synth-pthread: requests=' "$tmp/synth.err")"

if ((${#FAILED[@]})); then
	die "${FAILED[*]}"
fi
say "PASS"
