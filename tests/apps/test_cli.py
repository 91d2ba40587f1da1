#!/usr/bin/env python3
"""tests/apps/test_cli.py - one program's command line follows the rules every Jiffy program
shares (apps/common/flags.h). CTest: cli.<tool>, label "unit", for the C programs; the Go and
Tokio peers are checked by tests/apps/test_peers.sh (apps.synth), which builds them. Well under a
second per tool.

Usage: test_cli.py TOOL PATH
  TOOL: a name in SPECS below (jiffy-kv, jiffy-synth, kv-bench, kv-pthread, synth-pthread,
  jiffy-sim, jiffy-calibrate, preempt_bench, schbench, go-synth, tokio-synth, jiffy-httpd);
  PATH: its binary.

What it proves, for that program:
  - --help and -h: exit status 0, the usage text on stdout (naming the tool's flag and
    --version), nothing on stderr;
  - --version: exit status 0, exactly "<tool> (Jiffy) X.Y.Z" with the version written in
    include/jiffy/jiffy.h (JIFFY_VERSION_MAJOR/MINOR/PATCH);
  - one flag given as `--flag=value` and as `--flag value`: a good value is accepted in both
    spellings (followed by --help, which exits 0 only if everything before it parsed), a bad
    one refused in both with the same message: exit status 2, "<tool>: --flag: ... got '<bad>'"
    on stderr, nothing on stdout (so `=value` really reaches the value check);
  - an unknown flag (with and without =value), the flag without its value, --version=1, an
    argument the program does not take, and (C programs) a single-dash long flag: exit status 2
    and a message naming it. The Go and Tokio peers accept a single dash (Go's flag package
    does; tokio-synth follows it): there `-flag value` must be accepted instead.
  - jiffy-sim only (its output depends on the command line alone): `--cores=2` and `--cores 2`
    give byte-identical results, and `--cores 3` different ones (the value is used, not only
    checked).
Nothing is run beyond parsing, except jiffy-sim's three short simulations: a program that did
start serving would be stopped by the timeout and fail the test.
"""

import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TIMEOUT_S = 20

# tool: (flag with a value, a good value, a bad value, the start of the bad value's complaint,
#        what an operand gets)
SPECS = {
    "jiffy-kv": ("--port", "7100", "x", "expected a port number from 0 to 65535", "unexpected"),
    "jiffy-synth": ("--port", "7000", "70000", "expected a port number from 0 to 65535",
                    "unexpected"),
    "kv-bench": ("--keys", "1000", "0", "expected an integer from 1 to 100000000", "unexpected"),
    "kv-pthread": ("--threads", "2", "x", "expected an integer from 1 to 1024", "unexpected"),
    "synth-pthread": ("--be-policy", "nice", "x", "expected idle or nice", "unexpected"),
    "jiffy-sim": ("--cores", "2", "0", "expected an integer from 1 to ", "unexpected"),
    "jiffy-calibrate": ("--reps", "3", "-1", "expected an integer from 1 to 1000000",
                        "unexpected"),
    "preempt_bench": ("--quanta", "100,10", "0", "expected an integer from 1 to 1000000",
                      "unknown part"),
    "schbench": ("--seconds", "1", "3601", "expected an integer from 1 to 3600", "unexpected"),
    "go-synth": ("--port", "7000", "x", "expected a port number from 0 to 65535", "unexpected"),
    "tokio-synth": ("--port", "7000", "65536", "expected a port number from 0 to 65535",
                    "unexpected"),
    "jiffy-httpd": ("--mode", "pool", "x", "expected budget, nobudget or pool", "unexpected"),
}
SINGLE_DASH_ACCEPTED = {"go-synth", "tokio-synth"}

failures = []


def fail(msg):
    failures.append(msg)
    print(f"   FAIL {msg}")


def ok(msg):
    print(f"   ok   {msg}")


