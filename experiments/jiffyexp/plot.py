"""jiffyexp.plot - the PNG figures of a sweep (matplotlib, Agg backend; numpy).

Owns the figure of one experiment: one column per request class (short/long, get/scan, ...),
top row the p99 latency, bottom row the p99.9 slowdown (latency / service time), both against
the offered load, one line per configuration, log y axes. The SLO is drawn on its class's
latency panel. Points that missed because the server lost requests (overload) are drawn as x;
points the load generator spoiled are not drawn. Each point is its median run; the error bars on
the p99 panels span the point's paired repeats (min to max), and a point where a run missed while
the host stalled the load generator's CPU is circled. The path floor (zero-work PING through the
same server and client) is drawn grey and dotted on the p99 panels. Series from other sources
(the simulator's CSV, issue 6) can be overlaid: they are dashed.
"""

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter  # noqa: E402

from . import slo  # noqa: E402

MARKERS = "os^vD<>ph*"


def _classes(exp, series):
    seen = []
    for s in series:
        for p in s["points"]:
            for c in p.get("classes", {}):
                if c not in seen:
                    seen.append(c)
    # the SLO class first, the rest in the order met
    return sorted(seen, key=lambda c: (c != exp["slo_class"], seen.index(c)))


def plot_experiment(exp, series, path, subtitle=""):
    """@series: [{"label", "points": [point with load, classes, ...], "dashed": bool,
    "twin_of": index of the series whose colour it takes (a simulated twin), "floor": bool (the
    path floor: its one class is drawn on every class's p99 panel)}]"""
    classes = _classes(exp, [s for s in series if not s.get("floor")])
    if not classes:
        return None
    fig, axes = plt.subplots(2, len(classes), figsize=(5.2 * len(classes), 7.4), squeeze=False,
                             sharex=True)
    has_data = set()
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    if sum(1 for s in series if "twin_of" not in s) > len(colours):
        # more curves than the default cycle: 20 colours, so no two curves share colour and marker
        colours = [plt.get_cmap("tab20")(i) for i in range(20)]
    for k, s in enumerate(series):
        if s.get("floor"):
            _plot_floor(axes, classes, s)
            continue
        own = s.get("twin_of", k)
        style = dict(marker=MARKERS[own % len(MARKERS)], markersize=4, linewidth=1.4,
                     linestyle="--" if s.get("dashed") else "-",
                     color=colours[own % len(colours)],
                     markerfacecolor="none" if s.get("dashed") else None)
        for j, cls in enumerate(classes):
            for row, (key, _) in enumerate((("p99_us", "p99"), ("slow_p999", "p99.9 slow"))):
                xs, ys, bad_x, bad_y = [], [], [], []
                err_x, err_lo, err_hi, stall_x, stall_y = [], [], [], [], []
                for p in sorted(s["points"], key=lambda p: p["load"]):
                    c = p.get("classes", {}).get(cls)
                    if not c or not c.get("count") or c.get(key) is None:
                        continue
                    if slo.sender_failed(p):
                        continue
                    x, y = p["load"] / 1000.0, max(c[key], 1e-3)
                    xs.append(x)
                    ys.append(y)
                    if row == 0:
                        reps = [r["classes_p99"].get(cls) for r in p.get("runs", [])
                                if r.get("classes_p99", {}).get(cls) is not None]
                        if len(reps) > 1:
                            err_x.append(x)
                            err_lo.append(max(y - min(reps), 0.0))
                            err_hi.append(max(max(reps) - y, 0.0))
                        if p.get("stall_hit"):
                            stall_x.append(x)
                            stall_y.append(y)
                    if not p.get("valid", True) or p.get("server_error"):
                        bad_x.append(x)
                        bad_y.append(y)
                ax = axes[row][j]
                if xs:
                    has_data.add((row, j))
                line, = ax.plot(xs, ys, label=s["label"] if (j, row) == (0, 0) else None,
                                **style)
                if bad_x:
                    ax.plot(bad_x, bad_y, "x", color=line.get_color(), markersize=8)
                if err_x:
                    ys_at = dict(zip(xs, ys))
                    ax.errorbar(err_x, [ys_at[x] for x in err_x], yerr=[err_lo, err_hi],
                                fmt="none", ecolor=line.get_color(), elinewidth=0.8, capsize=2,
                                alpha=0.7)
                if stall_x:
                    ax.plot(stall_x, stall_y, "o", markersize=11, markerfacecolor="none",
                            markeredgecolor=line.get_color(), markeredgewidth=0.8)
    for j, cls in enumerate(classes):
        top, bottom = axes[0][j], axes[1][j]
        top.set_title(f"{cls}: p99 latency")
        top.set_ylabel("p99 latency (us)")
        bottom.set_title(f"{cls}: p99.9 slowdown (latency / service time)")
        bottom.set_ylabel("p99.9 slowdown")
        bottom.set_xlabel("offered load (thousand requests/s)")
        for row, ax in enumerate((top, bottom)):
            ax.grid(True, which="both", alpha=0.3)
            if exp["loads"][-1] >= 20 * exp["loads"][0]:
                ax.set_xscale("log")  # the peers' knees and Jiffy's are decades apart
                # plain numbers at the loads measured, no crowded minor labels
                ax.xaxis.set_major_locator(FixedLocator([x / 1000.0 for x in exp["loads"]]))
                ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
                ax.xaxis.set_minor_formatter(NullFormatter())
            if (row, j) in has_data:
                ax.set_yscale("log")
            else:
                ax.text(0.5, 0.5, "no data" + (" (no service times given)" if row else ""),
                        transform=ax.transAxes, ha="center", fontsize=9)
        if cls == exp["slo_class"]:
            key, bound, _, unit = slo.metric(exp)
            ax = top if key == "p99_us" else bottom
            ax.axhline(bound, color="black", linestyle=":", linewidth=1)
            ax.annotate(f"SLO {bound:g}{unit}", xy=(0.01, bound),
                         xycoords=("axes fraction", "data"), fontsize=8, va="bottom")
    if any(s.get("floor") for s in series):
        axes[0][0].plot([], [], "o", markersize=9, markerfacecolor="none", markeredgecolor="grey",
                        label="circled: a run missed while the host stalled the load CPU")
    fig.suptitle(f"{exp['title']}" + (f"\n{subtitle}" if subtitle else ""), fontsize=10)
    handles, labels = axes[0][0].get_legend_handles_labels()
    # long labels (a twin's, a full configuration's) get two columns, so none is cut off
    ncol = min(2 if max((len(x) for x in labels), default=0) > 48 else 3, max(1, len(labels)))
    fig.legend(handles, labels, loc="lower center", ncol=ncol, fontsize=8, frameon=False)
    fig.tight_layout(rect=(0, 0.04 + 0.025 * ((len(labels) - 1) // ncol), 1, 1))
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _plot_floor(axes, classes, s):
    """The path floor's p99 (class "all") on every class's p99 panel, with its repeats' range."""
    pts = sorted((p for p in s["points"] if not slo.sender_failed(p)
                  and (p.get("classes", {}).get("all") or {}).get("count")),
                 key=lambda p: p["load"])
    if not pts:
        return
    xs = [p["load"] / 1000.0 for p in pts]
    ys = [p["classes"]["all"]["p99_us"] for p in pts]
    lo, hi = [], []
    for p, y in zip(pts, ys):
        reps = [r["p99_us"] for r in p.get("runs", []) if r.get("p99_us") is not None] or [y]
        lo.append(max(y - min(reps), 0.0))
        hi.append(max(max(reps) - y, 0.0))
    for j, _ in enumerate(classes):
        ax = axes[0][j]
        ax.errorbar(xs, ys, yerr=[lo, hi], color="grey", linestyle=":", marker=".",
                    linewidth=1.2, capsize=2, label=s["label"] if j == 0 else None)
