#!/usr/bin/env bash
# scripts/probe-study.sh - the probe study (docs/probe-study.md): Aspen's Fig. 1 / Table 2 /
# Fig. 2 measured on six real programs built from source with and without Jiffy's probe pass.
#
#   scripts/probe-study.sh            fetch the sources and build everything, the --knobs
#                                     variants too (no timing)
#   scripts/probe-study.sh --check    build, then run each program once plain under "none" and
#                                     once with probes under "deadline" at a 20 us quantum:
#                                     checksums equal, preemptions > 0 with probes (~15 s)
#   scripts/probe-study.sh --sweep    build, then the full sweep (~15-25 min): every program x
#                                     quantum x mechanism, interleaved, REPEATS times; raw JSON
#                                     lines to docs/data/probe-study-<date>.jsonl and a summary
#                                     (bench/probe-study/summarize.py) next to them
#   scripts/probe-study.sh --knobs    build the pass-parameter variants, then Aspen Fig. 2's
#                                     question: how -jiffy-probe-every/-small-trip move cost and
#                                     timeliness (docs/data/probe-study-knobs-<date>.jsonl)
#   scripts/probe-study.sh --cost     the probe cost when nothing waits alone: plain and probes
#                                     under "none", interleaved (use --repeats 10 or more)
# Options (after the mode): --repeats N (default 3), --quanta "1000 200 ..." (microseconds),
# --programs "zlib zstd sqlite lua matmul hashtab", --out FILE.jsonl.
# Environment: BUILD_DIR (Jiffy's CMake build, default build/), JIFFY_PROBES_PLUGIN (the pass,
# default $BUILD_DIR/tools/probe-pass/JiffyProbes.so), PROBE_STUDY_OUT (objects and binaries,
# default $BUILD_DIR/probe-study), XDG_CACHE_HOME (the throwaway Cargo project), CARGO,
# VERBOSE=1 (show the compiler commands), RUN_TIMEOUT_S (one run's limit, default 20: a run
# past it is recorded as such).
#
# The sources are never committed: a throwaway Cargo project in
# ${XDG_CACHE_HOME:-$HOME/.cache}/jiffy/probe-sources depends on the crates that bundle them
# (pinned), `cargo fetch` downloads them, and the unpacked crates under Cargo's registry are
# compiled by bench/probe-study/Makefile. Every run's checksum must equal every other run's of
# the same program (builds, mechanisms, quanta): the script fails loudly otherwise.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${BUILD_DIR:-$root/build}
out=${PROBE_STUDY_OUT:-$build/probe-study}
plugin=${JIFFY_PROBES_PLUGIN:-$build/tools/probe-pass/JiffyProbes.so}
cache=${XDG_CACHE_HOME:-$HOME/.cache}/jiffy/probe-sources

die() { echo "probe-study: $*" >&2; exit 1; }

mode=build
repeats=3
quanta="1000 200 100 50 20 10 5"
programs="zlib zstd sqlite lua matmul hashtab"
jsonl=""
run_timeout=${RUN_TIMEOUT_S:-20}
case ${1:-} in
--check) mode=check; shift ;;
--sweep) mode=sweep; shift ;;
--knobs) mode=knobs; shift ;;
--cost) mode=cost; shift ;;
"" | --build) shift || true ;;
-h | --help) sed -n '2,25p' "$0"; exit 0 ;;
*) die "unknown mode '$1' (--check, --sweep, --knobs, --cost or nothing)" ;;
esac
while (($#)); do
	case $1 in
	--repeats) repeats=$2; shift 2 ;;
	--quanta) quanta=$2; shift 2 ;;
	--programs) programs=$2; shift 2 ;;
	--out) jsonl=$2; shift 2 ;;
	*) die "unknown option '$1'" ;;
	esac
done
[[ $repeats =~ ^[1-9][0-9]*$ ]] || die "--repeats wants a positive number, got '$repeats'"

# ---- sources -------------------------------------------------------------------------------
# name:version of each crate, and the directory inside it that the Makefile wants.
crates=(
	"lua-src:547.0.0:lua-5.4.7"
	"libsqlite3-sys:0.30.1:sqlite3"
	"libz-sys:1.1.31:src/zlib"
	"zstd-sys:2.1.3+zstd.1.5.7:zstd/lib"
)

# shellcheck source=scripts/crate-source.sh
. "$root/scripts/crate-source.sh"
fetch_sources() {
	crate_fetch "$cache" jiffy-probe-sources \
		'lua-src = "=547.0.0"' \
		'libsqlite3-sys = { version = "=0.30.1", features = ["bundled"] }' \
		'libz-sys = { version = "=1.1.31", default-features = false, features = ["static"] }' \
		'zstd-sys = { version = "=2.1.3", default-features = false }'
}

