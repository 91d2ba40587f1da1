"""jiffyexp.config - reads and checks the TOML description of a sweep (experiments/configs/).

Owns: the schema below, its defaults, the expansion of list-valued fields into one
configuration per combination (server x policy x mechanism x quantum x threads), and the error
messages: every problem names the file, the experiment, the configuration and the field. Nothing
here runs anything.

    [run]                          # all optional
    duration_s = 3.0               # jiffy-load --duration (warm-up included)
    warmup_s = 0.5
    seed = 1
    stop_after = 2                 # stop a configuration after N consecutive loads at which every
                                   #   run missed the SLO, unless a configuration that does not
                                   #   preempt still meets it there (0: never stop)
    retries = 1                    # re-run a point whose load generator fell behind
    repeats = 1                    # up to this many runs per point, paired across configurations;
    repeat = "miss"                #   the median by the SLO class's p99 is kept; "miss": repeat
                                   #   only a point that missed the SLO, "always": every point
    probe_s = 0.3                  # the hypervisor-stall probe before each load, seconds (0: none)
    verdict_goal = 3.0             # the verdict: preemptive / best non-preemptive >= this
    guest_halt_poll_ns = 200000    # KVM guests: poll this long before halting an idle vCPU during
                                   #   the sweep (cpuidle haltpoll; restored afterwards). Unset:
                                   #   leave the machine as it is
    cpus = [0, 1]                  # server CPU, load-generator CPU (default: first two allowed)

    [[experiment]]
    name = "synth"                 # [a-z0-9_-]+, unique
    title = "..."                  # for plots and tables
    workload = "spin"              # spin (dist) or kv (mix, scan_n, keys, service)
    dist = "bimodal:99.5:500ns:500us"
    slo_class = "short"            # the class the SLO is about
    slo_p99_us = 200               # ... and its p99 bound (or slo_slow_p999 = 50: a bound on its
                                   #   p99.9 slowdown, latency / service time; one of the two)
    loads = [2000, 5000, 10000]    # offered loads, requests/s, ascending
    colocation = [["lc-be", "lc-alone"]]  # optional: LC/BE pairs (configuration names: the server
                                   #   with best-effort work, the same alone) for the co-location
                                   #   table: LC p99 against alone, BE share against the CPU the
                                   #   LC server leaves idle
    floor = [2000, 10000]          # optional: loads at which the path floor is measured (zero-work
                                   #   PING through the first Jiffy server, run to completion);
                                   #   true: the first and the last load

    [[experiment.config]]
    server = "jiffy-synth"         # see jiffyexp.servers.SERVERS
    policy = "twoq"                # Jiffy servers: JIFFY_POLICY (a list sweeps it)
    preempt = "deadline"           # JIFFY_PREEMPT (list)
    quantum_us = 10                # JIFFY_QUANTUM_US (list)
    workers = 1                    # JIFFY_WORKERS
    threads = 32                   # peers: --threads (list)
    env = { JIFFY_SPIN_US = "20" } # anything else for the server's environment
    args = ["--slo", "0=10,1=1000"] # appended to the server's command line (strings; not the
                                   #   flags the harness sets: --port, --resp-port, --threads,
                                   #   --keys)
    name = "jiffy-{policy}-{preempt}-q{quantum_us}"   # optional; placeholders from the fields
    label = "Jiffy twoq, deadline, q = {quantum_us} us" # optional, for legends

    [experiment.sim]               # optional: jiffy-sim twins of Jiffy configurations, overlaid
    configs = ["jiffy-twoq-deadline-q10"]   # (jiffyexp/simtwin.py documents the fields)
"""

import itertools
import re
import tomllib

from . import servers, simtwin

RUN_DEFAULTS = {
    "duration_s": 3.0,
    "warmup_s": 0.5,
    "seed": 1,
    "stop_after": 2,
    "retries": 1,
    "repeats": 1,
    "repeat": "miss",
    "cpus": None,
    "guest_halt_poll_ns": None,
    "probe_s": 0.3,
    "verdict_goal": 3.0,
}
REPEAT_MODES = ("miss", "always")
WORKLOADS = ("spin", "kv")
KV_DEFAULTS = {"mix": "get:99.5,scan:0.5", "scan_n": 1500, "keys": 100000, "service": None}
SWEEPABLE = ("policy", "preempt", "quantum_us", "threads")
HARNESS_FLAGS = ("--port", "--resp-port", "--threads", "--keys")  # jiffyexp.servers sets them
NAME_RE = re.compile(r"^[A-Za-z0-9_.=+-]+$")


