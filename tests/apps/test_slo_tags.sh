#!/usr/bin/env bash
# tests/apps/test_slo_tags.sh - the request tags of jiffy-synth and jiffy-kv reach the runtime
# (CTest: apps.slo_tags, label "functional"; no timing: it checks counts, never latencies).
#
# What it proves: each spawned request uthread carries its request type (jiffy-synth: the klass
# byte; jiffy-kv: the op) in attr.sched.type and the type's --slo in attr.sched.slo_ns, i.e. what
# the central policy's MQ mode reads when it queues the uthread. The servers count, per type, the
# requests whose handler read its own attributes back (jf_thread_get_sched_attr) as the expected
# type and SLO ("tagged") and print one line per type at exit; this script sends a known number
# of requests of each type with tests/apps/udp_client.py under JIFFY_POLICY=central
# JIFFY_CENTRAL=mq and checks those lines exactly. It also checks that --udp-mode inline (no
# uthread per request) tags nothing, that JIFFY_STATS reports central.queues = mq, that bad --slo
# values exit 2 naming the flag, and that a short bimodal jiffy-load run's two classes arrive
# tagged (jiffy-load: $JIFFY_LOAD, else built by scripts/build-load.sh, which needs cargo; it
# cannot be built: the test fails). ~3-5 s once jiffy-load is built.
#
# usage: test_slo_tags.sh JIFFY_SYNTH [JIFFY_KV]
set -euo pipefail

JP_TEST=test_slo_tags
# shellcheck source=tests/apps/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
SYNTH=${1:?usage: test_slo_tags.sh JIFFY_SYNTH [JIFFY_KV]}
KV=${2:-}


# start <name> <binary> <args...>: start under central MQ on one worker, wait for READY; sets
# $port and $pid. Every other JIFFY_* variable is removed (the runtime refuses unknown ones,
# such as JIFFY_LOAD, and a JIFFY_POLICY left in the caller's environment must not apply).
start() {
	local name=$1 i v unset=()
	shift
	: >"$tmp/out"
	: >"$tmp/err"
	for v in $(compgen -e); do
		[[ $v == JIFFY_* ]] && unset+=(-u "$v")
	done
	env "${unset[@]}" JIFFY_POLICY=central JIFFY_CENTRAL=mq JIFFY_WORKERS=1 JIFFY_STATS=1 \
		"$@" --port 0 >"$tmp/out" 2>"$tmp/err" &
	pid=$!
	for ((i = 0; i < 200; i++)); do
		grep -q "^READY $name " "$tmp/out" && break
		kill -0 "$pid" 2>/dev/null || fail "$name $* exited before READY"
		sleep 0.1
	done
	port=$(sed -n "s/^READY $name udp=\([0-9]*\).*/\1/p" "$tmp/out")
	[[ -n $port ]] || fail "$name $*: no READY line within 20 s"
}

# stop <name>: SIGINT, exit 0 within 10 s.
stop() { stop_server "$1" INT 10; }

# expect_types <prog> <kind> <line...>: the per-type lines are exactly these, in this order.
expect_types() {
	local prog=$1 kind=$2
	shift 2
	local got want
	got=$(grep "^$prog: $kind " "$tmp/err" || true)
	want=$(printf '%s\n' "$@")
	[[ $got == "$want" ]] || fail "per-$kind lines:"$'\n'"$got"$'\n'"expected:"$'\n'"$want"
}

send() { "$py" "$client" --port "$port" --quiet "$@" || fail "udp_client.py $*"; }

# --- bad values: exit 2, a message naming --slo
for bad in "" "x" "0=0" "256=10" "0=10000001" "0=10,0=20" "0=10," "get=10"; do
	rc=0
	"$SYNTH" --slo "$bad" --port 0 >"$tmp/out" 2>"$tmp/err" || rc=$?
	((rc == 2)) || fail "jiffy-synth --slo '$bad': exit status $rc, expected 2"
	grep -qF "jiffy-synth: --slo: " "$tmp/err" && grep -qF "got '$bad'" "$tmp/err" ||
		fail "jiffy-synth --slo '$bad': the message does not name the flag and the value"
done
rc=0
"$SYNTH" --slo >"$tmp/out" 2>"$tmp/err" || rc=$?
((rc == 2)) && grep -q -- "--slo: needs a value" "$tmp/err" || fail "jiffy-synth --slo without a value"

# --- jiffy-synth: classes 0, 1, 2; SLOs for 0 and 1; class 2 gets the policy's default
start jiffy-synth "$SYNTH" --slo 0=10,1=1000
send --op spin --arg 1000 --klass 0 --count 5
send --op spin --arg 10000 --klass 1 --count 7
send --op spin --arg 2000 --klass 2 --count 3
send --garbage # dropped datagrams (no class) and one PING of class 0
stop jiffy-synth
expect_types jiffy-synth class \
	"jiffy-synth: class 0: requests=6 tagged=6 slo_us=10" \
	"jiffy-synth: class 1: requests=7 tagged=7 slo_us=1000" \
	"jiffy-synth: class 2: requests=3 tagged=3 slo_us=default"
