#!/bin/sh
# check-e2e.sh - the probe pass end to end (test probe.e2e.deadline).
#
# Owns: the verdict over the two builds of e2e_spin.c. Usage: check-e2e.sh <probed> <plain>
# Under JIFFY_PREEMPT=deadline, one worker, a 50 us quantum: the probed build must be preempted
# (B runs in the first half of A's spin), the plain build must not be (B after A: this is what
# shows the check can fail), and both must print the same checksum.
set -eu
probed=$1 plain=$2
export JIFFY_PREEMPT=deadline JIFFY_WORKERS=1 JIFFY_QUANTUM_US=50
out_probed=$("$probed" preempted) || { echo "FAIL probed: $out_probed"; exit 1; }
echo "probed: $out_probed"
out_plain=$("$plain" not-preempted) || { echo "FAIL plain: $out_plain"; exit 1; }
echo "plain:  $out_plain"
sum_probed=${out_probed%% *}
sum_plain=${out_plain%% *}
if [ "$sum_probed" != "$sum_plain" ]; then
	echo "FAIL: checksums differ ($sum_probed with probes, $sum_plain without)"
	exit 1
fi
echo "probe e2e: ok (preempted with probes, not without, same $sum_probed)"
