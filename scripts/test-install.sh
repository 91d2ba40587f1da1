#!/usr/bin/env bash
# test-install.sh - install Jiffy into a scratch prefix, build the README example against it with
# pkg-config only (no source tree include paths), run it, and check its answer; where the probe
# plugin was built, compile a plain spinning loop with it (pkg-config, CMake, jiffy-cc) and check
# that it is preempted.
set -euo pipefail
build=${1:-build}
prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT
cmake --install "$build" --prefix "$prefix" >/dev/null
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig:$prefix/lib/x86_64-linux-gnu/pkgconfig"
flags=$(pkg-config --cflags --libs jiffy)
cc -std=gnu17 -Wall -Wextra -Werror examples/hello.c $flags -o "$prefix/hello"
LD_LIBRARY_PATH="$prefix/lib:$prefix/lib/x86_64-linux-gnu" "$prefix/hello" | tail -n 1
# The static archive must work too (pkg-config --static adds -pthread).
cc -std=gnu17 examples/hello.c $(pkg-config --cflags jiffy) "$(pkg-config --variable=libdir jiffy)/libjiffy.a" -pthread -o "$prefix/hello-static"
"$prefix/hello-static" | tail -n 1
passed=2

# One version everywhere (include/jiffy/jiffy.h is its only source): the installed library's
# jf_version(), the installed headers' JIFFY_VERSION and pkg-config's Version; the licence and the
# changelog are installed beside the README.
printf '%s\n' '#include <stdio.h>' '#include <string.h>' '#include <jiffy/jiffy.h>' \
	'int main(void) { printf("%s %s\n", jf_version(NULL), JIFFY_VERSION); return strcmp(jf_version(NULL), JIFFY_VERSION) != 0; }' \
	>"$prefix/version.c"
cc -std=gnu17 -Wall -Wextra -Werror "$prefix/version.c" $flags -o "$prefix/version"
read -r lib_v hdr_v < <(LD_LIBRARY_PATH="$prefix/lib:$prefix/lib/x86_64-linux-gnu" "$prefix/version")
pc_v=$(pkg-config --modversion jiffy)
if [[ $lib_v != "$hdr_v" || $pc_v != "$hdr_v" ]]; then
	echo "test-install: versions differ: library $lib_v, headers $hdr_v, pkg-config $pc_v" >&2
	exit 1
fi
for f in LICENSE CHANGELOG.md README.md; do
	[[ -s $prefix/share/doc/jiffy/$f ]] ||
		{ echo "test-install: $f is not installed in share/doc/jiffy" >&2; exit 1; }
done
echo "version $hdr_v (library, headers, pkg-config agree); LICENSE, CHANGELOG.md installed"
passed=$((passed + 1))

# The probe pass (docs/probes.md), when this build made it: a loop without any jf_safepoint()
# call must be preempted once compiled with the installed plugin, whether the flags come from
# pkg-config, from find_package(jiffy) + jiffy_add_probes(), or from the jiffy-cc wrapper.
if [[ -e "$build/tools/probe-pass/JiffyProbes.so" ]]; then
	clang=$(sed -n 's/^JIFFY_CLANG:FILEPATH=//p' "$build/CMakeCache.txt")
	spin=$PWD/tools/probe-pass/tests/e2e_spin.c
	libjiffy_a="$(pkg-config --variable=libdir jiffy)/libjiffy.a"
	run_spin() { # run_spin <how> <binary>: B runs within the first half of A's plain loop
		JIFFY_PREEMPT=deadline JIFFY_WORKERS=1 JIFFY_QUANTUM_US=50 "$2" preempted 30000000 |
			sed "s/^/probes ($1): /"
	}
	# shellcheck disable=SC2046 # the flags are words
	"$clang" -O2 -Wall -Wextra -Werror $(pkg-config --variable=probe_cflags jiffy) \
		$(pkg-config --cflags jiffy) "$spin" "$libjiffy_a" -pthread -o "$prefix/spin-pc"
	run_spin pkg-config "$prefix/spin-pc"
	mkdir "$prefix/cmake-user"
	printf '%s\n' "cmake_minimum_required(VERSION 3.25)" "project(probe_user C)" \
		"find_package(jiffy REQUIRED)" "add_executable(spin $spin)" \
		"target_compile_options(spin PRIVATE -O2 -Wall -Wextra -Werror)" \
		"target_link_libraries(spin PRIVATE jiffy::jiffy)" "jiffy_add_probes(spin)" \
		>"$prefix/cmake-user/CMakeLists.txt"
	CC=$clang cmake -S "$prefix/cmake-user" -B "$prefix/cmake-user/build" \
		-DCMAKE_PREFIX_PATH="$prefix" >/dev/null
	cmake --build "$prefix/cmake-user/build" >/dev/null
	run_spin cmake "$prefix/cmake-user/build/spin"
	# shellcheck disable=SC2046
	"$prefix/bin/jiffy-cc" -O2 $(pkg-config --cflags jiffy) "$spin" "$libjiffy_a" -pthread \
		-o "$prefix/spin-cc"
	run_spin jiffy-cc "$prefix/spin-cc"
	passed=$((passed + 3))
else
	echo "install: the probe plugin was not built here (LLVM 14, clang-14): its checks skipped"
fi
echo "install: $passed passed, 0 failed"
