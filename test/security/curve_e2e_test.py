#!/usr/bin/python3
# Copyright 2026 The zbrokers Authors.
"""CURVE and ZAP end to end: zb-broker as a separate process against raw
pyzmq peers written here from the wire protocols (MDP/0.1 RFC 7, CCp100),
with pyzmq's own CURVE (libzmq over libsodium).

  curve_e2e_test.py --broker build/brokers/daemon/zb-broker SCENARIO

Scenarios (one meson test each):
  allowed   allowed CURVE workers and clients work on both protocols;
            plaintext peers on the plaintext endpoints of the same brokers
            work next to them
  refused   an unlisted key, a wrong server key and a plaintext peer on a
            CURVE endpoint get nothing through: no worker registered, no
            request counted or answered; zb_auth_failures_total says why
  capture   the bytes relayed by a TCP proxy in this script between a client
            and the CURVE endpoint never contain the payload or the service
            name; through the plaintext endpoint they do (so the check can
            fail)
  reload    SIGHUP re-reads the allowlist directory: a key added gets in, a
            key removed is refused on its next connection, a broken file
            keeps the previous list; the daemon never dies of SIGHUP
  config    bad CURVE configuration: exit 2 naming the key; secrets never in
            the log

Every process dies with this script (PR_SET_PDEATHSIG) and is killed and
reaped at the end; only loopback is used; every wait is bounded.
"""

import argparse
import os
import re
import selectors
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time

import zmq

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "testing"))
import zb_process as zp  # noqa: E402  (the shared process harness)
from zb_process import check  # noqa: E402

MDPC, MDPW = b"MDPC01", b"MDPW01"
CCP = b"CCp100"


Broker = zp.ZbBroker


# --- keys ---------------------------------------------------------------------

class Keys:
    """A key pair in Z85, written as NAME.pub / NAME.secret in the format of
    docs/security.md (one key per file, '#' comments)."""

    def __init__(self, directory, name):
        pub, sec = zmq.curve_keypair()
        self.public, self.secret = pub, sec
        self.pub_file = os.path.join(directory, name + ".pub")
        self.secret_file = os.path.join(directory, name + ".secret")
        with open(self.pub_file, "w") as f:
            f.write(f"# {name}\n{pub.decode()}\n")
        fd = os.open(self.secret_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL,
                     0o600)
        with os.fdopen(fd, "w") as f:
            f.write(f"# {name} (secret)\n{sec.decode()}\n")


def curve_socket(ctx, kind, server_public=None, own=None):
    s = ctx.socket(kind)
    s.linger = 0
    # A DEALER whose handshakes keep failing has no pipe now and then, and a
    # blocking send would wait for one for ever.
    s.sndtimeo = 500
    if own is not None:
        s.curve_serverkey = server_public
        s.curve_publickey = own.public
        s.curve_secretkey = own.secret
    return s


# --- raw peers ----------------------------------------------------------------

def send_or_drop(sock, frames):
    """Sends, or returns False when the socket has had no connection to
    send on for its send timeout (a refused peer)."""
    try:
        sock.send_multipart(frames)
        return True
    except zmq.Again:
        return False


class RawMdpWorker:
    """READY, then echoes every REQUEST (broker heartbeats are ignored; the
    broker runs with a long heartbeat interval)."""

    def __init__(self, ctx, endpoint, service, server_public=None, own=None):
        self.s = curve_socket(ctx, zmq.DEALER, server_public, own)
        self.s.connect(endpoint)
        send_or_drop(self.s, [b"", MDPW, b"\x01", service])
        self.handled = 0
        self.stop = False
        self.t = threading.Thread(target=self._run, daemon=True)
        self.t.start()

    def _run(self):
        while not self.stop:
            if not self.s.poll(50):
                continue
            f = self.s.recv_multipart()
            if len(f) >= 6 and f[1] == MDPW and f[2] == b"\x02":
                self.handled += 1
                client, body = f[3], f[5:]
                send_or_drop(self.s, [b"", MDPW, b"\x03", client, b""] + body)

    def close(self):
        self.stop = True
        self.t.join(5)
        self.s.close()  # idempotent


