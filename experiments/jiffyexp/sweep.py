"""jiffyexp.sweep - runs a sweep: every load of every configuration of every experiment.

Owns one point's procedure and the files of a results directory:
  * a point = a fresh server (pinned to the server CPU) + one jiffy-load run (pinned to the load
    CPU) + the server stopped with SIGINT. A fresh server per point: an overloaded run leaves a
    backlog in the server's socket and queues that must not leak into the next load.
  * while it runs, how much CPU everything else on the machine took (/proc/stat minus the server
    and jiffy-load): recorded as foreign_cpu, so a disturbed point can be recognised later.
  * a point whose load generator fell behind its schedule is re-run (run.retries times).
  * repeats are paired: at each load, repeat r of every configuration runs before repeat r + 1
    of any, so a noisy period of the host hits every configuration in the same repeat; the
    verdict (jiffyexp.slo) compares configurations repeat by repeat.
  * the environment, measured in the same sweep: before each load, a short hypervisor-stall
    probe on both CPUs; during each run, the stalls of the load generator's CPU (jiffy-load's
    load_cpu_stalls: gaps in its busy loop) and its worst send lag; and, at the loads of [experiment] floor,
    the path floor: zero-work PING requests through the same server and client.
  * files: results.csv (jiffy-load's CSV rows of the kept attempt of every point: one per class
    and "overall"; label = "<experiment>/<configuration>"), points.jsonl (one JSON object per
    point: the configuration, the load, jiffy-load's summary, validity, server status,
    foreign CPU), logs/ (each server's stderr and jiffy-load's JSON), meta.json (machine,
    commit, the parsed sweep description), and after each experiment slo-<exp>.md and
    <exp>.png (jiffyexp.plot).
"""

import datetime
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import time

from . import servers, slo

HZ = os.sysconf("SC_CLK_TCK")
BE_RE = re.compile(r"be_share=([0-9.]+)")


def allowed_cpus():
    return sorted(os.sched_getaffinity(0))


def busy_ticks():
    with open("/proc/stat") as f:
        v = f.readline().split()
    return int(v[1]) + int(v[2]) + int(v[3]) + int(v[8])  # user nice system steal


def machine():
    info = {"cpus_online": os.cpu_count(), "cpus_allowed": allowed_cpus(),
            "kernel": platform.release(), "python": platform.python_version()}
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    info["cpu"] = line.split(":", 1)[1].strip()
                    break
                if line.startswith("flags") and " hypervisor" in line:
                    info["hypervisor"] = True
    except OSError:
        pass
    return info


