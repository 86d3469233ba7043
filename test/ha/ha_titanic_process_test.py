# Copyright 2026 The zbrokers Authors.
"""Titanic inside a fail-over pair (docs/ha.md, docs/titanic.md,
"Titanic in a fail-over pair"), as real processes killed -9.

Two zb-broker processes run as primary and backup ([ha] flags), each with
its own Titanic ([titanic], its own SQLite file) in front of its Majordomo
broker.  The echo workers (raw pyzmq, from ha_process_test.py) hold one
session per broker.  The client is written here from RFC 7 and RFC 9 with
pyzmq: it talks to one daemon at a time and moves to the other after a
timeout (lazy pirate), and remembers which daemon gave it each UUID.

Scenario "internal": Titanic's own traffic never drives the pair.
  A backup whose store already holds pending requests runs passive beside
  its primary (a third daemon given the same store_path is refused at
  start); the primary is killed -9.  With only Titanic's own
  dispatches arriving (retries while no worker is there, then the answers
  once one comes) the backup stays PASSIVE long after the peer expired,
  and its stored requests are answered through the passive broker; then a
  real client arrives and it takes over, as Binary Star says.

Scenario "failover" (--rounds N): in each round the client submits
  through the active daemon, which is killed -9 in the middle of the
  submissions; the other takes over and goes on accepting.  The killed one
  restarts PASSIVE (no fail-back) and its own stored requests are answered
  while it is passive.  The client reads and closes every request of the
  active daemon; a UUID of the other daemon gets "400" there (RFC 9: not
  known -- no replication) and is read when its daemon is active again.
  The next round kills the other one.  At the end the active daemon is
  stopped (SIGTERM, exit 0), the last requests are read from the other,
  and the checks are:

  * every accepted request (a "200" + UUID came back) is answered with
    "200" and exactly its own echo by the daemon that accepted it, every
    later titanic.reply gives the same answer, and after titanic.close it
    is "400" and gone from that daemon's file;
  * a "400" for a UUID only ever comes from the daemon that did not
    accept it (before it is closed);
  * what rows remain are orphans (a titanic.request stored just before a
    kill, whose "200" never reached the client), at most one per
    resubmission;
  * no split brain counted (zb_ha_split_brain_total 0 on both).

Every wait is bounded (--budget seconds in all), only 127.0.0.1 is used,
every child is signalled by its PID and dies with this script.

  ha_titanic_process_test.py --broker build/brokers/daemon/zb-broker \\
      [--scenario internal|failover|all] [--requests 60] [--rounds 1]
"""

import argparse
import os
import shutil
import sqlite3
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "testing"))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "brokers", "titanic"))
import zb_process as zp  # noqa: E402
import ha_process_test as hp  # noqa: E402
import titanic_process_test as tp  # noqa: E402
import zmq  # noqa: E402

# Titanic's dispatcher.  Scenario internal: a short timeout, so that a
# retry (a new request from the dispatcher to its broker) comes every
# second or so while no worker answers.  Scenario failover: long enough
# for the load.  Titanic resends a request each timeout (doubling up to
# 16 x), and the reply to an attempt that timed out is dropped; with 500 ms
# and a backlog of 160 requests on workers doing 10 a second, the resends
# outran the workers and almost nothing was answered any more (a first
# long run: 4 replies stored in 13 minutes; docs/titanic.md).
INTERNAL_REQUEST_TIMEOUT = "500ms"
FAILOVER_REQUEST_TIMEOUT = "2s"
TITANIC_RETRY_DELAY = "100ms"
CLIENT_TIMEOUT_MS = 600  # longer than peer_expiry (300 ms), docs/ha.md


class Daemon(hp.Broker):
    """One zb-broker of the pair with its own Titanic."""

    def __init__(self, exe, role, ports, peer_state_port, store,
                 request_timeout):
        mdp, ccp, state = ports
        super().__init__(exe, role, mdp, ccp, state, peer_state_port)
        self.store = store
        self.args += ["--titanic-store-path", store,
                      "--titanic-request-timeout", request_timeout,
                      "--titanic-retry-delay", TITANIC_RETRY_DELAY]

    def samples(self):
        return zp.parse_metrics(self.proc.metrics().decode())[0]

    def value(self, name, **labels):
        return zp.sample(self.samples(), name, **labels)

    def event(self, broker, event):
        return self.value("zb_events_total", broker=broker, event=event) or 0

    def pending(self):
        return self.value("zb_titanic_pending_requests", broker="titanic")


