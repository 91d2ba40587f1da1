#!/usr/bin/env bash
# scripts/build-oha.sh - installs oha (the HTTP load generator from the crates registry, pinned
# version, its own Cargo.lock: --locked) for the head-of-line web-server demo (make demo-http,
# docs/pfn-http.md), and prints the binary's path on stdout (cargo's messages go to stderr).
# Built once into ${XDG_CACHE_HOME:-~/.cache}/jiffy/oha-VERSION (OHA_ROOT overrides); later
# calls only print the path (oha 1.16 does not build without its default TLS feature, so rustls
# comes along, unused: the demo speaks plain HTTP/1.1 on loopback). OHA=/path/to/oha skips the
# build and uses that binary.
# Environment: CARGO, CARGO_BUILD_JOBS (e.g. 1 on a busy box), OHA_VERSION (default below).
set -euo pipefail
version=${OHA_VERSION:-1.16.0}
if [[ -n ${OHA:-} ]]; then
	[[ -x $OHA ]] || { echo "build-oha.sh: OHA=$OHA is not an executable" >&2; exit 1; }
	echo "$OHA"
	exit 0
fi
root_dir=${OHA_ROOT:-${XDG_CACHE_HOME:-$HOME/.cache}/jiffy/oha-$version}
bin=$root_dir/bin/oha
if [[ -x $bin ]] && "$bin" --version 2>/dev/null | grep -q " $version"; then
	echo "$bin"
	exit 0
fi
cargo_cmd=${CARGO:-$(command -v cargo || true)}
[[ -z $cargo_cmd && -x $HOME/.cargo/bin/cargo ]] && cargo_cmd=$HOME/.cargo/bin/cargo
if [[ -z $cargo_cmd ]]; then
	echo "build-oha.sh: cargo not found; install a Rust toolchain (rustup) or set OHA=..." >&2
	exit 1
fi
echo "build-oha.sh: building oha $version (once; a few minutes) into $root_dir" >&2
"$cargo_cmd" install oha --version "=$version" --locked --root "$root_dir" >&2
echo "$bin"
