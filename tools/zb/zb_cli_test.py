#!/usr/bin/python3
# Copyright 2026 The zbrokers Authors.
"""The `zb` binary against a real zb-broker process, and against raw pyzmq
Majordomo peers written here from RFC 7.

  zb_cli_test.py --zb build/tools/zb/zb --broker build/brokers/daemon/zb-broker \\
      SCENARIO

Scenarios (one meson test each):
  usage  --help, --version, usage errors (exit 2)
  mdp    zb worker + zb request/mmi/ping over Majordomo: text and JSON
         output, stdin frames, binary frames, timeouts (exit 3), 404 (exit 1),
         SIGTERM/SIGINT stop the worker (exit 0)
  ccp    the same over CCp100: REPLY_FAILURE (exit 1), PING, retries
  raw    zb request against a raw pyzmq MDP worker, and a raw pyzmq MDP
         client served by zb worker (the wire format is RFC 7's)
  curve  zb keygen (modes, no overwrite, --force), CURVE requests and
         workers, a key the broker does not list (exit 3), an unreadable key
         (exit 2); no secret key in any output
  lists  ENDPOINT lists: failover past a dead broker (both protocols,
         "failovers" in the JSON), spread, bad lists and policies (exit 2)

Every process dies with this script (PR_SET_PDEATHSIG), every wait is
bounded, only loopback is used.
"""

import argparse
import base64
import json
import os
import re
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time

import zmq

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "test", "testing"))
import zb_process as zp  # noqa: E402  (the shared process harness)
from zb_process import Failure, Proc, check  # noqa: E402


class Zb:
    def __init__(self, exe):
        self.exe = exe

    def run(self, *args, stdin=None, timeout=30):
        """(exit code, stdout bytes, stderr text)."""
        p = subprocess.run([self.exe] + [str(a) for a in args],
                           input=stdin, capture_output=True, timeout=timeout,
                           preexec_fn=zp.die_with_parent)
        return p.returncode, p.stdout, p.stderr.decode("utf-8", "replace")

    def json(self, *args, **kw):
        code, out, err = self.run(*args, "--json", **kw)
        try:
            return code, json.loads(out), err
        except ValueError:
            raise Failure(f"zb {args}: not one JSON object: {out!r} {err}")

    def worker(self, *args):
        w = Proc([self.exe, "worker"] + [str(a) for a in args] + ["--echo"],
                 "zb worker")
        check(w.wait_line(r"zb worker: serving", 10),
              "zb worker did not start:\n" + w.describe())
        return w


def start_broker(exe, args):
    return zp.ZbBroker.start(exe, args + ["--stats-interval", "0s"])


# --- scenarios ----------------------------------------------------------------

def scenario_usage(zb, broker_exe):
    code, out, _ = zb.run("--help")
    text = out.decode()
    check(code == 0, f"--help exit {code}")
    for word in ("request ENDPOINT SERVICE", "mmi ENDPOINT SERVICE",
                 "ping ENDPOINT", "worker ENDPOINT SERVICE --echo", "keygen",
                 "--protocol", "--timeout", "--retries", "--json",
                 "--curve-secret-key-file", "Exit codes"):
        check(word in text, f"--help lacks {word!r}")
    code, out, _ = zb.run("--version")
    check(code == 0 and out.decode().startswith("zb "), "--version")
    for args, needle in [
        ((), "missing command"),
        (("frobnicate",), "unknown command"),
        (("request", "tcp://127.0.0.1:1"), "usage: zb request"),
        (("request", "tcp://127.0.0.1:1", "s", "--timeout", "5"),
         "--timeout"),
        (("request", "tcp://127.0.0.1:1", "s", "--nope"), "unknown flag"),
        (("mmi", "--protocol", "ccp", "tcp://127.0.0.1:1", "s"), "Majordomo"),
        (("worker", "tcp://127.0.0.1:1", "s"), "--echo"),
        (("ping", "tcp://127.0.0.1:1", "--curve-server-key", "x"),
         "--curve-secret-key-file"),
    ]:
        code, out, err = zb.run(*args)
        check(code == 2, f"zb {args}: exit {code}, want 2 ({err})")
        check(needle in err, f"zb {args}: {needle!r} not in {err!r}")
        check(out == b"", f"zb {args}: usage error printed on stdout")
    print("usage: ok")


