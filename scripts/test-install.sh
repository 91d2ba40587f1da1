#!/usr/bin/env bash
# test-install.sh - install Jiffy into a scratch prefix and use it the ways docs/api.md
# ("Packaging") documents, with nothing from the source tree but the examples' sources.
#
# Owns the checks of `make test-install`:
#   - the C README example (examples/hello.c) and the C++ example (examples/cxx_example.cpp)
#     built three ways and run: with pkg-config (shared library), from a small CMake project with
#     find_package(Jiffy) (Jiffy::jiffy, the shared library), and linked statically against
#     libjiffy.a (pkg-config --static, and Jiffy::jiffy_static); each binary must need
#     libjiffy.so.0 or must not, as its way says (readelf), and must exit 0 (each example checks
#     its own results);
#   - the CMake package: JiffyConfigVersion.cmake refuses another major version, the earlier
#     spelling find_package(jiffy) and its jiffy::jiffy alias still work, Jiffy_LICENSE and
#     Jiffy_LICENSE_FILE name the installed licence;
#   - one version everywhere (library, headers, pkg-config, CMake), the licence named in jiffy.pc
#     and installed with the changelog and README;
#   - where the probe plugin was built: a plain spinning loop compiled with it (pkg-config, CMake,
#     jiffy-cc) is preempted.
# Any failure stops the script with a message naming the command that failed.
# usage: scripts/test-install.sh [BUILD_DIR, default build]
set -Eeuo pipefail
build=${1:-build}
src=$PWD
if [[ ! -f $src/examples/hello.c || ! -f $src/examples/cxx_example.cpp ]]; then
	echo "test-install: run from the source tree's root (examples/ not found in $src)" >&2
	exit 1
fi
prefix=$(mktemp -d)
work=$(mktemp -d)
trap 'rm -rf "$prefix" "$work"' EXIT
trap 'echo "test-install: FAIL (line $LINENO): $BASH_COMMAND" >&2' ERR
fail() {
	echo "test-install: FAIL: $*" >&2
	exit 1
}
cmake --install "$build" --prefix "$prefix" >/dev/null
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig:$prefix/lib/x86_64-linux-gnu/pkgconfig"
libdir=$(pkg-config --variable=libdir jiffy)
[[ -f $libdir/libjiffy.a && -L $libdir/libjiffy.so && -f $libdir/libjiffy.so.0 ]] ||
	fail "libjiffy.a, libjiffy.so and libjiffy.so.0 are not all installed in $libdir"
passed=0

# check_run <label> <binary> shared|static: the binary needs libjiffy.so.0 (shared) or not
# (static), and runs to exit 0; prints its last line. Static binaries run without the prefix on
# the library path.
check_run() {
	local label=$1 bin=$2 kind=$3 out rc=0 needs=no
	readelf -d "$bin" | grep -q 'NEEDED.*\[libjiffy\.so\.0\]' && needs=yes
	if [[ $kind == shared && $needs == no ]]; then
		fail "$label: $bin does not need libjiffy.so.0 (built against the shared library)"
	elif [[ $kind == static && $needs == yes ]]; then
		fail "$label: $bin needs libjiffy.so.0 (linked with libjiffy.a)"
	fi
	if [[ $kind == shared ]]; then
		out=$(LD_LIBRARY_PATH="$libdir" "$bin" 2>&1) || rc=$?
	else
		out=$(env -u LD_LIBRARY_PATH "$bin" 2>&1) || rc=$?
	fi
	if ((rc != 0)); then
		printf '%s\n' "$out" >&2
		fail "$label: $bin exited with $rc"
	fi
	echo "install: $label: $(tail -n 1 <<<"$out")"
	passed=$((passed + 1))
}

# 1. pkg-config: shared, then static (libjiffy.a; the rest of the program dynamic).
cflags=$(pkg-config --cflags jiffy)
libs=$(pkg-config --libs jiffy)
static_libs=$(pkg-config --static --libs jiffy)
# shellcheck disable=SC2086 # the flags are words
{
	cc -std=c17 -pedantic -Wall -Wextra -Werror "$src/examples/hello.c" $cflags $libs \
		-o "$work/hello-pc"
	c++ -std=c++17 -Wall -Wextra -Werror "$src/examples/cxx_example.cpp" $cflags $libs \
		-o "$work/cxx-pc"
	cc -std=c17 -pedantic -Wall -Wextra -Werror "$src/examples/hello.c" $cflags \
		-Wl,-Bstatic $static_libs -Wl,-Bdynamic -o "$work/hello-pc-static"
	c++ -std=c++17 -Wall -Wextra -Werror "$src/examples/cxx_example.cpp" $cflags \
		-Wl,-Bstatic $static_libs -Wl,-Bdynamic -o "$work/cxx-pc-static"
}
check_run "pkg-config, C" "$work/hello-pc" shared
check_run "pkg-config, C++" "$work/cxx-pc" shared
check_run "pkg-config --static, C" "$work/hello-pc-static" static
check_run "pkg-config --static, C++" "$work/cxx-pc-static" static

