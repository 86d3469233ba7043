#!/usr/bin/env python3
# Copyright 2026 The zbrokers Authors.
"""User-space instructions per round trip, zbrokers against the raw baseline.

Usage: callgrind_per_rt.py ZB_LATENCY [--workers 1,32,64,128,256]
           [--transport inproc,tcp] [--repeat N] [--jobs N] [--keep DIR
           [--reuse]]
           [--budget ROUND_TRIPS_x_WORKERS] [-- EXTRA zb-latency ARGS]

For every transport, worker count W and system (zbrokers, then raw with
--raw-only), runs

    valgrind --tool=callgrind zb-latency --grow clients --workers W \\
        --max-clients 1 --rounds-per-step R --warmup 20 --transport T

with R = budget / W round trips (clamped to 100..5000) and --timeout
60s (valgrind is slow; a run that fails anyway, e.g. because a thread
stalled past the workers' heartbeat expiry on a loaded machine, is run
again, up to three times).  zb-latency zeroes
callgrind's counters when the measured round trips start and dumps them when
they end (client_runner.cc), so the dump holds exactly the R measured round
trips of every thread (client, broker, workers, libzmq's I/O thread):
start-up, registration probes and warm-up are not in it.  Callgrind counts
user-space instructions only (no kernel time) and runs one thread at a time,
like a single core; the count is deterministic up to how messages happen to
batch, so --repeat N takes the median of N runs.

Prints Markdown: per transport, instructions per round trip by worker
count for both systems and their ratio, the cost per added worker between
consecutive counts, and the least-squares line instructions = a + b x W
with r^2 for each system.  Standard library only.
"""

import argparse
import concurrent.futures as cf
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from summarize_runs import fit  # noqa: E402  (the one least-squares fit)


def rounds_for(workers, budget):
    return max(100, min(5000, budget // workers))


def step_dump(outdir, tag, rounds):
    """Instructions per round trip from the step's dump in `outdir`, or
    None when there is none."""
    for name in sorted(os.listdir(outdir)):
        if not name.startswith(f"cg.{tag}."):
            continue
        with open(os.path.join(outdir, name)) as fh:
            text = fh.read()
        if "Trigger: Client Request: zb-latency step" not in text:
            continue
        m = re.search(r"^totals: (\d+)", text, re.M)
        if m is None:
            raise RuntimeError(f"{name}: no totals line")
        return int(m.group(1)) / rounds
    return None


def run_one(exe, transport, workers, raw, rounds, extra, outdir, tag, reuse):
    out = os.path.join(outdir, f"cg.{tag}")
    if reuse and os.path.exists(out):  # finished (the final dump exists)
        v = step_dump(outdir, tag, rounds)
        if v is not None:
            return v
    # Everything runs some 50x slower under valgrind: a generous deadline.
    cmd = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}",
           exe, "--grow", "clients", "--workers", str(workers),
           "--max-clients", "1", "--rounds-per-step", str(rounds),
           "--warmup", "20", "--transport", transport,
           "--timeout", "60s"] + extra
    if raw:
        cmd.append("--raw-only")
    for attempt in range(3):
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=3600)
        if r.returncode == 0:
            break
        # On a loaded machine a thread can stall under valgrind for longer
        # than the workers' heartbeat expiry (3 s): the run fails; run it
        # again rather than count a broken step.
        # Valgrind's own lines (==PID==) say nothing about why: quote
        # zb-latency's last words.
        said = [line for line in (r.stdout + r.stderr).splitlines()
                if line.strip() and not line.startswith("==")]
        print(f"note: {tag}: exit {r.returncode}, run again "
              f"({said[-3:]})", file=sys.stderr)
        for name in os.listdir(outdir):
            if name.startswith(f"cg.{tag}"):
                os.remove(os.path.join(outdir, name))
    else:
        raise RuntimeError(f"{' '.join(cmd)} exited {r.returncode}:\n"
                           f"{r.stdout[-2000:]}\n{r.stderr[-2000:]}")
    # The step's dump is the one triggered by zb-latency's client request.
    v = step_dump(outdir, tag, rounds)
    if v is None:
        raise RuntimeError(f"no step dump for {tag} (is zb-latency built "
                           "with valgrind/callgrind.h?)")
    return v


def main():
    argv = sys.argv[1:]
    extra = []
    if "--" in argv:
        i = argv.index("--")
        argv, extra = argv[:i], argv[i + 1:]
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("exe")
    p.add_argument("--workers", default="1,32,64,128,256")
    p.add_argument("--transport", default="inproc,tcp")
    p.add_argument("--repeat", type=int, default=1)
    p.add_argument("--jobs", type=int, default=1)
    p.add_argument("--budget", type=int, default=30000,
                   help="round trips x workers per run (default 30000)")
    p.add_argument("--keep", help="keep the callgrind files in this folder")
    p.add_argument("--reuse", action="store_true",
                   help="with --keep: take finished runs already in the "
                        "folder instead of running them again (resume)")
    a = p.parse_args(argv)
    workers = [int(w) for w in a.workers.split(",")]
    transports = a.transport.split(",")
    outdir = a.keep or tempfile.mkdtemp(prefix="zb-latency-cg-")
    os.makedirs(outdir, exist_ok=True)

    jobs = {}
    with cf.ThreadPoolExecutor(max_workers=a.jobs) as pool:
        for t in transports:
            for w in workers:
                for raw in (False, True):
                    for k in range(a.repeat):
                        tag = f"{t}.{w}.{'raw' if raw else 'zb'}.{k}"
                        jobs[(t, w, raw, k)] = pool.submit(
                            run_one, a.exe, t, w, raw,
                            rounds_for(w, a.budget), extra, outdir, tag,
                            a.reuse and a.keep)
        results = {key: f.result() for key, f in jobs.items()}
    if not a.keep:
        shutil.rmtree(outdir)

    for t in transports:
        med = {(w, raw): statistics.median(
                   results[(t, w, raw, k)] for k in range(a.repeat))
               for w in workers for raw in (False, True)}
        print(f"\n{t} (instructions per round trip, "
              f"{'median of %d runs' % a.repeat if a.repeat > 1 else '1 run'}"
              f"; round trips per run: budget {a.budget} / workers)\n")
        print("| workers | zbrokers | raw | ratio | zbrokers per added "
              "worker | raw per added worker | ratio |")
        print("|---:|---:|---:|---:|---:|---:|---:|")
        prev = None
        for w in workers:
            zb, raw = med[(w, False)], med[(w, True)]
            cells = [f"{w}", f"{zb:,.0f}", f"{raw:,.0f}", f"{zb / raw:.3f}"]
            if prev is None:
                cells += ["", "", ""]
            else:
                pw, pzb, praw = prev
                dzb, draw = (zb - pzb) / (w - pw), (raw - praw) / (w - pw)
                cells += [f"{dzb:,.0f}", f"{draw:,.0f}", f"{dzb / draw:.3f}"]
            print("| " + " | ".join(cells) + " |")
            prev = (w, zb, raw)
        if len(workers) >= 2:
            for name, raw in (("zbrokers", False), ("raw", True)):
                ia, ib, r2 = fit(workers, [med[(w, raw)] for w in workers])
                print(f"\nfit {name}: {ia:,.0f} + {ib:,.0f} x workers "
                      f"(r^2 = {r2:.5f})", end="")
            za, zb_, _ = fit(workers, [med[(w, False)] for w in workers])
            ra, rb, _ = fit(workers, [med[(w, True)] for w in workers])
            print(f"\nslope ratio zbrokers/raw: {zb_ / rb:.3f}")


if __name__ == "__main__":
    main()
