#!/usr/bin/env bash
# tests/apps/test_peers.sh - smoke test of the synthetic servers: jiffy-synth (under several
# preemption mechanisms) and its peers on pthreads, Go and Tokio, which must all answer alike.
#   usage: test_peers.sh [JIFFY_SYNTH_BINARY SYNTH_PTHREAD_BINARY]
# Builds the Go and Tokio peers (scripts/build-peers.sh), then for each server: starts it on a
# free port, waits for its READY line, checks that it listens on 127.0.0.1 only (the default:
# /proc/net/udp, nothing in /proc/net/udp6), checks PING, SPIN (up to the default 1 ms cap, and
# TOO_LARGE with the cap as result beyond it), the ops it does not serve, bad lengths, over-limit
# keys and malformed datagrams with tests/apps/udp_client.py, sends SIGTERM and checks it exits
# 0 after printing its statistics line. Prints the PING round trips.
# Then, for each of the four servers, where it listens and whether it may (docs/security.md):
# --bind 0.0.0.0 and --bind :: are refused (exit 2, the message says how to override) while
# --protected-mode is yes; with --protected-mode no it starts, warns and serves; --bind ::1 and
# [::1] serve over IPv6 (the test fails, loudly, if ::1 is missing); --max-spin-us 5000 lets a
# 2 ms SPIN through; bad values of the three flags exit 2 naming the flag and the value. Last,
# --max-inflight of go-synth, tokio-synth and jiffy-synth: bad values exit 2 naming the flag and
# the value, and a burst of 300 1 ms SPINs against 4 running handlers on one thread is shed (the
# shed line, counted in dropped), after which the server still answers. First of all, the Go and
# Tokio peers' command lines (--help, --version, both spellings, usage errors: test_cli.py).
# ~20 s once built (a first, cold Cargo build of tokio adds ~15-60 s). Exit 0 when all passed.
set -euo pipefail

JP_TEST=test_peers
# shellcheck source=tests/apps/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"