def scenario_mdp(zb, broker_exe):
    b = start_broker(broker_exe, ["--majordomo", "tcp://127.0.0.1:*"])
    ep = b.endpoint("majordomo", curve=False, timeout=2)
    try:
        w = zb.worker(ep, "echo")
        check(b.wait_line(r'joined service "echo"', 10), "no join")
        code, out, err = zb.run("request", ep, "echo", "hello", "world")
        check(code == 0 and out == b"hello\nworld\n",
              f"request: {code} {out!r} {err}")
        # Endpoint without a transport: tcp.
        code, out, _ = zb.run("request", ep[len("tcp://"):], "echo", "x")
        check(code == 0 and out == b"x\n", "host:port endpoint")
        # A frame from stdin, binary, and JSON output.
        blob = bytes(range(256))
        code, obj, err = zb.json("request", ep, "echo", "text", "-",
                                 stdin=blob)
        check(code == 0 and obj["ok"] is True and obj["outcome"] == "success"
              and obj["protocol"] == "mdp", f"json: {obj} {err}")
        check(obj["frames"][0] == "text", f"json frames: {obj['frames']}")
        check(base64.b64decode(obj["frames"][1]["base64"]) == blob,
              "binary frame not base64")
        # No frame: one empty frame.
        code, out, _ = zb.run("request", ep, "echo")
        check(code == 0 and out == b"\n", f"empty request: {out!r}")
        # MMI: 200 exit 0, 404 exit 1.
        code, out, _ = zb.run("mmi", ep, "echo")
        check(code == 0 and out == b"200\n", f"mmi echo: {code} {out!r}")
        code, out, _ = zb.run("mmi", ep, "nobody")
        check(code == 1 and out == b"404\n", f"mmi nobody: {code} {out!r}")
        code, obj, _ = zb.json("mmi", ep, "nobody")
        check(code == 1 and obj["code"] == "404" and obj["ok"] is False,
              f"mmi json {obj}")
        code, out, _ = zb.run("ping", ep)
        check(code == 0 and b"answer from" in out, f"ping: {code} {out!r}")
        # No worker for the service: the request waits in the queue and
        # times out (exit 3), after --retries + 1 attempts.
        t0 = time.monotonic()
        code, obj, err = zb.json("request", ep, "nobody", "x", "--timeout",
                                 "300ms", "--retries", "1")
        took = time.monotonic() - t0
        check(code == 3 and obj["outcome"] == "timeout",
              f"timeout: {code} {obj}")
        check(0.55 < took < 10, f"2 x 300ms took {took:.2f}s")
        check("no answer from" in err, err)
        # Nothing listening: exit 3 as well.
        code, _, _ = zb.run("ping", "tcp://127.0.0.1:1", "--timeout", "200ms")
        check(code == 3, f"ping nowhere: {code}")
        check(w.stop(signal.SIGTERM) == 0, "worker exit after SIGTERM:\n" +
              w.describe())
        check(re.search(r"stopped \(SIGTERM\) after [1-9]\d* request",
                        w.text()), w.describe())
        w2 = zb.worker(ep, "echo")
        check(w2.stop(signal.SIGINT) == 0, "worker exit after SIGINT")
        check("stopped (SIGINT)" in w2.text(), w2.describe())
    finally:
        b.stop()
    print("mdp: ok")


def scenario_ccp(zb, broker_exe):
    b = start_broker(broker_exe, ["--consensus", "tcp://127.0.0.1:*"])
    ep = b.endpoint("consensus", curve=False, timeout=2)
    P = ("--protocol", "ccp")
    try:
        # No worker: the broker answers zb:no-workers at once -> exit 1.
        code, obj, err = zb.json("request", *P, ep, "echo", "x")
        check(code == 1 and obj["outcome"] == "failure" and
              obj["failed_by"] == "broker" and
              obj["reason"] == "zb:no-workers", f"no workers: {code} {obj}")
        code, out, err = zb.run("request", *P, ep, "echo", "x")
        check(code == 1 and "zb:no-workers" in err and out == b"",
              f"text failure: {code} {out!r} {err}")
        w1 = zb.worker(*P, ep, "echo")
        w2 = zb.worker(*P, ep, "echo")
        zp.wait_for(lambda: b.text().count('joined service "echo"') >= 2,
                    10, "two workers did not join:\n" + b.describe(),
                    period=0.05)
        code, out, err = zb.run("request", *P, ep, "echo", "a", "b")
        # Consensus: every worker's frames.
        check(code == 0 and out == b"a\nb\na\nb\n", f"request: {out!r} {err}")
        code, obj, _ = zb.json("request", *P, ep, "echo", "z")
        check(code == 0 and obj["frames"] == ["z", "z"] and
              obj["attempts"] == 1, f"json {obj}")
        code, out, _ = zb.run("ping", *P, ep)
        check(code == 0 and b"PING answered" in out, f"ping {out!r}")
        code, obj, _ = zb.json("ping", *P, "tcp://127.0.0.1:1", "--timeout",
                               "150ms", "--retries", "2")
        check(code == 3 and obj["attempts"] == 3, f"ping retries {obj}")
        for w in (w1, w2):
            check(w.stop() == 0, "worker SIGTERM:\n" + w.describe())
    finally:
        b.stop()
    print("ccp: ok")


