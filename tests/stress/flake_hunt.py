#!/usr/bin/env python3
"""tests/stress/flake_hunt.py - every test of the core, sync, net and preempt suites, many times,
under CPU hogs, with the failures counted per test (make soak; issue 27).

Owns: the flake hunt. For each build directory given, it reads the registered tests from CTest
(`ctest --show-only=json-v1`: the command, ENVIRONMENT, WORKING_DIRECTORY, TIMEOUT and
SKIP_RETURN_CODE exactly as `ctest` would use them), keeps those whose name starts with one of
the suites, and runs each of them RUNS times, JOBS at a time, while HOGS busy loops at
`nice -n 19` compete for the CPUs. Every run is a pass, a failure (any other exit status, or the
TIMEOUT: the output of each failing run is kept under the log directory) or a skip (the test's
SKIP_RETURN_CODE, counted apart: a skip is not a pass). Prints one line per test that failed or
skipped, a table per build (suite, tests, runs, failures, skips) and, with --markdown, writes
the per-test table that docs/reliability.md holds. Exit status 1 if any run failed.

A failing test is a bug to find, never a run to retry: nothing here reruns a failure.

usage: tests/stress/flake_hunt.py [--runs 200] [--jobs 2] [--hogs 2]
           [--suites core,sync,net,preempt] [--filter REGEX] [--logs DIR] [--env VAR=VALUE]
           [--markdown FILE] BUILD_DIR [BUILD_DIR...]
"""
import argparse
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor


def ctest_tests(build, overrides):
    out = subprocess.run(["ctest", "--test-dir", build, "--show-only=json-v1"],
                         check=True, capture_output=True, text=True).stdout
    tests = []
    for t in json.loads(out)["tests"]:
        props = {p["name"]: p["value"] for p in t.get("properties", [])}
        if "command" not in t or props.get("DISABLED"):
            continue
        env = dict(os.environ)
        for kv in props.get("ENVIRONMENT", []) + overrides:
            k, _, v = kv.partition("=")
            env[k] = v
        skip = props.get("SKIP_RETURN_CODE")
        tests.append({
            "name": t["name"],
            "cmd": t["command"],
            "env": env,
            "cwd": props.get("WORKING_DIRECTORY", build),
            "timeout": float(props.get("TIMEOUT", 1500)),
            "skip": int(skip) if skip is not None else None,
        })
    return tests


def run_once(t, logdir, tag, k):
    """One run: 'pass', 'fail' or 'skip'; a failing run's output is kept."""
    try:
        p = subprocess.run(t["cmd"], cwd=t["cwd"], env=t["env"], capture_output=True,
                           timeout=t["timeout"], start_new_session=True)
        rc, out = p.returncode, p.stdout + p.stderr
    except subprocess.TimeoutExpired as e:
        rc, out = "timeout", (e.stdout or b"") + (e.stderr or b"")
    except OSError as e:
        # Could not start it (a binary relinked under the hunt: EACCES, ENOENT): a failed run
        # with the reason, not the end of a campaign of hours.
        rc, out = f"not started ({e.strerror})", f"{e}\n".encode()
    if rc == 0:
        return "pass"
    if t["skip"] is not None and rc == t["skip"]:
        return "skip"
    path = os.path.join(logdir, tag, f"{t['name']}.run{k}.log")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(f"exit status {rc}\n".encode() + out)
    return "fail"