declare -A srcdir
locate_sources() {
	local c name version sub
	for c in "${crates[@]}"; do
		IFS=: read -r name version sub <<<"$c"
		srcdir[$name]=$(crate_dir "$cache" "$name" "$version" "$sub")
	done
}

# ---- build ---------------------------------------------------------------------------------
variants="plain probes"
knob_variants="smalltrip0 smalltrip256 smalltrip1024 smalltrip4096 every16 latchend"
[[ $mode == knobs || $mode == build ]] && variants="$variants $knob_variants"

build_all() {
	command -v clang-14 >/dev/null || die "clang-14 not found (apt-get install clang-14)"
	if [[ ! -f $build/libjiffy.a ]]; then
		cmake --build "$build" --target jiffy >&2 ||
			die "no $build/libjiffy.a and building it failed (configure with cmake -B $build first)"
	fi
	if [[ ! -f $plugin ]]; then
		if [[ -f $root/tools/probe-pass/CMakeLists.txt && -f $build/build.ninja ]] &&
			grep -q JiffyProbes "$build/build.ninja"; then
			cmake --build "$build" --target JiffyProbes >&2 || true
		fi
		[[ -f $plugin ]] || die "the probe pass is missing: $plugin (build Jiffy with clang-14 \
and llvm-14-dev installed, or set JIFFY_PROBES_PLUGIN)"
	fi
	# A copy: a rebuild of Jiffy while the study runs must not change what it links.
	mkdir -p "$out"
	cp -p "$build/libjiffy.a" "$out/libjiffy.a"
	make -C "$root/bench/probe-study" -j"$(nproc)" --no-print-directory $([[ -n ${VERBOSE:-} ]] || echo -s) \
		OUT="$out" PLUGIN="$plugin" JIFFY_LIB="$out/libjiffy.a" JIFFY_INC="$root/include" \
		ZLIB_DIR="${srcdir[libz-sys]}" ZSTD_DIR="${srcdir[zstd-sys]}" \
		SQLITE_DIR="${srcdir[libsqlite3-sys]}" LUA_DIR="${srcdir[lua-src]}" \
		VARIANTS="$variants" PROGRAMS="$programs" >&2 ||
		die "building the programs failed"
}

# ---- running -------------------------------------------------------------------------------
declare -A want_sum # program -> the checksum every run must give
failures=0

# run VARIANT PROGRAM MECHANISM QUANTUM_US [extra args]: one run; its JSON line in $line ("" if
# it failed). Not in a subshell: it records the checksums and failures. A run that does not end
# within $run_timeout seconds is a result, not a failure (signals at 5 us can livelock a program
# that lives in libc): its line says "timeout_s" and has no checksum.
line=""
run() {
	local variant=$1 prog=$2 mech=$3 q=$4 sum rc=0
	shift 4
	line=$(JIFFY_WORKERS=1 JIFFY_PREEMPT=$mech JIFFY_QUANTUM_US=$q \
		timeout "$run_timeout" "$out/$variant/study-$prog" "$@") || rc=$?
	if ((rc == 124)) && [[ $mode != check ]]; then
		echo "probe-study: $prog ($variant) under $mech q=$q us did not end in $run_timeout s" >&2
		line="{\"program\":\"$prog\",\"build\":\"$variant\",\"mechanism\":\"$mech\",\"quantum_us\":$q,\"timeout_s\":$run_timeout}"
		return 0
	fi
	if ((rc != 0)); then
		echo "probe-study: FAILED (exit $rc): $prog ($variant) under $mech q=$q us" >&2
		failures=$((failures + 1))
		line=""
		return 0
	fi
	sum=$(sed -n 's/.*"checksum":"\([0-9a-f]*\)".*/\1/p' <<<"$line")
	if [[ -z ${want_sum[$prog]:-} ]]; then
		want_sum[$prog]=$sum
	elif [[ $sum != "${want_sum[$prog]}" ]]; then
		echo "probe-study: CHECKSUM MISMATCH: $prog ($variant) under $mech q=$q us gave $sum," \
			"other runs ${want_sum[$prog]}: the program is not bit-exact here" >&2
		failures=$((failures + 1))
	fi
}

field() { sed -n "s/.*\"$2\":\\([0-9.]*\\).*/\\1/p" <<<"$1"; }

available() { "$out/plain/study-${programs%% *}" --available "$1" 2>/dev/null | grep -qx 1; }

check() {
	local prog a b p
	for prog in $programs; do
		run plain "$prog" none 20
		a=$line
		run probes "$prog" deadline 20
		b=$line
		[[ -n $a && -n $b ]] || continue
		p=$(field "$b" preempts)
		printf 'probe-study: %-8s checksum %s  plain/none %6.0f ms  probes/deadline q=20us %6.0f ms, %s preemptions, interval p50 %s p99 %s us\n' \
			"$prog" "${want_sum[$prog]}" "$(($(field "$a" elapsed_ns) / 1000000))" \
			"$(($(field "$b" elapsed_ns) / 1000000))" "$p" \
			"$(field "$b" interval_p50_us)" "$(field "$b" interval_p99_us)"
		if [[ ${p:-0} -eq 0 ]]; then
			echo "probe-study: FAILED: $prog with probes was never preempted under deadline" >&2
			failures=$((failures + 1))
		fi
	done
	((failures == 0)) || die "$failures check(s) failed"
	echo "probe-study: check passed (${programs// /, })"
}

