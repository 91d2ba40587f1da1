#!/usr/bin/env python3
"""bench/probe-study/summarize.py - tables (and optionally plots) from a probe-study .jsonl.

Owns: how the raw runs of scripts/probe-study.sh become the numbers of docs/probe-study.md.
  summarize.py RUNS.jsonl [--plot DIR]   markdown on stdout; with --plot, PNGs into DIR
                                          (needs matplotlib: scripts/venv.sh's interpreter)

Slowdown: a run's elapsed time over the median of the plain build's runs under "none" (the
uninstrumented program run to completion, every repeat); the tables give the median over
repeats and, in brackets, the smallest and largest. (Pairing each run with its own repeat's
baseline was tried first: one outlying baseline then shifts a whole repeat, and the baselines
of sqlite and zstd vary by 10-25 % between processes.) Probe cost is probes/none over the same
median. Exits 1, saying where, when any two runs
of one program returned different checksums.
"""
import collections
import json
import statistics
import sys

MECHS = [  # (variant, mechanism, label)
    ("plain", "timer", "timer (signals, plain build)"),
    ("probes", "deadline", "deadline (probes)"),
    ("probes", "auto", "auto (probes build)"),
    ("plain", "auto", "auto (plain build: signal fallback)"),
]
PROGRAM_ORDER = ["zlib", "zstd", "sqlite", "lua", "matmul", "hashtab"]
TIMEOUTS = collections.defaultdict(list)  # (program, variant, mechanism, quantum) -> [limit_s]
KNOB_ORDER = ["smalltrip0", "probes", "smalltrip256", "smalltrip1024", "smalltrip4096", "every16",
              "latchend"]


def load(path):
    machines, counts, runs = [], [], []
    with open(path) as f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            if not line:
                continue
            try:
                r = json.loads(line)
            except json.JSONDecodeError as e:
                sys.exit(f"summarize: {path}:{n}: not JSON ({e})")
            if r.get("kind") == "machine":
                machines.append(r)
            elif "timeout_s" in r:
                TIMEOUTS[(r["program"], r["build"], r["mechanism"], int(r["quantum_us"]))] \
                    .append(r["timeout_s"])
            elif r.get("mechanism") == "count":
                counts.append(r)
            else:
                runs.append(r)
    return machines, counts, runs


def check_checksums(counts, runs):
    seen = {}
    bad = []
    for r in counts + runs:
        p = r["program"]
        seen.setdefault(p, r)
        if r["checksum"] != seen[p]["checksum"]:
            first = seen[p]
            bad.append(f"{p}: {r['build']}/{r['mechanism']} q={r.get('quantum_us')} gave "
                       f"{r['checksum']}, {first['build']}/{first['mechanism']} gave "
                       f"{first['checksum']}")
    return bad


def programs_of(runs):
    present = {r["program"] for r in runs}
    return [p for p in PROGRAM_ORDER if p in present] + sorted(present - set(PROGRAM_ORDER))


def index(runs):
    """(program, variant, mechanism, quantum) -> {rep: run}; none runs get quantum None."""
    by = collections.defaultdict(dict)
    for r in runs:
        q = None if r["mechanism"] == "none" else int(r["quantum_us"])
        by[(r["program"], r["build"], r["mechanism"], q)][r.get("rep", 0)] = r
    return by


def paired(by, key, base_key, field="elapsed_ns"):
    """Ratios of each run of @key to the median of the runs of @base_key (all repeats)."""
    a, b = by.get(key, {}), by.get(base_key, {})
    if not a or not b:
        return []
    base = statistics.median(r[field] for r in b.values())
    return [a[k][field] / base for k in sorted(a)]


def pct(ratios):
    if not ratios:
        return None
    return [(x - 1) * 100 for x in ratios]


def fmt_pct(vals, spread=True):
    if not vals:
        return "—"
    med = statistics.median(vals)
    if not spread or len(vals) == 1:
        return f"{med:.1f}"
    return f"{med:.1f} [{min(vals):.1f}, {max(vals):.1f}]"