def scenario_raw(zb, broker_exe):
    """zb against peers written from RFC 7 with pyzmq only."""
    b = start_broker(broker_exe, ["--majordomo", "tcp://127.0.0.1:*"])
    ep = b.endpoint("majordomo", curve=False, timeout=2)
    ctx = zmq.Context()
    stop = threading.Event()
    seen = []

    def raw_worker():
        s = ctx.socket(zmq.DEALER)
        s.linger = 0
        s.connect(ep)
        s.send_multipart([b"", b"MDPW01", b"\x01", b"upper"])
        while not stop.is_set():
            if not s.poll(50):
                continue
            f = s.recv_multipart()
            if len(f) >= 6 and f[2] == b"\x02":
                seen.append(f[5:])
                s.send_multipart([b"", b"MDPW01", b"\x03", f[3], b""] +
                                 [x.upper() for x in f[5:]])
        s.send_multipart([b"", b"MDPW01", b"\x05"])
        s.close()

    t = threading.Thread(target=raw_worker, daemon=True)
    t.start()
    try:
        check(b.wait_line(r'joined service "upper"', 10), "raw worker")
        code, out, err = zb.run("request", ep, "upper", "abc", "def")
        check(code == 0 and out == b"ABC\nDEF\n", f"{code} {out!r} {err}")
        check(seen == [[b"abc", b"def"]], f"the raw worker saw {seen}")

        # A raw RFC 7 client (REQ socket, as the RFC suggests) served by zb.
        w = zb.worker(ep, "echo")
        check(b.wait_line(r'joined service "echo"', 10), "zb worker join")
        c = ctx.socket(zmq.REQ)
        c.linger = 0
        c.connect(ep)
        c.send_multipart([b"MDPC01", b"echo", b"one", b"two"])
        check(c.poll(5000), "no reply from zb worker")
        check(c.recv_multipart() == [b"MDPC01", b"echo", b"one", b"two"],
              "zb worker's reply is not RFC 7's")
        c.close()
        check(w.stop() == 0, "zb worker SIGTERM")
    finally:
        stop.set()
        t.join(5)
        ctx.term()
        b.stop()
    print("raw: ok")


