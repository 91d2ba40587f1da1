#!/bin/sh
# sim/tests/test_params_doc.sh - docs/policies.md's table of the policies' parameters is the
# policies' own tables (CTest docs.policy_params).
# Proves: every row `jiffy-sim --list-params` prints from the tables in src/sched/*.c (variable,
# policy, name, values, default, meaning) is in docs/policies.md word for word, and the table
# there has no row for a parameter that does not exist. A parameter added, renamed or given
# another range or default without the documentation fails here.
# Usage: test_params_doc.sh path/to/jiffy-sim path/to/docs/policies.md
set -u
SIM=${1:?usage: test_params_doc.sh path/to/jiffy-sim path/to/policies.md}
DOC=${2:?usage: test_params_doc.sh path/to/jiffy-sim path/to/policies.md}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fails=0

"$SIM" --list-params >"$T/list" || { echo "FAIL: jiffy-sim --list-params: exit $?"; exit 1; }
rows=$(grep -c '^| `JIFFY_' "$T/list")
while IFS= read -r line; do
	if grep -qxF -- "$line" "$DOC"; then
		echo "   ok      $(echo "$line" | cut -c1-100)"
	else
		echo "   FAIL    not in $DOC: $line"
		fails=$((fails + 1))
	fi
done <"$T/list"
# The documented rows of parameters (a `JIFFY_..._...` variable then a policy) must all be listed.
grep -E '^\| `JIFFY_[A-Z0-9_]+`( or `JIFFY_[A-Z0-9_]+`)? \| [a-z0-9_-]+ \| `' "$DOC" >"$T/doc"
while IFS= read -r line; do
	if ! grep -qxF -- "$line" "$T/list"; then
		echo "   FAIL    documented, but no policy has it: $line"
		fails=$((fails + 1))
	fi
done <"$T/doc"
if [ "$fails" -eq 0 ]; then
	echo "docs.policy_params: passed ($rows parameters)"
else
	echo "docs.policy_params: $fails FAILED (jiffy-sim --list-params prints the rows to paste)"
fi
[ "$fails" -eq 0 ]