class ConfigError(Exception):
    """A sweep description that cannot be run; the message says where and why."""


def _check_keys(where, table, allowed):
    unknown = sorted(set(table) - set(allowed))
    if unknown:
        raise ConfigError(f"{where}: unknown field(s) {', '.join(unknown)}; "
                          f"known: {', '.join(sorted(allowed))}")


def _number(where, field, value, lo=None, integer=False):
    ok_type = (int,) if integer else (int, float)
    if isinstance(value, bool) or not isinstance(value, ok_type):
        kind = "an integer" if integer else "a number"
        raise ConfigError(f"{where}: {field} = {value!r}: must be {kind}")
    if lo is not None and value < lo:
        raise ConfigError(f"{where}: {field} = {value!r}: must be >= {lo}")
    return value


def _run_section(path, raw):
    run = dict(RUN_DEFAULTS)
    table = raw.get("run", {})
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: [run] must be a table")
    _check_keys(f"{path} [run]", table, RUN_DEFAULTS)
    run.update(table)
    where = f"{path} [run]"
    _number(where, "duration_s", run["duration_s"], lo=0.5)
    _number(where, "warmup_s", run["warmup_s"], lo=0)
    if run["warmup_s"] >= run["duration_s"]:
        raise ConfigError(f"{where}: warmup_s ({run['warmup_s']}) must be shorter than "
                          f"duration_s ({run['duration_s']})")
    _number(where, "seed", run["seed"], lo=0, integer=True)
    _number(where, "stop_after", run["stop_after"], lo=0, integer=True)
    _number(where, "retries", run["retries"], lo=0, integer=True)
    _number(where, "repeats", run["repeats"], lo=1, integer=True)
    _number(where, "probe_s", run["probe_s"], lo=0)
    _number(where, "verdict_goal", run["verdict_goal"], lo=0)
    if run["repeat"] not in REPEAT_MODES:
        raise ConfigError(f"{where}: repeat = {run['repeat']!r}: must be one of "
                          f"{', '.join(REPEAT_MODES)}")
    if run["guest_halt_poll_ns"] is not None:
        _number(where, "guest_halt_poll_ns", run["guest_halt_poll_ns"], lo=0, integer=True)
    cpus = run["cpus"]
    if cpus is not None:
        if (not isinstance(cpus, list) or len(cpus) != 2
                or not all(isinstance(c, int) and not isinstance(c, bool) and c >= 0 for c in cpus)
                or cpus[0] == cpus[1]):
            raise ConfigError(f"{where}: cpus = {cpus!r}: must be two different CPU numbers "
                              "[server, load generator]")
    return run


def _expand(where, cfg):
    """One dict per combination of the list-valued SWEEPABLE fields."""
    axes = []
    for field in SWEEPABLE:
        value = cfg.get(field)
        if isinstance(value, list):
            if not value:
                raise ConfigError(f"{where}: {field} = []: an empty list sweeps nothing")
            axes.append([(field, v) for v in value])
    out = []
    for combo in itertools.product(*axes):
        one = dict(cfg)
        one.update(combo)
        out.append(one)
    return out


def _server_args(where, args):
    """The configuration's extra command-line arguments for its server (a list of strings)."""
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        raise ConfigError(f"{where}: args = {args!r}: must be a list of strings, the server's "
                          "extra command-line arguments (e.g. [\"--slo\", \"0=10,1=1000\"])")
    taken = sorted(set(args) & set(HARNESS_FLAGS))
    if taken:
        raise ConfigError(f"{where}: args: {', '.join(taken)} is set by the harness "
                          f"({', '.join(HARNESS_FLAGS)} come from the description)")
    return list(args)