def scenario_curve(zb, broker_exe):
    d = tempfile.mkdtemp(prefix="zb_cli_curve_")
    try:
        old = os.umask(0)  # the secret must still be 0600
        try:
            code, out, err = zb.run("keygen", "--out", os.path.join(d, "broker"))
        finally:
            os.umask(old)
        check(code == 0, f"keygen: {code} {err}")
        pub = out.decode().strip()
        check(len(pub) == 40, f"keygen printed {out!r}")
        check(stat.S_IMODE(os.stat(os.path.join(d, "broker.secret")).st_mode)
              == 0o600, "secret key file not 0600")
        with open(os.path.join(d, "broker.pub")) as f:
            check(pub in f.read(), "printed key is not the file's")
        code, _, err = zb.run("keygen", "--out", os.path.join(d, "broker"))
        check(code == 4 and "--force" in err, f"overwrite: {code} {err}")
        code, obj, _ = zb.json("keygen", "--out", os.path.join(d, "alice"))
        check(code == 0 and obj["public_key_file"].endswith("alice.pub") and
              len(obj["public_key"]) == 40, f"keygen json {obj}")
        code, _, _ = zb.run("keygen", "--out", os.path.join(d, "mallory"))
        check(code == 0, "keygen mallory")
        secrets = []
        for n in ("broker", "alice", "mallory"):
            with open(os.path.join(d, n + ".secret")) as f:
                secrets.append([l for l in f.read().split("\n")
                                if l and not l.startswith("#")][0])
        allow = os.path.join(d, "clients")
        os.mkdir(allow)
        shutil.copy(os.path.join(d, "alice.pub"), allow)

        b = start_broker(broker_exe, [
            "--majordomo-curve", "tcp://127.0.0.1:*",
            "--consensus-curve", "tcp://127.0.0.1:*",
            "--curve-secret-key-file", os.path.join(d, "broker.secret"),
            "--curve-allowlist", allow])
        mep = b.endpoint("majordomo", curve=True, timeout=2)
        cep = b.endpoint("consensus", curve=True, timeout=2)
        alice = ["--curve-server-key-file", os.path.join(d, "broker.pub"),
                 "--curve-secret-key-file", os.path.join(d, "alice.secret")]
        alice_z85 = ["--curve-server-key", pub, "--curve-secret-key-file",
                     os.path.join(d, "alice.secret")]
        mallory = ["--curve-server-key", pub, "--curve-secret-key-file",
                   os.path.join(d, "mallory.secret")]
        outputs = []
        try:
            w1 = zb.worker(mep, "echo", *alice)
            w2 = zb.worker("--protocol", "ccp", cep, "echo", *alice)
            check(b.wait_line(r'majordomo: worker \S+ joined', 10), "mdp join")
            check(b.wait_line(r'consensus: worker \S+ joined', 10), "ccp join")
            for args in (("request", mep, "echo", "secret-stuff", *alice),
                         ("request", mep, "echo", "secret-stuff", *alice_z85),
                         ("request", "--protocol", "ccp", cep, "echo",
                          "secret-stuff", *alice)):
                code, out, err = zb.run(*args)
                outputs.append(out.decode("utf-8", "replace") + err)
                check(code == 0 and out == b"secret-stuff\n",
                      f"CURVE request {args}: {code} {out!r} {err}")
            code, out, _ = zb.run("ping", "--protocol", "ccp", cep, *alice)
            check(code == 0, "CURVE ping")
            # Not in the allowlist, and plaintext: no answer (exit 3).
            for args in (("request", mep, "echo", "x", "--timeout", "400ms",
                          *mallory),
                         ("request", mep, "echo", "x", "--timeout", "400ms")):
                code, out, err = zb.run(*args)
                outputs.append(out.decode("utf-8", "replace") + err)
                check(code == 3 and out == b"", f"{args}: {code} {out!r}")
            check(b.wait_line(r"refused CURVE client key", 3),
                  "no refusal logged:\n" + b.describe())
            # A worker with mallory's key never registers.
            w3 = zb.worker(mep, "stolen", *mallory)
            time.sleep(0.5)
            code, out, _ = zb.run("mmi", mep, "stolen", *alice)
            check(code == 1 and out == b"404\n", f"mallory registered: {out!r}")
            # Unreadable / malformed keys: usage errors (exit 2).
            code, _, err = zb.run("ping", mep, "--curve-server-key", pub,
                                  "--curve-secret-key-file",
                                  os.path.join(d, "nope.secret"))
            check(code == 2 and "nope.secret" in err, f"missing key {err}")
            code, _, err = zb.run("ping", mep, "--curve-server-key", "short",
                                  "--curve-secret-key-file",
                                  os.path.join(d, "alice.secret"))
            check(code == 2 and "--curve-server-key" in err, f"bad key {err}")
            # A secret key others can read: a warning, then it works.
            os.chmod(os.path.join(d, "alice.secret"), 0o644)
            code, out, err = zb.run("request", mep, "echo", "y", *alice)
            check(code == 0 and "can be read by others" in err, err)
            outputs.append(err)
            for w in (w1, w2, w3):
                check(w.stop() == 0, "worker stop:\n" + w.describe())
                outputs.append(w.text())
        finally:
            b.stop()
        everything = "\n".join(outputs) + b.text()
        for s in secrets:
            check(s not in everything, "a secret key was printed")
    finally:
        shutil.rmtree(d, ignore_errors=True)
    print("curve: ok")