# 2. find_package(Jiffy) from a CMake project: the shared library (Jiffy::jiffy) and the static
# one (Jiffy::jiffy_static), C and C++; the package's version rule, licence and old spelling.
hdr_v=$(sed -n 's/^#define JIFFY_VERSION_\(MAJOR\|MINOR\|PATCH\) \([0-9]*\)$/\2/p' \
	"$prefix/include/jiffy/jiffy.h" | paste -sd.)
major=${hdr_v%%.*}
mkdir "$work/user"
cat >"$work/user/CMakeLists.txt" <<EOF
cmake_minimum_required(VERSION 3.18)
project(jiffy_user C CXX)
find_package(Jiffy $hdr_v REQUIRED)
if(NOT Jiffy_VERSION STREQUAL "$hdr_v")
  message(FATAL_ERROR "find_package(Jiffy): Jiffy_VERSION is '\${Jiffy_VERSION}', the headers say $hdr_v")
endif()
if(NOT Jiffy_LICENSE STREQUAL "Apache-2.0" OR NOT EXISTS "\${Jiffy_LICENSE_FILE}")
  message(FATAL_ERROR "find_package(Jiffy): Jiffy_LICENSE '\${Jiffy_LICENSE}', Jiffy_LICENSE_FILE '\${Jiffy_LICENSE_FILE}'")
endif()
# SameMajorVersion: the next major version must not be accepted.
function(refuse_next_major)
  find_package(Jiffy $((major + 1)).0 QUIET)
  if(Jiffy_FOUND)
    message(FATAL_ERROR "find_package(Jiffy $((major + 1)).0) accepted Jiffy \${Jiffy_VERSION}")
  endif()
endfunction()
refuse_next_major()
# The earlier spelling, and its names: jiffy::jiffy is the static library, jiffy::jiffy_shared
# the shared one.
find_package(jiffy $hdr_v REQUIRED)
get_target_property(old_static jiffy::jiffy ALIASED_TARGET)
get_target_property(old_shared jiffy::jiffy_shared ALIASED_TARGET)
if(NOT old_static STREQUAL "Jiffy::jiffy_static" OR NOT old_shared STREQUAL "Jiffy::jiffy")
  message(FATAL_ERROR "jiffy::jiffy -> '\${old_static}', jiffy::jiffy_shared -> '\${old_shared}'")
endif()
foreach(kind shared static)
  if(kind STREQUAL "shared")
    set(lib Jiffy::jiffy)
  else()
    set(lib Jiffy::jiffy_static)
  endif()
  add_executable(hello-\${kind} $src/examples/hello.c)
  set_target_properties(hello-\${kind} PROPERTIES C_STANDARD 17 C_EXTENSIONS OFF)
  add_executable(cxx-\${kind} $src/examples/cxx_example.cpp)
  set_target_properties(cxx-\${kind} PROPERTIES CXX_STANDARD 17 CXX_EXTENSIONS OFF)
  foreach(t hello-\${kind} cxx-\${kind})
    target_compile_options(\${t} PRIVATE -Wall -Wextra -Werror)
    target_link_libraries(\${t} PRIVATE \${lib})
  endforeach()
endforeach()
EOF
cmake -S "$work/user" -B "$work/user/build" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" >"$work/user.log" 2>&1 ||
	{ cat "$work/user.log" >&2; fail "the CMake project with find_package(Jiffy) did not configure"; }
cmake --build "$work/user/build" >>"$work/user.log" 2>&1 ||
	{ cat "$work/user.log" >&2; fail "the CMake project with find_package(Jiffy) did not build"; }
passed=$((passed + 1)) # the package's version, licence and aliases (checked while configuring)
echo "install: find_package(Jiffy $hdr_v): version, licence, refuses $((major + 1)).0, find_package(jiffy) aliases: ok"
check_run "find_package, Jiffy::jiffy, C" "$work/user/build/hello-shared" shared
check_run "find_package, Jiffy::jiffy, C++" "$work/user/build/cxx-shared" shared
check_run "find_package, Jiffy::jiffy_static, C" "$work/user/build/hello-static" static
check_run "find_package, Jiffy::jiffy_static, C++" "$work/user/build/cxx-static" static

