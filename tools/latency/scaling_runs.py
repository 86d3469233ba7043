#!/usr/bin/env python3
# Copyright 2026 The zbrokers Authors.
"""Wall-clock runs of zb-latency --baseline up to 256 workers, and the verdict.

Usage: scaling_runs.py ZB_LATENCY OUT_DIR [--runs 3] [--rounds 1000]
           [--max-workers 256] [--step 15] [--only one-core|two-cores]
           [--transport tcp,inproc] [--control] [--pin-roles]
           [--evict-cache SIZE] [--force]

Runs, alternating the configurations so that a change in the machine's
load hits all of them alike, `--runs` times each:

    zb-latency --baseline --cpus 0   --max-workers 256 --step 15 \\
        --rounds-per-step 1000 --transport T --json OUT_DIR/one-core-T-i.json
    zb-latency --baseline --cpus 0-1 ... OUT_DIR/two-cores-T-i.json

(workers 1, 16, 31, ..., 256), then prints for each configuration the
tables of summarize_runs.py (fits per run, per-step medians) and checks the
target of issue 13:

  - one core: zbrokers' median per-step ratio to raw (average and p50) is
    at most 1.10 at every worker count, and the fit through zbrokers'
    averages has r^2 >= 0.99 (median over the runs);
  - two cores: the median per-step ratios are at most 1.10.

--control adds, for every configuration, the control run
(`zb-latency --raw-only --baseline ...`, OUT_DIR/CONFIG-control-i.json):
the raw program measured against a second copy of itself, alternated with
the others.  Its ratios would all be 1.000 on a perfect machine; what they
are instead is the noise floor of the same measurement, printed as the
highest median per-step ratio and the range of the single runs' per-step
ratios.  The verdict above does not change with it: it says how far a
zbrokers ratio may be read (docs/latency.md, "The control run").

--pin-roles adds zb-latency's --pin-roles to every run: on two cores the
broker of each system on CPU 0, its workers on CPU 1, its client on CPU 0,
the same placement for both systems (on one core it changes nothing).
Without it the scheduler places each system's threads as it likes, and on
this VM a 1-worker step then measures which system got the faster
placement (docs/latency.md, "Pinning each role").

--evict-cache SIZE adds zb-latency's --evict-cache SIZE to every run: each
client writes SIZE bytes before each round trip, so that no step starts
with the last round trip's state in the caches (docs/latency.md, "Cold
caches"); e.g. 8M on the development VM, whose L2 is 2 MiB.

Wall-clock numbers need a quiet machine: the script refuses to start when
the 1-minute load average is 1.5 or more (the first field of
/proc/loadavg), unless --force, and prints the load before and after.
With the defaults the twelve runs took 23 minutes on the 2-vCPU
development VM (one core: tcp 176-228 s a run, inproc 37-46 s; two cores:
117-181 s and 25-30 s) before zb-latency settled each step.  With the
settling, on a later instance of that VM (about twice as fast over tcp),
one run of each took 169 s and 43 s on one core, 123 s and 41 s on two:
about 19 minutes for the twelve.  With 5,000 round trips and steps of 51
a run took 171-174 s and 44-47 s on one core, 125-128 s and 40-42 s on
two.  Standard library only.
"""

import argparse
import json
import os
import statistics as st
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import summarize_runs  # noqa: E402

CPUS = {"one-core": "0", "two-cores": "0-1"}


def load():
    with open("/proc/loadavg") as fh:
        return float(fh.read().split()[0])


def config_name(cores, transport, control):
    """The name of a configuration's JSON files and tables."""
    return f"{cores}-{transport}{'-control' if control else ''}"


def step_ratios(runs, k, key):
    return [d["steps"][k][key] / d["baseline"]["steps"][k][key]
            for d in runs]


def noise_floor(name, runs):
    """Prints what the control run's ratios are; returns the highest median
    per-step ratio."""
    worst = 0
    singles = []
    for k in range(len(runs[0]["steps"])):
        for key in ("avg_us", "p50_us"):
            r = step_ratios(runs, k, key)
            singles += r
            worst = max(worst, st.median(r))
    print(f"  {name} (raw-a/raw-b, the noise floor): highest median "
          f"per-step ratio {worst:.3f}; single runs' per-step ratios "
          f"{min(singles):.3f}-{max(singles):.3f}")
    return worst


