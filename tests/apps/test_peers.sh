#!/usr/bin/env bash
# tests/apps/test_peers.sh - smoke test of the synthetic servers: jiffy-synth (under several
# preemption mechanisms) and its peers on pthreads, Go and Tokio, which must all answer alike.
#   usage: test_peers.sh [JIFFY_SYNTH_BINARY SYNTH_PTHREAD_BINARY]
# Builds the Go and Tokio peers (scripts/build-peers.sh), then for each server: starts it on a
# free port, waits for its READY line, checks PING, SPIN, the ops it does not serve, bad
# lengths, over-limit keys and malformed datagrams with tests/apps/udp_client.py, sends SIGTERM
# and checks it exits 0 after printing its statistics line. Prints the PING round trips.
# ~5 s once built (a first, cold Cargo build of tokio adds ~15-60 s). Exit 0 when all passed.
set -euo pipefail

JP_TEST=test_peers
# shellcheck source=tests/apps/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"


mapfile -t bins < <("$root/scripts/build-peers.sh") || fail "scripts/build-peers.sh failed"
((${#bins[@]} == 2)) || fail "scripts/build-peers.sh printed ${#bins[@]} paths, expected 2"
go_bin=${bins[0]}
tokio_bin=${bins[1]}

free_port() {
	"$py" -c 'import socket; s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# Bad flags: a clear message and a non-zero exit.
for bin in "$go_bin" "$tokio_bin"; do
	for bad in "--no-such-flag" "--threads 0" "--port notaport"; do
		# shellcheck disable=SC2086
		if "$bin" $bad >"$tmp/out" 2>"$tmp/err"; then
			fail "${bin##*/} $bad exited 0"
		fi
		[[ -s $tmp/err ]] || fail "${bin##*/} $bad printed no error"
	done
done

check_server() { # check_server <name> <binary> <args...>
	local name=$1 bin=$2
	shift 2
	local port
	port=$(free_port)
	: >"$tmp/out"
	: >"$tmp/err"
	env "${SERVER_ENV[@]}" "$bin" --port "$port" "$@" >"$tmp/out" 2>"$tmp/err" &
	pid=$!
	local i
	for ((i = 0; i < 100; i++)); do
		grep -q '^READY' "$tmp/out" && break
		kill -0 "$pid" 2>/dev/null || fail "$name $* exited before READY"
		sleep 0.1
	done
	grep -qx "READY $name udp=$port" "$tmp/out" ||
		fail "$name $*: no 'READY $name udp=$port' line within 10 s"

	local c=("$py" "$client" --port "$port")
	echo "--- ${SERVER_ENV[*]} $name $*"
	"${c[@]}" --op ping --count 200 || fail "$name: PING"
	"${c[@]}" --op spin --arg 1000 --count 10 --klass 1 --quiet || fail "$name: SPIN 1 us"
	"${c[@]}" --op spin --arg 200000 --count 5 --klass 2 --quiet || fail "$name: SPIN 200 us"
	"${c[@]}" --op spin --arg 0 --quiet || fail "$name: SPIN 0"
	"${c[@]}" --op spin --arg 20000000000 --expect-status bad_request --quiet ||
		fail "$name: SPIN over the 10 s cap"
	for op in get put del scan; do
		"${c[@]}" --op "$op" --arg 5 --value-size 10 --expect-status unsupported --quiet ||
			fail "$name: $op must be UNSUPPORTED"
	done
	"${c[@]}" --op ping --bad-lengths --expect-status bad_request --quiet || fail "$name: bad lengths"
	"${c[@]}" --op get --key-size 300 --expect-status too_large --quiet || fail "$name: 300-byte key"
	"${c[@]}" --garbage --quiet || fail "$name: malformed datagrams"

	stop_server "$name $*" TERM 5
	local stats
	stats=$(grep -E "^$name: requests=[0-9]+ replies=[0-9]+ dropped=[0-9]+ errors=[0-9]+$" "$tmp/err") ||
		fail "$name $*: no statistics line on stderr"
	# 200 + 10 + 5 + 1 + 1 + 4 + 1 + 1 + 1 (the PING after the garbage) requests; 8 garbage.
	[[ $stats == "$name: requests=224 replies=224 dropped=8 errors=0" ]] ||
		fail "$name $*: unexpected statistics: $stats"
	echo "$stats"
}

SERVER_ENV=()
check_server go-synth "$go_bin" --threads 1
check_server go-synth "$go_bin" --threads 2 --readers 2
check_server tokio-synth "$tokio_bin" --threads 1
check_server tokio-synth "$tokio_bin" --threads 2
if (($# >= 2)); then
	check_server synth-pthread "$2" --threads 1
	check_server synth-pthread "$2" --threads 4
	for mech in none timer safepoint hybrid; do
		SERVER_ENV=(JIFFY_WORKERS=2 JIFFY_PREEMPT=$mech JIFFY_QUANTUM_US=100)
		check_server jiffy-synth "$1"
	done
	SERVER_ENV=(JIFFY_WORKERS=1 JIFFY_POLICY=twoq)
	check_server jiffy-synth "$1" --udp-mode inline
	rc=0
	JIFFY_POLICY=nosuchpolicy "$1" --port 0 >"$tmp/out" 2>"$tmp/err" || rc=$?
	((rc == 2)) || fail "jiffy-synth with JIFFY_POLICY=nosuchpolicy: exit $rc, expected 2"
	grep -q nosuchpolicy "$tmp/err" || fail "jiffy-synth: the error does not name the bad policy"
	"$1" --receivers 0 >"$tmp/out" 2>"$tmp/err" && fail "jiffy-synth accepted --receivers 0"
	grep -q -- --receivers "$tmp/err" || fail "jiffy-synth: the error does not name --receivers"
fi
echo "test_peers: PASS"
