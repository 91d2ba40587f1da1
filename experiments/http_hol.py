#!/usr/bin/env python3
"""experiments/http_hol.py - the head-of-line web-server demo of preemptible functions (issue 17;
libinger §6.2, Fig. 4; docs/pfn-http.md has the setup, the numbers and what they show).

Owns the sweep: jiffy-httpd (apps/httpd/) in each server configuration below, against two open-
loop HTTP/1.1 load generators (oha, from the crates registry: scripts/build-oha.sh) at once: one
for GET /short (~500 us of work) at a fixed rate (split over --short-streams generators with
slightly different rates: oha paces evenly, and one even stream can lock in phase with the budget
server's cycle), one for GET /long (~50 ms) at the rate that makes the long requests SHARE % of
all; --latency-correction, so a latency counts from the time
the request was due, not from when a free connection sent it (no coordinated omission). Per
point: the short requests' median, p99 and p99.9, the long requests' median, and the throughput
of all requests (completed per second). Configurations are interleaved (their order rotates) and
every point is repeated; the median of the repeats is reported with their min and max. One fresh
server per run, on its own CPU (taskset), the generators on another, all at --nice -10 (as root)
so that other work on the machine (a build at nice 10) takes little of their CPUs; the CPU time
other processes took during each run is recorded (other_cpus). Each run holds
/tmp/jiffy-timing.lock (flock), so no two timing runs on this machine overlap.

Writes points.jsonl (one line per run), summary.json, table.md and pfn-http.png into --out
(default experiments/results/pfn-http-<time>/); --publish copies the plot to docs/img/pfn-http.png
and the summary to docs/data/pfn-http-<date>-<hhmm>.json. Standard library only, but the plot needs
matplotlib (scripts/venv.sh).

    make demo-http                            # builds what is missing, then this with defaults
    .venv/bin/python experiments/http_hol.py --repeats 1 --duration 2 --shares 0,2   # a quick look
"""

import argparse
import datetime
import fcntl
import json
import os
import resource
import select
import shutil
import signal
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LOCK = "/tmp/jiffy-timing.lock"

# name -> (server flags, environment, label in the plot and table)
CONFIGS = {
    "budget": (["--mode", "budget"], {}, "Jiffy + budgets (jf_pfn_launch)"),
    "budget-bg": (["--mode", "budget", "--set-aside", "background"], {},
                  "Jiffy + budgets, set aside to a background uthread"),
    "budget-sp": (["--mode", "budget", "--safepoints", "yes"], {},
                  "Jiffy + budgets, jf_safepoint() in the work"),
    "budget200": (["--mode", "budget", "--budget-us", "200"], {},
                  "Jiffy + 200 us budgets (jf_pfn_launch)"),
    "nobudget": (["--mode", "nobudget"], {}, "Jiffy, no budget (run to completion)"),
    "pool": (["--mode", "pool"], {}, "pthread pool"),
    "preempt": (["--mode", "nobudget"], {"JIFFY_PREEMPT": "auto"},
                "Jiffy's own preemption (JIFFY_PREEMPT=auto), no budget"),
}


def NICE(a):
    """The server and the generators run at --nice (default -10, when root): other work on the
    machine that does not take the timing lock (a build) then takes little of their CPUs."""
    return ["nice", "-n", str(a.nice)] if a.nice else []


