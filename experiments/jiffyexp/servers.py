"""jiffyexp.servers - the servers of apps/ as the sweep starts them.

Owns: which binary each server name means, its command line (what the harness sets, then the
configuration's `args`) and environment for one configuration, pinning it to the server CPU,
waiting for its READY line (docs/protocol.md: "READY <name> udp=<port>"), and stopping it
(SIGINT, then SIGKILL after 5 s) with its last statistics line. Every server is started with
--port 0 and the port is read from READY, so two sweeps, or a sweep and a test, never fight over
a port.

The environment of a server is the caller's minus every JIFFY_* variable, plus what the
configuration says: a JIFFY_POLICY left in a shell must not silently change a measured curve.
"""

import dataclasses
import os
import select
import signal
import subprocess
import threading
import time


@dataclasses.dataclass(frozen=True)
class ServerSpec:
    binary: str          # relative to the repository; {build} = the CMake build directory
    workloads: frozenset
    jiffy: bool          # configured by JIFFY_* (policy, preempt, quantum, workers)
    build_hint: str      # what builds it
    extra_args: tuple = ()

    def args(self, cfg, exp):
        a = ["--port", "0"]
        if self.jiffy and "kv" in self.workloads:
            a += ["--resp-port", "0"]
        if not self.jiffy:
            a += ["--threads", str(cfg["threads"])]
        if "kv" in self.workloads:
            a += ["--keys", str(exp["keys"])]
        # the configuration's own flags (args = [...], e.g. --slo) come last
        return a + list(self.extra_args) + list(cfg.get("args", ()))


# The synthetic servers cap a SPIN at 1 ms by default (--max-spin-us, docs/security.md), a cap for
# a server anyone on the machine can reach; a benchmark's distribution may ask for longer ones
# (a bimodal 1%/10 ms, say), so the harness lifts the cap to its maximum, 10 s. Servers listen on
# 127.0.0.1 by default, where the load generator sends.
SPIN_CAP = ("--max-spin-us", "10000000")

SERVERS = {
    "jiffy-synth": ServerSpec("{build}/apps/jiffy-synth", frozenset({"spin"}), True,
                              "make build (or cmake --build build)", SPIN_CAP),
    "synth-pthread": ServerSpec("{build}/apps/synth-pthread", frozenset({"spin"}), False,
                                "make build (or cmake --build build)", SPIN_CAP),
    "go-synth": ServerSpec("apps/peers/go-synth/go-synth", frozenset({"spin"}), False,
                           "scripts/build-peers.sh", SPIN_CAP),
    "tokio-synth": ServerSpec("apps/peers/tokio-synth/target/release/tokio-synth",
                              frozenset({"spin"}), False, "scripts/build-peers.sh", SPIN_CAP),
    "jiffy-kv": ServerSpec("{build}/apps/kv/jiffy-kv", frozenset({"kv"}), True,
                           "make build (needs librocksdb-dev)"),
    # Issue 14 §4: RocksDB built from source with Jiffy's probe pass (jiffy-kv-probes), or by the
    # same clang without it (jiffy-kv-clang), and jiffy-synth compiled with the pass and without
    # its hand-placed safepoints (jiffy-synth-probes).
    "jiffy-kv-probes": ServerSpec("{build}/apps/kv/jiffy-kv-probes", frozenset({"kv"}), True,
                                  "scripts/rocksdb-probes.sh (30-45 min, cached)"),
    "jiffy-kv-loops": ServerSpec("{build}/apps/kv/jiffy-kv-loops", frozenset({"kv"}), True,
                                 "scripts/rocksdb-probes.sh --variant loops (30-45 min, cached)"),
    "jiffy-kv-clang": ServerSpec("{build}/apps/kv/jiffy-kv-clang", frozenset({"kv"}), True,
                                 "scripts/rocksdb-probes.sh --variant plain (30-45 min, cached)"),
    "jiffy-synth-probes": ServerSpec("{build}/apps/jiffy-synth-probes", frozenset({"spin"}), True,
                                     "make build with clang-14 and llvm-14-dev installed "
                                     "(scripts/deps.sh)", SPIN_CAP),
    "kv-pthread": ServerSpec("{build}/apps/kv/kv-pthread", frozenset({"kv"}), False,
                             "make build (needs librocksdb-dev)"),
}


