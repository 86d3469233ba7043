#!/usr/bin/env python3
"""Median-of-runs tables for zb-latency --baseline JSON files.

Usage: summarize_runs.py RUN.json [RUN.json ...]

Each file is one `zb-latency --baseline --json FILE` run with the same
options.  Prints, as Markdown: per run the least-squares fits
latency = a + b x workers of zbrokers and of the raw baseline (from the
average and from the p50 of each step), the slope ratio b_zb / b_raw and
the 1-worker ratio; then the medians of those ratios over the runs; then
per step the medians over the runs of the latencies, of the per-run
ratios and of the CPU time per round trip.  docs/performance.md shows the
output.  Files of the control run (`zb-latency --raw-only --baseline`: the
raw program against itself) are labelled raw-a and raw-b instead of
zbrokers and raw.  Standard library only.
"""

import json
import statistics as st
import sys


def fit(xs, ys):
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    sxy = sum((x - mx) * (y - my) for x, y in zip(xs, ys))
    b = sxy / sxx
    a = my - b * mx
    ss = sum((y - my) ** 2 for y in ys)
    sr = sum((y - a - b * x) ** 2 for x, y in zip(xs, ys))
    return a, b, (1 - sr / ss) if ss else 1.0


def names(run):
    """The measured system's and the baseline's labels."""
    if run["config"].get("raw_only"):
        return "raw-a", "raw-b"  # the control run
    return "zbrokers", "raw"


def main(paths):
    runs = []
    for p in paths:
        with open(p) as fh:
            runs.append(json.load(fh))
    for p, d in zip(paths, runs):
        if "baseline" not in d or len(d["steps"]) < 2:
            print(f"{p}: needs --baseline and at least two steps",
                  file=sys.stderr)
            return 2
    if len({names(d) for d in runs}) != 1:
        print("the files mix control runs (--raw-only --baseline) with "
              "zbrokers runs", file=sys.stderr)
        return 2
    a, b = names(runs[0])
    short = {"zbrokers": "zb"}.get(a, a)
    print(f"| run | {a} a + b (avg, r²) | {b} a + b (avg, r²) "
          "| **b ratio** (avg) | b ratio (p50 fit) "
          "| **1-worker ratio** (avg) | 1-worker ratio (p50) |")
    print("|---|---|---|---:|---:|---:|---:|")
    cols = {"ba": [], "bp": [], "oa": [], "op": []}
    for i, d in enumerate(runs, 1):
        z, r = d["steps"], d["baseline"]["steps"]
        xs = [s["workers"] for s in z]
        za, zb, zr = fit(xs, [s["avg_us"] for s in z])
        ra, rb, rr = fit(xs, [s["avg_us"] for s in r])
        zbp = fit(xs, [s["p50_us"] for s in z])[1]
        rbp = fit(xs, [s["p50_us"] for s in r])[1]
        vals = {"ba": zb / rb, "bp": zbp / rbp,
                "oa": z[0]["avg_us"] / r[0]["avg_us"],
                "op": z[0]["p50_us"] / r[0]["p50_us"]}
        for k, v in vals.items():
            cols[k].append(v)
        print(f"| {i} | {za:.1f} + {zb:.2f} ({zr:.3f}) "
              f"| {ra:.1f} + {rb:.2f} ({rr:.3f}) | {vals['ba']:.3f} "
              f"| {vals['bp']:.3f} | {vals['oa']:.3f} | {vals['op']:.3f} |")
    med = {k: st.median(v) for k, v in cols.items()}
    print(f"| **median** | | | **{med['ba']:.3f}** | **{med['bp']:.3f}** "
          f"| **{med['oa']:.3f}** | **{med['op']:.3f}** |")
    print()
    print(f"| workers | {short} avg | {short} p50 | {short} p99 | {b} avg "
          f"| {b} p50 | {b} p99 | avg ratio | p50 ratio | {short} CPU "
          f"| {b} CPU |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for k in range(len(runs[0]["steps"])):
        def m(key, raw=False):
            # CPU is unknown (null) with --placement processes.
            v = [(d["baseline"]["steps"] if raw else d["steps"])[k].get(key)
                 for d in runs]
            v = [x for x in v if isinstance(x, (int, float)) and x >= 0]
            return st.median(v) if v else float("nan")

        def ratio(key):
            return st.median(d["steps"][k][key] /
                             d["baseline"]["steps"][k][key] for d in runs)
        print(f"| {runs[0]['steps'][k]['workers']} | {m('avg_us'):.1f} "
              f"| {m('p50_us'):.1f} | {m('p99_us'):.1f} "
              f"| {m('avg_us', True):.1f} | {m('p50_us', True):.1f} "
              f"| {m('p99_us', True):.1f} | {ratio('avg_us'):.3f} "
              f"| {ratio('p50_us'):.3f} | {m('cpu_us_per_rt'):.1f} "
              f"| {m('cpu_us_per_rt', True):.1f} |")
    return 0


if __name__ == "__main__":
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    sys.exit(main(sys.argv[1:]))