class PairClient(tp.MdpClient):
    """An RFC 7 client of one daemon at a time: after a timeout it reopens
    on the other (lazy pirate).  call_any() answers (reply, daemon index)."""

    def __init__(self, ctx, endpoints):
        self.endpoints = endpoints
        self.current = 0
        super().__init__(ctx, endpoints[0])
        self.timeouts = 0

    def call_any(self, service, frames, deadline):
        while True:
            zp.check(time.monotonic() < deadline,
                     f"out of time calling {service!r}")
            r = self.call(service, frames, CLIENT_TIMEOUT_MS)
            if r is not None:
                return r, self.current
            self.timeouts += 1
            self.current = 1 - self.current
            self.endpoint = self.endpoints[self.current]
            self.reopen()


class Ledger:
    """What the client knows: every accepted UUID, which daemon accepted
    it, its body and the one answer it got."""

    def __init__(self, client, deadline):
        self.client = client
        self.deadline = deadline
        self.accepted = {}    # uuid -> (daemon index, body)
        self.accept_times = []  # (monotonic time, daemon index)
        self.answers = {}     # uuid -> the "200" reply
        self.closed = set()
        self.resubmitted = 0  # titanic.request sent again after a timeout
        self.not_here = 0     # "400" from the daemon that did not accept it

    def submit(self, body):
        """titanic.request until a "200"; returns the daemon index."""
        while True:
            timeouts = self.client.timeouts
            r, d = self.client.call_any(b"titanic.request", [b"echo", body],
                                        self.deadline)
            self.resubmitted += self.client.timeouts - timeouts
            code = r[0][:3]
            if code == b"200":
                zp.check(len(r) == 2 and len(r[1]) == 32,
                         f"titanic.request 200 without a UUID: {r!r}")
                uuid = r[1].decode()
                zp.check(uuid not in self.accepted, f"UUID {uuid} given twice")
                self.accepted[uuid] = (d, body)
                self.accept_times.append((time.monotonic(), d))
                return d
            zp.check(code == b"500", f"titanic.request answered {r!r}")
            time.sleep(0.05)  # RFC 9: retry later

    def read(self, uuid):
        """One titanic.reply: True once the accepting daemon answered it."""
        owner, body = self.accepted[uuid]
        r, d = self.client.call_any(b"titanic.reply", [uuid.encode()],
                                    self.deadline)
        code = r[0][:3]
        if d != owner:
            # The other daemon's store never had it (no replication).
            zp.check(code == b"400", f"{uuid} of daemon {owner} answered "
                     f"{r!r} by daemon {d}")
            self.not_here += 1
            return False
        zp.check(code != b"400", f"{uuid} is unknown to the daemon that "
                 "accepted it")
        if code != b"200":
            return False  # "300": pending
        zp.check(r[1:] == [body], f"{uuid}: reply {r[1:]!r} is not its own "
                 f"echo {body!r}")
        if uuid in self.answers:
            zp.check(r == self.answers[uuid], f"{uuid}: answer changed "
                     f"{self.answers[uuid]!r} -> {r!r}")
        self.answers[uuid] = r
        return True

    def read_and_close(self, owner):
        """Reads every open request of daemon `owner` (which must be the
        active one) until answered, reads it once more (the same answer),
        closes it and checks that it is gone."""
        todo = [u for u, (d, _) in self.accepted.items()
                if d == owner and u not in self.closed]
        for uuid in todo:
            while not self.read(uuid):
                time.sleep(0.05)
            zp.check(self.read(uuid), f"{uuid}: answered once, then not")
            while True:
                r, d = self.client.call_any(b"titanic.close", [uuid.encode()],
                                            self.deadline)
                zp.check(r == [b"200"], f"titanic.close answered {r!r}")
                if d == owner:
                    break
            r, d = self.client.call_any(b"titanic.reply", [uuid.encode()],
                                        self.deadline)
            zp.check(r[0][:3] == b"400", f"closed {uuid} still answers {r!r}")
            self.closed.add(uuid)
        return len(todo)

    def check_store(self, daemon, index):
        """The file of daemon `index` holds none of its accepted requests,
        only orphans (bounded by the resubmissions)."""
        rows = tp.stored_rows(daemon.store)
        mine = {u for u, (d, _) in self.accepted.items() if d == index}
        bodies = {b for _, b in self.accepted.values()}
        for uuid, first in rows:
            zp.check(uuid not in mine, f"closed {uuid} still stored")
            zp.check(first in bodies, f"a stored row nobody sent: {first!r}")
        return len(rows)


