#!/usr/bin/env python3
# Copyright 2026 The zbrokers Authors.
"""Runs zb-latency briefly and checks what it prints and writes.

Usage: check_latency.py ZB_LATENCY CASE [ZB_BROKER]

CASE is one of:
  tcp        3 steps x 300 round trips over tcp
  inproc     the same over inproc
  ipc        the same over ipc (and no socket file is left behind)
  clients    --grow clients, 2 steps
  baseline   --baseline (zbrokers and raw, ratios)
  control    --raw-only --baseline, the control run (raw-a and raw-b, the
             raw program against itself, ratios)
  processes  --placement processes (broker, workers, client as processes)
  options    bad options exit 2 with a message; --help exits 0
  broker     --broker ENDPOINT against a zb-broker process (path ZB_BROKER)
             started on an ephemeral port, with --baseline
  outputs    --json /dev/stdout, --csv /dev/null, --svg into a pipe, a
             regular file, and /dev/full (exit 1, the reason said)
  cpus       --cpus pins every thread of the test and of its child
             processes (read back from /proc); bad lists exit 2
  roles      --cpus A,B --pin-roles: each role's threads (threads) or each
             role process (processes) on its own CPU, read back from
             /proc; --pin-roles without --cpus exits 2
  evict      --evict-cache 1M with threads and with processes: said in
             the header and the JSON config, the runs measure as usual
  scaling    scaling_runs.py, one tiny run with --control and
             --evict-cache: the runs' JSON files and the verdict
  many       256 workers with --baseline over tcp, started with the soft
             open-file limit at 1024 (zb-latency raises it), and a hard
             limit too low for them (exit 2, the reason said)

For the measuring cases it checks: exit code 0; one line per step and
system with the right workers/clients/round trips and failures 0; the fit
line; and that the --csv, --json and --svg files parse (csv, json,
xml.etree) and hold the same steps; the SVG is also rendered and checked
by check_svg.py when rsvg-convert is installed.  Only the Python standard
library is used.
"""

import csv
import glob
import json
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import xml.etree.ElementTree as ET

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_svg  # noqa: E402  (next to this file)

ROUNDS = 300
SVG_NS = "{http://www.w3.org/2000/svg}"
STEP_KEYS = ["workers", "clients", "round_trips", "avg_us", "p50_us",
             "p99_us", "max_us", "elapsed_s", "failures"]
CSV_COLUMNS = ["system", "workers", "clients", "round_trips", "avg_us",
               "p50_us", "p99_us", "max_us", "elapsed_s", "failures",
               "throughput_rps", "cpu_us_per_rt"]


class CheckFailed(Exception):
    pass


def check(cond, message):
    if not cond:
        raise CheckFailed(message)


def run(exe, args, timeout=120, **kwargs):
    return subprocess.run([exe] + args, capture_output=True, text=True,
                          timeout=timeout, **kwargs)


def parse_step_lines(stdout):
    """Returns {(system, workers, clients): fields} of the step lines."""
    steps = {}
    for line in stdout.splitlines():
        f = line.split()
        if not f or f[0] not in ("zbrokers", "raw", "raw-a", "raw-b"):
            continue
        check(len(f) == 12, f"step line has {len(f)} fields: {line!r}")
        key = (f[0], int(f[1]), int(f[2]))
        check(key not in steps, f"step printed twice: {line!r}")
        steps[key] = f
    return steps