def start_hogs(n):
    return [subprocess.Popen(["nice", "-n", "19", "sh", "-c", "while :; do :; done"],
                             start_new_session=True) for _ in range(n)]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("builds", nargs="+", metavar="BUILD_DIR")
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--hogs", type=int, default=2, help="nice -n 19 busy loops beside the runs")
    ap.add_argument("--suites", default="core,sync,net,preempt")
    ap.add_argument("--filter", default="", help="only the tests whose name matches this regex")
    ap.add_argument("--logs", default="/tmp/jiffy-flake-hunt")
    ap.add_argument("--markdown", help="write the per-test table (docs/reliability.md's) here")
    ap.add_argument("--env", action="append", default=["JFT_SOAK_SECONDS=5"],
                    metavar="VAR=VALUE",
                    help="set in every test's environment, over its CTest ENVIRONMENT (default "
                         "JFT_SOAK_SECONDS=5: preempt.malloc's minute-long soak, 6 of the plain "
                         "build's 11 minutes a pass, runs as under the sanitizers)")
    a = ap.parse_args()
    if a.runs < 1 or a.jobs < 1 or a.hogs < 0:
        ap.error("--runs and --jobs must be at least 1, --hogs at least 0")
    suites = [s for s in a.suites.split(",") if s]
    flt = re.compile(a.filter) if a.filter else None

    hogs = start_hogs(a.hogs)
    results = {}  # (build, test) -> {"pass": n, "fail": n, "skip": n}
    lock = threading.Lock()
    t0 = time.time()
    try:
        for build in a.builds:
            tag = os.path.basename(os.path.normpath(build))
            tests = [t for t in ctest_tests(build, a.env)
                     if t["name"].split(".")[0] in suites and (not flt or flt.search(t["name"]))]
            if not tests:
                print(f"flake_hunt: no test of {','.join(suites)} in {build}", file=sys.stderr)
                return 2
            print(f"flake_hunt: {build}: {len(tests)} tests x {a.runs} runs, {a.jobs} at a time, "
                  f"{a.hogs} nice-19 hogs", flush=True)
            jobs = [(t, k) for k in range(a.runs) for t in tests]  # round-robin: drift spreads
            for t in tests:
                results[(tag, t["name"])] = defaultdict(int)

            def one(job):
                t, k = job
                r = run_once(t, a.logs, tag, k)
                with lock:
                    results[(tag, t["name"])][r] += 1
                    if r == "fail":
                        print(f"  FAIL {tag} {t['name']} (run {k}; log under {a.logs}/{tag})",
                              flush=True)

            with ThreadPoolExecutor(max_workers=a.jobs) as ex:
                list(ex.map(one, jobs))
    finally:
        for h in hogs:
            os.killpg(h.pid, signal.SIGKILL)
            h.wait()

    took = time.time() - t0
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip() or "?"
    per_suite = defaultdict(lambda: [0, 0, 0, 0])
    failed = False
    for (tag, name), r in sorted(results.items()):
        s = per_suite[(tag, name.split(".")[0])]
        s[0] += 1
        s[1] += r["pass"] + r["fail"] + r["skip"]
        s[2] += r["fail"]
        s[3] += r["skip"]
        failed |= r["fail"] > 0
        if r["fail"] or r["skip"]:
            print(f"  {tag} {name}: {r['fail']} failed, {r['skip']} skipped of "
                  f"{r['pass'] + r['fail'] + r['skip']}")
    print(f"flake_hunt: commit {commit}, {took / 60:.1f} min")
    print(f"{'build':<12} {'suite':<8} {'tests':>6} {'runs':>8} {'failures':>9} {'skips':>6}")
    for (tag, suite), (n, runs, fails, skips) in sorted(per_suite.items()):
        print(f"{tag:<12} {suite:<8} {n:>6} {runs:>8} {fails:>9} {skips:>6}")
    if a.markdown:
        with open(a.markdown, "w") as f:
            f.write(f"Commit {commit}; {a.runs} runs per test, {a.jobs} at a time, beside {a.hogs} "
                    f"`nice -n 19` busy loops; {took / 60:.0f} min.\n\n")
            f.write("| build | suite | tests | runs | failures | skips |\n|---|---|---:|---:|---:|---:|\n")
            for (tag, suite), (n, runs, fails, skips) in sorted(per_suite.items()):
                f.write(f"| {tag} | {suite} | {n} | {runs} | {fails} | {skips} |\n")
            f.write("\n| build | test | runs | failures | skips |\n|---|---|---:|---:|---:|\n")
            for (tag, name), r in sorted(results.items()):
                f.write(f"| {tag} | {name} | {r['pass'] + r['fail'] + r['skip']} | {r['fail']} "
                        f"| {r['skip']} |\n")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