def busy_ticks():
    """CPU time spent busy on the whole machine (clock ticks, all CPUs; steal excluded)."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    return v[0] + v[1] + v[2] + v[5] + v[6]  # user nice system irq softirq


def children_cpu_s():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def percentile(sorted_vals, q):
    """The q-quantile (0..1) of sorted values, nearest rank; None when empty."""
    if not sorted_vals:
        return None
    k = max(0, min(len(sorted_vals) - 1, int(round(q * len(sorted_vals) + 0.5)) - 1))
    return sorted_vals[k]


def read_csv(path, warmup_s, end_s):
    """oha's CSV: (latencies in s of the 200s whose start is in [warmup, end), count of those,
    count of non-200 answers). A missing file reads as nothing."""
    lat, bad = [], 0
    try:
        with open(path) as f:
            header = f.readline().strip().split(",")
            i_start, i_dur, i_status = (header.index("request-start"),
                                        header.index("request-duration"),
                                        header.index("status"))
            for line in f:
                cols = line.strip().split(",")
                if len(cols) < len(header):
                    continue
                start = float(cols[i_start])
                if not warmup_s <= start < end_s:
                    continue
                if cols[i_status] != "200":
                    bad += 1
                    continue
                lat.append(float(cols[i_dur]))
    except (OSError, ValueError):
        pass
    lat.sort()
    return lat, bad


def start_server(httpd, cfg, a, log):
    flags, env_extra, _ = CONFIGS[cfg]
    env = {k: v for k, v in os.environ.items() if not k.startswith("JIFFY_")}
    env.update(env_extra)
    cmd = [*NICE(a), "taskset", "-c", a.server_cpus, httpd, "--port", "0", "--workers",
           str(a.workers), "--threads", str(a.threads), "--budget-us", str(a.budget_us),
           "--short-us", str(a.short_us), "--long-us", str(a.long_us), *flags]  # flags win
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=log, env=env, text=True)
    deadline = time.monotonic() + 20
    line = ""
    while time.monotonic() < deadline:
        r, _, _ = select.select([p.stdout], [], [], 0.5)
        if r:
            line = p.stdout.readline()
            break
        if p.poll() is not None:
            break
    if not line.startswith("READY jiffy-httpd port="):
        p.kill()
        p.wait()
        raise RuntimeError(f"{cfg}: the server did not start (see {log.name})")
    port = int(line.split("port=")[1].split()[0])
    return p, port


def stream_factors(k):
    """The shares of the short rate given to each of @k generators: spread +-9 % around 1/k,
    summing to 1. oha paces a fixed rate evenly (no Poisson arrivals); one evenly paced stream
    can lock in phase with the budget server's cycle (a 2 ms slice + a 0.5 ms short request is
    exactly the 2.5 ms between short requests at 400 req/s), so that every short request lands
    at the same point of the cycle for a whole run. Several streams with different periods and
    independent start times drift across the cycle instead."""
    if k == 1:
        return [1.0]
    return [(1.0 + 0.18 * (i / (k - 1) - 0.5)) / k for i in range(k)]


def oha_cmd(a, oha, rate, conns, url, out):
    return [*NICE(a), "taskset", "-c", a.load_cpus, oha, "-q", f"{rate:.4f}", "-z", f"{a.duration}s", "-w",
            "--latency-correction", "--no-tui", "--output-format", "csv", "-o", out,
            "-c", str(conns), "--worker-threads", "1", url]


def run_point(a, httpd, oha, cfg, share, rep, outdir):
    """One run: a fresh server, both generators at once; returns the point (a dict)."""
    tag = f"{cfg}-s{share:g}-r{rep}"
    k = a.short_streams
    short_csvs = [os.path.join(outdir, "raw", f"{tag}-short{i}.csv") for i in range(k)]
    long_csv = os.path.join(outdir, "raw", f"{tag}-long.csv")
    long_rate = a.short_rate * share / (100.0 - share)
    with open(LOCK, "a") as lock, open(os.path.join(outdir, "raw", f"{tag}.log"), "w") as log:
        fcntl.flock(lock, fcntl.LOCK_EX)
        t_start, busy0, ours0 = time.monotonic(), busy_ticks(), children_cpu_s()
        srv, port = start_server(httpd, cfg, a, log)
        base = f"http://127.0.0.1:{port}"
        gens = [subprocess.Popen(oha_cmd(a, oha, a.short_rate * f, -(-a.short_conns // k),
                                         f"{base}/short", short_csvs[i]),
                                 stdout=subprocess.DEVNULL, stderr=log)
                for i, f in enumerate(stream_factors(k))]
        if long_rate > 0:
            gens.append(subprocess.Popen(oha_cmd(a, oha, long_rate, a.long_conns,
                                                 f"{base}/long", long_csv),
                                         stdout=subprocess.DEVNULL, stderr=log))
        rcs = []
        for g in gens:
            try:
                rcs.append(g.wait(timeout=a.duration + 60))
            except subprocess.TimeoutExpired:
                g.kill()
                rcs.append(g.wait())
        srv.send_signal(signal.SIGTERM)
        try:
            srv.wait(timeout=20)
        except subprocess.TimeoutExpired:
            srv.kill()
            srv.wait()
        wall = time.monotonic() - t_start
        other = ((busy_ticks() - busy0) / os.sysconf("SC_CLK_TCK") - (children_cpu_s() - ours0))
    with open(os.path.join(outdir, "raw", f"{tag}.log")) as f:
        stats = [ln.strip() for ln in f if " short=" in ln]
    end = a.duration
    short, short_bad = [], 0
    for path in short_csvs:
        lat, bad = read_csv(path, a.warmup, end)
        short += lat
        short_bad += bad
    short.sort()
    long_, long_bad = read_csv(long_csv, a.warmup, end) if long_rate > 0 else ([], 0)
    window = end - a.warmup
    ms = lambda v: None if v is None else v * 1000.0  # noqa: E731
    return {
        "config": cfg, "share": share, "repeat": rep,
        "short_rate": a.short_rate, "long_rate": long_rate,
        "short_n": len(short), "long_n": len(long_),
        "short_p50_ms": ms(percentile(short, 0.50)),
        "short_p99_ms": ms(percentile(short, 0.99)),
        "short_p999_ms": ms(percentile(short, 0.999)),
        "long_p50_ms": ms(percentile(long_, 0.50)),
        "throughput": (len(short) + len(long_)) / window,
        "offered": a.short_rate + long_rate,
        "bad": short_bad + long_bad,
        "generator_rc": rcs, "server_rc": srv.returncode,
        "server_stats": stats[-1] if stats else "",
        # CPUs' worth of work by other processes during the run (a build beside us, ...)
        "other_cpus": max(0.0, other / wall),
    }


def run_capacity(a, httpd, oha, cfg, share, rep, outdir):
    """Closed loop: one oha with --capacity-conns connections and no rate, each request /long
    with probability SHARE % (a URL list oha picks from at random), for --capacity-duration s.
    Returns the completed requests per second after the warm-up (the server's capacity)."""
    tag = f"cap-{cfg}-s{share:g}-r{rep}"
    urls = os.path.join(outdir, "raw", f"{tag}.urls")
    out_csv = os.path.join(outdir, "raw", f"{tag}.csv")
    with open(LOCK, "a") as lock, open(os.path.join(outdir, "raw", f"{tag}.log"), "w") as log:
        fcntl.flock(lock, fcntl.LOCK_EX)
        srv, port = start_server(httpd, cfg, a, log)
        n_long = 1 if share > 0 else 0
        n_short = round(100.0 / share) - 1 if share > 0 else 1
        with open(urls, "w") as f:
            f.write(f"http://127.0.0.1:{port}/long\n" * n_long)
            f.write(f"http://127.0.0.1:{port}/short\n" * n_short)
        cmd = [*NICE(a), "taskset", "-c", a.load_cpus, oha, "-z", f"{a.capacity_duration}s",
               "-w", "--no-tui", "--output-format", "csv", "-o", out_csv,
               "-c", str(a.capacity_conns), "--worker-threads", "1", "--urls-from-file", urls]
        g = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=log, timeout=120)
        srv.send_signal(signal.SIGTERM)
        try:
            srv.wait(timeout=20)
        except subprocess.TimeoutExpired:
            srv.kill()
            srv.wait()
    lat, bad = read_csv(out_csv, a.warmup, a.capacity_duration)
    return {"config": cfg, "share": share, "repeat": rep, "kind": "capacity",
            "capacity": len(lat) / (a.capacity_duration - a.warmup), "bad": bad,
            "generator_rc": [g.returncode], "server_rc": srv.returncode}