def check_measured(exe, args, expected, x_name, baseline, tmp,
                   names=("zbrokers", "raw")):
    """`expected` lists the (workers, clients) of every step; `names` are
    the measured system's and the baseline's.  Returns the console output
    and the parsed JSON."""
    paths = {ext: os.path.join(tmp, "out." + ext)
             for ext in ("csv", "json", "svg")}
    full = ["--rounds-per-step", str(ROUNDS)] + args + [
        "--csv", paths["csv"], "--json", paths["json"], "--svg", paths["svg"]]
    r = run(exe, full)
    sys.stdout.write(r.stdout)
    sys.stderr.write(r.stderr)
    check(r.returncode == 0, f"exit code {r.returncode}, expected 0")

    systems = [names[0]] + ([names[1]] if baseline else [])
    # Console lines.
    steps = parse_step_lines(r.stdout)
    check(len(steps) == len(expected) * len(systems),
          f"{len(steps)} step lines, expected {len(expected) * len(systems)}")
    for system in systems:
        for workers, clients in expected:
            f = steps.get((system, workers, clients))
            check(f is not None,
                  f"no line for {system} {workers} workers {clients} clients")
            check(int(f[3]) == ROUNDS, f"round trips {f[3]} != {ROUNDS}")
            avg, p50, p99, mx = (float(v) for v in f[4:8])
            check(0 < p50 <= p99 <= mx, f"percentiles out of order: {f}")
            check(0 < avg <= mx, f"average out of range: {f}")
            check(float(f[8]) > 0, f"elapsed not positive: {f}")
            check(int(f[9]) == 0, f"failures {f[9]} (must be 0)")
    check(re.search(rf"^fit {re.escape(names[0])}: +latency = ", r.stdout,
                    re.M), "no fit line")
    check(f"cost per added {x_name[:-1]}:" in r.stdout, "no cost per added")
    if baseline:
        ratio_lines = [l.split() for l in r.stdout.splitlines()
                       if l.startswith("ratio ") and l.split()[1].isdigit()]
        check(len(ratio_lines) == len(expected),
              f"{len(ratio_lines)} ratio lines, expected {len(expected)}")
        for f in ratio_lines:
            check(float(f[3]) > 0, f"ratio line without an average: {f}")
        check(f"fit {names[1]}:" in r.stdout, "no baseline fit line")
        check(f"ratio {names[0]}/{names[1]}: cost per added" in r.stdout,
              "no fit ratio line")

    # CSV.
    with open(paths["csv"], newline="") as fh:
        reader = csv.DictReader(fh)
        check(reader.fieldnames == CSV_COLUMNS,
              f"CSV columns {reader.fieldnames}")
        rows = list(reader)
    check(len(rows) == len(expected) * len(systems), f"{len(rows)} CSV rows")
    for row in rows:
        check(row["system"] in systems, f"CSV system {row['system']}")
        check(int(row["failures"]) == 0, "CSV failures")
        check(int(row["round_trips"]) == ROUNDS, "CSV round trips")
        check(float(row["avg_us"]) > 0, "CSV avg")

    # JSON.
    with open(paths["json"]) as fh:
        doc = json.load(fh)
    for key in ("config", "steps", "fit"):
        check(key in doc, f"JSON has no {key!r}")
    check(doc["config"]["rounds_per_step"] == ROUNDS, "JSON config")
    check(doc["config"]["raw_only"] == (names[0] != "zbrokers"),
          f"JSON config raw_only {doc['config']['raw_only']!r}")
    wait = "reactor" if "reactor" in args else "call"
    check(doc["config"].get("client_wait") == wait,
          f"JSON config client_wait {doc['config'].get('client_wait')!r}, "
          f"expected {wait!r}")
    series = [doc] + ([doc["baseline"]] if baseline else [])
    check(("baseline" in doc) == baseline, "JSON baseline presence")
    for s in series:
        check(len(s["steps"]) == len(expected), "JSON step count")
        for step, (workers, clients) in zip(s["steps"], expected):
            for key in STEP_KEYS:
                check(key in step, f"JSON step has no {key!r}")
            check(step["workers"] == workers and step["clients"] == clients,
                  f"JSON step {step}")
            check(step["failures"] == 0, "JSON failures")
            check(step["round_trips"] == ROUNDS, "JSON round trips")
        fit = s["fit"]
        for key in ("intercept_us", "slope_us_per_worker", "r2"):
            check(key in fit, f"JSON fit has no {key!r}")
        if len(expected) >= 2:
            check(isinstance(fit["slope_us_per_worker"], (int, float)),
                  "JSON fit slope is not a number")
            check(fit["r2"] <= 1.0 + 1e-9, "JSON r2 above 1")
    if baseline:
        check(len(doc["ratio"]["steps"]) == len(expected), "JSON ratios")
        for key in ("slope", "intercept", "first_step_avg"):
            check(key in doc["ratio"], f"JSON ratio has no {key!r}")
        if x_name == "workers" and len(expected) >= 2:
            # The median-of-runs summary reads the same file (twice: two
            # "runs").
            tool = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "summarize_runs.py")
            s = subprocess.run([sys.executable, tool, paths["json"],
                                paths["json"]], capture_output=True,
                               text=True, timeout=60)
            check(s.returncode == 0,
                  f"summarize_runs.py exit {s.returncode}: {s.stderr}")
            rows = [l for l in s.stdout.splitlines() if l.startswith("| ")]
            check(any(l.startswith("| **median** |") for l in rows),
                  "summarize_runs.py printed no median row")
            # 2 run rows + median, and one row per step, plus two headers.
            check(len(rows) == 3 + len(expected) + 2,
                  f"summarize_runs.py printed {len(rows)} table rows")

    # SVG.
    root = ET.parse(paths["svg"]).getroot()
    check(root.tag == SVG_NS + "svg", f"SVG root is {root.tag}")
    data = check_svg.group(root, "data")
    check(data is not None, "SVG has no data group")
    circles = data.findall(f".//{SVG_NS}circle")
    check(len(circles) == len(expected) * len(systems),
          f"{len(circles)} SVG dots in the plot")
    check(len(root.findall(f".//{SVG_NS}polyline")) >= 3 * len(systems),
          "SVG lines (average, p50 and p99 per system)")
    texts = ["".join(t.itertext()) for t in root.iter(SVG_NS + "text")]
    check(x_name in texts, f"SVG x axis label {x_name!r} missing")
    check(any("latency" in t for t in texts), "SVG y axis label missing")
    if shutil.which("rsvg-convert"):
        try:
            check_svg.check_svg(paths["svg"], tmp)
        except check_svg.CheckFailed as e:
            raise CheckFailed(f"SVG: {e}")
    else:
        print("note: rsvg-convert is not installed (librsvg2-bin); the SVG "
              "was parsed but not rendered")
    return r.stdout, doc


