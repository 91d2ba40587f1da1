#!/usr/bin/env python3
"""experiments/run.py - run a load sweep of the Jiffy servers and their peers, then print the
"highest load meeting the SLO" table and write the plots. experiments/README.md has the details.

    experiments/run.py demo                   # experiments/configs/demo.toml (what make demo runs)
    experiments/run.py experiments/configs/full.toml --out /tmp/full
    experiments/run.py demo --only jiffy      # only configurations whose name contains "jiffy"
    experiments/run.py --replot DIR           # table and plots again from DIR/points.jsonl

Exit status: 0 when the sweep ran (whatever it measured), 2 on a bad description or missing
binaries (the message says which and how to build them), 1 when points failed to run.
"""

import argparse
import datetime
import json
import os
import signal
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from jiffyexp import config, servers, simtwin, slo, sweep  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def config_path(name):
    if os.path.exists(name):
        return name
    path = os.path.join(ROOT, "experiments", "configs", f"{name}.toml")
    if os.path.exists(path):
        return path
    known = sorted(f[:-5] for f in os.listdir(os.path.join(ROOT, "experiments", "configs"))
                   if f.endswith(".toml"))
    raise config.ConfigError(f"{name}: no such file, and not a preset ({', '.join(known)})")


def report(doc, by_exp, outdir, meta=None, log=print, sim_bin=None):
    """Print and write the SLO tables; draw the plots. Return the paths written."""
    stop_after = doc["run"]["stop_after"]
    goal = doc["run"].get("verdict_goal", 3.0)
    md, written, verdicts = [], [], []
    where = noise = ""
    if meta:
        m = meta.get("machine", {})
        where = (f"{m.get('cpu', '?')}, {len(m.get('cpus_allowed', []))} CPUs, "
                 f"Linux {m.get('kernel', '?')}; server on CPU {meta.get('server_cpu')}, "
                 f"jiffy-load on CPU {meta.get('load_cpu')}; commit {meta.get('commit')}, "
                 f"{meta.get('date')}")
        st = meta.get("stalls", {})
        noise = "; ".join(f"{k}: {sweep.describe_stalls({int(c): v for c, v in st[k].items()})}"
                          for k in ("before", "after") if k in st)
    for exp in doc["experiments"]:
        points = by_exp.get(exp["name"], {})
        configs = [c for c in exp["configs"] if c["name"] in points]
        if not configs:
            continue
        twins = []
        if exp.get("sim") and sim_bin:
            for name in exp["sim"]["configs"]:
                cfg = next(c for c in exp["configs"] if c["name"] == name)
                if name not in points:
                    continue
                try:
                    pts = simtwin.run(sim_bin, ROOT, exp, cfg, exp["sim"], outdir, log)
                except (simtwin.TwinError, OSError, subprocess.SubprocessError) as e:
                    log(f"(no simulated twin of {name}: {e})")
                    continue
                twin = dict(cfg, name=name + "~sim", label=cfg["label"] + " [jiffy-sim twin]",
                            sim=True)
                twins.append((twin, pts, configs.index(cfg)))
        elif exp.get("sim"):
            log(f"(no simulated twins for {exp['name']}: build/sim/jiffy-sim is not built)")
        all_points = dict(points, **{t["name"]: p for t, p, _ in twins})
        rows = slo.table(exp, all_points, configs + [t for t, _, _ in twins], stop_after)
        floor = points.get("path-floor")
        probes = (meta or {}).get("probes", {}).get(exp["name"])
        text = slo.format_table(exp, rows, floor=floor, probes=probes)
        v = slo.verdict(exp, rows, goal)
        verdicts.append(v)
        text += f"\n**Verdict** {v['text']}\n"
        _, coloc = slo.colocation(exp, points, configs)
        if coloc:
            text += "\n" + coloc
        log("\n" + text)
        md.append(text)
        try:
            from jiffyexp import plot
        except ImportError as e:
            log(f"(no plots: {e}; scripts/venv.sh makes an environment with matplotlib)")
            continue
        series = [{"label": c["label"], "points": points[c["name"]]} for c in configs]
        series += [{"label": t["label"], "points": p, "dashed": True, "twin_of": i}
                   for t, p, i in twins]
        if floor:
            series.append({"label": "path floor: zero-work PING, same server and client",
                           "points": floor, "floor": True})
        png = plot.plot_experiment(exp, series, os.path.join(outdir, f"{exp['name']}.png"),
                                   subtitle=where)
        if png:
            written.append(png)
    path = os.path.join(outdir, "slo.md")
    summary = "".join(f"- {v['text']}\n" for v in verdicts)
    with open(path, "w") as f:
        f.write((f"Measured on {where}\n\n" if where else "")
                + (f"Hypervisor stalls with both CPUs busy ({noise})\n\n" if meta and noise else "")
                + (f"Verdicts:\n{summary}\n" if summary else "")
                + "\n".join(md))
    with open(os.path.join(outdir, "verdict.json"), "w") as f:
        json.dump(verdicts, f, indent=1)
    if summary:
        log("Verdicts:\n" + summary)
    written.insert(0, path)
    return written