grep -qE "^jiffy-synth: requests=16 replies=16 dropped=[0-9]+ errors=0$" "$tmp/err" ||
	fail "jiffy-synth: its statistics line is missing or changed"
grep -qx "central.queues = mq" "$tmp/err" || fail "JIFFY_STATS does not report central.queues = mq"
echo "jiffy-synth, central MQ: $(grep -c '^jiffy-synth: class ' "$tmp/err") classes tagged"

# --- inline: the receiver serves; no request runs in a uthread of its own, none is tagged
start jiffy-synth "$SYNTH" --slo 0=10 --udp-mode inline
send --op spin --arg 1000 --klass 0 --count 4
send --op spin --arg 1000 --klass 3 --count 2
stop jiffy-synth
expect_types jiffy-synth class \
	"jiffy-synth: class 0: requests=4 tagged=0 slo_us=10" \
	"jiffy-synth: class 3: requests=2 tagged=0 slo_us=default"

# --- jiffy-load's bimodal classes (0 short, 1 long) arrive tagged
# jiffy-load: $JIFFY_LOAD, else built (or found up to date) by scripts/build-load.sh; a missing
# cargo or a failed build fails the test (this leg used to be skipped without a word in ctest).
if [[ -n ${JIFFY_LOAD:-} ]]; then
	load=$JIFFY_LOAD
else
	load=$("$root/scripts/build-load.sh") ||
		fail "jiffy-load: scripts/build-load.sh could not build it (needs cargo: https://rustup.rs)"
fi
[[ -x $load ]] || fail "jiffy-load not found at $load (set JIFFY_LOAD, or run scripts/build-load.sh)"
start jiffy-synth "$SYNTH" --slo 0=10,1=1000
"$load" --server "127.0.0.1:$port" --workload spin --dist bimodal:50:1us:10us --rate 200 \
	--duration 1 --warmup 0.2 --quiet >"$tmp/load" 2>&1 || {
	cat "$tmp/load" >&2
	fail "jiffy-load failed"
}
stop jiffy-synth
for k in 0:10 1:1000; do
	line=$(grep "^jiffy-synth: class ${k%%:*}: " "$tmp/err") ||
		fail "jiffy-load: no class ${k%%:*} line"
	[[ $line =~ requests=([0-9]+)\ tagged=([0-9]+)\ slo_us=([0-9a-z]+)$ ]] ||
		fail "jiffy-load: bad line '$line'"
	((BASH_REMATCH[1] > 0 && BASH_REMATCH[1] == BASH_REMATCH[2])) &&
		[[ ${BASH_REMATCH[3]} == "${k##*:}" ]] || fail "jiffy-load: '$line'"
done
[[ $(grep -c "^jiffy-synth: class " "$tmp/err") == 2 ]] || fail "jiffy-load: classes other than 0 and 1"
echo "jiffy-load bimodal: $(grep '^jiffy-synth: class ' "$tmp/err" | tr '\n' ' ')"

# --- jiffy-kv: ops by name and number; RESP untouched
if [[ -n $KV ]]; then
	for bad in "spin=10" "get=10,2=5" "get=0"; do
		rc=0
		"$KV" --slo "$bad" >"$tmp/out" 2>"$tmp/err" || rc=$?
		((rc == 2)) && grep -qF "jiffy-kv: --slo: " "$tmp/err" && grep -qF "got '$bad'" "$tmp/err" ||
			fail "jiffy-kv --slo '$bad': exit status $rc or no message naming the flag"
	done
	start jiffy-kv "$KV" --resp-port 0 --keys 1000 --slo get=20,5=5000
	send --op get --key-index 3 --count 5
	send --op scan --key-index 3 --arg 10 --count 2
	send --op put --key tagkey --value-size 10 --count 3
	send --op del --key tagkey --count 1
	stop jiffy-kv
	expect_types jiffy-kv op \
		"jiffy-kv: op get: requests=5 tagged=5 slo_us=20" \
		"jiffy-kv: op put: requests=3 tagged=3 slo_us=default" \
		"jiffy-kv: op del: requests=1 tagged=1 slo_us=default" \
		"jiffy-kv: op scan: requests=2 tagged=2 slo_us=5000"
	grep -q "^jiffy-kv: stopped by SIGINT; udp requests=11 replies=11 " "$tmp/err" ||
		fail "jiffy-kv: its statistics line is missing or changed"
	echo "jiffy-kv, central MQ: $(grep -c '^jiffy-kv: op ' "$tmp/err") ops tagged"
fi
echo "test_slo_tags: ok"
