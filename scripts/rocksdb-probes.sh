#!/usr/bin/env bash
# scripts/rocksdb-probes.sh - RocksDB built from source with Jiffy's probe pass, and jiffy-kv
# linked with it (jiffy-kv-probes): issue 14 §4, docs/libraries.md "RocksDB built with probes".
#
#   scripts/rocksdb-probes.sh                 fetch, build (cached), then build jiffy-kv-probes
#   scripts/rocksdb-probes.sh --variant plain the same RocksDB and compiler without the pass
#                                             (jiffy-kv-clang): what the probes alone cost
#   scripts/rocksdb-probes.sh --variant loops probes at loop back-edges only, none at function
#                                             entries (-jiffy-probe-entry=none: Aspen Fig. 5's
#                                             "CONCORD fine-tuned" line; jiffy-kv-loops)
#   scripts/rocksdb-probes.sh --print-prefix  print where the library is (or would be) installed
#
# The source is never committed: RocksDB 7.9.2 as bundled in the Rust crate librocksdb-sys
# 0.10.0+7.9.2 (pinned), downloaded by `cargo fetch` into Cargo's registry through a throwaway
# Cargo project in ${XDG_CACHE_HOME:-$HOME/.cache}/jiffy/rocksdb-source. (Debian 12's
# librocksdb-dev, which jiffy-kv links, is 7.8.3; no crate bundles 7.8.x. 7.9.2 is the nearest,
# and docs/libraries.md's thread-local study holds for both: the code it cites is unchanged.)
#
# Built with RocksDB's own CMake, static library only, the way Debian builds it where it matters
# for speed (-O2 -DNDEBUG, PORTABLE, RTTI), without compression libraries (jiffy-kv configures
# none) and without jemalloc/liburing/gflags, by clang++-14 with the plugin (as jiffy-c++ runs it) or, for
# --variant plain, clang++-14 itself. About 30-45 min on 2 vCPUs; installed under
#   ${JIFFY_ROCKSDB_CACHE:-$XDG_CACHE_HOME/jiffy}/rocksdb-7.9.2-<variant>/{include,lib}
# with a stamp naming the plugin's checksum: a changed pass rebuilds from scratch, an unchanged one
# reuses the library. Then Jiffy's build (BUILD_DIR, default build/) is reconfigured with
# -DJIFFY_ROCKSDB_PROBES=<prefix> (or _LOOPS, _CLANG) and the binary is built.
# Environment: BUILD_DIR, JIFFY_ROCKSDB_CACHE, JOBS (parallel compile jobs, default nproc), CARGO.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${BUILD_DIR:-$root/build}
cache_root=${XDG_CACHE_HOME:-$HOME/.cache}/jiffy
store=${JIFFY_ROCKSDB_CACHE:-$cache_root}
version=7.9.2
crate=librocksdb-sys
crate_version=0.10.0+$version
jobs=${JOBS:-$(nproc)}

die() { echo "rocksdb-probes: $*" >&2; exit 1; }

variant=probes
print_prefix=0
while (($#)); do
	case $1 in
	--variant)
		[[ $# -ge 2 ]] || die "--variant wants probes, loops or plain"
		variant=$2; shift 2 ;;
	--print-prefix) print_prefix=1; shift ;;
	-h | --help) sed -n '2,27p' "$0"; exit 0 ;;
	*) die "unknown option '$1' (--variant probes|loops|plain, --print-prefix)" ;;
	esac
done
case $variant in
probes) binary=jiffy-kv-probes; cmake_var=JIFFY_ROCKSDB_PROBES ;;
loops) binary=jiffy-kv-loops; cmake_var=JIFFY_ROCKSDB_LOOPS ;;
plain) binary=jiffy-kv-clang; cmake_var=JIFFY_ROCKSDB_CLANG ;;
*) die "--variant wants probes, loops or plain, got '$variant'" ;;
esac
prefix=$store/rocksdb-$version-$variant
if ((print_prefix)); then
	echo "$prefix"
	exit 0
fi

# ---- the compiler -------------------------------------------------------------------------------
[[ -f $build/CMakeCache.txt ]] || die "no CMake build in $build (run make build, or set BUILD_DIR)"
plugin=$build/tools/probe-pass/JiffyProbes.so
if [[ ! -f $plugin ]]; then
	cmake --build "$build" --target JiffyProbes >&2 ||
		die "the probe plugin is not built in $build (needs llvm-14-dev and clang-14: scripts/deps.sh)"