def summarize(points, configs, shares):
    out = []
    for cfg in configs:
        for share in shares:
            ps = [p for p in points if p["config"] == cfg and p["share"] == share]
            if not ps:
                continue
            row = {"config": cfg, "label": CONFIGS[cfg][2], "share": share,
                   "runs": sum(1 for p in ps if p.get("kind") != "capacity")}
            for key in ("short_p50_ms", "short_p99_ms", "short_p999_ms", "long_p50_ms",
                        "throughput", "offered", "capacity"):
                vals = [p[key] for p in ps if p.get(key) is not None]
                if vals:
                    row[key] = statistics.median(vals)
                    row[key + "_min"] = min(vals)
                    row[key + "_max"] = max(vals)
            row["bad"] = sum(p["bad"] for p in ps)
            row["other_cpus_max"] = max(p.get("other_cpus", 0.0) for p in ps)
            out.append(row)
    return out


def table(summary):
    def f(row, key, nd=2):
        if key not in row:
            return "-"
        return (f"{row[key]:.{nd}f} ({row[key + '_min']:.{nd}f}-{row[key + '_max']:.{nd}f})")
    cap = any("capacity" in r for r in summary)
    lines = ["| server | long % | short p50 ms | short p99 ms | short p99.9 ms | long p50 ms "
             "| throughput req/s (offered) |" + (" closed-loop capacity req/s |" if cap else ""),
             "|---|---:|---:|---:|---:|---:|---:|" + ("---:|" if cap else "")]
    for r in summary:
        lines.append(f"| {r['config']} | {r['share']:g} | {f(r, 'short_p50_ms')} | "
                     f"{f(r, 'short_p99_ms')} | {f(r, 'short_p999_ms')} | "
                     f"{f(r, 'long_p50_ms', 0)} | {f(r, 'throughput', 0)} "
                     f"({r.get('offered', 0):.0f}) |" + (f" {f(r, 'capacity', 0)} |" if cap else ""))
    return "\n".join(lines)


