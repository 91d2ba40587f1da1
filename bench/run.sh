#!/usr/bin/env bash
# bench/run.sh - build and run the microbenchmarks of Jiffy and its peers in one go and print one
# comparison table.
#
# Owns: building the bench binaries (CMake targets jiffy_bench, pthread_bench, fiber_bench; the Go
# peer with `go build`), running them one after the other on this machine, and the report: the
# machine, a table of min ns/op per runtime with peer/jiffy ratios, the same for the medians, and
# notes. A missing or failing peer is a note and a "missing"/"failed" column, never a failed run;
# the exit status is non-zero only when Jiffy's own benchmark could not be built or run.
#
# Usage: bench/run.sh [BUILD_DIR [OP...]]
#   BUILD_DIR  CMake build directory (default: <repo>/build; configured with the project's
#              defaults if it has no CMakeCache.txt yet).
#   OP...      only these ops (yield spawn_join ctx_switch wakeup_xworker mutex_pingpong
#              condvar_pingpong).
# Environment: BENCH_OUT=file  also write the raw "<runtime>\t<op>\t<min_ns>\t<median_ns>" lines;
#              BENCH_QUICK=1   timed runs of ~20 ms instead of ~100 ms (a quick look, noisier);
#              GO=path         the go command to use; JIFFY_*  passed on to jiffy_bench.
# Installing the peers' packages is not done here (see bench/README.md).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/.." && pwd)
build=${1:-$root/build}
if (($# > 0)); then shift; fi
ops=("$@")

runtimes=(jiffy boost_fiber go pthread)
peers=(boost_fiber go pthread)
all_ops=(yield spawn_join ctx_switch wakeup_xworker mutex_pingpong condvar_pingpong)
declare -A unit=(
	[yield]="per yield call" [spawn_join]="per spawn+join" [ctx_switch]="per one-way switch"
	[wakeup_xworker]="per round trip" [mutex_pingpong]="per handoff"
	[condvar_pingpong]="per handoff"
)

for op in ${ops[@]+"${ops[@]}"}; do
	if [[ " ${all_ops[*]} " != *" $op "* ]]; then
		echo "bench/run.sh: unknown op '$op'; ops: ${all_ops[*]}" >&2
		exit 2
	fi
done

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
notes=()
declare -A state # runtime -> ok | missing | failed
declare -A min med

note() { notes+=("$*"); }
progress() { printf 'bench/run.sh: %s\n' "$*" >&2; }

# Keep the last lines of a log as notes, indented under a heading.
note_log() {
	local heading=$1 log=$2
	note "$heading"
	while IFS= read -r line; do note "    $line"; done < <(tail -n 15 "$log")
}

# ---- build ------------------------------------------------------------------------------------

cmake_ok=1
if [[ ! -f $build/CMakeCache.txt ]]; then
	gen=()
	if command -v ninja >/dev/null; then gen=(-G Ninja); fi
	progress "configuring $build"
	if ! cmake -S "$root" -B "$build" "${gen[@]}" >"$work/configure.log" 2>&1; then
		cmake_ok=0
		note_log "cmake configure failed ($build):" "$work/configure.log"
	fi
fi
mkdir -p "$build"
build=$(cd "$build" && pwd)
cache_get() { sed -n "s/^$1:[A-Z]*=//p" "$build/CMakeCache.txt" 2>/dev/null | head -n 1; }

declare -A bin
build_target() { # runtime target
	local rt=$1 target=$2
	progress "building $target"
	if ! cmake --build "$build" --target "$target" >"$work/build-$target.log" 2>&1; then
		state[$rt]=failed
		note_log "$rt: building $target failed:" "$work/build-$target.log"
		return
	fi
	local path=$build/bench/$target
	[[ -x $path ]] || path=$(find "$build" -type f -name "$target" -perm -u+x | head -n 1)
	if [[ -z $path ]]; then
		state[$rt]=failed
		note "$rt: $target was built but not found under $build"
		return
	fi
	bin[$rt]=$path
}

# A cache configured before Boost.Fiber was installed keeps its NOTFOUND (make test configures
# ./build before make bench installs the peers): forget Boost's cached search and look again.
if ((cmake_ok)) && [[ $(cache_get JIFFY_BENCH_HAVE_BOOST_FIBER) != ON && -f /usr/include/boost/fiber/all.hpp ]]; then
	progress "Boost.Fiber installed since $build was configured: reconfiguring"
	stale=$(sed -n 's/^\(_*[Bb]oost[A-Za-z0-9_]*\):[A-Z]*=.*NOTFOUND$/\1/p' "$build/CMakeCache.txt")
	if ! cmake $(printf -- '-U%s ' $stale) -S "$root" -B "$build" >"$work/reconfigure.log" 2>&1; then
		note_log "cmake reconfigure for Boost.Fiber failed ($build):" "$work/reconfigure.log"
	fi
fi

if ((cmake_ok)); then
	build_target jiffy jiffy_bench
	build_target pthread pthread_bench
	if [[ $(cache_get JIFFY_BENCH_HAVE_BOOST_FIBER) == ON ]]; then
		build_target boost_fiber fiber_bench
	else
		state[boost_fiber]=missing
		note "boost_fiber: Boost.Fiber not found by CMake: install libboost-fiber-dev and reconfigure"
	fi
else
	state[jiffy]=failed
	state[pthread]=failed
	state[boost_fiber]=failed
fi

find_go() {
	local g
	for g in "${GO:-}" /usr/local/go/bin/go "$(command -v go || true)" /usr/lib/go/bin/go; do
		if [[ -n $g && -x $g ]]; then
			echo "$g"
			return
		fi
	done
}
go_cmd=$(find_go)
if [[ -z $go_cmd ]]; then
	state[go]=missing
	note "go: no Go toolchain found (install golang-go, or set GO=/path/to/go)"
else
	mkdir -p "$build/bench"
	# No HOME (some containers): keep Go's caches in the build folder.
	if [[ -z ${HOME:-} ]]; then
		export GOCACHE=${GOCACHE:-$build/bench/go-cache} GOPATH=${GOPATH:-$build/bench/go-path}
	fi
	progress "building go_bench with $go_cmd"
	if (cd "$here/go" && GOTOOLCHAIN=local GOFLAGS= "$go_cmd" build -o "$build/bench/go_bench" .) \
		>"$work/build-go.log" 2>&1; then
		bin[go]=$build/bench/go_bench
	else
		state[go]=failed
		note_log "go: building bench/go failed:" "$work/build-go.log"
	fi
fi

# ---- run --------------------------------------------------------------------------------------

run_one() { # runtime
	local rt=$1 rc=0
	local out=$work/$rt.out err=$work/$rt.err
	local -a to=()
	if command -v timeout >/dev/null; then to=(timeout 120); fi
	progress "running $rt (${bin[$rt]})"
	"${to[@]}" "${bin[$rt]}" ${ops[@]+"${ops[@]}"} >"$out" 2>"$err" || rc=$?
	local rt_l op mn md
	while IFS=$'\t' read -r rt_l op mn md; do
		[[ $rt_l == "$rt" && -n $op && -n $md ]] || continue
		min[$rt,$op]=$mn
		med[$rt,$op]=$md
		printf '%s\t%s\t%s\t%s\n' "$rt_l" "$op" "$mn" "$md" >>"$work/raw"
	done <"$out"
	if ((rc != 0)); then
		state[$rt]=failed
		local why=""
		if ((rc == 124)); then
			why=" (timed out after 120 s)"
		elif ((rc > 128)); then
			why=" (killed by signal $((rc - 128)))"
		fi
		note "$rt: ${bin[$rt]##*/} exited with status $rc$why"
	else
		state[$rt]=ok
	fi
	if [[ -s $err ]]; then note_log "$rt: stderr:" "$err"; fi
}

# How many CPUs' worth of work something else did during 1 s (from /proc/stat).
busy_cpus() {
	local a b
	a=$(head -n 1 /proc/stat)
	sleep 1
	b=$(head -n 1 /proc/stat)
	awk -v a="$a" -v b="$b" -v n="$(nproc)" 'BEGIN {
		split(a, x); split(b, y); tot = 0
		for (i = 2; i <= 9; i++) tot += y[i] - x[i]
		idle = (y[5] - x[5]) + (y[6] - x[6])
		printf "%.2f", (tot > 0 ? n * (tot - idle) / tot : 0) }'
}
busy_before=$(busy_cpus)
if awk -v b="$busy_before" 'BEGIN { exit !(b >= 0.2) }'; then
	note "the machine was busy before the run ($busy_before CPUs in use): numbers are noisier"
fi
: >"$work/raw"
for rt in "${runtimes[@]}"; do
	if [[ -n ${bin[$rt]:-} ]]; then run_one "$rt"; fi
done

# ---- report -----------------------------------------------------------------------------------

cell() { # runtime op kind(min|med)
	local rt=$1 op=$2 v
	if [[ $3 == min ]]; then v=${min[$rt,$op]:-}; else v=${med[$rt,$op]:-}; fi
	if [[ -n $v ]]; then
		echo "$v"
	elif [[ ${state[$rt]:-} == missing ]]; then
		echo missing
	elif [[ ${state[$rt]:-} == failed ]]; then
		echo failed
	else
		echo -
	fi
}

ratio() { # peer_value jiffy_value
	awk -v p="$1" -v j="$2" 'BEGIN {
		if (p ~ /^[0-9.]+$/ && j ~ /^[0-9.]+$/ && j + 0 > 0) printf "%.2fx", p / j; else printf "-" }'
}

