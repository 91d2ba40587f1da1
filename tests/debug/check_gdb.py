#!/usr/bin/env python3
# tests/debug/check_gdb.py - tests debug.gdb.*: the Jiffy gdb extension (tools/gdb/jiffy-gdb.py)
# shows the uthreads of tests/debug/gdb_target.c as they are, in a live process and in a core
# file written from it.
#
# Owns: the expectations. It runs gdb twice: on the live target stopped at gdbt_ready() (which
# also writes the core with gcore and lets the program run to its end), then on the target and
# that core; gdb_session.py prints every command's output in "=== <command>" sections, and this
# script fails (exit 1, naming every failed expectation) on a missing uthread, a wrong state or
# place, a missing frame, a borrowed frame left in a uthread's backtrace, or a gdb that did not
# finish. Expectations per mode are in the header of gdb_target.c.
#
# usage: check_gdb.py --gdb GDB --target EXE --mode states|preempted --workdir DIR
#                     (--script jiffy-gdb.py | --autoload)
#   --autoload: do not source the script; gdb must load it itself (safe-path /), as it does for an
#               installed libjiffy.so (the build puts the script next to the library).
import argparse
import os
import re
import shutil
import subprocess
import sys

failures = []


def expect(cond, what):
    if not cond:
        failures.append(what)
    return cond


def parse_sections(text):
    """{command: output} from gdb_session.py's "=== <command>" sections (the last one wins)."""
    out, cur, buf = {}, None, []
    for line in text.splitlines():
        if line.startswith("=== "):
            if cur is not None:
                out[cur] = "\n".join(buf)
            cur, buf = line[4:], []
        elif cur is not None:
            buf.append(line)
    if cur is not None:
        out[cur] = "\n".join(buf)
    return out


ROW = re.compile(r"^\s*(\d+) (\S+)\s+(\S+)\s+(\S+)\s+(-?\d+)\s+(\S+)  ?(.*)$")


def parse_table(text):
    """{name: dict(id, state, worker, klass, age, where)} from `jiffy threads`."""
    rows = {}
    for line in text.splitlines():
        m = ROW.match(line)
        if m and m.group(1) != "ID":
            rows[m.group(2)] = dict(id=int(m.group(1)), state=m.group(3), worker=m.group(4),
                                    klass=int(m.group(5)), age=m.group(6),
                                    where=m.group(7).strip())
    return rows


def age_ns(s):
    """An age as `jiffy threads` prints it ("812ns", "4.4us", "20.1ms", "3.0s") in ns; -1 for "-"."""
    m = re.match(r"^([\d.]+)(ns|us|ms|s)$", s)
    if not m:
        return -1
    return float(m.group(1)) * {"ns": 1, "us": 1e3, "ms": 1e6, "s": 1e9}[m.group(2)]


def frames(bt):
    """The frame lines of a backtrace, and whether they are numbered #0, #1, ... in order."""
    fl = [l for l in bt.splitlines() if re.match(r"^#\d+\s", l)]
    nums = [int(re.match(r"^#(\d+)", l).group(1)) for l in fl]
    return fl, nums == list(range(len(nums)))


def check_bt(sec, phase, name, row, must, switched_out):
    bt = sec.get("jiffy bt %d" % row["id"])
    tag = "%s: jiffy bt %d (%s)" % (phase, row["id"], name)
    if not expect(bt is not None, tag + ": not run"):
        return
    expect("ERROR" not in bt, tag + ": failed: " + bt.strip()[:300])
    fl, ordered = frames(bt)
    text = "\n".join(fl)
    for f in must:
        expect(f in bt, "%s: no '%s' in\n%s" % (tag, f, bt))
    if fl:
        expect(ordered, "%s: frames not numbered #0, #1, ...:\n%s" % (tag, bt))
        expect("jf_ctx_start" in fl[-1], "%s: does not end in jf_ctx_start:\n%s" % (tag, bt))
    if switched_out:
        expect("switched out" in bt, "%s: not unwound as switched out:\n%s" % (tag, bt))
        # The frame borrowed from the selected kernel thread must be gone.
        expect("gdbt_ready" not in text, "%s: borrowed frame gdbt_ready shown:\n%s" % (tag, bt))
        # jf_ctx_switch is called by reschedule (yield and block, where it is inlined;
        # uthread_reschedule for a safepoint's preemption), exit, or jf_sched_preempt_to_loop (a
        # signal's preemption: the handler leaves the uthread to the scheduler loop).
        expect(fl and ("reschedule" in fl[0] or "exit" in fl[0]
                       or "jf_sched_preempt_to_loop" in fl[0]),
               "%s: #0 is not where jf_ctx_switch was called:\n%s" % (tag, bt))


