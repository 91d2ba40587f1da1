#!/usr/bin/env bash
# tests/apps/test_kv.sh - end-to-end checks of jiffy-kv and kv-pthread (CTest: apps.kv).
#
# Owns: starting the servers on free ports and checking them with the real clients: redis-cli
# (PING, SET/GET, DEL, DBSIZE, --scan, INFO, errors), redis-benchmark (get/set, with and without
# pipelining), garbage on the TCP port, the UDP protocol (tests/apps/kv_udp_check.py), SIGTERM
# (exit 0 and the statistics line), persistence of a --db directory across a restart, flag errors
# (exit 2), loopback by default (/proc/net), --bind refusals and ::1, AUTH with redis-cli -a and
# redis-benchmark -a (password file and $JIFFY_KV_PASSWORD), and a UDP smoke test of kv-pthread.
# Fails loudly at the first problem; < 60 s.
#
# usage: test_kv.sh [path/to/jiffy-kv [path/to/kv-pthread]]
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
KV=${1:-$here/../../build/apps/kv/jiffy-kv}
KVP=${2:-$here/../../build/apps/kv/kv-pthread}
UDPCHECK=$here/kv_udp_check.py
KEYS=10000
work=$(mktemp -d /tmp/test_kv.XXXXXX)
server_pid=

fail() {
	echo "test_kv: FAIL: $*" >&2
	if [[ -f $work/server.err ]]; then
		echo "--- server stderr:" >&2
		tail -20 "$work/server.err" >&2
	fi
	exit 1
}

cleanup() {
	if [[ -n $server_pid ]] && kill -0 "$server_pid" 2>/dev/null; then
		kill -KILL "$server_pid" 2>/dev/null || true
	fi
	rm -rf "$work"
}
trap cleanup EXIT

for tool in redis-cli redis-benchmark python3; do
	command -v $tool >/dev/null || fail "$tool is not installed (scripts/deps.sh build installs" \
		"redis-tools: redis-cli and redis-benchmark; python3: apt-get install python3)"
done
[[ -x $KV ]] || fail "no jiffy-kv at $KV"

# Two free ports (TCP and UDP both free on each).
read -r UDP_PORT RESP_PORT < <(python3 - <<'PY'
import socket
ports = []
while len(ports) < 2:
    t = socket.socket(); t.bind(("127.0.0.1", 0)); p = t.getsockname()[1]
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        u.bind(("127.0.0.1", p)); ports.append(p)
    except OSError:
        pass
    t.close(); u.close()
print(*ports)
PY
)

# start <name> <binary> <args...>: start a server, wait for its READY line (20 s).
start() {
	local name=$1
	shift
	: >"$work/server.out"
	: >"$work/server.err"
	"$@" >"$work/server.out" 2>"$work/server.err" &
	server_pid=$!
	for _ in $(seq 200); do
		if grep -q "^READY $name " "$work/server.out"; then
			return 0
		fi
		kill -0 "$server_pid" 2>/dev/null || fail "$name exited before READY"
		sleep 0.1
	done
	fail "$name printed no READY line within 20 s"
}

# stop <name>: SIGTERM, expect exit 0 within 10 s and the statistics line.
stop() {
	local name=$1 rc=0
	kill -TERM "$server_pid"
	for _ in $(seq 100); do
		kill -0 "$server_pid" 2>/dev/null || break
		sleep 0.1
	done
	kill -0 "$server_pid" 2>/dev/null && fail "$name did not stop within 10 s of SIGTERM"
	wait "$server_pid" || rc=$?
	server_pid=
	[[ $rc -eq 0 ]] || fail "$name exited with $rc after SIGTERM"
	grep -q "^$name: stopped.*udp requests=[0-9]* replies=[0-9]* dropped=[0-9]* errors=[0-9]*" \
		"$work/server.err" || fail "$name printed no statistics line"
	echo "  $(grep "^$name: stopped" "$work/server.err")"
}

rcli() { timeout 10 redis-cli -p "$RESP_PORT" "$@"; }

expect() { # expect <what> <want> <got>
	[[ "$3" == "$2" ]] || fail "$1: got '$3', want '$2'"
}

# ---- flags ----
rc=0
"$KV" --keys abc >/dev/null 2>"$work/flag.err" || rc=$?
expect "exit code of --keys abc" 2 "$rc"
grep -q -- "--keys" "$work/flag.err" || fail "the --keys error does not name the flag"
rc=0
"$KV" --bogus >/dev/null 2>&1 || rc=$?
expect "exit code of an unknown flag" 2 "$rc"
"$KV" --help | grep -q -- "--resp-port" || fail "--help does not list --resp-port"

