#!/usr/bin/env python3
"""tests/apps/test_sigquit.py - SIGQUIT makes a Jiffy server print its uthreads and counters and
go on serving (docs/observability.md).

For jiffy-kv (with one RESP client connected and idle, so a "resp-conn" uthread blocks in the
netpoller) and for jiffy-synth: start it on free loopback ports, send SIGQUIT, and check that
stderr gets jf_dump_threads()'s table with the server's named uthreads in the states they must be
in ("resp-accept"/"resp-conn"/"udp-recv" blocked on netpoll-read; "synth-recv" blocked), the
running main, and the counters table; then that the server still answers (PING, a synth request)
and still stops cleanly on SIGTERM with exit status 0.

Usage: test_sigquit.py <jiffy-kv> <jiffy-synth>
"""
import os
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from resp_client import Conn, free_port  # noqa: E402


def fail(msg, err=""):
    print(f"FAIL: {msg}", file=sys.stderr)
    if err:
        print("---- server stderr ----\n" + err, file=sys.stderr)
    sys.exit(1)


def start(argv, ready_word):
    errf = tempfile.TemporaryFile()
    env = {k: v for k, v in os.environ.items() if not k.startswith("JIFFY_")}
    env["JIFFY_WORKERS"] = "2"
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=errf, env=env)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        line = proc.stdout.readline().decode(errors="replace")
        if not line:
            break
        if line.startswith("READY") and ready_word in line:
            threading.Thread(target=proc.stdout.read, daemon=True).start()
            return proc, errf
    proc.kill()
    errf.seek(0)
    fail(f"{argv[0]} did not print READY", errf.read().decode(errors="replace"))


def stderr_of(errf):
    # pread, not seek + read: the server's stderr is the same open file (one offset), and a
    # seek(0) here made its next write land at the start, over the dump's first line (seen once
    # in CI as "no jf_dump_threads() header").
    fd = errf.fileno()
    return os.pread(fd, os.fstat(fd).st_size, 0).decode(errors="replace")


def wait_for(errf, text, secs=10, count=1):
    deadline = time.monotonic() + secs
    while time.monotonic() < deadline:
        if stderr_of(errf).count(text) >= count:
            return True
        time.sleep(0.05)
    return False


def line_with(out, name):
    for ln in out.splitlines():
        if f" {name} " in ln:
            return ln
    return ""


def dump_until_settled(proc, errf, server, want, tries=5):
    """SIGQUIT @proc until one dump shows each (uthread, word) of @want on its line, at most
    @tries dumps 0.2 s apart: a dump taken while a wake-up is still in flight, or right after
    start-up, may catch a uthread runnable or running before it waits. Returns the last dump's
    text and the lines that did not match (empty: settled)."""
    out, bad = "", ["no dump"]
    for attempt in range(1, tries + 1):
        time.sleep(0.2)
        proc.send_signal(signal.SIGQUIT)
        if not wait_for(errf, "jiffy: counters", count=attempt):
            fail(f"{server}: no thread list and counters on SIGQUIT", stderr_of(errf))
        out = stderr_of(errf)
        if "jiffy: uthreads (" not in out:
            fail(f"{server}: no jf_dump_threads() header", out)
        last = out[out.rindex("jiffy: uthreads ("):]
        bad = [f"{n} not listed as {w!r}: {line_with(last, n)!r}" for n, w in want
               if w not in line_with(last, n)]
        if not bad:
            break
    return out, bad


def stop(proc, errf, name):
    proc.send_signal(signal.SIGTERM)
    try:
        rc = proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        fail(f"{name} did not stop on SIGTERM after SIGQUIT", stderr_of(errf))
    if rc != 0:
        fail(f"{name} exited with {rc} after SIGTERM", stderr_of(errf))


def check_kv(server):
    port, resp = free_port(), free_port()
    proc, errf = start([server, "--port", str(port), "--resp-port", str(resp), "--keys", "100"],
                       "jiffy-kv")
    try:
        c = Conn(resp)
        if c.call("PING") != b"+PONG":
            fail("jiffy-kv: no PONG before SIGQUIT", stderr_of(errf))
        # The connection's uthread waits for the next command once its reply is out: every
        # uthread where it must settle, in one of up to 5 dumps.
        want = (("resp-accept", "netpoll-read"), ("resp-conn", "netpoll-read"),
                ("udp-recv", "netpoll-read"), ("main", "running"))
        out, bad = dump_until_settled(proc, errf, "jiffy-kv", want)
        if "jiffy: uthreads (2 workers" not in out:
            fail("jiffy-kv: no jf_dump_threads() header for 2 workers", out)
        if bad:
            fail("jiffy-kv: after 5 dumps, " + "; ".join(bad), out)
        if c.call("PING") != b"+PONG":
            fail("jiffy-kv: no PONG after SIGQUIT", out)
        c.close()
        stop(proc, errf, "jiffy-kv")
        print("jiffy-kv: SIGQUIT listed " +
              ", ".join(n for n in ("resp-accept", "resp-conn", "udp-recv", "main")) +
              " and kept serving")
    finally:
        if proc.poll() is None:
            proc.kill()


def check_synth(server):
    port = free_port()
    proc, errf = start([server, "--port", str(port)], "jiffy-synth")
    try:
        # A dump right after start-up may catch the receiver in its first run, before it waits
        # (CI under ASan: 'running ... 2862.2us'): blocked on netpoll-read in one of 5 dumps.
        out, bad = dump_until_settled(proc, errf, "jiffy-synth",
                                      (("synth-recv", "blocked"), ("synth-recv", "netpoll-read")))
        if bad:
            fail("jiffy-synth: after 5 dumps, " + "; ".join(bad), out)
        stop(proc, errf, "jiffy-synth")
        print("jiffy-synth: SIGQUIT listed synth-recv blocked on netpoll-read and stopped cleanly")
    finally:
        if proc.poll() is None:
            proc.kill()


def main():
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    check_kv(sys.argv[1])
    check_synth(sys.argv[2])
    print("test_sigquit: ok")


if __name__ == "__main__":
    main()