def check_common(sec, phase, mode, names):
    table = sec.get("jiffy threads", "")
    rows = parse_table(table)
    expect(table.startswith("jiffy: %d uthreads, 2 workers, policy ws" % len(names)),
           "%s: jiffy threads header:\n%s" % (phase, table))
    relative = "ages relative to the last state change" in table.splitlines()[0] if table else False
    expect(relative == (phase == "core"),
           "%s: age note %s in the header:\n%s" % (phase, "missing" if phase == "core"
                                                  else "unexpected", table))
    for n in names:
        expect(n in rows, "%s: uthread %s missing from jiffy threads:\n%s" % (phase, n, table))
    expect(len(rows) == len(names), "%s: %d uthreads listed, want %d:\n%s" %
           (phase, len(rows), len(names), table))
    if phase == "live":
        # Listing must not let the inferior run: between the two listings no state changed and
        # every age grew.
        later = parse_table(sec.get("info uthreads", ""))
        for n, r in rows.items():
            if n in later:
                expect(age_ns(later[n]["age"]) >= age_ns(r["age"]),
                       "%s: %s got younger between two listings (%s, then %s): the inferior ran"
                       % (phase, n, r["age"], later[n]["age"]))
    same = {n: dict(r, age=None) for n, r in parse_table(sec.get("info uthreads", "")).items()}
    expect(same == {n: dict(r, age=None) for n, r in rows.items()},
           "%s: info uthreads differs from jiffy threads" % phase)
    for n, r in rows.items():
        expect(r["age"] != "-", "%s: %s has no age (state_ns 0):\n%s" % (phase, n, table))
    running = [n for n, r in rows.items() if r["state"] == "running"]
    expect(len(running) == 2, "%s: %d running uthreads, want 2:\n%s" % (phase, len(running), table))
    expect(len({rows[n]["worker"] for n in running}) == len(running),
           "%s: two running uthreads on one worker:\n%s" % (phase, table))
    for n in running:
        expect(re.match(r"on worker \d+ \(LWP \d+\)$", rows[n]["where"]) is not None,
               "%s: %s: where = %r" % (phase, n, rows[n]["where"]))
    workers = sec.get("jiffy workers", "")
    wl = [l for l in workers.splitlines()[1:] if l.strip()]
    expect(len(wl) == 2 and all(" running " in l for l in wl),
           "%s: jiffy workers:\n%s" % (phase, workers))
    for n in running:
        expect("%d '%s'" % (rows[n]["id"], n) in workers,
               "%s: jiffy workers does not show %s running:\n%s" % (phase, n, workers))
    if "main" in rows:
        check_bt(sec, phase, "main", rows["main"], ["running on worker", "gdbt_ready",
                                                    "gdbt_main"], False)
    err = sec.get("jiffy bt 999999999", "")
    expect("ERROR: jiffy: no uthread with id 999999999" in err, "%s: unknown id: %r" % (phase, err))
    expect("ERROR: usage: jiffy bt" in sec.get("jiffy bt", ""), "%s: jiffy bt without an id" % phase)
    return rows


def check_states(sec, phase):
    names = ["main", "gdbt-finisher", "gdbt-mutex", "gdbt-sleeper", "gdbt-joiner",
             "gdbt-spinner", "gdbt-queued"]
    rows = check_common(sec, phase, "states", names)
    if not all(n in rows for n in names):
        return
    want = {"main": ("running", None), "gdbt-spinner": ("running", None),
            "gdbt-mutex": ("blocked", r"^mutex 0x[0-9a-f]+ <gdbt_lock>$"),
            "gdbt-sleeper": ("blocked", r"^sleep$"),
            "gdbt-joiner": ("blocked",
                            r"^join 0x[0-9a-f]+ \(uthread %d 'gdbt-sleeper'\)$" %
                            rows["gdbt-sleeper"]["id"]),
            "gdbt-finisher": ("exited", r"^$"),
            "gdbt-queued": ("runnable", r"^queued: new$")}
    for n, (state, where) in want.items():
        r = rows[n]
        expect(r["state"] == state, "%s: %s is %s, want %s" % (phase, n, r["state"], state))
        if where:
            expect(re.match(where, r["where"]) is not None,
                   "%s: %s: where = %r, want /%s/" % (phase, n, r["where"], where))
    check_bt(sec, phase, "gdbt-mutex", rows["gdbt-mutex"],
             ["jf_mutex_lock", "gdbt_mutex_waiter"], True)
    check_bt(sec, phase, "gdbt-sleeper", rows["gdbt-sleeper"], ["jf_sleep_ns", "gdbt_sleeper"],
             True)
    check_bt(sec, phase, "gdbt-joiner", rows["gdbt-joiner"], ["jf_join", "gdbt_joiner"], True)
    check_bt(sec, phase, "gdbt-finisher", rows["gdbt-finisher"], ["uthread_exit"], True)
    check_bt(sec, phase, "gdbt-spinner", rows["gdbt-spinner"],
             ["running on worker", "gdbt_spinner"], False)
    q = sec.get("jiffy bt %d" % rows["gdbt-queued"]["id"], "")
    expect("has not run yet; it will start in gdbt_queued" in q,
           "%s: jiffy bt of gdbt-queued: %r" % (phase, q))
    expect(sec.get("jiffy bt gdbt-mutex") == sec.get("jiffy bt %d" % rows["gdbt-mutex"]["id"]),
           "%s: jiffy bt by name differs from by id" % phase)