# ---- jiffy-kv, scratch database ----
echo "jiffy-kv on udp=$UDP_PORT resp=$RESP_PORT, $KEYS keys"
start jiffy-kv "$KV" --port "$UDP_PORT" --resp-port "$RESP_PORT" --keys "$KEYS"
grep -q "^READY jiffy-kv udp=$UDP_PORT resp=$RESP_PORT$" "$work/server.out" || fail "READY line: $(cat "$work/server.out")"

expect PING PONG "$(rcli PING)"
expect "PING msg" hello "$(rcli PING hello)"
expect "GET preloaded" "$(printf 'key000000000042')" "$(rcli GET key000000000042 | cut -c1-15)"
expect SET OK "$(rcli SET testkey 'a value')"
expect GET "a value" "$(rcli GET testkey)"
expect DBSIZE $((KEYS + 1)) "$(rcli DBSIZE)"
expect EXISTS 1 "$(rcli EXISTS testkey)"
expect DEL 1 "$(rcli DEL testkey)"
expect "GET after DEL" "" "$(rcli GET testkey)"
expect DBSIZE "$KEYS" "$(rcli DBSIZE)"
expect "scan | wc -l" "$KEYS" "$(rcli --scan | wc -l)"
expect "scan --pattern" 10 "$(rcli --scan --pattern 'key00000000001?' | wc -l)"
rcli INFO | grep -q "^db0:keys=$KEYS," || fail "INFO has no keyspace line"
rcli INFO | grep -q "^server_name:jiffy-kv" || fail "INFO has no server line"
rcli INFO | grep -q "^total_commands_processed:[1-9]" || fail "INFO has no stats"
rcli FOOBAR 2>&1 | grep -q "ERR unknown command 'FOOBAR'" || fail "unknown command: $(rcli FOOBAR 2>&1)"
rcli GET 2>&1 | grep -q "ERR wrong number of arguments for 'get' command" || fail "arity error"
# interactive redis-cli (it asks COMMAND DOCS first) on stdin
printf 'PING\nSET k2 v2\nGET k2\n' | rcli | tr '\n' ' ' | grep -q "PONG OK v2" || fail "redis-cli with commands on stdin"
echo "  redis-cli checks ok"

for pipeline in 1 16; do
	out=$(timeout 40 redis-benchmark -p "$RESP_PORT" -t get,set -n 20000 -P "$pipeline" -q 2>&1) ||
		fail "redis-benchmark -P $pipeline: $out"
	for t in SET GET; do
		rate=$(printf '%s\n' "$out" | tr '\r' '\n' | grep "^$t: " | tail -1 | sed -E 's/^[A-Z]+: ([0-9.]+) requests per second.*/\1/')
		[[ -n $rate ]] && awk "BEGIN{exit !($rate > 0)}" || fail "redis-benchmark -P $pipeline: no $t rate in: $out"
		echo "  redis-benchmark -P $pipeline $t: $rate requests/s"
	done
done

# garbage on the TCP port: a protocol error reply, the connection closed, the server alive
reply=$(python3 - "$RESP_PORT" <<'PY'
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=5)
s.sendall(b"*99999999\r\n")
data = b""
while True:
    chunk = s.recv(4096)
    if not chunk:
        break
    data += chunk
print(data.decode(errors="replace").strip())
PY
)
[[ $reply == "-ERR Protocol error:"* ]] || fail "garbage got '$reply'"
python3 - "$RESP_PORT" <<'PY' || fail "random garbage killed the connection handling"
import random, socket, sys
rng = random.Random(1)
for i in range(50):
    s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=5)
    s.sendall(bytes(rng.getrandbits(8) for _ in range(rng.randint(1, 3000))))
    s.shutdown(socket.SHUT_WR)
    s.settimeout(5)
    while s.recv(65536):
        pass
    s.close()
PY
expect "PING after garbage" PONG "$(rcli PING)"
echo "  garbage on the TCP port: '$reply', still serving"

# UDP front end
python3 "$UDPCHECK" "$UDP_PORT" "$KEYS" 64 | sed 's/^/  /' || fail "UDP checks"
expect "PING after UDP checks" PONG "$(rcli PING)"
scratch=$(sed -n 's/^kvstore: \(.*\): [0-9]* keys.*/\1/p' "$work/server.err")
[[ -n $scratch && -d $scratch ]] || fail "no scratch database directory reported ($scratch)"
stop jiffy-kv
[[ ! -e $scratch ]] || fail "the scratch database $scratch was not removed"