def git_commit(root):
    try:
        out = subprocess.run(["git", "-C", root, "rev-parse", "--short", "HEAD"],
                             capture_output=True, text=True, timeout=10)
        dirty = subprocess.run(["git", "-C", root, "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=10).stdout.strip()
        return out.stdout.strip() + ("+dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def load_args(exp, cfg=None):
    if cfg and cfg.get("floor"):
        return ["--workload", "ping"]
    if exp["workload"] == "spin":
        return ["--workload", "spin", "--dist", exp["dist"]]
    a = ["--workload", "kv", "--mix", exp["mix"], "--scan-n", str(exp["scan_n"]),
         "--keys", str(exp["keys"])]
    if exp["service"]:
        a += ["--service", exp["service"]]
    return a


HALT_POLL = "/sys/module/haltpoll/parameters/guest_halt_poll_ns"


class HaltPoll:
    """Sets the KVM guest's cpuidle halt-poll time for the sweep and restores it afterwards.

    On a KVM guest an idle vCPU halts, and the host may take 100 us or more to run it again when
    a packet arrives: at low loads that wake-up, not the scheduling under test, sets every
    server's tail. Polling before halting (Documentation/virt/guest-halt-polling.rst) removes
    most of it, for every server alike. Only when the sweep asks for it; where the knob is
    missing or not writable the sweep goes on and says so. .applied: the value in force, None
    when untouched."""

    def __init__(self, ns, log):
        self.ns, self.log, self.old, self.applied = ns, log, None, None

    def __enter__(self):
        if self.ns is None:
            return self
        try:
            with open(HALT_POLL) as f:
                self.old = f.read().strip()
            with open(HALT_POLL, "w") as f:
                f.write(str(self.ns))
            self.applied = self.ns
            self.log(f"guest_halt_poll_ns = {self.ns} for the sweep (was {self.old}; restored "
                     "at the end)")
        except OSError as e:
            self.old = None
            self.log(f"note: guest_halt_poll_ns not set ({HALT_POLL}: {e.strerror}); idle vCPUs "
                     "halt as usual")
        return self

    def __exit__(self, *exc):
        if self.old is not None:
            try:
                with open(HALT_POLL, "w") as f:
                    f.write(self.old)
            except OSError as e:
                self.log(f"warning: could not restore guest_halt_poll_ns to {self.old}: "
                         f"{e.strerror}")
        return False


STALL_PROBE = r"""
import json, os, sys, time
os.sched_setaffinity(0, {int(sys.argv[1])})
secs, now = float(sys.argv[2]), time.monotonic_ns
t = prev = now(); end = t + int(secs * 1e9); n100 = n1000 = 0; worst = lost = 0
while t < end:
    t = now(); d = t - prev; prev = t
    if d > 100000:
        n100 += 1; lost += d
        n1000 += d > 1000000; worst = max(worst, d)
print(json.dumps({"stalls_100us_per_s": n100 / secs, "stalls_1ms_per_s": n1000 / secs,
                  "max_stall_us": worst / 1e3, "lost_pct": 100.0 * lost / (secs * 1e9)}))
"""


def stall_probe(cpus, secs=2.0):
    """How often the hypervisor takes each of @cpus away while all of them are busy (a Python
    loop reading the clock on each, at once: the condition of a sweep, whose load generator
    busy-polls one CPU). A stall is a gap of more than 100 us between two clock reads. Return
    {cpu: {stalls_100us_per_s, stalls_1ms_per_s, max_stall_us, lost_pct}}."""
    procs = {c: subprocess.Popen([sys.executable, "-c", STALL_PROBE, str(c), str(secs)],
                                 stdout=subprocess.PIPE, text=True) for c in cpus}
    out = {}
    for c, p in procs.items():
        try:
            out[c] = json.loads(p.communicate(timeout=secs + 30)[0])
        except (subprocess.SubprocessError, ValueError):
            out[c] = None
    return out


def describe_stalls(probe):
    parts = []
    for c, r in sorted(probe.items()):
        if r:
            parts.append(f"CPU {c}: {r['stalls_100us_per_s']:.0f}/s > 100 us, "
                         f"{r['stalls_1ms_per_s']:.1f}/s > 1 ms, max {r['max_stall_us']:.0f} us, "
                         f"{r['lost_pct']:.1f}% of the time")
    return "; ".join(parts) or "not measured"


class Sweep:
    def __init__(self, root, build, doc, outdir, load_bin, log=print, only=None):
        self.root, self.build, self.doc = root, build, doc
        self.run_opts = doc["run"]
        self.outdir, self.load_bin, self.log = outdir, load_bin, log
        self.only = only
        cpus = self.run_opts["cpus"]
        if cpus is None:
            have = allowed_cpus()
            if len(have) < 2:
                raise servers.ServerError(
                    f"a sweep needs 2 CPUs (server and load generator apart); this process may "
                    f"use {have}")
            cpus = have[:2]
        self.server_cpu, self.load_cpu = cpus
        os.makedirs(os.path.join(outdir, "logs"), exist_ok=True)
        self.csv_path = os.path.join(outdir, "results.csv")
        self.points_path = os.path.join(outdir, "points.jsonl")

    def write_meta(self):
        meta = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                "commit": git_commit(self.root), "machine": machine(),
                "server_cpu": self.server_cpu, "load_cpu": self.load_cpu,
                "guest_halt_poll_ns": getattr(self, "halt_poll", None),
                "stalls": getattr(self, "stalls", {}), "probes": getattr(self, "probes", {}),
                "sweep": self.doc}
        with open(os.path.join(self.outdir, "meta.json"), "w") as f:
            json.dump(meta, f, indent=1)

    def _append_csv(self, tmp_csv):
        if not os.path.exists(tmp_csv):
            return
        with open(tmp_csv) as f:
            lines = f.read().splitlines()
        if not lines:
            return
        new = not os.path.exists(self.csv_path)
        with open(self.csv_path, "a") as out:
            for i, line in enumerate(lines):
                if i == 0 and not new:
                    continue  # the header, once
                out.write(line + "\n")

    def _one_attempt(self, exp, cfg, load, tag):
        ro = self.run_opts
        logs = os.path.join(self.outdir, "logs")
        point = {"experiment": exp["name"], "config": cfg["name"], "label": cfg["label"],
                 "server": cfg["server"], "policy": cfg.get("policy"),
                 "preempt": cfg.get("preempt"), "quantum_us": cfg.get("quantum_us"),
                 "workers": cfg.get("workers"), "threads": cfg.get("threads"),
                 "preemptive": cfg["preemptive"], "floor": bool(cfg.get("floor")), "load": load}
        try:
            srv = servers.Server(self.root, self.build, cfg, exp, self.server_cpu,
                                 os.path.join(logs, f"{tag}.server.log"))
        except servers.ServerError as e:
            point["server_error"] = str(e)
            return point, None
        tmp_csv = os.path.join(logs, f"{tag}.csv")
        json_path = os.path.join(logs, f"{tag}.json")
        for p in (tmp_csv, json_path):
            if os.path.exists(p):
                os.remove(p)
        cmd = [self.load_bin, "--server", f"127.0.0.1:{srv.port}", "--server-name", cfg["label"],
               "--label", f"{exp['name']}/{cfg['name']}", "--rate", f"{load:g}",
               "--duration", f"{ro['duration_s']:g}", "--warmup", f"{ro['warmup_s']:g}",
               "--seed", str(ro["seed"]), "--cpu", str(self.load_cpu), "--quiet",
               "--csv", tmp_csv, "--json", json_path] + load_args(exp, cfg)
        b0, s0, t0 = busy_ticks(), srv.cpu_ticks(), time.monotonic()
        try:
            lg = subprocess.run(cmd, capture_output=True, text=True,
                                timeout=ro["duration_s"] + 60)
        except subprocess.TimeoutExpired:
            lg = None
        except BaseException:
            srv.kill()  # interrupted: no server may outlive the sweep
            raise
        b1, s1, t1 = busy_ticks(), srv.cpu_ticks(), time.monotonic()
        died = not srv.alive()
        status, last = srv.stop()
        if died:
            point["server_error"] = (f"{cfg['server']} died during the run (exit status "
                                     f"{status}): {srv.tail_log(300)}")
        elif status != 0:
            point["server_error"] = f"{cfg['server']} exited with status {status} on SIGINT"
        point["server_stats"] = last
        be = BE_RE.search(last or "")
        if be:  # --be: the batch work done while the load ran (apps/common/batch.h)
            point["be_share"] = float(be.group(1))
        if lg is None:
            point["load_error"] = "jiffy-load did not finish (timed out)"
            return point, None
        if lg.returncode != 0 or not os.path.exists(json_path):
            point["load_error"] = (f"jiffy-load failed (exit {lg.returncode}): "
                                   f"{(lg.stderr or lg.stdout).strip()[-400:]}")
            return point, None
        with open(json_path) as f:
            res = json.load(f)
        point.update({
            "valid": bool(res.get("valid")), "invalid_reasons": res.get("invalid_reasons", []),
            "offered_rps": res.get("offered_rps"), "achieved_rps": res.get("achieved_rps"),
            "lost": res.get("lost"), "errors": res.get("errors"), "lag_us": res.get("lag_us"),
            "overall": res.get("overall"), "classes": res.get("classes", {}),
            "load_cpu_s": res.get("cpu_s"), "summary": lg.stdout.strip(),
            "load_cpu_stalls": res.get("load_cpu_stalls"),
        })
        foreign = (b1 - b0 - (s1 - s0)) / HZ - (res.get("cpu_s") or 0.0)
        point["foreign_cpu"] = round(max(foreign, 0.0) / max(t1 - t0, 1e-3), 3)
        # the server's own CPU over the run, in CPUs: what an idle spin or a poller costs
        point["server_cpu_used"] = round((s1 - s0) / HZ / max(t1 - t0, 1e-3), 3)
        return point, tmp_csv

    def _one_run(self, exp, cfg, load, tag_base):
        for attempt in range(self.run_opts["retries"] + 1):
            tag = tag_base if attempt == 0 else f"{tag_base}.retry{attempt}"
            point, tmp_csv = self._one_attempt(exp, cfg, load, tag)
            point["attempt"] = attempt
            if not slo.sender_failed(point) or attempt == self.run_opts["retries"]:
                return point, tmp_csv
            self.log(f"    load generator fell behind ({slo.status(point, exp)[1]}); again")

    def run_load(self, exp, configs, load, probe=None):
        """Every configuration of @configs at @load, up to run.repeats runs each, paired: round r
        runs every configuration once before round r + 1 (repeat = "miss": only those whose
        first run missed the SLO run again). Each run is retried when the load generator failed.
        The point kept per configuration is its median run by the SLO class's p99; every run's
        p99, status, load-CPU stalls and send lag are kept in "runs". Returns {config name: point}."""
        runs = {c["name"]: [] for c in configs}
        for r in range(self.run_opts["repeats"]):
            for cfg in configs:
                if (r and self.run_opts["repeat"] == "miss" and slo.status(
                        runs[cfg["name"]][0][0], slo.judged_as(exp, cfg))[0] != slo.MISSES):
                    continue
                tag = f"{exp['name']}.{cfg['name']}.{load:g}" + (f".rep{r}" if r else "")
                point, tmp_csv = self._one_run(exp, cfg, load, tag)
                point["repeat"] = r
                runs[cfg["name"]].append((point, tmp_csv))
        out = {}
        for cfg in configs:
            e = slo.judged_as(exp, cfg)
            point, tmp_csv = median_run(runs[cfg["name"]], e)
            point = dict(point)
            point["runs"] = [run_summary(p, e) for p, _ in runs[cfg["name"]]]
            point["repeats"] = [("miss" if v["p99_us"] is None and v["status"] == slo.MISSES
                                 else v["p99_us"]) for v in point["runs"]]
            point["stall_hit"] = slo.stall_hit(point, e)
            point["probe"] = probe
            if tmp_csv:
                self._append_csv(tmp_csv)
            with open(self.points_path, "a") as f:
                f.write(json.dumps(point) + "\n")
            out[cfg["name"]] = point
        return out

    def floor_config(self, exp):
        """The path floor's pseudo-configuration: zero-work PING requests through the
        experiment's first Jiffy server, run to completion (or its first server)."""
        base = next((c for c in exp["configs"] if c.get("policy") is not None),
                    exp["configs"][0])
        cfg = dict(base, name="path-floor", floor=True, preemptive=False,
                   label=f"path floor: zero-work PING through {base['server']}")
        if cfg.get("policy") is not None:
            cfg.update(policy="fifo", preempt="none")
        return cfg

    def run_experiment(self, exp):
        """Load by load, every configuration still going at each load: the host's noise comes in
        periods of minutes, and interleaving makes a noisy period hit every configuration at
        the same loads instead of one configuration's whole curve. A configuration stops
        (slo.should_stop) only after run.stop_after consecutive loads at which every one of its
        runs missed, and never while a configuration that does not preempt still meets the SLO
        at that load."""
        stop_after = self.run_opts["stop_after"]
        configs = [c for c in exp["configs"]
                   if not self.only or any(o in c["name"] for o in self.only)]
        points = {c["name"]: [] for c in configs}
        floor_cfg = self.floor_config(exp) if exp.get("floor") and configs else None
        if floor_cfg:
            points[floor_cfg["name"]] = []
        going = list(configs)
        self.probes.setdefault(exp["name"], {})
        for load in exp["loads"]:
            probe = (stall_probe([self.server_cpu, self.load_cpu], secs=self.run_opts["probe_s"])
                     if self.run_opts["probe_s"] > 0 else {})
            self.probes[exp["name"]][f"{load:g}"] = probe
            self.log(f"  [{exp['name']}] {load:,.0f}/s: stalls before this load: "
                     + describe_stalls(probe))
            todo = list(going)
            if floor_cfg and load in exp["floor"]:
                todo.append(floor_cfg)
            got = self.run_load(exp, todo, load, probe)
            for cfg in todo:
                p = got[cfg["name"]]
                points[cfg["name"]].append(p)
                st, why = slo.status(p, slo.judged_as(exp, cfg))
                extra = f", other load {p['foreign_cpu']:.2f} CPU" if "foreign_cpu" in p else ""
                reps = "/".join("-" if v is None else "miss" if v == "miss" else f"{v:.0f}"
                                for v in p["repeats"])
                self.log(f"  [{exp['name']}] {cfg['name']:<34} {load:>9,.0f}/s: {st:<7} {why}"
                         f" (runs: {reps}){' STALL-HIT' if p['stall_hit'] else ''}{extra}")
            for cfg in list(going):
                p = got[cfg["name"]]
                if p.get("server_error") and "did not print READY" in p["server_error"]:
                    self.log(f"    {cfg['name']}: the server does not start; skipping its "
                             "other loads")
                    going.remove(cfg)
            for cfg in list(going):
                if slo.should_stop(points[cfg["name"]], exp, stop_after,
                                   [points[c["name"]] for c in configs
                                    if not c["preemptive"] and c is not cfg]):
                    going.remove(cfg)
            if not going:
                break
        return points

    def run(self):
        with HaltPoll(self.run_opts["guest_halt_poll_ns"], self.log) as hp:
            self.halt_poll = hp.applied
            return self._run()

    def _run(self):
        self.probes = {}
        self.stalls = {"before": stall_probe([self.server_cpu, self.load_cpu])}
        self.log("hypervisor stalls with both CPUs busy, before: "
                 + describe_stalls(self.stalls["before"]))
        self.write_meta()
        results = []
        for exp in self.doc["experiments"]:
            n = sum(1 for c in exp["configs"]
                    if not self.only or any(o in c["name"] for o in self.only))
            self.log(f"== experiment {exp['name']}: {exp['title']} ({n} configurations x up to "
                     f"{len(exp['loads'])} loads; server on CPU {self.server_cpu}, jiffy-load on "
                     f"CPU {self.load_cpu})")
            points = self.run_experiment(exp)
            results.append((exp, points))
        self.stalls["after"] = stall_probe([self.server_cpu, self.load_cpu])
        self.log("hypervisor stalls with both CPUs busy, after: "
                 + describe_stalls(self.stalls["after"]))
        self.write_meta()
        return results


def slo_p99(point, exp):
    """The SLO class's p99 of a run; None when the run says nothing about the server."""
    st, _ = slo.status(point, exp)
    if st == slo.UNKNOWN:
        return None
    cls = point.get("classes", {}).get(exp["slo_class"])
    if point.get("server_error") or not cls or not cls.get("count"):
        return float("inf")
    v = cls.get(slo.metric(exp)[0])
    return v if point.get("valid") and v is not None else float("inf")


def run_summary(point, exp):
    """What the verdict needs of one run: its SLO-class p99 (None when the run says nothing
    about the server or the class is absent), its status, and its evidence of a stall."""
    st, _ = slo.status(point, exp)
    v = slo_p99(point, exp)
    return {"status": st, "p99_us": None if v in (None, float("inf")) else v,
            "repeat": point.get("repeat", 0),
            "lag_max_us": (point.get("lag_us") or {}).get("max"),
            "server_cpu_used": point.get("server_cpu_used"),
            "be_share": point.get("be_share"),
            "load_cpu_stalls": point.get("load_cpu_stalls"),
            "classes_p99": {k: c.get("p99_us") for k, c in point.get("classes", {}).items()}}


def median_run(runs, exp):
    """The (point, csv) of @runs with the median SLO-class p99 (the upper one of two)."""
    known = [r for r in runs if slo_p99(r[0], exp) is not None]
    if not known:
        return runs[-1]
    known.sort(key=lambda r: slo_p99(r[0], exp))
    return known[len(known) // 2]


def read_points(path):
    """points.jsonl -> {experiment: {config: [point, ...]}}"""
    out = {}
    with open(path) as f:
        for line in f:
            if line.strip():
                p = json.loads(line)
                out.setdefault(p["experiment"], {}).setdefault(p["config"], []).append(p)
    return out


def find_tool(root, rel, hint):
    path = os.path.join(root, rel)
    if os.access(path, os.X_OK):
        return path
    found = shutil.which(os.path.basename(rel))
    if found:
        return found
    raise servers.ServerError(f"{rel} is missing (build it with: {hint})")