def med_field(runs_by_rep, field):
    vals = [r[field] for r in runs_by_rep.values() if field in r]
    return statistics.median(vals) if vals else None


def fmt_us(x):
    if x is None:
        return "—"
    return f"{x:.0f}" if x >= 100 else f"{x:.1f}"


def quanta_of(runs):
    return sorted({int(r["quantum_us"]) for r in runs if r["mechanism"] not in ("none",)},
                  reverse=True)


def with_timeouts(cell, key):
    """A cell with the runs of @key that did not end in time (they are not in the median)."""
    t = TIMEOUTS.get(key)
    if not t:
        return cell
    note = f"{len(t)} run(s) > {max(t)} s"
    return note if cell == "—" else f"{cell}; {note}"


def table_slowdown(out, by, progs, quanta, mechs):
    out.append("| program | mechanism | " + " | ".join(f"{q} µs" for q in quanta) + " |")
    out.append("| --- | --- |" + " ---: |" * len(quanta))
    for p in progs:
        base = (p, "plain", "none", None)
        for variant, mech, label in mechs:
            cells = [with_timeouts(fmt_pct(pct(paired(by, (p, variant, mech, q), base))),
                                   (p, variant, mech, q)) for q in quanta]
            if all(c == "—" for c in cells):
                continue
            out.append(f"| {p} | {label} | " + " | ".join(cells) + " |")


def table_timeliness(out, by, progs, quanta, mechs):
    out.append("| program | mechanism | " + " | ".join(f"{q} µs" for q in quanta) + " |")
    out.append("| --- | --- |" + " ---: |" * len(quanta))
    for p in progs:
        for variant, mech, label in mechs:
            cells = []
            for q in quanta:
                runs = by.get((p, variant, mech, q))
                if not runs:
                    cells.append(with_timeouts("—", (p, variant, mech, q)))
                    continue
                cells.append(with_timeouts(f"{fmt_us(med_field(runs, 'interval_p50_us'))} / "
                                           f"{fmt_us(med_field(runs, 'interval_p99_us'))}",
                                           (p, variant, mech, q)))
            if all(c == "—" for c in cells):
                continue
            out.append(f"| {p} | {label} | " + " | ".join(cells) + " |")


def probe_cost_rows(by, counts, progs, variant="probes"):
    rows = []
    for p in progs:
        cost = pct(paired(by, (p, variant, "none", None), (p, "plain", "none", None)))
        base = by.get((p, "plain", "none", None), {})
        inst = by.get((p, variant, "none", None), {})
        base_ms = med_field(base, "elapsed_ns")
        inst_ms = med_field(inst, "elapsed_ns")
        n = next((c["probes"] for c in counts if c["program"] == p and c["build"] == variant),
                 None)
        rate = n / (inst_ms / 1e9) if n is not None and inst_ms else None
        rows.append((p, base_ms, inst_ms, cost, n, rate))
    return rows


