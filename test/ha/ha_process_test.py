# Copyright 2026 The zbrokers Authors.
"""The fail-over pair (docs/ha.md) as real processes, killed -9.

Two zb-broker processes run as primary and backup ([ha] flags), each with
a Majordomo and a consensus broker on fixed loopback ports.  Workers
written here from the wire protocols alone (raw pyzmq, RFC 7 and CCp100)
hold one session per broker, so both brokers always have them.  One
lazy-pirate client per protocol, also raw pyzmq, sends requests one at a
time with a unique body, waits `--timeout` for the echo, and on a timeout
closes its socket and re-sends to the next broker of its list.  A CCp100
`zb:no-workers` answer to its own sequence number is sent again after a
backoff within the same timeout, as the project's clients do with
`retry_no_workers`: the protocol answers it at once, and right after a
fail-over the workers may still be registering with the broker that took
over (CI once descheduled this process for longer than the workers'
liveness, the broker expired them, and the request that made it take over
found none).  A `zb:worker-left` answer to its own sequence number is sent
again the same way: the broker expired the workers the request had been
given to (the paused workers below, once in CI); the echo is idempotent,
as the lazy-pirate resend after a timeout already assumes.  During the run
the test

  1. kills -9 the active primary: the backup must take over, and the time
     from the kill to the first answer from the backup is measured and
     printed (docs/ha.md: about the client timeout, as peer_expiry is
     shorter);
  2. restarts the primary: it must come back PASSIVE (no fail-back), by
     its log and zb_ha_state;
  3. kills -9 the backup: the primary must become ACTIVE again and serve.
     With --pause-workers S the workers stop reading and heartbeating
     for S seconds right after that kill, longer than their liveness, as
     when a loaded CI machine once descheduled this process: the primary
     expires them, answers the clients zb:no-workers (which they must
     get, and send again) until the workers register again, and every
     request must still end with its own echo.

With --workers python the workers are the project's own instead: the
Python package's MdpWorker and ConsensusWorker given both endpoints as a
list (one session per broker, docs/ha.md), over the C library (--lib).

Every request must end exactly once with its own answer: no lost, wrong or
duplicated reply.  Wrong is any other answer: another request's (another
body or, for CCp100, another sequence number) or a failure.  Processes
are signalled only by the PID the test
started; everything is killed and reaped at the end; only 127.0.0.1.

  ha_process_test.py --broker build/brokers/daemon/zb-broker \\
      --requests 300 [--budget 120]
"""

import argparse
import os
import socket
import struct
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "testing"))
import zb_process as zp  # noqa: E402
import zmq  # noqa: E402

HEARTBEAT_INTERVAL = "100ms"  # [ha] heartbeat_interval
PEER_EXPIRY = "300ms"         # [ha] peer_expiry
MDP_HEARTBEAT = 0.5           # broker <-> worker, seconds (both protocols)
LIVENESS = 3


def free_ports(n):
    """n distinct free TCP ports on 127.0.0.1 (closed again: the brokers
    bind them; a restart waits for a port still in use)."""
    socks, ports = [], []
    for _ in range(n):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        socks.append(s)
        ports.append(s.getsockname()[1])
    for s in socks:
        s.close()
    return ports