class RawCcpWorker:
    """READY (heartbeat 10 s x 3, so no heartbeat is needed in a test), then
    answers every REQUEST with REPLY_SUCCESS and the same payload."""

    def __init__(self, ctx, endpoint, service, server_public=None, own=None):
        self.s = curve_socket(ctx, zmq.DEALER, server_public, own)
        self.s.connect(endpoint)
        send_or_drop(self.s, [b"", CCP, b"\x01", service,
                              struct.pack(">I", 10000), b"\x03"])
        self.handled = 0
        self.stop = False
        self.t = threading.Thread(target=self._run, daemon=True)
        self.t.start()

    def _run(self):
        while not self.stop:
            if not self.s.poll(50):
                continue
            f = self.s.recv_multipart()
            if len(f) >= 5 and f[1] == CCP and f[2] == b"\x03":
                self.handled += 1
                send_or_drop(self.s, [b"", CCP, b"\x04"] + f[3:])

    def close(self):
        self.stop = True
        self.t.join(5)
        self.s.close()  # idempotent


class RawMdpClient:
    def __init__(self, ctx, endpoint, server_public=None, own=None):
        self.s = curve_socket(ctx, zmq.DEALER, server_public, own)
        self.s.connect(endpoint)

    def request(self, service, body, timeout_ms):
        """The reply body, or None on timeout."""
        if not send_or_drop(self.s, [b"", MDPC, service] + body):
            return None
        if not self.s.poll(timeout_ms):
            return None
        f = self.s.recv_multipart()
        check(f[1] == MDPC and f[2] == service, f"bad MDP reply {f!r}")
        return f[3:]

    def close(self):
        self.s.close()


class RawCcpClient:
    _next_id = 1000

    def __init__(self, ctx, endpoint, server_public=None, own=None):
        self.s = curve_socket(ctx, zmq.DEALER, server_public, own)
        self.s.connect(endpoint)
        RawCcpClient._next_id += 1
        self.client_id = RawCcpClient._next_id
        self.seq = 0

    def request(self, service, payload, timeout_ms):
        """(type byte, payload frames), or None on timeout."""
        self.seq += 1
        sid = struct.pack(">III", 0, self.seq, self.client_id)
        if not send_or_drop(self.s, [b"", CCP, b"\x03", service, sid] + payload):
            return None
        if not self.s.poll(timeout_ms):
            return None
        f = self.s.recv_multipart()
        check(f[1] == CCP and f[3] == service and f[4] == sid,
              f"bad CCp100 reply {f!r}")
        return f[2], f[5:]

    def close(self):
        self.s.close()


# --- metrics ------------------------------------------------------------------

def scrape(port):
    body = zp.metrics_page(port).decode("utf-8", "replace")
    return zp.parse_metrics(body)[0]


def value(samples, name, **labels):
    return samples.get((name, frozenset(labels.items())), 0.0)


def scrape_until(port, pred, timeout=10):
    deadline = time.monotonic() + timeout
    while True:
        s = scrape(port)
        if pred(s) or time.monotonic() > deadline:
            return s
        time.sleep(0.1)


# --- a relaying TCP proxy that records every byte -----------------------------

