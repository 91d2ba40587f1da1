#!/usr/bin/env bash
# bench/run_sync.sh - build and run the synchronization-primitive benchmarks of Jiffy and its peers
# (Boost.Fiber, Go, pthreads) in one go and print one table per primitive, then Skyloft's Table 7
# rows beside the paper's numbers.
#
# Owns: building jiffy_sync_bench, pthread_sync_bench, fiber_sync_bench (CMake) and the Go peer
# (`go build` of bench/go, run as `go_bench sync`), running them one after the other, and the
# report: the machine, one table per primitive with the median ns/op of each runtime and its spread
# (min-max of the timed runs), the Table 7 table (yield, spawn+join and condvar ping-pong come from
# bench/run.sh's ops: from the file BENCH_CORE names, else measured here), and notes: every "n/a"
# with its reason, missing peers, failures. A missing or failing peer is a note, never a failed
# run; the exit status is non-zero only when Jiffy's own benchmark could not be built or run.
#
# Usage: bench/run_sync.sh [BUILD_DIR [OP...]]     measure (one round) and print the tables
#        bench/run_sync.sh --tables RAW...          print the tables of earlier rounds' raw files:
#                                                  median of the rounds' medians, min-max over all
# Environment: BENCH_JIFFY_VARIANTS="VAR=VAL ...;..."  run Jiffy again with each ';'-separated set
#                               of variables, as extra columns (default JIFFY_PREEMPT=none: what
#                               the default preemption mechanism adds; empty: none)
#              BENCH_OUT=file   write the raw "<runtime>\t<op>\t<min>\t<median>\t<max>" lines
#              BENCH_CORE=file  the raw lines of bench/run.sh (its BENCH_OUT) for Table 7's rows
#              BENCH_QUICK=1    timed runs of ~20 ms instead of ~100 ms; GO=path; JIFFY_* as run.sh
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/.." && pwd)

runtimes=(jiffy boost_fiber go pthread)
all_ops=(mutex_uncontended mutex_contended rwlock_rd_uncontended rwlock_read90 rwlock_write90
	sem_uncontended sem_pingpong barrier_round once_fast waitgroup_round chan_buffered
	chan_unbuffered_pingpong chan_mpmc)
t7_core_ops=(yield spawn_join condvar_pingpong)

# ---- the report, from raw files --------------------------------------------------------------