class Broker:
    """The arguments of one zb-broker of the pair, so that it can be
    restarted the same way."""

    def __init__(self, exe, role, mdp_port, ccp_port, state_port, peer_port):
        self.exe = exe
        self.role = role
        self.mdp = f"tcp://127.0.0.1:{mdp_port}"
        self.ccp = f"tcp://127.0.0.1:{ccp_port}"
        self.args = [
            "--majordomo", self.mdp, "--consensus", self.ccp,
            "--heartbeat-interval", f"{int(MDP_HEARTBEAT * 1000)}ms",
            "--ha-role", role,
            "--ha-state-endpoint", f"tcp://127.0.0.1:{state_port}",
            "--ha-peer-state-endpoint", f"tcp://127.0.0.1:{peer_port}",
            "--ha-heartbeat-interval", HEARTBEAT_INTERVAL,
            "--ha-peer-expiry", PEER_EXPIRY,
            "--metrics", "127.0.0.1:0", "--stats-interval", "0s",
            "--grace", "0s"]
        self.proc = None

    def start(self):
        self.proc = zp.ZbBroker.start(self.exe, self.args, name=self.role,
                                      busy_for=20)
        return self

    def kill9(self):
        self.proc.kill9()

    def state_line(self, frm, to, timeout=10):
        return self.proc.wait_line(rf"ha: state {frm} -> {to}", timeout)

    def ha_state(self):
        samples, _ = zp.parse_metrics(self.proc.metrics().decode())
        for st in ("primary", "backup", "active", "passive"):
            if zp.sample(samples, "zb_ha_state", state=st) == 1:
                return st
        return None

    def workers(self, broker):
        samples, _ = zp.parse_metrics(self.proc.metrics().decode())
        return zp.sample(samples, "zb_workers", broker=broker,
                         service="echo") or 0


# --- workers: one session per broker, raw wire protocols ----------------------

class Session:
    """One DEALER to one broker, reconnected (new socket, READY) when the
    broker has been silent for LIVENESS heartbeats or disconnects us."""

    def __init__(self, ctx, endpoint, ready, heartbeat):
        self.ctx, self.endpoint = ctx, endpoint
        self.ready, self.heartbeat = ready, heartbeat
        self.sock = None
        self.open()

    def open(self):
        if self.sock is not None:
            self.sock.close(0)
        self.sock = self.ctx.socket(zmq.DEALER)
        self.sock.linger = 0
        self.sock.connect(self.endpoint)
        self.sock.send_multipart(self.ready)
        self.last_heard = self.last_sent = time.monotonic()

    def tick(self):
        now = time.monotonic()
        if now - self.last_heard > MDP_HEARTBEAT * LIVENESS:
            self.open()
        elif now - self.last_sent >= MDP_HEARTBEAT:
            self.sock.send_multipart(self.heartbeat)
            self.last_sent = now


class Worker(threading.Thread):
    """An echo worker of one protocol with a session per broker."""

    def __init__(self, ctx, protocol, endpoints, stop):
        super().__init__(daemon=True)
        self.protocol, self.stop = protocol, stop
        if protocol == "mdp":
            ready = [b"", b"MDPW01", b"\x01", b"echo"]
            hb = [b"", b"MDPW01", b"\x04"]
        else:
            ready = [b"", b"CCp100", b"\x01", b"echo",
                     struct.pack(">I", int(MDP_HEARTBEAT * 1000)),
                     bytes([LIVENESS])]
            hb = [b"", b"CCp100", b"\x02"]
        self.sessions = [Session(ctx, ep, ready, hb) for ep in endpoints]
        self.served = 0
        # Until then (time.monotonic()) the worker neither reads nor
        # heartbeats (--pause-workers).
        self.paused_until = 0.0

    def answer(self, s, frames):
        if self.protocol == "mdp":
            # ["", MDPW01, cmd, ...]
            if len(frames) < 3 or frames[1] != b"MDPW01":
                return
            cmd = frames[2]
            if cmd == b"\x02":  # REQUEST [client, "", body...]
                s.sock.send_multipart([b"", b"MDPW01", b"\x03"] + frames[3:])
                s.last_sent = time.monotonic()
                self.served += 1
            elif cmd == b"\x05":  # DISCONNECT: register again
                s.open()
        else:
            if len(frames) < 3 or frames[1] != b"CCp100":
                return
            cmd = frames[2]
            if cmd == b"\x03":  # REQUEST [service, seq, payload...]
                s.sock.send_multipart([b"", b"CCp100", b"\x04"] + frames[3:])
                s.last_sent = time.monotonic()
                self.served += 1
            elif cmd == b"\x06":
                s.open()

    def run(self):
        poller = zmq.Poller()
        registered = {}
        while not self.stop.is_set():
            if time.monotonic() < self.paused_until:
                time.sleep(0.01)
                continue
            for s in self.sessions:
                if registered.get(id(s)) is not s.sock:
                    if id(s) in registered:
                        try:
                            poller.unregister(registered[id(s)])
                        except KeyError:
                            pass
                    poller.register(s.sock, zmq.POLLIN)
                    registered[id(s)] = s.sock
            for sock, _ in poller.poll(50):
                s = next(x for x in self.sessions if x.sock is sock)
                while s.sock is sock:  # answer() may reopen the session
                    try:
                        frames = sock.recv_multipart(zmq.NOBLOCK)
                    except zmq.Again:
                        break
                    s.last_heard = time.monotonic()
                    self.answer(s, frames)
            for s in self.sessions:
                s.tick()
        for s in self.sessions:
            s.sock.close(0)