class CapturingProxy:
    """Listens on 127.0.0.1:0 and relays each connection to `upstream`
    (host, port), keeping a copy of every byte in both directions."""

    def __init__(self, upstream):
        self.upstream = upstream
        self.listener = socket.socket()
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(16)
        self.port = self.listener.getsockname()[1]
        self.captured = bytearray()
        self.lock = threading.Lock()
        self.stop = False
        self.sel = selectors.DefaultSelector()
        self.sel.register(self.listener, selectors.EVENT_READ, None)
        self.t = threading.Thread(target=self._run, daemon=True)
        self.t.start()

    def _run(self):
        socks = []
        while not self.stop:
            for key, _ in self.sel.select(0.05):
                if key.data is None:
                    down, _ = self.listener.accept()
                    up = socket.create_connection(self.upstream, timeout=5)
                    for a, b in ((down, up), (up, down)):
                        a.setblocking(False)
                        self.sel.register(a, selectors.EVENT_READ, b)
                        socks.append(a)
                    continue
                try:
                    data = key.fileobj.recv(65536)
                except OSError:
                    data = b""
                if not data:
                    for s in (key.fileobj, key.data):
                        try:
                            self.sel.unregister(s)
                        except (KeyError, ValueError):
                            pass
                        s.close()
                    continue
                with self.lock:
                    self.captured += data
                key.data.sendall(data)
        for s in socks:
            s.close()

    def bytes(self):
        with self.lock:
            return bytes(self.captured)

    def close(self):
        self.stop = True
        self.t.join(5)
        self.listener.close()


# --- scenario set-up ----------------------------------------------------------

class Setup:
    """Keys in a temporary directory and a broker with plaintext and CURVE
    endpoints for both protocols."""

    def __init__(self, exe, extra=()):
        self.dir = tempfile.mkdtemp(prefix="zb_curve_e2e_")
        self.allow = os.path.join(self.dir, "clients")
        os.mkdir(self.allow)
        self.server = Keys(self.dir, "server")
        self.client = Keys(self.dir, "client")
        self.worker = Keys(self.dir, "worker")
        self.stranger = Keys(self.dir, "stranger")
        for k in (self.client, self.worker):
            shutil.copy(k.pub_file, self.allow)
        self.broker = Broker.start(exe, [
            "--majordomo", "tcp://127.0.0.1:*",
            "--majordomo-curve", "tcp://127.0.0.1:*",
            "--consensus", "tcp://127.0.0.1:*",
            "--consensus-curve", "tcp://127.0.0.1:*",
            "--curve-secret-key-file", self.server.secret_file,
            "--curve-allowlist", self.allow,
            "--heartbeat-interval", "10s",
            "--metrics", "127.0.0.1:0", "--stats-interval", "0s",
        ] + list(extra))
        self.mdp_plain = self.broker.endpoint("majordomo", curve=False)
        self.mdp_curve = self.broker.endpoint("majordomo", curve=True)
        self.ccp_plain = self.broker.endpoint("consensus", curve=False)
        self.ccp_curve = self.broker.endpoint("consensus", curve=True)
        self.metrics = self.broker.metrics_port()
        self.ctx = zmq.Context()
        self.peers = []

    def track(self, p):
        self.peers.append(p)
        return p

    def check_no_secrets_logged(self):
        text = self.broker.text()
        for k in (self.server, self.client, self.worker, self.stranger):
            check(k.secret.decode() not in text,
                  "a secret key appears in the broker's log")

    def close(self):
        for p in self.peers:
            p.close()
        # destroy(): a socket left open by a failed check must not hang term().
        self.ctx.destroy(linger=0)
        self.broker.p.send_signal(signal.SIGTERM)
        code = self.broker.wait(15)
        if code is None:
            self.broker.kill()
        shutil.rmtree(self.dir, ignore_errors=True)
        check(code == 0, f"zb-broker exited with {code}:\n" +
              self.broker.describe())


def wait_workers(port, broker, service, n, timeout=10):
    s = scrape_until(port, lambda s: value(s, "zb_workers", broker=broker,
                                           service=service) == n, timeout)
    check(value(s, "zb_workers", broker=broker, service=service) == n,
          f"{broker}: expected {n} worker(s) for {service}")


# --- scenarios ----------------------------------------------------------------