def check_preempted(sec, phase):
    spins = ["gdbt-spin0", "gdbt-spin1", "gdbt-spin2"]
    rows = check_common(sec, phase, "preempted", ["main"] + spins)
    if not all(n in rows for n in spins + ["main"]):
        return
    expect(rows["main"]["state"] == "running", "%s: main is %s" % (phase, rows["main"]["state"]))
    queued = [n for n in spins if rows[n]["state"] == "runnable"]
    expect(len(queued) == 2, "%s: %d spinners runnable, want 2" % (phase, len(queued)))
    for n in spins:
        r = rows[n]
        if r["state"] == "running":
            check_bt(sec, phase, n, r, ["running on worker", "gdbt_spin"], False)
            continue
        expect(r["where"] == "queued: preempted",
               "%s: %s: where = %r, want 'queued: preempted'" % (phase, n, r["where"]))
        check_bt(sec, phase, n, r, ["preempt_signal", "<signal handler called>", "gdbt_spin"],
                 True)
        bt = sec.get("jiffy bt %d" % r["id"], "")
        sig, spin = bt.find("<signal handler called>"), bt.find("gdbt_spin")
        expect(0 <= sig < spin, "%s: %s: gdbt_spin is not below the signal frame:\n%s" %
               (phase, n, bt))


def run_gdb(args, env, timeout=120):
    try:
        p = subprocess.run(args, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, timeout=timeout, text=True)
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        print(out)
        print("check_gdb: gdb did not finish in %d s" % timeout)
        sys.exit(1)
    return p.returncode, p.stdout


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gdb", required=True)
    ap.add_argument("--target", required=True)
    ap.add_argument("--mode", choices=["states", "preempted"], required=True)
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--script")
    ap.add_argument("--autoload", action="store_true")
    a = ap.parse_args()
    if a.gdb.endswith("NOTFOUND") or not shutil.which(a.gdb):
        print("check_gdb: gdb not found (%s); scripts/deps.sh installs it" % a.gdb)
        return 1
    if not a.autoload and not (a.script and os.path.isfile(a.script)):
        print("check_gdb: no --script %s" % a.script)
        return 1
    os.makedirs(a.workdir, exist_ok=True)
    core = os.path.join(a.workdir, "gdb_target.core")
    if os.path.exists(core):
        os.unlink(core)
    session = os.path.join(os.path.dirname(os.path.abspath(__file__)), "gdb_session.py")
    base = [a.gdb, "-batch", "-nx", "-iex", "set debuginfod enabled off"]
    if a.autoload:
        base += ["-iex", "set auto-load safe-path /"]
    else:
        base += ["-iex", "set auto-load no", "-ex", "source %s" % a.script]
    env = dict(os.environ, JFT_GDB_MODE=a.mode, JFT_GDB_CORE=core)
    for k in list(env):
        if k.startswith("JIFFY_"):
            del env[k]  # the target sets its configuration itself

    try:
        for phase in ("live", "core"):
            env["JFT_GDB_PHASE"] = phase
            if phase == "live":
                args = base + ["-x", session, a.target]
            else:
                if not expect(os.path.isfile(core), "live: gcore wrote no %s" % core):
                    break
                args = base + ["-x", session, a.target, core]
            rc, out = run_gdb(args, env)
            print("----- gdb, %s (exit %d) -----" % (phase, rc))
            print(out)
            expect(rc == 0, "%s: gdb exited with %d" % (phase, rc))
            expect("=== end" in out, "%s: the session did not reach its end" % phase)
            expect("Python Exception" not in out and "Traceback" not in out,
                   "%s: a Python exception in the extension" % phase)
            sec = parse_sections(out)
            if phase == "live":
                expect("Saved corefile" in sec.get("gcore %s" % core, ""),
                       "live: gcore: %r" % sec.get("gcore %s" % core))
                expect("exited normally" in out, "live: the target did not exit normally")
                expect("ERROR: jiffy: no runtime (jf_rt is NULL)" in
                       sec.get("after exit: jiffy threads", ""),
                       "live: after the exit, jiffy threads: %r" %
                       sec.get("after exit: jiffy threads"))
            (check_states if a.mode == "states" else check_preempted)(sec, phase)
    finally:
        if os.path.exists(core) and not failures:
            os.unlink(core)  # ~150 MB; kept when something failed, to look at

    if failures:
        print("check_gdb: %d failed expectation(s):" % len(failures))
        for f in failures:
            print("  - " + f)
        return 1
    print("check_gdb: %s: every expectation met (live and core)" % a.mode)
    return 0


if __name__ == "__main__":
    sys.exit(main())
