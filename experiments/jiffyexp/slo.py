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
  * A point is run several times (paired repeats, jiffyexp.sweep); its status is that of its
    median run (by the SLO class's p99). A miss is PERSISTENT when no run of the point met.
  * Loads are walked upwards; the walk of a configuration ends at stop_after consecutive
    persistent misses (0: never). The highest load that met the SLO before that end is the
    configuration's capacity at the SLO; a miss that one of the point's runs contradicts, or a
    miss followed by a meet (noise: a hypervisor stall in one run), does not end it. Below the
    lowest load measured, it is reported as 0 ("< lowest").
  * The same walk over each repeat alone (repeat r of every point) gives a capacity per repeat;
    the ratio to the best configuration that does not preempt is computed per repeat (the runs
    of a repeat ran side by side, load by load, so they saw the same host) and reported as the
    median of those ratios with their range. The verdict (verdict()) is that median against a
    goal.
  * A run is STALLED when the load generator's CPU was taken away during it (jiffy-load's
    load_cpu_stalls: a gap over 1 ms, or more than 0.3 % of the window lost in gaps over
    100 us); a point is STALL-HIT when one of its runs missed while stalled and another run of
    it met: the stall, not the server, plausibly made the difference. The tables list those
    points: their status comes from the median run.
Pure standard library: the tests run it with any python3.
"""

SENDER_REASONS = ("sender p99 lag", "send rate", "measured requests never sent")
MEETS, MISSES, UNKNOWN = "meets", "misses", "unknown"


def sender_failed(point):
    """Did the load generator (not the server) make this point meaningless?"""
    if point.get("load_error"):
        return True
    return any(r.startswith(SENDER_REASONS) for r in point.get("invalid_reasons", []))


STALL_LOST_PCT = 0.3   # % of the window the load CPU lost in gaps over 100 us
STALL_OVER_1MS = 1     # or this many gaps over 1 ms


def metric(exp):
    """(key in a class's summary, bound, words) of the experiment's SLO: the class's p99 latency
    (slo_p99_us) or its p99.9 slowdown (slo_slow_p999: latency / service time, Skyloft Fig. 8b)."""
    if exp.get("slo_slow_p999") is not None:
        return "slow_p999", exp["slo_slow_p999"], "p99.9 slowdown", ""
    return "p99_us", exp["slo_p99_us"], "p99", " us"


def judged_as(exp, cfg):
    """The experiment as a configuration's points are judged: the path floor (zero-work PING,
    jiffyexp.sweep) has one class, "all"."""
    if not cfg.get("floor"):
        return exp
    return dict(exp, slo_class="all", slo_slow_p999=None,
                slo_p99_us=exp.get("slo_p99_us") or float("inf"))


def run_stalled(run):
    """Did the host take the load generator's CPU away during this run (see the module doc)?"""
    st = run.get("load_cpu_stalls") or {}
    return (st.get("over_1ms", 0) >= STALL_OVER_1MS
            or st.get("lost_pct", 0.0) >= STALL_LOST_PCT)


def stall_hit(point, exp):
    """A run of @point missed the SLO while the host stalled the load generator's CPU, and
    another run of it met the SLO."""
    runs = point.get("runs", [])
    return (any(r["status"] == MISSES and run_stalled(r) for r in runs)
            and any(r["status"] == MEETS for r in runs))


def persistent_miss(point, exp):
    """The point misses and none of its runs met (a point without recorded runs: its status)."""
    if status(point, exp)[0] != MISSES:
        return False
    return not any(r["status"] == MEETS for r in point.get("runs", []))


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
    key, bound, words, unit = metric(exp)
    v = cls.get(key)
    if v is None:
        return MISSES, f"no {words} of {exp['slo_class']} (no service times given?)"
    if v > bound:
        return MISSES, f"{exp['slo_class']} {words} {v:.0f}{unit} > {bound:g}{unit}"
    return MEETS, f"{exp['slo_class']} {words} {v:.0f}{unit}"