def check_options(exe):
    bad = [
        (["--max-workers", "0"], "--max-workers must be between 1"),
        (["--transport", "udp"], "unknown transport 'udp'"),
        (["--grow", "sideways"], "--grow must be"),
        (["--frobnicate"], "unknown option '--frobnicate'"),
        (["--rounds-per-step"], "needs a value"),
        (["--rounds-per-step", "ten"], "whole number"),
        (["--placement", "processes", "--transport", "inproc"],
         "cannot cross processes"),
        (["--csv", "/nonexistent-dir/x.csv", "--max-workers", "1"],
         "cannot write --csv /nonexistent-dir/x.csv"),
        (["--json", "/proc/zb-latency.json", "--max-workers", "1"],
         "cannot write --json"),
        (["--svg", "/", "--max-workers", "1"], "cannot write --svg /"),
        (["--timeout", "5000"], "--timeout needs a duration with a unit"),
        (["--timeout", "1s", "--timeout-ms", "2000"], "disagree"),
    ]
    for args, message in bad:
        r = run(exe, args, timeout=30)
        check(r.returncode == 2,
              f"{args}: exit code {r.returncode}, expected 2")
        check(message in r.stderr,
              f"{args}: stderr {r.stderr!r} lacks {message!r}")
        check(r.stdout == "", f"{args}: printed {r.stdout!r}")
        print(f"ok: {' '.join(args)} -> exit 2: {r.stderr.strip()}")
    r = run(exe, ["--help"], timeout=30)
    check(r.returncode == 0, "--help exit code")
    for flag in ("--rounds-per-step", "--max-workers", "--step", "--grow",
                 "--transport", "--placement", "--payload-bytes", "--broker",
                 "--csv", "--json", "--svg", "--baseline", "--timeout"):
        check(flag in r.stdout, f"--help does not mention {flag}")
    # --timeout takes a duration; the deprecated --timeout-ms N still runs,
    # with one warning that names the new flag (docs/glossary.md).
    quick = ["--max-workers", "1", "--rounds-per-step", "20", "--warmup", "5",
             "--transport", "inproc"]
    deprecated = "--timeout-ms is deprecated, use --timeout"
    for args, warned in ((["--timeout", "3s"], False),
                         (["--timeout-ms", "3000"], True)):
        r = run(exe, quick + args, timeout=60)
        check(r.returncode == 0,
              f"{args}: exit {r.returncode}, stderr {r.stderr!r}")
        check(r.stderr.count(deprecated) == (1 if warned else 0),
              f"{args}: stderr {r.stderr!r}")
        print(f"ok: {' '.join(args)} -> exit 0"
              f"{', warned' if warned else ''}")