def scenario_allowed(exe):
    st = Setup(exe)
    try:
        sp = st.server.public
        st.track(RawMdpWorker(st.ctx, st.mdp_curve, b"echo", sp, st.worker))
        st.track(RawCcpWorker(st.ctx, st.ccp_curve, b"echo", sp, st.worker))
        # A plaintext worker on the plaintext endpoint of the same brokers.
        st.track(RawCcpWorker(st.ctx, st.ccp_plain, b"echo"))
        wait_workers(st.metrics, "majordomo", "echo", 1)
        wait_workers(st.metrics, "consensus", "echo", 2)

        mc = st.track(RawMdpClient(st.ctx, st.mdp_curve, sp, st.client))
        for i in range(20):
            body = [b"mdp-%d" % i, b"x" * 1000]
            check(mc.request(b"echo", body, 3000) == body, "MDP over CURVE")
        cc = st.track(RawCcpClient(st.ctx, st.ccp_curve, sp, st.client))
        for i in range(20):
            r = cc.request(b"echo", [b"ccp-%d" % i], 3000)
            # Both workers (CURVE and plaintext) answered.
            check(r == (b"\x04", [b"ccp-%d" % i] * 2), f"CCp100 over CURVE {r}")
        # Plaintext clients on the plaintext endpoints, meanwhile.
        mp = st.track(RawMdpClient(st.ctx, st.mdp_plain))
        check(mp.request(b"echo", [b"plain"], 3000) == [b"plain"],
              "MDP plaintext next to CURVE")
        cp = st.track(RawCcpClient(st.ctx, st.ccp_plain))
        check(cp.request(b"echo", [b"plain"], 3000) == (b"\x04", [b"plain"] * 2),
              "CCp100 plaintext next to CURVE")
        s = scrape_until(st.metrics, lambda s: value(
            s, "zb_requests_total", broker="consensus") >= 21)
        check(value(s, "zb_requests_total", broker="majordomo") == 21,
              "majordomo requests")
        check(value(s, "zb_requests_total", broker="consensus") == 21,
              "consensus requests")
        # Allowed: the worker and the client, on each broker (libzmq asks ZAP
        # once per connection).
        check(value(s, "zb_auth_allowed_total", broker="majordomo") >= 2,
              "zb_auth_allowed_total majordomo")
        check(value(s, "zb_auth_allowed_total", broker="consensus") >= 2,
              "zb_auth_allowed_total consensus")
        for reason in ("key_not_allowed", "decrypt_failed",
                       "mechanism_mismatch"):
            for b in ("majordomo", "consensus"):
                check(value(s, "zb_auth_failures_total", broker=b,
                            reason=reason) == 0, f"{b} {reason} not 0")
        st.check_no_secrets_logged()
    finally:
        st.close()
    print("allowed: ok")


