#!/usr/bin/env python3
# Copyright 2026 The zbrokers Authors.
"""Runs a Google Benchmark binary several times and prints, for every pair of
benchmarks that differ only in "_Reactor" vs "_HandWritten" (or any other
pair given with --pair), the median time of each and their ratio.

Within one run the repetitions of all benchmarks are randomly interleaved
(--benchmark_enable_random_interleaving), so the two sides of a pair
alternate and share the machine's noise; across runs the medians are taken
over every repetition.

  test/bench/ratio.py build-release/test/bench/reactor_bench \
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
    ap.add_argument("--metric", default="real_time",
                    help="real_time, cpu_time or a counter (e.g. echo_cpu_ns)")
    args = ap.parse_args()

    samples = defaultdict(list)  # benchmark name -> [ns per iteration]
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
            if args.metric not in b:
                continue
            scale = 1
            if args.metric in ("real_time", "cpu_time"):
                scale = {"ns": 1, "us": 1e3, "ms": 1e6, "s": 1e9}[b["time_unit"]]
            samples[b["run_name"]].append(b[args.metric] * scale)
        print(f"run {run + 1}/{args.runs} done", file=sys.stderr)

    subject, baseline = args.pair
    print(f"{'benchmark':<44} {'median':>12} {'n':>4}  ({args.metric})")
    for name in sorted(samples):
        print(f"{name:<44} {statistics.median(samples[name]):>12.1f} "
              f"{len(samples[name]):>4}")
    print()
    print(f"ratio {subject} / {baseline} ({args.metric}, medians):")
    for name in sorted(samples):
        if subject not in name:
            continue
        other = name.replace(subject, baseline)
        if other not in samples:
            continue
        a = statistics.median(samples[name])
        b = statistics.median(samples[other])
        print(f"  {name:<42} {a / b:6.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