# 3. One version everywhere (include/jiffy/jiffy.h is its only source): the installed library's
# jf_version(), the installed headers' JIFFY_VERSION and pkg-config's Version; the licence named
# in jiffy.pc and installed with the changelog and the README.
printf '%s\n' '#include <stdio.h>' '#include <string.h>' '#include <jiffy/jiffy.h>' \
	'int main(void) { printf("%s %s\n", jf_version(NULL), JIFFY_VERSION); return strcmp(jf_version(NULL), JIFFY_VERSION) != 0; }' \
	>"$work/version.c"
# shellcheck disable=SC2086
cc -std=gnu17 -Wall -Wextra -Werror "$work/version.c" $cflags $libs -o "$work/version"
read -r lib_v c_v < <(LD_LIBRARY_PATH="$libdir" "$work/version")
pc_v=$(pkg-config --modversion jiffy)
if [[ $lib_v != "$hdr_v" || $c_v != "$hdr_v" || $pc_v != "$hdr_v" ]]; then
	fail "versions differ: library $lib_v, JIFFY_VERSION $c_v, jiffy.h's macros $hdr_v, pkg-config $pc_v"
fi
for f in LICENSE CHANGELOG.md README.md; do
	[[ -s $prefix/share/doc/jiffy/$f ]] || fail "$f is not installed in share/doc/jiffy"
done
[[ $(pkg-config --variable=license jiffy) == Apache-2.0 ]] ||
	fail "jiffy.pc: license is '$(pkg-config --variable=license jiffy)', not Apache-2.0"
cmp -s "$(pkg-config --variable=license_file jiffy)" "$src/LICENSE" ||
	fail "jiffy.pc: license_file '$(pkg-config --variable=license_file jiffy)' is not the LICENSE"
for f in "$libdir/pkgconfig/jiffy.pc" "$libdir/cmake/Jiffy/JiffyConfig.cmake"; do
	grep -q '^# Licence: Jiffy is distributed under the Apache License 2.0' "$f" ||
		fail "$f has no licence comment"
done
echo "install: version $hdr_v (library, headers, pkg-config, CMake agree); licence Apache-2.0 in jiffy.pc and JiffyConfig.cmake; LICENSE, CHANGELOG.md installed"
passed=$((passed + 1))

# 4. The probe pass (docs/probes.md), when this build made it: a loop without any jf_safepoint()
# call must be preempted once compiled with the installed plugin, whether the flags come from
# pkg-config, from find_package(Jiffy) + jiffy_add_probes(), or from the jiffy-cc wrapper.
if [[ -e "$build/tools/probe-pass/JiffyProbes.so" ]]; then
	clang=$(sed -n 's/^JIFFY_CLANG:FILEPATH=//p' "$build/CMakeCache.txt")
	spin=$src/tools/probe-pass/tests/e2e_spin.c
	run_spin() { # run_spin <how> <binary>: B runs within the first half of A's plain loop
		JIFFY_PREEMPT=deadline JIFFY_WORKERS=1 JIFFY_QUANTUM_US=50 "$2" preempted 30000000 |
			sed "s/^/install: probes ($1): /"
	}
	# shellcheck disable=SC2046 # the flags are words
	"$clang" -O2 -Wall -Wextra -Werror $(pkg-config --variable=probe_cflags jiffy) \
		$cflags "$spin" "$libdir/libjiffy.a" -pthread -o "$work/spin-pc"
	run_spin pkg-config "$work/spin-pc"
	mkdir "$work/probe-user"
	printf '%s\n' "cmake_minimum_required(VERSION 3.25)" "project(probe_user C)" \
		"find_package(Jiffy REQUIRED)" "add_executable(spin $spin)" \
		"target_compile_options(spin PRIVATE -O2 -Wall -Wextra -Werror)" \
		"target_link_libraries(spin PRIVATE Jiffy::jiffy_static)" "jiffy_add_probes(spin)" \
		>"$work/probe-user/CMakeLists.txt"
	CC=$clang cmake -S "$work/probe-user" -B "$work/probe-user/build" -G Ninja \
		-DCMAKE_PREFIX_PATH="$prefix" >/dev/null
	cmake --build "$work/probe-user/build" >/dev/null
	run_spin cmake "$work/probe-user/build/spin"
	# shellcheck disable=SC2086
	"$prefix/bin/jiffy-cc" -O2 $cflags "$spin" "$libdir/libjiffy.a" -pthread -o "$work/spin-cc"
	run_spin jiffy-cc "$work/spin-cc"
	passed=$((passed + 3))
else
	echo "install: the probe plugin was not built here (LLVM 14, clang-14): its 3 checks not run"
fi
echo "install: $passed passed, 0 failed"