def goals(out, by, progs, quanta):
    """Issue 14's goals, for each mechanism that runs the probes build."""
    mechs = [(v, m, label) for v, m, label in MECHS if v == "probes"
             and any(k[1] == v and k[2] == m for k in by)]
    out.append("| program | mechanism | slowdown at 10 µs ≤ 5 % | p99 interval at 10 µs ≤ "
               "20 µs | p99 ≤ 2 × quantum at every quantum (worst p99/q) | probe cost, "
               "nothing waits, ≤ 1 % |")
    out.append("| --- | --- | --- | --- | --- | --- |")
    met = collections.defaultdict(int)

    def verdict(key, val, limit, unit):
        if val is None:
            return "not measured"
        ok = val <= limit
        met[key] += ok
        return f"{'yes' if ok else '**no**'} ({val:.1f}{unit})"

    for variant, mech, label in mechs:
        for p in progs:
            base = (p, "plain", "none", None)
            s = pct(paired(by, (p, variant, mech, 10), base))
            runs = by.get((p, variant, mech, 10), {})
            p99 = med_field(runs, "interval_p99_us") if runs else None
            ratios = [med_field(by[(p, variant, mech, q)], "interval_p99_us") / q
                      for q in quanta if by.get((p, variant, mech, q))]
            c = pct(paired(by, (p, variant, "none", None), base))
            cells = [verdict((mech, 0), statistics.median(s) if s else None, 5, " %"),
                     verdict((mech, 1), p99, 20, " µs"),
                     verdict((mech, 2), max(ratios) if ratios else None, 2, "x"),
                     verdict((mech, 3), statistics.median(c) if c else None, 1, " %")]
            out.append(f"| {p} | {label} | " + " | ".join(cells) + " |")
        out.append(f"| **met by** | {label} | " +
                   " | ".join(f"{met[(mech, i)]} of {len(progs)}" for i in range(4)) + " |")


def knobs(out, by, counts, progs):
    variants = [v for v in KNOB_ORDER if any(k[1] == v for k in by)]
    if len(variants) < 2:
        return
    out.append("\n## Pass parameters (Aspen Fig. 2): deadline at 20 µs\n")
    out.append("Per variant: probes executed, probe cost when nothing waits (variant/none over "
               "plain/none), slowdown under deadline at a 20 µs quantum (over plain/none), and "
               "the preemption interval's p99 and standard deviation.\n")
    out.append("| program | variant | probes | cost, nothing waits (%) | deadline 20 µs "
               "slowdown (%) | p99 (µs) | sd (µs) |")
    out.append("| --- | --- | ---: | ---: | ---: | ---: | ---: |")
    for p in progs:
        base = (p, "plain", "none", None)
        for v in variants:
            if not by.get((p, v, "none", None)):
                continue
            n = next((c["probes"] for c in counts if c["program"] == p and c["build"] == v),
                     None)
            cost = pct(paired(by, (p, v, "none", None), base))
            dl = pct(paired(by, (p, v, "deadline", 20), base))
            runs = by.get((p, v, "deadline", 20), {})
            count = f"{n:,}" if n is not None else "—"
            out.append(f"| {p} | {v} | {count} | {fmt_pct(cost)} | {fmt_pct(dl)} | "
                       f"{fmt_us(med_field(runs, 'interval_p99_us'))} | "
                       f"{fmt_us(med_field(runs, 'interval_sd_us'))} |")


def decomposition(out, by, progs, quanta, mechs, counts):
    """Slowdown = a part that does not depend on the quantum + a cost per preemption: a least
    squares line of elapsed time against preemptions over a mechanism's runs at every quantum.
    For the probes build, the fixed part over probes/none, divided by the probes executed, is
    what an armed probe costs (the word is set the whole run: B always waits). Runs slower than
    5x the baseline (signals at 10 and 5 us) and mechanisms whose preemption count hardly varies
    with the quantum are left out."""
    out.append("| program | mechanism | cost per preemption (µs) | fixed part (% of plain/none) "
               "| of which armed probes (ns per probe) |")
    out.append("| --- | --- | ---: | ---: | ---: |")
    for p in progs:
        base_runs = by.get((p, "plain", "none", None), {})
        if not base_runs:
            continue
        base = statistics.median(r["elapsed_ns"] for r in base_runs.values())
        for variant, mech, label in mechs:
            # Runs more than 5x slower are the signal mechanisms' collapse, not a line.
            pts = [(r["preempts"], r["elapsed_ns"]) for q in quanta
                   for r in by.get((p, variant, mech, q), {}).values()
                   if r["elapsed_ns"] < 5 * base]
            xs = [x for x, _ in pts]
            if len(pts) < 3 or max(xs) < 3 * min(xs) + 1000:
                continue  # too few, or preemptions that hardly vary (auto's fallback)
            mx = statistics.fmean(x for x, _ in pts)
            my = statistics.fmean(y for _, y in pts)
            sxx = sum((x - mx) ** 2 for x, _ in pts)
            if sxx == 0:
                continue
            slope = sum((x - mx) * (y - my) for x, y in pts) / sxx
            icept = my - slope * mx
            armed = "—"
            inst = by.get((p, variant, "none", None), {})
            n = next((c["probes"] for c in counts if c["program"] == p and c["build"] == variant),
                     None)
            if variant != "plain" and inst and n:
                idle = statistics.median(r["elapsed_ns"] for r in inst.values())
                armed = f"{(icept - idle) / n:.2f}"
            out.append(f"| {p} | {label} | {slope / 1e3:.2f} | {(icept / base - 1) * 100:.1f} | "
                       f"{armed} |")