def find_sim(build):
    path = os.path.join(ROOT, build, "sim", "jiffy-sim")
    return path if os.access(path, os.X_OK) else None


def _terminate(signum, frame):
    raise KeyboardInterrupt  # ends a sweep as Ctrl-C does: servers killed, settings restored


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("config", nargs="?", help="a preset name (demo, full, smoke) or a .toml file")
    ap.add_argument("--out", help="results directory (default experiments/results/<name>-<time>)")
    ap.add_argument("--build", default="build", help="the CMake build directory (default build)")
    ap.add_argument("--load", default=os.environ.get("JIFFY_LOAD"),
                    help="jiffy-load binary (default $JIFFY_LOAD or load/target/release/jiffy-load)")
    ap.add_argument("--only", help="comma-separated substrings: run only configurations whose "
                    "name contains one of them")
    ap.add_argument("--replot", metavar="DIR", help="no sweep: tables and plots from DIR")
    args = ap.parse_args(argv)

    try:
        if args.replot:
            with open(os.path.join(args.replot, "meta.json")) as f:
                meta = json.load(f)
            doc = meta["sweep"]
            by_exp = sweep.read_points(os.path.join(args.replot, "points.jsonl"))
            for p in report(doc, by_exp, args.replot, meta, sim_bin=find_sim(args.build)):
                print(f"wrote {p}")
            return 0
        if not args.config:
            ap.error("a configuration (preset name or .toml file) is required")
        path = config_path(args.config)
        doc = config.load(path)
        needed = {c["server"] for e in doc["experiments"] for c in e["configs"]}
        servers.check_binaries(ROOT, args.build, needed)
        load_bin = args.load or sweep.find_tool(ROOT, "load/target/release/jiffy-load",
                                                "scripts/build-load.sh")
        name = os.path.splitext(os.path.basename(path))[0]
        outdir = args.out or os.path.join(
            ROOT, "experiments", "results",
            f"{name}-{datetime.datetime.now().strftime('%Y%m%d-%H%M%S')}")
        only = [o for o in args.only.split(",") if o] if args.only else None
        sw = sweep.Sweep(ROOT, args.build, doc, outdir, load_bin, only=only)
    except (config.ConfigError, servers.ServerError, OSError, KeyError, ValueError) as e:
        print(f"run.py: error: {e}", file=sys.stderr)
        return 2

    t0 = datetime.datetime.now()
    signal.signal(signal.SIGTERM, _terminate)
    signal.signal(signal.SIGINT, _terminate)  # also when started in the background (SIG_IGN)
    try:
        results = sw.run()
    except KeyboardInterrupt:
        print("\nrun.py: interrupted; what ran is in " + outdir, file=sys.stderr)
        return 130
    with open(os.path.join(outdir, "meta.json")) as f:
        meta = json.load(f)
    by_exp = {exp["name"]: pts for exp, pts in results}
    written = report(doc, by_exp, outdir, meta, sim_bin=find_sim(args.build))
    failed = [p for _, pts in results for ps in pts.values() for p in ps if p.get("load_error")]
    secs = (datetime.datetime.now() - t0).total_seconds()
    print(f"sweep took {secs:.0f} s; results in {outdir}:")
    for p in written:
        print(f"  {p}")
    print(f"  {os.path.join(outdir, 'results.csv')} (jiffy-load's CSV rows), points.jsonl, logs/")
    if failed:
        print(f"run.py: {len(failed)} point(s) could not be measured (jiffy-load failed); "
              "see points.jsonl", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
