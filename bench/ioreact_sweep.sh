#!/bin/sh
# bench/ioreact_sweep.sh - the sweep behind docs/netpoll-irq.md's table: ioreact_bench under
# every configuration, repetitions interleaved (one pass over all configurations per repetition,
# each pass under `flock /tmp/jiffy-timing.lock`), then medians with min..max per configuration.
#
# usage: bench/ioreact_sweep.sh [BIN] [REPS] [SAMPLES] [WORKERS...]
#   BIN      build-dev/bench/ioreact_bench    REPS 3    SAMPLES 400    WORKERS "1 2"
# Environment: SET=ab a shorter list (see configs()); TASKSET="taskset -c 0,1" runs every process on those CPUs; OUT=file keeps the raw
# lines (default: ioreact-raw.txt in the current directory); LOCK=0 skips the flock (on a machine
# of one's own).
set -eu
BIN=${1:-build-dev/bench/ioreact_bench}
REPS=${2:-3}
SAMPLES=${3:-400}
shift $(( $# < 3 ? $# : 3 ))
WORKERS=${*:-1 2}
OUT=${OUT:-ioreact-raw.txt}
TASKSET=${TASKSET:-}
LOCK=${LOCK:-1}
HERE=$(cd "$(dirname "$0")" && pwd)

# "mechanism quantum_us netpoll_us irq" per configuration; SET=ab: only the A/B of polling
# against the interrupt at each mechanism's usual settings (more repetitions for the same time)
configs() {
	if [ "${SET:-full}" = ab ]; then
		printf '%s\n' "none - 5 0" "timer 100 5 0" "timer 100 5 1" "deadline 100 5 0" \
			"deadline 100 5 1" "auto - 5 0" "auto - 5 1" "auto 100 500 0"
		return
	fi
	echo "none - 5 0"
	for m in timer deadline auto; do
		for np in 0 5 20 100 500; do
			echo "$m 100 $np 0"
		done
		echo "$m 100 5 1"
	done
	echo "auto - 5 0"   # the library's defaults (auto, 20 us quantum)
	echo "auto - 5 1"
}

pass() {
	for w in $WORKERS; do
		configs | while read -r m q np irq; do
			if [ "$q" = "-" ]; then
				env JIFFY_WORKERS="$w" JIFFY_PREEMPT="$m" JIFFY_NETPOLL_US="$np" \
					JIFFY_NETPOLL_IRQ="$irq" $TASKSET "$BIN" --samples "$SAMPLES" --seed "$1"
			else
				env JIFFY_WORKERS="$w" JIFFY_PREEMPT="$m" JIFFY_QUANTUM_US="$q" \
					JIFFY_NETPOLL_US="$np" JIFFY_NETPOLL_IRQ="$irq" $TASKSET "$BIN" \
					--samples "$SAMPLES" --seed "$1"
			fi
		done
		# the floor: the same round trip with nothing computing (an idle worker parks in
		# epoll), without and with the interrupt thread
		env JIFFY_WORKERS="$w" JIFFY_PREEMPT=auto $TASKSET "$BIN" --samples "$SAMPLES" --hogs 0 \
			--seed "$1"
		env JIFFY_WORKERS="$w" JIFFY_PREEMPT=auto JIFFY_NETPOLL_IRQ=1 $TASKSET "$BIN" \
			--samples "$SAMPLES" --hogs 0 --seed "$1"
	done
}

if [ "${IOREACT_PASS:-}" ]; then # one pass, called below under the lock
	pass "$IOREACT_PASS"
	exit 0
fi
: > "$OUT"
r=1
while [ "$r" -le "$REPS" ]; do
	if [ "$LOCK" = 1 ]; then
		SET=${SET:-full} IOREACT_PASS=$r flock /tmp/jiffy-timing.lock "$0" "$BIN" "$REPS" "$SAMPLES" $WORKERS >> "$OUT"
	else
		pass "$r" >> "$OUT"
	fi
	r=$((r + 1))
done
python3 "$HERE/ioreact_summary.py" "$OUT"