mapfile -t bins < <("$root/scripts/build-peers.sh") || fail "scripts/build-peers.sh failed"
((${#bins[@]} == 2)) || fail "scripts/build-peers.sh printed ${#bins[@]} paths, expected 2"
go_bin=${bins[0]}
tokio_bin=${bins[1]}

# The peers' command lines follow the C programs' rules where their languages allow
# (tests/apps/test_cli.py; the C programs have their own cli.* tests).
"$py" "$root/tests/apps/test_cli.py" go-synth "$go_bin" || fail "go-synth's command line (above)"
"$py" "$root/tests/apps/test_cli.py" tokio-synth "$tokio_bin" ||
	fail "tokio-synth's command line (above)"

free_port() {
	"$py" -c 'import socket; s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# The kernel's view of a UDP socket on a port: bound_to <udp|udp6> <address hex> <port>, as
# /proc/net/udp{,6} write them (127.0.0.1 is 0100007F, ::1 00000000000000000000000001000000).
bound_to() {
	local hex
	hex=$(printf '%04X' "$3")
	awk -v a="$2:$hex" '$2 == a { found = 1 } END { exit !found }' "/proc/net/$1"
}
# listens_on_port <udp|udp6> <port>: any socket of that family on the port.
listens_on_port() {
	local hex
	hex=$(printf '%04X' "$2")
	awk -v p=":$hex" 'substr($2, length($2) - 4) == p { found = 1 } END { exit !found }' "/proc/net/$1"
}
LO4=0100007F
LO6=00000000000000000000000001000000
ANY4=00000000

# start_server <name> <binary> <args...>: starts it (with SERVER_ENV) on a free port ($port),
# its stdout and stderr in $tmp/out and $tmp/err, and waits for its READY line; $pid is its pid.
start_server() {
	local name=$1 bin=$2 i
	shift 2
	port=$(free_port)
	: >"$tmp/out"
	: >"$tmp/err"
	env "${SERVER_ENV[@]}" "$bin" --port "$port" "$@" >"$tmp/out" 2>"$tmp/err" &
	pid=$!
	for ((i = 0; i < 100; i++)); do
		grep -q '^READY' "$tmp/out" && break
		kill -0 "$pid" 2>/dev/null || fail "$name $* exited before READY"
		sleep 0.1
	done
	grep -qx "READY $name udp=$port" "$tmp/out" ||
		fail "$name $*: no 'READY $name udp=$port' line within 10 s"
}

# expect_stats <name> <what> <requests>: the statistics line after stop_server.
expect_stats() {
	local stats
	stats=$(grep -E "^$1: requests=[0-9]+ replies=[0-9]+ dropped=[0-9]+ errors=[0-9]+$" "$tmp/err") ||
		fail "$1 $2: no statistics line on stderr"
	[[ $stats == "$1: requests=$3 replies=$3 dropped=${4:-0} errors=0" ]] ||
		fail "$1 $2: unexpected statistics: $stats"
	echo "$stats"
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
	local name=$1 bin=$2 port
	shift 2
	start_server "$name" "$bin" "$@"
	# Safe by default: 127.0.0.1 only.
	bound_to udp "$LO4" "$port" || fail "$name $*: no socket on 127.0.0.1:$port in /proc/net/udp"
	listens_on_port udp6 "$port" && fail "$name $*: an IPv6 socket on port $port (/proc/net/udp6)"

	local c=("$py" "$client" --port "$port")
	echo "--- ${SERVER_ENV[*]} $name $*"
	"${c[@]}" --op ping --count 200 || fail "$name: PING"
	"${c[@]}" --op spin --arg 1000 --count 10 --klass 1 --quiet || fail "$name: SPIN 1 us"
	"${c[@]}" --op spin --arg 200000 --count 5 --klass 2 --quiet || fail "$name: SPIN 200 us"
	"${c[@]}" --op spin --arg 0 --quiet || fail "$name: SPIN 0"
	"${c[@]}" --op spin --arg 1000000 --quiet || fail "$name: SPIN of the 1 ms default cap"
	"${c[@]}" --op spin --arg 2000000 --expect-status too_large --expect-result 1000000 --quiet ||
		fail "$name: SPIN of 2 ms, over the default cap: TOO_LARGE with result = the cap in ns"
	for op in get put del scan; do
		"${c[@]}" --op "$op" --arg 5 --value-size 10 --expect-status unsupported --quiet ||
			fail "$name: $op must be UNSUPPORTED"
	done
	"${c[@]}" --op ping --bad-lengths --expect-status bad_request --quiet || fail "$name: bad lengths"
	"${c[@]}" --op get --key-size 300 --expect-status too_large --quiet || fail "$name: 300-byte key"
	"${c[@]}" --garbage --quiet || fail "$name: malformed datagrams"

	stop_server "$name $*" TERM 5
	# 200 PING + 10 + 5 + 1 + 1 + 1 SPIN (the TOO_LARGE one too: a well-formed request, answered)
	# + 4 KV ops + 1 bad lengths + 1 long key + 1 PING after the garbage = 225 requests, all
	# answered; the 8 garbage datagrams are dropped. errors counts failed sends: none.
	expect_stats "$name" "$*" 225 8
}

# check_listen <name> <binary>: --bind, --protected-mode and --max-spin-us (docs/security.md).
check_listen() {
	local name=$1 bin=$2 bad rc c shown port
	echo "--- ${SERVER_ENV[*]} $name: --bind, --protected-mode, --max-spin-us"
	# Refused on a non-loopback address while protected mode is on: exit 2 before listening.
	for bad in 0.0.0.0 :: "[::]" "::ffff:0.0.0.0"; do
		rc=0
		env "${SERVER_ENV[@]}" "$bin" --port 0 --bind "$bad" >"$tmp/out" 2>"$tmp/err" || rc=$?
		((rc == 2)) || fail "$name --bind $bad: exit status $rc, expected 2 (refused)"
		shown=${bad#[}
		grep -qF "refusing to listen on ${shown%]} " "$tmp/err" ||
			fail "$name --bind $bad: the message does not say what it refuses"
		grep -qF -- "--protected-mode no" "$tmp/err" ||
			fail "$name --bind $bad: the message does not say how to override (--protected-mode no)"
		grep -q READY "$tmp/out" && fail "$name --bind $bad: READY although refused"
	done
	# Bad values: exit 2, a message naming the flag and the value.
	for bad in "--bind notanaddress" "--bind localhost" "--bind 127.0.0.1:80" "--protected-mode maybe" \
		"--protected-mode" "--max-spin-us 0" "--max-spin-us 10000001" "--max-spin-us 1ms"; do
		rc=0
		# shellcheck disable=SC2086
		env "${SERVER_ENV[@]}" "$bin" --port 0 $bad >"$tmp/out" 2>"$tmp/err" || rc=$?
		((rc == 2)) || fail "$name $bad: exit status $rc, expected 2"
		local flag=${bad%% *} value=${bad#* }
		grep -qF -- "${flag#--}" "$tmp/err" || fail "$name $bad: the message does not name $flag"
		[[ $value == "$bad" ]] || grep -qE "['\"]$value['\"]" "$tmp/err" ||
			fail "$name $bad: the message does not quote the value '$value'"
	done

	# --protected-mode no: starts on 0.0.0.0 with a WARNING, and serves (here over 127.0.0.1).
	start_server "$name" "$bin" --bind 0.0.0.0 --protected-mode no
	grep -q "^$name: WARNING: listening on 0.0.0.0 with --protected-mode no" "$tmp/err" ||
		fail "$name --bind 0.0.0.0 --protected-mode no: no WARNING line on stderr"
	bound_to udp "$ANY4" "$port" || fail "$name --bind 0.0.0.0: no socket on 0.0.0.0:$port"
	"$py" "$client" --host 127.0.0.1 --port "$port" --op ping --count 5 --quiet ||
		fail "$name --bind 0.0.0.0 --protected-mode no: PING over 127.0.0.1"
	stop_server "$name --bind 0.0.0.0 --protected-mode no" TERM 5
	expect_stats "$name" "--bind 0.0.0.0 --protected-mode no" 5

	# --bind ::1 (loopback: no --protected-mode needed) and a larger SPIN cap.
	start_server "$name" "$bin" --bind ::1 --max-spin-us 5000
	grep -q WARNING "$tmp/err" && fail "$name --bind ::1: a WARNING on a loopback address"
	bound_to udp6 "$LO6" "$port" || fail "$name --bind ::1: no socket on [::1]:$port in /proc/net/udp6"
	listens_on_port udp "$port" && fail "$name --bind ::1: an IPv4 socket on port $port"
	c=("$py" "$client" --host ::1 --port "$port")
	"${c[@]}" --op ping --count 20 || fail "$name --bind ::1: PING over IPv6"
	"${c[@]}" --op spin --arg 2000000 --quiet || fail "$name --max-spin-us 5000: a SPIN of 2 ms"
	"${c[@]}" --op spin --arg 5000001 --expect-status too_large --expect-result 5000000 --quiet ||
		fail "$name --max-spin-us 5000: a SPIN over 5 ms must get TOO_LARGE, result 5000000"
	stop_server "$name --bind ::1" TERM 5
	expect_stats "$name" "--bind ::1" 22

	# The bracket form.
	start_server "$name" "$bin" --bind "[::1]"
	bound_to udp6 "$LO6" "$port" || fail "$name --bind [::1]: no socket on [::1]:$port"
	"$py" "$client" --host "[::1]" --port "$port" --op ping --quiet || fail "$name --bind [::1]: PING"
	stop_server "$name --bind [::1]" TERM 5
}

# check_max_inflight <name> <binary> <args...>: --max-inflight (docs/security.md), with SERVER_ENV
# and the args (one thread). Bad values exit 2 naming the flag and the value. With 4, a burst of
# 300 1-ms SPINs sheds datagrams (counted in dropped, and a shed line just before the statistics
# line) instead of starting 300 handlers, and the server still answers PING afterwards.
check_max_inflight() {
	local name=$1 bin=$2 bad rc shed stats
	shift 2
	echo "--- ${SERVER_ENV[*]} $name${*:+ $*}: --max-inflight"
	for bad in "--max-inflight 0" "--max-inflight 1000001" "--max-inflight 4k"; do
		rc=0
		# shellcheck disable=SC2086
		env "${SERVER_ENV[@]}" "$bin" --port 0 "$@" $bad >"$tmp/out" 2>"$tmp/err" || rc=$?
		((rc == 2)) || fail "$name $bad: exit status $rc, expected 2"
		grep -qF -- max-inflight "$tmp/err" || fail "$name $bad: the message does not name --max-inflight"
		grep -qE "['\"]${bad#* }['\"]" "$tmp/err" ||
			fail "$name $bad: the message does not quote the value '${bad#* }'"
		grep -q READY "$tmp/out" && fail "$name $bad: READY although refused"
	done

	start_server "$name" "$bin" "$@" --max-inflight 4
	"$py" - "$port" <<'PY' || fail "$name --max-inflight 4: the burst"
import socket, struct, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
req = struct.pack("<HBBBBHIIQQ", 0x4A46, 1, 1, 0, 0, 0, 0, 0, 7, 1000000)  # SPIN 1 ms
for _ in range(300):
    s.sendto(req, ("127.0.0.1", int(sys.argv[1])))
PY
	sleep 0.5
	"$py" "$client" --port "$port" --op ping --count 5 --quiet ||
		fail "$name --max-inflight 4: PING after the burst"
	stop_server "$name --max-inflight 4" TERM 5
	shed=$(grep -E "^$name: shed [0-9]+ datagrams: --max-inflight 4 handlers were running \(counted in dropped\)$" "$tmp/err") ||
		fail "$name --max-inflight 4: a burst of 300 shed nothing (no shed line)"
	[[ $shed =~ shed\ ([1-9][0-9]*) ]] || fail "$name --max-inflight 4: shed nothing: $shed"
	local k=${BASH_REMATCH[1]}
	# the statistics line right after it: every request answered, the shed ones in dropped
	stats=$(grep -A1 -E "^$name: shed " "$tmp/err" | tail -n 1)
	[[ $stats =~ ^$name:\ requests=([0-9]+)\ replies=([0-9]+)\ dropped=([0-9]+)\ errors=0$ ]] ||
		fail "$name --max-inflight 4: the shed line is not followed by the statistics line: $stats"
	((BASH_REMATCH[1] == BASH_REMATCH[2] && BASH_REMATCH[1] >= 5 && BASH_REMATCH[3] >= k)) ||
		fail "$name --max-inflight 4: $k shed, but $stats"
	echo "$shed"
	echo "$stats"
}

# The IPv6 checks need ::1; a machine without it fails here, loudly, rather than passing them.
grep -q '^00000000000000000000000000000001 ' /proc/net/if_inet6 2>/dev/null ||
	fail "the IPv6 loopback address ::1 is not configured (/proc/net/if_inet6): the --bind ::1 checks cannot run"

SERVER_ENV=()
check_listen go-synth "$go_bin"
check_listen tokio-synth "$tokio_bin"
check_server go-synth "$go_bin" --threads 1
check_server go-synth "$go_bin" --threads 2 --readers 2
check_server tokio-synth "$tokio_bin" --threads 1
check_server tokio-synth "$tokio_bin" --threads 2
check_max_inflight go-synth "$go_bin" --threads 1
check_max_inflight tokio-synth "$tokio_bin" --threads 1
if (($# >= 2)); then
	check_listen synth-pthread "$2"
	check_server synth-pthread "$2" --threads 1
	check_server synth-pthread "$2" --threads 4
	for mech in none timer safepoint hybrid; do
		SERVER_ENV=(JIFFY_WORKERS=2 JIFFY_PREEMPT=$mech JIFFY_QUANTUM_US=100)
		check_server jiffy-synth "$1"
	done
	SERVER_ENV=(JIFFY_WORKERS=1 JIFFY_POLICY=twoq)
	check_server jiffy-synth "$1" --udp-mode inline
	SERVER_ENV=(JIFFY_WORKERS=2)
	check_listen jiffy-synth "$1"
	SERVER_ENV=()
	rc=0
	JIFFY_POLICY=nosuchpolicy "$1" --port 0 >"$tmp/out" 2>"$tmp/err" || rc=$?
	((rc == 2)) || fail "jiffy-synth with JIFFY_POLICY=nosuchpolicy: exit $rc, expected 2"
	grep -q nosuchpolicy "$tmp/err" || fail "jiffy-synth: the error does not name the bad policy"
	"$1" --receivers 0 >"$tmp/out" 2>"$tmp/err" && fail "jiffy-synth accepted --receivers 0"
	grep -q -- --receivers "$tmp/err" || fail "jiffy-synth: the error does not name --receivers"
	# one worker, no preemption: 4 handlers of 1 ms hold it while the burst arrives
	SERVER_ENV=(JIFFY_WORKERS=1 JIFFY_PREEMPT=none)
	check_max_inflight jiffy-synth "$1"
fi
echo "test_peers: PASS"