def pending_rows(path):
    """Rows of a store without a reply, read on our own read-only
    connection (as titanic_process_test.stored_rows)."""
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=10)
    try:
        return db.execute(
            "SELECT count(*) FROM requests WHERE reply IS NULL").fetchone()[0]
    finally:
        db.close()


def start_pair(args, workdir, request_timeout):
    ports = hp.free_ports(6)
    a = Daemon(args.broker, "primary", ports[0:3], ports[5],
               os.path.join(workdir, "primary.db"), request_timeout)
    b = Daemon(args.broker, "backup", ports[3:6], ports[2],
               os.path.join(workdir, "backup.db"), request_timeout)
    return a, b


class SlowWorker(hp.Worker):
    """ha_process_test's echo worker (a session per broker), taking
    `delay` seconds per request: requests are still pending in Titanic's
    file when a daemon is killed."""

    def __init__(self, ctx, endpoints, stop, delay):
        super().__init__(ctx, "mdp", endpoints, stop)
        self.delay = delay

    def answer(self, s, frames):
        if len(frames) >= 3 and frames[2] == b"\x02":  # REQUEST
            time.sleep(self.delay)
        super().answer(s, frames)


def start_both(primary, backup):
    """Starts the pair; the primary becomes active when it hears the
    backup, which then becomes passive."""
    primary.start()
    backup.start()
    zp.check(primary.state_line("primary", "active") is not None,
             "the primary did not become active")
    zp.check(backup.state_line("backup", "passive") is not None,
             "the backup did not become passive")


def start_workers(ctx, pair, stop, n=1, delay=0.0):
    workers = [SlowWorker(ctx, [d.mdp for d in pair], stop, delay)
               for _ in range(n)]
    for w in workers:
        w.start()
    return workers


def stop_workers(workers, stop):
    stop.set()
    for w in workers:
        w.join(5)


def wait_echo_workers(daemon, n, timeout=15):
    zp.wait_for(lambda: daemon.workers("majordomo") == n, timeout,
                f"{daemon.role} has not {n} echo workers")