# tables RAW... - the per-primitive tables and Table 7 from raw lines (5 or 4 fields: run.sh's
# lines have no max). Several files are rounds: the cell is the median of their medians.
tables() {
	awk -F '\t' -v rts="${runtimes[*]}" -v states="${STATES:-}" '
	function median(list,   n, a, i, j, x) {
		n = split(list, a, " ")
		for (i = 2; i <= n; i++) { x = a[i] + 0; for (j = i - 1; j >= 1 && a[j] + 0 > x; j--) a[j + 1] = a[j]; a[j + 1] = x }
		if (n % 2) return a[(n + 1) / 2]
		return (a[n / 2] + a[n / 2 + 1]) / 2
	}
	function fmt(v) { return v >= 1000 ? sprintf("%.0f", v) : sprintf("%.1f", v) }
	function cell(rt, op,   s) {
		if (index(" " states " ", " " rt "=")) { s = substr(states, index(states, rt "=") + length(rt) + 1); sub(/ .*/, "", s); return s }
		if ((rt, op) in na) return "n/a"
		if (!((rt, op) in meds)) return "-"
		s = fmt(median(meds[rt, op]))
		if ((rt, op) in mx) s = s " [" fmt(mn[rt, op]) "-" fmt(mx[rt, op]) "]"
		else s = s " [min " fmt(mn[rt, op]) "]"
		return s
	}
	{
		rt = $1; op = $2
		if (rt ~ /^jiffy:/ && !(rt in isvar)) { isvar[rt] = 1; vars[++nvars] = rt }
		if ($3 == "n/a") { na[rt, op] = 1; next }
		if ($3 !~ /^[0-9.]+$/) next
		meds[rt, op] = ((rt, op) in meds ? meds[rt, op] " " : "") $4
		if (!((rt, op) in mn) || $3 + 0 < mn[rt, op]) mn[rt, op] = $3 + 0
		if (NF >= 5 && $5 ~ /^[0-9.]+$/ && (!((rt, op) in mx) || $5 + 0 > mx[rt, op])) mx[rt, op] = $5 + 0
		rounds[rt, op]++
	}
	function table(title, ops, units,   n, o, u, i, k, line, any, rows) {
		n = split(ops, o, ";"); split(units, u, ";")
		rows = 0
		for (i = 1; i <= n; i++) {
			any = 0
			for (k = 1; k <= nrt; k++) if (cell(rt_[k], o[i]) != "-") any = 1
			if (!any) { o[i] = ""; continue } # not run (an OP list without it)
			rows++
		}
		if (!rows) return
		printf "%s\n", title
		printf "| %-52s |", "case"
		for (k = 1; k <= nrt; k++) printf " %-24s |", rtname[rt_[k]]
		printf "\n|%s|", "------------------------------------------------------"
		for (k = 1; k <= nrt; k++) printf "%s|", "--------------------------:"
		printf "\n"
		for (i = 1; i <= n; i++) {
			if (o[i] == "") continue
			line = sprintf("| %-52s |", o[i] " (" u[i] ")")
			for (k = 1; k <= nrt; k++) line = line sprintf(" %24s |", cell(rt_[k], o[i]))
			print line
		}
		print ""
	}
	END {
		split(rts, base, " ")
		nrt = 0
		rt_[++nrt] = base[1]
		for (k = 1; k <= nvars; k++) rt_[++nrt] = vars[k]
		for (k = 2; k in base; k++) rt_[++nrt] = base[k]
		rtname["jiffy"] = "Jiffy"; rtname["boost_fiber"] = "Boost.Fiber"; rtname["go"] = "Go"
		rtname["pthread"] = "pthreads"
		for (k = 1; k <= nvars; k++) { v = vars[k]; sub(/^jiffy:/, "", v); rtname[vars[k]] = "Jiffy " v }
		print "ns per op: median of the timed runs [min-max over them]; n/a: no such primitive (notes)"
		print ""
		table("mutex", "mutex_uncontended;mutex_contended",
			"lock+unlock;4 on 2 workers, per critical section")
		table("rwlock", "rwlock_rd_uncontended;rwlock_read90;rwlock_write90",
			"rdlock+unlock;4 on 2 workers, 90% reads;4 on 2 workers, 90% writes")
		table("semaphore", "sem_uncontended;sem_pingpong", "wait+post;per one-way handoff")
		table("barrier", "barrier_round", "4 parties on 2 workers, per round")
		table("once", "once_fast", "after init, per call")
		table("waitgroup", "waitgroup_round", "add(1)+done+wait")
		table("channels", "chan_buffered;chan_unbuffered_pingpong;chan_mpmc",
			"send+recv, capacity 64;per one-way handoff;2+2 on 2 workers, per item")
		table("condvar (bench/run.sh op: [min] only)", "condvar_pingpong", "per one-way handoff, one worker")
		print "Skyloft Table 7 (SOSP24, ns, on its own machine) beside this run (median [min-max])"
		split("jiffy go pthread boost_fiber", t7rt, " ")
		for (k = 1; k <= nvars; k++) t7rt[4 + k] = vars[k]
		printf "| %-10s | %15s | %10s | %15s |", "op", "Skyloft (paper)", "Go (paper)", "pthread (paper)"
		for (k = 1; k <= 4 + nvars; k++) printf " %22s |", rtname[t7rt[k]] " (here)"
		printf "\n|------------|----------------:|-----------:|----------------:|"
		for (k = 1; k <= 4 + nvars; k++) printf "%s|", "-----------------------:"
		printf "\n"
		split("Yield;Spawn;Mutex;Condvar", t7n, ";"); split("yield;spawn_join;mutex_uncontended;condvar_pingpong", t7o, ";")
		split("37;191;27;86", sk, ";"); split("108;503;25;262", gp, ";"); split("898;15418;28;2532", pp, ";")
		for (i = 1; i <= 4; i++) {
			printf "| %-10s | %15s | %10s | %15s |", t7n[i], sk[i], gp[i], pp[i]
			for (k = 1; k <= 4 + nvars; k++) printf " %22s |", cell(t7rt[k], t7o[i])
			printf "\n"
		}
		print ""
		print "Table 7 rows here: Yield = yield (per call, 2 runnable on one worker), Spawn = spawn_join (spawn"
		print "+ join of a no-op), Mutex = mutex_uncontended, Condvar = condvar_pingpong (one-way handoff on one"
		print "worker). Yield, Spawn and Condvar are bench/run.sh ops, whose lines carry min and median only."
	}' "$@"
}

