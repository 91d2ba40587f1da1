#!/bin/sh
# sim/tests/test_cli.sh - jiffy-sim's command line.
# Proves: (1) every malformed input (bad spec, unknown policy or preset, bad numbers, missing
# trace or calibration file, conflicting flags) is refused with exit status 2 and a message that
# names the flag and the value, never a crash; (2) determinism: the same command and seed give
# byte-identical stdout, CSV and JSON, and another seed gives other numbers; (3) the CSV header
# is jiffy-load's, rows are appended, and the trace, file: and measured: inputs work; (4) a
# policy parameter set by --param [POLICY.]NAME=VALUE and by its old flag (--rr-slice) gives the
# same run, bad settings are refused naming the flag and the value, and the JSON report and the
# server name carry the policy's own table.
# Usage: test_cli.sh path/to/jiffy-sim
set -u
SIM=${1:?usage: test_cli.sh path/to/jiffy-sim}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fails=0

# refuse EXPECTED_TEXT ARGS...: exit status 2 and EXPECTED_TEXT in the message.
refuse() {
	want=$1; shift
	"$SIM" "$@" >"$T/out" 2>"$T/err"
	rc=$?
	if [ "$rc" -eq 2 ] && grep -qF -- "$want" "$T/err"; then
		echo "   ok      refused: $* -> $(head -c 150 "$T/err")"
	else
		echo "   FAIL    $* -> exit $rc, stderr: $(cat "$T/err")"
		fails=$((fails + 1))
	fi
}

# refuse_value FLAG VALUE ARGS...: exit status 2 and the parser's message (apps/common/flags.h):
# "jiffy-sim: FLAG: ..." quoting 'VALUE'.
refuse_value() {
	flag=$1 value=$2; shift 2
	"$SIM" "$@" >"$T/out" 2>"$T/err"
	rc=$?
	if [ "$rc" -eq 2 ] && grep -qF -- "jiffy-sim: $flag: " "$T/err" &&
		grep -qF -- "'$value'" "$T/err"; then
		echo "   ok      refused: $* -> $(head -c 150 "$T/err")"
	else
		echo "   FAIL    $* -> exit $rc, stderr: $(cat "$T/err")"
		fails=$((fails + 1))
	fi
}

echo "malformed inputs:"
refuse "--dist 'fixed:10'" --dist fixed:10 --load 0.5
refuse "--dist 'gauss:1us'" --dist gauss:1us --load 0.5
refuse "--dist 'bimodal:101:1us:2us'" --dist bimodal:101:1us:2us --load 0.5
refuse "--dist 'file:$T/none'" --dist "file:$T/none" --load 0.5
refuse_value --policy nosuch --policy nosuch --load 0.5
refuse "--mechanism 'bogus'" --mechanism bogus --load 0.5
refuse "--calib '$T/none.json'" --mechanism measured:deadline --calib "$T/none.json" --load 0.5
refuse "jiffy-sim: --cores: expected an integer from 1 to 256, got 'x'" --cores x --load 0.5
refuse_value --cores 0 --cores 0 --load 0.5
refuse_value --cores 100000 --cores 100000 --load 0.5
refuse_value --cores 100000 --cores=100000 --load=0.5
refuse_value --load -1 --load -1
refuse_value --loads abc --loads 0.1,abc
refuse_value --rate 0 --rate 0
refuse_value --requests 0 --requests 0 --load 0.5
refuse_value --quantum 5 --quantum 5 --load 0.5
refuse_value --seed 1.5 --seed 1.5 --load 0.5
refuse_value --block 2:5us --block 2:5us --load 0.5
refuse_value --central xq --central xq --load 0.5
refuse "--arrivals '$T/none'" --arrivals "$T/none"
refuse "--slo 'nosuch=1us'" --slo nosuch=1us --load 0.5
refuse "--classes 'a,b'" --classes a,b --load 0.5
refuse "jiffy-sim: --bogus: unknown flag" --bogus 1
refuse "jiffy-sim: --check: takes no value" --check=1 --load 0.5
refuse "jiffy-sim: unexpected argument '0.5'" --load 0.5 0.5
refuse "jiffy-sim: --cores: needs a value" --cores
refuse "give --rate" --cores 4
refuse "exclude each other" --dist exp:1us --arrivals /dev/null
refuse "never preempts" --mechanism none --receiver-cost 1us --load 0.5
printf '0us 1us\n5us 2us\n3us 1us\n' >"$T/backwards"
refuse "times must not decrease" --arrivals "$T/backwards"
echo '{"format": "jiffy-calibrate/1", "mechanisms": {"uintr": {"available": false, "why": "no UINTR"}}}' >"$T/calib.json"
refuse "unavailable on the calibrated machine" --mechanism measured:uintr --calib "$T/calib.json" --load 0.5
echo '{"format": ' >"$T/bad.json"
refuse "not valid JSON" --mechanism measured:uintr --calib "$T/bad.json" --load 0.5