fi
clangxx=$(command -v clang++-14 || true)
clang=$(command -v clang-14 || true)
[[ -n $clangxx && -n $clang ]] || die "clang-14 / clang++-14 not found (scripts/deps.sh installs them)"
# RocksDB's configure step compiles and links test programs (pthread, getauxval, ...): with the
# plugin those would reference jf__preempt and fail to link, and every check would come out
# wrong. So it is configured with plain clang-14 first, then configured again with the plugin's
# flags (what jiffy-cc adds) for the build itself; the checks' results are cached by then.
pass_flags=""
if [[ $variant != plain ]]; then
	cmake --build "$build" --target JiffyProbes >&2
	pass_flags="-fplugin=$plugin -fpass-plugin=$plugin"
	[[ $variant == loops ]] && pass_flags="$pass_flags -mllvm -jiffy-probe-entry=none"
	stamp_want="$variant $(sha256sum "$plugin" | cut -d' ' -f1)"
else
	stamp_want="$variant $("$clangxx" --version | head -1)"
fi
cxx=$clangxx
cc=$clang

# ---- the source ---------------------------------------------------------------------------------
# shellcheck source=scripts/crate-source.sh
. "$root/scripts/crate-source.sh"
fetch_source() {
	crate_fetch "$cache_root/rocksdb-source" jiffy-rocksdb-source \
		"$crate = { version = \"=$crate_version\", default-features = false }"
	src=$(crate_dir "$cache_root/rocksdb-source" "$crate" "$crate_version" rocksdb)
	[[ -f $src/CMakeLists.txt ]] || die "$crate $crate_version holds no rocksdb/CMakeLists.txt"
}

# ---- the library --------------------------------------------------------------------------------
if [[ -f $prefix/lib/librocksdb.a && -f $prefix/stamp && "$(cat "$prefix/stamp")" == "$stamp_want" ]]; then
	echo "rocksdb-probes: $prefix is up to date ($variant)"
else
	fetch_source
	objdir=$store/rocksdb-$version-$variant.build
	rm -rf "$objdir" "$prefix"
	echo "rocksdb-probes: building RocksDB $version ($variant) from $src with $jobs jobs" \
		"(30-45 min on 2 vCPUs)"
	start=$(date +%s)
	cmake -S "$src" -B "$objdir" -G Ninja \
		-DCMAKE_BUILD_TYPE=Release \
		-DCMAKE_C_COMPILER="$cc" -DCMAKE_CXX_COMPILER="$cxx" \
		-DCMAKE_CXX_FLAGS_RELEASE="-O2 -DNDEBUG" -DCMAKE_C_FLAGS_RELEASE="-O2 -DNDEBUG" \
		-DCMAKE_INSTALL_PREFIX="$prefix" -DCMAKE_INSTALL_LIBDIR=lib \
		-DPORTABLE=ON -DUSE_RTTI=ON -DFAIL_ON_WARNINGS=OFF \
		-DROCKSDB_BUILD_SHARED=OFF -DWITH_TESTS=OFF -DWITH_ALL_TESTS=OFF \
		-DWITH_BENCHMARK_TOOLS=OFF -DWITH_CORE_TOOLS=OFF -DWITH_TOOLS=OFF \
		-DWITH_TRACE_TOOLS=OFF -DWITH_GFLAGS=OFF -DWITH_JEMALLOC=OFF -DWITH_LIBURING=OFF \
		-DWITH_SNAPPY=OFF -DWITH_LZ4=OFF -DWITH_ZLIB=OFF -DWITH_ZSTD=OFF -DWITH_BZ2=OFF \
		>"$store/rocksdb-$version-$variant.configure.log" 2>&1 ||
		die "RocksDB's cmake failed: see $store/rocksdb-$version-$variant.configure.log"
	if [[ -n $pass_flags ]]; then
		cmake -S "$src" -B "$objdir" -DCMAKE_CXX_FLAGS="$pass_flags" -DCMAKE_C_FLAGS="$pass_flags" \
			>>"$store/rocksdb-$version-$variant.configure.log" 2>&1 ||
			die "RocksDB's cmake with the pass failed: see $store/rocksdb-$version-$variant.configure.log"
		grep -q -- "-fpass-plugin=$plugin" "$objdir/build.ninja" ||
			die "the pass's flags did not reach $objdir/build.ninja"
	fi
	ninja -C "$objdir" -j "$jobs" rocksdb ||
		die "building RocksDB failed (objects in $objdir)"
	mkdir -p "$prefix/lib"
	cp "$objdir/librocksdb.a" "$prefix/lib/"
	cp -r "$src/include" "$prefix/"
	# what the library needs at link time beyond libstdc++ (from RocksDB's own CMake)
	echo "-lpthread -ldl" >"$prefix/lib/link-flags"
	echo "$stamp_want" >"$prefix/stamp"
	rm -rf "$objdir"
	echo "rocksdb-probes: built in $(( $(date +%s) - start )) s: $prefix"
fi

# ---- jiffy-kv linked with it --------------------------------------------------------------------
cmake -B "$build" -D"$cmake_var=$prefix" >/dev/null ||
	die "reconfiguring $build with -D$cmake_var=$prefix failed"
cmake --build "$build" --target "$binary" || die "building $binary failed"
echo "rocksdb-probes: $build/apps/kv/$binary"