if [[ ${1:-} == --tables ]]; then
	shift
	(($# > 0)) || { echo "usage: bench/run_sync.sh --tables RAW..." >&2; exit 2; }
	tables "$@"
	exit 0
fi

build=${1:-$root/build}
if (($# > 0)); then shift; fi
ops=("$@")
for op in ${ops[@]+"${ops[@]}"}; do
	if [[ " ${all_ops[*]} " != *" $op "* ]]; then
		echo "bench/run_sync.sh: unknown op '$op'; ops: ${all_ops[*]}" >&2
		exit 2
	fi
done

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
notes=()
declare -A state bin
note() { notes+=("$*"); }
progress() { printf 'bench/run_sync.sh: %s\n' "$*" >&2; }
note_log() {
	local heading=$1 log=$2
	note "$heading"
	while IFS= read -r line; do note "    $line"; done < <(tail -n 15 "$log")
}

# ---- build ------------------------------------------------------------------------------------

if [[ ! -f $build/CMakeCache.txt ]]; then
	gen=()
	if command -v ninja >/dev/null; then gen=(-G Ninja); fi
	progress "configuring $build"
	cmake -S "$root" -B "$build" "${gen[@]}" >"$work/configure.log" 2>&1 ||
		{ cat "$work/configure.log" >&2; exit 1; }
fi
build=$(cd "$build" && pwd)
cache_get() { sed -n "s/^$1:[A-Z]*=//p" "$build/CMakeCache.txt" 2>/dev/null | head -n 1; }

build_target() { # runtime target [core]
	local rt=$1 target=$2 key=${3:-sync}
	progress "building $target"
	if ! cmake --build "$build" --target "$target" >"$work/build-$target.log" 2>&1; then
		if [[ $key == sync ]]; then state[$rt]=failed; fi
		note_log "$rt: building $target failed:" "$work/build-$target.log"
		return
	fi
	bin[$rt,$key]=$build/bench/$target
}

build_target jiffy jiffy_sync_bench
build_target pthread pthread_sync_bench
have_fiber=0
if [[ $(cache_get JIFFY_BENCH_HAVE_BOOST_FIBER) == ON ]]; then
	have_fiber=1
	build_target boost_fiber fiber_sync_bench
else
	state[boost_fiber]=missing
	note "boost_fiber: Boost.Fiber not found by CMake: install libboost-fiber-dev and reconfigure"
fi

go_cmd=
for g in "${GO:-}" /usr/local/go/bin/go "$(command -v go || true)" /usr/lib/go/bin/go; do
	if [[ -n $g && -x $g ]]; then go_cmd=$g; break; fi
done
if [[ -z $go_cmd ]]; then
	state[go]=missing
	note "go: no Go toolchain found (install golang-go, or set GO=/path/to/go)"
else
	mkdir -p "$build/bench"
	if [[ -z ${HOME:-} ]]; then
		export GOCACHE=${GOCACHE:-$build/bench/go-cache} GOPATH=${GOPATH:-$build/bench/go-path}
	fi
	progress "building go_bench with $go_cmd"
	if (cd "$here/go" && GOTOOLCHAIN=local GOFLAGS= "$go_cmd" build -o "$build/bench/go_bench" .) \
		>"$work/build-go.log" 2>&1; then
		bin[go,sync]=$build/bench/go_bench
		bin[go,core]=$build/bench/go_bench
	else
		state[go]=failed
		note_log "go: building bench/go failed:" "$work/build-go.log"
	fi
fi

# Table 7's yield, spawn_join and condvar_pingpong: from bench/run.sh's raw lines, else measured.
core_raw=${BENCH_CORE:-}
if [[ -n $core_raw && ! -s $core_raw ]]; then
	note "BENCH_CORE=$core_raw is empty or missing: Table 7's core rows are measured here"
	core_raw=
fi
if [[ -n ${BENCH_JIFFY_VARIANTS-JIFFY_PREEMPT=none} && -n $core_raw ]]; then
	build_target jiffy jiffy_bench core # the variants' Table 7 core rows
fi
if [[ -z $core_raw ]]; then
	build_target jiffy jiffy_bench core
	build_target pthread pthread_bench core
	if ((have_fiber)); then build_target boost_fiber fiber_bench core; fi
fi

# ---- run --------------------------------------------------------------------------------------

# How many CPUs' worth of work something else did during 1 s (from /proc/stat; as run.sh).
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
run_one() { # runtime key args...
	local rt=$1 key=$2 rc=0
	shift 2
	local out=$work/$rt-$key.out err=$work/$rt-$key.err
	progress "running $rt ($key)"
	timeout 300 "${bin[$rt,$key]}" "$@" >"$out" 2>"$err" || rc=$?
	grep -E "^$rt	" "$out" >>"$work/raw" || true
	if ((rc != 0)); then
		[[ $key == sync ]] && state[$rt]=failed
		local why=""
		if ((rc == 124)); then why=" (timed out after 300 s)"; fi
		note "$rt: ${bin[$rt,$key]##*/} $* exited with status $rc$why"
	elif [[ $key == sync ]]; then
		state[$rt]=ok
	fi
	while IFS= read -r line; do
		if [[ $line == *": n/a: "* ]]; then note "$line"; else note "$rt stderr: $line"; fi
	done < <(tail -n 20 "$err")
}

for rt in "${runtimes[@]}"; do
	[[ -n ${bin[$rt,sync]:-} ]] || continue
	if [[ $rt == go ]]; then
		run_one go sync sync ${ops[@]+"${ops[@]}"}
	else
		run_one "$rt" sync ${ops[@]+"${ops[@]}"}
	fi
done
# Jiffy again under each variant's settings (a column "Jiffy <settings>"; its Table 7 core rows too).
IFS=';' read -r -a variants <<<"${BENCH_JIFFY_VARIANTS-JIFFY_PREEMPT=none}"
for v in ${variants[@]+"${variants[@]}"}; do
	read -r -a assigns <<<"$v"
	((${#assigns[@]} > 0)) || continue
	label="jiffy:$(IFS=' '; echo "${assigns[*]}")"
	for key in sync core; do
		[[ -n ${bin[jiffy,$key]:-} ]] || continue
		if [[ $key == core ]]; then
			((${#ops[@]} == 0)) || continue
			args=("${t7_core_ops[@]}")
		else
			args=(${ops[@]+"${ops[@]}"})
		fi
		progress "running jiffy ($key) with ${assigns[*]}"
		rc=0
		env "${assigns[@]}" timeout 300 "${bin[jiffy,$key]}" ${args[@]+"${args[@]}"} \
			>"$work/variant.out" 2>"$work/variant.err" || rc=$?
		awk -F '\t' -v l="$label" 'BEGIN { OFS = "\t" } $1 == "jiffy" { $1 = l; print }' \
			"$work/variant.out" >>"$work/raw"
		if ((rc != 0)); then note "jiffy with ${assigns[*]}: ${bin[jiffy,$key]##*/} exited with status $rc"; fi
	done
done
if [[ -n $core_raw ]]; then
	grep -E "	($(
		IFS='|'
		echo "${t7_core_ops[*]}"
	))	" "$core_raw" >>"$work/raw" || true
elif ((${#ops[@]} == 0)); then
	for rt in "${runtimes[@]}"; do
		[[ -n ${bin[$rt,core]:-} ]] || continue
		run_one "$rt" core "${t7_core_ops[@]}"
	done
fi

# ---- report -----------------------------------------------------------------------------------

cpu_model=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo 2>/dev/null | head -n 1)
echo "Jiffy synchronization-primitive benchmarks (bench/run_sync.sh)"
echo "date:     $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
echo "machine:  $(nproc) CPUs, ${cpu_model:-unknown CPU}, Linux $(uname -r)"
echo "idle:     $busy_before CPUs busy in the second before the run, $(busy_cpus) after it"
echo "build:    $build (CMAKE_BUILD_TYPE=$(cache_get CMAKE_BUILD_TYPE))"
go_version=missing
if [[ -n $go_cmd ]]; then go_version=$("$go_cmd" version 2>/dev/null | awk '{print $3}'); fi
echo "peers:    Boost.Fiber $( ((have_fiber)) && cache_get JIFFY_BENCH_BOOST_VERSION || echo missing)," \
	"Go $go_version, glibc $(ldd --version 2>/dev/null | awk 'NR == 1 {print $NF}')"
run_ms=100
if [[ ${BENCH_QUICK:-} == 1 ]]; then run_ms=20; fi
echo "jiffy:    JIFFY_* from the environment: $(env | grep -E '^JIFFY_' | tr '\n' ' ' || true)(none = defaults)"
echo "method:   5 timed runs of ~$run_ms ms per op after calibration; Table 7's core rows:" \
	"$([[ -n $core_raw ]] && echo "from $core_raw" || echo "measured here")"
echo
STATES=
for rt in "${runtimes[@]}"; do
	case ${state[$rt]:-} in
	missing | failed) STATES+=" $rt=${state[$rt]}" ;;
	esac
done
STATES=$STATES tables "$work/raw"
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
