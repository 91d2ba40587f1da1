"""jiffyexp.simtwin - the simulated twin of a measured Jiffy configuration (jiffy-sim, sim/).

Owns the mapping from a measured configuration to jiffy-sim's flags (docs/simulator.md,
"Overlaying a measured jiffy-load run"), running it over the experiment's loads, and reading
its CSV (jiffy-load's columns) back as points the plots and the SLO table understand.

    [experiment.sim]                 # optional, in a sweep description
    configs = ["jiffy-twoq-deadline-q10", "jiffy-fifo-rtc"]   # Jiffy configurations to twin
    calib = "sim/repro/results/calib-vm.json"  # jiffy-calibrate --out: the measured costs
    overhead_us = 8.0                # the server's own CPU per request (receive, spawn, reply),
                                     #   added to every service time of the twin
    base_us = 40.0                   # added to every simulated latency: what jiffy-load sees
                                     #   that no scheduler causes (the unloaded round trip)
    requests = 200000                # simulated requests per load

The two constants are what the simulator does not model and are measured on the machine
(docs/performance.md says how): a twin without them is the scheduling alone. The mechanism is
the measured cost model of the same mechanism (measured:M), the quantum, workers, idle spin
and the single receiver uthread (--arrival-worker 0) are the configuration's, and so are
central's settings: JIFFY_CENTRAL, JIFFY_CENTRAL_PREEMPTED and JIFFY_CENTRAL_SLO_US from env,
and a server's --slo TYPE=US from args (types are the request classes in jiffy-load's order:
bimodal short, long; trimodal short, medium, long). A configuration whose env or args hold
anything else cannot be twinned faithfully and is refused (untwinnable()).
"""

import csv
import os
import re
import subprocess

UNITS = {"ns": 1e-3, "us": 1.0, "ms": 1e3, "s": 1e6}
SIM_FIELDS = {"configs", "calib", "overhead_us", "base_us", "requests"}


class TwinError(Exception):
    pass


def _us(text):
    m = re.fullmatch(r"([0-9]*\.?[0-9]+)(ns|us|ms|s)", text)
    if not m:
        raise TwinError(f"'{text}': not a time with a unit")
    return float(m.group(1)) * UNITS[m.group(2)]


def add_overhead(dist, overhead_us):
    """@dist (jiffy-load's spec) with @overhead_us added to every service time. Only the specs
    whose times are constants (fixed, bimodal, trimodal) can be shifted exactly."""
    if not overhead_us:
        return dist
    parts = dist.split(":")
    kind = parts[0]
    if kind == "fixed" and len(parts) == 2:
        times = [1]
    elif kind == "bimodal" and len(parts) == 4:
        times = [2, 3]
    elif kind == "trimodal" and len(parts) == 6:
        times = [2, 4, 5]
    else:
        raise TwinError(f"--dist '{dist}': overhead_us needs fixed, bimodal or trimodal service "
                        "times (a constant added to a random one is another distribution)")
    for i in times:
        parts[i] = f"{_us(parts[i]) + overhead_us:.4f}us"
    return ":".join(parts)


def check(where, sim, exp):
    """Refuse a bad [experiment.sim] table with a message naming the field."""
    if not isinstance(sim, dict):
        raise TwinError(f"{where}: [experiment.sim] must be a table")
    unknown = sorted(set(sim) - SIM_FIELDS)
    if unknown:
        raise TwinError(f"{where}: [experiment.sim]: unknown field(s) {', '.join(unknown)}; "
                        f"known: {', '.join(sorted(SIM_FIELDS))}")
    if exp["workload"] != "spin":
        raise TwinError(f"{where}: [experiment.sim] needs workload = \"spin\" (a --dist)")
    names = {c["name"]: c for c in exp["configs"]}
    cfgs = sim.get("configs")
    if not isinstance(cfgs, list) or not cfgs:
        raise TwinError(f"{where}: [experiment.sim] configs: a list of configuration names")
    for n in cfgs:
        if n not in names:
            raise TwinError(f"{where}: [experiment.sim] configs: no configuration {n!r}")
        if "jiffy" not in names[n]["server"]:
            raise TwinError(f"{where}: [experiment.sim] configs: {n!r} is not a Jiffy server "
                            "(the simulator runs Jiffy's policies)")
    for f in ("overhead_us", "base_us"):
        v = sim.get(f, 0.0)
        if isinstance(v, bool) or not isinstance(v, (int, float)) or v < 0:
            raise TwinError(f"{where}: [experiment.sim] {f} = {v!r}: a number >= 0")
    req = sim.get("requests", 200000)
    if isinstance(req, bool) or not isinstance(req, int) or req < 1000:
        raise TwinError(f"{where}: [experiment.sim] requests = {req!r}: an integer >= 1000")
    add_overhead(exp["dist"], sim.get("overhead_us", 0.0))  # refuses what it cannot shift


CENTRAL_ENV = {"JIFFY_CENTRAL": "--central", "JIFFY_CENTRAL_PREEMPTED": "--central-preempted",
               "JIFFY_CENTRAL_SLO_US": "--central-slo"}