def check_outputs(exe, tmp):
    """The output files work on anything that can be written: a pipe or a
    terminal behind /dev/stdout, /dev/null, a pipe, a regular file."""
    quick = ["--max-workers", "2", "--rounds-per-step", "100",
             "--transport", "inproc"]
    # --json /dev/stdout (stdout is a pipe here) and --csv /dev/null.
    r = run(exe, quick + ["--json", "/dev/stdout", "--csv", "/dev/null"])
    check(r.returncode == 0,
          f"--json /dev/stdout: exit {r.returncode}: {r.stderr}")
    check("failed" not in r.stderr, f"--json /dev/stdout: {r.stderr}")
    at = r.stdout.find("\n{\n")
    check(at > 0, f"no JSON after the console lines: {r.stdout!r}")
    check("fit zbrokers:" in r.stdout[:at],
          "the console lines do not come before the JSON")
    doc = json.loads(r.stdout[at + 1:])
    check(len(doc["steps"]) == 2, "JSON on stdout: step count")
    print("ok: --json /dev/stdout, --csv /dev/null")

    # --svg into a pipe, read by a thread while zb-latency writes.
    rfd, wfd = os.pipe()
    got = []
    reader = threading.Thread(
        target=lambda: got.append(os.fdopen(rfd, "rb").read()))
    reader.start()
    try:
        r = run(exe, quick + ["--svg", f"/dev/fd/{wfd}", "--csv",
                              os.path.join(tmp, "regular.csv")],
                pass_fds=(wfd,))
    finally:
        os.close(wfd)
        reader.join(timeout=60)
    check(r.returncode == 0, f"--svg into a pipe: exit {r.returncode}: "
                             f"{r.stderr}")
    check(got and got[0].startswith(b"<?xml"), "nothing SVG came out of the "
                                               "pipe")
    ET.fromstring(got[0])
    with open(os.path.join(tmp, "regular.csv")) as fh:
        rows = list(csv.DictReader(fh))
    check(len(rows) == 2, f"regular CSV file: {len(rows)} rows")
    print("ok: --svg into a pipe, --csv into a regular file")

    # A device that refuses the data: the run fails, and says why.
    if os.path.exists("/dev/full"):
        r = run(exe, quick + ["--json", "/dev/full"])
        check(r.returncode == 1, f"--json /dev/full: exit {r.returncode}")
        check("writing /dev/full failed: No space left on device" in r.stderr,
              f"--json /dev/full: stderr {r.stderr!r}")
        print("ok: --json /dev/full -> exit 1: " + r.stderr.strip())


def allowed_cpus(pid):
    """{tid: Cpus_allowed_list} of every thread of `pid`."""
    out = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/status") as fh:
                for line in fh:
                    if line.startswith("Cpus_allowed_list:"):
                        out[int(tid)] = line.split(":", 1)[1].strip()
        except FileNotFoundError:
            pass  # the thread ended meanwhile
    return out


def children(pid):
    kids = []
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/children") as fh:
                kids += [int(c) for c in fh.read().split()]
        except FileNotFoundError:
            pass
    return kids


