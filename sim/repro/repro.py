#!/usr/bin/env python3
"""sim/repro/repro.py - the papers' simulated results, reproduced with jiffy-sim.

Owns: the sweeps of each reproduction (the exact jiffy-sim command lines, printed as they run),
their CSV (jiffy-load's columns, one file per figure in sim/repro/results/) and their PNG
(docs/img/sim-*.png). docs/simulator.md discusses what matches the papers and what does not.

  fig1   Shinjuku (NSDI'19) Figure 1: p99 latency vs load of d-FCFS, c-FCFS, PS and c-PRE on
         16 cores, for exponential, lognormal(1, 10) and bimodal 99.5 %/0.5 % at 0.5/500 us.
  fig2   Shinjuku Figure 2: bimodal 50 % 1 us / 50 % 100 us on 16 cores: p99 of the short and
         of the long requests, and the p99 slowdown of all, for d-FCFS, c-FCFS, PS, c-PRE-MQ.
  xui    xUI (003) §5.2: RocksDB in Aspen with a 5 us quantum: GET p99 vs load under UIPI
         (SW timer), UIPI + tracking, and KB timer + tracking; GET throughput at the SLO.
  all    the three.

Usage: $(scripts/venv.sh) sim/repro/repro.py [--sim build/sim/jiffy-sim] [--quick] fig1|fig2|xui|all
Each reproduction takes well under a minute on one core of the project's VM.
"""

import argparse
import math
import csv
import os
import shlex
import subprocess
import sys
import time

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
RESULTS = os.path.join(ROOT, "sim", "repro", "results")
IMG = os.path.join(ROOT, "docs", "img")

LOADS = [0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6, 0.65, 0.7, 0.75,
         0.8, 0.85, 0.9, 0.95]


def sim_cmd(args, extra):
    return [args.sim, "--quiet"] + extra


def run(args, extra, quiet=False):
    cmd = sim_cmd(args, extra)
    if not quiet:
        print("  $", " ".join(shlex.quote(os.path.relpath(c, ROOT) if c.startswith(ROOT) else c)
                              for c in cmd), flush=True)
    out = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"jiffy-sim failed ({out.returncode}): {out.stderr.strip()}")
    return out.stdout


def read_csv(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def fresh(path):
    if os.path.exists(path):
        os.remove(path)
    return path


def series(rows, label, dist, cls, key, mean_ns, cores):
    """[(load, value)] of one configuration and class, load from the rate column."""
    pts = []
    for r in rows:
        if r["label"] == label and r["dist"] == dist and r["class"] == cls and r[key] != "":
            load = float(r["rate"]) * mean_ns / 1e9 / cores
            pts.append((load, float(r[key]), r["valid"] == "true"))
    return sorted(pts)


def plot_line(ax, pts, **kw):
    xs = [p[0] for p in pts]
    ys = [max(p[1], 1e-3) for p in pts]
    ax.plot(xs, ys, **kw)
    bad = [(p[0], p[1]) for p in pts if not p[2]]
    if bad:
        ax.plot([b[0] for b in bad], [b[1] for b in bad], "x", color="black", markersize=5)


def load_axes(ax, title):
    """A Shinjuku-style panel: log latency against load 0-1."""
    ax.set_yscale("log")
    ax.set_title(title, fontsize=10)
    ax.set_xlabel("load")
    ax.set_xlim(0, 1)
    ax.grid(True, which="both", alpha=0.3)


def save(fig, name):
    os.makedirs(IMG, exist_ok=True)
    path = os.path.join(IMG, name)
    fig.savefig(path, dpi=90)
    plt.close(fig)
    print(f"  wrote {os.path.relpath(path, ROOT)} ({os.path.getsize(path) // 1024} KB)")


# --- Shinjuku Figure 1 ---------------------------------------------------------------------

FIG1_DISTS = [
    ("exp:1us", 1000.0, "(a) exponential, mean 1 us", (2, 2e3)),
    ("lognormal:1us:10us", 1000.0, "(b) lognormal, mean 1 us, sd 10 us", (8, 2e4)),
    ("bimodal:99.5:500ns:500us", 0.995 * 500 + 0.005 * 500000,
     "(c) bimodal 99.5 % 0.5 us, 0.5 % 500 us", (0.3, 2e4)),
]

FIG1_POLICIES = [
    ("d-FCFS", ["--policy", "fifo"], dict(color="tab:red", marker="o")),
    ("c-FCFS", ["--policy", "central"], dict(color="tab:blue", marker="s")),
    ("PS", ["--policy", "ps"], dict(color="tab:green", marker="^")),
    ("c-PRE", ["--policy", "central", "--mechanism", "ideal", "--quantum", "5us"],
     dict(color="tab:purple", marker="D")),
    ("c-PRE, Shinjuku's costs (one dispatcher: 5 M req/s)",
     ["--policy", "central", "--mechanism", "shinjuku", "--quantum", "5us"],
     dict(color="tab:purple", marker="", linestyle="--")),
]


def fig1(args):
    print("Shinjuku Figure 1 (16 cores):")
    path = fresh(os.path.join(RESULTS, "shinjuku-fig1.csv"))
    loads = ",".join(str(x) for x in LOADS)
    for dist, _, _, _ in FIG1_DISTS:
        for label, flags, _ in FIG1_POLICIES:
            run(args, ["--cores", "16", "--dist", dist, "--loads", loads, "--requests",
                       str(args.requests), "--label", label, "--csv", path] + flags)
    rows = read_csv(path)
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.4))
    for ax, (dist, mean, title, ylim) in zip(axes, FIG1_DISTS):
        for label, _, style in FIG1_POLICIES:
            plot_line(ax, series(rows, label, dist, "overall", "p99_us", mean, 16), label=label,
                      markersize=3.5, linewidth=1.3, **style)
        load_axes(ax, title)
        ax.set_ylim(*ylim)
    axes[0].set_ylabel("p99 latency (us)")
    axes[0].legend(fontsize=8)
    fig.suptitle("Shinjuku Fig. 1 reproduced with jiffy-sim: 16 cores, Jiffy's fifo (d-FCFS) and "
                 "central (c-FCFS, c-PRE: SQ, 5 us quantum) policies, ideal PS", fontsize=10)
    fig.tight_layout()
    save(fig, "sim-shinjuku-fig1.png")


