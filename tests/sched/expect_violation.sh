#!/bin/sh
# tests/sched/expect_violation.sh - a self-test of the conformance suite: run a check against a
# deliberately broken policy (broken_policies.h) and pass only if it failed the way it must.
#
# Usage: expect_violation.sh <extended regex> <command> [args...]
# Passes when <command> exits with status 1 (jft_fail(): a check failed), its output (stdout and
# stderr) matches <regex> (the violation the broken policy must trigger), and no sanitizer
# reported an error. Fails on anything else: a pass (the suite missed the bug), a crash or a
# signal (exit status above 128), a timeout, another exit status, or a failure whose message
# is not the expected violation (the suite failed for some other reason).
set -u
[ $# -ge 2 ] || { echo "usage: $0 <regex> <command> [args...]" >&2; exit 2; }
want=$1
shift
out=$(mktemp) || exit 2
trap 'rm -f "$out"' EXIT
"$@" >"$out" 2>&1
rc=$?
cat "$out"
echo "--- expect_violation: exit status $rc; expected 1 and output matching: $want"
if [ $rc -eq 0 ]; then
	echo "FAIL: the check passed: the broken policy was not caught" >&2
	exit 1
fi
if [ $rc -gt 128 ]; then
	echo "FAIL: killed by signal $((rc - 128)) (a crash is not the expected violation)" >&2
	exit 1
fi
if [ $rc -ne 1 ]; then
	echo "FAIL: exit status $rc, not 1 (a failed check)" >&2
	exit 1
fi
if grep -Eq 'ERROR: [A-Za-z]*Sanitizer|runtime error:|WARNING: ThreadSanitizer' "$out"; then
	echo "FAIL: a sanitizer reported an error" >&2
	exit 1
fi
if ! grep -Eq -- "$want" "$out"; then
	echo "FAIL: it failed, but not with the expected violation" >&2
	exit 1
fi
echo "ok: failed with the expected violation"
exit 0
