#!/usr/bin/env bash
# scripts/build-peers.sh - build the Go and Tokio peers of jiffy-synth (apps/peers/) in release
# mode and print the two binaries' paths, one per line (Go first).
# Idempotent: the Go build cache and Cargo's fingerprints make a rebuild of unchanged sources a
# no-op (well under a second each).
#   JOBS=N   Cargo's parallelism (default 2)
#   GO=...   the go command (default: go on PATH, else /usr/local/go/bin/go)
#   CARGO=.. the cargo command (default: cargo on PATH, else ~/.cargo/bin/cargo)
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
gosrc=$root/apps/peers/go-synth
rssrc=$root/apps/peers/tokio-synth

go_cmd=${GO:-$(command -v go || true)}
[[ -z $go_cmd && -x /usr/local/go/bin/go ]] && go_cmd=/usr/local/go/bin/go
if [[ -z $go_cmd ]]; then
	echo "build-peers: go not found (install Go >= 1.21, or set GO=/path/to/go)" >&2
	exit 1
fi
cargo_cmd=${CARGO:-$(command -v cargo || true)}
[[ -z $cargo_cmd && -x $HOME/.cargo/bin/cargo ]] && cargo_cmd=$HOME/.cargo/bin/cargo
if [[ -z $cargo_cmd ]]; then
	echo "build-peers: cargo not found (install Rust with rustup, or put ~/.cargo/bin on PATH)" >&2
	exit 1
fi

# --version of go-synth: the Jiffy version, from its only source (tokio-synth's build.rs reads the
# same header).
jiffy_version=$(awk '$1 == "#define" && $2 ~ /^JIFFY_VERSION_(MAJOR|MINOR|PATCH)$/ { v[$2] = $3 }
	END { print v["JIFFY_VERSION_MAJOR"] "." v["JIFFY_VERSION_MINOR"] "." v["JIFFY_VERSION_PATCH"] }' \
	"$root/include/jiffy/jiffy.h")
[[ $jiffy_version =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] ||
	{ echo "build-peers: no JIFFY_VERSION_MAJOR/MINOR/PATCH in include/jiffy/jiffy.h" >&2; exit 1; }
(cd "$gosrc" && "$go_cmd" build -trimpath -ldflags "-X main.jiffyVersion=$jiffy_version" \
	-o go-synth .) ||
	{ echo "build-peers: go build failed in $gosrc" >&2; exit 1; }
"$cargo_cmd" build --release --locked --quiet -j "${JOBS:-2}" \
	--manifest-path "$rssrc/Cargo.toml" --target-dir "$rssrc/target" ||
	{ echo "build-peers: cargo build failed in $rssrc" >&2; exit 1; }

echo "$gosrc/go-synth"
echo "$rssrc/target/release/tokio-synth"
