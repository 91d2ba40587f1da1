#!/usr/bin/env bash
# test-install.sh - install Jiffy into a scratch prefix, build the README example against it with
# pkg-config only (no source tree include paths), run it, and check its answer.
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
echo "install: 2 passed, 0 failed"