def _walk(items, stop_after):
    """items: (load, status, persistent, p99, why) sorted by load; the walk of the module doc."""
    res = {"max_load": 0.0, "p99_at_max": None, "first_miss": None, "ended_by": "end of loads",
           "unknown": [], "end": None}
    misses = 0
    for load, st, persistent, p99, why in items:
        if st == UNKNOWN:
            res["unknown"].append(load)
            continue
        if st == MEETS:
            misses = 0
            res["max_load"], res["p99_at_max"], res["first_miss"] = load, p99, None
            continue
        if res["first_miss"] is None:
            res["first_miss"] = load
        misses = misses + 1 if persistent else 0
        if stop_after and misses >= stop_after:
            res["ended_by"] = f"{misses} consecutive persistent misses ({why})"
            res["end"] = load
            break
    return res


def capacity(points, exp, stop_after):
    """Apply the rule to one configuration's points (any order).

    Return a dict: max_load (0 when none met), p99_at_max, first_miss (the load of the first miss
    after max_load, None if none), ended_by (why the walk ended), unknown (loads skipped)."""
    items = []
    for p in sorted(points, key=lambda p: p["load"]):
        st, why = status(p, exp)
        p99 = p["classes"][exp["slo_class"]][metric(exp)[0]] if st == MEETS else None
        items.append((p["load"], st, persistent_miss(p, exp), p99, why))
    return _walk(items, stop_after)


def nrepeats(points):
    return max((len(p.get("runs", [])) for p in points), default=0)


def capacity_of_repeat(points, exp, stop_after, r, end=False):
    """Repeat @r's capacity: the highest load at which its run met the SLO, among the loads the
    walk over the points (capacity()) reached before it ended. A point that was run once (e.g.
    with repeat = "miss") counts its one run for every repeat. The end is the points' (the
    medians'), not the repeat's own: one run's misses at low loads (a stall) must not end a
    repeat's walk below loads at which it met. @end: capacity()'s "end" when the caller has it."""
    if end is False:
        end = capacity(points, exp, stop_after)["end"]
    best = 0.0
    for p in points:
        if end is not None and p["load"] > end:
            continue
        runs = p.get("runs") or []
        run = next((x for x in runs if x.get("repeat") == r), runs[0] if runs else None)
        st = run["status"] if run is not None else status(p, exp)[0]
        if st == MEETS and p["load"] > best:
            best = p["load"]
    return best


def should_stop(points, exp, stop_after, baselines):
    """Does the sweep stop a configuration with @points (those so far)? After @stop_after
    consecutive loads of persistent misses, and only when no configuration that does not
    preempt (@baselines: their point lists) met the SLO at the latest of those loads."""
    if not stop_after or len(points) < stop_after:
        return False
    last = sorted(points, key=lambda p: p["load"])[-stop_after:]
    if not all(persistent_miss(p, exp) for p in last):
        return False
    load = last[-1]["load"]
    return not any(p["load"] == load and status(p, exp)[0] == MEETS
                   for pts in baselines for p in pts)


def _ratio(cap, base, lowest):
    if base is None:
        return None
    if base == 0:
        # Nothing non-preemptive met the SLO even at the lowest load: bound the ratio.
        return (cap / lowest, ">") if cap else None
    return (cap / base, "")