def check_cpus(exe, tmp):
    cpu = min(os.sched_getaffinity(0))
    json_path = os.path.join(tmp, "cpus.json")
    # Processes: the children must be pinned too.  Long enough steps to look
    # at /proc while they measure.
    header, seen, _, code, err = run_watching_threads(
        exe, ["--cpus", str(cpu), "--placement", "processes", "--baseline",
              "--max-workers", "2", "--rounds-per-step", "3000", "--json",
              json_path], lambda pid: [pid] + children(pid))
    check(f"cpus {cpu} (pinned)" in header, f"header {header!r}")
    check(code == 0, f"--cpus {cpu}: exit {code}: {err}")
    pids = {pid for pid, _ in seen}
    # zb-latency and six children (broker, workers, client for each system).
    check(len(pids) == 7, f"expected 7 processes, saw {sorted(pids)}")
    # Each child has at least its main thread, a reactor or worker thread
    # or libzmq's I/O and reaper threads.
    check(len(seen) >= 1 + 6 * 2, f"only {len(seen)} threads seen")
    wrong = {k: v for k, v in seen.items() if v[1] != {cpu}}
    check(not wrong, f"threads not pinned to {cpu}: {wrong}")
    with open(json_path) as fh:
        check(json.load(fh)["config"]["cpus"] == str(cpu), "JSON cpus")
    print(f"ok: --cpus {cpu}: {len(seen)} threads in {len(pids)} processes "
          f"all on CPU {cpu}")

    for args, message in [
            (["--cpus", "0-"], "--cpus needs CPU numbers and ranges"),
            (["--cpus", "1023"], "not available to this process"),
            (["--cpus", "4096"], "CPU numbers go up to 1023")]:
        if args[1] == "1023" and 1023 in os.sched_getaffinity(0):
            continue
        r = run(exe, args + ["--max-workers", "1"], timeout=30)
        check(r.returncode == 2 and message in r.stderr,
              f"{args}: exit {r.returncode}, stderr {r.stderr!r}")
        print(f"ok: {' '.join(args)} -> exit 2: {r.stderr.strip()}")


def cpu_set(allowed_list):
    """The CPUs of a Cpus_allowed_list such as '0-1' or '0,2'."""
    cpus = set()
    for part in allowed_list.split(","):
        lo, _, hi = part.partition("-")
        cpus.update(range(int(lo), int(hi or lo) + 1))
    return cpus


def thread_names(pid):
    names = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/comm") as fh:
                names[int(tid)] = fh.read().strip()
        except FileNotFoundError:
            pass
    return names


def role_of(pid):
    """The --role=... a child of zb-latency was started with, or None."""
    try:
        with open(f"/proc/{pid}/cmdline") as fh:
            argv = fh.read().split("\0")
    except FileNotFoundError:
        return None
    for arg in argv:
        if arg.startswith("--role="):
            return arg[len("--role="):]
    return None