def scenario_lists(zb, broker_exe):
    """ENDPOINT lists (docs/ha.md): the first broker of the list is dead,
    the default failover policy reaches the second one; spread; usage
    errors for bad lists and policies."""
    # Nothing listens on port 1: connections to it are refused at once.
    dead_mdp, dead_ccp = "tcp://127.0.0.1:1", "tcp://127.0.0.1:2"
    b = start_broker(broker_exe, ["--majordomo", "tcp://127.0.0.1:*",
                                  "--consensus", "tcp://127.0.0.1:*"])
    mep = b.endpoint("majordomo", curve=False, timeout=2)
    cep = b.endpoint("consensus", curve=False, timeout=2)
    try:
        mw = zb.worker(mep, "echo")
        cw = zb.worker("--protocol", "ccp", cep, "echo")
        zp.wait_for(lambda: b.text().count('joined service "echo"') >= 2,
                    10, "the workers did not join")
        # Majordomo: a timed-out attempt moves the client to the next one.
        t0 = time.monotonic()
        code, obj, err = zb.json("request", f"{dead_mdp},{mep}", "echo", "x",
                                 "--timeout", "300ms", "--retries", "2")
        check(code == 0 and obj["frames"] == ["x"], f"mdp list: {obj} {err}")
        check(obj["failovers"] >= 1, f"mdp failovers: {obj}")
        check(time.monotonic() - t0 < 10, "mdp list took too long")
        # host:port items get tcp:// each.
        code, out, err = zb.run("request", f"127.0.0.1:1, {mep[6:]}", "echo",
                                "y", "--timeout", "300ms", "--retries", "2")
        check(code == 0 and out == b"y\n", f"host:port list: {code} {err}")
        code, out, err = zb.run("mmi", f"{dead_mdp},{mep}", "echo",
                                "--timeout", "300ms", "--retries", "2")
        check(code == 0 and out == b"200\n", f"mmi list: {code} {out} {err}")
        # One broker only answering: with the list the other way round the
        # live one is first, no failover.
        code, obj, err = zb.json("request", f"{mep},{dead_mdp}", "echo", "z")
        check(code == 0 and obj["failovers"] == 0, f"mdp first: {obj}")
        # Consensus: the client reopens after two silent timeouts, to the
        # next broker of the list.
        deadline = time.monotonic() + 10
        while True:  # the zb worker registers on its own schedule
            code, obj, err = zb.json("request", "--protocol", "ccp",
                                     f"{dead_ccp},{cep}", "echo", "c",
                                     "--timeout", "300ms", "--retries", "3")
            if code == 0 or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        check(code == 0 and obj["frames"] == ["c"], f"ccp list: {obj} {err}")
        check(obj["failovers"] == 1 and obj["attempts"] >= 3,
              f"ccp failovers/attempts: {obj}")
        code, obj, err = zb.json("ping", "--protocol", "ccp",
                                 f"{dead_ccp},{cep}", "--timeout", "300ms",
                                 "--retries", "3")
        check(code == 0 and obj["attempts"] >= 3, f"ccp ping list: {obj}")
        # Every broker dead: a timeout (exit 3) naming the list.
        code, obj, err = zb.json("request", "--protocol", "ccp",
                                 f"{dead_ccp},tcp://127.0.0.1:3", "echo",
                                 "--timeout", "200ms", "--retries", "2")
        check(code == 3 and obj["outcome"] == "timeout", f"all dead: {obj}")
        check(f"{dead_ccp},tcp://127.0.0.1:3" in err, err)
        # spread: round-robin over the live brokers of the list.
        for proto, ep in (("mdp", mep), ("ccp", cep)):
            code, obj, err = zb.json("request", "--protocol", proto,
                                     "--endpoint-policy", "spread", ep,
                                     "echo", "s")
            check(code == 0 and obj["frames"] == ["s"],
                  f"{proto} spread: {obj} {err}")
        # Usage errors: exit 2, nothing sent.
        for args, needle in [
            (("request", f"{mep},{mep}", "echo"), "twice"),
            (("request", f"{mep},", "echo"), "empty endpoint"),
            (("ping", mep, "--endpoint-policy", "random"),
             "expected failover or spread"),
            (("worker", mep, "echo", "--echo", "--endpoint-policy", "spread"),
             "--endpoint-policy is for"),
        ]:
            code, out, err = zb.run(*args)
            check(code == 2, f"zb {args}: exit {code}, want 2 ({err})")
            check(needle in err, f"zb {args}: {needle!r} not in {err!r}")
        for w in (mw, cw):
            check(w.stop() == 0, "worker stop:\n" + w.describe())
    finally:
        b.stop()
    print("lists: ok")


SCENARIOS = {
    "usage": scenario_usage,
    "mdp": scenario_mdp,
    "ccp": scenario_ccp,
    "raw": scenario_raw,
    "curve": scenario_curve,
    "lists": scenario_lists,
}


def main(argv):
    ap = argparse.ArgumentParser()
    ap.add_argument("--zb", required=True)
    ap.add_argument("--broker", required=True)
    ap.add_argument("scenario", choices=sorted(SCENARIOS))
    args = ap.parse_args(argv)
    return zp.run_scenario(args.scenario, SCENARIOS[args.scenario],
                           Zb(os.path.abspath(args.zb)),
                           os.path.abspath(args.broker),
                           errors=(Failure, subprocess.TimeoutExpired))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