def _median_of(xs):
    """The median of @xs, Nones left out (the lower middle one of an even count: never
    flattering); None when nothing is left."""
    xs = sorted(x for x in xs if x is not None)
    return xs[(len(xs) - 1) // 2] if xs else None


def table(exp, points_by_config, configs, stop_after):
    """Rows (dicts) for one experiment. With repeated runs, a configuration's capacity is the
    median of its per-repeat capacities ("rep_max": the walk over each repeat alone) and its
    ratio to the best configuration that does not preempt (run to completion and the peers) the
    median of the per-repeat ratios ("ratio", with "ratio_range"): paired runs, side by side.
    Without repeats, the walk over the points. p99_at_max: the point's (its median run's) at
    that load; first_miss: the first load above it whose point missed."""
    rows = []
    for cfg in configs:
        pts = points_by_config.get(cfg["name"], [])
        cap = capacity(pts, exp, stop_after)
        reps = [capacity_of_repeat(pts, exp, stop_after, r, cap["end"])
                for r in range(nrepeats(pts))]
        if len(reps) > 1:
            cap["max_load"] = _median_of(reps)
            key = metric(exp)[0]
            at = {p["load"]: p for p in pts}
            p = at.get(cap["max_load"])
            cap["p99_at_max"] = (p["classes"][exp["slo_class"]][key]
                                 if p and status(p, exp)[0] == MEETS else None)
            cap["first_miss"] = next((q["load"] for q in sorted(pts, key=lambda q: q["load"])
                                      if q["load"] > cap["max_load"]
                                      and status(q, exp)[0] == MISSES), None)
        rows.append({"config": cfg, **cap, "rep_max": reps,
                     "stall_hit": sorted(p["load"] for p in pts if p.get("stall_hit"))})
    base_rows = [r for r in rows if not r["config"]["preemptive"] and not r["config"].get("sim")]
    best_base = max((r["max_load"] for r in base_rows), default=None)
    lowest = exp["loads"][0]
    nrep = max((len(r["rep_max"]) for r in rows if not r["config"].get("sim")), default=0)
    for r in rows:
        r["ratio"] = _ratio(r["max_load"], best_base, lowest)
        r["ratio_range"] = None
        if not base_rows or nrep < 2 or r["config"].get("sim") or not r["rep_max"]:
            continue
        per = []
        for k in range(nrep):
            base_k = max(b["rep_max"][k] if k < len(b["rep_max"]) else b["max_load"]
                         for b in base_rows)
            mine = r["rep_max"][k] if k < len(r["rep_max"]) else r["max_load"]
            x = _ratio(mine, base_k, lowest)
            if x is not None:
                per.append(x)
        if per:
            per.sort(key=lambda x: x[0])
            r["ratio"] = per[(len(per) - 1) // 2]
            r["ratio_range"] = (per[0][0], per[-1][0], len(per), nrep)
    return rows


def verdict(exp, rows, goal):
    """The experiment's verdict: the best preemptive configuration's ratio (median of paired
    repeats) against @goal. Returns a dict (for meta.json and docs) with a one-line "text"."""
    pre = [r for r in rows if r["config"]["preemptive"] and not r["config"].get("sim")]
    base = [r for r in rows if not r["config"]["preemptive"] and not r["config"].get("sim")]
    out = {"experiment": exp["name"], "goal": goal, "met": None}
    if not pre or not base:
        out["text"] = (f"{exp['name']}: no verdict (needs a preemptive configuration and one "
                       "that does not preempt)")
        return out
    best = max(pre, key=lambda r: (r["ratio"] or (0.0, ""))[0])
    top = max(base, key=lambda r: r["max_load"])
    out.update(best=best["config"]["name"], capacity=best["max_load"],
               baseline=top["config"]["name"], baseline_capacity=top["max_load"],
               ratio=best["ratio"][0] if best["ratio"] else None,
               bound=bool(best["ratio"] and best["ratio"][1] == ">"),
               ratio_range=best["ratio_range"])
    lowest = exp["loads"][0]
    if best["ratio"] is None:
        out["met"] = False
        out["text"] = (f"{exp['name']}: NOT MET: {best['config']['label']} met the SLO at no "
                       f"load measured (lowest {lowest:,.0f}/s)")
        return out
    ratio, sign = best["ratio"]
    out["met"] = ratio >= goal
    spread = ""
    if best["ratio_range"]:
        lo, hi, n, nrep = best["ratio_range"]
        spread = f" (median of {n} paired repeats; range {lo:.1f}-{hi:.1f}x)"
    base_txt = (f"{top['config']['label']} {_fmt_load(top['max_load'], lowest)}/s"
                if top["max_load"] else f"nothing that does not preempt met it at {lowest:,.0f}/s")
    out["text"] = (f"{exp['name']}: {'MET' if out['met'] else 'NOT MET'}: "
                   f"{best['config']['label']} sustained {sign}{ratio:.1f}x the best "
                   f"non-preemptive{spread}; median capacities "
                   f"{_fmt_load(best['max_load'], lowest)}/s against {base_txt}; goal >= {goal:g}x")
    return out


def _fmt_load(load, lowest):
    return f"< {lowest:,.0f}" if load == 0 else f"{load:,.0f}"


def format_table(exp, rows, floor=None, probes=None):
    """Markdown table of table()'s rows; @floor: the path floor's points; @probes: {load: the
    stall probe before that load}."""
    lowest = exp["loads"][0]
    _, bound, words, unit = metric(exp)
    head = (f"Experiment **{exp['name']}** ({exp['title']}): highest offered load with "
            f"{exp['slo_class']} {words} <= {bound:g}{unit}; with repeated runs the capacity is "
            "the median over the paired repeats, in brackets their range, and the ratio is the "
            "median of the paired ratios\n\n"
            f"| configuration | preempts | max load at SLO (req/s) | {words} there{unit and ' (us)'} "
            "| first miss above (req/s) | vs best non-preemptive |\n"
            "| --- | --- | ---: | ---: | ---: | ---: |\n")
    lines = []
    for r in rows:
        c = r["config"]
        ratio = ("-" if r["ratio"] is None or r["max_load"] == 0
                 else f"{r['ratio'][1]}{r['ratio'][0]:.1f}x")
        if r.get("ratio_range") and ratio != "-":
            ratio += f" [{r['ratio_range'][0]:.1f}-{r['ratio_range'][1]:.1f}]"
        p99 = "-" if r["p99_at_max"] is None else f"{r['p99_at_max']:.0f}"
        miss = "-" if r["first_miss"] is None else f"{r['first_miss']:,.0f}"
        cap = _fmt_load(r["max_load"], lowest)
        reps = r.get("rep_max") or []
        if len(reps) > 1:
            cap += (f" [{_fmt_load(min(reps), lowest)}-{_fmt_load(max(reps), lowest)}]"
                    if min(reps) != max(reps) else " [all repeats]")
        lines.append(f"| {c['label']} | {'yes' if c['preemptive'] else 'no'} | "
                     f"{cap} | {p99} | {miss} | {ratio} |")
    notes = [f"- {r['config']['label']}: loads {', '.join(f'{x:,.0f}' for x in r['unknown'])} "
             "skipped (the load generator fell behind)" for r in rows if r["unknown"]]
    notes += [f"- {r['config']['label']}: stall-hit at {', '.join(f'{x:,.0f}' for x in r['stall_hit'])}"
              " req/s (a run missed while the host stalled the load generator's CPU and another "
              "run met; the point's status is its median run's)" for r in rows if r.get("stall_hit")]
    env = []
    if floor:
        for p in sorted(floor, key=lambda p: p["load"]):
            reps = [x for x in p.get("repeats", []) if isinstance(x, (int, float))]
            cls = p.get("classes", {}).get("all") or {}
            if cls.get("count"):
                rng = f" (runs {min(reps):.0f}-{max(reps):.0f})" if len(reps) > 1 else ""
                env.append(f"- path floor at {p['load']:,.0f} req/s (zero-work PING through "
                           f"{p['server']}, same client): p50 {cls['p50_us']:.0f} us, p99 "
                           f"{cls['p99_us']:.0f} us{rng}")
    if probes:
        parts = []
        for load, pr in sorted(probes.items(), key=lambda kv: float(kv[0])):
            vals = [v for v in (pr or {}).values() if v]
            if vals:
                parts.append(f"{float(load):,.0f}: " + "/".join(
                    f"{v['stalls_100us_per_s']:.0f}" for v in vals))
        if parts:
            env.append("- stalls over 100 us per second, server CPU/load CPU, in the probe before "
                       "each load: " + "; ".join(parts))
    return (head + "\n".join(lines) + ("\n\n" + "\n".join(notes) if notes else "")
            + ("\n\nThe environment, measured in the same sweep:\n" + "\n".join(env)
               if env else "") + "\n")


def colocation(exp, points_by_config, configs, lc_tolerance=0.10, be_goal=0.90):
    """The LC/BE table (Skyloft §5.2): for each [with BE, LC alone] pair of exp["colocation"]
    and each load both ran, the SLO class's p99 with and without the batch work (medians of the
    runs), the batch work's share of the CPU (be_share, from the server) and the CPU the LC
    server alone left idle (1 - its server_cpu_used): the goals are p99 within @lc_tolerance of
    alone's and a BE share of at least @be_goal of that idle CPU. Returns (rows, markdown)."""
    labels = {c["name"]: c["label"] for c in configs}
    cls = exp["slo_class"]
    rows = []
    for with_be, alone in exp.get("colocation", []):
        a_pts = {p["load"]: p for p in points_by_config.get(alone, [])}
        for p in sorted(points_by_config.get(with_be, []), key=lambda p: p["load"]):
            q = a_pts.get(p["load"])
            if q is None:
                continue
            p99 = _median_of([r.get("classes_p99", {}).get(cls) for r in p.get("runs", [])])
            p99a = _median_of([r.get("classes_p99", {}).get(cls) for r in q.get("runs", [])])
            be = _median_of([r.get("be_share") for r in p.get("runs", [])])
            busy = _median_of([r.get("server_cpu_used") for r in q.get("runs", [])])
            idle = None if busy is None else max(1.0 - busy, 0.0)
            row = {"config": with_be, "alone": alone, "load": p["load"], "p99": p99,
                   "p99_alone": p99a, "be_share": be, "idle": idle}
            row["lc_ok"] = (p99 is not None and p99a is not None
                            and p99 <= p99a * (1 + lc_tolerance))
            row["be_ok"] = be is not None and idle is not None and be >= be_goal * idle
            rows.append(row)
    if not rows:
        return rows, ""
    out = [f"Co-location ({exp['name']}): {cls} p99 with best-effort work against the same server "
           f"alone (goal: within {lc_tolerance:.0%}), and the best-effort work's share of the CPU "
           f"against what the server alone left idle (goal: at least {be_goal:.0%} of it); "
           "medians of the paired runs\n",
           "| configuration (with BE) | load (req/s) | p99 with BE (us) | p99 alone (us) | ratio "
           "| BE share (CPU) | idle alone (CPU) | BE / idle |",
           "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    f = lambda x, fmt: "-" if x is None else format(x, fmt)  # noqa: E731
    for r in rows:
        ratio = (r["p99"] / r["p99_alone"]) if r["p99"] and r["p99_alone"] else None
        share = (r["be_share"] / r["idle"]) if r["be_share"] is not None and r["idle"] else None
        out.append(f"| {labels.get(r['config'], r['config'])} | {r['load']:,.0f} | "
                   f"{f(r['p99'], '.0f')} | {f(r['p99_alone'], '.0f')} | "
                   f"{f(ratio, '.2f')}{'' if r['lc_ok'] else ' ✗'} | {f(r['be_share'], '.2f')} | "
                   f"{f(r['idle'], '.2f')} | {f(share, '.0%')}{'' if r['be_ok'] else ' ✗'} |")
    return rows, "\n".join(out) + "\n"
