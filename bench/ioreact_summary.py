#!/usr/bin/env python3
"""bench/ioreact_summary.py - summarize ioreact_bench lines (bench/ioreact_sweep.sh's raw file).

Groups the runs by configuration (preempt, quantum, netpoll_us, irq, workers, hogs) and prints a
Markdown table: per column the median over the repetitions and (min..max). The hogs' throughput
is also shown relative to the median of the "none" runs with the same workers (run to
completion: no preemption, no polling beyond the requests' ends).
usage: ioreact_summary.py RAW_FILE
"""
import statistics
import sys

KEY = ("workers", "hogs", "preempt", "quantum_us", "netpoll_us", "irq")
COLS = [("p50_us", "p50 µs", 0), ("p99_us", "p99 µs", 0), ("netpolls_per_s", "polls/s", 0),
        ("irq_polls_per_s", "irq polls/s", 0), ("requests_per_s", "requests/s", 0),
        ("preempts_per_s", "preempts/s", 0),
        ("hog_kchunks_per_s", "hog kchunks/s", 0), ("cpu_per_s", "CPU s/s", 2),
        ("irq_thread_cpu_per_s", "irq thread CPU s/s", 4)]


def parse(path):
    runs = []
    with open(path) as f:
        for line in f:
            if not line.startswith("ioreact "):
                continue
            d = dict(kv.split("=", 1) for kv in line.split()[1:])
            d.setdefault("requests_per_s", "nan")
            d.setdefault("irq_thread_cpu_per_s", "nan")
            runs.append(d)
    return runs


def fmt(vals, digits):
    med = statistics.median(vals)
    f = "{:.%df}" % digits
    if len(vals) == 1:
        return f.format(med)
    return "%s (%s..%s)" % (f.format(med), f.format(min(vals)), f.format(max(vals)))


def main():
    runs = parse(sys.argv[1])
    groups = {}
    for r in runs:
        groups.setdefault(tuple(r[k] for k in KEY), []).append(r)
    base = {}
    for k, rs in groups.items():
        if k[2] == "none" and k[1] != "0":
            base[k[0]] = statistics.median(float(r["hog_kchunks_per_s"]) for r in rs)
    print("| workers | hogs | preempt | q µs | netpoll µs | irq | n | " +
          " | ".join(c[1] for c in COLS) + " | hog vs none |")
    print("|" + "---|" * (len(KEY) + 1 + len(COLS) + 1))
    for k in groups:  # in the order of the first pass
        rs = groups[k]
        cells = [fmt([float(r[c]) for r in rs], d) for c, _, d in COLS]
        hog = statistics.median(float(r["hog_kchunks_per_s"]) for r in rs)
        rel = "%+.1f %%" % (100.0 * (hog / base[k[0]] - 1)) if k[0] in base and k[1] != "0" else ""
        print("| " + " | ".join(k) + " | %d | " % len(rs) + " | ".join(cells) + " | " + rel + " |")


if __name__ == "__main__":
    main()
