# tests/apps/lib.sh - what the server scripts of tests/apps share; sourced, never run.
#
# Owns: the repository root, the UDP client, a temporary directory removed at exit (and the
# server whose pid is in $pid killed), fail() naming the test and showing the server's stdout
# and stderr ($tmp/out, $tmp/err), stop_server() (a signal, then exit 0 within a bound), and $py, the Python interpreter itself (not a
# version-manager shim: a pyenv shim costs ~0.3 s per call).
# usage: JP_TEST=name; source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
client=$root/tests/apps/udp_client.py
tmp=$(mktemp -d)
pid=
cleanup() {
	[[ -n $pid ]] && kill -KILL "$pid" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT

fail() {
	echo "${JP_TEST:-test}: FAIL: $*" >&2
	for f in "$tmp"/out "$tmp"/err; do [[ -s $f ]] && sed "s|^|  ${f##*/}: |" "$f" >&2; done
	exit 1
}

py=$(python3 -c 'import sys; print(sys.executable)') || fail "python3 not found"

# stop_server <what> <signal> <seconds>: send the server $pid the signal, wait up to the seconds
# for it to exit, and fail (naming <what>) unless it exited with status 0.
stop_server() {
	local what=$1 sig=$2 secs=$3 i rc=0
	kill "-$sig" "$pid"
	for ((i = 0; i < secs * 10; i++)); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	kill -0 "$pid" 2>/dev/null && fail "$what: still running $secs s after SIG$sig"
	wait "$pid" || rc=$?
	pid=
	((rc == 0)) || fail "$what: exit status $rc after SIG$sig"
}
