"""jiffyexp.slo - "the highest load meeting the SLO", per configuration, and the table of it.

Owns the rule, which every number in docs/performance.md's SLO tables follows:
  * A point MEETS the SLO when its run is valid for the server (nothing lost beyond
    jiffy-load's 0.1 %, no error replies) and the p99 latency of the experiment's SLO class is at
    most slo_p99_us. Lost requests are in jiffy-load's percentiles already (pessimistically).
  * It MISSES when the server fell short: p99 over the bound, requests lost or answered with
    errors, the server died, or the class is absent (nothing of it was answered).
  * It is UNKNOWN when the load generator, not the server, failed (its sender fell behind its
    schedule: the point says nothing about the server) or jiffy-load itself failed. Unknown
    points are skipped by the rule.
  * Loads are walked upwards; the sweep of a configuration ends at stop_after consecutive misses
    (0: never). The highest load that met the SLO before that end is the configuration's
    capacity at the SLO; a miss followed by a meet (noise: a hypervisor stall in one run) does not
    end it. Below the lowest load measured, it is reported as 0 ("< lowest").
Pure standard library: the tests run it with any python3.
"""

SENDER_REASONS = ("sender p99 lag", "send rate", "measured requests never sent")
MEETS, MISSES, UNKNOWN = "meets", "misses", "unknown"


def sender_failed(point):
    """Did the load generator (not the server) make this point meaningless?"""
    if point.get("load_error"):
        return True
    return any(r.startswith(SENDER_REASONS) for r in point.get("invalid_reasons", []))


def status(point, exp):
    """(MEETS | MISSES | UNKNOWN, reason) of one point for experiment @exp."""
    if point.get("server_error"):
        return MISSES, point["server_error"]
    if sender_failed(point):
        why = point.get("load_error") or "; ".join(point.get("invalid_reasons", []))
        return UNKNOWN, f"load generator: {why}"
    if not point.get("valid", False):
        return MISSES, "; ".join(point.get("invalid_reasons", [])) or "invalid run"
    cls = point.get("classes", {}).get(exp["slo_class"])
    if not cls or not cls.get("count"):
        return MISSES, f"no {exp['slo_class']} request answered"
    p99 = cls["p99_us"]
    if p99 > exp["slo_p99_us"]:
        return MISSES, f"{exp['slo_class']} p99 {p99:.0f} us > {exp['slo_p99_us']:g} us"
    return MEETS, f"{exp['slo_class']} p99 {p99:.0f} us"


def capacity(points, exp, stop_after):
    """Apply the rule to one configuration's points (any order).

    Return a dict: max_load (0 when none met), p99_at_max, first_miss (the load of the first miss
    after max_load, None if none), ended_by (why the walk ended), unknown (loads skipped)."""
    res = {"max_load": 0.0, "p99_at_max": None, "first_miss": None, "ended_by": "end of loads",
           "unknown": []}
    misses = 0
    for p in sorted(points, key=lambda p: p["load"]):
        st, why = status(p, exp)
        if st == UNKNOWN:
            res["unknown"].append(p["load"])
            continue
        if st == MEETS:
            misses = 0
            res["max_load"] = p["load"]
            res["p99_at_max"] = p["classes"][exp["slo_class"]]["p99_us"]
            res["first_miss"] = None
            continue
        misses += 1
        if res["first_miss"] is None:
            res["first_miss"] = p["load"]
        if stop_after and misses >= stop_after:
            res["ended_by"] = f"{misses} consecutive misses ({why})"
            break
    return res


def table(exp, points_by_config, configs, stop_after):
    """Rows (dicts) for one experiment: each configuration's capacity, and its ratio to the best
    configuration that does not preempt (run to completion and the peers)."""
    rows = []
    for cfg in configs:
        cap = capacity(points_by_config.get(cfg["name"], []), exp, stop_after)
        rows.append({"config": cfg, **cap})
    baseline = [r["max_load"] for r in rows
                if not r["config"]["preemptive"] and not r["config"].get("sim")]
    best_base = max(baseline) if baseline else None
    lowest = exp["loads"][0]
    for r in rows:
        if best_base is None:
            r["ratio"] = None
        elif best_base == 0:
            # Nothing non-preemptive met the SLO even at the lowest load: bound the ratio.
            r["ratio"] = (r["max_load"] / lowest, ">") if r["max_load"] else None
        else:
            r["ratio"] = (r["max_load"] / best_base, "")
    return rows


def _fmt_load(load, lowest):
    return f"< {lowest:,.0f}" if load == 0 else f"{load:,.0f}"


def format_table(exp, rows):
    """Markdown table of table()'s rows."""
    lowest = exp["loads"][0]
    head = (f"Experiment **{exp['name']}** ({exp['title']}): highest offered load with "
            f"{exp['slo_class']} p99 <= {exp['slo_p99_us']:g} us\n\n"
            "| configuration | preempts | max load at SLO (req/s) | p99 there (us) "
            "| first miss above (req/s) | vs best non-preemptive |\n"
            "| --- | --- | ---: | ---: | ---: | ---: |\n")
    lines = []
    for r in rows:
        c = r["config"]
        ratio = ("-" if r["ratio"] is None or r["max_load"] == 0
                 else f"{r['ratio'][1]}{r['ratio'][0]:.1f}x")
        p99 = "-" if r["p99_at_max"] is None else f"{r['p99_at_max']:.0f}"
        miss = "-" if r["first_miss"] is None else f"{r['first_miss']:,.0f}"
        lines.append(f"| {c['label']} | {'yes' if c['preemptive'] else 'no'} | "
                     f"{_fmt_load(r['max_load'], lowest)} | {p99} | {miss} | {ratio} |")
    notes = [f"- {r['config']['label']}: loads {', '.join(f'{x:,.0f}' for x in r['unknown'])} "
             "skipped (the load generator fell behind)" for r in rows if r["unknown"]]
    return head + "\n".join(lines) + ("\n\n" + "\n".join(notes) if notes else "") + "\n"