def scenario_refused(exe):
    st = Setup(exe)
    try:
        sp = st.server.public
        impostor = Keys(st.dir, "impostor")  # a server key nobody runs
        # A legitimate worker on each broker for the clients to aim at.
        w1 = st.track(RawMdpWorker(st.ctx, st.mdp_curve, b"echo", sp,
                                   st.worker))
        w2 = st.track(RawCcpWorker(st.ctx, st.ccp_curve, b"echo", sp,
                                   st.worker))
        wait_workers(st.metrics, "majordomo", "echo", 1)
        wait_workers(st.metrics, "consensus", "echo", 1)

        def failures():
            s = scrape(st.metrics)
            return {(b, r): value(s, "zb_auth_failures_total", broker=b,
                                  reason=r)
                    for b in ("majordomo", "consensus")
                    for r in ("key_not_allowed", "decrypt_failed",
                              "mechanism_mismatch", "protocol_error",
                              "other")}

        # One kind of bad peer at a time, so that each one's counters can be
        # told apart: a worker that tries to register "stolen" and a client
        # that sends a request, on each broker's CURVE endpoint.
        phases = [
            ("unlisted key", st.stranger, sp, ("key_not_allowed",)),
            ("wrong server key", st.worker, impostor.public,
             ("decrypt_failed",)),
            # A plaintext peer is refused at the greeting; when it notices
            # the mismatch first and hangs up, libzmq reports it without
            # detail ("other").
            ("plaintext", None, None, ("mechanism_mismatch", "other")),
        ]
        for what, own, server, reasons in phases:
            before = failures()
            peers = [st.track(RawMdpWorker(st.ctx, st.mdp_curve, b"stolen",
                                           server, own)),
                     st.track(RawCcpWorker(st.ctx, st.ccp_curve, b"stolen",
                                           server, own))]
            mc = st.track(RawMdpClient(st.ctx, st.mdp_curve, server, own))
            cc = st.track(RawCcpClient(st.ctx, st.ccp_curve, server, own))
            check(mc.request(b"echo", [b"x"], 700) is None,
                  f"MDP {what} client got an answer")
            check(cc.request(b"echo", [b"x"], 700) is None,
                  f"CCp100 {what} client got an answer")
            for p in peers + [mc, cc]:
                p.close()
            time.sleep(0.3)  # late monitor events
            after = failures()
            for b in ("majordomo", "consensus"):
                grew = sum(after[(b, r)] - before[(b, r)] for r in reasons)
                check(grew >= 1, f"{b}: {what}: {reasons} did not grow: "
                      f"{before} -> {after}")
                if what != "unlisted key":
                    check(after[(b, "key_not_allowed")] ==
                          before[(b, "key_not_allowed")],
                          f"{b}: {what} reached the ZAP handler")
        check(w1.handled == 0 and w2.handled == 0,
              "a refused client's request reached a worker")

        # Metrics are published once a second: let two pass, then nothing
        # of the refused peers may show.
        time.sleep(2.2)
        s = scrape(st.metrics)
        for b in ("majordomo", "consensus"):
            check(value(s, "zb_workers", broker=b, service="stolen") == 0,
                  f"{b}: a refused worker registered")
            check(value(s, "zb_requests_total", broker=b) == 0,
                  f"{b}: a refused client's request was counted")
        # The refusals are logged, without the secrets.
        check(st.broker.wait_line(r"refused CURVE client key \S+ from "
                                  r"127\.0\.0\.1: client key not allowed", 1),
              "no refusal line:\n" + st.broker.describe())
        check(st.broker.wait_line(r"refused a handshake on tcp://.*did not "
                                  r"decrypt", 1),
              "no decrypt line:\n" + st.broker.describe())
        # And the legitimate pair still works.
        mc = st.track(RawMdpClient(st.ctx, st.mdp_curve, sp, st.client))
        check(mc.request(b"echo", [b"ok"], 3000) == [b"ok"], "allowed client")
        st.check_no_secrets_logged()
    finally:
        st.close()
    print("refused: ok")