def scenario_internal(args, workdir, ctx):
    deadline = time.monotonic() + args.budget
    primary, backup = start_pair(args, workdir, INTERNAL_REQUEST_TIMEOUT)
    k = 5
    # The backup's file gets K pending requests first: a daemon without
    # [ha] on the backup's port and file, no worker, stopped cleanly.
    alone = zp.ZbBroker.start(args.broker, [
        "--majordomo", backup.mdp, "--heartbeat-interval", "500ms",
        "--titanic-store-path", backup.store, "--grace", "0s"],
        name="backup-alone", busy_for=20)
    client = PairClient(ctx, [backup.mdp, backup.mdp])
    ledger = Ledger(client, deadline)
    for i in range(k):
        ledger.submit(f"stored-{i}".encode())
    zp.check(alone.stop() == 0, "zb-broker (no pair) did not stop cleanly")
    # From now on the client knows the pair; index 1 is the backup.
    client.endpoints = [primary.mdp, backup.mdp]
    client.current = 1
    ledger.accepted = {u: (1, b) for u, (_, b) in ledger.accepted.items()}

    start_both(primary, backup)
    # A second daemon given the backup's store_path (the pair's two
    # configs on one host, one copied from the other) does not start.
    twin = zp.ZbBroker(args.broker, [
        "--majordomo", "tcp://127.0.0.1:*", "--titanic-store-path",
        backup.store], name="twin")
    zp.check(twin.wait(20) == 1 and
             "is in use by another Titanic" in twin.text(),
             "a second Titanic opened the backup's store:\n" +
             twin.describe())
    # Its Titanic dispatches the stored requests through the passive
    # broker; with no worker they wait there and are sent again.
    t_kill = time.monotonic()
    primary.kill9()
    # Titanic's traffic well after the peer expired (300 ms; the metrics
    # are refreshed once a second): every retry from now on arrives at a
    # passive broker whose peer is silent.
    zp.wait_for(lambda: time.monotonic() > t_kill + 2.0, 5, "clock")
    retries = backup.event("titanic", "retries")
    internal = backup.event("majordomo", "requests_internal")
    zp.wait_for(lambda: backup.event("titanic", "retries") >= retries + 2,
                30, "the backup's Titanic sent nothing again")
    zp.check(backup.ha_state() == "passive",
             "the backup took over on its own Titanic's traffic:\n" +
             backup.proc.tail())
    zp.check(backup.event("majordomo", "requests_internal") > internal,
             "Titanic's dispatches were not counted as requests_internal")
    # A worker comes: the stored requests are answered through the
    # passive broker, and it stays passive.
    stop = threading.Event()
    workers = start_workers(ctx, (primary, backup), stop)
    try:
        zp.wait_for(lambda: backup.pending() == 0, 30,
                    "the passive backup's stored requests were not "
                    "answered")
        s = backup.samples()
        zp.check(zp.sample(s, "zb_ha_state", state="passive") == 1,
                 "the backup is not passive after its Titanic's answers")
        zp.check(zp.sample(s, "zb_ha_failovers_total") == 0,
                 "the backup counted a fail-over")
        zp.check(zp.sample(s, "zb_events_total", broker="majordomo",
                           event="requests_refused_passive") == 0,
                 "the passive broker refused its own Titanic")
        print(f"internal: {k} stored requests answered through the passive "
              "backup; it stayed passive with its peer dead", flush=True)
        # A real client arrives: the backup takes over and serves it.
        zp.check(ledger.read_and_close(1) == k, "not every request read")
        zp.check(backup.state_line("passive", "active", timeout=5)
                 is not None, "a client did not make the backup take over")
        zp.wait_for(lambda: backup.value("zb_ha_failovers_total") == 1, 10,
                    "zb_ha_failovers_total of the backup is not 1")
        zp.check(ledger.check_store(backup, 1) == 0, "rows left behind")
        print("internal: the first client request made the backup take over",
              flush=True)
    finally:
        stop_workers(workers, stop)
        client.socket.close(linger=0)


