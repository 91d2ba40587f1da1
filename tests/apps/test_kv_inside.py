#!/usr/bin/env python3
"""tests/apps/test_kv_inside.py - SCANs preempted inside RocksDB give exact results (issue 14 §4).

Owns: one check of jiffy-kv with --rocksdb-preempt inside, where a SCAN's iterator steps run
outside any non-preemptible region (docs/libraries.md): two workers, so a preempted SCAN often
resumes on the other kernel thread; four clients walk the whole key space with SCAN COUNT 2000
three times each while redis-benchmark runs GET and SET on random keys. Every walk must return
each of the preloaded keys exactly once, in order; the server must exit 0 on SIGINT; and its
statistics (JIFFY_STATS=1) must show that the mechanism preempted: with a signal mechanism
(timer) preempts_signal > 0, with a probe mechanism (deadline, on jiffy-kv-probes, whose server
code has no safepoint of its own) preempts_safepoint > 0. (A request deferred to the end of a
region counts by its path too, so the counters alone do not prove a preemption landed inside an
iterator step; INFO's rocksdb_preempt:inside says the steps ran outside regions.) No latency or
rate is asserted.

usage: test_kv_inside.py JIFFY_KV MECHANISM QUANTUM_US   (~15 s)
"""

import os
import signal
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from resp_client import Conn, free_port  # noqa: E402 (after the path)

KEYS = 100000
WALKERS = 4
ROUNDS = 3


def fail(msg, err_path=None):
    print(f"test_kv_inside: FAIL: {msg}", file=sys.stderr)
    if err_path and os.path.exists(err_path):
        with open(err_path, errors="replace") as f:
            print("--- server stderr (tail):\n" + "".join(f.readlines()[-15:]), file=sys.stderr)
    sys.exit(1)


def walk(port, results, idx):
    """One full SCAN walk; results[idx] = the preloaded keys seen, in order."""
    try:
        c = Conn(port, timeout=60)
        cursor, keys = b"0", []
        while True:
            cursor, batch = c.call("SCAN", cursor, "COUNT", 2000)
            keys += [k for k in batch if k.startswith(b"key0")]  # not SET's random keys
            if cursor == b"0":
                break
        c.close()
        results[idx] = keys
    except Exception as e:  # reported by the caller
        results[idx] = e


def main():
    proc_holder = []
    try:
        run(proc_holder)
    finally:
        for p in proc_holder:  # never leave a server behind, whatever failed
            if p.poll() is None:
                p.kill()
                p.wait()


def run(proc_holder):
    if len(sys.argv) != 4:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    server, mech, quantum = sys.argv[1:]
    if not os.access(server, os.X_OK):
        fail(f"{server} is not an executable")
    want = [b"key%012d" % i for i in range(KEYS)]
    work = f"/tmp/test_kv_inside.{os.getpid()}"
    os.makedirs(work, exist_ok=True)
    err_path = os.path.join(work, "server.err")
    env = {k: v for k, v in os.environ.items() if not k.startswith("JIFFY_")}
    env.update(JIFFY_STATS="1", JIFFY_WORKERS="2", JIFFY_POLICY="twoq", JIFFY_PREEMPT=mech,
               JIFFY_QUANTUM_US=quantum)
    with open(err_path, "wb") as err:
        # a free port: --resp-port 0 would mean no Redis protocol at all
        proc = subprocess.Popen([server, "--port", "0", "--resp-port", str(free_port()),
                                 "--keys", str(KEYS), "--rocksdb-preempt", "inside"],
                                stdout=subprocess.PIPE, stderr=err, env=env)
    proc_holder.append(proc)
    port = None
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and port is None:
        line = proc.stdout.readline().decode(errors="replace")
        if not line:
            break
        for word in line.split():
            if line.startswith("READY") and word.startswith("resp="):
                port = int(word[5:])
    if port is None:
        proc.kill()
        fail("the server did not print READY with a resp= port", err_path)
    threading.Thread(target=proc.stdout.read, daemon=True).start()  # keep the pipe drained
    c = Conn(port)
    info = c.call("INFO")
    c.close()
    if b"rocksdb_preempt:inside" not in info:
        proc.kill()
        fail("INFO does not say rocksdb_preempt:inside", err_path)

    bench = subprocess.Popen(["redis-benchmark", "-p", str(port), "-t", "get,set", "-n", "1000000",
                              "-c", "8", "-r", str(KEYS), "-q"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    bad = []
    try:
        for r in range(ROUNDS):
            results = [None] * WALKERS
            threads = [threading.Thread(target=walk, args=(port, results, i))
                       for i in range(WALKERS)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            for i, got in enumerate(results):
                if isinstance(got, Exception) or got is None:
                    bad.append(f"round {r} walker {i}: {got!r}")
                elif got != want:
                    missing = len(set(want) - set(got))
                    bad.append(f"round {r} walker {i}: {len(got)} keys, {len(set(got))} distinct, "
                               f"{missing} missing, in order: {got == sorted(got)}")
    finally:
        bench.kill()
        bench.wait()
        proc.send_signal(signal.SIGINT)
        try:
            rc = proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            fail("the server did not stop within 30 s of SIGINT", err_path)
    if bad:
        fail("SCAN walks preempted inside RocksDB were wrong:\n  " + "\n  ".join(bad), err_path)
    if rc != 0:
        fail(f"the server exited {rc}", err_path)
    with open(err_path, errors="replace") as f:
        lines = f.read().splitlines()
    head = next((l.split() for l in lines if l.startswith("worker ")), None)
    total = next((l.split() for l in lines if l.startswith("total ")), None)
    if not head or not total or len(head) != len(total):
        fail("no JIFFY_STATS table on stderr", err_path)
    stats = dict(zip(head[1:], (int(v) for v in total[1:])))
    path = "preempts_signal" if mech in ("timer", "dispatcher") else "preempts_safepoint"
    print(f"test_kv_inside: {ROUNDS * WALKERS} full SCAN walks of {KEYS} keys exact under {mech} "
          f"q={quantum}us with GET/SET load; preempts={stats.get('preempts')} "
          f"{path}={stats.get(path)} steals={stats.get('steals')}")
    if stats.get(path, 0) == 0:
        fail(f"{path} is 0: nothing preempted the SCANs the way {mech} should", err_path)
    subprocess.run(["rm", "-rf", work])
    print("test_kv_inside: ok")


if __name__ == "__main__":
    main()
