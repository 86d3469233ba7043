#!/usr/bin/python3
# Copyright 2026 The zbrokers Authors.
"""The zb-broker process operated like a production broker: what an
operator and a service manager see.  Run with /usr/bin/python3 (pyzmq).

  zb_broker_ops_test.py --broker PATH/zb-broker SCENARIO [SCENARIO...]
  zb_broker_ops_test.py --broker PATH/zb-broker all

Scenarios (each bounded, each kills and reaps every process it starts):

  ports        tcp ports out of range refused (exit 2, the endpoint named),
               also by --check-config; in range still runs
  ipv6         both brokers on tcp://[::1]:*: an MDP round trip (pyzmq
               worker and client with ZMQ_IPV6) and a consensus PING
  http         /healthz, /readyz (200 when bound, 503 while draining),
               zb_build_info; a busy metrics port is exit 1 in plain words
  sighup       SIGHUP is logged, the daemon survives, the file's new
               log_level applies at once; a bad file changes nothing
  ipc          both brokers on ipc://: no socket file left after exit
  checkconfig  --check-config prints TOML (parsed here) with every default,
               exit 0; a bad file is exit 2 with its line
  logs         every line's timestamp carries a UTC offset; with
               --log-format json every line is a JSON object, also for a
               service name full of quotes and backslashes
  help         --help shows each setting under its glossary name with its
               default, the deprecated aliases still work, and SIGHUP
"""

import argparse
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
import tomllib
import urllib.error
import urllib.request

import zmq

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "test", "testing"))
import zb_process as zp  # noqa: E402  (the shared process harness)
from zb_process import Failure, check, kill_all  # noqa: E402

# Local time with milliseconds and the UTC offset, e.g.
# 2026-12-01T09:36:45.141+00:00 (or Z).
STAMP = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}(?:[+-]\d\d:\d\d|Z)"


class Broker(zp.ZbBroker):
    """zb-broker as a child process; its stderr lines are collected (also
    as bytes, raw_lines), its stdout apart (out)."""

    def __init__(self, argv):
        super().__init__(argv[0], argv[1:], stdout_apart=True)

    def stop(self):
        """SIGTERM and the exit code (the process must stop in time)."""
        code = super().stop(signal.SIGTERM, 15)
        check(code is not None, "zb-broker did not stop after SIGTERM")
        return code


def run(argv, timeout=15):
    """Runs zb-broker to completion: (exit code, stdout, stderr)."""
    r = subprocess.run(argv, capture_output=True, text=True, timeout=timeout,
                       preexec_fn=zp.die_with_parent)
    return r.returncode, r.stdout, r.stderr