def run_watching_threads(exe, args, pids_of):
    """Runs zb-latency with `args` and looks at /proc while it runs: when
    the deployments are up (the header names the broker's endpoint), after
    the column names and after the first step's lines, so that threads made
    on the way (the clients' during a step) are seen too.  `pids_of(pid)`
    says which processes to look at.  Returns (header, {(pid, tid): (comm,
    cpus)}, {pid: role}, exit code, stderr)."""
    p = subprocess.Popen([exe] + args, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    seen, roles = {}, {}
    try:
        header = p.stdout.readline()
        for _ in range(3):
            for pid in pids_of(p.pid):
                roles[pid] = role_of(pid)
                names = thread_names(pid)
                for tid, cpus in allowed_cpus(pid).items():
                    seen[(pid, tid)] = (names.get(tid, "?"), cpu_set(cpus))
            p.stdout.readline()
        _, err = p.communicate(timeout=300)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    return header, seen, roles, p.returncode, err


def check_roles(exe, tmp):
    allowed = sorted(os.sched_getaffinity(0))
    check(len(allowed) >= 2, "--pin-roles needs two CPUs to be checked, this "
                             f"process may use {allowed}")
    a, b = allowed[0], allowed[1]
    roles = {"broker": {a}, "workers": {b}, "client": {a}}
    common = ["--cpus", f"{a},{b}", "--pin-roles", "--baseline",
              "--max-workers", "2", "--rounds-per-step", "3000"]

    # Threads: libzmq's threads go with the broker, on A; every thread of
    # ours other than the main thread is on one CPU, the workers' on B.
    json_path = os.path.join(tmp, "roles.json")
    header, seen, _, code, err = run_watching_threads(
        exe, common + ["--transport", "inproc", "--json", json_path],
        lambda pid: [pid])
    want = f"(pinned; broker {a}, workers {b}, clients {a})"
    check(want in header, f"header {header!r} lacks {want!r}")
    check(code == 0, f"--pin-roles (threads): exit {code}: {err}")
    libzmq = {k: v for k, v in seen.items() if v[0].startswith("ZMQbg")}
    ours = {k: v for k, v in seen.items()
            if k not in libzmq and k[1] != k[0]}
    check(libzmq, "no libzmq thread (ZMQbg/...) seen")
    wrong = {k: v for k, v in libzmq.items() if v[1] != {a}}
    check(not wrong, f"libzmq threads not on the broker's CPU {a}: {wrong}")
    wrong = {k: v for k, v in ours.items() if len(v[1]) != 1}
    check(not wrong, f"role threads not pinned to one CPU: {wrong}")
    on_a = sum(1 for v in ours.values() if v[1] == {a})
    on_b = sum(1 for v in ours.values() if v[1] == {b})
    # Two systems: two brokers (and clients) on A, two worker threads on B.
    check(on_a >= 2 and on_b == 2,
          f"expected >= 2 threads on CPU {a} and 2 on CPU {b}, saw {ours}")
    with open(json_path) as fh:
        got = json.load(fh)["config"]["role_cpus"]
    check(got == {"broker": a, "workers": b, "clients": a},
          f"JSON role_cpus {got}")
    print(f"ok: --pin-roles, threads: {on_a} role threads on CPU {a}, "
          f"{on_b} on CPU {b}, {len(libzmq)} libzmq threads on CPU {a}")

    # Processes: every thread of each role process on its role's CPU.
    _, seen, role_of, code, err = run_watching_threads(
        exe, common + ["--placement", "processes"], children)
    check(code == 0, f"--pin-roles (processes): exit {code}: {err}")
    check(sorted(role_of.values()) == sorted(list(roles) * 2),
          f"role processes seen: {role_of}")
    wrong = {k: v for k, v in seen.items()
             if k[0] in role_of and v[1] != roles[role_of[k[0]]]}
    check(not wrong, f"threads of role processes off their CPU: {wrong}")
    print(f"ok: --pin-roles, processes: {len(seen)} threads of "
          f"{len(role_of)} role processes, each on its role's CPU")

    r = run(exe, ["--pin-roles", "--max-workers", "1"], timeout=30)
    check(r.returncode == 2 and "give --cpus too" in r.stderr,
          f"--pin-roles alone: exit {r.returncode}, stderr {r.stderr!r}")
    print(f"ok: --pin-roles alone -> exit 2: {r.stderr.strip()}")


def check_many_workers(exe, tmp):
    """256 workers in bounded time; the open-file limit handled."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    check(hard == resource.RLIM_INFINITY or hard >= 4096,
          f"this test needs a hard open-file limit of 4096, have {hard}")

    def low_soft_limit():
        resource.setrlimit(resource.RLIMIT_NOFILE, (1024, hard))

    args = ["--baseline", "--max-workers", "256", "--step", "255",
            "--rounds-per-step", "40", "--warmup", "10", "--timeout", "20s"]
    started = time.monotonic()
    r = run(exe, args, timeout=600, preexec_fn=low_soft_limit)
    took = time.monotonic() - started
    sys.stdout.write(r.stdout)
    sys.stderr.write(r.stderr)
    check(r.returncode == 0, f"256 workers: exit {r.returncode}")
    steps = parse_step_lines(r.stdout)
    for system in ("zbrokers", "raw"):
        for workers in (1, 256):
            f = steps.get((system, workers, 1))
            check(f is not None, f"no line for {system} with {workers} "
                                 "workers")
            check(int(f[9]) == 0, f"{system} {workers} workers: {f[9]} "
                                  "failures")
    print(f"ok: 256 workers with --baseline over tcp in {took:.1f} s, "
          "starting from a soft open-file limit of 1024")

    def low_hard_limit():
        resource.setrlimit(resource.RLIMIT_NOFILE, (256, 256))

    r = run(exe, args, timeout=60, preexec_fn=low_hard_limit)
    check(r.returncode == 2, f"hard limit 256: exit {r.returncode}")
    check("need about" in r.stderr and "ulimit -Hn" in r.stderr,
          f"hard limit 256: stderr {r.stderr!r}")
    check(r.stdout == "", f"hard limit 256: printed {r.stdout!r}")
    print("ok: hard limit 256 -> exit 2: " + r.stderr.strip())


def check_external_broker(exe, broker_exe, tmp):
    """Runs zb-latency --broker against a zb-broker child process."""
    broker = subprocess.Popen(
        [broker_exe, "--consensus", "tcp://127.0.0.1:*"],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE, text=True)
    try:
        endpoint = None
        for line in broker.stderr:  # the daemon logs to stderr
            m = re.search(r"consensus: listening on (\S+)", line)
            if m:
                endpoint = m.group(1)
                break
        check(endpoint is not None, "zb-broker did not report its endpoint")
        check_measured(exe, ["--max-workers", "2", "--broker", endpoint,
                             "--baseline"], [(1, 1), (2, 1)], "workers",
                       True, tmp)
    finally:
        broker.send_signal(signal.SIGTERM)
        try:
            broker.wait(timeout=15)
        except subprocess.TimeoutExpired:
            broker.kill()
            broker.wait()
    check(broker.returncode == 0,
          f"zb-broker exit code {broker.returncode} after SIGTERM")


def check_scaling_runs(exe, tmp):
    """scaling_runs.py end to end, tiny: one one-core inproc run of two
    steps with --control and --evict-cache passed on; every run's JSON is
    written with the options given, and the verdict is printed (PASS or
    FAIL: two short steps decide nothing about the target)."""
    tool = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                        "scaling_runs.py")
    out = os.path.join(tmp, "scaling")
    r = subprocess.run([sys.executable, tool, exe, out, "--runs", "1",
                        "--rounds", "200", "--max-workers", "2", "--step",
                        "1", "--only", "one-core", "--transport", "inproc",
                        "--control", "--evict-cache", "64K", "--force"],
                       capture_output=True, text=True, timeout=300)
    sys.stdout.write(r.stdout)
    sys.stderr.write(r.stderr)
    check(r.returncode in (0, 1), f"scaling_runs.py exit {r.returncode}")
    for name, raw_only in (("one-core-inproc", False),
                           ("one-core-inproc-control", True)):
        path = os.path.join(out, f"{name}-1.json")
        check(os.path.exists(path), f"no {path}")
        with open(path) as fh:
            cfg = json.load(fh)["config"]
        check(cfg["evict_cache_bytes"] == 65536,
              f"{name}: evict_cache_bytes {cfg['evict_cache_bytes']!r}")
        check(cfg["raw_only"] == raw_only and cfg["baseline"],
              f"{name}: raw_only/baseline {cfg['raw_only']!r}")
        check(cfg["cpus"] == "0", f"{name}: cpus {cfg['cpus']!r}")
    check(re.search(r"^  (PASS|FAIL): one-core-inproc$", r.stdout, re.M),
          "no verdict line")
    check("noise floor" in r.stdout, "no noise floor line (--control)")


def main():
    if len(sys.argv) not in (3, 4):
        print(__doc__, file=sys.stderr)
        return 2
    exe, case = os.path.abspath(sys.argv[1]), sys.argv[2]
    three = [(1, 1), (2, 1), (3, 1)]
    try:
        with tempfile.TemporaryDirectory(prefix="zb-latency-test-") as tmp:
            if case == "tcp":
                check_measured(exe, ["--max-workers", "3"], three, "workers",
                               False, tmp)
            elif case == "inproc":
                check_measured(exe, ["--max-workers", "3", "--transport",
                                     "inproc"], three, "workers", False, tmp)
            elif case == "ipc":
                before = set(glob.glob("/tmp/zb-latency-*.ipc"))
                check_measured(exe, ["--max-workers", "3", "--transport",
                                     "ipc"], three, "workers", False, tmp)
                left = set(glob.glob("/tmp/zb-latency-*.ipc")) - before
                check(not left, f"ipc socket files left behind: {left}")
            elif case == "reactor":
                # The zbrokers client waiting through its reactor instead of
                # ConsensusClient::Call(); two concurrent clients, then
                # three workers.
                check_measured(exe, ["--grow", "clients", "--max-clients",
                                     "2", "--client-wait", "reactor"],
                               [(1, 1), (1, 2)], "clients", False, tmp)
                check_measured(exe, ["--max-workers", "3", "--transport",
                                     "inproc", "--client-wait", "reactor"],
                               three, "workers", False, tmp)
            elif case == "clients":
                check_measured(exe, ["--grow", "clients", "--max-clients",
                                     "2"], [(1, 1), (1, 2)], "clients",
                               False, tmp)
            elif case == "baseline":
                check_measured(exe, ["--max-workers", "3", "--step", "2",
                                     "--baseline"], [(1, 1), (3, 1)],
                               "workers", True, tmp)
            elif case == "control":
                # Both series are the raw program; nothing of zbrokers runs.
                check_measured(exe, ["--max-workers", "3", "--step", "2",
                                     "--raw-only", "--baseline"],
                               [(1, 1), (3, 1)], "workers", True, tmp,
                               names=("raw-a", "raw-b"))
            elif case == "processes":
                check_measured(exe, ["--max-workers", "2", "--placement",
                                     "processes", "--baseline"],
                               [(1, 1), (2, 1)], "workers", True, tmp)
            elif case == "evict":
                # --evict-cache reaches every client: threads, and the
                # client process of --placement processes (through its
                # "run" command, whose extra field an old parser refuses).
                for placement in ("threads", "processes"):
                    out, doc = check_measured(
                        exe, ["--max-workers", "2", "--placement", placement,
                              "--evict-cache", "1M", "--baseline"],
                        [(1, 1), (2, 1)], "workers", True, tmp)
                    check("caches evicted before each round trip "
                          "(1048576 B)" in out.splitlines()[0],
                          f"{placement}: the header does not say the caches "
                          f"are evicted: {out.splitlines()[0]!r}")
                    check(doc["config"].get("evict_cache_bytes") == 1048576,
                          f"{placement}: JSON config evict_cache_bytes "
                          f"{doc['config'].get('evict_cache_bytes')!r}")
                out, doc = check_measured(exe, ["--max-workers", "2"],
                                          [(1, 1), (2, 1)], "workers", False,
                                          tmp)
                check("evicted" not in out.splitlines()[0],
                      "the header mentions eviction without --evict-cache")
                check(doc["config"].get("evict_cache_bytes") == 0,
                      "JSON config evict_cache_bytes without --evict-cache")
            elif case == "scaling":
                check_scaling_runs(exe, tmp)
            elif case == "options":
                check_options(exe)
            elif case == "outputs":
                check_outputs(exe, tmp)
            elif case == "cpus":
                check_cpus(exe, tmp)
            elif case == "roles":
                check_roles(exe, tmp)
            elif case == "many":
                check_many_workers(exe, tmp)
            elif case == "broker" and len(sys.argv) == 4:
                check_external_broker(exe, os.path.abspath(sys.argv[3]), tmp)
            else:
                print(f"unknown case {case!r}", file=sys.stderr)
                return 2
    except CheckFailed as e:
        print(f"FAILED ({case}): {e}", file=sys.stderr)
        return 1
    except subprocess.TimeoutExpired as e:
        print(f"FAILED ({case}): timed out: {e}", file=sys.stderr)
        return 1
    print(f"passed: {case}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
