#!/usr/bin/env python3
"""experiments/pfn_bomb.py - the decompression-bomb demo end to end (make demo-bomb;
docs/pfn-bomb.md): runs pfn-bomb under each preemption mechanism (and pfn-bomb-probes, zlib built
with Jiffy's probe pass, when it is built: scripts/zlib-probes.sh), each run holding
flock(/tmp/jiffy-timing.lock) so that no two timing runs overlap, then prints the table and writes
the plot.

Owns: which configurations run (CONFIGS), the table (medians with p10/p90 and the overshoot past
the budget) and the figure (libinger's Fig. 5: (a) the benign decode, direct and under launch per
mechanism, and in a pthread and a child; (b) the bomb at 10 ms: how late the caller has control
back, per method; (c) that overshoot at 10, 1 and 0.1 ms budgets per mechanism; (d) the cost of
stopping it for good: jf_pfn_cancel, pthread_cancel + join, kill + waitpid).

    .venv/bin/python experiments/pfn_bomb.py [--build build] [--reps 200] [--out DIR]
        [--img docs/img/pfn_bomb.png] [--replot DIR]

Every sample is kept in DIR/samples.csv (default experiments/results/pfn-bomb-<time>/), the
table in DIR/table.md, the programs' own output in DIR/*.log.
"""
import argparse
import contextlib
import csv
import datetime
import fcntl
import os
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "experiments"))
from jiffyexp.sweep import describe_stalls, stall_probe  # noqa: E402

LOCK = "/tmp/jiffy-timing.lock"


@contextlib.contextmanager
def timing_lock():
    """flock(LOCK): no two timing runs of the project overlap (each run takes it anew)."""
    with open(LOCK, "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def stalls(out, when):
    """The hypervisor-stall probe of jiffyexp (2 s, both CPUs busy) and the load average,
    logged and returned."""
    with timing_lock():
        desc = describe_stalls(stall_probe(sorted(os.sched_getaffinity(0)), secs=2.0))
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    line = (f"CPU stalls {when} (gaps > 100 us in a clock-reading loop on each CPU: the "
            f"hypervisor, or other processes outside the timing lock): {desc}; load average {load}")
    print("   " + line, flush=True)
    with open(os.path.join(out, "stalls.txt"), "a") as f:
        f.write(line + "\n")
    return line

# (label, binary, JIFFY_PREEMPT, extra flags). The first also runs the alternatives.
CONFIGS = [
    ("auto", "pfn-bomb", "auto", ["--alternatives", "--full-bomb"]),
    ("timer", "pfn-bomb", "timer", []),
    ("dispatcher", "pfn-bomb", "dispatcher", []),
    ("deadline", "pfn-bomb", "deadline", []),
    ("hybrid", "pfn-bomb", "hybrid", []),
    ("none", "pfn-bomb", "none", []),
    ("zclang+auto", "pfn-bomb-zclang", "auto", []),
    ("probes+auto", "pfn-bomb-probes", "auto", []),
    ("probes+deadline", "pfn-bomb-probes", "deadline", []),
    # the same launches 200 us apart: the budget timer that a stop at a probe leaves armed
    # (deadline + grace) fires in the gap instead of inside the next launch
    ("probes+auto-gap200", "pfn-bomb-probes", "auto", ["--gap-us", "200"]),
]


def pct(v, p):
    v = sorted(v)
    return v[min(len(v) - 1, int(len(v) * p / 100))]


def run_all(build, out, reps):
    csv_path = os.path.join(out, "samples.csv")
    missing = []
    stalls(out, "before")
    for label, binary, mech, extra in CONFIGS:
        exe = os.path.join(build, "apps", "pfn", binary)
        if not os.access(exe, os.X_OK):
            missing.append(f"{label} ({binary} not built"
                           + (": scripts/zlib-probes.sh" if "probes" in binary or "zclang" in binary
                              else ": make build") + ")")
            continue
        env = dict(os.environ, JIFFY_PREEMPT=mech, JIFFY_WORKERS="1")
        cmd = [exe, "--reps", str(reps), "--csv", csv_path, "--label", label] + extra
        print(f"== {label}: JIFFY_PREEMPT={mech} JIFFY_WORKERS=1 {' '.join(cmd)}", flush=True)
        with open(os.path.join(out, f"{label}.log"), "w") as log, timing_lock():
            p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               text=True)
            log.write(p.stdout)
        if p.returncode != 0:
            sys.stdout.write(p.stdout)
            sys.exit(f"pfn_bomb: {label} failed (exit {p.returncode}); output in {out}/{label}.log")
    for m in missing:
        print(f"   skipped: {m}")
    stalls(out, "after")
    return csv_path