table() { # kind title
	local kind=$1 title=$2 op rt
	echo "$title"
	printf '%-18s %47s | %35s |\n' "" "ns per op" "x vs jiffy (peer / jiffy)"
	printf '%-18s %11s %11s %11s %11s | %11s %11s %11s | %s\n' op "${runtimes[@]}" "${peers[@]}" unit
	for op in "${all_ops[@]}"; do
		if ((${#ops[@]} > 0)) && [[ " ${ops[*]} " != *" $op "* ]]; then continue; fi
		local -a v=() r=()
		for rt in "${runtimes[@]}"; do v+=("$(cell "$rt" "$op" "$kind")"); done
		local j=${v[0]}
		for rt in "${peers[@]}"; do r+=("$(ratio "$(cell "$rt" "$op" "$kind")" "$j")"); done
		printf '%-18s %11s %11s %11s %11s | %11s %11s %11s | %s\n' "$op" "${v[@]}" "${r[@]}" \
			"${unit[$op]}"
	done
}

cpu_model=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo 2>/dev/null | head -n 1)
build_type=$(cache_get CMAKE_BUILD_TYPE)
echo "Jiffy microbenchmarks (bench/run.sh)"
echo "date:     $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
echo "machine:  $(nproc) CPUs, ${cpu_model:-unknown CPU}, Linux $(uname -r)"
echo "idle:     $busy_before CPUs busy in the second before the run, $(busy_cpus) after it"
echo "build:    $build (CMAKE_BUILD_TYPE=${build_type:-none})"
boost_version=missing
if [[ $(cache_get JIFFY_BENCH_HAVE_BOOST_FIBER) == ON ]]; then
	boost_version=$(cache_get JIFFY_BENCH_BOOST_VERSION)
fi
go_version=missing
if [[ -n $go_cmd ]]; then go_version=$("$go_cmd" version 2>/dev/null | awk '{print $3}'); fi
echo "peers:    Boost.Fiber ${boost_version:-unknown}, Go ${go_version:-unknown}"
run_ms=100
if [[ ${BENCH_QUICK:-} == 1 ]]; then run_ms=20; fi
echo "method:   best (min) and median of 5 timed runs of ~$run_ms ms each, in ns per op;" \
	"ratio = peer / jiffy"
echo
table min "ns per op, best of 5 (lower is better):"
echo
table med "ns per op, median of 5:"
if [[ $build_type != Release && $build_type != RelWithDebInfo ]]; then
	note "the build type is '${build_type:-none}': build with RelWithDebInfo or Release" \
		"for numbers that mean something"
fi
if (($(nproc) < 2)); then note "fewer than 2 CPUs: wakeup_xworker cannot run on two cores"; fi
if ((${#notes[@]} > 0)); then
	echo
	echo "notes:"
	printf '  %s\n' "${notes[@]}"
fi
if [[ -n ${BENCH_OUT:-} ]]; then
	cp "$work/raw" "$BENCH_OUT"
	echo
	echo "raw lines written to $BENCH_OUT"
fi
[[ ${state[jiffy]:-} == ok ]]