def _config(where, exp, cfg):
    allowed = ("server", "policy", "preempt", "quantum_us", "workers", "threads", "env",
               "args", "name", "label")
    _check_keys(where, cfg, allowed)
    server = cfg.get("server")
    if server not in servers.SERVERS:
        raise ConfigError(f"{where}: server = {server!r}: unknown; known: "
                          f"{', '.join(sorted(servers.SERVERS))}")
    spec = servers.SERVERS[server]
    if exp["workload"] not in spec.workloads:
        raise ConfigError(f"{where}: server {server} does not serve the {exp['workload']} "
                          f"workload of experiment {exp['name']} (it serves "
                          f"{', '.join(sorted(spec.workloads))})")
    c = {"server": server, "env": {}}
    if spec.jiffy:
        for field in ("threads",):
            if field in cfg:
                raise ConfigError(f"{where}: {field}: not a setting of {server} (a Jiffy server: "
                                  "use workers, policy, preempt, quantum_us)")
        c["policy"] = str(cfg.get("policy", "ws"))
        c["preempt"] = str(cfg.get("preempt", "none"))
        c["quantum_us"] = _number(where, "quantum_us", cfg.get("quantum_us", 100), lo=1,
                                  integer=True)
        c["workers"] = _number(where, "workers", cfg.get("workers", 1), lo=1, integer=True)
    else:
        for field in ("policy", "preempt", "quantum_us", "workers"):
            if field in cfg:
                raise ConfigError(f"{where}: {field}: not a setting of {server} (a peer: "
                                  "use threads)")
        c["threads"] = _number(where, "threads", cfg.get("threads", 1), lo=1, integer=True)
    env = cfg.get("env", {})
    if not isinstance(env, dict) or not all(isinstance(k, str) for k in env):
        raise ConfigError(f"{where}: env must be a table of NAME = \"value\"")
    c["env"] = {k: str(v) for k, v in env.items()}
    c["args"] = _server_args(where, cfg.get("args", []))
    fields = dict(c)
    fields.pop("env")
    fields.pop("args")
    default_name = servers.default_name(spec, fields)
    try:
        c["name"] = str(cfg.get("name", default_name)).format(**fields)
        c["label"] = str(cfg.get("label", c["name"])).format(**fields)
    except (KeyError, IndexError, ValueError) as e:
        raise ConfigError(f"{where}: name/label: bad placeholder {e}; available: "
                          f"{', '.join(sorted(fields))}") from None
    if not NAME_RE.match(c["name"]):
        raise ConfigError(f"{where}: name {c['name']!r}: use letters, digits and _ . = + - only")
    c["preemptive"] = bool(spec.jiffy and c["preempt"] != "none")
    return c


