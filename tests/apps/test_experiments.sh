#!/usr/bin/env bash
# tests/apps/test_experiments.sh - the experiment harness end to end (experiments/run.py with
# experiments/configs/smoke.toml: two loads x two configurations x two workloads, two paired
# repeats each, ~30 s), and that it refuses what it cannot run. Proves: every point ran its
# repeats and was recorded with its stall evidence and probe, the path floor ran, the verdicts
# were written (verdict.json, slo.md), and (points.jsonl,
# jiffy-load's CSV rows per class and "overall" in results.csv), the SLO table printed for each
# experiment, one PNG per experiment, the simulated twin of the Jiffy configuration (jiffy-sim,
# in the table and in sim.csv); a bad description or a missing binary exits 2 with a
# message naming the problem, before anything runs.
#   usage: test_experiments.sh BUILD_DIR
# Env: JIFFY_LOAD (jiffy-load binary; default: scripts/build-load.sh builds it).
set -uo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=${1:?usage: test_experiments.sh BUILD_DIR}
say() { echo "test_experiments: $*"; }
die() {
	echo "test_experiments: FAIL: $*" >&2
	exit 1
}

py=$("$root/scripts/venv.sh") || die "scripts/venv.sh could not make the Python environment"
if [[ -z "${JIFFY_LOAD:-}" ]]; then
	JIFFY_LOAD=$("$root/scripts/build-load.sh") || die "scripts/build-load.sh could not build jiffy-load"
fi
export JIFFY_LOAD
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# ---- refusals: exit 2, a message that names the problem, nothing run
cat >"$tmp/bad.toml" <<'EOF'
[[experiment]]
name = "x"
workload = "spin"
dist = "fixed:10us"
slo_class = "all"
slo_p99_us = 100
loads = [1000]
  [[experiment.config]]
  server = "jiffy-synth"
  quantum_us = "ten"
EOF
out=$("$py" "$root/experiments/run.py" "$tmp/bad.toml" --build "$build" --out "$tmp/bad" 2>&1)
rc=$?
[[ $rc -eq 2 ]] || die "a bad quantum_us: exit $rc, want 2 ($out)"
[[ "$out" == *"quantum_us = 'ten'"* ]] || die "a bad quantum_us: unclear message: $out"
[[ ! -e "$tmp/bad/points.jsonl" ]] || die "a bad description still ran points"
out=$("$py" "$root/experiments/run.py" smoke --build "$tmp/no-such-build" --out "$tmp/bad" 2>&1)
rc=$?
[[ $rc -eq 2 && "$out" == *"jiffy-synth"*"missing"* ]] ||
	die "missing binaries: exit $rc, message: $out"
out=$("$py" "$root/experiments/run.py" no-such-preset 2>&1)
[[ $? -eq 2 && "$out" == *"not a preset"* ]] || die "unknown preset: $out"
say "bad descriptions and missing binaries: exit 2 with the reason: ok"

# ---- the smoke sweep
"$py" "$root/experiments/run.py" smoke --build "$build" --out "$tmp/out" >"$tmp/run.log" 2>&1
rc=$?
[[ $rc -eq 0 ]] || die "run.py smoke exited $rc: $(tail -20 "$tmp/run.log")"
for f in slo.md synth.png kv.png results.csv points.jsonl meta.json; do
	[[ -s "$tmp/out/$f" ]] || die "$f was not written"
done
for exp in synth kv; do
	grep -q "Experiment \*\*$exp\*\*" "$tmp/run.log" || die "no SLO table printed for $exp"
	# a PNG of some substance (a real figure, not an empty canvas)
	size=$(stat -c %s "$tmp/out/$exp.png")
	((size > 20000)) || die "$exp.png is only $size bytes"
	head -c 8 "$tmp/out/$exp.png" | od -An -c | grep -q 'P   N   G' || die "$exp.png is not a PNG"
done
grep -q 'jiffy-synth twoq deadline q=10us \[jiffy-sim twin\]' "$tmp/run.log" ||
	die "no row for the simulated twin in the synth table"
grep -q ',synth/jiffy-synth-twoq-deadline-q10~sim,\|^synth/jiffy-synth-twoq-deadline-q10~sim,' "$tmp/out/sim.csv" ||
	die "sim.csv has no rows of the twin"
npoints=$(wc -l <"$tmp/out/points.jsonl")
[[ $npoints -eq 9 ]] || die "points.jsonl has $npoints points, want 9 (2 experiments x 2 configs x 2 loads + the path floor)"
grep -q '^Verdicts:' "$tmp/run.log" || die "no verdicts printed"
grep -q 'path floor at 1,000 req/s' "$tmp/out/slo.md" || die "slo.md does not give the path floor"
grep -q 'stalls over 100 us per second' "$tmp/out/slo.md" || die "slo.md does not give the stall probes"
"$py" - "$tmp/out" <<'EOF' || die "the recorded results do not add up"
import csv, json, sys
out = sys.argv[1]
pts = [json.loads(l) for l in open(f"{out}/points.jsonl")]
for p in pts:
    assert not p.get("server_error"), p
    assert "load_error" not in p, p
    assert abs(p["offered_rps"] - p["load"]) / p["load"] < 0.2, p   # Poisson count near the rate
    # two paired repeats of every point, each with its own evidence of the environment
    assert [r["repeat"] for r in p["runs"]] == [0, 1], p["runs"]
    for r in p["runs"]:
        assert r["load_cpu_stalls"]["mode"] == "loop", r
    assert "probe" in p and p["probe"], p
floor = [p for p in pts if p["config"] == "path-floor"]
assert len(floor) == 1 and floor[0]["load"] == 1000 and "all" in floor[0]["classes"], floor
meta = json.load(open(f"{out}/meta.json"))
assert set(meta["probes"]["synth"]) == {"500", "1000"}, meta["probes"]
verdicts = json.load(open(f"{out}/verdict.json"))
assert [v["experiment"] for v in verdicts] == ["synth", "kv"], verdicts
assert verdicts[0]["met"] in (True, False) and verdicts[1]["met"] is None, verdicts
rows = list(csv.DictReader(open(f"{out}/results.csv")))
labels = {r["label"] for r in rows}
want = {"synth/jiffy-synth-twoq-deadline-q10", "synth/synth-pthread-t4",
        "kv/jiffy-kv-fifo-none-q100", "kv/kv-pthread-t2"}
assert labels == want | {"synth/path-floor"}, labels
for label in want:
    for rate in ("500", "1000"):
        classes = {r["class"] for r in rows if r["label"] == label and r["rate"] == rate}
        need = {"short", "long", "overall"} if label.startswith("synth") else {"get", "scan", "overall"}
        assert classes == need, (label, rate, classes)
print("results.csv and points.jsonl agree:", len(rows), "rows,", len(pts), "points")
EOF
say "smoke sweep: 9 points (the path floor too), paired repeats, verdicts, CSV rows per class, tables, plots: ok"
say PASS