class LibraryWorkers(threading.Thread):
    """The project's own workers, zbrokers.MdpWorker and ConsensusWorker,
    each given the endpoint list of both brokers, on one Python reactor."""

    def __init__(self, mdp_endpoints, ccp_endpoints):
        super().__init__(daemon=True)
        self.mdp_endpoints, self.ccp_endpoints = mdp_endpoints, ccp_endpoints
        self.started = threading.Event()
        self.reactor = None
        self.error = None

    def run(self):
        import zbrokers
        try:
            with zbrokers.Reactor() as r:
                self.reactor = r
                mdp = zbrokers.MdpWorker(
                    r, self.mdp_endpoints, "echo", lambda frames: frames,
                    heartbeat_interval=MDP_HEARTBEAT,
                    heartbeat_liveness=LIVENESS, reconnect_delay=0.1)
                ccp = zbrokers.ConsensusWorker(
                    r, self.ccp_endpoints, "echo", lambda frames: frames,
                    heartbeat_interval=MDP_HEARTBEAT,
                    heartbeat_liveness=LIVENESS)
                self.started.set()
                r.run()
                mdp.close()
                ccp.close()
        except Exception as e:  # reported by the main thread
            self.error = repr(e)
            self.started.set()

    def stop(self):
        if self.reactor is not None:
            self.reactor.stop()


# --- the lazy-pirate client ----------------------------------------------------