def scenario_capture(exe):
    st = Setup(exe)
    try:
        sp = st.server.public
        st.track(RawMdpWorker(st.ctx, st.mdp_curve, b"svc-7f3a9c", sp,
                              st.worker))
        st.track(RawMdpWorker(st.ctx, st.mdp_plain, b"svc-7f3a9c"))
        st.track(RawCcpWorker(st.ctx, st.ccp_curve, b"svc-7f3a9c", sp,
                              st.worker))
        wait_workers(st.metrics, "majordomo", "svc-7f3a9c", 2)
        wait_workers(st.metrics, "consensus", "svc-7f3a9c", 1)
        secret = b"TOP-SECRET-PAYLOAD-" + os.urandom(8).hex().encode()

        def through_proxy(endpoint, curve, protocol):
            host, port = endpoint[len("tcp://"):].rsplit(":", 1)
            proxy = CapturingProxy((host, int(port)))
            try:
                ep = f"tcp://127.0.0.1:{proxy.port}"
                own = st.client if curve else None
                server = sp if curve else None
                if protocol == "mdp":
                    c = RawMdpClient(st.ctx, ep, server, own)
                    reply = c.request(b"svc-7f3a9c", [secret], 3000)
                    ok = reply == [secret]
                else:
                    c = RawCcpClient(st.ctx, ep, server, own)
                    reply = c.request(b"svc-7f3a9c", [secret], 3000)
                    ok = reply == (b"\x04", [secret])
                c.close()
                check(ok, f"{protocol} through the proxy: {reply!r}")
                time.sleep(0.1)  # let the last relayed bytes land
                return proxy.bytes()
            finally:
                proxy.close()

        for protocol, curve_ep in (("mdp", st.mdp_curve),
                                   ("ccp", st.ccp_curve)):
            wire = through_proxy(curve_ep, True, protocol)
            # The request and the echoed reply went through (2 x 27+ bytes
            # of payload plus the handshake): the capture is not empty...
            check(len(wire) > 300, f"{protocol}: only {len(wire)} bytes seen")
            check(b"CURVE" in wire, f"{protocol}: no CURVE greeting seen")
            # ... and holds neither the payload nor the service name.
            check(secret not in wire,
                  f"{protocol}: the payload crossed the wire in clear")
            check(b"svc-7f3a9c" not in wire,
                  f"{protocol}: the service name crossed the wire in clear")
        # The same check on the plaintext endpoint finds both: it can fail.
        wire = through_proxy(st.mdp_plain, False, "mdp")
        check(secret in wire and b"svc-7f3a9c" in wire,
              "plaintext capture misses the payload: the check is blind")
    finally:
        st.close()
    print("capture: ok")


def scenario_reload(exe):
    st = Setup(exe)
    try:
        sp = st.server.public
        st.track(RawMdpWorker(st.ctx, st.mdp_curve, b"echo", sp, st.worker))
        wait_workers(st.metrics, "majordomo", "echo", 1)
        s = scrape(st.metrics)
        check(value(s, "zb_curve_allowlist_keys") == 2, "2 keys at start")

        def ask(own, timeout=1500):
            c = RawMdpClient(st.ctx, st.mdp_curve, sp, own)
            try:
                return c.request(b"echo", [b"hi"], timeout)
            finally:
                c.close()

        def hup(expect):
            n = st.broker.line_count()
            st.broker.p.send_signal(signal.SIGHUP)
            m = st.broker.wait_line(expect, 5, after=n)
            check(m is not None, f"no '{expect}' after SIGHUP:\n" +
                  st.broker.describe())
            check(st.broker.p.poll() is None, "SIGHUP stopped the daemon")

        check(ask(st.stranger, 700) is None, "stranger let in before reload")
        # A connection of the client that stays open across the reloads.
        kept = st.track(RawMdpClient(st.ctx, st.mdp_curve, sp, st.client))
        check(kept.request(b"echo", [b"kept"], 3000) == [b"kept"], "kept")

        shutil.copy(st.stranger.pub_file, st.allow)
        hup(r"allowlist .* reloaded: 3 key\(s\), 1 added, 0 removed")
        check(ask(st.stranger) == [b"hi"], "stranger refused after its key "
              "was added")
        os.remove(os.path.join(st.allow, "client.pub"))
        hup(r"reloaded: 2 key\(s\), 0 added, 1 removed")
        check(ask(st.client, 700) is None, "client let in after its key was "
              "removed")
        # CURVE authenticates a connection once: the kept one stays up.
        check(kept.request(b"echo", [b"still"], 3000) == [b"still"],
              "an authenticated connection dropped by the reload")
        s = scrape(st.metrics)
        check(value(s, "zb_curve_allowlist_keys") == 2, "gauge after reload")

        # A broken file: the reload fails (the whole configuration is read
        # again, and checked like at start-up) and the previous list stays.
        with open(os.path.join(st.allow, "broken.pub"), "w") as f:
            f.write("this is not a key\n")
        hup(r"SIGHUP: .*daemon\.curve_allowlist: .*broken\.pub:1: .*keeping "
            r"the running configuration")
        check(ask(st.stranger) == [b"hi"], "previous list lost on a bad "
              "reload")
        st.check_no_secrets_logged()
    finally:
        st.close()
    print("reload: ok")