def counters(out, by, progs, quanta, mechs):
    """Where preemptions came from: safepoint vs signal, and requests deferred (libc etc.)."""
    out.append("| program | mechanism | q (µs) | preemptions | at a probe | by signal | "
               "deferred requests | interval max (µs) | max at (ms) |")
    out.append("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for p in progs:
        for variant, mech, label in mechs:
            for q in quanta:
                runs = by.get((p, variant, mech, q))
                if not runs:
                    continue
                if q not in (min(quanta), 20, 100):
                    continue
                out.append(f"| {p} | {label} | {q} | {med_field(runs, 'preempts'):,.0f} | "
                           f"{med_field(runs, 'preempts_safepoint'):,.0f} | "
                           f"{med_field(runs, 'preempts_signal'):,.0f} | "
                           f"{med_field(runs, 'preempt_deferred'):,.0f} | "
                           f"{fmt_us(med_field(runs, 'interval_max_us'))} | "
                           f"{med_field(runs, 'interval_max_at_ms'):.0f} |")


def plot(dirname, by, progs, quanta, mechs, stamp):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    paths = []
    fig, axes = plt.subplots(2, len(progs), figsize=(3.2 * len(progs), 6.4), squeeze=False)
    for i, p in enumerate(progs):
        base = (p, "plain", "none", None)
        for variant, mech, label in mechs:
            xs, ys, lo, hi, ts = [], [], [], [], []
            for q in quanta:
                s = pct(paired(by, (p, variant, mech, q), base))
                runs = by.get((p, variant, mech, q))
                if not s or not runs:
                    continue
                xs.append(q)
                ys.append(statistics.median(s))
                lo.append(statistics.median(s) - min(s))
                hi.append(max(s) - statistics.median(s))
                ts.append(med_field(runs, "interval_p99_us") / q)
            if xs:
                axes[0][i].errorbar(xs, ys, yerr=[lo, hi], marker="o", ms=3, capsize=2,
                                    label=label)
                axes[1][i].plot(xs, ts, marker="o", ms=3, label=label)
        for row in (0, 1):
            axes[row][i].set_xscale("log")
            axes[row][i].invert_xaxis()
            axes[row][i].grid(alpha=0.3)
        axes[0][i].set_yscale("symlog", linthresh=10)
        axes[0][i].axhline(5, color="grey", lw=0.8, ls="--")
        axes[1][i].set_yscale("log")
        axes[1][i].axhline(2, color="grey", lw=0.8, ls="--")
        axes[0][i].set_title(p)
        axes[1][i].set_xlabel("quantum (µs)")
    axes[0][0].set_ylabel("slowdown vs plain/none (%)")
    axes[1][0].set_ylabel("interval p99 / quantum")
    axes[0][0].legend(fontsize=7)
    fig.tight_layout()
    path = f"{dirname}/probe-study-{stamp}.png"
    fig.savefig(path, dpi=110)
    paths.append(path)
    return paths


def main(argv):
    if len(argv) not in (2, 4) or (len(argv) == 4 and argv[2] != "--plot"):
        sys.exit("usage: summarize.py RUNS.jsonl [--plot DIR]")
    machines, counts, runs = load(argv[1])
    bad = check_checksums(counts, runs)
    if bad:
        print("summarize: CHECKSUM MISMATCH (a program is not bit-exact):", file=sys.stderr)
        for b in bad:
            print("  " + b, file=sys.stderr)
        sys.exit(1)
    by = index(runs)
    progs = programs_of(runs)
    quanta = quanta_of([r for r in runs if r["build"] in ("plain", "probes")])
    mechs = [m for m in MECHS if any(k[1] == m[0] and k[2] == m[1] for k in by)]
    reps = sorted({r.get("rep", 0) for r in runs})
    out = []
    out.append(f"# Probe study: {argv[1].rsplit('/', 1)[-1]}\n")
    for m in machines:
        out.append(f"- {m.get('mode')} at {m['date']}: {m['cpu']}, {m['cpus']} CPUs, "
                   f"Linux {m['kernel']}, commit {m['commit']} ({m['src_files_modified']} "
                   f"files of src/ and include/ modified), {m['clang']}, load {m['loadavg']}")
    out.append(f"- {len(runs)} timed runs, repeats {reps[0]}–{reps[-1]}; every checksum of "
               "every program equal across builds, mechanisms and quanta.\n")

    if quanta:
        out.append("## Slowdown (%) vs quantum (Aspen Fig. 1 / Table 2)\n")
        out.append("Elapsed time of work() over the median of the plain build's runs under none; "
                   "median [min, max] over repeats.\n")
        table_slowdown(out, by, progs, quanta, mechs)

        out.append("\n## Timeliness: preemption interval p50 / p99 (µs) vs quantum\n")
        table_timeliness(out, by, progs, quanta, mechs)

    out.append("\n## Probe cost when nothing waits\n")
    out.append("| program | plain/none (ms) [min, max] | probes/none (ms) | probe cost (%) | "
               "probes executed | probes per second |")
    out.append("| --- | ---: | ---: | ---: | ---: | ---: |")
    for p, b, i, cost, n, rate in probe_cost_rows(by, counts, progs):
        el = [r["elapsed_ns"] / 1e6 for r in by.get((p, "plain", "none", None), {}).values()]
        spread = f" [{min(el):.0f}, {max(el):.0f}]" if el else ""
        out.append(f"| {p} | {b / 1e6 if b else 0:.0f}{spread} | {i / 1e6 if i else 0:.0f} | "
                   f"{fmt_pct(cost)} | {f'{n:,}' if n is not None else '—'} | "
                   f"{f'{rate / 1e6:.0f} M' if rate else '—'} |")

    out.append("\n## Where the probes run (share of probes executed, by function)\n")
    out.append("| program | probe sites reached | top functions |")
    out.append("| --- | ---: | --- |")
    for p in progs:
        c = next((c for c in counts if c["program"] == p and c["build"] == "probes"), None)
        if not c or not c.get("probes"):
            continue
        fns = ", ".join(f"{name} {100 * n / c['probes']:.0f} %"
                        for name, n in c.get("top_functions", [])[:4])
        out.append(f"| {p} | {c.get('probe_sites_run', '—')} | {fns or '—'} |")

    if quanta:
        out.append("\n## The issue's goals\n")
        goals(out, by, progs, quanta)

        out.append("\n## Where the slowdown comes from: fixed part + cost per preemption\n")
        decomposition(out, by, progs, quanta, mechs, counts)

        out.append("\n## Where preemptions came from (medians)\n")
        counters(out, by, progs, quanta, mechs)

    knobs(out, by, counts, progs)
    if len(argv) == 4:
        stamp = argv[1].rsplit("/", 1)[-1].replace("probe-study-", "").replace(".jsonl", "")
        for path in plot(argv[3], by, progs, quanta, mechs, stamp):
            out.append(f"\nPlot: {path}")
    print("\n".join(out))


if __name__ == "__main__":
    main(sys.argv)