# --- Shinjuku Figure 2 ---------------------------------------------------------------------

FIG2_DIST = "bimodal:50:1us:100us"
FIG2_MEAN = 50500.0
FIG2_LOADS = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95]


def p99_alone(args, dist, rate):
    """Shinjuku §3.4: a type's SLO is the p99 it sees alone under the SQ policy."""
    out = run(args, ["--cores", "16", "--policy", "central", "--mechanism", "ideal", "--quantum",
                     "5us", "--dist", dist, "--rate", str(rate), "--requests",
                     str(args.requests // 2)], quiet=True)
    for tok in out.split():
        if tok.startswith("p99="):
            return float(tok[4:-2])
    sys.exit("no p99 in jiffy-sim's output")


def fig2(args):
    print("Shinjuku Figure 2 (16 cores, bimodal 50 % 1 us / 50 % 100 us):")
    path = fresh(os.path.join(RESULTS, "shinjuku-fig2.csv"))
    loads = ",".join(str(x) for x in FIG2_LOADS)
    base = ["--cores", "16", "--dist", FIG2_DIST, "--requests", str(args.requests), "--csv", path]
    for label, flags in [("d-FCFS", ["--policy", "fifo"]), ("c-FCFS", ["--policy", "central"]),
                         ("PS", ["--policy", "ps"])]:
        run(args, base + ["--loads", loads, "--label", label] + flags)
    print("  c-PRE-MQ: per load, the SLO of each type is its p99 alone under c-PRE-SQ (§3.4),")
    print("  then MQ with both types preempted to the head of their queues:")
    for load in FIG2_LOADS:
        rate = load * 16 * 1e9 / FIG2_MEAN
        slo_s = p99_alone(args, "fixed:1us", rate / 2)
        slo_l = p99_alone(args, "fixed:100us", rate / 2)
        run(args, base + ["--load", str(load), "--label", "c-PRE-MQ", "--policy", "central",
                          "--mechanism", "ideal", "--quantum", "5us", "--central", "mq",
                          "--central-preempted", "head", "--slo",
                          f"short={slo_s}us,long={slo_l}us"])
    rows = read_csv(path)
    styles = {"d-FCFS": dict(color="tab:red", marker="o"), "c-FCFS": dict(color="tab:blue", marker="s"),
              "PS": dict(color="tab:green", marker="^"), "c-PRE-MQ": dict(color="tab:purple", marker="D")}
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.4))
    panels = [("short", "p99_us", "(a) 1 us requests: p99 latency (us)"),
              ("long", "p99_us", "(b) 100 us requests: p99 latency (us)"),
              ("overall", "slow_p99", "(c) all requests: p99 slowdown")]
    for ax, (cls, key, title) in zip(axes, panels):
        for label, style in styles.items():
            plot_line(ax, series(rows, label, FIG2_DIST, cls, key, FIG2_MEAN, 16), label=label,
                      markersize=3.5, linewidth=1.3, **style)
        load_axes(ax, title)
    axes[0].legend(fontsize=8)
    fig.suptitle("Shinjuku Fig. 2 reproduced with jiffy-sim: 16 cores; c-PRE-MQ = Jiffy's central "
                 "MQ, head placement, 5 us quantum, SLOs from each type alone", fontsize=10)
    fig.tight_layout()
    save(fig, "sim-shinjuku-fig2.png")


# --- xUI RocksDB -----------------------------------------------------------------------------

XUI_DIST = "bimodal:95:1us:260us"
XUI_MEAN = 0.95 * 1000 + 0.05 * 260000
XUI_LOADS = [0.2, 0.3, 0.4, 0.5, 0.55, 0.6, 0.65, 0.7, 0.725, 0.75, 0.775, 0.8, 0.825, 0.85,
             0.875, 0.9, 0.925, 0.95]
XUI_MECHS = [
    ("no preemption", ["--mechanism", "none", "--switch-cost", "55ns"], dict(color="tab:gray", marker="o")),
    ("UIPI SW timer", ["--mechanism", "uintr"], dict(color="tab:red", marker="s")),
    ("UIPI SW timer + tracking", ["--mechanism", "tracked"], dict(color="tab:orange", marker="^")),
    ("UI KB timer + tracking", ["--mechanism", "kb-timer"], dict(color="tab:green", marker="D")),
]
XUI_SLOS = [50.0, 100.0, 200.0]


def crossing(pts, slo):
    """Load at which p99 first exceeds @slo (log-linear interpolation), or None."""
    prev = None
    for load, p99, _ in pts:
        if p99 > slo:
            if prev is None:
                return None
            (l0, v0) = prev
            f = (math.log(slo) - math.log(v0)) / (math.log(p99) - math.log(v0))
            return l0 + f * (load - l0)
        prev = (load, p99)
    return None


def xui_sweep(args, path, cores, policy_flags, mechs, extra_label=""):
    loads = ",".join(str(x) for x in XUI_LOADS)
    for label, flags, _ in mechs:
        run(args, ["--cores", str(cores), "--dist", XUI_DIST, "--classes", "get,scan",
                   "--quantum", "5us", "--loads", loads, "--requests", str(args.requests),
                   "--workload", "kv", "--label", label + extra_label, "--csv", path]
            + policy_flags + flags)


def gains(rows, mechs, cores, suffix=""):
    """{slo: (uipi GET rps, kb GET rps, gain)} from a sweep."""
    out = {}
    for slo in XUI_SLOS:
        x = {}
        for label, _, _ in mechs:
            c = crossing(series(rows, label + suffix, XUI_DIST, "get", "p99_us", XUI_MEAN, cores), slo)
            x[label] = c
        u, k = x.get("UIPI SW timer"), x.get("UI KB timer + tracking")
        get_rps = lambda load: load * cores * 1e9 / XUI_MEAN * 0.95 if load else None
        out[slo] = (get_rps(u), get_rps(k), (k / u - 1) * 100 if u and k else None, x)
    return out


def xui(args):
    print("xUI RocksDB in Aspen (GET 1 us 95 %, SCAN 260 us 5 %, 5 us quantum, per-core round "
          "robin with stealing):")
    path = fresh(os.path.join(RESULTS, "xui-rocksdb.csv"))
    rr = ["--policy", "rr", "--rr-slice", "5us"]
    xui_sweep(args, path, 2, rr, XUI_MECHS)
    rows = read_csv(path)
    main = gains(rows, XUI_MECHS, 2)
    # Sensitivity: the receiver cost assumed for KB timer + tracking, and the number of cores.
    sens = fresh(os.path.join(RESULTS, "xui-rocksdb-sensitivity.csv"))
    kb_costs = [0, 40, 80, 160, 320, 480, 720]
    print("  sensitivity to the KB timer's receiver cost (cycles at 2 GHz):")
    rx_mechs = [("UIPI SW timer", ["--mechanism", "uintr"], {})] + [
        (f"UI KB timer + tracking", ["--mechanism", "kb-timer", "--receiver-cost", f"{c / 2}ns"], {})
        for c in kb_costs]
    xui_sweep(args, sens, 2, rr, rx_mechs[:1], " rx")
    for c, m in zip(kb_costs, rx_mechs[1:]):
        xui_sweep(args, sens, 2, rr, [m], f" rx{c}")
    print("  cores (UIPI's timer core sends every preemption; the KB timer needs no sender):")
    for cores in (8, 24):
        xui_sweep(args, sens, cores, rr, [XUI_MECHS[1], XUI_MECHS[3]], f" c{cores}")
    srows = read_csv(sens)

    fig, axes = plt.subplots(1, 2, figsize=(12, 4.4))
    for label, _, style in XUI_MECHS:
        pts = series(rows, label, XUI_DIST, "get", "p99_us", XUI_MEAN, 2)
        pts = [(p[0] * 2 * 1e9 / XUI_MEAN * 0.95 / 1e3, p[1], p[2]) for p in pts]
        plot_line(axes[0], pts, label=label, markersize=3.5, linewidth=1.3, **style)
        pts = series(rows, label, XUI_DIST, "scan", "p99_us", XUI_MEAN, 2)
        pts = [(p[0] * 2 * 1e9 / XUI_MEAN * 0.95 / 1e3, p[1], p[2]) for p in pts]
        plot_line(axes[1], pts, label=label, markersize=3.5, linewidth=1.3, **style)
    for slo in XUI_SLOS:
        axes[0].axhline(slo, color="black", linewidth=0.6, linestyle=":")
    axes[0].set_title("GET p99 latency (us); dotted: SLOs 50/100/200 us", fontsize=10)
    axes[1].set_title("SCAN p99 latency (us)", fontsize=10)
    for ax in axes:
        ax.set_yscale("log")
        ax.set_xlabel("GET throughput offered (k requests/s; 95 % of all requests)")
        ax.grid(True, which="both", alpha=0.3)
    axes[0].legend(fontsize=8)
    g = main[100.0]
    fig.suptitle("xUI RocksDB (Aspen) with jiffy-sim: 2 workers, rr with a 5 us slice; GET "
                 f"throughput at p99 <= 100 us: KB timer + tracking {g[2]:+.1f} % over UIPI",
                 fontsize=10)
    fig.tight_layout()
    save(fig, "sim-xui-rocksdb.png")

    print("\n  GET throughput at the SLO (2 workers):")
    print("  | SLO (GET p99) | UIPI SW timer | UIPI + tracking | KB timer + tracking | KB vs UIPI |")
    print("  | ---: | ---: | ---: | ---: | ---: |")
    for slo in XUI_SLOS:
        u, k, gain, x = main[slo]
        t = x.get("UIPI SW timer + tracking")
        fmt = lambda load: f"{load * 2 * 1e9 / XUI_MEAN * 0.95 / 1e3:.1f}k/s" if load else "-"
        print(f"  | {slo:.0f} us | {fmt(x['UIPI SW timer'])} | {fmt(t)} | "
              f"{fmt(x['UI KB timer + tracking'])} | {gain:+.1f} % |" if gain is not None
              else f"  | {slo:.0f} us | - | - | - | - |")
    print("\n  KB timer receiver cost (cycles) -> GET throughput gain over UIPI at p99 <= 100 us:")
    base = crossing(series(srows, "UIPI SW timer rx", XUI_DIST, "get", "p99_us", XUI_MEAN, 2), 100.0)
    for c in kb_costs:
        k = crossing(series(srows, f"UI KB timer + tracking rx{c}", XUI_DIST, "get", "p99_us",
                            XUI_MEAN, 2), 100.0)
        print(f"    {c:4d} cycles: {(k / base - 1) * 100:+.1f} %" if k and base else f"    {c}: -")
    print("\n  cores -> GET throughput gain of KB timer + tracking over UIPI at p99 <= 100 us:")
    for cores in (8, 24):
        u = crossing(series(srows, f"UIPI SW timer c{cores}", XUI_DIST, "get", "p99_us", XUI_MEAN, cores), 100.0)
        k = crossing(series(srows, f"UI KB timer + tracking c{cores}", XUI_DIST, "get", "p99_us",
                            XUI_MEAN, cores), 100.0)
        fmt = lambda load: (f"{load * cores * 1e9 / XUI_MEAN * 0.95 / 1e3:.0f}k/s (load {load:.3f})"
                            if load else f"> {XUI_LOADS[-1] * cores * 1e9 / XUI_MEAN * 0.95 / 1e3:.0f}k/s"
                            f" (load {XUI_LOADS[-1]})")
        gain = f"{(k / u - 1) * 100:+.1f} %" if u and k else ("> " + f"{(XUI_LOADS[-1] / u - 1) * 100:+.1f} %"
                                                            if u else "-")
        print(f"    {cores:2d} workers: UIPI {fmt(u)}, KB timer + tracking {fmt(k)}: {gain}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("what", choices=["fig1", "fig2", "xui", "all"])
    ap.add_argument("--sim", default=os.path.join(ROOT, "build", "sim", "jiffy-sim"))
    ap.add_argument("--requests", type=int, default=400000, help="measured requests per point")
    args = ap.parse_args()
    args.sim = os.path.abspath(args.sim)
    if not os.access(args.sim, os.X_OK):
        sys.exit(f"{args.sim}: not built (cmake --build build --target jiffy-sim)")
    os.makedirs(RESULTS, exist_ok=True)
    for what in (["fig1", "fig2", "xui"] if args.what == "all" else [args.what]):
        t0 = time.time()
        globals()[what](args)
        print(f"  {what}: {time.time() - t0:.1f} s\n", flush=True)


if __name__ == "__main__":
    main()