def plot(summary, configs, path, subtitle):
    """Four panels against the long share: the short requests' median and p99, the long ones'
    median, the throughput; one line per configuration, bars min-max over the repeats."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter
    fig, axes = plt.subplots(2, 2, figsize=(11.5, 8.4))
    axes = axes.flatten()
    panels = [("short_p50_ms", "short requests (500 us): median latency (ms)", True),
              ("short_p99_ms", "short requests (500 us): p99 latency (ms)", True),
              ("long_p50_ms", "long requests (50 ms): median latency (ms)", False),
              ("throughput", "throughput, all requests (req/s)", False)]
    markers = "os^vD"
    if any("capacity" in r for r in summary):
        panels[3] = ("capacity", "closed-loop capacity, all requests (req/s)", False)
    for k, cfg in enumerate(configs):
        for ax, (key, title, logy) in zip(axes, panels):
            rows = [r for r in summary if r["config"] == cfg and key in r]
            if not rows:
                continue
            xs = [r["share"] for r in rows]
            ys = [r[key] for r in rows]
            lo = [r[key] - r[key + "_min"] for r in rows]
            hi = [r[key + "_max"] - r[key] for r in rows]
            ax.errorbar(xs, ys, yerr=[lo, hi], marker=markers[k % len(markers)], capsize=3,
                        label=CONFIGS[cfg][2])
            ax.set_title(title, fontsize=9)
            ax.set_xlabel("long requests (% of all)")
            if logy:
                ax.set_yscale("log")
                ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
                ax.yaxis.set_minor_formatter(FuncFormatter(
                    lambda v, _: f"{v:g}" if f"{v:.0e}"[0] in "25" else ""))
            else:
                ax.set_ylim(bottom=0)
            ax.set_xticks(sorted({r["share"] for r in summary}))
            ax.grid(True, which="both", alpha=0.3)
    offered = sorted({(r["share"], r["offered"]) for r in summary if "offered" in r})
    if panels[3][0] == "throughput":
        axes[3].plot([s for s, _ in offered], [o for _, o in offered], "k:",
                     label="offered (open loop)")
    axes[0].legend(fontsize=8)
    axes[3].legend(fontsize=8, loc="lower right")
    fig.suptitle("HTTP/1.1, 500 us short and 50 ms long requests (libinger Fig. 4 on Jiffy)"
                 + ("\n" + subtitle if subtitle else ""), fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def find_oha(explicit):
    if explicit:
        return explicit
    if os.environ.get("OHA"):
        return os.environ["OHA"]
    r = subprocess.run([os.path.join(ROOT, "scripts", "build-oha.sh")], stdout=subprocess.PIPE,
                       text=True)
    if r.returncode != 0:
        sys.exit("http_hol.py: oha is missing and scripts/build-oha.sh failed")
    return r.stdout.strip()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"), help="CMake build dir")
    ap.add_argument("--oha", help="the oha binary (default: $OHA, else scripts/build-oha.sh)")
    ap.add_argument("--out", help="results dir (default experiments/results/pfn-http-<time>)")
    ap.add_argument("--configs", default="budget,nobudget,pool,preempt",
                    help="comma-separated, of: " + ", ".join(CONFIGS))
    ap.add_argument("--shares", default="0,0.5,1,2", help="long requests, %% of all")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--duration", type=float, default=5.0, help="seconds per run")
    ap.add_argument("--warmup", type=float, default=0.5, help="seconds not measured")
    ap.add_argument("--short-rate", type=float, default=400.0, help="short requests/s")
    ap.add_argument("--short-us", type=int, default=500)
    ap.add_argument("--long-us", type=int, default=50000)
    ap.add_argument("--budget-us", type=int, default=2000)
    ap.add_argument("--workers", type=int, default=1, help="Jiffy workers")
    ap.add_argument("--threads", type=int, default=8, help="the pool's threads")
    ap.add_argument("--short-conns", type=int, default=32, help="over all short streams")
    ap.add_argument("--short-streams", type=int, default=4,
                    help="short-request generators at once, their rates spread +-9 %% around "
                         "an equal share of --short-rate (see stream_factors)")
    ap.add_argument("--long-conns", type=int, default=8)
    ap.add_argument("--server-cpus", default="1", help="taskset list for the server")
    ap.add_argument("--load-cpus", default="0", help="taskset list for the generators")
    ap.add_argument("--nice", type=int, default=-10 if os.geteuid() == 0 else 0,
                    help="niceness of the server and generators (default -10 as root, else 0)")
    ap.add_argument("--max-other", type=float, default=None,
                    help="a run during which other processes took more CPUs than this is run "
                         "again, at most --max-retries times in the sweep (default: never; "
                         "other_cpus is recorded per run either way)")
    ap.add_argument("--max-retries", type=int, default=8)
    ap.add_argument("--publish", action="store_true",
                    help="copy the plot to docs/img/pfn-http.png, the summary to docs/data/")
    ap.add_argument("--capacity", action="store_true",
                    help="after the open-loop sweep, each configuration and share once more per "
                         "repeat in a closed loop (one oha, no rate, the long share as a random "
                         "URL mix): the server's capacity; the plot's fourth panel then shows it")
    ap.add_argument("--capacity-duration", type=float, default=3.0)
    ap.add_argument("--capacity-conns", type=int, default=16)
    ap.add_argument("--replot", metavar="DIR",
                    help="only redraw DIR/pfn-http.png (and the table) from DIR/summary.json")
    a = ap.parse_args()
    if a.replot:
        with open(os.path.join(a.replot, "summary.json")) as f:
            saved = json.load(f)
        summ, m = saved["summary"], saved["meta"]["args"]
        cfgs = [c for c in m["configs"].split(",") if c]
        plot(summ, cfgs, os.path.join(a.replot, "pfn-http.png"),
             f"{m['short_rate']:g} short req/s open loop, budget {m['budget_us']} us, "
             f"{m['workers']} Jiffy worker / {m['threads']} pool threads on CPU "
             f"{m['server_cpus']}; median of {m['repeats']} (bars: min-max)")
        print(table(summ))
        return 0

    configs = [c for c in a.configs.split(",") if c]
    for c in configs:
        if c not in CONFIGS:
            ap.error(f"--configs: unknown '{c}' (known: {', '.join(CONFIGS)})")
    shares = [float(s) for s in a.shares.split(",")]
    if any(not 0 <= s < 100 for s in shares):
        ap.error("--shares: each in [0, 100)")
    if a.warmup >= a.duration:
        ap.error("--warmup must be shorter than --duration")
    httpd = os.path.join(a.build, "apps", "httpd", "jiffy-httpd")
    if not os.access(httpd, os.X_OK):
        sys.exit(f"http_hol.py: {httpd} is missing: build it (make build)")
    oha = find_oha(a.oha)
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d-%H%M%S")
    outdir = a.out or os.path.join(ROOT, "experiments", "results", f"pfn-http-{stamp}")
    os.makedirs(os.path.join(outdir, "raw"), exist_ok=True)

    runs = len(configs) * len(shares) * a.repeats
    print(f"http_hol: {runs} runs of {a.duration:g} s ({len(configs)} servers x "
          f"{len(shares)} shares x {a.repeats} repeats), short {a.short_rate:g} req/s; "
          f"results in {outdir}", flush=True)
    points = []
    retries = 0
    t0 = time.monotonic()
    with open(os.path.join(outdir, "points.jsonl"), "w") as pf:
        for rep in range(a.repeats):
            for si, share in enumerate(shares):
                k = (rep + si) % len(configs)
                for cfg in configs[k:] + configs[:k]:  # interleaved: the order rotates
                    p = run_point(a, httpd, oha, cfg, share, rep, outdir)
                    while (a.max_other is not None and p["other_cpus"] > a.max_other
                           and retries < a.max_retries):
                        retries += 1
                        print(f"  (other processes took {p['other_cpus']:.2f} CPUs during "
                              f"{cfg} {share:g}% rep {rep}: run again)", flush=True)
                        p = run_point(a, httpd, oha, cfg, share, rep, outdir)
                    points.append(p)
                    pf.write(json.dumps(p) + "\n")
                    pf.flush()
                    print(f"  [{time.monotonic() - t0:5.0f}s] {cfg:9s} long {share:4g}% "
                          f"rep {rep}: short p50 {p['short_p50_ms'] or 0:8.2f} ms  "
                          f"p99 {p['short_p99_ms'] or 0:8.2f} ms  "
                          f"{p['throughput']:6.0f} req/s  bad {p['bad']}  "
                          f"other {p['other_cpus']:.2f} CPUs", flush=True)
        for rep in range(a.repeats if a.capacity else 0):
            for si, share in enumerate(shares):
                k = (rep + si) % len(configs)
                for cfg in configs[k:] + configs[:k]:
                    p = run_capacity(a, httpd, oha, cfg, share, rep, outdir)
                    points.append(p)
                    pf.write(json.dumps(p) + "\n")
                    pf.flush()
                    print(f"  [{time.monotonic() - t0:5.0f}s] {cfg:9s} long {share:4g}% "
                          f"rep {rep}: closed-loop capacity {p['capacity']:6.0f} req/s  "
                          f"bad {p['bad']}", flush=True)
    summary = summarize(points, configs, shares)
    meta = {"date": stamp, "host": os.uname().nodename, "cpus": os.cpu_count(),
            "kernel": os.uname().release, "args": vars(a), "configs":
            {c: {"flags": CONFIGS[c][0], "env": CONFIGS[c][1], "label": CONFIGS[c][2]}
             for c in configs}}
    with open(os.path.join(outdir, "summary.json"), "w") as f:
        json.dump({"meta": meta, "summary": summary}, f, indent=1)
    tab = table(summary)
    with open(os.path.join(outdir, "table.md"), "w") as f:
        f.write(tab + "\n")
    print(tab)
    png = os.path.join(outdir, "pfn-http.png")
    try:
        plot(summary, configs, png,
             f"{a.short_rate:g} short req/s open loop, budget {a.budget_us} us, "
             f"{a.workers} Jiffy worker / {a.threads} pool threads on CPU {a.server_cpus}; "
             f"median of {a.repeats} (bars: min-max)")
        print(f"plot: {png}")
    except ImportError:
        print("http_hol.py: no matplotlib here (scripts/venv.sh makes .venv): no plot",
              file=sys.stderr)
        png = None
    if a.publish:
        if png:
            shutil.copy(png, os.path.join(ROOT, "docs", "img", "pfn-http.png"))
        shutil.copy(os.path.join(outdir, "summary.json"),
                    os.path.join(ROOT, "docs", "data", f"pfn-http-{stamp[:15]}.json"))
        print("published: docs/img/pfn-http.png, docs/data/pfn-http-%s.json" % stamp[:15])
    print(f"http_hol: {time.monotonic() - t0:.0f} s, {retries} run(s) repeated for other load")
    if a.max_other is not None:
        noisy = [p for p in points if p.get("other_cpus", 0.0) > a.max_other]
        if noisy:
            print(f"http_hol: WARNING: {len(noisy)} of {len(points)} runs had other processes "
                  f"taking more than {a.max_other:g} CPUs even after {retries} re-runs: "
                  f"this machine was busy, and those numbers say more about it than about the "
                  f"servers (other_cpus in points.jsonl)", file=sys.stderr)
    bad = [p for p in points if p["bad"] or p["server_rc"] != 0 or any(p["generator_rc"])]
    if bad:
        print(f"http_hol: {len(bad)} run(s) had errors (non-200 answers, or a program that "
              f"failed): see points.jsonl", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