class Client(threading.Thread):
    """Sends `total` requests one at a time; each is re-sent to the next
    broker after every timeout, up to `attempts` times."""

    def __init__(self, ctx, protocol, endpoints, total, timeout, attempts):
        super().__init__(daemon=True)
        self.ctx, self.protocol = ctx, protocol
        self.endpoints, self.total = endpoints, total
        self.timeout, self.attempts = timeout, attempts
        self.current = 0
        self.sock = None
        self.done = 0          # requests ended (answered or given up)
        self.ok = 0
        self.failed = 0        # gave up after `attempts`
        self.wrong_answers = []  # (request body, frames) not our own
        self.timeouts = 0
        self.no_workers = 0    # zb:no-workers answers, each sent again
        self.worker_left = 0   # zb:worker-left answers, each sent again
        self.answers_from = []  # (monotonic time, endpoint index)
        self.client_id = 0
        self.seq = 0
        self.error = None
        # Before request number hold_at[k] the client sets held[k] and waits
        # for release[k]: the test kills a broker while every client waits
        # there, so that requests are always sent after each kill however
        # fast the run went (a client once reached the second point before
        # the first kill on a loaded machine, and no request went to the
        # backup).  The third point holds what is left of the run until the
        # second kill has happened: the clients, released from the second
        # point, once sent every remaining request before the main thread
        # got to that kill (under load), and none went to the primary.
        self.hold_at = [total // 3, (2 * total) // 3, (5 * total) // 6]
        self.held = [threading.Event() for _ in self.hold_at]
        self.release = [threading.Event() for _ in self.hold_at]

    def open(self):
        if self.sock is not None:
            self.sock.close(0)
        self.sock = self.ctx.socket(zmq.DEALER)
        self.sock.linger = 0
        self.sock.connect(self.endpoints[self.current])
        # CCp100: a new socket is a new client id, its sequence from 1.
        self.client_id = (self.client_id + 1) & 0xFFFFFFFF
        self.seq = 0

    def send(self, body):
        if self.protocol == "mdp":
            self.sock.send_multipart([b"", b"MDPC01", b"echo", body])
        else:
            self.seq += 1
            self.sock.send_multipart([b"", b"CCp100", b"\x03", b"echo",
                                      self.seq_frame(), body])

    def seq_frame(self):
        return struct.pack(">III", self.seq >> 32, self.seq & 0xFFFFFFFF,
                           self.client_id)

    def classify(self, frames, body):
        """What an answer to `body` (sent as self.seq) is: "ok" (our own
        echo), "no-workers" (CCp100 REPLY_FAILURE zb:no-workers to our own
        sequence number, which the protocol gives at once when the service
        has no workers at that moment; no worker has seen the request),
        "worker-left" (REPLY_FAILURE zb:worker-left to our own sequence
        number: the broker expired the workers it had given the request
        to), or "wrong" (anything else: another request's answer, or
        another failure)."""
        if self.protocol == "mdp":
            if len(frames) == 4 and frames[1] == b"MDPC01" and \
                    frames[2] == b"echo" and frames[3] == body:
                return "ok"
            return "wrong"
        if len(frames) >= 6 and frames[1] == b"CCp100" and \
                frames[3] == b"echo" and frames[4] == self.seq_frame():
            if frames[2] == b"\x04" and frames[5:] == [body]:
                return "ok"
            if frames[2] == b"\x05" and frames[5] == b"zb:no-workers":
                return "no-workers"
            if frames[2] == b"\x05" and frames[5] == b"zb:worker-left":
                return "worker-left"
        return "wrong"

    def run(self):
        try:
            self.open()
            for i in range(self.total):
                if i in self.hold_at:
                    k = self.hold_at.index(i)
                    self.held[k].set()
                    self.release[k].wait(600)
                body = f"{self.protocol}-{i}".encode()
                answered = False
                for _ in range(self.attempts):
                    verdict = self.attempt(body)
                    if verdict == "ok":
                        answered = True
                        self.answers_from.append(
                            (time.monotonic(), self.current))
                        break
                    if verdict == "wrong":
                        break
                    # Lazy pirate: a new socket, to the next broker.
                    self.timeouts += 1
                    self.current = (self.current + 1) % len(self.endpoints)
                    self.open()
                if answered:
                    self.ok += 1
                elif self.wrong == 0:
                    self.failed += 1
                self.done += 1
        except Exception as e:  # reported by the main thread
            self.error = repr(e)
        finally:
            if self.sock is not None:
                self.sock.close(0)

    @property
    def wrong(self):
        return len(self.wrong_answers)

    def attempt(self, body):
        """Sends `body` to the current broker and waits up to the timeout:
        "ok", "wrong" (recorded), or "timeout".  A zb:no-workers or
        zb:worker-left answer is sent again after a backoff while the attempt's time lasts (the
        module's docstring says why)."""
        deadline = time.monotonic() + self.timeout
        backoff = 0.01
        while True:
            self.send(body)
            left = deadline - time.monotonic()
            if left <= 0 or not self.sock.poll(max(1, int(left * 1000))):
                return "timeout"
            frames = self.sock.recv_multipart()
            verdict = self.classify(frames, body)
            if verdict in ("no-workers", "worker-left"):
                if verdict == "no-workers":
                    self.no_workers += 1
                else:
                    self.worker_left += 1
                if time.monotonic() + backoff >= deadline:
                    return "timeout"
                time.sleep(backoff)
                backoff = min(2 * backoff, 0.5)
                continue
            if verdict == "wrong":
                self.wrong_answers.append((body, frames))
            return verdict

    def first_answer_from(self, index, after):
        for t, i in self.answers_from:
            if t >= after and i == index:
                return t
        return None


def wait_held(clients, k, deadline, what):
    """Every client is waiting at its hold point k (or has stopped)."""
    zp.wait_for(lambda: all(c.held[k].is_set() or not c.is_alive()
                            for c in clients),
                max(1, deadline - time.monotonic()), what)


def scenario(args):
    deadline = time.monotonic() + args.budget
    ports = free_ports(6)
    primary = Broker(args.broker, "primary", ports[0], ports[1], ports[2],
                     ports[3]).start()
    backup = Broker(args.broker, "backup", ports[4], ports[5], ports[3],
                    ports[2]).start()
    zp.check(primary.state_line("primary", "active") is not None,
             "the primary did not become active")
    zp.check(backup.state_line("backup", "passive") is not None,
             "the backup did not become passive")

    ctx = zmq.Context()
    stop = threading.Event()
    if args.workers == "python":
        lib = LibraryWorkers([primary.mdp, backup.mdp],
                             [primary.ccp, backup.ccp])
        workers = [lib]
        lib.start()
        zp.check(lib.started.wait(10) and lib.error is None,
                 f"the library workers did not start: {lib.error}")
    else:
        workers = [Worker(ctx, "mdp", [primary.mdp, backup.mdp], stop),
                   Worker(ctx, "ccp", [primary.ccp, backup.ccp], stop)]
        for w in workers:
            w.start()
    # Both brokers have both workers (the passive one keeps them too).
    for b in (primary, backup):
        for kind in ("majordomo", "consensus"):
            zp.wait_for(lambda: b.workers(kind) == 1, 10,
                        f"{b.role} has no {kind} worker")

    clients = [Client(ctx, "mdp", [primary.mdp, backup.mdp], args.requests,
                      args.timeout, args.attempts),
               Client(ctx, "ccp", [primary.ccp, backup.ccp], args.requests,
                      args.timeout, args.attempts)]
    for c in clients:
        c.start()
    try:
        # 1. kill -9 the active primary in the middle of the run, while
        # every client waits at its first hold point; released at once, so
        # that their requests make the backup take over.
        wait_held(clients, 0, deadline, "no progress before the kill")
        t_kill = time.monotonic()
        primary.kill9()
        for c in clients:
            c.release[0].set()
        zp.check(backup.state_line("passive", "active", timeout=20)
                 is not None, "the backup did not take over")
        zp.wait_for(lambda: all(c.first_answer_from(1, t_kill) is not None
                                or not c.is_alive() for c in clients),
                    20, "no answer from the backup after the kill")
        for c in clients:
            t = c.first_answer_from(1, t_kill)
            zp.check(t is not None, f"{c.protocol}: no answer from the backup")
            print(f"{c.protocol}: kill -9 of the active -> first answer from "
                  f"the backup: {(t - t_kill) * 1000:.0f} ms (peer_expiry "
                  f"{PEER_EXPIRY}, client timeout {args.timeout * 1000:.0f} "
                  f"ms)", flush=True)

        # 2. the old primary returns: passive, no fail-back.
        primary.start()
        zp.check(primary.state_line("primary", "passive") is not None,
                 "the restarted primary did not become passive")
        zp.check(primary.ha_state() == "passive",
                 "zb_ha_state of the restarted primary is not passive")
        zp.check(backup.ha_state() == "active",
                 "zb_ha_state of the backup is not active")
        for kind in ("majordomo", "consensus"):
            zp.wait_for(lambda: primary.workers(kind) == 1, 15,
                        f"the restarted primary has no {kind} worker")

        # 3. kill -9 the backup while requests flow: the primary serves
        # again.
        wait_held(clients, 1, deadline, "no progress before kill 2")
        marks = [c.done for c in clients]
        for c in clients:
            c.release[1].set()
        zp.wait_for(lambda: all(c.done >= m + 5 for c, m in
                                zip(clients, marks)), 20,
                    "no requests flowing before kill 2")
        t_kill2 = time.monotonic()
        backup.kill9()
        if args.pause_workers:
            for w in workers:
                w.paused_until = time.monotonic() + args.pause_workers
        for c in clients:
            c.release[2].set()
        zp.check(primary.state_line("passive", "active", timeout=20)
                 is not None, "the primary did not take over again")
        for c in clients:
            c.join(max(1, deadline - time.monotonic()))
            zp.check(not c.is_alive(), f"{c.protocol}: client did not finish")
            zp.check(c.error is None, f"{c.protocol}: client error {c.error}")
            t = c.first_answer_from(0, t_kill2)
            zp.check(t is not None,
                     f"{c.protocol}: no answer from the primary after kill 2")
            print(f"{c.protocol}: kill -9 of the backup -> first answer from "
                  f"the primary: {(t - t_kill2) * 1000:.0f} ms", flush=True)
            print(f"{c.protocol}: {c.total} requests: {c.ok} answered with "
                  f"their own echo, {c.failed} given up, {c.wrong} wrong; "
                  f"{c.timeouts} timed-out attempts, {c.no_workers} "
                  f"zb:no-workers and {c.worker_left} zb:worker-left "
                  f"answers sent again", flush=True)
            zp.check(c.done == c.total, f"{c.protocol}: {c.done} ended")
            zp.check(c.wrong == 0, f"{c.protocol}: {c.wrong} wrong answers: "
                     + "; ".join(f"to {b!r}: {f!r}"
                                 for b, f in c.wrong_answers[:5]))
            zp.check(c.ok == c.total,
                     f"{c.protocol}: {c.failed} requests never answered")
            if args.pause_workers > 2.5 and c.protocol == "ccp":
                # The pause must have done what it is for.
                zp.check(c.no_workers > 0,
                         "ccp: the paused workers were never missed: no "
                         "zb:no-workers answer")
        samples, _ = zp.parse_metrics(primary.proc.metrics().decode())
        zp.check(zp.sample(samples, "zb_ha_failovers_total") == 1,
                 "the primary's zb_ha_failovers_total is not 1")
    finally:
        for c in clients:
            for r in c.release:
                r.set()
        stop.set()
        for w in workers:
            if isinstance(w, LibraryWorkers):
                w.stop()
            w.join(5)
        ctx.term()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--broker", required=True)
    ap.add_argument("--requests", type=int, default=300,
                    help="requests per protocol")
    ap.add_argument("--timeout", type=float, default=0.5,
                    help="client timeout per attempt, seconds")
    ap.add_argument("--attempts", type=int, default=20)
    ap.add_argument("--budget", type=float, default=120)
    ap.add_argument("--pause-workers", type=float, default=0,
                    help="seconds the (raw) workers stay silent right after "
                    "the second kill; more than 2.5 makes the clients meet "
                    "zb:no-workers for certain")
    ap.add_argument("--workers", choices=["raw", "python"], default="raw",
                    help="raw pyzmq workers, or the Python package's")
    ap.add_argument("--lib", help="libzbrokers.so (--workers python)")
    ap.add_argument("--pythonpath", help="bindings/python (--workers python)")
    args = ap.parse_args()
    if args.pause_workers and args.workers != "raw":
        ap.error("--pause-workers pauses the raw workers only")
    if args.workers == "python":
        if args.lib:
            os.environ["ZBROKERS_LIB"] = args.lib
        if args.pythonpath:
            sys.path.insert(0, args.pythonpath)
    return zp.run_scenario("ha_process_test", scenario, args)


if __name__ == "__main__":
    sys.exit(main())
