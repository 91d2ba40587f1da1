#!/usr/bin/env bash
# scripts/zlib-probes.sh - zlib from source for the decompression-bomb demo (docs/pfn-bomb.md):
# fetches it, reconfigures a Jiffy build with -DJIFFY_ZLIB_SOURCE=<it> and builds pfn-bomb-probes
# (zlib compiled by clang-14 with Jiffy's probe pass, tools/probe-pass: a budget stops inflate at
# a probe, no signal needed) and pfn-bomb-zclang (the same zlib and compiler without the pass).
#
#   scripts/zlib-probes.sh [BUILD_DIR]      default build/; prints the source directory used
#
# The source is never committed: zlib 1.3.2 as bundled in the Rust crate libz-sys 1.1.31
# (pinned; its src/zlib), downloaded by `cargo fetch` into Cargo's registry through a throwaway
# Cargo project in ${XDG_CACHE_HOME:-$HOME/.cache}/jiffy/zlib-source (scripts/crate-source.sh).
# Debian 12's libz (which pfn-bomb links) is 1.2.13; the inflate loop is the same design in both.
# Environment: CARGO.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${1:-$root/build}
cache_root=${XDG_CACHE_HOME:-$HOME/.cache}/jiffy
crate=libz-sys
crate_version=1.1.31

die() { echo "zlib-probes: $*" >&2; exit 1; }

[[ -f $build/CMakeCache.txt ]] || die "no CMake build in $build (run make build, or name one)"
# shellcheck source=scripts/crate-source.sh
. "$root/scripts/crate-source.sh"
crate_fetch "$cache_root/zlib-source" jiffy-zlib-source \
	"$crate = { version = \"=$crate_version\", default-features = false, features = [\"static\"] }"
src=$(crate_dir "$cache_root/zlib-source" "$crate" "$crate_version" src/zlib)
[[ -f $src/inflate.c && -f $src/zlib.h ]] || die "$crate $crate_version holds no src/zlib/inflate.c"
cmake "$build" -DJIFFY_ZLIB_SOURCE="$src" >/dev/null ||
	die "reconfiguring $build with -DJIFFY_ZLIB_SOURCE=$src failed"
cmake --build "$build" --target pfn-bomb-probes pfn-bomb-zclang >&2 ||
	die "building pfn-bomb-probes failed (is the probe pass built? clang-14, llvm-14-dev)"
echo "$src"
