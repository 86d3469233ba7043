#!/usr/bin/python3
# Copyright 2026 The zbrokers Authors.
"""Runs one libFuzzer target from its seed corpus, for a number of runs or
seconds, and reports how many inputs it executed.

  run_fuzzer.py [--runs N | --seconds S] [--corpus DIR] [--artifacts DIR]
                FUZZER SEED_DIR [-- LIBFUZZER_ARGS...]

The seed corpus in the repository (SEED_DIR) is only read: libFuzzer writes
the new inputs it finds into the first corpus directory it is given, so that
is --corpus DIR (kept, e.g. build-fuzz/corpus/NAME for scripts/fuzz) or a
temporary directory removed afterwards (the meson tests).  A crash, leak,
timeout or broken invariant leaves the input in --artifacts DIR and this
script prints the command that replays it.  Exit status: the fuzzer's
(0 when nothing was found).

The last line is "NAME: N executions in S s (E/s), corpus C inputs" (or
"NAME: FAILED ..."), which scripts/fuzz collects into its table.
"""

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time


def main():
    ap = argparse.ArgumentParser()
    group = ap.add_mutually_exclusive_group()
    group.add_argument("--runs", type=int, help="inputs to execute")
    group.add_argument("--seconds", type=int, help="how long to fuzz")
    ap.add_argument("--corpus", help="writable corpus dir (kept)")
    ap.add_argument("--artifacts", default=".",
                    help="where crashing inputs are written")
    ap.add_argument("fuzzer")
    ap.add_argument("seeds")
    ap.add_argument("extra", nargs="*", help="more libFuzzer arguments")
    args = ap.parse_args()

    name = os.path.basename(args.fuzzer)
    os.makedirs(args.artifacts, exist_ok=True)
    scratch = None
    if args.corpus:
        corpus = args.corpus
        os.makedirs(corpus, exist_ok=True)
    else:
        scratch = tempfile.mkdtemp(prefix=name + "-")
        corpus = scratch
    argv = [args.fuzzer,
            "-seed=1" if args.runs is not None else "-seed=0",
            "-max_len=4096", "-timeout=20", "-rss_limit_mb=2048",
            "-print_final_stats=1",
            "-artifact_prefix=" + os.path.join(args.artifacts, name + "-")]
    if args.runs is not None:
        argv.append(f"-runs={args.runs}")
    if args.seconds is not None:
        argv.append(f"-max_total_time={args.seconds}")
    argv += args.extra + [corpus, args.seeds]

    env = dict(os.environ)
    # Leaks are findings too; UBSan reports abort the input.
    env.setdefault("ASAN_OPTIONS", "detect_leaks=1:abort_on_error=1")
    env.setdefault("UBSAN_OPTIONS", "halt_on_error=1:print_stacktrace=1")
    print("+ " + " ".join(argv), flush=True)
    start = time.monotonic()
    try:
        proc = subprocess.run(argv, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True,
                              errors="replace")
    finally:
        elapsed = time.monotonic() - start
    out = proc.stdout
    # libFuzzer's own output is long; keep its start and its end.
    lines = out.splitlines()
    if len(lines) > 80:
        lines = lines[:20] + ["... (%d lines) ..." % (len(lines) - 60)] + \
            lines[-40:]
    print("\n".join(lines))

    m = re.search(r"stat::number_of_executed_units:\s*(\d+)", out)
    executions = int(m.group(1)) if m else 0
    inputs = len(os.listdir(corpus)) + len(os.listdir(args.seeds))
    if scratch:
        shutil.rmtree(scratch, ignore_errors=True)
    if proc.returncode != 0:
        crash = re.findall(r"Test unit written to (\S+)", out)
        print(f"{name}: FAILED (exit {proc.returncode}) after {executions} "
              f"executions in {elapsed:.1f} s")
        for c in crash:
            print(f"  replay: {args.fuzzer} {c}")
        return proc.returncode
    rate = executions / elapsed if elapsed > 0 else 0.0
    print(f"{name}: {executions} executions in {elapsed:.1f} s "
          f"({rate:.0f}/s), corpus {inputs} inputs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
