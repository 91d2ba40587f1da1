#!/usr/bin/env bash
# scripts/api-docs.sh - build the API reference (Doxygen, docs/Doxyfile) from the public headers'
# kernel-doc comments, and fail on any warning. `make docs` and CTest docs.api run it.
#   usage: scripts/api-docs.sh [--headers DIR] [OUTDIR]
#     OUTDIR   where the HTML goes (OUTDIR/html; default build/docs)
#     DIR      the headers to document (default include/jiffy; tests/docs/ gives a broken copy)
# Owns: the check's rule: exit 0 only when the filter (scripts/kerneldoc-filter.py) found nothing
# wrong in any header and Doxygen wrote no warning (a public declaration without documentation,
# a documented parameter the function does not have, a function with some of its parameters
# documented but not all, a malformed command). Each problem is printed as
# "<dir>/<header>:<line>: ..." on stderr. Exit 1 on warnings, 2 on a usage or set-up error
# (doxygen or python3 missing: scripts/deps.sh installs both). A few seconds.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
headers=$root/include/jiffy
usage() { echo "usage: scripts/api-docs.sh [--headers DIR] [OUTDIR]" >&2; exit 2; }
if [[ ${1:-} == --headers ]]; then
	[[ -n ${2:-} ]] || usage
	headers=$(cd "$2" && pwd) || usage
	shift 2
fi
(($# <= 1)) || usage
[[ ${1:-} != -* ]] || usage
out=${1:-$root/build/docs}
command -v doxygen >/dev/null ||
	{ echo "api-docs: doxygen not found (apt-get install doxygen, or scripts/deps.sh build)" >&2; exit 2; }
command -v python3 >/dev/null || { echo "api-docs: python3 not found" >&2; exit 2; }
compgen -G "$headers/*.h" >/dev/null || { echo "api-docs: no headers in $headers" >&2; exit 2; }

version=$(awk '$1 == "#define" && $2 ~ /^JIFFY_VERSION_(MAJOR|MINOR|PATCH)$/ { v[$2] = $3 }
	END { print v["JIFFY_VERSION_MAJOR"] "." v["JIFFY_VERSION_MINOR"] "." v["JIFFY_VERSION_PATCH"] }' \
	"$root/include/jiffy/jiffy.h")
[[ $version =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] ||
	{ echo "api-docs: no JIFFY_VERSION_MAJOR/MINOR/PATCH in include/jiffy/jiffy.h" >&2; exit 2; }

mkdir -p "$out"
out=$(cd "$out" && pwd)
rm -rf "$out/html" "$out/warnings.log"
shown=$(dirname "$headers")/ # paths in messages: relative to the headers' parent (jiffy/x.h)

# The filter first, on its own: Doxygen would not notice it failing, and what it finds wrong (an
# @x naming no member, ...) is the headers' problem too.
problems=0
for h in "$headers"/*.h; do
	if ! python3 "$root/scripts/kerneldoc-filter.py" "$h" >/dev/null 2>"$out/filter.err"; then
		sed "s|^$shown||" "$out/filter.err" >&2
		[[ -s $out/filter.err ]] || echo "${h#"$shown"}: warning: the filter failed" >&2
		problems=$((problems + 1))
	fi
done
rm -f "$out/filter.err"

rc=0
(cd "$root" && JIFFY_ROOT=$root JIFFY_HEADERS=$headers JIFFY_DOCS_OUT=$out \
	JIFFY_VERSION=$version doxygen docs/Doxyfile) >"$out/doxygen.out" 2>&1 || rc=$?
if [[ -s $out/warnings.log ]]; then
	sed "s|^$shown||" "$out/warnings.log" >&2
	problems=$((problems + $(grep -c ': \(warning\|error\): ' "$out/warnings.log")))
elif ((rc != 0)); then
	cat "$out/doxygen.out" >&2
	echo "api-docs: doxygen failed (exit $rc) without a warning" >&2
	exit 2
fi
[[ -f $out/html/index.html ]] || { echo "api-docs: doxygen wrote no $out/html/index.html" >&2; exit 2; }
if ((problems)); then
	echo "api-docs: $problems problem(s) in the headers' documentation (above)" >&2
	exit 1
fi
echo "api-docs: Jiffy $version, no warnings: $out/html/index.html"
