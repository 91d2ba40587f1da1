#!/usr/bin/env bash
# deps.sh - install, with apt-get and only when missing, what a make target needs on Debian 12.
# Usage: scripts/deps.sh build|bench
set -euo pipefail

need=()
want_pkg() { # want_pkg <package> <command-or-file that proves it is present>
	if [[ "$2" == /* ]]; then [[ -e "$2" ]] || need+=("$1")
	else command -v "$2" >/dev/null 2>&1 || need+=("$1"); fi
}

want_pkg cmake cmake
want_pkg ninja-build ninja
want_pkg gcc gcc
want_pkg g++ g++
want_pkg make make
want_pkg pkg-config pkg-config
# The sanitizer runtimes come with gcc's libgcc-12-dev on Debian; check anyway.
want_pkg libasan8 /usr/lib/x86_64-linux-gnu/libasan.so.8
want_pkg libubsan1 /usr/lib/x86_64-linux-gnu/libubsan.so.1
# apps/: jiffy-kv needs RocksDB's C API; its tests drive it with redis-cli and redis-benchmark.
want_pkg librocksdb-dev /usr/include/rocksdb/c.h
# apps/pfn: pfn-bomb decodes zlib streams (the decompression-bomb demo, docs/pfn-bomb.md).
want_pkg zlib1g-dev /usr/include/zlib.h
want_pkg redis-tools redis-cli
# apps/httpd: jiffy-httpd parses HTTP with nodejs http-parser as Debian packages it.
want_pkg libhttp-parser-dev /usr/include/http_parser.h
# tools/probe-pass: the probe plugin is built against LLVM 14 and loaded into clang-14; its tests
# use FileCheck (llvm-14-tools, which llvm-14-dev brings).
want_pkg llvm-14-dev /usr/lib/llvm-14/lib/cmake/llvm/LLVMConfig.cmake
want_pkg clang-14 clang-14
# fuzz/ (make fuzz-smoke, make fuzz): libFuzzer and the ASan/UBSan runtimes of clang-14.
want_pkg libclang-rt-14-dev /usr/lib/llvm-14/lib/clang/14.0.6/lib/linux/libclang_rt.fuzzer-x86_64.a
# Seeing inside (issue 15): USDT probes are compiled in from <sys/sdt.h>; the gdb extension and
# the Valgrind client requests are tested under gdb and valgrind; the API reference is Doxygen's.
want_pkg systemtap-sdt-dev /usr/include/x86_64-linux-gnu/sys/sdt.h
want_pkg gdb gdb
want_pkg valgrind valgrind
want_pkg doxygen doxygen
# tests/core/check_usdt.sh attaches bpftrace to the USDT probes.
want_pkg bpftrace bpftrace
# tools/model/check.sh: the park/wake handshake checked by the SPIN model checker (model.park).
want_pkg spin spin

if [[ "${1:-build}" == bench ]]; then
	want_pkg libboost-fiber-dev /usr/include/boost/fiber/all.hpp
	want_pkg libboost-context-dev /usr/include/boost/context/fiber.hpp
	if ! command -v go >/dev/null 2>&1 && [[ ! -x /usr/local/go/bin/go ]]; then
		need+=(golang-go)
	fi
fi

if ((${#need[@]})); then
	echo "deps: installing ${need[*]}"
	SUDO=""
	[[ $(id -u) -eq 0 ]] || SUDO=sudo
	$SUDO apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}"
fi