def verdict(name, runs):
    ok = True
    steps = len(runs[0]["steps"])
    worst = (0, None)
    for k in range(steps):
        for key in ("avg_us", "p50_us"):
            r = st.median(step_ratios(runs, k, key))
            if r > worst[0]:
                worst = (r, (runs[0]["steps"][k]["workers"], key))
            if r > 1.10:
                ok = False
                print(f"  FAIL {name}: {runs[0]['steps'][k]['workers']} "
                      f"workers, {key} ratio {r:.3f} > 1.10")
    print(f"  {name}: highest median per-step ratio {worst[0]:.3f} "
          f"({worst[1][1]} at {worst[1][0]} workers)")
    if name.startswith("one-core"):
        r2 = st.median(
            summarize_runs.fit([s["workers"] for s in d["steps"]],
                               [s["avg_us"] for s in d["steps"]])[2]
            for d in runs)
        r2_raw = st.median(
            summarize_runs.fit([s["workers"] for s in d["baseline"]["steps"]],
                               [s["avg_us"] for s in d["baseline"]["steps"]])[2]
            for d in runs)
        print(f"  {name}: median r^2 of the fits: zbrokers {r2:.4f}, raw "
              f"{r2_raw:.4f}")
        if r2 < 0.99:
            ok = False
            print(f"  FAIL {name}: zbrokers r^2 {r2:.4f} < 0.99")
    print(f"  {'PASS' if ok else 'FAIL'}: {name}")
    return ok


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("exe")
    p.add_argument("out")
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--rounds", type=int, default=1000)
    p.add_argument("--max-workers", type=int, default=256)
    p.add_argument("--step", type=int, default=15)
    p.add_argument("--only", choices=sorted(CPUS))
    p.add_argument("--transport", default="tcp,inproc")
    p.add_argument("--control", action="store_true")
    p.add_argument("--pin-roles", action="store_true")
    p.add_argument("--evict-cache", metavar="SIZE")
    p.add_argument("--force", action="store_true")
    a = p.parse_args()
    if load() >= 1.5 and not a.force:
        print(f"load average {load():.2f} >= 1.5: wall-clock numbers would "
              "be noise; rerun when the machine is quiet (or --force)",
              file=sys.stderr)
        return 2
    os.makedirs(a.out, exist_ok=True)
    configs = [(c, t, control) for c in sorted(CPUS) if a.only in (None, c)
               for t in a.transport.split(",")
               for control in ([False, True] if a.control else [False])]
    print(f"load average {load():.2f} at the start")
    for i in range(1, a.runs + 1):
        for cores, transport, control in configs:
            name = config_name(cores, transport, control)
            path = os.path.join(a.out, f"{name}-{i}.json")
            cmd = [a.exe, "--baseline"] + (["--raw-only"] if control else [])
            cmd += ["--cpus", CPUS[cores], "--max-workers",
                    str(a.max_workers), "--step", str(a.step),
                    "--rounds-per-step", str(a.rounds), "--transport",
                    transport, "--json", path]
            cmd += ["--pin-roles"] if a.pin_roles else []
            cmd += ["--evict-cache", a.evict_cache] if a.evict_cache else []
            started = time.monotonic()
            r = subprocess.run(cmd, stdout=subprocess.DEVNULL)
            print(f"{' '.join(cmd)}: exit {r.returncode}, "
                  f"{time.monotonic() - started:.0f} s, load {load():.2f}",
                  flush=True)
            if r.returncode != 0:
                return 1
    ok = True
    floors = {}
    for cores, transport, control in configs:
        name = config_name(cores, transport, control)
        paths = [os.path.join(a.out, f"{name}-{i}.json")
                 for i in range(1, a.runs + 1)]
        print(f"\n### {name} ({a.runs} runs)\n")
        sys.stdout.flush()
        summarize_runs.main(paths)
        runs = []
        for path in paths:
            with open(path) as fh:
                runs.append(json.load(fh))
        print()
        if control:
            floors[config_name(cores, transport, False)] = noise_floor(
                name, runs)
        else:
            ok = verdict(name, runs) and ok
    if floors:
        print("\nnoise floor (highest median per-step ratio of the control "
              "runs): " + ", ".join(f"{k} {v:.3f}"
                                    for k, v in sorted(floors.items())))
    print(f"\nload average {load():.2f} at the end")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