echo "determinism:"
args="--cores 8 --policy central --mechanism uintr --quantum 5us --dist lognormal:1us:10us --loads 0.3,0.7 --requests 30000 --seed 7 --block 0.1:5us"
for i in 1 2; do
	"$SIM" $args --csv "$T/run$i.csv" --json "$T/run$i.json" >"$T/run$i.out" 2>/dev/null ||
		{ echo "   FAIL run $i exit $?"; fails=$((fails + 1)); }
done
"$SIM" $args --seed 8 --csv "$T/run3.csv" >/dev/null 2>&1
if cmp -s "$T/run1.out" "$T/run2.out" && cmp -s "$T/run1.csv" "$T/run2.csv" &&
	cmp -s "$T/run1.json" "$T/run2.json"; then
	echo "   ok      same seed: stdout, CSV and JSON byte-identical"
else
	echo "   FAIL    same seed, different output"; fails=$((fails + 1))
fi
if cmp -s "$T/run1.csv" "$T/run3.csv"; then
	echo "   FAIL    another seed gave the same CSV"; fails=$((fails + 1))
else
	echo "   ok      another seed: other numbers"
fi

echo "reports:"
hdr=label,server,workload,dist,class,offered_rps,achieved_rps,count,lost,errors,p50_us,p90_us,p99_us,p999_us,max_us,mean_us,slow_p50,slow_p99,slow_p999,lag_p99_us,valid,mode,rate,sent,received,lag_max_us,run_s,cpu_s
if [ "$(head -1 "$T/run1.csv")" = "$hdr" ] && [ "$(grep -c '^label,' "$T/run1.csv")" -eq 1 ] &&
	[ "$(wc -l <"$T/run1.csv")" -eq 5 ] &&
	[ "$(awk -F, 'NR > 1 { print NF }' "$T/run1.csv" | sort -u)" = 28 ]; then
	echo "   ok      CSV: jiffy-load's header once, 2 points x (all + overall) rows of 28 columns"
else
	echo "   FAIL    CSV layout:"; cat "$T/run1.csv"; fails=$((fails + 1))
fi
printf '# arrival service class\n0us 1us get\n2us 300us scan\n2.5us 1us get\n4us 1us get\n9us 1us get\n10us 2us get\n' >"$T/trace"
if "$SIM" --arrivals "$T/trace" --cores 2 --policy twoq --mechanism ideal --quantum 5us \
	--csv "$T/trace.csv" >"$T/trace.out" 2>&1 && grep -q '^get ' "$T/trace.out" &&
	grep -q ',scan,' "$T/trace.csv"; then
	echo "   ok      --arrivals trace with classes get/scan"
else
	echo "   FAIL    trace:"; cat "$T/trace.out"; fails=$((fails + 1))
fi
printf '1us short\n1us short\n100us long\n' >"$T/svc"
if "$SIM" --dist "file:$T/svc" --load 0.5 --requests 2000 --cores 2 >"$T/file.out" 2>&1 &&
	grep -q '^long ' "$T/file.out"; then
	echo "   ok      --dist file: with classes"
else
	echo "   FAIL    file: dist:"; cat "$T/file.out"; fails=$((fails + 1))
fi
cat >"$T/good.json" <<'JSON'
{"format": "jiffy-calibrate/1", "method": {"chunk_ns": 1000},
 "raw": {"timer_settime_ns": 500},
 "mechanisms": {"deadline": {"mechanism": "deadline", "timer_spin": false, "available": true,
   "why": null, "cost_ns": {"receiver": 185.5, "sender": null}, "slowdown_pct": {"5": 2.4}}}}
JSON
if "$SIM" --mechanism measured:deadline --calib "$T/good.json" --policy central --quantum 20us \
	--dist exp:5us --load 0.5 --requests 5000 --cores 2 --json "$T/m.json" >/dev/null 2>&1 &&
	grep -q '"receiver_ns": 142.7' "$T/m.json"; then
	echo "   ok      measured:deadline read from a jiffy-calibrate/1 file"