# ---- jiffy-kv, a user database: nothing stored is lost across a restart ----
DB=$work/userdb
start jiffy-kv "$KV" --port "$UDP_PORT" --resp-port "$RESP_PORT" --keys 1000 --db "$DB"
expect "SET in a user db" OK "$(rcli SET persist-key 'kept across restarts')"
expect "DEL in a user db" 1 "$(rcli DEL key000000000005)"
stop jiffy-kv
[[ -d $DB ]] || fail "the user database directory was removed"
start jiffy-kv "$KV" --port "$UDP_PORT" --resp-port "$RESP_PORT" --keys 1000 --db "$DB"
expect "GET after restart" "kept across restarts" "$(rcli GET persist-key)"
# preloading skips existing keys only: the deleted key comes back, the count is exact
expect "DBSIZE after restart" 1001 "$(rcli DBSIZE)"
expect "scan | wc -l after restart" 1001 "$(rcli --scan | wc -l)"
stop jiffy-kv
[[ -d $DB ]] || fail "the user database directory was removed"
echo "  --db: data persisted across a restart"

# ---- the RESP port disabled ----
start jiffy-kv "$KV" --port "$UDP_PORT" --resp-port 0 --keys 100
grep -q "^READY jiffy-kv udp=$UDP_PORT resp=0$" "$work/server.out" || fail "READY with --resp-port 0"
python3 "$UDPCHECK" "$UDP_PORT" 100 64 --quick >/dev/null || fail "UDP with --resp-port 0"
stop jiffy-kv

# ---- safe by default (docs/security.md) ----
# /proc/net/<file>: the local address (hex, kernel byte order) of the listening (TCP state 0A)
# or bound (UDP state 07) socket on <port>.
local_addr() { # local_addr <tcp|udp|tcp6|udp6> <port>
	awk -v p="$(printf ':%04X' "$2")" \
		'NR > 1 && substr($2, length($2) - 4) == p && ($4 == "0A" || $4 == "07") { print $2 }' \
		"/proc/net/$1"
}
start jiffy-kv "$KV" --port "$UDP_PORT" --resp-port "$RESP_PORT" --keys 100
expect "RESP socket, default" "0100007F:$(printf %04X "$RESP_PORT")" "$(local_addr tcp "$RESP_PORT")"
expect "UDP socket, default" "0100007F:$(printf %04X "$UDP_PORT")" "$(local_addr udp "$UDP_PORT")"
expect "no IPv6 sockets, default" "" "$(local_addr tcp6 "$RESP_PORT")$(local_addr udp6 "$UDP_PORT")"
stop jiffy-kv
echo "  default: both front ends on 127.0.0.1 only"
printf 'pw for the test\n' >"$work/pw"
chmod 600 "$work/pw"
for args in "--bind 0.0.0.0" "--bind :: --requirepass-file $work/pw" \
	"--bind 0.0.0.0 --no-udp"; do
	rc=0
	# shellcheck disable=SC2086
	"$KV" --port "$UDP_PORT" --resp-port "$RESP_PORT" $args >/dev/null 2>"$work/flag.err" || rc=$?
	expect "exit code of $args (protected mode)" 2 "$rc"
	grep -q "refusing to listen on .*--protected-mode no" "$work/flag.err" ||
		fail "$args: no refusal naming --protected-mode: $(cat "$work/flag.err")"
done
grep -q "the Redis protocol without a password" "$work/flag.err" || fail "the refusal does not name the Redis protocol"
for bad in "--bind localhost" "--bind 300.1.2.3" "--protected-mode maybe" "--maxclients 0" \
	"--timeout -1" "--maxmemory-clients 10" "--maxmemory-clients 1X" "--requirepass-file /nonexistent" \
	"--max-inflight 0"; do
	rc=0
	# shellcheck disable=SC2086
	"$KV" $bad >/dev/null 2>"$work/flag.err" || rc=$?
	expect "exit code of $bad" 2 "$rc"
	grep -q -- "${bad%% *}" "$work/flag.err" || fail "the error for '$bad' does not name the flag"
