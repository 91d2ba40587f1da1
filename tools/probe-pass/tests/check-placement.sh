#!/bin/sh
# check-placement.sh - compile one placement test to LLVM IR with the probe plugin and check it.
#
# Owns: how a tools/probe-pass/tests/placement_*.c(pp) file is run. Usage:
#   check-placement.sh <clang> <JiffyProbes.so> <FileCheck> <source> <O0|O2>
# The source's "FLAGS:" line adds compiler flags. FileCheck reads the pass's report (one line per
# function: probes placed, loops left short) followed by the IR, with the prefixes CHECK and the
# optimisation level (O0 or O2), so a test states what must hold at every level and per level.
set -eu
cc=$1 plugin=$2 filecheck=$3 src=$4 opt=$5
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
flags=$(sed -n 's|^// FLAGS: ||p' "$src")
# shellcheck disable=SC2086 # $flags is a list of words
"$cc" -$opt -S -emit-llvm -fno-discard-value-names -Wall -Wextra -Werror -I"$(dirname "$0")" \
	-fplugin="$plugin" -fpass-plugin="$plugin" -mllvm -jiffy-probe-report $flags \
	"$src" -o "$tmp/out.ll" 2>"$tmp/report"
cat "$tmp/report" "$tmp/out.ll" >"$tmp/all"
"$filecheck" --allow-unused-prefixes --check-prefixes=CHECK,$opt --input-file="$tmp/all" "$src"
echo "probe placement $(basename "$src") -$opt: ok"