def _experiment(path, index, exp_raw, run):
    where = f"{path} experiment #{index + 1}"
    if not isinstance(exp_raw, dict):
        raise ConfigError(f"{where}: must be a table")
    allowed = ("name", "title", "workload", "dist", "slo_class", "slo_p99_us", "slo_slow_p999",
               "loads", "config",
               "mix", "scan_n", "keys", "service", "sim", "floor", "colocation")
    _check_keys(where, exp_raw, allowed)
    name = exp_raw.get("name")
    if not isinstance(name, str) or not re.match(r"^[a-z0-9_-]+$", name):
        raise ConfigError(f"{where}: name = {name!r}: required, [a-z0-9_-]+")
    where = f"{path} experiment {name!r}"
    exp = {"name": name, "title": str(exp_raw.get("title", name))}
    workload = exp_raw.get("workload")
    if workload not in WORKLOADS:
        raise ConfigError(f"{where}: workload = {workload!r}: must be one of {', '.join(WORKLOADS)}")
    exp["workload"] = workload
    if workload == "spin":
        for field in KV_DEFAULTS:
            if field in exp_raw:
                raise ConfigError(f"{where}: {field}: only for workload = \"kv\"")
        if not isinstance(exp_raw.get("dist"), str):
            raise ConfigError(f"{where}: dist: required for workload = \"spin\" (e.g. "
                              "\"bimodal:99.5:500ns:500us\"; load/README.md)")
        exp["dist"] = exp_raw["dist"]
    else:
        if "dist" in exp_raw:
            raise ConfigError(f"{where}: dist: only for workload = \"spin\" (kv uses mix)")
        for field, default in KV_DEFAULTS.items():
            exp[field] = exp_raw.get(field, default)
        _number(where, "scan_n", exp["scan_n"], lo=1, integer=True)
        _number(where, "keys", exp["keys"], lo=1, integer=True)
    slo_class = exp_raw.get("slo_class")
    if not isinstance(slo_class, str) or not slo_class:
        raise ConfigError(f"{where}: slo_class: required (the request class the SLO is about, "
                          "e.g. \"short\" or \"get\")")
    exp["slo_class"] = slo_class
    if ("slo_p99_us" in exp_raw) == ("slo_slow_p999" in exp_raw):
        raise ConfigError(f"{where}: give exactly one of slo_p99_us (the SLO class's p99 latency "
                          "bound) and slo_slow_p999 (its p99.9 slowdown bound)")
    if "slo_p99_us" in exp_raw:
        exp["slo_p99_us"] = _number(where, "slo_p99_us", exp_raw["slo_p99_us"], lo=1)
    else:
        exp["slo_slow_p999"] = _number(where, "slo_slow_p999", exp_raw["slo_slow_p999"], lo=1)
        exp["slo_p99_us"] = None
        if exp["workload"] == "kv" and not exp.get("service"):
            raise ConfigError(f"{where}: slo_slow_p999 needs service (the nominal service times "
                              "slowdowns are computed against)")
    loads = exp_raw.get("loads")
    if not isinstance(loads, list) or not loads:
        raise ConfigError(f"{where}: loads: required, a non-empty list of requests/s")
    for v in loads:
        _number(where, "loads", v, lo=1)
    if sorted(loads) != loads or len(set(loads)) != len(loads):
        raise ConfigError(f"{where}: loads must be strictly ascending")
    exp["loads"] = [float(v) for v in loads]
    floor = exp_raw.get("floor", [])
    if floor is True:
        floor = [loads[0], loads[-1]]
    elif floor is False:
        floor = []
    if not isinstance(floor, list):
        raise ConfigError(f"{where}: floor = {floor!r}: must be true, false or a list of loads")
    for v in floor:
        _number(where, "floor", v, lo=1)
        if float(v) not in exp["loads"]:
            raise ConfigError(f"{where}: floor: {v!r} is not one of the experiment's loads")
    exp["floor"] = sorted(float(v) for v in floor)
    configs_raw = exp_raw.get("config")
    if not isinstance(configs_raw, list) or not configs_raw:
        raise ConfigError(f"{where}: needs at least one [[experiment.config]]")
    exp["configs"] = []
    for j, cfg in enumerate(configs_raw):
        cwhere = f"{where} config #{j + 1}"
        if not isinstance(cfg, dict):
            raise ConfigError(f"{cwhere}: must be a table")
        for one in _expand(cwhere, cfg):
            exp["configs"].append(_config(cwhere, exp, one))
    names = [c["name"] for c in exp["configs"]]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise ConfigError(f"{where}: configuration names must be unique; repeated: "
                          f"{', '.join(dup)} (give each a name, or use placeholders such as "
                          "{quantum_us})")
    coloc = exp_raw.get("colocation", [])
    if (not isinstance(coloc, list)
            or not all(isinstance(x, list) and len(x) == 2 and all(n in names for n in x)
                       for x in coloc)):
        raise ConfigError(f"{where}: colocation = {coloc!r}: must be a list of [\"with BE\", "
                          "\"LC alone\"] pairs of configuration names")
    exp["colocation"] = [list(x) for x in coloc]
    if "sim" in exp_raw:
        try:
            simtwin.check(where, exp_raw["sim"], exp)
        except simtwin.TwinError as e:
            raise ConfigError(str(e)) from None
        for c in exp["configs"]:
            why = simtwin.untwinnable(c, exp) if c["name"] in exp_raw["sim"]["configs"] else None
            if why:
                raise ConfigError(f"{where}: [experiment.sim] configs: {c['name']!r} cannot be "
                                  f"twinned: {why}")
        exp["sim"] = dict(exp_raw["sim"])
    return exp


def load(path):
    """Parse @path; return {"run": {...}, "experiments": [...]} or raise ConfigError."""
    try:
        with open(path, "rb") as f:
            raw = tomllib.load(f)
    except OSError as e:
        raise ConfigError(f"{path}: cannot read: {e.strerror}") from None
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"{path}: not valid TOML: {e}") from None
    return parse(path, raw)


def parse(path, raw):
    """The checks of load() on an already parsed table (tests use it)."""
    _check_keys(path, raw, ("run", "experiment"))
    run = _run_section(path, raw)
    exps_raw = raw.get("experiment")
    if not isinstance(exps_raw, list) or not exps_raw:
        raise ConfigError(f"{path}: needs at least one [[experiment]]")
    exps = [_experiment(path, i, e, run) for i, e in enumerate(exps_raw)]
    names = [e["name"] for e in exps]
    if len(set(names)) != len(names):
        raise ConfigError(f"{path}: experiment names must be unique")
    return {"run": run, "experiments": exps}