else
	echo "   FAIL    measured:"; cat "$T/m.json"; fails=$((fails + 1))
fi

echo "policy parameters (--param, the old flags, the report):"
refuse "jiffy-sim: --param: rr.slice_us='0': expected microseconds" --policy rr --param slice_us=0 --load 0.5
refuse "jiffy-sim: --param: rr.slice_us='fast'" --param rr.slice_us=fast --load 0.5
refuse "policy rr has no such parameter; its parameters: slice_us" --policy rr --param slize_us=5us --load 0.5
refuse "jiffy-sim: --param: 'slice_us': expected [POLICY.]NAME=VALUE" --param slice_us --load 0.5
refuse "no policy 'nosuch'" --param nosuch.x=1 --load 0.5
refuse "policy 'ps' takes no parameters" --policy ps --param slice_us=5us --load 0.5
refuse_value --rr-slice 0us --rr-slice 0us --load 0.5
refuse_value --central-slo 0us --central-slo 0us --load 0.5
refuse_value --central-preempted middle --central-preempted middle --load 0.5
# one setting, four spellings: byte-identical runs; the JSON report holds the policy's table
p="--policy rr --mechanism ideal --quantum 20us --cores 2 --load 0.8 --requests 3000 --seed 3"
"$SIM" $p --rr-slice 5us --json "$T/p1.json" >"$T/p1.out" 2>/dev/null
"$SIM" $p --param rr.slice_us=5us --json "$T/p2.json" >"$T/p2.out" 2>/dev/null
"$SIM" $p --param slice_us=5 --json "$T/p3.json" >"$T/p3.out" 2>/dev/null
"$SIM" $p --param slice_us=0.005ms --param cfs.latency_us=80 --json "$T/p4.json" >"$T/p4.out" 2>/dev/null
"$SIM" $p --json "$T/p0.json" >"$T/p0.out" 2>/dev/null
if cmp -s "$T/p1.out" "$T/p2.out" && cmp -s "$T/p1.out" "$T/p3.out" &&
	cmp -s "$T/p1.out" "$T/p4.out" && cmp -s "$T/p1.json" "$T/p2.json" &&
	cmp -s "$T/p1.json" "$T/p3.json" && cmp -s "$T/p1.json" "$T/p4.json" &&
	! cmp -s "$T/p0.out" "$T/p1.out" &&
	grep -q '"quantum_us": 20, "policy_params": {"slice_us": 5}' "$T/p1.json" &&
	grep -q '"policy_params": {"slice_us": 50}' "$T/p0.json"; then
	echo "   ok      --rr-slice 5us = --param rr.slice_us=5us = slice_us=5 = slice_us=0.005ms (another policy's setting unused); the JSON has policy_params"
else
	echo "   FAIL    --param and --rr-slice differ, or the JSON lacks policy_params:"
	grep -h policy_params "$T"/p[0-4].json; fails=$((fails + 1))
fi
c="--policy central --mechanism ideal --quantum 5us --cores 2 --load 0.5 --requests 2000"
if "$SIM" $c --param queues=mq --central-preempted head --json "$T/c.json" 2>/dev/null |
	grep -q '^jiffy-sim: sim:central:mq:head/ideal,' &&
	grep -q '"policy_params": {"queues": "mq", "preempted": "head", "slo_us": 50}' "$T/c.json" &&
	"$SIM" $c 2>/dev/null | grep -q '^jiffy-sim: sim:central/ideal,'; then
	echo "   ok      central: the server name and the JSON name the choices (sim:central:mq:head)"
else
	echo "   FAIL    central's name or JSON:"; cat "$T/c.json"; fails=$((fails + 1))
fi
if "$SIM" --list-params >"$T/list" 2>&1 && grep -q '^| `JIFFY_RR_SLICE_US` | rr | `slice_us` |' "$T/list" &&
	grep -q '^| `JIFFY_CENTRAL_QUEUES` or `JIFFY_CENTRAL` | central | `queues` | `sq`, `mq` | `sq` |' "$T/list"; then
	echo "   ok      --list-params: every policy's table"
else
	echo "   FAIL    --list-params:"; cat "$T/list"; fails=$((fails + 1))
fi

if [ "$fails" -eq 0 ]; then echo "sim.cli: passed"; else echo "sim.cli: $fails FAILED"; fi
[ "$fails" -eq 0 ]