def scenario_failover(args, workdir, ctx):
    deadline = time.monotonic() + args.budget
    pair = start_pair(args, workdir, FAILOVER_REQUEST_TIMEOUT)
    primary, backup = pair
    start_both(primary, backup)
    stop = threading.Event()
    workers = start_workers(ctx, pair, stop, n=args.workers,
                            delay=args.worker_delay_ms / 1000)
    client = PairClient(ctx, [d.mdp for d in pair])
    ledger = Ledger(client, deadline)
    try:
        for d in pair:
            wait_echo_workers(d, args.workers)
        per_round = max(2, args.requests // args.rounds)
        n = 0
        active = 0  # the index of the active daemon
        for rnd in range(args.rounds):
            dead, other = pair[active], pair[1 - active]
            # Requests through the active one, which a thread kills -9 at
            # a moment of its own once half of them are in, so that the
            # kill can land while a titanic.request is being stored.
            half = threading.Event()
            killed = threading.Event()

            t_kill = []

            def killer(dead=dead, half=half, killed=killed, t_kill=t_kill):
                half.wait(args.budget)
                time.sleep(0.05 * (rnd % 4))
                t_kill.append(time.monotonic())
                dead.kill9()
                killed.set()

            k = threading.Thread(target=killer, daemon=True)
            k.start()
            for i in range(per_round):
                if i == per_round // 2:
                    half.set()
                ledger.submit(f"request-{n}".encode())
                n += 1
                # A reply is read now and then, also across the kill.
                if i % 4 == 3:
                    oldest = next((u for u in ledger.accepted
                                   if u not in ledger.answers), None)
                    if oldest is not None:
                        ledger.read(oldest)
            k.join(max(1, deadline - time.monotonic()))
            zp.check(killed.is_set(), "the kill did not happen")
            # Only a client makes the other take over (Binary Star): when
            # the kill came after the last submission, a few more.
            while not any(t >= t_kill[0] for t, _ in ledger.accept_times):
                ledger.submit(f"request-{n}".encode())
                n += 1
            # What the dead daemon's file holds unanswered: the requests
            # it must answer once it is back, while passive.
            stranded = pending_rows(dead.store)
            zp.check(stranded > 0, f"no request was pending in the "
                     f"{dead.role}'s file at the kill: the round tests "
                     "nothing (slower workers: --worker-delay-ms)")
            zp.check(other.ha_state() == "active",
                     f"the {other.role} did not take over")
            t_first = next((t for t, d in ledger.accept_times
                            if t >= t_kill[0] and d == 1 - active), None)
            zp.check(t_first is not None,
                     f"nothing accepted by the {other.role} after the kill")
            # The killed one comes back passive and answers its own stored
            # requests while passive.
            dead.start()
            zp.check(dead.state_line(dead.role, "passive") is not None,
                     f"the restarted {dead.role} did not become passive")
            zp.wait_for(lambda: dead.pending() == 0,
                        max(1, deadline - time.monotonic()),
                        f"the passive {dead.role}'s stored requests were "
                        "not answered")
            zp.check(dead.ha_state() == "passive",
                     f"the {dead.role} left passive on its own")
            internal = dead.event("majordomo", "requests_internal")
            # Everything of the active daemon is read and closed.
            read = ledger.read_and_close(1 - active)
            for d in pair:
                zp.check(d.value("zb_ha_split_brain_total") == 0,
                         f"split brain counted by the {d.role}")
            print(f"round {rnd + 1}: killed -9 the active {dead.role}; the "
                  f"{other.role} took over (kill -9 -> first request it "
                  f"accepted: {(t_first - t_kill[0]) * 1000:.0f} ms), "
                  f"{read} of its requests read and "
                  f"closed; the {dead.role} came back passive with "
                  f"{stranded} requests pending in its file and answered "
                  f"them while passive ({internal:.0f} internal requests)",
                  flush=True)
            active = 1 - active
        # The active one stops cleanly; the passive one takes over on the
        # client's next request, and its requests are read.
        leaving, last = pair[active], pair[1 - active]
        zp.check(leaving.proc.stop() == 0,
                 f"the {leaving.role} did not exit 0 on SIGTERM")
        read = ledger.read_and_close(1 - active)
        zp.check(last.ha_state() == "active",
                 f"the {last.role} did not take over at the end")
        zp.check(last.value("zb_ha_split_brain_total") == 0,
                 f"split brain counted by the {last.role}")
        zp.check(len(ledger.closed) == len(ledger.accepted),
                 f"{len(ledger.accepted) - len(ledger.closed)} requests "
                 "never closed")
        orphans = sum(ledger.check_store(d, i) for i, d in enumerate(pair))
        zp.check(orphans <= ledger.resubmitted,
                 f"{orphans} rows left, more than the {ledger.resubmitted} "
                 "resubmissions that can leave an orphan")
        print(f"failover: stopped the {leaving.role}; the {last.role} took "
              f"over and {read} of its requests were read and closed",
              flush=True)
        print(f"failover: OK: {len(ledger.accepted)} accepted, each "
              f"answered once by its own daemon and closed; {ledger.not_here}"
              f" '400' from the other daemon; {ledger.resubmitted} "
              f"resubmissions, {orphans} orphan rows; {client.timeouts} "
              "client timeouts", flush=True)
    finally:
        stop_workers(workers, stop)
        client.socket.close(linger=0)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--broker", required=True)
    ap.add_argument("--scenario", choices=["internal", "failover", "all"],
                    default="all")
    ap.add_argument("--requests", type=int, default=60,
                    help="titanic.request calls in all (failover)")
    ap.add_argument("--rounds", type=int, default=1,
                    help="kill -9 of the active daemon, once per round")
    ap.add_argument("--workers", type=int, default=2,
                    help="echo workers, each with a session on both")
    ap.add_argument("--worker-delay-ms", type=int, default=200,
                    help="each echo takes this long (failover): requests "
                    "are pending when a daemon is killed")
    ap.add_argument("--budget", type=float, default=150,
                    help="seconds per scenario")
    args = ap.parse_args()
    failed = 0
    for name, run in (("internal", scenario_internal),
                      ("failover", scenario_failover)):
        if args.scenario not in (name, "all"):
            continue
        workdir = tempfile.mkdtemp(prefix="zb_ha_titanic_")
        ctx = zmq.Context()
        try:
            failed += zp.run_scenario(name, run, args, workdir, ctx)
        finally:
            ctx.term()
            shutil.rmtree(workdir, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