machine_line() {
	local cpu kernel commit dirty
	cpu=$(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -1)
	kernel=$(uname -r)
	commit=$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)
	dirty=$(git -C "$root" status --porcelain -- src include 2>/dev/null | wc -l)
	printf '{"kind":"machine","date":"%s","cpu":"%s","cpus":%s,"kernel":"%s","commit":"%s","src_files_modified":%s,"clang":"%s","loadavg":"%s","mode":"%s","repeats":%s,"quanta":"%s"}\n' \
		"$(date -u +%FT%TZ)" "$cpu" "$(nproc)" "$kernel" "$commit" "$dirty" \
		"$(clang-14 --version | head -1)" "$(cut -d' ' -f1-3 /proc/loadavg)" "$mode" \
		"$repeats" "$quanta"
}

# The configurations of one repeat, one per line: variant program mechanism quantum.
sweep_configs() {
	local prog q auto=$1
	for prog in $programs; do
		echo "plain $prog none 100"
		echo "probes $prog none 100"
		for q in $quanta; do
			echo "plain $prog timer $q"
			echo "probes $prog deadline $q"
			if ((auto)); then
				echo "plain $prog auto $q"
				echo "probes $prog auto $q"
			fi
		done
	done
}

# The probe cost when nothing waits, alone: plain and probes under "none", many repeats.
cost_configs() {
	local prog
	for prog in $programs; do
		echo "plain $prog none 100"
		echo "probes $prog none 100"
	done
}

knob_configs() {
	local prog v
	for prog in $programs; do
		echo "plain $prog none 100"
		for v in ${variants#plain }; do
			echo "$v $prog none 100"
			echo "$v $prog deadline 20"
		done
	done
}

measure() {
	local kind=$1 auto=0 rep cfg variant prog mech q line n=0 total t0
	[[ -n $jsonl ]] || jsonl=$root/docs/data/probe-study-$([[ $kind != sweep ]] && echo "$kind-")$(date +%F).jsonl
	mkdir -p "$(dirname "$jsonl")"
	if [[ $kind == sweep ]] && available auto; then auto=1; fi
	[[ $kind == sweep && $auto == 0 ]] &&
		echo "probe-study: this Jiffy has no 'auto' mechanism: measuring timer, deadline, none" >&2
	machine_line >>"$jsonl"
	# Probe counts first (untimed): how many probes each program executes.
	for prog in $programs; do
		for variant in $variants; do
			[[ $variant == plain ]] && continue
			run "$variant" "$prog" none 100 --count-probes
			[[ -n $line ]] || continue
			python3 "$root/bench/probe-study/sites.py" "$out/$variant/study-$prog" \
				<<<"$line" >>"$jsonl" || echo "$line" >>"$jsonl"
		done
	done
	local configs
	case $kind in
	sweep) configs=$(sweep_configs $auto) ;;
	knobs) configs=$(knob_configs) ;;
	cost) configs=$(cost_configs) ;;
	esac
	total=$(($(wc -l <<<"$configs") * repeats))
	t0=$SECONDS
	for ((rep = 1; rep <= repeats; rep++)); do
		# Interleaved: every configuration once per repeat, in an order that differs per repeat.
		while read -r variant prog mech q; do
			run "$variant" "$prog" "$mech" "$q"
			n=$((n + 1))
			[[ -n $line ]] && echo "{\"rep\":$rep,${line#\{}" >>"$jsonl"
			printf '\rprobe-study: %s %d/%d (%d s)   ' "$kind" "$n" "$total" $((SECONDS - t0)) >&2
		done < <(shuf --random-source=<(yes "probe-study $rep") <<<"$configs")
	done
	echo >&2
	echo "probe-study: $n runs in $((SECONDS - t0)) s, raw data in $jsonl" >&2
	local py=python3
	[[ -x $root/.venv/bin/python ]] && py=$root/.venv/bin/python
	"$py" "$root/bench/probe-study/summarize.py" "$jsonl" >"${jsonl%.jsonl}.md" ||
		die "summarize.py failed on $jsonl"
	echo "probe-study: summary in ${jsonl%.jsonl}.md" >&2
	((failures == 0)) || die "$failures run(s) FAILED or gave a different checksum (see above)"
}

fetch_sources
locate_sources
build_all
case $mode in
build) echo "probe-study: built in $out (${variants// /, })" ;;
check) check ;;
sweep) measure sweep ;;
knobs) measure knobs ;;
cost) measure cost ;;
esac
