#!/usr/bin/env bash
# scripts/build-load.sh - builds jiffy-load (the Rust crate in load/) in release mode with the
# committed Cargo.lock, into load/target, and prints the binary's path on stdout (cargo's own
# messages go to stderr). CARGO_BUILD_JOBS limits cargo's parallelism (e.g. 1 on a busy box).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
if ! command -v cargo >/dev/null 2>&1; then
	echo "build-load.sh: cargo not found; install a Rust toolchain (https://rustup.rs)" >&2
	exit 1
fi
CARGO_TARGET_DIR="$root/load/target" cargo build --release --locked \
	--manifest-path "$root/load/Cargo.toml" >&2
echo "$root/load/target/release/jiffy-load"
