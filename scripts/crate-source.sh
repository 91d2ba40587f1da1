# scripts/crate-source.sh - sourced, not run: C/C++ sources that crates.io crates bundle, fetched
# with Cargo so that nothing third-party is committed (scripts/probe-study.sh,
# scripts/rocksdb-probes.sh).
#
# Owns: crate_fetch PROJECT_DIR NAME DEP_LINE... writes a throwaway Cargo project in PROJECT_DIR
# whose [dependencies] are the DEP_LINEs (pinned versions) and runs `cargo fetch` on it;
# crate_dir PROJECT_DIR NAME VERSION SUBDIR prints the directory SUBDIR of that crate as Cargo
# unpacked it (or unpacks the downloaded .crate under PROJECT_DIR/unpacked when Cargo did not).
# Both call the caller's die() on failure. Environment: CARGO (the cargo to use), CARGO_HOME.

crate_fetch() {
	local proj=$1 name=$2 cargo_cmd=${CARGO:-$(command -v cargo || true)} dep
	local cargo_home=${CARGO_HOME:-$HOME/.cargo}
	shift 2
	[[ -z $cargo_cmd && -x $cargo_home/bin/cargo ]] && cargo_cmd=$cargo_home/bin/cargo
	[[ -n $cargo_cmd ]] || die "cargo not found (install Rust with rustup, or set CARGO=...)"
	mkdir -p "$proj/src"
	: >"$proj/src/lib.rs"
	{
		echo "# Written by $(basename "$0"): only its dependencies matter (their bundled sources)."
		echo "[package]"
		echo "name = \"$name\""
		echo 'version = "0.0.0"'
		echo 'edition = "2021"'
		echo 'publish = false'
		echo
		echo '[dependencies]'
		for dep in "$@"; do echo "$dep"; done
	} >"$proj/Cargo.toml"
	"$cargo_cmd" fetch --quiet --manifest-path "$proj/Cargo.toml" ||
		die "cargo fetch failed in $proj (network? crates.io reachable?)"
}

crate_dir() {
	local proj=$1 name=$2 version=$3 sub=$4 d crate
	local cargo_home=${CARGO_HOME:-$HOME/.cargo}
	for d in "$cargo_home"/registry/src/*/"$name-$version" "$proj/unpacked/$name-$version"; do
		[[ -e $d/$sub ]] && { echo "$d/$sub"; return; }
	done
	for crate in "$cargo_home"/registry/cache/*/"$name-$version.crate"; do
		[[ -f $crate ]] || continue
		mkdir -p "$proj/unpacked"
		tar -xzf "$crate" -C "$proj/unpacked"
		[[ -e $proj/unpacked/$name-$version/$sub ]] &&
			{ echo "$proj/unpacked/$name-$version/$sub"; return; }
	done
	die "crate $name $version was fetched but $sub is not in it (looked under $cargo_home/registry)"
}