def http_get(port, path):
    """(status, body) of GET http://127.0.0.1:port/path."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}",
                                    timeout=10) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def recv(sock, timeout_ms=5000):
    check(sock.poll(timeout_ms), "no message within %d ms" % timeout_ms)
    return sock.recv_multipart()


# --- scenarios ----------------------------------------------------------------


def scenario_ports(zb):
    for flag, ep in (("--majordomo", "tcp://127.0.0.1:99999"),
                     ("--consensus", "tcp://*:65536"),
                     ("--consensus", "tcp://127.0.0.1:-1")):
        for extra in ([], ["--check-config"]):
            code, out, err = run([zb, flag, ep] + extra)
            check(code == 2, f"{flag} {ep} {extra}: exit {code}, want 2")
            check(f'in "{ep}" is out of range' in err and flag in err,
                  f"{flag} {ep}: message does not name it: {err!r}")
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "zb.toml")
        with open(path, "w") as f:
            f.write('[majordomo]\nendpoints = ["tcp://127.0.0.1:70000"]\n')
        code, _, err = run([zb, "--config", path])
        check(code == 2 and f"{path}:2:" in err and "70000" in err,
              f"file: exit {code}: {err!r}")
    b = Broker([zb, "--majordomo", "tcp://127.0.0.1:*",
                "--stats-interval", "0s"])
    b.endpoint("majordomo", timeout=10)
    check(b.stop() == 0, "a good endpoint did not run and stop cleanly")


def scenario_ipv6(zb):
    b = Broker([zb, "--majordomo", "tcp://[::1]:*",
                "--consensus", "tcp://[::1]:*", "--stats-interval", "0s"])
    mdp = b.endpoint("majordomo", timeout=10)
    ccp = b.endpoint("consensus", timeout=10)
    check(mdp.startswith("tcp://[::1]:") and ccp.startswith("tcp://[::1]:"),
          f"not IPv6: {mdp} {ccp}")
    ctx = zmq.Context()
    try:
        worker = ctx.socket(zmq.DEALER)
        worker.ipv6 = 1
        worker.linger = 0
        worker.connect(mdp)
        worker.send_multipart([b"", b"MDPW01", b"\x01", b"echo"])
        client = ctx.socket(zmq.DEALER)
        client.ipv6 = 1
        client.linger = 0
        client.connect(mdp)
        time.sleep(0.2)  # let READY land before the request
        client.send_multipart([b"", b"MDPC01", b"echo", b"over ipv6"])
        while True:
            msg = recv(worker)
            if msg[2] == b"\x02":  # REQUEST (skip heartbeats)
                break
        # [empty, MDPW01, REQUEST, client address, empty, body]
        check(msg[5:] == [b"over ipv6"], f"worker got {msg!r}")
        worker.send_multipart([b"", b"MDPW01", b"\x03", msg[3], b"",
                               b"echo: over ipv6"])
        reply = recv(client)
        check(reply == [b"", b"MDPC01", b"echo", b"echo: over ipv6"],
              f"client got {reply!r}")
        ping = ctx.socket(zmq.DEALER)
        ping.ipv6 = 1
        ping.linger = 0
        ping.connect(ccp)
        ping.send_multipart([b"", b"CCp100", b"\x07"])
        check(recv(ping) == [b"", b"CCp100", b"\x07"], "no PING echo")
        for s in (worker, client, ping):
            s.close()
    finally:
        ctx.destroy(linger=0)
    check(b.stop() == 0, "exit code")


def scenario_http(zb):
    # A busy metrics port: exit 1, in plain words.
    busy = socket.socket()
    busy.bind(("127.0.0.1", 0))
    busy.listen()
    port = busy.getsockname()[1]
    code, _, err = run([zb, "--consensus", "tcp://127.0.0.1:*", "--metrics",
                        f"127.0.0.1:{port}"])
    busy.close()
    check(code == 1, f"busy metrics port: exit {code}, want 1")
    check(f"metrics: cannot listen on 127.0.0.1:{port}: Address already in "
          "use" in err and "CivetServer" not in err, f"message: {err!r}")

    b = Broker([zb, "--majordomo", "tcp://127.0.0.1:*", "--metrics",
                "127.0.0.1:0", "--grace", "10s", "--stats-interval", "0s"])
    mdp = b.endpoint("majordomo", timeout=10)
    port = b.metrics_port(timeout=10)
    check(b.wait_line(r"ready: ") is not None, "no ready line")
    check(http_get(port, "/healthz") == (200, "ok\n"), "healthz")
    check(http_get(port, "/readyz") == (200, "ready\n"), "readyz")
    status, text = http_get(port, "/metrics")
    check(status == 200, f"/metrics {status}")
    m = re.search(r'^zb_build_info\{(.*)\} 1$', text, re.M)
    check(m is not None, "no zb_build_info series")
    labels = dict(re.findall(r'(\w+)="([^"]*)"', m.group(1)))
    version = run([zb, "--version"])[1].split()[-1]
    check(labels.get("version") == version, f"build info {labels}")
    check(labels.get("libzmq") == zmq.zmq_version(), f"build info {labels}")

    # Hold a request open, drain: /readyz says 503 at once, /healthz 200.
    ctx = zmq.Context()
    try:
        worker = ctx.socket(zmq.DEALER)
        worker.linger = 0
        worker.connect(mdp)
        worker.send_multipart([b"", b"MDPW01", b"\x01", b"hold"])
        client = ctx.socket(zmq.DEALER)
        client.linger = 0
        client.connect(mdp)
        time.sleep(0.2)
        client.send_multipart([b"", b"MDPC01", b"hold", b"x"])
        while recv(worker)[2] != b"\x02":
            pass
        b.signal(signal.SIGTERM)
        check(b.wait_line("SIGTERM: shutting down") is not None, "no drain")
        check(http_get(port, "/readyz") == (503, "draining\n"),
              "readyz while draining")
        check(http_get(port, "/healthz") == (200, "ok\n"),
              "healthz while draining")
        b.signal(signal.SIGTERM)  # second signal: stop now
        code = b.wait(15)
        check(code == 0, f"exit {code}")
        worker.close()
        client.close()
    finally:
        ctx.destroy(linger=0)


def scenario_sighup(zb):
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "zb.toml")

        def write(level):
            with open(path, "w") as f:
                f.write(f'[daemon]\nlog_level = "{level}"\n'
                        'stats_interval = "0s"\n'
                        '[consensus]\nendpoints = ["tcp://127.0.0.1:*"]\n')

        write("info")
        b = Broker([zb, "--config", path])
        ep = b.endpoint("consensus", timeout=10)
        check(b.wait_line("ready: ") is not None, "not ready")
        ctx = zmq.Context()
        try:
            sock = ctx.socket(zmq.DEALER)
            sock.linger = 0
            sock.connect(ep)
            write("debug")
            b.signal(signal.SIGHUP)
            check(b.wait_line("SIGHUP: log level info -> debug") is not None,
                  f"no reload line:\n{b.text()}")
            check(b.p.poll() is None, "SIGHUP killed zb-broker")
            # Debug lines now: a malformed message makes the consensus
            # broker log (at warning at least); a PING still works.
            sock.send_multipart([b"", b"CCp100", b"\x07"])
            check(recv(sock) == [b"", b"CCp100", b"\x07"], "no PING echo")
            # A file that does not load changes nothing.
            with open(path, "w") as f:
                f.write('[daemon]\nlog_level = "loud"\n')
            b.signal(signal.SIGHUP)
            check(b.wait_line("keeping the running configuration") is not None,
                  f"bad file not reported:\n{b.text()}")
            check(b.p.poll() is None, "a bad file killed zb-broker")
            sock.send_multipart([b"", b"CCp100", b"\x07"])
            check(recv(sock) == [b"", b"CCp100", b"\x07"], "no PING echo")
            sock.close()
        finally:
            ctx.destroy(linger=0)
        check(b.stop() == 0, "exit code")


def scenario_ipc(zb):
    with tempfile.TemporaryDirectory() as d:
        mdp = os.path.join(d, "mdp.sock")
        ccp = os.path.join(d, "ccp.sock")
        b = Broker([zb, "--majordomo", f"ipc://{mdp}", "--consensus",
                    f"ipc://{ccp}", "--stats-interval", "0s"])
        b.endpoint("majordomo", timeout=10)
        b.endpoint("consensus", timeout=10)
        check(os.path.exists(mdp) and os.path.exists(ccp), "no socket files")
        check(b.stop() == 0, "exit code")
        left = [p for p in (mdp, ccp) if os.path.exists(p)]
        check(not left, f"left behind after exit: {left}")


def scenario_checkconfig(zb):
    here = os.path.dirname(os.path.abspath(__file__))
    example = os.path.join(here, "zb-broker.example.toml")
    code, out, err = run([zb, "--check-config", "--config", example,
                          "--log-level", "debug"])
    check(code == 0, f"exit {code}: {err}")
    printed = tomllib.loads(out)
    with open(example, "rb") as f:
        original = tomllib.load(f)
    check(printed["daemon"]["log_level"] == "debug", "flag not applied")
    for section, keys in original.items():
        for key, value in keys.items():
            if (section, key) == ("daemon", "log_level"):
                continue
            got = printed[section][key]
            if isinstance(value, str) and re.fullmatch(r"[\dmsh.]+", value):
                continue  # a duration: "60s" may print as "1m"
            check(got == value, f"{section}.{key}: {got!r} != {value!r}")
    # Defaults are printed too (the flag-only form names no tuning key).
    code, out, _ = run([zb, "--check-config", "--consensus", "tcp://*:5556"])
    check(code == 0, "flags only")
    printed = tomllib.loads(out)
    check(printed["majordomo"]["heartbeat_liveness"] == 3 and
          printed["consensus"]["request_timeout"] == "5s" and
          printed["majordomo"]["endpoints"] == [], f"defaults: {out}")
    with tempfile.TemporaryDirectory() as d:
        bad = os.path.join(d, "bad.toml")
        with open(bad, "w") as f:
            f.write("[consensus]\nendpoints = [\"tcp://*:1\"]\n"
                    "request_deadline = 5\n")
        code, out, err = run([zb, "--check-config", "--config", bad])
        check(code == 2 and f"{bad}:3:" in err and out == "",
              f"bad file: exit {code}, {err!r}")


def scenario_logs(zb):
    # Text: every line starts with a timestamp carrying its UTC offset.
    b = Broker([zb, "--majordomo", "tcp://127.0.0.1:*", "--stats-interval",
                "0s"])
    b.endpoint("majordomo", timeout=10)
    check(b.stop() == 0, "exit code")
    for line in b.text().splitlines():
        check(re.match(STAMP + r" \w+ +\[zb-broker\] ", line),
              f"text line without a zoned timestamp: {line!r}")

    # JSON: every line is one object; a service name full of quotes,
    # backslashes and a tab must not break it.
    b = Broker([zb, "--majordomo", "tcp://127.0.0.1:*", "--log-format",
                "json", "--stats-interval", "0s"])
    m = b.wait_line(r'"majordomo: listening on (\S+?)"')
    check(m is not None, f"no listening line:\n{b.text()}")
    ep = m.group(1)
    ctx = zmq.Context()
    try:
        worker = ctx.socket(zmq.DEALER)
        worker.linger = 0
        worker.connect(ep)
        worker.send_multipart([b"", b"MDPW01", b"\x01",
                               b'he said "hi"\\\tthere'])
        check(b.wait_line(r"joined service") is not None,
              f"no join line:\n{b.text()}")
        worker.close()
    finally:
        ctx.destroy(linger=0)
    check(b.stop() == 0, "exit code")
    records = []
    for raw in b.raw_lines:
        try:
            records.append(json.loads(raw))
        except ValueError as e:
            raise Failure(f"not a JSON line ({e}): {raw!r}")
    for r in records:
        check(set(r) == {"time", "level", "logger", "message"}, f"keys {r}")
        check(re.fullmatch(STAMP, r["time"]), f"time without zone: {r}")
        check(r["logger"] == "zb-broker", f"logger {r}")
    joined = [r for r in records if "joined service" in r["message"]]
    check(joined, "no join record")
    check(records[-1]["message"] == "stopped", f"last {records[-1]}")


def scenario_identities(zb):
    """One peer reads the same in both brokers' logs: the same binary socket
    identity and the same hostile service name (a space, a quote, a
    newline, bytes that are not UTF-8) joined to Majordomo and to
    consensus give one identity format and one quoting rule (before: three
    identity formats, and consensus wrote service names unquoted, so a
    newline in a name split its log line)."""
    b = Broker([zb, "--majordomo", "tcp://127.0.0.1:*",
                "--consensus", "tcp://127.0.0.1:*", "--stats-interval", "0s"])
    mdp_ep = b.endpoint("majordomo", timeout=10)
    ccp_ep = b.endpoint("consensus", timeout=10)
    identity = b"\x00\x01 x\xfe"
    service = b'sv "c"\n\xfe'
    want_id = "0x00012078fe"
    want_service = r'"sv \"c\"\n\xfe"'
    ctx = zmq.Context()
    workers = []  # kept open: a closed socket may drop its queued READY
    try:
        for ep, ready in (
                (mdp_ep, [b"", b"MDPW01", b"\x01", service]),
                (ccp_ep, [b"", b"CCp100", b"\x01", service,
                          b"\x00\x00\x03\xe8", b"\x03"])):
            w = ctx.socket(zmq.DEALER)
            w.linger = 0
            w.setsockopt(zmq.IDENTITY, identity)
            w.connect(ep)
            w.send_multipart(ready)
            workers.append(w)
        lines = {}
        for kind in ("majordomo", "consensus"):
            m = b.wait_line(kind + r": worker (\S+) joined service (.*?)"
                            r"(?: \(| ?;|$)")
            check(m is not None, f"no {kind} join line:\n{b.text()}")
            lines[kind] = (m.group(1), m.group(2))
        for kind, (ident, svc) in lines.items():
            check(ident == want_id,
                  f"{kind} wrote the identity as {ident!r}, want {want_id!r}")
            check(svc == want_service,
                  f"{kind} wrote the service as {svc!r}, want {want_service!r}")
        # Nothing a peer sent split a line: every line starts with a stamp.
        for raw in b.raw_lines:
            check(re.match(rb"\d{4}-\d\d-\d\dT", raw),
                  f"a line that is not a log record: {raw!r}")
    finally:
        ctx.destroy(linger=0)
    check(b.stop() == 0, "exit code")


def scenario_help(zb):
    code, out, _ = run([zb, "--help"])
    check(code == 0, f"exit {code}")
    check("broker's own" not in out, "--help still says the broker's own")
    # Each setting under its one name (docs/glossary.md), with its default.
    for flag, default in (("--heartbeat-interval", "[2.5s]"),
                          ("--heartbeat-liveness", "[3]"),
                          ("--request-timeout", "[5s]"),
                          ("--client-idle-timeout", "[10m]"),
                          ("--log-format", "[text]")):
        at = out.find("\n  " + flag + " ")
        check(at >= 0, f"--help has no line for {flag}")
        block = out[at + 1:].split("\n  -")[0]
        check(default in block, f"{flag}: no {default} in {block!r}")
    check("SIGHUP" in out and "--check-config" in out, "help text")
    # The old names are listed as deprecated aliases of those and still
    # work: the value goes to the new name, with a warning naming it.
    for alias, name, key in (("--request-deadline", "--request-timeout",
                              "request_timeout"),
                             ("--client-expiry", "--client-idle-timeout",
                              "client_idle_timeout")):
        deprecated = out[out.index("Deprecated names"):]
        at = deprecated.find("\n  " + alias + " ")
        check(at >= 0, f"--help does not list {alias} as deprecated")
        block = deprecated[at + 1:].split("\n  -")[0]
        check("= " + name in block, f"{alias}: not '= {name}' in {block!r}")
        code, conf, err = run([zb, "--check-config", "--consensus",
                               "tcp://127.0.0.1:5556", alias, "7s"])
        check(code == 0, f"{alias} 7s: exit {code}: {err}")
        check(f"{alias} is deprecated, use {name}" in err,
              f"{alias}: no deprecation warning in {err!r}")
        got = tomllib.loads(conf)["consensus"].get(key)
        check(got == "7s", f"{alias} 7s: consensus.{key} = {got!r}")


def thread_policies(pid):
    """{thread name: [scheduling policy of each thread of that name]}, from
    /proc (field 41 of a task's stat: 0 SCHED_OTHER, 3 SCHED_BATCH, 5
    SCHED_IDLE)."""
    policies = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{tid}/stat") as f:
            stat = f.read()
        name = stat[stat.index("(") + 1:stat.rindex(")")]
        fields = stat[stat.rindex(")") + 2:].split()  # from field 3 on
        policies.setdefault(name, []).append(int(fields[41 - 3]))
    return policies


def scenario_scheduling(zb):
    """[daemon] batch_scheduling: every broker's thread is a SCHED_BATCH
    thread, and no other thread is; off, none is; where the daemon's
    threads run under another policy it leaves them so and says why."""
    both = ["--majordomo", "tcp://127.0.0.1:*", "--consensus",
            "tcp://127.0.0.1:*", "--stats-interval", "0s"]
    b = Broker([zb] + both)
    b.ready()
    batch = [(name, p) for name, ps in thread_policies(b.pid).items()
             for p in ps if p == os.SCHED_BATCH]
    check(len(batch) == 2, f"want the two brokers' threads as SCHED_BATCH, "
          f"got {thread_policies(b.pid)}")
    check("batch scheduling is off" not in b.text(), b.describe())
    check(b.stop() == 0, "did not stop cleanly")

    b = Broker([zb, "--batch-scheduling", "false"] + both)
    b.ready()
    policies = thread_policies(b.pid)
    check(all(p == os.SCHED_OTHER for ps in policies.values() for p in ps),
          f"--batch-scheduling false: {policies}")
    check(b.stop() == 0, "did not stop cleanly")

    # Started as a SCHED_IDLE process: left idle, with a warning per broker.
    b = Broker(["chrt", "--idle", "0", zb] + both)
    b.ready()
    policies = thread_policies(b.pid)
    check(all(p == os.SCHED_IDLE for ps in policies.values() for p in ps),
          f"SCHED_IDLE process: {policies}")
    for kind in ("majordomo", "consensus"):
        check(b.wait_line(kind + r": batch scheduling is off: .*SCHED_IDLE",
                          5) is not None,
              f"no warning for {kind}:\n" + b.describe())
    check(b.stop() == 0, "did not stop cleanly")


SCENARIOS = {
    "ports": scenario_ports,
    "ipv6": scenario_ipv6,
    "http": scenario_http,
    "sighup": scenario_sighup,
    "ipc": scenario_ipc,
    "checkconfig": scenario_checkconfig,
    "logs": scenario_logs,
    "help": scenario_help,
    "identities": scenario_identities,
    "scheduling": scenario_scheduling,
}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--broker", required=True)
    ap.add_argument("scenarios", nargs="+")
    args = ap.parse_args()
    names = list(SCENARIOS) if args.scenarios == ["all"] else args.scenarios
    failed = []
    for name in names:
        start = time.monotonic()
        try:
            SCENARIOS[name](args.broker)
            print(f"ok   {name} ({time.monotonic() - start:.1f}s)")
        except Exception as e:  # report every scenario, then fail
            failed.append(name)
            print(f"FAIL {name}: {type(e).__name__}: {e}")
        finally:
            kill_all()
    sys.stdout.flush()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