def run(path, *args):
    env = {k: v for k, v in os.environ.items() if not k.startswith("JIFFY_")}
    try:
        p = subprocess.run([path, *args], capture_output=True, text=True, timeout=TIMEOUT_S,
                           env=env, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return None, "", f"(still running after {TIMEOUT_S} s: killed)"
    return p.returncode, p.stdout, p.stderr


def header_version():
    text = open(os.path.join(ROOT, "include", "jiffy", "jiffy.h")).read()
    parts = []
    for part in ("MAJOR", "MINOR", "PATCH"):
        m = re.search(rf"^#define JIFFY_VERSION_{part} (\d+)$", text, re.M)
        if not m:
            sys.exit(f"test_cli: no JIFFY_VERSION_{part} in include/jiffy/jiffy.h")
        parts.append(m.group(1))
    return ".".join(parts)


def expect_usage_error(tool, path, args, *wants):
    """Exit status 2, nothing on stdout, each of @wants in stderr. Returns stderr."""
    rc, out, err = run(path, *args)
    shown = " ".join(args)
    if rc == 2 and not out and all(w in err for w in wants):
        ok(f"{shown!r}: exit 2, {err.strip()!r}")
    else:
        fail(f"{shown!r}: exit {rc}, stdout {out[:200]!r}, stderr {err[:300]!r}; "
             f"want exit 2, no stdout, stderr with {wants!r}")
    return err


def check(tool, path):
    flag, good, bad, complaint, operand = SPECS[tool]
    version = header_version()

    for h in ("--help", "-h"):
        rc, out, err = run(path, h)
        if rc == 0 and "usage:" in out and flag in out and "--version" in out and not err:
            ok(f"{h}: exit 0, usage on stdout")
        else:
            fail(f"{h}: exit {rc}, stdout {out[:200]!r}, stderr {err[:200]!r}; want exit 0 and "
                 f"a usage text naming {flag} and --version on stdout only")

    rc, out, err = run(path, "--version")
    want = f"{tool} (Jiffy) {version}\n"
    if rc == 0 and out == want and not err:
        ok(f"--version: {out.strip()!r}")
    else:
        fail(f"--version: exit {rc}, stdout {out!r}, stderr {err!r}; want exit 0, {want!r}")

    for args in ([f"{flag}={good}", "--help"], [flag, good, "--help"]):
        rc, out, err = run(path, *args)
        if rc == 0 and "usage:" in out and not err:
            ok(f"{' '.join(args)!r}: accepted")
        else:
            fail(f"{' '.join(args)!r}: exit {rc}, stderr {err[:300]!r}; want the value accepted")

    e1 = expect_usage_error(tool, path, [f"{flag}={bad}"], f"{tool}: {flag}: {complaint}",
                            f"got '{bad}'")
    e2 = expect_usage_error(tool, path, [flag, bad], f"{tool}: {flag}: {complaint}",
                            f"got '{bad}'")
    if e1 == e2:
        ok(f"{flag}={bad} and {flag} {bad}: the same message")
    else:
        fail(f"{flag}={bad} and {flag} {bad}: different messages {e1!r} / {e2!r}")

    expect_usage_error(tool, path, ["--no-such-flag"], f"{tool}: --no-such-flag: unknown flag")
    expect_usage_error(tool, path, ["--no-such-flag=1"], f"{tool}: --no-such-flag: unknown flag")
    expect_usage_error(tool, path, [flag], f"{tool}: {flag}: needs a value")
    single = "-" + flag.lstrip("-")
    if tool in SINGLE_DASH_ACCEPTED:
        rc, out, err = run(path, single, good, "--help")
        if rc == 0 and "usage:" in out and not err:
            ok(f"'{single} {good} --help': accepted (single-dash long flags kept)")
        else:
            fail(f"'{single} {good} --help': exit {rc}, stderr {err[:300]!r}; want it accepted")
    else:
        expect_usage_error(tool, path, [single, good], f"{tool}: {single}: ",
                           f"two dashes: {flag}")
    expect_usage_error(tool, path, ["--version=1"], f"{tool}: --version: takes no value")
    expect_usage_error(tool, path, ["stray-operand"], f"{tool}: {operand}", "'stray-operand'")

    if tool == "jiffy-sim":
        base = ["--load", "0.5", "--requests", "2000", "--quiet"]
        r_eq = run(path, "--cores=2", *base)
        r_sp = run(path, "--cores", "2", *base)
        r_3 = run(path, "--cores", "3", *base)
        if r_eq[0] == 0 and r_eq[1] and r_eq[1] == r_sp[1] and r_sp[0] == 0 and \
                r_3[0] == 0 and r_3[1] != r_eq[1]:
            ok("--cores=2 and --cores 2: the same simulation; --cores 3 another")
        else:
            fail(f"--cores=2 / --cores 2 / --cores 3: exits {r_eq[0]}, {r_sp[0]}, {r_3[0]}; "
                 f"outputs {r_eq[1][:200]!r} / {r_sp[1][:200]!r} / {r_3[1][:200]!r}")


def main():
    if len(sys.argv) != 3 or sys.argv[1] not in SPECS:
        sys.exit(f"usage: test_cli.py TOOL PATH   (TOOL: {', '.join(SPECS)})")
    tool, path = sys.argv[1], sys.argv[2]
    if not os.access(path, os.X_OK):
        sys.exit(f"test_cli: {path}: not an executable")
    print(f"{tool} ({path}):")
    check(tool, path)
    if failures:
        print(f"cli.{tool}: {len(failures)} FAILED")
        sys.exit(1)
    print(f"cli.{tool}: passed")


if __name__ == "__main__":
    main()