def default_name(spec, fields):
    server = fields["server"]
    if spec.jiffy:
        return f"{server}-{fields['policy']}-{fields['preempt']}-q{fields['quantum_us']}"
    return f"{server}-t{fields['threads']}"


class ServerError(Exception):
    """A server that could not be started or died; the message says which and why."""


def binary_path(root, build, server):
    spec = SERVERS[server]
    path = os.path.join(root, spec.binary.format(build=build))
    return path, spec.build_hint


def check_binaries(root, build, servers_needed):
    """Raise ServerError naming every missing binary and what builds it."""
    missing = []
    for server in sorted(servers_needed):
        path, hint = binary_path(root, build, server)
        if not os.access(path, os.X_OK):
            missing.append(f"{server}: {path} is missing (build it with: {hint})")
    if missing:
        raise ServerError("servers not built:\n  " + "\n  ".join(missing))


def environment(cfg):
    env = {k: v for k, v in os.environ.items() if not k.startswith("JIFFY_")}
    if SERVERS[cfg["server"]].jiffy:
        env.update({
            "JIFFY_WORKERS": str(cfg["workers"]),
            "JIFFY_POLICY": cfg["policy"],
            "JIFFY_PREEMPT": cfg["preempt"],
            "JIFFY_QUANTUM_US": str(cfg["quantum_us"]),
        })
    env.update(cfg["env"])
    return env


class Server:
    """One running server process, pinned to one CPU."""

    def __init__(self, root, build, cfg, exp, cpu, log_path, ready_timeout_s=30.0):
        path, _ = binary_path(root, build, cfg["server"])
        spec = SERVERS[cfg["server"]]
        self.name = cfg["server"]
        self.log_path = log_path
        self.cmd = [path] + spec.args(cfg, exp)
        self._log = open(log_path, "wb")
        try:
            self.proc = subprocess.Popen(
                self.cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=self._log,
                env=environment(cfg), preexec_fn=lambda: os.sched_setaffinity(0, {cpu}))
        except OSError as e:
            self._log.close()
            raise ServerError(f"{self.name}: cannot start {path}: {e.strerror}") from None
        self.port = self._wait_ready(ready_timeout_s)

    def _wait_ready(self, timeout_s):
        deadline = time.monotonic() + timeout_s
        buf = b""
        fd = self.proc.stdout.fileno()
        while time.monotonic() < deadline:
            r, _, _ = select.select([fd], [], [], 0.1)
            if r:
                chunk = os.read(fd, 4096)
                if not chunk:
                    break
                buf += chunk
                for line in buf.decode(errors="replace").splitlines():
                    if line.startswith("READY ") and "udp=" in line:
                        for word in line.split():
                            if word.startswith("udp="):
                                # Whatever it prints later must not fill the pipe and block it.
                                threading.Thread(target=self._drain, daemon=True).start()
                                return int(word[4:])
            elif self.proc.poll() is not None:
                break
        self.kill()
        raise ServerError(f"{self.name} did not print READY within {timeout_s:.0f} s "
                          f"(exit status {self.proc.returncode}); its output: "
                          f"{self.tail_log()}")

    def _drain(self):
        try:
            while self.proc.stdout.read(4096):
                pass
        except (OSError, ValueError):
            pass

    def alive(self):
        return self.proc.poll() is None

    def cpu_ticks(self):
        """utime + stime of the whole process, in clock ticks (0 once it has exited)."""
        try:
            with open(f"/proc/{self.proc.pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            return int(fields[11]) + int(fields[12])
        except (OSError, IndexError, ValueError):
            return 0

    def tail_log(self, n=600):
        if not self._log.closed:
            self._log.flush()
        try:
            with open(self.log_path, "rb") as f:
                data = f.read()
        except OSError:
            return "(no log)"
        return data[-n:].decode(errors="replace").strip() or "(nothing)"

    def stop(self, timeout_s=5.0):
        """SIGINT, wait; SIGKILL if it does not exit. Return (exit status, last stderr line)."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout_s)
            except subprocess.TimeoutExpired:
                self.kill()
        self._close()
        lines = self.tail_log(2000).splitlines()
        return self.proc.returncode, (lines[-1] if lines else "")

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self._close()

    def _close(self):
        if self.proc.stdout and not self.proc.stdout.closed:
            self.proc.stdout.close()
        if not self._log.closed:
            self._log.close()