def load(csv_path):
    samples, leaks = [], []
    with open(csv_path) as f:
        for r in csv.reader(f):
            if not r:
                continue
            if r[0] == "#leak":
                leaks.append(r[1:])
                continue
            samples.append(dict(label=r[0], method=r[1], input=r[2], budget_us=int(r[3]),
                                rep=int(r[4]), status=r[5], elapsed=int(r[6]),
                                cancel=int(r[7]), total_out=int(r[8])))
    return samples, leaks


def group(samples, **kw):
    return [s for s in samples if all(s[k] == v for k, v in kw.items())]


def fmt_us(ns):
    return f"{ns / 1e3:,.1f}"


def table(samples, leaks):
    lines = []
    add = lines.append
    labels = []
    for s in samples:
        if s["label"] not in labels:
            labels.append(s["label"])
    add("Benign input (decode time, µs: median [p10, p90]; n samples each):")
    add("")
    add("| configuration | direct | under launch (10 ms budget) | launch - direct (median) |")
    add("| --- | --- | --- | --- |")
    for lab in labels:
        d = [s["elapsed"] for s in group(samples, label=lab, method="direct", input="benign")]
        ll = [s["elapsed"] for s in group(samples, label=lab, method="launch", input="benign")]
        if not d or not ll:
            continue
        md, ml = statistics.median(d), statistics.median(ll)
        add(f"| {lab} | {fmt_us(md)} [{fmt_us(pct(d, 10))}, {fmt_us(pct(d, 90))}] | "
            f"{fmt_us(ml)} [{fmt_us(pct(ll, 10))}, {fmt_us(pct(ll, 90))}] | "
            f"{(ml - md) / 1e3:+.1f} µs ({100 * (ml - md) / md:+.2f} %) |")
    for m, what in (("pthread", "pthread: create + decode + timedjoin"),
                    ("fork", "fork: fork + decode + exit + waitpid")):
        v = [s["elapsed"] for s in group(samples, method=m, input="benign")]
        if v:
            late = sum(1 for s in group(samples, method=m, input="benign") if s["status"] != "done")
            add(f"| {what} | | {fmt_us(statistics.median(v))} [{fmt_us(pct(v, 10))}, "
                f"{fmt_us(pct(v, 90))}] | {late} of {len(v)} past the budget |")
    add("")
    add("Bomb (1 GiB of zeros in ~1 MiB): time from the call until the caller has control back,"
        " overshoot past the budget, and the time to stop it for good (µs: median [p10, p90, "
        "p99]):")
    add("")
    add("| configuration | budget | back in control | overshoot | cancel/kill | n |")
    add("| --- | --- | --- | --- | --- | --- |")
    rows = []
    for m in ("pthread", "fork"):
        rows.append((m, m, 10000))
    for lab in labels:
        for meth in ("launch", "launch-arena"):
            for b in (10000, 1000, 100):
                rows.append((lab, meth, b))
    for lab, meth, b in rows:
        if meth in ("pthread", "fork"):
            g = group(samples, method=meth, input="bomb", budget_us=b)
            name = ("pthread + timedjoin + pthread_cancel (async)" if meth == "pthread"
                    else "fork + sigtimedwait + kill(SIGKILL)")
        else:
            g = group(samples, label=lab, method=meth, input="bomb", budget_us=b)
            name = f"launch, {lab}" + (" (zlib state in the arena)" if meth == "launch-arena" else "")
        g = [s for s in g if s["status"] == "timeout"]
        if not g:
            continue
        e = [s["elapsed"] for s in g]
        o = [max(0, s["elapsed"] - b * 1000) for s in g]
        c = [s["cancel"] for s in g]
        add(f"| {name} | {b / 1000:g} ms | {fmt_us(statistics.median(e))} | "
            f"{fmt_us(statistics.median(o))} [{fmt_us(pct(o, 10))}, {fmt_us(pct(o, 90))}, "
            f"{fmt_us(pct(o, 99))}] | {fmt_us(statistics.median(c))} [{fmt_us(pct(c, 10))}, "
            f"{fmt_us(pct(c, 90))}] | {len(g)} |")
    full = group(samples, method="unprotected", input="bomb")
    if full:
        add("")
        add(f"The bomb decoded to its end without a bound: {full[0]['elapsed'] / 1e9:.2f} s for "
            f"{full[0]['total_out'] / 2**30:.0f} GiB.")
    if leaks:
        add("")
        add("Left behind after the cancels (bytes the decoder's allocator still held; heap in use"
            " before vs after, mallinfo2; zlib allocations the handler freed because zlib could "
            "not):")
        add("")
        for lk in leaks:
            if lk[0] == "pthread-no-cleanup":
                add(f"- pthread_cancel without a cleanup handler: {int(lk[1]):,} bytes per cancel")
            else:
                add(f"- {lk[0]}: held {lk[1]} B, heap delta {lk[2]} B, rescued {lk[3]}")
    return "\n".join(lines)