done
: >"$work/empty"
rc=0
"$KV" --requirepass-file "$work/empty" >/dev/null 2>"$work/flag.err" || rc=$?
expect "exit code of an empty password file" 2 "$rc"
# every interface, authenticated, UDP off: allowed, no warning; ::1 works too
start jiffy-kv "$KV" --no-udp --resp-port "$RESP_PORT" --keys 100 --bind 0.0.0.0 --requirepass-file "$work/pw"
expect "RESP socket, --bind 0.0.0.0" "00000000:$(printf %04X "$RESP_PORT")" "$(local_addr tcp "$RESP_PORT")"
grep -q WARNING "$work/server.err" && fail "a warning although every front end authenticates"
expect "AUTH over 0.0.0.0" 100 "$(rcli -a 'pw for the test' --no-auth-warning DBSIZE)"
stop jiffy-kv
start jiffy-kv "$KV" --port "$UDP_PORT" --resp-port "$RESP_PORT" --keys 100 --bind ::1
expect "PING over ::1" PONG "$(timeout 10 redis-cli -h ::1 -p "$RESP_PORT" PING)"
[[ -n $(local_addr udp6 "$UDP_PORT") ]] || fail "--bind ::1: no UDP socket in /proc/net/udp6"
stop jiffy-kv
start jiffy-kv "$KV" --port "$UDP_PORT" --resp-port "$RESP_PORT" --keys 100 --bind 0.0.0.0 --protected-mode no
grep -q "WARNING: listening on 0.0.0.0 with --protected-mode no" "$work/server.err" ||
	fail "--protected-mode no: no warning naming the risk"
stop jiffy-kv
echo "  --bind: refusals without authentication, 0.0.0.0 with a password, ::1, the warning"

# AUTH with the real tools; the password from a file and from the environment
for how in file env; do
	if [[ $how == file ]]; then
		start jiffy-kv "$KV" --port "$UDP_PORT" --resp-port "$RESP_PORT" --keys 1000 --requirepass-file "$work/pw"
	else
		JIFFY_KV_PASSWORD='pw for the test' start jiffy-kv "$KV" --port "$UDP_PORT" --resp-port "$RESP_PORT" --keys 1000
		grep -q 'pw for the test' "/proc/$server_pid/cmdline" && fail "the password shows in the command line"
	fi
	expect "GET without AUTH ($how)" "NOAUTH Authentication required." "$(rcli GET key000000000001)"
	expect "SET without AUTH ($how)" "NOAUTH Authentication required." "$(rcli SET stolen x)"
	expect "PING without AUTH ($how)" PONG "$(rcli PING)"
	out=$(rcli -a 'wrong' --no-auth-warning GET key000000000001 2>&1 || true)
	[[ $out == *WRONGPASS* ]] || fail "redis-cli -a wrong ($how): '$out'"
	expect "redis-cli -a ($how)" key000000000001 "$(rcli -a 'pw for the test' --no-auth-warning GET key000000000001 | cut -c1-15)"
	expect "REDISCLI_AUTH ($how)" 1000 "$(REDISCLI_AUTH='pw for the test' rcli DBSIZE)"
	expect "nothing stolen ($how)" 0 "$(rcli -a 'pw for the test' --no-auth-warning EXISTS stolen)"
	timeout 60 redis-benchmark -p "$RESP_PORT" -a 'pw for the test' -t get,set -n 5000 -c 4 -q \
		>"$work/bench.out" 2>&1 || fail "redis-benchmark -a ($how): $(tail -3 "$work/bench.out")"
	grep -q "GET: .* requests per second" "$work/bench.out" || fail "redis-benchmark -a: $(cat "$work/bench.out")"
	out=$(timeout 30 redis-benchmark -p "$RESP_PORT" -t get -n 100 -q 2>&1 || true)
	[[ $out == *NOAUTH* ]] || fail "redis-benchmark without -a ($how) was not refused: $out"
	stop jiffy-kv
done
grep -q "auth_failures=1 noauth=" "$work/server.err" || fail "the statistics line does not count the failed AUTH"
echo "  AUTH: redis-cli and redis-benchmark with -a (file and \$JIFFY_KV_PASSWORD), refused without"

# ---- kv-pthread ----
if [[ -x $KVP ]]; then
	start kv-pthread "$KVP" --port "$UDP_PORT" --keys 1000 --threads 2
	python3 "$UDPCHECK" "$UDP_PORT" 1000 64 | sed 's/^/  kv-pthread /' || fail "kv-pthread UDP checks"
	stop kv-pthread
fi
echo "test_kv: ok"