def scenario_config(exe):
    d = tempfile.mkdtemp(prefix="zb_curve_cfg_")
    try:
        server = Keys(d, "server")
        client = Keys(d, "client")

        def run(args):
            p = subprocess.run([exe] + args, capture_output=True, text=True,
                               timeout=20, preexec_fn=zp.die_with_parent)
            return p.returncode, p.stdout + p.stderr

        base = ["--curve-secret-key-file", server.secret_file,
                "--curve-allowlist", client.pub_file]
        cases = [
            (["--majordomo-curve", "tcp://127.0.0.1:*"],
             "daemon.curve_secret_key_file"),
            (["--majordomo-curve", "tcp://127.0.0.1:*",
              "--curve-secret-key-file", server.secret_file],
             "daemon.curve_allowlist"),
            (base + ["--consensus-curve", "inproc://x"], "inproc"),
            (["--curve-secret-key-file", client.pub_file + ".nope",
              "--curve-allowlist", client.pub_file,
              "--majordomo-curve", "tcp://127.0.0.1:*"],
             "--curve-secret-key-file"),
        ]
        bad = os.path.join(d, "bad.pub")
        with open(bad, "w") as f:
            f.write("# fine\nnot-a-key\n")
        cases.append((["--curve-secret-key-file", server.secret_file,
                       "--curve-allowlist", bad, "--majordomo-curve",
                       "tcp://127.0.0.1:*"], bad + ":2:"))
        toml = os.path.join(d, "zb.toml")
        with open(toml, "w") as f:
            f.write(f'[daemon]\ncurve_secret_key_file = "{bad}"\n'
                    f'curve_allowlist = "{client.pub_file}"\n'
                    '[consensus]\ncurve_endpoints = ["tcp://127.0.0.1:*"]\n')
        cases.append((["--config", toml], toml + ":2:25"))
        for args, needle in cases:
            code, out = run(args)
            check(code == 2, f"{args}: exit {code}, want 2:\n{out}")
            check(needle in out, f"{args}: {needle!r} not in:\n{out}")
            for k in (server, client):
                check(k.secret.decode() not in out, "secret in an error")

        code, out = run(["--help"])
        check(code == 0 and "--curve-allowlist" in out and
              "--majordomo-curve" in out, "--help lacks the CURVE flags")

        # A secret key file others can read: the daemon starts and warns.
        os.chmod(server.secret_file, 0o644)
        b = Broker.start(exe, base + ["--majordomo-curve", "tcp://127.0.0.1:*"])
        check(b.wait_line(r"can be read by others \(mode 0644\)", 2),
              "no warning for a 0644 secret key:\n" + b.describe())
        check(b.wait_line(r"curve: server public key " +
                          re.escape(server.public.decode()), 1),
              "the server's public key is not logged:\n" + b.describe())
        check(server.secret.decode() not in b.text(), "secret logged")
        b.p.send_signal(signal.SIGTERM)
        check(b.wait(15) == 0, "exit after SIGTERM:\n" + b.describe())
    finally:
        shutil.rmtree(d, ignore_errors=True)
    print("config: ok")


SCENARIOS = {
    "allowed": scenario_allowed,
    "refused": scenario_refused,
    "capture": scenario_capture,
    "reload": scenario_reload,
    "config": scenario_config,
}


def main(argv):
    ap = argparse.ArgumentParser()
    ap.add_argument("--broker", required=True)
    ap.add_argument("scenario", choices=sorted(SCENARIOS))
    args = ap.parse_args(argv)
    check(zmq.has("curve"), "pyzmq's libzmq has no CURVE")
    return zp.run_scenario(args.scenario, SCENARIOS[args.scenario],
                           os.path.abspath(args.broker))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