def _boxes(ax, data, names, colors=None, log=False):
    if not data:
        return
    b = ax.boxplot(data, showfliers=True, whis=(5, 95), patch_artist=True,
                   flierprops=dict(markersize=2, alpha=0.4), medianprops=dict(color="black"))
    for i, patch in enumerate(b["boxes"]):
        patch.set_facecolor(colors[i] if colors else "tab:blue")
        patch.set_alpha(0.6)
    ax.set_xticks(range(1, len(names) + 1), names)
    ax.tick_params(axis="x", labelrotation=90, labelsize=7)
    if log:
        ax.set_yscale("log")
    ax.grid(axis="y", alpha=0.3)


def plot(samples, img):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = []
    for s in samples:
        if s["label"] not in labels and s["method"].startswith("launch"):
            labels.append(s["label"])
    fig, axes = plt.subplots(2, 2, figsize=(15, 10))
    # (a) benign: direct and launched, paired per run (each configuration is its own process)
    data, names, colors = [], [], []
    for lab in labels:
        for meth, col in (("direct", "lightgray"), ("launch", "tab:blue")):
            v = [s["elapsed"] / 1e3 for s in group(samples, label=lab, method=meth, input="benign")]
            if v:
                data.append(v)
                names.append(f"{meth} {lab}")
                colors.append(col)
    for m in ("pthread", "fork"):
        v = [s["elapsed"] / 1e3 for s in group(samples, method=m, input="benign")]
        if v:
            data.append(v)
            names.append(m)
            colors.append("tab:orange")
    ax = axes[0][0]
    _boxes(ax, data, names, colors)
    ax.set_ylabel("decode time (µs)")
    ax.set_title("(a) benign input (2 MiB of log lines): direct vs under launch, pthread, fork")
    # (b) bomb at 10 ms: overshoot
    data, names, colors = [], [], []
    for lab in labels:
        v = [max(0.1, s["elapsed"] / 1e3 - 10000)
             for s in group(samples, label=lab, method="launch", input="bomb", budget_us=10000)]
        if v:
            data.append(v)
            names.append(f"launch {lab}")
            colors.append("tab:green" if "probes" in lab else "tab:blue")
    for m in ("pthread", "fork"):
        v = [max(0.1, s["elapsed"] / 1e3 - 10000)
             for s in group(samples, method=m, input="bomb", budget_us=10000)]
        if v:
            data.append(v)
            names.append(m)
            colors.append("tab:orange")
    ax = axes[0][1]
    _boxes(ax, data, names, colors, log=True)
    ax.set_ylabel("control back after the budget (µs past 10 ms)")
    ax.set_title("(b) bomb (1 GiB of zeros), 10 ms budget: overshoot")
    # (c) overshoot vs budget
    ax = axes[1][0]
    budgets = [100, 1000, 10000]
    for lab in labels:
        xs, med, lo, hi = [], [], [], []
        for b in budgets:
            o = [max(0, s["elapsed"] - b * 1000) / 1e3
                 for s in group(samples, label=lab, method="launch", input="bomb", budget_us=b)]
            if o:
                xs.append(b)
                med.append(statistics.median(o))
                lo.append(statistics.median(o) - pct(o, 10))
                hi.append(pct(o, 90) - statistics.median(o))
        if xs:
            ax.errorbar(xs, med, yerr=[lo, hi], marker="o", capsize=3, label=lab,
                        ls="--" if "probes" in lab else "-")
    for m, mk in (("pthread", "s"), ("fork", "^")):
        o = [max(0, s["elapsed"] - 10_000_000) / 1e3
             for s in group(samples, method=m, input="bomb", budget_us=10000)]
        if o:
            ax.errorbar([10000], [statistics.median(o)],
                        yerr=[[statistics.median(o) - pct(o, 10)],
                              [pct(o, 90) - statistics.median(o)]],
                        marker=mk, ls="none", color="gray", capsize=3, label=m)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("budget (µs)")
    ax.set_ylabel("overshoot past the budget (µs): median, p10-p90")
    ax.set_title("(c) bomb: overshoot per budget and mechanism")
    ax.legend(fontsize=7, ncol=2)
    ax.grid(alpha=0.3)
    # (d) stopping it for good
    data, names, colors = [], [], []
    for lab in labels:
        v = [max(0.01, s["cancel"] / 1e3)
             for s in group(samples, label=lab, method="launch", input="bomb", budget_us=10000)]
        if v:
            data.append(v)
            names.append(f"jf_pfn_cancel {lab}")
            colors.append("tab:blue")
    for m, what in (("pthread", "pthread_cancel+join"), ("fork", "kill+waitpid")):
        v = [max(0.01, s["cancel"] / 1e3) for s in group(samples, method=m, input="bomb",
                                                         budget_us=10000)]
        if v:
            data.append(v)
            names.append(what)
            colors.append("tab:orange")
    ax = axes[1][1]
    _boxes(ax, data, names, colors, log=True)
    ax.set_ylabel("µs")
    ax.set_title("(d) after the 10 ms timeout: stopping it for good (cleanup included)")
    fig.suptitle("Decompression bomb under preemptible functions (zlib; libinger Fig. 5)")
    fig.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(img)), exist_ok=True)
    fig.savefig(img, dpi=100)
    plt.close(fig)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--reps", type=int, default=200)
    ap.add_argument("--out")
    ap.add_argument("--img", default=os.path.join(ROOT, "docs", "img", "pfn_bomb.png"))
    ap.add_argument("--replot", metavar="DIR", help="table and plot again from DIR/samples.csv")
    a = ap.parse_args()
    if a.replot:
        out = a.replot
        csv_path = os.path.join(out, "samples.csv")
    else:
        stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%d-%H%M%S")
        out = a.out or os.path.join(ROOT, "experiments", "results", f"pfn-bomb-{stamp}")
        os.makedirs(out, exist_ok=True)
        csv_path = run_all(a.build, out, a.reps)
    samples, leaks = load(csv_path)
    t = table(samples, leaks)
    st = os.path.join(out, "stalls.txt")
    if os.path.exists(st):
        with open(st) as f:
            t += "\n\n" + "".join("- " + ln for ln in f)
    print()
    print(t)
    with open(os.path.join(out, "table.md"), "w") as f:
        f.write(t + "\n")
    try:
        plot(samples, a.img)
        plot(samples, os.path.join(out, "pfn_bomb.png"))
        print(f"\nplot: {a.img} (and {out}/pfn_bomb.png); samples: {csv_path}")
    except ImportError:
        print("\nno matplotlib here: run it with scripts/venv.sh's python for the plot")


if __name__ == "__main__":
    main()