TWIN_ENV = set(CENTRAL_ENV) | {"JIFFY_SPIN_US"}


def class_names(dist):
    kind = dist.split(":")[0]
    return {"bimodal": ["short", "long"], "trimodal": ["short", "medium", "long"]}.get(kind,
                                                                                       ["all"])


def _slo_arg(value, dist):
    """A server's --slo TYPE=US[,...] as jiffy-sim's --slo CLASS=Tus[,...]."""
    names, out = class_names(dist), []
    for item in value.split(","):
        t, _, us = item.partition("=")
        if not t.isdigit() or int(t) >= len(names) or not us.isdigit():
            raise TwinError(f"--slo {value!r}: {item!r} is not TYPE=US with TYPE a class of "
                            f"--dist {dist!r} (0..{len(names) - 1}: {', '.join(names)})")
        out.append(f"{names[int(t)]}={us}us")
    return ",".join(out)


def untwinnable(cfg, exp):
    """Why @cfg's twin would not simulate what is measured (None when it would)."""
    extra = sorted(set(cfg.get("env", {})) - TWIN_ENV)
    if extra:
        return f"env {', '.join(extra)} has no jiffy-sim counterpart in jiffyexp/simtwin.py"
    args = list(cfg.get("args", []))
    while args:
        if args[0] != "--slo" or len(args) < 2:
            return f"args {cfg['args']!r}: only --slo TYPE=US is mapped to jiffy-sim"
        try:
            _slo_arg(args[1], exp.get("dist", ""))
        except TwinError as e:
            return str(e)
        args = args[2:]
    return None


def sim_args(cfg, exp, sim, root):
    mech = cfg["preempt"]
    args = ["--cores", str(cfg["workers"]), "--policy", cfg["policy"],
            "--quantum", f"{cfg['quantum_us']}us", "--arrival-worker", "0",
            "--dist", add_overhead(exp["dist"], sim.get("overhead_us", 0.0)),
            "--requests", str(sim.get("requests", 200000))]
    if mech != "none":
        calib = sim.get("calib", "sim/repro/results/calib-vm.json")
        args += ["--mechanism", f"measured:{mech}", "--calib", os.path.join(root, calib)]
    spin = cfg["env"].get("JIFFY_SPIN_US", "50")
    args += ["--park-after", f"{spin}us", "--wake-cost", "20us"]
    for var, flag in CENTRAL_ENV.items():
        if var in cfg["env"]:
            v = cfg["env"][var]
            args += [flag, f"{v}us" if var.endswith("_US") else v]
    a = list(cfg.get("args", []))
    for i in range(0, len(a) - 1, 2):
        if a[i] == "--slo":
            args += ["--slo", _slo_arg(a[i + 1], exp["dist"])]
    return args


def run(sim_bin, root, exp, cfg, sim, outdir, log=print):
    """Run the twin of @cfg over the experiment's loads; return points like measured ones
    (with "sim": True and base_us added to every latency)."""
    csv_path = os.path.join(outdir, "sim.csv")
    label = f"{exp['name']}/{cfg['name']}~sim"
    args = [sim_bin] + sim_args(cfg, exp, sim, root) + [
        "--rates", ",".join(f"{x:g}" for x in exp["loads"]), "--label", label,
        "--server-name", f"jiffy-sim twin of {cfg['label']}", "--csv", csv_path, "--quiet"]
    r = subprocess.run(args, capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        raise TwinError(f"jiffy-sim failed (exit {r.returncode}) for {cfg['name']}: "
                        f"{r.stderr.strip()[-300:]}\n  command: {' '.join(args)}")
    log(f"  [{exp['name']}] {cfg['name']}: simulated twin over {len(exp['loads'])} loads "
        f"({' '.join(args[1:])})")
    return read_points(csv_path, label, sim.get("base_us", 0.0))


def read_points(csv_path, label, base_us=0.0):
    """jiffy-load/jiffy-sim CSV rows of @label -> points (one per rate)."""
    by_rate = {}
    with open(csv_path) as f:
        for row in csv.DictReader(f):
            if row["label"] != label:
                continue
            rate = float(row["rate"])
            p = by_rate.setdefault(rate, {"load": rate, "classes": {}, "valid": True, "sim": True})
            p["valid"] = p["valid"] and row["valid"] == "true"
            cls = {"count": int(row["count"]), "lost": int(row["lost"])}
            for k in ("p50_us", "p90_us", "p99_us", "p999_us", "max_us", "mean_us"):
                cls[k] = float(row[k]) + base_us
            # The twin's slowdowns are against its own service times (overhead_us included) and
            # without base_us: not comparable with jiffy-load's, so not drawn.
            for k in ("slow_p50", "slow_p99", "slow_p999"):
                cls[k] = None
            if row["class"] == "overall":
                p["overall"] = cls
            else:
                p["classes"][row["class"]] = cls
    return [by_rate[r] for r in sorted(by_rate)]
