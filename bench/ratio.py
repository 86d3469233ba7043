#!/usr/bin/env python3
# Copyright 2026 The zbrokers Authors.
"""Runs a Google Benchmark binary several times and prints, for every pair of
benchmarks that differ only in "_Reactor" vs "_HandWritten" (or any other
pair given with --pair), the median time of each and their ratio.

Within one run the repetitions of all benchmarks are randomly interleaved
(--benchmark_enable_random_interleaving), so the two sides of a pair
alternate and share the machine's noise; across runs the medians are taken
over every repetition.

  bench/ratio.py build-release/bench/reactor_bench \
      --runs 3 --repetitions 5 --filter 'PingPong'
"""

import argparse
import json
import statistics
import subprocess
import sys
from collections import defaultdict


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("binary")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--repetitions", type=int, default=5)
    ap.add_argument("--min-time", default="0.2")
    ap.add_argument("--filter", default=".")
    ap.add_argument("--pair", nargs=2, default=["_Reactor", "_HandWritten"],
                    metavar=("SUBJECT", "BASELINE"))
    ap.add_argument("--metric", action="append",
                    help="real_time (default), cpu_time or a counter such as "
                    "echo_cpu_ns; may be repeated")
    args = ap.parse_args()
    metrics = args.metric or ["real_time"]

    # (metric, benchmark name) -> [value per repetition]
    samples = defaultdict(list)
    for run in range(args.runs):
        out = subprocess.run(
            [args.binary, f"--benchmark_filter={args.filter}",
             f"--benchmark_repetitions={args.repetitions}",
             "--benchmark_enable_random_interleaving=true",
             f"--benchmark_min_time={args.min_time}",
             "--benchmark_format=json"],
            check=True, capture_output=True, text=True).stdout
        for b in json.loads(out)["benchmarks"]:
            if b.get("run_type") != "iteration" or b.get("error_occurred"):
                continue
            for metric in metrics:
                if metric not in b:
                    continue
                scale = 1
                if metric in ("real_time", "cpu_time"):
                    scale = {"ns": 1, "us": 1e3, "ms": 1e6,
                             "s": 1e9}[b["time_unit"]]
                samples[(metric, b["run_name"])].append(b[metric] * scale)
        print(f"run {run + 1}/{args.runs} done", file=sys.stderr)

    subject, baseline = args.pair
    for metric in metrics:
        names = sorted(n for (m, n) in samples if m == metric)
        print(f"{'benchmark':<48} {'median':>12} {'n':>4}  ({metric})")
        for name in names:
            values = samples[(metric, name)]
            print(f"{name:<48} {statistics.median(values):>12.1f} "
                  f"{len(values):>4}")
        print(f"ratio {subject} / {baseline} ({metric}, medians):")
        for name in names:
            other = name.replace(subject, baseline)
            if subject not in name or (metric, other) not in samples:
                continue
            a = statistics.median(samples[(metric, name)])
            b = statistics.median(samples[(metric, other)])
            print(f"  {name:<46} {a / b:6.3f}")
        print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
