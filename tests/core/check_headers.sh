#!/usr/bin/env bash
# tests/core/check_headers.sh - the public headers compile on their own, strictly (CTest
# core.headers).
#
# Owns: compiling each include/jiffy/*.h alone as strict C17 (-std=c17 -pedantic -Wall -Wextra
# -Werror) with gcc and clang, and as C++17 (-std=c++17 -pedantic ...) with g++ and clang++;
# jiffy/jiffy.hpp (C++ only) likewise with g++ and clang++, and the C++ example
# (examples/cxx_example.cpp) with clang++ (the build compiles it with g++); and the refusals:
# jiffy.hpp included from C, or as C++14, must stop with its #error message. Prints one line per
# compiler and what failed; a compiler that is missing fails the test (scripts/deps.sh installs
# gcc, g++ and clang-14).
#
# usage: check_headers.sh INCLUDE_DIR EXAMPLES_DIR CC CXX CLANG CLANGXX
set -uo pipefail
if [[ $# -ne 6 ]]; then
	sed -n 's/^# usage: /usage: /p' "$0" >&2
	exit 2
fi
inc=$1 examples=$2
declare -A compiler=([cc]=$3 [cxx]=$4 [clang]=$5 [clangxx]=$6)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failed=0 checked=0

for k in cc cxx clang clangxx; do
	if [[ -z ${compiler[$k]} || ${compiler[$k]} == *NOTFOUND* ]] || ! command -v "${compiler[$k]}" >/dev/null; then
		echo "check_headers: FAIL: no $k compiler ('${compiler[$k]}'); scripts/deps.sh build installs gcc, g++ and clang-14" >&2
		failed=$((failed + 1))
	fi
done
((failed == 0)) || exit 1

# compile <compiler> <lang: c|c++> <std> <file to include or compile> [main]: 0 if it compiled
compile() {
	local src=$tmp/t.$2
	[[ $2 == c++ ]] && src=$tmp/t.cpp
	if [[ ${5:-} == main ]]; then
		src=$4
	else
		printf '#include <jiffy/%s>\n#include <jiffy/%s>\nint jft_header_check;\n' "$4" "$4" >"$src"
	fi
	"$1" -x "$2" -std="$3" -pedantic -Wall -Wextra -Werror -fsyntax-only -I"$inc" "$src" \
		>"$tmp/out" 2>&1
}

headers=()
for h in "$inc"/jiffy/*.h; do headers+=("$(basename "$h")"); done
if ((${#headers[@]} < 10)); then
	echo "check_headers: FAIL: only ${#headers[@]} headers in $inc/jiffy" >&2
	exit 1
fi

for k in cc clang; do
	n=0
	for h in "${headers[@]}"; do
		if compile "${compiler[$k]}" c c17 "$h"; then n=$((n + 1)); else
			echo "check_headers: FAIL: $h as C17 with ${compiler[$k]}:" >&2
			cat "$tmp/out" >&2
			failed=$((failed + 1))
		fi
	done
	# jiffy.hpp from C: refused with its message, not some other error
	if compile "${compiler[$k]}" c c17 jiffy.hpp || ! grep -q 'jiffy.hpp is C++ only' "$tmp/out"; then
		echo "check_headers: FAIL: jiffy.hpp included from C (${compiler[$k]}) was not refused by its #error:" >&2
		cat "$tmp/out" >&2
		failed=$((failed + 1))
	else n=$((n + 1)); fi
	checked=$((checked + n))
	echo "check_headers: ${compiler[$k]}: ${#headers[@]} headers as strict C17, jiffy.hpp refused: $n ok"
done

for k in cxx clangxx; do
	n=0
	for h in "${headers[@]}" jiffy.hpp; do
		if compile "${compiler[$k]}" c++ c++17 "$h"; then n=$((n + 1)); else
			echo "check_headers: FAIL: $h as C++17 with ${compiler[$k]}:" >&2
			cat "$tmp/out" >&2
			failed=$((failed + 1))
		fi
	done
	if compile "${compiler[$k]}" c++ c++14 jiffy.hpp || ! grep -q 'needs C++17' "$tmp/out"; then
		echo "check_headers: FAIL: jiffy.hpp as C++14 (${compiler[$k]}) was not refused by its #error:" >&2
		cat "$tmp/out" >&2
		failed=$((failed + 1))
	else n=$((n + 1)); fi
	if [[ $k == clangxx ]]; then
		if compile "${compiler[$k]}" c++ c++17 "$examples/cxx_example.cpp" main; then n=$((n + 1)); else
			echo "check_headers: FAIL: examples/cxx_example.cpp with ${compiler[$k]}:" >&2
			cat "$tmp/out" >&2
			failed=$((failed + 1))
		fi
	fi
	checked=$((checked + n))
	echo "check_headers: ${compiler[$k]}: ${#headers[@]} headers + jiffy.hpp as C++17, C++14 refused$([[ $k == clangxx ]] && echo ', cxx_example.cpp'): $n ok"
done

echo "check_headers: $checked passed, $failed failed"
((failed == 0))
